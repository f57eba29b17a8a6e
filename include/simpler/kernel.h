/*
 * simpler/kernel.h — what a compute kernel (AIC or AIV) sees.
 *
 * Owns: the kernel ABI. A kernel is `void kernel_entry(int64_t *args)`, in a
 * shared object or linked into the process. args[0..tensor_count) point to
 * the task's tensor descriptors (struct simpler_tensor, in device memory),
 * the task's scalars follow in order, and args[SIMPLER_KERNEL_CONTEXT_ARG]
 * points to this dispatch's context (block index, block count, lane). The
 * helpers below are header-only: kernels link against nothing.
 */
#ifndef SIMPLER_KERNEL_H
#define SIMPLER_KERNEL_H

#include <stdint.h>
#include <string.h>

#include "simpler/status.h"
#include "simpler/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SIMPLER_TASK_MAX_TENSORS 32
#define SIMPLER_TASK_MAX_SCALARS 16
/* Index of the context pointer in args: after every possible tensor and scalar. */
#define SIMPLER_KERNEL_CONTEXT_ARG (SIMPLER_TASK_MAX_TENSORS + SIMPLER_TASK_MAX_SCALARS)
#define SIMPLER_KERNEL_ARGS (SIMPLER_KERNEL_CONTEXT_ARG + 1)

typedef void (*simpler_kernel_fn)(int64_t *args);

/* Per-dispatch context, written by the scheduler before the doorbell. */
struct simpler_kernel_context {
    uint32_t block_idx;  /* 0..block_num-1 */
    uint32_t block_num;  /* SPMD block count of the task */
    uint32_t lane;       /* AIV lane of a mixed task (0 = AIV0, 1 = AIV1); 0 otherwise */
    uint32_t core_id;    /* the core running this block */
    int32_t failure;     /* 0, or the code the kernel reported (simpler_kernel_fail) */
    uint32_t reserved;
};

static inline struct simpler_kernel_context *simpler_kernel_context(int64_t *args)
{
    return (struct simpler_kernel_context *)(uintptr_t)args[SIMPLER_KERNEL_CONTEXT_ARG];
}

/* The i-th tensor argument. */
static inline const struct simpler_tensor *simpler_kernel_tensor(int64_t *args, uint32_t i)
{
    return (const struct simpler_tensor *)(uintptr_t)args[i];
}

/* Data pointer of the i-th tensor argument (its first element). */
static inline void *simpler_kernel_data(int64_t *args, uint32_t i)
{
    return simpler_tensor_data(simpler_kernel_tensor(args, i));
}

/* The scalar at args position `pos` (tensor count + scalar index). */
static inline uint64_t simpler_kernel_scalar_u64(int64_t *args, uint32_t pos)
{
    return (uint64_t)args[pos];
}

static inline float simpler_kernel_scalar_f32(int64_t *args, uint32_t pos)
{
    uint32_t bits = (uint32_t)(uint64_t)args[pos];
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint32_t simpler_kernel_block_idx(int64_t *args)
{
    return simpler_kernel_context(args)->block_idx;
}

static inline uint32_t simpler_kernel_block_num(int64_t *args)
{
    return simpler_kernel_context(args)->block_num;
}

static inline uint32_t simpler_kernel_lane(int64_t *args)
{
    return simpler_kernel_context(args)->lane;
}

/*
 * Reports a failure: the task fails and the run's status becomes -code.
 * `code` must be in SIMPLER_KERNEL_ERR_MIN..SIMPLER_KERNEL_ERR_MAX (200..999);
 * any other value reports SIMPLER_KERNEL_ERR_MIN. The kernel should return
 * soon after. The first failure of a run wins.
 */
static inline void simpler_kernel_fail(int64_t *args, int code)
{
    if (code < SIMPLER_KERNEL_ERR_MIN || code > SIMPLER_KERNEL_ERR_MAX)
        code = SIMPLER_KERNEL_ERR_MIN;
    simpler_kernel_context(args)->failure = code;
}

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_KERNEL_H */
