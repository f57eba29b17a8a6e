/*
 * simdev/device.c — devices: topology, lifecycle, device threads, launches.
 *
 * Owns: the device table, the per-thread current device, configuration,
 * the persistent AICPU and AICore threads, gang-scheduled launches and the
 * watchdog that loses a device, and device reset. Does not own streams,
 * events or graphs (their own files), only the lists that let reset destroy
 * them.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simdev/capture.h"
#include "simdev/config.h"
#include "simdev/device.h"
#include "simdev/event.h"
#include "simdev/fault.h"
#include "simdev/graph.h"
#include "simdev/launch.h"
#include "simdev/memory.h"
#include "simdev/op.h"
#include "simdev/park.h"
#include "simdev/placement.h"
#include "simdev/regs.h"
#include "simdev/sem.h"
#include "simdev/stream.h"
#include "simdev/worker.h"

static struct sd_device g_devices[SIMDEV_MAX_DEVICES];
static pthread_once_t g_devices_once = PTHREAD_ONCE_INIT;
static _Thread_local int tls_current_device;

static void devices_init(void)
{
    for (int i = 0; i < SIMDEV_MAX_DEVICES; i++) {
        struct sd_device *dev = &g_devices[i];
        dev->id = i;
        pthread_mutex_init(&dev->lock, NULL);
        pthread_mutex_init(&dev->launch.pool_lock, NULL);
        pthread_cond_init(&dev->launch.pool_cond, NULL);
        sd_memory_init(dev);
    }
}

struct sd_device *sd_device_peek(int id)
{
    if (id < 0 || id >= SIMDEV_MAX_DEVICES)
        return NULL;
    pthread_once(&g_devices_once, devices_init);
    return &g_devices[id];
}

/* ----------------------------------------------------------- configuration */

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

static void env_u32(const char *name, uint32_t *value)
{
    uint64_t wide = *value;
    env_u64(name, &wide);
    if (wide <= UINT32_MAX)
        *value = (uint32_t)wide;
}

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

/* ---------------------------------------------------------- device threads */

static bool worker_has_job(void *arg)
{
    struct sd_worker *w = arg;
    /* acquire: pairs with the release store of the job in launch_assign */
    return atomic_load_explicit(&w->job, memory_order_acquire) != NULL ||
           atomic_load_explicit(&w->dev->workers.stopping, memory_order_acquire);
}

/* True when the thread now runs only on `cpu`. */
static bool pin(pthread_t thread, int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(thread, sizeof one, &one) == 0;
}

/* The place of a job's last AICPU thread (the runtime's orchestrator) when
 * the job has two threads or more: the CPU place_threads chose, whose core
 * (if any) gives way to it while idle (park.c). One such thread at a time:
 * when such jobs overlap (two contexts on one device), the first to begin
 * keeps the place for its length. True when `w` took it. */
static bool primary_begin(struct sd_device *dev, struct sd_worker *w)
{
    struct sd_worker *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&dev->placement.primary_owner, &none, w,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return false;
    if (dev->placement.primary_mate >= 0)
        atomic_store_explicit(&dev->workers.cores[dev->placement.primary_mate].placement.mate, w,
                              memory_order_release);
    return true;
}

static void primary_end(struct sd_device *dev)
{
    if (dev->placement.primary_mate >= 0)
        atomic_store_explicit(&dev->workers.cores[dev->placement.primary_mate].placement.mate,
                              NULL, memory_order_relaxed);
    atomic_store_explicit(&dev->placement.primary_owner, NULL, memory_order_release);
}

/* Moves the calling AICPU worker to `want` unless it is there already:
 * a worker keeps its place from job to job, so a run's threads make no
 * affinity call (and no migration) when they run the roles they ran the
 * last time. A refused call leaves the place unknown (ANY): the next job
 * tries again. True when the worker is at `want`. */
