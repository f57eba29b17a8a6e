/*
 * runtime/step_token.c — who runs a scheduler's step (step_token.h).
 *
 * Owns: the token words of every scheduler (struct rt_sched) and the
 * protocol on them: a try-lock that lets one thread at a time run the
 * step; a thread that finds it taken leaves a note (`pending`) that the
 * holder sees before it lets go and steps again, so nobody waits for the
 * token and no request is lost. Also owns `room` and `short_tasks`, which
 * a submit reads to decide whether it must run a step itself. Must not
 * touch the step state except through the step (dispatch.c).
 */
#include <sched.h>

#include "platform/platform.h"
#include "runtime/cpu.h"
#include "runtime/dispatch.h"
#include "runtime/layout.h"
#include "runtime/placement.h"
#include "runtime/ready_queue.h"
#include "runtime/run.h"
#include "runtime/scheduler.h"
#include "runtime/step_token.h"
#include "runtime/task.h"

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
    /* What became of the scheduler's own thread (scheduler 0 is the
     * watcher, scheduler.c): FATE_OPEN until it left its end to the
     * watcher (FATE_LEFT) or the watcher ended the round first and leaves
     * its end to it (FATE_TAKEN); one CAS each way decides. */
    _Atomic uint32_t fate;
    _Alignas(RT_CACHELINE) struct sched state;
};

enum { FATE_OPEN, FATE_LEFT, FATE_TAKEN };

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
        atomic_init(&R->fate, FATE_OPEN);
    }
}

/* Approximate: true when some ready queue may hold a task. */
static bool queues_maybe_nonempty(struct rt_run *run)
{
    for (uint32_t k = 0; k < RT_SHAPES; k++)
        if (rt_rq_maybe_nonempty(&run->ready[k]) || rt_rq_maybe_nonempty(&run->sync_ready[k]))
            return true;
    return false;
}

/* True when some owned core is free or can take a pending task, or is a
 * core a step may start (never asked, dispatch.c). A core loop asked to
 * start that has not joined yet is no room: it kicks a step once it has
 * (core_loop.c). */
