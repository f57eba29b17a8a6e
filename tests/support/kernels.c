/*
 * kernels.c — compute kernels more than one test runs (see kernels.h).
 */
#include "kernels.h"

#include "simpler/kernel.h"

void tk_count_i64(int64_t *args)
{
    int64_t *counter = simpler_kernel_data(args, 0);
    (*counter)++;
}

void tk_fill_i32(int64_t *args)
{
    int32_t *out = simpler_kernel_data(args, 0);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 0));
    int32_t s = (int32_t)simpler_kernel_scalar_u64(args, 1);
    for (uint64_t k = 0; k < n; k++)
        out[k] = s + (int32_t)k;
}

void tk_copy_i32(int64_t *args)
{
    const int32_t *in = simpler_kernel_data(args, 0);
    int32_t *out = simpler_kernel_data(args, 1);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 1));
    for (uint64_t k = 0; k < n; k++)
        out[k] = in[k];
}

void tk_add_f32(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0);
    const float *y = simpler_kernel_data(args, 1);
    float *z = simpler_kernel_data(args, 2);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 2));
    for (uint64_t k = 0; k < n; k++)
        z[k] = x[k] + y[k];
}
