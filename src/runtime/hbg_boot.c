/*
 * runtime/hbg_boot.c — host_build_graph on the device (hbg_boot.h).
 *
 * Owns: the boot of a run from its image (check, zero-fills, element
 * writes, edge log), the lay of every task into its slot, classified once,
 * while the run executes (rt_hbg_lay), and the completion rule of an HBG
 * run. Tasks never retire during the run
 * (the rings as the host build filled them), so neither fan-out lists nor
 * holds exist: a task waits on exactly one producer at a time, its latest one
 * not yet complete, in that producer's waiter list (rt_slot.hbg_waiters,
 * a lock-free stack closed by the completion); the completion takes the
 * list and classifies each waiter again. Every AICPU thread schedules
 * (scheduler.c, dispatch.c unchanged): a completion here is what
 * rt_task_complete does in a TMR run.
 */
#include <string.h>

#include "common/checked.h"
#include "common/task_id.h"
#include "runtime/entries.h"
#include "runtime/hbg.h"
#include "runtime/hbg_boot.h"
#include "runtime/invariants.h"
#include "runtime/layout.h"
#include "runtime/run.h"
#include "runtime/step_token.h"
#include "runtime/task.h"
#include "runtime/trace.h"
#include "simpler/status.h"

/* True when `count` items of `each` bytes at `offset` lie inside `bytes`. */
static bool section_inside(uint64_t offset, uint64_t count, uint64_t each, uint64_t bytes)
{
    uint64_t len;
    return sp_mul_u64(count, each, &len) && sp_range_inside(offset, len, bytes) && offset % 8 == 0;
}

static bool lanes_kernels_valid(const struct rt_run *run, const struct rt_hbg_task *rec)
{
    static const uint8_t shape_of_lanes[8] = {RT_SHAPE_DUMMY, RT_SHAPE_AIC, RT_SHAPE_AIV,
                                              RT_SHAPE_MIX,   RT_SHAPES,    RT_SHAPE_MIX,
                                              RT_SHAPE_MIX,   RT_SHAPE_MIX};
    if (rec->lanes > 7 || shape_of_lanes[rec->lanes] != rec->shape)
        return false;
    for (uint32_t l = 0; l < 3; l++) {
        if (!(rec->lanes & (1u << l)))
            continue;
        int32_t k = rec->kernel[l];
        if (k < 0 || (uint32_t)k >= run->kernel_count || !run->kernels[k])
            return false;
    }
    return true;
}

/* The slot of the task at image index `i` (laid out by lay_tasks). */
static inline struct rt_slot *slot_of(struct rt_run *run, uint64_t i)
{
    return run->scope_tasks[i];
}

/* Lays task record `rec` (image index `i`) into its slot and payload. */
static void lay_task(struct rt_run *run, uint32_t i, const struct rt_hbg_task *rec)
{
    uint32_t ring = rt_id_ring(rec->task_id);
    struct rt_ring *r = &run->rings[ring];
    uint64_t local = rt_id_local(rec->task_id);
    struct rt_slot *s = &r->slots[local];
    struct rt_task *t = &r->tasks[local];
    run->scope_tasks[i] = s;
    atomic_store_explicit(&s->lock, 0, memory_order_relaxed);
    s->hbg_fanin_first = rec->producer_first;
    s->hbg_fanin_count = rec->producer_count;
    s->hbg_next = 0;
    atomic_store_explicit(&s->hbg_waiters, 0, memory_order_relaxed);
    atomic_store_explicit(&s->state, RT_PENDING, memory_order_relaxed);
    atomic_store_explicit(&s->fanin_pending, 0, memory_order_relaxed);
    atomic_store_explicit(&s->completed_subtasks, 0, memory_order_relaxed);
    atomic_store_explicit(&s->next_block, 0, memory_order_relaxed);
    atomic_store_explicit(&s->task_id, rec->task_id, memory_order_relaxed);
    uint32_t lanes = (uint32_t)__builtin_popcount(rec->lanes);
    s->block_num = rec->block_num;
    s->total_subtasks = rec->shape == RT_SHAPE_DUMMY ? 0 : rec->block_num * lanes;
    s->shape = rec->shape;
    s->lanes = rec->lanes;
    s->ring = (uint8_t)ring;
    s->sync_start = rec->sync_start;
    s->hbg_self = i + 1;
    t->tensor_count = rec->tensor_count;
    t->scalar_count = rec->scalar_count;
    memcpy(t->kernel, rec->kernel, sizeof t->kernel);
    /* its producers and image index are the slot's (hbg_fanin_first,
     * hbg_self); the payload holds no producer (nothing retires) */
    t->fanin_head = 0;
    t->fanin_count = 0;
    t->heap_end = t->dep_end = 0;
    t->scope_serial = 0;
    const uint8_t *payload = (const uint8_t *)(rec + 1);
    size_t tensors = (size_t)rec->tensor_count * sizeof t->tensors[0];
    memcpy(t->tensors, payload, tensors);
    memcpy(t->scalars, payload + tensors, (size_t)rec->scalar_count * sizeof t->scalars[0]);
}

