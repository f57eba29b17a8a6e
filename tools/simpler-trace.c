/*
 * tools/simpler-trace.c — summarises a simpler trace and draws its swimlane.
 *
 *   simpler-trace [--svg OUT.svg] TRACE.json
 *
 * Reads a Chrome trace event file written by simpler (docs/diagnostics.md)
 * with jansson and prints: per-core utilisation, the critical path through
 * the dependency edges against the wall time, the schedulers' overhead per
 * task, ready-to-start latency percentiles, the submit cost per task and
 * the host spans. With --svg it also renders the swimlane (one lane per
 * track: orchestrator, schedulers, cores, host; dependency arrows) as a
 * standalone SVG picture. Exit status 0, or 1 with a message on stderr for
 * a file that is not such a trace.
 *
 * Owns: nothing of the runtime; it only reads the file.
 */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct span {
    int pid, tid;
    double ts, dur;
    const char *name, *cat;
    uint64_t task_id;
    bool has_task;
    double ready, dispatch; /* task events: NAN when absent */
    double tasks;           /* the host build's span (host_build_graph): tasks built */
    char ph;
};

struct track {
    int pid, tid;
    const char *name;
    int sort;
};

struct task {
    uint64_t id;
    double begin, end, ready;
    const char *name;
    int blocks;
    /* critical path */
    double path;
    long prev;
    int indegree;
    const struct span *first, *last; /* its first-starting and last-ending blocks */
};

struct edge {
    uint64_t producer, consumer;
};

struct trace {
    json_t *root;
    struct span *spans;
    size_t span_count;
    struct track *tracks;
    size_t track_count;
    struct task *tasks;
    size_t task_count;
    struct edge *edges;
    size_t edge_count;
};

static void *grow(void *p, size_t n, size_t size)
{
    void *q = realloc(p, (n + 1) * size);
    if (!q) {
        fprintf(stderr, "simpler-trace: out of memory\n");
        exit(1);
    }
    return q;
}

static double num(json_t *o, const char *key, double otherwise)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : otherwise;
}

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static int cmp_task(const void *a, const void *b)
{
    uint64_t x = ((const struct task *)a)->id, y = ((const struct task *)b)->id;
    return x < y ? -1 : x > y;
}

static int cmp_edge(const void *a, const void *b)
{
    uint64_t x = ((const struct edge *)a)->producer, y = ((const struct edge *)b)->producer;
    return x < y ? -1 : x > y;
}

static struct task *find_task(struct trace *t, uint64_t id)
{
    struct task key = {.id = id};
    return bsearch(&key, t->tasks, t->task_count, sizeof key, cmp_task);
}

static int cmp_span_task(const void *a, const void *b)
{
    const struct span *x = *(const struct span *const *)a, *y = *(const struct span *const *)b;
    return x->task_id < y->task_id ? -1 : x->task_id > y->task_id;
}

/* One task per task id among the core spans (one span per block), in id
 * order; each knows its first-starting and last-ending block. Sorting
 * keeps this O(n log n) for traces of many thousands of blocks. */
static void build_tasks(struct trace *t)
{
    size_t n = 0;
    const struct span **blocks = calloc(t->span_count + 1, sizeof *blocks);
    for (size_t i = 0; i < t->span_count; i++)
        if (strcmp(t->spans[i].cat, "task") == 0 && t->spans[i].has_task)
            blocks[n++] = &t->spans[i];
    qsort(blocks, n, sizeof *blocks, cmp_span_task);
    t->tasks = calloc(n + 1, sizeof *t->tasks);
    for (size_t i = 0; i < n; i++) {
        const struct span *s = blocks[i];
        struct task *k = t->task_count ? &t->tasks[t->task_count - 1] : NULL;
        if (!k || k->id != s->task_id) {
            k = &t->tasks[t->task_count++];
            *k = (struct task){s->task_id, s->ts, s->ts + s->dur, s->ready, s->name, 0, 0, -1, 0,
                               s, s};
        }
        if (s->ts < k->begin) {
            k->begin = s->ts;
            k->first = s;
        }
        if (s->ts + s->dur > k->end) {
            k->end = s->ts + s->dur;
            k->last = s;
        }
        k->blocks++;
    }
    free(blocks);
}

