/*
 * test_enqueue_batch.c — simdev_stream_enqueue_batch: a batch is its ops'
 * single-op calls, one after the other.
 *
 * Owns: a batch's order and counts, its stop at the first op that fails
 * (each check, each device fault and each host allocation point of every
 * op, with nothing of the failed op or those after it enqueued, and the
 * rest enqueued by a retry), a wait targeting the record made before it in
 * the same batch, a batch on a capturing stream, and its own argument
 * checks. The single-op calls themselves have their own files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_support.h"

#define OOM PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY
#define INJECTED (-955)

enum { OPS = 6 };

static _Atomic uint64_t ran[OPS];
static struct ts_gate hold;

/* AICPU function: adds 1 to the counter its argument (an index) names. */
static int count_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    assert_int_equal(args_size, sizeof(int));
    int index;
    memcpy(&index, args, sizeof index);
    atomic_fetch_add(&ran[index], 1);
    return 0;
}

static int count_core_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    if (ctx->core_id == 0)
        count_fn(NULL, args, args_size);
    return 0;
}

static int count_host_fn(void *user_data)
{
    atomic_fetch_add(&ran[(intptr_t)user_data], 1);
    return 0;
}

static const int index_of[OPS] = {0, 1, 2, 3, 4, 5};

/* A batch of every kind a launch chain uses and more: record, wait, AICPU
 * launch, semaphore acquire and release, AICore launch, memset, host
 * callback. Ops 0, 3 and 5 of `ran` count the launches and the callback. */
struct batch {
    simdev_event_t event;
    simdev_sem_t sem;
    void *buffer;
    struct simdev_batch_op op[9];
    size_t count;
};

static void batch_make(struct batch *b)
{
    b->event = ts_new_event();
    assert_int_equal(simdev_sem_create(&b->sem, 1), 0);
    b->buffer = ts_dev_alloc(64);
    const struct simdev_batch_op op[] = {
        {.kind = SIMDEV_BATCH_RECORD, .event = b->event},
        {.kind = SIMDEV_BATCH_WAIT, .event = b->event},
        {.kind = SIMDEV_BATCH_AICPU,
         .aicpu_fn = count_fn,
         .thread_count = 1,
         .args = &index_of[0],
         .args_size = sizeof(int)},
        {.kind = SIMDEV_BATCH_SEM_ACQUIRE, .sem = b->sem},
        {.kind = SIMDEV_BATCH_AICORE,
         .aicore_fn = count_core_fn,
         .args = &index_of[3],
         .args_size = sizeof(int)},
        {.kind = SIMDEV_BATCH_SEM_RELEASE, .sem = b->sem},
        {.kind = SIMDEV_BATCH_MEMSET, .dev_ptr = b->buffer, .value = 7, .bytes = 64},
        {.kind = SIMDEV_BATCH_HOST_FN, .host_fn = count_host_fn, .user_data = (void *)5},
        {.kind = SIMDEV_BATCH_RECORD_HANDOFF, .event = b->event},
    };
    memcpy(b->op, op, sizeof op);
    b->count = sizeof op / sizeof op[0];
}

static void batch_free(struct batch *b)
{
    assert_int_equal(simdev_free(b->buffer), 0);
    assert_int_equal(simdev_sem_destroy(b->sem), 0);
    assert_int_equal(simdev_event_destroy(b->event), 0);
}

static void ran_reset(void)
{
    for (int i = 0; i < OPS; i++)
        atomic_store(&ran[i], 0);
}

static uint64_t performed(enum simdev_op_kind kind)
{
    uint64_t n;
    assert_int_equal(simdev_op_count(0, kind, &n), 0);
    return n;
}

