/*
 * cluster/mpi_link.c — the distributed cluster's transport on MPI
 * (mpi_link.h), and simpler_cluster_mpi_init/finalize.
 *
 * Owns: the communicator, the sends in flight, peers' liveness. Must not
 * touch: tasks, workers, runs. The only file of the layer with mpi.h.
 */
#include "cluster/mpi_link.h"

#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/host_tensormap.h"
#include "common/host_alloc.h"
#include "simpler/cluster.h"
#include "simpler/status.h"

struct cl_send {
    void *buf;
    int dst;
};

struct cl_link {
    MPI_Comm comm;
    int rank, size;
    uint32_t timeout_ms;
    MPI_Request *requests; /* pending sends; sends[i] owns requests[i]'s buffer */
    struct cl_send *sends;
    uint32_t pending, request_capacity, send_capacity;
    uint64_t *heard_ms;    /* per rank */
    uint8_t *lost;         /* per rank */
};

/* Set once any link of the process lost a peer: MPI_Finalize would wait
 * for it (simpler_cluster_mpi_finalize then refuses). */
static atomic_bool any_peer_lost;
/* Whether simpler_cluster_mpi_init initialised MPI (and so finalizes it). */
static bool we_initialised;

uint64_t cl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void cl_backoff_wait(struct cl_backoff *b, pthread_cond_t *cv, pthread_mutex_t *mu)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)b->us * 1000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
    b->us = b->us * 2 > CL_BACKOFF_MAX_US ? CL_BACKOFF_MAX_US : b->us * 2;
}

/* Sleeps one backoff step without a condition variable. */
static void backoff_sleep(struct cl_backoff *b)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)b->us * 1000};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
    b->us = b->us * 2 > CL_BACKOFF_MAX_US ? CL_BACKOFF_MAX_US : b->us * 2;
}

/* ----------------------------------------------------------- init, fini */

static void ignore_if_default(int sig)
{
    struct sigaction old;
    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_IGN;
        sigaction(sig, &sa, NULL);
    }
}

int simpler_cluster_mpi_init(int *argc, char ***argv, int *rank, int *ranks)
{
    int initialised = 0, provided = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
        if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
            return PTO_RUNTIME_ERR_INTERNAL;
        we_initialised = true;
    } else {
        MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_SERIALIZED)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    ignore_if_default(SIGPIPE);
    /* MPICH's hydra tells survivors of a dead rank by SIGUSR1, and MPICH's
     * own handler (or the default action) ends them: the peer timeout is
     * what reports a loss here, as PEER_LOST. */
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGUSR1, &ignore, NULL);
    if (rank)
        MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (ranks)
        MPI_Comm_size(MPI_COMM_WORLD, ranks);
    return 0;
}

int simpler_cluster_mpi_finalize(void)
{
    if (atomic_load_explicit(&any_peer_lost, memory_order_relaxed))
        return PTO_RUNTIME_ERR_PEER_LOST;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (we_initialised && !finalized)
        MPI_Finalize();
    we_initialised = false;
    return 0;
}

/* ----------------------------------------------------------------- link */

int cl_link_rank(const struct cl_link *link) { return link->rank; }
int cl_link_size(const struct cl_link *link) { return link->size; }
uint32_t cl_link_timeout_ms(const struct cl_link *link) { return link->timeout_ms; }
uint64_t cl_link_heard_ms(const struct cl_link *link, int peer) { return link->heard_ms[peer]; }
void cl_link_touch(struct cl_link *link, int peer) { link->heard_ms[peer] = cl_now_ms(); }
int cl_link_lost(const struct cl_link *link, int peer) { return link->lost[peer]; }

void cl_link_mark_lost(struct cl_link *link, int peer)
{
    link->lost[peer] = 1;
    atomic_store_explicit(&any_peer_lost, true, memory_order_relaxed);
}

static int wait_bounded(struct cl_link *link, MPI_Request *req);

