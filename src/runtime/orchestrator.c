/*
 * runtime/orchestrator.c — the orchestrator thread: building the graph.
 *
 * Owns: the orchestration ops table (submit, scopes, element access, fatal,
 * topology queries), dependency discovery (creator edges, TensorMap
 * lookups, explicit ids) and wiring. Runs on one thread per run and is the
 * only writer of the ring heads (through ring.c's reservation), the
 * TensorMap and the scope stack, so none of those need atomics. Ring
 * reservation, back-pressure and the orchestrator's wait belong to ring.c;
 * completion to task.c; dispatch to the schedulers (dispatch.c).
 */
#include <string.h>

#include "common/task_id.h"
#include "common/view.h"
#include "runtime/cpu.h"
#include "runtime/layout.h"
#include "runtime/orchestrator.h"
#include "runtime/ring.h"
#include "runtime/run.h"
#include "runtime/runtime.h"
#include "runtime/scope.h"
#include "runtime/step_token.h"
#include "runtime/task.h"
#include "runtime/tensormap.h"
#include "runtime/trace.h"
#include "runtime/wait.h"
#include "simpler/status.h"

static inline struct rt_run *run_of(struct simpler_orch *h)
{
    return (struct rt_run *)h;
}

static int fail(struct rt_run *run, int32_t code)
{
    return rt_fail_negated(run, code);
}

/* ----------------------------------------------------- argument checks */

/* True when the scope that submitted the task in `s` is still open. */
bool rt_scope_open(struct rt_run *run, struct rt_slot *s)
{
    struct rt_task *t = rt_slot_task(run, s);
    return s->scope_depth < run->scope_depth &&
           run->scopes[s->scope_depth].serial == t->scope_serial;
}


/* A tensor a task or an element access names: a non-NULL buffer that does
 * not wrap the address space, and a view every byte of which lies inside
 * that buffer (sp_view_inside: well formed, not empty, no overflow). */
static bool tensor_valid(const struct simpler_tensor *t, struct sp_view_extent *extent)
{
    uint64_t end;
    return t->addr != 0 && sp_add_u64(t->addr, t->buffer_bytes, &end) &&
           sp_view_inside(t, extent);
}

static bool kernel_valid(struct rt_run *run, int32_t id)
{
    return id >= 0 && (uint32_t)id < run->kernel_count && run->kernels[id] != NULL;
}

static struct rt_slot *slot_of(struct rt_run *run, uint64_t id)
{
    struct rt_ring *r = &run->rings[rt_id_ring(id)];
    return &r->slots[rt_id_local(id) & r->mask];
}

/* True when a tensor's producer id is none, or a live task of this run
 * already submitted whose scope is still open; anything else may name a
 * buffer already reused (the tensor escaped its scope), a foreign ring, or
 * (the next id) the very task being submitted, which would wait for
 * itself. Checked before a submit allocates anything. */
static bool producer_valid(struct rt_run *run, uint64_t id)
{
    if (id == SIMPLER_TASK_ID_NONE)
        return true;
    uint32_t ring = rt_id_ring(id);
    if (ring >= RT_RINGS || rt_id_local(id) >= run->rings[ring].next_local ||
        rt_task_retired(run, id))
        return false;
    return rt_scope_open(run, slot_of(run, id));
}

struct task_shape {
    uint32_t shape;
    uint32_t lanes;
    int32_t kernel[3];
    uint64_t heap_need;                             /* all OUTPUTs' bytes */
    uint64_t output_bytes[SIMPLER_TASK_MAX_TENSORS]; /* [arg]: an OUTPUT's heap bytes */
    struct sp_view_extent extent[SIMPLER_TASK_MAX_TENSORS]; /* [arg]: a non-OUTPUT's bytes */
};

