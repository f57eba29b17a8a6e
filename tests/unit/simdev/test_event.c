/*
 * test_event.c — events: record, cross-stream wait, query, synchronize.
 *
 * Owns: the ordering events give between streams and the completion state
 * they report. Error propagation through events lives in
 * test_error_chain.c.
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

struct log_arg {
    struct ts_log *log;
    int tag;
};

/* AICPU function (one thread): appends its tag to the log. */
static int log_tag_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    struct log_arg arg;
    if (args_size != sizeof arg)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&arg, args, sizeof arg);
    ts_log_append(arg.log, arg.tag);
    return 0;
}

static void launch_log(simdev_stream_t stream, struct ts_log *log, int tag)
{
    struct log_arg arg = {log, tag};
    assert_int_equal(simdev_launch_aicpu(stream, log_tag_fn, 1, &arg, sizeof arg), 0);
}

/* A gate that is open from the start: passing it only counts an arrival,
 * so the test can wait (bounded) until some device work has run. */
static void probe_init(struct ts_gate *probe)
{
    ts_gate_init(probe);
    ts_gate_open(probe);
}

static void wait_event_orders_work_on_other_streams_after_the_record(void **state)
{
    (void)state;
    enum { A_OP = 1, B_OP = 2, C_OP = 3 };
    static struct ts_gate gate, waiters_ran;
    static struct ts_log log;
    simdev_stream_t a, b, c;
    simdev_event_t done_a;
    ts_gate_init(&gate);
    probe_init(&waiters_ran);
    ts_log_init(&log, 8);
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_stream_create(&b), 0);
    assert_int_equal(simdev_stream_create(&c), 0);
    assert_int_equal(simdev_event_create(&done_a), 0);

    ts_launch_gate(a, &gate);
    launch_log(a, &log, A_OP);
    assert_int_equal(simdev_event_record(done_a, a), 0);
    /* two streams wait on the same record */
    assert_int_equal(simdev_stream_wait_event(b, done_a), 0);
    launch_log(b, &log, B_OP);
    ts_launch_gate(b, &waiters_ran);
    assert_int_equal(simdev_stream_wait_event(c, done_a), 0);
    launch_log(c, &log, C_OP);
    ts_launch_gate(c, &waiters_ran);

    int started = ts_gate_wait_arrivals_for(&gate, 1, TS_DEADLOCK_GUARD_MS);
    /* A is held in the gate: nothing behind the waits may run, however long we look */
    int ran_while_blocked = ts_gate_wait_arrivals_for(&waiters_ran, 1, TS_GRACE_MS);
    int b_query = simdev_stream_query(b);
    int c_query = simdev_stream_query(c);
    int event_query = simdev_event_query(done_a);
    int logged_while_blocked = ts_log_count(&log);
    ts_gate_open(&gate);
    assert_true(started);
    assert_int_equal(ran_while_blocked, 0); /* 1: a waiting stream ran past its wait */
    assert_int_equal(b_query, PTO_RUNTIME_ERR_NOT_READY); /* 0: B ran past its wait */
    assert_int_equal(c_query, PTO_RUNTIME_ERR_NOT_READY);
    assert_int_equal(event_query, PTO_RUNTIME_ERR_NOT_READY); /* 0: record completed early */
    assert_int_equal(logged_while_blocked, 0); /* 1+: a waiting stream did not wait */

    /* syncing B alone implies A reached its record */
    assert_int_equal(simdev_stream_sync(b), 0);
    assert_int_equal(simdev_stream_sync(c), 0);
    assert_int_equal(ts_log_count(&log), 3);
    assert_int_equal(log.entries[0], A_OP); /* B_OP or C_OP first: the wait was ignored */
    assert_int_equal(simdev_event_query(done_a), 0);
    assert_int_equal(simdev_stream_sync(a), 0);

    assert_int_equal(simdev_event_destroy(done_a), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    assert_int_equal(simdev_stream_destroy(c), 0);
    ts_log_destroy(&log);
    ts_gate_destroy(&gate);
    ts_gate_destroy(&waiters_ran);
}

static void event_query_is_not_ready_until_the_record_completes_then_zero(void **state)
{
    (void)state;
    static struct ts_gate gate;
    simdev_stream_t a;
    simdev_event_t event;
    ts_gate_init(&gate);
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_event_create(&event), 0);

    assert_int_equal(simdev_event_query(event), 0); /* never recorded: complete */
    ts_launch_gate(a, &gate);
    assert_int_equal(simdev_event_record(event, a), 0);
    int query_pending = simdev_event_query(event);
    ts_gate_open(&gate);
    assert_int_equal(query_pending, PTO_RUNTIME_ERR_NOT_READY); /* 0: record ran ahead of the stream */

    assert_int_equal(simdev_event_sync(event), 0);
    assert_int_equal(simdev_event_query(event), 0);
    assert_int_equal(simdev_event_query(event), 0); /* a query does not consume completion */

    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(simdev_event_destroy(event), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    ts_gate_destroy(&gate);
}

