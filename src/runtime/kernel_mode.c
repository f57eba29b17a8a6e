/*
 * runtime/kernel_mode.c — the device side of a kernel-mode round.
 *
 * Owns: the registry of live kernel contexts (context generation -> its
 * binding), the device functions a kernel launch enqueues (round begin,
 * the core loop wrapper, the AICPU program that decodes the invocation
 * packet, the status op), and the register/unregister ops. Runs on the
 * device only; the host reaches it through the launch layer's enqueue calls
 * (launch/launch.h).
 *
 * The rule every function here keeps: nothing a packet or a launch names
 * is followed before its context generation is found live in the registry.
 * A packet from a closed context (an old graph replayed, say) is refused
 * by generation alone, without touching the memory the closed context
 * owned.
 */
#include <pthread.h>
#include <string.h>

#include "common/checked.h"
#include "common/packet.h"
#include "platform/platform.h"
#include "runtime/aicpu_program.h"
#include "runtime/entries.h"
#include "runtime/layout.h"
#include "runtime/rendezvous.h"
#include "runtime/run.h"
#include "runtime/runtime.h"
#include "simpler/status.h"

/* ------------------------------------------------------------- registry */

/* Written by the register/unregister ops (one at a time, under
 * registry_lock); read lock-free by every round. */
static struct {
    _Atomic uint64_t generation; /* 0: free */
    struct rt_kernel_mode_binding *_Atomic binding;
} registry[RT_KERNEL_MODE_MAX_CONTEXTS];
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

/* The binding of live context `generation` on `device`, or NULL. */
static struct rt_kernel_mode_binding *lookup(uint64_t generation, int device)
{
    if (!generation)
        return NULL;
    for (uint32_t i = 0; i < RT_KERNEL_MODE_MAX_CONTEXTS; i++) {
        /* acquire: pairs with the release in rt_kernel_mode_register_main, so the binding
         * pointer and the binding's contents are visible */
        if (atomic_load_explicit(&registry[i].generation, memory_order_acquire) != generation)
            continue;
        struct rt_kernel_mode_binding *b =
            atomic_load_explicit(&registry[i].binding, memory_order_acquire);
        /* The entry may have been reused between the two loads: the
         * binding names its own generation. */
        return b && b->context_generation == generation && b->device == device ? b : NULL;
    }
    return NULL;
}

int rt_kernel_mode_register_main(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    struct rt_kernel_mode_register_args ra;
    if (args_size != sizeof ra)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&ra, args, sizeof ra);
    if (!ra.binding || ra.binding->context_generation != ra.generation || !ra.generation ||
        ra.binding->device != ctx->device)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&registry_lock);
    int rc = PTO_RUNTIME_ERR_CAPACITY_EXCEEDED;
    uint32_t free_entry = RT_KERNEL_MODE_MAX_CONTEXTS;
    for (uint32_t i = 0; i < RT_KERNEL_MODE_MAX_CONTEXTS; i++) {
        uint64_t g = atomic_load_explicit(&registry[i].generation, memory_order_relaxed);
        if (g == ra.generation) {
            free_entry = RT_KERNEL_MODE_MAX_CONTEXTS;
            rc = PTO_RUNTIME_ERR_INVALID_STATE; /* that generation is live */
            break;
        }
        if (!g && free_entry == RT_KERNEL_MODE_MAX_CONTEXTS)
            free_entry = i;
    }
    if (free_entry < RT_KERNEL_MODE_MAX_CONTEXTS) {
        atomic_store_explicit(&registry[free_entry].binding, ra.binding, memory_order_relaxed);
        /* release: the binding (and what the host copied into it before
         * this op) before the generation; pairs with lookup's acquire */
        atomic_store_explicit(&registry[free_entry].generation, ra.generation,
                              memory_order_release);
        rc = 0;
    }
    pthread_mutex_unlock(&registry_lock);
    return rc;
}

/* Removes the entry of `generation` if it is `binding`'s: a context never
 * removes another's entry, even one that holds the same generation. */
