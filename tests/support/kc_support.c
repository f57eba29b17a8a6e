/*
 * kc_support.c — the kernel-capture fixture (see kc_support.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "kc_support.h"
#include "simpler/kernel.h"

/* Exported (not static), as is kc_orchestration: the diamond's image
 * names them by symbol. out = in * mul + add; fails with ctl[0] when
 * nonzero. Args: in, ctl, out, scalars mul, add. */
void kc_kernel_affine(int64_t *args)
{
    const float *in = simpler_kernel_data(args, 0);
    const int32_t *ctl = simpler_kernel_data(args, 1);
    float *out = simpler_kernel_data(args, 2);
    if (ctl[0]) {
        simpler_kernel_fail(args, ctl[0]);
        return;
    }
    float mul = simpler_kernel_scalar_f32(args, 3);
    float add = simpler_kernel_scalar_f32(args, 4);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 2));
    for (uint64_t i = 0; i < n; i++)
        out[i] = in[i] * mul + add;
}

static void submit_affine(struct simpler_orch *rt, const struct simpler_tensor *in,
                          const struct simpler_tensor *ctl, float mul, float add,
                          struct simpler_task_result *r)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, in);
    simpler_task_args_add_input(&ta, ctl);
    simpler_task_args_add_output(&ta, in->shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_task_args_add_scalar(&ta, ts_f32_bits(mul));
    simpler_task_args_add_scalar(&ta, ts_f32_bits(add));
    simpler_submit_aiv(rt, 0, &ta, r);
}

/* Args: x (IN), ctl (IN, one i32), z (OUT); scalar k (f32 bits). Four
 * tasks: a after x; b and c after a (independent of each other); z after
 * both. */
void kc_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    uint32_t kbits = (uint32_t)args->scalars[0];
    float k;
    memcpy(&k, &kbits, sizeof k);
    struct simpler_task_result a, b, c, z;
    submit_affine(rt, &args->tensors[0], &args->tensors[1], 2.0f, 0.0f, &a);
    submit_affine(rt, &a.outputs[0], &args->tensors[1], 1.0f, k, &b);
    submit_affine(rt, &a.outputs[0], &args->tensors[1], 3.0f, 0.0f, &c);
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &b.outputs[0]);
    simpler_task_args_add_input(&ta, &c.outputs[0]);
    simpler_task_args_add_output_existing(&ta, &args->tensors[2]);
    simpler_submit_aiv(rt, 1, &ta, &z);
}

static void *kc_image(size_t *bytes)
{
    static const enum simpler_direction sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN, SIMPLER_DIR_OUT,
                                                 SIMPLER_DIR_SCALAR};
    static const enum simpler_direction affine_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN,
                                                        SIMPLER_DIR_OUT};
    static const enum simpler_direction sum_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN,
                                                     SIMPLER_DIR_OUT};
    struct simpler_callable_builder *b;
    void *image;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                                "kc_orchestration", NULL, sig, 4),
                     0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 0, SIMPLER_CORE_AIV,
                                                         SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                         "kc_kernel_affine", affine_sig, 3),
                     0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 1, SIMPLER_CORE_AIV,
                                                         SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                         "tk_add_f32", sum_sig, 3),
                     0);
    assert_int_equal(simpler_callable_builder_finish(b, &image, bytes), 0);
    simpler_callable_builder_destroy(b);
    return image;
}

int32_t kc_prepare(struct simpler_context *ctx)
{
    size_t bytes;
    void *image = kc_image(&bytes);
    int32_t id = -7;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id), 0);
    simpler_callable_free(image);
    return id;
}

void kc_set_ctl(struct kc_bufs *d, int32_t code)
{
    ts_to_dev(d->ctl, &code, sizeof code);
}

void kc_bufs_make(struct kc_bufs *d, const float *x, uint64_t n, float k)
{
    d->n = n;
    d->z = ts_dev_alloc(n * sizeof(float));
    d->ctl = ts_dev_alloc(sizeof *d->ctl);
    kc_set_ctl(d, 0);
    d->t[0] = ts_dev_tensor_1d(x, n, SIMPLER_DTYPE_F32);
    d->t[1] = ts_dev_tensor_1d(d->ctl, 1, SIMPLER_DTYPE_I32);
    d->t[2] = ts_dev_tensor_1d(d->z, n, SIMPLER_DTYPE_F32);
    d->s[0] = ts_f32_bits(k);
    d->args = (struct simpler_args){3, 1, d->t, d->s};
}

void kc_bufs_free(struct kc_bufs *d)
{
    assert_int_equal(simdev_free(d->z), 0);
    assert_int_equal(simdev_free(d->ctl), 0);
}

bool kc_holds(const struct kc_bufs *d, const float *x_dev, float k)
{
    uint64_t n = d->n;
    float *x = malloc(n * sizeof(float)), *z = malloc(n * sizeof(float));
    assert_int_equal(simdev_memcpy(x, x_dev, n * sizeof(float), SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_int_equal(simdev_memcpy(z, d->z, n * sizeof(float), SIMDEV_COPY_DEVICE_TO_HOST), 0);
    bool ok = true;
    for (uint64_t i = 0; i < n && ok; i++)
        ok = z[i] == (x[i] * 2.0f + k) + x[i] * 2.0f * 3.0f;
    free(x);
    free(z);
    return ok;
}

simdev_graph_exec_t end_and_instantiate(simdev_stream_t s, simdev_graph_t *graph)
{
    assert_int_equal(simdev_stream_end_capture(s, graph), 0);
    simdev_graph_exec_t exec = NULL;
    assert_int_equal(simdev_graph_instantiate(&exec, *graph), 0);
    return exec;
}

void graph_free(simdev_graph_exec_t exec, simdev_graph_t graph)
{
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
}

simdev_graph_exec_t capture_pm(struct simpler_context *ctx, simdev_stream_t s,
                               const struct km_bufs *b, float mul, float add,
                               simdev_graph_t *graph)
{
    struct km_args a;
    km_args_make(&a, b, mul, add, 0, 1);
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    return end_and_instantiate(s, graph);
}
