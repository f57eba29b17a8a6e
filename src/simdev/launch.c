/*
 * simdev/launch.c — gang-scheduled launches on a device's threads.
 *
 * Owns: a launch from its op to its status: the job with its own copy of
 * the arguments, the workers it takes from the pool (all at once, in
 * ticket order), handing the job out, the wait for its end under the
 * watchdog or, for a launch started without waiting, the call its last
 * thread makes, the list of those in flight and the watchdog thread that
 * watches them, and the jobs hung threads keep until reset. Must not run a
 * device function (worker.c does) or place a thread (cpu_affinity.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "simdev/device_config.h"
#include "simdev/device.h"
#include "simdev/fault.h"
#include "simdev/launch.h"
#include "simdev/op.h"
#include "simdev/park.h"
#include "simdev/worker.h"

void sd_launch_init(struct sd_device *dev)
{
    sd_mutex_init(&dev->launch.pool_lock);
    pthread_cond_init(&dev->launch.pool_cond, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* simdev_clock_ns's clock */
    pthread_cond_init(&dev->launch.watchdog_cond, &attr);
    pthread_condattr_destroy(&attr);
    dev->launch.timer_fd = -1;
}

void sd_launch_reset(struct sd_device *dev)
{
    dev->launch.aicpu_free = dev->config.aicpu_threads;
    memset(dev->launch.aicpu_busy, 0, sizeof(dev->launch.aicpu_busy));
    dev->launch.cores_busy = false;
    dev->launch.held = NULL;
    dev->launch.armed = NULL;
    dev->launch.next_ticket[0] = dev->launch.serving_ticket[0] = 0;
    dev->launch.next_ticket[1] = dev->launch.serving_ticket[1] = 0;
}

void sd_launch_wake_all(struct sd_device *dev)
{
    pthread_mutex_lock(&dev->launch.pool_lock);
    pthread_cond_broadcast(&dev->launch.pool_cond);
    pthread_mutex_unlock(&dev->launch.pool_lock);
    sd_wake(&dev->launch.done);
}

void sd_launch_free_jobs(struct sd_device *dev)
{
    /* A sync that took a program runs it on its own thread, which no
     * worker join waits for: an abandoned job is freed once that is
     * over (sd_launch_run_unstarted_program). */
    pthread_mutex_lock(&dev->launch.pool_lock);
    while (dev->launch.host_runs)
        pthread_cond_wait(&dev->launch.pool_cond, &dev->launch.pool_lock);
    pthread_mutex_unlock(&dev->launch.pool_lock);
    while (dev->launch.abandoned) {
        struct sd_job *next = dev->launch.abandoned->next_abandoned;
        free(dev->launch.abandoned);
        dev->launch.abandoned = next;
    }
    while (dev->launch.kept) {
        struct sd_job *next = dev->launch.kept->next_kept;
        free(dev->launch.kept);
        dev->launch.kept = next;
    }
    dev->launch.kept_count = 0;
}

uint32_t sd_launch_kept_count(int device)
{
    struct sd_device *dev;
    if (sd_device_acquire(device, &dev) != 0)
        return UINT32_MAX;
    pthread_mutex_lock(&dev->launch.pool_lock);
    uint32_t n = dev->launch.kept_count;
    pthread_mutex_unlock(&dev->launch.pool_lock);
    return n;
}

/* Unlinks `job` from the jobs in flight. Caller holds pool_lock. */
static void inflight_unlink(struct sd_device *dev, struct sd_job *job)
{
    if (job->prev_inflight)
        job->prev_inflight->next_inflight = job->next_inflight;
    else
        dev->launch.inflight = job->next_inflight;
    if (job->next_inflight)
        job->next_inflight->prev_inflight = job->prev_inflight;
    job->prev_inflight = job->next_inflight = NULL;
}

/* Ends the hold of the held core job, if any: every block no core has
 * taken is started (one wake-up for all of them), which makes this the
 * owner of every held block whose core nobody starts (the end of an AICPU
 * job, or a device loss). Caller holds pool_lock. */
static void release_held_locked(struct sd_device *dev)
{
    struct sd_job *job = dev->launch.held;
    if (!job)
        return;
    dev->launch.held = NULL;
    uint32_t cores = dev->config.aic_cores + dev->config.aiv_cores;
    for (uint32_t i = 0; i < cores; i++) {
        /* The job is alive: it ends under pool_lock, and is no longer held
         * then. A block taken meanwhile needs no start. */
        if (atomic_load_explicit(&dev->workers.cores[i].job, memory_order_relaxed) == job) {
            sd_wake(&dev->workers.cores_wake);
            return;
        }
    }
}

/* Gives the job's threads back to the pool and wakes the launches waiting
 * for them. Caller holds pool_lock. */
static void return_threads_locked(struct sd_device *dev, struct sd_job *job, bool on_cores,
                                  struct sd_worker **workers)
{
    if (on_cores) {
        dev->launch.cores_busy = false;
        if (dev->launch.held == job)
            dev->launch.held = NULL; /* every block was taken */
    } else {
        for (uint32_t i = 0; i < job->thread_count; i++)
            dev->launch.aicpu_busy[workers[i]->index] = false;
        dev->launch.aicpu_free += job->thread_count;
        release_held_locked(dev);
    }
    pthread_cond_broadcast(&dev->launch.pool_cond);
}

static bool job_keep_locked(struct sd_device *dev, struct sd_job *job);

/* The end of an asynchronous job, on its last finisher: its threads back,
 * its stream op ended, and that stream gone on with on this thread —
 * unless a device loss abandoned the job first (and ended the op). */
