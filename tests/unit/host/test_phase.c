/*
 * test_phase.c — the kernel-mode context's phase machine (host/phase.h).
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

#include "host/phase.h"
#include "simpler/status.h"

#define IS PTO_RUNTIME_ERR_INVALID_STATE

/* Distinct codes, so a slot that holds the wrong one says which call wrote it. */
#define CAUSE_AT_ENTRY PTO_RUNTIME_ERR_DEVICE_LOST /* the poison that made a POISONED context */
#define CAUSE_IN_OP PTO_RUNTIME_ERR_TIMEOUT        /* the cause a table row's poison passes */
#define TEARDOWN_IN_OP PTO_RUNTIME_ERR_INTERNAL    /* the failure a row's init_failed / step passes */

enum op {
    OP_INIT_BEGIN,
    OP_INIT_DONE,
    OP_INIT_FAILED_CLEAN,    /* init_failed(0): everything rolled back */
    OP_INIT_FAILED_ROLLBACK, /* init_failed(TEARDOWN_IN_OP): the rollback failed */
    OP_PREPARE,              /* prepare_allowed */
    OP_LAUNCH,               /* launch_enqueued */
    OP_POISON,               /* poison(CAUSE_IN_OP) */
    OP_CLOSE_BEGIN,
    OP_CLOSE_STEP_FAILED,    /* close_step_failed(TEARDOWN_IN_OP) */
    OP_CLOSE_DONE,
    OP_COUNT,
};

static const char *const op_names[OP_COUNT] = {
    "init_begin", "init_done", "init_failed(0)", "init_failed(err)", "prepare_allowed",
    "launch_enqueued", "poison", "close_begin", "close_step_failed", "close_done",
};

#define PHASE_COUNT (SP_PHASE_CLOSED + 1)

static int apply(struct sp_phase *p, enum op op)
{
    switch (op) {
    case OP_INIT_BEGIN:
        return sp_phase_init_begin(p);
    case OP_INIT_DONE:
        return sp_phase_init_done(p);
    case OP_INIT_FAILED_CLEAN:
        return sp_phase_init_failed(p, 0);
    case OP_INIT_FAILED_ROLLBACK:
        return sp_phase_init_failed(p, TEARDOWN_IN_OP);
    case OP_PREPARE:
        return sp_phase_prepare_allowed(p);
    case OP_LAUNCH:
        return sp_phase_launch_enqueued(p);
    case OP_POISON:
        return sp_phase_poison(p, CAUSE_IN_OP);
    case OP_CLOSE_BEGIN:
        return sp_phase_close_begin(p);
    case OP_CLOSE_STEP_FAILED:
        return sp_phase_close_step_failed(p, TEARDOWN_IN_OP);
    case OP_CLOSE_DONE:
        return sp_phase_close_done(p);
    case OP_COUNT:
        break;
    }
    fail_msg("no such op %d", (int)op);
    return 0;
}

/* Brings a fresh phase machine to `kind` by the shortest legal path. A
 * POISONED one carries CAUSE_AT_ENTRY; no other phase has a slot set. */
static void enter(struct sp_phase *p, enum sp_phase_kind kind)
{
    sp_phase_setup(p);
    if (kind == SP_PHASE_NEW)
        return;
    assert_int_equal(sp_phase_init_begin(p), 0);
    if (kind == SP_PHASE_INITIALIZING)
        return;
    assert_int_equal(sp_phase_init_done(p), 0);
    if (kind == SP_PHASE_COLLECTING)
        return;
    if (kind == SP_PHASE_READY_ENQUEUED) {
        assert_int_equal(sp_phase_launch_enqueued(p), 0);
        return;
    }
    if (kind == SP_PHASE_POISONED) {
        assert_int_equal(sp_phase_poison(p, CAUSE_AT_ENTRY), 0);
        return;
    }
    assert_int_equal(sp_phase_close_begin(p), 0);
    if (kind == SP_PHASE_CLOSING)
        return;
    assert_int_equal(sp_phase_close_done(p), 0);
    assert_int_equal(sp_phase_current(p), SP_PHASE_CLOSED);
}