int cl_link_open(uint32_t peer_timeout_ms, struct cl_link **out)
{
    int initialised = 0, provided = 0;
    MPI_Initialized(&initialised);
    if (!initialised)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_SERIALIZED)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    struct cl_link *l = sp_host_calloc(1, sizeof *l);
    if (!l)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    l->timeout_ms = peer_timeout_ms;
    MPI_Comm_size(MPI_COMM_WORLD, &l->size);
    MPI_Comm_rank(MPI_COMM_WORLD, &l->rank);
    l->heard_ms = sp_host_calloc((size_t)l->size, sizeof *l->heard_ms);
    l->lost = sp_host_calloc((size_t)l->size, 1);
    if (!l->heard_ms || !l->lost) {
        free(l->heard_ms);
        free(l->lost);
        free(l);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    /* Collective over the world, bounded as every other collective is: a
     * rank that never comes ends the wait with PEER_LOST after the peer
     * timeout. MPI_ERRORS_RETURN on the world first, so that a failure
     * of the duplication comes back as a code. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Request req;
    int rc = MPI_Comm_idup(MPI_COMM_WORLD, &l->comm, &req) == MPI_SUCCESS
                 ? wait_bounded(l, &req)
                 : PTO_RUNTIME_ERR_PEER_LOST;
    if (rc) {
        /* Timed out, the duplication is still MPI's and writes l->comm
         * when it completes: l is left to it (the process is expected to
         * exit: simpler_cluster_mpi_finalize refuses after a loss). */
        if (!atomic_load_explicit(&any_peer_lost, memory_order_relaxed)) {
            free(l->heard_ms);
            free(l->lost);
            free(l);
        }
        return PTO_RUNTIME_ERR_PEER_LOST;
    }
    MPI_Comm_set_errhandler(l->comm, MPI_ERRORS_RETURN);
    for (int r = 0; r < l->size; r++)
        l->heard_ms[r] = cl_now_ms();
    *out = l;
    return 0;
}

void cl_link_close(struct cl_link *link)
{
    if (!link)
        return;
    for (uint32_t i = 0; i < link->pending; i++) {
        /* Only a lost peer's sends are left: nothing will take them. */
        MPI_Request_free(&link->requests[i]);
        free(link->sends[i].buf);
    }
    free(link->requests);
    free(link->sends);
    MPI_Comm_free(&link->comm);
    free(link->heard_ms);
    free(link->lost);
    free(link);
}

/* Waits for `req` with the backoff, at most the peer timeout. */
static int wait_bounded(struct cl_link *link, MPI_Request *req)
{
    struct cl_backoff b;
    cl_backoff_reset(&b);
    uint64_t deadline = cl_now_ms() + link->timeout_ms;
    for (;;) {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return PTO_RUNTIME_ERR_PEER_LOST;
        if (done)
            return 0;
        if (cl_now_ms() >= deadline) {
            /* The request is left to MPI: a collective's cannot be freed
             * or cancelled, and the process is not expected to finalize
             * (simpler_cluster_mpi_finalize refuses after a loss). */
            atomic_store_explicit(&any_peer_lost, true, memory_order_relaxed);
            return PTO_RUNTIME_ERR_PEER_LOST;
        }
        backoff_sleep(&b);
    }
}

int cl_link_allgather(struct cl_link *link, const void *in, void *out, size_t bytes)
{
    MPI_Request req;
    if (MPI_Iallgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, link->comm, &req) !=
        MPI_SUCCESS)
        return PTO_RUNTIME_ERR_PEER_LOST;
    return wait_bounded(link, &req);
}

int cl_link_barrier(struct cl_link *link)
{
    MPI_Request req;
    if (MPI_Ibarrier(link->comm, &req) != MPI_SUCCESS)
        return PTO_RUNTIME_ERR_PEER_LOST;
    return wait_bounded(link, &req);
}

