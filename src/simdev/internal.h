/*
 * simdev/internal.h — the simulated device's private structures.
 *
 * Owns: the layout of devices, streams, ops, events, capture sessions and
 * graphs, shared by the files of src/simdev only. Nothing outside
 * src/simdev may include it: the rest of simpler sees device.h alone.
 */
#ifndef SIMDEV_INTERNAL_H
#define SIMDEV_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "platform/platform.h"
#include "simpler/device.h"
#include "simpler/simdev_fault.h"

#define SD_CACHELINE 64

/* ------------------------------------------------- host resources (fault.c) */

/*
 * Every host allocation and thread creation simdev makes goes through these,
 * so a test can make any one of them fail (simdev_fault_inject_host) and
 * prove the caller undoes its partial work. sd_host_fault counts the attempt
 * and says whether it must fail.
 */
bool sd_host_fault(void);
static inline void *sd_malloc(size_t bytes)
{
    return sd_host_fault() ? NULL : malloc(bytes);
}
static inline void *sd_calloc(size_t count, size_t size)
{
    return sd_host_fault() ? NULL : calloc(count, size);
}
static inline void *sd_realloc(void *ptr, size_t bytes)
{
    return sd_host_fault() ? NULL : realloc(ptr, bytes);
}
static inline void *sd_aligned_alloc(size_t alignment, size_t bytes)
{
    return sd_host_fault() ? NULL : aligned_alloc(alignment, bytes);
}
static inline int sd_thread_create(pthread_t *thread, void *(*main)(void *), void *arg)
{
    return sd_host_fault() ? EAGAIN : pthread_create(thread, NULL, main, arg);
}

/* ------------------------------------------------------------ park (park.c) */

/*
 * A wait word: a waiter spins on its predicate for a bounded time, then
 * parks on `seq` with a futex. A waker changes the predicate's state, then
 * calls sd_wake. `seq` holds the count of wakes (shifted left one bit) and,
 * in bit 0, the sleeper bit: a waiter sets it before it sleeps, and the
 * first waker to see it clears it and makes the one futex syscall that
 * wakes every sleeper; wakers after it, until a waiter sleeps again, make
 * none (model/park_wake.pml). Readers of the count use sd_word_wakes.
 * `waiters` counts the threads parking or parked (a hint for placement,
 * and the half of Dekker pairs whose other half is the caller's).
 */
struct sd_waitword {
    _Atomic uint32_t seq;
    _Atomic uint32_t waiters;
};

/* The word's count of wakes (mod 2^31), without the sleeper bit. */
static inline uint32_t sd_word_wakes(struct sd_waitword *word)
{
    /* acquire: pairs with the increment in sd_wake */
    return atomic_load_explicit(&word->seq, memory_order_acquire) >> 1;
}

typedef bool (*sd_ready_fn)(void *arg);

/*
 * The runnable budget of a device (the engine rule: never more runnable
 * device threads than host CPUs). `awake` counts the device threads that
 * run a job (a launch's AICPU threads, its cores) and are not parked: a
 * thread in a job parks uncounted (sd_wait decrements before the futex and
 * counts itself again after it). A waiter that may give its CPU up (a core
 * idle on its doorbell) leaves its spin early while more threads are awake
 * than `cpus`, taking itself out of the count with one compare-and-swap,
 * so exactly the excess parks and the others keep spinning.
 */
struct sd_budget {
    _Alignas(SD_CACHELINE) _Atomic uint32_t awake;
    uint32_t cpus; /* the host CPUs this process may use (device start) */
};

/* Runs on every device thread while it runs a job (device.c sets it around
 * the job): the budget its waits count against, or NULL. */
extern _Thread_local struct sd_budget *sd_tl_budget;
/* The device thread running the job (set with sd_tl_budget), or NULL. */
extern _Thread_local struct sd_worker *sd_tl_worker;

/* Bumps the sequence and wakes every parked waiter. */
void sd_wake(struct sd_waitword *word);

