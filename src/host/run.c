/*
 * host/run.c — the program-mode run pipeline.
 *
 * Owns: prepare (check the args against the callable, snapshot them into
 * the slot, stage host tensors into device buffers the run owns), launch
 * (enqueue on the device behind every earlier launch), poll/wait (this
 * run's status, from this run's own stream), finalize (copy outputs back,
 * free the staging, release the slot exactly once) and simpler_run.
 * Must not create or destroy context-wide resources: context.c owns them.
 *
 * Ordering: every run's chain goes through the context's one launcher, whose
 * streams execute runs in launch order; each slot's own stream joins the
 * chain at its start and end and so carries exactly its run's status.
 */
#include <string.h>

#include "common/view.h"
#include "host/context.h"
#include "host/device_binding.h"
#include "host/program.h"
#include "host/residency.h"
#include "host/run_args.h"
#include "host/run_slot.h"

void (*sp_test_staging_free_hook)(void *device, size_t bytes);

#define NO_STAGING 0xffu /* tensor_staging[]: a device tensor, passed through */

static bool is_output(uint8_t dir)
{
    return dir == SIMPLER_DIR_OUT || dir == SIMPLER_DIR_INOUT;
}

static bool is_input(uint8_t dir)
{
    return dir == SIMPLER_DIR_IN || dir == SIMPLER_DIR_INOUT;
}

/* Bounds on a run argument's shape: a broadcast (stride 0) view may name
 * more elements than its buffer holds, but not without limit. */
#define MAX_ARG_ELEMENTS (UINT64_C(1) << 48)

/*
 * True when `t` is a run argument prepare accepts: a descriptor as the
 * tensor.h constructors make it (no producer: a run's arguments are
 * external, so SIMPLER_TASK_ID_NONE; reserved zero; no unknown flag) over
 * a real buffer (non-NULL address, the buffer not wrapping the address
 * space, a valid address space), whose view lies inside the buffer
 * (sp_view_inside) and names at most MAX_ARG_ELEMENTS elements. On success
 * [*lo, *hi) is the byte range the view touches.
 */
static bool arg_valid(const struct simpler_tensor *t, uint64_t *lo, uint64_t *hi)
{
    uint64_t end, numel;
    struct sp_view_extent e;
    if (!t->addr || t->address_space > SIMPLER_MEM_DEVICE ||
        !sp_add_u64(t->addr, t->buffer_bytes, &end) ||
        t->producer_task_id != SIMPLER_TASK_ID_NONE || t->reserved != 0 ||
        (t->flags & ~SIMPLER_TENSOR_MANUAL_DEP) != 0)
        return false;
    if (!sp_view_numel(t, &numel) || numel > MAX_ARG_ELEMENTS || !sp_view_inside(t, &e))
        return false;
    *lo = (uint64_t)e.first_byte;
    *hi = (uint64_t)e.last_byte + 1;
    return true;
}

/* Structural checks of a run's args (before any state). */
static int check_args(const struct simpler_args *args)
{
    if (args->tensor_count > SIMPLER_ORCH_MAX_TENSORS ||
        args->scalar_count > SIMPLER_ORCH_MAX_SCALARS ||
        (args->tensor_count && !args->tensors) || (args->scalar_count && !args->scalars))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < args->tensor_count; i++) {
        const struct simpler_tensor *t = &args->tensors[i];
        uint64_t lo, hi;
        if (!arg_valid(t, &lo, &hi))
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        if (t->address_space != SIMPLER_MEM_HOST)
            continue;
        /* Host buffers are staged one device buffer each: two tensors must
         * name the same buffer exactly or not overlap at all, else the
         * staged copies could not alias the way the host bytes do. */
        for (uint32_t j = 0; j < i; j++) {
            const struct simpler_tensor *u = &args->tensors[j];
            if (u->address_space != SIMPLER_MEM_HOST ||
                (u->addr == t->addr && u->buffer_bytes == t->buffer_bytes))
                continue;
            if (t->addr < u->addr + u->buffer_bytes && u->addr < t->addr + t->buffer_bytes)
                return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        }
    }
    return 0;
}

