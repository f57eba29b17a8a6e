/*
 * host/run_slot.c — the pipeline's slots (see run_slot.h): each slot's
 * working set (created with the context, released at its finalize),
 * finding one, taking a free one for a submission, releasing it once the
 * submission is over, and stranded runs.
 *
 * Must not stage, launch or wait for a run (working_set.c, pipeline.c do);
 * the array of slots itself is the context's (program.c allocates it).
 */
#include "host/run_slot.h"

#include <assert.h>
#include <string.h>

#include "host/context.h"
#include "host/device_binding.h"
#include "host/residency.h"
#include "host/trace_host.h"

/* ------------------------------------------------------------- resources */

int sp_slots_create(struct simpler_context *ctx, uint32_t depth)
{
    int rc;
    for (uint32_t i = 0; i < depth; i++) {
        ctx->slot_count++; /* so sp_slots_release sees its partial resources */
        if ((rc = sp_working_set_create(ctx, &ctx->slots[i].ws)))
            return rc;
    }
    return 0;
}

int sp_slots_release(struct simpler_context *ctx)
{
    int rc;
    while (ctx->slot_count > 0) {
        if ((rc = sp_working_set_release(ctx, &ctx->slots[ctx->slot_count - 1].ws)))
            return rc;
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
        if (ctx->slots[i].sub.state != SP_SUBMISSION_NONE && ctx->slots[i].sub.run == run)
            return &ctx->slots[i];
    return NULL;
}

int sp_slot_find_free(struct simpler_context *ctx, struct sp_slot **out)
{
    for (uint32_t i = 0; i < ctx->slot_count; i++) {
        if (ctx->slots[i].sub.state == SP_SUBMISSION_NONE) {
            *out = &ctx->slots[i];
            return 0;
        }
    }
    return PTO_RUNTIME_ERR_CAPACITY_EXCEEDED; /* every slot holds an unfinalized run */
}

simpler_run_t sp_slot_acquire(struct simpler_context *ctx, struct sp_slot *s,
                              struct simpler_prepared_call *call, const struct rt_config *config)
{
    sp_submission_begin(&s->sub, ctx->next_run++, call, config);
    ctx->counters.slots_acquired++;
    assert(sp_call_check_refs(ctx));
    return s->sub.run;
}

int sp_slot_release(struct simpler_context *ctx, struct sp_slot *s)
{
    int rc = sp_staging_free(ctx, &s->ws);
    if (!rc)
        rc = sp_trace_run_release(ctx, &s->sub);
    if (rc)
        return rc;
    sp_submission_end(&s->sub);
    s->ws.staging_count = 0;
    ctx->counters.slots_released++;
    assert(sp_call_check_refs(ctx));
    return 0;
}

int sp_slot_synced(struct simpler_context *ctx, struct sp_slot *s, int rc)
{
    if (!rc || simdev_device_is_lost(ctx->device) || simdev_stream_query(s->ws.stream) == 0)
        return 0;
    return rc;
}

/* --------------------------------------------------------- stranded runs */

/* True when the slot holds a run `of` names. */
static bool holds_run_of(const struct sp_slot *s, struct sp_runs_of of)
{
    return s->sub.state != SP_SUBMISSION_NONE &&
           (!of.callable || s->sub.call->callable == of.callable) &&
           (!of.call || s->sub.call == of.call);
}

int sp_stranded_only(struct simpler_context *ctx, struct sp_runs_of of)
{
    for (uint32_t i = 0; i < ctx->slot_count; i++) {
        const struct sp_slot *s = &ctx->slots[i];
        if (holds_run_of(s, of) && (!s->sub.stranded || s->sub.waiting))
            return PTO_RUNTIME_ERR_INVALID_STATE;
    }
    return 0;
}

int sp_release_stranded(struct simpler_context *ctx, struct sp_runs_of of)
{
    for (uint32_t i = 0; i < ctx->slot_count; i++) {
        struct sp_slot *s = &ctx->slots[i];
        if (!holds_run_of(s, of) || !s->sub.stranded)
            continue;
        /* The finalize that failed may not have seen the run end (its wait
         * or a failed launch's drain failed): what is left of it on the
         * device must be over, and its stream clean for the slot's next
         * run, before its staging goes. No other thread waits for it
         * (sp_stranded_only), so the wait holds the lock. */
        bool unfinished =
            s->sub.restage || (s->sub.state == SP_SUBMISSION_LAUNCHED && !s->sub.completed);
        int rc;
        if ((unfinished && (rc = sp_slot_synced(ctx, s, simdev_stream_sync(s->ws.stream)))) ||
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
        *out = s->sub.call->args;
    pthread_mutex_unlock(&ctx->lock);
    return s ? 0 : PTO_RUNTIME_ERR_INVALID_STATE;
}
