/*
 * bench_program.c — program mode through simpler.h on the simulated device:
 * what the run pipeline buys over strictly serial runs, and what the host
 * calls themselves cost. `make bench` runs it after bench_runtime.
 *
 * Sections:
 *   pipeline  back-to-back runs of one callable, two ways, interleaved
 *             repetition by repetition so that drift of the host hits both:
 *               serial     prepare, launch, wait, finalize; then the next;
 *               pipelined  prepare + launch until `depth` runs are in
 *                          flight, then wait for and finalize the oldest
 *                          and prepare + launch the next (the context's
 *                          pipeline_depth is `depth`), and finally wait for
 *                          and finalize the rest in order;
 *             for three run shapes and depths 1, 2 and 4. Figures: runs/s
 *             of each, and pipelined/serial per repetition (the ratio is the
 *             result; the absolute rates are this host's). Depth 1 is the
 *             control: it cannot overlap anything, so its ratio is ~1.
 *   host      the fixed host cost per run, for the smallest shape run
 *             serially: the time spent inside simpler_prepare_run,
 *             simpler_launch_run, simpler_wait_run and simpler_finalize_run
 *             (after the wait, so it is the copy-back and release alone),
 *             and simpler_run end to end (median ns per call).
 *
 * Shapes (every tensor a host tensor, staged by the runtime):
 *   1task-1k    1 AIV task, one 1 KiB u32 tensor INOUT (x += 1)
 *   16task-4k   16 independent AIV tasks, each INOUT on its 64-element slice
 *               of one 4 KiB u32 tensor
 *   1task-1m    1 AIV task, a 1 MiB u32 tensor IN and a 1 MiB tensor OUT
 *               (y = x + 1): staging in and copying back matter
 *
 * Every run is checked: each run writes a tag into its input before prepare
 * and finalize must bring back tag + 1 (a failed run delivers nothing, a
 * mixed-up staging buffer delivers another run's tag); the warm-up runs
 * check every element. In-flight runs use host buffers of their own.
 *
 * Device 0 gets the test fixture's topology, bench_runtime's "3core": 2
 * AICPU threads (1 orchestrator + 1 scheduler), 1 AIC + 2 AIV, 1 GiB,
 * watchdog off. Runs use a small config (windows 64, TensorMap 256 x 1024),
 * which is also the contexts' run capacity, so each context's arena is
 * small. Figures are the median, min and max over 7 repetitions (3 with
 * --quick, which also shortens each repetition), after a warm-up, with
 * how much CPU this process and other processes used meanwhile.
 *
 * Prints the tables, writes bench/results/program-latest.json under the repo
 * root (--root DIR or --out FILE override it; --section and --shape run a
 * variant and write JSON only with --out).
 *
 * Owns only measurement. It reaches the runtime through the public API
 * alone (simpler.h; device.h to configure the device and read its clock);
 * its orchestrations and kernels are exported functions of this
 * executable, named by symbol-form callable images.
 */
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "simpler/kernel.h"
#include "simpler/orchestration.h"
#include "simpler/device.h"
#include "simpler/simpler.h"

#define PROGRAM "bench_program"
#define CHECK(call) BENCH_CHECK(PROGRAM, call)

#define DEVICE 0
#define MAX_REPS 7
_Static_assert(MAX_REPS <= BENCH_MAX_SAMPLES, "bench_stats_of takes every repetition");
#define MAX_DEPTH 4
#define MAX_ROWS 32
#define HOST_CALLS 5       /* prepare, launch, wait, finalize, simpler_run */
#define HOST_RUNS 400      /* runs per host-cost repetition (before --quick) */
#define SLICE_ELEMS 64     /* 16task-4k: elements per task */
#define SIXTEEN 16

static int g_quick;
static const char *g_section;
static const char *g_shape; /* --shape: only this one */
static double g_load_at_start;
static char g_topology[96]; /* the device's topology, as configured */

static int section_wanted(const char *name)
{
    return !g_section || strcmp(g_section, name) == 0;
}

static uint32_t reps(void)
{
    return g_quick ? 3 : MAX_REPS;
}

static uint64_t now_ns(void)
{
    return simdev_clock_ns();
}

/* ================================================================ device code
 *
 * Exported (not static): the callable images name them and the device
 * loader resolves them among this process's symbols. The prototypes keep
 * -Wmissing-prototypes builds quiet and say they are an interface.
 */

