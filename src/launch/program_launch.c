/*
 * runtime/launch.c — putting one run on a device stream (host side).
 *
 * Owns: rt_launcher (the AICPU stream, the AICore stream and the events
 * that join them to the caller's stream) and rt_run_enqueue, which checks a
 * run request and enqueues this chain:
 *   caller: record start
 *   AICPU stream: wait start, zero the rendezvous region (rendezvous.c),
 *                 record aicore_start
 *   AICore stream: wait aicore_start, launch the core loop, record
 *                  aicore_done
 *   AICPU stream: launch the AICPU program (orchestrator + schedulers; it
 *                 fails with the run's status, so the caller's stream
 *                 carries a failed run's code), wait aicore_done, record
 *                 aicpu_done
 *   caller: wait aicpu_done
 * Why this shape ends every round (docs/runtime.md, "The launch chain"):
 *   - the core loop starts only after the AICPU stream reached the point
 *     just before the AICPU program: if that stream carries an error, the
 *     core loop inherits it and is skipped along with the program;
 *   - if only one half runs (its partner's launch failed as it executed),
 *     the rendezvous (rendezvous.c) ends it within sched_timeout_ms;
 *   - a wait always waits (simdev), so aicpu_done comes after both halves
 *     ended even on a stream that carries an error, and the next round's
 *     halves never start before this round's ended;
 *   - aicore_done and aicpu_done are hand-off records: a round's error on
 *     a launcher stream goes into the round's events (and so to the
 *     caller's stream) and ends there, so the next round starts on clean
 *     launcher streams without anybody synchronising them.
 */
#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "launch/launch.h"
#include "runtime/entries.h"
#include "runtime/layout.h"

struct rt_launcher {
    simdev_stream_t aicpu;
    simdev_stream_t aicore;
    simdev_event_t start;
    simdev_event_t aicore_start;
    simdev_event_t aicore_done;
    simdev_event_t aicpu_done;
    uint64_t generation;
};

int rt_launcher_destroy(struct rt_launcher *l)
{
    if (!l)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    int rc = 0, r;
    if (l->aicpu_done && (r = simdev_event_destroy(l->aicpu_done)) && !rc)
        rc = r;
    if (l->aicore_done && (r = simdev_event_destroy(l->aicore_done)) && !rc)
        rc = r;
    if (l->aicore_start && (r = simdev_event_destroy(l->aicore_start)) && !rc)
        rc = r;
    if (l->start && (r = simdev_event_destroy(l->start)) && !rc)
        rc = r;
    if (l->aicore && (r = simdev_stream_destroy(l->aicore)) && !rc)
        rc = r;
    if (l->aicpu && (r = simdev_stream_destroy(l->aicpu)) && !rc)
        rc = r;
    free(l);
    return rc;
}

int rt_launcher_create(struct rt_launcher **out)
{
    if (!out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_launcher *l = sp_host_calloc(1, sizeof *l);
    if (!l)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    int rc;
    if ((rc = simdev_stream_create(&l->aicpu)) || (rc = simdev_stream_create(&l->aicore)) ||
        (rc = simdev_event_create(&l->start)) || (rc = simdev_event_create(&l->aicore_start)) ||
        (rc = simdev_event_create(&l->aicore_done)) ||
        (rc = simdev_event_create(&l->aicpu_done))) {
        rt_launcher_destroy(l);
        return rc;
    }
    /* Distinct per launcher and per run, so a run never mistakes arena
     * contents left by an earlier run for its own initialisation. */
    l->generation = simdev_clock_ns() << 16;
    *out = l;
    return 0;
}

static int check_request(const struct rt_run_request *rq, struct simdev_config *topo,
                         uint32_t *schedulers, struct rt_layout *layout)
{
    if (!rq->entry || !rq->args || !rq->arena || !rq->result ||
        rq->kernel_count > SIMPLER_MAX_FUNC_IDS || (rq->kernel_count && !rq->kernels))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    int rc = rt_config_check(&rq->config);
    if (rc)
        return rc;
    int device;
    if ((rc = simdev_get_device(&device)) || (rc = simdev_device_get_config(device, topo)))
        return rc;
    if ((rc = rt_layout_compute(&rq->config, topo->aic_cores + topo->aiv_cores, layout)))
        return rc;
    if (rq->arena_bytes < layout->total)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (topo->aicpu_threads < 2)
        return PTO_RUNTIME_ERR_UNSUPPORTED; /* one orchestrator + at least one scheduler */
    uint32_t n = rq->config.scheduler_threads ? rq->config.scheduler_threads
                                              : topo->aicpu_threads - 1;
    if (n + 1 > topo->aicpu_threads)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *schedulers = n;
    return 0;
}

uint64_t rt_launcher_generation(const struct rt_launcher *l)
{
    return l->generation;
}

/* Waits until `s` has drained even if a sync fails on the way (a failed
 * sync waits for nothing): nothing of a failed enqueue may outlive it. */
static void drain(simdev_stream_t s)
{
    /* On a lost device the query says DEVICE_LOST, which ends the loop. */
    while (simdev_stream_sync(s) != 0 && simdev_stream_query(s) == PTO_RUNTIME_ERR_NOT_READY)
        ;
}

int rt_run_enqueue(struct rt_launcher *l, simdev_stream_t stream,
                   const struct rt_run_request *request)
{
    if (!l || !stream || !request)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct simdev_config topo;
    struct rt_layout layout;
    struct rt_launch_args la;
    memset(&la, 0, sizeof la);
    int rc = check_request(request, &topo, &la.schedulers, &layout);
    if (rc)
        return rc;
    la.request = *request;
    la.generation = ++l->generation;

    if ((rc = simdev_event_record(l->start, stream)))
        return rc; /* nothing enqueued yet */
    if ((rc = simdev_stream_wait_event(l->aicpu, l->start)) ||
        (rc = simdev_memset_async((uint8_t *)request->arena + layout.rendezvous, 0,
                                  layout.rendezvous_bytes, l->aicpu)) ||
        (rc = simdev_event_record(l->aicore_start, l->aicpu)) ||
        (rc = simdev_stream_wait_event(l->aicore, l->aicore_start)) ||
        (rc = simdev_launch_aicore(l->aicore, rt_core_main, &la, sizeof la)))
        goto failed;
    if ((rc = simdev_event_record_handoff(l->aicore_done, l->aicore)) ||
        (rc = simdev_launch_aicpu(l->aicpu, rt_aicpu_main, la.schedulers + 1, &la, sizeof la))) {
        /* The core loop is enqueued, its program never will be: end its
         * round now rather than at the core loop's deadline. */
        simdev_launch_aicpu(l->aicpu, rt_round_cancel_main, 1, &la, sizeof la);
        goto failed;
    }
    if ((rc = simdev_stream_wait_event(l->aicpu, l->aicore_done)) ||
        (rc = simdev_event_record_handoff(l->aicpu_done, l->aicpu)) ||
        (rc = simdev_stream_wait_event(stream, l->aicpu_done)))
        goto failed;
    return 0;
failed:
    /* Part of the chain is on the launcher's streams: let it drain so
     * nothing of this run outlives the failed call, then report. */
    drain(l->aicpu);
    drain(l->aicore);
    return rc;
}
