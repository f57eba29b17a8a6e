/*
 * runtime/tensormap.c — the TensorMap.
 *
 * Owns: the map's layout inside the caller's block, its buffer and granule
 * chains (tensormap.h describes the structure and its cost model; the
 * chains' keys are tensormap_keys.h's), the newest-first merge of the
 * chains a lookup probes, and the free list. The overlap rule it applies
 * to each entry a lookup visits is region_overlap.c's. Touches nothing
 * outside the block it is given and the descriptors it is passed; never
 * allocates, never blocks. Used by the orchestrator thread only (no
 * atomics).
 */
#include <string.h>

#include "common/view.h"
#include "runtime/invariants.h"
#include "runtime/region_overlap.h"
#include "runtime/tensormap.h"
#include "runtime/tensormap_keys.h"

/* ---- the map: layout --------------------------------------------------- */

/* Nodes start on a cache line, whatever the 8-byte aligned block. */
#define TM_LINE 64

/* node.kind of an entry on the free list (rt_tensormap_forget tells a
 * freed entry from a live one by it). */
#define TM_KIND_FREE 0xFFu

_Static_assert(sizeof(struct rt_tm_node) == TM_LINE, "a node is one cache line");
_Static_assert(sizeof(struct rt_tm_bucket) == TM_LINE, "a bucket is one cache line");
_Static_assert(_Alignof(struct rt_tm_bucket) <= 8 && _Alignof(struct rt_tm_entry) <= 8,
               "the block is only 8-byte aligned");
_Static_assert(RT_TM_WIDE < 64, "class_mask has a bit per class");

static bool sizes_valid(uint32_t bucket_count, uint32_t entry_count)
{
    bool power_of_two = bucket_count != 0 && (bucket_count & (bucket_count - 1)) == 0;
    return power_of_two && entry_count != 0 && entry_count < RT_TM_NIL;
}

/* Bytes of the buckets (8-byte multiples). */
static uint64_t buckets_bytes(uint32_t bucket_count)
{
    return (uint64_t)bucket_count * sizeof(struct rt_tm_bucket);
}

size_t rt_tensormap_bytes(uint32_t bucket_count, uint32_t entry_count)
{
    if (!sizes_valid(bucket_count, entry_count))
        return 0;
    /* bucket_count, entry_count < 2^32: no overflow in 64 bits */
    uint64_t bytes = buckets_bytes(bucket_count) + (TM_LINE - 8) +
                     (uint64_t)entry_count * (sizeof(struct rt_tm_node) + sizeof(struct rt_tm_entry));
    if (bytes > SIZE_MAX)
        return 0; /* only reachable where size_t is 32 bits */
    return (size_t)bytes;
}

static void bucket_clear_versions(struct rt_tm_bucket *b)
{
    b->version_min = UINT32_MAX;
    b->version_max = 0;
    b->version_sum = 0;
}

/* Empties bucket `b` and makes it valid in `epoch`. */
static void bucket_clear(struct rt_tm_bucket *b, uint32_t epoch)
{
    b->head[RT_ACCESS_READ] = b->head[RT_ACCESS_WRITE] = RT_TM_NIL;
    b->count[RT_ACCESS_READ] = b->count[RT_ACCESS_WRITE] = 0;
    b->class_mask[RT_ACCESS_READ] = b->class_mask[RT_ACCESS_WRITE] = 0;
    bucket_clear_versions(b);
    b->granule_head[RT_ACCESS_READ] = b->granule_head[RT_ACCESS_WRITE] = RT_TM_NIL;
    b->epoch = epoch;
    b->reserved = 0;
}

/* The counts and the free list of an empty map; the buckets are the
 * caller's. O(1): entries [fresh, capacity) are free and have never been
 * used since the reset. */
static void empty_entries(struct rt_tensormap *map)
{
    map->free_head = RT_TM_NIL;
    map->fresh = 0;
    map->live = 0;
    map->next_seq = 0;
    memset(map->live_by_kind, 0, sizeof map->live_by_kind);
    memset(map->class_live, 0, sizeof map->class_live);
    memset(map->class_mask, 0, sizeof map->class_mask);
}

