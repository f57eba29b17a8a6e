/*
 * launch/chain.c — the one launch chain: enqueueing a round's device ops
 * on the caller's stream and the chain's two streams, in their order.
 *
 * Owns: the step list's ops (which op each step is, on which stream, and
 * why it sits where it does), the retry of committed steps, the cancel of
 * a core loop whose program never comes; and rt_stream_drain, which a
 * caller may use after a failed enqueue (the only code here that
 * synchronises). The chain must not allocate, synchronise, query a stream
 * or an event, or look at capture state (a kernel-mode round may be
 * captured into the caller's graph: everything it does must be an op of
 * that graph), and calls the device only through the ops table. What a
 * mode launches and what it does about a failed step are its own
 * (program_launch.c, kernel_launch.c).
 *
 * Why this shape ends every round (docs/runtime.md, "Why every round
 * ends"), whichever op fails, is skipped or never starts:
 *   - the core loop starts only after the AICPU stream reached the point
 *     just before the AICPU program: if that stream carries an error, the
 *     core loop inherits it and is skipped along with the program;
 *   - if only one half runs (its partner's launch failed as it executed),
 *     the round rendezvous (runtime/rendezvous.c) ends it within
 *     sched_timeout_ms;
 *   - a wait always waits (simdev), so aicpu_done comes after both halves
 *     ended even on a stream that carries an error, and the next round's
 *     halves never start before this round's ended;
 *   - aicore_done and aicpu_done are hand-off records: a round's error on
 *     a chain stream goes into the round's events (and so to the caller's
 *     stream) and ends there, so the next round starts on clean chain
 *     streams without anybody synchronising them.
 */
#include "launch/chain.h"

const struct rt_launch_ops rt_launch_simdev_ops = {
    .record = simdev_event_record,
    .record_handoff = simdev_event_record_handoff,
    .wait = simdev_stream_wait_event,
    .memset_async = simdev_memset_async,
    .memcpy_async = simdev_memcpy_async,
    .launch_aicpu = simdev_launch_aicpu,
    .launch_aicore = simdev_launch_aicore,
    .gate_acquire = simdev_stream_sem_acquire,
    .gate_release = simdev_stream_sem_release,
    .capture_info = simdev_stream_get_capture_info,
};

/* One rt_chain_enqueue call's operands. */
struct chain_call {
    const struct rt_launch_ops *ops;
    const struct rt_launch_chain *chain;
    simdev_stream_t caller;
    const struct rt_chain_round *round;
};

/* Whether `round` has `step` (steps not listed here every round has). */
static bool round_has(const struct rt_chain_round *round, enum rt_chain_step step)
{
    switch (step) {
    case RT_CHAIN_GATE_ACQUIRE:
    case RT_CHAIN_GATE_RELEASE:
        return round->gated;
    case RT_CHAIN_ZERO_RENDEZVOUS:
        return round->rendezvous != NULL;
    case RT_CHAIN_ROUND_BEGIN:
        return round->begin.fn != NULL;
    case RT_CHAIN_IMAGE:
        return round->image.bytes != 0;
    case RT_CHAIN_STATUS:
        return round->status.fn != NULL;
    case RT_CHAIN_SERIAL_TAIL:
        return round->serial_tail;
    default:
        return true;
    }
}

/* Enqueues one AICPU launch of the round on the chain's AICPU stream. */
static int launch_aicpu(const struct chain_call *c, const struct rt_chain_aicpu *l)
{
    return c->ops->launch_aicpu(c->chain->aicpu, l->fn, l->threads, l->args, l->args_size);
}

