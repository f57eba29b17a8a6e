/*
 * runtime/runtime.h — what the host side knows of the device runtime.
 *
 * Owns: the run config, the run request, the per-run result block, the
 * callable record the loader fills and the kernel-mode binding: the shapes
 * of the device memory the host side fills or reads back. Putting work on
 * streams is the launch layer's (src/launch/launch.h). Nothing here is
 * public API: include/simpler/ holds that.
 *
 * A run needs, in device memory: the arena (rt_arena_bytes), the kernel
 * table (func_id -> kernel), the run's args (struct simpler_orch_args) and a
 * result block. The host fills the table and args with copies, enqueues the
 * run, and after the stream completes reads the result block back.
 */
#ifndef SIMPLER_RUNTIME_RUNTIME_H
#define SIMPLER_RUNTIME_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/kernel.h"
#include "simpler/orchestration.h"
#include "simpler/callable.h"
#include "common/trace_format.h"

#define RT_RINGS SIMPLER_RUN_RINGS

struct rt_trace_header;
struct rt_hbg_host;

/* Sizes and limits of one run. All fields must be set (rt_config_default
 * gives usable values). */
struct rt_config {
    uint32_t task_window[RT_RINGS]; /* task slots per ring; power of two, 4..2^20 */
    uint64_t heap_bytes[RT_RINGS];  /* output heap per ring; multiple of 64, >= 64 */
    uint32_t dep_pool[RT_RINGS];    /* dependency-list entries per ring; >= 16 */
    uint32_t tensormap_buckets;     /* power of two */
    uint32_t tensormap_entries;     /* recorded accesses alive at once */
    uint32_t max_fanin;             /* distinct producers of one task; >= 8 */
    uint32_t scheduler_threads;     /* 0 = every AICPU thread but the orchestrator's */
    uint32_t ring_timeout_ms;       /* no-progress bound of a ring/TensorMap wait */
    uint32_t sched_timeout_ms;      /* scheduler no-progress bound */
    uint32_t tensor_wait_timeout_ms; /* read/write element wait bound */
    uint32_t edge_log_capacity;     /* edges recorded into edge_log (0 = none) */
    struct rt_edge *edge_log;       /* device memory, edge_log_capacity entries */
    /* The swimlane trace (runtime/trace.h), attached by the host: level 0
     * (off, trace NULL) or 1..4 with a region in device memory. Not taken
     * from the public config by rt_config_from_public. */
    uint32_t trace_level;
    uint32_t trace_tag;                /* copied into the region's header */
    struct rt_trace_header *trace;
    /* Which runtime runs the run (RT_RUNTIME_*): TMR, the orchestration on
     * the device while tasks run; HBG, the orchestration on the host, the
     * whole graph shipped to a scheduler-only device (runtime/hbg.h). The
     * arena's layout depends on it (an HBG arena holds the image). */
    uint32_t runtime;
};

/* The values of rt_config.runtime: simpler.h's SIMPLER_RUNTIME_* */
#define RT_RUNTIME_TMR 0u
#define RT_RUNTIME_HBG 1u

/* The schedulers a launch under `runtime` runs for `schedulers` configured
 * (TMR's count: every AICPU thread of the program but the orchestrator):
 * host_build_graph has no orchestrator, so every thread schedules. The
 * one rule for the launch, the device's checks and the trace's buffers. */
static inline uint32_t rt_run_schedulers(uint32_t runtime, uint32_t schedulers)
{
    return runtime == RT_RUNTIME_HBG ? schedulers + 1 : schedulers;
}


/* Why the scheduler timed out (rt_run_result.stall_class). */
enum rt_stall {
    RT_STALL_NONE = 0,
    RT_STALL_RUNNING = 1,            /* a core has held a task for the whole period */
    RT_STALL_READY_BUT_IDLE = 2,     /* ready work, yet nothing could be dispatched */
    RT_STALL_DEPENDENCY_DEADLOCK = 3, /* submitted tasks pending, none ready or running */
    RT_STALL_ORCH_STARVATION = 4,    /* everything submitted is done; the orchestrator is stuck */
    RT_STALL_CORES_NOT_STARTED = 5,  /* the core loop never answered the handshake */
};

/* Written by the device when the run ends (device memory). */
struct rt_run_result {
    int32_t status;        /* 0, or the run's negated code */
    uint32_t stall_class;  /* enum rt_stall when status is -SIMPLER_SCHED_ERR_TIMEOUT */
    uint64_t tasks_submitted;
    uint64_t tasks_completed;
    uint64_t edges;        /* distinct producer-consumer pairs wired */
    uint64_t edges_logged; /* min(edges, edge_log_capacity) */
    uint64_t ring_waits;   /* times the orchestrator waited for ring space */
    uint64_t subtasks_dispatched;
    uint64_t tensormap_live_peak;
    uint64_t generation;   /* the run's launch generation (internal) */
};

