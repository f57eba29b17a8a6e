/*
 * test_trace_internals.c — diagnostics checked from inside: level 0
 * allocates nothing (tracing's own allocations counted by the host) in
 * program and kernel mode; the bounded buffer's arithmetic (runtime/
 * trace.h); the environment variable's parsing and its limits; a trace
 * region that fails to allocate fails prepare cleanly.
 *
 * The kernels, callables and contexts are tr_support.h's, as in
 * tests/scenario/test_trace.c, which reads real traces back through the
 * public API.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/host_alloc.h"
#include "host/context.h"
#include "runtime/trace.h"
#include "simpler/simdev_fault.h"
#include "tr_support.h"

static bool file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* ---------------------------------------------------------------- tests */

static void the_buffer_writer_keeps_capacity_records_and_counts_the_rest(void **state)
{
    (void)state;
    struct rt_trace_header layout;
    assert_int_equal(rt_trace_layout(1, 1, 1, 2, 0, &layout), 0);
    assert_int_equal(layout.buffer_count, 3); /* core, scheduler, orchestrator */
    uint8_t *region = aligned_alloc(64, (layout.total_bytes + 63) / 64 * 64);
    memset(region, 0, layout.total_bytes);
    memcpy(region, &layout, sizeof layout);
    struct rt_trace_header *h = (struct rt_trace_header *)region;
    struct rt_trace_record r = {.begin = 1, .end = 2, .kind = RT_TR_TASK};
    for (uint64_t i = 0; i < 5; i++) {
        r.task_id = i;
        rt_trace_put(h, 0, &r);
    }
    rt_trace_put(h, 3, &r); /* no such buffer: ignored, nothing written */
    assert_int_equal(rt_trace_buffers(h)[0].count, 2);
    assert_int_equal(rt_trace_buffers(h)[0].dropped, 3);
    assert_int_equal(rt_trace_records(h, 0)[1].task_id, 1); /* the first ones are kept */
    assert_int_equal(rt_trace_buffers(h)[1].count + rt_trace_buffers(h)[2].count, 0);
    free(region);
    /* Sizes that do not fit are refused, not wrapped. */
    assert_int_equal(rt_trace_layout(1, 1, 1, UINT64_MAX / 8, 0, &layout),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_trace_layout(1, 1, 1, 1, UINT64_MAX / 2, &layout),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_trace_layout(5, 1, 1, 1, 1, &layout), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
}

/* Device mallocs and tracing's own allocations of one run of `level`. */
static void allocations_of_a_run(struct simpler_context *ctx, uint32_t level, uint64_t *mallocs,
                                 uint64_t *trace_allocs)
{
    const struct simpler_args *vargs = vector_args(1.0f);
    struct simpler_run_config rc = ts_small_run_config();
    rc.trace_level = level;
    uint64_t before, after, traced = ctx->trace.allocations;
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_MALLOC, &before), 0);
    assert_int_equal(simpler_run(ctx, VEC_ID, vargs, &rc, NULL), 0);
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_MALLOC, &after), 0);
    *mallocs = after - before;
    *trace_allocs = ctx->trace.allocations - traced;
}

static void level_zero_allocates_nothing_and_writes_nothing(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_program(0, NULL);
    uint64_t mallocs, traced;
    allocations_of_a_run(ctx, 0, &mallocs, &traced);
    assert_int_equal(mallocs, 3); /* the three staging buffers, nothing else */
    assert_int_equal(traced, 0);
    assert_false(file_exists(trace_path(".json")));
    /* The same run traced: one device region more and its host record, so
     * the counters above do see tracing's allocations. */
    allocations_of_a_run(ctx, 1, &mallocs, &traced);
    assert_int_equal(mallocs, 4);
    assert_int_equal(traced, 2);
    assert_true(file_exists(trace_path(".json")));
    close_program(ctx);
}

