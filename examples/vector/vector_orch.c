/*
 * vector_orch.c — the vector example's orchestration (upstream's vector
 * example): f = (a + b + 1) * (a + b + 2) + (a + b), in five AIV tasks.
 *
 * Owns: the task graph only. It writes no dependency down: the runtime
 * infers all six edges from the runtime-allocated outputs each task reads.
 * The intermediates d, e and g live in an inner scope, so their heap space
 * is released when it ends.
 */
#include "vector.h"

/* Adds an f32 1-D OUTPUT of `n` elements to `ta`. */
static void add_vector_output(struct simpler_task_args *ta, uint64_t n)
{
    simpler_task_args_add_output(ta, &n, 1, SIMPLER_DTYPE_F32, 0);
}

static int vector_args_valid(const struct simpler_orch_args *args)
{
    if (args->tensor_count != 3 || args->scalar_count != 0)
        return 0;
    for (uint32_t i = 0; i < 3; i++) {
        const struct simpler_tensor *t = &args->tensors[i];
        if (t->ndims != 1 || t->dtype != SIMPLER_DTYPE_F32 || !simpler_tensor_is_contiguous(t) ||
            t->shape[0] != args->tensors[0].shape[0])
            return 0;
    }
    return 1;
}

void vector_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    if (!vector_args_valid(args)) {
        rt->ops->fatal(rt);
        return;
    }
    const struct simpler_tensor *a = &args->tensors[0], *b = &args->tensors[1];
    const struct simpler_tensor *f = &args->tensors[2];
    uint64_t n = a->shape[0];
    struct simpler_task_args ta;
    struct simpler_task_result c, d, e, g;

    simpler_task_args_init(&ta); /* c = a + b */
    simpler_task_args_add_input(&ta, a);
    simpler_task_args_add_input(&ta, b);
    add_vector_output(&ta, n);
    simpler_submit_aiv(rt, VECTOR_K_ADD, &ta, &c);

    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);

    simpler_task_args_init(&ta); /* d = c + 1 */
    simpler_task_args_add_input(&ta, &c.outputs[0]);
    add_vector_output(&ta, n);
    simpler_task_args_add_scalar_f32(&ta, 1.0f);
    simpler_submit_aiv(rt, VECTOR_K_ADD_SCALAR, &ta, &d);

    simpler_task_args_init(&ta); /* e = c + 2 */
    simpler_task_args_add_input(&ta, &c.outputs[0]);
    add_vector_output(&ta, n);
    simpler_task_args_add_scalar_f32(&ta, 2.0f);
    simpler_submit_aiv(rt, VECTOR_K_ADD_SCALAR, &ta, &e);

    simpler_task_args_init(&ta); /* g = d * e */
    simpler_task_args_add_input(&ta, &d.outputs[0]);
    simpler_task_args_add_input(&ta, &e.outputs[0]);
    add_vector_output(&ta, n);
    simpler_submit_aiv(rt, VECTOR_K_MUL, &ta, &g);

    simpler_task_args_init(&ta); /* f = g + c, into the run's output */
    simpler_task_args_add_input(&ta, &g.outputs[0]);
    simpler_task_args_add_input(&ta, &c.outputs[0]);
    simpler_task_args_add_output_existing(&ta, f);
    simpler_submit_aiv(rt, VECTOR_K_ADD, &ta, NULL);

    simpler_scope_end(rt);
}
