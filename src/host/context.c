/*
 * host/context.c — what every context does, whichever its identity.
 *
 * Owns: context creation and destruction, simpler_finalize_device (both
 * dispatched through ctx->identity_ops), the config checks both inits
 * share, and the test accessors of the common part. Must not call
 * program-mode or kernel-mode code by name: those files call this one
 * (context.h says the direction). Creation fills every field's starting
 * value, the identity halves' too (the kernel phase starts NEW, run
 * handles count from 1), since no identity is known yet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "host/context.h"

int simpler_config_default(struct simpler_config *out)
{
    if (!out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    out->pipeline_depth = 4;
    out->max_callables = 64;
    out->callable_bytes = 256ull << 20;
    simpler_run_config_default(&out->run_capacity);
    out->max_captures = 4;
    return 0;
}

int simpler_create_device_context(struct simpler_context **out)
{
    if (!out)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct simpler_context *ctx = sp_host_calloc(1, sizeof *ctx);
    if (!ctx)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    sp_latch_init(&ctx->latch);
    sp_phase_setup(&ctx->kernel.phase);
    pthread_mutex_init(&ctx->lock, NULL);
    pthread_cond_init(&ctx->waiters_done, NULL);
    ctx->next_run = 1;
    sp_trace_context_init(ctx);
    *out = ctx;
    return 0;
}

int simpler_destroy_device_context(struct simpler_context *ctx)
{
    if (!ctx)
        return 0;
    pthread_mutex_lock(&ctx->lock);
    /* Unlatched: nothing was ever created. */
    int rc = ctx->identity_ops ? ctx->identity_ops->before_destroy(ctx) : 0;
    pthread_mutex_unlock(&ctx->lock);
    if (rc)
        return rc;
    pthread_cond_destroy(&ctx->waiters_done);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return 0;
}

/* ------------------------------------------------------------- lifecycle */

int sp_config_check(const struct simpler_config *c)
{
    if (c->pipeline_depth < 1 || c->pipeline_depth > SIMPLER_MAX_PIPELINE_DEPTH ||
        c->max_callables < 1 || c->max_callables > SIMPLER_MAX_CALLABLE_IDS ||
        c->callable_bytes == 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (c->runtime != SIMPLER_RUNTIME_TMR && c->runtime != SIMPLER_RUNTIME_HBG)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_config rc;
    sp_rt_config(c, &c->run_capacity, &rc);
    return rt_config_check(&rc) ? PTO_RUNTIME_ERR_INVALID_ARGUMENT
                                : sp_trace_config_check(&c->run_capacity);
}

void sp_rt_config(const struct simpler_config *context, const struct simpler_run_config *in,
                  struct rt_config *out)
{
    rt_config_from_public(in, out);
    out->runtime = context->runtime == SIMPLER_RUNTIME_HBG ? RT_RUNTIME_HBG : RT_RUNTIME_TMR;
}

/* SIMPLER_RUNTIME=tmr|hbg, when set, overrides the config's runtime (as
 * SIMPLER_TRACE sets the trace level): any program runs under either
 * runtime unchanged. Another value is ignored, with a line on stderr. */
static void runtime_from_env(struct simpler_config *cfg)
{
    const char *env = getenv("SIMPLER_RUNTIME");
    if (!env || !*env)
        return;
    if (strcmp(env, "tmr") == 0)
        cfg->runtime = SIMPLER_RUNTIME_TMR;
    else if (strcmp(env, "hbg") == 0)
        cfg->runtime = SIMPLER_RUNTIME_HBG;
    else
        fprintf(stderr, "simpler: SIMPLER_RUNTIME=\"%s\" ignored: want tmr or hbg\n", env);
}

int sp_init_arguments(const struct simpler_context *ctx, int device_id,
                      const struct simpler_config *config, struct simpler_config *cfg)
{
    int count;
    if (!ctx || simdev_device_count(&count) || device_id < 0 || device_id >= count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (config)
        *cfg = *config;
    else
        simpler_config_default(cfg);
    /* A config out of range is refused before the environment is read. */
    if (cfg->runtime != SIMPLER_RUNTIME_TMR && cfg->runtime != SIMPLER_RUNTIME_HBG)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    runtime_from_env(cfg);
    return sp_config_check(cfg);
}

int simpler_finalize_device(struct simpler_context *ctx)
{
    if (!ctx)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    /* Unlatched: never initialised. */
    int rc = ctx->identity_ops ? ctx->identity_ops->finalize(ctx) : PTO_RUNTIME_ERR_INVALID_STATE;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* -------------------------------------------------------------- for tests */

void sp_test_counters(struct simpler_context *ctx, struct sp_counters *out)
{
    pthread_mutex_lock(&ctx->lock);
    *out = ctx->counters;
    pthread_mutex_unlock(&ctx->lock);
}

struct sp_latch *sp_test_latch(struct simpler_context *ctx)
{
    return &ctx->latch;
}
