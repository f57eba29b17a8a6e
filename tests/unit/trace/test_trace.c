/*
 * test_trace.c — diagnostics end to end: the swimlane trace, the
 * dependency graph and the host spans of real runs, read back with a real
 * JSON parser (jansson).
 *
 * Owns: the checks — the vector example's trace holds exactly its
 * 5 tasks and 6 edges, every task ends after it starts and after its
 * producers; the JSON follows the trace event format; a full buffer drops
 * and counts without blocking the run; level 0 allocates nothing; a failing
 * run is still traced; kernel mode traces eager rounds and replayed ones —
 * plus the edge reasons RAW/WAR/WAW, the environment variable's parsing and
 * the bounded buffer's arithmetic.
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
#include <unistd.h>

#include "common/host_alloc.h"
#include "host/context.h"
#include "pm_support.h"
#include "runtime/trace.h"
#include "simpler/simdev_fault.h"
#include "test_support.h"

#define N 1024
#define VEC_ID 3
#define CHAIN_ID 4
#define FAIL_CODE 233

/* ------------------------------------------------------------- kernels */

/* Exported (not static): the callables name them by symbol. */
void tr_add(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0), *y = simpler_kernel_data(args, 1);
    float *z = simpler_kernel_data(args, 2);
    for (uint64_t i = 0; i < simpler_tensor_numel(simpler_kernel_tensor(args, 2)); i++)
        z[i] = x[i] + y[i];
}

void tr_add_scalar(int64_t *args) /* z = x + s; fails with FAIL_CODE when s is 99 */
{
    const float *x = simpler_kernel_data(args, 0);
    float *z = simpler_kernel_data(args, 1);
    float s = simpler_kernel_scalar_f32(args, 2);
    if (s == 99.0f) {
        simpler_kernel_fail(args, FAIL_CODE);
        return;
    }
    for (uint64_t i = 0; i < simpler_tensor_numel(simpler_kernel_tensor(args, 1)); i++)
        z[i] = x[i] + s;
}

void tr_mul(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0), *y = simpler_kernel_data(args, 1);
    float *z = simpler_kernel_data(args, 2);
    for (uint64_t i = 0; i < simpler_tensor_numel(simpler_kernel_tensor(args, 2)); i++)
        z[i] = x[i] * y[i];
}

void tr_touch(int64_t *args) /* x[0] += 1: an INOUT of one tensor */
{
    float *x = simpler_kernel_data(args, 0);
    x[0] += 1.0f;
}

void tr_block_mark(int64_t *args) /* x[block] = block + 1: each block its own element */
{
    float *x = simpler_kernel_data(args, 0);
    uint32_t b = simpler_kernel_block_idx(args);
    x[b] = (float)(b + 1);
}

/* ------------------------------------------------------- orchestrations */

static void submit_scalar(struct simpler_orch *rt, const struct simpler_tensor *in, float s,
                          struct simpler_task_result *out)
{
    uint64_t shape[1] = {N};
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, in);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_task_args_add_scalar_f32(&ta, s);
    simpler_submit_aiv(rt, 1, &ta, out);
}

static void submit_binary(struct simpler_orch *rt, int32_t func, const struct simpler_tensor *x,
                          const struct simpler_tensor *y, const struct simpler_tensor *existing,
                          struct simpler_task_result *out)
{
    uint64_t shape[1] = {N};
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, x);
    simpler_task_args_add_input(&ta, y);
    if (existing)
        simpler_task_args_add_output_existing(&ta, existing);
    else
        simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_submit_aiv(rt, func, &ta, out);
}

/* Upstream's vector example: f = (a + b + 1)(a + b + 2) + (a + b); its
 * scalar is args->scalars[0] (1, or 99 to fail task t1). */
void tr_vector_orch(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *a = &args->tensors[0], *b = &args->tensors[1];
    const struct simpler_tensor *f = &args->tensors[2];
    float one;
    memcpy(&one, &args->scalars[0], sizeof one);
    struct simpler_task_result c, d, e, g, r;
    submit_binary(rt, 0, a, b, NULL, &c); /* t0 */
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    submit_scalar(rt, &c.outputs[0], one, &d);          /* t1 */
    submit_scalar(rt, &c.outputs[0], 2.0f, &e);         /* t2 */
    submit_binary(rt, 2, &d.outputs[0], &e.outputs[0], NULL, &g); /* t3 */
    submit_binary(rt, 0, &g.outputs[0], &c.outputs[0], f, &r);    /* t4 */
    simpler_scope_end(rt);
}