/* Tests the pending sends and frees those that completed. */
static void progress_sends(struct cl_link *link)
{
    if (!link->pending)
        return;
    int done_count = 0;
    int done[64];
    MPI_Status statuses[64];
    int n = link->pending < 64 ? (int)link->pending : 64;
    if (MPI_Testsome(n, link->requests, &done_count, done, statuses) !=
            MPI_SUCCESS ||
        done_count == MPI_UNDEFINED)
        return;
    for (int i = 0; i < done_count; i++) {
        free(link->sends[done[i]].buf);
        link->sends[done[i]].buf = NULL;
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < link->pending; i++) {
        if (link->requests[i] == MPI_REQUEST_NULL && !link->sends[i].buf)
            continue;
        link->requests[kept] = link->requests[i];
        link->sends[kept++] = link->sends[i];
    }
    link->pending = kept;
}

int cl_link_send(struct cl_link *link, int dst, enum cl_msg kind, void *buf, size_t len)
{
    if (link->lost[dst]) {
        free(buf);
        return PTO_RUNTIME_ERR_PEER_LOST;
    }
    if (len > (size_t)INT_MAX) {
        /* One MPI message counts its bytes in an int: a request carrying
         * more (a run reading over 2 GiB another rank lacks) is refused. */
        free(buf);
        return PTO_RUNTIME_ERR_CAPACITY_EXCEEDED;
    }
    uint64_t need = (uint64_t)link->pending + 1;
    if (cl_grow((void **)&link->requests, &link->request_capacity, need, sizeof(MPI_Request)) ||
        cl_grow((void **)&link->sends, &link->send_capacity, need, sizeof(struct cl_send))) {
        free(buf);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    MPI_Request req;
    if (MPI_Isend(buf, (int)len, MPI_BYTE, dst, (int)kind, link->comm, &req) != MPI_SUCCESS) {
        free(buf);
        cl_link_mark_lost(link, dst);
        return PTO_RUNTIME_ERR_PEER_LOST;
    }
    link->requests[link->pending] = req;
    link->sends[link->pending++] = (struct cl_send){.buf = buf, .dst = dst};
    return 0;
}

int cl_link_poll(struct cl_link *link, int src, int *from, enum cl_msg *kind, void **buf,
                 size_t *len)
{
    progress_sends(link);
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    if (MPI_Improbe(src < 0 ? MPI_ANY_SOURCE : src, MPI_ANY_TAG, link->comm, &flag, &msg, &st) !=
        MPI_SUCCESS)
        return PTO_RUNTIME_ERR_PEER_LOST;
    if (!flag)
        return 0;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    void *data = sp_host_malloc(count ? (size_t)count : 1);
    if (!data)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    MPI_Request req;
    int rc = MPI_Imrecv(data, count, MPI_BYTE, &msg, &req) == MPI_SUCCESS
                 ? wait_bounded(link, &req)
                 : PTO_RUNTIME_ERR_PEER_LOST;
    if (rc) {
        cl_link_mark_lost(link, st.MPI_SOURCE);
        free(data);
        return rc;
    }
    link->heard_ms[st.MPI_SOURCE] = cl_now_ms();
    *from = st.MPI_SOURCE;
    *kind = (enum cl_msg)st.MPI_TAG;
    *buf = data;
    *len = (size_t)count;
    return 1;
}

int cl_link_flush(struct cl_link *link)
{
    struct cl_backoff b;
    cl_backoff_reset(&b);
    uint64_t deadline = cl_now_ms() + link->timeout_ms;
    for (;;) {
        progress_sends(link);
        bool live = false;
        for (uint32_t i = 0; i < link->pending && !live; i++)
            live = !link->lost[link->sends[i].dst];
        if (!live)
            return 0;
        if (cl_now_ms() >= deadline)
            return PTO_RUNTIME_ERR_PEER_LOST;
        backoff_sleep(&b);
    }
}
