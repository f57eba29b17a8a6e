/*
 * simpler/callable.h — callable images: the unit a user ships.
 *
 * Owns: the flat, position-independent byte layout of a callable (one
 * orchestration function plus its child kernels), the builder that makes
 * images and the validator that checks one before anything trusts it.
 * Nothing in an image is a pointer: every reference is an offset from the
 * image's first byte, so an image can be copied, uploaded and loaded
 * anywhere.
 *
 * Layout (all integers native-endian, fixed width):
 *   struct simpler_callable_header          at offset 0
 *   struct simpler_callable_child[n]        at header.children_offset
 *   binaries                                each at a multiple of
 *                                           SIMPLER_CALLABLE_BINARY_ALIGN
 *
 * A binary is either an ELF shared object (SIMPLER_BINARY_ELF: its bytes are
 * in the image; the device loads it from memory) or a symbol reference
 * (SIMPLER_BINARY_SYMBOL: no bytes; the name is resolved among the symbols
 * the running process exports — for tests and small programs whose kernels
 * are linked in). The orchestration binary exports the entry named by
 * header.entry_name (a simpler_orch_entry_fn) and, optionally, the config
 * function named by header.config_name (a simpler_orch_config_fn); each
 * kernel binary exports the simpler_kernel_fn named by child.symbol.
 *
 * Signatures: the orchestration signature has one direction per run
 * argument in the order the caller passes them; non-SCALAR entries are the
 * tensors (in order), SCALAR entries the scalars (in order).
 */
#ifndef SIMPLER_CALLABLE_H
#define SIMPLER_CALLABLE_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SIMPLER_CALLABLE_MAGIC 0x4C435053u /* "SPCL" read as little-endian bytes */
#define SIMPLER_CALLABLE_VERSION 1u
#define SIMPLER_CALLABLE_IMAGE_ALIGN 8u    /* an image starts at a multiple of this */
#define SIMPLER_CALLABLE_BINARY_ALIGN 64u  /* every binary offset is a multiple of this */
#define SIMPLER_CALLABLE_NAME_MAX 64u      /* name fields, including the terminating NUL */
#define SIMPLER_CALLABLE_MAX_ARGS 128u     /* orchestration signature entries */
#define SIMPLER_CALLABLE_MAX_TENSORS 64u   /* = SIMPLER_ORCH_MAX_TENSORS */
#define SIMPLER_CALLABLE_MAX_SCALARS 64u   /* = SIMPLER_ORCH_MAX_SCALARS */
#define SIMPLER_CALLABLE_MAX_CHILDREN 1024u
#define SIMPLER_CALLABLE_MAX_FUNC_ID 1024  /* func_ids are 0..this-1 (= SIMPLER_MAX_FUNC_IDS) */
#define SIMPLER_KERNEL_MAX_ARGS 32u        /* kernel signature entries */

enum simpler_direction {
    SIMPLER_DIR_SCALAR = 0,
    SIMPLER_DIR_IN = 1,    /* read by the run: copied to the device before it */
    SIMPLER_DIR_OUT = 2,   /* written by the run: copied back after it */
    SIMPLER_DIR_INOUT = 3, /* both */
};

enum simpler_binary_kind {
    SIMPLER_BINARY_ELF = 1,    /* ELF shared object bytes inside the image */
    SIMPLER_BINARY_SYMBOL = 2, /* a symbol the running process exports; no bytes */
};

enum simpler_kernel_core { SIMPLER_CORE_AIC = 0, SIMPLER_CORE_AIV = 1 };

struct simpler_callable_header {
    uint32_t magic;           /* SIMPLER_CALLABLE_MAGIC */
    uint32_t version;         /* SIMPLER_CALLABLE_VERSION */
    uint64_t total_bytes;     /* the exact size of the image */
    uint32_t header_bytes;    /* sizeof(struct simpler_callable_header) */
    uint32_t sig_count;       /* orchestration signature entries */
    uint32_t scalar_count;    /* SCALAR entries among them */
    uint32_t child_count;     /* kernels */
    uint32_t orch_kind;       /* enum simpler_binary_kind */
    uint32_t reserved0;       /* zero */
    uint64_t orch_offset;     /* ELF: binary offset; SYMBOL: 0 */
    uint64_t orch_bytes;      /* ELF: binary size (> 0); SYMBOL: 0 */
    uint64_t children_offset; /* child table; 0 when child_count is 0 */
    char entry_name[SIMPLER_CALLABLE_NAME_MAX];  /* non-empty */
    char config_name[SIMPLER_CALLABLE_NAME_MAX]; /* empty: no config function */
    uint8_t signature[SIMPLER_CALLABLE_MAX_ARGS]; /* enum simpler_direction; unused entries 0 */
};

