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

#include "runtime/rt.h"

const struct rt_kernel_launch_ops rt_kernel_simdev_ops = {
    .record = simdev_event_record,
    .record_handoff = simdev_event_record_handoff,
    .wait = simdev_stream_wait_event,
    .launch_aicpu = simdev_launch_aicpu,
    .launch_aicore = simdev_launch_aicore,
};

int rt_kernel_launch(const struct rt_kernel_launch_ops *ops, const struct rt_kernel_chain *chain,
                     simdev_stream_t caller, const struct rt_kernel_target *target,
                     const struct rt_config *config, uint64_t round_generation,
                     const void *packet, size_t packet_bytes)
{
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

    int rc;
    if ((rc = ops->record(chain->start, caller)))
        return rc; /* nothing enqueued yet */
    /* From here on, what is enqueued runs and ends by itself if a later
     * enqueue fails: a core loop without its program is cancelled below,
     * or leaves the round rendezvous at its deadline (round.c); the status
     * op only reads. */
    if ((rc = ops->wait(chain->aicpu, chain->start)) ||
        (rc = ops->launch_aicpu(chain->aicpu, rt_kernel_round_begin_fn, 1, &begin, sizeof begin)) ||
        (rc = ops->record(chain->aicore_start, chain->aicpu)) ||
        (rc = ops->wait(chain->aicore, chain->aicore_start)) ||
        (rc = ops->launch_aicore(chain->aicore, rt_kernel_core_fn, &core, sizeof core)))
        return rc;
    bool done_recorded = (rc = ops->record_handoff(chain->aicore_done, chain->aicore)) == 0;
    if (!done_recorded || (rc = ops->launch_aicpu(chain->aicpu, rt_kernel_program_fn,
                                                  target->schedulers + 1, program,
                                                  sizeof env + packet_bytes))) {
        /* The core loop is enqueued and its program never will be: end its
         * round now, and keep the next round's AICPU half behind this core
         * loop's end, as the whole chain would have. If these enqueues fail
         * too, the core loop still leaves at its deadline. */
        ops->launch_aicpu(chain->aicpu, rt_round_cancel_main, 1, &core.la, sizeof core.la);
        if (!done_recorded)
            done_recorded = ops->record_handoff(chain->aicore_done, chain->aicore) == 0;
        if (done_recorded)
            ops->wait(chain->aicpu, chain->aicore_done);
        return rc;
    }
    if ((rc = ops->wait(chain->aicpu, chain->aicore_done)) ||
        (rc = ops->launch_aicpu(chain->aicpu, rt_kernel_status_fn, 1, &status, sizeof status)) ||
        (rc = ops->record_handoff(chain->aicpu_done, chain->aicpu)) ||
        (rc = ops->wait(caller, chain->aicpu_done)) ||
        (rc = ops->record(chain->serial_tail, caller)))
        return rc;
    return 0;
}
