/*
 * runtime/tensormap.h — the TensorMap: which earlier task touched which
 * region of which buffer.
 *
 * Owns: the map itself (how two regions relate is region_overlap.h's).
 * Used only by the orchestrator thread: no locking, no atomics. It knows nothing of rings or
 * slots: the caller says which producers have retired (a callback) and gets
 * each hit's producer id and opaque producer pointer.
 *
 * Structure. Every recorded access (an entry) is on two doubly linked
 * chains, one per kind (write entries and read entries apart), each kept
 * newest first (insertion order = seq order):
 *  - its BUFFER chain, in the buffer bucket hash(addr): every entry on
 *    the buffer (and on buffers colliding with it), as a plain per-buffer
 *    hash would keep them;
 *  - its GRANULE chain, in the granule bucket hash(addr, class, granule).
 *    Its size class is the smallest k such that one aligned granule of
 *    2^(4 + k) bytes (16 B, 32 B, 64 B, ... 256 GiB: RT_TM_CLASSES classes)
 *    holds all its bytes, and its granule is that one: first_byte >> (4 +
 *    k). An access whose bytes are [f, l] therefore finds every entry of
 *    class k that can share a byte with it in the granules (f >> (4 + k))
 *    .. (l >> (4 + k)): one granule per class for an access inside one.
 *    Entries in no granule (across the 256 GiB boundary, or wider), or of
 *    unknown extent (a view whose extent overflows, an invalid or empty
 *    view), go to the WIDE class: one granule chain per buffer.
 * Per kind, the map counts live entries per class; each buffer bucket keeps
 * per kind its entry count and a mask of the classes its chain may hold
 * (reset when it empties), and bounds and the sum of its entries' versions,
 * which prove cheaply that every entry in it has the access's version (see
 * versions_all in tensormap.c). A lookup probes only the classes live in
 * both.
 *
 * Why granule chains stay short: the byte extent of an entry of class
 * k > 0 fits in no aligned block of half its granule, so it spans the
 * granule's midpoint, and entries with disjoint extents cannot both span
 * it. A granule thus holds at most one entry per class among entries with
 * disjoint extents (sixteen in the 16-byte class), besides entries of
 * other granules and buffers hashing to its bucket: many small disjoint
 * slices of one buffer cost a few probes whatever their number. Entries
 * whose extents overlap but whose elements do not (tiles of one row band
 * of a matrix: their byte spans interleave) share a granule: a tile lookup
 * visits the tiles of its own band of rows, not the whole matrix.
 *
 * Cost model of a lookup, per kind it walks (writes; reads too for a
 * WRITE): with L the entries in the access's buffer bucket, S the granules
 * to probe (summed over the live classes, plus the wide chain) and c the
 * mean granule chain length (live entries of that kind / buckets), it
 * probes the S granule chains and merges them newest first (a heap of
 * cursors) when S <= 64 and S * (1 + c) < L; otherwise, and whenever the
 * access's extent is unknown or the buffer bucket may hold another version
 * than the access's, it walks the buffer chain as a single per-buffer hash
 * would. No lookup walks more than its buffer chain; a wide access after
 * many small entries costs what that walk costs. The tile path: when the
 * only class the bucket holds for a kind is the access's own, that one
 * granule is all there is to probe, and the lookup opens that one chain
 * without counting the sources (cells and tiles of one size: 11-12% fewer
 * instructions per task in bench_runtime's TensorMap section).
 *
 * Retired entries are freed by rt_tensormap_forget (the orchestrator
 * calls it for a task's entries when it reuses the task's slot, so the
 * chains hold live entries only, however many tasks write cells that
 * nobody accesses again), when a lookup visits them (in the chains it
 * walks, down to the cut), and by rt_tensormap_reclaim, which the caller
 * runs when the map is full.
 *
 * Memory: the caller provides one block of rt_tensormap_bytes() bytes (in
 * the run arena); the map never allocates.
 */
#ifndef SIMPLER_RUNTIME_TENSORMAP_H
#define SIMPLER_RUNTIME_TENSORMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/view.h"
#include "runtime/region_overlap.h"
#include "simpler/tensor.h"

enum rt_access { RT_ACCESS_READ = 0, RT_ACCESS_WRITE = 1 };

/* Returns true when the task `producer_id` has retired (its entries are
 * stale: they must never produce an edge). */
typedef bool (*rt_tm_retired_fn)(void *ctx, uint64_t producer_id);

/* Called once per live overlapping entry; a nonzero return stops the lookup
 * and is returned from it. */
typedef int (*rt_tm_hit_fn)(void *ctx, uint64_t producer_id, void *producer,
                            enum rt_access kind);

/* Size classes of granule chains: class k has aligned granules of
 * 2^(RT_TM_GRANULE_MIN_BITS + k) bytes (16 B .. 256 GiB); class RT_TM_WIDE
 * holds the entries that fit in no granule, or of unknown extent. */
#define RT_TM_CLASSES 35
#define RT_TM_WIDE RT_TM_CLASSES
#define RT_TM_GRANULE_MIN_BITS 4

