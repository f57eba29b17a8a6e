/*
 * test_ready_queue.c — the lock-free ready queue (runtime/ready_queue.c),
 * driven directly over cells in host memory.
 *
 * Owns: push/pop order, the full and empty answers, capacity, peek and
 * length, positions wrapping over many laps, one producer and one
 * consumer thread (every slot popped exactly once, in order) and two of
 * each (exactly once, each producer's order kept), and the queue's
 * invariant checks (runtime/invariants.h): true on a real queue, false on
 * a corrupted one. What the tasks in the queue are is test_slot_completion.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "runtime/invariants.h"
#include "runtime/ready_queue.h"
#include "runtime/task.h"

#define SMALL 8u    /* cells of the single-threaded queues */
#define THREADED 64u /* cells of the threaded queues: small, so they fill and wrap */
#define ITEMS 16384u /* slots through the threaded queues */

/* The queue carries slot pointers only; these are the slots it carries. */
static struct rt_slot slots[ITEMS];

static struct rt_slot *slot(uint32_t i)
{
    return &slots[i];
}

static uint32_t index_of(const struct rt_slot *s)
{
    return (uint32_t)(s - slots);
}

static uint64_t head_of(struct rt_ready_queue *q)
{
    return atomic_load_explicit(&q->dequeue_pos, memory_order_relaxed);
}

static uint64_t tail_of(struct rt_ready_queue *q)
{
    return atomic_load_explicit(&q->enqueue_pos, memory_order_relaxed);
}

/* ----------------------------------------------------- single-threaded */

static void test_a_fresh_queue_is_empty_and_consistent(void **state)
{
    (void)state;
    struct rt_ready_queue q;
    struct rt_rq_cell cells[SMALL];
    rt_rq_init(&q, cells, SMALL);
    assert_true(rt_rq_check(&q)); /* false: init left a cell or position out of turn */
    assert_null(rt_rq_pop(&q));   /* non-NULL: a fresh queue handed out a task */
    uint64_t head = 99;
    assert_false(rt_rq_peek(&q, &head)); /* true: peek saw a published head in an empty queue */
    assert_int_equal(head, 0);           /* not 0: the head did not start at position 0 */
    assert_int_equal(rt_rq_length(&q), 0);
    assert_false(rt_rq_maybe_nonempty(&q));
    assert_true(rt_rq_idle_over(&q, cells, SMALL)); /* false: a fresh queue reads as busy */
}

static void test_pops_come_in_push_order(void **state)
{
    (void)state;
    struct rt_ready_queue q;
    struct rt_rq_cell cells[SMALL];
    rt_rq_init(&q, cells, SMALL);
    for (uint32_t i = 0; i < 5; i++)
        assert_true(rt_rq_push(&q, slot(i)));
    assert_int_equal(rt_rq_length(&q), 5); /* not 5: a push was lost or counted twice */
    assert_true(rt_rq_check(&q));
    for (uint32_t i = 0; i < 5; i++)
        assert_ptr_equal(rt_rq_pop(&q), slot(i)); /* another slot: not FIFO */
    assert_null(rt_rq_pop(&q)); /* non-NULL: a slot popped twice */
    assert_int_equal(head_of(&q), 5);
    assert_int_equal(tail_of(&q), 5);
    assert_true(rt_rq_check(&q));
}

static void test_a_full_queue_refuses_a_push_and_changes_nothing(void **state)
{
    (void)state;
    struct rt_ready_queue q;
    struct rt_rq_cell cells[SMALL];
    rt_rq_init(&q, cells, SMALL);
    for (uint32_t i = 0; i < SMALL; i++)
        assert_true(rt_rq_push(&q, slot(i))); /* false: the queue holds less than its capacity */
    assert_false(rt_rq_push(&q, slot(SMALL))); /* true: it held more than its capacity */
    assert_int_equal(tail_of(&q), SMALL);      /* SMALL + 1: the refused push claimed a cell */
    assert_int_equal(rt_rq_length(&q), SMALL);
    assert_true(rt_rq_check(&q));
    assert_ptr_equal(rt_rq_pop(&q), slot(0));
    assert_true(rt_rq_push(&q, slot(SMALL))); /* false: a popped cell was not handed back */
    for (uint32_t i = 1; i <= SMALL; i++)
        assert_ptr_equal(rt_rq_pop(&q), slot(i));
    assert_null(rt_rq_pop(&q));
}

