/*
 * runtime/runtime.h — the device runtime's internal entry (host side).
 *
 * Owns: the run config, the arena sizing function, the per-run result block
 * and rt_run_enqueue, which puts one run of an orchestration on a device
 * stream. The program-mode host runtime calls this; tests call it directly.
 * Nothing here is public API: include/simpler/ holds that.
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
#include "simpler/simdev.h"

#define RT_RINGS SIMPLER_RUN_RINGS

struct rt_trace_header;

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
};

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

/* Bytes of device arena a run needs with `config` on a device of topology
 * `topo`. 0 or INVALID_ARGUMENT. */
int rt_arena_bytes(const struct rt_config *config, const struct simdev_config *topo,
                   size_t *bytes);

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
     * again (2 MiB with the benchmark's windows). 0: always write them. */
    uint64_t arena_nonce;
    struct rt_run_result *result;
    struct rt_config config;
};

/* A new arena identity for rt_run_request.arena_nonce: nonzero, and
 * distinct from every earlier one of this process (a stale arena's mark
 * never matches a new arena's). Thread-safe. */
uint64_t rt_arena_nonce(void);

/* The streams and events that carry runs to the device. */
struct rt_launcher;

/* Creates a launcher on the current device. 0 or a simdev error. */
int rt_launcher_create(struct rt_launcher **out);
/* Destroys it; its streams must be idle (sync the caller stream first). */
int rt_launcher_destroy(struct rt_launcher *launcher);

/* The generation of the run rt_run_enqueue last enqueued successfully: the
 * run writes it into its result block (rt_run_result.generation), so a
 * caller can tell that block from one an earlier run left there. */
uint64_t rt_launcher_generation(const struct rt_launcher *launcher);

/*
 * Enqueues one run on `stream` and returns without waiting: the run starts
 * after the work already on `stream` and later work on `stream` waits for
 * it. A run that fails makes `stream` carry its status (the negated code)
 * like any failed device op, and writes it to request->result; an op of
 * the chain failing as it executes on a launcher stream reaches `stream`
 * through the chain's events and ends there (hand-off records), so the
 * next run starts on clean launcher streams (docs/runtime.md, "Why every
 * round ends"). Checks
 * arguments first (INVALID_ARGUMENT: NULLs, bad config, arena too small,
 * kernel_count too large) and the device (UNSUPPORTED: fewer than 2 AICPU
 * threads or no cores); a rejected call enqueues nothing.
 */
int rt_run_enqueue(struct rt_launcher *launcher, simdev_stream_t stream,
                   const struct rt_run_request *request);

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

/*
 * Enqueues the loader on `stream` (one AICPU thread): it validates the image
 * at `image` (device memory, `bytes` long), loads every ELF binary from
 * memory, resolves every symbol and fills `record` (device memory). The op
 * fails with INVALID_ARGUMENT for an image that does not validate, a binary
 * that does not load or a missing symbol (having unloaded what it loaded),
 * and the stream carries that code. record->config is `base` (copied),
 * passed through the orchestration's config function when it has one.
 */
int rt_callable_load_enqueue(simdev_stream_t stream, const void *image, size_t bytes,
                             const struct simpler_run_config *base,
                             struct rt_callable_record *record);

/* Enqueues the unloading of a record filled by a successful load. */
int rt_callable_unload_enqueue(simdev_stream_t stream, struct rt_callable_record *record);


/* ------------------------------------------------------------ kernel mode */

/*
 * The device side of a kernel-mode context (kernel_round.c). A context's
 * binding is a block of its own device memory that says what the device may
 * follow for it; a device-side registry maps live context generations to
 * bindings, so a packet naming a closed context is refused by generation
 * alone, before any pointer of its is followed.
 */
#define RT_KERNEL_MAX_CONTEXTS 64

/* One prepared callable, in the binding. Written by prepare (a copy from
 * the host) before any packet can name it; never rewritten. */
struct rt_kernel_slot {
    uint64_t generation;                     /* nonzero: prepared; 0: empty */
    const struct rt_callable_record *record; /* device: entry and kernel table */
    uint32_t sig_count;
    uint8_t signature[SIMPLER_CALLABLE_MAX_ARGS]; /* enum simpler_direction */
};

struct rt_kernel_binding {
    uint64_t context_generation; /* nonzero */
    int device;
    void *arena;
    size_t arena_bytes;
    struct rt_run_result *result;  /* the round's */
    struct simpler_orch_args *args; /* the round's decoded arguments */
    uint32_t slot_count;            /* entries of slots */
    struct rt_kernel_slot slots[];  /* by callable id */
};

/* Bytes of a binding with `slots` slots (0 on overflow). */
size_t rt_kernel_binding_bytes(uint32_t slots);

