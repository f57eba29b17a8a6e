/*
 * test_phase_invariants.c — the phase machine's invariant checks
 * (host/phase.h: sp_phase_check, sp_phase_step_allowed).
 *
 * Owns: the checks holding through real lifetimes, failing on corrupted
 * phases, allowing exactly the transitions of phase.h's table, and
 * holding the error slots latched. What each operation does in each phase
 * is test_phase.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdatomic.h>
#include <stdbool.h>

#include "host/phase.h"
#include "simpler/status.h"

#define PHASES (SP_PHASE_CLOSED + 1)
#define CAUSE PTO_RUNTIME_ERR_DEVICE_LOST  /* a poison cause */
#define TEARDOWN PTO_RUNTIME_ERR_INTERNAL  /* a teardown failure */

/* A phase as the test writes it, bypassing the machine. */
static void put(struct sp_phase *p, enum sp_phase_kind kind, int runtime_error, int teardown_error)
{
    atomic_store(&p->kind, kind);
    p->runtime_error = runtime_error;
    p->teardown_error = teardown_error;
}

/* Slots consistent with `kind`: POISONED carries a cause, nothing else does. */
static void put_consistent(struct sp_phase *p, enum sp_phase_kind kind)
{
    put(p, kind, kind == SP_PHASE_POISONED ? CAUSE : 0, 0);
}

/* Every step of three lifetimes (launch, poison, failed and retried close;
 * an init rolled back clean and retried; a failed rollback closed) leaves
 * a consistent phase. */
static void test_every_phase_of_real_lifetimes_is_consistent(void **state)
{
    (void)state;
    struct sp_phase p;
    sp_phase_setup(&p);
    assert_true(sp_phase_check(&p)); /* false: setup leaves an inconsistent phase */
    assert_int_equal(sp_phase_init_begin(&p), 0);
    assert_true(sp_phase_check(&p));
    assert_int_equal(sp_phase_init_done(&p), 0);
    assert_true(sp_phase_check(&p));
    assert_int_equal(sp_phase_launch_enqueued(&p), 0);
    assert_true(sp_phase_check(&p));
    assert_int_equal(sp_phase_poison(&p, CAUSE), 0);
    assert_true(sp_phase_check(&p)); /* false: POISONED with its cause is a real state */
    assert_int_equal(sp_phase_close_begin(&p), 0);
    assert_int_equal(sp_phase_close_step_failed(&p, TEARDOWN), 0);
    assert_true(sp_phase_check(&p)); /* false: CLOSING with both slots is a real state */
    assert_int_equal(sp_phase_close_begin(&p), 0);
    assert_int_equal(sp_phase_close_done(&p), 0);
    assert_true(sp_phase_check(&p));

    sp_phase_setup(&p);
    assert_int_equal(sp_phase_init_begin(&p), 0);
    assert_int_equal(sp_phase_init_failed(&p, 0), 0);
    assert_true(sp_phase_check(&p)); /* false: NEW after a clean rollback is a real state */
    assert_int_equal(sp_phase_init_begin(&p), 0);
    assert_int_equal(sp_phase_init_failed(&p, TEARDOWN), 0);
    assert_true(sp_phase_check(&p));
    assert_int_equal(sp_phase_close_done(&p), 0);
    assert_true(sp_phase_check(&p));
    assert_int_equal(sp_phase_teardown_error(&p), TEARDOWN); /* the check changed a slot */
}

static void test_phase_check_fails_on_each_corruption(void **state)
{
    (void)state;
    struct sp_phase p;
    put(&p, PHASES, 0, 0); /* not a phase */
    assert_false(sp_phase_check(&p));
    put(&p, SP_PHASE_POISONED, 0, 0); /* poisoned without a cause */
    assert_false(sp_phase_check(&p));
    put(&p, SP_PHASE_POISONED, CAUSE, TEARDOWN); /* a teardown failure before close */
    assert_false(sp_phase_check(&p));
    put(&p, SP_PHASE_COLLECTING, CAUSE, 0); /* a live phase with a poison cause */
    assert_false(sp_phase_check(&p));
    put(&p, SP_PHASE_NEW, 0, TEARDOWN); /* a fresh context with a teardown failure */
    assert_false(sp_phase_check(&p));
    put(&p, SP_PHASE_CLOSING, 1, 0); /* a slot holding a success code */
    assert_false(sp_phase_check(&p));
    put(&p, SP_PHASE_CLOSED, CAUSE, TEARDOWN);
    assert_true(sp_phase_check(&p)); /* false: CLOSED keeps both slots, legitimately */
}

