/*
 * cluster/worker.c — runs on a worker: launching queued runs, completing
 * in-flight ones, and what a task's end does to the tasks after it.
 *
 * Owns: the per-worker queue and in-flight FIFO, the worker thread, task
 * completion (readying dependents) and cancellation (docs/cluster.md,
 * sections 4 and 5). Must not touch: the host TensorMap, registration.
 */
#include <stdlib.h>

#include "cluster/cluster.h"

/* Appends `m` to the FIFO (*head, *tail). Caller holds the cluster lock. */
static void fifo_append(struct cl_member **head, struct cl_member **tail, struct cl_member *m)
{
    m->next = NULL;
    if (*tail)
        (*tail)->next = m;
    else
        *head = m;
    *tail = m;
}

/* ------------------------------------------------------------ task ends */

bool cl_task_succeeded(void *user, uint32_t index)
{
    const struct simpler_cluster *c = user;
    const struct cl_task *t = c->run.tasks[index];
    return t->state == SIMPLER_CLUSTER_TASK_DONE && t->status == 0;
}

void cl_task_queue(struct simpler_cluster *c, struct cl_task *t, uint64_t *to_pump)
{
    t->state = SIMPLER_CLUSTER_TASK_QUEUED;
    for (uint32_t i = 0; i < t->member_count; i++) {
        struct cl_member *m = &t->members[i];
        struct cl_worker *w = &c->workers[m->worker];
        fifo_append(&w->queue_head, &w->queue_tail, m);
        *to_pump |= UINT64_C(1) << m->worker;
    }
}

/* Marks the dependents of `t` doomed. */
static void doom_dependents(struct simpler_cluster *c, const struct cl_task *t)
{
    for (uint32_t i = 0; i < t->dependent_count; i++)
        c->run.tasks[t->dependents[i]]->doomed = true;
}

/*
 * Cancels every task that depends, directly or not, on `failed`. Edges
 * point from earlier to later tasks, so one sweep forward from `failed`
 * meets every doomed task after all of its doomed producers. A doomed task
 * is PENDING: it waited for `failed` or for a task cancelled here.
 */
static void cancel_dependents(struct simpler_cluster *c, const struct cl_task *failed)
{
    struct cl_run *r = &c->run;
    doom_dependents(c, failed);
    for (uint32_t i = failed->index + 1; i < r->task_count; i++) {
        struct cl_task *t = r->tasks[i];
        if (!t->doomed)
            continue;
        t->doomed = false;
        if (t->state == SIMPLER_CLUSTER_TASK_DONE)
            continue;
        t->state = SIMPLER_CLUSTER_TASK_DONE;
        t->status = PTO_RUNTIME_ERR_DEPENDENCY_FAILED;
        r->info.tasks_cancelled++;
        r->tasks_done++;
        doom_dependents(c, t);
    }
}

void cl_task_end(struct simpler_cluster *c, struct cl_task *t, int32_t status, uint64_t *to_pump)
{
    struct cl_run *r = &c->run;
    t->state = SIMPLER_CLUSTER_TASK_DONE;
    t->status = status;
    r->tasks_done++;
    if (status == 0) {
        r->info.tasks_succeeded++;
        for (uint32_t i = 0; i < t->dependent_count; i++) {
            struct cl_task *d = r->tasks[t->dependents[i]];
            if (d->state == SIMPLER_CLUSTER_TASK_PENDING && --d->fanin_remaining == 0)
                cl_task_queue(c, d, to_pump);
        }
    } else {
        r->info.tasks_failed++;
        if (!r->info.first_failed_task || t->index + 1 < r->info.first_failed_task) {
            r->info.first_failed_task = t->index + 1;
            r->info.first_failed_status = status;
        }
        cancel_dependents(c, t);
    }
    /* A serving rank replies to rank 0 for each task that ended (its
     * slot was reserved at the submit: serve.c). */
    if (c->serving)
        c->served_ended[c->served_ended_count++] = t->index;
    /* Pairs with the waits of simpler_cluster_wait_task and of the end of
     * simpler_cluster_run (orch.c), and serve.c's, which recheck under the
     * lock. */
    pthread_cond_broadcast(&c->task_ended);
}

/* Ends member `m` with `status`; its task ends with its last member.
 * Caller holds c->lock. */
static void member_end(struct simpler_cluster *c, struct cl_member *m, int32_t status,
                       uint64_t *to_pump)
{
    struct cl_task *t = m->task;
    if (c->run.dir)
        cl_remote_member_done(c, m, status);
    m->status = status;
    m->ended = true;
    if (++t->members_ended < t->member_count)
        return;
    int32_t task_status = 0;
    for (uint32_t i = 0; i < t->member_count && !task_status; i++)
        task_status = t->members[i].status;
    cl_task_end(c, t, task_status, to_pump);
}

