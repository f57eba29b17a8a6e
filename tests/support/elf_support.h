/*
 * elf_support.h — the ELF-callable fixture, shared by the two halves of
 * test_program_elf (scenario/ and unit/host/..._internals.c) and linked
 * into those two only: the scale-and-accumulate callable packed from the
 * shared object ELF_CALLABLE_SO (support/elf_callable.c; the build defines
 * its path), a program context for it, and what the device's loader holds,
 * observed from the process: the memfds named "simpler-callable" among
 * its open files and its memory mappings. Public headers only.
 */
#ifndef SIMPLER_ELF_SUPPORT_H
#define SIMPLER_ELF_SUPPORT_H

#include <stddef.h>

#include "pm_support.h"

/* Open file descriptors of this process that are the loader's memfds. */
int memfds_open(void);

/* Memory mappings of objects loaded from the loader's memfds. */
int memfd_mappings(void);

/* A program context of depth 2 on device 0 (small topology), nothing
 * registered (pm_open_bare). */
struct simpler_context *open_ctx(void);

/* The scale-and-accumulate callable: orchestration and func 5 from the
 * shared object (one binary, stored once), func 2 by symbol from this
 * program (pm_kernel_acc), func 5 added first so the highest func_id is
 * not the last child. `kernel5` names func 5's symbol; NULL leaves func 5
 * out, so the shared object is the image's last bytes (to cut or alter).
 * Free with simpler_callable_free. */
void *scale_image(const char *kernel5, size_t *bytes);

#endif /* SIMPLER_ELF_SUPPORT_H */
