/*
 * test_launch_jobs.c — the jobs a device's launches run as (simdev/launch.c,
 * docs/device.md, "What a launch's job costs"): an ended asynchronous job
 * with room for 2,048 argument bytes is kept for the next launch, at most
 * SD_JOB_KEEP a device, and freed at the device's reset; a kept job carries
 * each launch's own arguments, never the last one's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "simdev/launch.h"
#include "test_support.h"

/* A launch's args: a header, then the pattern (ts_pattern_args). */
struct sized {
    atomic_int *ran;
    size_t size;
};

static int sized_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t size)
{
    (void)ctx;
    struct sized h;
    if (!ts_pattern_args_read(args, size, &h, sizeof h) || h.size != size)
        return PTO_RUNTIME_ERR_INTERNAL;
    atomic_fetch_add(h.ran, 1);
    return 0;
}

static unsigned char g_args[4096];

/* A two-thread AICPU launch of sized_fn with `size` bytes of args: never
 * run on the launching thread (that is a one-thread launch's), so its job
 * is an asynchronous one. */
static void launch_sized(simdev_stream_t s, atomic_int *ran, size_t size)
{
    struct sized h = {ran, size};
    ts_pattern_args(g_args, &h, sizeof h, size);
    assert_int_equal(simdev_launch_aicpu(s, sized_fn, 2, g_args, size), 0);
}

/*
 * Six launches one after the other on one stream, their args 16 bytes past
 * the header, 2,048, 4,096, 100, 2,048 and 16 past again: each of the two
 * threads of each sees every byte of its own launch (a job refilled with
 * the last launch's bytes, or short of room, fails its stream with
 * INTERNAL). Each job ends before the next launch takes one, so the five
 * launches that fit the kept room share one job: one is kept at the end
 * (five would mean none was reused; zero, that none was kept). The
 * 4,096-byte one is made to size and freed at its end. A reset frees the
 * kept one: zero after it.
 */
static void a_kept_job_carries_each_launchs_own_args(void **state)
{
    (void)state;
    static const size_t sizes[] = {sizeof(struct sized) + 16, 2048, 4096, 100, 2048,
                                   sizeof(struct sized) + 16};
    enum { LAUNCHES = sizeof sizes / sizeof sizes[0] };
    simdev_stream_t s = ts_new_stream();
    atomic_int ran = 0;
    assert_int_equal(sd_launch_kept_count(0), 0);
    for (int k = 0; k < LAUNCHES; k++) {
        launch_sized(s, &ran, sizes[k]);
        assert_int_equal(simdev_stream_sync(s), 0);
    }
    assert_int_equal(atomic_load(&ran), 2 * LAUNCHES);
    assert_int_equal(sd_launch_kept_count(0), 1);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_device_reset(0), 0);
    assert_int_equal(sd_launch_kept_count(0), 0);
}

/*
 * With a job kept, a launch's host allocation point is still there: the
 * first host allocation after the injection is the launch's job, and its
 * stream fails with OUT_OF_HOST_MEMORY though a kept job was at hand
 * (0 would mean the kept job hid the point, so a sweep over a launch's
 * points would depend on what ran before it). The kept job stays kept,
 * and the next launch runs on it.
 */
static void a_kept_job_keeps_the_launchs_allocation_point(void **state)
{
    (void)state;
    simdev_stream_t s = ts_new_stream();
    atomic_int ran = 0;
    launch_sized(s, &ran, 100);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(sd_launch_kept_count(0), 1);
    struct ts_gate gate;
    ts_gate_init(&gate);
    ts_launch_gate(s, &gate);
    launch_sized(s, &ran, 100);
    ts_gate_wait_arrivals(&gate, 1); /* the stream is held before the launch runs */
    assert_int_equal(simdev_fault_inject_host(1), 0); /* the launch's job */
    ts_gate_open(&gate);
    assert_int_equal(simdev_stream_sync(s), PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
    assert_int_equal(atomic_load(&ran), 2); /* the failed launch never ran */
    assert_int_equal(sd_launch_kept_count(0), 1);
    launch_sized(s, &ran, 100);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&ran), 4);
    assert_int_equal(sd_launch_kept_count(0), 1);
    ts_gate_destroy(&gate);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_device_reset(0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(a_kept_job_carries_each_launchs_own_args),
        SIMPLER_TEST(a_kept_job_keeps_the_launchs_allocation_point),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
