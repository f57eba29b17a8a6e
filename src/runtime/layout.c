/*
 * runtime/layout.c — where one run's state lies in its arena (layout.h).
 *
 * Owns: rt_layout_compute, a pure function of the run config and the core
 * count, so that the host side (which sizes and allocates the arena) and
 * the device side (which lays the run out in it) compute the same. Must not
 * touch an arena: run init (aicpu_program.c) and the launch chain do.
 */
#include <stdbool.h>
#include <string.h>

#include "runtime/core_regs.h"
#include "runtime/cpu.h"
#include "runtime/hbg.h"
#include "runtime/layout.h"
#include "runtime/payload.h"
#include "runtime/ready_queue.h"
#include "runtime/rendezvous.h"
#include "runtime/ring.h"
#include "runtime/run.h"
#include "runtime/runtime.h"
#include "runtime/step_token.h"
#include "runtime/task.h"
#include "runtime/tensormap.h"
#include "simpler/status.h"

static size_t take(size_t *cursor, size_t bytes)
{
    size_t at = (*cursor + RT_CACHELINE - 1) / RT_CACHELINE * RT_CACHELINE;
    *cursor = at + bytes;
    return at;
}

/*
 * The last layout this thread computed and what it computed it of. The
 * device side computes the same layout several times a round (each core
 * loop, the round begin, the program; measured: 2,400 instructions a
 * one-task round, docs/performance.md, "A round's own work, counted"), and
 * a thread runs rounds of one config: an equal config (byte for byte, its
 * padding too) and core count give the same layout, the function being
 * pure. Only a layout computed whole is kept.
 */
static _Thread_local struct {
    bool valid;
    uint32_t core_count;
    struct rt_config config;
    struct rt_layout layout;
} tl_last;

static int layout_compute(const struct rt_config *config, uint32_t core_count,
                          struct rt_layout *out);

int rt_layout_compute(const struct rt_config *config, uint32_t core_count, struct rt_layout *out)
{
    if (config && tl_last.valid && tl_last.core_count == core_count &&
        memcmp(&tl_last.config, config, sizeof *config) == 0) {
        *out = tl_last.layout;
        return 0;
    }
    int rc = layout_compute(config, core_count, out);
    if (rc == 0) {
        tl_last.config = *config;
        tl_last.core_count = core_count;
        tl_last.layout = *out;
        tl_last.valid = true;
    }
    return rc;
}

static int layout_compute(const struct rt_config *config, uint32_t core_count,
                          struct rt_layout *out)
{
    if (rt_config_check(config) != 0 || core_count == 0 || core_count > SIMDEV_MAX_CORES)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    /* An HBG device runs no orchestrator: no TensorMap, no dependency
     * pools, no fan-in scratch (layout.h). */
    bool orchestrated = config->runtime != RT_RUNTIME_HBG;
    struct rt_layout l;
    memset(&l, 0, sizeof l);
    size_t cursor = 0;
    uint64_t windows = 0;
    l.run = take(&cursor, sizeof(struct rt_run));
    /* The rendezvous words right after the header, at an offset no config
     * changes: the launch chain writes them (zeroes them, the core loops'
     * and cancels' tags) before the run's own init, even for a run whose
     * AICPU program never starts, so they must never lie over a region
     * another config's run left for reuse (its ready queues and its
     * TensorMap: run_init). */
    l.rendezvous_bytes = (size_t)core_count * sizeof(struct rt_rendezvous);
    l.rendezvous = take(&cursor, l.rendezvous_bytes);
    for (uint32_t i = 0; i < RT_RINGS; i++) {
        l.ring_slots[i] = take(&cursor, (size_t)config->task_window[i] * sizeof(struct rt_slot));
        l.ring_tasks[i] = take(&cursor, (size_t)config->task_window[i] * sizeof(struct rt_task));
        if (orchestrated)
            l.ring_tm[i] =
                take(&cursor, (size_t)config->task_window[i] * sizeof(struct rt_tm_record));
        l.ring_heap[i] = take(&cursor, (size_t)config->heap_bytes[i]);
        if (orchestrated)
            l.ring_deps[i] = take(&cursor, (size_t)config->dep_pool[i] * sizeof(struct rt_dep));
        windows += config->task_window[i];
    }
    /* Every live task is in at most one ready queue at a time. */
    l.rq_capacity = 1;
    while (l.rq_capacity < windows)
        l.rq_capacity <<= 1;
    for (uint32_t k = 0; k < RT_SHAPES; k++) {
        l.rq_cells[k] = take(&cursor, (size_t)l.rq_capacity * sizeof(struct rt_rq_cell));
        l.sync_rq_cells[k] = take(&cursor, (size_t)l.rq_capacity * sizeof(struct rt_rq_cell));
    }
    l.dispatch = take(&cursor, (size_t)core_count * RT_CORE_QUEUE * sizeof(struct rt_dispatch));
    /* Every AICPU thread may schedule: HBG runs have no orchestrator. */
    l.scheds = take(&cursor, (size_t)SIMDEV_MAX_AICPU_THREADS * rt_sched_bytes());
    /* TMR: the open scopes' tasks; HBG: the slot of each image index */
    l.scope_task_capacity = (uint32_t)windows;
    l.scope_tasks = take(&cursor, (size_t)windows * sizeof(struct rt_slot *));
    if (orchestrated) {
        l.fanin_scratch = take(&cursor, (size_t)config->max_fanin *
                                            (sizeof(struct rt_slot *) + sizeof(uint32_t)));
        l.tensormap_bytes =
            rt_tensormap_bytes(config->tensormap_buckets, config->tensormap_entries);
        l.tensormap = take(&cursor, l.tensormap_bytes);
    } else {
        l.hbg_image_bytes = rt_hbg_image_bound(config);
        if (l.hbg_image_bytes == 0)
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        l.hbg_image = take(&cursor, l.hbg_image_bytes);
    }
    l.total = take(&cursor, 0);
    *out = l;
    return 0;
}
