/*
 * host/pipeline.c — the program-mode run pipeline: a run's way through its
 * slot, from prepare to finalize.
 *
 * Owns: a submission's stage (take a free slot, stage the prepared call's
 * host tensors into device buffers the run owns, as they are at that
 * moment), launch (enqueue on the device behind every earlier launch),
 * poll/wait (this run's status, from this run's own stream), finalize (copy
 * outputs back, free the staging, release the slot exactly once);
 * simpler_prepare_run (a single-use prepared call, prepared_call.c, held in
 * the slot), simpler_submit_call and simpler_run. Its interface is
 * simpler.h's run functions. Must not create or destroy context-wide
 * resources (program.c owns them) nor write a prepared call.
 *
 * Ordering: every run's chain goes through the context's one launcher, whose
 * streams execute runs in launch order; each slot's own stream joins the
 * chain at its start and end and so carries exactly its run's status.
 */
#include <string.h>

#include "host/context.h"
#include "host/hbg_image.h"
#include "host/program.h"
#include "host/residency.h"
#include "host/prepared_call.h"
#include "host/run_slot.h"
#include "host/trace_host.h"

/* Fills the free slot `s` for a submission of `call`: the run's trace (at
 * the level of the call's public config) attached to *rtc (the call's
 * config), and the call's host tensors staged and copied in as they are
 * now. On failure undoes what it did; what cannot be freed stays recorded
 * in the slot. Caller holds ctx->lock. */
static int stage_submission(struct simpler_context *ctx, struct sp_slot *s,
                            const struct simpler_prepared_call *call, struct rt_config *rtc)
{
    /* Staging a submission before could not free (its undo failed) goes now. */
    int rc = sp_staging_free(ctx, &s->ws);
    if (rc)
        return rc;
    s->ws.staging_count = 0;
    *rtc = call->config;
    const struct simpler_run_config *pub = &call->public_config;
    if ((rc = sp_trace_run_open(ctx, &s->sub, sp_trace_level(ctx, pub), call->schedulers,
                                pub->trace_records, rtc)))
        return rc;
    uint64_t stage_begin = sp_trace_now(&s->sub);
    if ((rc = sp_staging_alloc(ctx, &s->ws, call)) || (rc = sp_staging_copy_in(&s->ws, call))) {
        /* Undo: a free that fails is tried once more; what still cannot be
         * freed stays recorded in the slot, for the next submission on it
         * or finalize_device. The staging's code is the answer. */
        if (sp_staging_free(ctx, &s->ws))
            sp_staging_free(ctx, &s->ws);
        if (sp_trace_run_release(ctx, &s->sub))
            sp_trace_run_release(ctx, &s->sub);
        return rc;
    }
    sp_trace_span(&s->sub, SP_SPAN_STAGE, stage_begin);
    return 0;
}

/* Stages a submission of `call` in the free slot `s` and takes the slot
 * for it: its handle into *run. Caller holds ctx->lock. */
static int submit_staged(struct simpler_context *ctx, struct sp_slot *s,
                         struct simpler_prepared_call *call, simpler_run_t *run)
{
    struct rt_config rtc;
    int rc = stage_submission(ctx, s, call, &rtc);
    if (!rc)
        *run = sp_slot_acquire(ctx, s, call, &rtc);
    return rc;
}