static void job_end_async(struct sd_device *dev, struct sd_job *job)
{
    pthread_mutex_lock(&dev->launch.pool_lock);
    if (job->state != SD_JOB_RUNNING) {
        pthread_mutex_unlock(&dev->launch.pool_lock); /* abandoned: kept until reset */
        return;
    }
    job->state = SD_JOB_ENDED;
    inflight_unlink(dev, job);
    return_threads_locked(dev, job, job->aicore_fn != NULL, job->workers);
    sd_launch_done_fn done = job->done;
    void *ctx = job->done_ctx;
    uintptr_t tag = job->done_tag;
    int status = atomic_load_explicit(&job->status, memory_order_relaxed);
    /* Nothing points at an ended job (each of its threads took it from
     * its worker before it ran: worker.c), so it is the next launch's
     * once kept; it is not touched after that. */
    bool kept = job_keep_locked(dev, job);
    pthread_mutex_unlock(&dev->launch.pool_lock);
    if (!kept)
        free(job);
    done(ctx, tag, status);
}

void sd_job_finish(struct sd_device *dev, struct sd_job *job, int status)
{
    if (status != 0) {
        int expected = 0;
        atomic_compare_exchange_strong_explicit(&job->status, &expected, status,
                                                memory_order_relaxed, memory_order_relaxed);
    }
    /* Read before the decrement: a blocking launcher frees its job as soon
     * as it sees it done. */
    bool async = job->done != NULL;
    /* acq_rel: the last finisher's release publishes every thread's status
     * write; pairs with the acquire in job_done (and this thread's own
     * acquire for an asynchronous job's end). */
    if (atomic_fetch_sub_explicit(&job->remaining, 1, memory_order_acq_rel) == 1) {
        sd_count_wait(&dev->waits.handoffs, 1); /* the end, to the launcher */
        if (async)
            job_end_async(dev, job);
        else
            sd_wake(&dev->launch.done); /* never touch the job after the decrement */
    }
}

static bool job_done(void *arg)
{
    struct sd_job *job = arg;
    /* acquire: pairs with the last finisher's acq_rel in sd_job_finish */
    return atomic_load_explicit(&job->remaining, memory_order_acquire) == 0;
}

/* Fills the job at `job` for launch `op` on `count` threads: its header
 * zeroed, its args copied to `args_room` (room for op->args_size bytes) and
 * `workers` (room for `count` entries) as its worker table. The AICPU index
 * table that follows the header and the worker table are filled when its
 * threads are taken (take_locked), and read only up to `count`. */
static void job_init(struct sd_job *job, const struct sd_op *op, uint32_t count,
                     unsigned char *args_room, struct sd_worker **workers)
{
    *job = (struct sd_job){0};
    job->workers = workers;
    if (op->type == SD_OP_AICORE) {
        job->aicore_fn = op->u.aicore.fn;
        job->on_demand = op->u.aicore.on_demand;
    } else {
        job->aicpu_fn = op->u.aicpu.fn;
        job->lead = op->u.aicpu.lead && count > 1;
    }
    job->args_size = op->args_size;
    job->thread_count = count;
    atomic_init(&job->remaining, count);
    atomic_init(&job->status, 0);
    if (op->args_size) {
        job->args_copy = args_room;
        memcpy(job->args_copy, op->args, op->args_size);
    }
}

/* The AICPU index table's bytes, after a job's header (sd_job_indices). */
#define JOB_INDEX_BYTES (SIMDEV_MAX_AICPU_THREADS * sizeof(uint32_t))
_Static_assert(sizeof(struct sd_job) % SIMDEV_LAUNCH_ARGS_ALIGN == 0 &&
                   JOB_INDEX_BYTES % SIMDEV_LAUNCH_ARGS_ALIGN == 0,
               "the args copy after the job and its index table keeps its promised alignment");

/* The bytes a heap job with `args_room` bytes of argument room takes:
 * header, index table, args, a worker table for any launch. */
static size_t job_bytes(size_t args_room)
{
    return sizeof(struct sd_job) + JOB_INDEX_BYTES + args_room +
           SIMDEV_MAX_CORES * sizeof(struct sd_worker *);
}

/* Lays a heap job out in `bytes` (job_bytes(args_room) of them) and fills
 * it for launch `op` on `count` threads; a job with SD_OP_LARGE_ARGS of
 * room may be kept for a later launch (job_keep_locked). */
static struct sd_job *job_lay_out(unsigned char *bytes, const struct sd_op *op, uint32_t count,
                                  size_t args_room)
{
    struct sd_job *job = (struct sd_job *)bytes;
    unsigned char *args = bytes + sizeof(*job) + JOB_INDEX_BYTES;
    job_init(job, op, count, args, (struct sd_worker **)(args + args_room));
    job->keepable = args_room == SD_OP_LARGE_ARGS;
    return job;
}

/* A job for launch `op` on `count` threads, on the heap, with at least
 * `room` bytes of argument room, or NULL when out of host memory (one
 * host allocation point either way: job_new counts it, job_make is its
 * allocation). The job carries its own copy of the args (a hung launch
 * must not read memory its op's owner frees) and the AICPU index table. */
static struct sd_job *job_make(const struct sd_op *op, uint32_t count, size_t room)
{
    size_t args_room = (op->args_size + sizeof(void *) - 1) / sizeof(void *) * sizeof(void *);
    if (args_room < room)
        args_room = room;
    unsigned char *bytes = malloc(job_bytes(args_room));
    return bytes ? job_lay_out(bytes, op, count, args_room) : NULL;
}

static struct sd_job *job_new(const struct sd_op *op, uint32_t count)
{
    return sd_host_fault() ? NULL : job_make(op, count, 0);
}

/* Keeps ended job `job` for a later launch if it has the kept room and
 * the device keeps fewer than SD_JOB_KEEP; false: the caller frees it.
 * Caller holds pool_lock. */
