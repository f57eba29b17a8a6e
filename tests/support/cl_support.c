/*
 * cl_support.c — the cluster tests' fixture (see cl_support.h). The
 * orchestrations and kernels are exported functions of the test: the
 * images name them by symbol.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cl_support.h"
#include "simpler/kernel.h"

struct ts_gate cl_gates[CL_GATES];
static int gates_ready;

/* ---------------------------------------------------------------- kernels */

void cl_kernel_axpb(int64_t *args);
void cl_kernel_fma(int64_t *args);
void cl_orch_axpb(struct simpler_orch *rt, const struct simpler_orch_args *args);
void cl_orch_fma(struct simpler_orch *rt, const struct simpler_orch_args *args);

/* The element offset (in elements, from the view's first) of the k-th
 * element in row-major order of a 1-D or 2-D view. */
static int64_t view_at(const struct simpler_tensor *t, uint64_t k)
{
    if (t->ndims == 1)
        return (int64_t)k * t->stride[0];
    return (int64_t)(k / t->shape[1]) * t->stride[0] + (int64_t)(k % t->shape[1]) * t->stride[1];
}

static void pass_gate(uint64_t gate)
{
    if (gate >= 1 && gate <= CL_GATES)
        ts_gate_pass(&cl_gates[gate - 1]);
}

void cl_kernel_axpb(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0);
    float *y = simpler_kernel_data(args, 1);
    float mul = simpler_kernel_scalar_f32(args, 2);
    float add = simpler_kernel_scalar_f32(args, 3);
    uint64_t fail = simpler_kernel_scalar_u64(args, 4);
    pass_gate(simpler_kernel_scalar_u64(args, 5));
    if (fail) {
        simpler_kernel_fail(args, (int)fail);
        return;
    }
    const struct simpler_tensor *xt = simpler_kernel_tensor(args, 0);
    const struct simpler_tensor *yt = simpler_kernel_tensor(args, 1);
    uint64_t n = simpler_tensor_numel(yt);
    for (uint64_t i = 0; i < n; i++)
        y[view_at(yt, i)] = x[view_at(xt, i)] * mul + add;
}

void cl_kernel_fma(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0);
    float *acc = simpler_kernel_data(args, 1);
    float mul = simpler_kernel_scalar_f32(args, 2);
    pass_gate(simpler_kernel_scalar_u64(args, 3));
    const struct simpler_tensor *xt = simpler_kernel_tensor(args, 0);
    const struct simpler_tensor *at = simpler_kernel_tensor(args, 1);
    uint64_t n = simpler_tensor_numel(at);
    for (uint64_t i = 0; i < n; i++)
        acc[view_at(at, i)] = acc[view_at(at, i)] * mul + x[view_at(xt, i)];
}

/* One AIV task of kernel 0 over the run's two tensors and its scalars. */
static void submit_one(struct simpler_orch *rt, const struct simpler_orch_args *args, bool inout)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &args->tensors[0]);
    if (inout)
        simpler_task_args_add_inout(&ta, &args->tensors[1]);
    else
        simpler_task_args_add_output_existing(&ta, &args->tensors[1]);
    for (uint32_t i = 0; i < args->scalar_count; i++)
        simpler_task_args_add_scalar(&ta, args->scalars[i]);
    simpler_submit_aiv(rt, 0, &ta, NULL);
}

void cl_orch_axpb(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    submit_one(rt, args, false);
}

void cl_orch_fma(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    submit_one(rt, args, true);
}

static void *image_of(const char *orch, const char *kernel, enum simpler_direction second,
                      uint32_t scalars, size_t *bytes)
{
    enum simpler_direction sig[6] = {SIMPLER_DIR_IN, second};
    for (uint32_t i = 0; i < scalars; i++)
        sig[2 + i] = SIMPLER_DIR_SCALAR;
    const enum simpler_direction ksig[] = {SIMPLER_DIR_IN, second};
    struct simpler_callable_builder *b;
    void *image;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                                orch, NULL, sig, 2 + scalars),
                     0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 0, SIMPLER_CORE_AIV,
                                                         SIMPLER_BINARY_SYMBOL, NULL, 0, kernel,
                                                         ksig, 2),
                     0);
    assert_int_equal(simpler_callable_builder_finish(b, &image, bytes), 0);
    simpler_callable_builder_destroy(b);
    return image;
}

void *cl_axpb_image(size_t *bytes)
{
    return image_of("cl_orch_axpb", "cl_kernel_axpb", SIMPLER_DIR_OUT, 4, bytes);
}

void *cl_fma_image(size_t *bytes)
{
    return image_of("cl_orch_fma", "cl_kernel_fma", SIMPLER_DIR_INOUT, 2, bytes);
}

/* ---------------------------------------------------------------- devices */