static void the_environment_variable_parses_strictly(void **state)
{
    (void)state;
    uint32_t level = 9;
    char path[SP_TRACE_PATH_MAX] = "unchanged";
    assert_int_equal(sp_trace_parse_env("3", &level, path), 0);
    assert_int_equal(level, 3);
    assert_string_equal(path, "unchanged");
    assert_int_equal(sp_trace_parse_env("4,traces/x.json", &level, path), 0);
    assert_int_equal(level, 4);
    assert_string_equal(path, "traces/x.json");
    const char *bad[] = {"", "5", "-1", "12", "2,", "x", "2;p", " 2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        level = 9;
        assert_int_equal(sp_trace_parse_env(bad[i], &level, path),
                         PTO_RUNTIME_ERR_INVALID_ARGUMENT);
        assert_int_equal(level, 9); /* a rejected value writes nothing */
    }
    char *long_path = malloc(SP_TRACE_PATH_MAX + 3);
    memset(long_path, 'p', SP_TRACE_PATH_MAX + 2);
    long_path[0] = '1';
    long_path[1] = ',';
    long_path[SP_TRACE_PATH_MAX + 2] = 0;
    assert_int_equal(sp_trace_parse_env(long_path, &level, path), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    free(long_path);
}

static void the_environment_overrides_the_config_and_bad_configs_are_refused(void **state)
{
    (void)state;
    assert_int_equal(setenv("SIMPLER_TRACE", "1", 1), 0);
    struct simpler_context *ctx = open_program(0, NULL); /* config says 0, the env 1 */
    unsetenv("SIMPLER_TRACE");
    const struct simpler_args *vargs = vector_args(1.0f);
    assert_int_equal(simpler_run(ctx, VEC_ID, vargs, NULL, NULL), 0);
    assert_true(file_exists(trace_path(".json")));
    /* A level or buffer size out of range is refused before anything. */
    struct simpler_run_config rc = ts_small_run_config();
    rc.trace_level = 5;
    simpler_run_t run = 0;
    assert_int_equal(simpler_prepare_run(ctx, &run, VEC_ID, vargs, &rc),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    rc.trace_level = 1;
    rc.trace_records = SP_TRACE_MAX_RECORDS + 1;
    assert_int_equal(simpler_prepare_run(ctx, &run, VEC_ID, vargs, &rc),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(run, 0);
    assert_int_equal(simpler_set_trace_path(ctx, ""), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_set_trace_path(NULL, "x"), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    close_program(ctx);
}

static void a_trace_region_that_fails_to_allocate_fails_prepare_cleanly(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_program(1, NULL);
    const struct simpler_args *vargs = vector_args(1.0f);
    size_t committed = simpler_committed_device_memory(ctx);
    simpler_run_t run = 0;
    /* The run's first device allocation is its trace region. */
    const int oom = PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY;
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_MALLOC, 1, oom), 0);
    assert_int_equal(simpler_prepare_run(ctx, &run, VEC_ID, vargs, NULL),
                     PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY);
    assert_int_equal(simpler_committed_device_memory(ctx), committed); /* nothing held */
    /* The copy of its zeroed header. */
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_COPY, 1, oom), 0);
    assert_int_equal(simpler_prepare_run(ctx, &run, VEC_ID, vargs, NULL),
                     PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY);
    assert_int_equal(simpler_committed_device_memory(ctx), committed); /* the region was freed */
    /* Its host record. */
    sp_host_fault_inject(1);
    assert_int_equal(simpler_prepare_run(ctx, &run, VEC_ID, vargs, NULL),
                     PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
    assert_int_equal(simpler_committed_device_memory(ctx), committed);
    assert_int_equal(ctx->trace.allocations, 0); /* no region, no record */
    assert_int_equal(run, 0);
    sp_host_fault_inject(0);
    assert_int_equal(simpler_run(ctx, VEC_ID, vargs, NULL, NULL), 0); /* a retry works */
    close_program(ctx);
}

/* ----------------------------------------------------------- kernel mode */

static void kernel_mode_at_level_zero_commits_no_trace_region(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_kernel(0);
    assert_int_equal(ctx->trace.allocations, 0);
    assert_null(ctx->trace.kernel_region);
    assert_int_equal(simpler_kernel_mode_write_trace(ctx, NULL), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
    ts_device_teardown(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_buffer_writer_keeps_capacity_records_and_counts_the_rest),
        SIMPLER_TEST_WITH(level_zero_allocates_nothing_and_writes_nothing, setup, teardown),
        cmocka_unit_test(the_environment_variable_parses_strictly),
        SIMPLER_TEST_WITH(the_environment_overrides_the_config_and_bad_configs_are_refused,
                          setup, teardown),
        SIMPLER_TEST_WITH(a_trace_region_that_fails_to_allocate_fails_prepare_cleanly,
                          setup, teardown),
        SIMPLER_TEST_WITH(kernel_mode_at_level_zero_commits_no_trace_region, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
