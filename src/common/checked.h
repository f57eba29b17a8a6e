/*
 * common/checked.h — overflow-checked arithmetic on sizes and offsets that
 * come from user input (descriptors, shapes, image and ELF headers).
 *
 * Owns: the few primitives every such computation goes through, so none of
 * them can wrap: a sum or product that does not fit is reported, never
 * truncated. Header-only and pure: host and device code both use it.
 * Internal: not part of the ABI.
 */
#ifndef SIMPLER_COMMON_CHECKED_H
#define SIMPLER_COMMON_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

/* a + b in *sum; false (and *sum untouched) when it does not fit. */
static inline bool sp_add_u64(uint64_t a, uint64_t b, uint64_t *sum)
{
    uint64_t s;
    if (__builtin_add_overflow(a, b, &s))
        return false;
    *sum = s;
    return true;
}

/* a * b in *product; false (and *product untouched) when it does not fit. */
static inline bool sp_mul_u64(uint64_t a, uint64_t b, uint64_t *product)
{
    uint64_t p;
    if (__builtin_mul_overflow(a, b, &p))
        return false;
    *product = p;
    return true;
}

/* True when [offset, offset + len) lies inside [0, total); offset + len is
 * never computed, so nothing can wrap. */
static inline bool sp_range_inside(uint64_t offset, uint64_t len, uint64_t total)
{
    return offset <= total && len <= total - offset;
}

#endif /* SIMPLER_COMMON_CHECKED_H */
