/*
 * test_prepared_call.c — prepared calls through simpler.h alone: one
 * preparation submitted many times in program mode (sequentially, after a
 * failure, four at once) and launched many times in kernel mode (eagerly
 * and from a captured graph), the counters that prove the reuse, and the
 * lifetime rules (unregister, release, finalize_device refused while the
 * call or its submissions need what they would free).
 *
 * Program mode runs pm_support's callable (task 0: y = x * mul + add, task
 * 1: acc += y); kernel mode runs the same callable on km_support's device
 * buffers. The cases that read a prepared call's bytes and its callable's
 * reference count are unit/host/test_prepared_call_internals.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "km_support.h"

static struct simpler_context_info info_of(struct simpler_context *ctx)
{
    struct simpler_context_info info;
    assert_int_equal(simpler_get_context_info(ctx, &info), 0);
    return info;
}

/* Rewrites x as pm_x_value(i, x_base), acc as 1 and poisons y: a caller
 * giving the next submission new inputs. */
static void pm_run_refill(struct pm_run *r, float x_base)
{
    for (int i = 0; i < PM_N; i++) {
        r->x[i] = pm_x_value((uint64_t)i, x_base);
        r->acc[i] = 1.0f;
    }
    memset(r->y, PM_POISON_BYTE, PM_N * sizeof(float));
}

/* y == pm_x_value(i, x_base) * mul + add and acc == 1 + y everywhere: the
 * outputs of a submission that read x as it was with base x_base. */
static void pm_run_check_base(const struct pm_run *r, float x_base)
{
    for (int i = 0; i < PM_N; i++) {
        float want = pm_x_value((uint64_t)i, x_base) * r->mul + r->add;
        if (r->y[i] != want || r->acc[i] != 1.0f + want)
            fail_msg("element %d: y %g acc %g, want %g and %g (inputs of base %g)", i,
                     (double)r->y[i], (double)r->acc[i], (double)want, (double)(1.0f + want),
                     (double)x_base);
    }
}

/* Submits `call`, waits and finalizes it; returns the run's status. */
static int submit_and_finish(struct simpler_context *ctx, const struct simpler_prepared_call *call)
{
    simpler_run_t run = 0;
    assert_int_equal(simpler_submit_call(ctx, call, &run), 0);
    assert_true(run != 0);
    int status = simpler_wait_run(ctx, run);
    assert_int_equal(simpler_finalize_run(ctx, run), 0);
    return status;
}

/* ------------------------------------------------------------ program mode */

/* The caller's args, arrays and config are freed and overwritten right
 * after prepare: the call owns its copy. */
static void test_a_call_owns_its_args_and_config(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(4);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 0.75f, 0, 0, 3);
    struct simpler_tensor *tensors = malloc(sizeof r.tensors);
    uint64_t *scalars = malloc(sizeof r.scalars);
    struct simpler_args *args = malloc(sizeof *args);
    struct simpler_run_config *config = malloc(sizeof *config);
    assert_non_null(tensors);
    assert_non_null(scalars);
    assert_non_null(args);
    assert_non_null(config);
    memcpy(tensors, r.tensors, sizeof r.tensors);
    memcpy(scalars, r.scalars, sizeof r.scalars);
    *args = (struct simpler_args){3, PM_SCALARS, tensors, scalars};
    *config = ts_small_run_config();
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, args, config, &call), 0);
    assert_non_null(call);
    memset(tensors, 0xA5, sizeof r.tensors);
    memset(scalars, 0xA5, sizeof r.scalars);
    memset(args, 0xA5, sizeof *args);
    memset(config, 0xA5, sizeof *config);
    free(tensors);
    free(scalars);
    free(args);
    free(config);
    for (int i = 0; i < 2; i++) {
        pm_run_refill(&r, (float)(10 * i));
        assert_int_equal(submit_and_finish(ctx, call), 0); /* nonzero: it read the freed copies */
        pm_run_check_base(&r, (float)(10 * i));
    }
    assert_int_equal(simpler_release_call(ctx, call), 0);
    pm_run_free(&r);
    pm_close(ctx);
}

