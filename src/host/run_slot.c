/*
 * host/run_slot.c — the pipeline's slots (see run_slot.h): each slot's
 * device resources (created with the context, released at its finalize),
 * finding one, taking a free one for a prepared run, releasing it once its
 * run is over, and stranded runs.
 *
 * Must not stage, launch or wait for a run (run_args.c, pipeline.c do);
 * the array of slots itself is the context's (program.c allocates it).
 */
#include "host/run_slot.h"

#include <string.h>

#include "host/context.h"
#include "host/device_binding.h"
#include "host/residency.h"
#include "host/run_args.h"
#include "host/trace_host.h"

/* ------------------------------------------------------------- resources */

int sp_slots_create(struct simpler_context *ctx, uint32_t depth)
{
    int rc;
    for (uint32_t i = 0; i < depth; i++) {
        struct sp_slot *s = &ctx->slots[i];
        ctx->slot_count++; /* so sp_slots_release sees its partial resources */
        if ((rc = simdev_stream_create(&s->stream)) ||
            (rc = sp_dev_alloc(ctx, (void **)&s->device_args, sizeof *s->device_args)) ||
            (rc = sp_dev_alloc(ctx, (void **)&s->device_result, sizeof *s->device_result)))
            return rc;
    }
    return 0;
}

int sp_slots_release(struct simpler_context *ctx)
{
    int rc;
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
    return 0;
}

/* ------------------------------------------------------------ a run's slot */

struct sp_slot *sp_slot_find(struct simpler_context *ctx, simpler_run_t run)
{
    if (!run)
        return NULL;
    for (uint32_t i = 0; i < ctx->slot_count; i++)
        if (ctx->slots[i].state != SP_SLOT_FREE && ctx->slots[i].run == run)
            return &ctx->slots[i];
    return NULL;
}

int sp_slot_find_free(struct simpler_context *ctx, struct sp_slot **out)
{
    for (uint32_t i = 0; i < ctx->slot_count; i++) {
        if (ctx->slots[i].state == SP_SLOT_FREE) {
            *out = &ctx->slots[i];
            return 0;
        }
    }
    return PTO_RUNTIME_ERR_CAPACITY_EXCEEDED; /* every slot holds an unfinalized run */
}

simpler_run_t sp_slot_acquire(struct simpler_context *ctx, struct sp_slot *s,
                              struct sp_callable *c, const struct rt_config *config)
{
    s->config = *config;
    s->callable = c;
    s->run = ctx->next_run++;
    s->state = SP_SLOT_PREPARED;
    s->waiting = s->completed = s->copied_back = s->restage = s->stranded = false;
    s->status = 0;
    memset(&s->result, 0, sizeof s->result);
    c->runs++;
    ctx->counters.slots_acquired++;
    return s->run;
}

int sp_slot_release(struct simpler_context *ctx, struct sp_slot *s)
{
    int rc = sp_staging_free(ctx, s);
    if (!rc)
        rc = sp_trace_run_release(ctx, s);
    if (rc)
        return rc;
    s->callable->runs--;
    s->callable = NULL;
    s->state = SP_SLOT_FREE;
    s->run = 0;
    s->staging_count = 0;
    s->stranded = false;
    ctx->counters.slots_released++;
    return 0;
}

int sp_slot_synced(struct simpler_context *ctx, struct sp_slot *s, int rc)
{
    if (!rc || simdev_device_is_lost(ctx->device) || simdev_stream_query(s->stream) == 0)
        return 0;
    return rc;
}

/* --------------------------------------------------------- stranded runs */

/* True when the slot holds a run of `callable` (NULL: of any callable). */
static bool holds_run_of(const struct sp_slot *s, const struct sp_callable *callable)
{
    return s->state != SP_SLOT_FREE && (!callable || s->callable == callable);
}

int sp_stranded_only(struct simpler_context *ctx, const struct sp_callable *callable)
{
    for (uint32_t i = 0; i < ctx->slot_count; i++) {
        const struct sp_slot *s = &ctx->slots[i];
        if (holds_run_of(s, callable) && (!s->stranded || s->waiting))
            return PTO_RUNTIME_ERR_INVALID_STATE;
    }
    return 0;
}

int sp_release_stranded(struct simpler_context *ctx, const struct sp_callable *callable)
{
    for (uint32_t i = 0; i < ctx->slot_count; i++) {
        struct sp_slot *s = &ctx->slots[i];
        if (!holds_run_of(s, callable) || !s->stranded)
            continue;
        /* The finalize that failed may not have seen the run end (its wait
         * or a failed launch's drain failed): what is left of it on the
         * device must be over, and its stream clean for the slot's next
         * run, before its staging goes. No other thread waits for it
         * (sp_stranded_only), so the wait holds the lock. */
        bool unfinished = s->restage || (s->state == SP_SLOT_LAUNCHED && !s->completed);
        int rc;
        if ((unfinished && (rc = sp_slot_synced(ctx, s, simdev_stream_sync(s->stream)))) ||
            (rc = sp_slot_release(ctx, s)))
            return rc;
        ctx->stranded_released++;
    }
    return 0;
}

/* -------------------------------------------------------------- for tests */

int sp_test_run_snapshot(struct simpler_context *ctx, simpler_run_t run,
                         struct simpler_orch_args *out)
{
    pthread_mutex_lock(&ctx->lock);
    struct sp_slot *s = sp_slot_find(ctx, run);
    if (s)
        *out = s->snapshot;
    pthread_mutex_unlock(&ctx->lock);
    return s ? 0 : PTO_RUNTIME_ERR_INVALID_STATE;
}
