/*
 * kernel_mode_demo.c — kernel mode as a framework uses it. `make run` shows
 * it after runtime_demo.
 *
 * The host here plays the framework: it owns device 0, its stream and the
 * device tensors, and simpler borrows them (docs/kernel-mode.md). It
 * demonstrates, in order:
 *   1. a context initialised in kernel mode on the framework's current
 *      device, and a callable prepared once (symbol form: the orchestration
 *      and kernels are exported functions of this executable);
 *   2. three rounds on the same device tensors: before each launch the
 *      framework writes fresh inputs into x with simdev_memcpy, and after
 *      simdev_stream_sync of its own stream (the round's status) it reads
 *      y and acc back and checks every element; acc accumulates across the
 *      rounds, so a round that ran twice or not at all shows;
 *   3. a round whose kernel fails with a code (simpler_kernel_fail): the
 *      stream's sync returns the code negated, and neither y nor acc was
 *      written (the failing task's consumers never ran);
 *   4. a round after the failure, which works: the failure stayed with its
 *      round and the context is not poisoned;
 *   5. closing: simpler_finalize_device leaves 0 device bytes committed by
 *      the context, and the framework's stream and tensors are still its
 *      own to free.
 *
 * The callable: for each of BLOCKS slices, y = x * mul + add (AIV, or the
 * failure when the scalar `fail` is nonzero), then acc += y (AIV; depends
 * on the first through y, an edge the runtime infers). Values are small
 * integers, so every result is exact.
 *
 * Exit status: 0 when every check passed, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/kernel.h"
#include "simpler/orchestration.h"
#include "simpler/device.h"
#include "simpler/simpler.h"

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int check_rc_ = (call);                                                            \
        if (check_rc_ != 0) {                                                              \
            fprintf(stderr, "kernel_mode_demo: %s failed: %d (%s)\n", #call, check_rc_,    \
                    simpler_strerror(check_rc_));                                          \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define DEVICE 0
#define N 4096
#define BLOCKS 4
#define ROUNDS 3
#define DEMO_FAILURE 321

enum { K_SCALE, K_ACCUMULATE };
enum { S_MUL, S_ADD, S_FAIL, SCALARS };

/* ================================================================ device code
 *
 * Exported (not static): the callable image names them and the device
 * loader resolves them among this executable's symbols.
 */
void kernel_mode_demo_scale(int64_t *args);
void kernel_mode_demo_accumulate(int64_t *args);
void kernel_mode_demo_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);

/* y = x * mul + add over the view, or fail with the code `fail` (nonzero)
 * before writing anything. */
void kernel_mode_demo_scale(int64_t *args)
{
    uint64_t fail = simpler_kernel_scalar_u64(args, 2 + S_FAIL);
    if (fail) {
        simpler_kernel_fail(args, (int)fail);
        return;
    }
    const float *x = simpler_kernel_data(args, 0);
    float *y = simpler_kernel_data(args, 1);
    float mul = simpler_kernel_scalar_f32(args, 2 + S_MUL);
    float add = simpler_kernel_scalar_f32(args, 2 + S_ADD);
    for (uint64_t i = 0, n = simpler_tensor_numel(simpler_kernel_tensor(args, 1)); i < n; i++)
        y[i] = x[i] * mul + add;
}

/* acc += y over the view. */
void kernel_mode_demo_accumulate(int64_t *args)
{
    const float *y = simpler_kernel_data(args, 0);
    float *acc = simpler_kernel_data(args, 1);
    for (uint64_t i = 0, n = simpler_tensor_numel(simpler_kernel_tensor(args, 1)); i < n; i++)
        acc[i] += y[i];
}

/* Run arguments: x (IN), y (OUT), acc (INOUT), mul, add, fail. */
void kernel_mode_demo_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const uint64_t block = N / BLOCKS;
    for (uint64_t b = 0; b < BLOCKS; b++) {
        struct simpler_tensor x, y, acc;
        simpler_tensor_slice(&x, &args->tensors[0], 0, b * block, (b + 1) * block, 1);
        simpler_tensor_slice(&y, &args->tensors[1], 0, b * block, (b + 1) * block, 1);
        simpler_tensor_slice(&acc, &args->tensors[2], 0, b * block, (b + 1) * block, 1);
        struct simpler_task_args ta;
        simpler_task_args_init(&ta);
        simpler_task_args_add_input(&ta, &x);
        simpler_task_args_add_output_existing(&ta, &y);
        for (uint32_t s = 0; s < SCALARS; s++)
            simpler_task_args_add_scalar(&ta, args->scalars[s]);
        simpler_submit_aiv(rt, K_SCALE, &ta, NULL);

        simpler_task_args_init(&ta);
        simpler_task_args_add_input(&ta, &y);
        simpler_task_args_add_inout(&ta, &acc);
        simpler_submit_aiv(rt, K_ACCUMULATE, &ta, NULL);
    }
}

/* ====================================================================== host */

