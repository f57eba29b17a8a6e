/*
 * runtime/aicpu_program.c — the AICPU program of a round: one run on the
 * launch's AICPU threads.
 *
 * Owns: per-run initialisation of the arena (run init and reset, the
 * ready queues' reuse across runs), the entry that splits the launch's
 * threads into the orchestrator and the schedulers, and the result block
 * written when the last of them finishes. Must not decide what a config
 * allows (run_config.c) or where a region lies (layout.c).
 */
#include <string.h>

#include "platform/platform.h"
#include "runtime/aicpu_program.h"
#include "runtime/dispatch.h"
#include "runtime/entries.h"
#include "runtime/hbg_boot.h"
#include "runtime/layout.h"
#include "runtime/orchestrator.h"
#include "runtime/payload.h"
#include "runtime/ready_queue.h"
#include "runtime/rendezvous.h"
#include "runtime/ring.h"
#include "runtime/run.h"
#include "runtime/runtime.h"
#include "runtime/scheduler.h"
#include "runtime/step_token.h"
#include "runtime/task.h"
#include "runtime/tensormap.h"
#include "runtime/trace.h"
#include "runtime/wait.h"
#include "simpler/status.h"

void rt_choose_sync_owners(struct rt_run *run)
{
    for (uint32_t shape = 0; shape < RT_SHAPES; shape++) {
        run->sync_owner[shape] = 0;
        run->sync_units[shape] = 0;
        for (uint32_t t = 0; t < run->schedulers; t++) {
            uint32_t n = 0;
            if (shape == RT_SHAPE_MIX) {
                for (uint32_t c = 0; c < run->cluster_count; c++)
                    n += rt_core_owner(run->aic_count, run->cluster_count, run->schedulers, c) == t;
            } else if (shape != RT_SHAPE_DUMMY) {
                uint32_t first = shape == RT_SHAPE_AIC ? 0 : run->aic_count;
                uint32_t count = shape == RT_SHAPE_AIC ? run->aic_count : run->aiv_count;
                for (uint32_t c = first; c < first + count; c++)
                    n += rt_core_owner(run->aic_count, run->cluster_count, run->schedulers, c) == t;
            }
            if (n > run->sync_units[shape]) {
                run->sync_units[shape] = n;
                run->sync_owner[shape] = t;
            }
        }
    }
}

/*
 * True when the ready queues can be taken as the last run on this arena
 * left them: that run ended clean with every queue empty (it wrote
 * rq_token; end_queues) and this arena is the one it ran on (the same
 * nonzero nonce: an arena's nonce is never another's, so neither a stale
 * mark in recycled memory nor fresh garbage passes unless it equals a
 * value drawn for this arena), and every queue lies where it did, with
 * the same capacity (the layout puts each region apart from the others).
 */
static bool queues_reusable(const struct rt_run *run, uint64_t nonce, const uint8_t *base,
                            const struct rt_layout *l)
{
    if (nonce == 0 || run->rq_token != nonce)
        return false;
    for (uint32_t k = 0; k < RT_SHAPES; k++)
        if (!rt_rq_idle_over(&run->ready[k], (const struct rt_rq_cell *)(base + l->rq_cells[k]),
                             l->rq_capacity) ||
            !rt_rq_idle_over(&run->sync_ready[k],
                             (const struct rt_rq_cell *)(base + l->sync_rq_cells[k]),
                             l->rq_capacity))
            return false;
    return true;
}

/* At the run's end (its last AICPU thread): a clean run whose queues are
 * all empty marks them reusable by the arena's next run. Every task has
 * completed, so nothing pushes any more, and a pop of an empty queue
 * changes nothing. */
static void end_queues(struct rt_run *run, uint64_t nonce)
{
    if (rt_error(run))
        return;
    for (uint32_t k = 0; k < RT_SHAPES; k++)
        if (!rt_rq_idle_over(&run->ready[k], run->ready[k].cells, run->ready[k].mask + 1) ||
            !rt_rq_idle_over(&run->sync_ready[k], run->sync_ready[k].cells,
                             run->sync_ready[k].mask + 1))
            return;
    run->rq_token = nonce;
}

