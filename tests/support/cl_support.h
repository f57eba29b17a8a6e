/*
 * cl_support.h — the cluster tests' fixture: CL_DEVICES devices, two small
 * callables linked into the test (symbol form), gates that hold a kernel,
 * and vectors with exactly known values.
 *
 * The callables, both on AIV kernels over f32 views of 1 or 2 dims of
 * the same shape (walked through their strides, element k of x to
 * element k of y in row-major order):
 *   CL_AXPB  x (IN), y (OUT); scalars mul, add (f32 bits), fail, gate:
 *            y = x * mul + add; a nonzero `fail` fails the kernel with
 *            that code instead (nothing is written); `gate` g > 0 first
 *            passes cl_gates[g - 1].
 *   CL_FMA   x (IN), acc (INOUT); scalars mul (f32 bits), gate:
 *            acc = acc * mul + x.
 */
#ifndef SIMPLER_CL_SUPPORT_H
#define SIMPLER_CL_SUPPORT_H

#include <stdint.h>

#include "simpler/cluster.h"
#include "test_support.h"

#define CL_DEVICES 4
#define CL_AXPB 1
#define CL_FMA 2
#define CL_UNREGISTERED 9
#define CL_GATES 4
#define CL_N 256 /* elements of the fixture's vectors */
#define CL_POISON_BITS 0xDBDBDBDBu

extern struct ts_gate cl_gates[CL_GATES];

/* Resets devices 0..CL_DEVICES-1 and configures each with the small
 * topology (runnable budget 1: four devices share a 2-CPU host); closed
 * gates. cmocka setup signature; returns 0. */
int cl_setup(void **state);
/* Opens every gate, checks that no device holds memory, resets them. */
int cl_teardown(void **state);

/* A cluster over devices 0..workers-1 with pipeline depth `depth` and the
 * small run capacity, with CL_AXPB and CL_FMA registered. */
struct simpler_cluster *cl_open(uint32_t workers, uint32_t depth);
/* The context config cl_open gives every worker. */
struct simpler_config cl_context_config(uint32_t depth);
/* Registers CL_AXPB and CL_FMA (asserting success). */
void cl_register(struct simpler_cluster *cluster);
/* Destroys it (asserting success). */
void cl_close(struct simpler_cluster *cluster);

/* Images of the callables (free with simpler_callable_free). */
void *cl_axpb_image(size_t *bytes);
void *cl_fma_image(size_t *bytes);

/* A vector of CL_N f32 and the descriptor of all of it. */
struct cl_vec {
    float *data;
    struct simpler_tensor all;
};
/* data[i] = base + (i % 13) * 0.25 */
void cl_vec_init(struct cl_vec *v, float base);
/* every element's bits CL_POISON_BITS */
void cl_vec_poison(struct cl_vec *v);
void cl_vec_free(struct cl_vec *v);
float cl_x(uint32_t i, float base); /* cl_vec_init's element i */

/* Args of one CL_AXPB run and of one CL_FMA run (the arrays live inside). */
struct cl_axpb {
    struct simpler_tensor tensors[2];
    uint64_t scalars[4];
    struct simpler_args args;
};
void cl_axpb_args(struct cl_axpb *a, const struct simpler_tensor *x,
                  const struct simpler_tensor *y, float mul, float add, uint64_t fail,
                  uint32_t gate);
struct cl_fma {
    struct simpler_tensor tensors[2];
    uint64_t scalars[2];
    struct simpler_args args;
};
void cl_fma_args(struct cl_fma *a, const struct simpler_tensor *x,
                 const struct simpler_tensor *acc, float mul, uint32_t gate);

/* Asserts out[i] == in[i] * mul + add for every i, naming the first wrong
 * element and what it means (`what`). */
void cl_assert_axpb(const float *in, const float *out, uint32_t n, float mul, float add,
                    const char *what);
/* Asserts every element still holds CL_POISON_BITS (nothing copied back). */
void cl_assert_poison(const float *v, uint32_t n, const char *what);

#endif /* SIMPLER_CL_SUPPORT_H */
