/*
 * runtime/rt.h — the device runtime's private structures.
 *
 * Owns: the layout of one run's state in the arena (rings, task slots,
 * dependency pools, ready queues, per-core dispatch payloads, the
 * orchestrator's scope stack) and the small protocols shared by the
 * orchestrator, the schedulers and the core loop. Included only by
 * src/runtime.
 *
 * Threads: one orchestrator (the last AICPU thread of the launch), one or
 * more schedulers (the others), the core loop on every AICore. Who writes
 * each field is stated next to it.
 */
#ifndef SIMPLER_RUNTIME_RT_H
#define SIMPLER_RUNTIME_RT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/task_id.h"
#include "platform/platform.h"
#include "runtime/core_regs.h"
#include "runtime/cpu.h"
#include "runtime/entries.h"
#include "runtime/layout.h"
#include "runtime/rendezvous.h"
#include "runtime/runtime.h"
#include "runtime/tensormap.h"
#include "runtime/trace.h"
#include "simpler/kernel.h"
#include "simpler/orchestration.h"
#include "simpler/status.h"

#define RT_HEAP_ALIGN 64


enum rt_task_state { RT_PENDING = 0, RT_COMPLETED = 1, RT_CONSUMED = 2 };

#define RT_LANE_AIC 1u
#define RT_LANE_AIV0 2u
#define RT_LANE_AIV1 4u

/*
 * Hot per-task state, one cache line, shared by the orchestrator and the
 * schedulers. The fields marked "lock" are read and written only under
 * `lock` (a spinlock); the consumed decision is made under it.
 *
 * Reference counting (the consumed rule): fanout_count counts holders —
 * 1 for the owning scope, 1 for the task's own completion processing, +1
 * per consumer wired to it; fanout_released counts releases of those. A
 * task is CONSUMED (its slot, heap bytes and dependency entries may be
 * reclaimed) once it is COMPLETED and every holder has released.
 */
struct rt_slot {
    _Atomic uint32_t lock;
    uint32_t fanout_count;    /* lock */
    uint32_t fanout_released; /* lock */
    uint32_t closed;          /* lock: consumed decided; no new consumer may wire */
    uint64_t fanout_head;     /* lock: consumers list, dep position + 1 (0 = empty) */
    _Atomic uint32_t state;   /* enum rt_task_state; COMPLETED/CONSUMED stores are release */
    _Atomic int32_t fanin_pending; /* producers not yet completed + 1 while wiring */
    _Atomic uint32_t completed_subtasks;
    _Atomic uint32_t next_block;   /* SPMD: next block to claim */
    _Atomic uint64_t task_id;      /* orchestrator writes at allocation */
    uint32_t total_subtasks;  /* block_num x lanes */
    uint32_t block_num;
    uint8_t shape;            /* enum rt_shape */
    uint8_t lanes;            /* RT_LANE_* */
    uint8_t ring;
    uint8_t sync_start;
    uint16_t scope_depth;     /* orchestrator only (< SIMPLER_SCOPE_MAX_DEPTH) */
    uint8_t heap_outputs;     /* orchestrator only: some OUTPUT lives in the ring heap */
    uint8_t reserved;
};
_Static_assert(SIMPLER_SCOPE_MAX_DEPTH <= UINT16_MAX, "rt_slot.scope_depth is 16 bits");

/* Cold per-task payload: what the kernels get, and bookkeeping the
 * orchestrator writes before publishing the task. */
struct rt_task {
    uint32_t tensor_count;
    uint32_t scalar_count;
    int32_t kernel[3];     /* by lane: AIC, AIV0, AIV1 */
    uint32_t fanin_count;  /* producers in fanin_head */
    uint64_t fanin_head;   /* producers this task holds, dep position + 1 */
    uint64_t heap_end;     /* heap position after this task's outputs */
    uint64_t dep_end;      /* dep position after this task's entries */
    uint64_t scope_serial; /* serial of the scope that submitted it */
    struct simpler_tensor tensors[SIMPLER_TASK_MAX_TENSORS];
    uint64_t scalars[SIMPLER_TASK_MAX_SCALARS];
};