/*
 * Waits until ready(arg) is true: spins for spin_ns (never yielding), then
 * parks. Returns 0,
 * PTO_RUNTIME_ERR_TIMEOUT once deadline_ns (absolute, simdev_clock_ns; 0 =
 * none) passes, or PTO_RUNTIME_ERR_DEVICE_LOST when *lost becomes nonzero
 * (lost may be NULL). Whoever sets *lost must sd_wake the word afterwards.
 */
int sd_wait(struct sd_waitword *word, sd_ready_fn ready, void *arg, uint64_t spin_ns,
            uint64_t deadline_ns, _Atomic int *lost);

/* sd_wait whose spin also ends, and the thread parks, while the calling
 * thread's budget (sd_tl_budget) has more threads awake than CPUs. For
 * waiters whose wake-up is off the per-task path when it matters: a core
 * idle on its doorbell, whose scheduler prefers cores that are awake. */
int sd_wait_within_budget(struct sd_waitword *word, sd_ready_fn ready, void *arg,
                          uint64_t spin_ns, uint64_t deadline_ns, _Atomic int *lost);


/* ------------------------------------------------------------------- ops */

enum sd_op_type {
    SD_OP_AICPU,
    SD_OP_AICORE,
    SD_OP_COPY,
    SD_OP_MEMSET,
    SD_OP_HOST_FN,
    SD_OP_RECORD,
    SD_OP_WAIT,
    SD_OP_GRAPH,
    SD_OP_SEM_ACQUIRE,
    SD_OP_SEM_RELEASE,
};

struct sd_event_record;
struct simdev_graph_exec;

/* One stream operation. Launch argument bytes are stored inline after it. */
struct sd_op {
    struct sd_op *next;
    enum sd_op_type type;
    union {
        struct {
            simdev_aicpu_fn fn;
            uint32_t thread_count;
        } aicpu;
        struct {
            simdev_aicore_fn fn;
        } aicore;
        struct {
            void *dst;
            const void *src;
            size_t bytes;
        } copy;
        struct {
            void *dst;
            int value;
            size_t bytes;
        } memset;
        struct {
            simdev_host_fn fn;
            void *user_data;
        } host;
        struct sd_event_record *record; /* RECORD: completes it; WAIT: waits for it (NULL: no-op) */
        struct simdev_graph_exec *graph;
        simdev_sem_t sem;
    } u;
    int exec_fault; /* test-only: nonzero = fail with this code when executed */
    bool handoff;   /* RECORD: the stream's error goes to the event, the stream is clean after */
    size_t args_size;
    unsigned char args[];
};

struct sd_device;

/* Allocates an op with room for args_size argument bytes, copied from args. */
struct sd_op *sd_op_new(enum sd_op_type type, const void *args, size_t args_size);
/* A deep copy of a launch/copy/memset/host op (graph instantiation). */
struct sd_op *sd_op_clone(const struct sd_op *op);
/* Frees an op and drops the references it holds. */
void sd_op_free(struct sd_op *op);

/*
 * Runs a launch, copy, memset or host op to completion on the calling
 * thread and returns its status. Launches block until every device thread
 * of the launch has returned or the watchdog fires (which loses the device).
 */
int sd_op_run(struct sd_device *dev, struct sd_op *op);
/* Runs `op` after a predecessor left `carried` (0: none) and returns the
 * status after it: an op after a failure is skipped with that failure,
 * except a semaphore op, which is synchronisation and always executes
 * (keeping the carried failure). The one rule of the stream executor and of
 * graph replay. */
int sd_op_run_after(struct sd_device *dev, struct sd_op *op, int carried);

/* ---------------------------------------------------------------- devices */

/* Where an AICPU worker may run (place_aicpu, device.c): the CPUs it was
 * created with, only the orchestrator's CPU, or every CPU but that one. */
enum sd_place { SD_PLACE_ANY, SD_PLACE_PRIMARY, SD_PLACE_OTHERS };

