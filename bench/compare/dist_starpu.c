/*
 * dist_starpu.c — the distributed Cholesky benchmark's StarPU-MPI worker
 * (dist_chol.h), StarPU 1.3 with starpu_mpi.h, started by Open MPI's
 * launcher (Debian builds libstarpumpi against Open MPI; this file is
 * compiled against Open MPI's mpi.h for that reason).
 *
 * Each rank runs one StarPU CPU worker (ncpus = 1, as STARPU_NCPU=1),
 * unbound (STARPU_WORKERS_NOBIND: both ranks' workers would bind to the
 * first CPU), beside StarPU-MPI's communication thread; with DIST_BIND=1
 * each rank is confined to one CPU (dc_bind_rank_cpu) and its worker bound
 * to it. Every lower tile is a StarPU matrix
 * handle on every rank, registered with its owner (dc_owner, the same
 * 2-D block-cyclic placement as simpler's) and a tag; every rank submits
 * every tile operation with starpu_mpi_task_insert in dc_walk's order, the
 * codelets calling compare.h's tile kernels. StarPU-MPI runs each task on
 * the owner of the tile it writes (RW) and sends the tiles it reads from
 * their owner or its cache (STARPU_MPI_CACHE, on by default).
 *
 * What is timed, on rank 0: from a barrier before the first submission to
 * the return of starpu_mpi_wait_for_all (every task done on every rank
 * and the communications over). Bytes moved: StarPU-MPI's own count of
 * what each rank sent to each other rank (starpu_mpi_comm_amounts_retrieve
 * with STARPU_COMM_STATS=1, the data sent by its point-to-point transfers),
 * the difference over the instance, summed over the ranks. For the check,
 * each rank's tiles are brought home (unregistered), rank 1's are sent to
 * rank 0 with MPI (untimed), and rank 0 compares.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>
#include <starpu.h>
#include <starpu_mpi.h>

#include "compare.h"
#include "dist_chol.h"

#define WORKER "bench_dist_starpu"
#define MAX_RANKS 64

static int g_rank, g_ranks;

static _Noreturn void fail(const char *what)
{
    fprintf(stderr, WORKER ": rank %d: %s\n", g_rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* ------------------------------------------------------- STARPU_HOME */

/* ------------------------------------------------------------- codelets */

static atomic_int g_potrf_failed;

static double *tile_ptr(void *buf) { return (double *)STARPU_MATRIX_GET_PTR(buf); }
static uint32_t tile_size(void *buf) { return STARPU_MATRIX_GET_NX(buf); }

static void potrf_cpu(void *buffers[], void *arg)
{
    (void)arg;
    if (cmp_k_potrf(tile_size(buffers[0]), tile_ptr(buffers[0])) != 0)
        atomic_store(&g_potrf_failed, 1);
}

static void trsm_cpu(void *buffers[], void *arg)
{
    (void)arg;
    cmp_k_trsm(tile_size(buffers[0]), tile_ptr(buffers[0]), tile_ptr(buffers[1]));
}

static void syrk_cpu(void *buffers[], void *arg)
{
    (void)arg;
    cmp_k_syrk(tile_size(buffers[0]), tile_ptr(buffers[0]), tile_ptr(buffers[1]));
}

static void gemm_cpu(void *buffers[], void *arg)
{
    (void)arg;
    cmp_k_gemm_nt(tile_size(buffers[0]), tile_ptr(buffers[0]), tile_ptr(buffers[1]),
                  tile_ptr(buffers[2]));
}

/* No performance models: nothing to calibrate, nothing written. */
static struct starpu_codelet k_codelets[DC_OPS] = {
    [DC_POTRF] = {.where = STARPU_CPU, .cpu_funcs = {potrf_cpu}, .nbuffers = 1,
                  .modes = {STARPU_RW}, .name = "potrf"},
    [DC_TRSM] = {.where = STARPU_CPU, .cpu_funcs = {trsm_cpu}, .nbuffers = 2,
                 .modes = {STARPU_R, STARPU_RW}, .name = "trsm"},
    [DC_SYRK] = {.where = STARPU_CPU, .cpu_funcs = {syrk_cpu}, .nbuffers = 2,
                 .modes = {STARPU_R, STARPU_RW}, .name = "syrk"},
    [DC_GEMM] = {.where = STARPU_CPU, .cpu_funcs = {gemm_cpu}, .nbuffers = 3,
                 .modes = {STARPU_R, STARPU_R, STARPU_RW}, .name = "gemm"},
};

/* ------------------------------------------------------------ instance */

