/*
 * test_program_mode.c — program mode through simpler.h alone: independent
 * runs, run-ahead, per-run status, copy directions, a lost device, the
 * context's limits and the calls refused out of order.
 *
 * Everything runs a small symbol-form callable (pm_support.h): task 0
 * computes y = x * mul + add, task 1 acc += y and logs its run's tag. The
 * cases that read the host's internals (snapshots, counters, the identity
 * latch) are unit/host/test_program_mode_internals.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "pm_support.h"

/* 2: the caller may overwrite and free its containers right after prepare. */
static void test_caller_containers_freed_after_prepare(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(4);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 0.75f, 0, 0, 3);
    struct simpler_tensor *tensors = malloc(sizeof r.tensors);
    uint64_t *scalars = malloc(sizeof r.scalars);
    struct simpler_args *args = malloc(sizeof *args);
    memcpy(tensors, r.tensors, sizeof r.tensors);
    memcpy(scalars, r.scalars, sizeof r.scalars);
    *args = (struct simpler_args){3, 5, tensors, scalars};
    simpler_run_t run;
    assert_int_equal(simpler_prepare_run(ctx, &run, PM_CALLABLE, args, NULL), 0);
    memset(tensors, 0xA5, sizeof r.tensors);
    memset(scalars, 0xA5, sizeof r.scalars);
    memset(args, 0xA5, sizeof *args);
    free(tensors);
    free(scalars);
    free(args);
    assert_int_equal(simpler_launch_run(ctx, run), 0);
    assert_int_equal(simpler_wait_run(ctx, run), 0); /* nonzero: the run read freed containers */
    assert_int_equal(simpler_finalize_run(ctx, run), 0);
    pm_run_check(&r);
    pm_run_free(&r);
    pm_close(ctx);
}

/* 3: A, B, A prepared independently and launched back to back. */
static void test_a_b_a_back_to_back_are_independent(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(4);
    struct pm_run r[3];
    pm_run_init(&r[0], 2.0f, 1.0f, 0, 0, 10);
    pm_run_init(&r[1], -1.5f, 4.0f, 0, 0, 20);
    pm_run_init(&r[2], 2.0f, 1.0f, 0, 0, 10);
    simpler_run_t runs[3];
    for (int i = 0; i < 3; i++)
        runs[i] = pm_prepare(ctx, &r[i]);
    for (int i = 0; i < 3; i++)
        assert_int_equal(simpler_launch_run(ctx, runs[i]), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(simpler_wait_run(ctx, runs[i]), 0);
        assert_int_equal(simpler_finalize_run(ctx, runs[i]), 0);
        pm_run_check(&r[i]); /* a shared staging buffer would mix A's and B's values */
    }
    for (int i = 0; i < 3; i++)
        pm_run_free(&r[i]);
    pm_close(ctx);
}

/* 4: runs 2 and 3 are prepared and launched while run 1 is blocked. */
static void test_run_ahead_while_first_run_blocks(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(4);
    struct pm_run r[3];
    pm_run_init(&r[0], 2.0f, 1.0f, 0, PM_FLAG_GATE, 1);
    pm_run_init(&r[1], 3.0f, 2.0f, 0, 0, 2);
    pm_run_init(&r[2], 4.0f, 3.0f, 0, 0, 3);
    simpler_run_t runs[3];
    runs[0] = pm_prepare(ctx, &r[0]);
    assert_int_equal(simpler_launch_run(ctx, runs[0]), 0);
    ts_gate_wait_arrivals(&pm_gate, 1); /* run 1 is inside its kernel, held */
    int launched_while_blocked = 0;
    for (int i = 1; i < 3; i++) {
        runs[i] = pm_prepare(ctx, &r[i]);
        assert_int_equal(simpler_launch_run(ctx, runs[i]), 0);
        if (simpler_poll_run(ctx, runs[0]) == PTO_RUNTIME_ERR_NOT_READY)
            launched_while_blocked++;
    }
    assert_int_equal(launched_while_blocked, 2); /* fewer: launch waited for run 1 */
    assert_int_equal(simpler_poll_run(ctx, runs[2]), PTO_RUNTIME_ERR_NOT_READY); /* queued behind run 1 */
    ts_gate_open(&pm_gate);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(simpler_wait_run(ctx, runs[i]), 0);
        assert_int_equal(simpler_finalize_run(ctx, runs[i]), 0);
        pm_run_check(&r[i]);
    }
    assert_int_equal(atomic_load(&pm_order_count), 3);
    for (int i = 0; i < 3; i++) /* out of order: the device did not keep launch order */
        assert_int_equal(atomic_load(&pm_order[i]), (uint64_t)(i + 1));
    for (int i = 0; i < 3; i++)
        pm_run_free(&r[i]);
    pm_close(ctx);
}

