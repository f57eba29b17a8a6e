/*
 * test_vector_example.c — upstream's vector example, run on the device
 * runtime: f = (a + b + 1)(a + b + 2) + (a + b).
 *
 * Owns: the end-to-end check that an orchestration's five tasks compute
 * the right values and that exactly the six dependencies upstream documents
 * are inferred (creator edges through runtime-allocated outputs), not just
 * that the result happens to come out right.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "kernels.h"
#include "rt_support.h"
#include "test_support.h"

#define N 16384

enum { K_ADD = 0, K_ADD_SCALAR = 1, K_MUL = 2 };

/* z = x + scalar0; scalar1 is upstream's extra `3u`, checked for its value. */
static void kernel_add_scalar(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0);
    float *z = simpler_kernel_data(args, 1);
    float s = simpler_kernel_scalar_f32(args, 2);
    if (simpler_kernel_scalar_u64(args, 3) != 3) {
        simpler_kernel_fail(args, 201);
        return;
    }
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 1));
    for (uint64_t i = 0; i < n; i++)
        z[i] = x[i] + s;
}

static void kernel_mul(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0);
    const float *y = simpler_kernel_data(args, 1);
    float *z = simpler_kernel_data(args, 2);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 2));
    for (uint64_t i = 0; i < n; i++)
        z[i] = x[i] * y[i];
}

static uint64_t g_ids[5];

static void vector_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *a = &args->tensors[0];
    const struct simpler_tensor *b = &args->tensors[1];
    const struct simpler_tensor *f = &args->tensors[2];
    uint64_t shape[1] = {N};
    struct simpler_task_args ta;
    struct simpler_task_result c, d, e, g, r;

    simpler_task_args_init(&ta); /* t0: c = a + b */
    simpler_task_args_add_input(&ta, a);
    simpler_task_args_add_input(&ta, b);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_submit_aiv(rt, K_ADD, &ta, &c);

    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    simpler_task_args_init(&ta); /* t1: d = c + 1 */
    simpler_task_args_add_input(&ta, &c.outputs[0]);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_task_args_add_scalar_f32(&ta, 1.0f);
    simpler_task_args_add_scalar(&ta, 3);
    simpler_submit_aiv(rt, K_ADD_SCALAR, &ta, &d);

    simpler_task_args_init(&ta); /* t2: e = c + 2 */
    simpler_task_args_add_input(&ta, &c.outputs[0]);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_task_args_add_scalar_f32(&ta, 2.0f);
    simpler_task_args_add_scalar(&ta, 3);
    simpler_submit_aiv(rt, K_ADD_SCALAR, &ta, &e);

    simpler_task_args_init(&ta); /* t3: g = d * e */
    simpler_task_args_add_input(&ta, &d.outputs[0]);
    simpler_task_args_add_input(&ta, &e.outputs[0]);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_submit_aiv(rt, K_MUL, &ta, &g);

    simpler_task_args_init(&ta); /* t4: f = g + c, into the caller's tensor */
    simpler_task_args_add_input(&ta, &g.outputs[0]);
    simpler_task_args_add_input(&ta, &c.outputs[0]);
    simpler_task_args_add_output_existing(&ta, f);
    simpler_submit_aiv(rt, K_ADD, &ta, &r);
    simpler_scope_end(rt);

    g_ids[0] = c.task_id;
    g_ids[1] = d.task_id;
    g_ids[2] = e.task_id;
    g_ids[3] = g.task_id;
    g_ids[4] = r.task_id;
}

static const simpler_kernel_fn g_kernels[] = {tk_add_f32, kernel_add_scalar, kernel_mul};

struct vector_bufs {
    float *a, *b, *f;
    struct simpler_orch_args args;
};

