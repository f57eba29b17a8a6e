/*
 * host/callable_builder.c — callable images: the builder.
 *
 * Owns: the builder that lays images out (see callable.h for the layout).
 * It checks every argument against the validator's own rules
 * (common/callable_rules.h, common/elf_check.h), and validates what it lays
 * out with simpler_callable_validate (common/callable_validate.c). Must not
 * touch devices, contexts or loading (no simdev, no dlopen): the fuzzer
 * links this file with the common validator and host_alloc.c alone.
 */
#include <assert.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/callable_rules.h"
#include "common/elf_check.h"
#include "common/host_alloc.h"
#include "simpler/callable.h"

typedef struct simpler_callable_header callable_header;
typedef struct simpler_callable_child callable_child;

/* --------------------------------------------------------------- builder */

/* One distinct ELF binary. Binaries are laid out in the order they were
 * stored, each at a BINARY_ALIGN multiple; `placed_at` is its offset from
 * the first binary, fixed when it is stored, so finish needs no scratch. */
struct stored_binary {
    unsigned char *bytes;
    size_t size;
    uint64_t placed_at;
};

/* A binary as the orchestration or a kernel refers to it. */
struct binary_ref {
    uint32_t kind;  /* enum simpler_binary_kind */
    uint32_t index; /* ELF: into builder->binaries */
};

struct kernel_entry {
    int32_t func_id;
    uint32_t core;
    struct binary_ref binary;
    uint32_t sig_count;
    uint8_t signature[SIMPLER_KERNEL_MAX_ARGS];
    char symbol[SIMPLER_CALLABLE_NAME_MAX];
};

struct simpler_callable_builder {
    bool has_orchestration;
    struct binary_ref orch_binary;
    uint32_t sig_count;
    uint32_t scalar_count;
    uint8_t signature[SIMPLER_CALLABLE_MAX_ARGS];
    char entry_name[SIMPLER_CALLABLE_NAME_MAX];
    char config_name[SIMPLER_CALLABLE_NAME_MAX]; /* empty: none */

    struct stored_binary *binaries; /* distinct ELF binaries */
    uint32_t binary_count, binary_capacity;
    uint64_t binaries_end; /* bytes from the first binary to the end of the last */

    struct kernel_entry *kernels; /* in the order added */
    uint32_t kernel_count, kernel_capacity;
    uint8_t func_id_used[SIMPLER_CALLABLE_MAX_FUNC_ID / 8];
};

static uint64_t align_up(uint64_t value, uint64_t align)
{
    return (value + align - 1) / align * align;
}

/* Room for one more element after `count` in `array` of *capacity: the
 * array itself when it has room, else a copy with doubled capacity (the old
 * array freed, *capacity updated), or NULL with nothing changed. */
static void *with_room_for_one(void *array, uint32_t *capacity, uint32_t count, size_t elem_size)
{
    if (count < *capacity)
        return array;
    uint32_t grown = *capacity == 0 ? 4 : *capacity * 2;
    void *bigger = sp_host_malloc((size_t)grown * elem_size);
    if (bigger == NULL)
        return NULL;
    if (count > 0)
        memcpy(bigger, array, (size_t)count * elem_size);
    free(array);
    *capacity = grown;
    return bigger;
}

/* The binary arguments of set_orchestration / add_kernel, as the validator
 * would see them once laid out. */
static bool binary_args_valid(int kind, const void *binary, size_t binary_bytes)
{
    if (kind == SIMPLER_BINARY_SYMBOL)
        return binary == NULL && binary_bytes == 0;
    return kind == SIMPLER_BINARY_ELF && binary != NULL && sp_elf_check(binary, binary_bytes);
}

/* Counts the SCALAR entries of a signature; false for an invalid one
 * (NULL with entries, more than `max` entries, a bad direction). */
static bool signature_args_valid(const enum simpler_direction *signature, uint32_t sig_count,
                                 uint32_t max, uint32_t *scalars)
{
    if (sig_count > max || (sig_count > 0 && signature == NULL))
        return false;
    *scalars = 0;
    for (uint32_t i = 0; i < sig_count; i++) {
        if (!sp_callable_direction_valid((int)signature[i]))
            return false;
        *scalars += signature[i] == SIMPLER_DIR_SCALAR;
    }
    return true;
}