/* Empties the map by writing every bucket, valid in epoch 0. */
static void empty_every_bucket(struct rt_tensormap *map)
{
    map->epoch = 0;
    for (uint32_t i = 0; i < map->bucket_count; i++)
        bucket_clear(&map->buckets[i], 0);
    empty_entries(map);
}

int rt_tensormap_init(struct rt_tensormap *map, void *mem, uint32_t bucket_count,
                      uint32_t entry_count)
{
    if (!map || !mem || (uintptr_t)mem % 8 != 0 ||
        rt_tensormap_bytes(bucket_count, entry_count) == 0)
        return -1;
    uint32_t bits = 0;
    while ((UINT32_C(1) << bits) < bucket_count)
        bits++;
    map->bucket_count = bucket_count;
    map->bucket_bits = bits;
    map->capacity = entry_count;
    map->buckets = mem;
    uintptr_t nodes = (uintptr_t)mem + (size_t)buckets_bytes(bucket_count);
    nodes = (nodes + TM_LINE - 1) & ~(uintptr_t)(TM_LINE - 1);
    map->nodes = (struct rt_tm_node *)nodes;
    map->entries = (struct rt_tm_entry *)(map->nodes + entry_count);
    empty_every_bucket(map);
    return 0;
}

/*
 * Every bucket holds an epoch at or below the map's (init writes 0 into
 * all, and a bucket is only ever stamped with the map's epoch), so the
 * next epoch is none of theirs: every bucket reads empty. When the epoch
 * would wrap, 0 may still be in buckets untouched since: those are written
 * again instead.
 */
void rt_tensormap_reset(struct rt_tensormap *map)
{
    if (map->epoch == UINT32_MAX) {
        empty_every_bucket(map);
        return;
    }
    map->epoch++;
    empty_entries(map);
}

int rt_tensormap_reuse(struct rt_tensormap *map, void *mem, uint32_t bucket_count,
                       uint32_t entry_count)
{
    if (!map || map->buckets != mem || map->bucket_count != bucket_count ||
        map->capacity != entry_count || rt_tensormap_bytes(bucket_count, entry_count) == 0)
        return -1;
    rt_tensormap_reset(map);
    return 0;
}


/* ---- the map: chains --------------------------------------------------- */

/* True when bucket `b` holds what its fields say: it is of the map's
 * epoch. Any other bucket is empty. */
static bool bucket_current(const struct rt_tensormap *map, const struct rt_tm_bucket *b)
{
    return b->epoch == map->epoch;
}

/* Bucket `i`, to be written: cleared first if it is of an older epoch. */
static inline struct rt_tm_bucket *bucket_for_write(struct rt_tensormap *map, uint32_t i)
{
    struct rt_tm_bucket *b = &map->buckets[i];
    if (!bucket_current(map, b))
        bucket_clear(b, map->epoch);
    return b;
}

/* The newest entry of the `kind` chain of granule bucket `i`, or
 * RT_TM_NIL. */
static uint32_t granule_first(const struct rt_tensormap *map, uint32_t i, uint32_t kind)
{
    const struct rt_tm_bucket *b = &map->buckets[i];
    return bucket_current(map, b) ? b->granule_head[kind] : RT_TM_NIL;
}

/*
 * True when every entry in the bucket has version `v` (vacuously when it
 * is empty). The sum is exact, so sum == count * v says v is their mean;
 * with v also a bound on one side (min or max), none can differ from it.
 * The bounds are only reset when the bucket empties, so a stale bound
 * makes this answer false more often, never wrongly true.
 */
static bool versions_all(const struct rt_tm_bucket *b, uint32_t v)
{
    uint64_t count = (uint64_t)b->count[RT_ACCESS_READ] + b->count[RT_ACCESS_WRITE];
    if (count == 0)
        return true;
    return b->version_sum == count * v && (b->version_min == v || b->version_max == v);
}