static void a_batch_runs_its_ops_in_order_and_counts_each_as_its_single_op_call(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    struct batch b;
    batch_make(&b);
    ran_reset();
    assert_int_equal(simdev_op_counts_reset(0), 0);
    size_t enqueued = 99;
    assert_int_equal(simdev_stream_enqueue_batch(s, b.op, b.count, &enqueued), 0);
    assert_int_equal(enqueued, b.count);
    /* the single-op calls' kinds: 2 records, 1 wait, 3 launches (a host
     * callback is a launch), 2 semaphore ops, 1 memset (a copy) */
    assert_int_equal(performed(SIMDEV_OP_RECORD), 2);
    assert_int_equal(performed(SIMDEV_OP_WAIT), 1);
    assert_int_equal(performed(SIMDEV_OP_LAUNCH), 3);
    assert_int_equal(performed(SIMDEV_OP_SEM), 2);
    assert_int_equal(performed(SIMDEV_OP_COPY), 1);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&ran[0]), 1);
    assert_int_equal(atomic_load(&ran[3]), 1);
    assert_int_equal(atomic_load(&ran[5]), 1);
    unsigned char bytes[64];
    ts_from_dev(bytes, b.buffer, sizeof bytes);
    for (size_t i = 0; i < sizeof bytes; i++)
        assert_int_equal(bytes[i], 7);
    struct simdev_sem_info info;
    assert_int_equal(simdev_sem_info(b.sem, &info), 0);
    assert_int_equal(info.acquired, 1);
    assert_int_equal(info.released, 1); /* 0: the release was lost or reordered */
    assert_int_equal(simdev_event_query(b.event), 0);
    batch_free(&b);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* The stream's ops run only once the test opens `hold`: what a failed
 * batch enqueued can be counted before it runs. */
static int hold_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    (void)args;
    (void)args_size;
    ts_gate_pass(&hold);
    return 0;
}

/* Enqueues the batch on a stream held behind `hold` with `arm` armed, and
 * checks that it stopped at op `want_at` with `want` (or went whole when
 * want_at is the batch's size), that exactly the ops before it are
 * enqueued, and that enqueueing the rest works. Returns where it stopped. */
static size_t check_stop(struct batch *b, void (*arm)(size_t nth), size_t nth, int want)
{
    simdev_stream_t s = ts_new_stream();
    ts_gate_init(&hold);
    assert_int_equal(simdev_launch_aicpu(s, hold_fn, 1, NULL, 0), 0);
    ts_gate_wait_arrivals(&hold, 1);
    ran_reset();
    size_t enqueued = 99;
    arm(nth);
    int rc = simdev_stream_enqueue_batch(s, b->op, b->count, &enqueued);
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_true(enqueued <= b->count);
    if (enqueued < b->count) {
        assert_int_equal(rc, want); /* another code: the failure was misreported */
        /* the rest, from the op that failed: nothing of it was enqueued */
        size_t rest = 99;
        assert_int_equal(
            simdev_stream_enqueue_batch(s, &b->op[enqueued], b->count - enqueued, &rest), 0);
        assert_int_equal(rest, b->count - enqueued);
    } else {
        assert_int_equal(rc, 0);
    }
    ts_gate_open(&hold);
    assert_int_equal(simdev_stream_sync(s), 0);
    /* each counted op ran once: 2 = a failed op was enqueued anyway, 0 =
     * an op before the failure was dropped */
    assert_int_equal(atomic_load(&ran[0]), 1);
    assert_int_equal(atomic_load(&ran[3]), 1);
    assert_int_equal(atomic_load(&ran[5]), 1);
    struct simdev_sem_info info;
    assert_int_equal(simdev_sem_info(b->sem, &info), 0);
    assert_int_equal(info.acquired, info.released);
    assert_int_equal(simdev_stream_destroy(s), 0);
    ts_gate_destroy(&hold);
    return enqueued;
}

static void arm_host(size_t nth)
{
    assert_int_equal(simdev_fault_inject_host(nth), 0);
}

static enum simdev_op_kind g_kind;
static void arm_device(size_t nth)
{
    assert_int_equal(simdev_fault_inject(0, g_kind, nth, INJECTED), 0);
}

static void a_batch_stops_at_each_host_allocation_that_fails_and_the_rest_enqueues(void **state)
{
    (void)state;
    struct batch b;
    batch_make(&b);
    /* each op allocates once (the op), a record twice (its record, then
     * its op): 11 points in all */
    const size_t stops[] = {0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 8};
    size_t points = sizeof stops / sizeof stops[0];
    for (size_t nth = 1; nth <= points; nth++)
        assert_int_equal(check_stop(&b, arm_host, nth, OOM), stops[nth - 1]);
    /* one more: the batch has no 12th point and goes whole */
    assert_int_equal(check_stop(&b, arm_host, points + 1, OOM), b.count);
    batch_free(&b);
}

