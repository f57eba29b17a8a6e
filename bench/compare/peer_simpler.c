/*
 * peer_simpler.c — the comparison benchmark's worker for simpler itself.
 *
 * Runs the workloads of compare.h the way a user would: a program-mode
 * context on a simulated device (2 AICPU threads: 1 orchestrator + 1
 * scheduler; CMP_THREADS AIV cores, default one per host CPU), one
 * symbol-form callable per workload whose orchestration (this file's
 * exported functions) submits the tasks, host tensors staged in and out.
 * The measured time is launch to wait (the run's device time: submission,
 * dependency inference, dispatch, execution, completion); staging copies
 * (prepare, finalize) are outside it and reported apart as "staging_ns".
 *
 * Two simpler-only workloads (compare.h lists them):
 *   pressure n window  groups of two tasks in their own scope: a producer
 *                      with a runtime-allocated output, a consumer reading it
 *                      into one of 64 accumulator cells; the run config has
 *                      `window` task slots per ring and a heap and TensorMap
 *                      just big enough, so the orchestrator waits on
 *                      retirement (back-pressure). ns/task.
 *   pipeline n depth   n back-to-back runs of a 1-task callable (1 KiB
 *                      INOUT host tensor), up to `depth` in flight;
 *                      unit us/run; "serial_us" is the same with depth 1.
 *
 * Under host_build_graph (SIMPLER_RUNTIME=hbg in the environment, which
 * simpler_init reads; bench_compare's "simpler-hbg") the same workloads run
 * with rings, heap and TensorMap sized for the whole graph (HBG reclaims
 * nothing during a run), the device's memory raised to 4 GiB for that
 * arena, and after the measured run a second run of the same instance
 * (the host build on a warm scratch). Every run reports, besides its value:
 * device_ns_per_task (launch returned -> wait returned), launch_cpu_ns_per_task
 * (the launching thread's CPU time inside simpler_launch_run,
 * CLOCK_THREAD_CPUTIME_ID: under HBG the host build and the enqueue, under
 * TMR the enqueue), device_mib (device memory held after init), and under
 * HBG warm_device_ns_per_task and warm_launch_cpu_ns_per_task.
 *
 * Environment: CMP_THREADS (AIV cores; default one per host CPU) and, for
 * experiments, CMP_SPIN_NS (simdev's spin budget before a waiting core
 * parks; default simdev's 50000) and CMP_PIN_CORES (0: the device does not
 * pin its core threads). bench_compare sets none of them but CMP_THREADS
 * (and SIMPLER_RUNTIME: tmr for "simpler", hbg for "simpler-hbg").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compare.h"
#include "simpler/simdev_profile.h"
#include "simpler/device.h"
#include "simpler/simpler.h"

#define WORKER "bench_cmp_simpler"
#define DEVICE 0

#define CHECK(call)                                                                         \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        if (rc_ != 0) {                                                                     \
            fprintf(stderr, WORKER ": %s failed: %d (%s) at line %d\n", #call, rc_,         \
                    simpler_strerror(rc_), __LINE__);                                       \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

/* Orchestration-side timestamps: first and last submit of the run. */
static _Atomic uint64_t g_orch_begin, g_orch_end;

/* =============================================================== kernels
 *
 * Exported: the callable images name them and the device loader resolves
 * them among this executable's symbols (CMAKE_ENABLE_EXPORTS). */

void cmp_sk_inc(int64_t *args);
void cmp_sk_fan_consume(int64_t *args);
void cmp_sk_fan_reduce(int64_t *args);
void cmp_sk_stencil(int64_t *args);
void cmp_sk_potrf(int64_t *args);
void cmp_sk_trsm(int64_t *args);
void cmp_sk_syrk(int64_t *args);
void cmp_sk_gemm_nt(int64_t *args);
void cmp_sk_gemm_nn(int64_t *args);
void cmp_sk_make(int64_t *args);
void cmp_sk_accumulate(int64_t *args);

enum {
    K_INC,
    K_FAN_CONSUME,
    K_FAN_REDUCE,
    K_STENCIL,
    K_POTRF,
    K_TRSM,
    K_SYRK,
    K_GEMM_NT,
    K_GEMM_NN,
    K_MAKE,
    K_ACCUMULATE,
    K_COUNT
};

static const char *const k_kernel_names[K_COUNT] = {
    "cmp_sk_inc",   "cmp_sk_fan_consume", "cmp_sk_fan_reduce", "cmp_sk_stencil",
    "cmp_sk_potrf", "cmp_sk_trsm",        "cmp_sk_syrk",       "cmp_sk_gemm_nt",
    "cmp_sk_gemm_nn", "cmp_sk_make",      "cmp_sk_accumulate",
};

static struct cmp_cell *cell_arg(int64_t *args, uint32_t i)
{
    return simpler_kernel_data(args, i);
}

/* tensor 0 INOUT: one cell, += 1 (indep, chain, fan's producer) */
void cmp_sk_inc(int64_t *args) { cmp_indep_body(cell_arg(args, 0)); }

/* tensor 0 IN x, tensor 1 OUT y[c]; scalar c */
void cmp_sk_fan_consume(int64_t *args)
{
    uint32_t c = (uint32_t)simpler_kernel_scalar_u64(args, 2);
    cell_arg(args, 1)->v = cmp_fan_consume(cell_arg(args, 0)->v, c);
}

