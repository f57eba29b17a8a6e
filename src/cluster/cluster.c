/*
 * cluster/cluster.c — a cluster's life: create, destroy, registration.
 *
 * Owns: the worker contexts (one program-mode context per device, created
 * and finalized here), the worker threads' start and stop, and the table
 * of callables registered on every worker. Must not touch: runs and tasks
 * (orch.c, worker.c).
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "cluster/mpi_link.h"
#include "common/host_alloc.h"
#include "simpler/device.h"

#define CL_DEFAULT_MAX_TASKS 65536u
#define CL_MAX_TASKS_LIMIT (1u << 24)
#define CL_DEFAULT_PEER_TIMEOUT_MS 10000u

int simpler_cluster_config_default(struct simpler_cluster_config *out)
{
    if (!out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *out = (struct simpler_cluster_config){.worker_count = 1, .max_tasks = CL_DEFAULT_MAX_TASKS};
    return 0;
}

uint32_t simpler_cluster_worker_count(const struct simpler_cluster *cluster)
{
    return cluster ? cluster->worker_count : 0;
}

int simpler_cluster_rank(const struct simpler_cluster *cluster, int *rank, int *ranks)
{
    if (!cluster)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (rank)
        *rank = cluster->rank;
    if (ranks)
        *ranks = cluster->ranks;
    return 0;
}

int simpler_cluster_worker_rank(const struct simpler_cluster *cluster, uint32_t worker)
{
    if (!cluster || worker >= cluster->worker_count)
        return -1;
    return cluster->workers[worker].rank;
}

/* The first nonzero of every rank's `rc` (rank order), or 0; collective
 * on a distributed cluster's link, `rc` itself otherwise. PEER_LOST when a
 * rank does not take part within the timeout. */
static int agree(struct cl_link *link, int32_t rc)
{
    if (!link)
        return rc;
    int32_t all[SIMPLER_CLUSTER_MAX_WORKERS];
    int n = cl_link_size(link);
    int got = cl_link_allgather(link, &rc, all, sizeof rc);
    if (got)
        return got;
    for (int r = 0; r < n; r++)
        if (all[r])
            return all[r];
    return 0;
}

static int check_config(const struct simpler_cluster_config *config)
{
    int devices = 0;
    if (config->distributed > 1 || config->worker_count < 1 || config->worker_count > SIMPLER_CLUSTER_MAX_WORKERS ||
        config->max_tasks < 1 || config->max_tasks > CL_MAX_TASKS_LIMIT ||
        simdev_device_count(&devices))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (!config->device_ids)
        return config->worker_count <= (uint32_t)devices ? 0 : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < config->worker_count; i++) {
        int d = config->device_ids[i];
        if (d < 0 || d >= devices)
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        for (uint32_t k = 0; k < i; k++)
            if (config->device_ids[k] == d)
                return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
    return 0;
}

/* Stops and joins every started worker thread (no run is active). */
static void stop_threads(struct simpler_cluster *c)
{
    pthread_mutex_lock(&c->lock);
    for (uint32_t i = 0; i < c->worker_count; i++) {
        c->workers[i].stop = true;
        /* Ends the idle wait of cl_worker_main. */
        pthread_cond_signal(&c->workers[i].wake);
    }
    pthread_mutex_unlock(&c->lock);
    for (uint32_t i = 0; i < c->worker_count; i++) {
        if (c->workers[i].thread_started)
            pthread_join(c->workers[i].thread, NULL);
        c->workers[i].thread_started = false;
    }
    c->threads_stopped = true;
}

/* Finalizes and destroys what is left of the worker contexts; the first
 * failing finalize's code (that context and the later ones stay). */
static int close_contexts(struct simpler_cluster *c)
{
    for (uint32_t i = 0; i < c->worker_count; i++) {
        struct cl_worker *w = &c->workers[i];
        int rc;
        if (w->ctx_ready && (rc = simpler_finalize_device(w->ctx)))
            return rc;
        w->ctx_ready = false;
        if (w->ctx && (rc = simpler_destroy_device_context(w->ctx)))
            return rc;
        w->ctx = NULL;
    }
    return 0;
}

static void free_cluster(struct simpler_cluster *c)
{
    for (uint32_t i = 0; i < c->worker_count; i++) {
        pthread_cond_destroy(&c->workers[i].wake);
        pthread_mutex_destroy(&c->workers[i].launch_lock);
    }
    for (uint32_t i = 0; i < SIMPLER_MAX_CALLABLE_IDS; i++)
        free(c->callables[i]);
    pthread_cond_destroy(&c->task_ended);
    pthread_mutex_destroy(&c->lock);
    cl_link_close(c->link);
    free(c);
}

