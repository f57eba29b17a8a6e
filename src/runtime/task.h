/*
 * runtime/task.h — a task's slot and its life after it is published.
 *
 * Owns: the hot per-task slot (its state, holders, dependency counts and
 * lock), the cold payload the kernels read, and task.c's entry points: the
 * slot lock, the holder counting that decides when a task is CONSUMED,
 * completion and the route to the ready queues. Must not allocate: the
 * slots live in the rings (ring.h), which the orchestrator fills.
 */
#ifndef SIMPLER_RUNTIME_TASK_H
#define SIMPLER_RUNTIME_TASK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/layout.h"
#include "simpler/orchestration.h"
#include "simpler/tensor.h"

struct rt_run;

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
    union {
        struct {
            uint32_t fanout_count;    /* lock */
            uint32_t fanout_released; /* lock */
        };
        /* HBG on the device (runtime/hbg_boot.c), where nothing locks a
         * slot: its producers, run->hbg_producers[first, +count), kept
         * here so a completion re-parks a waiter from this line alone */
        struct {
            uint32_t hbg_fanin_first;
            uint32_t hbg_fanin_count;
        };
    };
    union {
        uint32_t closed;      /* lock: consumed decided; no new consumer may wire */
        uint32_t hbg_next;    /* HBG: the next waiter on the same producer, index + 1 */
    };
    union {
        uint64_t fanout_head; /* lock: consumers list, dep position + 1 (0 = empty) */
        uint64_t hbg_index;   /* a host build (runtime/hbg.h): the task's image index */
        /* HBG (runtime/hbg.h): the tasks parked on this one, the first
         * one's index + 1 (0 = none), RT_HBG_CLOSED once it completed. */
        _Atomic uint64_t hbg_waiters;
    };
    _Atomic uint32_t state;   /* enum rt_task_state; COMPLETED/CONSUMED stores are release */
    _Atomic int32_t fanin_pending; /* producers not yet completed + 1 while wiring */
    _Atomic uint32_t completed_subtasks;
    union {
        _Atomic uint32_t next_block;   /* SPMD: next block to claim */
        /* A host build (runtime/hbg.h), where no task runs: where the
         * submit put it in run->scope_tasks, which says whether its scope
         * is open (rt_scope_open; its payload is not kept) */
        uint32_t hbg_scope_pos;
    };
    _Atomic uint64_t task_id;      /* orchestrator writes at allocation */
    uint32_t total_subtasks;  /* block_num x lanes */
    uint32_t block_num;
    uint8_t shape;            /* enum rt_shape */
    uint8_t lanes;            /* RT_LANE_* */
    uint8_t ring;
    uint8_t sync_start;
    union {
        struct {
            uint16_t scope_depth; /* orchestrator only (< SIMPLER_SCOPE_MAX_DEPTH) */
            uint8_t heap_outputs; /* orchestrator only: some OUTPUT lives in the ring heap */
            uint8_t reserved;
        };
        uint32_t hbg_self; /* HBG on the device: its image index + 1, as waiter lists hold it */
    };
};
_Static_assert(sizeof(struct rt_slot) == 64, "rt_slot is one cache line");
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

/* ------------------------------------------------------------ task.c */

/* The slot's spinlock: held for the fields marked "lock". */
void rt_slot_lock(struct rt_slot *s);
void rt_slot_unlock(struct rt_slot *s);

/* Drops one holder of `s` (scope end, consumer release, completion
 * processing) and, if it was the last of a COMPLETED task, marks it
 * CONSUMED and advances its ring. */
void rt_slot_release(struct rt_run *run, struct rt_slot *s);

/* rt_slot_release without the advance: true when it made the task
 * CONSUMED, and the caller must then advance the task's ring (read
 * s->ring before: the slot is the ring's after this returns true). For a
 * caller that drops many holds at once and advances each ring once. */
bool rt_slot_drop(struct rt_slot *s);

/* A single-block AIC or AIV task without sync-start: one core runs it
 * whole, so it may go to whichever core (a completion's released list, a
 * core's kept list) and an idle core may fetch it by itself; the others
 * need a step's choice of units at once. */
static inline bool rt_slot_plain(const struct rt_slot *s)
{
    return (s->shape == RT_SHAPE_AIC || s->shape == RT_SHAPE_AIV) && !s->sync_start &&
           s->block_num == 1;
}

/* Tasks a completion made ready, kept by the scheduler's step so they go
 * first (dispatch.c: the immediate successor runs on the completing
 * core). Only single-block AIC/AIV tasks without sync-start go here; the
 * rest, and any beyond the capacity, go to the ready queues. */
#define RT_RELEASED_MAX 16
struct rt_released {
    uint32_t count;
    struct rt_slot *slot[RT_RELEASED_MAX];
};

/* A task whose producers have all completed: into `released` when not
 * NULL and it qualifies, else its ready queue. */
void rt_task_route(struct rt_run *run, struct rt_slot *s, struct rt_released *released);

/* Marks `s` COMPLETED, makes its waiting consumers ready (into `released`
 * when not NULL and they qualify, else their ready queues), releases the
 * producers it held, then drops its own completion hold. Called once per
 * task, by a step of the scheduler that saw its last subtask finish.
 * True when this was the run's last task with the orchestration done: the
 * step signals the run's end (rt_signal) once it is over, after it rang
 * its cores' exits (dispatch.c, rt_sched_step). */
bool rt_task_complete(struct rt_run *run, struct rt_slot *s, struct rt_released *released);

/* Pushes a task whose dependencies are all satisfied to its ready queue.
 * Wakes nobody: the caller kicks the schedulers (rt_sched_kick) or is
 * inside a scheduler's step. */
void rt_task_ready(struct rt_run *run, struct rt_slot *s);

/* ------------------------------------------ invariants (runtime/invariants.h) */

/* A slot's life: a defined state; its holds (at least the scope's and the
 * completion's, never more released than counted; a PENDING task still
 * has its completion hold out; `closed` exactly when every hold is
 * released after completion); no consumer list once completed; what
 * submit wrote (ring, shape and lanes, block and subtask counts) agreeing
 * with itself. The caller holds s->lock, or is the only thread that can
 * reach the slot (a test). */
bool rt_slot_check(const struct rt_slot *s);

/* Whether the task in `s` may go to a ready queue now: PENDING, every
 * producer done (fanin_pending 0), no block claimed or finished yet. The
 * thread that made it ready (its last fan-in decrement, or a scheduler
 * step placing its released list). */
bool rt_slot_may_be_ready(const struct rt_slot *s);

/* Whether the task in `s` may complete now: PENDING, every producer done,
 * every block claimed and every subtask finished. The thread that saw its
 * last subtask finish, holding s->lock. */
bool rt_slot_may_complete(const struct rt_slot *s);

#endif /* SIMPLER_RUNTIME_TASK_H */
