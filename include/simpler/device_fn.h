/*
 * simpler/device_fn.h — what a device function is and what it receives.
 *
 * Owns: the device's topology limits, the contexts an AICPU function and an
 * AICore function are called with, their types, the bounds of a launch's
 * argument block, and the codes of the points the device runtime marks on
 * a timeline. Shared by the host-facing device API
 * (device.h, which launches such functions) and the code that runs on the
 * device (src/runtime, through src/platform/platform.h), so it declares
 * nothing either side calls.
 */
#ifndef SIMPLER_DEVICE_FN_H
#define SIMPLER_DEVICE_FN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIMDEV_MAX_DEVICES 8
#define SIMDEV_MAX_AICPU_THREADS 16
#define SIMDEV_MAX_CORES 64

/*
 * The points simpler's device runtime marks on a recording timeline
 * (SIMDEV_MARK_POINT, simpler/simdev_profile.h), in the
 * order one task's round meets them. Per task: SUBMIT (the orchestrator
 * published a ready task), DISPATCH (a step rang a core's doorbell for it),
 * KERNEL_BEGIN / KERNEL_END (the core runs its kernel), COMPLETE (a step
 * completed it). Per round: CORE_JOIN (a core loop arrived at the round),
 * SCHED_OPEN (a scheduler's handshake joined all its cores), CORE_EXIT (a
 * scheduler rang a core's exit), SCHED_DONE (a scheduler's watch saw the
 * run end), CORE_LEAVE (a scheduler left the round of a core loop that had
 * not joined: the round ended first, or the run failed; such a core is not
 * rung). A point marked while no timeline records costs one relaxed load.
 */
enum simdev_point {
    SIMDEV_POINT_SUBMIT = 0,
    SIMDEV_POINT_DISPATCH,
    SIMDEV_POINT_KERNEL_BEGIN,
    SIMDEV_POINT_KERNEL_END,
    SIMDEV_POINT_COMPLETE,
    SIMDEV_POINT_CORE_JOIN,
    SIMDEV_POINT_SCHED_OPEN,
    SIMDEV_POINT_CORE_EXIT,
    SIMDEV_POINT_SCHED_DONE,
    SIMDEV_POINT_CORE_LEAVE,
};

/* ---------------------------------------------------- device-side contexts */

enum simdev_core_type { SIMDEV_CORE_AIC = 0, SIMDEV_CORE_AIV = 1 };

struct simdev_core_regs; /* one core's register window */

struct simdev_aicpu_ctx {
    int device;
    uint32_t thread_index; /* 0..thread_count-1 */
    uint32_t thread_count; /* as launched */
};

struct simdev_core_ctx {
    int device;
    uint32_t core_id;             /* AIC cores are 0..aic_count-1, AIV after */
    enum simdev_core_type core_type;
    uint32_t core_count;          /* aic_count + aiv_count */
    uint32_t aic_count;
    uint32_t aiv_count;
    struct simdev_core_regs *regs; /* this core's register window */
};

/*
 * A device function returns 0 or a negative status; a negative status fails
 * the op and the stream (a positive return, outside this contract, fails it
 * with PTO_RUNTIME_ERR_INTERNAL). `args` points to the launch's own copy of the
 * argument bytes (args_size of them; NULL when 0), shared read-only by every
 * thread of the launch.
 */
typedef int (*simdev_aicpu_fn)(const struct simdev_aicpu_ctx *ctx, const void *args,
                               size_t args_size);
typedef int (*simdev_aicore_fn)(const struct simdev_core_ctx *ctx, const void *args,
                                size_t args_size);

/* The largest launch argument block: room for a kernel-mode invocation
 * packet at the largest argument counts (src/common/packet.h, 8752 bytes)
 * plus its envelope. Arguments are copied into an op sized to them, so the
 * bound costs nothing below it. */
#define SIMDEV_MAX_LAUNCH_ARGS 16384
/* The copy a device function receives starts at a multiple of this, so
 * argument blocks made of 64-bit words and descriptors can be read in place. */
#define SIMDEV_LAUNCH_ARGS_ALIGN 8

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_DEVICE_FN_H */
