/*
 * test_program_faults.c — every device operation and host allocation of
 * simpler_init, register, prepare, launch, wait, finalize and
 * finalize_device, and of a prepared call's prepare and submit, failed in
 * turn.
 *
 * For each phase a clean pass first counts the operations of each kind the
 * phase performs; then, for every kind and every n up to that count, a
 * fresh fixture arms "the nth attempt of this kind fails", runs the phase
 * and requires: the injected code comes back, nothing the failed call
 * created is still held (streams, events, device memory, slots, staging),
 * and a retry of the same call succeeds with correct results.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/host_alloc.h"
#include "host/context.h"
#include "host/residency.h"
#include "host/run_args.h"
#include "host/run_slot.h"
#include "pm_support.h"

#define INJECTED PTO_RUNTIME_ERR_TIMEOUT /* a code none of these calls makes by itself */

struct fx {
    struct simpler_context *ctx;
    struct simpler_config cfg;
    void *image;
    size_t image_bytes;
    struct pm_run run;
    simpler_run_t handle;
    struct simpler_prepared_call *call; /* the submit_call phases' */
    size_t committed_before;
};

/* What a failed call may not leave behind. */
struct ledger {
    uint64_t ops[SIMDEV_OP_KIND_COUNT];
    uint64_t in_use;
    size_t committed;
    struct sp_counters counters;
};

static void ledger_take(struct fx *f, struct ledger *l)
{
    memset(l, 0, sizeof *l);
    for (int k = 0; k < SIMDEV_OP_KIND_COUNT; k++)
        assert_int_equal(simdev_op_count(0, (enum simdev_op_kind)k, &l->ops[k]), 0);
    struct simdev_mem_info info;
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    l->in_use = info.in_use;
    l->committed = simpler_committed_device_memory(f->ctx);
    if (f->ctx)
        sp_test_counters(f->ctx, &l->counters);
}

static int64_t delta(const struct ledger *a, const struct ledger *b, enum simdev_op_kind k)
{
    return (int64_t)(b->ops[k] - a->ops[k]);
}

/* Everything created during the failed call was destroyed again. */
static void assert_nothing_held(const char *where, const struct ledger *a, const struct ledger *b)
{
    if (delta(a, b, SIMDEV_OP_STREAM_CREATE) != delta(a, b, SIMDEV_OP_STREAM_DESTROY) ||
        delta(a, b, SIMDEV_OP_EVENT_CREATE) != delta(a, b, SIMDEV_OP_EVENT_DESTROY) ||
        delta(a, b, SIMDEV_OP_MALLOC) != delta(a, b, SIMDEV_OP_FREE) || a->in_use != b->in_use ||
        a->committed != b->committed ||
        b->counters.slots_acquired - a->counters.slots_acquired !=
            b->counters.slots_released - a->counters.slots_released ||
        b->counters.staging_allocs - a->counters.staging_allocs !=
            b->counters.staging_frees - a->counters.staging_frees ||
        b->counters.callables_loaded - a->counters.callables_loaded !=
            b->counters.callables_unloaded - a->counters.callables_unloaded ||
        b->counters.prepared_calls != a->counters.prepared_calls ||
        b->counters.host_preparations != a->counters.host_preparations)
        fail_msg("%s: the failed call left resources held or counted (streams %+lld/%+lld, "
                 "events %+lld/%+lld, mallocs %+lld/%+lld, in_use %llu -> %llu, committed %zu -> "
                 "%zu, prepared calls and preparations counted)",
                 where, (long long)delta(a, b, SIMDEV_OP_STREAM_CREATE),
                 (long long)delta(a, b, SIMDEV_OP_STREAM_DESTROY),
                 (long long)delta(a, b, SIMDEV_OP_EVENT_CREATE),
                 (long long)delta(a, b, SIMDEV_OP_EVENT_DESTROY),
                 (long long)delta(a, b, SIMDEV_OP_MALLOC), (long long)delta(a, b, SIMDEV_OP_FREE),
                 (unsigned long long)a->in_use, (unsigned long long)b->in_use, a->committed,
                 b->committed);
}

