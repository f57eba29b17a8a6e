/*
 * tr_support.h — the trace fixture, shared by the two halves of test_trace
 * (scenario/ and unit/trace/..._internals.c) and linked into those two
 * only: five kernels and two orchestrations named by symbol (the vector
 * example and a chain through the TensorMap), callables built from them,
 * the files a test's trace is written to, and program and kernel contexts
 * opened at a trace level. Public headers only.
 */
#ifndef SIMPLER_TR_SUPPORT_H
#define SIMPLER_TR_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/simpler.h"
#include "test_support.h"

#define N 1024        /* elements of every tensor of these tests */
#define VEC_ID 3      /* open_program's vector example */
#define CHAIN_ID 4    /* open_program's chain: scalars[0] tasks INOUT on tensor 0 */
#define FAIL_CODE 233 /* what task t1 of the vector example fails with (scalar 99) */

/* A callable of orchestration `orch` (a symbol) over `tensors` tensors and
 * `scalars` scalars, with the kernels as func ids 0..4: tr_add,
 * tr_add_scalar, tr_mul, tr_touch, tr_block_mark. Its signature: with 3
 * tensors IN, IN, OUT, else every tensor INOUT; then the scalars. */
void *image_of(const char *orch, uint32_t tensors, uint32_t scalars, size_t *bytes);

/* The path of this test's trace output ending in `suffix` (".json",
 * ".deps.json", ".deps.dot"); static storage, rewritten by the next call. */
const char *trace_path(const char *suffix);

/* Per-test setup and teardown: a fresh trace path for this process, no
 * trace files left from before or after, SIMPLER_TRACE unset. */
int setup(void **state);
int teardown(void **state);

/* A program context of depth 2 on device 0 of topology `topo` (NULL: the
 * small one) with runs traced at `trace_level` into trace_path(".json");
 * the vector example registered as VEC_ID, the chain as CHAIN_ID. */
struct simpler_context *open_program(uint32_t trace_level, const struct simdev_config *topo);
/* Finalizes (asserting committed memory 0: the trace region was freed),
 * destroys, and tears down the device. */
void close_program(struct simpler_context *ctx);

/* The vector example's host buffers and args. */
struct vec_bufs {
    float a[N], b[N], f[N];
    struct simpler_tensor t[3];
    uint64_t scalar;
    struct simpler_args args;
};

/* The buffers vector_args last filled. */
extern struct vec_bufs g_vec;

/* The vector example's args over fresh host buffers (scalar: t1's). */
const struct simpler_args *vector_args(float scalar);

/* A kernel context on the fixture's device 0, initialised at `level`. */
struct simpler_context *open_kernel(uint32_t level);

#endif /* SIMPLER_TR_SUPPORT_H */
