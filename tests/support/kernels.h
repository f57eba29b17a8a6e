/*
 * kernels.h — compute kernels more than one test runs.
 *
 * Owns: small kernels whose whole meaning is the line that describes them,
 * for tests that put them in a kernel table or name them by symbol (they
 * are exported). A kernel that records what a test observes, or fails on
 * purpose, belongs to that test.
 */
#ifndef SIMPLER_TEST_KERNELS_H
#define SIMPLER_TEST_KERNELS_H

#include <stdint.h>

/* t0 counter (one i64): one more. */
void tk_count_i64(int64_t *args);

/* t0 out (i32, contiguous); scalar 1 s: out[k] = s + k. */
void tk_fill_i32(int64_t *args);

/* t0 in (i32), t1 out (i32): out[k] = in[k] for every element of out. */
void tk_copy_i32(int64_t *args);

/* t0 x, t1 y, t2 z (f32): z[k] = x[k] + y[k] for every element of z. */
void tk_add_f32(int64_t *args);

#endif /* SIMPLER_TEST_KERNELS_H */
