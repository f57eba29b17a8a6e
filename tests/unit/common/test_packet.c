/*
 * test_packet.c — common/packet.c: the kernel-mode invocation packet's
 * layout, its encoder's argument checks, and every rule the device-side
 * decoder and argument check refuse a packet by.
 *
 * Owns: the codec's own rules, byte by byte. What a launch does with a
 * refused packet is tested with kernel mode. Touches no device: the
 * tensors' addresses are numbers nobody dereferences.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/packet.h"
#include "simpler/simpler.h"
#include "simpler/callable.h"
#include "simpler/status.h"

#define BAD PTO_RUNTIME_ERR_INVALID_ARGUMENT
#define CONTEXT_GEN UINT64_C(0x1122334455667788)
#define SLOT_GEN UINT64_C(0x99aabbccddeeff01)
#define CALLABLE 7

/* The sample callable: IN, SCALAR, OUT, INOUT, SCALAR — 3 tensors, 2 scalars. */
static const uint8_t sample_dirs[] = {SIMPLER_DIR_IN, SIMPLER_DIR_SCALAR, SIMPLER_DIR_OUT,
                                      SIMPLER_DIR_INOUT, SIMPLER_DIR_SCALAR};
static const struct sp_packet_signature sample_sig = {5, sample_dirs};
#define SAMPLE_BYTES (48 + 3 * 128 + 2 * 8)

/* An 8-aligned packet buffer with room past the largest packet, so an
 * "oversized" length still names bytes that exist. */
static _Alignas(8) unsigned char buf[SP_PACKET_MAX_BYTES + 64];

/* A 1-D f32 device tensor of `n` elements at `addr`, distinct per `tag`
 * (version and producer), so a copy that mixes descriptors up shows. */
static struct simpler_tensor device_tensor(uint64_t addr, uint64_t n, uint32_t tag)
{
    struct simpler_tensor t;
    assert_int_equal(simpler_tensor_make_1d(&t, addr, n, SIMPLER_DTYPE_F32, SIMPLER_MEM_DEVICE), 0);
    t.version = tag;
    return t;
}

struct sample {
    struct simpler_tensor tensors[3];
    uint64_t scalars[2];
    struct simpler_args args;
};

static void sample_init(struct sample *s)
{
    s->tensors[0] = device_tensor(0x100000, 16, 1);
    s->tensors[1] = device_tensor(0x200000, 32, 2);
    s->tensors[2] = device_tensor(0x300000, 64, 3);
    s->scalars[0] = UINT64_C(0xdeadbeefcafef00d);
    s->scalars[1] = UINT64_MAX;
    s->args = (struct simpler_args){3, 2, s->tensors, s->scalars};
}

/* Encodes the sample (or `s` as changed by the caller) into buf. */
static size_t encode(const struct sample *s)
{
    size_t written = 0;
    memset(buf, 0xAA, sizeof buf);
    assert_int_equal(sp_packet_encode(buf, sizeof buf, CALLABLE, CONTEXT_GEN, SLOT_GEN, &s->args,
                                      &written), 0);
    return written;
}

static size_t encode_sample(void)
{
    struct sample s;
    sample_init(&s);
    return encode(&s);
}

static void put_u32(size_t offset, uint32_t v) { memcpy(buf + offset, &v, sizeof v); }
static void put_u64(size_t offset, uint64_t v) { memcpy(buf + offset, &v, sizeof v); }
static uint32_t get_u32(size_t offset)
{
    uint32_t v;
    memcpy(&v, buf + offset, sizeof v);
    return v;
}
static uint64_t get_u64(size_t offset)
{
    uint64_t v;
    memcpy(&v, buf + offset, sizeof v);
    return v;
}

/* Decodes `bytes` of buf and checks that a refusal answers INVALID_ARGUMENT
 * and leaves the view alone; returns the reason. */
static enum sp_packet_reason decode_reason(size_t bytes)
{
    struct sp_packet_view v, before;
    memset(&v, 0x5A, sizeof v);
    before = v;
    enum sp_packet_reason reason = sp_packet_header_reason(buf, bytes, &v);
    int rc = sp_packet_decode_header(buf, bytes, &v);
    if (reason == SP_PACKET_OK) {
        assert_int_equal(rc, 0);
    } else {
        assert_int_equal(rc, BAD);
        assert_memory_equal(&v, &before, sizeof v); /* differs: a refusal wrote its output */
    }
    return reason;
}

