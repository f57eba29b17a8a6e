/*
 * main.c — the cluster example: a tiled matmul and a tiled Cholesky over
 * four simulated devices in one process (simpler/cluster.h), each checked
 * bit for bit against the same kernels run on one device.
 *
 * matmul    C = A B, 256 x 256 f32, tile 64: the matmul example's own
 *           callable, run once on one device over the whole matrices for
 *           the reference; on the cluster, one group submit per row band
 *           of C, member w computing tile (i, w) from A's band i and B's
 *           column band w. Each tile's reduction runs in the same order
 *           in both (k = 0, 1, ...), so the bits agree.
 * Cholesky  A = L L^T, 128 x 128 f64 SPD, tile 32, tiles in buffers of
 *           their own: one device-level run per tile operation (potrf,
 *           trsm, syrk, gemm), placed on the worker owning the tile it
 *           writes (2 x 2 block-cyclic). The reference runs the same
 *           operations in the same order on one context; on the cluster
 *           the host TensorMap orders them.
 * Exits nonzero on any wrong bit or failed call.
 *
 * `mpiexec -n 2 cluster_example --mpi` runs the same over two ranks of two
 * devices each (docs/cluster.md section 9): workers 0-1 on rank 0, 2-3 on
 * rank 1 (rank-major). Rank 0 computes the references, runs both
 * orchestrations and checks; rank 1 serves its two runs. Only the regions
 * a remote run reads and writes travel between ranks; their bytes are
 * printed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chol.h"
#include "matmul.h"
#include "simpler/cluster.h"

#define WORKERS 4
#define REF_DEVICE 4 /* the one-device reference runs on a device of its own */
#define MM_DIM 256
#define MM_TILE 64
#define CH_TILES 4
#define CH_T 32
#define CH_N (CH_TILES * CH_T)
#define MATMUL_ID 1
#define CHOL_ID0 2 /* + enum chol_op */

static int failed(const char *call, int rc)
{
    fprintf(stderr, "cluster example: %s failed: %s (%s)\n", call, simpler_status_name(rc),
            simpler_strerror(rc));
    return 1;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------ callables */

struct image {
    void *bytes;
    size_t size;
};

static int build_image(struct image *out, const char *orch_so, const char *entry,
                       const enum simpler_direction *sig, uint32_t sig_count,
                       const char *kernels_so, const char *kernel,
                       const enum simpler_direction *ksig, uint32_t ksig_count)
{
    struct simpler_callable_builder *b;
    int rc = simpler_callable_builder_create(&b);
    if (rc)
        return rc;
    if (!(rc = simpler_callable_builder_set_orchestration_file(b, orch_so, entry, NULL, sig,
                                                               sig_count)) &&
        !(rc = simpler_callable_builder_add_kernel_file(b, 0, SIMPLER_CORE_AIC, kernels_so,
                                                        kernel, ksig, ksig_count)))
        rc = simpler_callable_builder_finish(b, &out->bytes, &out->size);
    simpler_callable_builder_destroy(b);
    return rc;
}

static const enum simpler_direction IN = SIMPLER_DIR_IN, INOUT = SIMPLER_DIR_INOUT;

/* The five images: the matmul example's, and one per Cholesky operation. */
static int build_images(struct image images[1 + CHOL_OPS])
{
    static const enum simpler_direction mm_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN,
                                                    SIMPLER_DIR_OUT, SIMPLER_DIR_SCALAR};
    static const enum simpler_direction mm_ksig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN,
                                                     SIMPLER_DIR_INOUT, SIMPLER_DIR_SCALAR};
    static const char *const entries[CHOL_OPS] = {
        "chol_potrf_orchestration", "chol_trsm_orchestration", "chol_syrk_orchestration",
        "chol_gemm_orchestration"};
    static const char *const kernels[CHOL_OPS] = {"chol_kernel_potrf", "chol_kernel_trsm",
                                                  "chol_kernel_syrk", "chol_kernel_gemm"};
    static const uint32_t tiles[CHOL_OPS] = {1, 2, 2, 3};
    int rc = build_image(&images[0], MATMUL_ORCH_SO, MATMUL_ENTRY, mm_sig, 4, MATMUL_KERNELS_SO,
                         "kernel_gemm_tile", mm_ksig, 4);
    for (int op = 0; op < CHOL_OPS && !rc; op++) {
        enum simpler_direction sig[3] = {IN, IN, IN};
        sig[tiles[op] - 1] = INOUT;
        rc = build_image(&images[1 + op], CHOL_ORCH_SO, entries[op], sig, tiles[op],
                         CHOL_KERNELS_SO, kernels[op], sig, tiles[op]);
    }
    return rc;
}