/* tensor 0 IN y (k cells), tensor 1 INOUT x */
void cmp_sk_fan_reduce(int64_t *args)
{
    const struct cmp_cell *y = cell_arg(args, 0);
    uint32_t k = (uint32_t)(simpler_tensor_numel(simpler_kernel_tensor(args, 0)) / 8);
    uint64_t v[CMP_FAN_MAX_K];
    for (uint32_t c = 0; c < k && c < CMP_FAN_MAX_K; c++)
        v[c] = y[c].v;
    cell_arg(args, 1)->v = cmp_fan_reduce(v, k);
}

/* tensors: IN l, IN m, IN r, OUT out; scalars: has_l, has_r, t, work. An
 * edge cell has no l (or r): m stands in for it (the same region, so no
 * extra dependency) and has_l (has_r) is 0. */
void cmp_sk_stencil(int64_t *args)
{
    uint64_t m = cell_arg(args, 1)->v;
    uint64_t l = simpler_kernel_scalar_u64(args, 4) ? cell_arg(args, 0)->v : 0;
    uint64_t r = simpler_kernel_scalar_u64(args, 5) ? cell_arg(args, 2)->v : 0;
    uint32_t t = (uint32_t)simpler_kernel_scalar_u64(args, 6);
    cell_arg(args, 3)->v = cmp_stencil_cell(l, m, r, t, simpler_kernel_scalar_u64(args, 7));
}

static uint32_t tile_of(int64_t *args, uint32_t i)
{
    const struct simpler_tensor *t = simpler_kernel_tensor(args, i);
    uint64_t elems = simpler_tensor_numel(t);
    uint32_t tile = 1;
    while ((uint64_t)tile * tile < elems)
        tile++;
    return tile;
}

/* tensor 0 INOUT A[k][k] */
void cmp_sk_potrf(int64_t *args)
{
    if (cmp_k_potrf(tile_of(args, 0), simpler_kernel_data(args, 0)) != 0)
        simpler_kernel_fail(args, 500);
}

/* tensor 0 IN A[k][k], tensor 1 INOUT A[i][k] */
void cmp_sk_trsm(int64_t *args)
{
    cmp_k_trsm(tile_of(args, 0), simpler_kernel_data(args, 0), simpler_kernel_data(args, 1));
}

/* tensor 0 IN A[i][k], tensor 1 INOUT A[i][i] */
void cmp_sk_syrk(int64_t *args)
{
    cmp_k_syrk(tile_of(args, 0), simpler_kernel_data(args, 0), simpler_kernel_data(args, 1));
}

/* tensors 0, 1 IN A[i][k], A[j][k]; tensor 2 INOUT A[i][j] */
void cmp_sk_gemm_nt(int64_t *args)
{
    cmp_k_gemm_nt(tile_of(args, 0), simpler_kernel_data(args, 0), simpler_kernel_data(args, 1),
                  simpler_kernel_data(args, 2));
}

/* tensors 0, 1 IN A[i][k], B[k][j]; tensor 2 INOUT C[i][j] */
void cmp_sk_gemm_nn(int64_t *args)
{
    cmp_k_gemm_nn(tile_of(args, 0), simpler_kernel_data(args, 0), simpler_kernel_data(args, 1),
                  simpler_kernel_data(args, 2));
}

/* tensor 0 OUT (runtime-allocated cell): v = scalar 0 */
void cmp_sk_make(int64_t *args)
{
    cell_arg(args, 0)->v = simpler_kernel_scalar_u64(args, 1);
}

/* tensor 0 IN cell, tensor 1 INOUT accumulator cell: acc += v */
void cmp_sk_accumulate(int64_t *args)
{
    cell_arg(args, 1)->v += cell_arg(args, 0)->v;
}

/* ========================================================= orchestrations */

void cmp_so_indep(struct simpler_orch *rt, const struct simpler_orch_args *args);
void cmp_so_chain(struct simpler_orch *rt, const struct simpler_orch_args *args);
void cmp_so_fan(struct simpler_orch *rt, const struct simpler_orch_args *args);
void cmp_so_stencil(struct simpler_orch *rt, const struct simpler_orch_args *args);
void cmp_so_chol(struct simpler_orch *rt, const struct simpler_orch_args *args);
void cmp_so_gemm(struct simpler_orch *rt, const struct simpler_orch_args *args);
void cmp_so_pressure(struct simpler_orch *rt, const struct simpler_orch_args *args);
void cmp_so_one(struct simpler_orch *rt, const struct simpler_orch_args *args);
void cmp_so_config(struct simpler_run_config *config);

static void orch_begin(void)
{
    atomic_store_explicit(&g_orch_begin, cmp_now_ns(), memory_order_relaxed);
}

static void orch_end(void)
{
    atomic_store_explicit(&g_orch_end, cmp_now_ns(), memory_order_relaxed);
}

/* Cell i (8 u64) of a cells tensor. */
static struct simpler_tensor cell_view(const struct simpler_tensor *cells, uint64_t i)
{
    struct simpler_tensor v;
    simpler_tensor_slice(&v, cells, 0, i * 8, i * 8 + 8, 1);
    return v;
}

/* Elements [first, first + count) of a 1-D tensor. */
static struct simpler_tensor span_view(const struct simpler_tensor *t, uint64_t first,
                                       uint64_t count)
{
    struct simpler_tensor v;
    simpler_tensor_slice(&v, t, 0, first, first + count, 1);
    return v;
}

/* Submits; on a refusal fails the run (the host then sees the error). */
static void submit(struct simpler_orch *rt, int32_t kernel, const struct simpler_task_args *ta,
                   struct simpler_task_result *out)
{
    if (simpler_submit_aiv(rt, kernel, ta, out) != 0)
        rt->ops->fatal(rt);
}

