/*
 * tr_support.c — the trace fixture (see tr_support.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simpler/kernel.h"
#include "tr_support.h"

/* ------------------------------------------------------------- kernels */

/* Exported (not static): the callables name them by symbol. */
void tr_add(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0), *y = simpler_kernel_data(args, 1);
    float *z = simpler_kernel_data(args, 2);
    for (uint64_t i = 0; i < simpler_tensor_numel(simpler_kernel_tensor(args, 2)); i++)
        z[i] = x[i] + y[i];
}

void tr_add_scalar(int64_t *args) /* z = x + s; fails with FAIL_CODE when s is 99 */
{
    const float *x = simpler_kernel_data(args, 0);
    float *z = simpler_kernel_data(args, 1);
    float s = simpler_kernel_scalar_f32(args, 2);
    if (s == 99.0f) {
        simpler_kernel_fail(args, FAIL_CODE);
        return;
    }
    for (uint64_t i = 0; i < simpler_tensor_numel(simpler_kernel_tensor(args, 1)); i++)
        z[i] = x[i] + s;
}

void tr_mul(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0), *y = simpler_kernel_data(args, 1);
    float *z = simpler_kernel_data(args, 2);
    for (uint64_t i = 0; i < simpler_tensor_numel(simpler_kernel_tensor(args, 2)); i++)
        z[i] = x[i] * y[i];
}

void tr_touch(int64_t *args) /* x[0] += 1: an INOUT of one tensor */
{
    float *x = simpler_kernel_data(args, 0);
    x[0] += 1.0f;
}

void tr_block_mark(int64_t *args) /* x[block] = block + 1: each block its own element */
{
    float *x = simpler_kernel_data(args, 0);
    uint32_t b = simpler_kernel_block_idx(args);
    x[b] = (float)(b + 1);
}

/* ------------------------------------------------------- orchestrations */

static void submit_scalar(struct simpler_orch *rt, const struct simpler_tensor *in, float s,
                          struct simpler_task_result *out)
{
    uint64_t shape[1] = {N};
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, in);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_task_args_add_scalar_f32(&ta, s);
    simpler_submit_aiv(rt, 1, &ta, out);
}

static void submit_binary(struct simpler_orch *rt, int32_t func, const struct simpler_tensor *x,
                          const struct simpler_tensor *y, const struct simpler_tensor *existing,
                          struct simpler_task_result *out)
{
    uint64_t shape[1] = {N};
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, x);
    simpler_task_args_add_input(&ta, y);
    if (existing)
        simpler_task_args_add_output_existing(&ta, existing);
    else
        simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_submit_aiv(rt, func, &ta, out);
}

/* Upstream's vector example: f = (a + b + 1)(a + b + 2) + (a + b); its
 * scalar is args->scalars[0] (1, or 99 to fail task t1). */
void tr_vector_orch(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *a = &args->tensors[0], *b = &args->tensors[1];
    const struct simpler_tensor *f = &args->tensors[2];
    float one;
    memcpy(&one, &args->scalars[0], sizeof one);
    struct simpler_task_result c, d, e, g, r;
    submit_binary(rt, 0, a, b, NULL, &c); /* t0 */
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    submit_scalar(rt, &c.outputs[0], one, &d);          /* t1 */
    submit_scalar(rt, &c.outputs[0], 2.0f, &e);         /* t2 */
    submit_binary(rt, 2, &d.outputs[0], &e.outputs[0], NULL, &g); /* t3 */
    submit_binary(rt, 0, &g.outputs[0], &c.outputs[0], f, &r);    /* t4 */
    simpler_scope_end(rt);
}

/* `scalars[0]` tasks, each INOUT on tensor 0: a chain through the
 * TensorMap (WAW and RAW of the same buffer). */
void tr_chain_orch(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    for (uint64_t i = 0; i < args->scalars[0]; i++) {
        struct simpler_task_args ta;
        simpler_task_args_init(&ta);
        simpler_task_args_add_inout(&ta, &args->tensors[0]);
        simpler_submit_aiv(rt, 3, &ta, NULL);
    }
}

