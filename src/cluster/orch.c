/*
 * cluster/orch.c — a cluster run: the orchestration's submits, its waits,
 * and the run's end.
 *
 * Owns: checking a submit, turning it into a task (prepared calls on its
 * workers, its accesses, its producers from the host TensorMap) and
 * committing it all or nothing; task waits and queries; the end of a run
 * (waiting for every task, releasing what the tasks hold). Must not touch:
 * launching and completing runs (worker.c), the workers' contexts' life
 * (cluster.c).
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "cluster/wire.h"
#include "common/host_alloc.h"
#include "common/view.h"

/* -------------------------------------------------------------- checks */

/* The argument checks of one member that need no state. */
static int check_member(const struct simpler_cluster *c, const struct simpler_cluster_member *m,
                        uint64_t *seen)
{
    const struct simpler_args *a = m->args;
    if (m->worker >= c->worker_count || (*seen & (UINT64_C(1) << m->worker)) || !a ||
        a->tensor_count > SIMPLER_CALLABLE_MAX_TENSORS || (a->tensor_count && !a->tensors))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *seen |= UINT64_C(1) << m->worker;
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        const struct simpler_tensor *t = &a->tensors[i];
        /* Host tensors only: a device tensor is one device's memory. */
        if (t->address_space != SIMPLER_MEM_HOST || !t->addr || !sp_view_inside(t, NULL))
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
    return 0;
}

static int check_args(const struct simpler_cluster_orch *orch, int32_t callable_id,
                      const struct simpler_cluster_member *members, uint32_t count,
                      const simpler_cluster_task_t *task)
{
    if (!orch || !orch->cluster || !members || !task || count < 1 ||
        count > SIMPLER_CLUSTER_MAX_WORKERS || callable_id < 0 ||
        callable_id >= SIMPLER_MAX_CALLABLE_IDS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < count; i++) {
        int rc = check_member(orch->cluster, &members[i], &seen);
        if (rc)
            return rc;
    }
    return 0;
}

/* The run's state for a submit of `callable_id`; copies its signature to
 * *callable. Caller holds c->lock. */
static int check_state(const struct simpler_cluster *c, int32_t callable_id,
                       struct cl_callable *callable)
{
    if (!c->run.active)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    if (!c->callables[callable_id])
        return PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT;
    if (c->run.task_count >= c->max_tasks)
        return PTO_RUNTIME_ERR_CAPACITY_EXCEEDED;
    if (callable)
        *callable = *c->callables[callable_id];
    return 0;
}

/* ------------------------------------------------------------ accesses */

/*
 * The accesses of one member (docs/cluster.md section 3): one read per
 * buffer its IN/INOUT views read (the span staging copies), one write per
 * OUT/INOUT view. Appended at out[*count...].
 */
static void member_accesses(const struct simpler_args *a, const struct cl_callable *callable,
                            struct cl_access *out, uint32_t *count)
{
    uint32_t first = *count;
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        const struct simpler_tensor *t = &a->tensors[i];
        uint8_t dir = callable->directions[i];
        if (dir == SIMPLER_DIR_IN || dir == SIMPLER_DIR_INOUT) {
            uint32_t k = first;
            while (k < *count && (out[k].write || out[k].region.addr != t->addr))
                k++;
            bool fresh = k == *count;
            if (fresh)
                (*count)++;
            cl_access_read_span(&out[k], t, fresh);
        }
    }
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        uint8_t dir = callable->directions[i];
        if (dir == SIMPLER_DIR_OUT || dir == SIMPLER_DIR_INOUT)
            cl_access_write(&out[(*count)++], &a->tensors[i]);
    }
}

/* The members of a group run at once: INVALID_ARGUMENT when a write of
 * one may touch what another reads or writes. `member_end[i]` is one past
 * member i's last access. */
static int check_group(const struct cl_access *acc, const uint32_t *member_end, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        for (uint32_t j = i + 1; j < count; j++) {
            for (uint32_t a = i ? member_end[i - 1] : 0; a < member_end[i]; a++) {
                for (uint32_t b = member_end[j - 1]; b < member_end[j]; b++) {
                    if ((acc[a].write || acc[b].write) && cl_access_conflict(&acc[a], &acc[b]))
                        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
                }
            }
        }
    }
    return 0;
}

/* Buffers must be the same or disjoint: among the known ones and among
 * this submit's. Caller holds c->lock. */
static int check_buffers(const struct cl_tensormap *map, const struct cl_access *acc,
                         uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        const struct simpler_tensor *t = &acc[i].region;
        if (cl_tensormap_check_buffer(map, t))
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        for (uint32_t k = 0; k < i; k++) {
            const struct simpler_tensor *u = &acc[k].region;
            bool same = u->addr == t->addr && u->buffer_bytes == t->buffer_bytes;
            /* Both ends fit: sp_view_inside checked each buffer's. */
            if (!same && t->addr < u->addr + u->buffer_bytes &&
                u->addr < t->addr + t->buffer_bytes)
                return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        }
    }
    return 0;
}

