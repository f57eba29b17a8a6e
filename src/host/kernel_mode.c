/*
 * host/kernel_mode.c — kernel-mode contexts: a context that borrows the
 * caller's device and stream.
 *
 * Owns: simpler_kernel_mode_supported / _init / _prepare_callable and the
 * kernel half of simpler_finalize_device and simpler_destroy_device_context
 * (through the identity ops, context.h): the phase machine's transitions,
 * the context's own streams, events, arenas and device binding, callable
 * residency (ids minted, never reused), the ready check and the
 * generations launches use (kernel_mode_launch.c). Must not touch what the
 * caller owns: the caller's device is never reset, the caller's streams
 * are only enqueued on (never synchronised, queried or destroyed), and the
 * caller's tensors are never read or written by host code here.
 *
 * Locking: ctx->lock guards everything. prepare and finalize wait for the
 * context's own control stream while holding it.
 */
#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "host/context.h"
#include "host/device_binding.h"
#include "host/kernel_mode.h"
#include "host/residency.h"
#include "host/trace_host.h"

/* Context generations picked when the caller passes 0, and every round's
 * generation: distinct within the process, so a round never takes a result
 * block or a rendezvous word an earlier round (of any context) left in
 * memory for its own. The device registry refuses a context generation that
 * is live. */
static _Atomic uint64_t next_generation;

uint64_t sp_kernel_fresh_generation(void)
{
    uint64_t expected = 0;
    atomic_compare_exchange_strong(&next_generation, &expected, simdev_clock_ns() << 8);
    return atomic_fetch_add(&next_generation, 1) + 1;
}

/* ------------------------------------------------------------- checks */

/* The calling thread's current device is the context's. Read-only. */
static int on_own_device(const struct simpler_context *ctx)
{
    int current;
    int rc = simdev_get_device(&current);
    if (rc)
        return rc;
    return current == ctx->device ? 0 : PTO_RUNTIME_ERR_INVALID_STATE;
}

int sp_kernel_ready(struct simpler_context *ctx, bool launch)
{
    int rc = sp_latch_require(&ctx->latch, SP_IDENTITY_KERNEL);
    if (rc)
        return rc;
    if (sp_phase_current(&ctx->kernel.phase) == SP_PHASE_POISONED)
        return sp_phase_runtime_error(&ctx->kernel.phase); /* the device was lost, or a gate unit */
    if (launch ? !sp_phase_accepts_launch(&ctx->kernel.phase)
               : sp_phase_prepare_allowed(&ctx->kernel.phase) != 0)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    if ((rc = on_own_device(ctx)))
        return rc;
    if (simdev_device_is_lost(ctx->device)) {
        sp_phase_poison(&ctx->kernel.phase, PTO_RUNTIME_ERR_DEVICE_LOST);
        return PTO_RUNTIME_ERR_DEVICE_LOST;
    }
    return 0;
}

int simpler_kernel_mode_supported(const struct simpler_context *ctx)
{
    if (!ctx || sp_latch_identity(&ctx->latch) == SP_IDENTITY_PROGRAM)
        return 0;
    int device;
    struct simdev_config topo;
    if (simdev_get_device(&device) || simdev_device_get_config(device, &topo) ||
        simdev_device_is_lost(device))
        return 0;
    return sp_topology_runs_rounds(&topo);
}

/* ---------------------------------------------------------- lifecycle */

/* Releases what a kernel context holds, in reverse order of creation,
 * nulling each handle once released: a failure returns its code and leaves
 * the rest for a retry. The context's streams are drained first, so no
 * round of it is running. Caller holds ctx->lock; the device is current. */