void bench_pm_kernel_inc(int64_t *args);
void bench_pm_kernel_add1(int64_t *args);
void bench_pm_orch_one(struct simpler_orch *rt, const struct simpler_orch_args *args);
void bench_pm_orch_sixteen(struct simpler_orch *rt, const struct simpler_orch_args *args);
void bench_pm_orch_copy(struct simpler_orch *rt, const struct simpler_orch_args *args);

enum { K_INC = 0, K_ADD1 = 1 };

/* x += 1 over the view (tensor 0, INOUT, u32). */
void bench_pm_kernel_inc(int64_t *args)
{
    uint32_t *x = simpler_kernel_data(args, 0);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 0));
    for (uint64_t i = 0; i < n; i++)
        x[i] += 1;
}

/* y = x + 1 (tensor 0 IN, tensor 1 OUT, u32, same length). */
void bench_pm_kernel_add1(int64_t *args)
{
    const uint32_t *x = simpler_kernel_data(args, 0);
    uint32_t *y = simpler_kernel_data(args, 1);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 1));
    for (uint64_t i = 0; i < n; i++)
        y[i] = x[i] + 1;
}

/* One task: x += 1. */
void bench_pm_orch_one(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, &args->tensors[0]);
    simpler_submit_aiv(rt, K_INC, &ta, NULL);
}

/* Sixteen independent tasks, each x[slice] += 1. */
void bench_pm_orch_sixteen(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    struct simpler_tensor slice;
    for (uint64_t k = 0; k < SIXTEEN; k++) {
        simpler_tensor_slice(&slice, &args->tensors[0], 0, k * SLICE_ELEMS,
                             (k + 1) * SLICE_ELEMS, 1);
        simpler_task_args_init(&ta);
        simpler_task_args_add_inout(&ta, &slice);
        simpler_submit_aiv(rt, K_INC, &ta, NULL);
    }
}

/* One task: y = x + 1. */
void bench_pm_orch_copy(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &args->tensors[0]);
    simpler_task_args_add_output_existing(&ta, &args->tensors[1]);
    simpler_submit_aiv(rt, K_ADD1, &ta, NULL);
}

/* ====================================================================== shapes */

struct shape {
    const char *name;
    const char *description;
    int32_t callable_id;
    const char *entry;
    uint32_t tensor_count;           /* 1 (INOUT) or 2 (IN, OUT) */
    uint64_t elems;                  /* u32 elements per tensor */
    uint32_t tasks;
    uint32_t runs_per_rep;           /* per way (serial, pipelined), before --quick */
};

static const struct shape g_shapes[] = {
    {"1task-1k", "1 AIV task, 1 KiB host tensor INOUT", 1, "bench_pm_orch_one", 1, 256, 1, 600},
    {"16task-4k", "16 AIV tasks, 4 KiB host tensor INOUT (16 slices)", 2,
     "bench_pm_orch_sixteen", 1, SIXTEEN * SLICE_ELEMS, SIXTEEN, 400},
    {"1task-1m", "1 AIV task, 1 MiB host tensor IN + 1 MiB OUT", 3, "bench_pm_orch_copy", 2,
     1u << 18, 1, 150},
};
#define SHAPE_COUNT (sizeof g_shapes / sizeof g_shapes[0])

static const uint32_t g_depths[] = {1, 2, 4};
#define DEPTH_COUNT (sizeof g_depths / sizeof g_depths[0])

static uint32_t runs_per_rep(const struct shape *sh)
{
    return g_quick ? sh->runs_per_rep / 4 : sh->runs_per_rep;
}

/* A symbol-form image of `sh`'s callable (free with simpler_callable_free). */
static void *shape_image(const struct shape *sh, size_t *bytes)
{
    static const enum simpler_direction inout[] = {SIMPLER_DIR_INOUT};
    static const enum simpler_direction in_out[] = {SIMPLER_DIR_IN, SIMPLER_DIR_OUT};
    const enum simpler_direction *sig = sh->tensor_count == 1 ? inout : in_out;
    struct simpler_callable_builder *b;
    void *image;
    CHECK(simpler_callable_builder_create(&b));
    CHECK(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0, sh->entry,
                                                     NULL, sig, sh->tensor_count));
    CHECK(simpler_callable_builder_add_kernel(b, K_INC, SIMPLER_CORE_AIV, SIMPLER_BINARY_SYMBOL,
                                              NULL, 0, "bench_pm_kernel_inc", inout, 1));
    CHECK(simpler_callable_builder_add_kernel(b, K_ADD1, SIMPLER_CORE_AIV, SIMPLER_BINARY_SYMBOL,
                                              NULL, 0, "bench_pm_kernel_add1", in_out, 2));
    CHECK(simpler_callable_builder_finish(b, &image, bytes));
    simpler_callable_builder_destroy(b);
    return image;
}