static int32_t check_submit(struct rt_run *run, const struct simpler_mixed_kernels *k,
                            const struct simpler_task_args *a, struct task_shape *ts)
{
    if (!k || !a || a->invalid || a->tensor_count > SIMPLER_TASK_MAX_TENSORS ||
        a->scalar_count > SIMPLER_TASK_MAX_SCALARS || a->dep_count > SIMPLER_TASK_MAX_DEPS ||
        a->block_num < 1 || a->block_num > 65536)
        return SIMPLER_ORCH_ERR_INVALID_ARGS;
    int32_t kernel[3] = {k->aic, k->aiv0, k->aiv1};
    uint32_t lanes = 0;
    for (uint32_t i = 0; i < 3; i++) {
        if (kernel[i] == SIMPLER_NO_KERNEL)
            continue;
        if (!kernel_valid(run, kernel[i]))
            return SIMPLER_ORCH_ERR_INVALID_ARGS;
        lanes |= 1u << i;
    }
    if (lanes == RT_LANE_AIV1) { /* a lone AIV1 kernel is an AIV task */
        kernel[1] = kernel[2];
        kernel[2] = SIMPLER_NO_KERNEL;
        lanes = RT_LANE_AIV0;
    }
    uint32_t shape = lanes == 0              ? RT_SHAPE_DUMMY
                     : lanes == RT_LANE_AIC  ? RT_SHAPE_AIC
                     : lanes == RT_LANE_AIV0 ? RT_SHAPE_AIV
                                             : RT_SHAPE_MIX;
    uint32_t units = shape == RT_SHAPE_AIC   ? run->aic_count
                     : shape == RT_SHAPE_AIV ? run->aiv_count
                     : shape == RT_SHAPE_MIX ? run->cluster_count
                                             : 1;
    if (units == 0)
        return SIMPLER_ORCH_ERR_INVALID_ARGS; /* the device has no core of this shape */
    if (a->sync_start && shape != RT_SHAPE_DUMMY &&
        a->block_num > run->sync_units[shape])
        return SIMPLER_ORCH_ERR_SYNC_START;
    ts->heap_need = 0;
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        const struct simpler_task_arg *arg = &a->tensors[i];
        if (arg->kind == SIMPLER_ARG_OUTPUT) {
            /* A byte count (or their sum) that does not fit in 64 bits is
             * malformed; one that fits but exceeds the heap is the
             * caller's HEAP_DEADLOCK. */
            const struct simpler_tensor_create *c = &arg->create;
            if (!sp_dense_bytes(c->shape, c->ndims, c->dtype, RT_HEAP_ALIGN,
                                &ts->output_bytes[i]) ||
                !sp_add_u64(ts->heap_need, ts->output_bytes[i], &ts->heap_need))
                return SIMPLER_ORCH_ERR_INVALID_ARGS;
        } else if (arg->kind >= SIMPLER_ARG_INPUT && arg->kind <= SIMPLER_ARG_NO_DEP) {
            if (!arg->tensor || !tensor_valid(arg->tensor, &ts->extent[i]) ||
                !producer_valid(run, arg->tensor->producer_task_id))
                return SIMPLER_ORCH_ERR_INVALID_ARGS;
        } else {
            return SIMPLER_ORCH_ERR_INVALID_ARGS;
        }
    }
    for (uint32_t i = 0; i < a->dep_count; i++) {
        uint64_t id = a->deps[i];
        uint32_t ring = rt_id_ring(id);
        if (ring >= RT_RINGS || rt_id_local(id) >= run->rings[ring].next_local)
            return SIMPLER_ORCH_ERR_INVALID_ARGS; /* not an earlier task of this run */
    }
    ts->shape = shape;
    ts->lanes = lanes;
    memcpy(ts->kernel, kernel, sizeof kernel);
    return 0;
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

/* Creator edge for a tensor carrying a producer id (producer_valid: a
 * submit checked it before allocating; an element access checks it here). */
static int32_t creator_edge(struct rt_run *run, const struct simpler_tensor *t)
{
    uint64_t id = t->producer_task_id;
    if (id == SIMPLER_TASK_ID_NONE)
        return 0;
    if (!producer_valid(run, id))
        return SIMPLER_ORCH_ERR_INVALID_ARGS;
    return add_producer(run, slot_of(run, id), RT_EDGE_CREATOR);
}

