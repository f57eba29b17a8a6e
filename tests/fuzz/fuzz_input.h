/*
 * fuzz_input.h — how the fuzz targets (fuzz_submit.c, fuzz_prepare.c,
 * fuzz_packet.c) turn their input bytes into values and descriptors, and
 * judge a descriptor independently of the code they test.
 *
 * Owns: a reader that never fails (past the end it yields zeros, so every
 * input decodes and a short one means "the defaults"), a picker of 64-bit
 * values that hits the edges where arithmetic wraps, the mutation of a
 * valid tensor descriptor field by field, and the oracles' rule for "a real
 * buffer and a view inside it" in 128-bit arithmetic. Byte 0 always
 * chooses the default, so the fuzzer starts from valid calls and mutates
 * away from them. Header-only.
 */
#ifndef SIMPLER_FUZZ_INPUT_H
#define SIMPLER_FUZZ_INPUT_H

#include "fuzz_oracle.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simpler/tensor.h"

struct fuzz_input {
    const uint8_t *data;
    size_t left;
};

static inline uint8_t fuzz_u8(struct fuzz_input *in)
{
    if (in->left == 0)
        return 0;
    in->left--;
    return *in->data++;
}

/* A 64-bit value: small (0..63), a power of two, one below a power of
 * two, just below 2^64, or any 64 bits, as the first byte says. */
static inline uint64_t fuzz_pick_u64(struct fuzz_input *in)
{
    uint8_t mode = fuzz_u8(in);
    if (mode < 64)
        return mode;
    if (mode < 128)
        return UINT64_C(1) << (mode - 64);
    if (mode < 192)
        return (UINT64_C(1) << (mode - 128)) - 1;
    if (mode < 224)
        return UINT64_MAX - (mode - 192);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | fuzz_u8(in);
    return v;
}

/* A signed value: fuzz_pick_u64, negated (modulo 2^64) when the next
 * byte is odd. */
static inline int64_t fuzz_pick_i64(struct fuzz_input *in)
{
    uint64_t v = fuzz_pick_u64(in);
    if (fuzz_u8(in) & 1)
        v = 0 - v;
    return (int64_t)v;
}

/*
 * Changes up to 7 fields of `t`, each chosen by the input: ndims (new dims
 * start as shape 1, stride 1), dtype (one or two past the valid ones
 * too), start offset, one shape or stride, the buffer's size (at most
 * `real_bytes`, the size of the memory really at t->addr, or one that
 * wraps the address space: never a lie the runtime cannot detect, which
 * would let a valid view reach memory that is not there), a NULL
 * address, the producer
 * (none, an id below or at `submitted`, a foreign ring, anything), and the
 * address space, reserved word and flags.
 */
static inline void fuzz_mutate_tensor(struct fuzz_input *in, struct simpler_tensor *t,
                                      uint64_t real_bytes, uint64_t submitted)
{
    for (uint8_t n = fuzz_u8(in) % 8; n > 0; n--) {
        uint8_t field = fuzz_u8(in);
        uint32_t d = (uint32_t)(field / 10) % SIMPLER_TENSOR_MAX_DIMS;
        switch (field % 10) {
        case 0: {
            uint8_t ndims = fuzz_u8(in) % 8; /* 0 and 6, 7 are invalid */
            for (uint32_t k = t->ndims; k < ndims && k < SIMPLER_TENSOR_MAX_DIMS; k++) {
                t->shape[k] = 1;
                t->stride[k] = 1;
            }
            t->ndims = ndims;
            break;
        }
        case 1:
            t->dtype = fuzz_u8(in) % (SIMPLER_DTYPE_COUNT + 2);
            break;
        case 2:
            t->start_offset = fuzz_pick_u64(in);
            break;
        case 3:
            t->shape[d] = fuzz_pick_u64(in);
            break;
        case 4:
            t->stride[d] = fuzz_pick_i64(in);
            break;
        case 5: {
            uint8_t how = fuzz_u8(in);
            uint64_t by = fuzz_pick_u64(in);
            if (how % 3 == 0)
                t->buffer_bytes = real_bytes - (by < real_bytes ? by : real_bytes);
            else if (how % 3 == 1)
                t->buffer_bytes = 0;
            else if (t->addr != 0)
                t->buffer_bytes = UINT64_MAX - t->addr + 1 + by % 64; /* wraps */
            break;
        }
        case 6:
            t->addr = 0;
            break;
        case 7: {
            uint8_t how = fuzz_u8(in);
            if (how % 4 == 0)
                t->producer_task_id = SIMPLER_TASK_ID_NONE;
            else if (how % 4 == 1)
                t->producer_task_id = fuzz_u8(in) % (submitted + 2);
            else if (how % 4 == 2)
                t->producer_task_id = (UINT64_C(9) << 48) | fuzz_u8(in);
            else
                t->producer_task_id = fuzz_pick_u64(in);
            break;
        }
        case 8:
            t->address_space = fuzz_u8(in) % 3;
            break;
        case 9:
            if (fuzz_u8(in) & 1)
                t->reserved = fuzz_pick_u64(in);
            else
                t->flags = fuzz_u8(in);
            break;
        }
    }
}

/* The oracles' rule for a tensor an operation names: a non-NULL address
 * and fuzz_view_inside (fuzz_oracle.h). Says nothing of the address space,
 * producer, flags or reserved word. */
static inline bool fuzz_oracle_view_ok(const struct simpler_tensor *t)
{
    return t->addr != 0 && fuzz_view_inside(t, NULL);
}

#endif /* SIMPLER_FUZZ_INPUT_H */
