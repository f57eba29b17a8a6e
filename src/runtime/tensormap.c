/*
 * runtime/tensormap.c — region overlap classification and the TensorMap.
 *
 * Owns: the map's layout inside the caller's block, its chains and free
 * list, and the overlap rule. Touches nothing outside the block it is given
 * and the descriptors it is passed; never allocates, never blocks. Used by
 * the orchestrator thread only (no atomics).
 *
 * Safety property the orchestrator relies on: NONE and COVERED are only
 * returned when proven; a wrong NONE loses a dependency edge, a wrong
 * COVERED retires an entry whose producer still writes bytes a later task
 * reads. Everything unproven is OTHER.
 */
#include "runtime/tensormap.h"

#include <string.h>

/* ---- overlap ----------------------------------------------------------- */

/* True when the descriptor is one this file can reason about at all. */
static bool view_is_valid(const struct simpler_tensor *t)
{
    return t->ndims >= 1 && t->ndims <= SIMPLER_TENSOR_MAX_DIMS &&
           simpler_dtype_size(t->dtype) != 0;
}

/* True when some dim is 0 long. (Not numel() == 0: the product can wrap.) */
static bool view_is_empty(const struct simpler_tensor *t)
{
    for (uint32_t i = 0; i < t->ndims; i++)
        if (t->shape[i] == 0)
            return true;
    return false;
}

/*
 * [first, last] element offsets (from the buffer base) the view can touch,
 * whatever the signs of its strides. Returns false when a value does not fit
 * in int64: the caller then knows nothing about the view's extent.
 * Precondition: view_is_valid and not view_is_empty.
 */
static bool view_element_extent(const struct simpler_tensor *t, int64_t *first, int64_t *last)
{
    if (t->start_offset > (uint64_t)INT64_MAX)
        return false;
    int64_t lo = (int64_t)t->start_offset;
    int64_t hi = lo;
    for (uint32_t i = 0; i < t->ndims; i++) {
        if (t->shape[i] - 1 > (uint64_t)INT64_MAX)
            return false;
        int64_t span;
        if (__builtin_mul_overflow((int64_t)(t->shape[i] - 1), t->stride[i], &span))
            return false;
        if (span < 0 ? __builtin_add_overflow(lo, span, &lo)
                     : __builtin_add_overflow(hi, span, &hi))
            return false;
    }
    *first = lo;
    *last = hi;
    return true;
}

/* [first, last] byte offsets (from the buffer base) of the view; false on
 * overflow, as view_element_extent. */
static bool view_byte_extent(const struct simpler_tensor *t, int64_t *first, int64_t *last)
{
    int64_t es = (int64_t)simpler_dtype_size(t->dtype);
    int64_t lo, hi;
    if (!view_element_extent(t, &lo, &hi))
        return false;
    if (__builtin_mul_overflow(lo, es, &lo) || __builtin_mul_overflow(hi, es, &hi) ||
        __builtin_add_overflow(hi, es - 1, &hi))
        return false;
    *first = lo;
    *last = hi;
    return true;
}

/* Same dtype, start, shape and strides: the same set of elements. */
static bool views_identical(const struct simpler_tensor *a, const struct simpler_tensor *b)
{
    if (a->dtype != b->dtype || a->ndims != b->ndims || a->start_offset != b->start_offset)
        return false;
    for (uint32_t i = 0; i < a->ndims; i++)
        if (a->shape[i] != b->shape[i] || a->stride[i] != b->stride[i])
            return false;
    return true;
}

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

enum rt_overlap rt_region_overlap(const struct simpler_tensor *recorded,
                                  const struct simpler_tensor *access)
{
    /* A reused buffer holds new data under the same bytes: never prove
     * anything across versions. */
    if (recorded->version != access->version)
        return RT_OVERLAP_OTHER;
    if (!view_is_valid(recorded) || !view_is_valid(access))
        return RT_OVERLAP_OTHER;
    if (view_is_empty(recorded) || view_is_empty(access))
        return RT_OVERLAP_NONE; /* an empty view has no byte */
    if (views_identical(recorded, access))
        return RT_OVERLAP_COVERED;

    int64_t r_first, r_last, a_first, a_last;
    if (!view_byte_extent(recorded, &r_first, &r_last) ||
        !view_byte_extent(access, &a_first, &a_last))
        return RT_OVERLAP_OTHER;
    if (r_last < a_first || a_last < r_first)
        return RT_OVERLAP_NONE;

    enum rt_overlap exact;
    if (nested_overlap(recorded, access, &exact))
        return exact;

    /* A contiguous access holds every byte of its interval, so it holds
     * every byte of anything inside it, whatever that thing's dtype. */
    if (simpler_tensor_is_contiguous(access) && a_first <= r_first && r_last <= a_last)
        return RT_OVERLAP_COVERED;
    return RT_OVERLAP_OTHER;
}

