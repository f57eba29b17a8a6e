/*
 * test_program_review.c — a regression test for a program-mode defect
 * found in review that shows through simpler.h alone; it failed on the
 * code as it was reviewed: an init that failed (with a failed cleanup) on
 * device 0 and is retried on device 1 tries to free device 0's leftovers
 * on device 1, fails, and leaves the context impossible to initialise
 * there or to destroy.
 *
 * The other regressions from that review hold work at points only the
 * host's internals reach: unit/host/test_program_review_internals.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pm_support.h"

#define INJECTED PTO_RUNTIME_ERR_TIMEOUT /* a code none of these calls makes by itself */

static void test_init_retried_on_another_device_releases_leftovers_on_theirs(void **state)
{
    (void)state;
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    assert_int_equal(simdev_device_reset(1), 0);
    assert_int_equal(simdev_device_configure(1, &topo), 0);
    pm_observers_reset();
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.pipeline_depth = 2;
    cfg.run_capacity = ts_small_run_config();
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    /* Init on device 0: slot 0's result block allocation fails, and the
     * cleanup's first free (slot 0's args block) fails too. */
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_MALLOC, 3, INJECTED), 0);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_FREE, 1, PTO_RUNTIME_ERR_INTERNAL), 0);
    assert_int_equal(simpler_init(ctx, 0, &cfg), INJECTED);
    simdev_fault_clear(0);
    assert_true(simpler_committed_device_memory(ctx) > 0); /* leftovers on device 0 */

    int rc_other = simpler_init(ctx, 1, &cfg);
    int rc_destroy = PTO_RUNTIME_ERR_INTERNAL;
    if (rc_other == 0) {
        assert_int_equal(simpler_finalize_device(ctx), 0);
        rc_destroy = simpler_destroy_device_context(ctx);
    } else {
        /* What a user would try next: give up on the context. */
        rc_destroy = simpler_destroy_device_context(ctx);
        if (rc_destroy) {
            /* Only an init on device 0 gets the leftovers released. */
            assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
            assert_int_equal(simpler_finalize_device(ctx), 0);
            assert_int_equal(simpler_destroy_device_context(ctx), 0);
        }
    }
    struct simdev_mem_info info0, info1;
    assert_int_equal(simdev_mem_get_info(0, &info0), 0);
    assert_int_equal(simdev_mem_get_info(1, &info1), 0);
    assert_int_equal(simdev_device_reset(1), 0);

    /* INVALID_ARGUMENT: release_all freed device 0's arena and args block
     * with device 1 current (simdev_free looks pointers up on the current
     * device). */
    assert_int_equal(rc_other, 0);
    /* Nonzero: destroy, too, now frees on ctx->device == 1. */
    assert_int_equal(rc_destroy, 0);
    assert_int_equal(info0.in_use, 0);
    assert_int_equal(info1.in_use, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST_WITH(test_init_retried_on_another_device_releases_leftovers_on_theirs,
                          NULL, ts_device_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
