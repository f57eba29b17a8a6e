/*
 * test_kernel_chain_breaks.c — every way a kernel-mode launch's chain can
 * break ends the round with a documented code, gives the round gate back,
 * and leaves the context exact for the next launch; program mode's
 * test_chain_breaks.c, for kernel mode.
 *
 * The chain (docs/kernel-mode.md, "The launch chain"; src/launch/chain.c)
 * is 15 ops: 5 records, 4 waits, 4 launches (round begin, core loop, AICPU
 * program, status op) and the round gate's acquire and release. Each is
 * failed in turn:
 *   - at enqueue (simdev_fault_inject), eagerly and while the caller's
 *     stream captures: the 9 ops before the program refuse the launch whole
 *     (launch returns the injected code, no round runs), the 6 after it are
 *     retried (launch returns 0, the round runs exactly once);
 *   - as it executes (simdev_fault_inject_exec; records, waits and
 *     launches only — simdev cannot fail a semaphore op as it executes, and
 *     the chain has no copy): the caller's sync returns the injected code,
 *     also where one half of the round ran alone (it leaves the round at
 *     the scheduler timeout, but the status op is skipped);
 *   - the ops a refused launch queues (its chain's up to the failure and
 *     the ones closing it off) each as it executes.
 * After each, a clean launch on a second stream, queued right behind the
 * broken one before anything is synchronised, and the next launch on the
 * caller's stream must be exact (a unit of the gate never given back
 * would hold them forever: the watchdog reports that hang), the committed
 * device memory and the device's bytes in use unchanged.
 *
 * Replays: simdev applies execution faults only to ops queued on a stream
 * (stream.c takes the armed fault in sd_stream_enqueue); a capture records
 * the chain's launches and semaphore ops as graph nodes and its records and
 * waits as edges, and a replay runs its nodes directly (graph.c, run_lane).
 * So a replayed round's launch nodes are failed as they run with
 * simdev_fault_inject_replay (each of the four in turn), and besides: each
 * op failed at enqueue while being captured (then the capture retried or
 * ended at once), the replay's own enqueue failed (SIMDEV_OP_GRAPH_LAUNCH),
 * a failed op the caller queued before the replay, and failures of the
 * replayed round itself decided by device data (this file's callable reads
 * a control word the test writes between replays): a kernel's code, an
 * orchestrator error, a scheduler timeout.
 *
 * The callable: pm_support's kernels (y = x * mul + add, then acc += y)
 * under cb_orchestration, which first reads ctl[0] from device memory:
 * CB_RUN computes, CB_FATAL calls fatal (SIMPLER_ORCH_ERR_EXPLICIT_FATAL),
 * CB_KERNEL_FAIL makes the first task fail with CB_KERNEL_CODE, CB_STALL
 * holds the first task at pm_gate until the scheduler's timeout is latched
 * (the orchestration's read of y returns it) and only then opens the gate.
 * Nothing is ordered by sleeping; the scheduler timeout is SCHED_TIMEOUT_MS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "km_support.h"
#include "pm_support.h"
#include "simpler/simdev_fault.h"
#include "simpler/simpler.h"

#define INJECTED (-787) /* a code nothing in the chain makes by itself */
/* A broken round's halves run alone to it; the rounds that must succeed
 * run under it too, so it is long enough that a thread delayed on a loaded
 * host never ends one (with 500 ms, a clean round behind a broken replay
 * once failed on a host loaded far past its CPUs). */
#define SCHED_TIMEOUT_MS 1000
#define CB_N 1024
#define CB_KERNEL_CODE 321

/* ------------------------------------------------------------ the callable */

/* What cb_orchestration does, read from ctl[0] when the round runs. */
enum cb_mode { CB_RUN = 0, CB_FATAL = 1, CB_KERNEL_FAIL = 2, CB_STALL = 3 };

/* What the orchestration's read of y returned in a CB_STALL round (1: no
 * CB_STALL round ran since the test reset it). */
static atomic_int cb_stall_read = 1;

/* host_build_graph: the host runs the orchestration and never holds device
 * data, so it takes the mode from here (cb_set_mode writes both); a
 * replay then runs the mode it was captured with. */
static atomic_int cb_host_mode = CB_RUN;

void cb_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);

/* Exported: the image names it. Args x (IN), y (OUT), acc (INOUT), ctl
 * (IN, one i32); scalars mul, add (f32 bits), tag. */
void cb_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *x = &args->tensors[0], *y = &args->tensors[1],
                                *acc = &args->tensors[2], *ctl = &args->tensors[3];
    const uint64_t first = 0;
    int32_t mode = CB_RUN;
    if (ts_runtime_hbg())
        mode = atomic_load(&cb_host_mode);
    else if (rt->ops->read_element(rt, ctl, &first, &mode) != 0)
        return; /* the run's error is latched */
    if (mode == CB_FATAL) {
        rt->ops->fatal(rt);
        return;
    }
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, x);
    simpler_task_args_add_output_existing(&ta, y);
    simpler_task_args_add_scalar(&ta, args->scalars[0]);
    simpler_task_args_add_scalar(&ta, args->scalars[1]);
    simpler_task_args_add_scalar(&ta, mode == CB_KERNEL_FAIL ? CB_KERNEL_CODE : 0);
    simpler_task_args_add_scalar(&ta, mode == CB_STALL ? PM_FLAG_GATE : 0);
    simpler_task_args_add_scalar(&ta, args->scalars[2]);
    simpler_submit_aiv(rt, 0, &ta, &r);

    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, y);
    simpler_task_args_add_inout(&ta, acc);
    simpler_task_args_add_scalar(&ta, args->scalars[2]);
    simpler_submit_aiv(rt, 1, &ta, &r);

    if (mode == CB_STALL) {
        /* Waits for the task held at pm_gate: only the run's latched error
         * (the scheduler's timeout) ends this wait early. Then the gate
         * opens, so the held kernel returns only after the timeout. */
        float y0;
        atomic_store(&cb_stall_read, rt->ops->read_element(rt, y, &first, &y0));
        ts_gate_open(&pm_gate);
    }
}

