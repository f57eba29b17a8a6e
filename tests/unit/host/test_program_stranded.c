/*
 * test_program_stranded.c — the way out of a stranded run: a run whose
 * finalize failed on a device operation, and that nobody finalizes again
 * (simpler_run, whose handle never leaves it, gave up after three
 * attempts).
 *
 * Owns the contract of docs/api.md, simpler_finalize_device: every
 * unfinalized run stranded, nobody waiting for one -> finalize_device
 * releases them (after what is left of them on the device has run),
 * delivers none of their outputs, counts them in
 * simpler_context_info.stranded_runs_released, and tears the context down;
 * an unfinalized run that is not stranded -> INVALID_STATE, nothing
 * changed. Unregistering a callable does the same for its own runs.
 *
 * Every finalize attempt is made to fail with fault injection: a staging
 * free hook (host/run_slot.h) re-arms "the next FREE fails" just before each free,
 * since an armed simdev fault fires once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "host/context.h"
#include "host/residency.h"
#include "host/run_args.h"
#include "host/run_slot.h"
#include "pm_support.h"

#define INJECTED PTO_RUNTIME_ERR_TIMEOUT /* a code none of these calls makes by itself */
#define STAGED_BYTES (3 * PM_N * sizeof(float)) /* a run stages x, y and acc */

struct fx {
    struct simpler_context *ctx;
    struct simpler_config cfg;
    size_t bare;  /* committed once initialised, before the callable */
    size_t idle;  /* committed with the callable registered, no run */
};

static void fx_register(struct fx *f)
{
    size_t bytes;
    void *image = pm_image(&bytes);
    assert_int_equal(simpler_register_callable(f->ctx, PM_CALLABLE, image, bytes), 0);
    simpler_callable_free(image);
}

/* Device 0 with the small topology; a depth-2 context, the callable registered. */
static void fx_open(struct fx *f)
{
    memset(f, 0, sizeof *f);
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    pm_observers_reset();
    assert_int_equal(simpler_config_default(&f->cfg), 0);
    f->cfg.pipeline_depth = 2;
    f->cfg.run_capacity = ts_small_run_config();
    assert_int_equal(simpler_create_device_context(&f->ctx), 0);
    assert_int_equal(simpler_init(f->ctx, 0, &f->cfg), 0);
    f->bare = simpler_committed_device_memory(f->ctx);
    fx_register(f);
    f->idle = simpler_committed_device_memory(f->ctx);
}

static struct simpler_context_info info_of(struct simpler_context *ctx)
{
    struct simpler_context_info info;
    memset(&info, 0xa5, sizeof info); /* a field the call forgot stays visibly wrong */
    assert_int_equal(simpler_get_context_info(ctx, &info), 0);
    return info;
}

static uint64_t device_in_use(void)
{
    struct simdev_mem_info m;
    assert_int_equal(simdev_mem_get_info(0, &m), 0);
    return m.in_use;
}

/* ------------------------------------------------- failing staging frees */

static atomic_int frees_to_fail;   /* staging frees the hook still makes fail */
static atomic_int frees_attempted; /* staging frees the hook saw */

/* Called just before each staging free: arms the FREE fault that makes
 * that very free fail, while frees_to_fail lasts. */
static void fail_staging_free(void *device, size_t bytes)
{
    (void)device;
    (void)bytes;
    atomic_fetch_add(&frees_attempted, 1);
    if (atomic_load(&frees_to_fail) > 0) {
        atomic_fetch_sub(&frees_to_fail, 1);
        assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_FREE, 1, INJECTED), 0);
    }
}

/* simpler_run with every one of its finalize attempts failing at the first
 * staging free: the run is left stranded in its slot. */
static void run_stranded(struct fx *f, struct pm_run *r)
{
    atomic_store(&frees_to_fail, 3);
    atomic_store(&frees_attempted, 0);
    sp_test_staging_free_hook = fail_staging_free;
    int rc = simpler_run(f->ctx, PM_CALLABLE, &r->args, NULL, NULL);
    sp_test_staging_free_hook = NULL;
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_int_equal(rc, INJECTED); /* 0: a finalize attempt got through the failing frees */
    assert_int_equal(atomic_load(&frees_to_fail), 0);   /* 1 or more: fewer than 3 attempts */
    assert_int_equal(atomic_load(&frees_attempted), 3); /* 4 or more: a 4th attempt, or one
                                                           that went past a failed free */
}

/* The fixture with both slots taken: `a`'s run stranded by run_stranded,
 * `b`'s prepared and still held by the caller. Returns b's handle. */
