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
#include "common/host_alloc.h"
#include "simpler/device.h"

#define CL_DEFAULT_MAX_TASKS 65536u
#define CL_MAX_TASKS_LIMIT (1u << 24)

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

static int check_config(const struct simpler_cluster_config *config)
{
    int devices = 0;
    if (config->worker_count < 1 || config->worker_count > SIMPLER_CLUSTER_MAX_WORKERS ||
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

int simpler_cluster_create(const struct simpler_cluster_config *config,
                           struct simpler_cluster **out)
{
    if (!config || !out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    int rc = check_config(config);
    if (rc)
        return rc;
    struct simpler_config ctx_config;
    if (config->device_config)
        ctx_config = *config->device_config;
    else
        simpler_config_default(&ctx_config);

    uint32_t n = config->worker_count;
    struct simpler_cluster *c =
        sp_host_calloc(1, sizeof *c + (size_t)n * sizeof(struct cl_worker));
    if (!c)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->task_ended, NULL);
    c->worker_count = n;
    c->max_tasks = config->max_tasks;
    c->orch.cluster = c;
    for (uint32_t i = 0; i < n; i++) {
        struct cl_worker *w = &c->workers[i];
        w->cluster = c;
        w->index = i;
        w->device = config->device_ids ? config->device_ids[i] : (int)i;
        w->depth = ctx_config.pipeline_depth;
        pthread_mutex_init(&w->launch_lock, NULL);
        pthread_cond_init(&w->wake, NULL);
    }
    for (uint32_t i = 0; i < n && !rc; i++)
        rc = worker_open(c, i, c->workers[i].device, &ctx_config);
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
    free_cluster(cluster);
    return 0;
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

int simpler_cluster_register_callable(struct simpler_cluster *cluster, int32_t callable_id,
                                      const void *image, size_t bytes)
{
    if (!cluster || callable_id < 0 || callable_id >= SIMPLER_MAX_CALLABLE_IDS || !image ||
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
        if ((rc = simpler_register_callable(cluster->workers[done].ctx, callable_id, image,
                                            bytes)))
            break;
    if (rc) {
        /* On every worker or on none: take it back from those that took
         * it (nothing has run it, so nothing can hold it). */
        while (done-- > 0)
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
