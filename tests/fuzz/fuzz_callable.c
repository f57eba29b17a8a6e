/*
 * fuzz_callable.c — libFuzzer target for simpler_callable_validate.
 *
 * Owns: the properties every input must have (the validator answers 0 or
 * INVALID_ARGUMENT, reads only the bytes it is given — ASan checks that,
 * the input sits in a heap buffer of exactly its size — and refuses any
 * misaligned copy) and the invariants an accepted image must satisfy,
 * re-checked here with independent code (128-bit range arithmetic, a
 * quadratic uniqueness check, every ELF binary's headers and segments
 * re-read with u128 sums). An accepted image must also round-trip: the
 * builder takes its orchestration and kernels back without complaint and
 * lays out an image that validates and says the same things. A violated
 * property abort()s, which libFuzzer reports as a crash.
 *
 * Built by tests/fuzz/run-fuzz.sh with clang -fsanitize=fuzzer,address,undefined;
 * links only host/callable.c, the common validator (callable_validate.c,
 * elf_check.c) and host_alloc.c.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/elf_check.h"
#include "simpler/callable.h"

typedef struct simpler_callable_header header_t;
typedef struct simpler_callable_child child_t;
typedef unsigned __int128 u128; /* wide enough that no offset sum here can wrap */

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "fuzz_callable: %s:%d: violated: %s\n", __FILE__,    \
                    __LINE__, #cond);                                            \
            abort();                                                             \
        }                                                                        \
    } while (0)

static void check_name(const char *field, bool may_be_empty)
{
    const char *end = memchr(field, '\0', SIMPLER_CALLABLE_NAME_MAX);
    CHECK(end != NULL);
    CHECK(end > field || may_be_empty);
    for (const char *p = field; p < end; p++)
        CHECK(*p >= ' ' && *p <= '~' && *p != '/');
}

/* What the validator promises of an accepted ELF binary of `bytes` bytes:
 * a 64-bit shared object for this host whose program header table, section
 * header table and every segment's file bytes lie inside `bytes`, with at
 * least one PT_LOAD, each holding no more file bytes than memory. */
static void check_elf(const unsigned char *elf, uint64_t bytes)
{
    Elf64_Ehdr eh;
    CHECK(bytes >= sizeof eh);
    memcpy(&eh, elf, sizeof eh);
    CHECK(memcmp(eh.e_ident, "\x7f" "ELF", 4) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64);
    CHECK(eh.e_ident[EI_DATA] == SP_ELF_HOST_DATA && eh.e_type == ET_DYN);
    CHECK(eh.e_machine == SP_ELF_HOST_MACHINE && eh.e_ehsize == sizeof eh);
    CHECK(eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0);
    CHECK((u128)eh.e_phoff + (u128)eh.e_phnum * sizeof(Elf64_Phdr) <= bytes);
    CHECK(eh.e_phoff >= sizeof eh);
    if (eh.e_shoff != 0)
        CHECK((u128)eh.e_shoff + (u128)eh.e_shnum * eh.e_shentsize <= bytes);
    uint32_t loads = 0;
    for (uint32_t i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, elf + eh.e_phoff + (size_t)i * sizeof ph, sizeof ph);
        CHECK((u128)ph.p_offset + ph.p_filesz <= bytes);
        if (ph.p_type == PT_LOAD) {
            CHECK(ph.p_filesz <= ph.p_memsz);
            CHECK((u128)ph.p_vaddr + ph.p_memsz <= UINT64_MAX);
            loads++;
        }
    }
    CHECK(loads > 0);
}

/* Checks one binary reference; returns true for an ELF one. */
static bool check_binary(const unsigned char *image, size_t size, uint32_t kind, uint64_t offset,
                         uint64_t bytes, u128 table_begin, u128 table_end)
{
    if (kind == SIMPLER_BINARY_SYMBOL) {
        CHECK(offset == 0 && bytes == 0);
        return false;
    }
    CHECK(kind == SIMPLER_BINARY_ELF);
    CHECK(bytes >= 4);
    CHECK((u128)offset + bytes <= size);
    CHECK(offset >= sizeof(header_t));
    CHECK(offset % SIMPLER_CALLABLE_BINARY_ALIGN == 0);
    CHECK((u128)offset + bytes <= table_begin || offset >= table_end);
    check_elf(image + offset, bytes);
    return true;
}

