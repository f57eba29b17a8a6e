/*
 * runtime/deps.c — dependency discovery and wiring of a submit
 * (deps.h).
 *
 * Owns: the run's fanin scratch (the producers of the task being
 * submitted), its edges from explicit ids, creators and TensorMap lookups,
 * the TensorMap records of a task's own accesses, and the wiring of the
 * task to its producers under their slot locks (the edge protocol).
 * Orchestrator only: the scratch and the TensorMap are its alone; a
 * producer's slot is touched under its lock. Must not reserve ring space
 * beyond taking the dependency entries its caller reserved (ring.c).
 */
#include "common/task_id.h"
#include "common/view.h"
#include "runtime/deps.h"
#include "runtime/invariants.h"
#include "runtime/ring.h"
#include "runtime/run.h"
#include "runtime/runtime.h"
#include "runtime/scope.h"
#include "runtime/task.h"
#include "runtime/tensormap.h"
#include "runtime/trace.h"
#include "simpler/orchestration.h"
#include "simpler/status.h"

static struct rt_slot *slot_of_task(struct rt_run *run, uint64_t id)
{
    struct rt_ring *r = &run->rings[rt_id_ring(id)];
    return &r->slots[rt_id_local(id) & r->mask];
}

/* True when a tensor's producer id is none, or a live task of this run
 * already submitted whose scope is still open; anything else may name a
 * buffer already reused (the tensor escaped its scope), a foreign ring, or
 * (the next id) the very task being submitted, which would wait for
 * itself. Checked before a submit allocates anything. */
bool rt_producer_valid(struct rt_run *run, uint64_t id)
{
    if (id == SIMPLER_TASK_ID_NONE)
        return true;
    uint32_t ring = rt_id_ring(id);
    if (ring >= RT_RINGS || rt_id_local(id) >= run->rings[ring].next_local ||
        rt_task_retired(run, id))
        return false;
    return rt_scope_open(run, slot_of_task(run, id));
}

/* ------------------------------------------------ dependency discovery */

/* Adds producer `p` (task `id`) to the task's fanin scratch, merging
 * duplicates. Returns 0 or an error code. */
static int32_t add_producer(struct rt_run *run, struct rt_slot *p, uint32_t source)
{
    for (uint32_t i = 0; i < run->fanin_n; i++)
        if (run->fanin_scratch[i] == p) {
            run->fanin_sources[i] |= source;
            return 0;
        }
    if (run->fanin_n >= run->config.max_fanin)
        return SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW;
    run->fanin_scratch[run->fanin_n] = p;
    run->fanin_sources[run->fanin_n] = source;
    run->fanin_n++;
    return 0;
}

static bool tm_retired(void *ctx, uint64_t producer_id)
{
    return rt_task_retired(ctx, producer_id);
}

#ifndef NDEBUG
/* What a host build asks instead (debug builds): the answer it assumes,
 * checked. */
static bool tm_never_retired(void *ctx, uint64_t producer_id)
{
    RT_ASSERT_INVARIANT(!rt_task_retired(ctx, producer_id));
    return false;
}
#endif

/* The retirement check for a submit's lookups. A host build retires
 * nothing: no task of its run runs before the image ships (docs/runtime.md,
 * "Nothing is reclaimed during an HBG run"), so rt_task_retired is false
 * for every producer there and the TensorMap need not call it for each
 * entry it visits (about 4% of a stencil task's build).
 * Debug and sanitizer builds still call it, and assert that. */
static rt_tm_retired_fn retired_check(const struct rt_run *run)
{
#ifdef NDEBUG
    return run->hbg ? NULL : tm_retired;
#else
    return run->hbg ? tm_never_retired : tm_retired;
#endif
}

/* What a TensorMap lookup reports its hits to: the run and the access. */
struct tm_access {
    struct rt_run *run;
    enum rt_access kind;
};

static int tm_hit(void *ctx, uint64_t producer_id, void *producer, enum rt_access recorded)
{
    const struct tm_access *a = ctx;
    (void)producer_id;
    return add_producer(a->run, producer, RT_EDGE_TENSORMAP | rt_edge_hazard(a->kind, recorded));
}

/* Creator edge for a tensor carrying a producer id (rt_producer_valid: a
 * submit checked it before allocating; an element access checks it here). */
static int32_t creator_edge(struct rt_run *run, const struct simpler_tensor *t)
{
    uint64_t id = t->producer_task_id;
    if (id == SIMPLER_TASK_ID_NONE)
        return 0;
    if (!rt_producer_valid(run, id))
        return SIMPLER_ORCH_ERR_INVALID_ARGS;
    return add_producer(run, slot_of_task(run, id), RT_EDGE_CREATOR);
}

