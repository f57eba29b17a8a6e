/*
 * runtime/ring.c — the ring sets: task windows, output heaps, dependency
 * pools.
 *
 * Owns: a ring's initialisation for a run, reservation at the heads with
 * back-pressure and the waits that can never succeed (the orchestrator's),
 * in-order retirement at the tails (whoever releases a task's last hold),
 * and the wake protocol between them: the orchestrator blocks in
 * rt_orch_block_for, naming what it waits for (orch_wait_target), and a
 * retirement or completion signals it only when that is what it waits for.
 * The heads are the orchestrator's alone (no atomics); the tails are
 * published by the holder of advance_lock. The invariant checks of a ring
 * (runtime/invariants.h) live here too. Must not decide when a task is
 * consumed (task.c) or what a submit needs (orchestrator.c).
 */
#include "common/task_id.h"
#include "platform/platform.h"
#include "runtime/invariants.h"
#include "runtime/layout.h"
#include "runtime/orchestrator.h"
#include "runtime/ring.h"
#include "runtime/run.h"
#include "runtime/runtime.h"
#include "runtime/scope.h"
#include "runtime/task.h"
#include "runtime/wait.h"
#include "simpler/status.h"

void rt_ring_init(struct rt_ring *r, const struct rt_config *config, uint32_t i, uint8_t *base,
                  const struct rt_layout *l)
{
    r->window = config->task_window[i];
    r->mask = r->window - 1;
    r->heap_bytes = config->heap_bytes[i];
    r->dep_capacity = config->dep_pool[i];
    r->slots = (struct rt_slot *)(base + l->ring_slots[i]);
    r->tasks = (struct rt_task *)(base + l->ring_tasks[i]);
    /* NULL in an HBG device arena, which lays neither out (layout.h) */
    r->tm = l->ring_tm[i] ? (struct rt_tm_record *)(base + l->ring_tm[i]) : NULL;
    r->heap = base + l->ring_heap[i];
    r->deps = l->ring_deps[i] ? (struct rt_dep *)(base + l->ring_deps[i]) : NULL;
    r->next_local = r->heap_head = r->heap_floor = r->dep_head = 0;
    r->alive_seen = r->heap_tail_seen = r->dep_tail_seen = 0;
    atomic_init(&r->last_alive, 0);
    atomic_init(&r->heap_tail, 0);
    atomic_init(&r->dep_tail, 0);
    atomic_init(&r->advance_lock, 0);
    atomic_init(&r->advance_pending, 0);
    r->slots_clean = 0;
    rt_ring_take_slot(r, UINT64_MAX); /* slot 0: rt_ring_advance may look at it now */
    RT_ASSERT_INVARIANT(rt_ring_check(r));
}

/* Slots cleaned at a time (64 B each): a run pays for the slots its rings
 * use, not for their windows (4 rings of 4096 slots: 1 MiB per run). The
 * first batch of a ring is RT_CLEAN_FIRST slots and each later one as many
 * as are clean already, up to RT_CLEAN_BATCH: a run of a few tasks cleans
 * a few lines per ring, not 64 (measured: a 20-task host build spent 7 us
 * of its 50 writing 256 slot lines its caches had lost, 4 rings x 64). */
#define RT_CLEAN_FIRST 8u
#define RT_CLEAN_BATCH 64u

/*
 * The first lap of a run's ring finds its slots as an earlier run of the
 * arena left them, and rt_ring_advance walks the ring until a slot whose id is
 * not the next task's: a slot not taken yet in this run must hold an id
 * that matches no task (an earlier run's task ids are this run's too).
 * rt_ring_advance reads slot `local + 1` only after the task in `local` is
 * CONSUMED, which follows its publication: cleaning before the slot
 * before it is published orders the clean first. The rest of a slot is
 * reset when it is taken (init_slot). `local` UINT64_MAX: before slot 0.
 */