/* Whether phase.h's table has a row from `from` to `to` (close_begin in
 * CLOSING or CLOSED stays put; launch_enqueued in READY_ENQUEUED too). */
static bool in_table(enum sp_phase_kind from, enum sp_phase_kind to)
{
    static const bool row[PHASES][PHASES] = {
        [SP_PHASE_NEW] = {[SP_PHASE_INITIALIZING] = true, [SP_PHASE_CLOSED] = true},
        [SP_PHASE_INITIALIZING] = {[SP_PHASE_COLLECTING] = true, [SP_PHASE_NEW] = true,
                                   [SP_PHASE_CLOSING] = true},
        [SP_PHASE_COLLECTING] = {[SP_PHASE_READY_ENQUEUED] = true, [SP_PHASE_POISONED] = true,
                                 [SP_PHASE_CLOSING] = true},
        [SP_PHASE_READY_ENQUEUED] = {[SP_PHASE_READY_ENQUEUED] = true,
                                     [SP_PHASE_POISONED] = true, [SP_PHASE_CLOSING] = true},
        [SP_PHASE_POISONED] = {[SP_PHASE_CLOSING] = true},
        [SP_PHASE_CLOSING] = {[SP_PHASE_CLOSING] = true, [SP_PHASE_CLOSED] = true},
        [SP_PHASE_CLOSED] = {[SP_PHASE_CLOSED] = true},
    };
    return row[from][to];
}

/* Every (from, to) pair, with slots consistent on both sides (a step into
 * POISONED sets the cause): allowed exactly when the table has the row. */
static void test_steps_are_allowed_exactly_as_the_table_says(void **state)
{
    (void)state;
    for (int from = 0; from < PHASES; from++)
        for (int to = 0; to < PHASES; to++) {
            struct sp_phase p;
            put_consistent(&p, (enum sp_phase_kind)from);
            int runtime = to == SP_PHASE_POISONED || from == SP_PHASE_POISONED ? CAUSE : 0;
            bool allowed = sp_phase_step_allowed(&p, (enum sp_phase_kind)to, runtime, 0);
            if (allowed != in_table((enum sp_phase_kind)from, (enum sp_phase_kind)to))
                fail_msg("%s -> %s: %s", sp_phase_name((enum sp_phase_kind)from),
                         sp_phase_name((enum sp_phase_kind)to),
                         allowed ? "allowed outside the table" : "refused inside the table");
        }
}

static void test_error_slots_are_latched(void **state)
{
    (void)state;
    struct sp_phase p;
    put(&p, SP_PHASE_CLOSING, 0, 0);
    assert_true(sp_phase_step_allowed(&p, SP_PHASE_CLOSING, 0, TEARDOWN)); /* a first failure */
    put(&p, SP_PHASE_CLOSING, 0, TEARDOWN);
    assert_true(sp_phase_step_allowed(&p, SP_PHASE_CLOSED, 0, TEARDOWN)); /* kept */
    assert_false(sp_phase_step_allowed(&p, SP_PHASE_CLOSED, 0, 0)); /* cleared */
    assert_false(sp_phase_step_allowed(&p, SP_PHASE_CLOSING, 0, CAUSE)); /* overwritten */
    put(&p, SP_PHASE_POISONED, CAUSE, 0);
    assert_false(sp_phase_step_allowed(&p, SP_PHASE_CLOSING, TEARDOWN, 0)); /* cause replaced */
    assert_false(sp_phase_step_allowed(&p, SP_PHASE_CLOSING, 0, 0));        /* cause dropped */
    put(&p, SP_PHASE_POISONED, 0, 0); /* an inconsistent start */
    assert_false(sp_phase_step_allowed(&p, SP_PHASE_CLOSING, 0, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_phase_of_real_lifetimes_is_consistent),
        cmocka_unit_test(test_phase_check_fails_on_each_corruption),
        cmocka_unit_test(test_steps_are_allowed_exactly_as_the_table_says),
        cmocka_unit_test(test_error_slots_are_latched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
