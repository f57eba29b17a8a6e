/*
 * runtime/region_overlap.c — how two views of one buffer relate
 * (region_overlap.h).
 *
 * Owns: the byte-interval test, the dense test and the exact test of
 * nested strides on coordinates. Touches nothing but the descriptors it is
 * passed; never allocates, never blocks.
 */
#include "common/view.h"
#include "runtime/region_overlap.h"
#include "simpler/tensor.h"

/*
 * The view's start decomposed into coordinates over the `n` dims of `order`
 * (outermost first), strides divided by g. Returns false when some
 * non-outermost dim of the view runs past the extent of its container
 * (coord + shape > outer stride / stride): the view then wraps, and its
 * coordinates no longer name its elements uniquely.
 */
static bool view_coords(const struct simpler_tensor *t, const uint32_t *order, uint32_t n,
                        int64_t g, uint64_t *coord)
{
    uint64_t rest = t->start_offset / (uint64_t)g;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t stride = (uint64_t)(t->stride[order[k]] / g);
        coord[k] = rest / stride;
        rest %= stride;
        if (k > 0) {
            uint64_t extent = (uint64_t)(t->stride[order[k - 1]] / t->stride[order[k]]);
            if (t->shape[order[k]] > extent - coord[k])
                return false;
        }
    }
    return true;
}

/*
 * Exact test for two views of one dtype and ndims. Only the dims where
 * either view is longer than 1 matter (a 1-long dim adds nothing to an
 * element's offset), and those must have the same, positive strides in
 * both views; sorted outermost first (a permutation of dims changes no
 * element set), each must divide the next outer one. Then every element
 * offset is start mod g plus a multiple of g (g = innermost stride), and,
 * when neither view wraps, the offset's mixed-radix digits (radix = ratio
 * of consecutive strides) are the element's coordinates: two elements are
 * equal iff all their coordinates are, so the views' element sets relate
 * exactly as their coordinate boxes do. Returns false when it does not
 * apply.
 */
static bool nested_overlap(const struct simpler_tensor *recorded,
                           const struct simpler_tensor *access, enum rt_overlap *out)
{
    if (access->ndims != recorded->ndims || access->dtype != recorded->dtype)
        return false;

    uint32_t order[SIMPLER_TENSOR_MAX_DIMS], n = 0;
    for (uint32_t i = 0; i < recorded->ndims; i++) {
        if (recorded->shape[i] == 1 && access->shape[i] == 1)
            continue;
        if (recorded->stride[i] != access->stride[i] || recorded->stride[i] <= 0)
            return false;
        uint32_t k = n++;
        for (; k > 0 && recorded->stride[order[k - 1]] < recorded->stride[i]; k--)
            order[k] = order[k - 1];
        order[k] = i;
    }
    if (n == 0) { /* one element each */
        bool same = recorded->start_offset == access->start_offset;
        *out = same ? RT_OVERLAP_COVERED : RT_OVERLAP_NONE;
        return true;
    }
    for (uint32_t k = 0; k + 1 < n; k++)
        if (recorded->stride[order[k]] % recorded->stride[order[k + 1]] != 0)
            return false;

    int64_t g = recorded->stride[order[n - 1]];
    if (recorded->start_offset % (uint64_t)g != access->start_offset % (uint64_t)g) {
        *out = RT_OVERLAP_NONE; /* interleaved lattices: no common element */
        return true;
    }
    uint64_t rc[SIMPLER_TENSOR_MAX_DIMS], ac[SIMPLER_TENSOR_MAX_DIMS];
    if (!view_coords(recorded, order, n, g, rc) || !view_coords(access, order, n, g, ac))
        return false;

    /* No overflow below: both extents fit in int64 (checked by the caller). */
    bool covered = true;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t r_end = rc[k] + recorded->shape[order[k]];
        uint64_t a_end = ac[k] + access->shape[order[k]];
        if (r_end <= ac[k] || a_end <= rc[k]) {
            *out = RT_OVERLAP_NONE;
            return true;
        }
        if (ac[k] > rc[k] || a_end < r_end)
            covered = false;
    }
    *out = covered ? RT_OVERLAP_COVERED : RT_OVERLAP_OTHER;
    return true;
}

enum rt_overlap rt_overlap_of_extents(const struct simpler_tensor *recorded,
                                      const struct sp_view_extent *r,
                                      const struct simpler_tensor *access,
                                      const struct sp_view_extent *a)
{
    if (rt_views_identical(recorded, access))
        return RT_OVERLAP_COVERED;
    if (r->last_byte < a->first_byte || a->last_byte < r->first_byte)
        return RT_OVERLAP_NONE;
    /* Two dense views touch every byte of their intervals: the intervals
     * decide (cells and rows of one buffer; no coordinates to work out). */
    bool access_dense = simpler_tensor_is_contiguous(access);
    if (access_dense && simpler_tensor_is_contiguous(recorded))
        return a->first_byte <= r->first_byte && r->last_byte <= a->last_byte
                   ? RT_OVERLAP_COVERED
                   : RT_OVERLAP_OTHER;

    enum rt_overlap exact;
    if (nested_overlap(recorded, access, &exact))
        return exact;

    /* A contiguous access holds every byte of its interval, so it holds
     * every byte of anything inside it, whatever that thing's dtype. */
    if (access_dense && a->first_byte <= r->first_byte && r->last_byte <= a->last_byte)
        return RT_OVERLAP_COVERED;
    return RT_OVERLAP_OTHER;
}

enum rt_overlap rt_region_overlap(const struct simpler_tensor *recorded,
                                  const struct simpler_tensor *access)
{
    /* A reused buffer holds new data under the same bytes: never prove
     * anything across versions. */
    if (recorded->version != access->version)
        return RT_OVERLAP_OTHER;
    struct sp_view_extent r, a;
    int r_known = sp_view_extent(recorded, &r), a_known = sp_view_extent(access, &a);
    if (r_known == SP_VIEW_MALFORMED || a_known == SP_VIEW_MALFORMED)
        return RT_OVERLAP_OTHER;
    if (r_known == SP_VIEW_EMPTY || a_known == SP_VIEW_EMPTY)
        return RT_OVERLAP_NONE; /* an empty view has no byte */
    if (r_known == SP_VIEW_OK && a_known == SP_VIEW_OK)
        return rt_overlap_of_extents(recorded, &r, access, &a);
    if (rt_views_identical(recorded, access))
        return RT_OVERLAP_COVERED;
    return RT_OVERLAP_OTHER; /* an extent that overflows: nothing is known */
}