static void *cb_image(size_t *bytes)
{
    static const enum simpler_direction sig[] = {SIMPLER_DIR_IN,     SIMPLER_DIR_OUT,
                                                 SIMPLER_DIR_INOUT,  SIMPLER_DIR_IN,
                                                 SIMPLER_DIR_SCALAR, SIMPLER_DIR_SCALAR,
                                                 SIMPLER_DIR_SCALAR};
    return pm_image_of("cb_orchestration", NULL, sig, 7, 2, bytes);
}

/* ------------------------------------------------------------- the fixture */

/* A kernel context with the callable as id 0, the caller's stream, a
 * stream to capture and replay on, a second caller stream, a set of
 * buffers for each caller stream and the control word; what the context
 * and the device held once all that existed. */
struct cb {
    struct simpler_context *ctx;
    simdev_stream_t s, cs, s2;
    struct km_bufs b, b2;
    int32_t *ctl; /* device */
    size_t committed;
    uint64_t in_use;
    uint64_t tag;
};

static uint64_t device_in_use(void)
{
    struct simdev_mem_info info;
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    return info.in_use;
}

static void cb_set_mode(const struct cb *f, enum cb_mode mode)
{
    int32_t word = mode;
    ts_to_dev(f->ctl, &word, sizeof word);
    atomic_store(&cb_host_mode, mode);
}

static void chain_for_runtime(void);

static void cb_open(struct cb *f)
{
    chain_for_runtime();
    pm_observers_reset();
    struct simpler_config cfg = km_config();
    cfg.run_capacity.sched_timeout_ms = SCHED_TIMEOUT_MS;
    assert_int_equal(simpler_create_device_context(&f->ctx), 0);
    assert_int_equal(simpler_kernel_mode_init(f->ctx, 0, &cfg, 0), 0);
    size_t bytes;
    void *image = cb_image(&bytes);
    int32_t id = -1;
    assert_int_equal(simpler_kernel_mode_prepare_callable(f->ctx, image, bytes, &id), 0);
    assert_int_equal(id, 0);
    simpler_callable_free(image);
    f->s = ts_new_stream();
    f->cs = ts_new_stream();
    f->s2 = ts_new_stream();
    km_bufs_alloc(&f->b, CB_N, 0.0f);
    km_bufs_alloc(&f->b2, CB_N, 0.0f);
    f->ctl = ts_dev_alloc(sizeof *f->ctl);
    cb_set_mode(f, CB_RUN);
    f->committed = simpler_committed_device_memory(f->ctx);
    f->in_use = device_in_use();
    f->tag = 1;
}

static void cb_close(struct cb *f)
{
    assert_int_equal(simdev_free(f->ctl), 0);
    km_bufs_free(&f->b);
    km_bufs_free(&f->b2);
    assert_int_equal(simdev_stream_destroy(f->s), 0);
    assert_int_equal(simdev_stream_destroy(f->cs), 0);
    assert_int_equal(simdev_stream_destroy(f->s2), 0);
    pm_close(f->ctx);
}

/* Nothing a broken chain may leave behind: the context committed nothing
 * more (a launch allocates nothing) and the device holds what it held. */
static void assert_memory_unchanged(const struct cb *f)
{
    assert_int_equal(simpler_committed_device_memory(f->ctx), f->committed);
    assert_int_equal(device_in_use(), f->in_use);
}

/* Launches one round of the callable over `b` on `stream` (mul 2, add
 * 0.5); returns what launch returned. The args live on this frame only:
 * launch copies them. */
static int cb_launch_on(struct cb *f, simdev_stream_t stream, const struct km_bufs *b)
{
    struct simpler_tensor t[4] = {
        ts_dev_tensor_1d(b->x, b->n, SIMPLER_DTYPE_F32),
        ts_dev_tensor_1d(b->y, b->n, SIMPLER_DTYPE_F32),
        ts_dev_tensor_1d(b->acc, b->n, SIMPLER_DTYPE_F32),
        ts_dev_tensor_1d(f->ctl, 1, SIMPLER_DTYPE_I32),
    };
    uint64_t s[3] = {ts_f32_bits(2.0f), ts_f32_bits(0.5f), f->tag++};
    const struct simpler_args args = {4, 3, t, s};
    return simpler_kernel_mode_launch(f->ctx, 0, &args, stream);
}

/* The same over f->b. */
static int cb_launch(struct cb *f, simdev_stream_t stream)
{
    return cb_launch_on(f, stream, &f->b);
}

/* A clean round over f->b2 on f->s2, launched right behind a broken one
 * before anything is synchronised: it queues behind the broken round on the
 * context's streams and at the gate. */
static void launch_behind(struct cb *f)
{
    km_bufs_refill(&f->b2, 0.0f);
    assert_int_equal(cb_launch_on(f, f->s2, &f->b2), 0);
}

/* Its sync: 0 and exactly one round, else the broken round's error reached
 * it through the context's streams, or the broken round ran into it; a
 * hang here is a unit of the gate never given back. */
static void assert_behind_exact(struct cb *f)
{
    assert_int_equal(simdev_stream_sync(f->s2), 0);
    assert_true(km_bufs_hold_rounds(&f->b2, 0.0f, 2.0f, 0.5f, 1));
}

/* Exactly `rounds` whole rounds ran on f->b since its refill (0: y is
 * still poison and acc still 1 everywhere). */
static bool rounds_ran(const struct cb *f, uint32_t rounds)
{
    if (rounds)
        return km_bufs_hold_rounds(&f->b, 0.0f, 2.0f, 0.5f, rounds);
    float *acc = malloc(f->b.n * sizeof *acc);
    ts_from_dev(acc, f->b.acc, f->b.n * sizeof *acc);
    bool untouched = km_bufs_untouched(&f->b);
    for (uint64_t i = 0; i < f->b.n && untouched; i++)
        untouched = acc[i] == 1.0f;
    free(acc);
    return untouched;
}

/* A clean eager launch after a broken one: 0 and exactly one round, else
 * the broken round left something behind (an error on the context's
 * streams, the gate's unit, a stale result block); a hang here is a unit
 * never given back. */
