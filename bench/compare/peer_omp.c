/*
 * peer_omp.c — the OpenMP worker of the comparison benchmark (compare.h):
 * every workload as OpenMP tasks ordered by `depend` clauses.
 *
 * One source, three workers:
 *
 *   gcc -fopenmp             bench_cmp_gomp    system=libgomp
 *   clang -fopenmp=libomp    bench_cmp_omp     system=libomp
 *   gcc (no -fopenmp)        bench_cmp_serial  system=serial
 *
 * Without _OPENMP the pragmas are ignored, so each "task" runs inline when
 * it is created: the serial baseline runs every task body in program
 * order on one thread, through the same code.
 *
 * Shape of a run: a parallel region of T threads (env CMP_THREADS, else
 * the online CPUs), one thread (omp single) creates every task and waits
 * for them with taskwait. The time is taken inside the single, from just
 * before the first task is created to just after the taskwait; inputs are
 * allocated and initialised before the region, checked after it.
 *
 * Dependencies name the first element of a cell or tile (cells[i], x[0],
 * tile[0]), the same lvalue wherever the cell or tile is named. The fan
 * reducer's k inputs use an OpenMP 5.0 depend iterator, which gcc 12 and
 * clang 14 both accept and honour.
 *
 * chol and gemm call the tile kernels from several threads at once, so the
 * BLAS/LAPACK loaded must be safe for concurrent calls.
 */
#define _POSIX_C_SOURCE 200809L
#include "compare.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#if !defined(_OPENMP)
#define SYSTEM_NAME "serial"
#define WORKER_NAME "bench_cmp_serial"
#elif defined(__clang__)
#define SYSTEM_NAME "libomp"
#define WORKER_NAME "bench_cmp_omp"
#else
#define SYSTEM_NAME "libgomp"
#define WORKER_NAME "bench_cmp_gomp"
#endif

/* The team a workload runs on: the threads asked for, and how many the
 * last parallel region actually had. */
struct team {
    int threads;
    int size;
};

/* ---------------------------------------------------------------- team */

#ifdef _OPENMP
/* Threads to ask for: CMP_THREADS (a positive integer) or the online CPUs.
 * Exits with status 2 on a bad CMP_THREADS. (The serial worker ignores
 * CMP_THREADS: it always runs on one thread.) */
static int threads_wanted(void)
{
    const char *s = getenv("CMP_THREADS");
    if (!s || !*s) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        return cpus > 0 && cpus <= INT_MAX ? (int)cpus : 1;
    }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v <= 0 || v > INT_MAX) {
        fprintf(stderr, "%s: CMP_THREADS must be a positive integer, not '%s'\n", WORKER_NAME, s);
        exit(2);
    }
    return (int)v;
}
#endif

/* Runs spawn(arg) on one thread of a parallel region of tm->threads
 * threads, waits for every task it created, and returns the ns from just
 * before spawn to just after the wait. */
static uint64_t in_team(struct team *tm, void (*spawn)(void *), void *arg)
{
    uint64_t ns = 0;
    int size = 1;
    int threads = tm->threads;
    (void)threads; /* only read by the pragma */
#pragma omp parallel num_threads(threads) shared(ns, size)
#pragma omp single
    {
#ifdef _OPENMP
        size = omp_get_num_threads();
#endif
        uint64_t t0 = cmp_now_ns();
        spawn(arg);
#pragma omp taskwait
        ns = cmp_now_ns() - t0;
    }
    tm->size = size;
    return ns;
}

/* `count` zeroed cells, each on its own 64-byte line. The memset touches
 * every page here, before the timed part (calloc's fresh pages would be
 * faulted in by the first tasks instead). */
static struct cmp_cell *cells_alloc(size_t count)
{
    void *p = NULL;
    if (count == 0 || count > SIZE_MAX / sizeof(struct cmp_cell) ||
        posix_memalign(&p, 64, count * sizeof(struct cmp_cell)) != 0)
        cmp_fail(WORKER_NAME, "out of memory");
    memset(p, 0, count * sizeof(struct cmp_cell));
    return p;
}

static void check_or_fail(int rc, const char *workload)
{
    if (rc != 0) {
        fprintf(stderr, "%s: %s: check failed\n", WORKER_NAME, workload);
        exit(1);
    }
}

/* --------------------------------------------------------- indep, chain */

struct cells_job {
    struct cmp_cell *cells;
    uint64_t n;
};

