/*
 * runtime/ready_queue.c — bounded lock-free MPMC queue of ready tasks.
 *
 * Owns: push/pop on one queue (Dmitry Vyukov's bounded MPMC design: every
 * cell carries a sequence number saying whether it is free for the pusher
 * at position p (seq == p) or full for the popper at p (seq == p + 1)).
 * Must not know what a task is beyond its slot pointer. The invariant
 * checks of a queue (runtime/invariants.h) live here too.
 */
#include <stddef.h>

#include "runtime/invariants.h"
#include "runtime/ready_queue.h"

void rt_rq_init(struct rt_ready_queue *q, struct rt_rq_cell *cells, uint64_t capacity)
{
    q->cells = cells;
    q->mask = capacity - 1;
    for (uint64_t i = 0; i < capacity; i++) {
        atomic_init(&cells[i].seq, i);
        cells[i].slot = NULL;
    }
    atomic_init(&q->enqueue_pos, 0);
    atomic_init(&q->dequeue_pos, 0);
    RT_ASSERT_INVARIANT(rt_rq_check(q));
}

bool rt_rq_idle_over(const struct rt_ready_queue *q, const struct rt_rq_cell *cells,
                     uint64_t capacity)
{
    return q->cells == cells && q->mask == capacity - 1 &&
           atomic_load_explicit(&q->enqueue_pos, memory_order_relaxed) ==
               atomic_load_explicit(&q->dequeue_pos, memory_order_relaxed);
}

bool rt_rq_push(struct rt_ready_queue *q, struct rt_slot *slot)
{
    RT_ASSERT_INVARIANT(slot != NULL); /* NULL is what a pop of an empty queue returns */
    uint64_t pos = atomic_load_explicit(&q->enqueue_pos, memory_order_relaxed);
    for (;;) {
        struct rt_rq_cell *cell = &q->cells[pos & q->mask];
        /* acquire: pairs with the release in rt_rq_pop that freed the cell */
        uint64_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
        int64_t diff = (int64_t)(seq - pos);
        if (diff == 0) {
            if (atomic_compare_exchange_weak_explicit(&q->enqueue_pos, &pos, pos + 1,
                                                      memory_order_relaxed,
                                                      memory_order_relaxed)) {
                cell->slot = slot;
                /* release: publishes cell->slot (and the task it names) to
                 * the acquire in rt_rq_pop */
                atomic_store_explicit(&cell->seq, pos + 1, memory_order_release);
                RT_ASSERT_INVARIANT(rt_rq_check_pushed(q, pos));
                return true;
            }
        } else if (diff < 0) {
            return false; /* full */
        } else {
            pos = atomic_load_explicit(&q->enqueue_pos, memory_order_relaxed);
        }
    }
}

struct rt_slot *rt_rq_pop(struct rt_ready_queue *q)
{
    uint64_t pos = atomic_load_explicit(&q->dequeue_pos, memory_order_relaxed);
    for (;;) {
        struct rt_rq_cell *cell = &q->cells[pos & q->mask];
        /* acquire: pairs with the release in rt_rq_push */
        uint64_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
        int64_t diff = (int64_t)(seq - (pos + 1));
        if (diff == 0) {
            if (atomic_compare_exchange_weak_explicit(&q->dequeue_pos, &pos, pos + 1,
                                                      memory_order_relaxed,
                                                      memory_order_relaxed)) {
                struct rt_slot *slot = cell->slot;
                /* release: hands the cell back to the pusher one lap later
                 * (pairs with the acquire in rt_rq_push) */
                atomic_store_explicit(&cell->seq, pos + q->mask + 1, memory_order_release);
                RT_ASSERT_INVARIANT(slot != NULL && rt_rq_check_popped(q, pos));
                return slot;
            }
        } else if (diff < 0) {
            return NULL; /* empty */
        } else {
            pos = atomic_load_explicit(&q->dequeue_pos, memory_order_relaxed);
        }
    }
}

