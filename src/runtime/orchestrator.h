/*
 * runtime/orchestrator.h — the orchestrator thread: building the graph.
 *
 * Owns: the entry that runs an orchestration inside the runtime's outer
 * scope, and the reset of the orchestrator's state for a new run. The
 * orchestrator thread only: no other role calls into it.
 */
#ifndef SIMPLER_RUNTIME_ORCHESTRATOR_H
#define SIMPLER_RUNTIME_ORCHESTRATOR_H

#include "simpler/orchestration.h"

struct rt_run;

/* Orchestrator thread: runs the entry inside scope 0. */
void rt_orchestrate(struct rt_run *run, simpler_orch_entry_fn entry,
                    const struct simpler_orch_args *args);
/* Orchestrator thread, at each submit after the first and before any
 * wait: the orchestration goes on, so the core an earlier lone task owes
 * is started (dispatch.h, "owed"), the schedulers' threads are started
 * where the budget leaves a core a CPU beside them
 * (run->schedulers_at_submit) and the cores that share this thread's CPU
 * are let arrive, once (rt_let_mates_arrive). */
void rt_orch_goes_on(struct rt_run *run);
/* Orchestrator thread: starts the schedulers' threads if they are held
 * (run->others_held); before anything that waits for them. */
void rt_orch_start_schedulers(struct rt_run *run);
/* Prepares the orchestrator's state for a new run (after the rings). */
void rt_orchestrator_init(struct rt_run *run);

#endif /* SIMPLER_RUNTIME_ORCHESTRATOR_H */