/* ---- the map ----------------------------------------------------------- */

#define TM_ENTRY_ALIGN _Alignof(struct rt_tm_entry)

static bool sizes_valid(uint32_t bucket_count, uint32_t entry_count)
{
    bool power_of_two = bucket_count != 0 && (bucket_count & (bucket_count - 1)) == 0;
    return power_of_two && entry_count != 0 && entry_count < RT_TM_NIL;
}

/* Bytes of the heads array, padded so the entries that follow are aligned. */
static size_t heads_bytes(uint32_t bucket_count)
{
    size_t raw = (size_t)bucket_count * 2 * sizeof(uint32_t);
    return (raw + TM_ENTRY_ALIGN - 1) & ~(size_t)(TM_ENTRY_ALIGN - 1);
}

size_t rt_tensormap_bytes(uint32_t bucket_count, uint32_t entry_count)
{
    if (!sizes_valid(bucket_count, entry_count))
        return 0;
    size_t heads = heads_bytes(bucket_count);
    if ((SIZE_MAX - heads) / sizeof(struct rt_tm_entry) < entry_count)
        return 0; /* only reachable where size_t is 32 bits */
    return heads + (size_t)entry_count * sizeof(struct rt_tm_entry);
}

int rt_tensormap_init(struct rt_tensormap *map, void *mem, uint32_t bucket_count,
                      uint32_t entry_count)
{
    if (!map || !mem || (uintptr_t)mem % TM_ENTRY_ALIGN != 0 ||
        rt_tensormap_bytes(bucket_count, entry_count) == 0)
        return -1;
    uint32_t bits = 0;
    while ((UINT32_C(1) << bits) < bucket_count)
        bits++;
    map->bucket_count = bucket_count;
    map->bucket_bits = bits;
    map->capacity = entry_count;
    map->heads = mem;
    map->entries = (struct rt_tm_entry *)((char *)mem + heads_bytes(bucket_count));
    rt_tensormap_reset(map);
    return 0;
}

void rt_tensormap_reset(struct rt_tensormap *map)
{
    for (uint32_t i = 0; i < 2 * map->bucket_count; i++)
        map->heads[i] = RT_TM_NIL;
    /* O(buckets), not O(entries): entries [fresh, capacity) are free and
     * have never been used since the reset. */
    map->free_head = RT_TM_NIL;
    map->fresh = 0;
    map->live = 0;
    map->next_seq = 0;
}

/* Fibonacci hashing: buffer addresses are aligned, so their low bits carry
 * nothing; the multiply moves the varying middle bits to the top. */
static uint32_t bucket_of(const struct rt_tensormap *map, uint64_t addr)
{
    if (map->bucket_bits == 0)
        return 0; /* a shift by 64 would be undefined */
    return (uint32_t)((addr * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - map->bucket_bits));
}

static uint32_t *chain_head(struct rt_tensormap *map, uint32_t bucket, enum rt_access kind)
{
    return &map->heads[2 * bucket + (uint32_t)kind];
}

/* Unlinks the entry `*link` names (link is the head or the previous entry's
 * next) and puts it on the free list; *link then names its successor. */
static void unlink_and_free(struct rt_tensormap *map, uint32_t *link)
{
    uint32_t index = *link;
    struct rt_tm_entry *entry = &map->entries[index];
    *link = entry->next;
    entry->next = map->free_head;
    map->free_head = index;
    map->live--;
}

static bool is_retired(rt_tm_retired_fn retired, void *ctx, uint64_t producer_id)
{
    return retired && retired(ctx, producer_id);
}

static void extent_of(const struct simpler_tensor *t, int64_t *first, int64_t *last)
{
    if (!view_is_valid(t) || view_is_empty(t) || !view_byte_extent(t, first, last)) {
        *first = INT64_MIN;
        *last = INT64_MAX;
    }
}

/* One chain of rt_tensormap_lookup. Stops at entries older than *cut_seq;
 * with find_cut, sets *cut_seq at the newest live entry that covers the
 * whole access (everything older that overlaps the access is ordered
 * before that entry's task) and stops there. */
