/*
 * host/device_binding.h — a context's hold on its device.
 *
 * Owns: the one-context-per-device binding (either identity), whether a
 * device can run rounds, the device memory a context commits (counted in
 * ctx->committed) and draining one of its streams. Must not know either
 * identity's resources: program.c and kernel_mode.c decide what to bind,
 * allocate and drain.
 */
#ifndef SIMPLER_HOST_DEVICE_BINDING_H
#define SIMPLER_HOST_DEVICE_BINDING_H

#include <stdbool.h>
#include <stddef.h>

#include "simpler/device.h"
#include "simpler/simpler.h"

struct simpler_context;

/* One context per device, whichever identity: INVALID_STATE when another
 * context holds `device`; 0 with `device` bound to ctx (again) otherwise. */
int sp_device_claim(const struct simpler_context *ctx, int device);
/* Unbinds `device` if ctx holds it. */
void sp_device_release(const struct simpler_context *ctx, int device);

/* True when a device of topology `topo` can run rounds: an orchestrator, a
 * scheduler and at least one core. */
bool sp_topology_runs_rounds(const struct simdev_config *topo);

/* Reads `device_id`'s topology into *topo and checks it can run `cfg`'s
 * rounds: DEVICE_LOST, UNSUPPORTED (see sp_topology_runs_rounds),
 * INVALID_ARGUMENT (more scheduler threads than the device has), or 0. */
int sp_device_usable(int device_id, const struct simpler_config *cfg, struct simdev_config *topo);

/* Device memory of the context (counted in `committed`). Caller must hold
 * ctx->lock or be the only user of ctx. */
int sp_dev_alloc(struct simpler_context *ctx, void **out, size_t bytes);
int sp_dev_free(struct simpler_context *ctx, void *ptr, size_t bytes);

#endif /* SIMPLER_HOST_DEVICE_BINDING_H */
