/*
 * test_callable.c — callable images: the validator's rules and the builder.
 *
 * Owns: one test per validator rule, each starting from a good image made by
 * the builder and corrupting one field (or, where a rule needs it, the
 * fields that must stay consistent with it), so the refusal can only come
 * from that rule; the builder's layout, de-duplication, copying, argument and
 * state checks, file variants, and a failure sweep over every host
 * allocation of a build. The good image is held in a heap buffer of exactly
 * its size, so under ASan a validator reading past the image is caught even
 * when the refusal comes from a later check. Touches no device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/host_alloc.h"
#include "elf_stub.h"
#include "simpler/callable.h"
#include "test_support.h"

#define INVALID PTO_RUNTIME_ERR_INVALID_ARGUMENT
#define STATE PTO_RUNTIME_ERR_INVALID_STATE
#define OOM PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY

#define SCALAR SIMPLER_DIR_SCALAR
#define IN SIMPLER_DIR_IN
#define OUT SIMPLER_DIR_OUT
#define INOUT SIMPLER_DIR_INOUT
#define ELF SIMPLER_BINARY_ELF
#define SYMBOL SIMPLER_BINARY_SYMBOL
#define AIC SIMPLER_CORE_AIC
#define AIV SIMPLER_CORE_AIV

typedef struct simpler_callable_header header_t;
typedef struct simpler_callable_child child_t;

/* ---- test binaries ----------------------------------------------------- */

/* ELF binaries for the builder and validator: structurally valid stubs
 * (elf_stub.h), their headers then a pattern that differs per seed. */
static void fill_elf(unsigned char *buf, size_t size, unsigned seed)
{
    elf_stub_fill(buf, size, seed);
}

#define ELF_A_BYTES 300
#define ELF_B_BYTES 198
static unsigned char elf_a[ELF_A_BYTES];
static unsigned char elf_b[ELF_B_BYTES];

static const enum simpler_direction orch_sig[] = {IN, SCALAR, OUT, INOUT, SCALAR};
static const enum simpler_direction add_sig[] = {IN, IN, OUT};
static const enum simpler_direction mul_sig[] = {IN, OUT, SCALAR};

/*
 * The good image: an ELF orchestration (elf_a) with a config function and a
 * five-entry signature, and three kernels: func 0 (ELF elf_b), func 5
 * (SYMBOL), func 7 (ELF elf_a again, stored once). Its layout:
 *   header 0..320, child table 320..704, elf_a at 704..1004, padding,
 *   elf_b at 1024..1222.
 */
#define GOOD_TOTAL 1222u
#define GOOD_TABLE 320u
#define GOOD_ELF_A 704u
#define GOOD_ELF_B 1024u

static void build_good(struct simpler_callable_builder **out)
{
    fill_elf(elf_a, sizeof elf_a, 1);
    fill_elf(elf_b, sizeof elf_b, 2);
    struct simpler_callable_builder *b = NULL;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, ELF, elf_a, sizeof elf_a,
                                                                "orch_main", "orch_config",
                                                                orch_sig, 5), 0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 0, AIV, ELF, elf_b, sizeof elf_b,
                                                         "k_add", add_sig, 3), 0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 5, AIC, SYMBOL, NULL, 0, "k_mul",
                                                         mul_sig, 3), 0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 7, AIV, ELF, elf_a, sizeof elf_a,
                                                         "k_copy", NULL, 0), 0);
    *out = b;
}

/* ---- the fixture: a good image in a buffer of exactly its size --------- */

struct fixture {
    unsigned char *good;  /* the builder's image, never modified */
    unsigned char *image; /* a copy the test corrupts; malloc'd, exactly `bytes` */
    size_t bytes;
};

static int fixture_setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    struct simpler_callable_builder *b;
    build_good(&b);
    void *image = NULL;
    assert_int_equal(simpler_callable_builder_finish(b, &image, &fx->bytes), 0);
    simpler_callable_builder_destroy(b);
    fx->good = image;
    fx->image = malloc(fx->bytes);
    assert_non_null(fx->image);
    assert_int_equal((uintptr_t)fx->image % SIMPLER_CALLABLE_IMAGE_ALIGN, 0);
    memcpy(fx->image, fx->good, fx->bytes);
    *state = fx;
    return 0;
}

static int fixture_teardown(void **state)
{
    struct fixture *fx = *state;
    simpler_callable_free(fx->good);
    free(fx->image);
    free(fx);
    return 0;
}

/* Puts the good image back, so the next corruption is the only one. */
static void reset(struct fixture *fx)
{
    memcpy(fx->image, fx->good, fx->bytes);
}

static int validate(const struct fixture *fx)
{
    return simpler_callable_validate(fx->image, fx->bytes);
}

static header_t get_header(const unsigned char *image)
{
    header_t h;
    memcpy(&h, image, sizeof h);
    return h;
}

static void put_header(unsigned char *image, const header_t *h)
{
    memcpy(image, h, sizeof *h);
}

static child_t get_child(const unsigned char *image, uint32_t i)
{
    child_t c;
    memcpy(&c, image + GOOD_TABLE + i * sizeof c, sizeof c);
    return c;
}

static void put_child(unsigned char *image, uint32_t i, const child_t *c)
{
    memcpy(image + GOOD_TABLE + i * sizeof *c, c, sizeof *c);
}

/* Runs `stmt` on a copy of the header (h) or of child i (c) and writes it
 * back; resets the image first. */
#define WITH_HEADER(fx, stmt)                  \
    do {                                       \
        reset(fx);                             \
        header_t h = get_header((fx)->image);  \
        stmt;                                  \
        put_header((fx)->image, &h);           \
    } while (0)

#define WITH_CHILD(fx, i, stmt)                    \
    do {                                           \
        reset(fx);                                 \
        child_t c = get_child((fx)->image, (i));   \
        stmt;                                      \
        put_child((fx)->image, (i), &c);           \
    } while (0)

/* ---- validator --------------------------------------------------------- */

static void finish_ok(struct simpler_callable_builder *b, void **image, size_t *bytes)
{
    assert_int_equal(simpler_callable_builder_finish(b, image, bytes), 0);
    assert_int_equal(simpler_callable_validate(*image, *bytes), 0);
}

static void validate_accepts_the_builders_image_laid_out_as_documented(void **state)
{
    struct fixture *fx = *state;
    assert_int_equal(validate(fx), 0);
    assert_int_equal(fx->bytes, GOOD_TOTAL); /* other: the layout or the dedup changed */
    header_t h = get_header(fx->image);
    assert_int_equal(h.magic, SIMPLER_CALLABLE_MAGIC);
    assert_memory_equal(fx->image, "SPCL", 4); /* other: the magic's byte order */
    assert_int_equal(h.total_bytes, GOOD_TOTAL);
    assert_int_equal(h.header_bytes, sizeof(header_t));
    assert_int_equal(h.sig_count, 5);
    assert_int_equal(h.scalar_count, 2);
    assert_int_equal(h.child_count, 3);
    assert_int_equal(h.children_offset, GOOD_TABLE); /* other: the table is not right after the header */
    assert_int_equal(h.orch_kind, ELF);
    assert_int_equal(h.orch_offset, GOOD_ELF_A);
    assert_int_equal(h.orch_bytes, ELF_A_BYTES);
    assert_string_equal(h.entry_name, "orch_main");
    assert_string_equal(h.config_name, "orch_config");
    const uint8_t sig[SIMPLER_CALLABLE_MAX_ARGS] = {IN, SCALAR, OUT, INOUT, SCALAR};
    assert_memory_equal(h.signature, sig, sizeof sig); /* other: unused entries not zero */

    child_t c0 = get_child(fx->image, 0), c1 = get_child(fx->image, 1), c2 = get_child(fx->image, 2);
    assert_int_equal(c0.func_id, 0);
    assert_int_equal(c0.core_type, AIV);
    assert_int_equal(c0.binary_kind, ELF);
    assert_int_equal(c0.binary_offset, GOOD_ELF_B);
    assert_int_equal(c0.binary_bytes, ELF_B_BYTES);
    assert_string_equal(c0.symbol, "k_add");
    assert_int_equal(c0.sig_count, 3);
    assert_int_equal(c1.func_id, 5);
    assert_int_equal(c1.core_type, AIC);
    assert_int_equal(c1.binary_kind, SYMBOL);
    assert_int_equal(c1.binary_offset, 0);
    assert_int_equal(c1.binary_bytes, 0);
    assert_int_equal(c2.func_id, 7);
    assert_int_equal(c2.binary_offset, GOOD_ELF_A); /* other: the identical binary was stored twice */
    assert_int_equal(c2.sig_count, 0);
    assert_memory_equal(fx->image + GOOD_ELF_A, elf_a, sizeof elf_a);
    assert_memory_equal(fx->image + GOOD_ELF_B, elf_b, sizeof elf_b);
    for (size_t i = GOOD_ELF_A + ELF_A_BYTES; i < GOOD_ELF_B; i++)
        assert_int_equal(fx->image[i], 0); /* nonzero: padding leaks heap contents */
}

