/*
 * pm_support.c — the program-mode fixture (see pm_support.h).
 *
 * The kernels and the orchestration are exported functions: the callable
 * image names them (SIMPLER_BINARY_SYMBOL) and the device loader resolves
 * them in this process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "pm_support.h"
#include "simpler/kernel.h"

struct ts_gate pm_gate;
_Atomic uint64_t pm_order[64];
atomic_int pm_order_count;
_Atomic uint32_t pm_out_seen;
static int gate_ready;

void pm_observers_reset(void)
{
    if (gate_ready)
        ts_gate_destroy(&pm_gate);
    ts_gate_init(&pm_gate);
    gate_ready = 1;
    atomic_store(&pm_order_count, 0);
    atomic_store(&pm_out_seen, 0);
}

int pm_setup(void **state)
{
    (void)state;
    pm_observers_reset();
    return 0;
}

int pm_teardown(void **state)
{
    (void)state;
    if (gate_ready)
        ts_gate_open(&pm_gate);
    return 0;
}

enum { S_MUL, S_ADD, S_FAIL, S_FLAGS, S_TAG };

void pm_kernel_axpb(int64_t *args)
{
    const struct simpler_tensor *xt = simpler_kernel_tensor(args, 0);
    float *x = simpler_kernel_data(args, 0);
    float *y = simpler_kernel_data(args, 1);
    float mul = simpler_kernel_scalar_f32(args, 2 + S_MUL);
    float add = simpler_kernel_scalar_f32(args, 2 + S_ADD);
    uint64_t fail = simpler_kernel_scalar_u64(args, 2 + S_FAIL);
    uint64_t flags = simpler_kernel_scalar_u64(args, 2 + S_FLAGS);
    if (flags & PM_FLAG_GATE)
        ts_gate_pass(&pm_gate);
    if (fail && (!(flags & PM_FLAG_FAIL_IF_NEGATIVE) || x[0] < 0.0f)) {
        simpler_kernel_fail(args, (int)fail);
        return;
    }
    uint32_t seen;
    memcpy(&seen, &y[0], sizeof seen);
    atomic_store(&pm_out_seen, seen);
    uint64_t n = simpler_tensor_numel(xt);
    for (uint64_t i = 0; i < n; i++)
        y[i] = x[i] * mul + add;
    if (flags & PM_FLAG_SCRIBBLE)
        memset(x, PM_POISON_BYTE, n * sizeof *x);
}

void pm_kernel_acc(int64_t *args)
{
    const float *y = simpler_kernel_data(args, 0);
    float *acc = simpler_kernel_data(args, 1);
    uint64_t tag = simpler_kernel_scalar_u64(args, 2);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 1));
    for (uint64_t i = 0; i < n; i++)
        acc[i] += y[i];
    int at = atomic_fetch_add(&pm_order_count, 1);
    if (at < 64)
        atomic_store(&pm_order[at], tag);
}

int pm_submit_axpb(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &args->tensors[0]);
    simpler_task_args_add_output_existing(&ta, &args->tensors[1]);
    for (uint32_t i = 0; i < PM_SCALARS; i++)
        simpler_task_args_add_scalar(&ta, args->scalars[i]);
    return simpler_submit_aiv(rt, 0, &ta, &r);
}

void pm_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    pm_submit_axpb(rt, args);

    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &args->tensors[1]);
    simpler_task_args_add_inout(&ta, &args->tensors[2]);
    simpler_task_args_add_scalar(&ta, args->scalars[S_TAG]);
    simpler_submit_aiv(rt, 1, &ta, &r);
}

const enum simpler_direction pm_signature[PM_SIGNATURE] = {
    SIMPLER_DIR_IN,     SIMPLER_DIR_OUT,    SIMPLER_DIR_INOUT,  SIMPLER_DIR_SCALAR,
    SIMPLER_DIR_SCALAR, SIMPLER_DIR_SCALAR, SIMPLER_DIR_SCALAR, SIMPLER_DIR_SCALAR};

void *pm_image_of(const char *orchestration, const char *config,
                  const enum simpler_direction *signature, uint32_t signature_count,
                  uint32_t kernels, size_t *bytes)
{
    static const enum simpler_direction ksig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_OUT};
    static const char *const kernel_symbols[2] = {"pm_kernel_axpb", "pm_kernel_acc"};
    struct simpler_callable_builder *b;
    void *image;
    assert_true(kernels >= 1 && kernels <= 2);
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                                orchestration, config, signature,
                                                                signature_count),
                     0);
    for (uint32_t k = 0; k < kernels; k++)
        assert_int_equal(simpler_callable_builder_add_kernel(b, (int32_t)k, SIMPLER_CORE_AIV,
                                                             SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                             kernel_symbols[k], ksig, 2),
                         0);
    assert_int_equal(simpler_callable_builder_finish(b, &image, bytes), 0);
    simpler_callable_builder_destroy(b);
    return image;
}

void *pm_image(size_t *bytes)
{
    return pm_image_of("pm_orchestration", NULL, pm_signature, PM_SIGNATURE, 2, bytes);
}

struct simpler_context *pm_open(uint32_t depth)
{
    struct simdev_config topo = ts_small_config();
    return pm_open_on(depth, &topo);
}

struct simpler_context *pm_open_on(uint32_t depth, const struct simdev_config *topo)
{
    return pm_open_timed(depth, topo, 0);
}

struct simpler_context *pm_open_bare(uint32_t depth, const struct simdev_config *topo,
                                     uint32_t sched_timeout_ms)
{
    ts_device_setup_config(topo);
    pm_observers_reset();
    struct simpler_context *ctx;
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.pipeline_depth = depth;
    cfg.run_capacity = ts_small_run_config();
    if (sched_timeout_ms)
        cfg.run_capacity.sched_timeout_ms = sched_timeout_ms;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
    return ctx;
}

struct simpler_context *pm_open_timed(uint32_t depth, const struct simdev_config *topo,
                                      uint32_t sched_timeout_ms)
{
    struct simpler_context *ctx = pm_open_bare(depth, topo, sched_timeout_ms);
    size_t bytes;
    void *image = pm_image(&bytes);
    assert_int_equal(simpler_register_callable(ctx, PM_CALLABLE, image, bytes), 0);
    simpler_callable_free(image);
    return ctx;
}

void pm_close(struct simpler_context *ctx)
{
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(simpler_committed_device_memory(ctx), 0); /* else finalize left memory held */
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
}

