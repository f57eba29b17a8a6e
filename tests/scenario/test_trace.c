/*
 * test_trace.c — diagnostics end to end, through the public API: the
 * swimlane trace, the dependency graph and the host spans of real runs,
 * read back with a real JSON parser (jansson).
 *
 * Owns: the checks — the vector example's trace holds exactly its
 * 5 tasks and 6 edges, every task ends after it starts and after its
 * producers; the JSON follows the trace event format; a full buffer drops
 * and counts without blocking the run; a failing run is still traced;
 * kernel mode traces eager rounds and replayed ones — plus the edge
 * reasons RAW/WAR/WAW. The kernels, callables and contexts are
 * tr_support.h's. What needs the internals (level 0 allocates nothing,
 * the environment variable's parsing, the bounded buffer's arithmetic, a
 * trace region that fails to allocate) is unit/trace/test_trace_internals.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_support.h"

/* ------------------------------------------------------- orchestrations */

/* Exported (not static), as tr_support's: the callables name them by symbol. */

/* Hazards on one existing tensor x (args 0) and y (args 1): A writes x, B
 * reads x (RAW on A), C writes x (WAR on B, WAW on A). */
void tr_hazard_orch(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *x = &args->tensors[0], *y = &args->tensors[1];
    struct simpler_task_args ta;
    simpler_task_args_init(&ta); /* A: x = y + y */
    simpler_task_args_add_input(&ta, y);
    simpler_task_args_add_input(&ta, y);
    simpler_task_args_add_output_existing(&ta, x);
    simpler_submit_aiv(rt, 0, &ta, NULL);
    simpler_task_args_init(&ta); /* B: reads x, writes y */
    simpler_task_args_add_input(&ta, x);
    simpler_task_args_add_input(&ta, x);
    simpler_task_args_add_output_existing(&ta, y);
    simpler_submit_aiv(rt, 2, &ta, NULL);
    simpler_task_args_init(&ta); /* C: x += 1 */
    simpler_task_args_add_inout(&ta, x);
    simpler_submit_aiv(rt, 3, &ta, NULL);
}

/* An SPMD task of 3 blocks on tensor 0, then a dummy task after it (INOUT
 * on the same tensor: a WAW edge through the TensorMap). */
void tr_spmd_orch(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, &args->tensors[0]);
    simpler_task_args_set_block_num(&ta, 3);
    simpler_submit_aiv(rt, 4, &ta, NULL);
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, &args->tensors[0]);
    simpler_submit_dummy(rt, &ta, NULL);
}

/* ------------------------------------------------------- reading traces */

static json_t *load(const char *path)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root)
        fprintf(stderr, "%s:%d: %s\n", path, err.line, err.text);
    assert_non_null(root); /* the file must be JSON that a real parser accepts */
    return root;
}

static bool has_number(json_t *o, const char *key)
{
    return json_is_number(json_object_get(o, key));
}

/* Every event has the trace event format's required fields for its phase:
 * name, ph, pid, tid (integers); ts for every phase but metadata; dur >= 0
 * for complete events; id for flow events; args, when present, an object. */
static void check_event_format(json_t *root)
{
    assert_true(json_is_object(root));
    json_t *events = json_object_get(root, "traceEvents");
    assert_true(json_is_array(events));
    assert_true(json_array_size(events) > 0);
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        assert_true(json_is_object(e));
        assert_true(json_is_string(json_object_get(e, "name")));
        const char *ph = json_string_value(json_object_get(e, "ph"));
        assert_non_null(ph);
        assert_non_null(strchr("XisfM", ph[0])); /* the phases the exporter writes */
        assert_int_equal(strlen(ph), 1);
        assert_true(json_is_integer(json_object_get(e, "pid")));
        assert_true(json_is_integer(json_object_get(e, "tid")));
        json_t *args = json_object_get(e, "args");
        assert_true(!args || json_is_object(args));
        if (ph[0] == 'M')
            continue;
        assert_true(has_number(e, "ts"));
        assert_true(json_number_value(json_object_get(e, "ts")) >= 0);
        if (ph[0] == 'X') {
            assert_true(has_number(e, "dur"));
            assert_true(json_number_value(json_object_get(e, "dur")) >= 0);
        }
        if (ph[0] == 's' || ph[0] == 'f')
            assert_true(json_is_integer(json_object_get(e, "id")));
        if (ph[0] == 'i')
            assert_string_equal(json_string_value(json_object_get(e, "s")), "t");
    }
}

struct task_seen {
    uint64_t id;
    double begin, end;
    const char *name;
};

