/*
 * test_runtime_faults.c — every device operation of the runtime's host-side
 * entry points made to fail, one at a time.
 *
 * Owns: fault sweeps over rt_launcher_create (stream and event creation)
 * and rt_run_enqueue (each record, wait and launch of the launch chain),
 * checking that the failing call reports the injected code, leaves no
 * stream or event behind, leaves nothing of the run running, and that a
 * retry on the same device computes the right result. Also the argument
 * checks of rt_run_enqueue, which must enqueue nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "common/host_alloc.h"
#include "rt_support.h"
#include "launch/launch.h"
#include "platform/platform.h"
#include "runtime/core_regs.h"
#include "runtime/scheduler.h"
#include "test_support.h"

#define INJECTED (-77)
#define ELEMS 256

static void kernel_add_one(int64_t *args)
{
    uint32_t *x = simpler_kernel_data(args, 0);
    for (uint64_t i = 0; i < ELEMS; i++)
        x[i] += 1;
}

/* Three tasks each add 1 to every element of the run's tensor (INOUT). */
static void add_three(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    for (int i = 0; i < 3; i++) {
        struct simpler_task_args ta;
        simpler_task_args_init(&ta);
        simpler_task_args_add_inout(&ta, &args->tensors[0]);
        simpler_submit_aiv(rt, 0, &ta, NULL);
    }
}

static const simpler_kernel_fn g_kernels[] = {kernel_add_one};

static uint64_t performed(enum simdev_op_kind kind)
{
    uint64_t n = 0;
    assert_int_equal(simdev_op_count(0, kind, &n), 0);
    return n;
}

static void launcher_create_fails_cleanly_at_every_stream_and_event_creation(void **state)
{
    (void)state;
    /* 2 stream creations, then 3 event creations */
    const struct {
        enum simdev_op_kind kind;
        uint64_t nth;
    } points[] = {{SIMDEV_OP_STREAM_CREATE, 1}, {SIMDEV_OP_STREAM_CREATE, 2},
                  {SIMDEV_OP_EVENT_CREATE, 1},  {SIMDEV_OP_EVENT_CREATE, 2},
                  {SIMDEV_OP_EVENT_CREATE, 3}};
    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
        assert_int_equal(simdev_op_counts_reset(0), 0);
        assert_int_equal(simdev_fault_inject(0, points[i].kind, points[i].nth, INJECTED), 0);
        struct rt_launcher *l = (struct rt_launcher *)(uintptr_t)0x1;
        assert_int_equal(rt_launcher_create(&l), INJECTED);
        assert_ptr_equal(l, (struct rt_launcher *)(uintptr_t)0x1); /* written on failure */
        /* unequal: a stream or event created before the failure leaked */
        assert_int_equal(performed(SIMDEV_OP_STREAM_CREATE), performed(SIMDEV_OP_STREAM_DESTROY));
        assert_int_equal(performed(SIMDEV_OP_EVENT_CREATE), performed(SIMDEV_OP_EVENT_DESTROY));
        assert_int_equal(simdev_fault_clear(0), 0);
    }
    struct rt_launcher *l = NULL;
    assert_int_equal(rt_launcher_create(&l), 0); /* retry works */
    assert_int_equal(rt_launcher_destroy(l), 0);
}

