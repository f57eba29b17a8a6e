/*
 * example_host.c — packs, runs and reports an example in program mode and
 * in kernel mode (see example_host.h). Uses only the public API (simpler.h
 * and, for the framework side of kernel mode, device.h).
 */
#include "example_host.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Finalizes `ctx` when `initialised`, then destroys it. Returns `rc`, or
 * when that is 0 the first teardown failure (printed). */
static int context_close(const struct example_program *program, struct simpler_context *ctx,
                         bool initialised, int rc)
{
    int finalize_rc = initialised ? simpler_finalize_device(ctx) : 0;
    if (finalize_rc && !rc)
        rc = failed(program, "simpler_finalize_device", finalize_rc);
    int destroy_rc = simpler_destroy_device_context(ctx);
    if (destroy_rc && !rc)
        rc = failed(program, "simpler_destroy_device_context", destroy_rc);
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
    if ((rc = simpler_init(ctx, 0, NULL))) {
        failed(program, "simpler_init", rc);
        return context_close(program, ctx, false, rc);
    }

    void *image = NULL;
    size_t image_bytes = 0;
    if ((rc = build_image(program, &image, &image_bytes)))
        return context_close(program, ctx, true, rc);
    rc = simpler_register_callable(ctx, CALLABLE_ID, image, image_bytes);
    simpler_callable_free(image); /* borrowed for the call only: the context has its copy */
    if (rc) {
        failed(program, "simpler_register_callable", rc);
        return context_close(program, ctx, true, rc);
    }

    rc = run_once(program, ctx, CALLABLE_ID, args, &outcome);

    int unregister_rc = simpler_unregister_callable(ctx, CALLABLE_ID);
    if (unregister_rc && !rc)
        rc = failed(program, "simpler_unregister_callable", unregister_rc);
    if ((rc = context_close(program, ctx, true, rc)) == 0)
        *out = outcome;
    return rc;
}

/* ------------------------------------------------------------ kernel mode
 *
 * The framework's side: simpler never stages in kernel mode, so the device
 * buffers, the copies around the launch and the stream are ours.
 */

/* The device copy of a run's host tensors: one device buffer per distinct
 * host buffer, and device descriptors of the same views. */
struct device_args {
    uint32_t buffer_count;
    uint64_t host_addr[SIMPLER_ORCH_MAX_TENSORS]; /* per buffer */
    uint64_t bytes[SIMPLER_ORCH_MAX_TENSORS];
    void *device[SIMPLER_ORCH_MAX_TENSORS];
    enum simpler_direction direction[SIMPLER_ORCH_MAX_TENSORS]; /* per tensor */
    struct simpler_tensor tensors[SIMPLER_ORCH_MAX_TENSORS];    /* per tensor: device views */
    struct simpler_args args;                                   /* what the launch takes */
};

/* The byte range of a contiguous view inside its buffer. */
static void view_bytes(const struct simpler_tensor *t, uint64_t *offset, uint64_t *bytes)
{
    size_t es = simpler_dtype_size(t->dtype);
    *offset = t->start_offset * es;
    *bytes = simpler_tensor_numel(t) * es;
}

/* Reads each tensor's direction from the signature (its non-scalar entries,
 * in order) and checks what this framework can copy: contiguous host views
 * inside their buffers, and host buffers that are the same or disjoint
 * (distinct device buffers could not alias the way overlapping host bytes
 * do). INVALID_ARGUMENT otherwise. */
static int device_args_check(const struct example_program *program,
                             const struct simpler_args *args, struct device_args *d)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < program->sig_count; i++) {
        if (program->signature[i] == SIMPLER_DIR_SCALAR)
            continue;
        if (n == SIMPLER_ORCH_MAX_TENSORS)
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        d->direction[n++] = program->signature[i];
    }
    if (n != args->tensor_count || (n && !args->tensors))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < n; i++) {
        const struct simpler_tensor *t = &args->tensors[i];
        uint64_t offset, bytes;
        view_bytes(t, &offset, &bytes);
        if (t->address_space != SIMPLER_MEM_HOST || !t->addr || !simpler_tensor_is_contiguous(t) ||
            bytes == 0 || offset > t->buffer_bytes || bytes > t->buffer_bytes - offset)
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        for (uint32_t j = 0; j < i; j++) {
            const struct simpler_tensor *u = &args->tensors[j];
            if (u->addr == t->addr ? u->buffer_bytes != t->buffer_bytes
                                   : t->addr < u->addr + u->buffer_bytes &&
                                         u->addr < t->addr + t->buffer_bytes)
                return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        }
    }
    return 0;
}

