/*
 * cluster/wire.c — packing and checked unpacking of a distributed
 * cluster's requests and replies (wire.h).
 *
 * Owns: message bytes. Must not touch: MPI, tasks, locks.
 */
#include "cluster/wire.h"

#include <stdlib.h>
#include <string.h>

#include "cluster/host_tensormap.h"
#include "common/host_alloc.h"
#include "common/view.h"
#include "simpler/status.h"


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
                         const uint32_t *mirror, const bool *sent, void **msg, size_t *len,
                         uint64_t *payload)
{
    const struct simpler_args *a = &call->args;
    uint32_t buffer_of[SIMPLER_CALLABLE_MAX_TENSORS], buffer_count = 0;
    uint64_t base[SIMPLER_CALLABLE_MAX_TENSORS], record_bytes[SIMPLER_CALLABLE_MAX_TENSORS] = {0};
    bool has_record[SIMPLER_CALLABLE_MAX_TENSORS] = {false};
    uint32_t record_count = 0;
    uint64_t elements = 0;
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        uint32_t b = 0;
        while (b < buffer_count && base[b] != a->tensors[i].addr)
            b++;
        if (b == buffer_count)
            base[buffer_count++] = a->tensors[i].addr;
        buffer_of[i] = b;
        if (!sent[i])
            continue;
        record_count += !has_record[b];
        has_record[b] = true;
        record_bytes[b] += view_bytes(&a->tensors[i]);
        elements += view_bytes(&a->tensors[i]);
    }
    size_t bytes = sizeof(struct cl_wire_request) + a->scalar_count * sizeof(uint64_t) +
                   a->tensor_count * sizeof(struct cl_wire_tensor) +
                   record_count * sizeof(struct cl_wire_record) + elements;
    uint8_t *m = sp_host_malloc(bytes);
    if (!m)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    struct cl_wire_request head = {
        .task = task, .member = member, .worker = call->worker,
        .callable_id = call->callable_id, .tensor_count = a->tensor_count,
        .scalar_count = a->scalar_count, .has_config = call->has_config,
        .record_count = record_count, .buffer_count = buffer_count, .config = call->config};
    uint8_t *at = m;
    memcpy(at, &head, sizeof head);
    at += sizeof head;
    if (a->scalar_count)
        memcpy(at, a->scalars, a->scalar_count * sizeof(uint64_t));
    at += a->scalar_count * sizeof(uint64_t);
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        struct cl_wire_tensor wt = {.view = a->tensors[i], .buffer = buffer_of[i],
                                    .sent = sent[i], .mirror = mirror[i]};
        wt.view.addr = 0; /* a buffer is named by its ids, never by its address */
        memcpy(at, &wt, sizeof wt);
        at += sizeof wt;
    }
    for (uint32_t b = 0; b < buffer_count; b++) {
        if (!has_record[b])
            continue;
        struct cl_wire_record r = {.buffer = b, .bytes = record_bytes[b]};
        memcpy(at, &r, sizeof r);
        at += sizeof r;
        for (uint32_t i = 0; i < a->tensor_count; i++)
            if (buffer_of[i] == b && sent[i])
                at += walk_view(&a->tensors[i], at, true);
    }
    *msg = m;
    *len = bytes;
    *payload = elements;
    return 0;
}

/* --------------------------------------------------------- serving rank */

static int cl_grow_mirrors(struct cl_mirrors *mirrors)
{
    return cl_grow((void **)&mirrors->m, &mirrors->capacity, (uint64_t)mirrors->count + 1,
                   sizeof *mirrors->m);
}

