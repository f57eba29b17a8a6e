/*
 * test_hbg.c — host_build_graph (SIMPLER_RUNTIME_HBG) through simpler.h:
 * the selection (config, environment, refusals), the host's one load of
 * the orchestration, element access on the staged host values and its
 * refusal for values a task produces, and graphs that can never fit,
 * failing at once with TMR's codes; each failed run followed by an exact
 * one. The semantics both runtimes share run under both through CTest's
 * *_hbg entries (tests/CMakeLists.txt); this file is HBG's own.
 *
 * Callables are symbol-form (pm_support.h): kernel 0 y = x * mul + add,
 * kernel 1 acc += y. The orchestrations below are this executable's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "km_support.h"
#include "pm_support.h"

#define HBG_CALLABLE 9

/* What the orchestrations below saw: each element access's return code
 * and value, in order. */
static int g_rc[4];
static float g_value[4];
static uint32_t g_tasks; /* how many tasks hbg_many_orchestration submits */
static uint64_t g_out_bytes; /* each OUTPUT's bytes: hbg_heap_ and hbg_zero_fill_orchestration */

static void reset_seen(void)
{
    for (int i = 0; i < 4; i++) {
        g_rc[i] = 1; /* not reached */
        g_value[i] = -1.0f;
    }
}

/* Reads x[3] (an IN host tensor no task writes), writes x[5] = 42, reads
 * it back, then y = x * mul + add: y[5] must be 42 * mul + add. */
void hbg_staged_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *x = &args->tensors[0];
    uint64_t i3[1] = {3}, i5[1] = {5};
    float v = 42.0f;
    g_rc[0] = rt->ops->read_element(rt, x, i3, &g_value[0]);
    g_rc[1] = rt->ops->write_element(rt, x, i5, &v);
    g_rc[2] = rt->ops->read_element(rt, x, i5, &g_value[2]);
    pm_submit_axpb(rt, args);
}

/* y = x * mul + add, then a read of y[0], which that task produces. */
void hbg_produced_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    pm_submit_axpb(rt, args);
    uint64_t i0[1] = {0};
    g_rc[0] = rt->ops->read_element(rt, &args->tensors[1], i0, &g_value[0]);
}

/* g_tasks tasks (each y = x * mul + add on the same buffers, ordered by
 * the TensorMap), each in its own scope: TMR retires each once its scope
 * has ended and it has completed. */
void hbg_many_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    for (uint32_t i = 0; i < g_tasks && rt->ops->status(rt) == 0; i++) {
        rt->ops->scope_begin(rt, SIMPLER_SCOPE_AUTO);
        pm_submit_axpb(rt, args);
        rt->ops->scope_end(rt);
    }
}

/* g_tasks tasks, each with one runtime-allocated OUTPUT of g_out_bytes,
 * each in its own scope. */
void hbg_heap_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    for (uint32_t i = 0; i < g_tasks && rt->ops->status(rt) == 0; i++) {
        rt->ops->scope_begin(rt, SIMPLER_SCOPE_AUTO);
        struct simpler_task_args ta;
        struct simpler_task_result r;
        uint64_t shape[1] = {g_out_bytes / sizeof(float)};
        simpler_task_args_init(&ta);
        simpler_task_args_add_input(&ta, &args->tensors[0]);
        simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 1);
        for (uint32_t k = 0; k < PM_SCALARS; k++)
            simpler_task_args_add_scalar(&ta, args->scalars[k]);
        simpler_submit_aiv(rt, 0, &ta, &r);
        rt->ops->scope_end(rt);
    }
}

/* g_tasks dummy tasks, each in its own scope, each creating one
 * zero-filled OUTPUT of g_out_bytes: nothing but heap units and
 * zero-fills (no kernel writes an output smaller than x). */
void hbg_zero_fill_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    for (uint32_t i = 0; i < g_tasks && rt->ops->status(rt) == 0; i++) {
        rt->ops->scope_begin(rt, SIMPLER_SCOPE_AUTO);
        struct simpler_task_args ta;
        struct simpler_task_result r;
        uint64_t shape[1] = {g_out_bytes / sizeof(float)};
        simpler_task_args_init(&ta);
        simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 1);
        simpler_submit_dummy(rt, &ta, &r);
        rt->ops->scope_end(rt);
    }
}

/* Writes x[5] = 42 without reading anything, then y = x * mul + add: a
 * kept image carries the write, at an address in the staged x. */
void hbg_write_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    uint64_t i5[1] = {5};
    float v = 42.0f;
    g_rc[0] = rt->ops->write_element(rt, &args->tensors[0], i5, &v);
    pm_submit_axpb(rt, args);
}

/* y = x * mul + add with one scalar more, the staged x's address: a value
 * derived from a moving address, which no relocation can find. */