static bool tracked(const struct rt_run *run, const struct simpler_tensor *t)
{
    return run->scopes[run->scope_depth - 1].mode == SIMPLER_SCOPE_AUTO &&
           !(t->flags & SIMPLER_TENSOR_MANUAL_DEP);
}

static enum rt_access access_of(uint32_t kind)
{
    return kind == SIMPLER_ARG_INPUT ? RT_ACCESS_READ : RT_ACCESS_WRITE;
}

/* Finds every producer the task must wait for. */
static int32_t discover(struct rt_run *run, const struct simpler_task_args *a,
                        const struct rt_task *t, const struct task_shape *ts)
{
    bool manual = run->scopes[run->scope_depth - 1].mode == SIMPLER_SCOPE_MANUAL;
    for (uint32_t i = 0; i < a->dep_count; i++) {
        if (rt_task_retired(run, a->deps[i]))
            continue; /* long done */
        int32_t rc = add_producer(run, slot_of(run, a->deps[i]), RT_EDGE_EXPLICIT);
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
        if (kind == SIMPLER_ARG_NO_DEP || !tracked(run, view))
            continue;
        struct tm_access access = {run, access_of(kind)};
        rc = rt_tensormap_lookup_extent(&run->tensormap, view, &ts->extent[i], access.kind,
                                        tm_retired, run, tm_hit, &access);
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

/*
 * Frees the TensorMap entries of the task that last occupied the slot of
 * `local` (local - window, retired since its slot was reserved), so that
 * chains hold live entries only: a lookup then never walks, checks and
 * unlinks the dead entries of tasks that nobody accesses again (every cell
 * of an independent-task loop), and reclaim's full scan runs only when
 * the live entries really fill the map. Entries already freed (a covering
 * write, a lookup) are skipped by rt_tensormap_forget.
 */
static void forget_previous_occupant(struct rt_run *run, uint32_t ring, uint64_t local,
                                     const struct rt_tm_record *tm)
{
    const struct rt_ring *r = &run->rings[ring];
    if (local < r->window)
        return; /* first lap: the slot's task is a previous run's */
    uint64_t old = rt_task_id(ring, local - r->window);
    for (uint32_t i = 0; i < tm->count; i++)
        rt_tensormap_forget(&run->tensormap, tm->entry[i], old);
}

/* Records the task's reads and writes of existing tensors. */
static int32_t record_accesses(struct rt_run *run, const struct simpler_task_args *a,
                               const struct rt_task *t, struct rt_tm_record *tm,
                               const struct task_shape *ts, uint64_t id, struct rt_slot *s)
{
    if (run->scopes[run->scope_depth - 1].mode == SIMPLER_SCOPE_MANUAL)
        return 0;
    uint32_t need = 0;
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        uint32_t kind = a->tensors[i].kind;
        if (kind != SIMPLER_ARG_OUTPUT && kind != SIMPLER_ARG_NO_DEP &&
            tracked(run, &t->tensors[i]))
            need++;
    }
    if (need == 0)
        return 0;
    if (need > run->tensormap.capacity)
        return SIMPLER_ORCH_ERR_TENSORMAP_OVERFLOW;
    if (rt_tensormap_free_count(&run->tensormap) < need) {
        int rc = rt_orch_block(run, tensormap_has_room, &need, NULL, run->config.ring_timeout_ms,
                            SIMPLER_ORCH_ERR_TENSORMAP_OVERFLOW);
        if (rc)
            return -rc;
    }
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        uint32_t kind = a->tensors[i].kind;
        if (kind == SIMPLER_ARG_OUTPUT || kind == SIMPLER_ARG_NO_DEP ||
            !tracked(run, &t->tensors[i]))
            continue;
        if (rt_tensormap_insert_entry(&run->tensormap, &t->tensors[i], &ts->extent[i],
                                      access_of(kind), id, s, &tm->entry[tm->count]) != 0)
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

/* Links the task in `s` to every producer in the scratch list (the edge
 * protocol: pin and link under the producer's lock; a producer that has
 * already completed is pinned but not waited for). */
static void wire(struct rt_run *run, struct rt_slot *s, struct rt_task *t, uint32_t ring)
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

/* ---------------------------------------------------------------- submit */

static void init_slot(struct rt_slot *s, uint64_t id, uint32_t ring, const struct task_shape *ts,
                      const struct simpler_task_args *a, uint32_t depth)
{
    atomic_store_explicit(&s->lock, 0, memory_order_relaxed);
    s->fanout_count = 2; /* the scope's hold and the completion hold */
    s->fanout_released = 0;
    s->closed = 0;
    s->fanout_head = 0;
    atomic_store_explicit(&s->state, RT_PENDING, memory_order_relaxed);
    atomic_store_explicit(&s->fanin_pending, 1, memory_order_relaxed);
    atomic_store_explicit(&s->completed_subtasks, 0, memory_order_relaxed);
    atomic_store_explicit(&s->next_block, 0, memory_order_relaxed);
    /* release, last of the resets above: pairs with the acquire of the id
     * in ring_advance, which then sees PENDING rather than the previous
     * occupant's CONSUMED */
    atomic_store_explicit(&s->task_id, id, memory_order_release);
    uint32_t lanes = (uint32_t)__builtin_popcount(ts->lanes);
    s->block_num = a->block_num;
    s->total_subtasks = ts->shape == RT_SHAPE_DUMMY ? 0 : a->block_num * lanes;
    s->shape = (uint8_t)ts->shape;
    s->lanes = (uint8_t)ts->lanes;
    s->ring = (uint8_t)ring;
    s->sync_start = a->sync_start ? 1 : 0;
    s->scope_depth = (uint16_t)depth;
    s->heap_outputs = ts->heap_need > 0;
    s->reserved = 0;
}

/* Copies the arguments into the payload, materialising OUTPUTs at heap
 * position `pos`. */
static void fill_payload(struct rt_run *run, struct rt_task *t, struct rt_ring *r, uint64_t pos,
                         uint64_t id, const struct simpler_task_args *a,
                         const struct task_shape *ts)
{
    t->tensor_count = a->tensor_count;
    t->scalar_count = a->scalar_count;
    memcpy(t->kernel, ts->kernel, sizeof t->kernel);
    t->scope_serial = run->scopes[run->scope_depth - 1].serial;
    uint64_t offset = pos % r->heap_bytes;
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        const struct simpler_task_arg *arg = &a->tensors[i];
        if (arg->kind != SIMPLER_ARG_OUTPUT) {
            t->tensors[i] = *arg->tensor;
            continue;
        }
        const struct simpler_tensor_create *c = &arg->create;
        struct simpler_tensor *o = &t->tensors[i];
        /* Cannot fail: check_submit sized this output (ts->output_bytes). */
        simpler_tensor_make(o, (uint64_t)(uintptr_t)(r->heap + offset), c->shape, c->ndims,
                            c->dtype, SIMPLER_MEM_DEVICE);
        o->producer_task_id = id;
        if (c->zero_fill)
            memset(r->heap + offset, 0, o->buffer_bytes);
        offset += ts->output_bytes[i];
    }
    memcpy(t->scalars, a->scalars, a->scalar_count * sizeof a->scalars[0]);
}

/* The submit's result: the task id and the materialised OUTPUTs, in the
 * order they were added. Written only once the submit has succeeded. */
static void write_result(struct simpler_task_result *out, uint64_t id,
                         const struct simpler_task_args *a, const struct rt_task *t)
{
    uint32_t outputs = 0;
    for (uint32_t i = 0; i < a->tensor_count; i++)
        if (a->tensors[i].kind == SIMPLER_ARG_OUTPUT)
            out->outputs[outputs++] = t->tensors[i];
    out->task_id = id;
    out->output_count = outputs;
}

/* The lines a submit of ring-local id `local` writes first: its slot (a
 * core wrote it last, completing the slot's previous task) and the head
 * of its payload (the previous task's kernel read it). */
static void prefetch_ahead(const struct rt_ring *r, uint64_t local)
{
    const struct rt_task *t = &r->tasks[local & r->mask];
    rt_prefetch_write(&r->slots[local & r->mask]);
    uintptr_t end = (uintptr_t)&t->tensors[1]; /* through the first tensor */
    for (uintptr_t line = (uintptr_t)t & ~(uintptr_t)(RT_CACHELINE - 1); line < end;
         line += RT_CACHELINE)
        rt_prefetch_write((const void *)line);
}

static int op_submit(struct simpler_orch *h, const struct simpler_mixed_kernels *k,
                     const struct simpler_task_args *a, struct simpler_task_result *out)
{
    struct rt_run *run = run_of(h);
    if (rt_error(run))
        return -rt_error(run);
    uint64_t trace_begin = RT_TRACE_CLOCK(run->config.trace_level >= 4);
    struct task_shape ts;
    int32_t code = check_submit(run, k, a, &ts);
    if (code)
        return fail(run, code);

    uint32_t depth = run->scope_depth - 1;
    uint32_t ring = rt_ring_of_depth(depth);
    struct rt_ring *r = &run->rings[ring];
    if (run->scope_task_top - run->scopes[depth].begin >= r->window)
        return fail(run, SIMPLER_ORCH_ERR_SCOPE_TASK_OVERFLOW);
    if (run->scope_task_top >= run->scope_task_capacity)
        return fail(run, SIMPLER_ORCH_ERR_SCOPE_TASK_OVERFLOW);

    /* 1. Task slot and heap bytes on this depth's ring (ring.c). */
    uint64_t heap_pos;
    int rc = rt_ring_reserve_task(run, ring, ts.heap_need, &heap_pos);
    if (rc)
        return rc;
    uint64_t local = r->next_local++;
    rt_ring_take_slot(r, local);
    uint64_t id = rt_task_id(ring, local);
    struct rt_slot *s = &r->slots[local & r->mask];
    struct rt_task *t = &r->tasks[local & r->mask];
    struct rt_tm_record *tm = &r->tm[local & r->mask];
    prefetch_ahead(r, local + RT_PREFETCH_AHEAD);
    forget_previous_occupant(run, ring, local, tm);
    tm->count = 0;
    r->heap_head = heap_pos + ts.heap_need;
    t->heap_end = r->heap_head;
    t->dep_end = r->dep_head;
    t->fanin_head = 0;
    t->fanin_count = 0;
    init_slot(s, id, ring, &ts, a, depth);
    fill_payload(run, t, r, heap_pos, id, a, &ts);

    /* 2. Dependencies, then this task's own accesses. */
    run->fanin_n = 0;
    code = discover(run, a, t, &ts);
    if (!code)
        code = record_accesses(run, a, t, tm, &ts, id, s);
    if (code)
        return fail(run, code);

    /* 3. Dependency entries: one per producer held, one per producer
     * waited for. */
    if ((rc = rt_ring_reserve_deps(run, ring, 2ull * run->fanin_n)))
        return rc;

    /* 4. Wire and publish. The result is written before the task can run
     * and complete (its slot may be reused soon after). */
    if (out)
        write_result(out, id, a, t);
    wire(run, s, t, ring);
    run->scope_tasks[run->scope_task_top++] = s;
    run->tasks_submitted_local++;
    atomic_store_explicit(&run->tasks_submitted, run->tasks_submitted_local,
                          memory_order_release);
    if (run->config.trace_level)
        rt_trace_submit(run, id, ts.kernel, depth, ts.shape, a->block_num, trace_begin);
    /* acq_rel: the last decrement (ours or a completing producer's) sees
     * every write above before the task is routed. */
    if (atomic_fetch_sub_explicit(&s->fanin_pending, 1, memory_order_acq_rel) == 1) {
        rt_task_ready(run, s);
        /* The engine rule: this thread is awake, so it runs the step that
         * dispatches the task (or leaves the note for the thread running
         * it), unless an idle core that is awake fetches it itself; no
         * scheduler is woken. */
        rt_sched_publish(run, s);
    }
    return 0;
}

/* ---------------------------------------------------------------- scopes */

static int scope_push(struct rt_run *run, uint32_t mode)
{
    if (mode != SIMPLER_SCOPE_AUTO && mode != SIMPLER_SCOPE_MANUAL)
        return fail(run, SIMPLER_ORCH_ERR_SCOPE);
    if (run->scope_depth >= SIMPLER_SCOPE_MAX_DEPTH)
        return fail(run, SIMPLER_ORCH_ERR_SCOPE);
    if (run->scope_depth > 0 && mode == SIMPLER_SCOPE_AUTO &&
        run->scopes[run->scope_depth - 1].mode == SIMPLER_SCOPE_MANUAL)
        return fail(run, SIMPLER_ORCH_ERR_SCOPE); /* inference cannot resume inside MANUAL */
    struct rt_scope *sc = &run->scopes[run->scope_depth++];
    sc->serial = run->next_scope_serial++;
    sc->mode = mode;
    sc->begin = run->scope_task_top;
    return 0;
}

/* Closes the innermost scope: its tasks lose the scope's hold. The rings
 * of the tasks this made CONSUMED advance once, after the loop, not once
 * per task (each advance is a lock and fenced stores on lines the cores
 * read). */
static void scope_pop(struct rt_run *run)
{
    struct rt_scope *sc = &run->scopes[run->scope_depth - 1];
    uint32_t begin = sc->begin;
    run->scope_depth--;
    uint32_t rings = 0;
    for (uint32_t i = begin; i < run->scope_task_top; i++) {
        if (i + RT_PREFETCH_AHEAD < run->scope_task_top)
            rt_prefetch_write(run->scope_tasks[i + RT_PREFETCH_AHEAD]);
        struct rt_slot *s = run->scope_tasks[i];
        uint32_t ring = s->ring;
        if (rt_slot_drop(s))
            rings |= 1u << ring;
    }
    for (; rings; rings &= rings - 1)
        rt_ring_advance(run, (uint32_t)__builtin_ctz(rings));
    run->scope_task_top = begin;
}

static int op_scope_begin(struct simpler_orch *h, uint32_t mode)
{
    struct rt_run *run = run_of(h);
    if (rt_error(run))
        return -rt_error(run);
    return scope_push(run, mode);
}

static int op_scope_end(struct simpler_orch *h)
{
    struct rt_run *run = run_of(h);
    if (run->scope_depth <= 1)
        return fail(run, SIMPLER_ORCH_ERR_SCOPE); /* the outer scope is the runtime's */
    scope_pop(run);
    return rt_error(run) ? -rt_error(run) : 0;
}

/* ------------------------------------------------------ element access */

static bool all_producers_done(struct rt_run *run, void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < run->fanin_n; i++) {
        struct rt_slot *p = run->fanin_scratch[i];
        /* acquire: pairs with the release store of COMPLETED in
         * rt_task_complete; the producer's data is visible after it */
        if (atomic_load_explicit(&p->state, memory_order_acquire) == RT_PENDING)
            return false;
    }
    return true;
}

