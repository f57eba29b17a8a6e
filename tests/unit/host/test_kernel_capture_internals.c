/*
 * test_kernel_capture_internals.c — capture and replay of kernel-mode
 * launches checked from inside the host: replays that encode no packet and
 * resolve no callable, the round gate taken and given back once per round
 * (also when a replay fails), and launch ops that lose a committed step
 * (the context is poisoned, close still ends waiting replays) or fail to
 * record in a capture (no unit lost).
 *
 * Callables: pm_support's (km_support.h) and kc_support's diamond, as in
 * tests/scenario/test_kernel_capture.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "host/context.h"
#include "kc_support.h"
#include "launch/launch.h"
#include "runtime/entries.h"

#define REPLAYS 100

/* -------------------------------------------------------------- helpers */

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
    ops->enqueue_batch = NULL; /* the chain goes through the lossy entries below */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warm_up_capture_and_replays_with_fresh_inputs_do_no_host_work),
        cmocka_unit_test(test_two_graphs_replayed_at_once_while_a_third_thread_launches_eagerly),
        cmocka_unit_test(test_a_device_error_in_a_replay_reaches_its_sync_and_the_next_replay_works),
        SIMPLER_TEST_WITH(test_a_gate_unit_never_given_back_poisons_and_close_ends_waiting_replays,
                          NULL, pm_teardown),
        cmocka_unit_test(test_a_captured_launch_that_fails_to_record_loses_no_unit),
    };
    return cmocka_run_group_tests(tests, ts_device_setup, ts_device_teardown);
}