/* One persistent device thread: an AICPU thread or an AICore. */
struct sd_worker {
    struct sd_device *dev;
    pthread_t thread;
    bool is_core;
    uint32_t index; /* AICPU thread index or core id */
    /* Placement (device.c): for the core that shares its CPU with the
     * AICPU thread running a job's last thread, that thread while it does
     * (its `awake` says whether it runs the job and is not parked); else
     * NULL. */
    _Atomic(struct sd_worker *) mate;
    /* Placement (device.c): a core pinned to a CPU that no other core of
     * its device uses. Its CPU is its own but for `mate`, so the budget's
     * device-wide count never parks it early (park.c). */
    bool own_cpu;
    /* Placement (device.c) of an AICPU worker, kept from job to job and
     * changed only by the worker's own thread. */
    enum sd_place place;
    _Alignas(SD_CACHELINE) _Atomic uint32_t awake;
    /* Set by the launcher, taken (swapped back to NULL) by the worker. */
    _Alignas(SD_CACHELINE) _Atomic(struct sd_job *) job;
    struct sd_waitword wake; /* the launcher wakes the worker here */
};

/* The AICPU thread that shares `core`'s CPU and has the place, or NULL. */
static inline const struct sd_worker *sd_core_mate(const struct sd_worker *core)
{
    /* acquire: pairs with the release in primary_begin (device.c) */
    return atomic_load_explicit(&((struct sd_worker *)core)->mate, memory_order_acquire);
}

/* True while `core` gives way to the AICPU thread sharing its CPU: that
 * thread (its mate) runs the job that has the place and is awake. */
static inline bool sd_core_gives_way(const struct sd_worker *core)
{
    const struct sd_worker *mate = sd_core_mate(core);
    return mate && atomic_load_explicit(&mate->awake, memory_order_relaxed);
}

/* One execution of an AICPU or AICore launch, shared with its workers. */
struct sd_job {
    struct sd_job *next_abandoned;
    simdev_aicpu_fn aicpu_fn; /* exactly one of the two is set */
    simdev_aicore_fn aicore_fn;
    void *args_copy; /* the job's own copy of the argument bytes */
    size_t args_size;
    uint32_t thread_count;
    _Atomic uint32_t remaining;
    _Atomic int status;
};

struct simdev_core_regs {
    /* The doorbell and condition words sit on their own cache lines: the
     * AICPU side writes one and the core the other, so sharing a line would
     * make each write invalidate the other side's read. */
    _Alignas(SD_CACHELINE) _Atomic uint64_t doorbell;
    struct sd_waitword doorbell_wait;
    _Alignas(SD_CACHELINE) _Atomic uint64_t cond;
    /* Condition writes so far (the core's own line: no other writer), part
     * of the device's condition sequence (regs.c). */
    _Atomic uint32_t cond_writes;
    struct sd_device *dev;
    uint32_t core_id;
};

struct sd_alloc {
    uintptr_t base;
    size_t bytes;
    uint32_t owner;
};

struct sd_device {
    int id;
    pthread_mutex_t lock; /* config, lifecycle, object lists */
    bool configured;
    _Atomic bool started; /* written under lock; read lock-free on every call */
    struct simdev_config config;
    _Atomic int lost;
    struct sd_budget budget; /* its device threads awake, against the host's CPUs */
    /* Placement of a job's last AICPU thread (place_threads): the CPU it runs
     * on and the core sharing that CPU, or -1 each. */
    int primary_cpu;
    int primary_mate;
    _Atomic(struct sd_worker *) primary_owner; /* the thread that has the place, or NULL */
    cpu_set_t all_cpus;    /* the process's CPUs */
    cpu_set_t other_cpus;  /* all_cpus but primary_cpu (when that is set) */

    /* Threads. */
    struct sd_worker aicpu[SIMDEV_MAX_AICPU_THREADS];
    struct sd_worker cores[SIMDEV_MAX_CORES];
    struct simdev_core_regs *regs; /* SIMDEV_MAX_CORES windows, cache-aligned */
    _Atomic int stopping;

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

    /* Launch completions: the last thread of a job wakes its launcher here.
     * The word lives in the device, not the job, because the launcher frees
     * the job as soon as it sees the job done, possibly before the waker has
     * returned from sd_wake. */
    _Alignas(SD_CACHELINE) struct sd_waitword launch_done;