static void check_signature(const uint8_t *signature, size_t field, uint32_t count)
{
    for (size_t i = 0; i < field; i++)
        CHECK(i < count ? signature[i] <= SIMPLER_DIR_INOUT : signature[i] == 0);
}

/* Re-checks what the validator promised about an image it accepted. */
static void check_accepted(const unsigned char *image, size_t size)
{
    CHECK(size >= sizeof(header_t));
    header_t h;
    memcpy(&h, image, sizeof h);
    CHECK(h.magic == SIMPLER_CALLABLE_MAGIC && h.version == SIMPLER_CALLABLE_VERSION);
    CHECK(h.header_bytes == sizeof h && h.total_bytes == size && h.reserved0 == 0);
    check_name(h.entry_name, false);
    check_name(h.config_name, true);
    CHECK(h.sig_count <= SIMPLER_CALLABLE_MAX_ARGS);
    check_signature(h.signature, sizeof h.signature, h.sig_count);
    uint32_t scalars = 0;
    for (uint32_t i = 0; i < h.sig_count; i++)
        scalars += h.signature[i] == SIMPLER_DIR_SCALAR;
    CHECK(scalars == h.scalar_count);
    CHECK(scalars <= SIMPLER_CALLABLE_MAX_SCALARS);
    CHECK(h.sig_count - scalars <= SIMPLER_CALLABLE_MAX_TENSORS);

    CHECK(h.child_count <= SIMPLER_CALLABLE_MAX_CHILDREN);
    u128 table_begin = h.children_offset;
    u128 table_end = table_begin + (u128)h.child_count * sizeof(child_t);
    if (h.child_count == 0) {
        CHECK(h.children_offset == 0);
    } else {
        CHECK(table_begin >= sizeof h && table_end <= size && h.children_offset % 8 == 0);
    }
    check_binary(image, size, h.orch_kind, h.orch_offset, h.orch_bytes, table_begin, table_end);
    for (uint32_t i = 0; i < h.child_count; i++) {
        child_t c;
        memcpy(&c, image + h.children_offset + (size_t)i * sizeof c, sizeof c);
        CHECK(c.func_id >= 0 && c.func_id < SIMPLER_CALLABLE_MAX_FUNC_ID);
        CHECK(c.core_type == SIMPLER_CORE_AIC || c.core_type == SIMPLER_CORE_AIV);
        CHECK(c.sig_count <= SIMPLER_KERNEL_MAX_ARGS);
        check_signature(c.signature, sizeof c.signature, c.sig_count);
        check_name(c.symbol, false);
        check_binary(image, size, c.binary_kind, c.binary_offset, c.binary_bytes, table_begin,
                     table_end);
        for (uint32_t j = 0; j < i; j++) {
            child_t earlier;
            memcpy(&earlier, image + h.children_offset + (size_t)j * sizeof earlier, sizeof earlier);
            CHECK(earlier.func_id != c.func_id);
        }
    }
}

static void directions_of(const uint8_t *signature, uint32_t count,
                          enum simpler_direction *out)
{
    for (uint32_t i = 0; i < count; i++)
        out[i] = (enum simpler_direction)signature[i];
}

/* True when binary references a (in image a) and b (in image b) name the
 * same thing: the same symbol form, or the same ELF bytes. */
static bool same_binary(const unsigned char *a, uint32_t a_kind, uint64_t a_offset,
                        uint64_t a_bytes, const unsigned char *b, uint32_t b_kind,
                        uint64_t b_offset, uint64_t b_bytes)
{
    return a_kind == b_kind && a_bytes == b_bytes &&
           (a_bytes == 0 || memcmp(a + a_offset, b + b_offset, a_bytes) == 0);
}

/* Feeds an accepted image's contents back through the builder: it must
 * accept every piece (the builder refuses exactly what the validator
 * would) and produce an image that validates and says the same things. */
