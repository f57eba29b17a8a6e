/*
 * host/kernel_mode_callable.c — a kernel-mode context's callables.
 *
 * Owns: simpler_kernel_mode_prepare_callable (its interface is simpler.h):
 * minting ids (never reused), loading the image (residency.c), checking
 * its run config fits the context, and writing the binding slot the device
 * checks every packet against (once, before the id exists for anyone).
 * Must not create or release anything of the context (kernel_mode.c does)
 * nor touch the caller's streams.
 *
 * Locking: the prepare holds ctx->lock throughout, waiting for the
 * context's own control stream (the load) while holding it.
 */
#include <stdlib.h>
#include <string.h>

#include "host/context.h"
#include "host/kernel_mode.h"
#include "host/residency.h"

static int kernel_prepare(struct simpler_context *ctx, const void *image, size_t bytes,
                          int32_t *callable_id);

int simpler_kernel_mode_prepare_callable(struct simpler_context *ctx, const void *image,
                                         size_t bytes, int32_t *callable_id)
{
    if (callable_id)
        *callable_id = -1;
    if (!ctx || !image || !callable_id || simpler_callable_validate(image, bytes))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    /* Everything a prepare does (allocations, copies, the load and its sync)
     * is on the context's own memory and control stream, which no capture
     * contains: in relaxed mode for its duration, a prepare made while this
     * thread captures a caller stream neither fails nor breaks the capture.
     * The mode is the thread's and is restored before returning. */
    enum simdev_capture_mode mode = SIMDEV_CAPTURE_MODE_RELAXED;
    simdev_thread_exchange_capture_mode(&mode);
    int rc = kernel_prepare(ctx, image, bytes, callable_id);
    simdev_thread_exchange_capture_mode(&mode);
    return rc;
}

static int kernel_prepare(struct simpler_context *ctx, const void *image, size_t bytes,
                          int32_t *callable_id)
{
    pthread_mutex_lock(&ctx->lock);
    struct sp_kernel_mode *k = &ctx->kernel;
    int rc = sp_kernel_mode_ready(ctx, false);
    struct sp_callable *c = NULL;
    if (rc)
        goto out;
    if ((uint32_t)k->next_id >= ctx->config.max_callables) {
        rc = PTO_RUNTIME_ERR_CALLABLE_COUNT_EXCEEDED; /* ids are never reused */
        goto out;
    }
    if ((rc = sp_callable_create(ctx, k->next_id, image, bytes, &c)))
        goto out;
    struct simpler_callable_header h;
    memcpy(&h, image, sizeof h);
    /* A config function may ask for more than the context committed. */
    struct rt_config run;
    size_t need;
    sp_rt_config(&ctx->config, &c->config, &run);
    if ((rc = rt_arena_bytes(&run, &ctx->topo, &need)) || need > ctx->arena_bytes) {
        rc = rc ? rc : PTO_RUNTIME_ERR_CAPACITY_EXCEEDED;
        goto unload;
    }
    /* The slot the device checks every packet against: written before the
     * id exists for anyone, never rewritten. */
    struct rt_kernel_mode_slot slot;
    memset(&slot, 0, sizeof slot);
    slot.generation = ++k->next_slot_generation;
    slot.record = c->record;
    slot.sig_count = h.sig_count;
    memcpy(slot.signature, h.signature, sizeof slot.signature);
    if ((rc = simdev_memcpy(&k->binding->slots[c->id], &slot, sizeof slot,
                            SIMDEV_COPY_HOST_TO_DEVICE)))
        goto unload;
    c->kernel_config = run;
    c->slot_generation = slot.generation;
    sp_residency_add(ctx, c);
    *callable_id = k->next_id++;
    k->callables_resolved++;
    c = NULL;
    goto out;
unload:;
    int undo = sp_callable_release(ctx, c);
    if (undo == 0) {
        free(c);
        c = NULL;
    } else {
        /* Keep it (unused, invisible to launches) so finalize releases it,
         * and say so: the refusal did change something (its memory stays
         * committed until close, its id is spent), so its code is the
         * undo's, not the refusal's. */
        sp_residency_add(ctx, c);
        k->next_id++;
        c = NULL;
        rc = undo;
    }
out:
    free(c);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}
