/*
 * test_kernel_hbg.c — kernel mode under host_build_graph, what only that
 * runtime has: a traced round's trace shows its host build, and an
 * orchestration that reads the caller's device data is refused with
 * NOT_HOST_VISIBLE. Each test asks for host_build_graph in its config;
 * kernel mode's shared semantics run under both runtimes through CTest's
 * *_hbg entries (test_kernel_mode_hbg and the others).
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
#include "simpler/simpler.h"

/* host_build_graph in kernel mode: a traced round's trace holds its host
 * build on a track of its own, with the tasks it built (pm_orchestration:
 * two), as a program-mode run's does (test_hbg). */
static void test_a_traced_host_build_graph_round_shows_its_host_build(void **state)
{
    (void)state;
    const char *env = getenv("SIMPLER_RUNTIME");
    if (env && strcmp(env, "tmr") == 0)
        skip(); /* the environment would override the config with TMR */
    char path[64];
    snprintf(path, sizeof path, "test_kernel_hbg_%d.json", (int)getpid());
    struct simpler_config cfg = km_config();
    cfg.runtime = SIMPLER_RUNTIME_HBG;
    cfg.run_capacity.trace_level = 2;
    struct simpler_context *ctx = km_open_with(&cfg);
    const int32_t id = 0;
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b;
    km_bufs_alloc(&b, 1024, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    assert_int_equal(simpler_kernel_mode_launch(ctx, id, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f));
    assert_int_equal(simpler_kernel_mode_write_trace(ctx, path), 0);
    static char text[1 << 20];
    ts_read_text(path, text, sizeof text); /* fails: the traced round wrote no trace */
    /* absent: the build is not traced, or not on its own track (tid 2) */
    assert_non_null(strstr(text, "\"name\":\"host build\",\"cat\":\"host\""));
    assert_non_null(strstr(text, "\"tid\":2,\"args\":{\"run\":"));
    assert_non_null(strstr(text, ",\"tasks\":2}"));
    km_closing(ctx, s, &b);
    ts_trace_files_remove(path);
}

/* Under host_build_graph: reads x[3], a value of the caller's device
 * memory, which the host never holds; then y = x * mul + add as usual. */
void km_reading_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);
static int g_read_rc = 1; /* 1: not reached */
void km_reading_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const uint64_t i3 = 3;
    float v;
    g_read_rc = rt->ops->read_element(rt, &args->tensors[0], &i3, &v);
    pm_orchestration(rt, args);
}

/* host_build_graph in kernel mode: an orchestration that reads device data
 * is refused with NOT_HOST_VISIBLE at the caller's sync (the launch itself
 * enqueued the round: the build's code travels in the image), nothing of
 * the round runs, and the next launch is exact. */
static void test_a_host_build_that_reads_device_data_fails_its_round_cleanly(void **state)
{
    (void)state;
    const char *env = getenv("SIMPLER_RUNTIME");
    if (env && strcmp(env, "tmr") == 0)
        skip(); /* the environment would override the config with TMR */
    struct simpler_config cfg = km_config();
    cfg.runtime = SIMPLER_RUNTIME_HBG;
    struct simpler_context *ctx = km_open_with(&cfg); /* id 0: pm_orchestration */
    size_t bytes;
    void *image = pm_image_of("km_reading_orchestration", NULL, pm_signature, PM_SIGNATURE, 2,
                              &bytes);
    int32_t reading = -1;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &reading), 0);
    simpler_callable_free(image);
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b;
    km_bufs_alloc(&b, 1024, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    g_read_rc = 1;
    assert_int_equal(simpler_kernel_mode_launch(ctx, reading, &a.args, s), 0);
    assert_int_equal(g_read_rc, -SIMPLER_ORCH_ERR_NOT_HOST_VISIBLE); /* the host's read refused */
    /* 0: the refused read was lost; another code: misreported */
    assert_int_equal(simdev_stream_sync(s), -SIMPLER_ORCH_ERR_NOT_HOST_VISIBLE);
    assert_true(km_bufs_untouched(&b)); /* false: a task of the failed round ran */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f)); /* the next launch exact */
    km_closing(ctx, s, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(test_a_traced_host_build_graph_round_shows_its_host_build),
        SIMPLER_TEST(test_a_host_build_that_reads_device_data_fails_its_round_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
