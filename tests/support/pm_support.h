/*
 * pm_support.h — a program-mode fixture: a small callable linked into the
 * test (symbol-form image), its host buffers and the observers its kernels
 * report to, for tests of simpler.h.
 *
 * The callable: args x (IN), y (OUT), acc (INOUT), scalars mul, add (f32
 * bits), fail code, flags, tag. Task 0 computes y = x * mul + add (failing
 * with `fail code` when nonzero, or, with PM_FLAG_FAIL_IF_NEGATIVE, only
 * when x[0] < 0, so that a failure can depend on the input; PM_FLAG_GATE:
 * first passes pm_gate; PM_FLAG_SCRIBBLE: then overwrites x on the device
 * with PM_POISON); task 1
 * computes acc += y and appends `tag` to the completion order log.
 */
#ifndef SIMPLER_PM_SUPPORT_H
#define SIMPLER_PM_SUPPORT_H

#include <stdatomic.h>

#include "simpler/simpler.h"
#include "test_support.h"

#define PM_N 4096
#define PM_CALLABLE 7
#define PM_POISON_BYTE 0xDB
#define PM_POISON_BITS 0xDBDBDBDBu
#define PM_FLAG_GATE 1u
#define PM_FLAG_SCRIBBLE 2u
#define PM_FLAG_FAIL_IF_NEGATIVE 4u /* the fail code applies only when x[0] < 0 */

extern struct ts_gate pm_gate;
extern _Atomic uint64_t pm_order[64]; /* tags in completion order */
extern atomic_int pm_order_count;
extern _Atomic uint32_t pm_out_seen;  /* bits of y[0] task 0 found before writing */

/* Resets the observers and (re)initialises a closed pm_gate. */
void pm_observers_reset(void);

/* Per-test teardown of tests that hold a kernel at pm_gate: opens it, so a
 * test that failed while the kernel was held ends instead of hanging in the
 * device reset. */
int pm_teardown(void **state);

/* Per-test setup of tests that hold a kernel at pm_gate but open their
 * context without pm_open or km_open (which reset the observers): a
 * closed pm_gate and cleared observers, whatever the test before left.
 * Returns 0. */
int pm_setup(void **state);

/* A symbol-form image of the callable (free with simpler_callable_free). */
void *pm_image(size_t *bytes);

/* The callable's signature: x, y, acc, then the PM_SCALARS scalars. */
#define PM_SIGNATURE 8
extern const enum simpler_direction pm_signature[PM_SIGNATURE];

/* A symbol-form image of pm's kernels — func 0 pm_kernel_axpb and, when
 * `kernels` is 2, func 1 pm_kernel_acc — under another orchestration
 * symbol with its own signature (`signature_count` directions) and config
 * symbol (NULL: none). pm_image is ("pm_orchestration", NULL,
 * pm_signature, PM_SIGNATURE, 2). */
/* Submits pm_orchestration's first task, y = x * mul + add (kernel 0 over
 * args' tensors 0 and 1 with its PM_SCALARS scalars): for orchestrations
 * of pm's signature. The submit's code. */
int pm_submit_axpb(struct simpler_orch *rt, const struct simpler_orch_args *args);
/* pm_image's orchestration (exported: images name it), for orchestrations
 * that do something first and then the usual graph. */
void pm_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);

void *pm_image_of(const char *orchestration, const char *config,
                  const enum simpler_direction *signature, uint32_t signature_count,
                  uint32_t kernels, size_t *bytes);

/* Element i of the callable's input x: (i % 97) * 0.5 + x_base. */
float pm_x_value(uint64_t i, float x_base);

/* The callable's scalars, in its order: mul, add (f32 bits), fail code,
 * flags, tag. */
#define PM_SCALARS 5
void pm_scalars_fill(uint64_t scalars[PM_SCALARS], float mul, float add, uint64_t fail_code,
                     uint64_t flags, uint64_t tag);

/* Sets up device 0 on topology `topo` (ts_device_setup_config), resets the
 * observers, creates and initialises a context of `depth` slots with the
 * small run capacity (ts_small_run_config; its scheduler timeout
 * `sched_timeout_ms`, 0: the default). Registers nothing. */
struct simpler_context *pm_open_bare(uint32_t depth, const struct simdev_config *topo,
                                     uint32_t sched_timeout_ms);
/* Sets up device 0 (ts_device_setup_config), creates and initialises a
 * context of `depth` slots and registers the callable as PM_CALLABLE. */
struct simpler_context *pm_open(uint32_t depth);
/* The same on a device of topology `topo`. */
struct simpler_context *pm_open_on(uint32_t depth, const struct simdev_config *topo);
/* The same with the runs' scheduler timeout set to `sched_timeout_ms` (0:
 * the default): the bound within which a round whose other half never
 * runs ends. */
struct simpler_context *pm_open_timed(uint32_t depth, const struct simdev_config *topo,
                                      uint32_t sched_timeout_ms);
/* Finalizes (asserting committed memory 0 afterwards) and destroys, a
 * context of either mode. */
void pm_close(struct simpler_context *ctx);

struct pm_run {
    float *x, *y, *acc;
    struct simpler_tensor tensors[3];
    uint64_t scalars[PM_SCALARS];
    struct simpler_args args;
    float mul, add;
};

/* Host buffers: x = pm_x_value(i, tag), y all PM_POISON_BYTE, acc 1. */
void pm_run_init(struct pm_run *r, float mul, float add, uint64_t fail_code, uint64_t flags,
                 uint64_t tag);
/* Asserts y == x * mul + add and acc == 1 + y in every element. */
void pm_run_check(const struct pm_run *r);
/* Asserts y still poison and acc still 1 (nothing copied back). */
void pm_run_check_untouched(const struct pm_run *r);
void pm_run_free(struct pm_run *r);

/* Prepares r's run of PM_CALLABLE with the default capacity (asserts
 * success and a nonzero handle); returns its handle. */
simpler_run_t pm_prepare(struct simpler_context *ctx, struct pm_run *r);

#endif /* SIMPLER_PM_SUPPORT_H */