static void assert_next_launch_exact(struct cb *f)
{
    km_bufs_refill(&f->b, 0.0f);
    assert_int_equal(cb_launch(f, f->s), 0);
    assert_int_equal(simdev_stream_sync(f->s), 0);
    assert_true(rounds_ran(f, 1));
    assert_memory_unchanged(f);
}

/* Ends the capture on f->cs into *graph and instantiates it. */
static simdev_graph_exec_t end_capture(struct cb *f, simdev_graph_t *graph)
{
    assert_int_equal(simdev_stream_end_capture(f->cs, graph), 0);
    simdev_graph_exec_t exec = NULL;
    assert_int_equal(simdev_graph_instantiate(&exec, *graph), 0);
    return exec;
}

static void graph_free(simdev_graph_exec_t exec, simdev_graph_t graph)
{
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
}

/* Captures one clean launch on f->cs. */
static simdev_graph_exec_t capture_one(struct cb *f, simdev_graph_t *graph)
{
    assert_int_equal(simdev_stream_begin_capture(f->cs), 0);
    assert_int_equal(cb_launch(f, f->cs), 0);
    return end_capture(f, graph);
}

/* A clean replay of `exec` after a broken one: exactly one round. */
static void assert_next_replay_exact(struct cb *f, simdev_graph_exec_t exec)
{
    km_bufs_refill(&f->b, 0.0f);
    assert_int_equal(simdev_graph_launch(exec, f->cs), 0);
    assert_int_equal(simdev_stream_sync(f->cs), 0);
    assert_true(rounds_ran(f, 1));
    assert_memory_unchanged(f);
}

/* Per-test teardown: opens pm_gate (a test that failed while a kernel
 * was held there ends instead of hanging in the reset), then the device
 * fixture's leak check and reset. */
static int cb_teardown(void **state)
{
    pm_teardown(state);
    return ts_device_teardown(state);
}

/* --------------------------------------------------------------- the chain */

/* The ops of each kind one launch enqueues, in enqueue order; the first
 * `before_program` of them come before the AICPU program, where a launch
 * that cannot enqueue one is refused whole. */
static struct {
    enum simdev_op_kind kind;
    uint64_t count;
    uint64_t before_program;
    const char *ops;
} chain[] = {
    {SIMDEV_OP_RECORD, 5, 3, "start, aicore_start, aicore_done | aicpu_done, serial_tail"},
    {SIMDEV_OP_WAIT, 4, 2, "AICPU: start, AICore: aicore_start | AICPU: aicore_done, caller"},
    {SIMDEV_OP_LAUNCH, 4, 3, "round begin, core loop, program | status op"},
    {SIMDEV_OP_SEM, 2, 1, "gate acquire | gate release"},
    {SIMDEV_OP_COPY, 0, 0, "none: a launch copies nothing"},
};
#define CHAIN_KINDS (sizeof chain / sizeof chain[0])

/* Under host_build_graph a launch has one op more, before the program:
 * the staged copy of the graph the host built. The counts below that
 * depend on it. */
static uint64_t hbg(void)
{
    return ts_runtime_hbg() ? 1 : 0;
}

static void chain_for_runtime(void)
{
    chain[CHAIN_KINDS - 1].count = hbg();
    chain[CHAIN_KINDS - 1].before_program = hbg();
    chain[CHAIN_KINDS - 1].ops = hbg() ? "the graph's staged copy (host_build_graph) |"
                                       : "none: a launch copies nothing";
}

/* Performed ops of each chain kind since the last simdev_op_counts_reset. */
static void counts_of_chain_kinds(uint64_t n[CHAIN_KINDS])
{
    for (size_t k = 0; k < CHAIN_KINDS; k++)
        assert_int_equal(simdev_op_count(0, chain[k].kind, &n[k]), 0);
}

static void assert_chain_counts(const uint64_t n[CHAIN_KINDS], const char *how)
{
    for (size_t k = 0; k < CHAIN_KINDS; k++)
        /* Another count: the chain changed, and the sweeps below no longer
         * break each of its ops exactly once. */
        if (n[k] != chain[k].count)
            fail_msg("%s launch: %llu %s ops, expected %llu (%s)", how, (unsigned long long)n[k],
                     simdev_op_kind_name(chain[k].kind), (unsigned long long)chain[k].count,
                     chain[k].ops);
}

static void test_the_chain_has_exactly_the_ops_this_test_breaks(void **state)
{
    (void)state;
    struct cb f;
    cb_open(&f);
    uint64_t n[CHAIN_KINDS];
    assert_int_equal(simdev_op_counts_reset(0), 0);
    assert_int_equal(cb_launch(&f, f.s), 0);
    counts_of_chain_kinds(n);
    assert_int_equal(simdev_stream_sync(f.s), 0);
    assert_chain_counts(n, "an eager");
    assert_true(rounds_ran(&f, 1));

    /* A captured launch makes the same attempts: the enqueue-time sweep
     * inside a capture fails each op once too. */
    km_bufs_refill(&f.b, 0.0f);
    assert_int_equal(simdev_op_counts_reset(0), 0);
    assert_int_equal(simdev_stream_begin_capture(f.cs), 0);
    assert_int_equal(cb_launch(&f, f.cs), 0);
    counts_of_chain_kinds(n);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = end_capture(&f, &graph);
    assert_chain_counts(n, "a captured");
    size_t nodes;
    assert_int_equal(simdev_graph_node_count(graph, &nodes), 0);
    /* 4 launches and the gate's 2 ops (and under host_build_graph the
     * graph's staged copy); records and waits are edges. */
    assert_int_equal(nodes, 6 + hbg());

    /* A replay is one queued op, the graph launch: its nodes run inside it,
     * never queued, so no execution fault can reach them (this file's
     * header). More launches here: the replay's nodes were queued after all. */
    uint64_t launches, graph_launches;
    assert_int_equal(simdev_op_counts_reset(0), 0);
    assert_int_equal(simdev_graph_launch(exec, f.cs), 0);
    assert_int_equal(simdev_stream_sync(f.cs), 0);
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_LAUNCH, &launches), 0);
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_GRAPH_LAUNCH, &graph_launches), 0);
    assert_int_equal(launches, 0);
    assert_int_equal(graph_launches, 1);
    assert_true(rounds_ran(&f, 1)); /* the capture ran nothing; the replay one round */
    graph_free(exec, graph);
    assert_memory_unchanged(&f);
    cb_close(&f);
}

