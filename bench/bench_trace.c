/*
 * bench_trace.c — what tracing costs a run on the device, level by level,
 * and that level 0 costs nothing measurable. `make bench-components` runs
 * it after bench_kernel.
 *
 * One program-mode run of TASKS tasks (each INOUT on its own element of a
 * device tensor: no staging) is timed from simpler_launch_run to the end
 * of simpler_wait_run: the device's work, not the host's collection of the
 * trace at finalize (untimed; timed separately as "finalize"). Per
 * repetition the runs go, interleaved, at level 0, 1, 2, 3, 4 and level 0
 * again ("0 again"), in an order that rotates by one setting per
 * repetition, each right after an untimed level-0 run (so that none starts
 * on threads parked during a traced run's long finalize): the ratio of the two level-0 runs is the noise floor
 * of the machine at that moment, and every other level is reported as its
 * ratio to the first level-0 run of the same repetition. Level 0 is the
 * untraced path: the hooks are one branch each on a level read once per
 * round, and nothing is allocated (tests/unit/trace/test_trace_internals.c counts it),
 * so "level 0 costs nothing measurable" means its ratio to itself and the
 * ratio of the other levels to it are what this measures.
 *
 * Every run is checked: the tensor must hold exactly one increment per
 * task after each run.
 *
 * Prints the figures and writes bench/results/trace-latest.json under the
 * repo root (--root DIR or --out FILE override it). --quick: 3 repetitions.
 *
 * Owns only measurement; reaches the runtime through simpler.h alone.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "simpler/kernel.h"
#include "simpler/orchestration.h"
#include "simpler/device.h"
#include "simpler/simpler.h"

#define SP_BENCH_TRACE_PATH_MAX 4096
#define PROGRAM "bench_trace"
#define CHECK(call) BENCH_CHECK(PROGRAM, call)

#define DEVICE 0
#define CALLABLE 1
#define TASKS 2000
#define SCOPE 64
#define MAX_REPS 31
#define VARIANTS 6 /* level 0, 1, 2, 3, 4, 0 again */
_Static_assert(MAX_REPS <= BENCH_MAX_SAMPLES, "bench_stats_of takes every repetition");

static int g_quick;
static const uint32_t g_level_of[VARIANTS] = {0, 1, 2, 3, 4, 0};
static const char *const g_variant_name[VARIANTS] = {"level 0", "level 1", "level 2",
                                                     "level 3", "level 4", "level 0 again"};

static uint32_t reps(void)
{
    return g_quick ? 3 : MAX_REPS;
}

/* ------------------------------------------------------------ device code */

void bench_trace_touch(int64_t *args)
{
    uint32_t *x = simpler_kernel_data(args, 0);
    *x += 1;
}

/* TASKS tasks in scopes of SCOPE, task i INOUT on element i of tensor 0. */
void bench_trace_orch(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *buf = &args->tensors[0];
    struct simpler_task_args ta;
    struct simpler_tensor view;
    for (uint64_t i = 0; i < TASKS;) {
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        for (uint64_t j = 0; j < SCOPE && i < TASKS; j++, i++) {
            simpler_task_args_init(&ta);
            simpler_tensor_make_1d(&view, buf->addr + i * 64, 1, SIMPLER_DTYPE_U32,
                                   SIMPLER_MEM_DEVICE);
            simpler_task_args_add_inout(&ta, &view);
            simpler_submit_aiv(rt, 0, &ta, NULL);
        }
        simpler_scope_end(rt);
    }
}

static void *image(size_t *bytes)
{
    static const enum simpler_direction sig[] = {SIMPLER_DIR_INOUT};
    struct simpler_callable_builder *b;
    void *img;
    CHECK(simpler_callable_builder_create(&b));
    CHECK(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                     "bench_trace_orch", NULL, sig, 1));
    CHECK(simpler_callable_builder_add_kernel(b, 0, SIMPLER_CORE_AIV, SIMPLER_BINARY_SYMBOL, NULL,
                                              0, "bench_trace_touch", sig, 1));
    CHECK(simpler_callable_builder_finish(b, &img, bytes));
    simpler_callable_builder_destroy(b);
    return img;
}

/* ------------------------------------------------------------------ host */

struct sample {
    double device_ns_per_task; /* launch to wait returned, / TASKS */
    double cpu_ns_per_task;    /* CPU time of every thread of the process meanwhile, / TASKS */
    double finalize_ns;        /* finalize (trace collection and files when traced) */
};