static void validate_rejects_null_or_misaligned_images(void **state)
{
    struct fixture *fx = *state;
    assert_int_equal(simpler_callable_validate(NULL, fx->bytes), INVALID);
    unsigned char *buf = aligned_alloc(64, 2048); /* room for the image at any shift < 8 */
    assert_non_null(buf);
    memcpy(buf + 8, fx->good, fx->bytes);
    assert_int_equal(simpler_callable_validate(buf + 8, fx->bytes), 0); /* INVALID: 8-aligned is enough */
    for (size_t shift = 1; shift < 8; shift++) {
        memcpy(buf + shift, fx->good, fx->bytes);
        /* 0 = a misaligned image is accepted, and readers that cast its
         * records in place would do misaligned loads */
        assert_int_equal(simpler_callable_validate(buf + shift, fx->bytes), INVALID);
    }
    free(buf);
}

static void validate_rejects_a_size_other_than_total_bytes(void **state)
{
    struct fixture *fx = *state;
    /* 0 = the last binary's final byte is taken from past the caller's buffer */
    assert_int_equal(simpler_callable_validate(fx->image, fx->bytes - 1), INVALID);
    unsigned char *longer = malloc(fx->bytes + 1);
    assert_non_null(longer);
    memcpy(longer, fx->good, fx->bytes);
    longer[fx->bytes] = 0;
    /* 0 = trailing bytes the header does not account for are accepted */
    assert_int_equal(simpler_callable_validate(longer, fx->bytes + 1), INVALID);
    free(longer);
    /* Buffers shorter than a header, exactly as long as the caller says:
     * 0 = a header is read from fewer bytes (ASan: heap-buffer-overflow) */
    unsigned char *short_image = malloc(sizeof(header_t) - 1);
    assert_non_null(short_image);
    memcpy(short_image, fx->good, sizeof(header_t) - 1);
    assert_int_equal(simpler_callable_validate(short_image, sizeof(header_t) - 1), INVALID);
    assert_int_equal(simpler_callable_validate(short_image, 0), INVALID);
    free(short_image);
    WITH_HEADER(fx, h.total_bytes = GOOD_TOTAL - 1);
    assert_int_equal(validate(fx), INVALID); /* 0 = total_bytes is not checked at all */
    WITH_HEADER(fx, h.total_bytes = GOOD_TOTAL + 1);
    assert_int_equal(validate(fx), INVALID);
}

static void validate_rejects_bad_magic_version_or_header_bytes(void **state)
{
    struct fixture *fx = *state;
    WITH_HEADER(fx, h.magic ^= 1);
    assert_int_equal(validate(fx), INVALID); /* 0 = arbitrary bytes pass as an image */
    WITH_HEADER(fx, h.magic = 0x5350434Cu); /* "LCPS": byte-swapped */
    assert_int_equal(validate(fx), INVALID); /* 0 = an other-endian image is read as native */
    WITH_HEADER(fx, h.version = 0);
    assert_int_equal(validate(fx), INVALID); /* 0 = an unknown layout version is trusted */
    WITH_HEADER(fx, h.version = SIMPLER_CALLABLE_VERSION + 1);
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.header_bytes = sizeof(header_t) - 8);
    assert_int_equal(validate(fx), INVALID); /* 0 = a header of another size is read as ours */
    WITH_HEADER(fx, h.header_bytes = sizeof(header_t) + 8);
    assert_int_equal(validate(fx), INVALID);
}

static void validate_rejects_a_nonzero_reserved_field(void **state)
{
    struct fixture *fx = *state;
    WITH_HEADER(fx, h.reserved0 = 1);
    /* 0 = a later version could not give reserved0 a meaning: old readers
     * would accept images that use it */
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.reserved0 = 0x80000000u);
    assert_int_equal(validate(fx), INVALID);
}

/* Names: the same rules for entry, config (which may be empty) and symbol. */
static void validate_rejects_bad_entry_names(void **state)
{
    struct fixture *fx = *state;
    WITH_HEADER(fx, memset(h.entry_name, 0, sizeof h.entry_name));
    assert_int_equal(validate(fx), INVALID); /* 0 = an orchestration without an entry is accepted */
    WITH_HEADER(fx, memset(h.entry_name, 'a', sizeof h.entry_name));
    /* 0 = an unterminated name would be read past its field by strlen/dlsym */
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.entry_name[4] = '/');
    assert_int_equal(validate(fx), INVALID); /* 0 = a name can look like a path */
    WITH_HEADER(fx, h.entry_name[0] = 0x1f);
    assert_int_equal(validate(fx), INVALID); /* 0 = control characters reach logs and dlsym */
    WITH_HEADER(fx, h.entry_name[0] = 0x7f);
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.entry_name[0] = (char)0x80);
    assert_int_equal(validate(fx), INVALID); /* 0 = bytes past ASCII count as printable */
    WITH_HEADER(fx, memset(h.entry_name, 'a', sizeof h.entry_name - 1));
    assert_int_equal(validate(fx), 0); /* INVALID: a 63-character name is refused */
}

static void validate_rejects_bad_config_names_but_accepts_none(void **state)
{
    struct fixture *fx = *state;
    WITH_HEADER(fx, memset(h.config_name, 0, sizeof h.config_name));
    assert_int_equal(validate(fx), 0); /* INVALID: "no config function" is refused */
    WITH_HEADER(fx, memset(h.config_name, 'c', sizeof h.config_name));
    assert_int_equal(validate(fx), INVALID); /* 0 = unterminated config name */
    WITH_HEADER(fx, h.config_name[0] = '/');
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.config_name[3] = '\n');
    assert_int_equal(validate(fx), INVALID);
}

static void validate_rejects_bad_kernel_symbols(void **state)
{
    struct fixture *fx = *state;
    WITH_CHILD(fx, 1, memset(c.symbol, 0, sizeof c.symbol));
    assert_int_equal(validate(fx), INVALID); /* 0 = a kernel without an entry is accepted */
    WITH_CHILD(fx, 1, memset(c.symbol, 'k', sizeof c.symbol));
    assert_int_equal(validate(fx), INVALID); /* 0 = unterminated symbol */
    WITH_CHILD(fx, 1, c.symbol[1] = '/');
    assert_int_equal(validate(fx), INVALID);
    WITH_CHILD(fx, 2, c.symbol[0] = 0x01);
    assert_int_equal(validate(fx), INVALID);
}

static void validate_rejects_invalid_directions(void **state)
{
    struct fixture *fx = *state;
    WITH_HEADER(fx, h.signature[2] = INOUT + 1);
    assert_int_equal(validate(fx), INVALID); /* 0 = an unknown direction reaches staging */
    WITH_HEADER(fx, h.signature[4] = 0xff);
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.signature[5] = IN); /* first unused entry */
    assert_int_equal(validate(fx), INVALID); /* 0 = unused entries carry arbitrary bytes */
    WITH_HEADER(fx, h.signature[SIMPLER_CALLABLE_MAX_ARGS - 1] = IN);
    assert_int_equal(validate(fx), INVALID);
    WITH_CHILD(fx, 0, c.signature[0] = 4);
    assert_int_equal(validate(fx), INVALID); /* 0 = kernel directions are not checked */
    WITH_CHILD(fx, 0, c.signature[3] = OUT); /* sig_count is 3 */
    assert_int_equal(validate(fx), INVALID);
}

static void validate_rejects_a_scalar_count_that_does_not_match_the_signature(void **state)
{
    struct fixture *fx = *state;
    WITH_HEADER(fx, h.scalar_count = 1);
    /* 0 = a run would split its arguments into tensors and scalars wrongly */
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.scalar_count = 3);
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.signature[0] = SCALAR); /* 3 scalars now, header says 2 */
    assert_int_equal(validate(fx), INVALID);
}