/*
 * Lays the run's TensorMap out, or takes the one the arena's last run left
 * and empties it in O(1) (rt_tensormap_reuse: a new epoch, instead of
 * writing 4096 buckets of 64 bytes at the default config). The same rule
 * as the ready queues': the mark must equal this arena's nonzero nonce, so
 * fresh garbage or recycled memory never passes, and the map must lie
 * where it did with the same sizes. Unlike theirs, the mark does not need
 * a clean end: only the orchestrator thread writes the map, and whatever
 * it left, every bucket names an epoch at or below the map's, which is all
 * a reset relies on. The caller cleared the mark before writing anything
 * (another layout's regions may lie over the old map); it is set again
 * once the map is laid out.
 */
static int tensormap_open(struct rt_run *run, uint64_t nonce, bool marked, uint8_t *mem,
                          const struct rt_config *config)
{
    if (!(marked && rt_tensormap_reuse(&run->tensormap, mem, config->tensormap_buckets,
                                       config->tensormap_entries) == 0) &&
        rt_tensormap_init(&run->tensormap, mem, config->tensormap_buckets,
                          config->tensormap_entries) != 0)
        return -1;
    run->tm_token = nonce;
    return 0;
}

/* Lays the run out in the arena and resets everything a run reads. Runs on
 * the orchestrator thread before the schedulers are released. */
static int32_t run_init(struct rt_run *run, const struct rt_launch_args *la, int device)
{
    const struct rt_run_request *rq = &la->request;
    bool tensormap_marked = rq->arena_nonce != 0 && run->tm_token == rq->arena_nonce;
    run->tm_token = 0; /* until the TensorMap is laid out below */
    struct platform_topology topo;
    struct rt_layout l;
    if (platform_topology(device, &topo) != 0 ||
        rt_layout_compute(&rq->config, topo.aic_cores + topo.aiv_cores, &l) != 0 ||
        l.total > rq->arena_bytes)
        return SIMPLER_ORCH_ERR_BAD_CONFIG;
    uint8_t *base = (uint8_t *)run;
    run->config = rq->config;
    run->device = device;
    run->aic_count = topo.aic_cores;
    run->aiv_count = topo.aiv_cores;
    run->cluster_count = topo.aic_cores < topo.aiv_cores / 2 ? topo.aic_cores : topo.aiv_cores / 2;
    run->core_count = topo.aic_cores + topo.aiv_cores;
    for (uint32_t c = 0; c < run->core_count; c++)
        run->core_regs[c] = platform_core_regs(device, c);
    run->schedulers = la->schedulers;
    run->generation = la->generation;
    run->kernels = rq->kernels;
    run->kernel_count = rq->kernel_count;
    run->dispatch = (struct rt_dispatch *)(base + l.dispatch);
    run->rendezvous = (struct rt_rendezvous *)(base + l.rendezvous);
    run->scheds = (struct rt_sched *)(base + l.scheds);
    rt_scheds_init(run);
    for (uint32_t i = 0; i < RT_RINGS; i++)
        rt_ring_init(&run->rings[i], &rq->config, i, base, &l);
    bool reuse = queues_reusable(run, rq->arena_nonce, base, &l);
    run->rq_token = 0; /* until this run ends clean */
    for (uint32_t k = 0; k < RT_SHAPES && !reuse; k++) {
        rt_rq_init(&run->ready[k], (struct rt_rq_cell *)(base + l.rq_cells[k]), l.rq_capacity);
        rt_rq_init(&run->sync_ready[k], (struct rt_rq_cell *)(base + l.sync_rq_cells[k]),
                   l.rq_capacity);
    }
    rt_choose_sync_owners(run);
    run->scope_tasks = (struct rt_slot **)(base + l.scope_tasks);
    run->scope_task_capacity = l.scope_task_capacity;
    run->fanin_scratch = NULL;
    run->fanin_sources = NULL;
    run->hbg = NULL;
    run->hbg_producers = NULL;
    /* No orchestrator: the arena has no fan-in scratch or TensorMap
     * (layout.h), and nothing here may touch where they would lie. */
    if (rq->config.runtime == RT_RUNTIME_HBG)
        return rt_hbg_boot(run, la, base + l.hbg_image, l.hbg_image_bytes);
    run->fanin_scratch = (struct rt_slot **)(base + l.fanin_scratch);
    run->fanin_sources = (uint32_t *)(run->fanin_scratch + rq->config.max_fanin);
    if (tensormap_open(run, rq->arena_nonce, tensormap_marked, base + l.tensormap,
                       &rq->config) != 0)
        return SIMPLER_ORCH_ERR_BAD_CONFIG;
    rt_orchestrator_init(run);
    return 0;
}

