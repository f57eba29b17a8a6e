/*
 * host/submission.h — one execution of a prepared call in program mode:
 * its handle, its place in the launch order, its status and its
 * retirement.
 *
 * Owns: struct sp_submission (held by a pipeline slot, run_slot.h, beside
 * the working set it runs in) and its begin and end: the references a
 * submission holds on its prepared call and the call's callable. Must not
 * stage, launch or wait (pipeline.c, working_set.c do). Caller holds
 * ctx->lock throughout.
 */
#ifndef SIMPLER_HOST_SUBMISSION_H
#define SIMPLER_HOST_SUBMISSION_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/runtime.h"
#include "simpler/simpler.h"

struct simpler_prepared_call;
struct sp_trace_run;

enum sp_submission_state {
    SP_SUBMISSION_NONE = 0, /* the slot holds none */
    SP_SUBMISSION_STAGED,   /* inputs staged, not launched */
    SP_SUBMISSION_LAUNCHED, /* on the device; `completed` once its status is known */
};

struct sp_submission {
    enum sp_submission_state state;
    simpler_run_t run;                  /* its handle: nonzero, never reused */
    struct simpler_prepared_call *call; /* what it executes (counted: call->submissions) */
    struct rt_config config;            /* the call's, with this execution's trace attached */
    uint64_t generation;                /* the launch's, as its result block must say */
    bool waiting;     /* a thread waits for it outside the lock */
    bool copied_back; /* finalize delivered the outputs (a retry skips it) */
    bool restage;     /* a launch failed: inputs are copied in again before the next */
    bool completed;   /* status below is final */
    bool stranded;    /* a finalize of it failed on a device operation:
                         finalize_device or unregistering its callable may
                         release it (sp_release_stranded) */
    int status;
    struct rt_run_result result; /* read back when it completed */
    struct sp_trace_run *trace;  /* its trace (trace_host.c); NULL: not traced */
};

/* Begins submission `run` of `call` in `sub` (which holds none), with
 * `config` (the call's, its trace attached): STAGED, a clean status, and a
 * reference on the call and on its callable. */
void sp_submission_begin(struct sp_submission *sub, simpler_run_t run,
                         struct simpler_prepared_call *call, const struct rt_config *config);

/* Ends it once nothing of it is held on the device any more: the
 * references go and `sub` holds none. A temporary call (simpler_prepare_run's,
 * held in the slot) dies with it. */
void sp_submission_end(struct sp_submission *sub);

#endif /* SIMPLER_HOST_SUBMISSION_H */