static bool job_keep_locked(struct sd_device *dev, struct sd_job *job)
{
    if (!job->keepable || dev->launch.kept_count >= SD_JOB_KEEP)
        return false;
    job->next_kept = dev->launch.kept;
    dev->launch.kept = job;
    dev->launch.kept_count++;
    return true;
}

/* A kept job refilled for launch `op` on `count` threads, or NULL when
 * none is kept or its args do not fit. Caller holds pool_lock. */
static struct sd_job *job_take_kept_locked(struct sd_device *dev, const struct sd_op *op,
                                           uint32_t count)
{
    struct sd_job *job = dev->launch.kept;
    if (!job || op->args_size > SD_OP_LARGE_ARGS)
        return NULL;
    dev->launch.kept = job->next_kept;
    dev->launch.kept_count--;
    return job_lay_out((unsigned char *)job, op, count, SD_OP_LARGE_ARGS);
}

/* Whether the threads `job` needs are free. Caller holds pool_lock. */
static bool threads_free(const struct sd_device *dev, const struct sd_job *job, bool on_cores)
{
    return on_cores ? !dev->launch.cores_busy : dev->launch.aicpu_free >= job->thread_count;
}

static void take_locked(struct sd_device *dev, struct sd_job *job, bool on_cores,
                        struct sd_worker **workers);

/* Takes the threads the launch needs, in ticket order among launches of
 * the same resource (AICPU threads or cores). Returns 0 or DEVICE_LOST.
 * Fills workers[] with the chosen workers. */
static int launch_take_threads(struct sd_device *dev, struct sd_job *job, bool on_cores,
                               struct sd_worker **workers, bool *held)
{
    pthread_mutex_lock(&dev->launch.pool_lock);
    uint32_t queue = on_cores ? 1 : 0;
    uint64_t ticket = dev->launch.next_ticket[queue]++;
    for (;;) {
        if (sd_device_lost(dev)) {
            /* Let later tickets see the loss too. */
            if (dev->launch.serving_ticket[queue] == ticket)
                dev->launch.serving_ticket[queue]++;
            pthread_cond_broadcast(&dev->launch.pool_cond);
            pthread_mutex_unlock(&dev->launch.pool_lock);
            return PTO_RUNTIME_ERR_DEVICE_LOST;
        }
        if (dev->launch.serving_ticket[queue] == ticket && threads_free(dev, job, on_cores))
            break;
        pthread_cond_wait(&dev->launch.pool_cond, &dev->launch.pool_lock);
    }
    take_locked(dev, job, on_cores, workers);
    *held = on_cores && job->held;
    dev->launch.serving_ticket[queue]++;
    pthread_cond_broadcast(&dev->launch.pool_cond);
    pthread_mutex_unlock(&dev->launch.pool_lock);
    return 0;
}

/* Takes the job's threads, which are free, into workers[]. Caller holds
 * pool_lock. */
static void take_locked(struct sd_device *dev, struct sd_job *job, bool on_cores,
                        struct sd_worker **workers)
{
    if (on_cores) {
        dev->launch.cores_busy = true;
        for (uint32_t i = 0; i < job->thread_count; i++)
            workers[i] = &dev->workers.cores[i];
        /* Held only while an AICPU job runs: its end is the owner that
         * starts what nobody else started (release_held_locked). */
        job->held = job->on_demand && dev->launch.aicpu_free < dev->config.aicpu_threads;
        if (job->held) {
            dev->launch.held = job;
            /* Given out here, under pool_lock, not at the hand-out: the
             * hold's end and the run of unstarted blocks look at the
             * cores' jobs under it, and must find every block (a block
             * given out after the hold ended would have no owner). */
            for (uint32_t i = 0; i < job->thread_count; i++)
                /* release: publishes the job; pairs with the acquire in
                 * worker_has_job (worker.c) */
                atomic_store_explicit(&workers[i]->job, job, memory_order_release);
        }
    } else {
        uint32_t taken = 0;
        uint32_t *indices = sd_job_indices(job);
        /* A lead job's last thread is the one that starts it when that is
         * a free AICPU thread of this device (it ended an op and went on
         * with its stream): it runs its job with no wake-up. */
        struct sd_worker *self = sd_tl_self;
        bool mine = job->lead && self && self->dev == dev && !self->is_core &&
                    !dev->launch.aicpu_busy[self->index];
        uint32_t others = job->thread_count - (mine ? 1u : 0u);
        for (uint32_t i = 0; i < dev->config.aicpu_threads && taken < others; i++) {
            if (!dev->launch.aicpu_busy[i] && !(mine && i == self->index)) {
                dev->launch.aicpu_busy[i] = true;
                indices[i] = taken;
                workers[taken++] = &dev->workers.aicpu[i];
            }
        }
        if (mine) {
            dev->launch.aicpu_busy[self->index] = true;
            indices[self->index] = taken;
            workers[taken++] = self;
        }
        dev->launch.aicpu_free -= job->thread_count;
        if (job->lead) {
            /* every thread but the last held; their workers kept for
             * their start, in the job (a blocking launch's list is the
             * launcher's own) */
            job->others_held = (1u << (job->thread_count - 1)) - 1u;
            if (workers != job->workers)
                memcpy(job->workers, workers, job->thread_count * sizeof workers[0]);
        }
    }
}

/* Gives the job's threads back to the pool and wakes the launches waiting
 * for them. */
static void launch_return_threads(struct sd_device *dev, struct sd_job *job, bool on_cores,
                                  struct sd_worker **workers)
{
    pthread_mutex_lock(&dev->launch.pool_lock);
    return_threads_locked(dev, job, on_cores, workers);
    pthread_mutex_unlock(&dev->launch.pool_lock);
}