/* ---------------------------------------------------------------- phases */

struct phase {
    const char *name;
    void (*setup)(struct fx *f);   /* everything before the call */
    int (*call)(struct fx *f);     /* the call under test */
    void (*finish)(struct fx *f);  /* after the call succeeded: check results, tear down */
    int partial_progress;          /* a failure may keep progress a retry builds on */
    int resets_device;             /* the call resets the device, and its op counters */
};

static void fx_device(struct fx *f)
{
    memset(f, 0, sizeof *f);
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    pm_observers_reset();
    simpler_config_default(&f->cfg);
    f->cfg.pipeline_depth = 2;
    f->cfg.run_capacity = ts_small_run_config();
    /* A launch failing after the AICPU program went out leaves schedulers
     * waiting for cores that never start: they give up after this. */
    f->cfg.run_capacity.sched_timeout_ms = 2000;
    f->image = pm_image(&f->image_bytes);
    pm_run_init(&f->run, 2.0f, 0.5f, 0, 0, 9);
}

static void fx_created(struct fx *f)
{
    fx_device(f);
    assert_int_equal(simpler_create_device_context(&f->ctx), 0);
}

static void fx_initialised(struct fx *f)
{
    fx_created(f);
    assert_int_equal(simpler_init(f->ctx, 0, &f->cfg), 0);
}

static void fx_registered(struct fx *f)
{
    fx_initialised(f);
    assert_int_equal(simpler_register_callable(f->ctx, PM_CALLABLE, f->image, f->image_bytes), 0);
    f->committed_before = simpler_committed_device_memory(f->ctx);
}

static void fx_prepared(struct fx *f)
{
    fx_registered(f);
    assert_int_equal(simpler_prepare_run(f->ctx, &f->handle, PM_CALLABLE, &f->run.args, NULL), 0);
}

static void fx_launched(struct fx *f)
{
    fx_prepared(f);
    assert_int_equal(simpler_launch_run(f->ctx, f->handle), 0);
}

static void fx_completed(struct fx *f)
{
    fx_launched(f);
    assert_int_equal(simpler_wait_run(f->ctx, f->handle), 0);
}

static void fx_call_prepared(struct fx *f)
{
    fx_registered(f);
    assert_int_equal(simpler_prepare_call(f->ctx, PM_CALLABLE, &f->run.args, NULL, &f->call), 0);
}

static void fx_teardown(struct fx *f)
{
    if (f->call)
        assert_int_equal(simpler_release_call(f->ctx, f->call), 0);
    pm_run_free(&f->run);
    simpler_callable_free(f->image);
    if (f->ctx)
        pm_close(f->ctx);
}

static int call_init(struct fx *f) { return simpler_init(f->ctx, 0, &f->cfg); }
static int call_register(struct fx *f)
{
    return simpler_register_callable(f->ctx, PM_CALLABLE, f->image, f->image_bytes);
}
static int call_prepare(struct fx *f)
{
    return simpler_prepare_run(f->ctx, &f->handle, PM_CALLABLE, &f->run.args, NULL);
}
static int call_prepare_call(struct fx *f)
{
    return simpler_prepare_call(f->ctx, PM_CALLABLE, &f->run.args, NULL, &f->call);
}
static int call_submit_call(struct fx *f) { return simpler_submit_call(f->ctx, f->call, &f->handle); }
static int call_launch(struct fx *f) { return simpler_launch_run(f->ctx, f->handle); }
static int call_wait(struct fx *f) { return simpler_wait_run(f->ctx, f->handle); }
static int call_finalize(struct fx *f) { return simpler_finalize_run(f->ctx, f->handle); }
static int call_finalize_device(struct fx *f) { return simpler_finalize_device(f->ctx); }
static int call_create(struct fx *f) { return simpler_create_device_context(&f->ctx); }

/* After init or register: a full run works, then teardown. */
static void finish_run_all(struct fx *f)
{
    if (!f->ctx->callables[PM_CALLABLE])
        assert_int_equal(call_register(f), 0);
    assert_int_equal(simpler_run(f->ctx, PM_CALLABLE, &f->run.args, NULL, NULL), 0);
    pm_run_check(&f->run);
    fx_teardown(f);
}

