/*
 * test_kernel_mode.c — kernel mode through the public API: a context that
 * borrows the caller's device and stream, one round per launch.
 *
 * The callable is pm_support's (y = x * mul + add, then acc += y), its
 * tensors device memory the test owns. Device work never points into a
 * test's stack frame: buffers are simdev allocations freed at the end. The
 * cases that need the host's internals (hand-built packets, counters, host
 * allocation faults) are unit/host/test_kernel_mode_internals.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/simpler.h"
#include "pm_support.h"
#include "simpler/simdev_fault.h"
#include "simpler/simdev_profile.h"

#include "km_support.h"

/* ---------------------------------------------------------------- numerics */

static void test_two_eager_launches_compute_exactly_and_their_args_are_free_at_return(
    void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b1, b2;
    km_bufs_alloc(&b1, KM_N, 0.0f);
    km_bufs_alloc(&b2, KM_N, 7.0f);
    size_t committed = simpler_committed_device_memory(ctx);

    struct km_args *a = malloc(sizeof *a);
    km_args_make(a, &b1, 2.0f, 0.5f, 0, 1);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a->args, s), 0);
    memset(a, 0xA5, sizeof *a); /* the round must not read these any more */
    km_args_make(a, &b2, 3.0f, 1.5f, 0, 2);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a->args, s), 0);
    memset(a, 0x5A, sizeof *a);
    free(a);

    assert_int_equal(simdev_stream_sync(s), 0);
    /* false: a round read the args after launch returned, or did not run */
    assert_true(km_bufs_hold(&b1, 0.0f, 2.0f, 0.5f, 1.0f));
    assert_true(km_bufs_hold(&b2, 7.0f, 3.0f, 1.5f, 1.0f));
    /* Memory is committed once, at init: a launch allocates nothing. */
    assert_int_equal(simpler_committed_device_memory(ctx), committed);

    km_bufs_free(&b1);
    km_bufs_free(&b2);
    assert_int_equal(simdev_stream_destroy(s), 0);
    pm_close(ctx);
}

/* ---------------------------------------------------------------- profile */

static int entry_by_ns(const void *a, const void *b)
{
    const struct simdev_timeline_entry *x = a, *y = b;
    return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/* The POINT marks `point` of e[0..n): how many, the first and last index
 * (n when none); each made by a core (`by` 1), an AICPU thread (0), or
 * either (2: a step, which runs on whichever device thread is awake). */
struct points {
    size_t count, first, last;
};

static struct points points_of(const struct simdev_timeline_entry *e, size_t n,
                               enum simdev_point point, uint32_t by)
{
    struct points p = {0, n, n};
    for (size_t i = 0; i < n; i++) {
        if (e[i].mark != SIMDEV_MARK_POINT || e[i].op != (uint32_t)point)
            continue;
        assert_true(e[i].core <= 1); /* only device threads mark points */
        if (by < 2)
            assert_int_equal(e[i].core, by); /* the wrong kind of thread marked it */
        if (p.count++ == 0)
            p.first = i;
        p.last = i;
    }
    return p;
}

/*
 * With SIMDEV_TIMELINE_POINTS, a round marks its protocol (the per-hop
 * table of bench_kernel reads them): every core joins once and is rung
 * out once; each dispatch runs one kernel on a core; the handshake is done
 * before the first dispatch, every completion comes after a kernel ended,
 * the exits and the watch's end after the last completion. A count off by
 * one means a point marked twice or on a path that does not run; an order
 * broken means a mark in the wrong place.
 */
static void test_a_round_marks_each_protocol_point_where_it_happens(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 1024, 0.0f);
    struct simdev_config config;
    assert_int_equal(simdev_device_get_config(0, &config), 0);
    uint32_t cores = config.aic_cores + config.aiv_cores;
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    enum { CAP = 4096 };
    struct simdev_timeline_entry *e = malloc(CAP * sizeof *e);
    assert_non_null(e);
    assert_int_equal(simdev_timeline_start_with(0, CAP, SIMDEV_TIMELINE_POINTS), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    size_t n = 0;
    uint64_t dropped = 99;
    assert_int_equal(simdev_timeline_stop(0, e, CAP, &n, &dropped), 0);
    assert_int_equal(dropped, 0);
    assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f));
    qsort(e, n, sizeof e[0], entry_by_ns);
    struct points submit = points_of(e, n, SIMDEV_POINT_SUBMIT, 0);
    struct points dispatch = points_of(e, n, SIMDEV_POINT_DISPATCH, 2);
    struct points begin = points_of(e, n, SIMDEV_POINT_KERNEL_BEGIN, 1);
    struct points end = points_of(e, n, SIMDEV_POINT_KERNEL_END, 1);
    struct points join = points_of(e, n, SIMDEV_POINT_CORE_JOIN, 1);
    struct points open = points_of(e, n, SIMDEV_POINT_SCHED_OPEN, 0);
    struct points done = points_of(e, n, SIMDEV_POINT_SCHED_DONE, 0);
    struct points complete = points_of(e, n, SIMDEV_POINT_COMPLETE, 2);
    struct points exits = points_of(e, n, SIMDEV_POINT_CORE_EXIT, 2);
    struct points leaves = points_of(e, n, SIMDEV_POINT_CORE_LEAVE, 2);
    assert_true(submit.count >= 1);
    assert_true(dispatch.count >= 1);
    assert_int_equal(begin.count, dispatch.count);
    assert_int_equal(end.count, dispatch.count);
    assert_true(complete.count >= 1 && complete.count <= dispatch.count);
    assert_int_equal(join.count, cores);
    /* every core rung out, or left before it joined (the round ended
     * first: the scheduler does not wait for a late core loop) */
    assert_int_equal(exits.count + leaves.count, cores);
    assert_true(open.count >= 1);
    assert_int_equal(done.count, open.count);
    uint64_t joined = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i].mark == SIMDEV_MARK_POINT && e[i].op == SIMDEV_POINT_CORE_JOIN)
            joined |= UINT64_C(1) << e[i].thread;
    assert_int_equal(joined, (UINT64_C(1) << cores) - 1); /* each core once */
    assert_true(open.first < dispatch.first);
    assert_true(dispatch.first < begin.first);
    assert_true(end.first < complete.first && end.last < complete.last);
    assert_true(complete.last < exits.first);
    assert_true(leaves.count == 0 || complete.last < leaves.first);
    assert_true(complete.last < done.last);
    free(e);
    km_closing(ctx, s, &b);
}

