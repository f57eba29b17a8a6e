/*
 * simdev/capture.c — stream capture: recording ops into a graph.
 *
 * Owns: capture sessions, the per-thread capture mode, the fork/join rules
 * across streams, and the forbidden-operation checks. While a stream
 * captures, ops enqueued on it become graph nodes (they do not run); a
 * record on it becomes a point other streams can fork from; a wait for such
 * a point pulls the waiting stream into the capture. Forbidden operations
 * fail loudly and invalidate the capture, so end-capture fails as well:
 * nothing is ever silently dropped from a graph.
 *
 * Locking: every field of every session, and each stream's capture lane and
 * tail, are guarded by g_capture_lock. Lock order: g_capture_lock, then a
 * stream's lock or an event's lock.
 */
#include <stdlib.h>
#include <string.h>

#include "simdev/capture.h"
#include "simdev/device.h"
#include "simdev/event.h"
#include "simdev/fault.h"
#include "simdev/graph.h"
#include "simdev/op.h"
#include "simdev/stream.h"

static pthread_mutex_t g_capture_lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static struct sd_capture *g_live; /* open sessions, all devices */
static _Atomic int g_live_count;  /* lets sync paths skip the lock */
static uint64_t g_next_capture_id; /* the last capture id given (g_capture_lock) */

static struct sd_capture *lock_capture_of(struct simdev_stream *stream);
static _Thread_local enum simdev_capture_mode tls_mode = SIMDEV_CAPTURE_MODE_STRICT;

/* ----------------------------------------------------------- small helpers */

/* Caller must hold g_capture_lock. */
static void invalidate(struct sd_capture *cap)
{
    if (cap->violation == 0)
        cap->violation = PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED;
}

/* Sets a stream's tail to `ids` (count of them). Caller must hold the lock. */
static int tail_set(struct simdev_stream *s, const size_t *ids, size_t count)
{
    if (count > s->capture_tail_cap) {
        size_t *grown = sd_realloc(s->capture_tail, count * sizeof(*grown));
        if (!grown)
            return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        s->capture_tail = grown;
        s->capture_tail_cap = count;
    }
    if (count)
        memcpy(s->capture_tail, ids, count * sizeof(*ids));
    s->capture_tail_count = count;
    return 0;
}

/* Adds the ids not already in the tail. Caller must hold the lock. */
static int tail_merge(struct simdev_stream *s, const size_t *ids, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        bool present = false;
        for (size_t j = 0; j < s->capture_tail_count && !present; j++)
            present = s->capture_tail[j] == ids[i];
        if (present)
            continue;
        if (s->capture_tail_count == s->capture_tail_cap) {
            size_t cap = s->capture_tail_cap ? s->capture_tail_cap * 2 : 4;
            size_t *grown = sd_realloc(s->capture_tail, cap * sizeof(*grown));
            if (!grown)
                return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
            s->capture_tail = grown;
            s->capture_tail_cap = cap;
        }
        s->capture_tail[s->capture_tail_count++] = ids[i];
    }
    return 0;
}

static size_t *ids_copy(const size_t *ids, size_t count)
{
    size_t *copy = sd_malloc((count ? count : 1) * sizeof(*copy));
    if (copy && count)
        memcpy(copy, ids, count * sizeof(*ids));
    return copy;
}

static bool on_owner_thread(const struct sd_capture *cap)
{
    return pthread_equal(cap->owner_thread, pthread_self());
}

/* ------------------------------------------------------------ begin / end */