/* Decodes the (valid) packet in buf and checks its args against `sig`;
 * returns the reason, after checking the public answer agrees. */
static enum sp_packet_reason args_reason(size_t bytes, const struct sp_packet_signature *sig)
{
    struct sp_packet_view v;
    assert_int_equal(sp_packet_decode_header(buf, bytes, &v), 0);
    enum sp_packet_reason reason = sp_packet_args_reason(&v, sig);
    assert_int_equal(sp_packet_check_args(&v, sig), reason == SP_PACKET_OK ? 0 : BAD);
    return reason;
}

/* ----------------------------------------------------------------- sizes */

static void packet_bytes_follow_the_size_rule_and_refuse_counts_over_the_limits(void **state)
{
    (void)state;
    assert_int_equal(sp_packet_bytes(0, 0), 48);           /* header + binding */
    assert_int_equal(sp_packet_bytes(3, 2), SAMPLE_BYTES); /* 448 */
    assert_int_equal(sp_packet_bytes(1, 0), 176);          /* 48 + 128: a descriptor is 128 bytes */
    assert_int_equal(sp_packet_bytes(0, 1), 56);           /* 48 + 8: a scalar is one word */
    assert_int_equal(sp_packet_bytes(SIMPLER_ORCH_MAX_TENSORS, SIMPLER_ORCH_MAX_SCALARS),
                     SP_PACKET_MAX_BYTES);
    assert_int_equal(SP_PACKET_MAX_BYTES, 8752); /* the static limits moved */
    assert_int_equal(sp_packet_bytes(SIMPLER_ORCH_MAX_TENSORS + 1, 0), 0); /* a size: 65 tensors allowed */
    assert_int_equal(sp_packet_bytes(0, SIMPLER_ORCH_MAX_SCALARS + 1), 0);
    assert_int_equal(sp_packet_bytes(UINT32_MAX, UINT32_MAX), 0); /* nonzero: a product wrapped */
}

/* ------------------------------------------------------------ round trip */

static void round_trip_places_every_field_at_its_offset_and_decodes_it_back(void **state)
{
    (void)state;
    struct sample s;
    sample_init(&s);
    size_t bytes = encode(&s);
    assert_int_equal(bytes, SAMPLE_BYTES);

    assert_int_equal(get_u32(0), SP_PACKET_MODE_KERNEL);
    assert_int_equal(get_u32(4), CALLABLE);
    assert_int_equal(get_u64(8), SAMPLE_BYTES - 32); /* 448: payload counted the header */
    assert_int_equal(get_u32(16), 3);
    assert_int_equal(get_u32(20), 2);
    assert_int_equal(get_u32(24), 0); /* 0xAAAAAAAA: the header was not zero-filled */
    assert_int_equal(get_u32(28), 0);
    assert_int_equal(get_u64(32), CONTEXT_GEN);
    assert_int_equal(get_u64(40), SLOT_GEN); /* CONTEXT_GEN: the binding's fields swapped */
    assert_memory_equal(buf + 48, s.tensors, sizeof s.tensors);
    assert_memory_equal(buf + 48 + 3 * 128, s.scalars, sizeof s.scalars);
    assert_int_equal(buf[SAMPLE_BYTES], 0xAA); /* 0: encode wrote past the packet */

    struct sp_packet_view v;
    assert_int_equal(sp_packet_decode_header(buf, bytes, &v), 0);
    assert_int_equal(v.callable_id, CALLABLE);
    assert_int_equal(v.context_generation, CONTEXT_GEN);
    assert_int_equal(v.slot_generation, SLOT_GEN);
    assert_int_equal(v.tensor_count, 3);
    assert_int_equal(v.scalar_count, 2);
    assert_ptr_equal(v.tensors, buf + 48); /* a copy: the view must point into the packet */
    assert_ptr_equal(v.scalars, buf + 48 + 3 * 128);
    assert_int_equal(v.tensors[2].version, 3);
    assert_int_equal(v.tensors[2].addr, 0x300000);
    assert_int_equal(v.scalars[0], UINT64_C(0xdeadbeefcafef00d));
    assert_int_equal(v.scalars[1], UINT64_MAX);
    assert_int_equal(sp_packet_check_args(&v, &sample_sig), 0);
}

