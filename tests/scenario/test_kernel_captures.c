/*
 * test_kernel_captures.c — several stream captures holding launches of one
 * kernel context at once: each capture gets its own pair of the context's
 * capture streams (config.max_captures of them, committed at init), so the
 * captures never wait on each other's points; one capture more is refused
 * before anything is enqueued and harms no other capture; a pair is free
 * again once its capture ended. Public API only.
 *
 * The callable is pm_support's (y = x * mul + add, then acc += y) on
 * km_support's device buffers: acc counts the rounds that ran on a set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "km_support.h"

#define N 1024
#define THREADS 4
#define REPLAYS 100

struct capturer {
    struct simpler_context *ctx;
    pthread_barrier_t *all_open, *all_launched, *may_end;
    simdev_stream_t stream;
    struct km_bufs bufs;
    struct km_args args;
    float x_base;
    int launch_rc, end_rc;
    simdev_graph_t graph;
    simdev_graph_exec_t exec;
    int replay_failures;
};

/* Opens a capture on its own stream, launches into it once every capture
 * is open, and ends it once the main thread has tried its own. */
static void *capture_one(void *arg)
{
    struct capturer *c = arg;
    int begin = simdev_stream_begin_capture(c->stream);
    pthread_barrier_wait(c->all_open);
    c->launch_rc = begin ? begin : simpler_kernel_mode_launch(c->ctx, 0, &c->args.args, c->stream);
    pthread_barrier_wait(c->all_launched);
    pthread_barrier_wait(c->may_end);
    c->end_rc = simdev_stream_end_capture(c->stream, &c->graph);
    return NULL;
}

static void *replay_many(void *arg)
{
    struct capturer *c = arg;
    for (int r = 0; r < REPLAYS; r++)
        if (simdev_graph_launch(c->exec, c->stream))
            c->replay_failures++;
    if (simdev_stream_sync(c->stream))
        c->replay_failures++;
    return NULL;
}

/* Four threads capture at once on one context with max_captures = 4 (the
 * default): four graphs, each replayed 100 times at once with the others,
 * exact; a fifth capture's launch is refused and nothing of the four is
 * harmed; once they ended, a new capture gets a pair. */
