/*
 * cluster/remote.c — rank 0 of a distributed cluster: the runs it places
 * on other ranks' workers, and the communication thread that sends their
 * requests, takes their replies and watches the peers (docs/cluster.md
 * section 9).
 *
 * Owns: the outbox (requests packed by whoever launches, sent by the
 * thread), the thread, heartbeats and the loss of a peer. Must not touch:
 * the TensorMap, dependencies (rank 0's orch.c and worker.c decide, as in
 * one process); MPI (through mpi_link.h only).
 *
 * Valid copies (docs/cluster.md section 9): the run's directory
 * (directory.h, in c->run) says which bytes each rank's mirrors hold; a
 * request sends only the read views its rank lacks, and marks what it
 * sends and what its member writes. Deciding, packing and queueing one
 * request happen under `pack_lock`, so requests to a rank go out in the
 * order their decisions were made: a later request that counts on bytes
 * an earlier one carries is received after it (MPI keeps the order of
 * one sender's messages to one receiver).
 *
 * Locks: `pack_lock`, then the cluster lock or `comm->mu` inside it;
 * `comm->mu` guards the outbox and `stop`; the cluster lock is never
 * taken while holding `comm->mu`.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "cluster/directory.h"
#include "cluster/mpi_link.h"
#include "cluster/wire.h"
#include "common/host_alloc.h"
#include "common/view.h"

struct cl_outgoing {
    struct cl_member *member; /* NULL: a message of the run itself */
    int dst;
    uint64_t epoch;           /* the directory's epoch of dst when packed */
    void *msg;
    size_t len;
    struct cl_outgoing *next;
};

struct cl_comm {
    struct simpler_cluster *cluster;
    pthread_mutex_t pack_lock; /* one request decided, packed and queued at a time */
    pthread_mutex_t mu;
    pthread_cond_t wake;      /* with mu: an outgoing request, or stop */
    struct cl_outgoing *out_head, *out_tail;
    bool stop;
    pthread_t thread;
    uint64_t next_heartbeat_ms;
    /* Counters the thread adds up; read after it is joined. */
    uint64_t bytes_sent, bytes_received;
};

/* The member a reply names, or NULL. Caller holds c->lock. */
static struct cl_member *member_of(struct simpler_cluster *c, uint32_t task, uint32_t member)
{
    if (task >= c->run.task_count || member >= c->run.tasks[task]->member_count)
        return NULL;
    return &c->run.tasks[task]->members[member];
}

/* Ends every request in flight to `rank` with PEER_LOST. */
static void peer_lost(struct cl_comm *comm, int rank)
{
    struct simpler_cluster *c = comm->cluster;
    cl_link_mark_lost(c->link, rank);
    for (;;) {
        struct cl_member *found = NULL;
        pthread_mutex_lock(&c->lock);
        for (uint32_t t = 0; t < c->run.task_count && !found; t++) {
            struct cl_task *task = c->run.tasks[t];
            for (uint32_t i = 0; i < task->member_count && !found; i++) {
                struct cl_member *m = &task->members[i];
                if (m->remote_in_flight && c->workers[m->worker].rank == rank)
                    found = m;
            }
        }
        pthread_mutex_unlock(&c->lock);
        if (!found)
            return;
        found->remote_in_flight = false;
        cl_remote_member_ended(&c->workers[found->worker], found, PTO_RUNTIME_ERR_PEER_LOST);
    }
}

/* A reply: the outputs into rank 0's buffers, then the member's end. */
static void take_reply(struct cl_comm *comm, int from, void *msg, size_t len)
{
    struct simpler_cluster *c = comm->cluster;
    struct cl_wire_reply head;
    struct cl_member *m = NULL;
    if (cl_wire_reply_head(msg, len, &head) == 0) {
        pthread_mutex_lock(&c->lock);
        m = member_of(c, head.task, head.member);
        pthread_mutex_unlock(&c->lock);
    }
    if (!m || !m->remote_in_flight || c->workers[m->worker].rank != from)
        return; /* not a request of ours in flight: nothing to end */
    int32_t status = head.status;
    /* The TensorMap keeps every other run off these bytes until the
     * member ends (below), as for a finalize in one process. */
    if (status == 0 && cl_wire_unpack_outputs(msg, len, &m->remote->args,
                                              m->remote->directions))
        status = PTO_RUNTIME_ERR_INTERNAL;
    comm->bytes_received += head.output_bytes;
    m->remote_in_flight = false;
    cl_remote_member_ended(&c->workers[m->worker], m, status);
}

