/*
 * simpler/orchestration.h — what an orchestration function includes.
 *
 * Owns: the orchestration ABI. An orchestration runs on the device's
 * orchestrator thread (AICPU) and builds the task graph of one run: it
 * describes each task's arguments (struct simpler_task_args, built with the
 * inline helpers below), submits it by kernel func_id, and opens nested
 * scopes. It links against nothing: every runtime call goes through the
 * function table at the start of the runtime handle (rt->ops), wrapped here
 * by inline helpers.
 *
 * Entry point: `void entry(struct simpler_orch *rt, const struct
 * simpler_orch_args *args)`, called inside the run's outer scope (depth 0).
 * args holds the run's tensors (device descriptors) then its scalars.
 *
 * Errors: every call returns 0 or a negative run code (-SIMPLER_ORCH_ERR_*,
 * status.h). The first error of a run is latched: it becomes the run's
 * status, and every later submit returns it without doing anything, so an
 * orchestration may ignore return values and simply finish.
 *
 * Dependencies (docs/runtime.md): a task waits for every earlier task whose
 * writes overlap what it reads (read-after-write), whose reads or writes
 * overlap what it writes (write-after-read, write-after-write), for the
 * producer of any runtime-allocated output it uses (which is also kept alive
 * until the task completes), and for its explicit dependencies. Inside a
 * MANUAL scope only explicit dependencies apply.
 */
#ifndef SIMPLER_ORCHESTRATION_H
#define SIMPLER_ORCHESTRATION_H

#include <stdint.h>
#include <string.h>

#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SIMPLER_TASK_MAX_DEPS 32
#define SIMPLER_ORCH_MAX_TENSORS 64
#define SIMPLER_ORCH_MAX_SCALARS 64
#define SIMPLER_SCOPE_MAX_DEPTH 64
/* func_ids are 0..SIMPLER_MAX_FUNC_IDS-1. */
#define SIMPLER_MAX_FUNC_IDS 1024
/* "No kernel on this lane" in struct simpler_mixed_kernels. */
#define SIMPLER_NO_KERNEL (-1)

/* The run's arguments: tensors first, then scalars (64-bit words). */
struct simpler_orch_args {
    uint32_t tensor_count;
    uint32_t scalar_count;
    struct simpler_tensor tensors[SIMPLER_ORCH_MAX_TENSORS];
    uint64_t scalars[SIMPLER_ORCH_MAX_SCALARS];
};

enum simpler_arg_kind {
    SIMPLER_ARG_INPUT = 1,       /* read */
    SIMPLER_ARG_OUTPUT,          /* written; allocated by the runtime from shape + dtype */
    SIMPLER_ARG_OUTPUT_EXISTING, /* written; an existing tensor */
    SIMPLER_ARG_INOUT,           /* read and written */
    SIMPLER_ARG_NO_DEP,          /* read; no TensorMap dependency (creator edge only) */
};

/* How the runtime allocates an OUTPUT. */
struct simpler_tensor_create {
    uint64_t shape[SIMPLER_TENSOR_MAX_DIMS];
    uint32_t ndims;
    uint32_t dtype;
    uint32_t zero_fill; /* nonzero: the buffer is zeroed before the task runs */
};

struct simpler_task_arg {
    uint32_t kind;                       /* enum simpler_arg_kind */
    const struct simpler_tensor *tensor; /* borrowed until submit returns; NULL for OUTPUT */
    struct simpler_tensor_create create; /* OUTPUT only */
};

/*
 * One task's arguments. Build with simpler_task_args_init and the add/set
 * helpers; adding beyond a limit marks the args invalid (submit then fails
 * with SIMPLER_ORCH_ERR_INVALID_ARGS). Tensors come before scalars in the
 * kernel's args whatever order they were added in.
 */
