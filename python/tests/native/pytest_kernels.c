/*
 * pytest_kernels.c — the kernels of pytest_orch.c's graphs.
 *
 * Owns: strided 1-D f32 arithmetic (it follows each view's stride, which
 * may be negative, so the tests can tell a view's elements from its gaps)
 * and a kernel that always fails with code 321.
 */
#include "simpler/kernel.h"

/* y[i] = x[i] + s; args: x (IN), y (OUT), s (f32 scalar). */
void kernel_offset(int64_t *args)
{
    const struct simpler_tensor *x = simpler_kernel_tensor(args, 0);
    const struct simpler_tensor *y = simpler_kernel_tensor(args, 1);
    const float *xd = simpler_kernel_data(args, 0);
    float *yd = simpler_kernel_data(args, 1);
    float s = simpler_kernel_scalar_f32(args, 2);
    for (uint64_t i = 0; i < y->shape[0]; i++)
        yd[(int64_t)i * y->stride[0]] = xd[(int64_t)i * x->stride[0]] + s;
}

/* Reports 321: the run's status becomes -321 and y is never written. */
void kernel_fail(int64_t *args)
{
    simpler_kernel_fail(args, 321);
}