static void validate_rejects_more_args_tensors_or_scalars_than_the_limits(void **state)
{
    struct fixture *fx = *state;
    /* The count and the entries change together, so only the limit is wrong. */
    WITH_HEADER(fx, {
        h.sig_count = SIMPLER_CALLABLE_MAX_TENSORS + 1;
        h.scalar_count = 0;
        memset(h.signature, IN, h.sig_count);
    });
    assert_int_equal(validate(fx), INVALID); /* 0 = 65 tensors overrun the run's tensor array */
    WITH_HEADER(fx, {
        h.sig_count = SIMPLER_CALLABLE_MAX_SCALARS + 1;
        h.scalar_count = h.sig_count;
        memset(h.signature, SCALAR, h.sig_count);
    });
    assert_int_equal(validate(fx), INVALID); /* 0 = 65 scalars overrun the scalar array */
    WITH_HEADER(fx, {
        h.sig_count = SIMPLER_CALLABLE_MAX_ARGS;
        h.scalar_count = SIMPLER_CALLABLE_MAX_SCALARS;
        memset(h.signature, IN, SIMPLER_CALLABLE_MAX_TENSORS);
        memset(h.signature + SIMPLER_CALLABLE_MAX_TENSORS, SCALAR, SIMPLER_CALLABLE_MAX_SCALARS);
    });
    assert_int_equal(validate(fx), 0); /* INVALID: 64 tensors + 64 scalars is the limit, not past it */
    WITH_HEADER(fx, h.sig_count = SIMPLER_CALLABLE_MAX_ARGS + 1);
    /* 0 = signature[128] is read past the field */
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.sig_count = UINT32_MAX);
    assert_int_equal(validate(fx), INVALID);
    WITH_CHILD(fx, 2, c.sig_count = SIMPLER_KERNEL_MAX_ARGS + 1);
    assert_int_equal(validate(fx), INVALID); /* 0 = a kernel signature is read past its field */
}

static void validate_rejects_func_ids_out_of_range_or_duplicated(void **state)
{
    struct fixture *fx = *state;
    WITH_CHILD(fx, 1, c.func_id = -1);
    assert_int_equal(validate(fx), INVALID); /* 0 = a negative index into the func table */
    WITH_CHILD(fx, 1, c.func_id = INT32_MIN);
    assert_int_equal(validate(fx), INVALID);
    WITH_CHILD(fx, 1, c.func_id = SIMPLER_CALLABLE_MAX_FUNC_ID);
    assert_int_equal(validate(fx), INVALID); /* 0 = an index one past the func table */
    WITH_CHILD(fx, 1, c.func_id = SIMPLER_CALLABLE_MAX_FUNC_ID - 1);
    assert_int_equal(validate(fx), 0); /* INVALID: the largest func_id is refused */
    WITH_CHILD(fx, 2, c.func_id = 0); /* child 0 has func_id 0 */
    assert_int_equal(validate(fx), INVALID); /* 0 = two kernels under one func_id: which runs? */
    WITH_CHILD(fx, 2, c.func_id = 5); /* child 1 has 5 */
    assert_int_equal(validate(fx), INVALID);
}

static void validate_rejects_an_unknown_core_type(void **state)
{
    struct fixture *fx = *state;
    WITH_CHILD(fx, 0, c.core_type = 2);
    assert_int_equal(validate(fx), INVALID); /* 0 = a kernel dispatched to a core kind that does not exist */
    WITH_CHILD(fx, 0, c.core_type = AIC);
    assert_int_equal(validate(fx), 0);
}

static void validate_rejects_a_child_table_outside_the_image(void **state)
{
    struct fixture *fx = *state;
    /* 3 records from 840 end at 1224, 2 bytes past the image (840 is 8-aligned) */
    WITH_HEADER(fx, h.children_offset = GOOD_TOTAL - 3 * sizeof(child_t) + 2);
    assert_int_equal(validate(fx), INVALID); /* 0 = the last record is read past the image */
    WITH_HEADER(fx, h.children_offset = UINT64_MAX - 7);
    /* 0 = offset + table size wrapped to 376 and passed a naive range check */
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.children_offset = UINT64_MAX - 3 * sizeof(child_t) - 7);
    assert_int_equal(validate(fx), INVALID); /* aligned, ends 8 below 2^64 without wrapping */
    /* A table inside the header. No header bytes can form a valid record
     * (a symbol would have to start in the signature, whose bytes are 0..3),
     * so the record checks refuse these too; "after the header" is checked
     * first so that no header byte is ever read as a record. */
    WITH_HEADER(fx, h.children_offset = 0);
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.children_offset = sizeof(header_t) - 8);
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.child_count = 0);
    /* 0 = children_offset means nothing without children, yet must be 0 */
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, { h.child_count = 0; h.children_offset = 0; });
    assert_int_equal(validate(fx), 0); /* INVALID: an image without kernels is refused */
}

/* An image of a SYMBOL orchestration and two SYMBOL kernels whose child
 * table starts `gap` bytes after the header (so a table at any offset can
 * be made with valid records). Returns a malloc'd image of *bytes bytes. */
static unsigned char *image_with_table_gap(uint64_t gap, size_t *bytes)
{
    struct simpler_callable_builder *b;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, SYMBOL, NULL, 0, "main", NULL,
                                                                NULL, 0), 0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 1, AIC, SYMBOL, NULL, 0, "k1", NULL, 0),
                     0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 2, AIV, SYMBOL, NULL, 0, "k2", add_sig,
                                                         3), 0);
    void *packed;
    size_t packed_bytes;
    finish_ok(b, &packed, &packed_bytes);
    simpler_callable_builder_destroy(b);
    *bytes = packed_bytes + gap;
    unsigned char *image = calloc(1, *bytes);
    assert_non_null(image);
    header_t h = get_header(packed);
    h.total_bytes = *bytes;
    h.children_offset = sizeof h + gap;
    put_header(image, &h);
    memcpy(image + sizeof h + gap, (unsigned char *)packed + sizeof h, 2 * sizeof(child_t));
    simpler_callable_free(packed);
    return image;
}

static void validate_rejects_a_misaligned_child_table(void **state)
{
    (void)state;
    size_t bytes;
    unsigned char *image = image_with_table_gap(8, &bytes);
    assert_int_equal(simpler_callable_validate(image, bytes), 0); /* INVALID: the table must follow the header directly */
    free(image);
    image = image_with_table_gap(4, &bytes);
    /* 0 = a table at 324 is accepted, and a loader that reads its records in
     * place does misaligned 8-byte loads */
    assert_int_equal(simpler_callable_validate(image, bytes), INVALID);
    free(image);
}

/* 1025 children always repeat a func_id (there are 1024), so this limit is
 * also implied by uniqueness; the explicit check bounds the walk before any
 * record is read. */
static void validate_rejects_more_children_than_the_limit(void **state)
{
    struct fixture *fx = *state;
    WITH_HEADER(fx, h.child_count = SIMPLER_CALLABLE_MAX_CHILDREN + 1);
    assert_int_equal(validate(fx), INVALID); /* 0 = a table 1025 records long is read */
    WITH_HEADER(fx, h.child_count = UINT32_MAX);
    assert_int_equal(validate(fx), INVALID);
}

static void validate_rejects_binaries_past_the_end_or_wrapping(void **state)
{
    struct fixture *fx = *state;
    WITH_HEADER(fx, h.orch_bytes = GOOD_TOTAL - GOOD_ELF_A);
    assert_int_equal(validate(fx), 0); /* INVALID: a binary ending at the image's end is refused */
    WITH_HEADER(fx, h.orch_bytes = GOOD_TOTAL - GOOD_ELF_A + 1);
    assert_int_equal(validate(fx), INVALID); /* 0 = the loader copies one byte past the image */
    WITH_HEADER(fx, h.orch_bytes = UINT64_MAX - GOOD_ELF_A + 1);
    /* 0 = offset + bytes wrapped to 0 and passed a naive range check */
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.orch_offset = UINT64_MAX - 63); /* 64-aligned */
    /* 0 = offset + bytes wrapped to 36; the magic is read far outside */
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.orch_offset = GOOD_TOTAL + 58); /* 1280, 64-aligned, past the end */
    assert_int_equal(validate(fx), INVALID);
    WITH_CHILD(fx, 0, c.binary_bytes = ELF_B_BYTES + 1);
    assert_int_equal(validate(fx), INVALID); /* 0 = kernel binaries are not range-checked */
    WITH_CHILD(fx, 0, c.binary_offset = UINT64_MAX - 63);
    assert_int_equal(validate(fx), INVALID);
    WITH_CHILD(fx, 0, c.binary_bytes = UINT64_MAX);
    assert_int_equal(validate(fx), INVALID);
}