void hbg_address_scalar_orchestration(struct simpler_orch *rt,
                                      const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &args->tensors[0]);
    simpler_task_args_add_output_existing(&ta, &args->tensors[1]);
    for (uint32_t k = 0; k < PM_SCALARS; k++)
        simpler_task_args_add_scalar(&ta, args->scalars[k]);
    simpler_task_args_add_scalar(&ta, args->tensors[0].addr);
    g_rc[0] = simpler_submit_aiv(rt, 0, &ta, &r);
}

/* g_tasks tasks, task i computing y = x * mul + add on elements
 * [64 i, 64 i + 64): each reads and writes regions no other task touches,
 * so none depends on another, and each records two TensorMap entries. */
#define HBG_SLICE 64u
void hbg_slices_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    for (uint32_t i = 0; i < g_tasks && rt->ops->status(rt) == 0; i++) {
        struct simpler_task_args ta;
        struct simpler_task_result r;
        struct simpler_tensor x, y;
        simpler_tensor_slice(&x, &args->tensors[0], 0, i * HBG_SLICE, (i + 1) * HBG_SLICE, 1);
        simpler_tensor_slice(&y, &args->tensors[1], 0, i * HBG_SLICE, (i + 1) * HBG_SLICE, 1);
        simpler_task_args_init(&ta);
        simpler_task_args_add_input(&ta, &x);
        simpler_task_args_add_output_existing(&ta, &y);
        for (uint32_t k = 0; k < PM_SCALARS; k++)
            simpler_task_args_add_scalar(&ta, args->scalars[k]);
        simpler_submit_aiv(rt, 0, &ta, &r);
    }
}

/* A program-mode context on the small device with `runtime`, PM_CALLABLE
 * (pm_orchestration) registered. */
static struct simpler_context *open_runtime(uint32_t runtime)
{
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    pm_observers_reset();
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.run_capacity = ts_small_run_config();
    cfg.runtime = runtime;
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
    size_t bytes;
    void *image = pm_image(&bytes);
    assert_int_equal(simpler_register_callable(ctx, PM_CALLABLE, image, bytes), 0);
    simpler_callable_free(image);
    return ctx;
}

static struct simpler_context_info context_info(struct simpler_context *ctx)
{
    struct simpler_context_info info;
    assert_int_equal(simpler_get_context_info(ctx, &info), 0);
    return info;
}

static void register_orchestration(struct simpler_context *ctx, const char *orchestration)
{
    size_t bytes;
    void *image = pm_image_of(orchestration, NULL, pm_signature, PM_SIGNATURE, 2, &bytes);
    assert_int_equal(simpler_register_callable(ctx, HBG_CALLABLE, image, bytes), 0);
    simpler_callable_free(image);
}

/* One run of `id` over `r`, waited and finalized: its status. */
static int run_once(struct simpler_context *ctx, int32_t id, struct pm_run *r)
{
    simpler_run_t run;
    assert_int_equal(simpler_prepare_run(ctx, &run, id, &r->args, NULL), 0);
    assert_int_equal(simpler_launch_run(ctx, run), 0);
    int status = simpler_wait_run(ctx, run);
    assert_int_equal(simpler_finalize_run(ctx, run), 0);
    return status;
}

/* The next run after a failed one: exact (a failure left nothing behind). */
static void next_run_is_exact(struct simpler_context *ctx)
{
    struct pm_run r;
    pm_run_init(&r, 1.5f, -2.0f, 0, 0, 77);
    assert_int_equal(run_once(ctx, PM_CALLABLE, &r), 0);
    pm_run_check(&r);
    pm_run_free(&r);
}

/* ------------------------------------------------------------ selection */

static void test_the_runtime_is_chosen_by_config_and_checked(void **state)
{
    (void)state;
    unsetenv("SIMPLER_RUNTIME");
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    assert_int_equal(cfg.runtime, SIMPLER_RUNTIME_TMR); /* the default is TMR */
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    cfg.run_capacity = ts_small_run_config();
    cfg.runtime = 2; /* neither runtime */
    assert_int_equal(simpler_init(ctx, 0, &cfg), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* Refused, nothing latched: the same context still becomes a program
     * context, and either mode takes host_build_graph. */
    cfg.runtime = SIMPLER_RUNTIME_HBG;
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
    struct simpler_context_info info;
    assert_int_equal(simpler_get_context_info(ctx, &info), 0);
    assert_int_equal(info.runtime, SIMPLER_RUNTIME_HBG); /* TMR: the config was not taken */
    pm_close(ctx);
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simdev_set_device(0), 0);
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), 0);
    assert_int_equal(simpler_get_context_info(ctx, &info), 0);
    assert_int_equal(info.runtime, SIMPLER_RUNTIME_HBG);
    pm_close(ctx);
}

/* The environment's SIMPLER_RUNTIME overrides the config at init; any
 * other value is ignored. */