static void finish_from_prepared(struct fx *f)
{
    assert_int_equal(simpler_launch_run(f->ctx, f->handle), 0);
    assert_int_equal(simpler_wait_run(f->ctx, f->handle), 0);
    assert_int_equal(simpler_finalize_run(f->ctx, f->handle), 0);
    pm_run_check(&f->run);
    assert_int_equal(simpler_committed_device_memory(f->ctx), f->committed_before);
    fx_teardown(f);
}

/* After a prepared call's submit: the run completes exactly, and once it
 * is finalized the call is released with nothing left. */
static void finish_from_submitted(struct fx *f)
{
    uint64_t preparations = f->ctx->counters.host_preparations;
    assert_int_equal(simpler_wait_run(f->ctx, f->handle), 0);
    assert_int_equal(simpler_finalize_run(f->ctx, f->handle), 0);
    pm_run_check(&f->run);
    assert_int_equal(simpler_committed_device_memory(f->ctx), f->committed_before);
    assert_int_equal(f->ctx->counters.host_preparations, preparations);
    fx_teardown(f);
}

/* After a prepared call's prepare: it submits and runs exactly. */
static void finish_from_call_prepared(struct fx *f)
{
    assert_non_null(f->call);
    assert_int_equal(f->ctx->counters.prepared_calls, 1); /* 2: the failed prepare counted */
    assert_int_equal(call_submit_call(f), 0);
    finish_from_submitted(f);
}

/* After a prepared call's first submission under a host fault sweep: the
 * run completes exactly, and under host_build_graph the call kept the
 * image of the submission that succeeded: a second submission publishes
 * it (a failed attempt counted no build and kept nothing). */
static void finish_from_submitted_resubmit(struct fx *f)
{
    uint64_t hbg = ts_runtime_hbg();
    assert_int_equal(simpler_wait_run(f->ctx, f->handle), 0);
    assert_int_equal(simpler_finalize_run(f->ctx, f->handle), 0);
    pm_run_check(&f->run);
    /* 2: a failed attempt counted its build */
    assert_int_equal(f->ctx->counters.host_builds, hbg);
    for (uint64_t i = 0; i < PM_N; i++)
        f->run.acc[i] = 1.0f; /* acc is INOUT: the second run adds to it again */
    assert_int_equal(call_submit_call(f), 0);
    assert_int_equal(simpler_wait_run(f->ctx, f->handle), 0);
    assert_int_equal(simpler_finalize_run(f->ctx, f->handle), 0);
    pm_run_check(&f->run);
    assert_int_equal(f->ctx->counters.host_builds, hbg); /* the retry's image was not kept */
    assert_int_equal(f->ctx->counters.host_builds_skipped, hbg);
    assert_int_equal(simpler_committed_device_memory(f->ctx), f->committed_before);
    fx_teardown(f);
}

static void finish_from_launched(struct fx *f)
{
    assert_int_equal(simpler_wait_run(f->ctx, f->handle), 0);
    assert_int_equal(simpler_finalize_run(f->ctx, f->handle), 0);
    pm_run_check(&f->run);
    assert_int_equal(simpler_committed_device_memory(f->ctx), f->committed_before);
    fx_teardown(f);
}

static void finish_from_completed(struct fx *f)
{
    assert_int_equal(simpler_finalize_run(f->ctx, f->handle), 0);
    pm_run_check(&f->run);
    fx_teardown(f);
}

static void finish_from_finalized(struct fx *f)
{
    pm_run_check(&f->run); /* delivered by the retried finalize */
    assert_int_equal(simpler_committed_device_memory(f->ctx), f->committed_before);
    fx_teardown(f);
}

static void finish_device_finalized(struct fx *f)
{
    assert_int_equal(simpler_committed_device_memory(f->ctx), 0);
    assert_int_equal(simpler_destroy_device_context(f->ctx), 0);
    f->ctx = NULL;
    fx_teardown(f);
}

