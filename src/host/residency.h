/*
 * host/residency.h — callables resident on a context's device.
 *
 * Owns: the host record of a callable (struct sp_callable), loading its
 * image on the device through the control stream and unloading it. Must
 * not decide who may register what (program.c, kernel_mode.c do) nor touch
 * runs. Caller holds ctx->lock throughout.
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
    uint64_t slot_generation; /* kernel mode: its binding slot's (0: not launchable) */
};

/* Reads the signature of a valid image into `c`. */
void sp_callable_read_signature(struct sp_callable *c, const struct simpler_callable_header *h);

/* Uploads and loads `image` (c->image_bytes long) on the control stream;
 * on failure holds nothing of it. */
int sp_callable_load(struct simpler_context *ctx, struct sp_callable *c, const void *image);

/* Unloads and frees its device side; on failure keeps what it still holds. */
int sp_callable_release(struct simpler_context *ctx, struct sp_callable *c);

#endif /* SIMPLER_HOST_RESIDENCY_H */
