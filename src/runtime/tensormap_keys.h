/*
 * runtime/tensormap_keys.h — where the TensorMap files an entry.
 *
 * Owns: the keys of the map's chains (tensormap.h, "Structure"): the
 * buffer bucket of an address, the size class and granule of a byte
 * extent, and the granule bucket of (buffer, class, granule). Pure
 * functions of the map's geometry and their arguments, shared by the
 * map's chains and its lookup (tensormap.c) and inlined there. Must not
 * touch an entry or a chain.
 */
#ifndef SIMPLER_RUNTIME_TENSORMAP_KEYS_H
#define SIMPLER_RUNTIME_TENSORMAP_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/tensormap.h"

/* Fibonacci hashing: buffer addresses are aligned, so their low bits carry
 * nothing; the multiply moves the varying middle bits to the top. */
static inline uint32_t buffer_bucket_of(const struct rt_tensormap *map, uint64_t addr)
{
    if (map->bucket_bits == 0)
        return 0; /* a shift by 64 would be undefined */
    return (uint32_t)((addr * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - map->bucket_bits));
}

/* Neighbouring granules of one buffer must land in unrelated buckets (a
 * lookup probes runs of them): a full avalanche (splitmix64's finalizer)
 * over the buffer, class and granule. */
static inline uint32_t granule_bucket_of(const struct rt_tensormap *map, uint64_t addr,
                                         uint32_t size_class, uint64_t granule)
{
    if (map->bucket_bits == 0)
        return 0;
    uint64_t x = addr + UINT64_C(0x9E3779B97F4A7C15) *
                            (granule * (RT_TM_CLASSES + 1) + size_class + 1);
    x ^= x >> 30;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x *= UINT64_C(0x94D049BB133111EB);
    x ^= x >> 31;
    return (uint32_t)(x >> (64 - map->bucket_bits));
}

/* Byte offsets as unsigned, order kept (INT64_MIN -> 0): granule numbers of
 * views that reach below the base (negative strides) stay monotonic. */
static inline uint64_t biased(int64_t byte)
{
    return (uint64_t)byte ^ (UINT64_C(1) << 63);
}

static inline uint32_t granule_bits(uint32_t size_class)
{
    return RT_TM_GRANULE_MIN_BITS + size_class;
}

static inline bool extent_known(int64_t first, int64_t last)
{
    return !(first == INT64_MIN && last == INT64_MAX);
}

/* The smallest class one of whose aligned granules holds `first..last`
 * (those bits above which the two agree), or RT_TM_WIDE. */
static inline uint32_t size_class_of(int64_t first, int64_t last)
{
    if (!extent_known(first, last))
        return RT_TM_WIDE;
    uint64_t differ = biased(first) ^ biased(last);
    uint32_t bits = differ == 0 ? 0 : 64 - (uint32_t)__builtin_clzll(differ);
    if (bits <= RT_TM_GRANULE_MIN_BITS)
        return 0;
    uint32_t k = bits - RT_TM_GRANULE_MIN_BITS;
    return k < RT_TM_CLASSES ? k : RT_TM_WIDE;
}

/* The granule bucket node `n` is filed under. */
static inline uint32_t granule_bucket_of_node(const struct rt_tensormap *map,
                                              const struct rt_tm_node *n)
{
    uint64_t granule =
        n->size_class == RT_TM_WIDE ? 0 : biased(n->first_byte) >> granule_bits(n->size_class);
    return granule_bucket_of(map, n->addr, n->size_class, granule);
}

/* Granules of class `size_class` an access [first, last] must probe: its
 * first byte's to its last byte's (an entry lies inside its granule). */
static inline void granule_range(uint32_t size_class, int64_t first, int64_t last,
                                 uint64_t *lo, uint64_t *hi)
{
    uint32_t bits = granule_bits(size_class);
    *lo = biased(first) >> bits;
    *hi = biased(last) >> bits;
}

#endif /* SIMPLER_RUNTIME_TENSORMAP_KEYS_H */
