/*
 * runtime/trace.h — the device side of the swimlane trace: the trace
 * region's layout and the hooks the orchestrator, the schedulers and the
 * core loop call.
 *
 * Owns: the writers into the trace region (device memory the host attaches
 * to a run through rt_config.trace; its format is common/trace_format.h). Must not touch run state: every hook writes only the calling
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

#include "common/trace_format.h"
#include "platform/platform.h"
#include "runtime/core_regs.h"
#include "runtime/runtime.h"
#include "runtime/tensormap.h"

/* A trace core slot per payload slot of the dispatch protocol. */
_Static_assert(RT_TRACE_CORE_SLOTS == RT_CORE_QUEUE, "trace core slots != payload slots");

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

/* An AICPU thread entering round `generation`: the last one stamps the
 * header and resets the buffer after the schedulers' (the orchestrator's,
 * or host_build_graph's lay). */
void rt_trace_aicpu_begin(const struct rt_config *c, uint64_t generation, uint32_t thread_index,
                          uint32_t thread_count);
/* Scheduler `sched`'s prologue in round `generation`, before it opens:
 * resets its buffer, on whichever thread runs the prologue (the
 * orchestrator's in a TMR round), before any step can write there. */
void rt_trace_sched_begin(const struct rt_config *c, uint64_t generation, uint32_t sched);
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
#define RT_TRACE_CLOCK(on) ((on) ? platform_clock_ns() : 0)

#endif /* SIMPLER_RUNTIME_TRACE_H */