/* 6: good, failing, good: each run reports its own status. */
static void test_good_failing_good_statuses(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(4);
    struct pm_run r[3];
    pm_run_init(&r[0], 2.0f, 1.0f, 0, 0, 1);
    pm_run_init(&r[1], 2.0f, 1.0f, 321, 0, 2);
    pm_run_init(&r[2], 5.0f, -2.0f, 0, 0, 3);
    simpler_run_t runs[3];
    for (int i = 0; i < 3; i++) {
        runs[i] = pm_prepare(ctx, &r[i]);
        assert_int_equal(simpler_launch_run(ctx, runs[i]), 0);
    }
    assert_int_equal(simpler_wait_run(ctx, runs[0]), 0);
    assert_int_equal(simpler_wait_run(ctx, runs[1]), -321); /* 0: the failure was lost */
    assert_int_equal(simpler_poll_run(ctx, runs[1]), -321);  /* latched, not cleared by the read */
    assert_int_equal(simpler_wait_run(ctx, runs[2]), 0);     /* -321: status leaked forward */
    struct simpler_run_info info;
    assert_int_equal(simpler_get_run_info(ctx, runs[2], &info), 0);
    assert_int_equal(info.status, 0);
    assert_int_equal(info.tasks_submitted, 2);
    assert_int_equal(info.tasks_completed, 2);
    assert_int_equal(info.edges, 1); /* task 1 reads what task 0 wrote */
    for (int i = 0; i < 3; i++)
        assert_int_equal(simpler_finalize_run(ctx, runs[i]), 0);
    pm_run_check(&r[0]);
    pm_run_check_untouched(&r[1]); /* outputs of a failed run are not delivered */
    pm_run_check(&r[2]);
    /* simpler_run reports the run's status the same way. */
    struct pm_run again;
    pm_run_init(&again, 2.0f, 1.0f, 777, 0, 4);
    assert_int_equal(simpler_run(ctx, PM_CALLABLE, &again.args, NULL, NULL), -777);
    again.scalars[2] = 0;
    assert_int_equal(simpler_run(ctx, PM_CALLABLE, &again.args, NULL, NULL), 0);
    pm_run_check(&again);
    pm_run_free(&again);
    for (int i = 0; i < 3; i++)
        pm_run_free(&r[i]);
    pm_close(ctx);
}

/* 9: IN is not copied back, OUT is not copied in. */
static void test_copy_directions(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(4);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 1.0f, 0, PM_FLAG_SCRIBBLE, 5);
    float *x_before = malloc(PM_N * sizeof(float));
    memcpy(x_before, r.x, PM_N * sizeof(float));
    /* The host y holds a pattern no other test writes anywhere; the device
     * buffer y is staged into is allocated fresh (its old bytes may be any
     * earlier test's), and would hold the pattern only if OUT were copied in. */
    const uint32_t pattern = 0x7FBADBADu;
    for (int i = 0; i < PM_N; i++)
        memcpy(&r.y[i], &pattern, sizeof pattern);
    struct simpler_run_info info;
    memset(&info, 0xff, sizeof info);
    assert_int_equal(simpler_run(ctx, PM_CALLABLE, &r.args, NULL, &info), 0);
    assert_int_equal(info.status, 0);
    assert_int_equal(info.tasks_submitted, 2); /* simpler_run did not report the run's counters */
    assert_int_equal(info.tasks_completed, 2);
    assert_true(atomic_load(&pm_out_seen) != pattern); /* OUT was copied in */
    assert_memory_equal(r.x, x_before, PM_N * sizeof(float)); /* IN copied back: device poison */
    pm_run_check(&r);
    free(x_before);
    pm_run_free(&r);
    pm_close(ctx);
}

