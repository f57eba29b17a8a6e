/*
 * test_orchestration.c — the orchestration API, one call at a time.
 *
 * Owns: what each orchestration call does, seen through runs of the device
 * runtime (runtime/runtime.h): task ids, materialised outputs and
 * zero-fill, argument checks and the latched first error, fatal and status,
 * the geometry queries, dummy tasks, explicit dependencies and MANUAL
 * scopes, element reads and writes and what they wait for, and exactly
 * which edges the TensorMap infers (RAW, WAW, WAR, disjoint slices, NO_DEP,
 * the MANUAL_DEP flag). Ring and scope pressure is test_rings.c's.
 *
 * Orchestrations record what calls returned into the globals below; the
 * test reads them after the run's stream has drained (the sync orders the
 * reads). Kernels that may run at once only touch disjoint elements or
 * atomics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "rt_support.h"
#include "test_support.h"

#define LOG_CAP 64

/* ---------------------------------------------------------------- kernels */

enum { K_COUNT, K_FILL, K_COPY, K_LOG, K_DESCRIBE, K_NULL, K_KERNELS };

/* t0 log (u64[LOG_CAP]: [0] is the cursor); scalar tag: appends the tag. */
static void kernel_log(int64_t *args)
{
    uint64_t *log = simpler_kernel_data(args, 0);
    uint64_t tag = simpler_kernel_scalar_u64(args, 1);
    uint64_t at = atomic_fetch_add_explicit((_Atomic uint64_t *)log, 1, memory_order_relaxed);
    if (at + 1 < LOG_CAP)
        log[at + 1] = tag;
}

/* t0, t1 any tensors, t2 out (u8[256]): the two descriptors as received. */
static void kernel_describe(int64_t *args)
{
    uint8_t *out = simpler_kernel_data(args, 2);
    memcpy(out, simpler_kernel_tensor(args, 0), sizeof(struct simpler_tensor));
    memcpy(out + 128, simpler_kernel_tensor(args, 1), sizeof(struct simpler_tensor));
}

/* func_id K_NULL is inside the table but has no kernel. */
static const simpler_kernel_fn g_kernels[K_KERNELS] = {
    tk_count_i64, tk_fill_i32, tk_copy_i32, kernel_log, kernel_describe, NULL,
};

/* ----------------------------------------------------------------- records */

static int g_rc[32];
static uint64_t g_ids[32];
static struct simpler_task_result g_res;
static int g_case;

static void records_reset(void)
{
    for (int i = 0; i < 32; i++) {
        g_rc[i] = 1; /* no call returns 1 */
        g_ids[i] = SIMPLER_TASK_ID_NONE;
    }
    memset(&g_res, 0, sizeof g_res);
}

/* ------------------------------------------------------- task builders */

static int count_task(struct simpler_orch *rt, const struct simpler_tensor *counter)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, counter);
    return simpler_submit_aiv(rt, K_COUNT, &ta, NULL);
}

static int fill_task(struct simpler_orch *rt, const struct simpler_tensor *dst, int32_t s,
                     uint64_t *id)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output_existing(&ta, dst);
    simpler_task_args_add_scalar(&ta, (uint64_t)(uint32_t)s);
    int rc = simpler_submit_aiv(rt, K_FILL, &ta, &r);
    if (id)
        *id = rc ? SIMPLER_TASK_ID_NONE : r.task_id;
    return rc;
}

static int copy_task(struct simpler_orch *rt, const struct simpler_tensor *src,
                     const struct simpler_tensor *dst, uint64_t *id)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, src);
    simpler_task_args_add_output_existing(&ta, dst);
    int rc = simpler_submit_aiv(rt, K_COPY, &ta, &r);
    if (id)
        *id = rc ? SIMPLER_TASK_ID_NONE : r.task_id;
    return rc;
}

/* A logging task with explicit dependencies. */
static int log_task(struct simpler_orch *rt, const struct simpler_tensor *log, uint64_t tag,
                    const uint64_t *deps, uint32_t ndeps, uint64_t *id)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, log);
    simpler_task_args_add_scalar(&ta, tag);
    simpler_task_args_set_dependencies(&ta, deps, ndeps);
    int rc = simpler_submit_aiv(rt, K_LOG, &ta, &r);
    *id = rc ? SIMPLER_TASK_ID_NONE : r.task_id;
    return rc;
}

static struct simpler_tensor slice_of(const struct simpler_tensor *t, uint64_t start,
                                      uint64_t stop)
{
    struct simpler_tensor v = {0};
    memset(&v, 0, sizeof v);
    simpler_tensor_slice(&v, t, 0, start, stop, 1);
    return v;
}

/* --------------------------------------------------------- device buffers */

/* A run's arguments: `n` device buffers, each a 1-D tensor. */
struct bufs {
    void *dev[4];
    uint32_t n;
    struct simpler_orch_args args;
};

static void bufs_add(struct bufs *b, uint64_t count, uint32_t dtype)
{
    size_t bytes = count * simpler_dtype_size(dtype);
    b->dev[b->n] = ts_dev_alloc(bytes);
    b->args.tensors[b->n] = ts_dev_tensor_1d(b->dev[b->n], count, dtype);
    b->n++;
    b->args.tensor_count = b->n;
}

/* Fills buffer i with the byte `pattern`. */
static void bufs_poison(struct bufs *b, uint32_t i, int pattern)
{
    size_t bytes = b->args.tensors[i].buffer_bytes;
    void *host = malloc(bytes);
    assert_non_null(host);
    memset(host, pattern, bytes);
    ts_to_dev(b->dev[i], host, bytes);
    free(host);
}

static void bufs_close(struct bufs *b)
{
    for (uint32_t i = 0; i < b->n; i++)
        assert_int_equal(simdev_free(b->dev[i]), 0);
}

/* Fills the whole arena with `pattern`, so a heap buffer nobody wrote is
 * recognisable. */
