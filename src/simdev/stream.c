/*
 * simdev/stream.c — streams: FIFO op queues run asynchronously to the host.
 *
 * Owns: stream creation and destruction, each stream's executor thread, the
 * op queue, the error a stream carries (skip, inherit, clear on sync), who
 * runs a stream's ops (the thread that ended the op before, or the
 * executor for what may block), the executor's work for others (a
 * replay's blocking nodes), and queueing an op (the entry points that
 * make ops are enqueue.c's). Capture decisions are delegated to
 * capture.c; events to event.c.
 */
#include <stdlib.h>
#include <string.h>

#include "simdev/capture.h"
#include "simdev/device.h"
#include "simdev/device_config.h"
#include "simdev/event.h"
#include "simdev/fault.h"
#include "simdev/graph.h"
#include "simdev/launch.h"
#include "simdev/memory.h"
#include "simdev/op.h"
#include "simdev/park.h"
#include "simdev/stream.h"

/* --------------------------------------------------------------- executor */

_Static_assert((int)SD_OP_AICPU == SIMDEV_MARK_AICPU && (int)SD_OP_AICORE == SIMDEV_MARK_AICORE &&
                   (int)SD_OP_COPY == SIMDEV_MARK_COPY && (int)SD_OP_MEMSET == SIMDEV_MARK_MEMSET &&
                   (int)SD_OP_HOST_FN == SIMDEV_MARK_HOST_FN &&
                   (int)SD_OP_RECORD == SIMDEV_MARK_RECORD && (int)SD_OP_WAIT == SIMDEV_MARK_WAIT &&
                   (int)SD_OP_GRAPH == SIMDEV_MARK_GRAPH &&
                   (int)SD_OP_SEM_ACQUIRE == SIMDEV_MARK_SEM_ACQUIRE &&
                   (int)SD_OP_SEM_RELEASE == SIMDEV_MARK_SEM_RELEASE,
               "a timeline's op names are the op types");

/*
 * Who runs a stream's ops. The stream's executor thread takes the stream
 * when its head op is not busy (an op being run or in flight). An op that
 * completes later (a launch's job, a wait for a record not yet complete)
 * leaves the stream busy, and whoever ends it goes on with the stream on
 * its own thread — the launch's last device thread, the thread that
 * completes the record — as far as the ops run without blocking: a
 * record, a wait, a semaphore op that holds at once, a launch whose
 * threads are free at once, a small copy. An op that would block (a host
 * callback, a graph launch, a large copy, an acquire or a launch that has
 * to wait its turn) is handed back to the executor. So a chain of ops
 * across streams runs where the previous op ended, without a hand-off to
 * another thread per op (docs/device.md, "Who runs a stream's ops").
 */

static void launch_done(void *ctx, uintptr_t tag, int status)
{
    sd_stream_op_done(ctx, (struct sd_op *)tag, status);
}


enum start_result {
    OP_RAN,          /* done: *after holds the status the stream carries */
    OP_PENDING,      /* in flight: its end goes on with the stream */
    OP_FOR_EXECUTOR, /* would block: not started, the executor's */
};

/* The status `op` starts after: the stream's carried error, else a lost
 * device's, else a test's execution fault (the op fails as it runs, as if
 * the device had failed it: a record completes with the code, a wait
 * still waits). */
static int start_status(const struct sd_device *dev, const struct sd_op *op, int carried)
{
    if (carried == 0 && sd_device_lost((struct sd_device *)dev))
        carried = PTO_RUNTIME_ERR_DEVICE_LOST;
    if (carried == 0 && op->exec_fault)
        carried = op->exec_fault;
    return carried;
}

/*
 * Starts `op`, the stream's head, after `carried` (the stream's error: an
 * op after a failure is skipped and fails with it; a record completes with
 * it; a wait still waits and inherits the error of the record it waited
 * for; a semaphore op still executes). on_executor: the calling thread is
 * the stream's executor, which may block.
 */
