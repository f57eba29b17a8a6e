/*
 * simdev/park.c — spin-then-park waiting for device threads.
 *
 * Owns: sd_wait / sd_wake, the one way any simdev thread waits for another.
 * A waiter spins for a bounded time without yielding (a cache-line handoff
 * to a spinning thread costs ~0.1-0.6 us, a futex wake-up 10-40 us), then
 * sleeps on a futex, so an idle device uses no CPU even with many simulated
 * cores on two host CPUs. How long each role spins is the caller's choice
 * (sd_spin_ns, device_config.c).
 * Must not touch device state: it knows only the word it is given and the
 * calling thread's runnable budget (sd_tl_budget, park.h).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "platform/platform.h"
#include "simdev/park.h"
#include "simdev/worker.h"
#include "simpler/device.h"

/* The host's view of the device clock is the device's own. */
uint64_t simdev_clock_ns(void)
{
    return platform_clock_ns();
}

/* One polite spin step (a CPU pause hint). */
static void sd_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t expected, uint64_t timeout_ns)
{
    struct timespec ts;
    struct timespec *tsp = NULL;
    if (timeout_ns) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000ull);
        ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
        tsp = &ts;
    }
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

#define SD_SLEEPER 1u /* seq bit 0: a waiter may sleep on the word */
#define SD_WAKE 2u    /* seq's step per wake */

void sd_wake(struct sd_waitword *word)
{
    /* One read-modify-write of seq decides: either a waiter that is
     * about to sleep sees the count move (its compare-and-swap that sets
     * the sleeper bit fails, or its look at the predicate, after its load
     * of seq, sees the caller's state change), or this increment sees the
     * sleeper bit it set. Only the waker that clears the bit makes the
     * syscall: while woken sleepers are still on their way out (tens of
     * µs), later wakers of the word make none. The caller's release of
     * the predicate state happens before the increment (seq_cst). */
    uint32_t before = atomic_fetch_add_explicit(&word->seq, SD_WAKE, memory_order_seq_cst);
    if (!(before & SD_SLEEPER))
        return;
    before = atomic_fetch_and_explicit(&word->seq, ~SD_SLEEPER, memory_order_seq_cst);
    if (before & SD_SLEEPER) {
        if (word->counters)
            sd_note_wakeup(word->counters);
        futex_wake_all(&word->seq);
    }
}

static int wait_check(sd_ready_fn ready, void *arg, uint64_t deadline_ns, _Atomic int *lost,
                      uint64_t now)
{
    if (ready(arg))
        return 0;
    if (lost && atomic_load_explicit(lost, memory_order_acquire))
        return PTO_RUNTIME_ERR_DEVICE_LOST;
    if (deadline_ns && now >= deadline_ns)
        return PTO_RUNTIME_ERR_TIMEOUT;
    return 1;
}

_Thread_local struct sd_budget *sd_tl_budget;
_Thread_local struct sd_worker *sd_tl_worker;
_Thread_local struct sd_worker *sd_tl_self;

/* True when the AICPU thread pinned to this core's CPU is awake. */
static bool mate_awake(void)
{
    return sd_tl_worker && sd_core_gives_way(sd_tl_worker);
}

/* Whether a wait of this thread's job has taken it out of its budget's
 * awake count (it is over the budget, or parked); false outside waits. */
static _Thread_local bool tl_out;

/* This thread's place in the count, kept with its worker's own flag (read
 * by the core that gives way to it). mark_out: out, the global count
 * already dropped (by the budget's compare-and-swap). */
static void mark_out(void)
{
    if (sd_tl_worker)
        atomic_store_explicit(&sd_tl_worker->awake, 0, memory_order_relaxed);
    tl_out = true;
}

/* Takes this thread out of its budget's awake count (it parks, or its CPU
 * is taken). */
static void budget_leave(struct sd_budget *b)
{
    mark_out();
    atomic_fetch_sub_explicit(&b->awake, 1, memory_order_relaxed);
}

/* Counts this thread awake in its budget again (its wait is over). */
static void budget_rejoin(struct sd_budget *b)
{
    atomic_fetch_add_explicit(&b->awake, 1, memory_order_relaxed);
    if (sd_tl_worker)
        atomic_store_explicit(&sd_tl_worker->awake, 1, memory_order_relaxed);
    tl_out = false;
}

