/*
 * attention.h — what the attention example's three parts agree on: the
 * kernels' func_ids and symbols, the orchestration's entry symbol and its
 * arguments.
 */
#ifndef EXAMPLES_ATTENTION_H
#define EXAMPLES_ATTENTION_H

#include <stdint.h>

#include "simpler/orchestration.h"

#define ATTENTION_ENTRY "attention_orchestration"

enum attention_func_id {
    ATTN_K_INIT = 0,      /* AIV: m = -inf, l = 0, acc = 0 */
    ATTN_K_SCORES = 1,    /* AIC: s = scale * q k^T */
    ATTN_K_SOFTMAX = 2,   /* AIV: online-softmax step: p, alpha; m, l updated */
    ATTN_K_RESCALE = 3,   /* AIV: acc *= alpha (per row) */
    ATTN_K_PV = 4,        /* AIC: acc += p v */
    ATTN_K_NORMALIZE = 5, /* AIV: out = acc / l (per row) */
};

/*
 * Run arguments: Q, K, V (IN) and O (OUT), each [heads, seq, head_dim] f32,
 * then two scalars: the tile edge T (must divide seq) and the score scale
 * (an f32, bit-cast). O[h] = softmax(scale * Q[h] K[h]^T) V[h].
 */
void attention_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);

void kernel_attn_init(int64_t *args);
void kernel_attn_scores(int64_t *args);
void kernel_attn_softmax(int64_t *args);
void kernel_attn_rescale(int64_t *args);
void kernel_attn_pv(int64_t *args);
void kernel_attn_normalize(int64_t *args);

#endif /* EXAMPLES_ATTENTION_H */