struct simpler_task_args {
    uint32_t tensor_count;
    uint32_t scalar_count;
    uint32_t dep_count;
    uint32_t block_num;  /* SPMD blocks; default 1 */
    uint32_t sync_start; /* nonzero: every block must be resident at once */
    uint32_t invalid;    /* nonzero: a helper overflowed a limit */
    struct simpler_task_arg tensors[SIMPLER_TASK_MAX_TENSORS];
    uint64_t scalars[SIMPLER_TASK_MAX_SCALARS];
    uint64_t deps[SIMPLER_TASK_MAX_DEPS];
};

/* What a submit returns: the task id and the materialised OUTPUT tensors,
 * in the order the OUTPUT args were added. The outputs are valid inputs to
 * later submits until the scope that submitted the task ends. */
struct simpler_task_result {
    uint64_t task_id;
    uint32_t output_count;
    struct simpler_tensor outputs[SIMPLER_TASK_MAX_TENSORS];
};

/* Kernels of one task by lane; SIMPLER_NO_KERNEL where unused. One lane =
 * an AIC or AIV task; two or three = a mixed task on one cluster. */
struct simpler_mixed_kernels {
    int32_t aic;
    int32_t aiv0;
    int32_t aiv1;
};

enum simpler_scope_mode {
    SIMPLER_SCOPE_AUTO = 0,   /* dependencies inferred */
    SIMPLER_SCOPE_MANUAL = 1, /* explicit dependencies only */
};

struct simpler_orch;

struct simpler_orch_ops {
    int (*submit)(struct simpler_orch *rt, const struct simpler_mixed_kernels *kernels,
                  const struct simpler_task_args *args, struct simpler_task_result *out);
    int (*scope_begin)(struct simpler_orch *rt, uint32_t mode);
    int (*scope_end)(struct simpler_orch *rt);
    /* Reads one element (ndims indices) into *value, after every task
     * that writes it has completed. */
    int (*read_element)(struct simpler_orch *rt, const struct simpler_tensor *t,
                        const uint64_t *index, void *value);
    /* Writes one element after every earlier task that reads or writes it
     * has completed. */
    int (*write_element)(struct simpler_orch *rt, const struct simpler_tensor *t,
                         const uint64_t *index, const void *value);
    /* Fails the run with SIMPLER_ORCH_ERR_EXPLICIT_FATAL. */
    void (*fatal)(struct simpler_orch *rt);
    /* 0, or the run's latched error (negative). */
    int (*status)(struct simpler_orch *rt);
    uint32_t (*aic_count)(struct simpler_orch *rt);
    uint32_t (*aiv_count)(struct simpler_orch *rt);
    uint32_t (*cluster_count)(struct simpler_orch *rt); /* 1 AIC + 2 AIV each */
};

/* The runtime handle: the runtime's own state follows this prefix. */
struct simpler_orch {
    const struct simpler_orch_ops *ops;
};

typedef void (*simpler_orch_entry_fn)(struct simpler_orch *rt,
                                      const struct simpler_orch_args *args);

/* ------------------------------------------------------------ run config */

#define SIMPLER_RUN_RINGS 4 /* one task ring and heap ring per scope depth 0..2, deeper share the last */

/*
 * Sizes and limits of one run. simpler_run_config_default gives usable
 * values; the program-mode host checks every field (INVALID_ARGUMENT) and
 * that the run fits the context's arena (CAPACITY_EXCEEDED).
 */