/* --------------------------------------------------------------- matmul */

struct matmul {
    float *a, *b, *c, *c_ref;
    struct simpler_tensor at, bt, ct;
};

static int matmul_one_device(struct simpler_context *ctx, struct matmul *m)
{
    struct simpler_tensor tensors[3] = {m->at, m->bt, m->ct};
    tensors[2].addr = (uint64_t)(uintptr_t)m->c_ref;
    uint64_t scalar = MM_TILE;
    struct simpler_args args = {.tensor_count = 3, .scalar_count = 1, .tensors = tensors,
                                .scalars = &scalar};
    return simpler_run(ctx, MATMUL_ID, &args, NULL, NULL);
}

/* One group submit per row band of C: member w computes tile (i, w). */
static int matmul_orch(struct simpler_cluster_orch *o, void *user)
{
    struct matmul *m = user;
    uint64_t scalar = MM_TILE;
    for (uint32_t i = 0; i < MM_DIM / MM_TILE; i++) {
        struct simpler_tensor t[WORKERS][3], rows;
        struct simpler_args args[WORKERS];
        struct simpler_cluster_member members[WORKERS];
        simpler_cluster_task_t task;
        if (simpler_tensor_slice(&rows, &m->ct, 0, i * MM_TILE, (i + 1) * MM_TILE, 1))
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        for (uint32_t w = 0; w < WORKERS; w++) {
            if (simpler_tensor_slice(&t[w][0], &m->at, 0, i * MM_TILE, (i + 1) * MM_TILE, 1) ||
                simpler_tensor_slice(&t[w][1], &m->bt, 1, w * MM_TILE, (w + 1) * MM_TILE, 1) ||
                simpler_tensor_slice(&t[w][2], &rows, 1, w * MM_TILE, (w + 1) * MM_TILE, 1))
                return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
            args[w] = (struct simpler_args){.tensor_count = 3, .scalar_count = 1,
                                            .tensors = t[w], .scalars = &scalar};
            members[w] = (struct simpler_cluster_member){.worker = w, .args = &args[w]};
        }
        int rc = simpler_cluster_submit_group(o, MATMUL_ID, members, WORKERS, NULL, &task);
        if (rc)
            return rc;
    }
    return 0;
}

static int matmul_init(struct matmul *m)
{
    size_t bytes = (size_t)MM_DIM * MM_DIM * sizeof(float);
    uint64_t shape[2] = {MM_DIM, MM_DIM};
    m->a = malloc(bytes);
    m->b = malloc(bytes);
    m->c = malloc(bytes);
    m->c_ref = malloc(bytes);
    if (!m->a || !m->b || !m->c || !m->c_ref)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    for (uint32_t i = 0; i < MM_DIM * MM_DIM; i++) {
        m->a[i] = (float)((i * 7u) % 23u) * 0.125f - 1.0f;
        m->b[i] = (float)((i * 5u) % 19u) * 0.25f - 2.0f;
    }
    memset(m->c, 0xDB, bytes);
    memset(m->c_ref, 0xDB, bytes);
    simpler_tensor_make(&m->at, (uint64_t)(uintptr_t)m->a, shape, 2, SIMPLER_DTYPE_F32,
                        SIMPLER_MEM_HOST);
    simpler_tensor_make(&m->bt, (uint64_t)(uintptr_t)m->b, shape, 2, SIMPLER_DTYPE_F32,
                        SIMPLER_MEM_HOST);
    simpler_tensor_make(&m->ct, (uint64_t)(uintptr_t)m->c, shape, 2, SIMPLER_DTYPE_F32,
                        SIMPLER_MEM_HOST);
    return 0;
}

static void matmul_free(struct matmul *m)
{
    free(m->a);
    free(m->b);
    free(m->c);
    free(m->c_ref);
}

/* ------------------------------------------------------------- Cholesky */

