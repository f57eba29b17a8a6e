/*
 * host/kernel_mode.c — kernel-mode contexts: a context that borrows the
 * caller's device and stream.
 *
 * Owns: simpler_kernel_mode_supported / _init and the kernel half of
 * simpler_finalize_device and simpler_destroy_device_context (through the
 * identity ops, context.h): the phase machine's lifecycle transitions, the
 * context's own streams, events, arenas and device binding, the ready
 * check and the generations that kernel_mode_callable.c and
 * kernel_mode_launch.c use. Must not touch what the
 * caller owns: the caller's device is never reset, the caller's streams
 * are only enqueued on (never synchronised, queried or destroyed), and the
 * caller's tensors are never read or written by host code here.
 *
 * Locking: ctx->lock guards everything. init and finalize wait for the
 * context's own control stream while holding it.
 */
#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "host/context.h"
#include "host/device_binding.h"
#include "launch/launch.h"
#include "host/kernel_mode.h"
#include "host/residency.h"
#include "host/trace_host.h"

/* Context generations picked when the caller passes 0, and every round's
 * generation: distinct within the process, so a round never takes a result
 * block or a rendezvous word an earlier round (of any context) left in
 * memory for its own. The device registry refuses a context generation that
 * is live. */
static _Atomic uint64_t next_generation;

uint64_t sp_kernel_mode_fresh_generation(void)
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

int sp_kernel_mode_ready(struct simpler_context *ctx, bool launch)
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
    if (!ctx || sp_latch_is(&ctx->latch, SP_IDENTITY_PROGRAM))
        return 0;
    int device;
    struct simdev_config topo;
    if (simdev_get_device(&device) || simdev_device_get_config(device, &topo) ||
        simdev_device_is_lost(device))
        return 0;
    return sp_topology_runs_rounds(&topo);
}

/* ---------------------------------------------------------- lifecycle */

/*
 * What a kernel context holds, created by kernel_create one step at a time
 * (read the left column down) and released by kernel_release in the
 * reverse order (read the right column up), one helper per step:
 *
 *   create                  release
 *   (init: sp_device_claim) release_claim
 *   size_resources          -  (nothing to release: sizes, a host image)
 *   create_host_build       release_host_build (HBG: host memory)
 *   create_streams          release_streams
 *   create_events           release_events
 *   create_memory           release_memory
 *   sp_trace_kernel_create  sp_trace_kernel_release
 *   -  (prepare makes them) release_callables: after the registration,
 *                           whose binding names their records
 *   create_registration     release_registration
 *   create_gate             release_gate
 *   -                       quiesce_streams: first, so that no round of
 *                           the context runs any more
 *
 * Every release step nulls each handle once released and stops at the
 * first failure, so a retry does what is left. Caller holds ctx->lock
 * throughout; release runs with the context's device current.
 */

#define OWN_STREAMS (3 + 2 * SIMPLER_MAX_CAPTURES)
#define OWN_EVENTS 5
#define OWN_MEMORY 4

/* The context's own streams, in creation order: the control stream, the
 * chain's AICPU and AICore streams, then every capture pair a context may
 * have (init creates config.max_captures of them; the rest stay NULL, and
 * releasing skips NULLs, so a retried init with another count leaks none). */
static void own_streams(struct simpler_context *ctx, simdev_stream_t *out[OWN_STREAMS])
{
    struct sp_kernel_mode *k = &ctx->kernel;
    int n = 0;
    out[n++] = &ctx->control;
    out[n++] = &k->chain.aicpu;
    out[n++] = &k->chain.aicore;
    for (int i = 0; i < SIMPLER_MAX_CAPTURES; i++) {
        out[n++] = &k->capture_aicpu[i];
        out[n++] = &k->capture_aicore[i];
    }
}

/* The chain's events, in creation order. */
static void own_events(struct simpler_context *ctx, simdev_event_t *out[OWN_EVENTS])
{
    struct sp_kernel_mode *k = &ctx->kernel;
    simdev_event_t *events[OWN_EVENTS] = {&k->chain.start, &k->chain.aicore_start,
                                          &k->chain.aicore_done, &k->chain.aicpu_done,
                                          &k->chain.serial_tail};
    memcpy(out, events, sizeof events);
}

/* The context's device memory and each block's size, in creation order. */
static void own_memory(struct simpler_context *ctx, void **out[OWN_MEMORY],
                       size_t bytes[OWN_MEMORY])
{
    struct sp_kernel_mode *k = &ctx->kernel;
    void **memory[OWN_MEMORY] = {&ctx->arena, (void **)&k->result, (void **)&k->args,
                                 (void **)&k->binding};
    size_t sizes[OWN_MEMORY] = {ctx->arena_bytes, sizeof *k->result, sizeof *k->args,
                                k->binding_bytes};
    memcpy(out, memory, sizeof memory);
    memcpy(bytes, sizes, sizeof sizes);
}