uint64_t rt_rq_length(struct rt_ready_queue *q)
{
    uint64_t head;
    if (!rt_rq_peek(q, &head))
        return 0; /* no look at the pushers' line while the queue is empty */
    uint64_t tail = atomic_load_explicit(&q->enqueue_pos, memory_order_acquire);
    return tail > head ? tail - head : 0;
}

bool rt_rq_peek(struct rt_ready_queue *q, uint64_t *head)
{
    uint64_t pos = atomic_load_explicit(&q->dequeue_pos, memory_order_relaxed);
    /* acquire: pairs with the release in rt_rq_push that published it */
    uint64_t seq = atomic_load_explicit(&q->cells[pos & q->mask].seq, memory_order_acquire);
    *head = pos;
    return seq == pos + 1;
}

/* The head cell, not enqueue_pos: the poppers' lines only. Every step of
 * every core asks this; a look at enqueue_pos would take that line from
 * the orchestrator, whose next push must then fetch it back. A push whose
 * cell is not published yet reads as empty here, as it does to a pop. */
bool rt_rq_maybe_nonempty(struct rt_ready_queue *q)
{
    uint64_t head;
    return rt_rq_peek(q, &head);
}

/* ------------------------------------------------------------ invariants */

/* The cell of position `p`'s sequence, as its owner would read it. */
static uint64_t seq_at(const struct rt_ready_queue *q, uint64_t p)
{
    return atomic_load_explicit(&q->cells[p & q->mask].seq, memory_order_relaxed);
}

/*
 * Why each holds in a queue nobody is pushing to or popping from:
 * - capacity a power of two: rt_rq_init's caller sizes it so (the layout
 *   rounds every queue up), and positions map to cells by `& mask`;
 * - head <= tail: a pop claims p only after the cell's sequence says the
 *   push at p published, and that push claimed p first;
 * - tail - head <= capacity: a push claims p only once the cell is free,
 *   i.e. the pop of p - capacity has handed it back;
 * - each cell of a position p in [head, head + capacity) says p + 1 when p
 *   is queued (p < tail: pushed, not popped) and p when free (the pop of
 *   p - capacity, or init for p < capacity, wrote p).
 */
bool rt_rq_check(const struct rt_ready_queue *q)
{
    uint64_t capacity = q->mask + 1;
    if (!q->cells || capacity == 0 || (capacity & q->mask) != 0)
        return false;
    uint64_t head = atomic_load_explicit(&q->dequeue_pos, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&q->enqueue_pos, memory_order_relaxed);
    if (head > tail || tail - head > capacity)
        return false;
    for (uint64_t p = head; p != head + capacity; p++)
        if (seq_at(q, p) != (p < tail ? p + 1 : p))
            return false;
    return true;
}

/*
 * True for every push, whatever other threads do meanwhile: the tail is
 * past `pos` because this thread's own CAS moved it there and positions
 * only grow; the cell this push took said `pos` (acquire), a value only
 * the pop of pos - capacity stores (init for pos < capacity), after its
 * CAS moved the head past pos - capacity, so this later look at the head
 * sees at least that. Relaxed loads suffice: the acquire above ordered
 * those writes before them.
 */
bool rt_rq_check_pushed(const struct rt_ready_queue *q, uint64_t pos)
{
    uint64_t tail = atomic_load_explicit(&q->enqueue_pos, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&q->dequeue_pos, memory_order_relaxed);
    return tail > pos && head + q->mask + 1 > pos;
}

/*
 * True for every pop, whatever other threads do meanwhile: the head is
 * past `pos` by this thread's own CAS; the cell said pos + 1 (acquire),
 * stored by the push of `pos` after its CAS moved the tail past pos.
 */
bool rt_rq_check_popped(const struct rt_ready_queue *q, uint64_t pos)
{
    uint64_t head = atomic_load_explicit(&q->dequeue_pos, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&q->enqueue_pos, memory_order_relaxed);
    return head > pos && tail > pos;
}
