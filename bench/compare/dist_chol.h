/*
 * dist_chol.h — what the two workers of the distributed Cholesky
 * benchmark (issue 30) share: simpler's cluster over MPICH
 * (dist_simpler.c) and StarPU-MPI (dist_starpu.c). Neither MPI is seen
 * here: the two workers link different MPI libraries (Debian builds
 * StarPU-MPI against Open MPI), so this file holds only what is pure.
 *
 * The workload: the tiled Cholesky of compare.h (lower, right-looking, the
 * n x n SPD matrix of cmp_chol_init, tile-major, each tile a contiguous
 * column-major tile x tile block, the tile kernels cmp_k_potrf/trsm/syrk/
 * gemm_nt), over R ranks, tiles placed 2-D block-cyclic on a pr x pc grid
 * of ranks (pr the largest divisor of R at most sqrt(R); 2 ranks: 1 x 2,
 * so tile (i, j) is on rank j % 2), each tile operation run by the owner
 * of the tile it writes.
 *
 * A worker is started by its MPI's launcher with R ranks:
 *
 *     launcher -n 2 worker [n=4096] [tile=256] [reps=1] [check=0] [warmup=1]
 *
 * It runs a warm-up instance (n/4, at least two tiles), then `reps`
 * measured instances, and rank 0 prints one line:
 *
 *     result value=GFLOPS unit=GFLOP/s tasks=N wall_ms=W bytes_moved=B
 *         remote_runs=R check=exact|residual|off system=...
 *
 * value and wall_ms are the medians of the measured instances (n^3/3
 * flops); bytes_moved is the payload that crossed between ranks in the
 * last measured instance (each instance is the same graph on the same
 * placement, so it moves the same bytes). With check=1, the first measured instance's factor is
 * compared bit for bit with dc_reference's (the same kernels, one
 * process, the same order of updates per tile) and L L^T against A on
 * cmp_chol_check's sample; "exact" means both held, "residual" that the
 * bits differ but the residual check passed (a failed residual check
 * fails the worker).
 */
#ifndef SIMPLER_BENCH_DIST_CHOL_H
#define SIMPLER_BENCH_DIST_CHOL_H

#include <stddef.h>
#include <stdint.h>

#define DC_MAX_REPS 32

struct dc_params {
    uint32_t n, tile, reps;
    int check, warmup;
};

/* Parses argv[1..] (key=value) into *p; defaults n 4096, tile 256, reps
 * 1, check 0, warmup 1. Prints the problem to stderr and returns -1 on an
 * unknown key, a bad value or n not a multiple of tile; 0 otherwise. */
int dc_parse(int argc, char **argv, struct dc_params *p);

/* The warm-up's order: n/4 rounded down to a tile, at least 2 tiles (so
 * that every rank of two has work). */
uint32_t dc_warmup_n(const struct dc_params *p);

/* The rank that owns tile (i, j) among `ranks` (2-D block-cyclic). */
int dc_owner(uint32_t i, uint32_t j, int ranks);

/* The tile operations, in the order every system submits them. */
enum dc_op { DC_POTRF = 0, DC_TRSM, DC_SYRK, DC_GEMM, DC_OPS };

/* Tiles each operation takes: the last is written (INOUT), the others
 * read. */
static inline uint32_t dc_op_tiles(enum dc_op op)
{
    return op == DC_POTRF ? 1 : op == DC_GEMM ? 3 : 2;
}

/* One tile operation: `op` over tiles ij[0..dc_op_tiles(op)). Returns 0
 * to go on, nonzero to stop the walk (the walk returns it). */
typedef int (*dc_op_fn)(void *user, enum dc_op op, const uint32_t (*ij)[2]);

/* Calls `fn` for every operation of the nt x nt tiled factorisation in
 * submission order: per k, potrf(k,k); trsm(k,k; i,k) for i > k; per i > k,
 * syrk(i,k; i,i) then gemm(i,k; j,k; i,j) for k < j < i. */
int dc_walk(uint32_t nt, dc_op_fn fn, void *user);

/* Tasks of an nt x nt factorisation (compare.h's chol count). */
uint64_t dc_task_count(uint32_t nt);

/* Factorises `a` (n x n, tile-major) in place with the tile kernels in
 * dc_walk's order on the calling thread. 0, or the first nonzero LAPACK
 * info of a potrf. */
int dc_reference(double *a, uint32_t n, uint32_t tile);

/* Elements of the lower tiles (i >= j) of `got` whose bits differ from
 * `want`'s. */
uint64_t dc_lower_diff(const double *got, const double *want, uint32_t n, uint32_t tile);

/*
 * With DIST_BIND=1 in the environment, confines the calling thread, and
 * every thread it starts later (MPI's, the runtime's), to one CPU: the
 * rank's position, read from the environment variable `rank_env` that the
 * launcher sets (MPICH's hydra: PMI_RANK; Open MPI: OMPI_COMM_WORLD_RANK),
 * modulo the CPUs this process may use. Called first thing in main,
 * before MPI starts threads. Returns the CPU, or -1 (nothing changed)
 * without DIST_BIND=1 (the default: every thread of every rank floats
 * over every CPU), when the variable is absent or the affinity cannot be
 * set.
 */
int dc_bind_rank_cpu(const char *rank_env);

/* The median of v[0..count) (count >= 1; reorders v). */
double dc_median(double *v, uint32_t count);

#endif /* SIMPLER_BENCH_DIST_CHOL_H */
