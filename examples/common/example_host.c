/*
 * example_host.c — packs, runs and reports a program-mode example
 * (see example_host.h). Uses only the public host API (simpler.h).
 */
#include "example_host.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Prints which call failed and passes its code through. */
static int failed(const struct example_program *program, const char *call, int rc)
{
    fprintf(stderr, "%s: %s failed: %d (%s)\n", program->name, call, rc, simpler_strerror(rc));
    return rc;
}

/* The callable image of `program`; the caller frees it with simpler_callable_free. */
static int build_image(const struct example_program *program, void **image, size_t *bytes)
{
    struct simpler_callable_builder *builder;
    int rc = simpler_callable_builder_create(&builder);
    if (rc)
        return failed(program, "simpler_callable_builder_create", rc);
    rc = simpler_callable_builder_set_orchestration_file(builder, program->orch_path,
                                                         program->entry, NULL,
                                                         program->signature, program->sig_count);
    if (rc)
        failed(program, "simpler_callable_builder_set_orchestration_file", rc);
    for (uint32_t i = 0; rc == 0 && i < program->kernel_count; i++) {
        const struct example_kernel *k = &program->kernels[i];
        rc = simpler_callable_builder_add_kernel_file(builder, k->func_id, k->core,
                                                      program->kernel_path, k->symbol,
                                                      k->signature, k->sig_count);
        if (rc)
            failed(program, "simpler_callable_builder_add_kernel_file", rc);
    }
    if (rc == 0) {
        rc = simpler_callable_builder_finish(builder, image, bytes);
        if (rc)
            failed(program, "simpler_callable_builder_finish", rc);
    }
    simpler_callable_builder_destroy(builder);
    return rc;
}

/* prepare, launch, wait, read the counters, finalize: the timed part. */
static int run_once(const struct example_program *program, struct simpler_context *ctx,
                    int32_t callable_id, const struct simpler_args *args,
                    struct example_outcome *out)
{
    simpler_run_t run;
    double start = now_ms();
    int rc = simpler_prepare_run(ctx, &run, callable_id, args, NULL);
    if (rc)
        return failed(program, "simpler_prepare_run", rc);
    rc = simpler_launch_run(ctx, run);
    if (rc) {
        failed(program, "simpler_launch_run", rc);
        simpler_finalize_run(ctx, run);
        return rc;
    }
    rc = simpler_wait_run(ctx, run);
    if (rc) {
        failed(program, "the run", rc);
        simpler_finalize_run(ctx, run);
        return rc;
    }
    struct simpler_run_info info;
    rc = simpler_get_run_info(ctx, run, &info);
    if (rc) {
        failed(program, "simpler_get_run_info", rc);
        simpler_finalize_run(ctx, run);
        return rc;
    }
    rc = simpler_finalize_run(ctx, run);
    if (rc)
        return failed(program, "simpler_finalize_run", rc);
    out->wall_ms = now_ms() - start;
    out->info = info;
    return 0;
}

int example_run(const struct example_program *program, const struct simpler_args *args,
                struct example_outcome *out)
{
    enum { CALLABLE_ID = 0 };
    struct example_outcome outcome;
    struct simpler_context *ctx;
    int rc = simpler_create_device_context(&ctx);
    if (rc)
        return failed(program, "simpler_create_device_context", rc);
    rc = simpler_init(ctx, 0, NULL);
    if (rc) {
        failed(program, "simpler_init", rc);
        goto destroy;
    }

    void *image = NULL;
    size_t image_bytes = 0;
    rc = build_image(program, &image, &image_bytes);
    if (rc)
        goto finalize;
    rc = simpler_register_callable(ctx, CALLABLE_ID, image, image_bytes);
    simpler_callable_free(image); /* borrowed for the call only: the context has its copy */
    if (rc) {
        failed(program, "simpler_register_callable", rc);
        goto finalize;
    }

    rc = run_once(program, ctx, CALLABLE_ID, args, &outcome);

    int unregister_rc = simpler_unregister_callable(ctx, CALLABLE_ID);
    if (unregister_rc && !rc)
        rc = failed(program, "simpler_unregister_callable", unregister_rc);
finalize:;
    int finalize_rc = simpler_finalize_device(ctx);
    if (finalize_rc && !rc)
        rc = failed(program, "simpler_finalize_device", finalize_rc);
destroy:;
    int destroy_rc = simpler_destroy_device_context(ctx);
    if (destroy_rc && !rc)
        rc = failed(program, "simpler_destroy_device_context", destroy_rc);
    if (rc == 0)
        *out = outcome;
    return rc;
}

int example_report(const struct example_program *program, const struct example_outcome *outcome,
                   bool passed, const char *detail)
{
    printf("%-10s %6" PRIu64 " tasks  check %-4s (%s)  %9.2f ms\n", program->name,
           outcome->info.tasks_submitted, passed ? "OK" : "FAIL", detail, outcome->wall_ms);
    return passed ? 0 : 1;
}

int example_report_failure(const struct example_program *program, int status)
{
    printf("%-10s run failed: %d (%s)\n", program->name, status, simpler_strerror(status));
    return 1;
}

uint32_t example_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 33);
}
