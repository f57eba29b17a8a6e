/*
 * runtime/layout.h — where one run's state lies in its arena.
 *
 * Owns: the task shapes (which ready queue a task goes to) and the byte
 * offset of every region of a run's arena, a pure function of the run
 * config and the core count, so that the host side (which sizes and
 * allocates the arena) and the device side (which lays the run out in it)
 * compute the same.
 */
#ifndef SIMPLER_RUNTIME_LAYOUT_H
#define SIMPLER_RUNTIME_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

/* Resource shape of a task: which ready queue it goes to. */
enum rt_shape { RT_SHAPE_AIC = 0, RT_SHAPE_AIV = 1, RT_SHAPE_MIX = 2, RT_SHAPE_DUMMY = 3 };
#define RT_SHAPES 4

/* Byte offsets of each region inside the arena (a pure function of the
 * config and topology: host and device compute the same).
 *
 * An HBG arena (config->runtime RT_RUNTIME_HBG) is a device with no
 * orchestrator: its boot lays the host's graph into the slots, payloads
 * and heaps (hbg_boot.c) and nothing on the device looks anything up or
 * lists a dependency. Its layout omits what only the orchestrator and
 * TMR's completion use: ring_tm, ring_deps, fanin_scratch and tensormap
 * are 0 (no region: offset 0 is the run header, never one of these) and
 * tensormap_bytes is 0. The host build lays out a TMR arena in its
 * scratch (hbg_build.c), which has them all. scope_tasks stays: HBG's
 * boot keeps there the slot of each image index. */
struct rt_layout {
    size_t run;
    size_t ring_slots[RT_RINGS];
    size_t ring_tasks[RT_RINGS];
    size_t ring_tm[RT_RINGS];   /* 0 in an HBG arena */
    size_t ring_heap[RT_RINGS];
    size_t ring_deps[RT_RINGS]; /* 0 in an HBG arena */
    size_t rq_cells[RT_SHAPES];
    size_t sync_rq_cells[RT_SHAPES];
    uint64_t rq_capacity;
    size_t dispatch;     /* RT_CORE_QUEUE per core */
    size_t scheds;       /* struct rt_sched per possible scheduler thread */
    size_t rendezvous;   /* struct rt_rendezvous per core */
    size_t rendezvous_bytes;
    size_t scope_tasks;
    uint32_t scope_task_capacity;
    size_t fanin_scratch;   /* 0 in an HBG arena */
    size_t tensormap;       /* 0 in an HBG arena */
    size_t tensormap_bytes; /* 0 in an HBG arena */
    size_t hbg_image;       /* host_build_graph: the image region (runtime/hbg.h) */
    size_t hbg_image_bytes; /* 0 for a TMR run */
    size_t total;
};

int rt_layout_compute(const struct rt_config *config, uint32_t core_count,
                      struct rt_layout *out);

#endif /* SIMPLER_RUNTIME_LAYOUT_H */
