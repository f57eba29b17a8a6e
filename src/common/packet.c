/*
 * common/packet.c — see packet.h. Every size goes through common/checked.h
 * and every view through common/view.h; the header and binding are copied
 * out with memcpy, so reading them needs no alignment and no more bytes
 * than were checked to be there.
 */
#include "common/packet.h"

#include <string.h>

#include "common/checked.h"
#include "common/view.h"
#include "simpler/callable.h"
#include "simpler/simpler.h"
#include "simpler/status.h"

/* Payload bytes (after the header) of the given counts, or false when a
 * count is over its limit. */
static bool payload_bytes_of(uint64_t tensor_count, uint64_t scalar_count, uint64_t *payload)
{
    uint64_t tensors, scalars, sum;
    if (tensor_count > SIMPLER_ORCH_MAX_TENSORS || scalar_count > SIMPLER_ORCH_MAX_SCALARS)
        return false;
    if (!sp_mul_u64(tensor_count, sizeof(struct simpler_tensor), &tensors) ||
        !sp_mul_u64(scalar_count, sizeof(uint64_t), &scalars) ||
        !sp_add_u64(sizeof(struct sp_packet_binding), tensors, &sum) ||
        !sp_add_u64(sum, scalars, &sum))
        return false;
    *payload = sum;
    return true;
}

size_t sp_packet_bytes(uint32_t tensor_count, uint32_t scalar_count)
{
    uint64_t payload, total;
    if (!payload_bytes_of(tensor_count, scalar_count, &payload) ||
        !sp_add_u64(sizeof(struct sp_packet_header), payload, &total))
        return 0;
    return (size_t)total; /* at most SP_PACKET_MAX_BYTES */
}

/* ---------------------------------------------------------------- encode */