/* ------------------------------------------------------------------ errors */

static void test_a_failing_round_reaches_the_callers_sync_and_the_next_launch_works(
    void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b1, b2;
    km_bufs_alloc(&b1, 4096, 0.0f);
    km_bufs_alloc(&b2, 4096, 1.0f);
    struct km_args a;
    km_args_make(&a, &b1, 2.0f, 0.5f, 321, 1);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    /* The kernel's code, negated: 0 would be a lost device error. */
    assert_int_equal(simdev_stream_sync(s), -321);
    assert_true(km_bufs_untouched(&b1)); /* the failing task never wrote y */
    km_args_make(&a, &b2, 2.0f, 0.5f, 0, 2);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    /* Nonzero: the failure poisoned the context or stayed on its streams. */
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b2, 1.0f, 2.0f, 0.5f, 1.0f));
    km_bufs_free(&b1);
    km_bufs_free(&b2);
    assert_int_equal(simdev_stream_destroy(s), 0);
    pm_close(ctx);
}

static void test_good_failing_good_without_a_sync_skips_the_third_round_whole(void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b[4];
    for (int i = 0; i < 4; i++)
        km_bufs_alloc(&b[i], 4096, (float)i);
    struct km_args a;
    km_args_make(&a, &b[0], 2.0f, 0.5f, 0, 1);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    km_args_make(&a, &b[1], 2.0f, 0.5f, 321, 2);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    km_args_make(&a, &b[2], 2.0f, 0.5f, 0, 3);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), -321);
    assert_true(km_bufs_hold(&b[0], 0.0f, 2.0f, 0.5f, 1.0f)); /* the round before the failure */
    /* Enqueued behind the failure on a stream that carried it: skipped whole
     * (false: it ran although its stream carried an error). */
    assert_true(km_bufs_untouched(&b[2]));
    /* The sync cleared the caller's stream, and the context's own streams
     * never kept the error: the next launch works. */
    km_args_make(&a, &b[3], 2.0f, 0.5f, 0, 4);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b[3], 3.0f, 2.0f, 0.5f, 1.0f));
    for (int i = 0; i < 4; i++)
        km_bufs_free(&b[i]);
    assert_int_equal(simdev_stream_destroy(s), 0);
    pm_close(ctx);
}

/* ------------------------------------------------------ empty sections */

/* Exported: the images below name them. */
void km_kernel_inc(int64_t *args);
void km_orch_tensor_only(struct simpler_orch *rt, const struct simpler_orch_args *args);
void km_orch_no_args(struct simpler_orch *rt, const struct simpler_orch_args *args);

static atomic_int km_no_args_runs;
static atomic_uint km_no_args_counts; /* tensor_count + scalar_count the round saw */

/* x += 1 over the view (tensor 0, INOUT, f32). */
void km_kernel_inc(int64_t *args)
{
    float *x = simpler_kernel_data(args, 0);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 0));
    for (uint64_t i = 0; i < n; i++)
        x[i] += 1.0f;
}