static int load(const char *path, struct trace *t)
{
    json_error_t err;
    memset(t, 0, sizeof *t);
    t->root = json_load_file(path, 0, &err);
    if (!t->root) {
        fprintf(stderr, "simpler-trace: %s:%d: %s\n", path, err.line, err.text);
        return 1;
    }
    json_t *events = json_object_get(t->root, "traceEvents");
    if (!json_is_array(events)) {
        fprintf(stderr, "simpler-trace: %s: no traceEvents array\n", path);
        return 1;
    }
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        const char *ph = str(e, "ph");
        int pid = (int)json_integer_value(json_object_get(e, "pid"));
        int tid = (int)json_integer_value(json_object_get(e, "tid"));
        json_t *args = json_object_get(e, "args");
        if (ph[0] == 'M') {
            if (strcmp(str(e, "name"), "thread_name") == 0) {
                t->tracks = grow(t->tracks, t->track_count, sizeof *t->tracks);
                t->tracks[t->track_count++] = (struct track){pid, tid, str(args, "name"), tid};
            }
            continue;
        }
        if (ph[0] == 's') {
            t->edges = grow(t->edges, t->edge_count, sizeof *t->edges);
            t->edges[t->edge_count++] = (struct edge){
                (uint64_t)json_integer_value(json_object_get(args, "producer")),
                (uint64_t)json_integer_value(json_object_get(args, "consumer"))};
            continue;
        }
        if (ph[0] != 'X' && ph[0] != 'i')
            continue;
        struct span s = {
            .pid = pid, .tid = tid, .ts = num(e, "ts", 0), .dur = num(e, "dur", 0),
            .name = str(e, "name"), .cat = str(e, "cat"), .ph = ph[0],
            .ready = num(args, "ready_us", NAN), .dispatch = num(args, "dispatch_us", NAN),
            .tasks = num(args, "tasks", 0),
        };
        json_t *id = json_object_get(args, "task_id");
        s.has_task = json_is_integer(id);
        s.task_id = (uint64_t)json_integer_value(id);
        t->spans = grow(t->spans, t->span_count, sizeof *t->spans);
        t->spans[t->span_count++] = s;
    }
    build_tasks(t);
    qsort(t->edges, t->edge_count, sizeof *t->edges, cmp_edge);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[n]. */
static double pct(const double *v, size_t n, double p)
{
    size_t k = (size_t)ceil(p / 100.0 * (double)n);
    return v[k ? k - 1 : 0];
}

static void print_percentiles(const char *what, double *v, size_t n)
{
    if (!n) {
        printf("%-28s (not recorded at this level)\n", what);
        return;
    }
    qsort(v, n, sizeof *v, cmp_double);
    printf("%-28s p50 %.1f  p90 %.1f  p99 %.1f  max %.1f us  (%zu tasks)\n", what,
           pct(v, n, 50), pct(v, n, 90), pct(v, n, 99), v[n - 1], n);
}

/* The first edge of `producer` in the edges sorted by producer (edge_count
 * when it has none). */
static size_t first_edge_of(const struct trace *t, uint64_t producer)
{
    size_t lo = 0, hi = t->edge_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->edges[mid].producer < producer)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Longest path through the edges, each task weighing its own run time
 * (first block start to last block end); Kahn's order, so any DAG. */
static double critical_path(struct trace *t, size_t *length, struct task **last)
{
    for (size_t e = 0; e < t->edge_count; e++) {
        struct task *c = find_task(t, t->edges[e].consumer);
        if (c && find_task(t, t->edges[e].producer))
            c->indegree++;
    }
    size_t *queue = calloc(t->task_count + 1, sizeof *queue), head = 0, tail = 0;
    for (size_t i = 0; i < t->task_count; i++) {
        t->tasks[i].path = t->tasks[i].end - t->tasks[i].begin;
        if (!t->tasks[i].indegree)
            queue[tail++] = i;
    }
    while (head < tail) {
        struct task *p = &t->tasks[queue[head++]];
        for (size_t e = first_edge_of(t, p->id); e < t->edge_count && t->edges[e].producer == p->id;
             e++) {
            struct task *c = find_task(t, t->edges[e].consumer);
            if (!c)
                continue;
            double through = p->path + (c->end - c->begin);
            if (through > c->path) {
                c->path = through;
                c->prev = p - t->tasks;
            }
            if (--c->indegree == 0)
                queue[tail++] = (size_t)(c - t->tasks);
        }
    }
    free(queue);
    double best = 0;
    *last = NULL;
    for (size_t i = 0; i < t->task_count; i++)
        if (t->tasks[i].path > best || !*last) {
            best = t->tasks[i].path;
            *last = &t->tasks[i];
        }
    *length = 0;
    for (struct task *k = *last; k; k = k->prev >= 0 ? &t->tasks[k->prev] : NULL)
        (*length)++;
    return best;
}