/* The job is still referenced by hung device threads: keep it until reset. */
static void launch_abandon(struct sd_device *dev, struct sd_job *job)
{
    pthread_mutex_lock(&dev->launch.pool_lock);
    if (dev->launch.held == job)
        release_held_locked(dev); /* its blocks see the loss */
    job->next_abandoned = dev->launch.abandoned;
    dev->launch.abandoned = job;
    pthread_mutex_unlock(&dev->launch.pool_lock);
}

static void unarm_locked(struct sd_device *dev, struct sd_job *job);
static void start_held(struct sd_device *dev, struct sd_job *job, uint32_t n,
                       struct sd_worker **workers);

/* Wake-ups put off by this thread (sd_launch_defer_begin): at most one a
 * word, in the order they were asked for; a word beyond the room is woken
 * at once. */
#define SD_DEFERRED_MAX 8
static _Thread_local unsigned tl_defer_depth;
static _Thread_local unsigned tl_deferred_count;
static _Thread_local struct sd_waitword *tl_deferred[SD_DEFERRED_MAX];

void sd_launch_defer_begin(void)
{
    tl_defer_depth++;
}

/* Makes the wake-ups put off so far. */
static void defer_flush(void)
{
    for (unsigned i = 0; i < tl_deferred_count; i++)
        sd_wake(tl_deferred[i]);
    tl_deferred_count = 0;
}

void sd_launch_defer_end(void)
{
    if (tl_defer_depth && --tl_defer_depth)
        return;
    defer_flush();
}

unsigned sd_launch_defer_pause(void)
{
    unsigned depth = tl_defer_depth;
    tl_defer_depth = 0;
    defer_flush();
    return depth;
}

void sd_launch_defer_resume(unsigned depth)
{
    tl_defer_depth = depth;
}

/* sd_wake(word), now or at this thread's sd_launch_defer_end. The job is
 * published before either (a spinning thread takes it meanwhile). */
static void wake_or_defer(struct sd_waitword *word)
{
    if (tl_defer_depth) {
        for (unsigned i = 0; i < tl_deferred_count; i++)
            if (tl_deferred[i] == word)
                return;
        if (tl_deferred_count < SD_DEFERRED_MAX) {
            tl_deferred[tl_deferred_count++] = word;
            return;
        }
    }
    sd_wake(word);
}

/* The hand-out of a held core job, whose blocks take_locked gave its
 * `count` cores without waking them: a core still spinning after its last
 * job takes its block at once; the others wait for a start (sd_core_start,
 * asked before or after this, answered here or there) or for the hold's
 * end (release_held_locked). Never touches the job: it may have ended. */
static void hand_out_held(struct sd_device *dev, struct sd_worker **workers, uint32_t count)
{
    /* Pairs with sd_core_start's store of the request and load of the job:
     * either this sees the request, or the start sees the job. */
    atomic_thread_fence(memory_order_seq_cst);
    for (uint32_t i = 0; i < count; i++) {
        if (atomic_exchange_explicit(&workers[i]->start_asked, 0, memory_order_relaxed)) {
            sd_count_wait(&dev->waits.handoffs, 1);
            wake_or_defer(sd_worker_core_word(workers[i]));
        }
    }
}

void sd_core_start(struct sd_device *dev, uint32_t core)
{
    struct sd_worker *w = &dev->workers.cores[core];
    /* seq_cst: pairs with hand_out_held's fence */
    atomic_store_explicit(&w->start_asked, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&w->job, memory_order_seq_cst) == NULL)
        return; /* the hand-out to come answers the request */
    if (atomic_exchange_explicit(&w->start_asked, 0, memory_order_relaxed)) {
        sd_count_wait(&dev->waits.handoffs, 1);
        sd_wake(sd_worker_core_word(w));
    }
}

/* The held core job if mine(fn, args, size, mine_arg) says it is the
 * caller's, else NULL. Caller holds pool_lock (the held job is alive while
 * held: it ends under the lock). */
static struct sd_job *held_job_of(struct sd_device *dev,
                                  int (*mine)(simdev_aicore_fn fn, const void *args, size_t size,
                                              void *mine_arg),
                                  void *mine_arg)
{
    struct sd_job *job = dev->launch.held;
    if (job && !mine(job->aicore_fn, job->args_copy, job->args_size, mine_arg))
        return NULL; /* another program's launch */
    return job;
}

/* Takes core `w`'s block of `job` from it, if its core has not: true when
 * this caller now runs it. */
static bool claim_block(struct sd_worker *w, struct sd_job *job)
{
    struct sd_job *expected = job;
    /* acquire: as the worker's take of its job (worker.c) */
    return atomic_compare_exchange_strong_explicit(&w->job, &expected, NULL, memory_order_acquire,
                                                   memory_order_relaxed);
}

uint32_t sd_cores_run_unstarted(struct sd_device *dev,
                                int (*mine)(simdev_aicore_fn fn, const void *args, size_t size,
                                            void *mine_arg),
                                void *mine_arg)
{
    struct sd_worker *claimed[SIMDEV_MAX_CORES];
    uint32_t n = 0;
    pthread_mutex_lock(&dev->launch.pool_lock);
    struct sd_job *job = held_job_of(dev, mine, mine_arg);
    uint32_t cores = dev->config.aic_cores + dev->config.aiv_cores;
    for (uint32_t i = 0; job && i < cores; i++)
        if (claim_block(&dev->workers.cores[i], job))
            claimed[n++] = &dev->workers.cores[i];
    pthread_mutex_unlock(&dev->launch.pool_lock);
    /* The job cannot end before the last of these blocks is finished. They
     * run on this thread, counted in the runnable budget already (an
     * AICPU thread in its job): counted again, the device looked to a
     * spinning sync as if it took both CPUs (park.h, sd_spin_in_room). */
    for (uint32_t k = 0; k < n; k++)
        sd_job_finish(dev, job, sd_worker_run_instead(claimed[k], job));
    return n;
}

