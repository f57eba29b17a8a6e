/*
 * simdev/cpu_affinity.c — where a device's threads run on the host's CPUs.
 *
 * Owns: pinning cores to CPUs at device start, the primary CPU of a job's
 * last AICPU thread and the core that gives way to it, each AICPU worker's
 * place from job to job, and the runnable budget's count of CPUs. Must not
 * run or hand out jobs (worker.c, launch.c): it is told which thread of
 * which job a worker runs.
 */
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "simdev/device.h"
#include "simdev/launch.h"
#include "simdev/cpu_affinity.h"
#include "simdev/worker.h"

/* True when the thread now runs only on `cpu`. */
static bool pin(pthread_t thread, int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(thread, sizeof one, &one) == 0;
}

/* The core that shares the primary CPU, or NULL. */
static struct sd_worker *primary_mate(struct sd_device *dev)
{
    int core = dev->placement.primary_mate;
    return core >= 0 ? &dev->workers.cores[core] : NULL;
}

/* The place of a job's last AICPU thread (the runtime's orchestrator) when
 * the job has two threads or more: the CPU sd_place_threads chose, whose core
 * (if any) gives way to it while idle (park.c). One such thread at a time:
 * when such jobs overlap (two contexts on one device), the first to begin
 * keeps the place for its length. True when `w` took it. */
static bool primary_begin(struct sd_device *dev, struct sd_worker *w)
{
    struct sd_worker *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&dev->placement.primary_owner, &none, w,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return false;
    struct sd_worker *core = primary_mate(dev);
    if (core)
        /* release: pairs with the acquire in sd_core_mate (worker.h) */
        atomic_store_explicit(&core->placement.mate, w, memory_order_release);
    return true;
}

void sd_place_primary_end(struct sd_device *dev)
{
    struct sd_worker *core = primary_mate(dev);
    if (core)
        atomic_store_explicit(&core->placement.mate, NULL, memory_order_relaxed);
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

/* Placement of an AICPU worker for thread `index` of `job` (sd_place_threads):
 * the last thread of a job of two threads or more (the runtime's
 * orchestrator) on the primary CPU, every other AICPU thread (schedulers,
 * one-thread jobs such as a loader or kernel mode's status op) off it, so
 * the orchestrator never queues behind them and a thread it wakes never
 * queues behind the orchestrator. A refused pin gives the place back: its
 * core must not give way to a thread that is not on its CPU. True when
 * `w` took the place (sd_place_primary_end at the job's end). Without a
 * primary CPU (sd_place_threads found none) every worker stays put. */
bool sd_place_take(struct sd_device *dev, struct sd_worker *w, const struct sd_job *job,
                   uint32_t index)
{
    if (dev->placement.primary_cpu < 0)
        return false;
    bool primary = job->thread_count >= 2 && index + 1 == job->thread_count &&
                   primary_begin(dev, w);
    if (primary && place_aicpu(dev, w, SD_PLACE_PRIMARY))
        return true;
    if (primary)
        sd_place_primary_end(dev);
    place_aicpu(dev, w, SD_PLACE_OTHERS);
    return false;
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
void sd_place_threads(struct sd_device *dev, uint32_t ncores)
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
