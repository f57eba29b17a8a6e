/*
 * test_kernel_capture.c — capture and replay of kernel-mode launches
 * through the public API: a framework captures its stream into a graph
 * and replays it with new values in the same device tensors.
 *
 * Callables: pm_support's (y = x * mul + add, then acc += y; km_support.h)
 * and this file's diamond (a = 2x; b = a + k; c = 3a; z = b + c, so
 * z = 8x + k; its kernel fails with ctl[0] when ctl[0] is nonzero, a failure
 * decided by device data, so one replay of a frozen packet can fail and the
 * next succeed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "host/context.h"
#include "host/residency.h"
#include "host/run_args.h"
#include "host/run_slot.h"
#include "kernels.h"
#include "km_support.h"
#include "launch/launch.h"
#include "runtime/entries.h"
#include "simpler/kernel.h"

#define REPLAYS 100

/* ------------------------------------------------------------ the diamond */

/* out = in * mul + add; fails with ctl[0] when nonzero. Args: in, ctl,
 * out, scalars mul, add. */
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

/* Prepares the diamond; returns its id. */
static int32_t kc_prepare(struct simpler_context *ctx)
{
    size_t bytes;
    void *image = kc_image(&bytes);
    int32_t id = -7;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id), 0);
    simpler_callable_free(image);
    return id;
}

/* The diamond's device tensors: z, and ctl (0: succeed). Its x is a
 * caller's tensor (a km_bufs' y, in the chained test). */
struct kc_bufs {
    uint64_t n;
    float *z;
    int32_t *ctl;
    struct simpler_tensor t[3];
    uint64_t s[1];
    struct simpler_args args;
};

static void kc_set_ctl(struct kc_bufs *d, int32_t code)
{
    ts_to_dev(d->ctl, &code, sizeof code);
}

static void kc_bufs_make(struct kc_bufs *d, const float *x, uint64_t n, float k)
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

static void kc_bufs_free(struct kc_bufs *d)
{
    assert_int_equal(simdev_free(d->z), 0);
    assert_int_equal(simdev_free(d->ctl), 0);
}

/* z == 8 * x + k in every element, x read from the device now. */
static bool kc_holds(const struct kc_bufs *d, const float *x_dev, float k)
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

/* -------------------------------------------------------------- helpers */

/* Ends the capture on `s` and instantiates it. */
static simdev_graph_exec_t end_and_instantiate(simdev_stream_t s, simdev_graph_t *graph)
{
    assert_int_equal(simdev_stream_end_capture(s, graph), 0);
    simdev_graph_exec_t exec = NULL;
    assert_int_equal(simdev_graph_instantiate(&exec, *graph), 0);
    return exec;
}

static void graph_free(simdev_graph_exec_t exec, simdev_graph_t graph)
{
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
}

static void counters(struct simpler_context *ctx, uint64_t *packets, uint64_t *resolved)
{
    sp_test_kernel_counters(ctx, packets, resolved);
}

/* The round gate's acquires and releases (equal, and one per round, when
 * every round held it alone). */
static void gate_counts(struct simpler_context *ctx, uint64_t *acquired, uint64_t *released)
{
    struct simdev_sem_info info;
    assert_int_equal(simdev_sem_info(ctx->kernel.chain.gate, &info), 0);
    *acquired = info.acquired;
    *released = info.released;
}

/* --------------------------------------------------- warm-up and replays */