struct row {
    enum sp_phase_kind from;
    enum op op;
    int rc;
    enum sp_phase_kind to;
    int runtime_error;  /* the runtime slot afterwards */
    int teardown_error; /* the teardown slot afterwards */
    const char *wrong;  /* what a different outcome would mean */
};

#define NEW SP_PHASE_NEW
#define INITIALIZING SP_PHASE_INITIALIZING
#define COLLECTING SP_PHASE_COLLECTING
#define READY SP_PHASE_READY_ENQUEUED
#define POISONED SP_PHASE_POISONED
#define CLOSING SP_PHASE_CLOSING
#define CLOSED SP_PHASE_CLOSED

/* Every (phase, operation) pair. A refused row expects the phase and both
 * slots exactly as `enter` left them: a refused call changed nothing. */
static const struct row table[] = {
    {NEW, OP_INIT_BEGIN, 0, INITIALIZING, 0, 0, "a fresh context cannot be initialised"},
    {NEW, OP_INIT_DONE, IS, NEW, 0, 0, "init finished without having begun"},
    {NEW, OP_INIT_FAILED_CLEAN, IS, NEW, 0, 0, "an init that never began reported failing"},
    {NEW, OP_INIT_FAILED_ROLLBACK, IS, NEW, 0, 0, "a rollback error was recorded for no init"},
    {NEW, OP_PREPARE, IS, NEW, 0, 0, "a callable uploads into arenas that do not exist"},
    {NEW, OP_LAUNCH, IS, NEW, 0, 0, "a launch was enqueued on streams that do not exist"},
    {NEW, OP_POISON, IS, NEW, 0, 0, "a context with no device state was poisoned"},
    {NEW, OP_CLOSE_BEGIN, 0, CLOSED, 0, 0, "CLOSING: close waits for teardown of nothing"},
    {NEW, OP_CLOSE_STEP_FAILED, IS, NEW, 0, 0, "a teardown failure was recorded outside close"},
    {NEW, OP_CLOSE_DONE, IS, NEW, 0, 0, "close finished without having begun"},

    {INITIALIZING, OP_INIT_BEGIN, IS, INITIALIZING, 0, 0, "two inits run at once"},
    {INITIALIZING, OP_INIT_DONE, 0, COLLECTING, 0, 0, "a successful init is not usable"},
    {INITIALIZING, OP_INIT_FAILED_CLEAN, 0, NEW, 0, 0, "a fully rolled-back init cannot be retried"},
    {INITIALIZING, OP_INIT_FAILED_ROLLBACK, 0, CLOSING, 0, TEARDOWN_IN_OP,
     "NEW: what the rollback left would leak; slot 0: the rollback failure was lost"},
    {INITIALIZING, OP_PREPARE, IS, INITIALIZING, 0, 0, "a callable uploads into a half-built context"},
    {INITIALIZING, OP_LAUNCH, IS, INITIALIZING, 0, 0, "a launch ran on a half-built context"},
    {INITIALIZING, OP_POISON, IS, INITIALIZING, 0, 0, "poison overtook init's own failure path"},
    {INITIALIZING, OP_CLOSE_BEGIN, IS, INITIALIZING, 0, 0, "close tears down what init is still creating"},
    {INITIALIZING, OP_CLOSE_STEP_FAILED, IS, INITIALIZING, 0, 0, "a teardown failure was recorded mid-init"},
    {INITIALIZING, OP_CLOSE_DONE, IS, INITIALIZING, 0, 0, "close finished mid-init"},

    {COLLECTING, OP_INIT_BEGIN, IS, COLLECTING, 0, 0, "a live context was initialised again"},
    {COLLECTING, OP_INIT_DONE, IS, COLLECTING, 0, 0, "init finished twice"},
    {COLLECTING, OP_INIT_FAILED_CLEAN, IS, COLLECTING, 0, 0, "a live context went back to NEW"},
    {COLLECTING, OP_INIT_FAILED_ROLLBACK, IS, COLLECTING, 0, 0, "a live context was closed by a stale init"},
    {COLLECTING, OP_PREPARE, 0, COLLECTING, 0, 0, "a live context refuses callables, or asking moved it"},
    {COLLECTING, OP_LAUNCH, 0, READY, 0, 0, "COLLECTING: the first launch was not noticed"},
    {COLLECTING, OP_POISON, 0, POISONED, CAUSE_IN_OP, 0, "a lost device went unrecorded"},
    {COLLECTING, OP_CLOSE_BEGIN, 0, CLOSING, 0, 0, "close would tear down with no sticky phase"},
    {COLLECTING, OP_CLOSE_STEP_FAILED, IS, COLLECTING, 0, 0, "a teardown failure was recorded outside close"},
    {COLLECTING, OP_CLOSE_DONE, IS, COLLECTING, 0, 0, "CLOSED: teardown was skipped"},

    {READY, OP_INIT_BEGIN, IS, READY, 0, 0, "a live context was initialised again"},
    {READY, OP_INIT_DONE, IS, READY, 0, 0, "COLLECTING: init finished twice and forgot the launches"},
    {READY, OP_INIT_FAILED_CLEAN, IS, READY, 0, 0, "a context with launches in flight went back to NEW"},
    {READY, OP_INIT_FAILED_ROLLBACK, IS, READY, 0, 0, "a live context was closed by a stale init"},
    {READY, OP_PREPARE, 0, READY, 0, 0, "COLLECTING: preparing forgot that launches were enqueued"},
    {READY, OP_LAUNCH, 0, READY, 0, 0, "a second launch is refused, or moves the phase on"},
    {READY, OP_POISON, 0, POISONED, CAUSE_IN_OP, 0, "a lost device went unrecorded"},
    {READY, OP_CLOSE_BEGIN, 0, CLOSING, 0, 0, "close would tear down with no sticky phase"},
    {READY, OP_CLOSE_STEP_FAILED, IS, READY, 0, 0, "a teardown failure was recorded outside close"},
    {READY, OP_CLOSE_DONE, IS, READY, 0, 0, "CLOSED: teardown was skipped under enqueued work"},

    {POISONED, OP_INIT_BEGIN, IS, POISONED, CAUSE_AT_ENTRY, 0, "a dead context was initialised again"},
    {POISONED, OP_INIT_DONE, IS, POISONED, CAUSE_AT_ENTRY, 0, "COLLECTING: init revived a dead context"},
    {POISONED, OP_INIT_FAILED_CLEAN, IS, POISONED, CAUSE_AT_ENTRY, 0, "NEW: a dead context's state was forgotten"},
    {POISONED, OP_INIT_FAILED_ROLLBACK, IS, POISONED, CAUSE_AT_ENTRY, 0, "a stale init recorded teardown"},
    {POISONED, OP_PREPARE, IS, POISONED, CAUSE_AT_ENTRY, 0, "a callable uploads to a lost device"},
    {POISONED, OP_LAUNCH, IS, POISONED, CAUSE_AT_ENTRY, 0, "READY: a launch revived a dead context"},
    {POISONED, OP_POISON, IS, POISONED, CAUSE_AT_ENTRY, 0, "CAUSE_IN_OP: a later cause replaced the first"},
    {POISONED, OP_CLOSE_BEGIN, 0, CLOSING, CAUSE_AT_ENTRY, 0,
     "a dead context cannot be closed, or closing forgot why it died"},
    {POISONED, OP_CLOSE_STEP_FAILED, IS, POISONED, CAUSE_AT_ENTRY, 0, "a teardown failure outside close"},
    {POISONED, OP_CLOSE_DONE, IS, POISONED, CAUSE_AT_ENTRY, 0, "CLOSED: teardown was skipped"},

    {CLOSING, OP_INIT_BEGIN, IS, CLOSING, 0, 0, "init over a half-torn-down context"},
    {CLOSING, OP_INIT_DONE, IS, CLOSING, 0, 0, "COLLECTING: a closing context came back to life"},
    {CLOSING, OP_INIT_FAILED_CLEAN, IS, CLOSING, 0, 0, "NEW: what is left to tear down would leak"},
    {CLOSING, OP_INIT_FAILED_ROLLBACK, IS, CLOSING, 0, 0, "a stale init wrote the teardown slot"},
    {CLOSING, OP_PREPARE, IS, CLOSING, 0, 0, "a callable uploads into arenas being released"},
    {CLOSING, OP_LAUNCH, IS, CLOSING, 0, 0, "READY: a launch reopened a closing context"},
    {CLOSING, OP_POISON, IS, CLOSING, 0, 0, "POISONED: close was no longer sticky"},
    {CLOSING, OP_CLOSE_BEGIN, 0, CLOSING, 0, 0, "a failed close cannot be retried"},
    {CLOSING, OP_CLOSE_STEP_FAILED, 0, CLOSING, 0, TEARDOWN_IN_OP,
     "CLOSED: a failed step ended close; slot 0: the failure was lost"},
    {CLOSING, OP_CLOSE_DONE, 0, CLOSED, 0, 0, "a finished teardown never reaches CLOSED"},

    {CLOSED, OP_INIT_BEGIN, IS, CLOSED, 0, 0, "a closed context was re-initialised (CLOSED is not NEW)"},
    {CLOSED, OP_INIT_DONE, IS, CLOSED, 0, 0, "COLLECTING: a closed context came back to life"},
    {CLOSED, OP_INIT_FAILED_CLEAN, IS, CLOSED, 0, 0, "NEW: a closed context became initialisable"},
    {CLOSED, OP_INIT_FAILED_ROLLBACK, IS, CLOSED, 0, 0, "CLOSING: a closed context reopened for teardown"},
    {CLOSED, OP_PREPARE, IS, CLOSED, 0, 0, "a callable uploads into released arenas"},
    {CLOSED, OP_LAUNCH, IS, CLOSED, 0, 0, "a launch on released streams"},
    {CLOSED, OP_POISON, IS, CLOSED, 0, 0, "a closed context recorded a runtime error"},
    {CLOSED, OP_CLOSE_BEGIN, 0, CLOSED, 0, 0, "a second close fails, or reopens teardown"},
    {CLOSED, OP_CLOSE_STEP_FAILED, IS, CLOSED, 0, 0, "a teardown failure was recorded after close"},
    {CLOSED, OP_CLOSE_DONE, IS, CLOSED, 0, 0, "close finished twice"},
};

