/*
 * runtime/scheduler.c — a scheduler thread: the cores it owns and its
 * handshake with their core loops.
 *
 * Owns: which cores a scheduler owns (its state's cores and clusters), the
 * handshake that arrives at each core's round (rendezvous.c) and the
 * joins a step sees after it, leaving the round of a core loop that never
 * came, the exit of the cores of a scheduler that never saw the run, and
 * rt_schedule, the thread's life: handshake, then the own thread's watch
 * (watchdog.c), then the exit of its cores (dispatch.c).
 *
 * Who runs the rest (the engine rule, DESIGN.md section 3): the
 * scheduler's *step* — poll its cores' condition words, complete what
 * finished, dispatch ready tasks (dispatch.c) — runs on whichever device
 * thread is already awake and has just changed something the step must
 * see: a core right after each FIN or when it idles with work queued, the
 * orchestrator right after it published a ready task that no awake core
 * will fetch. A per-scheduler token (step_token.c) lets one thread at a
 * time run the step. The scheduler's own thread keeps the handshake, the
 * watchdog and the exit, and sleeps otherwise: nothing on the per-task
 * path wakes it. The step's state (a struct sched) lives in the arena and
 * is touched only by the token's holder. Task completion itself is
 * task.c's.
 */
#include <stddef.h>
#include <string.h>

#include "platform/platform.h"
#include "runtime/core_regs.h"
#include "runtime/dispatch.h"
#include "runtime/entries.h"
#include "runtime/layout.h"
#include "runtime/rendezvous.h"
#include "runtime/run.h"
#include "runtime/runtime.h"
#include "runtime/scheduler.h"
#include "runtime/step_token.h"
#include "runtime/trace.h"
#include "runtime/watchdog.h"
#include "simpler/status.h"

/* ------------------------------------------------------------ ownership */

