/*
 * simdev/park.h — spin-then-park waiting for device threads (park.c).
 *
 * Owns: the wait word every simdev wait parks on, the runnable budget waits
 * count against, and sd_wait / sd_wake. Must not know any device state: a
 * wait knows only its word, its predicate and the calling thread's budget.
 */
#ifndef SIMDEV_PARK_H
#define SIMDEV_PARK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "simpler/simdev_profile.h"

/* The host's cache line: shared hot fields of simdev sit on their own. */
#define SD_CACHELINE 64

struct sd_worker;

/*
 * A wait word: a waiter spins on its predicate for a bounded time, then
 * parks on `seq` with a futex. A waker changes the predicate's state, then
 * calls sd_wake. `seq` holds the count of wakes (shifted left one bit) and,
 * in bit 0, the sleeper bit: a waiter sets it before it sleeps, and the
 * first waker to see it clears it and makes the one futex syscall that
 * wakes every sleeper; wakers after it, until a waiter sleeps again, make
 * none (model/park_wake.pml). Readers of the count use sd_word_wakes.
 * `waiters` counts the threads parking or parked (a hint for placement,
 * and the half of Dekker pairs whose other half is the caller's).
 */
struct sd_waitword {
    _Atomic uint32_t seq;
    _Atomic uint32_t waiters;
    struct sd_wait_counters *counters; /* its device's (sd_word_bind); NULL: not counted */
};

/* What waiting costs a device (simpler/simdev_profile.h): bumped only on
 * paths that are slow already (a sleep, a wake-up system call, a stream
 * op, a launch), never per task. */
struct sd_timeline;
struct sd_wait_counters {
    _Alignas(SD_CACHELINE) _Atomic uint64_t wakeups;
    _Atomic uint64_t parks;
    _Atomic uint64_t handoffs;
    _Atomic uint64_t taken; /* simdev_wait_stats' `taken` */
    /* simdev_clock_ns() at the latest wake-up system call (sd_note_wakeup):
     * a spinner gives way to a thread that may still wait for its CPU
     * (park.c, give_way_to_woken) */
    _Atomic uint64_t last_wakeup_ns;
    struct sd_timeline *timeline; /* its device's: sleeps and wake-ups are marked there */
};

/*
 * Initialises a lock shared by the host's threads and the device's: one
 * that spins a while before it sleeps (glibc's adaptive mutex). Its
 * sections are a few stores long, and a thread that slept on it cost the
 * one that let it go a wake-up system call (docs/device.md, "What an
 * enqueue costs").
 */
static inline void sd_mutex_init(pthread_mutex_t *lock)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(lock, &attr);
    pthread_mutexattr_destroy(&attr);
}

