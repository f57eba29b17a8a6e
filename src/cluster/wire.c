/*
 * cluster/wire.c — packing and checked unpacking of a distributed
 * cluster's requests and replies (wire.h).
 *
 * Owns: message bytes. Must not touch: MPI, tasks, locks.
 */
#include "cluster/wire.h"

#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "common/view.h"
#include "simpler/status.h"

static bool is_read(uint8_t dir) { return dir == SIMPLER_DIR_IN || dir == SIMPLER_DIR_INOUT; }
static bool is_write(uint8_t dir) { return dir == SIMPLER_DIR_OUT || dir == SIMPLER_DIR_INOUT; }

/*
 * Copies the elements of view `t` (inside its buffer at t->addr) to
 * `packed` (to_packed) or back, in row-major order; the innermost
 * dimension is copied as one run when its stride is 1. Returns the bytes.
 */
static uint64_t walk_view(const struct simpler_tensor *t, uint8_t *packed, bool to_packed)
{
    size_t es = simpler_dtype_size(t->dtype);
    uint32_t nd = t->ndims ? t->ndims : 1;
    uint64_t shape[SIMPLER_TENSOR_MAX_DIMS], index[SIMPLER_TENSOR_MAX_DIMS] = {0};
    int64_t stride[SIMPLER_TENSOR_MAX_DIMS];
    for (uint32_t d = 0; d < nd; d++) {
        shape[d] = t->ndims ? t->shape[d] : 1;
        stride[d] = t->ndims ? t->stride[d] : 1;
        if (shape[d] == 0)
            return 0;
    }
    uint64_t run = stride[nd - 1] == 1 ? shape[nd - 1] : 1;
    uint8_t *base = (uint8_t *)(uintptr_t)t->addr;
    uint64_t done = 0;
    for (;;) {
        int64_t element = (int64_t)t->start_offset;
        for (uint32_t d = 0; d < nd; d++)
            element += (int64_t)index[d] * stride[d];
        uint8_t *at = base + element * (int64_t)es;
        if (to_packed)
            memcpy(packed + done, at, run * es);
        else
            memcpy(at, packed + done, run * es);
        done += run * es;
        /* Next index: the innermost dimension advances by the run. */
        uint32_t d = nd - 1;
        index[d] += run;
        while (index[d] >= shape[d]) {
            if (d == 0)
                return done;
            index[d] = 0;
            index[--d]++;
        }
    }
}

static uint64_t view_bytes(const struct simpler_tensor *t)
{
    uint64_t n = 0;
    sp_view_numel(t, &n);
    return n * simpler_dtype_size(t->dtype);
}

/* ------------------------------------------------------------- rank 0 */