static bool place_aicpu(struct sd_device *dev, struct sd_worker *w, enum sd_place want)
{
    if (w->placement.place == want)
        return true;
    bool ok = want == SD_PLACE_PRIMARY
                  ? pin(w->thread, dev->placement.primary_cpu)
                  : pthread_setaffinity_np(w->thread, sizeof dev->placement.other_cpus,
                                           &dev->placement.other_cpus) == 0;
    w->placement.place = ok ? want : SD_PLACE_ANY;
    return ok;
}

/* Placement of an AICPU worker for thread `index` of `job` (place_threads):
 * the last thread of a job of two threads or more (the runtime's
 * orchestrator) on the primary CPU, every other AICPU thread (schedulers,
 * one-thread jobs such as a loader or kernel mode's status op) off it, so
 * the orchestrator never queues behind them and a thread it wakes never
 * queues behind the orchestrator. A refused pin gives the place back: its
 * core must not give way to a thread that is not on its CPU. True when
 * `w` took the place (primary_end at the job's end). */
static bool take_place(struct sd_device *dev, struct sd_worker *w, const struct sd_job *job,
                       uint32_t index)
{
    bool primary = job->thread_count >= 2 && index + 1 == job->thread_count &&
                   primary_begin(dev, w);
    if (primary && place_aicpu(dev, w, SD_PLACE_PRIMARY))
        return true;
    if (primary)
        primary_end(dev);
    place_aicpu(dev, w, SD_PLACE_OTHERS);
    return false;
}

static void run_job(struct sd_worker *w, struct sd_job *job, uint32_t index)
{
    struct sd_device *dev = w->dev;
    int status;
    /* Counted awake for the job's length, but while parked (park.c). */
    atomic_fetch_add_explicit(&dev->budget.awake, 1, memory_order_relaxed);
    atomic_store_explicit(&w->awake, 1, memory_order_relaxed);
    sd_tl_budget = &dev->budget;
    sd_tl_worker = w;
    bool primary =
        !w->is_core && dev->placement.primary_cpu >= 0 && take_place(dev, w, job, index);
    if (w->is_core) {
        struct simdev_core_ctx ctx = {
            .device = dev->id,
            .core_id = w->index,
            .core_type = w->index < dev->config.aic_cores ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV,
            .core_count = dev->config.aic_cores + dev->config.aiv_cores,
            .aic_count = dev->config.aic_cores,
            .aiv_count = dev->config.aiv_cores,
            .regs = &dev->regs.windows[w->index],
        };
        status = job->aicore_fn(&ctx, job->args_copy, job->args_size);
    } else {
        struct simdev_aicpu_ctx ctx = {
            .device = dev->id,
            .thread_index = index,
            .thread_count = job->thread_count,
        };
        status = job->aicpu_fn(&ctx, job->args_copy, job->args_size);
    }
    if (primary)
        primary_end(dev);
    sd_tl_budget = NULL;
    sd_tl_worker = NULL;
    atomic_store_explicit(&w->awake, 0, memory_order_relaxed);
    atomic_fetch_sub_explicit(&dev->budget.awake, 1, memory_order_relaxed);
    status = sd_status_from_return(status);
    if (status != 0) {
        int expected = 0;
        atomic_compare_exchange_strong_explicit(&job->status, &expected, status,
                                                memory_order_relaxed, memory_order_relaxed);
    }
    /* acq_rel: the last finisher's release publishes every thread's status
     * write; pairs with the acquire in job_done. */
    if (atomic_fetch_sub_explicit(&job->remaining, 1, memory_order_acq_rel) == 1)
        sd_wake(&dev->launch.done); /* never touch the job after the decrement */
}

