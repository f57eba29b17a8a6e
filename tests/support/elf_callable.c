/*
 * elf_callable.c — a callable built as one ELF shared object, for
 * test_program_elf.c: two orchestrations, a config function and two
 * kernels, loaded on the device from memory. Links against nothing
 * (orchestration.h and kernel.h are header-only).
 */
#include <stdint.h>

#include "simpler/kernel.h"
#include "simpler/orchestration.h"

/* func 5: y = x * s (f32 scalar). */
void elf_scale(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0);
    float *y = simpler_kernel_data(args, 1);
    float s = simpler_kernel_scalar_f32(args, 2);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 1));
    for (uint64_t i = 0; i < n; i++)
        y[i] = x[i] * s;
}

/* func 7: every element (i, j) of a 2-D u32 view = base + 100 i + j,
 * through the view's strides. */
void elf_fill(int64_t *args)
{
    const struct simpler_tensor *t = simpler_kernel_tensor(args, 0);
    uint32_t *base_ptr = (uint32_t *)(uintptr_t)t->addr;
    uint32_t base = (uint32_t)simpler_kernel_scalar_u64(args, 1);
    for (uint64_t i = 0; i < t->shape[0]; i++)
        for (uint64_t j = 0; j < t->shape[1]; j++) {
            uint64_t index[2] = {i, j};
            base_ptr[simpler_tensor_offset_of(t, index)] = base + (uint32_t)(100 * i + j);
        }
}

/* The callable's run config: twice the defaults' first heap, so a context
 * sized exactly for the defaults refuses it (CAPACITY_EXCEEDED) — the
 * test's proof that this function ran. */
void elf_config(struct simpler_run_config *config)
{
    config->heap_bytes[0] *= 2;
}

/* Args: x (IN), y (OUT), acc (INOUT), s (scalar). y = x * s by func 5,
 * then acc += y by func 2 (a kernel of the host program, named by symbol). */
void elf_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &args->tensors[0]);
    simpler_task_args_add_output_existing(&ta, &args->tensors[1]);
    simpler_task_args_add_scalar(&ta, args->scalars[0]);
    simpler_submit_aiv(rt, 5, &ta, &r);
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &args->tensors[1]);
    simpler_task_args_add_inout(&ta, &args->tensors[2]);
    simpler_task_args_add_scalar(&ta, 7);
    simpler_submit_aiv(rt, 2, &ta, &r);
}

/* Args: v (OUT, a 2-D u32 view), base (scalar). One task: func 7. */
void elf_fill_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output_existing(&ta, &args->tensors[0]);
    simpler_task_args_add_scalar(&ta, args->scalars[0]);
    simpler_submit_aiv(rt, 7, &ta, &r);
}
