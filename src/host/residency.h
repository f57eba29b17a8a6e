/*
 * host/residency.h — callables resident on a context's device.
 *
 * Owns: the host record of a callable (struct sp_callable), loading its
 * image on the device through the control stream and unloading it, and the
 * context's registry (ctx->callables, by id). Must not decide who may
 * register what (program.c, kernel_mode.c do) nor touch runs. Caller holds
 * ctx->lock throughout.
 */
#ifndef SIMPLER_HOST_RESIDENCY_H
#define SIMPLER_HOST_RESIDENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"
#include "simpler/callable.h"
#include "simpler/simpler.h"

struct simpler_context;

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
    uint32_t runs;         /* program mode: unfinalized runs using it */
    uint32_t prepared_refs; /* live prepared calls of it (simpler_prepare_call's) */
    uint64_t slot_generation; /* kernel mode: its binding slot's (0: not launchable) */
    /* kernel mode: its run config as the context fits it (the context's
     * config, topology and arena are fixed at its init), checked against
     * the arena at registration; a launch without a config of its own uses
     * it as it is (valid while slot_generation is nonzero). */
    struct rt_config kernel_config;
    /* host_build_graph (the context's runtime is HBG): the orchestration as
     * loaded in the host process at registration, once, and which func ids
     * the image gives a kernel. */
    simpler_orch_entry_fn host_entry;
    void *host_handle; /* the orchestration's object; NULL: none opened */
    int host_memfd;
    uint8_t kernel_present[SIMPLER_MAX_FUNC_IDS];
};

/* A new callable `id` of the valid `image` (`bytes` long), loaded on the
 * device through the control stream: 0 with *out set (not yet in the
 * registry), or CALLABLE_BYTES_EXCEEDED (more than the context's
 * callable_bytes left), OUT_OF_HOST_MEMORY or the load's code, holding
 * nothing. */
int sp_callable_create(struct simpler_context *ctx, int32_t id, const void *image, size_t bytes,
                       struct sp_callable **out);

/* Unloads and frees its device side; on failure keeps what it still holds
 * (a retry does what is left). The host record stays. */
int sp_callable_release(struct simpler_context *ctx, struct sp_callable *c);

/* Enters `c` in the context's registry under c->id, counted against
 * max_callables and callable_bytes. */
void sp_residency_add(struct simpler_context *ctx, struct sp_callable *c);

/* Releases `c` (sp_callable_release), takes it out of the registry and
 * frees it. On failure `c` stays registered, holding what it still holds. */
int sp_residency_remove(struct simpler_context *ctx, struct sp_callable *c);

#endif /* SIMPLER_HOST_RESIDENCY_H */