/* One task over the only argument, a tensor: no scalars. */
void km_orch_tensor_only(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, &args->tensors[0]);
    simpler_submit_aiv(rt, 0, &ta, NULL);
}

/* No arguments at all: records that it ran and what it saw. */
void km_orch_no_args(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)rt;
    atomic_store(&km_no_args_counts, args->tensor_count + args->scalar_count);
    atomic_fetch_add(&km_no_args_runs, 1);
}

static int32_t km_prepare(struct simpler_context *ctx, const char *entry,
                          const enum simpler_direction *sig, uint32_t sig_count)
{
    static const enum simpler_direction inout[] = {SIMPLER_DIR_INOUT};
    struct simpler_callable_builder *b;
    void *image;
    size_t bytes;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                                entry, NULL, sig, sig_count),
                     0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 0, SIMPLER_CORE_AIV,
                                                         SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                         "km_kernel_inc", inout, 1),
                     0);
    assert_int_equal(simpler_callable_builder_finish(b, &image, &bytes), 0);
    simpler_callable_builder_destroy(b);
    int32_t id = -1;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id), 0);
    simpler_callable_free(image);
    return id;
}

/* A packet with no scalars, or with nothing at all: the device copies an
 * empty section from the decoder's NULL (the UBSan build aborts if it
 * hands NULL to memcpy, even for 0 bytes). */