float pm_x_value(uint64_t i, float x_base)
{
    return (float)(i % 97) * 0.5f + x_base;
}

void pm_scalars_fill(uint64_t scalars[PM_SCALARS], float mul, float add, uint64_t fail_code,
                     uint64_t flags, uint64_t tag)
{
    scalars[S_MUL] = ts_f32_bits(mul);
    scalars[S_ADD] = ts_f32_bits(add);
    scalars[S_FAIL] = fail_code;
    scalars[S_FLAGS] = flags;
    scalars[S_TAG] = tag;
}

void pm_run_init(struct pm_run *r, float mul, float add, uint64_t fail_code, uint64_t flags,
                 uint64_t tag)
{
    memset(r, 0, sizeof *r);
    r->x = malloc(PM_N * sizeof(float));
    r->y = malloc(PM_N * sizeof(float));
    r->acc = malloc(PM_N * sizeof(float));
    assert_non_null(r->x);
    assert_non_null(r->y);
    assert_non_null(r->acc);
    for (int i = 0; i < PM_N; i++) {
        r->x[i] = pm_x_value((uint64_t)i, (float)tag);
        r->acc[i] = 1.0f;
    }
    memset(r->y, PM_POISON_BYTE, PM_N * sizeof(float));
    float *bufs[3] = {r->x, r->y, r->acc};
    for (int i = 0; i < 3; i++)
        assert_int_equal(simpler_tensor_make_1d(&r->tensors[i], (uint64_t)(uintptr_t)bufs[i],
                                                PM_N, SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST),
                         0);
    r->mul = mul;
    r->add = add;
    pm_scalars_fill(r->scalars, mul, add, fail_code, flags, tag);
    r->args.tensor_count = 3;
    r->args.scalar_count = PM_SCALARS;
    r->args.tensors = r->tensors;
    r->args.scalars = r->scalars;
}

void pm_run_check(const struct pm_run *r)
{
    for (int i = 0; i < PM_N; i++) {
        float want = r->x[i] * r->mul + r->add;
        if (r->y[i] != want || r->acc[i] != 1.0f + want)
            fail_msg("element %d: y %g acc %g, want %g and %g", i, (double)r->y[i],
                     (double)r->acc[i], (double)want, (double)(1.0f + want));
    }
}

void pm_run_check_untouched(const struct pm_run *r)
{
    for (int i = 0; i < PM_N; i++) {
        uint32_t bits;
        memcpy(&bits, &r->y[i], sizeof bits);
        if (bits != PM_POISON_BITS || r->acc[i] != 1.0f)
            fail_msg("element %d was copied back from a failed run", i);
    }
}

void pm_run_free(struct pm_run *r)
{
    free(r->x);
    free(r->y);
    free(r->acc);
}

simpler_run_t pm_prepare(struct simpler_context *ctx, struct pm_run *r)
{
    simpler_run_t run = 0;
    assert_int_equal(simpler_prepare_run(ctx, &run, PM_CALLABLE, &r->args, NULL), 0);
    assert_true(run != 0);
    return run;
}
