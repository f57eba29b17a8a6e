/*
 * host/run_args.h — a program-mode run's arguments on their way to the
 * device: host buffers staged in device buffers the run owns.
 *
 * Owns: the checks of a run's args, the owned snapshot of them in the
 * run's slot, and staging: struct sp_staging (one staged host buffer of a
 * slot), its allocation, the copies in and back, and its release. Must not
 * take, launch or release a slot. Caller holds ctx->lock throughout,
 * except for sp_run_args_check (no state).
 */
#ifndef SIMPLER_HOST_RUN_ARGS_H
#define SIMPLER_HOST_RUN_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/simpler.h"

struct simpler_context;
struct sp_callable;
struct sp_slot;

/* One distinct host buffer of a run, staged in a device buffer. */
struct sp_staging {
    uint64_t host_addr;
    uint64_t bytes;
    void *device;     /* NULL once freed */
};

/* Structural checks of a run's args, before any state: counts, every
 * tensor a descriptor as tensor.h makes it whose view lies inside its
 * buffer, and host buffers that alias exactly or not at all. 0 or
 * INVALID_ARGUMENT. */
int sp_run_args_check(const struct simpler_args *args);

/* Copies `args` (checked) into the slot's owned snapshot: nothing of the
 * caller's containers is kept. */
void sp_run_args_snapshot(struct sp_slot *slot, const struct simpler_args *args);

/* Gives every host buffer of the snapshot a device buffer and rewrites the
 * device view of the args (slot->staged_args) to use them. On failure the
 * caller frees what was allocated (sp_staging_free). */
int sp_staging_alloc(struct simpler_context *ctx, struct sp_slot *slot);

/* Copies in, per staged buffer, the bytes its IN and INOUT views span (OUT
 * views are never copied in), then uploads the device view of the args to
 * slot->device_args. */
int sp_staging_copy_in(struct sp_slot *slot, const struct sp_callable *callable);

/* Copies the elements of every OUT and INOUT host view from its staging
 * buffer back to the host, one contiguous run at a time (never the bytes
 * between them). 0 or the first failing copy's code. */
int sp_staging_copy_back(const struct sp_slot *slot);

/* Frees the slot's staging buffers still held (those of its run, or left by
 * a prepare whose undo failed); stops at the first failure, keeping the rest
 * recorded. Caller holds ctx->lock. */
int sp_staging_free(struct simpler_context *ctx, struct sp_slot *slot);

/* Called, when set, with each staging buffer just before it is freed: a
 * test poisons it to prove nothing reads it afterwards. */
extern void (*sp_test_staging_free_hook)(void *device, size_t bytes);

#endif /* SIMPLER_HOST_RUN_ARGS_H */