static void poison_arena(struct rt_harness *h, int pattern)
{
    void *host = malloc(h->arena_bytes);
    assert_non_null(host);
    memset(host, pattern, h->arena_bytes);
    ts_to_dev(h->arena, host, h->arena_bytes);
    free(host);
}

static int run(struct rt_harness *h, simpler_orch_entry_fn entry, struct bufs *b)
{
    int rc = rth_run(h, entry, g_kernels, K_KERNELS, b ? &b->args : NULL);
    assert_int_equal(h->result.status, rc); /* the result block agrees with the stream */
    return rc;
}

/* Reads the LOG_CAP log back; returns the entry count. */
static uint64_t read_log(struct bufs *b, uint32_t i, uint64_t *entries)
{
    uint64_t log[LOG_CAP];
    ts_from_dev(log, b->dev[i], sizeof log);
    memcpy(entries, log + 1, (LOG_CAP - 1) * sizeof *entries);
    return log[0];
}

static int position_of(const uint64_t *entries, uint64_t n, uint64_t tag)
{
    for (uint64_t i = 0; i < n; i++)
        if (entries[i] == tag)
            return (int)i;
    return -1;
}

/* -------------------------------------------------------------- task ids */

static void ids_at_every_depth(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    struct simpler_task_args ta;
    struct simpler_task_result r;
    int n = 0;
    simpler_task_args_init(&ta);
#define SUBMIT()                                                                                 \
    do {                                                                                         \
        g_rc[n] = simpler_submit_dummy(rt, &ta, &r);                                             \
        g_ids[n++] = r.task_id;                                                                  \
    } while (0)
    SUBMIT();                                   /* depth 0 */
    SUBMIT();
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO); /* depth 1 */
    SUBMIT();
    SUBMIT();
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO); /* depth 2 */
    SUBMIT();
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO); /* depth 3 */
    SUBMIT();
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO); /* depth 4: shares ring 3 */
    SUBMIT();
    simpler_scope_end(rt);
    simpler_scope_end(rt);
    simpler_scope_end(rt);
    SUBMIT();                                   /* depth 1 again */
    simpler_scope_end(rt);
    SUBMIT();                                   /* depth 0 again */
#undef SUBMIT
}

static void submit_returns_ids_in_order_tagged_with_the_ring_of_the_scope_depth(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    records_reset();
    assert_int_equal(run(&h, ids_at_every_depth, NULL), 0);
    const uint64_t expect[] = {
        0, 1,                                   /* ring 0 */
        (1ull << 48) | 0, (1ull << 48) | 1,     /* ring 1 */
        (2ull << 48) | 0,                       /* ring 2 */
        (3ull << 48) | 0, (3ull << 48) | 1,     /* depths 3 and 4 share ring 3 */
        (1ull << 48) | 2,                       /* ring 1 continues after the inner scopes */
        2,                                      /* ring 0 continues */
    };
    for (int i = 0; i < 9; i++) {
        assert_int_equal(g_rc[i], 0);
        if (g_ids[i] != expect[i])
            fail_msg("submit %d returned id %#llx, expected %#llx", i,
                     (unsigned long long)g_ids[i], (unsigned long long)expect[i]);
    }
    assert_int_equal(h.result.tasks_submitted, 9);
    assert_int_equal(h.result.tasks_completed, 9); /* dummies complete too */
    rth_close(&h);
}

/* ------------------------------------------------------------ outputs */

static void describe_outputs(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const uint64_t shape0[2] = {4, 8}, shape1[1] = {3};
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output(&ta, shape0, 2, SIMPLER_DTYPE_F16, 0);
    simpler_task_args_add_output(&ta, shape1, 1, SIMPLER_DTYPE_I64, 1);
    simpler_task_args_add_output_existing(&ta, &args->tensors[0]);
    g_rc[0] = simpler_submit_aiv(rt, K_DESCRIBE, &ta, &g_res);
}

static void outputs_have_the_requested_shape_and_dtype_and_carry_the_producer_id(void **state)
{
    (void)state;
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 0);
    bufs_add(&b, 256, SIMPLER_DTYPE_U8);
    records_reset();
    assert_int_equal(run(&h, describe_outputs, &b), 0);
    assert_int_equal(g_rc[0], 0);
    assert_int_equal(g_res.task_id, 0);
    assert_int_equal(g_res.output_count, 2); /* 3: the OUTPUT_EXISTING was counted */

    const struct simpler_tensor *o0 = &g_res.outputs[0], *o1 = &g_res.outputs[1];
    uint64_t lo = (uint64_t)(uintptr_t)h.arena, hi = lo + h.arena_bytes;
    assert_int_equal(o0->ndims, 2);
    assert_int_equal(o0->shape[0], 4);
    assert_int_equal(o0->shape[1], 8);
    assert_int_equal(o0->stride[0], 8); /* row-major */
    assert_int_equal(o0->stride[1], 1);
    assert_int_equal(o0->dtype, SIMPLER_DTYPE_F16);
    assert_int_equal(o0->buffer_bytes, 64);
    assert_int_equal(o0->start_offset, 0);
    assert_int_equal(o0->producer_task_id, g_res.task_id);
    assert_int_equal(o0->address_space, SIMPLER_MEM_DEVICE);
    assert_int_equal(o0->flags, 0);
    assert_true(o0->addr >= lo && o0->addr + o0->buffer_bytes <= hi); /* in the arena's heap */
    assert_int_equal(o0->addr % 64, 0);

    assert_int_equal(o1->ndims, 1);
    assert_int_equal(o1->shape[0], 3);
    assert_int_equal(o1->stride[0], 1);
    assert_int_equal(o1->dtype, SIMPLER_DTYPE_I64);
    assert_int_equal(o1->buffer_bytes, 24);
    assert_int_equal(o1->producer_task_id, g_res.task_id);
    /* after the first output, not overlapping it */
    assert_true(o1->addr >= o0->addr + o0->buffer_bytes && o1->addr + 24 <= hi);
    assert_int_equal(o1->addr % 64, 0);

    /* the kernel received exactly the descriptors submit returned */
    uint8_t seen[256];
    ts_from_dev(seen, b.dev[0], sizeof seen);
    assert_memory_equal(seen, o0, sizeof *o0);
    assert_memory_equal(seen + 128, o1, sizeof *o1);
    bufs_close(&b);
    rth_close(&h);
}

