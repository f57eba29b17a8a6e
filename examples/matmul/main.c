/*
 * matmul/main.c — runs the tiled matrix multiply in program mode and in
 * kernel mode, and checks each run against the same host reference.
 *
 * C = A x B with 256 x 256 f32 matrices and 64 x 64 tiles: 4 x 4 tiles of
 * C, each accumulated over 4 K steps, so 64 AIC tasks. A and B hold small
 * integers (-4..4): every product and partial sum is an integer below 2^24,
 * exactly representable, so the device result must equal the reference
 * exactly whatever the summation order.
 *
 * MATMUL_ORCH_SO and MATMUL_KERNELS_SO are the shared objects' paths, given
 * by the build. Exit status: 0 when both runs succeeded and C is exact after
 * each, 1 otherwise.
 */
#include <stdio.h>

#include "example_host.h"
#include "matmul.h"

#define DIM 256
#define TILE 64

static const enum simpler_direction gemm_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN,
                                                      SIMPLER_DIR_INOUT, SIMPLER_DIR_SCALAR};

static const struct example_kernel kernels[] = {
    {MATMUL_K_GEMM_TILE, SIMPLER_CORE_AIC, "kernel_gemm_tile", gemm_sig, 4},
};

/* Run arguments: A, B, C, tile edge. */
static const enum simpler_direction orch_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN,
                                                      SIMPLER_DIR_OUT, SIMPLER_DIR_SCALAR};

static const struct example_program program = {
    .name = "matmul",
    .orch_path = MATMUL_ORCH_SO,
    .entry = MATMUL_ENTRY,
    .signature = orch_sig,
    .sig_count = 4,
    .kernel_path = MATMUL_KERNELS_SO,
    .kernels = kernels,
    .kernel_count = 1,
};

static float a[DIM][DIM], b[DIM][DIM], c[DIM][DIM], reference[DIM][DIM];

/* Before each run: C must be overwritten, by that run alone. */
static void poison_output(void)
{
    for (int i = 0; i < DIM; i++)
        for (int j = 0; j < DIM; j++)
            c[i][j] = -1.0f;
}

/* Elements of C that differ from the reference. */
static int wrong_elements(void)
{
    int wrong = 0;
    for (int i = 0; i < DIM; i++)
        for (int j = 0; j < DIM; j++)
            wrong += c[i][j] != reference[i][j];
    return wrong;
}

static int report_program(const struct example_outcome *outcome)
{
    int wrong = wrong_elements();
    const uint64_t tiles = DIM / TILE;
    char detail[128];
    snprintf(detail, sizeof detail, "exact: %d of %d elements wrong, %llu edges", wrong,
             DIM * DIM, (unsigned long long)outcome->info.edges);
    /* Each tile's K chain is 3 edges, and tiles never depend on each other:
     * more edges would mean the runtime saw overlap between disjoint tiles of
     * the same rows (a false dependency), fewer a missing one. */
    int passed = wrong == 0 && outcome->info.tasks_submitted == tiles * tiles * tiles &&
                 outcome->info.edges == tiles * tiles * (tiles - 1);
    return example_report(&program, outcome, passed, detail);
}

static int report_kernel(const struct example_kernel_outcome *outcome)
{
    int wrong = wrong_elements();
    char detail[128];
    snprintf(detail, sizeof detail, "exact: %d of %d elements wrong", wrong, DIM * DIM);
    return example_report_kernel(&program, outcome, wrong == 0, detail);
}

int main(void)
{
    uint64_t seed = 2024;
    for (int i = 0; i < DIM; i++) {
        for (int j = 0; j < DIM; j++) {
            a[i][j] = (float)((int)(example_random(&seed) % 9) - 4);
            b[i][j] = (float)((int)(example_random(&seed) % 9) - 4);
        }
    }
    for (int i = 0; i < DIM; i++) {
        for (int j = 0; j < DIM; j++) {
            float sum = 0.0f;
            for (int k = 0; k < DIM; k++)
                sum += a[i][k] * b[k][j];
            reference[i][j] = sum;
        }
    }

    const uint64_t shape[2] = {DIM, DIM};
    struct simpler_tensor tensors[3];
    float(*buffers[3])[DIM] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (simpler_tensor_make(&tensors[i], (uint64_t)(uintptr_t)buffers[i], shape, 2,
                                SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST))
            return 1;
    const uint64_t scalars[1] = {TILE};
    struct simpler_args args = {.tensor_count = 3, .scalar_count = 1, .tensors = tensors,
                                .scalars = scalars};

    const struct example_checks checks = {poison_output, report_program, report_kernel};
    return example_run_both(&program, &args, &checks);
}