#define ROW_COUNT (sizeof table / sizeof table[0])

/* The table names each (phase, operation) pair exactly once. */
static void test_table_covers_every_phase_and_operation_once(void **state)
{
    (void)state;
    int seen[PHASE_COUNT][OP_COUNT] = {{0}};
    for (size_t i = 0; i < ROW_COUNT; i++)
        seen[table[i].from][table[i].op]++;
    for (int k = 0; k < PHASE_COUNT; k++)
        for (int o = 0; o < OP_COUNT; o++)
            if (seen[k][o] != 1)
                fail_msg("%s × %s appears %d times", sp_phase_name((enum sp_phase_kind)k), op_names[o],
                         seen[k][o]);
    assert_int_equal(ROW_COUNT, PHASE_COUNT * OP_COUNT); /* 70 */
}

static void test_every_operation_in_every_phase_has_its_exact_outcome(void **state)
{
    (void)state;
    for (size_t i = 0; i < ROW_COUNT; i++) {
        const struct row *r = &table[i];
        struct sp_phase p;
        enter(&p, r->from);
        int rc = apply(&p, r->op);
        enum sp_phase_kind to = sp_phase_current(&p);
        int runtime = sp_phase_runtime_error(&p);
        int teardown = sp_phase_teardown_error(&p);
        if (rc != r->rc || to != r->to || runtime != r->runtime_error || teardown != r->teardown_error)
            fail_msg("%s × %s: got rc %d, %s, runtime %d, teardown %d; expected rc %d, %s, runtime %d, "
                     "teardown %d. Means: %s",
                     sp_phase_name(r->from), op_names[r->op], rc, sp_phase_name(to), runtime, teardown, r->rc,
                     sp_phase_name(r->to), r->runtime_error, r->teardown_error, r->wrong);
    }
}