static void launcher_create_fails_cleanly_when_its_host_allocation_fails(void **state)
{
    (void)state;
    assert_int_equal(simdev_op_counts_reset(0), 0);
    sp_host_fault_inject(1);
    struct rt_launcher *l = (struct rt_launcher *)(uintptr_t)0x1;
    assert_int_equal(rt_launcher_create(&l), PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
    sp_host_fault_inject(0);
    assert_ptr_equal(l, (struct rt_launcher *)(uintptr_t)0x1); /* written on failure */
    /* nonzero: device objects were created before the allocation they need */
    assert_int_equal(performed(SIMDEV_OP_STREAM_CREATE), 0);
    assert_int_equal(performed(SIMDEV_OP_EVENT_CREATE), 0);
    uint64_t before = sp_host_alloc_count();
    assert_int_equal(rt_launcher_create(&l), 0); /* retry works */
    assert_int_equal(sp_host_alloc_count() - before, 1); /* 2+: an allocation not swept above */
    assert_int_equal(rt_launcher_destroy(l), 0);
}

/* Runs add_three once and checks the tensor went from `before` to before+3.
 * A run that must succeed gets a scheduler timeout no thread's delay on a
 * loaded host comes near (the harness's may be short, for the injected
 * runs whose cores never start). */
static void good_run(struct rt_harness *h, uint32_t *x_dev, uint32_t before)
{
    struct simpler_orch_args args = {0};
    args.tensor_count = 1;
    args.tensors[0] = ts_dev_tensor_1d(x_dev, ELEMS, SIMPLER_DTYPE_U32);
    uint32_t sched_timeout_ms = h->config.sched_timeout_ms;
    h->config.sched_timeout_ms = 10000;
    assert_int_equal(rth_run(h, add_three, g_kernels, 1, &args), 0);
    h->config.sched_timeout_ms = sched_timeout_ms;
    uint32_t x[ELEMS];
    ts_from_dev(x, x_dev, sizeof x);
    for (int i = 0; i < ELEMS; i++)
        assert_int_equal(x[i], before + 3); /* other: the retry lost or repeated a task */
}

static void run_enqueue_fails_cleanly_at_every_chain_operation(void **state)
{
    (void)state;
    struct rt_config config = rth_small_config();
    config.sched_timeout_ms = 200; /* a scheduler whose cores never start gives up fast */
    struct rt_harness h;
    rth_open(&h, &config, 0);
    uint32_t *x_dev = ts_dev_alloc(ELEMS * sizeof(uint32_t));
    uint32_t zero[ELEMS] = {0};
    ts_to_dev(x_dev, zero, sizeof zero);
    struct simpler_orch_args args = {0};
    args.tensor_count = 1;
    args.tensors[0] = ts_dev_tensor_1d(x_dev, ELEMS, SIMPLER_DTYPE_U32);
    ts_to_dev(h.kernels_dev, g_kernels, sizeof g_kernels);
    ts_to_dev(h.args_dev, &args, sizeof args);
    struct rt_run_request rq = rth_request(&h, add_three, 1);
    /* The chain: 3 records, 4 waits, 2 launches (core loop, AICPU
     * program). */
    const struct {
        enum simdev_op_kind kind;
        uint64_t count;
    } kinds[] = {{SIMDEV_OP_RECORD, 3}, {SIMDEV_OP_WAIT, 4}, {SIMDEV_OP_LAUNCH, 2}};
    uint32_t expect = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (uint64_t nth = 1; nth <= kinds[k].count; nth++) {
            assert_int_equal(simdev_fault_inject(0, kinds[k].kind, nth, INJECTED), 0);
            assert_int_equal(rt_run_enqueue(h.launcher, h.stream, &rq), INJECTED);
            assert_int_equal(simdev_fault_clear(0), 0);
            /* Whatever part of the run was enqueued has finished (the call
             * drained the launcher's streams); the caller's stream holds at
             * most the start record and a wait. */
            assert_int_equal(simdev_stream_sync(h.stream), 0);
            uint32_t x[ELEMS];
            ts_from_dev(x, x_dev, sizeof x);
            /* The run itself either ran whole (its AICPU program and core
             * loop were both enqueued) or not at all. */
            assert_true(x[0] == expect || x[0] == expect + 3);
            for (int i = 1; i < ELEMS; i++)
                assert_int_equal(x[i], x[0]); /* a run half applied */
            expect = x[0];
            good_run(&h, x_dev, expect); /* retry on the same device and launcher */
            expect += 3;
        }
    }
    assert_int_equal(simdev_free(x_dev), 0);
    rth_close(&h);
}

/* An AICPU function standing in for a scheduler that never saw its run
 * initialised: it only tells its cores to end. */
static int exit_uninitialised(const struct simdev_aicpu_ctx *ctx, const void *args, size_t size)
{
    struct rt_launch_args la;
    if (size != sizeof la)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&la, args, sizeof la);
    rt_exit_cores_uninitialised(&la, ctx->device, 0);
    return 0;
}

static bool stream_done(void *stream)
{
    return simdev_stream_query(stream) != PTO_RUNTIME_ERR_NOT_READY;
}

static bool poll_for(bool (*done)(void *), void *arg, uint64_t ms)
{
    uint64_t end = simdev_clock_ns() + ms * 1000000ull;
    while (!done(arg))
        if (simdev_clock_ns() >= end)
            return false;
    return true;
}

/* Rings a fresh exit on every core so a hung core loop ends (rescue). */
static void rescue_cores(void)
{
    for (uint32_t c = 0; c < 3; c++) {
        struct simdev_core_regs *regs = platform_core_regs(0, c);
        platform_ring_doorbell(regs,
                                  (platform_read_doorbell(regs) + 1) | RT_DOORBELL_EXIT);
    }
}