/* Copies a zero-filled and a plain output of 64 i32 into dst[0:64) and
 * dst[64:128). */
static void copy_fresh_outputs(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const uint64_t shape[1] = {64};
    for (int i = 0; i < 2; i++) {
        struct simpler_tensor dst = slice_of(&args->tensors[0], 64 * (uint64_t)i,
                                             64 * (uint64_t)i + 64);
        struct simpler_task_args ta;
        simpler_task_args_init(&ta);
        simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_I32, i == 0);
        simpler_task_args_add_output_existing(&ta, &dst);
        g_rc[i] = simpler_submit_aiv(rt, K_COPY, &ta, NULL);
    }
}

static void zero_fill_output_reads_as_zero_in_its_kernel(void **state)
{
    (void)state;
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 0);
    poison_arena(&h, 0xab);
    bufs_add(&b, 128, SIMPLER_DTYPE_I32);
    bufs_poison(&b, 0, 0x11);
    records_reset();
    assert_int_equal(run(&h, copy_fresh_outputs, &b), 0);
    assert_int_equal(g_rc[0], 0);
    assert_int_equal(g_rc[1], 0);
    int32_t seen[128];
    ts_from_dev(seen, b.dev[0], sizeof seen);
    for (int k = 0; k < 64; k++)
        assert_int_equal(seen[k], 0); /* 0xabababab: zero_fill was ignored */
    /* the plain output shows the poison: the heap is not zeroed anyway, so
     * the zeros above came from zero_fill */
    for (int k = 64; k < 128; k++)
        assert_int_equal((uint32_t)seen[k], 0xababababu);
    rth_close(&h);
    bufs_close(&b);
}

/* ------------------------------------------------------- invalid arguments */

enum bad_case {
    BAD_UNKNOWN_FUNC,
    BAD_FUNC_BEYOND_TABLE_LIMIT,
    BAD_NULL_KERNEL_SLOT,
    BAD_BLOCK_NUM_0,
    BAD_TOO_MANY_TENSORS,
    BAD_TOO_MANY_SCALARS,
    BAD_TOO_MANY_DEPS,
    BAD_INPUT_DTYPE,
    BAD_OUTPUT_DTYPE,
    BAD_INPUT_NDIMS_0,
    BAD_OUTPUT_NDIMS_0,
    BAD_INPUT_ZERO_DIM,
    BAD_DEP_ON_FUTURE_ID,
    BAD_DEP_ON_UNKNOWN_RING,
    BAD_ARG_KIND,
    BAD_NULL_ARGS,
    BAD_CASES
};

static const char *const g_bad_names[BAD_CASES] = {
    "unknown func_id",        "func_id beyond the table limit", "NULL kernel slot",
    "block_num 0",            "33 tensors",                     "17 scalars",
    "33 dependencies",        "input dtype 99",                 "output dtype COUNT",
    "input ndims 0",          "output ndims 0",                 "input dim of 0",
    "dependency on a future id", "dependency on ring 9",        "arg kind 99",
    "NULL args",
};

/* Submits the bad task of g_case; returns what submit returned. */
static int submit_bad(struct simpler_orch *rt, const struct simpler_tensor *counter,
                      uint64_t last_id)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    struct simpler_tensor bad = *counter;
    const uint64_t one = 1;
    simpler_task_args_init(&ta);
    int32_t func = K_COUNT;
    switch (g_case) {
    case BAD_UNKNOWN_FUNC:
        func = K_KERNELS; /* one past the table */
        break;
    case BAD_FUNC_BEYOND_TABLE_LIMIT:
        func = SIMPLER_MAX_FUNC_IDS + 5;
        break;
    case BAD_NULL_KERNEL_SLOT:
        func = K_NULL;
        break;
    case BAD_BLOCK_NUM_0:
        simpler_task_args_set_block_num(&ta, 0);
        break;
    case BAD_TOO_MANY_TENSORS:
        for (int i = 0; i < SIMPLER_TASK_MAX_TENSORS + 1; i++)
            simpler_task_args_add_input(&ta, counter);
        break;
    case BAD_TOO_MANY_SCALARS:
        for (int i = 0; i < SIMPLER_TASK_MAX_SCALARS + 1; i++)
            simpler_task_args_add_scalar(&ta, 1);
        break;
    case BAD_TOO_MANY_DEPS: {
        uint64_t deps[SIMPLER_TASK_MAX_DEPS + 1] = {0};
        simpler_task_args_set_dependencies(&ta, deps, SIMPLER_TASK_MAX_DEPS + 1);
        break;
    }
    case BAD_INPUT_DTYPE:
        bad.dtype = 99;
        simpler_task_args_add_input(&ta, &bad);
        break;
    case BAD_OUTPUT_DTYPE:
        simpler_task_args_add_output(&ta, &one, 1, SIMPLER_DTYPE_COUNT, 0);
        break;
    case BAD_INPUT_NDIMS_0:
        bad.ndims = 0;
        simpler_task_args_add_input(&ta, &bad);
        break;
    case BAD_OUTPUT_NDIMS_0:
        simpler_task_args_add_output(&ta, &one, 0, SIMPLER_DTYPE_I32, 0);
        break;
    case BAD_INPUT_ZERO_DIM:
        bad.shape[0] = 0;
        simpler_task_args_add_input(&ta, &bad);
        break;
    case BAD_DEP_ON_FUTURE_ID: {
        uint64_t next = last_id + 1; /* the id the next task on ring 0 would get */
        simpler_task_args_set_dependencies(&ta, &next, 1);
        break;
    }
    case BAD_DEP_ON_UNKNOWN_RING: {
        uint64_t foreign = 9ull << 48;
        simpler_task_args_set_dependencies(&ta, &foreign, 1);
        break;
    }
    case BAD_ARG_KIND:
        simpler_task_args_add_input(&ta, counter);
        ta.tensors[0].kind = 99;
        break;
    case BAD_NULL_ARGS: {
        struct simpler_mixed_kernels k = {SIMPLER_NO_KERNEL, K_COUNT, SIMPLER_NO_KERNEL};
        return rt->ops->submit(rt, &k, NULL, &r);
    }
    }
    return simpler_submit_aiv(rt, func, &ta, &r);
}