static enum start_result start_op(struct simdev_stream *stream, struct sd_op *op, int carried,
                                  bool on_executor, int *after)
{
    struct sd_device *dev = stream->dev;
    carried = start_status(dev, op, carried);
    switch (op->type) {
    case SD_OP_RECORD: /* the streams waiting for it go on here, first */
        sd_record_complete(op->u.record, carried, &dev->waits);
        *after = op->handoff ? 0 : carried;
        return OP_RAN;
    case SD_OP_WAIT: {
        /* A wait always waits, even on a stream that carries an error: an
         * error never reorders a stream, so whatever follows the wait still
         * starts after the waited-for work ended. */
        int waited = 0;
        stream->wait_carried = carried;
        if (op->u.record && sd_record_wait_async(op->u.record, stream, &waited))
            return OP_PENDING;
        *after = carried ? carried : waited;
        return OP_RAN;
    }
    case SD_OP_GRAPH:
        if (carried) {
            *after = carried;
            return OP_RAN;
        }
        if (sd_graph_exec_start(op->u.graph.exec, op->u.graph.params, stream, op) == 0)
            return OP_PENDING;
        if (!on_executor) /* another replay of the graph runs: wait for it there */
            return OP_FOR_EXECUTOR;
        *after = sd_graph_exec_run(op->u.graph.exec, op->u.graph.params);
        return OP_RAN;
    default: /* launches, copies, semaphore ops, host callbacks */
        switch (sd_op_try_run(dev, op, carried, launch_done, stream, (uintptr_t)op, after)) {
        case SD_PENDING:
            return OP_PENDING;
        case SD_RAN:
            return OP_RAN;
        case SD_WOULD_BLOCK:
            break;
        }
        if (!on_executor)
            return OP_FOR_EXECUTOR;
        /* on the executor: waits its turn for threads or units, or runs */
        *after = sd_op_run_after(dev, op, carried);
        return OP_RAN;
    }
}

/* Ends the head op `op` with the status the stream carries after it. */
static void finish_op(struct simdev_stream *stream, struct sd_op *op, int after)
{
    struct sd_device *dev = stream->dev;
    sd_mark(&dev->timeline, SIMDEV_MARK_OP_END, (uint32_t)op->type, stream, 0, 0);
    pthread_mutex_lock(&stream->lock);
    stream->head = op->next;
    if (!stream->head)
        stream->tail = NULL;
    /* Keep an error set meanwhile by nobody else: only the stream's runner
     * and sync (which waits for completion first) write carried_status. */
    stream->carried_status = after;
    stream->completed++;
    /* release: the op's effects before a spinning sync sees it done */
    atomic_store_explicit(&stream->completed_seen, stream->completed, memory_order_release);
    /* Wake the syncs only when the nearest of their targets is reached:
     * one wake-up per sync, not one per op completed while it sleeps. */
    bool wake_syncs = stream->drain_sleepers && stream->completed >= stream->drain_wake_at;
    if (wake_syncs) {
        sd_note_wakeup(&dev->waits);
        stream->drain_wake_at = UINT64_MAX; /* the ones not done set it again */
    }
    /* The op goes back to the stream's cache under the lock taken anyway;
     * its references are dropped after, outside it. */
    struct sd_op_refs refs = sd_op_refs_take(op);
    bool kept = sd_op_cache_put(&stream->op_cache, op);
    pthread_mutex_unlock(&stream->lock);
    /* The syncs are woken once the lock is dropped: a sync woken under it
     * went back to sleep on the lock at once, and this thread made a
     * second wake-up system call to let it in (measured: a quarter of a
     * pipelined program's host thread in lll_lock_wait after its
     * condition wait; docs/performance.md, "Where the rest goes"). The
     * stream outlives the call: it is still busy with this thread (every
     * caller goes on with it, advance), and its teardown waits for the
     * executor, which waits for that. */
    if (wake_syncs)
        pthread_cond_broadcast(&stream->idle_cond);
    sd_op_refs_drop(refs);
    if (!kept)
        free(op);
}