static void sched_init(struct sched *S, struct rt_run *run, uint32_t index)
{
    /* Cleared: every field but the core and cluster tables, of which only
     * the entries filled below are ever read (core_count, cluster_count),
     * and the released tasks' slots, of which only `count` (measured: a
     * whole clear was 16 KB of the arena a scheduler a round, a third of
     * a one-task round's instructions; docs/performance.md, "A round's own
     * work, counted"). */
    memset(S, 0, offsetof(struct sched, cores));
    S->cluster_count = 0;
    memset(&S->held, 0, offsetof(struct sched, released) - offsetof(struct sched, held));
    S->released.count = 0;
    memset(&S->has_shape, 0, sizeof *S - offsetof(struct sched, has_shape));
    S->run = run;
    S->index = index;
    uint32_t slot_of_core[SIMDEV_MAX_CORES];
    for (uint32_t id = 0; id < run->core_count; id++) {
        slot_of_core[id] = UINT32_MAX;
        if (rt_core_owner(run->aic_count, run->cluster_count, run->schedulers, id) != index)
            continue;
        struct sched_core *c = &S->cores[S->core_count];
        memset(c, 0, sizeof *c);
        c->id = id;
        c->type = id < run->aic_count ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV;
        c->cluster = RT_NO_CLUSTER;
        c->regs = run->core_regs[id]; /* run_init looked them up this round */
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

void rt_sched_see_joins(struct sched *S)
{
    struct rt_run *run = S->run;
    for (uint32_t i = 0; i < S->core_count && S->waiting; i++) {
        struct sched_core *c = &S->cores[i];
        if (c->waiting && rt_rendezvous_joined(&run->rendezvous[c->id], run->generation)) {
            c->waiting = false;
            c->joined = true;
            S->waiting--;
            if (c->asked) /* it came */
                atomic_fetch_sub_explicit(&run->cores_coming[c->type], 1, memory_order_relaxed);
        }
    }
}

void rt_sched_leave_waiting(struct sched *S)
{
    struct rt_run *run = S->run;
    for (uint32_t i = 0; i < S->core_count && S->waiting; i++) {
        struct sched_core *c = &S->cores[i];
        if (!c->waiting)
            continue;
        c->waiting = false;
        S->waiting--;
        if (c->asked) /* it comes no more: joined, or left */
            atomic_fetch_sub_explicit(&run->cores_coming[c->type], 1, memory_order_relaxed);
        /* model: round_gate.pml, rt_rendezvous_leave in SchedHalf */
        if (rt_rendezvous_leave(&run->rendezvous[c->id], run->generation,
                                RT_RENDEZVOUS_SCHED))
            platform_mark(SIMDEV_POINT_CORE_LEAVE);
        else
            c->joined = true;
    }
}

/*
 * Arrives on the rendezvous word of every owned core (rendezvous.c). A
 * core loop already there is JOINED now; the others are waiting
 * (sched_core.waiting) and join when their core loop arrives, which a
 * step sees (rt_sched_see_joins) — the core loop kicks its scheduler's
 * step once it has joined. The scheduler opens at once rather than wait
 * for the last core loop: cores that have joined take tasks while the
 * others are still starting (measured, one-task kernel-mode round: the
 * wait for the slowest of three cores, asleep, cost 15-25 us before the
 * first dispatch). A core loop that has not joined when the round ends is
 * left then (rt_sched_exit_cores); one that never comes while the run
 * cannot progress without it is the watchdog's stall class
 * CORES_NOT_STARTED (watchdog.c). Returns 0, or the error code (latched
 * by the caller) when a core loop left before this scheduler arrived: it
 * will not run this round's tasks.
 */
static int32_t handshake(struct sched *S)
{
    struct rt_run *run = S->run;
    bool missing = false;
    for (uint32_t i = 0; i < S->core_count; i++) {
        struct sched_core *c = &S->cores[i];
        /* No scheduler rings a core before it is JOINED, so the doorbell
         * holds what the core loop read as its base. */
        c->next_reg = rt_first_dispatch_id(platform_read_doorbell(c->regs));
        c->done_reg = c->next_reg;
        /* model: round_gate.pml, rt_rendezvous_arrive in SchedHalf */
        enum rt_rendezvous_arrival a =
            rt_rendezvous_arrive(&run->rendezvous[c->id], run->generation, RT_RENDEZVOUS_SCHED);
        c->joined = a == RT_RENDEZVOUS_JOINED;
        c->waiting = a == RT_RENDEZVOUS_WAITING;
        missing |= a == RT_RENDEZVOUS_PARTNER_LEFT;
        S->waiting += c->waiting;
    }
    if (missing) {
        rt_sched_leave_waiting(S);
        atomic_store_explicit(&run->stall_class, RT_STALL_CORES_NOT_STARTED,
                              memory_order_relaxed);
        return SIMPLER_SCHED_ERR_TIMEOUT;
    }
    return 0;
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
        if (!regs)
            return; /* a lost device: its loss ends every core loop */
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


enum rt_sched_next rt_sched_prologue(struct rt_run *run, uint32_t index)
{
    rt_trace_sched_begin(&run->config, run->generation, index);
    struct sched *S = rt_sched_state(run, index);
    /* This thread owns the token (rt_scheds_init) until the handshake has
     * JOINED the cores: no step may ring a core before that. */
    sched_init(S, run, index);
    if (S->core_count == 0 && index != RT_WATCHER) {
        /* No core loop to meet, watch or end (more AICPU threads than
         * the clusters and cores they could share: host_build_graph's
         * booting thread on a device of one cluster). Its step would only
         * complete dummy tasks, which every scheduler's step does, and its
         * watch would sleep to the run's end and be woken for it, on the
         * way to the program's end; the watcher watches the run. */
        rt_sched_close_unopened(run, index);
        return RT_SCHED_GONE;
    }
    int32_t code = handshake(S);
    if (code) {
        rt_fail(run, code);
        rt_sched_close_unopened(run, index);
        return RT_SCHED_END;
    }
    if (index != RT_WATCHER) {
        if (rt_sched_leave_to_watcher(run, index)) {
            /* Its steps run on the threads that kick it, as every step
             * does; the watcher closes it and rings its cores out. */
            platform_mark(SIMDEV_POINT_SCHED_OPEN);
            rt_sched_open(run, index);
            return RT_SCHED_GONE;
        }
        rt_sched_close_unopened(run, index); /* the watcher ended the round first */
        return RT_SCHED_END;
    }
    platform_mark(SIMDEV_POINT_SCHED_OPEN);
    rt_sched_open(run, index);
    return RT_SCHED_WATCH;
}

void rt_schedule(struct rt_run *run, uint32_t index)
{
    rt_schedule_after(run, index, rt_sched_prologue(run, index));
}

void rt_schedule_after(struct rt_run *run, uint32_t index, enum rt_sched_next next)
{
    if (next == RT_SCHED_GONE)
        return;
    struct sched *S = rt_sched_state(run, index);
    bool stalled = false;
    if (next == RT_SCHED_WATCH) {
        stalled = rt_sched_watch(S);
        platform_mark(SIMDEV_POINT_SCHED_DONE);
    }
    struct sched *ended[SIMDEV_MAX_AICPU_THREADS];
    uint32_t n = 0;
    ended[n++] = S;
    for (uint32_t i = 0; index == RT_WATCHER && i < run->schedulers; i++)
        if (i != index && rt_sched_take_over(run, i))
            ended[n++] = rt_sched_state(run, i);
    if (stalled)
        rt_sched_fail_stalled(ended, n);
    /* This thread may have completed the run's last task (a dummy, or on
     * a scheduler without cores): wake the others so they see the end now
     * rather than at their watchdog. */
    rt_signal(run);
    for (uint32_t k = 0; k < n; k++) {
        rt_sched_exit_cores(ended[k]);
        atomic_fetch_add_explicit(&run->subtasks_dispatched,
                                  atomic_load_explicit(&ended[k]->dispatched,
                                                       memory_order_relaxed),
                                  memory_order_relaxed);
    }
}
