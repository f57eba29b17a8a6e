/*
 * host/latch.c — the write-once identity latch (see latch.h).
 *
 * Owns: nothing but the identity word. Must not know what the identities
 * mean: callers decide which entries need which identity.
 */
#include "host/latch.h"

#include "simpler/status.h"

void sp_latch_init(struct sp_latch *latch)
{
    atomic_init(&latch->identity, SP_IDENTITY_NONE);
}

int sp_latch_claim(struct sp_latch *latch, enum sp_identity identity)
{
    if (identity != SP_IDENTITY_PROGRAM && identity != SP_IDENTITY_KERNEL)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    uint32_t expected = SP_IDENTITY_NONE;
    /* acq_rel: a winner's later context writes are ordered after the latch,
     * and a loser (acquire on failure) sees the identity that won. */
    if (atomic_compare_exchange_strong_explicit(&latch->identity, &expected, identity,
                                                memory_order_acq_rel, memory_order_acquire))
        return 0;
    return expected == (uint32_t)identity ? 0 : PTO_RUNTIME_ERR_INVALID_STATE;
}

int sp_latch_require(const struct sp_latch *latch, enum sp_identity identity)
{
    return sp_latch_identity(latch) == identity ? 0 : PTO_RUNTIME_ERR_INVALID_STATE;
}

enum sp_identity sp_latch_identity(const struct sp_latch *latch)
{
    /* Pairs with the acq_rel compare-and-swap in sp_latch_claim. */
    return (enum sp_identity)atomic_load_explicit(&latch->identity, memory_order_acquire);
}