/* The lower tiles, each a buffer of its own; ref: the reference's copy. */
struct chol {
    double *tile[CH_TILES][CH_TILES], *ref[CH_TILES][CH_TILES];
    struct simpler_context *ctx;    /* the reference's context, or NULL */
    struct simpler_cluster_orch *o; /* the cluster's orchestration, or NULL */
};

static struct simpler_tensor chol_tensor(const double *t)
{
    struct simpler_tensor d;
    uint64_t shape[2] = {CH_T, CH_T};
    simpler_tensor_make(&d, (uint64_t)(uintptr_t)t, shape, 2, SIMPLER_DTYPE_F64,
                        SIMPLER_MEM_HOST);
    return d;
}

/* Runs one tile operation over tiles (i0, j0) ... on the reference
 * context, or submits it on the cluster to the owner of the tile it
 * writes (the last). */
static int chol_op(struct chol *c, enum chol_op op, uint32_t count, const uint32_t (*ij)[2])
{
    struct simpler_tensor t[3];
    for (uint32_t k = 0; k < count; k++)
        t[k] = chol_tensor(c->ctx ? c->ref[ij[k][0]][ij[k][1]] : c->tile[ij[k][0]][ij[k][1]]);
    struct simpler_args args = {.tensor_count = count, .tensors = t};
    if (c->ctx)
        return simpler_run(c->ctx, CHOL_ID0 + (int32_t)op, &args, NULL, NULL);
    uint32_t owner = (ij[count - 1][0] % 2) * 2 + ij[count - 1][1] % 2;
    simpler_cluster_task_t task;
    return simpler_cluster_submit(c->o, owner, CHOL_ID0 + (int32_t)op, &args, NULL, &task);
}

/* The right-looking tiled factorisation, in one order for both paths. */
static int chol_graph(struct chol *c)
{
    int rc = 0;
    for (uint32_t k = 0; k < CH_TILES && !rc; k++) {
        const uint32_t potrf[1][2] = {{k, k}};
        rc = chol_op(c, CHOL_POTRF, 1, potrf);
        for (uint32_t i = k + 1; i < CH_TILES && !rc; i++) {
            const uint32_t trsm[2][2] = {{k, k}, {i, k}};
            rc = chol_op(c, CHOL_TRSM, 2, trsm);
        }
        for (uint32_t i = k + 1; i < CH_TILES && !rc; i++) {
            const uint32_t syrk[2][2] = {{i, k}, {i, i}};
            rc = chol_op(c, CHOL_SYRK, 2, syrk);
            for (uint32_t j = k + 1; j < i && !rc; j++) {
                const uint32_t gemm[3][2] = {{i, k}, {j, k}, {i, j}};
                rc = chol_op(c, CHOL_GEMM, 3, gemm);
            }
        }
    }
    return rc;
}

static int chol_orch(struct simpler_cluster_orch *o, void *user)
{
    struct chol *c = user;
    c->o = o;
    return chol_graph(c);
}

/* SPD: 1 / (1 + |r - c|) plus n on the diagonal. */
static double chol_entry(uint32_t r, uint32_t col)
{
    return 1.0 / (1.0 + fabs((double)r - (double)col)) + (r == col ? (double)CH_N : 0.0);
}

static int chol_init(struct chol *c)
{
    memset(c, 0, sizeof *c);
    for (uint32_t i = 0; i < CH_TILES; i++) {
        for (uint32_t j = 0; j <= i; j++) {
            c->tile[i][j] = malloc(CH_T * CH_T * sizeof(double));
            c->ref[i][j] = malloc(CH_T * CH_T * sizeof(double));
            if (!c->tile[i][j] || !c->ref[i][j])
                return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
            for (uint32_t r = 0; r < CH_T; r++)
                for (uint32_t col = 0; col < CH_T; col++)
                    c->tile[i][j][r * CH_T + col] = chol_entry(i * CH_T + r, j * CH_T + col);
            memcpy(c->ref[i][j], c->tile[i][j], CH_T * CH_T * sizeof(double));
        }
    }
    return 0;
}

