/*
 * runtime/scheduler.h — the schedulers: ready tasks onto the cores.
 *
 * Owns: which scheduler owns which core, one scheduler's state (struct
 * sched: its cores and what is in flight on each), the scheduler thread's
 * entry and the exit of the cores a scheduler never met. The other
 * scheduler files share the state: dispatch.h (the step), placement.h
 * (which core gets a task), step_token.h (who runs the step),
 * watchdog.h (the own thread's watch).
 */
#ifndef SIMPLER_RUNTIME_SCHEDULER_H
#define SIMPLER_RUNTIME_SCHEDULER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/core_regs.h"
#include "runtime/entries.h"
#include "runtime/layout.h"
#include "runtime/task.h"
#include "simpler/device_fn.h"

struct rt_run;
struct simdev_core_regs;

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

/* How many dispatch ids a step keeps published and unfinished on one core
 * (at most RT_CORE_QUEUE): the one running and those queued behind it,
 * which the core starts the moment the one before finishes, without a
 * round trip through a step. */
#ifndef RT_CORE_DEPTH
#define RT_CORE_DEPTH 2u
#endif
_Static_assert(RT_CORE_DEPTH >= 1 && RT_CORE_DEPTH <= RT_CORE_QUEUE, "payload slots per core");

/* How many released tasks a core keeps for itself (sched_core.local). */
#define RT_LOCAL_MAX 16u

/* sched_core.cluster of a core that is part of no cluster. */
#define RT_NO_CLUSTER UINT32_MAX

/* One owned core, as its scheduler's steps see it. */
struct sched_core {
    uint32_t id;
    uint32_t type;    /* enum simdev_core_type */
    uint32_t cluster; /* RT_NO_CLUSTER when not part of one */
    struct simdev_core_regs *regs;
    uint64_t next_reg; /* the next dispatch id */
    uint64_t done_reg; /* ids below it are finished and applied; [done_reg, next_reg) in flight */
    struct rt_slot *inflight[RT_CORE_QUEUE]; /* by rt_payload_index of the id */
    uint64_t busy_since; /* when the oldest id in flight started, about (simdev clock) */
    uint32_t busy_periods; /* idle-to-busy changes, to time one in RT_TIME_EVERY */
    uint32_t untimed_polls; /* polls while busy and not timed, likewise */
    bool timed;             /* busy_since is set: the next poll takes a sample */
    /* Tiny tasks that this core's completions released and that wait for
     * room on it (placement.h, RT_SPREAD_WORTH_NS): in no ready queue, so
     * no other core takes them; the oldest at local[local_head]. */
    struct rt_slot *local[RT_LOCAL_MAX];
    uint32_t local_head, local_count;
    uint64_t local_since; /* when a drain first found no room for them; 0: not yet */
    bool joined;  /* in this round with its core loop (rendezvous.c): may ring it */
    bool waiting; /* arrived first, the core loop not yet */
    /* Its core asked to start (platform_core_start, dispatch.c): a core
     * loop not yet joined that will come. The round's core launch starts
     * its cores on demand: one never asked may never come this round. */
    bool asked;
};

/* One scheduler's step state, in the arena (inside struct rt_sched,
 * step_token.c): touched only by the holder of the scheduler's token. */
struct sched {
    struct rt_run *run;
    uint32_t index;
    uint32_t core_count;
    struct sched_core cores[SIMDEV_MAX_CORES];
    uint32_t cluster_count;
    uint32_t clusters[SIMDEV_MAX_CORES][3]; /* indices into cores: AIC, AIV0, AIV1 */
    struct rt_slot *held[RT_SHAPES];        /* a sync-start task waiting for room, or
                                               wide work for every core to join */
    /* Subtasks this scheduler dispatched: written by the token's holder,
     * read (relaxed) by the watchdog without the token. */
    _Atomic uint64_t dispatched;
    uint32_t completions; /* tasks completed by steps (token holder only) */
    struct rt_released released; /* made ready by the completions of one poll */
    bool has_shape[RT_SHAPES];   /* owns a unit that can run tasks of this shape */
    uint64_t backlog_since[RT_SHAPES]; /* when a step first saw RT_WAKE_BACKLOG queued; 0: not */
    uint64_t task_ns; /* running mean of a dispatch's time on a core; 0: none finished yet */
    bool exited; /* every owned core has been rung EXIT (rt_sched_exit_cores) */
    bool end_signal; /* a completion of the step in progress ended the run (rt_sched_step) */
    uint32_t waiting; /* owned cores with `waiting` set: their core loop not yet JOINED */
};

/* True when nothing is in flight on core `c`. */
static inline bool sched_core_idle(const struct sched_core *c)
{
    return c->done_reg == c->next_reg;
}

/* Idle and in the round: a step may ring it. A core whose core loop has
 * not joined yet (sched_core.waiting) is idle but not free. */
static inline bool sched_core_free(const struct sched_core *c)
{
    return c->joined && sched_core_idle(c);
}

/* Busy, with room for one more id behind the running one. */
static inline bool sched_core_can_queue(const struct sched_core *c)
{
    uint64_t inflight = c->next_reg - c->done_reg;
    return inflight > 0 && inflight < RT_CORE_DEPTH;
}

/* The scheduler whose thread watches the run (watchdog.c) and, at its
 * end, takes over every scheduler whose thread left after its handshake:
 * one thread waiting for the run's end, not one a scheduler, each woken
 * for the end on the way to the program's end. Scheduler 0 owns core 0,
 * so it always has cores. */
#define RT_WATCHER 0u

/* What a scheduler's own thread still does after its prologue. */
enum rt_sched_next {
    RT_SCHED_GONE,  /* nothing: its steps run on the threads that kick it,
                     * and the watcher ends it */
    RT_SCHED_WATCH, /* the watcher: watch the run, then end it */
    RT_SCHED_END,   /* it could not open: end its own cores */
};

/* Scheduler `index`'s prologue: its state, the handshake with its cores
 * and its opening (or closing, when the handshake failed). Runs once a
 * round, on its own thread (rt_schedule) or, before the run is published,
 * on the orchestrator's (aicpu_program.c), which then leaves the rest to
 * the scheduler's thread (rt_schedule_after). */
enum rt_sched_next rt_sched_prologue(struct rt_run *run, uint32_t index);

/* Scheduler thread `index` of run->schedulers: its prologue, its watch
 * until the run ends (watchdog.c), the exit of its cores. */
void rt_schedule(struct rt_run *run, uint32_t index);

/* The rest of scheduler thread `index` after a prologue that ended in
 * `next` (run on whichever thread). */
void rt_schedule_after(struct rt_run *run, uint32_t index, enum rt_sched_next next);

/* Marks JOINED the waiting cores whose core loop has arrived since (a step
 * calls it while S->waiting; the token's holder only). */
void rt_sched_see_joins(struct sched *S);

/* Leaves the round of every core still waiting for its core loop (a core
 * that joined meanwhile is marked JOINED instead): at the round's end,
 * before its exits are rung, or when the handshake fails. A core loop left
 * this way returns at once if it ever starts. */
void rt_sched_leave_waiting(struct sched *S);

/* For a scheduler that never saw the run initialised: settles the round of
 * every core it would have owned (ends a waiting core loop, leaves the
 * round of one that has not arrived), from the launch arguments and the
 * topology alone. */
void rt_exit_cores_uninitialised(const struct rt_launch_args *la, int device, uint32_t index);

#endif /* SIMPLER_RUNTIME_SCHEDULER_H */
