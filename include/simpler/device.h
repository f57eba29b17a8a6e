/*
 * simpler/device.h — the host-facing device API (simulated by simdev).
 *
 * Owns: the public device API that every layer above the device uses, in the
 * role CUDA's or CANN's runtime plays for a framework: device selection,
 * topology, device memory, streams, events, launches, stream capture and
 * graphs. What a device function receives is in device_fn.h; what code
 * running on the device calls (register windows, waits, the clock) is not
 * here but in the runtime's platform interface (src/platform/platform.h),
 * which host code never includes. Code above this header never learns that the device is simulated:
 * it never dereferences device pointers, and every asynchronous operation
 * returns before the work runs.
 *
 * Conventions: every fallible call returns 0 or a negative code from
 * status.h; outputs are written only on success; arguments are checked
 * before state; a rejected call changes nothing. Once a device is lost
 * (PTO_RUNTIME_ERR_DEVICE_LOST) every call on it fails with that code,
 * except destroy/free calls, which release host-side resources, and
 * simdev_device_reset.
 *
 * See docs/device.md for the model.
 */
#ifndef SIMPLER_DEVICE_H
#define SIMPLER_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/device_fn.h"
#include "simpler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- devices */


/*
 * Topology and limits of one device. Fixed when the device is first used.
 * Environment variables (read when a device is first used without an
 * explicit simdev_device_configure) override the defaults:
 *   SIMDEV_AICPU_THREADS, SIMDEV_AIC_CORES, SIMDEV_AIV_CORES,
 *   SIMDEV_MEMORY_BYTES, SIMDEV_WATCHDOG_MS, SIMDEV_SPIN_NS, SIMDEV_PIN_CORES,
 *   SIMDEV_RUNNABLE_CPUS.
 */
struct simdev_config {
    uint32_t aicpu_threads; /* 1..SIMDEV_MAX_AICPU_THREADS; default 2 */
    uint32_t aic_cores;     /* cube cores; default 1 */
    uint32_t aiv_cores;     /* vector cores; default 2; aic+aiv in 1..SIMDEV_MAX_CORES */
    uint64_t memory_bytes;  /* device memory capacity; default 1 GiB; > 0 */
    uint32_t watchdog_ms;   /* a device function running longer loses the
                               device; 0 = no watchdog; default 30000 */
    uint32_t spin_ns;       /* how long a core waiting for its doorbell spins
                               (without yielding) before it parks, unless the
                               runnable budget parks it earlier; default
                               50000 (50 us). Other waits spin at most 3 us. */
    uint32_t pin_cores;     /* 1 (default): when the cores (aic + aiv) are no
                               more than the host CPUs this process may use,
                               core thread i runs only on the i-th of them;
                               0: the OS places every thread */
    uint32_t runnable_cpus; /* the runnable budget: how many device threads
                               (AICPU threads and cores running a launch) may
                               be awake at once before an idle core waiting
                               for its doorbell parks early; 0 (default): the
                               host CPUs this process may use */
};

/* Writes the built-in defaults (not the environment) to *out. */
int simdev_config_default(struct simdev_config *out);

/*
 * Sets the topology of `device` before its first use. INVALID_ARGUMENT for a
 * bad id or out-of-range field; INVALID_STATE once the device has been used
 * (its threads exist) — reset it first to change the topology.
 */
int simdev_device_configure(int device, const struct simdev_config *config);

/* Writes the topology `device` has (or will have on first use) to *out. */
int simdev_device_get_config(int device, struct simdev_config *out);

/* Number of device ids (SIMDEV_MAX_DEVICES). */
int simdev_device_count(int *count);

/*
 * Per-thread current device (default 0). Calls without a stream argument
 * (malloc, sync copies, device sync, stream/event creation) act on it.
 */
int simdev_set_device(int device);
int simdev_get_device(int *device);

/* Waits until every stream of the current device is drained; returns the
 * first carried stream error (clearing it, as simdev_stream_sync does). */