struct simpler_run_config {
    uint32_t task_window[SIMPLER_RUN_RINGS]; /* task slots per ring; power of two, 4..2^20 */
    uint64_t heap_bytes[SIMPLER_RUN_RINGS];  /* output heap per ring; multiple of 64, >= 64 */
    uint32_t dep_pool[SIMPLER_RUN_RINGS];    /* dependency-list entries per ring; >= 16 */
    uint32_t tensormap_buckets;  /* power of two */
    uint32_t tensormap_entries;  /* recorded accesses alive at once */
    uint32_t max_fanin;          /* distinct producers of one task; >= 8 */
    uint32_t scheduler_threads;  /* 0 = every AICPU thread but the orchestrator's */
    uint32_t ring_timeout_ms;    /* no-progress bound of a ring/TensorMap wait */
    uint32_t sched_timeout_ms;   /* scheduler no-progress bound */
    uint32_t tensor_wait_timeout_ms; /* element read/write wait bound */
    /* Diagnostics (docs/diagnostics.md): 0 off; 1 every task on its core;
     * 2 + the schedulers' dispatch and finish; 3 + scheduler phases; 4 +
     * the orchestrator's submits. The environment's SIMPLER_TRACE, when
     * set, overrides it. */
    uint32_t trace_level;
    uint32_t trace_records;      /* records per device thread's buffer; 0 = 16384,
                                    at most 2^24 */
};

/* Window 1024, heap 16 MiB and dep pool 8192 per ring; TensorMap 4096
 * buckets x 16384 entries; fan-in 1024; timeouts 1 s ring, 10 s scheduler,
 * 15 s element access. */
static inline void simpler_run_config_default(struct simpler_run_config *c)
{
    for (uint32_t i = 0; i < SIMPLER_RUN_RINGS; i++) {
        c->task_window[i] = 1024;
        c->heap_bytes[i] = 16ull << 20;
        c->dep_pool[i] = 8192;
    }
    c->tensormap_buckets = 4096;
    c->tensormap_entries = 16384;
    c->max_fanin = 1024;
    c->scheduler_threads = 0;
    c->ring_timeout_ms = 1000;
    c->sched_timeout_ms = 10000;
    c->tensor_wait_timeout_ms = 15000;
    c->trace_level = 0;
    c->trace_records = 0;
}

/*
 * An orchestration binary may export a config function under the name its
 * callable image gives (callable.h). It is called once, when the callable is
 * loaded, with the context's run capacity (simpler.h; the defaults above
 * unless the context was configured otherwise); what it leaves in *config
 * is the callable's run config, used by every run prepared without one of
 * its own. Without a config function that is the run capacity itself.
 */
typedef void (*simpler_orch_config_fn)(struct simpler_run_config *config);

/* ------------------------------------------------------- building args */

static inline void simpler_task_args_init(struct simpler_task_args *a)
{
    a->tensor_count = a->scalar_count = a->dep_count = 0;
    a->block_num = 1;
    a->sync_start = 0;
    a->invalid = 0;
}

static inline void simpler_task_args_add_(struct simpler_task_args *a, uint32_t kind,
                                          const struct simpler_tensor *t)
{
    if (a->tensor_count >= SIMPLER_TASK_MAX_TENSORS || !t) {
        a->invalid = 1;
        return;
    }
    a->tensors[a->tensor_count].kind = kind;
    a->tensors[a->tensor_count].tensor = t;
    a->tensor_count++;
}

static inline void simpler_task_args_add_input(struct simpler_task_args *a,
                                               const struct simpler_tensor *t)
{
    simpler_task_args_add_(a, SIMPLER_ARG_INPUT, t);
}

static inline void simpler_task_args_add_inout(struct simpler_task_args *a,
                                               const struct simpler_tensor *t)
{
    simpler_task_args_add_(a, SIMPLER_ARG_INOUT, t);
}

static inline void simpler_task_args_add_output_existing(struct simpler_task_args *a,
                                                         const struct simpler_tensor *t)
{
    simpler_task_args_add_(a, SIMPLER_ARG_OUTPUT_EXISTING, t);
}

static inline void simpler_task_args_add_no_dep(struct simpler_task_args *a,
                                                const struct simpler_tensor *t)
{
    simpler_task_args_add_(a, SIMPLER_ARG_NO_DEP, t);
}

/* An output the runtime allocates from its heap ring: `ndims` dims of
 * `shape`, `dtype`, zeroed first when zero_fill is nonzero. */