static void test_warm_up_capture_and_replays_with_fresh_inputs_do_no_host_work(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), KM_N, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);

    /* Eager warm-up. */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f));

    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = end_and_instantiate(s, &graph);
    memset(&a, 0xA5, sizeof a); /* the graph holds its own packet */

    uint64_t packets, resolved, packets_after, resolved_after;
    counters(ctx, &packets, &resolved);
    assert_int_equal(packets, 2);  /* warm-up and the captured launch */
    assert_int_equal(resolved, 1); /* the one prepare */
    uint64_t acq0, rel0;
    gate_counts(ctx, &acq0, &rel0);
    for (int r = 0; r < REPLAYS; r++) {
        float base = (float)(r + 1);
        km_bufs_refill(&b, base);
        assert_int_equal(simdev_graph_launch(exec, s), 0);
        assert_int_equal(simdev_stream_sync(s), 0);
        if (!km_bufs_hold(&b, base, 2.0f, 0.5f, 1.0f))
            fail_msg("replay %d: outputs wrong (the replay did not read the new x)", r);
    }
    counters(ctx, &packets_after, &resolved_after);
    assert_int_equal(packets_after, packets);   /* larger: a replay encoded a packet */
    assert_int_equal(resolved_after, resolved); /* larger: a replay resolved a callable */
    uint64_t acq, rel;
    gate_counts(ctx, &acq, &rel);
    assert_int_equal(acq - acq0, REPLAYS); /* each replayed round took the gate once */
    assert_int_equal(rel - rel0, REPLAYS); /* and gave it back */

    graph_free(exec, graph);
    km_closing(ctx, s, &b);
}

static void test_cold_capture_with_a_callable_prepared_during_the_capture(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open_bare(), KM_N, 3.0f);

    assert_int_equal(simdev_stream_begin_capture(s), 0);
    /* First prepare of the context, from the capturing thread: its
     * allocations, copies and syncs are on the context's own stream. */
    size_t bytes;
    void *image = pm_image(&bytes);
    int32_t id = -1;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id), 0);
    simpler_callable_free(image);
    assert_int_equal(id, 0);
    enum simdev_capture_mode mode = SIMDEV_CAPTURE_MODE_STRICT;
    assert_int_equal(simdev_thread_exchange_capture_mode(&mode), 0);
    assert_int_equal(mode, SIMDEV_CAPTURE_MODE_STRICT); /* RELAXED: prepare left its mode behind */
    struct km_args a;
    km_args_make(&a, &b, 1.5f, 0.25f, 0, 1);
    assert_int_equal(simpler_kernel_mode_launch(ctx, id, &a.args, s), 0);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = end_and_instantiate(s, &graph); /* INVALIDATED: prepare broke it */
    assert_true(km_bufs_untouched(&b)); /* false: the captured launch ran eagerly */

    for (int r = 0; r < 3; r++) {
        km_bufs_refill(&b, (float)r);
        assert_int_equal(simdev_graph_launch(exec, s), 0);
        assert_int_equal(simdev_stream_sync(s), 0);
        assert_true(km_bufs_hold(&b, (float)r, 1.5f, 0.25f, 1.0f));
    }
    graph_free(exec, graph);
    km_closing(ctx, s, &b);
}

/* ------------------------------------------------------- graph shapes */

static void test_two_callables_chained_and_a_diamond_in_one_graph(void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    int32_t diamond = kc_prepare(ctx);
    assert_int_equal(diamond, 1);
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b;
    km_bufs_alloc(&b, KM_N, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    struct kc_bufs d;
    kc_bufs_make(&d, b.y, KM_N, 0.75f); /* the diamond's x is pm's y */

    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, diamond, &d.args, s), 0);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = end_and_instantiate(s, &graph);
    for (int r = 0; r < 10; r++) {
        km_bufs_refill(&b, (float)r);
        assert_int_equal(simdev_graph_launch(exec, s), 0);
        assert_int_equal(simdev_stream_sync(s), 0);
        assert_true(km_bufs_hold(&b, (float)r, 2.0f, 0.5f, 1.0f));
        /* false: the diamond ran before the first round wrote y, or a task
         * of the diamond ran before its inputs */
        assert_true(kc_holds(&d, b.y, 0.75f));
    }
    graph_free(exec, graph);
    kc_bufs_free(&d);
    km_closing(ctx, s, &b);
}

/* Captures one pm launch over b on s. */
static simdev_graph_exec_t capture_pm(struct simpler_context *ctx, simdev_stream_t s,
                                      const struct km_bufs *b, float mul, float add,
                                      simdev_graph_t *graph)
{
    struct km_args a;
    km_args_make(&a, b, mul, add, 0, 1);
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    return end_and_instantiate(s, graph);
}