int simdev_stream_begin_capture(simdev_stream_t stream)
{
    if (!stream)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (sd_device_lost(stream->dev))
        return PTO_RUNTIME_ERR_DEVICE_LOST;
    struct sd_capture *cap = sd_calloc(1, sizeof(*cap));
    struct simdev_stream **streams = sd_malloc(4 * sizeof(*streams));
    if (!cap || !streams) {
        free(cap);
        free(streams);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    cap->dev = stream->dev;
    cap->origin = stream;
    cap->owner_thread = pthread_self();
    cap->streams = streams;
    cap->streams[0] = stream;
    cap->stream_count = 1;
    cap->stream_cap = 4;
    atomic_init(&cap->refs, 1);

    pthread_mutex_lock(&g_capture_lock);
    if (atomic_load_explicit(&stream->capture, memory_order_relaxed)) {
        pthread_mutex_unlock(&g_capture_lock);
        free(streams);
        free(cap);
        return PTO_RUNTIME_ERR_INVALID_STATE;
    }
    cap->id = ++g_next_capture_id;
    stream->capture_lane = 0;
    stream->capture_tail_count = 0;
    /* Published under the stream lock as well: sd_stream_enqueue re-checks
     * it there, so no eager op slips in after the capture began.
     * release: pairs with the acquire in lock_capture_of's fast path. */
    pthread_mutex_lock(&stream->lock);
    atomic_store_explicit(&stream->capture, cap, memory_order_release);
    pthread_mutex_unlock(&stream->lock);
    cap->next_live = g_live;
    g_live = cap;
    atomic_fetch_add_explicit(&g_live_count, 1, memory_order_relaxed);
    pthread_mutex_unlock(&g_capture_lock);
    return 0;
}

/* Nodes reachable backwards from the origin's tail. Caller must hold the
 * lock. Returns a bitmap (node_count bytes) or NULL when out of memory. */
static unsigned char *origin_ancestors(const struct sd_capture *cap)
{
    unsigned char *seen = sd_calloc(cap->node_count ? cap->node_count : 1, 1);
    size_t *stack = sd_malloc((cap->node_count ? cap->node_count : 1) * sizeof(*stack));
    if (!seen || !stack) {
        free(seen);
        free(stack);
        return NULL;
    }
    size_t top = 0;
    const struct simdev_stream *origin = cap->origin;
    for (size_t i = 0; i < origin->capture_tail_count; i++) {
        size_t id = origin->capture_tail[i];
        if (!seen[id]) {
            seen[id] = 1;
            stack[top++] = id;
        }
    }
    while (top) {
        const struct sd_gnode *node = &cap->nodes[stack[--top]];
        for (size_t d = 0; d < node->dep_count; d++) {
            size_t id = node->deps[d];
            if (!seen[id]) {
                seen[id] = 1;
                stack[top++] = id;
            }
        }
    }
    free(stack);
    return seen;
}

/* 0, or CAPTURE_UNJOINED when some forked stream's last work is not an
 * ancestor of the origin's tail. Caller must hold the lock. */
static int check_joined(const struct sd_capture *cap)
{
    if (cap->stream_count == 1)
        return 0;
    unsigned char *ancestors = origin_ancestors(cap);
    if (!ancestors)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    int rc = 0;
    for (uint32_t lane = 1; lane < cap->stream_count && rc == 0; lane++) {
        const struct simdev_stream *s = cap->streams[lane];
        for (size_t i = 0; i < s->capture_tail_count; i++)
            if (!ancestors[s->capture_tail[i]])
                rc = PTO_RUNTIME_ERR_CAPTURE_UNJOINED;
    }
    free(ancestors);
    return rc;
}

/* Closes a session: every stream leaves it. Caller must hold the lock. */
static void session_close(struct sd_capture *cap)
{
    for (uint32_t i = 0; i < cap->stream_count; i++) {
        struct simdev_stream *s = cap->streams[i];
        s->capture_tail_count = 0;
        /* release: pairs with the acquire in sd_capture_submit's fast path */
        atomic_store_explicit(&s->capture, NULL, memory_order_release);
    }
    SD_LIST_REMOVE(&g_live, cap, struct sd_capture, next_live);
    atomic_fetch_sub_explicit(&g_live_count, 1, memory_order_relaxed);
    cap->ended = true;
    free(cap->streams);
    cap->streams = NULL;
    cap->stream_count = 0;
}

void sd_capture_unref(struct sd_capture *cap)
{
    /* acq_rel: the last owner sees every write before freeing */
    if (atomic_fetch_sub_explicit(&cap->refs, 1, memory_order_acq_rel) != 1)
        return;
    sd_gnodes_free(cap->nodes, cap->node_count);
    free(cap);
}

int simdev_stream_end_capture(simdev_stream_t stream, simdev_graph_t *graph)
{
    if (!stream || !graph)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&g_capture_lock);
    struct sd_capture *cap = atomic_load_explicit(&stream->capture, memory_order_relaxed);
    if (!cap || cap->origin != stream) {
        pthread_mutex_unlock(&g_capture_lock);
        return PTO_RUNTIME_ERR_INVALID_STATE;
    }
    int rc = sd_device_lost(stream->dev) ? PTO_RUNTIME_ERR_DEVICE_LOST
             : cap->violation             ? PTO_RUNTIME_ERR_CAPTURE_INVALIDATED
                                          : check_joined(cap);
    uint32_t lanes = cap->stream_count;
    session_close(cap);
    struct sd_gnode *nodes = cap->nodes;
    size_t node_count = cap->node_count;
    cap->nodes = NULL; /* taken: by the graph, or freed below */
    cap->node_count = 0;
    pthread_mutex_unlock(&g_capture_lock);

    if (rc == 0)
        rc = sd_graph_from_capture(stream->dev, nodes, node_count, lanes, graph);
    else
        sd_gnodes_free(nodes, node_count);
    sd_capture_unref(cap);
    return rc;
}