/* One run's host side: its buffers, descriptors and args. Each in-flight
 * run has its own (pipeline position i uses set i). */
struct run_buffers {
    const struct shape *shape;
    uint32_t *x, *y; /* y: NULL for the INOUT shapes */
    struct simpler_tensor tensors[2];
    struct simpler_args args;
};

static void buffers_init(struct run_buffers *r, const struct shape *sh)
{
    memset(r, 0, sizeof *r);
    r->shape = sh;
    size_t bytes = sh->elems * sizeof(uint32_t);
    r->x = malloc(bytes);
    r->y = sh->tensor_count == 2 ? malloc(bytes) : NULL;
    if (!r->x || (sh->tensor_count == 2 && !r->y)) {
        fprintf(stderr, PROGRAM ": out of host memory\n");
        exit(1);
    }
    uint32_t *bufs[2] = {r->x, r->y};
    for (uint32_t i = 0; i < sh->tensor_count; i++)
        CHECK(simpler_tensor_make_1d(&r->tensors[i], (uint64_t)(uintptr_t)bufs[i], sh->elems,
                                     SIMPLER_DTYPE_U32, SIMPLER_MEM_HOST));
    r->args = (struct simpler_args){sh->tensor_count, 0, r->tensors, NULL};
}

static void buffers_free(struct run_buffers *r)
{
    free(r->x);
    free(r->y);
}

/* Fills the whole input with known values (x[i] = i) before a full check. */
static void buffers_fill(struct run_buffers *r)
{
    for (uint64_t i = 0; i < r->shape->elems; i++)
        r->x[i] = (uint32_t)i;
    if (r->y)
        memset(r->y, 0, r->shape->elems * sizeof(uint32_t));
}

/* Every element after one run over buffers_fill's values: x + 1 (in place,
 * or into y). */
static void buffers_check_full(const struct run_buffers *r)
{
    const uint32_t *out = r->y ? r->y : r->x;
    for (uint64_t i = 0; i < r->shape->elems; i++) {
        if (out[i] != (uint32_t)i + 1) {
            fprintf(stderr, PROGRAM ": %s: element %llu is %u after one run, expected %u\n",
                    r->shape->name, (unsigned long long)i, out[i], (unsigned)(i + 1));
            exit(1);
        }
    }
}

/* The elements a tag goes into: the first and last element of the input,
 * and for the sliced shape the first element of every slice. */
static void tag_positions(const struct shape *sh, uint64_t *pos, uint32_t *count)
{
    *count = 0;
    if (sh->tasks == SIXTEEN) {
        for (uint32_t k = 0; k < SIXTEEN; k++)
            pos[(*count)++] = (uint64_t)k * SLICE_ELEMS;
    } else {
        pos[(*count)++] = 0;
        pos[(*count)++] = sh->elems - 1;
    }
}

/* Writes `tag` into the input before prepare (prepare copies it in). */
static void tag_set(struct run_buffers *r, uint32_t tag)
{
    uint64_t pos[SIXTEEN];
    uint32_t n;
    tag_positions(r->shape, pos, &n);
    for (uint32_t i = 0; i < n; i++)
        r->x[pos[i]] = tag;
}

/* After finalize: the output holds tag + 1 where the tag went, or the run
 * did not deliver its own outputs. */
static void tag_check(const struct run_buffers *r, uint32_t tag)
{
    uint64_t pos[SIXTEEN];
    uint32_t n;
    tag_positions(r->shape, pos, &n);
    const uint32_t *out = r->y ? r->y : r->x;
    for (uint32_t i = 0; i < n; i++) {
        if (out[pos[i]] != tag + 1) {
            fprintf(stderr, PROGRAM ": %s: run %u delivered %u at element %llu, expected %u\n",
                    r->shape->name, tag, out[pos[i]], (unsigned long long)pos[i], tag + 1);
            exit(1);
        }
    }
}

/* ==================================================================== context */

