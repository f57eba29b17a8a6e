/*
 * trace/trace_export.c — the model of one traced run and its writers
 * (trace_export.h).
 *
 * Owns: checking a collected region before reading it, joining its records
 * into tasks (submit record + the blocks that ran + the scheduler's
 * dispatch and finish of each block), the ready time of every task (the
 * later of its submit and its last producer's end: the moment its last
 * dependency was satisfied), and the Chrome trace event, deps JSON and
 * DOT writers. Host memory only.
 *
 * Tracks of the Chrome JSON: pid 1 is the device — tid 1 the orchestrator,
 * 10 + i scheduler i, 100 + c core c; pid 2 is the host, tid 1 its spans.
 * Times are microseconds from the first recorded event (ns precision).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "trace/trace_export.h"
#include "common/task_id.h"
#include "common/trace_format.h"
#include "simpler/callable.h"
#include "simpler/status.h"

#define PID_DEVICE 1
#define PID_HOST 2
#define TID_ORCH 1
#define TID_SCHED 10
#define TID_CORE 100

static const char *const span_names[SP_SPAN_COUNT] = {
    "prepare", "stage", "launch", "wait", "copy back", "finalize",
};

const char *sp_span_name(enum sp_span span)
{
    return (unsigned)span < SP_SPAN_COUNT ? span_names[span] : "unknown";
}

struct dfx_block {
    uint64_t task_id;
    uint64_t begin, end;
    uint64_t dispatch; /* 0: not recorded (level 1) */
    uint32_t core, block, func_id;
};

struct dfx_task {
    uint64_t id;
    uint64_t submit_begin, submit_end; /* submit_end 0: no submit record */
    uint64_t first_begin, last_end;    /* of its blocks; 0: none ran */
    uint64_t ready;                    /* see the file comment; 0: unknown */
    int32_t kernel[3];
    uint32_t depth, shape, block_num;
    uint32_t first_block, last_block;  /* indices into blocks */
    int32_t func_id;                   /* the first lane's kernel */
};

struct sp_dfx_model {
    struct sp_dfx_input in;
    const struct rt_trace_header *h;
    struct dfx_task *tasks;
    uint64_t task_count;
    struct dfx_block *blocks;
    uint64_t block_count;
    const struct rt_edge *edges;
    uint64_t edge_count;
    uint64_t dropped;
    uint64_t origin; /* the earliest time */
    uint64_t events;
};

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

/* The records of buffer `b` when it belongs to the collected round (its
 * generation is the header's), else none; *n is their count. */
static const struct rt_trace_record *live_records(const struct rt_trace_header *h, uint32_t b,
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
    uint64_t x = ((const struct dfx_task *)a)->id, y = ((const struct dfx_task *)b)->id;
    return x < y ? -1 : x > y;
}

static int cmp_block(const void *a, const void *b)
{
    const struct dfx_block *x = a, *y = b;
    if (x->task_id != y->task_id)
        return x->task_id < y->task_id ? -1 : 1;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static struct dfx_task *find_task(const struct sp_dfx_model *m, uint64_t id)
{
    struct dfx_task key = {.id = id};
    return bsearch(&key, m->tasks, m->task_count, sizeof key, cmp_task);
}

static void note_time(struct sp_dfx_model *m, uint64_t t)
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
        const struct rt_trace_record *r = live_records(h, b, &count);
        for (uint64_t i = 0; i < count; i++)
            total += r[i].kind == kind;
    }
    return total;
}