static int lookup_chain(struct rt_tensormap *map, uint32_t *link,
                        const struct simpler_tensor *access, int64_t a_first, int64_t a_last,
                        enum rt_access kind, rt_tm_retired_fn retired, void *retired_ctx,
                        rt_tm_hit_fn hit, void *hit_ctx, uint64_t *cut_seq, bool find_cut)
{
    while (*link != RT_TM_NIL) {
        struct rt_tm_entry *entry = &map->entries[*link];
        if (entry->seq < *cut_seq)
            return 0;
        if (entry->region.addr != access->addr) {
            link = &entry->next; /* another buffer hashed to this bucket */
            continue;
        }
        if (is_retired(retired, retired_ctx, entry->producer_id)) {
            unlink_and_free(map, link);
            continue;
        }
        if ((entry->last_byte < a_first || a_last < entry->first_byte) &&
            entry->region.version == access->version) {
            link = &entry->next;
            continue;
        }
        enum rt_overlap overlap = rt_region_overlap(&entry->region, access);
        if (overlap == RT_OVERLAP_NONE) {
            link = &entry->next;
            continue;
        }
        int rc = hit(hit_ctx, entry->producer_id, entry->producer, (enum rt_access)entry->kind);
        if (rc != 0)
            return rc; /* entry kept: a retried lookup must see it again */
        bool cut = find_cut && rt_region_overlap(access, &entry->region) == RT_OVERLAP_COVERED;
        uint64_t seq = entry->seq;
        if (kind == RT_ACCESS_WRITE && overlap == RT_OVERLAP_COVERED)
            unlink_and_free(map, link);
        else
            link = &entry->next;
        if (cut) {
            *cut_seq = seq;
            return 0;
        }
    }
    return 0;
}

int rt_tensormap_lookup(struct rt_tensormap *map, const struct simpler_tensor *access,
                        enum rt_access kind, rt_tm_retired_fn retired, void *retired_ctx,
                        rt_tm_hit_fn hit, void *hit_ctx)
{
    uint32_t bucket = bucket_of(map, access->addr);
    int64_t a_first, a_last;
    extent_of(access, &a_first, &a_last);
    uint64_t cut_seq = 0;
    int rc = lookup_chain(map, chain_head(map, bucket, RT_ACCESS_WRITE), access, a_first, a_last,
                          kind, retired, retired_ctx, hit, hit_ctx, &cut_seq, true);
    if (rc != 0 || kind != RT_ACCESS_WRITE)
        return rc;
    return lookup_chain(map, chain_head(map, bucket, RT_ACCESS_READ), access, a_first, a_last,
                        kind, retired, retired_ctx, hit, hit_ctx, &cut_seq, false);
}

int rt_tensormap_insert(struct rt_tensormap *map, const struct simpler_tensor *region,
                        enum rt_access kind, uint64_t producer_id, void *producer)
{
    if (kind != RT_ACCESS_READ && kind != RT_ACCESS_WRITE)
        return -1;
    uint32_t index;
    struct rt_tm_entry *entry;
    if (map->free_head != RT_TM_NIL) {
        index = map->free_head;
        entry = &map->entries[index];
        map->free_head = entry->next;
    } else if (map->fresh < map->capacity) {
        index = map->fresh++;
        entry = &map->entries[index];
    } else {
        return -1;
    }

    uint32_t *head = chain_head(map, bucket_of(map, region->addr), kind);
    entry->region = *region;
    entry->producer_id = producer_id;
    entry->producer = producer;
    entry->kind = (uint32_t)kind;
    entry->seq = ++map->next_seq;
    extent_of(region, &entry->first_byte, &entry->last_byte);
    entry->next = *head;
    *head = index;
    map->live++;
    return 0;
}

uint32_t rt_tensormap_reclaim(struct rt_tensormap *map, rt_tm_retired_fn retired,
                              void *retired_ctx)
{
    uint32_t freed = 0;
    for (uint32_t i = 0; i < 2 * map->bucket_count; i++) {
        uint32_t *link = &map->heads[i];
        while (*link != RT_TM_NIL) {
            if (is_retired(retired, retired_ctx, map->entries[*link].producer_id)) {
                unlink_and_free(map, link);
                freed++;
            } else {
                link = &map->entries[*link].next;
            }
        }
    }
    return freed;
}