static struct sample run_once(struct simpler_context *ctx, const struct simpler_args *args,
                              uint32_t level, uint32_t *counts, void *dev, size_t bytes,
                              uint32_t *expect)
{
    struct simpler_run_config rc;
    simpler_run_config_default(&rc); /* the context's capacity */
    rc.trace_level = level;
    simpler_run_t run;
    CHECK(simpler_prepare_run(ctx, &run, CALLABLE, args, &rc));
    double c0 = bench_process_cpu_ns();
    uint64_t t0 = simdev_clock_ns();
    CHECK(simpler_launch_run(ctx, run));
    CHECK(simpler_wait_run(ctx, run));
    uint64_t t1 = simdev_clock_ns();
    double c1 = bench_process_cpu_ns();
    CHECK(simpler_finalize_run(ctx, run));
    uint64_t t2 = simdev_clock_ns();
    (*expect)++;
    CHECK(simdev_memcpy(counts, dev, bytes, SIMDEV_COPY_DEVICE_TO_HOST));
    for (uint32_t i = 0; i < TASKS; i++)
        if (counts[i * 16] != *expect) {
            fprintf(stderr, PROGRAM ": element %u = %u after run %u: a task was lost or repeated\n",
                    i, counts[i * 16], *expect);
            exit(1);
        }
    return (struct sample){(double)(t1 - t0) / TASKS, (c1 - c0) / TASKS, (double)(t2 - t1)};
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_trace [--quick] [--root REPO_DIR | --out FILE.json]\n");
}