static void validate_rejects_misaligned_binaries(void **state)
{
    struct fixture *fx = *state;
    /* A whole stub 8 bytes past a 64-byte boundary inside elf_a's payload
     * (past its headers): the payload is opaque, so the image stays valid
     * until something points at it. */
    enum { MISALIGNED = GOOD_ELF_A + 2 * 64 + 8, STUB = ELF_STUB_HEADERS };
    _Static_assert(MISALIGNED >= GOOD_ELF_A + ELF_STUB_HEADERS &&
                       MISALIGNED + ELF_STUB_HEADERS <= GOOD_ELF_A + ELF_A_BYTES,
                   "the misaligned stub lies in elf_a's payload");
    reset(fx);
    elf_stub_fill(fx->image + MISALIGNED, STUB, 4);
    assert_int_equal(validate(fx), 0);
    header_t h = get_header(fx->image);
    h.orch_offset = MISALIGNED;
    h.orch_bytes = STUB;
    put_header(fx->image, &h);
    /* 0 = a binary at an offset the device loader cannot map aligned */
    assert_int_equal(validate(fx), INVALID);
    h.orch_offset = MISALIGNED - 8; /* the same bytes from the boundary: not a stub */
    put_header(fx->image, &h);
    assert_int_equal(validate(fx), INVALID);
    reset(fx);
    elf_stub_fill(fx->image + MISALIGNED, STUB, 4);
    child_t c = get_child(fx->image, 2);
    c.binary_offset = MISALIGNED;
    c.binary_bytes = STUB;
    put_child(fx->image, 2, &c);
    assert_int_equal(validate(fx), INVALID);
}

static void validate_rejects_binaries_without_the_elf_magic(void **state)
{
    struct fixture *fx = *state;
    reset(fx);
    fx->image[GOOD_ELF_B + 3] = 'G';
    assert_int_equal(validate(fx), INVALID); /* 0 = non-ELF bytes are handed to the loader */
    reset(fx);
    fx->image[GOOD_ELF_A] = 0x7e;
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.orch_bytes = 3);
    assert_int_equal(validate(fx), INVALID); /* 0 = a binary shorter than the magic */
    WITH_HEADER(fx, h.orch_bytes = 0);
    assert_int_equal(validate(fx), INVALID); /* 0 = an empty ELF binary */
    WITH_CHILD(fx, 0, c.binary_bytes = 0);
    assert_int_equal(validate(fx), INVALID);
}

/* Runs `stmt` on copies of elf_a's ELF header (eh) and PT_LOAD program
 * header (ph) in the image and writes both back; resets the image first. */
#define WITH_ELF(fx, stmt)                                                     \
    do {                                                                       \
        reset(fx);                                                             \
        Elf64_Ehdr eh;                                                         \
        Elf64_Phdr ph;                                                         \
        memcpy(&eh, (fx)->image + GOOD_ELF_A, sizeof eh);                      \
        memcpy(&ph, (fx)->image + GOOD_ELF_A + ELF_STUB_PHDR, sizeof ph);      \
        stmt;                                                                  \
        memcpy((fx)->image + GOOD_ELF_A, &eh, sizeof eh);                      \
        memcpy((fx)->image + GOOD_ELF_A + ELF_STUB_PHDR, &ph, sizeof ph);      \
    } while (0)

/* Each a binary the dynamic loader would read outside of (a crash inside
 * dlopen at register) or cannot map as this host's shared object. */
static void validate_rejects_elf_binaries_whose_headers_are_broken(void **state)
{
    struct fixture *fx = *state;
    WITH_ELF(fx, (void)0);
    assert_int_equal(validate(fx), 0); /* INVALID: the stub itself is refused */
    WITH_HEADER(fx, h.orch_bytes = ELF_STUB_HEADERS - 1);
    /* 0 = a binary truncated inside its program headers is loaded */
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.orch_bytes = sizeof(Elf64_Ehdr) - 1);
    assert_int_equal(validate(fx), INVALID); /* 0 = truncated inside the ELF header */
    WITH_ELF(fx, eh.e_ident[EI_CLASS] = ELFCLASS32);
    assert_int_equal(validate(fx), INVALID); /* 0 = a 32-bit header read as a 64-bit one */
    WITH_ELF(fx, eh.e_ident[EI_DATA] = SP_ELF_HOST_DATA == ELFDATA2LSB ? ELFDATA2MSB : ELFDATA2LSB);
    assert_int_equal(validate(fx), INVALID); /* 0 = an other-endian object's offsets trusted */
    WITH_ELF(fx, eh.e_ident[EI_VERSION] = EV_NONE);
    assert_int_equal(validate(fx), INVALID);
    WITH_ELF(fx, eh.e_type = ET_EXEC);
    assert_int_equal(validate(fx), INVALID); /* 0 = a fixed-address executable mapped over ours */
    WITH_ELF(fx, eh.e_machine = EM_NONE);
    assert_int_equal(validate(fx), INVALID); /* 0 = another machine's code */
    WITH_ELF(fx, eh.e_ehsize = sizeof eh - 1);
    assert_int_equal(validate(fx), INVALID);
    WITH_ELF(fx, eh.e_phentsize = sizeof ph + 8);
    assert_int_equal(validate(fx), INVALID); /* 0 = program headers read with the wrong stride */
    WITH_ELF(fx, eh.e_phnum = 0);
    assert_int_equal(validate(fx), INVALID); /* 0 = nothing to map */
    WITH_ELF(fx, eh.e_phnum = 5);
    assert_int_equal(validate(fx), INVALID); /* 0 = four program headers read past the binary */
    WITH_ELF(fx, eh.e_phoff = ELF_A_BYTES - sizeof ph + 8);
    assert_int_equal(validate(fx), INVALID); /* 0 = the table runs past the binary's end */
    WITH_ELF(fx, eh.e_phoff = UINT64_MAX - 7);
    assert_int_equal(validate(fx), INVALID); /* 0 = e_phoff + size wrapped */
    WITH_ELF(fx, eh.e_phoff = 8);
    assert_int_equal(validate(fx), INVALID); /* 0 = program headers inside the ELF header */
    WITH_ELF(fx, eh.e_phoff = sizeof eh + 4);
    assert_int_equal(validate(fx), INVALID); /* 0 = a misaligned table */
    WITH_ELF(fx, { eh.e_shoff = ELF_A_BYTES - 64 + 8; eh.e_shnum = 1; });
    assert_int_equal(validate(fx), INVALID); /* 0 = a section table past the end (a truncation) */
    WITH_ELF(fx, { eh.e_shoff = ELF_A_BYTES - 64 - 4; eh.e_shnum = 1; });
    assert_int_equal(validate(fx), 0); /* INVALID: a section table ending at the binary's end */
    WITH_ELF(fx, { eh.e_shoff = ELF_A_BYTES - 64 - 4; eh.e_shnum = 1; eh.e_shstrndx = 1; });
    assert_int_equal(validate(fx), INVALID); /* 0 = a string table index past the table */
    WITH_ELF(fx, eh.e_shnum = 1);
    assert_int_equal(validate(fx), INVALID); /* 0 = sections counted, no table */
}

static void validate_rejects_elf_segments_outside_the_binary(void **state)
{
    struct fixture *fx = *state;
    WITH_ELF(fx, ph.p_filesz = ph.p_memsz = ELF_A_BYTES);
    assert_int_equal(validate(fx), 0); /* INVALID: a PT_LOAD of the whole binary is refused */
    WITH_ELF(fx, ph.p_filesz = ph.p_memsz = ELF_A_BYTES + 1);
    /* 0 = the loader maps a byte past the stated bytes (SIGBUS in dlopen) */
    assert_int_equal(validate(fx), INVALID);
    WITH_ELF(fx, ph.p_offset = ph.p_vaddr = 0x1000);
    assert_int_equal(validate(fx), INVALID); /* 0 = a segment entirely past the end */
    WITH_ELF(fx, { ph.p_offset = UINT64_MAX - 15; ph.p_align = 0; });
    assert_int_equal(validate(fx), INVALID); /* 0 = p_offset + p_filesz wrapped */
    WITH_ELF(fx, ph.p_memsz = ph.p_filesz - 1);
    assert_int_equal(validate(fx), INVALID); /* 0 = more file bytes than memory for them */
    WITH_ELF(fx, ph.p_vaddr = UINT64_MAX - 15);
    assert_int_equal(validate(fx), INVALID); /* 0 = a memory range that wraps */
    WITH_ELF(fx, ph.p_align = 0x1800);
    assert_int_equal(validate(fx), INVALID); /* 0 = an alignment that is no power of two */
    WITH_ELF(fx, ph.p_vaddr = 8);
    assert_int_equal(validate(fx), INVALID); /* 0 = offset and address disagree modulo p_align */
    WITH_ELF(fx, ph.p_type = PT_NOTE);
    assert_int_equal(validate(fx), INVALID); /* 0 = no PT_LOAD: nothing to map */
    WITH_ELF(fx, { ph.p_type = PT_NOTE; ph.p_filesz = ELF_A_BYTES + 1; });
    assert_int_equal(validate(fx), INVALID); /* 0 = only PT_LOAD segments are range-checked */
}