static void test_rounds_without_scalars_or_without_any_argument_run(void **state)
{
    (void)state;
    static const enum simpler_direction inout[] = {SIMPLER_DIR_INOUT};
    struct simpler_context *ctx = km_open();
    int32_t tensor_only = km_prepare(ctx, "km_orch_tensor_only", inout, 1);
    int32_t no_args = km_prepare(ctx, "km_orch_no_args", NULL, 0);
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b;
    km_bufs_alloc(&b, 1024, 0.0f);
    struct simpler_tensor t;
    assert_int_equal(simpler_tensor_make_1d(&t, (uint64_t)(uintptr_t)b.acc, b.n, SIMPLER_DTYPE_F32,
                                            SIMPLER_MEM_DEVICE),
                     0);
    const struct simpler_args one_tensor = {1, 0, &t, NULL}, nothing = {0, 0, NULL, NULL};
    atomic_store(&km_no_args_runs, 0);
    atomic_store(&km_no_args_counts, 99);

    assert_int_equal(simpler_kernel_mode_launch(ctx, tensor_only, &one_tensor, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    float acc[1024];
    assert_int_equal(simdev_memcpy(acc, b.acc, sizeof acc, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    for (int i = 0; i < 1024; i++)
        assert_true(acc[i] == 2.0f); /* 1 (km_bufs_alloc) + 1: the task ran once */

    assert_int_equal(simpler_kernel_mode_launch(ctx, no_args, &nothing, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&km_no_args_runs), 1);   /* 0: the round never ran */
    assert_int_equal(atomic_load(&km_no_args_counts), 0); /* else it saw stale counts */

    km_closing(ctx, s, &b);
}

/* ------------------------------------------------------------ the chain */

static void test_one_launch_enqueues_exactly_the_chain_and_nothing_else(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 1024, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    uint64_t host_before;
    assert_int_equal(simdev_host_alloc_count(&host_before), 0);
    assert_int_equal(simdev_op_counts_reset(0), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    uint64_t n[SIMDEV_OP_KIND_COUNT];
    for (int kind = 0; kind < SIMDEV_OP_KIND_COUNT; kind++)
        assert_int_equal(simdev_op_count(0, (enum simdev_op_kind)kind, &n[kind]), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    /* start, aicore_start, aicore_done, aicpu_done, serial_tail */
    assert_int_equal(n[SIMDEV_OP_RECORD], 5);
    /* AICPU: start, aicore_done; AICore: aicore_start; caller: aicpu_done */
    assert_int_equal(n[SIMDEV_OP_WAIT], 4);
    /* round begin, core loop, program, status op */
    assert_int_equal(n[SIMDEV_OP_LAUNCH], 4);
    /* the round gate: acquired before round begin, released after the
     * status op (0: rounds of the context could overlap on the device) */
    assert_int_equal(n[SIMDEV_OP_SEM], 2);
    /* A launch allocates, synchronises and creates nothing, and copies
     * nothing but, under host_build_graph, the graph the host built (one
     * staged copy into the arena): 0 there, the image never reached the
     * device; 1 under TMR, a launch copied on the caller's behalf. */
    assert_int_equal(n[SIMDEV_OP_COPY], ts_runtime_hbg() ? 1 : 0);
    assert_int_equal(n[SIMDEV_OP_MALLOC], 0);
    assert_int_equal(n[SIMDEV_OP_FREE], 0);
    assert_int_equal(n[SIMDEV_OP_SYNC], 0);
    assert_int_equal(n[SIMDEV_OP_STREAM_CREATE], 0);
    assert_int_equal(n[SIMDEV_OP_EVENT_CREATE], 0);
    assert_int_equal(n[SIMDEV_OP_GRAPH_LAUNCH], 0);
    assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f));
    km_closing(ctx, s, &b);
}

/* --------------------------------------------------------------- identity */

static void test_cross_mode_calls_are_invalid_state_both_ways(void **state)
{
    (void)state;
    struct simpler_context *kctx = km_open();
    size_t bytes;
    void *image = pm_image(&bytes);
    struct simpler_config cfg = km_config();
    /* Program entries on a kernel context. */
    assert_int_equal(simpler_init(kctx, 0, &cfg), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_register_callable(kctx, 3, image, bytes),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_unregister_callable(kctx, 0), PTO_RUNTIME_ERR_INVALID_STATE);
    struct pm_run r;
    pm_run_init(&r, 1.0f, 1.0f, 0, 0, 1);
    simpler_run_t h;
    assert_int_equal(simpler_prepare_run(kctx, &h, 0, &r.args, NULL),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_run(kctx, 0, &r.args, NULL, NULL), PTO_RUNTIME_ERR_INVALID_STATE);
    struct simpler_context_info info;
    /* Both identities report their info: a kernel context has no runs, and
     * the refused program-mode calls above prepared nothing. */
    assert_int_equal(simpler_get_context_info(kctx, &info), 0);
    assert_int_equal(info.unfinalized_runs, 0);
    assert_int_equal(info.host_preparations, 0);
    /* A second kernel context on the same device. */
    struct simpler_context *second;
    assert_int_equal(simpler_create_device_context(&second), 0);
    assert_int_equal(simpler_kernel_mode_init(second, 0, &cfg, 0), PTO_RUNTIME_ERR_INVALID_STATE);
    /* Nor a program context. */
    struct simpler_context *prog;
    assert_int_equal(simpler_create_device_context(&prog), 0);
    assert_int_equal(simpler_init(prog, 0, &cfg), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_destroy_device_context(prog), 0);
    assert_int_equal(simpler_finalize_device(kctx), 0);
    /* A closed kernel context stays closed: init once per context. */
    assert_int_equal(simpler_kernel_mode_init(kctx, 0, &cfg, 0), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_destroy_device_context(kctx), 0);
    /* The first closed: the device is free for the second. */
    assert_int_equal(simpler_kernel_mode_init(second, 0, &cfg, 0), 0);
    pm_close(second);

    /* Kernel entries on a program context. */
    struct simpler_context *pctx = pm_open(1);
    int32_t id = 5;
    assert_int_equal(simpler_kernel_mode_supported(pctx), 0);
    assert_int_equal(simpler_kernel_mode_init(pctx, 0, &cfg, 0), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_kernel_mode_prepare_callable(pctx, image, bytes, &id),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(id, -1);
    simdev_stream_t s = ts_new_stream();
    struct km_args a;
    struct km_bufs b = {1, (float *)(uintptr_t)64, (float *)(uintptr_t)128,
                        (float *)(uintptr_t)192};
    km_args_make(&a, &b, 1.0f, 1.0f, 0, 1);
    assert_int_equal(simpler_kernel_mode_launch(pctx, 0, &a.args, s),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    /* A kernel context may not take the device a program context owns. */
    struct simpler_context *third;
    assert_int_equal(simpler_create_device_context(&third), 0);
    assert_int_equal(simpler_kernel_mode_init(third, 0, &cfg, 0), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_destroy_device_context(third), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
    pm_run_free(&r);
    pm_close(pctx);
    simpler_callable_free(image);
}

/* ------------------------------------------------------------ lost device */

static void test_only_a_lost_device_poisons_the_context_and_close_still_releases(void **state)
{
    (void)state;
    struct simdev_config topo = ts_small_config();
    topo.watchdog_ms = 1000; /* a kernel held longer than this loses the device */
    ts_device_setup_config(&topo);
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 1024, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    a.s[3] = PM_FLAG_GATE; /* the kernel waits at pm_gate */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    ts_gate_wait_arrivals(&pm_gate, 1); /* held until the watchdog fires */
    assert_int_equal(simdev_stream_sync(s), PTO_RUNTIME_ERR_DEVICE_LOST);
    a.s[3] = 0;
    /* Poisoned: every later call says why, nothing is enqueued. */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), PTO_RUNTIME_ERR_DEVICE_LOST);
    size_t bytes;
    void *image = pm_image(&bytes);
    int32_t id = 3;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id),
                     PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(id, -1);
    simpler_callable_free(image);
    ts_gate_open(&pm_gate); /* let the hung kernel return */
    /* Close releases what the context holds, host-side, and leaves the
     * borrowed device as it is: lost until its owner resets it. */
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(simpler_committed_device_memory(ctx), 0);
    assert_int_equal(simdev_device_is_lost(0), 1); /* 0: simpler reset a device it borrowed */
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_device_reset(0), 0); /* the framework's call */
    ts_device_setup_config(&topo);
}

/* ---------------------------------------------------------- fault sweeps */

/* Every device op of kind `kind` of `step` failed in turn: the injected code
 * comes back, and the context is usable (the retry succeeds). */
static const enum simdev_op_kind swept[] = {
    SIMDEV_OP_STREAM_CREATE, SIMDEV_OP_EVENT_CREATE, SIMDEV_OP_MALLOC, SIMDEV_OP_COPY,
    SIMDEV_OP_LAUNCH,        SIMDEV_OP_RECORD,       SIMDEV_OP_WAIT,   SIMDEV_OP_SYNC,
    SIMDEV_OP_FREE,          SIMDEV_OP_STREAM_DESTROY, SIMDEV_OP_EVENT_DESTROY,
    SIMDEV_OP_SEM_CREATE,    SIMDEV_OP_SEM,          SIMDEV_OP_SEM_DESTROY};
#define INJECTED (-991)

static uint64_t device_in_use(void)
{
    struct simdev_mem_info info;
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    return info.in_use;
}

static void test_init_fails_cleanly_at_every_device_operation_and_a_retry_works(void **state)
{
    (void)state;
    struct simpler_config cfg = km_config();
    uint64_t injected = 0;
    for (size_t k = 0; k < sizeof swept / sizeof swept[0]; k++) {
        for (uint64_t nth = 1;; nth++) {
            struct simpler_context *ctx;
            assert_int_equal(simpler_create_device_context(&ctx), 0);
            uint64_t in_use = device_in_use();
            assert_int_equal(simdev_fault_inject(0, swept[k], nth, INJECTED), 0);
            int rc = simpler_kernel_mode_init(ctx, 0, &cfg, 0);
            assert_int_equal(simdev_fault_clear(0), 0);
            if (rc == 0) {
                pm_close(ctx);
                break;
            }
            injected++;
            if (rc != INJECTED)
                fail_msg("init, %s #%llu: returned %d", simdev_op_kind_name(swept[k]),
                         (unsigned long long)nth, rc);
            /* Undone exactly: nothing committed, the device as before. */
            assert_int_equal(simpler_committed_device_memory(ctx), 0);
            assert_int_equal(device_in_use(), in_use);
            /* Never initialised: nothing to close, and init may still run. */
            assert_int_equal(simpler_finalize_device(ctx), PTO_RUNTIME_ERR_INVALID_STATE);
            assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), 0); /* the retry */
            pm_close(ctx);
        }
    }
    /* 11 streams (control, AICPU and AICore, and a capture pair for each of
     * the default 4 captures), the round gate, 5 events, 4 allocations, 2
     * copies (the result block zeroed, the binding), 1 register op, 1 sync:
     * fewer would mean some creation point was never exercised. */
    assert_int_equal(injected, 25);
}

/* Attempts of `kind` one clean launch makes. */
static uint64_t launch_attempts(enum simdev_op_kind kind)
{
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 64, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 1.0f, 1.0f, 0, 1);
    uint64_t before, after;
    assert_int_equal(simdev_op_count(0, kind, &before), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simdev_op_count(0, kind, &after), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    km_closing(ctx, s, &b);
    return after - before;
}

static void test_prepare_launch_and_finalize_fail_cleanly_and_a_retry_works(void **state)
{
    (void)state;
    size_t bytes;
    void *image = pm_image(&bytes);
    uint64_t prepare_faults = 0, launch_faults = 0, launch_absorbed = 0, finalize_faults = 0;
    for (size_t k = 0; k < sizeof swept / sizeof swept[0]; k++) {
        for (uint64_t nth = 1;; nth++) {
            struct simpler_context *ctx = km_open();
            size_t committed = simpler_committed_device_memory(ctx);
            int32_t id = 99;
            assert_int_equal(simdev_fault_inject(0, swept[k], nth, INJECTED), 0);
            int rc = simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id);
            assert_int_equal(simdev_fault_clear(0), 0);
            if (rc) {
                prepare_faults++;
                assert_int_equal(rc, INJECTED);
                assert_int_equal(id, -1);
                assert_int_equal(simpler_committed_device_memory(ctx), committed);
                assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id), 0);
            }
            pm_close(ctx);
            if (!rc)
                break;
        }
        /* Launch: every attempt of the kind in a clean launch, failed in
         * turn. Before the program is enqueued a failure refuses the launch
         * whole (the round never runs); after it, the launch is committed
         * and the op is tried again (the round runs exactly once). */
        uint64_t attempts = launch_attempts(swept[k]);
        for (uint64_t nth = 1; nth <= attempts; nth++) {
            struct simpler_context *ctx = km_open();
            simdev_stream_t s = ts_new_stream();
            struct km_bufs b;
            km_bufs_alloc(&b, 1024, 0.0f);
            struct km_args a;
            km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
            assert_int_equal(simdev_fault_inject(0, swept[k], nth, INJECTED), 0);
            int rc = simpler_kernel_mode_launch(ctx, 0, &a.args, s);
            assert_int_equal(simdev_fault_clear(0), 0);
            int round = simdev_stream_sync(s);
            if (rc) {
                launch_faults++;
                assert_int_equal(rc, INJECTED);
                /* Refused whole: nothing ran, and nothing is left behind. */
                assert_true(km_bufs_untouched(&b));
                assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
                round = simdev_stream_sync(s);
            } else {
                launch_absorbed++;
            }
            if (round != 0)
                fail_msg("launch, %s #%llu failed (launch %d): the round returned %d",
                         simdev_op_kind_name(swept[k]), (unsigned long long)nth, rc, round);
            /* Exactly one round ran: acc == 1 + y (1 + 2y: two did). */
            assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f));
            km_bufs_free(&b);
            assert_int_equal(simdev_stream_destroy(s), 0);
            pm_close(ctx);
        }
        /* Finalize: every attempt of the kind in a clean finalize, failed in
         * turn. A drain's failed sync is absorbed (the drain looks again and
         * finds the stream idle): those attempts succeed. */
        struct simpler_context *probe = km_open();
        uint64_t before, after;
        assert_int_equal(simdev_op_counts_reset(0), 0);
        assert_int_equal(simdev_op_count(0, swept[k], &before), 0);
        assert_int_equal(simpler_finalize_device(probe), 0);
        assert_int_equal(simdev_op_count(0, swept[k], &after), 0);
        assert_int_equal(simpler_destroy_device_context(probe), 0);
        for (uint64_t nth = 1; nth <= after - before; nth++) {
            struct simpler_context *ctx = km_open();
            assert_int_equal(simdev_fault_inject(0, swept[k], nth, INJECTED), 0);
            int rc = simpler_finalize_device(ctx);
            assert_int_equal(simdev_fault_clear(0), 0);
            if (rc) {
                finalize_faults++;
                assert_int_equal(rc, INJECTED);
                /* Closing, and sticky: no new work, no destroy with
                 * leftovers; the retry in km_close does what is left. */
                int32_t id = 5;
                assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id),
                                 PTO_RUNTIME_ERR_INVALID_STATE);
                assert_int_equal(simpler_destroy_device_context(ctx),
                                 PTO_RUNTIME_ERR_INVALID_STATE);
                pm_close(ctx);
                continue;
            }
            assert_int_equal(simpler_committed_device_memory(ctx), 0);
            assert_int_equal(simpler_destroy_device_context(ctx), 0);
        }
    }
    print_message("faults: prepare %llu, launch %llu refused + %llu absorbed, finalize %llu\n",
                  (unsigned long long)prepare_faults, (unsigned long long)launch_faults,
                  (unsigned long long)launch_absorbed, (unsigned long long)finalize_faults);
    /* prepare: 2 mallocs, the image copy, the record zeroing, the load op,
     * its sync, the record read back, the slot copy; launch: 5 records,
     * 4 waits, 4 launches, the gate's acquire and release (9 before the
     * program is enqueued refuse the launch, 6 after it are absorbed);
     * finalize: the gate's acquire and its sync, the gate's destroy, the
     * unregister op and its sync, the unload op and its sync, 6 frees,
     * 5 events, 11 streams (4 capture pairs). Under host_build_graph the
     * launch has one more op before the program, the image's staged copy:
     * 10 refused. Fewer: a failure point was never exercised. */
    assert_int_equal(prepare_faults, 8);
    assert_int_equal(launch_faults, ts_runtime_hbg() ? 10 : 9);
    assert_int_equal(launch_absorbed, 6);
    assert_int_equal(finalize_faults, 29);
    simpler_callable_free(image);
}