/* ------------------------------------------------- (a) enqueue, eagerly */

static void test_each_chain_op_failing_to_enqueue_refuses_or_is_absorbed_and_the_next_launch_is_exact(
    void **state)
{
    (void)state;
    struct cb f;
    cb_open(&f);
    uint64_t refused = 0, absorbed = 0;
    for (size_t k = 0; k < CHAIN_KINDS; k++) {
        for (uint64_t nth = 1; nth <= chain[k].count; nth++) {
            km_bufs_refill(&f.b, 0.0f);
            assert_int_equal(simdev_fault_inject(0, chain[k].kind, nth, INJECTED), 0);
            int rc = cb_launch(&f, f.s);
            assert_int_equal(simdev_fault_clear(0), 0);
            launch_behind(&f);
            int round = simdev_stream_sync(f.s);
            bool refuse = nth <= chain[k].before_program;
            /* Before the program: refused whole with the failed enqueue's
             * code. After it: committed, the op retried, launch 0. */
            if (rc != (refuse ? INJECTED : 0))
                fail_msg("%s #%llu failing to enqueue: launch returned %d, expected %d",
                         simdev_op_kind_name(chain[k].kind), (unsigned long long)nth, rc,
                         refuse ? INJECTED : 0);
            /* A refused launch leaves no error on the caller's stream (its
             * start record, if any, ran clean); an absorbed one's round
             * succeeded. Nonzero: an enqueue failure reached the device. */
            if (round != 0)
                fail_msg("%s #%llu failing to enqueue (launch %d): the caller's sync returned %d",
                         simdev_op_kind_name(chain[k].kind), (unsigned long long)nth, rc, round);
            /* Refused: no round ran. Absorbed: exactly one (two: an op
             * retried ran twice; none: the retry lost the round). */
            if (!rounds_ran(&f, refuse ? 0 : 1))
                fail_msg("%s #%llu failing to enqueue: not exactly %d rounds ran",
                         simdev_op_kind_name(chain[k].kind), (unsigned long long)nth,
                         refuse ? 0 : 1);
            assert_behind_exact(&f);
            if (refuse)
                refused++;
            else
                absorbed++;
            assert_memory_unchanged(&f);
            assert_next_launch_exact(&f);
        }
    }
    print_message("eager enqueue faults: %llu refused + %llu absorbed\n",
                  (unsigned long long)refused, (unsigned long long)absorbed);
    /* 3 records, 2 waits, 3 launches and the acquire before the program
     * (and the staged copy, under host_build_graph); 2 records, 2 waits,
     * the status op and the release after it. Fewer: a failure point was
     * never exercised. */
    assert_int_equal(refused, 9 + hbg());
    assert_int_equal(absorbed, 6);
    cb_close(&f);
}

/* ----------------------------------------------- (b) execution, eagerly */

/* Each queued op of the chain failing as it executes: what the caller's
 * sync returns, and whether the round's tasks ran. A record's failure is
 * carried on from its stream (a hand-off record's only through its event),
 * a wait's too, and every later op of that stream is skipped except the
 * gate's release; so the round runs unless the failure comes before the
 * program or the core loop. */
static const struct {
    enum simdev_op_kind kind;
    uint64_t nth;
    const char *op;
    int code;
    bool ran;
} exec_points[] = {
    {SIMDEV_OP_RECORD, 1, "start (caller)", INJECTED, false},
    {SIMDEV_OP_RECORD, 2, "aicore_start (AICPU)", INJECTED, false},
    {SIMDEV_OP_RECORD, 3, "aicore_done hand-off (AICore)", INJECTED, true},
    {SIMDEV_OP_RECORD, 4, "aicpu_done hand-off (AICPU)", INJECTED, true},
    {SIMDEV_OP_RECORD, 5, "serial_tail (caller)", INJECTED, true},
    {SIMDEV_OP_WAIT, 1, "AICPU waits for start", INJECTED, false},
    /* The core loop never starts: the program runs alone and its
     * scheduler leaves the round at SCHED_TIMEOUT_MS, but the status op
     * that would report that timeout is skipped behind the AICPU stream's
     * wait for aicore_done, which carries the AICore stream's failure:
     * unlike program mode (test_chain_breaks.c), the caller sees the
     * injected code. */
    {SIMDEV_OP_WAIT, 2, "AICore waits for aicore_start", INJECTED, false},
    {SIMDEV_OP_WAIT, 3, "AICPU waits for aicore_done", INJECTED, true},
    {SIMDEV_OP_WAIT, 4, "caller waits for aicpu_done", INJECTED, true},
    {SIMDEV_OP_LAUNCH, 1, "round begin", INJECTED, false},
    {SIMDEV_OP_LAUNCH, 2, "core loop", INJECTED, false}, /* as AICore's wait #2 */
    /* The core loop runs alone and leaves the round at its deadline. */
    {SIMDEV_OP_LAUNCH, 3, "AICPU program", INJECTED, false},
    {SIMDEV_OP_LAUNCH, 4, "status op", INJECTED, true},
    /* host_build_graph only (skipped under TMR, whose chain has no copy):
     * the AICPU stream carries the failure past the program. */
    {SIMDEV_OP_COPY, 1, "the graph's staged copy (AICPU)", INJECTED, false},
};
#define EXEC_POINTS (sizeof exec_points / sizeof exec_points[0])