static simpler_run_t open_stranded_beside_held(struct fx *f, struct pm_run *a, struct pm_run *b)
{
    fx_open(f);
    pm_run_init(a, 2.0f, 0.5f, 0, 0, 1);
    pm_run_init(b, 3.0f, 1.5f, 0, 0, 2);
    run_stranded(f, a);
    simpler_run_t hb;
    assert_int_equal(simpler_prepare_run(f->ctx, &hb, PM_CALLABLE, &b->args, NULL), 0);
    return hb;
}

/* After a refused finalize_device or unregister: it changed nothing. */
static void assert_both_runs_still_held(struct fx *f)
{
    struct simpler_context_info info = info_of(f->ctx);
    assert_int_equal(info.unfinalized_runs, 2);
    assert_int_equal(info.stranded_runs, 1); /* 2: the run the caller holds counted as stranded */
    assert_int_equal(info.stranded_runs_released, 0); /* 1: the refused call released the stranded run */
    /* Less: the refused call freed a run's staging. */
    assert_int_equal(simpler_committed_device_memory(f->ctx), f->idle + 2 * STAGED_BYTES);
}

static int teardown(void **state)
{
    sp_test_staging_free_hook = NULL;
    simdev_fault_clear(0);
    pm_teardown(state); /* opens pm_gate: a failed test does not hang in the reset */
    return ts_device_teardown(state);
}

/* ------------------------------------------------------------------ tests */

static void test_context_info_arguments_and_identity(void **state)
{
    (void)state;
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    struct simpler_context *ctx;
    struct simpler_context_info info;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_get_context_info(NULL, &info), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_get_context_info(ctx, NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    info = info_of(ctx); /* no identity yet: nothing held, nothing released */
    assert_int_equal(info.unfinalized_runs, 0);
    assert_int_equal(info.stranded_runs, 0);
    assert_int_equal(info.stranded_runs_released, 0);
    assert_int_equal(sp_latch_claim(sp_test_latch(ctx), SP_IDENTITY_KERNEL), 0);
    /* A kernel context has no runs: the run fields read 0 (0x5a...: not
     * written; the call works on both identities since prepared calls). */
    memset(&info, 0x5a, sizeof info);
    assert_int_equal(simpler_get_context_info(ctx, &info), 0);
    assert_int_equal(info.unfinalized_runs, 0);
    assert_int_equal(info.stranded_runs, 0);
    assert_int_equal(info.stranded_runs_released, 0);
    assert_int_equal(info.host_preparations, 0);
    assert_int_equal(info.prepared_calls, 0);
    assert_int_equal(info.packets_encoded, 0);
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
}

/* Part 3 of issue 15: simpler_run's finalize attempts all fail; before, the
 * slot stayed taken and finalize_device was refused for good. */
static void test_finalize_device_releases_a_run_simpler_run_could_not_finalize(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 0.5f, 0, 0, 1);
    run_stranded(&f, &r);
    /* The first attempt copied the outputs back before its free failed. */
    pm_run_check(&r);
    pm_run_free(&r); /* simpler_run returned: the caller's buffers may go (ASan: never written again) */

    struct simpler_context_info info = info_of(f.ctx);
    assert_int_equal(info.unfinalized_runs, 1); /* 0: the run was released, or never held */
    assert_int_equal(info.stranded_runs, 1);    /* 0: a failed finalize did not mark it */
    assert_int_equal(info.stranded_runs_released, 0);
    /* + the staging: nothing was freed (each attempt's first free failed). */
    assert_int_equal(simpler_committed_device_memory(f.ctx), f.idle + STAGED_BYTES);
    struct sp_counters c;
    sp_test_counters(f.ctx, &c);
    assert_int_equal(c.slots_acquired, 1);
    assert_int_equal(c.slots_released, 0);
    assert_int_equal(c.staging_frees, 0);

    /* INVALID_STATE: the stranded slot still blocks the teardown. */
    assert_int_equal(simpler_finalize_device(f.ctx), 0);
    info = info_of(f.ctx);
    assert_int_equal(info.unfinalized_runs, 0);
    assert_int_equal(info.stranded_runs, 0);
    assert_int_equal(info.stranded_runs_released, 1); /* 0: released silently; 2: counted twice */
    assert_int_equal(simpler_committed_device_memory(f.ctx), 0);
    assert_int_equal(device_in_use(), 0); /* the device holds nothing of the context */
    sp_test_counters(f.ctx, &c);
    assert_int_equal(c.slots_released, 1); /* 2: released twice */
    assert_int_equal(c.staging_frees, 3);  /* fewer: staging left for the reset to reclaim */

    /* The context is usable again, and the count stays readable. */
    assert_int_equal(simpler_init(f.ctx, 0, &f.cfg), 0);
    fx_register(&f);
    assert_int_equal(simpler_committed_device_memory(f.ctx), f.idle);
    pm_run_init(&r, 3.0f, 1.5f, 0, 0, 2);
    assert_int_equal(simpler_run(f.ctx, PM_CALLABLE, &r.args, NULL, NULL), 0);
    pm_run_check(&r);
    pm_run_free(&r);
    assert_int_equal(info_of(f.ctx).stranded_runs_released, 1); /* 0: init reset the count */
    pm_close(f.ctx);
}

