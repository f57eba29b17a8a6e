/*
 * test_slot_completion.c — the life of a task slot after it is published
 * (runtime/task.c), driven directly on a run laid out in host memory.
 *
 * Owns: a producer retiring only once each of its consumers released it
 * and its scope closed (in either order), fan-in making a consumer ready
 * exactly once, completion pushing each consumer it made ready once (or
 * keeping it in the step's released list), and the slot and ring
 * invariant checks (runtime/invariants.h): true on a real run's slots and
 * rings, false on corrupted ones. The run is the runtime's own: its
 * layout, ring, queue, TensorMap and orchestrator init, and real submits
 * through the orchestration ops; there are no scheduler threads and no
 * cores, so the test is the scheduler: it pops what is ready and
 * completes it (rt_task_complete), as scheduler.c would. Whole runs on
 * the simulated device are test_rings.c's and test_orchestration.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rt_support.h"
#include "test_support.h"
#include "runtime/invariants.h"
#include "runtime/layout.h"
#include "runtime/orchestrator.h"
#include "runtime/ready_queue.h"
#include "runtime/ring.h"
#include "runtime/run.h"
#include "runtime/scope.h"
#include "runtime/task.h"
#include "runtime/tensormap.h"

#define CORES 3     /* the topology the run is laid out for: 1 AIC, 2 AIV, 1 cluster */
#define CONSUMERS 3 /* consumers of the producer in the retirement tests */
#define NO_KERNEL (-1)

/* ------------------------------------------------------------- the run */

static void kernel_noop(int64_t *args)
{
    (void)args;
}

static const simpler_kernel_fn kernels[1] = {kernel_noop};

/*
 * A run in host memory, initialised as run_init (run.c) does on the
 * device but for a device with no scheduler threads: nothing dispatches,
 * completes or wakes anybody but the test. The outer scope is open, as
 * rt_orchestrate opens it before the entry. Rings as rth_small_config
 * sizes them (window 64).
 */
static int run_setup(void **state)
{
    struct rt_config config = rth_small_config();
    struct rt_layout l;
    assert_int_equal(rt_layout_compute(&config, CORES, &l), 0);
    assert_int_equal(l.run, 0); /* the run header starts the arena, so the arena is freed by it */
    size_t bytes = (l.total + RT_CACHELINE - 1) / RT_CACHELINE * RT_CACHELINE;
    uint8_t *base = aligned_alloc(RT_CACHELINE, bytes);
    assert_non_null(base);
    memset(base, 0, bytes);
    struct rt_run *run = (struct rt_run *)base;
    run->config = config;
    run->aic_count = 1;
    run->aiv_count = 2;
    run->cluster_count = 1;
    run->core_count = CORES;
    run->schedulers = 0;
    run->kernels = kernels;
    run->kernel_count = 1;
    run->scheds = (struct rt_sched *)(base + l.scheds);
    for (uint32_t i = 0; i < RT_RINGS; i++)
        rt_ring_init(&run->rings[i], &config, i, base, &l);
    for (uint32_t k = 0; k < RT_SHAPES; k++) {
        rt_rq_init(&run->ready[k], (struct rt_rq_cell *)(base + l.rq_cells[k]), l.rq_capacity);
        rt_rq_init(&run->sync_ready[k], (struct rt_rq_cell *)(base + l.sync_rq_cells[k]),
                   l.rq_capacity);
    }
    run->scope_tasks = (struct rt_slot **)(base + l.scope_tasks);
    run->scope_task_capacity = l.scope_task_capacity;
    run->fanin_scratch = (struct rt_slot **)(base + l.fanin_scratch);
    run->fanin_sources = (uint32_t *)(run->fanin_scratch + config.max_fanin);
    assert_int_equal(rt_tensormap_init(&run->tensormap, base + l.tensormap,
                                       config.tensormap_buckets, config.tensormap_entries),
                     0);
    rt_orchestrator_init(run);
    assert_int_equal(simpler_scope_begin(&run->handle, SIMPLER_SCOPE_AUTO), 0);
    *state = run;
    return 0;
}

static int run_teardown(void **state)
{
    free(*state);
    return 0;
}

static struct rt_slot *slot_of(struct rt_run *run, uint64_t id)
{
    struct rt_ring *r = &run->rings[rt_id_ring(id)];
    return &r->slots[rt_id_local(id) & r->mask];
}