static void test_each_chain_op_failing_as_it_executes_ends_the_round_and_the_next_launch_is_exact(
    void **state)
{
    (void)state;
    struct cb f;
    cb_open(&f);
    uint64_t per_kind[CHAIN_KINDS] = {0}, ran = 0;
    for (size_t p = 0; p < EXEC_POINTS; p++) {
        if (exec_points[p].kind == SIMDEV_OP_COPY && !hbg())
            continue;
        km_bufs_refill(&f.b, 0.0f);
        assert_int_equal(simdev_fault_inject_exec(0, exec_points[p].kind, exec_points[p].nth,
                                                  INJECTED),
                         0);
        /* Accepted as usual: the op fails only when it runs. */
        int rc = cb_launch(&f, f.s);
        assert_int_equal(simdev_fault_clear(0), 0);
        assert_int_equal(rc, 0);
        launch_behind(&f);
        int round = simdev_stream_sync(f.s);
        /* 0: the failure was lost; another code: something else failed, or
         * the round reported a stale result block. */
        if (round != exec_points[p].code)
            fail_msg("%s #%llu (%s) failing as it executes: the caller's sync returned %d, "
                     "expected %d",
                     simdev_op_kind_name(exec_points[p].kind),
                     (unsigned long long)exec_points[p].nth, exec_points[p].op, round,
                     exec_points[p].code);
        if (!rounds_ran(&f, exec_points[p].ran ? 1 : 0))
            fail_msg("%s #%llu (%s) failing as it executes: expected %s",
                     simdev_op_kind_name(exec_points[p].kind),
                     (unsigned long long)exec_points[p].nth, exec_points[p].op,
                     exec_points[p].ran ? "exactly one round" : "no round");
        assert_behind_exact(&f);
        for (size_t k = 0; k < CHAIN_KINDS; k++)
            if (chain[k].kind == exec_points[p].kind)
                per_kind[k]++;
        if (exec_points[p].ran)
            ran++;
        assert_memory_unchanged(&f);
        assert_next_launch_exact(&f);
    }
    print_message("execution faults: %llu records, %llu waits, %llu launches, %llu copies "
                  "(%llu with the round run)\n",
                  (unsigned long long)per_kind[0], (unsigned long long)per_kind[1],
                  (unsigned long long)per_kind[2], (unsigned long long)per_kind[4],
                  (unsigned long long)ran);
    /* Every queued op of the chain once (the gate's ops cannot fail as
     * they execute; the chain's copy is host_build_graph's): fewer, a
     * point never broken. */
    for (size_t k = 0; k < CHAIN_KINDS; k++)
        if (chain[k].kind != SIMDEV_OP_SEM)
            assert_int_equal(per_kind[k], chain[k].count);
    /* The round runs when the failure comes after the program and the
     * core loop have both started: aicore_done, aicpu_done, serial_tail,
     * the waits for aicore_done and aicpu_done, the status op. */
    assert_int_equal(ran, 6);
    cb_close(&f);
}

/*
 * A refused launch closes off what it had enqueued (kernel_launch.c,
 * refuse: a core loop already enqueued is cancelled, the AICPU stream waits
 * for its end, the gate is given back, both streams hand off). Each queued
 * op of each refused launch, the chain's and the closing-off ones, fails in
 * turn as it executes: the caller's stream holds only the start record, so
 * its sync returns 0, or the injected code when that record is the one
 * failed; no round runs, and the next launch is exact (a hang there: the
 * closing-off lost the gate's unit or left the context's streams behind a
 * round that never ends).
 */
static void test_a_refused_launch_whose_closing_off_fails_as_it_executes_still_ends(void **state)
{
    (void)state;
    static const enum simdev_op_kind queued[] = {SIMDEV_OP_RECORD, SIMDEV_OP_WAIT,
                                                 SIMDEV_OP_LAUNCH};
    struct cb f;
    cb_open(&f);
    uint64_t refusals = 0, pairs = 0;
    for (size_t k = 0; k < CHAIN_KINDS; k++) {
        for (uint64_t nth = 1; nth <= chain[k].before_program; nth++) {
            /* The ops this refusal queues, by kind (a probe, fault-free
             * otherwise). */
            uint64_t n[sizeof queued / sizeof queued[0]];
            assert_int_equal(simdev_op_counts_reset(0), 0);
            assert_int_equal(simdev_fault_inject(0, chain[k].kind, nth, INJECTED), 0);
            assert_int_equal(cb_launch(&f, f.s), INJECTED);
            assert_int_equal(simdev_fault_clear(0), 0);
            for (size_t q = 0; q < sizeof queued / sizeof queued[0]; q++)
                assert_int_equal(simdev_op_count(0, queued[q], &n[q]), 0);
            assert_int_equal(simdev_stream_sync(f.s), 0);
            refusals++;
            for (size_t q = 0; q < sizeof queued / sizeof queued[0]; q++) {
                for (uint64_t e = 1; e <= n[q]; e++) {
                    km_bufs_refill(&f.b, 0.0f);
                    assert_int_equal(simdev_fault_inject(0, chain[k].kind, nth, INJECTED), 0);
                    assert_int_equal(simdev_fault_inject_exec(0, queued[q], e, INJECTED - 1), 0);
                    int rc = cb_launch(&f, f.s);
                    assert_int_equal(simdev_fault_clear(0), 0);
                    assert_int_equal(rc, INJECTED);
                    launch_behind(&f);
                    int round = simdev_stream_sync(f.s);
                    int expected = queued[q] == SIMDEV_OP_RECORD && e == 1 ? INJECTED - 1 : 0;
                    /* Another code: a closing-off failure reached the caller
                     * through the context's streams, or the start record's
                     * failure was lost. */
                    if (round != expected)
                        fail_msg("launch refused at %s #%llu, its %s #%llu failing as it "
                                 "executes: the caller's sync returned %d, expected %d",
                                 simdev_op_kind_name(chain[k].kind), (unsigned long long)nth,
                                 simdev_op_kind_name(queued[q]), (unsigned long long)e, round,
                                 expected);
                    assert_true(rounds_ran(&f, 0));
                    assert_behind_exact(&f);
                    assert_memory_unchanged(&f);
                    assert_next_launch_exact(&f);
                    pairs++;
                }
            }
        }
    }
    print_message("refused launches: %llu, their queued ops failed as they execute: %llu\n",
                  (unsigned long long)refusals, (unsigned long long)pairs);
    assert_int_equal(refusals, 9 + hbg());
    /* Queued by the refusal at (chain ops before it + closing-off ops):
     * start 0; aicore_start 4; aicore_done 10 (with the cancel); AICPU's
     * wait for start 1; AICore's wait 5; round begin 3; core loop 8;
     * program 10 (with the cancel); acquire 3; under host_build_graph the
     * staged copy 4 (start, the wait, round begin, aicpu_done). Fewer: a
     * queued op of a refusal was never failed. */
    assert_int_equal(pairs, 44 + 4 * hbg());
    cb_close(&f);
}