/* ------------------------------------------------------------- creating */

/* Sizes the arena and the binding, and allocates the binding's host image
 * (*image, the caller frees it): nothing on the device yet. */
static int size_resources(struct simpler_context *ctx, struct rt_kernel_mode_binding **image)
{
    struct sp_kernel_mode *k = &ctx->kernel;
    struct rt_config capacity;
    sp_rt_config(&ctx->config, &ctx->config.run_capacity, &capacity);
    int rc = rt_arena_bytes(&capacity, &ctx->topo, &ctx->arena_bytes);
    if (rc)
        return rc;
    k->binding_bytes = rt_kernel_mode_binding_bytes(ctx->config.max_callables);
    if (!k->binding_bytes)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (!(*image = sp_host_calloc(1, k->binding_bytes)))
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    return 0;
}

/* Cache-line alignment of the host build's scratch. */
#define HBG_SCRATCH_ALIGN 64u

/* host_build_graph: the host build's scratch and bank for rounds up to the
 * context's capacity, the scratch's pages written now (as the device arena's
 * are: a first write costs microseconds here), so that no launch allocates
 * or faults them in. Nothing for a TMR context. */
static int create_host_build(struct simpler_context *ctx)
{
    struct sp_kernel_mode *k = &ctx->kernel;
    if (ctx->config.runtime != SIMPLER_RUNTIME_HBG)
        return 0;
    struct rt_config capacity;
    sp_rt_config(&ctx->config, &ctx->config.run_capacity, &capacity);
    uint32_t cores = ctx->topo.aic_cores + ctx->topo.aiv_cores;
    size_t scratch = rt_hbg_scratch_bytes(&capacity, cores);
    size_t bank = rt_hbg_image_bound(&capacity);
    if (!scratch || !bank || scratch > SIZE_MAX - HBG_SCRATCH_ALIGN)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (!(k->hbg_raw = sp_host_calloc(1, scratch + HBG_SCRATCH_ALIGN)) ||
        !(k->hbg.host.bank = sp_host_malloc(bank)))
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    uintptr_t at = ((uintptr_t)k->hbg_raw + HBG_SCRATCH_ALIGN - 1) &
                   ~(uintptr_t)(HBG_SCRATCH_ALIGN - 1);
    k->hbg.host.scratch = (void *)at;
    k->hbg.host.scratch_bytes = scratch;
    k->hbg.host.bank_bytes = bank;
    k->hbg.aic_cores = ctx->topo.aic_cores;
    k->hbg.aiv_cores = ctx->topo.aiv_cores;
    rt_hbg_scratch_warm(k->hbg.host.scratch, &capacity, cores);
    return 0;
}

/* The control stream, the chain's AICPU and AICore streams, and
 * config.max_captures capture pairs. */
static int create_streams(struct simpler_context *ctx)
{
    simdev_stream_t *streams[OWN_STREAMS];
    own_streams(ctx, streams);
    int rc = 0;
    int count = 3 + 2 * (int)ctx->config.max_captures;
    for (int i = 0; i < count && !rc; i++)
        rc = simdev_stream_create(streams[i]);
    return rc;
}

/* The chain's events. */
static int create_events(struct simpler_context *ctx)
{
    simdev_event_t *events[OWN_EVENTS];
    own_events(ctx, events);
    int rc = 0;
    for (int i = 0; i < OWN_EVENTS && !rc; i++)
        rc = simdev_event_create(events[i]);
    return rc;
}

/* The arena, the round's result block and arguments, the binding. */
static int create_memory(struct simpler_context *ctx)
{
    void **memory[OWN_MEMORY];
    size_t bytes[OWN_MEMORY];
    own_memory(ctx, memory, bytes);
    int rc = 0;
    for (int i = 0; i < OWN_MEMORY && !rc; i++)
        rc = sp_dev_alloc(ctx, memory[i], bytes[i]);
    return rc;
}

/* Writes the zeroed result block and the binding (from `image`), and
 * registers the binding with the device registry (waiting on the control
 * stream). */
static int create_registration(struct simpler_context *ctx, struct rt_kernel_mode_binding *image)
{
    struct sp_kernel_mode *k = &ctx->kernel;
    image->context_generation = k->generation;
    image->device = ctx->device;
    image->arena = ctx->arena;
    image->arena_bytes = ctx->arena_bytes;
    image->arena_nonce = rt_arena_nonce(); /* a new arena: nothing in it is a run's yet */
    image->result = k->result;
    image->args = k->args;
    image->slot_count = ctx->config.max_callables;
    /* The result block starts zeroed: no round's generation is 0. */
    static const struct rt_run_result empty_result;
    int rc;
    if ((rc = simdev_memcpy(k->result, &empty_result, sizeof empty_result,
                            SIMDEV_COPY_HOST_TO_DEVICE)) ||
        (rc = simdev_memcpy(k->binding, image, k->binding_bytes, SIMDEV_COPY_HOST_TO_DEVICE)) ||
        (rc = rt_kernel_mode_register_enqueue(ctx->control, k->binding, k->generation)))
        return rc;
    if ((rc = simdev_stream_sync(ctx->control)))
        rt_stream_drain(ctx->control);
    /* On a failed sync the op may have run and failed (nothing registered),
     * or the sync itself failed with the op registered: unregistering is
     * harmless either way. */
    k->registered = true;
    return rc;
}