static int kernel_release(struct simpler_context *ctx)
{
    struct sp_kernel *k = &ctx->kernel;
    int rc;
    /* On a lost device nothing runs any more: there is nothing to drain and
     * no op can unregister the binding, so it is forgotten directly; what is
     * left is host-side, and destroy and free calls still work. */
    bool lost = simdev_device_is_lost(ctx->device) > 0;
    simdev_stream_t own[5] = {k->chain.aicpu, k->chain.aicore, k->capture_aicpu,
                              k->capture_aicore, ctx->control};
    for (int i = 0; i < 5 && !lost; i++) {
        if (own[i] && (rc = sp_drain(own[i])) && rc == PTO_RUNTIME_ERR_DEVICE_LOST)
            return rc;
    }
    /* Graphs captured from this context may be replaying on streams the
     * context does not own. Taking the gate waits for the round that holds
     * it (rounds queued behind stay queued); destroying it then makes every
     * later acquire fail, so no round of this context runs after this point
     * and a replay after close follows nothing the context owned.
     * model: round_gate.pml, Close */
    if (k->chain.gate && !lost && !k->gate_held && !k->gate_lost) {
        if ((rc = simdev_stream_sem_acquire(ctx->control, k->chain.gate)))
            return rc;
        k->gate_held = true; /* once it executes: a sem op runs whatever the stream carries */
        if ((rc = simdev_stream_sync(ctx->control))) {
            sp_drain(ctx->control);
            return rc;
        }
    }
    if (k->chain.gate) {
        if ((rc = simdev_sem_destroy(k->chain.gate)))
            return rc;
        k->chain.gate = 0;
        k->gate_held = false;
    }
    if (lost && k->registered) {
        rt_kernel_forget_on_lost_device(k->generation, k->binding);
        k->registered = false;
    }
    if (k->registered) {
        if ((rc = rt_kernel_unregister_enqueue(ctx->control, k->binding, k->generation)) ||
            (rc = simdev_stream_sync(ctx->control))) {
            sp_drain(ctx->control);
            return rc;
        }
        k->registered = false;
    }
    for (uint32_t id = 0; id < SIMPLER_MAX_CALLABLE_IDS && ctx->callable_count; id++) {
        struct sp_callable *c = ctx->callables[id];
        if (!c)
            continue;
        if ((rc = sp_residency_remove(ctx, c)))
            return rc;
    }
    if ((rc = sp_trace_kernel_release(ctx)))
        return rc;
    void **mem[4] = {(void **)&k->binding, (void **)&k->args, (void **)&k->result, &ctx->arena};
    size_t bytes[4] = {k->binding_bytes, sizeof *k->args, sizeof *k->result, ctx->arena_bytes};
    for (int i = 0; i < 4; i++) {
        if (*mem[i]) {
            if ((rc = sp_dev_free(ctx, *mem[i], bytes[i])))
                return rc;
            *mem[i] = NULL;
        }
    }
    simdev_event_t *events[5] = {&k->chain.serial_tail, &k->chain.aicpu_done,
                                 &k->chain.aicore_done, &k->chain.aicore_start, &k->chain.start};
    for (int i = 0; i < 5; i++) {
        if (*events[i]) {
            if ((rc = simdev_event_destroy(*events[i])))
                return rc;
            *events[i] = NULL;
        }
    }
    simdev_stream_t *streams[5] = {&k->capture_aicore, &k->capture_aicpu, &k->chain.aicore,
                                   &k->chain.aicpu, &ctx->control};
    for (int i = 0; i < 5; i++) {
        if (*streams[i]) {
            if ((rc = simdev_stream_destroy(*streams[i])))
                return rc;
            *streams[i] = NULL;
        }
    }
    if (k->claimed) {
        sp_device_release(ctx, ctx->device);
        k->claimed = false;
    }
    return 0;
}

/* Creates what a kernel context holds, sized before anything is created.
 * Caller holds ctx->lock; on failure kernel_release undoes it. */
