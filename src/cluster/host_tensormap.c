/*
 * cluster/host_tensormap.c — the cluster's host TensorMap (host_tensormap.h).
 *
 * Owns: the buffer table and the access entries. Must not touch: tasks,
 * workers, contexts; every call runs under the cluster lock its caller
 * holds.
 */
#include "cluster/host_tensormap.h"

#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/host_alloc.h"
#include "runtime/region_overlap.h"
#include "simpler/status.h"

static void staged_release(struct cl_tensormap *map);

void cl_tensormap_clear(struct cl_tensormap *map)
{
    staged_release(map);
    for (uint32_t i = 0; i < map->buffer_count; i++)
        free(map->buffers[i].entries);
    free(map->buffers);
    free(map->staged);
    memset(map, 0, sizeof *map);
}

void cl_tensormap_unreserve(struct cl_tensormap *map) { staged_release(map); }

/* ------------------------------------------------------------- accesses */

void cl_access_read_span(struct cl_access *read, const struct simpler_tensor *t, bool fresh)
{
    struct sp_view_extent e;
    sp_view_inside(t, &e); /* true: the caller checked the view */
    if (!fresh) {
        e.first_byte = e.first_byte < read->extent.first_byte ? e.first_byte
                                                              : read->extent.first_byte;
        e.last_byte = e.last_byte > read->extent.last_byte ? e.last_byte : read->extent.last_byte;
    }
    memset(read, 0, sizeof *read);
    read->region.addr = t->addr;
    read->region.buffer_bytes = t->buffer_bytes;
    read->region.start_offset = (uint64_t)e.first_byte;
    read->region.producer_task_id = SIMPLER_TASK_ID_NONE;
    read->region.version = t->version;
    read->region.ndims = 1;
    read->region.dtype = SIMPLER_DTYPE_U8;
    read->region.address_space = SIMPLER_MEM_HOST;
    read->region.shape[0] = (uint64_t)(e.last_byte - e.first_byte) + 1;
    read->region.stride[0] = 1;
    read->extent = e;
}

void cl_access_write(struct cl_access *write, const struct simpler_tensor *t)
{
    memset(write, 0, sizeof *write);
    write->region = *t;
    sp_view_inside(t, &write->extent); /* true: the caller checked the view */
    write->write = 1;
}

bool cl_access_conflict(const struct cl_access *earlier, const struct cl_access *later)
{
    if (earlier->region.addr != later->region.addr)
        return false;
    return rt_overlap_of_extents(&earlier->region, &earlier->extent, &later->region,
                                 &later->extent) != RT_OVERLAP_NONE;
}

/* -------------------------------------------------------------- buffers */

