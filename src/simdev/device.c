/*
 * simdev/device.c — devices: the table, the current device, start, loss
 * and reset.
 *
 * Owns: the device table, the per-thread current device, a device's
 * start (its registers, workers and placement, in that order) and its
 * reset, which destroys everything the device holds, and marking a device
 * lost. Does not own what it starts or destroys: configuration (device_config.c),
 * workers (worker.c), placement (cpu_affinity.c), launches (launch.c),
 * streams, events and graphs (their own files); only the lists that let
 * reset destroy them.
 */
#include <pthread.h>
#include <stdio.h>

#include "simdev/capture.h"
#include "simdev/device_config.h"
#include "simdev/device.h"
#include "simdev/event.h"
#include "simdev/fault.h"
#include "simdev/graph.h"
#include "simdev/launch.h"
#include "simdev/memory.h"
#include "simdev/profile.h"
#include "simdev/cpu_affinity.h"
#include "simdev/regs.h"
#include "simdev/sem.h"
#include "simdev/stream.h"
#include "simdev/worker.h"

static struct sd_device g_devices[SIMDEV_MAX_DEVICES];
static pthread_once_t g_devices_once = PTHREAD_ONCE_INIT;
static _Thread_local int tls_current_device;

/* Gives every device of the table its id and its locks (once). */
static void devices_init(void)
{
    for (int i = 0; i < SIMDEV_MAX_DEVICES; i++) {
        struct sd_device *dev = &g_devices[i];
        dev->id = i;
        sd_mutex_init(&dev->lock);
        sd_launch_init(dev);
        sd_memory_init(dev);
        sd_timeline_init(&dev->timeline);
        dev->waits.timeline = &dev->timeline;
        sd_word_bind(&dev->launch.done, &dev->waits);
        sd_word_bind(&dev->regs.cond_word, &dev->waits);
        for (uint32_t c = 0; c < PLATFORM_NOTIFY_CHANNELS; c++)
            sd_word_bind(&dev->regs.notify[c].word, &dev->waits);
        for (uint32_t s = 0; s < SIMDEV_MAX_SEMS; s++)
            sd_word_bind(&dev->sems[s].word, &dev->waits);
    }
}

struct sd_device *sd_device_peek(int id)
{
    if (id < 0 || id >= SIMDEV_MAX_DEVICES)
        return NULL;
    pthread_once(&g_devices_once, devices_init);
    return &g_devices[id];
}

/* --------------------------------------------------- ids, the current device */

