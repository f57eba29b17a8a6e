/*
 * test_sem.c — device semaphores (simdev_sem_*): units taken and given back
 * by stream ops, the round gate of kernel mode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "simpler/simdev_fault.h"
#include "test_support.h"

#define INJECTED (-977)

static simdev_sem_t new_sem(uint32_t units)
{
    simdev_sem_t sem = 0;
    assert_int_equal(simdev_sem_create(&sem, units), 0);
    assert_true(sem != 0); /* 0 names no semaphore */
    return sem;
}

static void assert_counts(simdev_sem_t sem, uint64_t acquired, uint64_t released)
{
    struct simdev_sem_info info = {99, 99, 99};
    assert_int_equal(simdev_sem_info(sem, &info), 0);
    assert_int_equal(info.acquired, acquired);
    assert_int_equal(info.released, released);
}

/* A host callback that records what an atomic counter held when it ran. */
struct seen {
    atomic_int *watched;
    atomic_int value; /* -1 until the callback ran */
};

static int record_seen_fn(void *user_data)
{
    struct seen *s = user_data;
    atomic_store(&s->value, atomic_load(s->watched));
    return 0;
}

static int fail_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    (void)args;
    (void)args_size;
    return INJECTED;
}

static void a_unit_is_held_from_acquire_to_release_and_the_next_waits_for_it(void **state)
{
    (void)state;
    simdev_sem_t sem = new_sem(1);
    simdev_stream_t s1 = ts_new_stream(), s2 = ts_new_stream();
    struct ts_gate held;
    ts_gate_init(&held);
    atomic_int first = 0, second = 0;

    assert_int_equal(simdev_stream_sem_acquire(s1, sem), 0);
    ts_launch_gate(s1, &held);
    ts_launch_count(s1, &first);
    assert_int_equal(simdev_stream_sem_release(s1, sem), 0);
    ts_gate_wait_arrivals(&held, 1); /* s1 holds the unit now */
    assert_counts(sem, 1, 0);

    struct seen seen = {&first, -1};
    assert_int_equal(simdev_stream_sem_acquire(s2, sem), 0);
    assert_int_equal(simdev_launch_host_func(s2, record_seen_fn, &seen), 0);
    ts_launch_count(s2, &second);
    assert_int_equal(simdev_stream_sem_release(s2, sem), 0);
    assert_true(ts_sem_wait_tickets(sem, 2)); /* s2's acquire is waiting now */
    assert_int_equal(simdev_stream_query(s2), PTO_RUNTIME_ERR_NOT_READY);
    assert_int_equal(atomic_load(&second), 0); /* 1: two holders at once */

    ts_gate_open(&held);
    assert_int_equal(simdev_stream_sync(s1), 0);
    assert_int_equal(simdev_stream_sync(s2), 0);
    /* 0: s2 held its unit before s1 gave it back */
    assert_int_equal(atomic_load(&seen.value), 1);
    assert_int_equal(atomic_load(&first), 1);
    assert_int_equal(atomic_load(&second), 1);
    assert_counts(sem, 2, 2);

    ts_gate_destroy(&held);
    assert_int_equal(simdev_stream_destroy(s1), 0);
    assert_int_equal(simdev_stream_destroy(s2), 0);
    assert_int_equal(simdev_sem_destroy(sem), 0);
}

static void sem_ops_execute_on_a_stream_that_carries_an_error(void **state)
{
    (void)state;
    simdev_sem_t sem = new_sem(1);
    simdev_stream_t s = ts_new_stream();
    atomic_int skipped = 0, after = 0;
    assert_int_equal(simdev_launch_aicpu(s, fail_aicpu_fn, 1, NULL, 0), 0);
    assert_int_equal(simdev_stream_sem_acquire(s, sem), 0);
    ts_launch_count(s, &skipped);
    assert_int_equal(simdev_stream_sem_release(s, sem), 0);
    assert_int_equal(simdev_stream_sync(s), INJECTED); /* the error is kept */
    assert_int_equal(atomic_load(&skipped), 0);          /* 1: an op after the error ran */
    /* 0, 0: skipped like other ops, a later holder would wait forever;
     * 1, 0: the unit was lost */
    assert_counts(sem, 1, 1);
    assert_int_equal(simdev_stream_sem_acquire(s, sem), 0);
    ts_launch_count(s, &after);
    assert_int_equal(simdev_stream_sem_release(s, sem), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&after), 1);
    assert_counts(sem, 2, 2);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_sem_destroy(sem), 0);
}