/* max |(L L^T - A)[r][col]| over the lower triangle. */
static double chol_residual(const struct chol *c)
{
    double worst = 0.0;
    for (uint32_t r = 0; r < CH_N; r++) {
        for (uint32_t col = 0; col <= r; col++) {
            double s = 0.0;
            for (uint32_t k = 0; k <= col; k++)
                s += c->tile[r / CH_T][k / CH_T][(r % CH_T) * CH_T + k % CH_T] *
                     c->tile[col / CH_T][k / CH_T][(col % CH_T) * CH_T + k % CH_T];
            double e = fabs(s - chol_entry(r, col));
            worst = e > worst ? e : worst;
        }
    }
    return worst;
}

static void chol_free(struct chol *c)
{
    for (uint32_t i = 0; i < CH_TILES; i++) {
        for (uint32_t j = 0; j <= i; j++) {
            free(c->tile[i][j]);
            free(c->ref[i][j]);
        }
    }
}

/* ----------------------------------------------------------------- main */

static int register_all(struct simpler_context *ctx, struct simpler_cluster *cl,
                        const struct image images[1 + CHOL_OPS])
{
    int rc = 0;
    for (int i = 0; i < 1 + CHOL_OPS && !rc; i++) {
        int32_t id = i == 0 ? MATMUL_ID : CHOL_ID0 + i - 1;
        rc = ctx ? simpler_register_callable(ctx, id, images[i].bytes, images[i].size)
                 : simpler_cluster_register_callable(cl, id, images[i].bytes, images[i].size);
    }
    return rc;
}

/* The devices' topology: the defaults, with a runnable budget of one
 * thread each, since five devices share the host's CPUs. */
static int configure_devices(void)
{
    for (int d = 0; d <= REF_DEVICE; d++) {
        struct simdev_config topo;
        int rc = simdev_device_get_config(d, &topo);
        topo.runnable_cpus = 1;
        if (rc || (rc = simdev_device_configure(d, &topo)))
            return rc;
    }
    return 0;
}

static int references(const struct image images[1 + CHOL_OPS], struct matmul *mm,
                      struct chol *ch)
{
    struct simpler_context *ctx;
    int rc = simpler_create_device_context(&ctx);
    if (rc)
        return failed("simpler_create_device_context", rc);
    if ((rc = simpler_init(ctx, REF_DEVICE, NULL)))
        return failed("simpler_init", rc);
    if ((rc = register_all(ctx, NULL, images)))
        return failed("simpler_register_callable", rc);
    if ((rc = matmul_one_device(ctx, mm)))
        return failed("the one-device matmul", rc);
    ch->ctx = ctx;
    if ((rc = chol_graph(ch)))
        return failed("the one-device Cholesky", rc);
    ch->ctx = NULL;
    if ((rc = simpler_finalize_device(ctx)) || (rc = simpler_destroy_device_context(ctx)))
        return failed("simpler_finalize_device", rc);
    return 0;
}

static int report(const char *name, int ranks, const struct simpler_cluster_run_info *info,
                  int rc, uint64_t wrong, uint64_t total, double ms, const char *extra)
{
    char where[160] = "";
    if (ranks > 1)
        snprintf(where, sizeof where,
                 " over %d ranks (%llu runs remote, %llu bytes sent, %llu received)", ranks,
                 (unsigned long long)info->remote_runs, (unsigned long long)info->bytes_sent,
                 (unsigned long long)info->bytes_received);
    printf("%-9s cluster of %d devices%s: %llu tasks, %llu runs, %llu dependencies (RAW %llu, "
           "WAR %llu, WAW %llu); %s against one device: %llu of %llu elements differ%s; "
           "%.1f ms\n",
           name, WORKERS, where, (unsigned long long)info->tasks_submitted,
           (unsigned long long)info->runs_launched, (unsigned long long)info->dependencies,
           (unsigned long long)info->raw, (unsigned long long)info->war,
           (unsigned long long)info->waw, rc == 0 && wrong == 0 ? "exact" : "WRONG",
           (unsigned long long)wrong, (unsigned long long)total, extra, ms);
    return rc != 0 || wrong != 0;
}

