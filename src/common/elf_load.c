/*
 * common/elf_load.c — opening an ELF shared object held in memory
 * (elf_load.h). The bytes must already be validated (elf_check.c): this
 * file only hands them to the dynamic loader.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/elf_load.h"

static void fd_path(char *path, size_t size, int fd)
{
    snprintf(path, size, "/proc/self/fd/%d", fd);
}

int sp_elf_open(const uint8_t *bytes, uint64_t len, const char *who, void **handle, int *memfd)
{
    int fd = memfd_create("simpler-callable", MFD_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "simpler: %s: memfd_create: %m\n", who);
        return -1;
    }
    for (uint64_t done = 0; done < len;) {
        ssize_t n = write(fd, bytes + done, len - done);
        if (n <= 0) {
            fprintf(stderr, "simpler: %s: write: %m\n", who);
            close(fd);
            return -1;
        }
        done += (uint64_t)n;
    }
    char path[64];
    fd_path(path, sizeof path, fd);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "simpler: %s: %s\n", who, dlerror());
        close(fd);
        return -1;
    }
    *handle = h;
    *memfd = fd;
    return 0;
}

void sp_elf_close(void *handle, int memfd)
{
    dlclose(handle);
    char path[64];
    fd_path(path, sizeof path, memfd);
    void *still = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (still) {
        dlclose(still); /* the reference RTLD_NOLOAD took */
        return;
    }
    close(memfd);
}

void *sp_elf_symbol(void *handle, const char *name, const char *who)
{
    void *sym = dlsym(handle ? handle : RTLD_DEFAULT, name);
    if (!sym)
        fprintf(stderr, "simpler: %s: symbol '%s' not found\n", who, name);
    return sym;
}
