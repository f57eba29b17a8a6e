/*
 * cluster/directory.c — rank 0's directory of valid copies (directory.h).
 *
 * Buffers: `by_base` holds the ids sorted by base (binary search; an
 * insertion moves the tail), `buffers` is indexed by id. Each buffer has
 * one range set per rank: disjoint, sorted, non-adjacent [lo, hi) pairs.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/directory.h"
#include "cluster/host_tensormap.h"
#include "common/host_alloc.h"
#include "simpler/status.h"

struct cl_range {
    uint64_t lo, hi;
};

struct cl_range_set {
    struct cl_range *r;
    uint32_t count, capacity;
};

struct cl_dir_buffer {
    uint64_t base, bytes;
    struct cl_range_set *sets; /* one per rank (rank 0's stays empty) */
};

struct cl_directory {
    int ranks;
    struct cl_dir_buffer *buffers; /* by id */
    uint32_t count, capacity;
    uint32_t *by_base; /* ids sorted by base */
    uint32_t by_base_capacity;
    uint64_t *epochs; /* per rank */
};

int cl_dir_create(int ranks, struct cl_directory **out)
{
    struct cl_directory *d = sp_host_calloc(1, sizeof *d);
    if (!d || !(d->epochs = sp_host_calloc((size_t)ranks, sizeof *d->epochs))) {
        free(d);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    d->ranks = ranks;
    *out = d;
    return 0;
}

void cl_dir_destroy(struct cl_directory *d)
{
    if (!d)
        return;
    for (uint32_t i = 0; i < d->count; i++) {
        for (int r = 0; r < d->ranks; r++)
            free(d->buffers[i].sets[r].r);
        free(d->buffers[i].sets);
    }
    free(d->buffers);
    free(d->by_base);
    free(d->epochs);
    free(d);
}

/* The position in by_base of the first id whose base is >= base. */
static uint32_t lower_bound(const struct cl_directory *d, uint64_t base)
{
    uint32_t lo = 0, hi = d->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (d->buffers[d->by_base[mid]].base < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool cl_dir_find(const struct cl_directory *d, uint64_t base, uint32_t *id)
{
    uint32_t at = lower_bound(d, base);
    if (at == d->count || d->buffers[d->by_base[at]].base != base)
        return false;
    *id = d->by_base[at];
    return true;
}

int cl_dir_buffer_id(struct cl_directory *d, uint64_t base, uint64_t bytes, uint32_t *id)
{
    if (cl_dir_find(d, base, id))
        return 0;
    struct cl_range_set *sets = sp_host_calloc((size_t)d->ranks, sizeof *sets);
    if (!sets || cl_grow((void **)&d->buffers, &d->capacity, (uint64_t)d->count + 1,
                         sizeof *d->buffers) ||
        cl_grow((void **)&d->by_base, &d->by_base_capacity, (uint64_t)d->count + 1,
                sizeof *d->by_base)) {
        free(sets);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    uint32_t at = lower_bound(d, base);
    memmove(&d->by_base[at + 1], &d->by_base[at], (size_t)(d->count - at) * sizeof *d->by_base);
    d->by_base[at] = d->count;
    d->buffers[d->count] = (struct cl_dir_buffer){.base = base, .bytes = bytes, .sets = sets};
    *id = d->count++;
    return 0;
}

static struct cl_range_set *set_of(const struct cl_directory *d, uint32_t id, int rank)
{
    if (id >= d->count || rank <= 0 || rank >= d->ranks)
        return NULL; /* rank 0 is home: never tracked */
    return &d->buffers[id].sets[rank];
}

bool cl_dir_valid(const struct cl_directory *d, uint32_t id, int rank, uint64_t lo, uint64_t hi)
{
    const struct cl_range_set *s = set_of(d, id, rank);
    if (!s || lo >= hi)
        return false;
    /* Ranges are disjoint and non-adjacent: one must cover it all. */
    for (uint32_t i = 0; i < s->count && s->r[i].lo <= lo; i++)
        if (hi <= s->r[i].hi)
            return true;
    return false;
}

void cl_dir_mark(struct cl_directory *d, uint32_t id, int rank, uint64_t lo, uint64_t hi)
{
    struct cl_range_set *s = set_of(d, id, rank);
    if (!s || lo >= hi)
        return;
    /* [first, last) are the ranges that touch [lo, hi): merged into one. */
    uint32_t first = 0;
    while (first < s->count && s->r[first].hi < lo)
        first++;
    uint32_t last = first;
    while (last < s->count && s->r[last].lo <= hi)
        last++;
    if (first == last) {
        if (cl_grow((void **)&s->r, &s->capacity, (uint64_t)s->count + 1, sizeof *s->r))
            return; /* forgotten, never invented */
        memmove(&s->r[first + 1], &s->r[first], (size_t)(s->count - first) * sizeof *s->r);
        s->r[first] = (struct cl_range){lo, hi};
        s->count++;
        return;
    }
    struct cl_range merged = {s->r[first].lo < lo ? s->r[first].lo : lo,
                              s->r[last - 1].hi > hi ? s->r[last - 1].hi : hi};
    s->r[first] = merged;
    memmove(&s->r[first + 1], &s->r[last], (size_t)(s->count - last) * sizeof *s->r);
    s->count -= last - first - 1;
}

void cl_dir_invalidate(struct cl_directory *d, uint32_t id, int rank, uint64_t lo, uint64_t hi)
{
    struct cl_range_set *s = set_of(d, id, rank);
    if (!s || lo >= hi)
        return;
    for (uint32_t i = 0; i < s->count;) {
        struct cl_range *r = &s->r[i];
        if (r->hi <= lo || r->lo >= hi) {
            i++;
            continue;
        }
        bool left = r->lo < lo, right = r->hi > hi;
        if (left && right) {
            /* Split in two; without room for the second half, both go. */
            if (cl_grow((void **)&s->r, &s->capacity, (uint64_t)s->count + 1, sizeof *s->r)) {
                memmove(&s->r[i], &s->r[i + 1], (size_t)(s->count - i - 1) * sizeof *s->r);
                s->count--;
                return;
            }
            r = &s->r[i];
            memmove(&s->r[i + 2], &s->r[i + 1], (size_t)(s->count - i - 1) * sizeof *s->r);
            s->r[i + 1] = (struct cl_range){hi, r->hi};
            r->hi = lo;
            s->count++;
            return;
        }
        if (left) {
            r->hi = lo;
            i++;
        } else if (right) {
            r->lo = hi;
            i++;
        } else {
            memmove(&s->r[i], &s->r[i + 1], (size_t)(s->count - i - 1) * sizeof *s->r);
            s->count--;
        }
    }
}

void cl_dir_written(struct cl_directory *d, uint32_t id, int writer, uint64_t lo, uint64_t hi)
{
    for (int r = 1; r < d->ranks; r++)
        if (r != writer)
            cl_dir_invalidate(d, id, r, lo, hi);
}

void cl_dir_forget_rank(struct cl_directory *d, int rank)
{
    if (rank <= 0 || rank >= d->ranks)
        return;
    for (uint32_t i = 0; i < d->count; i++)
        d->buffers[i].sets[rank].count = 0;
    d->epochs[rank]++;
}

uint64_t cl_dir_epoch(const struct cl_directory *d, int rank)
{
    return rank > 0 && rank < d->ranks ? d->epochs[rank] : 0;
}