static void captured_sem_ops_are_graph_nodes_and_run_at_every_replay(void **state)
{
    (void)state;
    simdev_sem_t sem = new_sem(1);
    simdev_stream_t s = ts_new_stream();
    atomic_int ran = 0;
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simdev_stream_sem_acquire(s, sem), 0);
    ts_launch_count(s, &ran);
    assert_int_equal(simdev_stream_sem_release(s, sem), 0);
    simdev_graph_t graph;
    assert_int_equal(simdev_stream_end_capture(s, &graph), 0);
    size_t nodes = 0;
    assert_int_equal(simdev_graph_node_count(graph, &nodes), 0);
    assert_int_equal(nodes, 3); /* 1: the sem ops were dropped from the graph */
    assert_counts(sem, 0, 0);   /* captured, not run */
    simdev_graph_exec_t exec;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&ran), 5);
    assert_counts(sem, 5, 5);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_sem_destroy(sem), 0);
}

static void destroy_fails_waiters_and_makes_the_handle_stale(void **state)
{
    (void)state;
    simdev_sem_t sem = new_sem(1);
    simdev_stream_t s1 = ts_new_stream(), s2 = ts_new_stream();
    struct ts_gate held;
    ts_gate_init(&held);
    atomic_int never = 0;
    assert_int_equal(simdev_stream_sem_acquire(s1, sem), 0);
    ts_launch_gate(s1, &held);
    assert_int_equal(simdev_stream_sem_release(s1, sem), 0);
    ts_gate_wait_arrivals(&held, 1);
    assert_int_equal(simdev_stream_sem_acquire(s2, sem), 0);
    ts_launch_count(s2, &never);
    assert_true(ts_sem_wait_tickets(sem, 2)); /* s2's acquire waits: the destroy must wake it */
    assert_int_equal(simdev_sem_destroy(sem), 0);
    /* the waiting acquire wakes and fails; nothing after it runs */
    assert_int_equal(simdev_stream_sync(s2), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(atomic_load(&never), 0);
    ts_gate_open(&held);
    /* the holder's release names a destroyed semaphore */
    assert_int_equal(simdev_stream_sync(s1), PTO_RUNTIME_ERR_INVALID_STATE);

    /* The slot is reused by the next semaphore; the old handle stays stale. */
    simdev_sem_t next = new_sem(2);
    assert_true(next != sem);
    struct simdev_sem_info info;
    assert_int_equal(simdev_sem_info(sem, &info), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simdev_sem_destroy(sem), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simdev_stream_sem_acquire(s1, sem), 0);
    assert_int_equal(simdev_stream_sem_release(s1, sem), 0);
    assert_int_equal(simdev_stream_sync(s1), PTO_RUNTIME_ERR_INVALID_STATE);
    /* the stale ops took no ticket of the new one and gave it no unit */
    assert_int_equal(simdev_sem_info(next, &info), 0);
    assert_int_equal(info.tickets, 0);
    assert_counts(next, 0, 0);
    ts_gate_destroy(&held);
    assert_int_equal(simdev_stream_destroy(s1), 0);
    assert_int_equal(simdev_stream_destroy(s2), 0);
    assert_int_equal(simdev_sem_destroy(next), 0);
}

static void several_units_admit_that_many_holders(void **state)
{
    (void)state;
    simdev_sem_t sem = new_sem(2);
    simdev_stream_t s[3] = {ts_new_stream(), ts_new_stream(), ts_new_stream()};
    struct ts_gate held;
    ts_gate_init(&held);
    atomic_int done = 0;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(simdev_stream_sem_acquire(s[i], sem), 0);
        ts_launch_gate(s[i], &held);
        ts_launch_count(s[i], &done);
        assert_int_equal(simdev_stream_sem_release(s[i], sem), 0);
    }
    ts_gate_wait_arrivals(&held, 2); /* 2 holders at once: 2 units */
    assert_counts(sem, 2, 0);
    struct seen seen = {&done, -1};
    assert_int_equal(simdev_stream_sem_acquire(s[2], sem), 0);
    assert_int_equal(simdev_launch_host_func(s[2], record_seen_fn, &seen), 0);
    assert_int_equal(simdev_stream_sem_release(s[2], sem), 0);
    assert_true(ts_sem_wait_tickets(sem, 3)); /* the third acquire is waiting */
    assert_int_equal(simdev_stream_query(s[2]), PTO_RUNTIME_ERR_NOT_READY);
    ts_gate_open(&held);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(simdev_stream_sync(s[i]), 0);
        assert_int_equal(simdev_stream_destroy(s[i]), 0);
    }
    assert_counts(sem, 3, 3);
    /* 0: the third held a unit while both others still did */
    assert_true(atomic_load(&seen.value) >= 1);
    ts_gate_destroy(&held);
    assert_int_equal(simdev_sem_destroy(sem), 0);
}

