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

#include "simdev/capture.h"
#include "simdev/device.h"
#include "simdev/fault.h"
#include "simdev/memory.h"

#define SD_MEM_ALIGN 64

void sd_memory_init(struct sd_device *dev)
{
    sd_mutex_init(&dev->mem.lock);
}

/* Index of the first allocation whose base is > addr. Caller must hold
 * dev->mem.lock. */
static size_t alloc_upper_bound(const struct sd_mem_state *mem, uintptr_t addr)
{
    size_t lo = 0, hi = mem->alloc_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (mem->allocs[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Caller must hold dev->mem.lock. */
static int range_inside_locked(const struct sd_mem_state *mem, uintptr_t addr, size_t bytes)
{
    size_t i = alloc_upper_bound(mem, addr);
    if (i == 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    const struct sd_alloc *a = &mem->allocs[i - 1];
    if (addr - a->base > a->bytes || bytes > a->bytes - (addr - a->base))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    return 0;
}

int sd_memory_check_range(struct sd_device *dev, const void *ptr, size_t bytes)
{
    if (!ptr)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_mem_state *mem = &dev->mem;
    pthread_mutex_lock(&mem->lock);
    int rc = range_inside_locked(mem, (uintptr_t)ptr, bytes);
    pthread_mutex_unlock(&mem->lock);
    return rc;
}

int sd_memory_check_copy(struct sd_device *dev, void *dst, const void *src, size_t bytes,
                         enum simdev_copy_kind kind)
{
    if (!dst || !src || bytes == 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    switch (kind) {
    case SIMDEV_COPY_HOST_TO_DEVICE:
    case SIMDEV_COPY_HOST_TO_DEVICE_STAGED:
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

    struct sd_mem_state *mem = &dev->mem;
    pthread_mutex_lock(&mem->lock);
    /* The second test keeps the 64-byte rounding below from wrapping. */
    if (bytes > dev->config.memory_bytes - mem->in_use || bytes > SIZE_MAX - (SD_MEM_ALIGN - 1)) {
        pthread_mutex_unlock(&mem->lock);
        return PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY;
    }
    if (mem->alloc_count == mem->alloc_cap) {
        size_t cap = mem->alloc_cap ? mem->alloc_cap * 2 : 64;
        struct sd_alloc *grown = sd_realloc(mem->allocs, cap * sizeof(*grown));
        if (!grown) {
            pthread_mutex_unlock(&mem->lock);
            return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        }
        mem->allocs = grown;
        mem->alloc_cap = cap;
    }
    size_t rounded = (bytes + SD_MEM_ALIGN - 1) & ~(size_t)(SD_MEM_ALIGN - 1);
    void *block = sd_aligned_alloc(SD_MEM_ALIGN, rounded);
    if (!block) {
        pthread_mutex_unlock(&mem->lock);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    /* Before the block is listed: once it is, a reset may free it. */
    commit_pages(block, rounded);
    size_t at = alloc_upper_bound(mem, (uintptr_t)block);
    memmove(&mem->allocs[at + 1], &mem->allocs[at], (mem->alloc_count - at) * sizeof(*mem->allocs));
    mem->allocs[at] = (struct sd_alloc){.base = (uintptr_t)block, .bytes = bytes, .owner = owner};
    mem->alloc_count++;
    mem->in_use += bytes;
    mem->owner_in_use[owner] += bytes;
    if (mem->in_use > mem->high_water)
        mem->high_water = mem->in_use;
    pthread_mutex_unlock(&mem->lock);
    sd_count(dev, SIMDEV_OP_MALLOC);
    *dev_ptr = block;
    return 0;
}

/* Keeps a block freed after a loss until the reset (see sd_mem_state
 * graveyard). Caller holds dev->mem.lock. False when no room could be made:
 * then the block is freed at once, as before a loss. */
static bool bury(struct sd_mem_state *mem, void *block)
{
    if (mem->graveyard_count == mem->graveyard_cap) {
        size_t cap = mem->graveyard_cap ? 2 * mem->graveyard_cap : 16;
        void **grown = realloc(mem->graveyard, cap * sizeof *grown);
        if (!grown)
            return false;
        mem->graveyard = grown;
        mem->graveyard_cap = cap;
    }
    mem->graveyard[mem->graveyard_count++] = block;
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
    struct sd_mem_state *mem = &dev->mem;
    pthread_mutex_lock(&mem->lock);
    size_t i = alloc_upper_bound(mem, (uintptr_t)dev_ptr);
    if (i == 0 || mem->allocs[i - 1].base != (uintptr_t)dev_ptr) {
        pthread_mutex_unlock(&mem->lock);
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
    int rc = sd_fault_check(dev, SIMDEV_OP_FREE);
    if (rc != 0) {
        pthread_mutex_unlock(&mem->lock);
        return rc;
    }
    mem->in_use -= mem->allocs[i - 1].bytes;
    mem->owner_in_use[mem->allocs[i - 1].owner] -= mem->allocs[i - 1].bytes;
    memmove(&mem->allocs[i - 1], &mem->allocs[i], (mem->alloc_count - i) * sizeof(*mem->allocs));
    mem->alloc_count--;
    if (sd_device_lost(dev) && bury(mem, dev_ptr)) {
        pthread_mutex_unlock(&mem->lock);
        sd_count(dev, SIMDEV_OP_FREE);
        return 0;
    }
    pthread_mutex_unlock(&mem->lock);
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
    struct sd_mem_state *mem = &dev->mem;
    pthread_mutex_lock(&mem->lock);
    out->capacity = config.memory_bytes;
    out->in_use = mem->in_use;
    out->high_water = mem->high_water;
    out->allocations = mem->alloc_count;
    pthread_mutex_unlock(&mem->lock);
    return 0;
}

int simdev_mem_owner_in_use(int device, uint32_t owner, uint64_t *bytes)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev || !bytes || owner >= SIMDEV_MAX_MEM_OWNERS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_mem_state *mem = &dev->mem;
    pthread_mutex_lock(&mem->lock);
    *bytes = mem->owner_in_use[owner];
    pthread_mutex_unlock(&mem->lock);
    return 0;
}

void sd_memory_release_all(struct sd_device *dev)
{
    struct sd_mem_state *mem = &dev->mem;
    pthread_mutex_lock(&mem->lock);
    for (size_t i = 0; i < mem->alloc_count; i++)
        free((void *)mem->allocs[i].base);
    free(mem->allocs);
    mem->allocs = NULL;
    mem->alloc_count = mem->alloc_cap = 0;
    for (size_t i = 0; i < mem->graveyard_count; i++)
        free(mem->graveyard[i]);
    free(mem->graveyard);
    mem->graveyard = NULL;
    mem->graveyard_count = mem->graveyard_cap = 0;
    mem->in_use = mem->high_water = 0;
    memset(mem->owner_in_use, 0, sizeof(mem->owner_in_use));
    pthread_mutex_unlock(&mem->lock);
}

int simdev_memcpy(void *dst, const void *src, size_t bytes, enum simdev_copy_kind kind)
{
    if (!dst || !src || bytes == 0 || kind < SIMDEV_COPY_HOST_TO_DEVICE ||
        kind > SIMDEV_COPY_HOST_TO_DEVICE_STAGED)
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