/* ------------------------------------------------- regressions from review */

static struct simpler_context *km_open_as(int device, uint64_t generation, int *init_rc)
{
    struct simpler_context *ctx;
    struct simpler_config cfg = km_config();
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    *init_rc = simpler_kernel_mode_init(ctx, device, &cfg, generation);
    return ctx;
}

/* A failed init that named a live generation (another context's) must not
 * remove that context's registration on its way out. */
static void test_a_failed_init_with_a_live_generation_leaves_the_other_context_alone(
    void **state)
{
    (void)state;
    struct simdev_config topo = ts_small_config();
    assert_int_equal(simdev_device_reset(1), 0);
    assert_int_equal(simdev_device_configure(1, &topo), 0);
    const uint64_t g = 0xABCD00ull;
    int rc;
    struct simpler_context *a = km_open_as(0, g, &rc);
    assert_int_equal(rc, 0);
    size_t bytes;
    void *image = pm_image(&bytes);
    int32_t id;
    assert_int_equal(simpler_kernel_mode_prepare_callable(a, image, bytes, &id), 0);
    simpler_callable_free(image);
    assert_int_equal(simdev_set_device(1), 0);
    struct simpler_context *b = km_open_as(1, g, &rc);
    assert_int_equal(rc, PTO_RUNTIME_ERR_INVALID_STATE); /* the device refused the generation */
    assert_int_equal(simpler_destroy_device_context(b), 0);
    assert_int_equal(simdev_set_device(0), 0);
    simdev_stream_t s = ts_new_stream();
    struct km_bufs buf;
    km_bufs_alloc(&buf, 1024, 0.0f);
    struct km_args args;
    km_args_make(&args, &buf, 2.0f, 0.5f, 0, 1);
    assert_int_equal(simpler_kernel_mode_launch(a, 0, &args.args, s), 0);
    /* -14 (STALE_BINDING): B's undo removed A's registration. */
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&buf, 0.0f, 2.0f, 0.5f, 1.0f));
    km_bufs_free(&buf);
    assert_int_equal(simdev_stream_destroy(s), 0);
    pm_close(a);
    assert_int_equal(simdev_device_reset(1), 0);
}