static void test_the_environment_overrides_the_config(void **state)
{
    (void)state;
    static const struct {
        const char *env;
        uint32_t config, expect;
    } cases[] = {
        {"hbg", SIMPLER_RUNTIME_TMR, SIMPLER_RUNTIME_HBG},
        {"tmr", SIMPLER_RUNTIME_HBG, SIMPLER_RUNTIME_TMR},
        {"bogus", SIMPLER_RUNTIME_HBG, SIMPLER_RUNTIME_HBG},
        {"", SIMPLER_RUNTIME_TMR, SIMPLER_RUNTIME_TMR},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(setenv("SIMPLER_RUNTIME", cases[i].env, 1), 0);
        struct simpler_context *ctx = open_runtime(cases[i].config);
        struct simpler_context_info info;
        assert_int_equal(simpler_get_context_info(ctx, &info), 0);
        /* another runtime: the override was not applied, or applied wrongly */
        assert_int_equal(info.runtime, cases[i].expect);
        next_run_is_exact(ctx);
        pm_close(ctx);
    }
    unsetenv("SIMPLER_RUNTIME");
}

/* ------------------------------------------------------ the host's load */

static void test_the_orchestration_is_loaded_on_the_host_once(void **state)
{
    (void)state;
    unsetenv("SIMPLER_RUNTIME");
    for (uint32_t runtime = SIMPLER_RUNTIME_TMR; runtime <= SIMPLER_RUNTIME_HBG; runtime++) {
        struct simpler_context *ctx = open_runtime(runtime);
        for (int i = 0; i < 100; i++) {
            struct pm_run r;
            pm_run_init(&r, 2.0f + (float)i, 0.5f, 0, 0, (uint64_t)i);
            assert_int_equal(run_once(ctx, PM_CALLABLE, &r), 0);
            pm_run_check(&r); /* a wrong value: the host-built graph ran wrong */
            pm_run_free(&r);
        }
        struct simpler_context_info info;
        assert_int_equal(simpler_get_context_info(ctx, &info), 0);
        /* HBG: one load for the registration, none per run; TMR: the host
         * never loads the orchestration */
        assert_int_equal(info.host_orchestration_loads, runtime == SIMPLER_RUNTIME_HBG ? 1 : 0);
        assert_int_equal(info.host_orchestration_unloads, 0); /* a run unloaded it */
        /* every run built its graph on the host (single-use runs keep nothing) */
        assert_int_equal(info.host_builds, runtime == SIMPLER_RUNTIME_HBG ? 100 : 0);
        assert_int_equal(info.host_builds_skipped, 0);
        assert_int_equal(simpler_unregister_callable(ctx, PM_CALLABLE), 0);
        info = context_info(ctx);
        /* HBG: 0 = unregister left the host's load in the process */
        assert_int_equal(info.host_orchestration_unloads, runtime == SIMPLER_RUNTIME_HBG ? 1 : 0);
        assert_int_equal(info.host_orchestration_loads, runtime == SIMPLER_RUNTIME_HBG ? 1 : 0);
        pm_close(ctx);
    }
}

/* ------------------------------------------------------- element access */

/* The same orchestration under both runtimes: the same element values
 * read, the same outputs. */
static void test_elements_of_staged_inputs_read_and_write_as_under_tmr(void **state)
{
    (void)state;
    unsetenv("SIMPLER_RUNTIME");
    for (uint32_t runtime = SIMPLER_RUNTIME_TMR; runtime <= SIMPLER_RUNTIME_HBG; runtime++) {
        struct simpler_context *ctx = open_runtime(runtime);
        register_orchestration(ctx, "hbg_staged_orchestration");
        struct pm_run r;
        pm_run_init(&r, 2.0f, 1.0f, 0, 0, 1);
        reset_seen();
        assert_int_equal(run_once(ctx, HBG_CALLABLE, &r), 0);
        assert_int_equal(g_rc[0], 0);
        assert_true(g_value[0] == pm_x_value(3, 1.0f)); /* the staged host value */
        assert_int_equal(g_rc[1], 0);
        assert_int_equal(g_rc[2], 0);
        assert_true(g_value[2] == 42.0f); /* the build's own write, read back */
        for (uint64_t i = 0; i < PM_N; i++) {
            float x = i == 5 ? 42.0f : r.x[i];
            /* a wrong y[5]: the write did not reach the device before the task */
            assert_true(r.y[i] == x * r.mul + r.add);
        }
        pm_run_free(&r);
        pm_close(ctx);
    }
}

static void test_reading_a_value_a_task_produces_is_refused(void **state)
{
    (void)state;
    unsetenv("SIMPLER_RUNTIME");
    struct simpler_context *ctx = open_runtime(SIMPLER_RUNTIME_HBG);
    register_orchestration(ctx, "hbg_produced_orchestration");
    struct pm_run r;
    pm_run_init(&r, 2.0f, 1.0f, 0, 0, 1);
    reset_seen();
    assert_int_equal(run_once(ctx, HBG_CALLABLE, &r), -SIMPLER_ORCH_ERR_NOT_HOST_VISIBLE);
    assert_int_equal(g_rc[0], -SIMPLER_ORCH_ERR_NOT_HOST_VISIBLE); /* the call itself said so */
    assert_true(g_value[0] == -1.0f); /* nothing was written to the caller's value */
    pm_run_free(&r);
    next_run_is_exact(ctx);
    pm_close(ctx);
}

