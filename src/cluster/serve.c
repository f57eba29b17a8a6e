/*
 * cluster/serve.c — a serving rank of a distributed cluster: runs rank 0's
 * requests on this rank's workers and replies (docs/cluster.md section 9).
 *
 * Owns: simpler_cluster_serve and its loop, and the run's mirrors. The
 * loop is the orchestration of a local cluster run (orch.c): each request
 * becomes a directed submit over the mirrors of rank 0's buffers (wire.h),
 * kept for the whole run; rank 0 sends a run only once its dependencies
 * are met, so this rank's TensorMap finds every earlier run on those
 * bytes ended, and a request writes into a mirror only elements no run in
 * flight here writes (rank 0 orders those runs). Each
 * task's end (worker.c appends it to served_ended) becomes a reply. The
 * loop is the only thread of this rank that calls MPI. Must not touch:
 * dependencies, rank 0's side (remote.c).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "cluster/mpi_link.h"
#include "cluster/wire.h"
#include "common/host_alloc.h"

/* One request this rank runs: rank 0's names for it, and its args. */
struct served {
    uint32_t task, member;
    struct cl_served_call *call;
};

struct serve_state {
    struct simpler_cluster *cluster;
    struct served *records; /* by local task index */
    uint32_t record_capacity;
    uint64_t submitted, replied;
    uint32_t tasks;         /* records[0..tasks) */
    int32_t status;         /* rank 0's run status, or PEER_LOST */
    bool ended;             /* RUN_END came */
    struct cl_mirrors mirrors; /* rank 0's buffers, by mirror id, for the run */
    int32_t mirrors_broken;    /* a request's unpacking failed: its code */
    int32_t fatal;             /* a reply could not be sent: this rank leaves the run */
    struct simpler_cluster_serve_info info;
};

static void reply(struct serve_state *s, uint32_t task, uint32_t member, int32_t status,
                  const struct cl_served_call *call)
{
    struct simpler_cluster *c = s->cluster;
    const uint8_t *directions = c->callables[call->head.callable_id]->directions;
    void *msg;
    size_t len;
    s->replied++;
    int rc = cl_wire_pack_reply(task, member, status, &call->args, directions, &msg, &len);
    if (!rc && len > (size_t)INT_MAX) {
        /* More than one MPI message holds (cl_link_send): the run fails. */
        free(msg);
        rc = PTO_RUNTIME_ERR_CAPACITY_EXCEEDED;
    }
    if (rc) {
        /* No memory for the outputs, or too many: rank 0 learns the run
         * failed, with the code. */
        status = rc;
        if (cl_wire_pack_reply(task, member, status, &call->args, directions, &msg, &len)) {
            /* Not even a head (a few bytes): rank 0 would wait for this
             * run while the heartbeats say this rank is alive. This rank
             * leaves the run instead, silent, so rank 0 ends it with
             * PEER_LOST within its timeout. */
            s->info.runs_failed++;
            s->fatal = PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
            return;
        }
    }
    s->info.runs_failed += status != 0;
    if (status == 0)
        s->info.bytes_sent += len - sizeof(struct cl_wire_reply);
    cl_link_send(c->link, 0, CL_MSG_REPLY, msg, len);
}

