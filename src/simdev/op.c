/*
 * simdev/op.c — stream operations: allocation, copies, and running one.
 *
 * Owns: the life of an op (op.h) and the dispatch of a launch, copy,
 * memset, host or semaphore op to what runs it. Must not touch a stream's
 * queue or its carried error: the executor (stream.c) and graph replay
 * (graph.c) call sd_op_run_after with theirs.
 */
#include <stdlib.h>
#include <string.h>

#include "simdev/device.h"
#include "simdev/event.h"
#include "simdev/fault.h"
#include "simdev/graph.h"
#include "simdev/launch.h"
#include "simdev/op.h"
#include "simdev/sem.h"

struct sd_op *sd_op_new(enum sd_op_type type, const void *args, size_t args_size)
{
    struct sd_op *op = sd_malloc(sizeof(*op) + args_size);
    if (!op)
        return NULL;
    memset(op, 0, sizeof(*op));
    op->type = type;
    op->args_size = args_size;
    if (args_size)
        memcpy(op->args, args, args_size);
    return op;
}

struct sd_op *sd_op_clone(const struct sd_op *op)
{
    struct sd_op *copy = sd_malloc(sizeof(*op) + op->args_size);
    if (!copy)
        return NULL;
    memcpy(copy, op, sizeof(*op) + op->args_size);
    copy->next = NULL;
    copy->cached = 0; /* allocated to size */
    copy->exec_fault = 0; /* a test's execution fault belongs to the one queued op */
    copy->begun = false;
    return copy;
}

void sd_op_free(struct sd_op *op)
{
    if (!op)
        return;
    sd_op_refs_drop(sd_op_refs_take(op));
    free(op);
}

struct sd_op_refs sd_op_refs_take(const struct sd_op *op)
{
    /* Read, not cleared: the op is freed or goes back to a cache, whose
     * take overwrites it, and an ended op is not written by the thread
     * that ended it (the enqueuing thread takes it next). */
    struct sd_op_refs refs = {.type = op->type};
    if (op->type == SD_OP_RECORD || op->type == SD_OP_WAIT)
        refs.record = op->u.record;
    else if (op->type == SD_OP_GRAPH) {
        refs.exec = op->u.graph.exec;
        refs.params = op->u.graph.params;
    }
    return refs;
}

void sd_op_refs_drop(struct sd_op_refs refs)
{
    if (refs.record)
        sd_record_unref(refs.record);
    if (refs.type == SD_OP_GRAPH && refs.exec)
        sd_graph_exec_unref(refs.exec, refs.params);
}

struct sd_op *sd_op_cache_take(struct sd_op_cache *cache, const struct sd_op *proto,
                               const void *args, size_t args_size)
{
    if (sd_host_fault())
        return NULL;
    struct sd_op *op = NULL;
    uint8_t size = args_size <= SD_OP_CACHED_ARGS  ? SD_OP_SMALL
                   : args_size <= SD_OP_LARGE_ARGS ? SD_OP_LARGE
                                                   : 0;
    if (size == SD_OP_SMALL && cache->count)
        op = cache->free[--cache->count];
    else if (size == SD_OP_LARGE && cache->large_count)
        op = cache->large[--cache->large_count];
    else {
        op = malloc(sizeof(*op) + (size == SD_OP_SMALL   ? SD_OP_CACHED_ARGS
                                   : size == SD_OP_LARGE ? SD_OP_LARGE_ARGS
                                                         : args_size));
        if (!op)
            return NULL;
    }
    *op = *proto;
    op->next = NULL;
    op->cached = size;
    op->args_size = args_size;
    if (args_size)
        memcpy(op->args, args, args_size);
    return op;
}

void sd_op_cache_prefetch(const struct sd_op_cache *cache, size_t ops)
{
    size_t n = ops < cache->count ? ops : cache->count;
    /* the op and its first argument bytes: what a take writes */
    for (size_t i = 1; i <= n; i++) {
        __builtin_prefetch(cache->free[cache->count - i], 1);
        __builtin_prefetch((const char *)cache->free[cache->count - i] + 64, 1);
    }
    if (cache->large_count)
        __builtin_prefetch(cache->large[cache->large_count - 1], 1);
}

