/*
 * bench_device.c — latency and throughput of the simulated device (simdev),
 * next to the physical floor of the host it runs on. `make bench` runs it.
 *
 * Measures, in one run:
 *   floor     what the host itself costs: a cache-line ping-pong between two
 *             spinning pthreads, a futex / condition-variable wake-up round
 *             trip between two sleeping ones, and a spinner waking a sleeper
 *             (the shape of a parked core);
 *   doorbell  an AICPU launch (1 thread) rings a core's doorbell, the core
 *             (platform_wait_doorbell) echoes the value through its
 *             condition word, the AICPU side waits for the echo; with 1 core
 *             and with every core configured, and with the core parked
 *             (spin_ns = 0) to show the wake-up cost;
 *   stream    ns per op for N ops enqueued back to back then one sync, for
 *             each kind of op, and a K-node graph replay against the same K
 *             ops enqueued eagerly.
 * Prints one table, writes bench/results/device-latest.json under the repo
 * root (found by walking up from the executable; --root DIR or --out FILE
 * override it). --quick divides every iteration count by 10; --section NAME
 * runs one section (and writes JSON only with --out). Each figure is the
 * median, min and max over 10-11 timed repetitions, after one warm-up.
 *
 * The host may have two CPUs, shared with whatever else runs: numbers taken
 * while other work runs are worth little, and the placement column says
 * where each pair of parties ran (two spinners on one CPU cost a timeslice
 * per handoff).
 *
 * Owns only measurement: it reaches the device through device.h, and its
 * device functions read nothing but their arguments and device memory (they
 * also call sched_getcpu, to report where the host placed them).
 */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "platform/platform.h"
#include "simpler/device.h"

#define CACHELINE 64
#define WAIT_TIMEOUT_NS 5000000000ull /* any single wait longer than 5 s is a hang */
#define MAX_REPS 32
_Static_assert(MAX_REPS <= BENCH_MAX_SAMPLES, "bench_stats_of takes every repetition");
#define MAX_ROWS 48
#define REP_BUDGET_NS 250000000ull /* a repetition stops early after 250 ms */

/* Checked every 64 round trips: a repetition that has used its time budget
 * stops early (on a busy host), so the whole run stays under a minute. */
static int over_budget(uint64_t t0, uint32_t done)
{
    return (done & 63) == 0 && simdev_clock_ns() - t0 > REP_BUDGET_NS;
}

static int g_quick;           /* --quick: a tenth of every iteration count */
static const char *g_section; /* --section NAME: run only that section */
static double g_load_at_start; /* 1-minute load average when the run began */

static int section_wanted(const char *name)
{
    return !g_section || strcmp(g_section, name) == 0;
}

static uint32_t iterations(uint32_t full)
{
    uint32_t n = g_quick ? full / 10 : full;
    return n ? n : 1;
}

/* Stops the benchmark on a failed device call: numbers after it mean nothing. */
#define CHECK(call) BENCH_CHECK("bench_device", call)

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t now_ns(void)
{
    return simdev_clock_ns();
}

/*
 * Called every 256 polls by every spinning loop here (as simdev's own waits
 * do): gives the CPU to a runnable thread on it — on a 2-CPU host it may be
 * the very thread we wait for. Costs nothing a fast handoff ever reaches.
 */
static void polite_yield(void)
{
    sched_yield();
}

/* Bit of the CPU the calling thread runs on now (0 if unknown). */
static uint64_t cpu_bit(void)
{
    int cpu = sched_getcpu();
    return cpu >= 0 && cpu < 64 ? 1ull << cpu : 0;
}

/* ------------------------------------------------------------------ results */

/* One line of the table (and one object in the JSON). */
struct row {
    const char *section;
    char name[80];
    struct bench_stats s;
    const char *unit;
    double ratio;          /* median / floor median; 0 = no ratio */
    const char *floor_name;
    char placement[48];    /* where the two ping-pong parties ran */
};

static struct row g_rows[MAX_ROWS];
static size_t g_row_count;

static struct row *add_row(const char *section, const char *name, struct bench_stats s,
                           const char *unit)
{
    if (g_row_count == MAX_ROWS) {
        fprintf(stderr, "bench_device: more than %d rows\n", MAX_ROWS);
        exit(1);
    }
    struct row *r = &g_rows[g_row_count++];
    memset(r, 0, sizeof(*r));
    r->section = section;
    snprintf(r->name, sizeof(r->name), "%s", name);
    r->s = s;
    r->unit = unit;
    return r;
}

static void set_ratio(struct row *r, double floor_ns, const char *floor_name)
{
    if (floor_ns <= 0)
        return; /* that floor was not measured in this run */
    r->ratio = r->s.median / floor_ns;
    r->floor_name = floor_name;
}

/* Appends the CPUs of `mask` to out: "cpu 1", or "cpus {0,1}" for a party
 * that was seen on more than one CPU. */
