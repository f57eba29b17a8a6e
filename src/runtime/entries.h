/*
 * runtime/entries.h — the device functions the host side enqueues.
 *
 * Owns: every entry point of the device-side runtime that a launch puts on
 * a device stream (the AICPU program and the core loop of a run, the
 * kernel-mode round's functions, the callable loader and the kernel-mode
 * registry ops) and the argument block each one takes. The launch layer
 * (src/launch) enqueues them; nothing here is called directly by host code.
 */
#ifndef SIMPLER_RUNTIME_ENTRIES_H
#define SIMPLER_RUNTIME_ENTRIES_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"
#include "simpler/device_fn.h"

/* Launch arguments of both device functions (copied by simdev). */
struct rt_launch_args {
    struct rt_run_request request;
    uint64_t generation; /* distinguishes this run's init from stale arena contents */
    uint32_t schedulers;
};

/* One AICPU thread, enqueued by a launch whose AICPU program could not be
 * enqueued after its core loop was: settles the round of every core for
 * the schedulers that will never come (args: the round's rt_launch_args),
 * so the core loop ends now rather than at its deadline. */
int rt_round_cancel_main(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size);

/* Launch arguments of the kernel-mode device functions (kernel_mode.c,
 * kernel_launch.c). */
struct rt_kernel_mode_round_args { /* round begin */
    uint64_t context_generation;
    struct rt_config config;
};
struct rt_kernel_mode_core_args { /* the core loop */
    uint64_t context_generation;
    struct rt_launch_args la;
};
struct rt_kernel_mode_envelope { /* the AICPU program: followed by the packet */
    uint64_t context_generation;
    uint64_t round_generation;
    uint32_t schedulers;
    uint32_t packet_bytes;
    struct rt_config config;
};
struct rt_kernel_mode_status_args {
    uint64_t context_generation;
    uint64_t round_generation;
};
extern const simdev_aicpu_fn rt_kernel_mode_round_begin_fn;
extern const simdev_aicore_fn rt_kernel_mode_core_fn;
extern const simdev_aicpu_fn rt_kernel_mode_program_fn;
extern const simdev_aicpu_fn rt_kernel_mode_status_fn;
extern const simdev_aicpu_fn rt_kernel_mode_cancel_fn;

/* The AICore side (simdev_aicore_fn). */
int rt_core_main(const struct simdev_core_ctx *ctx, const void *args, size_t args_size);
/* The AICPU side (simdev_aicpu_fn): the run's status goes to the result
 * block, and the launch fails with it (rt_aicpu_round), so a failed run's
 * code reaches the caller's stream through aicpu_done. */
int rt_aicpu_main(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size);

/* ------------------------------------------------------ callable loading */

/* The loader (one AICPU thread; runtime.h, rt_callable_record). */
struct rt_load_args {
    const uint8_t *image;
    size_t bytes;
    struct rt_callable_record *record;
    struct simpler_run_config base; /* what the config function starts from */
};
/* args: struct rt_load_args. Validates the image, loads every binary, fills
 * the record; INVALID_ARGUMENT (having unloaded what it loaded) otherwise. */
int rt_callable_load_main(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size);
/* args: the record's device address (struct rt_callable_record *). */
int rt_callable_unload_main(const struct simdev_aicpu_ctx *ctx, const void *args,
                            size_t args_size);

/* ---------------------------------------------- kernel-mode registry ops */

struct rt_kernel_mode_register_args {
    struct rt_kernel_mode_binding *binding;
    uint64_t generation;
};
/* args: struct rt_kernel_mode_register_args (one AICPU thread each). */
int rt_kernel_mode_register_main(const struct simdev_aicpu_ctx *ctx, const void *args,
                            size_t args_size);
int rt_kernel_mode_unregister_main(const struct simdev_aicpu_ctx *ctx, const void *args,
                              size_t args_size);

#endif /* SIMPLER_RUNTIME_ENTRIES_H */
