/*
 * host/context.h — struct simpler_context: what every context has, and
 * where each identity's half sits in it.
 *
 * Owns: the context's layout (the common part, the program-mode half, the
 * kernel-mode half as struct sp_kernel_mode from kernel_mode.h), the counters,
 * the identity ops table, and the init arguments both identities check.
 * Not public API.
 *
 * Direction: calls go one way. The identities' files (program.c and the
 * run pipeline; kernel_mode*.c) call context.c and the modules both share
 * (device_binding.c, residency.c, trace_host.c); context.c calls only the
 * leaf modules (latch, phase, trace_host) and never an identity's code by
 * name. The two entry points every context has but whose work depends on
 * the identity (simpler_finalize_device, simpler_destroy_device_context)
 * dispatch through ctx->identity_ops, which the identity's init sets.
 *
 * Locking: ctx->lock guards every field below that is not marked
 * otherwise. It is held across synchronous copies (which wait for nothing)
 * and across the device waits of register/unregister (the control stream),
 * of a launch that failed part-way (rt_run_enqueue drains the launcher), of
 * finalize's drain after such a launch, and of the release of a stranded run
 * (sp_release_stranded); it is never held while waiting for a run's status
 * (await drops it).
 */
#ifndef SIMPLER_HOST_CONTEXT_H
#define SIMPLER_HOST_CONTEXT_H

#include <pthread.h>
#include <stdbool.h>

#include "host/kernel_mode.h"
#include "host/latch.h"
#include "host/trace_host.h"
#include "simpler/simpler.h"

struct sp_callable;
struct sp_slot;

/* Counters for tests and diagnostics (monotonic except the live ones). */
struct sp_counters {
    uint64_t slots_acquired;
    uint64_t slots_released;
    uint64_t staging_allocs;
    uint64_t staging_frees;
    uint64_t launches;
    uint64_t callables_loaded;
    uint64_t callables_unloaded;
    uint64_t host_preparations; /* preparation steps run (prepared_call.c) */
    uint64_t packets_encoded;   /* kernel mode: invocation packets encoded */
    uint64_t prepared_calls;    /* live: simpler_prepare_call's, not yet released */
    uint64_t host_orch_loads;   /* HBG: orchestrations loaded in the host process */
    uint64_t host_orch_unloads; /* HBG: and unloaded again (unregister, finalize) */
    uint64_t host_builds;       /* HBG: launches whose graph the host built */
    uint64_t host_builds_skipped; /* HBG: launches that published a kept image */
};

/* What the identity a context latched does for the entry points every
 * context has. The identity's init sets ctx->identity_ops, under ctx->lock,
 * as soon as it holds the latch, and never changes it (nothing unlatches);
 * NULL before: nothing was created. */
struct sp_identity_ops {
    /* simpler_finalize_device's work. Caller holds ctx->lock. */
    int (*finalize)(struct simpler_context *ctx);
    /* simpler_destroy_device_context's check: 0 when ctx may be freed (what
     * a failed init left behind released first), INVALID_STATE while it
     * holds what only a finalize may release. Caller holds ctx->lock. */
    int (*before_destroy)(struct simpler_context *ctx);
};

struct simpler_context {
    /* ---- every context */
    struct sp_latch latch; /* read without the lock */
    const struct sp_identity_ops *identity_ops; /* NULL until the latch holds */
    pthread_mutex_t lock;
    bool initialized;
    int device;
    struct simdev_config topo; /* the device's, read at init */
    struct simpler_config config;
    size_t committed;        /* device bytes held (device_binding.c) */
    simdev_stream_t control; /* loads and unloads */
    void *arena;
    size_t arena_bytes;
    /* The resident callables (residency.c), by id. */
    uint32_t callable_count;
    uint64_t callable_bytes;
    struct sp_callable *callables[SIMPLER_MAX_CALLABLE_IDS];
    struct sp_counters counters;
    /* The live prepared calls, newest first (prepared_call.c): an entry
     * taking a caller's call pointer finds it here before reading it. */
    struct simpler_prepared_call *prepared;
    struct sp_trace_ctx trace; /* trace_host.c */

    /* ---- the program-mode half (program.c and the run pipeline); zero in
     * a kernel-mode context. Unnamed, so its fields read as ctx->slots. */
    struct {
        pthread_cond_t waiters_done; /* broadcast when a slot's `waiting` clears */
        uint32_t sleepers;           /* threads asleep on waiters_done */
        struct rt_launcher *launcher;
        uint64_t arena_nonce;  /* rt_arena_nonce, drawn with the arena */
        struct sp_slot *slots; /* config.pipeline_depth (run_slot.h) */
        uint32_t slot_count;   /* slots whose device resources exist */
        simpler_run_t next_run;
        uint64_t stranded_released; /* stranded runs released, since creation */
    };

    /* ---- the kernel-mode half (kernel_mode.c); zero in a program context. */
    struct sp_kernel_mode kernel;
};

/* The checks of a context config: 0 or INVALID_ARGUMENT. */
int sp_config_check(const struct simpler_config *config);

/* A run config of a context with `context`'s config, in the runtime's
 * form (rt_config_from_public, and the context's runtime). */
void sp_rt_config(const struct simpler_config *context, const struct simpler_run_config *in,
                  struct rt_config *out);

/* An init's argument checks, both identities': ctx, device id, config
 * (NULL: the defaults) into *cfg. 0 or INVALID_ARGUMENT. */
int sp_init_arguments(const struct simpler_context *ctx, int device_id,
                      const struct simpler_config *config, struct simpler_config *cfg);

/* ------------------------------------------------------------ for tests */

/* Copies the counters. */
void sp_test_counters(struct simpler_context *ctx, struct sp_counters *out);

/* The context's latch (the kernel-mode entries will claim through it). */
struct sp_latch *sp_test_latch(struct simpler_context *ctx);

#endif /* SIMPLER_HOST_CONTEXT_H */
