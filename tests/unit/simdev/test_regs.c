/*
 * test_regs.c — per-core register windows (doorbell and condition words).
 *
 * Owns: the register API the device runtime's dispatch protocol is built on:
 * values written are values read, a core waits for its doorbell, an AICPU
 * thread waits for condition writes through the device-wide sequence, and
 * both waits time out when nothing is written; the AICPU-to-AICPU signals
 * (platform_cond_signal and the notification channels).
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "platform/platform.h"
#include "test_support.h"

/*
 * Device-side deadlock guards: a correct peer answers long before either.
 * The AICPU side gives up first, on purpose: a core that missed its doorbell
 * wake-up sleeps until its own guard and then still finds the new value (so
 * it reports success); only the AICPU side, left without an echo, can turn
 * that lost wake-up into a failure.
 */
#define GUARD_NS (20ull * 1000 * 1000 * 1000)
#define AICPU_GUARD_NS (10ull * 1000 * 1000 * 1000)
/* A wait that nothing will satisfy; its length is not under test. */
#define SHORT_TIMEOUT_NS (2ull * 1000 * 1000)

static void register_windows_hold_the_last_written_values(void **state)
{
    (void)state;
    simdev_stream_t stream;
    assert_int_equal(simdev_stream_create(&stream), 0); /* the device is in use */

    struct simdev_core_regs *r0 = platform_core_regs(0, 0);
    struct simdev_core_regs *r1 = platform_core_regs(0, 1);
    struct simdev_core_regs *r2 = platform_core_regs(0, 2);
    assert_non_null(r0);
    assert_non_null(r1);
    assert_non_null(r2);
    assert_ptr_not_equal(r0, r1); /* equal: two cores share one window */
    assert_ptr_not_equal(r1, r2);
    assert_null(platform_core_regs(0, 3)); /* the fixture has 3 cores */
    assert_null(platform_core_regs(-1, 0));
    assert_null(platform_core_regs(SIMDEV_MAX_DEVICES, 0));

    /* Reading: a fresh device's registers read zero, as hardware after reset. */
    assert_int_equal(platform_read_doorbell(r0), 0);
    assert_int_equal(platform_read_cond(r0), 0);

    platform_ring_doorbell(r0, 5);
    assert_int_equal(platform_read_doorbell(r0), 5);
    assert_int_equal(platform_read_doorbell(r1), 0); /* 5: windows are not independent */
    uint64_t value = 0;
    /* the doorbell already differs from last_seen: no waiting */
    assert_int_equal(platform_wait_doorbell(r0, 0, GUARD_NS, &value), 0);
    assert_int_equal(value, 5);

    uint64_t seq = platform_cond_seq(0);
    platform_write_cond(r1, 9);
    assert_int_equal(platform_read_cond(r1), 9);
    assert_int_equal(platform_read_cond(r0), 0);
    assert_int_not_equal(platform_cond_seq(0), seq); /* equal: a condition write was not counted */
    assert_int_equal(platform_cond_wait(0, seq, GUARD_NS), 0); /* the sequence already moved */

    assert_int_equal(simdev_stream_destroy(stream), 0);
}

/* ------------------------------------------------------------- echo test */

#define ECHO_CORES 2
#define ECHO_ROUNDS 5000 /* per core: 10000 round trips in all */
#define STOP UINT64_MAX

struct echo_report {
    atomic_int echoes[ECHO_CORES];     /* condition writes per core */
    atomic_int core_errors;            /* a core saw an unexpected doorbell */
    atomic_int core_wait_status;       /* first nonzero wait status of a core */
    atomic_int aicpu_errors;           /* an AICPU thread saw an unexpected echo */
    atomic_int aicpu_wait_status;      /* first nonzero wait status of an AICPU thread */
    atomic_uint_fast64_t last_echo[ECHO_CORES];
};

static int echo_core_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    struct echo_report *report;
    if (args_size != sizeof report)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&report, args, sizeof report);
    uint64_t last = 0;
    for (;;) {
        uint64_t value;
        int rc = platform_wait_doorbell(ctx->regs, last, GUARD_NS, &value);
        if (rc != 0) {
            atomic_store(&report->core_wait_status, rc);
            return rc;
        }
        if (value == STOP)
            return 0;
        if (value != last + 1) /* the AICPU rings r+1 only after the echo of r */
            atomic_fetch_add(&report->core_errors, 1);
        last = value;
        atomic_fetch_add(&report->echoes[ctx->core_id], 1);
        platform_write_cond(ctx->regs, value + 1);
    }
}

/* Waits until `core`'s condition word holds `want`; `before` is the only
 * other value it may hold meanwhile. */
static int wait_echo(int device, struct simdev_core_regs *regs, uint64_t want, uint64_t before,
                     struct echo_report *report)
{
    for (;;) {
        /* read the sequence before the word, so a write between the two
         * makes the wait return at once instead of being missed */
        uint64_t seq = platform_cond_seq(device);
        uint64_t value = platform_read_cond(regs);
        if (value == want)
            return 0;
        if (value != before) {
            atomic_fetch_add(&report->aicpu_errors, 1);
            return PTO_RUNTIME_ERR_INTERNAL;
        }
        int rc = platform_cond_wait(device, seq, AICPU_GUARD_NS);
        if (rc != 0) {
            atomic_store(&report->aicpu_wait_status, rc);
            return rc;
        }
    }
}