/* Two program headers (a second PT_LOAD or a PT_DYNAMIC after the stub's
 * PT_LOAD) in a binary of its own: the rules between segments. */
static void validate_rejects_elf_segments_that_disagree(void **state)
{
    (void)state;
    enum { SIZE = 0x2000 + 64 };
    static unsigned char bin[SIZE];
    const struct {
        uint32_t type;
        uint64_t offset, vaddr, filesz, memsz;
        int expect;
        const char *why;
    } cases[] = {
        {PT_LOAD, 0x2000, 0x2000, 64, 64, 0, "INVALID: two ascending loads are refused"},
        {PT_LOAD, 0x2000, 0, 64, 64, INVALID, "0 = loads out of order: the span is miscomputed"},
        {PT_LOAD, 0x2000, 0x0, 0, 0, INVALID, "0 = loads overlapping in memory"},
        {PT_DYNAMIC, 0x20, 0x20, 0x40, 0x40, 0, "INVALID: a dynamic section inside the load"},
        {PT_DYNAMIC, 0x2000, 0x2000, 64, 64, INVALID, "0 = a dynamic section no load maps"},
        {PT_DYNAMIC, 0x90, 0x90, 0x20, 0x40, INVALID,
         "0 = a dynamic section past the load's file bytes"},
        {PT_DYNAMIC, 0x20, 0x20, 0x40, 0x20, INVALID, "0 = a dynamic section with filesz > memsz"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        elf_stub_fill(bin, SIZE, 8);
        Elf64_Ehdr eh;
        Elf64_Phdr ph;
        memcpy(&eh, bin, sizeof eh);
        eh.e_phnum = 2;
        memcpy(bin, &eh, sizeof eh);
        memset(&ph, 0, sizeof ph);
        ph.p_type = cases[k].type;
        ph.p_offset = cases[k].offset;
        ph.p_vaddr = cases[k].vaddr;
        ph.p_filesz = cases[k].filesz;
        ph.p_memsz = cases[k].memsz;
        ph.p_align = cases[k].type == PT_LOAD ? 0x1000 : 8;
        memcpy(bin + ELF_STUB_PHDR + sizeof ph, &ph, sizeof ph);
        /* the stub's PT_LOAD covers the headers, now 0..0xb0 */
        memcpy(&ph, bin + ELF_STUB_PHDR, sizeof ph);
        ph.p_filesz = ph.p_memsz = sizeof eh + 2 * sizeof ph;
        memcpy(bin + ELF_STUB_PHDR, &ph, sizeof ph);
        struct simpler_callable_builder *b;
        assert_int_equal(simpler_callable_builder_create(&b), 0);
        int rc = simpler_callable_builder_set_orchestration(b, ELF, bin, SIZE, "main", NULL,
                                                            NULL, 0);
        simpler_callable_builder_destroy(b);
        if (rc != cases[k].expect)
            fail_msg("case %zu: %d (%s)", k, rc, cases[k].why);
    }
}

static void validate_rejects_binaries_overlapping_the_child_table(void **state)
{
    (void)state;
    /* A stub at 320 (right after the header) and the child table right
     * after it at 440; bytes past a stub's headers are opaque payload, so
     * the same stub stated 80 bytes longer is still a valid ELF binary,
     * whose payload is the first record. */
    size_t bytes;
    unsigned char *image = image_with_table_gap(ELF_STUB_HEADERS, &bytes);
    elf_stub_fill(image + sizeof(header_t), ELF_STUB_HEADERS, 6);
    header_t h = get_header(image);
    h.orch_kind = ELF;
    h.orch_offset = sizeof(header_t);
    h.orch_bytes = ELF_STUB_HEADERS;
    put_header(image, &h);
    assert_int_equal(simpler_callable_validate(image, bytes), 0); /* INVALID: touching is overlap */
    h.orch_bytes = ELF_STUB_HEADERS + 80;
    put_header(image, &h);
    /* 0 = the child table doubles as a binary: bytes trusted as records are
     * also handed to the loader */
    assert_int_equal(simpler_callable_validate(image, bytes), INVALID);
    free(image);
}

static void validate_rejects_symbol_forms_with_bytes_and_unknown_kinds(void **state)
{
    struct fixture *fx = *state;
    WITH_HEADER(fx, h.orch_kind = SYMBOL);
    /* 0 = a symbol reference also claims bytes: which one is loaded? */
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, { h.orch_kind = SYMBOL; h.orch_bytes = 0; });
    assert_int_equal(validate(fx), INVALID); /* 0 = a symbol keeps an offset */
    WITH_HEADER(fx, { h.orch_kind = SYMBOL; h.orch_offset = 0; h.orch_bytes = 0; });
    assert_int_equal(validate(fx), 0); /* INVALID: a symbol orchestration is refused */
    WITH_CHILD(fx, 1, c.binary_bytes = 4);
    assert_int_equal(validate(fx), INVALID);
    WITH_CHILD(fx, 1, c.binary_offset = GOOD_ELF_A);
    assert_int_equal(validate(fx), INVALID);
    WITH_CHILD(fx, 0, c.binary_kind = SYMBOL);
    assert_int_equal(validate(fx), INVALID);
    WITH_HEADER(fx, h.orch_kind = 0);
    assert_int_equal(validate(fx), INVALID); /* 0 = an unknown binary kind is trusted */
    WITH_HEADER(fx, h.orch_kind = 3);
    assert_int_equal(validate(fx), INVALID);
    WITH_CHILD(fx, 1, c.binary_kind = 0);
    assert_int_equal(validate(fx), INVALID);
}

/* ---- builder ----------------------------------------------------------- */


static void builder_create_and_finish_reject_null_outputs(void **state)
{
    (void)state;
    assert_int_equal(simpler_callable_builder_create(NULL), INVALID);
    struct simpler_callable_builder *b;
    build_good(&b);
    void *image = (void *)(uintptr_t)0x1;
    size_t bytes = 7;
    assert_int_equal(simpler_callable_builder_finish(b, NULL, &bytes), INVALID);
    assert_int_equal(simpler_callable_builder_finish(b, &image, NULL), INVALID);
    assert_int_equal(simpler_callable_builder_finish(NULL, &image, &bytes), INVALID);
    assert_ptr_equal(image, (void *)(uintptr_t)0x1); /* written on failure */
    assert_int_equal(bytes, 7);
    simpler_callable_builder_destroy(b);
    simpler_callable_builder_destroy(NULL);
    simpler_callable_free(NULL);
}

static void builder_stores_identical_elf_binaries_once(void **state)
{
    (void)state;
    unsigned char a[ELF_A_BYTES], a_twin[ELF_A_BYTES], a_other[ELF_A_BYTES];
    fill_elf(a, sizeof a, 1);
    memcpy(a_twin, a, sizeof a); /* equal bytes at another address */
    fill_elf(a_other, sizeof a_other, 9);
    struct simpler_callable_builder *b;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, ELF, a, sizeof a, "main", NULL,
                                                                NULL, 0), 0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 1, AIV, ELF, a_twin, sizeof a_twin,
                                                         "k1", NULL, 0), 0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 2, AIV, ELF, a, sizeof a, "k2",
                                                         NULL, 0), 0);
    void *image;
    size_t bytes;
    finish_ok(b, &image, &bytes);
    /* header 320 + 2 children 256 = 576 (64-aligned) + one copy of 300;
     * 1216 = each reference got its own copy */
    assert_int_equal(bytes, 576 + ELF_A_BYTES);
    simpler_callable_free(image);

    /* Same size, different bytes: two copies. A prefix of a stored binary
     * is a different binary too. */
    assert_int_equal(simpler_callable_builder_add_kernel(b, 3, AIC, ELF, a_other, sizeof a_other,
                                                         "k3", NULL, 0), 0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 4, AIC, ELF, a, sizeof a - 1, "k4",
                                                         NULL, 0), 0);
    finish_ok(b, &image, &bytes);
    /* 320 + 4*128 = 832; a at 832, a_other at 1152, the prefix at 1472 */
    assert_int_equal(bytes, 1472 + ELF_A_BYTES - 1); /* less: bytes compared only by size or prefix */
    child_t c;
    memcpy(&c, (unsigned char *)image + 320 + 3 * sizeof c, sizeof c);
    assert_int_equal(c.binary_offset, 1472);
    assert_int_equal(c.binary_bytes, ELF_A_BYTES - 1);
    simpler_callable_free(image);
    simpler_callable_builder_destroy(b);
}