/* Submits a task of `kernel` (NO_KERNEL: a dummy task) after `deps`, with
 * one heap OUTPUT when `output` (so its consumers hold it), of `blocks`
 * blocks. Returns its slot. */
static struct rt_slot *submit(struct rt_run *run, int32_t kernel, const uint64_t *deps,
                              uint32_t dep_count, bool output, uint32_t blocks)
{
    struct simpler_task_args a;
    simpler_task_args_init(&a);
    static const uint64_t shape[1] = {16};
    if (output)
        simpler_task_args_add_output(&a, shape, 1, SIMPLER_DTYPE_I32, 0);
    simpler_task_args_set_dependencies(&a, deps, dep_count);
    simpler_task_args_set_block_num(&a, blocks);
    struct simpler_task_result out;
    int rc = kernel == NO_KERNEL ? simpler_submit_dummy(&run->handle, &a, &out)
                                 : simpler_submit_aic(&run->handle, kernel, &a, &out);
    assert_int_equal(rc, 0);
    return slot_of(run, out.task_id);
}

static struct rt_slot *dummy(struct rt_run *run, const uint64_t *deps, uint32_t dep_count,
                             bool output)
{
    return submit(run, NO_KERNEL, deps, dep_count, output, 1);
}

static uint64_t id_of(const struct rt_slot *s)
{
    return atomic_load(&s->task_id);
}

static uint32_t state_of(const struct rt_slot *s)
{
    return atomic_load(&s->state);
}

static uint64_t last_alive(struct rt_run *run, uint32_t ring)
{
    return atomic_load(&run->rings[ring].last_alive);
}

/* What the schedulers do with a task they took: claim its blocks, count
 * every subtask finished (a dummy task has neither: scheduler.c's
 * dispatch_all completes it as popped), then complete it. */
static void finish(struct rt_run *run, struct rt_slot *s, struct rt_released *released)
{
    if (s->shape != RT_SHAPE_DUMMY) {
        atomic_fetch_add(&s->next_block, s->block_num);
        atomic_store(&s->completed_subtasks, s->total_subtasks);
    }
    rt_task_complete(run, s, released);
}

/* Pops everything `q` holds into out[] (at most max); returns how many. */
static uint32_t pop_all(struct rt_ready_queue *q, struct rt_slot **out, uint32_t max)
{
    uint32_t n = 0;
    struct rt_slot *s;
    while (n < max && (s = rt_rq_pop(q)))
        out[n++] = s;
    return n;
}

/* Asserts that got[0..n) holds each of want[0..m) exactly once, nothing
 * else. */
static void assert_same_slots(struct rt_slot *const *got, uint32_t n, struct rt_slot *const *want,
                              uint32_t m)
{
    assert_int_equal(n, m); /* fewer: a consumer never made ready; more: one made ready twice */
    for (uint32_t i = 0; i < m; i++) {
        uint32_t times = 0;
        for (uint32_t j = 0; j < n; j++)
            times += got[j] == want[i];
        if (times != 1)
            fail_msg("task %llx made ready %u times", (unsigned long long)id_of(want[i]), times);
    }
}

/* The dummy queue: where a dummy task goes once ready. */
static struct rt_ready_queue *dummies(struct rt_run *run)
{
    return &run->ready[RT_SHAPE_DUMMY];
}

/* ------------------------------------------------------ retirement */

/* A producer P in scope 1 (ring 1) with one heap output, its CONSUMERS
 * dummy consumers in scope 2 (ring 2), P completed and its consumers
 * ready; c[] receives them. */
static struct rt_slot *producer_with_consumers(struct rt_run *run, struct rt_slot **c)
{
    assert_int_equal(simpler_scope_begin(&run->handle, SIMPLER_SCOPE_AUTO), 0);
    struct rt_slot *p = dummy(run, NULL, 0, true);
    assert_int_equal(p->ring, 1); /* scope depth 1 maps to ring 1 */
    assert_ptr_equal(rt_rq_pop(dummies(run)), p); /* no producer: ready at its submit */
    assert_int_equal(simpler_scope_begin(&run->handle, SIMPLER_SCOPE_AUTO), 0);
    uint64_t pid = id_of(p);
    for (uint32_t i = 0; i < CONSUMERS; i++)
        c[i] = dummy(run, &pid, 1, false);
    /* 2 + CONSUMERS: the scope's hold, the completion hold and one per
     * consumer (2: the consumers did not pin the outputs they read) */
    assert_int_equal(p->fanout_count, 2 + CONSUMERS);
    assert_null(rt_rq_pop(dummies(run))); /* a consumer ran before its producer */
    finish(run, p, NULL);
    assert_int_equal(state_of(p), RT_COMPLETED);
    assert_int_equal(p->fanout_released, 1); /* the completion hold, nothing else */
    struct rt_slot *ready[CONSUMERS + 1];
    assert_same_slots(ready, pop_all(dummies(run), ready, CONSUMERS + 1), c, CONSUMERS);
    assert_true(rt_slot_check(p));
    return p;
}

