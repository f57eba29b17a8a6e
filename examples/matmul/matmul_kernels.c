/*
 * matmul_kernels.c — the matmul example's cube (AIC) kernel, built as a
 * shared object that the host packs into the callable image.
 *
 * Owns: one tile GEMM over strided 2-D views. The tiles are views into the
 * whole matrices (row stride = the matrix's width), so the kernel walks
 * them through each descriptor's strides rather than assuming density.
 */
#include "matmul.h"

#include "simpler/kernel.h"

#define GEMM_SHAPE_MISMATCH 201 /* the tiles' shapes do not compose */

/* Element (r, c) of a 2-D f32 view. */
static inline float *at(const struct simpler_tensor *t, uint64_t r, uint64_t c)
{
    return (float *)simpler_tensor_data(t) + (int64_t)r * t->stride[0] + (int64_t)c * t->stride[1];
}

/*
 * C = A x B (mode OVERWRITE) or C += A x B (mode ACCUMULATE).
 * args: A (IN, m x k), B (IN, k x n), C (OUTPUT_EXISTING or INOUT, m x n),
 * mode (scalar, enum matmul_gemm_mode).
 */
void kernel_gemm_tile(int64_t *args)
{
    const struct simpler_tensor *a = simpler_kernel_tensor(args, 0);
    const struct simpler_tensor *b = simpler_kernel_tensor(args, 1);
    const struct simpler_tensor *c = simpler_kernel_tensor(args, 2);
    uint64_t mode = simpler_kernel_scalar_u64(args, 3);
    uint64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
    if (a->ndims != 2 || b->ndims != 2 || c->ndims != 2 || b->shape[0] != k ||
        c->shape[0] != m || c->shape[1] != n) {
        simpler_kernel_fail(args, GEMM_SHAPE_MISMATCH);
        return;
    }
    for (uint64_t i = 0; i < m; i++) {
        for (uint64_t j = 0; j < n; j++) {
            float sum = mode == MATMUL_GEMM_ACCUMULATE ? *at(c, i, j) : 0.0f;
            for (uint64_t p = 0; p < k; p++)
                sum += *at(a, i, p) * *at(b, p, j);
            *at(c, i, j) = sum;
        }
    }
}