/* -------------------------------------------------------------- submit */

/*
 * Prepares member `m`: on this rank's worker, a prepared call; on another
 * rank's, the same checks by a prepare on this rank's first worker
 * (released at once: the callable is on every worker of every rank) and a
 * copy of the args and config to send when it launches.
 */
static int prepare_member(struct simpler_cluster *c, struct cl_member *m, int32_t callable_id,
                          const struct simpler_args *args, const struct simpler_run_config *config,
                          const struct cl_callable *callable)
{
    struct cl_worker *w = &c->workers[m->worker];
    if (w->ctx)
        return simpler_prepare_call(w->ctx, callable_id, args, config, &m->call);
    struct simpler_context *checker = c->workers[c->first_local].ctx;
    struct simpler_prepared_call *call = NULL;
    int rc = simpler_prepare_call(checker, callable_id, args, config, &call);
    if (rc)
        return rc;
    simpler_release_call(checker, call);
    return cl_remote_call_make(callable_id, m->worker, args, config, callable->directions,
                               &m->remote);
}

/* Releases the prepared calls of `t`'s first `count` members and frees it. */
static void task_discard(struct simpler_cluster *c, struct cl_task *t, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        if (t->members[i].call)
            simpler_release_call(c->workers[t->members[i].worker].ctx, t->members[i].call);
        cl_remote_call_free(t->members[i].remote);
    }
    free(t->dependents);
    free(t->writes);
    free(t);
}

/* Rank 0 of a distributed cluster: keeps each member's writes (their
 * views' extents), which its end makes stale on the other ranks
 * (cl_remote_member_done). `member_end[i]` is one past member i's last
 * access. 0 or OUT_OF_HOST_MEMORY. */
static int keep_writes(struct cl_task *t, const struct cl_access *acc, const uint32_t *member_end)
{
    uint32_t writes = 0, a = 0;
    for (uint32_t i = 0; i < member_end[t->member_count - 1]; i++)
        writes += acc[i].write;
    if (!writes)
        return 0;
    if (!(t->writes = sp_host_malloc((size_t)writes * sizeof *t->writes)))
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    struct cl_write *w = t->writes;
    for (uint32_t i = 0; i < t->member_count; i++) {
        t->members[i].writes = w;
        for (; a < member_end[i]; a++) {
            if (!acc[a].write)
                continue;
            *w++ = (struct cl_write){.base = acc[a].region.addr,
                                     .lo = (uint64_t)acc[a].extent.first_byte,
                                     .hi = (uint64_t)acc[a].extent.last_byte + 1};
            t->members[i].write_count++;
        }
    }
    return 0;
}

/* Makes room for committing `t` with `producers`: the task table and each
 * unfinished producer's dependents. Caller holds c->lock. */
static int reserve_task(struct simpler_cluster *c, const struct cl_producer *producers,
                        uint32_t producer_count)
{
    struct cl_run *r = &c->run;
    int rc = cl_grow((void **)&r->tasks, &r->task_capacity, (uint64_t)r->task_count + 1,
                     sizeof *r->tasks);
    for (uint32_t i = 0; i < producer_count && !rc; i++) {
        struct cl_task *p = r->tasks[producers[i].task];
        rc = cl_grow((void **)&p->dependents, &p->dependent_capacity,
                     (uint64_t)p->dependent_count + 1, sizeof *p->dependents);
    }
    return rc;
}

/* Publishes `t` (everything reserved): its edges, its state, its
 * counters. Returns the workers to pump. Caller holds c->lock. */
static uint64_t commit_task(struct simpler_cluster *c, struct cl_task *t,
                            const struct cl_producer *producers, uint32_t producer_count)
{
    struct cl_run *r = &c->run;
    uint64_t to_pump = 0;
    bool doomed = false;
    r->tasks[r->task_count++] = t;
    r->info.tasks_submitted++;
    r->info.dependencies += producer_count;
    t->dependencies = producer_count;
    for (uint32_t i = 0; i < producer_count; i++) {
        const struct cl_producer *pr = &producers[i];
        r->info.raw += (pr->reasons & CL_DEP_RAW) != 0;
        r->info.war += (pr->reasons & CL_DEP_WAR) != 0;
        r->info.waw += (pr->reasons & CL_DEP_WAW) != 0;
        struct cl_task *p = r->tasks[pr->task];
        if (p->state == SIMPLER_CLUSTER_TASK_DONE) {
            doomed = true; /* the lookup dropped every producer that succeeded */
            continue;
        }
        p->dependents[p->dependent_count++] = t->index;
        t->fanin_remaining++;
    }
    if (doomed) {
        /* Its producer failed or was cancelled: never launched. Its
         * accesses stay in the map, so what depends on it is cancelled. */
        t->state = SIMPLER_CLUSTER_TASK_DONE;
        t->status = PTO_RUNTIME_ERR_DEPENDENCY_FAILED;
        r->info.tasks_cancelled++;
        r->tasks_done++;
        pthread_cond_broadcast(&c->task_ended);
    } else if (t->fanin_remaining == 0) {
        cl_task_queue(c, t, &to_pump);
    }
    return to_pump;
}

