/*
 * test_wire.c — a distributed cluster's request and reply bytes
 * (cluster/wire.c, docs/cluster.md section 9), without MPI: which
 * elements a request carries (its sent views', packed, per buffer), where
 * the serving rank lands them (its mirrors, kept across requests), what a
 * mirror already holds left alone, the reply's outputs, every malformed
 * message refused with INVALID_ARGUMENT and nothing written, every
 * allocation of the unpacking failed in turn.
 *
 * The request of every case: x (64 f32) read twice, as x[::4] and x[0:8]
 * (mirror 10); z (64 f32) read as z[8:24] (mirror 11); y (64 f32) written
 * whole (mirror 12). All three read views sent: 64 + 32 + 64 bytes.
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
    struct cl_mirrors mirrors; /* the serving rank's */
};

static const uint32_t mirror_ids[4] = {10, 10, 11, 12};

/* Packs the request with `sent` (one flag per tensor) into f->msg. */
static uint64_t pack(struct fixture *f, const bool *sent)
{
    uint64_t payload = 0;
    void *msg = NULL;
    free(f->msg);
    assert_int_equal(cl_wire_pack_request(f->call, 5, 1, mirror_ids, sent, &msg, &f->len, &payload),
                     0);
    f->msg = msg;
    return payload;
}

static const bool all_reads[4] = {true, true, true, false};

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
    f->msg = NULL;
    f->mirrors = (struct cl_mirrors){0};
    assert_int_equal(pack(f, all_reads), 64 + 32 + 64); /* x[::4], x[0:8], z[8:24] */
}

static void fixture_free(struct fixture *f)
{
    free(f->msg);
    cl_remote_call_free(f->call);
    cl_mirrors_clear(&f->mirrors);
}

/* Where the parts of the message start. */
static size_t tensor_at(uint32_t i)
{
    return sizeof(struct cl_wire_request) + sizeof(uint64_t) + i * sizeof(struct cl_wire_tensor);
}

static size_t record_at(uint32_t r)
{
    /* record 0 (x) carries 96 bytes after it */
    return tensor_at(4) + r * (sizeof(struct cl_wire_record) + 96);
}

static void *mirror_data(const struct fixture *f, uint32_t id)
{
    for (uint32_t i = 0; i < f->mirrors.count; i++)
        if (f->mirrors.m[i].id == id)
            return f->mirrors.m[i].data;
    fail_msg("mirror %u was not made", id);
    return NULL;
}

