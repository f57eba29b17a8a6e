/*
 * simdev/enqueue.c — every way the host puts an op on a stream: the
 * single-op calls (launches, copies, memsets, host callbacks, semaphore
 * ops, records, waits) and batches of them.
 *
 * Owns: each op's checks in their order (arguments, the device, its armed
 * fault), the op made and queued under the stream's lock — a batch takes
 * the lock once for many ops — or recorded into the stream's capture, and
 * its count. A single-op call is a batch of one: both take one path.
 * Must not run ops (stream.c does), nor decide what a capture records
 * (capture.c does). Graph launches are graph.c's.
 */
#include <stdlib.h>

#include "simdev/capture.h"
#include "simdev/device.h"
#include "simdev/event.h"
#include "simdev/fault.h"
#include "simdev/memory.h"
#include "simdev/op.h"
#include "simdev/stream.h"

/* Ops queued under one acquisition of the stream at most: bounds the
 * records whose replaced predecessors are let go after it. */
#define BATCH_CHUNK 16
_Static_assert(SIMDEV_OP_KIND_COUNT <= 32, "a batch's kinds are bits of a uint32_t");

static enum simdev_op_kind kind_of(enum simdev_batch_kind kind)
{
    switch (kind) {
    case SIMDEV_BATCH_RECORD:
    case SIMDEV_BATCH_RECORD_HANDOFF:
        return SIMDEV_OP_RECORD;
    case SIMDEV_BATCH_WAIT:
        return SIMDEV_OP_WAIT;
    case SIMDEV_BATCH_COPY:
    case SIMDEV_BATCH_MEMSET:
        return SIMDEV_OP_COPY;
    case SIMDEV_BATCH_SEM_ACQUIRE:
    case SIMDEV_BATCH_SEM_RELEASE:
        return SIMDEV_OP_SEM;
    default:
        return SIMDEV_OP_LAUNCH;
    }
}

static bool launch_args_ok(const void *args, size_t args_size)
{
    return args_size <= SIMDEV_MAX_LAUNCH_ARGS && (args_size == 0 || args);
}

