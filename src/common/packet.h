/*
 * common/packet.h — the kernel-mode invocation packet: the bytes a launch
 * hands the device (DESIGN.md section 7), and their encoder and checker.
 *
 * Owns: the packet's layout, its size rule and limits, the encoder the host
 * launch calls, and the bounded decoder and argument check the device side
 * runs before it trusts a byte of it. Pure functions of their arguments: no
 * allocation, no device call, no state, so host and device code both use
 * them. Must not judge residency or generations against live state (the
 * caller compares the binding with its context and slot) nor the tensors
 * against a callable on the host (the launch validates them before it
 * encodes). Internal: not part of the ABI.
 *
 * Layout (native little-endian, fixed width, no pointers):
 *   struct sp_packet_header    @0, 32 bytes
 *   struct sp_packet_binding   @32, 16 bytes
 *   tensor_count x struct simpler_tensor   @48, 128 bytes each, verbatim
 *   scalar_count x uint64_t    @48 + 128 x tensor_count
 * payload_bytes = 16 + 128 x tensor_count + 8 x scalar_count, the bytes
 * after the header; the packet is exactly 32 + payload_bytes long.
 *
 * Alignment: the encoder writes any buffer. The decoder reads the tensors
 * and scalars in place, so it requires the packet to start at a multiple of
 * SP_PACKET_ALIGN (8); simdev's launch-args copy does
 * (SIMDEV_LAUNCH_ARGS_ALIGN), and every section offset above is a multiple
 * of 8, so a packet placed at an 8-aligned offset of that copy qualifies.
 */
#ifndef SIMPLER_COMMON_PACKET_H
#define SIMPLER_COMMON_PACKET_H

#include <stddef.h>
#include <stdint.h>

#include "common/identity.h"
#include "simpler/callable.h"
#include "simpler/device_fn.h"
#include "simpler/orchestration.h"
#include "simpler/tensor.h"

struct simpler_args; /* simpler.h: the host side encodes from it */

/* The mode word is the identity the packet was encoded for, in the one
 * encoding of common/identity.h. */
#define SP_PACKET_MODE_PROGRAM ((uint32_t)SP_IDENTITY_PROGRAM) /* never valid: program mode has no packets */
#define SP_PACKET_MODE_KERNEL ((uint32_t)SP_IDENTITY_KERNEL)

struct sp_packet_header {
    uint32_t mode;          /* @0  SP_PACKET_MODE_KERNEL */
    int32_t callable_id;    /* @4  >= 0 */
    uint64_t payload_bytes; /* @8  bytes after the header */
    int32_t tensor_count;   /* @16 0..SIMPLER_ORCH_MAX_TENSORS */
    int32_t scalar_count;   /* @20 0..SIMPLER_ORCH_MAX_SCALARS */
    uint32_t reserved0;     /* @24 zero */
    uint32_t reserved1;     /* @28 zero */
};

/* Which context and which residency of the callable the packet was made
 * for: the device compares both before it runs anything, so a packet kept
 * past its context or its callable's slot (an old graph) is refused. */
struct sp_packet_binding {
    uint64_t context_generation; /* nonzero */
    uint64_t slot_generation;    /* the callable's residency-slot generation, nonzero */
};

_Static_assert(sizeof(struct sp_packet_header) == 32, "the header is 32 bytes");
_Static_assert(offsetof(struct sp_packet_header, mode) == 0, "mode @0");
_Static_assert(offsetof(struct sp_packet_header, callable_id) == 4, "callable_id @4");
_Static_assert(offsetof(struct sp_packet_header, payload_bytes) == 8, "payload_bytes @8");
_Static_assert(offsetof(struct sp_packet_header, tensor_count) == 16, "tensor_count @16");
_Static_assert(offsetof(struct sp_packet_header, scalar_count) == 20, "scalar_count @20");
_Static_assert(offsetof(struct sp_packet_header, reserved0) == 24, "reserved0 @24");
_Static_assert(offsetof(struct sp_packet_header, reserved1) == 28, "reserved1 @28");
_Static_assert(sizeof(struct sp_packet_binding) == 16, "the binding is 16 bytes");
_Static_assert(offsetof(struct sp_packet_binding, context_generation) == 0, "context @32");
_Static_assert(offsetof(struct sp_packet_binding, slot_generation) == 8, "slot @40");

