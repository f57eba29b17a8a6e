/*
 * simdev/launch.h — gang-scheduled launches on a device's threads
 * (launch.c).
 *
 * Owns: the job a launch hands its workers, the pool of free workers with
 * its ticket queues, the word launchers wait on for their job's end, the
 * watchdog that loses a device, and the jobs hung threads still hold. Must
 * not run device functions itself: workers do (worker.h).
 */
#ifndef SIMDEV_LAUNCH_H
#define SIMDEV_LAUNCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simdev/op.h"
#include "simdev/park.h"
#include "simpler/device.h"

struct sd_device;
struct sd_op;
struct sd_worker;

/* What ends an asynchronous launch (sd_launch_start), called once on the
 * thread that ends it with the launch's status: sd_launch_done_fn (op.h). */

/* An asynchronous job's state (sd_launch_start): exactly one of its last
 * finisher and a device loss moves it on from RUNNING. */
enum { SD_JOB_RUNNING = 0, SD_JOB_ENDED, SD_JOB_ABANDONED };

/* One execution of an AICPU or AICore launch, shared with its workers. */
struct sd_job {
    struct sd_job *next_abandoned;
    struct sd_job *next_kept; /* in sd_launch_state.kept; pool_lock */
    bool keepable;            /* made with room for SD_OP_LARGE_ARGS argument bytes */
    /* Asynchronous jobs only (sd_launch_start; NULL done: a blocking
     * launch waits for the job itself): what its end calls, the workers it
     * took, its place in the device's list of jobs in flight (pool_lock)
     * and the watchdog's deadline. */
    sd_launch_done_fn done;
    void *done_ctx;
    uintptr_t done_tag;
    struct sd_worker **workers;
    struct sd_job *prev_inflight, *next_inflight;
    uint64_t deadline_ns; /* 0: no watchdog */
    int state;            /* SD_JOB_*; pool_lock */
    simdev_aicpu_fn aicpu_fn; /* exactly one of the two is set */
    simdev_aicore_fn aicore_fn;
    bool on_demand; /* SIMDEV_BATCH_AICORE_ON_DEMAND */
    /* Handed out without waking its cores (an on-demand launch taken while
     * an AICPU job ran): each block's taker counts itself in the runnable
     * budget, nobody counted it at the hand-out. Set before the hand-out. */
    bool held;
    /* SIMDEV_BATCH_AICPU_LEAD: only the last thread was handed the job;
     * others_held has bit i set while thread i is not started (pool_lock),
     * others_due is when platform_aicpu_start_others_after starts them (0:
     * not armed), and next_armed links the jobs so armed (the hold timer's
     * list). Set before the hand-out. */
    bool lead;
    uint32_t others_held;
    uint64_t others_due;
    struct sd_job *next_armed;
    void *args_copy; /* the job's own copy of the argument bytes */
    size_t args_size;
    uint32_t thread_count;
    _Atomic uint32_t remaining;
    _Atomic int status;
};

/* The AICPU index table after a job (launch_take_threads fills it):
 * AICPU worker i runs thread indices[i] of the job. */
static inline uint32_t *sd_job_indices(struct sd_job *job)
{
    return (uint32_t *)((unsigned char *)job + sizeof(*job));
}

/* Ended asynchronous jobs a device keeps for its next launches, at most
 * (sd_launch_state.kept): a round starts two. */
#ifndef SD_JOB_KEEP
#define SD_JOB_KEEP 8u
#endif

/* A device's launch state. */
struct sd_launch_state {
    /* Gang scheduling of launches: a launch takes all the threads it needs at
     * once, in ticket order, so two launches never deadlock on a partial
     * set. AICPU threads and AICore cores are separate resources with a
     * ticket queue each (index: 0 AICPU, 1 cores), as on a real device: a
     * core launch never waits behind an AICPU launch (which may itself be
     * waiting for those cores to start). Caller must hold pool_lock for the
     * fields below. */
    pthread_mutex_t pool_lock;
    pthread_cond_t pool_cond;
    bool aicpu_busy[SIMDEV_MAX_AICPU_THREADS];
    uint32_t aicpu_free;
    bool cores_busy;
    uint64_t next_ticket[2];
    uint64_t serving_ticket[2];
    struct sd_job *abandoned; /* jobs whose threads hung; freed at reset */
    uint32_t host_runs; /* programs syncs took and run now (launch.h) */
    /* Ended asynchronous jobs kept for the next ones (sd_job.next_kept):
     * each has room for SD_OP_LARGE_ARGS argument bytes; at most
     * SD_JOB_KEEP, freed at the device's reset (docs/device.md, "What a
     * launch's job costs"). */
    struct sd_job *kept;
    uint32_t kept_count;
    struct sd_job *inflight;  /* asynchronous jobs not yet ended */
    /* The core job handed out held (sd_job.held) until it ends or an AICPU
     * job ends, whichever is first: that end starts every block of it no
     * core has taken (docs/device.md, "Cores started on demand"). */
    struct sd_job *held;
    /* Lead jobs whose held threads start at a time (others_due): the hold
     * timer's thread sleeps on timer_fd until the earliest, then starts
     * them. Guarded by pool_lock; the timer is armed only while the list
     * is not empty (docs/device.md, "AICPU threads started on demand"). */
    struct sd_job *armed;
    int timer_fd; /* -1: no hold timer (device not started) */
    uint64_t timer_at; /* when the timer fires (0: not set) */
    pthread_t timer_thread;
    bool timer_running, timer_stop;

