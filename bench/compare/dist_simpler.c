/*
 * dist_simpler.c — the distributed Cholesky benchmark's simpler worker
 * (dist_chol.h): a distributed cluster (simpler/cluster.h, docs/cluster.md
 * section 9) over `mpiexec -n R` (MPICH), one worker per rank.
 *
 * Each rank drives one simulated device with one AIV core (the one thread
 * that runs tile kernels) and 2 AICPU threads (orchestrator and scheduler),
 * under a runnable budget of one thread (runnable_cpus = 1): one compute
 * thread per rank, as StarPU-MPI gets with one CPU worker per rank
 * (dist_starpu.c). Threads are placed by the OS (the core unpinned: both
 * ranks' cores would pin to the first CPU), or each rank confined to one
 * CPU with DIST_BIND=1 (dc_bind_rank_cpu). Rank 0 runs the orchestration: one
 * directed submit per tile operation, on the worker owning the tile it
 * writes (dc_owner), each a device-level run of a callable whose
 * orchestration submits its one kernel, the compare.h tile kernel. Every
 * tile is a host buffer of its own (a tile of rank 0's tile-major
 * matrix), so a run stages and ships single tiles. Rank 1 serves.
 *
 * What is timed: simpler_cluster_run on rank 0, from the call to its
 * return (every task ended, every output in rank 0's buffers). Bytes
 * moved: run_info.bytes_sent + bytes_received on rank 0 (the read spans
 * of the requests out, the written tiles back; every remote run goes
 * through rank 0).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "dist_chol.h"
#include "simpler/cluster.h"
#include "simpler/device.h"
#include "simpler/kernel.h"
#include "simpler/orchestration.h"

#define WORKER "bench_dist_simpler"
#define DEVICE 0
#define CALLABLE_ID0 1 /* + enum dc_op */

static int g_rank;

#define CHECK(call)                                                                         \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        if (rc_ != 0) {                                                                     \
            fprintf(stderr, WORKER ": rank %d: %s failed: %d (%s) at line %d\n", g_rank,    \
                    #call, rc_, simpler_strerror(rc_), __LINE__);                           \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

/* =============================================================== kernels
 *
 * Exported: the callable images name them, and each rank's device loader
 * resolves them among this executable's symbols (CMAKE_ENABLE_EXPORTS). */

void dist_sk_potrf(int64_t *args);
void dist_sk_trsm(int64_t *args);
void dist_sk_syrk(int64_t *args);
void dist_sk_gemm(int64_t *args);

/* The tile's order, from its element count (tile x tile). */
static uint32_t tile_of(int64_t *args, uint32_t i)
{
    uint64_t elems = simpler_tensor_numel(simpler_kernel_tensor(args, i));
    uint32_t tile = 1;
    while ((uint64_t)tile * tile < elems)
        tile++;
    return tile;
}

/* tensor 0 INOUT A[k][k]; a matrix not positive definite fails the run */
void dist_sk_potrf(int64_t *args)
{
    if (cmp_k_potrf(tile_of(args, 0), simpler_kernel_data(args, 0)) != 0)
        simpler_kernel_fail(args, 500);
}

/* tensor 0 IN A[k][k], tensor 1 INOUT A[i][k] */
void dist_sk_trsm(int64_t *args)
{
    cmp_k_trsm(tile_of(args, 0), simpler_kernel_data(args, 0), simpler_kernel_data(args, 1));
}

/* tensor 0 IN A[i][k], tensor 1 INOUT A[i][i] */
void dist_sk_syrk(int64_t *args)
{
    cmp_k_syrk(tile_of(args, 0), simpler_kernel_data(args, 0), simpler_kernel_data(args, 1));
}

/* tensors 0, 1 IN A[i][k], A[j][k]; tensor 2 INOUT A[i][j] */
void dist_sk_gemm(int64_t *args)
{
    cmp_k_gemm_nt(tile_of(args, 0), simpler_kernel_data(args, 0), simpler_kernel_data(args, 1),
                  simpler_kernel_data(args, 2));
}

/* ========================================================= orchestrations
 *
 * Each submits its one kernel (func 0) over the run's tiles, the last
 * INOUT; a refused submit is latched as the run's status. */

void dist_so_potrf(struct simpler_orch *rt, const struct simpler_orch_args *args);
void dist_so_trsm(struct simpler_orch *rt, const struct simpler_orch_args *args);
void dist_so_syrk(struct simpler_orch *rt, const struct simpler_orch_args *args);
void dist_so_gemm(struct simpler_orch *rt, const struct simpler_orch_args *args);

static void submit_tile_op(struct simpler_orch *rt, const struct simpler_orch_args *args,
                           uint32_t tiles)
{
    if (args->tensor_count != tiles) {
        rt->ops->fatal(rt);
        return;
    }
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    for (uint32_t i = 0; i + 1 < tiles; i++)
        simpler_task_args_add_input(&ta, &args->tensors[i]);
    simpler_task_args_add_inout(&ta, &args->tensors[tiles - 1]);
    simpler_submit_aiv(rt, 0, &ta, NULL);
}

void dist_so_potrf(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    submit_tile_op(rt, args, 1);
}

void dist_so_trsm(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    submit_tile_op(rt, args, 2);
}

void dist_so_syrk(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    submit_tile_op(rt, args, 2);
}

void dist_so_gemm(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    submit_tile_op(rt, args, 3);
}

/* ================================================================== host */

static void register_callables(struct simpler_cluster *cl)
{
    static const char *const entries[DC_OPS] = {"dist_so_potrf", "dist_so_trsm",
                                                "dist_so_syrk", "dist_so_gemm"};
    static const char *const kernels[DC_OPS] = {"dist_sk_potrf", "dist_sk_trsm",
                                                "dist_sk_syrk", "dist_sk_gemm"};
    for (int op = 0; op < DC_OPS; op++) {
        uint32_t tiles = dc_op_tiles((enum dc_op)op);
        enum simpler_direction sig[3] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN, SIMPLER_DIR_IN};
        sig[tiles - 1] = SIMPLER_DIR_INOUT;
        struct simpler_callable_builder *b;
        void *image;
        size_t bytes;
        CHECK(simpler_callable_builder_create(&b));
        CHECK(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                         entries[op], NULL, sig, tiles));
        CHECK(simpler_callable_builder_add_kernel(b, 0, SIMPLER_CORE_AIV, SIMPLER_BINARY_SYMBOL,
                                                  NULL, 0, kernels[op], sig, tiles));
        CHECK(simpler_callable_builder_finish(b, &image, &bytes));
        simpler_callable_builder_destroy(b);
        /* collective: every rank registers the same image under the same id */
        CHECK(simpler_cluster_register_callable(cl, CALLABLE_ID0 + op, image, bytes));
        simpler_callable_free(image);
    }
}

