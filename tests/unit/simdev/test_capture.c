/*
 * test_capture.c — stream capture on the simulated device.
 *
 * Owns: tests of what a capture records, what it forbids (each forbidden
 * call's own status and the CAPTURE_INVALIDATED it leaves for end-capture),
 * the relaxed capture mode, and how streams are pulled into a capture and
 * must join back. How an instantiated graph replays belongs to test_graph.c.
 * Uses only the public simdev API and the fixtures of test_support; must not
 * touch device internals.
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

/* A status no simdev call produces by itself: a device function returns it to
 * fail its op (orchestrator band, so it passes through unchanged). */
#define NODE_FAILURE (-17)

/* Never a real handle: lets a test see that a failed call left an out-param
 * untouched. */
static char sentinel_storage;
#define SENTINEL_GRAPH ((simdev_graph_t)(void *)&sentinel_storage)
#define SENTINEL_PTR ((void *)&sentinel_storage)

/* ------------------------------------------------------------ device ops */

static int fail_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    (void)args;
    (void)args_size;
    return NODE_FAILURE;
}

/*
 * State that device work writes (counters, host-func user_data, gates) is
 * static, never on a test's stack: when an assert fails, cmocka leaves the
 * test while its ops may still be queued, and they must not write into a dead
 * frame. Each test runs once per process, so a test's statics start at 0;
 * helpers that run more than once reset theirs.
 */

/* --------------------------------------------------------------- helpers */

static int is_capturing(simdev_stream_t stream)
{
    int capturing = -1;
    assert_int_equal(simdev_stream_is_capturing(stream, &capturing), 0);
    return capturing;
}

static size_t node_count(simdev_graph_t graph)
{
    size_t count = 12345;
    assert_int_equal(simdev_graph_node_count(graph, &count), 0);
    return count;
}

/* Ends the capture on `origin` expecting CAPTURE_INVALIDATED: no graph is
 * written and the stream leaves capture. */
static void end_expect_invalidated(simdev_stream_t origin)
{
    simdev_graph_t graph = SENTINEL_GRAPH;
    assert_int_equal(simdev_stream_end_capture(origin, &graph),
                     PTO_RUNTIME_ERR_CAPTURE_INVALIDATED); /* 0: the forbidden call was dropped silently */
    assert_ptr_equal(graph, SENTINEL_GRAPH); /* changed: a failed end wrote a graph */
    assert_int_equal(is_capturing(origin), 0); /* 1: a failed end left the stream capturing */
}

/* Ends the capture on `origin`, expecting success and `nodes` nodes. */
static simdev_graph_t end_expect_graph(simdev_stream_t origin, size_t nodes)
{
    simdev_graph_t graph = SENTINEL_GRAPH;
    assert_int_equal(simdev_stream_end_capture(origin, &graph), 0);
    assert_ptr_not_equal(graph, SENTINEL_GRAPH);
    assert_non_null(graph);
    assert_int_equal(is_capturing(origin), 0);
    assert_int_equal(node_count(graph), nodes);
    return graph;
}

/* Instantiates `graph`, replays it `replays` times on `stream`, waits. */
static void replay(simdev_graph_t graph, simdev_stream_t stream, int replays)
{
    simdev_graph_exec_t exec = NULL;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    for (int i = 0; i < replays; i++)
        assert_int_equal(simdev_graph_launch(exec, stream), 0);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
}

/*
 * After a failed capture: the calling thread is no longer capturing (a
 * strict-mode sync succeeds) and `stream` can run work and start and end a
 * fresh capture. `captured` counts the op recorded in the failed capture; it
 * must never run, since the recording was discarded.
 */
static void assert_stream_recovered(simdev_stream_t stream, _Atomic uint64_t *captured)
{
    assert_int_equal(simdev_stream_sync(stream), 0); /* CAPTURE_UNSUPPORTED: thread still capturing */
    assert_int_equal(ts_load_u64(captured), 0); /* 1: a discarded recording ran */
    static _Atomic uint64_t fresh;
    atomic_store(&fresh, 0);
    ts_enqueue_count(stream, &fresh);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(ts_load_u64(&fresh), 1); /* 0: the stream stayed in capture mode */
    assert_int_equal(simdev_stream_begin_capture(stream), 0);
    simdev_graph_t graph = end_expect_graph(stream, 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
}

/* Runs fn(arg) on a new thread (a thread that never began a capture) and
 * returns its status. cmocka asserts stay on the test thread. */
struct thread_call {
    int (*fn)(void *arg);
    void *arg;
    int status;
};

static void *thread_call_main(void *p)
{
    struct thread_call *call = p;
    call->status = call->fn(call->arg);
    return NULL;
}

static int call_on_other_thread(int (*fn)(void *arg), void *arg)
{
    struct thread_call call = {fn, arg, 12345};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, thread_call_main, &call), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    return call.status;
}

static int stream_sync_thunk(void *stream)
{
    return simdev_stream_sync(stream);
}

static int stream_query_thunk(void *stream)
{
    return simdev_stream_query(stream);
}

/* Teardown that also returns the test thread to strict mode, so a test that
 * failed while relaxed does not leak its mode into the next test. */
static int capture_teardown(void **state)
{
    enum simdev_capture_mode mode = SIMDEV_CAPTURE_MODE_STRICT;
    simdev_thread_exchange_capture_mode(&mode);
    return ts_device_teardown(state);
}

static void set_mode_expect_previous(enum simdev_capture_mode mode, enum simdev_capture_mode previous)
{
    enum simdev_capture_mode m = mode;
    assert_int_equal(simdev_thread_exchange_capture_mode(&m), 0);
    assert_int_equal(m, previous); /* other: the exchange does not report the mode it replaced */
}

/* ------------------------------------------------------- what is recorded */

