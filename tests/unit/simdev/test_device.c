/*
 * test_device.c — device selection, configuration, idle cost and watchdog.
 *
 * Owns: the per-thread current device, simdev_device_configure's argument
 * and state checks, that an idle device does not burn CPU, and that a hung
 * device function loses the device until it is reset.
 *
 * Objects that device work points at (gates, logs, counters, async copy
 * buffers) are static: a failed assertion leaves the test's frame, and work
 * still queued must not be left pointing into a dead stack.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <cmocka.h>

#include "test_support.h"

static void assert_config_equal(const struct simdev_config *a, const struct simdev_config *b)
{
    assert_int_equal(a->aicpu_threads, b->aicpu_threads);
    assert_int_equal(a->aic_cores, b->aic_cores);
    assert_int_equal(a->aiv_cores, b->aiv_cores);
    assert_int_equal(a->memory_bytes, b->memory_bytes);
    assert_int_equal(a->watchdog_ms, b->watchdog_ms);
    assert_int_equal(a->spin_ns, b->spin_ns);
    assert_int_equal(a->pin_cores, b->pin_cores);
    assert_int_equal(a->runnable_cpus, b->runnable_cpus);
}


/* ------------------------------------------------------ current device */

struct thread_device {
    int initial_status, initial;
    int set_status;
    int after_set;
};

static void *other_thread_devices(void *arg)
{
    struct thread_device *seen = arg;
    seen->initial = -1;
    seen->initial_status = simdev_get_device(&seen->initial);
    seen->set_status = simdev_set_device(5);
    seen->after_set = -1;
    simdev_get_device(&seen->after_set);
    return NULL;
}

