/*
 * host/trace_host.c — the host side of tracing (trace_host.h): the
 * SIMPLER_TRACE setting, a traced run's device region and host spans, a
 * kernel context's region, and collecting a region into files.
 *
 * Must not change what a run does or returns: every allocation here
 * happens only for a run that traces, before it is launched (prepare) or
 * at kernel init, and a trace that cannot be collected or written is
 * reported on stderr and dropped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "host/context.h"
#include "host/device_binding.h"
#include "host/residency.h"
#include "host/prepared_call.h"
#include "host/submission.h"
#include "host/trace_host.h"

/* ------------------------------------------------------------- settings */

int sp_trace_parse_env(const char *value, uint32_t *level, char path[SP_TRACE_PATH_MAX])
{
    if (!value || !level || value[0] < '0' || value[0] > '0' + (int)RT_TRACE_MAX_LEVEL)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (value[1] != '\0' && value[1] != ',')
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    const char *p = value[1] == ',' ? value + 2 : NULL;
    if (p && (p[0] == '\0' || strlen(p) >= SP_TRACE_PATH_MAX))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *level = (uint32_t)(value[0] - '0');
    if (p && path)
        strcpy(path, p);
    return 0;
}

void sp_trace_context_init(struct simpler_context *ctx)
{
    struct sp_trace_ctx *t = &ctx->trace;
    strcpy(t->path, SP_TRACE_DEFAULT_PATH);
    const char *env = getenv("SIMPLER_TRACE");
    if (!env || !env[0])
        return;
    if (sp_trace_parse_env(env, &t->env_level, t->path) != 0) {
        fprintf(stderr, "simpler: SIMPLER_TRACE=\"%s\" ignored: want <0-4>[,<path>]\n", env);
        strcpy(t->path, SP_TRACE_DEFAULT_PATH);
        return;
    }
    t->env_set = true;
}

