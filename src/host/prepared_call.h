/*
 * host/prepared_call.h — the prepared description of an invocation: what
 * simpler_prepare_call resolves once and any number of submissions read.
 *
 * Owns: struct simpler_prepared_call (the public type's layout, opaque to
 * callers), the one preparation path both identities and both of their
 * single-use entries (simpler_prepare_run, simpler_kernel_mode_launch) go
 * through, and the counted references a prepared call holds. Must not take
 * a pipeline slot, stage, launch or touch a device: preparing is host work
 * only (the submission, host/submission.h, and its working set,
 * host/working_set.h, are the other two lifetimes).
 *
 * Immutability: after sp_call_prepare returns, nothing writes a prepared
 * call but the count of its unfinalized submissions (`submissions`, under
 * ctx->lock), which is the submission's reference, not the call's content,
 * its links in the context's list of live calls, and, under
 * host_build_graph, the image its first keepable build produced
 * (payload.hbg_image, under ctx->lock): a cache of what a build of the
 * call's snapshot gives, not new content.
 *
 * Liveness: a public entry never dereferences a caller's call pointer
 * before finding it, under ctx->lock, in the context's list of live calls
 * (sp_call_find): a released call, a call of another context or a pointer
 * that never was a call is refused without being read.
 */
#ifndef SIMPLER_HOST_PREPARED_CALL_H
#define SIMPLER_HOST_PREPARED_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/packet.h"
#include "host/latch.h"
#include "runtime/runtime.h"
#include "simpler/simpler.h"

struct sp_callable;

/*
 * The runtime-specific part of a prepared call: what the device is handed,
 * in the form the runtime that runs the call wants it. It is explicit on
 * purpose: the TMR packet is not the universal form of a prepared call.
 *   SP_PAYLOAD_STAGED_ARGS  program mode (TMR): nothing beyond the snapshot;
 *                           each submission stages host tensors into its
 *                           own working set and uploads the rewritten args.
 *   SP_PAYLOAD_TMR_PACKET   kernel mode (TMR): the invocation packet,
 *                           encoded once; every launch hands the same bytes.
 *   SP_PAYLOAD_HBG_IMAGE    program mode (HBG), a call of simpler_prepare_call:
 *                           staged as STAGED_ARGS, and the graph image its
 *                           first keepable build produced (`hbg_image`, NULL
 *                           until then; host/hbg_image.h): position-
 *                           independent, relocated by each later submission
 *                           when it publishes it to its bank, so the prepared
 *                           bytes never name a bank. A single-use call
 *                           (simpler_prepare_run) is STAGED_ARGS: built at
 *                           its one launch, never kept.
 */
enum sp_payload_kind {
    SP_PAYLOAD_STAGED_ARGS = 1,
    SP_PAYLOAD_TMR_PACKET = 2,
    SP_PAYLOAD_HBG_IMAGE = 3,
};

struct sp_hbg_image;

struct sp_prepared_payload {
    enum sp_payload_kind kind;
    size_t bytes;                             /* of `packet`; 0 for STAGED_ARGS */
    unsigned char packet[SP_PACKET_MAX_BYTES]; /* TMR_PACKET: the encoded packet */
    /* HBG_IMAGE: the kept image (owned; freed with the call), written once
     * by the launch that keeps it (ctx->lock). */
    struct sp_hbg_image *hbg_image;
};

/* Alive exactly while listed in its context's live calls (ctx->prepared),
 * or, when temporary, while its one use lasts. */
struct simpler_prepared_call {
    int32_t callable_id;
    struct sp_callable *callable;  /* resident while the call lives (see refs) */
    bool temporary;                /* made by a single-use entry: holds no
                                      callable reference, is not counted in
                                      prepared_calls, dies with its use */
    struct simpler_orch_args args; /* the owned snapshot of the caller's args */
    struct simpler_run_config public_config; /* the effective config, as given */
    struct rt_config config;       /* the same, in the runtime's form */
    uint32_t schedulers;           /* scheduler threads of each submission */
    uint32_t submissions;          /* program mode: unfinalized submissions of it
                                      (ctx->lock) */
    /* The context's live calls (ctx->prepared; ctx->lock); NULL in a
     * temporary call, which is never listed. */
    struct simpler_prepared_call *live_prev, *live_next;
    struct sp_prepared_payload payload;
};

/*
 * The preparation step, both identities: checks that `args` and `config`
 * (NULL: the callable's) suit resident callable `callable_id` exactly as
 * simpler_prepare_run (program) or simpler_kernel_mode_launch (kernel)
 * check them, then fills *out (any storage; nothing of it is read) with the
 * owned snapshot, the effective config and the payload, and counts the
 * preparation (and, in kernel mode, the packet encoding). `temporary` calls
 * take no callable reference. The arguments themselves (NULLs, id range,
 * the args' structure) are checked by the caller first. 0,
 * CALLABLE_NOT_RESIDENT, INVALID_ARGUMENT or CAPACITY_EXCEEDED; on failure
 * *out is untouched and nothing changed. Caller holds ctx->lock, the
 * context accepting work.
 */
int sp_call_prepare(struct simpler_context *ctx, int32_t callable_id,
                    const struct simpler_args *args, const struct simpler_run_config *config,
                    bool temporary, struct simpler_prepared_call *out);

/* The two halves of sp_call_prepare, for a caller that must find storage
 * for the call between them (simpler_prepare_run: a free slot). resolve
 * checks and changes nothing; fill writes *out and counts. */
struct sp_call_resolution {
    struct sp_callable *callable;
    struct rt_config config;
    uint32_t schedulers;
};
int sp_call_resolve(struct simpler_context *ctx, int32_t callable_id,
                    const struct simpler_args *args, const struct simpler_run_config *config,
                    struct sp_call_resolution *out);
int sp_call_fill(struct simpler_context *ctx, int32_t callable_id,
                 const struct simpler_args *args, const struct simpler_run_config *config,
                 const struct sp_call_resolution *resolution, bool temporary,
                 struct simpler_prepared_call *out);

/* The check every entry that takes a prepared call makes, under the lock
 * and before reading *call: 0 when `call` is a live call of `ctx` (listed
 * by simpler_prepare_call, not yet released), INVALID_ARGUMENT otherwise
 * (NULL, released, another context's, a temporary call). It compares
 * pointers only: O(live calls of the context). Caller holds ctx->lock. */
int sp_call_find(const struct simpler_context *ctx, const struct simpler_prepared_call *call);

/* Undoes sp_call_fill of a temporary call whose use failed before it did
 * anything (a single-use entry refused): the preparation and the packet
 * are not counted, the call is dead. Caller holds ctx->lock. */
void sp_call_discard(struct simpler_context *ctx, struct simpler_prepared_call *call);

/* The invariant of the counted references (asserted where they change,
 * unless NDEBUG): the live list holds exactly counters.prepared_calls
 * calls, each of this context and none temporary; the callables'
 * prepared_refs add up to the same; and each live call's `submissions` is
 * the number of slots whose submission executes it. True when consistent.
 * Caller holds ctx->lock. */
bool sp_call_check_refs(const struct simpler_context *ctx);

/* The argument checks of a preparation before any state (both identities):
 * NULLs, the id's range, the args' structure. 0 or INVALID_ARGUMENT. */
int sp_call_arguments(const struct simpler_context *ctx, int32_t callable_id,
                      const struct simpler_args *args, const struct simpler_run_config *config);

#endif /* SIMPLER_HOST_PREPARED_CALL_H */