/* This rank's device: one AIV core, orchestrator + scheduler, a runnable
 * budget of one thread; no watchdog (a 4096 factorisation's runs are
 * short, but a loaded machine should not lose the device). */
static void configure_device(int cpu)
{
    struct simdev_config dc;
    CHECK(simdev_config_default(&dc));
    dc.aicpu_threads = 2;
    dc.aic_cores = 0;
    dc.aiv_cores = 1;
    dc.runnable_cpus = 1;
    dc.watchdog_ms = 0;
    dc.pin_cores = cpu >= 0; /* unconfined (the default): every rank's core would pin to the
                                first CPU */
    CHECK(simdev_device_configure(DEVICE, &dc));
}

/* One instance on rank 0: the matrix and the orchestration's state. */
struct instance {
    double *a;
    uint32_t n, tile, nt;
    uint32_t workers;
    struct simpler_cluster_orch *orch;
};

static int submit_op(void *user, enum dc_op op, const uint32_t (*ij)[2])
{
    struct instance *in = user;
    uint32_t tiles = dc_op_tiles(op);
    struct simpler_tensor t[3];
    for (uint32_t k = 0; k < tiles; k++) {
        double *tile = cmp_tile_at(in->a, in->nt, in->tile, ij[k][0], ij[k][1]);
        int rc = simpler_tensor_make_1d(&t[k], (uint64_t)(uintptr_t)tile,
                                        (uint64_t)in->tile * in->tile, SIMPLER_DTYPE_F64,
                                        SIMPLER_MEM_HOST);
        if (rc)
            return rc;
    }
    struct simpler_args args = {.tensor_count = tiles, .tensors = t};
    uint32_t owner = (uint32_t)dc_owner(ij[tiles - 1][0], ij[tiles - 1][1], (int)in->workers);
    simpler_cluster_task_t task;
    return simpler_cluster_submit(in->orch, owner, CALLABLE_ID0 + (int32_t)op, &args, NULL,
                                  &task);
}

static int orchestrate(struct simpler_cluster_orch *orch, void *user)
{
    struct instance *in = user;
    in->orch = orch;
    return dc_walk(in->nt, submit_op, in);
}

struct outcome {
    double wall_ns;
    struct simpler_cluster_run_info info;
    const char *check; /* "exact", "residual", "off" */
};

/* Rank 0: factorises a fresh matrix of order n on the cluster; checks it
 * when `check`. */
