/*
 * host/host.h — the program-mode host runtime's private structures.
 *
 * Owns: struct simpler_context and its pieces (callables, pipeline slots),
 * shared by context.c (lifecycle, callables) and run.c (the run pipeline),
 * plus the accessors tests use to look inside. Not public API.
 *
 * Locking: ctx->lock guards every field below that is not marked
 * otherwise. It is held across synchronous copies (which wait for nothing)
 * and across the device waits of register/unregister (the control stream),
 * of a launch that failed part-way (rt_run_enqueue drains the launcher), of
 * finalize's drain after such a launch, and of the release of a stranded run
 * (sp_release_stranded); it is never held while waiting for a run's status
 * (await drops it).
 */
#ifndef SIMPLER_HOST_HOST_H
#define SIMPLER_HOST_HOST_H

#include <pthread.h>
#include <stdbool.h>

#include "host/latch.h"
#include "host/phase.h"
#include "host/trace_host.h"
#include "launch/launch.h"
#include "simpler/simpler.h"

/* One registered callable. */
struct sp_callable {
    int32_t id;
    uint32_t tensor_count; /* non-SCALAR signature entries */
    uint32_t scalar_count;
    uint8_t tensor_directions[SIMPLER_CALLABLE_MAX_TENSORS]; /* enum simpler_direction */
    void *image;           /* device copy of the image */
    size_t image_bytes;
    struct rt_callable_record *record; /* device */
    simpler_orch_entry_fn entry;
    uint32_t kernel_count;
    struct simpler_run_config config;  /* the callable's run config */
    bool loaded;           /* the device holds its binaries loaded */
    uint32_t runs;         /* unfinalized runs using it */
    uint64_t slot_generation; /* kernel mode: its binding slot's (0: not launchable) */
};

enum sp_slot_state {
    SP_SLOT_FREE = 0,
    SP_SLOT_PREPARED, /* staged, not launched */
    SP_SLOT_LAUNCHED, /* on the device; `completed` once its status is known */
};

/* One distinct host buffer of a run, staged in a device buffer. */
struct sp_staging {
    uint64_t host_addr;
    uint64_t bytes;
    void *device;     /* NULL once freed */
};

/* A pipeline slot: the device resources of one unfinalized run. */
struct sp_slot {
    enum sp_slot_state state;
    simpler_run_t run;
    struct sp_callable *callable;
    simdev_stream_t stream;               /* the run's own stream: carries its status only */
    struct simpler_orch_args *device_args; /* device copy of `staged_args` */
    struct rt_run_result *device_result;
    struct rt_config config;
    uint64_t generation;                  /* the launch's, as its result block must say */
    /* The owned snapshot of the caller's args (host addresses as given). */
    struct simpler_orch_args snapshot;
    /* What the device sees: host tensors rewritten to their staging buffers. */
    struct simpler_orch_args staged_args;
    uint8_t tensor_staging[SIMPLER_ORCH_MAX_TENSORS]; /* index into staging, or 0xff: device tensor */
    struct sp_staging staging[SIMPLER_ORCH_MAX_TENSORS];
    uint32_t staging_count;
    bool waiting;         /* a thread waits for it outside the lock */
    bool copied_back;     /* finalize delivered the outputs (a retry skips it) */
    bool restage;         /* a launch failed: inputs are copied in again before the next */
    bool completed;       /* status below is final */
    bool stranded;        /* a finalize of the run failed on a device operation:
                             finalize_device or unregistering its callable may
                             release it (sp_release_stranded) */
    int status;
    struct rt_run_result result; /* read back when the run completed */
    struct sp_trace_run *trace;  /* the run's trace (trace_host.c); NULL: not traced */
};

/* Counters for tests and diagnostics (monotonic except the live ones). */
struct sp_counters {
    uint64_t slots_acquired;
    uint64_t slots_released;
    uint64_t staging_allocs;
    uint64_t staging_frees;
    uint64_t launches;
    uint64_t callables_loaded;
    uint64_t callables_unloaded;
};

/* The kernel-mode half of a context (kernel.c); zero in a program context. */
struct sp_kernel {
    struct sp_phase phase;
    uint64_t generation;               /* the context generation, in every packet */
    uint32_t schedulers;               /* scheduler threads of every round */
    bool claimed;                      /* holds its device (sp_device_claim) */
    bool registered;                   /* the device registry knows the binding */
    struct rt_kernel_chain chain;      /* the context's AICPU and AICore streams, the events */
    /* The streams that carry a launch made on a capturing caller stream:
     * captured work never lands on the eager streams, so an eager launch
     * from another thread during a capture stays eager. */
    simdev_stream_t capture_aicpu, capture_aicore;
    bool gate_held; /* finalize took the round gate (and has not destroyed it yet) */
    bool gate_lost; /* a round kept the gate's unit for good: poisoned, close does not take it */
    const struct rt_kernel_launch_ops *launch_ops; /* rt_kernel_simdev_ops; tests may swap it */
    struct rt_run_result *result;      /* device: the round's result block */
    struct simpler_orch_args *args;    /* device: the round's decoded arguments */
    struct rt_kernel_binding *binding; /* device: what the device may follow */
    size_t binding_bytes;
    int32_t next_id;                   /* the next callable id minted */
    uint64_t next_slot_generation;
    uint64_t next_round;               /* the last round's generation */
    /* Host-side preparation work, for tests: a replayed graph adds none. */
    uint64_t packets_encoded;
    uint64_t callables_resolved;
};