static void test_two_graphs_alternately_then_one_destroyed_and_recaptured(void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b1, b2;
    km_bufs_alloc(&b1, KM_N, 0.0f);
    km_bufs_alloc(&b2, KM_N, 0.0f);
    simdev_graph_t g1, g2;
    simdev_graph_exec_t e1 = capture_pm(ctx, s, &b1, 2.0f, 0.5f, &g1);
    simdev_graph_exec_t e2 = capture_pm(ctx, s, &b2, 3.0f, 1.5f, &g2);
    for (int r = 0; r < 10; r++) {
        km_bufs_refill(&b1, (float)r);
        km_bufs_refill(&b2, (float)(r + 5));
        assert_int_equal(simdev_graph_launch(e1, s), 0);
        assert_int_equal(simdev_graph_launch(e2, s), 0);
        assert_int_equal(simdev_stream_sync(s), 0);
        assert_true(km_bufs_hold(&b1, (float)r, 2.0f, 0.5f, 1.0f));
        assert_true(km_bufs_hold(&b2, (float)(r + 5), 3.0f, 1.5f, 1.0f));
    }
    graph_free(e1, g1);
    /* Recaptured with other scalars: the new graph has the new packet. */
    e1 = capture_pm(ctx, s, &b1, 0.5f, 4.0f, &g1);
    for (int r = 0; r < 3; r++) {
        km_bufs_refill(&b1, (float)r);
        km_bufs_refill(&b2, (float)r);
        assert_int_equal(simdev_graph_launch(e2, s), 0);
        assert_int_equal(simdev_graph_launch(e1, s), 0);
        assert_int_equal(simdev_stream_sync(s), 0);
        assert_true(km_bufs_hold(&b1, (float)r, 0.5f, 4.0f, 1.0f));
        assert_true(km_bufs_hold(&b2, (float)r, 3.0f, 1.5f, 1.0f));
    }
    graph_free(e1, g1);
    graph_free(e2, g2);
    km_bufs_free(&b1);
    km_bufs_free(&b2);
    assert_int_equal(simdev_stream_destroy(s), 0);
    pm_close(ctx);
}

static void test_eager_launches_interleaved_with_replays_on_one_stream(void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    simdev_stream_t s = ts_new_stream();
    struct km_bufs eager, replayed;
    km_bufs_alloc(&eager, KM_N, 1.0f);
    km_bufs_alloc(&replayed, KM_N, 2.0f);
    simdev_graph_t g;
    simdev_graph_exec_t e = capture_pm(ctx, s, &replayed, 1.0f, 0.25f, &g);
    struct km_args a;
    km_args_make(&a, &eager, 2.0f, 0.5f, 0, 1);
    const uint32_t rounds = 20;
    for (uint32_t r = 0; r < rounds; r++) { /* no sync in between */
        assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
        assert_int_equal(simdev_graph_launch(e, s), 0);
    }
    assert_int_equal(simdev_stream_sync(s), 0);
    /* acc = 1 + 20 y in each: every round whole, none lost or doubled */
    assert_true(km_bufs_hold_rounds(&eager, 1.0f, 2.0f, 0.5f, rounds));
    assert_true(km_bufs_hold_rounds(&replayed, 2.0f, 1.0f, 0.25f, rounds));
    graph_free(e, g);
    km_bufs_free(&eager);
    km_bufs_free(&replayed);
    assert_int_equal(simdev_stream_destroy(s), 0);
    pm_close(ctx);
}

/* ------------------------------------------------- concurrent replays */

struct replayer {
    simdev_graph_exec_t exec; /* NULL: launch eagerly */
    struct simpler_context *ctx;
    const struct simpler_args *args;
    simdev_stream_t stream;
    int rc;
};

static void *replayer_main(void *arg)
{
    struct replayer *p = arg;
    assert_int_equal(simdev_set_device(0), 0);
    p->rc = 0;
    for (int r = 0; r < REPLAYS && p->rc == 0; r++) {
        p->rc = p->exec ? simdev_graph_launch(p->exec, p->stream)
                        : simpler_kernel_mode_launch(p->ctx, 0, p->args, p->stream);
        if (p->rc == 0 && r % 10 == 9)
            p->rc = simdev_stream_sync(p->stream);
    }
    if (p->rc == 0)
        p->rc = simdev_stream_sync(p->stream);
    return NULL;
}