bool sd_op_cache_put(struct sd_op_cache *cache, struct sd_op *op)
{
    if (op->cached == SD_OP_LARGE && cache->large_count < SD_OP_LARGE_MAX) {
        cache->large[cache->large_count++] = op;
        return true;
    }
    if (op->cached != SD_OP_SMALL || cache->count >= SD_OP_CACHE_MAX)
        return false;
    cache->free[cache->count++] = op;
    return true;
}

void sd_op_cache_drain(struct sd_op_cache *cache)
{
    while (cache->count)
        free(cache->free[--cache->count]);
    while (cache->large_count)
        free(cache->large[--cache->large_count]);
}

int sd_op_run(struct sd_device *dev, struct sd_op *op)
{
    if (sd_device_lost(dev))
        return PTO_RUNTIME_ERR_DEVICE_LOST;
    switch (op->type) {
    case SD_OP_AICPU:
    case SD_OP_AICORE:
        return sd_launch_run(dev, op);
    case SD_OP_COPY:
        /* a staged copy (no source) copies the bytes it keeps */
        memmove(op->u.copy.dst, op->u.copy.src ? op->u.copy.src : (const void *)op->args,
                op->u.copy.bytes);
        return 0;
    case SD_OP_MEMSET:
        memset(op->u.memset.dst, op->u.memset.value, op->u.memset.bytes);
        return 0;
    case SD_OP_HOST_FN:
        return sd_status_from_return(op->u.host.fn(op->u.host.user_data));
    case SD_OP_SEM_ACQUIRE:
    case SD_OP_SEM_RELEASE:
        return sd_sem_run(dev, op);
    default:
        return PTO_RUNTIME_ERR_INTERNAL;
    }
}

enum sd_try_run sd_op_try_run(struct sd_device *dev, const struct sd_op *op, int carried,
                              sd_launch_done_fn done, void *ctx, uintptr_t tag, int *status)
{
    size_t bytes = 0;
    switch (op->type) {
    case SD_OP_AICPU:
    case SD_OP_AICORE: {
        if (carried) {
            *status = carried;
            return SD_RAN;
        }
        if (op->type == SD_OP_AICPU && op->u.aicpu.brief) {
            int here = sd_launch_run_here(dev, op); /* no hand-off */
            if (here != SD_LAUNCH_BUSY) {
                *status = here;
                return SD_RAN;
            }
        }
        int rc = sd_launch_start(dev, op, done, ctx, tag);
        if (rc == SD_LAUNCH_BUSY)
            return SD_WOULD_BLOCK;
        *status = rc;
        return rc == 0 ? SD_PENDING : SD_RAN;
    }
    case SD_OP_SEM_ACQUIRE: {
        int own;
        if (!sd_sem_try_acquire(dev, op, &own))
            return SD_WOULD_BLOCK;
        *status = carried ? carried : own; /* synchronisation: runs after a failure too */
        return SD_RAN;
    }
    case SD_OP_COPY:
        bytes = op->u.copy.bytes;
        break;
    case SD_OP_MEMSET:
        bytes = op->u.memset.bytes;
        break;
    case SD_OP_SEM_RELEASE:
        break;
    default: /* a host callback may block */
        bytes = SIZE_MAX;
        break;
    }
    if (!carried && bytes > SD_INLINE_COPY_BYTES)
        return SD_WOULD_BLOCK;
    *status = sd_op_run_after(dev, (struct sd_op *)op, carried);
    return SD_RAN;
}

int sd_op_run_after(struct sd_device *dev, struct sd_op *op, int carried)
{
    if (op->type == SD_OP_SEM_ACQUIRE || op->type == SD_OP_SEM_RELEASE) {
        int own = sd_sem_run(dev, op);
        return carried ? carried : own;
    }
    return carried ? carried : sd_op_run(dev, op);
}