#define SP_PACKET_ALIGN 8u
#define SP_PACKET_TENSORS_OFFSET (sizeof(struct sp_packet_header) + sizeof(struct sp_packet_binding))
/* The smallest packet: no tensors, no scalars. */
#define SP_PACKET_MIN_BYTES SP_PACKET_TENSORS_OFFSET
/* The largest packet the argument limits allow (8752 bytes). */
#define SP_PACKET_MAX_BYTES                                                 \
    (SP_PACKET_TENSORS_OFFSET +                                             \
     (size_t)SIMPLER_ORCH_MAX_TENSORS * sizeof(struct simpler_tensor) +    \
     (size_t)SIMPLER_ORCH_MAX_SCALARS * sizeof(uint64_t))
/* What the launch args hold besides the packet. */
#define SP_PACKET_ENVELOPE_MAX_BYTES 64u

_Static_assert(SP_PACKET_TENSORS_OFFSET == 48, "tensors @48");
_Static_assert(SP_PACKET_TENSORS_OFFSET % SP_PACKET_ALIGN == 0 &&
                   sizeof(struct simpler_tensor) % SP_PACKET_ALIGN == 0,
               "every section of an aligned packet is aligned for its contents");
_Static_assert(_Alignof(struct simpler_tensor) <= SP_PACKET_ALIGN &&
                   _Alignof(uint64_t) <= SP_PACKET_ALIGN,
               "SP_PACKET_ALIGN suffices to read tensors and scalars in place");
_Static_assert(SP_PACKET_ALIGN <= SIMDEV_LAUNCH_ARGS_ALIGN,
               "a packet at the start of the launch args is aligned");
_Static_assert(SP_PACKET_MAX_BYTES <= SIMDEV_MAX_LAUNCH_ARGS - SP_PACKET_ENVELOPE_MAX_BYTES,
               "the largest packet and its envelope fit one launch");

/*
 * Bytes of a packet of `tensor_count` tensors and `scalar_count` scalars
 * (header included), or 0 when a count is over its limit.
 */
size_t sp_packet_bytes(uint32_t tensor_count, uint32_t scalar_count);

/*
 * Encodes a packet for `callable_id` bound to (`context_generation`,
 * `slot_generation`) with `args` (borrowed for the call; its tensors are
 * copied verbatim and not judged) into `out` (borrowed; `capacity` bytes,
 * any alignment). Returns 0 and sets *written to the packet's size, or
 * INVALID_ARGUMENT — out, args or written NULL; tensors NULL with
 * tensor_count > 0 or scalars NULL with scalar_count > 0; a count over its
 * limit; capacity below the packet's size; callable_id < 0; a zero
 * generation — and then writes nothing, neither to `out` nor to *written.
 */
int sp_packet_encode(void *out, size_t capacity, int32_t callable_id,
                     uint64_t context_generation, uint64_t slot_generation,
                     const struct simpler_args *args, size_t *written);

/* What the callable expects, from its image. */
struct sp_packet_signature {
    uint32_t arg_count;   /* entries in dirs, at most SIMPLER_CALLABLE_MAX_ARGS */
    const uint8_t *dirs;  /* per argument, enum simpler_direction; NULL when arg_count is 0 */
};

/* A decoded packet: the header's and binding's values, and pointers into the
 * packet (valid while it lives; NULL when the count is 0). */
struct sp_packet_view {
    int32_t callable_id;
    uint64_t context_generation;
    uint64_t slot_generation;
    uint32_t tensor_count;
    uint32_t scalar_count;
    const struct simpler_tensor *tensors;
    const uint64_t *scalars;
};

