/*
 * launch/program_launch.c — putting one run on a device stream (host side).
 *
 * Owns: rt_launcher (the launch chain's streams and events for program
 * mode: no gate, no serial tail) and rt_run_enqueue, program mode's caller
 * of the launch chain (chain.c): it checks a run request and enqueues one
 * round of this chain:
 *   caller: record start
 *   AICPU stream: wait start, zero the rendezvous region (runtime/rendezvous.c),
 *                 record aicore_start
 *   AICore stream: wait aicore_start, launch the core loop, record
 *                  aicore_done
 *   AICPU stream: launch the AICPU program (orchestrator + schedulers; it
 *                 fails with the run's status, so the caller's stream
 *                 carries a failed run's code), wait aicore_done, record
 *                 aicpu_done
 *   caller: wait aicpu_done
 * Why this shape ends every round: chain.c. Program mode's failure policy:
 * a step that cannot be enqueued ends the call, and whatever part of the
 * chain is on the launcher's streams is drained before it returns.
 */
#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "launch/chain.h"
#include "runtime/entries.h"
#include "runtime/hbg.h"
#include "runtime/layout.h"

struct rt_launcher {
    struct rt_launch_chain chain; /* gate and serial_tail NULL: a run holds no gate */
    uint64_t generation;
    /* host_build_graph: the host build's scratch (runtime/hbg.h), grown to
     * the largest run's need; calloc'd, so the pages a build never touches
     * (the host arena's heaps) are never backed. */
    void *hbg_raw;
    uint8_t *hbg_scratch;
    size_t hbg_scratch_bytes;
};