/* The run config of every run here, and the contexts' run capacity: small
 * windows and TensorMap (nothing here needs more), no runtime-allocated
 * outputs, the default timeouts (a healthy run here takes milliseconds; a
 * stalled one fails after the scheduler's 10 s and stops the benchmark). */
static struct simpler_run_config small_run_config(void)
{
    struct simpler_run_config c;
    simpler_run_config_default(&c);
    for (int i = 0; i < SIMPLER_RUN_RINGS; i++) {
        c.task_window[i] = 64;
        c.heap_bytes[i] = 64u << 10;
        c.dep_pool[i] = 1024;
    }
    c.tensormap_buckets = 256;
    c.tensormap_entries = 1024;
    return c;
}

/* Device 0 with the test fixture's topology, fresh (its config survives
 * the resets simpler_finalize_device does). */
static void device_setup(void)
{
    bench_device_configure("bench_program", DEVICE);
}

/* A context of `depth` slots with every shape's callable registered. */
static struct simpler_context *context_open(uint32_t depth, size_t *idle_bytes)
{
    struct simpler_context *ctx;
    struct simpler_config cfg;
    CHECK(simpler_config_default(&cfg));
    cfg.pipeline_depth = depth;
    cfg.run_capacity = small_run_config();
    CHECK(simpler_create_device_context(&ctx));
    CHECK(simpler_init(ctx, DEVICE, &cfg));
    for (size_t i = 0; i < SHAPE_COUNT; i++) {
        size_t bytes;
        void *image = shape_image(&g_shapes[i], &bytes);
        CHECK(simpler_register_callable(ctx, g_shapes[i].callable_id, image, bytes));
        simpler_callable_free(image);
    }
    *idle_bytes = simpler_committed_device_memory(ctx);
    return ctx;
}

static void context_close(struct simpler_context *ctx)
{
    CHECK(simpler_finalize_device(ctx));
    if (simpler_committed_device_memory(ctx) != 0) {
        fprintf(stderr, PROGRAM ": %zu device bytes still committed after finalize\n",
                simpler_committed_device_memory(ctx));
        exit(1);
    }
    CHECK(simpler_destroy_device_context(ctx));
}

/* ====================================================================== runs */

/* The tag of the next run: distinct for every run of the benchmark. */
static uint32_t g_next_tag = 1;

/* `n` runs strictly one after another; returns the wall time. */
static uint64_t run_serial(struct simpler_context *ctx, struct run_buffers *r, uint32_t n)
{
    const int32_t id = r->shape->callable_id;
    uint64_t t0 = now_ns();
    for (uint32_t i = 0; i < n; i++) {
        uint32_t tag = g_next_tag++;
        simpler_run_t run;
        tag_set(r, tag);
        CHECK(simpler_prepare_run(ctx, &run, id, &r->args, NULL));
        CHECK(simpler_launch_run(ctx, run));
        CHECK(simpler_wait_run(ctx, run));
        CHECK(simpler_finalize_run(ctx, run));
        tag_check(r, tag);
    }
    return now_ns() - t0;
}

/* `n` runs with up to `depth` in flight: prepare + launch until the
 * pipeline is full, then wait for and finalize the oldest before the next
 * prepare; at the end wait for and finalize the rest in order. Run k uses buffer set k % depth,
 * which the run depth places earlier has released. Returns the wall time. */
static uint64_t run_pipelined(struct simpler_context *ctx, struct run_buffers *sets,
                              uint32_t depth, uint32_t n)
{
    const int32_t id = sets[0].shape->callable_id;
    simpler_run_t runs[MAX_DEPTH];
    uint32_t tags[MAX_DEPTH];
    uint32_t oldest = 0, in_flight = 0;
    uint64_t t0 = now_ns();
    for (uint32_t k = 0; k < n + depth; k++) {
        if (in_flight == depth || (k >= n && in_flight > 0)) {
            /* The run's own status, then its outputs into the host
             * buffers (finalize alone would wait too, but not report a
             * failed run: it would just deliver nothing) */
            CHECK(simpler_wait_run(ctx, runs[oldest]));
            CHECK(simpler_finalize_run(ctx, runs[oldest]));
            tag_check(&sets[oldest], tags[oldest]);
            oldest = (oldest + 1) % depth;
            in_flight--;
        }
        if (k >= n)
            continue;
        uint32_t slot = (oldest + in_flight) % depth;
        tags[slot] = g_next_tag++;
        tag_set(&sets[slot], tags[slot]);
        CHECK(simpler_prepare_run(ctx, &runs[slot], id, &sets[slot].args, NULL));
        CHECK(simpler_launch_run(ctx, runs[slot]));
        in_flight++;
    }
    return now_ns() - t0;
}

