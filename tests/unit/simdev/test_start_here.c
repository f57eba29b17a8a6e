/*
 * test_start_here.c — work a host thread starts itself
 * (simdev_start_here_begin / simdev_start_here_end, docs/device.md,
 * "Starting a burst here").
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "simpler/simdev_profile.h"
#include "test_support.h"

/* What a brief AICPU function leaves behind: the letters of the functions
 * that ran, in order, and the thread each ran on. */
struct trail {
    _Atomic int count;
    char letters[16];
    pthread_t threads[16];
};

struct step_args {
    struct trail *trail;
    char letter;
};

/* Leaves `letter` and this thread in `trail`; INTERNAL when it is full. */
static int trail_leave(struct trail *trail, char letter)
{
    int at = atomic_fetch_add(&trail->count, 1);
    if (at >= 16)
        return PTO_RUNTIME_ERR_INTERNAL;
    trail->letters[at] = letter;
    trail->threads[at] = pthread_self();
    return 0;
}

static int step_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t size)
{
    (void)ctx;
    struct step_args a;
    if (size != sizeof a)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&a, args, sizeof a);
    return trail_leave(a.trail, a.letter);
}

/* A brief one-thread AICPU launch of step_fn leaving `letter`. */
static struct simdev_batch_op step_op(struct step_args *a)
{
    return (struct simdev_batch_op){.kind = SIMDEV_BATCH_AICPU_BRIEF,
                                    .aicpu_fn = step_fn,
                                    .thread_count = 1,
                                    .args = a,
                                    .args_size = sizeof *a};
}

static void enqueue(simdev_stream_t s, const struct simdev_batch_op *ops, size_t count)
{
    size_t enqueued = 0;
    assert_int_equal(simdev_stream_enqueue_batch(s, ops, count, &enqueued), 0);
    assert_int_equal(enqueued, count);
}

/*
 * A record on s1, and on s2 a wait for it, a brief launch and a record,
 * enqueued between begin and end: when end returns, all of it has run, on
 * this thread (the brief function saw this thread), with no wake-up
 * system call. Without the calls s1's executor would be woken to run the
 * record and s2's work would run on it, after end returned; a wake-up or
 * another thread here would mean the burst was handed off after all.
 */
static void a_burst_started_here_runs_on_this_thread_and_wakes_nobody(void **state)
{
    (void)state;
    simdev_stream_t s1 = ts_new_stream(), s2 = ts_new_stream();
    simdev_event_t e1 = ts_new_event(), e2 = ts_new_event();
    struct trail trail = {0};
    struct step_args a = {&trail, 'B'};
    struct simdev_batch_op record1 = {.kind = SIMDEV_BATCH_RECORD, .event = e1};
    struct simdev_batch_op rest[] = {{.kind = SIMDEV_BATCH_WAIT, .event = e1},
                                     step_op(&a),
                                     {.kind = SIMDEV_BATCH_RECORD, .event = e2}};
    assert_int_equal(simdev_wait_stats_reset(0), 0);
    simdev_start_here_begin();
    enqueue(s1, &record1, 1);
    enqueue(s2, rest, 3);
    assert_int_equal(simdev_stream_query(s1), PTO_RUNTIME_ERR_NOT_READY); /* held: not started */
    simdev_start_here_end();
    assert_int_equal(simdev_event_query(e2), 0); /* done before end returned */
    assert_int_equal(atomic_load(&trail.count), 1);
    assert_true(pthread_equal(trail.threads[0], pthread_self()));
    struct simdev_wait_stats w;
    assert_int_equal(simdev_wait_stats(0, &w), 0);
    assert_int_equal(w.wakeups, 0);
    assert_int_equal(simdev_stream_sync(s1), 0);
    assert_int_equal(simdev_stream_sync(s2), 0);
    assert_int_equal(simdev_stream_destroy(s1), 0);
    assert_int_equal(simdev_stream_destroy(s2), 0);
    assert_int_equal(simdev_event_destroy(e1), 0);
    assert_int_equal(simdev_event_destroy(e2), 0);
}

/*
 * The held streams go on in the order their ops let each other go, not in
 * the order their batches came: s2's batch (wait for E, then 'B') is
 * enqueued before s1's 'A', but s1's record of E comes first on s1, so
 * at the end s1 runs its record and then 'A', and s2, let go by E, runs
 * 'B' after. This is the launch chain's case: its core loop (s2) is
 * enqueued before its AICPU program (s1's 'A'), which must be handed out
 * first. "BA" would mean s2 started before the stream that let it go had
 * gone as far as it goes.
 */