/* An op the caller queued before the launch or the replay fails as it
 * executes (a copy: the kind the chain itself never queues): the round
 * behind it on that stream is skipped whole, the gate never taken. */
static void test_a_failed_copy_queued_before_a_launch_or_a_replay_skips_its_round_whole(
    void **state)
{
    (void)state;
    struct cb f;
    cb_open(&f);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_one(&f, &graph);
    float *scratch = ts_dev_alloc(CB_N * sizeof(float));
    f.in_use = device_in_use();
    for (int replay = 0; replay < 2; replay++) {
        simdev_stream_t stream = replay ? f.cs : f.s;
        km_bufs_refill(&f.b, 0.0f);
        assert_int_equal(simdev_fault_inject_exec(0, SIMDEV_OP_COPY, 1, INJECTED), 0);
        assert_int_equal(simdev_memset_async(scratch, 0, CB_N * sizeof(float), stream), 0);
        assert_int_equal(replay ? simdev_graph_launch(exec, stream) : cb_launch(&f, stream), 0);
        assert_int_equal(simdev_fault_clear(0), 0);
        /* The copy's code: 0 would mean the round ran behind a failure. */
        assert_int_equal(simdev_stream_sync(stream), INJECTED);
        assert_true(rounds_ran(&f, 0));
        assert_memory_unchanged(&f);
        if (replay)
            assert_next_replay_exact(&f, exec);
        assert_next_launch_exact(&f);
    }
    assert_int_equal(simdev_free(scratch), 0);
    graph_free(exec, graph);
    cb_close(&f);
}

/* ------------------------------------------ (c) enqueue, inside a capture */

/*
 * Each op failing to enqueue while the caller's stream captures. Refused
 * (before the program) the launch returns the code, and what it closed off
 * is recorded on the context's capture streams but never joined back to the
 * caller's: ended at once, the capture returns CAPTURE_UNJOINED, or an empty
 * graph when nothing was recorded on those streams yet (the start record, the
 * AICPU stream's wait for it, or the gate's acquire failed). Retried inside
 * the same capture, the launch records a whole chain behind what was closed
 * off, and the graph replays exactly one round each time. Absorbed (after
 * the program), the graph is whole.
 */
static void test_each_chain_op_failing_to_enqueue_inside_a_capture_leaves_a_graph_that_replays_exactly(
    void **state)
{
    (void)state;
    struct cb f;
    cb_open(&f);
    uint64_t refused_retried = 0, refused_ended = 0, empty_graphs = 0, absorbed = 0;
    for (size_t k = 0; k < CHAIN_KINDS; k++) {
        for (uint64_t nth = 1; nth <= chain[k].count; nth++) {
            bool refuse = nth <= chain[k].before_program;
            /* Refused: once retried inside the capture, once ended at once. */
            for (int end_at_once = 0; end_at_once <= (refuse ? 1 : 0); end_at_once++) {
                km_bufs_refill(&f.b, 0.0f);
                assert_int_equal(simdev_stream_begin_capture(f.cs), 0);
                assert_int_equal(simdev_fault_inject(0, chain[k].kind, nth, INJECTED), 0);
                int rc = cb_launch(&f, f.cs);
                assert_int_equal(simdev_fault_clear(0), 0);
                if (rc != (refuse ? INJECTED : 0))
                    fail_msg("captured %s #%llu failing to enqueue: launch returned %d",
                             simdev_op_kind_name(chain[k].kind), (unsigned long long)nth, rc);
                simdev_graph_t graph = NULL;
                if (end_at_once) {
                    int ended = simdev_stream_end_capture(f.cs, &graph);
                    bool nothing_recorded =
                        (chain[k].kind == SIMDEV_OP_RECORD && nth == 1) ||
                        (chain[k].kind == SIMDEV_OP_WAIT && nth == 1) ||
                        (chain[k].kind == SIMDEV_OP_SEM && nth == 1);
                    if (ended != (nothing_recorded ? 0 : PTO_RUNTIME_ERR_CAPTURE_UNJOINED))
                        fail_msg("captured %s #%llu refused, capture ended at once: %d",
                                 simdev_op_kind_name(chain[k].kind), (unsigned long long)nth,
                                 ended);
                    if (ended == 0) {
                        size_t nodes = 99;
                        assert_int_equal(simdev_graph_node_count(graph, &nodes), 0);
                        assert_int_equal(nodes, 0); /* nothing of the refused launch */
                        assert_int_equal(simdev_graph_destroy(graph), 0);
                        empty_graphs++;
                    }
                    refused_ended++;
                    assert_true(rounds_ran(&f, 0));
                    /* The capture streams left the failed capture: the next
                     * capture of the context records and replays exactly. */
                    simdev_graph_exec_t exec = capture_one(&f, &graph);
                    assert_next_replay_exact(&f, exec);
                    graph_free(exec, graph);
                } else {
                    if (refuse) {
                        assert_int_equal(cb_launch(&f, f.cs), 0); /* the retry */
                        refused_retried++;
                    } else {
                        absorbed++;
                    }
                    simdev_graph_exec_t exec = end_capture(&f, &graph);
                    assert_true(rounds_ran(&f, 0)); /* a capture runs nothing */
                    for (int replay = 0; replay < 2; replay++)
                        assert_int_equal(simdev_graph_launch(exec, f.cs), 0);
                    int round = simdev_stream_sync(f.cs);
                    /* Nonzero: what the refused launch closed off fails the
                     * replay; not two rounds: it ran a round, or lost one. */
                    if (round != 0 || !rounds_ran(&f, 2))
                        fail_msg("captured %s #%llu failing to enqueue (%s): two replays "
                                 "returned %d, %s",
                                 simdev_op_kind_name(chain[k].kind), (unsigned long long)nth,
                                 refuse ? "refused, retried" : "absorbed", round,
                                 rounds_ran(&f, 2) ? "two rounds" : "not exactly two rounds");
                    graph_free(exec, graph);
                }
                assert_memory_unchanged(&f);
                assert_next_launch_exact(&f);
            }
        }
    }
    print_message("captured enqueue faults: %llu refused (each retried in the capture, and "
                  "ended at once: %llu empty graphs), %llu absorbed\n",
                  (unsigned long long)refused_retried, (unsigned long long)empty_graphs,
                  (unsigned long long)absorbed);
    assert_int_equal(refused_retried, 9 + hbg());
    assert_int_equal(refused_ended, 9 + hbg());
    assert_int_equal(empty_graphs, 3);
    assert_int_equal(absorbed, 6);
    cb_close(&f);
}