/* A request of rank 0: submitted on its worker, or refused at once. */
static void take_request(struct serve_state *s, struct simpler_cluster_orch *o, const void *msg,
                         size_t len)
{
    struct simpler_cluster *c = s->cluster;
    struct cl_served_call *call = NULL;
    uint64_t payload = 0;
    struct cl_wire_reply bad = {0};
    if (len >= sizeof(struct cl_wire_request)) {
        memcpy(&bad.task, msg, sizeof bad.task);
        memcpy(&bad.member, (const uint8_t *)msg + sizeof bad.task, sizeof bad.member);
    }
    /* A request whose elements could not land leaves the mirrors behind
     * what rank 0's directory believes, and later requests may count on
     * them: from then on every request of the run fails with its code. */
    int rc = s->mirrors_broken;
    if (!rc && (rc = cl_wire_unpack_request(msg, len, &s->mirrors, &call, &payload)))
        s->mirrors_broken = rc;
    if (!rc && (call->head.worker >= c->worker_count ||
                c->workers[call->head.worker].rank != c->rank ||
                call->head.callable_id < 0 ||
                call->head.callable_id >= SIMPLER_MAX_CALLABLE_IDS ||
                !c->callables[call->head.callable_id]))
        rc = PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    s->info.bytes_received += payload;
    s->submitted++;
    if (!rc) {
        pthread_mutex_lock(&c->lock);
        rc = cl_grow((void **)&c->served_ended, &c->served_ended_capacity, s->submitted,
                     sizeof *c->served_ended);
        pthread_mutex_unlock(&c->lock);
    }
    uint64_t task_count = s->submitted;
    if (!rc)
        rc = cl_grow((void **)&s->records, &s->record_capacity, task_count, sizeof *s->records);
    simpler_cluster_task_t handle = 0;
    if (!rc) {
        const struct simpler_cluster_member m = {.worker = call->head.worker, .args = &call->args};
        rc = simpler_cluster_submit_group(o, call->head.callable_id, &m, 1,
                                          call->head.has_config ? &call->head.config : NULL,
                                          &handle);
    }
    if (rc) {
        s->info.runs++;
        if (call) {
            reply(s, call->head.task, call->head.member, rc, call);
        } else {
            void *head = sp_host_malloc(sizeof bad);
            bad.status = rc;
            s->replied++;
            if (head) {
                memcpy(head, &bad, sizeof bad);
                cl_link_send(c->link, 0, CL_MSG_REPLY, head, sizeof bad);
            } else {
                s->fatal = PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY; /* as in reply() */
            }
        }
        cl_served_call_free(call);
        return;
    }
    s->info.runs++;
    s->tasks = (uint32_t)handle;
    s->records[handle - 1] =
        (struct served){.task = call->head.task, .member = call->head.member, .call = call};
}

/* Replies for every task that ended since the last look. */
static bool reply_ended(struct serve_state *s)
{
    struct simpler_cluster *c = s->cluster;
    uint32_t ended[64];
    int32_t status[64];
    uint32_t n;
    bool any = false;
    do {
        pthread_mutex_lock(&c->lock);
        n = c->served_ended_count < 64 ? c->served_ended_count : 64;
        for (uint32_t i = 0; i < n; i++) {
            ended[i] = c->served_ended[i];
            status[i] = c->run.tasks[ended[i]]->status;
        }
        if (n)
            memmove(c->served_ended, c->served_ended + n,
                    (c->served_ended_count - n) * sizeof *c->served_ended);
        c->served_ended_count -= n;
        pthread_mutex_unlock(&c->lock);
        for (uint32_t i = 0; i < n; i++) {
            struct served *r = &s->records[ended[i]];
            /* The mirrors stay until the run ends: freed, their addresses
             * could come back for another mirror, which this rank's
             * TensorMap would take for the same (or an overlapping)
             * buffer of an earlier task. */
            reply(s, r->task, r->member, status[i], r->call);
        }
        any |= n > 0;
    } while (n == 64);
    return any;
}

