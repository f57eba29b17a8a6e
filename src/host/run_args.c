/*
 * host/run_args.c — a program-mode run's arguments (see run_args.h): the
 * checks prepare makes, the owned snapshot in the run's slot, and staging:
 * host buffers in device buffers the run owns, inputs copied in, outputs
 * copied back.
 *
 * Must not take, launch or release a slot (run_slot.c, pipeline.c do), nor
 * read a run's status.
 */
#include "host/run_args.h"

#include <string.h>

#include "common/view.h"
#include "host/context.h"
#include "host/device_binding.h"
#include "host/residency.h"
#include "host/run_slot.h"

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

/* Bounds on a run argument's shape: a broadcast (stride 0) view may name
 * more elements than its buffer holds, but not without limit. */
#define MAX_ARG_ELEMENTS (UINT64_C(1) << 48)

/*
 * True when `t` is a run argument prepare accepts: a descriptor as the
 * tensor.h constructors make it (no producer: a run's arguments are
 * external, so SIMPLER_TASK_ID_NONE; reserved zero; no unknown flag) over
 * a real buffer (non-NULL address, the buffer not wrapping the address
 * space, a valid address space), whose view lies inside the buffer
 * (sp_view_inside) and names at most MAX_ARG_ELEMENTS elements. On success
 * [*lo, *hi) is the byte range the view touches.
 */
static bool arg_valid(const struct simpler_tensor *t, uint64_t *lo, uint64_t *hi)
{
    uint64_t end, numel;
    struct sp_view_extent e;
    if (!t->addr || t->address_space > SIMPLER_MEM_DEVICE ||
        !sp_add_u64(t->addr, t->buffer_bytes, &end) ||
        t->producer_task_id != SIMPLER_TASK_ID_NONE || t->reserved != 0 ||
        (t->flags & ~SIMPLER_TENSOR_MANUAL_DEP) != 0)
        return false;
    if (!sp_view_numel(t, &numel) || numel > MAX_ARG_ELEMENTS || !sp_view_inside(t, &e))
        return false;
    *lo = (uint64_t)e.first_byte;
    *hi = (uint64_t)e.last_byte + 1;
    return true;
}

int sp_run_args_check(const struct simpler_args *args)
{
    if (args->tensor_count > SIMPLER_ORCH_MAX_TENSORS ||
        args->scalar_count > SIMPLER_ORCH_MAX_SCALARS ||
        (args->tensor_count && !args->tensors) || (args->scalar_count && !args->scalars))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < args->tensor_count; i++) {
        const struct simpler_tensor *t = &args->tensors[i];
        uint64_t lo, hi;
        if (!arg_valid(t, &lo, &hi))
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        if (t->address_space != SIMPLER_MEM_HOST)
            continue;
        /* Host buffers are staged one device buffer each: two tensors must
         * name the same buffer exactly or not overlap at all, else the
         * staged copies could not alias the way the host bytes do. */
        for (uint32_t j = 0; j < i; j++) {
            const struct simpler_tensor *u = &args->tensors[j];
            if (u->address_space != SIMPLER_MEM_HOST ||
                (u->addr == t->addr && u->buffer_bytes == t->buffer_bytes))
                continue;
            if (t->addr < u->addr + u->buffer_bytes && u->addr < t->addr + t->buffer_bytes)
                return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        }
    }
    return 0;
}

void sp_run_args_snapshot(struct sp_slot *s, const struct simpler_args *args)
{
    /* The owned snapshot: nothing of the caller's containers is kept. */
    memset(&s->snapshot, 0, sizeof s->snapshot);
    s->snapshot.tensor_count = args->tensor_count;
    s->snapshot.scalar_count = args->scalar_count;
    if (args->tensor_count)
        memcpy(s->snapshot.tensors, args->tensors, args->tensor_count * sizeof *args->tensors);
    if (args->scalar_count)
        memcpy(s->snapshot.scalars, args->scalars, args->scalar_count * sizeof *args->scalars);
}

/* ---------------------------------------------------------------- staging */

int sp_staging_alloc(struct simpler_context *ctx, struct sp_slot *s)
{
    const struct simpler_orch_args *a = &s->snapshot;
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

int sp_staging_copy_in(struct sp_slot *s, const struct sp_callable *c)
{
    const struct simpler_orch_args *a = &s->snapshot;
    int rc;
    for (uint32_t j = 0; j < s->staging_count; j++) {
        uint64_t lo = UINT64_MAX, hi = 0, vlo = 0, vhi = 0;
        for (uint32_t i = 0; i < a->tensor_count; i++) {
            if (s->tensor_staging[i] != j || !is_input(c->tensor_directions[i]))
                continue;
            arg_valid(&a->tensors[i], &vlo, &vhi); /* true: prepare checked it */
            lo = vlo < lo ? vlo : lo;
            hi = vhi > hi ? vhi : hi;
        }
        if (lo < hi && (rc = simdev_memcpy((uint8_t *)s->staging[j].device + lo,
                                           (const uint8_t *)(uintptr_t)s->staging[j].host_addr + lo,
                                           hi - lo, SIMDEV_COPY_HOST_TO_DEVICE)))
            return rc;
    }
    return simdev_memcpy(s->device_args, &s->staged_args, sizeof s->staged_args,
                         SIMDEV_COPY_HOST_TO_DEVICE);
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

int sp_staging_copy_back(const struct sp_slot *s)
{
    const uint8_t *dirs = s->callable->tensor_directions;
    for (uint32_t i = 0; i < s->snapshot.tensor_count; i++) {
        if (s->tensor_staging[i] == NO_STAGING || !is_output(dirs[i]))
            continue;
        int rc = copy_view_back(&s->snapshot.tensors[i], s->staging[s->tensor_staging[i]].device,
                                0, 0);
        if (rc)
            return rc;
    }
    return 0;
}

int sp_staging_free(struct simpler_context *ctx, struct sp_slot *s)
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