static void finish_created(struct fx *f)
{
    assert_int_equal(simpler_init(f->ctx, 0, &f->cfg), 0);
    finish_run_all(f);
}

static const struct phase phases[] = {
    {"init", fx_created, call_init, finish_run_all, 0, 0},
    {"register", fx_initialised, call_register, finish_run_all, 0, 0},
    {"prepare", fx_registered, call_prepare, finish_from_prepared, 0, 0},
    {"launch", fx_prepared, call_launch, finish_from_launched, 0, 0},
    {"wait", fx_launched, call_wait, finish_from_completed, 0, 0},
    {"finalize", fx_completed, call_finalize, finish_from_finalized, 1, 0},
    {"finalize_device", fx_registered, call_finalize_device, finish_device_finalized, 1, 1},
    {"submit_call", fx_call_prepared, call_submit_call, finish_from_submitted, 0, 0},
};

/* Counts the ops of each kind a clean pass of `p` performs. */
static void count_ops(const struct phase *p, uint64_t counts[SIMDEV_OP_KIND_COUNT])
{
    struct fx f;
    p->setup(&f);
    struct ledger a, b;
    ledger_take(&f, &a);
    assert_int_equal(p->call(&f), 0);
    ledger_take(&f, &b);
    for (int k = 0; k < SIMDEV_OP_KIND_COUNT; k++)
        counts[k] = b.ops[k] - a.ops[k];
    p->finish(&f);
}

/* A call that resets the device also resets its op counters: its kinds are
 * swept until the nth attempt is past the call's last (the call succeeds,
 * and the reset disarmed the unreached fault). */
#define UNCOUNTED UINT64_MAX

static void sweep_device_faults(const struct phase *p, uint64_t *injected)
{
    uint64_t counts[SIMDEV_OP_KIND_COUNT];
    if (p->resets_device)
        for (int k = 0; k < SIMDEV_OP_KIND_COUNT; k++)
            counts[k] = UNCOUNTED;
    else
        count_ops(p, counts);
    for (int k = 0; k < SIMDEV_OP_KIND_COUNT; k++) {
        for (uint64_t nth = 1; nth <= counts[k]; nth++) {
            char where[96];
            snprintf(where, sizeof where, "%s: %s #%llu", p->name,
                     simdev_op_kind_name((enum simdev_op_kind)k), (unsigned long long)nth);
            struct fx f;
            p->setup(&f);
            struct ledger a, b;
            ledger_take(&f, &a);
            assert_int_equal(simdev_fault_inject(0, (enum simdev_op_kind)k, nth, INJECTED), 0);
            int rc = p->call(&f);
            simdev_fault_clear(0);
            if (rc == 0 && counts[k] == UNCOUNTED) {
                p->finish(&f); /* past the last attempt of this kind */
                break;
            }
            if (rc != INJECTED)
                fail_msg("%s: returned %d, not the injected %d", where, rc, INJECTED);
            if (p->call == call_submit_call && f.handle != 0)
                fail_msg("%s: a failed submit handed out run %llu", where,
                         (unsigned long long)f.handle);
            ledger_take(&f, &b);
            if (p->call == call_submit_call) /* a submission never prepares */
                assert_int_equal(b.counters.host_preparations, a.counters.host_preparations);
            if (!p->partial_progress)
                assert_nothing_held(where, &a, &b);
            rc = p->call(&f);
            if (rc != 0)
                fail_msg("%s: the retry returned %d", where, rc);
            p->finish(&f);
            (*injected)++;
        }
    }
}

static void sweep_host_faults(const struct phase *p, uint64_t *injected)
{
    struct fx f;
    p->setup(&f);
    uint64_t before = sp_host_alloc_count();
    assert_int_equal(p->call(&f), 0);
    uint64_t count = sp_host_alloc_count() - before;
    p->finish(&f);
    for (uint64_t nth = 1; nth <= count; nth++) {
        p->setup(&f);
        struct ledger a, b;
        ledger_take(&f, &a);
        sp_host_fault_inject(nth);
        int rc = p->call(&f);
        sp_host_fault_inject(0);
        if (rc != PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY)
            fail_msg("%s: host allocation #%llu: returned %d", p->name, (unsigned long long)nth,
                     rc);
        ledger_take(&f, &b);
        assert_nothing_held(p->name, &a, &b);
        if (p->call == call_prepare_call) {
            assert_null(f.call); /* *out is NULL on every failure */
            /* +1: the failed prepare counted a preparation */
            assert_int_equal(b.counters.host_preparations, a.counters.host_preparations);
        }
        assert_int_equal(p->call(&f), 0);
        p->finish(&f);
        (*injected)++;
    }
}

