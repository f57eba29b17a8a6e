/*
 * simdev/sem.c — device semaphores: units taken and given back by stream ops.
 *
 * Owns: the semaphore slots of each device, their handles (device, slot,
 * generation) and the acquire/release ops. An acquire takes a ticket when it
 * executes and holds once `granted` passes its ticket, so units are granted
 * first come, first served; a release moves `granted` on and wakes the
 * waiters. The waiting is done by whoever executes the op (a stream's
 * executor or a graph lane), never by a device thread.
 *
 * Both counters carry the slot's generation in their top half: an op takes
 * its ticket, or gives a unit back, with one compare-and-swap that also
 * checks its handle, so a stale op can never move the counters of a later
 * semaphore in the same slot (model: round_gate.pml, AcquireGate takes its
 * ticket and checks the gate in one step).
 *
 * Locking: create and destroy hold dev->lock; ops touch the slot's atomics
 * only. A slot's memory lives as long as its device, so a stale handle is
 * always safe to check.
 */
#include "simdev/device.h"
#include "simdev/fault.h"
#include "simdev/op.h"
#include "simdev/park.h"
#include "simdev/sem.h"

#define SEM_SLOT(h) ((uint32_t)(((h) >> 32) & 0xffffu))
#define SEM_GEN(h) ((uint32_t)(h))
#define SEM_DEVICE(h) ((int)((h) >> 56))
#define WORD_GEN(w) ((uint32_t)((w) >> 32))
#define WORD(gen, count) (((uint64_t)(gen) << 32) | (uint32_t)(count))

/* The slot `sem` names on `dev` (live or not), or NULL for a handle that
 * cannot be the device's. */
static struct sd_sem *handle_slot(struct sd_device *dev, simdev_sem_t sem)
{
    if (!sem || SEM_DEVICE(sem) != dev->id || SEM_SLOT(sem) >= SIMDEV_MAX_SEMS)
        return NULL;
    return &dev->sems[SEM_SLOT(sem)];
}

/* Whether `sem` names the semaphore now in its slot. */
static bool handle_is_current(const struct sd_sem *s, simdev_sem_t sem)
{
    /* acquire: pairs with the release stores of create */
    return WORD_GEN(atomic_load_explicit(&s->tickets, memory_order_acquire)) == SEM_GEN(sem);
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
    while (i < SIMDEV_MAX_SEMS && dev->sems[i].live)
        i++;
    if (i == SIMDEV_MAX_SEMS) {
        pthread_mutex_unlock(&dev->lock);
        return PTO_RUNTIME_ERR_CAPACITY_EXCEEDED;
    }
    struct sd_sem *s = &dev->sems[i];
    /* The slot's words hold a dead generation (destroy moved it on): the
     * next one was never handed out. */
    uint32_t gen = WORD_GEN(atomic_load_explicit(&s->tickets, memory_order_relaxed)) + 1;
    if (gen == 0)
        gen = 1; /* 0 never names a semaphore: a handle is never 0 */
    atomic_store_explicit(&s->acquired, 0, memory_order_relaxed);
    atomic_store_explicit(&s->released, 0, memory_order_relaxed);
    atomic_store_explicit(&s->granted, WORD(gen, units), memory_order_release);
    atomic_store_explicit(&s->tickets, WORD(gen, 0), memory_order_release);
    s->live = true;
    pthread_mutex_unlock(&dev->lock);
    sd_count(dev, SIMDEV_OP_SEM_CREATE);
    *out = ((uint64_t)(uint32_t)dev->id << 56) | ((uint64_t)i << 32) | gen;
    return 0;
}

/* Ends the semaphore in slot `s`: its handle goes stale (both words move to
 * the next generation, which no handle names), its waiters wake and fail.
 * Caller must hold dev->lock. */
static void kill_slot(struct sd_sem *s)
{
    uint32_t dead = WORD_GEN(atomic_load_explicit(&s->tickets, memory_order_relaxed)) + 1;
    atomic_store_explicit(&s->tickets, WORD(dead, 0), memory_order_release);
    atomic_store_explicit(&s->granted, WORD(dead, 0), memory_order_release);
    s->live = false;
    sd_wake(&s->word);
}

int simdev_sem_destroy(simdev_sem_t sem)
{
    struct sd_device *dev = sem ? sd_device_peek(SEM_DEVICE(sem)) : NULL;
    struct sd_sem *s = dev ? handle_slot(dev, sem) : NULL;
    if (!s)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    int rc = sd_fault_check(dev, SIMDEV_OP_SEM_DESTROY);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&dev->lock);
    bool live = s->live && handle_is_current(s, sem);
    if (live)
        kill_slot(s);
    pthread_mutex_unlock(&dev->lock);
    if (!live)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    sd_count(dev, SIMDEV_OP_SEM_DESTROY);
    return 0;
}

void sd_sem_kill_all(struct sd_device *dev)
{
    pthread_mutex_lock(&dev->lock);
    for (uint32_t i = 0; i < SIMDEV_MAX_SEMS; i++)
        if (dev->sems[i].live)
            kill_slot(&dev->sems[i]);
    pthread_mutex_unlock(&dev->lock);
}