struct instance {
    double *a;                   /* the whole matrix; this rank's tiles are current */
    starpu_data_handle_t *h;     /* lower tile (i, j) = h[i * nt + j] */
    uint32_t n, tile, nt;
};

static starpu_data_handle_t handle_of(const struct instance *in, uint32_t i, uint32_t j)
{
    return in->h[(size_t)i * in->nt + j];
}

/* Registers every lower tile on every rank: its owner's copy is home (in
 * the owner's matrix), the others have none until StarPU-MPI sends one.
 * Tags are unique per instance (`tag_base`). */
static void register_tiles(struct instance *in, starpu_mpi_tag_t tag_base)
{
    for (uint32_t i = 0; i < in->nt; i++)
        for (uint32_t j = 0; j <= i; j++) {
            int owner = dc_owner(i, j, g_ranks);
            starpu_data_handle_t *h = &in->h[(size_t)i * in->nt + j];
            if (owner == g_rank)
                starpu_matrix_data_register(h, STARPU_MAIN_RAM,
                                            (uintptr_t)cmp_tile_at(in->a, in->nt, in->tile, i, j),
                                            in->tile, in->tile, in->tile, sizeof(double));
            else
                starpu_matrix_data_register(h, -1, 0, in->tile, in->tile, in->tile,
                                            sizeof(double));
            starpu_mpi_data_register(*h, tag_base + (starpu_mpi_tag_t)i * in->nt + j, owner);
        }
}

static void unregister_tiles(struct instance *in)
{
    for (uint32_t i = 0; i < in->nt; i++)
        for (uint32_t j = 0; j <= i; j++)
            starpu_data_unregister(handle_of(in, i, j)); /* the owner's copy comes home */
}

static int insert_op(void *user, enum dc_op op, const uint32_t (*ij)[2])
{
    const struct instance *in = user;
    starpu_data_handle_t h[3];
    for (uint32_t k = 0; k < dc_op_tiles(op); k++)
        h[k] = handle_of(in, ij[k][0], ij[k][1]);
    struct starpu_codelet *cl = &k_codelets[op];
    switch (op) {
    case DC_POTRF:
        return starpu_mpi_task_insert(MPI_COMM_WORLD, cl, STARPU_RW, h[0], 0);
    case DC_TRSM:
    case DC_SYRK:
        return starpu_mpi_task_insert(MPI_COMM_WORLD, cl, STARPU_R, h[0], STARPU_RW, h[1], 0);
    default:
        return starpu_mpi_task_insert(MPI_COMM_WORLD, cl, STARPU_R, h[0], STARPU_R, h[1],
                                      STARPU_RW, h[2], 0);
    }
}

/* Bytes this rank has sent to every rank so far (StarPU-MPI's count). */
static uint64_t sent_so_far(void)
{
    size_t amounts[MAX_RANKS] = {0};
    starpu_mpi_comm_amounts_retrieve(amounts);
    uint64_t sum = 0;
    for (int r = 0; r < g_ranks; r++)
        sum += amounts[r];
    return sum;
}

/* Rank 1.. send the tiles they own to rank 0, which receives them into
 * its matrix (the tiles' home copies are current: unregistered). */
