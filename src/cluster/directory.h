/*
 * cluster/directory.h — rank 0's directory of valid copies: which byte
 * ranges of which host buffer each other rank holds, as of now, in its
 * mirror of that buffer (docs/cluster.md section 9, "Valid copies").
 *
 * Owns: the run's buffer ids (rank 0 names each host buffer a remote run
 * touches by a small id, the same on every rank for the run) and, per
 * buffer and rank, a sorted set of disjoint valid ranges. Knows nothing
 * of MPI, tasks or threads: the caller holds the cluster lock around
 * every call. Rank 0's own buffers are the home copy and always valid;
 * they are not in the directory.
 *
 * Every answer errs one way: a range the directory calls valid is valid;
 * when memory runs short, a mark is dropped and an invalidation drops a
 * whole range, so the directory forgets, never invents. A rank's epoch
 * moves when its whole set is forgotten (a request to it could not be
 * sent), so requests packed against the old state can be told.
 */
#ifndef SIMPLER_CLUSTER_DIRECTORY_H
#define SIMPLER_CLUSTER_DIRECTORY_H

#include <stdbool.h>
#include <stdint.h>

struct cl_directory;

/* A directory for `ranks` ranks (rank 0 included, never tracked). 0 or
 * OUT_OF_HOST_MEMORY. */
int cl_dir_create(int ranks, struct cl_directory **out);
void cl_dir_destroy(struct cl_directory *d);

/* The id of the buffer at `base` of `bytes`, given at its first use in the
 * run (0, 1, ...). 0 or OUT_OF_HOST_MEMORY. */
int cl_dir_buffer_id(struct cl_directory *d, uint64_t base, uint64_t bytes, uint32_t *id);

/* The id of a buffer already named, or false. */
bool cl_dir_find(const struct cl_directory *d, uint64_t base, uint32_t *id);

/* True when `rank` holds bytes [lo, hi) of buffer `id` (lo < hi). */
bool cl_dir_valid(const struct cl_directory *d, uint32_t id, int rank, uint64_t lo, uint64_t hi);

/* `rank` now holds [lo, hi) of buffer `id`. Best effort: dropped when
 * memory runs short. */
void cl_dir_mark(struct cl_directory *d, uint32_t id, int rank, uint64_t lo, uint64_t hi);

/* `rank` no longer holds [lo, hi) of buffer `id`. Never fails. */
void cl_dir_invalidate(struct cl_directory *d, uint32_t id, int rank, uint64_t lo, uint64_t hi);

/* [lo, hi) of buffer `id` was written on `writer` (-1: rank 0): every other
 * rank's copy of it is stale. */
void cl_dir_written(struct cl_directory *d, uint32_t id, int writer, uint64_t lo, uint64_t hi);

/* Forgets all `rank` holds and moves its epoch. */
void cl_dir_forget_rank(struct cl_directory *d, int rank);
uint64_t cl_dir_epoch(const struct cl_directory *d, int rank);

#endif /* SIMPLER_CLUSTER_DIRECTORY_H */
