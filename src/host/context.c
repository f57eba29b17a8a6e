/*
 * host/context.c — program-mode contexts and their callables.
 *
 * Owns: context creation and destruction, simpler_init (latch PROGRAM, bind
 * the device, create the launcher, the control stream, the arena and the
 * pipeline slots), simpler_finalize_device, device-memory accounting, and
 * callable registration (validate, upload once, load on the device).
 * Must not touch a run's staging: run.c owns the pipeline.
 */
#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "host/context.h"
#include "host/device_binding.h"
#include "host/kernel_mode.h"
#include "host/program.h"
#include "host/residency.h"
#include "host/run_args.h"
#include "host/run_slot.h"

void (*sp_test_staging_free_hook)(void *device, size_t bytes);

/* Devices owned by an initialised program context: a program context owns
 * its device (it resets it at finalize), so a second one may not bind it. */
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

static int release_all(struct simpler_context *ctx);

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

int simpler_destroy_device_context(struct simpler_context *ctx)
{
    if (!ctx)
        return 0;
    pthread_mutex_lock(&ctx->lock);
    int rc;
    if (sp_latch_identity(&ctx->latch) == SP_IDENTITY_KERNEL) {
        /* Only a context that never initialised or closed completely: one
         * with leftovers of a failed close keeps them for a retry. */
        enum sp_phase_kind phase = sp_phase_current(&ctx->kernel.phase);
        rc = phase == SP_PHASE_NEW || phase == SP_PHASE_CLOSED ? 0 : PTO_RUNTIME_ERR_INVALID_STATE;
    } else {
        rc = ctx->initialized ? PTO_RUNTIME_ERR_INVALID_STATE : release_leftovers(ctx);
    }
    pthread_mutex_unlock(&ctx->lock);
    if (rc)
        return rc;
    pthread_cond_destroy(&ctx->waiters_done);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return 0;
}

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

int simpler_get_context_info(const struct simpler_context *ctx, struct simpler_context_info *info)
{
    if (!ctx || !info)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (sp_latch_identity(&ctx->latch) == SP_IDENTITY_KERNEL)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    struct simpler_context *c = (struct simpler_context *)ctx;
    struct simpler_context_info out = {0};
    pthread_mutex_lock(&c->lock);
    for (uint32_t i = 0; c->initialized && i < c->slot_count; i++) {
        if (c->slots[i].state == SP_SLOT_FREE)
            continue;
        out.unfinalized_runs++;
        out.stranded_runs += c->slots[i].stranded;
    }
    out.stranded_runs_released = c->stranded_released;
    pthread_mutex_unlock(&c->lock);
    *info = out;
    return 0;
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

int sp_drain(simdev_stream_t stream)
{
    int rc;
    do
        rc = simdev_stream_sync(stream);
    while (rc && rc != PTO_RUNTIME_ERR_DEVICE_LOST &&
           simdev_stream_query(stream) == PTO_RUNTIME_ERR_NOT_READY);
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
    while (ctx->slot_count > 0) {
        struct sp_slot *s = &ctx->slots[ctx->slot_count - 1];
        if ((rc = sp_staging_free(ctx, s))) /* left by a prepare whose undo failed */
            return rc;
        if (s->device_result) {
            if ((rc = sp_dev_free(ctx, s->device_result, sizeof *s->device_result)))
                return rc;
            s->device_result = NULL;
        }
        if (s->device_args) {
            if ((rc = sp_dev_free(ctx, s->device_args, sizeof *s->device_args)))
                return rc;
            s->device_args = NULL;
        }
        if (s->stream) {
            if ((rc = simdev_stream_destroy(s->stream)))
                return rc;
            s->stream = NULL;
        }
        ctx->slot_count--;
    }
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

static int create_all(struct simpler_context *ctx, const struct simpler_config *cfg,
                      const struct simdev_config *topo)
{
    struct rt_config capacity;
    rt_config_from_public(&cfg->run_capacity, &capacity);
    int rc = rt_arena_bytes(&capacity, topo, &ctx->arena_bytes);
    if (rc)
        return rc;
    ctx->slots = sp_host_calloc(cfg->pipeline_depth, sizeof *ctx->slots);
    if (!ctx->slots)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    if ((rc = rt_launcher_create(&ctx->launcher)) || (rc = simdev_stream_create(&ctx->control)) ||
        (rc = sp_dev_alloc(ctx, &ctx->arena, ctx->arena_bytes)))
        return rc;
    ctx->arena_nonce = rt_arena_nonce(); /* a new arena: nothing in it is a run's yet */
    for (uint32_t i = 0; i < cfg->pipeline_depth; i++) {
        struct sp_slot *s = &ctx->slots[i];
        ctx->slot_count++; /* so release_all sees its partial resources */
        if ((rc = simdev_stream_create(&s->stream)) ||
            (rc = sp_dev_alloc(ctx, (void **)&s->device_args, sizeof *s->device_args)) ||
            (rc = sp_dev_alloc(ctx, (void **)&s->device_result, sizeof *s->device_result)))
            return rc;
    }
    return 0;
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

int simpler_finalize_device(struct simpler_context *ctx)
{
    if (!ctx)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    if (sp_latch_identity(&ctx->latch) == SP_IDENTITY_KERNEL) {
        int rc = sp_kernel_finalize(ctx);
        pthread_mutex_unlock(&ctx->lock);
        return rc;
    }
    int rc = sp_latch_require(&ctx->latch, SP_IDENTITY_PROGRAM);
    if (!rc && !ctx->initialized)
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    if (!rc)
        rc = sp_stranded_only(ctx, NULL); /* an unfinalized run nobody gave up on */
    if (!rc && ctx->sleepers)
        rc = PTO_RUNTIME_ERR_INVALID_STATE; /* a waiter of a finalized run has not woken yet */
    if (!rc && !(rc = simdev_set_device(ctx->device)) && !(rc = sp_release_stranded(ctx, NULL)) &&
        !(rc = release_all(ctx))) {
        /* The context owns its device: leave it as it found it. */
        if (!(rc = simdev_device_reset(ctx->device))) {
            sp_device_release(ctx, ctx->device);
            ctx->initialized = false;
            ctx->committed = 0; /* everything was freed above; reset is the proof */
        }
    }
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
    if (bytes > ctx->config.callable_bytes - ctx->callable_bytes) {
        rc = PTO_RUNTIME_ERR_CALLABLE_BYTES_EXCEEDED;
        goto out;
    }
    struct sp_callable *c = sp_host_calloc(1, sizeof *c);
    if (!c) {
        rc = PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        goto out;
    }
    struct simpler_callable_header h;
    memcpy(&h, image, sizeof h);
    c->id = callable_id;
    c->image_bytes = bytes;
    sp_callable_read_signature(c, &h);
    if ((rc = sp_callable_load(ctx, c, image))) {
        free(c);
        goto out;
    }
    ctx->callables[callable_id] = c;
    ctx->callable_count++;
    ctx->callable_bytes += bytes;
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
    if (c->runs && (rc = sp_stranded_only(ctx, c)))
        return rc; /* an unfinalized run nobody gave up on uses it */
    if ((rc = sp_release_stranded(ctx, c)) || (rc = sp_callable_release(ctx, c)))
        return rc;
    ctx->callable_bytes -= c->image_bytes;
    ctx->callable_count--;
    ctx->callables[callable_id] = NULL;
    free(c);
    return 0;
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
