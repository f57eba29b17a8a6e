/*
 * runtime/orchestrator.c — the orchestrator thread: building the graph.
 *
 * Owns: the orchestration ops table (submit, scopes, element access, fatal,
 * topology queries): a submit's checks, its slot and payload, and the
 * order of its steps. Runs on one thread per run and is the only writer of
 * the ring heads (through ring.c's reservation), the TensorMap and the
 * scope stack, so none of those need atomics. Dependency discovery and
 * wiring belong to deps.c; the scope stack to scope.c; ring reservation,
 * back-pressure and the orchestrator's wait to ring.c; completion to
 * task.c; dispatch to the schedulers (dispatch.c).
 */
#include <string.h>

#include "common/task_id.h"
#include "common/view.h"
#include "runtime/aicpu_program.h"
#include "runtime/cpu.h"
#include "runtime/deps.h"
#include "runtime/dispatch.h"
#include "runtime/hbg_build.h"
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

/* ----------------------------------------------------- argument checks */

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
    if (id < 0 || (uint32_t)id >= run->kernel_count)
        return false;
    return run->hbg ? rt_hbg_kernel_present(run, (uint32_t)id) : run->kernels[id] != NULL;
}

struct task_shape {
    uint32_t shape;
    uint32_t lanes;
    int32_t kernel[3];
    uint64_t heap_need;                             /* all OUTPUTs' bytes */
    uint64_t output_bytes[SIMPLER_TASK_MAX_TENSORS]; /* [arg]: an OUTPUT's heap bytes */
    struct sp_view_extent extent[SIMPLER_TASK_MAX_TENSORS]; /* [arg]: a non-OUTPUT's bytes */
    struct rt_tm_key tm_key[SIMPLER_TASK_MAX_TENSORS]; /* [arg]: rt_deps_discover's */
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
                !rt_producer_valid(run, arg->tensor->producer_task_id))
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
     * in rt_ring_advance, which then sees PENDING rather than the previous
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
 * position `pos` (a host build zeroes nothing itself: the heap is the
 * device's, and the zero-fill travels in the image). */
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
        if (c->zero_fill && run->hbg)
            rt_hbg_add_zero(run, o->addr, o->buffer_bytes);
        else if (c->zero_fill)
            memset(r->heap + offset, 0, o->buffer_bytes);
        offset += ts->output_bytes[i];
    }
    memcpy(t->scalars, a->scalars, a->scalar_count * sizeof a->scalars[0]);
}

/* The submit's result: the task id and the materialised OUTPUTs, in the
 * order they were added. Written only once the submit has succeeded. */