int simpler_set_trace_path(struct simpler_context *ctx, const char *path)
{
    if (!ctx || !path || !path[0] || strlen(path) >= SP_TRACE_PATH_MAX)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    strcpy(ctx->trace.path, path);
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

int sp_trace_config_check(const struct simpler_run_config *c)
{
    return c->trace_level > RT_TRACE_MAX_LEVEL || c->trace_records > SP_TRACE_MAX_RECORDS
               ? PTO_RUNTIME_ERR_INVALID_ARGUMENT
               : 0;
}

uint32_t sp_trace_level(const struct simpler_context *ctx, const struct simpler_run_config *c)
{
    uint32_t level = ctx->trace.env_set ? ctx->trace.env_level : c->trace_level;
    /* A callable's config function may leave anything here. */
    return level > RT_TRACE_MAX_LEVEL ? RT_TRACE_MAX_LEVEL : level;
}

static uint64_t records_of(uint32_t records)
{
    return records && records <= SP_TRACE_MAX_RECORDS ? records : SP_TRACE_DEFAULT_RECORDS;
}

/* Lays out a region for ctx's device and allocates it, zeroing the header
 * and every buffer's state. 0 or the failing call's code (nothing held). */
static int region_create(struct simpler_context *ctx, uint32_t level, uint32_t schedulers,
                         uint32_t records, void **region, struct rt_trace_header *layout)
{
    uint64_t capacity = records_of(records);
    /* A buffer for every scheduler the launch runs; under host_build_graph
     * the one after theirs takes the lay's record of each task's arrival
     * (rt_hbg_lay). simpler.h's SIMPLER_RUNTIME_* are rt_config's values. */
    schedulers = rt_run_schedulers(ctx->config.runtime, schedulers);
    int rc = rt_trace_layout(level, ctx->topo.aic_cores + ctx->topo.aiv_cores, schedulers,
                             capacity, 2 * capacity, layout);
    if (rc)
        return rc;
    /* The header and the buffer states: what the host must not read stale. */
    size_t head = layout->records_offset;
    uint8_t *image = sp_host_calloc(1, head);
    if (!image)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    memcpy(image, layout, sizeof *layout);
    if (!(rc = sp_dev_alloc(ctx, region, (size_t)layout->total_bytes)) &&
        (rc = simdev_memcpy(*region, image, head, SIMDEV_COPY_HOST_TO_DEVICE))) {
        sp_dev_free(ctx, *region, (size_t)layout->total_bytes);
        *region = NULL;
    }
    free(image);
    if (!rc)
        ctx->trace.allocations++;
    return rc;
}

static void attach(struct rt_config *rtc, uint32_t level, void *region,
                   const struct rt_trace_header *layout, uint32_t tag)
{
    rtc->trace_level = level;
    rtc->trace = region;
    rtc->trace_tag = tag;
    rtc->edge_log = (struct rt_edge *)((uint8_t *)region + layout->edges_offset);
    rtc->edge_log_capacity = (uint32_t)layout->edge_capacity;
}

/* ----------------------------------------------------------- program mode */

int sp_trace_run_open(struct simpler_context *ctx, struct sp_submission *sub, uint32_t level,
                      uint32_t schedulers, uint32_t records, struct rt_config *rtc)
{
    sub->trace = NULL;
    if (level == 0)
        return 0;
    struct sp_trace_run *t = sp_host_calloc(1, sizeof *t);
    if (!t)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    int rc = region_create(ctx, level, schedulers, records, &t->region, &t->layout);
    if (rc) {
        free(t);
        return rc;
    }
    ctx->trace.allocations++;
    t->level = level;
    attach(rtc, level, t->region, &t->layout, 0);
    sub->trace = t;
    return 0;
}

uint64_t sp_trace_now(const struct sp_submission *sub)
{
    return sub->trace ? simdev_clock_ns() : 0;
}

void sp_trace_span(struct sp_submission *sub, enum sp_span span, uint64_t begin)
{
    if (!sub->trace || (unsigned)span >= SP_SPAN_COUNT)
        return;
    sub->trace->spans[span][0] = begin;
    sub->trace->spans[span][1] = simdev_clock_ns();
}

void sp_trace_build_span(struct sp_submission *sub, uint64_t begin, uint64_t end,
                         uint32_t tasks)
{
    if (!sub->trace)
        return;
    sub->trace->spans[SP_SPAN_HOST_BUILD][0] = begin;
    sub->trace->spans[SP_SPAN_HOST_BUILD][1] = end;
    sub->trace->host_build_tasks = tasks;
}

int sp_trace_run_release(struct simpler_context *ctx, struct sp_submission *sub)
{
    struct sp_trace_run *t = sub->trace;
    if (!t)
        return 0;
    if (t->region) {
        int rc = sp_dev_free(ctx, t->region, (size_t)t->layout.total_bytes);
        if (rc)
            return rc;
        t->region = NULL;
    }
    free(t);
    sub->trace = NULL;
    return 0;
}

/* ------------------------------------------------------------- collecting */

/* Names and core types of `c`'s kernels, from a host copy of its image
 * (kept in *image_copy: the names point into it). */
static void read_kernel_names(const struct sp_callable *c, struct sp_trace_input *in,
                              void **image_copy)
{
    *image_copy = NULL;
    if (!c || !c->image || !c->image_bytes)
        return;
    void *img = sp_host_aligned_alloc(SIMPLER_CALLABLE_IMAGE_ALIGN, c->image_bytes);
    if (!img)
        return;
    if (simdev_memcpy(img, c->image, c->image_bytes, SIMDEV_COPY_DEVICE_TO_HOST) != 0 ||
        simpler_callable_validate(img, c->image_bytes) != 0) {
        free(img);
        return;
    }
    const struct simpler_callable_header *h = img;
    const struct simpler_callable_child *kids =
        (const struct simpler_callable_child *)((const uint8_t *)img + h->children_offset);
    for (uint32_t i = 0; i < h->child_count; i++) {
        /* Validated: func ids in range, names NUL-terminated. */
        in->kernel_names[kids[i].func_id] = kids[i].symbol;
        in->kernel_core[kids[i].func_id] = (uint8_t)kids[i].core_type;
    }
    *image_copy = img;
}

struct collect_request {
    const void *region; /* device */
    const struct rt_trace_header *layout;
    const struct sp_callable *callable;
    uint64_t edges_total;
    uint64_t run;
    int32_t status;
    const uint64_t (*spans)[2]; /* SP_SPAN_COUNT, or NULL */
    uint64_t host_build_tasks;
    const char *path;
};

/* Copies the region back and writes the files. 0 or a code. */
static int collect(struct simpler_context *ctx, const struct collect_request *rq)
{
    size_t bytes = (size_t)rq->layout->total_bytes;
    struct sp_trace_input *in = calloc(1, sizeof *in);
    void *host = sp_host_aligned_alloc(64, bytes), *image = NULL;
    struct sp_trace_model *m = NULL;
    int rc = in && host ? 0 : PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    if (!rc)
        rc = simdev_memcpy(host, rq->region, bytes, SIMDEV_COPY_DEVICE_TO_HOST);
    if (!rc) {
        in->region = host;
        in->region_bytes = bytes;
        in->edges_total = rq->edges_total;
        in->aic_cores = ctx->topo.aic_cores;
        in->run = rq->run;
        in->status = rq->status;
        if (rq->spans)
            memcpy(in->spans, rq->spans, sizeof in->spans);
        in->host_build_tasks = rq->host_build_tasks;
        read_kernel_names(rq->callable, in, &image);
        rc = sp_trace_model_build(in, &m);
    }
    if (!rc)
        rc = sp_trace_write_files(m, rq->path);
    sp_trace_model_free(m);
    free(image);
    free(host);
    free(in);
    return rc;
}

void sp_trace_run_write(struct simpler_context *ctx, struct sp_submission *sub)
{
    struct sp_trace_run *t = sub->trace;
    if (!t || !t->region)
        return;
    struct collect_request rq = {
        .region = t->region,
        .layout = &t->layout,
        .callable = sub->call->callable,
        .edges_total = sub->result.edges,
        .run = sub->run,
        .status = sub->status,
        .spans = (const uint64_t(*)[2])t->spans,
        .host_build_tasks = t->host_build_tasks,
        .path = ctx->trace.path,
    };
    int rc = collect(ctx, &rq);
    if (rc)
        fprintf(stderr, "simpler: the trace of run %llu was not written to %s: %s\n",
                (unsigned long long)sub->run, ctx->trace.path, simpler_strerror(rc));
}

/* ------------------------------------------------------------ kernel mode */

int sp_trace_kernel_create(struct simpler_context *ctx)
{
    struct sp_trace_ctx *t = &ctx->trace;
    uint32_t level = sp_trace_level(ctx, &ctx->config.run_capacity);
    if (level == 0 || t->kernel_region)
        return 0;
    int rc = region_create(ctx, level, ctx->kernel.schedulers,
                           ctx->config.run_capacity.trace_records, &t->kernel_region,
                           &t->kernel_layout);
    if (!rc)
        t->kernel_level = level;
    return rc;
}

int sp_trace_kernel_release(struct simpler_context *ctx)
{
    struct sp_trace_ctx *t = &ctx->trace;
    if (!t->kernel_region)
        return 0;
    int rc = sp_dev_free(ctx, t->kernel_region, (size_t)t->kernel_layout.total_bytes);
    if (!rc) {
        t->kernel_region = NULL;
        t->kernel_level = 0;
    }
    return rc;
}

void sp_trace_kernel_attach(const struct simpler_context *ctx, int32_t callable_id,
                            struct rt_config *config)
{
    const struct sp_trace_ctx *t = &ctx->trace;
    if (t->kernel_region)
        attach(config, t->kernel_level, t->kernel_region, &t->kernel_layout,
               (uint32_t)callable_id);
}

void sp_trace_kernel_build(struct simpler_context *ctx, uint64_t generation, uint64_t begin,
                           uint64_t end, uint32_t tasks)
{
    struct sp_trace_ctx *t = &ctx->trace;
    if (!t->kernel_region)
        return;
    t->kernel_build[0] = begin;
    t->kernel_build[1] = end;
    t->kernel_build_generation = generation;
    t->kernel_build_tasks = tasks;
}

int simpler_kernel_mode_write_trace(struct simpler_context *ctx, const char *path)
{
    if (!ctx || (path && (!path[0] || strlen(path) >= SP_TRACE_PATH_MAX)))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    struct sp_trace_ctx *t = &ctx->trace;
    int previous = -1, rc = sp_latch_require(&ctx->latch, SP_IDENTITY_KERNEL);
    if (!rc && (!ctx->initialized || !t->kernel_region || !ctx->kernel.next_round))
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    if (!rc && !(rc = simdev_get_device(&previous)))
        rc = simdev_set_device(ctx->device);
    struct rt_trace_header head;
    struct rt_run_result result;
    if (!rc && !(rc = simdev_memcpy(&head, t->kernel_region, sizeof head,
                                    SIMDEV_COPY_DEVICE_TO_HOST)) &&
        !(rc = simdev_memcpy(&result, ctx->kernel.result, sizeof result,
                             SIMDEV_COPY_DEVICE_TO_HOST))) {
        if (!head.generation) {
            rc = PTO_RUNTIME_ERR_INVALID_STATE; /* no round has reached the device */
        } else {
            /* The result block is the last round's when its generation is. */
            bool same = result.generation == head.generation;
            const struct sp_callable *c =
                head.tag < SIMPLER_MAX_CALLABLE_IDS ? ctx->callables[head.tag] : NULL;
            /* host_build_graph: the host build of the round the region
             * holds (a replay's is its captured round's, or its update's) */
            uint64_t spans[SP_SPAN_COUNT][2] = {{0}};
            bool built = t->kernel_build_generation == head.generation;
            if (built)
                memcpy(spans[SP_SPAN_HOST_BUILD], t->kernel_build, sizeof t->kernel_build);
            struct collect_request rq = {
                .region = t->kernel_region,
                .layout = &t->kernel_layout,
                .callable = c,
                .edges_total = same ? result.edges : 0,
                .status = same ? result.status : 0,
                .path = path ? path : t->path,
                .spans = built ? (const uint64_t(*)[2])spans : NULL,
                .host_build_tasks = built ? t->kernel_build_tasks : 0,
            };
            rc = collect(ctx, &rq);
        }
    }
    if (previous >= 0)
        simdev_set_device(previous);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}
