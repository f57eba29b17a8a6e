/*
 * runtime/task.c — the life of a task after it is published.
 *
 * Owns: the per-slot spinlock, the holder counting that decides when a task
 * is CONSUMED, completion (consumers made ready, producers released) and
 * the route to the ready queues; a consumed task goes to its ring's
 * retirement (ring.c). Called from the orchestrator
 * (scope end, wiring) and the schedulers (completion); every entry point is
 * safe from any of those threads. The invariant checks of a slot's life
 * (runtime/invariants.h) live here too. Must not allocate: that is the
 * orchestrator's (orchestrator.c, ring.c).
 */
#include "common/task_id.h"
#include "platform/platform.h"
#include "runtime/hbg_boot.h"
#include "runtime/invariants.h"
#include "runtime/cpu.h"
#include "runtime/layout.h"
#include "runtime/ready_queue.h"
#include "runtime/ring.h"
#include "runtime/run.h"
#include "runtime/task.h"
#include "runtime/wait.h"

void rt_slot_lock(struct rt_slot *s)
{
    for (;;) {
        uint32_t expected = 0;
        /* acquire: pairs with the release in rt_slot_unlock */
        if (atomic_compare_exchange_weak_explicit(&s->lock, &expected, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
        while (atomic_load_explicit(&s->lock, memory_order_relaxed))
            rt_cpu_relax();
    }
}

/* True while somebody holds the lock of `s` (for the unlock's check). */
static inline bool slot_locked(const struct rt_slot *s)
{
    return atomic_load_explicit(&s->lock, memory_order_relaxed) == 1;
}

void rt_slot_unlock(struct rt_slot *s)
{
    /* Every change of a lock field (here, wiring, completion) ends here,
     * with the lock still held: the holder owns what rt_slot_check reads. */
    RT_ASSERT_INVARIANT(slot_locked(s) && rt_slot_check(s));
    atomic_store_explicit(&s->lock, 0, memory_order_release);
}

void rt_slot_release(struct rt_run *run, struct rt_slot *s)
{
    uint32_t ring = s->ring;
    if (rt_slot_drop(s))
        rt_ring_advance(run, ring);
}

bool rt_slot_drop(struct rt_slot *s)
{
    bool consumed = false;
    rt_slot_lock(s);
    s->fanout_released++;
    if (!s->closed && s->fanout_released == s->fanout_count &&
        atomic_load_explicit(&s->state, memory_order_relaxed) == RT_COMPLETED) {
        s->closed = 1;
        consumed = true;
    }
    rt_slot_unlock(s);
    if (!consumed)
        return false;
    /* After this store the slot belongs to the ring: it may be retired and
     * reused at once, so it is the last touch of `s` (the unlock above had
     * to come first). */
    atomic_store_explicit(&s->state, RT_CONSUMED, memory_order_release);
    return true;
}

static inline struct rt_dep *dep_at(struct rt_run *run, uint64_t handle)
{
    uint64_t h = handle - 1;
    struct rt_ring *r = &run->rings[rt_id_ring(h)];
    return &r->deps[rt_id_local(h) % r->dep_capacity];
}

void rt_task_ready(struct rt_run *run, struct rt_slot *s)
{
    RT_ASSERT_INVARIANT(rt_slot_may_be_ready(s));
    bool queued = rt_rq_push(s->sync_start && s->shape != RT_SHAPE_DUMMY
                                 ? &run->sync_ready[s->shape]
                                 : &run->ready[s->shape],
                             s);
    /* Never full: a queue has a cell for every live task (rt_layout_compute),
     * and a task is in at most one queue at a time. */
    RT_ASSERT_INVARIANT(queued);
    /* Nobody is woken: the thread that made the task ready kicks the
     * schedulers (the orchestrator after a submit, rt_sched_kick), or is
     * itself inside a scheduler's step, which dispatches it. */
}

/* True when `s` may wait in a step's released list rather than a queue. */
static bool keep_released(const struct rt_slot *s, const struct rt_released *released)
{
    return released && released->count < RT_RELEASED_MAX && rt_slot_plain(s);
}

void rt_task_route(struct rt_run *run, struct rt_slot *s, struct rt_released *released)
{
    if (keep_released(s, released))
        released->slot[released->count++] = s;
    else
        rt_task_ready(run, s);
}

bool rt_task_complete(struct rt_run *run, struct rt_slot *s, struct rt_released *released)
{
    platform_mark(SIMDEV_POINT_COMPLETE);
    /* The run's config, read-only after init: not hbg_producers, whose line
     * the orchestrator writes at every submit of a TMR run. */
    if (run->config.runtime == RT_RUNTIME_HBG)
        return rt_hbg_complete(run, s, released); /* a host-built graph: no fan-out lists */
    rt_slot_lock(s);
    RT_ASSERT_INVARIANT(rt_slot_may_complete(s));
    /* release: a consumer wiring later sees COMPLETED under the lock and
     * counts this producer as done; the orchestrator's element reads
     * acquire it before touching the outputs. */
    atomic_store_explicit(&s->state, RT_COMPLETED, memory_order_release);
    uint64_t head = s->fanout_head;
    s->fanout_head = 0;
    rt_slot_unlock(s);

    for (uint64_t pos = head; pos;) {
        struct rt_dep *d = dep_at(run, pos);
        pos = d->next; /* read before the consumer may run and retire */
        struct rt_slot *consumer = d->slot;
        /* acq_rel: the last decrement sees every producer's writes */
        int32_t waiting =
            atomic_fetch_sub_explicit(&consumer->fanin_pending, 1, memory_order_acq_rel);
        /* >= 1: the consumer counted this producer (wire) and is not
         * ready yet; 0 would make it ready twice */
        RT_ASSERT_INVARIANT(waiting >= 1);
        if (waiting != 1)
            continue;
        rt_task_route(run, consumer, released);
    }

    struct rt_task *t = rt_slot_task(run, s);
    for (uint64_t pos = t->fanin_head; pos;) {
        struct rt_dep *d = dep_at(run, pos);
        pos = d->next;
        rt_slot_release(run, d->slot);
    }
    bool ended = rt_run_count_completion(run);
    atomic_thread_fence(memory_order_seq_cst); /* as in rt_ring_advance */
    /* acquire: the target stored before orch_waiting (rt_orch_block_for). A wait
     * for task slots is ended by retirement alone: no signal per task. */
    if (atomic_load_explicit(&run->orch_waiting, memory_order_acquire) &&
        atomic_load_explicit(&run->orch_wait_target, memory_order_relaxed) == 0)
        rt_signal_orch(run);
    rt_slot_release(run, s); /* the completion hold */
    return ended;
}

/* ------------------------------------------------------------ invariants */

/* The lanes a task of `shape` runs on, as check_submit derives the shape
 * from them (a lone AIV1 kernel is moved to AIV0, so lanes never is
 * AIV1 alone). */
static bool lanes_match_shape(uint32_t shape, uint32_t lanes)
{
    switch (shape) {
    case RT_SHAPE_DUMMY:
        return lanes == 0;
    case RT_SHAPE_AIC:
        return lanes == RT_LANE_AIC;
    case RT_SHAPE_AIV:
        return lanes == RT_LANE_AIV0;
    case RT_SHAPE_MIX:
        return lanes <= (RT_LANE_AIC | RT_LANE_AIV0 | RT_LANE_AIV1) && lanes != 0 &&
               lanes != RT_LANE_AIC && lanes != RT_LANE_AIV0 && lanes != RT_LANE_AIV1;
    }
    return false;
}

/* What init_slot wrote at submit, which nobody changes until the slot is
 * reused: the ring (also in the id's top bits), a shape its lanes agree
 * with, at least one block, one subtask per block and lane (none for a
 * dummy task, which no core runs), a scope depth inside the stack. Only
 * completed_subtasks moves (the schedulers count finished blocks), and
 * never past the total. */
static bool submitted_shape_ok(const struct rt_slot *s)
{
    uint64_t id = atomic_load_explicit(&s->task_id, memory_order_relaxed);
    uint32_t lanes = (uint32_t)__builtin_popcount(s->lanes);
    uint64_t total = s->shape == RT_SHAPE_DUMMY ? 0 : (uint64_t)s->block_num * lanes;
    return s->ring < RT_RINGS && rt_id_ring(id) == s->ring && s->shape < RT_SHAPES &&
           lanes_match_shape(s->shape, s->lanes) && s->block_num >= 1 &&
           s->total_subtasks == total &&
           atomic_load_explicit(&s->completed_subtasks, memory_order_relaxed) <=
               s->total_subtasks &&
           s->scope_depth < SIMPLER_SCOPE_MAX_DEPTH;
}

/*
 * The holds and the state (the consumed rule, task.h), as the lock holder
 * sees them:
 * - the state is PENDING, COMPLETED or CONSUMED;
 * - fanout_count >= 2: it starts at the scope's hold and the completion
 *   hold and only grows (a consumer's hold);
 * - fanout_released <= fanout_count: each holder releases once;
 * - PENDING: fewer released than counted (the completion hold is
 *   released only after COMPLETED is stored);
 * - closed exactly when the task is COMPLETED (or CONSUMED) and every
 *   hold is released: the release that makes it so closes it in the same
 *   critical section; CONSUMED, stored by the closer, only once closed;
 * - no consumer list once COMPLETED: completion takes it under the lock,
 *   and wiring adds to it only while the producer is PENDING;
 * - fanin_pending >= 0: one decrement per producer counted, one at
 *   publication.
 * fanin_pending and fanin_count count different producers (those waited
 * for: not yet complete; those held: with outputs in the heap), so there
 * is no bound between them. State changes to COMPLETED only under the
 * lock, and to CONSUMED only once closed, when no holder is left to take
 * the lock: under it, the state is stable.
 */
bool rt_slot_check(const struct rt_slot *s)
{
    uint32_t state = atomic_load_explicit(&s->state, memory_order_relaxed);
    if (state > RT_CONSUMED || s->fanout_count < 2 || s->fanout_released > s->fanout_count ||
        s->closed > 1)
        return false;
    bool all_released = s->fanout_released == s->fanout_count;
    if (state == RT_PENDING && all_released)
        return false;
    if (s->closed != (state != RT_PENDING && all_released) || (state == RT_CONSUMED && !s->closed))
        return false;
    if (state != RT_PENDING && s->fanout_head != 0)
        return false;
    return atomic_load_explicit(&s->fanin_pending, memory_order_relaxed) >= 0 &&
           submitted_shape_ok(s);
}

/* Made ready by the last fan-in decrement (submit's or a producer's
 * completion), or placed from a step's released list: PENDING, no
 * producer left, and nobody has claimed or finished a block, since only a
 * thread that took the task from a queue or a released list does. */
bool rt_slot_may_be_ready(const struct rt_slot *s)
{
    return atomic_load_explicit(&s->state, memory_order_relaxed) == RT_PENDING &&
           atomic_load_explicit(&s->fanin_pending, memory_order_relaxed) == 0 &&
           atomic_load_explicit(&s->next_block, memory_order_relaxed) == 0 &&
           atomic_load_explicit(&s->completed_subtasks, memory_order_relaxed) == 0;
}

/* Completed once, by the thread that counted its last subtask (a dummy
 * task, which has none, by the scheduler that popped it): PENDING until
 * now, made ready before it ran, every block claimed (a dummy task has no
 * block to claim) and every subtask finished. The acq_rel count of the
 * last subtask orders every claim and finish before these loads. */
bool rt_slot_may_complete(const struct rt_slot *s)
{
    return atomic_load_explicit(&s->state, memory_order_relaxed) == RT_PENDING &&
           atomic_load_explicit(&s->fanin_pending, memory_order_relaxed) == 0 &&
           atomic_load_explicit(&s->completed_subtasks, memory_order_relaxed) ==
               s->total_subtasks &&
           (s->shape == RT_SHAPE_DUMMY ||
            atomic_load_explicit(&s->next_block, memory_order_relaxed) >= s->block_num);
}