    /* The watchdog of asynchronous jobs (only with config.watchdog_ms):
     * sleeps until the earliest deadline in flight, then loses the device.
     * Guarded by pool_lock. */
    pthread_t watchdog;
    bool watchdog_running, watchdog_stop;
    pthread_cond_t watchdog_cond; /* CLOCK_MONOTONIC */

    /* Launch completions: the last thread of a job wakes its launcher here.
     * The word lives in the device, not the job, because the launcher frees
     * the job as soon as it sees the job done, possibly before the waker has
     * returned from sd_wake. */
    _Alignas(SD_CACHELINE) struct sd_waitword done;
};

/* Runs a launch op on the device's threads and returns its status (the
 * first failing thread's); DEVICE_LOST when the device was or became lost
 * (the watchdog fired). Blocks until every thread of the job returned. */
int sd_launch_run(struct sd_device *dev, const struct sd_op *op);

/* What sd_launch_start returns when the launch's threads are not free at
 * once (or launches before it wait for them): nothing was done. */
#define SD_LAUNCH_BUSY 1

/* Runs one-thread AICPU launch `op` (a brief one: SIMDEV_BATCH_AICPU_BRIEF)
 * on the calling thread, as the free AICPU thread it takes for the call,
 * and returns its status; SD_LAUNCH_BUSY, having done nothing, for
 * another op or when that thread is not free at once (or the device is
 * lost): the caller starts it the usual way. The calling thread must not
 * be in a device job. */
int sd_launch_run_here(struct sd_device *dev, const struct sd_op *op);

/*
 * Starts launch `op` without waiting for it: takes its threads if they are
 * free at once and hands the job out. Returns 0 when started: the job's
 * last finisher (or a device loss) calls done(ctx, tag, status), once, on
 * its own thread. SD_LAUNCH_BUSY when the threads are not free at once;
 * OUT_OF_HOST_MEMORY; nothing started then.
 */
int sd_launch_start(struct sd_device *dev, const struct sd_op *op, sd_launch_done_fn done,
                    void *ctx, uintptr_t tag);

/*
 * Wake-ups put off to the end of a run of ops on one thread (stream.c:
 * a start-here run, sd_stream_start_held, and every advance of a stream
 * with the streams it lets go): between sd_launch_defer_begin and
 * sd_launch_defer_end on one thread, a launch this thread hands out gives
 * its threads their job at once (a thread still spinning takes it) but
 * makes its wake-up system call only at sd_launch_defer_end, after every
 * other op of the run has started. So a round's AICPU program and its core
 * loop both go out before the launching thread makes the one system call
 * that lets woken threads take its CPU, the core loop goes out held, and
 * the program's threads find it handed out when they begin. The thread
 * must not wait for anything with wake-ups put off: an executor runs an op
 * that may block it (a launch that waits for its job, a host callback)
 * between sd_launch_defer_pause, which makes them and puts off nothing
 * more, and sd_launch_defer_resume. Nested: the outermost end makes them.
 */
void sd_launch_defer_begin(void);
void sd_launch_defer_end(void);
/* Returns the depth to resume with. */
unsigned sd_launch_defer_pause(void);
void sd_launch_defer_resume(unsigned depth);

/*
 * Starts core `core`'s block of the core job handed out held, or, when
 * none is handed out yet, of the next one handed out held (the request is
 * kept until a hand-out: at worst it starts that core once for nothing).
 * From any thread; never blocks.
 */
void sd_core_start(struct sd_device *dev, uint32_t core);

/*
 * Runs, on the calling thread and one after the other, every block of the
 * held core job that no core has taken, each as its core, if
 * mine(fn, args, size, mine_arg) — called under pool_lock — says the job
 * is the caller's; ends the job if its last block is one of them (its
 * stream then goes on on this thread). Returns how many it ran. For an
 * AICPU thread whose program knows these blocks return at once (the
 * runtime, after its round left every core).
 */
