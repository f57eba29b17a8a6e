/*
 * runtime/scheduler.c — a scheduler thread: ready tasks onto its cores.
 *
 * Owns: the AICPU side of the core register protocol for the cores this
 * thread owns (handshake, dispatch with a running and a pending slot per
 * core, completion polling, exit), SPMD block claiming and waves, sync-start
 * placement, dummy tasks, the no-progress watchdog with its stall class.
 * Its per-core state is private to the thread (on its stack). Task
 * completion itself is task.c's.
 */
#include <string.h>

#include "runtime/rt.h"

#define NO_CLUSTER UINT32_MAX

struct core_task {
    struct rt_slot *slot; /* NULL = empty */
    uint64_t reg;         /* dispatch id */
};

struct sched_core {
    uint32_t id;
    uint32_t type;    /* enum simdev_core_type */
    uint32_t cluster; /* NO_CLUSTER when not part of one */
    struct simdev_core_regs *regs;
    uint64_t next_reg;
    struct core_task running;
    struct core_task pending; /* rung while running was executing */
    bool running_acked;
    bool joined;  /* in this round with its core loop (round.c): may ring it */
    bool waiting; /* arrived first, the core loop not yet */
};

struct sched {
    struct rt_run *run;
    uint32_t index;
    uint32_t core_count;
    struct sched_core cores[SIMDEV_MAX_CORES];
    uint32_t cluster_count;
    uint32_t clusters[SIMDEV_MAX_CORES][3]; /* indices into cores: AIC, AIV0, AIV1 */
    struct rt_slot *held[RT_SHAPES];        /* a sync-start task waiting for room */
    uint64_t dispatched;
};

/* ------------------------------------------------------------ ownership */

static void sched_init(struct sched *S, struct rt_run *run, uint32_t index)
{
    memset(S, 0, sizeof *S);
    S->run = run;
    S->index = index;
    uint32_t slot_of_core[SIMDEV_MAX_CORES];
    for (uint32_t id = 0; id < run->core_count; id++) {
        slot_of_core[id] = UINT32_MAX;
        if (rt_core_owner(run->aic_count, run->cluster_count, run->schedulers, id) != index)
            continue;
        struct sched_core *c = &S->cores[S->core_count];
        c->id = id;
        c->type = id < run->aic_count ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV;
        c->cluster = NO_CLUSTER;
        c->regs = simdev_core_regs_get(run->device, id);
        slot_of_core[id] = S->core_count++;
    }
    for (uint32_t k = 0; k < run->cluster_count; k++) {
        uint32_t aic = k, aiv0 = run->aic_count + 2 * k, aiv1 = aiv0 + 1;
        if (slot_of_core[aic] == UINT32_MAX)
            continue;
        uint32_t *cl = S->clusters[S->cluster_count];
        cl[0] = slot_of_core[aic];
        cl[1] = slot_of_core[aiv0];
        cl[2] = slot_of_core[aiv1];
        for (uint32_t l = 0; l < 3; l++)
            S->cores[cl[l]].cluster = S->cluster_count;
        S->cluster_count++;
    }
}

/* ------------------------------------------------------------- protocol */

/* Leaves the round of every core still waiting for its core loop; a core
 * that joined meanwhile stays joined. True when some core is not in the
 * round (it left, or this call left it). */
static bool leave_waiting(struct sched *S, bool missing)
{
    struct rt_run *run = S->run;
    for (uint32_t i = 0; i < S->core_count; i++) {
        struct sched_core *c = &S->cores[i];
        if (!c->waiting)
            continue;
        c->waiting = false;
        /* model: sched_deadline */
        if (rt_round_leave(&run->rounds[c->id], run->generation, RT_ROUND_SCHED))
            missing = true;
        else
            c->joined = true;
    }
    return missing;
}

/* Joins the round of every owned core (round.c): arrives on each core's
 * word, then waits until each core loop has arrived too, up to the run's
 * sched_timeout_ms. Who ends the wait: a core loop's arrival (its hello
 * bumps the device's cond sequence after it joined), a latched error, or
 * the deadline, at which the waiting cores' rounds are left, so a core loop
 * that starts later ends at once. Returns 0 or an error code (latched by
 * the caller); a core not in the round is the stall class
 * CORES_NOT_STARTED. */
