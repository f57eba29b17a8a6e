/*
 * runtime/hbg_build.c — host_build_graph's host build (runtime/hbg.h).
 *
 * Owns: the sizes of the host scratch and of the image, the host arena's
 * init (the orchestrator's part of run_init, over host memory, with the
 * device arena's heap addresses handed out), the image writer the
 * orchestrator's hooks call (hbg_build.h), element access against the
 * staged host values, and the image's final assembly. Runs on the host:
 * calls no platform function and touches no device memory. The
 * orchestration's own calls are orchestrator.c's, unchanged but for the
 * hooks: the same checks, the same TensorMap, the same codes.
 */
#include <stddef.h>
#include <string.h>

#include "common/checked.h"
#include "common/task_id.h"
#include "runtime/aicpu_program.h"
#include "runtime/deps.h"
#include "runtime/hbg.h"
#include "runtime/hbg_build.h"
#include "runtime/invariants.h"
#include "runtime/layout.h"
#include "runtime/orchestrator.h"
#include "runtime/ring.h"
#include "runtime/run.h"
#include "runtime/tensormap.h"
#include "simpler/status.h"

/* The host arena's TensorMap mark: a scratch that held a build before has
 * it, fresh (zeroed) scratch does not (aicpu_program.c's rule, with this
 * constant for the arena nonce: the scratch is only ever a build's). */
#define HBG_TM_TOKEN 0x4842470000000001ull

struct rt_hbg_build_state {
    const struct rt_run_request *rq;
    const struct rt_hbg_host *host;
    uint8_t *image;            /* the bank */
    uint64_t cursor;           /* the next task record's offset */
    uint32_t task_count;
    uint32_t *producers;
    uint64_t producer_count, producer_capacity;
    struct rt_hbg_zero *zeros;
    uint64_t zero_count, zero_capacity;
    struct rt_hbg_write *writes;
    uint32_t write_count;
    bool read_inputs;          /* an element read took a staged host value */
    struct rt_task payload;    /* every submit's payload (rt_hbg_payload) */
};

/* ------------------------------------------------------------- sizes */

static uint64_t align8(uint64_t v)
{
    return (v + 7) & ~(uint64_t)7;
}

/* The most bytes one task record takes. */
static uint64_t task_record_max(void)
{
    return align8(sizeof(struct rt_hbg_task) +
                  (uint64_t)SIMPLER_TASK_MAX_TENSORS * sizeof(struct simpler_tensor) +
                  (uint64_t)SIMPLER_TASK_MAX_SCALARS * sizeof(uint64_t));
}

/* Sum of count[i] * each[i], 8-aligned per term; false on overflow. */
static bool sum_terms(const uint64_t *count, const uint64_t *each, uint32_t n, uint64_t *total)
{
    uint64_t t = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t term;
        if (!sp_mul_u64(count[i], each[i], &term) || !sp_add_u64(term, 7, &term) ||
            !sp_add_u64(t, term & ~(uint64_t)7, &t))
            return false;
    }
    *total = t;
    return true;
}

/* The task slots of every ring: the most tasks one run can hold. */
static uint64_t windows(const struct rt_config *c)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < RT_RINGS; i++)
        n += c->task_window[i];
    return n;
}

/* The most zero-fills one build records: one per OUTPUT created
 * zero-filled, and each such OUTPUT is a task's tensor and takes at least
 * one RT_HEAP_ALIGN unit of its ring's heap (sp_dense_bytes rounds a
 * nonzero size up), which an HBG run never reclaims (a heap that is full
 * fails the build: HEAP_DEADLOCK). */
static uint64_t zero_fills_max(const struct rt_config *c)
{
    uint64_t heap_units = 0;
    for (uint32_t i = 0; i < RT_RINGS; i++)
        heap_units += c->heap_bytes[i] / RT_HEAP_ALIGN; /* each <= 2^34: no overflow */
    uint64_t tensors = windows(c) * SIMPLER_TASK_MAX_TENSORS;
    return heap_units < tensors ? heap_units : tensors;
}

/* The lists one build keeps, in the order both the scratch and the image
 * hold them: producers, zero-fills, element writes, the edge log. */
