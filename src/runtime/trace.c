/*
 * runtime/trace.c — the device side of the swimlane trace: the region's
 * layout and the record writers (trace.h).
 *
 * Owns: the writers. Every writer appends to the
 * calling thread's own buffer only (single writer: plain stores; the host
 * reads the region after the round's stream work completed, which orders
 * it after every write), never waits, never allocates, and drops and
 * counts a record that does not fit. Must not touch run state beyond
 * reading the config and a slot's immutable fields.
 */
#include <string.h>

#include "common/checked.h"
#include "platform/platform.h"
#include "runtime/core_regs.h"
#include "runtime/run.h"
#include "runtime/runtime.h"
#include "runtime/task.h"
#include "runtime/trace.h"

void rt_trace_put(struct rt_trace_header *h, uint32_t buffer, const struct rt_trace_record *r)
{
    if (buffer >= h->buffer_count)
        return; /* not a thread the host sized the region for */
    struct rt_trace_buffer *b = &rt_trace_buffers(h)[buffer];
    if (b->count >= h->capacity) {
        b->dropped++;
        return;
    }
    rt_trace_records(h, buffer)[b->count++] = *r;
}

static void reset(struct rt_trace_header *h, uint32_t buffer, uint64_t generation)
{
    if (buffer >= h->buffer_count)
        return;
    struct rt_trace_buffer *b = &rt_trace_buffers(h)[buffer];
    b->generation = generation;
    b->count = 0;
    b->dropped = 0;
}

void rt_trace_aicpu_begin(const struct rt_config *c, uint64_t generation, uint32_t thread_index,
                          uint32_t thread_count)
{
    struct rt_trace_header *h = c->trace;
    if (!rt_trace_level(c) || thread_index + 1 != thread_count)
        return;
    h->generation = generation;
    h->tag = c->trace_tag;
    /* The buffer after the schedulers': TMR's orchestrator, or
     * host_build_graph's lay (rt_hbg_lay) by its booting thread. */
    reset(h, h->core_count + h->schedulers, generation);
}

void rt_trace_sched_begin(const struct rt_config *c, uint64_t generation, uint32_t sched)
{
    if (rt_trace_level(c))
        reset(c->trace, c->trace->core_count + sched, generation);
}

void rt_trace_core_begin(const struct rt_config *c, uint64_t generation, uint32_t core)
{
    if (rt_trace_level(c))
        reset(c->trace, core, generation);
}

void rt_trace_core_task(const struct rt_config *c, uint32_t core, uint64_t reg, uint64_t begin)
{
    struct rt_trace_header *h = c->trace;
    if (core >= SIMDEV_MAX_CORES)
        return;
    /* Read before the FIN: the scheduler rewrites this slot only for
     * dispatch id reg + RT_CORE_QUEUE, which it rings after this one
     * finished. */
    const struct rt_trace_core_slot *slot = &h->core_slot[core][rt_payload_index(reg)];
    struct rt_trace_record r = {
        .begin = begin,
        .end = platform_clock_ns(),
        .task_id = slot->task_id,
        .kind = RT_TR_TASK,
        .arg = {(uint32_t)slot->func_id, slot->block, slot->lane, 0, 0},
    };
    rt_trace_put(h, core, &r);
}

static uint64_t slot_task_id(const struct rt_slot *s)
{
    return atomic_load_explicit(&((struct rt_slot *)s)->task_id, memory_order_relaxed);
}

/* Appends a record of `kind` for `task_id` that began at `begin` and ends
 * now, to AICPU thread `thread`'s buffer. Returns now. */
static uint64_t emit(struct rt_run *run, uint32_t thread, uint32_t kind, uint64_t task_id,
                     uint64_t begin, uint32_t a0, uint32_t a1)
{
    struct rt_trace_header *h = run->config.trace;
    uint64_t now = platform_clock_ns();
    struct rt_trace_record r = {
        .begin = begin ? begin : now,
        .end = now,
        .task_id = task_id,
        .kind = kind,
        .arg = {a0, a1, 0, 0, 0},
    };
    rt_trace_put(h, h->core_count + thread, &r);
    return now;
}

void rt_trace_dispatch(struct rt_run *run, uint32_t sched, uint32_t core, uint64_t reg,
                       const struct rt_slot *s, int32_t func_id, uint32_t block, uint32_t lane)
{
    struct rt_trace_header *h = run->config.trace;
    if (core >= SIMDEV_MAX_CORES)
        return;
    uint64_t id = slot_task_id(s);
    struct rt_trace_core_slot *slot = &h->core_slot[core][rt_payload_index(reg)];
    slot->task_id = id;
    slot->func_id = func_id;
    slot->block = block;
    slot->lane = lane;
    if (run->config.trace_level >= 2)
        emit(run, sched, RT_TR_DISPATCH, id, 0, core, block);
}

void rt_trace_finish(struct rt_run *run, uint32_t sched, uint32_t core, const struct rt_slot *s)
{
    emit(run, sched, RT_TR_FINISH, slot_task_id(s), 0, core, 0);
}

uint64_t rt_trace_phase(struct rt_run *run, uint32_t sched, uint32_t phase, uint64_t begin)
{
    return emit(run, sched, RT_TR_PHASE, UINT64_MAX, begin, phase, 0);
}

uint64_t rt_trace_phase_if(struct rt_run *run, uint32_t sched, uint32_t phase, uint64_t begin,
                           bool happened)
{
    return happened ? rt_trace_phase(run, sched, phase, begin) : platform_clock_ns();
}

void rt_trace_submit(struct rt_run *run, uint64_t id, const int32_t kernel[3], uint32_t depth,
                     uint32_t shape, uint32_t block_num, uint64_t begin)
{
    struct rt_trace_header *h = run->config.trace;
    struct rt_trace_record r = {
        .end = platform_clock_ns(),
        .task_id = id,
        .kind = RT_TR_SUBMIT,
        .arg = {(uint32_t)kernel[0], (uint32_t)kernel[1], (uint32_t)kernel[2], depth,
                (shape & 0xffu) | (block_num << 8)},
    };
    r.begin = begin; /* 0 below level 4: no window, only the task */
    rt_trace_put(h, h->core_count + run->schedulers, &r);
}

void rt_trace_orch(struct rt_run *run, uint64_t begin)
{
    emit(run, run->schedulers, RT_TR_ORCH, UINT64_MAX, begin, 0, 0);
}
