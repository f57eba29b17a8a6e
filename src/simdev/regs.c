/*
 * simdev/regs.c — per-core register windows: doorbell and condition words.
 *
 * Owns: the register windows of every core and the device-wide condition
 * sequence. The AICPU side writes a core's doorbell and reads its condition
 * word; the core does the opposite. Each write is a release store paired
 * with the other side's acquire load, then a wake-up of the other side if it
 * parked (park.c). The device runtime's dispatch protocol is built on these.
 *
 * A condition write wakes nobody unless a waiter registered interest (is
 * parked in platform_cond_wait): it counts itself in the core's own
 * cond_writes, and the device's condition sequence is the sum of those
 * counts and the signal count, so no write touches a line shared by all
 * cores.
 */
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"
#include "simdev/device_config.h"
#include "simdev/device.h"
#include "simdev/fault.h"
#include "simdev/launch.h"
#include "simdev/park.h"
#include "simdev/regs.h"
#include "simdev/worker.h"

int sd_regs_create(struct sd_device *dev)
{
    struct simdev_core_regs *regs =
        sd_aligned_alloc(SD_CACHELINE, SIMDEV_MAX_CORES * sizeof(struct simdev_core_regs));
    if (!regs)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    memset(regs, 0, SIMDEV_MAX_CORES * sizeof(*regs));
    for (uint32_t i = 0; i < SIMDEV_MAX_CORES; i++) {
        regs[i].dev = dev;
        regs[i].core_id = i;
        sd_word_bind(&regs[i].doorbell_wait, &dev->waits);
    }
    dev->regs.windows = regs;
    return 0;
}

void sd_regs_destroy(struct sd_device *dev)
{
    free(dev->regs.windows);
    dev->regs.windows = NULL;
}

void sd_regs_wake_all(struct sd_device *dev)
{
    sd_wake(&dev->regs.cond_word);
    for (uint32_t c = 0; c < PLATFORM_NOTIFY_CHANNELS; c++)
        sd_wake(&dev->regs.notify[c].word);
    if (!dev->regs.windows)
        return;
    for (uint32_t i = 0; i < SIMDEV_MAX_CORES; i++)
        sd_wake(&dev->regs.windows[i].doorbell_wait);
}

struct simdev_core_regs *platform_core_regs(int device, uint32_t core)
{
    struct sd_device *dev;
    if (sd_device_acquire(device, &dev) != 0)
        return NULL;
    if (core >= dev->config.aic_cores + dev->config.aiv_cores)
        return NULL;
    return &dev->regs.windows[core];
}

void platform_core_start(struct simdev_core_regs *regs)
{
    sd_core_start(regs->dev, regs->core_id);
}

uint32_t platform_cores_run_unstarted(int device, platform_launch_match_fn mine,
                                      void *mine_arg)
{
    struct sd_device *dev;
    if (!mine || sd_device_acquire(device, &dev) != 0)
        return 0;
    return sd_cores_run_unstarted(dev, mine, mine_arg);
}

void platform_aicpu_start_others(void)
{
    struct sd_worker *w = sd_tl_worker;
    struct sd_job *job = sd_tl_job;
    if (w && !w->is_core && job && job->lead)
        sd_aicpu_start_others(w->dev, job);
}

void platform_aicpu_start_others_after(uint64_t ns)
{
    struct sd_worker *w = sd_tl_worker;
    struct sd_job *job = sd_tl_job;
    if (w && !w->is_core && job && job->lead)
        sd_aicpu_start_others_after(w->dev, job, ns);
}

int platform_core_run_here(struct simdev_core_regs *regs, platform_launch_match_fn mine,
                           void *mine_arg)
{
    if (!mine)
        return 0;
    return sd_core_run_here(regs->dev, regs->core_id, mine, mine_arg);
}

void platform_ring_doorbell(struct simdev_core_regs *regs, uint64_t value)
{
    /* release: pairs with the acquire in platform_read_doorbell */
    atomic_store_explicit(&regs->doorbell, value, memory_order_release);
    sd_wake(&regs->doorbell_wait);
}