void sd_capture_abort_device(struct sd_device *dev)
{
    pthread_mutex_lock(&g_capture_lock);
    struct sd_capture *cap = g_live;
    while (cap) {
        struct sd_capture *next = cap->next_live;
        if (cap->dev == dev) {
            session_close(cap);
            sd_gnodes_free(cap->nodes, cap->node_count);
            cap->nodes = NULL;
            cap->node_count = 0;
            pthread_mutex_unlock(&g_capture_lock);
            sd_capture_unref(cap);
            pthread_mutex_lock(&g_capture_lock);
            next = g_live; /* the list may have changed; rescan */
        }
        cap = next;
    }
    pthread_mutex_unlock(&g_capture_lock);
}

int simdev_stream_get_capture_info(simdev_stream_t stream, int *capturing, uint64_t *capture_id)
{
    if (!stream || !capturing || !capture_id)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_capture *cap = lock_capture_of(stream);
    *capturing = cap != NULL;
    *capture_id = cap ? cap->id : 0;
    if (cap)
        pthread_mutex_unlock(&g_capture_lock);
    return 0;
}

int simdev_stream_is_capturing(simdev_stream_t stream, int *capturing)
{
    if (!stream || !capturing)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *capturing = atomic_load_explicit(&stream->capture, memory_order_acquire) != NULL;
    return 0;
}

int simdev_thread_exchange_capture_mode(enum simdev_capture_mode *mode)
{
    if (!mode || (*mode != SIMDEV_CAPTURE_MODE_STRICT && *mode != SIMDEV_CAPTURE_MODE_RELAXED))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    enum simdev_capture_mode previous = tls_mode;
    tls_mode = *mode;
    *mode = previous;
    return 0;
}

/* ------------------------------------------------------------- recording */

/* Appends a node for `op` after the stream's tail. Caller must hold the
 * lock. Takes `op` on success. */
static int append_node(struct sd_capture *cap, struct simdev_stream *stream, struct sd_op *op)
{
    if (cap->node_count == cap->node_cap) {
        size_t grown_cap = cap->node_cap ? cap->node_cap * 2 : 16;
        struct sd_gnode *grown = sd_realloc(cap->nodes, grown_cap * sizeof(*grown));
        if (!grown)
            return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        cap->nodes = grown;
        cap->node_cap = grown_cap;
    }
    size_t dep_count = stream->capture_tail_count;
    size_t *deps = ids_copy(stream->capture_tail, dep_count);
    if (!deps)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    size_t id = cap->node_count;
    int rc = tail_set(stream, &id, 1);
    if (rc != 0) {
        free(deps);
        return rc;
    }
    cap->nodes[id] = (struct sd_gnode){
        .op = op,
        .deps = deps,
        .dep_count = dep_count,
        .lane = stream->capture_lane,
    };
    cap->node_count++;
    return 0;
}

/*
 * The capture `stream` is in, with g_capture_lock held; or NULL, with the
 * lock not held, when the stream is not capturing (the common case costs one
 * atomic load).
 */
static struct sd_capture *lock_capture_of(struct simdev_stream *stream)
{
    /* acquire: pairs with the release stores in begin_capture/session_close */
    if (!atomic_load_explicit(&stream->capture, memory_order_acquire))
        return NULL;
    pthread_mutex_lock(&g_capture_lock);
    struct sd_capture *cap = atomic_load_explicit(&stream->capture, memory_order_relaxed);
    if (!cap)
        pthread_mutex_unlock(&g_capture_lock);
    return cap;
}

int sd_capture_submit(struct simdev_stream *stream, struct sd_op *op, int *status)
{
    struct sd_capture *cap = lock_capture_of(stream);
    if (!cap)
        return 0;
    if (op->type == SD_OP_GRAPH) {
        invalidate(cap);
        *status = PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED;
    } else if (op->type == SD_OP_RECORD || op->type == SD_OP_WAIT) {
        /* Records and waits are edges (sd_capture_record/_wait), never
         * nodes: a caller that gets here broke that rule. */
        invalidate(cap);
        *status = PTO_RUNTIME_ERR_INTERNAL;
    } else {
        *status = append_node(cap, stream, op);
        if (*status != 0)
            invalidate(cap); /* a node we could not record must not vanish */
    }
    pthread_mutex_unlock(&g_capture_lock);
    return 1;
}

