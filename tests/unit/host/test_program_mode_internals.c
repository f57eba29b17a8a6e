/*
 * test_program_mode_internals.c — program mode checked from inside the
 * host: owned argument snapshots, rejection while runs are queued (slots
 * and staging counted), retirement exactly once and the identity latch.
 *
 * Everything runs pm_support.h's callable, as tests/scenario/
 * test_program_mode.c does through simpler.h alone; these cases also read
 * host/'s test hooks and counters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "host/context.h"
#include "host/run_args.h"
#include "host/run_slot.h"
#include "pm_support.h"

/* 1: B's prepare leaves A's owned snapshot unchanged byte for byte. */
static void test_snapshot_of_a_is_unchanged_by_preparing_b(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(4);
    struct pm_run a, b;
    pm_run_init(&a, 2.0f, 1.25f, 0, 0, 1);
    pm_run_init(&b, 3.0f, -0.5f, 0, 0, 2);
    simpler_run_t ra = pm_prepare(ctx, &a);
    struct simpler_orch_args before, after;
    assert_int_equal(sp_test_run_snapshot(ctx, ra, &before), 0);
    simpler_run_t rb = pm_prepare(ctx, &b);
    assert_true(rb != ra); /* equal handles would make B's finalize release A */
    assert_int_equal(sp_test_run_snapshot(ctx, ra, &after), 0);
    assert_memory_equal(&before, &after, sizeof before); /* differs: B wrote into A's storage */
    assert_int_equal(after.tensor_count, 3);
    assert_int_equal(after.scalar_count, 5);
    assert_memory_equal(after.tensors, a.tensors, sizeof a.tensors); /* A's own host views */
    assert_memory_equal(after.scalars, a.scalars, sizeof a.scalars);
    assert_int_equal(simpler_finalize_run(ctx, rb), 0); /* never launched: released */
    assert_int_equal(simpler_launch_run(ctx, ra), 0);
    assert_int_equal(simpler_wait_run(ctx, ra), 0);
    assert_int_equal(simpler_finalize_run(ctx, ra), 0);
    pm_run_check(&a);
    pm_run_check_untouched(&b); /* B never ran, so nothing was copied back */
    pm_run_free(&a);
    pm_run_free(&b);
    pm_close(ctx);
}