static int serve_orch(struct simpler_cluster_orch *o, void *user)
{
    struct serve_state *s = user;
    struct simpler_cluster *c = s->cluster;
    struct cl_backoff backoff;
    cl_backoff_reset(&backoff);
    while (!s->ended || s->replied < s->submitted) {
        bool progress = reply_ended(s);
        if (s->fatal) {
            cl_link_mark_lost(c->link, 0); /* nothing more goes to rank 0 */
            s->status = s->fatal;
            return 0;
        }
        int from, rc;
        enum cl_msg kind;
        void *msg;
        size_t len;
        while (!s->ended && (rc = cl_link_poll(c->link, 0, &from, &kind, &msg, &len)) == 1) {
            progress = true;
            if (kind == CL_MSG_REQUEST) {
                take_request(s, o, msg, len);
            } else if (kind == CL_MSG_HEARTBEAT) {
                void *hb = sp_host_malloc(1);
                if (hb)
                    cl_link_send(c->link, 0, CL_MSG_HEARTBEAT, hb, 1);
            } else if (kind == CL_MSG_RUN_END && len == sizeof s->status) {
                memcpy(&s->status, msg, sizeof s->status);
                s->ended = true;
            }
            free(msg);
        }
        if (!s->ended && cl_now_ms() - cl_link_heard_ms(c->link, 0) > cl_link_timeout_ms(c->link)) {
            /* Rank 0 is gone: what runs here still ends (run's wait), but
             * nobody will take its replies. */
            cl_link_mark_lost(c->link, 0);
            s->status = PTO_RUNTIME_ERR_PEER_LOST;
            return 0;
        }
        pthread_mutex_lock(&c->lock);
        if (progress) {
            cl_backoff_reset(&backoff);
        } else if (c->served_ended_count == 0) {
            /* Ended early by cl_task_end's broadcast (a task to reply
             * for); otherwise by the step's end, to look at MPI again. */
            cl_backoff_wait(&backoff, &c->task_ended, &c->lock);
        }
        pthread_mutex_unlock(&c->lock);
    }
    return 0;
}

/* Waits, bounded by the peer timeout, for rank 0's RUN_BEGIN. */
static int wait_run_begin(struct simpler_cluster *c)
{
    struct cl_backoff backoff;
    cl_backoff_reset(&backoff);
    cl_link_touch(c->link, 0);
    for (;;) {
        int from, rc;
        enum cl_msg kind;
        void *msg;
        size_t len;
        while ((rc = cl_link_poll(c->link, 0, &from, &kind, &msg, &len)) == 1) {
            free(msg);
            if (kind == CL_MSG_RUN_BEGIN)
                return 0;
        }
        if (rc < 0)
            return rc;
        if (cl_now_ms() - cl_link_heard_ms(c->link, 0) > cl_link_timeout_ms(c->link)) {
            cl_link_mark_lost(c->link, 0);
            return PTO_RUNTIME_ERR_PEER_LOST;
        }
        pthread_mutex_lock(&c->lock);
        cl_backoff_wait(&backoff, &c->task_ended, &c->lock);
        pthread_mutex_unlock(&c->lock);
    }
}

int simpler_cluster_serve(struct simpler_cluster *cluster, struct simpler_cluster_serve_info *info)
{
    if (!cluster)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct simpler_cluster *c = cluster;
    pthread_mutex_lock(&c->lock);
    bool refused = !c->link || c->rank == 0 || c->serving || c->run.active || c->threads_stopped;
    pthread_mutex_unlock(&c->lock);
    if (refused)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    if (cl_link_lost(c->link, 0))
        return PTO_RUNTIME_ERR_PEER_LOST;
    int rc = wait_run_begin(c);
    if (rc)
        return rc;
    struct serve_state s = {.cluster = c};
    pthread_mutex_lock(&c->lock);
    c->serving = true;
    c->served_ended_count = 0;
    pthread_mutex_unlock(&c->lock);
    rc = simpler_cluster_run(c, serve_orch, &s, NULL);
    pthread_mutex_lock(&c->lock);
    c->serving = false;
    pthread_mutex_unlock(&c->lock);
    /* Every request and mirror (kept for the whole run: every task of
     * this rank's run has ended). */
    for (uint32_t i = 0; i < s.tasks; i++)
        cl_served_call_free(s.records[i].call);
    free(s.records);
    cl_mirrors_clear(&s.mirrors);
    free(c->served_ended);
    c->served_ended = NULL;
    c->served_ended_capacity = c->served_ended_count = 0;
    if (info)
        *info = s.info;
    /* A run that failed here already told rank 0 its code: the result is
     * rank 0's. */
    (void)rc;
    if (s.fatal)
        return s.fatal;
    return cl_link_lost(c->link, 0) ? PTO_RUNTIME_ERR_PEER_LOST : s.status;
}