static void bufs_open(struct vector_bufs *v)
{
    static float host[N];
    v->a = ts_dev_alloc(N * sizeof(float));
    v->b = ts_dev_alloc(N * sizeof(float));
    v->f = ts_dev_alloc(N * sizeof(float));
    for (int i = 0; i < N; i++)
        host[i] = 2.0f;
    ts_to_dev(v->a, host, sizeof host);
    for (int i = 0; i < N; i++)
        host[i] = 3.0f;
    ts_to_dev(v->b, host, sizeof host);
    memset(host, 0, sizeof host);
    ts_to_dev(v->f, host, sizeof host);
    memset(&v->args, 0, sizeof v->args);
    v->args.tensor_count = 3;
    v->args.tensors[0] = ts_dev_tensor_1d(v->a, N, SIMPLER_DTYPE_F32);
    v->args.tensors[1] = ts_dev_tensor_1d(v->b, N, SIMPLER_DTYPE_F32);
    v->args.tensors[2] = ts_dev_tensor_1d(v->f, N, SIMPLER_DTYPE_F32);
}

static void bufs_close(struct vector_bufs *v)
{
    assert_int_equal(simdev_free(v->a), 0);
    assert_int_equal(simdev_free(v->b), 0);
    assert_int_equal(simdev_free(v->f), 0);
}

static void vector_example_gives_47_everywhere(void **state)
{
    (void)state;
    struct rt_harness h;
    struct vector_bufs v;
    rth_open(&h, NULL, 64);
    bufs_open(&v);
    assert_int_equal(rth_run(&h, vector_orchestration, g_kernels, 3, &v.args), 0);
    static float f[N];
    ts_from_dev(f, v.f, sizeof f);
    for (int i = 0; i < N; i++)
        if (f[i] != 47.0f)
            fail_msg("f[%d] = %g, expected 47 (a dependency ran out of order)", i, (double)f[i]);
    assert_int_equal(h.result.status, 0);
    assert_int_equal(h.result.tasks_submitted, 5);
    assert_int_equal(h.result.tasks_completed, 5); /* 4: a task never ran */
    bufs_close(&v);
    rth_close(&h);
}

static void vector_example_infers_exactly_the_six_documented_edges(void **state)
{
    (void)state;
    struct rt_harness h;
    struct vector_bufs v;
    rth_open(&h, NULL, 64);
    bufs_open(&v);
    assert_int_equal(rth_run(&h, vector_orchestration, g_kernels, 3, &v.args), 0);
    /* 7+: a spurious edge (e.g. a false TensorMap overlap); 5-: a missed one */
    assert_int_equal(h.result.edges, 6);
    assert_int_equal(h.result.edges_logged, 6);
    const uint64_t *t = g_ids;
    assert_true(rth_has_edge(&h, t[0], t[1]));
    assert_true(rth_has_edge(&h, t[0], t[2]));
    assert_true(rth_has_edge(&h, t[0], t[4]));
    assert_true(rth_has_edge(&h, t[1], t[3]));
    assert_true(rth_has_edge(&h, t[2], t[3]));
    assert_true(rth_has_edge(&h, t[3], t[4]));
    /* every one of them is a creator edge: the consumer used the producer's
     * runtime-allocated output */
    for (int i = 0; i < 6; i++)
        assert_int_equal(h.edges[i].sources, RT_EDGE_CREATOR);
    /* t0 ran at depth 0 (ring 0), the rest in the inner scope (ring 1) */
    assert_int_equal(t[0] >> 48, 0);
    for (int i = 1; i < 5; i++)
        assert_int_equal(t[i] >> 48, 1);
    bufs_close(&v);
    rth_close(&h);
}

static void vector_example_runs_again_on_the_same_arena(void **state)
{
    (void)state;
    struct rt_harness h;
    struct vector_bufs v;
    rth_open(&h, NULL, 64);
    bufs_open(&v);
    for (int round = 0; round < 20; round++) {
        static float zero[N];
        ts_to_dev(v.f, zero, sizeof zero);
        assert_int_equal(rth_run(&h, vector_orchestration, g_kernels, 3, &v.args), 0);
        static float f[N];
        ts_from_dev(f, v.f, sizeof f);
        assert_true(f[0] == 47.0f && f[N - 1] == 47.0f); /* stale state from the last run */
        assert_int_equal(h.result.edges, 6);
    }
    bufs_close(&v);
    rth_close(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(vector_example_gives_47_everywhere),
        SIMPLER_TEST(vector_example_infers_exactly_the_six_documented_edges),
        SIMPLER_TEST(vector_example_runs_again_on_the_same_arena),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
