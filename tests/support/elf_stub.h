/*
 * elf_stub.h — the smallest bytes the callable validator accepts as an ELF
 * binary, for tests and fuzz seeds that need ELF binaries without building
 * shared objects.
 *
 * A stub is an ELF header for this host (common/elf_check.h) and one
 * program header, a PT_LOAD of the ELF_STUB_HEADERS bytes of headers, then
 * a pattern that differs per seed: structurally valid, so the builder and
 * the validator take it, but with no dynamic section, so dlopen refuses it
 * (cleanly: every byte it would read is inside the stub). Header-only.
 */
#ifndef SIMPLER_TESTS_ELF_STUB_H
#define SIMPLER_TESTS_ELF_STUB_H

#include <stddef.h>
#include <string.h>

#include "common/elf_check.h"

/* The ELF header and the one program header: a stub's smallest size. */
#define ELF_STUB_HEADERS (sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr))

/* Offset of the stub's PT_LOAD program header (to alter it). */
#define ELF_STUB_PHDR sizeof(Elf64_Ehdr)

/* Writes a stub of `size` (>= ELF_STUB_HEADERS) bytes to `buf`. */
static inline void elf_stub_fill(unsigned char *buf, size_t size, unsigned seed)
{
    Elf64_Ehdr eh;
    memset(&eh, 0, sizeof eh);
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = SP_ELF_HOST_DATA;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_DYN;
    eh.e_machine = SP_ELF_HOST_MACHINE;
    eh.e_version = EV_CURRENT;
    eh.e_phoff = sizeof eh;
    eh.e_ehsize = sizeof eh;
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = 1;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    Elf64_Phdr load;
    memset(&load, 0, sizeof load);
    load.p_type = PT_LOAD;
    load.p_flags = PF_R;
    load.p_filesz = load.p_memsz = ELF_STUB_HEADERS;
    load.p_align = 0x1000;
    memcpy(buf, &eh, sizeof eh);
    memcpy(buf + ELF_STUB_PHDR, &load, sizeof load);
    for (size_t i = ELF_STUB_HEADERS; i < size; i++)
        buf[i] = (unsigned char)(seed * 31u + i * 7u + 1u);
}

#endif /* SIMPLER_TESTS_ELF_STUB_H */