/* One serial and one pipelined batch over freshly filled buffers, every
 * element checked: warms the caches and the device threads up, and proves
 * the runs compute what they should before anything is timed. */
static void warm_up(struct simpler_context *ctx, struct run_buffers *sets, uint32_t depth)
{
    const int32_t id = sets[0].shape->callable_id;
    buffers_fill(&sets[0]);
    CHECK(simpler_run(ctx, id, &sets[0].args, NULL, NULL));
    buffers_check_full(&sets[0]);

    simpler_run_t runs[MAX_DEPTH];
    for (uint32_t i = 0; i < depth; i++) {
        buffers_fill(&sets[i]);
        CHECK(simpler_prepare_run(ctx, &runs[i], id, &sets[i].args, NULL));
        CHECK(simpler_launch_run(ctx, runs[i]));
    }
    for (uint32_t i = 0; i < depth; i++) {
        CHECK(simpler_wait_run(ctx, runs[i]));
        CHECK(simpler_finalize_run(ctx, runs[i]));
        buffers_check_full(&sets[i]);
    }
    run_serial(ctx, &sets[0], 3);
    run_pipelined(ctx, sets, depth, 2 * depth + 1);
}

/* ==================================================================== results */

struct pipeline_row {
    const struct shape *shape;
    uint32_t depth;
    uint32_t runs;              /* per repetition and way */
    uint32_t reps;
    size_t committed_idle;      /* the context's device bytes with no run */
    struct bench_stats serial;  /* runs/s */
    struct bench_stats pipelined;
    struct bench_stats ratio;   /* pipelined / serial of the same repetition */
    double serial_cpu_us;       /* this process's CPU time per run (every thread), median */
    double pipelined_cpu_us;
    double others_pct;          /* host CPU other processes used meanwhile, % of all
                                   CPUs; < 0 = too short to tell */
};

struct host_row {
    const char *call;
    const char *what;
    struct bench_stats ns;      /* over repetitions of the per-call median */
};

static struct pipeline_row g_pipeline[MAX_ROWS];
static size_t g_pipeline_count;
static struct host_row g_host[HOST_CALLS];
static size_t g_host_count;
static uint32_t g_host_runs;

/* ================================================================ measurement */

static void measure_pipeline(struct simpler_context *ctx, const struct shape *sh, uint32_t depth,
                             size_t committed_idle)
{
    struct run_buffers sets[MAX_DEPTH];
    for (uint32_t i = 0; i < depth; i++)
        buffers_init(&sets[i], sh);
    warm_up(ctx, sets, depth);

    const uint32_t n = runs_per_rep(sh);
    double serial[MAX_REPS], pipelined[MAX_REPS], ratio[MAX_REPS];
    double serial_cpu[MAX_REPS], pipelined_cpu[MAX_REPS];
    uint64_t start = now_ns();
    double busy0 = bench_host_busy_ns(), cpu0 = bench_process_cpu_ns();
    for (uint32_t rep = 0; rep < reps(); rep++) {
        /* Alternate which way goes first, so neither always follows the
         * other's tail. */
        for (int way = 0; way < 2; way++) {
            int run_serially = (rep + way) % 2 == 0;
            double c0 = bench_process_cpu_ns();
            uint64_t t = run_serially ? run_serial(ctx, &sets[0], n)
                                      : run_pipelined(ctx, sets, depth, n);
            double cpu_us = (bench_process_cpu_ns() - c0) / 1e3 / n;
            double rate = (double)n * 1e9 / (double)t;
            if (run_serially) {
                serial[rep] = rate;
                serial_cpu[rep] = cpu_us;
            } else {
                pipelined[rep] = rate;
                pipelined_cpu[rep] = cpu_us;
            }
        }
        ratio[rep] = pipelined[rep] / serial[rep];
    }
    /* Host-wide busy time less this process's own; /proc/stat counts in
     * jiffies, so below 0.2 s the figure means nothing. */
    double others_pct = bench_others_cpu_pct((double)(now_ns() - start), busy0,
                                             bench_process_cpu_ns() - cpu0);
    for (uint32_t i = 0; i < depth; i++)
        buffers_free(&sets[i]);

    if (g_pipeline_count == MAX_ROWS) {
        fprintf(stderr, PROGRAM ": more than %d rows\n", MAX_ROWS);
        exit(1);
    }
    struct pipeline_row *row = &g_pipeline[g_pipeline_count++];
    *row = (struct pipeline_row){
        .shape = sh,
        .depth = depth,
        .runs = n,
        .reps = reps(),
        .committed_idle = committed_idle,
        .serial = bench_stats_of(serial, reps()),
        .pipelined = bench_stats_of(pipelined, reps()),
        .ratio = bench_stats_of(ratio, reps()),
        .serial_cpu_us = bench_stats_of(serial_cpu, reps()).median,
        .pipelined_cpu_us = bench_stats_of(pipelined_cpu, reps()).median,
        .others_pct = others_pct,
    };
    printf("  %-10s depth %u: serial %8.0f runs/s, pipelined %8.0f runs/s, ratio %.2f\n",
           sh->name, depth, row->serial.median, row->pipelined.median, row->ratio.median);
    fflush(stdout);
}

