/*
 * fuzz_prepare.c — libFuzzer target for prepare's checks of a run's
 * descriptors, on a program-mode context, through the public API.
 *
 * Owns: the decoding of an input into one simpler_prepare_run call (three
 * tensor descriptors over real host and device buffers, every field
 * changed as the input says, and the counts) and the oracle that says with
 * its own 128-bit arithmetic whether prepare must accept it. The
 * properties, each abort()ing when violated:
 *  - prepare returns 0 exactly when the oracle accepts, else
 *    INVALID_ARGUMENT, and a refused prepare leaves the handle untouched
 *    and holds nothing (committed device memory unchanged);
 *  - an accepted run (of few enough elements to copy back quickly)
 *    launches, succeeds (its orchestration submits each descriptor again,
 *    its kernel touches every corner of every view) and is finalized; a
 *    larger one is finalized unlaunched; either way nothing stays held;
 *  - after the run, every host byte outside the elements of its OUT and
 *    INOUT host views holds what it held before (copy-back wrote only
 *    those), and ASan (the host buffers are allocations of exactly their
 *    size) sees no access outside a buffer in staging or copy-back.
 *
 * The callable is symbol-form: its orchestration and kernel are exported
 * by this executable. Built with SIMPLER_SANITIZE=fuzzer and run by
 * tests/fuzz/run-fuzz.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "simpler/orchestration.h"
#include "simpler/simpler.h"
#include "test_support.h"

typedef unsigned __int128 u128;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "fuzz_prepare: %s:%d: violated: %s\n", __FILE__, __LINE__, \
                    #cond);                                                            \
            abort();                                                                   \
        }                                                                              \
    } while (0)

#define CALLABLE 3
#define TENSORS 3
#define HOST_BUFFERS 3
#define COPY_BACK_LIMIT 65536 /* elements: beyond it a run is finalized unlaunched */
#define MAX_ARG_ELEMENTS (UINT64_C(1) << 48)

static const uint64_t host_bytes[HOST_BUFFERS] = {64, 256, 4096};
static const enum simpler_direction g_sig[TENSORS + 1] = {SIMPLER_DIR_IN, SIMPLER_DIR_OUT,
                                                          SIMPLER_DIR_INOUT, SIMPLER_DIR_SCALAR};

static struct simpler_context *g_ctx;
static uint8_t *g_host[HOST_BUFFERS]; /* malloc'd, exactly host_bytes each */
static uint8_t g_pattern[HOST_BUFFERS][4096];
static void *g_device;                /* one device buffer, for device tensors */
#define DEVICE_BYTES 4096
static size_t g_idle;                 /* committed device memory with no run */

/* ------------------------------------------------ the callable's code */

void fuzz_prepare_touch(int64_t *args);
void fuzz_prepare_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);

/* Reads every corner of tensor 0's view and, when scalar 1 says so,
 * writes it back unchanged. */
void fuzz_prepare_touch(int64_t *args)
{
    const struct simpler_tensor *t = simpler_kernel_tensor(args, 0);
    bool write = simpler_kernel_scalar_u64(args, 1) != 0;
    size_t es = simpler_dtype_size(t->dtype);
    for (uint32_t c = 0; c < (1u << t->ndims); c++) {
        uint64_t index[SIMPLER_TENSOR_MAX_DIMS];
        for (uint32_t d = 0; d < t->ndims; d++)
            index[d] = (c >> d) & 1 ? t->shape[d] - 1 : 0;
        volatile uint8_t *p = (uint8_t *)(uintptr_t)t->addr + simpler_tensor_offset_of(t, index) * es;
        for (size_t b = 0; b < es; b++) {
            uint8_t v = p[b];
            if (write)
                p[b] = v;
        }
    }
}

/* One task per run tensor, each the tensor as the run received it. */
void fuzz_prepare_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    static const uint32_t kind[TENSORS] = {SIMPLER_ARG_INPUT, SIMPLER_ARG_OUTPUT_EXISTING,
                                           SIMPLER_ARG_INOUT};
    for (uint32_t i = 0; i < args->tensor_count && i < TENSORS; i++) {
        struct simpler_task_args ta;
        simpler_task_args_init(&ta);
        simpler_task_args_add_(&ta, kind[i], &args->tensors[i]);
        simpler_task_args_add_scalar(&ta, kind[i] != SIMPLER_ARG_INPUT);
        simpler_submit_aiv(rt, 0, &ta, NULL);
    }
}

/* ------------------------------------------------------------- oracle */