#define RT_TM_NIL UINT32_MAX

/* What the walks read of an entry, in one cache line: a lookup visits the
 * nodes of the chains it walks and touches the entry's record only for an
 * entry whose bytes may overlap the access (or to report it). */
struct rt_tm_node {
    uint64_t addr;                 /* region.addr */
    uint64_t seq;                  /* insertion order */
    int64_t first_byte, last_byte; /* byte extent, or INT64_MIN..INT64_MAX */
    uint64_t producer_id;
    uint32_t granule_next, granule_prev; /* granule chain; granule_next links the free list */
    uint32_t buffer_next, buffer_prev;   /* buffer chain */
    uint32_t version;              /* region.version */
    uint8_t kind;                  /* enum rt_access (0xFF while on the free list) */
    uint8_t size_class;            /* 0..RT_TM_CLASSES - 1, or RT_TM_WIDE */
    uint16_t reserved;
};

/* The rest of an entry (same index as its node). */
struct rt_tm_entry {
    struct simpler_tensor region; /* the recorded view */
    void *producer;
};

/*
 * Bucket i: the buffer chains (per kind) of the buffers hashing to i and
 * what it knows of them, and the granule chains (per kind) of the granules
 * hashing to i (the two hashes are unrelated; they share the count), valid
 * only in the map's epoch they name. A bucket of an older epoch is empty,
 * whatever its other fields hold, and is cleared when it is first written
 * in the current one: a reset bumps the epoch instead of writing every
 * bucket. One cache line.
 */
struct rt_tm_bucket {
    uint32_t head[2];       /* [enum rt_access]: newest first, or RT_TM_NIL */
    uint32_t count[2];      /* entries in each chain */
    uint64_t class_mask[2]; /* bit k: some entry of class k may be in the chain
                             * (cleared only when the chain empties) */
    uint32_t version_min;   /* <= every entry's version (not raised on unlink) */
    uint32_t version_max;   /* >= every entry's version (not lowered on unlink) */
    uint64_t version_sum;   /* exact: count < 2^32 entries of versions < 2^32 */
    uint32_t granule_head[2]; /* [enum rt_access]: newest first, or RT_TM_NIL */
    uint32_t epoch;         /* the map's epoch in which the fields above hold */
    uint32_t reserved;
};

struct rt_tensormap {
    uint32_t bucket_count; /* power of two */
    uint32_t bucket_bits;
    uint32_t capacity;     /* entries */
    uint32_t live;         /* entries in chains */
    uint32_t free_head;    /* free list through node.granule_next */
    uint32_t fresh;        /* entries at and above it never used since the reset */
    uint64_t next_seq;
    uint32_t live_by_kind[2];                        /* [enum rt_access] */
    uint32_t class_live[2][RT_TM_CLASSES + 1];       /* [kind][size class] */
    uint64_t class_mask[2];                          /* bit k: class_live[kind][k] > 0 */
    uint32_t epoch;                                  /* buckets of another are empty */
    struct rt_tm_bucket *buckets;                    /* [bucket_count] */
    struct rt_tm_node *nodes;                        /* [capacity], cache-line aligned */
    struct rt_tm_entry *entries;                     /* [capacity] */
};

/*
 * Where the map files one access: its byte extent and the keys of its
 * chains (tensormap_keys.h), computed once by rt_tensormap_key and then
 * taken by the access's lookup and its insert, which would otherwise each
 * hash the view again (a write's lookup walks two kinds, each opening the
 * granule chain, and a freed entry's unlink found both of its buckets by
 * hashing too: 13 granule hashes a stencil task, now 4). A key depends on
 * the view and on the map's bucket count only: it stays valid across
 * inserts, lookups and resets, not across an rt_tensormap_init with
 * another bucket count.
 */
struct rt_tm_key {
    int64_t first_byte, last_byte; /* byte extent, or INT64_MIN..INT64_MAX */
    uint32_t size_class;           /* 0..RT_TM_CLASSES - 1, or RT_TM_WIDE */
    uint32_t granule_bucket;       /* the bucket of its granule chain */
    uint32_t buffer_bucket;        /* the bucket of its buffer chain */
    uint32_t reserved;
};

/* Bytes of the block rt_tensormap_init needs (0 when the sizes are invalid:
 * bucket_count not a power of two or 0, entry_count 0 or >= RT_TM_NIL):
 * per bucket a bucket (64 bytes), padding to a cache line, then per entry
 * a node and a record. */
size_t rt_tensormap_bytes(uint32_t bucket_count, uint32_t entry_count);

/* Lays the map out in `mem` (rt_tensormap_bytes of them, 8-byte aligned)
 * and empties it, writing every bucket: whatever `mem` and *map held
 * before. O(buckets). Returns 0 or -1 for invalid sizes. */
int rt_tensormap_init(struct rt_tensormap *map, void *mem, uint32_t bucket_count,
                      uint32_t entry_count);

/* Empties the map (every entry back on the free list). O(1): a new epoch
 * leaves every bucket of the old ones empty; once every 2^32 resets, when
 * the epoch would wrap to values old buckets may hold, every bucket is
 * written (O(buckets)). */