int simdev_device_sync(void);

/*
 * Destroys everything `device` holds — streams, events, graphs, memory,
 * threads — and returns it to the unused state (a lost device becomes usable
 * again; its configuration is kept). Handles of the device become invalid.
 * Blocks until every device function still running has returned.
 */
int simdev_device_reset(int device);

/* 1 if `device` is lost (an unrecoverable fault happened), else 0. */
int simdev_device_is_lost(int device);

/* ----------------------------------------------------------------- memory */

enum simdev_copy_kind {
    SIMDEV_COPY_HOST_TO_DEVICE = 1,
    SIMDEV_COPY_DEVICE_TO_HOST = 2,
    SIMDEV_COPY_DEVICE_TO_DEVICE = 3,
    /* Host to device, the host bytes read before the enqueuing call returns
     * (as a launch's arguments are; CUDA's copies from pageable memory): the
     * op keeps its own copy, so the caller may reuse the source at once, a
     * capture records the bytes themselves, and every replay copies those
     * (simdev_graph_exec_staged_set replaces them). Synchronously
     * (simdev_memcpy) the same as HOST_TO_DEVICE. */
    SIMDEV_COPY_HOST_TO_DEVICE_STAGED = 4,
};

struct simdev_mem_info {
    uint64_t capacity;    /* configured memory_bytes */
    uint64_t in_use;      /* bytes currently allocated */
    uint64_t high_water;  /* largest in_use since first use / reset */
    uint64_t allocations; /* live allocations */
};

/*
 * Allocates `bytes` (> 0) of device memory on the current device, aligned to
 * 64 bytes. OUT_OF_DEVICE_MEMORY when in_use + bytes would pass capacity.
 * Forbidden from a thread that is capturing (CAPTURE_UNSUPPORTED; the
 * capture is invalidated), in every capture mode.
 */
int simdev_malloc(void **dev_ptr, size_t bytes);

/*
 * Allocation owners: a layer above may tag its allocations with an owner id
 * (1..SIMDEV_MAX_MEM_OWNERS-1, chosen by that layer; 0 is "unattributed",
 * what simdev_malloc uses) and read back how many bytes each owner holds.
 * simdev_malloc_owned is simdev_malloc with a tag; INVALID_ARGUMENT for an
 * owner out of range.
 */
#define SIMDEV_MAX_MEM_OWNERS 64
int simdev_malloc_owned(void **dev_ptr, size_t bytes, uint32_t owner);

/* Writes the bytes currently allocated under `owner` on `device`. */
int simdev_mem_owner_in_use(int device, uint32_t owner, uint64_t *bytes);

/* Frees a pointer returned by simdev_malloc (NULL: no-op). INVALID_ARGUMENT
 * for a pointer that is not a live allocation of the current device. On a
 * lost device the allocation ends at once (in_use drops) but the memory is
 * reclaimed only by simdev_device_reset, because a hung device function may
 * still write it. */
int simdev_free(void *dev_ptr);

int simdev_mem_get_info(int device, struct simdev_mem_info *out);

/*
 * Synchronous copy on the current device: the device side of the copy must
 * lie inside one live allocation (INVALID_ARGUMENT otherwise). Waits for
 * nothing else. Forbidden from a capturing thread in strict mode.
 */
int simdev_memcpy(void *dst, const void *src, size_t bytes, enum simdev_copy_kind kind);

/* ---------------------------------------------------------------- streams */

typedef struct simdev_stream *simdev_stream_t;
typedef struct simdev_event *simdev_event_t;
typedef struct simdev_graph *simdev_graph_t;
typedef struct simdev_graph_exec *simdev_graph_exec_t;

/* Creates a stream on the current device. Ops run in FIFO order, on a
 * device-side executor, asynchronously to the caller. */
int simdev_stream_create(simdev_stream_t *out);