/* Creates, initialises and starts worker `i`. */
static int worker_open(struct simpler_cluster *c, uint32_t i, int device,
                       const struct simpler_config *config)
{
    struct cl_worker *w = &c->workers[i];
    int rc;
    if ((rc = simpler_create_device_context(&w->ctx)))
        return rc;
    if ((rc = simpler_init(w->ctx, device, config)))
        return rc;
    w->ctx_ready = true;
    if (pthread_create(&w->thread, NULL, cl_worker_main, w))
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    w->thread_started = true;
    return 0;
}

/*
 * A distributed create's agreement: every rank's config check `rc` and
 * local worker count; on success the global worker count, this rank's
 * first worker and each rank's first worker (first_of[ranks]).
 */
static int gather_workers(struct cl_link *link, int32_t rc, uint32_t local, uint32_t *total,
                          uint32_t *first_of)
{
    struct {
        int32_t rc;
        uint32_t workers;
    } mine = {rc, local}, all[SIMPLER_CLUSTER_MAX_WORKERS];
    int n = cl_link_size(link);
    if (n > SIMPLER_CLUSTER_MAX_WORKERS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT; /* every rank has a worker at least */
    int got = cl_link_allgather(link, &mine, all, sizeof mine);
    if (got)
        return got;
    uint64_t sum = 0;
    for (int r = 0; r < n; r++) {
        if (all[r].rc)
            return all[r].rc;
        first_of[r] = (uint32_t)sum;
        sum += all[r].workers;
    }
    if (sum > SIMPLER_CLUSTER_MAX_WORKERS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *total = (uint32_t)sum;
    return 0;
}

int simpler_cluster_create(const struct simpler_cluster_config *config,
                           struct simpler_cluster **out)
{
    if (!config || !out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    int rc = check_config(config);
    struct cl_link *link = NULL;
    uint32_t n = config->worker_count, first_of[SIMPLER_CLUSTER_MAX_WORKERS] = {0};
    if (config->distributed) {
        /* Collective from here: a rank whose config is refused still takes
         * part, so that every rank returns the same code. */
        int opened = cl_link_open(config->peer_timeout_ms ? config->peer_timeout_ms
                                                          : CL_DEFAULT_PEER_TIMEOUT_MS,
                                  &link);
        if (opened)
            return opened;
        if ((rc = gather_workers(link, rc, config->worker_count, &n, first_of))) {
            cl_link_close(link);
            return rc;
        }
    }
    if (rc)
        return rc;
    struct simpler_config ctx_config;
    if (config->device_config)
        ctx_config = *config->device_config;
    else
        simpler_config_default(&ctx_config);

    struct simpler_cluster *c =
        sp_host_calloc(1, sizeof *c + (size_t)n * sizeof(struct cl_worker));
    if (!c) {
        rc = agree(link, PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
        cl_link_close(link);
        return rc;
    }
    c->link = link;
    c->rank = link ? cl_link_rank(link) : 0;
    c->ranks = link ? cl_link_size(link) : 1;
    c->first_local = first_of[c->rank];
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->task_ended, NULL);
    c->worker_count = n;
    c->max_tasks = config->max_tasks;
    c->orch.cluster = c;
    for (uint32_t i = 0; i < n; i++) {
        struct cl_worker *w = &c->workers[i];
        w->cluster = c;
        w->index = i;
        w->rank = 0;
        for (int r = 1; r < c->ranks; r++)
            if (i >= first_of[r])
                w->rank = r;
        uint32_t local = i - first_of[w->rank];
        w->device = config->device_ids ? config->device_ids[local] : (int)local;
        w->depth = ctx_config.pipeline_depth;
        pthread_mutex_init(&w->launch_lock, NULL);
        pthread_cond_init(&w->wake, NULL);
    }
    for (uint32_t i = 0; i < n && !rc; i++)
        if (c->workers[i].rank == c->rank)
            rc = worker_open(c, i, c->workers[i].device, &ctx_config);
    rc = agree(link, rc); /* every rank's workers opened, or none stays */
    if (rc) {
        stop_threads(c);
        /* Undo what this call made; a context that will not finalize is
         * a broken invariant of a context that has never run anything. */
        if (close_contexts(c))
            return PTO_RUNTIME_ERR_INTERNAL;
        free_cluster(c);
        return rc;
    }
    *out = c;
    return 0;
}

int simpler_cluster_destroy(struct simpler_cluster *cluster)
{
    if (!cluster)
        return 0;
    pthread_mutex_lock(&cluster->lock);
    bool active = cluster->run.active;
    pthread_mutex_unlock(&cluster->lock);
    if (active)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    if (!cluster->threads_stopped)
        stop_threads(cluster);
    int rc = close_contexts(cluster);
    if (rc)
        return rc;
    /* Collective: every rank has released its workers (bounded: a lost
     * rank makes it PEER_LOST, everything here released all the same). */
    if (cluster->link)
        rc = cl_link_barrier(cluster->link);
    free_cluster(cluster);
    return rc;
}

/* ------------------------------------------------------------- callables */

/* The tensor directions of a validated image's signature. */
static void read_signature(const void *image, struct cl_callable *out)
{
    const struct simpler_callable_header *h = image;
    out->tensor_count = 0;
    for (uint32_t i = 0; i < h->sig_count && i < SIMPLER_CALLABLE_MAX_ARGS; i++)
        if (h->signature[i] != SIMPLER_DIR_SCALAR &&
            out->tensor_count < SIMPLER_CALLABLE_MAX_TENSORS)
            out->directions[out->tensor_count++] = h->signature[i];
}

/* INVALID_STATE while a run is active, else 0; `lock` held. */
static int idle_state(const struct simpler_cluster *c)
{
    return c->run.active ? PTO_RUNTIME_ERR_INVALID_STATE : 0;
}

static int register_local(struct simpler_cluster *cluster, int32_t callable_id,
                          const void *image, size_t bytes);

/* FNV-1a of the image: ranks agree on what they register. */
static uint64_t image_hash(const void *image, size_t bytes)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; image && i < bytes; i++)
        h = (h ^ ((const uint8_t *)image)[i]) * 1099511628211ull;
    return h;
}

/* A distributed registration's agreement: the first code of any rank, or
 * INVALID_ARGUMENT when the ranks named different ids or images. */
static int agree_registration(struct cl_link *link, int32_t rc, int32_t callable_id,
                              const void *image, size_t bytes)
{
    struct reg {
        int32_t rc;
        int32_t id;
        uint64_t bytes;
        uint64_t hash;
    } mine = {rc, callable_id, bytes, image_hash(image, bytes)},
      all[SIMPLER_CLUSTER_MAX_WORKERS];
    int got = cl_link_allgather(link, &mine, all, sizeof mine);
    if (got)
        return got;
    for (int r = 0; r < cl_link_size(link); r++)
        if (all[r].rc)
            return all[r].rc;
    for (int r = 1; r < cl_link_size(link); r++)
        if (all[r].id != all[0].id || all[r].bytes != all[0].bytes || all[r].hash != all[0].hash)
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    return 0;
}

int simpler_cluster_register_callable(struct simpler_cluster *cluster, int32_t callable_id,
                                      const void *image, size_t bytes)
{
    if (!cluster)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    int rc = register_local(cluster, callable_id, image, bytes);
    if (!cluster->link)
        return rc;
    /* Collective: a rank that refused still takes part, and every rank
     * returns the same code; the callable is on every rank or none. */
    int all = agree_registration(cluster->link, rc, callable_id, image, bytes);
    if (all && !rc) {
        struct cl_link *link = cluster->link;
        cluster->link = NULL; /* the local half only */
        simpler_cluster_unregister_callable(cluster, callable_id);
        cluster->link = link;
    }
    return all;
}

/* Registers on this rank's workers (all or none). */
static int register_local(struct simpler_cluster *cluster, int32_t callable_id,
                          const void *image, size_t bytes)
{
    if (callable_id < 0 || callable_id >= SIMPLER_MAX_CALLABLE_IDS || !image ||
        simpler_callable_validate(image, bytes))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&cluster->lock);
    int rc = idle_state(cluster);
    if (!rc && cluster->callables[callable_id])
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    pthread_mutex_unlock(&cluster->lock);
    if (rc)
        return rc;
    struct cl_callable *callable = sp_host_calloc(1, sizeof *callable);
    if (!callable)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    read_signature(image, callable);
    uint32_t done = 0;
    for (; done < cluster->worker_count; done++)
        if (cluster->workers[done].ctx &&
            (rc = simpler_register_callable(cluster->workers[done].ctx, callable_id, image,
                                            bytes)))
            break;
    if (rc) {
        /* On every worker or on none: take it back from those that took
         * it (nothing has run it, so nothing can hold it). */
        while (done-- > 0)
            if (cluster->workers[done].ctx)
                simpler_unregister_callable(cluster->workers[done].ctx, callable_id);
        free(callable);
        return rc;
    }
    pthread_mutex_lock(&cluster->lock);
    cluster->callables[callable_id] = callable;
    pthread_mutex_unlock(&cluster->lock);
    return 0;
}

int simpler_cluster_unregister_callable(struct simpler_cluster *cluster, int32_t callable_id)
{
    if (!cluster || callable_id < 0 || callable_id >= SIMPLER_MAX_CALLABLE_IDS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&cluster->lock);
    int rc = idle_state(cluster);
    if (!rc && !cluster->callables[callable_id])
        rc = PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT;
    pthread_mutex_unlock(&cluster->lock);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < cluster->worker_count; i++) {
        if (!cluster->workers[i].ctx)
            continue; /* another rank's: its own unregister */
        rc = simpler_unregister_callable(cluster->workers[i].ctx, callable_id);
        if (rc && rc != PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT)
            return rc; /* a retry unregisters what is left */
    }
    pthread_mutex_lock(&cluster->lock);
    free(cluster->callables[callable_id]);
    cluster->callables[callable_id] = NULL;
    pthread_mutex_unlock(&cluster->lock);
    return 0;
}
