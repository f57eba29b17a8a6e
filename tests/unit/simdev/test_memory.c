/*
 * test_memory.c — device memory: allocation, accounting and copies.
 *
 * Owns: simdev_malloc/free/mem_get_info, the synchronous simdev_memcpy in all
 * three directions, and the asynchronous copy/memset ops on a stream.
 * Never dereferences a device pointer: every byte is checked through a copy.
 *
 * Objects that device work points at (gates, logs, counters, async copy
 * buffers) are static: a failed assertion leaves the test's frame, and work
 * still queued must not be left pointing into a dead stack.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_support.h"

#define MIB (1024u * 1024u)
#define CAPACITY (64u * MIB) /* ts_device_setup's memory_bytes */

static void *const SENTINEL = (void *)(uintptr_t)0x5e5e5e5e;

static struct simdev_mem_info mem_info(void)
{
    struct simdev_mem_info info;
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    return info;
}

static void assert_mem(uint64_t in_use, uint64_t high_water, uint64_t allocations)
{
    struct simdev_mem_info info = mem_info();
    assert_int_equal(info.capacity, CAPACITY); /* other: the configuration was not applied */
    assert_int_equal(info.in_use, in_use);
    assert_int_equal(info.high_water, high_water);
    assert_int_equal(info.allocations, allocations);
}

static void assert_mem_unchanged(const struct simdev_mem_info *before)
{
    struct simdev_mem_info now = mem_info();
    assert_int_equal(now.capacity, before->capacity);
    assert_int_equal(now.in_use, before->in_use);
    assert_int_equal(now.high_water, before->high_water);
    assert_int_equal(now.allocations, before->allocations);
}

static void fill_pattern(unsigned char *bytes, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        bytes[i] = (unsigned char)(i * 31u + seed);
}

/* ------------------------------------------------------------- accounting */

static void accounting_is_exact_after_each_step_of_mixed_alloc_and_free(void **state)
{
    (void)state;
    void *a, *b, *c, *d;
    assert_mem(0, 0, 0); /* nonzero: a fresh device starts with memory in use */

    assert_int_equal(simdev_malloc(&a, 4096), 0);
    assert_mem(4096, 4096, 1);
    assert_int_equal(simdev_malloc(&b, 8192), 0);
    assert_mem(12288, 12288, 2);
    assert_int_equal(simdev_free(a), 0);
    assert_mem(8192, 12288, 1); /* high_water 8192: it tracks in_use instead of its maximum */
    assert_int_equal(simdev_malloc(&c, 1024), 0);
    assert_mem(9216, 12288, 2);
    assert_int_equal(simdev_malloc(&d, 16384), 0);
    assert_mem(25600, 25600, 3);
    assert_int_equal(simdev_free(b), 0);
    assert_mem(17408, 25600, 2);
    assert_int_equal(simdev_free(d), 0);
    assert_mem(1024, 25600, 1);
    assert_int_equal(simdev_free(c), 0);
    assert_mem(0, 25600, 0); /* in_use > 0: a free was not accounted */
}

static void allocations_are_64_byte_aligned_and_distinct(void **state)
{
    (void)state;
    void *p[5];
    const size_t sizes[5] = {1, 63, 64, 65, 1000};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(simdev_malloc(&p[i], sizes[i]), 0);
        assert_int_equal((uintptr_t)p[i] % 64, 0); /* nonzero: misaligned device memory */
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(p[i], p[j]); /* equal: two live allocations alias */
    }
    for (int i = 0; i < 5; i++)
        assert_int_equal(simdev_free(p[i]), 0);
    assert_mem(0, mem_info().high_water, 0);
}

/*
 * Reading: in_use counts the bytes requested, because the header defines
 * OUT_OF_DEVICE_MEMORY as "in_use + bytes would pass capacity".
 */
static void accounting_counts_the_requested_bytes(void **state)
{
    (void)state;
    void *p;
    assert_int_equal(simdev_malloc(&p, 100), 0);
    assert_mem(100, 100, 1); /* 128: alignment padding is accounted as in use */
    assert_int_equal(simdev_free(p), 0);
    assert_mem(0, 100, 0);
}

