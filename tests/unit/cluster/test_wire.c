/*
 * test_wire.c — a distributed cluster's request and reply bytes
 * (cluster/wire.c, docs/cluster.md section 9), without MPI: what a request
 * carries of each read buffer (its span, or its read views' elements
 * packed when fewer), where the serving rank lands them, the reply's
 * outputs, and every malformed message refused with INVALID_ARGUMENT,
 * nothing read or written outside it (ASan watches), every allocation of
 * the unpacking failed in turn.
 *
 * The request of every case: x (64 f32) read twice, as x[::4] and x[0:8]
 * (96 bytes of elements against a 244-byte span: packed); z (64 f32) read
 * as z[8:24] (64 bytes either way: the span); y (64 f32) written whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cluster/wire.h"
#include "common/host_alloc.h"

#define N 64

struct fixture {
    float x[N], y[N], z[N];
    struct simpler_tensor t[4];
    uint8_t dirs[SIMPLER_CALLABLE_MAX_TENSORS];
    struct cl_remote_call *call;
    uint8_t *msg;
    size_t len;
};

static void fixture_make(struct fixture *f)
{
    struct simpler_tensor x, z;
    for (uint32_t i = 0; i < N; i++) {
        f->x[i] = (float)i + 0.5f;
        f->z[i] = (float)i * -2.0f;
        f->y[i] = 0.0f;
    }
    assert_int_equal(simpler_tensor_make_1d(&x, (uint64_t)(uintptr_t)f->x, N, SIMPLER_DTYPE_F32,
                                            SIMPLER_MEM_HOST),
                     0);
    assert_int_equal(simpler_tensor_make_1d(&z, (uint64_t)(uintptr_t)f->z, N, SIMPLER_DTYPE_F32,
                                            SIMPLER_MEM_HOST),
                     0);
    assert_int_equal(simpler_tensor_slice(&f->t[0], &x, 0, 0, N, 4), 0);
    assert_int_equal(simpler_tensor_slice(&f->t[1], &x, 0, 0, 8, 1), 0);
    assert_int_equal(simpler_tensor_slice(&f->t[2], &z, 0, 8, 24, 1), 0);
    assert_int_equal(simpler_tensor_make_1d(&f->t[3], (uint64_t)(uintptr_t)f->y, N,
                                            SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST),
                     0);
    memset(f->dirs, 0, sizeof f->dirs);
    f->dirs[0] = f->dirs[1] = f->dirs[2] = SIMPLER_DIR_IN;
    f->dirs[3] = SIMPLER_DIR_OUT;
    uint64_t scalar = 7;
    struct simpler_args args = {.tensor_count = 4, .scalar_count = 1, .tensors = f->t,
                                .scalars = &scalar};
    assert_int_equal(cl_remote_call_make(9, 2, &args, NULL, f->dirs, &f->call), 0);
    uint64_t span_bytes = 0;
    void *msg = NULL;
    assert_int_equal(cl_wire_pack_request(f->call, 5, 1, &msg, &f->len, &span_bytes), 0);
    f->msg = msg;
    assert_int_equal(span_bytes, 96 + 64); /* x packed (96 < 244), z's span (64) */
}

static void fixture_free(struct fixture *f)
{
    free(f->msg);
    cl_remote_call_free(f->call);
}

/* Where the parts of the message start. */
static size_t tensor_at(uint32_t i)
{
    return sizeof(struct cl_wire_request) + sizeof(uint64_t) + i * sizeof(struct cl_wire_tensor);
}

static size_t span_at(uint32_t s)
{
    /* span 0 (x, packed) carries 96 bytes after its record */
    return tensor_at(4) + s * (sizeof(struct cl_wire_span) + 96);
}