static void held_streams_go_on_in_the_order_their_ops_let_each_other_go(void **state)
{
    (void)state;
    simdev_stream_t s1 = ts_new_stream(), s2 = ts_new_stream();
    simdev_event_t e = ts_new_event();
    struct trail trail = {0};
    struct step_args a = {&trail, 'A'}, b = {&trail, 'B'};
    struct simdev_batch_op record = {.kind = SIMDEV_BATCH_RECORD, .event = e};
    struct simdev_batch_op wait_then_b[] = {{.kind = SIMDEV_BATCH_WAIT, .event = e}, step_op(&b)};
    struct simdev_batch_op then_a = step_op(&a);
    simdev_start_here_begin();
    enqueue(s1, &record, 1);
    enqueue(s2, wait_then_b, 2);
    enqueue(s1, &then_a, 1);
    simdev_start_here_end();
    assert_int_equal(atomic_load(&trail.count), 2);
    assert_memory_equal(trail.letters, "AB", 2);
    assert_true(pthread_equal(trail.threads[0], pthread_self()));
    assert_true(pthread_equal(trail.threads[1], pthread_self()));
    assert_int_equal(simdev_stream_sync(s1), 0);
    assert_int_equal(simdev_stream_sync(s2), 0);
    assert_int_equal(simdev_stream_destroy(s1), 0);
    assert_int_equal(simdev_stream_destroy(s2), 0);
    assert_int_equal(simdev_event_destroy(e), 0);
}

/*
 * Calls nest, and a sync never waits for what the calling thread holds:
 * inside two begins a held stream stays not started (no other thread
 * may start it) through the inner end; a stream sync and an event sync
 * inside the scope start what is held and return; the outer end starts
 * what was held after them. A sync that waited instead would hang the
 * test (its watchdog reports it).
 */
static void calls_nest_and_a_sync_starts_what_this_thread_holds(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    simdev_event_t e = ts_new_event();
    struct trail trail = {0};
    struct step_args a = {&trail, 'A'}, b = {&trail, 'B'}, c = {&trail, 'C'};
    struct simdev_batch_op op_a = step_op(&a), op_b[] = {step_op(&b), {.kind = SIMDEV_BATCH_RECORD,
                                                                      .event = e}};
    struct simdev_batch_op op_c = step_op(&c);

    simdev_start_here_begin();
    simdev_start_here_begin();
    enqueue(s, &op_a, 1);
    simdev_start_here_end(); /* inner: nothing starts */
    assert_int_equal(simdev_stream_query(s), PTO_RUNTIME_ERR_NOT_READY);
    assert_int_equal(atomic_load(&trail.count), 0);
    assert_int_equal(simdev_stream_sync(s), 0); /* starts it here, then waits for nothing */
    assert_int_equal(atomic_load(&trail.count), 1);
    enqueue(s, op_b, 2);
    assert_int_equal(simdev_event_sync(e), 0);
    assert_int_equal(atomic_load(&trail.count), 2);
    enqueue(s, &op_c, 1);
    assert_int_equal(simdev_stream_query(s), PTO_RUNTIME_ERR_NOT_READY);
    simdev_start_here_end(); /* outer: starts 'C' */
    assert_int_equal(simdev_stream_query(s), 0);
    assert_int_equal(atomic_load(&trail.count), 3);
    assert_memory_equal(trail.letters, "ABC", 3);
    simdev_start_here_end(); /* an end without a begin does nothing */
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_event_destroy(e), 0);
}

/*
 * Eight streams are held at once; a ninth idle stream goes to its
 * executor as without the calls: its op runs on another thread (the
 * executor's), and the eight run here at the end. Every op runs exactly
 * once either way.
 */