static void count_live(struct rt_tensormap *map, const struct rt_tm_node *n)
{
    map->live++;
    map->live_by_kind[n->kind]++;
    if (map->class_live[n->kind][n->size_class]++ == 0)
        map->class_mask[n->kind] |= UINT64_C(1) << n->size_class;
}

static void uncount_live(struct rt_tensormap *map, const struct rt_tm_node *n)
{
    map->live--;
    map->live_by_kind[n->kind]--;
    if (--map->class_live[n->kind][n->size_class] == 0)
        map->class_mask[n->kind] &= ~(UINT64_C(1) << n->size_class);
}

/* Puts entry `index` (node filled) at the head of both its chains, in
 * granule bucket `granule_bucket` and buffer bucket `buffer_bucket` (its
 * key's). */
static void link_entry(struct rt_tensormap *map, uint32_t index, uint32_t granule_bucket,
                       uint32_t buffer_bucket)
{
    struct rt_tm_node *n = &map->nodes[index];
    RT_ASSERT_INVARIANT(granule_bucket == granule_bucket_of_node(map, n));
    RT_ASSERT_INVARIANT(buffer_bucket == buffer_bucket_of(map, n->addr));
    uint32_t *ghead = &bucket_for_write(map, granule_bucket)->granule_head[n->kind];
    n->granule_prev = RT_TM_NIL;
    n->granule_next = *ghead;
    if (*ghead != RT_TM_NIL)
        map->nodes[*ghead].granule_prev = index;
    *ghead = index;

    struct rt_tm_bucket *b = bucket_for_write(map, buffer_bucket);
    n->buffer_prev = RT_TM_NIL;
    n->buffer_next = b->head[n->kind];
    if (b->head[n->kind] != RT_TM_NIL)
        map->nodes[b->head[n->kind]].buffer_prev = index;
    b->head[n->kind] = index;
    b->count[n->kind]++;
    b->class_mask[n->kind] |= UINT64_C(1) << n->size_class;
    if (n->version < b->version_min)
        b->version_min = n->version;
    if (n->version > b->version_max)
        b->version_max = n->version;
    b->version_sum += n->version;
    count_live(map, n);
}

/* Takes entry `index`, filed in granule bucket `granule_bucket` and buffer
 * bucket `buffer_bucket`, off both its chains and puts it on the free list.
 * A lookup knows both buckets of the entries it visits (the chains it
 * walks are theirs), so it does not hash them again.
 * Cursors of rt_tensormap_lookup hold entry indices, never links, so
 * unlinking the entry a cursor has just left disturbs none of them. */
static void unlink_in(struct rt_tensormap *map, uint32_t index, uint32_t granule_bucket,
                      uint32_t buffer_bucket)
{
    struct rt_tm_node *n = &map->nodes[index];
    RT_ASSERT_INVARIANT(granule_bucket == granule_bucket_of_node(map, n));
    RT_ASSERT_INVARIANT(buffer_bucket == buffer_bucket_of(map, n->addr));
    /* A live entry was linked in this epoch: both its buckets are of it. */
    struct rt_tm_bucket *g = &map->buckets[granule_bucket];
    RT_ASSERT_INVARIANT(bucket_current(map, g));
    if (n->granule_prev != RT_TM_NIL)
        map->nodes[n->granule_prev].granule_next = n->granule_next;
    else
        g->granule_head[n->kind] = n->granule_next;
    if (n->granule_next != RT_TM_NIL)
        map->nodes[n->granule_next].granule_prev = n->granule_prev;

    struct rt_tm_bucket *b = &map->buckets[buffer_bucket];
    RT_ASSERT_INVARIANT(bucket_current(map, b));
    if (n->buffer_prev != RT_TM_NIL)
        map->nodes[n->buffer_prev].buffer_next = n->buffer_next;
    else
        b->head[n->kind] = n->buffer_next;
    if (n->buffer_next != RT_TM_NIL)
        map->nodes[n->buffer_next].buffer_prev = n->buffer_prev;
    b->version_sum -= n->version;
    /* The other kind's count is read alone: one load of both counts right
     * after the 4-byte decrement would wait for the store to retire. */
    if (--b->count[n->kind] == 0) {
        b->class_mask[n->kind] = 0;
        if (b->count[n->kind ^ 1u] == 0)
            bucket_clear_versions(b);
    }
    uncount_live(map, n);

    n->kind = TM_KIND_FREE;
    n->granule_next = map->free_head;
    map->free_head = index;
}

