/*
 * km_support.h — the kernel-mode fixture: device buffers for pm_support's
 * callable (y = x * mul + add, then acc += y), launch args in caller-owned
 * storage, exact checks of a round's outputs, and a context opened on the
 * fixture's device with the callable prepared as id 0.
 *
 * Device work never points into a test's stack frame: buffers are simdev
 * allocations the test frees.
 */
#ifndef SIMPLER_KM_SUPPORT_H
#define SIMPLER_KM_SUPPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "pm_support.h"

#define KM_N 16384

/* Device buffers of one round: x (IN), y (OUT), acc (INOUT). */
struct km_bufs {
    uint64_t n;
    float *x, *y, *acc; /* device */
};

/* Args of one round, in caller-owned storage the test may scribble over
 * as soon as launch returns. */
struct km_args {
    struct simpler_tensor t[3];
    uint64_t s[PM_SCALARS];
    struct simpler_args args;
};

/* x = pm_x_value(i, x_base), y poison, acc 1. */
void km_bufs_alloc(struct km_bufs *b, uint64_t n, float x_base);
void km_bufs_free(struct km_bufs *b);
/* Rewrites x (base x_base) and acc (1) and poisons y, as a caller does
 * between replays. */
void km_bufs_refill(const struct km_bufs *b, float x_base);
/* Args of one round over b (scalars mul, add, fail code, flags 0, tag). */
void km_args_make(struct km_args *a, const struct km_bufs *b, float mul, float add,
                  uint64_t fail, uint64_t tag);
/* y == x * mul + add and acc == acc_base + y in every element. */
bool km_bufs_hold(const struct km_bufs *b, float x_base, float mul, float add, float acc_base);
/* y == x * mul + add and acc == 1 + rounds * y in every element: exactly
 * `rounds` whole rounds ran on b. */
bool km_bufs_hold_rounds(const struct km_bufs *b, float x_base, float mul, float add,
                         uint32_t rounds);
/* y exact (x_base 0), acc 1 + y or 1 + 2y in every element. */
bool km_bufs_hold_either(const struct km_bufs *b, float mul, float add);
/* y still poison: no round ran. */
bool km_bufs_untouched(const struct km_bufs *b);

/* The config of every context of these tests (small rings, 2 s timeout). */
struct simpler_config km_config(void);
/* A kernel context on device 0, initialised, nothing prepared. */
struct simpler_context *km_open_bare(void);
/* The same with pm's callable prepared as id 0. */
struct simpler_context *km_open(void);
/* km_open with `cfg` (km_config's, changed: a runtime, a trace level). */
struct simpler_context *km_open_with(const struct simpler_config *cfg);
/* The opening of most kernel-mode tests: a context (opened by the caller),
 * a stream and one set of buffers of n elements with x based at x_base. */
void km_opening(struct simpler_context **ctx, simdev_stream_t *s, struct km_bufs *b,
                struct simpler_context *opened, uint64_t n, float x_base);
/* Their closing: the buffers, the stream, then the context (pm_close). */
void km_closing(struct simpler_context *ctx, simdev_stream_t s, struct km_bufs *b);

#endif /* SIMPLER_KM_SUPPORT_H */