/* `scalars[0]` tasks, each INOUT on tensor 0: a chain through the
 * TensorMap (WAW and RAW of the same buffer). */
void tr_chain_orch(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    for (uint64_t i = 0; i < args->scalars[0]; i++) {
        struct simpler_task_args ta;
        simpler_task_args_init(&ta);
        simpler_task_args_add_inout(&ta, &args->tensors[0]);
        simpler_submit_aiv(rt, 3, &ta, NULL);
    }
}

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

static void *image_of(const char *orch, uint32_t tensors, uint32_t scalars, size_t *bytes)
{
    enum simpler_direction sig[8];
    static const enum simpler_direction bin[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN, SIMPLER_DIR_OUT};
    static const enum simpler_direction one[] = {SIMPLER_DIR_INOUT};
    static const enum simpler_direction sca[] = {SIMPLER_DIR_IN, SIMPLER_DIR_OUT,
                                                 SIMPLER_DIR_SCALAR};
    for (uint32_t i = 0; i < tensors; i++)
        sig[i] = i + 1 == tensors && tensors == 3 ? SIMPLER_DIR_OUT : SIMPLER_DIR_INOUT;
    if (tensors == 3)
        sig[0] = sig[1] = SIMPLER_DIR_IN;
    for (uint32_t i = 0; i < scalars; i++)
        sig[tensors + i] = SIMPLER_DIR_SCALAR;
    struct simpler_callable_builder *b;
    void *image;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration(
                         b, SIMPLER_BINARY_SYMBOL, NULL, 0, orch, NULL, sig, tensors + scalars),
                     0);
    const struct {
        const char *symbol;
        const enum simpler_direction *sig;
        uint32_t n;
    } kernels[] = {{"tr_add", bin, 3},   {"tr_add_scalar", sca, 3}, {"tr_mul", bin, 3},
                   {"tr_touch", one, 1}, {"tr_block_mark", one, 1}}; /* func ids 0..4 */
    for (int32_t k = 0; k < 5; k++)
        assert_int_equal(simpler_callable_builder_add_kernel(b, k, SIMPLER_CORE_AIV,
                                                             SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                             kernels[k].symbol, kernels[k].sig,
                                                             kernels[k].n),
                         0);
    assert_int_equal(simpler_callable_builder_finish(b, &image, bytes), 0);
    simpler_callable_builder_destroy(b);
    return image;
}

/* ------------------------------------------------------------- fixtures */

static char g_path[256];

static const char *trace_path(const char *suffix)
{
    static char p[300];
    snprintf(p, sizeof p, "%s%s", g_path, suffix);
    return p;
}

static void remove_outputs(void)
{
    unlink(trace_path(".json"));
    unlink(trace_path(".deps.json"));
    unlink(trace_path(".deps.dot"));
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_path, sizeof g_path, "test_trace_%d", (int)getpid());
    remove_outputs();
    unsetenv("SIMPLER_TRACE");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    remove_outputs();
    return 0;
}

static struct simpler_context *open_program(uint32_t trace_level, const struct simdev_config *topo)
{
    struct simdev_config small = ts_small_config();
    ts_device_setup_config(topo ? topo : &small);
    struct simpler_context *ctx;
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.pipeline_depth = 2;
    cfg.run_capacity = ts_small_run_config();
    cfg.run_capacity.trace_level = trace_level;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
    assert_int_equal(simpler_set_trace_path(ctx, trace_path(".json")), 0);
    size_t bytes;
    void *image = image_of("tr_vector_orch", 3, 1, &bytes);
    assert_int_equal(simpler_register_callable(ctx, VEC_ID, image, bytes), 0);
    simpler_callable_free(image);
    image = image_of("tr_chain_orch", 1, 1, &bytes);
    assert_int_equal(simpler_register_callable(ctx, CHAIN_ID, image, bytes), 0);
    simpler_callable_free(image);
    return ctx;
}

static void close_program(struct simpler_context *ctx)
{
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(simpler_committed_device_memory(ctx), 0); /* the trace region was freed */
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
    ts_device_teardown(NULL);
}

struct vec_bufs {
    float a[N], b[N], f[N];
    struct simpler_tensor t[3];
    uint64_t scalar;
    struct simpler_args args;
};

static struct vec_bufs g_vec;

