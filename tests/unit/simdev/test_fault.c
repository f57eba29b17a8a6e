/*
 * test_fault.c — fault injection and op counters (simdev_fault.h).
 *
 * Owns: for every op kind, that the Nth attempt fails with the armed code
 * and does nothing (no memory accounted, no handle written, nothing enqueued
 * or run, the object still alive after a failed destroy), that the fault
 * then disarms so a retry succeeds, and that the counters count exactly the
 * performed ops.
 *
 * Objects that device work points at (gates, logs, counters, async copy
 * buffers) are static: a failed assertion leaves the test's frame, and work
 * still queued must not be left pointing into a dead stack.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "test_support.h"

/* Distinct codes, so a test can tell the injected failure from a real one. */
#define INJECTED PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY
#define INJECTED_RUN_CODE (-321)

static void *const SENTINEL = (void *)(uintptr_t)0x5e5e5e5e;

static uint64_t count_of(enum simdev_op_kind kind)
{
    uint64_t count = 0xdead;
    assert_int_equal(simdev_op_count(0, kind, &count), 0);
    return count;
}

static void arm(enum simdev_op_kind kind, uint64_t nth, int code)
{
    assert_int_equal(simdev_fault_inject(0, kind, nth, code), 0);
}

/* ------------------------------------------------------------- interface */

static void fault_interface_rejects_bad_arguments(void **state)
{
    (void)state;
    const int bad = PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    uint64_t count;
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_MALLOC, 0, INJECTED), bad); /* nth >= 1 */
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_MALLOC, 1, 0), bad);        /* negative code */
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_MALLOC, 1, 5), bad);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_KIND_COUNT, 1, INJECTED), bad);
    assert_int_equal(simdev_fault_inject(0, (enum simdev_op_kind)-1, 1, INJECTED), bad);
    assert_int_equal(simdev_fault_inject(-1, SIMDEV_OP_MALLOC, 1, INJECTED), bad);
    assert_int_equal(simdev_fault_inject(SIMDEV_MAX_DEVICES, SIMDEV_OP_MALLOC, 1, INJECTED), bad);
    assert_int_equal(simdev_fault_clear(SIMDEV_MAX_DEVICES), bad);
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_MALLOC, NULL), bad);
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_KIND_COUNT, &count), bad);
    assert_int_equal(simdev_op_count(-1, SIMDEV_OP_MALLOC, &count), bad);
    assert_int_equal(simdev_op_counts_reset(SIMDEV_MAX_DEVICES), bad);

    /* none of the rejected arms took effect */
    void *p;
    assert_int_equal(simdev_malloc(&p, 64), 0);
    assert_int_equal(simdev_free(p), 0);
}

static void op_kind_names_are_distinct_and_unknown_out_of_range(void **state)
{
    (void)state;
    assert_string_equal(simdev_op_kind_name(SIMDEV_OP_MALLOC), "malloc");
    assert_string_equal(simdev_op_kind_name(SIMDEV_OP_LAUNCH), "launch");
    assert_string_equal(simdev_op_kind_name(SIMDEV_OP_KIND_COUNT), "unknown");
    assert_string_equal(simdev_op_kind_name((enum simdev_op_kind)-1), "unknown");
    for (int i = 0; i < SIMDEV_OP_KIND_COUNT; i++) {
        const char *name = simdev_op_kind_name((enum simdev_op_kind)i);
        assert_non_null(name);
        assert_string_not_equal(name, "unknown"); /* a real kind without a name */
        for (int j = 0; j < i; j++)
            assert_string_not_equal(name, simdev_op_kind_name((enum simdev_op_kind)j));
    }
}