/* The round gate: one unit, held by a round from its start to its end.
 * Created last so that its release, which must come first (it is what
 * stops replays of captured rounds), mirrors it. */
static int create_gate(struct simpler_context *ctx)
{
    return simdev_sem_create(&ctx->kernel.chain.gate, 1);
}

/* Creates what a kernel context holds (the table above), sized before
 * anything is created. On failure kernel_release undoes it. */
static int kernel_create(struct simpler_context *ctx)
{
    struct rt_kernel_mode_binding *image = NULL;
    int rc = size_resources(ctx, &image);
    if (!rc && !(rc = create_host_build(ctx)) && !(rc = create_streams(ctx)) && !(rc = create_events(ctx)) &&
        !(rc = create_memory(ctx)) && !(rc = sp_trace_kernel_create(ctx)) &&
        !(rc = create_registration(ctx, image)))
        rc = create_gate(ctx);
    free(image);
    return rc;
}

/* ------------------------------------------------------------ releasing */

/* Waits for what the context's own streams hold, so no round of it is
 * running; only a lost device (nothing to wait for) stops it. */
static int quiesce_streams(struct simpler_context *ctx, bool lost)
{
    simdev_stream_t *own[OWN_STREAMS + 1];
    own_streams(ctx, own);
    int rc;
    /* The chain's and the capture pairs' streams first, then the control
     * stream (own[0]). */
    own[OWN_STREAMS] = own[0];
    for (int i = 1; i <= OWN_STREAMS && !lost; i++) {
        if (*own[i] && (rc = rt_stream_drain(*own[i])) && rc == PTO_RUNTIME_ERR_DEVICE_LOST)
            return rc;
    }
    return 0;
}

/* Takes the round gate and destroys it. */
static int release_gate(struct simpler_context *ctx, bool lost)
{
    struct sp_kernel_mode *k = &ctx->kernel;
    int rc;
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
            rt_stream_drain(ctx->control);
            return rc;
        }
    }
    if (k->chain.gate) {
        if ((rc = simdev_sem_destroy(k->chain.gate)))
            return rc;
        k->chain.gate = 0;
        k->gate_held = false;
    }
    return 0;
}

/* Unregisters the binding (on a lost device no op can: it is forgotten
 * directly). */
static int release_registration(struct simpler_context *ctx, bool lost)
{
    struct sp_kernel_mode *k = &ctx->kernel;
    if (lost && k->registered) {
        rt_kernel_mode_forget_on_lost_device(k->generation, k->binding);
        k->registered = false;
    }
    if (k->registered) {
        int rc;
        if ((rc = rt_kernel_mode_unregister_enqueue(ctx->control, k->binding, k->generation)) ||
            (rc = simdev_stream_sync(ctx->control))) {
            rt_stream_drain(ctx->control);
            return rc;
        }
        k->registered = false;
    }
    return 0;
}

/* Unloads and frees every callable prepare made. */
static int release_callables(struct simpler_context *ctx)
{
    for (uint32_t id = 0; id < SIMPLER_MAX_CALLABLE_IDS && ctx->callable_count; id++) {
        struct sp_callable *c = ctx->callables[id];
        int rc;
        if (c && (rc = sp_residency_remove(ctx, c)))
            return rc;
    }
    return 0;
}

/* Frees the device memory, last created first. */
static int release_memory(struct simpler_context *ctx)
{
    void **memory[OWN_MEMORY];
    size_t bytes[OWN_MEMORY];
    own_memory(ctx, memory, bytes);
    for (int i = OWN_MEMORY - 1; i >= 0; i--) {
        int rc;
        if (*memory[i] && (rc = sp_dev_free(ctx, *memory[i], bytes[i])))
            return rc;
        *memory[i] = NULL;
    }
    return 0;
}

/* Destroys the chain's events, last created first. */
static int release_events(struct simpler_context *ctx)
{
    simdev_event_t *events[OWN_EVENTS];
    own_events(ctx, events);
    for (int i = OWN_EVENTS - 1; i >= 0; i--) {
        int rc;
        if (*events[i] && (rc = simdev_event_destroy(*events[i])))
            return rc;
        *events[i] = NULL;
    }
    return 0;
}