static void list_sizes(const struct rt_config *c, uint64_t count[4], uint64_t each[4])
{
    count[0] = c->dep_pool[0];
    for (uint32_t i = 1; i < RT_RINGS; i++)
        count[0] += c->dep_pool[i];
    each[0] = sizeof(uint32_t);
    count[1] = zero_fills_max(c);
    each[1] = sizeof(struct rt_hbg_zero);
    count[2] = RT_HBG_MAX_WRITES;
    each[2] = sizeof(struct rt_hbg_write);
    /* An edge is a producer entry: the log never holds more (and the
     * bound does not depend on the log's capacity, so a traced run's
     * image fits the arena its context sized untraced). */
    count[3] = count[0];
    each[3] = sizeof(struct rt_edge);
}

size_t rt_hbg_image_bound(const struct rt_config *config)
{
    uint64_t count[5], each[5];
    list_sizes(config, count, each);
    count[4] = windows(config);
    each[4] = task_record_max();
    uint64_t lists;
    if (!sum_terms(count, each, 5, &lists) ||
        !sp_add_u64(lists, align8(sizeof(struct rt_hbg_header)), &lists) || lists > SIZE_MAX)
        return 0;
    return (size_t)lists;
}

/* Where the host arena starts in the scratch: after the build state, on a
 * cache line (the run's shared fields are cache-line aligned). */
static uint64_t arena_offset(void)
{
    return (align8(sizeof(struct rt_hbg_build_state)) + RT_CACHELINE - 1) / RT_CACHELINE *
           RT_CACHELINE;
}

/* The host arena's layout: TMR's, which has what the orchestrator uses
 * (TensorMap, dependency pools, fan-in scratch) and an HBG device arena
 * does not, and no image region. Its heaps are never touched: OUTPUTs
 * are given the device arena's (host_run_init). */
static int host_layout(const struct rt_config *config, uint32_t core_count, struct rt_layout *l)
{
    struct rt_config c = *config;
    c.runtime = RT_RUNTIME_TMR;
    return rt_layout_compute(&c, core_count, l);
}

size_t rt_hbg_scratch_bytes(const struct rt_config *config, uint32_t core_count)
{
    struct rt_layout l;
    uint64_t count[4], each[4], lists, total;
    if (host_layout(config, core_count, &l) != 0)
        return 0;
    list_sizes(config, count, each);
    if (!sum_terms(count, each, 4, &lists) || !sp_add_u64(lists, align8(l.total), &total) ||
        !sp_add_u64(total, arena_offset(), &total) || total > SIZE_MAX)
        return 0;
    return (size_t)total;
}

/* Writes a zero to every page of [at, at + bytes). */
static void warm_range(uint8_t *at, size_t bytes)
{
    enum { PAGE = 4096 };
    volatile uint8_t *p = at;
    for (size_t off = 0; off < bytes; off += PAGE)
        p[off] = 0;
    if (bytes)
        p[bytes - 1] = 0;
}

void rt_hbg_scratch_warm(void *scratch, const struct rt_config *config, uint32_t core_count)
{
    struct rt_layout l;
    size_t total = rt_hbg_scratch_bytes(config, core_count);
    if (!total || host_layout(config, core_count, &l) != 0)
        return;
    uint8_t *base = scratch;
    size_t arena = arena_offset();
    warm_range(base, arena + l.ring_slots[0]); /* the state and the run header */
    for (uint32_t i = 0; i < RT_RINGS; i++) { /* slots and TensorMap records; no payloads */
        warm_range(base + arena + l.ring_slots[i], l.ring_tasks[i] - l.ring_slots[i]);
        warm_range(base + arena + l.ring_tm[i], l.ring_heap[i] - l.ring_tm[i]);
    }
    /* queues, dispatch, scheds, scope tasks, fanin scratch, TensorMap, then
     * the lists after the arena */
    warm_range(base + arena + l.rq_cells[0], total - (arena + l.rq_cells[0]));
}