/* Waits for the stream's pending work, then destroys it. INVALID_STATE while
 * it is capturing. */
int simdev_stream_destroy(simdev_stream_t stream);

/*
 * Waits until every op enqueued on `stream` so far has finished. Returns the
 * error the stream carries (0 if none) and clears it, so the stream runs new
 * work again; on a lost device, DEVICE_LOST whatever the stream carried. CAPTURE_UNSUPPORTED if the stream is capturing, or if the
 * calling thread is capturing in strict mode (the capture is invalidated).
 */
int simdev_stream_sync(simdev_stream_t stream);

/* 0 when drained and clean, NOT_READY while work is pending, else the carried
 * error (not cleared). CAPTURE_UNSUPPORTED on a capturing stream. */
int simdev_stream_query(simdev_stream_t stream);

/* Async copy/memset: enqueue and return. Same range rules as simdev_memcpy. */
int simdev_memcpy_async(void *dst, const void *src, size_t bytes, enum simdev_copy_kind kind,
                        simdev_stream_t stream);
int simdev_memset_async(void *dev_ptr, int value, size_t bytes, simdev_stream_t stream);

/* ------------------------------------------------------------ launches */

typedef int (*simdev_host_fn)(void *user_data);


/*
 * Enqueues `fn` to run on `thread_count` AICPU threads at once (1..the
 * device's aicpu_threads). The `args_size` bytes at `args` are copied before
 * this returns, so the caller may reuse them at once. The op's status is the
 * first nonzero status any thread returned.
 */
int simdev_launch_aicpu(simdev_stream_t stream, simdev_aicpu_fn fn, uint32_t thread_count,
                        const void *args, size_t args_size);

/* Enqueues `fn` to run once on every AICore (all at once), args copied as
 * above. */
int simdev_launch_aicore(simdev_stream_t stream, simdev_aicore_fn fn, const void *args,
                         size_t args_size);

/* Enqueues a host callback, run on the stream's executor in FIFO order; its
 * negative return fails the stream with that code (a positive one with
 * PTO_RUNTIME_ERR_INTERNAL). `user_data` is borrowed until it runs;
 * when captured, until the graph and every executable graph made from it
 * are destroyed. */
int simdev_launch_host_func(simdev_stream_t stream, simdev_host_fn fn, void *user_data);

/* ----------------------------------------------------------------- events */

int simdev_event_create(simdev_event_t *out);
/* Destroys the event; pending waits on it still complete. */
int simdev_event_destroy(simdev_event_t event);

/* Marks the current end of `stream`: the event completes when the stream
 * reaches this point, carrying the stream's error at that point. */
int simdev_event_record(simdev_event_t event, simdev_stream_t stream);

/* As simdev_event_record, and the stream hands its error over to the
 * event: when the record executes, the event carries the stream's error
 * (or the record's own failure) and the stream carries none afterwards, so
 * later ops on it run normally. For streams whose errors are reported
 * through the events they record rather than by a sync of their own (a
 * runtime's internal streams: each round's error reaches the round's
 * waiter and ends there). Counted and fault-injected as a RECORD. */
int simdev_event_record_handoff(simdev_event_t event, simdev_stream_t stream);

/* Makes later work on `stream` wait for the event's most recent record (a
 * never-recorded event is already complete). If that record carries an
 * error, `stream` inherits it. */
int simdev_stream_wait_event(simdev_stream_t stream, simdev_event_t event);

/* 0 when the latest record completed clean (or none), NOT_READY while
 * pending, else the error it carries. If the latest record was made inside
 * a capture that is still open, there is nothing that could complete:
 * CAPTURE_UNSUPPORTED, and that capture is invalidated (from any thread, in
 * any mode). A record of a capture that has ended counts as complete. */
int simdev_event_query(simdev_event_t event);

/* Waits for the latest record; returns its carried error (0 if clean).
 * Forbidden from a capturing thread in strict mode; on a record inside an
 * open capture, as simdev_event_query. */