static const char *track_name(const struct trace *t, int pid, int tid)
{
    for (size_t i = 0; i < t->track_count; i++)
        if (t->tracks[i].pid == pid && t->tracks[i].tid == tid)
            return t->tracks[i].name;
    return "?";
}

/* One milestone of the run: when the first (or last) event of a kind
 * happened. */
struct step {
    const char *what;
    double at;
};

static int cmp_step(const void *a, const void *b)
{
    double x = ((const struct step *)a)->at, y = ((const struct step *)b)->at;
    return x < y ? -1 : x > y;
}

/* Keeps the earliest (first) or latest (!first) time seen for a step. */
static void step_at(struct step *s, double at, bool first)
{
    if (isnan(s->at) || (first ? at < s->at : at > s->at))
        s->at = at;
}

/*
 * The run step by step: where its milestones fall, from the host's launch
 * call (program mode) or else the first device event, in time order, each with the time since
 * the one before, as bench_kernel's per-hop table does for a round from
 * the device's own timeline. A milestone the level does not record is
 * left out (the orchestration and the submits need level 4, dispatch and
 * finish level 2; the host's launch and wait are program mode's, the
 * graph built host_build_graph's).
 */
static void print_steps(const struct trace *t)
{
    enum { LAUNCH, BUILT, ORCH_BEGIN, SUBMITTED, READY, DISPATCH, KERNEL_BEGIN, KERNEL_END, FINISH,
           ORCH_END, WAITED, STEPS };
    struct step steps[STEPS] = {
        [LAUNCH] = {"host: launch called", NAN},
        [BUILT] = {"host: graph built", NAN},
        [ORCH_BEGIN] = {"orchestration begins", NAN},
        [SUBMITTED] = {"first task submitted", NAN},
        [READY] = {"first task ready", NAN},
        [DISPATCH] = {"first block dispatched", NAN},
        [KERNEL_BEGIN] = {"first kernel begins", NAN},
        [KERNEL_END] = {"last kernel ends", NAN},
        [FINISH] = {"last block's end seen", NAN},
        [ORCH_END] = {"orchestration ends", NAN},
        [WAITED] = {"host: wait returns", NAN},
    };
    double origin = INFINITY;
    for (size_t i = 0; i < t->span_count; i++) {
        const struct span *s = &t->spans[i];
        if (strcmp(s->cat, "host") != 0)
            origin = fmin(origin, s->ts);
        if (strcmp(s->cat, "host") == 0) {
            if (strcmp(s->name, "launch") == 0)
                step_at(&steps[LAUNCH], s->ts, true);
            else if (strcmp(s->name, "wait") == 0)
                step_at(&steps[WAITED], s->ts + s->dur, false);
            else if (strcmp(s->name, "host build") == 0)
                step_at(&steps[BUILT], s->ts + s->dur, false);
        } else if (strcmp(s->cat, "orch") == 0) {
            step_at(&steps[ORCH_BEGIN], s->ts, true);
            step_at(&steps[ORCH_END], s->ts + s->dur, false);
        } else if (strcmp(s->cat, "submit") == 0) {
            step_at(&steps[SUBMITTED], s->ts + s->dur, true);
        } else if (strcmp(s->cat, "sched") == 0 && s->ph == 'i') {
            if (strncmp(s->name, "dispatch", 8) == 0)
                step_at(&steps[DISPATCH], s->ts, true);
            else if (strncmp(s->name, "finish", 6) == 0)
                step_at(&steps[FINISH], s->ts, false);
        } else if (strcmp(s->cat, "task") == 0) {
            step_at(&steps[KERNEL_BEGIN], s->ts, true);
            step_at(&steps[KERNEL_END], s->ts + s->dur, false);
            if (!isnan(s->ready))
                step_at(&steps[READY], s->ready, true);
        }
    }
    if (!isnan(steps[LAUNCH].at)) /* program mode: the run from its launch */
        origin = steps[LAUNCH].at;
    size_t n = 0;
    for (size_t i = 0; i < STEPS; i++)
        if (!isnan(steps[i].at))
            steps[n++] = steps[i];
    if (!n)
        return;
    qsort(steps, n, sizeof *steps, cmp_step);
    printf("the run step by step (us from the launch, or the first device event, and from "
           "the step before):\n");
    for (size_t i = 0; i < n; i++)
        printf("  %-24s %10.1f %10.1f\n", steps[i].what, steps[i].at - origin,
               i ? steps[i].at - steps[i - 1].at : 0.0);
}