/* Tasks per inner scope: a scope holds its tasks' slots until it ends, so
 * long submission loops are cut into scopes (the rings then recycle). */
#define SCOPE_TASKS 512

static void scope_open(struct simpler_orch *rt)
{
    if (simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO) != 0)
        rt->ops->fatal(rt);
}

static void scope_close(struct simpler_orch *rt)
{
    if (simpler_scope_end(rt) != 0)
        rt->ops->fatal(rt);
}

/* Before item i of a loop cut every `every` items: ends the previous
 * scope (if any) and opens the next. Close the last with scope_close. */
static void scope_step(struct simpler_orch *rt, uint64_t i, uint64_t every)
{
    if (i % every)
        return;
    if (i)
        scope_close(rt);
    scope_open(rt);
}

/* tensor 0: n cells; scalar 0: n */
void cmp_so_indep(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    uint64_t n = args->scalars[0];
    struct simpler_task_args ta;
    orch_begin();
    for (uint64_t i = 0; i < n; i++) {
        scope_step(rt, i, SCOPE_TASKS);
        struct simpler_tensor cell = cell_view(&args->tensors[0], i);
        simpler_task_args_init(&ta);
        simpler_task_args_add_inout(&ta, &cell);
        submit(rt, K_INC, &ta, NULL);
    }
    scope_close(rt);
    orch_end();
}

/* tensor 0: one cell; scalar 0: n */
void cmp_so_chain(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    uint64_t n = args->scalars[0];
    struct simpler_task_args ta;
    orch_begin();
    for (uint64_t i = 0; i < n; i++) {
        scope_step(rt, i, SCOPE_TASKS);
        simpler_task_args_init(&ta);
        simpler_task_args_add_inout(&ta, &args->tensors[0]);
        submit(rt, K_INC, &ta, NULL);
    }
    scope_close(rt);
    orch_end();
}

/* tensor 0: x (one cell), tensor 1: y (k cells); scalars: rounds, k */
void cmp_so_fan(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *x = &args->tensors[0], *y = &args->tensors[1];
    uint64_t rounds = args->scalars[0];
    uint32_t k = (uint32_t)args->scalars[1];
    struct simpler_task_args ta;
    orch_begin();
    uint64_t per_scope = SCOPE_TASKS / (k + 2);
    for (uint64_t r = 0; r < rounds; r++) {
        scope_step(rt, r, per_scope ? per_scope : 1);
        simpler_task_args_init(&ta);
        simpler_task_args_add_inout(&ta, x);
        submit(rt, K_INC, &ta, NULL);
        for (uint32_t c = 0; c < k; c++) {
            struct simpler_tensor yc = cell_view(y, c);
            simpler_task_args_init(&ta);
            simpler_task_args_add_input(&ta, x);
            simpler_task_args_add_output_existing(&ta, &yc);
            simpler_task_args_add_scalar(&ta, c);
            submit(rt, K_FAN_CONSUME, &ta, NULL);
        }
        simpler_task_args_init(&ta);
        simpler_task_args_add_input(&ta, y);
        simpler_task_args_add_inout(&ta, x);
        submit(rt, K_FAN_REDUCE, &ta, NULL);
    }
    scope_close(rt);
    orch_end();
}

/* tensor 0: a (2 x width cells); scalars: width, steps, work */
void cmp_so_stencil(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *a = &args->tensors[0];
    uint32_t width = (uint32_t)args->scalars[0], steps = (uint32_t)args->scalars[1];
    uint64_t work = args->scalars[2];
    struct simpler_task_args ta;
    orch_begin();
    uint32_t per_scope = SCOPE_TASKS / width;
    for (uint32_t t = 0; t < steps; t++) {
        scope_step(rt, t, per_scope ? per_scope : 1);
        uint64_t cur = (uint64_t)(t % 2) * width, nxt = (uint64_t)((t + 1) % 2) * width;
        for (uint32_t i = 0; i < width; i++) {
            struct simpler_tensor m = cell_view(a, cur + i);
            struct simpler_tensor l = i ? cell_view(a, cur + i - 1) : m;
            struct simpler_tensor r = i + 1 < width ? cell_view(a, cur + i + 1) : m;
            struct simpler_tensor out = cell_view(a, nxt + i);
            simpler_task_args_init(&ta);
            simpler_task_args_add_input(&ta, &l);
            simpler_task_args_add_input(&ta, &m);
            simpler_task_args_add_input(&ta, &r);
            simpler_task_args_add_output_existing(&ta, &out);
            simpler_task_args_add_scalar(&ta, i > 0);
            simpler_task_args_add_scalar(&ta, i + 1 < width);
            simpler_task_args_add_scalar(&ta, t);
            simpler_task_args_add_scalar(&ta, work);
            submit(rt, K_STENCIL, &ta, NULL);
        }
    }
    scope_close(rt);
    orch_end();
}

/* Tile (i, j) of an nt x nt tile-major matrix tensor (1-D, f64). */
static struct simpler_tensor tile_view(const struct simpler_tensor *m, uint32_t nt,
                                       uint32_t tile, uint32_t i, uint32_t j)
{
    uint64_t elems = (uint64_t)tile * tile;
    return span_view(m, ((uint64_t)i * nt + j) * elems, elems);
}

