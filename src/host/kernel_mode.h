/*
 * host/kernel_mode.h — the kernel-mode half of a context: a context that
 * borrows the caller's device and stream.
 *
 * Owns: struct sp_kernel_mode (embedded in struct simpler_context as
 * ctx->kernel), and what kernel_mode_callable.c, kernel_mode_launch.c and
 * tests ask of the kernel-mode context (kernel_mode.c). The entry points themselves are
 * public (simpler.h). Must not be included for program-mode work: nothing
 * here applies to a program context.
 */
#ifndef SIMPLER_HOST_KERNEL_MODE_H
#define SIMPLER_HOST_KERNEL_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/phase.h"
#include "launch/launch.h"
#include "simpler/device.h"
#include "simpler/orchestration.h"
#include "simpler/simpler.h"

struct simpler_context;

/* The kernel-mode half of a context; zero in a program context. */
struct sp_kernel_mode {
    struct sp_phase phase;
    uint64_t generation;               /* the context generation, in every packet */
    uint32_t schedulers;               /* scheduler threads of every round */
    bool claimed;                      /* holds its device (sp_device_claim) */
    bool registered;                   /* the device registry knows the binding */
    struct rt_launch_chain chain;      /* the context's AICPU and AICore streams, the events */
    /* The streams that carry a launch made on a capturing caller stream,
     * one pair per capture open at once (config.max_captures of them): a
     * capture pulls its pair in, so captured work never lands on the eager
     * streams (an eager launch from another thread during a capture stays
     * eager) nor on another capture's pair (two captures never wait on each
     * other's points). A pair serves the capture whose id its streams
     * report, or is free when they report none. */
    simdev_stream_t capture_aicpu[SIMPLER_MAX_CAPTURES], capture_aicore[SIMPLER_MAX_CAPTURES];
    bool gate_held; /* finalize took the round gate (and has not destroyed it yet) */
    bool gate_lost; /* a round kept the gate's unit for good: poisoned, close does not take it */
    const struct rt_launch_ops *launch_ops; /* rt_launch_simdev_ops; tests may swap it */
    struct rt_run_result *result;      /* device: the round's result block */
    struct simpler_orch_args *args;    /* device: the round's decoded arguments */
    struct rt_kernel_mode_binding *binding; /* device: what the device may follow */
    size_t binding_bytes;
    int32_t next_id;                   /* the next callable id minted */
    uint64_t next_slot_generation;
    uint64_t next_round;               /* the last round's generation */
    /* Callables minted, for tests (packets encoded are counted with the
     * context's preparations, ctx->counters). */
    uint64_t callables_resolved;
    /* host_build_graph contexts only: the host build of every round, its
     * scratch and the bank it builds the image in (host memory, made at
     * init for the context's capacity; one bank serves every round, since
     * a round's staged copy takes the image as the launch enqueues it),
     * and the builds made, for tests. */
    void *hbg_raw;
    struct rt_kernel_mode_build hbg;
    struct simpler_orch_args hbg_args; /* the round's, decoded from its packet */
    uint64_t host_builds;
    uint64_t host_builds_skipped; /* launches and updates that shipped a kept image */
};

/* A kernel context that accepts work now: latched KERNEL, accepting in its
 * phase (a launch when `launch`, else a prepare), on the calling thread's
 * current device, device not lost (a lost one poisons the phase). 0,
 * INVALID_STATE, the poison cause or DEVICE_LOST. Caller holds ctx->lock. */
int sp_kernel_mode_ready(struct simpler_context *ctx, bool launch);

/* host_build_graph: the context's host build set up for a round of the
 * prepared `call` (its orchestration, arguments and kernels); NULL for a
 * TMR call, or a packet that does not decode (the launch refuses it).
 * Caller holds ctx->lock. */
struct rt_kernel_mode_build *sp_kernel_mode_build_for(struct simpler_context *ctx,
                                                      const struct simpler_prepared_call *call);

struct sp_hbg_image;

/*
 * host_build_graph: the image of round `generation` of the prepared
 * `call` with `config` into *image: the call's kept image stamped with
 * the generation (no build: *built false), or a build into the context's
 * bank (*built true), which a call of simpler_prepare_call keeps when it
 * may (host/hbg_image.h): *kept is then the newly kept image, to be
 * dropped (sp_kernel_mode_image_drop) if what it was built for fails. 0,
 * INVALID_ARGUMENT (nothing can be built) or OUT_OF_HOST_MEMORY (the image
 * could not be kept: nothing kept). Caller holds ctx->lock.
 */
int sp_kernel_mode_image(struct simpler_context *ctx, const struct simpler_prepared_call *call,
                         const struct rt_config *config, uint64_t generation,
                         struct rt_kernel_mode_image *image, bool *built,
                         struct sp_hbg_image **kept);

/* Forgets the image `kept` that sp_kernel_mode_image kept for `call`, and
 * frees it (NULL: nothing). Caller holds ctx->lock. */
void sp_kernel_mode_image_drop(const struct simpler_prepared_call *call, struct sp_hbg_image *kept);

/* A context or round generation: distinct within the process, never 0. */
uint64_t sp_kernel_mode_fresh_generation(void);

/* ------------------------------------------------------------ for tests */

/* Test-only: the device operations the context's launches use (NULL: the
 * simdev ones), for failures the fault injector cannot arm. */
void sp_test_kernel_set_launch_ops(struct simpler_context *ctx,
                                   const struct rt_launch_ops *ops);

/* host_build_graph: the rounds' host builds so far (launches and graph
 * updates that took). */
uint64_t sp_test_kernel_host_builds(struct simpler_context *ctx);

/* Host-side preparation work of a kernel context so far. */
void sp_test_kernel_counters(struct simpler_context *ctx, uint64_t *packets_encoded,
                             uint64_t *callables_resolved);

#endif /* SIMPLER_HOST_KERNEL_MODE_H */
