/*
 * runtime/region_overlap.h — how two views of one buffer relate.
 *
 * Owns: the overlap rule of strided views, which the TensorMap asks of
 * every entry its lookups visit. Pure: reads the two descriptors, nothing
 * else.
 *
 * Safety property the orchestrator relies on: NONE and COVERED are only
 * returned when proven; a wrong NONE loses a dependency edge, a wrong
 * COVERED retires an entry whose producer still writes bytes a later task
 * reads. Everything unproven is OTHER.
 */
#ifndef SIMPLER_RUNTIME_REGION_OVERLAP_H
#define SIMPLER_RUNTIME_REGION_OVERLAP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/view.h"
#include "simpler/tensor.h"

/*
 * How the region of `access` relates to the region of `recorded` (both views
 * of the same buffer address; the caller compares addr):
 *  NONE    — provably no common byte;
 *  COVERED — `access` contains every element of `recorded`;
 *  OTHER   — they may overlap (conservative: anything not proven above).
 * Method: byte-interval test on [first, last] byte of each view (disjoint =
 * NONE); then, when both views have the same dtype, ndims and strides, the
 * strides nest (each stride a multiple of the next inner one times its
 * extent) and the versions are equal, a per-dimension test on coordinates
 * decomposed from the start offsets (an innermost stride g > 1 is handled by
 * comparing the start offsets modulo g). Different versions of a buffer are
 * OTHER whatever the regions.
 */
enum rt_overlap { RT_OVERLAP_NONE = 0, RT_OVERLAP_COVERED = 1, RT_OVERLAP_OTHER = 2 };
enum rt_overlap rt_region_overlap(const struct simpler_tensor *recorded,
                                  const struct simpler_tensor *access);

/* rt_region_overlap of two views of one version whose byte extents are
 * known (sp_view_extent returned SP_VIEW_OK for both: r and a). */
enum rt_overlap rt_overlap_of_extents(const struct simpler_tensor *recorded,
                                      const struct sp_view_extent *r,
                                      const struct simpler_tensor *access,
                                      const struct sp_view_extent *a);

/* Same dtype, start, shape and strides: the same set of elements. */
static inline bool rt_views_identical(const struct simpler_tensor *a,
                                      const struct simpler_tensor *b)
{
    if (a->dtype != b->dtype || a->ndims != b->ndims || a->start_offset != b->start_offset)
        return false;
    for (uint32_t i = 0; i < a->ndims; i++)
        if (a->shape[i] != b->shape[i] || a->stride[i] != b->stride[i])
            return false;
    return true;
}

#endif /* SIMPLER_RUNTIME_REGION_OVERLAP_H */
