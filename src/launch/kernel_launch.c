/*
 * launch/kernel_launch.c — putting one kernel-mode round on the device.
 *
 * Owns: rt_kernel_mode_launch, kernel mode's caller of the launch chain
 * (chain.c): the round's device functions and argument blocks (round
 * begin, core loop, program with the packet, status op), its gate and
 * serial tail, and kernel mode's failure policy (refuse before commit,
 * retry after it, report a lost gate unit); and a round as a graph
 * recorded it (its program node's packet found and replaced, for a
 * rebinding: pure byte work on the node's arguments). Must not allocate,
 * synchronise, query a stream or an event, or look at capture state: a
 * launch may be captured into the caller's graph, and everything it does
 * must be an op of that graph.
 */
#include <stdbool.h>
#include <string.h>

#include "launch/chain.h"
#include "runtime/entries.h"

/* Attempts of each op once a launch is committed. */
#define COMMIT_TRIES 3

/* The argument blocks of one round's launches. Launch arguments are copied
 * by the device at enqueue: these live on the launch's stack for the call
 * only. */
struct kernel_round_blocks {
    struct rt_kernel_mode_round_args begin;
    struct rt_kernel_mode_core_args core;
    unsigned char program[SIMDEV_MAX_LAUNCH_ARGS]; /* the envelope, then the packet */
    size_t program_bytes;
    struct rt_kernel_mode_status_args status;
};

/* Fills the argument blocks of the round `round_generation` of `target`. */
static void blocks_fill(struct kernel_round_blocks *b, const struct rt_kernel_mode_target *target,
                        const struct rt_config *config, uint64_t round_generation,
                        const void *packet, size_t packet_bytes)
{
    b->begin = (struct rt_kernel_mode_round_args){target->context_generation, *config};
    memset(&b->core, 0, sizeof b->core);
    b->core.context_generation = target->context_generation;
    b->core.la.request.arena = target->arena;
    b->core.la.request.arena_bytes = target->arena_bytes;
    b->core.la.request.config = *config;
    b->core.la.generation = round_generation;
    /* host_build_graph: no orchestrator, so the program's last thread
     * schedules too (runtime/kernel_mode.c counts it the same way) */
    b->core.la.schedulers = rt_run_schedulers(config->runtime, target->schedulers);
    struct rt_kernel_mode_envelope env = {
        .context_generation = target->context_generation,
        .round_generation = round_generation,
        .schedulers = target->schedulers,
        .packet_bytes = (uint32_t)packet_bytes,
        .config = *config,
    };
    memcpy(b->program, &env, sizeof env);
    memcpy(b->program + sizeof env, packet, packet_bytes);
    b->program_bytes = sizeof env + packet_bytes;
    b->status = (struct rt_kernel_mode_status_args){target->context_generation, round_generation};
}

/* What a kernel-mode round puts on the chain: gated, with a serial tail,
 * each committed step tried COMMIT_TRIES times. */
static struct rt_chain_round kernel_round(const struct kernel_round_blocks *b,
                                          uint32_t schedulers)
{
    return (struct rt_chain_round){
        .begin = {rt_kernel_mode_round_begin_fn, 1, &b->begin, sizeof b->begin},
        .core = {rt_kernel_mode_core_fn, &b->core, sizeof b->core},
        .program = {rt_kernel_mode_program_fn, schedulers + 1, b->program, b->program_bytes},
        .status = {rt_kernel_mode_status_fn, 1, &b->status, sizeof b->status},
        .cancel_fn = rt_kernel_mode_cancel_fn,
        .gated = true,
        .serial_tail = true,
        .commit_tries = COMMIT_TRIES,
        .start_here = true,
    };
}

/*
 * Closes off a round refused at `failed` (before its program; the chain
 * has cancelled a core loop already enqueued): the AICPU stream behind the
 * core loop's end, the gate given back, both streams handed off clean.
 * Best effort, each once except the release: a further failure leaves the
 * core loop to its deadline (runtime/rendezvous.c) and an error the caller's
 * stream handed over on the context's streams until their next hand-off.
 */
static void refuse(const struct rt_launch_ops *ops, const struct rt_launch_chain *chain,
                   enum rt_chain_step failed, bool *gate_lost)
{
    bool aicore_done = rt_chain_passed(failed, RT_CHAIN_AICORE_DONE);
    if (rt_chain_passed(failed, RT_CHAIN_AICORE_WAIT_START) && !aicore_done)
        aicore_done = ops->record_handoff(chain->aicore_done, chain->aicore) == 0;
    if (!rt_chain_passed(failed, RT_CHAIN_AICPU_WAIT_START))
        return;
    /* Whether the AICPU stream is behind the core loop's end (or no core
     * loop was enqueued). */
    bool core_over = !rt_chain_passed(failed, RT_CHAIN_CORE_LOOP);
    if (aicore_done && ops->wait(chain->aicpu, chain->aicore_done) == 0)
        core_over = true;
    /* model: round_gate.pml, ReleaseGate (refused round). Retried as a
     * committed step is: a unit never given back would hold every later
     * round of the context, eager or replayed, at its acquire. But a
     * release not behind the core loop's end could let the next round
     * begin under it, so then the unit is kept for good instead. */
    bool released = !rt_chain_passed(failed, RT_CHAIN_GATE_ACQUIRE);
    for (int attempt = 0; !released && core_over && attempt < COMMIT_TRIES; attempt++)
        released = ops->gate_release(chain->aicpu, chain->gate) == 0;
    if (!released && gate_lost)
        *gate_lost = true;
    ops->record_handoff(chain->aicpu_done, chain->aicpu);
}

