/*
 * runtime/scheduler.c — a scheduler thread: ready tasks onto its cores.
 *
 * Owns: the AICPU side of the core register protocol for the cores this
 * scheduler owns (handshake, dispatch with up to RT_CORE_DEPTH ids in flight per
 * core, completion polling, exit), SPMD block claiming and waves, sync-start
 * placement, dummy tasks, the no-progress watchdog with its stall class.
 * Task completion itself is task.c's.
 *
 * Who runs it (the engine rule, DESIGN.md section 3): the scheduler's
 * *step* — poll its cores' condition words, complete what finished,
 * dispatch ready tasks — runs on whichever device thread is already awake
 * and has just changed something the step must see: a core right after
 * each FIN or when it idles with work queued, the orchestrator right after
 * it published a ready task that no awake core will fetch. A per-scheduler
 * token (a try-lock) lets one thread at a time run the step; a thread
 * that finds it taken leaves a note (`pending`) that the holder sees
 * before it lets go and steps again, so nobody waits for the token and no
 * request is lost. The scheduler's own thread keeps the handshake, the
 * watchdog and the exit, and sleeps otherwise: nothing on the per-task
 * path wakes it. The step's state (a struct sched) lives in the arena and
 * is touched only by the token's holder.
 */
#include <sched.h>
#include <string.h>

#include "platform/platform.h"
#include "runtime/core_regs.h"
#include "runtime/cpu.h"
#include "runtime/entries.h"
#include "runtime/layout.h"
#include "runtime/payload.h"
#include "runtime/ready_queue.h"
#include "runtime/rendezvous.h"
#include "runtime/run.h"
#include "runtime/runtime.h"
#include "runtime/scheduler.h"
#include "runtime/task.h"
#include "runtime/trace.h"
#include "runtime/wait.h"
#include "simpler/status.h"

#define NO_CLUSTER UINT32_MAX

/* How many dispatch ids a step keeps published and unfinished on one core
 * (at most RT_CORE_QUEUE): the one running and those queued behind it,
 * which the core starts the moment the one before finishes, without a
 * round trip through a step. */
#ifndef RT_CORE_DEPTH
#define RT_CORE_DEPTH 2u
#endif

/* Ready tasks of one shape queued beyond what the awake cores took that,
 * once they have stayed queued RT_WAKE_AGE_NS, make a step wake parked
 * cores (wake_parked). */
#ifndef RT_WAKE_BACKLOG
#define RT_WAKE_BACKLOG 4u
#endif
#ifndef RT_WAKE_AGE_NS
#define RT_WAKE_AGE_NS 10000u
#endif

/* A backlog wakes a parked core after RT_WAKE_AGE_NS only while the
 * runnable budget has room (the woken core would otherwise take a CPU
 * from a thread already working: with short tasks the orchestrator's);
 * after RT_WAKE_STALL_NS whatever the budget. */
#ifndef RT_WAKE_STALL_NS
#define RT_WAKE_STALL_NS 1000000u
#endif
/* The mean time of a dispatch on a core above which a step gives work to
 * parked cores as readily as to awake ones: the work then outweighs the
 * wake-up (12-39 us measured on our 2-CPU hosts). */
#ifndef RT_WAKE_WORTH_NS
#define RT_WAKE_WORTH_NS 20000u
#endif
/* Of a core's busy periods, the first and one in RT_TIME_EVERY are timed
 * for that mean, and within a period that is not, one poll in
 * RT_TIME_EVERY starts the timing (poll_core). */
#ifndef RT_TIME_EVERY
#define RT_TIME_EVERY 8u
#endif
_Static_assert(RT_CORE_DEPTH >= 1 && RT_CORE_DEPTH <= RT_CORE_QUEUE, "payload slots per core");

struct sched_core {
    uint32_t id;
    uint32_t type;    /* enum simdev_core_type */
    uint32_t cluster; /* NO_CLUSTER when not part of one */
    struct simdev_core_regs *regs;
    uint64_t next_reg; /* the next dispatch id */
    uint64_t done_reg; /* ids below it are finished and applied; [done_reg, next_reg) in flight */
    struct rt_slot *inflight[RT_CORE_QUEUE]; /* by rt_payload_index of the id */
    uint64_t busy_since; /* when the oldest id in flight started, about (simdev clock) */
    uint32_t busy_periods; /* idle-to-busy changes, to time one in RT_TIME_EVERY */
    uint32_t untimed_polls; /* polls while busy and not timed, likewise */
    bool timed;             /* busy_since is set: the next poll takes a sample */
    bool joined;  /* in this round with its core loop (rendezvous.c): may ring it */
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
    /* Subtasks this scheduler dispatched: written by the token's holder,
     * read (relaxed) by the watchdog without the token. */
    _Atomic uint64_t dispatched;
    uint32_t completions; /* tasks completed by steps (token holder only) */
    struct rt_released released; /* made ready by the completions of one poll */
    bool has_shape[RT_SHAPES];   /* owns a unit that can run tasks of this shape */
    uint64_t backlog_since[RT_SHAPES]; /* when a step first saw RT_WAKE_BACKLOG queued; 0: not */
    uint64_t task_ns; /* running mean of a dispatch's time on a core; 0: none finished yet */
    bool exited; /* every owned core has been rung EXIT (exit_cores) */
};

