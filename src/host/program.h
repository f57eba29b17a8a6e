/*
 * host/program.h — the program-mode context: what the run pipeline asks
 * of it.
 *
 * Owns: the check that a program context accepts work. The program-mode
 * entry points themselves are public (simpler.h); the context's program
 * half is laid out in context.h. Must not be included for kernel-mode
 * work.
 */
#ifndef SIMPLER_HOST_PROGRAM_H
#define SIMPLER_HOST_PROGRAM_H

struct simpler_context;
struct simpler_prepared_call;

/* 0, INVALID_STATE (not a program context or not initialised) or
 * DEVICE_LOST; makes the context's device current. Caller holds ctx->lock. */
int sp_program_ready(struct simpler_context *ctx);

/* Releases the submissions of `call` still unfinalized, when every one is
 * stranded and waited for by nobody (as unregister does for a callable's):
 * 0 once none is left, else INVALID_STATE or a device code, releasing
 * nothing more. Caller holds ctx->lock. */
int sp_program_release_submissions(struct simpler_context *ctx,
                                   const struct simpler_prepared_call *call);

#endif /* SIMPLER_HOST_PROGRAM_H */