static void builder_refuses_a_duplicate_func_id_and_changes_nothing(void **state)
{
    (void)state;
    struct simpler_callable_builder *b;
    build_good(&b);
    void *before, *after;
    size_t before_bytes, after_bytes;
    finish_ok(b, &before, &before_bytes);
    unsigned char other[ELF_STUB_HEADERS + 8];
    fill_elf(other, sizeof other, 5);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 5, AIV, ELF, other, sizeof other,
                                                         "again", NULL, 0), STATE);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 0, AIC, SYMBOL, NULL, 0, "again",
                                                         NULL, 0), STATE);
    /* arguments are checked before state: a bad symbol under a used func_id */
    assert_int_equal(simpler_callable_builder_add_kernel(b, 0, AIC, SYMBOL, NULL, 0, "a/b",
                                                         NULL, 0), INVALID);
    finish_ok(b, &after, &after_bytes);
    /* different: the refused kernel (or its binary) was kept */
    assert_int_equal(after_bytes, before_bytes);
    assert_memory_equal(after, before, before_bytes);
    simpler_callable_free(before);
    simpler_callable_free(after);
    simpler_callable_builder_destroy(b);
}

static void builder_refuses_a_second_orchestration(void **state)
{
    (void)state;
    struct simpler_callable_builder *b;
    build_good(&b);
    void *before, *after;
    size_t before_bytes, after_bytes;
    finish_ok(b, &before, &before_bytes);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, SYMBOL, NULL, 0, "other", NULL,
                                                                NULL, 0), STATE);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, ELF, elf_b, sizeof elf_b,
                                                                "other", NULL, NULL, 0), STATE);
    /* arguments before state */
    assert_int_equal(simpler_callable_builder_set_orchestration(b, SYMBOL, NULL, 0, "", NULL,
                                                                NULL, 0), INVALID);
    finish_ok(b, &after, &after_bytes);
    assert_int_equal(after_bytes, before_bytes); /* different: the second orchestration was taken */
    assert_memory_equal(after, before, before_bytes);
    simpler_callable_free(before);
    simpler_callable_free(after);
    simpler_callable_builder_destroy(b);
}

static void builder_finish_needs_an_orchestration(void **state)
{
    (void)state;
    struct simpler_callable_builder *b;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    void *image = (void *)(uintptr_t)0x1;
    size_t bytes = 7;
    assert_int_equal(simpler_callable_builder_finish(b, &image, &bytes), STATE);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 3, AIC, SYMBOL, NULL, 0, "k", NULL, 0),
                     0);
    /* 0 = an image without an entry: the validator would refuse it anyway */
    assert_int_equal(simpler_callable_builder_finish(b, &image, &bytes), STATE);
    assert_ptr_equal(image, (void *)(uintptr_t)0x1);
    assert_int_equal(bytes, 7);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, SYMBOL, NULL, 0, "main", NULL,
                                                                NULL, 0), 0);
    finish_ok(b, &image, &bytes);
    /* header + one child, no binaries, no padding after the table */
    assert_int_equal(bytes, sizeof(header_t) + sizeof(child_t));
    simpler_callable_free(image);
    simpler_callable_builder_destroy(b);
}

static void builder_finish_twice_gives_identical_aligned_bytes(void **state)
{
    (void)state;
    struct simpler_callable_builder *b;
    build_good(&b);
    void *first, *second;
    size_t first_bytes, second_bytes;
    finish_ok(b, &first, &first_bytes);
    finish_ok(b, &second, &second_bytes);
    assert_ptr_not_equal(first, second);
    assert_int_equal(first_bytes, second_bytes);
    /* different: uninitialised padding or name tails, or finish changed the builder */
    assert_memory_equal(first, second, first_bytes);
    assert_int_equal((uintptr_t)first % 64, 0);  /* other: not the 64-aligned allocation */
    assert_int_equal((uintptr_t)second % 64, 0);
    simpler_callable_free(first);
    simpler_callable_free(second);
    simpler_callable_builder_destroy(b);
}

static void builder_copies_everything_it_is_given(void **state)
{
    (void)state;
    unsigned char binary[ELF_STUB_HEADERS + 40];
    fill_elf(binary, sizeof binary, 3);
    char entry[16] = "entry", config[16] = "config", symbol[16] = "kern";
    enum simpler_direction sig[2] = {IN, OUT};
    struct simpler_callable_builder *b;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, ELF, binary, sizeof binary,
                                                                entry, config, sig, 2), 0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 9, AIC, ELF, binary, sizeof binary,
                                                         symbol, sig, 2), 0);
    memset(binary + ELF_STUB_HEADERS, 0xee, sizeof binary - ELF_STUB_HEADERS);
    strcpy(entry, "changed");
    strcpy(config, "changed");
    strcpy(symbol, "changed");
    sig[0] = SCALAR;
    void *image;
    size_t bytes;
    finish_ok(b, &image, &bytes);
    unsigned char expected[ELF_STUB_HEADERS + 40];
    fill_elf(expected, sizeof expected, 3);
    header_t h = get_header(image);
    child_t c;
    memcpy(&c, (unsigned char *)image + h.children_offset, sizeof c);
    /* other: the builder kept the caller's pointer, not a copy */
    assert_memory_equal((unsigned char *)image + h.orch_offset, expected, sizeof expected);
    assert_string_equal(h.entry_name, "entry");
    assert_string_equal(h.config_name, "config");
    assert_int_equal(h.signature[0], IN);
    assert_int_equal(h.scalar_count, 0);
    assert_string_equal(c.symbol, "kern");
    assert_int_equal(c.signature[0], IN);
    assert_int_equal(c.core_type, AIC);
    simpler_callable_free(image);
    simpler_callable_builder_destroy(b);
}

