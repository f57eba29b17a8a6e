/*
 * trace/trace_model.h — the host-side model of one traced run, built from
 * a collected trace region (trace_model.c).
 *
 * Owns: what the exporter is given (struct sp_trace_input), the host spans
 * of a run, and the model: its tasks, the blocks that ran, the edge log,
 * the dropped-record count and the time origin. The writers
 * (trace_export.h) read the model's layout; nothing else should. Works on
 * host memory only: the caller copies the region off the device. Must not
 * touch a context or the device, nor write any file.
 */
#ifndef SIMPLER_TRACE_TRACE_MODEL_H
#define SIMPLER_TRACE_TRACE_MODEL_H

#include <stdint.h>

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
    /* host_build_graph: the host build, inside the launch (its own track) */
    SP_SPAN_HOST_BUILD,
    SP_SPAN_COUNT
};

/* "prepare", "stage", ... */
const char *sp_span_name(enum sp_span span);

#define SP_TRACE_MAX_KERNELS SIMPLER_MAX_FUNC_IDS

/* What the exporter is given. `region` is a host copy of the whole region
 * (region->total_bytes long); records of a buffer whose generation is not
 * the header's are ignored (a thread that did not run in that round). */
struct sp_trace_input {
    const struct rt_trace_header *region;
    uint64_t region_bytes;
    uint64_t edges_total;                /* edges the run wired (the log holds the first ones) */
    const char *kernel_names[SP_TRACE_MAX_KERNELS]; /* by func id; NULL: unknown */
    uint8_t kernel_core[SP_TRACE_MAX_KERNELS];      /* enum simpler_kernel_core */
    uint32_t aic_cores;                  /* cores below this id are AIC */
    uint64_t run;                        /* program-mode run handle; 0 in kernel mode */
    int32_t status;                      /* the run's status */
    uint64_t spans[SP_SPAN_COUNT][2];    /* host spans (begin, end; 0 = none), clock ns */
    uint64_t host_build_tasks;           /* host_build_graph: tasks the host build made */
};

/* One block of a task, as it ran on a core. */
struct sp_trace_block {
    uint64_t task_id;
    uint64_t begin, end;
    uint64_t dispatch; /* 0: not recorded (level 1) */
    uint32_t core, block, func_id;
};

/* One task: its submit record joined with the blocks that ran. */
struct sp_trace_task {
    uint64_t id;
    uint64_t submit_begin, submit_end; /* submit_end 0: no submit record */
    uint64_t first_begin, last_end;    /* of its blocks; 0: none ran */
    /* The later of its submit and its last producer's end: the moment its
     * last dependency was satisfied; 0: unknown. */
    uint64_t ready;
    int32_t kernel[3];
    uint32_t depth, shape, block_num;
    uint32_t first_block, last_block;  /* indices into blocks */
    int32_t func_id;                   /* the first lane's kernel */
};

struct sp_trace_model {
    struct sp_trace_input in;
    const struct rt_trace_header *h;
    struct sp_trace_task *tasks;  /* sorted by id */
    uint64_t task_count;
    struct sp_trace_block *blocks; /* sorted by task, then start */
    uint64_t block_count;
    const struct rt_edge *edges;
    uint64_t edge_count;
    uint64_t dropped;
    uint64_t origin; /* the earliest time */
    uint64_t events; /* trace events the Chrome writer wrote (sp_trace_write_chrome) */
};

/* Builds the model (host allocations). 0, INVALID_ARGUMENT for a region
 * that does not check out (magic, version, offsets inside region_bytes,
 * counts within capacity), OUT_OF_HOST_MEMORY. */
int sp_trace_model_build(const struct sp_trace_input *in, struct sp_trace_model **out);
void sp_trace_model_free(struct sp_trace_model *m);

/* Counts of the model, for tests and the summary line. */
struct sp_trace_counts {
    uint64_t tasks;          /* distinct tasks seen (submitted or run) */
    uint64_t blocks;         /* blocks that ran on a core */
    uint64_t edges;          /* edges in the log */
    uint64_t dropped;        /* records dropped, all buffers */
    uint64_t events;         /* trace events written to the Chrome JSON */
};
void sp_trace_model_counts(const struct sp_trace_model *m, struct sp_trace_counts *out);

/* The task with `id`, or NULL when the model has none. */
struct sp_trace_task *sp_trace_find_task(const struct sp_trace_model *m, uint64_t id);

/* The records of buffer `b` when it belongs to the collected round (its
 * generation is the header's), else none; *n is their count. */
const struct rt_trace_record *sp_trace_live_records(const struct rt_trace_header *h, uint32_t b,
                                                  uint64_t *n);

#endif /* SIMPLER_TRACE_TRACE_MODEL_H */
