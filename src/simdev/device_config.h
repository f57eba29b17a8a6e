/*
 * simdev/device_config.h — a device's configuration and what follows from it
 * (config.c).
 *
 * Owns: the default topology, its environment overrides and range check,
 * and how long each role of waiter spins. Must not start anything: the
 * configuration is read when the device starts (device.c).
 */
#ifndef SIMDEV_DEVICE_CONFIG_H
#define SIMDEV_DEVICE_CONFIG_H

#include <stdint.h>

#include "simpler/device.h"

struct sd_device;

/* Fixes the configuration the device starts with: the one configured, else
 * the environment's (or the default). Caller must hold dev->lock. */
void sd_config_settle(struct sd_device *dev);

/* How long a waiter of each role spins before it parks. A
 * core waiting for its doorbell spins the configured spin_ns, cut short
 * by the runnable budget (sd_wait_within_budget): spinning only pays
 * while the thread that ends the wait is running elsewhere, and a spinner
 * over the budget would take that thread's CPU. An
 * AICPU thread (waiting for cores or another AICPU thread) and an idle
 * worker or launcher spin SD_SHORT_SPIN_NS: no per-task handoff goes
 * through their waits. */
#define SD_SHORT_SPIN_NS 3000
/* An idle AICPU thread after its job, and a stream sync, spin up to this
 * (and at most spin_ns) while the device leaves a CPU free
 * (sd_spin_in_room): the next back-to-back round's thread and the
 * caller's wake-up then cost no system call (a wake-up here costs its
 * waker 5-12 us and the woken thread 10-40 us more; measured:
 * docs/performance.md, "The schedulers started on demand"). */
#define SD_ROOM_SPIN_NS 40000
enum sd_wait_role { SD_WAIT_CORE, SD_WAIT_AICPU, SD_WAIT_IDLE, SD_WAIT_ROOM };
uint64_t sd_spin_ns(const struct sd_device *dev, enum sd_wait_role role);

#endif /* SIMDEV_DEVICE_CONFIG_H */
