/*
 * runtime/kernel_launch.c — putting one kernel-mode round on the device.
 *
 * Owns: rt_kernel_launch, the enqueue of one round's chain on the caller's
 * stream and the context's two streams, and the table of the only device
 * operations it may use. Must not allocate, synchronise, query a stream or
 * an event, or look at capture state: a launch may be captured into the
 * caller's graph, and everything it does must be an op of that graph.
 */
#include <stdbool.h>
#include <string.h>

#include "launch/launch.h"
#include "runtime/entries.h"
#include "runtime/layout.h"

/* Attempts of each op once a launch is committed. */
#define COMMIT_TRIES 3

const struct rt_kernel_launch_ops rt_kernel_simdev_ops = {
    .record = simdev_event_record,
    .record_handoff = simdev_event_record_handoff,
    .wait = simdev_stream_wait_event,
    .launch_aicpu = simdev_launch_aicpu,
    .launch_aicore = simdev_launch_aicore,
    .gate_acquire = simdev_stream_sem_acquire,
    .gate_release = simdev_stream_sem_release,
};

int rt_kernel_launch(const struct rt_kernel_launch_ops *ops, const struct rt_kernel_chain *chain,
                     simdev_stream_t caller, const struct rt_kernel_target *target,
                     const struct rt_config *config, uint64_t round_generation,
                     const void *packet, size_t packet_bytes, bool *gate_lost)
{
    if (gate_lost)
        *gate_lost = false;
    if (!ops || !chain || !caller || !target || !config || !packet ||
        packet_bytes > SIMDEV_MAX_LAUNCH_ARGS - sizeof(struct rt_kernel_envelope))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;

    /* Launch arguments are copied by the device at enqueue: these live on
     * this stack for the call only. */
    struct rt_kernel_round_args begin = {target->context_generation, *config};
    struct rt_kernel_core_args core;
    memset(&core, 0, sizeof core);
    core.context_generation = target->context_generation;
    core.la.request.arena = target->arena;
    core.la.request.arena_bytes = target->arena_bytes;
    core.la.request.config = *config;
    core.la.generation = round_generation;
    core.la.schedulers = target->schedulers;
    unsigned char program[SIMDEV_MAX_LAUNCH_ARGS];
    struct rt_kernel_envelope env = {
        .context_generation = target->context_generation,
        .round_generation = round_generation,
        .schedulers = target->schedulers,
        .packet_bytes = (uint32_t)packet_bytes,
        .config = *config,
    };
    memcpy(program, &env, sizeof env);
    memcpy(program + sizeof env, packet, packet_bytes);
    struct rt_kernel_status_args status = {target->context_generation, round_generation};

    /* Until the program is enqueued the launch can still be refused whole:
     * on a failure, what is already enqueued is closed off so that it ends
     * at once, ordered before the next round, and leaves no error on the
     * context's streams; the round never runs. Once the program is
     * enqueued the round will run, so the rest of the chain is enqueued
     * whatever it takes (each op retried, COMMIT_TRIES in all). */
    struct undo {
        bool aicpu, gate, aicore, core, aicore_done;
    } u = {false, false, false, false, false};
    int rc;
    if ((rc = ops->record(chain->start, caller)))
        return rc; /* nothing enqueued yet */
    if ((rc = ops->wait(chain->aicpu, chain->start)))
        goto refuse;
    u.aicpu = true;
    /* model: round_gate.pml, AcquireGate */
    if ((rc = ops->gate_acquire(chain->aicpu, chain->gate)))
        goto refuse;
    u.gate = true;
    if ((rc = ops->launch_aicpu(chain->aicpu, rt_kernel_round_begin_fn, 1, &begin, sizeof begin)) ||
        (rc = ops->record(chain->aicore_start, chain->aicpu)) ||
        (rc = ops->wait(chain->aicore, chain->aicore_start)))
        goto refuse;
    u.aicore = true;
    if ((rc = ops->launch_aicore(chain->aicore, rt_kernel_core_fn, &core, sizeof core)))
        goto refuse;
    u.core = true;
    if ((rc = ops->record_handoff(chain->aicore_done, chain->aicore)))
        goto refuse;
    u.aicore_done = true;
    if ((rc = ops->launch_aicpu(chain->aicpu, rt_kernel_program_fn, target->schedulers + 1,
                                program, sizeof env + packet_bytes)))
        goto refuse;

    /* Committed. */
    for (int step = 0; step < 6; step++) {
        for (int attempt = 0; attempt < COMMIT_TRIES; attempt++) {
            switch (step) {
            case 0: /* the next round's AICPU half waits for this core loop */
                rc = ops->wait(chain->aicpu, chain->aicore_done);
                break;
            case 1:
                rc = ops->launch_aicpu(chain->aicpu, rt_kernel_status_fn, 1, &status,
                                       sizeof status);
                break;
            case 2: /* model: round_gate.pml, ReleaseGate — after the status op
                     * read the result block, after the core loop ended */
                rc = ops->gate_release(chain->aicpu, chain->gate);
                break;
            case 3: /* the round's error leaves the context's stream here */
                rc = ops->record_handoff(chain->aicpu_done, chain->aicpu);
                break;
            case 4: /* the caller's later work waits for the round */
                rc = ops->wait(caller, chain->aicpu_done);
                break;
            default:
                rc = ops->record(chain->serial_tail, caller);
                break;
            }
            if (!rc)
                break;
        }
        if (rc) {
            /* Up to the release, a step that is never enqueued means the
             * release is not either (it must come after it): the unit
             * stays with this round for good. */
            if (step <= 2 && gate_lost)
                *gate_lost = true;
            return rc; /* the round runs; what follows it on `caller` is not ordered after it */
        }
    }
    return 0;

refuse:
    /* Best effort, each once: a further failure leaves the core loop to its
     * deadline (rendezvous.c) and an error the caller's stream handed over on
     * the context's streams until their next hand-off. */
    if (u.core)
        ops->launch_aicpu(chain->aicpu, rt_kernel_cancel_fn, 1, &core, sizeof core);
    if (u.aicore && !u.aicore_done)
        u.aicore_done = ops->record_handoff(chain->aicore_done, chain->aicore) == 0;
    if (u.aicpu) {
        /* Whether the AICPU stream is behind the core loop's end (or no
         * core loop was enqueued). */
        bool core_over = !u.core;
        if (u.aicore_done && ops->wait(chain->aicpu, chain->aicore_done) == 0)
            core_over = true;
        /* model: round_gate.pml, ReleaseGate (refused round). Retried as a
         * committed step is: a unit never given back would hold every later
         * round of the context, eager or replayed, at its acquire. But a
         * release not behind the core loop's end could let the next round
         * begin under it, so then the unit is kept for good instead. */
        bool released = !u.gate;
        for (int attempt = 0; !released && core_over && attempt < COMMIT_TRIES; attempt++)
            released = ops->gate_release(chain->aicpu, chain->gate) == 0;
        if (!released && gate_lost)
            *gate_lost = true;
        ops->record_handoff(chain->aicpu_done, chain->aicpu);
    }
    return rc;
}