/* The task (cat "task") events: one per block; here every task has one. */
static size_t tasks_of(json_t *root, struct task_seen *out, size_t max)
{
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(json_object_get(root, "traceEvents"), i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!cat || strcmp(cat, "task") != 0)
            continue;
        assert_true(n < max);
        json_t *args = json_object_get(e, "args");
        out[n].id = (uint64_t)json_integer_value(json_object_get(args, "task_id"));
        out[n].begin = json_number_value(json_object_get(e, "ts"));
        out[n].end = out[n].begin + json_number_value(json_object_get(e, "dur"));
        out[n].name = json_string_value(json_object_get(e, "name"));
        assert_true(json_is_integer(json_object_get(args, "func_id")));
        assert_true(json_is_integer(json_object_get(args, "ring")));
        assert_true(json_is_integer(json_object_get(args, "scope_depth")));
        n++;
    }
    return n;
}

static const struct task_seen *task_by_id(const struct task_seen *t, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].id == id)
            return &t[i];
    return NULL;
}

static size_t count_phase(json_t *root, char ph, const char *cat)
{
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(json_object_get(root, "traceEvents"), i, e) {
        const char *p = json_string_value(json_object_get(e, "ph"));
        const char *c = json_string_value(json_object_get(e, "cat"));
        n += p && p[0] == ph && (!cat || (c && strcmp(c, cat) == 0));
    }
    return n;
}

static const char *other(json_t *root, const char *key)
{
    return json_string_value(json_object_get(json_object_get(root, "otherData"), key));
}

/* Flow pairs: every "s" has the "f" of the same id, and the producer's
 * task ends before the consumer's starts (the dependency order). Returns
 * the number of edges. */
static size_t check_flows(json_t *root, const struct task_seen *t, size_t n)
{
    size_t edges = 0, i;
    json_t *e;
    json_array_foreach(json_object_get(root, "traceEvents"), i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (ph[0] != 's')
            continue;
        json_t *args = json_object_get(e, "args");
        const struct task_seen *p =
            task_by_id(t, n, (uint64_t)json_integer_value(json_object_get(args, "producer")));
        const struct task_seen *c =
            task_by_id(t, n, (uint64_t)json_integer_value(json_object_get(args, "consumer")));
        assert_non_null(p);
        assert_non_null(c);
        assert_true(p->end <= c->begin); /* a consumer started before its producer ended */
        edges++;
    }
    assert_int_equal(count_phase(root, 'f', "dep"), edges); /* each arrow has both ends */
    return edges;
}

/* The deps JSON edges as "producer->consumer:reason,reason" strings. */
static size_t deps_edges(json_t *deps, char out[][64], size_t max)
{
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(json_object_get(deps, "edges"), i, e) {
        assert_true(n < max);
        int at = snprintf(out[n], 64, "%lld->%lld:",
                          (long long)json_integer_value(json_object_get(e, "producer")),
                          (long long)json_integer_value(json_object_get(e, "consumer")));
        size_t k;
        json_t *r;
        json_array_foreach(json_object_get(e, "reasons"), k, r)
            at += snprintf(out[n] + at, (size_t)(64 - at), "%s%s", k ? "," : "",
                           json_string_value(r));
        n++;
    }
    return n;
}

/* ---------------------------------------------------------------- tests */

#define RING1(local) ((UINT64_C(1) << 48) | (local))