static void write_task_result(struct simpler_task_result *out, uint64_t id,
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
 * core wrote it last, completing the slot's previous task) and, when
 * `payload` (not a host build), the head of its payload (the previous
 * task's kernel read it). */
static void prefetch_ahead(const struct rt_ring *r, uint64_t local, bool payload)
{
    const struct rt_task *t = &r->tasks[local & r->mask];
    rt_prefetch_write(&r->slots[local & r->mask]);
    if (!payload)
        return;
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
    if (run->owes_core || run->mates_due || run->schedulers_at_submit) /* after the first submit only */
        rt_orch_goes_on(run);
    uint64_t trace_begin = RT_TRACE_CLOCK(run->config.trace_level >= 4);
    struct task_shape ts;
    int32_t code = check_submit(run, k, a, &ts);
    if (code)
        return rt_fail_negated(run, code);

    uint32_t depth = run->scope_depth - 1;
    uint32_t ring = rt_ring_of_depth(depth);
    struct rt_ring *r = &run->rings[ring];
    if (run->scope_task_top - run->scopes[depth].begin >= r->window)
        return rt_fail_negated(run, SIMPLER_ORCH_ERR_SCOPE_TASK_OVERFLOW);
    if (run->scope_task_top >= run->scope_task_capacity)
        return rt_fail_negated(run, SIMPLER_ORCH_ERR_SCOPE_TASK_OVERFLOW);

    /* 1. Task slot and heap bytes on this depth's ring (ring.c). */
    uint64_t heap_pos;
    int rc = rt_ring_reserve_task(run, ring, ts.heap_need, &heap_pos);
    if (rc)
        return rc;
    uint64_t local = r->next_local++;
    rt_ring_take_slot(r, local);
    uint64_t id = rt_task_id(ring, local);
    struct rt_slot *s = &r->slots[local & r->mask];
    /* A host build's payload is one record it reuses (rt_hbg_payload). */
    struct rt_task *t = run->hbg ? rt_hbg_payload(run) : &r->tasks[local & r->mask];
    struct rt_tm_record *tm = &r->tm[local & r->mask];
    prefetch_ahead(r, local + RT_PREFETCH_AHEAD, !run->hbg);
    rt_deps_forget_previous_occupant(run, ring, local, tm);
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
    code = rt_deps_discover(run, a, t, ts.extent, ts.tm_key);
    if (!code)
        code = rt_deps_record_accesses(run, a, t, tm, ts.tm_key, id, s);
    if (code)
        return rt_fail_negated(run, code);

    if (run->hbg) {
        /* A host build: the task and its producers go into the image; the
         * device classifies and runs them. The payload is reused: what a
         * later submit asks of this task is in its slot. */
        if (out)
            write_task_result(out, id, a, t);
        s->hbg_scope_pos = run->scope_task_top;
        run->scope_tasks[run->scope_task_top++] = s;
        run->tasks_submitted_local++;
        if ((code = rt_hbg_add_task(run, s, t, id)))
            return rt_fail_negated(run, code);
        return 0;
    }

    /* 3. Dependency entries: one per producer held, one per producer
     * waited for. */
    if ((rc = rt_ring_reserve_deps(run, ring, 2ull * run->fanin_n)))
        return rc;

    /* 4. Wire and publish. The result is written before the task can run
     * and complete (its slot may be reused soon after). */
    if (out)
        write_task_result(out, id, a, t);
    rt_deps_wire(run, s, t, ring);
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

/* Closes the innermost scope, then advances the rings of the tasks that
 * made CONSUMED, once each (rt_scope_pop). */
static void close_scope(struct rt_run *run)
{
    for (uint32_t rings = rt_scope_pop(run); rings; rings &= rings - 1)
        rt_ring_advance(run, (uint32_t)__builtin_ctz(rings));
}

static int op_scope_begin(struct simpler_orch *h, uint32_t mode)
{
    struct rt_run *run = run_of(h);
    if (rt_error(run))
        return -rt_error(run);
    return rt_scope_push(run, mode);
}

static int op_scope_end(struct simpler_orch *h)
{
    struct rt_run *run = run_of(h);
    if (run->scope_depth <= 1)
        return rt_fail_negated(run, SIMPLER_ORCH_ERR_SCOPE); /* the outer scope is the runtime's */
    close_scope(run);
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
        return rt_fail_negated(run, SIMPLER_ORCH_ERR_INVALID_ARGS);
    size_t es = simpler_dtype_size(t->dtype);
    /* The one element as a view, for the TensorMap. */
    struct simpler_tensor elem = *t;
    elem.ndims = 1;
    elem.start_offset = offset;
    elem.shape[0] = 1;
    elem.stride[0] = 1;

    int32_t code = rt_deps_discover_element(run, t, &elem, kind);
    if (code)
        return rt_fail_negated(run, code);
    if (run->hbg && run->fanin_n)
        return rt_fail_negated(run, SIMPLER_ORCH_ERR_NOT_HOST_VISIBLE); /* a task's value */
    if (!all_producers_done(run, NULL)) {
        int rc = rt_orch_block(run, all_producers_done, NULL, NULL,
                            run->config.tensor_wait_timeout_ms,
                            SIMPLER_ORCH_ERR_TENSOR_WAIT_TIMEOUT,
                            SIMPLER_ORCH_ERR_NOT_HOST_VISIBLE);
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
        return rt_fail_negated(run, SIMPLER_ORCH_ERR_INVALID_ARGS);
    int rc = element_access(run, t, index, RT_ACCESS_READ, &addr);
    if (rc)
        return rc;
    if (run->hbg) /* the staged host value, or refused */
        return (rc = rt_hbg_read_element(run, (uint64_t)(uintptr_t)addr,
                                         simpler_dtype_size(t->dtype), value))
                   ? rt_fail_negated(run, rc)
                   : 0;
    memcpy(value, addr, simpler_dtype_size(t->dtype));
    return 0;
}

static int op_write_element(struct simpler_orch *h, const struct simpler_tensor *t,
                            const uint64_t *index, const void *value)
{
    struct rt_run *run = run_of(h);
    void *addr = NULL;
    if (!value)
        return rt_fail_negated(run, SIMPLER_ORCH_ERR_INVALID_ARGS);
    int rc = element_access(run, t, index, RT_ACCESS_WRITE, &addr);
    if (rc)
        return rc;
    if (run->hbg) /* applied by the device before any task runs */
        return (rc = rt_hbg_write_element(run, (uint64_t)(uintptr_t)addr,
                                          simpler_dtype_size(t->dtype), value))
                   ? rt_fail_negated(run, rc)
                   : 0;
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

void rt_orch_start_schedulers(struct rt_run *run)
{
    if (run->others_held) {
        run->others_held = false;
        run->schedulers_at_submit = false;
        platform_aicpu_start_others();
    }
}

void rt_orch_goes_on(struct rt_run *run)
{
    if (run->schedulers_at_submit && run->tasks_submitted_local)
        rt_orch_start_schedulers(run);
    if (run->owes_core) {
        run->owes_core = false;
        rt_start_owed_core(run);
    }
    if (run->mates_due && run->tasks_submitted_local) {
        run->mates_due = false;
        rt_let_mates_arrive(run);
    }
}

void rt_orchestrator_init(struct rt_run *run)
{
    run->handle.ops = &g_ops;
    run->scope_depth = 0;
    run->next_scope_serial = 1;
    run->scope_task_top = 0;
    run->fanin_n = 0;
    run->tasks_submitted_local = 0;
    run->mates_due = false;
    run->owes_core = false; /* core_owed: run_reset_shared, both runtimes */
    run->others_held = false; /* rt_aicpu_round sets it for a TMR run */
    run->schedulers_at_submit = false;
    run->edges = 0;
    run->ring_waits = 0;
    run->tensormap_live_peak = 0;
    /* The TensorMap was reset by its init (run_init). */
}

void rt_orchestrate(struct rt_run *run, simpler_orch_entry_fn entry,
                    const struct simpler_orch_args *args)
{
    if (!rt_error(run) && rt_scope_push(run, SIMPLER_SCOPE_AUTO) == 0) {
        rt_owe_cores_begin(run);
        entry(&run->handle, args);
        if (run->scope_depth != 1)
            rt_fail(run, SIMPLER_ORCH_ERR_SCOPE); /* the entry left scopes open */
        while (run->scope_depth > 0)
            close_scope(run);
        rt_owe_cores_end();
    }
    /* seq_cst (a release too): pairs with rt_run_finished (run.h) and the
     * completer's look at orch_done (rt_task_complete); after it
     * tasks_submitted is final */
    atomic_store_explicit(&run->tasks_submitted, run->tasks_submitted_local,
                          memory_order_release);
    atomic_store_explicit(&run->orch_done, 1, memory_order_seq_cst);
    /* Only a run that ends here needs the signal: while tasks are still
     * to complete, the last completion signals the end (rt_run_finished's
     * pairing: either it sees orch_done, or this sees it), and a failure
     * signals itself (rt_fail). Signalled always, it woke the watcher
     * asleep on the run (a wake-up system call on this thread, 5-10 us)
     * in a one-task round whose core had just been started, and the
     * watcher then took a CPU from that core. */
    if (rt_run_finished(run))
        rt_signal(run);
}