static void a_packet_without_arguments_is_its_header_and_binding(void **state)
{
    (void)state;
    struct simpler_args none = {0, 0, NULL, NULL};
    size_t written = 0;
    memset(buf, 0xAA, sizeof buf);
    assert_int_equal(sp_packet_encode(buf, 48, 0, 1, 1, &none, &written), 0); /* id 0 is valid */
    assert_int_equal(written, 48);
    assert_int_equal(get_u64(8), 16); /* the binding is all the payload */
    assert_int_equal(buf[48], 0xAA);

    struct sp_packet_view v;
    assert_int_equal(sp_packet_decode_header(buf, 48, &v), 0);
    assert_int_equal(v.callable_id, 0);
    assert_int_equal(v.tensor_count, 0);
    assert_int_equal(v.scalar_count, 0);
    assert_null(v.tensors); /* non-NULL: a pointer to bytes the packet does not have */
    assert_null(v.scalars);
    struct sp_packet_signature empty = {0, NULL};
    assert_int_equal(sp_packet_check_args(&v, &empty), 0);
    assert_int_equal(sp_packet_check_args(&v, &sample_sig), BAD); /* 0: counts not compared */
}

static void a_packet_at_the_largest_counts_is_exactly_max_bytes_and_round_trips(void **state)
{
    (void)state;
    static struct simpler_tensor tensors[SIMPLER_ORCH_MAX_TENSORS];
    uint64_t scalars[SIMPLER_ORCH_MAX_SCALARS];
    uint8_t dirs[SIMPLER_ORCH_MAX_TENSORS + SIMPLER_ORCH_MAX_SCALARS];
    for (uint32_t i = 0; i < SIMPLER_ORCH_MAX_TENSORS; i++) {
        tensors[i] = device_tensor(0x1000000 + (uint64_t)i * 0x10000, 8 + i, i);
        dirs[2 * i] = (uint8_t)(SIMPLER_DIR_IN + i % 3);
        dirs[2 * i + 1] = SIMPLER_DIR_SCALAR;
    }
    for (uint32_t i = 0; i < SIMPLER_ORCH_MAX_SCALARS; i++)
        scalars[i] = UINT64_C(0x0101010101010101) * i;
    struct simpler_args args = {SIMPLER_ORCH_MAX_TENSORS, SIMPLER_ORCH_MAX_SCALARS, tensors, scalars};

    size_t written = 0;
    memset(buf, 0xAA, sizeof buf);
    assert_int_equal(sp_packet_encode(buf, SP_PACKET_MAX_BYTES - 1, 1, 1, 1, &args, &written), BAD);
    assert_int_equal(written, 0);
    assert_int_equal(sp_packet_encode(buf, SP_PACKET_MAX_BYTES, 1, 1, 1, &args, &written), 0);
    assert_int_equal(written, SP_PACKET_MAX_BYTES);
    assert_int_equal(buf[SP_PACKET_MAX_BYTES], 0xAA); /* 0: written past the largest packet */
    assert_memory_equal(buf + SP_PACKET_MAX_BYTES - sizeof scalars, scalars, sizeof scalars);

    struct sp_packet_view v;
    assert_int_equal(sp_packet_decode_header(buf, SP_PACKET_MAX_BYTES, &v), 0);
    assert_int_equal(v.tensor_count, SIMPLER_ORCH_MAX_TENSORS);
    assert_int_equal(v.scalar_count, SIMPLER_ORCH_MAX_SCALARS);
    assert_int_equal(v.tensors[63].version, 63);
    assert_int_equal(v.scalars[63], UINT64_C(0x0101010101010101) * 63);
    struct sp_packet_signature sig = {sizeof dirs, dirs}; /* 128 = SIMPLER_CALLABLE_MAX_ARGS */
    assert_int_equal(sp_packet_check_args(&v, &sig), 0);

    /* An accepted packet re-encodes to the same bytes. */
    static _Alignas(8) unsigned char again[SP_PACKET_MAX_BYTES];
    struct simpler_args back = {v.tensor_count, v.scalar_count, v.tensors, v.scalars};
    size_t again_bytes = 0;
    assert_int_equal(sp_packet_encode(again, sizeof again, v.callable_id, v.context_generation,
                                      v.slot_generation, &back, &again_bytes), 0);
    assert_int_equal(again_bytes, SP_PACKET_MAX_BYTES);
    assert_memory_equal(again, buf, SP_PACKET_MAX_BYTES);
}