/* A context closed on a lost device leaves no registry entry: its
 * generation is free again after the device's reset. */
static void test_a_context_closed_on_a_lost_device_frees_its_generation(void **state)
{
    (void)state;
    struct simdev_config topo = ts_small_config();
    topo.watchdog_ms = 300;
    ts_device_setup_config(&topo);
    const uint64_t g = 0x77770ull;
    int rc;
    struct simpler_context *a = km_open_as(0, g, &rc);
    assert_int_equal(rc, 0);
    size_t bytes;
    void *image = pm_image(&bytes);
    int32_t id;
    assert_int_equal(simpler_kernel_mode_prepare_callable(a, image, bytes, &id), 0);
    simdev_stream_t s = ts_new_stream();
    struct km_bufs buf;
    km_bufs_alloc(&buf, 1024, 0.0f);
    struct km_args args;
    km_args_make(&args, &buf, 2.0f, 0.5f, 0, 1);
    args.s[3] = PM_FLAG_GATE;
    assert_int_equal(simpler_kernel_mode_launch(a, 0, &args.args, s), 0);
    ts_gate_wait_arrivals(&pm_gate, 1);
    assert_int_equal(simdev_stream_sync(s), PTO_RUNTIME_ERR_DEVICE_LOST);
    ts_gate_open(&pm_gate);
    assert_int_equal(simpler_finalize_device(a), 0);
    assert_int_equal(simpler_destroy_device_context(a), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_device_reset(0), 0);
    topo.watchdog_ms = 0;
    ts_device_setup_config(&topo);
    pm_observers_reset();
    struct simpler_context *b = km_open_as(0, g, &rc);
    assert_int_equal(rc, 0); /* -1003: the closed context's entry outlived it */
    assert_int_equal(simpler_kernel_mode_prepare_callable(b, image, bytes, &id), 0);
    simpler_callable_free(image);
    pm_close(b);
}