/* The op's argument checks, as its single-op call makes them first. */
static int args_check(struct simdev_stream *stream, const struct simdev_batch_op *op)
{
    struct sd_device *dev = stream->dev;
    switch (op->kind) {
    case SIMDEV_BATCH_RECORD:
    case SIMDEV_BATCH_RECORD_HANDOFF:
    case SIMDEV_BATCH_WAIT:
        return op->event && op->event->dev == dev ? 0 : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    case SIMDEV_BATCH_AICPU:
    case SIMDEV_BATCH_AICPU_BRIEF:
    case SIMDEV_BATCH_AICPU_LEAD:
        return op->aicpu_fn && op->thread_count && launch_args_ok(op->args, op->args_size) &&
                       op->thread_count <= dev->config.aicpu_threads &&
                       (op->kind != SIMDEV_BATCH_AICPU_BRIEF || op->thread_count == 1)
                   ? 0
                   : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    case SIMDEV_BATCH_AICORE:
    case SIMDEV_BATCH_AICORE_ON_DEMAND:
        return op->aicore_fn && launch_args_ok(op->args, op->args_size)
                   ? 0
                   : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    case SIMDEV_BATCH_HOST_FN:
        return op->host_fn ? 0 : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    case SIMDEV_BATCH_COPY:
        return sd_memory_check_copy(dev, op->dev_ptr, op->src, op->bytes, op->copy_kind);
    case SIMDEV_BATCH_MEMSET:
        return op->bytes && sd_memory_check_range(dev, op->dev_ptr, op->bytes) == 0
                   ? 0
                   : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    case SIMDEV_BATCH_SEM_ACQUIRE:
    case SIMDEV_BATCH_SEM_RELEASE:
        return op->sem && (int)(op->sem >> 56) == dev->id ? 0 : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    default:
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
}

/* Every check of the op, in its single-op call's order: its arguments,
 * the device, its armed fault (which this consumes). */
static int op_check(struct simdev_stream *stream, const struct simdev_batch_op *op)
{
    int rc = args_check(stream, op);
    if (rc == 0 && sd_device_lost(stream->dev))
        rc = PTO_RUNTIME_ERR_DEVICE_LOST;
    if (rc == 0)
        rc = sd_fault_check(stream->dev, kind_of(op->kind));
    return rc;
}

/* A copy whose host bytes the op keeps (SIMDEV_COPY_HOST_TO_DEVICE_STAGED). */
static bool staged(const struct simdev_batch_op *op)
{
    return op->kind == SIMDEV_BATCH_COPY && op->copy_kind == SIMDEV_COPY_HOST_TO_DEVICE_STAGED;
}

/* The stream op `op` makes, but its argument bytes and its record. */
static struct sd_op op_proto(const struct simdev_batch_op *op)
{
    switch (op->kind) {
    case SIMDEV_BATCH_RECORD:
    case SIMDEV_BATCH_RECORD_HANDOFF:
        return (struct sd_op){.type = SD_OP_RECORD,
                              .handoff = op->kind == SIMDEV_BATCH_RECORD_HANDOFF};
    case SIMDEV_BATCH_WAIT:
        return (struct sd_op){.type = SD_OP_WAIT};
    case SIMDEV_BATCH_AICPU:
    case SIMDEV_BATCH_AICPU_BRIEF:
    case SIMDEV_BATCH_AICPU_LEAD:
        return (struct sd_op){.type = SD_OP_AICPU,
                              .u.aicpu = {op->aicpu_fn, op->thread_count,
                                          op->kind == SIMDEV_BATCH_AICPU_BRIEF,
                                          op->kind == SIMDEV_BATCH_AICPU_LEAD}};
    case SIMDEV_BATCH_AICORE:
    case SIMDEV_BATCH_AICORE_ON_DEMAND:
        return (struct sd_op){.type = SD_OP_AICORE,
                              .u.aicore = {op->aicore_fn,
                                           op->kind == SIMDEV_BATCH_AICORE_ON_DEMAND}};
    case SIMDEV_BATCH_HOST_FN:
        return (struct sd_op){.type = SD_OP_HOST_FN, .u.host = {op->host_fn, op->user_data}};
    case SIMDEV_BATCH_COPY: /* a staged copy's source is the op's own bytes (NULL here) */
        return (struct sd_op){.type = SD_OP_COPY,
                              .u.copy = {op->dev_ptr,
                                         staged(op) ? NULL : op->src, op->bytes}};
    case SIMDEV_BATCH_MEMSET:
        return (struct sd_op){.type = SD_OP_MEMSET,
                              .u.memset = {op->dev_ptr, op->value, op->bytes}};
    case SIMDEV_BATCH_SEM_ACQUIRE:
        return (struct sd_op){.type = SD_OP_SEM_ACQUIRE, .u.sem = op->sem};
    default:
        return (struct sd_op){.type = SD_OP_SEM_RELEASE, .u.sem = op->sem};
    }
}

/* The bytes the op keeps, copied at enqueue: a launch's arguments, a
 * staged copy's source. NULL: none. */
static const void *op_bytes(const struct simdev_batch_op *op, size_t *size)
{
    if (op->kind == SIMDEV_BATCH_AICPU || op->kind == SIMDEV_BATCH_AICPU_BRIEF ||
        op->kind == SIMDEV_BATCH_AICPU_LEAD ||
        op->kind == SIMDEV_BATCH_AICORE || op->kind == SIMDEV_BATCH_AICORE_ON_DEMAND) {
        *size = op->args_size;
        return op->args;
    }
    *size = staged(op) ? op->bytes : 0;
    return staged(op) ? op->src : NULL;
}

/* What queue_locked returns for a wait whose record was made in a
 * capture: the capture's to decide (the stream may join it). */
#define CAPTURE_DECIDES 1

/*
 * Queues the checked op `op` (its host allocation points: a record's
 * record, then the op). A record becomes its event's latest at once, so a
 * later wait of the same batch targets it; the record it replaced goes to
 * *replaced (NULL: none), to be let go once the lock is dropped. 0,
 * OUT_OF_HOST_MEMORY or, for a wait on a capture's record unless
 * `capture_asked` (the capture said it is not its own), CAPTURE_DECIDES;
 * the last two having changed nothing. Caller holds the stream's lock, the
 * stream not capturing.
 */
static int queue_locked(struct simdev_stream *stream, const struct simdev_batch_op *op,
                        bool capture_asked, bool *wake, struct sd_event_record **replaced)
{
    struct sd_op proto = op_proto(op);
    *replaced = NULL;
    if (proto.type == SD_OP_RECORD) {
        struct sd_event_record *record = sd_record_new();
        if (!record)
            return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        proto.u.record = record; /* the op's reference */
        record->stream = stream;
        if (sd_stream_queue_new_locked(stream, &proto, NULL, 0, wake) != 0) {
            sd_record_unref(record);
            return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        }
        /* The event's reference. The op cannot run before the stream's
         * lock is dropped, so this is taken before it can complete. */
        sd_record_ref(record);
        *replaced = sd_event_swap_latest(op->event, record);
        return 0;
    }
    if (proto.type == SD_OP_WAIT) {
        struct sd_event_record *record = sd_event_latest(op->event); /* NULL: a no-op */
        if (record && record->capture && !capture_asked) {
            sd_record_unref(record);
            return CAPTURE_DECIDES;
        }
        proto.u.record = record; /* the op's reference */
        int rc = sd_stream_queue_new_locked(stream, &proto, NULL, 0, wake);
        if (rc != 0 && record)
            sd_record_unref(record);
        return rc;
    }
    size_t size;
    const void *bytes = op_bytes(op, &size);
    return sd_stream_queue_new_locked(stream, &proto, bytes, size, wake);
}

/* The checked op `op` into the capture of `stream` as its single-op call
 * records it: 1 with its status in *status, or 0 when the stream does not
 * capture (any more). */
static int capture_op(struct simdev_stream *stream, const struct simdev_batch_op *op,
                      int *status)
{
    if (op->kind == SIMDEV_BATCH_RECORD || op->kind == SIMDEV_BATCH_RECORD_HANDOFF)
        return sd_capture_record(op->event, stream, status);
    if (op->kind == SIMDEV_BATCH_WAIT) {
        struct sd_event_record *record = sd_event_latest(op->event);
        int handled = sd_capture_wait(stream, record, status);
        if (record)
            sd_record_unref(record);
        return handled;
    }
    /* a node: the op itself, allocated to size (one host allocation point) */
    struct sd_op proto = op_proto(op);
    size_t size;
    const void *bytes = op_bytes(op, &size);
    struct sd_op *node = sd_op_new(proto.type, bytes, size);
    if (!node) {
        *status = PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        return 1;
    }
    node->u = proto.u;
    if (sd_capture_submit(stream, node, status)) {
        if (*status != 0)
            sd_op_free(node);
        return 1;
    }
    sd_op_free(node);
    return 0;
}

/* The checked op `op` on `stream`, which captured when last looked at (or
 * a wait on a capture's record): recorded into the capture, or queued if
 * it is not the capture's after all. */
static int enqueue_captured(struct simdev_stream *stream, const struct simdev_batch_op *op)
{
    for (;;) {
        int status;
        if (capture_op(stream, op, &status))
            return status;
        pthread_mutex_lock(&stream->lock);
        if (!sd_stream_capturing_locked(stream)) {
            bool wake = false;
            struct sd_event_record *replaced;
            status = queue_locked(stream, op, true, &wake, &replaced);
            if (wake)
                sd_stream_wake_locked(stream);
            pthread_mutex_unlock(&stream->lock);
            if (replaced)
                sd_record_unref(replaced);
            return status;
        }
        pthread_mutex_unlock(&stream->lock); /* a capture began again: record it */
    }
}

int simdev_stream_enqueue_batch(simdev_stream_t stream, const struct simdev_batch_op *ops,
                                size_t count, size_t *enqueued)
{
    if (!stream || !enqueued || (count && !ops))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev = stream->dev;
    size_t done = 0;
    int rc = 0;
    sd_host_attempts_defer();
    while (done < count && rc == 0) {
        struct sd_event_record *replaced[BATCH_CHUNK];
        size_t replaced_count = 0;
        size_t chunk_end = count - done > BATCH_CHUNK ? done + BATCH_CHUNK : count;
        bool wake = false, capturing = false, checked = false;
        /* counted once the lock is dropped: performed[k] for each kind k
         * whose bit is in `kinds` (only those are set) */
        uint32_t performed[SIMDEV_OP_KIND_COUNT], kinds = 0;
        pthread_mutex_lock(&stream->lock);
        sd_op_cache_prefetch(&stream->op_cache, chunk_end - done);
        while (done < chunk_end) {
            capturing = sd_stream_capturing_locked(stream);
            if (capturing)
                break;
            rc = op_check(stream, &ops[done]);
            if (rc == 0)
                rc = queue_locked(stream, &ops[done], false, &wake, &replaced[replaced_count]);
            if (rc == CAPTURE_DECIDES) {
                capturing = checked = true;
                rc = 0;
                break;
            }
            if (rc != 0)
                break;
            if (replaced[replaced_count])
                replaced_count++;
            enum simdev_op_kind kind = kind_of(ops[done].kind);
            if (!(kinds & 1u << kind)) {
                kinds |= 1u << kind;
                performed[kind] = 0;
            }
            performed[kind]++;
            done++;
        }
        /* One hand-off for the whole batch: the executor takes the stream
         * once and runs what was queued. */
        if (wake)
            sd_stream_wake_locked(stream);
        pthread_mutex_unlock(&stream->lock);
        for (; kinds; kinds &= kinds - 1) {
            int kind = __builtin_ctz(kinds);
            sd_count_n(dev, (enum simdev_op_kind)kind, performed[kind]);
        }
        for (size_t i = 0; i < replaced_count; i++)
            sd_record_unref(replaced[i]);
        if (capturing) { /* this op as its single-op call records it */
            if (!checked)
                rc = op_check(stream, &ops[done]);
            if (rc == 0)
                rc = enqueue_captured(stream, &ops[done]);
            if (rc == 0) {
                sd_count(dev, kind_of(ops[done].kind));
                done++;
            }
        }
    }
    sd_host_attempts_flush();
    *enqueued = done;
    return rc;
}

/* ------------------------------------------------------ single-op calls */

/* A single-op call: a batch of one. */
static int enqueue_one(simdev_stream_t stream, const struct simdev_batch_op *op)
{
    size_t enqueued;
    return simdev_stream_enqueue_batch(stream, op, 1, &enqueued);
}

int simdev_launch_aicpu(simdev_stream_t stream, simdev_aicpu_fn fn, uint32_t thread_count,
                        const void *args, size_t args_size)
{
    const struct simdev_batch_op op = {.kind = SIMDEV_BATCH_AICPU,
                                       .aicpu_fn = fn,
                                       .thread_count = thread_count,
                                       .args = args,
                                       .args_size = args_size};
    return enqueue_one(stream, &op);
}

int simdev_launch_aicore(simdev_stream_t stream, simdev_aicore_fn fn, const void *args,
                         size_t args_size)
{
    const struct simdev_batch_op op = {
        .kind = SIMDEV_BATCH_AICORE, .aicore_fn = fn, .args = args, .args_size = args_size};
    return enqueue_one(stream, &op);
}

int simdev_launch_host_func(simdev_stream_t stream, simdev_host_fn fn, void *user_data)
{
    const struct simdev_batch_op op = {
        .kind = SIMDEV_BATCH_HOST_FN, .host_fn = fn, .user_data = user_data};
    return enqueue_one(stream, &op);
}

int simdev_memcpy_async(void *dst, const void *src, size_t bytes, enum simdev_copy_kind kind,
                        simdev_stream_t stream)
{
    const struct simdev_batch_op op = {
        .kind = SIMDEV_BATCH_COPY, .dev_ptr = dst, .src = src, .bytes = bytes, .copy_kind = kind};
    return enqueue_one(stream, &op);
}

int simdev_memset_async(void *dev_ptr, int value, size_t bytes, simdev_stream_t stream)
{
    const struct simdev_batch_op op = {
        .kind = SIMDEV_BATCH_MEMSET, .dev_ptr = dev_ptr, .value = value, .bytes = bytes};
    return enqueue_one(stream, &op);
}

int simdev_stream_sem_acquire(simdev_stream_t stream, simdev_sem_t sem)
{
    const struct simdev_batch_op op = {.kind = SIMDEV_BATCH_SEM_ACQUIRE, .sem = sem};
    return enqueue_one(stream, &op);
}

int simdev_stream_sem_release(simdev_stream_t stream, simdev_sem_t sem)
{
    const struct simdev_batch_op op = {.kind = SIMDEV_BATCH_SEM_RELEASE, .sem = sem};
    return enqueue_one(stream, &op);
}

int simdev_event_record(simdev_event_t event, simdev_stream_t stream)
{
    const struct simdev_batch_op op = {.kind = SIMDEV_BATCH_RECORD, .event = event};
    return enqueue_one(stream, &op);
}

int simdev_event_record_handoff(simdev_event_t event, simdev_stream_t stream)
{
    const struct simdev_batch_op op = {.kind = SIMDEV_BATCH_RECORD_HANDOFF, .event = event};
    return enqueue_one(stream, &op);
}

int simdev_stream_wait_event(simdev_stream_t stream, simdev_event_t event)
{
    const struct simdev_batch_op op = {.kind = SIMDEV_BATCH_WAIT, .event = event};
    return enqueue_one(stream, &op);
}
