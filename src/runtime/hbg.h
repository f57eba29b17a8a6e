/*
 * runtime/hbg.h — host_build_graph (HBG), the second runtime: the host
 * runs a run's orchestration to completion and builds the whole task
 * graph; the graph reaches the device as one copy (the image); the device
 * boots scheduler-only (docs/runtime.md, "host_build_graph").
 *
 * Owns: the image's format (what travels: task payloads, fan-in producer
 * lists, zero-fills, element writes, the edge log; offsets and task
 * indices, never pointers into either side's memory), the host build
 * (rt_hbg_build: the orchestrator's own code, orchestrator.c and deps.c,
 * run on the host against a host arena laid out as the device's: the same
 * rings by scope depth, heaps and TensorMap, with nothing ever reclaimed,
 * so that a wait is a run that can never fit) and the sizes the host side
 * allocates for it. The device side's boot and completion rule are
 * hbg_boot.c's (hbg_boot.h).
 *
 * The host build is the one piece of the runtime layer that runs on the
 * host: it touches host memory only (the host arena, the scratch and the
 * bank the caller gives), calls no platform function, and takes the
 * device's addresses (the device arena's heaps) as numbers to hand out.
 */
#ifndef SIMPLER_RUNTIME_HBG_H
#define SIMPLER_RUNTIME_HBG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"
#include "simpler/orchestration.h"

#define RT_HBG_MAGIC 0x31474248u /* "HBG1" */

/* The image, at the start of the device arena's image region. */
struct rt_hbg_header {
    uint32_t magic;
    int32_t error;           /* a code the host build latched (positive), or 0 */
    uint64_t generation;     /* the run's launch generation */
    uint64_t bytes;          /* the image, this header included */
    uint32_t task_count;
    uint32_t producer_count; /* entries of the producer array */
    uint32_t zero_count;
    uint32_t write_count;
    uint64_t edges;          /* distinct producer-consumer pairs */
    uint32_t edges_logged;   /* min(edges, edge_log_capacity) */
    uint32_t flags;          /* RT_HBG_* below: what the build depended on */
    uint64_t tensormap_live_peak;
    uint64_t tasks;          /* offsets from the header: the first task record */
    uint64_t producers;      /* uint32_t[producer_count]: task indices */
    uint64_t zeros;          /* struct rt_hbg_zero[zero_count] */
    uint64_t writes;         /* struct rt_hbg_write[write_count] */
    uint64_t edge_log;       /* struct rt_edge[edges_logged] */
};

/* rt_hbg_header.flags: the build read a staged host value of the run's
 * inputs (an element read that a view answered): its graph may depend on
 * data, so the image is this run's only (host/hbg_image.c keeps none). */
#define RT_HBG_READ_INPUTS 0x1u

/* One task, in submission order (its image index), followed by
 * tensor_count tensors and scalar_count scalars. */
struct rt_hbg_task {
    uint64_t task_id;        /* its id: ring (by scope depth, as TMR's) and local */
    uint32_t bytes;          /* the record with its payload: a multiple of 8 */
    uint32_t tensor_count;
    uint32_t scalar_count;
    int32_t kernel[3];       /* by lane: AIC, AIV0, AIV1 */
    uint32_t block_num;
    uint8_t shape, lanes, sync_start, reserved;
    uint32_t producer_first; /* its producers (image indices): producers[first, +count) */
    uint32_t producer_count;
    uint32_t pad;
};

/* An OUTPUT created zero-filled: the device zeroes it at boot. */
struct rt_hbg_zero {
    uint64_t addr;
    uint64_t bytes;
};

/* An element write of the orchestration, applied at boot in order. */
struct rt_hbg_write {
    uint64_t addr;
    uint64_t size;
    uint8_t value[8];
};

/* Element writes one build may record. */
#define RT_HBG_MAX_WRITES 4096u

/* A device range whose contents at the run's start the host holds:
 * program mode's staged IN/INOUT host tensors. */
struct rt_hbg_view {
    uint64_t device;
    uint64_t bytes;
    const uint8_t *host;
};

