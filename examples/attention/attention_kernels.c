/*
 * attention_kernels.c — the attention example's kernels, built as a shared
 * object that the host packs into the callable image.
 *
 * Owns: the arithmetic of one online-softmax (flash-attention style) step
 * over one query tile and one key tile. Per query row the running state is
 * m (the largest score so far), l (the sum of exp(score - m) so far) and
 * acc (the sum of exp(score - m) * v so far); a new key tile raises m to
 * m', scales l and acc by alpha = exp(m - m') and adds its own terms. The
 * matrices are strided 2-D views (q, k, v and out are tiles of the whole
 * tensors; k is a transposed view), so every access goes through strides.
 */
#include <math.h>

#include "attention.h"

#include "simpler/kernel.h"

#define ATTN_SHAPE_MISMATCH 201 /* the arguments' shapes do not compose */

/* Element (r, c) of a 2-D f32 view. */
static inline float *at(const struct simpler_tensor *t, uint64_t r, uint64_t c)
{
    return (float *)simpler_tensor_data(t) + (int64_t)r * t->stride[0] + (int64_t)c * t->stride[1];
}

/* Element i of a 1-D f32 view. */
static inline float *at1(const struct simpler_tensor *t, uint64_t i)
{
    return (float *)simpler_tensor_data(t) + (int64_t)i * t->stride[0];
}

/* args: m (OUTPUT, rows), l (OUTPUT, rows), acc (OUTPUT, rows x d). */
void kernel_attn_init(int64_t *args)
{
    const struct simpler_tensor *m = simpler_kernel_tensor(args, 0);
    const struct simpler_tensor *l = simpler_kernel_tensor(args, 1);
    const struct simpler_tensor *acc = simpler_kernel_tensor(args, 2);
    for (uint64_t r = 0; r < m->shape[0]; r++) {
        *at1(m, r) = -INFINITY;
        *at1(l, r) = 0.0f;
        for (uint64_t c = 0; c < acc->shape[1]; c++)
            *at(acc, r, c) = 0.0f;
    }
}

/* s = scale * q k^T; args: q (IN, rows x d), kt (IN, d x cols: a transposed
 * view of k), s (OUTPUT, rows x cols), scale (f32 scalar). */
void kernel_attn_scores(int64_t *args)
{
    const struct simpler_tensor *q = simpler_kernel_tensor(args, 0);
    const struct simpler_tensor *kt = simpler_kernel_tensor(args, 1);
    const struct simpler_tensor *s = simpler_kernel_tensor(args, 2);
    float scale = simpler_kernel_scalar_f32(args, 3);
    uint64_t rows = q->shape[0], d = q->shape[1], cols = kt->shape[1];
    if (kt->shape[0] != d || s->shape[0] != rows || s->shape[1] != cols) {
        simpler_kernel_fail(args, ATTN_SHAPE_MISMATCH);
        return;
    }
    for (uint64_t i = 0; i < rows; i++) {
        for (uint64_t j = 0; j < cols; j++) {
            float dot = 0.0f;
            for (uint64_t p = 0; p < d; p++)
                dot += *at(q, i, p) * *at(kt, p, j);
            *at(s, i, j) = scale * dot;
        }
    }
}

/*
 * One online-softmax step per row: m' = max(m, max_j s), p = exp(s - m'),
 * alpha = exp(m - m'), l = alpha * l + sum_j p, m = m'.
 * args: s (IN, rows x cols), m (INOUT, rows), l (INOUT, rows),
 * p (OUTPUT, rows x cols), alpha (OUTPUT, rows).
 */
