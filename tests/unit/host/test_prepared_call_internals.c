/*
 * test_prepared_call_internals.c — what a prepared call holds, read from
 * the inside: its bytes stay as prepare wrote them whatever is prepared,
 * refused or submitted after it; its snapshot is the caller's args and
 * config as they were; its counted reference on the callable; the release
 * of a stranded submission by simpler_release_call; and a host allocation
 * failure of a kernel-mode prepare.
 *
 * The public half is scenario/test_prepared_call.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "common/host_alloc.h"
#include "host/context.h"
#include "host/prepared_call.h"
#include "host/residency.h"
#include "km_support.h"

#define INJECTED PTO_RUNTIME_ERR_TIMEOUT /* a code none of these calls makes by itself */

static struct simpler_context_info info_of(struct simpler_context *ctx)
{
    struct simpler_context_info info;
    assert_int_equal(simpler_get_context_info(ctx, &info), 0);
    return info;
}

/* The call's content: everything but the count of its unfinalized
 * submissions, which is theirs, and its links among the context's live
 * calls, which change as other calls come and go. */
static void content_of(const struct simpler_prepared_call *call, struct simpler_prepared_call *out)
{
    memcpy(out, call, sizeof *out);
    out->submissions = 0;
    out->live_prev = out->live_next = NULL;
}

static void assert_content_unchanged(const struct simpler_prepared_call *call,
                                     const struct simpler_prepared_call *snapshot,
                                     const char *after)
{
    struct simpler_prepared_call now;
    content_of(call, &now);
    if (memcmp(&now, snapshot, sizeof now))
        fail_msg("the prepared call's bytes changed after %s", after);
}

/* Prepare A, then B with other tensors, scalars and config, then B's
 * refused variants, then submissions of both: A's bytes are as prepare
 * wrote them, and the callable counts exactly the live calls. */
static void test_a_later_prepare_leaves_an_earlier_call_byte_for_byte(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(4);
    struct sp_callable *callable = ctx->callables[PM_CALLABLE];
    struct pm_run ra, rb;
    pm_run_init(&ra, 2.0f, 1.0f, 0, 0, 10);
    pm_run_init(&rb, -1.5f, 4.0f, 0, 0, 20);
    struct simpler_run_config config_a = ts_small_run_config();
    config_a.task_window[0] = 32;
    config_a.sched_timeout_ms = 1234;
    struct simpler_prepared_call *a = NULL, *b = NULL, *bad = NULL;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &ra.args, &config_a, &a), 0);
    struct simpler_prepared_call snapshot;
    content_of(a, &snapshot);
    /* The snapshot is the caller's args and config as they were. */
    assert_int_equal(a->args.tensor_count, 3);
    assert_int_equal(a->args.scalar_count, PM_SCALARS);
    assert_memory_equal(a->args.tensors, ra.tensors, sizeof ra.tensors);
    assert_memory_equal(a->args.scalars, ra.scalars, sizeof ra.scalars);
    assert_memory_equal(&a->public_config, &config_a, sizeof config_a);
    assert_int_equal(a->config.sched_timeout_ms, 1234); /* the runtime's form of the same */
    assert_int_equal(a->payload.kind, SP_PAYLOAD_STAGED_ARGS);
    assert_int_equal(a->callable, callable);
    assert_int_equal(callable->prepared_refs, 1);

    struct simpler_run_config config_b = ts_small_run_config();
    config_b.task_window[0] = 16;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &rb.args, &config_b, &b), 0);
    assert_content_unchanged(a, &snapshot, "B's prepare");
    assert_int_equal(callable->prepared_refs, 2);
    /* B with no config: the callable's own, snapshotted. */
    struct simpler_prepared_call *c = NULL;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &rb.args, NULL, &c), 0);
    assert_memory_equal(&c->public_config, &callable->config, sizeof callable->config);
    assert_int_equal(simpler_release_call(ctx, c), 0);
    assert_int_equal(callable->prepared_refs, 2); /* 3: release kept the reference */

    struct simpler_run_config big = config_b;
    big.task_window[0] = 1u << 20;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &rb.args, &big, &bad),
                     PTO_RUNTIME_ERR_CAPACITY_EXCEEDED);
    struct simpler_args wrong = rb.args;
    wrong.scalar_count = 2;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &wrong, NULL, &bad),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    sp_host_fault_inject(1);
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &rb.args, NULL, &bad),
                     PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
    sp_host_fault_inject(0);
    assert_null(bad);
    assert_content_unchanged(a, &snapshot, "B's refused prepares");
    assert_int_equal(callable->prepared_refs, 2); /* more: a refused prepare took a reference */

    simpler_run_t runs[3];
    assert_int_equal(simpler_submit_call(ctx, a, &runs[0]), 0);
    assert_int_equal(simpler_submit_call(ctx, b, &runs[1]), 0);
    assert_int_equal(simpler_submit_call(ctx, a, &runs[2]), 0);
    assert_int_equal(a->submissions, 2); /* the submissions' count, not the call's content */
    assert_int_equal(callable->runs, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(simpler_wait_run(ctx, runs[i]), 0);
        assert_int_equal(simpler_finalize_run(ctx, runs[i]), 0);
    }
    pm_run_check(&ra);
    pm_run_check(&rb);
    assert_content_unchanged(a, &snapshot, "three submissions");
    assert_int_equal(a->submissions, 0);
    assert_int_equal(callable->runs, 0);
    assert_int_equal(simpler_release_call(ctx, a), 0);
    assert_int_equal(callable->prepared_refs, 1);
    assert_int_equal(simpler_release_call(ctx, b), 0);
    assert_int_equal(callable->prepared_refs, 0);
    pm_run_free(&ra);
    pm_run_free(&rb);
    pm_close(ctx);
}