static void test_two_graphs_replayed_at_once_while_a_third_thread_launches_eagerly(void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    simdev_stream_t s[3] = {ts_new_stream(), ts_new_stream(), ts_new_stream()};
    struct km_bufs b[3];
    for (int i = 0; i < 3; i++)
        km_bufs_alloc(&b[i], KM_N, (float)i);
    simdev_graph_t g1, g2;
    simdev_graph_exec_t e1 = capture_pm(ctx, s[0], &b[0], 1.0f, 0.25f, &g1);
    simdev_graph_exec_t e2 = capture_pm(ctx, s[1], &b[1], 2.0f, 0.5f, &g2);
    struct km_args a;
    km_args_make(&a, &b[2], 0.5f, 1.0f, 0, 1);
    uint64_t acq0, rel0;
    gate_counts(ctx, &acq0, &rel0);

    struct replayer p[3] = {{e1, ctx, NULL, s[0], -1},
                            {e2, ctx, NULL, s[1], -1},
                            {NULL, ctx, &a.args, s[2], -1}};
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&t[i], NULL, replayer_main, &p[i]), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(p[i].rc, 0);
    /* acc = 1 + 100 y: 100 whole rounds each, none interleaved with
     * another's (a round overwritten by another would leave wrong values) */
    assert_true(km_bufs_hold_rounds(&b[0], 0.0f, 1.0f, 0.25f, REPLAYS));
    assert_true(km_bufs_hold_rounds(&b[1], 1.0f, 2.0f, 0.5f, REPLAYS));
    assert_true(km_bufs_hold_rounds(&b[2], 2.0f, 0.5f, 1.0f, REPLAYS));
    uint64_t acq, rel;
    gate_counts(ctx, &acq, &rel);
    assert_int_equal(acq - acq0, 3 * REPLAYS); /* every round went through the gate */
    assert_int_equal(rel - rel0, 3 * REPLAYS);

    graph_free(e1, g1);
    graph_free(e2, g2);
    for (int i = 0; i < 3; i++) {
        km_bufs_free(&b[i]);
        assert_int_equal(simdev_stream_destroy(s[i]), 0);
    }
    pm_close(ctx);
}

/* A capture open on one thread while another launches eagerly: the eager
 * launch runs at once and the capture is unaffected. */
struct capturer {
    struct simpler_context *ctx;
    simdev_stream_t stream;
    const struct simpler_args *args;
    struct ts_gate *launched, *release;
    simdev_graph_t graph;
    int rc;
};

static void *capturer_main(void *arg)
{
    struct capturer *c = arg;
    assert_int_equal(simdev_set_device(0), 0);
    c->rc = simdev_stream_begin_capture(c->stream);
    if (c->rc == 0)
        c->rc = simpler_kernel_mode_launch(c->ctx, 0, c->args, c->stream);
    ts_gate_pass(c->launched); /* tell the main thread, then wait for it */
    ts_gate_pass(c->release);
    int end = simdev_stream_end_capture(c->stream, &c->graph);
    if (c->rc == 0)
        c->rc = end;
    return NULL;
}

static void test_an_eager_launch_during_another_threads_capture_stays_eager(void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    simdev_stream_t cs = ts_new_stream(), es = ts_new_stream();
    struct km_bufs cb, eb;
    km_bufs_alloc(&cb, KM_N, 0.0f);
    km_bufs_alloc(&eb, KM_N, 4.0f);
    struct km_args ca, ea;
    km_args_make(&ca, &cb, 2.0f, 0.5f, 0, 1);
    km_args_make(&ea, &eb, 3.0f, 0.5f, 0, 2);
    struct ts_gate launched, release;
    ts_gate_init(&launched);
    ts_gate_init(&release);
    struct capturer c = {ctx, cs, &ca.args, &launched, &release, NULL, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, capturer_main, &c), 0);
    ts_gate_wait_arrivals(&launched, 1);
    ts_gate_open(&launched);
    /* The capture is open and holds a launch of this context. */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &ea.args, es), 0);
    assert_int_equal(simdev_stream_sync(es), 0);
    assert_true(km_bufs_hold(&eb, 4.0f, 3.0f, 0.5f, 1.0f)); /* false: it was captured instead */
    assert_true(km_bufs_untouched(&cb));                    /* false: the captured one ran */
    ts_gate_open(&release);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(c.rc, 0); /* INVALIDATED: the eager launch broke the capture */
    simdev_graph_exec_t exec = NULL;
    assert_int_equal(simdev_graph_instantiate(&exec, c.graph), 0);
    assert_int_equal(simdev_graph_launch(exec, cs), 0);
    assert_int_equal(simdev_stream_sync(cs), 0);
    assert_true(km_bufs_hold(&cb, 0.0f, 2.0f, 0.5f, 1.0f));
    graph_free(exec, c.graph);
    ts_gate_destroy(&launched);
    ts_gate_destroy(&release);
    km_bufs_free(&cb);
    km_bufs_free(&eb);
    assert_int_equal(simdev_stream_destroy(cs), 0);
    assert_int_equal(simdev_stream_destroy(es), 0);
    pm_close(ctx);
}