static void good_bad_good(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *counter = &args->tensors[0];
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, counter);
    g_rc[0] = simpler_submit_aiv(rt, K_COUNT, &ta, &r);
    g_rc[1] = submit_bad(rt, counter, r.task_id);
    g_rc[2] = count_task(rt, counter); /* valid, but after the error */
    g_rc[3] = rt->ops->status(rt);
}

static void each_malformed_submit_fails_with_invalid_args_and_later_submits_do_nothing(
    void **state)
{
    (void)state;
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 0);
    bufs_add(&b, 1, SIMPLER_DTYPE_I64);
    for (g_case = 0; g_case < BAD_CASES; g_case++) {
        const char *name = g_bad_names[g_case];
        bufs_poison(&b, 0, 0);
        records_reset();
        int status = run(&h, good_bad_good, &b);
        int64_t counter;
        ts_from_dev(&counter, b.dev[0], sizeof counter);
        if (status != -SIMPLER_ORCH_ERR_INVALID_ARGS || g_rc[0] != 0 ||
            g_rc[1] != -SIMPLER_ORCH_ERR_INVALID_ARGS ||
            g_rc[2] != -SIMPLER_ORCH_ERR_INVALID_ARGS ||
            g_rc[3] != -SIMPLER_ORCH_ERR_INVALID_ARGS)
            fail_msg("%s: run %d, submits %d %d %d, status %d (expected -5 from the bad "
                     "submit on)", name, status, g_rc[0], g_rc[1], g_rc[2], g_rc[3]);
        /* 2: the submit after the error was not a no-op */
        if (h.result.tasks_submitted != 1)
            fail_msg("%s: tasks_submitted %llu, expected 1", name,
                     (unsigned long long)h.result.tasks_submitted);
        /* the good task before the error may or may not have run when the run
         * stopped; the one after it never does */
        if (counter > 1)
            fail_msg("%s: counter %lld: the task submitted after the error ran", name,
                     (long long)counter);
    }
    rth_close(&h);
    bufs_close(&b);
}

/* --------------------------------------------------- fatal, status, geometry */

static void fatal_then_submit(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    g_rc[0] = rt->ops->status(rt);
    g_rc[1] = count_task(rt, &args->tensors[0]);
    rt->ops->fatal(rt);
    g_rc[2] = rt->ops->status(rt);
    g_rc[3] = count_task(rt, &args->tensors[0]);
    g_rc[4] = simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
}

static void fatal_fails_the_run_with_explicit_fatal_and_later_submits_return_it(void **state)
{
    (void)state;
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 0);
    bufs_add(&b, 1, SIMPLER_DTYPE_I64);
    records_reset();
    assert_int_equal(run(&h, fatal_then_submit, &b), -SIMPLER_ORCH_ERR_EXPLICIT_FATAL);
    assert_int_equal(g_rc[0], 0); /* status before any error */
    assert_int_equal(g_rc[1], 0);
    assert_int_equal(g_rc[2], -SIMPLER_ORCH_ERR_EXPLICIT_FATAL);
    assert_int_equal(g_rc[3], -SIMPLER_ORCH_ERR_EXPLICIT_FATAL);
    assert_int_equal(g_rc[4], -SIMPLER_ORCH_ERR_EXPLICIT_FATAL); /* a scope op too */
    assert_int_equal(h.result.tasks_submitted, 1);
    rth_close(&h);
    bufs_close(&b);
}

static void first_error_then_fatal(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_set_block_num(&ta, 0);
    g_rc[0] = rt->ops->status(rt);
    g_rc[1] = simpler_submit_aiv(rt, K_COUNT, &ta, NULL);
    g_rc[2] = rt->ops->status(rt);
    rt->ops->fatal(rt);
    g_rc[3] = rt->ops->status(rt);
    g_rc[4] = count_task(rt, &args->tensors[0]);
}

static void status_op_returns_0_then_the_first_latched_error(void **state)
{
    (void)state;
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 0);
    bufs_add(&b, 1, SIMPLER_DTYPE_I64);
    records_reset();
    assert_int_equal(run(&h, first_error_then_fatal, &b), -SIMPLER_ORCH_ERR_INVALID_ARGS);
    assert_int_equal(g_rc[0], 0);
    assert_int_equal(g_rc[1], -SIMPLER_ORCH_ERR_INVALID_ARGS);
    assert_int_equal(g_rc[2], -SIMPLER_ORCH_ERR_INVALID_ARGS);
    /* -9: a later fatal replaced the first error */
    assert_int_equal(g_rc[3], -SIMPLER_ORCH_ERR_INVALID_ARGS);
    assert_int_equal(g_rc[4], -SIMPLER_ORCH_ERR_INVALID_ARGS);
    assert_int_equal(h.result.tasks_submitted, 0);
    rth_close(&h);
    bufs_close(&b);
}

static void geometry(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    g_rc[0] = (int)rt->ops->aic_count(rt);
    g_rc[1] = (int)rt->ops->aiv_count(rt);
    g_rc[2] = (int)rt->ops->cluster_count(rt);
}

