/*
 * host/device_binding.c — a context's hold on its device (see
 * device_binding.h): the binding, whether the device can run rounds, the
 * device memory the context commits, draining one of its streams.
 *
 * Must not know either identity's resources, nor call program-mode or
 * kernel-mode code: both call this file.
 */
#include "host/device_binding.h"

#include <pthread.h>

#include "host/context.h"

/* Devices bound by an initialised context: a program context owns its
 * device (it resets it at finalize) and a kernel context its binding there,
 * so a second one may not bind it. */
static pthread_mutex_t owners_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct simpler_context *owners[SIMDEV_MAX_DEVICES];

int sp_device_claim(const struct simpler_context *ctx, int device)
{
    pthread_mutex_lock(&owners_lock);
    int rc = owners[device] && owners[device] != ctx ? PTO_RUNTIME_ERR_INVALID_STATE : 0;
    if (!rc)
        owners[device] = ctx;
    pthread_mutex_unlock(&owners_lock);
    return rc;
}

void sp_device_release(const struct simpler_context *ctx, int device)
{
    pthread_mutex_lock(&owners_lock);
    if (owners[device] == ctx)
        owners[device] = NULL;
    pthread_mutex_unlock(&owners_lock);
}

/* ------------------------------------------------------------ the device */

bool sp_topology_runs_rounds(const struct simdev_config *topo)
{
    /* One orchestrator + one scheduler at least, and a core to run on. */
    return topo->aicpu_threads >= 2 && topo->aic_cores + topo->aiv_cores > 0;
}

int sp_device_usable(int device_id, const struct simpler_config *cfg, struct simdev_config *topo)
{
    int rc = simdev_device_get_config(device_id, topo);
    if (rc)
        return rc;
    if (simdev_device_is_lost(device_id))
        return PTO_RUNTIME_ERR_DEVICE_LOST;
    if (!sp_topology_runs_rounds(topo))
        return PTO_RUNTIME_ERR_UNSUPPORTED;
    if (cfg->run_capacity.scheduler_threads + 1 > topo->aicpu_threads)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT; /* more schedulers than the device has threads */
    return 0;
}

/* --------------------------------------------------------------- memory */

size_t simpler_committed_device_memory(const struct simpler_context *ctx)
{
    if (!ctx)
        return 0;
    struct simpler_context *c = (struct simpler_context *)ctx;
    pthread_mutex_lock(&c->lock);
    size_t bytes = c->committed;
    pthread_mutex_unlock(&c->lock);
    return bytes;
}

int sp_dev_alloc(struct simpler_context *ctx, void **out, size_t bytes)
{
    int rc = simdev_malloc(out, bytes);
    if (!rc)
        ctx->committed += bytes;
    return rc;
}

int sp_dev_free(struct simpler_context *ctx, void *ptr, size_t bytes)
{
    int rc = simdev_free(ptr);
    if (!rc)
        ctx->committed -= bytes;
    return rc;
}
