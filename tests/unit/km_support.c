/*
 * km_support.c — the kernel-mode fixture (see km_support.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "km_support.h"

void km_bufs_refill(const struct km_bufs *b, float x_base)
{
    uint64_t n = b->n;
    float *h = calloc(n, sizeof(float));
    assert_non_null(h);
    for (uint64_t i = 0; i < n; i++)
        h[i] = (float)(i % 97) * 0.5f + x_base;
    assert_int_equal(simdev_memcpy(b->x, h, n * sizeof(float), SIMDEV_COPY_HOST_TO_DEVICE), 0);
    for (uint64_t i = 0; i < n; i++)
        h[i] = 1.0f;
    assert_int_equal(simdev_memcpy(b->acc, h, n * sizeof(float), SIMDEV_COPY_HOST_TO_DEVICE), 0);
    memset(h, PM_POISON_BYTE, n * sizeof(float));
    assert_int_equal(simdev_memcpy(b->y, h, n * sizeof(float), SIMDEV_COPY_HOST_TO_DEVICE), 0);
    free(h);
}

void km_bufs_alloc(struct km_bufs *b, uint64_t n, float x_base)
{
    b->n = n;
    assert_int_equal(simdev_malloc((void **)&b->x, n * sizeof(float)), 0);
    assert_int_equal(simdev_malloc((void **)&b->y, n * sizeof(float)), 0);
    assert_int_equal(simdev_malloc((void **)&b->acc, n * sizeof(float)), 0);
    km_bufs_refill(b, x_base);
}

void km_bufs_free(struct km_bufs *b)
{
    assert_int_equal(simdev_free(b->x), 0);
    assert_int_equal(simdev_free(b->y), 0);
    assert_int_equal(simdev_free(b->acc), 0);
}

void km_args_make(struct km_args *a, const struct km_bufs *b, float mul, float add,
                  uint64_t fail, uint64_t tag)
{
    assert_int_equal(simpler_tensor_make_1d(&a->t[0], (uint64_t)(uintptr_t)b->x, b->n,
                                            SIMPLER_DTYPE_F32, SIMPLER_MEM_DEVICE),
                     0);
    assert_int_equal(simpler_tensor_make_1d(&a->t[1], (uint64_t)(uintptr_t)b->y, b->n,
                                            SIMPLER_DTYPE_F32, SIMPLER_MEM_DEVICE),
                     0);
    assert_int_equal(simpler_tensor_make_1d(&a->t[2], (uint64_t)(uintptr_t)b->acc, b->n,
                                            SIMPLER_DTYPE_F32, SIMPLER_MEM_DEVICE),
                     0);
    uint32_t bits;
    memcpy(&bits, &mul, sizeof bits);
    a->s[0] = bits;
    memcpy(&bits, &add, sizeof bits);
    a->s[1] = bits;
    a->s[2] = fail;
    a->s[3] = 0;
    a->s[4] = tag;
    a->args = (struct simpler_args){3, 5, a->t, a->s};
}

/* Checks y == x * mul + add and acc == acc_base + y in every element;
 * false at the first wrong one. */
/* y == x * mul + add and acc == acc_base + acc_per_y * y in every element. */
static bool bufs_check(const struct km_bufs *b, float x_base, float mul, float add,
                       float acc_base, float acc_per_y)
{
    uint64_t n = b->n;
    float *y = malloc(n * sizeof(float)), *acc = malloc(n * sizeof(float));
    assert_int_equal(simdev_memcpy(y, b->y, n * sizeof(float), SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_int_equal(simdev_memcpy(acc, b->acc, n * sizeof(float), SIMDEV_COPY_DEVICE_TO_HOST),
                     0);
    bool ok = true;
    for (uint64_t i = 0; i < n && ok; i++) {
        float want = ((float)(i % 97) * 0.5f + x_base) * mul + add;
        ok = y[i] == want && acc[i] == acc_base + acc_per_y * want;
    }
    free(y);
    free(acc);
    return ok;
}

bool km_bufs_hold_rounds(const struct km_bufs *b, float x_base, float mul, float add,
                         uint32_t rounds)
{
    return bufs_check(b, x_base, mul, add, 1.0f, (float)rounds);
}

bool km_bufs_hold(const struct km_bufs *b, float x_base, float mul, float add, float acc_base)
{
    return bufs_check(b, x_base, mul, add, acc_base, 1.0f);
}

/* y exact (x = i % 97 * 0.5), and acc 1 + y in every element or 1 + 2y in
 * every element: one or two rounds ran, never a partial one. */
bool km_bufs_hold_either(const struct km_bufs *b, float mul, float add)
{
    uint64_t n = b->n;
    float *y = malloc(n * sizeof(float)), *acc = malloc(n * sizeof(float));
    assert_int_equal(simdev_memcpy(y, b->y, n * sizeof(float), SIMDEV_COPY_DEVICE_TO_HOST), 0);
    assert_int_equal(simdev_memcpy(acc, b->acc, n * sizeof(float), SIMDEV_COPY_DEVICE_TO_HOST),
                     0);
    float rounds = acc[0] == 1.0f + 2 * add ? 2.0f : 1.0f;
    bool ok = true;
    for (uint64_t i = 0; i < n && ok; i++) {
        float want = (float)(i % 97) * 0.5f * mul + add;
        ok = y[i] == want && acc[i] == 1.0f + rounds * want;
    }
    free(y);
    free(acc);
    return ok;
}

/* y still poison: the round never ran. */
bool km_bufs_untouched(const struct km_bufs *b)
{
    uint32_t first;
    assert_int_equal(simdev_memcpy(&first, b->y, sizeof first, SIMDEV_COPY_DEVICE_TO_HOST), 0);
    return first == PM_POISON_BITS;
}

struct simpler_config km_config(void)
{
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.run_capacity = pm_small_run_config();
    cfg.run_capacity.sched_timeout_ms = 2000;
    return cfg;
}

struct simpler_context *km_open_bare(void)
{
    pm_observers_reset();
    struct simpler_context *ctx;
    struct simpler_config cfg = km_config();
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_kernel_mode_supported(ctx), 1);
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), 0);
    return ctx;
}

struct simpler_context *km_open(void)
{
    struct simpler_context *ctx = km_open_bare();
    size_t bytes;
    void *image = pm_image(&bytes);
    int32_t id = 99;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id), 0);
    assert_int_equal(id, 0); /* the first id minted */
    simpler_callable_free(image);
    return ctx;
}

void km_close(struct simpler_context *ctx)
{
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(simpler_committed_device_memory(ctx), 0); /* else close left memory held */
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
}


void km_opening(struct simpler_context **ctx, simdev_stream_t *s, struct km_bufs *b,
                struct simpler_context *opened, uint64_t n, float x_base)
{
    *ctx = opened;
    *s = ts_new_stream();
    km_bufs_alloc(b, n, x_base);
}

void km_closing(struct simpler_context *ctx, simdev_stream_t s, struct km_bufs *b)
{
    km_bufs_free(b);
    assert_int_equal(simdev_stream_destroy(s), 0);
    km_close(ctx);
}
