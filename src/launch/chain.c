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
    .enqueue_batch = simdev_stream_enqueue_batch,
    .start_here_begin = simdev_start_here_begin,
    .start_here_end = simdev_start_here_end,
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

/* The op of an AICPU launch of the round; `brief`: one thread that
 * returns at once and waits for nothing (round begin, the status op),
 * which simdev may run where the op starts, without a hand-off. */
static struct simdev_batch_op aicpu_op(const struct rt_chain_aicpu *l, bool brief)
{
    return (struct simdev_batch_op){.kind = brief && l->threads == 1 ? SIMDEV_BATCH_AICPU_BRIEF
                                                                     : SIMDEV_BATCH_AICPU,
                                    .aicpu_fn = l->fn,
                                    .thread_count = l->threads,
                                    .args = l->args,
                                    .args_size = l->args_size};
}

static struct simdev_batch_op event_op(enum simdev_batch_kind kind, simdev_event_t event)
{
    return (struct simdev_batch_op){.kind = kind, .event = event};
}

static struct simdev_batch_op gate_op(enum simdev_batch_kind kind, simdev_sem_t gate)
{
    return (struct simdev_batch_op){.kind = kind, .sem = gate};
}

/* Which op `step` is, into *op, and the stream it goes on. */
static simdev_stream_t step_op(const struct chain_call *c, enum rt_chain_step step,
                               struct simdev_batch_op *op)
{
    const struct rt_launch_chain *ch = c->chain;
    const struct rt_chain_round *r = c->round;
    switch (step) {
    case RT_CHAIN_START:
        *op = event_op(SIMDEV_BATCH_RECORD, ch->start);
        return c->caller;
    case RT_CHAIN_AICPU_WAIT_START:
        *op = event_op(SIMDEV_BATCH_WAIT, ch->start);
        return ch->aicpu;
    case RT_CHAIN_GATE_ACQUIRE: /* model: round_gate.pml, AcquireGate */
        *op = gate_op(SIMDEV_BATCH_SEM_ACQUIRE, ch->gate);
        return ch->aicpu;
    case RT_CHAIN_ZERO_RENDEZVOUS:
        *op = (struct simdev_batch_op){
            .kind = SIMDEV_BATCH_MEMSET, .dev_ptr = r->rendezvous, .bytes = r->rendezvous_bytes};
        return ch->aicpu;
    case RT_CHAIN_ROUND_BEGIN: /* clears the round state, holding the gate */
        *op = aicpu_op(&r->begin, true);
        return ch->aicpu;
    case RT_CHAIN_IMAGE: /* behind the previous round's program (this stream's
                          * order), ahead of this round's core loop */
        *op = (struct simdev_batch_op){.kind = SIMDEV_BATCH_COPY,
                                       .dev_ptr = r->image.dst,
                                       .src = r->image.src,
                                       .bytes = r->image.bytes,
                                       .copy_kind = r->image.staged
                                                        ? SIMDEV_COPY_HOST_TO_DEVICE_STAGED
                                                        : SIMDEV_COPY_HOST_TO_DEVICE};
        return ch->aicpu;
    case RT_CHAIN_AICORE_START: /* just before the program: the core loop runs
                                 * only behind a healthy AICPU stream */
        *op = event_op(SIMDEV_BATCH_RECORD, ch->aicore_start);
        return ch->aicpu;
    case RT_CHAIN_AICORE_WAIT_START:
        *op = event_op(SIMDEV_BATCH_WAIT, ch->aicore_start);
        return ch->aicore;
    case RT_CHAIN_CORE_LOOP: /* its cores started as the scheduler needs them */
        *op = (struct simdev_batch_op){.kind = SIMDEV_BATCH_AICORE_ON_DEMAND,
                                       .aicore_fn = r->core.fn,
                                       .args = r->core.args,
                                       .args_size = r->core.args_size};
        return ch->aicore;
    case RT_CHAIN_AICORE_DONE: /* the core loop's error leaves the AICore stream here */
        *op = event_op(SIMDEV_BATCH_RECORD_HANDOFF, ch->aicore_done);
        return ch->aicore;
    case RT_CHAIN_PROGRAM: /* fails with the round's status, so the caller's
                            * stream carries a failed round's code; a TMR
                            * round's schedulers' threads start as the
                            * runtime needs them (aicpu_program.c) */
        *op = aicpu_op(&r->program, false);
        /* A TMR round (no image): every thread of a host build schedules
         * from the start, and a lead launch would cost its others a second
         * wake-up, made by the lead once it ran (HBG's W7 77 -> 130 us a
         * run, measured) */
        if (op->thread_count > 1 && !r->image.bytes)
            op->kind = SIMDEV_BATCH_AICPU_LEAD;
        return ch->aicpu;
    case RT_CHAIN_AICPU_WAIT_CORE: /* the next round's AICPU half waits for this core loop */
        *op = event_op(SIMDEV_BATCH_WAIT, ch->aicore_done);
        return ch->aicpu;
    case RT_CHAIN_STATUS: /* before the release: no later round can overwrite
                           * the result block first; its failure reaches the
                           * caller through aicpu_done */
        *op = aicpu_op(&r->status, true);
        return ch->aicpu;
    case RT_CHAIN_GATE_RELEASE: /* model: round_gate.pml, ReleaseGate — after the
                                 * status op read the result block, after the
                                 * core loop ended */
        *op = gate_op(SIMDEV_BATCH_SEM_RELEASE, ch->gate);
        return ch->aicpu;
    case RT_CHAIN_AICPU_DONE: /* the round's error leaves the chain's stream here */
        *op = event_op(SIMDEV_BATCH_RECORD_HANDOFF, ch->aicpu_done);
        return ch->aicpu;
    case RT_CHAIN_CALLER_WAIT: /* the caller's later work waits for the round */
        *op = event_op(SIMDEV_BATCH_WAIT, ch->aicpu_done);
        return c->caller;
    case RT_CHAIN_SERIAL_TAIL:
    default:
        *op = event_op(SIMDEV_BATCH_RECORD, ch->serial_tail);
        return c->caller;
    }
}