/* 5: bad or over-capacity B is rejected while A is queued; A is unharmed. */
static void test_rejected_b_while_a_is_queued(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(2);
    struct pm_run a, b, c;
    pm_run_init(&a, 2.0f, 1.0f, 0, PM_FLAG_GATE, 1);
    pm_run_init(&b, 3.0f, 1.0f, 0, 0, 2);
    pm_run_init(&c, 3.0f, 1.0f, 0, 0, 3);
    simpler_run_t ra = pm_prepare(ctx, &a);
    assert_int_equal(simpler_launch_run(ctx, ra), 0);
    ts_gate_wait_arrivals(&pm_gate, 1);
    size_t committed = simpler_committed_device_memory(ctx);
    struct sp_counters before, after;
    sp_test_counters(ctx, &before);
    simpler_run_t rb = 0;

    struct simpler_args bad = b.args;
    bad.tensor_count = 2; /* the signature has 3 tensors */
    assert_int_equal(simpler_prepare_run(ctx, &rb, PM_CALLABLE, &bad, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    struct simpler_tensor outside[3];
    memcpy(outside, b.tensors, sizeof outside);
    outside[0].start_offset = 1; /* the view now ends past its buffer */
    bad = b.args;
    bad.tensors = outside;
    assert_int_equal(simpler_prepare_run(ctx, &rb, PM_CALLABLE, &bad, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    memcpy(outside, b.tensors, sizeof outside);
    outside[1].ndims = 2; /* a broadcast view of 2^30 x 2^30 elements of one row */
    outside[1].shape[0] = outside[1].shape[1] = 1ull << 30;
    outside[1].stride[0] = outside[1].stride[1] = 0;
    assert_int_equal(simpler_prepare_run(ctx, &rb, PM_CALLABLE, &bad, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* accepted: copy-back of 2^60 elements */
    memcpy(outside, b.tensors, sizeof outside);
    outside[0].stride[0] = -1; /* reversed from element 0: reaches below the buffer */
    assert_int_equal(simpler_prepare_run(ctx, &rb, PM_CALLABLE, &bad, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    outside[0].start_offset = PM_N - 1; /* reversed from the last element: a valid view */
    outside[1].shape[0] = 0;            /* but an empty dimension is not */
    assert_int_equal(simpler_prepare_run(ctx, &rb, PM_CALLABLE, &bad, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    memcpy(outside, b.tensors, sizeof outside);
    outside[1].address_space = SIMPLER_MEM_DEVICE; /* device tensors are checked the same way */
    outside[1].start_offset = 1;
    assert_int_equal(simpler_prepare_run(ctx, &rb, PM_CALLABLE, &bad, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    memcpy(outside, b.tensors, sizeof outside);
    outside[2].addr = UINT64_MAX - 16; /* its buffer would wrap past the end of memory */
    assert_int_equal(simpler_prepare_run(ctx, &rb, PM_CALLABLE, &bad, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    memcpy(outside, b.tensors, sizeof outside);
    outside[2].addr = outside[0].addr + 4; /* overlaps x's buffer without being it */
    assert_int_equal(simpler_prepare_run(ctx, &rb, PM_CALLABLE, &bad, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_prepare_run(ctx, &rb, PM_CALLABLE + 1, &b.args, NULL),
                     PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT);
    struct simpler_run_config big = ts_small_run_config();
    big.heap_bytes[0] *= 2; /* valid, but larger than the context's arena */
    assert_int_equal(simpler_prepare_run(ctx, &rb, PM_CALLABLE, &b.args, &big),
                     PTO_RUNTIME_ERR_CAPACITY_EXCEEDED);
    big = ts_small_run_config();
    big.task_window[1] = 3; /* not a power of two */
    assert_int_equal(simpler_prepare_run(ctx, &rb, PM_CALLABLE, &b.args, &big),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_launch_run(ctx, ra), PTO_RUNTIME_ERR_INVALID_STATE); /* launched twice */
    assert_int_equal(rb, 0); /* a rejected prepare wrote its handle */
    assert_int_equal(simpler_committed_device_memory(ctx), committed);
    sp_test_counters(ctx, &after);
    assert_memory_equal(&before, &after, sizeof before); /* a rejection took a slot or staging */

    /* Depth 2: B takes the last slot, C finds none and is refused at once. */
    rb = pm_prepare(ctx, &b);
    simpler_run_t rc = 0;
    assert_int_equal(simpler_prepare_run(ctx, &rc, PM_CALLABLE, &c.args, NULL),
                     PTO_RUNTIME_ERR_CAPACITY_EXCEEDED);
    assert_int_equal(rc, 0);
    ts_gate_open(&pm_gate);
    assert_int_equal(simpler_wait_run(ctx, ra), 0);
    assert_int_equal(simpler_finalize_run(ctx, ra), 0);
    pm_run_check(&a);
    assert_int_equal(simpler_launch_run(ctx, rb), 0);
    assert_int_equal(simpler_wait_run(ctx, rb), 0);
    assert_int_equal(simpler_finalize_run(ctx, rb), 0);
    pm_run_check(&b);
    assert_int_equal(simpler_finalize_run(ctx, rb), PTO_RUNTIME_ERR_INVALID_STATE); /* twice */
    pm_run_free(&a);
    pm_run_free(&b);
    pm_run_free(&c);
    pm_close(ctx);
}

static void poison_staging(void *device, size_t bytes)
{
    static uint8_t poison[PM_N * sizeof(float)];
    memset(poison, PM_POISON_BYTE, sizeof poison);
    assert_true(bytes <= sizeof poison);
    assert_int_equal(simdev_memcpy(device, poison, bytes, SIMDEV_COPY_HOST_TO_DEVICE), 0);
}

/* 7: slots and staging are released exactly once per run, never early, and
 * committed memory returns to its idle value after every finalize. */
static void test_retirement_exactly_once(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(3);
    size_t idle = simpler_committed_device_memory(ctx);
    assert_true(idle > 0);
    sp_test_staging_free_hook = poison_staging;
    enum { ROUNDS = 4, PER_ROUND = 3 };
    struct pm_run r[PER_ROUND];
    for (int round = 0; round < ROUNDS; round++) {
        simpler_run_t runs[PER_ROUND];
        for (int i = 0; i < PER_ROUND; i++) {
            pm_run_init(&r[i], (float)(round + 1), (float)i, 0, 0, (uint64_t)(round * 10 + i));
            runs[i] = pm_prepare(ctx, &r[i]);
            assert_int_equal(simpler_launch_run(ctx, runs[i]), 0);
        }
        assert_true(simpler_committed_device_memory(ctx) ==
                    idle + PER_ROUND * 3 * PM_N * sizeof(float)); /* 3 staged buffers per run */
        for (int i = 0; i < PER_ROUND; i++) {
            assert_int_equal(simpler_finalize_run(ctx, runs[i]), 0); /* waits, copies, frees */
            pm_run_check(&r[i]); /* poison: a buffer freed while the run used it */
            pm_run_free(&r[i]);
        }
        assert_int_equal(simpler_committed_device_memory(ctx), idle);
    }
    sp_test_staging_free_hook = NULL;
    struct sp_counters c;
    sp_test_counters(ctx, &c);
    assert_int_equal(c.slots_acquired, ROUNDS * PER_ROUND);
    assert_int_equal(c.slots_released, ROUNDS * PER_ROUND); /* more: a slot released twice */
    assert_int_equal(c.staging_allocs, ROUNDS * PER_ROUND * 3);
    assert_int_equal(c.staging_frees, ROUNDS * PER_ROUND * 3);
    assert_int_equal(c.launches, ROUNDS * PER_ROUND);
    pm_close(ctx);
}

/* 8: identity — program entries refuse a context latched otherwise; a
 * second init is refused; the held identity re-latches after finalize. */
static void test_identity_latch(void **state)
{
    (void)state;
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    struct simpler_context *kctx;
    assert_int_equal(simpler_create_device_context(&kctx), 0);
    assert_int_equal(sp_latch_claim(sp_test_latch(kctx), SP_IDENTITY_KERNEL), 0);
    struct simpler_config cfg;
    simpler_config_default(&cfg);
    cfg.run_capacity = ts_small_run_config();
    size_t bytes;
    void *image = pm_image(&bytes);
    struct pm_run r;
    pm_run_init(&r, 1.0f, 1.0f, 0, 0, 1);
    simpler_run_t run = 0;
    assert_int_equal(simpler_init(kctx, 0, &cfg), PTO_RUNTIME_ERR_INVALID_STATE); /* never -1000 */
    assert_int_equal(simpler_register_callable(kctx, 1, image, bytes), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_unregister_callable(kctx, 1), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_prepare_run(kctx, &run, 1, &r.args, NULL), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_launch_run(kctx, 5), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_poll_run(kctx, 5), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_wait_run(kctx, 5), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_finalize_run(kctx, 5), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_run(kctx, 1, &r.args, NULL, NULL), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_finalize_device(kctx), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(sp_latch_identity(sp_test_latch(kctx)), SP_IDENTITY_KERNEL); /* unlatched by an error */
    assert_int_equal(simpler_committed_device_memory(kctx), 0);
    assert_int_equal(simpler_destroy_device_context(kctx), 0);

    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(sp_latch_identity(sp_test_latch(ctx)), SP_IDENTITY_NONE); /* created mode-less */
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
    assert_int_equal(simpler_init(ctx, 0, &cfg), PTO_RUNTIME_ERR_INVALID_STATE); /* second init */
    assert_int_equal(sp_latch_claim(sp_test_latch(ctx), SP_IDENTITY_KERNEL),
                     PTO_RUNTIME_ERR_INVALID_STATE); /* the kernel-mode init will get this */
    assert_int_equal(simpler_destroy_device_context(ctx), PTO_RUNTIME_ERR_INVALID_STATE); /* live */
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(sp_latch_identity(sp_test_latch(ctx)), SP_IDENTITY_PROGRAM); /* finalize kept it */
    assert_int_equal(simpler_finalize_device(ctx), PTO_RUNTIME_ERR_INVALID_STATE); /* twice */
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0); /* idempotent for the held identity */
    assert_int_equal(simpler_register_callable(ctx, 1, image, bytes), 0);
    assert_int_equal(simpler_register_callable(ctx, 1, image, bytes), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_run(ctx, 1, &r.args, NULL, NULL), 0);
    pm_run_check(&r);
    assert_int_equal(simpler_unregister_callable(ctx, 1), 0);
    assert_int_equal(simpler_unregister_callable(ctx, 1), PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT);
    pm_close(ctx);
    simpler_callable_free(image);
    pm_run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_of_a_is_unchanged_by_preparing_b),
        SIMPLER_TEST_WITH(test_rejected_b_while_a_is_queued, NULL, pm_teardown),
        cmocka_unit_test(test_retirement_exactly_once),
        cmocka_unit_test(test_identity_latch),
    };
    if (getenv("PM_FILTER")) /* run only the tests matching this pattern */
        cmocka_set_test_filter(getenv("PM_FILTER"));
    return cmocka_run_group_tests(tests, NULL, ts_device_teardown);
}
