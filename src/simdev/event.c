/*
 * simdev/event.c — events: record, cross-stream wait, query, synchronize.
 *
 * Owns: events and their records. Each record is a separate, reference-
 * counted object completed by the stream that reaches it, so a wait always
 * targets the record that was latest when the wait was enqueued, and an
 * event can be re-recorded or destroyed while waits on it are pending.
 * Records made inside a capture are edges of the graph, handled by
 * capture.c; record and wait ops are enqueued by enqueue.c.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "simdev/capture.h"
#include "simdev/device.h"
#include "simdev/event.h"
#include "simdev/fault.h"
#include "simdev/op.h"
#include "simdev/stream.h"

/*
 * Ended records are kept for the next ones, their lock and condition
 * variable still initialised: a kernel-mode round makes five records on
 * the launching thread, and most end on a device thread, so an allocator
 * would hand the launching thread fresh memory and run its slow path for
 * each (docs/device.md, "What an enqueue costs"). A record in a pool has
 * no owner: nobody waits on it.
 *
 * Two levels: each thread keeps up to RECORD_CACHE_MAX records of its own,
 * taken and given back with no lock; the process-wide pool (up to
 * RECORD_POOL_MAX, under record_pool_lock) refills an empty thread cache
 * and takes half of a full one, RECORD_CACHE_MOVE records at a time. So a
 * launching thread takes the pool's lock once per RECORD_CACHE_MOVE
 * records, not twice per record (measured: a lock and an unlock were 67
 * instructions of a launch's 8,600 each, ten a launch; docs/performance.md,
 * "Enqueue in instructions"). A thread's cache goes back to the pool when
 * the thread ends (record_key's destructor).
 */
#define RECORD_POOL_MAX 256u
#define RECORD_CACHE_MAX 32u
#define RECORD_CACHE_MOVE (RECORD_CACHE_MAX / 2)
static pthread_mutex_t record_pool_lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static struct sd_event_record *record_pool;
static uint32_t record_pool_count;

struct record_cache {
    struct sd_event_record *head;
    uint32_t count;
    bool keyed; /* record_key set on this thread: its end flushes the cache */
};
static _Thread_local struct record_cache tl_records;
static pthread_key_t record_key;
static pthread_once_t record_key_once = PTHREAD_ONCE_INIT;
static bool record_key_made;

/* Frees a record that no pool keeps. */
static void record_destroy(struct sd_event_record *record)
{
    pthread_cond_destroy(&record->cond);
    pthread_mutex_destroy(&record->lock);
    free(record);
}

/* Frees every record of the list `list` (linked by next_free). */
static void destroy_list(struct sd_event_record *list)
{
    while (list) {
        struct sd_event_record *record = list;
        list = record->next_free;
        record_destroy(record);
    }
}

/* Gives the first `n` records of this thread's cache to the pool (those
 * the pool has no room for are freed). */
static void cache_give(uint32_t n)
{
    struct sd_event_record *freed = NULL;
    pthread_mutex_lock(&record_pool_lock);
    for (; n && tl_records.head; n--) {
        struct sd_event_record *record = tl_records.head;
        tl_records.head = record->next_free;
        tl_records.count--;
        if (record_pool_count < RECORD_POOL_MAX) {
            record->next_free = record_pool;
            record_pool = record;
            record_pool_count++;
        } else {
            record->next_free = freed;
            freed = record;
        }
    }
    pthread_mutex_unlock(&record_pool_lock);
    destroy_list(freed);
}

/* record_key's destructor: the ending thread's cache back to the pool. */
static void cache_flush_at_exit(void *unused)
{
    (void)unused;
    cache_give(UINT32_MAX);
    /* a record let go by a later destructor keys the thread again, and
     * the destructors' next pass flushes it */
    tl_records.keyed = false;
}

static void record_key_make(void)
{
    record_key_made = pthread_key_create(&record_key, cache_flush_at_exit) == 0;
}

/* Arms the flush of this thread's cache at its end, once; false when it
 * cannot (then the cache is not used on this thread). */
static bool cache_keyed(void)
{
    if (!tl_records.keyed) {
        pthread_once(&record_key_once, record_key_make);
        tl_records.keyed = record_key_made && pthread_setspecific(record_key, &tl_records) == 0;
    }
    return tl_records.keyed;
}

