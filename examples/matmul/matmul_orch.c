/*
 * matmul_orch.c — the matmul example's orchestration: C = A x B by tiles.
 *
 * Owns: the task graph only. For each T x T tile of C it submits one AIC
 * task per step of the K loop: the first writes the tile (OUTPUT_EXISTING:
 * C is an OUT argument whose device buffer starts undefined), the others
 * accumulate into it (INOUT). The runtime orders each tile's chain through
 * the TensorMap; tiles of C do not overlap, so the chains run in parallel.
 * All tiles are views; nothing is copied or allocated.
 */
#include "matmul.h"

/* The (row, col) tile of a 2-D matrix: rows [r*t, (r+1)*t), cols
 * [c*t, (c+1)*t). 0, or -1 when the tile is outside the matrix. */
static int tile_view(struct simpler_tensor *out, const struct simpler_tensor *m, uint64_t r,
                     uint64_t c, uint64_t t)
{
    struct simpler_tensor rows = {0};
    if (simpler_tensor_slice(&rows, m, 0, r * t, (r + 1) * t, 1))
        return -1;
    return simpler_tensor_slice(out, &rows, 1, c * t, (c + 1) * t, 1);
}

static int matmul_args_valid(const struct simpler_orch_args *args)
{
    if (args->tensor_count != 3 || args->scalar_count != 1)
        return 0;
    const struct simpler_tensor *a = &args->tensors[0], *b = &args->tensors[1];
    const struct simpler_tensor *c = &args->tensors[2];
    for (uint32_t i = 0; i < 3; i++)
        if (args->tensors[i].ndims != 2 || args->tensors[i].dtype != SIMPLER_DTYPE_F32)
            return 0;
    uint64_t t = args->scalars[0];
    return a->shape[1] == b->shape[0] && c->shape[0] == a->shape[0] &&
           c->shape[1] == b->shape[1] && t > 0 && a->shape[0] % t == 0 &&
           a->shape[1] % t == 0 && b->shape[1] % t == 0;
}

void matmul_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    if (!matmul_args_valid(args)) {
        rt->ops->fatal(rt);
        return;
    }
    const struct simpler_tensor *a = &args->tensors[0], *b = &args->tensors[1];
    const struct simpler_tensor *c = &args->tensors[2];
    uint64_t t = args->scalars[0];
    uint64_t row_tiles = a->shape[0] / t, col_tiles = b->shape[1] / t, k_tiles = a->shape[1] / t;

    for (uint64_t i = 0; i < row_tiles; i++) {
        for (uint64_t j = 0; j < col_tiles; j++) {
            struct simpler_tensor c_tile;
            if (tile_view(&c_tile, c, i, j, t)) {
                rt->ops->fatal(rt);
                return;
            }
            for (uint64_t k = 0; k < k_tiles; k++) {
                struct simpler_tensor a_tile, b_tile;
                if (tile_view(&a_tile, a, i, k, t) || tile_view(&b_tile, b, k, j, t)) {
                    rt->ops->fatal(rt);
                    return;
                }
                struct simpler_task_args ta;
                simpler_task_args_init(&ta);
                simpler_task_args_add_input(&ta, &a_tile);
                simpler_task_args_add_input(&ta, &b_tile);
                if (k == 0) {
                    simpler_task_args_add_output_existing(&ta, &c_tile);
                    simpler_task_args_add_scalar(&ta, MATMUL_GEMM_OVERWRITE);
                } else {
                    simpler_task_args_add_inout(&ta, &c_tile);
                    simpler_task_args_add_scalar(&ta, MATMUL_GEMM_ACCUMULATE);
                }
                if (simpler_submit_aic(rt, MATMUL_K_GEMM_TILE, &ta, NULL))
                    return; /* latched: the run's status says why */
            }
        }
    }
}