/*
 * Streams a record let go on this thread (sd_stream_wait_done), in order,
 * and how many advance() frames run on it. A released stream goes on once
 * the stream that completed the record has gone as far as it goes: in a
 * round, the AICPU stream hands its program out before the AICore stream's
 * core loop wakes the cores, which would otherwise take the CPU of the
 * thread doing it (measured: 45 us between the two). Before an op that may
 * block on the executor, they go on first: never wait with a stream let go
 * and not yet run.
 */
static _Thread_local struct simdev_stream *tl_released, *tl_released_tail;
static _Thread_local unsigned tl_frames;
static _Thread_local bool tl_draining;

static void advance_ops(struct simdev_stream *stream, bool on_executor);

/* Runs the streams let go on this thread (none while a frame runs). */
static void run_released(void)
{
    if (tl_frames || tl_draining)
        return;
    tl_draining = true;
    while (tl_released) {
        struct simdev_stream *stream = tl_released;
        tl_released = stream->next_waiting;
        if (!tl_released)
            tl_released_tail = NULL;
        pthread_mutex_lock(&stream->lock);
        struct sd_op *op = stream->head;
        int carried = stream->wait_carried;
        pthread_mutex_unlock(&stream->lock);
        finish_op(stream, op, carried ? carried : stream->released_status);
        tl_frames++;
        advance_ops(stream, false);
        tl_frames--;
    }
    tl_draining = false;
}

/* Runs the stream's ops from its head while they run at once; the caller
 * has the stream (busy). Returns with the stream left busy by an op in
 * flight, or not busy: drained, or handed back to the executor; then the
 * streams it let go go on. */
static void advance(struct simdev_stream *stream, bool on_executor)
{
    /* The launches of this advance and of the streams it lets go wake
     * their threads at its end (launch.h, sd_launch_defer_begin): a
     * round's program, handed out before the record that lets its core
     * loop go on runs, finds that core loop handed out when its threads
     * begin (the runtime's orchestrator runs a lone task's core block
     * itself: docs/runtime.md). */
    sd_launch_defer_begin();
    tl_frames++;
    advance_ops(stream, on_executor);
    tl_frames--;
    run_released();
    sd_launch_defer_end();
}

/* start_op on the executor, which may block: with no wake-up put off
 * meanwhile (launch.h, sd_launch_defer_pause), so that nothing it waits
 * for waits for this thread's wake-up. */
static enum start_result start_op_blocking(struct simdev_stream *stream, struct sd_op *op,
                                           int carried, int *after)
{
    unsigned depth = sd_launch_defer_pause();
    enum start_result started = start_op(stream, op, carried, true, after);
    sd_launch_defer_resume(depth);
    return started;
}

/*
 * Wakes the stream's executor if it sleeps waiting for work, once: a
 * caller that finds it woken already (signalled, not yet back from its
 * wait) signals nothing and counts no wake-up, as the condition variable
 * has no waiter left to wake and makes no system call. Before, every
 * enqueue meanwhile counted one: a graph's 16 replays launched in a row
 * counted 16 wake-ups for the one its executor took. Every change the
 * executor waits for is made under the stream's lock, which the caller
 * holds, and the executor looks again under it before it waits.
 */
static void wake_executor_locked(struct simdev_stream *stream)
{
    if (!stream->executor_asleep)
        return;
    stream->executor_asleep = false;
    sd_note_wakeup(&stream->dev->waits);
    pthread_cond_signal(&stream->work_cond);
}