static int element_access(struct rt_run *run, const struct simpler_tensor *t,
                          const uint64_t *index, enum rt_access kind, void **addr)
{
    if (rt_error(run))
        return -rt_error(run);
    /* The whole view inside its buffer, so every element of it is too. */
    uint64_t offset;
    if (!t || !index || !tensor_valid(t, NULL) || sp_view_element_offset(t, index, &offset) != 0)
        return fail(run, SIMPLER_ORCH_ERR_INVALID_ARGS);
    size_t es = simpler_dtype_size(t->dtype);
    /* The one element as a view, for the TensorMap. */
    struct simpler_tensor elem = *t;
    elem.ndims = 1;
    elem.start_offset = offset;
    elem.shape[0] = 1;
    elem.stride[0] = 1;

    run->fanin_n = 0;
    int32_t code = 0;
    code = creator_edge(run, t); /* a dead or foreign producer id is invalid */
    struct tm_access access = {run, kind};
    if (!code && tracked(run, t))
        code = rt_tensormap_lookup(&run->tensormap, &elem, kind, tm_retired, run, tm_hit, &access);
    if (code)
        return fail(run, code);
    /* A producer whose slot was reused has long completed: drop it. */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < run->fanin_n; i++) {
        struct rt_slot *p = run->fanin_scratch[i];
        if (atomic_load_explicit(&p->state, memory_order_acquire) == RT_PENDING)
            run->fanin_scratch[kept++] = p;
    }
    run->fanin_n = kept;
    if (!all_producers_done(run, NULL)) {
        int rc = rt_orch_block(run, all_producers_done, NULL, NULL,
                            run->config.tensor_wait_timeout_ms,
                            SIMPLER_ORCH_ERR_TENSOR_WAIT_TIMEOUT);
        if (rc)
            return rc;
    }
    *addr = (uint8_t *)(uintptr_t)t->addr + offset * es;
    return 0;
}