static void vector_trace_holds_its_five_tasks_six_edges_in_dependency_order(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_program(4, NULL);
    const struct simpler_args *vargs = vector_args(1.0f);
    struct simpler_run_info info;
    assert_int_equal(simpler_run(ctx, VEC_ID, vargs, NULL, &info), 0);
    assert_true(g_vec.f[3] == (3.5f + 1) * (3.5f + 2) + 3.5f); /* the run itself was right */

    json_t *root = load(trace_path(".json"));
    check_event_format(root);
    struct task_seen t[16];
    size_t n = tasks_of(root, t, 16);
    assert_int_equal(n, 5); /* 4: a task missing; 6: one counted twice */
    const uint64_t ids[5] = {0, RING1(0), RING1(1), RING1(2), RING1(3)};
    const char *names[5] = {"tr_add", "tr_add_scalar", "tr_add_scalar", "tr_mul", "tr_add"};
    for (int i = 0; i < 5; i++) {
        const struct task_seen *s = task_by_id(t, n, ids[i]);
        assert_non_null(s);
        assert_string_equal(s->name, names[i]); /* names from the callable's kernels */
        assert_true(s->begin < s->end);
    }
    assert_int_equal(check_flows(root, t, n), 6);
    assert_string_equal(other(root, "tasks"), "5");
    assert_string_equal(other(root, "edges"), "6");
    assert_string_equal(other(root, "dropped_records"), "0");
    /* Level 4: every submit (5) and the entry on the orchestrator's track;
     * level 2's dispatch and finish of every block on the scheduler's. */
    assert_int_equal(count_phase(root, 'X', "submit"), 5);
    assert_int_equal(count_phase(root, 'X', "orch"), 1);
    assert_int_equal(count_phase(root, 'i', "sched"), 10);
    /* The host spans of this run, once each. */
    assert_int_equal(count_phase(root, 'X', "host"), 6);
    json_decref(root);

    json_t *deps = load(trace_path(".deps.json"));
    assert_int_equal(json_array_size(json_object_get(deps, "tasks")), 5);
    char edges[8][64];
    assert_int_equal(deps_edges(deps, edges, 8), 6);
    const char *want[6] = {"0->281474976710656:creator",
                           "0->281474976710657:creator",
                           "281474976710656->281474976710658:creator",
                           "281474976710657->281474976710658:creator",
                           "281474976710658->281474976710659:creator",
                           "0->281474976710659:creator"};
    for (int i = 0; i < 6; i++)
        assert_string_equal(edges[i], want[i]);
    json_decref(deps);
    assert_int_equal(ts_count_lines_with(trace_path(".deps.dot"), " -> "), 6);
    close_program(ctx);
}

static void tracks_name_every_core_scheduler_orchestrator_and_host(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_program(1, NULL);
    const struct simpler_args *vargs = vector_args(1.0f);
    assert_int_equal(simpler_run(ctx, VEC_ID, vargs, NULL, NULL), 0);
    json_t *root = load(trace_path(".json"));
    check_event_format(root);
    const char *want[] = {"orchestrator", "scheduler 0", "core 0 (AIC)", "core 1 (AIV)",
                          "core 2 (AIV)", "host"};
    for (size_t w = 0; w < sizeof want / sizeof *want; w++) {
        size_t found = 0, i;
        json_t *e;
        json_array_foreach(json_object_get(root, "traceEvents"), i, e) {
            if (strcmp(json_string_value(json_object_get(e, "name")), "thread_name") == 0 &&
                strcmp(json_string_value(json_object_get(json_object_get(e, "args"), "name")),
                       want[w]) == 0)
                found++;
        }
        assert_int_equal(found, 1);
    }
    /* Level 1: the tasks, and nothing of levels 2-4. */
    assert_int_equal(count_phase(root, 'X', "task"), 5);
    assert_int_equal(count_phase(root, 'i', "sched"), 0);
    assert_int_equal(count_phase(root, 'X', "submit"), 0);
    json_decref(root);
    close_program(ctx);
}

static void tensormap_edges_name_their_hazard(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_program(1, NULL);
    size_t bytes;
    void *image = image_of("tr_hazard_orch", 2, 0, &bytes);
    assert_int_equal(simpler_register_callable(ctx, 5, image, bytes), 0);
    simpler_callable_free(image);
    static float x[N], y[N];
    struct simpler_tensor t[2];
    simpler_tensor_make_1d(&t[0], (uint64_t)(uintptr_t)x, N, SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST);
    simpler_tensor_make_1d(&t[1], (uint64_t)(uintptr_t)y, N, SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST);
    struct simpler_args args = {2, 0, t, NULL};
    assert_int_equal(simpler_run(ctx, 5, &args, NULL, NULL), 0);
    json_t *deps = load(trace_path(".deps.json"));
    char edges[8][64];
    size_t n = deps_edges(deps, edges, 8);
    /* A(0) writes x, B(1) reads x and writes y (which A read), C(2)
     * rewrites x. */
    assert_int_equal(n, 3);
    assert_string_equal(edges[0], "0->1:RAW,WAR"); /* B reads A's x; B writes y A read */
    assert_string_equal(edges[1], "0->2:WAW");
    assert_string_equal(edges[2], "1->2:WAR");
    json_decref(deps);
    close_program(ctx);
}