static int32_t handshake(struct sched *S)
{
    struct rt_run *run = S->run;
    uint64_t deadline = simdev_clock_ns() + (uint64_t)run->config.sched_timeout_ms * 1000000ull;
    uint32_t waiting = 0;
    bool missing = false;
    for (uint32_t i = 0; i < S->core_count; i++) {
        struct sched_core *c = &S->cores[i];
        /* No scheduler rings a core before it is JOINED, so the doorbell
         * holds what the core loop read as its base. */
        c->next_reg = (simdev_regs_read_doorbell(c->regs) & ~RT_DOORBELL_EXIT) + 2;
        /* model: sched_arrive */
        enum rt_round_arrival a = rt_round_arrive(&run->rounds[c->id], run->generation,
                                                  RT_ROUND_SCHED);
        c->joined = a == RT_ROUND_JOINED;
        c->waiting = a == RT_ROUND_WAITING;
        missing |= a == RT_ROUND_PARTNER_LEFT;
        waiting += c->waiting;
    }
    int32_t code = 0;
    while (waiting) {
        uint64_t seq = simdev_cond_seq(run->device);
        for (uint32_t i = 0; i < S->core_count; i++) {
            struct sched_core *c = &S->cores[i];
            if (c->waiting && rt_round_joined(&run->rounds[c->id], run->generation)) {
                c->waiting = false;
                c->joined = true;
                waiting--;
            }
        }
        if (!waiting)
            break;
        if ((code = rt_error(run)))
            break;
        uint64_t now = simdev_clock_ns();
        if (now >= deadline)
            break;
        if (simdev_cond_wait(run->device, seq, deadline - now) == PTO_RUNTIME_ERR_DEVICE_LOST) {
            code = SIMPLER_SCHED_ERR_TIMEOUT;
            break;
        }
    }
    missing = leave_waiting(S, missing);
    if (code)
        return code;
    if (missing) {
        atomic_store_explicit(&run->stall_class, RT_STALL_CORES_NOT_STARTED,
                              memory_order_relaxed);
        return SIMPLER_SCHED_ERR_TIMEOUT;
    }
    return 0;
}

/* Writes one block's payload and rings the core. The core must be idle,
 * or running an acknowledged task with an empty pending slot. */
static void dispatch_block(struct sched *S, struct sched_core *c, struct rt_slot *s,
                           uint32_t block, uint32_t lane)
{
    struct rt_run *run = S->run;
    struct rt_task *t = rt_slot_task(run, s);
    uint64_t reg = c->next_reg++;
    struct rt_dispatch *d = &run->dispatch[c->id * 2 + (reg & 1)];
    d->fn = run->kernels[t->kernel[lane]];
    for (uint32_t i = 0; i < t->tensor_count; i++)
        d->args[i] = (int64_t)(uintptr_t)&t->tensors[i];
    for (uint32_t j = 0; j < t->scalar_count; j++)
        d->args[t->tensor_count + j] = (int64_t)t->scalars[j];
    d->args[SIMPLER_KERNEL_CONTEXT_ARG] = (int64_t)(uintptr_t)&d->ctx;
    d->ctx.block_idx = block;
    d->ctx.block_num = s->block_num;
    d->ctx.lane = lane == 2 ? 1 : 0;
    d->ctx.core_id = c->id;
    d->ctx.failure = 0;
    d->ctx.reserved = 0;
    struct core_task ct = {s, reg};
    if (!c->running.slot) {
        c->running = ct;
        c->running_acked = false;
        atomic_fetch_add_explicit(&run->cores_running, 1, memory_order_relaxed);
    } else {
        c->pending = ct;
    }
    S->dispatched++;
    if (run->config.trace_level)
        rt_trace_dispatch(run, S->index, c->id, reg, s, t->kernel[lane], block, lane);
    /* release (in simdev): publishes the payload to the core's acquire of
     * the doorbell in rt_core_main */
    simdev_regs_ring_doorbell(c->regs, reg);
}

/* One block (subtask) of `ct` has finished on core `c`. */
static void finish(struct sched *S, struct sched_core *c, struct core_task ct)
{
    struct rt_run *run = S->run;
    const struct rt_dispatch *d = &run->dispatch[c->id * 2 + (ct.reg & 1)];
    if (run->config.trace_level >= 2)
        rt_trace_finish(run, S->index, c->id, ct.slot);
    if (d->ctx.failure) {
        rt_fail(run, d->ctx.failure);
        return; /* the run is over: its consumers must not run */
    }
    struct rt_slot *s = ct.slot;
    /* Read before the increment: once this block is counted another
     * scheduler may complete the task, and the slot may be reused. */
    uint32_t total = s->total_subtasks;
    /* acq_rel: the last block's finisher sees every block's writes */
    if (atomic_fetch_add_explicit(&s->completed_subtasks, 1, memory_order_acq_rel) + 1 == total)
        rt_task_complete(run, s);
}