/* Task i: INOUT cells[i]. */
static void spawn_indep(void *arg)
{
    struct cells_job *job = arg;
    struct cmp_cell *cells = job->cells;
    for (uint64_t i = 0; i < job->n; i++) {
#pragma omp task depend(inout : cells[i]) firstprivate(cells, i)
        cmp_indep_body(&cells[i]);
    }
}

/* Every task: INOUT cells[0]. */
static void spawn_chain(void *arg)
{
    struct cells_job *job = arg;
    struct cmp_cell *cells = job->cells;
    for (uint64_t i = 0; i < job->n; i++) {
#pragma omp task depend(inout : cells[0]) firstprivate(cells)
        cmp_chain_body(&cells[0]);
    }
}

static uint64_t run_indep(const struct cmp_params *p, struct team *tm)
{
    struct cells_job job = {cells_alloc(p->n), p->n};
    uint64_t ns = in_team(tm, spawn_indep, &job);
    if (p->check)
        check_or_fail(cmp_check_indep(job.cells, p->n), p->workload);
    free(job.cells);
    return ns;
}

static uint64_t run_chain(const struct cmp_params *p, struct team *tm)
{
    struct cells_job job = {cells_alloc(1), p->n};
    uint64_t ns = in_team(tm, spawn_chain, &job);
    if (p->check)
        check_or_fail(cmp_check_chain(job.cells, p->n), p->workload);
    free(job.cells);
    return ns;
}

/* ------------------------------------------------------------------ fan */

struct fan_job {
    struct cmp_cell *x;
    struct cmp_cell *y; /* [CMP_FAN_MAX_K] */
    uint64_t rounds;
    uint32_t k;
};

/* The reducer's body: x = cmp_fan_reduce(y[0..k).v). */
static void fan_reduce_body(struct cmp_cell *x, const struct cmp_cell *y, uint32_t k)
{
    uint64_t v[CMP_FAN_MAX_K];
    for (uint32_t c = 0; c < k; c++)
        v[c] = y[c].v;
    x->v = cmp_fan_reduce(v, k);
}

/* Per round: producer INOUT x; consumer c IN x, OUT y[c]; reducer
 * IN y[0..k) (a depend iterator over exactly k cells), INOUT x. (The
 * reducer's INOUT x alone already orders it after the consumers' IN x;
 * the y dependencies are stated anyway, as compare.h defines them.) */
static void spawn_fan(void *arg)
{
    struct fan_job *job = arg;
    struct cmp_cell *x = job->x, *y = job->y;
    uint32_t k = job->k;
    for (uint64_t r = 0; r < job->rounds; r++) {
#pragma omp task depend(inout : x[0]) firstprivate(x)
        cmp_fan_produce(x);
        for (uint32_t c = 0; c < k; c++) {
#pragma omp task depend(in : x[0]) depend(out : y[c]) firstprivate(x, y, c)
            y[c].v = cmp_fan_consume(x->v, c);
        }
#pragma omp task depend(iterator(uint32_t it = 0 : k), in : y[it]) depend(inout : x[0]) \
    firstprivate(x, y, k)
        fan_reduce_body(x, y, k);
    }
}

static uint64_t run_fan(const struct cmp_params *p, struct team *tm)
{
    struct fan_job job = {cells_alloc(1), cells_alloc(CMP_FAN_MAX_K), p->rounds, p->k};
    uint64_t ns = in_team(tm, spawn_fan, &job);
    if (p->check)
        check_or_fail(cmp_check_fan(job.x, p->rounds, p->k), p->workload);
    free(job.x);
    free(job.y);
    return ns;
}

/* -------------------------------------------------------------- stencil */

struct stencil_job {
    struct cmp_cell *a; /* [2][width] */
    uint32_t width;
    uint32_t steps;
    uint64_t work;
};

/* nxt[i] from cur[i-1], cur[i], cur[i+1]; an absent neighbour is 0. */
static void stencil_body(const struct cmp_cell *cur, struct cmp_cell *nxt, uint32_t i,
                         uint32_t width, uint32_t t, uint64_t work)
{
    uint64_t l = i > 0 ? cur[i - 1].v : 0;
    uint64_t r = i + 1 < width ? cur[i + 1].v : 0;
    nxt[i].v = cmp_stencil_cell(l, cur[i].v, r, t, work);
}