/* AICPU thread t drives core t: ring r, wait for the echo r+1, repeat. */
static int echo_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    struct echo_report *report;
    if (args_size != sizeof report)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&report, args, sizeof report);
    uint32_t core = ctx->thread_index;
    struct simdev_core_regs *regs = platform_core_regs(ctx->device, core);
    if (regs == NULL)
        return PTO_RUNTIME_ERR_INTERNAL;
    int status = 0;
    for (uint64_t r = 1; r <= ECHO_ROUNDS && status == 0; r++) {
        platform_ring_doorbell(regs, r);
        status = wait_echo(ctx->device, regs, r + 1, r == 1 ? 0 : r, report);
    }
    atomic_store(&report->last_echo[core], platform_read_cond(regs));
    platform_ring_doorbell(regs, STOP); /* also on failure: the core must not hang */
    return status;
}

static void aicpu_and_core_echo_10000_round_trips_with_exact_values(void **state)
{
    (void)state;
    struct simdev_config config = ts_small_config();
    config.aiv_cores = 1;
    ts_device_setup_config(&config);

    static struct echo_report report;
    memset(&report, 0, sizeof report);
    struct echo_report *arg = &report;
    simdev_stream_t cores, aicpu;
    assert_int_equal(simdev_stream_create(&cores), 0);
    assert_int_equal(simdev_stream_create(&aicpu), 0);
    assert_int_equal(simdev_launch_aicore(cores, echo_core_fn, &arg, sizeof arg), 0);
    assert_int_equal(simdev_launch_aicpu(aicpu, echo_aicpu_fn, ECHO_CORES, &arg, sizeof arg), 0);
    assert_int_equal(simdev_stream_sync(aicpu), 0);
    assert_int_equal(simdev_stream_sync(cores), 0);

    assert_int_equal(atomic_load(&report.core_wait_status), 0); /* TIMEOUT: a ring was lost */
    assert_int_equal(atomic_load(&report.aicpu_wait_status), 0); /* TIMEOUT: an echo was lost */
    assert_int_equal(atomic_load(&report.core_errors), 0);  /* a doorbell value skipped or repeated */
    assert_int_equal(atomic_load(&report.aicpu_errors), 0); /* a condition word held a stale value */
    for (int c = 0; c < ECHO_CORES; c++) {
        assert_int_equal(atomic_load(&report.echoes[c]), ECHO_ROUNDS);
        assert_int_equal(atomic_load(&report.last_echo[c]), ECHO_ROUNDS + 1);
        assert_int_equal(platform_read_cond(platform_core_regs(0, (uint32_t)c)),
                         ECHO_ROUNDS + 1);
        assert_int_equal(platform_read_doorbell(platform_core_regs(0, (uint32_t)c)), STOP);
    }
    assert_int_equal(simdev_stream_destroy(cores), 0);
    assert_int_equal(simdev_stream_destroy(aicpu), 0);
}

/* ------------------------------------------------------ runnable budget */

/* A device of `cores` AIV cores (and 2 AICPU threads) whose idle cores
 * spin without end unless the runnable budget of `runnable_cpus` (or
 * placement) parks them. */
static void setup_idle_cores(uint32_t cores, uint32_t runnable_cpus)
{
    struct simdev_config config = ts_small_config();
    config.aicpu_threads = 2;
    config.aic_cores = 0;
    config.aiv_cores = cores;
    config.spin_ns = UINT32_MAX;
    config.runnable_cpus = runnable_cpus;
    ts_device_setup_config(&config);
}

/* Each core waits for one ring of its doorbell and returns what the wait
 * did. */
/* Cores of budget_core_fn that read their doorbell and are about to wait. */
static atomic_int budget_cores_waiting;

static int budget_core_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    atomic_int *status;
    if (args_size != sizeof status)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&status, args, sizeof status);
    uint64_t value;
    uint64_t seen = platform_read_doorbell(ctx->regs);
    atomic_fetch_add(&budget_cores_waiting, 1);
    atomic_store(&status[ctx->core_id], platform_wait_doorbell(ctx->regs, seen, 0, &value));
    return 0;
}

static uint32_t parked_cores(uint32_t cores)
{
    uint32_t n = 0;
    for (uint32_t c = 0; c < cores; c++)
        n += platform_hint_core_parked(platform_core_regs(0, c)) ? 1 : 0;
    return n;
}

/*
 * Two idle cores, a budget of one runnable device thread and a spin of
 * 4 s: exactly one core gives its CPU up and parks (at once, not after its
 * spin), and the other keeps spinning (1 parked: the budget's
 * compare-and-swap let only the excess go). A ring wakes the parked one
 * and both waits end with the value rung.
 */
