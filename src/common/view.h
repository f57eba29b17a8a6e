/*
 * common/view.h — which bytes a tensor view touches, and the sizes derived
 * from user input, computed once and overflow-checked.
 *
 * Owns: the byte extent of a view (the one computation behind prepare's
 * descriptor check, submit's view check, element access and the TensorMap),
 * "the view lies inside its buffer", the element offset of an index, and
 * checked arithmetic for the byte counts of runtime-allocated outputs.
 * Pure functions of their arguments: no allocation, no device, no state,
 * so host and device code both call them. Internal: not part of the ABI.
 *
 * Offsets are signed 64-bit byte offsets from the buffer's base (a view with
 * negative strides can reach below it). Everything is computed without
 * wrapping: a value that does not fit is SP_VIEW_OVERFLOW, never a wrong
 * number, so a caller can treat any nonzero answer as "nothing is known".
 */
#ifndef SIMPLER_COMMON_VIEW_H
#define SIMPLER_COMMON_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "common/checked.h"
#include "simpler/tensor.h"

enum sp_view_status {
    SP_VIEW_OK = 0,
    SP_VIEW_MALFORMED = -1, /* ndims outside 1..SIMPLER_TENSOR_MAX_DIMS, or an invalid dtype */
    SP_VIEW_EMPTY = -2,     /* some dimension is 0 long: the view touches no byte */
    SP_VIEW_OVERFLOW = -3,  /* an offset of the view does not fit in int64 */
};

/* The bytes a view can touch: every byte at offset first_byte..last_byte
 * (inclusive) from the buffer's base may be one of its elements', and no
 * other byte is. */
struct sp_view_extent {
    int64_t first_byte;
    int64_t last_byte;
};

/*
 * The byte extent of `t` (borrowed), whatever the signs of its strides:
 * start_offset plus, per dimension, (shape - 1) x stride added to the low
 * end when negative and to the high end otherwise, times the element size.
 * Returns SP_VIEW_OK and writes *out, or the first of MALFORMED, EMPTY,
 * OVERFLOW that applies (*out untouched). Stride-0 (broadcast) dimensions
 * add nothing.
 */
int sp_view_extent(const struct simpler_tensor *t, struct sp_view_extent *out);

/*
 * True when `t` is well formed, not empty, and every byte it can touch lies
 * in [0, t->buffer_bytes) of its buffer; then *out (may be NULL) holds its
 * extent. This is the rule "a view lies inside its buffer" wherever a view
 * is checked. It says nothing of t->addr.
 */
bool sp_view_inside(const struct simpler_tensor *t, struct sp_view_extent *out);

/*
 * The element offset (in elements, from the buffer's base) of the element
 * at `index` (t->ndims indices, each below its shape) of a well-formed view.
 * Returns 0 and writes *offset, or -1 for an index out of its dimension's
 * range or an offset that is negative or does not fit in int64.
 */
int sp_view_element_offset(const struct simpler_tensor *t, const uint64_t *index,
                           uint64_t *offset);

/* The product of the view's shape in *numel; false when it does not fit in
 * 64 bits (or the view is malformed). */
bool sp_view_numel(const struct simpler_tensor *t, uint64_t *numel);

/*
 * Bytes of a dense (contiguous) tensor of `ndims` dims of `shape` and
 * `dtype`, rounded up to a multiple of `align` (a power of two; 1 for
 * none). False for ndims outside 1..SIMPLER_TENSOR_MAX_DIMS, an invalid
 * dtype, a zero dimension, or a count that does not fit in 64 bits.
 */
bool sp_dense_bytes(const uint64_t *shape, uint32_t ndims, uint32_t dtype, uint64_t align,
                    uint64_t *bytes);

#endif /* SIMPLER_COMMON_VIEW_H */
