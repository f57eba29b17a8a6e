/*
 * test_host_faults.c — every host allocation and thread creation simdev
 * makes can fail, and each call undoes its partial work.
 *
 * Owns: failure sweeps over simdev's own multi-step calls (device start,
 * stream/event creation, record, wait, launch enqueue, malloc, capture
 * begin/record/end, instantiate, graph launch, device sync). A sweep arms
 * the host fault at the 1st, 2nd, ... attempt until the call succeeds; every
 * failing attempt must return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY and change
 * nothing visible, and the next attempt must work. Leaks are caught by the
 * sanitizer builds (LeakSanitizer at exit) and by the fixture's device
 * memory check. The number of failure points each call has is asserted
 * exactly: it documents what the call allocates.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_support.h"

#define OOM PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY

typedef int (*attempt_fn)(void *ctx);
typedef void (*check_fn)(void *ctx);

/* Returns how many failure points the call had before it succeeded. */
static int sweep(attempt_fn attempt, check_fn unchanged, void *ctx)
{
    for (uint64_t nth = 1; nth < 200; nth++) {
        assert_int_equal(simdev_fault_inject_host(nth), 0);
        int rc = attempt(ctx);
        assert_int_equal(simdev_fault_clear(0), 0);
        if (rc == 0)
            return (int)(nth - 1);
        assert_int_equal(rc, OOM); /* another code: a host failure surfaced as something else */
        if (unchanged)
            unchanged(ctx);
    }
    fail_msg("the call never succeeded");
    return -1;
}

static uint64_t performed(enum simdev_op_kind kind)
{
    uint64_t count = 0;
    assert_int_equal(simdev_op_count(0, kind, &count), 0);
    return count;
}

/* ------------------------------------------------------- device start */

static simdev_stream_t made_stream;

static int create_stream(void *ctx)
{
    (void)ctx;
    return simdev_stream_create(&made_stream);
}

static void device_not_started(void *ctx)
{
    (void)ctx;
    struct simdev_config config;
    assert_int_equal(simdev_device_get_config(0, &config), 0);
    /* INVALID_STATE: a failed start left threads or state behind */
    assert_int_equal(simdev_device_configure(0, &config), 0);
}

/* The first call on a device starts it; device sync allocates nothing else
 * when there are no streams, so its failures are the start's own. */
static int start_device(void *ctx)
{
    (void)ctx;
    return simdev_device_sync();
}

static void a_failed_device_start_leaves_the_device_unstarted(void **state)
{
    (void)state;
    assert_int_equal(simdev_device_reset(0), 0); /* configured, not started */
    /* the register windows, the hold timer's thread, 2 AICPU threads,
     * 3 core threads */
    assert_int_equal(sweep(start_device, device_not_started, NULL), 1 + 1 + 2 + 3);
    struct simdev_config config;
    assert_int_equal(simdev_device_get_config(0, &config), 0);
    assert_int_equal(simdev_device_configure(0, &config), PTO_RUNTIME_ERR_INVALID_STATE);
    simdev_stream_t s; /* and it works */
    static atomic_int ran;
    atomic_store(&ran, 0);
    assert_int_equal(simdev_stream_create(&s), 0);
    ts_launch_count(s, &ran);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&ran), 1);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* ------------------------------------------------ objects and enqueues */

static uint64_t creates_before;
static void no_stream_created(void *ctx)
{
    (void)ctx;
    assert_int_equal(performed(SIMDEV_OP_STREAM_CREATE), creates_before); /* +1: a failed create counted */
}

static void stream_and_event_creation_undo_every_step(void **state)
{
    (void)state;
    simdev_stream_t warm;
    assert_int_equal(simdev_stream_create(&warm), 0); /* the device is started */
    creates_before = performed(SIMDEV_OP_STREAM_CREATE);
    assert_int_equal(sweep(create_stream, no_stream_created, NULL), 2); /* struct, executor */
    assert_int_equal(simdev_stream_destroy(made_stream), 0);

    simdev_event_t event;
    assert_int_equal(simdev_fault_inject_host(1), 0);
    assert_int_equal(simdev_event_create(&event), OOM);
    assert_int_equal(simdev_event_create(&event), 0); /* the retry works */
    assert_int_equal(simdev_event_destroy(event), 0);
    assert_int_equal(simdev_stream_destroy(warm), 0);
}