/* The slot holding `run`, or NULL. Caller holds ctx->lock. */
static struct sp_slot *find_slot(struct simpler_context *ctx, simpler_run_t run)
{
    if (!run)
        return NULL;
    for (uint32_t i = 0; i < ctx->slot_count; i++)
        if (ctx->slots[i].state != SP_SLOT_FREE && ctx->slots[i].run == run)
            return &ctx->slots[i];
    return NULL;
}

int sp_staging_free(struct simpler_context *ctx, struct sp_slot *s)
{
    for (uint32_t j = 0; j < s->staging_count; j++) {
        struct sp_staging *st = &s->staging[j];
        if (!st->device)
            continue;
        if (sp_test_staging_free_hook)
            sp_test_staging_free_hook(st->device, st->bytes);
        int rc = sp_dev_free(ctx, st->device, st->bytes);
        if (rc)
            return rc;
        st->device = NULL;
        ctx->counters.staging_frees++;
    }
    return 0;
}

/* Gives every host buffer of the snapshot a device buffer and rewrites the
 * device view of the args to use them. Caller holds ctx->lock; on failure
 * the caller frees what was allocated. */
static int alloc_staging(struct simpler_context *ctx, struct sp_slot *s)
{
    const struct simpler_orch_args *a = &s->snapshot;
    s->staged_args = *a;
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        const struct simpler_tensor *t = &a->tensors[i];
        s->tensor_staging[i] = NO_STAGING;
        if (t->address_space != SIMPLER_MEM_HOST)
            continue;
        uint32_t j = 0;
        while (j < s->staging_count &&
               !(s->staging[j].host_addr == t->addr && s->staging[j].bytes == t->buffer_bytes))
            j++;
        if (j == s->staging_count) {
            struct sp_staging *st = &s->staging[j];
            st->host_addr = t->addr;
            st->bytes = t->buffer_bytes;
            int rc = sp_dev_alloc(ctx, &st->device, st->bytes);
            if (rc)
                return rc;
            s->staging_count++;
            ctx->counters.staging_allocs++;
        }
        s->tensor_staging[i] = (uint8_t)j;
        s->staged_args.tensors[i].addr = (uint64_t)(uintptr_t)s->staging[j].device;
        s->staged_args.tensors[i].address_space = SIMPLER_MEM_DEVICE;
    }
    return 0;
}

/* Copies in, per staged buffer, the bytes its IN and INOUT views span (OUT
 * views are never copied in), then uploads the device view of the args.
 * Caller holds ctx->lock. */
static int copy_inputs(struct sp_slot *s, const struct sp_callable *c)
{
    const struct simpler_orch_args *a = &s->snapshot;
    int rc;
    for (uint32_t j = 0; j < s->staging_count; j++) {
        uint64_t lo = UINT64_MAX, hi = 0, vlo = 0, vhi = 0;
        for (uint32_t i = 0; i < a->tensor_count; i++) {
            if (s->tensor_staging[i] != j || !is_input(c->tensor_directions[i]))
                continue;
            arg_valid(&a->tensors[i], &vlo, &vhi); /* true: prepare checked it */
            lo = vlo < lo ? vlo : lo;
            hi = vhi > hi ? vhi : hi;
        }
        if (lo < hi && (rc = simdev_memcpy((uint8_t *)s->staging[j].device + lo,
                                           (const uint8_t *)(uintptr_t)s->staging[j].host_addr + lo,
                                           hi - lo, SIMDEV_COPY_HOST_TO_DEVICE)))
            return rc;
    }
    return simdev_memcpy(s->device_args, &s->staged_args, sizeof s->staged_args,
                         SIMDEV_COPY_HOST_TO_DEVICE);
}

