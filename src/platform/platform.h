/*
 * platform/platform.h — what code running on the device runs on.
 *
 * Owns: the narrow interface between the device-side runtime (src/runtime:
 * the orchestrator, the schedulers and the core loop, running on the AICPU
 * threads and the AICores) and the device under it: the per-core register
 * windows, the waits and notifications between device threads, the clock,
 * the topology and the device's health, plus one optional section of
 * scheduling hints. This is what a port to another device (CUDA, CANN)
 * implements; src/simdev implements it for the simulated device.
 *
 * Must not: declare anything host code calls. Host code puts work on the
 * device through include/simpler/device.h and never includes this file;
 * device-side code never includes device.h (the build enforces both:
 * src/CMakeLists.txt, tools/check-layers.sh).
 */
#ifndef SIMPLER_PLATFORM_H
#define SIMPLER_PLATFORM_H

#include <stdatomic.h>
#include <stdint.h>

#include "simpler/device_fn.h"

/* --------------------------------------------------------------- topology */

/* The shape of a device, as device-side code needs it. */
struct platform_topology {
    uint32_t aicpu_threads;
    uint32_t aic_cores; /* cube cores: core ids 0..aic_cores-1 */
    uint32_t aiv_cores; /* vector cores: core ids aic_cores.. */
};

/* Writes the topology of `device`: 0, or INVALID_ARGUMENT for a device
 * that does not exist. */
int platform_topology(int device, struct platform_topology *out);

/* 1 if `device` is lost (an unrecoverable fault happened), else 0. */
int platform_device_lost(int device);

/* Monotonic device clock in nanoseconds (the clock of simdev_clock_ns). */
uint64_t platform_clock_ns(void);

/*
 * Marks `point` (enum simdev_point, simpler/device_fn.h) of the
 * runtime's protocol on the calling device thread's timeline, for the
 * per-hop breakdown of a round. While no timeline records anywhere it
 * costs one relaxed load; a thread that is not a device thread marks
 * nothing.
 */
extern _Atomic uint32_t platform_marking;
void platform_mark_slow(uint32_t point);
static inline void platform_mark(uint32_t point)
{
    if (atomic_load_explicit(&platform_marking, memory_order_relaxed))
        platform_mark_slow(point);
}

/* ------------------------------------------------------ register windows */

/*
 * Each AICore has a register window: a doorbell word written by the AICPU
 * side and a condition word written by the core. Writes are release stores,
 * reads acquire loads; a write wakes the other side if it is parked. The
 * device runtime's dispatch protocol is built on these. Both words are 0
 * when the device starts (first use, or after a reset) and keep their
 * values across launches, so a protocol carries its own sequence numbers.
 */

/* The window of `core` on `device` (valid until the device is reset). */
struct simdev_core_regs *platform_core_regs(int device, uint32_t core);

/* AICPU side: publish `value` in the core's doorbell (release; pairs with
 * the acquire in platform_wait_doorbell) and wake the core if parked. */
void platform_ring_doorbell(struct simdev_core_regs *regs, uint64_t value);

/* Acquire load of the core's condition word. */
uint64_t platform_read_cond(const struct simdev_core_regs *regs);

/* Core side: acquire load of the doorbell. */
uint64_t platform_read_doorbell(const struct simdev_core_regs *regs);

/*
 * Core side: waits until the doorbell differs from `last_seen`, spinning for
 * the device's spin_ns and then parking. Writes the new value to *value.
 * TIMEOUT after `timeout_ns` (0 = wait forever); DEVICE_LOST if the device
 * is lost while waiting.
 */
int platform_wait_doorbell(struct simdev_core_regs *regs, uint64_t last_seen,
                              uint64_t timeout_ns, uint64_t *value);

/*
 * Core side: platform_wait_doorbell that also ends when also(also_arg)
 * returns nonzero (polled with the doorbell while the core spins, and once
 * more before it parks; a parked core is woken by a ring only). Then it
 * returns 0 with *value = last_seen; a doorbell that moved wins. `also`
 * must not block; also_arg is borrowed for the call. For a core that
 * fetches work itself while it idles (platform_hint_budget_fits tells it whether
 * it may).
 */
