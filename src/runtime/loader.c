/*
 * runtime/loader.c — loads a callable's binaries on the device.
 *
 * Owns: the AICPU functions that turn an uploaded callable image into
 * callable code (dlopen of each ELF binary from an in-memory file, dlsym of
 * each entry) and that unload it again. Runs on the device only; the host
 * reaches it through rt_callable_load_enqueue / rt_callable_unload_enqueue
 * and sees nothing but the record it fills. Must not trust the image: it is
 * validated again here, on the bytes the device holds, by the common
 * validator (common/callable_validate.c: no host code), which also checks
 * that each ELF binary's headers and segments lie inside its bytes before
 * dlopen may read them.
 *
 * In-memory files: each ELF binary is opened through a memfd
 * (common/elf_load.h, which the host's own load of an orchestration under
 * host_build_graph shares).
 */
#include <string.h>

#include "common/elf_load.h"
#include "runtime/entries.h"
#include "simpler/callable.h"

static void unload_record(struct rt_callable_record *r)
{
    while (r->binary_count > 0) {
        uint32_t i = --r->binary_count;
        sp_elf_close(r->handles[i], r->memfds[i]);
        r->handles[i] = NULL;
    }
}

/* Opens the ELF binary at `offset` (once per distinct offset), returning its
 * handle or NULL. Writes the reason to stderr: the loader has no other
 * channel for a dlerror() text. */
static void *open_binary(struct rt_callable_record *r, const uint8_t *image, uint64_t offset,
                         uint64_t bytes, uint64_t *offsets)
{
    for (uint32_t i = 0; i < r->binary_count; i++)
        if (offsets[i] == offset)
            return r->handles[i];
    void *handle;
    int fd;
    if (sp_elf_open(image + offset, bytes, "callable load", &handle, &fd) != 0)
        return NULL;
    offsets[r->binary_count] = offset;
    r->memfds[r->binary_count] = fd;
    r->handles[r->binary_count++] = handle;
    return handle;
}

static void *resolve(void *handle, const char *name)
{
    return sp_elf_symbol(handle, name, "callable load");
}

/* Function pointers from dlsym: POSIX guarantees the object-to-function
 * pointer conversion; memcpy keeps -Wpedantic builds quiet about it. */
#define SYM_TO_FN(fn, sym) memcpy(&(fn), &(sym), sizeof(fn))

int rt_callable_load_main(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    (void)args_size;
    const struct rt_load_args *a = args;
    struct rt_callable_record *r = a->record;
    memset(r, 0, sizeof *r);
    if (simpler_callable_validate(a->image, a->bytes))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct simpler_callable_header h;
    memcpy(&h, a->image, sizeof h);
    static _Thread_local uint64_t offsets[RT_CALLABLE_MAX_BINARIES];

    void *handle = NULL, *sym;
    if (h.orch_kind == SIMPLER_BINARY_ELF &&
        !(handle = open_binary(r, a->image, h.orch_offset, h.orch_bytes, offsets)))
        goto fail;
    if (!(sym = resolve(handle, h.entry_name)))
        goto fail;
    SYM_TO_FN(r->entry, sym);
    r->config = a->base;
    if (h.config_name[0]) {
        simpler_orch_config_fn config_fn;
        if (!(sym = resolve(handle, h.config_name)))
            goto fail;
        SYM_TO_FN(config_fn, sym);
        config_fn(&r->config);
    }
    for (uint32_t i = 0; i < h.child_count; i++) {
        struct simpler_callable_child c;
        memcpy(&c, a->image + h.children_offset + (uint64_t)i * sizeof c, sizeof c);
        handle = NULL;
        if (c.binary_kind == SIMPLER_BINARY_ELF &&
            !(handle = open_binary(r, a->image, c.binary_offset, c.binary_bytes, offsets)))
            goto fail;
        if (!(sym = resolve(handle, c.symbol)))
            goto fail;
        SYM_TO_FN(r->kernels[c.func_id], sym);
        if ((uint32_t)c.func_id + 1 > r->kernel_count)
            r->kernel_count = (uint32_t)c.func_id + 1;
    }
    return 0;
fail:
    unload_record(r);
    memset(r, 0, sizeof *r);
    return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
}

int rt_callable_unload_main(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    (void)args_size;
    struct rt_callable_record *r = *(struct rt_callable_record *const *)args;
    unload_record(r);
    return 0;
}
