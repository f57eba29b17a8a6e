/*
 * common/elf_load.h — opening an ELF shared object held in memory, in the
 * calling process.
 *
 * Owns: the in-memory file each binary is opened through (a memfd, by its
 * /proc/self/fd/N name), its close, and symbol lookup. Used by the device's
 * callable loader (runtime/loader.c) and by the host, which loads a
 * callable's orchestration itself under host_build_graph (host/residency.c).
 * The dynamic loader recognises an already-loaded object by its path name,
 * so the memfd stays open for as long as its object is loaded: no other
 * load can get the same N and be handed this object.
 */
#ifndef SIMPLER_COMMON_ELF_LOAD_H
#define SIMPLER_COMMON_ELF_LOAD_H

#include <stdint.h>

/* Opens the object in bytes[0, len): 0 with *handle and *memfd, or -1
 * (the reason on stderr, prefixed by `who`). */
int sp_elf_open(const uint8_t *bytes, uint64_t len, const char *who, void **handle, int *memfd);

/* Closes an object sp_elf_open opened. An object that outlives dlclose
 * (linked -z nodelete, or holding unique symbols) keeps its memfd open, a
 * deliberate leak, so that its /proc/self/fd/N name is never reused. */
void sp_elf_close(void *handle, int memfd);

/* `name` in `handle` (NULL: the process's global scope), or NULL with a
 * line on stderr prefixed by `who`. */
void *sp_elf_symbol(void *handle, const char *name, const char *who);

#endif /* SIMPLER_COMMON_ELF_LOAD_H */
