/*
 * runtime/placement.h — which core gets a task: the placement policy of
 * the schedulers' steps.
 *
 * Owns: the passes a step makes over its free units (awake cores, queueing
 * behind busy ones, parked ones), when tasks count as short, when parked
 * cores are worth waking, and whether an awake core fetches work by
 * itself. The platform's scheduling hints (platform.h, optional section)
 * are read here and nowhere else in the schedulers. Must not dispatch:
 * dispatch.c acts on what this finds.
 */
#ifndef SIMPLER_RUNTIME_PLACEMENT_H
#define SIMPLER_RUNTIME_PLACEMENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "platform/platform.h"
#include "runtime/run.h"
#include "runtime/scheduler.h"

/* The mean time of a dispatch on a core above which a step gives work to
 * parked cores as readily as to awake ones: the work then outweighs the
 * wake-up (12-39 us measured on our 2-CPU hosts). */
#ifndef RT_WAKE_WORTH_NS
#define RT_WAKE_WORTH_NS 20000u
#endif

/* How long queued work waits before a step gives it to a core that
 * would otherwise not get it: a parked core for a backlog (placement.c),
 * any core for the tasks a busy core kept (dispatch.c). */
#ifndef RT_WAKE_AGE_NS
#define RT_WAKE_AGE_NS 10000u
#endif

/* The mean time of a dispatch on a core below which a completion's
 * released tasks stay with the core that released them (sched_core.local)
 * rather than go to another core: their work is less than what moving them
 * costs (the producer's output, the task's cells and, for a fan-in, every
 * consumer's output cross between CPUs, 0.1-0.4 us a cache line on our
 * hosts). Measured on fan's tiny dependent tasks: one core ran them 2.5
 * times faster than two sharing them. Independent work (what an
 * orchestrator or a boot makes ready) is not released by a completion and
 * spreads as before; kept tasks that wait RT_WAKE_AGE_NS go to the ready
 * queue. */
#ifndef RT_SPREAD_WORTH_NS
#define RT_SPREAD_WORTH_NS 1500u
#endif

/* Which free units a pass of the step may use. */
enum unit_pass {
    UNITS_AWAKE,  /* idle cores that are not parked */
    UNITS_QUEUE,  /* busy cores with room for another id (never parked) */
    UNITS_ANY,    /* idle cores, awake ones first, then parked ones */
};

/* Whether core `c` sleeps in its doorbell wait (a platform hint). */
static inline bool sched_core_parked(const struct sched_core *c)
{
    return platform_hint_core_parked(c->regs);
}

/* Tasks are known to be short: a mean time of a dispatch has been
 * measured and is below RT_WAKE_WORTH_NS. Only then does a step leave a
 * parked core parked for the sake of queueing behind a busy one; with
 * long or unknown tasks the wake-up pays (or bounds the wait). */
static inline bool sched_tasks_short(const struct sched *S)
{
    return S->task_ns != 0 && S->task_ns < RT_WAKE_WORTH_NS;
}

/* A completion's released tasks stay with their core (RT_SPREAD_WORTH_NS). */
static inline bool sched_keep_local(const struct sched *S)
{
    return S->task_ns != 0 && S->task_ns < RT_SPREAD_WORTH_NS;
}

/* Whether a core of `type` (enum simdev_core_type), other than core
 * `except`, fetches work while idle (core_pulling) and is not parked: it is
 * running a kernel (its FIN's step will see the ready queue) or idle and
 * awake (its own wait will). A hint, like platform_hint_core_parked;
 * callers pair it with the parking core's announcement and fence (see
 * core_loop.c). */
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

/* Free units of `shape` for a pass: for AIC/AIV, the cores of that type
 * `pass` may use; for MIX, fully idle clusters (any pass but UNITS_QUEUE).
 * Writes their indices to `units` and returns how many. Token holder
 * only. */
uint32_t rt_sched_free_units(struct sched *S, uint32_t shape, enum unit_pass pass,
                             uint32_t *units);

/* Whether tasks of `shape` left after the awake cores took theirs should
 * wake parked cores (placement.c says when). Token holder only. */
bool rt_sched_wake_parked(struct sched *S, uint32_t shape);

#endif /* SIMPLER_RUNTIME_PLACEMENT_H */
