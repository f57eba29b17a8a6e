/*
 * runtime/wait.c — the one bounded wait of the device runtime's AICPU
 * threads.
 *
 * Owns: rt_wait_until, the loop every AICPU-side wait of the runtime uses
 * (a scheduler waiting for the run's initialisation or for its cores'
 * hello, the scheduler's own thread between steps, the orchestrator
 * waiting for ring space or a producer): read the sequence it sleeps on,
 * look at the condition, give up at the deadline, sleep until the sequence
 * moves. Knows nothing of what it waits for; each caller names, at the
 * call, who ends its wait. Also the two wakers (rt_signal,
 * rt_signal_orch) that end such waits.
 */
#include "platform/platform.h"
#include "runtime/run.h"
#include "runtime/wait.h"
#include "simpler/status.h"

static uint64_t wait_seq(int device, uint32_t on)
{
    return on == RT_WAIT_COND ? platform_cond_seq(device) : platform_notify_seq(device, on);
}

/* rt_wait_until's and rt_wait_until_spinning's loop. */
static int wait_until(int device, uint32_t on, bool spinning, bool (*done)(void *arg), void *arg,
                      const uint64_t *deadline_ns)
{
    for (;;) {
        /* The sequence before the look: a change after the look moves it,
         * and the sleep below returns at once. */
        uint64_t seq = wait_seq(device, on);
        if (done(arg))
            return 0;
        uint64_t now = platform_clock_ns();
        if (now >= *deadline_ns)
            return PTO_RUNTIME_ERR_TIMEOUT;
        int rc = on == RT_WAIT_COND ? platform_cond_wait(device, seq, *deadline_ns - now)
                 : spinning ? platform_notify_wait_within_budget(device, on, seq,
                                                                 *deadline_ns - now)
                            : platform_notify_wait(device, on, seq, *deadline_ns - now);
        if (rc == PTO_RUNTIME_ERR_DEVICE_LOST)
            return rc;
    }
}

int rt_wait_until(int device, uint32_t on, bool (*done)(void *arg), void *arg,
                  const uint64_t *deadline_ns)
{
    return wait_until(device, on, false, done, arg, deadline_ns);
}

int rt_wait_until_spinning(int device, uint32_t on, bool (*done)(void *arg), void *arg,
                           const uint64_t *deadline_ns)
{
    return wait_until(device, on, true, done, arg, deadline_ns);
}

void rt_signal(struct rt_run *run)
{
    if (run->hbg)
        return; /* a host build: no device thread waits on it */
    platform_cond_signal(run->device);
    platform_notify_signal(run->device, RT_NOTIFY_SCHED);
}

void rt_signal_orch(struct rt_run *run)
{
    if (run->hbg)
        return;
    platform_notify_signal(run->device, RT_NOTIFY_ORCH);
}