int cl_remote_call_make(int32_t callable_id, uint32_t worker, const struct simpler_args *args,
                        const struct simpler_run_config *config, const uint8_t *directions,
                        struct cl_remote_call **out)
{
    struct cl_remote_call *c = sp_host_calloc(1, sizeof *c);
    if (!c)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    if (args->scalar_count &&
        !(c->scalars = sp_host_malloc(args->scalar_count * sizeof *c->scalars))) {
        free(c);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    c->callable_id = callable_id;
    c->worker = worker;
    c->has_config = config != NULL;
    if (config)
        c->config = *config;
    memcpy(c->directions, directions, sizeof c->directions);
    if (args->tensor_count)
        memcpy(c->tensors, args->tensors, args->tensor_count * sizeof *c->tensors);
    if (args->scalar_count)
        memcpy(c->scalars, args->scalars, args->scalar_count * sizeof *c->scalars);
    c->args = (struct simpler_args){.tensor_count = args->tensor_count,
                                    .scalar_count = args->scalar_count,
                                    .tensors = c->tensors,
                                    .scalars = c->scalars};
    *out = c;
    return 0;
}

void cl_remote_call_free(struct cl_remote_call *call)
{
    if (call)
        free(call->scalars);
    free(call);
}

int cl_wire_pack_request(const struct cl_remote_call *call, uint32_t task, uint32_t member,
                         void **msg, size_t *len, uint64_t *span_bytes)
{
    const struct simpler_args *a = &call->args;
    uint32_t buffer_of[SIMPLER_CALLABLE_MAX_TENSORS], buffer_count = 0;
    uint64_t base[SIMPLER_CALLABLE_MAX_TENSORS];
    struct sp_view_extent span[SIMPLER_CALLABLE_MAX_TENSORS];
    bool read[SIMPLER_CALLABLE_MAX_TENSORS] = {false};
    uint64_t packed_bytes[SIMPLER_CALLABLE_MAX_TENSORS] = {0};
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        uint32_t b = 0;
        while (b < buffer_count && base[b] != a->tensors[i].addr)
            b++;
        if (b == buffer_count)
            base[buffer_count++] = a->tensors[i].addr;
        buffer_of[i] = b;
        if (!is_read(call->directions[i]))
            continue;
        struct sp_view_extent e;
        sp_view_inside(&a->tensors[i], &e); /* true: submit checked the view */
        packed_bytes[b] += view_bytes(&a->tensors[i]);
        if (!read[b]) {
            span[b] = e;
            read[b] = true;
        } else {
            span[b].first_byte = e.first_byte < span[b].first_byte ? e.first_byte
                                                                   : span[b].first_byte;
            span[b].last_byte = e.last_byte > span[b].last_byte ? e.last_byte
                                                                : span[b].last_byte;
        }
    }
    uint32_t span_count = 0;
    uint64_t payload = 0, travels[SIMPLER_CALLABLE_MAX_TENSORS];
    bool packed[SIMPLER_CALLABLE_MAX_TENSORS];
    for (uint32_t b = 0; b < buffer_count; b++) {
        if (read[b]) {
            uint64_t extent = (uint64_t)(span[b].last_byte - span[b].first_byte) + 1;
            packed[b] = packed_bytes[b] < extent;
            travels[b] = packed[b] ? packed_bytes[b] : extent;
            span_count++;
            payload += travels[b];
        }
    }
    size_t bytes = sizeof(struct cl_wire_request) + a->scalar_count * sizeof(uint64_t) +
                   a->tensor_count * sizeof(struct cl_wire_tensor) +
                   span_count * sizeof(struct cl_wire_span) + payload;
    uint8_t *m = sp_host_malloc(bytes);
    if (!m)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    struct cl_wire_request head = {
        .task = task, .member = member, .worker = call->worker,
        .callable_id = call->callable_id, .tensor_count = a->tensor_count,
        .scalar_count = a->scalar_count, .has_config = call->has_config,
        .span_count = span_count, .buffer_count = buffer_count, .config = call->config};
    uint8_t *at = m;
    memcpy(at, &head, sizeof head);
    at += sizeof head;
    if (a->scalar_count)
        memcpy(at, a->scalars, a->scalar_count * sizeof(uint64_t));
    at += a->scalar_count * sizeof(uint64_t);
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        struct cl_wire_tensor wt = {.view = a->tensors[i], .buffer = buffer_of[i],
                                    .read = is_read(call->directions[i])};
        wt.view.addr = 0; /* a buffer is named by its id, never by its address */
        memcpy(at, &wt, sizeof wt);
        at += sizeof wt;
    }
    for (uint32_t b = 0; b < buffer_count; b++) {
        if (!read[b])
            continue;
        struct cl_wire_span s = {.buffer = b, .packed = packed[b], .bytes = travels[b],
                                 .offset = packed[b] ? 0 : (uint64_t)span[b].first_byte};
        memcpy(at, &s, sizeof s);
        at += sizeof s;
        if (!packed[b]) {
            memcpy(at, (const uint8_t *)(uintptr_t)base[b] + s.offset, s.bytes);
            at += s.bytes;
            continue;
        }
        for (uint32_t i = 0; i < a->tensor_count; i++)
            if (buffer_of[i] == b && is_read(call->directions[i]))
                at += walk_view(&a->tensors[i], at, true);
    }
    *msg = m;
    *len = bytes;
    *span_bytes = payload;
    return 0;
}

/* --------------------------------------------------------- serving rank */

void cl_served_call_free(struct cl_served_call *call)
{
    if (!call)
        return;
    for (uint32_t b = 0; b < call->buffer_count && call->buffers; b++)
        free(call->buffers[b]);
    free(call->buffers);
    free(call->scalars);
    free(call);
}

/* Takes `bytes` from the message at *at, or fails when fewer remain. */
static const uint8_t *take(const uint8_t **at, const uint8_t *end, size_t bytes)
{
    if ((size_t)(end - *at) < bytes)
        return NULL;
    const uint8_t *p = *at;
    *at += bytes;
    return p;
}

