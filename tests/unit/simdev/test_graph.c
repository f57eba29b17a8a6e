/*
 * test_graph.c — replaying captured graphs on the simulated device.
 *
 * Owns: tests of what an instantiated graph does when launched: every node
 * runs once per replay with the arguments frozen at capture, dependencies
 * captured through events hold within each replay, parallel branches run
 * concurrently, replays of one exec never overlap, a failing node fails the
 * replay and the launching stream, copies and memsets replay exactly. What a
 * capture accepts or forbids belongs to test_capture.c. Uses only the public
 * simdev API and the fixtures of test_support; must not touch device
 * internals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "test_support.h"

/* Statuses device functions return to fail their op (orchestrator band, so
 * they pass through the device layer unchanged). */
#define NODE_FAILURE (-17)
#define NODE_NEVER_MET (-19) /* a rendezvous partner never arrived */

/*
 * State that device work writes (counters, host-func user_data, gates) is
 * static, never on a test's stack: when an assert fails, cmocka leaves the
 * test while its ops may still be queued, and they must not write into a dead
 * frame. Each test runs once per process, so a test's statics start at 0;
 * helpers that run more than once reset theirs.
 */

/* --------------------------------------------------------------- helpers */

/* A gate device work may still be held in when a test fails: the teardown
 * opens it, so the device reset does not wait forever on that work. */
static struct ts_gate *gate_to_open_on_teardown;

static int graph_teardown(void **state)
{
    if (gate_to_open_on_teardown != NULL)
        ts_gate_open(gate_to_open_on_teardown);
    gate_to_open_on_teardown = NULL;
    return ts_device_teardown(state);
}

static simdev_graph_t end_capture(simdev_stream_t origin, size_t nodes)
{
    simdev_graph_t graph = NULL;
    assert_int_equal(simdev_stream_end_capture(origin, &graph), 0);
    assert_non_null(graph);
    size_t count = 12345;
    assert_int_equal(simdev_graph_node_count(graph, &count), 0);
    assert_int_equal(count, nodes);
    return graph;
}

static simdev_graph_exec_t instantiate(simdev_graph_t graph)
{
    simdev_graph_exec_t exec = NULL;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    assert_non_null(exec);
    return exec;
}

/* ---------------------------------------------------------------- diamond */

/*
 * Stream A: a; record e1. Stream B: wait e1; b. Stream A: c (parallel with
 * b). Stream B: record e2. Stream A: wait e2; d.
 * Each op checks, when it runs, the run counts of the others: within a replay
 * b and c see a done, d sees a, b and c done; across replays a sees the
 * previous replay's d done (replays of one exec never overlap).
 */
enum { OP_A, OP_B, OP_C, OP_D, OP_COUNT };
#define DIAMOND_MAGIC UINT64_C(0xd1a3000000)

struct diamond_state {
    _Atomic uint64_t runs[OP_COUNT];
    _Atomic uint64_t order_violations;
    _Atomic uint64_t arg_violations;
};

struct diamond_args {
    uint32_t op;
    uint32_t reserved;
    uint64_t magic; /* DIAMOND_MAGIC + op */
    struct diamond_state *state;
};

static int diamond_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    struct diamond_args a;
    if (args == NULL || args_size != sizeof a)
        return TS_BAD_ARGS;
    memcpy(&a, args, sizeof a);
    struct diamond_state *s = a.state;
    if (a.op >= OP_COUNT || a.magic != DIAMOND_MAGIC + a.op) {
        atomic_fetch_add(&s->arg_violations, 1);
        return 0;
    }
    uint64_t ra = atomic_load(&s->runs[OP_A]), rd = atomic_load(&s->runs[OP_D]);
    int in_order;
    switch (a.op) {
    case OP_A:
        in_order = ra == rd && atomic_load(&s->runs[OP_B]) == rd && atomic_load(&s->runs[OP_C]) == rd;
        break;
    case OP_B: {
        uint64_t rb = atomic_load(&s->runs[OP_B]);
        in_order = ra == rb + 1 && rd == rb;
        break;
    }
    case OP_C: {
        uint64_t rc = atomic_load(&s->runs[OP_C]);
        in_order = ra == rc + 1 && rd == rc;
        break;
    }
    default:
        in_order = ra == rd + 1 && atomic_load(&s->runs[OP_B]) == rd + 1 &&
                   atomic_load(&s->runs[OP_C]) == rd + 1;
        break;
    }
    if (!in_order)
        atomic_fetch_add(&s->order_violations, 1);
    atomic_fetch_add(&s->runs[a.op], 1);
    return 0;
}