int sd_capture_record(struct simdev_event *event, struct simdev_stream *stream, int *status)
{
    struct sd_capture *cap = lock_capture_of(stream);
    if (!cap)
        return 0;
    struct sd_event_record *record = sd_record_new();
    size_t *tail = record ? ids_copy(stream->capture_tail, stream->capture_tail_count) : NULL;
    if (!tail) {
        if (record)
            sd_record_unref(record);
        invalidate(cap);
        pthread_mutex_unlock(&g_capture_lock);
        *status = PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        return 1;
    }
    /* A capture record is a graph edge, never completed by a stream: mark it
     * done so an eager wait on it after the capture ends is a no-op. */
    atomic_store_explicit(&record->done, 1, memory_order_relaxed);
    record->capture = cap;
    atomic_fetch_add_explicit(&cap->refs, 1, memory_order_relaxed);
    record->capture_tail = tail;
    record->capture_tail_count = stream->capture_tail_count;
    sd_event_set_latest(event, record);
    pthread_mutex_unlock(&g_capture_lock);
    *status = 0;
    return 1;
}

int sd_capture_wait(struct simdev_stream *stream, struct sd_event_record *record, int *status)
{
    bool record_from_capture = record && record->capture;
    if (!atomic_load_explicit(&stream->capture, memory_order_acquire) && !record_from_capture)
        return 0; /* the eager path */
    pthread_mutex_lock(&g_capture_lock);
    struct sd_capture *mine = atomic_load_explicit(&stream->capture, memory_order_relaxed);
    struct sd_capture *theirs = record_from_capture && !record->capture->ended ? record->capture
                                                                                : NULL;
    int handled = 1;
    *status = 0;
    if (theirs && !mine) {
        /* Fork: the stream joins the capture, after the record point. */
        if (theirs->stream_count == theirs->stream_cap) {
            uint32_t cap = theirs->stream_cap * 2;
            struct simdev_stream **grown = sd_realloc(theirs->streams, cap * sizeof(*grown));
            if (!grown) {
                invalidate(theirs);
                *status = PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
                goto out;
            }
            theirs->streams = grown;
            theirs->stream_cap = cap;
        }
        *status = tail_set(stream, record->capture_tail, record->capture_tail_count);
        if (*status != 0) {
            invalidate(theirs);
            goto out;
        }
        stream->capture_lane = theirs->stream_count;
        theirs->streams[theirs->stream_count++] = stream;
        pthread_mutex_lock(&stream->lock); /* as in begin_capture */
        atomic_store_explicit(&stream->capture, theirs, memory_order_release);
        pthread_mutex_unlock(&stream->lock);
    } else if (theirs && mine == theirs) {
        *status = tail_merge(stream, record->capture_tail, record->capture_tail_count);
        if (*status != 0)
            invalidate(mine);
    } else if (mine && (theirs || (record && !record_from_capture))) {
        /* Another capture's point, or a record made outside this capture
         * (before it began): a graph cannot wait for it. */
        invalidate(mine);
        *status = PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED;
    } else if (mine) {
        /* Never recorded, or recorded in a capture that has ended: the wait
         * has nothing to wait for, captured or not. */
    } else {
        handled = 0; /* not capturing; a finished capture's record: eager no-op */
    }
out:
    pthread_mutex_unlock(&g_capture_lock);
    return handled;
}

/* ------------------------------------------------------- forbidden checks */

/* Invalidates every open capture begun by this thread; returns whether there
 * was one. */
static bool invalidate_own_captures(void)
{
    if (atomic_load_explicit(&g_live_count, memory_order_relaxed) == 0)
        return false;
    bool found = false;
    pthread_mutex_lock(&g_capture_lock);
    for (struct sd_capture *cap = g_live; cap; cap = cap->next_live) {
        if (on_owner_thread(cap)) {
            invalidate(cap);
            found = true;
        }
    }
    pthread_mutex_unlock(&g_capture_lock);
    return found;
}

int sd_capture_check_sync(void)
{
    if (tls_mode == SIMDEV_CAPTURE_MODE_RELAXED)
        return 0;
    return invalidate_own_captures() ? PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED : 0;
}

int sd_capture_check_alloc(void)
{
    /* As a sync: relaxed mode is the capturing thread's statement that its
     * allocations serve no captured work (CUDA's relaxed capture mode
     * permits cudaMalloc likewise). */
    if (tls_mode == SIMDEV_CAPTURE_MODE_RELAXED)
        return 0;
    return invalidate_own_captures() ? PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED : 0;
}

int sd_capture_forbid_on_stream(struct simdev_stream *stream)
{
    struct sd_capture *cap = lock_capture_of(stream);
    if (!cap)
        return 0;
    invalidate(cap);
    pthread_mutex_unlock(&g_capture_lock);
    return PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED;
}

int sd_capture_forbid_record(struct sd_event_record *record)
{
    if (!record || !record->capture)
        return 0;
    pthread_mutex_lock(&g_capture_lock);
    bool live = !record->capture->ended;
    if (live)
        invalidate(record->capture);
    pthread_mutex_unlock(&g_capture_lock);
    return live ? PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED : 0;
}