int sd_core_run_here(struct sd_device *dev, uint32_t core,
                     int (*mine)(simdev_aicore_fn fn, const void *args, size_t size,
                                 void *mine_arg),
                     void *mine_arg)
{
    struct sd_worker *w = &dev->workers.cores[core];
    pthread_mutex_lock(&dev->launch.pool_lock);
    struct sd_job *job = held_job_of(dev, mine, mine_arg);
    bool claimed = job && claim_block(w, job);
    pthread_mutex_unlock(&dev->launch.pool_lock);
    if (claimed) {
        /* The job cannot end before this block is finished. */
        sd_job_finish(dev, job, sd_worker_run_instead(w, job));
        return 1;
    }
    if (!job)
        sd_core_start(dev, core); /* not handed out held (yet): a start as asked */
    return 0; /* or its core took the block */
}

/* Gives the job to each of the `count` workers it took and wakes them;
 * `held`: take_locked gave a held core job out already. */
static void job_hand_out(struct sd_device *dev, struct sd_job *job, struct sd_worker **workers,
                         uint32_t count, bool held)
{
    /* An asynchronous job may end, and be freed by its last thread, as soon
     * as its last worker has it: `workers` must not live in the job. */
    bool cores = count && workers[0]->is_core;
    if (held) {
        hand_out_held(dev, workers, count);
        return;
    }
    if (job->lead) { /* the last thread alone; the others wait their start */
        start_held(dev, job, 1, &workers[count - 1]);
        return;
    }
    sd_count_wait(&dev->waits.handoffs, count);
    /* Counted awake from now, not from when they begin: a woken thread
     * waits for a CPU before it runs, and idle cores spinning meanwhile
     * would take that CPU if the budget did not count it (measured: a
     * round's scheduler began 80 us after its launch, behind cores
     * spinning on their doorbells). */
    atomic_fetch_add_explicit(&dev->budget.awake, count, memory_order_relaxed);
    /* several AICPU threads: one wake-up for all (worker.h, aicpu_wake) */
    bool together = !cores && count > 1 && sd_wait_either_supported();
    for (uint32_t i = 0; i < count; i++) {
        struct sd_worker *w = workers[i];
        /* release: publishes the job; pairs with the acquire in worker_has_job
         * (worker.c) */
        atomic_store_explicit(&w->job, job, memory_order_release);
        if (!cores && !together)
            wake_or_defer(sd_worker_word(w));
    }
    if (cores) { /* a core launch takes every core: one word wakes them all */
        for (uint32_t i = 0; i < count; i++) /* a start asked is answered too */
            atomic_store_explicit(&workers[i]->start_asked, 0, memory_order_relaxed);
        wake_or_defer(&dev->workers.cores_wake);
    }
    else if (together)
        wake_or_defer(&dev->workers.aicpu_wake);
}

/* Waits for the job's end under the watchdog: 0, TIMEOUT (the watchdog
 * fired) or DEVICE_LOST. Ended by the job's last finisher (sd_job_finish),
 * or by whoever loses the device (sd_device_mark_lost wakes the word). */
static int job_wait(struct sd_device *dev, struct sd_job *job)
{
    uint64_t deadline = 0;
    if (dev->config.watchdog_ms)
        deadline = simdev_clock_ns() + (uint64_t)dev->config.watchdog_ms * 1000000ull;
    return sd_wait(&dev->launch.done, job_done, job, sd_spin_ns(dev, SD_WAIT_IDLE), deadline,
                   &dev->lost);
}

/* How many threads launch `op` takes (every core for a core launch). */
static uint32_t job_thread_count(const struct sd_device *dev, const struct sd_op *op)
{
    return op->type == SD_OP_AICORE ? dev->config.aic_cores + dev->config.aiv_cores
                                    : op->u.aicpu.thread_count;
}

/* The job of launch `op` (NULL when out of host memory): whether it runs
 * on the cores, and on how many threads. */
static struct sd_job *job_of(const struct sd_device *dev, const struct sd_op *op,
                             bool *on_cores, uint32_t *count)
{
    *on_cores = op->type == SD_OP_AICORE;
    *count = job_thread_count(dev, op);
    return job_new(op, *count);
}

int sd_launch_run(struct sd_device *dev, const struct sd_op *op)
{
    bool on_cores;
    uint32_t count;
    struct sd_job *job = job_of(dev, op, &on_cores, &count);
    if (!job)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    struct sd_worker *workers[SIMDEV_MAX_CORES];
    bool held;
    int rc = launch_take_threads(dev, job, on_cores, workers, &held);
    if (rc != 0) {
        free(job);
        return rc;
    }
    job_hand_out(dev, job, workers, count, held);
    rc = job_wait(dev, job);
    if (rc == 0) {
        launch_return_threads(dev, job, on_cores, workers);
        int status = atomic_load_explicit(&job->status, memory_order_relaxed);
        free(job);
        return status;
    }
    if (rc == PTO_RUNTIME_ERR_TIMEOUT)
        sd_device_mark_lost(dev);
    /* Hung threads still reference the job (never the op): keep it. */
    launch_abandon(dev, job);
    return PTO_RUNTIME_ERR_DEVICE_LOST;
}

/* ------------------------------------------------ asynchronous launches */

/* Takes the job's threads into job->workers if they are free at once: only
 * when no launch of the kind waits for threads (their order is the
 * tickets'), and never on a lost device (its loss already ended every job
 * in flight; a later one would never be ended). Caller holds pool_lock. */