/* ------------------------------------------------------ (c) replays */

/* Sets the round's mode, runs `launch_or_replay` on its stream and
 * returns the stream's sync; for CB_STALL, guards pm_gate with a rescue
 * (the orchestration opens it once the timeout is latched: a rescue that
 * fired means it never was). */
static int run_mode(struct cb *f, enum cb_mode mode, simdev_graph_exec_t exec)
{
    km_bufs_refill(&f->b, 0.0f);
    cb_set_mode(f, mode);
    atomic_store(&cb_stall_read, 1);
    struct ts_rescue rescue;
    if (mode == CB_STALL)
        ts_rescue_start(&rescue, &pm_gate, TS_DEADLOCK_GUARD_MS);
    simdev_stream_t stream = exec ? f->cs : f->s;
    assert_int_equal(exec ? simdev_graph_launch(exec, stream) : cb_launch(f, stream), 0);
    int round = simdev_stream_sync(stream);
    if (mode == CB_STALL) {
        /* 1: the timeout never came and the rescue opened the gate. */
        assert_int_equal(ts_rescue_finish(&rescue), 0);
        /* The orchestration's wait for the held task ended with the
         * latched timeout (-8: it timed out itself; 1: it never ran). */
        assert_int_equal(atomic_load(&cb_stall_read), -SIMPLER_SCHED_ERR_TIMEOUT);
        pm_observers_reset(); /* a closed gate for the next stall */
    }
    cb_set_mode(f, CB_RUN);
    return round;
}

/* The round's failures a replay can meet, each decided by device data: the
 * code reaches the replay stream's sync, nothing of the failed round is
 * committed (acc untouched), and the next replay and the next eager launch
 * are exact (the gate came back). */
static const struct {
    enum cb_mode mode;
    const char *what;
    int code;
} round_failures[] = {
    {CB_KERNEL_FAIL, "a kernel's own code", -CB_KERNEL_CODE},
    {CB_FATAL, "an orchestrator error", -SIMPLER_ORCH_ERR_EXPLICIT_FATAL},
    {CB_STALL, "a scheduler timeout", -SIMPLER_SCHED_ERR_TIMEOUT},
};
#define ROUND_FAILURES (sizeof round_failures / sizeof round_failures[0])

/* acc still 1 everywhere: acc += y never ran. y is not looked at: a kernel
 * held past the timeout writes it when released. */
static bool acc_untouched(const struct cb *f)
{
    float *acc = malloc(f->b.n * sizeof *acc);
    ts_from_dev(acc, f->b.acc, f->b.n * sizeof *acc);
    bool untouched = true;
    for (uint64_t i = 0; i < f->b.n && untouched; i++)
        untouched = acc[i] == 1.0f;
    free(acc);
    return untouched;
}

static void test_a_replay_refused_skipped_or_failing_on_data_ends_and_the_next_replay_is_exact(
    void **state)
{
    (void)state;
    struct cb f;
    cb_open(&f);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_one(&f, &graph);
    assert_next_replay_exact(&f, exec);

    /* The replay's own enqueue fails: nothing is queued. */
    km_bufs_refill(&f.b, 0.0f);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_GRAPH_LAUNCH, 1, INJECTED), 0);
    int rc = simdev_graph_launch(exec, f.cs);
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_int_equal(rc, INJECTED);
    assert_int_equal(simdev_stream_sync(f.cs), 0); /* nonzero: a refused replay left an error */
    assert_true(rounds_ran(&f, 0));
    assert_next_replay_exact(&f, exec);

    /* The replayed round fails, decided by device data. Under
     * host_build_graph the graph, built on the host, is what a replay
     * runs: a failure is captured with it (a graph captured in each mode),
     * and a stall, whose orchestration waits for a task's output, cannot be
     * built at all. */
    uint64_t failures = 0;
    for (size_t i = 0; i < ROUND_FAILURES; i++) {
        if (hbg() && round_failures[i].mode == CB_STALL)
            continue;
        simdev_graph_t mode_graph = NULL;
        simdev_graph_exec_t mode_exec = NULL;
        if (hbg()) {
            cb_set_mode(&f, round_failures[i].mode);
            mode_exec = capture_one(&f, &mode_graph);
        }
        int round = run_mode(&f, round_failures[i].mode, hbg() ? mode_exec : exec);
        if (mode_exec)
            graph_free(mode_exec, mode_graph);
        if (round != round_failures[i].code)
            fail_msg("a replay failing with %s: its sync returned %d, expected %d",
                     round_failures[i].what, round, round_failures[i].code);
        assert_true(acc_untouched(&f));
        assert_memory_unchanged(&f);
        assert_next_replay_exact(&f, exec);
        assert_next_launch_exact(&f);
        failures++;
    }
    print_message("replays: 1 refused at enqueue, %llu failing rounds\n",
                  (unsigned long long)failures);
    assert_int_equal(failures, 3 - hbg());
    graph_free(exec, graph);
    cb_close(&f);
}