/* Stores an ELF binary, or finds the identical one already stored; on
 * success *ref names it. `owned`, when not NULL, is `bytes` itself, handed
 * over by the caller: it becomes the stored copy or is freed, whatever the
 * result. Nothing is stored on failure. */
static int store_binary(struct simpler_callable_builder *b, const unsigned char *bytes, size_t size,
                        unsigned char *owned, struct binary_ref *ref)
{
    for (uint32_t i = 0; i < b->binary_count; i++) {
        if (b->binaries[i].size == size && memcmp(b->binaries[i].bytes, bytes, size) == 0) {
            free(owned);
            *ref = (struct binary_ref){SIMPLER_BINARY_ELF, i};
            return 0;
        }
    }
    uint64_t placed_at = align_up(b->binaries_end, SIMPLER_CALLABLE_BINARY_ALIGN);
    if (size > UINT64_MAX / 2 - placed_at) { /* keeps finish's arithmetic far from wrapping */
        free(owned);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    struct stored_binary *binaries =
        with_room_for_one(b->binaries, &b->binary_capacity, b->binary_count, sizeof *binaries);
    unsigned char *copy = owned;
    if (binaries != NULL) {
        b->binaries = binaries;
        if (copy == NULL && (copy = sp_host_malloc(size)) != NULL)
            memcpy(copy, bytes, size);
    }
    if (binaries == NULL || copy == NULL) {
        free(owned);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    b->binaries[b->binary_count] = (struct stored_binary){copy, size, placed_at};
    *ref = (struct binary_ref){SIMPLER_BINARY_ELF, b->binary_count};
    b->binary_count++;
    b->binaries_end = placed_at + size;
    return 0;
}

/* Reads the whole regular file at `path` into a new buffer. INVALID_ARGUMENT
 * for a file that cannot be opened or read, is not a regular file or is
 * empty; OUT_OF_HOST_MEMORY. */
static int read_file(const char *path, unsigned char **out, size_t *out_size)
{
    if (path == NULL)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        (uintmax_t)st.st_size > SIZE_MAX) {
        close(fd);
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
    size_t size = (size_t)st.st_size;
    unsigned char *data = sp_host_malloc(size);
    if (data == NULL) {
        close(fd);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    size_t done = 0;
    while (done < size) {
        ssize_t n = read(fd, data + done, size - done);
        if (n <= 0) /* an error, or the file shrank under us */
            break;
        done += (size_t)n;
    }
    close(fd);
    if (done != size) {
        free(data);
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    }
    *out = data;
    *out_size = size;
    return 0;
}

/* read_file for a builder call: INVALID_ARGUMENT first for a NULL builder
 * (arguments before work), then what read_file returns. */
static int read_file_for(const struct simpler_callable_builder *builder, const char *path,
                         unsigned char **out, size_t *out_size)
{
    if (builder == NULL)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    return read_file(path, out, out_size);
}

int simpler_callable_builder_create(struct simpler_callable_builder **out)
{
    if (out == NULL)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct simpler_callable_builder *b = sp_host_calloc(1, sizeof *b);
    if (b == NULL)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    *out = b;
    return 0;
}

void simpler_callable_builder_destroy(struct simpler_callable_builder *builder)
{
    if (builder == NULL)
        return;
    for (uint32_t i = 0; i < builder->binary_count; i++)
        free(builder->binaries[i].bytes);
    free(builder->binaries);
    free(builder->kernels);
    free(builder);
}

/* set_orchestration with an optional handed-over binary (see store_binary:
 * `owned` is consumed whatever the result). */
static int orchestration_set(struct simpler_callable_builder *b, int kind, const void *binary,
                             size_t binary_bytes, unsigned char *owned, const char *entry,
                             const char *config, const enum simpler_direction *signature,
                             uint32_t sig_count)
{
    uint32_t scalars = 0;
    int rc = 0;
    if (b == NULL || !binary_args_valid(kind, binary, binary_bytes) || entry == NULL ||
        !sp_callable_name_valid(entry, false) ||
        (config != NULL && !sp_callable_name_valid(config, false)) ||
        !signature_args_valid(signature, sig_count, SIMPLER_CALLABLE_MAX_ARGS, &scalars) ||
        !sp_callable_orch_counts_valid(sig_count, scalars))
        rc = PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    else if (b->has_orchestration)
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    if (rc != 0) {
        free(owned);
        return rc;
    }
    struct binary_ref ref = {SIMPLER_BINARY_SYMBOL, 0};
    if (kind == SIMPLER_BINARY_ELF) {
        rc = store_binary(b, binary, binary_bytes, owned, &ref);
        if (rc != 0)
            return rc;
    }
    b->has_orchestration = true;
    b->orch_binary = ref;
    b->sig_count = sig_count;
    b->scalar_count = scalars;
    for (uint32_t i = 0; i < sig_count; i++)
        b->signature[i] = (uint8_t)signature[i];
    strcpy(b->entry_name, entry); /* fits: sp_callable_name_valid */
    if (config != NULL)
        strcpy(b->config_name, config);
    return 0;
}

int simpler_callable_builder_set_orchestration(struct simpler_callable_builder *builder,
                                               enum simpler_binary_kind kind,
                                               const void *binary, size_t binary_bytes,
                                               const char *entry, const char *config,
                                               const enum simpler_direction *signature,
                                               uint32_t sig_count)
{
    return orchestration_set(builder, (int)kind, binary, binary_bytes, NULL, entry, config,
                             signature, sig_count);
}

int simpler_callable_builder_set_orchestration_file(struct simpler_callable_builder *builder,
                                                    const char *path, const char *entry,
                                                    const char *config,
                                                    const enum simpler_direction *signature,
                                                    uint32_t sig_count)
{
    unsigned char *data;
    size_t size;
    int rc = read_file_for(builder, path, &data, &size);
    if (rc != 0)
        return rc;
    return orchestration_set(builder, SIMPLER_BINARY_ELF, data, size, data, entry, config,
                             signature, sig_count);
}

/* add_kernel with an optional handed-over binary (see store_binary). */
static int kernel_add(struct simpler_callable_builder *b, int32_t func_id, int core, int kind,
                      const void *binary, size_t binary_bytes, unsigned char *owned,
                      const char *symbol, const enum simpler_direction *signature,
                      uint32_t sig_count)
{
    uint32_t scalars;
    int rc = 0;
    if (b == NULL || !sp_callable_func_id_valid(func_id) || core < 0 ||
        !sp_callable_core_valid((uint32_t)core) ||
        !binary_args_valid(kind, binary, binary_bytes) || symbol == NULL ||
        !sp_callable_name_valid(symbol, false) ||
        !signature_args_valid(signature, sig_count, SIMPLER_KERNEL_MAX_ARGS, &scalars))
        rc = PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    else if (b->func_id_used[func_id / 8] & (1u << (func_id % 8)))
        rc = PTO_RUNTIME_ERR_INVALID_STATE;
    if (rc == 0) {
        struct kernel_entry *kernels =
            with_room_for_one(b->kernels, &b->kernel_capacity, b->kernel_count, sizeof *kernels);
        if (kernels != NULL)
            b->kernels = kernels;
        else
            rc = PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    if (rc != 0) {
        free(owned);
        return rc;
    }
    /* func_ids are unique and below MAX_FUNC_ID, so the child limit holds */
    assert(b->kernel_count < SIMPLER_CALLABLE_MAX_CHILDREN);
    struct binary_ref ref = {SIMPLER_BINARY_SYMBOL, 0};
    if (kind == SIMPLER_BINARY_ELF) {
        rc = store_binary(b, binary, binary_bytes, owned, &ref);
        if (rc != 0)
            return rc;
    }
    struct kernel_entry *k = &b->kernels[b->kernel_count++];
    memset(k, 0, sizeof *k);
    k->func_id = func_id;
    k->core = (uint32_t)core;
    k->binary = ref;
    k->sig_count = sig_count;
    for (uint32_t i = 0; i < sig_count; i++)
        k->signature[i] = (uint8_t)signature[i];
    strcpy(k->symbol, symbol);
    b->func_id_used[func_id / 8] |= (uint8_t)(1u << (func_id % 8));
    return 0;
}

int simpler_callable_builder_add_kernel(struct simpler_callable_builder *builder, int32_t func_id,
                                        enum simpler_kernel_core core, enum simpler_binary_kind kind,
                                        const void *binary, size_t binary_bytes, const char *symbol,
                                        const enum simpler_direction *signature,
                                        uint32_t sig_count)
{
    return kernel_add(builder, func_id, (int)core, (int)kind, binary, binary_bytes, NULL, symbol,
                      signature, sig_count);
}

int simpler_callable_builder_add_kernel_file(struct simpler_callable_builder *builder,
                                             int32_t func_id, enum simpler_kernel_core core,
                                             const char *path, const char *symbol,
                                             const enum simpler_direction *signature,
                                             uint32_t sig_count)
{
    unsigned char *data;
    size_t size;
    int rc = read_file_for(builder, path, &data, &size);
    if (rc != 0)
        return rc;
    return kernel_add(builder, func_id, (int)core, SIMPLER_BINARY_ELF, data, size, data, symbol,
                      signature, sig_count);
}

/* Where a binary reference lands in an image whose binaries start at
 * `binaries_base`: {offset, bytes}, or {0, 0} for a symbol. */
static void place_binary(const struct simpler_callable_builder *b, struct binary_ref ref,
                         uint64_t binaries_base, uint64_t *offset, uint64_t *bytes)
{
    if (ref.kind == SIMPLER_BINARY_SYMBOL) {
        *offset = 0;
        *bytes = 0;
        return;
    }
    *offset = binaries_base + b->binaries[ref.index].placed_at;
    *bytes = b->binaries[ref.index].size;
}

int simpler_callable_builder_finish(struct simpler_callable_builder *builder, void **image,
                                    size_t *bytes)
{
    if (builder == NULL || image == NULL || bytes == NULL)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    if (!builder->has_orchestration)
        return PTO_RUNTIME_ERR_INVALID_STATE;
    const struct simpler_callable_builder *b = builder;

    uint64_t table_end = sizeof(callable_header) + (uint64_t)b->kernel_count * sizeof(callable_child);
    uint64_t binaries_base = align_up(table_end, SIMPLER_CALLABLE_BINARY_ALIGN);
    uint64_t total = b->binary_count > 0 ? binaries_base + b->binaries_end : table_end;
    if (total > SIZE_MAX)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    unsigned char *out = sp_host_aligned_alloc(64, (size_t)total);
    if (out == NULL)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    memset(out, 0, (size_t)total); /* padding and unused name bytes */

    callable_header h;
    memset(&h, 0, sizeof h);
    h.magic = SIMPLER_CALLABLE_MAGIC;
    h.version = SIMPLER_CALLABLE_VERSION;
    h.total_bytes = total;
    h.header_bytes = sizeof h;
    h.sig_count = b->sig_count;
    h.scalar_count = b->scalar_count;
    h.child_count = b->kernel_count;
    h.orch_kind = b->orch_binary.kind;
    place_binary(b, b->orch_binary, binaries_base, &h.orch_offset, &h.orch_bytes);
    h.children_offset = b->kernel_count > 0 ? sizeof h : 0;
    memcpy(h.entry_name, b->entry_name, sizeof h.entry_name);
    memcpy(h.config_name, b->config_name, sizeof h.config_name);
    memcpy(h.signature, b->signature, sizeof h.signature);
    memcpy(out, &h, sizeof h);

    for (uint32_t i = 0; i < b->kernel_count; i++) {
        const struct kernel_entry *k = &b->kernels[i];
        callable_child c;
        memset(&c, 0, sizeof c);
        c.func_id = k->func_id;
        c.core_type = k->core;
        c.sig_count = k->sig_count;
        c.binary_kind = k->binary.kind;
        place_binary(b, k->binary, binaries_base, &c.binary_offset, &c.binary_bytes);
        memcpy(c.symbol, k->symbol, sizeof c.symbol);
        memcpy(c.signature, k->signature, sizeof c.signature);
        memcpy(out + sizeof h + (size_t)i * sizeof c, &c, sizeof c);
    }
    for (uint32_t i = 0; i < b->binary_count; i++)
        memcpy(out + binaries_base + b->binaries[i].placed_at, b->binaries[i].bytes,
               b->binaries[i].size);

    /* The builder checked every argument against the validator's rules, so
     * a refusal here is a bug in one of the two. */
    if (simpler_callable_validate(out, (size_t)total) != 0) {
        free(out);
        return PTO_RUNTIME_ERR_INTERNAL;
    }
    *image = out;
    *bytes = (size_t)total;
    return 0;
}

void simpler_callable_free(void *image)
{
    free(image);
}
