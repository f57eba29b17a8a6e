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

/* The scheduler's own thread after the handshake (scheduler `S`, its
 * token just let go): a step on every wake-up, sleeping between them,
 * until the run has finished or failed, or the watchdog failed it for a
 * period without progress. Returns with the scheduler closed (its token
 * held). */
void rt_sched_watch(struct sched *S);

#endif /* SIMPLER_RUNTIME_WATCHDOG_H */
