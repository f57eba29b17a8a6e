/*
 * simdev/sem.c — device semaphores: units taken and given back by stream ops.
 *
 * Owns: the semaphore slots of each device, their handles (device, slot,
 * generation) and the acquire/release ops. An acquire takes a ticket when it
 * executes and holds a unit once `granted` passes its ticket, so units are
 * granted first come, first served; a release moves `granted` on and wakes
 * the waiters. The waiting is done by whoever executes the op (a stream's
 * executor or a graph lane), never by a device thread.
 *
 * Locking: create and destroy hold dev->lock; ops read the slot's atomics
 * only. A slot's memory lives as long as its device, so a stale handle is
 * always safe to check.
 */
#include "simdev/internal.h"

#define SEM_SLOT(h) ((uint32_t)(((h) >> 32) & 0xffffu))
#define SEM_GEN(h) ((uint32_t)(h))
#define SEM_DEVICE(h) ((int)((h) >> 56))

/* The live slot of `sem` on `dev`, or NULL when the handle is stale or not
 * the device's. */
static struct sd_sem *live_slot(struct sd_device *dev, simdev_sem_t sem)
{
    if (!sem || SEM_DEVICE(sem) != dev->id || SEM_SLOT(sem) >= SIMDEV_MAX_SEMS)
        return NULL;
    struct sd_sem *s = &dev->sems[SEM_SLOT(sem)];
    /* acquire: pairs with the release stores of create */
    if (!atomic_load_explicit(&s->live, memory_order_acquire) ||
        atomic_load_explicit(&s->generation, memory_order_acquire) != SEM_GEN(sem))
        return NULL;
    return s;
}

int simdev_sem_create(simdev_sem_t *out, uint32_t units)
{
    if (!out || units == 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev;
    int rc = sd_device_current(&dev);
    if (rc == 0)
        rc = sd_fault_check(dev, SIMDEV_OP_SEM_CREATE);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&dev->lock);
    uint32_t i = 0;
    while (i < SIMDEV_MAX_SEMS && atomic_load_explicit(&dev->sems[i].live, memory_order_relaxed))
        i++;
    if (i == SIMDEV_MAX_SEMS) {
        pthread_mutex_unlock(&dev->lock);
        return PTO_RUNTIME_ERR_CAPACITY_EXCEEDED;
    }
    struct sd_sem *s = &dev->sems[i];
    uint32_t gen = atomic_load_explicit(&s->generation, memory_order_relaxed) + 1;
    if (gen == 0)
        gen = 1; /* 0 never names a semaphore: a handle is never 0 */
    atomic_store_explicit(&s->next_ticket, 0, memory_order_relaxed);
    atomic_store_explicit(&s->granted, units, memory_order_relaxed);
    atomic_store_explicit(&s->acquired, 0, memory_order_relaxed);
    atomic_store_explicit(&s->released, 0, memory_order_relaxed);
    atomic_store_explicit(&s->generation, gen, memory_order_release);
    atomic_store_explicit(&s->live, true, memory_order_release);
    pthread_mutex_unlock(&dev->lock);
    sd_count(dev, SIMDEV_OP_SEM_CREATE);
    *out = ((uint64_t)(uint32_t)dev->id << 56) | ((uint64_t)i << 32) | gen;
    return 0;
}

/* Ends the semaphore in slot `s`: its handle goes stale, its waiters wake and
 * fail. Caller must hold dev->lock. */
static void kill_slot(struct sd_sem *s)
{
    atomic_store_explicit(&s->live, false, memory_order_release);
    atomic_fetch_add_explicit(&s->generation, 1, memory_order_acq_rel);
    sd_wake(&s->word);
}

int simdev_sem_destroy(simdev_sem_t sem)
{
    struct sd_device *dev = sem ? sd_device_peek(SEM_DEVICE(sem)) : NULL;
    if (!dev)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    int rc = sd_fault_check(dev, SIMDEV_OP_SEM_DESTROY);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&dev->lock);
    struct sd_sem *s = live_slot(dev, sem);
    if (s)
        kill_slot(s);
    pthread_mutex_unlock(&dev->lock);
    if (!s)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    sd_count(dev, SIMDEV_OP_SEM_DESTROY);
    return 0;
}

void sd_sem_kill_all(struct sd_device *dev)
{
    pthread_mutex_lock(&dev->lock);
    for (uint32_t i = 0; i < SIMDEV_MAX_SEMS; i++)
        if (atomic_load_explicit(&dev->sems[i].live, memory_order_relaxed))
            kill_slot(&dev->sems[i]);
    pthread_mutex_unlock(&dev->lock);
}

int simdev_sem_counts(simdev_sem_t sem, uint64_t *acquired, uint64_t *released)
{
    struct sd_device *dev = sem ? sd_device_peek(SEM_DEVICE(sem)) : NULL;
    if (!dev || !acquired || !released)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_sem *s = live_slot(dev, sem);
    if (!s)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    *acquired = atomic_load_explicit(&s->acquired, memory_order_acquire);
    *released = atomic_load_explicit(&s->released, memory_order_acquire);
    return 0;
}

struct ticket_wait {
    struct sd_sem *sem;
    uint32_t generation;
    uint64_t ticket;
};

static bool ticket_granted(void *arg)
{
    struct ticket_wait *w = arg;
    /* acquire: pairs with the release in a release op, so what the unit's
     * previous holder did is visible to the next */
    return atomic_load_explicit(&w->sem->granted, memory_order_acquire) > w->ticket ||
           atomic_load_explicit(&w->sem->generation, memory_order_acquire) != w->generation;
}

/* model: round_gate.pml, AcquireGate (the ticket and the wait for
 * `granted`) and ReleaseGate (granted++) */
int sd_sem_run(struct sd_device *dev, const struct sd_op *op)
{
    struct sd_sem *s = live_slot(dev, op->u.sem);
    if (!s)
        return sd_device_lost(dev) ? PTO_RUNTIME_ERR_DEVICE_LOST : PTO_RUNTIME_ERR_INVALID_STATE;
    if (op->type == SD_OP_SEM_RELEASE) {
        atomic_fetch_add_explicit(&s->released, 1, memory_order_relaxed);
        /* release: the holder's work before the next holder's */
        atomic_fetch_add_explicit(&s->granted, 1, memory_order_release);
        sd_wake(&s->word);
        return 0;
    }
    struct ticket_wait w = {s, SEM_GEN(op->u.sem),
                            atomic_fetch_add_explicit(&s->next_ticket, 1, memory_order_relaxed)};
    int rc = sd_wait(&s->word, ticket_granted, &w, dev->config.spin_ns, 0, &dev->lost);
    if (rc != 0)
        return rc;
    if (atomic_load_explicit(&s->generation, memory_order_acquire) != w.generation)
        return PTO_RUNTIME_ERR_INVALID_STATE; /* destroyed while waiting */
    atomic_fetch_add_explicit(&s->acquired, 1, memory_order_relaxed);
    return 0;
}