/* tensor 0: the matrix (n*n f64, tile-major); scalars: n, tile */
void cmp_so_chol(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *a = &args->tensors[0];
    uint32_t tile = (uint32_t)args->scalars[1], nt = (uint32_t)(args->scalars[0] / tile);
    struct simpler_task_args ta;
    orch_begin();
    for (uint32_t k = 0; k < nt; k++) {
        scope_open(rt); /* at most 1 + 2 (nt - 1) + (nt - 1)(nt - 2) / 2 tasks */
        struct simpler_tensor akk = tile_view(a, nt, tile, k, k);
        simpler_task_args_init(&ta);
        simpler_task_args_add_inout(&ta, &akk);
        submit(rt, K_POTRF, &ta, NULL);
        for (uint32_t i = k + 1; i < nt; i++) {
            struct simpler_tensor aik = tile_view(a, nt, tile, i, k);
            simpler_task_args_init(&ta);
            simpler_task_args_add_input(&ta, &akk);
            simpler_task_args_add_inout(&ta, &aik);
            submit(rt, K_TRSM, &ta, NULL);
        }
        for (uint32_t i = k + 1; i < nt; i++) {
            struct simpler_tensor aik = tile_view(a, nt, tile, i, k);
            struct simpler_tensor aii = tile_view(a, nt, tile, i, i);
            simpler_task_args_init(&ta);
            simpler_task_args_add_input(&ta, &aik);
            simpler_task_args_add_inout(&ta, &aii);
            submit(rt, K_SYRK, &ta, NULL);
            for (uint32_t j = k + 1; j < i; j++) {
                struct simpler_tensor ajk = tile_view(a, nt, tile, j, k);
                struct simpler_tensor aij = tile_view(a, nt, tile, i, j);
                simpler_task_args_init(&ta);
                simpler_task_args_add_input(&ta, &aik);
                simpler_task_args_add_input(&ta, &ajk);
                simpler_task_args_add_inout(&ta, &aij);
                submit(rt, K_GEMM_NT, &ta, NULL);
            }
        }
        scope_close(rt);
    }
    orch_end();
}

/* tensors: A, B (IN), C (INOUT), each n*n f64 tile-major; scalars: n, tile */
void cmp_so_gemm(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    uint32_t tile = (uint32_t)args->scalars[1], nt = (uint32_t)(args->scalars[0] / tile);
    struct simpler_task_args ta;
    orch_begin();
    for (uint32_t i = 0; i < nt; i++) {
        scope_open(rt); /* nt^2 tasks */
        for (uint32_t j = 0; j < nt; j++) {
            struct simpler_tensor cij = tile_view(&args->tensors[2], nt, tile, i, j);
            for (uint32_t k = 0; k < nt; k++) {
                struct simpler_tensor aik = tile_view(&args->tensors[0], nt, tile, i, k);
                struct simpler_tensor bkj = tile_view(&args->tensors[1], nt, tile, k, j);
                simpler_task_args_init(&ta);
                simpler_task_args_add_input(&ta, &aik);
                simpler_task_args_add_input(&ta, &bkj);
                simpler_task_args_add_inout(&ta, &cij);
                submit(rt, K_GEMM_NN, &ta, NULL);
            }
        }
        scope_close(rt);
    }
    orch_end();
}

#define PRESSURE_ACCS 64

/* tensor 0: PRESSURE_ACCS accumulator cells; scalar 0: groups */
void cmp_so_pressure(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    uint64_t groups = args->scalars[0];
    static const uint64_t cell_shape[1] = {8};
    struct simpler_task_args ta;
    struct simpler_task_result made;
    orch_begin();
    for (uint64_t g = 0; g < groups; g++) {
        scope_open(rt);
        simpler_task_args_init(&ta);
        simpler_task_args_add_output(&ta, cell_shape, 1, SIMPLER_DTYPE_U64, 0);
        simpler_task_args_add_scalar(&ta, g);
        submit(rt, K_MAKE, &ta, &made);
        struct simpler_tensor acc = cell_view(&args->tensors[0], g % PRESSURE_ACCS);
        simpler_task_args_init(&ta);
        simpler_task_args_add_input(&ta, &made.outputs[0]);
        simpler_task_args_add_inout(&ta, &acc);
        submit(rt, K_ACCUMULATE, &ta, NULL);
        scope_close(rt);
    }
    orch_end();
}

/* tensor 0: one cell (of a 1 KiB buffer), += 1 */
void cmp_so_one(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    struct simpler_tensor cell = cell_view(&args->tensors[0], 0);
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, &cell);
    submit(rt, K_INC, &ta, NULL);
}

/* Under host_build_graph (SIMPLER_RUNTIME=hbg) nothing is reclaimed during
 * a run: the rings, heaps and TensorMap must hold the whole graph at once
 * (docs/runtime.md), so the worker sizes them for its largest run. The
 * task slots of the graph's ring (a power of two >= the run's tasks; 0:
 * TMR, the roomy rings below suffice). */
static uint32_t g_hbg_window;

/* Sizes `c` for a whole graph of up to `window` tasks in ring 1, where
 * every workload's tasks are (scope depth 1: the orchestrations cut their
 * loops into scopes, pressure has a scope per group; the other rings stay
 * roomy): `window` slots, 8 producer entries a task (the stencil's, the
 * most here: 3 reads after writes and 3 writes after reads), a heap cell
 * of 64 bytes a slot (pressure's outputs), 4 TensorMap entries a task (a
 * task here accesses at most 4 tensors) with a bucket per 8 entries. */
static void hbg_size(struct simpler_run_config *c, uint32_t window)
{
    const uint32_t i = 1;
    c->task_window[i] = window;
    c->dep_pool[i] = 8 * window;
    if (c->heap_bytes[i] < (uint64_t)window * 64)
        c->heap_bytes[i] = (uint64_t)window * 64;
    c->tensormap_entries = 4 * window;
    c->tensormap_buckets = window / 2 > (1u << 14) ? window / 2 : 1u << 14;
}

