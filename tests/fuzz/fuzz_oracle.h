/*
 * fuzz_oracle.h — what the runtime fuzz targets (fuzz_submit.c,
 * fuzz_prepare.c) share besides decoding: the failure report, the view
 * rule recomputed independently of src/common/view.c, and the kernel body
 * that makes ASan see every accepted view's extremes.
 *
 * Owns: FUZZ_CHECK (report and abort(): libFuzzer saves the input), the
 * oracle's view rule in 128-bit arithmetic (no sum or product can wrap,
 * so it is a different computation from the runtime's overflow-checked
 * int64 one, and agreement is evidence), and fuzz_touch_corners.
 * Header-only.
 */
#ifndef SIMPLER_FUZZ_ORACLE_H
#define SIMPLER_FUZZ_ORACLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "simpler/tensor.h"

typedef __int128 fuzz_i128;
typedef unsigned __int128 fuzz_u128;

/* The libFuzzer entry points each target defines. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: violated: %s\n", __FILE__, __LINE__, #cond);            \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

/*
 * The oracle's view rule: a buffer that does not wrap the address space
 * (the address itself is the caller's rule); ndims 1..5, a valid dtype, no
 * zero dimension, every shape - 1 below 2^63 (the runtime multiplies it as
 * an int64); every byte the view can touch, start + negative reaches to
 * start + positive reaches (+ the element's size - 1), inside
 * [0, buffer_bytes) and at most INT64_MAX. *numel (may be NULL) is the
 * element count, saturated at 2^64.
 */
static inline bool fuzz_view_inside(const struct simpler_tensor *t, fuzz_u128 *numel)
{
    if ((fuzz_u128)t->addr + t->buffer_bytes > UINT64_MAX)
        return false;
    if (t->ndims < 1 || t->ndims > SIMPLER_TENSOR_MAX_DIMS || t->dtype >= SIMPLER_DTYPE_COUNT)
        return false;
    fuzz_u128 n = 1;
    fuzz_i128 lo = (fuzz_i128)t->start_offset, hi = lo;
    for (uint32_t d = 0; d < t->ndims; d++) {
        if (t->shape[d] == 0 || t->shape[d] - 1 > (uint64_t)INT64_MAX)
            return false;
        /* lo only falls and hi only rises, and the answer is false once
         * lo < 0 or hi > INT64_MAX: stopping there keeps five reaches of up
         * to 2^126 each from overflowing even 128 bits. */
        if (lo < 0 || hi > INT64_MAX)
            return false;
        n *= t->shape[d];
        if (n > UINT64_MAX)
            n = (fuzz_u128)UINT64_MAX + 1;
        fuzz_i128 reach = (fuzz_i128)(t->shape[d] - 1) * t->stride[d];
        if (reach < 0)
            lo += reach;
        else
            hi += reach;
    }
    if (lo < 0 || hi > INT64_MAX)
        return false;
    fuzz_i128 es = (fuzz_i128)simpler_dtype_size(t->dtype);
    fuzz_i128 first = lo * es, last = hi * es + es - 1;
    if (first < 0 || last >= (fuzz_i128)t->buffer_bytes || last > INT64_MAX)
        return false;
    if (numel)
        *numel = n;
    return true;
}

/* Which of the `count` buffers starts at `addr`, or -1. */
static inline int fuzz_buffer_of(uint64_t addr, uint8_t *const *buffers, int count)
{
    for (int b = 0; b < count; b++)
        if (addr == (uint64_t)(uintptr_t)buffers[b])
            return b;
    return -1;
}

/* Reads every corner of `t`'s view (the extremes of its offsets are at
 * corners) and, when `write`, writes each back unchanged. */
static inline void fuzz_touch_corners(const struct simpler_tensor *t, bool write)
{
    size_t es = simpler_dtype_size(t->dtype);
    for (uint32_t c = 0; c < (1u << t->ndims); c++) {
        uint64_t index[SIMPLER_TENSOR_MAX_DIMS];
        for (uint32_t d = 0; d < t->ndims; d++)
            index[d] = (c >> d) & 1 ? t->shape[d] - 1 : 0;
        volatile uint8_t *p =
            (uint8_t *)(uintptr_t)t->addr + simpler_tensor_offset_of(t, index) * es;
        for (size_t b = 0; b < es; b++) {
            uint8_t v = p[b];
            if (write)
                p[b] = v;
        }
    }
}

#endif /* SIMPLER_FUZZ_ORACLE_H */