static void test_a_producer_retires_once_its_consumers_released_it_and_then_its_scope_closed(
    void **state)
{
    struct rt_run *run = *state;
    struct rt_slot *c[CONSUMERS];
    struct rt_slot *p = producer_with_consumers(run, c);
    for (uint32_t i = 0; i < CONSUMERS; i++) {
        finish(run, c[i], NULL);
        assert_int_equal(p->fanout_released, 2 + i); /* a consumer's hold not released once */
        assert_int_equal(last_alive(run, 1), 0);     /* 1: retired under an open scope */
    }
    assert_int_equal(state_of(p), RT_COMPLETED); /* CONSUMED: the scope's hold was ignored */
    assert_int_equal(simpler_scope_end(&run->handle), 0);
    assert_int_equal(last_alive(run, 2), CONSUMERS); /* every consumer: done, scope closed */
    assert_int_equal(last_alive(run, 1), 0);         /* the producer's own scope is still open */
    assert_int_equal(simpler_scope_end(&run->handle), 0);
    assert_int_equal(last_alive(run, 1), 1); /* 0: closing the last hold did not retire it */
    assert_int_equal(state_of(p), RT_CONSUMED);
    assert_true(rt_ring_check(&run->rings[1]));
    assert_true(rt_ring_check(&run->rings[2]));
}

static void test_a_producer_retires_once_its_scope_closed_and_then_its_last_consumer_released_it(
    void **state)
{
    struct rt_run *run = *state;
    struct rt_slot *c[CONSUMERS];
    struct rt_slot *p = producer_with_consumers(run, c);
    assert_int_equal(simpler_scope_end(&run->handle), 0);
    assert_int_equal(simpler_scope_end(&run->handle), 0);
    assert_int_equal(p->fanout_released, 2); /* the completion hold and the scope's */
    assert_int_equal(last_alive(run, 1), 0); /* 1: retired while consumers still read it */
    for (uint32_t i = 0; i < CONSUMERS; i++) {
        assert_int_equal(last_alive(run, 1), 0);
        assert_int_equal(state_of(p), RT_COMPLETED);
        finish(run, c[i], NULL);
        assert_int_equal(last_alive(run, 2), i + 1); /* a consumer outlived its own last hold */
    }
    assert_int_equal(p->fanout_released, p->fanout_count);
    assert_int_equal(state_of(p), RT_CONSUMED); /* COMPLETED: the last release was not the end */
    assert_int_equal(last_alive(run, 1), 1);
}

/* --------------------------------------------------------------- fan-in */

static void test_fan_in_makes_a_consumer_ready_exactly_once(void **state)
{
    struct rt_run *run = *state;
    struct rt_slot *done = dummy(run, NULL, 0, false);
    assert_ptr_equal(rt_rq_pop(dummies(run)), done);
    finish(run, done, NULL);
    struct rt_slot *p[3];
    uint64_t deps[4] = {id_of(done)};
    for (uint32_t i = 0; i < 3; i++) {
        p[i] = dummy(run, NULL, 0, false);
        deps[i + 1] = id_of(p[i]);
    }
    struct rt_slot *taken[4];
    assert_int_equal(pop_all(dummies(run), taken, 4), 3); /* the three producers, taken to run */
    struct rt_slot *c = dummy(run, deps, 4, false);
    /* 3: one per producer still to complete (the completed one is not
     * waited for) and none for the submit (its wiring hold is dropped) */
    assert_int_equal(atomic_load(&c->fanin_pending), 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_null(rt_rq_pop(dummies(run))); /* ready before its last producer completed */
        finish(run, p[i], NULL);
        assert_int_equal(atomic_load(&c->fanin_pending), 2 - (int32_t)i);
        assert_true(rt_slot_check(c));
    }
    assert_ptr_equal(rt_rq_pop(dummies(run)), c); /* NULL: the last producer did not publish it */
    assert_null(rt_rq_pop(dummies(run)));         /* pushed twice */
}