/* Launches op `op` through the caller's one argument buffer, which is
 * rewritten for every launch (the device must have copied the last one). */
static void launch_diamond_op(simdev_stream_t stream, struct diamond_args *buffer, uint32_t op)
{
    buffer->op = op;
    buffer->magic = DIAMOND_MAGIC + op;
    assert_int_equal(simdev_launch_aicpu(stream, diamond_fn, 1, buffer, sizeof *buffer), 0);
}

/* Captures the diamond on a (origin) and b through the caller's argument
 * buffer, then scribbles over that buffer: a replay reading it instead of
 * the bytes frozen at capture would count an arg violation. */
static simdev_graph_t capture_diamond(simdev_stream_t a, simdev_stream_t b, simdev_event_t e1,
                                      simdev_event_t e2, struct diamond_args *buffer)
{
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    launch_diamond_op(a, buffer, OP_A);
    assert_int_equal(simdev_event_record(e1, a), 0);
    assert_int_equal(simdev_stream_wait_event(b, e1), 0);
    launch_diamond_op(b, buffer, OP_B);
    launch_diamond_op(a, buffer, OP_C);
    assert_int_equal(simdev_event_record(e2, b), 0);
    assert_int_equal(simdev_stream_wait_event(a, e2), 0);
    launch_diamond_op(a, buffer, OP_D);
    simdev_graph_t graph = end_capture(a, 4); /* not 4: records/waits became nodes or ops were lost */
    buffer->op = OP_B;
    buffer->magic = 0;
    return graph;
}

static void assert_diamond_ran(struct diamond_state *state, uint64_t replays)
{
    for (int op = 0; op < OP_COUNT; op++)
        assert_int_equal(ts_load_u64(&state->runs[op]), replays); /* other: a node ran more or less than once per replay */
    assert_int_equal(ts_load_u64(&state->arg_violations), 0); /* >0: a replay read unfrozen argument bytes */
    assert_int_equal(ts_load_u64(&state->order_violations), 0); /* >0: a captured dependency or replay order broke */
}

static void test_diamond_replayed_1000_times_then_synced_runs_each_node_1000_times_in_order(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t e1 = ts_new_event(), e2 = ts_new_event();
    static struct diamond_state diamond;
    struct diamond_args args = {0, 0, 0, &diamond}; /* lives across every replay */
    simdev_graph_t graph = capture_diamond(a, b, e1, e2, &args);
    simdev_graph_exec_t exec = instantiate(graph);
    assert_diamond_ran(&diamond, 0); /* >0: capture or instantiate ran nodes */

    for (int i = 0; i < 1000; i++)
        assert_int_equal(simdev_graph_launch(exec, a), 0);
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_diamond_ran(&diamond, 1000);

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(e1), 0);
    assert_int_equal(simdev_event_destroy(e2), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

static void test_diamond_replayed_with_sync_after_each_launch_completes_each_replay_before_sync_returns(
    void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream(), launcher = ts_new_stream();
    simdev_event_t e1 = ts_new_event(), e2 = ts_new_event();
    static struct diamond_state diamond;
    struct diamond_args args = {0, 0, 0, &diamond};
    simdev_graph_t graph = capture_diamond(a, b, e1, e2, &args);
    simdev_graph_exec_t exec = instantiate(graph);

    for (uint64_t i = 1; i <= 200; i++) {
        assert_int_equal(simdev_graph_launch(exec, launcher), 0);
        assert_int_equal(simdev_stream_sync(launcher), 0);
        /* Every node of this replay, including the branch captured on b, is
         * done once the launching stream's sync returns. */
        assert_diamond_ran(&diamond, i);
    }

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(e1), 0);
    assert_int_equal(simdev_event_destroy(e2), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    assert_int_equal(simdev_stream_destroy(launcher), 0);
}

/* ------------------------------------------------------ parallel branches */

struct rendezvous {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int arrived;
};

/* Two parties meet: each returns 0 once both have arrived, or NODE_NEVER_MET
 * if the other did not arrive within the guard. */
static int rendezvous_meet(struct rendezvous *r)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += TS_DEADLOCK_GUARD_MS / 1000u; /* a deadlock guard, not an ordering tool */
    pthread_mutex_lock(&r->lock);
    r->arrived++;
    pthread_cond_broadcast(&r->cond);
    while (r->arrived < 2) {
        if (pthread_cond_timedwait(&r->cond, &r->lock, &deadline) == ETIMEDOUT)
            break;
    }
    int met = r->arrived >= 2;
    pthread_mutex_unlock(&r->lock);
    return met ? 0 : NODE_NEVER_MET;
}

static int rendezvous_host_fn(void *user_data)
{
    return rendezvous_meet(user_data);
}

