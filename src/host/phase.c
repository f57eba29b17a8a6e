/*
 * host/phase.c — the kernel-mode context's phase machine (see phase.h).
 *
 * Owns: the phase word and the two error slots, and their invariant
 * checks (asserted at every change where NDEBUG is not defined: the Debug
 * and sanitizer builds). Must not touch the device or allocate; must not
 * decide what a phase means for the work around it (the context does).
 */
#include "host/phase.h"

#include <assert.h>

#include "simpler/status.h"

/* Caller holds the context's mutex (writers only ever run under it, so a
 * relaxed load sees the latest store). */
static enum sp_phase_kind phase_get(const struct sp_phase *phase)
{
    return (enum sp_phase_kind)atomic_load_explicit(&phase->kind, memory_order_relaxed);
}

/* Caller holds the context's mutex. The one writer: moves to `kind` with
 * the error slots `runtime_error` and `teardown_error`, a step the
 * machine must allow (asserted). The slots first, then the phase word.
 * Release: a lock-free reader that sees the new phase (acquire in
 * sp_phase_current) also sees what the context wrote before the
 * transition. */
static void phase_write(struct sp_phase *phase, enum sp_phase_kind kind, int runtime_error,
                        int teardown_error)
{
    assert(sp_phase_step_allowed(phase, kind, runtime_error, teardown_error));
    phase->runtime_error = runtime_error;
    phase->teardown_error = teardown_error;
    atomic_store_explicit(&phase->kind, (uint32_t)kind, memory_order_release);
}

/* Caller holds the context's mutex. Moves to `kind`, both slots kept. */
static void phase_set(struct sp_phase *phase, enum sp_phase_kind kind)
{
    phase_write(phase, kind, phase->runtime_error, phase->teardown_error);
}

/* True in the two phases that accept work (a prepare, a launch): the
 * context is initialised and neither poisoned nor closing. */
static bool accepts_work(enum sp_phase_kind kind)
{
    return kind == SP_PHASE_COLLECTING || kind == SP_PHASE_READY_ENQUEUED;
}

/* Caller holds the context's mutex. The one transition from `from` to
 * `to`; INVALID_STATE, changing nothing, in any other phase. */
static int move(struct sp_phase *phase, enum sp_phase_kind from, enum sp_phase_kind to)
{
    if (phase_get(phase) != from)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    phase_set(phase, to);
    return 0;
}

/* Keeps the first failure: the value of a slot holding `slot` after
 * `status` failed; a slot once set is never overwritten. */
static int first_failure(int slot, int status)
{
    return slot != 0 ? slot : status;
}

void sp_phase_setup(struct sp_phase *phase)
{
    atomic_init(&phase->kind, SP_PHASE_NEW);
    phase->runtime_error = 0;
    phase->teardown_error = 0;
    assert(sp_phase_check(phase));
}

int sp_phase_init_begin(struct sp_phase *phase)
{
    return move(phase, SP_PHASE_NEW, SP_PHASE_INITIALIZING);
}

int sp_phase_init_done(struct sp_phase *phase)
{
    return move(phase, SP_PHASE_INITIALIZING, SP_PHASE_COLLECTING);
}