/* A, B, A: the second A is A's preparation reused (host_preparations does
 * not move), B's failing variants leave A alone, and each gives its own
 * outputs. */
static void test_a_b_a_reuses_the_preparation_of_a(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(4);
    struct pm_run ra, rb;
    pm_run_init(&ra, 2.0f, 1.0f, 0, 0, 10);
    pm_run_init(&rb, -1.5f, 4.0f, 0, 0, 20);
    struct simpler_context_info before = info_of(ctx);
    struct simpler_prepared_call *a = NULL, *b = NULL;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &ra.args, NULL, &a), 0);
    struct simpler_run_config small = ts_small_run_config();
    small.task_window[0] = 32; /* B's own config, smaller than the capacity */
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &rb.args, &small, &b), 0);
    struct simpler_context_info prepared = info_of(ctx);
    assert_int_equal(prepared.host_preparations, before.host_preparations + 2);
    assert_int_equal(prepared.prepared_calls, 2);

    /* B's variants that must fail, each leaving everything as it was. */
    struct simpler_prepared_call *bad = (struct simpler_prepared_call *)&bad;
    struct simpler_run_config big = ts_small_run_config();
    big.task_window[0] = 1u << 20; /* the arena was sized for 64 */
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &rb.args, &big, &bad),
                     PTO_RUNTIME_ERR_CAPACITY_EXCEEDED);
    assert_null(bad); /* *out is NULL on every failure */
    struct simpler_args short_args = rb.args;
    short_args.tensor_count = 2;
    bad = (struct simpler_prepared_call *)&bad;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &short_args, NULL, &bad),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_null(bad);
    struct simpler_run_config zero_window = ts_small_run_config();
    zero_window.task_window[1] = 0;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &rb.args, &zero_window, &bad),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE + 1, &rb.args, NULL, &bad),
                     PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT);
    assert_null(bad);
    struct simpler_context_info refused = info_of(ctx);
    assert_int_equal(refused.host_preparations, prepared.host_preparations); /* +n: a refusal counted */
    assert_int_equal(refused.prepared_calls, 2);

    assert_int_equal(submit_and_finish(ctx, a), 0);
    pm_run_check(&ra);
    assert_int_equal(submit_and_finish(ctx, b), 0);
    pm_run_check(&rb);
    pm_run_refill(&ra, 30.0f);
    assert_int_equal(submit_and_finish(ctx, a), 0);
    pm_run_check_base(&ra, 30.0f); /* B's values here: A's snapshot was overwritten by B */
    struct simpler_context_info after = info_of(ctx);
    assert_int_equal(after.host_preparations, prepared.host_preparations); /* +1: A rebuilt */
    assert_int_equal(after.unfinalized_runs, 0);
    assert_int_equal(simpler_release_call(ctx, a), 0);
    assert_int_equal(simpler_release_call(ctx, b), 0);
    assert_int_equal(info_of(ctx).prepared_calls, 0);
    pm_run_free(&ra);
    pm_run_free(&rb);
    pm_close(ctx);
}

/* The first submission fails (its kernel returns -321 on a negative input),
 * the second, of the same call with other inputs, succeeds: each has its
 * own status, and the first keeps its own until finalized. */
static void test_each_submission_has_its_own_status(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(4);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 1.0f, 321, PM_FLAG_FAIL_IF_NEGATIVE, 1);
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &r.args, NULL, &call), 0);
    pm_run_refill(&r, -50.0f); /* x[0] = -50: the kernel fails */
    simpler_run_t first = 0, second = 0;
    assert_int_equal(simpler_submit_call(ctx, call, &first), 0);
    assert_int_equal(simpler_wait_run(ctx, first), -321);
    pm_run_refill(&r, 5.0f); /* x[0] = 5: it succeeds */
    assert_int_equal(simpler_submit_call(ctx, call, &second), 0);
    assert_true(first != second);
    assert_int_equal(simpler_wait_run(ctx, second), 0); /* -321: the first's status leaked */
    assert_int_equal(simpler_poll_run(ctx, first), -321); /* 0: the second's overwrote it */
    struct simpler_run_info info;
    assert_int_equal(simpler_get_run_info(ctx, first, &info), 0);
    assert_int_equal(info.status, -321);
    assert_int_equal(simpler_finalize_run(ctx, second), 0);
    pm_run_check_base(&r, 5.0f);
    assert_int_equal(simpler_wait_run(ctx, first), -321);
    assert_int_equal(simpler_finalize_run(ctx, first), 0);
    pm_run_check_base(&r, 5.0f); /* a failed submission copied its outputs back */
    assert_int_equal(simpler_release_call(ctx, call), 0);
    pm_run_free(&r);
    pm_close(ctx);
}

