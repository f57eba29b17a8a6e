/*
 * runtime/watchdog.h — a scheduler's own thread after its handshake.
 *
 * Owns: the watch that sleeps between steps until the run ends, fails or
 * stops making progress, and the stall class of a run it fails. Must not
 * ring a core: the step and the exit of the cores are dispatch.c's.
 */
#ifndef SIMPLER_RUNTIME_WATCHDOG_H
#define SIMPLER_RUNTIME_WATCHDOG_H

#include "runtime/scheduler.h"

/* The watcher's own thread after the handshake (scheduler `S`, its token
 * just let go): a step of every scheduler on every wake-up, sleeping
 * between them, until the run has finished or failed, or no scheduler
 * made progress for sched_timeout_ms. Returns with the scheduler closed
 * (its token held), true when the watchdog expired: the caller takes the
 * other schedulers over (rt_sched_take_over) and fails the run with
 * rt_sched_fail_stalled. */
bool rt_sched_watch(struct sched *S);
/* Fails the run with SIMPLER_SCHED_ERR_TIMEOUT, its stall class taken
 * from the schedulers in `set` (n >= 1, their tokens held). */
void rt_sched_fail_stalled(struct sched *const *set, uint32_t n);

#endif /* SIMPLER_RUNTIME_WATCHDOG_H */