static bool tracked(const struct rt_run *run, const struct simpler_tensor *t)
{
    return run->scopes[run->scope_depth - 1].mode == SIMPLER_SCOPE_AUTO &&
           !(t->flags & SIMPLER_TENSOR_MANUAL_DEP);
}

/* True when a submit looks argument `kind` (tensor `t`) up in the TensorMap
 * and records it there, in a scope whose mode is not MANUAL (both
 * rt_deps_discover and rt_deps_record_accesses return before asking
 * otherwise): the one rule that makes the keys rt_deps_discover fills the
 * ones rt_deps_record_accesses reads. */
static bool mapped(uint32_t kind, const struct simpler_tensor *t)
{
    return kind != SIMPLER_ARG_OUTPUT && kind != SIMPLER_ARG_NO_DEP &&
           !(t->flags & SIMPLER_TENSOR_MANUAL_DEP);
}

static enum rt_access access_of(uint32_t kind)
{
    return kind == SIMPLER_ARG_INPUT ? RT_ACCESS_READ : RT_ACCESS_WRITE;
}

int32_t rt_deps_discover(struct rt_run *run, const struct simpler_task_args *a,
                         const struct rt_task *t, const struct sp_view_extent *extent,
                         struct rt_tm_key *key)
{
    bool manual = run->scopes[run->scope_depth - 1].mode == SIMPLER_SCOPE_MANUAL;
    for (uint32_t i = 0; i < a->dep_count; i++) {
        if (rt_task_retired(run, a->deps[i]))
            continue; /* long done */
        int32_t rc = add_producer(run, slot_of_task(run, a->deps[i]), RT_EDGE_EXPLICIT);
        if (rc)
            return rc;
    }
    if (manual)
        return 0;
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        uint32_t kind = a->tensors[i].kind;
        if (kind == SIMPLER_ARG_OUTPUT)
            continue;
        const struct simpler_tensor *view = &t->tensors[i];
        int32_t rc = creator_edge(run, view);
        if (rc)
            return rc;
        if (!mapped(kind, view))
            continue;
        struct tm_access access = {run, access_of(kind)};
        rt_tensormap_key(&run->tensormap, view, &extent[i], &key[i]);
        rc = rt_tensormap_lookup_key(&run->tensormap, view, &key[i], access.kind,
                                     retired_check(run), run, tm_hit, &access);
        if (rc)
            return rc;
    }
    return 0;
}

static bool tensormap_has_room(struct rt_run *run, void *arg)
{
    uint32_t need = *(uint32_t *)arg;
    if (rt_tensormap_free_count(&run->tensormap) >= need)
        return true;
    rt_tensormap_reclaim(&run->tensormap, tm_retired, run);
    return rt_tensormap_free_count(&run->tensormap) >= need;
}

/* The chains hold live entries only (see deps.h): a lookup then never
 * walks, checks and unlinks the dead entries of tasks that nobody accesses
 * again (every cell of an independent-task loop), and reclaim's full scan
 * runs only when the live entries really fill the map. Entries already
 * freed (a covering write, a lookup) are skipped by rt_tensormap_forget. */
void rt_deps_forget_previous_occupant(struct rt_run *run, uint32_t ring, uint64_t local,
                                     const struct rt_tm_record *tm)
{
    const struct rt_ring *r = &run->rings[ring];
    if (local < r->window)
        return; /* first lap: the slot's task is a previous run's */
    uint64_t old = rt_task_id(ring, local - r->window);
    for (uint32_t i = 0; i < tm->count; i++)
        rt_tensormap_forget(&run->tensormap, tm->entry[i], old);
}

int32_t rt_deps_record_accesses(struct rt_run *run, const struct simpler_task_args *a,
                                const struct rt_task *t, struct rt_tm_record *tm,
                                const struct rt_tm_key *key, uint64_t id, struct rt_slot *s)
{
    if (run->scopes[run->scope_depth - 1].mode == SIMPLER_SCOPE_MANUAL)
        return 0;
    uint32_t need = 0;
    for (uint32_t i = 0; i < a->tensor_count; i++)
        need += mapped(a->tensors[i].kind, &t->tensors[i]);
    if (need == 0)
        return 0;
    if (need > run->tensormap.capacity)
        return SIMPLER_ORCH_ERR_TENSORMAP_OVERFLOW;
    if (rt_tensormap_free_count(&run->tensormap) < need) {
        int rc = rt_orch_block(run, tensormap_has_room, &need, NULL, run->config.ring_timeout_ms,
                               SIMPLER_ORCH_ERR_TENSORMAP_OVERFLOW,
                               SIMPLER_ORCH_ERR_TENSORMAP_OVERFLOW);
        if (rc)
            return -rc;
    }
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        uint32_t kind = a->tensors[i].kind;
        if (!mapped(kind, &t->tensors[i]))
            continue;
        if (rt_tensormap_insert_key(&run->tensormap, &t->tensors[i], &key[i], access_of(kind),
                                    id, s, &tm->entry[tm->count]) != 0)
            return SIMPLER_ORCH_ERR_TENSORMAP_OVERFLOW; /* room was checked: unreachable */
        tm->count++;
    }
    uint32_t live = run->tensormap.live;
    if (live > run->tensormap_live_peak)
        run->tensormap_live_peak = live;
    return 0;
}

