/*
 * vector_kernels.c — the vector example's AIV kernels, built as a shared
 * object that the host packs into the callable image.
 *
 * Owns: elementwise arithmetic over contiguous 1-D f32 tensors. Each kernel
 * reads its length from its output tensor; the orchestration gives every
 * argument of a task the same length.
 */
#include "vector.h"

#include "simpler/kernel.h"

/* z = x + y; args: x, y (IN), z (OUT). */
void kernel_add(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0);
    const float *y = simpler_kernel_data(args, 1);
    float *z = simpler_kernel_data(args, 2);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 2));
    for (uint64_t i = 0; i < n; i++)
        z[i] = x[i] + y[i];
}

/* z = x + s; args: x (IN), z (OUT), s (f32 scalar). */
void kernel_add_scalar(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0);
    float *z = simpler_kernel_data(args, 1);
    float s = simpler_kernel_scalar_f32(args, 2);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 1));
    for (uint64_t i = 0; i < n; i++)
        z[i] = x[i] + s;
}

/* z = x * y; args: x, y (IN), z (OUT). */
void kernel_mul(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0);
    const float *y = simpler_kernel_data(args, 1);
    float *z = simpler_kernel_data(args, 2);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 2));
    for (uint64_t i = 0; i < n; i++)
        z[i] = x[i] * y[i];
}