    /* Semaphores (sem.c). `live` changes under lock; ops use the two
     * counter words only, each of which carries the slot's generation in
     * its top 32 bits, so an op checks its handle and moves a counter in
     * one compare-and-swap and never touches a later semaphore's counters. */
    struct sd_sem {
        bool live;                /* guarded by dev->lock */
        _Atomic uint64_t tickets; /* generation << 32 | acquires executed (mod 2^32) */
        _Atomic uint64_t granted; /* generation << 32 | tickets below this hold a unit */
        _Atomic uint64_t acquired, released; /* since creation, for tests */
        _Alignas(SD_CACHELINE) struct sd_waitword word;
    } sems[SIMDEV_MAX_SEMS];

    /* Condition words: platform_cond_signal bumps this; the condition
     * sequence is its count plus every core's cond_writes (regs.c). */
    _Alignas(SD_CACHELINE) struct sd_waitword cond_word;
    /* Notification channels (simdev_notify_*), each on its own line. */
    struct {
        _Alignas(SD_CACHELINE) struct sd_waitword word;
    } notify[PLATFORM_NOTIFY_CHANNELS];

    /* Memory: sorted by base. Caller must hold mem_lock. */
    pthread_mutex_t mem_lock;
    struct sd_alloc *allocs;
    size_t alloc_count;
    size_t alloc_cap;
    /* Blocks freed after the device was lost: a hung device function may
     * still write them, so they are released only by the reset, once every
     * device function has returned. */
    void **graveyard;
    size_t graveyard_count, graveyard_cap;
    uint64_t in_use;
    uint64_t high_water;
    uint64_t owner_in_use[SIMDEV_MAX_MEM_OWNERS];

    /* Objects the device owns, destroyed by reset. Caller must hold lock. */
    struct simdev_stream *streams;
    struct simdev_event *events;
    struct simdev_graph *graphs;
    struct simdev_graph_exec *execs;
    struct sd_job *abandoned; /* jobs whose threads hung; freed at reset */

    /* Fault injection and op counters (fault.c). */
    _Atomic int64_t fault_countdown[SIMDEV_OP_KIND_COUNT];
    _Atomic int fault_code[SIMDEV_OP_KIND_COUNT];
    _Atomic uint64_t performed[SIMDEV_OP_KIND_COUNT];
    _Atomic int64_t exec_fault_countdown[SIMDEV_OP_KIND_COUNT];
    _Atomic int exec_fault_code[SIMDEV_OP_KIND_COUNT];
};

/* The device `id`, started (threads running) — the checked entry of every
 * call. Returns INVALID_ARGUMENT for a bad id, DEVICE_LOST when lost. */
int sd_device_acquire(int id, struct sd_device **out);
/* The current device of the calling thread, started. */
int sd_device_current(struct sd_device **out);
/* The device `id` without starting it (NULL for a bad id). */
struct sd_device *sd_device_peek(int id);
/* Marks the device lost and wakes every waiter on it. */
void sd_device_mark_lost(struct sd_device *dev);
static inline bool sd_device_lost(struct sd_device *dev)
{
    return atomic_load_explicit(&dev->lost, memory_order_acquire) != 0;
}

/* A device function's or host callback's return as an op status: 0 and
 * negative codes pass through; a positive return (outside the contract) is
 * reported as PTO_RUNTIME_ERR_INTERNAL so it still fails the stream. */
static inline int sd_status_from_return(int value)
{
    return value > 0 ? PTO_RUNTIME_ERR_INTERNAL : value;
}

/* Semaphore ops (sem.c): runs an acquire or release op; kills every
 * semaphore of a device being reset (their waiters fail). */
int sd_sem_run(struct sd_device *dev, const struct sd_op *op);
void sd_sem_kill_all(struct sd_device *dev);

/* Runs a launch op on the device's threads (device.c). */
int sd_device_run_launch(struct sd_device *dev, const struct sd_op *op);

/* Memory (memory.c). Caller must hold nothing. */
void sd_memory_release_all(struct sd_device *dev);
/* INVALID_ARGUMENT unless [ptr, ptr+bytes) lies inside one live allocation. */
int sd_memory_check_range(struct sd_device *dev, const void *ptr, size_t bytes);
/* Checks the device side(s) of a copy of `kind`. */
int sd_memory_check_copy(struct sd_device *dev, void *dst, const void *src, size_t bytes,
                         enum simdev_copy_kind kind);