static void the_current_device_is_per_thread_and_defaults_to_zero(void **state)
{
    (void)state;
    int device = -1;
    int count = 0;
    assert_int_equal(simdev_device_count(&count), 0);
    assert_int_equal(count, SIMDEV_MAX_DEVICES);

    assert_int_equal(simdev_set_device(3), 0);
    assert_int_equal(simdev_get_device(&device), 0);
    assert_int_equal(device, 3);

    struct thread_device seen;
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, other_thread_devices, &seen), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(seen.initial_status, 0);
    assert_int_equal(seen.initial, 0); /* 3: the current device is process-wide */
    assert_int_equal(seen.set_status, 0);
    assert_int_equal(seen.after_set, 5);

    assert_int_equal(simdev_get_device(&device), 0);
    assert_int_equal(device, 3); /* 5: another thread's choice leaked into this one */

    /* bad ids are rejected and change nothing */
    assert_int_equal(simdev_set_device(-1), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_set_device(SIMDEV_MAX_DEVICES), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_get_device(NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_device_count(NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_device_reset(-1), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_device_reset(SIMDEV_MAX_DEVICES), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_get_device(&device), 0);
    assert_int_equal(device, 3);

    assert_int_equal(simdev_set_device(0), 0);
    assert_int_equal(simdev_device_reset(3), 0);
    assert_int_equal(simdev_device_reset(5), 0);
}

static void calls_without_a_stream_act_on_the_current_device(void **state)
{
    (void)state;
    void *p;
    struct simdev_mem_info info0, info2;
    assert_int_equal(simdev_device_reset(2), 0);
    assert_int_equal(simdev_set_device(2), 0);
    assert_int_equal(simdev_malloc(&p, 4096), 0);
    assert_int_equal(simdev_mem_get_info(2, &info2), 0);
    assert_int_equal(simdev_mem_get_info(0, &info0), 0);
    assert_int_equal(info2.in_use, 4096); /* 0: malloc ignored the current device */
    assert_int_equal(info0.in_use, 0);
    assert_int_equal(simdev_free(p), 0);
    assert_int_equal(simdev_set_device(0), 0);
    assert_int_equal(simdev_device_reset(2), 0);
}

/* ------------------------------------------------------- configuration */

static void config_default_writes_the_documented_defaults(void **state)
{
    (void)state;
    struct simdev_config config;
    memset(&config, 0xff, sizeof config);
    assert_int_equal(simdev_config_default(&config), 0);
    assert_int_equal(config.aicpu_threads, 2);
    assert_int_equal(config.aic_cores, 1);
    assert_int_equal(config.aiv_cores, 2);
    assert_int_equal(config.memory_bytes, 1ull << 30);
    assert_int_equal(config.watchdog_ms, 30000);
    assert_int_equal(config.spin_ns, 50000);
    assert_int_equal(config.pin_cores, 1); /* 0: placement is off unless asked for */
    assert_int_equal(config.runnable_cpus, 0); /* 0: the host's CPUs are the budget */
    assert_int_equal(simdev_config_default(NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
}

static void configure_before_use_replaces_the_topology(void **state)
{
    (void)state;
    struct simdev_config first = ts_small_config(), second = ts_small_config(), got;
    second.aicpu_threads = 3;
    second.aic_cores = 2;
    second.aiv_cores = 5;
    second.memory_bytes = 32u << 20;
    second.watchdog_ms = 1234;
    second.spin_ns = 777;
    second.pin_cores = 0;
    second.runnable_cpus = 3;
    assert_int_equal(simdev_device_reset(0), 0);
    assert_int_equal(simdev_device_configure(0, &first), 0);
    assert_int_equal(simdev_device_configure(0, &second), 0); /* not used yet: allowed */
    assert_int_equal(simdev_device_get_config(0, &got), 0);
    assert_config_equal(&got, &second);

    struct simdev_mem_info info;
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    assert_int_equal(info.capacity, 32u << 20); /* 64 MiB: the first configuration stuck */
}

static void configure_after_first_use_is_invalid_state_until_reset(void **state)
{
    (void)state;
    struct simdev_config used = ts_small_config(), other = ts_small_config(), got;
    other.aiv_cores = 4;
    simdev_stream_t stream;
    static atomic_int ran = 0;
    assert_int_equal(simdev_stream_create(&stream), 0);
    ts_launch_count(stream, &ran); /* the device's threads exist now */
    assert_int_equal(simdev_stream_sync(stream), 0);

    assert_int_equal(simdev_device_configure(0, &other), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simdev_device_get_config(0, &got), 0);
    assert_config_equal(&got, &used); /* aiv 4: a rejected configure changed the topology */
    /* arguments are checked before state */
    assert_int_equal(simdev_device_configure(0, NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_stream_destroy(stream), 0);

    /* a reset keeps the configuration and allows a new one */
    assert_int_equal(simdev_device_reset(0), 0);
    assert_int_equal(simdev_device_get_config(0, &got), 0);
    assert_config_equal(&got, &used);
    assert_int_equal(simdev_device_configure(0, &other), 0);
    assert_int_equal(simdev_device_get_config(0, &got), 0);
    assert_config_equal(&got, &other);
}

static void configure_rejects_out_of_range_fields_and_changes_nothing(void **state)
{
    (void)state;
    const struct simdev_config good = ts_small_config();
    struct simdev_config bad, got;
    const int invalid = PTO_RUNTIME_ERR_INVALID_ARGUMENT;

    bad = good, bad.aicpu_threads = 0;
    assert_int_equal(simdev_device_configure(0, &bad), invalid);
    bad = good, bad.aicpu_threads = SIMDEV_MAX_AICPU_THREADS + 1;
    assert_int_equal(simdev_device_configure(0, &bad), invalid);
    bad = good, bad.aic_cores = 0, bad.aiv_cores = 0;
    assert_int_equal(simdev_device_configure(0, &bad), invalid);
    bad = good, bad.aic_cores = 32, bad.aiv_cores = SIMDEV_MAX_CORES - 32 + 1;
    assert_int_equal(simdev_device_configure(0, &bad), invalid);
    bad = good, bad.aic_cores = UINT32_MAX, bad.aiv_cores = 2; /* the sum wraps */
    assert_int_equal(simdev_device_configure(0, &bad), invalid);
    bad = good, bad.memory_bytes = 0;
    assert_int_equal(simdev_device_configure(0, &bad), invalid);
    bad = good, bad.pin_cores = 2; /* a switch: 0 or 1 */
    assert_int_equal(simdev_device_configure(0, &bad), invalid);
    assert_int_equal(simdev_device_configure(0, NULL), invalid);
    assert_int_equal(simdev_device_configure(-1, &good), invalid);
    assert_int_equal(simdev_device_configure(SIMDEV_MAX_DEVICES, &good), invalid);
    assert_int_equal(simdev_device_get_config(0, NULL), invalid);
    assert_int_equal(simdev_device_get_config(SIMDEV_MAX_DEVICES, &got), invalid);

    assert_int_equal(simdev_device_get_config(0, &got), 0);
    assert_config_equal(&got, &good); /* a rejected configure changed the topology */

    /* the extremes of each range are accepted */
    bad = good, bad.aicpu_threads = SIMDEV_MAX_AICPU_THREADS, bad.aic_cores = 32,
    bad.aiv_cores = SIMDEV_MAX_CORES - 32;
    assert_int_equal(simdev_device_configure(0, &bad), 0);
    bad = good, bad.aicpu_threads = 1, bad.aic_cores = 1, bad.aiv_cores = 0;
    assert_int_equal(simdev_device_configure(0, &bad), 0);
}

/* ----------------------------------------------------------- placement */

/* Each core records the CPUs it may run on: the number, and the first. */
static atomic_int g_core_cpu_count[SIMDEV_MAX_CORES];
static atomic_int g_core_first_cpu[SIMDEV_MAX_CORES];

static int record_affinity_fn(const struct simdev_core_ctx *ctx, const void *args, size_t n)
{
    (void)args;
    (void)n;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return PTO_RUNTIME_ERR_INTERNAL;
    int first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
        if (CPU_ISSET(c, &set))
            first = c;
    atomic_store(&g_core_cpu_count[ctx->core_id], CPU_COUNT(&set));
    atomic_store(&g_core_first_cpu[ctx->core_id], first);
    return 0;
}

/* Launches record_affinity_fn on a fresh device of `cores` AIV cores. */
static void record_core_affinity(uint32_t cores, uint32_t pin)
{
    struct simdev_config config = ts_small_config();
    config.aic_cores = 0;
    config.aiv_cores = cores;
    config.pin_cores = pin;
    ts_device_setup_config(&config);
    simdev_stream_t stream;
    assert_int_equal(simdev_stream_create(&stream), 0);
    assert_int_equal(simdev_launch_aicore(stream, record_affinity_fn, NULL, 0), 0);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(simdev_stream_destroy(stream), 0);
}

static void cores_that_fit_the_host_are_pinned_one_per_cpu_unless_switched_off(void **state)
{
    (void)state;
    cpu_set_t host;
    CPU_ZERO(&host);
    assert_int_equal(sched_getaffinity(0, sizeof host, &host), 0);
    int cpus = CPU_COUNT(&host);
    uint32_t cores = cpus >= 2 ? 2 : 1;

    record_core_affinity(cores, 1);
    for (uint32_t i = 0; i < cores; i++)
        assert_int_equal(atomic_load(&g_core_cpu_count[i]), 1); /* more: not pinned */
    if (cores == 2) /* equal: two cores pinned to one CPU */
        assert_int_not_equal(atomic_load(&g_core_first_cpu[0]),
                             atomic_load(&g_core_first_cpu[1]));

    record_core_affinity(cores, 0);
    for (uint32_t i = 0; i < cores; i++)
        assert_int_equal(atomic_load(&g_core_cpu_count[i]), cpus); /* 1: pinned though off */

    /* more cores than CPUs: nobody is pinned */
    record_core_affinity((uint32_t)cpus + 1, 1);
    for (uint32_t i = 0; i < (uint32_t)cpus + 1; i++)
        assert_int_equal(atomic_load(&g_core_cpu_count[i]), cpus);
    ts_device_setup(NULL);
}

/* ----------------------------------------------------------- idle cost */

static int noop_aicore_fn(const struct simdev_core_ctx *ctx, const void *args, size_t n)
{
    (void)ctx, (void)args, (void)n;
    return 0;
}

static int noop_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t n)
{
    (void)ctx, (void)args, (void)n;
    return 0;
}

static double cpu_seconds(void)
{
    struct rusage usage;
    assert_int_equal(getrusage(RUSAGE_SELF, &usage), 0);
    return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6 +
           (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec / 1e6;
}

static double monotonic_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void an_idle_device_with_16_cores_uses_little_cpu(void **state)
{
    (void)state;
    struct simdev_config config = ts_small_config();
    config.aicpu_threads = 2;
    config.aic_cores = 2;
    config.aiv_cores = 14;
    ts_device_setup_config(&config);

    simdev_stream_t s1, s2;
    assert_int_equal(simdev_stream_create(&s1), 0);
    assert_int_equal(simdev_stream_create(&s2), 0);
    /* every device thread exists and has run once */
    assert_int_equal(simdev_launch_aicore(s1, noop_aicore_fn, NULL, 0), 0);
    assert_int_equal(simdev_launch_aicpu(s2, noop_aicpu_fn, 2, NULL, 0), 0);
    assert_int_equal(simdev_stream_sync(s1), 0);
    assert_int_equal(simdev_stream_sync(s2), 0);

    /*
     * A measurement window, not an ordering device: the test thread sleeps
     * through a fixed stretch of wall time while the device has no work, and
     * the process's CPU time over that stretch is the quantity under test.
     * clock_nanosleep is the only way to let wall time pass without using
     * CPU in this thread.
     */
    const struct timespec window = {0, 300 * 1000 * 1000};
    double cpu_before = cpu_seconds(), wall_before = monotonic_seconds();
    int slept = clock_nanosleep(CLOCK_MONOTONIC, 0, &window, NULL);
    double cpu_used = cpu_seconds() - cpu_before, wall = monotonic_seconds() - wall_before;
    assert_int_equal(slept, 0);
    print_message("idle device: %.1f ms CPU over %.1f ms\n", cpu_used * 1e3, wall * 1e3);
    /* ~2x the window: idle threads spin forever; the bound is generous on purpose */
    assert_true(cpu_used < 0.30 * wall);

    assert_int_equal(simdev_stream_destroy(s1), 0);
    assert_int_equal(simdev_stream_destroy(s2), 0);
}

/* ------------------------------------------------------------ watchdog */

static void a_hung_device_function_loses_the_device_until_reset(void **state)
{
    (void)state;
    struct simdev_config config = ts_small_config();
    config.watchdog_ms = 200;
    ts_device_setup_config(&config);

    static struct ts_gate gate;
    struct ts_gate *gate_arg = &gate;
    simdev_stream_t stream, spare, other = NULL;
    simdev_event_t spare_event, event = NULL;
    unsigned char host[64] = {0};
    void *before_loss, *p = NULL;
    static atomic_int ran = 0;
    ts_gate_init(&gate);
    assert_int_equal(simdev_device_is_lost(0), 0);
    assert_int_equal(simdev_malloc(&before_loss, 4096), 0);
    assert_int_equal(simdev_stream_create(&stream), 0);
    assert_int_equal(simdev_stream_create(&spare), 0);
    assert_int_equal(simdev_event_create(&spare_event), 0);
    assert_int_equal(simdev_launch_aicpu(stream, ts_gate_aicpu_fn, 1, &gate_arg, sizeof gate_arg),
                     0);

    /* the function never returns while the gate is closed; the rescue opens
     * it only if no watchdog ends the sync first */
    struct ts_rescue rescue;
    ts_rescue_start(&rescue, &gate, TS_DEADLOCK_GUARD_MS);
    int sync_status = simdev_stream_sync(stream);
    int rescued = ts_rescue_finish(&rescue);
    int lost = simdev_device_is_lost(0);
    int malloc_status = simdev_malloc(&p, 64);
    int create_status = simdev_stream_create(&other);
    int event_status = simdev_event_create(&event);
    int launch_status = simdev_launch_aicpu(stream, ts_count_aicpu_fn, 1, &(atomic_int *){&ran},
                                            sizeof(atomic_int *));
    int device_sync_status = simdev_device_sync();
    int copy_status = simdev_memcpy(before_loss, host, sizeof host, SIMDEV_COPY_HOST_TO_DEVICE);
    int async_status = simdev_memset_async(before_loss, 0, 64, spare);
    int record_status = simdev_event_record(spare_event, spare);
    int wait_status = simdev_stream_wait_event(spare, spare_event);
    int query_status = simdev_stream_query(spare);
    /* releases still work on a lost device */
    int free_status = simdev_free(before_loss);
    int event_destroy_status = simdev_event_destroy(spare_event);
    int stream_destroy_status = simdev_stream_destroy(spare);
    ts_gate_open(&gate);

    assert_int_equal(rescued, 0); /* 1: no watchdog fired; the test opened the gate */
    assert_int_equal(sync_status, PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(lost, 1);
    assert_int_equal(malloc_status, PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_null(p);
    assert_int_equal(create_status, PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_null(other);
    assert_int_equal(event_status, PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_null(event);
    assert_int_equal(launch_status, PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(device_sync_status, PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(copy_status, PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(async_status, PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(record_status, PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(wait_status, PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(query_status, PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(free_status, 0);
    assert_int_equal(event_destroy_status, 0);
    assert_int_equal(stream_destroy_status, 0);

    /* the reset waits for the released function and makes the device usable */
    assert_int_equal(simdev_device_reset(0), 0);
    assert_int_equal(simdev_device_is_lost(0), 0); /* 1: reset did not clear the loss */
    assert_int_equal(simdev_set_device(0), 0);
    struct simdev_config got;
    assert_int_equal(simdev_device_get_config(0, &got), 0);
    assert_config_equal(&got, &config); /* reset keeps the configuration */
    assert_int_equal(simdev_stream_create(&stream), 0);
    ts_launch_count(stream, &ran);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(atomic_load(&ran), 1); /* 0: the launch refused after reset */
    assert_int_equal(simdev_stream_destroy(stream), 0);
    ts_gate_destroy(&gate);
}

static int fail_with_minus_five(void *unused)
{
    (void)unused;
    return -5;
}

static void *begin_capture_main(void *stream)
{
    return (void *)(intptr_t)simdev_stream_begin_capture(stream);
}

/* After a loss, the calls that would otherwise report an older error or a
 * finished recording say DEVICE_LOST instead. */
static void a_lost_device_wins_over_carried_errors_and_open_captures(void **state)
{
    (void)state;
    struct simdev_config config = ts_small_config();
    config.watchdog_ms = 200;
    ts_device_setup_config(&config);

    static struct ts_gate gate;
    struct ts_gate *gate_arg = &gate;
    ts_gate_init(&gate);
    simdev_stream_t hung, carrier, capturing;
    assert_int_equal(simdev_stream_create(&hung), 0);
    assert_int_equal(simdev_stream_create(&carrier), 0);
    assert_int_equal(simdev_stream_create(&capturing), 0);
    /* carrier carries -5 (not yet synced); capturing is captured by another
     * thread, so this thread may still synchronise. */
    assert_int_equal(simdev_launch_host_func(carrier, fail_with_minus_five, NULL), 0);
    pthread_t thread;
    void *begin_status;
    assert_int_equal(pthread_create(&thread, NULL, begin_capture_main, capturing), 0);
    assert_int_equal(pthread_join(thread, &begin_status), 0);
    assert_int_equal((intptr_t)begin_status, 0);

    assert_int_equal(simdev_launch_aicpu(hung, ts_gate_aicpu_fn, 1, &gate_arg, sizeof gate_arg), 0);
    struct ts_rescue rescue;
    ts_rescue_start(&rescue, &gate, TS_DEADLOCK_GUARD_MS);
    int hung_status = simdev_stream_sync(hung);
    int rescued = ts_rescue_finish(&rescue);
    int carrier_status = simdev_stream_sync(carrier);
    simdev_graph_t graph = NULL;
    int end_status = simdev_stream_end_capture(capturing, &graph);
    int still_capturing = -1;
    simdev_stream_is_capturing(capturing, &still_capturing);
    ts_gate_open(&gate);

    assert_int_equal(rescued, 0); /* 1: no watchdog fired */
    assert_int_equal(hung_status, PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(carrier_status, PTO_RUNTIME_ERR_DEVICE_LOST); /* -5: an old error hid the loss */
    assert_int_equal(end_status, PTO_RUNTIME_ERR_DEVICE_LOST);     /* 0: a graph from a lost device */
    assert_null(graph);
    assert_int_equal(still_capturing, 0); /* 1: the failed end left the capture open */
    assert_int_equal(simdev_device_reset(0), 0);
    ts_gate_destroy(&gate);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(the_current_device_is_per_thread_and_defaults_to_zero),
        SIMPLER_TEST(calls_without_a_stream_act_on_the_current_device),
        SIMPLER_TEST(config_default_writes_the_documented_defaults),
        SIMPLER_TEST(configure_before_use_replaces_the_topology),
        SIMPLER_TEST(configure_after_first_use_is_invalid_state_until_reset),
        SIMPLER_TEST(configure_rejects_out_of_range_fields_and_changes_nothing),
        SIMPLER_TEST(cores_that_fit_the_host_are_pinned_one_per_cpu_unless_switched_off),
        SIMPLER_TEST(an_idle_device_with_16_cores_uses_little_cpu),
        SIMPLER_TEST(a_hung_device_function_loses_the_device_until_reset),
        SIMPLER_TEST(a_lost_device_wins_over_carried_errors_and_open_captures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