/* Enqueues `op` on `stream` through the table's single-op entry. */
static int enqueue_one(const struct rt_launch_ops *ops, simdev_stream_t stream,
                       const struct simdev_batch_op *op)
{
    switch (op->kind) {
    case SIMDEV_BATCH_RECORD:
        return ops->record(op->event, stream);
    case SIMDEV_BATCH_RECORD_HANDOFF:
        return ops->record_handoff(op->event, stream);
    case SIMDEV_BATCH_WAIT:
        return ops->wait(stream, op->event);
    case SIMDEV_BATCH_SEM_ACQUIRE:
        return ops->gate_acquire(stream, op->sem);
    case SIMDEV_BATCH_SEM_RELEASE:
        return ops->gate_release(stream, op->sem);
    case SIMDEV_BATCH_MEMSET:
        return ops->memset_async(op->dev_ptr, op->value, op->bytes, stream);
    case SIMDEV_BATCH_COPY:
        return ops->memcpy_async(op->dev_ptr, op->src, op->bytes, op->copy_kind, stream);
    case SIMDEV_BATCH_AICPU:
    case SIMDEV_BATCH_AICPU_BRIEF: /* one op at a time: a plain launch */
    case SIMDEV_BATCH_AICPU_LEAD:
        return ops->launch_aicpu(stream, op->aicpu_fn, op->thread_count, op->args,
                                 op->args_size);
    case SIMDEV_BATCH_AICORE:
    case SIMDEV_BATCH_AICORE_ON_DEMAND: /* one op at a time: every core started */
        return ops->launch_aicore(stream, op->aicore_fn, op->args, op->args_size);
    default:
        return PTO_RUNTIME_ERR_INTERNAL;
    }
}

/*
 * Enqueues the ops of steps[0..count), which go on `stream` in this order:
 * 0, or the first failure's code with *enqueued its index (the steps
 * before it are enqueued, it and those after it are not). One batch
 * (ops->enqueue_batch) when the table has one, else step by step.
 */
static int enqueue_run(const struct chain_call *c, simdev_stream_t stream,
                       const struct simdev_batch_op *ops, size_t count, size_t *enqueued)
{
    if (c->ops->enqueue_batch)
        return c->ops->enqueue_batch(stream, ops, count, enqueued);
    int rc = 0;
    size_t done = 0;
    while (done < count && (rc = enqueue_one(c->ops, stream, &ops[done])) == 0)
        done++;
    *enqueued = done;
    return rc;
}

static int chain_enqueue(const struct rt_launch_ops *ops, const struct rt_launch_chain *chain,
                         simdev_stream_t caller, const struct rt_chain_round *round,
                         enum rt_chain_step *failed)
{
    const struct chain_call c = {ops, chain, caller, round};
    enum rt_chain_step steps[RT_CHAIN_STEPS];
    struct simdev_batch_op op[RT_CHAIN_STEPS];
    simdev_stream_t stream[RT_CHAIN_STEPS];
    size_t count = 0;
    for (enum rt_chain_step step = RT_CHAIN_START; step < RT_CHAIN_STEPS; step++) {
        if (!round_has(round, step))
            continue;
        steps[count] = step;
        stream[count] = step_op(&c, step, &op[count]);
        count++;
    }
    /* Runs of consecutive steps on one stream go as one batch; a step that
     * fails is tried again (with the rest of its run) while it has tries
     * left: once the program is enqueued the round will run, so the rest
     * of the chain is enqueued whatever it takes (commit_tries each). */
    size_t next = 0;
    int attempts = 0; /* of steps[next], so far */
    while (next < count) {
        size_t end = next + 1;
        while (end < count && stream[end] == stream[next])
            end++;
        size_t enqueued = 0;
        int rc = enqueue_run(&c, stream[next], &op[next], end - next, &enqueued);
        if (!rc) {
            next = end;
            attempts = 0;
            continue;
        }
        if (enqueued > 0)
            attempts = 0; /* a later step failed: its own first attempt */
        next += enqueued;
        enum rt_chain_step step = steps[next];
        if (++attempts < (step > RT_CHAIN_PROGRAM ? round->commit_tries : 1))
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

/*
 * A start_here round's ops start on this thread once all are enqueued
 * (the ops table's start_here_*): its first records, the round begin and the
 * program's hand-out run here instead of waking the caller's stream's
 * executor, and the AICPU program is handed out before the core loop
 * wakes the cores, though the core loop's batch is enqueued first (the
 * program is the commit point, above). Measured: docs/performance.md,
 * "Round latency". A step that fails leaves the steps before it
 * enqueued, and they start here as well.
 */
int rt_chain_enqueue(const struct rt_launch_ops *ops, const struct rt_launch_chain *chain,
                     simdev_stream_t caller, const struct rt_chain_round *round,
                     enum rt_chain_step *failed)
{
    bool here = round->start_here && ops->start_here_begin && ops->start_here_end;
    if (here)
        ops->start_here_begin();
    int rc = chain_enqueue(ops, chain, caller, round, failed);
    if (here)
        ops->start_here_end();
    return rc;
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
