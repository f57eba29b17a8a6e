/*
 * trace/trace_export.h — turns a collected trace region into files: Chrome
 * trace event JSON (ui.perfetto.dev, chrome://tracing), the dependency
 * graph as JSON and as Graphviz DOT.
 *
 * Owns: the host-side model of one traced run (its tasks, blocks, edges,
 * scheduler and orchestrator events, host spans) and the three writers.
 * Works on host memory only: the caller copies the region off the device.
 * Must not touch a context or the device.
 */
#ifndef SIMPLER_DFX_TRACE_EXPORT_H
#define SIMPLER_DFX_TRACE_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "common/trace_format.h"
#include "simpler/orchestration.h"

/* Host spans of a program-mode run, in pipeline order. */
enum sp_span {
    SP_SPAN_PREPARE,
    SP_SPAN_STAGE,
    SP_SPAN_LAUNCH,
    SP_SPAN_WAIT,
    SP_SPAN_COPY_BACK,
    SP_SPAN_FINALIZE,
    SP_SPAN_COUNT
};

/* "prepare", "stage", ... */
const char *sp_span_name(enum sp_span span);

#define SP_DFX_MAX_KERNELS SIMPLER_MAX_FUNC_IDS

/* What the exporter is given. `region` is a host copy of the whole region
 * (region->total_bytes long); records of a buffer whose generation is not
 * the header's are ignored (a thread that did not run in that round). */
struct sp_dfx_input {
    const struct rt_trace_header *region;
    uint64_t region_bytes;
    uint64_t edges_total;                /* edges the run wired (the log holds the first ones) */
    const char *kernel_names[SP_DFX_MAX_KERNELS]; /* by func id; NULL: unknown */
    uint8_t kernel_core[SP_DFX_MAX_KERNELS];      /* enum simpler_kernel_core */
    uint32_t aic_cores;                  /* cores below this id are AIC */
    uint64_t run;                        /* program-mode run handle; 0 in kernel mode */
    int32_t status;                      /* the run's status */
    uint64_t spans[SP_SPAN_COUNT][2];    /* host spans (begin, end; 0 = none), clock ns */
};

struct sp_dfx_model;

/* Builds the model (host allocations). 0, INVALID_ARGUMENT for a region
 * that does not check out (magic, version, offsets inside region_bytes,
 * counts within capacity), OUT_OF_HOST_MEMORY. */
int sp_dfx_model_build(const struct sp_dfx_input *in, struct sp_dfx_model **out);
void sp_dfx_model_free(struct sp_dfx_model *m);

/* Counts of the model, for tests and the summary line. */
struct sp_dfx_counts {
    uint64_t tasks;          /* distinct tasks seen (submitted or run) */
    uint64_t blocks;         /* blocks that ran on a core */
    uint64_t edges;          /* edges in the log */
    uint64_t dropped;        /* records dropped, all buffers */
    uint64_t events;         /* trace events written to the Chrome JSON */
};
void sp_dfx_model_counts(const struct sp_dfx_model *m, struct sp_dfx_counts *out);

/* Writers: 0 or PTO_RUNTIME_ERR_INTERNAL when a write failed. */
int sp_dfx_write_chrome(struct sp_dfx_model *m, FILE *f); /* also counts its events */
int sp_dfx_write_deps_json(struct sp_dfx_model *m, FILE *f);
int sp_dfx_write_deps_dot(struct sp_dfx_model *m, FILE *f);

/* Writes all three next to `path` (the Chrome JSON at `path`; `<stem>.deps.json`
 * and `<stem>.deps.dot`, stem = path without a trailing ".json"). 0 or
 * INTERNAL (a file could not be written). */
int sp_dfx_write_files(struct sp_dfx_model *m, const char *path);

#endif /* SIMPLER_DFX_TRACE_EXPORT_H */
