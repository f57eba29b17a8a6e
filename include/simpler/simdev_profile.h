/*
 * simpler/simdev_profile.h — what a device's threads cost in hand-offs,
 * and a timeline of a device's ops, for benchmarks, tools and tests.
 *
 * Owns: the wait counters (wake-up system calls, sleeps, hand-offs) and
 * the op timeline of a device. The counters are always on and are bumped
 * only on paths that are already slow (a sleep, a wake-up system call, a
 * stream op, a launch), never per task. The timeline is off until
 * simdev_timeline_start and costs one relaxed load per mark point then.
 */
#ifndef SIMPLER_SIMDEV_PROFILE_H
#define SIMPLER_SIMDEV_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What waiting cost the device since it started or since the last reset.
 *
 * - wakeups: wake-up system calls made for a thread asleep in a simdev wait:
 *   a device thread (a stream's executor, an AICPU thread, a core, a
 *   graph's lane helper) or a host thread asleep in a stream sync. A wake
 *   of a thread that is still spinning makes none and is not counted.
 * - parks: times a thread went to sleep in a simdev wait (the same threads).
 * - handoffs: work passed from one thread to another: each op a stream's
 *   executor takes from the thread that enqueued it, each job a launch
 *   hands to a device thread, each launch's end reported to its executor,
 *   each stream a completed record lets go, each sync that had to wait.
 * - taken: round programs a waiting sync took from the device thread they
 *   were handed to, before that thread began them, and ran on its own
 *   thread (docs/device.md, "A sync runs the program it waits for"). The
 *   wake-up made for that thread is counted in `wakeups` all the same.
 */
struct simdev_wait_stats {
    uint64_t wakeups;
    uint64_t parks;
    uint64_t handoffs;
    uint64_t taken;
};

/* Writes `device`'s counters to *out. INVALID_ARGUMENT for a bad id or NULL. */
int simdev_wait_stats(int device, struct simdev_wait_stats *out);
/* Zeroes `device`'s counters. INVALID_ARGUMENT for a bad id. */
int simdev_wait_stats_reset(int device);

/* What a timeline entry marks. */
enum simdev_mark {
    SIMDEV_MARK_OP_BEGIN = 0, /* a stream's executor begins an op */
    SIMDEV_MARK_OP_END,       /* ... and finished it */
    SIMDEV_MARK_JOB_BEGIN,    /* a device thread begins a launch's function */
    SIMDEV_MARK_JOB_END,      /* ... and it returned */
    SIMDEV_MARK_SYNC_END,     /* a stream sync is about to return */
    SIMDEV_MARK_PARK,         /* a thread goes to sleep in a wait (one of `parks`) */
    SIMDEV_MARK_UNPARK,       /* ... and is running again */
    SIMDEV_MARK_WAKEUP,       /* a thread makes a wake-up system call (one of `wakeups`) */
    SIMDEV_MARK_POINT,        /* a device function marks a point of its protocol: `op`
                                 is enum simdev_point (simpler/device_fn.h) */
};

/* The `core` of a PARK, UNPARK, WAKEUP or POINT entry made by a thread
 * that is not one of the device's AICPU threads or cores (a stream's
 * executor, a host thread in a sync). */
#define SIMDEV_MARK_OTHER_THREAD 2u

/* The `op` of a PARK or UNPARK entry made by one of the device's threads
 * while it waits for its next job, outside every job (0: a wait inside a
 * job, or another thread's). A block of a job may run as a device thread
 * on another thread (a program a caller's sync took, a core's block run
 * by an AICPU thread), and its marks carry that device thread's core and
 * thread too: the device thread's own waits between jobs are told apart
 * by this op. */
#define SIMDEV_MARK_IDLE 1u

/* The op an OP mark names. */
enum simdev_mark_op {
    SIMDEV_MARK_AICPU = 0,
    SIMDEV_MARK_AICORE,
    SIMDEV_MARK_COPY,
    SIMDEV_MARK_MEMSET,
    SIMDEV_MARK_HOST_FN,
    SIMDEV_MARK_RECORD,
    SIMDEV_MARK_WAIT,
    SIMDEV_MARK_GRAPH,
    SIMDEV_MARK_SEM_ACQUIRE,
    SIMDEV_MARK_SEM_RELEASE,
};

/* One timeline entry. */
struct simdev_timeline_entry {
    uint64_t ns;     /* simdev_clock_ns() at the mark */
    uint32_t mark;   /* enum simdev_mark */
    uint32_t op;     /* OP and SYNC marks: enum simdev_mark_op (SYNC: 0); POINT marks:
                        enum simdev_point; PARK and UNPARK marks: SIMDEV_MARK_IDLE or
                        0; others 0 */
    simdev_stream_t stream; /* OP and SYNC marks: the stream; other marks: NULL */
    uint32_t core;   /* JOB, PARK, UNPARK, WAKEUP, POINT marks: 1 for a core, 0 for an
                        AICPU thread (in a job or idle), SIMDEV_MARK_OTHER_THREAD */
    uint32_t thread; /* the same marks: the core id or the AICPU thread's index in the
                        device (0 for another thread) */
};

/*
 * Starts recording `device`'s timeline into a buffer of `capacity` entries
 * (marks past it are dropped and counted). INVALID_ARGUMENT for a bad id,
 * capacity 0 or above 2^24; INVALID_STATE while a timeline is recording;
 * OUT_OF_HOST_MEMORY.
 */
int simdev_timeline_start(int device, size_t capacity);

/* What a timeline records besides ops, jobs and syncs. */
#define SIMDEV_TIMELINE_WAITS 1u  /* PARK, UNPARK and WAKEUP marks */
#define SIMDEV_TIMELINE_POINTS 2u /* POINT marks of the device runtime */

/* simdev_timeline_start that also records the marks `extra` names (an OR
 * of SIMDEV_TIMELINE_*): INVALID_ARGUMENT for another bit, and as
 * simdev_timeline_start. */
int simdev_timeline_start_with(int device, size_t capacity, uint32_t extra);
/*
 * Stops recording and copies up to `capacity` entries, in the order they
 * were recorded (each thread's in time order; sort by ns for one order),
 * to out; the number copied to *count and the number dropped for want of
 * room (in the buffer or in out) to *dropped (may be NULL). Frees the
 * buffer. INVALID_ARGUMENT for a bad id or NULLs; INVALID_STATE when no
 * timeline is recording.
 */
int simdev_timeline_stop(int device, struct simdev_timeline_entry *out, size_t capacity,
                         size_t *count, uint64_t *dropped);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_SIMDEV_PROFILE_H */
