/*
 * test_lead.c — AICPU launches whose threads but the last start on demand
 * (SIMDEV_BATCH_AICPU_LEAD; platform_aicpu_start_others[_after]).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "platform/platform.h"
#include "simpler/simdev_fault.h"
#include "simpler/simdev_profile.h"
#include "test_support.h"

#define MAX_THREADS 4

/* What the last thread does before it returns. */
enum lead_mode {
    LEAD_NOTHING,     /* returns at once */
    LEAD_START,       /* starts the others (twice), waits until thread 0 ran */
    LEAD_START_AFTER, /* asks for their start in 1 ms, waits until thread 0 ran */
};

/* What each thread of a lead launch saw. */
struct lead_probe {
    enum lead_mode mode;
    _Atomic uint32_t seq;                   /* threads begun so far */
    _Atomic uint32_t order[MAX_THREADS];    /* 1 + how many began before it; 0: never ran */
    _Atomic uintptr_t thread[MAX_THREADS];  /* the OS thread it ran on */
    _Atomic uint32_t saw_thread0;           /* the last thread saw thread 0 run */
};

static bool thread0_ran(void *arg)
{
    struct lead_probe *p = arg;
    return atomic_load(&p->order[0]) != 0;
}

static int lead_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t size)
{
    struct lead_probe *p;
    if (size != sizeof p || ctx->thread_index >= MAX_THREADS)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&p, args, sizeof p);
    uint32_t i = ctx->thread_index;
    atomic_store(&p->thread[i], (uintptr_t)pthread_self());
    atomic_store(&p->order[i], atomic_fetch_add(&p->seq, 1) + 1);
    if (i + 1 != ctx->thread_count || p->mode == LEAD_NOTHING)
        return 0;
    if (p->mode == LEAD_START) {
        platform_aicpu_start_others();
        platform_aicpu_start_others(); /* started already: nothing more */
    } else {
        platform_aicpu_start_others_after(1000000u);
    }
    atomic_store(&p->saw_thread0, ts_poll_until(thread0_ran, p) ? 1u : 0u);
    return 0;
}

/* A lead launch of `threads` threads of lead_fn whose argument is *arg
 * (the probe's address, borrowed until the op is enqueued). */
static struct simdev_batch_op lead_op(struct lead_probe *const *arg, uint32_t threads)
{
    return (struct simdev_batch_op){.kind = SIMDEV_BATCH_AICPU_LEAD,
                                    .aicpu_fn = lead_fn,
                                    .thread_count = threads,
                                    .args = arg,
                                    .args_size = sizeof *arg};
}

/* Runs a lead launch of `threads` threads of lead_fn for `p` on a new
 * stream and waits for it. */
static void run_lead(struct lead_probe *p, uint32_t threads)
{
    simdev_stream_t s = ts_new_stream();
    struct lead_probe *arg = p;
    struct simdev_batch_op op = lead_op(&arg, threads);
    size_t enqueued = 99;
    assert_int_equal(simdev_stream_enqueue_batch(s, &op, 1, &enqueued), 0);
    assert_int_equal(enqueued, 1);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* Nobody starts the other thread: it runs when the last returns, after
 * it and on its OS thread (no hand-off). Thread 0 first, or on another
 * thread, would mean the launch started it with the last. */
static void the_one_thread_nobody_started_runs_after_the_last_on_its_thread(void **state)
{
    (void)state;
    struct lead_probe p = {.mode = LEAD_NOTHING};
    run_lead(&p, 2);
    assert_int_equal(atomic_load(&p.order[1]), 1);
    assert_int_equal(atomic_load(&p.order[0]), 2);
    assert_true(atomic_load(&p.thread[0]) == atomic_load(&p.thread[1]));
}

/* The last thread starts the other and sees it run before it returns:
 * on its own OS thread. saw_thread0 0 means the start did nothing (thread
 * 0 ran only after the last returned). */
static void the_last_thread_starts_the_others(void **state)
{
    (void)state;
    struct lead_probe p = {.mode = LEAD_START};
    run_lead(&p, 2);
    assert_int_equal(atomic_load(&p.saw_thread0), 1);
    assert_int_equal(atomic_load(&p.order[1]), 1);
    assert_int_equal(atomic_load(&p.order[0]), 2);
    assert_true(atomic_load(&p.thread[0]) != atomic_load(&p.thread[1]));
}

/* The last thread asks for the others' start in 1 ms and waits for thread
 * 0 without returning: only the hold timer can start it (saw_thread0 0:
 * the timer never fired, and thread 0 ran at the last's return). */
static void the_hold_timer_starts_the_others_the_last_thread_waits_for(void **state)
{
    (void)state;
    struct lead_probe p = {.mode = LEAD_START_AFTER};
    run_lead(&p, 2);
    assert_int_equal(atomic_load(&p.saw_thread0), 1);
    assert_int_equal(atomic_load(&p.order[0]), 2);
    assert_true(atomic_load(&p.thread[0]) != atomic_load(&p.thread[1]));
}

/* Two threads nobody started: the last's return starts both, each on its
 * own OS thread (run one after the other on the last's thread, a thread
 * waiting for the other would never end). */
static void several_threads_nobody_started_start_at_the_last_ones_return(void **state)
{
    (void)state;
    struct simdev_config config = ts_small_config();
    config.aicpu_threads = 3;
    ts_device_setup_config(&config);
    struct lead_probe p = {.mode = LEAD_NOTHING};
    run_lead(&p, 3);
    assert_int_equal(atomic_load(&p.order[2]), 1);
    assert_int_equal(atomic_load(&p.seq), 3);
    uintptr_t last = atomic_load(&p.thread[2]);
    assert_true(atomic_load(&p.thread[0]) != last && atomic_load(&p.thread[1]) != last);
    assert_true(atomic_load(&p.thread[0]) != atomic_load(&p.thread[1]));
}

/* A one-thread lead launch is a plain launch; the calls are nothing
 * outside a lead launch's last thread (here from a plain launch and from
 * the host): no crash, no start, no effect on the launch. */
static int plain_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t size)
{
    (void)ctx;
    (void)args;
    (void)size;
    platform_aicpu_start_others();
    platform_aicpu_start_others_after(1);
    return 0;
}