int main(int argc, char **argv)
{
    char out_path[PATH_MAX];
    if (bench_common_args(PROGRAM, argc, argv, "trace-latest.json", &g_quick, out_path,
                          sizeof out_path) != 0) {
        usage();
        return 2;
    }
    uint64_t start = simdev_clock_ns();
    double load = bench_load_average();
    char what[64];
    snprintf(what, sizeof what, "%u reps of %d-task runs at 6 settings", reps(), TASKS);
    bench_print_start(PROGRAM, load, g_quick, what);

    bench_device_configure(PROGRAM, DEVICE);
    struct simpler_context *ctx;
    CHECK(simpler_create_device_context(&ctx));
    CHECK(simpler_init(ctx, DEVICE, NULL));
    /* The traced runs' file, in the user's temporary directory. */
    const char *tmp = getenv("TMPDIR");
    char trace_file[SP_BENCH_TRACE_PATH_MAX];
    snprintf(trace_file, sizeof trace_file, "%s/bench_trace_%d.json",
             tmp && *tmp ? tmp : P_tmpdir, (int)getpid());
    CHECK(simpler_set_trace_path(ctx, trace_file));
    size_t bytes;
    void *img = image(&bytes);
    CHECK(simpler_register_callable(ctx, CALLABLE, img, bytes));
    simpler_callable_free(img);

    size_t tensor_bytes = (size_t)TASKS * 64;
    void *dev;
    CHECK(simdev_malloc(&dev, tensor_bytes));
    uint32_t *counts = calloc(1, tensor_bytes);
    CHECK(simdev_memcpy(dev, counts, tensor_bytes, SIMDEV_COPY_HOST_TO_DEVICE));
    struct simpler_tensor t;
    CHECK(simpler_tensor_make_1d(&t, (uint64_t)(uintptr_t)dev, tensor_bytes / 4,
                                 SIMPLER_DTYPE_U32, SIMPLER_MEM_DEVICE));
    struct simpler_args args = {1, 0, &t, NULL};
    uint32_t expect = 0;

    for (int w = 0; w < 2; w++) /* warm-up: loads, first-touch of the arena */
        run_once(ctx, &args, w ? 4 : 0, counts, dev, tensor_bytes, &expect);
    double per_task[VARIANTS][MAX_REPS], ratio[VARIANTS][MAX_REPS], fin[VARIANTS][MAX_REPS];
    double cpu[VARIANTS][MAX_REPS], cpu_ratio[VARIANTS][MAX_REPS];
    for (uint32_t r = 0; r < reps(); r++) {
        for (int step = 0; step < VARIANTS; step++) {
            /* The order rotates from one repetition to the next, so no
             * setting always follows the same one. */
            int v = (int)((step + r) % VARIANTS);
            /* An untimed level-0 run first, so every timed run starts in
             * the same state: right after a run whose finalize took
             * microseconds. Otherwise a run after a traced one (whose
             * finalize takes milliseconds) finds the device's threads
             * parked, and pays their wake-up as if it were tracing's. */
            run_once(ctx, &args, 0, counts, dev, tensor_bytes, &expect);
            struct sample s = run_once(ctx, &args, g_level_of[v], counts, dev, tensor_bytes,
                                       &expect);
            per_task[v][r] = s.device_ns_per_task;
            cpu[v][r] = s.cpu_ns_per_task;
            fin[v][r] = s.finalize_ns;
        }
        for (int v = 0; v < VARIANTS; v++) {
            ratio[v][r] = per_task[v][r] / per_task[0][r];
            cpu_ratio[v][r] = cpu[v][r] / cpu[0][r];
        }
    }
    unlink(trace_file);
    char other[SP_BENCH_TRACE_PATH_MAX + 16];
    snprintf(other, sizeof other, "%s", trace_file);
    size_t len = strlen(other) - 5;
    strcpy(other + len, ".deps.json");
    unlink(other);
    strcpy(other + len, ".deps.dot");
    unlink(other);

    printf("\n%-14s %22s %11s %10s %16s %10s %12s\n", "setting", "wall ns/task med (min)",
           "wall ratio", "min ratio", "CPU ns/task med", "CPU ratio", "finalize us");
    struct bench_stats pt[VARIANTS], ra[VARIANTS], fi[VARIANTS], cp[VARIANTS], cr[VARIANTS];
    for (int v = 0; v < VARIANTS; v++) {
        pt[v] = bench_stats_of(per_task[v], reps());
        ra[v] = bench_stats_of(ratio[v], reps());
        fi[v] = bench_stats_of(fin[v], reps());
        cp[v] = bench_stats_of(cpu[v], reps());
        cr[v] = bench_stats_of(cpu_ratio[v], reps());
        printf("%-14s %14.0f (%5.0f) %11.3f %10.3f %16.0f %10.3f %12.1f\n", g_variant_name[v],
               pt[v].median, pt[v].min, ra[v].median, pt[v].min / pt[0].min, cp[v].median,
               cr[v].median, fi[v].median / 1000);
    }
    printf("wall and CPU ratio: medians over repetitions of (setting / level 0 of the same\n"
           "repetition); min ratio: the setting's fastest run over level 0's fastest (the runs\n"
           "the rest of the machine disturbed least). Level 0 against itself, the noise floor\n"
           "now: wall %.3f, min %.3f, CPU %.3f\n",
           ra[5].median, pt[5].min / pt[0].min, cr[5].median);

    FILE *f;
    double seconds = (double)(simdev_clock_ns() - start) / 1e9;
    if (bench_json_open(PROGRAM, out_path, "trace", load, g_quick, seconds, &f) == 0) {
        fprintf(f, "  \"tasks_per_run\": %d,\n  \"reps\": %u,\n  \"settings\": [\n", TASKS,
                reps());
        for (int v = 0; v < VARIANTS; v++) {
            fprintf(f, "    {\"setting\": ");
            bench_json_string(f, g_variant_name[v]);
            fprintf(f, ", \"level\": %u, ", g_level_of[v]);
            bench_json_stats(f, "device_ns_per_task", pt[v], 1);
            fprintf(f, ", ");
            bench_json_stats(f, "ratio_to_level0", ra[v], 3);
            fprintf(f, ", \"min_ratio_to_level0\": %.3f, ", pt[v].min / pt[0].min);
            bench_json_stats(f, "cpu_ns_per_task", cp[v], 1);
            fprintf(f, ", ");
            bench_json_stats(f, "cpu_ratio_to_level0", cr[v], 3);
            fprintf(f, ", ");
            bench_json_stats(f, "finalize_ns", fi[v], 0);
            fprintf(f, "}%s\n", v + 1 < VARIANTS ? "," : "");
        }
        fprintf(f, "  ]\n}\n");
        fclose(f);
        printf(PROGRAM ": wrote %s\n", out_path);
    }
    CHECK(simdev_free(dev));
    free(counts);
    CHECK(simpler_finalize_device(ctx));
    CHECK(simpler_destroy_device_context(ctx));
    return 0;
}