/* Checks every task record; BAD_PACKET at the first that is not sound,
 * with nothing laid. Each ring's tasks come in the order of their local
 * ids from 0, as the host build gave them, inside the ring's window
 * (nothing is reclaimed, so nothing wraps). rt_hbg_lay lays them. */
static int32_t check_tasks(struct rt_run *run, const uint8_t *image, const struct rt_hbg_header *hd)
{
    uint64_t at = hd->tasks, end = hd->producers;
    uint64_t next[RT_RINGS] = {0};
    for (uint32_t i = 0; i < hd->task_count; i++) {
        struct rt_hbg_task rec;
        if (!sp_range_inside(at, sizeof rec, end))
            return SIMPLER_ORCH_ERR_BAD_PACKET;
        memcpy(&rec, image + at, sizeof rec);
        uint64_t payload = (uint64_t)rec.tensor_count * sizeof(struct simpler_tensor) +
                           (uint64_t)rec.scalar_count * sizeof(uint64_t);
        if (rec.tensor_count > SIMPLER_TASK_MAX_TENSORS ||
            rec.scalar_count > SIMPLER_TASK_MAX_SCALARS || rec.bytes % 8 ||
            rec.bytes < sizeof rec + payload || !sp_range_inside(at, rec.bytes, end) ||
            rec.block_num < 1 || rec.block_num > 65536 || rec.sync_start > 1 ||
            !lanes_kernels_valid(run, &rec) ||
            !sp_range_inside(rec.producer_first, rec.producer_count, hd->producer_count))
            return SIMPLER_ORCH_ERR_BAD_PACKET;
        uint32_t ring = rt_id_ring(rec.task_id);
        if (ring >= RT_RINGS || rt_id_local(rec.task_id) != next[ring] ||
            next[ring] >= run->rings[ring].window)
            return SIMPLER_ORCH_ERR_BAD_PACKET;
        next[ring]++;
        for (uint32_t k = 0; k < rec.producer_count; k++)
            if (run->hbg_producers[rec.producer_first + k] >= i)
                return SIMPLER_ORCH_ERR_BAD_PACKET; /* only earlier tasks produce */
        at += rec.bytes;
    }
    for (uint32_t r = 0; r < RT_RINGS; r++)
        run->rings[r].next_local = next[r];
    return 0;
}

/* True when [addr, addr + bytes) lies inside one ring's output heap. */
static bool in_a_heap(const struct rt_run *run, uint64_t addr, uint64_t bytes)
{
    for (uint32_t i = 0; i < RT_RINGS; i++) {
        uint64_t heap = (uint64_t)(uintptr_t)run->rings[i].heap;
        if (addr >= heap && sp_range_inside(addr - heap, bytes, run->rings[i].heap_bytes))
            return true;
    }
    return false;
}

/* Parks `w` on its latest producer not yet complete among
 * producers[0, below) of its list; false when every one of them has
 * completed. Reads `w`'s slot and its producers' alone (not its payload:
 * a completion re-parks its waiters on the completing core, where their
 * payloads, laid on another CPU, are not). */