static void an_idle_core_over_the_runnable_budget_parks_and_the_other_spins(void **state)
{
    (void)state;
    setup_idle_cores(2, 1);
    static atomic_int status[2];
    atomic_store(&status[0], 1);
    atomic_store(&status[1], 1);
    atomic_int *arg = status;
    simdev_stream_t stream;
    assert_int_equal(simdev_stream_create(&stream), 0);
    atomic_store(&budget_cores_waiting, 0);
    assert_int_equal(simdev_launch_aicore(stream, budget_core_fn, &arg, sizeof arg), 0);
    /* Both cores read their doorbell before it is rung (a core that began
     * after the ring would wait for a second one): the budget counts a
     * core from its launch on, so one may park before the other began. */
    while (atomic_load(&budget_cores_waiting) < 2)
        sched_yield();
    /* Who ends this wait: the budget parks a core within about a
     * microsecond of both waiting (else the test's hang guard). */
    while (parked_cores(2) == 0)
        sched_yield();
    assert_int_equal(parked_cores(2), 1); /* 2: the budget parked both; 0 cannot be */
    uint32_t parked = platform_hint_core_parked(platform_core_regs(0, 0)) ? 0 : 1;
    assert_int_equal(platform_hint_core_parked(platform_core_regs(0, 1 - parked)), 0);
    platform_ring_doorbell(platform_core_regs(0, parked), 7);
    platform_ring_doorbell(platform_core_regs(0, 1 - parked), 7);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(atomic_load(&status[0]), 0); /* 1: the core never returned */
    assert_int_equal(atomic_load(&status[1]), 0);
    assert_int_equal(parked_cores(2), 0);
    assert_int_equal(simdev_stream_destroy(stream), 0);
}

/* Records what the budget says inside a core's job: before any wait
 * (has_room), and on every poll of its doorbell wait's predicate (fits),
 * until the host rings. */
struct budget_report {
    atomic_int room[SIMDEV_MAX_CORES];
    atomic_int fits[SIMDEV_MAX_CORES]; /* -1 until the predicate ran */
};

struct budget_poll {
    struct budget_report *r;
    uint32_t core;
};

static int record_fits(void *arg)
{
    struct budget_poll *p = arg;
    atomic_store(&p->r->fits[p->core], platform_hint_budget_fits());
    return 0;
}

static int budget_report_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    struct budget_report *r;
    if (args_size != sizeof r)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&r, args, sizeof r);
    atomic_store(&r->room[ctx->core_id], platform_hint_budget_has_room());
    struct budget_poll poll = {r, ctx->core_id};
    uint64_t value;
    return platform_wait_doorbell_or(ctx->regs, platform_read_doorbell(ctx->regs), 0,
                                        &value, record_fits, &poll);
}

static void budget_report_reset(struct budget_report *r)
{
    for (int c = 0; c < SIMDEV_MAX_CORES; c++) {
        atomic_store(&r->room[c], -1);
        atomic_store(&r->fits[c], -1);
    }
}

/*
 * One core alone in its job: the budget has room for another device
 * thread only when runnable_cpus exceeds the one awake (0 with a budget of
 * 1, 1 with 2), and the core itself fits (1). Outside a device thread both
 * answers are 1 (no budget to keep).
 */
static void budget_room_counts_the_threads_awake_in_a_job(void **state)
{
    (void)state;
    assert_int_equal(platform_hint_budget_has_room(), 1);
    assert_int_equal(platform_hint_budget_fits(), 1);
    static struct budget_report report;
    struct budget_report *arg = &report;
    for (uint32_t cpus = 1; cpus <= 2; cpus++) {
        struct simdev_config config = ts_small_config();
        config.aic_cores = 0;
        config.aiv_cores = 1;
        config.runnable_cpus = cpus;
        ts_device_setup_config(&config);
        budget_report_reset(&report);
        simdev_stream_t stream;
        assert_int_equal(simdev_stream_create(&stream), 0);
        assert_int_equal(simdev_launch_aicore(stream, budget_report_fn, &arg, sizeof arg), 0);
        /* Who ends this wait: the core's predicate runs as soon as it waits. */
        while (atomic_load(&report.fits[0]) == -1)
            sched_yield();
        platform_ring_doorbell(platform_core_regs(0, 0), 3);
        assert_int_equal(simdev_stream_sync(stream), 0);
        /* 1 with one CPU: a woken thread would take this core's CPU */
        assert_int_equal(atomic_load(&report.room[0]), cpus == 2 ? 1 : 0);
        assert_int_equal(atomic_load(&report.fits[0]), 1); /* 0: it counted itself twice */
        assert_int_equal(simdev_stream_destroy(stream), 0);
    }
}

/*
 * Two idle cores under a budget of one: the one the budget parked does not
 * fit (it would be a second awake thread: its last look before sleeping
 * says 0) and the one spinning does (1). A predicate that takes work only
 * when it fits leaves the work to the spinner.
 */
static void a_core_parked_by_the_budget_does_not_fit_and_the_spinner_does(void **state)
{
    (void)state;
    setup_idle_cores(2, 1);
    static struct budget_report report;
    budget_report_reset(&report);
    struct budget_report *arg = &report;
    simdev_stream_t stream;
    assert_int_equal(simdev_stream_create(&stream), 0);
    assert_int_equal(simdev_launch_aicore(stream, budget_report_fn, &arg, sizeof arg), 0);
    /* Who ends these waits: the budget parks one core within about a
     * microsecond of both waiting; the other polls without end. */
    while (parked_cores(2) == 0)
        sched_yield();
    uint32_t parked = platform_hint_core_parked(platform_core_regs(0, 0)) ? 0 : 1;
    while (atomic_load(&report.fits[1 - parked]) != 1) /* its polls go on: hang guard */
        sched_yield();
    assert_int_equal(atomic_load(&report.fits[parked]), 0); /* 1: parked yet counted awake */
    platform_ring_doorbell(platform_core_regs(0, 0), 3);
    platform_ring_doorbell(platform_core_regs(0, 1), 3);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(simdev_stream_destroy(stream), 0);
}

