/*
 * runtime/task.c — the life of a task after it is published.
 *
 * Owns: the per-slot spinlock, the holder counting that decides when a task
 * is CONSUMED, completion (consumers made ready, producers released) and
 * the route to the ready queues; a consumed task goes to its ring's
 * retirement (ring.c). Called from the orchestrator
 * (scope end, wiring) and the schedulers (completion); every entry point is
 * safe from any of those threads. Must not allocate: that is the
 * orchestrator's (orchestrator.c, ring.c).
 */
#include "common/task_id.h"
#include "platform/platform.h"
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

void rt_slot_unlock(struct rt_slot *s)
{
    atomic_store_explicit(&s->lock, 0, memory_order_release);
}

void rt_signal(struct rt_run *run)
{
    platform_cond_signal(run->device);
    platform_notify_signal(run->device, RT_NOTIFY_SCHED);
}

void rt_signal_orch(struct rt_run *run)
{
    platform_notify_signal(run->device, RT_NOTIFY_ORCH);
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
    rt_rq_push(s->sync_start && s->shape != RT_SHAPE_DUMMY ? &run->sync_ready[s->shape]
                                                           : &run->ready[s->shape],
               s);
    /* Nobody is woken: the thread that made the task ready kicks the
     * schedulers (the orchestrator after a submit, rt_sched_kick), or is
     * itself inside a scheduler's step, which dispatches it. */
}

/* True when `s` may wait in a step's released list rather than a queue. */
static bool keep_released(const struct rt_slot *s, const struct rt_released *released)
{
    return released && released->count < RT_RELEASED_MAX && !s->sync_start &&
           s->block_num == 1 && (s->shape == RT_SHAPE_AIC || s->shape == RT_SHAPE_AIV);
}

void rt_task_complete(struct rt_run *run, struct rt_slot *s, struct rt_released *released)
{
    rt_slot_lock(s);
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
        if (atomic_fetch_sub_explicit(&consumer->fanin_pending, 1, memory_order_acq_rel) != 1)
            continue;
        if (keep_released(consumer, released))
            released->slot[released->count++] = consumer;
        else
            rt_task_ready(run, consumer);
    }

    struct rt_task *t = rt_slot_task(run, s);
    for (uint64_t pos = t->fanin_head; pos;) {
        struct rt_dep *d = dep_at(run, pos);
        pos = d->next;
        rt_slot_release(run, d->slot);
    }
    /* seq_cst: pairs with run_finished (scheduler.c) — either the
     * scheduler's own thread sees this completion, or we see orch_done and
     * wake it for the run's end. */
    uint64_t completed =
        atomic_fetch_add_explicit(&run->tasks_completed, 1, memory_order_seq_cst) + 1;
    if (atomic_load_explicit(&run->orch_done, memory_order_seq_cst) &&
        completed == atomic_load_explicit(&run->tasks_submitted, memory_order_acquire))
        rt_signal(run);
    atomic_thread_fence(memory_order_seq_cst); /* as in ring_advance */
    /* acquire: the target stored before orch_waiting (orch_block). A wait
     * for task slots is ended by retirement alone: no signal per task. */
    if (atomic_load_explicit(&run->orch_waiting, memory_order_acquire) &&
        atomic_load_explicit(&run->orch_wait_target, memory_order_relaxed) == 0)
        rt_signal_orch(run);
    rt_slot_release(run, s); /* the completion hold */
}