static void counting_starts_when_armed_and_skips_rejected_calls(void **state)
{
    (void)state;
    void *a, *b, *p = SENTINEL;
    assert_int_equal(simdev_malloc(&a, 64), 0);
    assert_int_equal(simdev_malloc(&b, 64), 0);
    arm(SIMDEV_OP_MALLOC, 1, INJECTED); /* the two earlier attempts do not count */
    /* a call rejected by its argument checks is no attempt */
    assert_int_equal(simdev_malloc(&p, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_malloc(&p, 64), INJECTED); /* 0: counted from before arming */
    assert_ptr_equal(p, SENTINEL);
    assert_int_equal(simdev_malloc(&p, 64), 0);
    assert_int_equal(count_of(SIMDEV_OP_MALLOC), 3); /* 4: the failed attempt was counted */
    assert_int_equal(simdev_free(a), 0);
    assert_int_equal(simdev_free(b), 0);
    assert_int_equal(simdev_free(p), 0);
}

static void rearming_a_kind_replaces_its_fault_and_clear_disarms_all(void **state)
{
    (void)state;
    void *p[3];
    void *q = SENTINEL;
    arm(SIMDEV_OP_MALLOC, 1, INJECTED);
    arm(SIMDEV_OP_MALLOC, 2, INJECTED_RUN_CODE); /* replaces the first arm */
    assert_int_equal(simdev_malloc(&p[0], 64), 0); /* INJECTED: the old fault survived */
    assert_int_equal(simdev_malloc(&q, 64), INJECTED_RUN_CODE);
    assert_ptr_equal(q, SENTINEL);
    assert_int_equal(simdev_malloc(&p[1], 64), 0);

    arm(SIMDEV_OP_MALLOC, 1, INJECTED);
    arm(SIMDEV_OP_FREE, 1, INJECTED);
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_int_equal(simdev_malloc(&p[2], 64), 0); /* INJECTED: clear left a fault armed */
    for (int i = 0; i < 3; i++)
        assert_int_equal(simdev_free(p[i]), 0);
}

static void faults_and_counters_belong_to_one_device(void **state)
{
    (void)state;
    void *p0, *p1;
    uint64_t count = 99;
    assert_int_equal(simdev_device_reset(1), 0);
    assert_int_equal(simdev_op_counts_reset(1), 0);
    assert_int_equal(simdev_fault_inject(1, SIMDEV_OP_MALLOC, 1, INJECTED), 0);
    assert_int_equal(simdev_malloc(&p0, 64), 0); /* INJECTED: device 1's fault hit device 0 */
    assert_int_equal(count_of(SIMDEV_OP_MALLOC), 1);
    assert_int_equal(simdev_op_count(1, SIMDEV_OP_MALLOC, &count), 0);
    assert_int_equal(count, 0); /* 1: device 0's malloc was counted on device 1 */

    assert_int_equal(simdev_set_device(1), 0);
    assert_int_equal(simdev_malloc(&p1, 64), INJECTED);
    assert_int_equal(simdev_malloc(&p1, 64), 0);
    assert_int_equal(simdev_op_count(1, SIMDEV_OP_MALLOC, &count), 0);
    assert_int_equal(count, 1);
    assert_int_equal(simdev_free(p1), 0);
    assert_int_equal(simdev_set_device(0), 0);
    assert_int_equal(count_of(SIMDEV_OP_MALLOC), 1);
    assert_int_equal(simdev_free(p0), 0);
    assert_int_equal(simdev_device_reset(1), 0);
}

/* ---------------------------------------------------------- create/destroy */

static void stream_create_fault_writes_no_handle_and_a_retry_succeeds(void **state)
{
    (void)state;
    simdev_stream_t first, second = SENTINEL;
    static atomic_int ran = 0;
    arm(SIMDEV_OP_STREAM_CREATE, 2, INJECTED);
    assert_int_equal(simdev_stream_create(&first), 0);
    assert_int_equal(simdev_stream_create(&second), INJECTED);
    assert_ptr_equal(second, SENTINEL); /* written: a handle escaped a failed create */
    assert_int_equal(count_of(SIMDEV_OP_STREAM_CREATE), 1);
    assert_int_equal(simdev_stream_create(&second), 0); /* the fault disarmed */
    assert_int_equal(count_of(SIMDEV_OP_STREAM_CREATE), 2);

    ts_launch_count(second, &ran);
    assert_int_equal(simdev_stream_sync(second), 0);
    assert_int_equal(atomic_load(&ran), 1);
    assert_int_equal(simdev_stream_destroy(first), 0);
    assert_int_equal(simdev_stream_destroy(second), 0);
}

static void stream_destroy_fault_leaves_the_stream_alive_and_a_retry_succeeds(void **state)
{
    (void)state;
    simdev_stream_t stream;
    static atomic_int ran = 0;
    assert_int_equal(simdev_stream_create(&stream), 0);
    arm(SIMDEV_OP_STREAM_DESTROY, 1, INJECTED);
    assert_int_equal(simdev_stream_destroy(stream), INJECTED);
    assert_int_equal(count_of(SIMDEV_OP_STREAM_DESTROY), 0);

    /* still a working stream: a crash or error here means the destroy happened */
    ts_launch_count(stream, &ran);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(atomic_load(&ran), 1);
    assert_int_equal(simdev_stream_destroy(stream), 0);
    assert_int_equal(count_of(SIMDEV_OP_STREAM_DESTROY), 1);
}

static void event_create_fault_writes_no_handle_and_a_retry_succeeds(void **state)
{
    (void)state;
    simdev_event_t event = SENTINEL;
    simdev_stream_t stream;
    assert_int_equal(simdev_stream_create(&stream), 0);
    arm(SIMDEV_OP_EVENT_CREATE, 1, INJECTED);
    assert_int_equal(simdev_event_create(&event), INJECTED);
    assert_ptr_equal(event, SENTINEL);
    assert_int_equal(count_of(SIMDEV_OP_EVENT_CREATE), 0);
    assert_int_equal(simdev_event_create(&event), 0);
    assert_int_equal(count_of(SIMDEV_OP_EVENT_CREATE), 1);

    assert_int_equal(simdev_event_record(event, stream), 0);
    assert_int_equal(simdev_event_sync(event), 0);
    assert_int_equal(simdev_event_destroy(event), 0);
    assert_int_equal(simdev_stream_destroy(stream), 0);
}

static void event_destroy_fault_leaves_the_event_alive_and_a_retry_succeeds(void **state)
{
    (void)state;
    simdev_event_t event;
    simdev_stream_t stream;
    static struct ts_gate gate;
    ts_gate_init(&gate);
    assert_int_equal(simdev_stream_create(&stream), 0);
    assert_int_equal(simdev_event_create(&event), 0);
    arm(SIMDEV_OP_EVENT_DESTROY, 1, INJECTED);
    assert_int_equal(simdev_event_destroy(event), INJECTED);
    assert_int_equal(count_of(SIMDEV_OP_EVENT_DESTROY), 0);

    /* still a working event: it records and reports pending work */
    ts_launch_gate(stream, &gate);
    assert_int_equal(simdev_event_record(event, stream), 0);
    int pending = simdev_event_query(event);
    ts_gate_open(&gate);
    assert_int_equal(pending, PTO_RUNTIME_ERR_NOT_READY);
    assert_int_equal(simdev_event_sync(event), 0);
    assert_int_equal(simdev_event_destroy(event), 0);
    assert_int_equal(count_of(SIMDEV_OP_EVENT_DESTROY), 1);
    assert_int_equal(simdev_stream_destroy(stream), 0);
    ts_gate_destroy(&gate);
}

/* ----------------------------------------------------------------- memory */

static void malloc_fault_accounts_nothing_and_a_retry_succeeds(void **state)
{
    (void)state;
    void *first, *second = SENTINEL;
    struct simdev_mem_info info;
    arm(SIMDEV_OP_MALLOC, 2, INJECTED);
    assert_int_equal(simdev_malloc(&first, 4096), 0);
    assert_int_equal(simdev_malloc(&second, 8192), INJECTED);
    assert_ptr_equal(second, SENTINEL);
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    assert_int_equal(info.in_use, 4096); /* 12288: the failed allocation was accounted */
    assert_int_equal(info.high_water, 4096);
    assert_int_equal(info.allocations, 1);
    assert_int_equal(count_of(SIMDEV_OP_MALLOC), 1);

    assert_int_equal(simdev_malloc(&second, 8192), 0);
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    assert_int_equal(info.in_use, 12288);
    assert_int_equal(info.allocations, 2);
    assert_int_equal(count_of(SIMDEV_OP_MALLOC), 2);
    assert_int_equal(simdev_free(first), 0);
    assert_int_equal(simdev_free(second), 0);
}

static void free_fault_keeps_the_allocation_and_a_retry_frees_it(void **state)
{
    (void)state;
    void *p;
    unsigned char in[64], out[64];
    struct simdev_mem_info info;
    memset(in, 0x3C, sizeof in);
    assert_int_equal(simdev_malloc(&p, 64), 0);
    assert_int_equal(simdev_memcpy(p, in, sizeof in, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    arm(SIMDEV_OP_FREE, 1, INJECTED);
    assert_int_equal(simdev_free(p), INJECTED);
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    assert_int_equal(info.in_use, 64); /* 0: the failed free released the memory */
    assert_int_equal(info.allocations, 1);
    assert_int_equal(count_of(SIMDEV_OP_FREE), 0);
    /* still a live allocation with its bytes */
    assert_int_equal(simdev_memcpy(out, p, sizeof out, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(out, in, sizeof in);

    assert_int_equal(simdev_free(p), 0);
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    assert_int_equal(info.in_use, 0);
    assert_int_equal(count_of(SIMDEV_OP_FREE), 1);
}

/* ------------------------------------------------------------------ copies */

static void copy_fault_moves_no_bytes_for_each_copy_call_and_a_retry_succeeds(void **state)
{
    (void)state;
    enum { N = 256 };
    static unsigned char zeros[N], ones[N], out[N];
    void *dev;
    simdev_stream_t stream;
    memset(zeros, 0, N);
    memset(ones, 1, N);
    assert_int_equal(simdev_malloc(&dev, N), 0);
    assert_int_equal(simdev_stream_create(&stream), 0);
    assert_int_equal(simdev_memcpy(dev, zeros, N, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    assert_int_equal(simdev_op_counts_reset(0), 0);

    /* synchronous copy */
    arm(SIMDEV_OP_COPY, 1, INJECTED);
    assert_int_equal(simdev_memcpy(dev, ones, N, SIMDEV_COPY_HOST_TO_DEVICE), INJECTED);
    assert_int_equal(simdev_memcpy(out, dev, N, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(out, zeros, N); /* ones: the failed copy moved bytes */
    assert_int_equal(count_of(SIMDEV_OP_COPY), 1);

    /* asynchronous copy: nothing enqueued, the stream stays clean */
    arm(SIMDEV_OP_COPY, 1, INJECTED);
    assert_int_equal(simdev_memcpy_async(dev, ones, N, SIMDEV_COPY_HOST_TO_DEVICE, stream),
                     INJECTED);
    assert_int_equal(simdev_stream_sync(stream), 0); /* INJECTED: the failure was enqueued */
    assert_int_equal(simdev_memcpy(out, dev, N, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(out, zeros, N);
    assert_int_equal(count_of(SIMDEV_OP_COPY), 2);

    /* asynchronous memset */
    arm(SIMDEV_OP_COPY, 1, INJECTED);
    assert_int_equal(simdev_memset_async(dev, 1, N, stream), INJECTED);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(simdev_memcpy(out, dev, N, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(out, zeros, N);
    assert_int_equal(count_of(SIMDEV_OP_COPY), 3);

    /* the kind counts attempts across all three calls: the 3rd is the async copy */
    arm(SIMDEV_OP_COPY, 3, INJECTED);
    assert_int_equal(simdev_memset_async(dev, 0, N, stream), 0);                       /* 1 */
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(simdev_memcpy(out, dev, N, SIMDEV_COPY_DEVICE_TO_HOST), 0);        /* 2 */
    assert_int_equal(simdev_memcpy_async(dev, ones, N, SIMDEV_COPY_HOST_TO_DEVICE, stream),
                     INJECTED);                                                          /* 3 */
    assert_int_equal(simdev_memcpy_async(dev, ones, N, SIMDEV_COPY_HOST_TO_DEVICE, stream), 0);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(simdev_memcpy(out, dev, N, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(out, ones, N); /* zeros: the retry did not run */
    assert_int_equal(count_of(SIMDEV_OP_COPY), 7);

    assert_int_equal(simdev_stream_destroy(stream), 0);
    assert_int_equal(simdev_free(dev), 0);
}

/* ---------------------------------------------------------------- launches */

static int count_aicore_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    atomic_int *counter;
    if (args_size != sizeof counter)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&counter, args, sizeof counter);
    atomic_fetch_add(counter, 1);
    return 0;
}

static void launch_fault_runs_nothing_for_each_launch_call_and_a_retry_succeeds(void **state)
{
    (void)state;
    simdev_stream_t stream;
    static atomic_int aicpu_ran = 0, aicore_ran = 0, host_ran = 0;
    atomic_int *aicpu_arg = &aicpu_ran, *aicore_arg = &aicore_ran;
    assert_int_equal(simdev_stream_create(&stream), 0);

    arm(SIMDEV_OP_LAUNCH, 1, INJECTED);
    /* an argument error is reported first and is no attempt */
    assert_int_equal(simdev_launch_aicpu(stream, NULL, 1, NULL, 0),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_launch_aicpu(stream, ts_count_aicpu_fn, 2, &aicpu_arg,
                                         sizeof aicpu_arg),
                     INJECTED);
    arm(SIMDEV_OP_LAUNCH, 1, INJECTED);
    assert_int_equal(simdev_launch_aicore(stream, count_aicore_fn, &aicore_arg, sizeof aicore_arg),
                     INJECTED);
    arm(SIMDEV_OP_LAUNCH, 1, INJECTED);
    assert_int_equal(simdev_launch_host_func(stream, ts_count_host_fn, &host_ran), INJECTED);
    assert_int_equal(simdev_stream_sync(stream), 0); /* INJECTED: a failure was enqueued */
    assert_int_equal(atomic_load(&aicpu_ran), 0);   /* 1+: a failed launch ran */
    assert_int_equal(atomic_load(&aicore_ran), 0);
    assert_int_equal(atomic_load(&host_ran), 0);
    assert_int_equal(count_of(SIMDEV_OP_LAUNCH), 0);

    /* disarmed: each launch now runs */
    assert_int_equal(simdev_launch_aicpu(stream, ts_count_aicpu_fn, 2, &aicpu_arg,
                                         sizeof aicpu_arg),
                     0);
    assert_int_equal(simdev_launch_aicore(stream, count_aicore_fn, &aicore_arg, sizeof aicore_arg),
                     0);
    assert_int_equal(simdev_launch_host_func(stream, ts_count_host_fn, &host_ran), 0);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(atomic_load(&aicpu_ran), 2);
    assert_int_equal(atomic_load(&aicore_ran), 3);
    assert_int_equal(atomic_load(&host_ran), 1);
    assert_int_equal(count_of(SIMDEV_OP_LAUNCH), 3);
    assert_int_equal(simdev_stream_destroy(stream), 0);
}

/* ---------------------------------------------------------- record / wait */

static void record_fault_records_nothing_and_a_retry_succeeds(void **state)
{
    (void)state;
    simdev_stream_t a;
    simdev_event_t event;
    static struct ts_gate gate;
    ts_gate_init(&gate);
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_event_create(&event), 0);
    ts_launch_gate(a, &gate);

    arm(SIMDEV_OP_RECORD, 1, INJECTED);
    assert_int_equal(simdev_event_record(event, a), INJECTED);
    int query_after_failed = simdev_event_query(event); /* never recorded: complete */
    assert_int_equal(simdev_event_record(event, a), 0);
    int query_after_retry = simdev_event_query(event);
    ts_gate_open(&gate);
    assert_int_equal(query_after_failed, 0); /* NOT_READY: the failed record was enqueued */
    assert_int_equal(query_after_retry, PTO_RUNTIME_ERR_NOT_READY);
    assert_int_equal(simdev_event_sync(event), 0);
    assert_int_equal(count_of(SIMDEV_OP_RECORD), 1);

    assert_int_equal(simdev_event_destroy(event), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    ts_gate_destroy(&gate);
}

static void wait_fault_enqueues_no_wait_and_a_retry_succeeds(void **state)
{
    (void)state;
    simdev_stream_t a, b;
    simdev_event_t event;
    static struct ts_gate gate, b_ran, b_ran_after_retry;
    static atomic_int after_wait = 0;
    ts_gate_init(&gate);
    ts_gate_init(&b_ran);
    ts_gate_open(&b_ran); /* probes: passing only counts */
    ts_gate_init(&b_ran_after_retry);
    ts_gate_open(&b_ran_after_retry);
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_stream_create(&b), 0);
    assert_int_equal(simdev_event_create(&event), 0);
    ts_launch_gate(a, &gate);
    assert_int_equal(simdev_event_record(event, a), 0);

    arm(SIMDEV_OP_WAIT, 1, INJECTED);
    assert_int_equal(simdev_stream_wait_event(b, event), INJECTED);
    ts_launch_gate(b, &b_ran);
    /* B runs although A is blocked: the failed wait was not enqueued */
    int b_unblocked = ts_gate_wait_arrivals_for(&b_ran, 1, TS_DEADLOCK_GUARD_MS);

    assert_int_equal(simdev_stream_wait_event(b, event), 0);
    ts_launch_count(b, &after_wait);
    ts_launch_gate(b, &b_ran_after_retry);
    int ran_early = ts_gate_wait_arrivals_for(&b_ran_after_retry, 1, TS_GRACE_MS);
    int b_query = simdev_stream_query(b);
    ts_gate_open(&gate);
    assert_true(b_unblocked); /* false: the failed wait still held B */
    assert_int_equal(ran_early, 0); /* 1: the retried wait did nothing */
    assert_int_equal(b_query, PTO_RUNTIME_ERR_NOT_READY);
    assert_int_equal(simdev_stream_sync(b), 0);
    assert_int_equal(atomic_load(&after_wait), 1);
    assert_int_equal(count_of(SIMDEV_OP_WAIT), 1);

    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(simdev_event_destroy(event), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    ts_gate_destroy(&gate);
    ts_gate_destroy(&b_ran);
    ts_gate_destroy(&b_ran_after_retry);
}

/* ------------------------------------------------------------------- sync */

static int fail_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx, (void)args, (void)args_size;
    return -7;
}

static void sync_fault_clears_nothing_for_each_sync_call_and_a_retry_reports(void **state)
{
    (void)state;
    simdev_stream_t a;
    simdev_event_t event;
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_event_create(&event), 0);

    /* stream sync: the carried error survives a failed sync */
    assert_int_equal(simdev_launch_aicpu(a, fail_aicpu_fn, 1, NULL, 0), 0);
    assert_int_equal(ts_stream_query_settled(a), -7);
    assert_int_equal(simdev_op_counts_reset(0), 0);
    arm(SIMDEV_OP_SYNC, 1, INJECTED);
    assert_int_equal(simdev_stream_sync(a), INJECTED);
    assert_int_equal(simdev_stream_query(a), -7); /* 0: the failed sync cleared the error */
    assert_int_equal(count_of(SIMDEV_OP_SYNC), 0);
    assert_int_equal(simdev_stream_sync(a), -7);
    assert_int_equal(count_of(SIMDEV_OP_SYNC), 1);

    /* event sync */
    assert_int_equal(simdev_launch_aicpu(a, fail_aicpu_fn, 1, NULL, 0), 0);
    assert_int_equal(simdev_event_record(event, a), 0);
    assert_int_equal(ts_stream_query_settled(a), -7);
    arm(SIMDEV_OP_SYNC, 1, INJECTED);
    assert_int_equal(simdev_event_sync(event), INJECTED);
    assert_int_equal(simdev_event_sync(event), -7);
    assert_int_equal(count_of(SIMDEV_OP_SYNC), 2);

    /* device sync: A still carries -7 (event sync does not clear streams) */
    arm(SIMDEV_OP_SYNC, 1, INJECTED);
    assert_int_equal(simdev_device_sync(), INJECTED);
    assert_int_equal(simdev_stream_query(a), -7);
    assert_int_equal(simdev_device_sync(), -7);
    assert_int_equal(simdev_stream_query(a), 0);
    assert_int_equal(count_of(SIMDEV_OP_SYNC), 3);

    assert_int_equal(simdev_event_destroy(event), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

/* ----------------------------------------------------------- graph launch */

static void graph_launch_fault_replays_nothing_and_a_retry_succeeds(void **state)
{
    (void)state;
    simdev_stream_t capture_stream, replay_stream;
    simdev_graph_t graph;
    simdev_graph_exec_t exec;
    static atomic_int ran = 0;
    size_t nodes = 0;
    assert_int_equal(simdev_stream_create(&capture_stream), 0);
    assert_int_equal(simdev_stream_create(&replay_stream), 0);
    assert_int_equal(simdev_stream_begin_capture(capture_stream), 0);
    ts_launch_count(capture_stream, &ran);
    assert_int_equal(simdev_stream_end_capture(capture_stream, &graph), 0);
    assert_int_equal(simdev_graph_node_count(graph, &nodes), 0);
    assert_int_equal(nodes, 1);
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(atomic_load(&ran), 0); /* 1: capture ran the launch */
    assert_int_equal(simdev_op_counts_reset(0), 0);

    arm(SIMDEV_OP_GRAPH_LAUNCH, 3, INJECTED);
    assert_int_equal(simdev_graph_launch(exec, replay_stream), 0);
    assert_int_equal(simdev_graph_launch(exec, replay_stream), 0);
    assert_int_equal(simdev_graph_launch(exec, replay_stream), INJECTED);
    assert_int_equal(simdev_stream_sync(replay_stream), 0); /* INJECTED: failure enqueued */
    assert_int_equal(atomic_load(&ran), 2); /* 3: the failed replay ran */
    assert_int_equal(count_of(SIMDEV_OP_GRAPH_LAUNCH), 2);

    assert_int_equal(simdev_graph_launch(exec, replay_stream), 0);
    assert_int_equal(simdev_stream_sync(replay_stream), 0);
    assert_int_equal(atomic_load(&ran), 3);
    assert_int_equal(count_of(SIMDEV_OP_GRAPH_LAUNCH), 3);

    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_stream_destroy(capture_stream), 0);
    assert_int_equal(simdev_stream_destroy(replay_stream), 0);
}

/* A replay fault fails one launch node of the next replay only: that
 * launch and the launch after it in its lane are skipped, the replay
 * stream carries the code, and the replay after runs both again. */
static void replay_fault_fails_one_node_of_the_next_replay_only(void **state)
{
    (void)state;
    simdev_stream_t capture_stream, replay_stream;
    simdev_graph_t graph;
    simdev_graph_exec_t exec;
    static atomic_int first = 0, second = 0;
    assert_int_equal(simdev_stream_create(&capture_stream), 0);
    assert_int_equal(simdev_stream_create(&replay_stream), 0);
    assert_int_equal(simdev_stream_begin_capture(capture_stream), 0);
    ts_launch_count(capture_stream, &first);
    ts_launch_count(capture_stream, &second);
    assert_int_equal(simdev_stream_end_capture(capture_stream, &graph), 0);
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);

    assert_int_equal(simdev_fault_inject_replay(exec, 2, INJECTED_RUN_CODE),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* two launch nodes */
    assert_int_equal(simdev_fault_inject_replay(exec, 0, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_fault_inject_replay(NULL, 0, INJECTED_RUN_CODE),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_fault_inject_replay(exec, 1, INJECTED_RUN_CODE), 0);
    assert_int_equal(simdev_graph_launch(exec, replay_stream), 0);
    assert_int_equal(simdev_stream_sync(replay_stream), INJECTED_RUN_CODE);
    assert_int_equal(atomic_load(&first), 1);  /* 0: the fault hit the wrong node */
    assert_int_equal(atomic_load(&second), 0); /* 1: the failed node ran */
    assert_int_equal(simdev_graph_launch(exec, replay_stream), 0);
    assert_int_equal(simdev_stream_sync(replay_stream), 0); /* the code again: not once */
    assert_int_equal(atomic_load(&second), 1);

    assert_int_equal(simdev_fault_inject_replay(exec, 0, INJECTED_RUN_CODE), 0);
    assert_int_equal(simdev_graph_launch(exec, replay_stream), 0);
    assert_int_equal(simdev_stream_sync(replay_stream), INJECTED_RUN_CODE);
    assert_int_equal(atomic_load(&first), 2);  /* the failed node did not run */
    assert_int_equal(atomic_load(&second), 1); /* 2: a node after a failure ran */
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_stream_destroy(capture_stream), 0);
    assert_int_equal(simdev_stream_destroy(replay_stream), 0);
}

/* --------------------------------------------------------------- counters */

static void op_counters_count_exactly_the_performed_ops(void **state)
{
    (void)state;
    simdev_stream_t s1, s2;
    simdev_event_t event;
    void *p[3];
    unsigned char host[64] = {0};
    static atomic_int ran = 0;
    atomic_int *ran_arg = &ran;
    const int bad = PTO_RUNTIME_ERR_INVALID_ARGUMENT;

    /* every kind starts at zero on a fresh device */
    for (int k = 0; k < SIMDEV_OP_KIND_COUNT; k++)
        assert_int_equal(count_of((enum simdev_op_kind)k), 0);

    assert_int_equal(simdev_stream_create(&s1), 0);
    assert_int_equal(simdev_stream_create(&s2), 0);
    assert_int_equal(simdev_stream_create(NULL), bad);
    assert_int_equal(simdev_event_create(&event), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(simdev_malloc(&p[i], 64), 0);
    assert_int_equal(simdev_malloc(&p[0], 0), bad);
    assert_int_equal(simdev_memcpy(p[0], host, 64, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    assert_int_equal(simdev_memcpy(p[0], host, 65, SIMDEV_COPY_HOST_TO_DEVICE), bad);
    assert_int_equal(simdev_memcpy_async(p[1], p[0], 64, SIMDEV_COPY_DEVICE_TO_DEVICE, s1), 0);
    assert_int_equal(simdev_memset_async(p[2], 0, 64, s1), 0);
    assert_int_equal(simdev_launch_aicpu(s1, ts_count_aicpu_fn, 1, &ran_arg, sizeof ran_arg), 0);
    assert_int_equal(simdev_launch_aicpu(s2, ts_count_aicpu_fn, 2, &ran_arg, sizeof ran_arg), 0);
    assert_int_equal(simdev_launch_aicore(s1, count_aicore_fn, &ran_arg, sizeof ran_arg), 0);
    assert_int_equal(simdev_launch_host_func(s2, ts_count_host_fn, &ran), 0);
    assert_int_equal(simdev_launch_aicpu(s1, NULL, 1, NULL, 0), bad);
    assert_int_equal(simdev_event_record(event, s1), 0);
    assert_int_equal(simdev_event_record(NULL, s1), bad);
    assert_int_equal(simdev_stream_wait_event(s2, event), 0);
    assert_int_equal(simdev_stream_wait_event(s2, NULL), bad);
    assert_int_equal(simdev_stream_sync(s1), 0);
    assert_int_equal(simdev_event_sync(event), 0);
    assert_int_equal(simdev_stream_sync(s2), 0);
    assert_int_equal(simdev_device_sync(), 0);
    assert_int_equal(simdev_free(host), bad);
    for (int i = 0; i < 3; i++)
        assert_int_equal(simdev_free(p[i]), 0);
    assert_int_equal(atomic_load(&ran), 1 + 2 + 3 + 1);

    assert_int_equal(count_of(SIMDEV_OP_STREAM_CREATE), 2);
    assert_int_equal(count_of(SIMDEV_OP_EVENT_CREATE), 1);
    assert_int_equal(count_of(SIMDEV_OP_MALLOC), 3);
    assert_int_equal(count_of(SIMDEV_OP_COPY), 3);   /* 4: a rejected copy was counted */
    assert_int_equal(count_of(SIMDEV_OP_LAUNCH), 4); /* 5: a rejected launch was counted */
    assert_int_equal(count_of(SIMDEV_OP_RECORD), 1);
    assert_int_equal(count_of(SIMDEV_OP_WAIT), 1);
    assert_int_equal(count_of(SIMDEV_OP_SYNC), 4);
    assert_int_equal(count_of(SIMDEV_OP_FREE), 3);
    assert_int_equal(count_of(SIMDEV_OP_GRAPH_LAUNCH), 0);
    assert_int_equal(count_of(SIMDEV_OP_EVENT_DESTROY), 0);
    assert_int_equal(count_of(SIMDEV_OP_STREAM_DESTROY), 0);

    assert_int_equal(simdev_event_destroy(event), 0);
    assert_int_equal(simdev_stream_destroy(s1), 0);
    assert_int_equal(simdev_stream_destroy(s2), 0);
    assert_int_equal(count_of(SIMDEV_OP_EVENT_DESTROY), 1);
    assert_int_equal(count_of(SIMDEV_OP_STREAM_DESTROY), 2);
    /* destroy drains the stream itself: that is no call of a sync function */
    assert_int_equal(count_of(SIMDEV_OP_SYNC), 4);

    assert_int_equal(simdev_op_counts_reset(0), 0);
    for (int k = 0; k < SIMDEV_OP_KIND_COUNT; k++)
        assert_int_equal(count_of((enum simdev_op_kind)k), 0); /* nonzero: reset missed a kind */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(fault_interface_rejects_bad_arguments),
        SIMPLER_TEST(op_kind_names_are_distinct_and_unknown_out_of_range),
        SIMPLER_TEST(counting_starts_when_armed_and_skips_rejected_calls),
        SIMPLER_TEST(rearming_a_kind_replaces_its_fault_and_clear_disarms_all),
        SIMPLER_TEST(faults_and_counters_belong_to_one_device),
        SIMPLER_TEST(stream_create_fault_writes_no_handle_and_a_retry_succeeds),
        SIMPLER_TEST(stream_destroy_fault_leaves_the_stream_alive_and_a_retry_succeeds),
        SIMPLER_TEST(event_create_fault_writes_no_handle_and_a_retry_succeeds),
        SIMPLER_TEST(event_destroy_fault_leaves_the_event_alive_and_a_retry_succeeds),
        SIMPLER_TEST(malloc_fault_accounts_nothing_and_a_retry_succeeds),
        SIMPLER_TEST(free_fault_keeps_the_allocation_and_a_retry_frees_it),
        SIMPLER_TEST(copy_fault_moves_no_bytes_for_each_copy_call_and_a_retry_succeeds),
        SIMPLER_TEST(launch_fault_runs_nothing_for_each_launch_call_and_a_retry_succeeds),
        SIMPLER_TEST(record_fault_records_nothing_and_a_retry_succeeds),
        SIMPLER_TEST(wait_fault_enqueues_no_wait_and_a_retry_succeeds),
        SIMPLER_TEST(sync_fault_clears_nothing_for_each_sync_call_and_a_retry_reports),
        SIMPLER_TEST(graph_launch_fault_replays_nothing_and_a_retry_succeeds),
        SIMPLER_TEST(replay_fault_fails_one_node_of_the_next_replay_only),
        SIMPLER_TEST(op_counters_count_exactly_the_performed_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