/*
 * One scheduler in the arena (rt_layout.scheds). `token` is 1 while a
 * thread runs this scheduler's step (or owns it outright: from run_init
 * until the handshake ends, and from the exit on); `pending` is a request
 * for a step left by a thread that found the token taken; `closed` makes
 * every later step a no-op once the scheduler's thread has ended the round.
 * The three words share a line apart from the state: every kicker touches
 * them, only the holder touches the state.
 */
struct rt_sched {
    _Alignas(RT_CACHELINE) _Atomic uint32_t token;
    _Atomic uint32_t pending;
    _Atomic uint32_t closed;
    /* 0 when the last step left no core of this scheduler idle or able to
     * take a pending task: a new ready task then needs no step now, since
     * every core will FIN and kick (kick_with_room skips it). */
    _Atomic uint32_t room;
    /* 1 while the steps know tasks to be short (a mean time of a dispatch
     * measured, below RT_WAKE_WORTH_NS): only then may a submit leave its
     * task to a core that fetches (core_will_fetch). Unknown or long
     * tasks get the submit's step, which may wake a parked core. */
    _Atomic uint32_t short_tasks;
    _Alignas(RT_CACHELINE) struct sched state;
};

size_t rt_sched_bytes(void)
{
    return sizeof(struct rt_sched);
}

void rt_scheds_init(struct rt_run *run)
{
    for (uint32_t i = 0; i < run->schedulers; i++) {
        struct rt_sched *R = &run->scheds[i];
        /* Owned by the scheduler's own thread until its handshake ends: a
         * kick before that leaves a note. */
        atomic_init(&R->token, 1);
        atomic_init(&R->pending, 0);
        atomic_init(&R->closed, 0);
        atomic_init(&R->room, 1);
        atomic_init(&R->short_tasks, 0);
    }
}

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
        c->regs = platform_core_regs(run->device, id);
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
    for (uint32_t i = 0; i < S->core_count; i++)
        S->has_shape[S->cores[i].type == SIMDEV_CORE_AIC ? RT_SHAPE_AIC : RT_SHAPE_AIV] = true;
    S->has_shape[RT_SHAPE_MIX] = S->cluster_count > 0;
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
        if (rt_rendezvous_leave(&run->rendezvous[c->id], run->generation,
                                RT_RENDEZVOUS_SCHED))
            missing = true;
        else
            c->joined = true;
    }
    return missing;
}

struct hello_wait {
    struct sched *S;
    uint32_t waiting; /* owned cores whose core loop has not arrived */
    int32_t code;     /* a latched error that ended the wait */
};

/* Marks the waiting cores whose core loop has arrived JOINED; done when
 * none is left, or when the run failed. */
static bool hellos_done(void *arg)
{
    struct hello_wait *w = arg;
    struct sched *S = w->S;
    for (uint32_t i = 0; i < S->core_count; i++) {
        struct sched_core *c = &S->cores[i];
        if (c->waiting &&
            rt_rendezvous_joined(&S->run->rendezvous[c->id], S->run->generation)) {
            c->waiting = false;
            c->joined = true;
            w->waiting--;
        }
    }
    return w->waiting == 0 || (w->code = rt_error(S->run)) != 0;
}

/* Joins the round of every owned core (rendezvous.c): arrives on each
 * core's word, then waits until each core loop has arrived too, up to the run's
 * sched_timeout_ms. Who ends the wait: a core loop's arrival (its hello
 * bumps the device's cond sequence after it joined), a latched error, or
 * the deadline, at which the waiting cores' rounds are left, so a core loop
 * that starts later ends at once. Returns 0 or an error code (latched by
 * the caller); a core not in the round is the stall class
 * CORES_NOT_STARTED. */