/* What each phase accepts, read through the two query calls. */
static void test_only_collecting_and_ready_enqueued_accept_prepare_and_launch(void **state)
{
    (void)state;
    static const struct {
        enum sp_phase_kind kind;
        bool accepts_launch;
    } accepts[PHASE_COUNT] = {
        {NEW, false},  {INITIALIZING, false}, {COLLECTING, true}, {READY, true},
        {POISONED, false}, {CLOSING, false},  {CLOSED, false},
    };
    for (int i = 0; i < PHASE_COUNT; i++) {
        struct sp_phase p;
        enter(&p, accepts[i].kind);
        /* true outside COLLECTING/READY: a launch would run on missing, dead or released state;
         * false inside: a live context refuses launches. */
        if (sp_phase_accepts_launch(&p) != accepts[i].accepts_launch)
            fail_msg("%s: accepts_launch %d", sp_phase_name(accepts[i].kind), !accepts[i].accepts_launch);
        assert_int_equal(sp_phase_prepare_allowed(&p), accepts[i].accepts_launch ? 0 : IS);
        assert_int_equal(sp_phase_current(&p), accepts[i].kind); /* another: asking moved the phase */
    }
}

static void test_setup_starts_new_with_both_slots_empty(void **state)
{
    (void)state;
    struct sp_phase p;
    sp_phase_setup(&p);
    assert_int_equal(sp_phase_current(&p), SP_PHASE_NEW);
    assert_int_equal(sp_phase_runtime_error(&p), 0);  /* nonzero: a fresh context reads as poisoned */
    assert_int_equal(sp_phase_teardown_error(&p), 0); /* nonzero: its first close would report failure */
}