int rt_hbg_image_region(const struct rt_config *config, uint32_t core_count, void *arena,
                        void **image, size_t *bytes)
{
    struct rt_layout l;
    if (config->runtime != RT_RUNTIME_HBG || rt_layout_compute(config, core_count, &l) != 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *image = (uint8_t *)arena + l.hbg_image;
    *bytes = l.hbg_image_bytes;
    return 0;
}

/* ------------------------------------------------------ orchestrator hooks */

struct rt_task *rt_hbg_payload(struct rt_run *run)
{
    return &run->hbg->payload;
}

bool rt_hbg_kernel_present(struct rt_run *run, uint32_t id)
{
    return run->hbg->host->kernel_present[id] != 0;
}

int32_t rt_hbg_add_task(struct rt_run *run, struct rt_slot *s, const struct rt_task *t,
                        uint64_t id)
{
    struct rt_hbg_build_state *b = run->hbg;
    if (b->producer_capacity - b->producer_count < run->fanin_n)
        return SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW; /* never reclaimed: can never fit */
    s->hbg_index = b->task_count; /* nothing wires in a host build: the field is free */
    struct rt_hbg_task *rec = (struct rt_hbg_task *)(b->image + b->cursor);
    rec->task_id = id;
    rec->pad = 0;
    rec->tensor_count = t->tensor_count;
    rec->scalar_count = t->scalar_count;
    memcpy(rec->kernel, t->kernel, sizeof rec->kernel);
    rec->block_num = s->block_num;
    rec->shape = s->shape;
    rec->lanes = s->lanes;
    rec->sync_start = s->sync_start;
    rec->reserved = 0;
    rec->producer_first = (uint32_t)b->producer_count;
    rec->producer_count = run->fanin_n;
    for (uint32_t i = 0; i < run->fanin_n; i++)
        b->producers[b->producer_count++] = (uint32_t)run->fanin_scratch[i]->hbg_index;
    uint8_t *payload = (uint8_t *)(rec + 1);
    size_t tensors = (size_t)t->tensor_count * sizeof t->tensors[0];
    memcpy(payload, t->tensors, tensors);
    memcpy(payload + tensors, t->scalars, (size_t)t->scalar_count * sizeof t->scalars[0]);
    rec->bytes = (uint32_t)align8(sizeof *rec + tensors + t->scalar_count * sizeof t->scalars[0]);
    b->cursor += rec->bytes;
    b->task_count++;
    rt_deps_log_fanin(run, id);
    return 0;
}

void rt_hbg_add_zero(struct rt_run *run, uint64_t addr, uint64_t bytes)
{
    struct rt_hbg_build_state *b = run->hbg;
    /* zero_fills_max: every zero-fill took a heap unit no other took */
    RT_ASSERT_INVARIANT(b->zero_count < b->zero_capacity);
    b->zeros[b->zero_count++] = (struct rt_hbg_zero){addr, bytes};
}

/* True when [addr, addr + size) and [at, at + len) share a byte. */
static bool overlaps(uint64_t addr, uint64_t size, uint64_t at, uint64_t len)
{
    return addr < at + len && at < addr + size;
}

int32_t rt_hbg_read_element(struct rt_run *run, uint64_t addr, size_t size, void *value)
{
    struct rt_hbg_build_state *b = run->hbg;
    const struct rt_hbg_host *h = b->host;
    uint8_t bytes[8];
    uint8_t known[8] = {0};
    if (size > sizeof bytes)
        return SIMPLER_ORCH_ERR_INVALID_ARGS;
    /* The value the run starts with: a staged host tensor's. */
    for (uint32_t v = 0; v < h->view_count; v++) {
        const struct rt_hbg_view *view = &h->views[v];
        if (addr >= view->device && sp_range_inside(addr - view->device, size, view->bytes)) {
            memcpy(bytes, view->host + (addr - view->device), size);
            memset(known, 1, size);
            b->read_inputs = true; /* the graph may now depend on the data */
            break;
        }
    }
    /* Then the build's own element writes, in order. */
    for (uint32_t w = 0; w < b->write_count; w++) {
        const struct rt_hbg_write *wr = &b->writes[w];
        if (!overlaps(addr, size, wr->addr, wr->size))
            continue;
        for (size_t i = 0; i < size; i++)
            if (addr + i >= wr->addr && addr + i < wr->addr + wr->size) {
                bytes[i] = wr->value[addr + i - wr->addr];
                known[i] = 1;
            }
    }
    for (size_t i = 0; i < size; i++)
        if (!known[i])
            return SIMPLER_ORCH_ERR_NOT_HOST_VISIBLE; /* device memory the host never had */
    memcpy(value, bytes, size);
    return 0;
}

int32_t rt_hbg_write_element(struct rt_run *run, uint64_t addr, size_t size, const void *value)
{
    struct rt_hbg_build_state *b = run->hbg;
    if (size > sizeof b->writes[0].value)
        return SIMPLER_ORCH_ERR_INVALID_ARGS;
    if (b->write_count == RT_HBG_MAX_WRITES)
        return SIMPLER_ORCH_ERR_NOT_HOST_VISIBLE;
    struct rt_hbg_write *wr = &b->writes[b->write_count++];
    memset(wr, 0, sizeof *wr);
    wr->addr = addr;
    wr->size = size;
    memcpy(wr->value, value, size);
    return 0;
}

/* ----------------------------------------------------------- the build */

/* Carves the scratch: the build state, the host arena, the lists. */
static struct rt_hbg_build_state *carve(const struct rt_run_request *rq, const struct rt_layout *l,
                                        struct rt_run **run, struct rt_edge **edges)
{
    uint8_t *base = rq->hbg->scratch;
    uint64_t count[4], each[4];
    list_sizes(&rq->config, count, each);
    struct rt_hbg_build_state *b = (struct rt_hbg_build_state *)base;
    uint64_t at = arena_offset();
    *run = (struct rt_run *)(base + at);
    at += align8(l->total);
    void *list[4];
    for (uint32_t i = 0; i < 4; i++) {
        list[i] = base + at;
        at += align8(count[i] * each[i]);
    }
    memset(b, 0, sizeof *b);
    b->producers = list[0];
    b->producer_capacity = count[0];
    b->zeros = list[1];
    b->zero_capacity = count[1];
    b->writes = list[2];
    *edges = list[3];
    return b;
}

/* The orchestrator's part of run_init (aicpu_program.c), over the host
 * arena laid out by `l`: the device arena's heaps (where `device`, the
 * device arena's own layout, puts them) are what OUTPUTs are given. */
static int32_t host_run_init(struct rt_run *run, const struct rt_run_request *rq,
                             const struct rt_layout *l, const struct rt_layout *device,
                             uint32_t aic, uint32_t aiv,
                             uint32_t schedulers, uint64_t generation, struct rt_edge *edges)
{
    uint8_t *base = (uint8_t *)run;
    bool marked = run->tm_token == HBG_TM_TOKEN;
    run->tm_token = 0;
    atomic_init(&run->error, 0);
    atomic_init(&run->tasks_completed, 0);
    atomic_init(&run->tasks_submitted, 0);
    atomic_init(&run->orch_done, 0);
    atomic_init(&run->orch_waiting, 0);
    atomic_init(&run->orch_wait_target, 0);
    run->config = rq->config;
    run->config.trace_level = 0; /* the device's trace is the device's */
    run->config.trace_tag = 0;
    run->config.trace = NULL;
    run->config.edge_log = edges; /* the image carries the log */
    uint64_t producers = 0;
    for (uint32_t i = 0; i < RT_RINGS; i++)
        producers += rq->config.dep_pool[i];
    if (run->config.edge_log_capacity > producers) /* never more edges than that */
        run->config.edge_log_capacity = (uint32_t)producers;
    run->device = -1;
    run->aic_count = aic;
    run->aiv_count = aiv;
    run->cluster_count = aic < aiv / 2 ? aic : aiv / 2;
    run->core_count = aic + aiv;
    run->schedulers = schedulers;
    run->generation = generation;
    run->kernels = NULL;
    run->kernel_count = rq->kernel_count;
    run->dispatch = NULL;
    run->rendezvous = NULL;
    run->scheds = NULL;
    for (uint32_t i = 0; i < RT_RINGS; i++) {
        rt_ring_init(&run->rings[i], &rq->config, i, base, l);
        run->rings[i].heap = (uint8_t *)rq->arena + device->ring_heap[i];
    }
    rt_choose_sync_owners(run);
    run->scope_tasks = (struct rt_slot **)(base + l->scope_tasks);
    run->scope_task_capacity = l->scope_task_capacity;
    run->fanin_scratch = (struct rt_slot **)(base + l->fanin_scratch);
    run->fanin_sources = (uint32_t *)(run->fanin_scratch + rq->config.max_fanin);
    if (!(marked && rt_tensormap_reuse(&run->tensormap, base + l->tensormap,
                                       rq->config.tensormap_buckets,
                                       rq->config.tensormap_entries) == 0) &&
        rt_tensormap_init(&run->tensormap, base + l->tensormap, rq->config.tensormap_buckets,
                          rq->config.tensormap_entries) != 0)
        return SIMPLER_ORCH_ERR_BAD_CONFIG;
    run->tm_token = HBG_TM_TOKEN;
    rt_orchestrator_init(run);
    run->hbg_producers = NULL;
    return 0;
}

/* Appends `bytes` of `src` to the image at *at (8-aligned); its offset. */
static uint64_t put(uint8_t *image, uint64_t *at, const void *src, uint64_t bytes)
{
    uint64_t offset = *at;
    if (bytes)
        memcpy(image + offset, src, bytes);
    *at = align8(offset + bytes);
    return offset;
}

size_t rt_hbg_build(const struct rt_run_request *rq, uint32_t aic_cores, uint32_t aiv_cores,
                    uint32_t schedulers, uint64_t generation)
{
    const struct rt_hbg_host *h = rq->hbg;
    struct rt_layout l, device;
    if (!h || !h->entry || !h->args || !h->scratch || !h->bank ||
        (rq->kernel_count && !h->kernel_present) || (h->view_count && !h->views) ||
        rq->config.runtime != RT_RUNTIME_HBG ||
        host_layout(&rq->config, aic_cores + aiv_cores, &l) != 0 ||
        rt_layout_compute(&rq->config, aic_cores + aiv_cores, &device) != 0 ||
        h->scratch_bytes < rt_hbg_scratch_bytes(&rq->config, aic_cores + aiv_cores) ||
        h->bank_bytes < rt_hbg_image_bound(&rq->config))
        return 0;
    struct rt_run *run;
    struct rt_edge *edges;
    struct rt_hbg_build_state *b = carve(rq, &l, &run, &edges);
    b->rq = rq;
    b->host = h;
    b->image = h->bank;
    b->cursor = align8(sizeof(struct rt_hbg_header));
    int32_t code =
        host_run_init(run, rq, &l, &device, aic_cores, aiv_cores, schedulers, generation, edges);
    run->hbg = b;
    if (code)
        rt_fail(run, code);
    else
        rt_orchestrate(run, h->entry, h->args);

    struct rt_hbg_header hd;
    memset(&hd, 0, sizeof hd);
    hd.magic = RT_HBG_MAGIC;
    hd.error = rt_error(run);
    hd.generation = generation;
    hd.task_count = b->task_count;
    hd.edges = run->edges;
    hd.edges_logged = (uint32_t)(run->edges < rq->config.edge_log_capacity
                                     ? run->edges
                                     : rq->config.edge_log_capacity);
    hd.tensormap_live_peak = run->tensormap_live_peak;
    hd.flags = b->read_inputs ? RT_HBG_READ_INPUTS : 0;
    hd.tasks = align8(sizeof hd);
    uint64_t at = b->cursor;
    if (hd.error) {
        /* The device fails the run at once: only the header travels. */
        at = hd.tasks;
    } else {
        hd.producer_count = (uint32_t)b->producer_count;
        hd.zero_count = (uint32_t)b->zero_count;
        hd.write_count = b->write_count;
        hd.producers = put(b->image, &at, b->producers, b->producer_count * sizeof(uint32_t));
        hd.zeros = put(b->image, &at, b->zeros, b->zero_count * sizeof(struct rt_hbg_zero));
        hd.writes = put(b->image, &at, b->writes, b->write_count * sizeof(struct rt_hbg_write));
        hd.edge_log = put(b->image, &at, edges, hd.edges_logged * sizeof(struct rt_edge));
    }
    hd.bytes = at;
    memcpy(b->image, &hd, sizeof hd);
    run->hbg = NULL; /* the scratch holds no live build */
    return (size_t)at;
}

/* ------------------------------------------------ a kept image, relocated */

/* The range of `ranges` that holds `addr`, or range_count. A range's base
 * counts as inside even when it is empty: a tensor names its buffer by
 * its base. */
static uint32_t range_of(uint64_t addr, const struct rt_hbg_range *ranges, uint32_t range_count)
{
    for (uint32_t r = 0; r < range_count; r++)
        if (addr >= ranges[r].base &&
            (addr - ranges[r].base < ranges[r].bytes || addr == ranges[r].base))
            return r;
    return range_count;
}

/* A walk over an image's address fields: each one inside a range is
 * recorded into relocs[n] while n < capacity (relocs may be NULL) and
 * counted in n. */
struct reloc_walk {
    const uint8_t *image;
    const struct rt_hbg_range *ranges;
    uint32_t range_count;
    struct rt_hbg_reloc *relocs;
    uint64_t capacity, n;
};

/* The address field at offset `field`: a relocation when it names a range. */
static void note_field(struct reloc_walk *w, uint64_t field)
{
    uint64_t addr;
    memcpy(&addr, w->image + field, sizeof addr);
    uint32_t r = range_of(addr, w->ranges, w->range_count);
    if (r == w->range_count)
        return;
    if (w->relocs && w->n < w->capacity)
        w->relocs[w->n] = (struct rt_hbg_reloc){field, addr - w->ranges[r].base, r, 0};
    w->n++;
}

/* True when the 8-byte value at offset `at` (a scalar, a write's value)
 * lies in a range. */
static bool names_a_range(const struct reloc_walk *w, uint64_t at)
{
    uint64_t value;
    memcpy(&value, w->image + at, sizeof value);
    return range_of(value, w->ranges, w->range_count) != w->range_count;
}

bool rt_hbg_image_relocations(const void *image, const struct rt_hbg_range *ranges,
                              uint32_t range_count, struct rt_hbg_reloc *relocs,
                              uint64_t capacity, uint64_t *count)
{
    struct rt_hbg_header hd;
    memcpy(&hd, image, sizeof hd);
    if (hd.magic != RT_HBG_MAGIC || hd.error)
        return false;
    struct reloc_walk w = {image, ranges, range_count, relocs, capacity, 0};
    uint64_t at = hd.tasks;
    for (uint32_t i = 0; i < hd.task_count; i++) {
        struct rt_hbg_task rec;
        memcpy(&rec, w.image + at, sizeof rec);
        uint64_t tensors = at + sizeof rec;
        for (uint32_t t = 0; t < rec.tensor_count; t++)
            note_field(&w, tensors + (uint64_t)t * sizeof(struct simpler_tensor) +
                               offsetof(struct simpler_tensor, addr));
        uint64_t scalars = tensors + (uint64_t)rec.tensor_count * sizeof(struct simpler_tensor);
        for (uint32_t k = 0; k < rec.scalar_count; k++)
            if (names_a_range(&w, scalars + (uint64_t)k * sizeof(uint64_t)))
                return false;
        at += rec.bytes;
    }
    for (uint32_t z = 0; z < hd.zero_count; z++)
        note_field(&w, hd.zeros + (uint64_t)z * sizeof(struct rt_hbg_zero) +
                           offsetof(struct rt_hbg_zero, addr));
    for (uint32_t k = 0; k < hd.write_count; k++) {
        uint64_t wr = hd.writes + (uint64_t)k * sizeof(struct rt_hbg_write);
        uint64_t size;
        memcpy(&size, w.image + wr + offsetof(struct rt_hbg_write, size), sizeof size);
        if (size == sizeof(uint64_t) && names_a_range(&w, wr + offsetof(struct rt_hbg_write, value)))
            return false;
        note_field(&w, wr + offsetof(struct rt_hbg_write, addr));
    }
    *count = w.n;
    return true;
}

void rt_hbg_image_relocate(void *image, const struct rt_hbg_reloc *relocs, uint64_t count,
                           const uint64_t *bases)
{
    for (uint64_t i = 0; i < count; i++) {
        uint64_t addr = bases[relocs[i].range] + relocs[i].offset;
        memcpy((uint8_t *)image + relocs[i].field, &addr, sizeof addr);
    }
}

void rt_hbg_image_stamp(void *image, uint64_t generation)
{
    memcpy((uint8_t *)image + offsetof(struct rt_hbg_header, generation), &generation,
           sizeof generation);
}
