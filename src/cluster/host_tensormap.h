/*
 * cluster/host_tensormap.h — the cluster's host TensorMap: which host
 * buffers a run knows, and which regions of them unfinished tasks read and
 * write.
 *
 * Owns: the buffer table (every host buffer the run's tasks named, sorted
 * by base; a buffer is (base, bytes), and a buffer overlapping a known one
 * without being it is refused) and, per buffer, the access entries of
 * tasks that may still touch it. Knows nothing of workers, threads or
 * program mode: the caller holds the cluster lock around every call and
 * says, through a callback, whether a task has succeeded.
 *
 * The overlap rule is the device TensorMap's (runtime/region_overlap.h);
 * docs/cluster.md section 3 says what a read and a write cover.
 */
#ifndef SIMPLER_CLUSTER_HOST_TENSORMAP_H
#define SIMPLER_CLUSTER_HOST_TENSORMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/view.h"
#include "simpler/tensor.h"

/* One access of a task to a host buffer: a write covers its view's
 * elements, a read the byte span staging copies (a 1-D u8 view). */
struct cl_access {
    struct simpler_tensor region;
    struct sp_view_extent extent;
    uint32_t task;  /* index of the task in its run */
    uint32_t write; /* 1: write, 0: read */
};

struct cl_buffer {
    uint64_t base;
    uint64_t bytes;
    struct cl_access *entries; /* accesses of tasks not known to have succeeded */
    uint32_t entry_count;
    uint32_t entry_capacity;
};

struct cl_tensormap {
    struct cl_buffer *buffers; /* sorted by base, pairwise disjoint */
    uint32_t buffer_count;
    uint32_t buffer_capacity;
    struct cl_buffer *staged;  /* new buffers a reserve made room for, not yet recorded */
    uint32_t staged_count;
    uint32_t staged_capacity;
};

/* The reasons an edge has (a bitmask). */
#define CL_DEP_RAW 1u
#define CL_DEP_WAR 2u
#define CL_DEP_WAW 4u

/* An earlier task the new one must wait for, and why. */
struct cl_producer {
    uint32_t task;
    uint32_t reasons; /* CL_DEP_* */
};

/* Says whether task `task` of the run has ended successfully (its entries
 * no longer order anything and may be dropped). */
typedef bool (*cl_task_succeeded_fn)(void *user, uint32_t task);

/* Grows *array (elements of `size` bytes, *capacity of them) to hold
 * `need`, doubling. 0 or OUT_OF_HOST_MEMORY (then nothing changed). */
int cl_grow(void **array, uint32_t *capacity, uint64_t need, size_t size);

/* Releases everything the map holds; it is empty afterwards. */
void cl_tensormap_clear(struct cl_tensormap *map);

/* Builds the read access of `t` (a host view, inside its buffer) and of
 * the task's other reads of the same buffer: `*read` grows to the span
 * from its first to its last byte, or is set to `t`'s span when `fresh`. */
void cl_access_read_span(struct cl_access *read, const struct simpler_tensor *t, bool fresh);

/* The write access of view `t` (inside its buffer). */
void cl_access_write(struct cl_access *write, const struct simpler_tensor *t);

/* True unless the two regions are proven disjoint (rt_region_overlap). */
bool cl_access_conflict(const struct cl_access *earlier, const struct cl_access *later);

/* INVALID_ARGUMENT when the buffer of `t` overlaps a known buffer without
 * being it (same base and bytes), else 0. */
int cl_tensormap_check_buffer(const struct cl_tensormap *map, const struct simpler_tensor *t);

/*
 * The earlier tasks that `accesses` (count of them, all of one new task)
 * must wait for, merged into producers[0..*producer_count): one element
 * per task, with every reason found. The array must hold
 * cl_tensormap_entries_of(map, accesses, count) more elements (each entry
 * adds at most one). Entries of tasks that succeeded are dropped on the
 * way. Accesses of buffers not in the map find nothing.
 */
void cl_tensormap_lookup(struct cl_tensormap *map, const struct cl_access *accesses,
                         uint32_t count, cl_task_succeeded_fn succeeded, void *user,
                         struct cl_producer *producers, uint32_t *producer_count);

/* Upper bound of the producers a lookup of `accesses` can find: the
 * entries of their buffers. */
uint64_t cl_tensormap_entries_of(const struct cl_tensormap *map,
                                 const struct cl_access *accesses, uint32_t count);

/*
 * Makes room for recording `accesses` (new buffers and entries), so that
 * cl_tensormap_record cannot fail. 0 or OUT_OF_HOST_MEMORY (the map's
 * contents are unchanged either way; only capacities grow).
 */
int cl_tensormap_reserve(struct cl_tensormap *map, const struct cl_access *accesses,
                         uint32_t count);

/* Gives back what a reserve staged when its accesses will not be
 * recorded after all (capacities it grew are kept). */
void cl_tensormap_unreserve(struct cl_tensormap *map);

/* Records `accesses` after a successful reserve: adds their buffers and
 * entries, and retires the earlier entries a write of them covers. */
void cl_tensormap_record(struct cl_tensormap *map, const struct cl_access *accesses,
                         uint32_t count);

#endif /* SIMPLER_CLUSTER_HOST_TENSORMAP_H */