/* Frees every device buffer of `d`; returns the first failure (the rest
 * are still freed). */
static int device_args_free(struct device_args *d)
{
    int first = 0;
    for (uint32_t j = 0; j < d->buffer_count; j++) {
        int rc = simdev_free(d->device[j]);
        first = first ? first : rc;
    }
    d->buffer_count = 0;
    return first;
}

/* Allocates a device buffer per distinct host buffer of `args` (checked by
 * device_args_check) on the current device and builds the device
 * descriptors: the same views, over the device buffers. On failure nothing
 * stays allocated. */
static int device_args_alloc(const struct simpler_args *args, struct device_args *d)
{
    d->buffer_count = 0;
    for (uint32_t i = 0; i < args->tensor_count; i++) {
        const struct simpler_tensor *t = &args->tensors[i];
        uint32_t j = 0;
        while (j < d->buffer_count && d->host_addr[j] != t->addr)
            j++;
        if (j == d->buffer_count) {
            int rc = simdev_malloc(&d->device[j], t->buffer_bytes);
            if (rc) {
                device_args_free(d);
                return rc;
            }
            d->host_addr[j] = t->addr;
            d->bytes[j] = t->buffer_bytes;
            d->buffer_count++;
        }
        d->tensors[i] = *t;
        d->tensors[i].addr = (uint64_t)(uintptr_t)d->device[j];
        d->tensors[i].address_space = SIMPLER_MEM_DEVICE;
    }
    d->args = (struct simpler_args){args->tensor_count, args->scalar_count, d->tensors,
                                    args->scalars};
    return 0;
}

/* Copies the views of direction IN/INOUT host to device (`to_device`), or
 * OUT/INOUT device to host; the bytes between views are not touched. */
static int device_args_copy(const struct simpler_args *args, const struct device_args *d,
                            bool to_device)
{
    for (uint32_t i = 0; i < args->tensor_count; i++) {
        enum simpler_direction dir = d->direction[i];
        if (dir != SIMPLER_DIR_INOUT && dir != (to_device ? SIMPLER_DIR_IN : SIMPLER_DIR_OUT))
            continue;
        uint64_t offset, bytes;
        view_bytes(&args->tensors[i], &offset, &bytes);
        uint8_t *host = (uint8_t *)(uintptr_t)args->tensors[i].addr + offset;
        uint8_t *device = (uint8_t *)(uintptr_t)d->tensors[i].addr + offset;
        int rc = to_device ? simdev_memcpy(device, host, bytes, SIMDEV_COPY_HOST_TO_DEVICE)
                           : simdev_memcpy(host, device, bytes, SIMDEV_COPY_DEVICE_TO_HOST);
        if (rc)
            return rc;
    }
    return 0;
}

/* One round, the timed part: device buffers, copies in, launch on `stream`,
 * its sync (the round's status), copies back, buffers freed. */
