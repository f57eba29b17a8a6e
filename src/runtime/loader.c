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
 * In-memory files: each ELF binary is written to a memfd and opened through
 * /proc/self/fd/N. The dynamic loader recognises an already-loaded object by
 * that path name, so the memfd stays open for as long as its object is
 * loaded — no other load can get the same N and be handed this object.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/entries.h"
#include "simpler/callable.h"

static void fd_path(char *path, size_t size, int fd)
{
    snprintf(path, size, "/proc/self/fd/%d", fd);
}

static void unload_record(struct rt_callable_record *r)
{
    while (r->binary_count > 0) {
        uint32_t i = --r->binary_count;
        dlclose(r->handles[i]);
        r->handles[i] = NULL;
        /* Some objects outlive dlclose (linked -z nodelete, or holding
         * unique symbols): the object keeps its /proc/self/fd/N name, and a
         * later load given the same N would be handed it. Keep such an
         * object's memfd open (a deliberate leak) so N is never reused. */
        char path[64];
        fd_path(path, sizeof path, r->memfds[i]);
        void *still = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
        if (still) {
            dlclose(still); /* the reference RTLD_NOLOAD took */
            continue;
        }
        close(r->memfds[i]);
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
    int fd = memfd_create("simpler-callable", MFD_CLOEXEC);
    if (fd < 0) {
        perror("simpler: callable load: memfd_create");
        return NULL;
    }
    for (uint64_t done = 0; done < bytes;) {
        ssize_t n = write(fd, image + offset + done, bytes - done);
        if (n <= 0) {
            perror("simpler: callable load: write");
            close(fd);
            return NULL;
        }
        done += (uint64_t)n;
    }
    char path[64];
    fd_path(path, sizeof path, fd);
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        fprintf(stderr, "simpler: callable load: %s\n", dlerror());
        close(fd);
        return NULL;
    }
    offsets[r->binary_count] = offset;
    r->memfds[r->binary_count] = fd;
    r->handles[r->binary_count++] = handle;
    return handle;
}

static void *resolve(void *handle, const char *name)
{
    void *sym = dlsym(handle ? handle : RTLD_DEFAULT, name);
    if (!sym)
        fprintf(stderr, "simpler: callable load: symbol '%s' not found\n", name);
    return sym;
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