int platform_hint_budget_has_room(void)
{
    const struct sd_budget *b = sd_tl_budget;
    return !b || atomic_load_explicit(&b->awake, memory_order_relaxed) < b->cpus;
}

uint32_t platform_hint_budget_cpus(void)
{
    const struct sd_budget *b = sd_tl_budget;
    return b ? b->cpus : UINT32_MAX;
}

/* True for a core alone on its CPU (cpu_affinity.c): when more
 * threads are awake than CPUs, the excess is elsewhere, on a CPU it does
 * not run on, and its parking would leave its own CPU idle. */
static bool own_cpu(void)
{
    return sd_tl_worker && sd_tl_worker->placement.own_cpu;
}

int platform_hint_budget_fits(void)
{
    const struct sd_budget *b = sd_tl_budget;
    if (!b)
        return true;
    if (mate_awake())
        return false;
    if (own_cpu())
        return true;
    uint32_t awake = atomic_load_explicit(&b->awake, memory_order_relaxed);
    return tl_out ? awake < b->cpus : awake <= b->cpus;
}

/* Takes this thread, counted, out of its budget's awake count if more
 * threads than CPUs are awake (the excess parks, the rest spin on: one CAS
 * per try; a core alone on its CPU is never the excess), or if the AICPU
 * thread sharing its CPU is awake. True when it did. */