static bool take_at_once_locked(struct sd_device *dev, struct sd_job *job, bool on_cores)
{
    uint32_t queue = on_cores ? 1 : 0;
    if (dev->launch.serving_ticket[queue] != dev->launch.next_ticket[queue] ||
        !threads_free(dev, job, on_cores) || sd_device_lost(dev))
        return false;
    take_locked(dev, job, on_cores, job->workers);
    dev->launch.next_ticket[queue]++;
    dev->launch.serving_ticket[queue]++;
    return true;
}

int sd_launch_run_here(struct sd_device *dev, const struct sd_op *op)
{
    if (op->type != SD_OP_AICPU || op->u.aicpu.thread_count != 1)
        return SD_LAUNCH_BUSY;
    /* The job lives only in this call, on this thread (no watchdog, never
     * abandoned): on the stack when its args fit (docs/device.md, "What a
     * launch's job costs"). Its allocation point stays (sd_host_fault).
     * The index table must follow the header, as job_make lays it out
     * (sd_job_indices). */
    struct {
        struct sd_job job;
        uint32_t indices[SIMDEV_MAX_AICPU_THREADS];
        struct sd_worker *workers[1];
        _Alignas(SIMDEV_LAUNCH_ARGS_ALIGN) unsigned char args[SD_OP_LARGE_ARGS];
    } here;
    _Static_assert(offsetof(__typeof__(here), indices) == sizeof(struct sd_job),
                   "the index table follows the job's header");
    struct sd_job *job = &here.job;
    if (sd_host_fault())
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    if (op->args_size <= sizeof here.args)
        job_init(job, op, 1, here.args, here.workers);
    else if (!(job = job_make(op, 1, 0)))
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    bool heap = job != &here.job;
    pthread_mutex_lock(&dev->launch.pool_lock);
    if (!take_at_once_locked(dev, job, false)) {
        pthread_mutex_unlock(&dev->launch.pool_lock);
        if (heap)
            free(job);
        return SD_LAUNCH_BUSY;
    }
    pthread_mutex_unlock(&dev->launch.pool_lock);
    int status = sd_worker_run_here(job->workers[0], job);
    launch_return_threads(dev, job, false, job->workers);
    if (heap)
        free(job);
    return status;
}

int sd_launch_start(struct sd_device *dev, const struct sd_op *op, sd_launch_done_fn done,
                    void *ctx, uintptr_t tag)
{
    bool on_cores = op->type == SD_OP_AICORE;
    uint32_t count = job_thread_count(dev, op);
    /* One host allocation point, whether the job is a kept one or made
     * now (as job_new's), so the points of a launch do not depend on what
     * ran before it. */
    if (sd_host_fault())
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    uint64_t deadline = dev->config.watchdog_ms ? simdev_clock_ns() +
                                                      (uint64_t)dev->config.watchdog_ms * 1000000ull
                                                : 0;
    pthread_mutex_lock(&dev->launch.pool_lock);
    struct sd_job *job = job_take_kept_locked(dev, op, count);
    if (!job) {
        pthread_mutex_unlock(&dev->launch.pool_lock);
        job = job_make(op, count, op->args_size <= SD_OP_LARGE_ARGS ? SD_OP_LARGE_ARGS : 0);
        if (!job)
            return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        pthread_mutex_lock(&dev->launch.pool_lock);
    }
    job->done = done;
    job->done_ctx = ctx;
    job->done_tag = tag;
    job->deadline_ns = deadline;
    if (!take_at_once_locked(dev, job, on_cores)) {
        bool kept = job_keep_locked(dev, job);
        pthread_mutex_unlock(&dev->launch.pool_lock);
        if (!kept)
            free(job);
        return SD_LAUNCH_BUSY;
    }
    job->next_inflight = dev->launch.inflight;
    if (job->next_inflight)
        job->next_inflight->prev_inflight = job;
    dev->launch.inflight = job;
    struct sd_worker *workers[SIMDEV_MAX_CORES];
    memcpy(workers, job->workers, count * sizeof workers[0]);
    bool held = on_cores && job->held; /* read while the job cannot end */
    pthread_mutex_unlock(&dev->launch.pool_lock);
    job_hand_out(dev, job, workers, count, held);
    return 0;
}

void sd_launch_fail_inflight(struct sd_device *dev)
{
    pthread_mutex_lock(&dev->launch.pool_lock);
    struct sd_job *list = dev->launch.inflight;
    dev->launch.inflight = NULL;
    release_held_locked(dev); /* its blocks see the loss */
    while (dev->launch.armed) /* their lead threads' ends start them */
        unarm_locked(dev, dev->launch.armed);
    for (struct sd_job *job = list; job; job = job->next_inflight) {
        /* Its threads may be hung: they keep the job until reset, as a
         * blocking launch's do (launch_abandon). */
        job->state = SD_JOB_ABANDONED;
        job->next_abandoned = dev->launch.abandoned;
        dev->launch.abandoned = job;
    }
    pthread_mutex_unlock(&dev->launch.pool_lock);
    /* Abandoned jobs live until reset, which waits for their streams. */
    while (list) {
        struct sd_job *next = list->next_inflight;
        list->done(list->done_ctx, list->done_tag, PTO_RUNTIME_ERR_DEVICE_LOST);
        list = next;
    }
}