int sp_phase_init_failed(struct sp_phase *phase, int rollback_status)
{
    if (rollback_status > 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (phase_get(phase) != SP_PHASE_INITIALIZING)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    /* NEW: nothing of this init survives; CLOSING: close finishes the rest. */
    if (rollback_status == 0)
        phase_set(phase, SP_PHASE_NEW);
    else
        phase_write(phase, SP_PHASE_CLOSING, phase->runtime_error,
                    first_failure(phase->teardown_error, rollback_status));
    return 0;
}

int sp_phase_prepare_allowed(const struct sp_phase *phase)
{
    return accepts_work(phase_get(phase)) ? 0 : PTO_RUNTIME_ERR_INVALID_STATE;
}

int sp_phase_launch_enqueued(struct sp_phase *phase)
{
    if (!accepts_work(phase_get(phase)))
        return PTO_RUNTIME_ERR_INVALID_STATE;
    phase_set(phase, SP_PHASE_READY_ENQUEUED);
    return 0;
}

int sp_phase_poison(struct sp_phase *phase, int cause)
{
    if (cause >= 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (!accepts_work(phase_get(phase)))
        return PTO_RUNTIME_ERR_INVALID_STATE;
    phase_write(phase, SP_PHASE_POISONED, first_failure(phase->runtime_error, cause),
                phase->teardown_error);
    return 0;
}

int sp_phase_close_begin(struct sp_phase *phase)
{
    switch (phase_get(phase)) {
    case SP_PHASE_NEW:
        phase_set(phase, SP_PHASE_CLOSED);
        return 0;
    case SP_PHASE_COLLECTING:
    case SP_PHASE_READY_ENQUEUED:
    case SP_PHASE_POISONED:
        phase_set(phase, SP_PHASE_CLOSING);
        return 0;
    case SP_PHASE_CLOSING:
    case SP_PHASE_CLOSED:
        return 0;
    case SP_PHASE_INITIALIZING:
        break;
    }
    return PTO_RUNTIME_ERR_INVALID_STATE;
}

int sp_phase_close_step_failed(struct sp_phase *phase, int status)
{
    if (status >= 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (phase_get(phase) != SP_PHASE_CLOSING)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    /* The phase word stays as it is: only the teardown slot moves. */
    int teardown = first_failure(phase->teardown_error, status);
    assert(sp_phase_step_allowed(phase, SP_PHASE_CLOSING, phase->runtime_error, teardown));
    phase->teardown_error = teardown;
    return 0;
}

int sp_phase_close_done(struct sp_phase *phase)
{
    return move(phase, SP_PHASE_CLOSING, SP_PHASE_CLOSED);
}

enum sp_phase_kind sp_phase_current(const struct sp_phase *phase)
{
    /* Pairs with the release store in phase_write. */
    return (enum sp_phase_kind)atomic_load_explicit(&phase->kind, memory_order_acquire);
}

bool sp_phase_accepts_launch(const struct sp_phase *phase)
{
    return accepts_work(sp_phase_current(phase));
}

const char *sp_phase_name(enum sp_phase_kind kind)
{
    switch (kind) {
    case SP_PHASE_NEW:
        return "NEW";
    case SP_PHASE_INITIALIZING:
        return "INITIALIZING";
    case SP_PHASE_COLLECTING:
        return "COLLECTING";
    case SP_PHASE_READY_ENQUEUED:
        return "READY_ENQUEUED";
    case SP_PHASE_POISONED:
        return "POISONED";
    case SP_PHASE_CLOSING:
        return "CLOSING";
    case SP_PHASE_CLOSED:
        return "CLOSED";
    }
    return "UNKNOWN";
}

int sp_phase_runtime_error(const struct sp_phase *phase)
{
    return phase->runtime_error;
}

int sp_phase_teardown_error(const struct sp_phase *phase)
{
    return phase->teardown_error;
}

/* ------------------------------------------------------------ invariants */

/*
 * The slots against the phase: a slot holds 0 or a failure code (every
 * writer checks its argument is negative first). The runtime slot is set
 * only by poison, which leads from a live phase to POISONED, and is kept
 * through close: POISONED has it, CLOSING and CLOSED may. The teardown
 * slot is set only by a failed rollback (to CLOSING) or a failed close
 * step (in CLOSING): only CLOSING and CLOSED may have it. A phase before
 * those (NEW comes only from setup or a clean rollback of an init begun
 * in NEW) has neither.
 */
static bool slots_agree(enum sp_phase_kind kind, int runtime_error, int teardown_error)
{
    if (runtime_error > 0 || teardown_error > 0)
        return false;
    switch (kind) {
    case SP_PHASE_NEW:
    case SP_PHASE_INITIALIZING:
    case SP_PHASE_COLLECTING:
    case SP_PHASE_READY_ENQUEUED:
        return runtime_error == 0 && teardown_error == 0;
    case SP_PHASE_POISONED:
        return runtime_error != 0 && teardown_error == 0;
    case SP_PHASE_CLOSING:
    case SP_PHASE_CLOSED:
        return true;
    }
    return false; /* not a phase */
}

bool sp_phase_check(const struct sp_phase *phase)
{
    return slots_agree(phase_get(phase), phase->runtime_error, phase->teardown_error);
}

/* The table in phase.h, one row per (from, to); a call that changes
 * nothing (close_begin in CLOSING or CLOSED) is a step to itself. */
static bool transition_allowed(enum sp_phase_kind from, enum sp_phase_kind to)
{
    switch (from) {
    case SP_PHASE_NEW:
        return to == SP_PHASE_INITIALIZING || to == SP_PHASE_CLOSED;
    case SP_PHASE_INITIALIZING:
        return to == SP_PHASE_COLLECTING || to == SP_PHASE_NEW || to == SP_PHASE_CLOSING;
    case SP_PHASE_COLLECTING:
    case SP_PHASE_READY_ENQUEUED:
        return to == SP_PHASE_READY_ENQUEUED || to == SP_PHASE_POISONED ||
               to == SP_PHASE_CLOSING;
    case SP_PHASE_POISONED:
        return to == SP_PHASE_CLOSING;
    case SP_PHASE_CLOSING:
        return to == SP_PHASE_CLOSING || to == SP_PHASE_CLOSED;
    case SP_PHASE_CLOSED:
        return to == SP_PHASE_CLOSED;
    }
    return false;
}

/* A first-failure slot is latched: it keeps its value once set, and may
 * only go from empty to a failure. */
static bool latched(int before, int after)
{
    return after == before || (before == 0 && after < 0);
}

bool sp_phase_step_allowed(const struct sp_phase *phase, enum sp_phase_kind to,
                           int runtime_error, int teardown_error)
{
    return sp_phase_check(phase) && transition_allowed(phase_get(phase), to) &&
           latched(phase->runtime_error, runtime_error) &&
           latched(phase->teardown_error, teardown_error) &&
           slots_agree(to, runtime_error, teardown_error);
}