/* Enqueue on `stream` (one AICPU thread) the registration of `binding`
 * (device memory, filled; its context_generation must be `generation`) /
 * its removal. The register op fails with CAPACITY_EXCEEDED when
 * RT_KERNEL_MAX_CONTEXTS contexts are live and INVALID_STATE for a
 * generation already live; the removal removes the entry only if it is
 * this binding's (another context's entry of the same generation stays),
 * and succeeds when there is none. */
int rt_kernel_register_enqueue(simdev_stream_t stream, struct rt_kernel_binding *binding,
                               uint64_t generation);
int rt_kernel_unregister_enqueue(simdev_stream_t stream, struct rt_kernel_binding *binding,
                                 uint64_t context_generation);

/* The removal, done directly for a context whose device is lost: no op runs
 * there any more, so nothing on the device races with it (and nothing would
 * remove the entry otherwise). */
void rt_kernel_forget_on_lost_device(uint64_t context_generation,
                                     const struct rt_kernel_binding *binding);

/* What the host of a kernel context hands to rt_kernel_launch: fixed at
 * init except the round generation. */
struct rt_kernel_target {
    uint64_t context_generation;
    void *arena;
    size_t arena_bytes;
    uint32_t schedulers;
};

/*
 * The only device operations a kernel-mode launch may use: enqueue-only
 * calls. The launch allocates nothing, synchronises nothing and queries
 * nothing, and this table is how that is enforced: kernel_launch.c calls
 * the device only through it.
 */
struct rt_kernel_launch_ops {
    int (*record)(simdev_event_t event, simdev_stream_t stream);
    int (*record_handoff)(simdev_event_t event, simdev_stream_t stream);
    int (*wait)(simdev_stream_t stream, simdev_event_t event);
    int (*launch_aicpu)(simdev_stream_t stream, simdev_aicpu_fn fn, uint32_t thread_count,
                        const void *args, size_t args_size);
    int (*launch_aicore)(simdev_stream_t stream, simdev_aicore_fn fn, const void *args,
                         size_t args_size);
    int (*gate_acquire)(simdev_stream_t stream, simdev_sem_t gate);
    int (*gate_release)(simdev_stream_t stream, simdev_sem_t gate);
};
extern const struct rt_kernel_launch_ops rt_kernel_simdev_ops;

/* The context's streams, the events of the chain and the round gate: a
 * one-unit device semaphore every round of the context holds from before
 * its round begin until after its status op (docs/kernel-mode.md, "Round
 * gate"; model/round_gate.pml). */
struct rt_kernel_chain {
    simdev_stream_t aicpu, aicore;
    simdev_event_t start, aicore_start, aicore_done, aicpu_done, serial_tail;
    simdev_sem_t gate;
};

/*
 * Enqueues one round: `packet` (sp_packet_bytes long, encoded by the host)
 * on `caller` through `chain`:
 *   caller: record start
 *   AICPU:  wait start, acquire gate, round begin (clears the round state),
 *           record aicore_start
 *   AICore: wait aicore_start, core loop, hand-off record aicore_done
 *   AICPU:  program (the packet), wait aicore_done, status op, release gate,
 *           hand-off record aicpu_done
 *   caller: wait aicpu_done, record serial_tail
 * Everything a round does to the context's round state lies between its
 * acquire and its release, so rounds of one context never overlap, whether
 * they run eagerly or as replays of captured graphs on other streams. The
 * status op runs before the release, so no later round can overwrite the
 * result block first, and its failure reaches the caller through
 * aicpu_done. `config` is the round's layout config (the callable's).
 * Caller serialises launches on one chain. An enqueue that fails before the
 * program is enqueued refuses the launch: the round never runs, what was
 * enqueued is closed off (its core loop cancelled, the context's streams
 * handed off clean, the next round kept behind it) and the code returned.
 * Once the program is enqueued the rest of the chain is retried until it
 * is enqueued (a few attempts): 0, or, if that still fails, its code — the
 * round then runs but work after it on `caller` is not ordered after it.
 * *gate_lost (may be NULL) is set when the round's gate release could not
 * be enqueued at all: the unit is never given back, so the caller must
 * accept no further round on the chain and close it without taking the
 * gate (destroying it ends every acquire waiting for it).
 */
int rt_kernel_launch(const struct rt_kernel_launch_ops *ops, const struct rt_kernel_chain *chain,
                     simdev_stream_t caller, const struct rt_kernel_target *target,
                     const struct rt_config *config, uint64_t round_generation,
                     const void *packet, size_t packet_bytes, bool *gate_lost);

#endif /* SIMPLER_RUNTIME_RUNTIME_H */
