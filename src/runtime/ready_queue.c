/*
 * runtime/ready_queue.c — bounded lock-free MPMC queue of ready tasks.
 *
 * Owns: push/pop on one queue (Dmitry Vyukov's bounded MPMC design: every
 * cell carries a sequence number saying whether it is free for the pusher
 * at position p (seq == p) or full for the popper at p (seq == p + 1)).
 * Must not know what a task is beyond its slot pointer.
 */
#include <stddef.h>

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