static void malloc_beyond_capacity_fails_with_out_of_device_memory_and_changes_nothing(
    void **state)
{
    (void)state;
    void *half, *rest, *p = SENTINEL;

    assert_int_equal(simdev_malloc(&p, (size_t)CAPACITY + 1), PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY);
    assert_ptr_equal(p, SENTINEL); /* written: an output changed on failure */
    assert_mem(0, 0, 0);           /* high_water > 0: a failed allocation was accounted */

    assert_int_equal(simdev_malloc(&half, CAPACITY / 2), 0);
    assert_int_equal(simdev_malloc(&p, CAPACITY / 2 + 64), PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY);
    assert_ptr_equal(p, SENTINEL);
    assert_mem(CAPACITY / 2, CAPACITY / 2, 1);

    /* filling the device exactly to capacity is allowed: only passing it fails */
    assert_int_equal(simdev_malloc(&rest, CAPACITY / 2), 0);
    assert_mem(CAPACITY, CAPACITY, 2);
    assert_int_equal(simdev_malloc(&p, 1), PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY);
    assert_ptr_equal(p, SENTINEL);
    assert_mem(CAPACITY, CAPACITY, 2);

    /* space given back can be allocated again */
    assert_int_equal(simdev_free(half), 0);
    assert_int_equal(simdev_malloc(&half, CAPACITY / 2), 0);
    assert_mem(CAPACITY, CAPACITY, 2);
    assert_int_equal(simdev_free(half), 0);
    assert_int_equal(simdev_free(rest), 0);
    assert_mem(0, CAPACITY, 0);
}