/* Many rounds of runs launched back to back, each on its own stream. The
 * next run's AICPU program may take every AICPU thread first and then wait
 * for its core loop; the device must not queue that core loop behind other
 * AICPU work (it did once, behind the one-thread status op the chain then
 * ended with: the run stalled until its scheduler's handshake timeout,
 * -100). */
static void test_back_to_back_rounds_never_stall(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(3);
    for (int round = 0; round < 40; round++) {
        struct pm_run r[3];
        simpler_run_t runs[3];
        for (int i = 0; i < 3; i++) {
            pm_run_init(&r[i], 1.5f, (float)round, 0, 0, (uint64_t)i);
            runs[i] = pm_prepare(ctx, &r[i]);
            assert_int_equal(simpler_launch_run(ctx, runs[i]), 0);
        }
        for (int i = 0; i < 3; i++) {
            assert_int_equal(simpler_wait_run(ctx, runs[i]), 0); /* -100: the stall */
            assert_int_equal(simpler_finalize_run(ctx, runs[i]), 0);
            pm_run_check(&r[i]);
            pm_run_free(&r[i]);
        }
    }
    pm_close(ctx);
}

/* A device that became unusable fails the run in flight and every later
 * call that needs it; the run can still be finalized (nothing delivered),
 * finalize_device resets the device, and a new init works. */
