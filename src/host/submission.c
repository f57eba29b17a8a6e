/*
 * host/submission.c — a submission's begin and end (see submission.h).
 *
 * Must not stage, launch, wait or free device memory.
 */
#include "host/submission.h"

#include <string.h>

#include "host/prepared_call.h"
#include "host/residency.h"

void sp_submission_begin(struct sp_submission *sub, simpler_run_t run,
                         struct simpler_prepared_call *call, const struct rt_config *config)
{
    struct sp_trace_run *trace = sub->trace; /* opened for it by the stage */
    memset(sub, 0, sizeof *sub);
    sub->trace = trace;
    sub->state = SP_SUBMISSION_STAGED;
    sub->run = run;
    sub->call = call;
    sub->config = *config;
    call->submissions++;
    call->callable->runs++;
}

void sp_submission_end(struct sp_submission *sub)
{
    struct simpler_prepared_call *call = sub->call;
    call->submissions--;
    call->callable->runs--;
    sub->call = NULL;
    sub->state = SP_SUBMISSION_NONE;
    sub->run = 0;
    sub->stranded = false;
}