/* -------------------------------------------------------- encode refuses */

/* Runs one encode that must fail and checks it wrote nothing. */
static void expect_encode_refused(void *out, size_t capacity, int32_t id, uint64_t context,
                                  uint64_t slot, const struct simpler_args *args, size_t *written)
{
    size_t sentinel = 12345;
    memset(buf, 0xAA, sizeof buf);
    if (written)
        *written = sentinel;
    assert_int_equal(sp_packet_encode(out, capacity, id, context, slot, args, written), BAD);
    if (written)
        assert_int_equal(*written, sentinel); /* changed: a refusal reported a size */
    for (size_t i = 0; i < SAMPLE_BYTES; i++)
        assert_int_equal(buf[i], 0xAA); /* 0: a refusal zero-filled the header anyway */
}

static void encode_refuses_each_bad_argument_and_writes_nothing(void **state)
{
    (void)state;
    struct sample s;
    sample_init(&s);
    size_t written;
    struct simpler_args a;

    expect_encode_refused(NULL, sizeof buf, CALLABLE, 1, 1, &s.args, &written);
    expect_encode_refused(buf, sizeof buf, CALLABLE, 1, 1, NULL, &written);
    expect_encode_refused(buf, sizeof buf, CALLABLE, 1, 1, &s.args, NULL);
    a = s.args;
    a.tensors = NULL; /* with 3 tensors: nothing to copy them from */
    expect_encode_refused(buf, sizeof buf, CALLABLE, 1, 1, &a, &written);
    a = s.args;
    a.scalars = NULL;
    expect_encode_refused(buf, sizeof buf, CALLABLE, 1, 1, &a, &written);
    a = s.args;
    a.tensor_count = SIMPLER_ORCH_MAX_TENSORS + 1; /* the tensors array is never read then */
    expect_encode_refused(buf, sizeof buf, CALLABLE, 1, 1, &a, &written);
    a = s.args;
    a.scalar_count = SIMPLER_ORCH_MAX_SCALARS + 1;
    expect_encode_refused(buf, sizeof buf, CALLABLE, 1, 1, &a, &written);
    expect_encode_refused(buf, SAMPLE_BYTES - 1, CALLABLE, 1, 1, &s.args, &written);
    expect_encode_refused(buf, 0, CALLABLE, 1, 1, &s.args, &written);
    expect_encode_refused(buf, sizeof buf, -1, 1, 1, &s.args, &written);
    expect_encode_refused(buf, sizeof buf, INT32_MIN, 1, 1, &s.args, &written);
    expect_encode_refused(buf, sizeof buf, CALLABLE, 0, 1, &s.args, &written); /* no context */
    expect_encode_refused(buf, sizeof buf, CALLABLE, 1, 0, &s.args, &written); /* no slot */

    /* The edges that are valid: exact capacity, the largest id, NULL
     * pointers with zero counts. */
    assert_int_equal(sp_packet_encode(buf, SAMPLE_BYTES, INT32_MAX, UINT64_MAX, UINT64_MAX,
                                      &s.args, &written), 0);
    assert_int_equal(written, SAMPLE_BYTES);
    a = (struct simpler_args){0, 2, NULL, s.scalars};
    assert_int_equal(sp_packet_encode(buf, sizeof buf, 0, 1, 1, &a, &written), 0);
    assert_int_equal(written, 48 + 16);
}