static void test_four_captures_at_once_and_a_fifth_refused(void **state)
{
    (void)state;
    struct simpler_context *ctx = km_open();
    pthread_barrier_t all_open, all_launched, may_end;
    assert_int_equal(pthread_barrier_init(&all_open, NULL, THREADS + 1), 0);
    assert_int_equal(pthread_barrier_init(&all_launched, NULL, THREADS + 1), 0);
    assert_int_equal(pthread_barrier_init(&may_end, NULL, THREADS + 1), 0);
    struct capturer c[THREADS];
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].ctx = ctx;
        c[i].all_open = &all_open;
        c[i].all_launched = &all_launched;
        c[i].may_end = &may_end;
        c[i].stream = ts_new_stream();
        c[i].x_base = (float)(i + 1);
        km_bufs_alloc(&c[i].bufs, N, c[i].x_base);
        km_args_make(&c[i].args, &c[i].bufs, 2.0f, (float)i, 0, (uint64_t)i);
        assert_int_equal(pthread_create(&threads[i], NULL, capture_one, &c[i]), 0);
    }
    /* A fifth capture, opened while the four are: its launch finds every
     * pair serving another capture. */
    simdev_stream_t fifth = ts_new_stream();
    struct km_bufs fifth_bufs;
    km_bufs_alloc(&fifth_bufs, N, 9.0f);
    struct km_args fifth_args;
    km_args_make(&fifth_args, &fifth_bufs, 1.0f, 1.0f, 0, 9);
    assert_int_equal(simdev_stream_begin_capture(fifth), 0);
    pthread_barrier_wait(&all_open);
    pthread_barrier_wait(&all_launched);
    struct simpler_context_info before;
    assert_int_equal(simpler_get_context_info(ctx, &before), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &fifth_args.args, fifth),
                     PTO_RUNTIME_ERR_CAPACITY_EXCEEDED);
    struct simpler_context_info after;
    assert_int_equal(simpler_get_context_info(ctx, &after), 0);
    assert_int_equal(after.packets_encoded, before.packets_encoded); /* refused: nothing counted */
    simdev_graph_t fifth_graph;
    assert_int_equal(simdev_stream_end_capture(fifth, &fifth_graph), 0); /* refused cleanly */
    size_t nodes = 9;
    assert_int_equal(simdev_graph_node_count(fifth_graph, &nodes), 0);
    assert_int_equal(nodes, 0); /* the refused launch enqueued something */
    assert_int_equal(simdev_graph_destroy(fifth_graph), 0);
    pthread_barrier_wait(&may_end);
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(c[i].launch_rc, 0); /* CAPTURE_UNSUPPORTED: captures waited on each other */
        assert_int_equal(c[i].end_rc, 0);    /* INVALIDATED: one capture harmed another */
        assert_int_equal(simdev_graph_instantiate(&c[i].exec, c[i].graph), 0);
        assert_true(km_bufs_untouched(&c[i].bufs)); /* the captured launch ran eagerly */
    }
    /* The four graphs replayed at once, 100 times each. */
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, replay_many, &c[i]), 0);
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(c[i].replay_failures, 0);
        /* 1 + 100 y in every element: each graph ran its own round 100 times */
        assert_true(km_bufs_hold_rounds(&c[i].bufs, c[i].x_base, 2.0f, (float)i, REPLAYS));
    }
    /* Every pair is free again: the fifth stream captures a launch now. */
    assert_int_equal(simdev_stream_begin_capture(fifth), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &fifth_args.args, fifth), 0);
    assert_int_equal(simdev_stream_end_capture(fifth, &fifth_graph), 0);
    simdev_graph_exec_t fifth_exec;
    assert_int_equal(simdev_graph_instantiate(&fifth_exec, fifth_graph), 0);
    assert_int_equal(simdev_graph_launch(fifth_exec, fifth), 0);
    assert_int_equal(simdev_stream_sync(fifth), 0);
    assert_true(km_bufs_hold(&fifth_bufs, 9.0f, 1.0f, 1.0f, 1.0f));
    assert_int_equal(simdev_graph_exec_destroy(fifth_exec), 0);
    assert_int_equal(simdev_graph_destroy(fifth_graph), 0);
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(simdev_graph_exec_destroy(c[i].exec), 0);
        assert_int_equal(simdev_graph_destroy(c[i].graph), 0);
        km_bufs_free(&c[i].bufs);
        assert_int_equal(simdev_stream_destroy(c[i].stream), 0);
    }
    km_bufs_free(&fifth_bufs);
    assert_int_equal(simdev_stream_destroy(fifth), 0);
    pthread_barrier_destroy(&all_open);
    pthread_barrier_destroy(&all_launched);
    pthread_barrier_destroy(&may_end);
    pm_close(ctx);
}

/* One capture may launch many rounds into its own pair; with max_captures
 * = 1 a second open capture is refused, and an eager launch meanwhile
 * stays eager. */