/* The run config of every workload but pressure: room for the orchestrator
 * to run ahead (4096 task slots per ring, as many TensorMap entries as
 * any workload here keeps alive). */
static void roomy_config(struct simpler_run_config *c)
{
    simpler_run_config_default(c);
    for (uint32_t i = 0; i < SIMPLER_RUN_RINGS; i++) {
        c->task_window[i] = 4096;
        c->heap_bytes[i] = 1ull << 20;
        c->dep_pool[i] = 1u << 16;
    }
    c->tensormap_buckets = 1u << 14;
    c->tensormap_entries = 1u << 16;
    c->ring_timeout_ms = 60000;
    c->sched_timeout_ms = 60000;
    c->tensor_wait_timeout_ms = 60000;
    if (g_hbg_window)
        hbg_size(c, g_hbg_window);
}

void cmp_so_config(struct simpler_run_config *config) { roomy_config(config); }

/* ================================================================== host */

struct workload_def {
    const char *name;
    int32_t callable_id;
    const char *entry;
    uint32_t sig_count; /* tensors, then scalars */
    enum simpler_direction sig[6];
};

#define S_ SIMPLER_DIR_SCALAR
static const struct workload_def k_defs[] = {
    {"indep", 1, "cmp_so_indep", 2, {SIMPLER_DIR_INOUT, S_}},
    {"chain", 2, "cmp_so_chain", 2, {SIMPLER_DIR_INOUT, S_}},
    {"fan", 3, "cmp_so_fan", 4, {SIMPLER_DIR_INOUT, SIMPLER_DIR_INOUT, S_, S_}},
    {"stencil", 4, "cmp_so_stencil", 4, {SIMPLER_DIR_INOUT, S_, S_, S_}},
    {"chol", 5, "cmp_so_chol", 3, {SIMPLER_DIR_INOUT, S_, S_}},
    {"gemm", 6, "cmp_so_gemm", 5, {SIMPLER_DIR_IN, SIMPLER_DIR_IN, SIMPLER_DIR_INOUT, S_, S_}},
    {"pressure", 7, "cmp_so_pressure", 2, {SIMPLER_DIR_INOUT, S_}},
    {"pipeline", 8, "cmp_so_one", 1, {SIMPLER_DIR_INOUT}},
};
#undef S_
#define DEF_COUNT (sizeof k_defs / sizeof k_defs[0])

static uint32_t thread_count(void)
{
    const char *env = getenv("CMP_THREADS");
    if (env && atoi(env) > 0)
        return (uint32_t)atoi(env);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1;
}

/* A fresh device 0: 1 orchestrator + 1 scheduler thread, `cores` AIV cores
 * (under HBG both threads schedule). HBG's arena holds the whole graph,
 * about 9 KiB of device memory a task slot: 4 GiB (committed only as
 * the arena is allocated) holds the 2^18 slots of the largest runs here. */
static void device_setup(uint32_t cores)
{
    struct simdev_config dc;
    CHECK(simdev_device_reset(DEVICE));
    CHECK(simdev_config_default(&dc));
    dc.aicpu_threads = 2;
    dc.aic_cores = 0;
    dc.aiv_cores = cores;
    dc.memory_bytes = g_hbg_window ? 4ull << 30 : 2ull << 30;
    dc.watchdog_ms = 0;
    const char *spin = getenv("CMP_SPIN_NS"); /* experiments: simdev's spin budget */
    if (spin && *spin)
        dc.spin_ns = (uint32_t)strtoul(spin, NULL, 10);
    const char *pin = getenv("CMP_PIN_CORES"); /* experiments: 0 = no core pinning */
    if (pin && *pin)
        dc.pin_cores = (uint32_t)strtoul(pin, NULL, 10) != 0;
    const char *budget = getenv("CMP_RUNNABLE_CPUS"); /* experiments: the runnable budget */
    if (budget && *budget)
        dc.runnable_cpus = (uint32_t)strtoul(budget, NULL, 10);
    CHECK(simdev_device_configure(DEVICE, &dc));
}

static void register_callable(struct simpler_context *ctx, const struct workload_def *d)
{
    static const enum simpler_direction none[1] = {SIMPLER_DIR_IN};
    struct simpler_callable_builder *b;
    void *image;
    size_t bytes;
    CHECK(simpler_callable_builder_create(&b));
    CHECK(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0, d->entry,
                                                     "cmp_so_config", d->sig, d->sig_count));
    for (int32_t k = 0; k < K_COUNT; k++)
        CHECK(simpler_callable_builder_add_kernel(b, k, SIMPLER_CORE_AIV, SIMPLER_BINARY_SYMBOL,
                                                  NULL, 0, k_kernel_names[k], none, 0));
    CHECK(simpler_callable_builder_finish(b, &image, &bytes));
    simpler_callable_builder_destroy(b);
    CHECK(simpler_register_callable(ctx, d->callable_id, image, bytes));
    simpler_callable_free(image);
}

