/*
 * simpler/cluster.h — one host orchestration over several devices.
 *
 * Owns: the cluster surface (docs/cluster.md). A cluster drives one
 * program-mode context per device (simpler.h) and runs a host
 * orchestration function that submits device-level runs — a callable
 * registered on every worker, with its args — to one worker (directed
 * submit) or to several at once (group submit). Dependencies between those
 * runs are inferred from the host tensor regions they read and write; a run
 * starts once the runs it depends on have finalized (their outputs are in
 * host memory), and independent runs on different devices run at once.
 *
 * Conventions as simpler.h: 0 or a negative code from status.h; arguments
 * checked first (INVALID_ARGUMENT), then state (INVALID_STATE); a rejected
 * call changes nothing; outputs written only on success.
 */
#ifndef SIMPLER_CLUSTER_H
#define SIMPLER_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/simpler.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SIMPLER_CLUSTER_MAX_WORKERS 64 /* workers of one cluster, at most */

struct simpler_cluster;      /* a cluster: its workers and their contexts */
struct simpler_cluster_orch; /* the handle a running orchestration submits through */

/* A task: one directed or group submit of one run. Nonzero, 1, 2, ... in
 * submission order within a run. */
typedef uint64_t simpler_cluster_task_t;

struct simpler_cluster_config {
    uint32_t worker_count;   /* 1..SIMPLER_CLUSTER_MAX_WORKERS; default 1 */
    uint32_t max_tasks;      /* tasks one run may submit; default 65536 */
    const int *device_ids;   /* worker_count distinct device ids (borrowed for
                                create); NULL: devices 0..worker_count-1 */
    const struct simpler_config *device_config; /* every worker context's config
                                                   (borrowed for create); NULL:
                                                   simpler_config_default's */
    /* Across processes (docs/cluster.md section 9): 1 = every rank of
     * MPI_COMM_WORLD calls create with its own local workers (above);
     * workers are numbered rank-major; rank 0 runs orchestrations and the
     * other ranks serve them (simpler_cluster_serve). 0 = one process. */
    uint32_t distributed;
    uint32_t peer_timeout_ms; /* distributed: a peer silent this long is lost
                                 (PEER_LOST); 0 = 10000 */
};

/* Writes the defaults above. INVALID_ARGUMENT for NULL. */
int simpler_cluster_config_default(struct simpler_cluster_config *out);

/*
 * Creates a cluster: for each worker a program-mode context initialised on
 * its device (simpler_create_device_context, simpler_init) and a host
 * thread that completes its runs. INVALID_ARGUMENT: NULLs, a worker count
 * or max_tasks outside its range, an invalid or repeated device id, a
 * config simpler_init refuses; otherwise the code of the first failing
 * simpler_init (INVALID_STATE: a device another context owns),
 * OUT_OF_HOST_MEMORY, INTERNAL (a thread could not be started). On failure
 * everything this call created is released and *out is untouched.
 */
int simpler_cluster_create(const struct simpler_cluster_config *config,
                           struct simpler_cluster **out);

/*
 * Stops the worker threads, finalizes and destroys every worker context
 * (NULL: no-op). INVALID_STATE, changing nothing, while a run is active
 * (called from inside an orchestration). A worker whose
 * simpler_finalize_device fails returns that code; the cluster then stays
 * (its threads stopped) and destroy may be retried.
 */
int simpler_cluster_destroy(struct simpler_cluster *cluster);

/* The number of workers (0 for NULL). */
uint32_t simpler_cluster_worker_count(const struct simpler_cluster *cluster);

/*
 * Registers `image` (`bytes` long, borrowed for the call) under
 * `callable_id` on every worker, in worker order. When a worker refuses,
 * the workers that accepted it unregister it again and that worker's code
 * is returned (simpler_register_callable's codes): a callable is on every
 * worker or on none. INVALID_STATE while a run is active.
 */
int simpler_cluster_register_callable(struct simpler_cluster *cluster, int32_t callable_id,
                                      const void *image, size_t bytes);

/* Unregisters `callable_id` from every worker. CALLABLE_NOT_RESIDENT when
 * the cluster did not register it; INVALID_STATE while a run is active.
 * A worker's failure returns its code; the id then stays registered on the
 * cluster (and on the workers that kept it), and unregister may be
 * retried. */