static void test_one_pair_serves_one_capture_and_eager_launches_stay_eager(void **state)
{
    (void)state;
    struct simpler_config cfg = km_config();
    cfg.max_captures = 1;
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), 0);
    size_t bytes;
    void *image = pm_image(&bytes);
    int32_t id = -1;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id), 0);
    simpler_callable_free(image);
    simdev_stream_t s1 = ts_new_stream(), s2 = ts_new_stream(), eager = ts_new_stream();
    struct km_bufs b1, b2, be;
    km_bufs_alloc(&b1, N, 1.0f);
    km_bufs_alloc(&b2, N, 2.0f);
    km_bufs_alloc(&be, N, 3.0f);
    struct km_args a1, a2, ae;
    km_args_make(&a1, &b1, 2.0f, 1.0f, 0, 1);
    km_args_make(&a2, &b2, 2.0f, 1.0f, 0, 2);
    km_args_make(&ae, &be, 2.0f, 1.0f, 0, 3);
    assert_int_equal(simdev_stream_begin_capture(s1), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, id, &a1.args, s1), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, id, &a1.args, s1), 0); /* its own pair again */
    assert_int_equal(simdev_stream_begin_capture(s2), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, id, &a2.args, s2),
                     PTO_RUNTIME_ERR_CAPACITY_EXCEEDED);
    assert_int_equal(simpler_kernel_mode_launch(ctx, id, &ae.args, eager), 0);
    simdev_graph_t g1, g2;
    assert_int_equal(simdev_stream_end_capture(s2, &g2), 0);
    assert_int_equal(simdev_stream_end_capture(s1, &g1), 0);
    /* (Synchronous calls wait until this thread's captures ended: strict
     * mode forbids them to a capturing thread.) */
    assert_int_equal(simdev_stream_sync(eager), 0);
    assert_true(km_bufs_hold(&be, 3.0f, 2.0f, 1.0f, 1.0f)); /* the eager round ran, once */
    simdev_graph_exec_t e1;
    assert_int_equal(simdev_graph_instantiate(&e1, g1), 0);
    assert_int_equal(simdev_graph_launch(e1, s1), 0);
    assert_int_equal(simdev_stream_sync(s1), 0);
    assert_true(km_bufs_hold_rounds(&b1, 1.0f, 2.0f, 1.0f, 2)); /* the two captured rounds */
    assert_true(km_bufs_untouched(&b2));
    assert_int_equal(simdev_graph_exec_destroy(e1), 0);
    assert_int_equal(simdev_graph_destroy(g1), 0);
    assert_int_equal(simdev_graph_destroy(g2), 0);
    km_bufs_free(&b1);
    km_bufs_free(&b2);
    km_bufs_free(&be);
    assert_int_equal(simdev_stream_destroy(s1), 0);
    assert_int_equal(simdev_stream_destroy(s2), 0);
    assert_int_equal(simdev_stream_destroy(eager), 0);
    pm_close(ctx);
}

/* Closing the context while a capture holds one of its pairs would break
 * the caller's capture (draining or destroying a capturing stream does):
 * refused, nothing changed, and the capture still ends cleanly and
 * replays; then the close works. */
static void test_close_is_refused_while_a_capture_holds_a_pair(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), N, 1.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 1.0f, 0, 1);
    size_t committed = simpler_committed_device_memory(ctx);
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simpler_finalize_device(ctx), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_committed_device_memory(ctx), committed); /* less: it released */
    simdev_graph_t graph;
    assert_int_equal(simdev_stream_end_capture(s, &graph), 0); /* INVALIDATED: close drained it */
    simdev_graph_exec_t exec;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b, 1.0f, 2.0f, 1.0f, 1.0f));
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    km_closing(ctx, s, &b); /* the close, now that no capture holds a pair */
}

/* max_captures outside 1..SIMPLER_MAX_CAPTURES: refused before any state. */
static void test_max_captures_out_of_range_is_refused(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    struct simpler_config cfg = km_config();
    cfg.max_captures = 0;
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    cfg.max_captures = SIMPLER_MAX_CAPTURES + 1;
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_committed_device_memory(ctx), 0);
    struct simpler_config def;
    assert_int_equal(simpler_config_default(&def), 0);
    assert_int_equal(def.max_captures, 4);
    cfg.max_captures = SIMPLER_MAX_CAPTURES; /* the largest works */
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), 0); /* INVALID_STATE: a refusal latched */
    assert_true(simpler_committed_device_memory(ctx) > 0);
    pm_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_four_captures_at_once_and_a_fifth_refused),
        cmocka_unit_test(test_one_pair_serves_one_capture_and_eager_launches_stay_eager),
        cmocka_unit_test(test_close_is_refused_while_a_capture_holds_a_pair),
        cmocka_unit_test(test_max_captures_out_of_range_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, ts_device_teardown);
}
