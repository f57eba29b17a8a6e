/*
 * simdev/platform.c — the simulated device's answers to the platform
 * interface's topology, health and clock (src/platform/platform.h).
 *
 * Owns: only these adapters; the register windows, waits and hints of the
 * same interface live with their state (regs.c, park.c).
 */
#include <stdatomic.h>
#include <time.h>

#include "platform/platform.h"
#include "simdev/device.h"
#include "simpler/device.h"

static struct platform_topology topology_of(const struct simdev_config *config)
{
    return (struct platform_topology){
        .aicpu_threads = config->aicpu_threads,
        .aic_cores = config->aic_cores,
        .aiv_cores = config->aiv_cores,
    };
}

int platform_topology(int device, struct platform_topology *out)
{
    struct simdev_config config;
    if (!out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    /* Device code asks this (a round's begin and its program, twice a
     * round), and device code runs only on a started device: its config
     * is fixed from its start (release of `started`) to its reset, which
     * waits for that code to end and only then lets a configure change
     * it. So a started device's config is read without its lock (the
     * lock and a whole copy were 130 instructions a call). */
    struct sd_device *dev = sd_device_peek(device);
    if (dev && atomic_load_explicit(&dev->started, memory_order_acquire)) {
        *out = topology_of(&dev->config);
        return 0;
    }
    int rc = simdev_device_get_config(device, &config);
    if (rc)
        return rc;
    *out = topology_of(&config);
    return 0;
}

int platform_device_lost(int device)
{
    return simdev_device_is_lost(device);
}

uint64_t platform_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
