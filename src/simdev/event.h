/*
 * simdev/event.h — events and their records (event.c).
 *
 * Owns: the layout of an event and of each of its records, and the
 * reference counting and completion of records that streams and captures
 * share. Must not know how a record is reached: the stream executor
 * completes it, a capture marks it an edge.
 */
#ifndef SIMDEV_EVENT_H
#define SIMDEV_EVENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct sd_capture;
struct sd_device;

/*
 * One record of an event: completed by the stream that reached it, carrying
 * that stream's error. Reference-counted: the event and every op that
 * completes or waits for it hold one.
 */
struct sd_event_record {
    /* first: kept initialised while the record waits in the pool
     * (event.c); every field after them is zero in a new record */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    _Atomic uint32_t refs;
    _Atomic int done;
    int status; /* written before done is released */
    uint32_t sleepers; /* threads asleep in sd_record_wait; guarded by lock */
    /* The stream whose op completes it, set as the op is queued (NULL: a
     * graph's record): a sync waiting for it looks there for a program
     * not yet started (stream.c, sync_runs_program). */
    struct simdev_stream *stream;
    struct simdev_stream *waiting; /* streams whose head waits for it (lock) */
    struct sd_capture *capture; /* non-NULL: recorded inside this capture */
    size_t *capture_tail;       /* the recording stream's tail at that point */
    size_t capture_tail_count;
    struct sd_event_record *next_free; /* in the pool of ended records (event.c) */
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
/* Tests: how many ended records the process-wide pool keeps (event.c);
 * sd_record_pool_empty frees them. Neither touches a thread's own cache. */
uint32_t sd_record_pool_count(void);
void sd_record_pool_empty(void);
/* Completes the record with `status`; counts the wake-up it makes, if a
 * thread sleeps in sd_record_wait, and that thread's hand-off, in
 * `counters` (may be NULL). */
void sd_record_complete(struct sd_event_record *record, int status,
                        struct sd_wait_counters *counters);
/* Registers `stream`, whose head op waits for the record, to be gone on
 * with (sd_stream_wait_done) by whoever completes it: true. False when it
 * is complete already, with its status in *status. */
bool sd_record_wait_async(struct sd_event_record *record, struct simdev_stream *stream,
                          int *status);
/* Blocks until complete; returns its status. Counts a sleep in `counters`
 * (may be NULL). */
int sd_record_wait(struct sd_event_record *record, struct sd_wait_counters *counters);
void sd_event_teardown(struct simdev_event *event);
/* Replaces the event's latest record, taking the caller's reference. */
void sd_event_set_latest(struct simdev_event *event, struct sd_event_record *record);
/* The same, returning the record replaced (NULL: none) with the event's
 * reference, which the caller drops (sd_record_unref) where it may. */
struct sd_event_record *sd_event_swap_latest(struct simdev_event *event,
                                             struct sd_event_record *record);
/* The event's latest record with a reference taken, or NULL. */
struct sd_event_record *sd_event_latest(struct simdev_event *event);

#endif /* SIMDEV_EVENT_H */
