/*
 * runtime/watchdog.c — a scheduler's own thread after its handshake
 * (watchdog.h): a step on every wake-up, the run's end and failure, and the
 * no-progress watchdog with its stall class. Must not ring a core: the
 * step does, and rt_schedule ends the cores after the watch.
 */
#include "platform/platform.h"
#include "runtime/dispatch.h"
#include "runtime/layout.h"
#include "runtime/ready_queue.h"
#include "runtime/run.h"
#include "runtime/runtime.h"
#include "runtime/scheduler.h"
#include "runtime/step_token.h"
#include "runtime/wait.h"
#include "runtime/watchdog.h"
#include "simpler/status.h"

/* True when some owned core has an id in flight. */
static bool any_running(const struct sched *S)
{
    for (uint32_t i = 0; i < S->core_count; i++)
        if (!sched_core_idle(&S->cores[i]))
            return true;
    return false;
}

/* True when some ready work this scheduler serves may be queued or held. */
static bool work_visible(struct sched *S)
{
    for (uint32_t i = 0; i < S->core_count; i++)
        if (S->cores[i].local_count)
            return true;
    for (uint32_t k = 0; k < RT_SHAPES; k++) {
        if (S->held[k] || rt_rq_maybe_nonempty(&S->run->ready[k]))
            return true;
        if (S->index == S->run->sync_owner[k] && rt_rq_maybe_nonempty(&S->run->sync_ready[k]))
            return true;
    }
    return false;
}

/* True when a core loop this scheduler needs has not joined: one asked to
 * start, or any while work waits (a step asks for it then, dispatch.c).
 * A core never asked while no work waits is one the round did not need. */
static bool cores_missing(struct sched *S)
{
    for (uint32_t i = 0; i < S->core_count && S->waiting; i++)
        if (S->cores[i].waiting && S->cores[i].asked)
            return true;
    return S->waiting && work_visible(S);
}

/* Why a run made no progress for a whole watchdog period (enum rt_stall),
 * from the schedulers in `set` (their tokens held: every scheduler whose
 * thread opened it). */
static uint32_t classify_stall(struct sched *const *set, uint32_t n)
{
    struct rt_run *run = set[0]->run;
    for (uint32_t k = 0; k < n; k++) {
        rt_sched_see_joins(set[k]);
        if (cores_missing(set[k]))
            return RT_STALL_CORES_NOT_STARTED; /* an owned core loop never joined */
    }
    bool running = atomic_load_explicit(&run->cores_running, memory_order_relaxed) != 0;
    for (uint32_t k = 0; k < n && !running; k++)
        running = any_running(set[k]);
    if (running)
        return RT_STALL_RUNNING; /* some scheduler's cores */
    for (uint32_t k = 0; k < n; k++)
        if (work_visible(set[k]))
            return RT_STALL_READY_BUT_IDLE;
    uint64_t submitted = atomic_load_explicit(&run->tasks_submitted, memory_order_acquire);
    uint64_t completed = atomic_load_explicit(&run->tasks_completed, memory_order_acquire);
    if (completed == submitted)
        return RT_STALL_ORCH_STARVATION;
    return RT_STALL_DEPENDENCY_DEADLOCK;
}

/* A measure that grows with every submit, completion and dispatch (of
 * the watcher's scheduler and of every one whose thread left it to the
 * watcher: no other dispatches): the watchdog restarts on every change. */
static uint64_t sched_progress_mark(struct rt_run *run, struct sched *S)
{
    uint64_t m = atomic_load_explicit(&run->tasks_completed, memory_order_relaxed) +
                 atomic_load_explicit(&run->tasks_submitted, memory_order_relaxed) +
                 atomic_load_explicit(&S->dispatched, memory_order_relaxed);
    for (uint32_t i = 0; i < run->schedulers; i++)
        if (i != S->index && rt_sched_left(run, i))
            m += atomic_load_explicit(&rt_sched_state(run, i)->dispatched,
                                      memory_order_relaxed);
    return m;
}