int simdev_event_sync(simdev_event_t event);

/* ------------------------------------------------------------- semaphores */

/*
 * A device semaphore: a counter of units that stream ops take and give back
 * in FIFO order. Waiting for a unit blocks the stream (its executor, or the
 * graph lane replaying it), never a device thread: an AICPU thread or a core
 * is never held by a waiter. Both ops are synchronisation, like a wait: they
 * execute even on a stream that carries an error (and keep that error), so
 * an acquire enqueued before a failure and the release after it stay
 * balanced. A captured acquire or release is a graph node like any op.
 *
 * A handle is a value (device, slot, generation): a destroyed semaphore's
 * handle is stale, and an op on it fails with INVALID_STATE without touching
 * anything, even when a later semaphore reuses the slot.
 */
typedef uint64_t simdev_sem_t;
#define SIMDEV_MAX_SEMS 64

/* Creates a semaphore with `units` (1..2^32-1) units on the current device.
 * CAPACITY_EXCEEDED when SIMDEV_MAX_SEMS are live on it. */
int simdev_sem_create(simdev_sem_t *out, uint32_t units);
/* Destroys it: ops waiting on it (and later ones) fail with INVALID_STATE. */
int simdev_sem_destroy(simdev_sem_t sem);
/* Enqueues "take one unit": later work on `stream` starts once this op holds
 * a unit, granted in the order the acquires executed. */
int simdev_stream_sem_acquire(simdev_stream_t stream, simdev_sem_t sem);
/* Enqueues "give one unit back". */
int simdev_stream_sem_release(simdev_stream_t stream, simdev_sem_t sem);
/* What a live semaphore has done since its creation. */
struct simdev_sem_info {
    uint64_t tickets;  /* acquires that executed (granted or waiting), mod 2^32 */
    uint64_t acquired; /* acquires granted */
    uint64_t released; /* releases executed */
};
int simdev_sem_info(simdev_sem_t sem, struct simdev_sem_info *out);

/* ------------------------------------------------------------- batches */

/* One op of a batch (simdev_stream_enqueue_batch): what the single-op call
 * named beside its kind would enqueue, with the fields that call takes. */