static void run_reset_shared(struct rt_run *run)
{
    atomic_init(&run->error, 0);
    atomic_init(&run->stall_class, RT_STALL_NONE);
    atomic_init(&run->tasks_completed, 0);
    atomic_init(&run->subtasks_dispatched, 0);
    atomic_init(&run->cores_running, 0);
    atomic_init(&run->cores_coming[0], 0);
    atomic_init(&run->cores_coming[1], 0);
    /* here, not only in the orchestrator's init: HBG's boot has none, and
     * the watcher of either runtime looks at it */
    atomic_init(&run->core_owed, 0);
    atomic_init(&run->core_owed_ns, 0);
    atomic_init(&run->tasks_submitted, 0);
    atomic_init(&run->orch_done, 0);
    atomic_init(&run->orch_waiting, 0);
    atomic_init(&run->orch_wait_target, 0);
    atomic_init(&run->threads_finished, 0);
    for (uint32_t c = 0; c < SIMDEV_MAX_CORES; c++)
        atomic_init(&run->core_pulling[c], 0);
}

/* Writes the result block; returns the run's status (0, or a negated code). */
static int32_t write_run_result(struct rt_run *run, struct rt_run_result *result,
                            uint64_t generation)
{
    struct rt_run_result r;
    memset(&r, 0, sizeof r);
    r.status = -rt_error(run);
    r.stall_class = r.status == -SIMPLER_SCHED_ERR_TIMEOUT
                        ? atomic_load_explicit(&run->stall_class, memory_order_relaxed)
                        : RT_STALL_NONE;
    r.tasks_submitted = atomic_load_explicit(&run->tasks_submitted, memory_order_acquire);
    r.tasks_completed = atomic_load_explicit(&run->tasks_completed, memory_order_acquire);
    r.edges = run->edges;
    r.edges_logged = run->edges < run->config.edge_log_capacity ? run->edges
                                                                : run->config.edge_log_capacity;
    r.ring_waits = run->ring_waits;
    r.subtasks_dispatched = atomic_load_explicit(&run->subtasks_dispatched, memory_order_relaxed);
    r.tensormap_live_peak = run->tensormap_live_peak;
    r.generation = generation;
    *result = r;
    return r.status;
}

/* The cores that share the orchestrator's CPU (placement, simdev), which
 * have not arrived in the round yet. */
struct mates_wait {
    struct rt_run *run;
    uint32_t count;
    uint32_t core[SIMDEV_MAX_CORES];
};

static bool mates_settled(void *arg)
{
    struct mates_wait *w = arg;
    if (rt_error(w->run))
        return true;
    for (uint32_t i = 0; i < w->count; i++)
        if (!rt_rendezvous_core_settled(&w->run->rendezvous[w->core[i]], w->run->generation))
            return false;
    return true;
}

/*
 * Before its first submit, the orchestrator sleeps until every core that
 * shares its CPU (one that gives way to this thread while it is awake:
 * an orchestrator without the place waits for none) has arrived in the
 * round. Such a core cannot arrive while the orchestrator runs:
 * measured, the orchestrator submitted for 1-5 ms, one time slice, before
 * the kernel let the core run, and wide work (SPMD, clusters, sync-start)
 * waits for every core to join (dispatch.c). A core that has arrived
 * gives way again at once (its doorbell wait parks). Who ends the wait:
 * the core's hello (a condition write, after its arrival), a latched
 * error, or this wait's own deadline, the same sched_timeout_ms.
 */
void rt_let_mates_arrive(struct rt_run *run)
{
    struct mates_wait w = {.run = run};
    for (uint32_t c = 0; c < run->core_count; c++) {
        if (platform_hint_core_shares_my_cpu(run->core_regs[c])) {
            /* Started now, whatever the round needs of it: the round's
             * cores start on demand (dispatch.c), and one that starts
             * once this thread submits cannot run. */
            platform_core_start(run->core_regs[c]);
            w.core[w.count++] = c;
        }
    }
    if (mates_settled(&w))
        return;
    uint64_t deadline = platform_clock_ns() + (uint64_t)run->config.sched_timeout_ms * 1000000ull;
    (void)rt_wait_until(run->device, RT_WAIT_COND, mates_settled, &w, &deadline);
}

struct init_wait {
    struct rt_run *run;
    uint64_t generation;
};

static bool run_initialised(void *arg)
{
    struct init_wait *w = arg;
    /* acquire: pairs with the release of init_generation in rt_aicpu_round */
    return atomic_load_explicit(&w->run->init_generation, memory_order_acquire) == w->generation;
}