static int rendezvous_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    struct rendezvous *r;
    if (args == NULL || args_size != sizeof r)
        return TS_BAD_ARGS;
    memcpy(&r, args, sizeof r);
    return rendezvous_meet(r);
}

/* Captures a fork whose two branches (one on a, one on b) can only finish if
 * they run at the same time, replays it once, returns the sync status. */
static int replay_rendezvous_fork(int use_host_funcs)
{
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t fork = ts_new_event(), join = ts_new_event();
    static struct rendezvous r; /* called twice: re-initialised */
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    r.arrived = 0;
    struct rendezvous *rp = &r;

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    assert_int_equal(simdev_event_record(fork, a), 0);
    assert_int_equal(simdev_stream_wait_event(b, fork), 0);
    simdev_stream_t branches[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (use_host_funcs)
            assert_int_equal(simdev_launch_host_func(branches[i], rendezvous_host_fn, &r), 0);
        else
            assert_int_equal(simdev_launch_aicpu(branches[i], rendezvous_aicpu_fn, 1, &rp, sizeof rp), 0);
    }
    assert_int_equal(simdev_event_record(join, b), 0);
    assert_int_equal(simdev_stream_wait_event(a, join), 0);
    simdev_graph_t graph = end_capture(a, 2);
    simdev_graph_exec_t exec = instantiate(graph);

    assert_int_equal(simdev_graph_launch(exec, a), 0);
    int status = simdev_stream_sync(a);
    pthread_mutex_lock(&r.lock);
    int arrived = r.arrived;
    pthread_mutex_unlock(&r.lock);
    assert_int_equal(arrived, 2); /* <2: a branch of the replay never ran */

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(fork), 0);
    assert_int_equal(simdev_event_destroy(join), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    pthread_cond_destroy(&r.cond);
    pthread_mutex_destroy(&r.lock);
    return status;
}

static void test_host_func_branches_captured_on_two_streams_run_concurrently(void **state)
{
    (void)state;
    assert_int_equal(replay_rendezvous_fork(1), 0); /* NODE_NEVER_MET: the branches ran one after the other */
}

static void test_aicpu_branches_captured_on_two_streams_run_concurrently(void **state)
{
    (void)state;
    assert_int_equal(replay_rendezvous_fork(0), 0); /* NODE_NEVER_MET: the branches ran one after the other */
}

/* ---------------------------------------------------------- frozen args */

struct add_args {
    _Atomic uint64_t *sum;
    uint64_t value;
};

static int add_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    struct add_args a;
    if (args == NULL || args_size != sizeof a || ctx->thread_count != 2)
        return TS_BAD_ARGS;
    memcpy(&a, args, sizeof a);
    atomic_fetch_add(a.sum, a.value);
    return 0;
}

static int add_aicore_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    struct add_args a;
    if (args == NULL || args_size != sizeof a)
        return TS_BAD_ARGS;
    memcpy(&a, args, sizeof a);
    atomic_fetch_add(a.sum, a.value);
    return 0;
}

static void test_launch_args_are_frozen_at_capture_not_read_at_end_instantiate_or_replay(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    static _Atomic uint64_t cpu_sum = 0, core_sum = 0;
    struct add_args cpu_args = {&cpu_sum, 1}, core_args = {&core_sum, 1};

    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simdev_launch_aicpu(s, add_aicpu_fn, 2, &cpu_args, sizeof cpu_args), 0);
    cpu_args.value = 100; /* still capturing */
    assert_int_equal(simdev_launch_aicore(s, add_aicore_fn, &core_args, sizeof core_args), 0);
    core_args.value = 100;
    simdev_graph_t graph = end_capture(s, 2);
    simdev_graph_exec_t exec = instantiate(graph);
    cpu_args.value = 10000;
    core_args.value = 10000;

    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0); /* TS_BAD_ARGS: args or thread count not as launched */
    /* 2 replays x 2 AICPU threads x 1; 200/400 = args read at end capture,
     * 20000/40000 = read at replay. */
    assert_int_equal(ts_load_u64(&cpu_sum), 4);
    /* 2 replays x 3 cores (1 AIC + 2 AIV from ts_device_setup) x 1. */
    assert_int_equal(ts_load_u64(&core_sum), 6);

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* ---------------------------------------------------------- failing nodes */

/* A node that fails while *status is nonzero; the test flips it between
 * replays through the pointer frozen in the graph. */
struct switchable {
    _Atomic int status;
    _Atomic uint64_t calls;
};

static int switchable_host_fn(void *user_data)
{
    struct switchable *sw = user_data;
    atomic_fetch_add(&sw->calls, 1);
    return atomic_load(&sw->status);
}