static int kernel_round(const struct example_program *program, struct simpler_context *ctx,
                        int32_t callable_id, const struct simpler_args *args,
                        simdev_stream_t stream, struct example_kernel_outcome *out)
{
    struct device_args *d = malloc(sizeof *d);
    if (!d)
        return failed(program, "malloc", PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
    int rc = device_args_check(program, args, d);
    if (rc) {
        free(d);
        return failed(program, "example_run_kernel's argument check", rc);
    }
    double start = now_ms();
    if ((rc = device_args_alloc(args, d))) {
        free(d);
        return failed(program, "simdev_malloc", rc);
    }
    if ((rc = device_args_copy(args, d, true))) {
        failed(program, "simdev_memcpy (in)", rc);
        goto free_buffers;
    }
    rc = simpler_kernel_mode_launch(ctx, callable_id, &d->args, stream);
    if (rc)
        failed(program, "simpler_kernel_mode_launch", rc);
    /* Even after a failed launch: nothing of it may still use the buffers
     * when they are freed. After a launch, the sync is the round's status. */
    int sync_rc = simdev_stream_sync(stream);
    if (!rc && sync_rc)
        rc = failed(program, "the round (simdev_stream_sync)", sync_rc);
    if (!rc && (rc = device_args_copy(args, d, false)))
        failed(program, "simdev_memcpy (back)", rc);
free_buffers:;
    int free_rc = device_args_free(d);
    if (free_rc && !rc)
        rc = failed(program, "simdev_free", free_rc);
    if (rc == 0)
        out->wall_ms = now_ms() - start;
    free(d);
    return rc;
}

/* The kernel-mode context's part of example_run_kernel: on the current
 * device, with the framework's `stream`. */
static int kernel_context_run(const struct example_program *program, int device,
                              const struct simpler_args *args, simdev_stream_t stream,
                              struct example_kernel_outcome *out)
{
    struct simpler_context *ctx;
    int rc = simpler_create_device_context(&ctx);
    if (rc)
        return failed(program, "simpler_create_device_context", rc);
    if (!simpler_kernel_mode_supported(ctx)) {
        rc = failed(program, "simpler_kernel_mode_supported", PTO_RUNTIME_ERR_UNSUPPORTED);
        return context_close(program, ctx, false, rc);
    }
    /* A failed init undoes itself: nothing to finalize. */
    if ((rc = simpler_kernel_mode_init(ctx, device, NULL, 0))) {
        failed(program, "simpler_kernel_mode_init", rc);
        return context_close(program, ctx, false, rc);
    }

    void *image = NULL;
    size_t image_bytes = 0;
    int32_t callable_id;
    if ((rc = build_image(program, &image, &image_bytes)))
        return context_close(program, ctx, true, rc);
    rc = simpler_kernel_mode_prepare_callable(ctx, image, image_bytes, &callable_id);
    simpler_callable_free(image); /* borrowed for the call only */
    if (rc) {
        failed(program, "simpler_kernel_mode_prepare_callable", rc);
        return context_close(program, ctx, true, rc);
    }

    rc = kernel_round(program, ctx, callable_id, args, stream, out);
    return context_close(program, ctx, true, rc);
}

int example_run_kernel(const struct example_program *program, const struct simpler_args *args,
                       struct example_kernel_outcome *out)
{
    enum { DEVICE = 0 };
    struct example_kernel_outcome outcome = {0};
    /* The framework's device and stream: simpler borrows both. */
    int rc = simdev_set_device(DEVICE);
    if (rc)
        return failed(program, "simdev_set_device", rc);
    simdev_stream_t stream;
    if ((rc = simdev_stream_create(&stream)))
        return failed(program, "simdev_stream_create", rc);
    rc = kernel_context_run(program, DEVICE, args, stream, &outcome);
    int stream_rc = simdev_stream_destroy(stream);
    if (stream_rc && !rc)
        rc = failed(program, "simdev_stream_destroy", stream_rc);
    if (rc == 0)
        *out = outcome;
    return rc;
}

int example_run_both(const struct example_program *program, const struct simpler_args *args,
                     const struct example_checks *checks)
{
    checks->poison_outputs();
    struct example_outcome outcome;
    int rc = example_run(program, args, &outcome);
    int status = rc ? example_report_failure(program, "program", rc)
                    : checks->report_program(&outcome);

    checks->poison_outputs();
    struct example_kernel_outcome kernel_outcome;
    rc = example_run_kernel(program, args, &kernel_outcome);
    status |= rc ? example_report_failure(program, "kernel", rc)
                 : checks->report_kernel(&kernel_outcome);
    return status;
}

int example_report(const struct example_program *program, const struct example_outcome *outcome,
                   bool passed, const char *detail)
{
    printf("%-10s program %6" PRIu64 " tasks  check %-4s (%s)  %9.2f ms\n", program->name,
           outcome->info.tasks_submitted, passed ? "OK" : "FAIL", detail, outcome->wall_ms);
    return passed ? 0 : 1;
}

int example_report_kernel(const struct example_program *program,
                          const struct example_kernel_outcome *outcome, bool passed,
                          const char *detail)
{
    printf("%-10s kernel  %12s  check %-4s (%s)  %9.2f ms\n", program->name, "",
           passed ? "OK" : "FAIL", detail, outcome->wall_ms);
    return passed ? 0 : 1;
}

int example_report_failure(const struct example_program *program, const char *mode, int status)
{
    printf("%-10s %-7s run failed: %d (%s)\n", program->name, mode, status,
           simpler_strerror(status));
    return 1;
}

uint32_t example_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 33);
}