/* The host calls of the smallest shape, each timed on its own, run after
 * run; then simpler_run end to end. Per repetition the median of each call,
 * then median/min/max of those over the repetitions. */
static void measure_host(struct simpler_context *ctx)
{
    const struct shape *sh = &g_shapes[0];
    struct run_buffers r;
    buffers_init(&r, sh);
    warm_up(ctx, &r, 1);

    const uint32_t n = g_quick ? HOST_RUNS / 4 : HOST_RUNS;
    g_host_runs = n;
    double *samples = malloc((size_t)HOST_CALLS * n * sizeof *samples);
    if (!samples) {
        fprintf(stderr, PROGRAM ": out of host memory\n");
        exit(1);
    }
    double per_rep[HOST_CALLS][MAX_REPS];
    for (uint32_t rep = 0; rep < reps(); rep++) {
        for (uint32_t i = 0; i < n; i++) {
            uint32_t tag = g_next_tag++;
            simpler_run_t run;
            tag_set(&r, tag);
            uint64_t t0 = now_ns();
            CHECK(simpler_prepare_run(ctx, &run, sh->callable_id, &r.args, NULL));
            uint64_t t1 = now_ns();
            CHECK(simpler_launch_run(ctx, run));
            uint64_t t2 = now_ns();
            CHECK(simpler_wait_run(ctx, run));
            uint64_t t3 = now_ns();
            CHECK(simpler_finalize_run(ctx, run));
            uint64_t t4 = now_ns();
            tag_check(&r, tag);
            samples[0 * n + i] = (double)(t1 - t0);
            samples[1 * n + i] = (double)(t2 - t1);
            samples[2 * n + i] = (double)(t3 - t2);
            samples[3 * n + i] = (double)(t4 - t3);
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t tag = g_next_tag++;
            tag_set(&r, tag);
            uint64_t t0 = now_ns();
            CHECK(simpler_run(ctx, sh->callable_id, &r.args, NULL, NULL));
            samples[4 * n + i] = (double)(now_ns() - t0);
            tag_check(&r, tag);
        }
        for (uint32_t c = 0; c < HOST_CALLS; c++)
            per_rep[c][rep] = bench_median_in_place(&samples[c * n], n);
    }
    free(samples);
    buffers_free(&r);

    static const struct {
        const char *call, *what;
    } calls[HOST_CALLS] = {
        {"simpler_prepare_run", "check, snapshot, slot, stage 1 KiB in"},
        {"simpler_launch_run", "enqueue the run's chain on the device"},
        {"simpler_wait_run", "until the run completes (device time)"},
        {"simpler_finalize_run", "after wait: copy 1 KiB back, free, release"},
        {"simpler_run", "all four, end to end"},
    };
    for (uint32_t c = 0; c < HOST_CALLS; c++)
        g_host[g_host_count++] =
            (struct host_row){calls[c].call, calls[c].what, bench_stats_of(per_rep[c], reps())};
}

/* ===================================================================== output */