static void *watchdog_main(void *arg)
{
    struct sd_device *dev = arg;
    (void)pthread_setname_np(pthread_self(), "simdev watchdog");
    const uint64_t period = (uint64_t)dev->config.watchdog_ms * 1000000ull;
    pthread_mutex_lock(&dev->launch.pool_lock);
    while (!dev->launch.watchdog_stop) {
        uint64_t now = simdev_clock_ns();
        uint64_t wake = now + period;
        bool expired = false;
        for (struct sd_job *job = dev->launch.inflight; job; job = job->next_inflight) {
            if (job->deadline_ns <= now)
                expired = true;
            else if (job->deadline_ns < wake)
                wake = job->deadline_ns;
        }
        if (expired) {
            pthread_mutex_unlock(&dev->launch.pool_lock);
            sd_device_mark_lost(dev); /* ends every job in flight */
            sd_launch_fail_inflight(dev); /* if the device was lost already */
            pthread_mutex_lock(&dev->launch.pool_lock);
            continue;
        }
        struct timespec until = {(time_t)(wake / 1000000000ull), (long)(wake % 1000000000ull)};
        pthread_cond_timedwait(&dev->launch.watchdog_cond, &dev->launch.pool_lock, &until);
    }
    pthread_mutex_unlock(&dev->launch.pool_lock);
    return NULL;
}

int sd_launch_watchdog_start(struct sd_device *dev)
{
    dev->launch.watchdog_stop = false;
    dev->launch.watchdog_running = false;
    if (!dev->config.watchdog_ms)
        return 0;
    if (sd_thread_create(&dev->launch.watchdog, watchdog_main, dev) != 0)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    dev->launch.watchdog_running = true;
    return 0;
}

void sd_launch_watchdog_stop(struct sd_device *dev)
{
    if (!dev->launch.watchdog_running)
        return;
    pthread_mutex_lock(&dev->launch.pool_lock);
    dev->launch.watchdog_stop = true;
    pthread_cond_signal(&dev->launch.watchdog_cond);
    pthread_mutex_unlock(&dev->launch.pool_lock);
    pthread_join(dev->launch.watchdog, NULL);
    dev->launch.watchdog_running = false;
}

/* ------------------------------------ AICPU threads started on demand */

/* Sets the hold timer to fire at `due` (0: disarms it). Caller holds
 * pool_lock. A failure leaves the timer as it was: the held threads then
 * start at their lead's end, which always comes. The timer is never
 * disarmed for a job that ends first: a firing that finds nothing due is
 * cheaper than a system call a round (timer_at, launch.h). */
static void timer_set_locked(struct sd_device *dev, uint64_t due)
{
    if (dev->launch.timer_fd < 0)
        return;
    dev->launch.timer_at = due;
    struct itimerspec spec = {0};
    spec.it_value.tv_sec = (time_t)(due / 1000000000ull);
    spec.it_value.tv_nsec = (long)(due % 1000000000ull);
    (void)timerfd_settime(dev->launch.timer_fd, TFD_TIMER_ABSTIME, &spec, NULL);
}

/* Takes `job` off the armed list. Caller holds pool_lock. */
static void unarm_locked(struct sd_device *dev, struct sd_job *job)
{
    if (!job->others_due)
        return;
    job->others_due = 0;
    for (struct sd_job **p = &dev->launch.armed; *p; p = &(*p)->next_armed) {
        if (*p == job) {
            *p = job->next_armed;
            break;
        }
    }
    job->next_armed = NULL;
}

/* Takes the held threads of `job` (their bits, 0 when none are left),
 * which the caller starts or runs, and their workers into workers[] (a
 * lead job keeps thread i's worker in job->workers[i], take_locked).
 * Caller holds pool_lock. */
static uint32_t take_held_locked(struct sd_device *dev, struct sd_job *job,
                                 struct sd_worker **workers)
{
    uint32_t held = job->others_held;
    job->others_held = 0;
    unarm_locked(dev, job);
    uint32_t n = 0;
    for (uint32_t i = 0; held >> i; i++)
        if (held & (1u << i))
            workers[n++] = job->workers[i];
    return held;
}

/* Hands `job` to its `n` threads in workers[] and wakes them: a lead job's
 * last thread at the hand-out, or held threads taken from it under
 * pool_lock by the caller. The job cannot end before they run. */
static void start_held(struct sd_device *dev, struct sd_job *job, uint32_t n,
                       struct sd_worker **workers)
{
    if (!n)
        return;
    sd_count_wait(&dev->waits.handoffs, n);
    atomic_fetch_add_explicit(&dev->budget.awake, n, memory_order_relaxed);
    for (uint32_t k = 0; k < n; k++) {
        /* release: publishes the job; pairs with the acquire in
         * worker_has_job (worker.c) */
        atomic_store_explicit(&workers[k]->job, job, memory_order_release);
        wake_or_defer(sd_worker_word(workers[k]));
    }
}

void sd_aicpu_start_others(struct sd_device *dev, struct sd_job *job)
{
    struct sd_worker *workers[SIMDEV_MAX_AICPU_THREADS];
    pthread_mutex_lock(&dev->launch.pool_lock);
    uint32_t held = take_held_locked(dev, job, workers);
    pthread_mutex_unlock(&dev->launch.pool_lock);
    start_held(dev, job, (uint32_t)__builtin_popcount(held), workers);
}

void sd_aicpu_start_others_after(struct sd_device *dev, struct sd_job *job, uint64_t ns)
{
    pthread_mutex_lock(&dev->launch.pool_lock);
    if (job->others_held && !job->others_due && dev->launch.timer_fd >= 0) {
        uint64_t due = simdev_clock_ns() + (ns ? ns : 1);
        job->others_due = due;
        job->next_armed = dev->launch.armed;
        dev->launch.armed = job;
        /* Set only when it would fire later than this is due: a timer
         * already set for sooner finds this job at its firing and sets
         * itself for it then. */
        if (!dev->launch.timer_at || due < dev->launch.timer_at)
            timer_set_locked(dev, due);
    }
    pthread_mutex_unlock(&dev->launch.pool_lock);
}

