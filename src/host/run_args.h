/*
 * host/run_args.h — a program-mode run's arguments on their way to the
 * device: host buffers staged in device buffers the run owns.
 *
 * Owns: struct sp_staging (one staged host buffer of a slot) and freeing a
 * slot's staging. Caller holds ctx->lock throughout.
 */
#ifndef SIMPLER_HOST_RUN_ARGS_H
#define SIMPLER_HOST_RUN_ARGS_H

#include <stddef.h>
#include <stdint.h>

struct simpler_context;
struct sp_slot;

/* One distinct host buffer of a run, staged in a device buffer. */
struct sp_staging {
    uint64_t host_addr;
    uint64_t bytes;
    void *device;     /* NULL once freed */
};

/* Frees the slot's staging buffers still held (those of its run, or left by
 * a prepare whose undo failed); stops at the first failure, keeping the rest
 * recorded. Caller holds ctx->lock. */
int sp_staging_free(struct simpler_context *ctx, struct sp_slot *slot);

/* Called, when set, with each staging buffer just before it is freed: a
 * test poisons it to prove nothing reads it afterwards. */
extern void (*sp_test_staging_free_hook)(void *device, size_t bytes);

#endif /* SIMPLER_HOST_RUN_ARGS_H */