static void print_tables(void)
{
    if (g_pipeline_count) {
        printf("\npipeline: back-to-back runs, runs/s (median, min-max of %u reps); ratio = "
               "pipelined / serial of the same repetition\n",
               reps());
        printf("cpu us/run = this process's CPU time per run, every thread (serial / "
               "pipelined); others = host CPU used by other processes meanwhile (%% of all "
               "CPUs; high = noisy row)\n");
        printf("%-10s %-5s %5s %22s %22s %18s %15s %6s\n", "shape", "depth", "runs",
               "serial runs/s", "pipelined runs/s", "ratio", "cpu us/run", "others");
        const char *last = "";
        for (size_t i = 0; i < g_pipeline_count; i++) {
            const struct pipeline_row *r = &g_pipeline[i];
            if (i > 0 && strcmp(last, r->shape->name) != 0)
                printf("\n");
            last = r->shape->name;
            char others[16] = "-";
            if (r->others_pct >= 0)
                snprintf(others, sizeof others, "%.0f%%", r->others_pct);
            printf("%-10s %-5u %5u %6.0f (%6.0f-%6.0f) %6.0f (%6.0f-%6.0f) %5.2fx (%4.2f-%4.2f) "
                   "%7.0f/%-7.0f %6s\n",
                   r->shape->name, r->depth, r->runs, r->serial.median, r->serial.min,
                   r->serial.max, r->pipelined.median, r->pipelined.min, r->pipelined.max,
                   r->ratio.median, r->ratio.min, r->ratio.max, r->serial_cpu_us,
                   r->pipelined_cpu_us, others);
        }
    }
    if (g_host_count) {
        printf("\nhost cost per call, %s run serially (median ns per call; median, min and max "
               "over %u reps of %u runs)\n",
               g_shapes[0].name, reps(), g_host_runs);
        printf("%-22s %10s %10s %10s  %s\n", "call", "median", "min", "max", "what it covers");
        for (size_t i = 0; i < g_host_count; i++) {
            const struct host_row *r = &g_host[i];
            printf("%-22s %10.0f %10.0f %10.0f  %s\n", r->call, r->ns.median, r->ns.min,
                   r->ns.max, r->what);
        }
    }
}

static int write_json(const char *path, double seconds)
{
    FILE *f;
    if (bench_json_open(PROGRAM, path, "program", g_load_at_start, g_quick, seconds, &f) != 0)
        return -1;
    fprintf(f, "  \"topology\": \"%s\",\n", g_topology);
    fprintf(f, "  \"run_config\": \"windows 64, heap 64 KiB, dep pool 1024 per ring; TensorMap "
               "256 x 1024\",\n");
    fprintf(f, "  \"shapes\": {");
    for (size_t i = 0; i < SHAPE_COUNT; i++) {
        fprintf(f, "%s", i ? ", " : "");
        bench_json_string(f, g_shapes[i].name);
        fprintf(f, ": ");
        bench_json_string(f, g_shapes[i].description);
    }
    fprintf(f, "},\n  \"pipeline\": [\n");
    for (size_t i = 0; i < g_pipeline_count; i++) {
        const struct pipeline_row *r = &g_pipeline[i];
        fprintf(f, "    {\"shape\": ");
        bench_json_string(f, r->shape->name);
        fprintf(f, ", \"depth\": %u, \"tasks_per_run\": %u, \"runs_per_rep\": %u, \"reps\": %u, "
                   "\"committed_idle_bytes\": %zu, ",
                r->depth, r->shape->tasks, r->runs, r->reps, r->committed_idle);
        bench_json_stats(f, "serial_runs_per_s", r->serial, 1);
        fprintf(f, ", ");
        bench_json_stats(f, "pipelined_runs_per_s", r->pipelined, 1);
        fprintf(f, ", ");
        bench_json_stats(f, "ratio_pipelined_to_serial", r->ratio, 3);
        fprintf(f, ", \"serial_cpu_us_per_run\": %.1f, \"pipelined_cpu_us_per_run\": %.1f",
                r->serial_cpu_us, r->pipelined_cpu_us);
        if (r->others_pct >= 0)
            fprintf(f, ", \"others_cpu_pct\": %.1f", r->others_pct);
        fprintf(f, "}%s\n", i + 1 < g_pipeline_count ? "," : "");
    }
    fprintf(f, "  ],\n  \"host_cost\": {\"shape\": ");
    bench_json_string(f, g_shapes[0].name);
    fprintf(f, ", \"runs_per_rep\": %u, \"unit\": \"ns/call\", \"calls\": [\n", g_host_runs);
    for (size_t i = 0; i < g_host_count; i++) {
        const struct host_row *r = &g_host[i];
        fprintf(f, "    {\"call\": ");
        bench_json_string(f, r->call);
        fprintf(f, ", \"covers\": ");
        bench_json_string(f, r->what);
        fprintf(f, ", ");
        bench_json_stats(f, "ns", r->ns, 1);
        fprintf(f, "}%s\n", i + 1 < g_host_count ? "," : "");
    }
    fprintf(f, "  ]}\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_program [--quick] [--section pipeline|host]\n"
            "                     [--shape 1task-1k|16task-4k|1task-1m]\n"
            "                     [--root REPO_DIR | --out FILE.json]\n"
            "Without --out, writes REPO_DIR/bench/results/program-latest.json; REPO_DIR is\n"
            "found above the executable. --section and --shape write JSON only with --out.\n");
}

