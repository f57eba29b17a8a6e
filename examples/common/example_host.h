/*
 * example_host.h — the host side shared by the program-mode examples.
 *
 * Owns: packing an example's orchestration and kernel shared objects into a
 * callable image, running it once on a fresh program-mode context on device
 * 0, timing the run, and printing the example's one-line summary. It knows
 * nothing about what any example computes; each examples/<name>/main.c
 * makes the inputs, checks the outputs and calls these.
 */
#ifndef EXAMPLES_EXAMPLE_HOST_H
#define EXAMPLES_EXAMPLE_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simpler/simpler.h"

/* One kernel of an example's kernel shared object. */
struct example_kernel {
    int32_t func_id;
    enum simpler_kernel_core core;
    const char *symbol;
    const enum simpler_direction *signature;
    uint32_t sig_count;
};

/* What an example ships: an orchestration and its kernels, both as ELF
 * shared objects on disk. Every pointer is borrowed. */
struct example_program {
    const char *name;        /* printed first on the summary line */
    const char *orch_path;   /* orchestration .so */
    const char *entry;       /* its entry symbol */
    const enum simpler_direction *signature;
    uint32_t sig_count;
    const char *kernel_path; /* kernels .so, holding every kernel below */
    const struct example_kernel *kernels;
    uint32_t kernel_count;
};

/* What one run did. */
struct example_outcome {
    struct simpler_run_info info; /* tasks submitted, completed, edges */
    double wall_ms;               /* prepare through finalize: staging in, running, copying back */
};

/*
 * Creates and initialises a context on device 0, builds the callable image
 * from the files and registers it, runs it once with `args` (host tensors
 * are staged in and copied back), then tears everything down.
 * Returns 0, or the first failing call's negative code after printing that
 * call's name on stderr. *out is written only on success.
 */
int example_run(const struct example_program *program, const struct simpler_args *args,
                struct example_outcome *out);

/*
 * Prints the summary line: name, tasks submitted, the check's verdict and
 * `detail` (how it was checked), and the wall time. Returns 0 when `passed`,
 * 1 otherwise: the example's exit status.
 */
int example_report(const struct example_program *program, const struct example_outcome *outcome,
                   bool passed, const char *detail);

/* Prints the failure line of an example whose run did not complete; returns 1. */
int example_report_failure(const struct example_program *program, int status);

/* Deterministic inputs: a 64-bit LCG stepped by each call. */
uint32_t example_random(uint64_t *state);

#endif /* EXAMPLES_EXAMPLE_HOST_H */