/* The TensorMap entries a task inserted, for rt_tensormap_forget when its
 * slot is reused. Orchestrator only, and apart from struct rt_task (which
 * the cores read): the submit that reuses a slot reads it a window later,
 * from a table of 132 bytes a task rather than the task's cold payload. */
struct rt_tm_record {
    uint32_t count;
    uint32_t entry[SIMPLER_TASK_MAX_TENSORS];
};

/* A dependency-list node: in a producer's consumer list `slot` is the
 * consumer; in a consumer's producer list it is the producer. */
struct rt_dep {
    struct rt_slot *slot;
    uint64_t next; /* position + 1 of the next node, 0 = end */
};

/*
 * One ring set (task window, output heap, dependency pool). The
 * orchestrator allocates at the heads (single writer, no atomics); the
 * schedulers retire strictly in order and publish the tails.
 */
struct rt_ring {
    uint32_t window;
    uint32_t mask;
    uint64_t heap_bytes;
    uint64_t dep_capacity;
    struct rt_slot *slots;
    struct rt_task *tasks;
    struct rt_tm_record *tm; /* [window], orchestrator only */
    uint8_t *heap;
    struct rt_dep *deps;

    /* Orchestrator only: monotonic positions. */
    uint64_t next_local;
    uint64_t heap_head;
    uint64_t heap_floor; /* heap space below this is free (rebase of an empty ring) */
    uint64_t dep_head;
    /* The tails as the orchestrator last read them (never ahead of the
     * real ones): a reservation that fits below them reads no line the
     * retiring cores write (ring.c). */
    uint64_t alive_seen, heap_tail_seen, dep_tail_seen;
    /* First lap: slots [0, slots_clean) hold no task or a task of this
     * run (rt_ring_take_slot); the others may hold an earlier run's. */
    uint64_t slots_clean;

    /* Retirement, published by whoever holds advance_lock; own line, since
     * the orchestrator polls it while schedulers write it. */
    _Alignas(RT_CACHELINE) _Atomic uint64_t last_alive; /* oldest unretired local id */
    _Atomic uint64_t heap_tail;
    _Atomic uint64_t dep_tail;
    _Atomic uint32_t advance_lock;
    _Atomic uint32_t advance_pending;
};

/* Bounded lock-free MPMC queue of slots (Vyukov): a cell's sequence says
 * whose turn it is. Positions on their own lines: pushers and poppers are
 * different threads. */
struct rt_rq_cell {
    _Atomic uint64_t seq;
    struct rt_slot *slot;
};

struct rt_ready_queue {
    _Alignas(RT_CACHELINE) _Atomic uint64_t enqueue_pos;
    _Alignas(RT_CACHELINE) _Atomic uint64_t dequeue_pos;
    _Alignas(RT_CACHELINE) uint64_t mask;
    struct rt_rq_cell *cells;
};

void rt_rq_init(struct rt_ready_queue *q, struct rt_rq_cell *cells, uint64_t capacity);
/* false when full (never, when sized for every live task) */
bool rt_rq_push(struct rt_ready_queue *q, struct rt_slot *slot);
/* NULL when empty */
struct rt_slot *rt_rq_pop(struct rt_ready_queue *q);
/* Approximate: for diagnostics and idle decisions only. True when a pop
 * would find the head published (reads the poppers' lines only). */
bool rt_rq_maybe_nonempty(struct rt_ready_queue *q);
/* Approximate number of queued tasks (claimed pushes minus claimed pops;
 * 0 while the head is not published): for placement decisions only. */
uint64_t rt_rq_length(struct rt_ready_queue *q);
/* True when a pop would find a task now (the head cell is published);
 * *head is the head's position. Changes nothing. */
bool rt_rq_peek(struct rt_ready_queue *q, uint64_t *head);
/* True when `q` was last initialised over `cells` of `capacity` cells and
 * is empty. Only for a queue nobody pushes to or pops from any more (at a
 * run's end, or between runs): a queue a run drained is consistent as it
 * stands, every cell's sequence naming the next position that maps to it. */