/* Waits for the orchestrator to publish this run's initialisation. Ended
 * by the orchestrator's store of init_generation and its rt_signal; when
 * the orchestrator ran the schedulers' prologues it does not signal (this
 * thread has nothing to do before the run's end), and any later rt_signal
 * of the run, or the deadline, ends the wait, which then finds the run
 * initialised; an orchestrator that never comes by sched_timeout_ms
 * (TIMEOUT), or a lost device. */
static int wait_init(struct rt_run *run, const struct rt_launch_args *la, int device,
                     uint32_t index)
{
    uint64_t deadline =
        platform_clock_ns() + (uint64_t)la->request.config.sched_timeout_ms * 1000000ull;
    struct init_wait w = {run, la->generation};
    /* On the schedulers' channel, which only rt_signal moves: a wait on
     * the condition sequence is ended by every core's condition write too,
     * and this wait may last the whole run (above). The watcher of a TMR
     * run waits awake, as it does for the run's end (watchdog.c): this
     * wait is the first part of that one. */
    bool watcher = index == RT_WATCHER && la->request.config.runtime != RT_RUNTIME_HBG;
    int rc = watcher ? rt_wait_until_spinning(device, RT_NOTIFY_SCHED, run_initialised, &w,
                                              &deadline)
                     : rt_wait_until(device, RT_NOTIFY_SCHED, run_initialised, &w, &deadline);
    /* Initialised, whatever ended the wait (a device lost later in the
     * run): the run's own end and failures are the watch's to see. */
    return rc && run_initialised(&w) ? 0 : rc;
}

/* Whether the core launch of `fn` with these argument bytes is the core
 * loop of the round of `arg` (its rt_launch_args): the same arena and
 * round generation, in either mode's core arguments. */
static int round_core_launch(simdev_aicore_fn fn, const void *args, size_t size, void *arg)
{
    const struct rt_launch_args *la = arg;
    struct rt_launch_args of;
    if (fn == rt_core_main && size == sizeof of) {
        memcpy(&of, args, sizeof of);
    } else if (fn == rt_kernel_mode_core_fn && size == sizeof(struct rt_kernel_mode_core_args)) {
        struct rt_kernel_mode_core_args ca;
        memcpy(&ca, args, sizeof ca);
        of = ca.la;
    } else {
        return 0;
    }
    return of.request.arena == la->request.arena && of.generation == la->generation;
}