/* The index of the first buffer whose base is >= `base`. */
static uint32_t buffer_lower_bound(const struct cl_tensormap *map, uint64_t base)
{
    uint32_t lo = 0, hi = map->buffer_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (map->buffers[mid].base < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The buffer that is exactly (base, bytes), or NULL. */
static struct cl_buffer *buffer_find(const struct cl_tensormap *map, uint64_t base,
                                     uint64_t bytes)
{
    uint32_t at = buffer_lower_bound(map, base);
    if (at < map->buffer_count && map->buffers[at].base == base &&
        map->buffers[at].bytes == bytes)
        return &map->buffers[at];
    return NULL;
}

/* [a, a + an) and [b, b + bn) share a byte; both ends fit (checked views). */
static bool ranges_meet(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
    return a < b + bn && b < a + an;
}

int cl_tensormap_check_buffer(const struct cl_tensormap *map, const struct simpler_tensor *t)
{
    uint64_t end;
    if (!sp_add_u64(t->addr, t->buffer_bytes, &end))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    uint32_t at = buffer_lower_bound(map, t->addr);
    /* Only the neighbours can meet it: the known buffers are disjoint. */
    for (uint32_t i = at > 0 ? at - 1 : 0; i < map->buffer_count && i <= at; i++) {
        const struct cl_buffer *b = &map->buffers[i];
        if (b->base == t->addr && b->bytes == t->buffer_bytes)
            continue;
        if (ranges_meet(b->base, b->bytes, t->addr, t->buffer_bytes))
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
    return 0;
}

/* ------------------------------------------------------------- lookups */

static void producer_merge(struct cl_producer *producers, uint32_t *count, uint32_t task,
                           uint32_t reason)
{
    for (uint32_t i = 0; i < *count; i++) {
        if (producers[i].task == task) {
            producers[i].reasons |= reason;
            return;
        }
    }
    producers[(*count)++] = (struct cl_producer){.task = task, .reasons = reason};
}

uint64_t cl_tensormap_entries_of(const struct cl_tensormap *map,
                                 const struct cl_access *accesses, uint32_t count)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < count; i++) {
        const struct cl_buffer *b =
            buffer_find(map, accesses[i].region.addr, accesses[i].region.buffer_bytes);
        if (b)
            total += b->entry_count;
    }
    return total;
}

/* Drops the entries of `b` whose task succeeded (swap-remove: the order of
 * entries means nothing). */
static void buffer_prune(struct cl_buffer *b, cl_task_succeeded_fn succeeded, void *user)
{
    for (uint32_t i = 0; i < b->entry_count;) {
        if (succeeded(user, b->entries[i].task))
            b->entries[i] = b->entries[--b->entry_count];
        else
            i++;
    }
}

void cl_tensormap_lookup(struct cl_tensormap *map, const struct cl_access *accesses,
                         uint32_t count, cl_task_succeeded_fn succeeded, void *user,
                         struct cl_producer *producers, uint32_t *producer_count)
{
    for (uint32_t i = 0; i < count; i++) {
        const struct cl_access *a = &accesses[i];
        struct cl_buffer *b = buffer_find(map, a->region.addr, a->region.buffer_bytes);
        if (!b)
            continue;
        buffer_prune(b, succeeded, user);
        for (uint32_t k = 0; k < b->entry_count; k++) {
            const struct cl_access *e = &b->entries[k];
            if (!e->write && !a->write)
                continue; /* two reads never order anything */
            if (!cl_access_conflict(e, a))
                continue;
            uint32_t reason = !a->write ? CL_DEP_RAW : e->write ? CL_DEP_WAW : CL_DEP_WAR;
            producer_merge(producers, producer_count, e->task, reason);
        }
    }
}

/* ------------------------------------------------------------ recording */

int cl_grow(void **array, uint32_t *capacity, uint64_t need, size_t size)
{
    if (need <= *capacity)
        return 0;
    uint64_t cap = *capacity ? *capacity : 4, bytes;
    while (cap < need)
        cap *= 2;
    if (cap > UINT32_MAX || !sp_mul_u64(cap, size, &bytes) || bytes > SIZE_MAX)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    void *bigger = sp_host_malloc((size_t)bytes);
    if (!bigger)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    if (*capacity)
        memcpy(bigger, *array, (size_t)*capacity * size);
    free(*array);
    *array = bigger;
    *capacity = (uint32_t)cap;
    return 0;
}

/* Frees the buffers a reserve staged and nothing recorded. */
static void staged_release(struct cl_tensormap *map)
{
    for (uint32_t i = 0; i < map->staged_count; i++)
        free(map->staged[i].entries);
    map->staged_count = 0;
}

/* The staged buffer that is exactly (base, bytes), or NULL. */
static struct cl_buffer *staged_find(struct cl_tensormap *map, uint64_t base, uint64_t bytes)
{
    for (uint32_t i = 0; i < map->staged_count; i++)
        if (map->staged[i].base == base && map->staged[i].bytes == bytes)
            return &map->staged[i];
    return NULL;
}

/* The accesses among accesses[0..count) of the buffer (base, bytes). */
static uint32_t accesses_of(const struct cl_access *accesses, uint32_t count, uint64_t base,
                            uint64_t bytes)
{
    uint32_t same = 0;
    for (uint32_t k = 0; k < count; k++)
        same += accesses[k].region.addr == base && accesses[k].region.buffer_bytes == bytes;
    return same;
}

int cl_tensormap_reserve(struct cl_tensormap *map, const struct cl_access *accesses,
                         uint32_t count)
{
    int rc;
    staged_release(map);
    /* New buffers: at most one per access, staged until record. */
    if ((rc = cl_grow((void **)&map->buffers, &map->buffer_capacity,
                   (uint64_t)map->buffer_count + count, sizeof *map->buffers)) ||
        (rc = cl_grow((void **)&map->staged, &map->staged_capacity, count, sizeof *map->staged)))
        return rc;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t base = accesses[i].region.addr, bytes = accesses[i].region.buffer_bytes;
        uint32_t same = accesses_of(accesses, count, base, bytes);
        struct cl_buffer *b = buffer_find(map, base, bytes);
        if (!b && !staged_find(map, base, bytes)) {
            b = &map->staged[map->staged_count++];
            *b = (struct cl_buffer){.base = base, .bytes = bytes};
        }
        if (b && (rc = cl_grow((void **)&b->entries, &b->entry_capacity,
                            (uint64_t)b->entry_count + same, sizeof *b->entries))) {
            staged_release(map);
            return rc;
        }
    }
    return 0;
}

/* Inserts staged buffer `s` into the sorted table (room reserved). */
static struct cl_buffer *buffer_insert(struct cl_tensormap *map, const struct cl_buffer *s)
{
    uint32_t at = buffer_lower_bound(map, s->base);
    memmove(&map->buffers[at + 1], &map->buffers[at],
            (size_t)(map->buffer_count - at) * sizeof *map->buffers);
    map->buffers[at] = *s;
    map->buffer_count++;
    return &map->buffers[at];
}

void cl_tensormap_record(struct cl_tensormap *map, const struct cl_access *accesses,
                         uint32_t count)
{
    /* Retire what the new writes cover: any later access overlapping such
     * an entry overlaps the write, which is ordered after the entry. */
    for (uint32_t i = 0; i < count; i++) {
        const struct cl_access *w = &accesses[i];
        struct cl_buffer *b = w->write ? buffer_find(map, w->region.addr, w->region.buffer_bytes)
                                       : NULL;
        for (uint32_t k = 0; b && k < b->entry_count;) {
            const struct cl_access *e = &b->entries[k];
            if (e->task != w->task &&
                rt_overlap_of_extents(&e->region, &e->extent, &w->region, &w->extent) ==
                    RT_OVERLAP_COVERED)
                b->entries[k] = b->entries[--b->entry_count];
            else
                k++;
        }
    }
    for (uint32_t i = 0; i < map->staged_count; i++)
        buffer_insert(map, &map->staged[i]);
    map->staged_count = 0;
    /* Every buffer has room for its new entries: reserved above. */
    for (uint32_t i = 0; i < count; i++) {
        struct cl_buffer *b =
            buffer_find(map, accesses[i].region.addr, accesses[i].region.buffer_bytes);
        b->entries[b->entry_count++] = accesses[i];
    }
}
