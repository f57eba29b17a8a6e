/*
 * host/context.c — what every context does, whichever its identity.
 *
 * Owns: context creation and destruction, simpler_finalize_device (both
 * dispatched through ctx->identity_ops), the config checks both inits
 * share, device binding and device-memory accounting, and loading
 * callables on the device. Must not call program-mode or kernel-mode code
 * by name: those files call this one (context.h says the direction).
 */
#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "host/context.h"
#include "host/device_binding.h"
#include "host/residency.h"

int simpler_config_default(struct simpler_config *out)
{
    if (!out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    out->pipeline_depth = 4;
    out->max_callables = 64;
    out->callable_bytes = 256ull << 20;
    simpler_run_config_default(&out->run_capacity);
    return 0;
}

int simpler_create_device_context(struct simpler_context **out)
{
    if (!out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct simpler_context *ctx = sp_host_calloc(1, sizeof *ctx);
    if (!ctx)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    sp_latch_init(&ctx->latch);
    sp_phase_setup(&ctx->kernel.phase);
    pthread_mutex_init(&ctx->lock, NULL);
    pthread_cond_init(&ctx->waiters_done, NULL);
    ctx->next_run = 1;
    sp_trace_context_init(ctx);
    *out = ctx;
    return 0;
}

int simpler_destroy_device_context(struct simpler_context *ctx)
{
    if (!ctx)
        return 0;
    pthread_mutex_lock(&ctx->lock);
    /* Unlatched: nothing was ever created. */
    int rc = ctx->identity_ops ? ctx->identity_ops->before_destroy(ctx) : 0;
    pthread_mutex_unlock(&ctx->lock);
    if (rc)
        return rc;
    pthread_cond_destroy(&ctx->waiters_done);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return 0;
}

/* ------------------------------------------------------------- lifecycle */

int sp_config_check(const struct simpler_config *c)
{
    if (c->pipeline_depth < 1 || c->pipeline_depth > SIMPLER_MAX_PIPELINE_DEPTH ||
        c->max_callables < 1 || c->max_callables > SIMPLER_MAX_CALLABLE_IDS ||
        c->callable_bytes == 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_config rc;
    rt_config_from_public(&c->run_capacity, &rc);
    return rt_config_check(&rc) ? PTO_RUNTIME_ERR_INVALID_ARGUMENT
                                : sp_trace_config_check(&c->run_capacity);
}

int sp_init_arguments(const struct simpler_context *ctx, int device_id,
                      const struct simpler_config *config, struct simpler_config *cfg)
{
    int count;
    if (!ctx || simdev_device_count(&count) || device_id < 0 || device_id >= count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (config)
        *cfg = *config;
    else
        simpler_config_default(cfg);
    return sp_config_check(cfg);
}

int simpler_finalize_device(struct simpler_context *ctx)
{
    if (!ctx)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    /* Unlatched: never initialised. */
    int rc = ctx->identity_ops ? ctx->identity_ops->finalize(ctx) : PTO_RUNTIME_ERR_INVALID_STATE;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* ------------------------------------------------------------- callables */

/* Unloads and frees a callable's device side. Caller holds ctx->lock. On a
 * failure the callable keeps what it still holds. */
int sp_callable_release(struct simpler_context *ctx, struct sp_callable *c)
{
    int rc;
    if (c->loaded) {
        rc = rt_callable_unload_enqueue(ctx->control, c->record);
        if (rc && rc != PTO_RUNTIME_ERR_DEVICE_LOST)
            return rc;
        /* Enqueued, or the device is lost and runs nothing (its loaded
         * objects stay mapped; what is left is host-side): never again. */
        c->loaded = false;
        ctx->counters.callables_unloaded++;
        if (!rc && (rc = simdev_stream_sync(ctx->control))) {
            sp_drain(ctx->control); /* a failed sync waited for nothing */
            if (rc != PTO_RUNTIME_ERR_DEVICE_LOST)
                return rc; /* the unload has run: a retry only frees */
        }
    }
    if (c->record) {
        if ((rc = sp_dev_free(ctx, c->record, sizeof *c->record)))
            return rc;
        c->record = NULL;
    }
    if (c->image) {
        if ((rc = sp_dev_free(ctx, c->image, c->image_bytes)))
            return rc;
        c->image = NULL;
    }
    return 0;
}

/* Reads the signature into the host record (the image is valid). */
void sp_callable_read_signature(struct sp_callable *c, const struct simpler_callable_header *h)
{
    for (uint32_t i = 0; i < h->sig_count; i++) {
        if (h->signature[i] == SIMPLER_DIR_SCALAR)
            c->scalar_count++;
        else
            c->tensor_directions[c->tensor_count++] = h->signature[i];
    }
}

int sp_callable_load(struct simpler_context *ctx, struct sp_callable *c, const void *image)
{
    int rc;
    /* The loader must run, not be skipped behind an error an earlier op left
     * on the control stream: the undo below relies on the record it writes. */
    int carried = simdev_stream_query(ctx->control);
    if (carried != 0 && carried != PTO_RUNTIME_ERR_NOT_READY)
        simdev_stream_sync(ctx->control);
    /* The record starts zeroed, so that the unload below, after a load op
     * that failed before it ran (its stream said so, not the loader), finds
     * nothing to unload rather than whatever the allocation held. */
    static const struct rt_callable_record empty_record;
    if ((rc = sp_dev_alloc(ctx, &c->image, c->image_bytes)) ||
        (rc = simdev_memcpy(c->image, image, c->image_bytes, SIMDEV_COPY_HOST_TO_DEVICE)) ||
        (rc = sp_dev_alloc(ctx, (void **)&c->record, sizeof *c->record)) ||
        (rc = simdev_memcpy(c->record, &empty_record, sizeof *c->record,
                            SIMDEV_COPY_HOST_TO_DEVICE)) ||
        (rc = rt_callable_load_enqueue(ctx->control, c->image, c->image_bytes,
                                        &ctx->config.run_capacity, c->record))) {
        sp_callable_release(ctx, c);
        return rc;
    }
    if ((rc = simdev_stream_sync(ctx->control))) {
        /* Either the load failed (the loader unloaded what it loaded and
         * zeroed the record), or the sync itself failed and the loader may
         * still be running, or have finished either way. Let it finish, then
         * unload: on a zeroed record that does nothing. */
        sp_drain(ctx->control);
        if (!simdev_device_is_lost(ctx->device)) {
            c->loaded = true;
            ctx->counters.callables_loaded++;
        }
        sp_callable_release(ctx, c);
        return rc;
    }
    c->loaded = true;
    ctx->counters.callables_loaded++;
    struct rt_callable_record prefix; /* the fields before the tables */
    if ((rc = simdev_memcpy(&prefix, c->record, offsetof(struct rt_callable_record, handles),
                            SIMDEV_COPY_DEVICE_TO_HOST))) {
        sp_callable_release(ctx, c);
        return rc;
    }
    c->entry = prefix.entry;
    c->kernel_count = prefix.kernel_count;
    c->config = prefix.config;
    return 0;
}

/* -------------------------------------------------------------- for tests */

void sp_test_counters(struct simpler_context *ctx, struct sp_counters *out)
{
    pthread_mutex_lock(&ctx->lock);
    *out = ctx->counters;
    pthread_mutex_unlock(&ctx->lock);
}

struct sp_latch *sp_test_latch(struct simpler_context *ctx)
{
    return &ctx->latch;
}