static void append_cpus(char *out, size_t size, uint64_t mask)
{
    size_t used = strlen(out);
    int count = __builtin_popcountll(mask);
    if (count == 0) {
        snprintf(out + used, size - used, "cpu ?");
        return;
    }
    used += (size_t)snprintf(out + used, size - used, count > 1 ? "cpus {" : "cpu ");
    int first = 1;
    for (int cpu = 0; cpu < 64 && used < size; cpu++) {
        if (mask >> cpu & 1) {
            used += (size_t)snprintf(out + used, size - used, first ? "%d" : ",%d", cpu);
            first = 0;
        }
    }
    if (count > 1 && used < size)
        snprintf(out + used, size - used, "}");
}

/* "cpu 0 / cpu 1": where the two parties of a ping-pong ran. */
static void describe_cpus(char *out, size_t size, uint64_t a_mask, uint64_t b_mask)
{
    out[0] = '\0';
    append_cpus(out, size, a_mask);
    if (strlen(out) + 3 < size)
        strcat(out, " / ");
    append_cpus(out, size, b_mask);
}

/* ==================================================================== floor */

/*
 * Two plain pthreads take turns: the initiator writes `ping`, the responder
 * sees it and writes the same value to `pong`. Each word sits on its own
 * cache line, as the device's doorbell and condition words do, so one round
 * trip is two cache-line handoffs.
 */
struct spin_pair {
    _Alignas(CACHELINE) _Atomic uint64_t ping;
    _Alignas(CACHELINE) _Atomic uint64_t pong;
    _Alignas(CACHELINE) uint32_t reps, rounds;
    double rep_ns[MAX_REPS];
    uint64_t initiator_cpus, responder_cpus;
    int failed;
};

#define SPIN_STOP UINT64_MAX

/* Spins while *word == value; returns the new value, or value after
 * WAIT_TIMEOUT_NS (a hang). */
static uint64_t spin_while_equal(_Atomic uint64_t *word, uint64_t value)
{
    uint64_t deadline = now_ns() + WAIT_TIMEOUT_NS;
    for (uint32_t i = 1;; i++) {
        /* acquire: pairs with the other party's release store */
        uint64_t now = atomic_load_explicit(word, memory_order_acquire);
        if (now != value)
            return now;
        if ((i & 255) == 0)
            polite_yield(); /* never taken when the handoff is fast */
        if ((i & 4095) == 0 && now_ns() > deadline)
            return value;
        cpu_relax();
    }
}

static void *spin_responder(void *arg)
{
    struct spin_pair *p = arg;
    uint64_t last = 0;
    p->responder_cpus |= cpu_bit();
    for (uint32_t n = 1;; n++) {
        uint64_t v = spin_while_equal(&p->ping, last);
        if (v == last || v == SPIN_STOP)
            break;
        /* release: pairs with the initiator's acquire in spin_while_equal(&pong) */
        atomic_store_explicit(&p->pong, v, memory_order_release);
        last = v;
        if ((n & 1023) == 0)
            p->responder_cpus |= cpu_bit();
    }
    p->responder_cpus |= cpu_bit();
    return NULL;
}

static void *spin_initiator(void *arg)
{
    struct spin_pair *p = arg;
    uint64_t k = 0;
    for (uint32_t rep = 0; rep < p->reps && !p->failed; rep++) {
        p->initiator_cpus |= cpu_bit();
        uint64_t t0 = now_ns();
        uint32_t done = 0;
        while (done < p->rounds && !over_budget(t0, done)) {
            k++;
            /* release: pairs with the responder's acquire in spin_while_equal(&ping) */
            atomic_store_explicit(&p->ping, k, memory_order_release);
            if (spin_while_equal(&p->pong, k - 1) != k) {
                p->failed = 1;
                break;
            }
            done++;
        }
        p->rep_ns[rep] = done ? (double)(now_ns() - t0) / done : 0;
    }
    atomic_store_explicit(&p->ping, SPIN_STOP, memory_order_release);
    p->initiator_cpus |= cpu_bit();
    return NULL;
}

/*
 * The same exchange through sleeping threads: one futex word holds a turn
 * counter; each party bumps it, wakes the other, and sleeps until it moves
 * again. No spinning at all, so every handoff is a full wake-up.
 */
struct futex_pair {
    _Alignas(CACHELINE) _Atomic uint32_t turn;
    _Alignas(CACHELINE) uint32_t reps, rounds;
    double rep_ns[MAX_REPS];
    uint64_t initiator_cpus, responder_cpus;
    int failed;
};

#define FUTEX_STOP UINT32_MAX

static void futex_wake_one(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Sleeps while *word == value; returns the new value, or value on a hang. */
static uint32_t futex_wait_change(_Atomic uint32_t *word, uint32_t value)
{
    uint64_t deadline = now_ns() + WAIT_TIMEOUT_NS;
    struct timespec timeout = {.tv_sec = 1};
    for (;;) {
        /* acquire: pairs with the release store before futex_wake_one */
        uint32_t now = atomic_load_explicit(word, memory_order_acquire);
        if (now != value)
            return now;
        if (now_ns() > deadline)
            return value;
        syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, value, &timeout, NULL, 0);
    }
}