static void *worker_main(void *arg)
{
    struct sd_worker *w = arg;
    /* A name per role for profilers and debuggers (perf sched, top -H,
     * gdb): "simdev0 core1", "simdev0 aicpu2". At most 15 characters are
     * kept; a failure only loses the name. */
    char name[16];
    snprintf(name, sizeof name, "simdev%d %s%u", w->dev->id, w->is_core ? "core" : "aicpu",
             w->index);
    (void)pthread_setname_np(pthread_self(), name);
    for (;;) {
        sd_wait(&w->wake, worker_has_job, w, sd_spin_ns(w->dev, SD_WAIT_IDLE), 0, NULL);
        /* acquire: pairs with the release store in launch_assign */
        struct sd_job *job = atomic_exchange_explicit(&w->job, NULL, memory_order_acquire);
        if (!job) {
            if (atomic_load_explicit(&w->dev->workers.stopping, memory_order_acquire))
                break;
            continue;
        }
        /* AICPU workers find their thread index in the job's index table. */
        uint32_t index = 0;
        if (!w->is_core) {
            uint32_t *indices = (uint32_t *)((unsigned char *)job + sizeof(*job));
            index = indices[w->index];
        }
        run_job(w, job, index);
    }
    return NULL;
}

uint64_t sd_spin_ns(const struct sd_device *dev, enum sd_wait_role role)
{
    uint64_t spin = dev->config.spin_ns;
    if (role == SD_WAIT_CORE)
        return spin; /* bounded by the runnable budget too (regs.c) */
    return spin < SD_SHORT_SPIN_NS ? spin : SD_SHORT_SPIN_NS;
}

/* The CPUs this process may run on: the set in *set, the first `max` of
 * them in order in cpus[]; returns how many (0 when the affinity cannot be
 * read). */
static uint32_t host_cpus(cpu_set_t *set, int *cpus, uint32_t max)
{
    CPU_ZERO(set);
    /* The process's CPUs (its first thread's), not the calling thread's:
     * a device thread pinned to one CPU may start another device. */
    if (sched_getaffinity(getpid(), sizeof *set, set) != 0)
        return 0;
    uint32_t n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, set))
            cpus[n++] = c;
    return n;
}

/*
 * Placement: when the cores fit on the host's CPUs, core thread i runs only
 * on the i-th CPU, so two busy cores never share one CPU while another
 * idles (measured: unpinned runs used 1.4-1.8 of 2 CPUs, pinned 1.96-1.99),
 * and the last thread of an AICPU job of two threads or more (the
 * runtime's orchestrator) runs only on the last CPU (primary_begin), so it
 * never chases a CPU that a core holds. When the cores fill every CPU the
 * last core shares that CPU with it, and gives way to it while idle
 * (park.c); with two CPUs or more a pinned core is otherwise alone on its
 * CPU, and the budget's count of awake threads never parks it early
 * (own_cpu), unless the config sets a budget below the CPUs. Every other
 * AICPU thread runs off the last CPU (place_aicpu): they sleep but for the
 * handshake, watchdogs and exit, and each of those is on a run's critical
 * path. Measured: the kernel woke a run's scheduler onto the CPU where the
 * orchestrator was submitting, left it queued there for 0.9 ms (its time
 * slice) while the other CPU idled, and no task was dispatched until then.
 * A worker keeps its place between jobs (no affinity call per run). Best
 * effort: a refused affinity leaves the thread where the OS put it. Also
 * sets the runnable budget (the same count of CPUs, unless the config says
 * otherwise).
 */