/* Four submissions of one call in flight at once, the host inputs rewritten
 * between the submits: each run's outputs are those of the inputs at its
 * own submit. */
static void test_four_submissions_in_flight_see_their_own_inputs(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(4);
    struct pm_run r;
    pm_run_init(&r, 3.0f, -0.5f, 0, PM_FLAG_GATE, 1);
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &r.args, NULL, &call), 0);
    uint64_t preparations = info_of(ctx).host_preparations;
    simpler_run_t runs[4];
    for (int k = 0; k < 4; k++) {
        pm_run_refill(&r, (float)(100 * k));
        assert_int_equal(simpler_submit_call(ctx, call, &runs[k]), 0);
        if (k == 0)
            ts_gate_wait_arrivals(&pm_gate, 1); /* the first holds the device */
    }
    assert_int_equal(simpler_poll_run(ctx, runs[0]), PTO_RUNTIME_ERR_NOT_READY);
    struct simpler_context_info busy = info_of(ctx);
    assert_int_equal(busy.unfinalized_runs, 4); /* fewer: a submit waited for an earlier one */
    assert_int_equal(busy.host_preparations, preparations); /* +n: a submit prepared again */
    /* A fifth finds every slot taken, and is refused at once. */
    simpler_run_t fifth = 77;
    assert_int_equal(simpler_submit_call(ctx, call, &fifth), PTO_RUNTIME_ERR_CAPACITY_EXCEEDED);
    assert_int_equal(fifth, 0);
    assert_int_equal(simpler_release_call(ctx, call), PTO_RUNTIME_ERR_INVALID_STATE);
    ts_gate_open(&pm_gate);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(simpler_wait_run(ctx, runs[k]), 0);
        memset(r.y, PM_POISON_BYTE, PM_N * sizeof(float));
        for (int i = 0; i < PM_N; i++)
            r.acc[i] = 0.0f; /* finalize writes acc back whole */
        assert_int_equal(simpler_finalize_run(ctx, runs[k]), 0);
        pm_run_check_base(&r, (float)(100 * k)); /* another base: staged at another's submit */
        if (k < 3) /* still submissions out */
            assert_int_equal(simpler_release_call(ctx, call), PTO_RUNTIME_ERR_INVALID_STATE);
    }
    assert_int_equal(atomic_load(&pm_order_count), 4);
    assert_int_equal(simpler_release_call(ctx, call), 0);
    pm_run_free(&r);
    pm_close(ctx);
}

/* What a prepared call holds keeps it and its callable alive: unregister,
 * release and finalize_device are refused while they would free what it or
 * a submission of it needs, and everything returns to idle afterwards. */
