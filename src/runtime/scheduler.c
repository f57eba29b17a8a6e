/*
 * runtime/scheduler.c — a scheduler thread: the cores it owns and its
 * handshake with their core loops.
 *
 * Owns: which cores a scheduler owns (its state's cores and clusters), the
 * handshake that joins each core's round (rendezvous.c) with the hello
 * wait, the exit of the cores of a scheduler that never saw the run, and
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
#include "runtime/wait.h"
#include "runtime/watchdog.h"
#include "simpler/status.h"

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
        c->cluster = RT_NO_CLUSTER;
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
        /* model: round_gate.pml, rt_rendezvous_leave in SchedHalf */
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
        /* model: round_gate.pml, rt_rendezvous_arrive in SchedHalf */
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
    struct sched *S = rt_sched_state(run, index);
    /* This thread owns the token (rt_scheds_init) until the handshake has
     * JOINED the cores: no step may ring a core before that. */
    sched_init(S, run, index);
    int32_t code = handshake(S);
    if (code) {
        rt_fail(run, code);
        rt_sched_close_unopened(run, index);
    } else {
        platform_mark(SIMDEV_POINT_SCHED_OPEN);
        rt_sched_open(run, index);
        rt_sched_watch(S);
        platform_mark(SIMDEV_POINT_SCHED_DONE);
    }
    /* This thread may have completed the run's last task (a dummy, or on
     * a scheduler without cores): wake the others so they see the end now
     * rather than at their watchdog. */
    rt_signal(run);
    rt_sched_exit_cores(S);
    atomic_fetch_add_explicit(&run->subtasks_dispatched,
                              atomic_load_explicit(&S->dispatched, memory_order_relaxed),
                              memory_order_relaxed);
}