uint32_t sd_cores_run_unstarted(struct sd_device *dev,
                                int (*mine)(simdev_aicore_fn fn, const void *args, size_t size,
                                            void *mine_arg),
                                void *mine_arg);

/*
 * Core `core`'s block of the held core job, if mine(fn, args, size,
 * mine_arg) — called under pool_lock — says the job is the caller's and
 * no core has taken the block: runs it on the calling thread as that core
 * and returns 1 once it returned (ending the job if it was its last
 * block, whose stream then goes on on this thread). Else 0: its core took
 * the block, or no such job is held and the core is started as
 * sd_core_start does. For an AICPU thread in a job (counted awake already)
 * with nothing else to do while that core's function runs.
 */
int sd_core_run_here(struct sd_device *dev, uint32_t core,
                     int (*mine)(simdev_aicore_fn fn, const void *args, size_t size,
                                 void *mine_arg),
                     void *mine_arg);

/* Starts the watchdog of asynchronous jobs when the device has one (device
 * start): 0 or OUT_OF_HOST_MEMORY. */
int sd_launch_watchdog_start(struct sd_device *dev);
/* Stops and joins it (reset, before the workers stop). */
void sd_launch_watchdog_stop(struct sd_device *dev);
/* Ends every asynchronous job in flight with DEVICE_LOST, abandoning it to
 * its threads (the device was lost). */
void sd_launch_fail_inflight(struct sd_device *dev);

/*
 * AICPU threads started on demand (SIMDEV_BATCH_AICPU_LEAD). From the
 * lead job's last thread: starts its held threads (sd_aicpu_start_others),
 * or has the hold timer start them once `ns` have passed unless they
 * started before (sd_aicpu_start_others_after). At the lead thread's
 * return, sd_aicpu_lead_end starts those still held, but for one alone,
 * whose bit it returns for the caller to run on its own thread (0 when
 * there is none).
 */
void sd_aicpu_start_others(struct sd_device *dev, struct sd_job *job);
void sd_aicpu_start_others_after(struct sd_device *dev, struct sd_job *job, uint64_t ns);
uint32_t sd_aicpu_lead_end(struct sd_device *dev, struct sd_job *job);

/*
 * A program not started yet, run by a sync that waits for it: the block
 * of the last thread of a lead job (the runtime's round program) launched
 * from the stream `done_ctx`, if the worker handed it has not begun it
 * (still waking: a parked thread takes 40-70 us here to run again), is
 * taken from that worker and run on the calling thread
 * (sd_worker_run_taken); the worker finds nothing when it wakes. True when
 * it ran one. A lead job's program waits for nothing the host does, so a
 * sync may wait for it where the worker would have (docs/device.md, "A
 * sync runs the program it waits for). `waited_done` is the done flag
 * of the record the sync waits for: once it is set, a lead job of that
 * stream is a later one, and none is taken. A reset frees no abandoned
 * job while a sync runs one (host_runs).
 */
bool sd_launch_run_unstarted_program(struct sd_device *dev, const void *done_ctx,
                                     const _Atomic int *waited_done);
/* Whether some AICPU thread has a job handed to it and not begun: a look
 * without a lock, so that a sync whose round runs already (back to back,
 * its thread took its job at once) takes no lock to find nothing. */
bool sd_launch_aicpu_job_unbegun(const struct sd_device *dev);
/* Starts the hold timer's thread (device start): 0 or OUT_OF_HOST_MEMORY;
 * stops and joins it (reset). */
int sd_launch_timer_start(struct sd_device *dev);
void sd_launch_timer_stop(struct sd_device *dev);

/* Called by each worker of a job as its device function returns: records
 * a failing `status` (the first wins) and, from the last worker, wakes the
 * launcher, or for an asynchronous job ends its stream op and goes on with
 * that stream on this thread. The worker must not touch the job
 * afterwards. */
void sd_job_finish(struct sd_device *dev, struct sd_job *job, int status);

/* Initialises the pool's lock and condition (once, with the device table). */
void sd_launch_init(struct sd_device *dev);
/* Every worker free, both ticket queues empty (device start). */
void sd_launch_reset(struct sd_device *dev);
/* Wakes every launch waiting for threads or for its job (the device was
 * lost). */
void sd_launch_wake_all(struct sd_device *dev);
/* Frees the jobs hung threads held and the jobs kept for reuse (reset,
 * once every worker stopped). */
void sd_launch_free_jobs(struct sd_device *dev);
/* Test hook: how many ended jobs `device` keeps (UINT32_MAX: no such
 * device). */
uint32_t sd_launch_kept_count(int device);

#endif /* SIMDEV_LAUNCH_H */
