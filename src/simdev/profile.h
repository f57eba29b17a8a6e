/*
 * simdev/profile.h — a device's op timeline (profile.c); its wait counters
 * are park.h's (struct sd_wait_counters), read here.
 *
 * Owns: the timeline buffer, marking an entry, and the public calls of
 * simpler/simdev_profile.h. Must not change what it observes: a mark is
 * one relaxed load while no timeline records, and never waits.
 */
#ifndef SIMDEV_PROFILE_H
#define SIMDEV_PROFILE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "simpler/simdev_profile.h"

/* A device's timeline: recording while `on`. */
struct sd_timeline {
    pthread_mutex_t lock; /* orders start and stop */
    _Atomic bool on;
    _Atomic uint32_t extra; /* SIMDEV_TIMELINE_* recorded besides ops, jobs, syncs */
    _Atomic uint32_t active; /* marks being written (stop waits them out) */
    _Atomic uint64_t next;   /* entries reserved */
    uint64_t capacity;
    struct simdev_timeline_entry *entries;
};

struct sd_device;

void sd_timeline_init(struct sd_timeline *t);
/* Records one entry (profile.c); call through sd_mark. */
void sd_mark_slow(struct sd_timeline *t, enum simdev_mark mark, uint32_t op,
                  simdev_stream_t stream, uint32_t core, uint32_t thread);

static inline bool sd_timeline_on(struct sd_timeline *t)
{
    return atomic_load_explicit(&t->on, memory_order_relaxed);
}

static inline void sd_mark(struct sd_timeline *t, enum simdev_mark mark, uint32_t op,
                           simdev_stream_t stream, uint32_t core, uint32_t thread)
{
    if (sd_timeline_on(t))
        sd_mark_slow(t, mark, op, stream, core, thread);
}


#endif /* SIMDEV_PROFILE_H */