static void advance_ops(struct simdev_stream *stream, bool on_executor)
{
    struct sd_device *dev = stream->dev;
    for (;;) {
        pthread_mutex_lock(&stream->lock);
        struct sd_op *op = stream->head;
        if (!op) {
            stream->busy = false;
            if (stream->stopping) { /* its teardown waits for the executor */
                wake_executor_locked(stream);
            }
            pthread_mutex_unlock(&stream->lock);
            return;
        }
        int carried = stream->carried_status;
        pthread_mutex_unlock(&stream->lock);

        /* marked by the first thread to take it, before it starts: an op in
         * flight may end, and its stream drain, at once. Written only while
         * a timeline records: the op goes back to the enqueuing thread,
         * which should not have to fetch it from this CPU's cache. */
        if (sd_timeline_on(&dev->timeline) && !op->begun) {
            op->begun = true;
            sd_mark(&dev->timeline, SIMDEV_MARK_OP_BEGIN, (uint32_t)op->type, stream, 0, 0);
        }
        int after = 0;
        /* With streams let go on this thread, the executor first starts
         * the op as any thread would (an attempt that would block does
         * nothing); only an op that would block lets them go on first:
         * never wait with a stream let go and not yet run. Before, they
         * went on before every op here, and a round's core loop, let go
         * by the record before the program, was handed out before it
         * (docs/device.md, "Cores started on demand"). Nor with wake-ups
         * put off (advance): an op that may block runs with none. */
        enum start_result started = on_executor && !tl_released
                                        ? start_op_blocking(stream, op, carried, &after)
                                        : start_op(stream, op, carried, false, &after);
        if (started == OP_FOR_EXECUTOR && on_executor) {
            tl_frames--;
            run_released();
            tl_frames++;
            started = start_op_blocking(stream, op, carried, &after);
        }
        switch (started) {
        case OP_PENDING:
            return;
        case OP_FOR_EXECUTOR:
            pthread_mutex_lock(&stream->lock);
            stream->busy = false;
            sd_count_wait(&dev->waits.handoffs, 1);
            wake_executor_locked(stream);
            pthread_mutex_unlock(&stream->lock);
            return;
        case OP_RAN:
            finish_op(stream, op, after);
            break;
        }
    }
}

void sd_stream_post_work(struct simdev_stream *stream, struct sd_work *work)
{
    work->next = NULL;
    pthread_mutex_lock(&stream->lock);
    if (stream->work_tail)
        stream->work_tail->next = work;
    else
        stream->work_head = work;
    stream->work_tail = work;
    sd_count_wait(&stream->dev->waits.handoffs, 1);
    wake_executor_locked(stream);
    pthread_mutex_unlock(&stream->lock);
}

void sd_stream_op_done(struct simdev_stream *stream, struct sd_op *op, int status)
{
    finish_op(stream, op, status);
    advance(stream, false);
}

void sd_stream_wait_done(struct simdev_stream *stream, int status)
{
    /* The stream is busy with its wait: this thread has it now. */
    stream->released_status = status;
    stream->next_waiting = NULL;
    if (tl_released_tail)
        tl_released_tail->next_waiting = stream;
    else
        tl_released = stream;
    tl_released_tail = stream;
    run_released();
}

static void *executor_main(void *arg)
{
    struct simdev_stream *stream = arg;
    (void)pthread_setname_np(pthread_self(), "simdev stream"); /* for profilers */
    struct sd_device *dev = stream->dev;
    pthread_mutex_lock(&stream->lock);
    for (;;) {
        /* until there is work, the head is free to take, or the stream
         * stops drained */
        while (!stream->work_head && !(stream->head && !stream->busy) &&
               !(stream->stopping && !stream->head && !stream->busy)) {
            sd_note_park(&dev->waits);
            stream->executor_asleep = true;
            pthread_cond_wait(&stream->work_cond, &stream->lock);
            stream->executor_asleep = false;
            sd_note_unpark(&dev->waits);
        }
        if (stream->work_head) {
            struct sd_work *work = stream->work_head;
            stream->work_head = work->next;
            if (!stream->work_head)
                stream->work_tail = NULL;
            pthread_mutex_unlock(&stream->lock);
            work->run(work);
            pthread_mutex_lock(&stream->lock);
            continue;
        }
        if (!stream->head)
            break; /* stopping and drained */
        stream->busy = true;
        pthread_mutex_unlock(&stream->lock);
        advance(stream, true);
        pthread_mutex_lock(&stream->lock);
    }
    pthread_mutex_unlock(&stream->lock);
    return NULL;
}