static int kernel_create(struct simpler_context *ctx)
{
    struct sp_kernel *k = &ctx->kernel;
    struct rt_config capacity;
    rt_config_from_public(&ctx->config.run_capacity, &capacity);
    int rc = rt_arena_bytes(&capacity, &ctx->topo, &ctx->arena_bytes);
    if (rc)
        return rc;
    k->binding_bytes = rt_kernel_binding_bytes(ctx->config.max_callables);
    if (!k->binding_bytes)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_kernel_binding *image = sp_host_calloc(1, k->binding_bytes);
    if (!image)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    if ((rc = simdev_stream_create(&ctx->control)) ||
        (rc = simdev_stream_create(&k->chain.aicpu)) ||
        (rc = simdev_stream_create(&k->chain.aicore)) ||
        (rc = simdev_stream_create(&k->capture_aicpu)) ||
        (rc = simdev_stream_create(&k->capture_aicore)) ||
        (rc = simdev_sem_create(&k->chain.gate, 1)) ||
        (rc = simdev_event_create(&k->chain.start)) ||
        (rc = simdev_event_create(&k->chain.aicore_start)) ||
        (rc = simdev_event_create(&k->chain.aicore_done)) ||
        (rc = simdev_event_create(&k->chain.aicpu_done)) ||
        (rc = simdev_event_create(&k->chain.serial_tail)) ||
        (rc = sp_dev_alloc(ctx, &ctx->arena, ctx->arena_bytes)) ||
        (rc = sp_dev_alloc(ctx, (void **)&k->result, sizeof *k->result)) ||
        (rc = sp_dev_alloc(ctx, (void **)&k->args, sizeof *k->args)) ||
        (rc = sp_dev_alloc(ctx, (void **)&k->binding, k->binding_bytes)) ||
        (rc = sp_trace_kernel_create(ctx)))
        goto out;
    image->context_generation = k->generation;
    image->device = ctx->device;
    image->arena = ctx->arena;
    image->arena_bytes = ctx->arena_bytes;
    image->result = k->result;
    image->args = k->args;
    image->slot_count = ctx->config.max_callables;
    /* The result block starts zeroed: no round's generation is 0. */
    static const struct rt_run_result empty_result;
    if ((rc = simdev_memcpy(k->result, &empty_result, sizeof empty_result,
                            SIMDEV_COPY_HOST_TO_DEVICE)) ||
        (rc = simdev_memcpy(k->binding, image, k->binding_bytes, SIMDEV_COPY_HOST_TO_DEVICE)) ||
        (rc = rt_kernel_register_enqueue(ctx->control, k->binding, k->generation)))
        goto out;
    if ((rc = simdev_stream_sync(ctx->control))) {
        sp_drain(ctx->control);
        /* The op may have run and failed (nothing registered), or the sync
         * itself failed with the op registered: unregistering is harmless
         * either way. */
        k->registered = true;
        goto out;
    }
    k->registered = true;
out:
    free(image);
    return rc;
}

/* The kernel half of simpler_finalize_device. Caller holds ctx->lock. */
static int kernel_finalize(struct simpler_context *ctx)
{
    struct sp_kernel *k = &ctx->kernel;
    if (sp_phase_current(&k->phase) == SP_PHASE_NEW)
        return PTO_RUNTIME_ERR_INVALID_STATE; /* never initialised: it may still be */
    int rc = sp_phase_close_begin(&k->phase);
    if (rc)
        return rc; /* an init is under way */
    if (sp_phase_current(&k->phase) == SP_PHASE_CLOSED)
        return ctx->initialized ? 0 : PTO_RUNTIME_ERR_INVALID_STATE;
    /* The context's own streams may hold rounds: make this thread's current
     * device the context's for the teardown, then give the caller's back. */
    int previous;
    if ((rc = simdev_get_device(&previous)) || (rc = simdev_set_device(ctx->device)))
        return rc;
    if ((rc = kernel_release(ctx))) {
        sp_phase_close_step_failed(&k->phase, rc);
    } else {
        sp_phase_close_done(&k->phase);
        ctx->initialized = false;
        ctx->committed = 0;
    }
    simdev_set_device(previous);
    return rc;
}

/* The kernel half of simpler_destroy_device_context: only a context that
 * never initialised or closed completely; one with leftovers of a failed
 * close keeps them for a retry. Caller holds ctx->lock. */
static int kernel_before_destroy(struct simpler_context *ctx)
{
    enum sp_phase_kind phase = sp_phase_current(&ctx->kernel.phase);
    return phase == SP_PHASE_NEW || phase == SP_PHASE_CLOSED ? 0 : PTO_RUNTIME_ERR_INVALID_STATE;
}