/* unlink_in for an entry whose buckets the caller does not know. */
static void unlink_and_free(struct rt_tensormap *map, uint32_t index)
{
    const struct rt_tm_node *n = &map->nodes[index];
    unlink_in(map, index, granule_bucket_of_node(map, n), buffer_bucket_of(map, n->addr));
}

static bool is_retired(rt_tm_retired_fn retired, void *ctx, uint64_t producer_id)
{
    return retired && retired(ctx, producer_id);
}

/* The view's byte extent, or INT64_MIN..INT64_MAX when it is unknown (an
 * invalid or empty view, or one whose extent overflows). */
static void extent_of(const struct simpler_tensor *t, int64_t *first, int64_t *last)
{
    struct sp_view_extent e;
    if (sp_view_extent(t, &e) == SP_VIEW_OK) {
        *first = e.first_byte;
        *last = e.last_byte;
    } else {
        *first = INT64_MIN;
        *last = INT64_MAX;
    }
}

/* ---- the map: lookup --------------------------------------------------- */

/* Most chains one lookup merges per kind; more granules to probe than this
 * and the buffer chain is walked instead. */
#define TM_MAX_SOURCES 64

/* One chain being merged: the entry it is at (on the access's buffer),
 * and the granule bucket whose chain it is (RT_TM_NIL: the buffer chain),
 * which is that entry's own granule bucket. */
struct tm_cursor {
    uint64_t seq;
    uint32_t entry;
    uint32_t granule_bucket;
};

/* One rt_tensormap_lookup. */
struct tm_walk {
    struct rt_tensormap *map;
    const struct simpler_tensor *access;
    const struct rt_tm_key *key; /* the access's */
    int64_t first, last;        /* the access's byte extent (key's) */
    enum rt_access kind;        /* the access's */
    bool whole_buffer;          /* walk buffer chains only (see rt_tensormap_lookup) */
    uint64_t tile_mask;         /* 1 << the key's class when the tile path may apply, or 0
                                 * (a chain holding entries never has an empty mask) */
    uint32_t buffer_bucket;     /* key's */
    rt_tm_retired_fn retired;
    void *retired_ctx;
    rt_tm_hit_fn hit;
    void *hit_ctx;
    uint64_t cut_seq;           /* entries older than this are not visited */
};

/* The first entry on the access's buffer at or after `index` in its chain
 * (a buffer chain when by_buffer, else a granule chain). */
static uint32_t on_buffer(const struct tm_walk *w, uint32_t index, bool by_buffer)
{
    const struct rt_tm_node *nodes = w->map->nodes;
    while (index != RT_TM_NIL && nodes[index].addr != w->access->addr)
        index = by_buffer ? nodes[index].buffer_next : nodes[index].granule_next;
    return index;
}

/* Max-heap on seq: the root is the newest entry of all cursors. */
static void heap_sift_down(struct tm_cursor *heap, uint32_t n, uint32_t i)
{
    struct tm_cursor moving = heap[i];
    for (;;) {
        uint32_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && heap[child + 1].seq > heap[child].seq)
            child++;
        if (heap[child].seq <= moving.seq)
            break;
        heap[i] = heap[child];
        i = child;
    }
    heap[i] = moving;
}

/* Adds a cursor on granule chain `bucket` unless that chain is already
 * among the `probed` (two granules may share a bucket: each chain is merged
 * once, or its entries would be visited twice). */