/* ---------------------------------------------------- graphs that never fit */

/* 4 rings of 64 slots (ts_small_run_config): 300 tasks, each in its own
 * scope at depth 1, go to ring 1. TMR retires each after its scope and
 * runs them all; HBG reclaims nothing during the run and fails at once,
 * at the 65th, with TMR's code for a window that cannot drain. */
static void test_a_graph_larger_than_the_window_fails_at_once(void **state)
{
    (void)state;
    unsetenv("SIMPLER_RUNTIME");
    for (uint32_t runtime = SIMPLER_RUNTIME_TMR; runtime <= SIMPLER_RUNTIME_HBG; runtime++) {
        struct simpler_context *ctx = open_runtime(runtime);
        register_orchestration(ctx, "hbg_many_orchestration");
        g_tasks = 300;
        struct pm_run r;
        pm_run_init(&r, 2.0f, 1.0f, 0, 0, 1);
        simpler_run_t run;
        assert_int_equal(simpler_prepare_run(ctx, &run, HBG_CALLABLE, &r.args, NULL), 0);
        assert_int_equal(simpler_launch_run(ctx, run), 0);
        int status = simpler_wait_run(ctx, run);
        struct simpler_run_info info;
        assert_int_equal(simpler_get_run_info(ctx, run, &info), 0);
        assert_int_equal(simpler_finalize_run(ctx, run), 0);
        if (runtime == SIMPLER_RUNTIME_TMR) {
            assert_int_equal(status, 0);
            assert_int_equal(info.tasks_completed, 300);
        } else {
            assert_int_equal(status, -SIMPLER_ORCH_ERR_TASK_WINDOW_DEADLOCK);
            assert_int_equal(info.tasks_submitted, 64); /* the window, whole */
            assert_int_equal(info.tasks_completed, 0);  /* nothing of it ran */
        }
        pm_run_free(&r);
        next_run_is_exact(ctx);
        pm_close(ctx);
    }
}

/* Ring 1's heap is 1 MiB: eight zero-filled 256 KiB outputs, each in its
 * own scope, never fit together (TMR frees each as its task retires). */
static void test_outputs_larger_than_the_heap_fail_at_once(void **state)
{
    (void)state;
    unsetenv("SIMPLER_RUNTIME");
    for (uint32_t runtime = SIMPLER_RUNTIME_TMR; runtime <= SIMPLER_RUNTIME_HBG; runtime++) {
        struct simpler_context *ctx = open_runtime(runtime);
        register_orchestration(ctx, "hbg_heap_orchestration");
        g_tasks = 8;
        g_out_bytes = 256u << 10;
        struct pm_run r;
        pm_run_init(&r, 2.0f, 1.0f, 0, 0, 1);
        int status = run_once(ctx, HBG_CALLABLE, &r);
        assert_int_equal(status, runtime == SIMPLER_RUNTIME_TMR
                                     ? 0
                                     : -SIMPLER_ORCH_ERR_HEAP_DEADLOCK);
        pm_run_free(&r);
        next_run_is_exact(ctx);
        pm_close(ctx);
    }
}

/* A traced HBG run: its trace holds the host build on a track of its own,
 * with the two tasks it built (simpler-trace's submit cost per task). */
static void test_a_traced_run_shows_the_host_build_as_its_own_track(void **state)
{
    (void)state;
    unsetenv("SIMPLER_RUNTIME");
    unsetenv("SIMPLER_TRACE");
    char path[64];
    snprintf(path, sizeof path, "test_hbg_%d.json", (int)getpid());
    struct simpler_context *ctx = open_runtime(SIMPLER_RUNTIME_HBG);
    assert_int_equal(simpler_set_trace_path(ctx, path), 0);
    struct simpler_run_config config = ts_small_run_config();
    config.trace_level = 4;
    struct pm_run r;
    pm_run_init(&r, 2.0f, 1.0f, 0, 0, 1);
    simpler_run_t run;
    assert_int_equal(simpler_prepare_run(ctx, &run, PM_CALLABLE, &r.args, &config), 0);
    assert_int_equal(simpler_launch_run(ctx, run), 0);
    assert_int_equal(simpler_wait_run(ctx, run), 0);
    assert_int_equal(simpler_finalize_run(ctx, run), 0); /* writes the trace */
    pm_run_check(&r);
    pm_run_free(&r);
    pm_close(ctx);
    static char text[1 << 20];
    ts_read_text(path, text, sizeof text); /* fails: the traced HBG run wrote no trace */
    /* absent: the build is not traced, or not on its own track (tid 2) */
    assert_non_null(strstr(text, "\"name\":\"host build\",\"cat\":\"host\""));
    assert_non_null(strstr(text, "\"tid\":2,\"args\":{\"run\":1,\"tasks\":2}"));
    assert_non_null(strstr(text, "\"args\":{\"name\":\"host build\"}"));
    ts_trace_files_remove(path);
}