struct enqueue_ctx {
    simdev_stream_t stream;
    simdev_event_t event;
    void *buffer;
};

static int do_record(void *p)
{
    struct enqueue_ctx *c = p;
    return simdev_event_record(c->event, c->stream);
}

static int do_wait(void *p)
{
    struct enqueue_ctx *c = p;
    return simdev_stream_wait_event(c->stream, c->event);
}

static atomic_int launched;
static int do_launch(void *p)
{
    struct enqueue_ctx *c = p;
    atomic_int *counter = &launched;
    return simdev_launch_aicpu(c->stream, ts_count_aicpu_fn, 1, &counter, sizeof counter);
}

static int do_memset(void *p)
{
    struct enqueue_ctx *c = p;
    return simdev_memset_async(c->buffer, 7, 64, c->stream);
}

static void nothing_enqueued(void *p)
{
    struct enqueue_ctx *c = p;
    /* NOT_READY: a failed enqueue left an op in the queue */
    assert_int_equal(simdev_stream_query(c->stream), 0);
    /* a failed record must not have replaced the event's latest record */
    assert_int_equal(simdev_event_query(c->event), 0);
}

static uint64_t launches_before;
static void no_launch_performed(void *p)
{
    (void)p;
    assert_int_equal(performed(SIMDEV_OP_LAUNCH), launches_before); /* +1: a failed launch counted */
}

static void enqueues_fail_whole_and_a_retry_works(void **state)
{
    (void)state;
    struct enqueue_ctx c;
    assert_int_equal(simdev_stream_create(&c.stream), 0);
    assert_int_equal(simdev_event_create(&c.event), 0);
    assert_int_equal(simdev_malloc(&c.buffer, 64), 0);
    assert_int_equal(sweep(do_record, nothing_enqueued, &c), 2); /* the record, its op */
    assert_int_equal(simdev_stream_sync(c.stream), 0);
    assert_int_equal(sweep(do_wait, nothing_enqueued, &c), 1); /* the op */
    assert_int_equal(simdev_stream_sync(c.stream), 0);
    assert_int_equal(sweep(do_memset, nothing_enqueued, &c), 1);
    assert_int_equal(simdev_stream_sync(c.stream), 0);
    /* The launch's device job is allocated when the op runs: hold the
     * executor behind a gate so only the enqueue's own allocation is swept. */
    static struct ts_gate hold;
    ts_gate_init(&hold);
    ts_launch_gate(c.stream, &hold);
    ts_gate_wait_arrivals(&hold, 1);
    atomic_store(&launched, 0);
    launches_before = performed(SIMDEV_OP_LAUNCH);
    assert_int_equal(sweep(do_launch, no_launch_performed, &c), 1); /* the op */
    ts_gate_open(&hold);
    assert_int_equal(simdev_stream_sync(c.stream), 0);
    assert_int_equal(atomic_load(&launched), 1); /* 0: the retry never ran; 2: a failed one did */
    ts_gate_destroy(&hold);
    assert_int_equal(simdev_free(c.buffer), 0);
    assert_int_equal(simdev_event_destroy(c.event), 0);
    assert_int_equal(simdev_stream_destroy(c.stream), 0);
}

static void a_launch_whose_device_job_cannot_be_allocated_fails_its_stream(void **state)
{
    (void)state;
    simdev_stream_t s;
    static struct ts_gate gate;
    static atomic_int ran;
    ts_gate_init(&gate);
    atomic_store(&ran, 0);
    assert_int_equal(simdev_stream_create(&s), 0);
    ts_launch_gate(s, &gate);
    ts_launch_count(s, &ran);
    ts_gate_wait_arrivals(&gate, 1); /* the executor is held before the launch */
    assert_int_equal(simdev_fault_inject_host(1), 0); /* the launch's job */
    ts_gate_open(&gate);
    assert_int_equal(simdev_stream_sync(s), OOM); /* 0: the failed job went unreported */
    assert_int_equal(atomic_load(&ran), 0);
    ts_launch_count(s, &ran);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&ran), 1);
    assert_int_equal(simdev_stream_destroy(s), 0);
    ts_gate_destroy(&gate);
}

