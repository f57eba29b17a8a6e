/*
 * test_error_chain.c — how a device error travels to the caller's sync.
 *
 * Owns: DESIGN.md section 3 "Errors": a failed op makes its stream carry the
 * error, later ops on it are skipped, an event recorded after it carries it,
 * a stream waiting on that event inherits it, sync returns and clears it.
 * Streams that never waited stay clean.
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

#include "simpler/simdev_fault.h"
#include "test_support.h"

#define BUF 64

struct fail_arg {
    int code;        /* returned by the thread/core selected below */
    int who;         /* thread index / core id that fails; -1 = all */
    atomic_int *calls;
};

static int fail_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    struct fail_arg arg;
    if (args_size != sizeof arg)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&arg, args, sizeof arg);
    atomic_fetch_add(arg.calls, 1);
    return arg.who < 0 || (uint32_t)arg.who == ctx->thread_index ? arg.code : 0;
}

static int fail_aicore_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    struct fail_arg arg;
    if (args_size != sizeof arg)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&arg, args, sizeof arg);
    atomic_fetch_add(arg.calls, 1);
    return arg.who < 0 || (uint32_t)arg.who == ctx->core_id ? arg.code : 0;
}

static void launch_fail(simdev_stream_t stream, int code, atomic_int *calls)
{
    struct fail_arg arg = {code, -1, calls};
    assert_int_equal(simdev_launch_aicpu(stream, fail_aicpu_fn, 1, &arg, sizeof arg), 0);
}

struct host_fail {
    int code;
    atomic_int calls;
};

static int fail_host_fn(void *user_data)
{
    struct host_fail *f = user_data;
    atomic_fetch_add(&f->calls, 1);
    return f->code;
}

