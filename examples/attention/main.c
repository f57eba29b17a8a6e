/*
 * attention/main.c — runs the attention example in program mode and in
 * kernel mode, and checks each run against the same host reference.
 *
 * O[h] = softmax(Q[h] K[h]^T / sqrt(64)) V[h] for 4 heads, sequence 256,
 * head dim 64, tiles of 32 rows: 4 x 8 query tiles, each 1 init + 8 key
 * steps x 4 tasks + 1 normalize = 34 tasks, 1088 in all, in 32 outer and
 * 256 inner scopes. Inputs are uniform in [-1, 1). The reference is a
 * two-pass softmax in double precision; the device computes in float with
 * an online softmax, so the check is a tolerance: every |O - reference|
 * <= 1e-5 (outputs are convex combinations of V rows, so |O| <= 1 and this
 * is also a relative bound of about 100 float ulps at 1.0). The kernel-mode
 * run must also equal the program-mode run bit for bit (same kernels, same
 * graph, same order within each query tile's chain).
 *
 * ATTENTION_ORCH_SO and ATTENTION_KERNELS_SO are the shared objects' paths,
 * given by the build. Exit status: 0 when both runs succeeded, O is within
 * tolerance after each and the two agree, 1 otherwise.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "attention.h"
#include "example_host.h"

#define HEADS 4
#define SEQ 256
#define HEAD_DIM 64
#define TILE 32
#define TOLERANCE 1e-5

static const enum simpler_direction init_sig[] = {SIMPLER_DIR_OUT, SIMPLER_DIR_OUT,
                                                      SIMPLER_DIR_OUT};
static const enum simpler_direction scores_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN,
                                                        SIMPLER_DIR_OUT, SIMPLER_DIR_SCALAR};
static const enum simpler_direction softmax_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_INOUT,
                                                         SIMPLER_DIR_INOUT, SIMPLER_DIR_OUT,
                                                         SIMPLER_DIR_OUT};
static const enum simpler_direction rescale_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_INOUT};
static const enum simpler_direction pv_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN,
                                                    SIMPLER_DIR_INOUT};
static const enum simpler_direction normalize_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN,
                                                           SIMPLER_DIR_OUT};

static const struct example_kernel kernels[] = {
    {ATTN_K_INIT, SIMPLER_CORE_AIV, "kernel_attn_init", init_sig, 3},
    {ATTN_K_SCORES, SIMPLER_CORE_AIC, "kernel_attn_scores", scores_sig, 4},
    {ATTN_K_SOFTMAX, SIMPLER_CORE_AIV, "kernel_attn_softmax", softmax_sig, 5},
    {ATTN_K_RESCALE, SIMPLER_CORE_AIV, "kernel_attn_rescale", rescale_sig, 2},
    {ATTN_K_PV, SIMPLER_CORE_AIC, "kernel_attn_pv", pv_sig, 3},
    {ATTN_K_NORMALIZE, SIMPLER_CORE_AIV, "kernel_attn_normalize", normalize_sig, 3},
};

/* Run arguments: Q, K, V, O, tile edge, scale. */
static const enum simpler_direction orch_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_IN,
                                                      SIMPLER_DIR_IN, SIMPLER_DIR_OUT,
                                                      SIMPLER_DIR_SCALAR, SIMPLER_DIR_SCALAR};

static const struct example_program program = {
    .name = "attention",
    .orch_path = ATTENTION_ORCH_SO,
    .entry = ATTENTION_ENTRY,
    .signature = orch_sig,
    .sig_count = 6,
    .kernel_path = ATTENTION_KERNELS_SO,
    .kernels = kernels,
    .kernel_count = sizeof kernels / sizeof kernels[0],
};

static float q[HEADS][SEQ][HEAD_DIM], k[HEADS][SEQ][HEAD_DIM], v[HEADS][SEQ][HEAD_DIM];
static float o[HEADS][SEQ][HEAD_DIM];
static float o_program[HEADS][SEQ][HEAD_DIM]; /* O of the program-mode run, when it ran */
static bool have_program_output;
static double reference[HEADS][SEQ][HEAD_DIM];

/* Two-pass softmax attention in double precision. */
static void attention_reference(double scale)
{
    static double score[SEQ];
    for (int h = 0; h < HEADS; h++) {
        for (int i = 0; i < SEQ; i++) {
            double max = -INFINITY, sum = 0.0;
            for (int j = 0; j < SEQ; j++) {
                double dot = 0.0;
                for (int c = 0; c < HEAD_DIM; c++)
                    dot += (double)q[h][i][c] * k[h][j][c];
                score[j] = scale * dot;
                max = fmax(max, score[j]);
            }
            for (int j = 0; j < SEQ; j++) {
                score[j] = exp(score[j] - max);
                sum += score[j];
            }
            for (int c = 0; c < HEAD_DIM; c++) {
                double out = 0.0;
                for (int j = 0; j < SEQ; j++)
                    out += score[j] * v[h][j][c];
                reference[h][i][c] = out / sum;
            }
        }
    }
}

