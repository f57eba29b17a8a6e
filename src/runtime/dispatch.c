/*
 * runtime/dispatch.c — a scheduler's step: the AICPU side of the core
 * register protocol for the cores it owns (dispatch.h).
 *
 * Owns: dispatch with up to RT_CORE_DEPTH ids in flight per core,
 * completion polling with the timing of a dispatch that the placement
 * policy reads, SPMD block claiming and waves, sync-start holding, dummy
 * tasks, the successors a completion released, and the EXIT of the owned
 * cores. Must not choose which free unit a task may use (placement.c);
 * task completion itself is task.c's.
 */
#include "platform/platform.h"
#include "runtime/core_regs.h"
#include "runtime/dispatch.h"
#include "runtime/layout.h"
#include "runtime/payload.h"
#include "runtime/placement.h"
#include "runtime/ready_queue.h"
#include "runtime/run.h"
#include "runtime/scheduler.h"
#include "runtime/task.h"
#include "runtime/trace.h"
#include "runtime/wait.h"

/* Of a core's busy periods, the first and one in RT_TIME_EVERY are timed
 * for that mean, and within a period that is not, one poll in
 * RT_TIME_EVERY starts the timing (poll_core). */
#ifndef RT_TIME_EVERY
#define RT_TIME_EVERY 8u
#endif

/* Writes one block's payload and rings the core. The core must have fewer
 * than RT_CORE_QUEUE ids in flight (the payload slot is then free: its
 * previous id has finished and been applied). */