int32_t rt_aicpu_round(const struct simdev_aicpu_ctx *ctx, const struct rt_launch_args *la,
                       int32_t rejected)
{
    struct rt_run *run = la->request.arena;
    uint32_t orchestrator = ctx->thread_count - 1;
    /* host_build_graph: the graph came built; the last thread boots it
     * (run_init, rt_hbg_boot) and then schedules like every other. */
    bool hbg = la->request.config.runtime == RT_RUNTIME_HBG;
    rt_trace_aicpu_begin(&la->request.config, la->generation, ctx->thread_index, ctx->thread_count);

    if (ctx->thread_index == orchestrator) {
        /* The last round in this arena (any at all: only a guess, below)
         * submitted at most one task. */
        bool lone_before = atomic_load_explicit(&run->tasks_submitted, memory_order_relaxed) <= 1;
        run_reset_shared(run);
        int32_t code = run_init(run, la, ctx->device);
        if (!code)
            code = rejected;
        if (code)
            rt_fail(run, code);
        if (code) /* before the schedulers may look (init_generation) */
            atomic_store_explicit(&run->orch_done, 1, memory_order_seq_cst);
        /* A TMR run's schedulers open here, before the first submit: the
         * first task goes to a core at once, whenever (and on whichever
         * CPU) the schedulers' threads begin. Measured, a one-task round:
         * the scheduler's thread, woken with this one, began 10-25 us
         * after it, and the task waited for its handshake; or it began
         * first and slept until this thread's signal, a wake-up system
         * call on the way to the submit. */
        run->prologued = !code && !hbg;
        for (uint32_t t = 0; run->prologued && t < run->schedulers; t++)
            run->sched_next[t] = (uint8_t)rt_sched_prologue(run, t);
        /* release: every initialised field above before the schedulers'
         * acquire in wait_init */
        atomic_store_explicit(&run->init_generation, la->generation, memory_order_release);
        /* A scheduler's thread waits for the run's initialisation only
         * when it has its prologue to run, or to leave (a scheduler but
         * the watcher, whose thread has nothing else to do). The watcher
         * has nothing to do before the run's end, whose signals (the last
         * completion, a failure) or its wait's deadline end its
         * wait_init: the default launch (one scheduler) needs no wake-up
         * now. */
        if (!run->prologued || run->schedulers > 1)
            rt_signal(run);
        if (hbg) {
            /* Every thread of a host build schedules from the start (its
             * launch is a plain one, chain.c; were it a lead launch, here
             * its others would start). */
            platform_aicpu_start_others();
            if (!code) {
                /* The tasks are laid as the others run them, as a TMR
                 * orchestrator submits (rt_hbg_lay ends orch_done). */
                rt_let_mates_arrive(run);
                rt_hbg_lay(run);
            }
            rt_schedule(run, ctx->thread_index);
        } else if (!code) {
            /* After a round of one task in this arena, before this one's
             * second submit, not its first: a one-task orchestration runs
             * its task's core itself (below) and waits for no core
             * (orchestrator.c, rt_orch_goes_on). After a larger round,
             * before the first: a core that arrives after the first task
             * took it, and a chain then shared this thread's CPU
             * (measured: docs/performance.md, "The orchestrator runs a
             * lone task's core"). */
            run->mates_due = lone_before;
            /* The launch started this thread alone (the chain's program
             * op, SIMDEV_BATCH_AICPU_LEAD): a one-task orchestration runs
             * its task's core, then the watcher's part, here, with no
             * wake-up; a larger one starts the schedulers at its second
             * submit, or at any wait before (rt_orch_goes_on). Measured:
             * docs/performance.md, "The schedulers started on demand". */
            run->others_held = run->schedulers > 0;
            /* Beside the orchestrator, while it submits, only where one
             * core still has a CPU: with the budget taken by the
             * orchestrator and the schedulers, every core gives way
             * (docs/device.md, section 9) and each dispatch wakes one for
             * a task or two (measured: 4.6-7 wake-ups a round of 100
             * short tasks; docs/performance.md, "The schedulers wait for
             * a CPU"). Otherwise at the orchestrator's first wait, the
             * hold timer below, or its return. */
            run->schedulers_at_submit =
                run->others_held && platform_hint_budget_cpus() >= run->schedulers + 2u;
            /* their owner while the orchestration runs user code
             * (dispatch.h, RT_SCHEDULERS_DUE_NS) */
            if (run->others_held)
                platform_aicpu_start_others_after(RT_SCHEDULERS_DUE_NS);
            if (!lone_before)
                rt_let_mates_arrive(run);
            uint64_t trace_begin = RT_TRACE_CLOCK(run->config.trace_level >= 4);
            rt_orchestrate(run, la->request.entry, la->request.args);
            if (run->config.trace_level >= 4)
                rt_trace_orch(run, trace_begin);
            /* This thread has nothing else to do until the run ends: the
             * core a lone task owes runs here (dispatch.h, "owed"). */
            rt_run_owed_core_here(run, round_core_launch, (void *)la);
        }
    } else {
        int rc = wait_init(run, la, ctx->device, ctx->thread_index);
        if (rc) {
            /* The orchestrator never initialised the run: no result block
             * is written, but this thread's cores must still be told to
             * end. */
            rt_exit_cores_uninitialised(la, ctx->device, ctx->thread_index);
            return PTO_RUNTIME_ERR_INTERNAL; /* the run never reported */
        }
        if (run->prologued)
            rt_schedule_after(run, ctx->thread_index,
                              (enum rt_sched_next)run->sched_next[ctx->thread_index]);
        else
            rt_schedule(run, ctx->thread_index);
    }

    /* acq_rel: the last thread out sees every other thread's final writes */
    if (atomic_fetch_add_explicit(&run->threads_finished, 1, memory_order_acq_rel) + 1 !=
        ctx->thread_count)
        return 0;
    end_queues(run, la->request.arena_nonce);
    int32_t status = write_run_result(run, la->request.result, la->generation);
    /* Every scheduler has left the round of every core loop that did not
     * join (rt_schedule's exit), so the blocks of the core launch that
     * were never started (dispatch.c, start_cores) return at once: run
     * them here, without a wake-up, rather than have this job's end start
     * their threads (simdev's owner of them). */
    platform_cores_run_unstarted(ctx->device, round_core_launch, (void *)la);
    return status;
}

int rt_aicpu_main(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    struct rt_launch_args la;
    if (args_size != sizeof la)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&la, args, sizeof la);
    return rt_aicpu_round(ctx, &la, 0);
}