/* Kernel mode: the packet is encoded once, at prepare, and launches only
 * read it. */
static void test_a_kernel_call_keeps_its_packet_across_launches(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 1024, 1.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, NULL, &call), 0);
    assert_int_equal(call->payload.kind, SP_PAYLOAD_TMR_PACKET);
    assert_true(call->payload.bytes > 32); /* the 32-byte header and the args */
    struct simpler_prepared_call snapshot;
    content_of(call, &snapshot);
    for (int i = 0; i < 10; i++)
        assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, s), 0);
    /* An unprepared launch between: its own single-use call, on its stack. */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold_rounds(&b, 1.0f, 2.0f, 0.5f, 11));
    assert_content_unchanged(call, &snapshot, "eleven launches");
    assert_int_equal(call->submissions, 0); /* kernel launches hold nothing of the call */
    assert_int_equal(simpler_release_call(ctx, call), 0);
    km_closing(ctx, s, &b);
}

/* A host allocation failure of a kernel-mode prepare: refused whole, the
 * counters as before, and the retry works. */
static void test_a_kernel_prepare_without_host_memory_changes_nothing(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 1024, 1.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    uint64_t before = sp_host_alloc_count();
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, NULL, &call), 0);
    assert_int_equal(sp_host_alloc_count() - before, 1); /* more: a sweep point is missing here */
    assert_int_equal(simpler_release_call(ctx, call), 0);
    struct simpler_context_info clean = info_of(ctx);
    sp_host_fault_inject(1);
    call = (struct simpler_prepared_call *)&call;
    assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, NULL, &call),
                     PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
    sp_host_fault_inject(0);
    assert_null(call);
    struct simpler_context_info failed = info_of(ctx);
    assert_int_equal(failed.host_preparations, clean.host_preparations);
    assert_int_equal(failed.packets_encoded, clean.packets_encoded);
    assert_int_equal(failed.prepared_calls, 0);
    assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, NULL, &call), 0); /* the retry */
    assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b, 1.0f, 2.0f, 0.5f, 1.0f));
    assert_int_equal(simpler_release_call(ctx, call), 0);
    km_closing(ctx, s, &b);
}

/* A submission whose finalize failed on a device operation is stranded:
 * releasing its call releases it (as unregister and finalize_device do),
 * counted, with nothing more delivered and every byte of its staging freed. */
static void test_release_call_releases_a_stranded_submission(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(2);
    size_t idle = simpler_committed_device_memory(ctx);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 0.5f, 0, 0, 1);
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &r.args, NULL, &call), 0);
    simpler_run_t run;
    assert_int_equal(simpler_submit_call(ctx, call, &run), 0);
    assert_int_equal(simpler_wait_run(ctx, run), 0);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_FREE, 1, INJECTED), 0);
    assert_int_equal(simpler_finalize_run(ctx, run), INJECTED);
    assert_int_equal(simdev_fault_clear(0), 0);
    pm_run_check(&r); /* the outputs came back before the free failed */
    struct simpler_context_info stranded = info_of(ctx);
    assert_int_equal(stranded.unfinalized_runs, 1);
    assert_int_equal(stranded.stranded_runs, 1); /* 0: the failed finalize did not mark it */
    assert_true(simpler_committed_device_memory(ctx) > idle); /* the staging left */
    assert_int_equal(simpler_release_call(ctx, call), 0); /* INVALID_STATE: stranded counts as held */
    struct simpler_context_info released = info_of(ctx);
    assert_int_equal(released.unfinalized_runs, 0);
    assert_int_equal(released.stranded_runs_released, stranded.stranded_runs_released + 1);
    assert_int_equal(released.prepared_calls, 0);
    assert_int_equal(simpler_committed_device_memory(ctx), idle); /* more: staging leaked */
    assert_int_equal(simpler_finalize_run(ctx, run), PTO_RUNTIME_ERR_INVALID_STATE); /* gone */
    assert_int_equal(ctx->callables[PM_CALLABLE]->runs, 0);
    pm_run_free(&r);
    pm_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_later_prepare_leaves_an_earlier_call_byte_for_byte),
        cmocka_unit_test(test_a_kernel_call_keeps_its_packet_across_launches),
        cmocka_unit_test(test_a_kernel_prepare_without_host_memory_changes_nothing),
        cmocka_unit_test(test_release_call_releases_a_stranded_submission),
    };
    return cmocka_run_group_tests(tests, NULL, ts_device_teardown);
}
