/*
 * host/program.c — program-mode contexts: a context that owns its device.
 *
 * Owns: simpler_init (latch PROGRAM, bind the device, create the launcher,
 * the control stream, the arena and the pipeline slots), the program half
 * of simpler_finalize_device and simpler_destroy_device_context (through
 * the identity ops, context.h), the ready check the run pipeline uses,
 * callable registration and simpler_get_context_info. Must not touch a
 * run's staging or status: the run pipeline owns them.
 */
#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "host/context.h"
#include "host/device_binding.h"
#include "host/program.h"
#include "host/residency.h"
#include "host/run_slot.h"

#define ANY_RUN ((struct sp_runs_of){0})

/*
 * Releases what the context holds, in reverse order of creation, nulling
 * each handle once released: a failure returns its code and leaves the rest
 * for a retry. Used by a failing init (which then ignores the code) and by
 * finalize. Callables first: their unload runs on the control stream.
 */
static int unregister_locked(struct simpler_context *ctx, int32_t callable_id);

static int release_all(struct simpler_context *ctx)
{
    int rc;
    for (uint32_t id = 0; id < SIMPLER_MAX_CALLABLE_IDS && ctx->callable_count; id++) {
        if (ctx->callables[id] && (rc = unregister_locked(ctx, (int32_t)id)))
            return rc;
    }
    if ((rc = sp_slots_release(ctx)))
        return rc;
    free(ctx->slots);
    ctx->slots = NULL;
    if (ctx->arena) {
        if ((rc = sp_dev_free(ctx, ctx->arena, ctx->arena_bytes)))
            return rc;
        ctx->arena = NULL;
    }
    if (ctx->control) {
        if ((rc = simdev_stream_destroy(ctx->control)))
            return rc;
        ctx->control = NULL;
    }
    if (ctx->launcher) {
        rc = rt_launcher_destroy(ctx->launcher); /* frees it whatever it returns */
        ctx->launcher = NULL;
        if (rc)
            return rc;
    }
    return 0;
}

/* Creates what a program context holds: the launcher, the control stream,
 * the arena and the pipeline's slots. On failure release_all undoes it. */
static int create_all(struct simpler_context *ctx, const struct simpler_config *cfg,
                      const struct simdev_config *topo)
{
    struct rt_config capacity;
    sp_rt_config(cfg, &cfg->run_capacity, &capacity);
    int rc = rt_arena_bytes(&capacity, topo, &ctx->arena_bytes);
    if (rc)
        return rc;
    ctx->slots = sp_host_calloc(cfg->pipeline_depth, sizeof *ctx->slots);
    if (!ctx->slots)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    if ((rc = rt_launcher_create(&ctx->launcher)) || (rc = simdev_stream_create(&ctx->control)) ||
        (rc = sp_dev_alloc(ctx, &ctx->arena, ctx->arena_bytes)))
        return rc;
    /* host_build_graph: the build's host memory, committed now as the
     * arena is, so that the first run's build pays no page faults */
    if (capacity.runtime == RT_RUNTIME_HBG &&
        (rc = rt_launcher_hbg_reserve(ctx->launcher, &capacity, topo)))
        return rc;
    ctx->arena_nonce = rt_arena_nonce(); /* a new arena: nothing in it is a run's yet */
    return sp_slots_create(ctx, cfg->pipeline_depth);
}

/* What a failed init could not release (its cleanup failed too) is released
 * now, on the device it was created on. Caller holds ctx->lock; the context
 * is not initialised. */
static int release_leftovers(struct simpler_context *ctx)
{
    if (!ctx->slots && !ctx->launcher && !ctx->control && !ctx->arena)
        return 0;
    int rc = simdev_set_device(ctx->device);
    return rc ? rc : release_all(ctx);
}

/* The program half of simpler_finalize_device. Caller holds ctx->lock. */
static int program_finalize(struct simpler_context *ctx)
{
    int rc = ctx->initialized ? 0 : PTO_RUNTIME_ERR_INVALID_STATE;
    if (!rc && ctx->counters.prepared_calls)
        rc = PTO_RUNTIME_ERR_INVALID_STATE; /* the caller still holds prepared calls */
    if (!rc)
        rc = sp_stranded_only(ctx, ANY_RUN); /* an unfinalized run nobody gave up on */
    if (!rc && ctx->sleepers)
        rc = PTO_RUNTIME_ERR_INVALID_STATE; /* a waiter of a finalized run has not woken yet */
    if (!rc && !(rc = simdev_set_device(ctx->device)) && !(rc = sp_release_stranded(ctx, ANY_RUN)) &&
        !(rc = release_all(ctx))) {
        /* The context owns its device: leave it as it found it. */
        if (!(rc = simdev_device_reset(ctx->device))) {
            sp_device_release(ctx, ctx->device);
            ctx->initialized = false;
            ctx->committed = 0; /* everything was freed above; reset is the proof */
        }
    }
    return rc;
}

/* The program half of simpler_destroy_device_context. Caller holds
 * ctx->lock. */
static int program_before_destroy(struct simpler_context *ctx)
{
    return ctx->initialized ? PTO_RUNTIME_ERR_INVALID_STATE : release_leftovers(ctx);
}

static const struct sp_identity_ops program_ops = {
    .finalize = program_finalize,
    .before_destroy = program_before_destroy,
};