static void geometry_queries_report_1_aic_2_aiv_1_cluster_on_the_fixture(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    records_reset();
    assert_int_equal(run(&h, geometry, NULL), 0);
    assert_int_equal(g_rc[0], 1);
    assert_int_equal(g_rc[1], 2);
    assert_int_equal(g_rc[2], 1); /* 1 AIC + 2 AIV = one cluster */
    rth_close(&h);
}

/* --------------------------------------------- dummies, explicit deps, MANUAL */

static void chain_through_a_dummy(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *log = &args->tensors[0];
    struct simpler_task_args ta;
    struct simpler_task_result d;
    simpler_scope_begin(rt, SIMPLER_SCOPE_MANUAL);
    g_rc[0] = log_task(rt, log, 1, NULL, 0, &g_ids[0]);
    simpler_task_args_init(&ta);
    simpler_task_args_set_dependencies(&ta, &g_ids[0], 1);
    g_rc[1] = simpler_submit_dummy(rt, &ta, &d);
    g_ids[1] = d.task_id;
    g_rc[2] = log_task(rt, log, 2, &g_ids[1], 1, &g_ids[2]);
    simpler_scope_end(rt);
}

static void a_dummy_task_completes_and_orders_its_dependents(void **state)
{
    (void)state;
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 16);
    bufs_add(&b, LOG_CAP, SIMPLER_DTYPE_U64);
    for (int round = 0; round < 20; round++) {
        bufs_poison(&b, 0, 0);
        records_reset();
        assert_int_equal(run(&h, chain_through_a_dummy, &b), 0);
        for (int i = 0; i < 3; i++)
            assert_int_equal(g_rc[i], 0);
        assert_int_equal(h.result.tasks_completed, 3); /* 2: the dummy never completed */
        assert_int_equal(h.result.subtasks_dispatched, 2); /* the dummy took no core */
        uint64_t entries[LOG_CAP - 1];
        assert_int_equal(read_log(&b, 0, entries), 2);
        assert_int_equal(entries[0], 1); /* 2 first: B did not wait for A through D */
        assert_int_equal(entries[1], 2);
        assert_int_equal(h.result.edges, 2);
        assert_true(rth_has_edge(&h, g_ids[0], g_ids[1]));
        assert_true(rth_has_edge(&h, g_ids[1], g_ids[2]));
    }
    rth_close(&h);
    bufs_close(&b);
}

/* A dummy allocating a zeroed output that a kernel then copies out: the
 * creator edge orders the kernel after the dummy. */
static void dummy_allocates(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const uint64_t shape[1] = {16};
    struct simpler_task_args ta;
    struct simpler_task_result z;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_I32, 1);
    g_rc[0] = simpler_submit_dummy(rt, &ta, &z);
    g_rc[1] = copy_task(rt, &z.outputs[0], &args->tensors[0], &g_ids[1]);
    g_ids[0] = z.task_id;
}

static void a_dummy_task_allocates_a_zeroed_output_for_later_tasks(void **state)
{
    (void)state;
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 16);
    poison_arena(&h, 0xab);
    bufs_add(&b, 16, SIMPLER_DTYPE_I32);
    bufs_poison(&b, 0, 0x11);
    records_reset();
    assert_int_equal(run(&h, dummy_allocates, &b), 0);
    assert_int_equal(g_rc[0], 0);
    assert_int_equal(g_rc[1], 0);
    int32_t seen[16];
    ts_from_dev(seen, b.dev[0], sizeof seen);
    for (int k = 0; k < 16; k++)
        assert_int_equal(seen[k], 0); /* 0x11111111: the copy never ran; 0xab..: not zeroed */
    assert_int_equal(h.result.edges, 1);
    assert_int_equal(h.edges[0].producer, g_ids[0]);
    assert_int_equal(h.edges[0].consumer, g_ids[1]);
    assert_int_equal(h.edges[0].sources, RT_EDGE_CREATOR);
    rth_close(&h);
    bufs_close(&b);
}

/*
 * MANUAL scope: every task INOUTs the same log, which AUTO would chain;
 * here only the explicit dependencies count. Tags: diamond 0 -> {1, 2} -> 3,
 * then a chain 4 -> 5 -> ... -> 9 off 3, then 10 producing an output that
 * 11 reads with an explicit dependency.
 */
static void manual_graph(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *log = &args->tensors[0];
    uint64_t *id = g_ids;
    int n = 0;
    g_rc[20] = simpler_scope_begin(rt, SIMPLER_SCOPE_MANUAL);
    g_rc[n] = log_task(rt, log, 0, NULL, 0, &id[0]), n++;
    g_rc[n] = log_task(rt, log, 1, &id[0], 1, &id[1]), n++;
    g_rc[n] = log_task(rt, log, 2, &id[0], 1, &id[2]), n++;
    g_rc[n] = log_task(rt, log, 3, &id[1], 2, &id[3]), n++; /* deps 1 and 2 */
    for (int t = 4; t < 10; t++)
        g_rc[n] = log_task(rt, log, (uint64_t)t, &id[t - 1], 1, &id[t]), n++;

    const uint64_t shape[1] = {4};
    struct simpler_task_args ta;
    struct simpler_task_result made;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_I32, 0);
    simpler_task_args_add_scalar(&ta, 40);
    g_rc[n++] = simpler_submit_aiv(rt, K_FILL, &ta, &made);
    id[10] = made.task_id;
    struct simpler_tensor dst = slice_of(&args->tensors[1], 0, 4);
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &made.outputs[0]);
    simpler_task_args_add_output_existing(&ta, &dst);
    simpler_task_args_set_dependencies(&ta, &id[10], 1);
    struct simpler_task_result r;
    g_rc[n++] = simpler_submit_aiv(rt, K_COPY, &ta, &r);
    id[11] = r.task_id;
    simpler_scope_end(rt);
}

