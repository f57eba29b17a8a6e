/*
 * host/kernel_mode_launch.c — a kernel-mode launch: one round, enqueued on
 * the caller's stream.
 *
 * Owns: simpler_kernel_mode_launch (its interface is simpler.h): the
 * checks of a launch's args, the encoding of the launch into an invocation
 * packet, the choice of eager or capture streams, and handing the round to
 * the launch chain (launch/launch.h). Must not touch what the
 * caller owns beyond enqueuing on its stream (never a sync, query or
 * destroy), nor read or write the caller's tensors; must not create or
 * release anything of the context (kernel_mode.c does).
 *
 * Locking: launch holds ctx->lock only while it enqueues (no device wait),
 * so launches from several threads serialise their chains and never
 * interleave them.
 */
#include "common/packet.h"
#include "common/view.h"
#include "host/context.h"
#include "host/kernel_mode.h"
#include "host/residency.h"
#include "host/trace_host.h"

/* The structural checks of a launch's args against the callable: counts,
 * and every tensor a device tensor whose view lies inside its buffer. */
static int check_launch_args(const struct sp_callable *c, const struct simpler_args *args)
{
    if (args->tensor_count != c->tensor_count || args->scalar_count != c->scalar_count ||
        (args->tensor_count && !args->tensors) || (args->scalar_count && !args->scalars))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < args->tensor_count; i++) {
        const struct simpler_tensor *t = &args->tensors[i];
        if (t->address_space != SIMPLER_MEM_DEVICE || !t->addr || !sp_view_inside(t, NULL))
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT; /* no staging on this path */
    }
    return 0;
}

int simpler_kernel_mode_launch(struct simpler_context *ctx, int32_t callable_id,
                               const struct simpler_args *args, simdev_stream_t caller_stream)
{
    if (!ctx || !args || !caller_stream || callable_id < 0 ||
        callable_id >= SIMPLER_MAX_CALLABLE_IDS || args->tensor_count > SIMPLER_ORCH_MAX_TENSORS ||
        args->scalar_count > SIMPLER_ORCH_MAX_SCALARS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    struct sp_kernel_mode *k = &ctx->kernel;
    int rc = sp_kernel_mode_ready(ctx, true);
    const struct sp_callable *c = rc ? NULL : ctx->callables[callable_id];
    if (!rc && (!c || !c->slot_generation))
        rc = PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT;
    if (!rc)
        rc = check_launch_args(c, args);
    unsigned char packet[SP_PACKET_MAX_BYTES];
    size_t packet_bytes = 0;
    if (!rc)
        rc = sp_packet_encode(packet, sizeof packet, callable_id, k->generation,
                              c->slot_generation, args, &packet_bytes);
    if (!rc) {
        struct rt_config config;
        rt_config_from_public(&c->config, &config);
        sp_trace_kernel_attach(ctx, callable_id, &config);
        struct rt_kernel_mode_target target = {k->generation, ctx->arena, ctx->arena_bytes,
                                          k->schedulers};
        /* A launch on a capturing caller stream goes through the capture
         * streams (the same events and gate): the capture pulls those in,
         * and the eager streams stay out of it. The query neither waits nor
         * changes anything. */
        struct rt_launch_chain chain = k->chain;
        int capturing = 0;
        if (!simdev_stream_is_capturing(caller_stream, &capturing) && capturing) {
            chain.aicpu = k->capture_aicpu;
            chain.aicore = k->capture_aicore;
        }
        k->packets_encoded++;
        k->next_round = sp_kernel_mode_fresh_generation();
        bool gate_lost = false;
        rc = rt_kernel_mode_launch(k->launch_ops ? k->launch_ops : &rt_launch_simdev_ops, &chain,
                              caller_stream, &target, &config, k->next_round, packet,
                              packet_bytes, &gate_lost);
        if (!rc)
            sp_phase_launch_enqueued(&k->phase);
        /* A captured chain that failed to record loses no unit (nothing
         * of it runs, and the capture cannot end joined without it); an
         * eager one that did keeps the unit for good. */
        if (gate_lost && !capturing) {
            /* No later round could ever start: refuse them now, and close
             * without waiting for a unit that never comes back. */
            k->gate_lost = true;
            sp_phase_poison(&k->phase, rc);
        }
    }
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