int platform_wait_doorbell_or(struct simdev_core_regs *regs, uint64_t last_seen,
                                 uint64_t timeout_ns, uint64_t *value, int (*also)(void *arg),
                                 void *also_arg);

/*
 * AICPU side: starts the core's block of a core launch made with its
 * cores started on demand (SIMDEV_BATCH_AICORE_ON_DEMAND), or of the next
 * such launch when none is handed out yet. A core already started, or
 * asked for twice, costs nothing more than the first start. Never blocks.
 */
void platform_core_start(struct simdev_core_regs *regs);

/*
 * AICPU side: runs on the calling thread every block of the device's
 * on-demand core launch that was never started (each as its core, one
 * after the other), if `mine(fn, args, args_size, mine_arg)` says that
 * launch (its function and argument bytes) is the caller's: the core
 * launch in flight may be another program's. Only for a program that
 * knows these blocks return at once: the runtime, once its round has left
 * every core that did not arrive. `mine` runs under simdev's launch lock
 * and must only look at its arguments. Returns how many ran.
 */
typedef int (*platform_launch_match_fn)(simdev_aicore_fn fn, const void *args, size_t args_size,
                                        void *mine_arg);
uint32_t platform_cores_run_unstarted(int device, platform_launch_match_fn mine,
                                      void *mine_arg);

/*
 * AICPU side: platform_core_start, except that when the core's block of
 * the held on-demand launch that `mine` says is the caller's (as
 * platform_cores_run_unstarted) has not been taken by its core, the
 * calling thread runs it, as that core, and returns 1 once it returned.
 * Returns 0 when its core took the block, or when no such launch is held
 * yet and the core was asked to start. For an AICPU thread with nothing
 * else to do until that core loop ends (the runtime's orchestrator after
 * its orchestration, docs/runtime.md).
 */
int platform_core_run_here(struct simdev_core_regs *regs, platform_launch_match_fn mine,
                           void *mine_arg);

/*
 * AICPU side, on the last thread of a launch made with its other threads
 * started on demand (SIMDEV_BATCH_AICPU_LEAD): starts them (those not
 * started yet); or has them started once `ns` have passed, unless they
 * start sooner. Anywhere else, nothing. Never blocks. Those still held
 * when the last thread returns start then (one alone runs on its thread).
 */
void platform_aicpu_start_others(void);
void platform_aicpu_start_others_after(uint64_t ns);

/* Core side: publish `value` in the condition word (release; pairs with the
 * acquire in platform_read_cond / platform_cond_wait) and wake a parked
 * AICPU waiter. */
void platform_write_cond(struct simdev_core_regs *regs, uint64_t value);

/*
 * AICPU side: every condition write on the device bumps a device-wide
 * sequence (a 32-bit sum of counters that wrap: compare it only for
 * equality).
 * platform_cond_seq reads it; platform_cond_wait waits (spin, then park) until
 * it differs from `seen`, so a scheduler can watch many cores at once. TIMEOUT after timeout_ns (0 = forever); DEVICE_LOST as above.
 */
uint64_t platform_cond_seq(int device);
int platform_cond_wait(int device, uint64_t seen, uint64_t timeout_ns);

/* AICPU side: bumps the device-wide condition sequence without a core
 * write, waking every platform_cond_wait (one AICPU thread telling another
 * that it has new work, like a hardware send-event). */
void platform_cond_signal(int device);

/*
 * Notification channels: per device, PLATFORM_NOTIFY_CHANNELS sequences that
 * AICPU threads signal and wait on, so one thread can wake another for one
 * reason only (the device-wide condition sequence above wakes on every core
 * write). platform_notify_seq reads a channel's sequence (31 bits, wrapping:
 * compare for equality); platform_notify_wait waits (spin, then park) until
 * it differs from `seen` — TIMEOUT after timeout_ns (0 = forever),
 * DEVICE_LOST, INVALID_ARGUMENT for a bad channel; platform_notify_signal
 * bumps it (release) and wakes its waiters.
 */
#define PLATFORM_NOTIFY_CHANNELS 8
uint64_t platform_notify_seq(int device, uint32_t channel);
int platform_notify_wait(int device, uint32_t channel, uint64_t seen, uint64_t timeout_ns);
void platform_notify_signal(int device, uint32_t channel);
/* platform_notify_wait that spins as long as a core on its doorbell
 * (simdev_config spin_ns) before it parks, cut short, as that core's, by
 * the device's runnable budget: for a waiter whose wake-up would lie on a
 * round's path and whose signal comes soon (the runtime's watcher waiting
 * for its run's end). */
