/*
 * peer_starpu.c — the StarPU 1.3 worker of the comparison benchmark
 * (compare.h). Every cell and every tile is a StarPU data handle; tasks are
 * submitted with starpu_task_insert() and R / W / RW access modes, and
 * StarPU infers the order from them (sequential consistency), as the other
 * systems infer it from their IN / OUT / INOUT declarations.
 *
 * CPU workers only: CMP_THREADS of them, else one per online CPU. The
 * scheduler is StarPU's default unless STARPU_SCHED names another; the
 * result line reports the one that ran. StarPU runs silent (STARPU_SILENT)
 * and leaves no files behind: codelets have no performance model, and
 * STARPU_HOME points at a fresh temporary directory, removed at exit, for
 * what starpu_init() insists on writing (its bus sampling files).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "compare.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starpu.h>

#define WORKER "starpu"

/* ------------------------------------------------------ process set-up */

/*
 * CMP_THREADS, else the online CPUs; 0 when CMP_THREADS is malformed or
 * above STARPU_MAXCPUS, the most CPU workers this StarPU build supports
 * (Debian's: 4). The online CPUs are capped at it; the result line says
 * how many workers ran.
 */
static int thread_count(void)
{
    const char *s = getenv("CMP_THREADS");
    if (!s) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n < 1 ? 1 : n > STARPU_MAXCPUS ? STARPU_MAXCPUS : (int)n;
    }
    char *end;
    long n = strtol(s, &end, 10);
    return (end != s && !*end && n > 0 && n <= STARPU_MAXCPUS) ? (int)n : 0;
}

static void start_starpu(int threads)
{
    struct starpu_conf conf;
    setenv("STARPU_SILENT", "1", 1);
    cmp_private_home("STARPU_HOME", "cmp-starpu", WORKER);
    starpu_conf_init(&conf); /* takes STARPU_SCHED, if set, as the policy */
    conf.ncpus = threads;
    conf.ncuda = 0;
    conf.nopencl = 0;
    conf.nmic = 0;
    conf.nmpi_ms = 0;
    if (starpu_init(&conf) != 0)
        cmp_fail(WORKER, "starpu_init failed");
}

/* Shuts StarPU down, then fails (exit status 1). */
static _Noreturn void fail(const char *what)
{
    starpu_shutdown();
    cmp_fail(WORKER, what);
}

static void check_submit(int rc)
{
    if (rc != 0)
        cmp_fail(WORKER, "starpu_task_insert failed");
}

/* Times the submission of a workload's tasks through their completion. */
static uint64_t timed(void (*submit)(void *), void *ctx)
{
    uint64_t t0 = cmp_now_ns();
    submit(ctx);
    starpu_task_wait_for_all();
    return cmp_now_ns() - t0;
}

/* ------------------------------------------------------------- codelets */

static struct cmp_cell *cell_of(void *buf)
{
    return (struct cmp_cell *)STARPU_VARIABLE_GET_PTR(buf);
}

static double *tile_of(void *buf) { return (double *)STARPU_MATRIX_GET_PTR(buf); }
static uint32_t tile_size(void *buf) { return STARPU_MATRIX_GET_NX(buf); }

static void indep_cpu(void *buffers[], void *arg)
{
    (void)arg;
    cmp_indep_body(cell_of(buffers[0]));
}

static void chain_cpu(void *buffers[], void *arg)
{
    (void)arg;
    cmp_chain_body(cell_of(buffers[0]));
}

static void produce_cpu(void *buffers[], void *arg)
{
    (void)arg;
    cmp_fan_produce(cell_of(buffers[0]));
}

/* buffers: x (R), y[c] (W); value: c */
static void consume_cpu(void *buffers[], void *arg)
{
    uint32_t c;
    starpu_codelet_unpack_args(arg, &c);
    cell_of(buffers[1])->v = cmp_fan_consume(cell_of(buffers[0])->v, c);
}

/* buffers: y[0..k) (R), x (RW) */
static void reduce_cpu(void *buffers[], void *arg)
{
    (void)arg;
    uint32_t k = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current()) - 1;
    uint64_t y[CMP_FAN_MAX_K];
    for (uint32_t c = 0; c < k; c++)
        y[c] = cell_of(buffers[c])->v;
    cell_of(buffers[k])->v = cmp_fan_reduce(y, k);
}

struct stencil_arg {
    uint64_t work;
    uint32_t t;
    uint8_t left, right; /* whether the neighbour exists (and is a buffer) */
};