/* Sends what the outbox holds. True when it held anything. */
static bool drain_outbox(struct cl_comm *comm)
{
    struct simpler_cluster *c = comm->cluster;
    pthread_mutex_lock(&comm->mu);
    struct cl_outgoing *o = comm->out_head;
    comm->out_head = comm->out_tail = NULL;
    pthread_mutex_unlock(&comm->mu);
    bool any = o != NULL;
    while (o) {
        struct cl_outgoing *next = o->next;
        /* A request packed before a send to its rank failed may count on
         * bytes that never left: it fails too. */
        pthread_mutex_lock(&c->lock);
        bool stale = cl_dir_epoch(c->run.dir, o->dst) != o->epoch;
        pthread_mutex_unlock(&c->lock);
        int rc = stale ? (cl_link_lost(c->link, o->dst) ? PTO_RUNTIME_ERR_PEER_LOST
                                                         : PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY)
                       : cl_link_send(c->link, o->dst, CL_MSG_REQUEST, o->msg, o->len);
        if (stale)
            free(o->msg); /* cl_link_send takes it otherwise */
        if (rc && !stale) {
            pthread_mutex_lock(&c->lock);
            cl_dir_forget_rank(c->run.dir, o->dst);
            pthread_mutex_unlock(&c->lock);
        }
        if (rc == 0)
            o->member->remote_in_flight = true;
        else
            cl_remote_member_ended(&c->workers[o->member->worker], o->member, rc);
        free(o);
        o = next;
    }
    return any;
}

/* Heartbeats every timeout / 4; a peer silent for the timeout is lost. */
static void watch_peers(struct cl_comm *comm)
{
    struct simpler_cluster *c = comm->cluster;
    uint64_t now = cl_now_ms(), timeout = cl_link_timeout_ms(c->link);
    bool beat = now >= comm->next_heartbeat_ms;
    if (beat)
        comm->next_heartbeat_ms = now + (timeout / 4 ? timeout / 4 : 1);
    for (int r = 1; r < c->ranks; r++) {
        if (cl_link_lost(c->link, r))
            continue;
        if (now - cl_link_heard_ms(c->link, r) > timeout) {
            peer_lost(comm, r);
            continue;
        }
        void *hb = beat ? sp_host_malloc(1) : NULL;
        if (hb && cl_link_send(c->link, r, CL_MSG_HEARTBEAT, hb, 1) == PTO_RUNTIME_ERR_PEER_LOST)
            peer_lost(comm, r);
    }
}

static void *comm_main(void *arg)
{
    struct cl_comm *comm = arg;
    struct simpler_cluster *c = comm->cluster;
    struct cl_backoff backoff;
    cl_backoff_reset(&backoff);
    pthread_mutex_lock(&comm->mu);
    while (!comm->stop) {
        pthread_mutex_unlock(&comm->mu);
        bool progress = drain_outbox(comm);
        int from, rc;
        enum cl_msg kind;
        void *msg;
        size_t len;
        while ((rc = cl_link_poll(c->link, -1, &from, &kind, &msg, &len)) == 1) {
            progress = true;
            if (kind == CL_MSG_REPLY)
                take_reply(comm, from, msg, len);
            free(msg);
        }
        watch_peers(comm);
        pthread_mutex_lock(&comm->mu);
        if (progress) {
            cl_backoff_reset(&backoff);
        } else if (!comm->out_head && !comm->stop) {
            /* Ended early by cl_remote_launch's signal (a request to send)
             * or by cl_remote_run_end's stop; otherwise by the step's end,
             * to look at MPI again (MPI has no wake-up of its own). */
            cl_backoff_wait(&backoff, &comm->wake, &comm->mu);
        }
    }
    pthread_mutex_unlock(&comm->mu);
    return NULL;
}

/* Sends `kind` with an int32 to every rank but 0 still live. */
static void tell_ranks(struct simpler_cluster *c, enum cl_msg kind, int32_t value)
{
    for (int r = 1; r < c->ranks; r++) {
        int32_t *v = sp_host_malloc(sizeof *v);
        if (!v) {
            cl_link_mark_lost(c->link, r); /* it cannot be told: it will time out */
            continue;
        }
        *v = value;
        cl_link_send(c->link, r, kind, v, sizeof *v);
    }
}