static void unpacks_each_view_into_its_mirror(void **state)
{
    (void)state;
    struct fixture f;
    fixture_make(&f);
    struct cl_wire_record r0, r1;
    memcpy(&r0, f.msg + record_at(0), sizeof r0);
    memcpy(&r1, f.msg + record_at(1), sizeof r1);
    assert_int_equal(r0.buffer, 0);
    assert_int_equal(r0.bytes, 96); /* x[::4] then x[0:8] */
    assert_int_equal(r1.buffer, 1);
    assert_int_equal(r1.bytes, 64);
    assert_int_equal(f.len, record_at(1) + sizeof r1 + 64); /* y sends nothing */

    struct cl_served_call *c = NULL;
    uint64_t got = 0;
    assert_int_equal(cl_wire_unpack_request(f.msg, f.len, &f.mirrors, &c, &got), 0);
    assert_int_equal(got, 160);
    assert_int_equal(c->head.callable_id, 9);
    assert_int_equal(c->head.task, 5);
    assert_int_equal(c->head.member, 1);
    assert_int_equal(c->head.worker, 2);
    assert_int_equal(c->head.buffer_count, 3);
    assert_int_equal(c->args.scalar_count, 1);
    assert_int_equal(c->args.scalars[0], 7);
    assert_int_equal(f.mirrors.count, 3);
    const float *px = mirror_data(&f, 10), *pz = mirror_data(&f, 11), *py = mirror_data(&f, 12);
    for (uint32_t i = 0; i < N; i++) {
        float want = (i % 4 == 0 || i < 8) ? f.x[i] : 0.0f; /* only sent elements landed */
        if (memcmp(&px[i], &want, sizeof want) != 0)
            fail_msg("x[%u] in its mirror: %g, not %g", i, (double)px[i], (double)want);
        want = (i >= 8 && i < 24) ? f.z[i] : 0.0f;
        if (memcmp(&pz[i], &want, sizeof want) != 0)
            fail_msg("z[%u] in its mirror: %g, not %g", i, (double)pz[i], (double)want);
        assert_true(py[i] == 0.0f); /* an output travels no bytes out */
    }
    assert_int_equal(c->tensors[0].addr, (uint64_t)(uintptr_t)px);
    assert_int_equal(c->tensors[1].addr, (uint64_t)(uintptr_t)px);
    assert_int_equal(c->tensors[2].addr, (uint64_t)(uintptr_t)pz);
    assert_int_equal(c->tensors[3].addr, (uint64_t)(uintptr_t)py);

    /* The reply: y's elements, back into rank 0's y. */
    float *sy = (float *)py;
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

/* A later request to the same rank: a view not sent (its rank holds it)
 * travels nothing, and the mirror's bytes there stay as they were. */
static void a_held_view_travels_nothing_and_is_left_alone(void **state)
{
    (void)state;
    struct fixture f;
    fixture_make(&f);
    struct cl_served_call *c = NULL;
    uint64_t got = 0;
    assert_int_equal(cl_wire_unpack_request(f.msg, f.len, &f.mirrors, &c, &got), 0);
    cl_served_call_free(c);
    float *px = mirror_data(&f, 10);
    for (uint32_t i = 1; i < 8; i++)
        if (i % 4)
            px[i] = -1.0f; /* what this rank holds of x[0:8] now */
    const bool held[4] = {true, false, true, false};
    assert_int_equal(pack(&f, held), 64 + 64); /* x[::4] and z[8:24] only */
    assert_int_equal(cl_wire_unpack_request(f.msg, f.len, &f.mirrors, &c, &got), 0);
    assert_int_equal(got, 128);
    assert_int_equal(f.mirrors.count, 3); /* the same mirrors, none made again */
    assert_ptr_equal(px, mirror_data(&f, 10));
    for (uint32_t i = 0; i < 8; i++) {
        float want = i % 4 ? -1.0f : f.x[i];
        if (px[i] != want)
            fail_msg("x[%u] in its mirror: %g, not %g (a held view was overwritten)", i,
                     (double)px[i], (double)want);
    }
    cl_served_call_free(c);
    const bool none[4] = {false, false, false, false};
    assert_int_equal(pack(&f, none), 0);
    assert_int_equal(f.len, tensor_at(4)); /* no record at all */
    assert_int_equal(cl_wire_unpack_request(f.msg, f.len, &f.mirrors, &c, &got), 0);
    assert_int_equal(got, 0);
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
    struct cl_mirrors mirrors = {0};
    uint64_t got = 0;
    int rc = cl_wire_unpack_request(m, f->len, &mirrors, &c, &got);
    if (rc != PTO_RUNTIME_ERR_INVALID_ARGUMENT)
        fail_msg("%s: unpack returned %d, not INVALID_ARGUMENT", what, rc);
    assert_null(c);
    assert_int_equal(mirrors.count, 0); /* refused before any mirror was made */
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
        if (cl_wire_unpack_request(f.msg, len, &f.mirrors, &c, &got) !=
            PTO_RUNTIME_ERR_INVALID_ARGUMENT)
            fail_msg("a request cut to %zu of %zu bytes was not refused", len, f.len);
        assert_null(c);
        assert_int_equal(f.mirrors.count, 0);
    }
    uint8_t *longer = malloc(f.len + 1);
    assert_non_null(longer);
    memcpy(longer, f.msg, f.len);
    longer[f.len] = 0;
    assert_int_equal(cl_wire_unpack_request(longer, f.len + 1, &f.mirrors, &c, &got),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* a byte after the last record */
    free(longer);

    uint32_t u;
    u = SIMPLER_CALLABLE_MAX_TENSORS + 1;
    refused_with(&f, offsetof(struct cl_wire_request, tensor_count), &u, sizeof u,
                 "more tensors than a callable has");
    u = 5;
    refused_with(&f, offsetof(struct cl_wire_request, buffer_count), &u, sizeof u,
                 "more buffers than tensors");
    u = 4;
    refused_with(&f, offsetof(struct cl_wire_request, buffer_count), &u, sizeof u,
                 "a buffer id no tensor names");
    u = 4;
    refused_with(&f, offsetof(struct cl_wire_request, record_count), &u, sizeof u,
                 "more records than buffers");
    u = 3;
    refused_with(&f, tensor_at(0) + offsetof(struct cl_wire_tensor, buffer), &u, sizeof u,
                 "a tensor naming a buffer id past the request's");
    u = 2;
    refused_with(&f, tensor_at(0) + offsetof(struct cl_wire_tensor, sent), &u, sizeof u,
                 "a sent flag neither 0 nor 1");
    u = 0;
    refused_with(&f, tensor_at(0) + offsetof(struct cl_wire_tensor, sent), &u, sizeof u,
                 "a record of x larger than its sent views (x[::4] not sent)");
    u = 1;
    refused_with(&f, tensor_at(3) + offsetof(struct cl_wire_tensor, sent), &u, sizeof u,
                 "a sent view (y) whose buffer has no record");
    u = 99;
    refused_with(&f, tensor_at(1) + offsetof(struct cl_wire_tensor, mirror), &u, sizeof u,
                 "two views of one buffer naming two mirrors");
    u = 10;
    refused_with(&f, tensor_at(2) + offsetof(struct cl_wire_tensor, mirror), &u, sizeof u,
                 "two buffers of one request naming one mirror");
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
    u = 7;
    refused_with(&f, record_at(0) + offsetof(struct cl_wire_record, buffer), &u, sizeof u,
                 "a record of a buffer id past the request's");
    u = 0;
    refused_with(&f, record_at(1) + offsetof(struct cl_wire_record, buffer), &u, sizeof u,
                 "two records of one buffer");
    w = 95;
    refused_with(&f, record_at(0) + offsetof(struct cl_wire_record, bytes), &w, sizeof w,
                 "a record one byte short of its views");
    w = UINT64_MAX;
    refused_with(&f, record_at(1) + offsetof(struct cl_wire_record, bytes), &w, sizeof w,
                 "a record longer than the message");

    /* A mirror already made with another size: refused, nothing written. */
    assert_int_equal(cl_wire_unpack_request(f.msg, f.len, &f.mirrors, &c, &got), 0);
    cl_served_call_free(c);
    float *pz = mirror_data(&f, 11);
    memset(pz, 0, N * sizeof(float));
    uint8_t *m = malloc(f.len);
    assert_non_null(m);
    memcpy(m, f.msg, f.len);
    w = N * sizeof(float) * 2;
    memcpy(m + tensor_at(3) + offsetof(struct cl_wire_tensor, view) +
               offsetof(struct simpler_tensor, buffer_bytes),
           &w, sizeof w);
    c = NULL;
    assert_int_equal(cl_wire_unpack_request(m, f.len, &f.mirrors, &c, &got),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_null(c);
    for (uint32_t i = 0; i < N; i++)
        assert_true(pz[i] == 0.0f); /* checked before any element landed */
    free(m);
    fixture_free(&f);
}

static void every_allocation_of_unpacking_fails_in_turn(void **state)
{
    (void)state;
    struct fixture f;
    fixture_make(&f);
    struct cl_served_call *c = NULL;
    uint64_t got = 0, before = sp_host_alloc_count();
    assert_int_equal(cl_wire_unpack_request(f.msg, f.len, &f.mirrors, &c, &got), 0);
    uint64_t attempts = sp_host_alloc_count() - before;
    cl_served_call_free(c);
    cl_mirrors_clear(&f.mirrors);
    /* the call, its scalars, three mirrors and the mirror table */
    assert_int_equal(attempts, 1 + 1 + 3 + 1);
    for (uint64_t n = 1; n <= attempts; n++) {
        c = NULL;
        sp_host_fault_inject(n);
        int rc = cl_wire_unpack_request(f.msg, f.len, &f.mirrors, &c, &got);
        sp_host_fault_inject(0);
        if (rc != PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY)
            fail_msg("allocation %llu failed: unpack returned %d, not OUT_OF_HOST_MEMORY",
                     (unsigned long long)n, rc);
        assert_null(c); /* what was allocated before is freed: LeakSanitizer checks */
        /* the retry, with the mirrors made before the failure */
        assert_int_equal(cl_wire_unpack_request(f.msg, f.len, &f.mirrors, &c, &got), 0);
        assert_int_equal(f.mirrors.count, 3);
        const float *px = mirror_data(&f, 10);
        assert_true(px[4] == f.x[4] && px[7] == f.x[7]);
        cl_served_call_free(c);
        cl_mirrors_clear(&f.mirrors);
    }
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unpacks_each_view_into_its_mirror),
        cmocka_unit_test(a_held_view_travels_nothing_and_is_left_alone),
        cmocka_unit_test(refuses_every_malformed_request),
        cmocka_unit_test(every_allocation_of_unpacking_fails_in_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
