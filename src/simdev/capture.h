/*
 * simdev/capture.h — stream capture: recording ops into a graph
 * (capture.c).
 *
 * Owns: the layout of a capture session and the hooks the enqueue, sync
 * and allocation paths call. Must not run anything: a captured op becomes a
 * graph node (graph.h) and only a replay runs it.
 */
#ifndef SIMDEV_CAPTURE_H
#define SIMDEV_CAPTURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sd_device;
struct sd_event_record;
struct sd_gnode;
struct sd_op;
struct simdev_event;
struct simdev_stream;

/* A stream capture in progress. Guarded by the global capture lock. */
struct sd_capture {
    struct sd_device *dev;
    struct simdev_stream *origin;
    pthread_t owner_thread; /* the thread that began it */
    struct sd_capture *next_live;
    int violation; /* first forbidden-op status; nonzero fails end_capture */
    struct simdev_stream **streams; /* lane i = streams[i]; lane 0 = origin */
    uint32_t stream_count;
    uint32_t stream_cap;
    struct sd_gnode *nodes;
    size_t node_count;
    size_t node_cap;
    bool ended;
    _Atomic uint32_t refs; /* the session and every record it made */
    uint64_t id;           /* unique in the process, never 0 (g_capture_lock) */
};

/*
 * Capture hooks used by the enqueue paths. Each returns 1 when the call was
 * handled by a capture (*status holds its result), 0 when the caller must
 * run the eager path.
 */
int sd_capture_submit(struct simdev_stream *stream, struct sd_op *op, int *status);
int sd_capture_record(struct simdev_event *event, struct simdev_stream *stream, int *status);
int sd_capture_wait(struct simdev_stream *stream, struct sd_event_record *record, int *status);

/*
 * Forbidden-operation checks. sd_capture_check_sync: called by synchronous
 * copies and synchronize calls; fails (and invalidates) when the calling
 * thread is capturing in strict mode. sd_capture_check_alloc: the same for
 * allocation and free (relaxed mode exempts both as well). Return 0 or
 * CAPTURE_UNSUPPORTED.
 */
int sd_capture_check_sync(void);
int sd_capture_check_alloc(void);
/* Invalidates the capture the stream is in (if any); returns
 * CAPTURE_UNSUPPORTED if it was capturing, else 0. */
int sd_capture_forbid_on_stream(struct simdev_stream *stream);
/* Query/sync of a record made in a capture that is still open: invalidates
 * that capture and returns CAPTURE_UNSUPPORTED; otherwise 0. */
int sd_capture_forbid_record(struct sd_event_record *record);
void sd_capture_unref(struct sd_capture *capture);
/* Ends every capture of the device (reset). */
void sd_capture_abort_device(struct sd_device *dev);

#endif /* SIMDEV_CAPTURE_H */