void rt_tensormap_reset(struct rt_tensormap *map);

/*
 * rt_tensormap_reset for a map that may be reused: when *map is a map
 * rt_tensormap_init laid out in `mem` with these sizes and that has
 * changed since only through this API (the caller knows it: run_init
 * keeps a mark for it in the arena), empties it in O(1) and returns 0.
 * Returns -1 and changes nothing when *map lies elsewhere or has other
 * sizes: call rt_tensormap_init. A map not laid out by rt_tensormap_init
 * (garbage that happens to match) must never be passed: its buckets may
 * name epochs ahead of its own.
 */
int rt_tensormap_reuse(struct rt_tensormap *map, void *mem, uint32_t bucket_count,
                       uint32_t entry_count);

/*
 * Visits the live entries on access->addr that `access` depends on: write
 * entries always, read entries too when `kind` is WRITE (write-after-read).
 * Entries whose producer has retired are never reported, and are unlinked
 * and freed on the way (those on access->addr in the chains the lookup
 * walks, down to the cut below; see the file comment). When `kind` is
 * WRITE, every entry (read or write) that `access` COVERS is reported and
 * then unlinked and freed: the new write orders everything after it. The walk stops at the newest live write
 * entry that covers the whole access: that writer's own lookup made it
 * wait for every older overlapping access, so those are already ordered
 * before it and reporting them would only add redundant edges (both chains
 * stop at it, by insertion order). This relies on every recorded write
 * having been looked up before it was inserted, as the orchestrator does.
 * Hits come newest first: the write entries, then (WRITE only) the read
 * entries. Returns 0 or the first nonzero hit return; the entry that
 * returned it stays, so a retried lookup reports it again. `access` is
 * borrowed for the call.
 */
int rt_tensormap_lookup(struct rt_tensormap *map, const struct simpler_tensor *access,
                        enum rt_access kind, rt_tm_retired_fn retired, void *retired_ctx,
                        rt_tm_hit_fn hit, void *hit_ctx);

/* Fills *key for view `view` (borrowed for the call) with the extent
 * `extent` the caller computed (sp_view_extent returned SP_VIEW_OK with
 * exactly these bytes); NULL: computed here. */
void rt_tensormap_key(const struct rt_tensormap *map, const struct simpler_tensor *view,
                      const struct sp_view_extent *extent, struct rt_tm_key *key);

/* rt_tensormap_lookup for an access whose key rt_tensormap_key computed
 * from this very view, on this map. */
int rt_tensormap_lookup_key(struct rt_tensormap *map, const struct simpler_tensor *access,
                            const struct rt_tm_key *key, enum rt_access kind,
                            rt_tm_retired_fn retired, void *retired_ctx, rt_tm_hit_fn hit,
                            void *hit_ctx);

/* Records that `producer_id` accesses `region` (copied; newest first in its
 * chains). Returns 0, or -1 when no entry is free (call
 * rt_tensormap_reclaim, or wait for producers to retire, and retry) or
 * `kind` is invalid; the map is then unchanged. */
int rt_tensormap_insert(struct rt_tensormap *map, const struct simpler_tensor *region,
                        enum rt_access kind, uint64_t producer_id, void *producer);

/* rt_tensormap_insert that also says which entry it used (*entry_index,
 * written on success only), for rt_tensormap_forget, and takes the
 * region's extent when the caller has it (as rt_tensormap_key's; NULL:
 * computed here). */
int rt_tensormap_insert_entry(struct rt_tensormap *map, const struct simpler_tensor *region,
                              const struct sp_view_extent *extent, enum rt_access kind,
                              uint64_t producer_id, void *producer, uint32_t *entry_index);

/* rt_tensormap_insert_entry for a region whose key rt_tensormap_key
 * computed from this very view, on this map (`key` borrowed for the
 * call). */
int rt_tensormap_insert_key(struct rt_tensormap *map, const struct simpler_tensor *region,
                            const struct rt_tm_key *key, enum rt_access kind,
                            uint64_t producer_id, void *producer, uint32_t *entry_index);

/*
 * Frees entry `entry_index` if it is still the live entry that
 * `producer_id` inserted there; returns whether it did. An entry freed since
 * (a covering write, a lookup or reclaim found it retired) and perhaps
 * reused by another producer, or an index never used since the reset, is
 * left alone. The orchestrator calls it for every entry of a task whose
 * slot it reuses (the task has retired), so the chains hold live entries
 * only and lookups do not walk dead ones. O(1).
 */
bool rt_tensormap_forget(struct rt_tensormap *map, uint32_t entry_index, uint64_t producer_id);

/* Frees every entry whose producer has retired; returns how many.
 * O(buckets + live entries). */
uint32_t rt_tensormap_reclaim(struct rt_tensormap *map, rt_tm_retired_fn retired,
                              void *retired_ctx);

/* Free entries left. */
static inline uint32_t rt_tensormap_free_count(const struct rt_tensormap *map)
{
    return map->capacity - map->live;
}

#endif /* SIMPLER_RUNTIME_TENSORMAP_H */