int cl_remote_run_begin(struct simpler_cluster *c)
{
    struct cl_comm *comm = sp_host_calloc(1, sizeof *comm);
    if (!comm)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    comm->cluster = c;
    if (cl_dir_create(c->ranks, &c->run.dir)) {
        free(comm);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    pthread_mutex_init(&comm->pack_lock, NULL);
    pthread_mutex_init(&comm->mu, NULL);
    pthread_cond_init(&comm->wake, NULL);
    for (int r = 1; r < c->ranks; r++)
        cl_link_touch(c->link, r);
    tell_ranks(c, CL_MSG_RUN_BEGIN, 0);
    if (pthread_create(&comm->thread, NULL, comm_main, comm)) {
        tell_ranks(c, CL_MSG_RUN_END, PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
        cl_link_flush(c->link);
        pthread_cond_destroy(&comm->wake);
        pthread_mutex_destroy(&comm->mu);
        pthread_mutex_destroy(&comm->pack_lock);
        cl_dir_destroy(c->run.dir);
        c->run.dir = NULL;
        free(comm);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    c->comm = comm;
    return 0;
}

void cl_remote_run_end(struct simpler_cluster *c, int32_t status)
{
    struct cl_comm *comm = c->comm;
    pthread_mutex_lock(&comm->mu);
    comm->stop = true;
    pthread_cond_signal(&comm->wake);
    pthread_mutex_unlock(&comm->mu);
    pthread_join(comm->thread, NULL);
    /* Every task ended, so no request is in flight or queued. */
    tell_ranks(c, CL_MSG_RUN_END, status);
    if (cl_link_flush(c->link)) {
        for (int r = 1; r < c->ranks; r++)
            cl_link_mark_lost(c->link, r); /* MPI_Finalize must not wait for them */
    }
    pthread_mutex_lock(&c->lock);
    c->run.info.bytes_sent += comm->bytes_sent;
    c->run.info.bytes_received += comm->bytes_received;
    cl_dir_destroy(c->run.dir); /* the serving ranks drop their mirrors */
    c->run.dir = NULL;
    pthread_mutex_unlock(&c->lock);
    pthread_cond_destroy(&comm->wake);
    pthread_mutex_destroy(&comm->mu);
    pthread_mutex_destroy(&comm->pack_lock);
    free(comm);
    c->comm = NULL;
}

/* ------------------------------------------------------- valid copies */


/* The byte range [*lo, *hi) of view `t` when its elements fill it (a
 * contiguous view): only those are tracked, so that a range marked valid
 * is one whose every byte travelled or was written. */
static bool dense_range(const struct simpler_tensor *t, uint64_t *lo, uint64_t *hi)
{
    struct sp_view_extent e;
    uint64_t n = 0;
    if (!sp_view_inside(t, &e) || !sp_view_numel(t, &n))
        return false;
    *lo = (uint64_t)e.first_byte;
    *hi = (uint64_t)e.last_byte + 1;
    return n * simpler_dtype_size(t->dtype) == *hi - *lo;
}

void cl_remote_member_done(struct simpler_cluster *c, const struct cl_member *m, int32_t status)
{
    int writer = c->workers[m->worker].rank;
    for (uint32_t i = 0; i < m->write_count; i++) {
        const struct cl_write *w = &m->writes[i];
        uint32_t id;
        if (!cl_dir_find(c->run.dir, w->base, &id))
            continue; /* a buffer no rank was sent: nothing held */
        cl_dir_written(c->run.dir, id, writer, w->lo, w->hi);
        if (status != 0)
            cl_dir_invalidate(c->run.dir, id, writer, w->lo, w->hi); /* rank 0: a no-op */
    }
}

int cl_remote_launch(struct cl_worker *w, struct cl_member *m)
{
    struct simpler_cluster *c = w->cluster;
    struct cl_comm *comm = c->comm;
    const struct cl_remote_call *call = m->remote;
    const struct simpler_args *a = &call->args;
    uint32_t mirror[SIMPLER_CALLABLE_MAX_TENSORS];
    bool sent[SIMPLER_CALLABLE_MAX_TENSORS] = {false}, dense[SIMPLER_CALLABLE_MAX_TENSORS];
    uint64_t lo[SIMPLER_CALLABLE_MAX_TENSORS], hi[SIMPLER_CALLABLE_MAX_TENSORS];
    struct cl_outgoing *o = sp_host_calloc(1, sizeof *o);
    if (!o)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    int rc = 0;
    pthread_mutex_lock(&comm->pack_lock);
    /* What the rank lacks: a read view it does not hold whole. */
    pthread_mutex_lock(&c->lock);
    for (uint32_t i = 0; i < a->tensor_count && !rc; i++) {
        const struct simpler_tensor *t = &a->tensors[i];
        rc = cl_dir_buffer_id(c->run.dir, t->addr, t->buffer_bytes, &mirror[i]);
        dense[i] = dense_range(t, &lo[i], &hi[i]);
        sent[i] = cl_reads(call->directions[i]) &&
                  !(dense[i] && cl_dir_valid(c->run.dir, mirror[i], w->rank, lo[i], hi[i]));
    }
    pthread_mutex_unlock(&c->lock);
    uint64_t payload = 0;
    if (!rc)
        rc = cl_wire_pack_request(call, m->task->index, (uint32_t)(m - m->task->members), mirror,
                                  sent, &o->msg, &o->len, &payload);
    if (rc) {
        pthread_mutex_unlock(&comm->pack_lock);
        free(o);
        return rc;
    }
    /* What it holds once this request is in: what it was sent, and what
     * the member writes there (cl_remote_member_done takes that back if
     * the member fails). */
    pthread_mutex_lock(&c->lock);
    for (uint32_t i = 0; i < a->tensor_count; i++)
        if (dense[i] && (sent[i] || cl_writes(call->directions[i])))
            cl_dir_mark(c->run.dir, mirror[i], w->rank, lo[i], hi[i]);
    o->epoch = cl_dir_epoch(c->run.dir, w->rank);
    pthread_mutex_unlock(&c->lock);
    o->member = m;
    o->dst = w->rank;
    pthread_mutex_lock(&comm->mu);
    comm->bytes_sent += payload;
    if (comm->out_tail)
        comm->out_tail->next = o;
    else
        comm->out_head = o;
    comm->out_tail = o;
    /* Ends comm_main's backoff wait. */
    pthread_cond_signal(&comm->wake);
    pthread_mutex_unlock(&comm->mu);
    pthread_mutex_unlock(&comm->pack_lock);
    return 0;
}