static bool has_room(const struct sched *S)
{
    for (uint32_t i = 0; i < S->core_count; i++)
        if (sched_core_free(&S->cores[i]) || sched_core_can_queue(&S->cores[i]) ||
            (S->cores[i].waiting && !S->cores[i].asked))
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
    uint32_t short_tasks = sched_tasks_short(S);
    if (atomic_load_explicit(&R->short_tasks, memory_order_relaxed) != short_tasks)
        atomic_store_explicit(&R->short_tasks, short_tasks, memory_order_relaxed);
    if (has_room(S) || S->core_count == 0) {
        atomic_store_explicit(&R->room, 1, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&R->room, 0, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    (void)queues_maybe_nonempty(S->run); /* the look the fence orders: see above */
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
 * pending form a Dekker pair (as rt_ring_advance's in ring.c): either the
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
            rt_sched_step(&R->state);
            publish_room(R);
            completed |= R->state.completions != before;
        }
        atomic_store_explicit(&R->token, 0, memory_order_seq_cst);
        if (!atomic_exchange_explicit(&R->pending, 0, memory_order_seq_cst))
            return completed;
    }
}

/* Every scheduler of the run, as a kick_set mask (bit i = scheduler i). */
static uint32_t all_schedulers(const struct rt_run *run)
{
    return run->schedulers >= 32 ? UINT32_MAX : (1u << run->schedulers) - 1;
}

/* Kicks every scheduler in `mask` (bit i = scheduler i). A completion by one
 * scheduler's step may make tasks ready that only another's cores can run,
 * so each completing step adds the others back: the loop ends once a round
 * of steps completes nothing, which every run reaches (completions are
 * finite). */
static void kick_set(struct rt_run *run, uint32_t mask)
{
    uint32_t all = all_schedulers(run);
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

void rt_sched_kick_all(struct rt_run *run)
{
    kick_set(run, all_schedulers(run));
}

bool rt_sched_left(struct rt_run *run, uint32_t index)
{
    /* acquire: pairs with the CAS in rt_sched_leave_to_watcher */
    return atomic_load_explicit(&run->scheds[index].fate, memory_order_acquire) == FATE_LEFT;
}

bool rt_sched_leave_to_watcher(struct rt_run *run, uint32_t index)
{
    uint32_t open = FATE_OPEN;
    /* acq_rel: the watcher that sees FATE_LEFT sees the handshake's state */
    return atomic_compare_exchange_strong_explicit(&run->scheds[index].fate, &open, FATE_LEFT,
                                                   memory_order_acq_rel, memory_order_acquire);
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
 * backlog has aged (rt_sched_wake_parked).
 */
static bool core_will_fetch(struct rt_run *run, const struct rt_slot *s)
{
    if (!rt_slot_plain(s))
        return false;
    for (uint32_t i = 0; i < run->schedulers && i < 32; i++)
        if (!atomic_load_explicit(&run->scheds[i].short_tasks, memory_order_relaxed))
            return false; /* a parked core may be worth waking now: the step decides */
    return rt_fetcher_awake(run, s->shape == RT_SHAPE_AIC ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV,
                            UINT32_MAX);
}

void rt_sched_publish(struct rt_run *run, const struct rt_slot *s)
{
    rt_sched_publish_batch(run, s, true);
}

void rt_sched_publish_batch(struct rt_run *run, const struct rt_slot *first, bool alike)
{
    platform_mark(SIMDEV_POINT_SUBMIT);
    /* seq_cst fence, one for both looks: the pushes before the looks at
     * the cores (core_will_fetch) and at room (kick_with_room) */
    atomic_thread_fence(memory_order_seq_cst);
    if (alike && core_will_fetch(run, first))
        return;
    kick_with_room(run);
}

/* Takes the token for good (the exit, the watchdog's verdict): marks the
 * scheduler closed so later kicks do nothing, then waits for a step in
 * progress to end. A step never blocks, so the wait is short; it yields
 * the CPU because its holder may be a preempted device thread. */
static void token_close(struct rt_sched *R)
{
    atomic_store_explicit(&R->closed, 1, memory_order_seq_cst);
    for (uint32_t i = 0; !token_try(R); i++) {
        if (i & 63)
            rt_cpu_relax();
        else
            sched_yield();
    }
}

struct sched *rt_sched_state(struct rt_run *run, uint32_t index)
{
    return &run->scheds[index].state;
}

void rt_sched_open(struct rt_run *run, uint32_t index)
{
    struct rt_sched *R = &run->scheds[index];
    /* Let go of the token; a kick that came meanwhile left a note. */
    atomic_store_explicit(&R->token, 0, memory_order_seq_cst);
    if (atomic_exchange_explicit(&R->pending, 0, memory_order_seq_cst))
        rt_sched_kick(run, index);
}

void rt_sched_close_unopened(struct rt_run *run, uint32_t index)
{
    atomic_store_explicit(&run->scheds[index].closed, 1, memory_order_seq_cst);
    /* no step will run: a submit need not kick it (kick_with_room) */
    atomic_store_explicit(&run->scheds[index].room, 0, memory_order_relaxed);
}

void rt_sched_close(struct rt_run *run, uint32_t index)
{
    token_close(&run->scheds[index]);
}

bool rt_sched_take_over(struct rt_run *run, uint32_t index)
{
    uint32_t open = FATE_OPEN;
    if (atomic_compare_exchange_strong_explicit(&run->scheds[index].fate, &open, FATE_TAKEN,
                                                memory_order_acq_rel, memory_order_acquire))
        return false; /* its thread has not opened it: it ends its own cores */
    token_close(&run->scheds[index]);
    return true;
}
