/*
 * chol_orch.c — the cluster example's Cholesky orchestrations: each
 * submits one task, its tile operation's kernel (func 0) over the run's
 * tiles in order, the last one INOUT.
 */
#include "chol.h"

static void submit_tile_op(struct simpler_orch *rt, const struct simpler_orch_args *args,
                           uint32_t tiles)
{
    if (args->tensor_count != tiles || args->scalar_count != 0) {
        rt->ops->fatal(rt);
        return;
    }
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    for (uint32_t i = 0; i + 1 < tiles; i++)
        simpler_task_args_add_input(&ta, &args->tensors[i]);
    simpler_task_args_add_inout(&ta, &args->tensors[tiles - 1]);
    simpler_submit_aic(rt, 0, &ta, NULL); /* a failure is latched: the run's status */
}

void chol_potrf_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    submit_tile_op(rt, args, 1);
}

void chol_trsm_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    submit_tile_op(rt, args, 2);
}

void chol_syrk_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    submit_tile_op(rt, args, 2);
}

void chol_gemm_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    submit_tile_op(rt, args, 3);
}