static int switchable_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    struct switchable *sw;
    if (args == NULL || args_size != sizeof sw)
        return TS_BAD_ARGS;
    memcpy(&sw, args, sizeof sw);
    return switchable_host_fn(sw);
}

static void check_failing_node_fails_replay_then_recovers(int use_host_func)
{
    simdev_stream_t s = ts_new_stream();
    static struct switchable sw; /* called twice: reset */
    atomic_store(&sw.status, NODE_FAILURE);
    atomic_store(&sw.calls, 0);
    struct switchable *swp = &sw;
    static _Atomic uint64_t before, after;
    atomic_store(&before, 0);
    atomic_store(&after, 0);

    assert_int_equal(simdev_stream_begin_capture(s), 0);
    ts_enqueue_count(s, &before);
    if (use_host_func)
        assert_int_equal(simdev_launch_host_func(s, switchable_host_fn, &sw), 0);
    else
        assert_int_equal(simdev_launch_aicpu(s, switchable_aicpu_fn, 1, &swp, sizeof swp), 0);
    ts_enqueue_count(s, &after);
    simdev_graph_t graph = end_capture(s, 3);
    simdev_graph_exec_t exec = instantiate(graph);

    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), NODE_FAILURE); /* 0: the failed node did not fail the stream */
    assert_int_equal(ts_load_u64(&before), 1);
    assert_int_equal(ts_load_u64(&sw.calls), 1);
    assert_int_equal(ts_load_u64(&after), 0); /* 1: a node depending on the failed one ran */
    assert_int_equal(simdev_stream_sync(s), 0); /* NODE_FAILURE: sync did not clear the error */

    atomic_store(&sw.status, 0);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0); /* NODE_FAILURE: the exec stayed failed */
    assert_int_equal(ts_load_u64(&before), 3);
    assert_int_equal(ts_load_u64(&sw.calls), 3); /* 1: later replays were skipped */
    assert_int_equal(ts_load_u64(&after), 2);

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

static void test_failing_host_func_node_fails_launching_stream_and_later_replays_recover(void **state)
{
    (void)state;
    check_failing_node_fails_replay_then_recovers(1);
}

static void test_failing_aicpu_node_fails_launching_stream_and_later_replays_recover(void **state)
{
    (void)state;
    check_failing_node_fails_replay_then_recovers(0);
}

static void test_failing_node_in_a_branch_fails_the_replay_and_the_nodes_joined_after_it(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream(), launcher = ts_new_stream();
    simdev_event_t fork = ts_new_event(), join = ts_new_event();
    static struct switchable sw;
    atomic_store(&sw.status, NODE_FAILURE);
    static _Atomic uint64_t on_a = 0, after_join = 0;

    /* The failing node sits on the branch captured on b; after_join waits
     * for it through the join, as a stream waiting on a failed record would. */
    assert_int_equal(simdev_stream_begin_capture(a), 0);
    assert_int_equal(simdev_event_record(fork, a), 0);
    assert_int_equal(simdev_stream_wait_event(b, fork), 0);
    assert_int_equal(simdev_launch_host_func(b, switchable_host_fn, &sw), 0);
    assert_int_equal(simdev_event_record(join, b), 0);
    ts_enqueue_count(a, &on_a);
    assert_int_equal(simdev_stream_wait_event(a, join), 0);
    ts_enqueue_count(a, &after_join);
    simdev_graph_t graph = end_capture(a, 3);
    simdev_graph_exec_t exec = instantiate(graph);

    assert_int_equal(simdev_graph_launch(exec, launcher), 0);
    assert_int_equal(simdev_stream_sync(launcher), NODE_FAILURE); /* 0: a branch's failure was lost */
    assert_int_equal(simdev_stream_sync(b), 0); /* NODE_FAILURE: the capture stream b was blamed */
    assert_int_equal(ts_load_u64(&sw.calls), 1);
    assert_int_equal(ts_load_u64(&after_join), 0); /* 1: a node joined after the failed one ran */
    /* on_a is independent of the failing node: whether it ran in the failed
     * replay is not part of the contract. */
    uint64_t on_a_after_failure = ts_load_u64(&on_a);

    atomic_store(&sw.status, 0);
    assert_int_equal(simdev_graph_launch(exec, launcher), 0);
    assert_int_equal(simdev_stream_sync(launcher), 0);
    assert_int_equal(ts_load_u64(&sw.calls), 2);
    assert_int_equal(ts_load_u64(&on_a), on_a_after_failure + 1);
    assert_int_equal(ts_load_u64(&after_join), 1);

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(fork), 0);
    assert_int_equal(simdev_event_destroy(join), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    assert_int_equal(simdev_stream_destroy(launcher), 0);
}

