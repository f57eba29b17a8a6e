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

#endif /* SIMPLER_RUNTIME_DISPATCH_H */