static void vec_init(struct vec_bufs *v, float scalar)
{
    for (int i = 0; i < N; i++) {
        v->a[i] = (float)(i % 7);
        v->b[i] = 0.5f;
        v->f[i] = -1.0f;
    }
    float *p[3] = {v->a, v->b, v->f};
    for (int i = 0; i < 3; i++)
        simpler_tensor_make_1d(&v->t[i], (uint64_t)(uintptr_t)p[i], N, SIMPLER_DTYPE_F32,
                               SIMPLER_MEM_HOST);
    v->scalar = ts_f32_bits(scalar);
    v->args = (struct simpler_args){3, 1, v->t, &v->scalar};
}

/* The vector example's args over fresh host buffers (scalar: t1's). */
static const struct simpler_args *vector_args(float scalar)
{
    vec_init(&g_vec, scalar);
    return &g_vec.args;
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

static bool file_exists(const char *path)
{
    return access(path, F_OK) == 0;
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

static void the_buffer_writer_keeps_capacity_records_and_counts_the_rest(void **state)
{
    (void)state;
    struct rt_trace_header layout;
    assert_int_equal(rt_trace_layout(1, 1, 1, 2, 0, &layout), 0);
    assert_int_equal(layout.buffer_count, 3); /* core, scheduler, orchestrator */
    uint8_t *region = aligned_alloc(64, (layout.total_bytes + 63) / 64 * 64);
    memset(region, 0, layout.total_bytes);
    memcpy(region, &layout, sizeof layout);
    struct rt_trace_header *h = (struct rt_trace_header *)region;
    struct rt_trace_record r = {.begin = 1, .end = 2, .kind = RT_TR_TASK};
    for (uint64_t i = 0; i < 5; i++) {
        r.task_id = i;
        rt_trace_put(h, 0, &r);
    }
    rt_trace_put(h, 3, &r); /* no such buffer: ignored, nothing written */
    assert_int_equal(rt_trace_buffers(h)[0].count, 2);
    assert_int_equal(rt_trace_buffers(h)[0].dropped, 3);
    assert_int_equal(rt_trace_records(h, 0)[1].task_id, 1); /* the first ones are kept */
    assert_int_equal(rt_trace_buffers(h)[1].count + rt_trace_buffers(h)[2].count, 0);
    free(region);
    /* Sizes that do not fit are refused, not wrapped. */
    assert_int_equal(rt_trace_layout(1, 1, 1, UINT64_MAX / 8, 0, &layout),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_trace_layout(1, 1, 1, 1, UINT64_MAX / 2, &layout),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_trace_layout(5, 1, 1, 1, 1, &layout), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
}

/* Device mallocs and tracing's own allocations of one run of `level`. */
static void allocations_of_a_run(struct simpler_context *ctx, uint32_t level, uint64_t *mallocs,
                                 uint64_t *trace_allocs)
{
    const struct simpler_args *vargs = vector_args(1.0f);
    struct simpler_run_config rc = ts_small_run_config();
    rc.trace_level = level;
    uint64_t before, after, traced = ctx->trace.allocations;
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_MALLOC, &before), 0);
    assert_int_equal(simpler_run(ctx, VEC_ID, vargs, &rc, NULL), 0);
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_MALLOC, &after), 0);
    *mallocs = after - before;
    *trace_allocs = ctx->trace.allocations - traced;
}

