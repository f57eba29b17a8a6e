/*
 * simdev/worker.h — a device's persistent threads: its AICPU threads and
 * its AICores (worker.c).
 *
 * Owns: each worker's thread, its mailbox for jobs and its awake flag, and
 * the per-device set of workers. A worker runs the jobs launches hand it
 * (launch.h); where it runs is placement's (cpu_affinity.h). Must not choose
 * which worker runs a job: the launch does.
 */
#ifndef SIMDEV_WORKER_H
#define SIMDEV_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "simdev/park.h"
#include "simdev/cpu_affinity.h"
#include "simpler/device_fn.h"

struct sd_device;
struct sd_job;

/* One persistent device thread: an AICPU thread or an AICore. */
struct sd_worker {
    struct sd_device *dev;
    pthread_t thread;
    bool is_core;
    uint32_t index; /* AICPU thread index or core id */
    struct sd_worker_placement placement;
    _Alignas(SD_CACHELINE) _Atomic uint32_t awake;
    /* Set by the launcher, taken (swapped back to NULL) by the worker. */
    _Alignas(SD_CACHELINE) _Atomic(struct sd_job *) job;
    /* Its job was taken by a sync before it began it (launch.c,
     * sd_launch_run_unstarted_program): it wakes to wait awake as after a
     * job. Set with job, on its line. */
    _Atomic bool job_taken;
    /* The launcher wakes an AICPU thread here; a core is woken here alone
     * (sd_core_start) or with every core on cores_wake. */
    struct sd_waitword wake;
    /* A core's start asked before its block of a held job was handed out
     * (sd_core_start); taken by the hand-out or by the start itself. */
    _Atomic uint32_t start_asked;
};

/* A device's workers. */
struct sd_workers {
    struct sd_worker aicpu[SIMDEV_MAX_AICPU_THREADS];
    struct sd_worker cores[SIMDEV_MAX_CORES];
    /* Idle cores all wait here: an AICore launch takes every core, and one
     * wake-up system call wakes them all (one per core, before: the
     * launcher spent 10-40 us in each, one core after the other). */
    _Alignas(SD_CACHELINE) struct sd_waitword cores_wake;
    /* Idle AICPU threads wait on their own word and on this one at once
     * (sd_wait_either): a launch of several AICPU threads wakes them all
     * with one wake-up system call, a one-thread launch its thread alone.
     * Measured: a kernel-mode round's program launch made two, 6-7 us
     * apart on the launching thread, and a back-to-back round 1.2-2.5
     * wake-ups more in all (docs/performance.md). An idle thread that the
     * launch did not take looks and sleeps again. Never woken where the
     * kernel cannot sleep on two words. */
    _Alignas(SD_CACHELINE) struct sd_waitword aicpu_wake;
    _Atomic int stopping; /* set before the workers are woken to exit */
};

/* The word worker `w` waits on for its next job: its own for an AICPU
 * thread (which also waits on workers.aicpu_wake, where it can), the
 * cores' shared one for a core. */
struct sd_waitword *sd_worker_word(struct sd_worker *w);

/* The AICPU thread that shares `core`'s CPU and has the place, or NULL. */
static inline const struct sd_worker *sd_core_mate(const struct sd_worker *core)
{
    /* acquire: pairs with the release in primary_begin (cpu_affinity.c) */
    return atomic_load_explicit(&((struct sd_worker *)core)->placement.mate,
                                memory_order_acquire);
}

/* True while `core` gives way to the AICPU thread sharing its CPU: that
 * thread (its mate) runs the job that has the place and is awake. */
static inline bool sd_core_gives_way(const struct sd_worker *core)
{
    const struct sd_worker *mate = sd_core_mate(core);
    return mate && atomic_load_explicit(&mate->awake, memory_order_relaxed);
}

/* Runs one-thread AICPU job `job` on the calling thread as worker `w`
 * (taken for it: launch.c, sd_launch_run_here), which stays asleep: the
 * runnable budget, the thread-local identity and the timeline's job marks
 * are w's for the call. Returns the job's status. */
int sd_worker_run_here(struct sd_worker *w, struct sd_job *job);
/* The job the calling thread runs a block of (worker.c sets it around the
 * block), or NULL. */
extern _Thread_local struct sd_job *sd_tl_job;
/* sd_worker_run_here for a core block, on a device thread that is counted
 * in the runnable budget already (an AICPU thread in its job): the count
 * is left as it is. */
int sd_worker_run_instead(struct sd_worker *w, struct sd_job *job);
/* Runs the block of AICPU job `job` handed to worker `w`, taken from it
 * before w began it (launch.c, sd_launch_run_unstarted_program), on the
 * calling thread as w would: counted in the runnable budget as w was at
 * the hand-out, a lead job's held thread after it, the job finished. The
 * calling thread keeps its placement. */
void sd_worker_run_taken(struct sd_worker *w, struct sd_job *job);
/* The word that wakes core `w` alone where its thread sleeps on its own
 * word too, else the one that wakes every idle core (which look for their
 * jobs and sleep again). */
struct sd_waitword *sd_worker_core_word(struct sd_worker *w);

/* Starts the device's AICPU threads and cores (device start; the workers'
 * memory is zeroed first). 0, or OUT_OF_HOST_MEMORY with every thread it
 * started stopped again. */
int sd_workers_start(struct sd_device *dev);
/* Stops and joins every worker (reset): blocks until every device function
 * still running has returned. */
void sd_workers_stop(struct sd_device *dev);

#endif /* SIMDEV_WORKER_H */