static void test_captured_ops_do_not_run_until_the_graph_is_launched(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    void *dev = NULL;
    assert_int_equal(simdev_malloc(&dev, 64), 0);
    uint8_t zeros[64] = {0};
    assert_int_equal(simdev_memcpy(dev, zeros, sizeof zeros, SIMDEV_COPY_HOST_TO_DEVICE), 0);

    static _Atomic uint64_t aicpu_runs = 0, aicore_runs = 0, host_runs = 0;
    assert_int_equal(is_capturing(a), 0);
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    assert_int_equal(is_capturing(a), 1); /* 0: begin did not put the stream in capture mode */
    ts_enqueue_count(a, &aicpu_runs);
    struct ts_count_args core_args = {&aicore_runs, TS_COUNT_MAGIC};
    assert_int_equal(simdev_launch_aicore(a, ts_magic_count_core_fn, &core_args, sizeof core_args), 0);
    assert_int_equal(simdev_launch_host_func(a, ts_count_u64_host_fn, &host_runs), 0);
    assert_int_equal(simdev_memset_async(dev, 0x5a, 64, a), 0);
    simdev_graph_t graph = end_expect_graph(a, 4); /* not 4: some op was not recorded as a node */

    /* The stream is drained and no captured op ran. */
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(ts_load_u64(&aicpu_runs), 0); /* 1: the captured AICPU launch ran */
    assert_int_equal(ts_load_u64(&aicore_runs), 0); /* >0: the captured AICore launch ran */
    assert_int_equal(ts_load_u64(&host_runs), 0); /* 1: the captured host func ran */
    uint8_t back[64];
    memset(back, 0xff, sizeof back);
    assert_int_equal(simdev_memcpy(back, dev, sizeof back, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(back, zeros, sizeof zeros); /* 0x5a: the captured memset ran */

    replay(graph, a, 1);
    assert_int_equal(ts_load_u64(&aicpu_runs), 1);
    assert_int_equal(ts_load_u64(&aicore_runs), 3); /* one per core: 1 AIC + 2 AIV from ts_device_setup */
    assert_int_equal(ts_load_u64(&host_runs), 1);
    uint8_t expected[64];
    memset(expected, 0x5a, sizeof expected);
    assert_int_equal(simdev_memcpy(back, dev, sizeof back, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(back, expected, sizeof expected);

    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_free(dev), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void test_injected_launch_fault_during_capture_adds_no_node_and_keeps_capture_valid(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    static _Atomic uint64_t first = 0, failed = 0, third = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_LAUNCH, 2, PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY), 0);
    ts_enqueue_count(a, &first);
    struct ts_count_args args = {&failed, TS_COUNT_MAGIC};
    assert_int_equal(simdev_launch_aicpu(a, ts_magic_count_fn, 1, &args, sizeof args),
                     PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
    ts_enqueue_count(a, &third);
    simdev_graph_t graph = end_expect_graph(a, 2); /* 3: the failed launch left a node behind */
    replay(graph, a, 1);
    assert_int_equal(ts_load_u64(&first), 1);
    assert_int_equal(ts_load_u64(&failed), 0); /* 1: the failed launch was recorded anyway */
    assert_int_equal(ts_load_u64(&third), 1);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

/* -------------------------------------- forbidden from the capturing thread */

static void test_sync_memcpy_from_capturing_thread_is_unsupported_and_invalidates_capture(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    void *dev = NULL;
    assert_int_equal(simdev_malloc(&dev, 32), 0);
    uint8_t before[32], during[32], back[32];
    memset(before, 0x11, sizeof before);
    memset(during, 0x22, sizeof during);
    assert_int_equal(simdev_memcpy(dev, before, sizeof before, SIMDEV_COPY_HOST_TO_DEVICE), 0);

    static _Atomic uint64_t captured = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    assert_int_equal(simdev_memcpy(dev, during, sizeof during, SIMDEV_COPY_HOST_TO_DEVICE),
                     PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    assert_int_equal(simdev_memcpy(back, dev, sizeof back, SIMDEV_COPY_DEVICE_TO_HOST),
                     PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    end_expect_invalidated(a);
    assert_stream_recovered(a, &captured);

    /* A rejected call changes nothing: the device still holds `before`. */
    assert_int_equal(simdev_memcpy(back, dev, sizeof back, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(back, before, sizeof before); /* 0x22: the rejected copy was performed */
    assert_int_equal(simdev_free(dev), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void test_stream_sync_of_other_stream_from_capturing_thread_is_unsupported_and_invalidates_capture(
    void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    /* b carries an error: a rejected sync must not clear it. */
    assert_int_equal(simdev_launch_aicpu(b, fail_fn, 1, NULL, 0), 0);

    static _Atomic uint64_t captured = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    assert_int_equal(simdev_stream_sync(b), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    assert_int_equal(is_capturing(b), 0); /* 1: syncing a stream pulled it into the capture */
    end_expect_invalidated(a);
    assert_stream_recovered(a, &captured);

    assert_int_equal(simdev_stream_sync(b), NODE_FAILURE); /* 0: the rejected sync cleared b's error */
    assert_int_equal(simdev_stream_sync(b), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_event_sync_from_capturing_thread_is_unsupported_and_invalidates_capture(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t e = ts_new_event();
    static _Atomic uint64_t on_b = 0, captured = 0;
    ts_enqueue_count(b, &on_b);
    assert_int_equal(simdev_event_record(e, b), 0);

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    assert_int_equal(simdev_event_sync(e), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    end_expect_invalidated(a);
    assert_stream_recovered(a, &captured);

    assert_int_equal(simdev_event_sync(e), 0);
    assert_int_equal(ts_load_u64(&on_b), 1);
    assert_int_equal(simdev_event_destroy(e), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_device_sync_from_capturing_thread_is_unsupported_and_invalidates_capture(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    assert_int_equal(simdev_launch_aicpu(b, fail_fn, 1, NULL, 0), 0);

    static _Atomic uint64_t captured = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    assert_int_equal(simdev_device_sync(), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    end_expect_invalidated(a);
    assert_stream_recovered(a, &captured);

    assert_int_equal(simdev_stream_sync(b), NODE_FAILURE); /* 0: the rejected device sync cleared b's error */
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_malloc_from_capturing_thread_is_unsupported_and_invalidates_capture(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    struct simdev_mem_info before, after;
    assert_int_equal(simdev_mem_get_info(0, &before), 0);

    static _Atomic uint64_t captured = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    void *dev = SENTINEL_PTR;
    assert_int_equal(simdev_malloc(&dev, 64), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    assert_ptr_equal(dev, SENTINEL_PTR); /* changed: a failed malloc wrote its out-param */
    assert_int_equal(simdev_mem_get_info(0, &after), 0);
    assert_int_equal(after.in_use, before.in_use); /* larger: the rejected malloc allocated */
    assert_int_equal(after.allocations, before.allocations);
    end_expect_invalidated(a);
    assert_stream_recovered(a, &captured);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void test_malloc_from_capturing_thread_in_relaxed_mode_is_allowed(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    set_mode_expect_previous(SIMDEV_CAPTURE_MODE_RELAXED, SIMDEV_CAPTURE_MODE_STRICT);

    static _Atomic uint64_t captured = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    void *dev = NULL;
    /* Relaxed mode is the thread's statement that this memory serves no
     * captured op (a runtime preparing a callable on its own stream). */
    assert_int_equal(simdev_malloc(&dev, 64), 0); /* CAPTURE_UNSUPPORTED: relaxed mode not honoured */
    assert_non_null(dev);
    assert_int_equal(simdev_free(dev), 0);
    simdev_graph_t graph = end_expect_graph(a, 1); /* INVALIDATED: the malloc broke the capture */
    assert_int_equal(ts_load_u64(&captured), 0); /* 1: the captured op ran eagerly */
    assert_int_equal(simdev_graph_destroy(graph), 0);

    set_mode_expect_previous(SIMDEV_CAPTURE_MODE_STRICT, SIMDEV_CAPTURE_MODE_RELAXED);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

/* ----------------------------------------- forbidden on the capturing stream */

static void test_sync_of_capturing_stream_from_another_thread_is_unsupported_and_invalidates_capture(
    void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    static _Atomic uint64_t captured = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    assert_int_equal(call_on_other_thread(stream_sync_thunk, a), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    end_expect_invalidated(a);
    assert_stream_recovered(a, &captured);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void test_sync_of_capturing_stream_in_relaxed_mode_is_unsupported_and_invalidates_capture(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    set_mode_expect_previous(SIMDEV_CAPTURE_MODE_RELAXED, SIMDEV_CAPTURE_MODE_STRICT);
    static _Atomic uint64_t captured = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    assert_int_equal(simdev_stream_sync(a),
                     PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED); /* 0: relaxed mode exempted the capturing stream */
    end_expect_invalidated(a);
    set_mode_expect_previous(SIMDEV_CAPTURE_MODE_STRICT, SIMDEV_CAPTURE_MODE_RELAXED);
    assert_stream_recovered(a, &captured);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void test_query_of_capturing_stream_is_unsupported_and_invalidates_capture(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    static _Atomic uint64_t captured = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    assert_int_equal(simdev_stream_query(a), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    end_expect_invalidated(a);
    assert_stream_recovered(a, &captured);
    assert_int_equal(simdev_stream_query(a), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void test_query_of_capturing_stream_from_another_thread_is_unsupported_and_invalidates_capture(
    void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    static _Atomic uint64_t captured = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    assert_int_equal(call_on_other_thread(stream_query_thunk, a), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    end_expect_invalidated(a);
    assert_stream_recovered(a, &captured);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void test_wait_on_event_recorded_before_capture_is_unsupported_and_invalidates_capture(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t e = ts_new_event();
    static _Atomic uint64_t on_b = 0, captured = 0;
    ts_enqueue_count(b, &on_b);
    assert_int_equal(simdev_event_record(e, b), 0);

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    assert_int_equal(simdev_stream_wait_event(a, e), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    assert_int_equal(is_capturing(b), 0); /* 1: an outside record pulled its stream in */
    end_expect_invalidated(a);
    assert_stream_recovered(a, &captured);

    assert_int_equal(simdev_stream_sync(b), 0);
    assert_int_equal(ts_load_u64(&on_b), 1);
    assert_int_equal(simdev_event_destroy(e), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_wait_on_event_re_recorded_inside_capture_is_an_edge_not_an_error(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t fork = ts_new_event(), join = ts_new_event();
    /* The fork event's first record is outside the capture... */
    assert_int_equal(simdev_event_record(fork, b), 0);
    assert_int_equal(simdev_stream_sync(b), 0);

    static _Atomic uint64_t on_a = 0, on_b = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &on_a);
    /* ...but its latest record is inside, so waiting on it is a fork. */
    assert_int_equal(simdev_event_record(fork, a), 0);
    assert_int_equal(simdev_stream_wait_event(b, fork), 0); /* UNSUPPORTED: judged by an old record */
    assert_int_equal(is_capturing(b), 1);
    ts_enqueue_count(b, &on_b);
    assert_int_equal(simdev_event_record(join, b), 0);
    assert_int_equal(simdev_stream_wait_event(a, join), 0);
    simdev_graph_t graph = end_expect_graph(a, 2); /* 3 or 4: records/waits were counted as nodes */
    assert_int_equal(is_capturing(b), 0);
    replay(graph, a, 1);
    assert_int_equal(ts_load_u64(&on_a), 1);
    assert_int_equal(ts_load_u64(&on_b), 1);

    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(fork), 0);
    assert_int_equal(simdev_event_destroy(join), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_graph_launch_onto_capturing_stream_is_unsupported_and_invalidates_capture(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    static _Atomic uint64_t in_exec = 0, captured = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &in_exec);
    simdev_graph_t graph = end_expect_graph(a, 1);
    simdev_graph_exec_t exec = NULL;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    assert_int_equal(simdev_graph_launch(exec, a), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    end_expect_invalidated(a);
    assert_stream_recovered(a, &captured);
    assert_int_equal(ts_load_u64(&in_exec), 0); /* 1: the rejected graph launch ran the exec */

    /* The exec itself is unharmed. */
    assert_int_equal(simdev_graph_launch(exec, a), 0);
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(ts_load_u64(&in_exec), 1);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

/* ---------------------------------------------------------- relaxed mode */

static void test_relaxed_mode_allows_sync_copy_and_sync_of_other_streams_and_capture_stays_valid(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t e = ts_new_event();
    void *dev = NULL;
    assert_int_equal(simdev_malloc(&dev, 48), 0);
    uint8_t pattern[48], back[48];
    for (size_t i = 0; i < sizeof pattern; i++)
        pattern[i] = (uint8_t)(i * 7 + 3);
    memset(back, 0, sizeof back);

    set_mode_expect_previous(SIMDEV_CAPTURE_MODE_RELAXED, SIMDEV_CAPTURE_MODE_STRICT);
    static _Atomic uint64_t first = 0, second = 0, on_b = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &first);

    assert_int_equal(simdev_memcpy(dev, pattern, sizeof pattern, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    assert_int_equal(simdev_memcpy(back, dev, sizeof back, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(back, pattern, sizeof pattern); /* differs: the relaxed copy did not copy */

    ts_enqueue_count(b, &on_b);
    assert_int_equal(simdev_stream_sync(b), 0);
    assert_int_equal(ts_load_u64(&on_b), 1); /* 0: the relaxed sync returned before b's work ran */
    assert_int_equal(simdev_event_record(e, b), 0);
    assert_int_equal(simdev_event_sync(e), 0);
    ts_enqueue_count(b, &on_b);
    assert_int_equal(simdev_device_sync(), 0); /* UNSUPPORTED: relaxed mode did not exempt device sync */
    assert_int_equal(ts_load_u64(&on_b), 2); /* 1: device sync skipped the non-capturing stream */

    ts_enqueue_count(a, &second);
    simdev_graph_t graph = end_expect_graph(a, 2); /* INVALIDATED: relaxed mode did not exempt the syncs */
    set_mode_expect_previous(SIMDEV_CAPTURE_MODE_STRICT, SIMDEV_CAPTURE_MODE_RELAXED);

    assert_int_equal(ts_load_u64(&first), 0);
    replay(graph, a, 2);
    assert_int_equal(ts_load_u64(&first), 2);
    assert_int_equal(ts_load_u64(&second), 2);

    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(e), 0);
    assert_int_equal(simdev_free(dev), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static int exchange_to_relaxed_and_back_thunk(void *unused)
{
    (void)unused;
    /* Reports the mode a fresh thread starts in, leaving it as found. */
    enum simdev_capture_mode mode = SIMDEV_CAPTURE_MODE_RELAXED;
    int status = simdev_thread_exchange_capture_mode(&mode);
    if (status != 0)
        return status;
    enum simdev_capture_mode start = mode;
    mode = start;
    status = simdev_thread_exchange_capture_mode(&mode);
    if (status != 0)
        return status;
    return (int)start;
}

static void test_capture_mode_exchange_returns_previous_mode_and_is_per_thread(void **state)
{
    (void)state;
    set_mode_expect_previous(SIMDEV_CAPTURE_MODE_RELAXED, SIMDEV_CAPTURE_MODE_STRICT); /* default is strict */
    set_mode_expect_previous(SIMDEV_CAPTURE_MODE_RELAXED, SIMDEV_CAPTURE_MODE_RELAXED);
    /* Another thread starts strict regardless of this thread's mode. */
    assert_int_equal(call_on_other_thread(exchange_to_relaxed_and_back_thunk, NULL),
                     SIMDEV_CAPTURE_MODE_STRICT); /* RELAXED: the mode is process-wide, not per thread */

    /* A mode that does not exist is an argument error and changes nothing. */
    enum simdev_capture_mode bogus = (enum simdev_capture_mode)7;
    assert_int_equal(simdev_thread_exchange_capture_mode(&bogus), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_thread_exchange_capture_mode(NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    set_mode_expect_previous(SIMDEV_CAPTURE_MODE_STRICT, SIMDEV_CAPTURE_MODE_RELAXED);
}

/* Sync calls from a thread that did not begin the capture: allowed in strict
 * mode when they do not touch the capturing stream. */
struct bystander {
    void *dev;
    simdev_stream_t other;
    simdev_event_t event;
    int copy_status, malloc_status, free_status, sync_status, event_status;
};

static int bystander_thunk(void *p)
{
    struct bystander *by = p;
    uint8_t bytes[16];
    memset(bytes, 0x3c, sizeof bytes);
    by->copy_status = simdev_memcpy(by->dev, bytes, sizeof bytes, SIMDEV_COPY_HOST_TO_DEVICE);
    void *scratch = NULL;
    by->malloc_status = simdev_malloc(&scratch, 64);
    by->free_status = by->malloc_status == 0 ? simdev_free(scratch) : 0;
    by->sync_status = simdev_stream_sync(by->other);
    by->event_status = simdev_event_sync(by->event);
    return 0;
}

static void test_sync_calls_from_a_non_capturing_thread_keep_capture_valid(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t e = ts_new_event();
    void *dev = NULL;
    assert_int_equal(simdev_malloc(&dev, 16), 0);
    static _Atomic uint64_t on_a = 0, on_b = 0;
    ts_enqueue_count(b, &on_b);
    assert_int_equal(simdev_event_record(e, b), 0);

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &on_a);
    struct bystander by = {dev, b, e, 1, 1, 1, 1, 1};
    assert_int_equal(call_on_other_thread(bystander_thunk, &by), 0);
    assert_int_equal(by.copy_status, 0); /* UNSUPPORTED: strict mode applied to a non-capturing thread */
    assert_int_equal(by.malloc_status, 0);
    assert_int_equal(by.free_status, 0);
    assert_int_equal(by.sync_status, 0);
    assert_int_equal(by.event_status, 0);
    assert_int_equal(ts_load_u64(&on_b), 1);
    simdev_graph_t graph = end_expect_graph(a, 1); /* INVALIDATED: another thread's calls broke the capture */
    replay(graph, a, 1);
    assert_int_equal(ts_load_u64(&on_a), 1);

    uint8_t back[16], expected[16];
    memset(expected, 0x3c, sizeof expected);
    assert_int_equal(simdev_memcpy(back, dev, sizeof back, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(back, expected, sizeof expected);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(e), 0);
    assert_int_equal(simdev_free(dev), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_query_of_non_capturing_stream_and_event_from_capturing_thread_is_allowed(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t e = ts_new_event();
    static _Atomic uint64_t on_a = 0, on_b = 0;
    ts_enqueue_count(b, &on_b);
    assert_int_equal(simdev_event_record(e, b), 0);
    assert_int_equal(simdev_stream_sync(b), 0);

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &on_a);
    /* Only a capturing stream refuses a query; b and its event are drained. */
    assert_int_equal(simdev_stream_query(b), 0); /* UNSUPPORTED: query was treated as a strict-mode sync */
    assert_int_equal(simdev_event_query(e), 0);
    simdev_graph_t graph = end_expect_graph(a, 1); /* INVALIDATED: an allowed query broke the capture */
    replay(graph, a, 1);
    assert_int_equal(ts_load_u64(&on_a), 1);

    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(e), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_forbidden_call_invalidates_every_capture_of_the_calling_thread(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    static _Atomic uint64_t on_a = 0, on_b = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    assert_int_equal(simdev_stream_begin_capture(b), 0); /* a second, independent capture */
    ts_enqueue_count(a, &on_a);
    ts_enqueue_count(b, &on_b);
    void *dev = SENTINEL_PTR;
    assert_int_equal(simdev_malloc(&dev, 64), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    end_expect_invalidated(a);
    end_expect_invalidated(b); /* 0: only one of the thread's captures was invalidated */
    assert_stream_recovered(a, &on_a);
    assert_stream_recovered(b, &on_b);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

/* Another thread's whole capture: begin on `stream`, record one op, wait at
 * the gate while the test thread misbehaves, then end. */
struct neighbour_capture {
    simdev_stream_t stream;
    struct ts_gate gate;
    _Atomic uint64_t runs;
    int begin_status, launch_status, end_status;
    simdev_graph_t graph;
};

static void *neighbour_main(void *p)
{
    struct neighbour_capture *n = p;
    n->begin_status = simdev_stream_begin_capture(n->stream);
    struct ts_count_args args = {&n->runs, TS_COUNT_MAGIC};
    n->launch_status = simdev_launch_aicpu(n->stream, ts_magic_count_fn, 1, &args, sizeof args);
    ts_gate_pass(&n->gate);
    n->end_status = simdev_stream_end_capture(n->stream, &n->graph);
    return NULL;
}

static void test_forbidden_call_does_not_invalidate_another_threads_capture(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    static struct neighbour_capture n;
    n.stream = ts_new_stream();
    n.graph = SENTINEL_GRAPH;
    ts_gate_init(&n.gate);
    pthread_t neighbour;
    assert_int_equal(pthread_create(&neighbour, NULL, neighbour_main, &n), 0);
    ts_gate_wait_arrivals(&n.gate, 1); /* the neighbour's capture is open */

    static _Atomic uint64_t captured = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured);
    assert_int_equal(simdev_device_sync(), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    end_expect_invalidated(a);

    ts_gate_open(&n.gate);
    assert_int_equal(pthread_join(neighbour, NULL), 0);
    assert_int_equal(n.begin_status, 0);
    assert_int_equal(n.launch_status, 0);
    assert_int_equal(n.end_status, 0); /* INVALIDATED: one thread's forbidden call broke another's capture */
    assert_int_equal(node_count(n.graph), 1);
    replay(n.graph, n.stream, 1);
    assert_int_equal(ts_load_u64(&n.runs), 1);
    assert_stream_recovered(a, &captured);

    assert_int_equal(simdev_graph_destroy(n.graph), 0);
    ts_gate_destroy(&n.gate);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(n.stream), 0);
}

struct foreign_enqueue {
    simdev_stream_t stream;
    _Atomic uint64_t *counter;
};

static int foreign_enqueue_thunk(void *p)
{
    struct foreign_enqueue *f = p;
    struct ts_count_args args = {f->counter, TS_COUNT_MAGIC};
    return simdev_launch_aicpu(f->stream, ts_magic_count_fn, 1, &args, sizeof args);
}

static void test_ops_enqueued_on_capturing_stream_from_another_thread_become_nodes(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    static _Atomic uint64_t mine = 0, foreign = 0;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &mine);
    struct foreign_enqueue f = {a, &foreign};
    assert_int_equal(call_on_other_thread(foreign_enqueue_thunk, &f), 0);
    simdev_graph_t graph = end_expect_graph(a, 2); /* 1: capture followed the thread, not the stream */
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(ts_load_u64(&foreign), 0); /* 1: the other thread's op ran eagerly */
    replay(graph, a, 1);
    assert_int_equal(ts_load_u64(&mine), 1);
    assert_int_equal(ts_load_u64(&foreign), 1);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

/* ---------------------------------------------------- cross-stream capture */

static void test_fork_join_through_events_yields_graph_with_every_branch_node(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t fork = ts_new_event(), join = ts_new_event();
    static _Atomic uint64_t a1 = 0, b1 = 0, b2 = 0, a2 = 0;

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &a1);
    assert_int_equal(simdev_event_record(fork, a), 0);
    assert_int_equal(is_capturing(b), 0);
    assert_int_equal(simdev_stream_wait_event(b, fork), 0);
    assert_int_equal(is_capturing(b), 1); /* 0: waiting on a captured record did not pull b in */
    ts_enqueue_count(b, &b1);
    ts_enqueue_count(b, &b2);
    assert_int_equal(simdev_event_record(join, b), 0);
    assert_int_equal(simdev_stream_wait_event(a, join), 0);
    ts_enqueue_count(a, &a2);
    simdev_graph_t graph = end_expect_graph(a, 4); /* 5-8: records/waits became nodes; <4: b's ops lost */
    assert_int_equal(is_capturing(b), 0); /* 1: b stayed in the ended capture */

    /* b's ops were recorded, not run. */
    assert_int_equal(simdev_stream_sync(b), 0);
    assert_int_equal(ts_load_u64(&b1) + ts_load_u64(&b2), 0);

    replay(graph, a, 1);
    assert_int_equal(ts_load_u64(&a1), 1);
    assert_int_equal(ts_load_u64(&b1), 1);
    assert_int_equal(ts_load_u64(&b2), 1);
    assert_int_equal(ts_load_u64(&a2), 1);

    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(fork), 0);
    assert_int_equal(simdev_event_destroy(join), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_transitive_join_through_a_third_stream_is_accepted(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream(), c = ts_new_stream();
    simdev_event_t a_fork = ts_new_event(), b_fork = ts_new_event(), c_join = ts_new_event(), b_join = ts_new_event();
    static _Atomic uint64_t on_a = 0, on_b = 0, on_c = 0;

    /* a forks b, b forks c; c joins b, b joins a: c reaches a only through b. */
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &on_a);
    assert_int_equal(simdev_event_record(a_fork, a), 0);
    assert_int_equal(simdev_stream_wait_event(b, a_fork), 0);
    assert_int_equal(simdev_event_record(b_fork, b), 0);
    assert_int_equal(simdev_stream_wait_event(c, b_fork), 0);
    assert_int_equal(is_capturing(c), 1); /* 0: a stream pulled in cannot pull in another */
    ts_enqueue_count(c, &on_c);
    ts_enqueue_count(b, &on_b);
    assert_int_equal(simdev_event_record(c_join, c), 0);
    assert_int_equal(simdev_stream_wait_event(b, c_join), 0);
    assert_int_equal(simdev_event_record(b_join, b), 0);
    assert_int_equal(simdev_stream_wait_event(a, b_join), 0);
    simdev_graph_t graph = end_expect_graph(a, 3); /* UNJOINED: the join of c through b was not followed */
    assert_int_equal(is_capturing(b), 0);
    assert_int_equal(is_capturing(c), 0);

    replay(graph, a, 1);
    assert_int_equal(ts_load_u64(&on_a), 1);
    assert_int_equal(ts_load_u64(&on_b), 1);
    assert_int_equal(ts_load_u64(&on_c), 1);

    assert_int_equal(simdev_graph_destroy(graph), 0);
    simdev_event_t events[] = {a_fork, b_fork, c_join, b_join};
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        assert_int_equal(simdev_event_destroy(events[i]), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    assert_int_equal(simdev_stream_destroy(c), 0);
}

static void test_forked_stream_that_never_joins_fails_end_with_unjoined_and_leaves_capture(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t fork = ts_new_event();
    static _Atomic uint64_t captured_a = 0, captured_b = 0;

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &captured_a);
    assert_int_equal(simdev_event_record(fork, a), 0);
    assert_int_equal(simdev_stream_wait_event(b, fork), 0);
    ts_enqueue_count(b, &captured_b);

    simdev_graph_t graph = SENTINEL_GRAPH;
    assert_int_equal(simdev_stream_end_capture(a, &graph),
                     PTO_RUNTIME_ERR_CAPTURE_UNJOINED); /* 0: b's dangling branch was accepted */
    assert_ptr_equal(graph, SENTINEL_GRAPH); /* changed: a failed end wrote a graph */
    assert_int_equal(is_capturing(a), 0);
    assert_int_equal(is_capturing(b), 0); /* 1: the pulled-in stream was left capturing */

    /* Both streams run work again, from a thread that is no longer capturing;
     * the discarded recording never runs. */
    assert_stream_recovered(a, &captured_a);
    assert_stream_recovered(b, &captured_b);

    assert_int_equal(simdev_event_destroy(fork), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_forked_stream_with_ops_after_its_join_record_is_unjoined(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t fork = ts_new_event(), join = ts_new_event();
    static _Atomic uint64_t captured = 0;

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    assert_int_equal(simdev_event_record(fork, a), 0);
    assert_int_equal(simdev_stream_wait_event(b, fork), 0);
    ts_enqueue_count(b, &captured);
    assert_int_equal(simdev_event_record(join, b), 0);
    assert_int_equal(simdev_stream_wait_event(a, join), 0);
    ts_enqueue_count(b, &captured); /* after the join point: a never waits for it */

    simdev_graph_t graph = SENTINEL_GRAPH;
    assert_int_equal(simdev_stream_end_capture(a, &graph),
                     PTO_RUNTIME_ERR_CAPTURE_UNJOINED); /* 0: only the first join was checked */
    assert_ptr_equal(graph, SENTINEL_GRAPH);
    assert_int_equal(is_capturing(b), 0);
    assert_stream_recovered(b, &captured);

    assert_int_equal(simdev_event_destroy(fork), 0);
    assert_int_equal(simdev_event_destroy(join), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

/* ------------------------------------------------------ lifecycle errors */

static void test_begin_capture_on_capturing_stream_is_invalid_state(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t fork = ts_new_event(), join = ts_new_event();
    static _Atomic uint64_t on_a = 0, on_b = 0;

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &on_a);
    assert_int_equal(simdev_stream_begin_capture(a), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simdev_event_record(fork, a), 0);
    assert_int_equal(simdev_stream_wait_event(b, fork), 0);
    /* A pulled-in stream is capturing too. */
    assert_int_equal(simdev_stream_begin_capture(b), PTO_RUNTIME_ERR_INVALID_STATE);
    ts_enqueue_count(b, &on_b);
    assert_int_equal(simdev_event_record(join, b), 0);
    assert_int_equal(simdev_stream_wait_event(a, join), 0);
    /* The rejected begins changed nothing: the capture is whole. */
    simdev_graph_t graph = end_expect_graph(a, 2); /* 0: a rejected begin restarted the recording */
    replay(graph, a, 1);
    assert_int_equal(ts_load_u64(&on_a), 1);
    assert_int_equal(ts_load_u64(&on_b), 1);

    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(fork), 0);
    assert_int_equal(simdev_event_destroy(join), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_end_capture_on_non_capturing_stream_is_invalid_state(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    simdev_graph_t graph = SENTINEL_GRAPH;
    assert_int_equal(simdev_stream_end_capture(a, &graph), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_ptr_equal(graph, SENTINEL_GRAPH);

    /* Ending twice: the second end finds no capture. */
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    simdev_graph_t first = end_expect_graph(a, 0);
    assert_int_equal(simdev_stream_end_capture(a, &graph), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_ptr_equal(graph, SENTINEL_GRAPH);

    assert_int_equal(simdev_graph_destroy(first), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void test_end_capture_on_pulled_in_stream_is_invalid_state(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t fork = ts_new_event(), join = ts_new_event();
    static _Atomic uint64_t on_b = 0;

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    assert_int_equal(simdev_event_record(fork, a), 0);
    assert_int_equal(simdev_stream_wait_event(b, fork), 0);
    ts_enqueue_count(b, &on_b);
    simdev_graph_t graph = SENTINEL_GRAPH;
    assert_int_equal(simdev_stream_end_capture(b, &graph),
                     PTO_RUNTIME_ERR_INVALID_STATE); /* 0: a branch stream ended the whole capture */
    assert_ptr_equal(graph, SENTINEL_GRAPH);
    assert_int_equal(is_capturing(a), 1);
    assert_int_equal(is_capturing(b), 1); /* 0: the rejected end dropped b from the capture */
    assert_int_equal(simdev_event_record(join, b), 0);
    assert_int_equal(simdev_stream_wait_event(a, join), 0);
    graph = end_expect_graph(a, 1);
    replay(graph, a, 1);
    assert_int_equal(ts_load_u64(&on_b), 1);

    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(fork), 0);
    assert_int_equal(simdev_event_destroy(join), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_destroy_of_capturing_stream_is_invalid_state(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t fork = ts_new_event(), join = ts_new_event();
    static _Atomic uint64_t on_a = 0, on_b = 0;

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &on_a);
    assert_int_equal(simdev_stream_destroy(a), PTO_RUNTIME_ERR_INVALID_STATE); /* origin */
    assert_int_equal(simdev_event_record(fork, a), 0);
    assert_int_equal(simdev_stream_wait_event(b, fork), 0);
    ts_enqueue_count(b, &on_b);
    assert_int_equal(simdev_stream_destroy(b), PTO_RUNTIME_ERR_INVALID_STATE); /* pulled in */
    assert_int_equal(simdev_event_record(join, b), 0);
    assert_int_equal(simdev_stream_wait_event(a, join), 0);
    simdev_graph_t graph = end_expect_graph(a, 2);
    replay(graph, a, 1);
    assert_int_equal(ts_load_u64(&on_a), 1);
    assert_int_equal(ts_load_u64(&on_b), 1);

    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(fork), 0);
    assert_int_equal(simdev_event_destroy(join), 0);
    assert_int_equal(simdev_stream_destroy(a), 0); /* INVALID_STATE: the ended capture still holds a */
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_event_query_of_a_record_inside_an_open_capture_is_unsupported_and_invalidates(
    void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    simdev_event_t e = ts_new_event();
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    assert_int_equal(simdev_event_record(e, a), 0);
    /* The record is a graph edge: nothing will ever complete it. 0 or
     * NOT_READY would let a caller wait forever for a captured point. */
    assert_int_equal(simdev_event_query(e), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    end_expect_invalidated(a);

    /* After the capture ended, the same record counts as complete. */
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    assert_int_equal(simdev_event_record(e, a), 0);
    simdev_graph_t graph = end_expect_graph(a, 0);
    assert_int_equal(simdev_event_query(e), 0);     /* NOT_READY: an ended capture's record pends forever */
    assert_int_equal(simdev_event_sync(e), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(e), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static simdev_graph_t ended_elsewhere_graph;
static int end_capture_thunk(void *stream)
{
    return simdev_stream_end_capture(stream, &ended_elsewhere_graph);
}

static void test_a_capture_can_be_ended_by_another_thread(void **state)
{
    (void)state;
    static _Atomic uint64_t runs;
    simdev_stream_t a = ts_new_stream();
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &runs);
    assert_int_equal(call_on_other_thread(end_capture_thunk, a), 0);
    assert_int_equal(is_capturing(a), 0);
    assert_int_equal(node_count(ended_elsewhere_graph), 1);
    /* The beginning thread is no longer capturing: its sync calls work. */
    assert_int_equal(simdev_stream_sync(a), 0);
    replay(ended_elsewhere_graph, a, 3);
    assert_int_equal(ts_load_u64(&runs), 3); /* the node ran once per replay */
    assert_int_equal(simdev_graph_destroy(ended_elsewhere_graph), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void test_event_sync_on_a_captured_record_is_refused_before_an_armed_fault(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream();
    simdev_event_t e = ts_new_event();
    uint64_t syncs_before, syncs_after;
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    assert_int_equal(simdev_event_record(e, a), 0);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_SYNC, 1, -999), 0);
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_SYNC, &syncs_before), 0);
    /* The capture check comes first: -999 would mean the armed fault hid a
     * forbidden call and the capture could still end with a graph. The
     * relaxed mode makes this thread's syncs legal, so only the captured
     * record forbids this one. */
    enum simdev_capture_mode mode = SIMDEV_CAPTURE_MODE_RELAXED;
    assert_int_equal(simdev_thread_exchange_capture_mode(&mode), 0);
    assert_int_equal(simdev_event_sync(e), PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
    assert_int_equal(simdev_thread_exchange_capture_mode(&mode), 0);
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_SYNC, &syncs_after), 0);
    assert_int_equal(syncs_after, syncs_before); /* +1: a refused sync was counted as performed */
    end_expect_invalidated(a);
    /* The fault is still armed for the next real sync. */
    assert_int_equal(simdev_stream_sync(a), -999);
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(simdev_event_destroy(e), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

/* Another thread records an event on the stream over and over while this
 * thread begins and ends captures on it: each record is either eager or an
 * edge, never a node. */
static simdev_stream_t race_stream;
static simdev_event_t race_event;
static atomic_int race_stop;
static void *race_recorder(void *unused)
{
    (void)unused;
    while (!atomic_load(&race_stop))
        if (simdev_event_record(race_event, race_stream) != 0)
            return (void *)1;
    return NULL;
}

static void test_records_racing_with_begin_capture_never_become_nodes(void **state)
{
    (void)state;
    race_stream = ts_new_stream();
    race_event = ts_new_event();
    atomic_store(&race_stop, 0);
    pthread_t recorder;
    assert_int_equal(pthread_create(&recorder, NULL, race_recorder, NULL), 0);
    size_t nodes_seen = 0;
    for (int i = 0; i < 2000; i++) {
        simdev_graph_t graph;
        assert_int_equal(simdev_stream_begin_capture(race_stream), 0);
        assert_int_equal(simdev_stream_end_capture(race_stream, &graph), 0);
        nodes_seen += node_count(graph);
        assert_int_equal(simdev_graph_destroy(graph), 0);
    }
    atomic_store(&race_stop, 1);
    void *recorder_failed;
    assert_int_equal(pthread_join(recorder, &recorder_failed), 0);
    assert_null(recorder_failed);
    assert_int_equal(nodes_seen, 0); /* >0: an eager record was taken into a graph */
    assert_int_equal(simdev_stream_sync(race_stream), 0);
    assert_int_equal(simdev_event_sync(race_event), 0); /* hangs if a record was lost */
    assert_int_equal(simdev_event_destroy(race_event), 0);
    assert_int_equal(simdev_stream_destroy(race_stream), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST_WITH(test_captured_ops_do_not_run_until_the_graph_is_launched,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_injected_launch_fault_during_capture_adds_no_node_and_keeps_capture_valid,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_sync_memcpy_from_capturing_thread_is_unsupported_and_invalidates_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_stream_sync_of_other_stream_from_capturing_thread_is_unsupported_and_invalidates_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_event_sync_from_capturing_thread_is_unsupported_and_invalidates_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_device_sync_from_capturing_thread_is_unsupported_and_invalidates_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_malloc_from_capturing_thread_is_unsupported_and_invalidates_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_malloc_from_capturing_thread_in_relaxed_mode_is_allowed,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_sync_of_capturing_stream_from_another_thread_is_unsupported_and_invalidates_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_sync_of_capturing_stream_in_relaxed_mode_is_unsupported_and_invalidates_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_query_of_capturing_stream_is_unsupported_and_invalidates_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_query_of_capturing_stream_from_another_thread_is_unsupported_and_invalidates_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_wait_on_event_recorded_before_capture_is_unsupported_and_invalidates_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_wait_on_event_re_recorded_inside_capture_is_an_edge_not_an_error,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_graph_launch_onto_capturing_stream_is_unsupported_and_invalidates_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_relaxed_mode_allows_sync_copy_and_sync_of_other_streams_and_capture_stays_valid,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_capture_mode_exchange_returns_previous_mode_and_is_per_thread,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_sync_calls_from_a_non_capturing_thread_keep_capture_valid,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_query_of_non_capturing_stream_and_event_from_capturing_thread_is_allowed,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_forbidden_call_invalidates_every_capture_of_the_calling_thread,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_forbidden_call_does_not_invalidate_another_threads_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_ops_enqueued_on_capturing_stream_from_another_thread_become_nodes,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_fork_join_through_events_yields_graph_with_every_branch_node,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_transitive_join_through_a_third_stream_is_accepted,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_forked_stream_that_never_joins_fails_end_with_unjoined_and_leaves_capture,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_forked_stream_with_ops_after_its_join_record_is_unjoined,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_begin_capture_on_capturing_stream_is_invalid_state,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_end_capture_on_non_capturing_stream_is_invalid_state,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_end_capture_on_pulled_in_stream_is_invalid_state,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_destroy_of_capturing_stream_is_invalid_state,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_event_query_of_a_record_inside_an_open_capture_is_unsupported_and_invalidates,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_a_capture_can_be_ended_by_another_thread,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_event_sync_on_a_captured_record_is_refused_before_an_armed_fault,
                          ts_device_setup, capture_teardown),
        SIMPLER_TEST_WITH(test_records_racing_with_begin_capture_never_become_nodes,
                          ts_device_setup, capture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