enum simdev_batch_kind {
    SIMDEV_BATCH_RECORD,         /* simdev_event_record: event */
    SIMDEV_BATCH_RECORD_HANDOFF, /* simdev_event_record_handoff: event */
    SIMDEV_BATCH_WAIT,           /* simdev_stream_wait_event: event */
    SIMDEV_BATCH_AICPU,          /* simdev_launch_aicpu: aicpu_fn, thread_count, args */
    SIMDEV_BATCH_AICORE,         /* simdev_launch_aicore: aicore_fn, args */
    SIMDEV_BATCH_COPY,           /* simdev_memcpy_async: dev_ptr (dst), src, bytes, copy_kind */
    SIMDEV_BATCH_MEMSET,         /* simdev_memset_async: dev_ptr, value, bytes */
    SIMDEV_BATCH_HOST_FN,        /* simdev_launch_host_func: host_fn, user_data */
    SIMDEV_BATCH_SEM_ACQUIRE,    /* simdev_stream_sem_acquire: sem */
    SIMDEV_BATCH_SEM_RELEASE,    /* simdev_stream_sem_release: sem */
    /* simdev_launch_aicpu of one thread (thread_count 1, other fields as
     * SIMDEV_BATCH_AICPU) whose function is brief: it returns within
     * microseconds and never waits for other device work (a launch, a
     * core, an event, a semaphore). simdev may run it on the thread that
     * starts the op, as thread 0 of a one-thread launch on a free AICPU
     * thread, rather than hand it to that thread: no hand-off, no
     * wake-up. Counted, checked, faulted and captured as a launch. */
    SIMDEV_BATCH_AICPU_BRIEF,
    /* simdev_launch_aicore (fields as SIMDEV_BATCH_AICORE) whose cores are
     * started on demand. Handed out while an AICPU launch of the device is
     * running, the launch wakes no core: a core runs its block once device
     * code starts it (platform_core_start), or when an AICPU launch of the
     * device ends (whichever comes first), or the block is run by the
     * thread that calls platform_cores_run_unstarted. Handed out while no
     * AICPU launch runs, it starts every core, as SIMDEV_BATCH_AICORE. For
     * a core function whose AICPU half decides which cores it needs
     * (docs/device.md, "Cores started on demand"). Counted, checked,
     * faulted and captured as an AICore launch. */
    SIMDEV_BATCH_AICORE_ON_DEMAND,
    /* simdev_launch_aicpu (fields as SIMDEV_BATCH_AICPU) whose threads but
     * the last start on demand. The launch starts its last thread
     * (thread_count - 1) alone, on the thread that starts the op when that
     * is one of the launch's free AICPU threads. The others start when the
     * last calls platform_aicpu_start_others, or once the time it gave
     * platform_aicpu_start_others_after has passed; any still unstarted
     * when the last thread returns start then, and one alone runs on that
     * thread, after it, with no hand-off. For a program whose other
     * threads serve work its last thread makes (docs/device.md, "AICPU
     * threads started on demand"). Counted, checked, faulted and captured
     * as a launch. */
    SIMDEV_BATCH_AICPU_LEAD,
};
struct simdev_batch_op {
    enum simdev_batch_kind kind;
    simdev_event_t event;
    simdev_sem_t sem;
    simdev_aicpu_fn aicpu_fn;
    simdev_aicore_fn aicore_fn;
    uint32_t thread_count;
    const void *args; /* copied before the call returns, as a launch's */
    size_t args_size;
    void *dev_ptr;
    const void *src;
    enum simdev_copy_kind copy_kind;
    int value;
    size_t bytes;
    simdev_host_fn host_fn;
    void *user_data;
};

/*
 * Enqueues ops[0..count) on `stream` in order, as the single-op calls of
 * their kinds would one after the other — the same checks, codes, counts,
 * fault injection, capture and wake-up of an idle stream — but taking the
 * stream once for all of them, not once each (a launch chain's cost;
 * docs/device.md, "What an enqueue costs"). Stops at the first op that
 * fails: returns its code, and *enqueued (always written) is its index —
 * the ops before it are enqueued, it and those after it are not. 0 with
 * *enqueued = count when all are. `ops` is borrowed for the call.
 * INVALID_ARGUMENT (nothing enqueued) for a NULL stream or enqueued, or
 * NULL ops with a nonzero count.
 */
int simdev_stream_enqueue_batch(simdev_stream_t stream, const struct simdev_batch_op *ops,
                                size_t count, size_t *enqueued);

/*
 * Starts the work the calling host thread enqueues between the two calls
 * on that thread, at the end. While the calling thread is between them,
 * an op it enqueues on an idle stream is not handed to the stream's
 * executor: the stream is held (no other thread starts it), and the
 * outermost simdev_start_here_end starts the held streams on the calling
 * thread, in the order they were first held, running their ops as far as
 * they run without blocking — as the device thread that ends an op goes
 * on with its stream: a record, a wait for a completed record, a
 * semaphore op that holds at once, a brief AICPU launch, the hand-out of
 * a launch whose threads are free, a small copy, a graph launch whose
 * graph has no replay running. An op that would block (a host callback, a
 * graph launch behind another replay of its graph, a large copy, a launch
 * that has to wait for threads) goes to its stream's executor then. Ops, their order,
 * codes, counts, faults and capture are those of the same enqueues
 * without the calls; only which thread starts the work, and when, differ.
 * For a burst of dependent ops across streams (a launch chain): no
 * executor is woken to start it, and the streams go on in the order the
 * ops let each other go, not the order the batches were enqueued in.
 *
 * Calls nest (the outermost end starts); an end without a begin does
 * nothing. Up to 8 streams are held at once; a further idle stream goes
 * to its executor as usual. On a device thread (a device function, a
 * kernel) both are no-ops, and inside a stream's frame (a host callback
 * run by a stream's executor) nothing is held: the streams a held stream
 * let go would wait for the callback to return. A graph's host-function
 * node, which runs outside any frame, holds as any host thread does. A simdev call of the holding thread that may
 * wait for a stream (a sync, a stream destroy, a device reset) starts the
 * held streams first, so it never waits for work it holds.
 */