static void a_batch_stops_at_each_device_fault_and_the_rest_enqueues(void **state)
{
    (void)state;
    struct batch b;
    batch_make(&b);
    struct {
        enum simdev_op_kind kind;
        size_t stops[3]; /* at the 1st, 2nd, 3rd op of the kind */
        size_t count;
    } kinds[] = {
        {SIMDEV_OP_RECORD, {0, 8}, 2},      {SIMDEV_OP_WAIT, {1}, 1},
        {SIMDEV_OP_LAUNCH, {2, 4, 7}, 3},   {SIMDEV_OP_SEM, {3, 5}, 2},
        {SIMDEV_OP_COPY, {6}, 1},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        g_kind = kinds[k].kind;
        for (size_t nth = 1; nth <= kinds[k].count; nth++)
            assert_int_equal(check_stop(&b, arm_device, nth, INJECTED), kinds[k].stops[nth - 1]);
    }
    batch_free(&b);
}

static void a_batch_stops_at_an_op_with_bad_arguments_having_enqueued_those_before(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    ran_reset();
    struct simdev_batch_op op[] = {
        {.kind = SIMDEV_BATCH_HOST_FN, .host_fn = count_host_fn, .user_data = (void *)0},
        {.kind = SIMDEV_BATCH_AICPU, .aicpu_fn = count_fn, .thread_count = 0}, /* no threads */
        {.kind = SIMDEV_BATCH_HOST_FN, .host_fn = count_host_fn, .user_data = (void *)1},
    };
    size_t enqueued = 99;
    assert_int_equal(simdev_stream_enqueue_batch(s, op, 3, &enqueued),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(enqueued, 1);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&ran[0]), 1);
    assert_int_equal(atomic_load(&ran[1]), 0); /* 1: the batch went on after the failure */
    /* its own arguments: nothing enqueued */
    assert_int_equal(simdev_stream_enqueue_batch(NULL, op, 1, &enqueued),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_stream_enqueue_batch(s, op, 1, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_stream_enqueue_batch(s, NULL, 1, &enqueued),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_stream_enqueue_batch(s, NULL, 0, &enqueued), 0);
    assert_int_equal(enqueued, 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&ran[0]), 1);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* A wait of a batch targets the record latest at its place in the batch:
 * one made earlier in the same batch, on another stream's work. */
static void a_wait_in_a_batch_targets_the_record_made_before_it_in_the_batch(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t e = ts_new_event();
    ts_gate_init(&hold);
    ran_reset();
    /* e's first record completes at once: a wait for it would not wait */
    assert_int_equal(simdev_event_record(e, a), 0);
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(simdev_launch_aicpu(b, hold_fn, 1, NULL, 0), 0);
    const struct simdev_batch_op on_b[] = {
        {.kind = SIMDEV_BATCH_RECORD, .event = e},
    };
    size_t enqueued;
    assert_int_equal(simdev_stream_enqueue_batch(b, on_b, 1, &enqueued), 0);
    const struct simdev_batch_op on_a[] = {
        {.kind = SIMDEV_BATCH_RECORD, .event = e}, /* completes at once: a is idle */
        {.kind = SIMDEV_BATCH_WAIT, .event = e},   /* targets the record just above */
        {.kind = SIMDEV_BATCH_HOST_FN, .host_fn = count_host_fn, .user_data = (void *)0},
    };
    assert_int_equal(simdev_stream_enqueue_batch(a, on_a, 3, &enqueued), 0);
    assert_int_equal(simdev_stream_sync(a), 0); /* hangs if the wait took b's held record */
    assert_int_equal(atomic_load(&ran[0]), 1);
    ts_gate_wait_arrivals(&hold, 1);
    ts_gate_open(&hold);
    assert_int_equal(simdev_stream_sync(b), 0);
    ts_gate_destroy(&hold);
    assert_int_equal(simdev_event_destroy(e), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

/* Records its context into the struct simdev_aicpu_ctx `args` points to. */
static int context_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    struct simdev_aicpu_ctx *out;
    assert_int_equal(args_size, sizeof out);
    memcpy(&out, args, sizeof out);
    *out = *ctx;
    atomic_fetch_add(&ran[0], 1);
    return 0;
}

/*
 * A brief launch (SIMDEV_BATCH_AICPU_BRIEF) is a one-thread launch: wider
 * is INVALID_ARGUMENT with nothing enqueued; it runs once as thread 0 of
 * one, counts as a launch, and a capture records it as a node that a
 * replay runs once more. A brief launch whose AICPU threads are all taken
 * waits its turn behind the launch holding them.
 */
static void a_brief_launch_is_a_one_thread_launch_that_waits_its_turn(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream(), other = ts_new_stream();
    ran_reset();
    struct simdev_aicpu_ctx seen = {.device = -1, .thread_index = 9, .thread_count = 9};
    struct simdev_aicpu_ctx *at = &seen;
    struct simdev_batch_op op = {.kind = SIMDEV_BATCH_AICPU_BRIEF,
                                 .aicpu_fn = context_fn,
                                 .thread_count = 2,
                                 .args = &at,
                                 .args_size = sizeof at};
    size_t enqueued = 99;
    assert_int_equal(simdev_op_counts_reset(0), 0);
    assert_int_equal(simdev_stream_enqueue_batch(s, &op, 1, &enqueued),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(enqueued, 0);
    op.thread_count = 1;
    assert_int_equal(simdev_stream_enqueue_batch(s, &op, 1, &enqueued), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&ran[0]), 1);
    assert_int_equal(seen.device, 0);
    assert_int_equal(seen.thread_index, 0);
    assert_int_equal(seen.thread_count, 1);
    assert_int_equal(performed(SIMDEV_OP_LAUNCH), 1); /* the refused one is not */

    /* captured: a node, run by each replay */
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simdev_stream_enqueue_batch(s, &op, 1, &enqueued), 0);
    simdev_graph_t graph;
    assert_int_equal(simdev_stream_end_capture(s, &graph), 0);
    size_t nodes = 0;
    assert_int_equal(simdev_graph_node_count(graph, &nodes), 0);
    assert_int_equal(nodes, 1);
    simdev_graph_exec_t exec;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&ran[0]), 2);

    /* every AICPU thread taken by a held launch: the brief one waits */
    struct ts_gate gate;
    ts_gate_init(&gate);
    struct ts_gate *garg = &gate;
    struct simdev_config config;
    assert_int_equal(simdev_device_get_config(0, &config), 0);
    assert_int_equal(simdev_launch_aicpu(other, ts_gate_aicpu_fn, config.aicpu_threads, &garg,
                                         sizeof garg),
                     0);
    ts_gate_wait_arrivals(&gate, config.aicpu_threads);
    assert_int_equal(simdev_stream_enqueue_batch(s, &op, 1, &enqueued), 0);
    assert_int_equal(atomic_load(&ran[0]), 2); /* 3: it ran on a thread the launch holds */
    ts_gate_open(&gate);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(simdev_stream_sync(other), 0);
    assert_int_equal(atomic_load(&ran[0]), 3);
    ts_gate_destroy(&gate);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_stream_destroy(other), 0);
}

