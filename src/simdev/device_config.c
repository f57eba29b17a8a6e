/*
 * simdev/device_config.c — a device's configuration.
 *
 * Owns: the default topology, the environment overrides (SIMDEV_*), the
 * range check, the configuration a device starts with, and the spin each
 * role of waiter gets from it. Must not start a device or its threads:
 * device.c does, after sd_config_settle.
 */
#include <stdio.h>
#include <stdlib.h>

#include "simdev/device_config.h"
#include "simdev/device.h"

int simdev_config_default(struct simdev_config *out)
{
    if (!out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    out->aicpu_threads = 2;
    out->aic_cores = 1;
    out->aiv_cores = 2;
    out->memory_bytes = 1ull << 30;
    out->watchdog_ms = 30000;
    out->spin_ns = 50000;
    out->pin_cores = 1;
    out->runnable_cpus = 0;
    return 0;
}

/* 0 when the topology and memory are in range, else INVALID_ARGUMENT. */
static int config_check(const struct simdev_config *c)
{
    uint64_t cores = (uint64_t)c->aic_cores + c->aiv_cores;
    if (c->aicpu_threads < 1 || c->aicpu_threads > SIMDEV_MAX_AICPU_THREADS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (cores < 1 || cores > SIMDEV_MAX_CORES || c->memory_bytes == 0 || c->pin_cores > 1)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    return 0;
}

/* Reads one numeric environment override; ignores a malformed value. */
static void env_u64(const char *name, uint64_t *value)
{
    const char *text = getenv(name);
    if (!text || !*text)
        return;
    char *end = NULL;
    unsigned long long parsed = strtoull(text, &end, 0);
    if (end && *end == '\0')
        *value = parsed;
    else
        fprintf(stderr, "simdev: ignoring malformed %s=%s\n", name, text);
}

/* env_u64 for a 32-bit field: a value that does not fit is ignored. */
static void env_u32(const char *name, uint32_t *value)
{
    uint64_t wide = *value;
    env_u64(name, &wide);
    if (wide <= UINT32_MAX)
        *value = (uint32_t)wide;
}

/* The default configuration with the environment's overrides, when they
 * check out. */
static void config_from_env(struct simdev_config *c)
{
    simdev_config_default(c);
    struct simdev_config env = *c;
    env_u32("SIMDEV_AICPU_THREADS", &env.aicpu_threads);
    env_u32("SIMDEV_AIC_CORES", &env.aic_cores);
    env_u32("SIMDEV_AIV_CORES", &env.aiv_cores);
    env_u64("SIMDEV_MEMORY_BYTES", &env.memory_bytes);
    env_u32("SIMDEV_WATCHDOG_MS", &env.watchdog_ms);
    env_u32("SIMDEV_SPIN_NS", &env.spin_ns);
    env_u32("SIMDEV_PIN_CORES", &env.pin_cores);
    env_u32("SIMDEV_RUNNABLE_CPUS", &env.runnable_cpus);
    if (config_check(&env) == 0)
        *c = env;
    else
        fprintf(stderr, "simdev: environment topology out of range; using defaults\n");
}

int simdev_device_configure(int device, const struct simdev_config *config)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev || !config || config_check(config) != 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&dev->lock);
    int rc = 0;
    if (atomic_load_explicit(&dev->started, memory_order_relaxed)) {
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    } else {
        dev->config = *config;
        dev->configured = true;
    }
    pthread_mutex_unlock(&dev->lock);
    return rc;
}

int simdev_device_get_config(int device, struct simdev_config *out)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev || !out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&dev->lock);
    if (dev->configured)
        *out = dev->config;
    else
        config_from_env(out);
    pthread_mutex_unlock(&dev->lock);
    return 0;
}

void sd_config_settle(struct sd_device *dev)
{
    if (!dev->configured) {
        config_from_env(&dev->config);
        dev->configured = true;
    }
}

uint64_t sd_spin_ns(const struct sd_device *dev, enum sd_wait_role role)
{
    uint64_t spin = dev->config.spin_ns;
    if (role == SD_WAIT_CORE)
        return spin; /* bounded by the runnable budget too (regs.c) */
    if (role == SD_WAIT_ROOM)
        return spin < SD_ROOM_SPIN_NS ? spin : SD_ROOM_SPIN_NS;
    return spin < SD_SHORT_SPIN_NS ? spin : SD_SHORT_SPIN_NS;
}
