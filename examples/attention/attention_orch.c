/*
 * attention_orch.c — the attention example's orchestration:
 * O[h] = softmax(scale * Q[h] K[h]^T) V[h], one query tile at a time, with
 * an online softmax over the key tiles.
 *
 * Owns: the task graph only. Per (head, query tile) it opens a scope that
 * holds the tile's running state (m, l, acc: made by an init task); per key
 * tile it opens an inner scope holding that step's scores, probabilities
 * and rescale factors, and submits four tasks:
 *   scores   AIC  s = scale * q k^T        (k^T is a transposed view)
 *   softmax  AIV  p, alpha from s; m, l updated (INOUT)
 *   rescale  AIV  acc *= alpha             (INOUT)
 *   pv       AIC  acc += p v               (INOUT)
 * and last a normalize task writes acc / l into the query tile's rows of O.
 * No dependency is written down: the INOUT chains on m, l and acc order the
 * steps of one tile; the scores of all key tiles may run ahead in parallel;
 * the tiles and heads are independent of each other. Inner scopes end after
 * each step, so their ring (depth 2) recycles while the tile's state (depth
 * 1) lives on.
 */
#include "attention.h"

/* Rows [row0, row0 + rows) of head `h` of a contiguous [heads, seq, d]
 * tensor, as a 2-D [rows, d] view. 0, or -1 when they are outside it. */
static int head_rows(struct simpler_tensor *out, const struct simpler_tensor *t, uint64_t h,
                     uint64_t row0, uint64_t rows)
{
    struct simpler_tensor head = {0}, tile = {0};
    const uint64_t shape[2] = {rows, t->shape[2]};
    if (simpler_tensor_slice(&head, t, 0, h, h + 1, 1) ||
        simpler_tensor_slice(&tile, &head, 1, row0, row0 + rows, 1))
        return -1;
    return simpler_tensor_reshape(out, &tile, shape, 2);
}

static int attention_args_valid(const struct simpler_orch_args *args)
{
    if (args->tensor_count != 4 || args->scalar_count != 2)
        return 0;
    const struct simpler_tensor *q = &args->tensors[0];
    for (uint32_t i = 0; i < 4; i++) {
        const struct simpler_tensor *t = &args->tensors[i];
        if (t->ndims != 3 || t->dtype != SIMPLER_DTYPE_F32 || !simpler_tensor_is_contiguous(t))
            return 0;
        for (uint32_t d = 0; d < 3; d++)
            if (t->shape[d] != q->shape[d])
                return 0;
    }
    uint64_t tile = args->scalars[0];
    return tile > 0 && q->shape[1] % tile == 0;
}

/* Submits the four tasks of one key tile against one query tile. 0, or the
 * run's latched error (a later task would use an output never made). */
static int attend_key_tile(struct simpler_orch *rt, const struct simpler_tensor *q_tile,
                            const struct simpler_tensor *k_tile,
                            const struct simpler_tensor *v_tile, float scale,
                            const struct simpler_task_result *state)
{
    const struct simpler_tensor *m = &state->outputs[0], *l = &state->outputs[1];
    const struct simpler_tensor *acc = &state->outputs[2];
    uint64_t rows = q_tile->shape[0], cols = k_tile->shape[0];
    const uint64_t score_shape[2] = {rows, cols};
    struct simpler_tensor k_transposed;
    if (simpler_tensor_transpose(&k_transposed, k_tile, 0, 1)) {
        rt->ops->fatal(rt);
        return rt->ops->status(rt);
    }
    struct simpler_task_args ta;
    struct simpler_task_result scores, softmax;

    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, q_tile);
    simpler_task_args_add_input(&ta, &k_transposed);
    simpler_task_args_add_output(&ta, score_shape, 2, SIMPLER_DTYPE_F32, 0);
    simpler_task_args_add_scalar_f32(&ta, scale);
    int rc = simpler_submit_aic(rt, ATTN_K_SCORES, &ta, &scores);
    if (rc)
        return rc;

    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &scores.outputs[0]);
    simpler_task_args_add_inout(&ta, m);
    simpler_task_args_add_inout(&ta, l);
    simpler_task_args_add_output(&ta, score_shape, 2, SIMPLER_DTYPE_F32, 0); /* p */
    simpler_task_args_add_output(&ta, &rows, 1, SIMPLER_DTYPE_F32, 0);       /* alpha */
    rc = simpler_submit_aiv(rt, ATTN_K_SOFTMAX, &ta, &softmax);
    if (rc)
        return rc;

    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &softmax.outputs[1]);
    simpler_task_args_add_inout(&ta, acc);
    simpler_submit_aiv(rt, ATTN_K_RESCALE, &ta, NULL);

    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &softmax.outputs[0]);
    simpler_task_args_add_input(&ta, v_tile);
    simpler_task_args_add_inout(&ta, acc);
    return simpler_submit_aic(rt, ATTN_K_PV, &ta, NULL);
}

void attention_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    if (!attention_args_valid(args)) {
        rt->ops->fatal(rt);
        return;
    }
    const struct simpler_tensor *q = &args->tensors[0], *k = &args->tensors[1];
    const struct simpler_tensor *v = &args->tensors[2], *o = &args->tensors[3];
    uint64_t heads = q->shape[0], seq = q->shape[1], d = q->shape[2];
    uint64_t tile = args->scalars[0];
    float scale;
    uint32_t scale_bits = (uint32_t)args->scalars[1];
    memcpy(&scale, &scale_bits, sizeof scale);
    const uint64_t acc_shape[2] = {tile, d};

    for (uint64_t h = 0; h < heads; h++) {
        for (uint64_t q0 = 0; q0 < seq; q0 += tile) {
            simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO); /* this query tile's state */
            struct simpler_tensor q_tile, o_tile;
            if (head_rows(&q_tile, q, h, q0, tile) || head_rows(&o_tile, o, h, q0, tile)) {
                rt->ops->fatal(rt);
                return;
            }
            struct simpler_task_args ta;
            struct simpler_task_result state; /* m, l, acc */
            simpler_task_args_init(&ta);
            simpler_task_args_add_output(&ta, &tile, 1, SIMPLER_DTYPE_F32, 0);
            simpler_task_args_add_output(&ta, &tile, 1, SIMPLER_DTYPE_F32, 0);
            simpler_task_args_add_output(&ta, acc_shape, 2, SIMPLER_DTYPE_F32, 0);
            if (simpler_submit_aiv(rt, ATTN_K_INIT, &ta, &state))
                return; /* latched: the run's status says why */

            for (uint64_t k0 = 0; k0 < seq; k0 += tile) {
                simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO); /* this step's s, p, alpha */
                struct simpler_tensor k_tile, v_tile;
                if (head_rows(&k_tile, k, h, k0, tile) || head_rows(&v_tile, v, h, k0, tile)) {
                    rt->ops->fatal(rt);
                    return;
                }
                if (attend_key_tile(rt, &q_tile, &k_tile, &v_tile, scale, &state))
                    return;
                simpler_scope_end(rt);
            }

            simpler_task_args_init(&ta);
            simpler_task_args_add_input(&ta, &state.outputs[2]);
            simpler_task_args_add_input(&ta, &state.outputs[1]);
            simpler_task_args_add_output_existing(&ta, &o_tile);
            simpler_submit_aiv(rt, ATTN_K_NORMALIZE, &ta, NULL);
            if (simpler_scope_end(rt))
                return; /* latched: the run's status says why */
        }
    }
}