void simdev_start_here_begin(void);
void simdev_start_here_end(void);

/* ------------------------------------------------------ capture and graphs */

enum simdev_capture_mode {
    SIMDEV_CAPTURE_MODE_STRICT = 0,  /* default: sync calls from a capturing
                                        thread fail and invalidate its capture */
    SIMDEV_CAPTURE_MODE_RELAXED = 1, /* sync copies, synchronize, malloc and free
                                        allowed (as CUDA's relaxed mode): for
                                        work that serves no captured op */
};

/*
 * Starts recording on `stream`: later ops enqueued on it (from any thread)
 * become graph nodes instead of running. The calling thread becomes the
 * capture's *capturing thread* until the capture ends — the thread whose
 * synchronous calls are forbidden. INVALID_STATE if the stream is already
 * capturing.
 */
int simdev_stream_begin_capture(simdev_stream_t stream);

/*
 * Ends the capture begun on `stream` (the origin) and writes the graph; any
 * thread may end it.
 * Every stream pulled into the capture leaves it. Fails — and discards the
 * recording — with CAPTURE_INVALIDATED if a forbidden op happened during the
 * capture, CAPTURE_UNJOINED if a stream pulled in did not join back into
 * the origin stream, DEVICE_LOST if the device was lost meanwhile;
 * INVALID_STATE (nothing ends) if `stream` is not the origin of a capture.
 */
int simdev_stream_end_capture(simdev_stream_t stream, simdev_graph_t *graph);

/* Whether `stream` is in a capture (as origin or pulled in) into
 * *capturing (1 or 0), and that capture's id into *capture_id (0 when
 * not capturing): unique among the process's captures, so two streams
 * report the same id exactly when they are in the same capture (CUDA's
 * cudaStreamGetCaptureInfo). A read: it neither waits nor changes
 * anything, and is allowed from a capturing thread. INVALID_ARGUMENT for
 * NULLs. */
int simdev_stream_get_capture_info(simdev_stream_t stream, int *capturing, uint64_t *capture_id);

/* 1 if the stream is capturing (as origin or pulled in), else 0; writes it
 * to *capturing. */
int simdev_stream_is_capturing(simdev_stream_t stream, int *capturing);

/* Sets the calling thread's capture mode and writes the previous one to
 * *mode (exchange, so it can be restored). */
int simdev_thread_exchange_capture_mode(enum simdev_capture_mode *mode);

/* Number of nodes in a graph: its launches, copies, memsets and host
 * callbacks. Event records and waits inside a capture become edges between
 * nodes, not nodes. */
int simdev_graph_node_count(simdev_graph_t graph, size_t *count);
int simdev_graph_destroy(simdev_graph_t graph);

/* Makes an executable graph; the graph may be destroyed afterwards. */
int simdev_graph_instantiate(simdev_graph_exec_t *out, simdev_graph_t graph);

/*
 * Enqueues one replay of the graph on `stream`: every node runs with the
 * arguments frozen at capture, branches captured on different streams run
 * concurrently, and the replay completes when every node has. Replays of one
 * executable graph never overlap. A failing node fails the replay, and the
 * stream carries its error. CAPTURE_UNSUPPORTED on a capturing stream.
 * On an idle stream the replay starts on the calling thread, as work
 * enqueued between simdev_start_here_begin and _end does: its first nodes
 * run before the call returns, as far as they run without blocking.
 */
