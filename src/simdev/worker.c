/*
 * simdev/worker.c — a device's persistent threads: its AICPU threads and
 * its AICores.
 *
 * Owns: starting and stopping a device's workers, each worker's loop (wait
 * for a job, run its device function, report) and the runnable budget's
 * count of the threads in a job. Must not choose which workers run a job
 * (launch.c) or where they run (cpu_affinity.c).
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "simdev/device_config.h"
#include "simdev/device.h"
#include "simdev/fault.h"
#include "simdev/launch.h"
#include "simdev/op.h"
#include "simdev/park.h"
#include "simdev/cpu_affinity.h"
#include "simdev/worker.h"

static bool worker_has_job(void *arg)
{
    struct sd_worker *w = arg;
    /* acquire: pairs with the release store of the job in job_hand_out
     * (launch.c) */
    return atomic_load_explicit(&w->job, memory_order_acquire) != NULL ||
           atomic_load_explicit(&w->job_taken, memory_order_relaxed) ||
           atomic_load_explicit(&w->dev->workers.stopping, memory_order_acquire);
}

/* Calls the job's AICore function as core `w`; returns what it returned. */
static int call_aicore(struct sd_worker *w, const struct sd_job *job)
{
    struct sd_device *dev = w->dev;
    struct simdev_core_ctx ctx = {
        .device = dev->id,
        .core_id = w->index,
        .core_type = w->index < dev->config.aic_cores ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV,
        .core_count = dev->config.aic_cores + dev->config.aiv_cores,
        .aic_count = dev->config.aic_cores,
        .aiv_count = dev->config.aiv_cores,
        .regs = &dev->regs.windows[w->index],
    };
    return job->aicore_fn(&ctx, job->args_copy, job->args_size);
}

/* Calls the job's AICPU function as its thread `index`; returns what it
 * returned. */
static int call_aicpu(struct sd_worker *w, const struct sd_job *job, uint32_t index)
{
    struct simdev_aicpu_ctx ctx = {
        .device = w->dev->id,
        .thread_index = index,
        .thread_count = job->thread_count,
    };
    return job->aicpu_fn(&ctx, job->args_copy, job->args_size);
}

_Thread_local struct sd_job *sd_tl_job;

/* Runs `job`'s function as worker `w` (thread `index` of the job) on the
 * calling thread: the runnable budget, the thread-local identity, the
 * placement (unless !place: the thread keeps where it is) and the
 * timeline's job marks are w's for the call, and the calling thread's own
 * are back afterwards. The budget's count is the caller's: a launch
 * counts the job's threads when it hands the job out. Returns the job's
 * status. */
static int call_placed(struct sd_worker *w, struct sd_job *job, uint32_t index, bool place)
{
    struct sd_device *dev = w->dev;
    struct sd_budget *budget = sd_tl_budget;
    struct sd_worker *worker = sd_tl_worker, *self = sd_tl_self;
    struct sd_job *outer = sd_tl_job;
    atomic_store_explicit(&w->awake, 1, memory_order_relaxed);
    sd_tl_budget = &dev->budget;
    sd_tl_worker = w;
    sd_tl_self = w;
    sd_tl_job = job;
    bool primary = place && !w->is_core && sd_place_take(dev, w, job, index);
    /* where a spinning sync must not spin beside it (park.h); a host
     * thread's CPU is the sync's own, not the device's */
    if (!w->is_core && self)
        atomic_store_explicit(&dev->budget.device_cpu, sched_getcpu(), memory_order_relaxed);
    sd_mark(&dev->timeline, SIMDEV_MARK_JOB_BEGIN, 0, NULL, w->is_core, w->index);
    int status = w->is_core ? call_aicore(w, job) : call_aicpu(w, job, index);
    sd_mark(&dev->timeline, SIMDEV_MARK_JOB_END, 0, NULL, w->is_core, w->index);
    if (primary)
        sd_place_primary_end(dev);
    sd_tl_budget = budget;
    sd_tl_worker = worker;
    sd_tl_self = self;
    sd_tl_job = outer;
    atomic_store_explicit(&w->awake, 0, memory_order_relaxed);
    return sd_status_from_return(status);
}