/* Moves up to RECORD_CACHE_MOVE records from the pool into this thread's
 * cache. */
static void cache_refill(void)
{
    pthread_mutex_lock(&record_pool_lock);
    for (uint32_t n = 0; n < RECORD_CACHE_MOVE && record_pool; n++) {
        struct sd_event_record *record = record_pool;
        record_pool = record->next_free;
        record_pool_count--;
        record->next_free = tl_records.head;
        tl_records.head = record;
        tl_records.count++;
    }
    pthread_mutex_unlock(&record_pool_lock);
}

struct sd_event_record *sd_record_new(void)
{
    if (sd_host_fault()) /* one host allocation point, pooled or not */
        return NULL;
    if (!tl_records.head && cache_keyed())
        cache_refill();
    struct sd_event_record *record = tl_records.head;
    if (record) {
        tl_records.head = record->next_free;
        tl_records.count--;
        /* as calloc leaves a new one, but its lock and condition variable */
        size_t kept = offsetof(struct sd_event_record, refs);
        memset((char *)record + kept, 0, sizeof *record - kept);
        atomic_init(&record->refs, 1);
        return record;
    }
    record = calloc(1, sizeof(*record));
    if (!record)
        return NULL;
    atomic_init(&record->refs, 1);
    sd_mutex_init(&record->lock);
    pthread_cond_init(&record->cond, NULL);
    return record;
}

void sd_record_ref(struct sd_event_record *record)
{
    atomic_fetch_add_explicit(&record->refs, 1, memory_order_relaxed);
}