/* Reads the core's condition word and applies it. True when something
 * changed. */
static bool poll_core(struct sched *S, struct sched_core *c)
{
    if (!c->running.slot)
        return false;
    /* acquire (in simdev): pairs with the core's release of ACK/FIN, so
     * the kernel's writes and ctx.failure are visible */
    uint64_t cond = simdev_regs_read_cond(c->regs);
    uint64_t id = cond >> 1;
    bool fin = cond & 1;
    if (c->pending.slot && id == c->pending.reg) {
        /* The core runs serially: the pending task started, so the
         * running one has finished. */
        finish(S, c, c->running);
        c->running = c->pending;
        c->pending.slot = NULL;
        c->running_acked = true;
        if (fin) {
            finish(S, c, c->running);
            c->running.slot = NULL;
            atomic_fetch_sub_explicit(&S->run->cores_running, 1, memory_order_relaxed);
        }
        return true;
    }
    if (id != c->running.reg)
        return false;
    if (fin) {
        finish(S, c, c->running);
        c->running = c->pending;
        c->pending.slot = NULL;
        c->running_acked = false;
        if (!c->running.slot)
            atomic_fetch_sub_explicit(&S->run->cores_running, 1, memory_order_relaxed);
        return true;
    }
    if (!c->running_acked) {
        c->running_acked = true;
        return true;
    }
    return false;
}

/* ------------------------------------------------------------- dispatch */

static bool core_idle(const struct sched_core *c)
{
    return !c->running.slot;
}

static bool core_can_queue(const struct sched_core *c)
{
    return c->running.slot && c->running_acked && !c->pending.slot;
}

static uint32_t lane_kernel_index(uint32_t lane_bit)
{
    return lane_bit == RT_LANE_AIC ? 0 : lane_bit == RT_LANE_AIV0 ? 1 : 2;
}

/*
 * Free units of `shape`: for AIC/AIV, idle cores of that type (or, with
 * `queue`, cores that can take a pending task); for MIX, fully idle
 * clusters. Writes their indices to `units` and returns how many.
 */
static uint32_t free_units(struct sched *S, uint32_t shape, bool queue, uint32_t *units)
{
    uint32_t n = 0;
    if (shape == RT_SHAPE_MIX) {
        for (uint32_t k = 0; k < S->cluster_count; k++) {
            uint32_t *cl = S->clusters[k];
            if (core_idle(&S->cores[cl[0]]) && core_idle(&S->cores[cl[1]]) &&
                core_idle(&S->cores[cl[2]]))
                units[n++] = k;
        }
        return n;
    }
    uint32_t type = shape == RT_SHAPE_AIC ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV;
    for (uint32_t i = 0; i < S->core_count; i++) {
        struct sched_core *c = &S->cores[i];
        if (c->type == type && (queue ? core_can_queue(c) : core_idle(c)))
            units[n++] = i;
    }
    return n;
}

static void run_block_on_unit(struct sched *S, uint32_t shape, uint32_t unit, struct rt_slot *s,
                              uint32_t block)
{
    if (shape != RT_SHAPE_MIX) {
        dispatch_block(S, &S->cores[unit], s, block, shape == RT_SHAPE_AIC ? 0 : 1);
        return;
    }
    uint32_t *cl = S->clusters[unit];
    for (uint32_t l = 0; l < 3; l++) {
        uint32_t bit = 1u << l;
        if (s->lanes & bit)
            dispatch_block(S, &S->cores[cl[l]], s, block, lane_kernel_index(bit));
    }
}

/* Dispatches ready tasks of `shape` onto free units. True if any went. */
static bool dispatch_shape(struct sched *S, uint32_t shape, bool queue)
{
    struct rt_run *run = S->run;
    uint32_t units[SIMDEV_MAX_CORES];
    bool any = false;
    for (;;) {
        uint32_t n = free_units(S, shape, queue, units);
        if (n == 0)
            return any;
        struct rt_slot *s = S->held[shape];
        if (s) {
            if (queue || n < s->block_num)
                return any; /* the held sync-start task waits for idle units */
            S->held[shape] = NULL;
        } else {
            s = NULL;
            if (!queue && S->index == run->sync_owner[shape])
                s = rt_rq_pop(&run->sync_ready[shape]);
            if (s && n < s->block_num) {
                /* Hold it, and give this shape's units to nothing else
                 * until enough of them are idle at once. */
                S->held[shape] = s;
                return any;
            }
            if (!s)
                s = rt_rq_pop(&run->ready[shape]);
            if (!s)
                return any;
        }
        uint32_t want = s->sync_start ? s->block_num : n;
        uint32_t first = atomic_fetch_add_explicit(&s->next_block, want, memory_order_relaxed);
        if (first >= s->block_num)
            continue; /* another thread claimed the rest */
        uint32_t count = s->block_num - first < want ? s->block_num - first : want;
        if (first + count < s->block_num)
            rt_rq_push(&run->ready[shape], s); /* the next wave */
        for (uint32_t b = 0; b < count; b++)
            run_block_on_unit(S, shape, units[b], s, first + b);
        any = true;
    }
}

