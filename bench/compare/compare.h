/*
 * compare.h — what every system's worker in the comparison benchmark shares:
 * the workloads' definitions (what each task reads, writes and computes),
 * their parameters, the task bodies, result checks, and the one-line result
 * protocol the driver (bench_compare) reads.
 *
 * A worker is one executable per system (simpler, libgomp, libomp, StarPU,
 * serial). The driver starts it once per sample:
 *
 *     worker WORKLOAD [key=value ...]
 *
 * The worker builds the inputs (untimed), runs a warm-up instance of the
 * same workload at a tenth of its size, runs the measured instance, checks
 * the result (when check=1), and prints exactly one line on stdout:
 *
 *     result value=V unit=U tasks=N [key=value ...]
 *
 * with exit status 0; or a message on stderr and a nonzero exit status. A
 * worker asked for a workload it does not run prints "unsupported" and
 * exits with status 3. `worker --list` prints the workloads it runs, one
 * per line.
 *
 * Every task body is a function here, so each system runs the same code;
 * the systems differ only in how tasks are created, ordered and run.
 */
#ifndef SIMPLER_BENCH_COMPARE_H
#define SIMPLER_BENCH_COMPARE_H

#include <stddef.h>
#include <stdint.h>

/* Workers' exit status for a workload they do not run. */
#define CMP_EXIT_UNSUPPORTED 3

/*
 * The workloads (the "workload" argument), with the keys each takes:
 *
 * indep   n          n independent tasks; task i increments cell i
 *                    (INOUT of its own cell). unit ns/task.
 * chain   n          n tasks, each increments cell 0 (INOUT of one cell):
 *                    a chain. unit ns/task.
 * fan     rounds k   per round: a producer (INOUT x: x = x + 1), k consumers
 *                    (IN x, OUT y[c]: y[c] = cmp_fan_consume(x, c)) and a
 *                    reducer (IN y[0..k), INOUT x: x = cmp_fan_reduce(y, k)).
 *                    k <= CMP_FAN_MAX_K. tasks = rounds * (k + 2). ns/task.
 * stencil width steps work
 *                    a[2][width] cells, a[0] set by cmp_stencil_init; step t
 *                    (0-based) has one task per cell i: IN a[t%2][i-1],
 *                    a[t%2][i], a[t%2][i+1] (the ones that exist), OUT
 *                    a[(t+1)%2][i] = cmp_stencil_cell(l, m, r, t, work),
 *                    where an absent neighbour counts as 0. `work` is the
 *                    busy-work iteration count of each body (0 = none).
 *                    tasks = width * steps. ns/task.
 * chol    n tile     tiled Cholesky (lower, right-looking) of the n x n
 *                    SPD matrix of cmp_chol_init, tile-major (each tile a
 *                    contiguous column-major tile x tile block); per k:
 *                    potrf(A[k][k]); trsm(A[k][k], A[i][k]) for i > k;
 *                    syrk(A[i][k], A[i][i]) and gemm(A[i][k], A[j][k],
 *                    A[i][j]) for k < j < i. unit GFLOP/s (n^3/3 flops).
 * gemm    n tile     tiled C = A * B (tile-major, cmp_gemm_init), one task
 *                    per (i, j, k): IN A[i][k], IN B[k][j], INOUT C[i][j],
 *                    k innermost. unit GFLOP/s (2 n^3 flops).
 *
 * pressure n window  (simpler only) n groups, each in its own scope: a
 *                    producer with a runtime-allocated output cell, a
 *                    consumer adding it into accumulator g % 64; `window`
 *                    task slots (and cells of heap) per ring. tasks = 2n.
 * pipeline n depth   (simpler only) n back-to-back program-mode runs of one
 *                    task each, up to `depth` in flight. unit us/run.
 *
 * Common keys: check=1 verifies the measured instance (the driver asks for
 * it on the first repetition of each case); warmup=0 skips the warm-up.
 */
#define CMP_FAN_MAX_K 16

struct cmp_params {
    const char *workload;
    uint64_t n;      /* indep, chain: tasks; chol, gemm: matrix order */
    uint64_t rounds; /* fan */
    uint32_t k;      /* fan */
    uint32_t width;  /* stencil */
    uint32_t steps;  /* stencil */
    uint64_t work;   /* stencil: busy-work iterations per body */
    uint32_t tile;   /* chol, gemm */
    uint32_t window; /* pressure */
    uint32_t depth;  /* pipeline */
    int check;
    int warmup;
};

/* One cell: a 64-bit value on its own cache line, so independent tasks
 * never share a line (as separate small tensors would not). */
struct cmp_cell {
    uint64_t v;
    uint64_t pad[7];
};

/* Parses argv[1..] into *p (defaults for absent keys: n 100000 (chol,
 * gemm 2048; pipeline 2000), rounds 10000, k 8, width 64, steps 1000, work
 * 0, tile 128, window 16, depth 4, check 0, warmup 1).
 * Prints the problem to stderr and returns -1 on an unknown workload, key
 * or a bad value; 0 otherwise. */
int cmp_parse(int argc, char **argv, struct cmp_params *p);

/* The warm-up instance of *p: the same workload a tenth the size (at
 * least one task; chol/gemm keep n and tile but use n/4 rounded to a
 * multiple of the tile, at least one tile). */
struct cmp_params cmp_warmup_of(const struct cmp_params *p);

/* Tasks of the workload (chol/gemm: kernel calls). */
uint64_t cmp_task_count(const struct cmp_params *p);

/* Prints the result line: "result value=V unit=U tasks=N" followed by
 * `extra` (may be NULL; " key=value ..." text) and a newline; flushes. */
void cmp_report(double value, const char *unit, uint64_t tasks, const char *extra);

