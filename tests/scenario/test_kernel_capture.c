/*
 * test_kernel_capture.c — capture and replay of kernel-mode launches
 * through the public API: a framework captures its stream into a graph
 * and replays it with new values in the same device tensors.
 *
 * Callables: pm_support's (y = x * mul + add, then acc += y; km_support.h)
 * and kc_support's diamond (z = 8x + k, failing with ctl[0] when ctl[0] is
 * nonzero). The cases that count the host's packets and the round gate's
 * units, or swap the launch ops to lose a step, are
 * unit/host/test_kernel_capture_internals.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>

#include "kc_support.h"

/* --------------------------------------------------- warm-up and replays */

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
        cmocka_unit_test(test_cold_capture_with_a_callable_prepared_during_the_capture),
        cmocka_unit_test(test_two_callables_chained_and_a_diamond_in_one_graph),
        cmocka_unit_test(test_two_graphs_alternately_then_one_destroyed_and_recaptured),
        cmocka_unit_test(test_eager_launches_interleaved_with_replays_on_one_stream),
        cmocka_unit_test(test_an_eager_launch_during_another_threads_capture_stays_eager),
        cmocka_unit_test(test_a_replay_after_its_context_closed_is_refused_on_the_device),
        cmocka_unit_test(test_closing_while_replays_are_queued_ends_them_whole_or_refused),
        cmocka_unit_test(test_forbidden_calls_amid_captured_launches_fail_and_fail_the_capture),
    };
    return cmocka_run_group_tests(tests, ts_device_setup, ts_device_teardown);
}
