/*
 * runtime/core_loop.c — the AICore side: the loop every compute core runs
 * for the length of a run.
 *
 * Owns: the core half of the register protocol (rt.h): hello, acknowledge,
 * run the kernel, finish, exit. Knows nothing of tasks or dependencies: a
 * dispatch is a kernel pointer, its args and a context, in the payload
 * buffer chosen by the dispatch id.
 */
#include <string.h>

#include "runtime/rt.h"

int rt_core_main(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    struct rt_launch_args la;
    if (args_size != sizeof la)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&la, args, sizeof la);
    struct rt_run *run = la.request.arena;
    struct rt_layout layout;
    if (rt_layout_compute(&la.request.config, ctx->core_count, &layout) != 0)
        return PTO_RUNTIME_ERR_INTERNAL;
    struct rt_dispatch *payload =
        (struct rt_dispatch *)((uint8_t *)run + layout.dispatch) + (size_t)ctx->core_id * 2;

    /* Hello: the scheduler reads the same doorbell and waits for exactly
     * this value, which no earlier run can have left behind. */
    uint64_t last = simdev_regs_read_doorbell(ctx->regs);
    uint64_t base = last & ~RT_DOORBELL_EXIT;
    /* An exit this core has not answered (its COND is not FIN of it) and
     * that names this run's generation was rung before the loop started:
     * the run failed, or its handshake timed out, before this core said
     * hello. Answer it and end. Any other exit belongs to an earlier run
     * (answered, or rung while no core loop ran): say hello. */
    if ((last & RT_DOORBELL_EXIT) && simdev_regs_read_cond(ctx->regs) != ((base << 1) | 1) &&
        payload[0].exit_generation == la.generation) {
        simdev_core_write_cond(ctx->regs, (base << 1) | 1);
        return 0;
    }
    simdev_core_write_cond(ctx->regs, ((base + 1) << 1) | 1);
    for (;;) {
        uint64_t value;
        /* acquire (in simdev): pairs with the scheduler's release of the
         * doorbell after it wrote the payload */
        int rc = simdev_core_wait_doorbell(ctx->regs, last, 0, &value);
        if (rc != 0)
            return rc;
        last = value;
        if (value & RT_DOORBELL_EXIT) {
            simdev_core_write_cond(ctx->regs, ((value & ~RT_DOORBELL_EXIT) << 1) | 1);
            return 0;
        }
        struct rt_dispatch *d = &payload[value & 1];
        simdev_core_write_cond(ctx->regs, value << 1); /* ACK */
        d->fn(d->args);
        /* release (in simdev): the kernel's writes and ctx.failure before
         * the scheduler's acquire of FIN */
        simdev_core_write_cond(ctx->regs, (value << 1) | 1);
    }
}
