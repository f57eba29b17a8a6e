/*
 * common/identity.h — the two execution identities, in one encoding for
 * every layer.
 *
 * Owns: the values of a context's identity. The host latches one per
 * context (host/latch.h), and a kernel-mode invocation packet carries the
 * identity it was encoded for in its mode word (common/packet.h), so the
 * device and the host never translate between two numberings. No state.
 */
#ifndef SIMPLER_COMMON_IDENTITY_H
#define SIMPLER_COMMON_IDENTITY_H

enum sp_identity {
    SP_IDENTITY_NONE = 0,    /* a context before its first init; never in a packet */
    SP_IDENTITY_PROGRAM = 1, /* program mode: owns its device; has no packets */
    SP_IDENTITY_KERNEL = 2,  /* kernel mode: the one identity a packet may carry */
};

#endif /* SIMPLER_COMMON_IDENTITY_H */
