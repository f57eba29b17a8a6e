/*
 * elf_support.c — the ELF-callable fixture (see elf_support.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "elf_support.h"

/* The name /proc shows for the loader's memfds (open and mapped). */
#define MEMFD_NAME "memfd:simpler-callable"

int memfds_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[300], target[512];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n > 0) {
            target[n] = 0;
            count += strstr(target, MEMFD_NAME) != NULL;
        }
    }
    closedir(d);
    return count;
}

int memfd_mappings(void)
{
    return (int)ts_count_lines_with("/proc/self/maps", MEMFD_NAME);
}

struct simpler_context *open_ctx(void)
{
    struct simdev_config topo = ts_small_config();
    return pm_open_bare(2, &topo, 0);
}

void *scale_image(const char *kernel5, size_t *bytes)
{
    static const enum simpler_direction sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_OUT,
                                                 SIMPLER_DIR_INOUT, SIMPLER_DIR_SCALAR};
    static const enum simpler_direction ksig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_OUT};
    struct simpler_callable_builder *b;
    void *image;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration_file(
                         b, ELF_CALLABLE_SO, "elf_orchestration", "elf_config", sig, 4),
                     0);
    if (kernel5)
        assert_int_equal(simpler_callable_builder_add_kernel_file(
                             b, 5, SIMPLER_CORE_AIV, ELF_CALLABLE_SO, kernel5, ksig, 2),
                         0);
    assert_int_equal(simpler_callable_builder_add_kernel(b, 2, SIMPLER_CORE_AIV,
                                                         SIMPLER_BINARY_SYMBOL, NULL, 0,
                                                         "pm_kernel_acc", ksig, 2),
                     0);
    assert_int_equal(simpler_callable_builder_finish(b, &image, bytes), 0);
    simpler_callable_builder_destroy(b);
    return image;
}
