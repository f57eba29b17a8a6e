/*
 * runtime/task.c — the life of a task after it is published.
 *
 * Owns: the per-slot spinlock, the holder counting that decides when a task
 * is CONSUMED, completion (consumers made ready, producers released), the
 * route to the ready queues, and in-order retirement of each ring (the
 * tails the orchestrator allocates against). Called from the orchestrator
 * (scope end, wiring) and the schedulers (completion); every entry point is
 * safe from any of those threads. Must not allocate: that is the
 * orchestrator's (orchestrator.c).
 */
#include "runtime/rt.h"

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
    simdev_cond_signal(run->device);
    simdev_notify_signal(run->device, RT_NOTIFY_SCHED);
}

void rt_signal_orch(struct rt_run *run)
{
    simdev_notify_signal(run->device, RT_NOTIFY_ORCH);
}

bool rt_task_retired(struct rt_run *run, uint64_t id)
{
    struct rt_ring *r = &run->rings[rt_id_ring(id)];
    /* acquire: pairs with the release of last_alive in ring_advance */
    return rt_id_local(id) < atomic_load_explicit(&r->last_alive, memory_order_acquire);
}

/* After a fence that follows this ring's new last_alive `alive`: true when
 * a blocked orchestrator should be woken — it waits for anything (target
 * 0), or for slots of this ring that `alive` now provides. A slot wait on
 * another ring, or one this retirement does not satisfy, is left asleep:
 * a full window would otherwise wake it once per retired task. */
static bool orch_wants_retirement(struct rt_run *run, uint32_t ring, uint64_t alive)
{
    /* acquire: pairs with the release store of orch_waiting, after the
     * target (orch_block) */
    if (!atomic_load_explicit(&run->orch_waiting, memory_order_acquire))
        return false;
    uint64_t target = atomic_load_explicit(&run->orch_wait_target, memory_order_relaxed);
    if (target == 0)
        return true;
    if ((target >> RT_LOCAL_BITS) != (uint64_t)ring + 1)
        return false;
    return alive >= rt_id_local(target);
}

/*
 * Walks the ring's tail over consecutive CONSUMED tasks and publishes the
 * new tails. One thread advances at a time; a thread that finds the lock
 * taken leaves a note (advance_pending) that the holder re-checks after
 * unlocking, so no consumed task is left unretired. The seq_cst accesses
 * to advance_lock and advance_pending form a Dekker pair: either the holder
 * sees the note or the noter sees the lock free and advances itself.
 */
static void ring_advance(struct rt_run *run, struct rt_ring *r, uint32_t ring_index)
{
    for (;;) {
        uint32_t expected = 0;
        if (!atomic_compare_exchange_strong_explicit(&r->advance_lock, &expected, 1,
                                                     memory_order_seq_cst,
                                                     memory_order_seq_cst)) {
            atomic_store_explicit(&r->advance_pending, 1, memory_order_seq_cst);
            if (atomic_load_explicit(&r->advance_lock, memory_order_seq_cst))
                return;
            continue;
        }
        atomic_store_explicit(&r->advance_pending, 0, memory_order_seq_cst);
        uint64_t alive = atomic_load_explicit(&r->last_alive, memory_order_relaxed);
        uint64_t start = alive;
        uint64_t heap_tail = 0, dep_tail = 0;
        for (;;) {
            struct rt_slot *s = &r->slots[alive & r->mask];
            /* The id first (acquire: pairs with the release in init_slot,
             * which comes after the state reset), then the state: seeing
             * this task's id guarantees seeing its own state, never the
             * CONSUMED left by the slot's previous task. */
            if (atomic_load_explicit(&s->task_id, memory_order_acquire) !=
                rt_task_id(ring_index, alive))
                break;
            /* acquire: pairs with the release store of CONSUMED in
             * rt_slot_release, after which nobody touches the task */
            if (atomic_load_explicit(&s->state, memory_order_acquire) != RT_CONSUMED)
                break;
            struct rt_task *t = &r->tasks[alive & r->mask];
            heap_tail = t->heap_end;
            dep_tail = t->dep_end;
            alive++;
        }
        if (alive != start) {
            atomic_store_explicit(&r->heap_tail, heap_tail, memory_order_release);
            atomic_store_explicit(&r->dep_tail, dep_tail, memory_order_release);
            /* release: pairs with the acquire loads of last_alive by the
             * orchestrator (allocation, rt_task_retired) — the slots below
             * it are free to reuse */
            atomic_store_explicit(&r->last_alive, alive, memory_order_release);
        }
        atomic_store_explicit(&r->advance_lock, 0, memory_order_seq_cst);
        /* seq_cst fence: the new tails before the look at orch_waiting,
         * pairing with the orchestrator's seq_cst store of orch_waiting
         * before its last look at the tails (orch_block) */
        atomic_thread_fence(memory_order_seq_cst);
        if (alive != start && orch_wants_retirement(run, ring_index, alive))
            rt_signal_orch(run);
        if (!atomic_exchange_explicit(&r->advance_pending, 0, memory_order_seq_cst))
            return;
    }
}

void rt_slot_release(struct rt_run *run, struct rt_slot *s)
{
    uint32_t ring = s->ring;
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
        return;
    /* After this store the slot belongs to the ring: it may be retired and
     * reused at once, so it is the last touch of `s` (the unlock above had
     * to come first). */
    atomic_store_explicit(&s->state, RT_CONSUMED, memory_order_release);
    ring_advance(run, &run->rings[ring], ring);
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