static float uniform(uint64_t *seed)
{
    return (float)example_random(seed) / 2147483648.0f - 1.0f; /* 31 random bits */
}

/* Before each run: O must be overwritten, by that run alone. */
static void poison_output(void)
{
    for (int h = 0; h < HEADS; h++)
        for (int s = 0; s < SEQ; s++)
            for (int c = 0; c < HEAD_DIM; c++)
                o[h][s][c] = NAN;
}

/* Writes into `detail` how O compares with the reference; returns how many
 * elements are outside the tolerance. */
static int check_output(char *detail, size_t size)
{
    double max_error = 0.0;
    int wrong = 0;
    for (int h = 0; h < HEADS; h++) {
        for (int s = 0; s < SEQ; s++) {
            for (int c = 0; c < HEAD_DIM; c++) {
                double error = fabs((double)o[h][s][c] - reference[h][s][c]);
                if (!(error <= TOLERANCE)) /* NaN counts as wrong */
                    wrong++;
                if (error > max_error)
                    max_error = error;
            }
        }
    }
    snprintf(detail, size, "|err| <= %.0e: %d of %d wrong, max %.2e", TOLERANCE, wrong,
             HEADS * SEQ * HEAD_DIM, max_error);
    return wrong;
}

/* Also keeps O for the kernel-mode run to be compared with. */
static int report_program(const struct example_outcome *outcome)
{
    memcpy(o_program, o, sizeof o);
    have_program_output = true;
    char check[96], detail[128];
    int wrong = check_output(check, sizeof check);
    snprintf(detail, sizeof detail, "%s, %llu edges", check,
             (unsigned long long)outcome->info.edges);
    const uint64_t tiles = SEQ / TILE;
    const uint64_t expect_tasks = HEADS * tiles * (2 + 4 * tiles);
    int passed = wrong == 0 && outcome->info.tasks_submitted == expect_tasks;
    return example_report(&program, outcome, passed, detail);
}

/* Elements of O whose bits differ from the program-mode run's. Both modes
 * run the same kernels over the same graph, whose K steps are chained in a
 * fixed order: the float results must be identical, not merely close. */
static int differ_from_program(void)
{
    int differ = 0;
    for (int h = 0; h < HEADS; h++)
        for (int s = 0; s < SEQ; s++)
            differ += memcmp(&o[h][s], &o_program[h][s], sizeof o[h][s]) != 0;
    return differ;
}

static int report_kernel(const struct example_kernel_outcome *outcome)
{
    char check[96], detail[160];
    int wrong = check_output(check, sizeof check);
    int differ = have_program_output ? differ_from_program() : 0;
    if (have_program_output)
        snprintf(detail, sizeof detail, "%s, %d of %d rows differ from program mode", check,
                 differ, HEADS * SEQ);
    else
        snprintf(detail, sizeof detail, "%s", check);
    return example_report_kernel(&program, outcome, wrong == 0 && differ == 0, detail);
}

int main(void)
{
    uint64_t seed = 7;
    for (int h = 0; h < HEADS; h++) {
        for (int s = 0; s < SEQ; s++) {
            for (int c = 0; c < HEAD_DIM; c++) {
                q[h][s][c] = uniform(&seed);
                k[h][s][c] = uniform(&seed);
                v[h][s][c] = uniform(&seed);
            }
        }
    }
    const float scale = 0.125f; /* 1 / sqrt(HEAD_DIM), exact */
    attention_reference(scale);

    const uint64_t shape[3] = {HEADS, SEQ, HEAD_DIM};
    struct simpler_tensor tensors[4];
    float(*buffers[4])[SEQ][HEAD_DIM] = {q, k, v, o};
    for (int i = 0; i < 4; i++)
        if (simpler_tensor_make(&tensors[i], (uint64_t)(uintptr_t)buffers[i], shape, 3,
                                SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST))
            return 1;
    uint32_t scale_bits;
    memcpy(&scale_bits, &scale, sizeof scale_bits);
    const uint64_t scalars[2] = {TILE, scale_bits};
    struct simpler_args args = {.tensor_count = 4, .scalar_count = 2, .tensors = tensors,
                                .scalars = scalars};

    const struct example_checks checks = {poison_output, report_program, report_kernel};
    return example_run_both(&program, &args, &checks);
}
