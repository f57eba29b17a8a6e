/*
 * host/working_set.c — a pipeline slot's device storage (see
 * working_set.h): its resources, created with the context and released at
 * its finalize, and the staging of the submission it holds.
 *
 * Must not take or release a slot (run_slot.c), launch or read a status
 * (pipeline.c).
 */
#include "host/working_set.h"

#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"

#include "host/context.h"
#include "host/device_binding.h"
#include "host/prepared_call.h"
#include "host/residency.h"
#include "host/run_args.h"

void (*sp_test_staging_free_hook)(void *device, size_t bytes);

#define NO_STAGING 0xffu /* tensor_staging[]: a device tensor, passed through */

static bool is_output(uint8_t dir)
{
    return dir == SIMPLER_DIR_OUT || dir == SIMPLER_DIR_INOUT;
}

static bool is_input(uint8_t dir)
{
    return dir == SIMPLER_DIR_IN || dir == SIMPLER_DIR_INOUT;
}

/* ------------------------------------------------------------- resources */

int sp_working_set_create(struct simpler_context *ctx, struct sp_working_set *ws)
{
    int rc;
    if ((rc = simdev_stream_create(&ws->stream)) ||
        (rc = sp_dev_alloc(ctx, (void **)&ws->device_args, sizeof *ws->device_args)) ||
        (rc = sp_dev_alloc(ctx, (void **)&ws->device_result, sizeof *ws->device_result)))
        return rc;
    return 0;
}

int sp_working_set_release(struct simpler_context *ctx, struct sp_working_set *ws)
{
    int rc;
    if ((rc = sp_staging_free(ctx, ws))) /* left by a submission whose undo failed */
        return rc;
    free(ws->hbg_bank); /* host memory: a run that used it has ended */
    ws->hbg_bank = NULL;
    ws->hbg_bank_bytes = 0;
    if (ws->device_result) {
        if ((rc = sp_dev_free(ctx, ws->device_result, sizeof *ws->device_result)))
            return rc;
        ws->device_result = NULL;
    }
    if (ws->device_args) {
        if ((rc = sp_dev_free(ctx, ws->device_args, sizeof *ws->device_args)))
            return rc;
        ws->device_args = NULL;
    }
    if (ws->stream) {
        if ((rc = simdev_stream_destroy(ws->stream)))
            return rc;
        ws->stream = NULL;
    }
    return 0;
}

/* --------------------------------------------------------------- staging */

int sp_staging_alloc(struct simpler_context *ctx, struct sp_working_set *s,
                     const struct simpler_prepared_call *call)
{
    const struct simpler_orch_args *a = &call->args;
    s->staged_args = *a;
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        const struct simpler_tensor *t = &a->tensors[i];
        s->tensor_staging[i] = NO_STAGING;
        if (t->address_space != SIMPLER_MEM_HOST)
            continue;
        uint32_t j = 0;
        while (j < s->staging_count &&
               !(s->staging[j].host_addr == t->addr && s->staging[j].bytes == t->buffer_bytes))
            j++;
        if (j == s->staging_count) {
            struct sp_staging *st = &s->staging[j];
            st->host_addr = t->addr;
            st->bytes = t->buffer_bytes;
            int rc = sp_dev_alloc(ctx, &st->device, st->bytes);
            if (rc)
                return rc;
            s->staging_count++;
            ctx->counters.staging_allocs++;
        }
        s->tensor_staging[i] = (uint8_t)j;
        s->staged_args.tensors[i].addr = (uint64_t)(uintptr_t)s->staging[j].device;
        s->staged_args.tensors[i].address_space = SIMPLER_MEM_DEVICE;
    }
    return 0;
}

/* The bytes [*lo, *hi) of staging buffer `j` that `call`'s IN and INOUT
 * views span (*lo >= *hi: none). */
static void input_span(const struct sp_working_set *s, const struct simpler_prepared_call *call,
                       uint32_t j, uint64_t *lo, uint64_t *hi)
{
    const struct simpler_orch_args *a = &call->args;
    const struct sp_callable *c = call->callable;
    uint64_t vlo = 0, vhi = 0;
    *lo = UINT64_MAX;
    *hi = 0;
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        if (s->tensor_staging[i] != j || !is_input(c->tensor_directions[i]))
            continue;
        sp_arg_span(&a->tensors[i], &vlo, &vhi); /* true: prepare checked it */
        *lo = vlo < *lo ? vlo : *lo;
        *hi = vhi > *hi ? vhi : *hi;
    }
}