static bool budget_leave_if_over(struct sd_budget *b)
{
    if (mate_awake()) { /* its CPU is taken */
        budget_leave(b);
        return true;
    }
    if (own_cpu())
        return false;
    uint32_t awake = atomic_load_explicit(&b->awake, memory_order_relaxed);
    while (awake > b->cpus)
        if (atomic_compare_exchange_weak_explicit(&b->awake, &awake, awake - 1,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            mark_out();
            return true;
        }
    return false;
}

/* How long after a wake-up system call the woken thread may still be
 * waiting for a CPU: its scheduling delay, measured on these hosts at
 * 20-50 us (perf sched latency, bench_kernel's rounds). */
#define SD_WOKEN_RECENT_NS 30000u

/* A spinner that sees a wake-up system call of its device made since
 * *seen yields the CPU once for it. The kernel queues a woken thread
 * behind the thread running on the CPU it picks, and on two CPUs that is
 * often a spinner: measured, a round's scheduler woken to dispatch its
 * one task waited 50-100 us behind a core spinning on its doorbell (its
 * spin within the runnable budget, which counts the woken thread awake
 * but cannot say on which CPU it waits). The yield lets a thread queued
 * here run; if none is, it returns at once and the spin goes on. One
 * yield per wake-up, not per poll: no spinner turns into a yield loop. */
static void give_way_to_woken(const struct sd_wait_counters *counters, uint64_t *seen)
{
    uint64_t at = atomic_load_explicit(&counters->last_wakeup_ns, memory_order_relaxed);
    if (at > *seen) {
        *seen = at;
        sched_yield();
    }
}

bool sd_wait_either_supported(void)
{
    /* -1: not asked yet. futex_waitv with no futex is EINVAL where the
     * call exists, ENOSYS where it does not. */
    static _Atomic int supported = -1;
    int known = atomic_load_explicit(&supported, memory_order_relaxed);
    if (known < 0) {
        errno = 0;
        long rc = syscall(SYS_futex_waitv, NULL, 0u, 0u, NULL, CLOCK_MONOTONIC);
        known = rc == -1 && errno == EINVAL;
        atomic_store_explicit(&supported, known, memory_order_relaxed);
    }
    return known;
}

/* Sets the sleeper bit in the sequence `seen` that `word` held when looked
 * at, into *armed; false when a wake came since (the word moved on). */
static bool arm(struct sd_waitword *word, uint32_t seen, uint32_t *armed)
{
    *armed = seen | SD_SLEEPER;
    return seen == *armed ||
           atomic_compare_exchange_strong_explicit(&word->seq, &seen, *armed,
                                                   memory_order_seq_cst, memory_order_seq_cst);
}

/* Sleeps on a and b at once while they hold va and vb (futex_waitv),
 * until either is woken or deadline_ns (absolute, simdev_clock_ns's
 * CLOCK_MONOTONIC; 0 = none) passes. */
static void futex_wait_either(_Atomic uint32_t *a, uint32_t va, _Atomic uint32_t *b, uint32_t vb,
                              uint64_t deadline_ns)
{
    struct futex_waitv both[2] = {
        {.val = va, .uaddr = (uintptr_t)a, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG},
        {.val = vb, .uaddr = (uintptr_t)b, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG},
    };
    struct timespec until = {(time_t)(deadline_ns / 1000000000ull),
                             (long)(deadline_ns % 1000000000ull)};
    syscall(SYS_futex_waitv, both, 2u, 0u, deadline_ns ? &until : NULL, CLOCK_MONOTONIC);
}

/* Spins, then parks on `word` and, when `also` is not NULL, on `also` at
 * once (sd_wait_either): the same protocol on each word. */
static int wait_spin_then_park(struct sd_waitword *word, struct sd_waitword *also,
                               sd_ready_fn ready, void *arg, uint64_t spin_ns,
                               uint64_t deadline_ns, _Atomic int *lost, bool yield_to_budget)
{
    if (ready(arg))
        return 0;

    /* Spin phase: poll the predicate with pause hints, not yielding: a
     * sched_yield is a system call (~1 us under a paravirtualised kernel)
     * that a handoff between running threads would wait out, and on a host
     * with more device threads than CPUs a yield-spinner keeps taking a
     * CPU from the threads doing the work. The one exception is a thread
     * just woken (give_way_to_woken): one yield per wake-up. The budget is the caller's
     * (per role: sd_spin_ns in device_config.c); after it, park. Every 32 polls
     * (about a microsecond) look at the clock, and (yield_to_budget) at the
     * device's runnable budget: a waiter over it parks at once. The spin's
     * end is set at the first look (a wait that ends sooner, the common
     * case of a handoff, reads no clock). */
    struct sd_budget *budget = sd_tl_budget;
    bool yield = yield_to_budget && budget;
    uint64_t spin_end = 0;
    uint64_t woken_seen = 0; /* give_way_to_woken: the latest wake-up given way to */
    if (yield && budget_leave_if_over(budget))
        spin_ns = 0; /* over the budget already: no spin at all */
    for (uint32_t i = 1; spin_ns; i++) {
        if (ready(arg))
            return 0;
        if ((i & 31) == 0) {
            uint64_t now = simdev_clock_ns();
            int rc = wait_check(ready, arg, deadline_ns, lost, now);
            if (rc <= 0)
                return rc;
            if (spin_end == 0) {
                spin_end = now + spin_ns;
                woken_seen = now > SD_WOKEN_RECENT_NS ? now - SD_WOKEN_RECENT_NS : 0;
            } else if (now >= spin_end) {
                break;
            }
            if (yield && !tl_out && budget_leave_if_over(budget))
                break;
            if (yield && word->counters)
                give_way_to_woken(word->counters, &woken_seen);
        } else {
            sd_cpu_relax();
        }
    }

    /* Park phase: a thread in a job parks uncounted (sd_wait counts it
     * again on the way out). */
    if (budget && !tl_out)
        budget_leave(budget);
    for (;;) {
        atomic_fetch_add_explicit(&word->waiters, 1, memory_order_seq_cst);
        if (also)
            atomic_fetch_add_explicit(&also->waiters, 1, memory_order_seq_cst);
        /* seq_cst fence: the announcement before every look of the last
         * check (the predicate's own loads too), pairing with a waker's
         * fence between its state change and its look at waiters (e.g.
         * the runtime's submit that skips its step for an awake core) */
        atomic_thread_fence(memory_order_seq_cst);
        uint32_t seen = atomic_load_explicit(&word->seq, memory_order_seq_cst);
        uint32_t seen_also = also ? atomic_load_explicit(&also->seq, memory_order_seq_cst) : 0;
        uint64_t now = simdev_clock_ns();
        int rc = wait_check(ready, arg, deadline_ns, lost, now);
        /* Sleep only with the sleeper bit set in the seq we looked after,
         * on every word slept on (sd_wake); a failed swap means a wake
         * came since: look again. A bit set on `word` whose sleep does not
         * follow costs that word's next waker one needless system call. */
        uint32_t armed, armed_also = 0;
        if (rc > 0 && arm(word, seen, &armed) && (!also || arm(also, seen_also, &armed_also))) {
            if (word->counters)
                sd_note_park(word->counters);
            if (also)
                futex_wait_either(&word->seq, armed, &also->seq, armed_also, deadline_ns);
            else
                futex_wait(&word->seq, armed, deadline_ns ? deadline_ns - now : 0);
            if (word->counters)
                sd_note_unpark(word->counters);
        }
        atomic_fetch_sub_explicit(&word->waiters, 1, memory_order_relaxed);
        if (also)
            atomic_fetch_sub_explicit(&also->waiters, 1, memory_order_relaxed);
        if (rc <= 0)
            return rc;
    }
}

static int wait_counted(struct sd_waitword *word, struct sd_waitword *also, sd_ready_fn ready,
                        void *arg, uint64_t spin_ns, uint64_t deadline_ns, _Atomic int *lost,
                        bool yield_to_budget)
{
    /* A thread outside a job (no budget) is not counted. */
    int rc = wait_spin_then_park(word, also, ready, arg, spin_ns, deadline_ns, lost,
                                 yield_to_budget);
    if (tl_out)
        budget_rejoin(sd_tl_budget);
    /* Losing the device wakes every waiter, and may itself make a predicate
     * true (it bumps the sequences waiters watch): a loss always wins. */
    if (rc == 0 && lost && atomic_load_explicit(lost, memory_order_acquire))
        return PTO_RUNTIME_ERR_DEVICE_LOST;
    return rc;
}

int sd_wait(struct sd_waitword *word, sd_ready_fn ready, void *arg, uint64_t spin_ns,
            uint64_t deadline_ns, _Atomic int *lost)
{
    return wait_counted(word, NULL, ready, arg, spin_ns, deadline_ns, lost, false);
}

int sd_wait_either(struct sd_waitword *a, struct sd_waitword *b, sd_ready_fn ready, void *arg,
                   uint64_t spin_ns)
{
    return wait_counted(a, b, ready, arg, spin_ns, 0, NULL, false);
}

int sd_wait_within_budget(struct sd_waitword *word, sd_ready_fn ready, void *arg,
                          uint64_t spin_ns, uint64_t deadline_ns, _Atomic int *lost)
{
    return wait_counted(word, NULL, ready, arg, spin_ns, deadline_ns, lost, true);
}

/* Whether the device leaves the host a CPU (sd_spin_in_room). */
static bool room_left(struct sd_budget *b)
{
    return (uint64_t)atomic_load_explicit(&b->awake, memory_order_relaxed) +
               atomic_load_explicit(&b->idle_spinning, memory_order_relaxed) <
           (uint64_t)b->cpus + atomic_load_explicit(&b->host_running, memory_order_relaxed);
}

bool sd_spin_in_room(struct sd_budget *b, bool idle, sd_ready_fn ready, sd_progress_fn progress,
                     void *arg, uint64_t spin_ns)
{
    if (ready(arg))
        return true;
    if (!spin_ns || b->cpus < 2)
        return false;
    if (idle)
        atomic_fetch_add_explicit(&b->idle_spinning, 1, memory_order_relaxed);
    bool done = false;
    uint64_t end = 0;
    uint64_t seen = progress ? progress(arg) : 0;
    /* The room is looked at with the clock, about once a microsecond: a
     * thread counted for an instant (a job handed to a spinner, which
     * stops spinning) does not end the spin. */
    for (uint32_t i = 0; i || room_left(b); i++) {
        if (ready(arg)) {
            done = true;
            break;
        }
        if ((i & 31) == 31) {
            uint64_t now = simdev_clock_ns();
            int32_t cpu = sched_getcpu();
            atomic_store_explicit(idle ? &b->device_cpu : &b->sync_cpu, cpu, memory_order_relaxed);
            uint64_t count = progress ? progress(arg) : 0;
            /* Progress since the last look only moves the end: the room
             * and the CPU are looked at on every look but the first. */
            bool first = !end;
            if (first || count != seen)
                end = now + spin_ns;
            seen = count;
            if (!first && (now >= end || !room_left(b) ||
                           atomic_load_explicit(idle ? &b->sync_cpu : &b->device_cpu,
                                                memory_order_relaxed) == cpu))
                break; /* out of time, of room, or sharing its CPU with the other */
        } else {
            sd_cpu_relax();
        }
    }
    if (idle)
        atomic_fetch_sub_explicit(&b->idle_spinning, 1, memory_order_relaxed);
    atomic_store_explicit(idle ? &b->device_cpu : &b->sync_cpu, -1, memory_order_relaxed);
    return done;
}