/* How long a waiter of each role spins before it parks (device.c). A
 * core waiting for its doorbell spins the configured spin_ns, cut short
 * by the runnable budget (sd_wait_within_budget): spinning only pays
 * while the thread that ends the wait is running elsewhere, and a spinner
 * over the budget would take that thread's CPU. An
 * AICPU thread (waiting for cores or another AICPU thread) and an idle
 * worker or launcher spin SD_SHORT_SPIN_NS: no per-task handoff goes
 * through their waits. */
#define SD_SHORT_SPIN_NS 3000
enum sd_wait_role { SD_WAIT_CORE, SD_WAIT_AICPU, SD_WAIT_IDLE };
uint64_t sd_spin_ns(const struct sd_device *dev, enum sd_wait_role role);

/* Register windows (regs.c). */
int sd_regs_create(struct sd_device *dev);
void sd_regs_destroy(struct sd_device *dev);
void sd_regs_wake_all(struct sd_device *dev);

/* Fault injection (fault.c): 0 to go ahead, or the armed code. */
int sd_fault_check(struct sd_device *dev, enum simdev_op_kind kind);
static inline void sd_count(struct sd_device *dev, enum simdev_op_kind kind)
{
    atomic_fetch_add_explicit(&dev->performed[kind], 1, memory_order_relaxed);
}
void sd_fault_reset(struct sd_device *dev);
/* Execution faults: 0, or the code the op of `kind` being queued now must
 * fail with when it executes. */
int sd_fault_exec_take(struct sd_device *dev, enum simdev_op_kind kind);

/* ---------------------------------------------------------------- streams */

struct sd_capture;

struct simdev_stream {
    struct sd_device *dev;
    struct simdev_stream *next_in_device; /* caller must hold dev->lock */
    pthread_t executor;

    pthread_mutex_t lock; /* guards every field below */
    pthread_cond_t work_cond; /* executor waits for ops */
    pthread_cond_t idle_cond; /* sync waits for progress */
    struct sd_op *head;
    struct sd_op *tail;
    uint64_t enqueued;
    uint64_t completed;
    int carried_status; /* error the stream carries; skips later ops */
    bool stopping;

    /* Capture (capture.c); guarded by the global capture lock. The pointer
     * is atomic so the enqueue fast path can see "not capturing" lock-free. */
    _Atomic(struct sd_capture *) capture;
    uint32_t capture_lane;
    size_t *capture_tail; /* node ids the next captured op depends on */
    size_t capture_tail_count;
    size_t capture_tail_cap;
};

/* Enqueues a launch, copy, memset, host or graph op on the stream, or
 * records it into the stream's capture. Takes ownership of `op` on
 * success. */
int sd_stream_submit(struct simdev_stream *stream, struct sd_op *op);
/* Queues an op for the executor; returns 1 (and takes nothing) when the
 * stream is capturing, so the caller goes back to its capture path. */
int sd_stream_enqueue(struct simdev_stream *stream, struct sd_op *op);
/* Destroys a stream during device reset (no capture check). */
void sd_stream_teardown(struct simdev_stream *stream);

/* ----------------------------------------------------------------- events */

/*
 * One record of an event: completed by the stream that reached it, carrying
 * that stream's error. Reference-counted: the event and every op that
 * completes or waits for it hold one.
 */
struct sd_event_record {
    _Atomic uint32_t refs;
    _Atomic int done;
    int status; /* written before done is released */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct sd_capture *capture; /* non-NULL: recorded inside this capture */
    size_t *capture_tail;       /* the recording stream's tail at that point */
    size_t capture_tail_count;
};

struct simdev_event {
    struct sd_device *dev;
    struct simdev_event *next_in_device; /* caller must hold dev->lock */
    pthread_mutex_t lock;
    struct sd_event_record *latest; /* guarded by lock; NULL = never recorded */
};

struct sd_event_record *sd_record_new(void);
void sd_record_ref(struct sd_event_record *record);
void sd_record_unref(struct sd_event_record *record);
void sd_record_complete(struct sd_event_record *record, int status);
/* Blocks until complete; returns its status. */
int sd_record_wait(struct sd_event_record *record);
void sd_event_teardown(struct simdev_event *event);
/* Replaces the event's latest record, taking the caller's reference. */
void sd_event_set_latest(struct simdev_event *event, struct sd_event_record *record);