static void explicit_dependencies_order_tasks_in_a_manual_scope_and_nothing_else_does(
    void **state)
{
    (void)state;
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 64);
    bufs_add(&b, LOG_CAP, SIMPLER_DTYPE_U64);
    bufs_add(&b, 4, SIMPLER_DTYPE_I32);
    for (int round = 0; round < 20; round++) {
        bufs_poison(&b, 0, 0);
        bufs_poison(&b, 1, 0x11);
        records_reset();
        assert_int_equal(run(&h, manual_graph, &b), 0);
        assert_int_equal(g_rc[20], 0);
        for (int i = 0; i < 12; i++)
            assert_int_equal(g_rc[i], 0);
        uint64_t e[LOG_CAP - 1];
        assert_int_equal(read_log(&b, 0, e), 10);
        int pos[10];
        for (uint64_t t = 0; t < 10; t++) {
            pos[t] = position_of(e, 10, t);
            assert_true(pos[t] >= 0); /* a task logged twice or never */
        }
        assert_int_equal(pos[0], 0);
        assert_true(pos[1] < pos[3] && pos[2] < pos[3]);
        for (int t = 3; t < 10; t++)
            assert_int_equal(pos[t], t); /* the chain runs strictly in order */
        int32_t copied[4];
        ts_from_dev(copied, b.dev[1], sizeof copied);
        for (int k = 0; k < 4; k++)
            assert_int_equal(copied[k], 40 + k); /* 0x11111111: copied before filled */

        /* 1 + 1 + 2 + 6 + 1 explicit edges; more: AUTO inference leaked into
         * MANUAL (every log task INOUTs the same tensor) */
        assert_int_equal(h.result.edges, 11);
        assert_int_equal(h.result.edges_logged, 11);
        for (int i = 0; i < 11; i++)
            assert_int_equal(h.edges[i].sources, RT_EDGE_EXPLICIT); /* no creator edge either */
        assert_true(rth_has_edge(&h, g_ids[0], g_ids[1]));
        assert_true(rth_has_edge(&h, g_ids[0], g_ids[2]));
        assert_true(rth_has_edge(&h, g_ids[1], g_ids[3]));
        assert_true(rth_has_edge(&h, g_ids[2], g_ids[3]));
        for (int t = 4; t < 10; t++)
            assert_true(rth_has_edge(&h, g_ids[t - 1], g_ids[t]));
        assert_true(rth_has_edge(&h, g_ids[10], g_ids[11]));
    }
    rth_close(&h);
    bufs_close(&b);
}

/* ------------------------------------------------------- element access */

static void read_after_producers(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const uint64_t shape[2] = {2, 4};
    struct simpler_task_args ta;
    struct simpler_task_result made;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output(&ta, shape, 2, SIMPLER_DTYPE_I32, 0);
    simpler_task_args_add_scalar(&ta, 100);
    g_rc[0] = simpler_submit_aiv(rt, K_FILL, &ta, &made);
    const uint64_t at[2] = {1, 2}; /* element 1 * 4 + 2 = 6 */
    int32_t value = 0;
    g_rc[1] = rt->ops->read_element(rt, &made.outputs[0], at, &value);
    g_rc[2] = value;

    const struct simpler_tensor *ext = &args->tensors[0];
    g_rc[3] = fill_task(rt, ext, 500, NULL);
    const uint64_t three = 3;
    value = 0;
    g_rc[4] = rt->ops->read_element(rt, ext, &three, &value);
    g_rc[5] = value;
}

static void read_element_waits_for_the_producer_and_returns_its_value(void **state)
{
    (void)state;
    TS_SKIP_UNDER_HBG("a task's output is not host visible");
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 0);
    poison_arena(&h, 0xab);
    bufs_add(&b, 8, SIMPLER_DTYPE_I32);
    bufs_poison(&b, 0, 0x11);
    records_reset();
    assert_int_equal(run(&h, read_after_producers, &b), 0);
    assert_int_equal(g_rc[0], 0);
    assert_int_equal(g_rc[1], 0);
    /* 0xabababab: read before the kernel ran (no wait for the creator) */
    assert_int_equal(g_rc[2], 106);
    assert_int_equal(g_rc[3], 0);
    assert_int_equal(g_rc[4], 0);
    assert_int_equal(g_rc[5], 503); /* 0x11111111: no wait for the TensorMap writer */
    rth_close(&h);
    bufs_close(&b);
}

/* x = [10, 11, 12, 13]: a task copies x to y, another fills x[1:2) with
 * 55; then the orchestrator writes x[0] = 99 and x[1] = 77. */
static void write_after_tasks(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *x = &args->tensors[0], *y = &args->tensors[1];
    g_rc[0] = fill_task(rt, x, 10, NULL);
    g_rc[1] = copy_task(rt, x, y, NULL);
    struct simpler_tensor x1 = slice_of(x, 1, 2);
    g_rc[2] = fill_task(rt, &x1, 55, NULL);
    const uint64_t i0 = 0, i1 = 1;
    const int32_t v99 = 99, v77 = 77;
    g_rc[3] = rt->ops->write_element(rt, x, &i0, &v99);
    g_rc[4] = rt->ops->write_element(rt, x, &i1, &v77);
}