static void encode_copies_tensors_it_does_not_judge(void **state)
{
    (void)state;
    struct sample s;
    sample_init(&s);
    s.tensors[1].address_space = SIMPLER_MEM_HOST;
    s.tensors[1].addr = 0;
    s.tensors[1].ndims = 0;
    size_t bytes = encode(&s); /* asserts 0: encode judged a tensor (the launch's job) */
    assert_memory_equal(buf + 48 + 128, &s.tensors[1], 128);
    assert_int_equal(args_reason(bytes, &sample_sig), SP_PACKET_TENSOR_NOT_DEVICE);
}

/* -------------------------------------------------------- decode refuses */

static void decode_refuses_null_misaligned_and_short_packets(void **state)
{
    (void)state;
    size_t bytes = encode_sample();
    struct sp_packet_view v;
    assert_int_equal(sp_packet_header_reason(NULL, bytes, &v), SP_PACKET_NULL_ARGUMENT);
    assert_int_equal(sp_packet_decode_header(NULL, bytes, &v), BAD);
    assert_int_equal(sp_packet_header_reason(buf, bytes, NULL), SP_PACKET_NULL_ARGUMENT);
    assert_int_equal(sp_packet_decode_header(buf, bytes, NULL), BAD);

    /* The same valid bytes 4 bytes later: descriptors would be read
     * misaligned in place. */
    memmove(buf + 4, buf, bytes);
    assert_int_equal(sp_packet_header_reason(buf + 4, bytes, &v), SP_PACKET_MISALIGNED);
    memmove(buf, buf + 4, bytes);
    assert_int_equal(decode_reason(bytes), SP_PACKET_OK); /* the move itself broke nothing */

    assert_int_equal(decode_reason(47), SP_PACKET_TRUNCATED); /* OK/other: read the binding past the end */
    assert_int_equal(decode_reason(0), SP_PACKET_TRUNCATED);
    assert_int_equal(decode_reason(32), SP_PACKET_TRUNCATED); /* a header without a binding */
}

/* A header alone in a heap block of exactly its size: under ASan, reading
 * one byte past it (the binding) would be a heap-buffer-overflow. */
static void decode_of_a_short_heap_packet_reads_no_byte_past_it(void **state)
{
    (void)state;
    encode_sample();
    for (size_t n = 0; n < 48; n += 8) {
        unsigned char *p = malloc(n ? n : 1);
        assert_non_null(p);
        memcpy(p, buf, n);
        struct sp_packet_view v;
        assert_int_equal(sp_packet_header_reason(p, n, &v), SP_PACKET_TRUNCATED);
        free(p);
    }
    /* A whole valid packet in a block of exactly its size decodes and checks. */
    unsigned char *p = malloc(SAMPLE_BYTES);
    assert_non_null(p);
    memcpy(p, buf, SAMPLE_BYTES);
    struct sp_packet_view v;
    assert_int_equal(sp_packet_decode_header(p, SAMPLE_BYTES, &v), 0);
    assert_int_equal(sp_packet_check_args(&v, &sample_sig), 0);
    free(p);
}

static void decode_refuses_a_length_that_is_not_the_header_s(void **state)
{
    (void)state;
    size_t bytes = encode_sample();
    assert_int_equal(decode_reason(bytes), SP_PACKET_OK);
    /* OK: the last scalar's last byte would be read from beyond the packet */
    assert_int_equal(decode_reason(bytes - 1), SP_PACKET_LENGTH_MISMATCH);
    /* OK: trailing bytes nobody accounts for were accepted */
    assert_int_equal(decode_reason(bytes + 1), SP_PACKET_LENGTH_MISMATCH);
    assert_int_equal(decode_reason(bytes - 8), SP_PACKET_LENGTH_MISMATCH); /* a whole scalar short */

    put_u64(8, SAMPLE_BYTES - 32 - 1); /* payload_bytes one short of the real bytes */
    assert_int_equal(decode_reason(bytes), SP_PACKET_LENGTH_MISMATCH);
    put_u64(8, UINT64_MAX); /* would wrap if added to the header size */
    assert_int_equal(decode_reason(bytes), SP_PACKET_LENGTH_MISMATCH);
}