/* A member's launch was attempted (it is in flight, or failed). */
static void member_launched(struct cl_member *m)
{
    struct cl_task *t = m->task;
    if (++t->members_launched == t->member_count && t->state == SIMPLER_CLUSTER_TASK_QUEUED)
        t->state = SIMPLER_CLUSTER_TASK_RUNNING;
}

/* -------------------------------------------------------------- launching */

void cl_pump_set(struct simpler_cluster *c, uint64_t workers)
{
    for (uint32_t i = 0; i < c->worker_count; i++)
        if (workers & (UINT64_C(1) << i))
            cl_worker_pump(&c->workers[i]);
}

void cl_worker_pump(struct cl_worker *w)
{
    struct simpler_cluster *c = w->cluster;
    uint64_t to_pump = 0;
    pthread_mutex_lock(&w->launch_lock);
    for (;;) {
        pthread_mutex_lock(&c->lock);
        struct cl_member *m = NULL;
        if (w->in_flight < w->depth && w->queue_head) {
            m = w->queue_head;
            w->queue_head = m->next;
            if (!w->queue_head)
                w->queue_tail = NULL;
            w->in_flight++; /* the slot is this launch's from now on */
        }
        pthread_mutex_unlock(&c->lock);
        if (!m)
            break;
        /* Stages the IN/INOUT bytes and enqueues the run behind the
         * worker's earlier launches (no lock of ours is held but the
         * launch lock, which keeps the in-flight FIFO in launch order). */
        simpler_run_t run = 0;
        int rc = w->ctx ? simpler_submit_call(w->ctx, m->call, &run) : cl_remote_launch(w, m);
        pthread_mutex_lock(&c->lock);
        member_launched(m);
        if (rc == 0 && !w->ctx) {
            /* Another rank runs it; its reply ends it (remote.c). */
            c->run.info.runs_launched++;
            c->run.info.remote_runs++;
        } else if (rc == 0) {
            m->run = run;
            fifo_append(&w->flight_head, &w->flight_tail, m);
            c->run.info.runs_launched++;
            /* Ends the worker thread's idle wait (cl_worker_main). */
            pthread_cond_signal(&w->wake);
        } else {
            w->in_flight--;
            member_end(c, m, rc, &to_pump);
        }
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&w->launch_lock);
    /* A failure readies nothing, but whatever a task's end queues is
     * pumped here, after this worker's launch lock is let go (two launch
     * locks are never held at once). */
    cl_pump_set(c, to_pump & ~(UINT64_C(1) << w->index));
}

void cl_remote_member_ended(struct cl_worker *w, struct cl_member *m, int32_t status)
{
    struct simpler_cluster *c = w->cluster;
    uint64_t to_pump = UINT64_C(1) << w->index; /* a slot is free */
    pthread_mutex_lock(&c->lock);
    w->in_flight--;
    member_end(c, m, status, &to_pump);
    pthread_mutex_unlock(&c->lock);
    cl_pump_set(c, to_pump);
}

/* ------------------------------------------------------------ completing */

void *cl_worker_main(void *arg)
{
    struct cl_worker *w = arg;
    struct simpler_cluster *c = w->cluster;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        /* Ended by cl_worker_pump's signal when a run goes in flight, or
         * by simpler_cluster_destroy's stop (never while runs are in
         * flight: destroy refuses during a run). */
        while (!w->flight_head && !w->stop)
            pthread_cond_wait(&w->wake, &c->lock);
        if (!w->flight_head)
            break;
        struct cl_member *m = w->flight_head;
        pthread_mutex_unlock(&c->lock);

        /* The device ends this wait: with the run's status, or with its
         * scheduler timeout or watchdog when the run cannot finish. The
         * device runs this worker's runs in launch order, so the oldest
         * is the next to end. */
        int rc = simpler_wait_run(w->ctx, m->run);
        int finalized = simpler_finalize_run(w->ctx, m->run);
        if (rc == 0)
            rc = finalized;
        bool released = simpler_release_call(w->ctx, m->call) == 0;

        uint64_t to_pump = UINT64_C(1) << w->index; /* a slot is free */
        pthread_mutex_lock(&c->lock);
        if (released)
            m->call = NULL;
        w->flight_head = m->next;
        if (!w->flight_head)
            w->flight_tail = NULL;
        w->in_flight--;
        member_end(c, m, rc, &to_pump);
        pthread_mutex_unlock(&c->lock);
        cl_pump_set(c, to_pump);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}
