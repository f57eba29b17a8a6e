/*
 * common/trace_format.h — the format of a run's trace region and edge log.
 *
 * Owns: the layout the device-side writers (runtime/trace.h) fill and the
 * host side and the exporters (src/trace) read back: the region header,
 * the per-writer buffers, the records, and the dependency edges a run
 * logs. Pure data and its layout function: no device, no state.
 */
#ifndef SIMPLER_COMMON_TRACE_FORMAT_H
#define SIMPLER_COMMON_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/device_fn.h"

/* Edge sources, OR'ed when one producer-consumer pair has several. */
#define RT_EDGE_CREATOR 1u   /* the consumer uses the producer's runtime-allocated output */
#define RT_EDGE_TENSORMAP 2u /* overlapping accesses found in the TensorMap */
#define RT_EDGE_EXPLICIT 4u  /* set_dependencies */
/* With RT_EDGE_TENSORMAP, the hazard (the new access against the recorded one). */
#define RT_EDGE_RAW 8u  /* the consumer reads what the producer wrote */
#define RT_EDGE_WAW 16u /* the consumer overwrites what the producer wrote */
#define RT_EDGE_WAR 32u /* the consumer overwrites what the producer read */

#define RT_EDGE_SOURCES (RT_EDGE_CREATOR | RT_EDGE_TENSORMAP | RT_EDGE_EXPLICIT)

struct rt_edge {
    uint64_t producer;
    uint64_t consumer;
    uint32_t sources; /* RT_EDGE_CREATOR / TENSORMAP / EXPLICIT */
    uint32_t hazards; /* RT_EDGE_RAW / WAW / WAR of its TensorMap part */
};

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
/* Per core, one slot per payload slot of the dispatch protocol
 * (RT_CORE_QUEUE, checked in runtime/trace.h). */
#define RT_TRACE_CORE_SLOTS 4u

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
    _Alignas(64) struct rt_trace_core_slot core_slot[SIMDEV_MAX_CORES][RT_TRACE_CORE_SLOTS];
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

#endif /* SIMPLER_COMMON_TRACE_FORMAT_H */
