/*
 * fuzz_packet.c — libFuzzer target for the kernel-mode packet's device-side
 * checks: sp_packet_decode_header, then sp_packet_check_args against the
 * fixed signature of fuzz_packet.h.
 *
 * Owns: the properties every input (the packet's bytes, as they are) must
 * have, each abort()ing when violated:
 *  - decode reads only the bytes it is given (the input sits in a heap
 *    block of exactly its size, so ASan reports a read past it) and answers
 *    0 or INVALID_ARGUMENT, in agreement with its reason form, and exactly
 *    as an independent oracle of the header rules says (fields read at
 *    their raw offsets, sizes in 128-bit arithmetic); a refusal leaves the
 *    view untouched;
 *  - an accepted header's view holds the raw fields and points into the
 *    packet at the layout's offsets (NULL for an empty section); no proper
 *    prefix of it is accepted; it re-encodes to the identical bytes, and
 *    not into one byte less;
 *  - check_args answers 0 exactly when the counts are the signature's and
 *    every tensor is device memory whose view fuzz_oracle_view_ok accepts
 *    (fuzz_input.h, 128-bit arithmetic, independent of common/view.c).
 *
 * Built by tests/fuzz/run-fuzz.sh with clang -fsanitize=fuzzer,address,undefined;
 * links only src/common/packet.c and src/common/view.c. Seeds come from
 * packet_seeds.c.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "fuzz_packet.h"
#include "simpler/status.h"

typedef unsigned __int128 u128;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "fuzz_packet: %s:%d: violated: %s\n", __FILE__, __LINE__, \
                    #cond);                                                            \
            abort();                                                                   \
        }                                                                              \
    } while (0)

static uint32_t raw_u32(const unsigned char *p, size_t at)
{
    uint32_t v;
    memcpy(&v, p + at, sizeof v);
    return v;
}

static uint64_t raw_u64(const unsigned char *p, size_t at)
{
    uint64_t v;
    memcpy(&v, p + at, sizeof v);
    return v;
}

/* The header rules, from the raw bytes: at least 48 of them; mode 2 (the
 * kernel identity, common/identity.h);
 * reserved words 0; id and counts not negative, counts within the limits;
 * payload_bytes = bytes - 32 = 16 + 128 x tensors + 8 x scalars; both
 * generations nonzero. */
static bool oracle_header_ok(const unsigned char *p, size_t bytes)
{
    if (bytes < 48)
        return false;
    int32_t id = (int32_t)raw_u32(p, 4), tensors = (int32_t)raw_u32(p, 16),
            scalars = (int32_t)raw_u32(p, 20);
    if (raw_u32(p, 0) != 2 || raw_u32(p, 24) != 0 || raw_u32(p, 28) != 0 || id < 0)
        return false;
    if (tensors < 0 || tensors > SIMPLER_ORCH_MAX_TENSORS || scalars < 0 ||
        scalars > SIMPLER_ORCH_MAX_SCALARS)
        return false;
    u128 payload = raw_u64(p, 8);
    if (payload + 32 != bytes || payload != 16 + (u128)128 * tensors + (u128)8 * scalars)
        return false;
    return raw_u64(p, 32) != 0 && raw_u64(p, 40) != 0;
}

/* The argument rules against fuzz_packet.h's signature. */
static bool oracle_args_ok(const struct sp_packet_view *v)
{
    if (v->tensor_count != FUZZ_PACKET_TENSORS || v->scalar_count != FUZZ_PACKET_SCALARS)
        return false;
    for (uint32_t i = 0; i < v->tensor_count; i++)
        if (v->tensors[i].address_space != SIMPLER_MEM_DEVICE || !fuzz_oracle_view_ok(&v->tensors[i]))
            return false;
    return true;
}

/* Decodes `bytes` of `p`, checks the public and reason forms agree, and
 * that a refusal left the view alone; returns the reason. */