int platform_hint_core_parked(const struct simdev_core_regs *regs)
{
    /* relaxed: a hint for placement; ringing a parked core is always
     * correct (it is woken), only slower */
    return atomic_load_explicit(&((struct simdev_core_regs *)regs)->doorbell_wait.waiters,
                                memory_order_relaxed) != 0;
}

int platform_hint_core_gives_way(const struct simdev_core_regs *regs)
{
    return sd_core_gives_way(&regs->dev->workers.cores[regs->core_id]);
}

int platform_hint_core_shares_my_cpu(const struct simdev_core_regs *regs)
{
    if (!regs || !sd_tl_worker)
        return 0;
    return sd_core_mate(&regs->dev->workers.cores[regs->core_id]) == sd_tl_worker;
}

uint64_t platform_read_cond(const struct simdev_core_regs *regs)
{
    /* acquire: pairs with the release in platform_write_cond */
    return atomic_load_explicit(&((struct simdev_core_regs *)regs)->cond, memory_order_acquire);
}

uint64_t platform_read_doorbell(const struct simdev_core_regs *regs)
{
    /* acquire: pairs with the release in platform_ring_doorbell */
    return atomic_load_explicit(&((struct simdev_core_regs *)regs)->doorbell,
                                memory_order_acquire);
}

struct doorbell_wait {
    struct simdev_core_regs *regs;
    uint64_t last_seen;
    uint64_t value;
    int (*also)(void *arg);
    void *also_arg;
    bool also_fired;
};

static bool doorbell_changed(void *arg)
{
    struct doorbell_wait *w = arg;
    w->value = platform_read_doorbell(w->regs);
    if (w->value != w->last_seen)
        return true;
    if (w->also && w->also(w->also_arg)) {
        w->also_fired = true;
        return true;
    }
    return false;
}

static uint64_t deadline_after(uint64_t timeout_ns)
{
    return timeout_ns ? simdev_clock_ns() + timeout_ns : 0;
}

int platform_wait_doorbell_or(struct simdev_core_regs *regs, uint64_t last_seen,
                                 uint64_t timeout_ns, uint64_t *value, int (*also)(void *arg),
                                 void *also_arg)
{
    if (!regs || !value)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct doorbell_wait w = {
        .regs = regs, .last_seen = last_seen, .also = also, .also_arg = also_arg};
    struct sd_device *dev = regs->dev;
    /* An idle core gives its CPU up while more device threads are awake
     * than CPUs: its scheduler prefers cores that are not parked
     * (platform_hint_core_parked), so the wake-up this costs is off the per-task
     * path. */
    int rc = sd_wait_within_budget(&regs->doorbell_wait, doorbell_changed, &w,
                                   sd_spin_ns(dev, SD_WAIT_CORE), deadline_after(timeout_ns),
                                   &dev->lost);
    if (rc == 0)
        *value = w.also_fired ? last_seen : w.value;
    return rc;
}

int platform_wait_doorbell(struct simdev_core_regs *regs, uint64_t last_seen,
                              uint64_t timeout_ns, uint64_t *value)
{
    return platform_wait_doorbell_or(regs, last_seen, timeout_ns, value, NULL, NULL);
}

void platform_write_cond(struct simdev_core_regs *regs, uint64_t value)
{
    /* release: pairs with the acquire in platform_read_cond */
    atomic_store_explicit(&regs->cond, value, memory_order_release);
    /* seq_cst (a release too: the sequence's readers then see the word):
     * the count before the look at the waiters, pairing with a parked
     * waiter's seq_cst increment of waiters before its last look at the
     * sequence (park.c) — either we see it parked and wake it, or it sees
     * this write. */
    atomic_fetch_add_explicit(&regs->cond_writes, 1, memory_order_seq_cst);
    struct sd_device *dev = regs->dev;
    if (atomic_load_explicit(&dev->regs.cond_word.waiters, memory_order_seq_cst))
        sd_wake(&dev->regs.cond_word);
}

