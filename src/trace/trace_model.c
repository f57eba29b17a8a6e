/*
 * trace/trace_model.c — the model of one traced run (trace_model.h).
 *
 * Owns: checking a collected region before reading it, and joining its
 * records into tasks (submit record + the blocks that ran + the
 * scheduler's dispatch and finish of each block) with the ready time of
 * every task (the later of its submit and its last producer's end: the
 * moment its last dependency was satisfied). Host memory only. Must not
 * write anything: the writers are trace_export.c's.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "common/checked.h"
#include "common/trace_format.h"
#include "simpler/callable.h"
#include "simpler/status.h"
#include "trace/trace_model.h"

static const char *const span_names[SP_SPAN_COUNT] = {
    "prepare", "stage", "launch", "wait", "copy back", "finalize", "host build",
};

const char *sp_span_name(enum sp_span span)
{
    return (unsigned)span < SP_SPAN_COUNT ? span_names[span] : "unknown";
}

/* ------------------------------------------------------------ checking */

static const struct rt_trace_buffer *buffer(const struct rt_trace_header *h, uint32_t b)
{
    return (const struct rt_trace_buffer *)((const uint8_t *)h + h->buffers_offset) + b;
}

static bool buffer_live(const struct rt_trace_header *h, uint32_t b)
{
    return buffer(h, b)->generation == h->generation && buffer(h, b)->count <= h->capacity;
}

static const struct rt_trace_record *records(const struct rt_trace_header *h, uint32_t b)
{
    return (const struct rt_trace_record *)((const uint8_t *)h + h->records_offset) +
           (size_t)b * h->capacity;
}

const struct rt_trace_record *sp_trace_live_records(const struct rt_trace_header *h, uint32_t b,
                                                  uint64_t *n)
{
    *n = buffer_live(h, b) ? buffer(h, b)->count : 0;
    return records(h, b);
}

/* The region's layout is the one rt_trace_layout computes for its own
 * header fields, and fits in what was copied. */
static bool region_valid(const struct rt_trace_header *h, uint64_t bytes)
{
    struct rt_trace_header l;
    if (bytes < sizeof *h || h->magic != RT_TRACE_MAGIC || h->version != RT_TRACE_VERSION ||
        rt_trace_layout(h->level, h->core_count, h->schedulers, h->capacity, h->edge_capacity,
                        &l) != 0)
        return false;
    return l.buffer_count == h->buffer_count && l.buffers_offset == h->buffers_offset &&
           l.records_offset == h->records_offset && l.edges_offset == h->edges_offset &&
           l.total_bytes == h->total_bytes && h->total_bytes <= bytes;
}

/* -------------------------------------------------------------- model */

static int cmp_task(const void *a, const void *b)
{
    uint64_t x = ((const struct sp_trace_task *)a)->id, y = ((const struct sp_trace_task *)b)->id;
    return x < y ? -1 : x > y;
}