static int call_as(struct sd_worker *w, struct sd_job *job, uint32_t index)
{
    return call_placed(w, job, index, true);
}

/* Counts the calling thread in host_running by `delta` (+1 before device
 * work, -1 after it: call_placed gives the thread its identity back in
 * between) if it is a host thread, with no device thread of its own: the
 * work sits on the CPU the device leaves the host (park.h). */
static void host_running_add(struct sd_budget *b, int32_t delta)
{
    if (!sd_tl_self)
        atomic_fetch_add_explicit(&b->host_running, (uint32_t)delta, memory_order_relaxed);
}

static void run_job(struct sd_worker *w, struct sd_job *job, uint32_t index, bool place)
{
    struct sd_budget *b = &w->dev->budget;
    host_running_add(b, 1);
    /* Counted awake for the job's length, but while parked (park.c): the
     * launch counted it when it handed the job out (launch.c), or, for a
     * job handed out held, this thread now that it took its block. */
    if (job->held)
        atomic_fetch_add_explicit(&b->awake, 1, memory_order_relaxed);
    int status = call_placed(w, job, index, place);
    /* A lead job's last thread: a held thread it did not start runs here,
     * after it, in the place this thread has (launch.h, lead jobs). */
    uint32_t here = job->lead && index + 1 == job->thread_count ? sd_aicpu_lead_end(w->dev, job)
                                                                : 0;
    if (here) {
        uint32_t other = (uint32_t)__builtin_ctz(here);
        sd_job_finish(w->dev, job, call_placed(w, job, other, false));
    }
    atomic_fetch_sub_explicit(&b->awake, 1, memory_order_relaxed);
    host_running_add(b, -1);
    sd_job_finish(w->dev, job, status);
}

int sd_worker_run_here(struct sd_worker *w, struct sd_job *job)
{
    struct sd_budget *b = &w->dev->budget;
    host_running_add(b, 1);
    atomic_fetch_add_explicit(&b->awake, 1, memory_order_relaxed);
    int status = call_as(w, job, 0);
    atomic_fetch_sub_explicit(&b->awake, 1, memory_order_relaxed);
    host_running_add(b, -1);
    return status;
}

int sd_worker_run_instead(struct sd_worker *w, struct sd_job *job)
{
    return call_as(w, job, 0);
}

void sd_worker_run_taken(struct sd_worker *w, struct sd_job *job)
{
    /* where the calling thread is: w's placement is its own thread's */
    run_job(w, job, sd_job_indices(job)[w->index], false);
}

struct sd_waitword *sd_worker_word(struct sd_worker *w)
{
    return w->is_core ? &w->dev->workers.cores_wake : &w->wake;
}

struct sd_waitword *sd_worker_core_word(struct sd_worker *w)
{
    return sd_wait_either_supported() ? &w->wake : &w->dev->workers.cores_wake;
}