static enum sp_packet_reason decode(const unsigned char *p, size_t bytes, struct sp_packet_view *v)
{
    struct sp_packet_view untouched, other;
    memset(v, 0x5A, sizeof *v);
    memset(&other, 0x5A, sizeof other);
    untouched = *v;
    enum sp_packet_reason reason = sp_packet_header_reason(p, bytes, v);
    int rc = sp_packet_decode_header(p, bytes, &other);
    CHECK(reason >= SP_PACKET_OK && reason <= SP_PACKET_ZERO_GENERATION);
    CHECK(reason != SP_PACKET_NULL_ARGUMENT && reason != SP_PACKET_MISALIGNED);
    CHECK(rc == (reason == SP_PACKET_OK ? 0 : PTO_RUNTIME_ERR_INVALID_ARGUMENT));
    if (reason != SP_PACKET_OK) {
        CHECK(memcmp(v, &untouched, sizeof *v) == 0);
        CHECK(memcmp(&other, &untouched, sizeof other) == 0);
    } else {
        CHECK(memcmp(v, &other, sizeof *v) == 0);
    }
    return reason;
}

/* Copies `bytes` of `data` into a heap block of exactly that size (malloc
 * aligns it for any object, so for SP_PACKET_ALIGN). */
static unsigned char *heap_copy(const uint8_t *data, size_t bytes)
{
    unsigned char *p = malloc(bytes ? bytes : 1);
    CHECK(p != NULL);
    if (bytes)
        memcpy(p, data, bytes);
    return p;
}

static void check_accepted(const unsigned char *p, size_t bytes, const struct sp_packet_view *v)
{
    size_t tensor_bytes = (size_t)v->tensor_count * sizeof(struct simpler_tensor);
    CHECK(v->callable_id == (int32_t)raw_u32(p, 4));
    CHECK(v->tensor_count == raw_u32(p, 16) && v->scalar_count == raw_u32(p, 20));
    CHECK(v->context_generation == raw_u64(p, 32) && v->slot_generation == raw_u64(p, 40));
    CHECK(bytes == sp_packet_bytes(v->tensor_count, v->scalar_count));
    CHECK(v->tensor_count ? (const unsigned char *)v->tensors == p + 48 : v->tensors == NULL);
    CHECK(v->scalar_count ? (const unsigned char *)v->scalars == p + 48 + tensor_bytes
                          : v->scalars == NULL);

    /* No prefix is a packet: each would be missing bytes its header counts. */
    for (size_t cut = 1; cut <= 8 && cut <= bytes; cut++) {
        unsigned char *prefix = heap_copy(p, bytes - cut);
        struct sp_packet_view pv;
        CHECK(decode(prefix, bytes - cut, &pv) != SP_PACKET_OK);
        free(prefix);
    }

    /* It re-encodes to the same bytes, and needs all of them. */
    unsigned char *again = malloc(bytes);
    CHECK(again != NULL);
    struct simpler_args args = {v->tensor_count, v->scalar_count, v->tensors, v->scalars};
    size_t written = 0;
    CHECK(sp_packet_encode(again, bytes - 1, v->callable_id, v->context_generation,
                           v->slot_generation, &args, &written) == PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    CHECK(written == 0);
    CHECK(sp_packet_encode(again, bytes, v->callable_id, v->context_generation, v->slot_generation,
                           &args, &written) == 0);
    CHECK(written == bytes && memcmp(again, p, bytes) == 0);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *p = heap_copy(data, size);
    struct sp_packet_view v;
    enum sp_packet_reason reason = decode(p, size, &v);
    CHECK((reason == SP_PACKET_OK) == oracle_header_ok(p, size));
    if (reason == SP_PACKET_OK) {
        check_accepted(p, size, &v);
        enum sp_packet_reason args = sp_packet_args_reason(&v, &fuzz_packet_sig);
        int rc = sp_packet_check_args(&v, &fuzz_packet_sig);
        CHECK(args == SP_PACKET_OK ||
              (args >= SP_PACKET_TENSOR_COUNT_MISMATCH && args < SP_PACKET_REASON_COUNT));
        CHECK(rc == (args == SP_PACKET_OK ? 0 : PTO_RUNTIME_ERR_INVALID_ARGUMENT));
        CHECK((args == SP_PACKET_OK) == oracle_args_ok(&v));
    }
    free(p);
    return 0;
}