int platform_notify_wait_within_budget(int device, uint32_t channel, uint64_t seen,
                                       uint64_t timeout_ns);

/* ------------------------------------------------------- scheduling hints */

/*
 * Optional. A device whose units share a few host CPUs (the simulator)
 * tells the schedulers which cores are cheap to wake; a device with real
 * cores has nothing to say, and without SIMPLER_PLATFORM_HINTS each hint
 * answers "no hint": no core parked, none giving way, none sharing the
 * caller's CPU, and room in every budget. Scheduling stays correct either
 * way; only its cost changes.
 */
#if SIMPLER_PLATFORM_HINTS

/*
 * AICPU side: 1 while the core's thread is parked waiting for its
 * doorbell (a hint, like a core's power state: it may change at once).
 * Ringing a parked core is correct but costs a wake-up (tens of µs on a
 * host with few CPUs); an idle core parks early when more device threads
 * are awake than the host has CPUs, so a dispatcher with a choice prefers
 * cores that are not parked.
 */
int platform_hint_core_parked(const struct simdev_core_regs *regs);

/*
 * AICPU side: 1 while the core gives way to an AICPU thread of its device
 * that shares its CPU and is awake (placement: when the cores fill every
 * CPU, the last core shares its CPU with a job's last AICPU thread, the
 * runtime's orchestrator). Ringing such a core, parked, wakes a thread
 * that takes the CPU from that AICPU thread; a dispatcher with another
 * way to run the work leaves it parked. A hint, like platform_hint_core_parked.
 */
int platform_hint_core_gives_way(const struct simdev_core_regs *regs);

/*
 * AICPU side: 1 when the core shares its CPU with the calling AICPU thread
 * (it gives way to this thread while it is awake: placement, as above);
 * 0 for any other core, and outside a device thread. The runtime's
 * orchestrator lets such a core arrive before it submits: the core cannot
 * run while the orchestrator holds their CPU.
 */
int platform_hint_core_shares_my_cpu(const struct simdev_core_regs *regs);

/*
 * AICPU side: 1 while the device of the calling device thread has fewer
 * threads awake than its runnable budget (simdev_config runnable_cpus), so
 * waking a parked core would not take a CPU from a thread already working;
 * 1 outside a device thread. A hint, like platform_hint_core_parked.
 */
int platform_hint_budget_has_room(void);

/*
 * AICPU side: the runnable budget of the calling device thread's device
 * (simdev_config runnable_cpus: how many of its threads may be awake at
 * once); UINT32_MAX outside a device thread, or with no budget. The
 * runtime's orchestrator starts its schedulers' threads beside itself
 * only where the budget leaves a CPU for a core too. A hint, like
 * platform_hint_core_parked.
 */
uint32_t platform_hint_budget_cpus(void);

/*
 * Device thread side: 1 while the calling thread, awake, fits its device's
 * runnable budget: at most runnable_cpus threads awake, counting itself
 * (a thread that a wait has taken out of the count, to park, needs a place
 * free); 1 outside a device thread. For the predicate of a core's
 * platform_wait_doorbell_or, which runs in the wait: a core over the
 * budget leaves work nobody handed it to cores that fit.
 */
int platform_hint_budget_fits(void);

#else

static inline int platform_hint_core_parked(const struct simdev_core_regs *regs)
{
    (void)regs;
    return 0;
}
static inline int platform_hint_core_gives_way(const struct simdev_core_regs *regs)
{
    (void)regs;
    return 0;
}
static inline int platform_hint_core_shares_my_cpu(const struct simdev_core_regs *regs)
{
    (void)regs;
    return 0;
}
static inline int platform_hint_budget_has_room(void)
{
    return 1;
}
static inline uint32_t platform_hint_budget_cpus(void)
{
    return UINT32_MAX;
}
static inline int platform_hint_budget_fits(void)
{
    return 1;
}

#endif /* SIMPLER_PLATFORM_HINTS */

#endif /* SIMPLER_PLATFORM_H */