static void open_granule_chain(const struct tm_walk *w, uint32_t kind, uint32_t bucket,
                               uint32_t *probed, uint32_t *probed_n, struct tm_cursor *heap,
                               uint32_t *n)
{
    for (uint32_t i = 0; i < *probed_n; i++)
        if (probed[i] == bucket)
            return;
    probed[(*probed_n)++] = bucket;
    uint32_t first = on_buffer(w, granule_first(w->map, bucket, kind), false);
    if (first != RT_TM_NIL)
        heap[(*n)++] = (struct tm_cursor){w->map->nodes[first].seq, first, bucket};
}


/*
 * Opens the cursors for the `kind` chains of the lookup: the granule
 * chains of every live class when that is cheaper (see the header's cost
 * model), else the one buffer chain. Returns the number of cursors.
 */
static uint32_t open_chains(const struct tm_walk *w, uint32_t kind, struct tm_cursor *heap,
                            bool *by_buffer)
{
    const struct rt_tensormap *map = w->map;
    const struct rt_tm_bucket *b = &map->buckets[w->buffer_bucket];
    RT_ASSERT_INVARIANT(bucket_current(map, b)); /* rt_tensormap_lookup_key returned early */
    uint32_t buffer_entries = b->count[kind];
    *by_buffer = true;
    if (buffer_entries == 0)
        return 0; /* nothing of this kind on any buffer hashing here */

    /* The granule chains cost about sources * (1 + mean chain) entry
     * visits, the buffer chain buffer_entries: probe only when cheaper, and
     * never more than TM_MAX_SOURCES chains. */
    uint64_t mask = map->class_mask[kind] & b->class_mask[kind];
    /* The tile path: every entry of this kind the bucket may hold is of
     * the access's own class (cells or tiles of one size, the common
     * case), so the one granule holding the access is all there is to
     * probe, without counting sources or merging. */
    RT_ASSERT_INVARIANT(mask != 0); /* the live entries' classes are in both masks */
    if (mask == w->tile_mask) {
        *by_buffer = false;
        uint32_t bucket = w->key->granule_bucket;
        uint32_t first = on_buffer(w, granule_first(map, bucket, kind), false);
        if (first == RT_TM_NIL)
            return 0;
        heap[0] = (struct tm_cursor){map->nodes[first].seq, first, bucket};
        return 1;
    }
    uint64_t per_source = 1 + (map->live_by_kind[kind] >> map->bucket_bits);
    uint64_t sources = (mask >> RT_TM_WIDE) & 1;
    bool too_many = w->whole_buffer;
    for (uint64_t live = mask & ~(UINT64_C(1) << RT_TM_WIDE); live != 0 && !too_many;
         live &= live - 1) {
        uint64_t lo, hi;
        granule_range((uint32_t)__builtin_ctzll(live), w->first, w->last, &lo, &hi);
        sources += hi - lo + 1; /* no wrap: sources <= TM_MAX_SOURCES before */
        /* sources * per_source > buffer_entries - 1, without a division;
         * no overflow: per_source <= 2^32 once sources <= TM_MAX_SOURCES */
        too_many = sources > TM_MAX_SOURCES || sources * per_source >= buffer_entries;
    }
    if (too_many || sources * per_source >= buffer_entries) {
        uint32_t first = on_buffer(w, b->head[kind], true);
        if (first == RT_TM_NIL)
            return 0;
        heap[0] = (struct tm_cursor){map->nodes[first].seq, first, RT_TM_NIL};
        return 1;
    }

    *by_buffer = false;
    uint32_t probed[TM_MAX_SOURCES], probed_n = 0, n = 0;
    uint64_t addr = w->access->addr;
    for (uint64_t live = mask & ~(UINT64_C(1) << RT_TM_WIDE); live != 0; live &= live - 1) {
        uint32_t k = (uint32_t)__builtin_ctzll(live);
        uint64_t lo, hi;
        granule_range(k, w->first, w->last, &lo, &hi);
        for (uint64_t g = lo; g <= hi; g++)
            open_granule_chain(w, kind, granule_bucket_of(map, addr, k, g), probed, &probed_n,
                               heap, &n);
    }
    if (mask & (UINT64_C(1) << RT_TM_WIDE))
        open_granule_chain(w, kind, granule_bucket_of(map, addr, RT_TM_WIDE, 0), probed,
                           &probed_n, heap, &n);
    for (uint32_t i = n / 2; i-- > 0;)
        heap_sift_down(heap, n, i);
    return n;
}

