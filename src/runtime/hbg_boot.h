/*
 * runtime/hbg_boot.h — host_build_graph on the device (runtime/hbg.h):
 * the boot of a run from its image, and the completion rule that takes
 * the place of fan-out lists. AICPU side only.
 */
#ifndef SIMPLER_RUNTIME_HBG_BOOT_H
#define SIMPLER_RUNTIME_HBG_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_launch_args;
struct rt_released;
struct rt_run;
struct rt_slot;

/* A task's waiter list once the task has completed (rt_slot.hbg_waiters). */
#define RT_HBG_CLOSED UINT64_MAX

/*
 * Boots the run of `la` from the image at `image` (the arena's image
 * region, `capacity` bytes), on the thread that initialises the run,
 * before any scheduler may look at it: checks the whole image (it trusts
 * none of it: BAD_PACKET, with nothing run and nothing written), applies
 * its zero-fills and element writes and writes its edge log. The tasks are
 * laid after the run is published, by rt_hbg_lay. 0, BAD_PACKET, or the
 * code the host build latched.
 */
int32_t rt_hbg_boot(struct rt_run *run, const struct rt_launch_args *la, const uint8_t *image,
                    size_t capacity);

/*
 * Lays every task of a booted run into its slot, in image order, and
 * classifies each once: ready (its shape's queue) or parked on its
 * latest-submitted producer not yet complete. Runs on the booting thread
 * after the run is published, as a TMR orchestrator submits: the
 * schedulers and cores run the tasks laid so far meanwhile (a producer
 * always precedes its consumers, and the park protocol lets a producer
 * complete before, while or after its consumer parks). Publishes what it
 * made ready in batches (rt_sched_publish_batch), stops laying once the
 * run has failed, then marks the whole graph submitted and the
 * orchestration done (orch_done), and signals.
 */
void rt_hbg_lay(struct rt_run *run);

/* Completion of `s` in an HBG run (rt_task_complete's): COMPLETED, then
 * each task parked on it is classified again — parked on its latest
 * producer still unfinished, or ready (into `released` when it fits
 * there, as a TMR completion does). Nothing is reclaimed. True when it
 * ended the run (rt_task_complete's). */
bool rt_hbg_complete(struct rt_run *run, struct rt_slot *s, struct rt_released *released);

#endif /* SIMPLER_RUNTIME_HBG_BOOT_H */