static struct outcome run_instance(struct simpler_cluster *cl, uint32_t n, uint32_t tile,
                                   int check)
{
    struct instance in = {.n = n, .tile = tile, .nt = n / tile,
                          .workers = simpler_cluster_worker_count(cl)};
    struct outcome out = {.check = "off"};
    in.a = cmp_matrix_alloc(n, tile);
    if (!in.a)
        cmp_fail(WORKER, "out of host memory");
    cmp_chol_init(in.a, n, tile);
    uint64_t t0 = cmp_now_ns();
    int rc = simpler_cluster_run(cl, orchestrate, &in, &out.info);
    out.wall_ns = (double)(cmp_now_ns() - t0);
    if (rc != 0) {
        fprintf(stderr, WORKER ": the cluster run failed: %d (%s); task %llu first failed\n",
                rc, simpler_strerror(rc), (unsigned long long)out.info.first_failed_task);
        exit(1);
    }
    if (out.info.tasks_succeeded != dc_task_count(in.nt))
        cmp_fail(WORKER, "not every tile operation succeeded");
    if (check) {
        double *ref = cmp_matrix_alloc(n, tile);
        if (!ref)
            cmp_fail(WORKER, "out of host memory");
        cmp_chol_init(ref, n, tile);
        if (dc_reference(ref, n, tile) != 0)
            cmp_fail(WORKER, "the reference's potrf failed");
        uint64_t differ = dc_lower_diff(in.a, ref, n, tile);
        if (cmp_chol_check(in.a, n, tile) != 0)
            cmp_fail(WORKER, "L L^T differs from A (cmp_chol_check)");
        out.check = differ ? "residual" : "exact";
        if (differ)
            fprintf(stderr, WORKER ": %llu elements differ from the one-process reference "
                            "(the residual check passed)\n", (unsigned long long)differ);
        free(ref);
    }
    free(in.a);
    return out;
}

/* Rank r > 0: serves one run of rank 0. */
static void serve_instance(struct simpler_cluster *cl)
{
    struct simpler_cluster_serve_info si;
    int rc = simpler_cluster_serve(cl, &si);
    if (rc != 0) {
        fprintf(stderr, WORKER ": rank %d: the served run ended with %d (%s)\n", g_rank, rc,
                simpler_strerror(rc));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    int cpu = dc_bind_rank_cpu("PMI_RANK"); /* before MPI starts its threads */
    int ranks;
    CHECK(simpler_cluster_mpi_init(&argc, &argv, &g_rank, &ranks));
    struct dc_params p;
    if (dc_parse(argc, argv, &p) != 0)
        return 2;
    configure_device(cpu);
    struct simpler_config ctx_cfg;
    CHECK(simpler_config_default(&ctx_cfg));
    struct simpler_cluster_config cfg;
    CHECK(simpler_cluster_config_default(&cfg));
    cfg.worker_count = 1;
    cfg.device_config = &ctx_cfg;
    cfg.distributed = 1;
    cfg.peer_timeout_ms = 60000; /* the reference check keeps rank 0 busy for seconds */
    struct simpler_cluster *cl;
    CHECK(simpler_cluster_create(&cfg, &cl));
    register_callables(cl);

    double gflops[DC_MAX_REPS], wall_ms[DC_MAX_REPS];
    struct outcome last = {.check = "off"};
    const char *check = "off";
    if (p.warmup) {
        if (g_rank == 0)
            run_instance(cl, dc_warmup_n(&p), p.tile, 0);
        else
            serve_instance(cl);
    }
    for (uint32_t r = 0; r < p.reps; r++) {
        if (g_rank != 0) {
            serve_instance(cl);
            continue;
        }
        last = run_instance(cl, p.n, p.tile, p.check && r == 0);
        if (r == 0)
            check = last.check;
        double n = (double)p.n;
        gflops[r] = n * n * n / 3.0 / last.wall_ns;
        wall_ms[r] = last.wall_ns / 1e6;
    }
    CHECK(simpler_cluster_destroy(cl));
    CHECK(simpler_cluster_mpi_finalize());
    if (g_rank == 0) {
        char extra[512];
        snprintf(extra, sizeof extra,
                 " wall_ms=%.1f bytes_moved=%llu bytes_sent=%llu bytes_received=%llu"
                 " remote_runs=%llu runs=%llu check=%s system=simpler-cluster ranks=%d"
                 " workers_per_rank=1 cpu=%d",
                 dc_median(wall_ms, p.reps),
                 (unsigned long long)(last.info.bytes_sent + last.info.bytes_received),
                 (unsigned long long)last.info.bytes_sent,
                 (unsigned long long)last.info.bytes_received,
                 (unsigned long long)last.info.remote_runs,
                 (unsigned long long)last.info.runs_launched, check, ranks, cpu);
        cmp_report(dc_median(gflops, p.reps), "GFLOP/s", dc_task_count(p.n / p.tile), extra);
    }
    return 0;
}