static inline void simpler_task_args_add_output(struct simpler_task_args *a,
                                                const uint64_t *shape, uint32_t ndims,
                                                uint32_t dtype, uint32_t zero_fill)
{
    if (a->tensor_count >= SIMPLER_TASK_MAX_TENSORS || !shape || ndims < 1 ||
        ndims > SIMPLER_TENSOR_MAX_DIMS) {
        a->invalid = 1;
        return;
    }
    struct simpler_task_arg *arg = &a->tensors[a->tensor_count++];
    arg->kind = SIMPLER_ARG_OUTPUT;
    arg->tensor = NULL;
    memset(&arg->create, 0, sizeof arg->create);
    for (uint32_t i = 0; i < ndims; i++)
        arg->create.shape[i] = shape[i];
    arg->create.ndims = ndims;
    arg->create.dtype = dtype;
    arg->create.zero_fill = zero_fill;
}

static inline void simpler_task_args_add_scalar(struct simpler_task_args *a, uint64_t value)
{
    if (a->scalar_count >= SIMPLER_TASK_MAX_SCALARS) {
        a->invalid = 1;
        return;
    }
    a->scalars[a->scalar_count++] = value;
}

/* A float scalar, bit-cast into the low 32 bits. */
static inline void simpler_task_args_add_scalar_f32(struct simpler_task_args *a, float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    simpler_task_args_add_scalar(a, bits);
}

/* Explicit dependencies on earlier tasks (ids from submit results). */
static inline void simpler_task_args_set_dependencies(struct simpler_task_args *a,
                                                      const uint64_t *ids, uint32_t count)
{
    if (count > SIMPLER_TASK_MAX_DEPS || (count && !ids)) {
        a->invalid = 1;
        return;
    }
    for (uint32_t i = 0; i < count; i++)
        a->deps[i] = ids[i];
    a->dep_count = count;
}

static inline void simpler_task_args_set_block_num(struct simpler_task_args *a, uint32_t n)
{
    a->block_num = n;
}

static inline void simpler_task_args_set_sync_start(struct simpler_task_args *a, uint32_t on)
{
    a->sync_start = on;
}

/* ------------------------------------------------------------ submitting */

static inline int simpler_submit_mixed(struct simpler_orch *rt,
                                       const struct simpler_mixed_kernels *k,
                                       const struct simpler_task_args *a,
                                       struct simpler_task_result *out)
{
    return rt->ops->submit(rt, k, a, out);
}

static inline int simpler_submit_aiv(struct simpler_orch *rt, int32_t func_id,
                                     const struct simpler_task_args *a,
                                     struct simpler_task_result *out)
{
    struct simpler_mixed_kernels k = {SIMPLER_NO_KERNEL, func_id, SIMPLER_NO_KERNEL};
    return rt->ops->submit(rt, &k, a, out);
}

static inline int simpler_submit_aic(struct simpler_orch *rt, int32_t func_id,
                                     const struct simpler_task_args *a,
                                     struct simpler_task_result *out)
{
    struct simpler_mixed_kernels k = {func_id, SIMPLER_NO_KERNEL, SIMPLER_NO_KERNEL};
    return rt->ops->submit(rt, &k, a, out);
}

/* A task with no kernel: it completes as soon as its dependencies have, and
 * orders or allocates without occupying a core. */
static inline int simpler_submit_dummy(struct simpler_orch *rt, const struct simpler_task_args *a,
                                       struct simpler_task_result *out)
{
    struct simpler_mixed_kernels k = {SIMPLER_NO_KERNEL, SIMPLER_NO_KERNEL, SIMPLER_NO_KERNEL};
    return rt->ops->submit(rt, &k, a, out);
}

static inline int simpler_scope_begin(struct simpler_orch *rt, uint32_t mode)
{
    return rt->ops->scope_begin(rt, mode);
}

static inline int simpler_scope_end(struct simpler_orch *rt)
{
    return rt->ops->scope_end(rt);
}

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_ORCHESTRATION_H */
