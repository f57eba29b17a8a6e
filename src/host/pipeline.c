/*
 * host/pipeline.c — the program-mode run pipeline: a run's way through its
 * slot, from prepare to finalize.
 *
 * Owns: prepare (check the args against the callable, snapshot them into
 * a free slot, stage host tensors into device buffers the run owns),
 * launch (enqueue on the device behind every earlier launch), poll/wait
 * (this run's status, from this run's own stream), finalize (copy outputs
 * back, free the staging, release the slot exactly once) and simpler_run.
 * Its interface is simpler.h's run functions. Must not create or destroy
 * context-wide resources: program.c owns them.
 *
 * Ordering: every run's chain goes through the context's one launcher, whose
 * streams execute runs in launch order; each slot's own stream joins the
 * chain at its start and end and so carries exactly its run's status.
 */
#include <string.h>

#include "host/context.h"
#include "host/program.h"
#include "host/residency.h"
#include "host/run_args.h"
#include "host/run_slot.h"
#include "host/trace_host.h"

/* The checks of a prepare before any state: the args' structure and, when
 * given, the run config (into *rtc). 0 or INVALID_ARGUMENT. */
static int check_prepare(const struct simpler_args *args, const struct simpler_run_config *config,
                         struct rt_config *rtc)
{
    int rc = sp_run_args_check(args);
    if (!rc && config) {
        rt_config_from_public(config, rtc);
        if (!(rc = rt_config_check(rtc)))
            rc = sp_trace_config_check(config);
    }
    return rc;
}

/* The resident callable `callable_id` into *out, when `args` match its
 * signature: CALLABLE_NOT_RESIDENT or INVALID_ARGUMENT otherwise. Caller
 * holds ctx->lock. */