/* What the host gives a build (rt_run_request.hbg). Host memory. */
struct rt_hbg_host {
    simpler_orch_entry_fn entry;          /* the orchestration, loaded on the host */
    const struct simpler_orch_args *args; /* the host's copy of request.args */
    const uint8_t *kernel_present;        /* [request.kernel_count]: 1 where a kernel is */
    const struct rt_hbg_view *views;      /* host-visible external ranges */
    uint32_t view_count;
    void *scratch;                        /* rt_hbg_scratch_bytes, reused by every build */
    size_t scratch_bytes;
    void *bank;                           /* the image is built here: borrowed until the */
    size_t bank_bytes;                    /* run's image copy has run */
    /* 0: rt_run_enqueue builds the image into the bank. Else the bank
     * already holds a complete image of this many bytes (rt_run_build's,
     * or a kept image relocated there) and the launch only stamps its
     * generation (rt_hbg_image_stamp) and ships it. */
    size_t image_bytes;
    /* Written by rt_run_enqueue (launch layer), for the trace: the build's
     * begin and end (simdev clock ns) and the tasks it built. */
    uint64_t built_begin_ns, built_end_ns;
    uint32_t built_tasks;
};

/* Bytes of host scratch a build with `config` on `core_count` cores
 * needs (a host arena laid out as the device's, and the lists), or 0 for
 * a config that lays out no run. */
size_t rt_hbg_scratch_bytes(const struct rt_config *config, uint32_t core_count);

/* Writes one byte of every page of `scratch` (rt_hbg_scratch_bytes of
 * `config` on `core_count` cores) that a build writes: the host arena but
 * its heaps, and the lists. */
void rt_hbg_scratch_warm(void *scratch, const struct rt_config *config, uint32_t core_count);

/* The largest image a run with `config` can build: the bytes of the
 * device arena's image region and of a bank. */
size_t rt_hbg_image_bound(const struct rt_config *config);

/* Where the device arena at `arena` (laid out by `config` on `core_count`
 * cores) holds the image, and its capacity. 0 or INVALID_ARGUMENT. */
int rt_hbg_image_region(const struct rt_config *config, uint32_t core_count, void *arena,
                        void **image, size_t *bytes);

/*
 * Runs the orchestration of `rq` on the calling (host) thread and builds
 * the run's image into rq->hbg->bank. `topology`: the device's AIC and
 * AIV core counts; `schedulers`: the AICPU threads that will schedule it
 * (every thread of the launch). Always leaves a complete image: a build
 * that fails (the orchestration's own error, or a graph that does not fit:
 * TASK_WINDOW_DEADLOCK, HEAP_DEADLOCK, DEP_POOL_OVERFLOW,
 * TENSORMAP_OVERFLOW; NOT_HOST_VISIBLE) carries its code in the header,
 * and the device fails the run with it, so the run's status reaches the
 * caller as a TMR run's does. Returns the image's bytes (the part that
 * travels), or 0 when the request cannot be built at all (bad sizes:
 * nothing to send).
 */
size_t rt_hbg_build(const struct rt_run_request *rq, uint32_t aic_cores, uint32_t aiv_cores,
                    uint32_t schedulers, uint64_t generation);

/* ------------------------------------------------ a kept image, relocated */

/* A device range a built image may name whose address changes from one run
 * of the same call to the next (program mode: a staging buffer, allocated
 * afresh by every submission). */
struct rt_hbg_range {
    uint64_t base;
    uint64_t bytes;
};

/* One address field of an image that names a moving range: where the
 * field is (its offset from the header), which range, and the offset into
 * the range. Offsets and indices only. */
struct rt_hbg_reloc {
    uint64_t field;
    uint64_t offset;
    uint32_t range;
    uint32_t reserved;
};

/*
 * Finds the address fields of the built image at `image` (host memory,
 * a successful build's: header error 0) that name an address inside one
 * of `ranges`: every task tensor's buffer address, every zero-fill's and
 * every element write's address. Writes up to `capacity` of them to
 * `relocs` (NULL: only count) and their number to *count. Returns false,
 * writing nothing, when the image cannot be relocated: it failed, or a
 * task scalar or an 8-byte element-write value holds an address inside a
 * range (a number the orchestration derived from a moving address: no
 * relocation can tell it from data).
 */
bool rt_hbg_image_relocations(const void *image, const struct rt_hbg_range *ranges,
                              uint32_t range_count, struct rt_hbg_reloc *relocs,
                              uint64_t capacity, uint64_t *count);

/* Rewrites each relocation's field of the image at `image` (a copy of one
 * rt_hbg_image_relocations read) to bases[reloc.range] + reloc.offset. */
void rt_hbg_image_relocate(void *image, const struct rt_hbg_reloc *relocs, uint64_t count,
                           const uint64_t *bases);

/* Writes the run's launch generation into the image's header: the one
 * field of an image that names its run (the boot refuses another's). */
void rt_hbg_image_stamp(void *image, uint64_t generation);

#endif /* SIMPLER_RUNTIME_HBG_H */
