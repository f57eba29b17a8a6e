/*
 * runtime/placement.c — which core gets a task (placement.h).
 *
 * Owns: the free units a step's pass may use and when parked cores are
 * woken for queued work: the policy that trades a wake-up (tens of µs)
 * against queueing behind a busy core, on the platform's hints. Token
 * holder only (step_token.c): reads the step state, writes only its
 * backlog clock. Must not dispatch (dispatch.c).
 */
#include "platform/platform.h"
#include "runtime/layout.h"
#include "runtime/placement.h"
#include "runtime/ready_queue.h"
#include "runtime/run.h"
#include "runtime/scheduler.h"

/* Ready tasks of one shape queued beyond what the awake cores took that,
 * once they have stayed queued RT_WAKE_AGE_NS, make a step wake parked
 * cores (rt_sched_wake_parked). */
#ifndef RT_WAKE_BACKLOG
#define RT_WAKE_BACKLOG 4u
#endif

/* A backlog wakes a parked core after RT_WAKE_AGE_NS only while the
 * runnable budget has room (the woken core would otherwise take a CPU
 * from a thread already working: with short tasks the orchestrator's);
 * after RT_WAKE_STALL_NS whatever the budget. */
#ifndef RT_WAKE_STALL_NS
#define RT_WAKE_STALL_NS 1000000u
#endif

/* Nothing of `shape` waits for idle units at once (a held or queued
 * sync-start task): what is queued can run on whichever core takes it. */
static bool plain_work_only(const struct sched *S, uint32_t shape)
{
    return !S->held[shape] && !(S->index == S->run->sync_owner[shape] &&
                                rt_rq_maybe_nonempty(&S->run->sync_ready[shape]));
}

/*
 * Whether parked core `c` stays parked though idle: tasks are known to be
 * short (with long or unknown ones a wake-up pays, as everywhere in the
 * step), it gives way to the awake AICPU thread sharing its CPU (the
 * orchestrator, simdev placement), so waking it would take that CPU from
 * the orchestrator, nothing of `shape` needs idle units at once, and an
 * awake core of its type that fetches while idle will take the queued
 * work (its FIN's step, or its doorbell wait's look at the queue). The
 * cheap looks first: only a parked idle core in a pass that may wake one
 * asks. Measured: a step waking that core for a backlog of short
 * tasks made it preempt the orchestrator every few µs (hundreds of
 * wake-ups a run, each a switch on the orchestrator's CPU).
 */
static bool mate_to_spare(const struct sched *S, const struct sched_core *c, uint32_t type,
                          uint32_t shape)
{
    return sched_tasks_short(S) && platform_hint_core_gives_way(c->regs) &&
           plain_work_only(S, shape) && rt_fetcher_awake(S->run, type, c->id);
}

/* True when an owned core of `type` has not joined the round yet (its
 * core loop is starting: the scheduler opened without waiting for it). A
 * task is then not queued behind a busy core: that core may run a long
 * kernel, and the joining core kicks a step that gives it the task. */
static bool waiting_of_type(const struct sched *S, uint32_t type)
{
    for (uint32_t i = 0; i < S->core_count && S->waiting; i++)
        if (S->cores[i].waiting && S->cores[i].asked && S->cores[i].type == type)
            return true;
    return false;
}

uint32_t rt_sched_free_units(struct sched *S, uint32_t shape, enum unit_pass pass,
                             uint32_t *units)
{
    if (pass == UNITS_AWAKE && !sched_tasks_short(S))
        pass = UNITS_ANY; /* long or unknown tasks: a wake-up pays */
    uint32_t n = 0;
    if (shape == RT_SHAPE_MIX) {
        for (uint32_t k = 0; k < S->cluster_count && pass != UNITS_QUEUE; k++) {
            uint32_t *cl = S->clusters[k];
            if (sched_core_free(&S->cores[cl[0]]) && sched_core_free(&S->cores[cl[1]]) &&
                sched_core_free(&S->cores[cl[2]]))
                units[n++] = k;
        }
        return n;
    }
    uint32_t type = shape == RT_SHAPE_AIC ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV;
    if (pass == UNITS_QUEUE && waiting_of_type(S, type))
        return 0; /* a core of the type is still joining: it takes the task */
    uint32_t parked[SIMDEV_MAX_CORES], n_parked = 0;
    for (uint32_t i = 0; i < S->core_count; i++) {
        struct sched_core *c = &S->cores[i];
        if (c->type != type)
            continue;
        if (pass == UNITS_QUEUE) {
            if (sched_core_can_queue(c))
                units[n++] = i;
        } else if (sched_core_free(c)) {
            if (!sched_core_parked(c))
                units[n++] = i;
            else if (pass == UNITS_ANY && !mate_to_spare(S, c, type, shape))
                parked[n_parked++] = i;
        }
    }
    /* awake ones first, then the parked ones (UNITS_ANY) */
    for (uint32_t k = 0; k < n_parked; k++)
        units[n++] = parked[k];
    return n;
}

/*
 * Whether tasks of `shape` left after the awake cores took theirs should
 * wake parked cores (a wake-up costs tens of µs; an idle core parks early
 * while more device threads are awake than CPUs, platform_hint_core_parked): yes
 * for a sync-start task (it needs its units idle at once), when no owned
 * core of the shape is busy (nobody's FIN would step for them), and when
 * RT_WAKE_BACKLOG or more have been queued for RT_WAKE_AGE_NS (the awake
 * cores are not keeping up: a burst of short tasks that they drain sooner
 * than a parked core could wake wakes nobody). Otherwise the busy cores
 * take them at their next FIN, and a light load never wakes anybody per
 * task. The age is measured from the first step that saw the backlog;
 * the busy cores' FINs bring the steps that look again.
 */
bool rt_sched_wake_parked(struct sched *S, uint32_t shape)
{
    struct rt_run *run = S->run;
    if (!plain_work_only(S, shape))
        return true; /* sync-start work needs its units idle at once */
    uint64_t backlog = rt_rq_length(&run->ready[shape]);
    if (backlog < RT_WAKE_BACKLOG)
        S->backlog_since[shape] = 0;
    if (backlog == 0)
        return false;
    if (backlog >= RT_WAKE_BACKLOG) {
        uint64_t now = platform_clock_ns();
        if (S->backlog_since[shape] == 0)
            S->backlog_since[shape] = now;
        else if (now - S->backlog_since[shape] >= RT_WAKE_STALL_NS ||
                 (now - S->backlog_since[shape] >= RT_WAKE_AGE_NS && platform_hint_budget_has_room()))
            return true;
    }
    uint32_t type = shape == RT_SHAPE_AIC ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV;
    for (uint32_t i = 0; i < S->core_count; i++)
        if (S->cores[i].type == type && !sched_core_idle(&S->cores[i]))
            return false;
    return true;
}
