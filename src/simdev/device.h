/*
 * simdev/device.h — a simulated device: its table entry and lifecycle
 * (device.c).
 *
 * Owns: the layout of a device, which embeds each module's state (declared
 * by that module's header), the checked entry every call makes, loss, and
 * the lists of objects a reset destroys. Nothing outside src/simdev may
 * include it: the rest of simpler sees simpler/device.h alone.
 */
#ifndef SIMDEV_DEVICE_H
#define SIMDEV_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "simdev/fault.h"
#include "simdev/launch.h"
#include "simdev/memory.h"
#include "simdev/park.h"
#include "simdev/profile.h"
#include "simdev/cpu_affinity.h"
#include "simdev/regs.h"
#include "simdev/sem.h"
#include "simdev/worker.h"
#include "simpler/device.h"

struct simdev_event;
struct simdev_graph;
struct simdev_graph_exec;
struct simdev_stream;

struct sd_device {
    int id;
    pthread_mutex_t lock; /* config, lifecycle, object lists */
    bool configured;
    _Atomic bool started; /* written under lock; read lock-free on every call */
    struct simdev_config config;
    _Atomic int lost;
    struct sd_budget budget; /* its device threads awake, against the host's CPUs */
    struct sd_placement placement;
    struct sd_workers workers;
    struct sd_regs_state regs;
    struct sd_launch_state launch;
    struct sd_sem sems[SIMDEV_MAX_SEMS];
    struct sd_mem_state mem;

    /* Objects the device owns, destroyed by reset. Caller must hold lock. */
    struct simdev_stream *streams;
    struct simdev_event *events;
    struct simdev_graph *graphs;
    struct simdev_graph_exec *execs;

    struct sd_fault_state fault;
    struct sd_wait_counters waits; /* simdev_wait_stats */
    struct sd_timeline timeline;   /* simdev_timeline_start */
};

/* The device `id`, started (threads running) — the checked entry of every
 * call. Returns INVALID_ARGUMENT for a bad id, DEVICE_LOST when lost. */
int sd_device_acquire(int id, struct sd_device **out);
/* The current device of the calling thread, started. */
int sd_device_current(struct sd_device **out);
/* The device `id` without starting it (NULL for a bad id). */
struct sd_device *sd_device_peek(int id);
/* Marks the device lost and wakes every waiter on it. */
void sd_device_mark_lost(struct sd_device *dev);
static inline bool sd_device_lost(struct sd_device *dev)
{
    return atomic_load_explicit(&dev->lost, memory_order_acquire) != 0;
}

/* Lists: unlink `item` from a singly linked list through `next_field`. */
#define SD_LIST_REMOVE(head, item, type, next_field)          \
    do {                                                      \
        type **sd_link_ = (head);                             \
        while (*sd_link_ && *sd_link_ != (item))              \
            sd_link_ = &(*sd_link_)->next_field;              \
        if (*sd_link_)                                        \
            *sd_link_ = (item)->next_field;                   \
    } while (0)

#endif /* SIMDEV_DEVICE_H */
