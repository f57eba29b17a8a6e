/*
 * host/phase.h — the kernel-mode context's phase machine.
 *
 * Owns: the phase word of one kernel-mode context and its two error slots
 * (DESIGN.md section 7), and their invariant checks. Must not touch the device, allocate, or know what
 * a teardown step releases: the context does the work and reports each
 * step here.
 *
 *   from                        call                  to
 *   NEW                         init_begin            INITIALIZING
 *   INITIALIZING                init_done             COLLECTING
 *   INITIALIZING                init_failed(0)        NEW (all rolled back: retry)
 *   INITIALIZING                init_failed(err)      CLOSING (err: teardown slot)
 *   COLLECTING, READY_ENQUEUED  launch_enqueued       READY_ENQUEUED
 *   COLLECTING, READY_ENQUEUED  poison(cause)         POISONED (cause: runtime slot)
 *   NEW                         close_begin           CLOSED (nothing to release)
 *   COLLECTING, READY_ENQUEUED,
 *   POISONED                    close_begin           CLOSING
 *   CLOSING                     close_begin           CLOSING (a retry)
 *   CLOSING                     close_step_failed(e)  CLOSING (first e kept)
 *   CLOSING                     close_done            CLOSED
 *   CLOSED                      close_begin           CLOSED (idempotent)
 *
 * Anything else is refused; sp_phase_prepare_allowed only asks.
 *
 * COLLECTING means no launch has been enqueued since init; READY_ENQUEUED
 * means at least one has, so work of this context may be outstanding on
 * its streams. Preparing a callable is allowed in both and moves neither
 * way: an upload does not make enqueued work complete, so going back to
 * COLLECTING would lose the one fact the phase carries.
 *
 * INITIALIZING marks an init under way, so a second init or a close is
 * refused while it runs and init_done/init_failed need an init_begin first.
 *
 * Every mutating call returns 0, INVALID_ARGUMENT (a cause or status that
 * is not a failure code; checked first) or INVALID_STATE (not allowed in
 * the current phase); a refused call changes nothing.
 *
 * Locking: plain data. The caller (the kernel-mode context) serialises
 * every call with its own mutex. The one exception is the phase word,
 * which is atomic so that sp_phase_current and sp_phase_accepts_launch may
 * be read without that mutex (a quick refusal, a diagnostic); such a read
 * is a snapshot, and a launch must still re-check under the context's lock.
 */
#ifndef SIMPLER_HOST_PHASE_H
#define SIMPLER_HOST_PHASE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Declared in lifecycle order: a context only ever moves to a later value,
 * except INITIALIZING back to NEW after a fully rolled-back init. */
enum sp_phase_kind {
    SP_PHASE_NEW = 0,        /* nothing created; init allowed */
    SP_PHASE_INITIALIZING,   /* init is creating streams, events, arenas */
    SP_PHASE_COLLECTING,     /* initialised, no launch enqueued yet */
    SP_PHASE_READY_ENQUEUED, /* at least one launch enqueued */
    SP_PHASE_POISONED,       /* device lost: only close is accepted */
    SP_PHASE_CLOSING,        /* teardown begun; sticky until it all succeeds */
    SP_PHASE_CLOSED,         /* everything released; terminal */
};

struct sp_phase {
    /* enum sp_phase_kind. Written only under the context's mutex; atomic so
     * the two lock-free readers above see a whole, published value. */
    _Atomic uint32_t kind;
    /* First poison cause (0: never poisoned). Kept through close. */
    int runtime_error;
    /* First teardown failure (0: none), from a failed init rollback or a
     * failed close step. Kept even after a later retry succeeds. */
    int teardown_error;
};

/* Starts in NEW with both error slots empty. */
void sp_phase_setup(struct sp_phase *phase);

/* NEW → INITIALIZING. INVALID_STATE in any other phase (init runs once per
 * context: CLOSED is not NEW). */
int sp_phase_init_begin(struct sp_phase *phase);

/* INITIALIZING → COLLECTING: everything init creates exists. */
int sp_phase_init_done(struct sp_phase *phase);