static void a_ninth_idle_stream_goes_to_its_executor(void **state)
{
    (void)state;
    enum { HELD = 8, STREAMS = HELD + 1 };
    simdev_stream_t s[STREAMS];
    struct trail trail[STREAMS];
    struct step_args args[STREAMS];
    memset(trail, 0, sizeof trail);
    for (int i = 0; i < STREAMS; i++) {
        s[i] = ts_new_stream();
        args[i] = (struct step_args){&trail[i], (char)('a' + i)};
    }
    simdev_start_here_begin();
    for (int i = 0; i < STREAMS; i++) {
        struct simdev_batch_op op = step_op(&args[i]);
        enqueue(s[i], &op, 1);
    }
    for (int i = 0; i < HELD; i++)
        assert_int_equal(simdev_stream_query(s[i]), PTO_RUNTIME_ERR_NOT_READY);
    simdev_start_here_end();
    for (int i = 0; i < HELD; i++) {
        assert_int_equal(simdev_stream_query(s[i]), 0); /* ran before end returned */
        assert_true(pthread_equal(trail[i].threads[0], pthread_self()));
    }
    assert_int_equal(simdev_stream_sync(s[HELD]), 0);
    assert_false(pthread_equal(trail[HELD].threads[0], pthread_self()));
    for (int i = 0; i < STREAMS; i++) {
        assert_int_equal(atomic_load(&trail[i].count), 1);
        assert_int_equal(trail[i].letters[0], 'a' + i);
        assert_int_equal(simdev_stream_destroy(s[i]), 0);
    }
}

/* A graph of one brief launch of step_fn (args `a`), captured on `s`,
 * and its executable graph; nothing has run. */
static simdev_graph_exec_t capture_step(simdev_stream_t s, struct step_args *a,
                                        simdev_graph_t *graph)
{
    struct simdev_batch_op op = step_op(a);
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    enqueue(s, &op, 1);
    *graph = NULL;
    assert_int_equal(simdev_stream_end_capture(s, graph), 0);
    simdev_graph_exec_t exec = NULL;
    assert_int_equal(simdev_graph_instantiate(&exec, *graph), 0);
    assert_int_equal(atomic_load(&a->trail->count), 0); /* captured, not run */
    return exec;
}

/*
 * A graph launched on an idle stream starts on the launching thread, as a
 * burst between begin and end does, without the calls: a captured brief
 * launch replays on this thread, before simdev_graph_launch returns, and
 * no executor is woken. A wake-up, a not-ready stream or another thread
 * here would mean the replay was handed to the stream's executor (each
 * batch of replays then paid a wake-up: docs/performance.md, "A replay
 * starts where it is launched").
 */
static void a_graph_launched_on_an_idle_stream_starts_here(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    struct trail trail = {0};
    struct step_args a = {&trail, 'G'};
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_step(s, &a, &graph);
    assert_int_equal(simdev_wait_stats_reset(0), 0);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    int at_return = simdev_stream_query(s);
    struct simdev_wait_stats w;
    assert_int_equal(simdev_wait_stats(0, &w), 0);
    assert_int_equal(simdev_stream_sync(s), 0); /* the trail outlives the replay, whatever ran it */
    assert_int_equal(at_return, 0);             /* the replay ended before the launch returned */
    assert_int_equal(atomic_load(&trail.count), 1);
    assert_int_equal(trail.letters[0], 'G');
    assert_true(pthread_equal(trail.threads[0], pthread_self()));
    assert_int_equal(w.wakeups, 0);
    assert_int_equal(w.handoffs, 0);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* A host callback that starts a burst of its own: a record of `e` on `t`,
 * a wait for it on `u`, and either a replay of `exec` on `t` (the begin
 * and end inside simdev_graph_launch) or, exec NULL, the two enqueues
 * between its own begin and end; then it waits for `u`, as a sync in the
 * callback would, bounded by the deadlock guard (rc: what `u` settled to,
 * NOT_READY if it never did). */
struct callback_burst {
    simdev_stream_t t, u;
    simdev_event_t e;
    simdev_graph_exec_t exec;
    _Atomic int rc;
};

static int callback_starts_a_burst(void *user_data)
{
    struct callback_burst *c = user_data;
    struct simdev_batch_op record = {.kind = SIMDEV_BATCH_RECORD, .event = c->e};
    struct simdev_batch_op wait = {.kind = SIMDEV_BATCH_WAIT, .event = c->e};
    size_t n = 0;
    if (!c->exec)
        simdev_start_here_begin();
    int rc = simdev_stream_enqueue_batch(c->t, &record, 1, &n);
    if (!rc)
        rc = simdev_stream_enqueue_batch(c->u, &wait, 1, &n);
    if (!rc && c->exec)
        rc = simdev_graph_launch(c->exec, c->t);
    if (!c->exec)
        simdev_start_here_end();
    atomic_store(&c->rc, rc ? rc : ts_stream_query_settled(c->u));
    return 0;
}

/*
 * Inside a host callback (a stream's frame, on its executor) nothing is
 * held: the streams a held stream's record let go would wait on this
 * thread for the callback to return, and a wait for them in the callback
 * would never end. Once with the callback's own begin and end (the record
 * on t would run here and let u go onto this thread: deterministic), and
 * 20 times through simdev_graph_launch from the callback (t idle when
 * the launch came, in most tries before the fix). NOT_READY here is that
 * hang, cut short by the deadlock guard.
 */
static void a_host_callback_holds_nothing(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream(), t = ts_new_stream(), u = ts_new_stream();
    simdev_stream_t cap = ts_new_stream();
    struct trail trail = {0};
    struct step_args a = {&trail, 'G'};
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_step(cap, &a, &graph);
    enum { TRIES = 21 };
    for (int try = 0; try < TRIES; try++) {
        simdev_event_t e = ts_new_event();
        struct callback_burst c = {t, u, e, try == 0 ? NULL : exec, -1};
        atomic_store(&trail.count, 0);
        assert_int_equal(simdev_launch_host_func(s, callback_starts_a_burst, &c), 0);
        assert_int_equal(simdev_stream_sync(s), 0); /* the callback returned */
        assert_int_equal(atomic_load(&c.rc), 0);
        assert_int_equal(simdev_stream_sync(t), 0);
        assert_int_equal(simdev_stream_sync(u), 0);
        assert_int_equal(atomic_load(&trail.count), try == 0 ? 0 : 1); /* the replay ran once */
        assert_int_equal(simdev_event_destroy(e), 0);
    }
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(cap), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_stream_destroy(t), 0);
    assert_int_equal(simdev_stream_destroy(u), 0);
}