static void test_completion_pushes_each_consumer_it_made_ready_once(void **state)
{
    struct rt_run *run = *state;
    struct rt_slot *p = dummy(run, NULL, 0, true);
    struct rt_slot *q = dummy(run, NULL, 0, false);
    struct rt_slot *taken[2];
    assert_int_equal(pop_all(dummies(run), taken, 2), 2);
    uint64_t on_p = id_of(p), on_both[2] = {id_of(p), id_of(q)};
    struct rt_slot *c1 = dummy(run, &on_p, 1, false);
    struct rt_slot *c2 = dummy(run, on_both, 2, false);
    struct rt_slot *c3 = dummy(run, &on_p, 1, false);
    finish(run, p, NULL);
    struct rt_slot *ready[4];
    struct rt_slot *only_p[2] = {c1, c3};
    assert_same_slots(ready, pop_all(dummies(run), ready, 4), only_p, 2); /* c2 waits for q */
    assert_int_equal(atomic_load(&c2->fanin_pending), 1);
    finish(run, q, NULL);
    assert_same_slots(ready, pop_all(dummies(run), ready, 4), &c2, 1);
    assert_int_equal(atomic_load(&run->tasks_completed), 2); /* one count per completion */
}

/* A completion on a scheduler's step keeps the single-block AIC/AIV
 * consumers it made ready in the step's released list (they run next, on
 * the completing core) and queues the rest. */
static void test_completion_keeps_single_block_consumers_in_the_released_list(void **state)
{
    struct rt_run *run = *state;
    struct rt_slot *p = dummy(run, NULL, 0, true);
    assert_ptr_equal(rt_rq_pop(dummies(run)), p);
    uint64_t on_p = id_of(p);
    struct rt_slot *a1 = submit(run, 0, &on_p, 1, false, 1);
    struct rt_slot *a2 = submit(run, 0, &on_p, 1, false, 1);
    struct rt_slot *wide = submit(run, 0, &on_p, 1, false, 2);
    struct rt_released released = {0};
    finish(run, p, &released);
    struct rt_slot *kept[2] = {a1, a2};
    assert_same_slots(released.slot, released.count, kept, 2); /* 0: queued, not kept */
    struct rt_slot *queued[2];
    assert_same_slots(queued, pop_all(&run->ready[RT_SHAPE_AIC], queued, 2), &wide, 1);
    assert_null(rt_rq_pop(dummies(run)));
    for (uint32_t i = 0; i < released.count; i++)
        assert_true(rt_slot_may_be_ready(released.slot[i])); /* false: kept in a wrong state */
}

/* ------------------------------------------------------------ the checks */

/* A copy of `r` that the test may corrupt (its arrays are still the run's). */
static void copy_ring(struct rt_ring *copy, const struct rt_ring *r)
{
    memcpy(copy, r, sizeof *copy);
}

static void test_ring_check_holds_on_a_real_run_and_fails_on_each_corruption(void **state)
{
    struct rt_run *run = *state;
    for (uint32_t i = 0; i < RT_RINGS; i++)
        assert_true(rt_ring_check(&run->rings[i])); /* false: init leaves a ring inconsistent */
    dummy(run, NULL, 0, true);
    dummy(run, NULL, 0, false);
    assert_true(rt_ring_check(&run->rings[0])); /* false: two submits broke it */

    const struct rt_ring *r = &run->rings[0];
    struct rt_ring c;
    copy_ring(&c, r);
    c.mask = c.window; /* a mask that is not window - 1 */
    assert_false(rt_ring_check(&c));
    copy_ring(&c, r);
    atomic_store(&c.last_alive, c.next_local + 1); /* retired past the head */
    assert_false(rt_ring_check(&c));
    copy_ring(&c, r);
    c.alive_seen = 3; /* a seen tail ahead of the real one */
    assert_false(rt_ring_check(&c));
    copy_ring(&c, r);
    c.next_local = c.window + 1; /* more than a window live */
    assert_false(rt_ring_check(&c));
    copy_ring(&c, r);
    c.heap_head = c.heap_bytes + RT_HEAP_ALIGN; /* more heap in use than there is */
    assert_false(rt_ring_check(&c));
    copy_ring(&c, r);
    c.heap_head += 8; /* an output off its alignment */
    assert_false(rt_ring_check(&c));
    copy_ring(&c, r);
    c.heap_floor = c.heap_head + RT_HEAP_ALIGN; /* a floor above the head */
    assert_false(rt_ring_check(&c));
    copy_ring(&c, r);
    c.heap_tail_seen = RT_HEAP_ALIGN; /* a seen tail ahead of the real one */
    assert_false(rt_ring_check(&c));
    copy_ring(&c, r);
    c.dep_head = c.dep_capacity + 1; /* more dependency entries than the pool */
    assert_false(rt_ring_check(&c));
    copy_ring(&c, r);
    atomic_store(&c.dep_tail, c.dep_head + 1); /* a dependency tail past the head */
    assert_false(rt_ring_check(&c));
    copy_ring(&c, r);
    c.slots_clean = c.window + 1; /* cleaned past the window */
    assert_false(rt_ring_check(&c));
    copy_ring(&c, r);
    c.slots_clean = c.next_local; /* the next slot to take not cleaned */
    assert_false(rt_ring_check(&c));

    struct rt_ring *fresh = &run->rings[3];
    atomic_store(&fresh->slots[1].task_id, rt_task_id(3, 1)); /* a first-lap slot with an id */
    assert_false(rt_ring_check(fresh));
    atomic_store(&fresh->slots[1].task_id, UINT64_MAX);
    assert_true(rt_ring_check(fresh)); /* false: a check that stays false once repaired */
}