/* Counts `n` into one of a device's counters (NULL: nothing). */
static inline void sd_count_wait(_Atomic uint64_t *counter, uint64_t n)
{
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

/* Marks a PARK, UNPARK or WAKEUP of the calling thread on the timeline of
 * `counters`' device (profile.c; nothing while it does not record). */
void sd_mark_wait(const struct sd_wait_counters *counters, enum simdev_mark mark);

/* A wake-up system call about to be made: counted and marked. */
static inline void sd_note_wakeup(struct sd_wait_counters *counters)
{
    atomic_store_explicit(&counters->last_wakeup_ns, simdev_clock_ns(), memory_order_relaxed);
    sd_count_wait(&counters->wakeups, 1);
    sd_mark_wait(counters, SIMDEV_MARK_WAKEUP);
}

/* The calling thread goes to sleep: counted and marked. */
static inline void sd_note_park(struct sd_wait_counters *counters)
{
    sd_count_wait(&counters->parks, 1);
    sd_mark_wait(counters, SIMDEV_MARK_PARK);
}

/* The calling thread is running again after a sleep sd_note_park noted. */
static inline void sd_note_unpark(struct sd_wait_counters *counters)
{
    sd_mark_wait(counters, SIMDEV_MARK_UNPARK);
}

/* Makes `word`'s sleeps and wake-ups count in `counters`. Before the word
 * is shared. */
static inline void sd_word_bind(struct sd_waitword *word, struct sd_wait_counters *counters)
{
    word->counters = counters;
}

/* The word's count of wakes (mod 2^31), without the sleeper bit. */
static inline uint32_t sd_word_wakes(struct sd_waitword *word)
{
    /* acquire: pairs with the increment in sd_wake */
    return atomic_load_explicit(&word->seq, memory_order_acquire) >> 1;
}

typedef bool (*sd_ready_fn)(void *arg);
/* A count that grows while what a waiter waits for makes progress. */
typedef uint64_t (*sd_progress_fn)(void *arg);

/*
 * The runnable budget of a device (the engine rule: never more runnable
 * device threads than host CPUs). `awake` counts the device threads that
 * run a job (a launch's AICPU threads, its cores) and are not parked: a
 * thread in a job parks uncounted (sd_wait decrements before the futex and
 * counts itself again after it). A waiter that may give its CPU up (a core
 * idle on its doorbell) leaves its spin early while more threads are awake
 * than `cpus`, taking itself out of the count with one compare-and-swap,
 * so exactly the excess parks and the others keep spinning.
 */
struct sd_budget {
    _Alignas(SD_CACHELINE) _Atomic uint32_t awake;
    /* Idle device threads spinning for their next job (sd_spin_in_room) */
    _Atomic uint32_t idle_spinning;
    /* The CPU the device's AICPU thread last seen running (a job's start,
     * an idle spin) and a spinning sync's, or -1: two spinners on one CPU
     * take turns by time slice while the other CPU may idle (this host's
     * kernel packs threads onto few vCPUs), so each gives way to the other
     * by parking (sd_spin_in_room). */
    _Atomic int32_t device_cpu, sync_cpu;
    /* Host threads running a device job themselves (a sync that took a
     * program, sd_worker_run_taken; a launch or sync running a brief job,
     * sd_worker_run_here): counted in `awake` for it, on the CPU the
     * device leaves the host, which then has none to leave: an idle
     * spinner may take the other. */
    _Atomic uint32_t host_running;
    uint32_t cpus; /* the host CPUs this process may use (device start) */
};

/*
 * Spins until ready(arg), for at most spin_ns, while the device leaves a
 * CPU to the host: its threads in jobs and its idle spinners (this one
 * among them when `idle`: an idle device thread) are fewer than the
 * host's CPUs. Returns whether ready(arg) came true; the caller parks
 * otherwise. Never spins on one CPU or with spin_ns 0. For an idle AICPU
 * thread after its job (the next back-to-back round's) and a stream sync
 * (the caller's): with a round on one device thread, both then wait
 * awake, two threads on two CPUs. `progress` (NULL: none): each time its
 * count grows the spin_ns start again, so a sync behind a queue of short
 * ops that keep completing stays awake to its end (a replayed graph's
 * rounds: docs/device.md, "Waiting awake").
 */
bool sd_spin_in_room(struct sd_budget *b, bool idle, sd_ready_fn ready, sd_progress_fn progress,
                     void *arg, uint64_t spin_ns);

/* Runs on every device thread while it runs a job (worker.c sets it around
 * the job): the budget its waits count against, or NULL. */
extern _Thread_local struct sd_budget *sd_tl_budget;
/* The device thread running the job (set with sd_tl_budget), or NULL. */
extern _Thread_local struct sd_worker *sd_tl_worker;
/* The device thread this host thread is, in a job or idle (worker.c sets
 * it for the thread's life: timeline marks name it), or NULL. */
extern _Thread_local struct sd_worker *sd_tl_self;

/* Bumps the sequence and wakes every parked waiter. */
void sd_wake(struct sd_waitword *word);

/*
 * Waits until ready(arg) is true: spins for spin_ns (never yielding), then
 * parks. Returns 0,
 * PTO_RUNTIME_ERR_TIMEOUT once deadline_ns (absolute, simdev_clock_ns; 0 =
 * none) passes, or PTO_RUNTIME_ERR_DEVICE_LOST when *lost becomes nonzero
 * (lost may be NULL). Whoever sets *lost must sd_wake the word afterwards.
 */
int sd_wait(struct sd_waitword *word, sd_ready_fn ready, void *arg, uint64_t spin_ns,
            uint64_t deadline_ns, _Atomic int *lost);

/*
 * sd_wait on two words at once (an idle AICPU worker: its own word and
 * the word a launch of several AICPU threads wakes them all on): the same
 * spin, then the same parking protocol on each word and one sleep on
 * both, so a sd_wake of either ends it. No deadline, no device loss: the
 * wait for a job, which a launch or the device's stop ends. Requires
 * sd_wait_either_supported() (futex_waitv, Linux 5.16).
 */
int sd_wait_either(struct sd_waitword *a, struct sd_waitword *b, sd_ready_fn ready, void *arg,
                   uint64_t spin_ns);

/* Whether the kernel can sleep on two words at once (sd_wait_either);
 * asked once. */
bool sd_wait_either_supported(void);

/* sd_wait whose spin also ends, and the thread parks, while the calling
 * thread's budget (sd_tl_budget) has more threads awake than CPUs. For
 * waiters whose wake-up is off the per-task path when it matters: a core
 * idle on its doorbell, whose scheduler prefers cores that are awake. */
int sd_wait_within_budget(struct sd_waitword *word, sd_ready_fn ready, void *arg,
                          uint64_t spin_ns, uint64_t deadline_ns, _Atomic int *lost);

#endif /* SIMDEV_PARK_H */