/* A run whose copy-back failed is released without its outputs: the
 * finalize that would have delivered them is the caller's, not teardown's. */
static void test_finalize_device_delivers_nothing_of_a_stranded_run(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 0.5f, 0, 0, 1);
    simpler_run_t run;
    assert_int_equal(simpler_prepare_run(f.ctx, &run, PM_CALLABLE, &r.args, NULL), 0);
    assert_int_equal(simpler_launch_run(f.ctx, run), 0);
    assert_int_equal(simpler_wait_run(f.ctx, run), 0);
    /* The first copy of the finalize is y's copy-back. */
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_COPY, 1, INJECTED), 0);
    assert_int_equal(simpler_finalize_run(f.ctx, run), INJECTED);
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_int_equal(info_of(f.ctx).stranded_runs, 1); /* 0: a failed finalize_run does not strand */
    assert_int_equal(simpler_finalize_device(f.ctx), 0);
    pm_run_check_untouched(&r); /* y or acc written: teardown copied a stranded run's outputs */
    assert_int_equal(info_of(f.ctx).stranded_runs_released, 1);
    assert_int_equal(simpler_committed_device_memory(f.ctx), 0);
    /* INVALID_ARGUMENT or a crash: the released run's handle was reused or
     * dangling; it is simply gone. */
    assert_int_equal(simpler_finalize_run(f.ctx, run), PTO_RUNTIME_ERR_INVALID_STATE);
    pm_run_free(&r);
    assert_int_equal(simpler_destroy_device_context(f.ctx), 0);
}

/* A run the caller still holds (prepared, or completed and not finalized)
 * keeps finalize_device refused, stranded runs beside it or not, and the
 * refused call changes nothing. */