static void *allocated;
static int do_malloc(void *p)
{
    (void)p;
    return simdev_malloc(&allocated, 4096);
}

static void no_device_memory_taken(void *p)
{
    (void)p;
    struct simdev_mem_info info;
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    assert_int_equal(info.in_use, 0);
    assert_int_equal(info.allocations, 0);
}

static void malloc_and_device_sync_undo_every_step(void **state)
{
    (void)state;
    simdev_stream_t s;
    assert_int_equal(simdev_stream_create(&s), 0);
    /* the allocation table's first block, the memory itself */
    assert_int_equal(sweep(do_malloc, no_device_memory_taken, NULL), 2);
    assert_int_equal(simdev_free(allocated), 0);
    assert_int_equal(simdev_fault_inject_host(1), 0); /* device sync's stream list */
    assert_int_equal(simdev_device_sync(), OOM);
    assert_int_equal(simdev_device_sync(), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* ------------------------------------------------------------ capture */

static simdev_stream_t cap_a, cap_b;
static simdev_event_t fork_event, join_event;
static atomic_int graph_runs;

static int do_begin(void *p)
{
    (void)p;
    return simdev_stream_begin_capture(cap_a);
}

static void not_capturing(void *p)
{
    (void)p;
    int capturing = -1;
    assert_int_equal(simdev_stream_is_capturing(cap_a, &capturing), 0);
    assert_int_equal(capturing, 0);
}

static void a_failed_node_never_vanishes_from_a_capture(void **state)
{
    (void)state;
    assert_int_equal(simdev_stream_create(&cap_a), 0);
    assert_int_equal(sweep(do_begin, not_capturing, NULL), 2); /* session, stream list */
    simdev_graph_t graph;
    assert_int_equal(simdev_stream_end_capture(cap_a, &graph), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);

    /* A captured launch: its op, the node table, the node's dependency
     * list, the stream's tail. A failure there must fail the capture. */
    int points = 0;
    for (uint64_t nth = 1;; nth++) {
        assert_int_equal(simdev_stream_begin_capture(cap_a), 0);
        assert_int_equal(simdev_fault_inject_host(nth), 0);
        struct enqueue_ctx c = {.stream = cap_a};
        int rc = do_launch(&c);
        assert_int_equal(simdev_fault_clear(0), 0);
        graph = NULL;
        int end = simdev_stream_end_capture(cap_a, &graph);
        if (rc == 0) {
            assert_int_equal(end, 0);
            size_t nodes = 0;
            assert_int_equal(simdev_graph_node_count(graph, &nodes), 0);
            assert_int_equal(nodes, 1);
            assert_int_equal(simdev_graph_destroy(graph), 0);
            break;
        }
        assert_int_equal(rc, OOM);
        points++;
        /* 0 would mean the launch was silently missing from the graph */
        if (nth > 1)
            assert_int_equal(end, PTO_RUNTIME_ERR_CAPTURE_INVALIDATED);
        else
            assert_int_equal(end, 0); /* the op failed before reaching the capture */
        if (graph)
            assert_int_equal(simdev_graph_destroy(graph), 0);
    }
    assert_int_equal(points, 4);
    assert_int_equal(simdev_stream_destroy(cap_a), 0);
}

/* Captures a fork/join over two streams: a on A, b on B, c on A. */
static void capture_fork_join(void)
{
    atomic_int *counter = &graph_runs;
    assert_int_equal(simdev_stream_begin_capture(cap_a), 0);
    assert_int_equal(simdev_launch_aicpu(cap_a, ts_count_aicpu_fn, 1, &counter, sizeof counter), 0);
    assert_int_equal(simdev_event_record(fork_event, cap_a), 0);
    assert_int_equal(simdev_stream_wait_event(cap_b, fork_event), 0);
    assert_int_equal(simdev_launch_aicpu(cap_b, ts_count_aicpu_fn, 1, &counter, sizeof counter), 0);
    assert_int_equal(simdev_event_record(join_event, cap_b), 0);
    assert_int_equal(simdev_stream_wait_event(cap_a, join_event), 0);
    assert_int_equal(simdev_launch_aicpu(cap_a, ts_count_aicpu_fn, 1, &counter, sizeof counter), 0);
}

static void end_capture_and_instantiate_undo_every_step(void **state)
{
    (void)state;
    assert_int_equal(simdev_stream_create(&cap_a), 0);
    assert_int_equal(simdev_stream_create(&cap_b), 0);
    assert_int_equal(simdev_event_create(&fork_event), 0);
    assert_int_equal(simdev_event_create(&join_event), 0);

    /* end: the join check's two work arrays, then the graph */
    simdev_graph_t graph = NULL;
    int points = 0;
    for (uint64_t nth = 1;; nth++) {
        capture_fork_join();
        assert_int_equal(simdev_fault_inject_host(nth), 0);
        int rc = simdev_stream_end_capture(cap_a, &graph);
        assert_int_equal(simdev_fault_clear(0), 0);
        int a_capturing = -1, b_capturing = -1;
        simdev_stream_is_capturing(cap_a, &a_capturing);
        simdev_stream_is_capturing(cap_b, &b_capturing);
        assert_int_equal(a_capturing, 0); /* 1: a failed end left the capture open */
        assert_int_equal(b_capturing, 0);
        if (rc == 0)
            break;
        assert_int_equal(rc, OOM);
        assert_null(graph);
        points++;
    }
    assert_int_equal(points, 3);

    /* instantiate: the exec, the node array, each of 3 nodes' op and deps,
     * completion and status arrays, lane helpers, two lane tables, one node
     * list per lane (2), the launch-node list, the staged-copy list, the
     * asynchronous replay's block (its dataflow), then one helper thread
     * for lane 1. */
    simdev_graph_exec_t exec = NULL;
    points = 0;
    for (uint64_t nth = 1;; nth++) {
        assert_int_equal(simdev_fault_inject_host(nth), 0);
        int rc = simdev_graph_instantiate(&exec, graph);
        assert_int_equal(simdev_fault_clear(0), 0);
        if (rc == 0)
            break;
        assert_int_equal(rc, OOM);
        assert_null(exec); /* a failed instantiate wrote its output */
        points++;
    }
    assert_int_equal(points, 1 + 1 + 3 * 2 + 3 + 2 + 2 + 1 + 1 + 1 + 1);
    assert_int_equal(simdev_graph_destroy(graph), 0);

    /* graph launch: its op */
    atomic_store(&graph_runs, 0);
    assert_int_equal(simdev_fault_inject_host(1), 0);
    assert_int_equal(simdev_graph_launch(exec, cap_a), OOM);
    assert_int_equal(simdev_stream_sync(cap_a), 0);
    assert_int_equal(atomic_load(&graph_runs), 0); /* the failed launch ran anyway */
    assert_int_equal(simdev_graph_launch(exec, cap_a), 0);
    assert_int_equal(simdev_stream_sync(cap_a), 0);
    assert_int_equal(atomic_load(&graph_runs), 3); /* every node once */

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_event_destroy(fork_event), 0);
    assert_int_equal(simdev_event_destroy(join_event), 0);
    assert_int_equal(simdev_stream_destroy(cap_b), 0);
    assert_int_equal(simdev_stream_destroy(cap_a), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(a_failed_device_start_leaves_the_device_unstarted),
        SIMPLER_TEST(stream_and_event_creation_undo_every_step),
        SIMPLER_TEST(enqueues_fail_whole_and_a_retry_works),
        SIMPLER_TEST(a_launch_whose_device_job_cannot_be_allocated_fails_its_stream),
        SIMPLER_TEST(malloc_and_device_sync_undo_every_step),
        SIMPLER_TEST(a_failed_node_never_vanishes_from_a_capture),
        SIMPLER_TEST(end_capture_and_instantiate_undo_every_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