/* ------------------------------------------------------------- placement */

/* The host CPUs this process may use. */
static uint32_t host_cpu_count(cpu_set_t *set)
{
    CPU_ZERO(set);
    assert_int_equal(sched_getaffinity(0, sizeof *set, set), 0);
    return (uint32_t)CPU_COUNT(set);
}

/* The host's CPUs in *all, for the placement tests (skipped on one CPU,
 * where there is nothing to place, or more than simdev looks at). */
static void cpus_to_place_on(cpu_set_t *all)
{
    uint32_t n = host_cpu_count(all);
    if (n < 2 || n > SIMDEV_MAX_CORES + 1)
        skip();
}

/* A device of `aicpu_threads` AICPU threads and one AIV core, pinned or
 * not. */
static void setup_one_core_and_aicpu_threads(uint32_t pin_cores, uint32_t aicpu_threads)
{
    struct simdev_config config = ts_small_config();
    config.aicpu_threads = aicpu_threads;
    config.aic_cores = 0;
    config.aiv_cores = 1;
    config.pin_cores = pin_cores;
    ts_device_setup_config(&config);
}

/* The same with two AICPU threads. */
static void setup_one_core(uint32_t pin_cores)
{
    setup_one_core_and_aicpu_threads(pin_cores, 2);
}

/* One core per host CPU, for the tests where the cores fill them all
 * (skipped on one CPU, or more CPUs than a device has cores). */
static uint32_t cores_to_fill_cpus(void)
{
    cpu_set_t all;
    uint32_t n = host_cpu_count(&all);
    if (n < 2 || n > SIMDEV_MAX_CORES)
        skip();
    return n;
}

struct placement_report {
    cpu_set_t affinity[2]; /* of each AICPU thread of the job, in the job */
    /* platform_hint_core_shares_my_cpu of each core, likewise (the last
     * thread's written before `recorded`) */
    int shares[2][SIMDEV_MAX_CORES];
    atomic_int recorded;   /* set (release) once the last thread's is written */
    atomic_int hold;       /* the last thread stays awake while set */
};

static int placement_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args,
                              size_t args_size)
{
    struct placement_report *r;
    if (args_size != sizeof r || ctx->thread_index >= 2)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&r, args, sizeof r);
    if (sched_getaffinity(0, sizeof r->affinity[0], &r->affinity[ctx->thread_index]) != 0)
        return PTO_RUNTIME_ERR_INTERNAL;
    struct simdev_config config;
    if (simdev_device_get_config(ctx->device, &config) != 0)
        return PTO_RUNTIME_ERR_INTERNAL;
    for (uint32_t c = 0; c < config.aic_cores + config.aiv_cores; c++)
        r->shares[ctx->thread_index][c] =
            platform_hint_core_shares_my_cpu(platform_core_regs(ctx->device, c));
    if (ctx->thread_index + 1 == ctx->thread_count) {
        atomic_store_explicit(&r->recorded, 1, memory_order_release);
        while (atomic_load(&r->hold)) /* awake, counted: the host ends it */
            sched_yield();
    }
    return 0;
}

static void launch_placement(struct placement_report *r, simdev_stream_t stream, uint32_t threads)
{
    assert_int_equal(simdev_launch_aicpu(stream, placement_aicpu_fn, threads, &r, sizeof r), 0);
}

/* The two streams of a placement test: the caller's AICPU job goes on
 * `aicpu`, every core's doorbell wait (launch_reports) on `cores`. */
static void open_placement_streams(simdev_stream_t *aicpu, simdev_stream_t *cores)
{
    assert_int_equal(simdev_stream_create(aicpu), 0);
    assert_int_equal(simdev_stream_create(cores), 0);
}

/* Every core waits for one ring, reporting what the budget says to it. */
static void launch_reports(struct budget_report *report, simdev_stream_t cores)
{
    budget_report_reset(report);
    assert_int_equal(simdev_launch_aicore(cores, budget_report_fn, &report, sizeof report), 0);
}

/* Ends the cores' waits (a ring each) once the AICPU job has ended. */
static void close_placement_streams(uint32_t cores_n, simdev_stream_t aicpu,
                                    simdev_stream_t cores)
{
    for (uint32_t c = 0; c < cores_n; c++)
        platform_ring_doorbell(platform_core_regs(0, c), 3);
    assert_int_equal(simdev_stream_sync(cores), 0);
    assert_int_equal(simdev_stream_destroy(aicpu), 0);
    assert_int_equal(simdev_stream_destroy(cores), 0);
}

/* The host's CPUs in `all`; in `others`, all of them but the last, which
 * the function returns. */
static int last_and_other_cpus(cpu_set_t *all, cpu_set_t *others)
{
    cpus_to_place_on(all);
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, all))
            last = c;
    *others = *all;
    CPU_CLR(last, others);
    return last;
}

/*
 * With the cores pinned one per CPU, the last thread of an AICPU job of
 * two threads (the runtime's orchestrator) runs only on the last host CPU,
 * and the other thread (a scheduler) and a job of one thread (a loader,
 * kernel mode's status op) only off it, job after job and whichever worker ran what
 * before. Without pinning nobody is pinned.
 */
