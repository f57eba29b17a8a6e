/*
 * host/kernel_mode_launch.c — a kernel-mode launch: one round, enqueued on
 * the caller's stream.
 *
 * Owns: simpler_kernel_mode_launch and simpler_kernel_mode_launch_call
 * (their interface is simpler.h): a launch of a prepared call (the checks
 * and the packet are the preparation's, prepared_call.c; the single-use
 * entry prepares a call on its stack first), the choice of eager or
 * capture streams, and handing the round to the launch chain
 * (launch/launch.h). Must not touch what the
 * caller owns beyond enqueuing on its stream (never a sync, query or
 * destroy), nor read or write the caller's tensors; must not create or
 * release anything of the context (kernel_mode.c does).
 *
 * Locking: launch holds ctx->lock only while it enqueues (no device wait),
 * so launches from several threads serialise their chains and never
 * interleave them.
 */
#include "host/context.h"
#include "host/hbg_image.h"
#include "host/kernel_mode.h"
#include "host/prepared_call.h"
#include "host/residency.h"
#include "host/trace_host.h"

/*
 * The streams a launch on `caller_stream` goes through, into *chain (the
 * context's chain with its AICPU and AICore streams chosen) and whether
 * the caller captures into *capturing. Eager: the context's own. In a
 * capture: the capture pair already serving that capture (its streams
 * report the caller's capture id), else a free one (its streams report no
 * capture; the launch's events pull it in), else CAPACITY_EXCEEDED —
 * config.max_captures captures hold a pair, and nothing is enqueued. The
 * queries go through the launch's ops table; they neither wait nor change
 * anything. Caller holds ctx->lock: two launches never claim one pair.
 */
static int choose_streams(struct simpler_context *ctx, const struct rt_launch_ops *ops,
                          simdev_stream_t caller_stream, struct rt_launch_chain *chain,
                          int *capturing)
{
    struct sp_kernel_mode *k = &ctx->kernel;
    uint64_t capture, pair_capture;
    int pair_capturing, rc;
    *chain = k->chain;
    if ((rc = ops->capture_info(caller_stream, capturing, &capture)) || !*capturing)
        return rc;
    int free_pair = -1;
    for (uint32_t i = 0; i < ctx->config.max_captures; i++) {
        if ((rc = ops->capture_info(k->capture_aicpu[i], &pair_capturing, &pair_capture)))
            return rc;
        if (pair_capturing && pair_capture == capture) {
            free_pair = (int)i; /* this capture's own pair */
            break;
        }
        if (!pair_capturing && free_pair < 0 &&
            !(rc = ops->capture_info(k->capture_aicore[i], &pair_capturing, &pair_capture)) &&
            !pair_capturing)
            free_pair = (int)i;
        if (rc)
            return rc;
    }
    if (free_pair < 0)
        return PTO_RUNTIME_ERR_CAPACITY_EXCEEDED; /* every pair serves another open capture */
    chain->aicpu = k->capture_aicpu[free_pair];
    chain->aicore = k->capture_aicore[free_pair];
    return 0;
}

struct rt_kernel_mode_build *sp_kernel_mode_build_for(struct simpler_context *ctx,
                                                      const struct simpler_prepared_call *call)
{
    struct sp_kernel_mode *k = &ctx->kernel;
    if (call->config.runtime != RT_RUNTIME_HBG)
        return NULL;
    const struct sp_callable *c = call->callable;
    /* The arguments as the device's orchestrator would take them: from the
     * packet (a single-use call keeps no other copy), which the call's
     * preparation encoded from checked arguments. */
    struct sp_packet_view v;
    if (sp_packet_decode_header(call->payload.packet, call->payload.bytes, &v) != 0)
        return NULL;
    sp_packet_orch_args(&v, &k->hbg_args);
    k->hbg.host.entry = c->host_entry;
    k->hbg.host.args = &k->hbg_args;
    k->hbg.host.kernel_present = c->kernel_present;
    k->hbg.host.views = NULL; /* the caller's tensors: device memory the host never holds */
    k->hbg.host.view_count = 0;
    k->hbg.kernel_count = c->kernel_count;
    return &k->hbg;
}

int sp_kernel_mode_image(struct simpler_context *ctx, const struct simpler_prepared_call *call,
                         const struct rt_config *config, uint64_t generation,
                         struct rt_kernel_mode_image *image, bool *built,
                         struct sp_hbg_image **kept)
{
    struct sp_kernel_mode *k = &ctx->kernel;
    struct sp_hbg_image *have = call->payload.hbg_image;
    *built = false;
    *kept = NULL;
    if (have) { /* the call's kept image: stamped for this round, shipped as it is */
        size_t region;
        if (rt_hbg_image_region(config, ctx->topo.aic_cores + ctx->topo.aiv_cores, ctx->arena,
                                &image->dst, &region) ||
            have->bytes > region)
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        rt_hbg_image_stamp(have->image, generation);
        image->src = have->image;
        image->bytes = have->bytes;
        return 0;
    }
    struct rt_kernel_mode_build *build = sp_kernel_mode_build_for(ctx, call);
    if (!build)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_kernel_mode_target target = {k->generation, ctx->arena, ctx->arena_bytes,
                                           k->schedulers};
    int rc = rt_kernel_mode_build_image(&target, config, generation, build, &image->dst,
                                        &image->bytes);
    if (rc)
        return rc;
    image->src = build->host.bank;
    *built = true;
    /* A call of simpler_prepare_call keeps its first image that may be
     * kept (the call's cache, written once under ctx->lock). */
    if (!call->temporary && (rc = sp_hbg_image_keep_fixed(build->host.bank, kept)))
        return rc;
    if (*kept)
        ((struct simpler_prepared_call *)call)->payload.hbg_image = *kept;
    return 0;
}

