/*
 * chol_kernels.c — the cluster example's Cholesky tile kernels: plain
 * loops over T x T row-major f64 tiles, in a fixed order, so every run of
 * them on any device gives the same bits.
 */
#include <math.h>

#include "chol.h"
#include "simpler/kernel.h"

#define CHOL_NOT_SPD 201 /* a pivot is not positive: the matrix is not SPD */
#define CHOL_BAD_TILE 202

/* The tile of argument i and its edge; 0 when not a square 2-D f64 tile. */
static double *tile(int64_t *args, uint32_t i, uint64_t *t)
{
    const struct simpler_tensor *d = simpler_kernel_tensor(args, i);
    if (d->ndims != 2 || d->dtype != SIMPLER_DTYPE_F64 || d->shape[0] != d->shape[1] ||
        d->stride[0] != (int64_t)d->shape[1] || d->stride[1] != 1)
        return 0;
    *t = d->shape[0];
    return simpler_kernel_data(args, i);
}

void chol_kernel_potrf(int64_t *args)
{
    uint64_t t = 0;
    double *a = tile(args, 0, &t);
    if (!a) {
        simpler_kernel_fail(args, CHOL_BAD_TILE);
        return;
    }
    for (uint64_t j = 0; j < t; j++) {
        double d = a[j * t + j];
        for (uint64_t k = 0; k < j; k++)
            d -= a[j * t + k] * a[j * t + k];
        if (!(d > 0.0)) {
            simpler_kernel_fail(args, CHOL_NOT_SPD);
            return;
        }
        d = sqrt(d);
        a[j * t + j] = d;
        for (uint64_t i = j + 1; i < t; i++) {
            double s = a[i * t + j];
            for (uint64_t k = 0; k < j; k++)
                s -= a[i * t + k] * a[j * t + k];
            a[i * t + j] = s / d;
        }
        for (uint64_t i = 0; i < j; i++)
            a[i * t + j] = 0.0; /* the upper triangle of a factor */
    }
}

void chol_kernel_trsm(int64_t *args)
{
    uint64_t t = 0, u = 0;
    const double *l = tile(args, 0, &t);
    double *b = tile(args, 1, &u);
    if (!l || !b || t != u) {
        simpler_kernel_fail(args, CHOL_BAD_TILE);
        return;
    }
    /* Solve X L^T = B row by row: x[r][j] = (b[r][j] - sum x[r][k] l[j][k]) / l[j][j]. */
    for (uint64_t r = 0; r < t; r++) {
        for (uint64_t j = 0; j < t; j++) {
            double s = b[r * t + j];
            for (uint64_t k = 0; k < j; k++)
                s -= b[r * t + k] * l[j * t + k];
            b[r * t + j] = s / l[j * t + j];
        }
    }
}

/* c -= a b^T over the whole tile (only_lower: the lower triangle). */
static void update(const double *a, const double *b, double *c, uint64_t t, int only_lower)
{
    for (uint64_t i = 0; i < t; i++) {
        for (uint64_t j = 0; j < (only_lower ? i + 1 : t); j++) {
            double s = c[i * t + j];
            for (uint64_t k = 0; k < t; k++)
                s -= a[i * t + k] * b[j * t + k];
            c[i * t + j] = s;
        }
    }
}

void chol_kernel_syrk(int64_t *args)
{
    uint64_t t = 0, u = 0;
    const double *a = tile(args, 0, &t);
    double *c = tile(args, 1, &u);
    if (!a || !c || t != u) {
        simpler_kernel_fail(args, CHOL_BAD_TILE);
        return;
    }
    update(a, a, c, t, 1);
}

void chol_kernel_gemm(int64_t *args)
{
    uint64_t t = 0, u = 0, v = 0;
    const double *a = tile(args, 0, &t);
    const double *b = tile(args, 1, &u);
    double *c = tile(args, 2, &v);
    if (!a || !b || !c || t != u || t != v) {
        simpler_kernel_fail(args, CHOL_BAD_TILE);
        return;
    }
    update(a, b, c, t, 0);
}