static void test_ops_after_a_failed_replay_on_the_launching_stream_are_skipped(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    simdev_event_t e = ts_new_event();
    static struct switchable sw;
    atomic_store(&sw.status, NODE_FAILURE);
    static _Atomic uint64_t later = 0;

    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simdev_launch_host_func(s, switchable_host_fn, &sw), 0);
    simdev_graph_t graph = end_capture(s, 1);
    simdev_graph_exec_t exec = instantiate(graph);

    assert_int_equal(simdev_graph_launch(exec, s), 0);
    ts_enqueue_count(s, &later);
    assert_int_equal(simdev_event_record(e, s), 0);
    assert_int_equal(simdev_stream_sync(s), NODE_FAILURE);
    assert_int_equal(ts_load_u64(&later), 0); /* 1: the stream ran work after its failed replay */
    assert_int_equal(simdev_event_query(e), NODE_FAILURE); /* 0: the record after the failure was clean */

    ts_enqueue_count(s, &later);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(ts_load_u64(&later), 1);

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_event_destroy(e), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* ---------------------------------------------- replays on many streams */

struct serial_state {
    _Atomic uint64_t in_flight;
    _Atomic uint64_t overlaps;
    _Atomic uint64_t calls;
    struct ts_gate gate;
};

/* Every call passes the gate (held closed at first) and notes whether
 * another replay was inside the node at the same time. */
static int serial_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    struct serial_state *s;
    if (args == NULL || args_size != sizeof s)
        return TS_BAD_ARGS;
    memcpy(&s, args, sizeof s);
    if (atomic_fetch_add(&s->in_flight, 1) != 0)
        atomic_fetch_add(&s->overlaps, 1);
    atomic_fetch_add(&s->calls, 1);
    ts_gate_pass(&s->gate);
    sched_yield(); /* widens the window in which an overlap would show */
    atomic_fetch_sub(&s->in_flight, 1);
    return 0;
}

static void test_exec_launched_on_two_streams_never_overlaps_its_replays(void **state)
{
    (void)state;
    simdev_stream_t capture = ts_new_stream(), s1 = ts_new_stream(), s2 = ts_new_stream();
    static struct serial_state serial;
    ts_gate_init(&serial.gate);
    gate_to_open_on_teardown = &serial.gate;
    struct serial_state *sp = &serial;

    assert_int_equal(simdev_stream_begin_capture(capture), 0);
    assert_int_equal(simdev_launch_aicpu(capture, serial_fn, 1, &sp, sizeof sp), 0);
    simdev_graph_t graph = end_capture(capture, 1);
    simdev_graph_exec_t exec = instantiate(graph);

    assert_int_equal(simdev_graph_launch(exec, s1), 0);
    assert_int_equal(simdev_graph_launch(exec, s2), 0);
    /* One replay is inside its node, held by the gate. The other can never
     * get there while it is held; the grace window only gives a broken
     * device the chance to show it. */
    assert_int_equal(ts_gate_wait_arrivals_for(&serial.gate, 1, TS_DEADLOCK_GUARD_MS), 1);
    assert_int_equal(ts_gate_wait_arrivals_for(&serial.gate, 2, TS_GRACE_MS),
                     0); /* 1: the other stream's replay entered the node during the first */
    assert_int_equal(simdev_stream_query(s1), PTO_RUNTIME_ERR_NOT_READY);
    assert_int_equal(simdev_stream_query(s2), PTO_RUNTIME_ERR_NOT_READY); /* 0: a replay finished early */
    ts_gate_open(&serial.gate);

    for (int i = 0; i < 100; i++)
        assert_int_equal(simdev_graph_launch(exec, i % 2 ? s1 : s2), 0);
    assert_int_equal(simdev_stream_sync(s1), 0);
    assert_int_equal(simdev_stream_sync(s2), 0);
    assert_int_equal(ts_load_u64(&serial.calls), 102); /* other: a replay was lost or doubled */
    assert_int_equal(ts_load_u64(&serial.overlaps), 0); /* >0: two replays of one exec overlapped */

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    simdev_stream_t streams[] = {capture, s1, s2};
    for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++)
        assert_int_equal(simdev_stream_destroy(streams[i]), 0);
    gate_to_open_on_teardown = NULL;
    ts_gate_destroy(&serial.gate);
}