int simpler_init(struct simpler_context *ctx, int device_id, const struct simpler_config *config)
{
    struct simpler_config cfg;
    int rc = sp_init_arguments(ctx, device_id, config, &cfg);
    if (rc)
        return rc;
    /* The identity latches first and stays, whatever happens next. */
    if ((rc = sp_latch_claim(&ctx->latch, SP_IDENTITY_PROGRAM)))
        return rc;
    pthread_mutex_lock(&ctx->lock);
    ctx->identity_ops = &program_ops;
    struct simdev_config topo;
    if (ctx->initialized)
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    else
        rc = release_leftovers(ctx);
    if (!rc && !(rc = simdev_set_device(device_id)) &&
        !(rc = sp_device_usable(device_id, &cfg, &topo)) &&
        !(rc = sp_device_claim(ctx, device_id))) {
        ctx->device = device_id; /* where any leftovers of a failure will be */
        if ((rc = create_all(ctx, &cfg, &topo))) {
            release_all(ctx); /* best effort: the create's code is the answer */
            sp_device_release(ctx, device_id);
        }
    }
    if (!rc) {
        ctx->device = device_id;
        ctx->topo = topo;
        ctx->config = cfg;
        ctx->initialized = true;
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int sp_program_ready(struct simpler_context *ctx)
{
    int rc = sp_latch_require(&ctx->latch, SP_IDENTITY_PROGRAM);
    if (rc)
        return rc;
    if (!ctx->initialized)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    if ((rc = simdev_set_device(ctx->device)))
        return rc;
    return simdev_device_is_lost(ctx->device) ? PTO_RUNTIME_ERR_DEVICE_LOST : 0;
}

int simpler_get_context_info(const struct simpler_context *ctx, struct simpler_context_info *info)
{
    if (!ctx || !info)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct simpler_context *c = (struct simpler_context *)ctx;
    struct simpler_context_info out = {0};
    pthread_mutex_lock(&c->lock);
    /* A kernel context has no runs: its slot count is 0. */
    for (uint32_t i = 0; c->initialized && i < c->slot_count; i++) {
        if (c->slots[i].sub.state == SP_SUBMISSION_NONE)
            continue;
        out.unfinalized_runs++;
        out.stranded_runs += c->slots[i].sub.stranded;
    }
    out.stranded_runs_released = c->stranded_released;
    out.host_preparations = c->counters.host_preparations;
    out.prepared_calls = c->counters.prepared_calls;
    out.packets_encoded = c->counters.packets_encoded;
    out.host_orchestration_loads = c->counters.host_orch_loads;
    out.runtime = c->config.runtime;
    out.host_orchestration_unloads = c->counters.host_orch_unloads;
    /* one identity a context: one of the two is 0 */
    out.host_builds = c->counters.host_builds + c->kernel.host_builds;
    out.host_builds_skipped = c->counters.host_builds_skipped + c->kernel.host_builds_skipped;
    pthread_mutex_unlock(&c->lock);
    *info = out;
    return 0;
}

/* Releases the stranded submissions of `call` before the call goes, as
 * unregistering a callable releases its stranded runs: INVALID_STATE while
 * one of them is not stranded or is waited for. Caller holds ctx->lock. */
int sp_program_release_submissions(struct simpler_context *ctx,
                                   const struct simpler_prepared_call *call)
{
    struct sp_runs_of of = {.call = call};
    int rc = sp_stranded_only(ctx, of);
    if (rc)
        return rc;
    rc = ctx->initialized ? simdev_set_device(ctx->device) : PTO_RUNTIME_ERR_INVALID_STATE;
    return rc ? rc : sp_release_stranded(ctx, of);
}

/* ------------------------------------------------------------- callables */

int simpler_register_callable(struct simpler_context *ctx, int32_t callable_id, const void *image,
                              size_t bytes)
{
    if (!ctx || callable_id < 0 || callable_id >= SIMPLER_MAX_CALLABLE_IDS || !image ||
        simpler_callable_validate(image, bytes))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    int rc = sp_program_ready(ctx);
    if (rc)
        goto out;
    if (ctx->callables[callable_id]) {
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
        goto out;
    }
    if (ctx->callable_count >= ctx->config.max_callables) {
        rc = PTO_RUNTIME_ERR_CALLABLE_COUNT_EXCEEDED;
        goto out;
    }
    struct sp_callable *c;
    if (!(rc = sp_callable_create(ctx, callable_id, image, bytes, &c)))
        sp_residency_add(ctx, c);
out:
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* Caller holds ctx->lock. */
static int unregister_locked(struct simpler_context *ctx, int32_t callable_id)
{
    int rc = sp_program_ready(ctx);
    struct sp_callable *c = ctx->callables[callable_id];
    if (rc == PTO_RUNTIME_ERR_DEVICE_LOST)
        rc = 0; /* unloading host-side state still works on a lost device */
    if (rc)
        return rc;
    if (!c)
        return PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT;
    if (c->prepared_refs)
        return PTO_RUNTIME_ERR_INVALID_STATE; /* a prepared call names it */
    struct sp_runs_of of = {.callable = c};
    if (c->runs && (rc = sp_stranded_only(ctx, of)))
        return rc; /* an unfinalized run nobody gave up on uses it */
    if ((rc = sp_release_stranded(ctx, of)))
        return rc;
    return sp_residency_remove(ctx, c);
}

int simpler_unregister_callable(struct simpler_context *ctx, int32_t callable_id)
{
    if (!ctx || callable_id < 0 || callable_id >= SIMPLER_MAX_CALLABLE_IDS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    int rc = unregister_locked(ctx, callable_id);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}
