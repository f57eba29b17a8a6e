/*
 * trace/trace_export.c — the writers of a traced run's model
 * (trace_export.h): Chrome trace event JSON, deps JSON and DOT.
 *
 * Owns: the three formats and writing them next to a path. Reads the
 * model (trace_model.h) and its region; must not change what the model
 * holds but the count of events the Chrome writer wrote. Host memory and
 * the files it is given only.
 *
 * Tracks of the Chrome JSON: pid 1 is the device — tid 1 the orchestrator,
 * 10 + i scheduler i, 100 + c core c; pid 2 is the host, tid 1 its spans.
 * Times are microseconds from the first recorded event (ns precision).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/task_id.h"
#include "common/trace_format.h"
#include "simpler/callable.h"
#include "simpler/status.h"
#include "trace/trace_export.h"
#include "trace/trace_model.h"

#define PID_DEVICE 1
#define PID_HOST 2
#define TID_ORCH 1
#define TID_SCHED 10
#define TID_CORE 100

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

static const char *kernel_name(const struct sp_trace_model *m, int32_t func_id, char *buf,
                               size_t size)
{
    if (func_id >= 0 && func_id < SP_TRACE_MAX_KERNELS && m->in.kernel_names[func_id])
        return m->in.kernel_names[func_id];
    if (func_id < 0)
        return "dummy";
    snprintf(buf, size, "func %" PRId32, func_id);
    return buf;
}

static const char *core_type_name(const struct sp_trace_model *m, int32_t func_id)
{
    if (func_id < 0 || func_id >= SP_TRACE_MAX_KERNELS)
        return "none";
    return m->in.kernel_core[func_id] == SIMPLER_CORE_AIC ? "AIC" : "AIV";
}

static double us(const struct sp_trace_model *m, uint64_t t)
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
    const struct sp_trace_model *m;
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
    if (c->m->in.spans[SP_SPAN_HOST_BUILD][0])
        thread_meta(c, PID_HOST, 2, "host build", 1);
}

static void write_blocks(struct chrome *c)
{
    const struct sp_trace_model *m = c->m;
    char buf[32];
    for (uint64_t i = 0; i < m->block_count; i++) {
        const struct sp_trace_block *b = &m->blocks[i];
        const struct sp_trace_task *t = sp_trace_find_task(m, b->task_id);
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
    const struct sp_trace_model *m = c->m;
    char reasons[64];
    for (uint64_t e = 0; e < m->edge_count; e++) {
        const struct rt_edge *edge = &m->edges[e];
        const struct sp_trace_task *p = sp_trace_find_task(m, edge->producer);
        const struct sp_trace_task *q = sp_trace_find_task(m, edge->consumer);
        if (!p || !q || !p->last_end || !q->first_begin)
            continue; /* one side never ran (dropped, or a failed run) */
        const struct sp_trace_block *from = &m->blocks[p->last_block];
        const struct sp_trace_block *to = &m->blocks[q->first_block];
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
    const struct sp_trace_model *m = c->m;
    const struct rt_trace_header *h = m->h;
    char buf[32];
    for (uint32_t s = 0; s < h->schedulers; s++) {
        uint64_t count;
        const struct rt_trace_record *r = sp_trace_live_records(h, h->core_count + s, &count);
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
            const struct sp_trace_task *t = sp_trace_find_task(m, r[i].task_id);
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
    const struct sp_trace_model *m = c->m;
    const struct rt_trace_header *h = m->h;
    char buf[32];
    uint64_t count;
    const struct rt_trace_record *r =
        sp_trace_live_records(h, h->core_count + h->schedulers, &count);
    if (h->level < 4)
        return;
    for (uint64_t i = 0; i < count; i++) {
        if (r[i].kind == RT_TR_SUBMIT && !r[i].begin)
            continue; /* no window: a host_build_graph lay, a task's arrival only */
        begin_event(c);
        if (r[i].kind == RT_TR_ORCH) {
            fprintf(c->f,
                    "{\"name\":\"orchestration\",\"cat\":\"orch\",\"ph\":\"X\",\"ts\":%.3f,"
                    "\"dur\":%.3f,\"pid\":%d,\"tid\":%d}",
                    us(m, r[i].begin), (double)(r[i].end - r[i].begin) / 1000.0, PID_DEVICE,
                    TID_ORCH);
            continue;
        }
        const struct sp_trace_task *t = sp_trace_find_task(m, r[i].task_id);
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
    const struct sp_trace_model *m = c->m;
    for (int s = 0; s < SP_SPAN_COUNT; s++) {
        if (!m->in.spans[s][0] || m->in.spans[s][1] < m->in.spans[s][0])
            continue;
        /* The host build (host_build_graph) is its own track, with the
         * tasks it built: the summary's submit cost per task under HBG. */
        bool build = s == SP_SPAN_HOST_BUILD;
        begin_event(c);
        fprintf(c->f,
                "{\"name\":\"%s\",\"cat\":\"host\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
                "\"pid\":%d,\"tid\":%d,\"args\":{\"run\":%" PRIu64 ",\"tasks\":%" PRIu64 "}}",
                sp_span_name((enum sp_span)s), us(m, m->in.spans[s][0]),
                (double)(m->in.spans[s][1] - m->in.spans[s][0]) / 1000.0, PID_HOST,
                build ? 2 : 1, m->in.run, build ? m->in.host_build_tasks : 0);
    }
}

int sp_trace_write_chrome(struct sp_trace_model *m, FILE *f)
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

int sp_trace_write_deps_json(struct sp_trace_model *m, FILE *f)
{
    char buf[32], reasons[64];
    fprintf(f, "{\"run\":%" PRIu64 ",\"status\":%" PRId32 ",\"tasks\":[", m->in.run,
            m->in.status);
    for (uint64_t i = 0; i < m->task_count; i++) {
        const struct sp_trace_task *t = &m->tasks[i];
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

int sp_trace_write_deps_dot(struct sp_trace_model *m, FILE *f)
{
    char buf[32], reasons[64];
    fputs("digraph simpler_run {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n",
          f);
    for (uint64_t i = 0; i < m->task_count; i++) {
        const struct sp_trace_task *t = &m->tasks[i];
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

typedef int (*writer_fn)(struct sp_trace_model *m, FILE *f);

static int write_one(struct sp_trace_model *m, const char *path, writer_fn write)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return PTO_RUNTIME_ERR_INTERNAL;
    int rc = write(m, f);
    if (fclose(f) != 0 && !rc)
        rc = PTO_RUNTIME_ERR_INTERNAL;
    return rc;
}

int sp_trace_write_files(struct sp_trace_model *m, const char *path)
{
    size_t len = strlen(path);
    size_t stem = len >= 5 && strcmp(path + len - 5, ".json") == 0 ? len - 5 : len;
    char *other = malloc(stem + sizeof ".deps.json");
    if (!other)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    int rc = write_one(m, path, sp_trace_write_chrome);
    memcpy(other, path, stem);
    strcpy(other + stem, ".deps.json");
    if (!rc)
        rc = write_one(m, other, sp_trace_write_deps_json);
    strcpy(other + stem, ".deps.dot");
    if (!rc)
        rc = write_one(m, other, sp_trace_write_deps_dot);
    free(other);
    return rc;
}