static void test_retirement_check_holds_on_a_forward_step_and_fails_on_a_backward_one(
    void **state)
{
    struct rt_run *run = *state;
    struct rt_ring c;
    copy_ring(&c, &run->rings[0]);
    atomic_store(&c.advance_lock, 1);
    assert_true(rt_ring_check_retirement(&c, 1, RT_HEAP_ALIGN, 1)); /* false: a real step fails */
    assert_true(rt_ring_check_retirement(&c, c.window, 0, 0)); /* a whole window at once */
    assert_false(rt_ring_check_retirement(&c, 0, 0, 0));       /* no task retired */
    assert_false(rt_ring_check_retirement(&c, c.window + 1, 0, 0)); /* more than a window */
    atomic_store(&c.heap_tail, 2 * RT_HEAP_ALIGN);
    assert_false(rt_ring_check_retirement(&c, 1, RT_HEAP_ALIGN, 1)); /* the heap tail moved back */
    atomic_store(&c.heap_tail, 0);
    atomic_store(&c.dep_tail, 2);
    assert_false(rt_ring_check_retirement(&c, 1, 0, 1)); /* the dependency tail moved back */
    atomic_store(&c.dep_tail, 0);
    atomic_store(&c.advance_lock, 0);
    assert_false(rt_ring_check_retirement(&c, 1, 0, 0)); /* published without the lock */
}

/* A copy of `s` that the test may corrupt. */
static void copy_slot(struct rt_slot *copy, const struct rt_slot *s)
{
    memcpy(copy, s, sizeof *copy);
}