/* ------------------------------------------------------------- errors */

static void test_a_device_error_in_a_replay_reaches_its_sync_and_the_next_replay_works(
    void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open_bare();
    int32_t diamond = kc_prepare(ctx);
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b; /* only its x: the diamond's input */
    km_bufs_alloc(&b, KM_N, 1.0f);
    struct kc_bufs d;
    kc_bufs_make(&d, b.x, KM_N, 2.0f);
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, diamond, &d.args, s), 0);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = end_and_instantiate(s, &graph);

    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(kc_holds(&d, b.x, 2.0f));
    kc_set_ctl(&d, 377); /* the first task of the next replay fails with 377 */
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), -377); /* 0: the round's failure was lost */
    kc_set_ctl(&d, 0);
    km_bufs_refill(&b, 9.0f);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0); /* -377: the error outlived its sync */
    assert_true(kc_holds(&d, b.x, 2.0f));
    uint64_t acq, rel;
    gate_counts(ctx, &acq, &rel);
    assert_int_equal(acq, 3); /* the failed round gave the gate back too */
    assert_int_equal(rel, 3);
    graph_free(exec, graph);
    kc_bufs_free(&d);
    km_closing(ctx, s, &b);
}

static void test_a_replay_after_its_context_closed_is_refused_on_the_device(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), KM_N, 0.0f);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_pm(ctx, s, &b, 2.0f, 0.5f, &graph);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f));

    /* Closing with the graph alive is allowed: the graph keeps no pointer
     * the device follows before the context's gate and generation. */
    pm_close(ctx);
    km_bufs_refill(&b, 5.0f);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    /* 0: a closed context's round ran (its freed arena under ASan) */
    assert_int_equal(simdev_stream_sync(s), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_true(km_bufs_untouched(&b)); /* nothing of the round ran */
    /* A new context on the device: the old graph still cannot reach it. */
    struct simpler_context *next = km_open();
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_true(km_bufs_untouched(&b));
    graph_free(exec, graph);
    pm_close(next);
    km_bufs_free(&b);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* Returns r when acc == 1 + r y in every element (y exact), else -1. */
static int whole_rounds(const struct km_bufs *b, float x_base, float mul, float add, int most)
{
    for (int r = 0; r <= most; r++)
        if (km_bufs_hold_rounds(b, x_base, mul, add, (uint32_t)r))
            return r;
    return -1;
}

static void test_closing_while_replays_are_queued_ends_them_whole_or_refused(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), KM_N, 0.0f);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_pm(ctx, s, &b, 1.0f, 0.5f, &graph);
    const int queued = 20;
    for (int r = 0; r < queued; r++)
        assert_int_equal(simdev_graph_launch(exec, s), 0);
    pm_close(ctx); /* while replays run on a stream the context does not own */
    int rc = simdev_stream_sync(s);
    int ran = whole_rounds(&b, 0.0f, 1.0f, 0.5f, queued);
    if (ran < 0 && km_bufs_untouched(&b))
        ran = 0;
    if (ran < 0)
        fail_msg("a round was cut short by the close (acc is no whole number of rounds)");
    /* Either every queued replay ran before the close took the gate, or
     * the ones after it were refused. */
    if (ran == queued)
        assert_int_equal(rc, 0);
    else
        assert_int_equal(rc, PTO_RUNTIME_ERR_INVALID_STATE);
    graph_free(exec, graph);
    km_bufs_free(&b);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