/* The symbol-form image of the callable (free with simpler_callable_free). */
static void *demo_image(size_t *bytes)
{
    static const enum simpler_direction sig[] = {SIMPLER_DIR_IN,     SIMPLER_DIR_OUT,
                                                 SIMPLER_DIR_INOUT,  SIMPLER_DIR_SCALAR,
                                                 SIMPLER_DIR_SCALAR, SIMPLER_DIR_SCALAR};
    static const enum simpler_direction scale_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_OUT,
                                                       SIMPLER_DIR_SCALAR, SIMPLER_DIR_SCALAR,
                                                       SIMPLER_DIR_SCALAR};
    static const enum simpler_direction acc_sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_INOUT};
    struct simpler_callable_builder *b;
    void *image;
    CHECK(simpler_callable_builder_create(&b));
    CHECK(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                     "kernel_mode_demo_orchestration", NULL, sig,
                                                     6));
    CHECK(simpler_callable_builder_add_kernel(b, K_SCALE, SIMPLER_CORE_AIV, SIMPLER_BINARY_SYMBOL,
                                              NULL, 0, "kernel_mode_demo_scale", scale_sig, 5));
    CHECK(simpler_callable_builder_add_kernel(b, K_ACCUMULATE, SIMPLER_CORE_AIV,
                                              SIMPLER_BINARY_SYMBOL, NULL, 0,
                                              "kernel_mode_demo_accumulate", acc_sig, 2));
    CHECK(simpler_callable_builder_finish(b, &image, bytes));
    simpler_callable_builder_destroy(b);
    return image;
}

/* The framework's device tensors, host copies of them, and what they must
 * hold. */
struct tensors {
    float *x, *y, *acc;           /* device, simdev_malloc'd by the framework */
    float x_host[N], y_host[N], acc_host[N];
    float y_expect[N];            /* y of the last round that ran */
    float acc_expect[N];          /* acc after the rounds that ran so far */
    struct simpler_tensor desc[3];
};

static uint64_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Writes fresh inputs into the device x (the framework's copy: simpler
 * never stages in kernel mode; small integers, different every round). */
static void inputs_fresh(struct tensors *t, int round)
{
    for (int i = 0; i < N; i++)
        t->x_host[i] = (float)(i % 101 + 1000 * round);
    CHECK(simdev_memcpy(t->x, t->x_host, sizeof t->x_host, SIMDEV_COPY_HOST_TO_DEVICE));
}

/* A round that computed y = x * mul + add and acc += y: the expectations
 * move on. */
static void expect_round(struct tensors *t, float mul, float add)
{
    for (int i = 0; i < N; i++) {
        t->y_expect[i] = t->x_host[i] * mul + add;
        t->acc_expect[i] += t->y_expect[i];
    }
}

/* Fresh inputs, one launched round on `stream`, and its status from the
 * stream's sync. When `fail` is 0 the round must compute y = x * mul + add
 * and acc += y. */
static int round_run(struct simpler_context *ctx, int32_t id, struct tensors *t,
                     simdev_stream_t stream, int round, float mul, float add, uint64_t fail)
{
    inputs_fresh(t, round);
    const uint64_t scalars[SCALARS] = {f32_bits(mul), f32_bits(add), fail};
    const struct simpler_args args = {3, SCALARS, t->desc, scalars};
    CHECK(simpler_kernel_mode_launch(ctx, id, &args, stream));
    int rc = simdev_stream_sync(stream);
    if (!fail)
        expect_round(t, mul, add);
    return rc;
}

/* Reads y and acc back; the elements that differ from the expectations. */
static int wrong_elements(struct tensors *t)
{
    CHECK(simdev_memcpy(t->y_host, t->y, sizeof t->y_host, SIMDEV_COPY_DEVICE_TO_HOST));
    CHECK(simdev_memcpy(t->acc_host, t->acc, sizeof t->acc_host, SIMDEV_COPY_DEVICE_TO_HOST));
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += t->y_host[i] != t->y_expect[i] || t->acc_host[i] != t->acc_expect[i];
    return wrong;
}

static int g_failed;

static void verdict(const char *what, int wrong)
{
    printf("  %-60s %s (%d of %d elements wrong)\n", what, wrong ? "FAIL" : "ok", wrong, N);
    g_failed |= wrong != 0;
}