static void test_lifetime_refusals_and_idle_afterwards(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(2);
    size_t idle = simpler_committed_device_memory(ctx);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 0.5f, 0, PM_FLAG_GATE, 1);
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &r.args, NULL, &call), 0);
    assert_int_equal(simpler_unregister_callable(ctx, PM_CALLABLE), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_finalize_device(ctx), PTO_RUNTIME_ERR_INVALID_STATE);
    simpler_run_t run;
    assert_int_equal(simpler_submit_call(ctx, call, &run), 0);
    ts_gate_wait_arrivals(&pm_gate, 1);
    assert_int_equal(simpler_release_call(ctx, call), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_unregister_callable(ctx, PM_CALLABLE), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_finalize_device(ctx), PTO_RUNTIME_ERR_INVALID_STATE);
    ts_gate_open(&pm_gate);
    assert_int_equal(simpler_wait_run(ctx, run), 0); /* the refusals changed nothing */
    assert_int_equal(simpler_finalize_run(ctx, run), 0);
    pm_run_check(&r);
    assert_int_equal(simpler_unregister_callable(ctx, PM_CALLABLE), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_release_call(ctx, call), 0);
    struct simpler_context_info info = info_of(ctx);
    assert_int_equal(info.prepared_calls, 0);
    assert_int_equal(info.unfinalized_runs, 0);
    assert_int_equal(simpler_committed_device_memory(ctx), idle); /* more: staging kept */
    assert_int_equal(simpler_unregister_callable(ctx, PM_CALLABLE), 0);
    assert_true(simpler_committed_device_memory(ctx) < idle); /* the image and its record went */
    /* Released: a call of an unregistered callable cannot be prepared. */
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &r.args, NULL, &call),
                     PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT);
    assert_null(call);
    pm_run_free(&r);
    pm_close(ctx); /* committed memory 0 after finalize_device */
}

/* Bad arguments are refused before any state, and the single-use entries
 * still count one preparation each. */