/* A launch ops table that fails one op of the chain, every attempt, the
 * host out of memory for good. */
enum lost_step { FAIL_WAIT_CORE, FAIL_STATUS, FAIL_RELEASE };
static enum lost_step g_lost_step;
static simdev_event_t g_aicore_done;

static int lossy_wait(simdev_stream_t stream, simdev_event_t event)
{
    return g_lost_step == FAIL_WAIT_CORE && event == g_aicore_done
               ? -977
               : simdev_stream_wait_event(stream, event);
}

static int lossy_launch_aicpu(simdev_stream_t stream, simdev_aicpu_fn fn, uint32_t threads,
                              const void *args, size_t bytes)
{
    return g_lost_step == FAIL_STATUS && fn == rt_kernel_mode_status_fn
               ? -977
               : simdev_launch_aicpu(stream, fn, threads, args, bytes);
}

static int lossy_release(simdev_stream_t stream, simdev_sem_t gate)
{
    return g_lost_step == FAIL_RELEASE ? -977 : simdev_stream_sem_release(stream, gate);
}

static void use_lossy_ops(struct simpler_context *ctx, enum lost_step step,
                          struct rt_launch_ops *ops)
{
    *ops = rt_launch_simdev_ops;
    ops->wait = lossy_wait;
    ops->launch_aicpu = lossy_launch_aicpu;
    ops->gate_release = lossy_release;
    g_lost_step = step;
    g_aicore_done = ctx->kernel.chain.aicore_done;
    sp_test_kernel_set_launch_ops(ctx, ops);
}

static void test_a_gate_unit_never_given_back_poisons_and_close_ends_waiting_replays(void **state)
{
    (void)state;
    /* Each committed step up to the release: if it is never enqueued, the
     * release is not either. */
    for (int step = FAIL_WAIT_CORE; step <= FAIL_RELEASE; step++) {
        struct simpler_context *ctx;
        simdev_stream_t s;
        struct km_bufs b;
        km_opening(&ctx, &s, &b, km_open(), KM_N, 0.0f);
        simdev_stream_t rs = ts_new_stream();
        struct km_bufs rb;
        km_bufs_alloc(&rb, KM_N, 1.0f);
        simdev_graph_t graph;
        simdev_graph_exec_t exec = capture_pm(ctx, rs, &rb, 2.0f, 0.5f, &graph);

        struct rt_launch_ops ops;
        use_lossy_ops(ctx, (enum lost_step)step, &ops);
        struct km_args a;
        km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
        a.s[3] = PM_FLAG_GATE; /* its first task waits at pm_gate: the round holds the unit */
        assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), -977);
        sp_test_kernel_set_launch_ops(ctx, NULL);
        ts_gate_wait_arrivals(&pm_gate, 1);
        /* Poisoned: every later launch returns the cause (0: a launch
         * accepted behind a unit that never comes back). */
        assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), -977);
        /* A replay's acquire now waits; its owner is the close. */
        struct simdev_sem_info info;
        assert_int_equal(simdev_sem_info(ctx->kernel.chain.gate, &info), 0);
        assert_int_equal(simdev_graph_launch(exec, rs), 0);
        assert_true(ts_sem_wait_tickets(ctx->kernel.chain.gate, info.tickets + 1));
        ts_gate_open(&pm_gate); /* the round ends, keeping the unit */
        pm_close(ctx);          /* hangs: close waited for the lost unit */
        assert_int_equal(simdev_stream_sync(rs), PTO_RUNTIME_ERR_INVALID_STATE);
        assert_true(km_bufs_untouched(&rb));
        assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f)); /* the round itself ran whole */
        graph_free(exec, graph);
        km_bufs_free(&rb);
        km_bufs_free(&b);
        assert_int_equal(simdev_stream_destroy(rs), 0);
        assert_int_equal(simdev_stream_sync(s), 0);
        assert_int_equal(simdev_stream_destroy(s), 0);
        pm_observers_reset();
    }
}

