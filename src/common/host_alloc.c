/*
 * common/host_alloc.c — see host_alloc.h.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

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

void sp_host_fault_inject(uint64_t nth)
{
    atomic_store_explicit(&g_countdown, nth, memory_order_relaxed);
}

uint64_t sp_host_alloc_count(void)
{
    return atomic_load_explicit(&g_attempts, memory_order_relaxed);
}
