/*
 * runtime/run_config.c — a run's config: its defaults, its conversion from the
 * public run config, and the check of its ranges.
 *
 * Owns: the functions runtime.h declares for struct rt_config, shared by
 * the host side (which builds a run's config) and the device side (which
 * checks it again before laying the run out). Must not know the arena:
 * layout.c lays a checked config out.
 */
#include <string.h>

#include "runtime/ring.h"
#include "runtime/runtime.h"
#include "runtime/tensormap.h"
#include "simpler/status.h"

void rt_config_from_public(const struct simpler_run_config *in, struct rt_config *out)
{
    memset(out, 0, sizeof *out);
    for (uint32_t i = 0; i < RT_RINGS; i++) {
        out->task_window[i] = in->task_window[i];
        out->heap_bytes[i] = in->heap_bytes[i];
        out->dep_pool[i] = in->dep_pool[i];
    }
    out->tensormap_buckets = in->tensormap_buckets;
    out->tensormap_entries = in->tensormap_entries;
    out->max_fanin = in->max_fanin;
    out->scheduler_threads = in->scheduler_threads;
    out->ring_timeout_ms = in->ring_timeout_ms;
    out->sched_timeout_ms = in->sched_timeout_ms;
    out->tensor_wait_timeout_ms = in->tensor_wait_timeout_ms;
}

void rt_config_default(struct rt_config *out)
{
    struct simpler_run_config defaults;
    simpler_run_config_default(&defaults);
    rt_config_from_public(&defaults, out);
}

static bool pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

int rt_config_check(const struct rt_config *c)
{
    if (!c)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < RT_RINGS; i++) {
        if (!pow2(c->task_window[i]) || c->task_window[i] < 4 || c->task_window[i] > (1u << 20))
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        if (c->heap_bytes[i] < RT_HEAP_ALIGN || c->heap_bytes[i] % RT_HEAP_ALIGN ||
            c->heap_bytes[i] > (1ull << 40))
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        if (c->dep_pool[i] < 16 || c->dep_pool[i] > (1u << 26))
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
    if (rt_tensormap_bytes(c->tensormap_buckets, c->tensormap_entries) == 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (c->max_fanin < 8 || c->max_fanin > (1u << 20))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (c->scheduler_threads > SIMDEV_MAX_AICPU_THREADS - 1)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (!c->ring_timeout_ms || !c->sched_timeout_ms || !c->tensor_wait_timeout_ms)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (c->edge_log_capacity && !c->edge_log)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (c->trace_level > RT_TRACE_MAX_LEVEL || (c->trace_level == 0) != (c->trace == NULL))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (c->runtime != RT_RUNTIME_TMR && c->runtime != RT_RUNTIME_HBG)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    return 0;
}
