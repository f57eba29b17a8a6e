/*
 * runtime/trace.h — the device side of the swimlane trace: the trace
 * region's layout and the hooks the orchestrator, the schedulers and the
 * core loop call.
 *
 * Owns: the trace region (device memory the host attaches to a run through
 * rt_config.trace, laid out by rt_trace_layout), the record format, and the
 * writers. Must not touch run state: every hook writes only the calling
 * thread's own buffer (and, for a dispatch, the per-core slot the core
 * reads after the doorbell), so no hook takes a lock, waits, allocates or
 * writes a shared counter. A full buffer drops the record and counts it.
 *
 * Cost when off: every hook is `if (level >= N)` on a level the thread
 * loaded once per round (the core loop from its launch arguments, AICPU
 * threads from run->config, which run_init copies once); with the trace
 * off (rt_config.trace_level 0) nothing else runs.
 *
 * Levels (docs/diagnostics.md): 1 the kernel of every task on its core
 * (start, end) and every submit's task (kernel ids, scope depth, shape);
 * 2 + the schedulers' dispatch and finish of every block; 3 + the
 * schedulers' phases (complete, dispatch, idle); 4 + the orchestrator's
 * submit windows and its entry span.
 */
#ifndef SIMPLER_RUNTIME_TRACE_H
#define SIMPLER_RUNTIME_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/core_regs.h"
#include "runtime/runtime.h"
#include "runtime/tensormap.h"
#include "simpler/simdev.h"

#define RT_TRACE_MAGIC 0x53505452u /* "SPTR" */
#define RT_TRACE_VERSION 1u
#define RT_TRACE_MAX_LEVEL 4u

enum rt_trace_kind {
    RT_TR_TASK = 1,     /* core: a block ran: begin, end; arg0 func id, arg1 block, arg2 lane */
    RT_TR_SUBMIT = 2,   /* orchestrator: arg0..2 kernel by lane, arg3 scope depth,
                           arg4 shape | block_num << 8; begin (level 4) and end */
    RT_TR_DISPATCH = 3, /* scheduler: a block rung: begin; arg0 core, arg1 block */
    RT_TR_FINISH = 4,   /* scheduler: a block's FIN seen: begin; arg0 core */
    RT_TR_PHASE = 5,    /* scheduler: begin, end; arg0 enum rt_trace_phase */
    RT_TR_ORCH = 6,     /* orchestrator: the entry, begin, end */
};

enum rt_trace_phase { RT_PHASE_COMPLETE = 0, RT_PHASE_DISPATCH = 1, RT_PHASE_IDLE = 2 };

struct rt_trace_record {
    uint64_t begin;
    uint64_t end;
    uint64_t task_id;
    uint32_t kind; /* enum rt_trace_kind */
    uint32_t arg[5];
};

/* One writer's buffer state, on its own cache line (each is written by a
 * different thread). Reset by its writer at the start of every round. */
struct rt_trace_buffer {
    _Alignas(64) uint64_t generation; /* the round the records below belong to */
    uint64_t count;                   /* records written, <= capacity */
    uint64_t dropped;                 /* records that did not fit */
};

/* What a scheduler leaves for a core about the block it rings (per core,
 * per payload slot: rt_payload_index of the dispatch id); written before
 * the doorbell's release, read by the core after its acquire, as the
 * payload is. */
struct rt_trace_core_slot {
    uint64_t task_id;
    int32_t func_id;
    uint32_t block;
    uint32_t lane;
    uint32_t reserved;
};

/*
 * The region: this header, then `buffer_count` rt_trace_buffer, then the
 * records of each buffer (capacity each), then the edge log. Buffers:
 * core c is buffer c; AICPU thread t of the round is buffer core_count + t
 * (the orchestrator is the last thread, t = schedulers).
 */
struct rt_trace_header {
    uint32_t magic;
    uint32_t version;
    uint32_t level;
    uint32_t buffer_count;
    uint32_t core_count;
    uint32_t schedulers;
    uint64_t capacity;      /* records per buffer */
    uint64_t edge_capacity; /* entries of the edge log */
    uint64_t buffers_offset, records_offset, edges_offset, total_bytes;
    /* Written by the orchestrator thread at the start of every round. */
    _Alignas(64) uint64_t generation;
    uint32_t tag; /* the host's: kernel mode puts the callable id there */
    uint32_t reserved;
    _Alignas(64) struct rt_trace_core_slot core_slot[SIMDEV_MAX_CORES][RT_CORE_QUEUE];
};