static void an_spmd_task_has_a_span_per_block_and_a_dummy_task_none(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_program(2, NULL);
    size_t bytes;
    void *image = image_of("tr_spmd_orch", 1, 0, &bytes);
    assert_int_equal(simpler_register_callable(ctx, 6, image, bytes), 0);
    simpler_callable_free(image);
    static float x[N];
    struct simpler_tensor t;
    simpler_tensor_make_1d(&t, (uint64_t)(uintptr_t)x, N, SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST);
    struct simpler_args args = {1, 0, &t, NULL};
    assert_int_equal(simpler_run(ctx, 6, &args, NULL, NULL), 0);
    assert_true(x[0] == 1.0f && x[1] == 2.0f && x[2] == 3.0f); /* every block ran */
    json_t *root = load(trace_path(".json"));
    check_event_format(root);
    struct task_seen seen[8];
    assert_int_equal(tasks_of(root, seen, 8), 3); /* one span per block, all of task 0 */
    unsigned blocks = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(root, "traceEvents"), i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!cat || strcmp(cat, "task") != 0)
            continue;
        json_t *a = json_object_get(e, "args");
        assert_int_equal(json_integer_value(json_object_get(a, "task_id")), 0);
        blocks |= 1u << json_integer_value(json_object_get(a, "block"));
        assert_string_equal(json_string_value(json_object_get(e, "name")), "tr_block_mark");
    }
    assert_int_equal(blocks, 7); /* blocks 0, 1 and 2, each once */
    /* The dummy never ran on a core: no arrow, but the graph has it. */
    assert_int_equal(count_phase(root, 's', "dep"), 0);
    assert_int_equal(count_phase(root, 'i', "sched"), 6); /* dispatch + finish of 3 blocks */
    json_decref(root);
    json_t *deps = load(trace_path(".deps.json"));
    json_t *dummy = json_array_get(json_object_get(deps, "tasks"), 1);
    assert_string_equal(json_string_value(json_object_get(dummy, "kernel")), "dummy");
    assert_string_equal(json_string_value(json_object_get(dummy, "core_type")), "none");
    char edges[4][64];
    assert_int_equal(deps_edges(deps, edges, 4), 1);
    assert_string_equal(edges[0], "0->1:WAW");
    json_decref(deps);
    close_program(ctx);
}

static void a_full_buffer_drops_and_counts_without_blocking_the_run(void **state)
{
    (void)state;
    /* One AIV core and a chain of 20 tasks: every block on core 1. */
    struct simdev_config topo = ts_small_config();
    topo.aiv_cores = 1;
    struct simpler_context *ctx = open_program(2, &topo);
    struct simpler_run_config rc = ts_small_run_config();
    rc.trace_level = 2;
    rc.trace_records = 4;
    static float x[N];
    struct simpler_tensor t;
    simpler_tensor_make_1d(&t, (uint64_t)(uintptr_t)x, N, SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST);
    uint64_t tasks = 20;
    struct simpler_args args = {1, 1, &t, &tasks};
    struct simpler_run_info info;
    assert_int_equal(simpler_run(ctx, CHAIN_ID, &args, &rc, &info), 0);
    assert_true(x[0] == 20.0f); /* every task ran */
    json_t *root = load(trace_path(".json"));
    check_event_format(root);
    /* Kept: 4 of the core's 20 blocks, 4 of the orchestrator's 20 submits,
     * 4 of the scheduler's 40 dispatch + finish records: dropped
     * 16 + 16 + 36. */
    assert_int_equal(count_phase(root, 'X', "task"), 4);
    assert_int_equal(count_phase(root, 'i', "sched"), 4);
    assert_string_equal(other(root, "dropped_records"), "68");
    json_decref(root);
    close_program(ctx);
}

static void a_failing_run_is_still_traced(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_program(2, NULL);
    const struct simpler_args *vargs = vector_args(99.0f); /* t1 fails with FAIL_CODE */
    assert_int_equal(simpler_run(ctx, VEC_ID, vargs, NULL, NULL), -FAIL_CODE);
    json_t *root = load(trace_path(".json"));
    check_event_format(root);
    assert_string_equal(other(root, "status"), "-233");
    struct task_seen t[16];
    size_t n = tasks_of(root, t, 16);
    /* t0 ran; t1 ran and failed; t3 and t4 never ran (t1 failed them);
     * t2 may or may not have run before the failure was seen. */
    assert_non_null(task_by_id(t, n, 0));
    assert_non_null(task_by_id(t, n, RING1(0)));
    assert_null(task_by_id(t, n, RING1(2)));
    assert_null(task_by_id(t, n, RING1(3)));
    /* t0 and t1 were submitted (they ran); the orchestration may have been
     * stopped by t1's failure before it submitted the other three (a
     * scheduler step on the orchestrator's thread can see it first). */
    long submitted = strtol(other(root, "tasks"), NULL, 10);
    assert_true(submitted >= 2 && submitted <= 5);
    json_decref(root);
    close_program(ctx);
}

/* ----------------------------------------------------------- kernel mode */

struct km_vec {
    float *a, *b, *f;
    struct simpler_tensor t[3];
    uint64_t scalar;
    struct simpler_args args;
};