static void builder_refuses_what_the_validator_would_refuse(void **state)
{
    (void)state;
    struct simpler_callable_builder *b;
    build_good(&b);
    void *before, *after;
    size_t before_bytes, after_bytes;
    finish_ok(b, &before, &before_bytes);

    char long_name[SIMPLER_CALLABLE_NAME_MAX + 1];
    memset(long_name, 'n', SIMPLER_CALLABLE_NAME_MAX);
    long_name[SIMPLER_CALLABLE_NAME_MAX] = '\0'; /* 64 characters: no room for the NUL */
    unsigned char not_elf[16] = "\x7f" "ELG";
    enum simpler_direction sig[SIMPLER_CALLABLE_MAX_ARGS + 1];
    for (size_t i = 0; i < sizeof sig / sizeof sig[0]; i++)
        sig[i] = IN;
    enum simpler_direction scalars[SIMPLER_CALLABLE_MAX_SCALARS + 1];
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
        scalars[i] = SCALAR;
    enum simpler_direction bad_dir[2] = {IN, (enum simpler_direction)4};
    enum simpler_direction neg_dir[1] = {(enum simpler_direction)-1};

    /* A fresh builder for the orchestration checks (b already has one, and
     * arguments are checked first, so both would answer INVALID). */
    struct simpler_callable_builder *o;
    assert_int_equal(simpler_callable_builder_create(&o), 0);
#define ORCH(kind, bin, n, entry, config, s, count) \
    simpler_callable_builder_set_orchestration(o, kind, bin, n, entry, config, s, count)
    assert_int_equal(ORCH(SYMBOL, NULL, 0, NULL, NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 0, "", NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 0, long_name, NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 0, "lib/main", NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 0, "ma\tin", NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 0, "main", "", NULL, 0), INVALID); /* none is NULL */
    assert_int_equal(ORCH(SYMBOL, NULL, 0, "main", "c/fg", NULL, 0), INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 0, "main", long_name, NULL, 0), INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 0, "main", NULL, NULL, 1), INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 0, "main", NULL, sig, SIMPLER_CALLABLE_MAX_TENSORS + 1),
                     INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 0, "main", NULL, scalars, SIMPLER_CALLABLE_MAX_SCALARS + 1),
                     INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 0, "main", NULL, sig, SIMPLER_CALLABLE_MAX_ARGS + 1),
                     INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 0, "main", NULL, bad_dir, 2), INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 0, "main", NULL, neg_dir, 1), INVALID);
    assert_int_equal(ORCH(SYMBOL, elf_a, 0, "main", NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH(SYMBOL, NULL, 4, "main", NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH(SYMBOL, elf_a, sizeof elf_a, "main", NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH(ELF, NULL, 0, "main", NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH(ELF, NULL, 100, "main", NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH(ELF, elf_a, 0, "main", NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH(ELF, elf_a, 3, "main", NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH(ELF, not_elf, sizeof not_elf, "main", NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH((enum simpler_binary_kind)0, NULL, 0, "main", NULL, NULL, 0), INVALID);
    assert_int_equal(ORCH((enum simpler_binary_kind)3, elf_a, sizeof elf_a, "main", NULL, NULL, 0),
                     INVALID);
#undef ORCH
    void *image = (void *)(uintptr_t)0x1;
    size_t bytes = 7;
    /* STATE: a refused set_orchestration was half taken */
    assert_int_equal(simpler_callable_builder_finish(o, &image, &bytes), STATE);
    simpler_callable_builder_destroy(o);

#define KERNEL(id, core, kind, bin, n, symbol, s, count) \
    simpler_callable_builder_add_kernel(b, id, core, kind, bin, n, symbol, s, count)
    assert_int_equal(KERNEL(-1, AIC, SYMBOL, NULL, 0, "k", NULL, 0), INVALID);
    assert_int_equal(KERNEL(SIMPLER_CALLABLE_MAX_FUNC_ID, AIC, SYMBOL, NULL, 0, "k", NULL, 0),
                     INVALID);
    assert_int_equal(KERNEL(INT32_MIN, AIC, SYMBOL, NULL, 0, "k", NULL, 0), INVALID);
    assert_int_equal(KERNEL(100, (enum simpler_kernel_core)2, SYMBOL, NULL, 0, "k", NULL, 0),
                     INVALID);
    assert_int_equal(KERNEL(100, (enum simpler_kernel_core)-1, SYMBOL, NULL, 0, "k", NULL, 0),
                     INVALID);
    assert_int_equal(KERNEL(100, AIC, SYMBOL, NULL, 0, NULL, NULL, 0), INVALID);
    assert_int_equal(KERNEL(100, AIC, SYMBOL, NULL, 0, "", NULL, 0), INVALID);
    assert_int_equal(KERNEL(100, AIC, SYMBOL, NULL, 0, long_name, NULL, 0), INVALID);
    assert_int_equal(KERNEL(100, AIC, SYMBOL, NULL, 0, "k/k", NULL, 0), INVALID);
    assert_int_equal(KERNEL(100, AIC, SYMBOL, NULL, 0, "k", sig, SIMPLER_KERNEL_MAX_ARGS + 1),
                     INVALID);
    assert_int_equal(KERNEL(100, AIC, SYMBOL, NULL, 0, "k", NULL, 2), INVALID);
    assert_int_equal(KERNEL(100, AIC, SYMBOL, NULL, 0, "k", bad_dir, 2), INVALID);
    assert_int_equal(KERNEL(100, AIC, SYMBOL, elf_b, sizeof elf_b, "k", NULL, 0), INVALID);
    assert_int_equal(KERNEL(100, AIC, ELF, NULL, 0, "k", NULL, 0), INVALID);
    assert_int_equal(KERNEL(100, AIC, ELF, elf_b, 3, "k", NULL, 0), INVALID);
    assert_int_equal(KERNEL(100, AIC, ELF, not_elf, sizeof not_elf, "k", NULL, 0), INVALID);
    assert_int_equal(KERNEL(100, AIC, (enum simpler_binary_kind)0, NULL, 0, "k", NULL, 0), INVALID);
#undef KERNEL
    assert_int_equal(simpler_callable_builder_add_kernel(NULL, 100, AIC, SYMBOL, NULL, 0, "k",
                                                         NULL, 0), INVALID);
    assert_int_equal(simpler_callable_builder_set_orchestration(NULL, SYMBOL, NULL, 0, "m", NULL,
                                                                NULL, 0), INVALID);

    finish_ok(b, &after, &after_bytes);
    /* different: a refused call left something behind */
    assert_int_equal(after_bytes, before_bytes);
    assert_memory_equal(after, before, before_bytes);
    /* func_id 100 is still free: no refused call registered it */
    assert_int_equal(simpler_callable_builder_add_kernel(b, 100, AIC, SYMBOL, NULL, 0, "k", NULL,
                                                         0), 0);
    simpler_callable_free(before);
    simpler_callable_free(after);
    simpler_callable_builder_destroy(b);
}

static void builder_accepts_everything_at_the_limits(void **state)
{
    (void)state;
    char name[SIMPLER_CALLABLE_NAME_MAX];
    memset(name, '~', sizeof name - 1); /* '~' and ' ' are the printable extremes */
    name[0] = ' ';
    name[sizeof name - 1] = '\0';
    enum simpler_direction sig[SIMPLER_CALLABLE_MAX_ARGS];
    for (uint32_t i = 0; i < SIMPLER_CALLABLE_MAX_ARGS; i++)
        sig[i] = i % 2 ? SCALAR : INOUT; /* 64 tensors and 64 scalars */
    struct simpler_callable_builder *b;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, SYMBOL, NULL, 0, name, name,
                                                                sig, SIMPLER_CALLABLE_MAX_ARGS), 0);
    for (int32_t id = 0; id < SIMPLER_CALLABLE_MAX_FUNC_ID; id++)
        assert_int_equal(simpler_callable_builder_add_kernel(b, id, id % 2 ? AIV : AIC, SYMBOL,
                                                             NULL, 0, name, sig,
                                                             SIMPLER_KERNEL_MAX_ARGS), 0);
    void *image;
    size_t bytes;
    finish_ok(b, &image, &bytes);
    assert_int_equal(bytes, sizeof(header_t) + SIMPLER_CALLABLE_MAX_CHILDREN * sizeof(child_t));
    header_t h = get_header(image);
    assert_int_equal(h.child_count, SIMPLER_CALLABLE_MAX_CHILDREN);
    assert_int_equal(h.scalar_count, SIMPLER_CALLABLE_MAX_SCALARS);
    simpler_callable_free(image);
    simpler_callable_builder_destroy(b);
}

/* ---- file variants ----------------------------------------------------- */

/* Writes `bytes` bytes to a new temporary file in the working directory
 * (CTest runs each test in the build tree); the caller unlinks `path`. */
static void write_temp(char *path, const void *data, size_t bytes)
{
    strcpy(path, "simpler_callable_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, bytes), (ssize_t)bytes);
    assert_int_equal(close(fd), 0);
}

static void builder_file_variants_read_the_whole_file(void **state)
{
    (void)state;
    struct simpler_callable_builder *b;
    build_good(&b); /* memory forms, also fills elf_a / elf_b */
    void *from_memory, *from_files;
    size_t memory_bytes, file_bytes;
    finish_ok(b, &from_memory, &memory_bytes);
    simpler_callable_builder_destroy(b);

    char path_a[64], path_b[64];
    write_temp(path_a, elf_a, sizeof elf_a);
    write_temp(path_b, elf_b, sizeof elf_b);
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration_file(b, path_a, "orch_main",
                                                                     "orch_config", orch_sig, 5), 0);
    assert_int_equal(simpler_callable_builder_add_kernel_file(b, 0, AIV, path_b, "k_add", add_sig,
                                                              3), 0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 5, AIC, SYMBOL, NULL, 0, "k_mul",
                                                         mul_sig, 3), 0);
    assert_int_equal(simpler_callable_builder_add_kernel_file(b, 7, AIV, path_a, "k_copy", NULL,
                                                              0), 0);
    finish_ok(b, &from_files, &file_bytes);
    /* different: a short read, or the file copy not de-duplicated */
    assert_int_equal(file_bytes, memory_bytes);
    assert_memory_equal(from_files, from_memory, memory_bytes);
    simpler_callable_free(from_memory);
    simpler_callable_free(from_files);
    simpler_callable_builder_destroy(b);
    unlink(path_a);
    unlink(path_b);
}

static void builder_file_variants_refuse_unreadable_empty_or_non_elf_files(void **state)
{
    (void)state;
    fill_elf(elf_b, sizeof elf_b, 2);
    char empty[64], not_elf[64], dir[64] = "simpler_callable_dir_XXXXXX";
    write_temp(empty, "", 0);
    write_temp(not_elf, "#!/bin/sh\n", 10);
    assert_non_null(mkdtemp(dir));
    char missing[80];
    snprintf(missing, sizeof missing, "%s/missing.so", dir);
    const char *paths[] = {NULL, missing, dir, empty, not_elf};

    struct simpler_callable_builder *b;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        assert_int_equal(simpler_callable_builder_set_orchestration_file(b, paths[i], "main", NULL,
                                                                         NULL, 0), INVALID);
        assert_int_equal(simpler_callable_builder_add_kernel_file(b, 1, AIC, paths[i], "k", NULL,
                                                                  0), INVALID);
    }
    /* a good file with a bad name is still refused as an argument */
    char good[64];
    write_temp(good, elf_b, sizeof elf_b);
    assert_int_equal(simpler_callable_builder_set_orchestration_file(b, good, "", NULL, NULL, 0),
                     INVALID);
    assert_int_equal(simpler_callable_builder_set_orchestration_file(NULL, good, "m", NULL, NULL,
                                                                     0), INVALID);
    assert_int_equal(simpler_callable_builder_add_kernel_file(NULL, 1, AIC, good, "k", NULL, 0),
                     INVALID);
    /* nothing was taken: the orchestration and func_id 1 are still free */
    assert_int_equal(simpler_callable_builder_set_orchestration_file(b, good, "main", NULL, NULL,
                                                                     0), 0);
    assert_int_equal(simpler_callable_builder_add_kernel_file(b, 1, AIC, good, "k", NULL, 0), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration_file(b, good, "main", NULL, NULL,
                                                                     0), STATE);
    assert_int_equal(simpler_callable_builder_add_kernel_file(b, 1, AIC, good, "k", NULL, 0),
                     STATE);
    void *image;
    size_t bytes;
    finish_ok(b, &image, &bytes);
    assert_int_equal(bytes, 448 + ELF_B_BYTES); /* more: a refused file was stored */
    simpler_callable_free(image);
    simpler_callable_builder_destroy(b);
    unlink(empty);
    unlink(not_elf);
    unlink(good);
    rmdir(dir);
}

/* ---- host allocation failures ----------------------------------------- */

/* A build that allocates at every kind of point: the builder, file reads
 * (kept and de-duplicated), binary copies, both arrays growing past their
 * first and second capacity, and the image. */
struct build {
    struct simpler_callable_builder *builder;
    void *image;
    size_t bytes;
    const char *path_a;
    const char *path_b;
    unsigned char elf[6][ELF_STUB_HEADERS + 8];
};

#define BUILD_STEPS 14

static int build_step(struct build *s, int step)
{
    struct simpler_callable_builder *b = s->builder;
    switch (step) {
    case 0:
        return simpler_callable_builder_create(&s->builder);
    case 1:
        return simpler_callable_builder_set_orchestration_file(b, s->path_a, "main", "config",
                                                               orch_sig, 5);
    case 2:
        return simpler_callable_builder_add_kernel_file(b, 10, AIC, s->path_b, "k10", add_sig, 3);
    case 3: /* same bytes as the orchestration: de-duplicated */
        return simpler_callable_builder_add_kernel(b, 11, AIV, ELF, elf_a, sizeof elf_a, "k11",
                                                   NULL, 0);
    case 4: /* same file again: read, then de-duplicated */
        return simpler_callable_builder_add_kernel_file(b, 12, AIV, s->path_b, "k12", NULL, 0);
    case 5: case 6: case 7: case 8: case 9: case 10:
        return simpler_callable_builder_add_kernel(b, 20 + step, step % 2 ? AIC : AIV, ELF,
                                                   s->elf[step - 5], sizeof s->elf[0], "kx",
                                                   mul_sig, 3);
    case 11:
        return simpler_callable_builder_add_kernel(b, 40, AIV, SYMBOL, NULL, 0, "ks", NULL, 0);
    case 12:
        return simpler_callable_builder_add_kernel(b, 41, AIC, SYMBOL, NULL, 0, "kt", NULL, 0);
    case 13:
        return simpler_callable_builder_finish(b, &s->image, &s->bytes);
    }
    fail_msg("no step %d", step);
    return -1;
}

static void build_init(struct build *s, const char *path_a, const char *path_b)
{
    memset(s, 0, sizeof *s);
    s->path_a = path_a;
    s->path_b = path_b;
    for (unsigned i = 0; i < 6; i++)
        fill_elf(s->elf[i], sizeof s->elf[i], 10 + i);
}

static void build_release(struct build *s)
{
    simpler_callable_free(s->image);
    simpler_callable_builder_destroy(s->builder);
}

static void builder_fails_cleanly_at_every_host_allocation(void **state)
{
    (void)state;
    fill_elf(elf_a, sizeof elf_a, 1);
    fill_elf(elf_b, sizeof elf_b, 2);
    char path_a[64], path_b[64];
    write_temp(path_a, elf_a, sizeof elf_a);
    write_temp(path_b, elf_b, sizeof elf_b);

    struct build ref;
    build_init(&ref, path_a, path_b);
    uint64_t before = sp_host_alloc_count();
    for (int step = 0; step < BUILD_STEPS; step++)
        assert_int_equal(build_step(&ref, step), 0);
    uint64_t attempts = sp_host_alloc_count() - before;
    /* create: 1; orchestration file: the read and the binaries array;
     * kernel file: the read and the kernels array; elf_a again: none (the
     * orchestration's copy); the file again: the read only; six new
     * binaries: six copies, the kernels array growing at the 5th and 9th
     * kernel and the binaries array at the 5th binary; symbols: none;
     * finish: the image */
    assert_int_equal(attempts, 1 + 2 + 2 + 0 + 1 + (6 + 3) + 0 + 1);

    uint64_t failures = 0;
    for (uint64_t nth = 1;; nth++) {
        struct build s;
        build_init(&s, path_a, path_b);
        int failed_step = -1;
        sp_host_fault_inject(nth);
        for (int step = 0; step < BUILD_STEPS; step++) {
            struct simpler_callable_builder *builder_before = s.builder;
            int rc = build_step(&s, step);
            if (rc == 0)
                continue;
            /* another code: an allocation failure surfaced as something else;
             * a second failure: a failed call broke the builder */
            assert_int_equal(rc, OOM);
            assert_int_equal(failed_step, -1);
            failed_step = step;
            assert_ptr_equal(s.builder, builder_before); /* written on failure */
            assert_null(s.image);
            sp_host_fault_inject(0);
            assert_int_equal(build_step(&s, step), 0); /* the retry works */
        }
        sp_host_fault_inject(0);
        /* different: a failed call left part of its work in the builder */
        assert_int_equal(s.bytes, ref.bytes);
        assert_memory_equal(s.image, ref.image, ref.bytes);
        build_release(&s);
        if (failed_step < 0)
            break;
        failures++;
    }
    /* fewer: an allocation failure was swallowed and the build went on */
    assert_int_equal(failures, attempts);
    build_release(&ref);
    unlink(path_a);
    unlink(path_b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST_WITH(validate_accepts_the_builders_image_laid_out_as_documented,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_null_or_misaligned_images,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_a_size_other_than_total_bytes,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_bad_magic_version_or_header_bytes,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_a_nonzero_reserved_field,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_bad_entry_names, fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_bad_config_names_but_accepts_none,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_bad_kernel_symbols, fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_invalid_directions, fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_a_scalar_count_that_does_not_match_the_signature,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_more_args_tensors_or_scalars_than_the_limits,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_func_ids_out_of_range_or_duplicated,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_an_unknown_core_type, fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_a_child_table_outside_the_image,
                          fixture_setup, fixture_teardown),
        cmocka_unit_test(validate_rejects_a_misaligned_child_table),
        SIMPLER_TEST_WITH(validate_rejects_more_children_than_the_limit,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_binaries_past_the_end_or_wrapping,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_misaligned_binaries, fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_binaries_without_the_elf_magic,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_elf_binaries_whose_headers_are_broken,
                          fixture_setup, fixture_teardown),
        SIMPLER_TEST_WITH(validate_rejects_elf_segments_outside_the_binary,
                          fixture_setup, fixture_teardown),
        cmocka_unit_test(validate_rejects_elf_segments_that_disagree),
        cmocka_unit_test(validate_rejects_binaries_overlapping_the_child_table),
        SIMPLER_TEST_WITH(validate_rejects_symbol_forms_with_bytes_and_unknown_kinds,
                          fixture_setup, fixture_teardown),
        cmocka_unit_test(builder_create_and_finish_reject_null_outputs),
        cmocka_unit_test(builder_stores_identical_elf_binaries_once),
        cmocka_unit_test(builder_refuses_a_duplicate_func_id_and_changes_nothing),
        cmocka_unit_test(builder_refuses_a_second_orchestration),
        cmocka_unit_test(builder_finish_needs_an_orchestration),
        cmocka_unit_test(builder_finish_twice_gives_identical_aligned_bytes),
        cmocka_unit_test(builder_copies_everything_it_is_given),
        cmocka_unit_test(builder_refuses_what_the_validator_would_refuse),
        cmocka_unit_test(builder_accepts_everything_at_the_limits),
        cmocka_unit_test(builder_file_variants_read_the_whole_file),
        cmocka_unit_test(builder_file_variants_refuse_unreadable_empty_or_non_elf_files),
        cmocka_unit_test(builder_fails_cleanly_at_every_host_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