/* Writes usable defaults (window 1024, heap 16 MiB, dep pool 8192 per ring;
 * TensorMap 4096 x 16384; timeouts 1 s ring, 10 s scheduler, 15 s tensor). */
void rt_config_default(struct rt_config *out);

/* Converts the public run config (orchestration.h) to a run config with no
 * edge log. rt_config_default is this applied to simpler_run_config_default. */
void rt_config_from_public(const struct simpler_run_config *in, struct rt_config *out);

/* 0, or PTO_RUNTIME_ERR_INVALID_ARGUMENT for a config out of range. */
int rt_config_check(const struct rt_config *config);

/* One run. Every pointer is device memory, borrowed until the run's stream
 * work completes. */
struct rt_run_request {
    simpler_orch_entry_fn entry;
    const simpler_kernel_fn *kernels; /* kernel_count entries, NULL where unused */
    uint32_t kernel_count;            /* <= SIMPLER_MAX_FUNC_IDS */
    const struct simpler_orch_args *args;
    void *arena;
    size_t arena_bytes;
    /* Nonzero: the arena's identity (rt_arena_nonce, drawn once per
     * allocation of an arena). A run that ends clean leaves it in the
     * arena with its ready queues empty, and the next run given the same
     * value takes those queues as they are instead of writing their cells
     * again (2 MiB with the benchmark's windows); every run leaves it with
     * its TensorMap, which the next one empties by a new epoch instead of
     * writing every bucket. 0: always write them. */
    uint64_t arena_nonce;
    struct rt_run_result *result;
    struct rt_config config;
    /* host_build_graph only (config.runtime HBG; NULL otherwise), host
     * memory: the host's own view of what the device pointers above hold,
     * for the orchestration run on the host (runtime/hbg.h). */
    struct rt_hbg_host *hbg;
};

/* ------------------------------------------------------ callable loading */

#define RT_CALLABLE_MAX_BINARIES (1 + SIMPLER_MAX_FUNC_IDS) /* orchestration + kernels */

/*
 * What the device loader leaves in device memory for one loaded callable.
 * The host reads the prefix (up to `kernels`) back; runs point the device
 * runtime at `kernels` directly.
 */
struct rt_callable_record {
    simpler_orch_entry_fn entry;
    struct simpler_run_config config; /* the load's base, adjusted by the config function */
    uint32_t kernel_count;            /* highest func_id + 1 (0: no kernels) */
    uint32_t binary_count;            /* loaded ELF objects below */
    void *handles[RT_CALLABLE_MAX_BINARIES]; /* dlopen handles, unloaded in reverse */
    int memfds[RT_CALLABLE_MAX_BINARIES];    /* kept open while loaded: see loader.c */
    simpler_kernel_fn kernels[SIMPLER_MAX_FUNC_IDS];
};

/* ------------------------------------------------------------ kernel mode */

/*
 * The device side of a kernel-mode context (kernel_mode.c). A context's
 * binding is a block of its own device memory that says what the device may
 * follow for it; a device-side registry maps live context generations to
 * bindings, so a packet naming a closed context is refused by generation
 * alone, before any pointer of its is followed.
 */
#define RT_KERNEL_MODE_MAX_CONTEXTS 64

/* One prepared callable, in the binding. Written by prepare (a copy from
 * the host) before any packet can name it; never rewritten. */
struct rt_kernel_mode_slot {
    uint64_t generation;                     /* nonzero: prepared; 0: empty */
    const struct rt_callable_record *record; /* device: entry and kernel table */
    uint32_t sig_count;
    uint8_t signature[SIMPLER_CALLABLE_MAX_ARGS]; /* enum simpler_direction */
};

struct rt_kernel_mode_binding {
    uint64_t context_generation; /* nonzero */
    int device;
    void *arena;
    size_t arena_bytes;
    uint64_t arena_nonce;          /* rt_run_request.arena_nonce: drawn with the arena */
    struct rt_run_result *result;  /* the round's */
    struct simpler_orch_args *args; /* the round's decoded arguments */
    uint32_t slot_count;            /* entries of slots */
    struct rt_kernel_mode_slot slots[];  /* by callable id */
};

/* Bytes of a binding with `slots` slots (0 on overflow). */
size_t rt_kernel_mode_binding_bytes(uint32_t slots);

/* The removal, done directly for a context whose device is lost: no op runs
 * there any more, so nothing on the device races with it (and nothing would
 * remove the entry otherwise). */
void rt_kernel_mode_forget_on_lost_device(uint64_t context_generation,
                                     const struct rt_kernel_mode_binding *binding);

#endif /* SIMPLER_RUNTIME_RUNTIME_H */