static const struct sp_identity_ops kernel_ops = {
    .finalize = kernel_finalize,
    .before_destroy = kernel_before_destroy,
};

int simpler_kernel_mode_init(struct simpler_context *ctx, int device_id,
                             const struct simpler_config *config, uint64_t context_generation)
{
    struct simpler_config cfg;
    int rc = sp_init_arguments(ctx, device_id, config, &cfg);
    if (rc)
        return rc;
    pthread_mutex_lock(&ctx->lock);
    struct simdev_config topo;
    int current;
    if (sp_latch_identity(&ctx->latch) == SP_IDENTITY_PROGRAM ||
        sp_phase_current(&ctx->kernel.phase) != SP_PHASE_NEW)
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    else if (!(rc = simdev_get_device(&current)) && current != device_id)
        rc = PTO_RUNTIME_ERR_INVALID_STATE; /* the caller's current device, read only */
    else if (!rc && !(rc = sp_device_usable(device_id, &cfg, &topo)))
        rc = sp_device_claim(ctx, device_id); /* INVALID_STATE: another context has it */
    if (rc)
        goto out;
    /* Latched for good from here; the claim is released by any failure. */
    if ((rc = sp_latch_claim(&ctx->latch, SP_IDENTITY_KERNEL))) {
        sp_device_release(ctx, device_id);
        goto out;
    }
    ctx->identity_ops = &kernel_ops;
    struct sp_kernel *k = &ctx->kernel;
    sp_phase_init_begin(&k->phase);
    k->claimed = true;
    k->generation = context_generation ? context_generation : sp_kernel_fresh_generation();
    ctx->device = device_id;
    ctx->topo = topo;
    ctx->config = cfg;
    k->schedulers = cfg.run_capacity.scheduler_threads ? cfg.run_capacity.scheduler_threads
                                                      : topo.aicpu_threads - 1;
    if ((rc = kernel_create(ctx))) {
        int undo = kernel_release(ctx);
        sp_phase_init_failed(&k->phase, undo);
        goto out;
    }
    sp_phase_init_done(&k->phase);
    ctx->initialized = true;
out:
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* ---------------------------------------------------------- callables */

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
    struct sp_kernel *k = &ctx->kernel;
    int rc = sp_kernel_ready(ctx, false);
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
    rt_config_from_public(&c->config, &run);
    if ((rc = rt_arena_bytes(&run, &ctx->topo, &need)) || need > ctx->arena_bytes) {
        rc = rc ? rc : PTO_RUNTIME_ERR_CAPACITY_EXCEEDED;
        goto unload;
    }
    /* The slot the device checks every packet against: written before the
     * id exists for anyone, never rewritten. */
    struct rt_kernel_slot slot;
    memset(&slot, 0, sizeof slot);
    slot.generation = ++k->next_slot_generation;
    slot.record = c->record;
    slot.sig_count = h.sig_count;
    memcpy(slot.signature, h.signature, sizeof slot.signature);
    if ((rc = simdev_memcpy(&k->binding->slots[c->id], &slot, sizeof slot,
                            SIMDEV_COPY_HOST_TO_DEVICE)))
        goto unload;
    c->slot_generation = slot.generation;
    sp_residency_add(ctx, c);
    *callable_id = k->next_id++;
    k->callables_resolved++;
    c = NULL;
    goto out;
unload:
    if (sp_callable_release(ctx, c) == 0) {
        free(c);
        c = NULL;
    } else {
        /* Keep it (unused, invisible to launches) so finalize releases it. */
        sp_residency_add(ctx, c);
        k->next_id++;
        c = NULL;
    }
out:
    free(c);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

void sp_test_kernel_counters(struct simpler_context *ctx, uint64_t *packets_encoded,
                             uint64_t *callables_resolved)
{
    pthread_mutex_lock(&ctx->lock);
    *packets_encoded = ctx->kernel.packets_encoded;
    *callables_resolved = ctx->kernel.callables_resolved;
    pthread_mutex_unlock(&ctx->lock);
}