static enum simdev_op_kind op_kind(enum sd_op_type type)
{
    switch (type) {
    case SD_OP_RECORD:
        return SIMDEV_OP_RECORD;
    case SD_OP_WAIT:
        return SIMDEV_OP_WAIT;
    case SD_OP_COPY:
    case SD_OP_MEMSET:
        return SIMDEV_OP_COPY;
    case SD_OP_GRAPH:
        return SIMDEV_OP_GRAPH_LAUNCH;
    case SD_OP_SEM_ACQUIRE:
    case SD_OP_SEM_RELEASE:
        return SIMDEV_OP_SEM;
    default:
        return SIMDEV_OP_LAUNCH;
    }
}

/*
 * Starts wait op `op`, the head of idle `stream`, from the enqueueing
 * thread: registers the stream on the record it waits for, so that the
 * record's completion goes on with it without waking the executor. True
 * when it did (the stream is busy now); false when the record is complete
 * or there is none (the executor runs the op). Bookkeeping only, no device
 * work: start_op's wait with the same carried status. Caller holds the
 * stream's lock (taken before the record's lock, never after it).
 */
static bool wait_registered_locked(struct simdev_stream *stream, struct sd_op *op)
{
    if (op->type != SD_OP_WAIT || !op->u.record)
        return false;
    struct sd_device *dev = stream->dev;
    int status;
    stream->wait_carried = start_status(dev, op, stream->carried_status);
    if (!sd_record_wait_async(op->u.record, stream, &status))
        return false;
    /* the record's completion finishes this op only once we unlock */
    stream->busy = true;
    op->begun = true;
    sd_mark(&dev->timeline, SIMDEV_MARK_OP_BEGIN, SIMDEV_MARK_WAIT, stream, 0, 0);
    return true;
}

/* Queues `op` (its exec fault drawn). True when the stream was idle and
 * its executor must take it (sd_stream_wake_locked). Caller holds the
 * stream's lock, the stream not capturing. */
static bool queue_locked(struct simdev_stream *stream, struct sd_op *op)
{
    op->exec_fault = sd_fault_exec_take(stream->dev, op_kind(op->type));
    if (stream->tail)
        stream->tail->next = op;
    else
        stream->head = op;
    stream->tail = op;
    stream->enqueued++;
    /* A busy stream's runner takes the op when it gets there; an idle
     * stream whose op waits for a record not complete yet waits for it
     * from here on, and whoever completes the record runs the stream. */
    return !stream->busy && !(op == stream->head && wait_registered_locked(stream, op));
}

/* ------------------------------------------------------- started here */

/*
 * Streams this thread holds to start itself (simdev_start_here_begin):
 * an idle stream that one of its batches would hand to the executor is
 * held instead — marked busy, so that no executor takes it — and the
 * outermost simdev_start_here_end runs the held streams here, in the
 * order they were held, as far as their ops run without blocking; an op
 * that would block goes to the executor then, as from any thread that
 * runs a stream ("Who runs a stream's ops", above). A launch chain
 * enqueued this way starts on the launching thread: no executor wakes
 * to run its first records and brief jobs, and its streams go on in the
 * order the chain needs (the AICPU program's hand-out before the core
 * loop's), not the order its batches were enqueued in. A device thread
 * holds nothing: it must not run another stream's work where its own
 * caller does not expect it.
 */
#define SD_HELD_MAX 8
static _Thread_local unsigned tl_hold_depth;
static _Thread_local unsigned tl_held_count;
static _Thread_local struct simdev_stream *tl_held[SD_HELD_MAX];

void simdev_start_here_begin(void)
{
    tl_hold_depth++;
}

void simdev_start_here_end(void)
{
    if (tl_hold_depth == 0 || --tl_hold_depth > 0)
        return;
    sd_stream_start_held();
}