/* buffers: [l (R)] m (R) [r (R)] out (W) */
static void stencil_cpu(void *buffers[], void *arg)
{
    struct stencil_arg a;
    starpu_codelet_unpack_args(arg, &a);
    unsigned b = 0;
    uint64_t l = a.left ? cell_of(buffers[b++])->v : 0;
    uint64_t m = cell_of(buffers[b++])->v;
    uint64_t r = a.right ? cell_of(buffers[b++])->v : 0;
    cell_of(buffers[b])->v = cmp_stencil_cell(l, m, r, a.t, a.work);
}

static atomic_int g_potrf_failed;

static void potrf_cpu(void *buffers[], void *arg)
{
    (void)arg;
    if (cmp_k_potrf(tile_size(buffers[0]), tile_of(buffers[0])) != 0)
        atomic_store(&g_potrf_failed, 1);
}

static void trsm_cpu(void *buffers[], void *arg)
{
    (void)arg;
    cmp_k_trsm(tile_size(buffers[0]), tile_of(buffers[0]), tile_of(buffers[1]));
}

static void syrk_cpu(void *buffers[], void *arg)
{
    (void)arg;
    cmp_k_syrk(tile_size(buffers[0]), tile_of(buffers[0]), tile_of(buffers[1]));
}

static void gemm_nt_cpu(void *buffers[], void *arg)
{
    (void)arg;
    cmp_k_gemm_nt(tile_size(buffers[0]), tile_of(buffers[0]), tile_of(buffers[1]),
                  tile_of(buffers[2]));
}

static void gemm_nn_cpu(void *buffers[], void *arg)
{
    (void)arg;
    cmp_k_gemm_nn(tile_size(buffers[0]), tile_of(buffers[0]), tile_of(buffers[1]),
                  tile_of(buffers[2]));
}

/* No performance models: nothing to calibrate, nothing written. */
#define CODELET(fn, n, ...)                                                                     \
    {                                                                                          \
        .where = STARPU_CPU, .cpu_funcs = {fn}, .nbuffers = (n), .modes = {__VA_ARGS__},       \
        .name = #fn                                                                            \
    }

static struct starpu_codelet cl_indep = CODELET(indep_cpu, 1, STARPU_RW);
static struct starpu_codelet cl_chain = CODELET(chain_cpu, 1, STARPU_RW);
static struct starpu_codelet cl_produce = CODELET(produce_cpu, 1, STARPU_RW);
static struct starpu_codelet cl_consume = CODELET(consume_cpu, 2, STARPU_R, STARPU_W);
/* k + 1 buffers, up to 17 > STARPU_NMAXBUFS: modes come with the task */
static struct starpu_codelet cl_reduce = CODELET(reduce_cpu, STARPU_VARIABLE_NBUFFERS, 0);
static struct starpu_codelet cl_stencil3 =
    CODELET(stencil_cpu, 4, STARPU_R, STARPU_R, STARPU_R, STARPU_W);
static struct starpu_codelet cl_stencil2 = CODELET(stencil_cpu, 3, STARPU_R, STARPU_R, STARPU_W);
static struct starpu_codelet cl_stencil1 = CODELET(stencil_cpu, 2, STARPU_R, STARPU_W);
static struct starpu_codelet cl_potrf = CODELET(potrf_cpu, 1, STARPU_RW);
static struct starpu_codelet cl_trsm = CODELET(trsm_cpu, 2, STARPU_R, STARPU_RW);
static struct starpu_codelet cl_syrk = CODELET(syrk_cpu, 2, STARPU_R, STARPU_RW);
static struct starpu_codelet cl_gemm_nt = CODELET(gemm_nt_cpu, 3, STARPU_R, STARPU_R, STARPU_RW);
static struct starpu_codelet cl_gemm_nn = CODELET(gemm_nn_cpu, 3, STARPU_R, STARPU_R, STARPU_RW);

/* ---------------------------------------------------------------- cells */

/*
 * (Un)registration is untimed and costs a few microseconds per handle
 * (mostly allocating and faulting in StarPU's handle state); the register
 * and unregister helpers pause the workers meanwhile (starpu_pause), so
 * idle workers polling for tasks do not compete with it for the CPUs. No
 * task is pending then; starpu_resume() runs before the timed part.
 */

struct cells {
    struct cmp_cell *v;
    starpu_data_handle_t *h;
    size_t n;
};