static void check_round_trip(const unsigned char *image, size_t size)
{
    (void)size;
    header_t h;
    memcpy(&h, image, sizeof h);
    struct simpler_callable_builder *b = NULL;
    CHECK(simpler_callable_builder_create(&b) == 0);
    enum simpler_direction sig[SIMPLER_CALLABLE_MAX_ARGS];
    directions_of(h.signature, h.sig_count, sig);
    bool elf = h.orch_kind == SIMPLER_BINARY_ELF;
    CHECK(simpler_callable_builder_set_orchestration(
              b, (enum simpler_binary_kind)h.orch_kind, elf ? image + h.orch_offset : NULL,
              (size_t)h.orch_bytes, h.entry_name, h.config_name[0] ? h.config_name : NULL,
              h.sig_count ? sig : NULL, h.sig_count) == 0);
    for (uint32_t i = 0; i < h.child_count; i++) {
        child_t c;
        memcpy(&c, image + h.children_offset + (size_t)i * sizeof c, sizeof c);
        directions_of(c.signature, c.sig_count, sig);
        elf = c.binary_kind == SIMPLER_BINARY_ELF;
        CHECK(simpler_callable_builder_add_kernel(
                  b, c.func_id, (enum simpler_kernel_core)c.core_type,
                  (enum simpler_binary_kind)c.binary_kind, elf ? image + c.binary_offset : NULL,
                  (size_t)c.binary_bytes, c.symbol, c.sig_count ? sig : NULL, c.sig_count) == 0);
    }
    void *rebuilt_mem = NULL;
    size_t rebuilt_size = 0;
    CHECK(simpler_callable_builder_finish(b, &rebuilt_mem, &rebuilt_size) == 0);
    simpler_callable_builder_destroy(b);
    const unsigned char *rebuilt = rebuilt_mem;
    CHECK(simpler_callable_validate(rebuilt, rebuilt_size) == 0);

    header_t r;
    memcpy(&r, rebuilt, sizeof r);
    CHECK(r.sig_count == h.sig_count && r.scalar_count == h.scalar_count);
    CHECK(r.child_count == h.child_count);
    CHECK(strcmp(r.entry_name, h.entry_name) == 0 && strcmp(r.config_name, h.config_name) == 0);
    CHECK(memcmp(r.signature, h.signature, sizeof r.signature) == 0);
    CHECK(same_binary(image, h.orch_kind, h.orch_offset, h.orch_bytes, rebuilt, r.orch_kind,
                      r.orch_offset, r.orch_bytes));
    for (uint32_t i = 0; i < h.child_count; i++) {
        child_t c, rc;
        memcpy(&c, image + h.children_offset + (size_t)i * sizeof c, sizeof c);
        memcpy(&rc, rebuilt + r.children_offset + (size_t)i * sizeof rc, sizeof rc);
        CHECK(rc.func_id == c.func_id && rc.core_type == c.core_type);
        CHECK(rc.sig_count == c.sig_count);
        CHECK(memcmp(rc.signature, c.signature, sizeof rc.signature) == 0);
        CHECK(strcmp(rc.symbol, c.symbol) == 0);
        CHECK(same_binary(image, c.binary_kind, c.binary_offset, c.binary_bytes, rebuilt,
                          rc.binary_kind, rc.binary_offset, rc.binary_bytes));
    }
    simpler_callable_free(rebuilt_mem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Exactly `size` bytes (malloc's alignment is at least 8): ASan flags
     * any read past the image. */
    unsigned char *image = malloc(size ? size : 1);
    CHECK(image != NULL && (uintptr_t)image % SIMPLER_CALLABLE_IMAGE_ALIGN == 0);
    if (size > 0)
        memcpy(image, data, size);
    int rc = simpler_callable_validate(image, size);
    CHECK(rc == 0 || rc == PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    CHECK(simpler_callable_validate(image, size) == rc); /* no hidden state */
    if (rc == 0) {
        check_accepted(image, size);
        check_round_trip(image, size);
    }
    free(image);

    /* The same bytes one past an aligned address are always refused. */
    unsigned char *shifted = malloc(size + 1);
    CHECK(shifted != NULL);
    if (size > 0)
        memcpy(shifted + 1, data, size);
    CHECK(simpler_callable_validate(shifted + 1, size) == PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    free(shifted);
    return 0;
}