int simpler_cluster_unregister_callable(struct simpler_cluster *cluster, int32_t callable_id);

/* A host orchestration: submits through `orch` (valid during the call
 * only). Returns 0 or a negative code, which simpler_cluster_run returns. */
typedef int (*simpler_cluster_orch_fn)(struct simpler_cluster_orch *orch, void *user);

/* What a run did. */
struct simpler_cluster_run_info {
    int32_t status;               /* what simpler_cluster_run returned */
    int32_t orch_status;          /* what the orchestration function returned */
    uint64_t tasks_submitted;
    uint64_t tasks_succeeded;
    uint64_t tasks_failed;        /* a run of the task failed */
    uint64_t tasks_cancelled;     /* status DEPENDENCY_FAILED: never launched */
    uint64_t runs_launched;       /* device-level runs simpler_submit_call accepted */
    uint64_t dependencies;        /* distinct (earlier task, later task) pairs inferred, the
                                     earlier task not yet succeeded at the submit (one that
                                     had succeeded orders nothing and is not counted) */
    uint64_t raw;                 /* of those, pairs with a read after a write */
    uint64_t war;                 /* ... a write after a read */
    uint64_t waw;                 /* ... a write after a write */
    simpler_cluster_task_t first_failed_task; /* lowest failed task (0: none) */
    int32_t first_failed_status;  /* its status */
    uint32_t reserved;
    uint64_t bytes_sent;          /* distributed: payload bytes sent to other ranks */
    uint64_t bytes_received;      /* ... received from them (read spans, outputs) */
    uint64_t remote_runs;         /* of runs_launched, those on another rank */
};

/*
 * Runs `fn(orch, user)` on the calling thread, then waits until every task
 * it submitted has ended (none is abandoned: host buffers must stay valid
 * until this returns). Returns fn's code when nonzero, else the status of
 * the failed task with the lowest id, else 0; `info` (may be NULL) gets
 * the counters. INVALID_ARGUMENT: NULL cluster or fn; INVALID_STATE: a
 * run is active on the cluster (one at a time).
 */
int simpler_cluster_run(struct simpler_cluster *cluster, simpler_cluster_orch_fn fn, void *user,
                        struct simpler_cluster_run_info *info);

/*
 * Directed submit: one run of `callable_id` on `worker` with `args` and
 * `config` (both borrowed for the call; config NULL: the callable's).
 * Host tensors only; their buffers must stay valid until the run ends.
 * The run waits for every earlier task whose writes overlap what it
 * reads or writes, or whose reads overlap what it writes (docs/cluster.md,
 * section 3). INVALID_ARGUMENT: NULLs, a worker outside the cluster, a
 * device tensor, a buffer overlapping another known buffer without being
 * it, args simpler_prepare_call refuses; CALLABLE_NOT_RESIDENT: not
 * registered through the cluster; CAPACITY_EXCEEDED: max_tasks reached;
 * OUT_OF_HOST_MEMORY. A refused submit creates no task and changes
 * nothing. *task is the new task's handle.
 */
int simpler_cluster_submit(struct simpler_cluster_orch *orch, uint32_t worker,
                           int32_t callable_id, const struct simpler_args *args,
                           const struct simpler_run_config *config,
                           simpler_cluster_task_t *task);

/* One member of a group submit: a worker and its run's args (borrowed). */
struct simpler_cluster_member {
    uint32_t worker;
    uint32_t reserved;
    const struct simpler_args *args;
};

/*
 * Group submit: one task of `count` runs of `callable_id`, member i on
 * members[i].worker with members[i].args (all borrowed for the call). The
 * runs start once the group's dependencies (those of every member's
 * tensors) are met; later tasks that depend on any member wait for the
 * whole group. The task fails when a member fails (with the status of the
 * lowest-index failed member); the other members still run. Checks as
 * simpler_cluster_submit, plus INVALID_ARGUMENT for count 0 or above
 * SIMPLER_CLUSTER_MAX_WORKERS, a repeated worker, or two members whose
 * writes overlap each other's reads or writes.
 */
int simpler_cluster_submit_group(struct simpler_cluster_orch *orch, int32_t callable_id,
                                 const struct simpler_cluster_member *members, uint32_t count,
                                 const struct simpler_run_config *config,
                                 simpler_cluster_task_t *task);

