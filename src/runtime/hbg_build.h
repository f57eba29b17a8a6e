/*
 * runtime/hbg_build.h — the host build's hooks in the orchestrator
 * (runtime/hbg.h): what orchestrator.c calls instead of publishing,
 * zeroing or touching memory when its run is a host build (run->hbg).
 * Orchestrator only; every int32_t returned is 0 or a positive code the
 * caller latches.
 */
#ifndef SIMPLER_RUNTIME_HBG_BUILD_H
#define SIMPLER_RUNTIME_HBG_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_run;
struct rt_slot;
struct rt_task;

/* Where a host build's submit writes the task's payload: one record the
 * build reuses for every task (the image holds each task's copy; nothing
 * reads a payload after its submit), not the task's slot in the host
 * arena, whose 4.3 KB stride would be a new page, or at best a line the
 * caches lost, for every task. */
struct rt_task *rt_hbg_payload(struct rt_run *run);

/* True when the request's kernel table has kernel `id` (< kernel_count). */
bool rt_hbg_kernel_present(struct rt_run *run, uint32_t id);

/* The task `id` just submitted in `s` (payload `t`; its producers in the
 * fanin scratch) enters the image (s->hbg_index: where); its edges are
 * logged. DEP_POOL_OVERFLOW when
 * the producer lists outgrow the rings' dependency pools together. */
int32_t rt_hbg_add_task(struct rt_run *run, struct rt_slot *s, const struct rt_task *t,
                        uint64_t id);

/* An OUTPUT created zero-filled, at device address `addr`. Cannot fail:
 * the image has room for one per OUTPUT of every task. */
void rt_hbg_add_zero(struct rt_run *run, uint64_t addr, uint64_t bytes);

/* An element read of device address `addr` that no task of the run
 * produces: the value the last element write of the build stored there,
 * else the staged host value (a view), else NOT_HOST_VISIBLE. */
int32_t rt_hbg_read_element(struct rt_run *run, uint64_t addr, size_t size, void *value);

/* An element write that no task of the run touches: recorded, applied by
 * the device before any task runs. NOT_HOST_VISIBLE beyond
 * RT_HBG_MAX_WRITES writes in one run. */
int32_t rt_hbg_write_element(struct rt_run *run, uint64_t addr, size_t size, const void *value);

#endif /* SIMPLER_RUNTIME_HBG_BUILD_H */