static void test_bad_arguments_are_refused_and_change_nothing(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(2);
    struct pm_run r;
    pm_run_init(&r, 1.0f, 2.0f, 0, 0, 4);
    struct simpler_prepared_call *call = NULL;
    struct simpler_context_info before = info_of(ctx);
    assert_int_equal(simpler_prepare_call(NULL, PM_CALLABLE, &r.args, NULL, &call),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, NULL, NULL, &call),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &r.args, NULL, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_prepare_call(ctx, -1, &r.args, NULL, &call),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_prepare_call(ctx, SIMPLER_MAX_CALLABLE_IDS, &r.args, NULL, &call),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    struct simpler_tensor t[3];
    memcpy(t, r.tensors, sizeof t);
    t[0].addr = 0; /* a NULL host buffer */
    struct simpler_args nulled = {3, PM_SCALARS, t, r.scalars};
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &nulled, NULL, &call),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_null(call);
    assert_int_equal(info_of(ctx).host_preparations, before.host_preparations);

    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &r.args, NULL, &call), 0);
    simpler_run_t run = 5;
    assert_int_equal(simpler_submit_call(NULL, call, &run), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_submit_call(ctx, NULL, &run), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(run, 0); /* *run is 0 on failure */
    assert_int_equal(simpler_submit_call(ctx, call, NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    simdev_stream_t s = ts_new_stream();
    assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, s), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simpler_release_call(ctx, NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_release_call(NULL, call), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* Pointers that are not live calls of the context are refused unread
     * (ASan: a read of one would be reported). */
    uint64_t *not_a_call = calloc(1, sizeof(uint64_t));
    assert_non_null(not_a_call);
    assert_int_equal(simpler_submit_call(ctx, (struct simpler_prepared_call *)not_a_call, &run),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_release_call(ctx, (struct simpler_prepared_call *)not_a_call),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    free(not_a_call);
    struct simpler_prepared_call *gone = NULL;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &r.args, NULL, &gone), 0);
    assert_int_equal(simpler_release_call(ctx, gone), 0);
    assert_int_equal(simpler_submit_call(ctx, gone, &run), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_release_call(ctx, gone), PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* twice */
    struct simpler_context_info refused = info_of(ctx);
    assert_int_equal(refused.unfinalized_runs, 0); /* a refused submit took a slot */
    assert_int_equal(refused.prepared_calls, 1);

    /* The single-use entries prepare once per run, and not at all when
     * refused (here: every slot is taken). */
    uint64_t preparations = refused.host_preparations;
    simpler_run_t held[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(simpler_submit_call(ctx, call, &held[i]), 0);
    assert_int_equal(simpler_run(ctx, PM_CALLABLE, &r.args, NULL, NULL),
                     PTO_RUNTIME_ERR_CAPACITY_EXCEEDED);
    assert_int_equal(info_of(ctx).host_preparations, preparations); /* +1: the refusal counted */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(simpler_wait_run(ctx, held[i]), 0);
        assert_int_equal(simpler_finalize_run(ctx, held[i]), 0);
    }
    assert_int_equal(simpler_run(ctx, PM_CALLABLE, &r.args, NULL, NULL), 0);
    simpler_run_t one;
    assert_int_equal(simpler_prepare_run(ctx, &one, PM_CALLABLE, &r.args, NULL), 0);
    assert_int_equal(simpler_finalize_run(ctx, one), 0);
    assert_int_equal(info_of(ctx).host_preparations, preparations + 2);
    assert_int_equal(info_of(ctx).prepared_calls, 1); /* the single-use calls are not counted */
    assert_int_equal(simpler_release_call(ctx, call), 0);
    pm_run_free(&r);
    pm_close(ctx);
}

/* A call belongs to its context: another context refuses it. */
static void test_a_call_of_another_context_is_refused(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(2);
    struct simpler_context *other;
    assert_int_equal(simpler_create_device_context(&other), 0);
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.pipeline_depth = 2;
    cfg.run_capacity = ts_small_run_config();
    struct simdev_config topo = ts_small_config();
    assert_int_equal(simdev_device_reset(1), 0);
    assert_int_equal(simdev_device_configure(1, &topo), 0);
    assert_int_equal(simpler_init(other, 1, &cfg), 0);
    struct pm_run r;
    pm_run_init(&r, 1.0f, 2.0f, 0, 0, 4);
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &r.args, NULL, &call), 0);
    simpler_run_t run = 9;
    assert_int_equal(simpler_submit_call(other, call, &run), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(run, 0);
    assert_int_equal(simpler_release_call(other, call), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(info_of(ctx).prepared_calls, 1); /* 0: the other context released it */
    assert_int_equal(submit_and_finish(ctx, call), 0);
    pm_run_check(&r);
    assert_int_equal(simpler_release_call(ctx, call), 0);
    pm_close(other);
    assert_int_equal(simdev_device_reset(1), 0);
    assert_int_equal(simdev_set_device(0), 0);
    pm_run_free(&r);
    pm_close(ctx);
}

/* One thread submits a call over and over while another releases it: the
 * context's lock orders them. Every release before the last is refused
 * (a submission is out), every submission before the release runs
 * exactly, and every one after it is refused without touching the freed
 * call (ASan, TSan). */
struct race {
    struct simpler_context *ctx;
    struct simpler_prepared_call *call;
    struct pm_run *r;
    atomic_int done;      /* submissions finished exactly */
    atomic_int wrong;     /* a submission that failed or gave wrong outputs */
    atomic_int refused;   /* the submit that found the call released */
};

static void *submit_until_released(void *arg)
{
    struct race *race = arg;
    for (int i = 0; i < 400; i++) {
        simpler_run_t run = 0;
        int rc = simpler_submit_call(race->ctx, race->call, &run);
        if (rc == PTO_RUNTIME_ERR_INVALID_ARGUMENT && run == 0) {
            atomic_store(&race->refused, 1);
            break;
        }
        memset(race->r->y, PM_POISON_BYTE, PM_N * sizeof(float));
        if (rc || simpler_wait_run(race->ctx, run) || simpler_finalize_run(race->ctx, run) ||
            race->r->y[PM_N - 1] != race->r->x[PM_N - 1] * race->r->mul + race->r->add) {
            atomic_fetch_add(&race->wrong, 1);
            break;
        }
        atomic_fetch_add(&race->done, 1);
    }
    return NULL;
}

static void test_a_release_racing_submissions_is_ordered(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(2);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 0.5f, 0, 0, 1);
    struct race race = {.ctx = ctx, .r = &r};
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &r.args, NULL, &race.call), 0);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, submit_until_released, &race), 0);
    while (atomic_load(&race.done) < 3 && !atomic_load(&race.wrong))
        sched_yield(); /* let some submissions through first: no ordering rests on it */
    int rc, refusals = 0;
    while ((rc = simpler_release_call(ctx, race.call)) == PTO_RUNTIME_ERR_INVALID_STATE) {
        refusals++; /* a submission was out */
        sched_yield();
    }
    assert_int_equal(rc, 0); /* anything else: the release saw a broken call */
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(atomic_load(&race.wrong), 0);
    assert_true(atomic_load(&race.done) >= 3);
    /* Either the submitter met the released call, or it finished its 400
     * before the release went through. */
    assert_true(atomic_load(&race.refused) || atomic_load(&race.done) == 400);
    struct simpler_context_info info = info_of(ctx);
    assert_int_equal(info.prepared_calls, 0);
    assert_int_equal(info.unfinalized_runs, 0);
    print_message("release refused %d times while %d submissions ran\n", refusals,
                  atomic_load(&race.done));
    pm_run_free(&r);
    pm_close(ctx);
}