static void test_each_phase_has_its_name(void **state)
{
    (void)state;
    assert_string_equal(sp_phase_name(SP_PHASE_NEW), "NEW");
    assert_string_equal(sp_phase_name(SP_PHASE_INITIALIZING), "INITIALIZING");
    assert_string_equal(sp_phase_name(SP_PHASE_COLLECTING), "COLLECTING");
    assert_string_equal(sp_phase_name(SP_PHASE_READY_ENQUEUED), "READY_ENQUEUED");
    assert_string_equal(sp_phase_name(SP_PHASE_POISONED), "POISONED");
    assert_string_equal(sp_phase_name(SP_PHASE_CLOSING), "CLOSING");
    assert_string_equal(sp_phase_name(SP_PHASE_CLOSED), "CLOSED");
    assert_string_equal(sp_phase_name((enum sp_phase_kind)PHASE_COUNT), "UNKNOWN");
    assert_string_equal(sp_phase_name((enum sp_phase_kind)-1), "UNKNOWN");
}

/* A cause or status that is not a failure is refused before the phase is
 * looked at, and changes nothing. */
static void test_arguments_are_checked_before_the_phase(void **state)
{
    (void)state;
    struct sp_phase p;
    enter(&p, SP_PHASE_COLLECTING);
    assert_int_equal(sp_phase_poison(&p, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(sp_phase_poison(&p, 5), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(sp_phase_current(&p), SP_PHASE_COLLECTING); /* POISONED: a success code killed it */
    assert_int_equal(sp_phase_runtime_error(&p), 0);

    enter(&p, SP_PHASE_CLOSED); /* INVALID_STATE here: the phase was checked first */
    assert_int_equal(sp_phase_poison(&p, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(sp_phase_close_step_failed(&p, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(sp_phase_init_failed(&p, 1), PTO_RUNTIME_ERR_INVALID_ARGUMENT);

    enter(&p, SP_PHASE_CLOSING);
    assert_int_equal(sp_phase_close_step_failed(&p, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(sp_phase_close_step_failed(&p, 3), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(sp_phase_teardown_error(&p), 0); /* 3: a positive "failure" was latched */
    assert_int_equal(sp_phase_current(&p), SP_PHASE_CLOSING);

    enter(&p, SP_PHASE_INITIALIZING);
    assert_int_equal(sp_phase_init_failed(&p, 1), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(sp_phase_current(&p), SP_PHASE_INITIALIZING); /* NEW/CLOSING: the refusal moved it */
    assert_int_equal(sp_phase_teardown_error(&p), 0);
}

/* The first poison cause survives a second poison, close, a failed close
 * step and CLOSED; the teardown slot stays separate from it. */
static void test_first_poison_cause_is_kept_through_close(void **state)
{
    (void)state;
    struct sp_phase p;
    enter(&p, SP_PHASE_READY_ENQUEUED);
    assert_int_equal(sp_phase_poison(&p, PTO_RUNTIME_ERR_DEVICE_LOST), 0);
    assert_int_equal(sp_phase_poison(&p, PTO_RUNTIME_ERR_TIMEOUT), IS);
    assert_int_equal(sp_phase_runtime_error(&p), PTO_RUNTIME_ERR_DEVICE_LOST); /* TIMEOUT: last cause won */
    assert_false(sp_phase_accepts_launch(&p));
    assert_int_equal(sp_phase_close_begin(&p), 0);
    assert_int_equal(sp_phase_close_step_failed(&p, PTO_RUNTIME_ERR_INTERNAL), 0);
    assert_int_equal(sp_phase_runtime_error(&p), PTO_RUNTIME_ERR_DEVICE_LOST); /* INTERNAL: slots shared */
    assert_int_equal(sp_phase_teardown_error(&p), PTO_RUNTIME_ERR_INTERNAL);
    assert_int_equal(sp_phase_close_begin(&p), 0);
    assert_int_equal(sp_phase_close_done(&p), 0);
    assert_int_equal(sp_phase_current(&p), SP_PHASE_CLOSED);
    assert_int_equal(sp_phase_runtime_error(&p), PTO_RUNTIME_ERR_DEVICE_LOST); /* 0: CLOSED hid the cause */
}

/* Close fails twice, is retried, then succeeds: the first failure is what
 * the teardown slot reports, also once CLOSED and after a second close. */
static void test_close_retries_keep_the_first_teardown_error(void **state)
{
    (void)state;
    struct sp_phase p;
    enter(&p, SP_PHASE_READY_ENQUEUED);
    assert_int_equal(sp_phase_close_begin(&p), 0);
    assert_int_equal(sp_phase_close_step_failed(&p, PTO_RUNTIME_ERR_DEVICE_LOST), 0);
    assert_int_equal(sp_phase_current(&p), SP_PHASE_CLOSING); /* CLOSED: a failed step ended close */
    assert_false(sp_phase_accepts_launch(&p));                /* a failed close reopened the context */

    assert_int_equal(sp_phase_close_begin(&p), 0); /* the retry */
    assert_int_equal(sp_phase_current(&p), SP_PHASE_CLOSING);
    assert_int_equal(sp_phase_close_step_failed(&p, PTO_RUNTIME_ERR_TIMEOUT), 0);
    assert_int_equal(sp_phase_teardown_error(&p), PTO_RUNTIME_ERR_DEVICE_LOST); /* TIMEOUT: last won */

    assert_int_equal(sp_phase_close_begin(&p), 0); /* the retry that succeeds */
    assert_int_equal(sp_phase_close_done(&p), 0);
    assert_int_equal(sp_phase_current(&p), SP_PHASE_CLOSED);
    assert_int_equal(sp_phase_teardown_error(&p), PTO_RUNTIME_ERR_DEVICE_LOST); /* 0: success erased it */
    assert_int_equal(sp_phase_runtime_error(&p), 0); /* nonzero: a teardown failure read as poison */

    assert_int_equal(sp_phase_close_begin(&p), 0); /* closing a closed context */
    assert_int_equal(sp_phase_current(&p), SP_PHASE_CLOSED);
    assert_int_equal(sp_phase_teardown_error(&p), PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(sp_phase_close_done(&p), IS); /* 0: close could "finish" twice */
}

/* An init whose rollback released everything leaves a NEW context that a
 * second init brings to life, with nothing recorded. */
static void test_a_rolled_back_init_can_be_retried(void **state)
{
    (void)state;
    struct sp_phase p;
    sp_phase_setup(&p);
    assert_int_equal(sp_phase_init_begin(&p), 0);
    assert_int_equal(sp_phase_init_failed(&p, 0), 0);
    assert_int_equal(sp_phase_current(&p), SP_PHASE_NEW);
    assert_int_equal(sp_phase_teardown_error(&p), 0); /* nonzero: a clean rollback was recorded as a failure */
    assert_int_equal(sp_phase_init_begin(&p), 0);     /* IS: one failed init bricked the context */
    assert_int_equal(sp_phase_init_failed(&p, 0), 0); /* and again */
    assert_int_equal(sp_phase_init_begin(&p), 0);
    assert_int_equal(sp_phase_init_done(&p), 0);
    assert_int_equal(sp_phase_current(&p), SP_PHASE_COLLECTING);
    assert_true(sp_phase_accepts_launch(&p));
    assert_int_equal(sp_phase_runtime_error(&p), 0);
    assert_int_equal(sp_phase_teardown_error(&p), 0);
}

/* An init whose rollback itself failed goes to CLOSING with that failure
 * recorded; only close can move it, and close keeps the rollback's error
 * ahead of its own. */
static void test_a_failed_rollback_leaves_close_to_finish(void **state)
{
    (void)state;
    struct sp_phase p;
    sp_phase_setup(&p);
    assert_int_equal(sp_phase_init_begin(&p), 0);
    assert_int_equal(sp_phase_init_failed(&p, PTO_RUNTIME_ERR_DEVICE_LOST), 0);
    assert_int_equal(sp_phase_current(&p), SP_PHASE_CLOSING); /* NEW: a retry would leak what is left */
    assert_int_equal(sp_phase_teardown_error(&p), PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(sp_phase_runtime_error(&p), 0);  /* a teardown failure read as poison */
    assert_int_equal(sp_phase_init_begin(&p), IS);    /* 0: init over leftover device state */
    assert_false(sp_phase_accepts_launch(&p));

    assert_int_equal(sp_phase_close_begin(&p), 0);
    assert_int_equal(sp_phase_close_step_failed(&p, PTO_RUNTIME_ERR_TIMEOUT), 0);
    assert_int_equal(sp_phase_close_begin(&p), 0);
    assert_int_equal(sp_phase_close_done(&p), 0);
    assert_int_equal(sp_phase_current(&p), SP_PHASE_CLOSED);
    assert_int_equal(sp_phase_teardown_error(&p), PTO_RUNTIME_ERR_DEVICE_LOST); /* TIMEOUT: close's own won */
    assert_int_equal(sp_phase_init_begin(&p), IS); /* 0: CLOSED is NEW again */
}

struct lifecycle {
    struct sp_phase phase;
    pthread_mutex_t lock; /* the context's mutex: every mutating call holds it */
    pthread_barrier_t start;
    int first_failure;      /* the writer's first nonzero return (asserted after join) */
    _Atomic bool writer_done; /* ends the reader's loop even if a step failed */
};

/* The writer thread cannot use cmocka's asserts (they longjmp); it keeps
 * its first nonzero return for the main thread to check. */
static void note(struct lifecycle *l, int rc)
{
    if (rc != 0 && l->first_failure == 0)
        l->first_failure = rc;
}

static void *run_lifecycle(void *arg)
{
    struct lifecycle *l = arg;
    pthread_barrier_wait(&l->start);
    pthread_mutex_lock(&l->lock);
    note(l, sp_phase_init_begin(&l->phase));
    pthread_mutex_unlock(&l->lock);
    pthread_mutex_lock(&l->lock);
    note(l, sp_phase_init_done(&l->phase));
    pthread_mutex_unlock(&l->lock);
    for (int i = 0; i < 3; i++) {
        pthread_mutex_lock(&l->lock);
        note(l, sp_phase_launch_enqueued(&l->phase));
        pthread_mutex_unlock(&l->lock);
    }
    pthread_mutex_lock(&l->lock);
    note(l, sp_phase_poison(&l->phase, PTO_RUNTIME_ERR_DEVICE_LOST));
    pthread_mutex_unlock(&l->lock);
    pthread_mutex_lock(&l->lock);
    note(l, sp_phase_close_begin(&l->phase));
    note(l, sp_phase_close_step_failed(&l->phase, PTO_RUNTIME_ERR_TIMEOUT));
    pthread_mutex_unlock(&l->lock);
    pthread_mutex_lock(&l->lock);
    note(l, sp_phase_close_begin(&l->phase));
    note(l, sp_phase_close_done(&l->phase));
    pthread_mutex_unlock(&l->lock);
    atomic_store_explicit(&l->writer_done, true, memory_order_release);
    return NULL;
}

static bool is_live(enum sp_phase_kind kind)
{
    return kind == SP_PHASE_COLLECTING || kind == SP_PHASE_READY_ENQUEUED;
}

/* A reader without the context's mutex sees the phases of one lifetime in
 * lifecycle order (never one going back), and accepts_launch agrees with
 * the phase around it; under the mutex once CLOSED it sees both slots.
 * Under TSan this also checks that the lock-free reads are not races. */
static void test_lock_free_readers_see_phases_in_lifecycle_order(void **state)
{
    (void)state;
    for (int round = 0; round < 100; round++) {
        struct lifecycle l = {.first_failure = 0};
        sp_phase_setup(&l.phase);
        atomic_init(&l.writer_done, false);
        pthread_mutex_init(&l.lock, NULL);
        pthread_barrier_init(&l.start, NULL, 2);
        pthread_t writer;
        assert_int_equal(pthread_create(&writer, NULL, run_lifecycle, &l), 0);
        pthread_barrier_wait(&l.start);
        enum sp_phase_kind last = SP_PHASE_NEW;
        /* Ends: the writer reaches CLOSED, or sets writer_done after a failed step. */
        for (;;) {
            bool done = atomic_load_explicit(&l.writer_done, memory_order_acquire);
            enum sp_phase_kind before = sp_phase_current(&l.phase);
            bool accepts = sp_phase_accepts_launch(&l.phase);
            enum sp_phase_kind after = sp_phase_current(&l.phase);
            if (before < last || after < before)
                fail_msg("saw %s, %s after %s", sp_phase_name(before), sp_phase_name(after),
                         sp_phase_name(last));
            /* The middle read saw a phase between the two around it. */
            if (before == after && accepts != is_live(before))
                fail_msg("accepts_launch %d in %s", accepts, sp_phase_name(before));
            last = after;
            if (last == SP_PHASE_CLOSED || done)
                break;
            sched_yield();
        }
        pthread_join(writer, NULL);
        assert_int_equal(l.first_failure, 0); /* a step of an ordinary lifetime was refused */
        assert_int_equal(last, SP_PHASE_CLOSED);
        pthread_mutex_lock(&l.lock);
        assert_int_equal(sp_phase_runtime_error(&l.phase), PTO_RUNTIME_ERR_DEVICE_LOST);
        assert_int_equal(sp_phase_teardown_error(&l.phase), PTO_RUNTIME_ERR_TIMEOUT);
        pthread_mutex_unlock(&l.lock);
        pthread_barrier_destroy(&l.start);
        pthread_mutex_destroy(&l.lock);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_covers_every_phase_and_operation_once),
        cmocka_unit_test(test_every_operation_in_every_phase_has_its_exact_outcome),
        cmocka_unit_test(test_only_collecting_and_ready_enqueued_accept_prepare_and_launch),
        cmocka_unit_test(test_setup_starts_new_with_both_slots_empty),
        cmocka_unit_test(test_each_phase_has_its_name),
        cmocka_unit_test(test_arguments_are_checked_before_the_phase),
        cmocka_unit_test(test_first_poison_cause_is_kept_through_close),
        cmocka_unit_test(test_close_retries_keep_the_first_teardown_error),
        cmocka_unit_test(test_a_rolled_back_init_can_be_retried),
        cmocka_unit_test(test_a_failed_rollback_leaves_close_to_finish),
        cmocka_unit_test(test_lock_free_readers_see_phases_in_lifecycle_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
