/*
 * runtime/ring.h — the ring sets: task windows, output heaps, dependency
 * pools, and the orchestrator's wait for them.
 *
 * Owns: struct rt_ring and the per-slot records it holds besides the slots
 * (the TensorMap record, the dependency node), and ring.c's entry points:
 * initialisation, reservation at the heads with back-pressure, in-order
 * retirement at the tails, and the orchestrator's bounded wait
 * (rt_orch_block_for) with the target its wakers read. Must not decide
 * when a task is consumed (task.h).
 */
#ifndef SIMPLER_RUNTIME_RING_H
#define SIMPLER_RUNTIME_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/task_id.h"
#include "runtime/cpu.h"
#include "runtime/runtime.h"
#include "simpler/orchestration.h"

struct rt_layout;
struct rt_run;
struct rt_slot;
struct rt_task;

/* Output heap positions and sizes are multiples of this. */
#define RT_HEAP_ALIGN 64

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

/* ------------------------------------------------------------ ring.c */

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

/* What a blocked orchestrator waits for (rt_run.orch_wait_target): task
 * slots of `ring`, which need last_alive >= alive. */
#define RT_ORCH_WAIT_SLOTS(ring, alive) ((((uint64_t)(ring) + 1) << RT_LOCAL_BITS) | (alive))

/* Orchestrator only. A wait's condition, asked after every wake-up. */
typedef bool (*rt_orch_ready_fn)(struct rt_run *run, void *arg);
/* Blocks until ready(run, arg): 0; the run's error (negated) when it fails
 * meanwhile; -timeout_code after timeout_ms without any task completing or
 * retiring; the code `structural` returns (latched) once the wait can
 * never succeed. `target` is what a waker must provide to signal (0: any
 * completion or retirement; RT_ORCH_WAIT_SLOTS: task slots of one ring). */
/* `never_code`: what the wait fails with at once in a host build
 * (runtime/hbg.h), where nothing ever completes or retires. */
int rt_orch_block_for(struct rt_run *run, rt_orch_ready_fn ready, void *arg,
                      int32_t (*structural)(struct rt_run *, void *), uint32_t timeout_ms,
                      int32_t timeout_code, int32_t never_code, uint64_t target);
int rt_orch_block(struct rt_run *run, rt_orch_ready_fn ready, void *arg,
                  int32_t (*structural)(struct rt_run *, void *), uint32_t timeout_ms,
                  int32_t timeout_code, int32_t never_code);
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

/* ------------------------------------------ invariants (runtime/invariants.h) */

/* The orchestrator's view of ring `r`: its geometry, the task window
 * (alive_seen <= last_alive <= next_local, at most a window apart), the
 * heap (floor <= head, both aligned; tail_seen <= tail <= head; the bytes
 * in use fit), the dependency pool (tail_seen <= tail <= head; in use <=
 * capacity) and the first lap's clean slots. Orchestrator thread only:
 * the heads and the *_seen tails are its plain fields; the published
 * tails it reads only grow. */
bool rt_ring_check(const struct rt_ring *r);

/* A retirement about to publish the tails (`alive`, `heap_tail`,
 * `dep_tail`) on ring `r`: the caller holds advance_lock, last_alive
 * moves forward by at most a window and the heap and dependency tails do
 * not move back. Only the advance_lock holder: it is the tails' one
 * writer. */
bool rt_ring_check_retirement(const struct rt_ring *r, uint64_t alive, uint64_t heap_tail,
                              uint64_t dep_tail);

#endif /* SIMPLER_RUNTIME_RING_H */
