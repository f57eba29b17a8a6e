/*
 * runtime/step_token.h — who runs a scheduler's step.
 *
 * Owns: one token per scheduler (struct rt_sched, in the arena) that lets
 * one device thread at a time run the step, the note a thread leaves when
 * it finds the token taken, and the decision of a submit whether it must
 * run a step at all. Any device thread of the run may kick. Must not touch
 * the step state but through the step itself (dispatch.c).
 */
#ifndef SIMPLER_RUNTIME_STEP_TOKEN_H
#define SIMPLER_RUNTIME_STEP_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/scheduler.h"

struct rt_run;
struct rt_slot;

/* One scheduler's token and step state (step_token.c); rt_layout.scheds
 * holds SIMDEV_MAX_AICPU_THREADS - 1 of them. */
struct rt_sched;
size_t rt_sched_bytes(void);
/* Resets the schedulers' tokens for a new run (run_init, before the
 * schedulers are released): each is owned by its scheduler's own thread
 * until rt_sched_open. */
void rt_scheds_init(struct rt_run *run);
/* Runs scheduler `index`'s step on the calling thread, or, when another
 * thread is running it, leaves a note that makes that thread step again.
 * Never blocks. Called by a core after each FIN and by the orchestrator
 * after it published a ready task; safe from any device thread of the
 * run, and a no-op before the scheduler's handshake has ended and after
 * its exit. */
void rt_sched_kick(struct rt_run *run, uint32_t index);
/* Kicks every scheduler (rt_sched_kick): the watcher's own wake-ups. */
void rt_sched_kick_all(struct rt_run *run);
/* The orchestrator after it pushed ready task `s`: runs the steps that
 * dispatch it (every scheduler with room), unless an awake core that
 * fetches work while idle is sure to run one (see step_token.c). */
void rt_sched_publish(struct rt_run *run, const struct rt_slot *s);
/* The same after several pushes (host_build_graph's lay, hbg_boot.c):
 * `first` is the first task pushed since the last publish; `alike` says
 * that every one of them is of first's shape and one an idle core fetches
 * by itself (single-block, not sync-start, AIC or AIV), so that the look
 * for `first` stands for all; otherwise the steps with room run. */
void rt_sched_publish_batch(struct rt_run *run, const struct rt_slot *first, bool alike);

/* The scheduler thread's own calls (scheduler.c, watchdog.c). */

/* The step state of scheduler `index`: touched only while holding its
 * token (its own thread holds it until rt_sched_open). */
struct sched *rt_sched_state(struct rt_run *run, uint32_t index);
/* Its handshake JOINED the cores: lets go of the token the scheduler's
 * own thread held since rt_scheds_init, and runs the step a kick that
 * came meanwhile left a note for. */
void rt_sched_open(struct rt_run *run, uint32_t index);
/* A scheduler other than the watcher, its handshake done and its token
 * still held: true when it may open its scheduler and leave, its end
 * (closing it, ringing its cores out) then being the watcher's
 * (rt_sched_take_over); false when the watcher has ended the round
 * already, and the caller ends its own cores without opening. */
bool rt_sched_leave_to_watcher(struct rt_run *run, uint32_t index);
/* True once scheduler `index`'s thread left it to the watcher: its state
 * is initialised (and its `dispatched` count may be read) from then on. */
bool rt_sched_left(struct rt_run *run, uint32_t index);
/* The watcher at the round's end, for scheduler `index`: true when its
 * thread left it open (rt_sched_leave_to_watcher), which this call closes
 * (rt_sched_close: the token is now the caller's); false when its thread
 * has not opened it, and will end its own cores. */
bool rt_sched_take_over(struct rt_run *run, uint32_t index);
/* Its handshake failed, or it owns no core: closes the scheduler without
 * opening it (the token stays held), so every later kick does nothing and
 * no submit kicks it. */
void rt_sched_close_unopened(struct rt_run *run, uint32_t index);
/* Takes the token for good (the exit, the watchdog's verdict): marks the
 * scheduler closed so later kicks do nothing, then waits for a step in
 * progress to end. */
void rt_sched_close(struct rt_run *run, uint32_t index);

#endif /* SIMPLER_RUNTIME_STEP_TOKEN_H */