/* The caller's wait for the round failing to enqueue (after the launch
 * committed) is tried again: launch succeeds and the caller's stream does
 * wait for the round. */
static void test_a_committed_launch_keeps_the_callers_stream_behind_its_round(void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    simdev_stream_t s = ts_new_stream();
    struct km_bufs buf;
    km_bufs_alloc(&buf, 1024, 0.0f);
    struct km_args args;
    km_args_make(&args, &buf, 2.0f, 0.5f, 0, 1);
    args.s[3] = PM_FLAG_GATE;
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_WAIT, 4, INJECTED), 0); /* caller's wait */
    int rc = simpler_kernel_mode_launch(ctx, 0, &args.args, s);
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_int_equal(rc, 0); /* INJECTED: a launch whose round runs reported a failure */
    ts_gate_wait_arrivals(&pm_gate, 1);
    /* The round is held in its kernel: the caller's stream must still be
     * waiting for it (0 here: its sync would return while the round runs). */
    int query = simdev_stream_query(s);
    ts_gate_open(&pm_gate);
    assert_int_equal(query, PTO_RUNTIME_ERR_NOT_READY);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&buf, 0.0f, 2.0f, 0.5f, 1.0f));
    km_bufs_free(&buf);
    assert_int_equal(simdev_stream_destroy(s), 0);
    pm_close(ctx);
}