struct simpler_callable_child {
    int32_t func_id;        /* 0..SIMPLER_CALLABLE_MAX_FUNC_ID-1, unique in the image */
    uint32_t core_type;     /* enum simpler_kernel_core */
    uint32_t sig_count;     /* kernel signature entries, <= SIMPLER_KERNEL_MAX_ARGS */
    uint32_t binary_kind;   /* enum simpler_binary_kind */
    uint64_t binary_offset; /* as orch_offset */
    uint64_t binary_bytes;  /* as orch_bytes */
    char symbol[SIMPLER_CALLABLE_NAME_MAX]; /* the kernel's entry, non-empty */
    uint8_t signature[SIMPLER_KERNEL_MAX_ARGS];
};

/*
 * Checks an image before anything trusts it: `image` aligned to
 * SIMPLER_CALLABLE_IMAGE_ALIGN; `bytes` at least a header and exactly
 * header.total_bytes; magic, version and header size; every name non-empty
 * where required, NUL-terminated inside its field and made of printable
 * characters other than '/'; every direction valid; scalar_count equal to
 * the SCALAR entries and both counts within their limits; child count
 * within its limit, child table and every binary inside the image, after the
 * header, binaries aligned and outside the child table, symbol forms
 * without bytes; func_ids in range and unique; reserved fields zero; and
 * each ELF binary structurally a shared object for this host (ELF and
 * program headers, section header table, every segment's bytes inside the
 * binary: see docs/api.md), so the loader never reads outside it.
 * Reads only the `bytes` bytes at `image`. 0 or INVALID_ARGUMENT.
 */
int simpler_callable_validate(const void *image, size_t bytes);

/* ------------------------------------------------------------- builder */

struct simpler_callable_builder;

/* Creates an empty builder. 0, INVALID_ARGUMENT (NULL out) or
 * OUT_OF_HOST_MEMORY. */
int simpler_callable_builder_create(struct simpler_callable_builder **out);

/* Destroys a builder and everything it copied (NULL: no-op). */
void simpler_callable_builder_destroy(struct simpler_callable_builder *builder);

/*
 * Sets the orchestration (once per builder: INVALID_STATE the second time).
 * `kind` ELF: `binary` holds `binary_bytes` (> 0) bytes of a shared object,
 * copied; SYMBOL: `binary` is NULL and `binary_bytes` 0. `entry` names the
 * entry function, `config` the config function or is NULL for none (both
 * copied). `signature` holds `sig_count` directions (copied; NULL when 0).
 * INVALID_ARGUMENT for anything the validator would refuse.
 */
int simpler_callable_builder_set_orchestration(struct simpler_callable_builder *builder,
                                               enum simpler_binary_kind kind,
                                               const void *binary, size_t binary_bytes,
                                               const char *entry, const char *config,
                                               const enum simpler_direction *signature,
                                               uint32_t sig_count);

/* As above with the ELF bytes read from the file at `path`. INVALID_ARGUMENT
 * also for a file that cannot be read or is empty. */
int simpler_callable_builder_set_orchestration_file(struct simpler_callable_builder *builder,
                                                    const char *path, const char *entry,
                                                    const char *config,
                                                    const enum simpler_direction *signature,
                                                    uint32_t sig_count);

/*
 * Adds a kernel under `func_id` (INVALID_STATE when the builder already has
 * that func_id; INVALID_ARGUMENT when out of range). Binary arguments as for
 * the orchestration; identical ELF binaries are stored once.
 */
int simpler_callable_builder_add_kernel(struct simpler_callable_builder *builder, int32_t func_id,
                                        enum simpler_kernel_core core, enum simpler_binary_kind kind,
                                        const void *binary, size_t binary_bytes, const char *symbol,
                                        const enum simpler_direction *signature,
                                        uint32_t sig_count);

/* As above with the ELF bytes read from `path`. */
int simpler_callable_builder_add_kernel_file(struct simpler_callable_builder *builder,
                                             int32_t func_id, enum simpler_kernel_core core,
                                             const char *path, const char *symbol,
                                             const enum simpler_direction *signature,
                                             uint32_t sig_count);

/*
 * Lays out the image: on success *image points to `*bytes` bytes that pass
 * simpler_callable_validate, owned by the caller (release with
 * simpler_callable_free). INVALID_STATE when no orchestration was set. The
 * builder is unchanged and may be finished again.
 */
int simpler_callable_builder_finish(struct simpler_callable_builder *builder, void **image,
                                    size_t *bytes);

/* Releases an image made by simpler_callable_builder_finish (NULL: no-op). */
void simpler_callable_free(void *image);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_CALLABLE_H */
