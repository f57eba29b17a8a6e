/*
 * host/working_set.h — the device storage one program-mode execution runs
 * in: a pipeline slot's stream, argument and result blocks, and the
 * staging buffers of the submission it holds.
 *
 * Owns: struct sp_working_set, its device resources (created with the
 * context, one per pipeline slot, reused by every submission the slot
 * holds), and staging: a submission's host buffers in device buffers it
 * owns, inputs copied in, outputs copied back, the buffers freed. Must not
 * take or release a slot, launch or read a run's status. Caller holds
 * ctx->lock throughout.
 */
#ifndef SIMPLER_HOST_WORKING_SET_H
#define SIMPLER_HOST_WORKING_SET_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/hbg.h"
#include "runtime/runtime.h"
#include "simpler/simpler.h"

struct simpler_context;
struct simpler_prepared_call;

/* One distinct host buffer of a submission, staged in a device buffer. */
struct sp_staging {
    uint64_t host_addr;
    uint64_t bytes;
    void *device; /* NULL once freed */
};

struct sp_working_set {
    simdev_stream_t stream;                /* the slot's own stream: carries its run's status only */
    struct simpler_orch_args *device_args; /* device copy of `staged_args` */
    struct rt_run_result *device_result;
    /* What the device sees: the call's host tensors rewritten to their
     * staging buffers. */
    struct simpler_orch_args staged_args;
    uint8_t tensor_staging[SIMPLER_ORCH_MAX_TENSORS]; /* index into staging, or 0xff: device tensor */
    struct sp_staging staging[SIMPLER_ORCH_MAX_TENSORS];
    uint32_t staging_count;
    /* host_build_graph: the bank the slot's runs are built into (host
     * memory, grown to the largest run's image bound; it must outlive the
     * run's image copy, and the slot outlives its run) and the staged
     * ranges the host build may read elements of. */
    void *hbg_bank;
    size_t hbg_bank_bytes;
    struct rt_hbg_view hbg_views[SIMPLER_ORCH_MAX_TENSORS];
};

/* Creates the working set's device resources (stream, argument and result
 * blocks). On failure sp_working_set_release frees what exists. */
int sp_working_set_create(struct simpler_context *ctx, struct sp_working_set *ws);

/* Frees them (and staging a failed undo left), nulling each handle once
 * freed: a failure returns its code and leaves the rest for a retry. */
int sp_working_set_release(struct simpler_context *ctx, struct sp_working_set *ws);

/* Gives every host buffer of `call`'s snapshot a device buffer and writes
 * the device view of its args (ws->staged_args) to use them. On failure the
 * caller frees what was allocated (sp_staging_free). */
int sp_staging_alloc(struct simpler_context *ctx, struct sp_working_set *ws,
                     const struct simpler_prepared_call *call);

/* Copies in, per staged buffer, the bytes its IN and INOUT views span (OUT
 * views are never copied in) from the host buffers as they are now, then
 * uploads the device view of the args to ws->device_args. */
int sp_staging_copy_in(struct sp_working_set *ws, const struct simpler_prepared_call *call);

/* Copies the elements of every OUT and INOUT host view of `call` from its
 * staging buffer back to the host, one contiguous run at a time (never the
 * bytes between them). 0 or the first failing copy's code. */
int sp_staging_copy_back(const struct sp_working_set *ws, const struct simpler_prepared_call *call);

/* host_build_graph: the bank, at least `bytes` long (OUT_OF_HOST_MEMORY
 * keeps the old one), and the staged views of `call`: per staging buffer,
 * the span its IN and INOUT views cover, as sp_staging_copy_in copies it,
 * read from the host buffer. Returns the view count in *count. */
int sp_hbg_prepare(struct sp_working_set *ws, const struct simpler_prepared_call *call,
                   size_t bytes, uint32_t *count);

/* Frees the staging buffers still held (a submission's, or left by one
 * whose undo failed); stops at the first failure, keeping the rest
 * recorded. */
int sp_staging_free(struct simpler_context *ctx, struct sp_working_set *ws);

/* Called, when set, with each staging buffer just before it is freed: a
 * test poisons it to prove nothing reads it afterwards. */
extern void (*sp_test_staging_free_hook)(void *device, size_t bytes);

#endif /* SIMPLER_HOST_WORKING_SET_H */