/* A run-here launch's args: `size` bytes, the pattern after the header (ts_pattern_args),
 * and the trail to write its letter into at the end. */
struct sized_args {
    struct trail *trail;
    char letter;
    size_t size;
};

static int sized_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t size)
{
    (void)ctx;
    struct sized_args a;
    if (!ts_pattern_args_read(args, size, &a, sizeof a) || a.size != size)
        return PTO_RUNTIME_ERR_INTERNAL;
    return trail_leave(a.trail, a.letter);
}

/*
 * A one-thread launch run here keeps its job in the call (on the stack
 * when its args fit the largest cached op's room, 2,048 bytes; on the heap
 * past it): launches with 16 bytes more than the header, exactly 2,048
 * and 4,096 bytes of args each see every byte of theirs, in order, on this
 * thread. A letter missing or a launch's stream failing with INTERNAL
 * means a job was handed bytes that were not its launch's (a stack room
 * too small, a fallback that dropped the copy).
 */
static void a_launch_run_here_sees_its_args_whole_whatever_their_size(void **state)
{
    (void)state;
    static unsigned char buffers[3][4096];
    static const size_t sizes[3] = {sizeof(struct sized_args) + 16, 2048, 4096};
    simdev_stream_t s = ts_new_stream();
    struct trail trail = {0};
    struct simdev_batch_op ops[3];
    for (int k = 0; k < 3; k++) {
        struct sized_args a = {&trail, (char)('X' + k), sizes[k]};
        ts_pattern_args(buffers[k], &a, sizeof a, sizes[k]);
        ops[k] = (struct simdev_batch_op){.kind = SIMDEV_BATCH_AICPU_BRIEF,
                                          .aicpu_fn = sized_fn,
                                          .thread_count = 1,
                                          .args = buffers[k],
                                          .args_size = sizes[k]};
    }
    simdev_start_here_begin();
    enqueue(s, ops, 3);
    simdev_start_here_end();
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&trail.count), 3);
    assert_memory_equal(trail.letters, "XYZ", 3);
    for (int k = 0; k < 3; k++)
        assert_true(pthread_equal(trail.threads[k], pthread_self()));
    assert_int_equal(simdev_stream_destroy(s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(a_burst_started_here_runs_on_this_thread_and_wakes_nobody),
        SIMPLER_TEST(held_streams_go_on_in_the_order_their_ops_let_each_other_go),
        SIMPLER_TEST(calls_nest_and_a_sync_starts_what_this_thread_holds),
        SIMPLER_TEST(a_ninth_idle_stream_goes_to_its_executor),
        SIMPLER_TEST(a_graph_launched_on_an_idle_stream_starts_here),
        SIMPLER_TEST(a_host_callback_holds_nothing),
        SIMPLER_TEST(a_launch_run_here_sees_its_args_whole_whatever_their_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