static void uninitialised_scheduler_still_ends_its_core_loops_before_or_after_they_start(
    void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    struct rt_launch_args la;
    memset(&la, 0, sizeof la);
    la.request.arena = h.arena;
    la.request.arena_bytes = h.arena_bytes;
    la.request.config = h.config;
    la.schedulers = 1;
    simdev_stream_t cpu = ts_new_stream(), cores = ts_new_stream();
    for (int order = 0; order < 2; order++) {
        la.generation = 0xabc0 + (uint64_t)order;
        if (order == 0) { /* the exit is rung before the core loops start */
            assert_int_equal(simdev_launch_aicpu(cpu, exit_uninitialised, 1, &la, sizeof la), 0);
            assert_int_equal(simdev_stream_sync(cpu), 0);
            assert_int_equal(simdev_launch_aicore(cores, rt_core_main, &la, sizeof la), 0);
        } else { /* ... or after */
            assert_int_equal(simdev_launch_aicore(cores, rt_core_main, &la, sizeof la), 0);
            assert_int_equal(simdev_launch_aicpu(cpu, exit_uninitialised, 1, &la, sizeof la), 0);
        }
        bool ended = poll_for(stream_done, cores, TS_DEADLOCK_GUARD_MS);
        if (!ended)
            rescue_cores();
        assert_int_equal(simdev_stream_sync(cores), 0);
        assert_int_equal(simdev_stream_sync(cpu), 0);
        /* false: a core loop kept waiting for a scheduler that gave up */
        assert_true(ended);
    }
    assert_int_equal(simdev_stream_destroy(cores), 0);
    assert_int_equal(simdev_stream_destroy(cpu), 0);
    /* the next run on the same cores starts clean */
    uint32_t *x_dev = ts_dev_alloc(ELEMS * sizeof(uint32_t));
    uint32_t zero[ELEMS] = {0};
    ts_to_dev(x_dev, zero, sizeof zero);
    good_run(&h, x_dev, 0);
    assert_int_equal(simdev_free(x_dev), 0);
    rth_close(&h);
}

static void run_enqueue_rejects_bad_requests_and_enqueues_nothing(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    struct rt_run_request good = rth_request(&h, add_three, 1);
    struct rt_run_request bad[8];
    for (int i = 0; i < 8; i++)
        bad[i] = good;
    bad[0].entry = NULL;
    bad[1].args = NULL;
    bad[2].arena = NULL;
    bad[3].result = NULL;
    bad[4].kernel_count = SIMPLER_MAX_FUNC_IDS + 1;
    bad[5].arena_bytes = h.arena_bytes - 1; /* one byte short */
    bad[6].config.task_window[2] = 6;        /* not a power of two */
    bad[7].config.heap_bytes[0] = 100;       /* not a multiple of 64 */
    assert_int_equal(simdev_op_counts_reset(0), 0);
    for (int i = 0; i < 8; i++)
        assert_int_equal(rt_run_enqueue(h.launcher, h.stream, &bad[i]),
                         PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_run_enqueue(NULL, h.stream, &good), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_run_enqueue(h.launcher, NULL, &good), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_run_enqueue(h.launcher, h.stream, NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* nonzero: a rejected call enqueued part of the chain */
    assert_int_equal(performed(SIMDEV_OP_RECORD), 0);
    assert_int_equal(performed(SIMDEV_OP_WAIT), 0);
    assert_int_equal(performed(SIMDEV_OP_LAUNCH), 0);
    rth_close(&h);
}

static void run_needs_two_aicpu_threads(void **state)
{
    (void)state;
    struct simdev_config config = ts_small_config();
    config.aicpu_threads = 1;
    ts_device_setup_config(&config);
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    struct rt_run_request rq = rth_request(&h, add_three, 1);
    /* one orchestrator and at least one scheduler */
    assert_int_equal(rt_run_enqueue(h.launcher, h.stream, &rq), PTO_RUNTIME_ERR_UNSUPPORTED);
    rq.config.scheduler_threads = 1;
    assert_int_equal(rt_run_enqueue(h.launcher, h.stream, &rq), PTO_RUNTIME_ERR_UNSUPPORTED);
    rth_close(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(launcher_create_fails_cleanly_at_every_stream_and_event_creation),
        SIMPLER_TEST(launcher_create_fails_cleanly_when_its_host_allocation_fails),
        SIMPLER_TEST(run_enqueue_fails_cleanly_at_every_chain_operation),
        SIMPLER_TEST(uninitialised_scheduler_still_ends_its_core_loops_before_or_after_they_start),
        SIMPLER_TEST(run_enqueue_rejects_bad_requests_and_enqueues_nothing),
        SIMPLER_TEST(run_needs_two_aicpu_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
