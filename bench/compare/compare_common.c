/*
 * compare_common.c — parameters, result line, checks and tile kernels
 * shared by every worker of the comparison benchmark (compare.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "compare.h"

#include <cblas.h>
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t cmp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

_Noreturn void cmp_fail(const char *worker, const char *what)
{
    fprintf(stderr, "%s: %s\n", worker, what);
    exit(1);
}

static const char *const k_workloads[] = {"indep", "chain", "fan",  "stencil",
                                             "chol",  "gemm",  "pressure", "pipeline"};

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

int cmp_parse(int argc, char **argv, struct cmp_params *p)
{
    memset(p, 0, sizeof *p);
    p->n = 100000;
    p->rounds = 10000;
    p->k = 8;
    p->width = 64;
    p->steps = 1000;
    p->tile = 128;
    p->window = 16;
    p->depth = 4;
    p->warmup = 1;
    if (argc < 2) {
        fprintf(stderr, "usage: %s WORKLOAD [key=value ...] | --list\n", argv[0]);
        return -1;
    }
    for (size_t i = 0; i < sizeof k_workloads / sizeof *k_workloads; i++)
        if (strcmp(argv[1], k_workloads[i]) == 0)
            p->workload = k_workloads[i];
    if (!p->workload) {
        fprintf(stderr, "%s: unknown workload '%s'\n", argv[0], argv[1]);
        return -1;
    }
    int n_given = 0;
    for (int i = 2; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        uint64_t v;
        if (!eq || parse_u64(eq + 1, &v) != 0) {
            fprintf(stderr, "%s: bad argument '%s' (key=unsigned integer)\n", argv[0], argv[i]);
            return -1;
        }
        size_t kl = (size_t)(eq - argv[i]);
#define KEY(name) (kl == strlen(name) && strncmp(argv[i], name, kl) == 0)
        if (KEY("n")) {
            p->n = v;
            n_given = 1;
        } else if (KEY("rounds")) {
            p->rounds = v;
        } else if (KEY("k") && v <= UINT32_MAX) {
            p->k = (uint32_t)v;
        } else if (KEY("width") && v <= UINT32_MAX) {
            p->width = (uint32_t)v;
        } else if (KEY("steps") && v <= UINT32_MAX) {
            p->steps = (uint32_t)v;
        } else if (KEY("work")) {
            p->work = v;
        } else if (KEY("tile") && v <= UINT32_MAX) {
            p->tile = (uint32_t)v;
        } else if (KEY("window") && v >= 4 && v <= (1u << 20) && !(v & (v - 1))) {
            p->window = (uint32_t)v;
        } else if (KEY("depth") && v >= 1 && v <= 16) {
            p->depth = (uint32_t)v;
        } else if (KEY("check")) {
            p->check = v != 0;
        } else if (KEY("warmup")) {
            p->warmup = v != 0;
        } else {
            fprintf(stderr, "%s: unknown or out-of-range key in '%s'\n", argv[0], argv[i]);
            return -1;
        }
#undef KEY
    }
    int chol = !strcmp(p->workload, "chol") || !strcmp(p->workload, "gemm");
    if (chol && !n_given)
        p->n = 2048;
    if (!strcmp(p->workload, "pipeline") && !n_given)
        p->n = 2000;
    if (p->n == 0 || p->rounds == 0 || p->k == 0 || p->k > CMP_FAN_MAX_K || p->width == 0 ||
        p->steps == 0 || p->tile == 0) {
        fprintf(stderr, "%s: n, rounds, width, steps, tile must be > 0 and 0 < k <= %d\n",
                argv[0], CMP_FAN_MAX_K);
        return -1;
    }
    if (chol && (p->n % p->tile != 0 || p->n > 65536)) {
        fprintf(stderr, "%s: n must be a multiple of tile and at most 65536\n", argv[0]);
        return -1;
    }
    return 0;
}

struct cmp_params cmp_warmup_of(const struct cmp_params *p)
{
    struct cmp_params w = *p;
    w.check = 0;
    if (!strcmp(p->workload, "chol") || !strcmp(p->workload, "gemm")) {
        uint64_t n = p->n / 4 / p->tile * p->tile;
        w.n = n ? n : p->tile;
        return w;
    }
    w.n = p->n / 10 ? p->n / 10 : 1;
    w.rounds = p->rounds / 10 ? p->rounds / 10 : 1;
    w.steps = p->steps / 10 ? p->steps / 10 : 1;
    return w;
}

uint64_t cmp_task_count(const struct cmp_params *p)
{
    const char *w = p->workload;
    if (!strcmp(w, "indep") || !strcmp(w, "chain"))
        return p->n;
    if (!strcmp(w, "fan"))
        return p->rounds * (p->k + 2);
    if (!strcmp(w, "stencil"))
        return (uint64_t)p->width * p->steps;
    if (!strcmp(w, "pressure"))
        return 2 * p->n;
    if (!strcmp(w, "pipeline"))
        return p->n;
    uint64_t nt = p->n / p->tile;
    if (!strcmp(w, "gemm"))
        return nt * nt * nt;
    /* chol: potrf nt, trsm and syrk nt(nt-1)/2 each, gemm C(nt, 3) */
    return nt + nt * (nt - 1) + nt * (nt - 1) * (nt - 2) / 6;
}

