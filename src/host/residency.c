/*
 * host/residency.c — callables resident on a context's device (see
 * residency.h): creating the host record, loading the image through the
 * control stream, unloading it, and the context's registry of them.
 *
 * Must not decide who may register what, nor touch runs: program.c and
 * kernel_mode.c call this file, never the reverse.
 */
#include "host/residency.h"

#include <stdlib.h>
#include <string.h>

#include "common/elf_load.h"
#include "common/host_alloc.h"
#include "host/context.h"
#include "host/device_binding.h"
#include "launch/launch.h"

/* Reads the signature into the host record (the image is valid). */
static void read_signature(struct sp_callable *c, const struct simpler_callable_header *h)
{
    for (uint32_t i = 0; i < h->sig_count; i++) {
        if (h->signature[i] == SIMPLER_DIR_SCALAR)
            c->scalar_count++;
        else
            c->tensor_directions[c->tensor_count++] = h->signature[i];
    }
}

/* Uploads and loads `image` (c->image_bytes long) on the control stream;
 * on failure holds nothing of it. */
static int load(struct simpler_context *ctx, struct sp_callable *c, const void *image)
{
    int rc;
    /* The loader must run, not be skipped behind an error an earlier op left
     * on the control stream: the undo below relies on the record it writes. */
    int carried = simdev_stream_query(ctx->control);
    if (carried != 0 && carried != PTO_RUNTIME_ERR_NOT_READY)
        simdev_stream_sync(ctx->control);
    /* The record starts zeroed, so that the unload below, after a load op
     * that failed before it ran (its stream said so, not the loader), finds
     * nothing to unload rather than whatever the allocation held. */
    static const struct rt_callable_record empty_record;
    if ((rc = sp_dev_alloc(ctx, &c->image, c->image_bytes)) ||
        (rc = simdev_memcpy(c->image, image, c->image_bytes, SIMDEV_COPY_HOST_TO_DEVICE)) ||
        (rc = sp_dev_alloc(ctx, (void **)&c->record, sizeof *c->record)) ||
        (rc = simdev_memcpy(c->record, &empty_record, sizeof *c->record,
                            SIMDEV_COPY_HOST_TO_DEVICE)) ||
        (rc = rt_callable_load_enqueue(ctx->control, c->image, c->image_bytes,
                                        &ctx->config.run_capacity, c->record))) {
        sp_callable_release(ctx, c);
        return rc;
    }
    if ((rc = simdev_stream_sync(ctx->control))) {
        /* Either the load failed (the loader unloaded what it loaded and
         * zeroed the record), or the sync itself failed and the loader may
         * still be running, or have finished either way. Let it finish, then
         * unload: on a zeroed record that does nothing. */
        rt_stream_drain(ctx->control);
        if (!simdev_device_is_lost(ctx->device)) {
            c->loaded = true;
            ctx->counters.callables_loaded++;
        }
        sp_callable_release(ctx, c);
        return rc;
    }
    c->loaded = true;
    ctx->counters.callables_loaded++;
    struct rt_callable_record prefix; /* the fields before the tables */
    if ((rc = simdev_memcpy(&prefix, c->record, offsetof(struct rt_callable_record, handles),
                            SIMDEV_COPY_DEVICE_TO_HOST))) {
        sp_callable_release(ctx, c);
        return rc;
    }
    c->entry = prefix.entry;
    c->kernel_count = prefix.kernel_count;
    c->config = prefix.config;
    return 0;
}

/* host_build_graph: loads the orchestration of `image` in this process
 * (the host runs it) and notes which func ids have kernels. The image was
 * validated. INVALID_ARGUMENT when the object does not load or lacks its
 * entry, holding nothing. */