static void test_every_device_operation_fails_cleanly_and_retries(void **state)
{
    (void)state;
    uint64_t injected[sizeof phases / sizeof phases[0]] = {0};
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++)
        sweep_device_faults(&phases[i], &injected[i]);
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++)
        print_message("%s: %llu injected failures\n", phases[i].name, (unsigned long long)injected[i]);
    /* Each phase was really exercised: a count of 0 would mean its device
     * operations were never reached by an injected fault. */
    assert_int_equal(injected[0], 14); /* init: 5 streams, 4 events, arena + 2 x (args, result) */
    assert_int_equal(injected[1], 7);  /* register: 2 mallocs, image in, record zeroed, load, sync, record out */
    assert_int_equal(injected[2], 6);  /* prepare: 3 staging buffers, x and acc in, args in */
    /* host_build_graph's chain copies its image in too (SIMPLER_RUNTIME=hbg) */
    uint64_t image = ts_runtime_hbg();
    /* launch: the chain's 4 records, 4 waits, 2 launches, 1 memset */
    assert_int_equal(injected[3], 11 + image);
    assert_int_equal(injected[4], 2);  /* wait: the sync, the result block */
    assert_int_equal(injected[5], 5);  /* finalize: y and acc back, 3 staging frees */
    assert_int_equal(injected[6], 18); /* finalize_device: unload, 7 frees, 5 streams, 4 events */
    assert_int_equal(injected[7], 17 + image); /* submit_call: prepare's 6 staging ops, launch's 11 */
}

static void test_every_host_allocation_fails_cleanly_and_retries(void **state)
{
    (void)state;
    static const struct phase host_phases[] = {
        {"create", fx_device, call_create, finish_created, 0, 0},
        {"init", fx_created, call_init, finish_run_all, 0, 0},
        {"register", fx_initialised, call_register, finish_run_all, 0, 0},
        {"prepare_call", fx_registered, call_prepare_call, finish_from_call_prepared, 0, 0},
        /* none under TMR; host_build_graph's image bank and build scratch */
        {"launch", fx_prepared, call_launch, finish_from_launched, 0, 0},
        /* none under TMR; host_build_graph's image bank and the kept image */
        {"submit_call", fx_call_prepared, call_submit_call, finish_from_submitted_resubmit, 0, 0},
    };
    uint64_t injected = 0;
    for (size_t i = 0; i < sizeof host_phases / sizeof host_phases[0]; i++) {
        uint64_t before = injected;
        sweep_host_faults(&host_phases[i], &injected);
        print_message("%s: %llu injected host allocation failures\n", host_phases[i].name,
                      (unsigned long long)(injected - before));
    }
    /* context, slots, launcher, callable record, prepared call; under HBG
     * also init's build scratch, the launch's bank, and the submission's
     * bank and kept image (fewer: an allocation was never reached by a
     * fault; more: a new allocation no test knows about) */
    assert_int_equal(injected, 5 + 4 * (uint64_t)ts_runtime_hbg());
}

/* An init fails, and so does the cleanup of what it had created: the
 * retried init first finishes that cleanup, then succeeds, and nothing is
 * left over at the end. */