/* n zeroed cells, each registered as a variable. */
static void cells_register(struct cells *c, size_t n)
{
    c->n = n;
    c->v = aligned_alloc(64, n * sizeof *c->v);
    c->h = malloc(n * sizeof *c->h);
    if (!c->v || !c->h)
        cmp_fail(WORKER, "out of memory");
    memset(c->v, 0, n * sizeof *c->v);
    starpu_pause();
    for (size_t i = 0; i < n; i++)
        starpu_variable_data_register(&c->h[i], STARPU_MAIN_RAM, (uintptr_t)&c->v[i],
                                      sizeof c->v[i]);
    starpu_resume();
}

/* Unregisters (the host copies are current afterwards). */
static void cells_unregister(struct cells *c)
{
    starpu_pause();
    for (size_t i = 0; i < c->n; i++)
        starpu_data_unregister(c->h[i]);
    starpu_resume();
}

static void cells_free(struct cells *c)
{
    free(c->v);
    free(c->h);
}

/* ------------------------------------------------ indep, chain and fan */

struct cell_run {
    const struct cmp_params *p;
    struct cells c;
};

static void submit_indep(void *ctx)
{
    struct cell_run *r = ctx;
    for (uint64_t i = 0; i < r->p->n; i++)
        check_submit(starpu_task_insert(&cl_indep, STARPU_RW, r->c.h[i], 0));
}

static void submit_chain(void *ctx)
{
    struct cell_run *r = ctx;
    for (uint64_t i = 0; i < r->p->n; i++)
        check_submit(starpu_task_insert(&cl_chain, STARPU_RW, r->c.h[0], 0));
}

/* cells: x = h[0], y[c] = h[1 + c] */
static void submit_fan(void *ctx)
{
    struct cell_run *r = ctx;
    uint32_t k = r->p->k;
    starpu_data_handle_t x = r->c.h[0];
    struct starpu_data_descr red[CMP_FAN_MAX_K + 1];
    for (uint32_t c = 0; c < k; c++)
        red[c] = (struct starpu_data_descr){r->c.h[1 + c], STARPU_R};
    red[k] = (struct starpu_data_descr){x, STARPU_RW};
    for (uint64_t round = 0; round < r->p->rounds; round++) {
        check_submit(starpu_task_insert(&cl_produce, STARPU_RW, x, 0));
        for (uint32_t c = 0; c < k; c++)
            check_submit(starpu_task_insert(&cl_consume, STARPU_R, x, STARPU_W, r->c.h[1 + c],
                                            STARPU_VALUE, &c, sizeof c, 0));
        check_submit(starpu_task_insert(&cl_reduce, STARPU_DATA_MODE_ARRAY, red, (int)k + 1, 0));
    }
}

static int check_cells(const struct cmp_params *p, const struct cells *c)
{
    if (!strcmp(p->workload, "indep"))
        return cmp_check_indep(c->v, p->n);
    if (!strcmp(p->workload, "chain"))
        return cmp_check_chain(&c->v[0], p->n);
    return cmp_check_fan(&c->v[0], p->rounds, p->k);
}

/* indep (n cells), chain (1 cell), fan (1 + k cells). */
static uint64_t run_cells(const struct cmp_params *p)
{
    struct cell_run r = {.p = p};
    int indep = !strcmp(p->workload, "indep"), chain = !strcmp(p->workload, "chain");
    cells_register(&r.c, indep ? p->n : chain ? 1 : 1 + (size_t)p->k);
    uint64_t ns = timed(indep ? submit_indep : chain ? submit_chain : submit_fan, &r);
    cells_unregister(&r.c);
    if (p->check && check_cells(p, &r.c) != 0)
        fail("check failed");
    cells_free(&r.c);
    return ns;
}

/* -------------------------------------------------------------- stencil */

struct stencil_run {
    const struct cmp_params *p;
    struct cells c; /* a[b][i] = c[b * width + i] */
};