int cl_wire_unpack_request(const void *msg, size_t len, struct cl_served_call **out,
                           uint64_t *span_bytes)
{
    const uint8_t *at = msg, *end = (const uint8_t *)msg + len, *p;
    struct cl_served_call *c = sp_host_calloc(1, sizeof *c);
    if (!c)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    int rc = PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    uint64_t payload = 0;
    if (!(p = take(&at, end, sizeof c->head)))
        goto fail;
    memcpy(&c->head, p, sizeof c->head);
    const struct cl_wire_request *h = &c->head;
    if (h->tensor_count > SIMPLER_CALLABLE_MAX_TENSORS || h->scalar_count > SIMPLER_CALLABLE_MAX_ARGS ||
        h->buffer_count > h->tensor_count || h->span_count > h->buffer_count)
        goto fail;
    if (h->scalar_count) {
        if (!(p = take(&at, end, h->scalar_count * sizeof(uint64_t))))
            goto fail;
        if (!(c->scalars = sp_host_malloc(h->scalar_count * sizeof(uint64_t)))) {
            rc = PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
            goto fail;
        }
        memcpy(c->scalars, p, h->scalar_count * sizeof(uint64_t));
    }
    uint32_t buffer_of[SIMPLER_CALLABLE_MAX_TENSORS];
    bool read[SIMPLER_CALLABLE_MAX_TENSORS];
    uint64_t buffer_bytes[SIMPLER_CALLABLE_MAX_TENSORS] = {0};
    for (uint32_t i = 0; i < h->tensor_count; i++) {
        struct cl_wire_tensor wt;
        if (!(p = take(&at, end, sizeof wt)))
            goto fail;
        memcpy(&wt, p, sizeof wt);
        if (wt.buffer >= h->buffer_count ||
            (buffer_bytes[wt.buffer] && buffer_bytes[wt.buffer] != wt.view.buffer_bytes) ||
            !wt.view.buffer_bytes || wt.read > 1)
            goto fail;
        buffer_bytes[wt.buffer] = wt.view.buffer_bytes;
        buffer_of[i] = wt.buffer;
        read[i] = wt.read;
        c->tensors[i] = wt.view;
    }
    if (h->buffer_count && !(c->buffers = sp_host_calloc(h->buffer_count, sizeof(void *)))) {
        rc = PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        goto fail;
    }
    c->buffer_count = h->buffer_count;
    for (uint32_t b = 0; b < h->buffer_count; b++) {
        /* A private buffer per buffer id: this run's alone, so runs in
         * flight on this rank never share host bytes. */
        if (!buffer_bytes[b] || !(c->buffers[b] = sp_host_calloc(1, buffer_bytes[b]))) {
            rc = buffer_bytes[b] ? PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY : rc;
            goto fail;
        }
    }
    /* Every view inside its private buffer before any bytes land. */
    for (uint32_t i = 0; i < h->tensor_count; i++) {
        c->tensors[i].addr = (uint64_t)(uintptr_t)c->buffers[buffer_of[i]];
        if (!sp_view_inside(&c->tensors[i], NULL))
            goto fail;
    }
    for (uint32_t s = 0; s < h->span_count; s++) {
        struct cl_wire_span sp;
        if (!(p = take(&at, end, sizeof sp)))
            goto fail;
        memcpy(&sp, p, sizeof sp);
        if (sp.buffer >= h->buffer_count || sp.packed > 1 || sp.offset > buffer_bytes[sp.buffer] ||
            sp.bytes > buffer_bytes[sp.buffer] - sp.offset || !(p = take(&at, end, sp.bytes)))
            goto fail;
        payload += sp.bytes;
        if (!sp.packed) {
            memcpy((uint8_t *)c->buffers[sp.buffer] + sp.offset, p, sp.bytes);
            continue;
        }
        /* The buffer's read views' elements, in tensor order: their sizes
         * (each bounded by its buffer, checked above) must add up to it. */
        uint64_t expected = 0;
        for (uint32_t i = 0; i < h->tensor_count; i++)
            if (buffer_of[i] == sp.buffer && read[i])
                expected += view_bytes(&c->tensors[i]);
        if (sp.offset != 0 || expected != sp.bytes)
            goto fail;
        for (uint32_t i = 0; i < h->tensor_count; i++)
            if (buffer_of[i] == sp.buffer && read[i])
                p += walk_view(&c->tensors[i], (uint8_t *)p, false);
    }
    if (at != end)
        goto fail;
    c->args = (struct simpler_args){.tensor_count = h->tensor_count,
                                    .scalar_count = h->scalar_count,
                                    .tensors = h->tensor_count ? c->tensors : NULL,
                                    .scalars = c->scalars};
    *out = c;
    *span_bytes = payload;
    return 0;
fail:
    cl_served_call_free(c);
    return rc;
}

uint64_t cl_wire_output_bytes(const struct simpler_args *args, const uint8_t *directions)
{
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < args->tensor_count; i++)
        if (is_write(directions[i]))
            bytes += view_bytes(&args->tensors[i]);
    return bytes;
}

int cl_wire_pack_reply(uint32_t task, uint32_t member, int32_t status,
                       const struct simpler_args *args, const uint8_t *directions, void **msg,
                       size_t *len)
{
    uint64_t out = status == 0 ? cl_wire_output_bytes(args, directions) : 0;
    size_t bytes = sizeof(struct cl_wire_reply) + out;
    uint8_t *m = sp_host_malloc(bytes);
    if (!m)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    struct cl_wire_reply head = {.task = task, .member = member, .status = status,
                                 .output_bytes = out};
    memcpy(m, &head, sizeof head);
    uint8_t *at = m + sizeof head;
    for (uint32_t i = 0; status == 0 && i < args->tensor_count; i++)
        if (is_write(directions[i]))
            at += walk_view(&args->tensors[i], at, true);
    *msg = m;
    *len = bytes;
    return 0;
}

int cl_wire_reply_head(const void *msg, size_t len, struct cl_wire_reply *head)
{
    if (len < sizeof *head)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    memcpy(head, msg, sizeof *head);
    return head->output_bytes == len - sizeof *head ? 0 : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
}

int cl_wire_unpack_outputs(const void *msg, size_t len, const struct simpler_args *args,
                           const uint8_t *directions)
{
    if (len - sizeof(struct cl_wire_reply) != cl_wire_output_bytes(args, directions))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    uint8_t *at = (uint8_t *)msg + sizeof(struct cl_wire_reply);
    for (uint32_t i = 0; i < args->tensor_count; i++)
        if (is_write(directions[i]))
            at += walk_view(&args->tensors[i], at, false);
    return 0;
}