/* ------------------------------------------------------------- kernel mode */

/* 1,000 launches of one prepared call: nothing is prepared or encoded again,
 * and exactly 1,000 whole rounds ran. */
static void test_a_thousand_kernel_launches_encode_once(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 1024, 2.0f);
    struct km_args a;
    km_args_make(&a, &b, 0.5f, 0.25f, 0, 1);
    struct simpler_context_info before = info_of(ctx);
    assert_int_equal(before.unfinalized_runs, 0); /* a kernel context has no runs */
    assert_int_equal(before.stranded_runs, 0);
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, NULL, &call), 0);
    memset(&a, 0xA5, sizeof a); /* the call owns its copy */
    struct simpler_context_info prepared = info_of(ctx);
    assert_int_equal(prepared.host_preparations, before.host_preparations + 1);
    assert_int_equal(prepared.packets_encoded, before.packets_encoded + 1);
    assert_int_equal(prepared.prepared_calls, 1);
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, s), 0);
        if (i % 100 == 99) /* bounded queue growth */
            assert_int_equal(simdev_stream_sync(s), 0);
    }
    assert_int_equal(simdev_stream_sync(s), 0);
    struct simpler_context_info after = info_of(ctx);
    assert_int_equal(after.packets_encoded, prepared.packets_encoded); /* +n: a launch re-encoded */
    assert_int_equal(after.host_preparations, prepared.host_preparations); /* +n: re-prepared */
    assert_true(km_bufs_hold_rounds(&b, 2.0f, 0.5f, 0.25f, 1000)); /* not 1000 rounds ran */
    /* An unprepared launch still prepares and encodes once each, and a
     * refused one (its first record fails) counts neither. */
    km_args_make(&a, &b, 0.5f, 0.25f, 0, 1);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_RECORD, 1, -991), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), -991);
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_int_equal(info_of(ctx).packets_encoded, after.packets_encoded);
    assert_int_equal(info_of(ctx).host_preparations, after.host_preparations);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(info_of(ctx).packets_encoded, after.packets_encoded + 1);
    assert_int_equal(info_of(ctx).host_preparations, after.host_preparations + 1);
    /* finalize_device refuses while the call lives. */
    assert_int_equal(simpler_finalize_device(ctx), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_submit_call(ctx, call, &(simpler_run_t){0}),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_release_call(ctx, call), 0);
    assert_int_equal(info_of(ctx).prepared_calls, 0);
    km_closing(ctx, s, &b);
}

/* A prepared call may be released as soon as its launch is enqueued, while
 * the round has not run yet: the launch took its packet. */
static void test_a_kernel_call_released_before_its_round_runs(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 1024, 1.0f);
    simdev_stream_t held = ts_new_stream();
    simdev_event_t opened = ts_new_event();
    struct ts_gate gate;
    ts_gate_init(&gate);
    ts_launch_gate(held, &gate);
    assert_int_equal(simdev_event_record(opened, held), 0);
    assert_int_equal(simdev_stream_wait_event(s, opened), 0); /* s waits for the gate */
    struct km_args a;
    km_args_make(&a, &b, 4.0f, 1.0f, 0, 1);
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, NULL, &call), 0);
    assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, s), 0);
    assert_int_equal(simpler_release_call(ctx, call), 0); /* INVALID_STATE: a launch pins it */
    assert_true(km_bufs_untouched(&b));                    /* the round is still held */
    ts_gate_open(&gate);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b, 1.0f, 4.0f, 1.0f, 1.0f));
    assert_int_equal(simdev_stream_sync(held), 0);
    assert_int_equal(simdev_event_destroy(opened), 0);
    assert_int_equal(simdev_stream_destroy(held), 0);
    ts_gate_destroy(&gate);
    km_closing(ctx, s, &b);
}