static void a_jobs_last_aicpu_thread_runs_on_the_last_cpu_and_the_others_off_it(void **state)
{
    (void)state;
    cpu_set_t all, others;
    int last = last_and_other_cpus(&all, &others);
    for (uint32_t pinned = 0; pinned <= 1; pinned++) {
        setup_one_core(pinned);
        static struct placement_report report, single;
        memset(&report, 0, sizeof report);
        memset(&single, 0, sizeof single);
        simdev_stream_t stream;
        assert_int_equal(simdev_stream_create(&stream), 0);
        for (int job = 0; job < 2; job++) {
            launch_placement(&report, stream, 2);
            launch_placement(&single, stream, 1);
            assert_int_equal(simdev_stream_sync(stream), 0);
            if (pinned) {
                assert_int_equal(CPU_COUNT(&report.affinity[1]), 1); /* n: not pinned */
                assert_true(CPU_ISSET(last, &report.affinity[1])); /* another CPU */
                /* all: the scheduler may queue behind the orchestrator */
                assert_true(CPU_EQUAL(&report.affinity[0], &others));
                /* all, or the last CPU: a one-thread job took the place */
                assert_true(CPU_EQUAL(&single.affinity[0], &others));
            } else {
                assert_true(CPU_EQUAL(&report.affinity[1], &all));
                assert_true(CPU_EQUAL(&report.affinity[0], &all));
                assert_true(CPU_EQUAL(&single.affinity[0], &all));
            }
        }
        assert_int_equal(simdev_stream_destroy(stream), 0);
    }
}

/*
 * Two AICPU jobs of two threads each at once (two runs on one device):
 * the first to begin has the last CPU for its length, the other's last
 * thread runs off it like every other AICPU thread (one orchestrator
 * place; two pinned to one CPU would share it while others idle), and once
 * the first has ended the place is free again.
 */
static void one_aicpu_thread_at_a_time_has_the_orchestrators_place(void **state)
{
    (void)state;
    cpu_set_t all, others;
    int last = last_and_other_cpus(&all, &others);
    setup_one_core_and_aicpu_threads(1, 4);
    static struct placement_report first, second, third;
    memset(&first, 0, sizeof first);
    memset(&second, 0, sizeof second);
    memset(&third, 0, sizeof third);
    atomic_store(&first.hold, 1);
    simdev_stream_t a, b;
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_stream_create(&b), 0);
    launch_placement(&first, a, 2);
    /* Who ends this wait: the first job's last thread records its
     * affinity at once and then holds until told. */
    while (!atomic_load_explicit(&first.recorded, memory_order_acquire))
        sched_yield();
    launch_placement(&second, b, 2);
    assert_int_equal(simdev_stream_sync(b), 0);
    assert_int_equal(CPU_COUNT(&first.affinity[1]), 1);            /* n: no place */
    assert_true(CPU_ISSET(last, &first.affinity[1]));              /* another CPU */
    assert_true(CPU_EQUAL(&second.affinity[1], &others));          /* last: two in one place */
    atomic_store(&first.hold, 0);
    assert_int_equal(simdev_stream_sync(a), 0);
    launch_placement(&third, b, 2);
    assert_int_equal(simdev_stream_sync(b), 0);
    assert_int_equal(CPU_COUNT(&third.affinity[1]), 1); /* n: the place was not given back */
    assert_true(CPU_ISSET(last, &third.affinity[1]));
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
}

/*
 * The cores fill every host CPU, so the last core shares its CPU with an
 * AICPU job's last thread. While that thread is awake the last core gives
 * way when idle: it parks although the runnable budget (set above the
 * threads awake) has room, and its predicate hears it does not fit (0),
 * while core 0 fits (1) and keeps spinning. Without the job's thread awake
 * nothing would park it: its spin is endless.
 */
static void the_core_sharing_the_orchestrators_cpu_gives_way_while_it_is_awake(void **state)
{
    (void)state;
    uint32_t n = cores_to_fill_cpus();
    setup_idle_cores(n, n + 2); /* the global budget never parks anyone */
    static struct placement_report placement;
    memset(&placement, 0, sizeof placement);
    atomic_store(&placement.hold, 1);
    static struct budget_report report;
    simdev_stream_t aicpu, cores;
    open_placement_streams(&aicpu, &cores);
    launch_placement(&placement, aicpu, 2);
    launch_reports(&report, cores);
    struct simdev_core_regs *mate = platform_core_regs(0, n - 1);
    /* Who ends this wait: the mate rule parks core n-1 within about a
     * microsecond of its wait (else the test's hang guard). */
    while (!platform_hint_core_parked(mate))
        sched_yield();
    assert_int_equal(atomic_load(&report.fits[n - 1]), 0); /* 1: the mate rule is off */
    while (atomic_load(&report.fits[0]) != 1) /* core 0 polls on: hang guard */
        sched_yield();
    assert_int_equal(platform_hint_core_parked(platform_core_regs(0, 0)), 0); /* 1: parked too */
    /* What a dispatcher is told: ringing the mate would take the awake
     * AICPU thread's CPU; core 0 shares its CPU with no orchestrator. */
    assert_int_equal(platform_hint_core_gives_way(mate), 1);
    assert_int_equal(platform_hint_core_gives_way(platform_core_regs(0, 0)), 0);
    /* What the job's last thread heard: it shares its CPU with the mate
     * alone; the host (no device thread) shares one with none. Who ends
     * this wait: the last thread sets `recorded` right after it asked. */
    while (!atomic_load_explicit(&placement.recorded, memory_order_acquire))
        sched_yield();
    for (uint32_t c = 0; c < n; c++) {
        assert_int_equal(placement.shares[1][c], c == n - 1); /* else: the wrong core */
        assert_int_equal(platform_hint_core_shares_my_cpu(platform_core_regs(0, c)), 0);
    }
    atomic_store(&placement.hold, 0);
    assert_int_equal(simdev_stream_sync(aicpu), 0);
    assert_int_equal(platform_hint_core_gives_way(mate), 0); /* 1: the place outlived its job */
    close_placement_streams(n, aicpu, cores);
}