static bool park_below(struct rt_run *run, struct rt_slot *w, uint32_t below)
{
    const uint32_t *producers = run->hbg_producers + w->hbg_fanin_first;
    for (uint32_t k = below; k-- > 0;) {
        struct rt_slot *p = slot_of(run, producers[k]);
        /* acquire: pairs with the completion's exchange; a producer seen
         * closed has completed and its writes are visible */
        uint64_t head = atomic_load_explicit(&p->hbg_waiters, memory_order_acquire);
        while (head != RT_HBG_CLOSED) {
            w->hbg_next = (uint32_t)head;
            /* release: the link above before the completer reads it */
            if (atomic_compare_exchange_weak_explicit(&p->hbg_waiters, &head, w->hbg_self,
                                                      memory_order_acq_rel,
                                                      memory_order_acquire))
                return true;
        }
    }
    return false;
}

/* Parks `w` on its latest producer not yet complete; false when every
 * producer has completed (the task is ready). */
static bool park(struct rt_run *run, struct rt_slot *w)
{
    return park_below(run, w, w->hbg_fanin_count);
}

/* Parks `w` again once `done`, the producer it was parked on, completed.
 * It parked on the topmost entry of `done` in its list, every entry above
 * having completed by then: the scan goes on below it, and reads none of
 * the producers above (their lines are the cores' that completed them). */
static bool park_again(struct rt_run *run, struct rt_slot *w, const struct rt_slot *done)
{
    const uint32_t *producers = run->hbg_producers + w->hbg_fanin_first;
    uint32_t k = w->hbg_fanin_count;
    while (k > 0 && producers[k - 1] + 1 != done->hbg_self)
        k--;
    RT_ASSERT_INVARIANT(k > 0); /* `done` is in its list: w parked on it */
    return park_below(run, w, k > 0 ? k - 1 : w->hbg_fanin_count);
}

int32_t rt_hbg_boot(struct rt_run *run, const struct rt_launch_args *la, const uint8_t *image,
                    size_t capacity)
{
    struct rt_hbg_header hd;
    if (capacity < sizeof hd)
        return SIMPLER_ORCH_ERR_BAD_PACKET;
    memcpy(&hd, image, sizeof hd);
    if (hd.magic != RT_HBG_MAGIC || hd.generation != la->generation || hd.bytes > capacity ||
        hd.bytes < sizeof hd)
        return SIMPLER_ORCH_ERR_BAD_PACKET;
    /* What the run reports if the image is refused; rt_hbg_lay counts it
     * again as it lays. */
    atomic_store_explicit(&run->tasks_submitted, hd.task_count, memory_order_relaxed);
    run->edges = hd.edges;
    run->tensormap_live_peak = (uint32_t)hd.tensormap_live_peak;
    if (hd.error)
        return hd.error > 0 ? hd.error : SIMPLER_ORCH_ERR_BAD_PACKET;
    if (hd.task_count > run->scope_task_capacity || hd.edges_logged > hd.edges ||
        !section_inside(hd.tasks, 1, 0, hd.producers) ||
        !section_inside(hd.producers, hd.producer_count, sizeof(uint32_t), hd.bytes) ||
        !section_inside(hd.zeros, hd.zero_count, sizeof(struct rt_hbg_zero), hd.bytes) ||
        !section_inside(hd.writes, hd.write_count, sizeof(struct rt_hbg_write), hd.bytes) ||
        !section_inside(hd.edge_log, hd.edges_logged, sizeof(struct rt_edge), hd.bytes))
        return SIMPLER_ORCH_ERR_BAD_PACKET;
    run->hbg_producers = (const uint32_t *)(image + hd.producers);
    int32_t code = check_tasks(run, image, &hd);
    if (code)
        return code;
    /* Zero-fills lie in a ring's heap; writes are the orchestration's own,
     * in its order, after them (they touch no task's output). */
    for (uint32_t z = 0; z < hd.zero_count; z++) {
        struct rt_hbg_zero zero;
        memcpy(&zero, image + hd.zeros + (uint64_t)z * sizeof zero, sizeof zero);
        if (!in_a_heap(run, zero.addr, zero.bytes))
            return SIMPLER_ORCH_ERR_BAD_PACKET;
        memset((void *)(uintptr_t)zero.addr, 0, zero.bytes);
    }
    for (uint32_t w = 0; w < hd.write_count; w++) {
        struct rt_hbg_write wr;
        memcpy(&wr, image + hd.writes + (uint64_t)w * sizeof wr, sizeof wr);
        if (wr.size > sizeof wr.value || wr.addr == 0)
            return SIMPLER_ORCH_ERR_BAD_PACKET;
        memcpy((void *)(uintptr_t)wr.addr, wr.value, wr.size);
    }
    uint64_t logged = hd.edges_logged < run->config.edge_log_capacity
                          ? hd.edges_logged
                          : run->config.edge_log_capacity;
    if (logged)
        memcpy(run->config.edge_log, image + hd.edge_log, logged * sizeof(struct rt_edge));
    run->hbg_records = image + hd.tasks;
    run->hbg_task_count = hd.task_count;
    return 0;
}

