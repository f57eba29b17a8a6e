/*
 * host/phase.c — the kernel-mode context's phase machine (see phase.h).
 *
 * Owns: the phase word and the two error slots. Must not touch the device
 * or allocate; must not decide what a phase means for the work around it
 * (the context does).
 */
#include "host/phase.h"

#include "simpler/status.h"

/* Caller holds the context's mutex (writers only ever run under it, so a
 * relaxed load sees the latest store). */
static enum sp_phase_kind phase_get(const struct sp_phase *phase)
{
    return (enum sp_phase_kind)atomic_load_explicit(&phase->kind, memory_order_relaxed);
}

/* Caller holds the context's mutex. Release: a lock-free reader that sees
 * the new phase (acquire in sp_phase_current) also sees what the context
 * wrote before the transition. */
static void phase_set(struct sp_phase *phase, enum sp_phase_kind kind)
{
    atomic_store_explicit(&phase->kind, (uint32_t)kind, memory_order_release);
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

/* Keeps the first failure: a slot once set is never overwritten. */
static void keep_first(int *slot, int status)
{
    if (*slot == 0)
        *slot = status;
}

void sp_phase_setup(struct sp_phase *phase)
{
    atomic_init(&phase->kind, SP_PHASE_NEW);
    phase->runtime_error = 0;
    phase->teardown_error = 0;
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
    if (rollback_status != 0)
        keep_first(&phase->teardown_error, rollback_status);
    /* NEW: nothing of this init survives; CLOSING: close finishes the rest. */
    phase_set(phase, rollback_status == 0 ? SP_PHASE_NEW : SP_PHASE_CLOSING);
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
    keep_first(&phase->runtime_error, cause);
    phase_set(phase, SP_PHASE_POISONED);
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
    keep_first(&phase->teardown_error, status);
    return 0;
}

int sp_phase_close_done(struct sp_phase *phase)
{
    return move(phase, SP_PHASE_CLOSING, SP_PHASE_CLOSED);
}

enum sp_phase_kind sp_phase_current(const struct sp_phase *phase)
{
    /* Pairs with the release store in phase_set. */
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
