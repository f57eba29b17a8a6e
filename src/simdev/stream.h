/*
 * simdev/stream.h — streams: FIFO op queues run asynchronously to the host
 * (stream.c).
 *
 * Owns: the layout of a stream (its queue, executor thread, carried error
 * and capture lane) and the two ways an op gets onto it. Must not decide
 * capture: capture.c does, through the stream's capture fields.
 */
#ifndef SIMDEV_STREAM_H
#define SIMDEV_STREAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simdev/op.h"

struct sd_capture;
struct sd_device;
struct sd_op;

/* Work a stream's executor runs for another part of simdev, on its own
 * thread, where it may block (a replay's node that cannot run at once). */
struct sd_work {
    struct sd_work *next;
    void (*run)(struct sd_work *work);
};

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
    /* completed, published for a sync that spins (stream_drain) */
    _Atomic uint64_t completed_seen;
    int carried_status; /* error the stream carries; skips later ops */
    bool stopping;
    bool executor_asleep;    /* in its wait for work and not signalled since (stream.c,
                              * wake_executor_locked) */
    /* An op at the head is being run, or is in flight (a launch's job, a
     * wait registered on its record): whoever ends it goes on with the
     * stream; the executor takes the stream only when it is not busy. */
    bool busy;
    int wait_carried;    /* the carried status when the head wait was registered */
    int released_status; /* the status of the record that let it go */
    struct simdev_stream *next_waiting; /* in a record's list of waiting streams */
    struct sd_work *work_head, *work_tail; /* sd_stream_post_work's, in order */
    uint32_t drain_sleepers; /* syncs asleep in their wait for progress */
    uint64_t drain_wake_at;  /* the nearest of their targets (completed count) */
    struct sd_op_cache op_cache; /* its ended ops, for its next enqueues */

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
/* Whether the stream captures. Caller holds its lock: begin_capture
 * publishes a capture under it, so an op is either queued before the
 * capture began or recorded into it, never queued after it. */
bool sd_stream_capturing_locked(struct simdev_stream *stream);
/* Queues an op made from `proto` and `args` (sd_op_cache_take: from the
 * stream's op cache): 0, taking the references `proto` holds, with *wake
 * set when the executor must take the stream; OUT_OF_HOST_MEMORY, taking
 * and changing nothing. Caller holds the lock, the stream not capturing. */
int sd_stream_queue_new_locked(struct simdev_stream *stream, const struct sd_op *proto,
                               const void *args, size_t args_size, bool *wake);
/* Hands the idle stream to its executor (counted), or, inside this host
 * thread's simdev_start_here_begin/end, holds it for this thread to start
 * at the end. Caller holds the lock. */
void sd_stream_wake_locked(struct simdev_stream *stream);
/* Starts the streams this thread holds (simdev_start_here_begin), now: the
 * outermost simdev_start_here_end, and every simdev call of this thread
 * that may wait for a stream, so that it never waits for one it holds. */
void sd_stream_start_held(void);
/* Ends the stream's head op, which was in flight (a launch's job ended
 * with `status`), and goes on with the stream on the calling thread as far
 * as its ops run without blocking. */
void sd_stream_op_done(struct simdev_stream *stream, struct sd_op *op, int status);
/* Ends the stream's head wait op, registered on a record that completed
 * with `status`, and goes on with the stream on the calling thread: at
 * once, or, when the thread is running a stream already, once that stream
 * has gone as far as it goes. */
void sd_stream_wait_done(struct simdev_stream *stream, int status);
/* Queues `work` for the stream's executor, which runs it before its next
 * op (the stream is busy with the op `work` belongs to). */
void sd_stream_post_work(struct simdev_stream *stream, struct sd_work *work);
/* Destroys a stream during device reset (no capture check). */
void sd_stream_teardown(struct simdev_stream *stream);

#endif /* SIMDEV_STREAM_H */