/* The watch's state between wake-ups. */
struct own_wait {
    struct sched *S;
    uint64_t timeout_ns, nap_ns;
    uint64_t mark, last_progress; /* the watchdog's */
    uint64_t deadline;            /* the current nap's end */
    bool stalled;                 /* no progress for timeout_ns */
};

/* One wake-up of the scheduler's own thread: a step, then the run's end,
 * failure and the watchdog. Done when the thread should leave the loop;
 * else the next nap's end is set. */
static bool own_wait_done(void *arg)
{
    struct own_wait *w = arg;
    struct sched *S = w->S;
    struct rt_run *run = S->run;
    rt_sched_kick_all(run); /* the schedulers whose threads left too */
    if (rt_error(run) || rt_run_finished(run))
        return true;
    if (platform_device_lost(run->device) > 0) {
        rt_fail(run, SIMPLER_SCHED_ERR_TIMEOUT);
        return true;
    }
    uint64_t now = platform_clock_ns();
    uint64_t m = sched_progress_mark(run, S);
    if (m != w->mark) {
        w->mark = m;
        w->last_progress = now;
    } else if (now - w->last_progress >= w->timeout_ns) {
        w->stalled = true;
        return true;
    }
    uint64_t left = w->timeout_ns - (now - w->last_progress);
    w->deadline = now + (left < w->nap_ns ? left : w->nap_ns);
    /* A lone task's core that the orchestrator still owes is this
     * thread's to start once due (dispatch.h, "owed"): an orchestration
     * that goes on without calling the runtime must not hold it back. */
    uint64_t due = rt_owed_core_due(run);
    if (due <= now)
        rt_start_owed_core(run);
    else if (due < w->deadline)
        w->deadline = due;
    return false;
}

/*
 * The watcher's own thread after the handshake: it runs a step of every
 * scheduler on every wake-up (so nothing can be left unstepped, the
 * schedulers whose threads left included), and otherwise sleeps on its
 * notification channel. Who ends the sleep: the completion of the
 * run's last task and the orchestrator's end (rt_signal), a latched error
 * (rt_fail), a lost device, or the nap's end — a quarter of the watchdog's
 * period, when it compares the progress mark and fails the run with
 * SIMPLER_SCHED_ERR_TIMEOUT after sched_timeout_ms without progress.
 * Returns with the scheduler closed (its token held), and whether the
 * watchdog expired.
 */
bool rt_sched_watch(struct sched *S)
{
    struct rt_run *run = S->run;
    struct own_wait w = {.S = S};
    w.timeout_ns = (uint64_t)run->config.sched_timeout_ms * 1000000ull;
    w.nap_ns = w.timeout_ns / 4 ? w.timeout_ns / 4 : 1;
    w.mark = sched_progress_mark(run, S);
    w.last_progress = platform_clock_ns();
    w.deadline = w.last_progress + w.nap_ns;
    /* A nap's end (TIMEOUT) only means: look again. */
    int rc;
    while ((rc = rt_wait_until_spinning(run->device, RT_NOTIFY_SCHED, own_wait_done, &w,
                                        &w.deadline)) == PTO_RUNTIME_ERR_TIMEOUT)
        ;
    if (rc == PTO_RUNTIME_ERR_DEVICE_LOST)
        rt_fail(run, SIMPLER_SCHED_ERR_TIMEOUT);
    rt_sched_close(run, S->index);
    return w.stalled;
}

void rt_sched_fail_stalled(struct sched *const *set, uint32_t n)
{
    struct rt_run *run = set[0]->run;
    /* The class is stored first so that whoever sees the error latched
     * (acquire) also sees why. */
    uint32_t expected = RT_STALL_NONE;
    atomic_compare_exchange_strong_explicit(&run->stall_class, &expected, classify_stall(set, n),
                                            memory_order_release, memory_order_relaxed);
    rt_fail(run, SIMPLER_SCHED_ERR_TIMEOUT);
}