static void unpacks_each_buffer_where_it_was(void **state)
{
    (void)state;
    struct fixture f;
    fixture_make(&f);
    struct cl_wire_span s0, s1;
    memcpy(&s0, f.msg + span_at(0), sizeof s0);
    memcpy(&s1, f.msg + span_at(1), sizeof s1);
    assert_int_equal(s0.packed, 1); /* a span would send 244 bytes */
    assert_int_equal(s0.bytes, 96);
    assert_int_equal(s1.packed, 0);
    assert_int_equal(s1.offset, 32);
    assert_int_equal(s1.bytes, 64);
    assert_int_equal(f.len, span_at(2) - 96 + 64); /* nothing after z's span */

    struct cl_served_call *c = NULL;
    uint64_t got = 0;
    assert_int_equal(cl_wire_unpack_request(f.msg, f.len, &c, &got), 0);
    assert_int_equal(got, 160);
    assert_int_equal(c->head.callable_id, 9);
    assert_int_equal(c->head.task, 5);
    assert_int_equal(c->head.member, 1);
    assert_int_equal(c->head.worker, 2);
    assert_int_equal(c->buffer_count, 3);
    assert_int_equal(c->args.scalar_count, 1);
    assert_int_equal(c->args.scalars[0], 7);
    const float *px = c->buffers[0], *pz = c->buffers[1], *py = c->buffers[2];
    for (uint32_t i = 0; i < N; i++) {
        float want = (i % 4 == 0 || i < 8) ? f.x[i] : 0.0f; /* only read elements landed */
        if (memcmp(&px[i], &want, sizeof want) != 0)
            fail_msg("x[%u] on the serving rank: %g, not %g", i, (double)px[i], (double)want);
        want = (i >= 8 && i < 24) ? f.z[i] : 0.0f;
        if (memcmp(&pz[i], &want, sizeof want) != 0)
            fail_msg("z[%u] on the serving rank: %g, not %g", i, (double)pz[i], (double)want);
        assert_true(py[i] == 0.0f); /* an output travels no bytes out */
    }
    assert_int_equal(c->tensors[0].addr, (uint64_t)(uintptr_t)c->buffers[0]);
    assert_int_equal(c->tensors[1].addr, (uint64_t)(uintptr_t)c->buffers[0]);
    assert_int_equal(c->tensors[3].addr, (uint64_t)(uintptr_t)c->buffers[2]);

    /* The reply: y's elements, back into rank 0's y. */
    float *sy = c->buffers[2];
    for (uint32_t i = 0; i < N; i++)
        sy[i] = (float)i * 3.0f;
    void *reply = NULL;
    size_t reply_len = 0;
    assert_int_equal(cl_wire_pack_reply(5, 1, 0, &c->args, f.dirs, &reply, &reply_len), 0);
    assert_int_equal(reply_len, sizeof(struct cl_wire_reply) + N * sizeof(float));
    struct cl_wire_reply head;
    assert_int_equal(cl_wire_reply_head(reply, reply_len, &head), 0);
    assert_int_equal(head.status, 0);
    assert_int_equal(cl_wire_reply_head(reply, reply_len - 1, &head),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(cl_wire_unpack_outputs(reply, reply_len, &f.call->args, f.dirs), 0);
    for (uint32_t i = 0; i < N; i++)
        assert_true(f.y[i] == (float)i * 3.0f);
    free(reply);
    cl_served_call_free(c);
    fixture_free(&f);
}

/* A copy of the message with `bytes` at `offset` replaced, unpacked:
 * INVALID_ARGUMENT, nothing returned. */
static void refused_with(const struct fixture *f, size_t offset, const void *bytes, size_t n,
                         const char *what)
{
    uint8_t *m = malloc(f->len);
    assert_non_null(m);
    memcpy(m, f->msg, f->len);
    memcpy(m + offset, bytes, n);
    struct cl_served_call *c = NULL;
    uint64_t got = 0;
    int rc = cl_wire_unpack_request(m, f->len, &c, &got);
    if (rc != PTO_RUNTIME_ERR_INVALID_ARGUMENT)
        fail_msg("%s: unpack returned %d, not INVALID_ARGUMENT", what, rc);
    assert_null(c);
    free(m);
}

static void refuses_every_malformed_request(void **state)
{
    (void)state;
    struct fixture f;
    fixture_make(&f);
    struct cl_served_call *c = NULL;
    uint64_t got = 0;
    for (size_t len = 0; len < f.len; len++) {
        if (cl_wire_unpack_request(f.msg, len, &c, &got) != PTO_RUNTIME_ERR_INVALID_ARGUMENT)
            fail_msg("a request cut to %zu of %zu bytes was not refused", len, f.len);
        assert_null(c);
    }
    uint8_t *longer = malloc(f.len + 1);
    assert_non_null(longer);
    memcpy(longer, f.msg, f.len);
    longer[f.len] = 0;
    assert_int_equal(cl_wire_unpack_request(longer, f.len + 1, &c, &got),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* a byte after the last span */
    free(longer);

    uint32_t u;
    u = SIMPLER_CALLABLE_MAX_TENSORS + 1;
    refused_with(&f, offsetof(struct cl_wire_request, tensor_count), &u, sizeof u,
                 "more tensors than a callable has");
    u = 5;
    refused_with(&f, offsetof(struct cl_wire_request, buffer_count), &u, sizeof u,
                 "more buffers than tensors");
    u = 4;
    refused_with(&f, offsetof(struct cl_wire_request, span_count), &u, sizeof u,
                 "more spans than buffers");
    u = 3;
    refused_with(&f, tensor_at(0) + offsetof(struct cl_wire_tensor, buffer), &u, sizeof u,
                 "a tensor naming a buffer id past the request's");
    u = 2;
    refused_with(&f, tensor_at(0) + offsetof(struct cl_wire_tensor, read), &u, sizeof u,
                 "a read flag neither 0 nor 1");
    u = 0;
    refused_with(&f, tensor_at(0) + offsetof(struct cl_wire_tensor, read), &u, sizeof u,
                 "a packed record of x larger than its read views (x[::4] not read)");
    uint64_t w = N * sizeof(float) * 2;
    refused_with(&f,
                 tensor_at(1) + offsetof(struct cl_wire_tensor, view) +
                     offsetof(struct simpler_tensor, buffer_bytes),
                 &w, sizeof w, "two views of one buffer disagreeing on its size");
    w = 0;
    refused_with(&f,
                 tensor_at(2) + offsetof(struct cl_wire_tensor, view) +
                     offsetof(struct simpler_tensor, buffer_bytes),
                 &w, sizeof w, "a buffer of no bytes");
    w = N + 1;
    refused_with(&f,
                 tensor_at(3) + offsetof(struct cl_wire_tensor, view) +
                     offsetof(struct simpler_tensor, shape),
                 &w, sizeof w, "a view past the end of its buffer");
    u = 2;
    refused_with(&f, span_at(0) + offsetof(struct cl_wire_span, packed), &u, sizeof u,
                 "a packed flag neither 0 nor 1");
    u = 7;
    refused_with(&f, span_at(0) + offsetof(struct cl_wire_span, buffer), &u, sizeof u,
                 "a span of a buffer id past the request's");
    w = 4;
    refused_with(&f, span_at(0) + offsetof(struct cl_wire_span, offset), &w, sizeof w,
                 "a packed record not at offset 0");
    w = N * sizeof(float) - 32;
    refused_with(&f, span_at(1) + offsetof(struct cl_wire_span, offset), &w, sizeof w,
                 "a span running past the end of its buffer");
    w = UINT64_MAX;
    refused_with(&f, span_at(1) + offsetof(struct cl_wire_span, offset), &w, sizeof w,
                 "a span offset past the buffer");
    refused_with(&f, span_at(1) + offsetof(struct cl_wire_span, bytes), &w, sizeof w,
                 "a span longer than the message");
    fixture_free(&f);
}

static void every_allocation_of_unpacking_fails_in_turn(void **state)
{
    (void)state;
    struct fixture f;
    fixture_make(&f);
    struct cl_served_call *c = NULL;
    uint64_t got = 0, before = sp_host_alloc_count();
    assert_int_equal(cl_wire_unpack_request(f.msg, f.len, &c, &got), 0);
    uint64_t attempts = sp_host_alloc_count() - before;
    cl_served_call_free(c);
    assert_int_equal(attempts, 1 + 1 + 1 + 3); /* the call, scalars, buffer table, 3 buffers */
    for (uint64_t n = 1; n <= attempts; n++) {
        c = NULL;
        sp_host_fault_inject(n);
        int rc = cl_wire_unpack_request(f.msg, f.len, &c, &got);
        sp_host_fault_inject(0);
        if (rc != PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY)
            fail_msg("allocation %llu failed: unpack returned %d, not OUT_OF_HOST_MEMORY",
                     (unsigned long long)n, rc);
        assert_null(c); /* what was allocated before is freed: LeakSanitizer checks */
        assert_int_equal(cl_wire_unpack_request(f.msg, f.len, &c, &got), 0); /* the retry */
        cl_served_call_free(c);
    }
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unpacks_each_buffer_where_it_was),
        cmocka_unit_test(refuses_every_malformed_request),
        cmocka_unit_test(every_allocation_of_unpacking_fails_in_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