void sd_sem_wake_all(struct sd_device *dev)
{
    for (uint32_t i = 0; i < SIMDEV_MAX_SEMS; i++)
        sd_wake(&dev->sems[i].word);
}

int simdev_sem_info(simdev_sem_t sem, struct simdev_sem_info *out)
{
    struct sd_device *dev = sem ? sd_device_peek(SEM_DEVICE(sem)) : NULL;
    struct sd_sem *s = dev ? handle_slot(dev, sem) : NULL;
    if (!s || !out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    uint64_t tickets = atomic_load_explicit(&s->tickets, memory_order_acquire);
    if (WORD_GEN(tickets) != SEM_GEN(sem))
        return PTO_RUNTIME_ERR_INVALID_STATE;
    out->tickets = (uint32_t)tickets;
    out->acquired = atomic_load_explicit(&s->acquired, memory_order_acquire);
    out->released = atomic_load_explicit(&s->released, memory_order_acquire);
    return 0;
}

/* Adds 1 to the count in *word if it still carries `gen`; false when it
 * does not (the semaphore was destroyed). *before gets the count it had. */
static bool bump(_Atomic uint64_t *word, uint32_t gen, uint32_t *before)
{
    /* acquire on failure and acq_rel on success: a release publishes the
     * holder's work to the next holder, whose wait reads `granted` */
    uint64_t w = atomic_load_explicit(word, memory_order_acquire);
    do {
        if (WORD_GEN(w) != gen)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(word, &w, WORD(gen, (uint32_t)w + 1),
                                                    memory_order_acq_rel, memory_order_acquire));
    *before = (uint32_t)w;
    return true;
}

struct ticket_wait {
    struct sd_sem *sem;
    uint32_t generation;
    uint32_t ticket;
};

static bool ticket_granted(void *arg)
{
    struct ticket_wait *w = arg;
    /* acquire: pairs with the acq_rel of a release's bump */
    uint64_t g = atomic_load_explicit(&w->sem->granted, memory_order_acquire);
    /* held once granted has passed the ticket (wrapping counters) */
    return WORD_GEN(g) != w->generation || (int32_t)((uint32_t)g - w->ticket) > 0;
}

bool sd_sem_try_acquire(struct sd_device *dev, const struct sd_op *op, int *status)
{
    struct sd_sem *s = handle_slot(dev, op->u.sem);
    uint32_t gen = SEM_GEN(op->u.sem);
    int stale = sd_device_lost(dev) ? PTO_RUNTIME_ERR_DEVICE_LOST : PTO_RUNTIME_ERR_INVALID_STATE;
    uint64_t t = s ? atomic_load_explicit(&s->tickets, memory_order_acquire) : 0;
    if (!s || WORD_GEN(t) != gen) {
        *status = stale;
        return true;
    }
    /* The acquire sd_sem_run makes (model: round_gate.pml, AcquireGate),
     * taken only when its ticket is held at once: granted has passed it,
     * so every ticket before it holds too and the order is the tickets'. */
    uint64_t g = atomic_load_explicit(&s->granted, memory_order_acquire);
    if (WORD_GEN(g) != gen || (int32_t)((uint32_t)g - (uint32_t)t) <= 0)
        return false;
    /* acq_rel as bump's: the releaser's work before this holder's */
    if (!atomic_compare_exchange_strong_explicit(&s->tickets, &t, WORD(gen, (uint32_t)t + 1),
                                                 memory_order_acq_rel, memory_order_acquire))
        return false; /* another acquire took a ticket meanwhile: the waiting way */
    atomic_fetch_add_explicit(&s->acquired, 1, memory_order_relaxed);
    *status = 0;
    return true;
}

/* model: round_gate.pml, AcquireGate (the ticket taken with the gate
 * checked, and the wait for `granted`) and ReleaseGate (granted++) */
int sd_sem_run(struct sd_device *dev, const struct sd_op *op)
{
    struct sd_sem *s = handle_slot(dev, op->u.sem);
    uint32_t gen = SEM_GEN(op->u.sem), count;
    int stale = sd_device_lost(dev) ? PTO_RUNTIME_ERR_DEVICE_LOST : PTO_RUNTIME_ERR_INVALID_STATE;
    if (op->type == SD_OP_SEM_RELEASE) {
        if (!s || !bump(&s->granted, gen, &count))
            return stale;
        atomic_fetch_add_explicit(&s->released, 1, memory_order_relaxed);
        sd_wake(&s->word);
        return 0;
    }
    if (!s || !bump(&s->tickets, gen, &count))
        return stale;
    struct ticket_wait w = {s, gen, count};
    int rc = sd_wait(&s->word, ticket_granted, &w, dev->config.spin_ns, 0, &dev->lost);
    if (rc != 0)
        return rc;
    if (WORD_GEN(atomic_load_explicit(&s->granted, memory_order_acquire)) != gen)
        return PTO_RUNTIME_ERR_INVALID_STATE; /* destroyed while waiting */
    atomic_fetch_add_explicit(&s->acquired, 1, memory_order_relaxed);
    return 0;
}