static void gather_on_rank_0(struct instance *in)
{
    int count = (int)((size_t)in->tile * in->tile);
    for (uint32_t i = 0; i < in->nt; i++)
        for (uint32_t j = 0; j <= i; j++) {
            int owner = dc_owner(i, j, g_ranks);
            double *t = cmp_tile_at(in->a, in->nt, in->tile, i, j);
            int tag = (int)(i * in->nt + j);
            if (owner == 0)
                continue;
            if (g_rank == owner)
                MPI_Send(t, count, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD);
            else if (g_rank == 0)
                MPI_Recv(t, count, MPI_DOUBLE, owner, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
}

struct outcome {
    double wall_ns;
    uint64_t bytes_moved;
    const char *check;
};

static struct outcome run_instance(uint32_t n, uint32_t tile, int check, uint32_t number)
{
    struct instance in = {.n = n, .tile = tile, .nt = n / tile};
    struct outcome out = {.check = "off"};
    in.a = cmp_matrix_alloc(n, tile);
    in.h = calloc((size_t)in.nt * in.nt, sizeof *in.h);
    if (!in.a || !in.h)
        fail("out of host memory");
    cmp_chol_init(in.a, n, tile);
    register_tiles(&in, (starpu_mpi_tag_t)number * in.nt * in.nt);
    atomic_store(&g_potrf_failed, 0);
    uint64_t sent_before = sent_so_far();
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t t0 = cmp_now_ns();
    if (dc_walk(in.nt, insert_op, &in) != 0)
        fail("starpu_mpi_task_insert failed");
    starpu_mpi_wait_for_all(MPI_COMM_WORLD);
    out.wall_ns = (double)(cmp_now_ns() - t0);
    uint64_t sent = sent_so_far() - sent_before, total = 0;
    MPI_Reduce(&sent, &total, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    out.bytes_moved = total;
    starpu_mpi_cache_flush_all_data(MPI_COMM_WORLD);
    unregister_tiles(&in);
    int potrf_failed = atomic_load(&g_potrf_failed), any_failed = 0;
    MPI_Allreduce(&potrf_failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_failed)
        fail("potrf failed (matrix not positive definite)");
    if (check) {
        gather_on_rank_0(&in);
        if (g_rank == 0) {
            double *ref = cmp_matrix_alloc(n, tile);
            if (!ref)
                fail("out of host memory");
            cmp_chol_init(ref, n, tile);
            if (dc_reference(ref, n, tile) != 0)
                fail("the reference's potrf failed");
            uint64_t differ = dc_lower_diff(in.a, ref, n, tile);
            if (cmp_chol_check(in.a, n, tile) != 0)
                fail("L L^T differs from A (cmp_chol_check)");
            out.check = differ ? "residual" : "exact";
            if (differ)
                fprintf(stderr, WORKER ": %llu elements differ from the one-process reference "
                                "(the residual check passed)\n", (unsigned long long)differ);
            free(ref);
        }
        MPI_Barrier(MPI_COMM_WORLD); /* rank 1 waits for the check's verdict */
    }
    free(in.a);
    free(in.h);
    return out;
}

int main(int argc, char **argv)
{
    int cpu = dc_bind_rank_cpu("OMPI_COMM_WORLD_RANK"); /* before MPI starts threads */
    struct dc_params p;
    if (dc_parse(argc, argv, &p) != 0)
        return 2;
    setenv("STARPU_SILENT", "1", 1);
    setenv("STARPU_COMM_STATS", "1", 1); /* starpu_mpi_comm_amounts_retrieve counts */
    cmp_private_home("STARPU_HOME", "dist-starpu", WORKER);

    struct starpu_conf conf;
    starpu_conf_init(&conf);
    conf.ncpus = 1;
    conf.ncuda = 0;
    conf.nopencl = 0;
    conf.nmic = 0;
    conf.nmpi_ms = 0;
    if (cpu >= 0) { /* the worker on the rank's CPU, not on hwloc's first */
        conf.use_explicit_workers_bindid = 1;
        conf.workers_bindid[0] = (unsigned)cpu;
    } else { /* unconfined (the default): every rank's worker would bind to the first CPU */
        setenv("STARPU_WORKERS_NOBIND", "1", 1);
    }
    if (starpu_mpi_init_conf(&argc, &argv, 1, MPI_COMM_WORLD, &conf) != 0)
        cmp_fail(WORKER, "starpu_mpi_init_conf failed");
    starpu_mpi_comm_rank(MPI_COMM_WORLD, &g_rank);
    starpu_mpi_comm_size(MPI_COMM_WORLD, &g_ranks);
    if (g_ranks > MAX_RANKS)
        fail("too many ranks");

    double gflops[DC_MAX_REPS], wall_ms[DC_MAX_REPS];
    struct outcome last = {.check = "off"};
    const char *check = "off";
    uint32_t number = 0;
    if (p.warmup)
        run_instance(dc_warmup_n(&p), p.tile, 0, number++);
    for (uint32_t r = 0; r < p.reps; r++) {
        last = run_instance(p.n, p.tile, p.check && r == 0, number++);
        if (r == 0)
            check = last.check;
        double n = (double)p.n;
        gflops[r] = n * n * n / 3.0 / last.wall_ns;
        wall_ms[r] = last.wall_ns / 1e6;
    }
    unsigned workers = starpu_cpu_worker_get_count();
    starpu_mpi_shutdown();
    if (g_rank == 0) {
        char extra[512];
        snprintf(extra, sizeof extra,
                 " wall_ms=%.1f bytes_moved=%llu check=%s system=starpu-mpi ranks=%d"
                 " workers_per_rank=%u cpu=%d",
                 dc_median(wall_ms, p.reps), (unsigned long long)last.bytes_moved, check,
                 g_ranks, workers, cpu);
        cmp_report(dc_median(gflops, p.reps), "GFLOP/s", dc_task_count(p.n / p.tile), extra);
    }
    return 0;
}
