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

#include "pm_support.h"

#define HBG_CALLABLE 9

/* What the orchestrations below saw: each element access's return code
 * and value, in order. */
static int g_rc[4];
static float g_value[4];
static uint32_t g_tasks; /* how many tasks hbg_many_orchestration submits */
static uint64_t g_out_bytes; /* each OUTPUT's bytes in hbg_heap_orchestration */

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
        for (int i = 0; i < 20; i++) {
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
    FILE *f = fopen(path, "r");
    assert_non_null(f); /* NULL: the traced HBG run wrote no trace */
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    /* absent: the build is not traced, or not on its own track (tid 2) */
    assert_non_null(strstr(text, "\"name\":\"host build\",\"cat\":\"host\""));
    assert_non_null(strstr(text, "\"tid\":2,\"args\":{\"run\":1,\"tasks\":2}"));
    assert_non_null(strstr(text, "\"args\":{\"name\":\"host build\"}"));
    char deps[80];
    snprintf(deps, sizeof deps, "test_hbg_%d.deps.json", (int)getpid());
    unlink(deps);
    snprintf(deps, sizeof deps, "test_hbg_%d.deps.dot", (int)getpid());
    unlink(deps);
    unlink(path);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