static void test_finalize_device_refuses_while_a_run_not_stranded_is_unfinalized(void **state)
{
    (void)state;
    struct fx f;
    struct pm_run a, b;
    simpler_run_t hb = open_stranded_beside_held(&f, &a, &b);
    struct sp_counters c0, c1;
    sp_test_counters(f.ctx, &c0);

    /* 0: it released (or reset under) a run the caller still holds. */
    assert_int_equal(simpler_finalize_device(f.ctx), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_both_runs_still_held(&f);
    sp_test_counters(f.ctx, &c1);
    assert_int_equal(c1.slots_released, c0.slots_released);
    assert_int_equal(c1.staging_frees, c0.staging_frees);

    /* Completed but not finalized: still the caller's. */
    assert_int_equal(simpler_launch_run(f.ctx, hb), 0);
    assert_int_equal(simpler_wait_run(f.ctx, hb), 0);
    assert_int_equal(simpler_finalize_device(f.ctx), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_both_runs_still_held(&f);

    assert_int_equal(simpler_finalize_run(f.ctx, hb), 0);
    pm_run_check(&b);
    assert_int_equal(simpler_finalize_device(f.ctx), 0);
    /* 2: b, finalized by the caller, counted too. */
    assert_int_equal(info_of(f.ctx).stranded_runs_released, 1);
    assert_int_equal(simpler_committed_device_memory(f.ctx), 0);
    pm_run_free(&a);
    pm_run_free(&b);
    assert_int_equal(simpler_destroy_device_context(f.ctx), 0);
}

/* Unregister: refused (nothing changed) while a run the caller holds uses
 * the callable; once only stranded runs use it, it releases them too. */
static void test_unregister_releases_the_stranded_runs_of_its_callable(void **state)
{
    (void)state;
    struct fx f;
    struct pm_run a, b;
    simpler_run_t hb = open_stranded_beside_held(&f, &a, &b);

    /* 0: it unloaded the callable of a run the caller still holds. */
    assert_int_equal(simpler_unregister_callable(f.ctx, PM_CALLABLE), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_both_runs_still_held(&f);

    assert_int_equal(simpler_finalize_run(f.ctx, hb), 0); /* never launched: released as it is */
    /* INVALID_STATE: the stranded run still blocks its callable. */
    assert_int_equal(simpler_unregister_callable(f.ctx, PM_CALLABLE), 0);
    struct simpler_context_info info = info_of(f.ctx);
    assert_int_equal(info.unfinalized_runs, 0);
    assert_int_equal(info.stranded_runs, 0);
    assert_int_equal(info.stranded_runs_released, 1);
    /* More: the callable's image and record or the run's staging still held. */
    assert_int_equal(simpler_committed_device_memory(f.ctx), f.bare);
    assert_int_equal(simpler_unregister_callable(f.ctx, PM_CALLABLE),
                     PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT);

    /* The id and the slot work again. */
    fx_register(&f);
    pm_run_free(&a);
    pm_run_init(&a, 4.0f, -1.0f, 0, 0, 3); /* a fresh acc: the stranded run delivered into a's */
    assert_int_equal(simpler_run(f.ctx, PM_CALLABLE, &a.args, NULL, NULL), 0);
    pm_run_check(&a);
    assert_int_equal(info_of(f.ctx).stranded_runs_released, 1);
    pm_run_free(&a);
    pm_run_free(&b);
    pm_close(f.ctx);
}

/* ------------------------------------- a stranded run still on the device */

static struct ts_gate free_reached;      /* open: counts staging frees */
static atomic_int order_at_first_free = -1; /* pm_order_count when the first one came */

static void note_staging_free(void *device, size_t bytes)
{
    (void)device;
    (void)bytes;
    int unset = -1;
    atomic_compare_exchange_strong(&order_at_first_free, &unset, atomic_load(&pm_order_count));
    ts_gate_pass(&free_reached);
}

struct teardown_call {
    struct simpler_context *ctx;
    int rc;
};

static void *finalize_device_main(void *arg)
{
    struct teardown_call *t = arg;
    t->rc = simpler_finalize_device(t->ctx);
    return NULL;
}

/* The finalize's wait failed, so nobody knows the run is over: the release
 * must wait for it before its staging goes. */
static void test_finalize_device_waits_for_a_stranded_run_still_running(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 0.5f, 0, PM_FLAG_GATE, 1);
    simpler_run_t run;
    assert_int_equal(simpler_prepare_run(f.ctx, &run, PM_CALLABLE, &r.args, NULL), 0);
    assert_int_equal(simpler_launch_run(f.ctx, run), 0);
    ts_gate_wait_arrivals(&pm_gate, 1); /* task 0 is held: the run cannot end */
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_SYNC, 1, INJECTED), 0);
    assert_int_equal(simpler_finalize_run(f.ctx, run), INJECTED); /* its wait failed */
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_int_equal(info_of(f.ctx).stranded_runs, 1);

    ts_gate_init(&free_reached);
    ts_gate_open(&free_reached);
    atomic_store(&order_at_first_free, -1);
    sp_test_staging_free_hook = note_staging_free;
    struct teardown_call t = {f.ctx, PTO_RUNTIME_ERR_INTERNAL};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, finalize_device_main, &t), 0);
    /* While task 0 is held, a correct release can never reach a free. 1:
     * the staging of a run still running on the device was freed. */
    int freed_early = ts_gate_wait_arrivals_for(&free_reached, 1, TS_GRACE_MS);
    ts_gate_open(&pm_gate);
    pthread_join(thread, NULL);
    sp_test_staging_free_hook = NULL;
    ts_gate_destroy(&free_reached);

    assert_int_equal(freed_early, 0);
    assert_int_equal(t.rc, 0);
    /* 0: the first staging buffer went before task 1 (the run's last) ended. */
    assert_int_equal(atomic_load(&order_at_first_free), 1);
    pm_run_check_untouched(&r); /* written: teardown delivered a stranded run's outputs */
    assert_int_equal(info_of(f.ctx).stranded_runs_released, 1);
    assert_int_equal(simpler_committed_device_memory(f.ctx), 0);
    pm_run_free(&r);
    assert_int_equal(simpler_destroy_device_context(f.ctx), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST_WITH(test_context_info_arguments_and_identity, NULL, teardown),
        SIMPLER_TEST_WITH(test_finalize_device_releases_a_run_simpler_run_could_not_finalize,
                          NULL, teardown),
        SIMPLER_TEST_WITH(test_finalize_device_delivers_nothing_of_a_stranded_run, NULL, teardown),
        SIMPLER_TEST_WITH(test_finalize_device_refuses_while_a_run_not_stranded_is_unfinalized,
                          NULL, teardown),
        SIMPLER_TEST_WITH(test_unregister_releases_the_stranded_runs_of_its_callable,
                          NULL, teardown),
        SIMPLER_TEST_WITH(test_finalize_device_waits_for_a_stranded_run_still_running,
                          NULL, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
