/*
 * test_chain_breaks.c — every way a run's launch chain can break ends the
 * run with an error, and the next run works.
 *
 * The chain (src/runtime/launch.c) has 11 ops: 4 records, 4 waits, 2
 * launches (core loop, AICPU program, which fails with a failed run's
 * status) and 1 memset (the round region). Each op in turn is made to fail *as it executes*
 * (simdev_fault_inject_exec), which also makes every later op of its stream
 * skip: that covers "an AICPU program that fails, is skipped, or never
 * starts" and the reverse, cores that never start. Then each host
 * allocation simdev makes during one simpler_run fails in turn. In every
 * case the faulted run returns an exact code, and a clean run right after
 * it returns 0 with exact outputs.
 *
 * A hang here is the defect (a half of the round waiting for a partner
 * that never comes); the rendezvous in src/runtime/rendezvous.c bounds it by
 * the scheduler timeout given below. Nothing is ordered by sleeping.
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pm_support.h"
#include "simpler/simdev_fault.h"

#define INJECTED (-777) /* a code nothing in the chain makes by itself */
/* A broken round's halves run alone to it; the rounds that must succeed
 * run under it too, so it is long enough that a thread delayed on a loaded
 * host never ends one (with 500 ms, a clean round behind a broken replay
 * once failed on a host loaded far past its CPUs). */
#define SCHED_TIMEOUT_MS 1000

static struct simpler_context *open_ctx(void)
{
    struct simdev_config topo = ts_small_config();
    return pm_open_timed(1, &topo, SCHED_TIMEOUT_MS);
}

/* The topologies the chain breaks on, in *topo (returns how many): the
 * small one, and where the host has 2 CPUs or more (as many as a device
 * may have cores), one AIV core pinned per CPU. There the orchestrator
 * shares its CPU with the last core and sleeps until that core has
 * arrived in the round before it submits (aicpu_program.c): a core loop
 * that never starts must end that wait too, through the scheduler's
 * timeout. */
static uint32_t chain_topologies(struct simdev_config topo[2])
{
    topo[0] = ts_small_config();
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    int cpus = CPU_COUNT(&set);
    if (cpus < 2 || cpus > SIMDEV_MAX_CORES)
        return 1;
    topo[1] = ts_small_config();
    topo[1].aic_cores = 0;
    topo[1].aiv_cores = (uint32_t)cpus;
    topo[1].pin_cores = 1;
    return 2;
}

/* A clean run after a broken one: 0 and exact outputs, else the broken run
 * left something behind (a carried stream error, a stray core loop, a
 * stale result block). */
static void assert_next_run_works(struct simpler_context *ctx, uint64_t tag)
{
    struct pm_run r;
    pm_run_init(&r, 3.0f, 0.25f, 0, 0, tag);
    assert_int_equal(simpler_run(ctx, PM_CALLABLE, &r.args, NULL, NULL), 0);
    pm_run_check(&r);
    pm_run_free(&r);
}

/* Ops of each kind in one launch chain, in enqueue order. */
static const struct {
    enum simdev_op_kind kind;
    uint64_t count;
    const char *ops;
} chain[] = {
    {SIMDEV_OP_RECORD, 4, "start, aicore_start, aicore_done, aicpu_done"},
    {SIMDEV_OP_WAIT, 4, "start, aicore_start, aicore_done, aicpu_done"},
    {SIMDEV_OP_LAUNCH, 2, "core loop, AICPU program"},
    {SIMDEV_OP_COPY, 1, "zero the round region"},
};

/* What wait reports when op `nth` of `kind` fails as it executes. */
static int expected_code(enum simdev_op_kind kind, uint64_t nth)
{
    /* When the core loop fails (its launch, or the AICore stream's wait
     * for aicore_start before it), the AICPU program runs alone: its
     * scheduler leaves the round (a timeout of class CORES_NOT_STARTED) and
     * wait reports the run's own status. Every other failure skips the
     * program, or fails beside or after it, and reaches the caller as the
     * injected code through the events of the chain. */
    if ((kind == SIMDEV_OP_LAUNCH && nth == 1) || (kind == SIMDEV_OP_WAIT && nth == 2))
        return -SIMPLER_SCHED_ERR_TIMEOUT;
    return INJECTED;
}