static void test_graph_destroyed_after_instantiate_still_replays(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    static _Atomic uint64_t launched = 0, hosted = 0;

    assert_int_equal(simdev_stream_begin_capture(s), 0);
    ts_enqueue_count(s, &launched);
    assert_int_equal(simdev_launch_host_func(s, ts_count_u64_host_fn, &hosted), 0);
    simdev_graph_t graph = end_capture(s, 2);
    simdev_graph_exec_t first = instantiate(graph);
    simdev_graph_exec_t second = instantiate(graph);
    assert_int_equal(simdev_graph_destroy(graph), 0);

    assert_int_equal(simdev_graph_launch(first, s), 0);
    assert_int_equal(simdev_graph_launch(second, s), 0);
    assert_int_equal(simdev_graph_launch(first, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(ts_load_u64(&launched), 3); /* <3: an exec lost nodes with its graph */
    assert_int_equal(ts_load_u64(&hosted), 3);

    assert_int_equal(simdev_graph_exec_destroy(first), 0);
    assert_int_equal(simdev_graph_exec_destroy(second), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

static void test_replay_does_not_need_the_streams_it_was_captured_on(void **state)
{
    (void)state;
    simdev_stream_t a = ts_new_stream(), b = ts_new_stream();
    simdev_event_t fork = ts_new_event(), join = ts_new_event();
    static _Atomic uint64_t on_a = 0, on_b = 0;

    assert_int_equal(simdev_stream_begin_capture(a), 0);
    ts_enqueue_count(a, &on_a);
    assert_int_equal(simdev_event_record(fork, a), 0);
    assert_int_equal(simdev_stream_wait_event(b, fork), 0);
    ts_enqueue_count(b, &on_b);
    assert_int_equal(simdev_event_record(join, b), 0);
    assert_int_equal(simdev_stream_wait_event(a, join), 0);
    simdev_graph_t graph = end_capture(a, 2);
    simdev_graph_exec_t exec = instantiate(graph);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    assert_int_equal(simdev_event_destroy(fork), 0);
    assert_int_equal(simdev_event_destroy(join), 0);

    simdev_stream_t fresh = ts_new_stream();
    assert_int_equal(simdev_graph_launch(exec, fresh), 0);
    assert_int_equal(simdev_stream_sync(fresh), 0);
    assert_int_equal(ts_load_u64(&on_a), 1);
    assert_int_equal(ts_load_u64(&on_b), 1); /* 0: the branch needed its destroyed capture stream */

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(fresh), 0);
}

/* -------------------------------------------------------- copies, memsets */

#define COPY_BYTES 256

static void test_memcpy_and_memset_nodes_replay_with_exact_device_contents(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    void *x = NULL, *y = NULL;
    assert_int_equal(simdev_malloc(&x, COPY_BYTES), 0);
    assert_int_equal(simdev_malloc(&y, COPY_BYTES), 0);
    static uint8_t src[COPY_BYTES / 2], dst[COPY_BYTES], expected[COPY_BYTES], back[COPY_BYTES];
    uint8_t zeros[COPY_BYTES] = {0};
    assert_int_equal(simdev_memcpy(x, zeros, COPY_BYTES, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    assert_int_equal(simdev_memcpy(y, zeros, COPY_BYTES, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)(i + 1);
    memset(dst, 0, sizeof dst);

    /* x := 0xab; y[0..128) := src; y[128..256) := x[0..128); dst := y. */
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simdev_memset_async(x, 0xab, COPY_BYTES, s), 0);
    assert_int_equal(simdev_memcpy_async(y, src, sizeof src, SIMDEV_COPY_HOST_TO_DEVICE, s), 0);
    assert_int_equal(simdev_memcpy_async((uint8_t *)y + COPY_BYTES / 2, x, COPY_BYTES / 2,
                                         SIMDEV_COPY_DEVICE_TO_DEVICE, s),
                     0);
    assert_int_equal(simdev_memcpy_async(dst, y, COPY_BYTES, SIMDEV_COPY_DEVICE_TO_HOST, s), 0);
    simdev_graph_t graph = end_capture(s, 4);
    simdev_graph_exec_t exec = instantiate(graph);

    /* Nothing moved during capture. */
    assert_int_equal(simdev_memcpy(back, y, COPY_BYTES, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(back, zeros, COPY_BYTES);
    assert_memory_equal(dst, zeros, COPY_BYTES);

    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    memcpy(expected, src, sizeof src);
    memset(expected + COPY_BYTES / 2, 0xab, COPY_BYTES / 2);
    assert_memory_equal(dst, expected, COPY_BYTES); /* differs: a copy/memset node missed or ran out of order */
    assert_int_equal(simdev_memcpy(back, y, COPY_BYTES, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(back, expected, COPY_BYTES);

    /* Disturb the device buffers and change the host source: a replay redoes
     * every node, reading the source through its frozen pointer. */
    assert_int_equal(simdev_memcpy(x, zeros, COPY_BYTES, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    assert_int_equal(simdev_memcpy(y, zeros, COPY_BYTES, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)(0xff - i);
    memset(dst, 0, sizeof dst);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    memcpy(expected, src, sizeof src);
    assert_memory_equal(dst, expected, COPY_BYTES); /* old src bytes: the H2D node snapshotted its source */

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_free(x), 0);
    assert_int_equal(simdev_free(y), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* Staged copies (SIMDEV_COPY_HOST_TO_DEVICE_STAGED) read their source as
 * they are enqueued: eagerly the caller may overwrite it at once, a capture
 * records the bytes themselves, and an update replaces them for later
 * replays only; a refused update changes nothing. */
#define STAGED_BIG 4096 /* more than an op cache's argument room */
static void staged_fill(uint8_t *bytes, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        bytes[i] = (uint8_t)(seed + i * 7);
}

static void assert_device_holds(const void *dev, const uint8_t *want, size_t n)
{
    static uint8_t back[STAGED_BIG];
    assert_int_equal(simdev_memcpy(back, dev, n, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(back, want, n);
}

static void test_staged_copies_keep_their_bytes_eagerly_in_a_capture_and_through_updates(
    void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    void *x = NULL, *y = NULL;
    assert_int_equal(simdev_malloc(&x, STAGED_BIG), 0);
    assert_int_equal(simdev_malloc(&y, STAGED_BIG), 0);
    static uint8_t src[STAGED_BIG], first[STAGED_BIG], second[STAGED_BIG], got[STAGED_BIG];
    static struct ts_gate held;

    /* Eagerly, small and big: the source overwritten while the copies are
     * still queued (the stream held behind a gate until then). */
    ts_gate_init(&held);
    gate_to_open_on_teardown = &held;
    ts_launch_gate(s, &held);
    staged_fill(src, STAGED_BIG, 1);
    memcpy(first, src, STAGED_BIG);
    assert_int_equal(simdev_memcpy_async(x, src, 64, SIMDEV_COPY_HOST_TO_DEVICE_STAGED, s), 0);
    assert_int_equal(
        simdev_memcpy_async(y, src, STAGED_BIG, SIMDEV_COPY_HOST_TO_DEVICE_STAGED, s), 0);
    memset(src, 0xee, sizeof src);
    ts_gate_open(&held);
    assert_int_equal(simdev_stream_sync(s), 0);
    gate_to_open_on_teardown = NULL;
    ts_gate_destroy(&held);
    assert_device_holds(x, first, 64); /* 0xee: the copy read its source when it ran */
    assert_device_holds(y, first, STAGED_BIG);

    /* Captured: the node holds the bytes of the capture. */
    staged_fill(src, STAGED_BIG, 2);
    memcpy(second, src, STAGED_BIG);
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(
        simdev_memcpy_async(x, src, STAGED_BIG, SIMDEV_COPY_HOST_TO_DEVICE_STAGED, s), 0);
    assert_int_equal(simdev_memcpy_async(y, x, STAGED_BIG, SIMDEV_COPY_DEVICE_TO_DEVICE, s), 0);
    simdev_graph_t graph = end_capture(s, 2);
    memset(src, 0xdd, sizeof src);
    simdev_graph_exec_t exec = instantiate(graph);
    size_t count = 99, launches = 99, bytes = 0;
    void *dst = NULL;
    assert_int_equal(simdev_graph_exec_staged_count(exec, &count), 0);
    assert_int_equal(count, 1); /* 2: the D2D copy was taken for a staged one */
    assert_int_equal(simdev_graph_exec_launch_count(exec, &launches), 0);
    assert_int_equal(launches, 0); /* a staged copy is no launch node */
    assert_int_equal(simdev_graph_exec_staged_get(exec, 0, &dst, &bytes, got, sizeof got), 0);
    assert_ptr_equal(dst, x);
    assert_int_equal(bytes, STAGED_BIG);
    assert_memory_equal(got, second, STAGED_BIG);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_device_holds(y, second, STAGED_BIG); /* 0xdd: the node followed the pointer */

    /* Updated: fewer bytes, replays from now on. */
    staged_fill(src, 100, 3);
    memcpy(first, src, 100);
    assert_int_equal(simdev_graph_exec_staged_set(exec, 0, src, 100), 0);
    memset(src, 0xcc, sizeof src);
    assert_int_equal(simdev_graph_exec_staged_get(exec, 0, &dst, &bytes, NULL, 0), 0);
    assert_int_equal(bytes, 100);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    memcpy(second, first, 100); /* x's tail keeps the captured bytes */
    assert_device_holds(y, second, STAGED_BIG);

    /* Refused: nothing changes. */
    assert_int_equal(simdev_graph_exec_staged_set(exec, 1, src, 8),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* no such node */
    assert_int_equal(simdev_graph_exec_staged_set(exec, 0, NULL, 8),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_graph_exec_staged_set(exec, 0, src, 0),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_graph_exec_staged_set(exec, 0, src, STAGED_BIG + 1),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* past x's allocation */
    assert_int_equal(simdev_graph_exec_staged_get(exec, 0, &dst, &bytes, got, 99),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* room for fewer than its 100 */
    assert_int_equal(simdev_graph_exec_staged_get(exec, 1, &dst, &bytes, NULL, 0),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_graph_exec_staged_count(NULL, &count),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* Each host allocation of an update failed in turn: the op holder, the
     * op, the new set. */
    for (uint64_t nth = 1; nth <= 3; nth++) {
        assert_int_equal(simdev_fault_inject_host(nth), 0);
        assert_int_equal(simdev_graph_exec_staged_set(exec, 0, src, 200),
                         PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
        assert_int_equal(simdev_fault_clear(0), 0);
    }
    assert_int_equal(simdev_graph_exec_staged_get(exec, 0, &dst, &bytes, got, sizeof got), 0);
    assert_int_equal(bytes, 100); /* 200: a failed update took */
    assert_memory_equal(got, first, 100);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_device_holds(y, second, STAGED_BIG);

    /* Synchronously it is a host-to-device copy. */
    assert_int_equal(simdev_memcpy(x, first, 100, SIMDEV_COPY_HOST_TO_DEVICE_STAGED), 0);
    assert_device_holds(x, first, 100);

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_free(x), 0);
    assert_int_equal(simdev_free(y), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* ------------------------------------------------------ edges of the API */

static void test_empty_capture_yields_zero_node_graph_that_replays(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    simdev_graph_t graph = end_capture(s, 0);
    simdev_graph_exec_t exec = instantiate(graph);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(simdev_stream_query(s), 0);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

static void test_graph_launch_failed_by_fault_injection_enqueues_nothing_and_retry_succeeds(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    static _Atomic uint64_t runs = 0;
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    ts_enqueue_count(s, &runs);
    simdev_graph_t graph = end_capture(s, 1);
    simdev_graph_exec_t exec = instantiate(graph);
    assert_int_equal(simdev_op_counts_reset(0), 0);

    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_GRAPH_LAUNCH, 1, PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY), 0);
    assert_int_equal(simdev_graph_launch(exec, s), PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
    assert_int_equal(simdev_stream_sync(s), 0); /* OUT_OF_HOST_MEMORY: the failed call left an error behind */
    assert_int_equal(ts_load_u64(&runs), 0); /* 1: the failed launch enqueued a replay */
    uint64_t performed = 99;
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_GRAPH_LAUNCH, &performed), 0);
    assert_int_equal(performed, 0); /* 1: an injected failure was counted as performed */

    assert_int_equal(simdev_graph_launch(exec, s), 0); /* the fault disarmed after one use */
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(ts_load_u64(&runs), 1);
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_GRAPH_LAUNCH, &performed), 0);
    assert_int_equal(performed, 1);

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST_WITH(test_diamond_replayed_1000_times_then_synced_runs_each_node_1000_times_in_order,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_diamond_replayed_with_sync_after_each_launch_completes_each_replay_before_sync_returns,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_host_func_branches_captured_on_two_streams_run_concurrently,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_aicpu_branches_captured_on_two_streams_run_concurrently,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_launch_args_are_frozen_at_capture_not_read_at_end_instantiate_or_replay,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_failing_host_func_node_fails_launching_stream_and_later_replays_recover,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_failing_aicpu_node_fails_launching_stream_and_later_replays_recover,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_failing_node_in_a_branch_fails_the_replay_and_the_nodes_joined_after_it,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_ops_after_a_failed_replay_on_the_launching_stream_are_skipped,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_exec_launched_on_two_streams_never_overlaps_its_replays,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_graph_destroyed_after_instantiate_still_replays,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_replay_does_not_need_the_streams_it_was_captured_on,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_memcpy_and_memset_nodes_replay_with_exact_device_contents,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_staged_copies_keep_their_bytes_eagerly_in_a_capture_and_through_updates,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_empty_capture_yields_zero_node_graph_that_replays,
                          ts_device_setup, graph_teardown),
        SIMPLER_TEST_WITH(test_graph_launch_failed_by_fault_injection_enqueues_nothing_and_retry_succeeds,
                          ts_device_setup, graph_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