int simpler_prepare_run(struct simpler_context *ctx, simpler_run_t *run, int32_t callable_id,
                        const struct simpler_args *args, const struct simpler_run_config *config)
{
    if (!ctx || !run || !args || callable_id < 0 || callable_id >= SIMPLER_MAX_CALLABLE_IDS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    uint64_t prepare_begin = simdev_clock_ns(); /* the host span, if the run traces */
    int rc = check_args(args);
    struct rt_config rtc;
    if (!rc && config) {
        rt_config_from_public(config, &rtc);
        if (!(rc = rt_config_check(&rtc)))
            rc = sp_trace_config_check(config);
    }
    if (rc)
        return rc;
    pthread_mutex_lock(&ctx->lock);
    struct sp_callable *c;
    struct sp_slot *s = NULL;
    size_t need;
    if ((rc = sp_program_ready(ctx)))
        goto out;
    if (!(c = ctx->callables[callable_id])) {
        rc = PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT;
        goto out;
    }
    if (args->tensor_count != c->tensor_count || args->scalar_count != c->scalar_count) {
        rc = PTO_RUNTIME_ERR_INVALID_ARGUMENT; /* does not match the signature */
        goto out;
    }
    if (!config)
        rt_config_from_public(&c->config, &rtc);
    uint32_t schedulers = rtc.scheduler_threads ? rtc.scheduler_threads
                                                : ctx->topo.aicpu_threads - 1;
    if (schedulers + 1 > ctx->topo.aicpu_threads || (rc = rt_config_check(&rtc))) {
        rc = PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        goto out;
    }
    if ((rc = rt_arena_bytes(&rtc, &ctx->topo, &need)))
        goto out;
    if (need > ctx->arena_bytes) {
        rc = PTO_RUNTIME_ERR_CAPACITY_EXCEEDED; /* bigger than the context's run capacity */
        goto out;
    }
    for (uint32_t i = 0; i < ctx->slot_count && !s; i++)
        if (ctx->slots[i].state == SP_SLOT_FREE)
            s = &ctx->slots[i];
    if (!s) {
        rc = PTO_RUNTIME_ERR_CAPACITY_EXCEEDED; /* every slot holds an unfinalized run */
        goto out;
    }
    /* The owned snapshot: nothing of the caller's containers is kept. */
    memset(&s->snapshot, 0, sizeof s->snapshot);
    s->snapshot.tensor_count = args->tensor_count;
    s->snapshot.scalar_count = args->scalar_count;
    if (args->tensor_count)
        memcpy(s->snapshot.tensors, args->tensors, args->tensor_count * sizeof *args->tensors);
    if (args->scalar_count)
        memcpy(s->snapshot.scalars, args->scalars, args->scalar_count * sizeof *args->scalars);
    /* Staging a prepare before could not free (its undo failed) goes now. */
    if ((rc = sp_staging_free(ctx, s)))
        goto out;
    s->staging_count = 0;
    const struct simpler_run_config *pub = config ? config : &c->config;
    if ((rc = sp_trace_run_open(ctx, s, sp_trace_level(ctx, pub), schedulers, pub->trace_records,
                                &rtc)))
        goto out;
    uint64_t stage_begin = sp_trace_now(s);
    if ((rc = alloc_staging(ctx, s)) || (rc = copy_inputs(s, c))) {
        /* Undo: a free that fails is tried once more; what still cannot be
         * freed stays recorded in the slot, for the next prepare on it or
         * finalize_device. The staging's code is the answer. */
        if (sp_staging_free(ctx, s))
            sp_staging_free(ctx, s);
        if (sp_trace_run_release(ctx, s))
            sp_trace_run_release(ctx, s);
        goto out;
    }
    sp_trace_span(s, SP_SPAN_STAGE, stage_begin);
    s->config = rtc;
    s->callable = c;
    s->run = ctx->next_run++;
    s->state = SP_SLOT_PREPARED;
    s->waiting = s->completed = s->copied_back = s->restage = s->stranded = false;
    s->status = 0;
    memset(&s->result, 0, sizeof s->result);
    c->runs++;
    ctx->counters.slots_acquired++;
    sp_trace_span(s, SP_SPAN_PREPARE, prepare_begin);
    *run = s->run;
out:
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int simpler_launch_run(struct simpler_context *ctx, simpler_run_t run)
{
    if (!ctx || !run)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    struct sp_slot *s = NULL;
    int rc = sp_program_ready(ctx);
    if (!rc && (!(s = find_slot(ctx, run)) || s->state != SP_SLOT_PREPARED))
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    /* After a failed launch the kernels may have run on the staged buffers:
     * stage the inputs again from the host. */
    if (!rc && s->restage && !(rc = copy_inputs(s, s->callable)))
        s->restage = false;
    if (!rc) {
        uint64_t launch_begin = sp_trace_now(s);
        struct rt_run_request rq = {
            .entry = s->callable->entry,
            .kernels = s->callable->record->kernels,
            .kernel_count = s->callable->kernel_count,
            .args = s->device_args,
            .arena = ctx->arena,
            .arena_bytes = ctx->arena_bytes,
            .arena_nonce = ctx->arena_nonce,
            .result = s->device_result,
            .config = s->config,
        };
        /* On failure rt_run_enqueue has drained whatever part of the chain
         * it enqueued; the run stays prepared and may be launched again. */
        if ((rc = rt_run_enqueue(ctx->launcher, s->stream, &rq))) {
            s->restage = true;
        } else {
            s->generation = rt_launcher_generation(ctx->launcher);
            s->state = SP_SLOT_LAUNCHED;
            ctx->counters.launches++;
            sp_trace_span(s, SP_SPAN_LAUNCH, launch_begin);
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/*
 * Latches the final status of a run whose stream has drained and is clean
 * again (its carried error, `carried`, cleared by a sync, so the slot's next
 * run starts clean). The status comes from the run's result block — the
 * device's own record, which a failed host-side call cannot fake — when the
 * block is this run's (its generation); a block an earlier run left there
 * means this run never ran (an op before it failed and it was skipped): its
 * status is then the error its stream carried. 0 once latched; else the
 * read's code, with nothing latched (the caller may retry). Caller holds
 * ctx->lock.
 */
static int latch_status(struct simpler_context *ctx, struct sp_slot *s, int carried)
{
    int rc;
    if (simdev_device_is_lost(ctx->device)) {
        s->status = PTO_RUNTIME_ERR_DEVICE_LOST;
    } else if ((rc = simdev_memcpy(&s->result, s->device_result, sizeof s->result,
                                   SIMDEV_COPY_DEVICE_TO_HOST))) {
        return rc;
    } else if (s->result.generation != s->generation) {
        memset(&s->result, 0, sizeof s->result);
        s->status = carried ? carried : PTO_RUNTIME_ERR_INTERNAL;
        s->result.status = s->status;
    } else {
        /* The run's own status, or, when it succeeded, an error the chain
         * carried after it (a failed record or wait of the chain): nothing
         * the device reported is dropped. */
        s->status = s->result.status ? s->result.status : carried;
    }
    s->completed = true;
    return 0;
}

/* After a sync of the run's stream returned `rc`: 0 when the stream is now
 * drained and clean (a nonzero `rc` was the carried error, now cleared),
 * else `rc` — the sync itself failed and nothing was waited for or cleared.
 * A lost device counts as drained: nothing more will run. */
static int synced(struct simpler_context *ctx, struct sp_slot *s, int rc)
{
    if (!rc || simdev_device_is_lost(ctx->device) || simdev_stream_query(s->stream) == 0)
        return 0;
    return rc;
}

/* Syncs the run's stream; *carried is what the sync returned. 0 when the
 * stream is now drained and clean, else the sync's own failure (synced).
 * The stream's state just before the sync settles the one case synced
 * cannot tell: a stream already drained and clean carries nothing, so a
 * failed sync of it failed by itself — even though the stream reads clean
 * afterwards (a run that ended before the wait began, then a failed sync,
 * must not take the sync's code as its status). */
static int sync_run_stream(struct simpler_context *ctx, struct sp_slot *s, int *carried)
{
    int before = simdev_stream_query(s->stream);
    int rc = simdev_stream_sync(s->stream);
    *carried = rc;
    if (rc && before == 0 && !simdev_device_is_lost(ctx->device))
        return rc;
    return synced(ctx, s, rc);
}

/* Waits, without the lock, until the launched run in *slot completes, and
 * latches its status. Caller holds ctx->lock; it is held again on return.
 * While this thread sleeps because another thread waits for the same run,
 * that thread may finalize the run and the slot take the next one: the slot
 * is looked up again by `run` after every sleep, and *slot updated (NULL,
 * INVALID_STATE: the run was finalized meanwhile). 0, or the code of a
 * failed wait (nothing latched). */
static int await(struct simpler_context *ctx, simpler_run_t run, struct sp_slot **slot)
{
    struct sp_slot *s = *slot;
    uint64_t wait_begin = s->completed ? 0 : sp_trace_now(s);
    while (!s->completed) {
        if (s->waiting) {
            ctx->sleepers++; /* finalize_device waits for none, refuses instead */
            pthread_cond_wait(&ctx->waiters_done, &ctx->lock);
            ctx->sleepers--;
            if (!(s = *slot = find_slot(ctx, run)) || s->state != SP_SLOT_LAUNCHED)
                return PTO_RUNTIME_ERR_INVALID_STATE;
            continue;
        }
        s->waiting = true;
        pthread_mutex_unlock(&ctx->lock);
        int carried;
        int sync_rc = sync_run_stream(ctx, s, &carried);
        pthread_mutex_lock(&ctx->lock);
        s->waiting = false;
        pthread_cond_broadcast(&ctx->waiters_done);
        int rc;
        if ((rc = sync_rc) || (rc = latch_status(ctx, s, carried)))
            return rc;
    }
    if (wait_begin)
        sp_trace_span(s, SP_SPAN_WAIT, wait_begin);
    return 0;
}

/* The launched run's slot, or NULL with *rc set. Caller holds ctx->lock. */
static struct sp_slot *launched_slot(struct simpler_context *ctx, simpler_run_t run, int *rc)
{
    struct sp_slot *s = NULL;
    *rc = sp_latch_require(&ctx->latch, SP_IDENTITY_PROGRAM);
    if (!*rc && (!ctx->initialized || !(s = find_slot(ctx, run)) || s->state != SP_SLOT_LAUNCHED))
        *rc = PTO_RUNTIME_ERR_INVALID_STATE;
    if (!*rc)
        *rc = simdev_set_device(ctx->device);
    return *rc ? NULL : s;
}

int simpler_poll_run(struct simpler_context *ctx, simpler_run_t run)
{
    if (!ctx || !run)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    int rc;
    struct sp_slot *s = launched_slot(ctx, run, &rc);
    if (s && !s->completed) {
        int carried = s->waiting ? PTO_RUNTIME_ERR_NOT_READY : simdev_stream_query(s->stream);
        if (carried == PTO_RUNTIME_ERR_NOT_READY)
            rc = PTO_RUNTIME_ERR_NOT_READY;
        else if (!(rc = carried ? synced(ctx, s, simdev_stream_sync(s->stream)) : 0))
            rc = latch_status(ctx, s, carried);
    }
    if (s && s->completed)
        rc = s->status;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int simpler_wait_run(struct simpler_context *ctx, simpler_run_t run)
{
    if (!ctx || !run)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    int rc;
    struct sp_slot *s = launched_slot(ctx, run, &rc);
    if (s && !(rc = await(ctx, run, &s)))
        rc = s->status;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int simpler_get_run_info(struct simpler_context *ctx, simpler_run_t run,
                         struct simpler_run_info *info)
{
    if (!ctx || !run || !info)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    int rc;
    struct sp_slot *s = launched_slot(ctx, run, &rc);
    if (s && !s->completed)
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    else if (s) {
        memset(info, 0, sizeof *info);
        info->status = s->status;
        info->tasks_submitted = s->result.tasks_submitted;
        info->tasks_completed = s->result.tasks_completed;
        info->edges = s->result.edges;
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* Copies the elements of host view `t` from its staging buffer back to the
 * host, one contiguous run at a time (never the bytes between them). */
static int copy_view_back(const struct simpler_tensor *t, const uint8_t *device, uint32_t dim,
                          int64_t offset)
{
    size_t esize = simpler_dtype_size(t->dtype);
    uint8_t *host = (uint8_t *)(uintptr_t)t->addr;
    int rc = 0;
    if (dim >= t->ndims || dim >= SIMPLER_TENSOR_MAX_DIMS)
        return PTO_RUNTIME_ERR_INTERNAL; /* prepare checked ndims: never reached */
    if (dim == 0 && simpler_tensor_is_contiguous(t))
        return simdev_memcpy(host + t->start_offset * esize, device + t->start_offset * esize,
                             simpler_tensor_numel(t) * esize, SIMDEV_COPY_DEVICE_TO_HOST);
    if (dim == 0)
        offset = (int64_t)t->start_offset;
    if (dim + 1 == t->ndims && t->stride[dim] == 1)
        return simdev_memcpy(host + offset * (int64_t)esize, device + offset * (int64_t)esize,
                             t->shape[dim] * esize, SIMDEV_COPY_DEVICE_TO_HOST);
    for (uint64_t i = 0; i < t->shape[dim] && !rc; i++) {
        int64_t at = offset + (int64_t)i * t->stride[dim];
        if (dim + 1 == t->ndims)
            rc = simdev_memcpy(host + at * (int64_t)esize, device + at * (int64_t)esize, esize,
                               SIMDEV_COPY_DEVICE_TO_HOST);
        else
            rc = copy_view_back(t, device, dim + 1, at);
    }
    return rc;
}

static int copy_back(const struct sp_slot *s)
{
    const uint8_t *dirs = s->callable->tensor_directions;
    for (uint32_t i = 0; i < s->snapshot.tensor_count; i++) {
        if (s->tensor_staging[i] == NO_STAGING || !is_output(dirs[i]))
            continue;
        int rc = copy_view_back(&s->snapshot.tensors[i], s->staging[s->tensor_staging[i]].device,
                                0, 0);
        if (rc)
            return rc;
    }
    return 0;
}

/* Frees the run's staging, then its slot and its hold on the callable; the
 * handle is invalid afterwards. A failed free returns its code with the slot
 * still held (the staging already freed stays freed). Caller holds ctx->lock
 * and knows the run is over on the device. */
static int release_slot(struct simpler_context *ctx, struct sp_slot *s)
{
    int rc = sp_staging_free(ctx, s);
    if (!rc)
        rc = sp_trace_run_release(ctx, s);
    if (rc)
        return rc;
    s->callable->runs--;
    s->callable = NULL;
    s->state = SP_SLOT_FREE;
    s->run = 0;
    s->staging_count = 0;
    s->stranded = false;
    ctx->counters.slots_released++;
    return 0;
}

int simpler_finalize_run(struct simpler_context *ctx, simpler_run_t run)
{
    if (!ctx || !run)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->lock);
    struct sp_slot *s = NULL;
    int rc = sp_latch_require(&ctx->latch, SP_IDENTITY_PROGRAM);
    if (!rc && (!ctx->initialized || !(s = find_slot(ctx, run))))
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    if (!rc)
        rc = simdev_set_device(ctx->device);
    if (rc)
        goto out;
    uint64_t finalize_begin = sp_trace_now(s);
    if (s->restage) {
        /* A launch failed part-way: its work on the run's stream must be
         * over before the staging goes (the error it carries is not this
         * run's status; the run never ran). */
        int drained = simdev_stream_sync(s->stream);
        if (drained && simdev_stream_query(s->stream) == PTO_RUNTIME_ERR_NOT_READY) {
            rc = drained; /* the sync itself failed: nothing was drained */
            goto failed;
        }
    }
    if (s->state == SP_SLOT_LAUNCHED) {
        if ((rc = await(ctx, run, &s)))
            goto failed; /* not known to be over: nothing may be released */
        if (s->status == 0 && !s->copied_back) {
            uint64_t copy_begin = sp_trace_now(s);
            rc = copy_back(s);
            if (rc && rc != PTO_RUNTIME_ERR_DEVICE_LOST)
                goto failed; /* outputs not delivered yet: a retry copies again */
            s->copied_back = true;
            sp_trace_span(s, SP_SPAN_COPY_BACK, copy_begin);
        }
        sp_trace_span(s, SP_SPAN_FINALIZE, finalize_begin);
        sp_trace_run_write(ctx, s); /* failed runs too */
    }
    if (!(rc = release_slot(ctx, s)))
        goto out;
failed:
    /* A device operation failed: the run keeps its slot, and a retry does
     * what is left. If nobody retries (simpler_run gave up), finalize_device
     * or unregistering the callable may release it. NULL: await found the
     * run finalized by another thread (INVALID_STATE). */
    if (s)
        s->stranded = true;
out:
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* Finalizes a run simpler_run made; the handle never leaves simpler_run, so
 * a failed finalize (a device operation failing once) is retried here
 * rather than left holding the slot. */
static int finalize_own_run(struct simpler_context *ctx, simpler_run_t run)
{
    int rc = 0;
    for (int attempt = 0; attempt < 3; attempt++)
        if (!(rc = simpler_finalize_run(ctx, run)) || rc == PTO_RUNTIME_ERR_INVALID_STATE)
            break;
    return rc;
}

int simpler_run(struct simpler_context *ctx, int32_t callable_id, const struct simpler_args *args,
                const struct simpler_run_config *config, struct simpler_run_info *info)
{
    simpler_run_t run;
    int rc = simpler_prepare_run(ctx, &run, callable_id, args, config);
    if (rc)
        return rc;
    if ((rc = simpler_launch_run(ctx, run))) {
        finalize_own_run(ctx, run);
        return rc;
    }
    int status = simpler_wait_run(ctx, run);
    struct simpler_run_info known;
    /* A wait that failed itself (not the run) is tried again, like the
     * finalize: the handle never leaves this call. */
    for (int attempt = 1; attempt < 3 && simpler_get_run_info(ctx, run, &known); attempt++)
        status = simpler_wait_run(ctx, run);
    if (simpler_get_run_info(ctx, run, &known))
        memset(&known, 0, sizeof known); /* still not known to be over */
    else
        status = known.status;
    if (info)
        *info = known;
    rc = finalize_own_run(ctx, run);
    return status ? status : rc;
}

/* True when the slot holds a run of `callable` (NULL: of any callable). */
static bool holds_run_of(const struct sp_slot *s, const struct sp_callable *callable)
{
    return s->state != SP_SLOT_FREE && (!callable || s->callable == callable);
}

int sp_stranded_only(struct simpler_context *ctx, const struct sp_callable *callable)
{
    for (uint32_t i = 0; i < ctx->slot_count; i++) {
        const struct sp_slot *s = &ctx->slots[i];
        if (holds_run_of(s, callable) && (!s->stranded || s->waiting))
            return PTO_RUNTIME_ERR_INVALID_STATE;
    }
    return 0;
}

int sp_release_stranded(struct simpler_context *ctx, const struct sp_callable *callable)
{
    for (uint32_t i = 0; i < ctx->slot_count; i++) {
        struct sp_slot *s = &ctx->slots[i];
        if (!holds_run_of(s, callable) || !s->stranded)
            continue;
        /* The finalize that failed may not have seen the run end (its wait
         * or a failed launch's drain failed): what is left of it on the
         * device must be over, and its stream clean for the slot's next
         * run, before its staging goes. No other thread waits for it
         * (sp_stranded_only), so the wait holds the lock. */
        bool unfinished = s->restage || (s->state == SP_SLOT_LAUNCHED && !s->completed);
        int rc;
        if ((unfinished && (rc = synced(ctx, s, simdev_stream_sync(s->stream)))) ||
            (rc = release_slot(ctx, s)))
            return rc;
        ctx->stranded_released++;
    }
    return 0;
}

int sp_test_run_snapshot(struct simpler_context *ctx, simpler_run_t run,
                         struct simpler_orch_args *out)
{
    pthread_mutex_lock(&ctx->lock);
    struct sp_slot *s = find_slot(ctx, run);
    if (s)
        *out = s->snapshot;
    pthread_mutex_unlock(&ctx->lock);
    return s ? 0 : PTO_RUNTIME_ERR_INVALID_STATE;
}