/* A launch of a prepared call inside a capture records the call's packet;
 * every replay reuses it with fresh inputs, and nothing is prepared or
 * encoded for a replay, also after the call was released. */
static void test_a_captured_prepared_launch_replays_without_host_work(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), KM_N, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 1.5f, -2.0f, 0, 1);
    struct simpler_prepared_call *call = NULL;
    /* Prepared while the stream captures: prepare touches no device. */
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, NULL, &call), 0);
    assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, s), 0);
    simdev_graph_t graph;
    assert_int_equal(simdev_stream_end_capture(s, &graph), 0); /* INVALIDATED: prepare broke it */
    simdev_graph_exec_t exec;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    assert_true(km_bufs_untouched(&b)); /* false: the captured launch ran eagerly */
    struct simpler_context_info captured = info_of(ctx);
    assert_int_equal(simpler_release_call(ctx, call), 0);
    for (int r = 0; r < 20; r++) {
        km_bufs_refill(&b, (float)r);
        assert_int_equal(simdev_graph_launch(exec, s), 0);
        assert_int_equal(simdev_stream_sync(s), 0);
        assert_true(km_bufs_hold(&b, (float)r, 1.5f, -2.0f, 1.0f)); /* a stale or lost round */
    }
    struct simpler_context_info replayed = info_of(ctx);
    assert_int_equal(replayed.host_preparations, captured.host_preparations); /* a replay prepared */
    assert_int_equal(replayed.packets_encoded, captured.packets_encoded);     /* a replay encoded */
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    km_closing(ctx, s, &b);
}

/* A kernel-mode prepare checks what a kernel-mode launch checks. */
static void test_kernel_prepare_refuses_what_launch_refuses(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 1024, 1.0f);
    struct km_args a;
    km_args_make(&a, &b, 1.0f, 1.0f, 0, 1);
    struct simpler_prepared_call *call = (struct simpler_prepared_call *)&call;
    struct simpler_context_info before = info_of(ctx);
    /* A host tensor: kernel mode stages nothing. */
    struct km_args host = a;
    host.args.tensors = host.t;
    host.args.scalars = host.s;
    float local[4];
    assert_int_equal(simpler_tensor_make_1d(&host.t[0], (uint64_t)(uintptr_t)local, 4,
                                            SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST),
                     0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &host.args, s),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_prepare_call(ctx, 0, &host.args, NULL, &call),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_null(call);
    assert_int_equal(simpler_prepare_call(ctx, 5, &a.args, NULL, &call),
                     PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT);
    struct simpler_run_config big = ts_small_run_config();
    big.task_window[0] = 1u << 20;
    assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, &big, &call),
                     PTO_RUNTIME_ERR_CAPACITY_EXCEEDED);
    assert_null(call);
    struct simpler_context_info after = info_of(ctx);
    assert_int_equal(after.host_preparations, before.host_preparations); /* a refusal counted */
    assert_int_equal(after.packets_encoded, before.packets_encoded);
    assert_int_equal(after.prepared_calls, 0);
    assert_true(km_bufs_untouched(&b));
    km_closing(ctx, s, &b);
}

/* Every device operation of a prepared call's launch failed in turn (the
 * kinds a clean launch performs): refused whole before the program is
 * enqueued, absorbed after it (the round runs exactly once); and neither
 * the failure nor the retry prepares or encodes anything. */
#define INJECTED (-991)
static const enum simdev_op_kind swept[] = {SIMDEV_OP_LAUNCH, SIMDEV_OP_RECORD, SIMDEV_OP_WAIT,
                                            SIMDEV_OP_COPY, SIMDEV_OP_SEM};

