/*
 * common/view.c — see view.h. Every sum and product here is computed with
 * the overflow builtins; none can wrap.
 */
#include "common/view.h"

static bool view_well_formed(const struct simpler_tensor *t)
{
    return t->ndims >= 1 && t->ndims <= SIMPLER_TENSOR_MAX_DIMS &&
           simpler_dtype_size(t->dtype) != 0;
}

/* [first, last] element offsets of a well-formed, non-empty view. The low
 * end only ever gains negative reaches and the high end positive ones, so
 * each is monotonic: a partial sum overflows only if the final one would. */
static int element_extent(const struct simpler_tensor *t, int64_t *first, int64_t *last)
{
    if (t->start_offset > (uint64_t)INT64_MAX)
        return SP_VIEW_OVERFLOW;
    int64_t lo = (int64_t)t->start_offset;
    int64_t hi = lo;
    for (uint32_t i = 0; i < t->ndims; i++) {
        if (t->shape[i] - 1 > (uint64_t)INT64_MAX)
            return SP_VIEW_OVERFLOW;
        int64_t reach;
        if (__builtin_mul_overflow((int64_t)(t->shape[i] - 1), t->stride[i], &reach))
            return SP_VIEW_OVERFLOW;
        if (reach < 0 ? __builtin_add_overflow(lo, reach, &lo)
                      : __builtin_add_overflow(hi, reach, &hi))
            return SP_VIEW_OVERFLOW;
    }
    *first = lo;
    *last = hi;
    return SP_VIEW_OK;
}

int sp_view_extent(const struct simpler_tensor *t, struct sp_view_extent *out)
{
    if (!view_well_formed(t))
        return SP_VIEW_MALFORMED;
    for (uint32_t i = 0; i < t->ndims; i++)
        if (t->shape[i] == 0)
            return SP_VIEW_EMPTY; /* not numel() == 0: that product can wrap */
    int64_t lo, hi;
    int rc = element_extent(t, &lo, &hi);
    if (rc)
        return rc;
    int64_t es = (int64_t)simpler_dtype_size(t->dtype);
    if (__builtin_mul_overflow(lo, es, &lo) || __builtin_mul_overflow(hi, es, &hi) ||
        __builtin_add_overflow(hi, es - 1, &hi))
        return SP_VIEW_OVERFLOW;
    out->first_byte = lo;
    out->last_byte = hi;
    return SP_VIEW_OK;
}

bool sp_view_inside(const struct simpler_tensor *t, struct sp_view_extent *out)
{
    struct sp_view_extent e;
    if (sp_view_extent(t, &e) != SP_VIEW_OK)
        return false;
    /* last_byte >= first_byte >= 0 here, so the cast keeps its value */
    if (e.first_byte < 0 || (uint64_t)e.last_byte >= t->buffer_bytes)
        return false;
    if (out)
        *out = e;
    return true;
}

int sp_view_element_offset(const struct simpler_tensor *t, const uint64_t *index,
                           uint64_t *offset)
{
    if (!view_well_formed(t) || t->start_offset > (uint64_t)INT64_MAX)
        return -1;
    int64_t at = (int64_t)t->start_offset;
    for (uint32_t i = 0; i < t->ndims; i++) {
        int64_t step;
        if (index[i] >= t->shape[i] || index[i] > (uint64_t)INT64_MAX ||
            __builtin_mul_overflow((int64_t)index[i], t->stride[i], &step) ||
            __builtin_add_overflow(at, step, &at))
            return -1;
    }
    if (at < 0)
        return -1;
    *offset = (uint64_t)at;
    return 0;
}

bool sp_view_numel(const struct simpler_tensor *t, uint64_t *numel)
{
    if (!view_well_formed(t))
        return false;
    uint64_t n = 1;
    for (uint32_t i = 0; i < t->ndims; i++)
        if (__builtin_mul_overflow(n, t->shape[i], &n))
            return false;
    *numel = n;
    return true;
}

bool sp_dense_bytes(const uint64_t *shape, uint32_t ndims, uint32_t dtype, uint64_t align,
                    uint64_t *bytes)
{
    uint64_t n = simpler_dtype_size(dtype);
    if (n == 0 || ndims < 1 || ndims > SIMPLER_TENSOR_MAX_DIMS || align == 0 ||
        (align & (align - 1)) != 0)
        return false;
    for (uint32_t i = 0; i < ndims; i++)
        if (shape[i] == 0 || __builtin_mul_overflow(n, shape[i], &n))
            return false;
    if (__builtin_add_overflow(n, align - 1, &n))
        return false;
    *bytes = n & ~(align - 1);
    return true;
}