static void summarise(struct trace *t, const char *path)
{
    json_t *other = json_object_get(t->root, "otherData");
    printf("trace %s: level %s, run %s, status %s\n", path, str(other, "trace_level"),
           str(other, "run"), str(other, "status"));
    printf("tasks %zu, dependency edges %zu, dropped records %s\n", t->task_count,
           t->edge_count, str(other, "dropped_records"));
    double first = INFINITY, last = -INFINITY;
    for (size_t i = 0; i < t->span_count; i++) {
        const struct span *s = &t->spans[i];
        if (strcmp(s->cat, "host") == 0)
            continue;
        first = fmin(first, s->ts);
        if (strcmp(s->cat, "task") == 0)
            last = fmax(last, s->ts + s->dur);
    }
    if (!t->task_count) {
        printf("no task ran\n");
        return;
    }
    double wall = last - first;
    size_t length;
    struct task *end;
    double cp = critical_path(t, &length, &end);
    printf("wall time (first device event to last task end): %.1f us\n", wall);
    printf("critical path: %.1f us over %zu tasks (%.0f%% of wall; the rest is waiting "
           "and overhead), ending in %s\n",
           cp, length, wall > 0 ? 100 * cp / wall : 0, end ? end->name : "-");
    printf("per-core utilisation (kernel time / wall):\n");
    for (size_t k = 0; k < t->track_count; k++) {
        const struct track *tr = &t->tracks[k];
        if (strncmp(tr->name, "core ", 5) != 0)
            continue;
        double busy = 0;
        size_t blocks = 0;
        for (size_t i = 0; i < t->span_count; i++)
            if (t->spans[i].pid == tr->pid && t->spans[i].tid == tr->tid &&
                strcmp(t->spans[i].cat, "task") == 0) {
                busy += t->spans[i].dur;
                blocks++;
            }
        printf("  %-14s %6zu blocks %10.1f us %6.1f%%\n", tr->name, blocks, busy,
               wall > 0 ? 100 * busy / wall : 0);
    }
    double *v = calloc(t->span_count + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < t->task_count; i++)
        if (!isnan(t->tasks[i].ready))
            v[n++] = t->tasks[i].begin - t->tasks[i].ready;
    print_percentiles("ready-to-start latency:", v, n);
    n = 0;
    for (size_t i = 0; i < t->span_count; i++)
        if (strcmp(t->spans[i].cat, "task") == 0 && !isnan(t->spans[i].dispatch))
            v[n++] = t->spans[i].ts - t->spans[i].dispatch;
    print_percentiles("dispatch-to-start latency:", v, n);
    double sched = 0, idle = 0;
    bool phases = false;
    n = 0;
    for (size_t i = 0; i < t->span_count; i++) {
        const struct span *s = &t->spans[i];
        if (strcmp(s->cat, "sched") == 0 && s->ph == 'X') {
            phases = true;
            if (strcmp(s->name, "idle") == 0)
                idle += s->dur;
            else
                sched += s->dur;
        }
        if (strcmp(s->cat, "submit") == 0)
            v[n++] = s->dur;
    }
    if (phases)
        printf("scheduler overhead per task: %.2f us (complete + dispatch phases %.1f us, "
               "idle %.1f us)\n",
               sched / (double)t->task_count, sched, idle);
    else
        printf("scheduler overhead per task: (needs level 3)\n");
    if (n) {
        double total = 0;
        for (size_t i = 0; i < n; i++)
            total += v[i];
        qsort(v, n, sizeof *v, cmp_double);
        printf("submit cost per task: mean %.2f us, p50 %.2f, max %.2f us (%zu submits)\n",
               total / (double)n, pct(v, n, 50), v[n - 1], n);
    } else {
        /* host_build_graph: the host built the graph, the device has no
         * submits; its build span carries the task count */
        const struct span *build = NULL;
        for (size_t i = 0; i < t->span_count && !build; i++)
            if (strcmp(t->spans[i].cat, "host") == 0 &&
                strcmp(t->spans[i].name, "host build") == 0 && t->spans[i].tasks > 0)
                build = &t->spans[i];
        if (build)
            printf("submit cost per task: %.2f us on the host (host_build_graph: %.1f us for "
                   "%.0f tasks)\n",
                   build->dur / build->tasks, build->dur, build->tasks);
        else
            printf("submit cost per task: (needs level 4)\n");
    }
    free(v);
    bool any = false;
    for (size_t i = 0; i < t->span_count; i++) {
        const struct span *s = &t->spans[i];
        if (strcmp(s->cat, "host") != 0)
            continue;
        printf("%s%s %.1f us", any ? ", " : "host: ", s->name, s->dur);
        any = true;
    }
    if (any)
        printf("\n");
    print_steps(t);
    (void)track_name;
}

