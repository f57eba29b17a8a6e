/*
 * example_host.h — the host side shared by the examples.
 *
 * Owns: packing an example's orchestration and kernel shared objects into a
 * callable image, running it once on device 0 in either mode — on a fresh
 * program-mode context, or as a framework would in kernel mode (its own
 * stream, device buffers and copies around one launch) — timing the run,
 * and printing one summary line per mode. It knows nothing about what any
 * example computes; each examples/<name>/main.c makes the inputs, checks
 * the outputs and calls these.
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

/* What one program-mode run did. */
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

/* What one kernel-mode run did. Kernel mode has no run info: the round's
 * counters stay on the device, so there are none to report. */
struct example_kernel_outcome {
    double wall_ms; /* device buffers allocated through freed: copies in, launch, stream
                       sync, copies back (what example_outcome.wall_ms covers, done by the
                       framework instead of simpler) */
};

/*
 * Runs `program` once in kernel mode, as a framework that owns device 0
 * would: makes device 0 the calling thread's current device, creates its
 * own stream, a context initialised with simpler_kernel_mode_init (default
 * config) and the callable prepared from the same image example_run
 * registers. It then gives every distinct host buffer of `args` (borrowed
 * for the call) a device buffer, copies the IN and INOUT views in with
 * simdev_memcpy, launches once with device descriptors of the same views,
 * syncs its stream (the round's status), copies the OUT and INOUT views
 * back into the host buffers, and tears down: simpler_finalize_device,
 * destroy, its buffers, its stream. Every tensor of `args` must be a
 * contiguous host view, the tensors in the order of the signature's
 * non-scalar entries (INVALID_ARGUMENT otherwise). Returns 0, or the first
 * failing call's negative code (the round's own, from the sync, when the
 * round failed) after printing that call's name on stderr; outputs are
 * copied back only after a successful round. *out is written only on
 * success.
 */
int example_run_kernel(const struct example_program *program, const struct simpler_args *args,
                       struct example_kernel_outcome *out);

/* What an example's main checks, for example_run_both. */
struct example_checks {
    void (*poison_outputs)(void); /* before each run: the outputs must be written by it */
    /* Check the outputs after a successful run of each mode and print its
     * line (example_report / example_report_kernel); 0 when it passed. */
    int (*report_program)(const struct example_outcome *outcome);
    int (*report_kernel)(const struct example_kernel_outcome *outcome);
};

/*
 * An example's two runs: poisons the outputs, runs `program` in program
 * mode (example_run) and reports it, then poisons them again, runs it in
 * kernel mode (example_run_kernel) and reports that; a run that fails gets
 * example_report_failure instead. Returns 0 when both runs succeeded and
 * both reports passed, 1 otherwise: the example's exit status.
 */
int example_run_both(const struct example_program *program, const struct simpler_args *args,
                     const struct example_checks *checks);

/*
 * Prints the program-mode summary line: name, "program", tasks submitted,
 * the check's verdict and `detail` (how it was checked), and the wall time.
 * Returns 0 when `passed`, 1 otherwise: the mode's exit status.
 */
int example_report(const struct example_program *program, const struct example_outcome *outcome,
                   bool passed, const char *detail);

/* Prints the kernel-mode summary line: name, "kernel", the check's verdict
 * and `detail`, and the wall time (no counters: kernel mode has none).
 * Returns 0 when `passed`, 1 otherwise. */
int example_report_kernel(const struct example_program *program,
                          const struct example_kernel_outcome *outcome, bool passed,
                          const char *detail);

/* Prints the failure line of a run that did not complete in `mode`
 * ("program" or "kernel"); returns 1. */
int example_report_failure(const struct example_program *program, const char *mode, int status);

/* Deterministic inputs: a 64-bit LCG stepped by each call. */
uint32_t example_random(uint64_t *state);

#endif /* EXAMPLES_EXAMPLE_HOST_H */