const char *cmp_unit_of(const struct cmp_params *p)
{
    if (!strcmp(p->workload, "pipeline"))
        return "us/run";
    return (!strcmp(p->workload, "chol") || !strcmp(p->workload, "gemm")) ? "GFLOP/s"
                                                                           : "ns/task";
}

double cmp_value_of(const struct cmp_params *p, uint64_t ns)
{
    double n = (double)p->n;
    if (ns == 0)
        ns = 1;
    if (!strcmp(p->workload, "chol"))
        return n * n * n / 3.0 / (double)ns;
    if (!strcmp(p->workload, "gemm"))
        return 2.0 * n * n * n / (double)ns;
    if (!strcmp(p->workload, "pipeline"))
        return (double)ns / 1000.0 / n;
    return (double)ns / (double)cmp_task_count(p);
}

void cmp_report(double value, const char *unit, uint64_t tasks, const char *extra)
{
    printf("result value=%.6g unit=%s tasks=%llu%s\n", value, unit, (unsigned long long)tasks,
           extra ? extra : "");
    fflush(stdout);
}

/* ----------------------------------------------------------------- checks */

uint64_t cmp_fan_expected(uint64_t rounds, uint32_t k)
{
    uint64_t x = 0, y[CMP_FAN_MAX_K];
    for (uint64_t r = 0; r < rounds; r++) {
        x += 1;
        for (uint32_t c = 0; c < k; c++)
            y[c] = cmp_fan_consume(x, c);
        x = cmp_fan_reduce(y, k);
    }
    return x;
}

void cmp_stencil_expected(uint32_t width, uint32_t steps, uint64_t *out)
{
    uint64_t *a = malloc(2 * (size_t)width * sizeof *a);
    if (!a)
        cmp_fail("compare", "out of memory");
    for (uint32_t i = 0; i < width; i++)
        a[i] = cmp_stencil_init(i);
    for (uint32_t t = 0; t < steps; t++) {
        const uint64_t *cur = a + (size_t)(t % 2) * width;
        uint64_t *nxt = a + (size_t)((t + 1) % 2) * width;
        for (uint32_t i = 0; i < width; i++) {
            uint64_t l = i ? cur[i - 1] : 0, r = i + 1 < width ? cur[i + 1] : 0;
            nxt[i] = cmp_stencil_cell(l, cur[i], r, t, 0);
        }
    }
    memcpy(out, a + (size_t)(steps % 2) * width, (size_t)width * sizeof *out);
    free(a);
}

int cmp_check_indep(const struct cmp_cell *cells, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (cells[i].v != 1) {
            fprintf(stderr, "indep: cell %llu is %llu, want 1 (a task lost or run twice)\n",
                    (unsigned long long)i, (unsigned long long)cells[i].v);
            return -1;
        }
    return 0;
}

int cmp_check_chain(const struct cmp_cell *cell, uint64_t n)
{
    if (cell->v == n)
        return 0;
    fprintf(stderr, "chain: cell is %llu, want %llu (an increment lost: order broken)\n",
            (unsigned long long)cell->v, (unsigned long long)n);
    return -1;
}

int cmp_check_fan(const struct cmp_cell *x, uint64_t rounds, uint32_t k)
{
    uint64_t want = cmp_fan_expected(rounds, k);
    if (x->v == want)
        return 0;
    fprintf(stderr, "fan: x is %llu, want %llu (a dependency was not honoured)\n",
            (unsigned long long)x->v, (unsigned long long)want);
    return -1;
}

int cmp_check_stencil(const struct cmp_cell *final, uint32_t width, uint32_t steps)
{
    uint64_t *want = malloc((size_t)width * sizeof *want);
    if (!want)
        cmp_fail("compare", "out of memory");
    int rc = 0;
    cmp_stencil_expected(width, steps, want);
    for (uint32_t i = 0; i < width; i++)
        if (final[i].v != want[i]) {
            fprintf(stderr, "stencil: cell %u is %llu, want %llu (a dependency was not honoured)\n",
                    i, (unsigned long long)final[i].v, (unsigned long long)want[i]);
            rc = -1;
            break;
        }
    free(want);
    return rc;
}

/* ------------------------------------------------------- tiled matrices */

double *cmp_matrix_alloc(uint32_t n, uint32_t tile)
{
    if (n % tile)
        return NULL;
    void *p = NULL;
    size_t bytes = (size_t)n * n * sizeof(double);
    if (posix_memalign(&p, 64, bytes) != 0)
        return NULL;
    return p;
}

/* Element (r, c) of a tile-major matrix. */
static inline size_t elem_index(uint32_t n, uint32_t tile, uint32_t r, uint32_t c)
{
    uint32_t nt = n / tile;
    size_t t = ((size_t)(r / tile) * nt + c / tile) * (size_t)tile * tile;
    return t + (size_t)(c % tile) * tile + r % tile;
}