static void test_init_retry_after_a_failed_cleanup(void **state)
{
    (void)state;
    struct fx f;
    fx_created(&f);
    /* Init allocates the arena, then per slot an args and a result block:
     * the 3rd malloc (slot 0's result block) fails, and the cleanup's first
     * free (slot 0's args block) fails too. */
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_MALLOC, 3, INJECTED), 0);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_FREE, 1, PTO_RUNTIME_ERR_INTERNAL), 0);
    assert_int_equal(call_init(&f), INJECTED);
    simdev_fault_clear(0);
    assert_true(simpler_committed_device_memory(f.ctx) > 0); /* the failed cleanup left memory */
    assert_int_equal(call_init(&f), 0); /* -1003 or a crash: the leftovers were in the way */
    finish_run_all(&f); /* runs, finalizes; the teardown checks device memory is all freed */
}

/* The same, with the context destroyed instead of initialised again. */
static void test_destroy_after_a_failed_cleanup(void **state)
{
    (void)state;
    struct fx f;
    fx_created(&f);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_MALLOC, 3, INJECTED), 0);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_FREE, 1, PTO_RUNTIME_ERR_INTERNAL), 0);
    assert_int_equal(call_init(&f), INJECTED);
    simdev_fault_clear(0);
    assert_int_equal(simpler_destroy_device_context(f.ctx), 0);
    f.ctx = NULL;
    struct simdev_mem_info info;
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    assert_int_equal(info.in_use, 0); /* destroy released what the failed init left */
    fx_teardown(&f);
}

/* A failed init does not keep the device: another context can bind it. */
static void test_failed_init_releases_the_device(void **state)
{
    (void)state;
    struct fx f;
    fx_created(&f);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_MALLOC, 1, INJECTED), 0);
    assert_int_equal(call_init(&f), INJECTED);
    simdev_fault_clear(0);
    struct simpler_context *other;
    assert_int_equal(simpler_create_device_context(&other), 0);
    assert_int_equal(simpler_init(other, 0, &f.cfg), 0); /* -1003: the failed init kept the claim */
    assert_int_equal(call_init(&f), PTO_RUNTIME_ERR_INVALID_STATE); /* now `other` owns it */
    assert_int_equal(simpler_finalize_device(other), 0);
    assert_int_equal(simpler_destroy_device_context(other), 0);
    assert_int_equal(call_init(&f), 0);
    finish_run_all(&f);
}

/* simpler_run keeps no run behind: a failed launch is finalized inside it,
 * and a copy-back failing once is retried inside it. */
static void test_simpler_run_cleans_up_after_device_failures(void **state)
{
    (void)state;
    struct fx f;
    fx_registered(&f);
    struct sp_counters c;
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_LAUNCH, 1, INJECTED), 0);
    assert_int_equal(simpler_run(f.ctx, PM_CALLABLE, &f.run.args, NULL, NULL), INJECTED);
    simdev_fault_clear(0);
    sp_test_counters(f.ctx, &c);
    assert_int_equal(c.slots_acquired, 1);
    assert_int_equal(c.slots_released, 1); /* 0: the failed run kept its slot for good */
    assert_int_equal(simpler_committed_device_memory(f.ctx), f.committed_before);
    /* Copies of a run: x and acc in, the args block, (under host_build_graph
     * the image,) the result block back, then y and acc back: y's copy-back
     * fails once. */
    uint64_t y_back = 5 + (uint64_t)ts_runtime_hbg();
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_COPY, y_back, INJECTED), 0);
    assert_int_equal(simpler_run(f.ctx, PM_CALLABLE, &f.run.args, NULL, NULL), 0);
    simdev_fault_clear(0);
    pm_run_check(&f.run); /* delivered by the retried finalize */
    sp_test_counters(f.ctx, &c);
    assert_int_equal(c.slots_released, 2);
    assert_int_equal(simpler_committed_device_memory(f.ctx), f.committed_before);
    fx_teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_device_operation_fails_cleanly_and_retries),
        cmocka_unit_test(test_every_host_allocation_fails_cleanly_and_retries),
        cmocka_unit_test(test_init_retry_after_a_failed_cleanup),
        cmocka_unit_test(test_destroy_after_a_failed_cleanup),
        cmocka_unit_test(test_failed_init_releases_the_device),
        cmocka_unit_test(test_simpler_run_cleans_up_after_device_failures),
    };
    return cmocka_run_group_tests(tests, NULL, ts_device_teardown);
}