/* Frees entry `index` of the access's buffer, met on the granule chain of
 * `granule_bucket` (RT_TM_NIL: on the buffer chain, its granule bucket
 * unknown). */
static void walk_free(struct tm_walk *w, uint32_t index, uint32_t granule_bucket)
{
    if (granule_bucket == RT_TM_NIL)
        granule_bucket = granule_bucket_of_node(w->map, &w->map->nodes[index]);
    unlink_in(w->map, index, granule_bucket, w->buffer_bucket);
}

/* How the entry (node, record) relates to the access, when they are not
 * identical views (rt_overlap_of_extents when both extents are known and
 * the versions agree: `extents`). Out of visit's fast path, which an
 * identical view (a cell or tile accessed again) takes without building
 * the extents. */
static enum rt_overlap overlap_of(const struct tm_walk *w, const struct rt_tm_node *node,
                                  const struct rt_tm_entry *entry, bool extents)
{
    if (!extents)
        return rt_region_overlap(&entry->region, w->access);
    struct sp_view_extent r = {node->first_byte, node->last_byte}, a = {w->first, w->last};
    return rt_overlap_of_extents(&entry->region, &r, w->access, &a);
}

/* True when the entry covers the whole access (the other direction of
 * overlap_of). */
static bool covers_access(const struct tm_walk *w, const struct rt_tm_node *node,
                          const struct rt_tm_entry *entry, bool extents)
{
    if (!extents)
        return rt_region_overlap(w->access, &entry->region) == RT_OVERLAP_COVERED;
    struct sp_view_extent r = {node->first_byte, node->last_byte}, a = {w->first, w->last};
    return rt_overlap_of_extents(w->access, &a, &entry->region, &r) == RT_OVERLAP_COVERED;
}

/*
 * Decides one entry on the access's buffer, visited newest first, met on
 * the chain of a cursor whose granule_bucket is `granule_bucket`. Returns
 * the hit's nonzero return (the entry then stays), else 0; *cut says the
 * entry covers the whole access (with find_cut): the walk ends there.
 */
static int visit(struct tm_walk *w, uint32_t index, uint32_t granule_bucket, bool find_cut,
                 bool *cut)
{
    const struct rt_tm_node *node = &w->map->nodes[index];
    *cut = false;
    if (is_retired(w->retired, w->retired_ctx, node->producer_id)) {
        walk_free(w, index, granule_bucket);
        return 0;
    }
    if ((node->last_byte < w->first || w->last < node->first_byte) &&
        node->version == w->access->version)
        return 0;
    const struct rt_tm_entry *entry = &w->map->entries[index];
    /* The fast path: both extents are known already (the node's and the
     * walk's), so neither is computed again, and an identical view (a
     * tile or cell accessed again) is decided by one comparison. */
    bool extents = extent_known(node->first_byte, node->last_byte) &&
                   extent_known(w->first, w->last) && node->version == w->access->version;
    /* An identical view (same version) covers the access and is covered
     * by it: one comparison decides both directions. */
    bool identical = extents && node->first_byte == w->first && node->last_byte == w->last &&
                     rt_views_identical(&entry->region, w->access);
    enum rt_overlap overlap = identical ? RT_OVERLAP_COVERED : overlap_of(w, node, entry, extents);
    if (overlap == RT_OVERLAP_NONE)
        return 0;
    int rc = w->hit(w->hit_ctx, node->producer_id, entry->producer, (enum rt_access)node->kind);
    if (rc != 0)
        return rc; /* entry kept: a retried lookup must see it again */
    if (find_cut)
        *cut = identical || covers_access(w, node, entry, extents);
    uint64_t seq = node->seq;
    if (w->kind == RT_ACCESS_WRITE && overlap == RT_OVERLAP_COVERED)
        walk_free(w, index, granule_bucket);
    if (*cut)
        w->cut_seq = seq;
    return 0;
}