void rt_ring_take_slot(struct rt_ring *r, uint64_t local)
{
    uint64_t next = local + 1; /* wraps to 0 for UINT64_MAX */
    RT_ASSERT_INVARIANT(next == r->next_local); /* the slot the orchestrator just counted */
    if (next >= r->slots_clean && r->slots_clean < r->window) {
        uint64_t batch = r->slots_clean < RT_CLEAN_FIRST   ? RT_CLEAN_FIRST
                         : r->slots_clean < RT_CLEAN_BATCH ? r->slots_clean
                                                           : RT_CLEAN_BATCH;
        uint64_t end = next + batch < r->window ? next + batch : r->window;
        for (uint64_t s = r->slots_clean; s < end; s++)
            atomic_store_explicit(&r->slots[s].task_id, UINT64_MAX, memory_order_relaxed);
        r->slots_clean = end;
    }
    RT_ASSERT_INVARIANT(rt_ring_check(r));
}

/* --------------------------------------------------------- retirement */

bool rt_task_retired(struct rt_run *run, uint64_t id)
{
    struct rt_ring *r = &run->rings[rt_id_ring(id)];
    /* acquire: pairs with the release of last_alive in rt_ring_advance */
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
     * target (rt_orch_block_for) */
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
void rt_ring_advance(struct rt_run *run, uint32_t ring_index)
{
    struct rt_ring *r = &run->rings[ring_index];
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
            RT_ASSERT_INVARIANT(rt_ring_check_retirement(r, alive, heap_tail, dep_tail));
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
         * before its last look at the tails (rt_orch_block_for) */
        atomic_thread_fence(memory_order_seq_cst);
        if (alive != start && orch_wants_retirement(run, ring_index, alive))
            rt_signal_orch(run);
        if (!atomic_exchange_explicit(&r->advance_pending, 0, memory_order_seq_cst))
            return;
    }
}

/* ------------------------------------------------ the orchestrator's wait */

/* A measure that grows whenever any task retires or completes: the
 * watchdog restarts on every change. */
static uint64_t progress_mark(struct rt_run *run)
{
    uint64_t mark = atomic_load_explicit(&run->tasks_completed, memory_order_acquire);
    for (uint32_t i = 0; i < RT_RINGS; i++)
        mark += atomic_load_explicit(&run->rings[i].last_alive, memory_order_acquire);
    return mark;
}


struct orch_wait {
    struct rt_run *run;
    rt_orch_ready_fn ready;
    void *arg;
    int32_t (*structural)(struct rt_run *, void *);
    uint64_t timeout_ns;
    uint64_t mark;     /* the watchdog's progress mark */
    uint64_t deadline; /* restarted by progress */
    int rc;            /* what ended the wait, when not ready() */
};

/* Done when the run failed (rc = its error), the condition holds, or the
 * wait can never succeed (rc = the structural code, latched); a change of
 * the progress mark restarts the deadline. */
static bool orch_wait_done(void *arg)
{
    struct orch_wait *w = arg;
    struct rt_run *run = w->run;
    /* The error after the sequence (read by rt_wait_until): rt_fail
     * latches it before its signal, so either we see it here or the signal
     * ends the sleep (a failed run never makes ready() true). */
    if (rt_error(run)) {
        w->rc = -rt_error(run);
        return true;
    }
    if (w->ready(run, w->arg))
        return true;
    if (w->structural) {
        int32_t code = w->structural(run, w->arg);
        if (code) {
            w->rc = rt_fail_negated(run, code);
            return true;
        }
    }
    uint64_t m = progress_mark(run);
    if (m != w->mark) {
        w->mark = m;
        w->deadline = platform_clock_ns() + w->timeout_ns;
    }
    return false;
}

/*
 * Blocks until ready(run, arg). Returns 0; the latched error when the run
 * fails meanwhile (negated); or -timeout_code after timeout_ms without any
 * task completing or retiring. `structural`, when not NULL, is asked on
 * every round whether the wait can never succeed and returns the code to
 * fail with at once (0 = keep waiting). Who ends the wait: a completion or
 * retirement that the waker sees wanted (orch_wait_target, task.c), a
 * failure (rt_fail signals), the watchdog, a lost device.
 */