static struct simpler_context *context_open(uint32_t depth)
{
    struct simpler_context *ctx;
    struct simpler_config cfg;
    CHECK(simpler_config_default(&cfg));
    cfg.pipeline_depth = depth;
    roomy_config(&cfg.run_capacity);
    CHECK(simpler_create_device_context(&ctx));
    CHECK(simpler_init(ctx, DEVICE, &cfg));
    /* The runtime the library chose (SIMPLER_RUNTIME overrides the config)
     * must be the one the capacity was sized for. */
    struct simpler_context_info info;
    CHECK(simpler_get_context_info(ctx, &info));
    if ((info.runtime == SIMPLER_RUNTIME_HBG) != (g_hbg_window != 0))
        cmp_fail(WORKER, "the context's runtime is not the one SIMPLER_RUNTIME named");
    for (size_t i = 0; i < DEF_COUNT; i++)
        register_callable(ctx, &k_defs[i]);
    return ctx;
}

static void context_close(struct simpler_context *ctx)
{
    CHECK(simpler_finalize_device(ctx));
    CHECK(simpler_destroy_device_context(ctx));
}

static const struct workload_def *def_of(const char *name)
{
    for (size_t i = 0; i < DEF_COUNT; i++)
        if (!strcmp(k_defs[i].name, name))
            return &k_defs[i];
    return NULL;
}

/* CPU time of the calling thread, ns. */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One measured run. */
struct measured {
    uint64_t run_ns;        /* launch called -> wait returned */
    uint64_t device_ns;     /* launch returned -> wait returned */
    uint64_t launch_cpu_ns; /* the launching thread's CPU time inside simpler_launch_run:
                               under HBG the host build (the orchestration run on the host
                               into the image) and the chain's enqueue; under TMR the
                               enqueue alone */
    uint64_t staging_ns;    /* prepare (copy in) + finalize (copy back) */
    uint64_t orch_ns;       /* the orchestration's submit loop (TMR: on the device's
                               orchestrator thread; HBG: on the host, inside the launch) */
    struct simpler_run_info info;
    struct simdev_wait_stats waits; /* the device's, from the launch to the wait's return */
};

static struct measured run_measured(struct simpler_context *ctx, const char *workload,
                                    const struct simpler_tensor *tensors, uint32_t tensor_count,
                                    const uint64_t *scalars, uint32_t scalar_count,
                                    const struct simpler_run_config *config)
{
    const struct workload_def *d = def_of(workload);
    struct simpler_args a = {tensor_count, scalar_count, tensors, scalars};
    struct measured m = {0};
    simpler_run_t run;
    atomic_store(&g_orch_begin, 0);
    atomic_store(&g_orch_end, 0);
    uint64_t t0 = cmp_now_ns();
    CHECK(simpler_prepare_run(ctx, &run, d->callable_id, &a, config));
    uint64_t t1 = cmp_now_ns();
    CHECK(simdev_wait_stats_reset(0));
    uint64_t c1 = thread_cpu_ns();
    CHECK(simpler_launch_run(ctx, run));
    uint64_t c2 = thread_cpu_ns();
    uint64_t t_launched = cmp_now_ns();
    int status = simpler_wait_run(ctx, run);
    uint64_t t2 = cmp_now_ns();
    CHECK(simdev_wait_stats(0, &m.waits));
    if (status != 0) {
        fprintf(stderr, WORKER ": %s run failed: %d (%s)\n", workload, status,
                simpler_strerror(status));
        exit(1);
    }
    CHECK(simpler_get_run_info(ctx, run, &m.info));
    CHECK(simpler_finalize_run(ctx, run));
    uint64_t t3 = cmp_now_ns();
    m.run_ns = t2 - t1;
    m.device_ns = t2 - t_launched;
    m.launch_cpu_ns = c2 - c1;
    m.staging_ns = (t1 - t0) + (t3 - t2);
    uint64_t ob = atomic_load(&g_orch_begin), oe = atomic_load(&g_orch_end);
    m.orch_ns = ob && oe >= ob ? oe - ob : 0;
    return m;
}

static struct simpler_tensor host_u64(void *data, uint64_t elems)
{
    struct simpler_tensor t;
    CHECK(simpler_tensor_make_1d(&t, (uint64_t)(uintptr_t)data, elems, SIMPLER_DTYPE_U64,
                                 SIMPLER_MEM_HOST));
    return t;
}

static struct simpler_tensor host_f64(void *data, uint64_t elems)
{
    struct simpler_tensor t;
    CHECK(simpler_tensor_make_1d(&t, (uint64_t)(uintptr_t)data, elems, SIMPLER_DTYPE_F64,
                                 SIMPLER_MEM_HOST));
    return t;
}

static struct cmp_cell *cells_alloc(uint64_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, (size_t)n * sizeof(struct cmp_cell)) != 0)
        cmp_fail(WORKER, "out of host memory");
    memset(p, 0, (size_t)n * sizeof(struct cmp_cell));
    return p;
}

/* Runs one instance of the cell workloads (indep, chain, fan, stencil,
 * pressure); checks it when p->check. */