int main(void)
{
    /* The framework's device and stream. */
    CHECK(simdev_set_device(DEVICE));
    struct simdev_config topo;
    CHECK(simdev_device_get_config(DEVICE, &topo));
    simdev_stream_t stream;
    CHECK(simdev_stream_create(&stream));
    struct tensors *t = calloc(1, sizeof *t);
    if (!t)
        return 1;
    float **device[3] = {&t->x, &t->y, &t->acc};
    for (int i = 0; i < 3; i++) {
        CHECK(simdev_malloc((void **)device[i], N * sizeof(float)));
        CHECK(simpler_tensor_make_1d(&t->desc[i], (uint64_t)(uintptr_t)*device[i], N,
                                     SIMPLER_DTYPE_F32, SIMPLER_MEM_DEVICE));
    }
    CHECK(simdev_memcpy(t->acc, t->acc_expect, sizeof t->acc_expect, SIMDEV_COPY_HOST_TO_DEVICE));
    printf("kernel_mode_demo: device %d (%u AICPU threads, %u AIC + %u AIV) and a stream owned "
           "by the host; x, y, acc: %d floats of device memory it allocated\n",
           DEVICE, topo.aicpu_threads, topo.aic_cores, topo.aiv_cores, N);

    /* 1. The context borrows them. */
    struct simpler_context *ctx;
    CHECK(simpler_create_device_context(&ctx));
    if (!simpler_kernel_mode_supported(ctx)) {
        fprintf(stderr, "kernel_mode_demo: kernel mode is not supported on device %d\n", DEVICE);
        return 1;
    }
    CHECK(simpler_kernel_mode_init(ctx, DEVICE, NULL, 0));
    size_t bytes;
    void *image = demo_image(&bytes);
    int32_t id;
    CHECK(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id));
    simpler_callable_free(image);
    size_t committed = simpler_committed_device_memory(ctx);
    printf("kernel mode: context initialised, callable prepared as id %d; %zu device bytes "
           "committed by the context\n",
           id, committed);

    /* 2. Rounds with fresh inputs in the same device tensors. */
    char what[96];
    for (int round = 1; round <= ROUNDS; round++) {
        int rc = round_run(ctx, id, t, stream, round, 2.0f, (float)round, 0);
        snprintf(what, sizeof what, "round %d: x fresh, sync %d; y = 2x + %d, acc += y", round, rc,
                 round);
        verdict(what, rc ? N : wrong_elements(t));
    }
    if (simpler_committed_device_memory(ctx) != committed) {
        printf("  a launch committed device memory: %zu bytes, was %zu\n",
               simpler_committed_device_memory(ctx), committed);
        g_failed = 1;
    }

    /* 3. A round whose kernel fails: the code, negated, at the sync; y and
     * acc keep the last round's values. */
    int rc = round_run(ctx, id, t, stream, ROUNDS + 1, 2.0f, 0.0f, DEMO_FAILURE);
    snprintf(what, sizeof what, "round %d: kernel fails with %d, sync %d; y, acc untouched",
             ROUNDS + 1, DEMO_FAILURE, rc);
    verdict(what, rc != -DEMO_FAILURE ? N : wrong_elements(t));

    /* 4. The next round works. */
    rc = round_run(ctx, id, t, stream, ROUNDS + 2, 3.0f, 1.0f, 0);
    snprintf(what, sizeof what, "round %d: after the failure, sync %d; y = 3x + 1, acc += y",
             ROUNDS + 2, rc);
    verdict(what, rc ? N : wrong_elements(t));

    /* 5. A framework's graph: one launch captured on the stream, then
     * replayed with fresh inputs in the same tensors. A replay reruns the
     * frozen launch (its packet, its scalars) with no host work of
     * simpler's, against whatever the tensors hold when it runs. */
    const uint64_t frozen[SCALARS] = {f32_bits(4.0f), f32_bits(0.5f), 0};
    const struct simpler_args captured = {3, SCALARS, t->desc, frozen};
    simdev_graph_t graph;
    simdev_graph_exec_t exec;
    CHECK(simdev_stream_begin_capture(stream));
    CHECK(simpler_kernel_mode_launch(ctx, id, &captured, stream));
    CHECK(simdev_stream_end_capture(stream, &graph));
    CHECK(simdev_graph_instantiate(&exec, graph));
    for (int replay = 1; replay <= 3; replay++) {
        inputs_fresh(t, ROUNDS + 2 + replay);
        CHECK(simdev_graph_launch(exec, stream));
        rc = simdev_stream_sync(stream);
        expect_round(t, 4.0f, 0.5f);
        snprintf(what, sizeof what, "replay %d of a captured launch: x fresh, sync %d; y = 4x + 0.5",
                 replay, rc);
        verdict(what, rc ? N : wrong_elements(t));
    }
    CHECK(simdev_graph_exec_destroy(exec));
    CHECK(simdev_graph_destroy(graph));

    /* 6. Close: the context lets go of everything it committed; the
     * framework's stream and tensors stay the framework's. */
    CHECK(simpler_finalize_device(ctx));
    committed = simpler_committed_device_memory(ctx);
    CHECK(simpler_destroy_device_context(ctx));
    printf("closed: %zu device bytes committed by the context\n", committed);
    g_failed |= committed != 0;
    for (int i = 0; i < 3; i++)
        CHECK(simdev_free(*device[i]));
    CHECK(simdev_stream_destroy(stream));
    free(t);

    printf("kernel_mode_demo: %s\n", g_failed ? "FAILED" : "OK");
    return g_failed ? 1 : 0;
}