/* --------------------------------------- graphs that fit to the last unit */

/* One run of `id` over `r` with `config`, waited and finalized: its
 * status, and its info in *info. */
static int run_with(struct simpler_context *ctx, int32_t id, struct pm_run *r,
                    const struct simpler_run_config *config, struct simpler_run_info *info)
{
    simpler_run_t run;
    assert_int_equal(simpler_prepare_run(ctx, &run, id, &r->args, config), 0);
    assert_int_equal(simpler_launch_run(ctx, run), 0);
    int status = simpler_wait_run(ctx, run);
    assert_int_equal(simpler_get_run_info(ctx, run, info), 0);
    assert_int_equal(simpler_finalize_run(ctx, run), 0);
    return status;
}

/* One capacity resource: a graph that uses it to its last unit, and the
 * same graph needing one unit more (one task more, or the resource one
 * unit smaller). */
struct capacity_case {
    const char *resource;
    const char *orchestration;
    void (*config)(struct simpler_run_config *c, bool over); /* NULL: the small config */
    uint32_t tasks_fit, tasks_over;
    uint64_t out_bytes;      /* hbg_heap_ and hbg_zero_fill_orchestration's outputs */
    uint64_t edges_fit;      /* producer entries of the fitting graph */
    uint64_t submitted_over; /* tasks in the image when the build failed */
    uint64_t y_exact;        /* elements of y the fitting graph writes */
    int32_t code;
};

/* Ring 1's heap exactly four 256 KiB outputs, or one heap unit (64 bytes)
 * less. */
static void heap_config(struct simpler_run_config *c, bool over)
{
    c->heap_bytes[1] = (4u * (256u << 10)) - (over ? 64u : 0u);
}

/* Ring 1's heap 64 units (4 KiB) and room for 128 tasks there, the other
 * rings' heaps one unit each: 64 zero-filled 64-byte outputs fill ring 1's
 * heap, and the image's zero-fills are bounded by the heaps' 67 units, not
 * by the 256 slots' tensors (hbg_build.c, zero_fills_max). */
static void zero_fill_config(struct simpler_run_config *c, bool over)
{
    (void)over;
    for (int i = 0; i < SIMPLER_RUN_RINGS; i++)
        c->heap_bytes[i] = 64;
    c->heap_bytes[1] = 64 * 64;
    c->task_window[1] = 128;
}

/* 64 producer entries in all (16 a ring), and room for 128 tasks in ring
 * 1: the pool, not the window, is what runs out. */
static void dep_pool_config(struct simpler_run_config *c, bool over)
{
    (void)over;
    for (int i = 0; i < SIMPLER_RUN_RINGS; i++) {
        c->dep_pool[i] = 16;
        c->task_window[i] = i == 1 ? 128 : 16;
    }
}

/* 32 TensorMap entries. */
static void tensormap_config(struct simpler_run_config *c, bool over)
{
    (void)over;
    c->tensormap_entries = 32;
}

static const struct capacity_case capacity_cases[] = {
    /* 64 slots in ring 1: 64 chained tasks (63 edges), then 65 */
    {"task window", "hbg_many_orchestration", NULL, 64, 65, 0, 63, 64, PM_N,
     SIMPLER_ORCH_ERR_TASK_WINDOW_DEADLOCK},
    /* four zero-filled 256 KiB outputs in a heap of 1 MiB, then 1 MiB - 64 */
    {"heap", "hbg_heap_orchestration", heap_config, 4, 4, 256u << 10, 0, 3, 0,
     SIMPLER_ORCH_ERR_HEAP_DEADLOCK},
    /* 64 zero-filled 64-byte outputs fill a heap of 64 units, 65 do not */
    {"heap, zero-filled units", "hbg_zero_fill_orchestration", zero_fill_config, 64, 65, 64, 0,
     64, 0, SIMPLER_ORCH_ERR_HEAP_DEADLOCK},
    /* a chain of 65 tasks has 64 producer entries, one of 66 has 65 */
    {"dep pool", "hbg_many_orchestration", dep_pool_config, 65, 66, 0, 64, 65, PM_N,
     SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW},
    /* each task records two entries (its read of x and its write of y, on
     * regions no other task touches): 16 tasks fill 32, 17 need 34 */
    {"TensorMap", "hbg_slices_orchestration", tensormap_config, 16, 17, 0, 0, 16,
     16 * HBG_SLICE, SIMPLER_ORCH_ERR_TENSORMAP_OVERFLOW},
};

/* Each of HBG's four capacity resources (the heap twice: large outputs, and
 * as many zero-filled ones as it has units), used to its last unit, runs
 * exactly; one unit more fails at once with its code, running nothing and
 * copying nothing back; the runs before and after are exact and the
 * committed device memory is back to its idle figure. */