static void test_peek_and_length_follow_the_head(void **state)
{
    (void)state;
    struct rt_ready_queue q;
    struct rt_rq_cell cells[SMALL];
    rt_rq_init(&q, cells, SMALL);
    for (uint32_t i = 0; i < 3; i++)
        assert_true(rt_rq_push(&q, slot(i)));
    assert_ptr_equal(rt_rq_pop(&q), slot(0));
    uint64_t head = 0;
    assert_true(rt_rq_peek(&q, &head)); /* false: a published head reads as empty */
    assert_int_equal(head, 1);          /* not 1: peek names another position than the next pop */
    assert_int_equal(rt_rq_length(&q), 2);
    assert_true(rt_rq_maybe_nonempty(&q));
    assert_int_equal(head_of(&q), 1); /* peek, length and maybe_nonempty moved the head */
    assert_false(rt_rq_idle_over(&q, cells, SMALL)); /* true: a queue with tasks reads as idle */
    assert_ptr_equal(rt_rq_pop(&q), slot(1));
    assert_ptr_equal(rt_rq_pop(&q), slot(2));
    assert_false(rt_rq_peek(&q, &head));
    assert_int_equal(head, 3);
    assert_int_equal(rt_rq_length(&q), 0);
    assert_true(rt_rq_idle_over(&q, cells, SMALL)); /* false: a drained queue cannot be reused */
    assert_false(rt_rq_idle_over(&q, cells + 1, SMALL)); /* true: other cells pass for these */
    assert_false(rt_rq_idle_over(&q, cells, SMALL / 2)); /* true: another capacity passes */
}

/* Laps of every fill level from empty to full, so every cell is reused at
 * every offset of the positions; FIFO and the whole-queue check after each
 * operation. */
static void test_positions_wrap_over_many_laps(void **state)
{
    (void)state;
    struct rt_ready_queue q;
    struct rt_rq_cell cells[SMALL];
    rt_rq_init(&q, cells, SMALL);
    uint32_t pushed = 0, popped = 0;
    for (uint32_t lap = 0; lap < 1000; lap++) {
        uint32_t fill = lap % (SMALL + 1);
        for (uint32_t i = 0; i < fill; i++) {
            assert_true(rt_rq_push(&q, slot(pushed++ % ITEMS)));
            assert_true(rt_rq_check(&q)); /* false: a cell's sequence lost its turn */
        }
        if (fill == SMALL)
            assert_false(rt_rq_push(&q, slot(0))); /* true: a wrapped queue overfilled */
        for (uint32_t i = 0; i < fill; i++) {
            assert_ptr_equal(rt_rq_pop(&q), slot(popped++ % ITEMS)); /* order broke at a wrap */
            assert_true(rt_rq_check(&q));
        }
        assert_null(rt_rq_pop(&q));
    }
    assert_int_equal(pushed, 3996); /* 111 rounds of fills 0..8 (36 each), then a fill of 0 */
    assert_int_equal(tail_of(&q), pushed);
    assert_int_equal(head_of(&q), pushed); /* not equal: a pop claimed a position twice or never */
}

/* ------------------------------------------------------- multi-threaded */

struct threaded {
    struct rt_ready_queue q;
    struct rt_rq_cell cells[THREADED];
    pthread_barrier_t start;     /* every thread begins at once */
    uint32_t producers;          /* producer p pushes slots p, p + producers, ... */
    _Atomic uint32_t popped;     /* slots popped so far, by every consumer */
    _Atomic uint32_t seen[ITEMS]; /* per slot: times popped */
};

struct producer {
    struct threaded *t;
    uint32_t first;
};

/* Pushes its slots in increasing order; a full queue waits for the
 * consumers (who end that wait: each pop frees a cell). */
static void *produce(void *arg)
{
    struct producer *p = arg;
    struct threaded *t = p->t;
    pthread_barrier_wait(&t->start);
    for (uint32_t i = p->first; i < ITEMS; i += t->producers)
        while (!rt_rq_push(&t->q, slot(i)))
            sched_yield();
    return NULL;
}

struct consumer {
    struct threaded *t;
    uint32_t last[2];  /* per producer: the last of its slots this consumer popped, + 1 */
    uint32_t misorders; /* a producer's slot popped after a later one of the same producer */
};

/* Pops until every slot is out; an empty queue waits for the producers
 * (who end that wait by pushing, until the last slot is popped). */
static void *consume(void *arg)
{
    struct consumer *c = arg;
    struct threaded *t = c->t;
    pthread_barrier_wait(&t->start);
    while (atomic_load_explicit(&t->popped, memory_order_relaxed) < ITEMS) {
        struct rt_slot *s = rt_rq_pop(&t->q);
        if (!s) {
            sched_yield();
            continue;
        }
        uint32_t i = index_of(s);
        uint32_t from = i % t->producers;
        if (i + 1 <= c->last[from])
            c->misorders++;
        c->last[from] = i + 1;
        atomic_fetch_add_explicit(&t->seen[i], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->popped, 1, memory_order_relaxed);
    }
    return NULL;
}

/* `producers` producer and `consumers` consumer threads, started by one
 * barrier; every slot must be popped exactly once and each consumer must
 * see each producer's slots in push order. */