/* A refused launch leaves no error on the context's streams, even one its
 * own first ops picked up: the next launch, on another stream, works. */
static void test_a_refused_launch_leaves_no_error_for_the_next_launch(void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    simdev_stream_t s = ts_new_stream(), s2 = ts_new_stream();
    struct km_bufs buf;
    km_bufs_alloc(&buf, 1024, 0.0f);
    struct km_args args;
    km_args_make(&args, &buf, 2.0f, 0.5f, 0, 1);
    /* round begin fails as it runs, then the program fails to enqueue */
    assert_int_equal(simdev_fault_inject_exec(0, SIMDEV_OP_LAUNCH, 1, -992), 0);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_LAUNCH, 3, -993), 0);
    int rc = simpler_kernel_mode_launch(ctx, 0, &args.args, s);
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_int_equal(rc, -993);
    assert_int_equal(simdev_stream_sync(s), 0); /* only its start record was on it */
    assert_true(km_bufs_untouched(&buf));          /* refused whole */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &args.args, s2), 0);
    /* -992: the refused launch's error stayed on the context's AICPU stream. */
    assert_int_equal(simdev_stream_sync(s2), 0);
    assert_true(km_bufs_hold(&buf, 0.0f, 2.0f, 0.5f, 1.0f));
    km_bufs_free(&buf);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_stream_destroy(s2), 0);
    pm_close(ctx);
}

/* A failing round whose aicpu_done hand-off record failed to enqueue once:
 * its error reaches its own caller and ends there. */
static void test_a_failed_rounds_error_never_reaches_the_next_launch(void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    simdev_stream_t s = ts_new_stream(), s2 = ts_new_stream();
    struct km_bufs b1, b2;
    km_bufs_alloc(&b1, 1024, 0.0f);
    km_bufs_alloc(&b2, 1024, 0.0f);
    struct km_args args;
    km_args_make(&args, &b1, 2.0f, 0.5f, 321, 1);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_RECORD, 4, INJECTED), 0); /* aicpu_done */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &args.args, s), 0);
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_int_equal(simdev_stream_sync(s), -321);
    km_args_make(&args, &b2, 2.0f, 0.5f, 0, 2);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &args.args, s2), 0);
    assert_int_equal(simdev_stream_sync(s2), 0); /* -321: the error outlived its round */
    assert_true(km_bufs_hold(&b2, 0.0f, 2.0f, 0.5f, 1.0f));
    km_bufs_free(&b1);
    km_bufs_free(&b2);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_stream_destroy(s2), 0);
    pm_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(test_two_eager_launches_compute_exactly_and_their_args_are_free_at_return),
        SIMPLER_TEST(test_a_round_marks_each_protocol_point_where_it_happens),
        SIMPLER_TEST(test_a_failing_round_reaches_the_callers_sync_and_the_next_launch_works),
        SIMPLER_TEST(test_good_failing_good_without_a_sync_skips_the_third_round_whole),
        SIMPLER_TEST(test_rounds_without_scalars_or_without_any_argument_run),
        SIMPLER_TEST(test_one_launch_enqueues_exactly_the_chain_and_nothing_else),
        SIMPLER_TEST(test_cross_mode_calls_are_invalid_state_both_ways),
        SIMPLER_TEST_WITH(test_only_a_lost_device_poisons_the_context_and_close_still_releases,
                          NULL, pm_teardown),
        SIMPLER_TEST(test_init_fails_cleanly_at_every_device_operation_and_a_retry_works),
        SIMPLER_TEST(test_a_failed_init_with_a_live_generation_leaves_the_other_context_alone),
        SIMPLER_TEST_WITH(test_a_context_closed_on_a_lost_device_frees_its_generation,
                          pm_setup, pm_teardown),
        SIMPLER_TEST_WITH(test_a_committed_launch_keeps_the_callers_stream_behind_its_round,
                          ts_device_setup, pm_teardown),
        SIMPLER_TEST(test_a_refused_launch_leaves_no_error_for_the_next_launch),
        SIMPLER_TEST(test_a_failed_rounds_error_never_reaches_the_next_launch),
        SIMPLER_TEST(test_prepare_launch_and_finalize_fail_cleanly_and_a_retry_works),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