static int op_read_element(struct simpler_orch *h, const struct simpler_tensor *t,
                           const uint64_t *index, void *value)
{
    struct rt_run *run = run_of(h);
    void *addr = NULL;
    if (!value)
        return fail(run, SIMPLER_ORCH_ERR_INVALID_ARGS);
    int rc = element_access(run, t, index, RT_ACCESS_READ, &addr);
    if (rc)
        return rc;
    memcpy(value, addr, simpler_dtype_size(t->dtype));
    return 0;
}

static int op_write_element(struct simpler_orch *h, const struct simpler_tensor *t,
                            const uint64_t *index, const void *value)
{
    struct rt_run *run = run_of(h);
    void *addr = NULL;
    if (!value)
        return fail(run, SIMPLER_ORCH_ERR_INVALID_ARGS);
    int rc = element_access(run, t, index, RT_ACCESS_WRITE, &addr);
    if (rc)
        return rc;
    memcpy(addr, value, simpler_dtype_size(t->dtype));
    return 0;
}

/* ------------------------------------------------------------ the rest */

static void op_fatal(struct simpler_orch *h)
{
    rt_fail(run_of(h), SIMPLER_ORCH_ERR_EXPLICIT_FATAL);
}

static int op_status(struct simpler_orch *h)
{
    return -rt_error(run_of(h));
}