/* How many tasks rt_hbg_lay lays between two publishes of what it made
 * ready (and of its progress, tasks_submitted): a publish is a fence and
 * may be a step on this thread, so not one a task; a task made ready
 * waits at most this many lays (about 100 ns each) for its publish, and
 * none when an awake core fetches it meanwhile. */
#ifndef RT_HBG_LAY_BATCH
#define RT_HBG_LAY_BATCH 32u
#endif

void rt_hbg_lay(struct rt_run *run)
{
    const uint8_t *at = run->hbg_records;
    uint32_t n = run->hbg_task_count;
    const struct rt_slot *first = NULL; /* the batch's first ready task */
    bool alike = true; /* every ready task of the batch fetchable, of first's shape */
    for (uint32_t i = 0; i < n; i++) {
        const struct rt_hbg_task *rec = (const struct rt_hbg_task *)at;
        lay_task(run, i, rec);
        if (run->config.trace_level) /* when it reached the device: no window, no
                                      * scope depth (the host's) */
            rt_trace_submit(run, rec->task_id, rec->kernel, UINT32_MAX, rec->shape,
                            rec->block_num, 0);
        at += rec->bytes;
        struct rt_slot *s = slot_of(run, i);
        if (!park(run, s)) {
            rt_task_ready(run, s);
            if (!first)
                first = s;
            alike = alike && rt_slot_plain(s) && s->shape == first->shape;
        }
        if ((i + 1) % RT_HBG_LAY_BATCH && i + 1 != n)
            continue;
        /* release: the slots laid before the watchdog's and the run's
         * end's acquire (as a TMR submit's) */
        atomic_store_explicit(&run->tasks_submitted, i + 1, memory_order_release);
        if (first)
            rt_sched_publish_batch(run, first, alike);
        first = NULL;
        alike = true;
        if (rt_error(run))
            break; /* the run is over: the rest must not run */
    }
    /* The whole graph, laid or not (a failed run stops laying): the count
     * the run reports, as the host build counted it. seq_cst on orch_done
     * (a release too): pairs with rt_run_finished and the completer's look
     * at orch_done (rt_hbg_complete). */
    atomic_store_explicit(&run->tasks_submitted, n, memory_order_release);
    atomic_store_explicit(&run->orch_done, 1, memory_order_seq_cst);
    rt_signal(run);
}

bool rt_hbg_complete(struct rt_run *run, struct rt_slot *s, struct rt_released *released)
{
    /* release: a waiter that sees COMPLETED sees this task's outputs */
    atomic_store_explicit(&s->state, RT_COMPLETED, memory_order_release);
    /* acq_rel: every waiter's link before its push; closes the list, so a
     * later park goes on to an earlier producer */
    uint64_t head = atomic_exchange_explicit(&s->hbg_waiters, RT_HBG_CLOSED, memory_order_acq_rel);
    while (head) {
        struct rt_slot *w = slot_of(run, head - 1);
        head = w->hbg_next; /* before a new park rewrites it */
        if (!park_again(run, w, s))
            rt_task_route(run, w, released);
    }
    return rt_run_count_completion(run); /* orch_done: rt_hbg_lay's end */
}