static int resolve_callable(struct simpler_context *ctx, int32_t callable_id,
                            const struct simpler_args *args, struct sp_callable **out)
{
    struct sp_callable *c = ctx->callables[callable_id];
    if (!c)
        return PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT;
    if (args->tensor_count != c->tensor_count || args->scalar_count != c->scalar_count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT; /* does not match the signature */
    *out = c;
    return 0;
}

/* The run's config: `config`'s (already in *rtc) or, when NULL, the
 * callable's, checked against the context, with its scheduler threads in
 * *schedulers. INVALID_ARGUMENT (more schedulers than the device has, or
 * what a config function left), CAPACITY_EXCEEDED (bigger than the
 * context's run capacity) or rt_arena_bytes's code. Caller holds ctx->lock. */
static int fit_run_config(struct simpler_context *ctx, const struct sp_callable *c,
                          const struct simpler_run_config *config, struct rt_config *rtc,
                          uint32_t *schedulers)
{
    size_t need;
    int rc;
    if (!config)
        rt_config_from_public(&c->config, rtc);
    *schedulers = rtc->scheduler_threads ? rtc->scheduler_threads : ctx->topo.aicpu_threads - 1;
    if (*schedulers + 1 > ctx->topo.aicpu_threads || rt_config_check(rtc))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if ((rc = rt_arena_bytes(rtc, &ctx->topo, &need)))
        return rc;
    return need > ctx->arena_bytes ? PTO_RUNTIME_ERR_CAPACITY_EXCEEDED : 0;
}

/* Fills the free slot `s` for a run of `c` with `args`: the owned
 * snapshot, the run's trace (at the level of `pub`, the run's public
 * config) attached to *rtc, and the args staged and copied in. On failure
 * undoes what it did; what cannot be freed stays recorded in the slot.
 * Caller holds ctx->lock. */
static int stage_run(struct simpler_context *ctx, struct sp_slot *s, const struct sp_callable *c,
                     const struct simpler_args *args, const struct simpler_run_config *pub,
                     uint32_t schedulers, struct rt_config *rtc)
{
    sp_run_args_snapshot(s, args);
    /* Staging a prepare before could not free (its undo failed) goes now. */
    int rc = sp_staging_free(ctx, s);
    if (rc)
        return rc;
    s->staging_count = 0;
    if ((rc = sp_trace_run_open(ctx, s, sp_trace_level(ctx, pub), schedulers, pub->trace_records,
                                rtc)))
        return rc;
    uint64_t stage_begin = sp_trace_now(s);
    if ((rc = sp_staging_alloc(ctx, s)) || (rc = sp_staging_copy_in(s, c))) {
        /* Undo: a free that fails is tried once more; what still cannot be
         * freed stays recorded in the slot, for the next prepare on it or
         * finalize_device. The staging's code is the answer. */
        if (sp_staging_free(ctx, s))
            sp_staging_free(ctx, s);
        if (sp_trace_run_release(ctx, s))
            sp_trace_run_release(ctx, s);
        return rc;
    }
    sp_trace_span(s, SP_SPAN_STAGE, stage_begin);
    return 0;
}

int simpler_prepare_run(struct simpler_context *ctx, simpler_run_t *run, int32_t callable_id,
                        const struct simpler_args *args, const struct simpler_run_config *config)
{
    if (!ctx || !run || !args || callable_id < 0 || callable_id >= SIMPLER_MAX_CALLABLE_IDS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    uint64_t prepare_begin = simdev_clock_ns(); /* the host span, if the run traces */
    struct rt_config rtc;
    int rc = check_prepare(args, config, &rtc);
    if (rc)
        return rc;
    pthread_mutex_lock(&ctx->lock);
    struct sp_callable *c;
    struct sp_slot *s;
    uint32_t schedulers;
    if (!(rc = sp_program_ready(ctx)) && !(rc = resolve_callable(ctx, callable_id, args, &c)) &&
        !(rc = fit_run_config(ctx, c, config, &rtc, &schedulers)) &&
        !(rc = sp_slot_find_free(ctx, &s)) &&
        !(rc = stage_run(ctx, s, c, args, config ? config : &c->config, schedulers, &rtc))) {
        *run = sp_slot_acquire(ctx, s, c, &rtc);
        sp_trace_span(s, SP_SPAN_PREPARE, prepare_begin);
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int simpler_launch_run(struct simpler_context *ctx, simpler_run_t run)
{
    if (!ctx || !run)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    struct sp_slot *s = NULL;
    int rc = sp_program_ready(ctx);
    if (!rc && (!(s = sp_slot_find(ctx, run)) || s->state != SP_SLOT_PREPARED))
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    /* After a failed launch the kernels may have run on the staged buffers:
     * stage the inputs again from the host. */
    if (!rc && s->restage && !(rc = sp_staging_copy_in(s, s->callable)))
        s->restage = false;
    if (!rc) {
        uint64_t launch_begin = sp_trace_now(s);
        struct rt_run_request rq = {
            .entry = s->callable->entry,
            .kernels = s->callable->record->kernels,
            .kernel_count = s->callable->kernel_count,
            .args = s->device_args,
            .arena = ctx->arena,
            .arena_bytes = ctx->arena_bytes,
            .arena_nonce = ctx->arena_nonce,
            .result = s->device_result,
            .config = s->config,
        };
        /* On failure rt_run_enqueue has drained whatever part of the chain
         * it enqueued; the run stays prepared and may be launched again. */
        if ((rc = rt_run_enqueue(ctx->launcher, s->stream, &rq))) {
            s->restage = true;
        } else {
            s->generation = rt_launcher_generation(ctx->launcher);
            s->state = SP_SLOT_LAUNCHED;
            ctx->counters.launches++;
            sp_trace_span(s, SP_SPAN_LAUNCH, launch_begin);
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/*
 * Latches the final status of a run whose stream has drained and is clean
 * again (its carried error, `carried`, cleared by a sync, so the slot's next
 * run starts clean). The status comes from the run's result block — the
 * device's own record, which a failed host-side call cannot fake — when the
 * block is this run's (its generation); a block an earlier run left there
 * means this run never ran (an op before it failed and it was skipped): its
 * status is then the error its stream carried. 0 once latched; else the
 * read's code, with nothing latched (the caller may retry). Caller holds
 * ctx->lock.
 */
static int latch_status(struct simpler_context *ctx, struct sp_slot *s, int carried)
{
    int rc;
    if (simdev_device_is_lost(ctx->device)) {
        s->status = PTO_RUNTIME_ERR_DEVICE_LOST;
    } else if ((rc = simdev_memcpy(&s->result, s->device_result, sizeof s->result,
                                   SIMDEV_COPY_DEVICE_TO_HOST))) {
        return rc;
    } else if (s->result.generation != s->generation) {
        memset(&s->result, 0, sizeof s->result);
        s->status = carried ? carried : PTO_RUNTIME_ERR_INTERNAL;
        s->result.status = s->status;
    } else {
        /* The run's own status, or, when it succeeded, an error the chain
         * carried after it (a failed record or wait of the chain): nothing
         * the device reported is dropped. */
        s->status = s->result.status ? s->result.status : carried;
    }
    s->completed = true;
    return 0;
}

/* Syncs the run's stream; *carried is what the sync returned. 0 when the
 * stream is now drained and clean, else the sync's own failure
 * (sp_slot_synced). The stream's state just before the sync settles the one
 * case sp_slot_synced cannot tell: a stream already drained and clean carries nothing, so a
 * failed sync of it failed by itself — even though the stream reads clean
 * afterwards (a run that ended before the wait began, then a failed sync,
 * must not take the sync's code as its status). */
static int sync_run_stream(struct simpler_context *ctx, struct sp_slot *s, int *carried)
{
    int before = simdev_stream_query(s->stream);
    int rc = simdev_stream_sync(s->stream);
    *carried = rc;
    if (rc && before == 0 && !simdev_device_is_lost(ctx->device))
        return rc;
    return sp_slot_synced(ctx, s, rc);
}

/* Waits, without the lock, until the launched run in *slot completes, and
 * latches its status. Caller holds ctx->lock; it is held again on return.
 * While this thread sleeps because another thread waits for the same run,
 * that thread may finalize the run and the slot take the next one: the slot
 * is looked up again by `run` after every sleep, and *slot updated (NULL,
 * INVALID_STATE: the run was finalized meanwhile). 0, or the code of a
 * failed wait (nothing latched). */
static int await(struct simpler_context *ctx, simpler_run_t run, struct sp_slot **slot)
{
    struct sp_slot *s = *slot;
    uint64_t wait_begin = s->completed ? 0 : sp_trace_now(s);
    while (!s->completed) {
        if (s->waiting) {
            ctx->sleepers++; /* finalize_device waits for none, refuses instead */
            pthread_cond_wait(&ctx->waiters_done, &ctx->lock);
            ctx->sleepers--;
            if (!(s = *slot = sp_slot_find(ctx, run)) || s->state != SP_SLOT_LAUNCHED)
                return PTO_RUNTIME_ERR_INVALID_STATE;
            continue;
        }
        s->waiting = true;
        pthread_mutex_unlock(&ctx->lock);
        int carried;
        int sync_rc = sync_run_stream(ctx, s, &carried);
        pthread_mutex_lock(&ctx->lock);
        s->waiting = false;
        pthread_cond_broadcast(&ctx->waiters_done);
        int rc;
        if ((rc = sync_rc) || (rc = latch_status(ctx, s, carried)))
            return rc;
    }
    if (wait_begin)
        sp_trace_span(s, SP_SPAN_WAIT, wait_begin);
    return 0;
}

/* The launched run's slot, or NULL with *rc set. Caller holds ctx->lock. */
static struct sp_slot *launched_slot(struct simpler_context *ctx, simpler_run_t run, int *rc)
{
    struct sp_slot *s = NULL;
    *rc = sp_latch_require(&ctx->latch, SP_IDENTITY_PROGRAM);
    if (!*rc && (!ctx->initialized || !(s = sp_slot_find(ctx, run)) || s->state != SP_SLOT_LAUNCHED))
        *rc = PTO_RUNTIME_ERR_INVALID_STATE;
    if (!*rc)
        *rc = simdev_set_device(ctx->device);
    return *rc ? NULL : s;
}

int simpler_poll_run(struct simpler_context *ctx, simpler_run_t run)
{
    if (!ctx || !run)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    int rc;
    struct sp_slot *s = launched_slot(ctx, run, &rc);
    if (s && !s->completed) {
        int carried = s->waiting ? PTO_RUNTIME_ERR_NOT_READY : simdev_stream_query(s->stream);
        if (carried == PTO_RUNTIME_ERR_NOT_READY)
            rc = PTO_RUNTIME_ERR_NOT_READY;
        else if (!(rc = carried ? sp_slot_synced(ctx, s, simdev_stream_sync(s->stream)) : 0))
            rc = latch_status(ctx, s, carried);
    }
    if (s && s->completed)
        rc = s->status;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int simpler_wait_run(struct simpler_context *ctx, simpler_run_t run)
{
    if (!ctx || !run)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    int rc;
    struct sp_slot *s = launched_slot(ctx, run, &rc);
    if (s && !(rc = await(ctx, run, &s)))
        rc = s->status;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int simpler_get_run_info(struct simpler_context *ctx, simpler_run_t run,
                         struct simpler_run_info *info)
{
    if (!ctx || !run || !info)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    int rc;
    struct sp_slot *s = launched_slot(ctx, run, &rc);
    if (s && !s->completed)
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    else if (s) {
        memset(info, 0, sizeof *info);
        info->status = s->status;
        info->tasks_submitted = s->result.tasks_submitted;
        info->tasks_completed = s->result.tasks_completed;
        info->edges = s->result.edges;
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int simpler_finalize_run(struct simpler_context *ctx, simpler_run_t run)
{
    if (!ctx || !run)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    struct sp_slot *s = NULL;
    int rc = sp_latch_require(&ctx->latch, SP_IDENTITY_PROGRAM);
    if (!rc && (!ctx->initialized || !(s = sp_slot_find(ctx, run))))
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    if (!rc)
        rc = simdev_set_device(ctx->device);
    if (rc)
        goto out;
    uint64_t finalize_begin = sp_trace_now(s);
    if (s->restage) {
        /* A launch failed part-way: its work on the run's stream must be
         * over before the staging goes (the error it carries is not this
         * run's status; the run never ran). */
        int drained = simdev_stream_sync(s->stream);
        if (drained && simdev_stream_query(s->stream) == PTO_RUNTIME_ERR_NOT_READY) {
            rc = drained; /* the sync itself failed: nothing was drained */
            goto failed;
        }
    }
    if (s->state == SP_SLOT_LAUNCHED) {
        if ((rc = await(ctx, run, &s)))
            goto failed; /* not known to be over: nothing may be released */
        if (s->status == 0 && !s->copied_back) {
            uint64_t copy_begin = sp_trace_now(s);
            rc = sp_staging_copy_back(s);
            if (rc && rc != PTO_RUNTIME_ERR_DEVICE_LOST)
                goto failed; /* outputs not delivered yet: a retry copies again */
            s->copied_back = true;
            sp_trace_span(s, SP_SPAN_COPY_BACK, copy_begin);
        }
        sp_trace_span(s, SP_SPAN_FINALIZE, finalize_begin);
        sp_trace_run_write(ctx, s); /* failed runs too */
    }
    if (!(rc = sp_slot_release(ctx, s)))
        goto out;
failed:
    /* A device operation failed: the run keeps its slot, and a retry does
     * what is left. If nobody retries (simpler_run gave up), finalize_device
     * or unregistering the callable may release it. NULL: await found the
     * run finalized by another thread (INVALID_STATE). */
    if (s)
        s->stranded = true;
out:
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* Finalizes a run simpler_run made; the handle never leaves simpler_run, so
 * a failed finalize (a device operation failing once) is retried here
 * rather than left holding the slot. */
static int finalize_own_run(struct simpler_context *ctx, simpler_run_t run)
{
    int rc = 0;
    for (int attempt = 0; attempt < 3; attempt++)
        if (!(rc = simpler_finalize_run(ctx, run)) || rc == PTO_RUNTIME_ERR_INVALID_STATE)
            break;
    return rc;
}

int simpler_run(struct simpler_context *ctx, int32_t callable_id, const struct simpler_args *args,
                const struct simpler_run_config *config, struct simpler_run_info *info)
{
    simpler_run_t run;
    int rc = simpler_prepare_run(ctx, &run, callable_id, args, config);
    if (rc)
        return rc;
    if ((rc = simpler_launch_run(ctx, run))) {
        finalize_own_run(ctx, run);
        return rc;
    }
    int status = simpler_wait_run(ctx, run);
    struct simpler_run_info known;
    /* A wait that failed itself (not the run) is tried again, like the
     * finalize: the handle never leaves this call. */
    for (int attempt = 1; attempt < 3 && simpler_get_run_info(ctx, run, &known); attempt++)
        status = simpler_wait_run(ctx, run);
    if (simpler_get_run_info(ctx, run, &known))
        memset(&known, 0, sizeof known); /* still not known to be over */
    else
        status = known.status;
    if (info)
        *info = known;
    rc = finalize_own_run(ctx, run);
    return status ? status : rc;
}