int main(int argc, char **argv)
{
    const char *root_arg = NULL, *out_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            g_quick = 1;
        } else if (strcmp(argv[i], "--section") == 0 && i + 1 < argc) {
            g_section = argv[++i];
            if (strcmp(g_section, "pipeline") && strcmp(g_section, "host")) {
                usage();
                return 2;
            }
        } else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
            g_shape = argv[++i];
            int known = 0;
            for (size_t t = 0; t < SHAPE_COUNT; t++)
                known |= strcmp(g_shape, g_shapes[t].name) == 0;
            if (!known) {
                usage();
                return 2;
            }
        } else if (strcmp(argv[i], "--root") == 0 && i + 1 < argc) {
            root_arg = argv[++i];
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out_arg = argv[++i];
        } else {
            usage();
            return 2;
        }
    }

    char out_path[PATH_MAX];
    if (bench_out_path(PROGRAM, out_arg, root_arg, !g_section && !g_shape,
                       "program-latest.json", out_path,
                       sizeof out_path) != 0)
        return 2;

    uint64_t start = now_ns();
    g_load_at_start = bench_load_average();
    char what[32];
    snprintf(what, sizeof what, "%u reps per figure", reps());
    bench_print_start(PROGRAM, g_load_at_start, g_quick, what);

    /* simdev's device memory is this process's heap, and every run here
     * allocates and frees its staging buffers. Left to glibc's defaults, a
     * 1 MiB buffer is a fresh mmap (page faults on every touch) or a reused
     * heap chunk depending on what the process freed before — the same row
     * measured 10x apart depending on its place in the run. Fixed here to
     * the reuse case, as a caching device allocator would behave: no mmap
     * below 32 MiB, no trimming of the heap's top. */
    if (!mallopt(M_MMAP_THRESHOLD, 32 << 20) || !mallopt(M_TRIM_THRESHOLD, 256 << 20)) {
        fprintf(stderr, PROGRAM ": mallopt failed\n");
        return 1;
    }
    device_setup();
    bench_device_topology(DEVICE, g_topology, sizeof g_topology);
    printf(PROGRAM ": device: %s\n", g_topology);
    fflush(stdout);
    for (size_t d = 0; d < DEPTH_COUNT; d++) {
        uint32_t depth = g_depths[d];
        int host_here = depth == MAX_DEPTH && section_wanted("host");
        if (!section_wanted("pipeline") && !host_here)
            continue;
        size_t idle;
        struct simpler_context *ctx = context_open(depth, &idle);
        printf("context: pipeline_depth %u, %zu device bytes committed with no run\n", depth, idle);
        fflush(stdout);
        for (size_t s = 0; section_wanted("pipeline") && s < SHAPE_COUNT; s++)
            if (!g_shape || strcmp(g_shape, g_shapes[s].name) == 0)
                measure_pipeline(ctx, &g_shapes[s], depth, idle);
        if (host_here)
            measure_host(ctx);
        context_close(ctx);
    }
    CHECK(simdev_device_reset(DEVICE));

    /* Rows come out depth by depth; the table reads better shape by shape. */
    struct pipeline_row sorted[MAX_ROWS];
    size_t k = 0;
    for (size_t s = 0; s < SHAPE_COUNT; s++)
        for (size_t i = 0; i < g_pipeline_count; i++)
            if (g_pipeline[i].shape == &g_shapes[s])
                sorted[k++] = g_pipeline[i];
    memcpy(g_pipeline, sorted, k * sizeof *sorted);

    double seconds = (double)(now_ns() - start) / 1e9;
    print_tables();
    if (!out_path[0]) {
        printf("(%.1f s; partial run, no JSON written)\n", seconds);
        return 0;
    }
    if (write_json(out_path, seconds) != 0)
        return 1;
    printf("wrote %s (%.1f s)\n", out_path, seconds);
    return 0;
}