static void write_element_waits_for_earlier_readers_and_writers(void **state)
{
    (void)state;
    TS_SKIP_UNDER_HBG("an element a task touches is not host visible");
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 0);
    bufs_add(&b, 4, SIMPLER_DTYPE_I32);
    bufs_add(&b, 4, SIMPLER_DTYPE_I32);
    for (int round = 0; round < 20; round++) {
        bufs_poison(&b, 0, 0x11);
        bufs_poison(&b, 1, 0x11);
        records_reset();
        assert_int_equal(run(&h, write_after_tasks, &b), 0);
        for (int i = 0; i < 5; i++)
            assert_int_equal(g_rc[i], 0);
        int32_t x[4], y[4];
        ts_from_dev(x, b.dev[0], sizeof x);
        ts_from_dev(y, b.dev[1], sizeof y);
        /* the copy saw x before the orchestrator's writes: 99 in y[0] means
         * write_element did not wait for the reader (WAR) */
        assert_int_equal(y[0], 10);
        assert_int_equal(y[1], 11); /* 55 or 77: the copy ran after a later write */
        assert_int_equal(x[0], 99);
        assert_int_equal(x[1], 77); /* 55: the task's write landed after write_element */
        assert_int_equal(x[2], 12);
        assert_int_equal(x[3], 13);
    }
    rth_close(&h);
    bufs_close(&b);
}

/* ------------------------------------------------------ TensorMap edges */

/* e = buffer 0 (32 i32), f = buffer 1 (16 i32), all at depth 0. */
static void overlapping_slices(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *e = &args->tensors[0], *f = &args->tensors[1];
    struct simpler_tensor e0_8 = slice_of(e, 0, 8), e4_12 = slice_of(e, 4, 12);
    struct simpler_tensor e6_10 = slice_of(e, 6, 10), e16_24 = slice_of(e, 16, 24);
    struct simpler_tensor e24_32 = slice_of(e, 24, 32), f0_8 = slice_of(f, 0, 8);
    struct simpler_tensor f8_16 = slice_of(f, 8, 16);
    g_rc[0] = fill_task(rt, &e0_8, 100, &g_ids[0]);          /* t0 writes e[0:8) */
    g_rc[1] = copy_task(rt, &e4_12, &f0_8, &g_ids[1]);       /* t1 reads e[4:12): RAW */
    g_rc[2] = fill_task(rt, &e6_10, 200, &g_ids[2]);         /* t2 writes e[6:10): WAW, WAR */
    g_rc[3] = fill_task(rt, &e16_24, 300, &g_ids[3]);        /* t3: disjoint write */
    g_rc[4] = copy_task(rt, &e24_32, &f8_16, &g_ids[4]);     /* t4: disjoint read */
}

static void tensormap_infers_raw_waw_war_on_overlapping_slices_and_nothing_on_disjoint_ones(
    void **state)
{
    (void)state;
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 64);
    bufs_add(&b, 32, SIMPLER_DTYPE_I32);
    bufs_add(&b, 16, SIMPLER_DTYPE_I32);
    int32_t init[32];
    for (int k = 0; k < 32; k++)
        init[k] = k;
    ts_to_dev(b.dev[0], init, sizeof init);
    records_reset();
    assert_int_equal(run(&h, overlapping_slices, &b), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(g_rc[i], 0);
    const uint64_t *t = g_ids;
    /* 4+: a disjoint slice produced an edge; 2-: a hazard was missed */
    assert_int_equal(h.result.edges, 3);
    assert_true(rth_has_edge(&h, t[0], t[1])); /* RAW */
    assert_true(rth_has_edge(&h, t[0], t[2])); /* WAW */
    assert_true(rth_has_edge(&h, t[1], t[2])); /* WAR */
    for (int i = 0; i < 3; i++)
        assert_int_equal(h.edges[i].sources, RT_EDGE_TENSORMAP);

    int32_t e[32], f[16];
    ts_from_dev(e, b.dev[0], sizeof e);
    ts_from_dev(f, b.dev[1], sizeof f);
    /* f[0:8) = e[4:12) as t1 saw it: t0's values, then the initial ones;
     * 202..205 in f[2:6) would mean t2 overwrote e before t1 read it */
    const int32_t f_expect[8] = {104, 105, 106, 107, 8, 9, 10, 11};
    for (int k = 0; k < 8; k++)
        assert_int_equal(f[k], f_expect[k]);
    for (int k = 0; k < 8; k++)
        assert_int_equal(f[8 + k], 24 + k);
    const int32_t e_expect[12] = {100, 101, 102, 103, 104, 105, 200, 201, 202, 203, 10, 11};
    for (int k = 0; k < 12; k++)
        assert_int_equal(e[k], e_expect[k]); /* 106, 107 at e[6:8): t0 ran after t2 */
    for (int k = 16; k < 24; k++)
        assert_int_equal(e[k], 300 + (k - 16));
    rth_close(&h);
    bufs_close(&b);
}

/* A dummy with one argument of `kind` on `t`. */
static int dummy_on(struct simpler_orch *rt, uint32_t kind, const struct simpler_tensor *t,
                    uint64_t *id)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    switch (kind) {
    case SIMPLER_ARG_INPUT:
        simpler_task_args_add_input(&ta, t);
        break;
    case SIMPLER_ARG_INOUT:
        simpler_task_args_add_inout(&ta, t);
        break;
    case SIMPLER_ARG_NO_DEP:
        simpler_task_args_add_no_dep(&ta, t);
        break;
    default:
        simpler_task_args_add_output_existing(&ta, t);
        break;
    }
    int rc = simpler_submit_dummy(rt, &ta, &r);
    *id = r.task_id;
    return rc;
}

static void no_dep_reads(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *e = &args->tensors[0];
    g_rc[0] = dummy_on(rt, SIMPLER_ARG_OUTPUT_EXISTING, e, &g_ids[0]); /* writer */
    g_rc[1] = dummy_on(rt, SIMPLER_ARG_NO_DEP, e, &g_ids[1]);          /* no RAW */
    g_rc[2] = dummy_on(rt, SIMPLER_ARG_OUTPUT_EXISTING, e, &g_ids[2]); /* WAW only, no WAR */
    /* NO_DEP on a runtime-allocated output keeps its creator edge */
    const uint64_t shape[1] = {4};
    struct simpler_task_args ta;
    struct simpler_task_result made;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_I32, 0);
    g_rc[3] = simpler_submit_dummy(rt, &ta, &made);
    g_ids[3] = made.task_id;
    g_rc[4] = dummy_on(rt, SIMPLER_ARG_NO_DEP, &made.outputs[0], &g_ids[4]);
}

