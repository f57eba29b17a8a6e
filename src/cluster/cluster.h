/*
 * cluster/cluster.h — the cluster's state: workers, the run, tasks.
 *
 * Owns: the structures behind simpler/cluster.h and the contracts between
 * cluster.c (create, destroy, registration), worker.c (launching and
 * completing runs on a worker) and orch.c (a run: submit, wait, query).
 *
 * Locks: `lock` (one per cluster) guards the run, its tasks, the host
 * TensorMap, every worker's queues and counters. Each worker's
 * `launch_lock` serialises launches on its context (so the in-flight FIFO
 * is in launch order); it is taken without `lock` held, and `lock` may be
 * taken inside it, never the reverse. No simpler.h call is made while
 * `lock` is held.
 */
#ifndef SIMPLER_CLUSTER_CLUSTER_H
#define SIMPLER_CLUSTER_CLUSTER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cluster/host_tensormap.h"
#include "simpler/cluster.h"
#include "simpler/simpler.h"

struct cl_task;
struct cl_remote_call;
struct cl_directory;

/* A write of a member to a host buffer: [lo, hi) of the buffer at base
 * (its view's extent). Kept by rank 0 of a distributed run only. */
struct cl_write {
    uint64_t base, lo, hi;
};

/* One run of a task on one worker. */
struct cl_member {
    struct cl_task *task;
    uint32_t worker;
    int32_t status;                     /* valid once ended */
    bool ended;
    struct simpler_prepared_call *call; /* until released */
    simpler_run_t run;                  /* 0 until launched */
    struct cl_member *next;             /* in its worker's queue or in-flight FIFO */
    struct cl_remote_call *remote;      /* a worker of another rank: its args (remote.c) */
    bool remote_in_flight;              /* sent, no reply yet (the comm thread's alone) */
    const struct cl_write *writes;      /* distributed, rank 0: in its task's `writes` */
    uint32_t write_count;
};

struct cl_task {
    uint32_t index;            /* handle - 1 */
    uint32_t state;            /* enum simpler_cluster_task_state */
    int32_t status;            /* valid when DONE */
    uint32_t member_count;
    uint32_t members_launched;
    uint32_t members_ended;
    uint32_t fanin_remaining;  /* producers not yet done */
    uint32_t dependencies;     /* producers found at submit */
    bool doomed;               /* a producer failed: cancel when swept */
    uint32_t *dependents;      /* later tasks waiting for this one */
    uint32_t dependent_count;
    uint32_t dependent_capacity;
    struct cl_write *writes;   /* distributed, rank 0: every member's writes */
    struct cl_member members[]; /* member_count */
};

struct cl_worker {
    struct simpler_cluster *cluster;
    uint32_t index;
    int device;
    int rank;                 /* the rank whose devices run it */
    struct simpler_context *ctx; /* NULL for a worker of another rank */
    bool ctx_ready;           /* initialised: finalize_device at destroy */
    uint32_t depth;           /* the context's pipeline depth */
    pthread_mutex_t launch_lock;
    pthread_cond_t wake;      /* with cluster->lock: a run in flight, or stop */
    bool thread_started;
    bool stop;
    pthread_t thread;
    /* Under cluster->lock: */
    struct cl_member *queue_head, *queue_tail;   /* ready, not launched */
    struct cl_member *flight_head, *flight_tail; /* launched, not finalized */
    uint32_t in_flight;       /* launched or being launched, not finalized */
};

/* What the cluster knows of a callable it registered. */
struct cl_callable {
    uint32_t tensor_count;
    uint8_t directions[SIMPLER_CALLABLE_MAX_TENSORS]; /* of the tensors, in order */
};

struct cl_run {
    bool active;
    struct cl_task **tasks;
    uint32_t task_count;
    uint32_t task_capacity;
    uint64_t tasks_done;
    struct cl_tensormap map;
    struct simpler_cluster_run_info info; /* counters, under lock */
    struct cl_directory *dir; /* distributed, rank 0: valid copies (remote.c) */
};

struct simpler_cluster_orch {
    struct simpler_cluster *cluster;
};

struct cl_link;
struct cl_comm;

struct simpler_cluster {
    pthread_mutex_t lock;
    pthread_cond_t task_ended; /* with lock: broadcast whenever a task ends */
    uint32_t worker_count;
    uint32_t max_tasks;
    bool threads_stopped;
    struct cl_callable *callables[SIMPLER_MAX_CALLABLE_IDS];
    struct cl_run run;
    struct simpler_cluster_orch orch;
    /* Distributed (section 9 of docs/cluster.md); link NULL otherwise. */
    int rank, ranks;
    uint32_t first_local;      /* this rank's first worker */
    struct cl_link *link;
    struct cl_comm *comm;      /* rank 0, during a run: the communication thread */
    bool serving;              /* a serving rank inside simpler_cluster_serve */
    uint32_t *served_ended;    /* serving: tasks ended, not yet replied (under lock) */
    uint32_t served_ended_count, served_ended_capacity;
    struct cl_worker workers[]; /* worker_count (every rank's) */
};

/* ---------------------------------------------------------- worker.c */

/* The worker's thread body: completes its in-flight runs in order. */
void *cl_worker_main(void *arg);

/* Launches queued runs of worker `w` while it has free pipeline slots.
 * Caller holds no lock. */
void cl_worker_pump(struct cl_worker *w);

/* Pumps every worker whose bit is set in `workers`. Caller holds no lock. */
void cl_pump_set(struct simpler_cluster *c, uint64_t workers);

/* Queues every member of `t` (dependencies met) on its worker and sets
 * the workers' bits in *to_pump. Caller holds c->lock. */
void cl_task_queue(struct simpler_cluster *c, struct cl_task *t, uint64_t *to_pump);

/* Ends task `t` with `status` (DONE): counts it, readies or cancels its
 * dependents (their workers' bits into *to_pump) and wakes the
 * orchestration's waiters. Caller holds c->lock. */
void cl_task_end(struct simpler_cluster *c, struct cl_task *t, int32_t status, uint64_t *to_pump);

/* Ends member `m` of a worker of another rank with `status` (its reply,
 * or the loss of its rank) and pumps what that readies. Caller holds no
 * lock. */
void cl_remote_member_ended(struct cl_worker *w, struct cl_member *m, int32_t status);

/* ---------------------------------------------------------- remote.c */

/* Rank 0 of a distributed cluster: starts a run on every rank (the
 * communication thread) / ends it with `status`. No lock held. */
int cl_remote_run_begin(struct simpler_cluster *c);
void cl_remote_run_end(struct simpler_cluster *c, int32_t status);
/* Sends member `m` to its worker's rank (packs its read spans now). 0 or
 * the code its launch fails with. No lock held. */
int cl_remote_launch(struct cl_worker *w, struct cl_member *m);

/* Member `m` ended with `status` (rank 0 of a distributed run): the bytes
 * it wrote are stale on every other rank; a failed remote member's own
 * rank is not known to hold them either (directory.h). Readers of those
 * bytes are ordered after this end (RAW) or ended before the member
 * launched (WAR), so no request counts on them meanwhile. Caller holds
 * c->lock. */
void cl_remote_member_done(struct simpler_cluster *c, const struct cl_member *m, int32_t status);

/* True when task `index` of the run ended with status 0 (the TensorMap's
 * callback; `user` is the cluster). Caller holds its lock. */
bool cl_task_succeeded(void *user, uint32_t index);

#endif /* SIMPLER_CLUSTER_CLUSTER_H */
