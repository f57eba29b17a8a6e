/*
 * test_graph_update.c — an executable graph's launch arguments replaced
 * after instantiation (simdev_graph_exec_launch_*, CUDA's
 * cudaGraphExecKernelNodeSetParams): which nodes are listed, that later
 * replays run the new arguments and replays launched before keep theirs,
 * that a replay racing updates runs one whole set, and that refused updates
 * change nothing. Public simdev API and test_support fixtures only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "test_support.h"

/* What the recording function receives: a value and its complement, so a
 * replay that ran half of one set and half of another is seen. */
struct rec_args {
    uint64_t value;
    uint64_t check; /* ~value */
};

#define REC_VALUES 4
/* Written by device work: static, never on a test's stack. */
static _Atomic uint64_t rec_count[REC_VALUES]; /* runs per value */
static _Atomic uint64_t rec_torn;              /* runs whose two words disagreed */
static _Atomic uint64_t rec_order[64];         /* values in run order */
static atomic_int rec_runs;

static void rec_reset(void)
{
    for (int i = 0; i < REC_VALUES; i++)
        atomic_store(&rec_count[i], 0);
    atomic_store(&rec_torn, 0);
    atomic_store(&rec_runs, 0);
}

static int rec_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    struct rec_args a;
    if (args_size != sizeof a)
        return TS_BAD_ARGS;
    memcpy(&a, args, sizeof a);
    if (a.check != ~a.value || a.value >= REC_VALUES) {
        atomic_fetch_add(&rec_torn, 1);
        return TS_BAD_ARGS;
    }
    atomic_fetch_add(&rec_count[a.value], 1);
    int n = atomic_fetch_add(&rec_runs, 1);
    if (n < 64)
        atomic_store(&rec_order[n], a.value);
    return 0;
}

static int core_noop_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    (void)args;
    (void)args_size;
    return 0;
}

static struct rec_args rec(uint64_t value)
{
    return (struct rec_args){value, ~value};
}

/* Captures one rec_fn launch of `value` on `s` and instantiates it. */
static simdev_graph_exec_t capture_rec(simdev_stream_t s, uint64_t value, simdev_graph_t *graph)
{
    struct rec_args a = rec(value);
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simdev_launch_aicpu(s, rec_fn, 1, &a, sizeof a), 0);
    assert_int_equal(simdev_stream_end_capture(s, graph), 0);
    simdev_graph_exec_t exec = NULL;
    assert_int_equal(simdev_graph_instantiate(&exec, *graph), 0);
    return exec;
}

static void set_rec(simdev_graph_exec_t exec, uint64_t value)
{
    struct rec_args a = rec(value);
    assert_int_equal(simdev_graph_exec_launch_set_args(exec, 0, &a, sizeof a), 0);
}

/* ------------------------------------------------------------------ tests */

static void test_launch_nodes_are_listed_in_capture_order_with_their_arguments(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    void *dev = ts_dev_alloc(64);
    atomic_int hits = 0;
    struct rec_args a = rec(1);
    uint32_t core_arg = 77;
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simdev_memset_async(dev, 0, 64, s), 0);
    assert_int_equal(simdev_launch_aicpu(s, rec_fn, 1, &a, sizeof a), 0);
    assert_int_equal(simdev_launch_host_func(s, ts_count_host_fn, &hits), 0);
    assert_int_equal(simdev_launch_aicore(s, core_noop_fn, &core_arg, sizeof core_arg), 0);
    simdev_graph_t graph;
    assert_int_equal(simdev_stream_end_capture(s, &graph), 0);
    simdev_graph_exec_t exec;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    size_t count = 99;
    assert_int_equal(simdev_graph_exec_launch_count(exec, &count), 0);
    assert_int_equal(count, 2); /* 4: the memset and the host callback counted as launches */
    struct simdev_launch_node node;
    struct rec_args got;
    assert_int_equal(simdev_graph_exec_launch_get(exec, 0, &node, &got, sizeof got), 0);
    assert_ptr_equal(node.aicpu_fn, rec_fn); /* another: not capture order */
    assert_null(node.aicore_fn);
    assert_int_equal(node.thread_count, 1);
    assert_int_equal(node.args_size, sizeof a);
    assert_memory_equal(&got, &a, sizeof a);
    uint32_t core_got = 0;
    assert_int_equal(simdev_graph_exec_launch_get(exec, 1, &node, &core_got, sizeof core_got), 0);
    assert_ptr_equal(node.aicore_fn, core_noop_fn);
    assert_null(node.aicpu_fn);
    assert_int_equal(node.thread_count, 0);
    assert_int_equal(core_got, 77);
    assert_int_equal(simdev_graph_exec_launch_get(exec, 1, &node, NULL, 0), 0); /* description only */
    /* Refused: nothing written. */
    assert_int_equal(simdev_graph_exec_launch_get(exec, 2, &node, NULL, 0),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_graph_exec_launch_get(exec, 0, &node, &got, sizeof got - 1),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_graph_exec_launch_get(exec, 0, NULL, NULL, 0),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_graph_exec_launch_count(NULL, &count), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_graph_exec_launch_count(exec, NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_free(dev), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* A replay launched before an update (held behind a gate) runs the old
 * arguments; the one launched after it the new. */
static void test_an_update_applies_to_replays_launched_after_it_only(void **state)
{
    (void)state;
    rec_reset();
    simdev_stream_t s = ts_new_stream();
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_rec(s, 1, &graph);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&rec_count[1]), 1);

    static struct ts_gate gate;
    ts_gate_init(&gate);
    ts_launch_gate(s, &gate);
    assert_int_equal(simdev_graph_launch(exec, s), 0); /* held: launched with value 1 */
    set_rec(exec, 2);
    assert_int_equal(simdev_graph_launch(exec, s), 0); /* value 2 */
    set_rec(exec, 3);                                  /* nothing launched with it yet */
    struct rec_args current;
    struct simdev_launch_node node;
    assert_int_equal(simdev_graph_exec_launch_get(exec, 0, &node, &current, sizeof current), 0);
    assert_int_equal(current.value, 3); /* get reports the set the next replay takes */
    ts_gate_open(&gate);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&rec_runs), 3);
    assert_int_equal(atomic_load(&rec_order[1]), 1); /* 2 or 3: the held replay took a later set */
    assert_int_equal(atomic_load(&rec_order[2]), 2); /* 3: the launch read the set when it ran */
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&rec_order[3]), 3);
    assert_int_equal(atomic_load(&rec_torn), 0);
    ts_gate_destroy(&gate);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* A replay still queued keeps its set alive after the graph was updated
 * again and destroyed (ASan: no use after free). */