static void log_edge(struct rt_run *run, uint64_t producer, uint64_t consumer, uint32_t sources)
{
    uint64_t n = run->edges++;
    if (n < run->config.edge_log_capacity) {
        struct rt_edge *e = &run->config.edge_log[n];
        e->producer = producer;
        e->consumer = consumer;
        e->sources = sources & RT_EDGE_SOURCES;
        e->hazards = sources & ~RT_EDGE_SOURCES;
    }
}

void rt_deps_log_fanin(struct rt_run *run, uint64_t id)
{
    for (uint32_t i = 0; i < run->fanin_n; i++)
        log_edge(run, atomic_load_explicit(&run->fanin_scratch[i]->task_id, memory_order_relaxed),
                 id, run->fanin_sources[i]);
}

/* The edge protocol: pin and link under the producer's lock; a producer
 * that has already completed is pinned but not waited for. */
void rt_deps_wire(struct rt_run *run, struct rt_slot *s, struct rt_task *t, uint32_t ring)
{
    struct rt_ring *r = &run->rings[ring];
    uint64_t id = atomic_load_explicit(&s->task_id, memory_order_relaxed);
    uint64_t fanin_head = 0;
    uint32_t held = 0;
    for (uint32_t i = 0; i < run->fanin_n; i++) {
        struct rt_slot *p = run->fanin_scratch[i];
        uint64_t pid = atomic_load_explicit(&p->task_id, memory_order_relaxed);
        /* A hold keeps the producer's slot, heap bytes and dependency
         * entries until this task ends; only its heap bytes can matter to
         * this task (its outputs there, which this task may read), so a
         * producer without outputs in the ring heap is not held. Once it
         * has also completed there is nothing to wait for either: its data
         * is in place (acquire: pairs with the release store of COMPLETED,
         * and the publish below passes it on to the core), and neither its
         * lock nor its line is touched, the common case of a fine-grained
         * graph whose orchestrator runs behind the cores. (The slot is not
         * reused before this thread reuses it, so heap_outputs is still
         * its.) */
        bool hold = p->heap_outputs;
        if (!hold && atomic_load_explicit(&p->state, memory_order_acquire) != RT_PENDING) {
            log_edge(run, pid, id, run->fanin_sources[i]);
            continue;
        }
        rt_slot_lock(p);
        if (p->closed) {
            /* Consumed since discovery (explicit or TensorMap producer whose
             * scope closed): done, nothing to wait for or hold. */
            rt_slot_unlock(p);
            continue;
        }
        if (hold)
            p->fanout_count++;
        if (atomic_load_explicit(&p->state, memory_order_relaxed) != RT_COMPLETED) {
            /* Its completion walks this entry (in this task's ring, freed
             * only when this task retires, after that walk) and releases
             * this task: no hold needed for that. */
            atomic_fetch_add_explicit(&s->fanin_pending, 1, memory_order_relaxed);
            p->fanout_head = rt_ring_dep_take(r, ring, s, p->fanout_head);
        }
        rt_slot_unlock(p);
        if (hold) {
            fanin_head = rt_ring_dep_take(r, ring, p, fanin_head);
            held++;
        }
        log_edge(run, pid, id, run->fanin_sources[i]);
    }
    t->fanin_head = fanin_head;
    t->fanin_count = held;
    t->dep_end = r->dep_head;
}

int32_t rt_deps_discover_element(struct rt_run *run, const struct simpler_tensor *t,
                                 const struct simpler_tensor *elem, enum rt_access kind)
{
    run->fanin_n = 0;
    int32_t code = 0;
    code = creator_edge(run, t); /* a dead or foreign producer id is invalid */
    struct tm_access access = {run, kind};
    if (!code && tracked(run, t))
        code = rt_tensormap_lookup(&run->tensormap, elem, kind, tm_retired, run, tm_hit, &access);
    if (code)
        return code;
    /* A producer whose slot was reused has long completed: drop it. */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < run->fanin_n; i++) {
        struct rt_slot *p = run->fanin_scratch[i];
        if (atomic_load_explicit(&p->state, memory_order_acquire) == RT_PENDING)
            run->fanin_scratch[kept++] = p;
    }
    run->fanin_n = kept;
    return 0;
}