static void malloc_of_zero_bytes_or_to_null_is_invalid_argument(void **state)
{
    (void)state;
    void *p = SENTINEL;
    assert_int_equal(simdev_malloc(&p, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_ptr_equal(p, SENTINEL);
    assert_int_equal(simdev_malloc(NULL, 64), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* argument checks come before capacity: NULL out with an impossible size */
    assert_int_equal(simdev_malloc(NULL, (size_t)CAPACITY + 1), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_mem(0, 0, 0);
    uint64_t mallocs = 99;
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_MALLOC, &mallocs), 0);
    assert_int_equal(mallocs, 0); /* 1+: a rejected call was counted as performed */
}

static void free_of_a_foreign_pointer_is_invalid_argument_and_changes_nothing(void **state)
{
    (void)state;
    void *dev;
    unsigned char host_stack[64];
    void *host_heap = malloc(64);
    assert_non_null(host_heap);

    assert_int_equal(simdev_malloc(&dev, 4096), 0);
    struct simdev_mem_info before = mem_info();

    assert_int_equal(simdev_free(host_stack), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_free(host_heap), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* an interior pointer is not the allocation */
    assert_int_equal(simdev_free((char *)dev + 64), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_mem_unchanged(&before);
    uint64_t frees = 99;
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_FREE, &frees), 0);
    assert_int_equal(frees, 0); /* 1+: a rejected free was performed */

    assert_int_equal(simdev_free(dev), 0);
    /* a second free of the same pointer is foreign now */
    assert_int_equal(simdev_free(dev), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_mem(0, 4096, 0);
    free(host_heap);
}

static void free_of_another_devices_allocation_is_invalid_argument(void **state)
{
    (void)state;
    void *other;
    assert_int_equal(simdev_device_reset(1), 0);
    assert_int_equal(simdev_set_device(1), 0);
    assert_int_equal(simdev_malloc(&other, 4096), 0);
    assert_int_equal(simdev_set_device(0), 0);

    assert_mem(0, 0, 0); /* nonzero: device 1's allocation was accounted on device 0 */
    assert_int_equal(simdev_free(other), PTO_RUNTIME_ERR_INVALID_ARGUMENT);

    struct simdev_mem_info info1;
    assert_int_equal(simdev_mem_get_info(1, &info1), 0);
    assert_int_equal(info1.in_use, 4096); /* 0: device 0 freed device 1's memory */
    assert_int_equal(info1.allocations, 1);

    assert_int_equal(simdev_set_device(1), 0);
    assert_int_equal(simdev_free(other), 0);
    assert_int_equal(simdev_mem_get_info(1, &info1), 0);
    assert_int_equal(info1.in_use, 0);
    assert_int_equal(simdev_set_device(0), 0);
    assert_int_equal(simdev_device_reset(1), 0);
}

static void free_of_null_is_a_no_op_returning_zero(void **state)
{
    (void)state;
    void *dev;
    assert_int_equal(simdev_malloc(&dev, 128), 0);
    assert_int_equal(simdev_free(NULL), 0);
    assert_mem(128, 128, 1); /* changed: free(NULL) released something */
    assert_int_equal(simdev_free(dev), 0);
}

static void mem_get_info_rejects_bad_arguments(void **state)
{
    (void)state;
    struct simdev_mem_info info;
    assert_int_equal(simdev_mem_get_info(0, NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_mem_get_info(-1, &info), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_mem_get_info(SIMDEV_MAX_DEVICES, &info),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
}

static void reset_releases_every_allocation_and_clears_high_water(void **state)
{
    (void)state;
    void *p;
    assert_int_equal(simdev_malloc(&p, 8192), 0);
    assert_int_equal(simdev_device_reset(0), 0);
    assert_mem(0, 0, 0); /* nonzero: reset kept memory or the high-water mark */
    assert_int_equal(simdev_set_device(0), 0);
    assert_int_equal(simdev_malloc(&p, 64), 0); /* the device is usable after the reset */
    assert_mem(64, 64, 1);
    assert_int_equal(simdev_free(p), 0);
}

/* ----------------------------------------------------------------- copies */

static void sync_copies_round_trip_data_in_every_direction(void **state)
{
    (void)state;
    enum { N = 4096 };
    unsigned char src[N], out[N], partial[200];
    void *a, *b;
    fill_pattern(src, N, 7);
    assert_int_equal(simdev_malloc(&a, N), 0);
    assert_int_equal(simdev_malloc(&b, N), 0);

    assert_int_equal(simdev_memcpy(a, src, N, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    assert_int_equal(simdev_memcpy(b, a, N, SIMDEV_COPY_DEVICE_TO_DEVICE), 0);
    memset(out, 0, N);
    assert_int_equal(simdev_memcpy(out, b, N, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(out, src, N); /* differs: a direction copied the wrong bytes */

    /* a sub-range strictly inside an allocation is valid at both ends */
    fill_pattern(partial, sizeof partial, 99);
    assert_int_equal(simdev_memcpy((char *)a + 100, partial, sizeof partial,
                                   SIMDEV_COPY_HOST_TO_DEVICE),
                     0);
    assert_int_equal(simdev_memcpy(out, a, N, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(out, src, 100);
    assert_memory_equal(out + 100, partial, sizeof partial);
    assert_memory_equal(out + 300, src + 300, N - 300); /* differs: the copy overran */

    /* the last byte of an allocation is inside it */
    unsigned char last = 0;
    assert_int_equal(simdev_memcpy(&last, (char *)b + N - 1, 1, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_int_equal(last, src[N - 1]);

    assert_int_equal(simdev_free(a), 0);
    assert_int_equal(simdev_free(b), 0);
}

static void copy_ranges_outside_an_allocation_are_invalid_argument_and_change_nothing(
    void **state)
{
    (void)state;
    enum { N = 1024 };
    unsigned char host[N + 64], original[N], out[N];
    void *dev, *other;
    assert_int_equal(simdev_malloc(&dev, N), 0);
    assert_int_equal(simdev_malloc(&other, N), 0);
    fill_pattern(original, N, 3);
    assert_int_equal(simdev_memcpy(dev, original, N, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    assert_int_equal(simdev_memcpy(other, original, N, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    memset(host, 0xEE, sizeof host);

    char *d = dev;
    const int bad = PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    /* one byte past the end, from the start and from near the end */
    assert_int_equal(simdev_memcpy(d, host, N + 1, SIMDEV_COPY_HOST_TO_DEVICE), bad);
    assert_int_equal(simdev_memcpy(d + N - 10, host, 11, SIMDEV_COPY_HOST_TO_DEVICE), bad);
    assert_int_equal(simdev_memcpy(host, d + 1, N, SIMDEV_COPY_DEVICE_TO_HOST), bad);
    /* starting before the allocation (integer arithmetic: no out-of-object pointer) */
    void *before_start = (void *)((uintptr_t)dev - 64);
    assert_int_equal(simdev_memcpy(before_start, host, 128, SIMDEV_COPY_HOST_TO_DEVICE), bad);
    /* a host pointer where the device side belongs */
    assert_int_equal(simdev_memcpy(host, original, 16, SIMDEV_COPY_HOST_TO_DEVICE), bad);
    assert_int_equal(simdev_memcpy(host, original, 16, SIMDEV_COPY_DEVICE_TO_HOST), bad);
    /* device to device: either side out of range */
    assert_int_equal(simdev_memcpy(other, d + 8, N, SIMDEV_COPY_DEVICE_TO_DEVICE), bad);
    assert_int_equal(simdev_memcpy((char *)other + 8, d, N, SIMDEV_COPY_DEVICE_TO_DEVICE), bad);
    assert_int_equal(simdev_memcpy(other, host, 16, SIMDEV_COPY_DEVICE_TO_DEVICE), bad);
    /* NULL sides and an unknown kind */
    assert_int_equal(simdev_memcpy(NULL, host, 16, SIMDEV_COPY_HOST_TO_DEVICE), bad);
    assert_int_equal(simdev_memcpy(d, NULL, 16, SIMDEV_COPY_HOST_TO_DEVICE), bad);
    assert_int_equal(simdev_memcpy(d, host, 16, (enum simdev_copy_kind)0), bad);
    assert_int_equal(simdev_memcpy(d, host, 16, (enum simdev_copy_kind)5), bad);

    /* nothing moved: both allocations and the host buffer keep their bytes */
    assert_int_equal(simdev_memcpy(out, dev, N, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(out, original, N); /* differs: a rejected copy wrote partially */
    assert_int_equal(simdev_memcpy(out, other, N, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_memory_equal(out, original, N);
    for (size_t i = 0; i < sizeof host; i++)
        assert_int_equal(host[i], 0xEE);

    /* a freed allocation is no longer a valid copy target */
    assert_int_equal(simdev_free(other), 0);
    assert_int_equal(simdev_memcpy(other, host, 16, SIMDEV_COPY_HOST_TO_DEVICE), bad);
    assert_int_equal(simdev_free(dev), 0);
}

static void async_copies_and_memset_on_a_stream_give_exact_bytes_after_sync(void **state)
{
    (void)state;
    enum { N = 4096 };
    static unsigned char pattern[512], out[N], expected[N];
    void *dev, *dev2;
    simdev_stream_t stream;
    fill_pattern(pattern, sizeof pattern, 41);
    memset(out, 0x11, N);
    assert_int_equal(simdev_malloc(&dev, N), 0);
    assert_int_equal(simdev_malloc(&dev2, N), 0);
    assert_int_equal(simdev_stream_create(&stream), 0);

    /* each op depends on the one before it: only FIFO execution gives `expected` */
    assert_int_equal(simdev_memset_async(dev, 0xAB, N, stream), 0);
    assert_int_equal(simdev_memcpy_async((char *)dev + 1024, pattern, sizeof pattern,
                                         SIMDEV_COPY_HOST_TO_DEVICE, stream),
                     0);
    assert_int_equal(simdev_memset_async((char *)dev + 2048, 0x00, 100, stream), 0);
    assert_int_equal(simdev_memcpy_async(dev2, dev, N, SIMDEV_COPY_DEVICE_TO_DEVICE, stream), 0);
    assert_int_equal(simdev_memset_async(dev, 0x5A, N, stream), 0);
    assert_int_equal(simdev_memcpy_async(out, dev2, N, SIMDEV_COPY_DEVICE_TO_HOST, stream), 0);
    assert_int_equal(simdev_stream_sync(stream), 0);

    memset(expected, 0xAB, N);
    memcpy(expected + 1024, pattern, sizeof pattern);
    memset(expected + 2048, 0x00, 100);
    /* 0x5A anywhere: the last memset overtook the D2D copy */
    assert_memory_equal(out, expected, N);

    unsigned char first[N];
    assert_int_equal(simdev_memcpy(first, dev, N, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(first[i], 0x5A);

    assert_int_equal(simdev_stream_destroy(stream), 0);
    assert_int_equal(simdev_free(dev), 0);
    assert_int_equal(simdev_free(dev2), 0);
}

static void async_copy_ranges_outside_an_allocation_are_invalid_and_enqueue_nothing(
    void **state)
{
    (void)state;
    enum { N = 256 };
    unsigned char host[N * 2];
    void *dev;
    simdev_stream_t stream;
    assert_int_equal(simdev_malloc(&dev, N), 0);
    assert_int_equal(simdev_stream_create(&stream), 0);
    assert_int_equal(simdev_op_counts_reset(0), 0);
    memset(host, 0, sizeof host);

    const int bad = PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    assert_int_equal(simdev_memcpy_async(dev, host, N + 1, SIMDEV_COPY_HOST_TO_DEVICE, stream),
                     bad);
    assert_int_equal(simdev_memcpy_async(host, (char *)dev + 1, N, SIMDEV_COPY_DEVICE_TO_HOST,
                                         stream),
                     bad);
    assert_int_equal(simdev_memset_async((char *)dev + 1, 0, N, stream), bad);
    assert_int_equal(simdev_memset_async(host, 0, 16, stream), bad);
    assert_int_equal(simdev_memcpy_async(dev, host, 16, SIMDEV_COPY_HOST_TO_DEVICE, NULL), bad);
    assert_int_equal(simdev_memset_async(dev, 0, 16, NULL), bad);

    uint64_t copies = 99;
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_COPY, &copies), 0);
    assert_int_equal(copies, 0); /* 1+: a rejected async op was enqueued */
    /* a rejected enqueue does not fail the stream */
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(simdev_stream_destroy(stream), 0);
    assert_int_equal(simdev_free(dev), 0);
}

static uint64_t owner_bytes(uint32_t owner)
{
    uint64_t bytes = 12345;
    assert_int_equal(simdev_mem_owner_in_use(0, owner, &bytes), 0);
    return bytes;
}

static void per_owner_totals_are_exact_and_return_to_zero(void **state)
{
    (void)state;
    void *untagged, *a1, *a2, *b1;
    assert_int_equal(simdev_malloc(&untagged, 100), 0);
    assert_int_equal(simdev_malloc_owned(&a1, 1000, 1), 0);
    assert_int_equal(simdev_malloc_owned(&a2, 24, 1), 0);
    assert_int_equal(simdev_malloc_owned(&b1, 4096, 63), 0);
    assert_int_equal(owner_bytes(0), 100);  /* other: simdev_malloc is not owner 0 */
    assert_int_equal(owner_bytes(1), 1024); /* other: an allocation went to the wrong owner */
    assert_int_equal(owner_bytes(63), 4096);
    assert_int_equal(owner_bytes(2), 0);
    assert_mem(100 + 1024 + 4096, 100 + 1024 + 4096, 4); /* owners add up to in_use */

    assert_int_equal(simdev_free(a1), 0);
    assert_int_equal(owner_bytes(1), 24); /* 1024: free did not credit the owner */
    assert_int_equal(owner_bytes(63), 4096);
    assert_int_equal(simdev_free(a2), 0);
    assert_int_equal(simdev_free(b1), 0);
    assert_int_equal(simdev_free(untagged), 0);
    for (uint32_t owner = 0; owner < SIMDEV_MAX_MEM_OWNERS; owner++)
        assert_int_equal(owner_bytes(owner), 0);
}

static void owner_out_of_range_is_invalid_argument_and_allocates_nothing(void **state)
{
    (void)state;
    void *p = SENTINEL;
    uint64_t bytes = 7;
    assert_int_equal(simdev_malloc_owned(&p, 64, SIMDEV_MAX_MEM_OWNERS),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_ptr_equal(p, SENTINEL); /* changed: a rejected call wrote its output */
    assert_mem(0, 0, 0);
    assert_int_equal(simdev_mem_owner_in_use(0, SIMDEV_MAX_MEM_OWNERS, &bytes),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_mem_owner_in_use(0, 1, NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_mem_owner_in_use(SIMDEV_MAX_DEVICES, 1, &bytes),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(bytes, 7);
}

static void a_size_that_would_wrap_when_rounded_is_out_of_device_memory(void **state)
{
    (void)state;
    struct simdev_config config;
    assert_int_equal(simdev_config_default(&config), 0);
    config.memory_bytes = UINT64_MAX; /* so capacity alone cannot refuse it */
    config.watchdog_ms = 0;
    ts_device_setup_config(&config);
    void *p = SENTINEL;
    /* SIZE_MAX - 8 rounds up to 64 bytes past SIZE_MAX: 0 would mean a tiny
     * host block stands for an enormous device allocation. */
    assert_int_equal(simdev_malloc(&p, SIZE_MAX - 8), PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY);
    assert_ptr_equal(p, SENTINEL);
    struct simdev_mem_info info = mem_info();
    assert_int_equal(info.in_use, 0);
    assert_int_equal(info.allocations, 0);
}

static void a_rejected_sync_copy_does_not_start_the_device(void **state)
{
    (void)state;
    assert_int_equal(simdev_device_reset(1), 0);
    assert_int_equal(simdev_set_device(1), 0);
    assert_int_equal(simdev_memcpy(NULL, NULL, 0, SIMDEV_COPY_HOST_TO_DEVICE),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    struct simdev_config config;
    assert_int_equal(simdev_config_default(&config), 0);
    /* INVALID_STATE would mean the rejected copy started device 1. */
    assert_int_equal(simdev_device_configure(1, &config), 0);
    assert_int_equal(simdev_set_device(0), 0);
    assert_int_equal(simdev_device_reset(1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(accounting_is_exact_after_each_step_of_mixed_alloc_and_free),
        SIMPLER_TEST(allocations_are_64_byte_aligned_and_distinct),
        SIMPLER_TEST(per_owner_totals_are_exact_and_return_to_zero),
        SIMPLER_TEST(a_size_that_would_wrap_when_rounded_is_out_of_device_memory),
        SIMPLER_TEST(a_rejected_sync_copy_does_not_start_the_device),
        SIMPLER_TEST(owner_out_of_range_is_invalid_argument_and_allocates_nothing),
        SIMPLER_TEST(accounting_counts_the_requested_bytes),
        SIMPLER_TEST(malloc_beyond_capacity_fails_with_out_of_device_memory_and_changes_nothing),
        SIMPLER_TEST(malloc_of_zero_bytes_or_to_null_is_invalid_argument),
        SIMPLER_TEST(free_of_a_foreign_pointer_is_invalid_argument_and_changes_nothing),
        SIMPLER_TEST(free_of_another_devices_allocation_is_invalid_argument),
        SIMPLER_TEST(free_of_null_is_a_no_op_returning_zero),
        SIMPLER_TEST(mem_get_info_rejects_bad_arguments),
        SIMPLER_TEST(reset_releases_every_allocation_and_clears_high_water),
        SIMPLER_TEST(sync_copies_round_trip_data_in_every_direction),
        SIMPLER_TEST(copy_ranges_outside_an_allocation_are_invalid_argument_and_change_nothing),
        SIMPLER_TEST(async_copies_and_memset_on_a_stream_give_exact_bytes_after_sync),
        SIMPLER_TEST(async_copy_ranges_outside_an_allocation_are_invalid_and_enqueue_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
