/*
 * runtime/dispatch.h — a scheduler's step: completions in, ready tasks out.
 *
 * Owns: the step that applies the owned cores' condition words (each
 * finished block, each completed task, the successors it released) and
 * dispatches queued tasks onto what is free, and the EXIT that ends the
 * owned cores' round: the doorbell writes of a scheduler that met its
 * cores (one that never did ends them in scheduler.c). Token holder only
 * (step_token.h runs the step). Must not choose a unit (placement.h).
 */
#ifndef SIMPLER_RUNTIME_DISPATCH_H
#define SIMPLER_RUNTIME_DISPATCH_H

#include "platform/platform.h"
#include "runtime/scheduler.h"

/*
 * One step: apply every owned core's condition word (placing what each
 * core's completions released), then dispatch what is queued onto what is
 * free. Caller holds the token. A step that finds the run finished ends
 * the round of this scheduler's cores at once (rt_sched_exit_cores), on
 * whichever thread runs it.
 */
void rt_sched_step(struct sched *S);

/* Tells every owned core loop in this round to return, once per round.
 * Cores not JOINED are never rung. Caller holds the token (or owns the
 * scheduler outright: its own thread, after its watch). */
void rt_sched_exit_cores(struct sched *S);

/*
 * A lone task's core, owed (docs/runtime.md, "The orchestrator runs a lone
 * task's core"): between rt_owe_cores_begin and rt_owe_cores_end, a step
 * on the calling thread that would start one core for a lone task (one
 * task queued that no joined core takes), while no core is owed yet,
 * puts its start off instead, in run->core_owed. Its
 * owners: the orchestrator's next submit or wait (rt_start_owed_core),
 * its end (rt_run_owed_core_here), and the watcher once RT_OWED_CORE_NS
 * have passed (rt_owed_core_due). Orchestrator thread only, around its
 * orchestration; not nested.
 */
void rt_owe_cores_begin(struct rt_run *run);
void rt_owe_cores_end(void);
/* Starts the owed core, if any (platform_core_start). Any thread. */
void rt_start_owed_core(struct rt_run *run);
/* Runs the owed core's block of this round's core launch here, as that
 * core (platform_core_run_here), or starts it; returns once its core loop
 * returned. A failed run's owed core is dropped (its round is left). */
void rt_run_owed_core_here(struct rt_run *run, platform_launch_match_fn mine, void *mine_arg);
/* When the owed core is due to be started by the watcher (ns, the
 * platform clock), or UINT64_MAX when none is owed. */
uint64_t rt_owed_core_due(struct rt_run *run);

/* How long a core stays owed at most, ns: then the watcher starts it. */
#define RT_OWED_CORE_NS 50000u
/* When the schedulers' threads of a TMR program start, counted from its
 * orchestration's start, if nothing started them before
 * (platform_aicpu_start_others_after; rt_orch_start_schedulers): an
 * orchestration that goes on outside the runtime (computing, or waiting
 * there for its own task) still gets its watcher, which starts a core
 * owed too long and judges a stall at sched_timeout_ms. Long
 * enough that setting the timer does not reprogram the CPU's own (a
 * deadline within the kernel's tick cost 7.3 us a setting here, one 5 ms
 * away 1.2 us; docs/performance.md, "The schedulers started on demand"),
 * and one setting serves every round for that long. */
#define RT_SCHEDULERS_DUE_NS 5000000u

#endif /* SIMPLER_RUNTIME_DISPATCH_H */