int simpler_prepare_run(struct simpler_context *ctx, simpler_run_t *run, int32_t callable_id,
                        const struct simpler_args *args, const struct simpler_run_config *config)
{
    int rc = run ? sp_call_arguments(ctx, callable_id, args, config)
                 : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (rc)
        return rc;
    uint64_t prepare_begin = simdev_clock_ns(); /* the host span, if the run traces */
    pthread_mutex_lock(&ctx->lock);
    struct sp_call_resolution r;
    struct sp_slot *s;
    /* One preparation path: a single-use call, held in the slot it runs in
     * and gone with its submission. */
    if (!(rc = sp_program_ready(ctx)) &&
        !(rc = sp_call_resolve(ctx, callable_id, args, config, &r)) &&
        !(rc = sp_slot_find_free(ctx, &s)) &&
        !(rc = sp_call_fill(ctx, callable_id, args, config, &r, true, &s->own_call))) {
        if (!(rc = submit_staged(ctx, s, &s->own_call, run)))
            sp_trace_span(&s->sub, SP_SPAN_PREPARE, prepare_begin);
        else
            sp_call_discard(ctx, &s->own_call); /* a refused prepare counts nothing */
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/*
 * host_build_graph: puts the run's image into the slot's bank and sets
 * rq->hbg->image_bytes. A prepared call's kept image that fits this
 * submission is published there, relocated to its staging (no build:
 * *published true); otherwise the host builds it now, and a call of
 * simpler_prepare_call that has no image yet keeps this one when it may
 * (host/hbg_image.h): *kept is then that image, which the caller drops if
 * the launch fails after all. 0, the build's code (nothing kept) or
 * OUT_OF_HOST_MEMORY (the image could not be kept: nothing kept, the
 * build's work is lost). Caller holds ctx->lock.
 */
static int hbg_image(struct simpler_context *ctx, struct sp_slot *s, struct rt_run_request *rq,
                     bool *published, struct sp_hbg_image **kept)
{
    struct simpler_prepared_call *call = s->sub.call;
    struct sp_hbg_image *image = call->payload.hbg_image;
    uint32_t edge_log = rq->config.edge_log_capacity; /* the submission's trace level */
    *published = false;
    *kept = NULL;
    if (image && sp_hbg_image_fits(image, &s->ws, ctx->arena_nonce, edge_log)) {
        rq->hbg->image_bytes = sp_hbg_image_publish(image, &s->ws);
        *published = true;
        return 0;
    }
    int rc = rt_run_build(ctx->launcher, rq);
    if (rc || image || call->payload.kind != SP_PAYLOAD_HBG_IMAGE)
        return rc; /* a kept image that does not fit (a traced submission) stays */
    if ((rc = sp_hbg_image_keep(&s->ws, ctx->arena_nonce, edge_log, kept)))
        return rc;
    call->payload.hbg_image = *kept; /* the call's cache: written once, ctx->lock */
    return 0;
}

/* Enqueues the staged submission in `s` behind every earlier launch. On
 * failure the submission stays staged and may be launched again (its
 * inputs are copied in again first). Caller holds ctx->lock. */
static int launch_staged(struct simpler_context *ctx, struct sp_slot *s)
{
    struct sp_submission *sub = &s->sub;
    const struct sp_callable *c = sub->call->callable;
    int rc;
    /* After a failed launch the kernels may have run on the staged buffers:
     * stage the inputs again from the host. */
    if (sub->restage) {
        if ((rc = sp_staging_copy_in(&s->ws, sub->call)))
            return rc;
        sub->restage = false;
    }
    uint64_t launch_begin = sp_trace_now(sub);
    /* host_build_graph: the launch builds the run's graph here, from the
     * host's own load of the orchestration and its view of the args, or
     * publishes the image its prepared call kept. */
    struct rt_hbg_host hbg;
    bool published = false;
    struct sp_hbg_image *kept = NULL;
    if (sub->config.runtime == RT_RUNTIME_HBG) {
        memset(&hbg, 0, sizeof hbg);
        hbg.entry = c->host_entry;
        hbg.args = &s->ws.staged_args;
        hbg.kernel_present = c->kernel_present;
        hbg.views = s->ws.hbg_views;
        if ((rc = sp_hbg_prepare(&s->ws, sub->call, rt_hbg_image_bound(&sub->config),
                                 &hbg.view_count)))
            return rc;
        hbg.bank = s->ws.hbg_bank;
        hbg.bank_bytes = s->ws.hbg_bank_bytes;
    }
    struct rt_run_request rq = {
        .entry = c->entry,
        .kernels = c->record->kernels,
        .kernel_count = c->kernel_count,
        .args = s->ws.device_args,
        .arena = ctx->arena,
        .arena_bytes = ctx->arena_bytes,
        .arena_nonce = ctx->arena_nonce,
        .result = s->ws.device_result,
        .config = sub->config,
        .hbg = sub->config.runtime == RT_RUNTIME_HBG ? &hbg : NULL,
    };
    /* Nothing reached the device yet: a failure here needs no restage. */
    if (rq.hbg && (rc = hbg_image(ctx, s, &rq, &published, &kept)))
        return rc;
    /* On failure rt_run_enqueue has drained whatever part of the chain it
     * enqueued. */
    if ((rc = rt_run_enqueue(ctx->launcher, s->ws.stream, &rq))) {
        if (kept) { /* a refused launch changes nothing: not even the cache */
            sub->call->payload.hbg_image = NULL;
            sp_hbg_image_free(kept);
        }
        sub->restage = true;
        return rc;
    }
    if (rq.hbg && published) {
        ctx->counters.host_builds_skipped++;
    } else if (rq.hbg) { /* the host build, before the launch: its own span */
        ctx->counters.host_builds++;
        sp_trace_build_span(sub, hbg.built_begin_ns, hbg.built_end_ns, hbg.built_tasks);
    }
    sub->generation = rt_launcher_generation(ctx->launcher);
    sub->state = SP_SUBMISSION_LAUNCHED;
    ctx->counters.launches++;
    sp_trace_span(sub, SP_SPAN_LAUNCH, launch_begin);
    return 0;
}

int simpler_launch_run(struct simpler_context *ctx, simpler_run_t run)
{
    if (!ctx || !run)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    struct sp_slot *s = NULL;
    int rc = sp_program_ready(ctx);
    if (!rc && (!(s = sp_slot_find(ctx, run)) || s->sub.state != SP_SUBMISSION_STAGED))
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    if (!rc)
        rc = launch_staged(ctx, s);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* After a launch of the submission in `s` failed part-way, its work on
 * the slot's stream must be over before the staging goes (the error the
 * stream carries is not the run's status; the run never ran): 0 once it
 * is, or the code of a sync that failed itself (nothing drained). */
static int drain_failed_launch(struct sp_slot *s)
{
    if (!s->sub.restage)
        return 0;
    int drained = simdev_stream_sync(s->ws.stream);
    if (drained && simdev_stream_query(s->ws.stream) == PTO_RUNTIME_ERR_NOT_READY)
        return drained;
    return 0;
}

int simpler_submit_call(struct simpler_context *ctx, const struct simpler_prepared_call *call,
                        simpler_run_t *run)
{
    if (run)
        *run = 0;
    if (!ctx || !call || !run)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    struct sp_slot *s;
    simpler_run_t handle;
    /* The call is immutable; the submission counts itself on it. */
    struct simpler_prepared_call *mine = (struct simpler_prepared_call *)call;
    int rc = sp_call_find(ctx, call);
    if (!rc && !(rc = sp_program_ready(ctx)) && !(rc = sp_slot_find_free(ctx, &s)) &&
        !(rc = submit_staged(ctx, s, mine, &handle))) {
        /* A submission is staged and launched whole or not at all: a launch
         * that fails releases it (its chain was drained), and the caller
         * sees no handle. A release that fails too leaves it stranded, for
         * finalize_device (or releasing the call) to release. */
        if (!(rc = launch_staged(ctx, s)))
            *run = handle;
        else if (drain_failed_launch(s) || sp_slot_release(ctx, s))
            s->sub.stranded = true;
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
        s->sub.status = PTO_RUNTIME_ERR_DEVICE_LOST;
    } else if ((rc = simdev_memcpy(&s->sub.result, s->ws.device_result, sizeof s->sub.result,
                                   SIMDEV_COPY_DEVICE_TO_HOST))) {
        return rc;
    } else if (s->sub.result.generation != s->sub.generation) {
        memset(&s->sub.result, 0, sizeof s->sub.result);
        s->sub.status = carried ? carried : PTO_RUNTIME_ERR_INTERNAL;
        s->sub.result.status = s->sub.status;
    } else {
        /* The run's own status, or, when it succeeded, an error the chain
         * carried after it (a failed record or wait of the chain): nothing
         * the device reported is dropped. */
        s->sub.status = s->sub.result.status ? s->sub.result.status : carried;
    }
    s->sub.completed = true;
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
    int before = simdev_stream_query(s->ws.stream);
    int rc = simdev_stream_sync(s->ws.stream);
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
    uint64_t wait_begin = s->sub.completed ? 0 : sp_trace_now(&s->sub);
    while (!s->sub.completed) {
        if (s->sub.waiting) {
            ctx->sleepers++; /* finalize_device waits for none, refuses instead */
            pthread_cond_wait(&ctx->waiters_done, &ctx->lock);
            ctx->sleepers--;
            if (!(s = *slot = sp_slot_find(ctx, run)) || s->sub.state != SP_SUBMISSION_LAUNCHED)
                return PTO_RUNTIME_ERR_INVALID_STATE;
            continue;
        }
        s->sub.waiting = true;
        pthread_mutex_unlock(&ctx->lock);
        int carried;
        int sync_rc = sync_run_stream(ctx, s, &carried);
        pthread_mutex_lock(&ctx->lock);
        s->sub.waiting = false;
        pthread_cond_broadcast(&ctx->waiters_done);
        int rc;
        if ((rc = sync_rc) || (rc = latch_status(ctx, s, carried)))
            return rc;
    }
    if (wait_begin)
        sp_trace_span(&s->sub, SP_SPAN_WAIT, wait_begin);
    return 0;
}

/* The launched run's slot, or NULL with *rc set. Caller holds ctx->lock. */
static struct sp_slot *launched_slot(struct simpler_context *ctx, simpler_run_t run, int *rc)
{
    struct sp_slot *s = NULL;
    *rc = sp_latch_require(&ctx->latch, SP_IDENTITY_PROGRAM);
    if (!*rc && (!ctx->initialized || !(s = sp_slot_find(ctx, run)) || s->sub.state != SP_SUBMISSION_LAUNCHED))
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
    if (s && !s->sub.completed) {
        int carried = s->sub.waiting ? PTO_RUNTIME_ERR_NOT_READY : simdev_stream_query(s->ws.stream);
        if (carried == PTO_RUNTIME_ERR_NOT_READY)
            rc = PTO_RUNTIME_ERR_NOT_READY;
        else if (!(rc = carried ? sp_slot_synced(ctx, s, simdev_stream_sync(s->ws.stream)) : 0))
            rc = latch_status(ctx, s, carried);
    }
    if (s && s->sub.completed)
        rc = s->sub.status;
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
        rc = s->sub.status;
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
    if (s && !s->sub.completed)
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    else if (s) {
        memset(info, 0, sizeof *info);
        info->status = s->sub.status;
        info->tasks_submitted = s->sub.result.tasks_submitted;
        info->tasks_completed = s->sub.result.tasks_completed;
        info->edges = s->sub.result.edges;
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
    uint64_t finalize_begin = sp_trace_now(&s->sub);
    if ((rc = drain_failed_launch(s)))
        goto failed;
    if (s->sub.state == SP_SUBMISSION_LAUNCHED) {
        if ((rc = await(ctx, run, &s)))
            goto failed; /* not known to be over: nothing may be released */
        if (s->sub.status == 0 && !s->sub.copied_back) {
            uint64_t copy_begin = sp_trace_now(&s->sub);
            rc = sp_staging_copy_back(&s->ws, s->sub.call);
            if (rc && rc != PTO_RUNTIME_ERR_DEVICE_LOST)
                goto failed; /* outputs not delivered yet: a retry copies again */
            s->sub.copied_back = true;
            sp_trace_span(&s->sub, SP_SPAN_COPY_BACK, copy_begin);
        }
        sp_trace_span(&s->sub, SP_SPAN_FINALIZE, finalize_begin);
        sp_trace_run_write(ctx, &s->sub); /* failed runs too */
    }
    if (!(rc = sp_slot_release(ctx, s)))
        goto out;
failed:
    /* A device operation failed: the run keeps its slot, and a retry does
     * what is left. If nobody retries (simpler_run gave up), finalize_device
     * or unregistering the callable may release it. NULL: await found the
     * run finalized by another thread (INVALID_STATE). */
    if (s)
        s->sub.stranded = true;
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