static void *futex_responder(void *arg)
{
    struct futex_pair *p = arg;
    uint32_t last = 0;
    p->responder_cpus |= cpu_bit();
    for (;;) {
        uint32_t v = futex_wait_change(&p->turn, last);
        if (v == last || v == FUTEX_STOP)
            break;
        last = v + 1;
        /* release: pairs with the acquire in the initiator's futex_wait_change */
        atomic_store_explicit(&p->turn, last, memory_order_release);
        futex_wake_one(&p->turn);
    }
    p->responder_cpus |= cpu_bit();
    return NULL;
}

static void *futex_initiator(void *arg)
{
    struct futex_pair *p = arg;
    uint32_t last = 0;
    for (uint32_t rep = 0; rep < p->reps && !p->failed; rep++) {
        p->initiator_cpus |= cpu_bit();
        uint64_t t0 = now_ns();
        uint32_t done = 0;
        while (done < p->rounds && !over_budget(t0, done)) {
            /* release: pairs with the acquire in the responder's futex_wait_change */
            atomic_store_explicit(&p->turn, last + 1, memory_order_release);
            futex_wake_one(&p->turn);
            if (futex_wait_change(&p->turn, last + 1) != last + 2) {
                p->failed = 1;
                break;
            }
            last += 2;
            done++;
        }
        p->rep_ns[rep] = done ? (double)(now_ns() - t0) / done : 0;
    }
    atomic_store_explicit(&p->turn, FUTEX_STOP, memory_order_release);
    futex_wake_one(&p->turn);
    return NULL;
}

/*
 * Half and half, the shape of a parked core: the initiator spins, the
 * responder sleeps on a futex until the initiator wakes it, then answers
 * with a plain store the spinning initiator sees. One wake-up and one
 * cache-line handoff per round trip.
 */
struct wake_pair {
    _Alignas(CACHELINE) _Atomic uint32_t ping;
    _Alignas(CACHELINE) _Atomic uint32_t pong;
    _Alignas(CACHELINE) uint32_t reps, rounds;
    double rep_ns[MAX_REPS];
    uint64_t initiator_cpus, responder_cpus;
    int failed;
};

static void *wake_responder(void *arg)
{
    struct wake_pair *p = arg;
    uint32_t last = 0;
    p->responder_cpus |= cpu_bit();
    for (;;) {
        uint32_t v = futex_wait_change(&p->ping, last);
        if (v == last || v == FUTEX_STOP)
            break; /* stop, or a hang (the initiator times out too) */
        /* release: pairs with the initiator's acquire spin on pong */
        atomic_store_explicit(&p->pong, v, memory_order_release);
        last = v;
    }
    p->responder_cpus |= cpu_bit();
    return NULL;
}

static void *wake_initiator(void *arg)
{
    struct wake_pair *p = arg;
    uint32_t k = 0;
    for (uint32_t rep = 0; rep < p->reps && !p->failed; rep++) {
        p->initiator_cpus |= cpu_bit();
        uint64_t t0 = now_ns();
        uint32_t done = 0;
        while (done < p->rounds && !p->failed && !over_budget(t0, done)) {
            k++;
            /* release: pairs with the acquire in the responder's futex_wait_change */
            atomic_store_explicit(&p->ping, k, memory_order_release);
            futex_wake_one(&p->ping);
            uint64_t deadline = now_ns() + WAIT_TIMEOUT_NS;
            for (uint32_t n = 1; atomic_load_explicit(&p->pong, memory_order_acquire) != k; n++) {
                if ((n & 255) == 0)
                    polite_yield();
                if ((n & 4095) == 0 && now_ns() > deadline) {
                    p->failed = 1;
                    break;
                }
                cpu_relax();
            }
            done++;
        }
        p->rep_ns[rep] = done ? (double)(now_ns() - t0) / done : 0;
    }
    atomic_store_explicit(&p->ping, FUTEX_STOP, memory_order_release);
    futex_wake_one(&p->ping);
    return NULL;
}

/* The same again through a mutex and condition variables (what most code uses). */
struct condvar_pair {
    pthread_mutex_t lock;
    pthread_cond_t to_responder, to_initiator;
    uint32_t turn; /* odd: the responder's move; even: the initiator's */
    int stop;
    uint32_t reps, rounds;
    double rep_ns[MAX_REPS];
    uint64_t initiator_cpus, responder_cpus;
};

static void *condvar_responder(void *arg)
{
    struct condvar_pair *p = arg;
    p->responder_cpus |= cpu_bit();
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->turn % 2 == 0)
            pthread_cond_wait(&p->to_responder, &p->lock);
        if (p->stop)
            break;
        p->turn++;
        pthread_cond_signal(&p->to_initiator);
    }
    pthread_mutex_unlock(&p->lock);
    p->responder_cpus |= cpu_bit();
    return NULL;
}

