/*
 * simdev/fault.c — test-only fault injection and per-kind op counters.
 *
 * Owns: the armed faults and the performed-op counters of each device
 * (simdev_fault.h). The enqueue paths call sd_fault_check after their
 * argument and state checks and sd_count after the op was performed.
 */
#include "simdev/device.h"
#include "simdev/fault.h"

/* Host faults are process-wide: host allocations are not tied to a device. */
static _Atomic int64_t g_host_countdown;
static _Atomic uint64_t g_host_attempts;

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
    [SIMDEV_OP_SEM_CREATE] = "sem_create",
    [SIMDEV_OP_SEM_DESTROY] = "sem_destroy",
    [SIMDEV_OP_SEM] = "sem",
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
    atomic_store_explicit(&dev->fault.code[kind], code, memory_order_relaxed);
    /* release: the code above is visible to whoever decrements to zero */
    atomic_store_explicit(&dev->fault.countdown[kind], (int64_t)nth, memory_order_release);
    return 0;
}

int simdev_fault_inject_exec(int device, enum simdev_op_kind kind, uint64_t nth, int code)
{
    struct sd_device *dev = sd_device_peek(device);
    bool queued_kind = kind == SIMDEV_OP_COPY || kind == SIMDEV_OP_LAUNCH ||
                       kind == SIMDEV_OP_RECORD || kind == SIMDEV_OP_WAIT;
    if (!dev || !queued_kind || nth == 0 || nth > INT64_MAX || code >= 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    atomic_store_explicit(&dev->fault.exec_code[kind], code, memory_order_relaxed);
    /* release: the code above is visible to whoever takes the fault */
    atomic_store_explicit(&dev->fault.exec_countdown[kind], (int64_t)nth, memory_order_release);
    return 0;
}

int simdev_fault_clear(int device)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    for (int k = 0; k < SIMDEV_OP_KIND_COUNT; k++) {
        atomic_store_explicit(&dev->fault.countdown[k], 0, memory_order_relaxed);
        atomic_store_explicit(&dev->fault.exec_countdown[k], 0, memory_order_relaxed);
    }
    atomic_store_explicit(&g_host_countdown, 0, memory_order_relaxed);
    return 0;
}

int simdev_op_count(int device, enum simdev_op_kind kind, uint64_t *count)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev || !count || (int)kind < 0 || kind >= SIMDEV_OP_KIND_COUNT)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *count = atomic_load_explicit(&dev->fault.performed[kind], memory_order_relaxed);
    return 0;
}

int simdev_op_counts_reset(int device)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    for (int k = 0; k < SIMDEV_OP_KIND_COUNT; k++)
        atomic_store_explicit(&dev->fault.performed[k], 0, memory_order_relaxed);
    return 0;
}

int simdev_fault_inject_host(uint64_t nth)
{
    if (nth == 0 || nth > INT64_MAX)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    atomic_store_explicit(&g_host_countdown, (int64_t)nth, memory_order_relaxed);
    return 0;
}

int simdev_host_alloc_count(uint64_t *count)
{
    if (!count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *count = atomic_load_explicit(&g_host_attempts, memory_order_relaxed);
    return 0;
}

/*
 * Counts one attempt against an armed countdown; true for the attempt that
 * takes it from 1 to 0. A compare-and-swap, not a decrement, so attempts
 * racing with each other or with a disarm never re-arm it.
 */
static bool countdown_fires(_Atomic int64_t *countdown)
{
    int64_t left = atomic_load_explicit(countdown, memory_order_relaxed);
    while (left > 0) {
        if (atomic_compare_exchange_weak_explicit(countdown, &left, left - 1,
                                                  memory_order_acquire, memory_order_relaxed))
            return left == 1;
    }
    return false;
}

/* Attempts this thread made since sd_host_attempts_defer, not yet added
 * to g_host_attempts (a line device threads' job allocations write too). */
static _Thread_local uint64_t tl_deferred_attempts;
static _Thread_local bool tl_deferring;

bool sd_host_fault(void)
{
    if (tl_deferring)
        tl_deferred_attempts++;
    else
        atomic_fetch_add_explicit(&g_host_attempts, 1, memory_order_relaxed);
    return countdown_fires(&g_host_countdown);
}

void sd_host_attempts_defer(void)
{
    tl_deferring = true;
}

void sd_host_attempts_flush(void)
{
    tl_deferring = false;
    if (tl_deferred_attempts)
        atomic_fetch_add_explicit(&g_host_attempts, tl_deferred_attempts, memory_order_relaxed);
    tl_deferred_attempts = 0;
}

void sd_count(struct sd_device *dev, enum simdev_op_kind kind)
{
    sd_count_n(dev, kind, 1);
}

void sd_count_n(struct sd_device *dev, enum simdev_op_kind kind, uint64_t n)
{
    atomic_fetch_add_explicit(&dev->fault.performed[kind], n, memory_order_relaxed);
}

void sd_fault_reset(struct sd_device *dev)
{
    simdev_fault_clear(dev->id);
    simdev_op_counts_reset(dev->id);
}

int sd_fault_check(struct sd_device *dev, enum simdev_op_kind kind)
{
    /* acquire (in the swap): pairs with the release in simdev_fault_inject,
     * so the code read below is the one armed with this countdown */
    if (!countdown_fires(&dev->fault.countdown[kind]))
        return 0;
    return atomic_load_explicit(&dev->fault.code[kind], memory_order_relaxed);
}

int sd_fault_exec_take(struct sd_device *dev, enum simdev_op_kind kind)
{
    /* acquire (in the swap): pairs with the release in
     * simdev_fault_inject_exec */
    if (!countdown_fires(&dev->fault.exec_countdown[kind]))
        return 0;
    return atomic_load_explicit(&dev->fault.exec_code[kind], memory_order_relaxed);
}

int sd_object_new(enum simdev_op_kind kind, size_t bytes, struct sd_device **dev, void **object)
{
    struct sd_device *d;
    int rc = sd_device_current(&d);
    if (rc != 0)
        return rc;
    rc = sd_fault_check(d, kind);
    if (rc != 0)
        return rc;
    void *o = sd_calloc(1, bytes);
    if (!o)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    *dev = d;
    *object = o;
    return 0;
}