static void level_zero_allocates_nothing_and_writes_nothing(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_program(0, NULL);
    uint64_t mallocs, traced;
    allocations_of_a_run(ctx, 0, &mallocs, &traced);
    assert_int_equal(mallocs, 3); /* the three staging buffers, nothing else */
    assert_int_equal(traced, 0);
    assert_false(file_exists(trace_path(".json")));
    /* The same run traced: one device region more and its host record, so
     * the counters above do see tracing's allocations. */
    allocations_of_a_run(ctx, 1, &mallocs, &traced);
    assert_int_equal(mallocs, 4);
    assert_int_equal(traced, 2);
    assert_true(file_exists(trace_path(".json")));
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

static void the_environment_variable_parses_strictly(void **state)
{
    (void)state;
    uint32_t level = 9;
    char path[SP_TRACE_PATH_MAX] = "unchanged";
    assert_int_equal(sp_trace_parse_env("3", &level, path), 0);
    assert_int_equal(level, 3);
    assert_string_equal(path, "unchanged");
    assert_int_equal(sp_trace_parse_env("4,traces/x.json", &level, path), 0);
    assert_int_equal(level, 4);
    assert_string_equal(path, "traces/x.json");
    const char *bad[] = {"", "5", "-1", "12", "2,", "x", "2;p", " 2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        level = 9;
        assert_int_equal(sp_trace_parse_env(bad[i], &level, path),
                         PTO_RUNTIME_ERR_INVALID_ARGUMENT);
        assert_int_equal(level, 9); /* a rejected value writes nothing */
    }
    char *long_path = malloc(SP_TRACE_PATH_MAX + 3);
    memset(long_path, 'p', SP_TRACE_PATH_MAX + 2);
    long_path[0] = '1';
    long_path[1] = ',';
    long_path[SP_TRACE_PATH_MAX + 2] = 0;
    assert_int_equal(sp_trace_parse_env(long_path, &level, path), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    free(long_path);
}

static void the_environment_overrides_the_config_and_bad_configs_are_refused(void **state)
{
    (void)state;
    assert_int_equal(setenv("SIMPLER_TRACE", "1", 1), 0);
    struct simpler_context *ctx = open_program(0, NULL); /* config says 0, the env 1 */
    unsetenv("SIMPLER_TRACE");
    const struct simpler_args *vargs = vector_args(1.0f);
    assert_int_equal(simpler_run(ctx, VEC_ID, vargs, NULL, NULL), 0);
    assert_true(file_exists(trace_path(".json")));
    /* A level or buffer size out of range is refused before anything. */
    struct simpler_run_config rc = ts_small_run_config();
    rc.trace_level = 5;
    simpler_run_t run = 0;
    assert_int_equal(simpler_prepare_run(ctx, &run, VEC_ID, vargs, &rc),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    rc.trace_level = 1;
    rc.trace_records = SP_TRACE_MAX_RECORDS + 1;
    assert_int_equal(simpler_prepare_run(ctx, &run, VEC_ID, vargs, &rc),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(run, 0);
    assert_int_equal(simpler_set_trace_path(ctx, ""), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_set_trace_path(NULL, "x"), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    close_program(ctx);
}

static void a_trace_region_that_fails_to_allocate_fails_prepare_cleanly(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_program(1, NULL);
    const struct simpler_args *vargs = vector_args(1.0f);
    size_t committed = simpler_committed_device_memory(ctx);
    simpler_run_t run = 0;
    /* The run's first device allocation is its trace region. */
    const int oom = PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY;
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_MALLOC, 1, oom), 0);
    assert_int_equal(simpler_prepare_run(ctx, &run, VEC_ID, vargs, NULL),
                     PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY);
    assert_int_equal(simpler_committed_device_memory(ctx), committed); /* nothing held */
    /* The copy of its zeroed header. */
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_COPY, 1, oom), 0);
    assert_int_equal(simpler_prepare_run(ctx, &run, VEC_ID, vargs, NULL),
                     PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY);
    assert_int_equal(simpler_committed_device_memory(ctx), committed); /* the region was freed */
    /* Its host record. */
    sp_host_fault_inject(1);
    assert_int_equal(simpler_prepare_run(ctx, &run, VEC_ID, vargs, NULL),
                     PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
    assert_int_equal(simpler_committed_device_memory(ctx), committed);
    assert_int_equal(ctx->trace.allocations, 0); /* no region, no record */
    assert_int_equal(run, 0);
    sp_host_fault_inject(0);
    assert_int_equal(simpler_run(ctx, VEC_ID, vargs, NULL, NULL), 0); /* a retry works */
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

/* A kernel context on the fixture's device 0, initialised at `level`. */
static struct simpler_context *open_kernel(uint32_t level)
{
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.run_capacity = ts_small_run_config();
    cfg.run_capacity.trace_level = level;
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), 0);
    return ctx;
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

static void kernel_mode_at_level_zero_commits_no_trace_region(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_kernel(0);
    assert_int_equal(ctx->trace.allocations, 0);
    assert_null(ctx->trace.kernel_region);
    assert_int_equal(simpler_kernel_mode_write_trace(ctx, NULL), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_finalize_device(ctx), 0);
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
        cmocka_unit_test(the_buffer_writer_keeps_capacity_records_and_counts_the_rest),
        SIMPLER_TEST_WITH(level_zero_allocates_nothing_and_writes_nothing, setup, teardown),
        SIMPLER_TEST_WITH(a_failing_run_is_still_traced, setup, teardown),
        cmocka_unit_test(the_environment_variable_parses_strictly),
        SIMPLER_TEST_WITH(the_environment_overrides_the_config_and_bad_configs_are_refused,
                          setup, teardown),
        SIMPLER_TEST_WITH(a_trace_region_that_fails_to_allocate_fails_prepare_cleanly,
                          setup, teardown),
        SIMPLER_TEST_WITH(kernel_mode_traces_eager_rounds_and_graph_replays, setup, teardown),
        SIMPLER_TEST_WITH(kernel_mode_at_level_zero_commits_no_trace_region, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