struct simpler_context {
    struct sp_latch latch; /* read without the lock */
    pthread_mutex_t lock;
    pthread_cond_t waiters_done; /* broadcast when a slot's `waiting` clears */
    uint32_t sleepers;           /* threads asleep on waiters_done */
    bool initialized;
    int device;
    struct simdev_config topo; /* the device's, read at init */
    struct simpler_config config;
    size_t committed;      /* device bytes held */
    struct rt_launcher *launcher;
    simdev_stream_t control; /* loads and unloads */
    void *arena;
    size_t arena_bytes;
    uint64_t arena_nonce;  /* program mode: rt_arena_nonce, drawn with the arena */
    struct sp_slot *slots; /* config.pipeline_depth */
    uint32_t slot_count;   /* slots whose device resources exist */
    uint32_t callable_count;
    uint64_t callable_bytes;
    simpler_run_t next_run;
    uint64_t stranded_released; /* stranded runs released, since creation */
    struct sp_counters counters;
    struct sp_callable *callables[SIMPLER_MAX_CALLABLE_IDS];
    struct sp_kernel kernel;
    struct sp_trace_ctx trace; /* trace_host.c */
};

/* Device memory of the context (counted in `committed`). Caller must hold
 * ctx->lock or be the only user of ctx. */
int sp_dev_alloc(struct simpler_context *ctx, void **out, size_t bytes);
int sp_dev_free(struct simpler_context *ctx, void *ptr, size_t bytes);

/* Waits until `stream` has drained even if a sync fails on the way (a
 * failed sync waits for nothing), so that undoing a call never frees what
 * enqueued work still uses. Returns the stream's carried status (cleared),
 * or DEVICE_LOST. */
int sp_drain(simdev_stream_t stream);

/* Frees the slot's staging buffers still held (those of its run, or left by
 * a prepare whose undo failed); stops at the first failure, keeping the rest
 * recorded. Caller holds ctx->lock. */
int sp_free_staging(struct simpler_context *ctx, struct sp_slot *slot);

/* 0 when every unfinalized run of `callable` (NULL: of any callable) is
 * stranded and no thread is waiting for it; INVALID_STATE otherwise.
 * Changes nothing. Caller holds ctx->lock. */
int sp_stranded_only(struct simpler_context *ctx, const struct sp_callable *callable);

/* Releases every stranded run of `callable` (NULL: of any callable), after
 * sp_stranded_only said 0: waits, holding the lock, for what is left of each
 * on the device, frees its staging and its slot, drops its hold on the
 * callable and counts it in ctx->stranded_released. Delivers no outputs.
 * Stops at the first failure (a device code), keeping the runs not yet
 * released. Caller holds ctx->lock; the context's device is current. */
int sp_release_stranded(struct simpler_context *ctx, const struct sp_callable *callable);

/* 0, INVALID_STATE (not a program context or not initialised) or
 * DEVICE_LOST; makes the context's device current. Caller holds ctx->lock. */
int sp_ready(struct simpler_context *ctx);

/* Shared by both identities (context.c). */
int sp_config_check(const struct simpler_config *config);
/* An init's argument checks: ctx, device id, config (NULL: the defaults)
 * into *cfg. 0 or INVALID_ARGUMENT. */
int sp_init_arguments(const struct simpler_context *ctx, int device_id,
                      const struct simpler_config *config, struct simpler_config *cfg);
/* True when a device of topology `topo` can run rounds: an orchestrator, a
 * scheduler and at least one core. */
bool sp_topology_runs_rounds(const struct simdev_config *topo);
/* Reads `device_id`'s topology into *topo and checks it can run `cfg`'s
 * rounds: DEVICE_LOST, UNSUPPORTED (see sp_topology_runs_rounds),
 * INVALID_ARGUMENT (more scheduler threads than the device has), or 0. */
int sp_device_usable(int device_id, const struct simpler_config *cfg, struct simdev_config *topo);
/* One context per device, whichever identity: INVALID_STATE when another
 * context holds `device`. */
int sp_device_claim(const struct simpler_context *ctx, int device);
void sp_device_release(const struct simpler_context *ctx, int device);
/* Reads the signature of a valid image into `c`. */
void sp_callable_read_signature(struct sp_callable *c, const struct simpler_callable_header *h);
/* Uploads and loads `image` (c->image_bytes long) on the control stream;
 * on failure holds nothing of it. */
int sp_callable_load(struct simpler_context *ctx, struct sp_callable *c, const void *image);
/* Unloads and frees its device side; on failure keeps what it still holds. */
int sp_callable_release(struct simpler_context *ctx, struct sp_callable *c);

/* The kernel half of simpler_finalize_device (kernel.c). Caller holds
 * ctx->lock. */
int sp_kernel_finalize(struct simpler_context *ctx);

/* ------------------------------------------------------------ for tests */

/* Host-side preparation work of a kernel context so far. */
/* Test-only: the device operations the context's launches use (NULL: the
 * simdev ones), for failures the fault injector cannot arm. */
void sp_test_kernel_set_launch_ops(struct simpler_context *ctx,
                                   const struct rt_kernel_launch_ops *ops);
void sp_test_kernel_counters(struct simpler_context *ctx, uint64_t *packets_encoded,
                             uint64_t *callables_resolved);

/* Copies the owned snapshot of `run` (as prepare took it) to *out.
 * INVALID_STATE for an unknown run. */
int sp_test_run_snapshot(struct simpler_context *ctx, simpler_run_t run,
                         struct simpler_orch_args *out);

/* Copies the counters. */
void sp_test_counters(struct simpler_context *ctx, struct sp_counters *out);

/* The context's latch (the kernel-mode entries will claim through it). */
struct sp_latch *sp_test_latch(struct simpler_context *ctx);

/* Called, when set, with each staging buffer just before it is freed: a
 * test poisons it to prove nothing reads it afterwards. */
extern void (*sp_test_staging_free_hook)(void *device, size_t bytes);

#endif /* SIMPLER_HOST_HOST_H */