void sd_stream_start_held(void)
{
    if (!tl_held_count)
        return;
    /* Starting a stream enqueues nothing, so no stream is held meanwhile.
     * The launches started here wake their threads once all have gone
     * out (launch.h, sd_launch_defer_begin): a round's core loop goes out
     * held, behind its program, before the program's threads can take
     * this thread's CPU. */
    sd_launch_defer_begin();
    for (unsigned i = 0; i < tl_held_count; i++)
        advance(tl_held[i], false);
    tl_held_count = 0;
    sd_launch_defer_end();
}

/* Whether the calling thread runs a stream or device work: a device
 * thread, or one inside a stream's frame (a host callback's). The streams
 * a record lets go there wait for the frame's end (run_released), so such
 * a thread neither holds a stream (a held stream run at its end would let
 * them go onto it) nor runs a program a sync of it takes; a sync in a
 * host callback waits for them. */
static bool runs_a_stream(void)
{
    return sd_tl_self || tl_frames || tl_draining;
}

void sd_stream_wake_locked(struct simdev_stream *stream)
{
    if (tl_hold_depth && !runs_a_stream() && tl_held_count < SD_HELD_MAX) {
        stream->busy = true; /* this thread's now: no executor takes it */
        tl_held[tl_held_count++] = stream;
        return;
    }
    sd_count_wait(&stream->dev->waits.handoffs, 1);
    wake_executor_locked(stream);
}

bool sd_stream_capturing_locked(struct simdev_stream *stream)
{
    return atomic_load_explicit(&stream->capture, memory_order_relaxed) != NULL;
}

int sd_stream_enqueue(struct simdev_stream *stream, struct sd_op *op)
{
    op->next = NULL;
    pthread_mutex_lock(&stream->lock);
    if (sd_stream_capturing_locked(stream)) {
        pthread_mutex_unlock(&stream->lock);
        return 1;
    }
    if (queue_locked(stream, op))
        sd_stream_wake_locked(stream);
    pthread_mutex_unlock(&stream->lock);
    return 0;
}

int sd_stream_queue_new_locked(struct simdev_stream *stream, const struct sd_op *proto,
                               const void *args, size_t args_size, bool *wake)
{
    struct sd_op *op = sd_op_cache_take(&stream->op_cache, proto, args, args_size);
    if (!op)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    if (queue_locked(stream, op))
        *wake = true;
    return 0;
}

int sd_stream_submit(struct simdev_stream *stream, struct sd_op *op)
{
    for (;;) {
        int status;
        if (sd_capture_submit(stream, op, &status))
            return status;
        if (sd_stream_enqueue(stream, op) == 0)
            return 0;
        /* A capture began between the two checks: record the op instead. */
    }
}

/* ------------------------------------------------------------ create/destroy */

