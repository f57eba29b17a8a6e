/*
 * launch/chain.h — the one launch chain both modes enqueue a round on.
 *
 * Owns: the chain's steps in their order, what a round hands the chain
 * (its device functions and argument blocks, whether it holds the round
 * gate and records a serial tail, how often a committed step is tried),
 * and rt_chain_enqueue. What to do about a step that could not be
 * enqueued is the caller's (its failure policy): program_launch.c drains,
 * kernel_launch.c refuses the round before its commit and reports a lost
 * gate unit after it.
 */
#ifndef SIMPLER_LAUNCH_CHAIN_H
#define SIMPLER_LAUNCH_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "launch/launch.h"

/*
 * The chain, one step per device op, in the order they are enqueued
 * (docs/runtime.md, "How a run reaches the device"; docs/kernel-mode.md,
 * "The launch chain"). A step the round does not have (see rt_chain_round)
 * is skipped.
 * Everything before RT_CHAIN_PROGRAM can still be closed off; from the
 * program on the round will run, so the steps after it are committed.
 */
enum rt_chain_step {
    RT_CHAIN_START,             /* caller: record start */
    RT_CHAIN_AICPU_WAIT_START,  /* AICPU: wait start */
    RT_CHAIN_GATE_ACQUIRE,      /* AICPU: acquire the gate (gated rounds) */
    RT_CHAIN_ZERO_RENDEZVOUS,   /* AICPU: zero the rendezvous region (if named) */
    RT_CHAIN_ROUND_BEGIN,       /* AICPU: round begin (if the round has one) */
    RT_CHAIN_IMAGE,             /* AICPU: copy the host-built graph in (HBG rounds) */
    RT_CHAIN_AICORE_START,      /* AICPU: record aicore_start */
    RT_CHAIN_AICORE_WAIT_START, /* AICore: wait aicore_start */
    RT_CHAIN_CORE_LOOP,         /* AICore: the core loop */
    RT_CHAIN_AICORE_DONE,       /* AICore: hand-off record aicore_done */
    RT_CHAIN_PROGRAM,           /* AICPU: the AICPU program (the commit point) */
    RT_CHAIN_AICPU_WAIT_CORE,   /* AICPU: wait aicore_done */
    RT_CHAIN_STATUS,            /* AICPU: the status op (if the round has one) */
    RT_CHAIN_GATE_RELEASE,      /* AICPU: release the gate (gated rounds) */
    RT_CHAIN_AICPU_DONE,        /* AICPU: hand-off record aicpu_done */
    RT_CHAIN_CALLER_WAIT,       /* caller: wait aicpu_done */
    RT_CHAIN_SERIAL_TAIL,       /* caller: record serial_tail (if recorded) */
    RT_CHAIN_STEPS              /* none failed: every step was enqueued */
};

/* One AICPU launch of a round: fn NULL means the round has none. */
struct rt_chain_aicpu {
    simdev_aicpu_fn fn;
    uint32_t threads;
    const void *args; /* borrowed for the enqueue (the device copies it) */
    size_t args_size;
};

/* The round's core loop, on every core. */
struct rt_chain_aicore {
    simdev_aicore_fn fn;
    const void *args; /* borrowed for the enqueue (the device copies it) */
    size_t args_size;
};

/*
 * What one round puts on the chain: everything the two modes differ in
 * except their failure policies. Borrowed for the rt_chain_enqueue call.
 */
struct rt_chain_round {
    void *rendezvous; /* device memory zeroed before the round; NULL: none */
    size_t rendezvous_bytes;
    struct rt_chain_aicpu begin; /* round begin */
    /* host_build_graph: the image the host built (host memory, borrowed
     * until the copy has run unless staged) and where the AICPU program reads it (the
     * arena's image region); bytes 0: none (a TMR round). */
    struct {
        void *dst;
        const void *src;
        size_t bytes;
        bool staged; /* the copy keeps the bytes (kernel mode: the launch returns at
                      * once, and a capture records the image itself) */
    } image;
    struct rt_chain_aicore core;
    struct rt_chain_aicpu program; /* the AICPU program */
    struct rt_chain_aicpu status;  /* the status op */
    /* One AICPU thread given the core loop's arguments: ends the round of
     * a core loop whose program will never be enqueued, at once rather
     * than at the core loop's deadline. */
    simdev_aicpu_fn cancel_fn;
    bool gated;       /* holds chain->gate from before round begin to after the status op */
    bool serial_tail; /* records chain->serial_tail on the caller behind the round */
    int commit_tries; /* attempts of each step after RT_CHAIN_PROGRAM (>= 1) */
    /* The round starts on the enqueueing thread once all its ops are queued
     * (the ops table's start_here_*, chain.c): kernel mode's rounds, whose
     * launch-to-sync it shortens, and program mode's TMR runs, since the
     * orchestrator runs a lone task's core itself (a run stream's executor
     * woken for each run was then a third of a pipelined run: measured,
     * docs/performance.md, "The orchestrator runs a lone task's core"). */
    bool start_here;
};

/*
 * Enqueues `round` on `caller` and the chain's streams through `ops`, step
 * by step in rt_chain_step's order, and returns 0 or the code of the first
 * step that could not be enqueued (a committed step after commit_tries
 * attempts); *failed is that step, RT_CHAIN_STEPS on success. A step that
 * fails stops the chain. If it fails after the core loop was enqueued and
 * before the program was, the chain enqueues the round's cancel_fn (best
 * effort, once) before it returns: closing off the rest is the caller's.
 * Enqueues only; the caller serialises enqueues on one chain.
 */
int rt_chain_enqueue(const struct rt_launch_ops *ops, const struct rt_launch_chain *chain,
                     simdev_stream_t caller, const struct rt_chain_round *round,
                     enum rt_chain_step *failed);

/* Whether a chain whose enqueue stopped at `failed` got past `step` (a
 * step the round does not have counts as passed). */
static inline bool rt_chain_passed(enum rt_chain_step failed, enum rt_chain_step step)
{
    return step < failed;
}

#endif /* SIMPLER_LAUNCH_CHAIN_H */
