/*
 * common/host_alloc.h — host allocations of simpler's host-side code, with
 * fault injection.
 *
 * Owns: the wrappers every host-side allocation outside src/simdev goes
 * through (simdev has its own, simdev_fault_inject_host), so a test can make
 * the nth one fail and prove the caller undoes its partial work. Internal:
 * tests include it directly.
 */
#ifndef SIMPLER_COMMON_HOST_ALLOC_H
#define SIMPLER_COMMON_HOST_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* calloc / malloc, except that the armed attempt returns NULL. */
void *sp_host_calloc(size_t count, size_t size);
void *sp_host_malloc(size_t bytes);

/* aligned_alloc, except that the armed attempt returns NULL. `align` is a
 * power of two; `bytes` (> 0) is rounded up to a multiple of it, as C11's
 * aligned_alloc requires. Release with free(). */
void *sp_host_aligned_alloc(size_t align, size_t bytes);

/* Asks the kernel to back the whole pages of [mem, mem + bytes) with
 * transparent huge pages where it can (every 2 MiB-aligned stretch inside
 * the range; a system whose THP setting is "never" keeps 4 KiB pages).
 * Changes no contents and commits nothing. For host memory a host build
 * writes (its scratch, its image banks): committing it on huge pages costs
 * about 0.2 us per 4 KiB on this project's virtual machines, against
 * about 6 us on 4 KiB pages (sp_host_commit). Not for device memory,
 * whose arrays would then alias in the caches (docs/performance.md). The
 * partial pages at either end are left alone, as sp_host_commit leaves
 * them. */
void sp_host_prefer_huge_pages(void *mem, size_t bytes);

/* Commits the whole pages of [mem, mem + bytes) without changing their
 * contents, so that no later write there pays a page's first touch. The
 * partial pages at either end are left alone: they may belong to another
 * allocation another thread writes. For memory the caller may write; not
 * fault-injected (neither can fail: both are best effort). */
void sp_host_commit(void *mem, size_t bytes);

/* Arms a fault: the nth (>= 1) allocation attempt from now fails, once.
 * 0 disarms. Attempts in any thread count. */
void sp_host_fault_inject(uint64_t nth);

/* Allocation attempts since the process started. */
uint64_t sp_host_alloc_count(void);

#endif /* SIMPLER_COMMON_HOST_ALLOC_H */