static void test_lost_device_fails_later_calls_until_reset(void **state)
{
    (void)state;
    struct simdev_config topo = ts_small_config();
    topo.watchdog_ms = 1000; /* a kernel held longer than this loses the device */
    struct simpler_context *ctx = pm_open_on(2, &topo);
    size_t idle = simpler_committed_device_memory(ctx);
    struct pm_run a, b;
    pm_run_init(&a, 2.0f, 1.0f, 0, PM_FLAG_GATE, 1);
    pm_run_init(&b, 2.0f, 1.0f, 0, 0, 2);
    simpler_run_t ra = pm_prepare(ctx, &a);
    assert_int_equal(simpler_launch_run(ctx, ra), 0);
    ts_gate_wait_arrivals(&pm_gate, 1); /* held in its kernel until the watchdog fires */
    assert_int_equal(simpler_wait_run(ctx, ra), PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(simpler_poll_run(ctx, ra), PTO_RUNTIME_ERR_DEVICE_LOST); /* latched */
    simpler_run_t rb = 0;
    assert_int_equal(simpler_prepare_run(ctx, &rb, PM_CALLABLE, &b.args, NULL),
                     PTO_RUNTIME_ERR_DEVICE_LOST);
    size_t bytes;
    void *image = pm_image(&bytes);
    assert_int_equal(simpler_register_callable(ctx, 2, image, bytes), PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(simpler_finalize_run(ctx, ra), 0); /* released, nothing copied back */
    pm_run_check_untouched(&a);
    assert_int_equal(simpler_committed_device_memory(ctx), idle); /* staging freed anyway */
    ts_gate_open(&pm_gate); /* let the hung kernel return, so the reset can finish */
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(simpler_committed_device_memory(ctx), 0);
    assert_int_equal(simdev_device_is_lost(0), 0); /* the reset made it usable again */
    struct simpler_config cfg;
    simpler_config_default(&cfg);
    cfg.run_capacity = ts_small_run_config();
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
    assert_int_equal(simpler_register_callable(ctx, PM_CALLABLE, image, bytes), 0);
    assert_int_equal(simpler_run(ctx, PM_CALLABLE, &b.args, NULL, NULL), 0);
    pm_run_check(&b);
    simpler_callable_free(image);
    pm_run_free(&a);
    pm_run_free(&b);
    pm_close(ctx);
}

/* A program context owns its device: a second one cannot bind it until
 * the first is finalized; a capacity the device cannot serve is refused at
 * init rather than at every prepare. */
static void test_a_device_has_one_program_context(void **state)
{
    (void)state;
    struct simpler_context *first = pm_open(2);
    struct simpler_context *second;
    struct simpler_config cfg;
    simpler_config_default(&cfg);
    cfg.run_capacity = ts_small_run_config();
    assert_int_equal(simpler_create_device_context(&second), 0);
    size_t committed = simpler_committed_device_memory(first);
    assert_int_equal(simpler_init(second, 0, &cfg), PTO_RUNTIME_ERR_INVALID_STATE); /* would reset it */
    assert_int_equal(simpler_committed_device_memory(second), 0);
    assert_int_equal(simpler_committed_device_memory(first), committed);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 1.0f, 0, 0, 1);
    assert_int_equal(simpler_run(first, PM_CALLABLE, &r.args, NULL, NULL), 0); /* unharmed */
    pm_run_check(&r);
    pm_run_free(&r);
    assert_int_equal(simpler_finalize_device(first), 0);
    assert_int_equal(simpler_destroy_device_context(first), 0);

    struct simpler_config too_many = cfg;
    too_many.run_capacity.scheduler_threads = 2; /* + the orchestrator = 3 > 2 AICPU threads */
    assert_int_equal(simpler_init(second, 0, &too_many), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_committed_device_memory(second), 0);
    assert_int_equal(simpler_init(second, 0, &cfg), 0); /* the device is free now */
    assert_int_equal(simpler_finalize_device(second), 0);
    assert_int_equal(simpler_destroy_device_context(second), 0);
}

/* The context's callable limits: count and image bytes, both given back by
 * unregister. */
static void test_callable_count_and_bytes_limits(void **state)
{
    (void)state;
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    size_t bytes;
    void *image = pm_image(&bytes);
    struct simpler_config cfg;
    simpler_config_default(&cfg);
    cfg.run_capacity = ts_small_run_config();
    cfg.max_callables = 2;
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
    assert_int_equal(simpler_register_callable(ctx, 10, image, bytes), 0);
    assert_int_equal(simpler_register_callable(ctx, 11, image, bytes), 0);
    assert_int_equal(simpler_register_callable(ctx, 12, image, bytes),
                     PTO_RUNTIME_ERR_CALLABLE_COUNT_EXCEEDED); /* 0: a third fit in a limit of 2 */
    assert_int_equal(simpler_unregister_callable(ctx, 10), 0);
    assert_int_equal(simpler_register_callable(ctx, 12, image, bytes), 0); /* unregister gave one back */
    assert_int_equal(simpler_finalize_device(ctx), 0);

    cfg.max_callables = 8;
    cfg.callable_bytes = 2 * bytes + bytes / 2; /* two images fit, not three */
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
    assert_int_equal(simpler_register_callable(ctx, 1, image, bytes), 0);
    assert_int_equal(simpler_register_callable(ctx, 2, image, bytes), 0);
    assert_int_equal(simpler_register_callable(ctx, 3, image, bytes),
                     PTO_RUNTIME_ERR_CALLABLE_BYTES_EXCEEDED); /* 0: the bytes were not counted */
    assert_int_equal(simpler_unregister_callable(ctx, 2), 0);
    assert_int_equal(simpler_register_callable(ctx, 3, image, bytes), 0); /* the bytes came back */
    struct pm_run r;
    pm_run_init(&r, 2.0f, 1.0f, 0, 0, 1);
    assert_int_equal(simpler_run(ctx, 3, &r.args, NULL, NULL), 0);
    pm_run_check(&r);
    pm_run_free(&r);
    simpler_callable_free(image);
    pm_close(ctx);
}

/* Two tensors that are views of one host buffer share one staging buffer:
 * y (OUT) is its first half, acc (INOUT) its second. Only acc's half is
 * copied in, both halves are copied back. */
static void test_views_of_one_host_buffer_share_its_staging(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(2);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 0.5f, 0, 0, 1);
    float *both = malloc(2 * PM_N * sizeof(float));
    /* In y's half: would be seen if OUT were copied in. Not the pattern of
     * test_copy_directions, whose freed host buffer the staging allocation
     * could reuse. */
    const uint32_t pattern = 0x7FC0FFEEu;
    for (int i = 0; i < PM_N; i++) {
        memcpy(&both[i], &pattern, sizeof pattern);
        both[PM_N + i] = 1.0f;
    }
    struct simpler_tensor whole;
    assert_int_equal(simpler_tensor_make_1d(&whole, (uint64_t)(uintptr_t)both, 2 * PM_N,
                                            SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST),
                     0);
    assert_int_equal(simpler_tensor_slice(&r.tensors[1], &whole, 0, 0, PM_N, 1), 0);
    assert_int_equal(simpler_tensor_slice(&r.tensors[2], &whole, 0, PM_N, 2 * PM_N, 1), 0);
    size_t idle = simpler_committed_device_memory(ctx);
    simpler_run_t run = pm_prepare(ctx, &r);
    assert_int_equal(simpler_committed_device_memory(ctx),
                     idle + 3 * PM_N * sizeof(float)); /* x + one buffer of 2N: not 2N + N + N */
    assert_int_equal(simpler_launch_run(ctx, run), 0);
    assert_int_equal(simpler_wait_run(ctx, run), 0);
    assert_int_equal(simpler_finalize_run(ctx, run), 0);
    assert_true(atomic_load(&pm_out_seen) != pattern); /* y's half was copied in */
    for (int i = 0; i < PM_N; i++) {
        float want = r.x[i] * 2.0f + 0.5f;
        if (both[i] != want || both[PM_N + i] != 1.0f + want)
            fail_msg("element %d: %g and %g, want %g and %g", i, (double)both[i],
                     (double)both[PM_N + i], (double)want, (double)(1.0f + want));
    }
    free(both);
    pm_run_free(&r);
    pm_close(ctx);
}

