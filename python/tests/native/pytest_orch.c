/*
 * pytest_orch.c — the orchestrations the Python tests run (python/tests).
 *
 * Owns: two one-task graphs, small enough that a run costs little more than
 * the runtime's own overhead (the leak test runs 10,000 of them):
 *   offset_orchestration  y = x + s over 1-D f32 views of any stride
 *                         (args: x IN, y OUT, s scalar f32 bits)
 *   fail_orchestration    one task that reports kernel failure 321, so the
 *                         run's status is -321 (args: x IN, y OUT)
 */
#include "simpler/orchestration.h"

enum { PYTEST_K_OFFSET = 0, PYTEST_K_FAIL = 1 };

static int one_to_one_valid(const struct simpler_orch_args *args, uint32_t scalars)
{
    if (args->tensor_count != 2 || args->scalar_count != scalars)
        return 0;
    const struct simpler_tensor *x = &args->tensors[0], *y = &args->tensors[1];
    return x->ndims == 1 && y->ndims == 1 && x->dtype == SIMPLER_DTYPE_F32 &&
           y->dtype == SIMPLER_DTYPE_F32 && x->shape[0] == y->shape[0];
}

static void submit_one(struct simpler_orch *rt, const struct simpler_orch_args *args,
                       int32_t func_id, uint32_t scalars)
{
    if (!one_to_one_valid(args, scalars)) {
        rt->ops->fatal(rt);
        return;
    }
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &args->tensors[0]);
    simpler_task_args_add_output_existing(&ta, &args->tensors[1]);
    for (uint32_t i = 0; i < scalars; i++)
        simpler_task_args_add_scalar(&ta, args->scalars[i]);
    simpler_submit_aiv(rt, func_id, &ta, NULL);
}

void offset_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    submit_one(rt, args, PYTEST_K_OFFSET, 1);
}

void fail_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    submit_one(rt, args, PYTEST_K_FAIL, 0);
}