void sd_record_unref(struct sd_event_record *record)
{
    /* acq_rel: the last owner sees every other owner's writes before freeing */
    if (atomic_fetch_sub_explicit(&record->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (record->capture)
        sd_capture_unref(record->capture);
    free(record->capture_tail);
    if (!cache_keyed()) {
        record_destroy(record);
        return;
    }
    record->next_free = tl_records.head;
    tl_records.head = record;
    if (++tl_records.count > RECORD_CACHE_MAX)
        cache_give(RECORD_CACHE_MOVE);
}

uint32_t sd_record_pool_count(void)
{
    pthread_mutex_lock(&record_pool_lock);
    uint32_t n = record_pool_count;
    pthread_mutex_unlock(&record_pool_lock);
    return n;
}

void sd_record_pool_empty(void)
{
    pthread_mutex_lock(&record_pool_lock);
    struct sd_event_record *all = record_pool;
    record_pool = NULL;
    record_pool_count = 0;
    pthread_mutex_unlock(&record_pool_lock);
    destroy_list(all);
}

static bool record_is_done(const struct sd_event_record *record)
{
    /* acquire: pairs with the release in sd_record_complete */
    return atomic_load_explicit(&((struct sd_event_record *)record)->done, memory_order_acquire);
}

void sd_record_complete(struct sd_event_record *record, int status,
                        struct sd_wait_counters *counters)
{
    pthread_mutex_lock(&record->lock);
    record->status = status;
    /* release: pairs with the acquire in record_is_done */
    atomic_store_explicit(&record->done, 1, memory_order_release);
    if (record->sleepers && counters) {
        sd_note_wakeup(counters);
        sd_count_wait(&counters->handoffs, record->sleepers);
    }
    pthread_cond_broadcast(&record->cond);
    struct simdev_stream *waiting = record->waiting;
    record->waiting = NULL;
    pthread_mutex_unlock(&record->lock);
    /* The streams waiting for it go on, on this thread (their wait ops
     * hold references to the record, so it outlives this loop). */
    while (waiting) {
        struct simdev_stream *next = waiting->next_waiting;
        if (counters)
            sd_count_wait(&counters->handoffs, 1);
        sd_stream_wait_done(waiting, status);
        waiting = next;
    }
}

bool sd_record_wait_async(struct sd_event_record *record, struct simdev_stream *stream,
                          int *status)
{
    pthread_mutex_lock(&record->lock);
    bool pending = !record_is_done(record);
    if (pending) {
        stream->next_waiting = record->waiting;
        record->waiting = stream;
    } else {
        *status = record->status;
    }
    pthread_mutex_unlock(&record->lock);
    return pending;
}


int sd_record_wait(struct sd_event_record *record, struct sd_wait_counters *counters)
{
    pthread_mutex_lock(&record->lock);
    while (!record_is_done(record)) {
        if (counters)
            sd_note_park(counters);
        record->sleepers++;
        pthread_cond_wait(&record->cond, &record->lock);
        record->sleepers--;
        if (counters)
            sd_note_unpark(counters);
    }
    int status = record->status;
    pthread_mutex_unlock(&record->lock);
    return status;
}

struct sd_event_record *sd_event_latest(struct simdev_event *event)
{
    pthread_mutex_lock(&event->lock);
    struct sd_event_record *record = event->latest;
    if (record)
        sd_record_ref(record);
    pthread_mutex_unlock(&event->lock);
    return record;
}

int simdev_event_create(simdev_event_t *out)
{
    if (!out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev;
    void *object;
    int rc = sd_object_new(SIMDEV_OP_EVENT_CREATE, sizeof(struct simdev_event), &dev, &object);
    if (rc != 0)
        return rc;
    struct simdev_event *event = object;
    event->dev = dev;
    sd_mutex_init(&event->lock);
    pthread_mutex_lock(&dev->lock);
    event->next_in_device = dev->events;
    dev->events = event;
    pthread_mutex_unlock(&dev->lock);
    sd_count(dev, SIMDEV_OP_EVENT_CREATE);
    *out = event;
    return 0;
}

void sd_event_teardown(struct simdev_event *event)
{
    if (event->latest)
        sd_record_unref(event->latest);
    pthread_mutex_destroy(&event->lock);
    free(event);
}

int simdev_event_destroy(simdev_event_t event)
{
    if (!event)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev = event->dev;
    int rc = sd_fault_check(dev, SIMDEV_OP_EVENT_DESTROY);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&dev->lock);
    SD_LIST_REMOVE(&dev->events, event, struct simdev_event, next_in_device);
    pthread_mutex_unlock(&dev->lock);
    sd_event_teardown(event);
    sd_count(dev, SIMDEV_OP_EVENT_DESTROY);
    return 0;
}

struct sd_event_record *sd_event_swap_latest(struct simdev_event *event,
                                             struct sd_event_record *record)
{
    pthread_mutex_lock(&event->lock);
    struct sd_event_record *old = event->latest;
    event->latest = record;
    pthread_mutex_unlock(&event->lock);
    return old;
}

void sd_event_set_latest(struct simdev_event *event, struct sd_event_record *record)
{
    struct sd_event_record *old = sd_event_swap_latest(event, record);
    if (old)
        sd_record_unref(old);
}

int simdev_event_query(simdev_event_t event)
{
    if (!event)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (sd_device_lost(event->dev))
        return PTO_RUNTIME_ERR_DEVICE_LOST;
    struct sd_event_record *record = sd_event_latest(event);
    if (!record)
        return 0;
    /* A record of a finished capture is done with status 0: nothing to
     * wait for. */
    int status = sd_capture_forbid_record(record);
    if (status == 0)
        status = record_is_done(record) ? record->status : PTO_RUNTIME_ERR_NOT_READY;
    sd_record_unref(record);
    return status;
}

int simdev_event_sync(simdev_event_t event)
{
    if (!event)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev = event->dev;
    int rc = sd_capture_check_sync();
    if (rc != 0)
        return rc;
    sd_stream_start_held(); /* never wait for a stream this thread holds */
    struct sd_event_record *record = sd_event_latest(event);
    rc = sd_capture_forbid_record(record);
    if (rc == 0)
        rc = sd_fault_check(dev, SIMDEV_OP_SYNC);
    if (rc != 0) {
        if (record)
            sd_record_unref(record);
        return rc;
    }
    int status = record ? sd_record_wait(record, &dev->waits) : 0;
    if (record)
        sd_record_unref(record);
    sd_count(dev, SIMDEV_OP_SYNC);
    return sd_device_lost(dev) ? PTO_RUNTIME_ERR_DEVICE_LOST : status;
}
