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
        h[i] = pm_x_value(i, x_base);
    ts_to_dev(b->x, h, n * sizeof(float));
    for (uint64_t i = 0; i < n; i++)
        h[i] = 1.0f;
    ts_to_dev(b->acc, h, n * sizeof(float));
    memset(h, PM_POISON_BYTE, n * sizeof(float));
    ts_to_dev(b->y, h, n * sizeof(float));
    free(h);
}

void km_bufs_alloc(struct km_bufs *b, uint64_t n, float x_base)
{
    b->n = n;
    b->x = ts_dev_alloc(n * sizeof(float));
    b->y = ts_dev_alloc(n * sizeof(float));
    b->acc = ts_dev_alloc(n * sizeof(float));
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
    a->t[0] = ts_dev_tensor_1d(b->x, b->n, SIMPLER_DTYPE_F32);
    a->t[1] = ts_dev_tensor_1d(b->y, b->n, SIMPLER_DTYPE_F32);
    a->t[2] = ts_dev_tensor_1d(b->acc, b->n, SIMPLER_DTYPE_F32);
    pm_scalars_fill(a->s, mul, add, fail, 0, tag);
    a->args = (struct simpler_args){3, PM_SCALARS, a->t, a->s};
}

/* y == x * mul + add and acc == acc_base + acc_per_y * y in every element;
 * false at the first wrong one. */
static bool bufs_check(const struct km_bufs *b, float x_base, float mul, float add,
                       float acc_base, float acc_per_y)
{
    uint64_t n = b->n;
    float *y = malloc(n * sizeof(float)), *acc = malloc(n * sizeof(float));
    ts_from_dev(y, b->y, n * sizeof(float));
    ts_from_dev(acc, b->acc, n * sizeof(float));
    bool ok = true;
    for (uint64_t i = 0; i < n && ok; i++) {
        float want = pm_x_value(i, x_base) * mul + add;
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

/* y exact (x_base 0), and acc 1 + y in every element or 1 + 2y in every
 * element: one or two rounds ran, never a partial one. acc[0] (x[0] is 0,
 * so y[0] is add) says which to expect of all the others. */
bool km_bufs_hold_either(const struct km_bufs *b, float mul, float add)
{
    float acc0;
    ts_from_dev(&acc0, b->acc, sizeof acc0);
    float rounds = acc0 == 1.0f + 2 * add ? 2.0f : 1.0f;
    return bufs_check(b, 0.0f, mul, add, 1.0f, rounds);
}

/* y still poison: the round never ran. */
bool km_bufs_untouched(const struct km_bufs *b)
{
    uint32_t first;
    ts_from_dev(&first, b->y, sizeof first);
    return first == PM_POISON_BITS;
}

struct simpler_config km_config(void)
{
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.run_capacity = ts_small_run_config();
    cfg.run_capacity.sched_timeout_ms = 2000;
    return cfg;
}

static struct simpler_context *open_bare_with(const struct simpler_config *cfg)
{
    pm_observers_reset();
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_kernel_mode_supported(ctx), 1);
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, cfg, 0), 0);
    return ctx;
}

struct simpler_context *km_open_bare(void)
{
    struct simpler_config cfg = km_config();
    return open_bare_with(&cfg);
}

struct simpler_context *km_open(void)
{
    struct simpler_config cfg = km_config();
    return km_open_with(&cfg);
}

struct simpler_context *km_open_with(const struct simpler_config *cfg)
{
    struct simpler_context *ctx = open_bare_with(cfg);
    size_t bytes;
    void *image = pm_image(&bytes);
    int32_t id = 99;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id), 0);
    assert_int_equal(id, 0); /* the first id minted */
    simpler_callable_free(image);
    return ctx;
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
    pm_close(ctx);
}