/* Lifecycle refusals: poll/wait/info before the run is launched or has
 * completed, every entry after finalize_device, the depth bounds. */
static void test_calls_out_of_order_are_refused(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(2);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 1.0f, 0, PM_FLAG_GATE, 1);
    simpler_run_t run = pm_prepare(ctx, &r);
    struct simpler_run_info info;
    assert_int_equal(simpler_poll_run(ctx, run), PTO_RUNTIME_ERR_INVALID_STATE); /* not launched */
    assert_int_equal(simpler_wait_run(ctx, run), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_get_run_info(ctx, run, &info), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_launch_run(ctx, run), 0);
    ts_gate_wait_arrivals(&pm_gate, 1);
    assert_int_equal(simpler_get_run_info(ctx, run, &info),
                     PTO_RUNTIME_ERR_INVALID_STATE); /* 0: counters of a run still running */
    ts_gate_open(&pm_gate);
    assert_int_equal(simpler_wait_run(ctx, run), 0);
    assert_int_equal(simpler_get_run_info(ctx, run, &info), 0);
    assert_int_equal(simpler_finalize_run(ctx, run), 0);
    assert_int_equal(simpler_get_run_info(ctx, run, &info), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_finalize_device(ctx), 0);
    /* Finalized: every entry that needs an initialised context refuses. */
    size_t bytes;
    void *image = pm_image(&bytes);
    assert_int_equal(simpler_register_callable(ctx, 1, image, bytes), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_unregister_callable(ctx, PM_CALLABLE), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_prepare_run(ctx, &run, PM_CALLABLE, &r.args, NULL),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_launch_run(ctx, run), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_committed_device_memory(ctx), 0);
    struct simpler_config cfg;
    simpler_config_default(&cfg);
    cfg.run_capacity = ts_small_run_config();
    cfg.pipeline_depth = SIMPLER_MAX_PIPELINE_DEPTH + 1;
    assert_int_equal(simpler_init(ctx, 0, &cfg), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    cfg.pipeline_depth = 0;
    assert_int_equal(simpler_init(ctx, 0, &cfg), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    cfg.pipeline_depth = SIMPLER_MAX_PIPELINE_DEPTH; /* the bound itself is fine */
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
    simpler_callable_free(image);
    pm_run_free(&r);
    pm_close(ctx);
}

/* A failed run's slot, observed by poll alone, starts its next run clean. */
static void test_polled_failure_leaves_the_slot_clean(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(1); /* one slot: every run uses its stream */
    struct pm_run bad, good;
    pm_run_init(&bad, 2.0f, 1.0f, 404, 0, 1);
    pm_run_init(&good, 2.0f, 1.0f, 0, 0, 2);
    simpler_run_t run = pm_prepare(ctx, &bad);
    assert_int_equal(simpler_launch_run(ctx, run), 0);
    int rc;
    while ((rc = simpler_poll_run(ctx, run)) == PTO_RUNTIME_ERR_NOT_READY)
        sched_yield();
    assert_int_equal(rc, -404);
    assert_int_equal(simpler_finalize_run(ctx, run), 0);
    run = pm_prepare(ctx, &good);
    assert_int_equal(simpler_launch_run(ctx, run), 0);
    while ((rc = simpler_poll_run(ctx, run)) == PTO_RUNTIME_ERR_NOT_READY)
        sched_yield();
    assert_int_equal(rc, 0); /* -404: the slot's stream still carried the failure */
    assert_int_equal(simpler_finalize_run(ctx, run), 0);
    pm_run_check(&good);
    pm_run_check_untouched(&bad);
    pm_run_free(&bad);
    pm_run_free(&good);
    pm_close(ctx);
}

struct run_waiter {
    struct simpler_context *ctx;
    simpler_run_t run;
    int rc;
};

static void *wait_thread(void *arg)
{
    struct run_waiter *w = arg;
    w->rc = simpler_wait_run(w->ctx, w->run);
    return NULL;
}

/* Three threads wait for one run; all see its status. */
static void test_several_threads_wait_for_one_run(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(2);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 1.0f, 0, PM_FLAG_GATE, 1);
    simpler_run_t run = pm_prepare(ctx, &r);
    assert_int_equal(simpler_launch_run(ctx, run), 0);
    ts_gate_wait_arrivals(&pm_gate, 1);
    struct run_waiter w[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (struct run_waiter){ctx, run, 1};
        assert_int_equal(pthread_create(&t[i], NULL, wait_thread, &w[i]), 0);
    }
    ts_gate_open(&pm_gate); /* the waiters may or may not be asleep yet: either is fine */
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].rc, 0); /* a waiter that never woke hangs the join instead */
    }
    assert_int_equal(simpler_finalize_run(ctx, run), 0);
    pm_run_check(&r);
    pm_run_free(&r);
    pm_close(ctx);
}

