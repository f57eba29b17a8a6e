/*
 * simdev/cpu_affinity.h — where a device's threads run on the host's CPUs
 * (cpu_affinity.c).
 *
 * Owns: the CPU each core is pinned to, the primary CPU of a job's last
 * AICPU thread (the runtime's orchestrator) and the core that shares it,
 * and what each worker keeps of its own place. Best effort: a refused
 * affinity leaves a thread where the OS put it. Must not run jobs or
 * touch a device's launches.
 */
#ifndef SIMDEV_CPU_AFFINITY_H
#define SIMDEV_CPU_AFFINITY_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct sd_device;
struct sd_job;
struct sd_worker;

/* Where an AICPU worker may run (place_aicpu, cpu_affinity.c): the CPUs it was
 * created with, only the orchestrator's CPU, or every CPU but that one. */
enum sd_place { SD_PLACE_ANY, SD_PLACE_PRIMARY, SD_PLACE_OTHERS };

/* What placement keeps on each device thread. */
struct sd_worker_placement {
    /* For the core that shares its CPU with the AICPU thread running a
     * job's last thread, that thread while it does (its `awake` says
     * whether it runs the job and is not parked); else NULL. */
    _Atomic(struct sd_worker *) mate;
    /* A core pinned to a CPU that no other core of its device uses. Its
     * CPU is its own but for `mate`, so the budget's device-wide count
     * never parks it early (park.c). */
    bool own_cpu;
    /* The place of an AICPU worker, kept from job to job and changed only
     * by the worker's own thread. */
    enum sd_place place;
};

/* A device's placement, set when its threads start (sd_place_threads). */
struct sd_placement {
    /* The CPU a job's last AICPU thread runs on and the core sharing that
     * CPU, or -1 each. */
    int primary_cpu;
    int primary_mate;
    _Atomic(struct sd_worker *) primary_owner; /* the thread that has the place, or NULL */
    cpu_set_t all_cpus;    /* the process's CPUs */
    cpu_set_t other_cpus;  /* all_cpus but primary_cpu (when that is set) */
};

/* Pins the device's `ncores` started cores and chooses the primary CPU,
 * and sets the runnable budget's count of CPUs. Device start, before any
 * job runs. */
void sd_place_threads(struct sd_device *dev, uint32_t ncores);
/* Places the calling AICPU worker `w` for thread `index` of `job`; true
 * when it took the primary place, which it gives back with
 * sd_place_primary_end when the job's function returns. */
bool sd_place_take(struct sd_device *dev, struct sd_worker *w, const struct sd_job *job,
                   uint32_t index);
void sd_place_primary_end(struct sd_device *dev);

#endif /* SIMDEV_CPU_AFFINITY_H */