static void decode_refuses_a_payload_the_counts_do_not_fill_exactly(void **state)
{
    (void)state;
    size_t bytes = encode_sample();
    /* 8 more bytes, and a payload_bytes that says so: the length agrees but
     * 3 tensors and 2 scalars make 416, not 424. OK here: a scalar count
     * under-read, or the run reading an extra scalar nobody sent. */
    put_u64(8, SAMPLE_BYTES - 32 + 8);
    assert_int_equal(decode_reason(bytes + 8), SP_PACKET_PAYLOAD_MISMATCH);

    encode_sample();
    put_u32(16, 2); /* two tensors in the bytes of three: scalars read from the third's bytes */
    assert_int_equal(decode_reason(bytes), SP_PACKET_PAYLOAD_MISMATCH);
    encode_sample();
    put_u32(20, 3); /* three scalars in the bytes of two: one read past the end */
    assert_int_equal(decode_reason(bytes), SP_PACKET_PAYLOAD_MISMATCH);
}

static void decode_refuses_negative_counts_and_counts_over_the_limits(void **state)
{
    (void)state;
    const int32_t bad_counts[] = {-1, INT32_MIN, SIMPLER_ORCH_MAX_TENSORS + 1, INT32_MAX};
    size_t bytes = encode_sample();
    for (size_t i = 0; i < sizeof bad_counts / sizeof bad_counts[0]; i++) {
        encode_sample();
        put_u32(16, (uint32_t)bad_counts[i]); /* OK/PAYLOAD: a negative count became a huge size */
        assert_int_equal(decode_reason(bytes), SP_PACKET_BAD_COUNT);
        encode_sample();
        put_u32(20, (uint32_t)bad_counts[i]);
        assert_int_equal(decode_reason(bytes), SP_PACKET_BAD_COUNT);
    }
}

static void decode_refuses_a_wrong_mode_and_nonzero_reserved_fields(void **state)
{
    (void)state;
    size_t bytes = encode_sample();
    put_u32(0, SP_PACKET_MODE_PROGRAM); /* OK: a program-mode word taken for a kernel launch */
    assert_int_equal(decode_reason(bytes), SP_PACKET_BAD_MODE);
    put_u32(0, SP_IDENTITY_NONE); /* OK: an unlatched context's word */
    assert_int_equal(decode_reason(bytes), SP_PACKET_BAD_MODE);
    put_u32(0, SP_PACKET_MODE_KERNEL + 1); /* OK: an identity that does not exist */
    assert_int_equal(decode_reason(bytes), SP_PACKET_BAD_MODE);
    put_u32(0, UINT32_MAX);
    assert_int_equal(decode_reason(bytes), SP_PACKET_BAD_MODE);

    encode_sample();
    put_u32(24, 1); /* OK: a later format's field ignored by this decoder */
    assert_int_equal(decode_reason(bytes), SP_PACKET_RESERVED_NONZERO);
    encode_sample();
    put_u32(28, 0x80000000u);
    assert_int_equal(decode_reason(bytes), SP_PACKET_RESERVED_NONZERO);
}

static void decode_refuses_a_negative_callable_id_and_zero_generations(void **state)
{
    (void)state;
    size_t bytes = encode_sample();
    put_u32(4, (uint32_t)-1); /* OK: an index below the callable table */
    assert_int_equal(decode_reason(bytes), SP_PACKET_BAD_CALLABLE_ID);
    put_u32(4, (uint32_t)INT32_MIN);
    assert_int_equal(decode_reason(bytes), SP_PACKET_BAD_CALLABLE_ID);

    encode_sample();
    put_u64(32, 0); /* OK: a packet from a never-initialised context matches a zeroed one */
    assert_int_equal(decode_reason(bytes), SP_PACKET_ZERO_GENERATION);
    encode_sample();
    put_u64(40, 0); /* OK: the same for an empty residency slot */
    assert_int_equal(decode_reason(bytes), SP_PACKET_ZERO_GENERATION);
}

/* ---------------------------------------------------- check_args refuses */