static void event_sync_waits_for_the_work_before_the_record_and_no_more(void **state)
{
    (void)state;
    static struct ts_gate first, second;
    static atomic_int before_record = 0, after_record = 0;
    simdev_stream_t a;
    simdev_event_t event;
    pthread_t opener;
    struct ts_rescue rescue;
    ts_gate_init(&first);
    ts_gate_init(&second);
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_event_create(&event), 0);

    ts_launch_gate(a, &first);
    ts_launch_count(a, &before_record);
    assert_int_equal(simdev_event_record(event, a), 0);
    ts_launch_gate(a, &second); /* stays closed until event_sync returned */
    ts_launch_count(a, &after_record);

    /* `first` opens from another thread while this one is in event_sync */
    assert_int_equal(pthread_create(&opener, NULL, ts_gate_opener_main, &first), 0);
    ts_rescue_start(&rescue, &second, TS_DEADLOCK_GUARD_MS);
    int sync_status = simdev_event_sync(event);
    int before_at_return = atomic_load(&before_record);
    int after_at_return = atomic_load(&after_record);
    int stream_at_return = simdev_stream_query(a);
    int rescued = ts_rescue_finish(&rescue);
    ts_gate_open(&second);
    assert_int_equal(pthread_join(opener, NULL), 0);

    assert_int_equal(rescued, 0); /* 1: event_sync waited for work after the record */
    assert_int_equal(sync_status, 0);
    assert_int_equal(before_at_return, 1); /* 0: event_sync returned before the record point */
    assert_int_equal(after_at_return, 0);
    assert_int_equal(stream_at_return, PTO_RUNTIME_ERR_NOT_READY);

    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(atomic_load(&after_record), 1);
    assert_int_equal(simdev_event_destroy(event), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    ts_gate_destroy(&first);
    ts_gate_destroy(&second);
}

static void waiting_on_a_never_recorded_event_is_a_no_op(void **state)
{
    (void)state;
    static struct ts_gate blocker, b_ran;
    simdev_stream_t a, b;
    simdev_event_t never;
    ts_gate_init(&blocker);
    probe_init(&b_ran);
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_stream_create(&b), 0);
    assert_int_equal(simdev_event_create(&never), 0);
    /* unrelated work is blocked on another stream: the wait must not tie B to it */
    ts_launch_gate(a, &blocker);

    assert_int_equal(simdev_stream_wait_event(b, never), 0);
    ts_launch_gate(b, &b_ran);
    int b_passed = ts_gate_wait_arrivals_for(&b_ran, 1, TS_DEADLOCK_GUARD_MS);
    int event_sync_status = b_passed ? simdev_event_sync(never) : -1;
    int event_query_status = simdev_event_query(never);
    ts_gate_open(&blocker);

    assert_true(b_passed); /* false: B waits for a record that will never happen */
    assert_int_equal(event_sync_status, 0);
    assert_int_equal(event_query_status, 0);

    assert_int_equal(simdev_stream_sync(b), 0);
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(simdev_event_destroy(never), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    ts_gate_destroy(&blocker);
    ts_gate_destroy(&b_ran);
}

/*
 * Reading (CUDA's cudaStreamWaitEvent): a wait binds to the record that is
 * the event's most recent one when the wait is enqueued; a later re-record
 * does not move an earlier wait, but does become what query/sync report.
 */