static int32_t handshake(struct sched *S)
{
    struct rt_run *run = S->run;
    uint64_t deadline = platform_clock_ns() + (uint64_t)run->config.sched_timeout_ms * 1000000ull;
    uint32_t waiting = 0;
    bool missing = false;
    for (uint32_t i = 0; i < S->core_count; i++) {
        struct sched_core *c = &S->cores[i];
        /* No scheduler rings a core before it is JOINED, so the doorbell
         * holds what the core loop read as its base. */
        c->next_reg = rt_first_dispatch_id(platform_read_doorbell(c->regs));
        c->done_reg = c->next_reg;
        /* model: sched_arrive */
        enum rt_rendezvous_arrival a =
            rt_rendezvous_arrive(&run->rendezvous[c->id], run->generation, RT_RENDEZVOUS_SCHED);
        c->joined = a == RT_RENDEZVOUS_JOINED;
        c->waiting = a == RT_RENDEZVOUS_WAITING;
        missing |= a == RT_RENDEZVOUS_PARTNER_LEFT;
        waiting += c->waiting;
    }
    struct hello_wait w = {S, waiting, 0};
    if (waiting &&
        rt_wait_until(run->device, RT_WAIT_COND, hellos_done, &w, &deadline) ==
            PTO_RUNTIME_ERR_DEVICE_LOST)
        w.code = SIMPLER_SCHED_ERR_TIMEOUT;
    int32_t code = w.code;
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
        rt_task_complete(run, s, &S->released);
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

/* ------------------------------------------------------------- dispatch */

static bool core_idle(const struct sched_core *c)
{
    return c->done_reg == c->next_reg;
}

/* Busy, with room for one more id behind the running one. */
static bool core_can_queue(const struct sched_core *c)
{
    uint64_t inflight = c->next_reg - c->done_reg;
    return inflight > 0 && inflight < RT_CORE_DEPTH;
}

static uint32_t lane_kernel_index(uint32_t lane_bit)
{
    return lane_bit == RT_LANE_AIC ? 0 : lane_bit == RT_LANE_AIV0 ? 1 : 2;
}

/* Which free units a pass of the step may use. */
enum unit_pass {
    UNITS_AWAKE,  /* idle cores that are not parked */
    UNITS_QUEUE,  /* busy cores with room for another id (never parked) */
    UNITS_ANY,    /* idle cores, awake ones first, then parked ones */
};

static bool core_parked(const struct sched_core *c)
{
    return platform_hint_core_parked(c->regs);
}

/* Tasks are known to be short: a mean time of a dispatch has been
 * measured and is below RT_WAKE_WORTH_NS. Only then does a step leave a
 * parked core parked for the sake of queueing behind a busy one; with
 * long or unknown tasks the wake-up pays (or bounds the wait). */
static bool tasks_short(const struct sched *S)
{
    return S->task_ns != 0 && S->task_ns < RT_WAKE_WORTH_NS;
}

/* Nothing of `shape` waits for idle units at once (a held or queued
 * sync-start task): what is queued can run on whichever core takes it. */
static bool plain_work_only(const struct sched *S, uint32_t shape)
{
    return !S->held[shape] && !(S->index == S->run->sync_owner[shape] &&
                                rt_rq_maybe_nonempty(&S->run->sync_ready[shape]));
}

/*
 * Whether parked core `c` stays parked though idle: tasks are known to be
 * short (with long or unknown ones a wake-up pays, as everywhere in the
 * step), it gives way to the awake AICPU thread sharing its CPU (the
 * orchestrator, simdev placement), so waking it would take that CPU from
 * the orchestrator, nothing of `shape` needs idle units at once, and an
 * awake core of its type that fetches while idle will take the queued
 * work (its FIN's step, or its doorbell wait's look at the queue). The
 * cheap looks first: only a parked idle core in a pass that may wake one
 * asks. Measured: a step waking that core for a backlog of short
 * tasks made it preempt the orchestrator every few µs (hundreds of
 * wake-ups a run, each a switch on the orchestrator's CPU).
 */
static bool mate_to_spare(const struct sched *S, const struct sched_core *c, uint32_t type,
                          uint32_t shape)
{
    return tasks_short(S) && platform_hint_core_gives_way(c->regs) && plain_work_only(S, shape) &&
           rt_fetcher_awake(S->run, type, c->id);
}

/*
 * Free units of `shape`: for AIC/AIV, the cores of that type `pass` may
 * use; for MIX, fully idle clusters (any pass but UNITS_QUEUE). Writes
 * their indices to `units` and returns how many.
 */
static uint32_t free_units(struct sched *S, uint32_t shape, enum unit_pass pass, uint32_t *units)
{
    if (pass == UNITS_AWAKE && !tasks_short(S))
        pass = UNITS_ANY; /* long or unknown tasks: a wake-up pays */
    uint32_t n = 0;
    if (shape == RT_SHAPE_MIX) {
        for (uint32_t k = 0; k < S->cluster_count && pass != UNITS_QUEUE; k++) {
            uint32_t *cl = S->clusters[k];
            if (core_idle(&S->cores[cl[0]]) && core_idle(&S->cores[cl[1]]) &&
                core_idle(&S->cores[cl[2]]))
                units[n++] = k;
        }
        return n;
    }
    uint32_t type = shape == RT_SHAPE_AIC ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV;
    uint32_t parked[SIMDEV_MAX_CORES], n_parked = 0;
    for (uint32_t i = 0; i < S->core_count; i++) {
        struct sched_core *c = &S->cores[i];
        if (c->type != type)
            continue;
        if (pass == UNITS_QUEUE) {
            if (core_can_queue(c))
                units[n++] = i;
        } else if (core_idle(c)) {
            if (!core_parked(c))
                units[n++] = i;
            else if (pass == UNITS_ANY && !mate_to_spare(S, c, type, shape))
                parked[n_parked++] = i;
        }
    }
    /* awake ones first, then the parked ones (UNITS_ANY) */
    for (uint32_t k = 0; k < n_parked; k++)
        units[n++] = parked[k];
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
        uint32_t n = free_units(S, shape, pass, units);
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
        if (pass == UNITS_AWAKE && s->block_num > 1 && !s->sync_start)
            n = free_units(S, shape, UNITS_ANY, units); /* wide work: every idle core */
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

/*
 * Whether tasks of `shape` left after the awake cores took theirs should
 * wake parked cores (a wake-up costs tens of µs; an idle core parks early
 * while more device threads are awake than CPUs, platform_hint_core_parked): yes
 * for a sync-start task (it needs its units idle at once), when no owned
 * core of the shape is busy (nobody's FIN would step for them), and when
 * RT_WAKE_BACKLOG or more have been queued for RT_WAKE_AGE_NS (the awake
 * cores are not keeping up: a burst of short tasks that they drain sooner
 * than a parked core could wake wakes nobody). Otherwise the busy cores
 * take them at their next FIN, and a light load never wakes anybody per
 * task. The age is measured from the first step that saw the backlog;
 * the busy cores' FINs bring the steps that look again.
 */
static bool wake_parked(struct sched *S, uint32_t shape)
{
    struct rt_run *run = S->run;
    if (!plain_work_only(S, shape))
        return true; /* sync-start work needs its units idle at once */
    uint64_t backlog = rt_rq_length(&run->ready[shape]);
    if (backlog < RT_WAKE_BACKLOG)
        S->backlog_since[shape] = 0;
    if (backlog == 0)
        return false;
    if (backlog >= RT_WAKE_BACKLOG) {
        uint64_t now = platform_clock_ns();
        if (S->backlog_since[shape] == 0)
            S->backlog_since[shape] = now;
        else if (now - S->backlog_since[shape] >= RT_WAKE_STALL_NS ||
                 (now - S->backlog_since[shape] >= RT_WAKE_AGE_NS && platform_hint_budget_has_room()))
            return true;
    }
    uint32_t type = shape == RT_SHAPE_AIC ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV;
    for (uint32_t i = 0; i < S->core_count; i++)
        if (S->cores[i].type == type && !core_idle(&S->cores[i]))
            return false;
    return true;
}

static bool dispatch_all(struct sched *S)
{
    struct rt_run *run = S->run;
    bool any = false;
    struct rt_slot *s;
    while ((s = rt_rq_pop(&run->ready[RT_SHAPE_DUMMY]))) {
        rt_task_complete(run, s, NULL);
        S->completions++;
        any = true;
    }
    any |= dispatch_shape(S, RT_SHAPE_MIX, UNITS_ANY);
    any |= dispatch_shape(S, RT_SHAPE_AIC, UNITS_AWAKE);
    any |= dispatch_shape(S, RT_SHAPE_AIV, UNITS_AWAKE);
    /* Keep busy cores fed: a queued id starts the moment the one before it
     * finishes, without a round trip through this loop. */
    any |= dispatch_shape(S, RT_SHAPE_AIC, UNITS_QUEUE);
    any |= dispatch_shape(S, RT_SHAPE_AIV, UNITS_QUEUE);
    /* Parked cores last, and only when what is left needs them. */
    if (wake_parked(S, RT_SHAPE_AIC))
        any |= dispatch_shape(S, RT_SHAPE_AIC, UNITS_ANY);
    if (wake_parked(S, RT_SHAPE_AIV))
        any |= dispatch_shape(S, RT_SHAPE_AIV, UNITS_ANY);
    return any;
}

/* ------------------------------------------------------------ the step */

static bool any_running(const struct sched *S)
{
    for (uint32_t i = 0; i < S->core_count; i++)
        if (!core_idle(&S->cores[i]))
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

/* Approximate: true when some ready queue may hold a task. */
static bool work_queued(struct rt_run *run)
{
    for (uint32_t k = 0; k < RT_SHAPES; k++)
        if (rt_rq_maybe_nonempty(&run->ready[k]) || rt_rq_maybe_nonempty(&run->sync_ready[k]))
            return true;
    return false;
}

/*
 * Places the tasks that core `c`'s completions just made ready, ahead of
 * everything queued (ready order: what a completion releases lies on the
 * critical path): the first that fits runs next on `c` itself, the others
 * on other idle cores of their type that are not parked, then queued
 * behind a busy core's running id; what finds no room goes to its ready
 * queue (where a parked core is woken for it only as wake_parked says).
 */
static void place_released(struct sched *S, struct sched_core *c)
{
    struct rt_run *run = S->run;
    uint32_t units[SIMDEV_MAX_CORES];
    for (uint32_t k = 0; k < S->released.count; k++) {
        struct rt_slot *s = S->released.slot[k];
        uint32_t type = s->shape == RT_SHAPE_AIC ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV;
        struct sched_core *to = NULL;
        if (c->type == type && core_idle(c) && (!tasks_short(S) || !core_parked(c)) &&
            !S->held[s->shape]) {
            to = c;
        } else if (!S->held[s->shape]) {
            uint32_t n = free_units(S, s->shape, UNITS_AWAKE, units);
            if (!n)
                n = free_units(S, s->shape, UNITS_QUEUE, units);
            if (n)
                to = &S->cores[units[0]];
        }
        if (!to) {
            rt_task_ready(run, s);
            continue;
        }
        /* Single-block and in no queue: nobody else can claim it. */
        atomic_store_explicit(&s->next_block, 1, memory_order_relaxed);
        dispatch_block(S, to, s, 0, s->shape == RT_SHAPE_AIC ? 0 : 1);
    }
    S->released.count = 0;
}

static bool run_finished(struct rt_run *run);
static void exit_cores(struct sched *S);

/*
 * One step: apply every owned core's condition word (placing what each
 * core's completions released), then dispatch what is queued onto what is
 * free. Caller holds the token. A step that finds the run finished (the
 * orchestrator done, every task completed) ends the round of this
 * scheduler's cores at once, on whichever thread runs it: the core whose
 * FIN completed the last task sees its EXIT on return from this step, and
 * a parked core is woken now rather than after the scheduler's own thread
 * has woken for the end (one wake-up less on the way to the run's end;
 * the own thread's exit_cores then finds it done). No task can be
 * dispatched after that: none is left, and a finished run stays finished.
 */
static void sched_step(struct sched *S)
{
    struct rt_run *run = S->run;
    bool phases = run->config.trace_level >= 3;
    uint64_t phase_begin = RT_TRACE_CLOCK(phases);
    bool progress = false;
    for (uint32_t i = 0; i < S->core_count; i++) {
        progress |= poll_core(S, &S->cores[i]);
        if (S->released.count) {
            if (rt_error(run)) {
                S->released.count = 0; /* the run is over: they must not run */
                continue;
            }
            place_released(S, &S->cores[i]);
        }
    }
    if (phases)
        phase_begin = rt_trace_phase_if(run, S->index, RT_PHASE_COMPLETE, phase_begin, progress);
    if (rt_error(run))
        return;
    if (dispatch_all(S) && phases)
        rt_trace_phase(run, S->index, RT_PHASE_DISPATCH, phase_begin);
    if (!S->exited && run_finished(run))
        exit_cores(S);
}

/* True when some owned core is idle or can take a pending task. */
static bool has_room(const struct sched *S)
{
    for (uint32_t i = 0; i < S->core_count; i++)
        if (core_idle(&S->cores[i]) || core_can_queue(&S->cores[i]))
            return true;
    return false;
}

/*
 * Publishes whether a new ready task needs a step now. No room: every
 * owned core holds RT_CORE_DEPTH ids in flight, so each will FIN, and
 * its kick (after this step lets go of the token) dispatches what is
 * queued. The seq_cst store, fence and look at the queues pair with the
 * orchestrator's push, fence and look at `room` (kick_with_room):
 * either it sees room = 0 only after this step saw its task (then the next
 * FIN's step dispatches it), or it sees room = 1 and kicks.
 */
static void publish_room(struct rt_sched *R)
{
    struct sched *S = &R->state;
    uint32_t short_tasks = tasks_short(S);
    if (atomic_load_explicit(&R->short_tasks, memory_order_relaxed) != short_tasks)
        atomic_store_explicit(&R->short_tasks, short_tasks, memory_order_relaxed);
    if (has_room(S) || S->core_count == 0) {
        atomic_store_explicit(&R->room, 1, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&R->room, 0, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    (void)work_queued(S->run); /* the look the fence orders: see above */
}

/* Takes the token if it is free. seq_cst, with the pending note: see
 * rt_sched_kick. */
static bool token_try(struct rt_sched *R)
{
    uint32_t expected = 0;
    return atomic_compare_exchange_strong_explicit(&R->token, &expected, 1, memory_order_seq_cst,
                                                   memory_order_seq_cst);
}

/*
 * Runs scheduler R's step on this thread, or leaves a note for the thread
 * that holds the token. Never waits. The seq_cst accesses to token and
 * pending form a Dekker pair (as ring_advance's in task.c): either the
 * holder sees the note after it lets go and steps again, or the noter sees
 * the token free and takes it itself. Returns true when a step of this
 * call completed a task (other schedulers may have work now).
 */
static bool kick_one(struct rt_sched *R)
{
    bool completed = false;
    for (;;) {
        if (!token_try(R)) {
            atomic_store_explicit(&R->pending, 1, memory_order_seq_cst);
            if (atomic_load_explicit(&R->token, memory_order_seq_cst))
                return completed;
            continue;
        }
        atomic_store_explicit(&R->pending, 0, memory_order_seq_cst);
        if (!atomic_load_explicit(&R->closed, memory_order_seq_cst)) {
            uint32_t before = R->state.completions;
            sched_step(&R->state);
            publish_room(R);
            completed |= R->state.completions != before;
        }
        atomic_store_explicit(&R->token, 0, memory_order_seq_cst);
        if (!atomic_exchange_explicit(&R->pending, 0, memory_order_seq_cst))
            return completed;
    }
}

/* Kicks every scheduler in `mask` (bit i = scheduler i). A completion by one
 * scheduler's step may make tasks ready that only another's cores can run,
 * so each completing step adds the others back: the loop ends once a round
 * of steps completes nothing, which every run reaches (completions are
 * finite). */
static void kick_set(struct rt_run *run, uint32_t mask)
{
    uint32_t all = run->schedulers >= 32 ? UINT32_MAX : (1u << run->schedulers) - 1;
    while (mask) {
        uint32_t i = (uint32_t)__builtin_ctz(mask);
        mask &= mask - 1;
        if (kick_one(&run->scheds[i]) && run->schedulers > 1)
            mask |= all & ~(1u << i);
    }
}

void rt_sched_kick(struct rt_run *run, uint32_t index)
{
    kick_set(run, 1u << index);
}

/* Kicks every scheduler that has room for a new ready task. Caller has
 * fenced (seq_cst) after its push: the looks at room pair with
 * publish_room's store, fence and look at the queues. */
static void kick_with_room(struct rt_run *run)
{
    uint32_t mask = 0;
    for (uint32_t i = 0; i < run->schedulers && i < 32; i++)
        if (atomic_load_explicit(&run->scheds[i].room, memory_order_relaxed))
            mask |= 1u << i;
    kick_set(run, mask);
}

/*
 * True when some core will run a step that sees the task `s` just pushed,
 * without the orchestrator running one: a core of its type that fetches
 * work while idle (core_pulling) and is not parked. Such a core is either
 * running (its FIN's step, or its wait after it, sees the queue) or idle
 * in its doorbell wait, whose predicate peeks at the queue while it spins
 * and once more after it announced itself parked (waiters, seq_cst, then a
 * seq_cst fence and the peek: core_loop.c). The caller's push, its seq_cst
 * fence and this look at `waiters` make the other half of that Dekker
 * pair: either this sees the core parked (and kicks), or the core's peek
 * sees the task. A core that sees it but would exceed the runnable budget
 * leaves it only to another awake fetching core of its type, which sees
 * it in turn (work_to_fetch, core_loop.c). Not for MIX, dummy, sync-start
 * or SPMD tasks: those need a step's choice now (a whole cluster, every
 * idle core); nor unless tasks are known to be short (short_tasks):
 * otherwise the step may wake a parked core for the task rather than leave
 * it to a busy core's FIN. A backlog is no reason either: the awake core's
 * own steps (one per FIN) are the ones that wake a parked core once the
 * backlog has aged (wake_parked).
 */
static bool core_will_fetch(struct rt_run *run, const struct rt_slot *s)
{
    if ((s->shape != RT_SHAPE_AIC && s->shape != RT_SHAPE_AIV) || s->sync_start ||
        s->block_num > 1)
        return false;
    for (uint32_t i = 0; i < run->schedulers && i < 32; i++)
        if (!atomic_load_explicit(&run->scheds[i].short_tasks, memory_order_relaxed))
            return false; /* a parked core may be worth waking now: the step decides */
    return rt_fetcher_awake(run, s->shape == RT_SHAPE_AIC ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV,
                            UINT32_MAX);
}

void rt_sched_publish(struct rt_run *run, const struct rt_slot *s)
{
    /* seq_cst fence, one for both looks: the push before the looks at the
     * cores (core_will_fetch) and at room (kick_with_room) */
    atomic_thread_fence(memory_order_seq_cst);
    if (core_will_fetch(run, s))
        return;
    kick_with_room(run);
}

/* Takes the token for good (the exit, the watchdog's verdict): marks the
 * scheduler closed so later kicks do nothing, then waits for a step in
 * progress to end. A step never blocks, so the wait is short; it yields
 * the CPU because its holder may be a preempted device thread. */
static void sched_close(struct rt_sched *R)
{
    atomic_store_explicit(&R->closed, 1, memory_order_seq_cst);
    for (uint32_t i = 0; !token_try(R); i++) {
        if (i & 63)
            rt_cpu_relax();
        else
            sched_yield();
    }
}

/* ------------------------------------------------------- the own thread */

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
    /* seq_cst: pairs with the completer's seq_cst increment of
     * tasks_completed and its look at orch_done (rt_task_complete): either
     * it sees orch_done and signals, or we see its completion here */
    if (!atomic_load_explicit(&run->orch_done, memory_order_seq_cst))
        return false;
    return atomic_load_explicit(&run->tasks_completed, memory_order_seq_cst) ==
           atomic_load_explicit(&run->tasks_submitted, memory_order_acquire);
}

static uint64_t progress_mark(struct rt_run *run, struct sched *S)
{
    return atomic_load_explicit(&run->tasks_completed, memory_order_relaxed) +
           atomic_load_explicit(&run->tasks_submitted, memory_order_relaxed) +
           atomic_load_explicit(&S->dispatched, memory_order_relaxed);
}

/*
 * The scheduler's own thread after the handshake: it runs a step itself on
 * every wake-up (so nothing can be left unstepped), and otherwise sleeps on
 * its notification channel. Who ends the sleep: the completion of the
 * run's last task and the orchestrator's end (rt_signal), a latched error
 * (rt_fail), a lost device, or the nap's end — a quarter of the watchdog's
 * period, when it compares the progress mark and fails the run with
 * SIMPLER_SCHED_ERR_TIMEOUT after sched_timeout_ms without progress.
 * Returns with the scheduler closed (its token held).
 */
struct own_wait {
    struct rt_sched *R;
    uint64_t timeout_ns, nap_ns;
    uint64_t mark, last_progress; /* the watchdog's */
    uint64_t deadline;            /* the current nap's end */
    bool stalled;                 /* no progress for timeout_ns */
};

/* One wake-up of the scheduler's own thread: a step, then the run's end,
 * failure and the watchdog. Done when the thread should leave the loop;
 * else the next nap's end is set. */
static bool own_wait_done(void *arg)
{
    struct own_wait *w = arg;
    struct sched *S = &w->R->state;
    struct rt_run *run = S->run;
    kick_set(run, 1u << S->index);
    if (rt_error(run) || run_finished(run))
        return true;
    if (platform_device_lost(run->device) > 0) {
        rt_fail(run, SIMPLER_SCHED_ERR_TIMEOUT);
        return true;
    }
    uint64_t now = platform_clock_ns();
    uint64_t m = progress_mark(run, S);
    if (m != w->mark) {
        w->mark = m;
        w->last_progress = now;
    } else if (now - w->last_progress >= w->timeout_ns) {
        w->stalled = true;
        return true;
    }
    uint64_t left = w->timeout_ns - (now - w->last_progress);
    w->deadline = now + (left < w->nap_ns ? left : w->nap_ns);
    return false;
}

static void loop(struct rt_sched *R)
{
    struct sched *S = &R->state;
    struct rt_run *run = S->run;
    struct own_wait w = {.R = R};
    w.timeout_ns = (uint64_t)run->config.sched_timeout_ms * 1000000ull;
    w.nap_ns = w.timeout_ns / 4 ? w.timeout_ns / 4 : 1;
    w.mark = progress_mark(run, S);
    w.last_progress = platform_clock_ns();
    w.deadline = w.last_progress + w.nap_ns;
    /* A nap's end (TIMEOUT) only means: look again. */
    int rc;
    while ((rc = rt_wait_until(run->device, RT_NOTIFY_SCHED, own_wait_done, &w, &w.deadline)) ==
           PTO_RUNTIME_ERR_TIMEOUT)
        ;
    if (rc == PTO_RUNTIME_ERR_DEVICE_LOST)
        rt_fail(run, SIMPLER_SCHED_ERR_TIMEOUT);
    sched_close(R);
    if (w.stalled) {
        /* The class is stored first so that whoever sees the error latched
         * (acquire) also sees why. */
        uint32_t expected = RT_STALL_NONE;
        atomic_compare_exchange_strong_explicit(&run->stall_class, &expected, classify_stall(S),
                                                memory_order_release, memory_order_relaxed);
        rt_fail(run, SIMPLER_SCHED_ERR_TIMEOUT);
    }
}

/* Tells every owned core loop in this round to return, once per round (a
 * step may have done it when the run finished, sched_step). A core still
 * running a kernel (a failed run) sees the exit after the kernel; a rung
 * but unacknowledged task is dropped. Cores not JOINED are never rung: they
 * left the round, or will find it left (rendezvous.c). */
static void exit_cores(struct sched *S)
{
    if (S->exited)
        return;
    S->exited = true;
    for (uint32_t i = 0; i < S->core_count; i++) {
        struct sched_core *c = &S->cores[i];
        if (!c->joined)
            continue;
        /* model: sched_exit */
        platform_ring_doorbell(c->regs, rt_doorbell_exit(c->next_reg));
    }
}

void rt_exit_cores_uninitialised(const struct rt_launch_args *la, int device, uint32_t index)
{
    struct platform_topology topo;
    struct rt_layout layout;
    if (platform_topology(device, &topo) != 0)
        return;
    uint32_t cores = topo.aic_cores + topo.aiv_cores;
    if (rt_layout_compute(&la->request.config, cores, &layout) != 0)
        return;
    struct rt_rendezvous *words = rt_rendezvous_words(la->request.arena, &layout);
    uint32_t clusters = topo.aic_cores < topo.aiv_cores / 2 ? topo.aic_cores : topo.aiv_cores / 2;
    for (uint32_t id = 0; id < cores; id++) {
        if (rt_core_owner(topo.aic_cores, clusters, la->schedulers, id) != index)
            continue;
        struct simdev_core_regs *regs = platform_core_regs(device, id);
        uint64_t next = rt_first_dispatch_id(platform_read_doorbell(regs));
        /* Arrive and leave at once; a core loop already waiting is JOINED
         * by the arrival (or by the failed leave) and must be told to end. */
        enum rt_rendezvous_arrival a =
            rt_rendezvous_arrive(&words[id], la->generation, RT_RENDEZVOUS_SCHED);
        if (a == RT_RENDEZVOUS_PARTNER_LEFT ||
            (a == RT_RENDEZVOUS_WAITING &&
             rt_rendezvous_leave(&words[id], la->generation, RT_RENDEZVOUS_SCHED)))
            continue;
        platform_ring_doorbell(regs, rt_doorbell_exit(next));
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
    struct rt_sched *R = &run->scheds[index];
    struct sched *S = &R->state;
    /* This thread owns the token (rt_scheds_init) until the handshake has
     * JOINED the cores: no step may ring a core before that. */
    sched_init(S, run, index);
    int32_t code = handshake(S);
    if (code) {
        rt_fail(run, code);
        atomic_store_explicit(&R->closed, 1, memory_order_seq_cst);
    } else {
        /* Let go of the token; a kick that came meanwhile left a note. */
        atomic_store_explicit(&R->token, 0, memory_order_seq_cst);
        if (atomic_exchange_explicit(&R->pending, 0, memory_order_seq_cst))
            rt_sched_kick(run, index);
        loop(R);
    }
    /* This thread may have completed the run's last task (a dummy, or on
     * a scheduler without cores): wake the others so they see the end now
     * rather than at their watchdog. */
    rt_signal(run);
    exit_cores(S);
    atomic_fetch_add_explicit(&run->subtasks_dispatched,
                              atomic_load_explicit(&S->dispatched, memory_order_relaxed),
                              memory_order_relaxed);
}
