/*
 * common/trace_format.c — the layout of a trace region (rt_trace_layout).
 *
 * Owns: the offsets of the region's parts, every size overflow-checked.
 */
#include <string.h>

#include "common/checked.h"
#include "common/trace_format.h"
#include "simpler/status.h"

static bool align64(uint64_t v, uint64_t *out)
{
    uint64_t s;
    if (!sp_add_u64(v, 63, &s))
        return false;
    *out = s & ~(uint64_t)63;
    return true;
}

int rt_trace_layout(uint32_t level, uint32_t core_count, uint32_t schedulers, uint64_t capacity,
                    uint64_t edge_capacity, struct rt_trace_header *h)
{
    if (!h || level == 0 || level > RT_TRACE_MAX_LEVEL || core_count == 0 ||
        core_count > SIMDEV_MAX_CORES || schedulers == 0 ||
        schedulers > SIMDEV_MAX_AICPU_THREADS || capacity == 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_trace_header l;
    memset(&l, 0, sizeof l);
    l.magic = RT_TRACE_MAGIC;
    l.version = RT_TRACE_VERSION;
    l.level = level;
    l.core_count = core_count;
    l.schedulers = schedulers;
    l.buffer_count = core_count + schedulers + 1;
    l.capacity = capacity;
    l.edge_capacity = edge_capacity;
    uint64_t at, bytes;
    if (!align64(sizeof l, &l.buffers_offset) ||
        !sp_mul_u64(l.buffer_count, sizeof(struct rt_trace_buffer), &bytes) ||
        !sp_add_u64(l.buffers_offset, bytes, &at) || !align64(at, &l.records_offset) ||
        !sp_mul_u64(l.buffer_count, capacity, &bytes) ||
        !sp_mul_u64(bytes, sizeof(struct rt_trace_record), &bytes) ||
        !sp_add_u64(l.records_offset, bytes, &at) || !align64(at, &l.edges_offset) ||
        !sp_mul_u64(edge_capacity, sizeof(struct rt_edge), &bytes) ||
        !sp_add_u64(l.edges_offset, bytes, &l.total_bytes) || l.total_bytes > SIZE_MAX)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *h = l;
    return 0;
}