static void test_the_chain_has_exactly_the_ops_this_test_breaks(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_ctx();
    struct pm_run r;
    pm_run_init(&r, 2.0f, 0.5f, 0, 0, 1);
    simpler_run_t h;
    assert_int_equal(simpler_prepare_run(ctx, &h, PM_CALLABLE, &r.args, NULL), 0);
    assert_int_equal(simdev_op_counts_reset(0), 0);
    assert_int_equal(simpler_launch_run(ctx, h), 0);
    for (size_t k = 0; k < sizeof chain / sizeof chain[0]; k++) {
        uint64_t n;
        assert_int_equal(simdev_op_count(0, chain[k].kind, &n), 0);
        /* Another count: the chain changed and the sweep below no longer
         * breaks each of its ops exactly once. */
        if (n != chain[k].count)
            fail_msg("%s ops in one launch: %llu, expected %llu (%s)",
                     simdev_op_kind_name(chain[k].kind), (unsigned long long)n,
                     (unsigned long long)chain[k].count, chain[k].ops);
    }
    assert_int_equal(simpler_wait_run(ctx, h), 0);
    assert_int_equal(simpler_finalize_run(ctx, h), 0);
    pm_run_check(&r);
    pm_run_free(&r);
    pm_close(ctx);
}

/* Breaks each op of the chain in turn on a device of topology `topo`. */
static void break_each_chain_op(const struct simdev_config *topo)
{
    struct simpler_context *ctx = pm_open_timed(1, topo, SCHED_TIMEOUT_MS);
    uint64_t tag = 1;
    for (size_t k = 0; k < sizeof chain / sizeof chain[0]; k++) {
        for (uint64_t nth = 1; nth <= chain[k].count; nth++) {
            struct pm_run r;
            pm_run_init(&r, 2.0f, 0.5f, 0, 0, tag++);
            simpler_run_t h;
            assert_int_equal(simpler_prepare_run(ctx, &h, PM_CALLABLE, &r.args, NULL), 0);
            assert_int_equal(simdev_fault_inject_exec(0, chain[k].kind, nth, INJECTED), 0);
            assert_int_equal(simpler_launch_run(ctx, h), 0);
            int rc = simpler_wait_run(ctx, h);
            assert_int_equal(simdev_fault_clear(0), 0);
            if (rc != expected_code(chain[k].kind, nth))
                fail_msg("%s #%llu failing as it executes (%u cores): wait returned %d, "
                         "expected %d",
                         simdev_op_kind_name(chain[k].kind), (unsigned long long)nth,
                         topo->aic_cores + topo->aiv_cores, rc, expected_code(chain[k].kind, nth));
            assert_int_equal(simpler_finalize_run(ctx, h), 0);
            /* A failed run copies nothing back. */
            pm_run_check_untouched(&r);
            pm_run_free(&r);
            assert_next_run_works(ctx, tag++);
        }
    }
    pm_close(ctx);
}

static void test_each_chain_op_failing_as_it_executes_ends_the_run_and_the_next_works(
    void **state)
{
    struct simdev_config topo[2];
    uint32_t topologies = chain_topologies(topo);
    for (uint32_t t = 0; t < topologies; t++) {
        break_each_chain_op(&topo[t]);
        ts_device_teardown(state);
    }
}

static void test_each_host_allocation_of_a_run_failing_ends_it_and_the_next_works(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_ctx();
    uint64_t before, after;
    assert_int_equal(simdev_host_alloc_count(&before), 0);
    assert_next_run_works(ctx, 1);
    assert_int_equal(simdev_host_alloc_count(&after), 0);
    uint64_t count = after - before;
    /* 0 would mean the sweep below tests nothing. */
    assert_true(count > 0);
    for (uint64_t nth = 1; nth <= count; nth++) {
        struct pm_run r;
        pm_run_init(&r, 2.0f, 0.5f, 0, 0, 2);
        assert_int_equal(simdev_fault_inject_host(nth), 0);
        int rc = simpler_run(ctx, PM_CALLABLE, &r.args, NULL, NULL);
        assert_int_equal(simdev_fault_clear(0), 0);
        /* Each allocation is needed by the run: 0 would mean a failed one
         * went unnoticed, another code that it was misreported. Which
         * allocation is the nth depends on how the device threads interleave;
         * when it is the core loop's launch job, the AICPU program runs
         * without cores and the run reports its own scheduler timeout
         * (expected_code above), otherwise the allocation failure itself. */
        if (rc != PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY && rc != -SIMPLER_SCHED_ERR_TIMEOUT)
            fail_msg("host allocation #%llu of %llu: simpler_run returned %d",
                     (unsigned long long)nth, (unsigned long long)count, rc);
        pm_run_free(&r);
        assert_next_run_works(ctx, 3);
    }
    pm_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST_WITH(test_the_chain_has_exactly_the_ops_this_test_breaks,
                          NULL, ts_device_teardown),
        SIMPLER_TEST_WITH(test_each_chain_op_failing_as_it_executes_ends_the_run_and_the_next_works,
                          NULL, ts_device_teardown),
        SIMPLER_TEST_WITH(test_each_host_allocation_of_a_run_failing_ends_it_and_the_next_works,
                          NULL, ts_device_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