static void forget(uint64_t generation, const struct rt_kernel_mode_binding *binding)
{
    pthread_mutex_lock(&registry_lock);
    for (uint32_t i = 0; generation && i < RT_KERNEL_MODE_MAX_CONTEXTS; i++) {
        if (atomic_load_explicit(&registry[i].generation, memory_order_relaxed) == generation &&
            atomic_load_explicit(&registry[i].binding, memory_order_relaxed) == binding) {
            atomic_store_explicit(&registry[i].generation, 0, memory_order_release);
            atomic_store_explicit(&registry[i].binding, NULL, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&registry_lock);
}

int rt_kernel_mode_unregister_main(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    struct rt_kernel_mode_register_args ra;
    if (args_size != sizeof ra)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&ra, args, sizeof ra);
    forget(ra.generation, ra.binding);
    return 0;
}

void rt_kernel_mode_forget_on_lost_device(uint64_t context_generation,
                                     const struct rt_kernel_mode_binding *binding)
{
    forget(context_generation, binding);
}

size_t rt_kernel_mode_binding_bytes(uint32_t slots)
{
    uint64_t bytes;
    if (!sp_mul_u64(slots, sizeof(struct rt_kernel_mode_slot), &bytes) ||
        !sp_add_u64(bytes, sizeof(struct rt_kernel_mode_binding), &bytes) || bytes > SIZE_MAX)
        return 0;
    return (size_t)bytes;
}

/* --------------------------------------------------------- round begin */

/* Round begin (one AICPU thread, before aicore_start): clears the round's
 * control state — every core's rendezvous word and the run's init
 * generation — so a round never sees an earlier round's, even one replayed
 * with the same generation. */
static int round_begin_main(const struct simdev_aicpu_ctx *ctx, const void *args,
                            size_t args_size)
{
    /* model: round_gate.pml, RoundBegin (runs holding the round gate) */
    struct rt_kernel_mode_round_args ra;
    if (args_size != sizeof ra)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&ra, args, sizeof ra);
    const struct rt_kernel_mode_binding *b = lookup(ra.context_generation, ctx->device);
    if (!b)
        return 0; /* a closed context: the program refuses the round */
    struct platform_topology topo;
    struct rt_layout layout;
    if (platform_topology(ctx->device, &topo) != 0 ||
        rt_layout_compute(&ra.config, topo.aic_cores + topo.aiv_cores, &layout) != 0 ||
        layout.total > b->arena_bytes)
        return 0; /* the program fails the round with BAD_CONFIG */
    memset(rt_rendezvous_words(b->arena, &layout), 0, layout.rendezvous_bytes);
    /* A replay runs with the generation of the round it was captured from:
     * the result block must not still say that round reported. */
    b->result->generation = 0;
    struct rt_run *run = b->arena;
    /* release: the cleared words before anything this round's halves do
     * after the events that follow this op */
    atomic_store_explicit(&run->init_generation, 0, memory_order_release);
    return 0;
}

/* ------------------------------------------------------------ core loop */

/* Copies a core loop's launch arguments into *out and returns its context's
 * binding, or NULL for malformed arguments or a context that is not live
 * (its arena must not be touched). */
static const struct rt_kernel_mode_binding *live_core_args(const void *args, size_t args_size,
                                                      int device, struct rt_kernel_mode_core_args *out)
{
    if (args_size != sizeof *out)
        return NULL;
    memcpy(out, args, sizeof *out);
    const struct rt_kernel_mode_binding *b = lookup(out->context_generation, device);
    return b && b->arena == out->la.request.arena ? b : NULL;
}

static int core_main(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    /* model: round_gate.pml, CoreLoop (CoreHalf) */
    struct rt_kernel_mode_core_args ca;
    if (!live_core_args(args, args_size, ctx->device, &ca))
        return args_size == sizeof ca ? 0 : PTO_RUNTIME_ERR_INTERNAL; /* closed: touch nothing */
    return rt_core_main(ctx, &ca.la, sizeof ca.la);
}

/* The cancel of a launch refused after its core loop was enqueued: settles
 * the round of the cores, if the context is still live. */