static struct measured run_cells(struct simpler_context *ctx, const struct cmp_params *p)
{
    const char *w = p->workload;
    struct measured m;
    struct simpler_tensor t[2];
    if (!strcmp(w, "indep") || !strcmp(w, "chain")) {
        uint64_t cells = !strcmp(w, "indep") ? p->n : 1;
        struct cmp_cell *c = cells_alloc(cells);
        t[0] = host_u64(c, cells * 8);
        m = run_measured(ctx, w, t, 1, &p->n, 1, NULL);
        if (p->check && (cells > 1 ? cmp_check_indep(c, p->n) : cmp_check_chain(c, p->n)))
            exit(1);
        free(c);
    } else if (!strcmp(w, "fan")) {
        struct cmp_cell *x = cells_alloc(1), *y = cells_alloc(p->k);
        t[0] = host_u64(x, 8);
        t[1] = host_u64(y, (uint64_t)p->k * 8);
        uint64_t s[2] = {p->rounds, p->k};
        m = run_measured(ctx, w, t, 2, s, 2, NULL);
        if (p->check && cmp_check_fan(x, p->rounds, p->k))
            exit(1);
        free(x);
        free(y);
    } else if (!strcmp(w, "stencil")) {
        struct cmp_cell *a = cells_alloc(2ull * p->width);
        for (uint32_t i = 0; i < p->width; i++)
            a[i].v = cmp_stencil_init(i);
        t[0] = host_u64(a, 2ull * p->width * 8);
        uint64_t s[3] = {p->width, p->steps, p->work};
        m = run_measured(ctx, w, t, 1, s, 3, NULL);
        if (p->check && cmp_check_stencil(a + (size_t)(p->steps % 2) * p->width, p->width,
                                          p->steps))
            exit(1);
        free(a);
    } else { /* pressure */
        struct cmp_cell *acc = cells_alloc(PRESSURE_ACCS);
        t[0] = host_u64(acc, PRESSURE_ACCS * 8);
        struct simpler_run_config c;
        roomy_config(&c);
        for (uint32_t i = 0; i < SIMPLER_RUN_RINGS; i++) {
            c.task_window[i] = p->window;
            c.heap_bytes[i] = (uint64_t)p->window * 64; /* one cell per slot */
        }
        if (g_hbg_window) /* no back-pressure under HBG: the whole graph fits */
            hbg_size(&c, g_hbg_window);
        m = run_measured(ctx, w, t, 1, &p->n, 1, &c);
        if (p->check) {
            for (uint32_t a = 0; a < PRESSURE_ACCS; a++) {
                uint64_t want = 0;
                for (uint64_t g = a; g < p->n; g += PRESSURE_ACCS)
                    want += g;
                if (acc[a].v != want) {
                    fprintf(stderr, "pressure: acc %u is %llu, want %llu\n", a,
                            (unsigned long long)acc[a].v, (unsigned long long)want);
                    exit(1);
                }
            }
        }
        free(acc);
    }
    return m;
}

static struct measured run_matrix(struct simpler_context *ctx, const struct cmp_params *p)
{
    uint32_t n = (uint32_t)p->n, tile = p->tile;
    uint64_t elems = (uint64_t)n * n, s[2] = {n, tile};
    struct measured m;
    if (!strcmp(p->workload, "chol")) {
        double *a = cmp_matrix_alloc(n, tile);
        if (!a)
            cmp_fail(WORKER, "out of host memory");
        cmp_chol_init(a, n, tile);
        struct simpler_tensor t = host_f64(a, elems);
        m = run_measured(ctx, "chol", &t, 1, s, 2, NULL);
        if (p->check && cmp_chol_check(a, n, tile))
            exit(1);
        free(a);
        return m;
    }
    double *a = cmp_matrix_alloc(n, tile), *b = cmp_matrix_alloc(n, tile),
           *c = cmp_matrix_alloc(n, tile);
    if (!a || !b || !c)
        cmp_fail(WORKER, "out of host memory");
    cmp_gemm_init(a, b, c, n, tile);
    struct simpler_tensor t[3] = {host_f64(a, elems), host_f64(b, elems), host_f64(c, elems)};
    m = run_measured(ctx, "gemm", t, 3, s, 2, NULL);
    if (p->check && cmp_gemm_check(a, b, c, n, tile))
        exit(1);
    free(a);
    free(b);
    free(c);
    return m;
}

/* n back-to-back runs of cmp_so_one with up to `depth` in flight; returns
 * the wall ns of all of them, and in *launch_cpu_ns the launching thread's
 * CPU time inside simpler_launch_run summed over the runs (NULL: not
 * wanted: no clock is read). Each in-flight run has its own buffer. */
static uint64_t run_pipeline(struct simpler_context *ctx, uint64_t n, uint32_t depth,
                             int check, uint64_t *launch_cpu_ns)
{
    uint64_t launch_cpu = 0;
    struct cmp_cell *bufs = cells_alloc((uint64_t)depth * 16); /* 1 KiB each */
    simpler_run_t runs[SIMPLER_MAX_PIPELINE_DEPTH];
    struct simpler_tensor t[SIMPLER_MAX_PIPELINE_DEPTH];
    for (uint32_t i = 0; i < depth; i++)
        t[i] = host_u64(bufs + (size_t)i * 16, 128);
    uint64_t t0 = cmp_now_ns();
    for (uint64_t r = 0; r < n + depth; r++) {
        uint32_t slot = (uint32_t)(r % depth);
        if (r >= depth) { /* retire the run that used this buffer */
            int status = simpler_wait_run(ctx, runs[slot]);
            if (status != 0) {
                fprintf(stderr, WORKER ": pipeline run failed: %d\n", status);
                exit(1);
            }
            CHECK(simpler_finalize_run(ctx, runs[slot]));
        }
        if (r < n) {
            struct simpler_args a = {1, 0, &t[slot], NULL};
            CHECK(simpler_prepare_run(ctx, &runs[slot], def_of("pipeline")->callable_id, &a,
                                      NULL));
            /* The clock read only when asked: CLOCK_THREAD_CPUTIME_ID is a
             * system call, two a run, a sixth of a timed run's host thread
             * (docs/performance.md, "Where the rest goes"). */
            uint64_t c0 = launch_cpu_ns ? thread_cpu_ns() : 0;
            CHECK(simpler_launch_run(ctx, runs[slot]));
            if (launch_cpu_ns)
                launch_cpu += thread_cpu_ns() - c0;
        }
    }
    uint64_t ns = cmp_now_ns() - t0;
    if (launch_cpu_ns)
        *launch_cpu_ns = launch_cpu;
    if (check) {
        uint64_t total = 0;
        for (uint32_t i = 0; i < depth; i++)
            total += bufs[(size_t)i * 16].v;
        if (total != n) {
            fprintf(stderr, "pipeline: %llu increments, want %llu (a run lost)\n",
                    (unsigned long long)total, (unsigned long long)n);
            exit(1);
        }
    }
    free(bufs);
    return ns;
}

