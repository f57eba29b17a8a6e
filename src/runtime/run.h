/*
 * runtime/run.h — one run's shared state, at the start of its arena.
 *
 * Owns: struct rt_run, the state every role of a run shares (the
 * orchestrator, the schedulers, the core loops), and its small inline
 * accessors: the run's failure latch and a slot's payload. Who writes each
 * field is stated next to it. Must not hold behaviour: run init and the
 * result block are aicpu_program.c's, each role's work its own module's.
 *
 * Threads: one orchestrator (the last AICPU thread of the launch), one or
 * more schedulers (the others), the core loop on every AICore.
 */
#ifndef SIMPLER_RUNTIME_RUN_H
#define SIMPLER_RUNTIME_RUN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/cpu.h"
#include "runtime/layout.h"
#include "runtime/ready_queue.h"
#include "runtime/ring.h"
#include "runtime/runtime.h"
#include "runtime/scope.h"
#include "runtime/task.h"
#include "runtime/tensormap.h"
#include "runtime/wait.h"
#include "simpler/device_fn.h"
#include "simpler/kernel.h"
#include "simpler/orchestration.h"

struct rt_dispatch;
struct rt_hbg_build_state;
struct rt_rendezvous;
struct rt_sched;
struct simdev_core_regs;

/* One run's shared state, at the start of the arena. */
struct rt_run {
    struct simpler_orch handle; /* first: the orchestration's view */
    struct rt_config config;
    int device;
    uint32_t aic_count, aiv_count, cluster_count, core_count;
    uint32_t schedulers;
    uint64_t generation; /* this run's launch generation */
    const simpler_kernel_fn *kernels;
    uint32_t kernel_count;
    struct rt_dispatch *dispatch; /* [core_count][RT_CORE_QUEUE] */
    struct rt_rendezvous *rendezvous; /* [core_count], zeroed by the launch chain */
    struct rt_sched *scheds;      /* [schedulers]: each scheduler's token and step state */

    struct rt_ring rings[RT_RINGS];
    struct rt_ready_queue ready[RT_SHAPES];
    /* Sync-start tasks, served only by sync_owner[shape]: the scheduler
     * owning the most units of the shape (sync_units of them), so a task
     * that passed the submit check always fits where it is popped. */
    struct rt_ready_queue sync_ready[RT_SHAPES];
    /* The arena_nonce of the run that last ended clean on this arena with
     * every queue above empty; 0 while a run is on (aicpu_program.c). */
    uint64_t rq_token;
    uint32_t sync_owner[RT_SHAPES];
    uint32_t sync_units[RT_SHAPES];

    /* Orchestrator only. */
    struct rt_tensormap tensormap;
    /* The arena_nonce of the run that last laid the TensorMap out or reset
     * it on this arena, whatever its end; 0 while run_init works
     * (aicpu_program.c). */
    uint64_t tm_token;
    struct rt_scope scopes[SIMPLER_SCOPE_MAX_DEPTH];
    uint32_t scope_depth; /* open scopes */
    uint64_t next_scope_serial;
    struct rt_slot **scope_tasks;
    uint32_t scope_task_top;
    uint32_t scope_task_capacity;
    struct rt_slot **fanin_scratch; /* max_fanin producers of the task being submitted */
    uint32_t *fanin_sources;        /* RT_EDGE_* per scratch entry */
    uint32_t fanin_n;
    uint64_t tasks_submitted_local;
    bool mates_due; /* rt_let_mates_arrive still to run (orchestrator.c) */
    /* The schedulers' threads are not started yet (a TMR program's
     * launch starts the orchestrator's thread alone): the orchestrator
     * starts them at its second submit where the runnable budget leaves a
     * CPU for a core beside them (schedulers_at_submit), else at its
     * first wait, or its return does (docs/runtime.md, "The schedulers
     * started on demand"). */
    bool others_held;
    bool schedulers_at_submit;
    /* A core is owed (below); the orchestrator's own note, so that its
     * submits look at no line the cores write (measured: a look at
     * core_owed beside tasks_completed cost independent tasks 20%). */
    bool owes_core;
    /* The core a lone task needs whose start a step on the orchestrator's
     * thread put off (dispatch.c, "owed"): its id + 1, or 0; taken by an
     * exchange (the orchestrator, or the watcher once it is due).
     * core_owed_ns: when it was put off (written before it). */
    _Atomic uint32_t core_owed;
    _Atomic uint64_t core_owed_ns;
    uint64_t edges;
    uint64_t ring_waits;
    uint32_t tensormap_live_peak;
    /* host_build_graph. On the host, the build this run is (hbg_build.c;
     * NULL on the device): nothing is ever published, no wait is made and
     * nothing of the device is touched. On the device, the image's
     * producer lists (NULL in a TMR run). */
    struct rt_hbg_build_state *hbg;
    const uint32_t *hbg_producers;
    const uint8_t *hbg_records; /* the image's first task record, checked (rt_hbg_lay) */
    uint32_t hbg_task_count;