/* Every thread of the job stays awake (spinning, counted) while `hold`. */
static int hold_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    atomic_int *hold;
    if (args_size != sizeof hold)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&hold, args, sizeof hold);
    while (atomic_load(hold))
        sched_yield();
    return 0;
}

/*
 * With the default budget (the host's CPUs) and the cores pinned one per
 * CPU, two awake AICPU threads put more threads awake than CPUs; the core
 * sharing the orchestrator's CPU gives way, and the others, each alone on
 * its CPU, keep spinning: the excess is not on their CPUs, and parking
 * them would only leave those idle.
 */
static void a_core_alone_on_its_cpu_spins_on_over_the_device_budget(void **state)
{
    (void)state;
    uint32_t n = cores_to_fill_cpus();
    setup_idle_cores(n, 0);
    static atomic_int hold;
    atomic_store(&hold, 1);
    atomic_int *hold_arg = &hold;
    static struct budget_report report;
    simdev_stream_t aicpu, cores;
    open_placement_streams(&aicpu, &cores);
    assert_int_equal(simdev_launch_aicpu(aicpu, hold_aicpu_fn, 2, &hold_arg, sizeof hold_arg), 0);
    launch_reports(&report, cores);
    /* Who ends these waits: the mate rule parks core n-1 within about a
     * microsecond of its wait, and the others poll on (else the test's
     * hang guard: a core parked by the device-wide count polls no more,
     * its last answer 0). */
    while (!platform_hint_core_parked(platform_core_regs(0, n - 1)))
        sched_yield();
    for (uint32_t c = 0; c + 1 < n; c++)
        while (atomic_load(&report.fits[c]) != 1)
            sched_yield();
    for (uint32_t c = 0; c + 1 < n; c++) /* 1: the device-wide count parked it */
        assert_int_equal(platform_hint_core_parked(platform_core_regs(0, c)), 0);
    atomic_store(&hold, 0);
    assert_int_equal(simdev_stream_sync(aicpu), 0);
    close_placement_streams(n, aicpu, cores);
}

/* ------------------------------------------------- wait with a predicate */

struct also_report {
    atomic_int flag;      /* the predicate's answer, set by the host */
    atomic_int calls;     /* how often the core polled it */
    atomic_int status[2]; /* of the two waits */
    _Atomic uint64_t value[2];
};

static int also_flag(void *arg)
{
    struct also_report *r = arg;
    atomic_fetch_add(&r->calls, 1);
    return atomic_load(&r->flag);
}

/* The first wait ends by the predicate, the second by a ring. */
static int also_core_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    struct also_report *r;
    if (args_size != sizeof r)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&r, args, sizeof r);
    uint64_t last = platform_read_doorbell(ctx->regs), value = 0;
    atomic_store(&r->status[0],
                 platform_wait_doorbell_or(ctx->regs, last, 0, &value, also_flag, r));
    atomic_store(&r->value[0], value);
    atomic_store(&r->flag, 0);
    platform_write_cond(ctx->regs, 1); /* tells the host the first wait ended */
    atomic_store(&r->status[1],
                 platform_wait_doorbell_or(ctx->regs, last, 0, &value, also_flag, r));
    atomic_store(&r->value[1], value);
    return 0;
}

/* platform_wait_doorbell_or: a predicate that turns true ends the wait
 * with the doorbell's old value (the caller's sign that it was the
 * predicate); a ring ends it with the value rung; bad arguments change
 * nothing. */
