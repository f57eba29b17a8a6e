/*
 * runtime/tensormap.h — the TensorMap: which earlier task touched which
 * region of which buffer.
 *
 * Owns: region overlap classification and the map itself, a hash table of
 * recorded accesses keyed by buffer base address (so every view of a buffer
 * lands in one bucket), each bucket holding two newest-first chains: write
 * entries and read entries. Used only by the orchestrator thread: no
 * locking, no atomics. It knows nothing of rings or slots: the caller says
 * which producers have retired (a callback) and gets each hit's producer id
 * and opaque producer pointer.
 *
 * Memory: the caller provides one block of rt_tensormap_bytes() bytes (in
 * the run arena); the map never allocates.
 */
#ifndef SIMPLER_RUNTIME_TENSORMAP_H
#define SIMPLER_RUNTIME_TENSORMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

enum rt_access { RT_ACCESS_READ = 0, RT_ACCESS_WRITE = 1 };

/* Returns true when the task `producer_id` has retired (its entries are
 * stale: they must never produce an edge). */
typedef bool (*rt_tm_retired_fn)(void *ctx, uint64_t producer_id);

/* Called once per live overlapping entry; a nonzero return stops the lookup
 * and is returned from it. */
typedef int (*rt_tm_hit_fn)(void *ctx, uint64_t producer_id, void *producer,
                            enum rt_access kind);

struct rt_tm_entry {
    struct simpler_tensor region; /* the recorded view */
    uint64_t producer_id;
    void *producer;
    uint32_t next;   /* next entry in its chain, or RT_TM_NIL */
    uint32_t kind;   /* enum rt_access */
    uint64_t seq;    /* insertion order */
    int64_t first_byte, last_byte; /* byte extent, or INT64_MIN..INT64_MAX */
};

#define RT_TM_NIL UINT32_MAX

struct rt_tensormap {
    uint32_t bucket_count; /* power of two */
    uint32_t bucket_bits;
    uint32_t capacity;     /* entries */
    uint32_t live;         /* entries in chains */
    uint32_t free_head;    /* free list through entry.next */
    uint64_t next_seq;
    uint32_t fresh;        /* entries at and above it never used since the reset */
    uint32_t *heads;       /* [bucket_count][2]: write chain, read chain */
    struct rt_tm_entry *entries;
};

/* Bytes of the block rt_tensormap_init needs (0 when the sizes are invalid:
 * bucket_count not a power of two or 0, entry_count 0 or >= RT_TM_NIL). */
size_t rt_tensormap_bytes(uint32_t bucket_count, uint32_t entry_count);

/* Lays the map out in `mem` (rt_tensormap_bytes of them, 8-byte aligned)
 * and empties it. Returns 0 or -1 for invalid sizes. */
int rt_tensormap_init(struct rt_tensormap *map, void *mem, uint32_t bucket_count,
                      uint32_t entry_count);

/* Empties the map (every entry back on the free list). */
void rt_tensormap_reset(struct rt_tensormap *map);

/*
 * Visits the live entries on access->addr that `access` depends on: write
 * entries always, read entries too when `kind` is WRITE (write-after-read).
 * Entries whose producer has retired are unlinked and freed on the way and
 * never reported. When `kind` is WRITE, every entry (read or write) that
 * `access` COVERS is reported and then unlinked and freed: the new write
 * orders everything after it. The walk stops at the newest live write
 * entry that covers the whole access: that writer's own lookup made it
 * wait for every older overlapping access, so those are already ordered
 * before it and reporting them would only add redundant edges (both chains
 * stop at it, by insertion order). This relies on every recorded write
 * having been looked up before it was inserted, as the orchestrator does.
 * Returns 0 or the first nonzero hit return.
 */
int rt_tensormap_lookup(struct rt_tensormap *map, const struct simpler_tensor *access,
                        enum rt_access kind, rt_tm_retired_fn retired, void *retired_ctx,
                        rt_tm_hit_fn hit, void *hit_ctx);

/* Records that `producer_id` accesses `region` (newest first in its chain).
 * Returns 0, or -1 when no entry is free (call rt_tensormap_reclaim, or wait
 * for producers to retire, and retry). */
int rt_tensormap_insert(struct rt_tensormap *map, const struct simpler_tensor *region,
                        enum rt_access kind, uint64_t producer_id, void *producer);

/* Frees every entry whose producer has retired; returns how many. */
uint32_t rt_tensormap_reclaim(struct rt_tensormap *map, rt_tm_retired_fn retired,
                              void *retired_ctx);

/* Free entries left. */
static inline uint32_t rt_tensormap_free_count(const struct rt_tensormap *map)
{
    return map->capacity - map->live;
}

#endif /* SIMPLER_RUNTIME_TENSORMAP_H */