static void *condvar_initiator(void *arg)
{
    struct condvar_pair *p = arg;
    for (uint32_t rep = 0; rep < p->reps; rep++) {
        p->initiator_cpus |= cpu_bit();
        uint64_t t0 = now_ns();
        uint32_t done = 0;
        pthread_mutex_lock(&p->lock);
        while (done < p->rounds && !over_budget(t0, done)) {
            p->turn++;
            pthread_cond_signal(&p->to_responder);
            while (p->turn % 2 == 1)
                pthread_cond_wait(&p->to_initiator, &p->lock);
            done++;
        }
        pthread_mutex_unlock(&p->lock);
        p->rep_ns[rep] = done ? (double)(now_ns() - t0) / done : 0;
    }
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_signal(&p->to_responder);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void run_pair(void *(*initiator)(void *), void *(*responder)(void *), void *pair)
{
    pthread_t a, b;
    if (pthread_create(&b, NULL, responder, pair) != 0 ||
        pthread_create(&a, NULL, initiator, pair) != 0) {
        fprintf(stderr, "bench_device: pthread_create failed\n");
        exit(1);
    }
    pthread_join(a, NULL);
    pthread_join(b, NULL);
}

/* Floor medians (ns per round trip), used for the ratios of the device rows. */
struct floor {
    double spin_rt, futex_rt, wake_rt, condvar_rt;
};

static struct floor measure_floor(void)
{
    struct floor f;
    struct row *r;

    static struct spin_pair spin; /* static: aligned, and too big to want on a stack */
    memset(&spin, 0, sizeof(spin));
    spin.reps = 1 + 11; /* the first repetition warms up and is dropped */
    spin.rounds = iterations(20000);
    run_pair(spin_initiator, spin_responder, &spin);
    if (spin.failed) {
        fprintf(stderr, "bench_device: cache-line ping-pong hung\n");
        exit(1);
    }
    struct bench_stats s = bench_stats_of(spin.rep_ns + 1, spin.reps - 1);
    f.spin_rt = s.median;
    r = add_row("floor", "cache-line ping-pong, round trip (2 spinning pthreads)", s, "ns/rt");
    describe_cpus(r->placement, sizeof(r->placement), spin.initiator_cpus, spin.responder_cpus);
    struct bench_stats one_way = {s.median / 2, s.min / 2, s.max / 2};
    r = add_row("floor", "cache-line handoff, one way (round trip / 2)", one_way, "ns");
    describe_cpus(r->placement, sizeof(r->placement), spin.initiator_cpus, spin.responder_cpus);

    static struct futex_pair fx;
    memset(&fx, 0, sizeof(fx));
    fx.reps = 1 + 11;
    fx.rounds = iterations(2000);
    run_pair(futex_initiator, futex_responder, &fx);
    if (fx.failed) {
        fprintf(stderr, "bench_device: futex ping-pong hung\n");
        exit(1);
    }
    s = bench_stats_of(fx.rep_ns + 1, fx.reps - 1);
    f.futex_rt = s.median;
    r = add_row("floor", "futex wake-up, round trip (2 sleeping pthreads)", s, "ns/rt");
    describe_cpus(r->placement, sizeof(r->placement), fx.initiator_cpus, fx.responder_cpus);

    static struct wake_pair wk;
    memset(&wk, 0, sizeof(wk));
    wk.reps = 1 + 11;
    wk.rounds = iterations(2000);
    run_pair(wake_initiator, wake_responder, &wk);
    if (wk.failed) {
        fprintf(stderr, "bench_device: spinner/sleeper ping-pong hung\n");
        exit(1);
    }
    s = bench_stats_of(wk.rep_ns + 1, wk.reps - 1);
    f.wake_rt = s.median;
    r = add_row("floor", "spinner wakes a futex sleeper, round trip", s, "ns/rt");
    describe_cpus(r->placement, sizeof(r->placement), wk.initiator_cpus, wk.responder_cpus);

    static struct condvar_pair cv;
    memset(&cv, 0, sizeof(cv));
    pthread_mutex_init(&cv.lock, NULL);
    pthread_cond_init(&cv.to_responder, NULL);
    pthread_cond_init(&cv.to_initiator, NULL);
    cv.reps = 1 + 11;
    cv.rounds = iterations(2000);
    run_pair(condvar_initiator, condvar_responder, &cv);
    s = bench_stats_of(cv.rep_ns + 1, cv.reps - 1);
    f.condvar_rt = s.median;
    r = add_row("floor", "condvar wake-up, round trip (2 sleeping pthreads)", s, "ns/rt");
    describe_cpus(r->placement, sizeof(r->placement), cv.initiator_cpus, cv.responder_cpus);
    pthread_cond_destroy(&cv.to_initiator);
    pthread_cond_destroy(&cv.to_responder);
    pthread_mutex_destroy(&cv.lock);
    return f;
}

/* ================================================================= doorbell */

/*
 * Register values of one ping run carry the run's epoch in the high 32 bits,
 * so values left in the windows by an earlier run never match: the low bits
 * are 0 for "core ready", 1.. for pings, PING_STOP to end the core loop.
 */
#define PING_STOP 0xffffffffu

static uint64_t ping_value(uint32_t epoch, uint32_t k)
{
    return (uint64_t)epoch << 32 | k;
}

/* What a ping run leaves in device memory for the host to copy back. */
struct ping_result {
    uint64_t rep_ns[MAX_REPS];     /* wall time of each repetition */
    uint64_t rep_rounds[MAX_REPS]; /* round trips it did (fewer if over budget) */
    uint64_t aicpu_cpus;           /* CPUs the AICPU thread was seen on */
    uint64_t core_cpus;            /* CPUs core 0 was seen on */
};

struct ping_args {
    uint32_t epoch;
    uint32_t cores_in_play; /* cores 0..n-1 are pinged in turn; the rest return at once */
    uint32_t reps;
    uint32_t rounds;        /* round trips per repetition */
    int aicpu_parks;        /* 0: spin on the condition word; 1: platform_cond_wait */
    struct ping_result *result; /* device memory */
};

/* Core side: announce readiness, then echo every doorbell value until STOP. */
static int ping_core(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    const struct ping_args *a = args;
    if (args_size != sizeof(*a))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (ctx->core_id >= a->cores_in_play)
        return 0;
    /* Read the doorbell before announcing readiness: the AICPU side rings only
     * after it sees "ready", so this run's first ping differs from `seen`. */
    uint64_t seen = platform_read_doorbell(ctx->regs);
    uint64_t cpus = cpu_bit();
    platform_write_cond(ctx->regs, ping_value(a->epoch, 0));
    for (;;) {
        uint64_t value;
        int rc = platform_wait_doorbell(ctx->regs, seen, WAIT_TIMEOUT_NS, &value);
        if (rc != 0)
            return rc;
        seen = value;
        if (value == ping_value(a->epoch, PING_STOP))
            break;
        platform_write_cond(ctx->regs, value);
    }
    if (ctx->core_id == 0)
        a->result->core_cpus = cpus | cpu_bit();
    return 0;
}

#define AICPU_SPIN_NS 50000 /* the spin mode's bound, as simdev's default spin_ns */

/*
 * AICPU side: waits until the core's condition word holds `want`. Spin mode
 * polls the word itself for up to AICPU_SPIN_NS (yielding every 256 polls),
 * then falls back to the park mode: platform_cond_wait, which spins for the
 * device's spin_ns and then sleeps until some core writes its condition.
 */
static int await_echo(int device, const struct simdev_core_regs *regs, uint64_t want, int parks)
{
    if (!parks) {
        uint64_t spin_end = now_ns() + AICPU_SPIN_NS;
        for (uint32_t i = 1;; i++) {
            if (platform_read_cond(regs) == want)
                return 0;
            if ((i & 255) == 0) {
                if (now_ns() > spin_end)
                    break;
                polite_yield();
            }
            cpu_relax();
        }
    }
    for (;;) {
        /* Read the sequence before the word: a write after this read bumps
         * the sequence, so platform_cond_wait cannot miss it. */
        uint64_t seq = platform_cond_seq(device);
        if (platform_read_cond(regs) == want)
            return 0;
        int rc = platform_cond_wait(device, seq, WAIT_TIMEOUT_NS);
        if (rc != 0)
            return rc;
    }
}

static int ping_aicpu(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    const struct ping_args *a = args;
    if (args_size != sizeof(*a) || a->cores_in_play == 0 || a->cores_in_play > SIMDEV_MAX_CORES)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct simdev_core_regs *regs[SIMDEV_MAX_CORES];
    for (uint32_t c = 0; c < a->cores_in_play; c++) {
        regs[c] = platform_core_regs(ctx->device, c);
        if (!regs[c])
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
    int rc = 0;
    for (uint32_t c = 0; c < a->cores_in_play && rc == 0; c++)
        rc = await_echo(ctx->device, regs[c], ping_value(a->epoch, 0), a->aicpu_parks);

    uint64_t cpus = cpu_bit();
    uint32_t k = 0;
    for (uint32_t rep = 0; rep < a->reps && rc == 0; rep++) {
        uint64_t t0 = simdev_clock_ns();
        uint32_t done = 0;
        while (done < a->rounds && rc == 0 && !over_budget(t0, done)) {
            struct simdev_core_regs *core = regs[done % a->cores_in_play];
            k++;
            platform_ring_doorbell(core, ping_value(a->epoch, k));
            rc = await_echo(ctx->device, core, ping_value(a->epoch, k), a->aicpu_parks);
            done++;
        }
        a->result->rep_ns[rep] = simdev_clock_ns() - t0;
        a->result->rep_rounds[rep] = done;
        cpus |= cpu_bit();
    }
    a->result->aicpu_cpus = cpus;
    for (uint32_t c = 0; c < a->cores_in_play; c++)
        platform_ring_doorbell(regs[c], ping_value(a->epoch, PING_STOP));
    return rc;
}

/* Makes device 0 fresh with this topology and the current device. */
static void device_setup(uint32_t aicpu_threads, uint32_t aic, uint32_t aiv, uint32_t spin_ns)
{
    struct simdev_config config;
    CHECK(simdev_device_reset(0));
    CHECK(simdev_config_default(&config));
    config.aicpu_threads = aicpu_threads;
    config.aic_cores = aic;
    config.aiv_cores = aiv;
    config.memory_bytes = 64u << 20;
    config.watchdog_ms = 0; /* the benchmark bounds its own waits */
    config.spin_ns = spin_ns;
    CHECK(simdev_device_configure(0, &config));
    CHECK(simdev_set_device(0));
}

struct ping_case {
    const char *name;
    uint32_t aic, aiv;      /* topology */
    uint32_t cores_in_play;
    uint32_t spin_ns;
    int aicpu_parks;
    uint32_t rounds;        /* before --quick */
};

/* Runs one doorbell case on a fresh device; returns its per-round-trip stats. */
static struct bench_stats run_ping_case(const struct ping_case *pc, char *placement, size_t size)
{
    static uint32_t epoch;
    device_setup(1, pc->aic, pc->aiv, pc->spin_ns);

    struct ping_result *dev_result;
    CHECK(simdev_malloc((void **)&dev_result, sizeof(*dev_result)));
    static const struct ping_result zero;
    CHECK(simdev_memcpy(dev_result, &zero, sizeof(zero), SIMDEV_COPY_HOST_TO_DEVICE));
    simdev_stream_t aicpu_stream, core_stream;
    CHECK(simdev_stream_create(&aicpu_stream));
    CHECK(simdev_stream_create(&core_stream));

    struct ping_args args = {
        .epoch = ++epoch,
        .cores_in_play = pc->cores_in_play,
        .reps = 1 + 11, /* the first repetition warms up and is dropped */
        .rounds = iterations(pc->rounds),
        .aicpu_parks = pc->aicpu_parks,
        .result = dev_result,
    };
    /* Two streams, so the core loop and the AICPU side run at the same time. */
    CHECK(simdev_launch_aicore(core_stream, ping_core, &args, sizeof(args)));
    CHECK(simdev_launch_aicpu(aicpu_stream, ping_aicpu, 1, &args, sizeof(args)));
    CHECK(simdev_stream_sync(aicpu_stream));
    CHECK(simdev_stream_sync(core_stream));

    struct ping_result result;
    CHECK(simdev_memcpy(&result, dev_result, sizeof(result), SIMDEV_COPY_DEVICE_TO_HOST));
    CHECK(simdev_stream_destroy(core_stream));
    CHECK(simdev_stream_destroy(aicpu_stream));
    CHECK(simdev_free(dev_result));

    double per_rt[MAX_REPS];
    for (uint32_t rep = 1; rep < args.reps; rep++)
        per_rt[rep - 1] = result.rep_rounds[rep]
                              ? (double)result.rep_ns[rep] / (double)result.rep_rounds[rep]
                              : 0;
    describe_cpus(placement, size, result.aicpu_cpus, result.core_cpus);
    return bench_stats_of(per_rt, args.reps - 1);
}

_Static_assert(SIMDEV_MAX_CORES == 64, "the doorbell row names say 64 cores");

static void measure_doorbell(const struct floor *f)
{
    const uint32_t all_aic = SIMDEV_MAX_CORES / 3, all_aiv = SIMDEV_MAX_CORES - all_aic;
    const uint32_t spin = 50000; /* the default spin budget */
    const struct ping_case cases[] = {
        {"1 core configured, both sides spin", 1, 0, 1, spin, 0, 20000},
        {"1 core, AICPU waits in platform_cond_wait", 1, 0, 1, spin, 1, 20000},
        {"64 cores configured, ping core 0", all_aic, all_aiv, 1, spin, 0, 20000},
        {"3 cores (1 AIC + 2 AIV), ping each in turn", 1, 2, 3, spin, 0, 5000},
        {"64 cores, ping each in turn", all_aic, all_aiv, SIMDEV_MAX_CORES, spin, 0, 2000},
        {"parked core (spin_ns 0), AICPU spins", 1, 0, 1, 0, 0, 2000},
        {"parked core and AICPU (spin_ns 0, cond_wait)", 1, 0, 1, 0, 1, 2000},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct ping_case *pc = &cases[i];
        char placement[48];
        struct bench_stats s = run_ping_case(pc, placement, sizeof(placement));
        struct row *r = add_row("doorbell", pc->name, s, "ns/rt");
        snprintf(r->placement, sizeof(r->placement), "%s", placement);
        if (pc->spin_ns == 0 && pc->aicpu_parks)
            set_ratio(r, f->futex_rt, "futex rt");
        else if (pc->spin_ns == 0)
            set_ratio(r, f->wake_rt, "spinner wakes");
        else
            set_ratio(r, f->spin_rt, "spin rt");
    }
}

/* =================================================================== stream */

static int noop_host(void *user_data)
{
    (void)user_data;
    return 0;
}

static int noop_aicpu(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    (void)args;
    (void)args_size;
    return 0;
}

static int noop_aicore(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    (void)args;
    (void)args_size;
    return 0;
}

enum stream_op {
    OP_HOST_FUNC,
    OP_AICPU_LAUNCH,
    OP_AICORE_LAUNCH,
    OP_MEMSET,
    OP_COPY_D2D,
    OP_RECORD_WAIT,
};

struct stream_bench {
    simdev_stream_t a, b;
    simdev_event_t event;
    void *dev_src, *dev_dst; /* 64 bytes each */
};

/* Enqueues one op of `kind` on stream a (record+wait: record on a, wait on b). */
static void enqueue_op(struct stream_bench *sb, enum stream_op kind)
{
    uint64_t arg = 0; /* every launch copies 8 argument bytes */
    switch (kind) {
    case OP_HOST_FUNC:
        CHECK(simdev_launch_host_func(sb->a, noop_host, NULL));
        break;
    case OP_AICPU_LAUNCH:
        CHECK(simdev_launch_aicpu(sb->a, noop_aicpu, 1, &arg, sizeof(arg)));
        break;
    case OP_AICORE_LAUNCH:
        CHECK(simdev_launch_aicore(sb->a, noop_aicore, &arg, sizeof(arg)));
        break;
    case OP_MEMSET:
        CHECK(simdev_memset_async(sb->dev_dst, 0x5a, 64, sb->a));
        break;
    case OP_COPY_D2D:
        CHECK(simdev_memcpy_async(sb->dev_dst, sb->dev_src, 64, SIMDEV_COPY_DEVICE_TO_DEVICE,
                                  sb->a));
        break;
    case OP_RECORD_WAIT:
        CHECK(simdev_event_record(sb->event, sb->a));
        CHECK(simdev_stream_wait_event(sb->b, sb->event));
        break;
    }
}

/* ns per op: `count` ops of `kind` enqueued back to back, then one sync. */
static struct bench_stats time_ops(struct stream_bench *sb, enum stream_op kind, uint32_t count)
{
    double per_op[MAX_REPS];
    const uint32_t reps = 1 + 9;
    for (uint32_t rep = 0; rep < reps; rep++) {
        uint64_t t0 = now_ns();
        for (uint32_t i = 0; i < count; i++)
            enqueue_op(sb, kind);
        CHECK(simdev_stream_sync(sb->a));
        CHECK(simdev_stream_sync(sb->b));
        per_op[rep] = (double)(now_ns() - t0) / count;
    }
    return bench_stats_of(per_op + 1, reps - 1);
}

/* The K-node sequence the graph rows compare: AICPU launches and memsets. */
static void enqueue_sequence(struct stream_bench *sb, uint32_t k)
{
    for (uint32_t i = 0; i < k; i++)
        enqueue_op(sb, i % 2 ? OP_MEMSET : OP_AICPU_LAUNCH);
}

static void measure_streams(void)
{
    device_setup(2, 1, 2, 50000); /* the default topology and spin budget */
    struct stream_bench sb;
    CHECK(simdev_stream_create(&sb.a));
    CHECK(simdev_stream_create(&sb.b));
    CHECK(simdev_event_create(&sb.event));
    CHECK(simdev_malloc(&sb.dev_src, 64));
    CHECK(simdev_malloc(&sb.dev_dst, 64));

    static const struct {
        enum stream_op kind;
        const char *name;
        uint32_t count;
    } ops[] = {
        {OP_HOST_FUNC, "host func", 2000},
        {OP_AICPU_LAUNCH, "AICPU launch (1 thread)", 2000},
        {OP_AICORE_LAUNCH, "AICore launch (3 cores)", 1000},
        {OP_MEMSET, "memset_async 64 B", 2000},
        {OP_COPY_D2D, "memcpy_async D2D 64 B", 2000},
        {OP_RECORD_WAIT, "event record (A) + wait (B), per pair", 2000},
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        struct bench_stats s = time_ops(&sb, ops[i].kind, iterations(ops[i].count));
        add_row("stream", ops[i].name, s, "ns/op");
    }

    /* K ops eagerly, M times, against one K-node graph replayed M times. */
    const uint32_t k = 32, m = iterations(100);
    simdev_graph_t graph;
    simdev_graph_exec_t exec;
    CHECK(simdev_stream_begin_capture(sb.a));
    enqueue_sequence(&sb, k);
    CHECK(simdev_stream_end_capture(sb.a, &graph));
    CHECK(simdev_graph_instantiate(&exec, graph));
    CHECK(simdev_graph_destroy(graph));

    double eager[MAX_REPS], replay[MAX_REPS];
    const uint32_t reps = 1 + 9;
    for (uint32_t rep = 0; rep < reps; rep++) {
        uint64_t t0 = now_ns();
        for (uint32_t i = 0; i < m; i++)
            enqueue_sequence(&sb, k);
        CHECK(simdev_stream_sync(sb.a));
        uint64_t t1 = now_ns();
        for (uint32_t i = 0; i < m; i++)
            CHECK(simdev_graph_launch(exec, sb.a));
        CHECK(simdev_stream_sync(sb.a));
        uint64_t t2 = now_ns();
        eager[rep] = (double)(t1 - t0) / ((double)k * m);
        replay[rep] = (double)(t2 - t1) / ((double)k * m);
    }
    CHECK(simdev_graph_exec_destroy(exec));
    char name[80];
    snprintf(name, sizeof(name), "%u ops eager (AICPU launch + memset), per op", k);
    struct bench_stats eager_stats = bench_stats_of(eager + 1, reps - 1);
    add_row("graph", name, eager_stats, "ns/op");
    snprintf(name, sizeof(name), "%u-node graph replay, per node", k);
    struct row *r = add_row("graph", name, bench_stats_of(replay + 1, reps - 1), "ns/op");
    set_ratio(r, eager_stats.median, "eager");

    CHECK(simdev_free(sb.dev_dst));
    CHECK(simdev_free(sb.dev_src));
    CHECK(simdev_event_destroy(sb.event));
    CHECK(simdev_stream_destroy(sb.b));
    CHECK(simdev_stream_destroy(sb.a));
    CHECK(simdev_device_reset(0));
}

/* =================================================================== output */

static void print_table(void)
{
    printf("%-9s %-52s %10s %10s %10s  %-6s %8s  %-16s %s\n", "section", "measurement", "median",
           "min", "max", "unit", "ratio", "ratio to", "cpus (A / B)");
    const char *section = "";
    for (size_t i = 0; i < g_row_count; i++) {
        const struct row *r = &g_rows[i];
        if (strcmp(section, r->section) != 0 && i > 0)
            printf("\n");
        section = r->section;
        char ratio[16] = "";
        if (r->floor_name)
            snprintf(ratio, sizeof(ratio), "%.2fx", r->ratio);
        printf("%-9s %-52s %10.1f %10.1f %10.1f  %-6s %8s  %-16s %s\n", r->section, r->name,
               r->s.median, r->s.min, r->s.max, r->unit, ratio, r->floor_name ? r->floor_name : "",
               r->placement);
    }
}

static int write_json(const char *path, double seconds)
{
    FILE *f;
    if (bench_json_open("bench_device", path, "device", g_load_at_start, g_quick, seconds, &f) != 0)
        return -1;
    fprintf(f, "  \"rows\": [\n");
    for (size_t i = 0; i < g_row_count; i++) {
        const struct row *r = &g_rows[i];
        fprintf(f, "    {\"section\": ");
        bench_json_string(f, r->section);
        fprintf(f, ", \"name\": ");
        bench_json_string(f, r->name);
        fprintf(f, ", \"unit\": ");
        bench_json_string(f, r->unit);
        fprintf(f, ", \"median\": %.1f, \"min\": %.1f, \"max\": %.1f", r->s.median, r->s.min,
                r->s.max);
        if (r->floor_name) {
            fprintf(f, ", \"ratio\": %.3f, \"ratio_to\": ", r->ratio);
            bench_json_string(f, r->floor_name);
        }
        if (r->placement[0]) {
            fprintf(f, ", \"cpus\": ");
            bench_json_string(f, r->placement);
        }
        fprintf(f, "}%s\n", i + 1 < g_row_count ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_device [--quick] [--section floor|doorbell|stream]\n"
                    "                    [--root REPO_DIR | --out FILE.json]\n"
                    "Without --out, writes REPO_DIR/bench/results/device-latest.json; REPO_DIR\n"
                    "is found above the executable. --section writes JSON only with --out.\n");
}

int main(int argc, char **argv)
{
    const char *root_arg = NULL, *out_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            g_quick = 1;
        } else if (strcmp(argv[i], "--section") == 0 && i + 1 < argc) {
            g_section = argv[++i];
            if (strcmp(g_section, "floor") && strcmp(g_section, "doorbell") &&
                strcmp(g_section, "stream")) {
                usage();
                return 2;
            }
        } else if (strcmp(argv[i], "--root") == 0 && i + 1 < argc) {
            root_arg = argv[++i];
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out_arg = argv[++i];
        } else {
            usage();
            return 2;
        }
    }

    char out_path[PATH_MAX];
    if (bench_out_path("bench_device", out_arg, root_arg, !g_section, "device-latest.json",
                       out_path, sizeof(out_path)) != 0)
        return 2;

    uint64_t start = now_ns();
    g_load_at_start = bench_load_average();
    printf("bench_device: %ld host CPUs, load average %.2f at start%s; times are per round "
           "trip (rt) or per op\n",
           sysconf(_SC_NPROCESSORS_ONLN), g_load_at_start, g_quick ? ", --quick" : "");
    if (g_load_at_start > 1.0)
        printf("bench_device: the host was busy in the last minute; numbers may be noisy\n");
    printf("\n");
    fflush(stdout);

    struct floor f = {0};
    if (section_wanted("floor"))
        f = measure_floor();
    if (section_wanted("doorbell"))
        measure_doorbell(&f);
    if (section_wanted("stream"))
        measure_streams();

    double seconds = (double)(now_ns() - start) / 1e9;
    print_table();
    printf("\nratio: median / the floor named; cpus: where the two parties of a ping-pong ran "
           "(floor: initiator / responder; doorbell: AICPU thread / core 0)\n");
    if (!out_path[0]) {
        printf("(%.1f s; partial run, no JSON written)\n", seconds);
        return 0;
    }
    if (write_json(out_path, seconds) != 0)
        return 1;
    printf("wrote %s (%.1f s)\n", out_path, seconds);
    return 0;
}