static void test_each_resource_overflowed_by_one_unit_fails_at_once(void **state)
{
    (void)state;
    unsetenv("SIMPLER_RUNTIME");
    for (size_t i = 0; i < sizeof capacity_cases / sizeof capacity_cases[0]; i++) {
        const struct capacity_case *cc = &capacity_cases[i];
        print_message("%s\n", cc->resource);
        struct simpler_context *ctx = open_runtime(SIMPLER_RUNTIME_HBG);
        register_orchestration(ctx, cc->orchestration);
        size_t idle = simpler_committed_device_memory(ctx);
        next_run_is_exact(ctx);
        for (int over = 0; over <= 1; over++) {
            struct simpler_run_config config = ts_small_run_config();
            if (cc->config)
                cc->config(&config, over);
            g_tasks = over ? cc->tasks_over : cc->tasks_fit;
            g_out_bytes = cc->out_bytes;
            struct pm_run r;
            pm_run_init(&r, 2.0f, 1.0f, 0, 0, 3);
            struct simpler_run_info info;
            int status = run_with(ctx, HBG_CALLABLE, &r, &config, &info);
            if (!over) {
                assert_int_equal(status, 0); /* the resource's last unit was not usable */
                assert_int_equal(info.tasks_completed, cc->tasks_fit);
                assert_int_equal(info.edges, cc->edges_fit);
                for (uint64_t e = 0; e < cc->y_exact; e++)
                    assert_true(r.y[e] == r.x[e] * r.mul + r.add); /* the graph ran wrong */
            } else {
                /* 0: the overflow was not detected; another code: the wrong
                 * resource blamed (or a wait that timed out) */
                assert_int_equal(status, -cc->code);
                assert_int_equal(info.tasks_submitted, cc->submitted_over);
                assert_int_equal(info.tasks_completed, 0); /* a task of it ran */
                pm_run_check_untouched(&r);                /* a failed run copied back */
            }
            pm_run_free(&r);
            next_run_is_exact(ctx);
            /* more: the run left staging, image or heap memory committed */
            assert_int_equal(simpler_committed_device_memory(ctx), idle);
        }
        pm_close(ctx);
    }
}

/* ------------------------------------ a prepared call keeps its image */

#define HBG_BATCH 4 /* open_runtime's pipeline depth: all in flight at once */

static float g_x_of[HBG_BATCH][PM_N];

/* Submits `call` HBG_BATCH times before finalizing any, x's values
 * changed before each (staged as they are then, into each submission's
 * own staging buffers), then finalizes each in order and checks that y
 * came from that submission's own x (and x[5] = 42, when `wrote5`). */
static void submit_batch(struct simpler_context *ctx, struct simpler_prepared_call *call,
                         struct pm_run *r, float base, bool wrote5)
{
    simpler_run_t runs[HBG_BATCH];
    for (int k = 0; k < HBG_BATCH; k++) {
        for (uint64_t i = 0; i < PM_N; i++)
            r->x[i] = g_x_of[k][i] = pm_x_value(i, base + (float)k);
        for (uint64_t i = 0; i < PM_N; i++)
            r->acc[i] = 1.0f;
        assert_int_equal(simpler_submit_call(ctx, call, &runs[k]), 0);
    }
    for (int k = 0; k < HBG_BATCH; k++) {
        assert_int_equal(simpler_wait_run(ctx, runs[k]), 0);
        assert_int_equal(simpler_finalize_run(ctx, runs[k]), 0);
        for (uint64_t i = 0; i < PM_N; i++) {
            float x = wrote5 && i == 5 ? 42.0f : g_x_of[k][i];
            /* another submission's value: the image was not relocated to
             * this submission's staging */
            assert_true(r->y[i] == x * r->mul + r->add);
        }
    }
}

/* Twelve submissions of one prepared call, four in flight at a time: the
 * first builds, the eleven others publish the kept image, each relocated to
 * its own staging buffers; then the same inputs through a single-use run
 * (a build) give the same bytes. */
