/*
 * host/run_slot.h — a pipeline slot: the lease that binds one unfinalized
 * program-mode submission to a working set.
 *
 * Owns: struct sp_slot, creating and releasing every slot's working set,
 * finding a slot, taking a free one for a submission and releasing it once
 * the submission is over, and the release of stranded runs (runs whose
 * finalize failed on a device operation). Must not stage, launch or wait
 * for a run. Caller holds ctx->lock throughout.
 */
#ifndef SIMPLER_HOST_RUN_SLOT_H
#define SIMPLER_HOST_RUN_SLOT_H

#include <stdbool.h>
#include <stdint.h>

#include "host/prepared_call.h"
#include "host/submission.h"
#include "host/working_set.h"
#include "simpler/simpler.h"

struct simpler_context;
struct sp_callable;

/* A pipeline slot: the lease of one unfinalized submission on one working
 * set. The working set is the slot's for the context's life; the
 * submission changes with every run the slot holds. */
struct sp_slot {
    struct sp_submission sub;
    struct sp_working_set ws;
    /* simpler_prepare_run's single-use call: prepared here, so the one-shot
     * path allocates nothing a prepared call would not. */
    struct simpler_prepared_call own_call;
};

/* Creates the device resources (stream, device args, result block) of the
 * first `depth` slots of ctx->slots, counting each in ctx->slot_count as
 * it starts, so that on failure sp_slots_release frees what exists. */
int sp_slots_create(struct simpler_context *ctx, uint32_t depth);

/* Frees every slot's resources (and staging a failed undo left), last slot
 * first, nulling each handle once freed: a failure returns its code and
 * leaves the rest, ctx->slot_count saying what is left, for a retry. */
int sp_slots_release(struct simpler_context *ctx);

/* 1 when the slot holds a submission executing `call`, else 0. */
static inline uint32_t sp_slot_executes(const struct sp_slot *slot,
                                        const struct simpler_prepared_call *call)
{
    return slot->sub.state != SP_SUBMISSION_NONE && slot->sub.call == call;
}

/* The slot holding `run`, or NULL. */
struct sp_slot *sp_slot_find(struct simpler_context *ctx, simpler_run_t run);

/* A free slot into *out, or CAPACITY_EXCEEDED: every slot holds an
 * unfinalized run. */
int sp_slot_find_free(struct simpler_context *ctx, struct sp_slot **out);

/* Takes the free slot `slot` for a submission of `call` with `config`, its
 * args already staged: the submission gets the next handle (returned) and
 * begins (sp_submission_begin). */
simpler_run_t sp_slot_acquire(struct simpler_context *ctx, struct sp_slot *slot,
                              struct simpler_prepared_call *call, const struct rt_config *config);

/* Frees the run's staging and trace, then ends its submission (its holds
 * on the call and the callable go); the handle is invalid afterwards. A
 * failed free returns its code with the slot still held (the staging
 * already freed stays freed).
 * The caller knows the run is over on the device. */
int sp_slot_release(struct simpler_context *ctx, struct sp_slot *slot);

/* After a sync of the run's stream returned `rc`: 0 when the stream is now
 * drained and clean (a nonzero `rc` was the carried error, now cleared),
 * else `rc` — the sync itself failed and nothing was waited for or cleared.
 * A lost device counts as drained: nothing more will run. */
int sp_slot_synced(struct simpler_context *ctx, struct sp_slot *slot, int rc);

/* Which unfinalized runs a stranded-run check or release is about: those
 * of `callable` and of `call` (NULL: any). */
struct sp_runs_of {
    const struct sp_callable *callable;
    const struct simpler_prepared_call *call;
};

/* 0 when every unfinalized run `of` names is stranded and no thread is
 * waiting for it; INVALID_STATE otherwise. Changes nothing. Caller holds
 * ctx->lock. */
int sp_stranded_only(struct simpler_context *ctx, struct sp_runs_of of);

/* Releases every stranded run `of` names, after
 * sp_stranded_only said 0: waits, holding the lock, for what is left of each
 * on the device, frees its staging and its slot, ends its submission and
 * counts it in ctx->stranded_released. Delivers no outputs.
 * Stops at the first failure (a device code), keeping the runs not yet
 * released. Caller holds ctx->lock; the context's device is current. */
int sp_release_stranded(struct simpler_context *ctx, struct sp_runs_of of);

/* ------------------------------------------------------------ for tests */

/* Copies the owned snapshot of `run` (as prepare took it) to *out.
 * INVALID_STATE for an unknown run. */
int sp_test_run_snapshot(struct simpler_context *ctx, simpler_run_t run,
                         struct simpler_orch_args *out);

#endif /* SIMPLER_HOST_RUN_SLOT_H */