static void place_threads(struct sd_device *dev, uint32_t ncores)
{
    int cpus[SIMDEV_MAX_CORES + 1];
    uint32_t n = host_cpus(&dev->placement.all_cpus, cpus, SIMDEV_MAX_CORES + 1);
    bool cores_fit = n > 0 && ncores <= n;
    /* An unreadable affinity: no budget (every waiter spins its time). */
    dev->budget.cpus = dev->config.runnable_cpus ? dev->config.runnable_cpus
                       : n > 0                   ? n
                                                 : UINT32_MAX;
    dev->placement.primary_cpu = -1;
    dev->placement.primary_mate = -1;
    atomic_store_explicit(&dev->placement.primary_owner, NULL, memory_order_relaxed);
    if (!cores_fit || !dev->config.pin_cores)
        return;
    bool pinned[SIMDEV_MAX_CORES];
    for (uint32_t i = 0; i < ncores; i++)
        pinned[i] = pin(dev->workers.cores[i].thread, cpus[i]);
    if (n < 2)
        return; /* one CPU: everybody shares it */
    /* A budget set below the CPUs (runnable_cpus) binds every thread; a
     * refused affinity leaves the core where the OS puts it. */
    for (uint32_t i = 0; i < ncores && dev->budget.cpus >= n; i++)
        dev->workers.cores[i].placement.own_cpu = pinned[i];
    dev->placement.primary_cpu = cpus[n - 1];
    dev->placement.primary_mate = ncores == n ? (int)ncores - 1 : -1;
    dev->placement.other_cpus = dev->placement.all_cpus;
    CPU_CLR(dev->placement.primary_cpu, &dev->placement.other_cpus);
}

static int start_workers(struct sd_device *dev, struct sd_worker *workers, uint32_t count,
                         bool is_core)
{
    for (uint32_t i = 0; i < count; i++) {
        struct sd_worker *w = &workers[i];
        memset(w, 0, sizeof(*w));
        w->dev = dev;
        w->is_core = is_core;
        w->index = i;
        if (sd_thread_create(&w->thread, worker_main, w) != 0)
            return (int)i + 1; /* 1-based count of threads to keep */
    }
    return 0;
}

static void stop_workers(struct sd_device *dev, struct sd_worker *workers, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        sd_wake(&workers[i].wake);
    for (uint32_t i = 0; i < count; i++)
        pthread_join(workers[i].thread, NULL);
    (void)dev;
}

