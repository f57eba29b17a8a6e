/*
 * runtime/aicpu_program.h — the AICPU program of a round.
 *
 * Owns: rt_aicpu_round, which program mode (rt_aicpu_main, entries.h) and
 * kernel mode (kernel_mode.c) both run on the launch's AICPU threads.
 * Called once per thread per round, from the AICPU program only.
 */
#ifndef SIMPLER_RUNTIME_AICPU_PROGRAM_H
#define SIMPLER_RUNTIME_AICPU_PROGRAM_H

#include <stdint.h>

#include "runtime/entries.h"

struct rt_run;

/* One round on the AICPU threads of a launch: the last thread
 * orchestrates, the others schedule, the last one out writes the result
 * block. `rejected` (positive, or 0) fails the round right after the run is
 * initialised (a packet the device refused): the schedulers still meet and
 * end their cores. Returns, on the thread that wrote the result block, the
 * run's status (0 or a negated code); PTO_RUNTIME_ERR_INTERNAL on a
 * scheduler thread that never saw the run initialised (nobody writes the
 * block then); 0 on the others. */
int32_t rt_aicpu_round(const struct simdev_aicpu_ctx *ctx, const struct rt_launch_args *la,
                       int32_t rejected);

/* For each shape, the scheduler owning the most units of it serves the
 * shape's sync-start tasks (run->sync_owner, sync_units; from the run's
 * topology and schedulers). */
void rt_choose_sync_owners(struct rt_run *run);

/* The orchestrating thread (a TMR orchestrator, an HBG lay) sleeps until
 * every core that shares its CPU, started now, has arrived in the round
 * (or the run failed, or sched_timeout_ms passed). */
void rt_let_mates_arrive(struct rt_run *run);
#endif /* SIMPLER_RUNTIME_AICPU_PROGRAM_H */