int sp_packet_encode(void *out, size_t capacity, int32_t callable_id,
                     uint64_t context_generation, uint64_t slot_generation,
                     const struct simpler_args *args, size_t *written)
{
    if (!out || !args || !written || (args->tensor_count && !args->tensors) ||
        (args->scalar_count && !args->scalars) || callable_id < 0 || context_generation == 0 ||
        slot_generation == 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    size_t total = sp_packet_bytes(args->tensor_count, args->scalar_count);
    if (total == 0 || capacity < total)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;

    struct sp_packet_header h;
    memset(&h, 0, sizeof h); /* reserved0, reserved1 and anything added later start at 0 */
    h.mode = SP_PACKET_MODE_KERNEL;
    h.callable_id = callable_id;
    h.payload_bytes = total - sizeof h;
    h.tensor_count = (int32_t)args->tensor_count; /* <= SIMPLER_ORCH_MAX_TENSORS */
    h.scalar_count = (int32_t)args->scalar_count;
    struct sp_packet_binding b = {context_generation, slot_generation};

    unsigned char *p = out;
    size_t tensor_bytes = (size_t)args->tensor_count * sizeof(struct simpler_tensor);
    memcpy(p, &h, sizeof h);
    memcpy(p + sizeof h, &b, sizeof b);
    if (tensor_bytes)
        memcpy(p + SP_PACKET_TENSORS_OFFSET, args->tensors, tensor_bytes);
    if (args->scalar_count)
        memcpy(p + SP_PACKET_TENSORS_OFFSET + tensor_bytes, args->scalars,
               (size_t)args->scalar_count * sizeof(uint64_t));
    *written = total;
    return 0;
}

/* ---------------------------------------------------------------- decode */

/* The header's own rules, in the order of enum sp_packet_reason. */
static enum sp_packet_reason header_reason(const struct sp_packet_header *h, size_t bytes)
{
    if (h->mode != SP_PACKET_MODE_KERNEL)
        return SP_PACKET_BAD_MODE;
    if (h->reserved0 != 0 || h->reserved1 != 0)
        return SP_PACKET_RESERVED_NONZERO;
    if (h->callable_id < 0)
        return SP_PACKET_BAD_CALLABLE_ID;
    if (h->tensor_count < 0 || h->tensor_count > SIMPLER_ORCH_MAX_TENSORS ||
        h->scalar_count < 0 || h->scalar_count > SIMPLER_ORCH_MAX_SCALARS)
        return SP_PACKET_BAD_COUNT;
    if (h->payload_bytes != bytes - sizeof *h) /* bytes >= SP_PACKET_MIN_BYTES here */
        return SP_PACKET_LENGTH_MISMATCH;
    uint64_t implied;
    if (!payload_bytes_of((uint64_t)h->tensor_count, (uint64_t)h->scalar_count, &implied) ||
        h->payload_bytes != implied)
        return SP_PACKET_PAYLOAD_MISMATCH;
    return SP_PACKET_OK;
}

enum sp_packet_reason sp_packet_header_reason(const void *packet, size_t bytes,
                                              struct sp_packet_view *out)
{
    if (!packet || !out)
        return SP_PACKET_NULL_ARGUMENT;
    if ((uintptr_t)packet % SP_PACKET_ALIGN != 0)
        return SP_PACKET_MISALIGNED;
    if (bytes < SP_PACKET_MIN_BYTES)
        return SP_PACKET_TRUNCATED;
    const unsigned char *p = packet;
    struct sp_packet_header h;
    struct sp_packet_binding b;
    memcpy(&h, p, sizeof h);
    memcpy(&b, p + sizeof h, sizeof b);
    enum sp_packet_reason reason = header_reason(&h, bytes);
    if (reason != SP_PACKET_OK)
        return reason;
    if (b.context_generation == 0 || b.slot_generation == 0)
        return SP_PACKET_ZERO_GENERATION;

    /* The sizes agree, so both sections lie inside the `bytes` given. */
    size_t tensor_bytes = (size_t)h.tensor_count * sizeof(struct simpler_tensor);
    struct sp_packet_view v = {
        .callable_id = h.callable_id,
        .context_generation = b.context_generation,
        .slot_generation = b.slot_generation,
        .tensor_count = (uint32_t)h.tensor_count,
        .scalar_count = (uint32_t)h.scalar_count,
        .tensors = h.tensor_count
                       ? (const struct simpler_tensor *)(const void *)(p + SP_PACKET_TENSORS_OFFSET)
                       : NULL,
        .scalars = h.scalar_count
                       ? (const uint64_t *)(const void *)(p + SP_PACKET_TENSORS_OFFSET + tensor_bytes)
                       : NULL,
    };
    *out = v;
    return SP_PACKET_OK;
}

int sp_packet_decode_header(const void *packet, size_t bytes, struct sp_packet_view *out)
{
    return sp_packet_header_reason(packet, bytes, out) == SP_PACKET_OK
               ? 0
               : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
}

/* ------------------------------------------------------------- arguments */

/* One tensor of a kernel launch: caller-owned device memory, a real buffer
 * that does not wrap the address space, a view inside it. */
static enum sp_packet_reason tensor_reason(const struct simpler_tensor *t)
{
    uint64_t end;
    if (t->address_space != SIMPLER_MEM_DEVICE)
        return SP_PACKET_TENSOR_NOT_DEVICE;
    if (t->addr == 0 || !sp_add_u64(t->addr, t->buffer_bytes, &end))
        return SP_PACKET_TENSOR_BAD_BUFFER;
    if (!sp_view_inside(t, NULL))
        return SP_PACKET_TENSOR_VIEW_OUTSIDE;
    return SP_PACKET_OK;
}

enum sp_packet_reason sp_packet_args_reason(const struct sp_packet_view *v,
                                            const struct sp_packet_signature *sig)
{
    if (!v || !sig || (sig->arg_count && !sig->dirs) || (v->tensor_count && !v->tensors) ||
        (v->scalar_count && !v->scalars))
        return SP_PACKET_NULL_ARGUMENT;
    if (sig->arg_count > SIMPLER_CALLABLE_MAX_ARGS)
        return SP_PACKET_BAD_SIGNATURE;
    uint32_t tensors = 0, scalars = 0;
    for (uint32_t i = 0; i < sig->arg_count; i++) {
        if (sig->dirs[i] > SIMPLER_DIR_INOUT)
            return SP_PACKET_BAD_SIGNATURE;
        if (sig->dirs[i] == SIMPLER_DIR_SCALAR)
            scalars++;
        else
            tensors++;
    }
    if (v->tensor_count != tensors)
        return SP_PACKET_TENSOR_COUNT_MISMATCH;
    if (v->scalar_count != scalars)
        return SP_PACKET_SCALAR_COUNT_MISMATCH;
    for (uint32_t i = 0; i < v->tensor_count; i++) {
        enum sp_packet_reason reason = tensor_reason(&v->tensors[i]);
        if (reason != SP_PACKET_OK)
            return reason;
    }
    return SP_PACKET_OK;
}

int sp_packet_check_args(const struct sp_packet_view *v, const struct sp_packet_signature *sig)
{
    return sp_packet_args_reason(v, sig) == SP_PACKET_OK ? 0 : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
}

const char *sp_packet_reason_name(int reason)
{
    static const char *const names[SP_PACKET_REASON_COUNT] = {
        [SP_PACKET_OK] = "SP_PACKET_OK",
        [SP_PACKET_NULL_ARGUMENT] = "SP_PACKET_NULL_ARGUMENT",
        [SP_PACKET_MISALIGNED] = "SP_PACKET_MISALIGNED",
        [SP_PACKET_TRUNCATED] = "SP_PACKET_TRUNCATED",
        [SP_PACKET_BAD_MODE] = "SP_PACKET_BAD_MODE",
        [SP_PACKET_RESERVED_NONZERO] = "SP_PACKET_RESERVED_NONZERO",
        [SP_PACKET_BAD_CALLABLE_ID] = "SP_PACKET_BAD_CALLABLE_ID",
        [SP_PACKET_BAD_COUNT] = "SP_PACKET_BAD_COUNT",
        [SP_PACKET_LENGTH_MISMATCH] = "SP_PACKET_LENGTH_MISMATCH",
        [SP_PACKET_PAYLOAD_MISMATCH] = "SP_PACKET_PAYLOAD_MISMATCH",
        [SP_PACKET_ZERO_GENERATION] = "SP_PACKET_ZERO_GENERATION",
        [SP_PACKET_BAD_SIGNATURE] = "SP_PACKET_BAD_SIGNATURE",
        [SP_PACKET_TENSOR_COUNT_MISMATCH] = "SP_PACKET_TENSOR_COUNT_MISMATCH",
        [SP_PACKET_SCALAR_COUNT_MISMATCH] = "SP_PACKET_SCALAR_COUNT_MISMATCH",
        [SP_PACKET_TENSOR_NOT_DEVICE] = "SP_PACKET_TENSOR_NOT_DEVICE",
        [SP_PACKET_TENSOR_BAD_BUFFER] = "SP_PACKET_TENSOR_BAD_BUFFER",
        [SP_PACKET_TENSOR_VIEW_OUTSIDE] = "SP_PACKET_TENSOR_VIEW_OUTSIDE",
    };
    if (reason < 0 || reason >= SP_PACKET_REASON_COUNT || names[reason] == NULL)
        return "unknown reason";
    return names[reason];
}

void sp_packet_orch_args(const struct sp_packet_view *v, struct simpler_orch_args *out)
{
    out->tensor_count = v->tensor_count;
    out->scalar_count = v->scalar_count;
    /* The view's pointer of an empty section is NULL, and memcpy from NULL
     * is undefined even for 0 bytes. */
    if (v->tensor_count)
        memcpy(out->tensors, v->tensors, (size_t)v->tensor_count * sizeof *out->tensors);
    if (v->scalar_count)
        memcpy(out->scalars, v->scalars, (size_t)v->scalar_count * sizeof *out->scalars);
}
