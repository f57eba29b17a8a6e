/*
 * host/trace_host.h — the host side of tracing: which runs trace, the
 * device regions they record into, the host spans, and collection.
 *
 * Owns: the SIMPLER_TRACE setting of a context, a traced program-mode
 * run's region and spans (struct sp_trace_run, held by its submission), a kernel
 * context's region (committed once at init), and writing the files after a
 * run. At level 0 nothing here allocates or copies anything: the hooks
 * return at once. Called by the program-mode pipeline (pipeline.c,
 * run_slot.c), context.c and kernel_mode.c, with ctx->lock held (stated
 * per function).
 */
#ifndef SIMPLER_HOST_TRACE_HOST_H
#define SIMPLER_HOST_TRACE_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/trace_export.h"
#include "runtime/runtime.h"
#include "simpler/orchestration.h"

#define SP_TRACE_PATH_MAX 4096
#define SP_TRACE_DEFAULT_RECORDS 16384u
#define SP_TRACE_MAX_RECORDS (1u << 24)
#define SP_TRACE_DEFAULT_PATH "simpler-trace.json"

/* A context's tracing state (embedded in struct simpler_context). */
struct sp_trace_ctx {
    bool env_set;       /* SIMPLER_TRACE was set (and valid) at creation */
    uint32_t env_level;
    char path[SP_TRACE_PATH_MAX];
    /* Kernel mode: the region committed at init (NULL: not tracing). */
    uint32_t kernel_level;
    void *kernel_region;
    struct rt_trace_header kernel_layout;
    /* Kernel mode under host_build_graph: the last host build of a traced
     * round (begin, end; the round's generation, its tasks). */
    uint64_t kernel_build[2];
    uint64_t kernel_build_generation;
    uint64_t kernel_build_tasks;
    /* Device regions and host records tracing allocated, since creation:
     * tests check level 0 adds none. */
    uint64_t allocations;
};

/* A traced run's state (held by its submission; NULL when not traced). */
struct sp_trace_run {
    uint32_t level;
    void *region; /* device */
    struct rt_trace_header layout;
    uint64_t spans[SP_SPAN_COUNT][2];
    uint64_t host_build_tasks;
};

struct simpler_context;
struct sp_submission;

/* Parses a SIMPLER_TRACE value, "<level>[,<path>]" with level 0..4 and a
 * non-empty path shorter than SP_TRACE_PATH_MAX. 0 with *level and (when
 * given) `path` written, or INVALID_ARGUMENT with nothing written. */
int sp_trace_parse_env(const char *value, uint32_t *level, char path[SP_TRACE_PATH_MAX]);

/* Reads SIMPLER_TRACE into the context (a bad value is reported on stderr
 * and ignored). At creation, before anyone else sees ctx. */
void sp_trace_context_init(struct simpler_context *ctx);

/* The trace fields of a public run config: 0 or INVALID_ARGUMENT. */
int sp_trace_config_check(const struct simpler_run_config *c);

/* The level a run of config `c` traces at in `ctx`. */
uint32_t sp_trace_level(const struct simpler_context *ctx, const struct simpler_run_config *c);

/*
 * Program mode, prepare: for a run tracing at `level` (> 0) with
 * `schedulers` scheduler threads and `records` per buffer (0: default),
 * allocates its region (device) and record (host), zeroes the region's
 * header and buffer states on the device, and attaches it to *rtc (trace
 * and the edge log). Level 0: nothing, sub->trace NULL. 0 or the failing
 * call's code, with nothing held. Caller holds ctx->lock.
 */
int sp_trace_run_open(struct simpler_context *ctx, struct sp_submission *sub, uint32_t level,
                      uint32_t schedulers, uint32_t records, struct rt_config *rtc);

/* Records host span `span` of the submission's run as [begin, now) (no-op when
 * the run is not traced). */
void sp_trace_span(struct sp_submission *sub, enum sp_span span, uint64_t begin);
/* host_build_graph: the host build's span [begin, end) and the tasks it
 * built (no-op when the submission is not traced). */
void sp_trace_build_span(struct sp_submission *sub, uint64_t begin, uint64_t end,
                         uint32_t tasks);

/* The clock for a span's begin: 0 (no clock read) when not traced. */
uint64_t sp_trace_now(const struct sp_submission *sub);

/* Finalize of a launched, completed run: copies the region back and writes
 * the files (best effort: a failure goes to stderr). Caller holds
 * ctx->lock; the run is over on the device. */
void sp_trace_run_write(struct simpler_context *ctx, struct sp_submission *sub);

/* Frees the submission's trace (device region, host record). 0 or the free's
 * code (the record kept for a retry). Caller holds ctx->lock. */
int sp_trace_run_release(struct simpler_context *ctx, struct sp_submission *sub);

/* Kernel mode, init: commits the context's region when it traces. 0 or
 * the failing call's code; kernel_release undoes it
 * (sp_trace_kernel_release). Caller holds ctx->lock. */
int sp_trace_kernel_create(struct simpler_context *ctx);
int sp_trace_kernel_release(struct simpler_context *ctx);

/* Kernel mode, launch: attaches the context's region to the round's
 * config (`callable_id` goes in the header's tag). No allocation, no
 * device call. */
void sp_trace_kernel_attach(const struct simpler_context *ctx, int32_t callable_id,
                            struct rt_config *config);

/* Kernel mode under host_build_graph, a launch or a graph update that
 * took: the round `generation`'s host build [begin, end) and its tasks,
 * shown as the host build track when that round is the one the region
 * holds (no-op when the context does not trace). Caller holds ctx->lock. */
void sp_trace_kernel_build(struct simpler_context *ctx, uint64_t generation, uint64_t begin,
                           uint64_t end, uint32_t tasks);

#endif /* SIMPLER_HOST_TRACE_HOST_H */