bool rt_rq_idle_over(const struct rt_ready_queue *q, const struct rt_rq_cell *cells,
                     uint64_t capacity);

/* Per-core dispatch payload (RT_CORE_QUEUE per core, chosen by
 * rt_payload_index of the dispatch id):
 * written by the scheduler before the doorbell (release), read by the core
 * after it (acquire); the core writes ctx.failure before FIN. */
struct rt_dispatch {
    simpler_kernel_fn fn;
    int64_t args[SIMPLER_KERNEL_ARGS];
    struct simpler_kernel_context ctx;
};

struct rt_layout;

/* Core register protocol values: core_regs.h. Only a scheduler JOINED with
 * the core in this round (rendezvous.c) rings its doorbell. */

#define RT_ORCH_WAIT_SLOTS(ring, alive) ((((uint64_t)(ring) + 1) << RT_LOCAL_BITS) | (alive))

struct rt_scope {
    uint64_t serial;
    uint32_t mode;  /* enum simpler_scope_mode */
    uint32_t begin; /* index into scope_tasks */
};

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
    struct rt_sched *scheds;      /* [schedulers]: each scheduler's step state (scheduler.c) */

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
    uint64_t edges;
    uint64_t ring_waits;
    uint32_t tensormap_live_peak;

    /* Shared. Each group on its own line: written by different threads. */
    _Alignas(RT_CACHELINE) _Atomic int32_t error; /* first positive code wins */
    _Atomic uint32_t stall_class;
    _Alignas(RT_CACHELINE) _Atomic uint64_t tasks_completed;
    _Atomic uint64_t subtasks_dispatched;
    _Atomic uint32_t cores_running; /* cores holding a running task, all schedulers */
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
    _Alignas(RT_CACHELINE) _Atomic uint64_t init_generation;
    _Atomic uint32_t threads_finished;
    /* Per core, written once a round by its core loop (release) when it
     * starts fetching work while idle (core_loop.c), read by a submit that
     * decides whether it must run a step (rt_sched_publish). */
    _Alignas(RT_CACHELINE) _Atomic uint32_t core_pulling[SIMDEV_MAX_CORES];
    struct simdev_core_regs *core_regs[SIMDEV_MAX_CORES]; /* for platform_hint_core_parked */
};

/* Whether a core of `type` (enum simdev_core_type), other than core
 * `except`, fetches work while idle (core_pulling) and is not parked: it is
 * running a kernel (its FIN's step will see the ready queue) or idle and
 * awake (its own wait will). A hint, like platform_hint_core_parked; callers pair
 * it with the parking core's announcement and fence (see core_loop.c). */
static inline bool rt_fetcher_awake(const struct rt_run *run, uint32_t type, uint32_t except)
{
    uint32_t first = type == SIMDEV_CORE_AIC ? 0 : run->aic_count;
    uint32_t end = type == SIMDEV_CORE_AIC ? run->aic_count : run->core_count;
    for (uint32_t c = first; c < end; c++)
        /* acquire: pairs with the core loop's release of core_pulling */
        if (c != except && atomic_load_explicit(&run->core_pulling[c], memory_order_acquire) &&
            !platform_hint_core_parked(run->core_regs[c]))
            return true;
    return false;
}

/*
 * Core ownership: scheduler thread t of n owns AIC core i when i % n == t,
 * and AIV core j (core id aic_count + j) with the cluster j / 2 when that
 * cluster exists (so a cluster {AIC c, AIV 2c, AIV 2c+1} has one owner),
 * else when j % n == t.
 */
static inline uint32_t rt_core_owner(uint32_t aic_count, uint32_t cluster_count,
                                     uint32_t schedulers, uint32_t core_id)
{
    if (core_id < aic_count)
        return core_id % schedulers;
    uint32_t j = core_id - aic_count;
    return j / 2 < cluster_count ? (j / 2) % schedulers : j % schedulers;
}