static int cancel_main(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    struct rt_kernel_mode_core_args ca;
    if (!live_core_args(args, args_size, ctx->device, &ca))
        return args_size == sizeof ca ? 0 : PTO_RUNTIME_ERR_INTERNAL;
    return rt_round_cancel_main(ctx, &ca.la, sizeof ca.la);
}

/* ------------------------------------------------------- the AICPU program */

/* Checks what the orchestrator thread must know before following anything
 * the packet names, and copies the arguments into the round's args block.
 * Returns 0 or the (positive) code that rejects the round. */
static int32_t accept_packet(const struct rt_kernel_mode_binding *b, const void *packet, size_t bytes,
                             uint64_t context_generation, struct rt_run_request *rq)
{
    struct sp_packet_view v;
    if (sp_packet_decode_header(packet, bytes, &v) != 0)
        return SIMPLER_ORCH_ERR_BAD_PACKET;
    if (v.context_generation != context_generation || (uint64_t)v.callable_id >= b->slot_count)
        return SIMPLER_ORCH_ERR_STALE_BINDING;
    const struct rt_kernel_mode_slot *slot = &b->slots[v.callable_id];
    if (!slot->generation || slot->generation != v.slot_generation || !slot->record)
        return SIMPLER_ORCH_ERR_STALE_BINDING;
    struct sp_packet_signature sig = {slot->sig_count, slot->signature};
    if (sp_packet_check_args(&v, &sig) != 0)
        return SIMPLER_ORCH_ERR_BAD_PACKET;
    sp_packet_orch_args(&v, b->args);
    rq->entry = slot->record->entry;
    rq->kernels = slot->record->kernels;
    rq->kernel_count = slot->record->kernel_count;
    return 0;
}

static int program_main(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    /* model: round_gate.pml, Program (SchedHalf) */
    struct rt_kernel_mode_envelope env;
    if (args_size < sizeof env)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&env, args, sizeof env);
    if (env.packet_bytes != args_size - sizeof env || env.schedulers + 1 != ctx->thread_count)
        return PTO_RUNTIME_ERR_INTERNAL;
    struct rt_kernel_mode_binding *b = lookup(env.context_generation, ctx->device);
    if (!b)
        return 0; /* a closed context: the status op reports it */
    struct rt_launch_args la;
    memset(&la, 0, sizeof la);
    la.request.args = b->args;
    la.request.arena = b->arena;
    la.request.arena_bytes = b->arena_bytes;
    la.request.arena_nonce = b->arena_nonce;
    la.request.result = b->result;
    la.request.config = env.config;
    la.generation = env.round_generation;
    /* host_build_graph: no orchestrator; the last thread boots the image
     * and schedules with the others (launch/kernel_launch.c counts the
     * core loop's schedulers the same way) */
    la.schedulers = rt_run_schedulers(env.config.runtime, env.schedulers);
    int32_t rejected = 0;
    if (ctx->thread_index == ctx->thread_count - 1) /* the orchestrator */
        rejected = accept_packet(b, (const unsigned char *)args + sizeof env, env.packet_bytes,
                                 env.context_generation, &la.request);
    /* Kernel mode reports the round's status with its own status op. */
    (void)rt_aicpu_round(ctx, &la, rejected);
    return 0;
}

/* ------------------------------------------------------------ status op */

static int status_main(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    /* model: round_gate.pml, StatusOp (before ReleaseGate) */
    struct rt_kernel_mode_status_args sa;
    if (args_size != sizeof sa)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&sa, args, sizeof sa);
    const struct rt_kernel_mode_binding *b = lookup(sa.context_generation, ctx->device);
    if (!b)
        return -SIMPLER_ORCH_ERR_STALE_BINDING;
    if (b->result->generation != sa.round_generation)
        return PTO_RUNTIME_ERR_INTERNAL; /* the program never reported this round */
    return b->result->status;
}

const simdev_aicpu_fn rt_kernel_mode_round_begin_fn = round_begin_main;
const simdev_aicore_fn rt_kernel_mode_core_fn = core_main;
const simdev_aicpu_fn rt_kernel_mode_program_fn = program_main;
const simdev_aicpu_fn rt_kernel_mode_status_fn = status_main;
const simdev_aicpu_fn rt_kernel_mode_cancel_fn = cancel_main;
