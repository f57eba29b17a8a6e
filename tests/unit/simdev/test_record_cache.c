/*
 * test_record_cache.c — where ended event records go (simdev/event.c): a
 * thread keeps up to 32 of its own and gives half of them to the
 * process-wide pool once it has more; whatever it keeps goes back to the
 * pool when it ends, so no record is lost with a thread.
 *
 * Each case empties the pool first, runs its records on a thread of its
 * own (whose cache starts empty) and counts the pool after joining it.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "simdev/park.h" /* event.h uses its wait counters */
#include "simdev/event.h"
#include "test_support.h"

#define MAX_RECORDS 64

struct churn {
    unsigned records; /* made, then all let go */
    uint32_t pool_while_held; /* the pool's count with all of them made */
    uint32_t pool_before_end; /* and once all are let go, before the thread ends */
    int made;                 /* how many sd_record_new gave */
};

static void *churn_main(void *arg)
{
    struct churn *c = arg;
    struct sd_event_record *held[MAX_RECORDS];
    for (unsigned i = 0; i < c->records; i++) {
        held[i] = sd_record_new();
        if (held[i])
            c->made++;
    }
    c->pool_while_held = sd_record_pool_count();
    for (unsigned i = 0; i < c->records; i++)
        if (held[i])
            sd_record_unref(held[i]);
    c->pool_before_end = sd_record_pool_count();
    return NULL;
}

/* Runs `c` on a new thread, the pool empty first, and joins it. */
static void churn_on_a_thread(struct churn *c)
{
    sd_record_pool_empty();
    assert_int_equal(sd_record_pool_count(), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, churn_main, c), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(c->made, (int)c->records);
    /* nothing came from an empty pool, and nothing went in while held */
    assert_int_equal(c->pool_while_held, 0);
}

/* A thread that lets go of fewer records than its cache holds gives the
 * pool none while it runs, and all of them when it ends. After the join,
 * 0 would mean the cache is lost with the thread. */
static void a_thread_s_records_go_to_the_pool_when_it_ends(void **state)
{
    (void)state;
    struct churn c = {.records = 10};
    churn_on_a_thread(&c);
    assert_int_equal(c.pool_before_end, 0); /* kept by the thread, no lock taken */
    assert_int_equal(sd_record_pool_count(), 10);
    sd_record_pool_empty();
}

/* A thread that lets go of 40: at its 33rd it holds one over the cache's
 * 32 and gives 16 to the pool, keeps the other 24, and gives those when it
 * ends. 16 after the join would mean the 24 kept were lost with it; 40
 * before its end, that its cache kept nothing. */
static void a_full_cache_gives_half_and_the_rest_goes_at_the_end(void **state)
{
    (void)state;
    struct churn c = {.records = 40};
    churn_on_a_thread(&c);
    assert_int_equal(c.pool_before_end, 16);
    assert_int_equal(sd_record_pool_count(), 40);
    sd_record_pool_empty();
}

/* A thread whose cache is empty takes 16 at once from the pool: with 40
 * pooled, one record made leaves 24 in the pool (and 15 in its cache,
 * which go back at its end: 40 again). 39 would mean it took the lock for
 * one record only. */
static void an_empty_cache_takes_sixteen_from_the_pool(void **state)
{
    (void)state;
    struct churn fill = {.records = 40};
    churn_on_a_thread(&fill);
    assert_int_equal(sd_record_pool_count(), 40);
    struct churn one = {.records = 1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, churn_main, &one), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(one.made, 1);
    assert_int_equal(one.pool_while_held, 24);
    assert_int_equal(one.pool_before_end, 24); /* the one let go stays with the thread */
    assert_int_equal(sd_record_pool_count(), 40);
    sd_record_pool_empty();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_thread_s_records_go_to_the_pool_when_it_ends),
        cmocka_unit_test(a_full_cache_gives_half_and_the_rest_goes_at_the_end),
        cmocka_unit_test(an_empty_cache_takes_sixteen_from_the_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
