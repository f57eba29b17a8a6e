/*
 * common/callable_validate.c — simpler_callable_validate, the one place that
 * decides whether a callable image's bytes may be trusted, and the field
 * rules it shares with the builder (callable_rules.h).
 *
 * Owns: the validator, which treats an image as untrusted bytes: it copies
 * every header and child record out with memcpy, reads nothing outside the
 * `bytes` it was given, and checks each ELF binary's structure
 * (common/elf_check.c) before anything may hand it to the loader. Common
 * code: the host calls it before uploading an image, and the device-side
 * loader (runtime/loader.c) again on the bytes the device holds. Must not
 * touch devices, contexts, loading or host allocation.
 */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/callable_rules.h"
#include "common/checked.h"
#include "common/elf_check.h"
#include "simpler/callable.h"

typedef struct simpler_callable_header callable_header;
typedef struct simpler_callable_child callable_child;

/* Neither record has padding (every byte of one is a named field the
 * validator can check), and a child table that starts right after the
 * header is 8-aligned. */
static_assert(sizeof(callable_header) == 320, "header layout changed");
static_assert(sizeof(callable_child) == 128, "child layout changed");
static_assert(sizeof(callable_header) % 8 == 0, "child table right after the header is aligned");
static_assert(SIMPLER_CALLABLE_MAX_TENSORS + SIMPLER_CALLABLE_MAX_SCALARS >= SIMPLER_CALLABLE_MAX_ARGS,
              "a full signature can be all tensors and scalars");

#define CHILD_TABLE_ALIGN 8u /* so a loader may read the table in place */

/* ----------------------------------------------------------------- rules */

static bool name_char_valid(unsigned char c)
{
    return c >= 0x20 && c <= 0x7e && c != '/'; /* printable ASCII, no path separator */
}

bool sp_callable_name_valid(const char *name, bool may_be_empty)
{
    size_t len = 0;
    while (len < SIMPLER_CALLABLE_NAME_MAX && name[len] != '\0') {
        if (!name_char_valid((unsigned char)name[len]))
            return false;
        len++;
    }
    return len < SIMPLER_CALLABLE_NAME_MAX && (len > 0 || may_be_empty);
}

/* ------------------------------------------------------------- validator */

/* A half-open byte range [begin, end) of an image: the child table. */
struct byte_range {
    uint64_t begin;
    uint64_t end;
};

/* Checks a binary reference: a SYMBOL has neither offset nor bytes; an ELF
 * binary starts at a BINARY_ALIGN multiple after the header, lies inside the
 * image outside the child table, and is structurally a shared object for
 * this host (sp_elf_check: headers, and every segment inside its bytes). */
static bool binary_valid(const unsigned char *image, uint64_t total, uint32_t kind,
                         uint64_t offset, uint64_t len, struct byte_range table)
{
    if (kind == SIMPLER_BINARY_SYMBOL)
        return offset == 0 && len == 0;
    if (kind != SIMPLER_BINARY_ELF)
        return false;
    if (len == 0 || offset % SIMPLER_CALLABLE_BINARY_ALIGN != 0 ||
        offset < sizeof(callable_header) || !sp_range_inside(offset, len, total))
        return false;
    if (offset < table.end && table.begin < offset + len) /* no wrap: inside total */
        return false;
    return sp_elf_check(image + offset, len);
}

/* Checks the header's own fields (everything but the children). */
static bool header_valid(const unsigned char *image, uint64_t total, const callable_header *h,
                         struct byte_range table)
{
    if (h->magic != SIMPLER_CALLABLE_MAGIC || h->version != SIMPLER_CALLABLE_VERSION ||
        h->header_bytes != sizeof(callable_header) || h->total_bytes != total ||
        h->reserved0 != 0)
        return false;
    if (!sp_callable_name_valid(h->entry_name, false) ||
        !sp_callable_name_valid(h->config_name, true))
        return false;
    uint32_t scalars = 0; /* sig_count's own limit: orch_counts_valid */
    for (uint32_t i = 0; i < SIMPLER_CALLABLE_MAX_ARGS; i++) {
        if (i >= h->sig_count) {
            if (h->signature[i] != 0) /* unused entries are 0 */
                return false;
        } else if (!sp_callable_direction_valid(h->signature[i])) {
            return false;
        } else if (h->signature[i] == SIMPLER_DIR_SCALAR) {
            scalars++;
        }
    }
    if (h->scalar_count != scalars || !sp_callable_orch_counts_valid(h->sig_count, h->scalar_count))
        return false;
    return binary_valid(image, total, h->orch_kind, h->orch_offset, h->orch_bytes, table);
}

/* Checks where the child table sits; on success *table is its byte range. */
static bool child_table_valid(uint64_t total, const callable_header *h, struct byte_range *table)
{
    if (h->child_count > SIMPLER_CALLABLE_MAX_CHILDREN)
        return false;
    if (h->child_count == 0) {
        *table = (struct byte_range){0, 0};
        return h->children_offset == 0;
    }
    uint64_t table_bytes = (uint64_t)h->child_count * sizeof(callable_child); /* <= 2^17 */
    if (h->children_offset < sizeof(callable_header) ||
        h->children_offset % CHILD_TABLE_ALIGN != 0 ||
        !sp_range_inside(h->children_offset, table_bytes, total))
        return false;
    *table = (struct byte_range){h->children_offset, h->children_offset + table_bytes};
    return true;
}

static bool child_valid(const unsigned char *image, uint64_t total, const callable_child *c,
                        struct byte_range table)
{
    if (!sp_callable_func_id_valid(c->func_id) || !sp_callable_core_valid(c->core_type) ||
        c->sig_count > SIMPLER_KERNEL_MAX_ARGS || !sp_callable_name_valid(c->symbol, false))
        return false;
    for (uint32_t i = 0; i < SIMPLER_KERNEL_MAX_ARGS; i++) {
        bool used = i < c->sig_count;
        if (used ? !sp_callable_direction_valid(c->signature[i]) : c->signature[i] != 0)
            return false;
    }
    return binary_valid(image, total, c->binary_kind, c->binary_offset, c->binary_bytes, table);
}

int simpler_callable_validate(const void *image, size_t bytes)
{
    if (image == NULL || (uintptr_t)image % SIMPLER_CALLABLE_IMAGE_ALIGN != 0 ||
        bytes < sizeof(callable_header))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    const unsigned char *base = image;
    uint64_t total = bytes;
    callable_header h;
    memcpy(&h, base, sizeof h);
    struct byte_range table;
    if (!child_table_valid(total, &h, &table) || !header_valid(base, total, &h, table))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;

    uint8_t func_id_seen[SIMPLER_CALLABLE_MAX_FUNC_ID / 8] = {0};
    for (uint32_t i = 0; i < h.child_count; i++) {
        callable_child c;
        memcpy(&c, base + table.begin + (uint64_t)i * sizeof c, sizeof c);
        if (!child_valid(base, total, &c, table))
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        uint8_t bit = (uint8_t)(1u << (c.func_id % 8));
        if (func_id_seen[c.func_id / 8] & bit)
            return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
        func_id_seen[c.func_id / 8] |= bit;
    }
    return 0;
}