static void the_calls_do_nothing_outside_a_lead_launch(void **state)
{
    (void)state;
    struct lead_probe p = {.mode = LEAD_START};
    run_lead(&p, 1); /* its only thread is the last: it starts nothing */
    assert_int_equal(atomic_load(&p.seq), 1);
    assert_int_equal(atomic_load(&p.saw_thread0), 1); /* it is thread 0 */
    platform_aicpu_start_others();
    platform_aicpu_start_others_after(1);
    simdev_stream_t s = ts_new_stream();
    assert_int_equal(simdev_launch_aicpu(s, plain_fn, 2, NULL, 0), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* A lead launch is checked, faulted and refused as a launch: a bad thread
 * count and an armed launch fault refuse it and enqueue nothing. */
static void a_lead_launch_is_checked_and_faulted_as_a_launch(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    struct lead_probe p = {.mode = LEAD_NOTHING};
    struct lead_probe *arg = &p;
    struct simdev_batch_op op = lead_op(&arg, 0);
    size_t enqueued = 99;
    assert_int_equal(simdev_stream_enqueue_batch(s, &op, 1, &enqueued),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(enqueued, 0);
    op.thread_count = 3; /* the fixture has 2 AICPU threads */
    assert_int_equal(simdev_stream_enqueue_batch(s, &op, 1, &enqueued),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    op.thread_count = 2;
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_LAUNCH, 1, -77), 0);
    assert_int_equal(simdev_stream_enqueue_batch(s, &op, 1, &enqueued), -77);
    assert_int_equal(enqueued, 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&p.seq), 0); /* nothing ran */
    assert_int_equal(simdev_stream_enqueue_batch(s, &op, 1, &enqueued), 0); /* retry works */
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&p.seq), 2);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* Captured and replayed, a lead launch keeps its start on demand: each
 * replay runs thread 0 after the last, on its thread. */
