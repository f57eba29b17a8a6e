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

/* Arms a fault: the nth (>= 1) allocation attempt from now fails, once.
 * 0 disarms. Attempts in any thread count. */
void sp_host_fault_inject(uint64_t nth);

/* Allocation attempts since the process started. */
uint64_t sp_host_alloc_count(void);

#endif /* SIMPLER_COMMON_HOST_ALLOC_H */