static void test_a_prepared_call_builds_once_and_publishes_its_image_after(void **state)
{
    (void)state;
    unsetenv("SIMPLER_RUNTIME");
    struct simpler_context *ctx = open_runtime(SIMPLER_RUNTIME_HBG);
    size_t idle = simpler_committed_device_memory(ctx);
    struct pm_run r;
    pm_run_init(&r, 1.5f, 0.25f, 0, 0, 5);
    struct simpler_prepared_call *call;
    assert_int_equal(simpler_prepare_call(ctx, PM_CALLABLE, &r.args, NULL, &call), 0);
    assert_int_equal(context_info(ctx).host_builds, 0); /* preparing builds nothing */
    for (int batch = 0; batch < 3; batch++) {
        submit_batch(ctx, call, &r, 10.0f * (float)batch, false);
        for (uint64_t i = 0; i < PM_N; i++)
            assert_true(r.acc[i] == 1.0f + r.y[i]); /* the second task ran wrong */
    }
    struct simpler_context_info info = context_info(ctx);
    assert_int_equal(info.host_builds, 1);          /* more: a submission built again */
    assert_int_equal(info.host_builds_skipped, 11); /* fewer: the image was not kept */

    /* The kept image against a build: the same inputs, the same outputs. */
    static float kept_y[PM_N], kept_acc[PM_N];
    for (uint64_t i = 0; i < PM_N; i++) {
        r.x[i] = pm_x_value(i, -3.0f);
        r.acc[i] = 1.0f;
    }
    simpler_run_t run;
    assert_int_equal(simpler_submit_call(ctx, call, &run), 0);
    assert_int_equal(simpler_wait_run(ctx, run), 0);
    assert_int_equal(simpler_finalize_run(ctx, run), 0);
    memcpy(kept_y, r.y, sizeof kept_y);
    memcpy(kept_acc, r.acc, sizeof kept_acc);
    memset(r.y, PM_POISON_BYTE, PM_N * sizeof *r.y);
    for (uint64_t i = 0; i < PM_N; i++)
        r.acc[i] = 1.0f;
    assert_int_equal(simpler_run(ctx, PM_CALLABLE, &r.args, NULL, NULL), 0);
    /* a difference: the published image is not the graph a build makes */
    assert_memory_equal(kept_y, r.y, sizeof kept_y);
    assert_memory_equal(kept_acc, r.acc, sizeof kept_acc);
    info = context_info(ctx);
    assert_int_equal(info.host_builds, 2);          /* the single-use run built */
    assert_int_equal(info.host_builds_skipped, 12); /* the 13th submission published */
    assert_int_equal(simpler_release_call(ctx, call), 0);
    assert_int_equal(simpler_committed_device_memory(ctx), idle);
    pm_run_free(&r);
    pm_close(ctx);
}

/* Submits `call` `n` times one after the other, x's base changed before
 * each; each run's status must be `status`. */
static void submit_each(struct simpler_context *ctx, struct simpler_prepared_call *call,
                        struct pm_run *r, int n, int status)
{
    for (int k = 0; k < n; k++) {
        for (uint64_t i = 0; i < PM_N; i++)
            r->x[i] = pm_x_value(i, (float)k);
        reset_seen();
        simpler_run_t run;
        assert_int_equal(simpler_submit_call(ctx, call, &run), 0);
        assert_int_equal(simpler_wait_run(ctx, run), status);
        assert_int_equal(simpler_finalize_run(ctx, run), 0);
    }
}

/* An HBG context with `orchestration` registered as HBG_CALLABLE and a
 * prepared call of it over *r (initialised here); *ctx: the context. */
static struct simpler_prepared_call *open_call(const char *orchestration, struct pm_run *r,
                                               struct simpler_context **ctx)
{
    unsetenv("SIMPLER_RUNTIME");
    *ctx = open_runtime(SIMPLER_RUNTIME_HBG);
    register_orchestration(*ctx, orchestration);
    pm_run_init(r, 2.0f, 1.0f, 0, 0, 1);
    struct simpler_prepared_call *call;
    assert_int_equal(simpler_prepare_call(*ctx, HBG_CALLABLE, &r->args, NULL, &call), 0);
    return call;
}

/* Releases `call` (what it kept goes with it: LeakSanitizer says if not),
 * frees *r and closes the context. */
static void close_call(struct simpler_context *ctx, struct simpler_prepared_call *call,
                       struct pm_run *r)
{
    assert_int_equal(simpler_release_call(ctx, call), 0);
    pm_run_free(r);
    pm_close(ctx);
}

/* The kept image's element write lands in each submission's own staged x:
 * its address is relocated with the tensors'. */
static void test_a_kept_element_write_lands_in_each_submissions_staging(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    struct pm_run r;
    struct simpler_prepared_call *call = open_call("hbg_write_orchestration", &r, &ctx);
    for (int batch = 0; batch < 2; batch++)
        submit_batch(ctx, call, &r, 7.0f * (float)batch, true);
    struct simpler_context_info info = context_info(ctx);
    assert_int_equal(info.host_builds, 1); /* a write does not make a graph data-dependent */
    assert_int_equal(info.host_builds_skipped, 7);
    close_call(ctx, call, &r);
}

/* An orchestration that reads an element of its staged inputs may build a
 * graph that depends on them: its call builds at every submission, and
 * each build sees that submission's values. */
static void test_a_call_that_reads_an_input_element_builds_at_every_submission(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    struct pm_run r;
    struct simpler_prepared_call *call = open_call("hbg_staged_orchestration", &r, &ctx);
    submit_each(ctx, call, &r, 3, 0);
    /* the last submission's build read the last submission's x[3] */
    assert_int_equal(g_rc[0], 0);
    assert_true(g_value[0] == pm_x_value(3, 2.0f)); /* an earlier x: the image was kept */
    struct simpler_context_info info = context_info(ctx);
    assert_int_equal(info.host_builds, 3); /* fewer: a data-dependent image was kept */
    assert_int_equal(info.host_builds_skipped, 0);
    close_call(ctx, call, &r);
}