/* Wakes the AICPU threads that wait for the run's state to change: a
 * scheduler waiting for the run's initialisation (platform_cond_wait) and the
 * schedulers' own threads (RT_NOTIFY_SCHED). Not on the per-task path: the
 * run's end, its failure, its initialisation. */
void rt_signal(struct rt_run *run);
#define RT_NOTIFY_SCHED 1

/* The orchestrator waits on its own notification channel, so core FIN
 * writes (which bump the condition sequence) never wake it; only
 * retirement, completion and failure do, and only while it waits. */
#define RT_NOTIFY_ORCH 0
void rt_signal_orch(struct rt_run *run);

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

/* --------------------------------------------------- task life (task.c) */

void rt_slot_lock(struct rt_slot *s);
void rt_slot_unlock(struct rt_slot *s);

/* ------------------------------------------------------- rings (ring.c) */

static inline uint32_t rt_ring_of_depth(uint32_t depth)
{
    return depth < RT_RINGS ? depth : RT_RINGS - 1;
}

/* Resets ring `i` of a run laid out by `l` in the arena at `base`. */
void rt_ring_init(struct rt_ring *r, const struct rt_config *config, uint32_t i, uint8_t *base,
                  const struct rt_layout *l);
/* The orchestrator takes slot `local` (its next_local) of ring `r`: makes
 * the slot after it hold no task, before the task in `local` can be
 * published. */
void rt_ring_take_slot(struct rt_ring *r, uint64_t local);

/* True when the task `id` has retired (its slot may hold another task). */
bool rt_task_retired(struct rt_run *run, uint64_t id);

/* Walks ring `ring`'s tail over consecutive CONSUMED tasks, publishes the
 * new tails and wakes the orchestrator if it waits for them. Safe from
 * any thread; never blocks. */
void rt_ring_advance(struct rt_run *run, uint32_t ring);

/* Orchestrator only. A wait's condition, asked after every wake-up. */
typedef bool (*rt_orch_ready_fn)(struct rt_run *run, void *arg);
/* Blocks until ready(run, arg): 0; the run's error (negated) when it fails
 * meanwhile; -timeout_code after timeout_ms without any task completing or
 * retiring; the code `structural` returns (latched) once the wait can
 * never succeed. `target` is what a waker must provide to signal (0: any
 * completion or retirement; RT_ORCH_WAIT_SLOTS: task slots of one ring). */
int rt_orch_block_for(struct rt_run *run, rt_orch_ready_fn ready, void *arg,
                      int32_t (*structural)(struct rt_run *, void *), uint32_t timeout_ms,
                      int32_t timeout_code, uint64_t target);
int rt_orch_block(struct rt_run *run, rt_orch_ready_fn ready, void *arg,
                  int32_t (*structural)(struct rt_run *, void *), uint32_t timeout_ms,
                  int32_t timeout_code);
/* Back-pressure at the heads: a task slot and `heap_need` heap bytes
 * (*heap_pos: where the outputs go), or `need` dependency entries. 0 or
 * the run's error, negated. */
int rt_ring_reserve_task(struct rt_run *run, uint32_t ring, uint64_t heap_need,
                         uint64_t *heap_pos);
int rt_ring_reserve_deps(struct rt_run *run, uint32_t ring, uint64_t need);
/* Takes a dependency entry at the ring's head (space already reserved);
 * returns its handle (ring-tagged position + 1). */
uint64_t rt_ring_dep_take(struct rt_ring *r, uint32_t ring, struct rt_slot *slot,
                          uint64_t next);
/* True when the scope that submitted the task in `s` is still open
 * (orchestrator.c). */
bool rt_scope_open(struct rt_run *run, struct rt_slot *s);

/* Drops one holder of `s` (scope end, consumer release, completion
 * processing) and, if it was the last of a COMPLETED task, marks it
 * CONSUMED and advances its ring. */
void rt_slot_release(struct rt_run *run, struct rt_slot *s);