/* A serving rank: serves rank 0's two runs (matmul, Cholesky). */
static int serve_runs(struct simpler_cluster *cl, int rank)
{
    int bad = 0;
    for (int run = 0; run < 2; run++) {
        struct simpler_cluster_serve_info si;
        int rc = simpler_cluster_serve(cl, &si);
        printf("rank %d served %s: %llu runs (%llu failed), %llu bytes received, %llu sent: "
               "%s\n",
               rank, run == 0 ? "the matmul" : "the Cholesky", (unsigned long long)si.runs,
               (unsigned long long)si.runs_failed, (unsigned long long)si.bytes_received,
               (unsigned long long)si.bytes_sent, rc ? simpler_status_name(rc) : "ok");
        bad |= rc != 0 || si.runs == 0;
    }
    return bad;
}

int main(int argc, char **argv)
{
    struct image images[1 + CHOL_OPS] = {{0}};
    struct matmul mm = {0};
    struct chol ch;
    struct simpler_cluster *cl = NULL;
    struct simpler_cluster_config cfg;
    int rc, bad = 0, rank = 0, ranks = 1;
    int distributed = argc == 2 && strcmp(argv[1], "--mpi") == 0;
    if (argc > 1 && !distributed) {
        fprintf(stderr, "usage: %s [--mpi]   (--mpi: under mpiexec -n 2)\n", argv[0]);
        return 2;
    }
    if (distributed) {
        if ((rc = simpler_cluster_mpi_init(&argc, &argv, &rank, &ranks)))
            return failed("simpler_cluster_mpi_init", rc);
        if (ranks != 2) {
            fprintf(stderr, "cluster example: --mpi runs on 2 ranks (mpiexec -n 2), not %d\n",
                    ranks);
            simpler_cluster_mpi_finalize();
            return 2;
        }
    }
    if ((rc = configure_devices()))
        return failed("simdev_device_configure", rc);
    if ((rc = build_images(images)))
        return failed("building the callable images", rc);
    if (rank == 0) {
        if ((rc = matmul_init(&mm)) || (rc = chol_init(&ch)))
            return failed("allocating the matrices", rc);
        if (references(images, &mm, &ch))
            return 1;
    }

    simpler_cluster_config_default(&cfg);
    cfg.worker_count = WORKERS / (uint32_t)ranks; /* this rank's devices */
    cfg.distributed = (uint32_t)distributed;
    if ((rc = simpler_cluster_create(&cfg, &cl)))
        return failed("simpler_cluster_create", rc);
    if ((rc = register_all(NULL, cl, images)))
        return failed("simpler_cluster_register_callable", rc);
    if (rank != 0) {
        bad = serve_runs(cl, rank);
        goto out;
    }

    struct simpler_cluster_run_info info;
    double t0 = now_ms();
    rc = simpler_cluster_run(cl, matmul_orch, &mm, &info);
    double ms = now_ms() - t0;
    uint64_t wrong = 0;
    for (uint32_t i = 0; i < MM_DIM * MM_DIM; i++)
        wrong += memcmp(&mm.c[i], &mm.c_ref[i], sizeof(float)) != 0;
    if (rc)
        failed("the cluster matmul", rc);
    bad |= report("matmul", ranks, &info, rc, wrong, MM_DIM * MM_DIM, ms, "");

    t0 = now_ms();
    rc = simpler_cluster_run(cl, chol_orch, &ch, &info);
    ms = now_ms() - t0;
    wrong = 0;
    for (uint32_t i = 0; i < CH_TILES; i++)
        for (uint32_t j = 0; j <= i; j++)
            for (uint32_t k = 0; k < CH_T * CH_T; k++)
                wrong += memcmp(&ch.tile[i][j][k], &ch.ref[i][j][k], sizeof(double)) != 0;
    if (rc)
        failed("the cluster Cholesky", rc);
    double residual = chol_residual(&ch);
    char extra[64];
    snprintf(extra, sizeof extra, ", max |L L^T - A| = %.2g", residual);
    bad |= report("Cholesky", ranks, &info, rc, wrong,
                  CH_TILES * (CH_TILES + 1) / 2 * CH_T * CH_T, ms, extra);
    bad |= !(residual < 1e-9);
    matmul_free(&mm);
    chol_free(&ch);

out:
    if ((rc = simpler_cluster_destroy(cl)))
        return failed("simpler_cluster_destroy", rc);
    if (distributed && (rc = simpler_cluster_mpi_finalize()))
        return failed("simpler_cluster_mpi_finalize", rc);
    for (int i = 0; i < 1 + CHOL_OPS; i++)
        simpler_callable_free(images[i].bytes);
    return bad;
}
