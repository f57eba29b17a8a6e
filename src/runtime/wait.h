/*
 * runtime/wait.h — how the device runtime's AICPU threads sleep and wake.
 *
 * Owns: the channels a thread sleeps on (the device's condition sequence,
 * the notification channels of the orchestrator and the schedulers), the
 * one bounded wait every AICPU-side wait uses (wait.c), and the wakers of
 * the run's AICPU threads (wait.c defines them). Must not know what a wait
 * waits for: each caller names, at the call, who ends its wait.
 */
#ifndef SIMPLER_RUNTIME_WAIT_H
#define SIMPLER_RUNTIME_WAIT_H

#include <stdbool.h>
#include <stdint.h>

struct rt_run;

/* Wakes the AICPU threads that wait for the run's state to change: a
 * scheduler waiting for the run's initialisation (platform_cond_wait) and
 * the schedulers' own threads (RT_NOTIFY_SCHED). Not on the per-task path:
 * the run's end, its failure, its initialisation. Defined in task.c, as is
 * rt_signal_orch. */
void rt_signal(struct rt_run *run);
#define RT_NOTIFY_SCHED 1

/* The orchestrator waits on its own notification channel, so core FIN
 * writes (which bump the condition sequence) never wake it; only
 * retirement, completion and failure do, and only while it waits. */
#define RT_NOTIFY_ORCH 0
void rt_signal_orch(struct rt_run *run);

/*
 * The runtime's bounded wait (wait.c): until done(arg) returns true (0),
 * *deadline_ns passes (PTO_RUNTIME_ERR_TIMEOUT; absolute, platform_clock_ns)
 * or the device is lost (PTO_RUNTIME_ERR_DEVICE_LOST). It sleeps on `on`:
 * RT_WAIT_COND, the device's condition sequence (core condition writes,
 * rt_signal), or a notification channel (RT_NOTIFY_*). done() runs after
 * the sequence is read, so whoever makes it true and then bumps the
 * sequence ends the wait; it may move *deadline_ns (a watchdog restarted
 * by progress).
 */
#define RT_WAIT_COND UINT32_MAX
int rt_wait_until(int device, uint32_t on, bool (*done)(void *arg), void *arg,
                  const uint64_t *deadline_ns);

/* rt_wait_until on a notification channel whose sleeps spin first as long
 * as an idle core does, within the runnable budget
 * (platform_notify_wait_within_budget): for the watcher's wait for its
 * run's end, which a one-task round reaches 10-30 us after the watcher
 * began to wait, and whose wake-up system call the round's last core would
 * make and a parked watcher would take 10 us to answer (measured:
 * docs/performance.md, "The watcher waits awake"). */
int rt_wait_until_spinning(int device, uint32_t on, bool (*done)(void *arg), void *arg,
                           const uint64_t *deadline_ns);

#endif /* SIMPLER_RUNTIME_WAIT_H */
