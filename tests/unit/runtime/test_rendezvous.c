/*
 * test_rendezvous.c — the rendezvous at the start of a round
 * (src/runtime/rendezvous.c): every order of arrivals and deadlines
 * between a core loop and its scheduler ends with both in the round or
 * both out of it, never one waiting for a partner that left.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>

#include "launch/launch.h"
#include "runtime/rendezvous.h"

#define GEN 0x1234500ull

static struct rt_rendezvous fresh(void)
{
    struct rt_rendezvous r;
    atomic_init(&r.word, 0); /* as the launch chain leaves it */
    return r;
}

static void test_the_second_to_arrive_joins_whichever_side_it_is(void **state)
{
    (void)state;
    for (int first = 0; first < 2; first++) {
        enum rt_rendezvous_side a = first ? RT_RENDEZVOUS_SCHED : RT_RENDEZVOUS_CORE;
        enum rt_rendezvous_side b = first ? RT_RENDEZVOUS_CORE : RT_RENDEZVOUS_SCHED;
        struct rt_rendezvous r = fresh();
        assert_int_equal(rt_rendezvous_arrive(&r, GEN, a), RT_RENDEZVOUS_WAITING);
        assert_false(rt_rendezvous_joined(&r, GEN)); /* true: joined with nobody */
        assert_int_equal(rt_rendezvous_arrive(&r, GEN, b), RT_RENDEZVOUS_JOINED);
        assert_true(rt_rendezvous_joined(&r, GEN));
        /* The first side's deadline passing now changes nothing: it stays. */
        assert_false(rt_rendezvous_leave(&r, GEN, a));
        assert_true(rt_rendezvous_joined(&r, GEN));
    }
}

static void test_a_side_that_left_is_seen_by_its_late_partner(void **state)
{
    (void)state;
    for (int first = 0; first < 2; first++) {
        enum rt_rendezvous_side a = first ? RT_RENDEZVOUS_SCHED : RT_RENDEZVOUS_CORE;
        enum rt_rendezvous_side b = first ? RT_RENDEZVOUS_CORE : RT_RENDEZVOUS_SCHED;
        struct rt_rendezvous r = fresh();
        assert_int_equal(rt_rendezvous_arrive(&r, GEN, a), RT_RENDEZVOUS_WAITING);
        assert_true(rt_rendezvous_leave(&r, GEN, a));
        /* WAITING here: the late side would wait for a partner that left. */
        assert_int_equal(rt_rendezvous_arrive(&r, GEN, b), RT_RENDEZVOUS_PARTNER_LEFT);
        assert_false(rt_rendezvous_joined(&r, GEN));
    }
}

static void test_a_word_left_by_another_round_counts_as_empty(void **state)
{
    (void)state;
    /* Whatever an earlier round left (joined, or either side gone), a new
     * round's first arrival waits and its second joins. */
    enum rt_rendezvous_side sides[2] = {RT_RENDEZVOUS_CORE, RT_RENDEZVOUS_SCHED};
    for (int s = 0; s < 2; s++) {
        struct rt_rendezvous r = fresh();
        assert_int_equal(rt_rendezvous_arrive(&r, GEN - 1, sides[s]), RT_RENDEZVOUS_WAITING);
        assert_true(rt_rendezvous_leave(&r, GEN - 1, sides[s]));
        assert_int_equal(rt_rendezvous_arrive(&r, GEN, sides[1 - s]), RT_RENDEZVOUS_WAITING);
        assert_int_equal(rt_rendezvous_arrive(&r, GEN, sides[s]), RT_RENDEZVOUS_JOINED);
        /* The previous round's state is not this round's. */
        assert_false(rt_rendezvous_joined(&r, GEN - 1));
    }
}

struct race {
    struct rt_rendezvous rendezvous;
    pthread_barrier_t start;
    enum rt_rendezvous_arrival late_arrival;
};

static void *late_core(void *arg)
{
    struct race *race = arg;
    pthread_barrier_wait(&race->start);
    race->late_arrival = rt_rendezvous_arrive(&race->rendezvous, GEN, RT_RENDEZVOUS_CORE);
    return NULL;
}

static void test_an_arrival_racing_a_deadline_has_exactly_one_outcome(void **state)
{
    (void)state;
    unsigned joined = 0, left = 0;
    for (int i = 0; i < 2000; i++) {
        struct race race;
        race.rendezvous = fresh();
        pthread_barrier_init(&race.start, NULL, 2);
        assert_int_equal(rt_rendezvous_arrive(&race.rendezvous, GEN, RT_RENDEZVOUS_SCHED),
                         RT_RENDEZVOUS_WAITING);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, late_core, &race), 0);
        pthread_barrier_wait(&race.start);
        bool sched_left = rt_rendezvous_leave(&race.rendezvous, GEN, RT_RENDEZVOUS_SCHED);
        pthread_join(t, NULL);
        pthread_barrier_destroy(&race.start);
        if (sched_left) {
            /* The scheduler left: the core must see it and end. */
            assert_int_equal(race.late_arrival, RT_RENDEZVOUS_PARTNER_LEFT);
            left++;
        } else {
            /* The core came first: both are in the round. */
            assert_int_equal(race.late_arrival, RT_RENDEZVOUS_JOINED);
            assert_true(rt_rendezvous_joined(&race.rendezvous, GEN));
            joined++;
        }
    }
    assert_int_equal(joined + left, 2000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_second_to_arrive_joins_whichever_side_it_is),
        cmocka_unit_test(test_a_side_that_left_is_seen_by_its_late_partner),
        cmocka_unit_test(test_a_word_left_by_another_round_counts_as_empty),
        cmocka_unit_test(test_an_arrival_racing_a_deadline_has_exactly_one_outcome),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