static bool dispatch_all(struct sched *S)
{
    struct rt_run *run = S->run;
    bool any = false;
    struct rt_slot *s;
    while ((s = rt_rq_pop(&run->ready[RT_SHAPE_DUMMY]))) {
        rt_task_complete(run, s);
        any = true;
    }
    any |= dispatch_shape(S, RT_SHAPE_MIX, false);
    any |= dispatch_shape(S, RT_SHAPE_AIC, false);
    any |= dispatch_shape(S, RT_SHAPE_AIV, false);
    /* Keep busy cores fed: a pending task starts the moment the running one
     * finishes, without a round trip through this loop. */
    any |= dispatch_shape(S, RT_SHAPE_AIC, true);
    any |= dispatch_shape(S, RT_SHAPE_AIV, true);
    return any;
}

/* ------------------------------------------------------------ main loop */

static bool any_running(const struct sched *S)
{
    for (uint32_t i = 0; i < S->core_count; i++)
        if (S->cores[i].running.slot)
            return true;
    return false;
}

static bool work_visible(struct sched *S)
{
    for (uint32_t k = 0; k < RT_SHAPES; k++) {
        if (S->held[k] || rt_rq_maybe_nonempty(&S->run->ready[k]))
            return true;
        if (S->index == S->run->sync_owner[k] && rt_rq_maybe_nonempty(&S->run->sync_ready[k]))
            return true;
    }
    return false;
}

static uint32_t classify_stall(struct sched *S)
{
    struct rt_run *run = S->run;
    if (any_running(S) || atomic_load_explicit(&run->cores_running, memory_order_relaxed))
        return RT_STALL_RUNNING; /* this thread's cores or another's */
    if (work_visible(S))
        return RT_STALL_READY_BUT_IDLE;
    uint64_t submitted = atomic_load_explicit(&run->tasks_submitted, memory_order_acquire);
    uint64_t completed = atomic_load_explicit(&run->tasks_completed, memory_order_acquire);
    if (completed == submitted)
        return RT_STALL_ORCH_STARVATION;
    return RT_STALL_DEPENDENCY_DEADLOCK;
}

/* True once the orchestrator has finished and every task has completed. */
static bool run_finished(struct rt_run *run)
{
    /* acquire: pairs with the release of orch_done in rt_orchestrate */
    if (!atomic_load_explicit(&run->orch_done, memory_order_acquire))
        return false;
    return atomic_load_explicit(&run->tasks_completed, memory_order_acquire) ==
           atomic_load_explicit(&run->tasks_submitted, memory_order_acquire);
}

static uint64_t progress_mark(struct rt_run *run, struct sched *S)
{
    return atomic_load_explicit(&run->tasks_completed, memory_order_relaxed) +
           atomic_load_explicit(&run->tasks_submitted, memory_order_relaxed) + S->dispatched;
}