static void submit_stencil_cell(const struct stencil_run *s, uint32_t t, uint32_t i)
{
    uint32_t w = s->p->width;
    starpu_data_handle_t *cur = s->c.h + (size_t)(t % 2) * w;
    starpu_data_handle_t out = s->c.h[(size_t)((t + 1) % 2) * w + i];
    struct stencil_arg a = {.work = s->p->work, .t = t, .left = i > 0, .right = i + 1 < w};
    int rc;
    if (a.left && a.right)
        rc = starpu_task_insert(&cl_stencil3, STARPU_R, cur[i - 1], STARPU_R, cur[i], STARPU_R,
                                cur[i + 1], STARPU_W, out, STARPU_VALUE, &a, sizeof a, 0);
    else if (a.left || a.right)
        rc = starpu_task_insert(&cl_stencil2, STARPU_R, cur[a.left ? i - 1 : i], STARPU_R,
                                cur[a.left ? i : i + 1], STARPU_W, out, STARPU_VALUE, &a,
                                sizeof a, 0);
    else
        rc = starpu_task_insert(&cl_stencil1, STARPU_R, cur[i], STARPU_W, out, STARPU_VALUE, &a,
                                sizeof a, 0);
    check_submit(rc);
}

static void submit_stencil(void *ctx)
{
    const struct stencil_run *s = ctx;
    for (uint32_t t = 0; t < s->p->steps; t++)
        for (uint32_t i = 0; i < s->p->width; i++)
            submit_stencil_cell(s, t, i);
}

static uint64_t run_stencil(const struct cmp_params *p)
{
    struct stencil_run s = {.p = p};
    uint32_t w = p->width;
    cells_register(&s.c, 2 * (size_t)w);
    for (uint32_t i = 0; i < w; i++)
        s.c.v[i].v = cmp_stencil_init(i); /* before any task: no acquire needed */
    uint64_t ns = timed(submit_stencil, &s);
    cells_unregister(&s.c);
    if (p->check && cmp_check_stencil(s.c.v + (size_t)(p->steps % 2) * w, w, p->steps) != 0)
        fail("check failed");
    cells_free(&s.c);
    return ns;
}

/* ------------------------------------------------------- tiled matrices */

struct tiled {
    double *m;
    starpu_data_handle_t *h; /* tile (i, j) = h[i * nt + j] */
    uint32_t nt, tile;
};

static void tiled_alloc(struct tiled *a, uint32_t n, uint32_t tile)
{
    a->nt = n / tile;
    a->tile = tile;
    a->m = cmp_matrix_alloc(n, tile);
    a->h = malloc((size_t)a->nt * a->nt * sizeof *a->h);
    if (!a->m || !a->h)
        cmp_fail(WORKER, "out of memory");
}

/* Registers every tile as a tile x tile column-major matrix. */
static void tiled_register(struct tiled *a)
{
    starpu_pause();
    for (uint32_t i = 0; i < a->nt; i++)
        for (uint32_t j = 0; j < a->nt; j++)
            starpu_matrix_data_register(&a->h[(size_t)i * a->nt + j], STARPU_MAIN_RAM,
                                        (uintptr_t)cmp_tile_at(a->m, a->nt, a->tile, i, j),
                                        a->tile, a->tile, a->tile, sizeof(double));
    starpu_resume();
}

static void tiled_unregister(struct tiled *a)
{
    starpu_pause();
    for (size_t i = 0; i < (size_t)a->nt * a->nt; i++)
        starpu_data_unregister(a->h[i]);
    starpu_resume();
}

static void tiled_free(struct tiled *a)
{
    free(a->m);
    free(a->h);
}

static starpu_data_handle_t tile_h(const struct tiled *a, uint32_t i, uint32_t j)
{
    return a->h[(size_t)i * a->nt + j];
}

/* ----------------------------------------------------------------- chol */

static void submit_chol_step(const struct tiled *a, uint32_t k)
{
    check_submit(starpu_task_insert(&cl_potrf, STARPU_RW, tile_h(a, k, k), 0));
    for (uint32_t i = k + 1; i < a->nt; i++)
        check_submit(starpu_task_insert(&cl_trsm, STARPU_R, tile_h(a, k, k), STARPU_RW,
                                        tile_h(a, i, k), 0));
    for (uint32_t i = k + 1; i < a->nt; i++) {
        check_submit(starpu_task_insert(&cl_syrk, STARPU_R, tile_h(a, i, k), STARPU_RW,
                                        tile_h(a, i, i), 0));
        for (uint32_t j = k + 1; j < i; j++)
            check_submit(starpu_task_insert(&cl_gemm_nt, STARPU_R, tile_h(a, i, k), STARPU_R,
                                            tile_h(a, j, k), STARPU_RW, tile_h(a, i, j), 0));
    }
}