int cl_setup(void **state)
{
    (void)state;
    for (int d = 0; d < CL_DEVICES; d++) {
        struct simdev_config topo = ts_small_config();
        topo.runnable_cpus = 1;
        assert_int_equal(simdev_device_reset(d), 0);
        assert_int_equal(simdev_device_configure(d, &topo), 0);
        assert_int_equal(simdev_fault_clear(d), 0);
    }
    for (int g = 0; g < CL_GATES; g++) {
        if (gates_ready)
            ts_gate_destroy(&cl_gates[g]);
        ts_gate_init(&cl_gates[g]);
    }
    gates_ready = 1;
    return 0;
}

int cl_teardown(void **state)
{
    (void)state;
    for (int g = 0; g < CL_GATES && gates_ready; g++)
        ts_gate_open(&cl_gates[g]);
    for (int d = 0; d < CL_DEVICES; d++) {
        struct simdev_mem_info info;
        assert_int_equal(simdev_mem_get_info(d, &info), 0);
        assert_int_equal(simdev_device_reset(d), 0);
        assert_int_equal(info.in_use, 0); /* nonzero: the test leaked device memory */
    }
    return 0;
}

struct simpler_config cl_context_config(uint32_t depth)
{
    struct simpler_config cfg;
    simpler_config_default(&cfg);
    cfg.pipeline_depth = depth;
    cfg.run_capacity = ts_small_run_config();
    return cfg;
}

void cl_register(struct simpler_cluster *cluster)
{
    size_t bytes;
    void *image = cl_axpb_image(&bytes);
    assert_int_equal(simpler_cluster_register_callable(cluster, CL_AXPB, image, bytes), 0);
    simpler_callable_free(image);
    image = cl_fma_image(&bytes);
    assert_int_equal(simpler_cluster_register_callable(cluster, CL_FMA, image, bytes), 0);
    simpler_callable_free(image);
}

struct simpler_cluster *cl_open(uint32_t workers, uint32_t depth)
{
    struct simpler_cluster_config cfg;
    struct simpler_config ctx = cl_context_config(depth);
    struct simpler_cluster *cluster = NULL;
    assert_int_equal(simpler_cluster_config_default(&cfg), 0);
    cfg.worker_count = workers;
    cfg.device_config = &ctx;
    assert_int_equal(simpler_cluster_create(&cfg, &cluster), 0);
    cl_register(cluster);
    return cluster;
}

void cl_close(struct simpler_cluster *cluster)
{
    assert_int_equal(simpler_cluster_destroy(cluster), 0);
}

/* ---------------------------------------------------------------- vectors */

float cl_x(uint32_t i, float base) { return base + (float)(i % 13) * 0.25f; }

void cl_vec_init(struct cl_vec *v, float base)
{
    v->data = malloc(CL_N * sizeof *v->data);
    assert_non_null(v->data);
    for (uint32_t i = 0; i < CL_N; i++)
        v->data[i] = cl_x(i, base);
    uint64_t shape[1] = {CL_N};
    assert_int_equal(simpler_tensor_make(&v->all, (uint64_t)(uintptr_t)v->data, shape, 1,
                                         SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST),
                     0);
}

void cl_vec_poison(struct cl_vec *v) { memset(v->data, 0xDB, CL_N * sizeof *v->data); }

void cl_vec_free(struct cl_vec *v)
{
    free(v->data);
    v->data = NULL;
}

void cl_axpb_args(struct cl_axpb *a, const struct simpler_tensor *x,
                  const struct simpler_tensor *y, float mul, float add, uint64_t fail,
                  uint32_t gate)
{
    a->tensors[0] = *x;
    a->tensors[1] = *y;
    a->scalars[0] = ts_f32_bits(mul);
    a->scalars[1] = ts_f32_bits(add);
    a->scalars[2] = fail;
    a->scalars[3] = gate;
    a->args = (struct simpler_args){.tensor_count = 2, .scalar_count = 4,
                                    .tensors = a->tensors, .scalars = a->scalars};
}

void cl_fma_args(struct cl_fma *a, const struct simpler_tensor *x,
                 const struct simpler_tensor *acc, float mul, uint32_t gate)
{
    a->tensors[0] = *x;
    a->tensors[1] = *acc;
    a->scalars[0] = ts_f32_bits(mul);
    a->scalars[1] = gate;
    a->args = (struct simpler_args){.tensor_count = 2, .scalar_count = 2,
                                    .tensors = a->tensors, .scalars = a->scalars};
}

void cl_assert_axpb(const float *in, const float *out, uint32_t n, float mul, float add,
                    const char *what)
{
    for (uint32_t i = 0; i < n; i++) {
        float want = in[i] * mul + add;
        if (memcmp(&out[i], &want, sizeof want) != 0)
            fail_msg("%s: element %u is %g, want %g", what, i, (double)out[i], (double)want);
    }
}

void cl_assert_poison(const float *v, uint32_t n, const char *what)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        if (bits != CL_POISON_BITS)
            fail_msg("%s: element %u was written (%g)", what, i, (double)v[i]);
    }
}