int simdev_stream_create(simdev_stream_t *out)
{
    if (!out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev;
    void *object;
    int rc = sd_object_new(SIMDEV_OP_STREAM_CREATE, sizeof(struct simdev_stream), &dev, &object);
    if (rc != 0)
        return rc;
    struct simdev_stream *stream = object;
    stream->dev = dev;
    sd_mutex_init(&stream->lock);
    pthread_cond_init(&stream->work_cond, NULL);
    pthread_cond_init(&stream->idle_cond, NULL);
    if (sd_thread_create(&stream->executor, executor_main, stream) != 0) {
        pthread_cond_destroy(&stream->idle_cond);
        pthread_cond_destroy(&stream->work_cond);
        pthread_mutex_destroy(&stream->lock);
        free(stream);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    pthread_mutex_lock(&dev->lock);
    stream->next_in_device = dev->streams;
    dev->streams = stream;
    pthread_mutex_unlock(&dev->lock);
    sd_count(dev, SIMDEV_OP_STREAM_CREATE);
    *out = stream;
    return 0;
}

void sd_stream_teardown(struct simdev_stream *stream)
{
    pthread_mutex_lock(&stream->lock);
    stream->stopping = true;
    pthread_cond_signal(&stream->work_cond);
    pthread_mutex_unlock(&stream->lock);
    pthread_join(stream->executor, NULL);
    sd_op_cache_drain(&stream->op_cache);
    free(stream->capture_tail);
    pthread_cond_destroy(&stream->idle_cond);
    pthread_cond_destroy(&stream->work_cond);
    pthread_mutex_destroy(&stream->lock);
    free(stream);
}

int simdev_stream_destroy(simdev_stream_t stream)
{
    if (!stream)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev = stream->dev;
    if (atomic_load_explicit(&stream->capture, memory_order_acquire))
        return PTO_RUNTIME_ERR_INVALID_STATE;
    sd_stream_start_held(); /* the teardown may wait for a stream this thread holds */
    int rc = sd_fault_check(dev, SIMDEV_OP_STREAM_DESTROY);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&dev->lock);
    SD_LIST_REMOVE(&dev->streams, stream, struct simdev_stream, next_in_device);
    pthread_mutex_unlock(&dev->lock);
    sd_stream_teardown(stream); /* drains pending work first */
    sd_count(dev, SIMDEV_OP_STREAM_DESTROY);
    return 0;
}

/* ------------------------------------------------------------ sync/query */

/* Waits until the ops enqueued before the call completed; returns the
 * carried status and clears it. */
struct drain_wait {
    struct simdev_stream *stream;
    uint64_t target;
};

static bool drained(void *arg)
{
    const struct drain_wait *w = arg;
    /* acquire: pairs with the release in finish_op */
    return atomic_load_explicit(&w->stream->completed_seen, memory_order_acquire) >= w->target;
}

/* The ops the stream completed so far: a sync that sees them grow stays
 * awake (sd_spin_in_room). */
static uint64_t drain_progress(void *arg)
{
    const struct drain_wait *w = arg;
    return atomic_load_explicit(&w->stream->completed_seen, memory_order_relaxed);
}

/*
 * A sync runs the program it waits for (launch.h,
 * sd_launch_run_unstarted_program): when the stream's head waits for a
 * record another stream completes, and that stream's round program was
 * handed to a device thread that has not begun it, this thread takes it
 * and runs it, and goes on with that stream and this one as the device
 * thread would have. An isolated round's program otherwise waits 40-70 us
 * for its parked thread to run again, and its sync for a second wake-up
 * after it. True when it ran one. Caller holds nothing.
 */
static bool sync_runs_program(struct simdev_stream *stream)
{
    struct sd_device *dev = stream->dev;
    /* Never from a thread that runs a stream (runs_a_stream). Never on a
     * device with a watchdog: a sync running a program that hangs could
     * not return DEVICE_LOST when the watchdog loses the device. */
    if (runs_a_stream() || dev->config.watchdog_ms ||
        !sd_launch_aicpu_job_unbegun(dev))
        return false;
    pthread_mutex_lock(&stream->lock);
    /* the head op and its record stay while the lock is held: its end
     * takes the lock to pop it (finish_op) */
    const struct sd_op *head = stream->head;
    struct sd_event_record *record = NULL;
    if (head && head->type == SD_OP_WAIT && head->u.record && head->u.record->stream &&
        !atomic_load_explicit(&head->u.record->done, memory_order_acquire)) {
        record = head->u.record;
        sd_record_ref(record); /* its done flag is looked at after the lock */
    }
    pthread_mutex_unlock(&stream->lock);
    if (!record)
        return false;
    bool ran = sd_launch_run_unstarted_program(dev, record->stream, &record->done);
    sd_record_unref(record);
    return ran;
}

static int stream_drain(struct simdev_stream *stream)
{
    sd_stream_start_held(); /* never wait for a stream this thread holds */
    pthread_mutex_lock(&stream->lock);
    uint64_t target = stream->enqueued;
    struct sd_device *dev = stream->dev;
    struct sd_wait_counters *counters = &dev->waits;
    if (stream->completed < target) {
        sd_count_wait(&counters->handoffs, 1);
        /* The caller waits awake while the device leaves it a CPU (a
         * round on one device thread): its wake-up would cost more than
         * the round (device_config.h, SD_ROOM_SPIN_NS). */
        pthread_mutex_unlock(&stream->lock);
        struct drain_wait w = {stream, target};
        /* Before it spins and again before it sleeps: the program may be
         * handed out meanwhile. */
        if (!drained(&w))
            (void)sync_runs_program(stream);
        if (!sd_spin_in_room(&dev->budget, false, drained, drain_progress, &w,
                             sd_spin_ns(dev, SD_WAIT_ROOM)))
            (void)sync_runs_program(stream);
        pthread_mutex_lock(&stream->lock);
    }
    while (stream->completed < target) {
        sd_note_park(counters);
        if (!stream->drain_sleepers || target < stream->drain_wake_at)
            stream->drain_wake_at = target;
        stream->drain_sleepers++;
        pthread_cond_wait(&stream->idle_cond, &stream->lock);
        stream->drain_sleepers--;
        sd_note_unpark(counters);
    }
    int status = stream->carried_status;
    stream->carried_status = 0;
    pthread_mutex_unlock(&stream->lock);
    return status;
}

/* The checks shared by stream and device sync: a capturing stream can't be
 * synchronized, nor anything from a strict capturing thread. */
static int sync_allowed(struct simdev_stream *stream)
{
    int rc = stream ? sd_capture_forbid_on_stream(stream) : 0;
    if (rc == 0)
        rc = sd_capture_check_sync();
    return rc;
}

int simdev_stream_sync(simdev_stream_t stream)
{
    if (!stream)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev = stream->dev;
    int rc = sync_allowed(stream);
    if (rc != 0)
        return rc;
    rc = sd_fault_check(dev, SIMDEV_OP_SYNC);
    if (rc != 0)
        return rc;
    int status = stream_drain(stream);
    sd_mark(&dev->timeline, SIMDEV_MARK_SYNC_END, 0, stream, 0, 0);
    sd_count(dev, SIMDEV_OP_SYNC);
    return sd_device_lost(dev) ? PTO_RUNTIME_ERR_DEVICE_LOST : status;
}

int simdev_stream_query(simdev_stream_t stream)
{
    if (!stream)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    int rc = sd_capture_forbid_on_stream(stream);
    if (rc != 0)
        return rc;
    if (sd_device_lost(stream->dev))
        return PTO_RUNTIME_ERR_DEVICE_LOST;
    pthread_mutex_lock(&stream->lock);
    int status = stream->completed < stream->enqueued ? PTO_RUNTIME_ERR_NOT_READY
                                                      : stream->carried_status;
    pthread_mutex_unlock(&stream->lock);
    return status;
}

int simdev_device_sync(void)
{
    struct sd_device *dev;
    int rc = sd_device_current(&dev);
    if (rc != 0)
        return rc;
    rc = sync_allowed(NULL);
    if (rc != 0)
        return rc;
    rc = sd_fault_check(dev, SIMDEV_OP_SYNC);
    if (rc != 0)
        return rc;
    /* Snapshot the streams under the device lock; a stream destroyed while
     * we drain would be the caller's own race, as with any device sync. */
    pthread_mutex_lock(&dev->lock);
    size_t count = 0;
    for (struct simdev_stream *s = dev->streams; s; s = s->next_in_device)
        count++;
    struct simdev_stream **list = count ? sd_malloc(count * sizeof(*list)) : NULL;
    if (count && !list) {
        pthread_mutex_unlock(&dev->lock);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    size_t n = 0;
    for (struct simdev_stream *s = dev->streams; s; s = s->next_in_device)
        if (!atomic_load_explicit(&s->capture, memory_order_acquire))
            list[n++] = s;
    pthread_mutex_unlock(&dev->lock);
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        int status = stream_drain(list[i]);
        if (first == 0)
            first = status;
    }
    free(list);
    sd_count(dev, SIMDEV_OP_SYNC);
    return sd_device_lost(dev) ? PTO_RUNTIME_ERR_DEVICE_LOST : first;
}