/* Prints "<worker>: <what>" to stderr and exits with status 1. */
_Noreturn void cmp_fail(const char *worker, const char *what);

/* Points environment variable `var` at a fresh directory under $TMPDIR (or
 * the system's temporary directory) named `stem`-XXXXXX, removed with its
 * contents at exit: a peer's own files (StarPU's bus samples) never land
 * in the user's home. cmp_fail (as `worker`) when it cannot be made. */
void cmp_private_home(const char *var, const char *stem, const char *worker);

/* Monotonic clock, ns. */
uint64_t cmp_now_ns(void);

/* ns per task or GFLOP/s of a measured instance that took `ns`. */
double cmp_value_of(const struct cmp_params *p, uint64_t ns);
const char *cmp_unit_of(const struct cmp_params *p);

/* ---------------------------------------------------------- task bodies */

/* Busy work: `iters` dependent multiply-adds the compiler cannot remove.
 * The driver calibrates iterations per microsecond once and passes the
 * same count to every system. */
static inline uint64_t cmp_busy(uint64_t iters, uint64_t seed)
{
    uint64_t x = seed;
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ __volatile__("" : "+r"(x));
    }
    return x;
}

/* The compiler barrier keeps a serial loop of bodies a loop of bodies
 * (without it GCC folds 100000 inlined increments into one add). */
static inline void cmp_indep_body(struct cmp_cell *c)
{
    c->v += 1;
    __asm__ __volatile__("" : : "r"(c) : "memory");
}
static inline void cmp_chain_body(struct cmp_cell *c) { cmp_indep_body(c); }
static inline void cmp_fan_produce(struct cmp_cell *x) { cmp_indep_body(x); }
static inline uint64_t cmp_fan_consume(uint64_t x, uint32_t c)
{
    return (x * 2654435761ull + c) % 1000003ull;
}
/* y[c].v for c < k */
static inline uint64_t cmp_fan_reduce(const uint64_t *y, uint32_t k)
{
    uint64_t s = 0;
    for (uint32_t c = 0; c < k; c++)
        s += y[c];
    return s % 1000003ull;
}

static inline uint64_t cmp_stencil_init(uint32_t i) { return (i * 7919ull) % 1000003ull; }
static inline uint64_t cmp_stencil_cell(uint64_t l, uint64_t m, uint64_t r, uint32_t t,
                                        uint64_t work)
{
    uint64_t v = (l + 2 * m + r + t) % 1000003ull;
    if (work) {
        uint64_t b = cmp_busy(work, v);
        __asm__ __volatile__("" : : "r"(b));
    }
    return v;
}

/* The expected results, computed serially by the checks below. */
uint64_t cmp_fan_expected(uint64_t rounds, uint32_t k);
/* a[steps % 2] after `steps` steps, into out[width]. */
void cmp_stencil_expected(uint32_t width, uint32_t steps, uint64_t *out);

/* Each returns 0 when the workload's cells hold what they must, or -1
 * after printing the first wrong value to stderr. */
int cmp_check_indep(const struct cmp_cell *cells, uint64_t n);
int cmp_check_chain(const struct cmp_cell *cell, uint64_t n);
int cmp_check_fan(const struct cmp_cell *x, uint64_t rounds, uint32_t k);
/* `final` = a[steps % 2] */
int cmp_check_stencil(const struct cmp_cell *final, uint32_t width, uint32_t steps);

/* ------------------------------------------------------- tiled matrices */

/* Tile (i, j) of an nt x nt tile-major matrix of `tile`-wide tiles. */
static inline double *cmp_tile_at(double *m, uint32_t nt, uint32_t tile, uint32_t i, uint32_t j)
{
    return m + ((size_t)i * nt + j) * (size_t)tile * tile;
}

/* Allocates an n x n tile-major matrix (64-byte aligned); NULL when out of
 * memory. Free with free(). n must be a multiple of tile. */
double *cmp_matrix_alloc(uint32_t n, uint32_t tile);

/* A[i][j] = 1 / (1 + |i - j|) + (i == j ? n : 0): symmetric, diagonally
 * dominant, so positive definite; the whole matrix is filled. */
void cmp_chol_init(double *a, uint32_t n, uint32_t tile);
/* Checks L * L^T against cmp_chol_init's matrix on a fixed sample of
 * entries of the lower triangle (absolute error 1e-11 n^2: rounding is
 * far below it, a missed update far above). 0 or -1. */
int cmp_chol_check(const double *l, uint32_t n, uint32_t tile);

/* A and B from fixed formulas, C zero. */
void cmp_gemm_init(double *a, double *b, double *c, uint32_t n, uint32_t tile);
/* Checks C on a fixed sample of entries against dot products of A and B. */
int cmp_gemm_check(const double *a, const double *b, const double *c, uint32_t n,
                   uint32_t tile);

/* The tile kernels (single-threaded BLAS/LAPACK on column-major tiles). */
int cmp_k_potrf(uint32_t tile, double *akk);               /* 0 or LAPACK info */
void cmp_k_trsm(uint32_t tile, const double *akk, double *aik); /* aik = aik * akk^-T */
void cmp_k_syrk(uint32_t tile, const double *aik, double *aii); /* aii -= aik aik^T */
void cmp_k_gemm_nt(uint32_t tile, const double *aik, const double *ajk,
                   double *aij);                            /* aij -= aik ajk^T */
void cmp_k_gemm_nn(uint32_t tile, const double *a, const double *b,
                   double *c);                              /* c += a b */

/* Which BLAS the process has loaded (the path of the shared object that
 * defines cblas_dgemm), into out[size]; "unknown" when it cannot tell. */
void cmp_blas_name(char *out, size_t size);

#endif /* SIMPLER_BENCH_COMPARE_H */