void kernel_attn_softmax(int64_t *args)
{
    const struct simpler_tensor *s = simpler_kernel_tensor(args, 0);
    const struct simpler_tensor *m = simpler_kernel_tensor(args, 1);
    const struct simpler_tensor *l = simpler_kernel_tensor(args, 2);
    const struct simpler_tensor *p = simpler_kernel_tensor(args, 3);
    const struct simpler_tensor *alpha = simpler_kernel_tensor(args, 4);
    uint64_t rows = s->shape[0], cols = s->shape[1];
    if (m->shape[0] != rows || l->shape[0] != rows || alpha->shape[0] != rows ||
        p->shape[0] != rows || p->shape[1] != cols) {
        simpler_kernel_fail(args, ATTN_SHAPE_MISMATCH);
        return;
    }
    for (uint64_t i = 0; i < rows; i++) {
        float m_old = *at1(m, i), m_new = m_old;
        for (uint64_t j = 0; j < cols; j++)
            m_new = fmaxf(m_new, *at(s, i, j));
        float sum = 0.0f;
        for (uint64_t j = 0; j < cols; j++) {
            float e = expf(*at(s, i, j) - m_new);
            *at(p, i, j) = e;
            sum += e;
        }
        float a = expf(m_old - m_new); /* 0 on the first step: m_old is -inf */
        *at1(alpha, i) = a;
        *at1(l, i) = a * *at1(l, i) + sum;
        *at1(m, i) = m_new;
    }
}

/* acc *= alpha, row by row; args: alpha (IN, rows), acc (INOUT, rows x d). */
void kernel_attn_rescale(int64_t *args)
{
    const struct simpler_tensor *alpha = simpler_kernel_tensor(args, 0);
    const struct simpler_tensor *acc = simpler_kernel_tensor(args, 1);
    if (alpha->shape[0] != acc->shape[0]) {
        simpler_kernel_fail(args, ATTN_SHAPE_MISMATCH);
        return;
    }
    for (uint64_t i = 0; i < acc->shape[0]; i++) {
        float a = *at1(alpha, i);
        for (uint64_t c = 0; c < acc->shape[1]; c++)
            *at(acc, i, c) *= a;
    }
}

/* acc += p v; args: p (IN, rows x cols), v (IN, cols x d), acc (INOUT, rows x d). */
void kernel_attn_pv(int64_t *args)
{
    const struct simpler_tensor *p = simpler_kernel_tensor(args, 0);
    const struct simpler_tensor *v = simpler_kernel_tensor(args, 1);
    const struct simpler_tensor *acc = simpler_kernel_tensor(args, 2);
    uint64_t rows = p->shape[0], cols = p->shape[1], d = v->shape[1];
    if (v->shape[0] != cols || acc->shape[0] != rows || acc->shape[1] != d) {
        simpler_kernel_fail(args, ATTN_SHAPE_MISMATCH);
        return;
    }
    for (uint64_t i = 0; i < rows; i++) {
        for (uint64_t c = 0; c < d; c++) {
            float sum = *at(acc, i, c);
            for (uint64_t j = 0; j < cols; j++)
                sum += *at(p, i, j) * *at(v, j, c);
            *at(acc, i, c) = sum;
        }
    }
}

/* out = acc / l, row by row; args: acc (IN, rows x d), l (IN, rows),
 * out (OUTPUT_EXISTING, rows x d). */
void kernel_attn_normalize(int64_t *args)
{
    const struct simpler_tensor *acc = simpler_kernel_tensor(args, 0);
    const struct simpler_tensor *l = simpler_kernel_tensor(args, 1);
    const struct simpler_tensor *out = simpler_kernel_tensor(args, 2);
    if (l->shape[0] != acc->shape[0] || out->shape[0] != acc->shape[0] ||
        out->shape[1] != acc->shape[1]) {
        simpler_kernel_fail(args, ATTN_SHAPE_MISMATCH);
        return;
    }
    for (uint64_t i = 0; i < acc->shape[0]; i++) {
        float inv = 1.0f / *at1(l, i);
        for (uint64_t c = 0; c < acc->shape[1]; c++)
            *at(out, i, c) = *at(acc, i, c) * inv;
    }
}
