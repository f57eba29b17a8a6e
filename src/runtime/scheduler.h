/*
 * runtime/scheduler.h — the schedulers: ready tasks onto the cores.
 *
 * Owns: which scheduler owns which core, the scheduler thread's entry, the
 * exit of the cores a scheduler never met, and the step that other threads
 * run on a scheduler's behalf (rt_sched_kick, rt_sched_publish).
 */
#ifndef SIMPLER_RUNTIME_SCHEDULER_H
#define SIMPLER_RUNTIME_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/platform.h"
#include "runtime/entries.h"
#include "runtime/run.h"

struct rt_slot;

/* Whether a core of `type` (enum simdev_core_type), other than core
 * `except`, fetches work while idle (core_pulling) and is not parked: it is
 * running a kernel (its FIN's step will see the ready queue) or idle and
 * awake (its own wait will). A hint, like platform_hint_core_parked; callers pair
 * it with the parking core's announcement and fence (see core_loop.c). */
static inline bool rt_fetcher_awake(const struct rt_run *run, uint32_t type, uint32_t except)
{
    uint32_t first = type == SIMDEV_CORE_AIC ? 0 : run->aic_count;
    uint32_t end = type == SIMDEV_CORE_AIC ? run->aic_count : run->core_count;
    for (uint32_t c = first; c < end; c++)
        /* acquire: pairs with the core loop's release of core_pulling */
        if (c != except && atomic_load_explicit(&run->core_pulling[c], memory_order_acquire) &&
            !platform_hint_core_parked(run->core_regs[c]))
            return true;
    return false;
}

/*
 * Core ownership: scheduler thread t of n owns AIC core i when i % n == t,
 * and AIV core j (core id aic_count + j) with the cluster j / 2 when that
 * cluster exists (so a cluster {AIC c, AIV 2c, AIV 2c+1} has one owner),
 * else when j % n == t.
 */
static inline uint32_t rt_core_owner(uint32_t aic_count, uint32_t cluster_count,
                                     uint32_t schedulers, uint32_t core_id)
{
    if (core_id < aic_count)
        return core_id % schedulers;
    uint32_t j = core_id - aic_count;
    return j / 2 < cluster_count ? (j / 2) % schedulers : j % schedulers;
}

/* One scheduler's shared step state (scheduler.c); rt_layout.scheds holds
 * SIMDEV_MAX_AICPU_THREADS of them. */
struct rt_sched;
size_t rt_sched_bytes(void);
/* Resets the schedulers' tokens for a new run (run_init, before the
 * schedulers are released). */
void rt_scheds_init(struct rt_run *run);
/* Runs scheduler `index`'s step on the calling thread, or, when another
 * thread is running it, leaves a note that makes that thread step again.
 * Never blocks. Called by a core after each FIN and by the orchestrator
 * after it published a ready
 * task; safe from any device thread of the run, and a no-op before the
 * scheduler's handshake has ended and after its exit. */
void rt_sched_kick(struct rt_run *run, uint32_t index);
/* The orchestrator after it pushed ready task `s`: runs the steps that
 * dispatch it (every scheduler with room), unless an awake core that
 * fetches work while idle is sure to run one (see scheduler.c). */
void rt_sched_publish(struct rt_run *run, const struct rt_slot *s);

/* Scheduler thread `index` of run->schedulers. */
void rt_schedule(struct rt_run *run, uint32_t index);

/* For a scheduler that never saw the run initialised: settles the round of
 * every core it would have owned (ends a waiting core loop, leaves the
 * round of one that has not arrived), from the launch arguments and the
 * topology alone. */
void rt_exit_cores_uninitialised(const struct rt_launch_args *la, int device, uint32_t index);

#endif /* SIMPLER_RUNTIME_SCHEDULER_H */