/* Destroys the context's own streams, last created first. */
static int release_streams(struct simpler_context *ctx)
{
    simdev_stream_t *streams[OWN_STREAMS];
    own_streams(ctx, streams);
    for (int i = OWN_STREAMS - 1; i >= 0; i--) {
        int rc;
        if (*streams[i] && (rc = simdev_stream_destroy(*streams[i])))
            return rc;
        *streams[i] = NULL;
    }
    return 0;
}

/* Frees the host build's scratch and bank (host memory: nothing can fail,
 * and no round reads them once its launch has returned). */
static void release_host_build(struct simpler_context *ctx)
{
    struct sp_kernel_mode *k = &ctx->kernel;
    free(k->hbg_raw);
    free(k->hbg.host.bank);
    k->hbg_raw = NULL;
    memset(&k->hbg, 0, sizeof k->hbg);
}

/* Gives the device back (init claimed it). */
static void release_claim(struct simpler_context *ctx)
{
    if (ctx->kernel.claimed) {
        sp_device_release(ctx, ctx->device);
        ctx->kernel.claimed = false;
    }
}

/* Releases what a kernel context holds (the table above), in reverse order
 * of creation. */
static int kernel_release(struct simpler_context *ctx)
{
    /* On a lost device nothing runs any more: there is nothing to drain and
     * no op can unregister the binding, so it is forgotten directly; what is
     * left is host-side, and destroy and free calls still work. */
    bool lost = simdev_device_is_lost(ctx->device) > 0;
    int rc;
    if ((rc = quiesce_streams(ctx, lost)) || (rc = release_gate(ctx, lost)) ||
        (rc = release_registration(ctx, lost)) || (rc = release_callables(ctx)) ||
        (rc = sp_trace_kernel_release(ctx)) || (rc = release_memory(ctx)) ||
        (rc = release_events(ctx)) || (rc = release_streams(ctx)))
        return rc;
    release_host_build(ctx);
    release_claim(ctx);
    return 0;
}

/* The kernel half of simpler_finalize_device. Caller holds ctx->lock. */
/* Whether a capture of the caller's still holds one of the context's
 * capture pairs (a launch recorded into a capture that has not ended):
 * draining or destroying that pair would break the caller's capture. A
 * read: the query neither waits nor changes anything. */
static bool a_capture_holds_a_pair(const struct simpler_context *ctx)
{
    const struct sp_kernel_mode *k = &ctx->kernel;
    for (int i = 0; i < SIMPLER_MAX_CAPTURES; i++) {
        simdev_stream_t pair[2] = {k->capture_aicpu[i], k->capture_aicore[i]};
        for (int j = 0; j < 2; j++) {
            int capturing = 0;
            uint64_t id;
            if (pair[j] && !simdev_stream_get_capture_info(pair[j], &capturing, &id) && capturing)
                return true;
        }
    }
    return false;
}

static int kernel_finalize(struct simpler_context *ctx)
{
    struct sp_kernel_mode *k = &ctx->kernel;
    if (sp_phase_current(&k->phase) == SP_PHASE_NEW)
        return PTO_RUNTIME_ERR_INVALID_STATE; /* never initialised: it may still be */
    if (ctx->counters.prepared_calls)
        return PTO_RUNTIME_ERR_INVALID_STATE; /* the caller still holds prepared calls */
    if (a_capture_holds_a_pair(ctx))
        return PTO_RUNTIME_ERR_INVALID_STATE; /* end the capture first: nothing changed */
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
    if (!rc && (cfg.max_captures < 1 || cfg.max_captures > SIMPLER_MAX_CAPTURES))
        rc = PTO_RUNTIME_ERR_INVALID_ARGUMENT; /* kernel mode's own field */
    if (rc)
        return rc;
    pthread_mutex_lock(&ctx->lock);
    struct simdev_config topo;
    int current;
    if (sp_latch_is(&ctx->latch, SP_IDENTITY_PROGRAM) ||
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
    struct sp_kernel_mode *k = &ctx->kernel;
    sp_phase_init_begin(&k->phase);
    k->claimed = true;
    k->generation = context_generation ? context_generation : sp_kernel_mode_fresh_generation();
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

/* -------------------------------------------------------------- for tests */

void sp_test_kernel_counters(struct simpler_context *ctx, uint64_t *packets_encoded,
                             uint64_t *callables_resolved)
{
    pthread_mutex_lock(&ctx->lock);
    *packets_encoded = ctx->counters.packets_encoded;
    *callables_resolved = ctx->kernel.callables_resolved;
    pthread_mutex_unlock(&ctx->lock);
}

uint64_t sp_test_kernel_host_builds(struct simpler_context *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    uint64_t n = ctx->kernel.host_builds;
    pthread_mutex_unlock(&ctx->lock);
    return n;
}