/* ---------------------------------------------------------------- capture */

/* A stream capture in progress. Guarded by the global capture lock. */
struct sd_capture {
    struct sd_device *dev;
    struct simdev_stream *origin;
    pthread_t owner_thread; /* the thread that began it */
    struct sd_capture *next_live;
    int violation; /* first forbidden-op status; nonzero fails end_capture */
    struct simdev_stream **streams; /* lane i = streams[i]; lane 0 = origin */
    uint32_t stream_count;
    uint32_t stream_cap;
    struct sd_gnode *nodes;
    size_t node_count;
    size_t node_cap;
    bool ended;
    _Atomic uint32_t refs; /* the session and every record it made */
};

/* A graph node: an op plus the node ids it depends on. */
struct sd_gnode {
    struct sd_op *op;
    size_t *deps;
    size_t dep_count;
    uint32_t lane;
};

/*
 * Capture hooks used by the enqueue paths. Each returns 1 when the call was
 * handled by a capture (*status holds its result), 0 when the caller must
 * run the eager path.
 */
int sd_capture_submit(struct simdev_stream *stream, struct sd_op *op, int *status);
int sd_capture_record(struct simdev_event *event, struct simdev_stream *stream, int *status);
int sd_capture_wait(struct simdev_stream *stream, struct sd_event_record *record, int *status);

/*
 * Forbidden-operation checks. sd_capture_check_sync: called by synchronous
 * copies and synchronize calls; fails (and invalidates) when the calling
 * thread is capturing in strict mode. sd_capture_check_alloc: the same for
 * allocation and free (relaxed mode exempts both as well). Return 0 or
 * CAPTURE_UNSUPPORTED.
 */
int sd_capture_check_sync(void);
int sd_capture_check_alloc(void);
/* Invalidates the capture the stream is in (if any); returns
 * CAPTURE_UNSUPPORTED if it was capturing, else 0. */
int sd_capture_forbid_on_stream(struct simdev_stream *stream);
/* Query/sync of a record made in a capture that is still open: invalidates
 * that capture and returns CAPTURE_UNSUPPORTED; otherwise 0. */
int sd_capture_forbid_record(struct sd_event_record *record);
void sd_capture_unref(struct sd_capture *capture);
/* Ends every capture of the device (reset). */
void sd_capture_abort_device(struct sd_device *dev);

/* ----------------------------------------------------------------- graphs */

struct simdev_graph {
    struct sd_device *dev;
    struct simdev_graph *next_in_device; /* caller must hold dev->lock */
    struct sd_gnode *nodes;
    size_t node_count;
    uint32_t lane_count;
};

/* Makes a graph from a finished capture's nodes (takes them). */
int sd_graph_from_capture(struct sd_device *dev, struct sd_gnode *nodes, size_t node_count,
                          uint32_t lane_count, struct simdev_graph **out);
void sd_gnodes_free(struct sd_gnode *nodes, size_t count);
/* Runs one replay on the calling thread (the stream executor); returns the
 * first failing node's status. */
int sd_graph_exec_run(struct simdev_graph_exec *exec);
void sd_graph_exec_ref(struct simdev_graph_exec *exec);
void sd_graph_exec_unref(struct simdev_graph_exec *exec);
/* Destroy every graph / executable graph of a list (device reset). */
void sd_graph_teardown_list(struct simdev_graph *graphs);
void sd_graph_exec_teardown_list(struct simdev_graph_exec *execs);

/* ------------------------------------------------------------------ misc */

/* Lists: unlink `item` from a singly linked list through `next_field`. */
#define SD_LIST_REMOVE(head, item, type, next_field)          \
    do {                                                      \
        type **sd_link_ = (head);                             \
        while (*sd_link_ && *sd_link_ != (item))              \
            sd_link_ = &(*sd_link_)->next_field;              \
        if (*sd_link_)                                        \
            *sd_link_ = (item)->next_field;                   \
    } while (0)

#endif /* SIMDEV_INTERNAL_H */