static void bad_arguments_capacity_and_injected_faults_change_nothing(void **state)
{
    (void)state;
    simdev_sem_t sem = 77;
    assert_int_equal(simdev_sem_create(NULL, 1), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_sem_create(&sem, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(sem, 77); /* changed: a refused create wrote its out-param */
    assert_int_equal(simdev_sem_destroy(0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    simdev_stream_t s = ts_new_stream();
    assert_int_equal(simdev_stream_sem_acquire(NULL, 1), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_stream_sem_acquire(s, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* a handle of another device */
    assert_int_equal(simdev_stream_sem_release(s, (uint64_t)5 << 56 | 1),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);

    simdev_sem_t all[SIMDEV_MAX_SEMS];
    for (int i = 0; i < SIMDEV_MAX_SEMS; i++)
        all[i] = new_sem(1);
    assert_int_equal(simdev_sem_create(&sem, 1), PTO_RUNTIME_ERR_CAPACITY_EXCEEDED);
    for (int i = 0; i < SIMDEV_MAX_SEMS; i++)
        assert_int_equal(simdev_sem_destroy(all[i]), 0);

    sem = new_sem(1);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_SEM, 1, INJECTED), 0);
    assert_int_equal(simdev_stream_sem_acquire(s, sem), INJECTED);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_counts(sem, 0, 0); /* the refused acquire was not enqueued */
    simdev_sem_t other = 0;
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_SEM_CREATE, 1, INJECTED), 0);
    assert_int_equal(simdev_sem_create(&other, 1), INJECTED);
    assert_int_equal(other, 0);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_SEM_DESTROY, 1, INJECTED), 0);
    assert_int_equal(simdev_sem_destroy(sem), INJECTED);
    assert_counts(sem, 0, 0); /* still live */
    assert_int_equal(simdev_sem_destroy(sem), 0);
    assert_int_equal(simdev_stream_destroy(s), 0);
}

static void a_device_reset_fails_a_waiting_acquire(void **state)
{
    (void)state;
    simdev_sem_t sem = new_sem(1);
    simdev_stream_t s1 = ts_new_stream(), s2 = ts_new_stream();
    struct ts_gate held;
    ts_gate_init(&held);
    assert_int_equal(simdev_stream_sem_acquire(s1, sem), 0);
    ts_launch_gate(s1, &held);
    ts_gate_wait_arrivals(&held, 1);
    assert_int_equal(simdev_stream_sem_acquire(s2, sem), 0);
    assert_true(ts_sem_wait_tickets(sem, 2)); /* s2's acquire waits */
    ts_gate_open(&held); /* s1 never releases: only the reset ends s2's wait */
    assert_int_equal(simdev_stream_sync(s1), 0);
    assert_int_equal(simdev_device_reset(0), 0); /* hangs: the waiter was never woken */
    ts_gate_destroy(&held);
    struct simdev_sem_info info;
    assert_int_equal(simdev_sem_info(sem, &info), PTO_RUNTIME_ERR_INVALID_STATE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(a_unit_is_held_from_acquire_to_release_and_the_next_waits_for_it),
        SIMPLER_TEST(sem_ops_execute_on_a_stream_that_carries_an_error),
        SIMPLER_TEST(captured_sem_ops_are_graph_nodes_and_run_at_every_replay),
        SIMPLER_TEST(destroy_fails_waiters_and_makes_the_handle_stale),
        SIMPLER_TEST(several_units_admit_that_many_holders),
        SIMPLER_TEST(bad_arguments_capacity_and_injected_faults_change_nothing),
        SIMPLER_TEST(a_device_reset_fails_a_waiting_acquire),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