static void submit_chol(void *ctx)
{
    const struct tiled *a = ctx;
    for (uint32_t k = 0; k < a->nt; k++)
        submit_chol_step(a, k);
}

static uint64_t run_chol(const struct cmp_params *p)
{
    struct tiled a;
    uint32_t n = (uint32_t)p->n;
    tiled_alloc(&a, n, p->tile);
    cmp_chol_init(a.m, n, p->tile);
    tiled_register(&a);
    atomic_store(&g_potrf_failed, 0);
    uint64_t ns = timed(submit_chol, &a);
    tiled_unregister(&a);
    if (atomic_load(&g_potrf_failed))
        fail("potrf failed (matrix not positive definite)");
    if (p->check && cmp_chol_check(a.m, n, p->tile) != 0)
        fail("check failed");
    tiled_free(&a);
    return ns;
}

/* ----------------------------------------------------------------- gemm */

struct gemm_run {
    struct tiled a, b, c;
};

static void submit_gemm(void *ctx)
{
    const struct gemm_run *g = ctx;
    uint32_t nt = g->a.nt;
    for (uint32_t i = 0; i < nt; i++)
        for (uint32_t j = 0; j < nt; j++)
            for (uint32_t k = 0; k < nt; k++)
                check_submit(starpu_task_insert(&cl_gemm_nn, STARPU_R, tile_h(&g->a, i, k),
                                                STARPU_R, tile_h(&g->b, k, j), STARPU_RW,
                                                tile_h(&g->c, i, j), 0));
}

static uint64_t run_gemm(const struct cmp_params *p)
{
    struct gemm_run g;
    uint32_t n = (uint32_t)p->n;
    tiled_alloc(&g.a, n, p->tile);
    tiled_alloc(&g.b, n, p->tile);
    tiled_alloc(&g.c, n, p->tile);
    cmp_gemm_init(g.a.m, g.b.m, g.c.m, n, p->tile);
    tiled_register(&g.a);
    tiled_register(&g.b);
    tiled_register(&g.c);
    uint64_t ns = timed(submit_gemm, &g);
    tiled_unregister(&g.a);
    tiled_unregister(&g.b);
    tiled_unregister(&g.c);
    if (p->check && cmp_gemm_check(g.a.m, g.b.m, g.c.m, n, p->tile) != 0)
        fail("check failed");
    tiled_free(&g.a);
    tiled_free(&g.b);
    tiled_free(&g.c);
    return ns;
}

/* ----------------------------------------------------------------- main */

static const char *const k_supported[] = {"indep", "chain", "fan", "stencil", "chol", "gemm"};

/* Runs one instance of *p (registration and checks untimed); its ns. */
static uint64_t run(const struct cmp_params *p)
{
    if (!strcmp(p->workload, "stencil"))
        return run_stencil(p);
    if (!strcmp(p->workload, "chol"))
        return run_chol(p);
    if (!strcmp(p->workload, "gemm"))
        return run_gemm(p);
    return run_cells(p);
}

static void report(const struct cmp_params *p, uint64_t ns)
{
    char extra[4400];
    const struct starpu_sched_policy *pol = starpu_sched_ctx_get_sched_policy(0); /* global */
    int len = snprintf(extra, sizeof extra, " system=starpu workers=%u sched=%s",
                       starpu_cpu_worker_get_count(), pol ? pol->policy_name : "unknown");
    if (!strcmp(p->workload, "chol") || !strcmp(p->workload, "gemm")) {
        char blas[4096];
        cmp_blas_name(blas, sizeof blas);
        snprintf(extra + len, sizeof extra - (size_t)len, " blas=%s", blas);
    }
    cmp_report(cmp_value_of(p, ns), cmp_unit_of(p), cmp_task_count(p), extra);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < sizeof k_supported / sizeof *k_supported; i++)
            puts(k_supported[i]);
        return 0;
    }
    struct cmp_params p;
    if (cmp_parse(argc, argv, &p) != 0)
        return 2;
    int threads = thread_count();
    if (threads == 0) {
        fprintf(stderr, "%s: CMP_THREADS must be a positive integer, at most %d (STARPU_MAXCPUS)\n",
                argv[0], STARPU_MAXCPUS);
        return 2;
    }
    start_starpu(threads);
    if (p.warmup) {
        struct cmp_params w = cmp_warmup_of(&p);
        run(&w);
    }
    uint64_t ns = run(&p);
    report(&p, ns);
    starpu_shutdown();
    return 0;
}