int rt_kernel_mode_build_image(const struct rt_kernel_mode_target *target,
                               const struct rt_config *config, uint64_t round_generation,
                               struct rt_kernel_mode_build *build, void **dst, size_t *bytes)
{
    size_t region;
    if (!target || !config || !build || !dst || !bytes ||
        rt_hbg_image_region(config, build->aic_cores + build->aiv_cores, target->arena, dst,
                            &region) != 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_run_request rq = {
        .kernel_count = build->kernel_count,
        .arena = target->arena,
        .arena_bytes = target->arena_bytes,
        .config = *config,
        .hbg = &build->host,
    };
    uint64_t begin = simdev_clock_ns();
    /* every AICPU thread of the round schedules: its schedulers and the
     * thread that boots the image */
    *bytes = rt_hbg_build(&rq, build->aic_cores, build->aiv_cores, target->schedulers + 1,
                          round_generation);
    if (!*bytes || *bytes > region)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_hbg_header built;
    memcpy(&built, build->host.bank, sizeof built);
    build->host.built_begin_ns = begin;
    build->host.built_end_ns = simdev_clock_ns();
    build->host.built_tasks = built.task_count;
    return 0;
}

int rt_kernel_mode_launch(const struct rt_launch_ops *ops, const struct rt_launch_chain *chain,
                     simdev_stream_t caller, const struct rt_kernel_mode_target *target,
                     const struct rt_config *config, uint64_t round_generation,
                     const void *packet, size_t packet_bytes,
                     const struct rt_kernel_mode_image *image, bool *gate_lost)
{
    if (gate_lost)
        *gate_lost = false;
    if (!ops || !chain || !caller || !target || !config || !packet ||
        packet_bytes > SIMDEV_MAX_LAUNCH_ARGS - sizeof(struct rt_kernel_mode_envelope) ||
        (image != NULL) != (config->runtime == RT_RUNTIME_HBG) ||
        (image && (!image->dst || !image->src || !image->bytes)))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct kernel_round_blocks blocks;
    blocks_fill(&blocks, target, config, round_generation, packet, packet_bytes);
    struct rt_chain_round round = kernel_round(&blocks, target->schedulers);
    int rc;
    /* host_build_graph: the graph the host built goes in by one staged
     * copy (the launch returns at once, and a capture records the image
     * itself), behind the gate and the round begin: the previous round of
     * the context is done with the arena's image region by then. */
    if (image) {
        round.image.dst = image->dst;
        round.image.src = image->src;
        round.image.bytes = image->bytes;
        round.image.staged = true;
    }
    enum rt_chain_step failed;
    rc = rt_chain_enqueue(ops, chain, caller, &round, &failed);
    /* Until the program is enqueued the launch can still be refused whole:
     * on a failure, what is already enqueued is closed off so that it ends
     * at once, ordered before the next round, and leaves no error on the
     * context's streams; the round never runs. Once the program is
     * enqueued the round will run, so the chain enqueued the rest of it
     * whatever it took (each op retried, COMMIT_TRIES in all). */
    if (rc && failed <= RT_CHAIN_PROGRAM)
        refuse(ops, chain, failed, gate_lost); /* nothing to close if the start failed */
    /* Up to the release, a committed step that is never enqueued means the
     * release is not either (it must come after it): the unit stays with
     * this round for good. Later, the round runs; what follows it on
     * `caller` is not ordered after it. */
    else if (rc && failed <= RT_CHAIN_GATE_RELEASE && gate_lost)
        *gate_lost = true;
    return rc;
}

/* ------------------------------------------------- a round in a graph */

bool rt_kernel_mode_round_packet(const struct simdev_launch_node *node, const void *args,
                                 uint64_t context_generation, const void **packet,
                                 size_t *packet_bytes, uint64_t *round_generation)
{
    struct rt_kernel_mode_envelope env;
    if (node->aicpu_fn != rt_kernel_mode_program_fn || node->args_size < sizeof env)
        return false;
    memcpy(&env, args, sizeof env);
    if (env.context_generation != context_generation ||
        env.packet_bytes != node->args_size - sizeof env)
        return false;
    *packet = (const unsigned char *)args + sizeof env;
    *packet_bytes = env.packet_bytes;
    *round_generation = env.round_generation;
    return true;
}

int rt_kernel_mode_round_rebind(const void *args, const void *packet, size_t packet_bytes,
                                void *out, size_t capacity, size_t *out_bytes)
{
    struct rt_kernel_mode_envelope env;
    if (capacity < sizeof env || packet_bytes > capacity - sizeof env)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    memcpy(&env, args, sizeof env);
    env.packet_bytes = (uint32_t)packet_bytes;
    memcpy(out, &env, sizeof env);
    memcpy((unsigned char *)out + sizeof env, packet, packet_bytes);
    *out_bytes = sizeof env + packet_bytes;
    return 0;
}