/* Blocks until `task` has ended; returns its status: 0, its failed run's
 * code, or DEPENDENCY_FAILED when it was cancelled. INVALID_ARGUMENT for
 * NULL or a handle this run did not return. */
int simpler_cluster_wait_task(struct simpler_cluster_orch *orch, simpler_cluster_task_t task);

enum simpler_cluster_task_state {
    SIMPLER_CLUSTER_TASK_PENDING = 0, /* waiting for tasks it depends on */
    SIMPLER_CLUSTER_TASK_QUEUED = 1,  /* dependencies met; a run waits for a pipeline slot */
    SIMPLER_CLUSTER_TASK_RUNNING = 2, /* every run launched; some not finalized */
    SIMPLER_CLUSTER_TASK_DONE = 3,    /* every run finalized or failed, or cancelled */
};

struct simpler_cluster_task_info {
    uint32_t state;          /* enum simpler_cluster_task_state */
    int32_t status;          /* DONE: its status; else NOT_READY */
    uint32_t members;        /* runs of the task (1 for a directed submit) */
    uint32_t members_ended;  /* of those, finalized or failed */
    uint32_t dependencies;   /* tasks it waited for, at submit */
    uint32_t reserved;
};

/* Writes `task`'s state to *info without waiting. INVALID_ARGUMENT for
 * NULLs or a handle this run did not return. */
int simpler_cluster_task_query(struct simpler_cluster_orch *orch, simpler_cluster_task_t task,
                               struct simpler_cluster_task_info *info);

/* ------------------------------------------------------- across ranks */

/*
 * Initialises MPI for distributed clusters (MPI_THREAD_SERIALIZED) unless
 * the program already did (then its thread level must be at least
 * SERIALIZED: INVALID_STATE otherwise), and writes this process's rank and
 * the number of ranks (either may be NULL). SIGPIPE and SIGUSR1, when at
 * their default action, are ignored: with `mpiexec -disable-auto-cleanup`
 * MPICH signals a peer's death by SIGUSR1, which would kill the survivors
 * before they could report PEER_LOST. UNSUPPORTED when simpler was built
 * without MPI (SIMPLER_MPI=OFF or none found).
 */
int simpler_cluster_mpi_init(int *argc, char ***argv, int *rank, int *ranks);

/*
 * Finalizes MPI if simpler_cluster_mpi_init initialised it. PEER_LOST,
 * finalizing nothing, when a distributed cluster of this process lost a
 * peer (MPI_Finalize would wait for the dead rank): the process should
 * then exit with its error. UNSUPPORTED without MPI.
 */
int simpler_cluster_mpi_finalize(void);

/* This process's rank and the number of ranks of `cluster` (0 and 1 for a
 * cluster of one process). INVALID_ARGUMENT for NULL cluster. */
int simpler_cluster_rank(const struct simpler_cluster *cluster, int *rank, int *ranks);

/* The rank whose devices run `worker` (a global worker index), or -1 for
 * NULL or a worker outside the cluster. */
int simpler_cluster_worker_rank(const struct simpler_cluster *cluster, uint32_t worker);

/* What a serving rank did in one run. */
struct simpler_cluster_serve_info {
    uint64_t runs;            /* requests of rank 0 run on this rank's workers */
    uint64_t runs_failed;     /* of those, failed (their codes went to rank 0) */
    uint64_t bytes_received;  /* payload bytes of the requests (read spans) */
    uint64_t bytes_sent;      /* payload bytes of the replies (outputs) */
};

/*
 * On a rank other than 0 of a distributed cluster: serves one run of rank
 * 0 (its simpler_cluster_run) on this rank's workers and returns when rank
 * 0 ends it, with the run's status as rank 0 returned it. PEER_LOST when
 * rank 0 starts no run, or falls silent during it, for peer_timeout_ms
 * (this rank's runs in flight end first). INVALID_ARGUMENT for NULL;
 * INVALID_STATE on rank 0, on a cluster of one process, or while serving;
 * UNSUPPORTED without MPI. `info` (may be NULL) gets the counters.
 */
int simpler_cluster_serve(struct simpler_cluster *cluster, struct simpler_cluster_serve_info *info);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_CLUSTER_H */