static void check_args_refuses_a_signature_the_counts_do_not_match(void **state)
{
    (void)state;
    size_t bytes = encode_sample();
    const uint8_t two_tensors[] = {SIMPLER_DIR_IN, SIMPLER_DIR_SCALAR, SIMPLER_DIR_OUT,
                                   SIMPLER_DIR_SCALAR};
    const uint8_t three_scalars[] = {SIMPLER_DIR_IN, SIMPLER_DIR_SCALAR, SIMPLER_DIR_OUT,
                                     SIMPLER_DIR_INOUT, SIMPLER_DIR_SCALAR, SIMPLER_DIR_SCALAR};
    const uint8_t not_a_direction[] = {SIMPLER_DIR_IN, SIMPLER_DIR_SCALAR, SIMPLER_DIR_OUT,
                                       SIMPLER_DIR_INOUT + 1, SIMPLER_DIR_SCALAR};
    struct sp_packet_signature sig = {4, two_tensors}; /* OK: the third tensor goes unread */
    assert_int_equal(args_reason(bytes, &sig), SP_PACKET_TENSOR_COUNT_MISMATCH);
    sig = (struct sp_packet_signature){6, three_scalars}; /* OK: a scalar read past the packet */
    assert_int_equal(args_reason(bytes, &sig), SP_PACKET_SCALAR_COUNT_MISMATCH);
    sig = (struct sp_packet_signature){5, not_a_direction}; /* OK: 4 counted as a tensor */
    assert_int_equal(args_reason(bytes, &sig), SP_PACKET_BAD_SIGNATURE);
    static uint8_t too_many[SIMPLER_CALLABLE_MAX_ARGS + 1]; /* all SCALAR */
    sig = (struct sp_packet_signature){sizeof too_many, too_many}; /* COUNT_MISMATCH: judged as a callable's */
    assert_int_equal(args_reason(bytes, &sig), SP_PACKET_BAD_SIGNATURE);
    sig = (struct sp_packet_signature){5, NULL};
    assert_int_equal(args_reason(bytes, &sig), SP_PACKET_NULL_ARGUMENT);

    struct sp_packet_view v;
    assert_int_equal(sp_packet_decode_header(buf, bytes, &v), 0);
    assert_int_equal(sp_packet_args_reason(NULL, &sample_sig), SP_PACKET_NULL_ARGUMENT);
    assert_int_equal(sp_packet_args_reason(&v, NULL), SP_PACKET_NULL_ARGUMENT);
    assert_int_equal(sp_packet_check_args(NULL, &sample_sig), BAD);
    v.tensors = NULL; /* a view not made by the decoder */
    assert_int_equal(sp_packet_args_reason(&v, &sample_sig), SP_PACKET_NULL_ARGUMENT);
}

/* Encodes the sample with its last tensor changed by `change`, and returns
 * check_args' reason. The last one: every tensor is checked, not the first. */
static enum sp_packet_reason last_tensor_reason(void (*change)(struct simpler_tensor *))
{
    struct sample s;
    sample_init(&s);
    change(&s.tensors[2]);
    return args_reason(encode(&s), &sample_sig);
}

static void to_host(struct simpler_tensor *t) { t->address_space = SIMPLER_MEM_HOST; }
static void to_unknown_space(struct simpler_tensor *t) { t->address_space = 2; }
static void to_null_addr(struct simpler_tensor *t) { t->addr = 0; }
static void to_wrapping_buffer(struct simpler_tensor *t) { t->buffer_bytes = UINT64_MAX - t->addr + 1; }
static void to_one_past_the_end(struct simpler_tensor *t) { t->start_offset = 1; } /* 64 f32 from 1 */
static void to_the_last_byte(struct simpler_tensor *t)
{
    t->start_offset = 1;
    t->buffer_bytes += 4;
}
static void to_negative_reach(struct simpler_tensor *t) { t->stride[0] = -1; } /* from 0 down */
static void to_overflowing_stride(struct simpler_tensor *t) { t->stride[0] = INT64_MAX; }
static void to_overflowing_start(struct simpler_tensor *t) { t->start_offset = INT64_MAX; } /* + 63 */
static void to_no_dims(struct simpler_tensor *t) { t->ndims = 0; }
static void to_empty(struct simpler_tensor *t) { t->shape[0] = 0; }

