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

#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "common/view.h"
#include "host/context.h"
#include "host/kernel_mode.h"
#include "host/program.h"
#include "host/residency.h"
#include "host/run_args.h"
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
    int rc = sp_latch_identity(&ctx->latch) == SP_IDENTITY_KERNEL ? 0 : sp_run_args_check(args);
    if (!rc && config) {
        struct rt_config rtc;
        rt_config_from_public(config, &rtc);
        if (!(rc = rt_config_check(&rtc)))
            rc = sp_trace_config_check(config);
    }
    return rc;
}

int sp_call_check(const struct simpler_context *ctx, const struct simpler_prepared_call *call)
{
    if (!ctx || !call || call->magic != SP_PREPARED_CALL_MAGIC || call->ctx != ctx ||
        call->temporary)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    return 0;
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
    rt_config_from_public(config ? config : &c->config, rtc);
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
    bool kernel = sp_latch_identity(&ctx->latch) == SP_IDENTITY_KERNEL;
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
    bool kernel = sp_latch_identity(&ctx->latch) == SP_IDENTITY_KERNEL;
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
    out->magic = SP_PREPARED_CALL_MAGIC;
    out->identity = kernel ? SP_IDENTITY_KERNEL : SP_IDENTITY_PROGRAM;
    out->ctx = ctx;
    out->callable_id = callable_id;
    out->callable = c;
    out->temporary = temporary;
    memset(&out->args, 0, sizeof out->args);
    out->args.tensor_count = args->tensor_count;
    out->args.scalar_count = args->scalar_count;
    if (args->tensor_count)
        memcpy(out->args.tensors, args->tensors, args->tensor_count * sizeof *args->tensors);
    if (args->scalar_count)
        memcpy(out->args.scalars, args->scalars, args->scalar_count * sizeof *args->scalars);
    out->public_config = config ? *config : c->config;
    out->config = r->config;
    out->schedulers = r->schedulers;
    out->submissions = 0;
    p->kind = kernel ? SP_PAYLOAD_TMR_PACKET : SP_PAYLOAD_STAGED_ARGS;
    p->bytes = packet_bytes;
    ctx->counters.host_preparations++;
    if (kernel)
        ctx->counters.packets_encoded++;
    if (!temporary) {
        c->prepared_refs++;
        ctx->counters.prepared_calls++;
    }
    return 0;
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
    if (sp_latch_identity(&ctx->latch) == SP_IDENTITY_KERNEL)
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

int simpler_release_call(struct simpler_context *ctx, struct simpler_prepared_call *call)
{
    int rc = sp_call_check(ctx, call);
    if (rc)
        return rc;
    pthread_mutex_lock(&ctx->lock);
    /* A program-mode submission reads the call until it is finalized (a
     * stranded one is released now, as unregister releases it); a
     * kernel-mode launch copied what it needs when it was enqueued. */
    if (call->submissions)
        rc = sp_program_release_submissions(ctx, call);
    if (!rc) {
        call->callable->prepared_refs--;
        ctx->counters.prepared_calls--;
        call->magic = 0;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (!rc)
        free(call);
    return rc;
}