/* Starts the device's threads. Caller must hold dev->lock. */
static int device_start(struct sd_device *dev)
{
    if (!dev->configured) {
        config_from_env(&dev->config);
        dev->configured = true;
    }
    uint32_t ncores = dev->config.aic_cores + dev->config.aiv_cores;
    int rc = sd_regs_create(dev);
    if (rc != 0)
        return rc;
    atomic_store(&dev->workers.stopping, 0);
    atomic_store(&dev->lost, 0);
    atomic_store(&dev->budget.awake, 0);
    dev->launch.aicpu_free = dev->config.aicpu_threads;
    memset(dev->launch.aicpu_busy, 0, sizeof(dev->launch.aicpu_busy));
    dev->launch.cores_busy = false;
    dev->launch.next_ticket[0] = dev->launch.serving_ticket[0] = 0;
    dev->launch.next_ticket[1] = dev->launch.serving_ticket[1] = 0;

    int made = start_workers(dev, dev->workers.aicpu, dev->config.aicpu_threads, false);
    if (made == 0) {
        int made_cores = start_workers(dev, dev->workers.cores, ncores, true);
        if (made_cores == 0) {
            place_threads(dev, ncores);
            /* release: pairs with the acquire in sd_device_acquire */
            atomic_store_explicit(&dev->started, true, memory_order_release);
            return 0;
        }
        atomic_store(&dev->workers.stopping, 1);
        stop_workers(dev, dev->workers.cores, (uint32_t)made_cores - 1);
        made = (int)dev->config.aicpu_threads + 1;
    }
    atomic_store(&dev->workers.stopping, 1);
    stop_workers(dev, dev->workers.aicpu, (uint32_t)made - 1);
    sd_regs_destroy(dev);
    return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
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

/* --------------------------------------------------------------- launches */

static bool job_done(void *arg)
{
    struct sd_job *job = arg;
    /* acquire: pairs with the last finisher's acq_rel in run_job */
    return atomic_load_explicit(&job->remaining, memory_order_acquire) == 0;
}

void sd_device_mark_lost(struct sd_device *dev)
{
    int was = atomic_exchange_explicit(&dev->lost, 1, memory_order_acq_rel);
    if (was)
        return;
    fprintf(stderr, "simdev: device %d lost: a device function exceeded the %u ms watchdog\n",
            dev->id, dev->config.watchdog_ms);
    pthread_mutex_lock(&dev->launch.pool_lock);
    pthread_cond_broadcast(&dev->launch.pool_cond);
    pthread_mutex_unlock(&dev->launch.pool_lock);
    sd_wake(&dev->launch.done);
    sd_sem_wake_all(dev);
    sd_regs_wake_all(dev);
}

/* Takes the threads the launch needs, in ticket order among launches of
 * the same resource (AICPU threads or cores). Returns 0 or DEVICE_LOST.
 * Fills workers[] with the chosen workers. */
static int launch_take_threads(struct sd_device *dev, struct sd_job *job, bool on_cores,
                               struct sd_worker **workers)
{
    pthread_mutex_lock(&dev->launch.pool_lock);
    uint32_t queue = on_cores ? 1 : 0;
    uint64_t ticket = dev->launch.next_ticket[queue]++;
    for (;;) {
        if (sd_device_lost(dev)) {
            /* Let later tickets see the loss too. */
            if (dev->launch.serving_ticket[queue] == ticket)
                dev->launch.serving_ticket[queue]++;
            pthread_cond_broadcast(&dev->launch.pool_cond);
            pthread_mutex_unlock(&dev->launch.pool_lock);
            return PTO_RUNTIME_ERR_DEVICE_LOST;
        }
        bool available = on_cores ? !dev->launch.cores_busy
                                  : dev->launch.aicpu_free >= job->thread_count;
        if (dev->launch.serving_ticket[queue] == ticket && available)
            break;
        pthread_cond_wait(&dev->launch.pool_cond, &dev->launch.pool_lock);
    }
    if (on_cores) {
        dev->launch.cores_busy = true;
        for (uint32_t i = 0; i < job->thread_count; i++)
            workers[i] = &dev->workers.cores[i];
    } else {
        uint32_t taken = 0;
        uint32_t *indices = (uint32_t *)((unsigned char *)job + sizeof(*job));
        for (uint32_t i = 0; i < dev->config.aicpu_threads && taken < job->thread_count; i++) {
            if (!dev->launch.aicpu_busy[i]) {
                dev->launch.aicpu_busy[i] = true;
                indices[i] = taken;
                workers[taken++] = &dev->workers.aicpu[i];
            }
        }
        dev->launch.aicpu_free -= job->thread_count;
    }
    dev->launch.serving_ticket[queue]++;
    pthread_cond_broadcast(&dev->launch.pool_cond);
    pthread_mutex_unlock(&dev->launch.pool_lock);
    return 0;
}

static void launch_return_threads(struct sd_device *dev, struct sd_job *job, bool on_cores,
                                  struct sd_worker **workers)
{
    pthread_mutex_lock(&dev->launch.pool_lock);
    if (on_cores) {
        dev->launch.cores_busy = false;
    } else {
        for (uint32_t i = 0; i < job->thread_count; i++)
            dev->launch.aicpu_busy[workers[i]->index] = false;
        dev->launch.aicpu_free += job->thread_count;
    }
    pthread_cond_broadcast(&dev->launch.pool_cond);
    pthread_mutex_unlock(&dev->launch.pool_lock);
}

/* The job is still referenced by hung device threads: keep it until reset. */
static void launch_abandon(struct sd_device *dev, struct sd_job *job)
{
    pthread_mutex_lock(&dev->launch.pool_lock);
    job->next_abandoned = dev->launch.abandoned;
    dev->launch.abandoned = job;
    pthread_mutex_unlock(&dev->launch.pool_lock);
}

int sd_device_run_launch(struct sd_device *dev, const struct sd_op *op)
{
    bool on_cores = op->type == SD_OP_AICORE;
    uint32_t count = on_cores ? dev->config.aic_cores + dev->config.aiv_cores
                              : op->u.aicpu.thread_count;
    /* The job carries its own copy of the args (a hung launch must not read
     * memory its op's owner frees) and the AICPU index table. */
    size_t index_bytes = SIMDEV_MAX_AICPU_THREADS * sizeof(uint32_t);
    _Static_assert(sizeof(struct sd_job) % SIMDEV_LAUNCH_ARGS_ALIGN == 0 &&
                       SIMDEV_MAX_AICPU_THREADS * sizeof(uint32_t) % SIMDEV_LAUNCH_ARGS_ALIGN == 0,
                   "the args copy after the job and its index table keeps its promised alignment");
    struct sd_job *job = sd_calloc(1, sizeof(*job) + index_bytes + op->args_size);
    if (!job)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    if (on_cores)
        job->aicore_fn = op->u.aicore.fn;
    else
        job->aicpu_fn = op->u.aicpu.fn;
    job->args_size = op->args_size;
    job->thread_count = count;
    atomic_init(&job->remaining, count);
    if (op->args_size) {
        job->args_copy = (unsigned char *)job + sizeof(*job) + index_bytes;
        memcpy(job->args_copy, op->args, op->args_size);
    }
    struct sd_worker *workers[SIMDEV_MAX_CORES];
    int rc = launch_take_threads(dev, job, on_cores, workers);
    if (rc != 0) {
        free(job);
        return rc;
    }
    for (uint32_t i = 0; i < count; i++) {
        /* release: publishes the job; pairs with the acquire in worker_has_job */
        atomic_store_explicit(&workers[i]->job, job, memory_order_release);
        sd_wake(&workers[i]->wake);
    }
    uint64_t deadline = 0;
    if (dev->config.watchdog_ms)
        deadline = simdev_clock_ns() + (uint64_t)dev->config.watchdog_ms * 1000000ull;
    rc = sd_wait(&dev->launch.done, job_done, job, sd_spin_ns(dev, SD_WAIT_IDLE), deadline,
                 &dev->lost);
    if (rc == 0) {
        launch_return_threads(dev, job, on_cores, workers);
        int status = atomic_load_explicit(&job->status, memory_order_relaxed);
        free(job);
        return status;
    }
    if (rc == PTO_RUNTIME_ERR_TIMEOUT)
        sd_device_mark_lost(dev);
    /* Hung threads still reference the job (never the op): keep it. */
    launch_abandon(dev, job);
    return PTO_RUNTIME_ERR_DEVICE_LOST;
}

/* ------------------------------------------------------------------ reset */

int simdev_device_reset(int device)
{
    struct sd_device *dev = sd_device_peek(device);
    if (!dev)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&dev->lock);
    if (!atomic_load_explicit(&dev->started, memory_order_relaxed)) {
        pthread_mutex_unlock(&dev->lock);
        sd_fault_reset(dev);
        return 0;
    }
    sd_capture_abort_device(dev);
    pthread_mutex_unlock(&dev->lock);
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

    pthread_mutex_lock(&dev->lock);
    atomic_store_explicit(&dev->workers.stopping, 1, memory_order_release);
    stop_workers(dev, dev->workers.aicpu, dev->config.aicpu_threads);
    stop_workers(dev, dev->workers.cores, dev->config.aic_cores + dev->config.aiv_cores);
    while (dev->launch.abandoned) {
        struct sd_job *next = dev->launch.abandoned->next_abandoned;
        free(dev->launch.abandoned);
        dev->launch.abandoned = next;
    }
    sd_memory_release_all(dev);
    sd_regs_destroy(dev);
    atomic_store_explicit(&dev->started, false, memory_order_release);
    atomic_store(&dev->lost, 0);
    pthread_mutex_unlock(&dev->lock);
    sd_fault_reset(dev);
    return 0;
}