/*
 * Looks up, reserves and commits task `t` with `acc` (its count accesses)
 * under c->lock. 0 with *to_pump set, or a code with nothing changed.
 */
static int enter_task(struct simpler_cluster *c, struct cl_task *t, int32_t callable_id,
                      struct cl_access *acc, uint32_t count, uint64_t *to_pump)
{
    struct cl_run *r = &c->run;
    struct cl_producer *producers = NULL;
    uint32_t producer_count = 0;
    int rc = check_state(c, callable_id, NULL);
    if (!rc)
        rc = check_buffers(&r->map, acc, count);
    if (rc)
        return rc;
    t->index = r->task_count;
    for (uint32_t i = 0; i < count; i++)
        acc[i].task = t->index;
    uint64_t bound = cl_tensormap_entries_of(&r->map, acc, count);
    if (bound > r->task_count)
        bound = r->task_count; /* one producer per earlier task at most */
    if (bound && !(producers = sp_host_malloc((size_t)bound * sizeof *producers)))
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    cl_tensormap_lookup(&r->map, acc, count, cl_task_succeeded, c, producers, &producer_count);
    if ((rc = reserve_task(c, producers, producer_count)) ||
        (rc = cl_tensormap_reserve(&r->map, acc, count))) {
        free(producers);
        return rc;
    }
    cl_tensormap_record(&r->map, acc, count);
    *to_pump = commit_task(c, t, producers, producer_count);
    free(producers);
    return 0;
}

int simpler_cluster_submit_group(struct simpler_cluster_orch *orch, int32_t callable_id,
                                 const struct simpler_cluster_member *members, uint32_t count,
                                 const struct simpler_run_config *config,
                                 simpler_cluster_task_t *task)
{
    int rc = check_args(orch, callable_id, members, count, task);
    if (rc)
        return rc;
    struct simpler_cluster *c = orch->cluster;
    struct cl_callable callable;
    pthread_mutex_lock(&c->lock);
    rc = check_state(c, callable_id, &callable);
    pthread_mutex_unlock(&c->lock);
    if (rc)
        return rc;

    uint64_t max_access = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (members[i].args->tensor_count != callable.tensor_count)
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT; /* what prepare would say */
        max_access += 2u * members[i].args->tensor_count;
    }
    struct cl_access *acc = NULL;
    uint32_t member_end[SIMPLER_CLUSTER_MAX_WORKERS], acc_count = 0;
    if (max_access && !(acc = sp_host_malloc((size_t)max_access * sizeof *acc)))
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    for (uint32_t i = 0; i < count; i++) {
        member_accesses(members[i].args, &callable, acc, &acc_count);
        member_end[i] = acc_count;
    }
    if ((rc = check_group(acc, member_end, count))) {
        free(acc);
        return rc;
    }

    struct cl_task *t = sp_host_calloc(1, sizeof *t + (size_t)count * sizeof(struct cl_member));
    if (!t) {
        free(acc);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    t->member_count = count;
    if (c->link && c->rank == 0 && (rc = keep_writes(t, acc, member_end))) {
        free(acc);
        task_discard(c, t, 0);
        return rc;
    }
    uint32_t prepared = 0;
    /* Each member checked and snapshotted as program mode does: the same
     * checks and codes; nothing is staged or launched yet. */
    for (; prepared < count && !rc; prepared++) {
        struct cl_member *m = &t->members[prepared];
        m->task = t;
        m->worker = members[prepared].worker;
        rc = prepare_member(c, m, callable_id, members[prepared].args, config, &callable);
    }
    uint64_t to_pump = 0;
    if (!rc) {
        pthread_mutex_lock(&c->lock);
        rc = enter_task(c, t, callable_id, acc, acc_count, &to_pump);
        pthread_mutex_unlock(&c->lock);
    }
    free(acc);
    if (rc) {
        task_discard(c, t, prepared);
        return rc;
    }
    *task = (simpler_cluster_task_t)t->index + 1;
    cl_pump_set(c, to_pump);
    return 0;
}

int simpler_cluster_submit(struct simpler_cluster_orch *orch, uint32_t worker,
                           int32_t callable_id, const struct simpler_args *args,
                           const struct simpler_run_config *config,
                           simpler_cluster_task_t *task)
{
    struct simpler_cluster_member member = {.worker = worker, .args = args};
    return simpler_cluster_submit_group(orch, callable_id, &member, 1, config, task);
}