static void test_a_queued_replay_keeps_its_set_after_update_and_destroy(void **state)
{
    (void)state;
    rec_reset();
    simdev_stream_t s = ts_new_stream();
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_rec(s, 0, &graph);
    set_rec(exec, 1);
    static struct ts_gate gate;
    ts_gate_init(&gate);
    ts_launch_gate(s, &gate);
    assert_int_equal(simdev_graph_launch(exec, s), 0); /* value 1, held */
    set_rec(exec, 2);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    ts_gate_open(&gate);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&rec_runs), 1);
    assert_int_equal(atomic_load(&rec_order[0]), 1);
    ts_gate_destroy(&gate);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

struct updater {
    simdev_graph_exec_t exec;
    int updates;
    atomic_int failed;
};

static void *update_alternately(void *arg)
{
    struct updater *u = arg;
    for (int i = 0; i < u->updates; i++) {
        struct rec_args a = rec(1 + (uint64_t)(i & 1));
        if (simdev_graph_exec_launch_set_args(u->exec, 0, &a, sizeof a))
            atomic_fetch_add(&u->failed, 1);
    }
    return NULL;
}

/* One thread updates while another launches replays: every replay runs one
 * whole set (its two words agree). */
static void test_a_replay_racing_updates_runs_one_whole_set(void **state)
{
    (void)state;
    rec_reset();
    simdev_stream_t s = ts_new_stream();
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_rec(s, 1, &graph);
    struct updater u = {.exec = exec, .updates = 2000};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, update_alternately, &u), 0);
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(simdev_graph_launch(exec, s), 0);
        if (i % 50 == 49)
            assert_int_equal(simdev_stream_sync(s), 0); /* TS_BAD_ARGS: a torn set */
    }
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&u.failed), 0);
    assert_int_equal(atomic_load(&rec_torn), 0);
    assert_int_equal(atomic_load(&rec_count[1]) + atomic_load(&rec_count[2]), 1000); /* a lost replay */
    assert_int_equal(atomic_load(&rec_count[0]) + atomic_load(&rec_count[3]), 0);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* Refused updates change nothing: the next replay runs the set before. */
static void test_refused_updates_change_nothing(void **state)
{
    (void)state;
    rec_reset();
    simdev_stream_t s = ts_new_stream();
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_rec(s, 1, &graph);
    set_rec(exec, 2);
    struct rec_args a = rec(3);
    assert_int_equal(simdev_graph_exec_launch_set_args(NULL, 0, &a, sizeof a),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_graph_exec_launch_set_args(exec, 1, &a, sizeof a),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* one launch node only */
    assert_int_equal(simdev_graph_exec_launch_set_args(exec, 0, NULL, sizeof a),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_graph_exec_launch_set_args(exec, 0, &a, SIMDEV_MAX_LAUNCH_ARGS + 1),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* Every host allocation of an update failed in turn. */
    uint64_t before, after;
    assert_int_equal(simdev_host_alloc_count(&before), 0);
    set_rec(exec, 2);
    assert_int_equal(simdev_host_alloc_count(&after), 0);
    assert_int_equal(after - before, 3); /* the op holder, the op, the new set */
    for (uint64_t nth = 1; nth <= after - before; nth++) {
        assert_int_equal(simdev_fault_inject_host(nth), 0);
        assert_int_equal(simdev_graph_exec_launch_set_args(exec, 0, &a, sizeof a),
                         PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
        assert_int_equal(simdev_fault_clear(0), 0);
    }
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&rec_order[0]), 2); /* 3: a refused update took effect */
    set_rec(exec, 3); /* and after them an update works */
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&rec_order[1]), 3);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(test_launch_nodes_are_listed_in_capture_order_with_their_arguments),
        SIMPLER_TEST(test_an_update_applies_to_replays_launched_after_it_only),
        SIMPLER_TEST(test_a_queued_replay_keeps_its_set_after_update_and_destroy),
        SIMPLER_TEST(test_a_replay_racing_updates_runs_one_whole_set),
        SIMPLER_TEST(test_refused_updates_change_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