static void km_vec_open(struct km_vec *v)
{
    float host[N];
    float **p[3] = {&v->a, &v->b, &v->f};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(simdev_malloc((void **)p[i], sizeof host), 0);
        for (int k = 0; k < N; k++)
            host[k] = (float)i;
        assert_int_equal(simdev_memcpy(*p[i], host, sizeof host, SIMDEV_COPY_HOST_TO_DEVICE), 0);
        simpler_tensor_make_1d(&v->t[i], (uint64_t)(uintptr_t)*p[i], N, SIMPLER_DTYPE_F32,
                               SIMPLER_MEM_DEVICE);
    }
    v->scalar = ts_f32_bits(1.0f);
    v->args = (struct simpler_args){3, 1, v->t, &v->scalar};
}

static void km_vec_close(struct km_vec *v)
{
    simdev_free(v->a);
    simdev_free(v->b);
    simdev_free(v->f);
}

static size_t kernel_trace_tasks(struct simpler_context *ctx, const char *name, size_t *edges)
{
    assert_int_equal(simpler_kernel_mode_write_trace(ctx, trace_path(".json")), 0);
    json_t *root = load(trace_path(".json"));
    check_event_format(root);
    struct task_seen t[16];
    size_t n = tasks_of(root, t, 16);
    for (size_t i = 0; i < n; i++)
        if (name)
            assert_string_equal(t[i].name, name);
    *edges = check_flows(root, t, n);
    json_decref(root);
    return n;
}

static void kernel_mode_traces_eager_rounds_and_graph_replays(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_kernel(2);
    assert_int_equal(simpler_kernel_mode_write_trace(ctx, trace_path(".json")),
                     PTO_RUNTIME_ERR_INVALID_STATE); /* no round yet */
    size_t bytes;
    int32_t vec = -1, chain = -1;
    void *image = image_of("tr_vector_orch", 3, 1, &bytes);
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &vec), 0);
    simpler_callable_free(image);
    image = image_of("tr_chain_orch", 1, 1, &bytes);
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &chain), 0);
    simpler_callable_free(image);

    struct km_vec v;
    km_vec_open(&v);
    simdev_stream_t caller = ts_new_stream();
    assert_int_equal(simpler_kernel_mode_launch(ctx, vec, &v.args, caller), 0);
    assert_int_equal(simdev_stream_sync(caller), 0);
    size_t edges;
    assert_int_equal(kernel_trace_tasks(ctx, NULL, &edges), 5);
    assert_int_equal(edges, 6);

    /* Capture a round of the other callable (3 tasks, each on tensor 0),
     * then replay it: the trace shows the replayed round, not the eager
     * one, and each replay starts from empty buffers. */
    uint64_t three = 3;
    struct simpler_args cargs = {1, 1, v.t, &three};
    simdev_graph_t graph;
    simdev_graph_exec_t exec;
    assert_int_equal(simdev_stream_begin_capture(caller), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, chain, &cargs, caller), 0);
    assert_int_equal(simdev_stream_end_capture(caller, &graph), 0);
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    assert_int_equal(kernel_trace_tasks(ctx, NULL, &edges), 5); /* capture ran nothing */
    for (int replay = 0; replay < 3; replay++) {
        assert_int_equal(simdev_graph_launch(exec, caller), 0);
        assert_int_equal(simdev_stream_sync(caller), 0);
        /* 3, never 6 or 9: a replay's records replace the last round's */
        assert_int_equal(kernel_trace_tasks(ctx, "tr_touch", &edges), 3);
        assert_int_equal(edges, 2); /* a chain through the TensorMap */
    }
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(caller), 0);
    km_vec_close(&v);
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(simpler_committed_device_memory(ctx), 0); /* the region was released */
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
    ts_device_teardown(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST_WITH(vector_trace_holds_its_five_tasks_six_edges_in_dependency_order,
                          setup, teardown),
        SIMPLER_TEST_WITH(tracks_name_every_core_scheduler_orchestrator_and_host, setup, teardown),
        SIMPLER_TEST_WITH(tensormap_edges_name_their_hazard, setup, teardown),
        SIMPLER_TEST_WITH(an_spmd_task_has_a_span_per_block_and_a_dummy_task_none, setup, teardown),
        SIMPLER_TEST_WITH(a_full_buffer_drops_and_counts_without_blocking_the_run, setup, teardown),
        SIMPLER_TEST_WITH(a_failing_run_is_still_traced, setup, teardown),
        SIMPLER_TEST_WITH(kernel_mode_traces_eager_rounds_and_graph_replays, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
