/*
 * vector/main.c — runs the vector example in program mode and in kernel
 * mode, and checks each run the same way.
 *
 * f = (a + b + 1) * (a + b + 2) + (a + b) over 16384 floats. The inputs are
 * multiples of 1/4 and 1/2 small enough that every intermediate is exactly
 * representable, so the device result must equal the host's bit for bit
 * whatever the order or contraction of the arithmetic.
 *
 * VECTOR_ORCH_SO and VECTOR_KERNELS_SO are the shared objects' paths, given
 * by the build. Exit status: 0 when both runs succeeded and every element of
 * each is right, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>

#include "example_host.h"
#include "vector.h"

#define N 16384

static const enum simpler_direction binary_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN,
                                                        SIMPLER_DIR_OUT};
static const enum simpler_direction scalar_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_OUT,
                                                        SIMPLER_DIR_SCALAR};

static const struct example_kernel kernels[] = {
    {VECTOR_K_ADD, SIMPLER_CORE_AIV, "kernel_add", binary_sig, 3},
    {VECTOR_K_ADD_SCALAR, SIMPLER_CORE_AIV, "kernel_add_scalar", scalar_sig, 3},
    {VECTOR_K_MUL, SIMPLER_CORE_AIV, "kernel_mul", binary_sig, 3},
};

/* Run arguments: a, b, f. */
static const enum simpler_direction orch_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN,
                                                      SIMPLER_DIR_OUT};

static const struct example_program program = {
    .name = "vector",
    .orch_path = VECTOR_ORCH_SO,
    .entry = VECTOR_ENTRY,
    .signature = orch_sig,
    .sig_count = 3,
    .kernel_path = VECTOR_KERNELS_SO,
    .kernels = kernels,
    .kernel_count = 3,
};

static float a[N], b[N], f[N];

/* Before each run: f must be overwritten, by that run alone. */
static void poison_output(void)
{
    for (int i = 0; i < N; i++)
        f[i] = -1.0f;
}

/* Elements of f that differ from the host's exact result. */
static int wrong_elements(void)
{
    int wrong = 0;
    for (int i = 0; i < N; i++) {
        float c = a[i] + b[i];
        float expect = (c + 1.0f) * (c + 2.0f) + c;
        wrong += f[i] != expect;
    }
    return wrong;
}

static int report_program(const struct example_outcome *outcome)
{
    int wrong = wrong_elements();
    char detail[96];
    snprintf(detail, sizeof detail, "exact: %d of %d elements wrong, %llu edges", wrong, N,
             (unsigned long long)outcome->info.edges);
    /* 5 tasks and 6 inferred edges: a different count means the graph
     * changed, even if the values came out right. */
    int passed = wrong == 0 && outcome->info.tasks_submitted == 5 && outcome->info.edges == 6;
    return example_report(&program, outcome, passed, detail);
}

static int report_kernel(const struct example_kernel_outcome *outcome)
{
    int wrong = wrong_elements();
    char detail[96];
    snprintf(detail, sizeof detail, "exact: %d of %d elements wrong", wrong, N);
    return example_report_kernel(&program, outcome, wrong == 0, detail);
}

int main(void)
{
    for (int i = 0; i < N; i++) {
        a[i] = (float)(i % 97) * 0.25f;
        b[i] = (float)(i % 89) * 0.5f - 10.0f;
    }
    struct simpler_tensor tensors[3];
    float *buffers[3] = {a, b, f};
    for (int i = 0; i < 3; i++)
        if (simpler_tensor_make_1d(&tensors[i], (uint64_t)(uintptr_t)buffers[i], N,
                                   SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST))
            return 1;
    struct simpler_args args = {.tensor_count = 3, .tensors = tensors};

    const struct example_checks checks = {poison_output, report_program, report_kernel};
    return example_run_both(&program, &args, &checks);
}
