/*
 * simdev/fault.c — test-only fault injection and per-kind op counters.
 *
 * Owns: the armed faults and the performed-op counters of each device
 * (simdev_fault.h). The enqueue paths call sd_fault_check after their
 * argument and state checks and sd_count after the op was performed.
 */
#include "simdev/internal.h"

static const char *const kind_names[SIMDEV_OP_KIND_COUNT] = {
    [SIMDEV_OP_STREAM_CREATE] = "stream_create",
    [SIMDEV_OP_STREAM_DESTROY] = "stream_destroy",
    [SIMDEV_OP_EVENT_CREATE] = "event_create",
    [SIMDEV_OP_EVENT_DESTROY] = "event_destroy",
    [SIMDEV_OP_MALLOC] = "malloc",
    [SIMDEV_OP_FREE] = "free",
    [SIMDEV_OP_COPY] = "copy",
    [SIMDEV_OP_LAUNCH] = "launch",
    [SIMDEV_OP_RECORD] = "record",
    [SIMDEV_OP_WAIT] = "wait",
    [SIMDEV_OP_SYNC] = "sync",
    [SIMDEV_OP_GRAPH_LAUNCH] = "graph_launch",
};

const char *simdev_op_kind_name(enum simdev_op_kind kind)
{
    if ((int)kind < 0 || kind >= SIMDEV_OP_KIND_COUNT)
        return "unknown";
    return kind_names[kind];
}

int simdev_fault_inject(int device, enum simdev_op_kind kind, uint64_t nth, int code)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev || (int)kind < 0 || kind >= SIMDEV_OP_KIND_COUNT || nth == 0 || nth > INT64_MAX ||
        code >= 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    atomic_store_explicit(&dev->fault_code[kind], code, memory_order_relaxed);
    /* release: the code above is visible to whoever decrements to zero */
    atomic_store_explicit(&dev->fault_countdown[kind], (int64_t)nth, memory_order_release);
    return 0;
}

int simdev_fault_clear(int device)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    for (int k = 0; k < SIMDEV_OP_KIND_COUNT; k++)
        atomic_store_explicit(&dev->fault_countdown[k], 0, memory_order_relaxed);
    return 0;
}

int simdev_op_count(int device, enum simdev_op_kind kind, uint64_t *count)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev || !count || (int)kind < 0 || kind >= SIMDEV_OP_KIND_COUNT)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *count = atomic_load_explicit(&dev->performed[kind], memory_order_relaxed);
    return 0;
}

int simdev_op_counts_reset(int device)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    for (int k = 0; k < SIMDEV_OP_KIND_COUNT; k++)
        atomic_store_explicit(&dev->performed[k], 0, memory_order_relaxed);
    return 0;
}

void sd_fault_reset(struct sd_device *dev)
{
    simdev_fault_clear(dev->id);
    simdev_op_counts_reset(dev->id);
}

int sd_fault_check(struct sd_device *dev, enum simdev_op_kind kind)
{
    /* Fast path: nothing armed. */
    if (atomic_load_explicit(&dev->fault_countdown[kind], memory_order_relaxed) <= 0)
        return 0;
    /* acquire: pairs with the release in simdev_fault_inject */
    int64_t before = atomic_fetch_sub_explicit(&dev->fault_countdown[kind], 1, memory_order_acquire);
    if (before == 1)
        return atomic_load_explicit(&dev->fault_code[kind], memory_order_relaxed);
    if (before <= 0) /* lost a race with the firing attempt: undo */
        atomic_fetch_add_explicit(&dev->fault_countdown[kind], 1, memory_order_relaxed);
    return 0;
}
