/*
 * runtime/ready_queue.h — the bounded lock-free MPMC queues of ready tasks.
 *
 * Owns: the queue and its cells, and ready_queue.c's operations. Must not
 * know what a task is beyond its slot pointer.
 */
#ifndef SIMPLER_RUNTIME_READY_QUEUE_H
#define SIMPLER_RUNTIME_READY_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/cpu.h"

struct rt_slot;

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

/* ------------------------------------------ invariants (runtime/invariants.h) */

/* A whole queue: a power-of-two capacity over cells, head <= tail, at
 * most a capacity queued, and every cell's sequence naming its turn (full
 * for the popper at p: p + 1; free for the pusher at p: p). Only while no
 * push or pop is in flight (at init, between runs, a single-threaded
 * test): mid-push a cell and the positions disagree. */
bool rt_rq_check(const struct rt_ready_queue *q);

/* After this thread's push claimed position `pos`: the tail is past it,
 * and the queue holds at most a capacity (the head has passed pos -
 * capacity). Any pusher, right after its push. */
bool rt_rq_check_pushed(const struct rt_ready_queue *q, uint64_t pos);

/* After this thread's pop claimed position `pos`: the head is past it,
 * and so is the tail (what was popped was pushed). Any popper, right
 * after its pop. */
bool rt_rq_check_popped(const struct rt_ready_queue *q, uint64_t pos);

#endif /* SIMPLER_RUNTIME_READY_QUEUE_H */
