/*
 * simdev/op.h — one stream operation, as queued and as replayed (op.c).
 *
 * Owns: the op representation (launch, copy, memset, host callback,
 * record, wait, graph launch, semaphore), its allocation, copies and
 * reuse (an op cache), and the one rule by which an op runs after its
 * predecessor's status. Must not know queues: streams (stream.c) and graph
 * lanes (graph.c) order the ops, and guard their caches.
 */
#ifndef SIMDEV_OP_H
#define SIMDEV_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simpler/device.h"

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

struct sd_device;
struct sd_event_record;
struct sd_graph_params;
struct simdev_graph_exec;

/* One stream operation. Launch argument bytes are stored inline after it. */
struct sd_op {
    struct sd_op *next;
    enum sd_op_type type;
    union {
        struct {
            simdev_aicpu_fn fn;
            uint32_t thread_count;
            bool brief; /* SIMDEV_BATCH_AICPU_BRIEF: may run on the starting thread */
            bool lead;  /* SIMDEV_BATCH_AICPU_LEAD: the others start on demand */
        } aicpu;
        struct {
            simdev_aicore_fn fn;
            bool on_demand; /* SIMDEV_BATCH_AICORE_ON_DEMAND: cores started on demand */
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
        struct {
            struct simdev_graph_exec *exec;
            struct sd_graph_params *params; /* the launch arguments as the launch found them */
        } graph;
        simdev_sem_t sem;
    } u;
    int exec_fault; /* test-only: nonzero = fail with this code when executed */
    bool handoff;   /* RECORD: the stream's error goes to the event, the stream is clean after */
    bool begun;     /* its timeline's begin mark is made (by the first thread to take it) */
    uint8_t cached; /* from an op cache: SD_OP_SMALL (room for SD_OP_CACHED_ARGS argument
                     * bytes) or SD_OP_LARGE (SD_OP_LARGE_ARGS); 0: allocated to size */
    size_t args_size;
    unsigned char args[];
};

/* Allocates an op with room for args_size argument bytes, copied from args. */
struct sd_op *sd_op_new(enum sd_op_type type, const void *args, size_t args_size);
/* A deep copy of a launch/copy/memset/host op (graph instantiation). */
struct sd_op *sd_op_clone(const struct sd_op *op);
/* Frees an op and drops the references it holds. */
void sd_op_free(struct sd_op *op);

/*
 * Ops kept for reuse, so that an enqueue allocates nothing once its stream
 * has run ops before (docs/device.md, "What an enqueue costs"). Its owner
 * guards it (a stream: its lock). Two sizes: a small op has room for
 * SD_OP_CACHED_ARGS argument bytes, enough for every op of a kernel-mode
 * round but its program; a large one for SD_OP_LARGE_ARGS, enough for a
 * round's program (its envelope and a packet of a dozen tensors) and a
 * host_build_graph round's staged image of a few tasks. A larger op is
 * allocated to size and freed when it ends.
 */
#define SD_OP_CACHED_ARGS 256u
#define SD_OP_LARGE_ARGS 2048u
#define SD_OP_SMALL 1u
#define SD_OP_LARGE 2u
#ifndef SD_OP_CACHE_MAX
#define SD_OP_CACHE_MAX 512u /* small ops kept at most: a burst of rounds (32 of 15 ops) */
#endif
#ifndef SD_OP_LARGE_MAX
#define SD_OP_LARGE_MAX 64u /* large ops kept at most: a burst of 32 rounds' two */
#endif
/* Kept ops are a stack of pointers, not a list through the ops: an op
 * comes back on the thread that ran it, so it is usually in another
 * CPU's cache when an enqueue takes it. A list would make each take wait
 * for that line before it knows the next op; with the pointers here, an
 * enqueue knows every op it will take at once and fetches their lines
 * together (sd_op_cache_prefetch). */
struct sd_op_cache {
    uint32_t count;       /* small ops in free[0..count) */
    uint32_t large_count; /* large ops in large[0..large_count) */
    struct sd_op *free[SD_OP_CACHE_MAX];
    struct sd_op *large[SD_OP_LARGE_MAX];
};

/* Starts fetching, for writing, the ops the next `ops` takes of small ops
 * from `cache` would return, and the next large one: a hint, no effect
 * on what is taken. Caller guards `cache`. */
void sd_op_cache_prefetch(const struct sd_op_cache *cache, size_t ops);
/* An op with `proto`'s fields (next, cached, args_size ignored) and
 * args_size argument bytes copied from `args`: from `cache` when they fit
 * and it has one, else allocated. One host allocation point either way
 * (sd_host_fault: a test fails it whether or not the cache has an op), so
 * the points a call has do not depend on what ran before it. NULL when it
 * fails. Caller guards `cache`. */
struct sd_op *sd_op_cache_take(struct sd_op_cache *cache, const struct sd_op *proto,
                               const void *args, size_t args_size);
/* The references an ended op holds (sd_op_refs_drop drops them), so that
 * the op itself can go back to a cache at once: after this the op is only
 * freed or kept, never run again. */
struct sd_op_refs {
    enum sd_op_type type;
    struct sd_event_record *record;
    struct simdev_graph_exec *exec;
    struct sd_graph_params *params;
};
struct sd_op_refs sd_op_refs_take(const struct sd_op *op);
void sd_op_refs_drop(struct sd_op_refs refs);
/* Keeps the ended op `op` (its references taken) in `cache`: true. False
 * when it is not a cached op or the cache is full: the caller frees it
 * (free(), its references being gone). Caller guards `cache`. */
bool sd_op_cache_put(struct sd_op_cache *cache, struct sd_op *op);
/* Frees every op the cache keeps (its owner's teardown). */
void sd_op_cache_drain(struct sd_op_cache *cache);

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

/* The largest copy or memset a thread other than a stream's executor runs
 * (docs/device.md, "Who runs a stream's ops"). */
#define SD_INLINE_COPY_BYTES (64u << 10)

/* What sd_op_try_run did. */
enum sd_try_run {
    SD_RAN,         /* done: *status holds the status after it */
    SD_PENDING,     /* a launch in flight: done(ctx, tag, status) ends it */
    SD_WOULD_BLOCK, /* nothing done: it runs where a thread may block */
};

/* What ends a launch started without waiting (launch.h). */
typedef void (*sd_launch_done_fn)(void *ctx, uintptr_t tag, int status);

/*
 * Runs a launch, copy, memset, host or semaphore op after `carried` (the
 * rule of sd_op_run_after) only as far as it runs without blocking: a
 * launch whose threads are free at once is started (SD_PENDING), an
 * acquire that holds at once, a release, a copy or memset of at most
 * SD_INLINE_COPY_BYTES, and any op skipped for `carried`, run (SD_RAN);
 * the rest is SD_WOULD_BLOCK. The one rule of stream ops and replay nodes
 * run by a thread that is not their executor.
 */
enum sd_try_run sd_op_try_run(struct sd_device *dev, const struct sd_op *op, int carried,
                              sd_launch_done_fn done, void *ctx, uintptr_t tag, int *status);

/* A device function's or host callback's return as an op status: 0 and
 * negative codes pass through; a positive return (outside the contract) is
 * reported as PTO_RUNTIME_ERR_INTERNAL so it still fails the stream. */
static inline int sd_status_from_return(int value)
{
    return value > 0 ? PTO_RUNTIME_ERR_INTERNAL : value;
}

#endif /* SIMDEV_OP_H */