int rt_launcher_destroy(struct rt_launcher *l)
{
    if (!l)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_launch_chain *c = &l->chain;
    int rc = 0, r;
    if (c->aicpu_done && (r = simdev_event_destroy(c->aicpu_done)) && !rc)
        rc = r;
    if (c->aicore_done && (r = simdev_event_destroy(c->aicore_done)) && !rc)
        rc = r;
    if (c->aicore_start && (r = simdev_event_destroy(c->aicore_start)) && !rc)
        rc = r;
    if (c->start && (r = simdev_event_destroy(c->start)) && !rc)
        rc = r;
    if (c->aicore && (r = simdev_stream_destroy(c->aicore)) && !rc)
        rc = r;
    if (c->aicpu && (r = simdev_stream_destroy(c->aicpu)) && !rc)
        rc = r;
    free(l->hbg_raw);
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
    struct rt_launch_chain *c = &l->chain;
    int rc;
    if ((rc = simdev_stream_create(&c->aicpu)) || (rc = simdev_stream_create(&c->aicore)) ||
        (rc = simdev_event_create(&c->start)) || (rc = simdev_event_create(&c->aicore_start)) ||
        (rc = simdev_event_create(&c->aicore_done)) ||
        (rc = simdev_event_create(&c->aicpu_done))) {
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
    bool hbg = rq->config.runtime == RT_RUNTIME_HBG;
    if (!rq->entry || !rq->args || !rq->arena || !rq->result || hbg != (rq->hbg != NULL) ||
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
    /* An image built before: it must be one, and fit the bank and the
     * arena's image region it is copied from and to. */
    if (hbg && rq->hbg->image_bytes &&
        (rq->hbg->image_bytes < sizeof(struct rt_hbg_header) || !rq->hbg->bank ||
         rq->hbg->image_bytes > rq->hbg->bank_bytes ||
         rq->hbg->image_bytes > layout->hbg_image_bytes))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (topo->aicpu_threads < 2)
        return PTO_RUNTIME_ERR_UNSUPPORTED; /* one orchestrator + at least one scheduler */
    uint32_t n = rq->config.scheduler_threads ? rq->config.scheduler_threads
                                              : topo->aicpu_threads - 1;
    if (n + 1 > topo->aicpu_threads)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    /* host_build_graph: no orchestrator, the same threads all schedule */
    *schedulers = rt_run_schedulers(rq->config.runtime, n);
    return 0;
}

uint64_t rt_launcher_generation(const struct rt_launcher *l)
{
    return l->generation;
}

/* What a run puts on the chain: the rendezvous region zeroed before it,
 * no round begin and no status op (the program's own launch fails with
 * the run's status), no gate, no serial tail, no retries. */
static struct rt_chain_round program_round(const struct rt_launch_args *la,
                                           const struct rt_layout *layout)
{
    bool hbg = la->request.config.runtime == RT_RUNTIME_HBG;
    return (struct rt_chain_round){
        .rendezvous = (uint8_t *)la->request.arena + layout->rendezvous,
        .rendezvous_bytes = layout->rendezvous_bytes,
        .core = {rt_core_main, la, sizeof *la},
        .program = {rt_aicpu_main, hbg ? la->schedulers : la->schedulers + 1, la, sizeof *la},
        .cancel_fn = rt_round_cancel_main,
        .commit_tries = 1,
        /* TMR: the launching thread runs the chain's first ops (the
         * run's start record, and while the device is idle the rendezvous
         * zeroing, the records and the program's hand-out) instead of
         * waking the run stream's executor to run them (chain.c). Measured:
         * docs/performance.md, "The orchestrator runs a lone task's
         * core". HBG's image copy stays off the launching thread, whose
         * CPU is its host build's figure. */
        .start_here = !hbg,
    };
}

/* The host arena at the scratch's start holds cache-line aligned state. */
#define HBG_SCRATCH_ALIGN 64u

/* The launcher's scratch, at least `bytes` long and cache-line aligned.
 * OUT_OF_HOST_MEMORY, keeping the old one. */
static int hbg_scratch(struct rt_launcher *l, size_t bytes)
{
    if (l->hbg_scratch_bytes >= bytes)
        return 0;
    if (bytes > SIZE_MAX - HBG_SCRATCH_ALIGN)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    void *raw = sp_host_calloc(1, bytes + HBG_SCRATCH_ALIGN);
    if (!raw)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    free(l->hbg_raw);
    l->hbg_raw = raw;
    uintptr_t at = ((uintptr_t)raw + HBG_SCRATCH_ALIGN - 1) & ~(uintptr_t)(HBG_SCRATCH_ALIGN - 1);
    l->hbg_scratch = (uint8_t *)at;
    l->hbg_scratch_bytes = bytes;
    return 0;
}

int rt_launcher_hbg_reserve(struct rt_launcher *l, const struct rt_config *config,
                            const struct simdev_config *topo)
{
    if (!l || !config || !topo)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    uint32_t cores = topo->aic_cores + topo->aiv_cores;
    size_t need = rt_hbg_scratch_bytes(config, cores);
    if (!need)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    int rc = hbg_scratch(l, need);
    if (!rc)
        rt_hbg_scratch_warm(l->hbg_scratch, config, cores);
    return rc;
}

/* host_build_graph: runs the orchestration of `request` here, into its
 * bank; *bytes: the image's size. */
static int hbg_build(struct rt_launcher *l, const struct rt_run_request *request,
                     const struct simdev_config *topo, const struct rt_launch_args *la,
                     size_t *bytes)
{
    uint32_t cores = topo->aic_cores + topo->aiv_cores;
    size_t need = rt_hbg_scratch_bytes(&request->config, cores);
    if (!need || request->hbg->bank_bytes < rt_hbg_image_bound(&request->config))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    int rc = hbg_scratch(l, need);
    if (rc)
        return rc;
    struct rt_hbg_host host = *request->hbg;
    host.scratch = l->hbg_scratch;
    host.scratch_bytes = l->hbg_scratch_bytes;
    struct rt_run_request rq = *request;
    rq.hbg = &host;
    uint64_t begin = simdev_clock_ns();
    *bytes = rt_hbg_build(&rq, topo->aic_cores, topo->aiv_cores, la->schedulers, la->generation);
    if (!*bytes)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_hbg_header built;
    memcpy(&built, host.bank, sizeof built);
    request->hbg->built_begin_ns = begin;
    request->hbg->built_end_ns = simdev_clock_ns();
    request->hbg->built_tasks = built.task_count;
    return 0;
}

/* What a launch and a build of `request` start from: the request checked,
 * the device's topology, the arena's layout and launch args with only the
 * scheduler count set. */
struct launch_plan {
    struct simdev_config topo;
    struct rt_layout layout;
    struct rt_launch_args la;
};

static int plan_launch(const struct rt_run_request *request, struct launch_plan *p)
{
    memset(&p->la, 0, sizeof p->la);
    return check_request(request, &p->topo, &p->la.schedulers, &p->layout);
}

int rt_run_build(struct rt_launcher *l, const struct rt_run_request *request)
{
    if (!l || !request || !request->hbg || request->hbg->image_bytes)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct launch_plan p;
    size_t bytes;
    int rc;
    /* The run's generation is not minted yet: rt_run_enqueue stamps it. */
    if ((rc = plan_launch(request, &p)) || (rc = hbg_build(l, request, &p.topo, &p.la, &bytes)))
        return rc;
    request->hbg->image_bytes = bytes;
    return 0;
}

/* rt_run_enqueue through `ops`. */
static int run_enqueue(const struct rt_launch_ops *ops, struct rt_launcher *l,
                       simdev_stream_t stream, const struct rt_run_request *request)
{
    if (!l || !stream || !request)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct launch_plan p;
    int rc = plan_launch(request, &p);
    if (rc)
        return rc;
    struct rt_launch_args *la = &p.la;
    la->request = *request;
    la->request.hbg = NULL; /* host memory: the device never sees it */
    la->generation = ++l->generation;
    struct rt_chain_round round = program_round(la, &p.layout);
    if (request->hbg) {
        /* host_build_graph: the orchestration runs here, now; its graph
         * goes in by one copy ahead of the round (chain.c) */
        round.image.bytes = request->hbg->image_bytes;
        if (round.image.bytes) /* built before, or a kept image: this run's now */
            rt_hbg_image_stamp(request->hbg->bank, la->generation);
        else if ((rc = hbg_build(l, request, &p.topo, la, &round.image.bytes)))
            return rc;
        round.image.dst = (uint8_t *)request->arena + p.layout.hbg_image;
        round.image.src = request->hbg->bank;
    }
    enum rt_chain_step failed;
    rc = rt_chain_enqueue(ops, &l->chain, stream, &round, &failed);
    if (!rc || failed == RT_CHAIN_START)
        return rc; /* enqueued, or nothing enqueued yet */
    /* Part of the chain is on the launcher's streams: let it drain so
     * nothing of this run outlives the failed call, then report. */
    rt_stream_drain(l->chain.aicpu);
    rt_stream_drain(l->chain.aicore);
    return rc;
}

int rt_run_enqueue(struct rt_launcher *l, simdev_stream_t stream,
                   const struct rt_run_request *request)
{
    return run_enqueue(&rt_launch_simdev_ops, l, stream, request);
}