/* The oracle's rule for one run argument: a descriptor as the constructors
 * make it (a valid address space, no producer, reserved zero, no unknown
 * flag), a real buffer with the view inside it (fuzz_oracle_view_ok, 128-bit
 * arithmetic), and at most MAX_ARG_ELEMENTS elements (*numel). */
static bool oracle_arg_ok(const struct simpler_tensor *t, u128 *numel)
{
    if (t->address_space > SIMPLER_MEM_DEVICE || t->producer_task_id != SIMPLER_TASK_ID_NONE ||
        t->reserved != 0 || (t->flags & ~SIMPLER_TENSOR_MANUAL_DEP) != 0 ||
        !fuzz_oracle_view_ok(t))
        return false;
    u128 n = 1; /* at most 2^48 before each product: no wrap */
    for (uint32_t d = 0; d < t->ndims; d++) {
        n *= t->shape[d];
        if (n > MAX_ARG_ELEMENTS)
            return false;
    }
    *numel = n;
    return true;
}

/* Host tensors must name one buffer exactly or not overlap at all. */
static bool oracle_host_buffers_ok(const struct simpler_tensor *t, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        for (uint32_t j = 0; j < i; j++) {
            const struct simpler_tensor *a = &t[i], *b = &t[j];
            if (a->address_space != SIMPLER_MEM_HOST || b->address_space != SIMPLER_MEM_HOST ||
                (a->addr == b->addr && a->buffer_bytes == b->buffer_bytes))
                continue;
            if ((u128)a->addr < (u128)b->addr + b->buffer_bytes &&
                (u128)b->addr < (u128)a->addr + a->buffer_bytes)
                return false;
        }
    return true;
}

/* Which host buffer holds `t`'s address, or -1. */
static int host_buffer_of(const struct simpler_tensor *t)
{
    for (int b = 0; b < HOST_BUFFERS; b++)
        if (t->addr == (uint64_t)(uintptr_t)g_host[b])
            return b;
    return -1;
}

/* Marks in `may_change` every byte of an element of `t` (a host view the
 * oracle accepted, of at most COPY_BACK_LIMIT elements). */
static void mark_elements(const struct simpler_tensor *t, uint8_t *may_change)
{
    size_t es = simpler_dtype_size(t->dtype);
    uint64_t index[SIMPLER_TENSOR_MAX_DIMS] = {0};
    for (uint64_t n = simpler_tensor_numel(t); n > 0; n--) {
        memset(may_change + simpler_tensor_offset_of(t, index) * es, 1, es);
        for (int d = t->ndims - 1; d >= 0 && ++index[d] == t->shape[d]; d--)
            index[d] = 0;
    }
}