void sp_kernel_mode_image_drop(const struct simpler_prepared_call *call, struct sp_hbg_image *kept)
{
    if (!kept)
        return;
    ((struct simpler_prepared_call *)call)->payload.hbg_image = NULL;
    sp_hbg_image_free(kept);
}

/* Enqueues one round of the prepared kernel-mode `call` on `caller_stream`:
 * its packet, as prepared, through the context's eager streams or, when
 * `caller_stream` captures, the capture pair of its capture. Caller holds
 * ctx->lock, the context accepting launches. */
static int launch_prepared(struct simpler_context *ctx, const struct simpler_prepared_call *call,
                           simdev_stream_t caller_stream)
{
    struct sp_kernel_mode *k = &ctx->kernel;
    const struct rt_launch_ops *ops = k->launch_ops ? k->launch_ops : &rt_launch_simdev_ops;
    struct rt_launch_chain chain;
    int capturing = 0;
    int rc = choose_streams(ctx, ops, caller_stream, &chain, &capturing);
    if (rc)
        return rc;
    struct rt_config config = call->config;
    sp_trace_kernel_attach(ctx, call->callable_id, &config);
    struct rt_kernel_mode_target target = {k->generation, ctx->arena, ctx->arena_bytes,
                                           k->schedulers};
    k->next_round = sp_kernel_mode_fresh_generation();
    bool gate_lost = false;
    /* The chain copies the packet into the program op's arguments as it
     * enqueues it: the call is not read after this returns. */
    /* host_build_graph: the launch builds the round's graph on this thread
     * (the host's own load of the orchestration, the call's arguments), or
     * ships the image its prepared call kept */
    bool hbg = config.runtime == RT_RUNTIME_HBG, built = false;
    struct rt_kernel_mode_image image;
    struct sp_hbg_image *kept = NULL;
    if (hbg && (rc = sp_kernel_mode_image(ctx, call, &config, k->next_round, &image, &built,
                                          &kept)))
        return rc;
    rc = rt_kernel_mode_launch(ops, &chain, caller_stream, &target, &config, k->next_round,
                               call->payload.packet, call->payload.bytes, hbg ? &image : NULL,
                               &gate_lost);
    if (rc)
        sp_kernel_mode_image_drop(call, kept); /* refused: nothing kept either */
    if (!rc) {
        sp_phase_launch_enqueued(&k->phase);
        k->host_builds += built;
        k->host_builds_skipped += hbg && !built;
        if (built)
            sp_trace_kernel_build(ctx, k->next_round, k->hbg.host.built_begin_ns,
                                  k->hbg.host.built_end_ns, k->hbg.host.built_tasks);
    }
    /* A captured chain that failed to record loses no unit (nothing of it
     * runs, and the capture cannot end joined without it); an eager one
     * that did keeps the unit for good. */
    if (gate_lost && !capturing) {
        /* No later round could ever start: refuse them now, and close
         * without waiting for a unit that never comes back. */
        k->gate_lost = true;
        sp_phase_poison(&k->phase, rc);
    }
    return rc;
}

int simpler_kernel_mode_launch(struct simpler_context *ctx, int32_t callable_id,
                               const struct simpler_args *args, simdev_stream_t caller_stream)
{
    if (!ctx || !args || !caller_stream || callable_id < 0 ||
        callable_id >= SIMPLER_MAX_CALLABLE_IDS || args->tensor_count > SIMPLER_ORCH_MAX_TENSORS ||
        args->scalar_count > SIMPLER_ORCH_MAX_SCALARS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    int rc;
    /* One preparation path: a single-use call, on this stack, gone when the
     * launch returns (the launch copied its packet). */
    struct simpler_prepared_call call;
    pthread_mutex_lock(&ctx->lock);
    if (!(rc = sp_kernel_mode_ready(ctx, true)) &&
        !(rc = sp_call_prepare(ctx, callable_id, args, NULL, true, &call)) &&
        (rc = launch_prepared(ctx, &call, caller_stream)))
        sp_call_discard(ctx, &call); /* refused whole: nothing counted */
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int simpler_kernel_mode_launch_call(struct simpler_context *ctx,
                                    const struct simpler_prepared_call *call,
                                    simdev_stream_t caller_stream)
{
    if (!ctx || !call || !caller_stream)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    int rc = sp_call_find(ctx, call); /* before *call is read */
    if (!rc && !(rc = sp_kernel_mode_ready(ctx, true)))
        rc = launch_prepared(ctx, call, caller_stream);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

void sp_test_kernel_set_launch_ops(struct simpler_context *ctx,
                                   const struct rt_launch_ops *ops)
{
    pthread_mutex_lock(&ctx->lock);
    ctx->kernel.launch_ops = ops;
    pthread_mutex_unlock(&ctx->lock);
}