/* The signal count plus every core's condition writes (32 bits, wrapping). */
static uint32_t cond_sequence(struct sd_device *dev)
{
    /* acquire: pairs with the seq_cst increments in platform_cond_signal and
     * platform_write_cond */
    uint32_t seq = sd_word_wakes(&dev->regs.cond_word);
    uint32_t cores = dev->config.aic_cores + dev->config.aiv_cores;
    for (uint32_t i = 0; i < cores; i++)
        seq += atomic_load_explicit(&dev->regs.windows[i].cond_writes, memory_order_acquire);
    return seq;
}

uint64_t platform_cond_seq(int device)
{
    struct sd_device *dev = sd_device_peek(device);
    /* acquire: pairs with the release of started after the registers were
     * created (device.c); a device not started has no condition writes */
    if (!dev || !atomic_load_explicit(&dev->started, memory_order_acquire))
        return dev ? sd_word_wakes(&dev->regs.cond_word) : 0;
    return cond_sequence(dev);
}

struct cond_wait {
    struct sd_device *dev;
    uint32_t seen;
};

static bool cond_seq_changed(void *arg)
{
    struct cond_wait *w = arg;
    return cond_sequence(w->dev) != w->seen;
}

int platform_cond_wait(int device, uint64_t seen, uint64_t timeout_ns)
{
    struct sd_device *dev;
    int rc = sd_device_acquire(device, &dev);
    if (rc != 0)
        return rc;
    struct cond_wait w = {.dev = dev, .seen = (uint32_t)seen};
    return sd_wait(&dev->regs.cond_word, cond_seq_changed, &w, sd_spin_ns(dev, SD_WAIT_AICPU),
                   deadline_after(timeout_ns), &dev->lost);
}

void platform_cond_signal(int device)
{
    struct sd_device *dev = sd_device_peek(device);
    if (dev)
        sd_wake(&dev->regs.cond_word);
}

uint64_t platform_notify_seq(int device, uint32_t channel)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev || channel >= PLATFORM_NOTIFY_CHANNELS)
        return 0;
    return sd_word_wakes(&dev->regs.notify[channel].word);
}

struct notify_wait {
    struct sd_waitword *word;
    uint32_t seen;
};

static bool notify_seq_changed(void *arg)
{
    struct notify_wait *w = arg;
    return sd_word_wakes(w->word) != w->seen;
}

/* platform_notify_wait's and its budgeted variant's body. */
static int notify_wait(int device, uint32_t channel, uint64_t seen, uint64_t timeout_ns,
                       bool within_budget)
{
    if (channel >= PLATFORM_NOTIFY_CHANNELS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev;
    int rc = sd_device_acquire(device, &dev);
    if (rc != 0)
        return rc;
    struct notify_wait w = {.word = &dev->regs.notify[channel].word, .seen = (uint32_t)seen};
    if (within_budget)
        return sd_wait_within_budget(w.word, notify_seq_changed, &w,
                                     sd_spin_ns(dev, SD_WAIT_CORE), deadline_after(timeout_ns),
                                     &dev->lost);
    return sd_wait(w.word, notify_seq_changed, &w, sd_spin_ns(dev, SD_WAIT_AICPU),
                   deadline_after(timeout_ns), &dev->lost);
}

int platform_notify_wait(int device, uint32_t channel, uint64_t seen, uint64_t timeout_ns)
{
    return notify_wait(device, channel, seen, timeout_ns, false);
}

int platform_notify_wait_within_budget(int device, uint32_t channel, uint64_t seen,
                                       uint64_t timeout_ns)
{
    return notify_wait(device, channel, seen, timeout_ns, true);
}

void platform_notify_signal(int device, uint32_t channel)
{
    struct sd_device *dev = sd_device_peek(device);
    if (dev && channel < PLATFORM_NOTIFY_CHANNELS)
        sd_wake(&dev->regs.notify[channel].word);
}
