/*
 * common/host_alloc.c — see host_alloc.h.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/host_alloc.h"

static _Atomic uint64_t g_countdown; /* 0 = disarmed */
static _Atomic uint64_t g_attempts;

/* Counts one attempt; true for the armed one. A compare-and-swap, so two
 * threads can never both take the countdown from 1 to 0. */
static bool host_fault(void)
{
    atomic_fetch_add_explicit(&g_attempts, 1, memory_order_relaxed);
    uint64_t left = atomic_load_explicit(&g_countdown, memory_order_relaxed);
    while (left != 0) {
        if (atomic_compare_exchange_weak_explicit(&g_countdown, &left, left - 1,
                                                  memory_order_relaxed, memory_order_relaxed))
            return left == 1;
    }
    return false;
}

void *sp_host_calloc(size_t count, size_t size)
{
    return host_fault() ? NULL : calloc(count, size);
}

void *sp_host_malloc(size_t bytes)
{
    return host_fault() ? NULL : malloc(bytes);
}

void *sp_host_aligned_alloc(size_t align, size_t bytes)
{
    if (host_fault())
        return NULL;
    if (bytes > SIZE_MAX - (align - 1))
        return NULL;
    return aligned_alloc(align, (bytes + align - 1) & ~(align - 1));
}

/* The whole pages of [mem, mem + bytes): [*first, *end); false when
 * there is none. */
static bool whole_pages(void *mem, size_t bytes, uintptr_t *first, uintptr_t *end,
                        uintptr_t *page_bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return false;
    *page_bytes = (uintptr_t)page;
    *first = ((uintptr_t)mem + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    *end = ((uintptr_t)mem + bytes) & ~((uintptr_t)page - 1);
    return *end > *first;
}

void sp_host_prefer_huge_pages(void *mem, size_t bytes)
{
    uintptr_t first, end, page;
    if (!whole_pages(mem, bytes, &first, &end, &page))
        return;
#ifdef MADV_HUGEPAGE
    /* Best effort: refused (THP "never", an old kernel), 4 KiB pages. */
    (void)madvise((void *)first, end - first, MADV_HUGEPAGE);
#endif
}

/* MADV_POPULATE_WRITE where the kernel has it (Linux 5.14), then one
 * write per page. On 4 KiB pages the write is needed even after the
 * madvise: under a hypervisor that backs guest memory lazily, a populated
 * page still costs its first write about 6 us (the hypervisor's own
 * fault, no guest fault to see), measured on this project's virtual
 * machines: madvise 0.5-0.9 us a page, then 5-6 us at the first write,
 * after which a write costs 30 ns. On huge pages (a range given to
 * sp_host_prefer_huge_pages first) the madvise costs about 0.2 us per
 * 4 KiB, zeroing included, and the first write 30-40 ns (a 256 MiB test,
 * 2026-12-04). */
void sp_host_commit(void *mem, size_t bytes)
{
    uintptr_t first, end, page;
    if (!whole_pages(mem, bytes, &first, &end, &page))
        return;
#ifdef MADV_POPULATE_WRITE
    /* Best effort: without it the writes below fault the pages in. */
    (void)madvise((void *)first, end - first, MADV_POPULATE_WRITE);
#endif
    for (uintptr_t at = first; at < end; at += page) {
        volatile unsigned char *byte = (volatile unsigned char *)at;
        *byte = *byte;
    }
}

void sp_host_fault_inject(uint64_t nth)
{
    atomic_store_explicit(&g_countdown, nth, memory_order_relaxed);
}

uint64_t sp_host_alloc_count(void)
{
    return atomic_load_explicit(&g_attempts, memory_order_relaxed);
}