/* ----------------------------------------------------------- libFuzzer */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    struct simpler_config cfg;
    CHECK(simpler_config_default(&cfg) == 0);
    cfg.pipeline_depth = 1;
    for (int i = 0; i < SIMPLER_RUN_RINGS; i++) {
        cfg.run_capacity.task_window[i] = 16;
        cfg.run_capacity.heap_bytes[i] = 64 * 1024;
        cfg.run_capacity.dep_pool[i] = 256;
    }
    cfg.run_capacity.tensormap_buckets = 64;
    cfg.run_capacity.tensormap_entries = 256;
    CHECK(simpler_create_device_context(&g_ctx) == 0);
    CHECK(simpler_init(g_ctx, 0, &cfg) == 0);

    struct simpler_callable_builder *b;
    void *image;
    size_t bytes;
    static const enum simpler_direction ksig[2] = {SIMPLER_DIR_INOUT, SIMPLER_DIR_SCALAR};
    CHECK(simpler_callable_builder_create(&b) == 0);
    CHECK(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                     "fuzz_prepare_orchestration", NULL, g_sig,
                                                     TENSORS + 1) == 0);
    CHECK(simpler_callable_builder_add_kernel(b, 0, SIMPLER_CORE_AIV, SIMPLER_BINARY_SYMBOL, NULL,
                                              0, "fuzz_prepare_touch", ksig, 2) == 0);
    CHECK(simpler_callable_builder_finish(b, &image, &bytes) == 0);
    simpler_callable_builder_destroy(b);
    CHECK(simpler_register_callable(g_ctx, CALLABLE, image, bytes) == 0);
    simpler_callable_free(image);

    for (int i = 0; i < HOST_BUFFERS; i++) {
        g_host[i] = malloc(host_bytes[i]);
        CHECK(g_host[i] != NULL);
        for (uint64_t k = 0; k < host_bytes[i]; k++)
            g_pattern[i][k] = (uint8_t)(k * 13 + i);
    }
    CHECK(simdev_malloc(&g_device, DEVICE_BYTES) == 0);
    g_idle = simpler_committed_device_memory(g_ctx);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    for (int i = 0; i < HOST_BUFFERS; i++)
        memcpy(g_host[i], g_pattern[i], host_bytes[i]);

    /* Room for the 4 tensors a wrong count may name (the last a copy). */
    struct simpler_tensor t[TENSORS + 1];
    for (int i = 0; i < TENSORS; i++) {
        uint8_t from = fuzz_u8(&in);
        uint32_t dtype = fuzz_u8(&in) % SIMPLER_DTYPE_COUNT;
        size_t es = simpler_dtype_size(dtype);
        uint64_t real;
        if (from % (HOST_BUFFERS + 1) == HOST_BUFFERS) {
            real = DEVICE_BYTES;
            CHECK(simpler_tensor_make_1d(&t[i], (uint64_t)(uintptr_t)g_device, real / es, dtype,
                                         SIMPLER_MEM_DEVICE) == 0);
        } else {
            real = host_bytes[from % HOST_BUFFERS];
            CHECK(simpler_tensor_make_1d(&t[i], (uint64_t)(uintptr_t)g_host[from % HOST_BUFFERS],
                                         real / es, dtype, SIMPLER_MEM_HOST) == 0);
        }
        fuzz_mutate_tensor(&in, &t[i], real, 0);
    }
    t[TENSORS] = t[0];
    uint64_t scalar = 0;
    struct simpler_args args = {TENSORS, 1, t, &scalar};
    uint8_t counts = fuzz_u8(&in);
    if (counts >= 0xf0) { /* the counts, or the arrays, do not match the signature */
        args.tensor_count = counts % (TENSORS + 2);
        args.scalar_count = (counts >> 2) % 3;
        if (counts & 1)
            args.tensors = NULL;
    }

    bool accept = args.tensor_count == TENSORS && args.scalar_count == 1 && args.tensors;
    u128 numel[TENSORS] = {0}, total = 0;
    for (int i = 0; accept && i < TENSORS; i++)
        accept = oracle_arg_ok(&t[i], &numel[i]);
    accept = accept && oracle_host_buffers_ok(t, TENSORS);
    for (int i = 0; accept && i < TENSORS; i++)
        total += numel[i];

    simpler_run_t run = 12345;
    int rc = simpler_prepare_run(g_ctx, &run, CALLABLE, &args, NULL);
    if (rc != (accept ? 0 : PTO_RUNTIME_ERR_INVALID_ARGUMENT))
        fprintf(stderr, "fuzz_prepare: prepare returned %d, the oracle says %s\n", rc,
                accept ? "accept" : "refuse");
    CHECK(rc == (accept ? 0 : PTO_RUNTIME_ERR_INVALID_ARGUMENT));
    if (rc != 0) {
        CHECK(run == 12345);                                    /* written on failure */
        CHECK(simpler_committed_device_memory(g_ctx) == g_idle); /* held staging */
        for (int i = 0; i < HOST_BUFFERS; i++)
            CHECK(memcmp(g_host[i], g_pattern[i], host_bytes[i]) == 0);
        return 0;
    }

    bool launch = total <= COPY_BACK_LIMIT;
    if (launch) {
        CHECK(simpler_launch_run(g_ctx, run) == 0);
        int status = simpler_wait_run(g_ctx, run);
        if (status != 0)
            fprintf(stderr, "fuzz_prepare: an accepted run failed with %d\n", status);
        CHECK(status == 0); /* submit refused a descriptor prepare accepted */
    }
    CHECK(simpler_finalize_run(g_ctx, run) == 0);
    CHECK(simpler_committed_device_memory(g_ctx) == g_idle); /* finalize left staging held */

    /* Only the elements of OUT and INOUT host views may have changed. */
    static uint8_t may_change[HOST_BUFFERS][4096];
    memset(may_change, 0, sizeof may_change);
    for (int i = 0; launch && i < TENSORS; i++) {
        int b = host_buffer_of(&t[i]);
        if (b >= 0 && t[i].address_space == SIMPLER_MEM_HOST && g_sig[i] != SIMPLER_DIR_IN)
            mark_elements(&t[i], may_change[b]);
    }
    for (int b = 0; b < HOST_BUFFERS; b++)
        for (uint64_t k = 0; k < host_bytes[b]; k++)
            if (!may_change[b][k] && g_host[b][k] != g_pattern[b][k]) {
                fprintf(stderr, "fuzz_prepare: host buffer %d byte %llu changed\n", b,
                        (unsigned long long)k);
                CHECK(false);
            }
    return 0;
}