/* The `kind` chains of one lookup, merged newest first. Stops at entries
 * older than cut_seq; with find_cut, sets cut_seq at the newest live entry
 * that covers the whole access (everything older that overlaps the access
 * is ordered before that entry's task) and stops there. */
static int walk_kind(struct tm_walk *w, uint32_t kind, bool find_cut)
{
    struct tm_cursor heap[TM_MAX_SOURCES];
    bool by_buffer;
    uint32_t n = open_chains(w, kind, heap, &by_buffer);
    const struct rt_tm_node *nodes = w->map->nodes;
    while (n > 0) {
        uint32_t index = heap[0].entry, granule_bucket = heap[0].granule_bucket;
        if (heap[0].seq < w->cut_seq)
            return 0;
        /* Step the cursor before the entry may be unlinked. */
        uint32_t next = on_buffer(w, by_buffer ? nodes[index].buffer_next
                                               : nodes[index].granule_next, by_buffer);
        if (next == RT_TM_NIL)
            heap[0] = heap[--n];
        else
            heap[0] = (struct tm_cursor){nodes[next].seq, next, granule_bucket};
        if (n > 1) /* one cursor is a heap already (the tile path, a buffer chain) */
            heap_sift_down(heap, n, 0);
        bool cut;
        int rc = visit(w, index, granule_bucket, find_cut, &cut);
        if (rc != 0 || cut)
            return rc;
    }
    return 0;
}

void rt_tensormap_key(const struct rt_tensormap *map, const struct simpler_tensor *view,
                      const struct sp_view_extent *extent, struct rt_tm_key *key)
{
    if (extent) {
        key->first_byte = extent->first_byte;
        key->last_byte = extent->last_byte;
    } else {
        extent_of(view, &key->first_byte, &key->last_byte);
    }
    uint32_t k = size_class_of(key->first_byte, key->last_byte);
    uint64_t granule = k == RT_TM_WIDE ? 0 : biased(key->first_byte) >> granule_bits(k);
    key->size_class = k;
    key->granule_bucket = granule_bucket_of(map, view->addr, k, granule);
    key->buffer_bucket = buffer_bucket_of(map, view->addr);
    key->reserved = 0;
}

int rt_tensormap_lookup(struct rt_tensormap *map, const struct simpler_tensor *access,
                        enum rt_access kind, rt_tm_retired_fn retired, void *retired_ctx,
                        rt_tm_hit_fn hit, void *hit_ctx)
{
    struct rt_tm_key key;
    rt_tensormap_key(map, access, NULL, &key);
    return rt_tensormap_lookup_key(map, access, &key, kind, retired, retired_ctx, hit, hit_ctx);
}

int rt_tensormap_lookup_key(struct rt_tensormap *map, const struct simpler_tensor *access,
                            const struct rt_tm_key *key, enum rt_access kind,
                            rt_tm_retired_fn retired, void *retired_ctx, rt_tm_hit_fn hit,
                            void *hit_ctx)
{
    RT_ASSERT_INVARIANT(key->buffer_bucket == buffer_bucket_of(map, access->addr));
    /* A bucket of an older epoch holds no entry on any buffer hashing
     * there (its granule chains may hold some of other buffers, which the
     * lookup would skip): nothing to report or free. */
    const struct rt_tm_bucket *b = &map->buckets[key->buffer_bucket];
    if (!bucket_current(map, b))
        return 0;
    struct tm_walk w = {
        .map = map,
        .access = access,
        .key = key,
        .first = key->first_byte,
        .last = key->last_byte,
        .kind = kind,
        .buffer_bucket = key->buffer_bucket,
        .retired = retired,
        .retired_ctx = retired_ctx,
        .hit = hit,
        .hit_ctx = hit_ctx,
        .cut_seq = 0,
    };
    /* Granule chains only hold what can share a byte with the access; an
     * unknown extent, or entries of other versions (OTHER whatever their
     * bytes), need the whole buffer. */
    w.whole_buffer = !extent_known(w.first, w.last) || !versions_all(b, access->version);
    w.tile_mask = w.whole_buffer || key->size_class == RT_TM_WIDE
                      ? 0
                      : UINT64_C(1) << key->size_class;
    int rc = walk_kind(&w, RT_ACCESS_WRITE, true);
    if (rc != 0 || kind != RT_ACCESS_WRITE)
        return rc;
    return walk_kind(&w, RT_ACCESS_READ, false);
}