static void a_captured_lead_launch_replays_as_one(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    struct lead_probe p = {.mode = LEAD_NOTHING};
    struct lead_probe *arg = &p;
    struct simdev_batch_op op = lead_op(&arg, 2);
    size_t enqueued = 99;
    simdev_graph_t g;
    simdev_graph_exec_t x;
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simdev_stream_enqueue_batch(s, &op, 1, &enqueued), 0);
    assert_int_equal(simdev_stream_end_capture(s, &g), 0);
    assert_int_equal(simdev_graph_instantiate(&x, g), 0);
    assert_int_equal(atomic_load(&p.seq), 0); /* captured, not run */
    for (int replay = 0; replay < 3; replay++) {
        memset(&p, 0, sizeof p);
        assert_int_equal(simdev_graph_launch(x, s), 0);
        assert_int_equal(simdev_stream_sync(s), 0);
        assert_int_equal(atomic_load(&p.order[1]), 1);
        assert_int_equal(atomic_load(&p.order[0]), 2);
        assert_true(atomic_load(&p.thread[0]) == atomic_load(&p.thread[1]));
    }
    assert_int_equal(simdev_graph_exec_destroy(x), 0);
    assert_int_equal(simdev_graph_destroy(g), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* How many programs syncs took so far on device 0. */
static uint64_t programs_taken(void)
{
    struct simdev_wait_stats stats;
    assert_int_equal(simdev_wait_stats(0, &stats), 0);
    return stats.taken;
}

/* A stream waiting for a lead launch on another, the way a round's
 * caller stream waits for its AICPU stream: `program` gets the launch
 * (threads threads of lead_fn for `p`) and a record of `done`; `caller`
 * a wait for it. Started on this thread (simdev_start_here_begin), so the
 * launch is handed to its last thread before this returns. */
static void enqueue_waited_program(simdev_stream_t program, simdev_stream_t caller,
                                   simdev_event_t done, struct lead_probe *p, uint32_t threads)
{
    struct lead_probe *arg = p;
    struct simdev_batch_op ops[2] = {lead_op(&arg, threads),
                                     {.kind = SIMDEV_BATCH_RECORD, .event = done}};
    size_t enqueued = 99;
    simdev_start_here_begin();
    assert_int_equal(simdev_stream_enqueue_batch(program, ops, 2, &enqueued), 0);
    assert_int_equal(enqueued, 2);
    assert_int_equal(simdev_stream_wait_event(caller, done), 0);
    simdev_start_here_end();
}

/* One try of a sync against a program on a fresh device (its threads
 * start idle): the program's stream, the caller's, the record between
 * them, the launch's probe and `taken` before the try. */
struct sync_try {
    simdev_stream_t program, caller;
    simdev_event_t done;
    struct lead_probe p;
    uint64_t before;
};

static void try_begin(struct sync_try *t, uint32_t watchdog_ms)
{
    struct simdev_config config = ts_small_config();
    config.watchdog_ms = watchdog_ms;
    ts_device_setup_config(&config);
    t->program = ts_new_stream();
    t->caller = ts_new_stream();
    t->done = ts_new_event();
    memset(&t->p, 0, sizeof t->p);
    t->p.mode = LEAD_NOTHING;
    t->before = programs_taken();
}

/* The program left to its thread: nothing taken, both threads ran, the
 * last on a device thread, not this one. */
static void assert_left_to_its_thread(struct sync_try *t)
{
    assert_int_equal(programs_taken() - t->before, 0);
    assert_int_equal(atomic_load(&t->p.seq), 2);
    assert_true(atomic_load(&t->p.thread[1]) != (uintptr_t)pthread_self());
}

static void try_end(struct sync_try *t)
{
    assert_int_equal(simdev_stream_sync(t->program), 0);
    assert_int_equal(simdev_event_destroy(t->done), 0);
    assert_int_equal(simdev_stream_destroy(t->caller), 0);
    assert_int_equal(simdev_stream_destroy(t->program), 0);
}

/*
 * A sync whose stream waits for a program handed to a thread that has not
 * begun it (parked: it takes tens of microseconds to run again) takes the
 * program and runs it itself: both threads of the launch then ran on the
 * syncing thread, the last first, and `taken` counts it once. A try whose
 * thread began first (it was still spinning after the device started)
 * proves nothing and is made again on a fresh device; one in TRIES must
 * take it. Never taken would mean a sync still waits for a parked thread.
 */
static void a_sync_runs_the_program_its_stream_waits_for_when_its_thread_has_not_begun(
    void **state)
{
    (void)state;
    enum { TRIES = 20 };
    bool taken = false;
    for (int try = 0; try < TRIES && !taken; try++) {
        struct sync_try t;
        try_begin(&t, 0);
        enqueue_waited_program(t.program, t.caller, t.done, &t.p, 2);
        assert_int_equal(simdev_stream_sync(t.caller), 0);
        /* the whole launch ran, the last thread first, on one OS thread */
        assert_int_equal(atomic_load(&t.p.order[1]), 1);
        assert_int_equal(atomic_load(&t.p.order[0]), 2);
        assert_true(atomic_load(&t.p.thread[0]) == atomic_load(&t.p.thread[1]));
        uint64_t took = programs_taken() - t.before;
        if (took == 1)
            assert_true(atomic_load(&t.p.thread[1]) == (uintptr_t)pthread_self());
        else
            assert_int_equal(took, 0); /* its thread began it: ran there */
        taken = took == 1;
        try_end(&t);
    }
    assert_true(taken);
}

/*
 * A sync takes only a program its stream waits for directly: `caller`
 * waits for a record on stream `other`, which waits for the program's
 * record, while the program waits for its parked thread. The sync must
 * leave it to its thread: taken 0, the launch's last thread not this one.
 * Taking it would make a sync run work it does not wait for (a program
 * that waits for the host would never end it).
 */
static void a_sync_leaves_a_program_its_stream_does_not_wait_for(void **state)
{
    (void)state;
    struct sync_try t;
    try_begin(&t, 0);
    simdev_stream_t other = ts_new_stream();
    simdev_event_t other_done = ts_new_event();
    simdev_start_here_begin(); /* the launch handed out before the sync */
    enqueue_waited_program(t.program, other, t.done, &t.p, 2);
    assert_int_equal(simdev_event_record(other_done, other), 0);
    assert_int_equal(simdev_stream_wait_event(t.caller, other_done), 0);
    simdev_start_here_end();
    assert_int_equal(simdev_stream_sync(t.caller), 0);
    assert_left_to_its_thread(&t);
    assert_int_equal(simdev_stream_sync(other), 0);
    assert_int_equal(simdev_event_destroy(other_done), 0);
    assert_int_equal(simdev_stream_destroy(other), 0);
    try_end(&t);
}

/* A host callback that syncs `caller` once told to (go). */
struct callback_sync {
    simdev_stream_t caller;
    _Atomic int started, go, rc;
};

static bool flag_set(void *arg)
{
    return atomic_load((_Atomic int *)arg) != 0;
}

static int callback_syncs(void *user_data)
{
    struct callback_sync *c = user_data;
    atomic_store(&c->started, 1);
    (void)ts_poll_until(flag_set, &c->go);
    atomic_store(&c->rc, simdev_stream_sync(c->caller));
    return 0;
}

/*
 * A sync made from a host callback (on a stream's executor, which runs
 * that stream) never takes a program: the streams the program's end lets
 * go would wait behind the callback on its thread, and the callback's
 * sync for them, forever (a hang here). Each try on a fresh device, the
 * program's thread parked: the callback's sync returns 0, nothing taken.
 */
static void a_sync_from_a_host_callback_takes_no_program(void **state)
{
    (void)state;
    enum { TRIES = 10 };
    for (int try = 0; try < TRIES; try++) {
        struct sync_try t;
        try_begin(&t, 0);
        simdev_stream_t host = ts_new_stream();
        struct callback_sync c = {.caller = t.caller, .rc = -1};
        assert_int_equal(simdev_launch_host_func(host, callback_syncs, &c), 0);
        assert_true(ts_poll_until(flag_set, &c.started));
        enqueue_waited_program(t.program, t.caller, t.done, &t.p, 2);
        atomic_store(&c.go, 1);
        assert_int_equal(simdev_stream_sync(host), 0); /* the callback returned */
        assert_int_equal(atomic_load(&c.rc), 0);
        assert_left_to_its_thread(&t);
        assert_int_equal(simdev_stream_destroy(host), 0);
        try_end(&t);
    }
}

/*
 * On a device with a watchdog a sync never takes a program: one that hung
 * on the sync's thread would keep the sync from returning DEVICE_LOST
 * when the watchdog loses the device. Each try as in the test that takes
 * it, with the default's 30 s watchdog: nothing taken.
 */
static void a_sync_on_a_device_with_a_watchdog_takes_no_program(void **state)
{
    (void)state;
    enum { TRIES = 10 };
    for (int try = 0; try < TRIES; try++) {
        struct sync_try t;
        try_begin(&t, 30000);
        enqueue_waited_program(t.program, t.caller, t.done, &t.p, 2);
        assert_int_equal(simdev_stream_sync(t.caller), 0);
        assert_left_to_its_thread(&t);
        try_end(&t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(the_one_thread_nobody_started_runs_after_the_last_on_its_thread),
        SIMPLER_TEST(the_last_thread_starts_the_others),
        SIMPLER_TEST(the_hold_timer_starts_the_others_the_last_thread_waits_for),
        SIMPLER_TEST(several_threads_nobody_started_start_at_the_last_ones_return),
        SIMPLER_TEST(the_calls_do_nothing_outside_a_lead_launch),
        SIMPLER_TEST(a_lead_launch_is_checked_and_faulted_as_a_launch),
        SIMPLER_TEST(a_captured_lead_launch_replays_as_one),
        SIMPLER_TEST(a_sync_runs_the_program_its_stream_waits_for_when_its_thread_has_not_begun),
        SIMPLER_TEST(a_sync_leaves_a_program_its_stream_does_not_wait_for),
        SIMPLER_TEST(a_sync_from_a_host_callback_takes_no_program),
        SIMPLER_TEST(a_sync_on_a_device_with_a_watchdog_takes_no_program),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
