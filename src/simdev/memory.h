/*
 * simdev/memory.h — device memory: allocation, accounting, range checks
 * (memory.c).
 *
 * Owns: the table of a device's live allocations (struct sd_mem_state)
 * and the checks the copy and memset paths make against it. Must not know
 * streams: an asynchronous copy is the stream's, only its range is checked
 * here.
 */
#ifndef SIMDEV_MEMORY_H
#define SIMDEV_MEMORY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "simpler/device.h"

struct sd_device;

struct sd_alloc {
    uintptr_t base;
    size_t bytes;
    uint32_t owner;
};

/* A device's memory. Caller must hold `lock` for every field. */
struct sd_mem_state {
    pthread_mutex_t lock;
    struct sd_alloc *allocs; /* sorted by base */
    size_t alloc_count;
    size_t alloc_cap;
    /* Blocks freed after the device was lost: a hung device function may
     * still write them, so they are released only by the reset, once every
     * device function has returned. */
    void **graveyard;
    size_t graveyard_count, graveyard_cap;
    uint64_t in_use;
    uint64_t high_water;
    uint64_t owner_in_use[SIMDEV_MAX_MEM_OWNERS];
};

/* Initialises the lock of a device's memory (once, with the device table). */
void sd_memory_init(struct sd_device *dev);
/* Frees every allocation and buried block (reset). Caller must hold nothing. */
void sd_memory_release_all(struct sd_device *dev);
/* INVALID_ARGUMENT unless [ptr, ptr+bytes) lies inside one live allocation. */
int sd_memory_check_range(struct sd_device *dev, const void *ptr, size_t bytes);
/* Checks the device side(s) of a copy of `kind`. */
int sd_memory_check_copy(struct sd_device *dev, void *dst, const void *src, size_t bytes,
                         enum simdev_copy_kind kind);

#endif /* SIMDEV_MEMORY_H */