/* One cell's task: IN the neighbours that exist, OUT nxt[i]. */
static void spawn_stencil_cell(const struct cmp_cell *cur, struct cmp_cell *nxt, uint32_t i,
                               uint32_t width, uint32_t t, uint64_t work)
{
    int left = i > 0, right = i + 1 < width;
    if (left && right) {
#pragma omp task depend(in : cur[i - 1], cur[i], cur[i + 1]) depend(out : nxt[i]) \
    firstprivate(cur, nxt, i, width, t, work)
        stencil_body(cur, nxt, i, width, t, work);
    } else if (left) {
#pragma omp task depend(in : cur[i - 1], cur[i]) depend(out : nxt[i]) \
    firstprivate(cur, nxt, i, width, t, work)
        stencil_body(cur, nxt, i, width, t, work);
    } else if (right) {
#pragma omp task depend(in : cur[i], cur[i + 1]) depend(out : nxt[i]) \
    firstprivate(cur, nxt, i, width, t, work)
        stencil_body(cur, nxt, i, width, t, work);
    } else {
#pragma omp task depend(in : cur[i]) depend(out : nxt[i]) \
    firstprivate(cur, nxt, i, width, t, work)
        stencil_body(cur, nxt, i, width, t, work);
    }
}

static void spawn_stencil(void *arg)
{
    struct stencil_job *job = arg;
    uint32_t w = job->width;
    for (uint32_t t = 0; t < job->steps; t++) {
        const struct cmp_cell *cur = job->a + (size_t)(t % 2) * w;
        struct cmp_cell *nxt = job->a + (size_t)((t + 1) % 2) * w;
        for (uint32_t i = 0; i < w; i++)
            spawn_stencil_cell(cur, nxt, i, w, t, job->work);
    }
}

static uint64_t run_stencil(const struct cmp_params *p, struct team *tm)
{
    struct stencil_job job = {cells_alloc(2 * (size_t)p->width),
                              p->width, p->steps, p->work};
    for (uint32_t i = 0; i < p->width; i++)
        job.a[i].v = cmp_stencil_init(i);
    uint64_t ns = in_team(tm, spawn_stencil, &job);
    if (p->check)
        check_or_fail(cmp_check_stencil(job.a + (size_t)(p->steps % 2) * p->width, p->width,
                                        p->steps),
                      p->workload);
    free(job.a);
    return ns;
}

/* ------------------------------------------------------------ chol, gemm */

struct tiled_job {
    double *a, *b, *c; /* chol: a only */
    uint32_t nt;
    uint32_t tile;
    int potrf_info; /* chol: the first nonzero potrf info seen, else 0 */
};

static double *matrix_or_fail(uint32_t n, uint32_t tile)
{
    double *m = cmp_matrix_alloc(n, tile);
    if (!m)
        cmp_fail(WORKER_NAME, "out of memory");
    return m;
}

/* potrf(A[k][k]), INOUT A[k][k]; a nonzero info is recorded in *info. */
static void spawn_potrf(double *akk, uint32_t tile, int *info)
{
#pragma omp task depend(inout : akk[0]) firstprivate(akk, tile, info)
    {
        int rc = cmp_k_potrf(tile, akk);
        if (rc != 0) {
#pragma omp atomic write
            *info = rc;
        }
    }
}

/* The updates of step k below the diagonal: trsm of column k, then syrk
 * and gemm of the trailing matrix. */
static void spawn_chol_updates(struct tiled_job *job, uint32_t k)
{
    uint32_t nt = job->nt, tile = job->tile;
    double *akk = cmp_tile_at(job->a, nt, tile, k, k);
    for (uint32_t i = k + 1; i < nt; i++) {
        double *aik = cmp_tile_at(job->a, nt, tile, i, k);
#pragma omp task depend(in : akk[0]) depend(inout : aik[0]) firstprivate(akk, aik, tile)
        cmp_k_trsm(tile, akk, aik);
    }
    for (uint32_t i = k + 1; i < nt; i++) {
        double *aik = cmp_tile_at(job->a, nt, tile, i, k);
        double *aii = cmp_tile_at(job->a, nt, tile, i, i);
#pragma omp task depend(in : aik[0]) depend(inout : aii[0]) firstprivate(aik, aii, tile)
        cmp_k_syrk(tile, aik, aii);
        for (uint32_t j = k + 1; j < i; j++) {
            double *ajk = cmp_tile_at(job->a, nt, tile, j, k);
            double *aij = cmp_tile_at(job->a, nt, tile, i, j);
#pragma omp task depend(in : aik[0], ajk[0]) depend(inout : aij[0]) \
    firstprivate(aik, ajk, aij, tile)
            cmp_k_gemm_nt(tile, aik, ajk, aij);
        }
    }
}

static void spawn_chol(void *arg)
{
    struct tiled_job *job = arg;
    for (uint32_t k = 0; k < job->nt; k++) {
        spawn_potrf(cmp_tile_at(job->a, job->nt, job->tile, k, k), job->tile, &job->potrf_info);
        spawn_chol_updates(job, k);
    }
}