static void collect_blocks(struct sp_dfx_model *m)
{
    const struct rt_trace_header *h = m->h;
    for (uint32_t c = 0; c < h->core_count; c++) {
        uint64_t count;
        const struct rt_trace_record *r = live_records(h, c, &count);
        for (uint64_t i = 0; i < count; i++) {
            if (r[i].kind != RT_TR_TASK)
                continue;
            struct dfx_block *b = &m->blocks[m->block_count++];
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
static int collect_tasks(struct sp_dfx_model *m)
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
    const struct rt_trace_record *r = live_records(h, orch, &count);
    for (uint64_t i = 0; i < count; i++) {
        note_time(m, r[i].begin ? r[i].begin : r[i].end); /* the entry span starts first */
        if (r[i].kind != RT_TR_SUBMIT)
            continue;
        struct dfx_task *t = &m->tasks[m->task_count++];
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
        struct dfx_block *b = &m->blocks[i];
        if (i && m->blocks[i - 1].task_id == b->task_id)
            continue;
        struct dfx_task key = {.id = b->task_id};
        if (bsearch(&key, m->tasks, known, sizeof key, cmp_task))
            continue;
        struct dfx_task *t = &m->tasks[m->task_count++];
        t->id = b->task_id;
        t->kernel[0] = t->kernel[1] = t->kernel[2] = SIMPLER_NO_KERNEL;
        t->func_id = (int32_t)b->func_id;
        t->depth = UINT32_MAX;
        t->block_num = 0;
    }
    qsort(m->tasks, m->task_count, sizeof *m->tasks, cmp_task);
    /* Blocks are sorted by task, then start. */
    for (uint64_t i = 0; i < m->block_count; i++) {
        struct dfx_task *t = find_task(m, m->blocks[i].task_id);
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
static void collect_dispatches(struct sp_dfx_model *m)
{
    const struct rt_trace_header *h = m->h;
    for (uint32_t s = 0; s < h->schedulers; s++) {
        uint64_t count;
        const struct rt_trace_record *r = live_records(h, h->core_count + s, &count);
        for (uint64_t i = 0; i < count; i++) {
            note_time(m, r[i].begin);
            if (r[i].kind != RT_TR_DISPATCH)
                continue;
            struct dfx_task *t = find_task(m, r[i].task_id);
            if (!t || !t->first_begin)
                continue;
            for (uint64_t k = t->first_block;
                 k < m->block_count && m->blocks[k].task_id == t->id; k++) {
                struct dfx_block *bl = &m->blocks[k];
                if (bl->core == r[i].arg[0] && bl->block == r[i].arg[1] && !bl->dispatch &&
                    bl->begin >= r[i].begin) {
                    bl->dispatch = r[i].begin;
                    break;
                }
            }
        }
    }
}

static void compute_ready(struct sp_dfx_model *m)
{
    for (uint64_t i = 0; i < m->task_count; i++)
        m->tasks[i].ready = m->tasks[i].submit_end;
    for (uint64_t e = 0; e < m->edge_count; e++) {
        struct dfx_task *p = find_task(m, m->edges[e].producer);
        struct dfx_task *c = find_task(m, m->edges[e].consumer);
        if (p && c && c->ready && p->last_end > c->ready)
            c->ready = p->last_end;
    }
}

int sp_dfx_model_build(const struct sp_dfx_input *in, struct sp_dfx_model **out)
{
    if (!in || !out || !in->region || !region_valid(in->region, in->region_bytes))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sp_dfx_model *m = calloc(1, sizeof *m);
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
        sp_dfx_model_free(m);
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

void sp_dfx_model_free(struct sp_dfx_model *m)
{
    if (!m)
        return;
    free(m->tasks);
    free(m->blocks);
    free(m);
}

void sp_dfx_model_counts(const struct sp_dfx_model *m, struct sp_dfx_counts *out)
{
    out->tasks = m->task_count;
    out->blocks = m->block_count;
    out->edges = m->edge_count;
    out->dropped = m->dropped;
    out->events = m->events;
}

/* ------------------------------------------------------------- writing */

/* Writes `s` as a JSON string body (quotes, backslashes, control bytes
 * escaped). */
static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
}

static const char *kernel_name(const struct sp_dfx_model *m, int32_t func_id, char *buf,
                               size_t size)
{
    if (func_id >= 0 && func_id < SP_DFX_MAX_KERNELS && m->in.kernel_names[func_id])
        return m->in.kernel_names[func_id];
    if (func_id < 0)
        return "dummy";
    snprintf(buf, size, "func %" PRId32, func_id);
    return buf;
}

static const char *core_type_name(const struct sp_dfx_model *m, int32_t func_id)
{
    if (func_id < 0 || func_id >= SP_DFX_MAX_KERNELS)
        return "none";
    return m->in.kernel_core[func_id] == SIMPLER_CORE_AIC ? "AIC" : "AIV";
}

static double us(const struct sp_dfx_model *m, uint64_t t)
{
    return t >= m->origin ? (double)(t - m->origin) / 1000.0 : 0.0;
}

static void hazard_names(uint32_t sources, uint32_t hazards, char *buf, size_t size)
{
    static const struct {
        uint32_t bit;
        bool hazard;
        const char *name;
    } names[] = {
        {RT_EDGE_RAW, true, "RAW"},         {RT_EDGE_WAR, true, "WAR"},
        {RT_EDGE_WAW, true, "WAW"},         {RT_EDGE_EXPLICIT, false, "explicit"},
        {RT_EDGE_CREATOR, false, "creator"},
    };
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!((names[i].hazard ? hazards : sources) & names[i].bit))
            continue;
        int n = snprintf(buf + at, size - at, "%s%s", at ? "," : "", names[i].name);
        if (n < 0 || (size_t)n >= size - at)
            break;
        at += (size_t)n;
    }
    if (!at && (sources & RT_EDGE_TENSORMAP))
        snprintf(buf, size, "tensormap");
}

/* One event per call, comma-separated. */
struct chrome {
    FILE *f;
    const struct sp_dfx_model *m;
    uint64_t n;
};

static void begin_event(struct chrome *c)
{
    fputs(c->n++ ? ",\n" : "\n", c->f);
}

static void thread_meta(struct chrome *c, int pid, int tid, const char *name, int sort)
{
    begin_event(c);
    fprintf(c->f,
            "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
            "\"args\":{\"name\":\"%s\"}}",
            pid, tid, name);
    begin_event(c);
    fprintf(c->f,
            "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
            "\"args\":{\"sort_index\":%d}}",
            pid, tid, sort);
}

static void write_metadata(struct chrome *c)
{
    const struct rt_trace_header *h = c->m->h;
    char name[64];
    begin_event(c);
    fprintf(c->f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                  "\"args\":{\"name\":\"device\"}}",
            PID_DEVICE);
    begin_event(c);
    fprintf(c->f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                  "\"args\":{\"name\":\"host\"}}",
            PID_HOST);
    thread_meta(c, PID_DEVICE, TID_ORCH, "orchestrator", 0);
    for (uint32_t s = 0; s < h->schedulers; s++) {
        snprintf(name, sizeof name, "scheduler %u", s);
        thread_meta(c, PID_DEVICE, TID_SCHED + (int)s, name, 1 + (int)s);
    }
    for (uint32_t k = 0; k < h->core_count; k++) {
        snprintf(name, sizeof name, "core %u (%s)", k, k < c->m->in.aic_cores ? "AIC" : "AIV");
        thread_meta(c, PID_DEVICE, TID_CORE + (int)k, name, 100 + (int)k);
    }
    thread_meta(c, PID_HOST, 1, "host", 0);
}

static void write_blocks(struct chrome *c)
{
    const struct sp_dfx_model *m = c->m;
    char buf[32];
    for (uint64_t i = 0; i < m->block_count; i++) {
        const struct dfx_block *b = &m->blocks[i];
        const struct dfx_task *t = find_task(m, b->task_id);
        begin_event(c);
        fprintf(c->f, "{\"name\":\"");
        put_escaped(c->f, kernel_name(m, (int32_t)b->func_id, buf, sizeof buf));
        fprintf(c->f,
                "\",\"cat\":\"task\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,"
                "\"tid\":%d,\"args\":{\"task_id\":%" PRIu64 ",\"func_id\":%" PRIu32
                ",\"ring\":%" PRIu32 ",\"scope_depth\":%" PRId64 ",\"block\":%" PRIu32
                ",\"core\":%" PRIu32,
                us(m, b->begin), (double)(b->end - b->begin) / 1000.0, PID_DEVICE,
                TID_CORE + (int)b->core, b->task_id, b->func_id,
                (uint32_t)(b->task_id >> RT_LOCAL_BITS),
                t->depth == UINT32_MAX ? (int64_t)-1 : (int64_t)t->depth, b->block, b->core);
        if (t->ready)
            fprintf(c->f, ",\"ready_us\":%.3f", us(m, t->ready));
        if (b->dispatch)
            fprintf(c->f, ",\"dispatch_us\":%.3f", us(m, b->dispatch));
        fprintf(c->f, "}}");
    }
}

static void write_flows(struct chrome *c)
{
    const struct sp_dfx_model *m = c->m;
    char reasons[64];
    for (uint64_t e = 0; e < m->edge_count; e++) {
        const struct rt_edge *edge = &m->edges[e];
        const struct dfx_task *p = find_task(m, edge->producer);
        const struct dfx_task *q = find_task(m, edge->consumer);
        if (!p || !q || !p->last_end || !q->first_begin)
            continue; /* one side never ran (dropped, or a failed run) */
        const struct dfx_block *from = &m->blocks[p->last_block];
        const struct dfx_block *to = &m->blocks[q->first_block];
        hazard_names(edge->sources, edge->hazards, reasons, sizeof reasons);
        /* The start binds to the producer's slice (a time inside it), the
         * end to the consumer's slice that encloses its start ("bp":"e"). */
        begin_event(c);
        fprintf(c->f,
                "{\"name\":\"%s\",\"cat\":\"dep\",\"ph\":\"s\",\"id\":%" PRIu64
                ",\"ts\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{\"producer\":%" PRIu64
                ",\"consumer\":%" PRIu64 "}}",
                reasons, e + 1, (us(m, from->begin) + us(m, from->end)) / 2, PID_DEVICE,
                TID_CORE + (int)from->core, edge->producer, edge->consumer);
        begin_event(c);
        fprintf(c->f,
                "{\"name\":\"%s\",\"cat\":\"dep\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%" PRIu64
                ",\"ts\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{\"producer\":%" PRIu64
                ",\"consumer\":%" PRIu64 "}}",
                reasons, e + 1, us(m, to->begin), PID_DEVICE, TID_CORE + (int)to->core,
                edge->producer, edge->consumer);
    }
}

static void write_scheduler(struct chrome *c)
{
    static const char *const phase_names[] = {"complete", "dispatch", "idle"};
    const struct sp_dfx_model *m = c->m;
    const struct rt_trace_header *h = m->h;
    char buf[32];
    for (uint32_t s = 0; s < h->schedulers; s++) {
        uint64_t count;
        const struct rt_trace_record *r = live_records(h, h->core_count + s, &count);
        for (uint64_t i = 0; i < count; i++) {
            begin_event(c);
            if (r[i].kind == RT_TR_PHASE) {
                fprintf(c->f,
                        "{\"name\":\"%s\",\"cat\":\"sched\",\"ph\":\"X\",\"ts\":%.3f,"
                        "\"dur\":%.3f,\"pid\":%d,\"tid\":%d}",
                        r[i].arg[0] < 3 ? phase_names[r[i].arg[0]] : "phase", us(m, r[i].begin),
                        (double)(r[i].end - r[i].begin) / 1000.0, PID_DEVICE, TID_SCHED + (int)s);
                continue;
            }
            const struct dfx_task *t = find_task(m, r[i].task_id);
            fprintf(c->f, "{\"name\":\"%s ", r[i].kind == RT_TR_DISPATCH ? "dispatch" : "finish");
            put_escaped(c->f, kernel_name(m, t ? t->func_id : -1, buf, sizeof buf));
            fprintf(c->f,
                    "\",\"cat\":\"sched\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%d,"
                    "\"tid\":%d,\"args\":{\"task_id\":%" PRIu64 ",\"core\":%" PRIu32 "}}",
                    us(m, r[i].begin), PID_DEVICE, TID_SCHED + (int)s, r[i].task_id,
                    r[i].arg[0]);
        }
    }
}

static void write_orchestrator(struct chrome *c)
{
    const struct sp_dfx_model *m = c->m;
    const struct rt_trace_header *h = m->h;
    char buf[32];
    uint64_t count;
    const struct rt_trace_record *r = live_records(h, h->core_count + h->schedulers, &count);
    if (h->level < 4)
        return;
    for (uint64_t i = 0; i < count; i++) {
        begin_event(c);
        if (r[i].kind == RT_TR_ORCH) {
            fprintf(c->f,
                    "{\"name\":\"orchestration\",\"cat\":\"orch\",\"ph\":\"X\",\"ts\":%.3f,"
                    "\"dur\":%.3f,\"pid\":%d,\"tid\":%d}",
                    us(m, r[i].begin), (double)(r[i].end - r[i].begin) / 1000.0, PID_DEVICE,
                    TID_ORCH);
            continue;
        }
        const struct dfx_task *t = find_task(m, r[i].task_id);
        fprintf(c->f, "{\"name\":\"submit ");
        put_escaped(c->f, kernel_name(m, t ? t->func_id : -1, buf, sizeof buf));
        fprintf(c->f,
                "\",\"cat\":\"submit\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,"
                "\"tid\":%d,\"args\":{\"task_id\":%" PRIu64 ",\"scope_depth\":%" PRIu32 "}}",
                us(m, r[i].begin), (double)(r[i].end - r[i].begin) / 1000.0, PID_DEVICE,
                TID_ORCH, r[i].task_id, r[i].arg[3]);
    }
}

static void write_host(struct chrome *c)
{
    const struct sp_dfx_model *m = c->m;
    for (int s = 0; s < SP_SPAN_COUNT; s++) {
        if (!m->in.spans[s][0] || m->in.spans[s][1] < m->in.spans[s][0])
            continue;
        begin_event(c);
        fprintf(c->f,
                "{\"name\":\"%s\",\"cat\":\"host\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
                "\"pid\":%d,\"tid\":1,\"args\":{\"run\":%" PRIu64 "}}",
                span_names[s], us(m, m->in.spans[s][0]),
                (double)(m->in.spans[s][1] - m->in.spans[s][0]) / 1000.0, PID_HOST, m->in.run);
    }
}

int sp_dfx_write_chrome(struct sp_dfx_model *m, FILE *f)
{
    struct chrome c = {f, m, 0};
    fputs("{\"traceEvents\":[", f);
    write_metadata(&c);
    write_blocks(&c);
    write_flows(&c);
    if (m->h->level >= 2)
        write_scheduler(&c);
    write_orchestrator(&c);
    write_host(&c);
    fprintf(f,
            "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"simpler\","
            "\"trace_level\":\"%" PRIu32 "\",\"run\":\"%" PRIu64 "\",\"status\":\"%" PRId32
            "\",\"tasks\":\"%" PRIu64 "\",\"edges\":\"%" PRIu64 "\",\"edges_logged\":\"%" PRIu64
            "\",\"dropped_records\":\"%" PRIu64 "\"}}\n",
            m->h->level, m->in.run, m->in.status, m->task_count, m->in.edges_total,
            m->edge_count, m->dropped);
    m->events = c.n;
    return ferror(f) ? PTO_RUNTIME_ERR_INTERNAL : 0;
}

int sp_dfx_write_deps_json(struct sp_dfx_model *m, FILE *f)
{
    char buf[32], reasons[64];
    fprintf(f, "{\"run\":%" PRIu64 ",\"status\":%" PRId32 ",\"tasks\":[", m->in.run,
            m->in.status);
    for (uint64_t i = 0; i < m->task_count; i++) {
        const struct dfx_task *t = &m->tasks[i];
        fprintf(f, "%s\n{\"id\":%" PRIu64 ",\"kernel\":\"", i ? "," : "", t->id);
        put_escaped(f, kernel_name(m, t->func_id, buf, sizeof buf));
        fprintf(f, "\",\"func_id\":%" PRId32 ",\"core_type\":\"%s\",\"ring\":%" PRIu32
                   ",\"scope_depth\":%" PRId64 "}",
                t->func_id, t->shape == 2 ? "MIX" : core_type_name(m, t->func_id),
                (uint32_t)(t->id >> RT_LOCAL_BITS),
                t->depth == UINT32_MAX ? (int64_t)-1 : (int64_t)t->depth);
    }
    fputs("\n],\"edges\":[", f);
    for (uint64_t e = 0; e < m->edge_count; e++) {
        const struct rt_edge *edge = &m->edges[e];
        hazard_names(edge->sources, edge->hazards, reasons, sizeof reasons);
        fprintf(f, "%s\n{\"producer\":%" PRIu64 ",\"consumer\":%" PRIu64 ",\"reasons\":[",
                e ? "," : "", edge->producer, edge->consumer);
        for (char *r = reasons, *next; *r; r = next) {
            next = strchr(r, ',');
            size_t len = next ? (size_t)(next - r) : strlen(r);
            fprintf(f, "%s\"%.*s\"", r == reasons ? "" : ",", (int)len, r);
            next = next ? next + 1 : r + len;
        }
        fputs("]}", f);
    }
    fprintf(f, "\n],\"edges_total\":%" PRIu64 ",\"edges_logged\":%" PRIu64 "}\n",
            m->in.edges_total, m->edge_count);
    return ferror(f) ? PTO_RUNTIME_ERR_INTERNAL : 0;
}

int sp_dfx_write_deps_dot(struct sp_dfx_model *m, FILE *f)
{
    char buf[32], reasons[64];
    fputs("digraph simpler_run {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n",
          f);
    for (uint64_t i = 0; i < m->task_count; i++) {
        const struct dfx_task *t = &m->tasks[i];
        fprintf(f, "  t%" PRIu64 " [label=\"", t->id);
        put_escaped(f, kernel_name(m, t->func_id, buf, sizeof buf));
        /* ring.local: the id's two parts (runtime.md, task ids) */
        fprintf(f, "\\nring %" PRIu32 " #%" PRIu64 " %s\"];\n",
                (uint32_t)(t->id >> RT_LOCAL_BITS), t->id & ((UINT64_C(1) << RT_LOCAL_BITS) - 1),
                t->shape == 2 ? "MIX" : core_type_name(m, t->func_id));
    }
    for (uint64_t e = 0; e < m->edge_count; e++) {
        hazard_names(m->edges[e].sources, m->edges[e].hazards, reasons, sizeof reasons);
        fprintf(f, "  t%" PRIu64 " -> t%" PRIu64 " [label=\"%s\"];\n", m->edges[e].producer,
                m->edges[e].consumer, reasons);
    }
    fputs("}\n", f);
    return ferror(f) ? PTO_RUNTIME_ERR_INTERNAL : 0;
}

typedef int (*writer_fn)(struct sp_dfx_model *m, FILE *f);

static int write_one(struct sp_dfx_model *m, const char *path, writer_fn write)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return PTO_RUNTIME_ERR_INTERNAL;
    int rc = write(m, f);
    if (fclose(f) != 0 && !rc)
        rc = PTO_RUNTIME_ERR_INTERNAL;
    return rc;
}

int sp_dfx_write_files(struct sp_dfx_model *m, const char *path)
{
    size_t len = strlen(path);
    size_t stem = len >= 5 && strcmp(path + len - 5, ".json") == 0 ? len - 5 : len;
    char *other = malloc(stem + sizeof ".deps.json");
    if (!other)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    int rc = write_one(m, path, sp_dfx_write_chrome);
    memcpy(other, path, stem);
    strcpy(other + stem, ".deps.json");
    if (!rc)
        rc = write_one(m, other, sp_dfx_write_deps_json);
    strcpy(other + stem, ".deps.dot");
    if (!rc)
        rc = write_one(m, other, sp_dfx_write_deps_dot);
    free(other);
    return rc;
}