/* Fills *h with the layout of a region for `core_count` cores, `schedulers`
 * scheduler threads, `capacity` records per buffer and `edge_capacity`
 * edges (every size overflow-checked). 0 or INVALID_ARGUMENT. */
int rt_trace_layout(uint32_t level, uint32_t core_count, uint32_t schedulers, uint64_t capacity,
                    uint64_t edge_capacity, struct rt_trace_header *h);

static inline struct rt_trace_buffer *rt_trace_buffers(struct rt_trace_header *h)
{
    return (struct rt_trace_buffer *)((uint8_t *)h + h->buffers_offset);
}

static inline struct rt_trace_record *rt_trace_records(struct rt_trace_header *h, uint32_t buffer)
{
    return (struct rt_trace_record *)((uint8_t *)h + h->records_offset) +
           (size_t)buffer * h->capacity;
}

/* The level a round traces at, read once per round (0 when no region). */
static inline uint32_t rt_trace_level(const struct rt_config *c)
{
    return c->trace ? c->trace_level : 0;
}

/* Appends *r to `buffer` (dropped and counted when full). */
void rt_trace_put(struct rt_trace_header *h, uint32_t buffer, const struct rt_trace_record *r);

/* The hazard bit (RT_EDGE_RAW/WAW/WAR) of a TensorMap hit: a new access of
 * kind `access` against a recorded access of kind `recorded`. */
static inline uint32_t rt_edge_hazard(enum rt_access access, enum rt_access recorded)
{
    if (recorded == RT_ACCESS_READ)
        return RT_EDGE_WAR;
    return access == RT_ACCESS_READ ? RT_EDGE_RAW : RT_EDGE_WAW;
}

/* ----------------------------------------------------------------- hooks */

/* An AICPU thread entering round `generation`: resets its own buffer (the
 * orchestrator also stamps the header). */
void rt_trace_aicpu_begin(const struct rt_config *c, uint64_t generation, uint32_t thread_index,
                          uint32_t thread_count);
/* A core entering round `generation`: resets its buffer. */
void rt_trace_core_begin(const struct rt_config *c, uint64_t generation, uint32_t core);
/* A core finished dispatch `reg` that started at `begin`. */
void rt_trace_core_task(const struct rt_config *c, uint32_t core, uint64_t reg, uint64_t begin);

struct rt_run;
struct rt_slot;
/* A scheduler rang `reg` on `core` for block `block`, lane `lane`, of the
 * task in `s` running kernel `func_id`. */
void rt_trace_dispatch(struct rt_run *run, uint32_t sched, uint32_t core, uint64_t reg,
                       const struct rt_slot *s, int32_t func_id, uint32_t block, uint32_t lane);
/* A scheduler saw a block of the task in `s` finish on `core`. */
void rt_trace_finish(struct rt_run *run, uint32_t sched, uint32_t core, const struct rt_slot *s);
/* A scheduler phase [begin, now); returns now. */
uint64_t rt_trace_phase(struct rt_run *run, uint32_t sched, uint32_t phase, uint64_t begin);
/* The same when `happened` (a phase that did something), else only now. */
uint64_t rt_trace_phase_if(struct rt_run *run, uint32_t sched, uint32_t phase, uint64_t begin,
                           bool happened);
/* The orchestrator submitted task `id` (kernels by lane, scope depth,
 * shape, blocks); `begin` is 0 below level 4. */
void rt_trace_submit(struct rt_run *run, uint64_t id, const int32_t kernel[3], uint32_t depth,
                     uint32_t shape, uint32_t block_num, uint64_t begin);
/* The orchestration entry [begin, now). */
void rt_trace_orch(struct rt_run *run, uint64_t begin);

/* The clock, only at `level` or above (else 0, and no clock read). */
#define RT_TRACE_CLOCK(on) ((on) ? simdev_clock_ns() : 0)

#endif /* SIMPLER_RUNTIME_TRACE_H */