/* Each launch node of a replayed round (round begin, core loop, AICPU
 * program, status op, in capture order) failing as the replay runs it
 * (simdev_fault_inject_replay): the replay stream's sync returns the
 * injected code, the round ran only when the failure came after it (the
 * status op), the gate was given back (its release is a semaphore node,
 * which runs whatever failed before it), and the next replay and the next
 * eager launch are exact. */
static const struct {
    const char *node;
    bool ran;
} replay_nodes[] = {
    {"round begin", false},
    {"core loop", false},      /* the program runs alone to its deadline */
    {"AICPU program", false},  /* the core loop runs alone to its deadline */
    {"status op", true},
};
#define REPLAY_NODES (sizeof replay_nodes / sizeof replay_nodes[0])

static void test_each_launch_of_a_replayed_round_failing_as_it_runs_ends_the_replay(void **state)
{
    (void)state;
    struct cb f;
    cb_open(&f);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_one(&f, &graph);
    size_t launches = 0;
    assert_int_equal(simdev_graph_exec_launch_count(exec, &launches), 0);
    assert_int_equal(launches, REPLAY_NODES); /* other: the captured chain changed */
    for (size_t i = 0; i < REPLAY_NODES; i++) {
        km_bufs_refill(&f.b, 0.0f);
        assert_int_equal(simdev_fault_inject_replay(exec, i, INJECTED), 0);
        assert_int_equal(simdev_graph_launch(exec, f.cs), 0);
        launch_behind(&f); /* queued at the gate behind the broken replay */
        int round = simdev_stream_sync(f.cs);
        if (round != INJECTED)
            fail_msg("the replay's %s failing as it runs: its sync returned %d, expected %d",
                     replay_nodes[i].node, round, INJECTED);
        if (!rounds_ran(&f, replay_nodes[i].ran ? 1 : 0))
            fail_msg("the replay's %s failing as it runs: expected %s", replay_nodes[i].node,
                     replay_nodes[i].ran ? "exactly one round" : "no round");
        assert_behind_exact(&f);
        assert_memory_unchanged(&f);
        assert_next_replay_exact(&f, exec);
        assert_next_launch_exact(&f);
    }
    /* host_build_graph: the graph's staged copy, before the round begin's
     * successors on the AICPU lane: no round runs. */
    size_t staged = 0;
    assert_int_equal(simdev_graph_exec_staged_count(exec, &staged), 0);
    assert_int_equal(staged, hbg()); /* other: the captured chain changed */
    for (size_t i = 0; i < staged; i++) {
        km_bufs_refill(&f.b, 0.0f);
        assert_int_equal(simdev_fault_inject_replay_staged(exec, i, INJECTED), 0);
        assert_int_equal(simdev_graph_launch(exec, f.cs), 0);
        launch_behind(&f);
        int round = simdev_stream_sync(f.cs);
        if (round != INJECTED)
            fail_msg("the replay's staged copy failing as it runs: its sync returned %d, "
                     "expected %d", round, INJECTED);
        assert_true(rounds_ran(&f, 0));
        assert_behind_exact(&f);
        assert_memory_unchanged(&f);
        assert_next_replay_exact(&f, exec);
        assert_next_launch_exact(&f);
    }
    print_message("replayed launch nodes failed: %zu, staged copies: %zu\n",
                  (size_t)REPLAY_NODES, staged);
    graph_free(exec, graph);
    cb_close(&f);
}

/* ------------------------------------- (d) round failures, eagerly */

/* A scheduler timeout and an orchestrator error in an eager kernel round
 * (and a kernel's code, for completeness) reach the caller's stream sync
 * with their exact codes; the next round is exact. */
static void test_a_scheduler_timeout_and_an_orchestrator_error_reach_the_callers_sync(
    void **state)
{
    (void)state;
    struct cb f;
    cb_open(&f);
    uint64_t failures = 0;
    for (size_t i = 0; i < ROUND_FAILURES; i++) {
        if (hbg() && round_failures[i].mode == CB_STALL)
            continue; /* its orchestration waits for a task: no host build can */
        int round = run_mode(&f, round_failures[i].mode, NULL);
        /* 0: the failure was lost; another code: misreported (a stale
         * result block, the wrong band). */
        if (round != round_failures[i].code)
            fail_msg("an eager round failing with %s: the caller's sync returned %d, "
                     "expected %d",
                     round_failures[i].what, round, round_failures[i].code);
        assert_true(acc_untouched(&f));
        assert_memory_unchanged(&f);
        assert_next_launch_exact(&f);
        failures++;
    }
    assert_int_equal(failures, 3 - hbg());
    cb_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST_WITH(test_the_chain_has_exactly_the_ops_this_test_breaks, ts_device_setup,
                          cb_teardown),
        SIMPLER_TEST_WITH(
            test_each_chain_op_failing_to_enqueue_refuses_or_is_absorbed_and_the_next_launch_is_exact,
            ts_device_setup, cb_teardown),
        SIMPLER_TEST_WITH(
            test_each_chain_op_failing_as_it_executes_ends_the_round_and_the_next_launch_is_exact,
            ts_device_setup, cb_teardown),
        SIMPLER_TEST_WITH(test_a_refused_launch_whose_closing_off_fails_as_it_executes_still_ends,
                          ts_device_setup, cb_teardown),
        SIMPLER_TEST_WITH(
            test_a_failed_copy_queued_before_a_launch_or_a_replay_skips_its_round_whole,
            ts_device_setup, cb_teardown),
        SIMPLER_TEST_WITH(
            test_each_chain_op_failing_to_enqueue_inside_a_capture_leaves_a_graph_that_replays_exactly,
            ts_device_setup, cb_teardown),
        SIMPLER_TEST_WITH(
            test_a_replay_refused_skipped_or_failing_on_data_ends_and_the_next_replay_is_exact,
            ts_device_setup, cb_teardown),
        SIMPLER_TEST_WITH(test_each_launch_of_a_replayed_round_failing_as_it_runs_ends_the_replay,
                          ts_device_setup, cb_teardown),
        SIMPLER_TEST_WITH(test_a_scheduler_timeout_and_an_orchestrator_error_reach_the_callers_sync,
                          ts_device_setup, cb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