void *image_of(const char *orch, uint32_t tensors, uint32_t scalars, size_t *bytes)
{
    enum simpler_direction sig[8];
    static const enum simpler_direction bin[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN, SIMPLER_DIR_OUT};
    static const enum simpler_direction one[] = {SIMPLER_DIR_INOUT};
    static const enum simpler_direction sca[] = {SIMPLER_DIR_IN, SIMPLER_DIR_OUT,
                                                 SIMPLER_DIR_SCALAR};
    for (uint32_t i = 0; i < tensors; i++)
        sig[i] = i + 1 == tensors && tensors == 3 ? SIMPLER_DIR_OUT : SIMPLER_DIR_INOUT;
    if (tensors == 3)
        sig[0] = sig[1] = SIMPLER_DIR_IN;
    for (uint32_t i = 0; i < scalars; i++)
        sig[tensors + i] = SIMPLER_DIR_SCALAR;
    struct simpler_callable_builder *b;
    void *image;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration(
                         b, SIMPLER_BINARY_SYMBOL, NULL, 0, orch, NULL, sig, tensors + scalars),
                     0);
    const struct {
        const char *symbol;
        const enum simpler_direction *sig;
        uint32_t n;
    } kernels[] = {{"tr_add", bin, 3},   {"tr_add_scalar", sca, 3}, {"tr_mul", bin, 3},
                   {"tr_touch", one, 1}, {"tr_block_mark", one, 1}}; /* func ids 0..4 */
    for (int32_t k = 0; k < 5; k++)
        assert_int_equal(simpler_callable_builder_add_kernel(b, k, SIMPLER_CORE_AIV,
                                                             SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                             kernels[k].symbol, kernels[k].sig,
                                                             kernels[k].n),
                         0);
    assert_int_equal(simpler_callable_builder_finish(b, &image, bytes), 0);
    simpler_callable_builder_destroy(b);
    return image;
}

/* ------------------------------------------------------------- fixtures */

static char g_path[256]; /* setup's: the trace files' path before their suffix */

const char *trace_path(const char *suffix)
{
    static char p[300];
    snprintf(p, sizeof p, "%s%s", g_path, suffix);
    return p;
}

/* Removes the three trace files of trace_path. */
static void remove_outputs(void)
{
    unlink(trace_path(".json"));
    unlink(trace_path(".deps.json"));
    unlink(trace_path(".deps.dot"));
}

int setup(void **state)
{
    (void)state;
    snprintf(g_path, sizeof g_path, "test_trace_%d", (int)getpid());
    remove_outputs();
    unsetenv("SIMPLER_TRACE");
    return 0;
}

int teardown(void **state)
{
    (void)state;
    remove_outputs();
    return 0;
}

struct simpler_context *open_program(uint32_t trace_level, const struct simdev_config *topo)
{
    struct simdev_config small = ts_small_config();
    ts_device_setup_config(topo ? topo : &small);
    struct simpler_context *ctx;
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.pipeline_depth = 2;
    cfg.run_capacity = ts_small_run_config();
    cfg.run_capacity.trace_level = trace_level;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
    assert_int_equal(simpler_set_trace_path(ctx, trace_path(".json")), 0);
    size_t bytes;
    void *image = image_of("tr_vector_orch", 3, 1, &bytes);
    assert_int_equal(simpler_register_callable(ctx, VEC_ID, image, bytes), 0);
    simpler_callable_free(image);
    image = image_of("tr_chain_orch", 1, 1, &bytes);
    assert_int_equal(simpler_register_callable(ctx, CHAIN_ID, image, bytes), 0);
    simpler_callable_free(image);
    return ctx;
}

void close_program(struct simpler_context *ctx)
{
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(simpler_committed_device_memory(ctx), 0); /* the trace region was freed */
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
    ts_device_teardown(NULL);
}

struct vec_bufs g_vec;

/* Fills v: a[i] = i % 7, b = 0.5, f = -1, and its args (scalar: t1's). */
static void vec_init(struct vec_bufs *v, float scalar)
{
    for (int i = 0; i < N; i++) {
        v->a[i] = (float)(i % 7);
        v->b[i] = 0.5f;
        v->f[i] = -1.0f;
    }
    float *p[3] = {v->a, v->b, v->f};
    for (int i = 0; i < 3; i++)
        simpler_tensor_make_1d(&v->t[i], (uint64_t)(uintptr_t)p[i], N, SIMPLER_DTYPE_F32,
                               SIMPLER_MEM_HOST);
    v->scalar = ts_f32_bits(scalar);
    v->args = (struct simpler_args){3, 1, v->t, &v->scalar};
}

const struct simpler_args *vector_args(float scalar)
{
    vec_init(&g_vec, scalar);
    return &g_vec.args;
}

struct simpler_context *open_kernel(uint32_t level)
{
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.run_capacity = ts_small_run_config();
    cfg.run_capacity.trace_level = level;
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), 0);
    return ctx;
}
