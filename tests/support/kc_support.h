/*
 * kc_support.h — the kernel-capture fixture, shared by the two halves of
 * test_kernel_capture (scenario/ and unit/host/..._internals.c) and linked
 * into those two only: this file's diamond callable, its device tensors,
 * and capturing a stream into a graph. Public headers only.
 *
 * The diamond: a = 2x; b = a + k; c = 3a; z = b + c, so z = 8x + k. Its
 * kernel fails with ctl[0] when ctl[0] is nonzero, a failure decided by
 * device data, so one replay of a frozen packet can fail and the next
 * succeed.
 */
#ifndef SIMPLER_KC_SUPPORT_H
#define SIMPLER_KC_SUPPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "km_support.h"

/* Prepares the diamond in kernel context ctx; returns its id. */
int32_t kc_prepare(struct simpler_context *ctx);

/* The diamond's device tensors: z, and ctl (0: succeed). Its x is a
 * caller's tensor (a km_bufs' y, in the chained test). */
struct kc_bufs {
    uint64_t n;
    float *z;
    int32_t *ctl;
    struct simpler_tensor t[3];
    uint64_t s[1];
    struct simpler_args args;
};

/* Writes ctl: the code the diamond's kernels fail with (0: succeed). */
void kc_set_ctl(struct kc_bufs *d, int32_t code);
/* Allocates z and ctl (0) for n elements over device tensor x; args with
 * scalar k. */
void kc_bufs_make(struct kc_bufs *d, const float *x, uint64_t n, float k);
void kc_bufs_free(struct kc_bufs *d);
/* z == 8 * x + k in every element, x read from the device now. */
bool kc_holds(const struct kc_bufs *d, const float *x_dev, float k);

/* Ends the capture on `s` and instantiates it. */
simdev_graph_exec_t end_and_instantiate(simdev_stream_t s, simdev_graph_t *graph);
/* Destroys an instantiated graph and the graph it came from. */
void graph_free(simdev_graph_exec_t exec, simdev_graph_t graph);
/* Captures one pm launch (km_support's callable, id 0) over b on s. */
simdev_graph_exec_t capture_pm(struct simpler_context *ctx, simdev_stream_t s,
                               const struct km_bufs *b, float mul, float add,
                               simdev_graph_t *graph);

#endif /* SIMPLER_KC_SUPPORT_H */