int simdev_graph_launch(simdev_graph_exec_t exec, simdev_stream_t stream);
int simdev_graph_exec_destroy(simdev_graph_exec_t exec);

/*
 * Launch nodes of an executable graph and their arguments (CUDA's
 * cudaGraphExecKernelNodeSetParams). The launch nodes are the graph's
 * AICPU and AICore launches, indexed 0..count-1 in capture order.
 */
struct simdev_launch_node {
    simdev_aicpu_fn aicpu_fn;   /* an AICPU launch's function, else NULL */
    simdev_aicore_fn aicore_fn; /* an AICore launch's function, else NULL */
    uint32_t thread_count;      /* an AICPU launch's threads; 0 for AICore */
    size_t args_size;           /* bytes of its current arguments */
};

/* The number of launch nodes of `exec` into *count. INVALID_ARGUMENT for NULLs. */
int simdev_graph_exec_launch_count(simdev_graph_exec_t exec, size_t *count);

/* Describes launch node `index` into *node and, when `args` is not NULL,
 * copies its current argument bytes (those a replay launched now runs
 * with) into `args` (`capacity` bytes). INVALID_ARGUMENT for NULLs, an
 * index past the count, or a capacity below the node's args_size. */
int simdev_graph_exec_launch_get(simdev_graph_exec_t exec, size_t index,
                                 struct simdev_launch_node *node, void *args, size_t capacity);

/*
 * Replaces the argument bytes of launch node `index` with `bytes` bytes
 * copied from `args` (at most SIMDEV_MAX_LAUNCH_ARGS; the function and
 * thread count stay). Replays launched after this returns run with them;
 * replays launched before it (queued or running) keep the set they were
 * launched with, whole: an update racing a launch on another thread leaves
 * that replay with the old set or the new one, never a mix. Never waits for
 * a replay and touches no device memory. INVALID_ARGUMENT for a NULL exec,
 * an index past the count, NULL args with bytes, or too many bytes;
 * OUT_OF_HOST_MEMORY, with nothing changed.
 */
int simdev_graph_exec_launch_set_args(simdev_graph_exec_t exec, size_t index, const void *args,
                                      size_t bytes);

/*
 * Staged copy nodes of an executable graph (SIMDEV_COPY_HOST_TO_DEVICE_STAGED
 * copies recorded by its capture), indexed 0..count-1 in capture order, and
 * their bytes (CUDA's cudaGraphExecMemcpyNodeSetParams, for copies that own
 * their source). The count into *count; INVALID_ARGUMENT for NULLs.
 */
int simdev_graph_exec_staged_count(simdev_graph_exec_t exec, size_t *count);

/* Staged copy node `index`: its device destination into *dst and the
 * number of its current bytes (those a replay launched now copies) into
 * *bytes; when `data` is not NULL, the bytes themselves into `data`
 * (`capacity` bytes). INVALID_ARGUMENT for NULLs, an index past the count,
 * or a capacity below the node's bytes. */
int simdev_graph_exec_staged_get(simdev_graph_exec_t exec, size_t index, void **dst,
                                 size_t *bytes, void *data, size_t capacity);

/*
 * Replaces the bytes staged copy node `index` copies with `bytes` bytes
 * read from the host at `src` before this returns (the destination stays;
 * [dst, dst + bytes) must lie in one live allocation). Replays launched
 * after this returns copy them; replays launched before keep theirs, as
 * simdev_graph_exec_launch_set_args. INVALID_ARGUMENT for a NULL exec or
 * src, an index past the count, 0 bytes or a range outside the
 * destination's allocation; OUT_OF_HOST_MEMORY, with nothing changed.
 */
int simdev_graph_exec_staged_set(simdev_graph_exec_t exec, size_t index, const void *src,
                                 size_t bytes);

/* Monotonic device clock in nanoseconds. */
uint64_t simdev_clock_ns(void);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_DEVICE_H */