    /* Shared. Each group on its own line: written by different threads. */
    _Alignas(RT_CACHELINE) _Atomic int32_t error; /* first positive code wins */
    _Atomic uint32_t stall_class;
    _Alignas(RT_CACHELINE) _Atomic uint64_t tasks_completed;
    _Atomic uint64_t subtasks_dispatched;
    _Atomic uint32_t cores_running; /* cores holding a running task, all schedulers */
    /* Cores asked to start (dispatch.c, start_cores) that have not joined
     * yet, per core type, all schedulers: a step of any scheduler asks
     * for one more core for a lone task only when none is coming. */
    _Atomic uint32_t cores_coming[2];
    /* Written by every submit, read by the watchdog and the run's end only. */
    _Alignas(RT_CACHELINE) _Atomic uint64_t tasks_submitted; /* orchestrator, release */
    /* Read by every completion and retirement, written by the orchestrator
     * only when it ends or waits: its own line, so that the submits'
     * writes above do not take it from the cores' caches. */
    _Alignas(RT_CACHELINE) _Atomic uint32_t orch_done;      /* orchestrator, release */
    _Atomic uint32_t orch_waiting; /* orchestrator is (about to be) blocked */
    /* What a blocked orchestrator waits for, stored before orch_waiting
     * (release): 0 = any change (signal on every completion and
     * retirement); else RT_ORCH_WAIT_SLOTS(ring, alive) = task slots of
     * `ring`, which need last_alive >= alive (signal only then). */
    _Atomic uint64_t orch_wait_target;
    /* Run before init_generation is published, read after its acquire:
     * whether the orchestrator ran every scheduler's prologue (its
     * handshake and opening, scheduler.c) before it published the run,
     * and what each scheduler's own thread still does then. */
    bool prologued;
    uint8_t sched_next[SIMDEV_MAX_AICPU_THREADS]; /* enum rt_sched_next */
    _Alignas(RT_CACHELINE) _Atomic uint64_t init_generation;
    _Atomic uint32_t threads_finished;
    /* Per core, written once a round by its core loop (release) when it
     * starts fetching work while idle (core_loop.c), read by a submit that
     * decides whether it must run a step (rt_sched_publish). */
    _Alignas(RT_CACHELINE) _Atomic uint32_t core_pulling[SIMDEV_MAX_CORES];
    struct simdev_core_regs *core_regs[SIMDEV_MAX_CORES]; /* for platform_hint_core_parked */
};

/* Latches `code` (positive) as the run's error if none is latched yet, and
 * wakes every waiting AICPU thread so it sees the failure at once. Returns
 * true when this call latched it. */
static inline bool rt_fail(struct rt_run *run, int32_t code)
{
    int32_t none = 0;
    if (!atomic_compare_exchange_strong_explicit(&run->error, &none, code, memory_order_acq_rel,
                                                 memory_order_acquire))
        return false;
    rt_signal(run);
    rt_signal_orch(run);
    return true;
}

/* The run's latched error (positive), or 0 while it has not failed. */
static inline int32_t rt_error(struct rt_run *run)
{
    return atomic_load_explicit(&run->error, memory_order_acquire);
}

/* Latches `code` and returns the run's (first) error, negated: what an
 * orchestrator-side call returns once the run has failed. */
static inline int rt_fail_negated(struct rt_run *run, int32_t code)
{
    rt_fail(run, code);
    return -rt_error(run);
}

/* True once the orchestrator has finished and every task has completed. */
static inline bool rt_run_finished(struct rt_run *run)
{
    /* seq_cst: pairs with the completer's seq_cst increment of
     * tasks_completed and its look at orch_done (rt_run_count_completion):
     * either it sees orch_done and signals, or we see its completion here */
    if (!atomic_load_explicit(&run->orch_done, memory_order_seq_cst))
        return false;
    return atomic_load_explicit(&run->tasks_completed, memory_order_seq_cst) ==
           atomic_load_explicit(&run->tasks_submitted, memory_order_acquire);
}

/* Counts one task's completion: true when it was the run's last with the
 * orchestration done, so that the completer's step signals the run's end
 * (rt_sched_step). seq_cst: the other half of rt_run_finished's pairing —
 * either the scheduler's own thread sees this completion, or this sees
 * orch_done. TMR's completion and host_build_graph's both count here. */
static inline bool rt_run_count_completion(struct rt_run *run)
{
    uint64_t completed =
        atomic_fetch_add_explicit(&run->tasks_completed, 1, memory_order_seq_cst) + 1;
    return atomic_load_explicit(&run->orch_done, memory_order_seq_cst) &&
           completed == atomic_load_explicit(&run->tasks_submitted, memory_order_acquire);
}

/* The cold payload of the task in `s`. */
static inline struct rt_task *rt_slot_task(struct rt_run *run, struct rt_slot *s)
{
    struct rt_ring *r = &run->rings[s->ring];
    return &r->tasks[s - r->slots];
}

#endif /* SIMPLER_RUNTIME_RUN_H */