static int host_load(struct simpler_context *ctx, struct sp_callable *c, const uint8_t *image)
{
    struct simpler_callable_header h;
    memcpy(&h, image, sizeof h);
    void *handle = NULL, *sym;
    int fd = -1;
    if (h.orch_kind == SIMPLER_BINARY_ELF &&
        sp_elf_open(image + h.orch_offset, h.orch_bytes, "host orchestration load", &handle,
                    &fd) != 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (!(sym = sp_elf_symbol(handle, h.entry_name, "host orchestration load"))) {
        if (handle)
            sp_elf_close(handle, fd);
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
    memcpy(&c->host_entry, &sym, sizeof c->host_entry); /* POSIX: object to function */
    c->host_handle = handle;
    c->host_memfd = fd;
    for (uint32_t i = 0; i < h.child_count; i++) {
        struct simpler_callable_child child;
        memcpy(&child, image + h.children_offset + (uint64_t)i * sizeof child, sizeof child);
        c->kernel_present[child.func_id] = 1;
    }
    ctx->counters.host_orch_loads++;
    return 0;
}

/* Undoes host_load (a retried release finds nothing left to undo). */
static void host_unload(struct simpler_context *ctx, struct sp_callable *c)
{
    if (c->host_handle)
        sp_elf_close(c->host_handle, c->host_memfd);
    if (c->host_entry)
        ctx->counters.host_orch_unloads++;
    c->host_handle = NULL;
    c->host_entry = NULL;
}

int sp_callable_release(struct simpler_context *ctx, struct sp_callable *c)
{
    int rc;
    host_unload(ctx, c);
    if (c->loaded) {
        rc = rt_callable_unload_enqueue(ctx->control, c->record);
        if (rc && rc != PTO_RUNTIME_ERR_DEVICE_LOST)
            return rc;
        /* Enqueued, or the device is lost and runs nothing (its loaded
         * objects stay mapped; what is left is host-side): never again. */
        c->loaded = false;
        ctx->counters.callables_unloaded++;
        if (!rc && (rc = simdev_stream_sync(ctx->control))) {
            rt_stream_drain(ctx->control); /* a failed sync waited for nothing */
            if (rc != PTO_RUNTIME_ERR_DEVICE_LOST)
                return rc; /* the unload has run: a retry only frees */
        }
    }
    if (c->record) {
        if ((rc = sp_dev_free(ctx, c->record, sizeof *c->record)))
            return rc;
        c->record = NULL;
    }
    if (c->image) {
        if ((rc = sp_dev_free(ctx, c->image, c->image_bytes)))
            return rc;
        c->image = NULL;
    }
    return 0;
}

int sp_callable_create(struct simpler_context *ctx, int32_t id, const void *image, size_t bytes,
                       struct sp_callable **out)
{
    if (bytes > ctx->config.callable_bytes - ctx->callable_bytes)
        return PTO_RUNTIME_ERR_CALLABLE_BYTES_EXCEEDED;
    struct sp_callable *c = sp_host_calloc(1, sizeof *c);
    if (!c)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    struct simpler_callable_header h;
    memcpy(&h, image, sizeof h);
    c->id = id;
    c->image_bytes = bytes;
    read_signature(c, &h);
    int rc = load(ctx, c, image);
    if (rc) {
        free(c);
        return rc;
    }
    if (ctx->config.runtime == SIMPLER_RUNTIME_HBG && (rc = host_load(ctx, c, image))) {
        /* The device's load succeeded: undo it, as a failed load's undo
         * does (load). */
        sp_callable_release(ctx, c);
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void sp_residency_add(struct simpler_context *ctx, struct sp_callable *c)
{
    ctx->callables[c->id] = c;
    ctx->callable_count++;
    ctx->callable_bytes += c->image_bytes;
}

int sp_residency_remove(struct simpler_context *ctx, struct sp_callable *c)
{
    int rc = sp_callable_release(ctx, c);
    if (rc)
        return rc;
    ctx->callable_bytes -= c->image_bytes;
    ctx->callable_count--;
    ctx->callables[c->id] = NULL;
    free(c);
    return 0;
}