static void core_wait_doorbell_or_ends_on_its_predicate_or_a_ring(void **state)
{
    (void)state;
    struct simdev_config config = ts_small_config();
    config.aic_cores = 0;
    config.aiv_cores = 1;
    ts_device_setup_config(&config);
    static struct also_report report;
    memset(&report, 0, sizeof report);
    struct also_report *arg = &report;
    struct simdev_core_regs *regs = platform_core_regs(0, 0);
    uint64_t v = 5;
    assert_int_equal(platform_wait_doorbell_or(NULL, 0, 0, &v, also_flag, arg),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(platform_wait_doorbell_or(regs, 0, 0, NULL, also_flag, arg),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(v, 5); /* written by a rejected call */
    uint64_t base = platform_read_doorbell(regs);
    simdev_stream_t stream;
    assert_int_equal(simdev_stream_create(&stream), 0);
    assert_int_equal(simdev_launch_aicore(stream, also_core_fn, &arg, sizeof arg), 0);
    /* Who ends these waits: the core polls the predicate while it spins
     * (50 us) and once more before it parks, so the flag ends its first
     * wait at once or, if it parked, the ring below does. */
    while (atomic_load(&report.calls) == 0)
        sched_yield();
    atomic_store(&report.flag, 1);
    while (platform_read_cond(regs) != 1) {
        if (platform_hint_core_parked(regs)) /* parked before it saw the flag */
            platform_ring_doorbell(regs, base);
        sched_yield();
    }
    platform_ring_doorbell(regs, base + 9);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(atomic_load(&report.status[0]), 0);
    assert_int_equal(atomic_load(&report.value[0]), base); /* base + 9: the ring came first */
    assert_int_equal(atomic_load(&report.status[1]), 0);
    assert_int_equal(atomic_load(&report.value[1]), base + 9); /* base: the cleared flag fired */
    assert_int_equal(simdev_stream_destroy(stream), 0);
}

/* --------------------------------------------------------------- timeouts */

struct timeout_report {
    atomic_int status[SIMDEV_MAX_CORES];
    atomic_int value_written[SIMDEV_MAX_CORES]; /* *value changed on failure */
};

static int doorbell_timeout_core_fn(const struct simdev_core_ctx *ctx, const void *args,
                                    size_t args_size)
{
    struct timeout_report *report;
    if (args_size != sizeof report)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&report, args, sizeof report);
    uint64_t value = 0xabcdef;
    int rc = platform_wait_doorbell(ctx->regs, platform_read_doorbell(ctx->regs),
                                       SHORT_TIMEOUT_NS, &value);
    atomic_store(&report->status[ctx->core_id], rc);
    atomic_store(&report->value_written[ctx->core_id], value != 0xabcdef);
    return 0;
}

static void core_wait_doorbell_times_out_when_nothing_rings(void **state)
{
    (void)state;
    static struct timeout_report report;
    memset(&report, 0, sizeof report);
    struct timeout_report *arg = &report;
    simdev_stream_t stream;
    assert_int_equal(simdev_stream_create(&stream), 0);
    assert_int_equal(simdev_launch_aicore(stream, doorbell_timeout_core_fn, &arg, sizeof arg), 0);
    assert_int_equal(simdev_stream_sync(stream), 0);
    for (int c = 0; c < 3; c++) {
        /* 0: the wait returned without a ring */
        assert_int_equal(atomic_load(&report.status[c]), PTO_RUNTIME_ERR_TIMEOUT);
        assert_int_equal(atomic_load(&report.value_written[c]), 0);
    }
    assert_int_equal(simdev_stream_destroy(stream), 0);
}

static int cond_timeout_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args,
                                 size_t args_size)
{
    struct timeout_report *report;
    if (args_size != sizeof report)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&report, args, sizeof report);
    int rc = platform_cond_wait(ctx->device, platform_cond_seq(ctx->device), SHORT_TIMEOUT_NS);
    atomic_store(&report->status[ctx->thread_index], rc);
    return 0;
}

static void cond_wait_times_out_when_no_core_writes(void **state)
{
    (void)state;
    static struct timeout_report report;
    memset(&report, 0, sizeof report);
    struct timeout_report *arg = &report;
    simdev_stream_t stream;
    assert_int_equal(simdev_stream_create(&stream), 0);
    assert_int_equal(simdev_launch_aicpu(stream, cond_timeout_aicpu_fn, 2, &arg, sizeof arg), 0);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(atomic_load(&report.status[0]), PTO_RUNTIME_ERR_TIMEOUT);
    assert_int_equal(atomic_load(&report.status[1]), PTO_RUNTIME_ERR_TIMEOUT);
    assert_int_equal(simdev_stream_destroy(stream), 0);
}

struct lost_report {
    atomic_int core_status;  /* core 0's doorbell wait */
    atomic_int aicpu_status; /* AICPU thread 0's condition wait */
};

static int wait_forever_core_fn(const struct simdev_core_ctx *ctx, const void *args,
                                size_t args_size)
{
    struct lost_report *report;
    if (args_size != sizeof report)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&report, args, sizeof report);
    if (ctx->core_id != 0)
        return 0;
    uint64_t value;
    /* nothing rings: only the loss of the device (or the guard) ends this */
    int rc = platform_wait_doorbell(ctx->regs, platform_read_doorbell(ctx->regs), GUARD_NS,
                                       &value);
    atomic_store(&report->core_status, rc);
    return rc;
}

static int wait_forever_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args,
                                 size_t args_size)
{
    struct lost_report *report;
    if (args_size != sizeof report)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&report, args, sizeof report);
    int rc = platform_cond_wait(ctx->device, platform_cond_seq(ctx->device), GUARD_NS);
    atomic_store(&report->aicpu_status, rc);
    return rc;
}