static uint64_t launch_call_attempts(enum simdev_op_kind kind)
{
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 64, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 1.0f, 1.0f, 0, 1);
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, NULL, &call), 0);
    uint64_t before, after;
    assert_int_equal(simdev_op_count(0, kind, &before), 0);
    assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, s), 0);
    assert_int_equal(simdev_op_count(0, kind, &after), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(simpler_release_call(ctx, call), 0);
    km_closing(ctx, s, &b);
    return after - before;
}

static void test_a_prepared_launch_fails_cleanly_at_every_device_operation(void **state)
{
    (void)state;
    uint64_t refused = 0, absorbed = 0;
    for (size_t k = 0; k < sizeof swept / sizeof swept[0]; k++) {
        uint64_t attempts = launch_call_attempts(swept[k]);
        for (uint64_t nth = 1; nth <= attempts; nth++) {
            struct simpler_context *ctx;
            simdev_stream_t s;
            struct km_bufs b;
            km_opening(&ctx, &s, &b, km_open(), 1024, 0.0f);
            struct km_args a;
            km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
            struct simpler_prepared_call *call = NULL;
            assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, NULL, &call), 0);
            struct simpler_context_info prepared = info_of(ctx);
            assert_int_equal(simdev_fault_inject(0, swept[k], nth, INJECTED), 0);
            int rc = simpler_kernel_mode_launch_call(ctx, call, s);
            assert_int_equal(simdev_fault_clear(0), 0);
            int round = simdev_stream_sync(s);
            if (rc) {
                refused++;
                assert_int_equal(rc, INJECTED);
                assert_true(km_bufs_untouched(&b)); /* refused whole: nothing ran */
                assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, s), 0);
                round = simdev_stream_sync(s);
            } else {
                absorbed++;
            }
            if (round != 0)
                fail_msg("launch_call, %s #%llu failed (launch %d): the round returned %d",
                         simdev_op_kind_name(swept[k]), (unsigned long long)nth, rc, round);
            assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f)); /* 1 + 2y: two rounds ran */
            struct simpler_context_info after = info_of(ctx);
            assert_int_equal(after.host_preparations, prepared.host_preparations);
            assert_int_equal(after.packets_encoded, prepared.packets_encoded);
            assert_int_equal(simpler_release_call(ctx, call), 0);
            km_closing(ctx, s, &b);
        }
    }
    print_message("launch_call faults: %llu refused, %llu absorbed\n", (unsigned long long)refused,
                  (unsigned long long)absorbed);
    /* As simpler_kernel_mode_launch (test_kernel_mode): 9 before the program
     * is enqueued refuse the launch (10 under host_build_graph: the image's
     * copy), 6 after it are absorbed. Fewer: a failure point of the
     * prepared launch was never exercised. */
    assert_int_equal(refused, ts_runtime_hbg() ? 10 : 9);
    assert_int_equal(absorbed, 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_call_owns_its_args_and_config),
        cmocka_unit_test(test_a_b_a_reuses_the_preparation_of_a),
        cmocka_unit_test(test_each_submission_has_its_own_status),
        SIMPLER_TEST_WITH(test_four_submissions_in_flight_see_their_own_inputs, NULL, pm_teardown),
        SIMPLER_TEST_WITH(test_lifetime_refusals_and_idle_afterwards, NULL, pm_teardown),
        cmocka_unit_test(test_bad_arguments_are_refused_and_change_nothing),
        cmocka_unit_test(test_a_call_of_another_context_is_refused),
        cmocka_unit_test(test_a_release_racing_submissions_is_ordered),
        cmocka_unit_test(test_a_thousand_kernel_launches_encode_once),
        cmocka_unit_test(test_a_kernel_call_released_before_its_round_runs),
        cmocka_unit_test(test_a_captured_prepared_launch_replays_without_host_work),
        cmocka_unit_test(test_kernel_prepare_refuses_what_launch_refuses),
        cmocka_unit_test(test_a_prepared_launch_fails_cleanly_at_every_device_operation),
    };
    if (getenv("PM_FILTER"))
        cmocka_set_test_filter(getenv("PM_FILTER"));
    return cmocka_run_group_tests(tests, NULL, ts_device_teardown);
}
