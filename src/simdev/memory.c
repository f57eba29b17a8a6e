/*
 * simdev/memory.c — device memory: allocation, accounting, synchronous copies.
 *
 * Owns: the table of live allocations of each device (sorted by address, so a
 * copy's device range can be checked against the allocation holding it) and
 * the exact accounting (in use, high-water mark, live count). Device memory
 * is host memory, but only device code and explicit copies touch it.
 * Like a real device's memory it is resident from the allocation on: its
 * pages are committed here, so no run pays a page fault on first touch.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "simdev/internal.h"

#define SD_MEM_ALIGN 64

/* Index of the first allocation whose base is > addr. Caller must hold
 * mem_lock. */
static size_t alloc_upper_bound(const struct sd_device *dev, uintptr_t addr)
{
    size_t lo = 0, hi = dev->alloc_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (dev->allocs[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Caller must hold mem_lock. */
static int range_inside_locked(const struct sd_device *dev, uintptr_t addr, size_t bytes)
{
    size_t i = alloc_upper_bound(dev, addr);
    if (i == 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    const struct sd_alloc *a = &dev->allocs[i - 1];
    if (addr - a->base > a->bytes || bytes > a->bytes - (addr - a->base))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    return 0;
}

int sd_memory_check_range(struct sd_device *dev, const void *ptr, size_t bytes)
{
    if (!ptr)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&dev->mem_lock);
    int rc = range_inside_locked(dev, (uintptr_t)ptr, bytes);
    pthread_mutex_unlock(&dev->mem_lock);
    return rc;
}

int sd_memory_check_copy(struct sd_device *dev, void *dst, const void *src, size_t bytes,
                         enum simdev_copy_kind kind)
{
    if (!dst || !src || bytes == 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    switch (kind) {
    case SIMDEV_COPY_HOST_TO_DEVICE:
        return sd_memory_check_range(dev, dst, bytes);
    case SIMDEV_COPY_DEVICE_TO_HOST:
        return sd_memory_check_range(dev, src, bytes);
    case SIMDEV_COPY_DEVICE_TO_DEVICE: {
        int rc = sd_memory_check_range(dev, dst, bytes);
        return rc ? rc : sd_memory_check_range(dev, src, bytes);
    }
    }
    return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
}

/* Commits the whole pages of [mem, mem + bytes) without changing their
 * contents: MADV_POPULATE_WRITE where the kernel has it (Linux 5.14), then
 * one write per page. The partial pages at either end belong to the host
 * allocator's block and are resident already or faulted by the first write.
 * Without it the first run on a fresh context faults in its ring slots one
 * page at a time on the orchestrator's CPU: 3-4% of the CPU of a 64 us
 * stencil run (docs/performance.md). The write is needed even after the
 * madvise: under a hypervisor that backs guest memory lazily, a populated
 * page still costs its first write about 6 us (the hypervisor's own fault,
 * no guest fault to see), measured on this project's virtual machines:
 * madvise 0.9 us a page, then 6.3 us at the first write; madvise and the
 * write together 5.5 us, after which a write costs 31 ns. Paid here, once,
 * rather than by a run's orchestrator at its first lap of the ring. */
static void commit_pages(void *mem, size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return;
    uintptr_t first = ((uintptr_t)mem + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t end = ((uintptr_t)mem + bytes) & ~((uintptr_t)page - 1);
    if (end <= first)
        return;
#ifdef MADV_POPULATE_WRITE
    /* Best effort: without it the writes below fault the pages in. */
    (void)madvise((void *)first, end - first, MADV_POPULATE_WRITE);
#endif
    for (uintptr_t at = first; at < end; at += (uintptr_t)page) {
        volatile unsigned char *byte = (volatile unsigned char *)at;
        *byte = *byte;
    }
}

int simdev_malloc(void **dev_ptr, size_t bytes)
{
    return simdev_malloc_owned(dev_ptr, bytes, 0);
}

int simdev_malloc_owned(void **dev_ptr, size_t bytes, uint32_t owner)
{
    if (!dev_ptr || bytes == 0 || owner >= SIMDEV_MAX_MEM_OWNERS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev;
    int rc = sd_device_current(&dev);
    if (rc != 0)
        return rc;
    rc = sd_capture_check_alloc();
    if (rc != 0)
        return rc;
    rc = sd_fault_check(dev, SIMDEV_OP_MALLOC);
    if (rc != 0)
        return rc;

    pthread_mutex_lock(&dev->mem_lock);
    /* The second test keeps the 64-byte rounding below from wrapping. */
    if (bytes > dev->config.memory_bytes - dev->in_use || bytes > SIZE_MAX - (SD_MEM_ALIGN - 1)) {
        pthread_mutex_unlock(&dev->mem_lock);
        return PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY;
    }
    if (dev->alloc_count == dev->alloc_cap) {
        size_t cap = dev->alloc_cap ? dev->alloc_cap * 2 : 64;
        struct sd_alloc *grown = sd_realloc(dev->allocs, cap * sizeof(*grown));
        if (!grown) {
            pthread_mutex_unlock(&dev->mem_lock);
            return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        }
        dev->allocs = grown;
        dev->alloc_cap = cap;
    }
    size_t rounded = (bytes + SD_MEM_ALIGN - 1) & ~(size_t)(SD_MEM_ALIGN - 1);
    void *mem = sd_aligned_alloc(SD_MEM_ALIGN, rounded);
    if (!mem) {
        pthread_mutex_unlock(&dev->mem_lock);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    /* Before the block is listed: once it is, a reset may free it. */
    commit_pages(mem, rounded);
    size_t at = alloc_upper_bound(dev, (uintptr_t)mem);
    memmove(&dev->allocs[at + 1], &dev->allocs[at], (dev->alloc_count - at) * sizeof(*dev->allocs));
    dev->allocs[at] = (struct sd_alloc){.base = (uintptr_t)mem, .bytes = bytes, .owner = owner};
    dev->alloc_count++;
    dev->in_use += bytes;
    dev->owner_in_use[owner] += bytes;
    if (dev->in_use > dev->high_water)
        dev->high_water = dev->in_use;
    pthread_mutex_unlock(&dev->mem_lock);
    sd_count(dev, SIMDEV_OP_MALLOC);
    *dev_ptr = mem;
    return 0;
}

/* Keeps a block freed after a loss until the reset (see sd_device
 * graveyard). Caller holds dev->mem_lock. False when no room could be made:
 * then the block is freed at once, as before a loss. */
static bool bury(struct sd_device *dev, void *block)
{
    if (dev->graveyard_count == dev->graveyard_cap) {
        size_t cap = dev->graveyard_cap ? 2 * dev->graveyard_cap : 16;
        void **grown = realloc(dev->graveyard, cap * sizeof *grown);
        if (!grown)
            return false;
        dev->graveyard = grown;
        dev->graveyard_cap = cap;
    }
    dev->graveyard[dev->graveyard_count++] = block;
    return true;
}

/* Removal does not need a live device: freeing works after a loss (the
 * memory itself is released by the reset). */
int simdev_free(void *dev_ptr)
{
    if (!dev_ptr)
        return 0;
    int id;
    simdev_get_device(&id);
    struct sd_device *dev = sd_device_peek(id);
    pthread_mutex_lock(&dev->mem_lock);
    size_t i = alloc_upper_bound(dev, (uintptr_t)dev_ptr);
    if (i == 0 || dev->allocs[i - 1].base != (uintptr_t)dev_ptr) {
        pthread_mutex_unlock(&dev->mem_lock);
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
    int rc = sd_fault_check(dev, SIMDEV_OP_FREE);
    if (rc != 0) {
        pthread_mutex_unlock(&dev->mem_lock);
        return rc;
    }
    dev->in_use -= dev->allocs[i - 1].bytes;
    dev->owner_in_use[dev->allocs[i - 1].owner] -= dev->allocs[i - 1].bytes;
    memmove(&dev->allocs[i - 1], &dev->allocs[i], (dev->alloc_count - i) * sizeof(*dev->allocs));
    dev->alloc_count--;
    if (sd_device_lost(dev) && bury(dev, dev_ptr)) {
        pthread_mutex_unlock(&dev->mem_lock);
        sd_count(dev, SIMDEV_OP_FREE);
        return 0;
    }
    pthread_mutex_unlock(&dev->mem_lock);
    free(dev_ptr);
    sd_count(dev, SIMDEV_OP_FREE);
    return 0;
}

int simdev_mem_get_info(int device, struct simdev_mem_info *out)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev || !out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct simdev_config config;
    simdev_device_get_config(device, &config);
    pthread_mutex_lock(&dev->mem_lock);
    out->capacity = config.memory_bytes;
    out->in_use = dev->in_use;
    out->high_water = dev->high_water;
    out->allocations = dev->alloc_count;
    pthread_mutex_unlock(&dev->mem_lock);
    return 0;
}

int simdev_mem_owner_in_use(int device, uint32_t owner, uint64_t *bytes)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev || !bytes || owner >= SIMDEV_MAX_MEM_OWNERS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&dev->mem_lock);
    *bytes = dev->owner_in_use[owner];
    pthread_mutex_unlock(&dev->mem_lock);
    return 0;
}

void sd_memory_release_all(struct sd_device *dev)
{
    pthread_mutex_lock(&dev->mem_lock);
    for (size_t i = 0; i < dev->alloc_count; i++)
        free((void *)dev->allocs[i].base);
    free(dev->allocs);
    dev->allocs = NULL;
    dev->alloc_count = dev->alloc_cap = 0;
    for (size_t i = 0; i < dev->graveyard_count; i++)
        free(dev->graveyard[i]);
    free(dev->graveyard);
    dev->graveyard = NULL;
    dev->graveyard_count = dev->graveyard_cap = 0;
    dev->in_use = dev->high_water = 0;
    memset(dev->owner_in_use, 0, sizeof(dev->owner_in_use));
    pthread_mutex_unlock(&dev->mem_lock);
}

int simdev_memcpy(void *dst, const void *src, size_t bytes, enum simdev_copy_kind kind)
{
    if (!dst || !src || bytes == 0 || kind < SIMDEV_COPY_HOST_TO_DEVICE ||
        kind > SIMDEV_COPY_DEVICE_TO_DEVICE)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev;
    int rc = sd_device_current(&dev);
    if (rc != 0)
        return rc;
    rc = sd_memory_check_copy(dev, dst, src, bytes, kind);
    if (rc != 0)
        return rc;
    rc = sd_capture_check_sync();
    if (rc != 0)
        return rc;
    rc = sd_fault_check(dev, SIMDEV_OP_COPY);
    if (rc != 0)
        return rc;
    memmove(dst, src, bytes);
    sd_count(dev, SIMDEV_OP_COPY);
    return 0;
}
