/*
 * test_latch.c — the write-once identity latch (host/latch.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>

#include "host/latch.h"
#include "simpler/status.h"

static void test_starts_unlatched(void **state)
{
    (void)state;
    struct sp_latch l;
    sp_latch_init(&l);
    assert_int_equal(sp_latch_identity(&l), SP_IDENTITY_NONE);
    /* An unlatched context holds neither identity: both entry families refuse. */
    assert_int_equal(sp_latch_require(&l, SP_IDENTITY_PROGRAM), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(sp_latch_require(&l, SP_IDENTITY_KERNEL), PTO_RUNTIME_ERR_INVALID_STATE);
}

static void test_claim_is_idempotent_for_the_held_identity(void **state)
{
    (void)state;
    struct sp_latch l;
    sp_latch_init(&l);
    assert_int_equal(sp_latch_claim(&l, SP_IDENTITY_PROGRAM), 0);
    assert_int_equal(sp_latch_claim(&l, SP_IDENTITY_PROGRAM), 0); /* re-init after finalize */
    assert_int_equal(sp_latch_identity(&l), SP_IDENTITY_PROGRAM);
    assert_int_equal(sp_latch_require(&l, SP_IDENTITY_PROGRAM), 0);
}

static void test_identities_exclude_each_other_both_ways(void **state)
{
    (void)state;
    struct sp_latch p, k;
    sp_latch_init(&p);
    sp_latch_init(&k);
    assert_int_equal(sp_latch_claim(&p, SP_IDENTITY_PROGRAM), 0);
    assert_int_equal(sp_latch_claim(&p, SP_IDENTITY_KERNEL), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(sp_latch_identity(&p), SP_IDENTITY_PROGRAM); /* KERNEL: the refusal changed it */
    assert_int_equal(sp_latch_require(&p, SP_IDENTITY_KERNEL), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(sp_latch_claim(&k, SP_IDENTITY_KERNEL), 0);
    assert_int_equal(sp_latch_claim(&k, SP_IDENTITY_PROGRAM), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(sp_latch_identity(&k), SP_IDENTITY_KERNEL);
}

static void test_claiming_no_identity_is_an_argument_error(void **state)
{
    (void)state;
    struct sp_latch l;
    sp_latch_init(&l);
    assert_int_equal(sp_latch_claim(&l, SP_IDENTITY_NONE), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(sp_latch_claim(&l, (enum sp_identity)7), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(sp_latch_identity(&l), SP_IDENTITY_NONE); /* a rejected claim latched */
}

struct racer {
    struct sp_latch *latch;
    pthread_barrier_t *start;
    enum sp_identity identity;
    int rc;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    pthread_barrier_wait(r->start);
    r->rc = sp_latch_claim(r->latch, r->identity);
    return NULL;
}

/* Two threads claim different identities at once: exactly one wins, and
 * the latch holds the winner's identity. */
static void test_concurrent_claims_have_one_winner(void **state)
{
    (void)state;
    for (int round = 0; round < 200; round++) {
        struct sp_latch l;
        sp_latch_init(&l);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        struct racer a = {&l, &start, SP_IDENTITY_PROGRAM, 1};
        struct racer b = {&l, &start, SP_IDENTITY_KERNEL, 1};
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, race, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, race, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        pthread_barrier_destroy(&start);
        assert_true((a.rc == 0) != (b.rc == 0)); /* both 0: two identities latched */
        int loser = a.rc ? a.rc : b.rc;
        assert_int_equal(loser, PTO_RUNTIME_ERR_INVALID_STATE);
        assert_int_equal(sp_latch_identity(&l), a.rc == 0 ? SP_IDENTITY_PROGRAM : SP_IDENTITY_KERNEL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_starts_unlatched),
        cmocka_unit_test(test_claim_is_idempotent_for_the_held_identity),
        cmocka_unit_test(test_identities_exclude_each_other_both_ways),
        cmocka_unit_test(test_claiming_no_identity_is_an_argument_error),
        cmocka_unit_test(test_concurrent_claims_have_one_winner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