static void register_waits_return_device_lost_when_the_watchdog_loses_the_device(void **state)
{
    (void)state;
    struct simdev_config config = ts_small_config();
    config.watchdog_ms = 200;
    ts_device_setup_config(&config);

    static struct lost_report report;
    atomic_store(&report.core_status, 1);
    atomic_store(&report.aicpu_status, 1);
    struct lost_report *arg = &report;
    simdev_stream_t cores, aicpu;
    assert_int_equal(simdev_stream_create(&cores), 0);
    assert_int_equal(simdev_stream_create(&aicpu), 0);
    assert_int_equal(simdev_launch_aicore(cores, wait_forever_core_fn, &arg, sizeof arg), 0);
    assert_int_equal(simdev_launch_aicpu(aicpu, wait_forever_aicpu_fn, 1, &arg, sizeof arg), 0);
    assert_int_equal(simdev_stream_sync(cores), PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(simdev_stream_sync(aicpu), PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(simdev_device_is_lost(0), 1);

    /* reset waits for both functions to return, so their reports are final */
    assert_int_equal(simdev_device_reset(0), 0);
    /* TIMEOUT: the wait slept through the loss until its own guard;
     * 0: the wait took the loss for a doorbell / condition write */
    assert_int_equal(atomic_load(&report.core_status), PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(atomic_load(&report.aicpu_status), PTO_RUNTIME_ERR_DEVICE_LOST);
}

static void cond_signal_moves_the_condition_sequence_without_a_core_write(void **state)
{
    (void)state;
    uint64_t seq = platform_cond_seq(0);
    platform_cond_signal(0);
    /* equal: the signal did not move the sequence, a sleeping scheduler
     * would never learn of new work */
    assert_int_not_equal(platform_cond_seq(0), seq);
    assert_int_equal(platform_cond_wait(0, seq, SHORT_TIMEOUT_NS), 0);
}

static void notify_channels_wake_only_for_their_own_signal(void **state)
{
    (void)state;
    uint64_t seq0 = platform_notify_seq(0, 0);
    uint64_t seq1 = platform_notify_seq(0, 1);
    uint64_t cond = platform_cond_seq(0);
    platform_notify_signal(0, 1);
    assert_int_equal(platform_notify_seq(0, 0), seq0); /* changed: channels share a sequence */
    assert_int_not_equal(platform_notify_seq(0, 1), seq1);
    assert_int_equal(platform_cond_seq(0), cond); /* changed: a notify wakes schedulers too */
    assert_int_equal(platform_notify_wait(0, 1, seq1, SHORT_TIMEOUT_NS), 0);
    /* nothing signalled channel 0: its wait ends only by timing out */
    assert_int_equal(platform_notify_wait(0, 0, seq0, SHORT_TIMEOUT_NS), PTO_RUNTIME_ERR_TIMEOUT);
}

static void notify_rejects_a_channel_out_of_range(void **state)
{
    (void)state;
    assert_int_equal(platform_notify_wait(0, PLATFORM_NOTIFY_CHANNELS, 0, SHORT_TIMEOUT_NS),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(platform_notify_seq(0, PLATFORM_NOTIFY_CHANNELS), 0);
    uint64_t before[PLATFORM_NOTIFY_CHANNELS];
    for (uint32_t c = 0; c < PLATFORM_NOTIFY_CHANNELS; c++)
        before[c] = platform_notify_seq(0, c);
    platform_notify_signal(0, PLATFORM_NOTIFY_CHANNELS); /* ignored */
    for (uint32_t c = 0; c < PLATFORM_NOTIFY_CHANNELS; c++)
        assert_int_equal(platform_notify_seq(0, c), before[c]); /* moved: wrote out of range */
}

struct notify_waiter {
    uint64_t seen;
    _Atomic int status;
};

static int notify_wait_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t size)
{
    (void)size;
    struct notify_waiter *w = *(struct notify_waiter *const *)args;
    int rc = platform_notify_wait(ctx->device, 2, w->seen, GUARD_NS);
    atomic_store(&w->status, rc);
    return rc;
}

static void notify_signal_wakes_a_waiting_aicpu_thread(void **state)
{
    (void)state;
    static struct notify_waiter w;
    w.seen = platform_notify_seq(0, 2);
    atomic_store(&w.status, 1);
    struct notify_waiter *arg = &w;
    simdev_stream_t s = ts_new_stream();
    assert_int_equal(simdev_launch_aicpu(s, notify_wait_fn, 1, &arg, sizeof arg), 0);
    platform_notify_signal(0, 2); /* before or after the waiter parks: either way it ends */
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&w.status), 0); /* TIMEOUT: the signal was lost */
    assert_int_equal(simdev_stream_destroy(s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(register_windows_hold_the_last_written_values),
        SIMPLER_TEST(aicpu_and_core_echo_10000_round_trips_with_exact_values),
        SIMPLER_TEST(an_idle_core_over_the_runnable_budget_parks_and_the_other_spins),
        SIMPLER_TEST(budget_room_counts_the_threads_awake_in_a_job),
        SIMPLER_TEST(a_core_parked_by_the_budget_does_not_fit_and_the_spinner_does),
        SIMPLER_TEST(a_jobs_last_aicpu_thread_runs_on_the_last_cpu_and_the_others_off_it),
        SIMPLER_TEST(one_aicpu_thread_at_a_time_has_the_orchestrators_place),
        SIMPLER_TEST(the_core_sharing_the_orchestrators_cpu_gives_way_while_it_is_awake),
        SIMPLER_TEST(a_core_alone_on_its_cpu_spins_on_over_the_device_budget),
        SIMPLER_TEST(core_wait_doorbell_or_ends_on_its_predicate_or_a_ring),
        SIMPLER_TEST(core_wait_doorbell_times_out_when_nothing_rings),
        SIMPLER_TEST(cond_wait_times_out_when_no_core_writes),
        SIMPLER_TEST(register_waits_return_device_lost_when_the_watchdog_loses_the_device),
        SIMPLER_TEST(cond_signal_moves_the_condition_sequence_without_a_core_write),
        SIMPLER_TEST(notify_channels_wake_only_for_their_own_signal),
        SIMPLER_TEST(notify_rejects_a_channel_out_of_range),
        SIMPLER_TEST(notify_signal_wakes_a_waiting_aicpu_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