static void *dev_buffer(unsigned char fill)
{
    unsigned char bytes[BUF];
    void *dev;
    memset(bytes, fill, BUF);
    assert_int_equal(simdev_malloc(&dev, BUF), 0);
    assert_int_equal(simdev_memcpy(dev, bytes, BUF, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    return dev;
}

/* Asserts every byte of a BUF-byte device buffer equals `fill`. */
static void assert_dev_bytes(void *dev, unsigned char fill)
{
    unsigned char bytes[BUF];
    assert_int_equal(simdev_memcpy(bytes, dev, BUF, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    for (int i = 0; i < BUF; i++)
        assert_int_equal(bytes[i], fill);
}

static void a_failed_op_skips_later_ops_and_reaches_waiters_but_not_bystanders(void **state)
{
    (void)state;
    simdev_stream_t a, b, c;
    simdev_event_t after_failure;
    static atomic_int failing_calls = 0, second_failure_calls = 0;
    static atomic_int a_after = 0, a_host_after = 0, b_before = 0, b_after = 0, b_host_after = 0;
    static atomic_int c_ran = 0;
    void *buf_a = dev_buffer(0x00), *buf_b = dev_buffer(0x00), *buf_c = dev_buffer(0x00);
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_stream_create(&b), 0);
    assert_int_equal(simdev_stream_create(&c), 0);
    assert_int_equal(simdev_event_create(&after_failure), 0);

    /* A: the failure, then work that must be skipped, then the record */
    launch_fail(a, -7, &failing_calls);
    ts_launch_count(a, &a_after);
    assert_int_equal(simdev_launch_host_func(a, ts_count_host_fn, &a_host_after), 0);
    assert_int_equal(simdev_memset_async(buf_a, 0x77, BUF, a), 0);
    launch_fail(a, -9, &second_failure_calls); /* would replace -7 if it ran */
    assert_int_equal(simdev_event_record(after_failure, a), 0);

    /* B: clean work, then the wait that imports A's error, then skipped work */
    ts_launch_count(b, &b_before);
    assert_int_equal(simdev_stream_wait_event(b, after_failure), 0);
    ts_launch_count(b, &b_after);
    assert_int_equal(simdev_memset_async(buf_b, 0x88, BUF, b), 0);
    assert_int_equal(simdev_launch_host_func(b, ts_count_host_fn, &b_host_after), 0);

    /* C: never waits on anything */
    ts_launch_count(c, &c_ran);
    assert_int_equal(simdev_memset_async(buf_c, 0x33, BUF, c), 0);

    /* the event carries A's error; queries do not consume it */
    assert_int_equal(simdev_event_sync(after_failure), -7); /* 0: the record lost A's error */
    assert_int_equal(simdev_event_query(after_failure), -7);
    assert_int_equal(simdev_event_query(after_failure), -7);

    /* B inherits it, and B's ops after the wait never ran */
    assert_int_equal(simdev_stream_sync(b), -7); /* 0: the wait did not import the error */
    assert_int_equal(atomic_load(&b_before), 1);  /* 0: work before the wait was skipped too */
    assert_int_equal(atomic_load(&b_after), 0);   /* 1: B ran work after inheriting an error */
    assert_int_equal(atomic_load(&b_host_after), 0);
    assert_dev_bytes(buf_b, 0x00); /* 0x88: a skipped memset wrote */

    /* C stays clean */
    assert_int_equal(simdev_stream_sync(c), 0); /* -7: the error leaked to a bystander */
    assert_int_equal(atomic_load(&c_ran), 1);
    assert_dev_bytes(buf_c, 0x33);

    /* A reports it (query does not clear), sync returns and clears it */
    assert_int_equal(ts_stream_query_settled(a), -7);
    assert_int_equal(simdev_stream_query(a), -7);
    assert_int_equal(simdev_stream_sync(a), -7); /* -9: a later failing op ran and won */
    assert_int_equal(atomic_load(&failing_calls), 1);
    assert_int_equal(atomic_load(&second_failure_calls), 0);
    assert_int_equal(atomic_load(&a_after), 0); /* 1: a skipped launch ran */
    assert_int_equal(atomic_load(&a_host_after), 0);
    assert_dev_bytes(buf_a, 0x00);
    assert_int_equal(simdev_stream_query(a), 0); /* -7: sync did not clear the error */
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(simdev_stream_query(b), 0);

    /* the record keeps the error it captured even after A was cleared */
    assert_int_equal(simdev_event_query(after_failure), -7);

    /* both streams run new work again */
    static atomic_int a_fresh = 0, b_fresh = 0;
    ts_launch_count(a, &a_fresh);
    assert_int_equal(simdev_memset_async(buf_a, 0x44, BUF, a), 0);
    assert_int_equal(simdev_event_record(after_failure, a), 0); /* a clean record now */
    assert_int_equal(simdev_stream_wait_event(b, after_failure), 0);
    ts_launch_count(b, &b_fresh);
    assert_int_equal(simdev_memset_async(buf_b, 0x55, BUF, b), 0);
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(simdev_stream_sync(b), 0); /* -7: the re-record kept the stale error */
    assert_int_equal(simdev_event_query(after_failure), 0);
    assert_int_equal(atomic_load(&a_fresh), 1); /* 0: the stream stayed poisoned after sync */
    assert_int_equal(atomic_load(&b_fresh), 1);
    assert_dev_bytes(buf_a, 0x44);
    assert_dev_bytes(buf_b, 0x55);

    assert_int_equal(simdev_event_destroy(after_failure), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    assert_int_equal(simdev_stream_destroy(c), 0);
    assert_int_equal(simdev_free(buf_a), 0);
    assert_int_equal(simdev_free(buf_b), 0);
    assert_int_equal(simdev_free(buf_c), 0);
}

static void an_event_recorded_before_the_failure_stays_clean(void **state)
{
    (void)state;
    simdev_stream_t a;
    simdev_event_t before, after;
    static atomic_int calls = 0;
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_event_create(&before), 0);
    assert_int_equal(simdev_event_create(&after), 0);

    assert_int_equal(simdev_event_record(before, a), 0);
    launch_fail(a, -7, &calls);
    assert_int_equal(simdev_event_record(after, a), 0);
    assert_int_equal(simdev_event_sync(after), -7);
    assert_int_equal(simdev_event_sync(before), 0); /* -7: an error reached back in time */
    assert_int_equal(simdev_event_query(before), 0);
    assert_int_equal(simdev_stream_sync(a), -7);

    assert_int_equal(simdev_event_destroy(before), 0);
    assert_int_equal(simdev_event_destroy(after), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void a_failing_host_func_fails_its_stream_with_its_code(void **state)
{
    (void)state;
    simdev_stream_t a;
    static struct host_fail failing = {.code = -42};
    static atomic_int after = 0;
    atomic_init(&failing.calls, 0);
    assert_int_equal(simdev_stream_create(&a), 0);

    assert_int_equal(simdev_launch_host_func(a, fail_host_fn, &failing), 0);
    ts_launch_count(a, &after);
    assert_int_equal(simdev_stream_sync(a), -42); /* 0: a host callback's status was dropped */
    assert_int_equal(atomic_load(&failing.calls), 1);
    assert_int_equal(atomic_load(&after), 0); /* 1: work after the failed callback ran */

    ts_launch_count(a, &after);
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(atomic_load(&after), 1);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

/*
 * A positive return is outside the callback contract; device.h reports it as
 * PTO_RUNTIME_ERR_INTERNAL. Passing the positive value through would make
 * `if (simdev_stream_sync(s) < 0)` treat a failed stream, whose later work
 * was skipped, as success.
 */
static void a_host_func_returning_a_positive_value_fails_the_stream_with_internal(
    void **state)
{
    (void)state;
    simdev_stream_t a;
    static struct host_fail positive = {.code = 1};
    static atomic_int after = 0;
    atomic_init(&positive.calls, 0);
    assert_int_equal(simdev_stream_create(&a), 0);

    assert_int_equal(simdev_launch_host_func(a, fail_host_fn, &positive), 0);
    ts_launch_count(a, &after);
    int status = simdev_stream_sync(a);
    int ran_after = atomic_load(&after);
    assert_int_equal(atomic_load(&positive.calls), 1);
    assert_int_equal(ran_after, 0); /* 1: a positive return did not fail the stream */
    assert_int_equal(status, PTO_RUNTIME_ERR_INTERNAL); /* 1: a positive value passed through as a "status" */
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void an_aicore_function_failing_on_one_core_fails_the_launch_with_its_code(void **state)
{
    (void)state;
    simdev_stream_t a;
    static atomic_int calls = 0, after = 0;
    assert_int_equal(simdev_stream_create(&a), 0);

    struct fail_arg arg = {-11, 1, &calls}; /* core 1, the first AIV, fails */
    assert_int_equal(simdev_launch_aicore(a, fail_aicore_fn, &arg, sizeof arg), 0);
    ts_launch_count(a, &after);
    assert_int_equal(simdev_stream_sync(a), -11); /* 0: one core's failure was lost */
    assert_int_equal(atomic_load(&calls), 3);      /* the launch still ran on all 3 cores */
    assert_int_equal(atomic_load(&after), 0);

    /* clean again: the same function with no failing core */
    atomic_store(&calls, 0);
    arg.who = 99;
    assert_int_equal(simdev_launch_aicore(a, fail_aicore_fn, &arg, sizeof arg), 0);
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(atomic_load(&calls), 3);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void an_aicpu_launch_fails_with_the_status_of_its_failing_thread(void **state)
{
    (void)state;
    simdev_stream_t a;
    static atomic_int calls = 0, after = 0;
    assert_int_equal(simdev_stream_create(&a), 0);

    struct fail_arg arg = {-13, 1, &calls}; /* thread 1 of 2 fails, thread 0 succeeds */
    assert_int_equal(simdev_launch_aicpu(a, fail_aicpu_fn, 2, &arg, sizeof arg), 0);
    ts_launch_count(a, &after);
    assert_int_equal(simdev_stream_sync(a), -13); /* 0: only thread 0's status was kept */
    assert_int_equal(atomic_load(&calls), 2);
    assert_int_equal(atomic_load(&after), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

static void device_sync_returns_the_carried_error_and_clears_it(void **state)
{
    (void)state;
    simdev_stream_t a, b;
    static atomic_int calls = 0, b_ran = 0;
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_stream_create(&b), 0);

    launch_fail(a, -7, &calls);
    ts_launch_count(b, &b_ran);
    assert_int_equal(simdev_device_sync(), -7); /* 0: device sync ignored stream errors */
    assert_int_equal(atomic_load(&b_ran), 1);
    assert_int_equal(simdev_stream_query(a), 0); /* -7: device sync did not clear it */
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(simdev_device_sync(), 0);

    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}


static void a_wait_on_a_stream_carrying_an_error_still_waits_and_a_handoff_record_ends_it(
    void **state)
{
    (void)state;
    simdev_stream_t a, b;
    simdev_event_t e, f;
    static struct ts_gate held, b_ran;
    static atomic_int calls = 0;
    ts_gate_init(&held);
    ts_gate_init(&b_ran);
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_stream_create(&b), 0);
    assert_int_equal(simdev_event_create(&e), 0);
    assert_int_equal(simdev_event_create(&f), 0);

    ts_launch_gate(a, &held);
    assert_int_equal(simdev_event_record(e, a), 0);
    launch_fail(b, -7, &calls);                                /* b carries -7 */
    assert_int_equal(simdev_stream_wait_event(b, e), 0);       /* still waits for a */
    assert_int_equal(simdev_event_record_handoff(f, b), 0);    /* f takes -7; b clean */
    ts_launch_gate(b, &b_ran);                                 /* runs: b is clean */

    /* a is held: b's work behind its wait must not run, however long we look */
    int ran_early = ts_gate_wait_arrivals_for(&b_ran, 1, TS_GRACE_MS);
    int f_early = simdev_event_query(f);
    ts_gate_open(&held);
    int ran_after = ts_gate_wait_arrivals_for(&b_ran, 1, TS_DEADLOCK_GUARD_MS);
    ts_gate_open(&b_ran);

    assert_int_equal(ran_early, 0); /* 1: the wait on an erroring stream did not wait */
    assert_int_equal(f_early, PTO_RUNTIME_ERR_NOT_READY); /* else: f completed before e */
    assert_int_equal(ran_after, 1); /* 0: the op after the hand-off was skipped */
    assert_int_equal(simdev_event_sync(f), -7); /* the hand-off gave f the stream's error */
    assert_int_equal(simdev_stream_sync(b), 0); /* -7: the stream kept it after the hand-off */
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(atomic_load(&calls), 1);

    assert_int_equal(simdev_event_destroy(e), 0);
    assert_int_equal(simdev_event_destroy(f), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    ts_gate_destroy(&held);
    ts_gate_destroy(&b_ran);
}

static void an_execution_fault_fails_the_nth_queued_op_as_it_runs(void **state)
{
    (void)state;
    simdev_stream_t a;
    simdev_event_t e;
    static atomic_int ran = 0;
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_event_create(&e), 0);
    /* Only kinds that queue work can fail as they execute. */
    assert_int_equal(simdev_fault_inject_exec(0, SIMDEV_OP_MALLOC, 1, -5),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_fault_inject_exec(0, SIMDEV_OP_LAUNCH, 0, -5),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_fault_inject_exec(0, SIMDEV_OP_LAUNCH, 1, 5),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);

    /* The second launch from now fails as it runs: the enqueue succeeds. */
    assert_int_equal(simdev_fault_inject_exec(0, SIMDEV_OP_LAUNCH, 2, -5), 0);
    ts_launch_count(a, &ran);
    ts_launch_count(a, &ran);
    ts_launch_count(a, &ran);
    assert_int_equal(simdev_event_record(e, a), 0);
    assert_int_equal(simdev_event_sync(e), -5); /* 0: the armed op ran or its error was lost */
    assert_int_equal(simdev_stream_sync(a), -5);
    assert_int_equal(atomic_load(&ran), 1); /* 2: the faulted op ran; 3: also the skipped one */

    /* Disarmed after firing: the next launches run. */
    ts_launch_count(a, &ran);
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(atomic_load(&ran), 2);

    /* A faulted record completes carrying the code; simdev_fault_clear disarms. */
    assert_int_equal(simdev_fault_inject_exec(0, SIMDEV_OP_RECORD, 1, -6), 0);
    assert_int_equal(simdev_event_record(e, a), 0);
    assert_int_equal(simdev_event_sync(e), -6);
    assert_int_equal(simdev_stream_sync(a), -6);
    assert_int_equal(simdev_fault_inject_exec(0, SIMDEV_OP_RECORD, 1, -6), 0);
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_int_equal(simdev_event_record(e, a), 0);
    assert_int_equal(simdev_event_sync(e), 0); /* -6: clear left the execution fault armed */

    assert_int_equal(simdev_event_destroy(e), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(a_failed_op_skips_later_ops_and_reaches_waiters_but_not_bystanders),
        SIMPLER_TEST(an_event_recorded_before_the_failure_stays_clean),
        SIMPLER_TEST(a_failing_host_func_fails_its_stream_with_its_code),
        SIMPLER_TEST(a_host_func_returning_a_positive_value_fails_the_stream_with_internal),
        SIMPLER_TEST(an_aicore_function_failing_on_one_core_fails_the_launch_with_its_code),
        SIMPLER_TEST(an_aicpu_launch_fails_with_the_status_of_its_failing_thread),
        SIMPLER_TEST(device_sync_returns_the_carried_error_and_clears_it),
        SIMPLER_TEST(a_wait_on_a_stream_carrying_an_error_still_waits_and_a_handoff_record_ends_it),
        SIMPLER_TEST(an_execution_fault_fails_the_nth_queued_op_as_it_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