static void run_threads(uint32_t producers, uint32_t consumers)
{
    static struct threaded t;
    memset(&t, 0, sizeof t);
    rt_rq_init(&t.q, t.cells, THREADED);
    t.producers = producers;
    assert_int_equal(pthread_barrier_init(&t.start, NULL, producers + consumers), 0);
    pthread_t threads[4];
    struct producer p[2];
    struct consumer c[2];
    memset(c, 0, sizeof c);
    for (uint32_t i = 0; i < producers; i++) {
        p[i] = (struct producer){&t, i};
        assert_int_equal(pthread_create(&threads[i], NULL, produce, &p[i]), 0);
    }
    for (uint32_t i = 0; i < consumers; i++) {
        c[i].t = &t;
        assert_int_equal(pthread_create(&threads[producers + i], NULL, consume, &c[i]), 0);
    }
    for (uint32_t i = 0; i < producers + consumers; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    pthread_barrier_destroy(&t.start);
    for (uint32_t i = 0; i < ITEMS; i++)
        if (atomic_load(&t.seen[i]) != 1)
            fail_msg("slot %u popped %u times (0: lost; 2: handed out twice)", i,
                     atomic_load(&t.seen[i]));
    assert_int_equal(atomic_load(&t.popped), ITEMS);
    for (uint32_t i = 0; i < consumers; i++)
        assert_int_equal(c[i].misorders, 0); /* not 0: a pop overtook an earlier push */
    assert_int_equal(tail_of(&t.q), ITEMS); /* not ITEMS: a push claimed a position twice */
    assert_int_equal(head_of(&t.q), ITEMS);
    assert_true(rt_rq_check(&t.q)); /* false: the threads left a cell out of turn */
}

static void test_one_producer_and_one_consumer_pass_every_slot_once_in_order(void **state)
{
    (void)state;
    run_threads(1, 1);
}

static void test_two_producers_and_two_consumers_pass_every_slot_once(void **state)
{
    (void)state;
    run_threads(2, 2);
}

/* ------------------------------------------------------------ the checks */

static void test_queue_check_fails_on_each_corruption(void **state)
{
    (void)state;
    struct rt_ready_queue q;
    struct rt_rq_cell cells[SMALL];
    rt_rq_init(&q, cells, SMALL);
    assert_true(rt_rq_push(&q, slot(0)));
    assert_true(rt_rq_push(&q, slot(1)));
    assert_true(rt_rq_check(&q)); /* false: a real queue of two fails its own check */

    q.mask = SMALL - 2; /* capacity 7: not a power of two */
    assert_false(rt_rq_check(&q));
    q.mask = SMALL - 1;
    q.cells = NULL;
    assert_false(rt_rq_check(&q));
    q.cells = cells;
    atomic_store(&q.dequeue_pos, 3); /* head past the tail */
    assert_false(rt_rq_check(&q));
    atomic_store(&q.dequeue_pos, 0);
    atomic_store(&q.enqueue_pos, SMALL + 1); /* more queued than the capacity */
    assert_false(rt_rq_check(&q));
    atomic_store(&q.enqueue_pos, 2);
    atomic_store(&cells[1].seq, 1); /* a queued cell that reads as free */
    assert_false(rt_rq_check(&q));
    atomic_store(&cells[1].seq, 2);
    atomic_store(&cells[5].seq, 6); /* a free cell that reads as queued */
    assert_false(rt_rq_check(&q));
    atomic_store(&cells[5].seq, 5);
    assert_true(rt_rq_check(&q)); /* false: a check that stays false once repaired */
}

static void test_push_and_pop_checks_know_what_their_claim_implies(void **state)
{
    (void)state;
    struct rt_ready_queue q;
    struct rt_rq_cell cells[SMALL];
    rt_rq_init(&q, cells, SMALL);
    assert_true(rt_rq_push(&q, slot(0)));
    assert_true(rt_rq_check_pushed(&q, 0));  /* false: the check fails a real push */
    assert_false(rt_rq_check_pushed(&q, 1)); /* true: a claim the tail never passed */
    atomic_store(&q.enqueue_pos, SMALL + 1); /* a push at SMALL with nothing popped */
    assert_false(rt_rq_check_pushed(&q, SMALL)); /* true: the queue held capacity + 1 */
    atomic_store(&q.enqueue_pos, 1);
    assert_ptr_equal(rt_rq_pop(&q), slot(0));
    assert_true(rt_rq_check_popped(&q, 0));  /* false: the check fails a real pop */
    assert_false(rt_rq_check_popped(&q, 1)); /* true: a claim the head never passed */
    atomic_store(&q.dequeue_pos, 2);         /* a pop at 1 that nobody pushed */
    assert_false(rt_rq_check_popped(&q, 1)); /* true: popped what was never pushed */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_fresh_queue_is_empty_and_consistent),
        cmocka_unit_test(test_pops_come_in_push_order),
        cmocka_unit_test(test_a_full_queue_refuses_a_push_and_changes_nothing),
        cmocka_unit_test(test_peek_and_length_follow_the_head),
        cmocka_unit_test(test_positions_wrap_over_many_laps),
        cmocka_unit_test(test_one_producer_and_one_consumer_pass_every_slot_once_in_order),
        cmocka_unit_test(test_two_producers_and_two_consumers_pass_every_slot_once),
        cmocka_unit_test(test_queue_check_fails_on_each_corruption),
        cmocka_unit_test(test_push_and_pop_checks_know_what_their_claim_implies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
