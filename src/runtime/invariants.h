/*
 * runtime/invariants.h — the invariant checks of the device runtime's
 * state-bearing structures: a ring's heads and tails (ring.c), a task
 * slot's life (task.c), a ready queue's positions (ready_queue.c).
 *
 * Owns: the checks' declarations and RT_ASSERT_INVARIANT. Must not hold
 * anything the runtime needs to run: every check is a pure look that
 * changes nothing.
 *
 * Each check returns true when the structure is consistent, so a test can
 * call it directly (on a fresh structure: true; on a corrupted one:
 * false). Each says which thread may call it, and why every field it
 * reads is one its caller owns at that point or one whose every value a
 * concurrent writer could store satisfies it: a check that could be false
 * in a correct run is a wrong check.
 *
 * RT_ASSERT_INVARIANT(cond) asserts cond where NDEBUG is not defined:
 * the Debug and sanitizer builds (CMAKE_BUILD_TYPE=Debug) check at every
 * state change. The normal build (RelWithDebInfo, which defines NDEBUG)
 * compiles it to nothing: cond is not evaluated (sizeof only marks its
 * variables used), so the hot path is unchanged.
 */
#ifndef SIMPLER_RUNTIME_INVARIANTS_H
#define SIMPLER_RUNTIME_INVARIANTS_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/rt.h"

#ifdef NDEBUG
#define RT_ASSERT_INVARIANT(cond) ((void)sizeof(!(cond)))
#else
#define RT_ASSERT_INVARIANT(cond) assert(cond)
#endif

/* ------------------------------------------------------- rings (ring.c) */

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

/* --------------------------------------------------- task life (task.c) */

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

/* ---------------------------------------------- ready queues (ready_queue.c) */

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

#endif /* SIMPLER_RUNTIME_INVARIANTS_H */