uint32_t sd_aicpu_lead_end(struct sd_device *dev, struct sd_job *job)
{
    struct sd_worker *workers[SIMDEV_MAX_AICPU_THREADS];
    pthread_mutex_lock(&dev->launch.pool_lock);
    uint32_t held = take_held_locked(dev, job, workers);
    pthread_mutex_unlock(&dev->launch.pool_lock);
    if (__builtin_popcount(held) == 1)
        return held; /* the caller runs it */
    start_held(dev, job, (uint32_t)__builtin_popcount(held), workers);
    return 0;
}

bool sd_launch_aicpu_job_unbegun(const struct sd_device *dev)
{
    for (uint32_t i = 0; i < dev->config.aicpu_threads; i++)
        if (atomic_load_explicit(&dev->workers.aicpu[i].job, memory_order_relaxed))
            return true;
    return false;
}

bool sd_launch_run_unstarted_program(struct sd_device *dev, const void *done_ctx,
                                     const _Atomic int *waited_done)
{
    struct sd_worker *taker = NULL;
    struct sd_job *job = NULL;
    /* Under pool_lock a job a worker has not taken is alive: it ends only
     * after every block ran, and its end takes this lock before it frees
     * it (job_end_async; a blocking launch's return). */
    pthread_mutex_lock(&dev->launch.pool_lock);
    for (uint32_t i = 0; i < dev->config.aicpu_threads && !taker; i++) {
        struct sd_worker *w = &dev->workers.aicpu[i];
        /* acquire: pairs with the release store in job_hand_out */
        struct sd_job *j = atomic_load_explicit(&w->job, memory_order_acquire);
        if (!j || !j->lead || j->done_ctx != done_ctx ||
            sd_job_indices(j)[w->index] + 1 != j->thread_count)
            continue;
        /* A job handed out after the record waited for completed is a
         * later one of that stream, which the sync does not wait for: its
         * hand-out (the release store the load above pairs with) came
         * after the completion, so the completion is seen here. */
        if (atomic_load_explicit(waited_done, memory_order_acquire))
            break;
        /* the worker's own take (worker.c) is an exchange: one of the two
         * has the block */
        if (atomic_compare_exchange_strong_explicit(&w->job, &j, NULL, memory_order_acquire,
                                                    memory_order_relaxed)) {
            atomic_store_explicit(&w->job_taken, true, memory_order_relaxed);
            taker = w;
            job = j;
            dev->launch.host_runs++;
        }
    }
    pthread_mutex_unlock(&dev->launch.pool_lock);
    if (!taker)
        return false;
    sd_count_wait(&dev->waits.taken, 1);
    sd_worker_run_taken(taker, job);
    pthread_mutex_lock(&dev->launch.pool_lock);
    dev->launch.host_runs--;
    pthread_cond_broadcast(&dev->launch.pool_cond); /* a reset may wait for it */
    pthread_mutex_unlock(&dev->launch.pool_lock);
    return true;
}

/* The hold timer's thread: at each firing, starts the held threads of
 * every lead job whose time has passed, and sets the timer for the
 * earliest left. */
static void *hold_timer_main(void *arg)
{
    struct sd_device *dev = arg;
    (void)pthread_setname_np(pthread_self(), "simdev timer");
    for (;;) {
        uint64_t expirations;
        ssize_t got = read(dev->launch.timer_fd, &expirations, sizeof expirations);
        if (got < 0 && errno != EINTR && errno != EAGAIN)
            break; /* the descriptor is gone: nothing is armed any more */
        pthread_mutex_lock(&dev->launch.pool_lock);
        if (dev->launch.timer_stop) {
            pthread_mutex_unlock(&dev->launch.pool_lock);
            break;
        }
        dev->launch.timer_at = 0; /* it fired: set again below if needed */
        /* One job a pass: its threads start outside the lock. */
        for (;;) {
            uint64_t now = simdev_clock_ns(), next = 0;
            struct sd_job *due = NULL;
            for (struct sd_job *a = dev->launch.armed; a; a = a->next_armed) {
                if (!due && a->others_due <= now)
                    due = a;
                else if (!next || a->others_due < next)
                    next = a->others_due;
            }
            if (!due) {
                if (next)
                    timer_set_locked(dev, next);
                break;
            }
            struct sd_worker *workers[SIMDEV_MAX_AICPU_THREADS];
            uint32_t held = take_held_locked(dev, due, workers);
            pthread_mutex_unlock(&dev->launch.pool_lock);
            start_held(dev, due, (uint32_t)__builtin_popcount(held), workers);
            pthread_mutex_lock(&dev->launch.pool_lock);
        }
        pthread_mutex_unlock(&dev->launch.pool_lock);
    }
    return NULL;
}

int sd_launch_timer_start(struct sd_device *dev)
{
    dev->launch.timer_stop = false;
    dev->launch.timer_running = false;
    dev->launch.timer_at = 0;
    dev->launch.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (dev->launch.timer_fd < 0)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    if (sd_thread_create(&dev->launch.timer_thread, hold_timer_main, dev) != 0) {
        close(dev->launch.timer_fd);
        dev->launch.timer_fd = -1;
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    dev->launch.timer_running = true;
    return 0;
}

void sd_launch_timer_stop(struct sd_device *dev)
{
    if (!dev->launch.timer_running)
        return;
    pthread_mutex_lock(&dev->launch.pool_lock);
    dev->launch.timer_stop = true;
    dev->launch.armed = NULL;
    timer_set_locked(dev, 1); /* long past: fires at once */
    pthread_mutex_unlock(&dev->launch.pool_lock);
    pthread_join(dev->launch.timer_thread, NULL);
    close(dev->launch.timer_fd);
    dev->launch.timer_fd = -1;
    dev->launch.timer_running = false;
}
