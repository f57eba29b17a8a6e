/*
 * simdev/profile.c — what a device's threads cost in hand-offs, and its op
 * timeline (simpler/simdev_profile.h).
 *
 * Owns: reading and zeroing a device's wait counters (bumped by park.c,
 * stream.c, event.c and launch.c on their slow paths) and the timeline:
 * its buffer, its marks (a sleep or wake-up as the thread that made it,
 * the device runtime's points: platform_mark), and stopping it while marks
 * are being written.
 * Must not change what it observes.
 */
#include <stdlib.h>
#include <string.h>

#include "simdev/device.h"
#include "simdev/fault.h"
#include "simdev/park.h"
#include "simdev/profile.h"
#include "simdev/worker.h"
#include "platform/platform.h"

#define TIMELINE_MAX_ENTRIES (1u << 24)

int simdev_wait_stats(int device, struct simdev_wait_stats *out)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev || !out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    out->wakeups = atomic_load_explicit(&dev->waits.wakeups, memory_order_relaxed);
    out->parks = atomic_load_explicit(&dev->waits.parks, memory_order_relaxed);
    out->handoffs = atomic_load_explicit(&dev->waits.handoffs, memory_order_relaxed);
    out->taken = atomic_load_explicit(&dev->waits.taken, memory_order_relaxed);
    return 0;
}

int simdev_wait_stats_reset(int device)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    atomic_store_explicit(&dev->waits.wakeups, 0, memory_order_relaxed);
    atomic_store_explicit(&dev->waits.parks, 0, memory_order_relaxed);
    atomic_store_explicit(&dev->waits.handoffs, 0, memory_order_relaxed);
    atomic_store_explicit(&dev->waits.taken, 0, memory_order_relaxed);
    return 0;
}

/* Timelines recording, over every device: what platform_mark looks at. */
_Atomic uint32_t platform_marking;

/* Records `mark` (PARK, UNPARK, WAKEUP, POINT) as the calling thread if
 * `t` records the marks `kind` (SIMDEV_TIMELINE_*) names. */
static void mark_as_self(struct sd_timeline *t, uint32_t kind, enum simdev_mark mark, uint32_t op)
{
    if (!sd_timeline_on(t) || !(atomic_load_explicit(&t->extra, memory_order_relaxed) & kind))
        return;
    const struct sd_worker *w = sd_tl_self;
    sd_mark_slow(t, mark, op, NULL, w ? w->is_core : SIMDEV_MARK_OTHER_THREAD, w ? w->index : 0);
}

void sd_mark_wait(const struct sd_wait_counters *counters, enum simdev_mark mark)
{
    /* A device thread outside every job waits for its next one: marked
     * idle, since its worker may run meanwhile on another thread (a block
     * run as it) whose marks carry the same core and thread. */
    uint32_t op = sd_tl_self && !sd_tl_worker ? SIMDEV_MARK_IDLE : 0;
    if (counters->timeline)
        mark_as_self(counters->timeline, SIMDEV_TIMELINE_WAITS, mark, op);
}

void platform_mark_slow(uint32_t point)
{
    /* A device thread's own device: other threads mark nothing. */
    if (sd_tl_self)
        mark_as_self(&sd_tl_self->dev->timeline, SIMDEV_TIMELINE_POINTS, SIMDEV_MARK_POINT, point);
}

void sd_timeline_init(struct sd_timeline *t)
{
    sd_mutex_init(&t->lock);
}

void sd_mark_slow(struct sd_timeline *t, enum simdev_mark mark, uint32_t op,
                  simdev_stream_t stream, uint32_t core, uint32_t thread)
{
    uint64_t ns = simdev_clock_ns();
    /* Announce, then look (seq_cst both): stop clears `on`, then waits for
     * `active` to drain, so a writer that saw `on` finishes before the
     * buffer is read or freed. */
    atomic_fetch_add_explicit(&t->active, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&t->on, memory_order_seq_cst)) {
        uint64_t i = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
        if (i < t->capacity)
            t->entries[i] = (struct simdev_timeline_entry){ns, (uint32_t)mark, op, stream, core,
                                                           thread};
    }
    /* release: the entry before the drain stop waits for */
    atomic_fetch_sub_explicit(&t->active, 1, memory_order_release);
}

int simdev_timeline_start(int device, size_t capacity)
{
    return simdev_timeline_start_with(device, capacity, 0);
}

int simdev_timeline_start_with(int device, size_t capacity, uint32_t extra)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev || capacity == 0 || capacity > TIMELINE_MAX_ENTRIES ||
        (extra & ~(SIMDEV_TIMELINE_WAITS | SIMDEV_TIMELINE_POINTS)))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_timeline *t = &dev->timeline;
    pthread_mutex_lock(&t->lock);
    int rc = 0;
    if (t->entries) {
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    } else if (!(t->entries = sd_malloc(capacity * sizeof(*t->entries)))) {
        rc = PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    } else {
        t->capacity = capacity;
        atomic_store_explicit(&t->next, 0, memory_order_relaxed);
        atomic_store_explicit(&t->extra, extra, memory_order_relaxed);
        atomic_store_explicit(&t->on, true, memory_order_seq_cst);
        if (extra & SIMDEV_TIMELINE_POINTS)
            atomic_fetch_add_explicit(&platform_marking, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int simdev_timeline_stop(int device, struct simdev_timeline_entry *out, size_t capacity,
                         size_t *count, uint64_t *dropped)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev || !count || (capacity && !out))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_timeline *t = &dev->timeline;
    pthread_mutex_lock(&t->lock);
    if (!t->entries) {
        pthread_mutex_unlock(&t->lock);
        return PTO_RUNTIME_ERR_INVALID_STATE;
    }
    atomic_store_explicit(&t->on, false, memory_order_seq_cst);
    if (atomic_load_explicit(&t->extra, memory_order_relaxed) & SIMDEV_TIMELINE_POINTS)
        atomic_fetch_sub_explicit(&platform_marking, 1, memory_order_relaxed);
    /* acquire: pairs with each writer's release; a writer holds `active`
     * for one store, so this ends within microseconds */
    while (atomic_load_explicit(&t->active, memory_order_acquire))
        ;
    uint64_t made = atomic_load_explicit(&t->next, memory_order_relaxed);
    uint64_t kept = made < t->capacity ? made : t->capacity;
    size_t n = kept < capacity ? (size_t)kept : capacity;
    if (n)
        memcpy(out, t->entries, n * sizeof(*out));
    *count = n;
    if (dropped)
        *dropped = made - n;
    free(t->entries);
    t->entries = NULL;
    t->capacity = 0;
    pthread_mutex_unlock(&t->lock);
    return 0;
}