/* C[i][j] += A[i][k] B[k][j]: IN A[i][k], IN B[k][j], INOUT C[i][j]. */
static void spawn_gemm(void *arg)
{
    struct tiled_job *job = arg;
    uint32_t nt = job->nt, tile = job->tile;
    for (uint32_t i = 0; i < nt; i++)
        for (uint32_t j = 0; j < nt; j++)
            for (uint32_t k = 0; k < nt; k++) {
                double *aik = cmp_tile_at(job->a, nt, tile, i, k);
                double *bkj = cmp_tile_at(job->b, nt, tile, k, j);
                double *cij = cmp_tile_at(job->c, nt, tile, i, j);
#pragma omp task depend(in : aik[0], bkj[0]) depend(inout : cij[0]) \
    firstprivate(aik, bkj, cij, tile)
                cmp_k_gemm_nn(tile, aik, bkj, cij);
            }
}

static uint64_t run_chol(const struct cmp_params *p, struct team *tm)
{
    uint32_t n = (uint32_t)p->n, tile = p->tile;
    struct tiled_job job = {matrix_or_fail(n, tile), NULL, NULL, n / tile, tile, 0};
    cmp_chol_init(job.a, n, tile);
    uint64_t ns = in_team(tm, spawn_chol, &job);
    if (job.potrf_info != 0) {
        fprintf(stderr, "%s: chol: potrf failed (info %d)\n", WORKER_NAME, job.potrf_info);
        exit(1);
    }
    if (p->check)
        check_or_fail(cmp_chol_check(job.a, n, tile), p->workload);
    free(job.a);
    return ns;
}

static uint64_t run_gemm(const struct cmp_params *p, struct team *tm)
{
    uint32_t n = (uint32_t)p->n, tile = p->tile;
    struct tiled_job job = {matrix_or_fail(n, tile), matrix_or_fail(n, tile),
                            matrix_or_fail(n, tile), n / tile, tile, 0};
    cmp_gemm_init(job.a, job.b, job.c, n, tile);
    uint64_t ns = in_team(tm, spawn_gemm, &job);
    if (p->check)
        check_or_fail(cmp_gemm_check(job.a, job.b, job.c, n, tile), p->workload);
    free(job.a);
    free(job.b);
    free(job.c);
    return ns;
}

/* ----------------------------------------------------------------- main */

struct workload {
    const char *name;
    uint64_t (*run)(const struct cmp_params *p, struct team *tm); /* measured ns */
};

static const struct workload k_workloads[] = {
    {"indep", run_indep},     {"chain", run_chain}, {"fan", run_fan},
    {"stencil", run_stencil}, {"chol", run_chol},   {"gemm", run_gemm},
};
#define N_WORKLOADS (sizeof k_workloads / sizeof k_workloads[0])

static const struct workload *workload_named(const char *name)
{
    for (size_t i = 0; i < N_WORKLOADS; i++)
        if (strcmp(name, k_workloads[i].name) == 0)
            return &k_workloads[i];
    return NULL;
}

/* " system=S threads=T[ blas=PATH]" into out[size]. */
static void describe(const struct cmp_params *p, const struct team *tm, char *out, size_t size)
{
    int n = snprintf(out, size, " system=%s threads=%d", SYSTEM_NAME, tm->size);
    if (n < 0 || (size_t)n >= size)
        return;
    if (!strcmp(p->workload, "chol") || !strcmp(p->workload, "gemm")) {
        char blas[4096];
        cmp_blas_name(blas, sizeof blas);
        snprintf(out + n, size - (size_t)n, " blas=%s", blas);
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < N_WORKLOADS; i++)
            puts(k_workloads[i].name);
        return 0;
    }
    struct cmp_params p;
    if (cmp_parse(argc, argv, &p) != 0)
        return 2;
    const struct workload *w = workload_named(p.workload);
    if (!w) {
        puts("unsupported");
        return CMP_EXIT_UNSUPPORTED;
    }
#ifdef _OPENMP
    struct team tm = {threads_wanted(), 0};
#else
    struct team tm = {1, 1};
#endif
    if (p.warmup) {
        struct cmp_params warm = cmp_warmup_of(&p);
        w->run(&warm, &tm);
    }
    uint64_t ns = w->run(&p, &tm);
    char extra[4096 + 128];
    describe(&p, &tm, extra, sizeof extra);
    cmp_report(cmp_value_of(&p, ns), cmp_unit_of(&p), cmp_task_count(&p), extra);
    return 0;
}