static void *worker_main(void *arg)
{
    struct sd_worker *w = arg;
    /* A name per role for profilers and debuggers (perf sched, top -H,
     * gdb): "simdev0 core1", "simdev0 aicpu2". At most 15 characters are
     * kept; a failure only loses the name. */
    char name[16];
    snprintf(name, sizeof name, "simdev%d %s%u", w->dev->id, w->is_core ? "core" : "aicpu",
             w->index);
    (void)pthread_setname_np(pthread_self(), name);
    sd_tl_self = w;
    /* Every idle thread sleeps on its own word and on the one its kind
     * shares, where the kernel can sleep on two (worker.h). */
    bool either = sd_wait_either_supported();
    struct sd_waitword *shared = w->is_core ? &w->dev->workers.cores_wake
                                            : &w->dev->workers.aicpu_wake;
    bool after_job = false;
    for (;;) {
        /* An AICPU thread that ran a job waits for the next awake while the
         * device leaves the host a CPU: a back-to-back round (its program
         * on one thread) then finds it running (park.h, sd_spin_in_room). */
        if (after_job && !w->is_core)
            (void)sd_spin_in_room(&w->dev->budget, true, worker_has_job, NULL, w,
                                  sd_spin_ns(w->dev, SD_WAIT_ROOM));
        after_job = false;
        if (either)
            sd_wait_either(&w->wake, shared, worker_has_job, w,
                           sd_spin_ns(w->dev, SD_WAIT_IDLE));
        else
            sd_wait(sd_worker_word(w), worker_has_job, w, sd_spin_ns(w->dev, SD_WAIT_IDLE), 0,
                    NULL);
        /* acquire: pairs with the release store in job_hand_out (launch.c) */
        struct sd_job *job = atomic_exchange_explicit(&w->job, NULL, memory_order_acquire);
        if (!job) {
            if (atomic_load_explicit(&w->dev->workers.stopping, memory_order_acquire))
                break;
            /* Woken for a job a sync took and ran (launch.h,
             * sd_launch_run_unstarted_program): waits awake for the next
             * as after a job, so that the next back-to-back round finds it
             * running, not the sync taking it again behind another
             * wake-up. */
            after_job = atomic_exchange_explicit(&w->job_taken, false, memory_order_relaxed);
            continue;
        }
        /* AICPU workers find their thread index in the job's index table. */
        uint32_t index = w->is_core ? 0 : sd_job_indices(job)[w->index];
        run_job(w, job, index, true);
        after_job = true;
    }
    return NULL;
}

/* Starts `count` workers of one kind; 0, or 1 + the number started before
 * a thread could not be created. */
static int start_workers(struct sd_device *dev, struct sd_worker *workers, uint32_t count,
                         bool is_core)
{
    for (uint32_t i = 0; i < count; i++) {
        struct sd_worker *w = &workers[i];
        memset(w, 0, sizeof(*w));
        w->dev = dev;
        w->is_core = is_core;
        w->index = i;
        sd_word_bind(&w->wake, &dev->waits);
        if (sd_thread_create(&w->thread, worker_main, w) != 0)
            return (int)i + 1; /* 1-based count of threads to keep */
    }
    return 0;
}

/* Wakes `count` workers to see `stopping` and joins them. */
static void stop_workers(struct sd_worker *workers, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        sd_wake(sd_worker_word(&workers[i]));
    for (uint32_t i = 0; i < count; i++)
        pthread_join(workers[i].thread, NULL);
}

int sd_workers_start(struct sd_device *dev)
{
    uint32_t ncores = dev->config.aic_cores + dev->config.aiv_cores;
    atomic_store(&dev->workers.stopping, 0);
    memset(&dev->workers.cores_wake, 0, sizeof dev->workers.cores_wake);
    sd_word_bind(&dev->workers.cores_wake, &dev->waits);
    memset(&dev->workers.aicpu_wake, 0, sizeof dev->workers.aicpu_wake);
    sd_word_bind(&dev->workers.aicpu_wake, &dev->waits);
    int made = start_workers(dev, dev->workers.aicpu, dev->config.aicpu_threads, false);
    if (made == 0) {
        int made_cores = start_workers(dev, dev->workers.cores, ncores, true);
        if (made_cores == 0)
            return 0;
        atomic_store(&dev->workers.stopping, 1);
        stop_workers(dev->workers.cores, (uint32_t)made_cores - 1);
        made = (int)dev->config.aicpu_threads + 1;
    }
    atomic_store(&dev->workers.stopping, 1);
    stop_workers(dev->workers.aicpu, (uint32_t)made - 1);
    return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
}

void sd_workers_stop(struct sd_device *dev)
{
    atomic_store_explicit(&dev->workers.stopping, 1, memory_order_release);
    stop_workers(dev->workers.aicpu, dev->config.aicpu_threads);
    stop_workers(dev->workers.cores, dev->config.aic_cores + dev->config.aiv_cores);
}
