/*
 * host/run_slot.h — a pipeline slot: the device resources of one
 * unfinalized program-mode run.
 *
 * Owns: struct sp_slot, each slot's device resources, finding a slot,
 * taking a free one for a prepared run and releasing it once the run is
 * over, and the release of stranded runs (runs whose finalize failed on a
 * device operation). Must not stage, launch or wait for a run. Caller holds
 * ctx->lock throughout.
 */
#ifndef SIMPLER_HOST_RUN_SLOT_H
#define SIMPLER_HOST_RUN_SLOT_H

#include <stdbool.h>
#include <stdint.h>

#include "host/run_args.h"
#include "runtime/runtime.h"
#include "simpler/simpler.h"

struct simpler_context;
struct sp_callable;
struct sp_trace_run;

enum sp_slot_state {
    SP_SLOT_FREE = 0,
    SP_SLOT_PREPARED, /* staged, not launched */
    SP_SLOT_LAUNCHED, /* on the device; `completed` once its status is known */
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

/* Creates the device resources (stream, device args, result block) of the
 * first `depth` slots of ctx->slots, counting each in ctx->slot_count as
 * it starts, so that on failure sp_slots_release frees what exists. */
int sp_slots_create(struct simpler_context *ctx, uint32_t depth);

/* Frees every slot's resources (and staging a failed undo left), last slot
 * first, nulling each handle once freed: a failure returns its code and
 * leaves the rest, ctx->slot_count saying what is left, for a retry. */
int sp_slots_release(struct simpler_context *ctx);

/* The slot holding `run`, or NULL. */
struct sp_slot *sp_slot_find(struct simpler_context *ctx, simpler_run_t run);

/* A free slot into *out, or CAPACITY_EXCEEDED: every slot holds an
 * unfinalized run. */
int sp_slot_find_free(struct simpler_context *ctx, struct sp_slot **out);

/* Takes the free slot `slot` for a run of `callable` with `config`, its
 * args already staged: the run gets the next handle (returned), the slot
 * becomes PREPARED with a clean status, and the callable counts the run. */
simpler_run_t sp_slot_acquire(struct simpler_context *ctx, struct sp_slot *slot,
                              struct sp_callable *callable, const struct rt_config *config);

/* Frees the run's staging and trace, then its slot and its hold on the
 * callable; the handle is invalid afterwards. A failed free returns its
 * code with the slot still held (the staging already freed stays freed).
 * The caller knows the run is over on the device. */
int sp_slot_release(struct simpler_context *ctx, struct sp_slot *slot);

/* After a sync of the run's stream returned `rc`: 0 when the stream is now
 * drained and clean (a nonzero `rc` was the carried error, now cleared),
 * else `rc` — the sync itself failed and nothing was waited for or cleared.
 * A lost device counts as drained: nothing more will run. */
int sp_slot_synced(struct simpler_context *ctx, struct sp_slot *slot, int rc);

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

/* ------------------------------------------------------------ for tests */

/* Copies the owned snapshot of `run` (as prepare took it) to *out.
 * INVALID_STATE for an unknown run. */
int sp_test_run_snapshot(struct simpler_context *ctx, simpler_run_t run,
                         struct simpler_orch_args *out);

#endif /* SIMPLER_HOST_RUN_SLOT_H */