static void test_slot_check_holds_on_real_slots_and_fails_on_each_corruption(void **state)
{
    struct rt_run *run = *state;
    struct rt_slot *s = dummy(run, NULL, 0, false);
    struct rt_slot *aic = submit(run, 0, NULL, 0, false, 1);
    assert_true(rt_slot_check(s));   /* false: a published dummy task fails */
    assert_true(rt_slot_check(aic)); /* false: a published AIC task fails */

    struct rt_slot c;
    copy_slot(&c, s);
    atomic_store(&c.state, RT_CONSUMED + 1); /* no such state */
    assert_false(rt_slot_check(&c));
    copy_slot(&c, s);
    c.fanout_count = 1; /* fewer holds than the scope's and the completion's */
    assert_false(rt_slot_check(&c));
    copy_slot(&c, s);
    c.fanout_released = c.fanout_count + 1; /* released more than held */
    assert_false(rt_slot_check(&c));
    copy_slot(&c, s);
    c.fanout_released = c.fanout_count; /* PENDING with its completion hold released */
    assert_false(rt_slot_check(&c));
    copy_slot(&c, s);
    c.closed = 1; /* closed while PENDING */
    assert_false(rt_slot_check(&c));
    copy_slot(&c, s);
    atomic_store(&c.state, RT_COMPLETED);
    assert_true(rt_slot_check(&c)); /* false: COMPLETED with holds out is a real state */
    c.fanout_head = 1; /* a consumer list left after completion */
    assert_false(rt_slot_check(&c));
    c.fanout_head = 0;
    c.fanout_released = c.fanout_count; /* every hold released but not closed */
    assert_false(rt_slot_check(&c));
    c.closed = 1;
    assert_true(rt_slot_check(&c)); /* false: the closed state fails */
    copy_slot(&c, s);
    atomic_store(&c.state, RT_CONSUMED); /* CONSUMED without being closed */
    assert_false(rt_slot_check(&c));
    copy_slot(&c, s);
    atomic_store(&c.fanin_pending, -1); /* a producer counted down twice */
    assert_false(rt_slot_check(&c));
    copy_slot(&c, s);
    c.lanes = RT_LANE_AIC; /* a dummy task with a lane */
    assert_false(rt_slot_check(&c));
    copy_slot(&c, s);
    c.total_subtasks = 1; /* a subtask for a dummy task */
    assert_false(rt_slot_check(&c));
    copy_slot(&c, s);
    c.block_num = 0;
    assert_false(rt_slot_check(&c));
    copy_slot(&c, s);
    c.ring = 2; /* not the ring of its id */
    assert_false(rt_slot_check(&c));
    copy_slot(&c, s);
    c.scope_depth = SIMPLER_SCOPE_MAX_DEPTH;
    assert_false(rt_slot_check(&c));
    copy_slot(&c, aic);
    atomic_store(&c.completed_subtasks, c.total_subtasks + 1); /* more finished than exist */
    assert_false(rt_slot_check(&c));
    copy_slot(&c, aic);
    c.lanes = RT_LANE_AIV0; /* an AIC task on an AIV lane */
    assert_false(rt_slot_check(&c));
}

static void test_transition_checks_hold_when_allowed_and_fail_otherwise(void **state)
{
    struct rt_run *run = *state;
    struct rt_slot *s = dummy(run, NULL, 0, false);
    struct rt_slot *aic = submit(run, 0, NULL, 0, false, 1);
    assert_true(rt_slot_may_be_ready(s)); /* false: a published, producer-less task is not ready */
    assert_true(rt_slot_may_complete(s)); /* false: a ready dummy task may not complete */
    assert_false(rt_slot_may_complete(aic)); /* true: completes with no block claimed or run */

    struct rt_slot c;
    copy_slot(&c, s);
    atomic_store(&c.fanin_pending, 1); /* a producer still to complete */
    assert_false(rt_slot_may_be_ready(&c));
    assert_false(rt_slot_may_complete(&c));
    copy_slot(&c, s);
    atomic_store(&c.state, RT_COMPLETED); /* already completed */
    assert_false(rt_slot_may_be_ready(&c));
    assert_false(rt_slot_may_complete(&c));
    copy_slot(&c, aic);
    atomic_store(&c.next_block, 1); /* a block claimed: it is running, not ready */
    assert_false(rt_slot_may_be_ready(&c));
    assert_false(rt_slot_may_complete(&c)); /* true: completes before its subtask finished */
    atomic_store(&c.completed_subtasks, 1);
    assert_true(rt_slot_may_complete(&c)); /* false: claimed and finished, yet refused */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST_WITH(test_a_producer_retires_once_its_consumers_released_it_and_then_its_scope_closed, run_setup, run_teardown),
        SIMPLER_TEST_WITH(test_a_producer_retires_once_its_scope_closed_and_then_its_last_consumer_released_it, run_setup, run_teardown),
        SIMPLER_TEST_WITH(test_fan_in_makes_a_consumer_ready_exactly_once, run_setup, run_teardown),
        SIMPLER_TEST_WITH(test_completion_pushes_each_consumer_it_made_ready_once, run_setup, run_teardown),
        SIMPLER_TEST_WITH(test_completion_keeps_single_block_consumers_in_the_released_list, run_setup, run_teardown),
        SIMPLER_TEST_WITH(test_ring_check_holds_on_a_real_run_and_fails_on_each_corruption, run_setup, run_teardown),
        SIMPLER_TEST_WITH(test_retirement_check_holds_on_a_forward_step_and_fails_on_a_backward_one, run_setup, run_teardown),
        SIMPLER_TEST_WITH(test_slot_check_holds_on_real_slots_and_fails_on_each_corruption, run_setup, run_teardown),
        SIMPLER_TEST_WITH(test_transition_checks_hold_when_allowed_and_fail_otherwise, run_setup, run_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