int sp_staging_copy_in(struct sp_working_set *s, const struct simpler_prepared_call *call)
{
    int rc;
    for (uint32_t j = 0; j < s->staging_count; j++) {
        uint64_t lo, hi;
        input_span(s, call, j, &lo, &hi);
        if (lo < hi && (rc = simdev_memcpy((uint8_t *)s->staging[j].device + lo,
                                           (const uint8_t *)(uintptr_t)s->staging[j].host_addr + lo,
                                           hi - lo, SIMDEV_COPY_HOST_TO_DEVICE)))
            return rc;
    }
    return simdev_memcpy(s->device_args, &s->staged_args, sizeof s->staged_args,
                         SIMDEV_COPY_HOST_TO_DEVICE);
}

int sp_hbg_prepare(struct sp_working_set *s, const struct simpler_prepared_call *call,
                   size_t bytes, uint32_t *count)
{
    if (s->hbg_bank_bytes < bytes) {
        void *bank = sp_host_malloc(bytes);
        if (!bank)
            return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        free(s->hbg_bank);
        s->hbg_bank = bank;
        s->hbg_bank_bytes = bytes;
    }
    uint32_t n = 0;
    for (uint32_t j = 0; j < s->staging_count; j++) {
        uint64_t lo, hi;
        input_span(s, call, j, &lo, &hi);
        if (lo >= hi)
            continue;
        s->hbg_views[n++] = (struct rt_hbg_view){
            .device = (uint64_t)(uintptr_t)s->staging[j].device + lo,
            .bytes = hi - lo,
            .host = (const uint8_t *)(uintptr_t)s->staging[j].host_addr + lo,
        };
    }
    *count = n;
    return 0;
}

/* Copies the elements of host view `t` from its staging buffer back to the
 * host, one contiguous run at a time (never the bytes between them). */
static int copy_view_back(const struct simpler_tensor *t, const uint8_t *device, uint32_t dim,
                          int64_t offset)
{
    size_t esize = simpler_dtype_size(t->dtype);
    uint8_t *host = (uint8_t *)(uintptr_t)t->addr;
    int rc = 0;
    if (dim >= t->ndims || dim >= SIMPLER_TENSOR_MAX_DIMS)
        return PTO_RUNTIME_ERR_INTERNAL; /* prepare checked ndims: never reached */
    if (dim == 0 && simpler_tensor_is_contiguous(t))
        return simdev_memcpy(host + t->start_offset * esize, device + t->start_offset * esize,
                             simpler_tensor_numel(t) * esize, SIMDEV_COPY_DEVICE_TO_HOST);
    if (dim == 0)
        offset = (int64_t)t->start_offset;
    if (dim + 1 == t->ndims && t->stride[dim] == 1)
        return simdev_memcpy(host + offset * (int64_t)esize, device + offset * (int64_t)esize,
                             t->shape[dim] * esize, SIMDEV_COPY_DEVICE_TO_HOST);
    for (uint64_t i = 0; i < t->shape[dim] && !rc; i++) {
        int64_t at = offset + (int64_t)i * t->stride[dim];
        if (dim + 1 == t->ndims)
            rc = simdev_memcpy(host + at * (int64_t)esize, device + at * (int64_t)esize, esize,
                               SIMDEV_COPY_DEVICE_TO_HOST);
        else
            rc = copy_view_back(t, device, dim + 1, at);
    }
    return rc;
}

int sp_staging_copy_back(const struct sp_working_set *s, const struct simpler_prepared_call *call)
{
    const uint8_t *dirs = call->callable->tensor_directions;
    for (uint32_t i = 0; i < call->args.tensor_count; i++) {
        if (s->tensor_staging[i] == NO_STAGING || !is_output(dirs[i]))
            continue;
        int rc = copy_view_back(&call->args.tensors[i], s->staging[s->tensor_staging[i]].device,
                                0, 0);
        if (rc)
            return rc;
    }
    return 0;
}

int sp_staging_free(struct simpler_context *ctx, struct sp_working_set *s)
{
    for (uint32_t j = 0; j < s->staging_count; j++) {
        struct sp_staging *st = &s->staging[j];
        if (!st->device)
            continue;
        if (sp_test_staging_free_hook)
            sp_test_staging_free_hook(st->device, st->bytes);
        int rc = sp_dev_free(ctx, st->device, st->bytes);
        if (rc)
            return rc;
        st->device = NULL;
        ctx->counters.staging_frees++;
    }
    return 0;
}