int rt_tensormap_insert(struct rt_tensormap *map, const struct simpler_tensor *region,
                        enum rt_access kind, uint64_t producer_id, void *producer)
{
    return rt_tensormap_insert_entry(map, region, NULL, kind, producer_id, producer, NULL);
}

int rt_tensormap_insert_entry(struct rt_tensormap *map, const struct simpler_tensor *region,
                              const struct sp_view_extent *extent, enum rt_access kind,
                              uint64_t producer_id, void *producer, uint32_t *entry_index)
{
    struct rt_tm_key key;
    rt_tensormap_key(map, region, extent, &key);
    return rt_tensormap_insert_key(map, region, &key, kind, producer_id, producer, entry_index);
}

int rt_tensormap_insert_key(struct rt_tensormap *map, const struct simpler_tensor *region,
                            const struct rt_tm_key *key, enum rt_access kind,
                            uint64_t producer_id, void *producer, uint32_t *entry_index)
{
    if (kind != RT_ACCESS_READ && kind != RT_ACCESS_WRITE)
        return -1;
    uint32_t index;
    if (map->free_head != RT_TM_NIL) {
        index = map->free_head;
        map->free_head = map->nodes[index].granule_next;
    } else if (map->fresh < map->capacity) {
        index = map->fresh++;
    } else {
        return -1;
    }

    struct rt_tm_entry *entry = &map->entries[index];
    entry->region = *region;
    entry->producer = producer;
    struct rt_tm_node *n = &map->nodes[index];
    n->addr = region->addr;
    n->seq = ++map->next_seq;
    n->first_byte = key->first_byte;
    n->last_byte = key->last_byte;
    n->producer_id = producer_id;
    n->version = region->version;
    n->kind = (uint8_t)kind;
    n->size_class = (uint8_t)key->size_class;
    n->reserved = 0;
    link_entry(map, index, key->granule_bucket, key->buffer_bucket);
    if (entry_index)
        *entry_index = index;
    return 0;
}

bool rt_tensormap_forget(struct rt_tensormap *map, uint32_t entry_index, uint64_t producer_id)
{
    /* Entries at and above `fresh` were never used since the reset: their
     * nodes hold garbage. A freed entry is marked; a reused one names
     * another producer (ids are unique within a run). */
    if (entry_index >= map->fresh)
        return false;
    const struct rt_tm_node *n = &map->nodes[entry_index];
    if (n->kind == TM_KIND_FREE || n->producer_id != producer_id)
        return false;
    unlink_and_free(map, entry_index);
    return true;
}

uint32_t rt_tensormap_reclaim(struct rt_tensormap *map, rt_tm_retired_fn retired,
                              void *retired_ctx)
{
    /* Every entry is on exactly one buffer chain, in a bucket of this
     * epoch. */
    uint32_t freed = 0;
    for (uint32_t i = 0; i < map->bucket_count; i++) {
        if (!bucket_current(map, &map->buckets[i]))
            continue;
        for (uint32_t kind = 0; kind < 2; kind++) {
            uint32_t index = map->buckets[i].head[kind];
            while (index != RT_TM_NIL) {
                uint32_t next = map->nodes[index].buffer_next;
                if (is_retired(retired, retired_ctx, map->nodes[index].producer_id)) {
                    unlink_and_free(map, index);
                    freed++;
                }
                index = next;
            }
        }
    }
    return freed;
}