/* rt_slot_release without the advance: true when it made the task
 * CONSUMED, and the caller must then advance the task's ring (read
 * s->ring before: the slot is the ring's after this returns true). For a
 * caller that drops many holds at once and advances each ring once. */
bool rt_slot_drop(struct rt_slot *s);

/* Tasks a completion made ready, kept by the scheduler's step so they go
 * first (scheduler.c: the immediate successor runs on the completing
 * core). Only single-block AIC/AIV tasks without sync-start go here; the
 * rest, and any beyond the capacity, go to the ready queues. */
#define RT_RELEASED_MAX 16
struct rt_released {
    uint32_t count;
    struct rt_slot *slot[RT_RELEASED_MAX];
};

/* Marks `s` COMPLETED, makes its waiting consumers ready (into `released`
 * when not NULL and they qualify, else their ready queues), releases the
 * producers it held, then drops its own completion hold. Called once per
 * task, by whichever thread saw its last subtask finish. */
void rt_task_complete(struct rt_run *run, struct rt_slot *s, struct rt_released *released);

/* Pushes a task whose dependencies are all satisfied to its ready queue.
 * Wakes nobody: the caller kicks the schedulers (rt_sched_kick) or is
 * inside a scheduler's step. */
void rt_task_ready(struct rt_run *run, struct rt_slot *s);

static inline struct rt_task *rt_slot_task(struct rt_run *run, struct rt_slot *s)
{
    struct rt_ring *r = &run->rings[s->ring];
    return &r->tasks[s - r->slots];
}

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

/* ------------------------------------------------------------- the roles */

/* One scheduler's shared step state (scheduler.c); rt_layout.scheds holds
 * SIMDEV_MAX_AICPU_THREADS of them. */
struct rt_sched;
size_t rt_sched_bytes(void);
/* Resets the schedulers' tokens for a new run (run_init, before the
 * schedulers are released). */
void rt_scheds_init(struct rt_run *run);
/* Runs scheduler `index`'s step on the calling thread, or, when another
 * thread is running it, leaves a note that makes that thread step again.
 * Never blocks. Called by a core after each FIN and by the orchestrator
 * after it published a ready
 * task; safe from any device thread of the run, and a no-op before the
 * scheduler's handshake has ended and after its exit. */
void rt_sched_kick(struct rt_run *run, uint32_t index);
/* The orchestrator after it pushed ready task `s`: runs the steps that
 * dispatch it (every scheduler with room), unless an awake core that
 * fetches work while idle is sure to run one (see scheduler.c). */
void rt_sched_publish(struct rt_run *run, const struct rt_slot *s);

/* Orchestrator thread: runs the entry inside scope 0. */
void rt_orchestrate(struct rt_run *run, simpler_orch_entry_fn entry,
                    const struct simpler_orch_args *args);
/* Prepares the orchestrator's state for a new run (after the rings). */
void rt_orchestrator_init(struct rt_run *run);

/* Scheduler thread `index` of run->schedulers. */
void rt_schedule(struct rt_run *run, uint32_t index);

/* For a scheduler that never saw the run initialised: settles the round of
 * every core it would have owned (ends a waiting core loop, leaves the
 * round of one that has not arrived), from the launch arguments and the
 * topology alone. */
void rt_exit_cores_uninitialised(const struct rt_launch_args *la, int device, uint32_t index);

/* One round on the AICPU threads of a launch: the last thread
 * orchestrates, the others schedule, the last one out writes the result
 * block. `rejected` (positive, or 0) fails the round right after the run is
 * initialised (a packet the device refused): the schedulers still meet and
 * end their cores. Returns, on the thread that wrote the result block, the
 * run's status (0 or a negated code); PTO_RUNTIME_ERR_INTERNAL on a
 * scheduler thread that never saw the run initialised (nobody writes the
 * block then); 0 on the others. */
int32_t rt_aicpu_round(const struct simdev_aicpu_ctx *ctx, const struct rt_launch_args *la,
                       int32_t rejected);

#endif /* SIMPLER_RUNTIME_RT_H */