static void test_a_captured_launch_that_fails_to_record_loses_no_unit(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), KM_N, 0.0f);
    simdev_stream_t cs = ts_new_stream();
    struct rt_launch_ops ops;
    use_lossy_ops(ctx, FAIL_RELEASE, &ops);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    assert_int_equal(simdev_stream_begin_capture(cs), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, cs), -977);
    sp_test_kernel_set_launch_ops(ctx, NULL);
    simdev_graph_t graph = NULL;
    /* 0: a graph that holds an acquire without its release */
    assert_int_equal(simdev_stream_end_capture(cs, &graph), PTO_RUNTIME_ERR_CAPTURE_UNJOINED);
    assert_null(graph);
    /* Nothing ran, nothing was lost: the context is not poisoned. */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f));
    assert_int_equal(simdev_stream_destroy(cs), 0);
    km_closing(ctx, s, &b);
}

/* ------------------------------------------------- forbidden in capture */

enum forbidden { SYNC_COPY, SYNCHRONIZE, ALLOCATION };

static int forbidden_call(enum forbidden what, simdev_stream_t other, float *dev_buf)
{
    float h = 1.0f;
    void *p = NULL;
    switch (what) {
    case SYNC_COPY:
        return simdev_memcpy(dev_buf, &h, sizeof h, SIMDEV_COPY_HOST_TO_DEVICE);
    case SYNCHRONIZE:
        return simdev_stream_sync(other);
    default: {
        int rc = simdev_malloc(&p, 64);
        if (rc == 0)
            simdev_free(p);
        return rc;
    }
    }
}

static void test_forbidden_calls_amid_captured_launches_fail_and_fail_the_capture(void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    simdev_stream_t s = ts_new_stream(), other = ts_new_stream();
    struct km_bufs b;
    km_bufs_alloc(&b, KM_N, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    for (int what = SYNC_COPY; what <= ALLOCATION; what++) {
        assert_int_equal(simdev_stream_begin_capture(s), 0);
        assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
        assert_int_equal(forbidden_call((enum forbidden)what, other, b.x),
                         PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED); /* 0: allowed inside a capture */
        assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
        simdev_graph_t graph = NULL;
        /* 0: a graph that silently lacks the forbidden call */
        assert_int_equal(simdev_stream_end_capture(s, &graph),
                         PTO_RUNTIME_ERR_CAPTURE_INVALIDATED);
        assert_null(graph);
    }
    assert_true(km_bufs_untouched(&b)); /* no captured round ran */
    /* The context still works, eagerly and captured. */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f));
    km_bufs_free(&b);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_stream_destroy(other), 0);
    pm_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warm_up_capture_and_replays_with_fresh_inputs_do_no_host_work),
        cmocka_unit_test(test_cold_capture_with_a_callable_prepared_during_the_capture),
        cmocka_unit_test(test_two_callables_chained_and_a_diamond_in_one_graph),
        cmocka_unit_test(test_two_graphs_alternately_then_one_destroyed_and_recaptured),
        cmocka_unit_test(test_eager_launches_interleaved_with_replays_on_one_stream),
        cmocka_unit_test(test_two_graphs_replayed_at_once_while_a_third_thread_launches_eagerly),
        cmocka_unit_test(test_an_eager_launch_during_another_threads_capture_stays_eager),
        cmocka_unit_test(test_a_device_error_in_a_replay_reaches_its_sync_and_the_next_replay_works),
        cmocka_unit_test(test_a_replay_after_its_context_closed_is_refused_on_the_device),
        cmocka_unit_test(test_closing_while_replays_are_queued_ends_them_whole_or_refused),
        SIMPLER_TEST_WITH(test_a_gate_unit_never_given_back_poisons_and_close_ends_waiting_replays,
                          NULL, pm_teardown),
        cmocka_unit_test(test_a_captured_launch_that_fails_to_record_loses_no_unit),
        cmocka_unit_test(test_forbidden_calls_amid_captured_launches_fail_and_fail_the_capture),
    };
    return cmocka_run_group_tests(tests, ts_device_setup, ts_device_teardown);
}