static void loop(struct sched *S)
{
    struct rt_run *run = S->run;
    uint64_t timeout_ns = (uint64_t)run->config.sched_timeout_ms * 1000000ull;
    uint64_t mark = progress_mark(run, S);
    uint64_t last_progress = simdev_clock_ns();
    bool phases = run->config.trace_level >= 3; /* loaded once per round */
    for (;;) {
        uint64_t seq = simdev_cond_seq(run->device);
        bool progress = false;
        uint64_t phase_begin = RT_TRACE_CLOCK(phases);
        for (uint32_t i = 0; i < S->core_count; i++)
            progress |= poll_core(S, &S->cores[i]);
        if (phases)
            phase_begin = rt_trace_phase_if(run, S->index, RT_PHASE_COMPLETE, phase_begin,
                                            progress);
        if (rt_error(run))
            return;
        bool dispatched = dispatch_all(S);
        if (phases && dispatched)
            rt_trace_phase(run, S->index, RT_PHASE_DISPATCH, phase_begin);
        progress |= dispatched;
        if (!any_running(S) && run_finished(run))
            return;
        if (progress)
            continue;

        uint64_t now = simdev_clock_ns();
        uint64_t m = progress_mark(run, S);
        if (m != mark) {
            mark = m;
            last_progress = now;
        } else if (now - last_progress >= timeout_ns) {
            /* The class is stored first so that whoever sees the error
             * latched (acquire) also sees why. */
            uint32_t expected = RT_STALL_NONE;
            atomic_compare_exchange_strong_explicit(&run->stall_class, &expected,
                                                    classify_stall(S), memory_order_release,
                                                    memory_order_relaxed);
            rt_fail(run, SIMPLER_SCHED_ERR_TIMEOUT);
            return;
        }
        /* Sleep until a core writes its condition word or another thread
         * signals. seq_cst: pairs with the fence in rt_task_ready — either
         * the pusher sees us sleeping and signals, or we see its task. */
        atomic_fetch_add_explicit(&run->sched_sleepers, 1, memory_order_seq_cst);
        if (!work_visible(S) && !run_finished(run) && !rt_error(run)) {
            uint64_t left = timeout_ns - (now - last_progress);
            uint64_t idle_begin = RT_TRACE_CLOCK(phases);
            simdev_cond_wait(run->device, seq, left);
            if (phases)
                rt_trace_phase(run, S->index, RT_PHASE_IDLE, idle_begin);
        }
        atomic_fetch_sub_explicit(&run->sched_sleepers, 1, memory_order_relaxed);
        if (simdev_device_is_lost(run->device) > 0) {
            rt_fail(run, SIMPLER_SCHED_ERR_TIMEOUT);
            return;
        }
    }
}

/* Tells every owned core loop in this round to return. A core still
 * running a kernel (a failed run) sees the exit after the kernel; a rung
 * but unacknowledged task is dropped. Cores not JOINED are never rung: they
 * left the round, or will find it left (round.c). */
static void exit_cores(struct sched *S)
{
    for (uint32_t i = 0; i < S->core_count; i++) {
        struct sched_core *c = &S->cores[i];
        if (!c->joined)
            continue;
        /* model: sched_exit */
        simdev_regs_ring_doorbell(c->regs, c->next_reg | RT_DOORBELL_EXIT);
    }
}

void rt_exit_cores_uninitialised(const struct rt_launch_args *la, int device, uint32_t index)
{
    struct simdev_config topo;
    struct rt_layout layout;
    if (simdev_device_get_config(device, &topo) != 0)
        return;
    uint32_t cores = topo.aic_cores + topo.aiv_cores;
    if (rt_layout_compute(&la->request.config, cores, &layout) != 0)
        return;
    struct rt_core_round *rounds = rt_core_rounds(la->request.arena, &layout);
    uint32_t clusters = topo.aic_cores < topo.aiv_cores / 2 ? topo.aic_cores : topo.aiv_cores / 2;
    for (uint32_t id = 0; id < cores; id++) {
        if (rt_core_owner(topo.aic_cores, clusters, la->schedulers, id) != index)
            continue;
        struct simdev_core_regs *regs = simdev_core_regs_get(device, id);
        uint64_t next = (simdev_regs_read_doorbell(regs) & ~RT_DOORBELL_EXIT) + 2;
        /* Arrive and leave at once; a core loop already waiting is JOINED
         * by the arrival (or by the failed leave) and must be told to end. */
        enum rt_round_arrival a = rt_round_arrive(&rounds[id], la->generation, RT_ROUND_SCHED);
        if (a == RT_ROUND_PARTNER_LEFT ||
            (a == RT_ROUND_WAITING && rt_round_leave(&rounds[id], la->generation, RT_ROUND_SCHED)))
            continue;
        simdev_regs_ring_doorbell(regs, next | RT_DOORBELL_EXIT);
    }
}

int rt_round_cancel_main(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    struct rt_launch_args la;
    if (args_size != sizeof la)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&la, args, sizeof la);
    /* Leave the round on behalf of every scheduler the program would have
     * had: a core loop already waiting is told to end at once. */
    for (uint32_t index = 0; index < la.schedulers; index++)
        rt_exit_cores_uninitialised(&la, ctx->device, index);
    return 0;
}

void rt_schedule(struct rt_run *run, uint32_t index)
{
    struct sched state; /* ~6 KiB: device threads have full-size stacks */
    struct sched *S = &state;
    sched_init(S, run, index);
    int32_t code = handshake(S);
    if (code)
        rt_fail(run, code);
    else
        loop(S);
    /* This thread may have completed the run's last task (a dummy, or on
     * a scheduler without cores): wake the others so they see the end now
     * rather than at their watchdog. */
    rt_signal(run);
    exit_cores(S);
    atomic_fetch_add_explicit(&run->subtasks_dispatched, S->dispatched, memory_order_relaxed);
}