/* ------------------------------------------------------- waits, queries */

/* The task `handle` names in the active run, or NULL. Caller holds c->lock. */
static struct cl_task *task_of(const struct simpler_cluster *c, simpler_cluster_task_t handle)
{
    if (!c->run.active || handle < 1 || handle > c->run.task_count)
        return NULL;
    return c->run.tasks[handle - 1];
}

int simpler_cluster_wait_task(struct simpler_cluster_orch *orch, simpler_cluster_task_t task)
{
    if (!orch || !orch->cluster)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct simpler_cluster *c = orch->cluster;
    pthread_mutex_lock(&c->lock);
    struct cl_task *t = task_of(c, task);
    if (!t) {
        pthread_mutex_unlock(&c->lock);
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
    /* Ended by cl_task_end's broadcast (worker.c), on the worker thread
     * that finalized the task's last run, or that cancelled it. */
    while (t->state != SIMPLER_CLUSTER_TASK_DONE)
        pthread_cond_wait(&c->task_ended, &c->lock);
    int status = t->status;
    pthread_mutex_unlock(&c->lock);
    return status;
}

int simpler_cluster_task_query(struct simpler_cluster_orch *orch, simpler_cluster_task_t task,
                               struct simpler_cluster_task_info *info)
{
    if (!orch || !orch->cluster || !info)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct simpler_cluster *c = orch->cluster;
    pthread_mutex_lock(&c->lock);
    const struct cl_task *t = task_of(c, task);
    if (t) {
        *info = (struct simpler_cluster_task_info){
            .state = t->state,
            .status = t->state == SIMPLER_CLUSTER_TASK_DONE ? t->status
                                                             : PTO_RUNTIME_ERR_NOT_READY,
            .members = t->member_count,
            .members_ended = t->members_ended,
            .dependencies = t->dependencies,
        };
    }
    pthread_mutex_unlock(&c->lock);
    return t ? 0 : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
}

/* ------------------------------------------------------------------ run */

/* Releases what the ended run's tasks hold: prepared calls of members
 * never launched (cancelled tasks) or whose release failed, the tasks and
 * the TensorMap. Every task is DONE; no other thread reads them. */
static void run_release(struct simpler_cluster *c)
{
    struct cl_run *r = &c->run;
    for (uint32_t i = 0; i < r->task_count; i++)
        task_discard(c, r->tasks[i], r->tasks[i]->member_count);
    free(r->tasks);
    cl_tensormap_clear(&r->map);
    r->tasks = NULL;
    r->task_count = r->task_capacity = 0;
    r->tasks_done = 0;
}

int simpler_cluster_run(struct simpler_cluster *cluster, simpler_cluster_orch_fn fn, void *user,
                        struct simpler_cluster_run_info *info)
{
    if (!cluster || !fn)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct simpler_cluster *c = cluster;
    pthread_mutex_lock(&c->lock);
    /* Only rank 0 orchestrates; a serving rank runs serve.c's loop here. */
    if (c->run.active || c->threads_stopped || (c->rank != 0 && !c->serving)) {
        pthread_mutex_unlock(&c->lock);
        return PTO_RUNTIME_ERR_INVALID_STATE;
    }
    c->run.active = true;
    memset(&c->run.info, 0, sizeof c->run.info);
    pthread_mutex_unlock(&c->lock);
    bool distributed = c->link && c->rank == 0;
    int begun = distributed ? cl_remote_run_begin(c) : 0;
    if (begun) {
        pthread_mutex_lock(&c->lock);
        c->run.active = false;
        pthread_mutex_unlock(&c->lock);
        return begun;
    }

    int orch_status = fn(&c->orch, user);

    pthread_mutex_lock(&c->lock);
    /* Ended by cl_task_end's broadcast (worker.c) as the last tasks end;
     * every run on a device ends (the device bounds it), so this does. */
    while (c->run.tasks_done < c->run.task_count)
        pthread_cond_wait(&c->task_ended, &c->lock);
    pthread_mutex_unlock(&c->lock);
    int32_t status = orch_status ? orch_status : c->run.info.first_failed_status;
    if (distributed)
        cl_remote_run_end(c, status); /* every rank's part of the run ended */
    pthread_mutex_lock(&c->lock);
    struct simpler_cluster_run_info result = c->run.info;
    pthread_mutex_unlock(&c->lock);

    run_release(c);
    result.orch_status = orch_status;
    result.status = status;
    pthread_mutex_lock(&c->lock);
    c->run.active = false;
    pthread_mutex_unlock(&c->lock);
    if (info)
        *info = result;
    return result.status;
}
