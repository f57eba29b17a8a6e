/*
 * cluster/mpi_link.h — the transport of a distributed cluster: one MPI
 * communicator between the ranks, messages of bytes, peer liveness, and
 * collectives that end within the peer timeout.
 *
 * Owns: every MPI call of the cluster layer (mpi_link.c is the only file
 * that includes mpi.h). Knows nothing of tasks, workers or runs. Built
 * only with MPI (SIMPLER_HAVE_MPI); the cluster calls it from one thread
 * at a time (MPI_THREAD_SERIALIZED): the caller of create, registration
 * and destroy, or during a run rank 0's communication thread and a serving
 * rank's serve loop.
 *
 * No call blocks inside MPI: every wait is a test loop that sleeps with a
 * bounded backoff (cl_backoff) and gives up after the peer timeout, so a
 * dead or stopped peer ends the wait with PEER_LOST, and an idle rank takes
 * no CPU from the device threads (docs/cluster.md section 9).
 */
#ifndef SIMPLER_CLUSTER_MPI_LINK_H
#define SIMPLER_CLUSTER_MPI_LINK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Message kinds; each is also the MPI tag. */
enum cl_msg {
    CL_MSG_RUN_BEGIN = 1, /* 0 -> r: a run starts */
    CL_MSG_REQUEST = 2,   /* 0 -> r: one run on one of r's workers (wire.h) */
    CL_MSG_REPLY = 3,     /* r -> 0: its status and outputs (wire.h) */
    CL_MSG_HEARTBEAT = 4, /* 0 -> r, answered r -> 0 */
    CL_MSG_RUN_END = 5,   /* 0 -> r: the run ended, with its status (int32) */
};

struct cl_link;

/* A sleep that doubles from CL_BACKOFF_MIN_US to CL_BACKOFF_MAX_US while
 * nothing happens, and starts again at the minimum after any progress. */
#define CL_BACKOFF_MIN_US 50u
#define CL_BACKOFF_MAX_US 1000u
struct cl_backoff {
    uint32_t us;
};
static inline void cl_backoff_reset(struct cl_backoff *b) { b->us = CL_BACKOFF_MIN_US; }
/* Waits on `cv` (caller holds `mu`) for at most the current step, then
 * doubles the step. A signal of `cv` ends it early. */
void cl_backoff_wait(struct cl_backoff *b, pthread_cond_t *cv, pthread_mutex_t *mu);

/* Milliseconds of a monotonic clock. */
uint64_t cl_now_ms(void);

/* Opens the link on a duplicate of MPI_COMM_WORLD (collective, bounded by
 * `peer_timeout_ms`). INVALID_STATE when MPI is not initialised at
 * SERIALIZED or above; PEER_LOST; OUT_OF_HOST_MEMORY. */
int cl_link_open(uint32_t peer_timeout_ms, struct cl_link **out);
/* Frees the communicator and every send still pending (a lost peer's). */
void cl_link_close(struct cl_link *link);

int cl_link_rank(const struct cl_link *link);
int cl_link_size(const struct cl_link *link);
uint32_t cl_link_timeout_ms(const struct cl_link *link);

/* Every rank's `bytes` at `in` into out[rank * bytes]; collective and
 * bounded: PEER_LOST when a rank does not take part in time. */
int cl_link_allgather(struct cl_link *link, const void *in, void *out, size_t bytes);
/* A barrier, bounded the same way. */
int cl_link_barrier(struct cl_link *link);

/* Sends `len` bytes at `buf` (ownership transferred: freed once sent, or
 * at close) to `dst` as message `kind`. 0, PEER_LOST for a peer already
 * lost (buf freed), OUT_OF_HOST_MEMORY. */
int cl_link_send(struct cl_link *link, int dst, enum cl_msg kind, void *buf, size_t len);

/* Progresses pending sends and takes one arrived message from `src`
 * (-1: any rank), if any: 1 with *buf (the caller frees it), *len, *from
 * and *kind set; 0 when none; PEER_LOST when a peer failed while its
 * message was being received. Receiving refreshes the sender's liveness. */
int cl_link_poll(struct cl_link *link, int src, int *from, enum cl_msg *kind, void **buf,
                 size_t *len);

/* Waits (bounded by the peer timeout) until every pending send to a peer
 * not lost has completed. 0 or PEER_LOST. */
int cl_link_flush(struct cl_link *link);

/* Liveness: when `peer` was last heard from (cl_now_ms), marking a peer
 * lost, and asking whether it is. */
uint64_t cl_link_heard_ms(const struct cl_link *link, int peer);
void cl_link_touch(struct cl_link *link, int peer);
void cl_link_mark_lost(struct cl_link *link, int peer);
int cl_link_lost(const struct cl_link *link, int peer);

#endif /* SIMPLER_CLUSTER_MPI_LINK_H */
