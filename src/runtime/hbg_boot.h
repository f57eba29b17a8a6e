/*
 * runtime/hbg_boot.h — host_build_graph on the device (runtime/hbg.h):
 * the boot of a run from its image, and the completion rule that takes
 * the place of fan-out lists. AICPU side only.
 */
#ifndef SIMPLER_RUNTIME_HBG_BOOT_H
#define SIMPLER_RUNTIME_HBG_BOOT_H

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
 * before any scheduler may look at it: checks the image (it trusts none
 * of it: BAD_PACKET), applies its zero-fills and element writes, writes
 * its edge log, lays every task into ring 0 at its index and classifies
 * each once: ready (its shape's queue) or parked on its latest-submitted
 * producer. Marks the whole graph submitted. 0, BAD_PACKET, or the code
 * the host build latched.
 */
int32_t rt_hbg_boot(struct rt_run *run, const struct rt_launch_args *la, const uint8_t *image,
                    size_t capacity);

/* Completion of `s` in an HBG run (rt_task_complete's): COMPLETED, then
 * each task parked on it is classified again — parked on its latest
 * producer still unfinished, or ready (into `released` when it fits
 * there, as a TMR completion does). Nothing is reclaimed. */
void rt_hbg_complete(struct rt_run *run, struct rt_slot *s, struct rt_released *released);

#endif /* SIMPLER_RUNTIME_HBG_BOOT_H */
