/*
 * host/prepared_call.c — the preparation step (see prepared_call.h): one
 * path for both identities, and the public simpler_prepare_call /
 * simpler_release_call.
 *
 * Must not take a pipeline slot, stage, launch or make any device call:
 * a preparation is host work on host memory, so it has no device failure
 * to undo and never touches a caller's stream (a prepare made while the
 * thread captures a caller stream records nothing into the capture).
 */
#include "host/prepared_call.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "common/view.h"
#include "host/context.h"
#include "host/hbg_image.h"
#include "host/kernel_mode.h"
#include "host/program.h"
#include "host/residency.h"
#include "host/run_args.h"
#include "host/run_slot.h"
#include "host/trace_host.h"

/* ------------------------------------------------------------- checks */

int sp_call_arguments(const struct simpler_context *ctx, int32_t callable_id,
                      const struct simpler_args *args, const struct simpler_run_config *config)
{
    if (!ctx || !args || callable_id < 0 || callable_id >= SIMPLER_MAX_CALLABLE_IDS ||
        args->tensor_count > SIMPLER_ORCH_MAX_TENSORS ||
        args->scalar_count > SIMPLER_ORCH_MAX_SCALARS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    /* Program mode's structural checks come before any state, as they
     * always did; a kernel context checks its (device-only) tensors once
     * it knows the callable, as its launch always did. */
    int rc = sp_latch_is(&ctx->latch, SP_IDENTITY_KERNEL) ? 0 : sp_run_args_check(args);
    if (!rc && config) {
        struct rt_config rtc;
        rt_config_from_public(config, &rtc);
        if (!(rc = rt_config_check(&rtc)))
            rc = sp_trace_config_check(config);
    }
    return rc;
}

int sp_call_find(const struct simpler_context *ctx, const struct simpler_prepared_call *call)
{
    for (const struct simpler_prepared_call *p = ctx->prepared; p; p = p->live_next)
        if (p == call)
            return 0;
    return PTO_RUNTIME_ERR_INVALID_ARGUMENT; /* not read: it may be freed memory */
}

bool sp_call_check_refs(const struct simpler_context *ctx)
{
    uint64_t listed = 0, refs = 0;
    for (const struct simpler_prepared_call *p = ctx->prepared; p; p = p->live_next) {
        if (p->temporary || (p->live_next && p->live_next->live_prev != p))
            return false;
        uint32_t executing = 0;
        for (uint32_t i = 0; ctx->slots && i < ctx->slot_count; i++)
            executing += sp_slot_executes(&ctx->slots[i], p);
        if (executing != p->submissions)
            return false;
        listed++;
    }
    for (uint32_t id = 0; id < SIMPLER_MAX_CALLABLE_IDS; id++)
        if (ctx->callables[id])
            refs += ctx->callables[id]->prepared_refs;
    return listed == ctx->counters.prepared_calls && refs == listed;
}

/* The structural checks of a kernel-mode call's tensors: every one a device
 * tensor the caller owns whose view lies inside its buffer (kernel mode
 * stages nothing). */
static int check_device_tensors(const struct simpler_args *args)
{
    if ((args->tensor_count && !args->tensors) || (args->scalar_count && !args->scalars))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < args->tensor_count; i++) {
        const struct simpler_tensor *t = &args->tensors[i];
        if (t->address_space != SIMPLER_MEM_DEVICE || !t->addr || !sp_view_inside(t, NULL))
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
    return 0;
}

/* The resident callable `callable_id` into *out, when `args` match its
 * signature: CALLABLE_NOT_RESIDENT or INVALID_ARGUMENT otherwise. */
static int resolve_callable(struct simpler_context *ctx, int32_t callable_id, bool kernel,
                            const struct simpler_args *args, struct sp_callable **out)
{
    struct sp_callable *c = ctx->callables[callable_id];
    if (!c || (kernel && !c->slot_generation))
        return PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT; /* kernel: never minted, or not launchable */
    if (args->tensor_count != c->tensor_count || args->scalar_count != c->scalar_count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT; /* does not match the signature */
    if (kernel && check_device_tensors(args))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *out = c;
    return 0;
}

/*
 * The call's config: `config` or, when NULL, the callable's, into *rtc,
 * with its scheduler threads in *schedulers. Program mode: the config's own
 * (0: every AICPU thread but the orchestrator's). Kernel mode: the
 * context's, fixed at init. INVALID_ARGUMENT (more schedulers than the
 * device has, or what a config function left), CAPACITY_EXCEEDED (bigger
 * than the context's arena) or rt_arena_bytes's code.
 */
static int fit_config(struct simpler_context *ctx, const struct sp_callable *c, bool kernel,
                      const struct simpler_run_config *config, struct rt_config *rtc,
                      uint32_t *schedulers)
{
    size_t need;
    int rc;
    if (kernel && !config) {
        /* fitted at its registration (kernel_mode_callable.c): nothing it
         * depends on changes in a kernel-mode context (measured: a third
         * of an unprepared launch's host work outside the chain,
         * docs/performance.md, "Enqueue in instructions") */
        *rtc = c->kernel_config;
        *schedulers = ctx->kernel.schedulers;
        return *schedulers + 1 > ctx->topo.aicpu_threads ? PTO_RUNTIME_ERR_INVALID_ARGUMENT : 0;
    }
    sp_rt_config(&ctx->config, config ? config : &c->config, rtc);
    if (kernel)
        *schedulers = ctx->kernel.schedulers;
    else
        *schedulers = rtc->scheduler_threads ? rtc->scheduler_threads
                                             : ctx->topo.aicpu_threads - 1;
    if (*schedulers + 1 > ctx->topo.aicpu_threads || rt_config_check(rtc))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if ((rc = rt_arena_bytes(rtc, &ctx->topo, &need)))
        return rc;
    return need > ctx->arena_bytes ? PTO_RUNTIME_ERR_CAPACITY_EXCEEDED : 0;
}

/* ------------------------------------------------------------- prepare */

int sp_call_resolve(struct simpler_context *ctx, int32_t callable_id,
                    const struct simpler_args *args, const struct simpler_run_config *config,
                    struct sp_call_resolution *out)
{
    bool kernel = sp_latch_is(&ctx->latch, SP_IDENTITY_KERNEL);
    int rc = resolve_callable(ctx, callable_id, kernel, args, &out->callable);
    if (!rc)
        rc = fit_config(ctx, out->callable, kernel, config, &out->config, &out->schedulers);
    return rc;
}

int sp_call_fill(struct simpler_context *ctx, int32_t callable_id,
                 const struct simpler_args *args, const struct simpler_run_config *config,
                 const struct sp_call_resolution *r, bool temporary,
                 struct simpler_prepared_call *out)
{
    bool kernel = sp_latch_is(&ctx->latch, SP_IDENTITY_KERNEL);
    struct sp_callable *c = r->callable;
    /* Kernel mode: the packet, encoded once, is the call's payload. */
    struct sp_prepared_payload *p = &out->payload;
    size_t packet_bytes = 0;
    int rc = kernel ? sp_packet_encode(p->packet, sizeof p->packet, callable_id,
                                       ctx->kernel.generation, c->slot_generation, args,
                                       &packet_bytes)
                    : 0;
    if (rc)
        return rc; /* nothing counted; only the payload's bytes were written */
    out->callable_id = callable_id;
    out->callable = c;
    out->temporary = temporary;
    out->args.tensor_count = args->tensor_count;
    out->args.scalar_count = args->scalar_count;
    /* The snapshot, except for a single-use kernel launch: its packet is
     * all the launch reads, and skipping the copy (up to 8 KiB) keeps the
     * unprepared launch as cheap as it was before prepared calls. */
    if (!(kernel && temporary)) {
        memset(&out->args, 0, sizeof out->args);
        out->args.tensor_count = args->tensor_count;
        out->args.scalar_count = args->scalar_count;
        if (args->tensor_count)
            memcpy(out->args.tensors, args->tensors, args->tensor_count * sizeof *args->tensors);
        if (args->scalar_count)
            memcpy(out->args.scalars, args->scalars, args->scalar_count * sizeof *args->scalars);
    }
    out->public_config = config ? *config : c->config;
    out->config = r->config;
    out->schedulers = r->schedulers;
    out->submissions = 0;
    p->kind = kernel                                                  ? SP_PAYLOAD_TMR_PACKET
              : !temporary && r->config.runtime == RT_RUNTIME_HBG ? SP_PAYLOAD_HBG_IMAGE
                                                                    : SP_PAYLOAD_STAGED_ARGS;
    p->bytes = packet_bytes;
    p->hbg_image = NULL;
    ctx->counters.host_preparations++;
    if (kernel)
        ctx->counters.packets_encoded++;
    out->live_prev = out->live_next = NULL;
    if (!temporary) {
        c->prepared_refs++;
        ctx->counters.prepared_calls++;
        out->live_next = ctx->prepared; /* listed first: found by sp_call_find */
        if (ctx->prepared)
            ctx->prepared->live_prev = out;
        ctx->prepared = out;
        assert(sp_call_check_refs(ctx));
    }
    return 0;
}

void sp_call_discard(struct simpler_context *ctx, struct simpler_prepared_call *call)
{
    ctx->counters.host_preparations--;
    if (call->payload.kind == SP_PAYLOAD_TMR_PACKET)
        ctx->counters.packets_encoded--;
}

int sp_call_prepare(struct simpler_context *ctx, int32_t callable_id,
                    const struct simpler_args *args, const struct simpler_run_config *config,
                    bool temporary, struct simpler_prepared_call *out)
{
    struct sp_call_resolution r;
    int rc = sp_call_resolve(ctx, callable_id, args, config, &r);
    return rc ? rc : sp_call_fill(ctx, callable_id, args, config, &r, temporary, out);
}

/* The context accepts a preparation now: 0, INVALID_STATE, DEVICE_LOST or
 * a kernel context's poison cause. Caller holds ctx->lock. */
static int accepts_preparation(struct simpler_context *ctx)
{
    if (sp_latch_is(&ctx->latch, SP_IDENTITY_KERNEL))
        return sp_kernel_mode_ready(ctx, false);
    return sp_program_ready(ctx);
}

int simpler_prepare_call(struct simpler_context *ctx, int32_t callable_id,
                         const struct simpler_args *args, const struct simpler_run_config *config,
                         struct simpler_prepared_call **out)
{
    if (out)
        *out = NULL;
    int rc = out ? sp_call_arguments(ctx, callable_id, args, config)
                 : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (rc)
        return rc;
    /* Allocated before the lock and before any state: a failure here
     * changes nothing. */
    struct simpler_prepared_call *call = sp_host_calloc(1, sizeof *call);
    if (!call)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    pthread_mutex_lock(&ctx->lock);
    if (!(rc = accepts_preparation(ctx)))
        rc = sp_call_prepare(ctx, callable_id, args, config, false, call);
    pthread_mutex_unlock(&ctx->lock);
    if (rc) {
        free(call);
        return rc;
    }
    *out = call;
    return 0;
}

/* Takes a released call off the context's list. Caller holds ctx->lock. */
static void unlist(struct simpler_context *ctx, struct simpler_prepared_call *call)
{
    if (call->live_prev)
        call->live_prev->live_next = call->live_next;
    else
        ctx->prepared = call->live_next;
    if (call->live_next)
        call->live_next->live_prev = call->live_prev;
    call->live_prev = call->live_next = NULL;
}

int simpler_release_call(struct simpler_context *ctx, struct simpler_prepared_call *call)
{
    if (!ctx || !call)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    int rc = sp_call_find(ctx, call);
    /* A program-mode submission reads the call until it is finalized (a
     * stranded one is released now, as unregister releases it); a
     * kernel-mode launch copied what it needs when it was enqueued. */
    if (!rc && call->submissions)
        rc = sp_program_release_submissions(ctx, call);
    if (!rc) {
        call->callable->prepared_refs--;
        ctx->counters.prepared_calls--;
        unlist(ctx, call);
        assert(sp_call_check_refs(ctx));
    }
    pthread_mutex_unlock(&ctx->lock);
    if (!rc) {
        sp_hbg_image_free(call->payload.hbg_image);
        free(call);
    }
    return rc;
}