static double chol_entry(uint32_t n, uint32_t r, uint32_t c)
{
    uint32_t d = r > c ? r - c : c - r;
    return 1.0 / (1.0 + d) + (r == c ? (double)n : 0.0);
}

void cmp_chol_init(double *a, uint32_t n, uint32_t tile)
{
    for (uint32_t c = 0; c < n; c++)
        for (uint32_t r = 0; r < n; r++)
            a[elem_index(n, tile, r, c)] = chol_entry(n, r, c);
}

/* A fixed pseudo-random sample of (row, col) pairs. */
static void sample_entry(uint32_t n, uint32_t s, uint32_t *r, uint32_t *c)
{
    uint64_t x = (s + 1) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    *r = (uint32_t)(x % n);
    *c = (uint32_t)((x >> 32) % n);
    if (s == 0)
        *r = *c = n - 1; /* the last pivot depends on everything */
}

#define CHECK_SAMPLES 256

int cmp_chol_check(const double *l, uint32_t n, uint32_t tile)
{
    for (uint32_t s = 0; s < CHECK_SAMPLES; s++) {
        uint32_t r, c;
        sample_entry(n, s, &r, &c);
        if (r < c) {
            uint32_t t = r;
            r = c;
            c = t;
        }
        double sum = 0;
        for (uint32_t k = 0; k <= c; k++)
            sum += l[elem_index(n, tile, r, k)] * l[elem_index(n, tile, c, k)];
        double want = chol_entry(n, r, c);
        if (!(fabs(sum - want) <= 1e-11 * (double)n * (double)n)) {
            fprintf(stderr, "chol: (L L^T)[%u][%u] = %.17g, want %.17g\n", r, c, sum, want);
            return -1;
        }
    }
    return 0;
}

static double gemm_a(uint32_t r, uint32_t c) { return (double)((r * 3 + c * 5) % 17) - 8.0; }
static double gemm_b(uint32_t r, uint32_t c) { return (double)((r * 7 + c * 2) % 13) - 6.0; }

void cmp_gemm_init(double *a, double *b, double *c, uint32_t n, uint32_t tile)
{
    for (uint32_t col = 0; col < n; col++)
        for (uint32_t r = 0; r < n; r++) {
            size_t i = elem_index(n, tile, r, col);
            a[i] = gemm_a(r, col);
            b[i] = gemm_b(r, col);
            c[i] = 0;
        }
}

int cmp_gemm_check(const double *a, const double *b, const double *c, uint32_t n,
                   uint32_t tile)
{
    for (uint32_t s = 0; s < CHECK_SAMPLES; s++) {
        uint32_t r, col;
        sample_entry(n, s, &r, &col);
        double sum = 0;
        for (uint32_t k = 0; k < n; k++)
            sum += a[elem_index(n, tile, r, k)] * b[elem_index(n, tile, k, col)];
        double got = c[elem_index(n, tile, r, col)];
        if (got != sum) { /* small integers: exact in double */
            fprintf(stderr, "gemm: C[%u][%u] = %.17g, want %.17g\n", r, col, got, sum);
            return -1;
        }
    }
    return 0;
}

int cmp_k_potrf(uint32_t tile, double *akk)
{
    return LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)tile, akk, (lapack_int)tile);
}

void cmp_k_trsm(uint32_t tile, const double *akk, double *aik)
{
    int t = (int)tile;
    cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, t, t, 1.0, akk,
                t, aik, t);
}

void cmp_k_syrk(uint32_t tile, const double *aik, double *aii)
{
    int t = (int)tile;
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, t, t, -1.0, aik, t, 1.0, aii, t);
}

void cmp_k_gemm_nt(uint32_t tile, const double *aik, const double *ajk, double *aij)
{
    int t = (int)tile;
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, t, t, t, -1.0, aik, t, ajk, t, 1.0, aij,
                t);
}

void cmp_k_gemm_nn(uint32_t tile, const double *a, const double *b, double *c)
{
    int t = (int)tile;
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, t, t, t, 1.0, a, t, b, t, 1.0, c, t);
}

void cmp_blas_name(char *out, size_t size)
{
    Dl_info info;
    void *sym = dlsym(RTLD_DEFAULT, "cblas_dgemm");
    if (sym && dladdr(sym, &info) && info.dli_fname) {
        char resolved[4096];
        const char *name = realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
        snprintf(out, size, "%s", name);
        return;
    }
    snprintf(out, size, "unknown");
}

/* ------------------------------------------------------- private home */

static char g_home[128]; /* cmp_private_home's directory, "" when none */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_home(void)
{
    if (g_home[0])
        nftw(g_home, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    g_home[0] = '\0';
}

void cmp_private_home(const char *var, const char *stem, const char *worker)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(g_home, sizeof g_home, "%s/%s-XXXXXX",
             tmp && *tmp && strlen(tmp) < 80 ? tmp : P_tmpdir, stem);
    if (!mkdtemp(g_home)) {
        g_home[0] = '\0';
        cmp_fail(worker, "cannot create a temporary home directory");
    }
    atexit(remove_home);
    setenv(var, g_home, 1);
}