/* Init failed after init_begin. `rollback_status` is 0 when the rollback
 * released everything this init created: the phase returns to NEW and init
 * may be tried again. Otherwise it is the first rollback failure (negative;
 * positive is INVALID_ARGUMENT): the phase becomes CLOSING with it in the
 * teardown slot, and close must finish what the rollback left. The init
 * failure itself is the caller's to return; it is not recorded here.
 * INVALID_STATE outside INITIALIZING. */
int sp_phase_init_failed(struct sp_phase *phase, int rollback_status);

/* 0 when a callable may be prepared now (COLLECTING, READY_ENQUEUED);
 * INVALID_STATE otherwise. Changes nothing. */
int sp_phase_prepare_allowed(const struct sp_phase *phase);

/* A launch was enqueued: COLLECTING or READY_ENQUEUED → READY_ENQUEUED.
 * INVALID_STATE otherwise. */
int sp_phase_launch_enqueued(struct sp_phase *phase);

/* The device was lost: COLLECTING or READY_ENQUEUED → POISONED, with
 * `cause` (negative; otherwise INVALID_ARGUMENT) as the runtime error.
 * INVALID_STATE in any other phase, including POISONED: the first cause
 * is kept and a later one is dropped. */
int sp_phase_poison(struct sp_phase *phase, int cause);

/* Starts or retries close. NEW → CLOSED at once (nothing to release);
 * COLLECTING, READY_ENQUEUED, POISONED → CLOSING, to be called before the
 * first destructive step; CLOSING stays CLOSING (a retry does what is left);
 * CLOSED stays CLOSED (idempotent). All of those return 0; afterwards the
 * phase says whether there is teardown to do (CLOSING) or not (CLOSED).
 * INVALID_STATE only in INITIALIZING. */
int sp_phase_close_begin(struct sp_phase *phase);

/* A teardown step failed with `status` (negative; otherwise
 * INVALID_ARGUMENT). The phase stays CLOSING; the first such status is kept
 * in the teardown slot. INVALID_STATE outside CLOSING. */
int sp_phase_close_step_failed(struct sp_phase *phase, int status);

/* Every teardown step has succeeded: CLOSING → CLOSED. The teardown slot
 * keeps any earlier failure. INVALID_STATE outside CLOSING. */
int sp_phase_close_done(struct sp_phase *phase);

/* The phase now. May be read without the context's mutex (a snapshot). */
enum sp_phase_kind sp_phase_current(const struct sp_phase *phase);

/* True in COLLECTING and READY_ENQUEUED. May be read without the context's
 * mutex (a snapshot); a launch re-checks under the lock. */
bool sp_phase_accepts_launch(const struct sp_phase *phase);

/* A static name for `kind` ("COLLECTING"), or "UNKNOWN". Never NULL. */
const char *sp_phase_name(enum sp_phase_kind kind);

/* The first poison cause, or 0. Caller holds the context's mutex. */
int sp_phase_runtime_error(const struct sp_phase *phase);

/* The first teardown failure, or 0, kept for diagnosis: a close that
 * reached CLOSED released everything, whatever failed on the way (the
 * retry that finished returns 0). Caller holds the context's mutex. */
int sp_phase_teardown_error(const struct sp_phase *phase);

/* Invariants, asserted by every change where NDEBUG is not defined (the
 * Debug and sanitizer builds; the normal build defines NDEBUG and checks
 * nothing). Caller holds the context's mutex (the slots are plain data). */

/* True when the phase is one of enum sp_phase_kind's and its slots agree
 * with it: each slot 0 or a failure code; the runtime slot set in
 * POISONED and possibly in CLOSING and CLOSED, the teardown slot possibly
 * in CLOSING and CLOSED, neither anywhere else. */
bool sp_phase_check(const struct sp_phase *phase);

/* True when moving `phase` (consistent) to `to` with the slots
 * `runtime_error` and `teardown_error` is a step the table above allows:
 * a row's (from, to), each slot latched (unchanged, or from 0 to a
 * failure: the first failure is kept), and the result consistent. */
bool sp_phase_step_allowed(const struct sp_phase *phase, enum sp_phase_kind to,
                           int runtime_error, int teardown_error);

#endif /* SIMPLER_HOST_PHASE_H */