/* The position in m of the first mirror whose id is >= id. */
static uint32_t mirror_at(const struct cl_mirrors *mirrors, uint32_t id)
{
    uint32_t lo = 0, hi = mirrors->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (mirrors->m[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int cl_mirrors_get(struct cl_mirrors *mirrors, uint32_t id, uint64_t bytes, void **data)
{
    uint32_t at = mirror_at(mirrors, id);
    if (at < mirrors->count && mirrors->m[at].id == id) {
        if (mirrors->m[at].bytes != bytes)
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        *data = mirrors->m[at].data;
        return 0;
    }
    void *fresh = bytes <= SIZE_MAX ? sp_host_calloc(1, (size_t)bytes) : NULL;
    if (!fresh || cl_grow_mirrors(mirrors)) {
        free(fresh);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    memmove(&mirrors->m[at + 1], &mirrors->m[at],
            (size_t)(mirrors->count - at) * sizeof *mirrors->m);
    mirrors->m[at] = (struct cl_mirror){.id = id, .bytes = bytes, .data = fresh};
    mirrors->count++;
    *data = fresh;
    return 0;
}

void cl_mirrors_clear(struct cl_mirrors *mirrors)
{
    for (uint32_t i = 0; i < mirrors->count; i++)
        free(mirrors->m[i].data);
    free(mirrors->m);
    *mirrors = (struct cl_mirrors){0};
}

void cl_served_call_free(struct cl_served_call *call)
{
    if (!call)
        return;
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

/* The tensors of a request: checked, their buffers' sizes and mirror ids
 * agreeing, every view inside its buffer. */
static bool check_tensors(const struct cl_wire_request *h, const struct cl_wire_tensor *wt,
                          uint64_t *buffer_bytes, uint32_t *mirror_of)
{
    bool seen[SIMPLER_CALLABLE_MAX_TENSORS] = {false};
    for (uint32_t i = 0; i < h->tensor_count; i++) {
        uint32_t b = wt[i].buffer;
        if (b >= h->buffer_count || wt[i].sent > 1 || !wt[i].view.buffer_bytes ||
            !sp_view_inside(&wt[i].view, NULL))
            return false;
        if (seen[b] && (buffer_bytes[b] != wt[i].view.buffer_bytes || mirror_of[b] != wt[i].mirror))
            return false;
        seen[b] = true;
        buffer_bytes[b] = wt[i].view.buffer_bytes;
        mirror_of[b] = wt[i].mirror;
    }
    for (uint32_t b = 0; b < h->buffer_count; b++) {
        if (!seen[b])
            return false; /* a buffer id no tensor names */
        for (uint32_t k = 0; k < b; k++)
            if (mirror_of[k] == mirror_of[b])
                return false; /* two buffers of one request, one mirror */
    }
    return true;
}

int cl_wire_unpack_request(const void *msg, size_t len, struct cl_mirrors *mirrors,
                           struct cl_served_call **out, uint64_t *payload)
{
    const uint8_t *at = msg, *end = (const uint8_t *)msg + len, *p;
    struct cl_served_call *c = sp_host_calloc(1, sizeof *c);
    if (!c)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    int rc = PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (!(p = take(&at, end, sizeof c->head)))
        goto fail;
    memcpy(&c->head, p, sizeof c->head);
    const struct cl_wire_request *h = &c->head;
    if (h->tensor_count > SIMPLER_CALLABLE_MAX_TENSORS || h->scalar_count > SIMPLER_CALLABLE_MAX_ARGS ||
        h->buffer_count > h->tensor_count || h->record_count > h->buffer_count)
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
    struct cl_wire_tensor wt[SIMPLER_CALLABLE_MAX_TENSORS];
    uint64_t buffer_bytes[SIMPLER_CALLABLE_MAX_TENSORS];
    uint32_t mirror_of[SIMPLER_CALLABLE_MAX_TENSORS];
    if (!(p = take(&at, end, h->tensor_count * sizeof *wt)))
        goto fail;
    memcpy(wt, p, h->tensor_count * sizeof *wt);
    if (!check_tensors(h, wt, buffer_bytes, mirror_of))
        goto fail;
    /* The records, checked before anything lands: one per buffer with a
     * sent view, each exactly its sent views' elements. */
    const uint8_t *record_data[SIMPLER_CALLABLE_MAX_TENSORS] = {NULL};
    uint64_t elements = 0;
    for (uint32_t r = 0; r < h->record_count; r++) {
        struct cl_wire_record rec;
        if (!(p = take(&at, end, sizeof rec)))
            goto fail;
        memcpy(&rec, p, sizeof rec);
        if (rec.buffer >= h->buffer_count || record_data[rec.buffer])
            goto fail;
        uint64_t expected = 0;
        for (uint32_t i = 0; i < h->tensor_count; i++)
            if (wt[i].buffer == rec.buffer && wt[i].sent)
                expected += view_bytes(&wt[i].view); /* each within its buffer */
        if (!expected || rec.bytes != expected || !(record_data[rec.buffer] = take(&at, end, rec.bytes)))
            goto fail;
        elements += rec.bytes;
    }
    if (at != end)
        goto fail;
    for (uint32_t i = 0; i < h->tensor_count; i++)
        if (wt[i].sent && !record_data[wt[i].buffer])
            goto fail; /* a sent view without its buffer's record */
    /* Sound: the mirrors, then the elements into them. */
    void *data[SIMPLER_CALLABLE_MAX_TENSORS];
    for (uint32_t b = 0; b < h->buffer_count; b++) {
        if ((rc = cl_mirrors_get(mirrors, mirror_of[b], buffer_bytes[b], &data[b])))
            goto fail;
    }
    for (uint32_t i = 0; i < h->tensor_count; i++) {
        c->tensors[i] = wt[i].view;
        c->tensors[i].addr = (uint64_t)(uintptr_t)data[wt[i].buffer];
    }
    for (uint32_t b = 0; b < h->buffer_count; b++) {
        const uint8_t *from = record_data[b];
        for (uint32_t i = 0; from && i < h->tensor_count; i++)
            if (wt[i].buffer == b && wt[i].sent)
                from += walk_view(&c->tensors[i], (uint8_t *)(uintptr_t)from, false);
    }
    c->args = (struct simpler_args){.tensor_count = h->tensor_count,
                                    .scalar_count = h->scalar_count,
                                    .tensors = h->tensor_count ? c->tensors : NULL,
                                    .scalars = c->scalars};
    *out = c;
    *payload = elements;
    return 0;
fail:
    cl_served_call_free(c);
    return rc;
}

uint64_t cl_wire_output_bytes(const struct simpler_args *args, const uint8_t *directions)
{
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < args->tensor_count; i++)
        if (cl_writes(directions[i]))
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
        if (cl_writes(directions[i]))
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
        if (cl_writes(directions[i]))
            at += walk_view(&args->tensors[i], at, false);
    return 0;
}