/* ------------------------------------------------------------------ SVG */

static void colour_of(const char *name, char out[32])
{
    uint32_t h = 2166136261u;
    for (const char *p = name; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    snprintf(out, 32, "hsl(%u,60%%,55%%)", h % 360);
}

static void put_xml(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

static int cmp_track(const void *a, const void *b)
{
    const struct track *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid - y->pid;
    return x->sort - y->sort;
}

static int lane_of(const struct trace *t, int pid, int tid)
{
    for (size_t i = 0; i < t->track_count; i++)
        if (t->tracks[i].pid == pid && t->tracks[i].tid == tid)
            return (int)i;
    return -1;
}

static int render_svg(struct trace *t, const char *out)
{
    FILE *f = fopen(out, "w");
    if (!f) {
        fprintf(stderr, "simpler-trace: cannot write %s\n", out);
        return 1;
    }
    qsort(t->tracks, t->track_count, sizeof *t->tracks, cmp_track);
    /* Device tracks only: the host's spans are far apart in time from the
     * device's and would squeeze them; the summary reports them. */
    double t0 = INFINITY, t1 = -INFINITY;
    for (size_t i = 0; i < t->span_count; i++)
        if (strcmp(t->spans[i].cat, "host") != 0) {
            t0 = fmin(t0, t->spans[i].ts);
            t1 = fmax(t1, t->spans[i].ts + t->spans[i].dur);
        }
    if (!(t1 > t0)) {
        t0 = 0;
        t1 = 1;
    }
    const double left = 130, width = 1000, lane_h = 26, top = 40;
    int lanes = 0; /* the device's tracks: they sort first */
    while ((size_t)lanes < t->track_count && t->tracks[lanes].pid == 1)
        lanes++;
    double height = top + lanes * lane_h + 78;
    double scale = width / (t1 - t0);
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"monospace\" font-size=\"11\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<defs><marker id=\"arrow\" markerWidth=\"6\" markerHeight=\"6\" refX=\"5\" "
            "refY=\"3\" orient=\"auto\"><path d=\"M0,0 L6,3 L0,6 z\" fill=\"#555\"/></marker>"
            "</defs>\n<text x=\"10\" y=\"20\" font-size=\"13\">simpler swimlane: %.1f us, "
            "%zu tasks, %zu dependency edges</text>\n",
            left + width + 20, height, t1 - t0, t->task_count, t->edge_count);
    for (int l = 0; l < lanes; l++) {
        double y = top + l * lane_h;
        fprintf(f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" fill=\"%s\"/>\n",
                left, y, width, lane_h, l % 2 ? "#f4f4f4" : "#fbfbfb");
        fprintf(f, "<text x=\"8\" y=\"%.1f\">", y + lane_h * 0.65);
        put_xml(f, t->tracks[l].name);
        fputs("</text>\n", f);
    }
    char colour[32];
    for (size_t i = 0; i < t->span_count; i++) {
        const struct span *s = &t->spans[i];
        int l = lane_of(t, s->pid, s->tid);
        if (l < 0 || l >= lanes || strcmp(s->cat, "host") == 0)
            continue;
        double x = left + (s->ts - t0) * scale, y = top + l * lane_h;
        if (s->ph == 'i') {
            fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#333\" "
                       "stroke-width=\"0.6\"/>\n",
                    x, y + 3, x, y + 8);
            continue;
        }
        /* Scheduler phases in fixed colours, kernels by name; the
         * orchestration's whole entry as a thin bar under its submits. */
        bool sched = strcmp(s->cat, "sched") == 0, entry = strcmp(s->cat, "orch") == 0;
        colour_of(s->name, colour);
        if (sched)
            snprintf(colour, sizeof colour, "%s",
                     strcmp(s->name, "idle") == 0       ? "#e4e4e4"
                     : strcmp(s->name, "dispatch") == 0 ? "#f0b860"
                                                        : "#8fb0d8");
        fprintf(f,
                "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" "
                "stroke=\"#222\" stroke-width=\"0.3\"><title>",
                x, entry ? y + lane_h - 7 : y + 4, fmax(s->dur * scale, 0.6),
                entry ? 3 : lane_h - 8, entry ? "#999" : colour);
        put_xml(f, s->name);
        fprintf(f, " %.1f us", s->dur);
        if (s->has_task)
            fprintf(f, " task %llu", (unsigned long long)s->task_id);
        fputs("</title></rect>\n", f);
        if (strcmp(s->cat, "task") == 0 && s->dur * scale > 6.0 * (double)strlen(s->name) + 4) {
            fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" font-size=\"9\">", x + 2, y + lane_h * 0.62);
            put_xml(f, s->name);
            fputs("</text>\n", f);
        }
    }
    /* Dependency arrows: producer's end to consumer's start. */
    for (size_t e = 0; e < t->edge_count; e++) {
        struct task *p = find_task(t, t->edges[e].producer), *c = find_task(t, t->edges[e].consumer);
        if (!p || !c)
            continue;
        const struct span *from = p->last, *to = c->first;
        fprintf(f,
                "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#555\" "
                "stroke-width=\"0.7\" stroke-opacity=\"0.7\" marker-end=\"url(#arrow)\"/>\n",
                left + (from->ts + from->dur - t0) * scale,
                top + lane_of(t, from->pid, from->tid) * lane_h + lane_h / 2,
                left + (to->ts - t0) * scale,
                top + lane_of(t, to->pid, to->tid) * lane_h + lane_h / 2);
    }
    double axis = top + lanes * lane_h + 14;
    for (int k = 0; k <= 10; k++) {
        double x = left + width * k / 10;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f us</text>\n",
                x, axis - 6, x, axis, x, axis + 12, (t1 - t0) * k / 10);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" font-size=\"10\">scheduler phases: "
               "<tspan fill=\"#8fb0d8\">&#9632;</tspan> complete "
               "<tspan fill=\"#f0b860\">&#9632;</tspan> dispatch "
               "<tspan fill=\"#c8c8c8\">&#9632;</tspan> idle; ticks: dispatch and finish of a "
               "block; arrows: dependencies</text>\n",
            left, axis + 30);
    /* The kernels' colours, in order of first appearance (at most 12). */
    const char *seen[12];
    size_t named = 0;
    double lx = left;
    for (size_t i = 0; i < t->task_count && named < 12; i++) {
        bool known = false;
        for (size_t k = 0; k < named && !known; k++)
            known = strcmp(seen[k], t->tasks[i].name) == 0;
        if (known)
            continue;
        seen[named++] = t->tasks[i].name;
        colour_of(t->tasks[i].name, colour);
        fprintf(f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                   "<text x=\"%.0f\" y=\"%.1f\" font-size=\"10\">",
                lx, axis + 40, colour, lx + 14, axis + 49);
        put_xml(f, t->tasks[i].name);
        fputs("</text>\n", f);
        lx += 24 + 6.2 * (double)strlen(t->tasks[i].name);
    }
    fputs("</svg>\n", f);
    int rc = ferror(f);
    fclose(f);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *svg = NULL, *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--svg") == 0 && i + 1 < argc)
            svg = argv[++i];
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            path = NULL, i = argc;
    }
    if (!path) {
        fprintf(stderr, "usage: simpler-trace [--svg OUT.svg] TRACE.json\n");
        return 2;
    }
    struct trace t;
    if (load(path, &t))
        return 1;
    summarise(&t, path);
    int rc = svg ? render_svg(&t, svg) : 0;
    if (svg && !rc)
        printf("swimlane: %s\n", svg);
    json_decref(t.root);
    free(t.spans);
    free(t.tracks);
    free(t.tasks);
    free(t.edges);
    return rc;
}