/* Enqueues `step`'s op, once. */
static int enqueue_step(const struct chain_call *c, enum rt_chain_step step)
{
    const struct rt_launch_ops *ops = c->ops;
    const struct rt_launch_chain *ch = c->chain;
    const struct rt_chain_round *r = c->round;
    switch (step) {
    case RT_CHAIN_START:
        return ops->record(ch->start, c->caller);
    case RT_CHAIN_AICPU_WAIT_START:
        return ops->wait(ch->aicpu, ch->start);
    case RT_CHAIN_GATE_ACQUIRE: /* model: round_gate.pml, AcquireGate */
        return ops->gate_acquire(ch->aicpu, ch->gate);
    case RT_CHAIN_ZERO_RENDEZVOUS:
        return ops->memset_async(r->rendezvous, 0, r->rendezvous_bytes, ch->aicpu);
    case RT_CHAIN_ROUND_BEGIN: /* clears the round state, holding the gate */
        return launch_aicpu(c, &r->begin);
    case RT_CHAIN_IMAGE: /* behind the previous round's program (this stream's
                          * order), ahead of this round's core loop */
        return ops->memcpy_async(r->image.dst, r->image.src, r->image.bytes,
                                 SIMDEV_COPY_HOST_TO_DEVICE, ch->aicpu);
    case RT_CHAIN_AICORE_START: /* just before the program: the core loop runs
                                 * only behind a healthy AICPU stream */
        return ops->record(ch->aicore_start, ch->aicpu);
    case RT_CHAIN_AICORE_WAIT_START:
        return ops->wait(ch->aicore, ch->aicore_start);
    case RT_CHAIN_CORE_LOOP:
        return ops->launch_aicore(ch->aicore, r->core.fn, r->core.args, r->core.args_size);
    case RT_CHAIN_AICORE_DONE: /* the core loop's error leaves the AICore stream here */
        return ops->record_handoff(ch->aicore_done, ch->aicore);
    case RT_CHAIN_PROGRAM: /* fails with the round's status, so the caller's
                            * stream carries a failed round's code */
        return launch_aicpu(c, &r->program);
    case RT_CHAIN_AICPU_WAIT_CORE: /* the next round's AICPU half waits for this core loop */
        return ops->wait(ch->aicpu, ch->aicore_done);
    case RT_CHAIN_STATUS: /* before the release: no later round can overwrite
                           * the result block first; its failure reaches the
                           * caller through aicpu_done */
        return launch_aicpu(c, &r->status);
    case RT_CHAIN_GATE_RELEASE: /* model: round_gate.pml, ReleaseGate — after the
                                 * status op read the result block, after the
                                 * core loop ended */
        return ops->gate_release(ch->aicpu, ch->gate);
    case RT_CHAIN_AICPU_DONE: /* the round's error leaves the chain's stream here */
        return ops->record_handoff(ch->aicpu_done, ch->aicpu);
    case RT_CHAIN_CALLER_WAIT: /* the caller's later work waits for the round */
        return ops->wait(c->caller, ch->aicpu_done);
    case RT_CHAIN_SERIAL_TAIL:
        return ops->record(ch->serial_tail, c->caller);
    default:
        return PTO_RUNTIME_ERR_INTERNAL;
    }
}

/* Enqueues `step`'s op, trying up to `tries` times; 0 or the last code. */
static int enqueue_tried(const struct chain_call *c, enum rt_chain_step step, int tries)
{
    int rc;
    int attempt = 0;
    do
        rc = enqueue_step(c, step);
    while (rc && ++attempt < tries);
    return rc;
}

int rt_chain_enqueue(const struct rt_launch_ops *ops, const struct rt_launch_chain *chain,
                     simdev_stream_t caller, const struct rt_chain_round *round,
                     enum rt_chain_step *failed)
{
    const struct chain_call c = {ops, chain, caller, round};
    for (enum rt_chain_step step = RT_CHAIN_START; step < RT_CHAIN_STEPS; step++) {
        if (!round_has(round, step))
            continue;
        /* Once the program is enqueued the round will run: the rest of
         * the chain is enqueued whatever it takes (commit_tries each). */
        int rc = enqueue_tried(&c, step, step > RT_CHAIN_PROGRAM ? round->commit_tries : 1);
        if (!rc)
            continue;
        /* The core loop is enqueued, its program never will be: end its
         * round now rather than at the core loop's deadline. */
        if (rt_chain_passed(step, RT_CHAIN_CORE_LOOP) && step <= RT_CHAIN_PROGRAM)
            ops->launch_aicpu(chain->aicpu, round->cancel_fn, 1, round->core.args,
                              round->core.args_size);
        *failed = step;
        return rc;
    }
    *failed = RT_CHAIN_STEPS;
    return 0;
}

int rt_stream_drain(simdev_stream_t stream)
{
    int rc;
    /* A failed sync waits for nothing, so sync again while work is still
     * pending; on a lost device sync and query say DEVICE_LOST, which ends
     * the loop. */
    do
        rc = simdev_stream_sync(stream);
    while (rc && rc != PTO_RUNTIME_ERR_DEVICE_LOST &&
           simdev_stream_query(stream) == PTO_RUNTIME_ERR_NOT_READY);
    return rc;
}
