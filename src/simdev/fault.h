/*
 * simdev/fault.h — test-only fault injection and per-kind op counters
 * (fault.c).
 *
 * Owns: the host-resource wrappers every simdev allocation and thread
 * creation goes through, the armed faults and performed-op counters each
 * device carries (struct sd_fault_state), and the checks the enqueue paths
 * make. Must not know what an op does: callers name its kind.
 */
#ifndef SIMDEV_FAULT_H
#define SIMDEV_FAULT_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "simpler/simdev_fault.h"

struct sd_device;

/* ------------------------------------------------------- host resources */

/*
 * Every host allocation and thread creation simdev makes goes through these,
 * so a test can make any one of them fail (simdev_fault_inject_host) and
 * prove the caller undoes its partial work. sd_host_fault counts the attempt
 * and says whether it must fail.
 */
bool sd_host_fault(void);
/* Between these two, the calling thread's attempts are counted once, at
 * the flush (a batch's: one write of the shared counter, not one per
 * allocation). Whether an attempt fails is still decided at the attempt.
 * Not nested. */
void sd_host_attempts_defer(void);
void sd_host_attempts_flush(void);
static inline void *sd_malloc(size_t bytes)
{
    return sd_host_fault() ? NULL : malloc(bytes);
}
static inline void *sd_calloc(size_t count, size_t size)
{
    return sd_host_fault() ? NULL : calloc(count, size);
}
static inline void *sd_realloc(void *ptr, size_t bytes)
{
    return sd_host_fault() ? NULL : realloc(ptr, bytes);
}
static inline void *sd_aligned_alloc(size_t alignment, size_t bytes)
{
    return sd_host_fault() ? NULL : aligned_alloc(alignment, bytes);
}
static inline int sd_thread_create(pthread_t *thread, void *(*main)(void *), void *arg)
{
    return sd_host_fault() ? EAGAIN : pthread_create(thread, NULL, main, arg);
}

/* ---------------------------------------------------------- device faults */

/* A device's armed faults and op counters, by op kind (simdev_fault.h). */
struct sd_fault_state {
    _Atomic int64_t countdown[SIMDEV_OP_KIND_COUNT];
    _Atomic int code[SIMDEV_OP_KIND_COUNT];
    _Atomic uint64_t performed[SIMDEV_OP_KIND_COUNT];
    _Atomic int64_t exec_countdown[SIMDEV_OP_KIND_COUNT];
    _Atomic int exec_code[SIMDEV_OP_KIND_COUNT];
};

/* Fault injection: 0 to go ahead, or the armed code. */
int sd_fault_check(struct sd_device *dev, enum simdev_op_kind kind);
/* The first steps of creating a device object of `bytes` on the current
 * device (an event, a stream): the current device, the armed fault of
 * `kind`, a zeroed host allocation. On success writes both outputs; on
 * failure (its code) writes neither and allocates nothing. */
int sd_object_new(enum simdev_op_kind kind, size_t bytes, struct sd_device **dev, void **object);
/* Counts one performed op of `kind`; sd_count_n, `n` of them. */
void sd_count(struct sd_device *dev, enum simdev_op_kind kind);
void sd_count_n(struct sd_device *dev, enum simdev_op_kind kind, uint64_t n);
/* Disarms every fault of the device and zeroes its counters (reset). */
void sd_fault_reset(struct sd_device *dev);
/* Execution faults: 0, or the code the op of `kind` being queued now must
 * fail with when it executes. */
int sd_fault_exec_take(struct sd_device *dev, enum simdev_op_kind kind);

#endif /* SIMDEV_FAULT_H */
