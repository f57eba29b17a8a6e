/*
 * simdev/sem.h — device semaphores: units taken and given back by stream
 * ops (sem.c).
 *
 * Owns: the layout of a semaphore slot, which a device carries
 * SIMDEV_MAX_SEMS of, and the calls the op executor and device reset make.
 * Must not wait on a device thread: whoever executes the op waits.
 */
#ifndef SIMDEV_SEM_H
#define SIMDEV_SEM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "simdev/park.h"

struct sd_device;
struct sd_op;

/* One semaphore slot. `live` changes under dev->lock; ops use the two
 * counter words only, each of which carries the slot's generation in its
 * top 32 bits, so an op checks its handle and moves a counter in one
 * compare-and-swap and never touches a later semaphore's counters. */
struct sd_sem {
    bool live;                /* guarded by dev->lock */
    _Atomic uint64_t tickets; /* generation << 32 | acquires executed (mod 2^32) */
    _Atomic uint64_t granted; /* generation << 32 | tickets below this hold a unit */
    _Atomic uint64_t acquired, released; /* since creation, for tests */
    _Alignas(SD_CACHELINE) struct sd_waitword word;
};

/* Runs an acquire or release op. */
int sd_sem_run(struct sd_device *dev, const struct sd_op *op);
/* Runs acquire op `op` only if it holds a unit at once (or fails at once):
 * true with its status in *status; false when it would wait, having done
 * nothing. */
bool sd_sem_try_acquire(struct sd_device *dev, const struct sd_op *op, int *status);
/* Kills every semaphore of a device being reset (their waiters fail). */
void sd_sem_kill_all(struct sd_device *dev);
/* Wakes every waiter on the device's semaphores (the device was lost). */
void sd_sem_wake_all(struct sd_device *dev);

#endif /* SIMDEV_SEM_H */