int rt_orch_block_for(struct rt_run *run, rt_orch_ready_fn ready, void *arg,
                          int32_t (*structural)(struct rt_run *, void *), uint32_t timeout_ms,
                          int32_t timeout_code, int32_t never_code, uint64_t target)
{
    if (run->hbg)
        return rt_fail_negated(run, never_code); /* nothing completes in a host build */
    rt_orch_goes_on(run); /* what this waits for may be an owed core's task */
    rt_orch_start_schedulers(run); /* or need a scheduler to end */
    atomic_store_explicit(&run->orch_wait_target, target, memory_order_relaxed);
    /* Announce the wait, then fence (seq_cst), then look (every look of
     * rt_wait_until comes after): pairs with the fences in task.c between a
     * waker's state change and its look at orch_waiting — either it sees
     * us waiting and signals, or we see its change. */
    /* release: wakers that see us waiting see the target too */
    atomic_store_explicit(&run->orch_waiting, 1, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    struct orch_wait w = {run, ready, arg, structural, (uint64_t)timeout_ms * 1000000ull,
                          progress_mark(run), 0, 0};
    w.deadline = platform_clock_ns() + w.timeout_ns;
    int rc = rt_wait_until(run->device, RT_NOTIFY_ORCH, orch_wait_done, &w, &w.deadline);
    if (rc == PTO_RUNTIME_ERR_TIMEOUT)
        rc = rt_fail_negated(run, timeout_code);
    else if (rc == PTO_RUNTIME_ERR_DEVICE_LOST)
        rc = rt_fail_negated(run, SIMPLER_ORCH_ERR_RING_TIMEOUT);
    else
        rc = w.rc;
    atomic_store_explicit(&run->orch_waiting, 0, memory_order_relaxed);
    atomic_store_explicit(&run->orch_wait_target, 0, memory_order_relaxed);
    return rc;
}

/* rt_orch_block_for woken by any completion or retirement. */
int rt_orch_block(struct rt_run *run, rt_orch_ready_fn ready, void *arg,
                      int32_t (*structural)(struct rt_run *, void *), uint32_t timeout_ms,
                      int32_t timeout_code, int32_t never_code)
{
    return rt_orch_block_for(run, ready, arg, structural, timeout_ms, timeout_code, never_code,
                             0);
}

/* -------------------------------------------------------- reservation */


/* True when the task `oldest` of the ring is pinned by a scope that is
 * still open. Such a task cannot be consumed until the orchestrator (who
 * is asking) closes that scope, and since retirement is in order nothing
 * after it can be reclaimed either: a full ring stays full. `oldest` must
 * be one snapshot of last_alive; a pinned task is never retired, so the
 * snapshot stays the ring's oldest for as long as the answer is true. */
static bool pinned_at(struct rt_run *run, struct rt_ring *r, uint32_t ring, uint64_t oldest)
{
    if (oldest == r->next_local)
        return false;
    struct rt_slot *s = &r->slots[oldest & r->mask];
    if (atomic_load_explicit(&s->task_id, memory_order_relaxed) != rt_task_id(ring, oldest))
        return false;
    return rt_scope_open(run, s);
}

struct alloc_req {
    uint32_t ring;
    uint32_t want;      /* free task slots to wait for (>= 1) */
    uint64_t heap_need;
    uint64_t heap_pos; /* out: where the outputs go */
};

/*
 * The reservations below first try the tails they read last (the *_seen
 * fields: tails only grow, so an old one can only understate the room),
 * and read the tails the retiring cores write only when that is not
 * enough: a roomy ring costs a submit no cache line from another CPU.
 * The acquire that read an old tail already ordered every retirement up to
 * it before this thread's reuse of the space.
 */
static bool slot_free(struct rt_run *run, void *arg)
{
    struct alloc_req *q = arg;
    struct rt_ring *r = &run->rings[q->ring];
    if (r->window - (r->next_local - r->alive_seen) >= q->want)
        return true;
    /* acquire: pairs with the release of last_alive in rt_ring_advance */
    r->alive_seen = atomic_load_explicit(&r->last_alive, memory_order_acquire);
    RT_ASSERT_INVARIANT(rt_ring_check(r));
    return r->window - (r->next_local - r->alive_seen) >= q->want;
}

/*
 * How many free slots a blocked submit waits for: a quarter of the window
 * (hysteresis: the orchestrator then submits that many tasks without
 * blocking, instead of waking once per retired task while the schedulers
 * retire one at a time), but never more than retirement can provide while
 * the orchestrator waits — slots from the oldest task pinned by an open
 * scope on this ring onwards stay taken until it closes that scope.
 */
static uint32_t slots_to_wait_for(struct rt_run *run, struct rt_ring *r, uint32_t ring)
{
    uint64_t pinned_from = r->next_local;
    for (uint32_t d = 0; d < run->scope_depth; d++) {
        if (rt_ring_of_depth(d) != ring)
            continue;
        uint32_t end = d + 1 < run->scope_depth ? run->scopes[d + 1].begin : run->scope_task_top;
        if (end > run->scopes[d].begin) {
            uint64_t id = atomic_load_explicit(&run->scope_tasks[run->scopes[d].begin]->task_id,
                                               memory_order_relaxed);
            pinned_from = rt_id_local(id);
            break;
        }
    }
    uint64_t freeable = r->window - (r->next_local - pinned_from);
    uint64_t want = r->window / 4;
    if (want > freeable)
        want = freeable;
    return want ? (uint32_t)want : 1;
}

static int32_t slot_structural(struct rt_run *run, void *arg)
{
    struct alloc_req *q = arg;
    struct rt_ring *r = &run->rings[q->ring];
    uint64_t oldest = atomic_load_explicit(&r->last_alive, memory_order_acquire);
    if (r->next_local - oldest < r->window)
        return 0; /* a slot freed since the last look */
    return pinned_at(run, r, q->ring, oldest) ? SIMPLER_ORCH_ERR_TASK_WINDOW_DEADLOCK : 0;
}

/* Where `need` bytes go at the heap's head with `tail` as the tail: false
 * when they do not fit. */
static bool heap_room(const struct rt_ring *r, uint64_t tail, uint64_t need, uint64_t *at)
{
    uint64_t h = r->heap_bytes;
    if (tail < r->heap_floor)
        tail = r->heap_floor;
    uint64_t pos = r->heap_head;
    if (pos % h + need > h)
        pos += h - pos % h; /* never straddle the end: skip to the next lap */
    if (pos + need - tail > h)
        return false;
    *at = pos;
    return true;
}

static bool heap_fits(struct rt_run *run, void *arg)
{
    struct alloc_req *q = arg;
    struct rt_ring *r = &run->rings[q->ring];
    if (heap_room(r, r->heap_tail_seen, q->heap_need, &q->heap_pos))
        return true;
    uint64_t h = r->heap_bytes;
    if (r->next_local == atomic_load_explicit(&r->last_alive, memory_order_acquire)) {
        /* Empty ring: everything is free; restart at a lap boundary so the
         * request never straddles the end. */
        r->heap_head = (r->heap_head + h - 1) / h * h;
        r->heap_floor = r->heap_head;
    }
    r->heap_tail_seen = atomic_load_explicit(&r->heap_tail, memory_order_acquire);
    RT_ASSERT_INVARIANT(rt_ring_check(r)); /* after the rebase and the new tail */
    return heap_room(r, r->heap_tail_seen, q->heap_need, &q->heap_pos);
}

static int32_t heap_structural(struct rt_run *run, void *arg)
{
    struct alloc_req *q = arg;
    struct rt_ring *r = &run->rings[q->ring];
    uint64_t oldest = atomic_load_explicit(&r->last_alive, memory_order_acquire);
    if (!pinned_at(run, r, q->ring, oldest) || heap_fits(run, q))
        return 0;
    return SIMPLER_ORCH_ERR_HEAP_DEADLOCK;
}

struct dep_req {
    uint32_t ring;
    uint64_t need;
};

static bool deps_fit(struct rt_run *run, void *arg)
{
    struct dep_req *q = arg;
    struct rt_ring *r = &run->rings[q->ring];
    if (r->dep_head + q->need - r->dep_tail_seen <= r->dep_capacity)
        return true;
    r->dep_tail_seen = atomic_load_explicit(&r->dep_tail, memory_order_acquire);
    RT_ASSERT_INVARIANT(rt_ring_check(r));
    return r->dep_head + q->need - r->dep_tail_seen <= r->dep_capacity;
}

static int32_t deps_structural(struct rt_run *run, void *arg)
{
    struct dep_req *q = arg;
    struct rt_ring *r = &run->rings[q->ring];
    uint64_t oldest = atomic_load_explicit(&r->last_alive, memory_order_acquire);
    if (!pinned_at(run, r, q->ring, oldest) || deps_fit(run, q))
        return 0;
    return SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW;
}

/* Takes a dependency entry at the ring's head (space already reserved);
 * returns its handle (ring-tagged position + 1). */
uint64_t rt_ring_dep_take(struct rt_ring *r, uint32_t ring, struct rt_slot *slot, uint64_t next)
{
    uint64_t pos = r->dep_head++;
    struct rt_dep *d = &r->deps[pos % r->dep_capacity];
    d->slot = slot;
    d->next = next;
    RT_ASSERT_INVARIANT(rt_ring_check(r)); /* within what rt_ring_reserve_deps reserved */
    return rt_task_id(ring, pos) + 1;
}


/* Waits (back-pressure) for a task slot and `heap_need` bytes of output
 * heap on `ring`; on success *heap_pos is where the outputs go. The caller
 * then takes the slot at next_local and moves heap_head. */
int rt_ring_reserve_task(struct rt_run *run, uint32_t ring, uint64_t heap_need,
                         uint64_t *heap_pos)
{
    struct rt_ring *r = &run->rings[ring];
    struct alloc_req q = {.ring = ring, .want = 1, .heap_need = heap_need};
    if (q.heap_need > r->heap_bytes)
        return rt_fail_negated(run, SIMPLER_ORCH_ERR_HEAP_DEADLOCK); /* can never fit */
    if (!slot_free(run, &q)) {
        run->ring_waits++;
        q.want = slots_to_wait_for(run, r, ring);
        uint64_t target = RT_ORCH_WAIT_SLOTS(ring, r->next_local + q.want - r->window);
        int rc = rt_orch_block_for(run, slot_free, &q, slot_structural,
                                   run->config.ring_timeout_ms, SIMPLER_ORCH_ERR_RING_TIMEOUT,
                                   SIMPLER_ORCH_ERR_TASK_WINDOW_DEADLOCK, target);
        q.want = 1;
        if (rc)
            return rc;
    }
    if (!heap_fits(run, &q)) {
        run->ring_waits++;
        int rc = rt_orch_block(run, heap_fits, &q, heap_structural, run->config.ring_timeout_ms,
                               SIMPLER_ORCH_ERR_RING_TIMEOUT, SIMPLER_ORCH_ERR_HEAP_DEADLOCK);
        if (rc)
            return rc;
    }
    *heap_pos = q.heap_pos;
    RT_ASSERT_INVARIANT(rt_ring_check(r));
    return 0;
}

/* Waits (back-pressure) for `need` dependency entries on `ring`. */
int rt_ring_reserve_deps(struct rt_run *run, uint32_t ring, uint64_t need)
{
    struct rt_ring *r = &run->rings[ring];
    struct dep_req dq = {.ring = ring, .need = need};
    if (dq.need > r->dep_capacity)
        return rt_fail_negated(run, SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW);
    if (!deps_fit(run, &dq)) {
        run->ring_waits++;
        int rc = rt_orch_block(run, deps_fit, &dq, deps_structural, run->config.ring_timeout_ms,
                               SIMPLER_ORCH_ERR_RING_TIMEOUT, SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW);
        if (rc)
            return rc;
    }
    RT_ASSERT_INVARIANT(rt_ring_check(r));
    return 0;
}

/* ------------------------------------------------------------ invariants */

/* What rt_ring_init set from a checked config (rt_config_check) and
 * nobody writes after: a power-of-two window with its mask, a heap of
 * whole RT_HEAP_ALIGN units, a pool that holds an entry, every region
 * placed, but for the orchestrator's two (TensorMap records, dependency
 * pool), which are both placed or, in an HBG device arena, both absent.
 * Any thread may read it. */
static bool geometry_ok(const struct rt_ring *r)
{
    return r->window != 0 && (r->window & r->mask) == 0 && r->mask == r->window - 1 &&
           r->heap_bytes >= RT_HEAP_ALIGN && r->heap_bytes % RT_HEAP_ALIGN == 0 &&
           r->dep_capacity != 0 && r->slots && r->tasks && r->heap &&
           (r->tm != NULL) == (r->deps != NULL);
}

/*
 * The task window: alive_seen <= last_alive <= next_local, and
 * next_local - alive_seen <= window. alive_seen is a value this thread
 * read of last_alive, which only grows; a retirer stops at the first slot
 * that does not hold the next task's id, and only a submit writes an id,
 * of a slot below next_local (this thread's); a submit takes a slot only
 * once slot_free saw one free below alive_seen.
 */
static bool window_ok(const struct rt_ring *r)
{
    uint64_t alive = atomic_load_explicit(&r->last_alive, memory_order_acquire);
    return r->alive_seen <= alive && alive <= r->next_local &&
           r->next_local - r->alive_seen <= r->window;
}

/*
 * The heap: heap_floor <= heap_head, both whole RT_HEAP_ALIGN units;
 * heap_tail_seen <= heap_tail <= heap_head; and the bytes in use, from
 * max(heap_tail_seen, heap_floor) up to heap_head, fit in heap_bytes.
 * heap_head only grows: by outputs rounded up to RT_HEAP_ALIGN, a skip
 * to the next lap, or a rebase of an empty ring to a lap boundary (the
 * floor, then equal to the head); a tail is a retired task's heap_end, a
 * value heap_head once had; heap_room admitted every reservation against
 * the tail it saw, and a newer tail only frees more.
 */
static bool heap_ok(const struct rt_ring *r)
{
    uint64_t tail = atomic_load_explicit(&r->heap_tail, memory_order_acquire);
    uint64_t used_from = r->heap_tail_seen > r->heap_floor ? r->heap_tail_seen : r->heap_floor;
    return r->heap_floor <= r->heap_head && r->heap_head % RT_HEAP_ALIGN == 0 &&
           r->heap_floor % RT_HEAP_ALIGN == 0 && r->heap_tail_seen <= tail &&
           tail <= r->heap_head && r->heap_head - used_from <= r->heap_bytes;
}

/* The dependency pool: dep_tail_seen <= dep_tail <= dep_head and
 * dep_head - dep_tail_seen <= dep_capacity. A tail is a retired task's
 * dep_end, a value dep_head once had; a submit takes at most the entries
 * rt_ring_reserve_deps saw room for below dep_tail_seen. */
static bool deps_ok(const struct rt_ring *r)
{
    uint64_t tail = atomic_load_explicit(&r->dep_tail, memory_order_acquire);
    return r->dep_tail_seen <= tail && tail <= r->dep_head &&
           r->dep_head - r->dep_tail_seen <= r->dep_capacity;
}

/* The first lap: min(next_local + 1, window) <= slots_clean <= window,
 * and every slot in [next_local, slots_clean) holds no id (UINT64_MAX).
 * rt_ring_take_slot cleans ahead of each slot taken, and only a submit
 * writes an id, into the slot it takes (below next_local). */
static bool first_lap_ok(const struct rt_ring *r)
{
    uint64_t need = r->next_local < r->window ? r->next_local + 1 : r->window;
    if (r->slots_clean > r->window || r->slots_clean < need)
        return false;
    for (uint64_t s = r->next_local; s < r->slots_clean; s++)
        if (atomic_load_explicit(&r->slots[s].task_id, memory_order_relaxed) != UINT64_MAX)
            return false;
    return true;
}

bool rt_ring_check(const struct rt_ring *r)
{
    return geometry_ok(r) && window_ok(r) && heap_ok(r) && deps_ok(r) && first_lap_ok(r);
}

/*
 * Before a retirement's stores (the caller holds advance_lock, so the
 * tails it reads are the last it or an earlier holder published): the
 * oldest live task moves forward, by at most a window (the slots of
 * [old, old + window) are distinct, and the one after them would need a
 * new task in the slot of `old`, which the orchestrator takes only once
 * this store has freed it); the heap and dependency tails do not move
 * back (a later task's heap_end and dep_end are never below an earlier
 * one's: heap_head and dep_head only grow).
 */
bool rt_ring_check_retirement(const struct rt_ring *r, uint64_t alive, uint64_t heap_tail,
                              uint64_t dep_tail)
{
    uint64_t old = atomic_load_explicit(&r->last_alive, memory_order_relaxed);
    return atomic_load_explicit(&r->advance_lock, memory_order_relaxed) == 1 && alive > old &&
           alive - old <= r->window &&
           heap_tail >= atomic_load_explicit(&r->heap_tail, memory_order_relaxed) &&
           dep_tail >= atomic_load_explicit(&r->dep_tail, memory_order_relaxed);
}