/* Why a packet or its arguments were refused: one reason per rule, for
 * tests and diagnostics. The public checks answer INVALID_ARGUMENT for all. */
enum sp_packet_reason {
    SP_PACKET_OK = 0,
    SP_PACKET_NULL_ARGUMENT,       /* a required pointer is NULL */
    SP_PACKET_MISALIGNED,          /* the packet is not at a multiple of SP_PACKET_ALIGN */
    SP_PACKET_TRUNCATED,           /* fewer than SP_PACKET_MIN_BYTES */
    SP_PACKET_BAD_MODE,            /* mode is not SP_PACKET_MODE_KERNEL */
    SP_PACKET_RESERVED_NONZERO,    /* reserved0 or reserved1 is not 0 */
    SP_PACKET_BAD_CALLABLE_ID,     /* callable_id < 0 */
    SP_PACKET_BAD_COUNT,           /* a count is negative or over its limit */
    SP_PACKET_LENGTH_MISMATCH,     /* payload_bytes is not the bytes after the header */
    SP_PACKET_PAYLOAD_MISMATCH,    /* payload_bytes is not the size the counts imply */
    SP_PACKET_ZERO_GENERATION,     /* a binding generation is 0 */
    SP_PACKET_BAD_SIGNATURE,       /* too many entries, or an entry that is no direction */
    SP_PACKET_TENSOR_COUNT_MISMATCH, /* tensor_count is not the signature's non-SCALAR entries */
    SP_PACKET_SCALAR_COUNT_MISMATCH, /* scalar_count is not the signature's SCALAR entries */
    SP_PACKET_TENSOR_NOT_DEVICE,   /* a tensor's address space is not SIMPLER_MEM_DEVICE */
    SP_PACKET_TENSOR_BAD_BUFFER,   /* a tensor's addr is 0 or its buffer wraps the address space */
    SP_PACKET_TENSOR_VIEW_OUTSIDE, /* a view is malformed, empty, overflows or leaves its buffer */
    SP_PACKET_REASON_COUNT
};

/* A static name for `reason` ("SP_PACKET_TRUNCATED"); "unknown reason"
 * otherwise. Never NULL. */
const char *sp_packet_reason_name(int reason);

/*
 * Decodes the header and binding of the `bytes` bytes at `packet`
 * (borrowed; never read past `bytes`, and nothing past the binding is
 * read). Returns 0 and fills *out, or INVALID_ARGUMENT (*out untouched)
 * when any rule of enum sp_packet_reason up to ZERO_GENERATION is broken.
 */
int sp_packet_decode_header(const void *packet, size_t bytes, struct sp_packet_view *out);

/* sp_packet_decode_header's answer as a reason: SP_PACKET_OK (and *out
 * filled) or the first rule broken, in the enum's order. */
enum sp_packet_reason sp_packet_header_reason(const void *packet, size_t bytes,
                                              struct sp_packet_view *out);

/* The arguments of decoded packet `v` as the orchestration receives them,
 * into *out (its counts, tensors and scalars; the rest of *out is left as
 * it was). Call it after the checks. */
void sp_packet_orch_args(const struct sp_packet_view *v, struct simpler_orch_args *out);

/*
 * Checks a decoded packet's arguments against the callable's signature
 * (both borrowed; call it after comparing the binding's generations):
 * tensor_count is the number of non-SCALAR entries, scalar_count the number
 * of SCALAR ones, and every tensor is device memory with a nonzero address,
 * a buffer that does not wrap and a view inside it (sp_view_inside).
 * Returns 0 or INVALID_ARGUMENT.
 */
int sp_packet_check_args(const struct sp_packet_view *v, const struct sp_packet_signature *sig);

/* sp_packet_check_args's answer as a reason: SP_PACKET_OK or the first rule
 * broken (signature, counts, then tensor by tensor). */
enum sp_packet_reason sp_packet_args_reason(const struct sp_packet_view *v,
                                            const struct sp_packet_signature *sig);

#endif /* SIMPLER_COMMON_PACKET_H */