static void a_wait_binds_to_the_record_current_when_it_was_enqueued(void **state)
{
    (void)state;
    static struct ts_gate gate1, gate2, b_ran;
    simdev_stream_t a1, a2, b;
    simdev_event_t event;
    ts_gate_init(&gate1);
    ts_gate_init(&gate2);
    probe_init(&b_ran);
    assert_int_equal(simdev_stream_create(&a1), 0);
    assert_int_equal(simdev_stream_create(&a2), 0);
    assert_int_equal(simdev_stream_create(&b), 0);
    assert_int_equal(simdev_event_create(&event), 0);

    ts_launch_gate(a1, &gate1);
    assert_int_equal(simdev_event_record(event, a1), 0); /* record #1 */
    assert_int_equal(simdev_stream_wait_event(b, event), 0);
    ts_launch_gate(b, &b_ran);
    ts_launch_gate(a2, &gate2);
    assert_int_equal(simdev_event_record(event, a2), 0); /* record #2 */

    int query_both_pending = simdev_event_query(event);
    int b_ran_early = ts_gate_wait_arrivals_for(&b_ran, 1, TS_GRACE_MS);
    ts_gate_open(&gate1);
    /* #1 completes; B must run while #2 is still blocked behind gate2 */
    int b_ran_after_first = ts_gate_wait_arrivals_for(&b_ran, 1, TS_DEADLOCK_GUARD_MS);
    int query_second_pending = simdev_event_query(event);
    ts_gate_open(&gate2);

    assert_int_equal(query_both_pending, PTO_RUNTIME_ERR_NOT_READY);
    assert_int_equal(b_ran_early, 0);        /* 1: B did not wait for record #1 */
    assert_true(b_ran_after_first);          /* false: the re-record moved B's earlier wait */
    assert_int_equal(query_second_pending, PTO_RUNTIME_ERR_NOT_READY); /* 0: query reports a stale record */

    assert_int_equal(simdev_event_sync(event), 0);
    assert_int_equal(simdev_event_query(event), 0);
    assert_int_equal(simdev_stream_sync(b), 0);
    assert_int_equal(simdev_stream_sync(a1), 0);
    assert_int_equal(simdev_stream_sync(a2), 0);
    assert_int_equal(simdev_event_destroy(event), 0);
    assert_int_equal(simdev_stream_destroy(a1), 0);
    assert_int_equal(simdev_stream_destroy(a2), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    ts_gate_destroy(&gate1);
    ts_gate_destroy(&gate2);
    ts_gate_destroy(&b_ran);
}

static void re_recording_a_completed_event_makes_it_pending_again(void **state)
{
    (void)state;
    static struct ts_gate gate;
    simdev_stream_t a;
    simdev_event_t event;
    ts_gate_init(&gate);
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_event_create(&event), 0);

    assert_int_equal(simdev_event_record(event, a), 0);
    assert_int_equal(simdev_event_sync(event), 0);
    assert_int_equal(simdev_event_query(event), 0);

    ts_launch_gate(a, &gate);
    assert_int_equal(simdev_event_record(event, a), 0);
    int query_pending = simdev_event_query(event);
    ts_gate_open(&gate);
    assert_int_equal(query_pending, PTO_RUNTIME_ERR_NOT_READY); /* 0: the old completion stuck */
    assert_int_equal(simdev_event_sync(event), 0);
    assert_int_equal(simdev_event_query(event), 0);

    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(simdev_event_destroy(event), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    ts_gate_destroy(&gate);
}

static void destroying_an_event_keeps_pending_waits_on_it(void **state)
{
    (void)state;
    enum { A_OP = 1, B_OP = 2 };
    static struct ts_gate gate, b_ran;
    static struct ts_log log;
    simdev_stream_t a, b;
    simdev_event_t event;
    ts_gate_init(&gate);
    probe_init(&b_ran);
    ts_log_init(&log, 4);
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_stream_create(&b), 0);
    assert_int_equal(simdev_event_create(&event), 0);

    ts_launch_gate(a, &gate);
    launch_log(a, &log, A_OP);
    assert_int_equal(simdev_event_record(event, a), 0);
    assert_int_equal(simdev_stream_wait_event(b, event), 0);
    launch_log(b, &log, B_OP);
    ts_launch_gate(b, &b_ran);
    assert_int_equal(simdev_event_destroy(event), 0);
    int b_ran_early = ts_gate_wait_arrivals_for(&b_ran, 1, TS_GRACE_MS);
    int b_query = simdev_stream_query(b);
    ts_gate_open(&gate);
    assert_int_equal(b_ran_early, 0); /* 1: the destroy released B's wait */
    assert_int_equal(b_query, PTO_RUNTIME_ERR_NOT_READY);

    assert_int_equal(simdev_stream_sync(b), 0);
    assert_int_equal(ts_log_count(&log), 2);
    assert_int_equal(log.entries[0], A_OP); /* B_OP: B stopped waiting when the event died */
    assert_int_equal(log.entries[1], B_OP);
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    ts_log_destroy(&log);
    ts_gate_destroy(&gate);
    ts_gate_destroy(&b_ran);
}

static void event_calls_reject_null_handles(void **state)
{
    (void)state;
    simdev_stream_t a;
    simdev_event_t event;
    const int bad = PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_event_create(&event), 0);

    assert_int_equal(simdev_event_create(NULL), bad);
    assert_int_equal(simdev_event_destroy(NULL), bad);
    assert_int_equal(simdev_event_record(NULL, a), bad);
    assert_int_equal(simdev_event_record(event, NULL), bad);
    assert_int_equal(simdev_stream_wait_event(NULL, event), bad);
    assert_int_equal(simdev_stream_wait_event(a, NULL), bad);
    assert_int_equal(simdev_event_query(NULL), bad);
    assert_int_equal(simdev_event_sync(NULL), bad);

    uint64_t records = 99, waits = 99;
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_RECORD, &records), 0);
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_WAIT, &waits), 0);
    assert_int_equal(records, 0); /* 1+: a rejected record was performed */
    assert_int_equal(waits, 0);
    assert_int_equal(simdev_event_destroy(event), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(wait_event_orders_work_on_other_streams_after_the_record),
        SIMPLER_TEST(event_query_is_not_ready_until_the_record_completes_then_zero),
        SIMPLER_TEST(event_sync_waits_for_the_work_before_the_record_and_no_more),
        SIMPLER_TEST(waiting_on_a_never_recorded_event_is_a_no_op),
        SIMPLER_TEST(a_wait_binds_to_the_record_current_when_it_was_enqueued),
        SIMPLER_TEST(re_recording_a_completed_event_makes_it_pending_again),
        SIMPLER_TEST(destroying_an_event_keeps_pending_waits_on_it),
        SIMPLER_TEST(event_calls_reject_null_handles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
