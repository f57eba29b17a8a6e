/*
 * host/run_args.c — the checks of a program-mode call's arguments (see
 * run_args.h).
 *
 * Must not keep state: the snapshot is the prepared call's
 * (prepared_call.c), staging the working set's (working_set.c).
 */
#include "host/run_args.h"

#include <string.h>

#include "common/view.h"

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
bool sp_arg_span(const struct simpler_tensor *t, uint64_t *lo, uint64_t *hi)
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
        if (!sp_arg_span(t, &lo, &hi))
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