static void a_batch_on_a_capturing_stream_records_its_ops_as_the_single_calls_would(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    simdev_event_t e = ts_new_event();
    ran_reset();
    const struct simdev_batch_op op[] = {
        {.kind = SIMDEV_BATCH_AICPU,
         .aicpu_fn = count_fn,
         .thread_count = 1,
         .args = &index_of[0],
         .args_size = sizeof(int)},
        {.kind = SIMDEV_BATCH_RECORD, .event = e}, /* an edge, not a node */
        {.kind = SIMDEV_BATCH_WAIT, .event = e},
        {.kind = SIMDEV_BATCH_HOST_FN, .host_fn = count_host_fn, .user_data = (void *)1},
    };
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    size_t enqueued;
    assert_int_equal(simdev_stream_enqueue_batch(s, op, 4, &enqueued), 0);
    assert_int_equal(enqueued, 4);
    simdev_graph_t graph;
    assert_int_equal(simdev_stream_end_capture(s, &graph), 0);
    size_t nodes = 0;
    assert_int_equal(simdev_graph_node_count(graph, &nodes), 0);
    assert_int_equal(nodes, 2); /* the launch and the callback */
    assert_int_equal(atomic_load(&ran[0]), 0); /* captured, not run */
    simdev_graph_exec_t exec;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&ran[0]), 1);
    assert_int_equal(atomic_load(&ran[1]), 1);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(e), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(a_batch_runs_its_ops_in_order_and_counts_each_as_its_single_op_call),
        SIMPLER_TEST(a_batch_stops_at_each_host_allocation_that_fails_and_the_rest_enqueues),
        SIMPLER_TEST(a_batch_stops_at_each_device_fault_and_the_rest_enqueues),
        SIMPLER_TEST(a_batch_stops_at_an_op_with_bad_arguments_having_enqueued_those_before),
        SIMPLER_TEST(a_wait_in_a_batch_targets_the_record_made_before_it_in_the_batch),
        SIMPLER_TEST(a_batch_on_a_capturing_stream_records_its_ops_as_the_single_calls_would),
        SIMPLER_TEST(a_brief_launch_is_a_one_thread_launch_that_waits_its_turn),
    };
    return cmocka_run_group_tests(tests, ts_device_setup, ts_device_teardown);
}