static struct measured run_instance(struct simpler_context *ctx, const struct cmp_params *p)
{
    if (!strcmp(p->workload, "chol") || !strcmp(p->workload, "gemm"))
        return run_matrix(ctx, p);
    return run_cells(ctx, p);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < DEF_COUNT; i++)
            printf("%s\n", k_defs[i].name);
        return 0;
    }
    struct cmp_params p;
    if (cmp_parse(argc, argv, &p) != 0)
        return 2;
    uint32_t cores = thread_count();
    int pipeline = !strcmp(p.workload, "pipeline");
    const char *runtime = getenv("SIMPLER_RUNTIME"); /* what simpler_init reads too */
    int hbg = runtime && !strcmp(runtime, "hbg");
    const char *system = hbg ? "simpler-hbg" : "simpler";
    if (hbg) { /* the whole graph of the measured run (the warm-up's is smaller) */
        uint64_t tasks = pipeline ? 1 : cmp_task_count(&p);
        g_hbg_window = 4096;
        while (g_hbg_window < tasks && g_hbg_window < (1u << 20))
            g_hbg_window *= 2;
        if (g_hbg_window < tasks)
            cmp_fail(WORKER, "host_build_graph: more tasks than a ring's 2^20 slots");
    }
    device_setup(cores);
    struct simpler_context *ctx = context_open(pipeline ? p.depth : 4);
    struct simdev_mem_info mem; /* what the context's arena and staging hold */
    CHECK(simdev_mem_get_info(DEVICE, &mem));
    char extra[640];
    if (pipeline) {
        uint64_t launch_cpu;
        if (p.warmup)
            run_pipeline(ctx, p.n / 10 + 1, p.depth, 0, NULL);
        uint64_t ns = run_pipeline(ctx, p.n, p.depth, p.check, NULL);
        uint64_t serial = run_pipeline(ctx, p.n, 1, p.check, NULL);
        /* The launch's host CPU in runs of their own, not the timed ones
         * (run_pipeline: each read is a system call). */
        const uint64_t cpu_runs = p.n / 10 + 1;
        run_pipeline(ctx, cpu_runs, p.depth, 0, &launch_cpu);
        snprintf(extra, sizeof extra,
                 " system=%s depth=%u serial_us=%.3f launch_cpu_ns_per_task=%.1f", system,
                 p.depth, (double)serial / 1000.0 / (double)p.n,
                 (double)launch_cpu / (double)cpu_runs);
        context_close(ctx);
        cmp_report(cmp_value_of(&p, ns), cmp_unit_of(&p), p.n, extra);
        return 0;
    }
    if (p.warmup) {
        struct cmp_params w = cmp_warmup_of(&p);
        run_instance(ctx, &w);
    }
    struct measured m = run_instance(ctx, &p);
    /* HBG: the host build's scratch (a host arena laid out as the device's)
     * is reused by every build but faulted in by the first build that
     * reaches a page; the measured run, after a warm-up a tenth its size,
     * pays that for most of its pages. A second run of the same instance
     * measures the build on a warm scratch, as repeated runs see it. */
    struct measured warm = {0};
    if (hbg) {
        struct cmp_params again = p;
        again.check = 0;
        warm = run_instance(ctx, &again);
    }
    context_close(ctx);
    uint64_t tasks = cmp_task_count(&p);
    if (m.info.tasks_completed != tasks) {
        fprintf(stderr, WORKER ": %llu tasks completed, want %llu\n",
                (unsigned long long)m.info.tasks_completed, (unsigned long long)tasks);
        return 1;
    }
    int len = snprintf(extra, sizeof extra,
                       " system=%s cores=%u orch_ns_per_task=%.1f staging_ns=%llu edges=%llu"
                       " device_ns_per_task=%.1f launch_cpu_ns_per_task=%.1f device_mib=%.0f"
                       " wakeups_per_task=%.3f parks_per_task=%.3f",
                       system, cores, (double)m.orch_ns / (double)tasks,
                       (unsigned long long)m.staging_ns, (unsigned long long)m.info.edges,
                       (double)m.device_ns / (double)tasks, (double)m.launch_cpu_ns / (double)tasks,
                       (double)mem.in_use / (1 << 20), (double)m.waits.wakeups / (double)tasks,
                       (double)m.waits.parks / (double)tasks);
    if (hbg)
        len += snprintf(extra + len, sizeof extra - (size_t)len,
                        " warm_device_ns_per_task=%.1f warm_launch_cpu_ns_per_task=%.1f",
                        (double)warm.device_ns / (double)tasks,
                        (double)warm.launch_cpu_ns / (double)tasks);
    if (!strcmp(p.workload, "chol") || !strcmp(p.workload, "gemm")) {
        char blas[256];
        cmp_blas_name(blas, sizeof blas);
        snprintf(extra + len, sizeof extra - (size_t)len, " blas=%s", blas);
    }
    cmp_report(cmp_value_of(&p, m.run_ns), cmp_unit_of(&p), tasks, extra);
    return 0;
}