static void no_dep_input_is_neither_looked_up_nor_recorded_but_keeps_its_creator_edge(
    void **state)
{
    (void)state;
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 64);
    bufs_add(&b, 8, SIMPLER_DTYPE_I32);
    records_reset();
    assert_int_equal(run(&h, no_dep_reads, &b), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(g_rc[i], 0);
    const uint64_t *t = g_ids;
    /* 3: t1's NO_DEP read was recorded (WAR t1 -> t2) or looked up (RAW t0 -> t1) */
    assert_int_equal(h.result.edges, 2);
    assert_true(rth_has_edge(&h, t[0], t[2]));
    assert_true(rth_has_edge(&h, t[3], t[4]));
    for (uint64_t i = 0; i < h.result.edges_logged; i++) {
        if (h.edges[i].consumer == t[2])
            assert_int_equal(h.edges[i].sources, RT_EDGE_TENSORMAP);
        else
            assert_int_equal(h.edges[i].sources, RT_EDGE_CREATOR);
    }
    rth_close(&h);
    bufs_close(&b);
}

static void manual_dep_flag(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_tensor e = args->tensors[0];
    e.flags |= SIMPLER_TENSOR_MANUAL_DEP;
    g_rc[0] = dummy_on(rt, SIMPLER_ARG_OUTPUT_EXISTING, &e, &g_ids[0]);
    g_rc[1] = dummy_on(rt, SIMPLER_ARG_INPUT, &e, &g_ids[1]);
    g_rc[2] = dummy_on(rt, SIMPLER_ARG_INOUT, &e, &g_ids[2]);
    /* the same buffer without the flag is tracked again, but the flagged
     * accesses above were never recorded: no edge to them */
    g_rc[3] = dummy_on(rt, SIMPLER_ARG_OUTPUT_EXISTING, &args->tensors[0], &g_ids[3]);
    g_rc[4] = dummy_on(rt, SIMPLER_ARG_INPUT, &args->tensors[0], &g_ids[4]);
}

static void manual_dep_flag_bypasses_the_tensormap(void **state)
{
    (void)state;
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 64);
    bufs_add(&b, 8, SIMPLER_DTYPE_I32);
    records_reset();
    assert_int_equal(run(&h, manual_dep_flag, &b), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(g_rc[i], 0);
    /* only the unflagged pair t3 -> t4; any other edge: the flag was ignored */
    assert_int_equal(h.result.edges, 1);
    assert_true(rth_has_edge(&h, g_ids[3], g_ids[4]));
    assert_int_equal(h.edges[0].sources, RT_EDGE_TENSORMAP);
    assert_int_equal(h.result.tasks_completed, 5);
    rth_close(&h);
    bufs_close(&b);
}

/* ------------------------------------------------ element access, bad ids */

static void read_with_foreign_producer(struct simpler_orch *rt,
                                       const struct simpler_orch_args *args)
{
    struct simpler_tensor t = args->tensors[0];
    t.producer_task_id = 9ull << 48; /* ring 9: no such ring */
    const uint64_t i0 = 0;
    int32_t value;
    g_rc[0] = rt->ops->read_element(rt, &t, &i0, &value);
}

static void read_element_of_a_tensor_with_a_foreign_producer_id_fails_with_invalid_args(
    void **state)
{
    (void)state;
    struct rt_harness h;
    struct bufs b = {0};
    rth_open(&h, NULL, 0);
    bufs_add(&b, 4, SIMPLER_DTYPE_I32);
    records_reset();
    int status = rth_run(&h, read_with_foreign_producer, g_kernels, K_KERNELS, &b.args);
    rth_close(&h);
    bufs_close(&b);
    /* 0: the runtime looked the id up in rings[9] (past the 4 rings) and
     * believed what it found there; a submit of the same tensor gets -5 */
    assert_int_equal(g_rc[0], -SIMPLER_ORCH_ERR_INVALID_ARGS);
    assert_int_equal(status, -SIMPLER_ORCH_ERR_INVALID_ARGS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(submit_returns_ids_in_order_tagged_with_the_ring_of_the_scope_depth),
        SIMPLER_TEST(outputs_have_the_requested_shape_and_dtype_and_carry_the_producer_id),
        SIMPLER_TEST(zero_fill_output_reads_as_zero_in_its_kernel),
        SIMPLER_TEST(each_malformed_submit_fails_with_invalid_args_and_later_submits_do_nothing),
        SIMPLER_TEST(fatal_fails_the_run_with_explicit_fatal_and_later_submits_return_it),
        SIMPLER_TEST(status_op_returns_0_then_the_first_latched_error),
        SIMPLER_TEST(geometry_queries_report_1_aic_2_aiv_1_cluster_on_the_fixture),
        SIMPLER_TEST(a_dummy_task_completes_and_orders_its_dependents),
        SIMPLER_TEST(a_dummy_task_allocates_a_zeroed_output_for_later_tasks),
        SIMPLER_TEST(explicit_dependencies_order_tasks_in_a_manual_scope_and_nothing_else_does),
        SIMPLER_TEST(read_element_waits_for_the_producer_and_returns_its_value),
        SIMPLER_TEST(write_element_waits_for_earlier_readers_and_writers),
        SIMPLER_TEST(tensormap_infers_raw_waw_war_on_overlapping_slices_and_nothing_on_disjoint_ones),
        SIMPLER_TEST(no_dep_input_is_neither_looked_up_nor_recorded_but_keeps_its_creator_edge),
        SIMPLER_TEST(manual_dep_flag_bypasses_the_tensormap),
        SIMPLER_TEST(read_element_of_a_tensor_with_a_foreign_producer_id_fails_with_invalid_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
