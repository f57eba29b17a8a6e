/*
 * host/latch.h — a context's execution identity, latched write-once.
 *
 * Owns: the identity word of one context (DESIGN.md section 1). A context
 * starts with none; the first claim latches PROGRAM or KERNEL and nothing
 * ever unlatches it — not finalize, not an error. Claiming the identity
 * already held succeeds (so init after finalize works); claiming the other
 * one is INVALID_STATE. Lock-free: one compare-and-swap.
 */
#ifndef SIMPLER_HOST_LATCH_H
#define SIMPLER_HOST_LATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/identity.h"

struct sp_latch {
    _Atomic uint32_t identity; /* enum sp_identity */
};

/* Starts unlatched. */
void sp_latch_init(struct sp_latch *latch);

/* Latches `identity` (PROGRAM or KERNEL; INVALID_ARGUMENT otherwise), or
 * confirms it is already held (0). INVALID_STATE when the other is held. */
int sp_latch_claim(struct sp_latch *latch, enum sp_identity identity);

/* 0 when `identity` is held; INVALID_STATE otherwise (including unlatched). */
int sp_latch_require(const struct sp_latch *latch, enum sp_identity identity);

/* The identity held now (SP_IDENTITY_NONE before the first claim). */
enum sp_identity sp_latch_identity(const struct sp_latch *latch);

/* Whether `identity` is held now: the one predicate every guard asks
 * (never compare sp_latch_identity's answer by hand). */
static inline bool sp_latch_is(const struct sp_latch *latch, enum sp_identity identity)
{
    return sp_latch_identity(latch) == identity;
}

#endif /* SIMPLER_HOST_LATCH_H */