/* A build that failed is not kept: every submission builds and fails
 * with the build's code, and the next run is exact. */
static void test_a_failed_build_is_not_kept(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    struct pm_run r;
    struct simpler_prepared_call *call = open_call("hbg_produced_orchestration", &r, &ctx);
    submit_each(ctx, call, &r, 3, -SIMPLER_ORCH_ERR_NOT_HOST_VISIBLE);
    struct simpler_context_info info = context_info(ctx);
    assert_int_equal(info.host_builds, 3); /* fewer: the failed image was kept */
    assert_int_equal(info.host_builds_skipped, 0);
    next_run_is_exact(ctx);
    close_call(ctx, call, &r);
}

/* A scalar that carries a staged address cannot be relocated: the call
 * builds at every submission, and every run is exact. */
static void test_a_staged_address_in_a_scalar_is_never_kept(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    struct pm_run r;
    struct simpler_prepared_call *call = open_call("hbg_address_scalar_orchestration", &r, &ctx);
    submit_each(ctx, call, &r, 3, 0);
    assert_int_equal(g_rc[0], 0); /* the submit with the address scalar was refused */
    for (uint64_t i = 0; i < PM_N; i++)
        assert_true(r.y[i] == r.x[i] * r.mul + r.add);
    struct simpler_context_info info = context_info(ctx);
    assert_int_equal(info.host_builds, 3); /* fewer: an image naming a freed buffer was kept */
    assert_int_equal(info.host_builds_skipped, 0);
    close_call(ctx, call, &r);
}

/* Kernel mode builds at every unprepared launch; a prepared call keeps
 * its first image (a kernel context's image names nothing that moves
 * between launches: no staging) and later launches ship it, stamped with
 * their round, without a build. The public counters say so, and every
 * round is exact. */
static void test_kernel_mode_counts_a_host_build_per_launch(void **state)
{
    (void)state;
    assert_int_equal(setenv("SIMPLER_RUNTIME", "hbg", 1), 0);
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 1024, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    struct simpler_prepared_call *call;
    assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, NULL, &call), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
        assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, s), 0);
    }
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold_rounds(&b, 0.0f, 2.0f, 0.5f, 6)); /* a round lost or doubled */
    struct simpler_context_info info = context_info(ctx);
    assert_int_equal(info.runtime, SIMPLER_RUNTIME_HBG);
    /* 3 unprepared launches and the prepared call's first: fewer, kernel
     * mode's builds are not reported; more, the call kept nothing */
    assert_int_equal(info.host_builds, 4);
    assert_int_equal(info.host_builds_skipped, 2);
    assert_int_equal(simpler_release_call(ctx, call), 0);
    km_closing(ctx, s, &b);
    unsetenv("SIMPLER_RUNTIME");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_the_runtime_is_chosen_by_config_and_checked, ts_device_teardown),
        cmocka_unit_test_teardown(test_the_environment_overrides_the_config, ts_device_teardown),
        cmocka_unit_test_teardown(test_the_orchestration_is_loaded_on_the_host_once,
                                  ts_device_teardown),
        cmocka_unit_test_teardown(test_elements_of_staged_inputs_read_and_write_as_under_tmr,
                                  ts_device_teardown),
        cmocka_unit_test_teardown(test_reading_a_value_a_task_produces_is_refused,
                                  ts_device_teardown),
        cmocka_unit_test_teardown(test_a_graph_larger_than_the_window_fails_at_once,
                                  ts_device_teardown),
        cmocka_unit_test_teardown(test_outputs_larger_than_the_heap_fail_at_once,
                                  ts_device_teardown),
        cmocka_unit_test_teardown(test_a_traced_run_shows_the_host_build_as_its_own_track,
                                  ts_device_teardown),
        cmocka_unit_test_teardown(test_each_resource_overflowed_by_one_unit_fails_at_once,
                                  ts_device_teardown),
        cmocka_unit_test_teardown(test_a_prepared_call_builds_once_and_publishes_its_image_after,
                                  ts_device_teardown),
        cmocka_unit_test_teardown(test_a_kept_element_write_lands_in_each_submissions_staging,
                                  ts_device_teardown),
        cmocka_unit_test_teardown(test_a_call_that_reads_an_input_element_builds_at_every_submission,
                                  ts_device_teardown),
        cmocka_unit_test_teardown(test_a_failed_build_is_not_kept, ts_device_teardown),
        cmocka_unit_test_teardown(test_a_staged_address_in_a_scalar_is_never_kept,
                                  ts_device_teardown),
        cmocka_unit_test_teardown(test_kernel_mode_counts_a_host_build_per_launch,
                                  ts_device_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