int simdev_device_count(int *count)
{
    if (!count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *count = SIMDEV_MAX_DEVICES;
    return 0;
}

int simdev_set_device(int device)
{
    if (!sd_device_peek(device))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    tls_current_device = device;
    return 0;
}

int simdev_get_device(int *device)
{
    if (!device)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *device = tls_current_device;
    return 0;
}

int simdev_device_is_lost(int device)
{
    struct sd_device *dev = sd_device_peek(device);
    return dev && sd_device_lost(dev) ? 1 : 0;
}

/* -------------------------------------------------------------- lifecycle */

/* Starts the device's threads. Caller must hold dev->lock. */
static int device_start(struct sd_device *dev)
{
    sd_config_settle(dev);
    uint32_t ncores = dev->config.aic_cores + dev->config.aiv_cores;
    int rc = sd_regs_create(dev);
    if (rc != 0)
        return rc;
    atomic_store(&dev->lost, 0);
    atomic_store(&dev->budget.awake, 0);
    atomic_store(&dev->budget.device_cpu, -1);
    atomic_store(&dev->budget.sync_cpu, -1);
    sd_launch_reset(dev);
    rc = sd_launch_watchdog_start(dev);
    if (rc != 0) {
        sd_regs_destroy(dev);
        return rc;
    }
    rc = sd_launch_timer_start(dev);
    if (rc != 0) {
        sd_launch_watchdog_stop(dev);
        sd_regs_destroy(dev);
        return rc;
    }
    rc = sd_workers_start(dev);
    if (rc != 0) {
        sd_launch_timer_stop(dev);
        sd_launch_watchdog_stop(dev);
        sd_regs_destroy(dev);
        return rc;
    }
    sd_place_threads(dev, ncores);
    /* release: pairs with the acquire in sd_device_acquire */
    atomic_store_explicit(&dev->started, true, memory_order_release);
    return 0;
}

int sd_device_acquire(int id, struct sd_device **out)
{
    struct sd_device *dev = sd_device_peek(id);
    if (!dev)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    /* acquire: pairs with the release in device_start */
    if (!atomic_load_explicit(&dev->started, memory_order_acquire)) {
        pthread_mutex_lock(&dev->lock);
        int rc = atomic_load_explicit(&dev->started, memory_order_relaxed) ? 0 : device_start(dev);
        pthread_mutex_unlock(&dev->lock);
        if (rc != 0)
            return rc;
    }
    if (sd_device_lost(dev))
        return PTO_RUNTIME_ERR_DEVICE_LOST;
    *out = dev;
    return 0;
}

int sd_device_current(struct sd_device **out)
{
    return sd_device_acquire(tls_current_device, out);
}

void sd_device_mark_lost(struct sd_device *dev)
{
    int was = atomic_exchange_explicit(&dev->lost, 1, memory_order_acq_rel);
    if (was)
        return;
    fprintf(stderr, "simdev: device %d lost: a device function exceeded the %u ms watchdog\n",
            dev->id, dev->config.watchdog_ms);
    sd_launch_wake_all(dev);
    sd_sem_wake_all(dev);
    sd_regs_wake_all(dev);
    sd_launch_fail_inflight(dev);
}

/* ------------------------------------------------------------------ reset */

/* Destroys every stream, executable graph, graph and event of the device
 * (reset, after its captures were aborted). Caller must hold nothing: a
 * stream's teardown waits for its executor. */
static void destroy_objects(struct sd_device *dev)
{
    /* Semaphores first: an acquire waiting on a stream being torn down
     * fails instead of waiting for a release that will never run. */
    sd_sem_kill_all(dev);
    pthread_mutex_lock(&dev->lock);
    struct simdev_stream *streams = dev->streams;
    struct simdev_graph_exec *execs = dev->execs;
    struct simdev_graph *graphs = dev->graphs;
    struct simdev_event *events = dev->events;
    dev->streams = NULL;
    dev->execs = NULL;
    dev->graphs = NULL;
    dev->events = NULL;
    pthread_mutex_unlock(&dev->lock);

    /* Streams first: their pending ops hold references to graphs and event
     * records. */
    while (streams) {
        struct simdev_stream *next = streams->next_in_device;
        sd_stream_teardown(streams);
        streams = next;
    }
    sd_graph_exec_teardown_list(execs);
    sd_graph_teardown_list(graphs);
    while (events) {
        struct simdev_event *next = events->next_in_device;
        sd_event_teardown(events);
        events = next;
    }
}

int simdev_device_reset(int device)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    sd_stream_start_held(); /* the teardown waits for every stream's work */
    pthread_mutex_lock(&dev->lock);
    if (!atomic_load_explicit(&dev->started, memory_order_relaxed)) {
        pthread_mutex_unlock(&dev->lock);
        sd_fault_reset(dev);
        return 0;
    }
    sd_capture_abort_device(dev);
    pthread_mutex_unlock(&dev->lock);
    destroy_objects(dev);
    sd_launch_watchdog_stop(dev);
    sd_launch_timer_stop(dev);

    pthread_mutex_lock(&dev->lock);
    sd_workers_stop(dev);
    sd_launch_free_jobs(dev);
    sd_memory_release_all(dev);
    sd_regs_destroy(dev);
    atomic_store_explicit(&dev->started, false, memory_order_release);
    atomic_store(&dev->lost, 0);
    pthread_mutex_unlock(&dev->lock);
    sd_fault_reset(dev);
    return 0;
}