static uint32_t op_aic_count(struct simpler_orch *h)
{
    return run_of(h)->aic_count;
}

static uint32_t op_aiv_count(struct simpler_orch *h)
{
    return run_of(h)->aiv_count;
}

static uint32_t op_cluster_count(struct simpler_orch *h)
{
    return run_of(h)->cluster_count;
}

static const struct simpler_orch_ops g_ops = {
    .submit = op_submit,
    .scope_begin = op_scope_begin,
    .scope_end = op_scope_end,
    .read_element = op_read_element,
    .write_element = op_write_element,
    .fatal = op_fatal,
    .status = op_status,
    .aic_count = op_aic_count,
    .aiv_count = op_aiv_count,
    .cluster_count = op_cluster_count,
};

void rt_orchestrator_init(struct rt_run *run)
{
    run->handle.ops = &g_ops;
    run->scope_depth = 0;
    run->next_scope_serial = 1;
    run->scope_task_top = 0;
    run->fanin_n = 0;
    run->tasks_submitted_local = 0;
    run->edges = 0;
    run->ring_waits = 0;
    run->tensormap_live_peak = 0;
    /* The TensorMap was reset by its init (run_init). */
}

void rt_orchestrate(struct rt_run *run, simpler_orch_entry_fn entry,
                    const struct simpler_orch_args *args)
{
    if (!rt_error(run) && scope_push(run, SIMPLER_SCOPE_AUTO) == 0) {
        entry(&run->handle, args);
        if (run->scope_depth != 1)
            rt_fail(run, SIMPLER_ORCH_ERR_SCOPE); /* the entry left scopes open */
        while (run->scope_depth > 0)
            scope_pop(run);
    }
    /* seq_cst (a release too): pairs with rt_run_finished (run.h) and the
     * completer's look at orch_done (rt_task_complete); after it
     * tasks_submitted is final */
    atomic_store_explicit(&run->tasks_submitted, run->tasks_submitted_local,
                          memory_order_release);
    atomic_store_explicit(&run->orch_done, 1, memory_order_seq_cst);
    rt_signal(run);
}