static void check_args_refuses_host_tensors_null_buffers_and_views_outside(void **state)
{
    (void)state;
    /* OK: the device would dereference a host address */
    assert_int_equal(last_tensor_reason(to_host), SP_PACKET_TENSOR_NOT_DEVICE);
    assert_int_equal(last_tensor_reason(to_unknown_space), SP_PACKET_TENSOR_NOT_DEVICE);
    /* OK: a NULL buffer reaches a kernel */
    assert_int_equal(last_tensor_reason(to_null_addr), SP_PACKET_TENSOR_BAD_BUFFER);
    /* OK: addr + offset wraps to low memory */
    assert_int_equal(last_tensor_reason(to_wrapping_buffer), SP_PACKET_TENSOR_BAD_BUFFER);
    /* OK: the view's last element is the 4 bytes past the buffer */
    assert_int_equal(last_tensor_reason(to_one_past_the_end), SP_PACKET_TENSOR_VIEW_OUTSIDE);
    assert_int_equal(last_tensor_reason(to_the_last_byte), SP_PACKET_OK); /* the edge is inside */
    /* OK: a negative stride reaches below the buffer's base */
    assert_int_equal(last_tensor_reason(to_negative_reach), SP_PACKET_TENSOR_VIEW_OUTSIDE);
    /* OK: 63 x INT64_MAX wrapped to a small offset */
    assert_int_equal(last_tensor_reason(to_overflowing_stride), SP_PACKET_TENSOR_VIEW_OUTSIDE);
    /* OK: start + 63 elements wrapped */
    assert_int_equal(last_tensor_reason(to_overflowing_start), SP_PACKET_TENSOR_VIEW_OUTSIDE);
    assert_int_equal(last_tensor_reason(to_no_dims), SP_PACKET_TENSOR_VIEW_OUTSIDE);
    assert_int_equal(last_tensor_reason(to_empty), SP_PACKET_TENSOR_VIEW_OUTSIDE);
}

/* --------------------------------------------------------------- names */

static void every_reason_has_its_own_name(void **state)
{
    (void)state;
    for (int r = 0; r < SP_PACKET_REASON_COUNT; r++) {
        const char *name = sp_packet_reason_name(r);
        assert_int_equal(strncmp(name, "SP_PACKET_", 10), 0); /* a reason left out of the table */
        for (int q = 0; q < r; q++)
            assert_string_not_equal(name, sp_packet_reason_name(q));
    }
    assert_string_equal(sp_packet_reason_name(SP_PACKET_TRUNCATED), "SP_PACKET_TRUNCATED");
    assert_string_equal(sp_packet_reason_name(-1), "unknown reason");
    assert_string_equal(sp_packet_reason_name(SP_PACKET_REASON_COUNT), "unknown reason");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(packet_bytes_follow_the_size_rule_and_refuse_counts_over_the_limits),
        cmocka_unit_test(round_trip_places_every_field_at_its_offset_and_decodes_it_back),
        cmocka_unit_test(a_packet_without_arguments_is_its_header_and_binding),
        cmocka_unit_test(a_packet_at_the_largest_counts_is_exactly_max_bytes_and_round_trips),
        cmocka_unit_test(encode_refuses_each_bad_argument_and_writes_nothing),
        cmocka_unit_test(encode_copies_tensors_it_does_not_judge),
        cmocka_unit_test(decode_refuses_null_misaligned_and_short_packets),
        cmocka_unit_test(decode_of_a_short_heap_packet_reads_no_byte_past_it),
        cmocka_unit_test(decode_refuses_a_length_that_is_not_the_header_s),
        cmocka_unit_test(decode_refuses_a_payload_the_counts_do_not_fill_exactly),
        cmocka_unit_test(decode_refuses_negative_counts_and_counts_over_the_limits),
        cmocka_unit_test(decode_refuses_a_wrong_mode_and_nonzero_reserved_fields),
        cmocka_unit_test(decode_refuses_a_negative_callable_id_and_zero_generations),
        cmocka_unit_test(check_args_refuses_a_signature_the_counts_do_not_match),
        cmocka_unit_test(check_args_refuses_host_tensors_null_buffers_and_views_outside),
        cmocka_unit_test(every_reason_has_its_own_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