/* Unregistering a callable an unfinalized run uses is refused. */
static void test_unregister_refused_while_a_run_uses_it(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(2);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 1.0f, 0, 0, 1);
    simpler_run_t run = pm_prepare(ctx, &r);
    assert_int_equal(simpler_unregister_callable(ctx, PM_CALLABLE), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_finalize_device(ctx), PTO_RUNTIME_ERR_INVALID_STATE); /* run open */
    assert_int_equal(simpler_finalize_run(ctx, run), 0);
    assert_int_equal(simpler_unregister_callable(ctx, PM_CALLABLE), 0);
    pm_run_check_untouched(&r);
    pm_run_free(&r);
    pm_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caller_containers_freed_after_prepare),
        cmocka_unit_test(test_a_b_a_back_to_back_are_independent),
        SIMPLER_TEST_WITH(test_run_ahead_while_first_run_blocks, NULL, pm_teardown),
        cmocka_unit_test(test_good_failing_good_statuses),
        cmocka_unit_test(test_copy_directions),
        cmocka_unit_test(test_unregister_refused_while_a_run_uses_it),
        cmocka_unit_test(test_back_to_back_rounds_never_stall),
        SIMPLER_TEST_WITH(test_lost_device_fails_later_calls_until_reset, NULL, pm_teardown),
        cmocka_unit_test(test_a_device_has_one_program_context),
        cmocka_unit_test(test_callable_count_and_bytes_limits),
        cmocka_unit_test(test_views_of_one_host_buffer_share_its_staging),
        SIMPLER_TEST_WITH(test_calls_out_of_order_are_refused, NULL, pm_teardown),
        cmocka_unit_test(test_polled_failure_leaves_the_slot_clean),
        SIMPLER_TEST_WITH(test_several_threads_wait_for_one_run, NULL, pm_teardown),
    };
    if (getenv("PM_FILTER")) /* run only the tests matching this pattern */
        cmocka_set_test_filter(getenv("PM_FILTER"));
    return cmocka_run_group_tests(tests, NULL, ts_device_teardown);
}
