/*
 * simdev/regs.h — per-core register windows, the device's condition
 * sequence and its notification channels (regs.c).
 *
 * Owns: the layout of a core's register window (struct simdev_core_regs,
 * opaque to device-side code) and the words every condition and
 * notification wait parks on. Must not know what the runtime writes in
 * them: regs.c implements platform.h's register and wait calls, nothing
 * more.
 */
#ifndef SIMDEV_REGS_H
#define SIMDEV_REGS_H

#include <stdatomic.h>
#include <stdint.h>

#include "platform/platform.h"
#include "simdev/park.h"

struct sd_device;

struct simdev_core_regs {
    /* The doorbell and condition words sit on their own cache lines: the
     * AICPU side writes one and the core the other, so sharing a line would
     * make each write invalidate the other side's read. */
    _Alignas(SD_CACHELINE) _Atomic uint64_t doorbell;
    struct sd_waitword doorbell_wait;
    _Alignas(SD_CACHELINE) _Atomic uint64_t cond;
    /* Condition writes so far (the core's own line: no other writer), part
     * of the device's condition sequence (regs.c). */
    _Atomic uint32_t cond_writes;
    struct sd_device *dev;
    uint32_t core_id;
};

/* A device's registers and signal words. */
struct sd_regs_state {
    struct simdev_core_regs *windows; /* SIMDEV_MAX_CORES windows, cache-aligned */
    /* Condition words: platform_cond_signal bumps this; the condition
     * sequence is its count plus every core's cond_writes (regs.c). */
    _Alignas(SD_CACHELINE) struct sd_waitword cond_word;
    /* Notification channels (platform_notify_*), each on its own line. */
    struct {
        _Alignas(SD_CACHELINE) struct sd_waitword word;
    } notify[PLATFORM_NOTIFY_CHANNELS];
};

/* Creates / frees the register windows (device start and reset). */
int sd_regs_create(struct sd_device *dev);
void sd_regs_destroy(struct sd_device *dev);
/* Wakes every waiter on the condition word, the notification channels
 * and every core's doorbell (the device was lost). */
void sd_regs_wake_all(struct sd_device *dev);

#endif /* SIMDEV_REGS_H */