static int cmp_block(const void *a, const void *b)
{
    const struct sp_trace_block *x = a, *y = b;
    if (x->task_id != y->task_id)
        return x->task_id < y->task_id ? -1 : 1;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

struct sp_trace_task *sp_trace_find_task(const struct sp_trace_model *m, uint64_t id)
{
    struct sp_trace_task key = {.id = id};
    return bsearch(&key, m->tasks, m->task_count, sizeof key, cmp_task);
}

static void note_time(struct sp_trace_model *m, uint64_t t)
{
    if (t && (!m->origin || t < m->origin))
        m->origin = t;
}

/* Counts records of `kind` in the live buffers [first, first + n). */
static uint64_t count_kind(const struct rt_trace_header *h, uint32_t first, uint32_t n,
                           uint32_t kind)
{
    uint64_t total = 0, count;
    for (uint32_t b = first; b < first + n; b++) {
        const struct rt_trace_record *r = sp_trace_live_records(h, b, &count);
        for (uint64_t i = 0; i < count; i++)
            total += r[i].kind == kind;
    }
    return total;
}

static void collect_blocks(struct sp_trace_model *m)
{
    const struct rt_trace_header *h = m->h;
    for (uint32_t c = 0; c < h->core_count; c++) {
        uint64_t count;
        const struct rt_trace_record *r = sp_trace_live_records(h, c, &count);
        for (uint64_t i = 0; i < count; i++) {
            if (r[i].kind != RT_TR_TASK)
                continue;
            struct sp_trace_block *b = &m->blocks[m->block_count++];
            b->task_id = r[i].task_id;
            b->begin = r[i].begin;
            b->end = r[i].end;
            b->dispatch = 0;
            b->core = c;
            b->func_id = r[i].arg[0];
            b->block = r[i].arg[1];
            note_time(m, b->begin);
        }
    }
    qsort(m->blocks, m->block_count, sizeof *m->blocks, cmp_block);
}

/* Task table: every submitted task, plus any that ran without a submit
 * record (the orchestrator's buffer overflowed). */
static int collect_tasks(struct sp_trace_model *m)
{
    const struct rt_trace_header *h = m->h;
    uint32_t orch = h->core_count + h->schedulers;
    uint64_t submits = count_kind(h, orch, 1, RT_TR_SUBMIT);
    uint64_t n;
    if (!sp_add_u64(submits, m->block_count, &n))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    m->tasks = calloc(n ? n : 1, sizeof *m->tasks);
    if (!m->tasks)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    uint64_t count;
    const struct rt_trace_record *r = sp_trace_live_records(h, orch, &count);
    for (uint64_t i = 0; i < count; i++) {
        note_time(m, r[i].begin ? r[i].begin : r[i].end); /* the entry span starts first */
        if (r[i].kind != RT_TR_SUBMIT)
            continue;
        struct sp_trace_task *t = &m->tasks[m->task_count++];
        t->id = r[i].task_id;
        t->submit_begin = r[i].begin;
        t->submit_end = r[i].end;
        for (int l = 0; l < 3; l++)
            t->kernel[l] = (int32_t)r[i].arg[l];
        t->depth = r[i].arg[3];
        t->shape = r[i].arg[4] & 0xffu;
        t->block_num = r[i].arg[4] >> 8;
        t->func_id = t->kernel[0] >= 0 ? t->kernel[0] : t->kernel[1] >= 0 ? t->kernel[1]
                                                                           : t->kernel[2];
    }
    qsort(m->tasks, m->task_count, sizeof *m->tasks, cmp_task);
    uint64_t known = m->task_count;
    for (uint64_t i = 0; i < m->block_count; i++) {
        struct sp_trace_block *b = &m->blocks[i];
        if (i && m->blocks[i - 1].task_id == b->task_id)
            continue;
        struct sp_trace_task key = {.id = b->task_id};
        if (bsearch(&key, m->tasks, known, sizeof key, cmp_task))
            continue;
        struct sp_trace_task *t = &m->tasks[m->task_count++];
        t->id = b->task_id;
        t->kernel[0] = t->kernel[1] = t->kernel[2] = SIMPLER_NO_KERNEL;
        t->func_id = (int32_t)b->func_id;
        t->depth = UINT32_MAX;
        t->block_num = 0;
    }
    qsort(m->tasks, m->task_count, sizeof *m->tasks, cmp_task);
    /* Blocks are sorted by task, then start. */
    for (uint64_t i = 0; i < m->block_count; i++) {
        struct sp_trace_task *t = sp_trace_find_task(m, m->blocks[i].task_id);
        if (!t->first_begin) {
            t->first_begin = m->blocks[i].begin;
            t->first_block = (uint32_t)i;
        }
        if (m->blocks[i].end >= t->last_end) {
            t->last_end = m->blocks[i].end;
            t->last_block = (uint32_t)i;
        }
    }
    return 0;
}

/* Joins the schedulers' dispatch records to their blocks: the block of
 * that task on that core that started first at or after the dispatch. */
static void collect_dispatches(struct sp_trace_model *m)
{
    const struct rt_trace_header *h = m->h;
    for (uint32_t s = 0; s < h->schedulers; s++) {
        uint64_t count;
        const struct rt_trace_record *r = sp_trace_live_records(h, h->core_count + s, &count);
        for (uint64_t i = 0; i < count; i++) {
            note_time(m, r[i].begin);
            if (r[i].kind != RT_TR_DISPATCH)
                continue;
            struct sp_trace_task *t = sp_trace_find_task(m, r[i].task_id);
            if (!t || !t->first_begin)
                continue;
            for (uint64_t k = t->first_block;
                 k < m->block_count && m->blocks[k].task_id == t->id; k++) {
                struct sp_trace_block *bl = &m->blocks[k];
                if (bl->core == r[i].arg[0] && bl->block == r[i].arg[1] && !bl->dispatch &&
                    bl->begin >= r[i].begin) {
                    bl->dispatch = r[i].begin;
                    break;
                }
            }
        }
    }
}

static void compute_ready(struct sp_trace_model *m)
{
    for (uint64_t i = 0; i < m->task_count; i++)
        m->tasks[i].ready = m->tasks[i].submit_end;
    for (uint64_t e = 0; e < m->edge_count; e++) {
        struct sp_trace_task *p = sp_trace_find_task(m, m->edges[e].producer);
        struct sp_trace_task *c = sp_trace_find_task(m, m->edges[e].consumer);
        if (p && c && c->ready && p->last_end > c->ready)
            c->ready = p->last_end;
    }
}

int sp_trace_model_build(const struct sp_trace_input *in, struct sp_trace_model **out)
{
    if (!in || !out || !in->region || !region_valid(in->region, in->region_bytes))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sp_trace_model *m = calloc(1, sizeof *m);
    if (!m)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    m->in = *in;
    m->h = in->region;
    const struct rt_trace_header *h = m->h;
    for (uint32_t b = 0; b < h->buffer_count; b++)
        if (buffer_live(h, b))
            m->dropped += buffer(h, b)->dropped;
    uint64_t blocks = count_kind(h, 0, h->core_count, RT_TR_TASK);
    m->blocks = calloc(blocks ? blocks : 1, sizeof *m->blocks);
    int rc = m->blocks ? 0 : PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    if (!rc) {
        collect_blocks(m);
        rc = collect_tasks(m);
    }
    if (rc) {
        sp_trace_model_free(m);
        return rc;
    }
    m->edges = (const struct rt_edge *)((const uint8_t *)h + h->edges_offset);
    m->edge_count = in->edges_total < h->edge_capacity ? in->edges_total : h->edge_capacity;
    collect_dispatches(m);
    compute_ready(m);
    for (int s = 0; s < SP_SPAN_COUNT; s++)
        note_time(m, in->spans[s][0]);
    *out = m;
    return 0;
}

void sp_trace_model_free(struct sp_trace_model *m)
{
    if (!m)
        return;
    free(m->tasks);
    free(m->blocks);
    free(m);
}

void sp_trace_model_counts(const struct sp_trace_model *m, struct sp_trace_counts *out)
{
    out->tasks = m->task_count;
    out->blocks = m->block_count;
    out->edges = m->edge_count;
    out->dropped = m->dropped;
    out->events = m->events;
}