static void dispatch_block(struct sched *S, struct sched_core *c, struct rt_slot *s,
                           uint32_t block, uint32_t lane)
{
    struct rt_run *run = S->run;
    struct rt_task *t = rt_slot_task(run, s);
    uint64_t reg = c->next_reg++;
    struct rt_dispatch *d = &run->dispatch[c->id * RT_CORE_QUEUE + rt_payload_index(reg)];
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
    if (c->done_reg == reg) {
        atomic_fetch_add_explicit(&run->cores_running, 1, memory_order_relaxed);
        c->timed = c->busy_periods++ % RT_TIME_EVERY == 0;
        if (c->timed)
            c->busy_since = platform_clock_ns();
    }
    c->inflight[rt_payload_index(reg)] = s;
    atomic_store_explicit(&S->dispatched,
                          atomic_load_explicit(&S->dispatched, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    if (run->config.trace_level)
        rt_trace_dispatch(run, S->index, c->id, reg, s, t->kernel[lane], block, lane);
    /* release (in simdev): publishes the payload to the core's acquire of
     * the doorbell in rt_core_main */
    platform_mark(SIMDEV_POINT_DISPATCH);
    platform_ring_doorbell(c->regs, reg);
}

/* One block (subtask), dispatch id `reg`, has finished on core `c`. */
static void finish(struct sched *S, struct sched_core *c, uint64_t reg)
{
    struct rt_run *run = S->run;
    const struct rt_dispatch *d = &run->dispatch[c->id * RT_CORE_QUEUE + rt_payload_index(reg)];
    struct rt_slot *s = c->inflight[rt_payload_index(reg)];
    if (run->config.trace_level >= 2)
        rt_trace_finish(run, S->index, c->id, s);
    if (d->ctx.failure) {
        rt_fail(run, d->ctx.failure);
        return; /* the run is over: its consumers must not run */
    }
    /* Read before the increment: once this block is counted another
     * scheduler may complete the task, and the slot may be reused. */
    uint32_t total = s->total_subtasks;
    /* acq_rel: the last block's finisher sees every block's writes */
    if (atomic_fetch_add_explicit(&s->completed_subtasks, 1, memory_order_acq_rel) + 1 == total) {
        S->end_signal |= rt_task_complete(run, s, &S->released);
        S->completions++;
    }
}

/* Reads the core's condition word and applies it: every id in flight up
 * to the last one finished. True when something changed. */
static bool poll_core(struct sched *S, struct sched_core *c)
{
    if (c->done_reg == c->next_reg)
        return false;
    /* acquire (in simdev): pairs with the core's release of FIN, so the
     * kernels' writes and ctx.failure are visible */
    uint64_t last = rt_cond_id(platform_read_cond(c->regs));
    if (last < c->done_reg)
        return false;
    if (last >= c->next_reg)
        last = c->next_reg - 1; /* never the case: a core finishes only what was rung */
    /* The time per dispatch, for the choice between parked cores and
     * queueing (RT_WAKE_WORTH_NS): since the first of these ids started,
     * shared by them; a mean over about the last eight samples, taken in
     * one busy period of RT_TIME_EVERY (a clock read costs tens of ns
     * under a paravirtualised clock, and short tasks change the period
     * every task); a period that is not timed starts its timing at one
     * poll in RT_TIME_EVERY, so that a core kept busy for good still
     * samples (tasks that grow long must be seen to). */
    if (c->timed) {
        uint64_t now = platform_clock_ns();
        uint64_t sample = (now - c->busy_since) / (last - c->done_reg + 1);
        S->task_ns = S->task_ns ? S->task_ns - S->task_ns / 8 + sample / 8 : sample;
        c->busy_since = now;
    } else if (++c->untimed_polls % RT_TIME_EVERY == 0) {
        c->busy_since = platform_clock_ns(); /* the ids after `last` are timed from here */
        c->timed = true;
    }
    for (; c->done_reg <= last; c->done_reg++)
        finish(S, c, c->done_reg);
    if (c->done_reg == c->next_reg)
        atomic_fetch_sub_explicit(&S->run->cores_running, 1, memory_order_relaxed);
    return true;
}

static uint32_t lane_kernel_index(uint32_t lane_bit)
{
    return lane_bit == RT_LANE_AIC ? 0 : lane_bit == RT_LANE_AIV0 ? 1 : 2;
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

/* Dispatches ready tasks of `shape` onto the free units of `pass`. True
 * if any went. */
static bool dispatch_shape(struct sched *S, uint32_t shape, enum unit_pass pass)
{
    struct rt_run *run = S->run;
    uint32_t units[SIMDEV_MAX_CORES];
    bool any = false;
    bool queue = pass == UNITS_QUEUE;
    /* Nothing of this shape for this scheduler: no look at its cores. */
    if (!S->has_shape[shape] ||
        (!S->held[shape] && !rt_rq_maybe_nonempty(&run->ready[shape]) &&
         (queue || S->index != run->sync_owner[shape] ||
          !rt_rq_maybe_nonempty(&run->sync_ready[shape]))))
        return false;
    for (;;) {
        uint32_t n = rt_sched_free_units(S, shape, pass, units);
        if (n == 0)
            return any;
        struct rt_slot *s = S->held[shape];
        if (s) {
            /* A held sync-start task waits for enough idle units; any held
             * task for every owned core to have joined. */
            if (queue || S->waiting || (s->sync_start && n < s->block_num))
                return any;
            S->held[shape] = NULL;
        } else {
            s = NULL;
            if (!queue && !S->waiting && S->index == run->sync_owner[shape])
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
            if (S->waiting && !rt_slot_plain(s)) {
                /* Wide work (SPMD, a cluster) waits until every owned core
                 * has joined the round, so that its first wave takes them
                 * all; the last core to join kicks a step. */
                S->held[shape] = s;
                return any;
            }
        }
        if (pass == UNITS_AWAKE && s->block_num > 1 && !s->sync_start)
            n = rt_sched_free_units(S, shape, UNITS_ANY, units); /* wide work: every idle core */
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

/* The run whose steps on this thread owe a lone task's core (the
 * orchestrator's, during its orchestration), or NULL. */
static _Thread_local struct rt_run *tl_owing;

void rt_owe_cores_begin(struct rt_run *run)
{
    tl_owing = run;
}

void rt_owe_cores_end(void)
{
    tl_owing = NULL;
}

/* Asks core `c` to start: its core loop comes, joins and kicks a step.
 * `lone`: for the one task queued, which a step on the orchestrator's
 * thread leaves owed (dispatch.h): that thread runs the core itself at its
 * end, or starts it at its next submit or wait, and no wake-up is made
 * now (measured: docs/performance.md, "The orchestrator runs a lone
 * task's core"). */
static void ask_core(struct sched *S, struct sched_core *c, bool lone)
{
    struct rt_run *run = S->run;
    c->asked = true;
    if (lone && tl_owing == run && !atomic_load_explicit(&run->core_owed, memory_order_relaxed)) {
        atomic_store_explicit(&run->core_owed_ns, platform_clock_ns(), memory_order_relaxed);
        /* release: the watcher that takes it sees when it was owed */
        atomic_store_explicit(&run->core_owed, c->id + 1, memory_order_release);
        run->owes_core = true; /* this thread is the orchestrator's */
        /* The watcher looks again, and sets its next look by when the
         * core is due: a sequence bump while it spins (no system call), a
         * wake-up only when it sleeps, as the core's start would have
         * cost. Without it a sleeping watcher looked only at its nap's
         * end, a quarter of sched_timeout_ms later. */
        platform_notify_signal(run->device, RT_NOTIFY_SCHED);
        return;
    }
    platform_core_start(c->regs);
}

/* Takes the owed core: its id + 1, or 0. */
static uint32_t take_owed(struct rt_run *run)
{
    if (!atomic_load_explicit(&run->core_owed, memory_order_relaxed))
        return 0;
    return atomic_exchange_explicit(&run->core_owed, 0, memory_order_acquire);
}

void rt_start_owed_core(struct rt_run *run)
{
    uint32_t owed = take_owed(run);
    if (owed)
        platform_core_start(run->core_regs[owed - 1]);
}

void rt_run_owed_core_here(struct rt_run *run, platform_launch_match_fn mine, void *mine_arg)
{
    uint32_t owed = take_owed(run);
    if (owed && !rt_error(run))
        (void)platform_core_run_here(run->core_regs[owed - 1], mine, mine_arg);
}

uint64_t rt_owed_core_due(struct rt_run *run)
{
    /* acquire: pairs with ask_core's release, after the time */
    if (!atomic_load_explicit(&run->core_owed, memory_order_acquire))
        return UINT64_MAX;
    return atomic_load_explicit(&run->core_owed_ns, memory_order_relaxed) + RT_OWED_CORE_NS;
}

/* The core of `type` to ask for a lone task: the first one not asked that
 * has not joined, except that the orchestrator owing it (ask_core) takes
 * one that shares its CPU where there is one. The orchestrator runs that
 * core itself at its end, or lets it arrive at its next submit
 * (orchestrator.c, rt_orch_goes_on), which gives it the CPU: a chain of
 * tasks then runs there as it did when that core had arrived before the
 * first submit (measured: started on the other CPU instead, the chain ran
 * while the orchestrator still submitted and took twice as long a task,
 * W2 in docs/performance.md). NULL: none. */
static struct sched_core *lone_task_core(struct sched *S, uint32_t type)
{
    bool owing = tl_owing == S->run;
    struct sched_core *first = NULL;
    for (uint32_t i = 0; i < S->core_count; i++) {
        struct sched_core *c = &S->cores[i];
        if (c->type != type || !c->waiting || c->asked)
            continue;
        if (!owing || platform_hint_core_shares_my_cpu(c->regs))
            return c;
        if (!first)
            first = c;
    }
    return first;
}

/*
 * The round's core launch starts its cores on demand (docs/device.md,
 * "Cores started on demand"): a core loop nobody asked for does not come
 * while the program runs, and one that never ran is run, returning at
 * once, when the round is over (aicpu_program.c). So a step that leaves
 * work no joined core took asks for cores: for wide work (a cluster,
 * SPMD or sync-start task, queued or held, which waits for every owned
 * core to join) every core; for plain tasks of a type one more core of
 * the type while none asked by any scheduler is still joining (the run's
 * cores_coming, claimed from 0 to 1: two schedulers' steps that see the
 * same lone task start one core between them), every core of the type
 * once two or more tasks wait. A one-task round starts one core, not
 * every core of the device (measured: a third of the round, the others'
 * wake-ups and exits).
 */
static void start_cores(struct sched *S)
{
    struct rt_run *run = S->run;
    bool wide = rt_rq_maybe_nonempty(&run->ready[RT_SHAPE_MIX]);
    for (uint32_t k = 0; k < RT_SHAPES && !wide; k++)
        wide = S->held[k] || (S->index == run->sync_owner[k] &&
                              rt_rq_maybe_nonempty(&run->sync_ready[k]));
    for (uint32_t shape = RT_SHAPE_AIC; shape <= RT_SHAPE_AIV; shape++) {
        uint64_t queued = wide ? UINT64_MAX : rt_rq_length(&run->ready[shape]);
        if (!queued)
            continue;
        uint32_t type = shape == RT_SHAPE_AIC ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV;
        _Atomic uint32_t *coming = &run->cores_coming[type];
        if (queued < 2) {
            struct sched_core *c = lone_task_core(S, type);
            uint32_t none = 0;
            /* none coming: one asked by any scheduler takes the task */
            if (c && atomic_compare_exchange_strong_explicit(coming, &none, 1,
                                                             memory_order_relaxed,
                                                             memory_order_relaxed))
                ask_core(S, c, true);
            continue;
        }
        for (uint32_t i = 0; i < S->core_count; i++) {
            struct sched_core *c = &S->cores[i];
            if (c->type != type || !c->waiting || c->asked)
                continue;
            atomic_fetch_add_explicit(coming, 1, memory_order_relaxed);
            ask_core(S, c, false);
        }
    }
}

/* Whether a step's dispatch may find work: a task this scheduler holds,
 * or a queue it serves (every shape's ready queue; the sync-start queues
 * it owns) that looks nonempty. These are the looks each pass of
 * dispatch_all begins with (dispatch_shape, start_cores,
 * rt_sched_wake_parked), taken once: a step after a completion that
 * released nothing, or at the run's end, finds every queue empty, and its
 * nine passes then cost about 400 instructions of looks that all say so
 * (callgrind, docs/performance.md, "A round's jobs and idle steps"). */
static bool work_in_sight(const struct sched *S)
{
    struct rt_run *run = S->run;
    for (uint32_t k = 0; k < RT_SHAPES; k++)
        if (S->held[k] || rt_rq_maybe_nonempty(&run->ready[k]) ||
            (S->index == run->sync_owner[k] && rt_rq_maybe_nonempty(&run->sync_ready[k])))
            return true;
    return false;
}

static bool dispatch_all(struct sched *S)
{
    struct rt_run *run = S->run;
    bool any = false;
    struct rt_slot *s;
    if (!work_in_sight(S)) {
        /* what rt_sched_wake_parked does on finding its queue empty */
        S->backlog_since[RT_SHAPE_AIC] = 0;
        S->backlog_since[RT_SHAPE_AIV] = 0;
        return false;
    }
    while ((s = rt_rq_pop(&run->ready[RT_SHAPE_DUMMY]))) {
        S->end_signal |= rt_task_complete(run, s, NULL);
        S->completions++;
        any = true;
    }
    any |= dispatch_shape(S, RT_SHAPE_MIX, UNITS_ANY);
    any |= dispatch_shape(S, RT_SHAPE_AIC, UNITS_AWAKE);
    any |= dispatch_shape(S, RT_SHAPE_AIV, UNITS_AWAKE);
    if (S->waiting)
        start_cores(S);
    /* Keep busy cores fed: a queued id starts the moment the one before it
     * finishes, without a round trip through this loop. */
    any |= dispatch_shape(S, RT_SHAPE_AIC, UNITS_QUEUE);
    any |= dispatch_shape(S, RT_SHAPE_AIV, UNITS_QUEUE);
    /* Parked cores last, and only when what is left needs them. */
    if (rt_sched_wake_parked(S, RT_SHAPE_AIC))
        any |= dispatch_shape(S, RT_SHAPE_AIC, UNITS_ANY);
    if (rt_sched_wake_parked(S, RT_SHAPE_AIV))
        any |= dispatch_shape(S, RT_SHAPE_AIV, UNITS_ANY);
    return any;
}

/* Dispatches plain task `s` (rt_slot_plain), which is in no queue, whole
 * onto core `c`: nobody else can claim it. */
static void dispatch_plain(struct sched *S, struct sched_core *c, struct rt_slot *s)
{
    atomic_store_explicit(&s->next_block, 1, memory_order_relaxed);
    dispatch_block(S, c, s, 0, s->shape == RT_SHAPE_AIC ? 0 : 1);
}

/*
 * Places the tasks that core `c`'s completions just made ready, ahead of
 * everything queued (ready order: what a completion releases lies on the
 * critical path): the first that fits runs next on `c` itself, the others
 * on other idle cores of their type that are not parked, then queued
 * behind a busy core's running id; what finds no room goes to its ready
 * queue (where a parked core is woken for it only as rt_sched_wake_parked
 * says).
 */
static void place_released(struct sched *S, struct sched_core *c)
{
    struct rt_run *run = S->run;
    uint32_t units[SIMDEV_MAX_CORES];
    bool keep = sched_keep_local(S);
    for (uint32_t k = 0; k < S->released.count; k++) {
        struct rt_slot *s = S->released.slot[k];
        uint32_t type = s->shape == RT_SHAPE_AIC ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV;
        struct sched_core *to = NULL;
        bool mine = c->type == type && !S->held[s->shape];
        if (mine && sched_core_idle(c) && (!sched_tasks_short(S) || !sched_core_parked(c))) {
            to = c;
        } else if (mine && keep && sched_core_can_queue(c)) {
            to = c;
        } else if (mine && keep && c->local_count < RT_LOCAL_MAX) {
            c->local[(c->local_head + c->local_count++) % RT_LOCAL_MAX] = s;
            continue;
        } else if (!S->held[s->shape]) {
            uint32_t n = rt_sched_free_units(S, s->shape, UNITS_AWAKE, units);
            if (!n)
                n = rt_sched_free_units(S, s->shape, UNITS_QUEUE, units);
            if (n)
                to = &S->cores[units[0]];
        }
        if (to)
            dispatch_plain(S, to, s);
        else
            rt_task_ready(run, s);
    }
    S->released.count = 0;
}

/*
 * Runs the tasks core `c` kept (place_released) on it while it has room,
 * oldest first. What still waits after RT_WAKE_AGE_NS (timed from the
 * first drain that found no room: `c` is in a longer task than the mean
 * said) goes to the ready queue for any core; so does everything once
 * tasks are no longer tiny. On a failed run they are dropped, as the
 * released list is.
 */
static struct rt_slot *local_pop(struct sched_core *c)
{
    struct rt_slot *s = c->local[c->local_head];
    c->local_head = (c->local_head + 1) % RT_LOCAL_MAX;
    c->local_count--;
    return s;
}

static void drain_local(struct sched *S, struct sched_core *c)
{
    struct rt_run *run = S->run;
    if (rt_error(run))
        c->local_count = 0;
    while (c->local_count && (sched_core_idle(c) || sched_core_can_queue(c)))
        dispatch_plain(S, c, local_pop(c));
    if (c->local_count && sched_keep_local(S)) {
        uint64_t now = platform_clock_ns();
        if (c->local_since == 0)
            c->local_since = now;
        if (now - c->local_since < RT_WAKE_AGE_NS)
            return; /* still waiting for room on `c` */
    }
    while (c->local_count)
        rt_task_ready(run, local_pop(c));
    c->local_since = 0; /* the list is empty */
}

/*
 * One step: apply every owned core's condition word (placing what each
 * core's completions released), then dispatch what is queued onto what is
 * free. Caller holds the token. A step that finds the run finished (the
 * orchestrator done, every task completed) ends the round of this
 * scheduler's cores at once, on whichever thread runs it: the core whose
 * FIN completed the last task sees its EXIT on return from this step, and
 * a parked core is woken now rather than after the scheduler's own thread
 * has woken for the end (one wake-up less on the way to the run's end;
 * rt_schedule's rt_sched_exit_cores then finds it done). No task can be
 * dispatched after that: none is left, and a finished run stays finished.
 */
static void step(struct sched *S)
{
    struct rt_run *run = S->run;
    bool phases = run->config.trace_level >= 3;
    uint64_t phase_begin = RT_TRACE_CLOCK(phases);
    bool progress = false;
    if (S->waiting)
        rt_sched_see_joins(S);
    for (uint32_t i = 0; i < S->core_count; i++) {
        progress |= poll_core(S, &S->cores[i]);
        if (S->released.count) {
            if (rt_error(run)) {
                S->released.count = 0; /* the run is over: they must not run */
                continue;
            }
            place_released(S, &S->cores[i]);
        }
        if (S->cores[i].local_count)
            drain_local(S, &S->cores[i]);
    }
    if (phases)
        phase_begin = rt_trace_phase_if(run, S->index, RT_PHASE_COMPLETE, phase_begin, progress);
    if (rt_error(run))
        return;
    if (dispatch_all(S) && phases)
        rt_trace_phase(run, S->index, RT_PHASE_DISPATCH, phase_begin);
    if (!S->exited && rt_run_finished(run))
        rt_sched_exit_cores(S);
}

void rt_sched_step(struct sched *S)
{
    step(S);
    /* The run's end, made by a completion of this step, is signalled once
     * the step is over: after it rang its cores' exits. Signalled at the
     * completion, the woken watcher took the CPU of the core running the
     * step (measured: the exits rung 20-25 us after the last task
     * completed, in bench_kernel's one-task rounds), and every core's end
     * waited for them. Nothing of the step waits, so the signal is as
     * certain as before, a few hundred ns later. */
    if (S->end_signal) {
        S->end_signal = false;
        rt_signal(S->run);
    }
}

/* Tells every owned core loop in this round to return, once per round (a
 * step may have done it when the run finished, rt_sched_step). A core still
 * running a kernel (a failed run) sees the exit after the kernel; a rung
 * but unacknowledged task is dropped. Cores not JOINED are never rung: they
 * left the round, or will find it left (rendezvous.c). */
void rt_sched_exit_cores(struct sched *S)
{
    if (S->exited)
        return;
    S->exited = true;
    /* A core loop that has not joined by now is left: if it ever starts it
     * returns at once, and no ring can be missed (a JOINED one is rung
     * below). */
    rt_sched_leave_waiting(S);
    for (uint32_t i = 0; i < S->core_count; i++) {
        struct sched_core *c = &S->cores[i];
        if (!c->joined)
            continue;
        /* model: round_gate.pml, exit_rung in SchedHalf */
        platform_mark(SIMDEV_POINT_CORE_EXIT);
        platform_ring_doorbell(c->regs, rt_doorbell_exit(c->next_reg));
    }
}
