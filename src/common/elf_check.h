/*
 * common/elf_check.h — structural checks of an ELF shared object held in
 * memory, before anything hands it to the dynamic loader.
 *
 * Owns: the rule for "these bytes are an ELF shared object this host's
 * loader can map without reading outside them". Pure: reads only the bytes
 * it is given, allocates nothing, never loads anything; host code (the
 * builder) and device code (through the callable validator) both call it.
 * Internal: not part of the ABI.
 */
#ifndef SIMPLER_COMMON_ELF_CHECK_H
#define SIMPLER_COMMON_ELF_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include <elf.h>

/* The ELF machine and data encoding of this host: the only objects its
 * dynamic loader opens. */
#if defined(__x86_64__)
#define SP_ELF_HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define SP_ELF_HOST_MACHINE EM_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define SP_ELF_HOST_MACHINE EM_RISCV
#elif defined(__powerpc64__)
#define SP_ELF_HOST_MACHINE EM_PPC64
#else
#error "simpler: no ELF machine known for this host (common/elf_check.h)"
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SP_ELF_HOST_DATA ELFDATA2LSB
#else
#define SP_ELF_HOST_DATA ELFDATA2MSB
#endif

/*
 * True when the `size` bytes at `elf` (borrowed; any alignment) are, as far
 * as their headers go, a shared object for this host:
 *  - an ELF header of this host's class (64-bit), data encoding, version and
 *    machine, type ET_DYN, e_ehsize the header's size;
 *  - a program header table of 1..65534 entries of e_phentsize =
 *    sizeof(Elf64_Phdr), 8-aligned, after the ELF header and inside the bytes;
 *  - a section header table, when e_shoff is nonzero, of 1.. entries of
 *    sizeof(Elf64_Shdr), 8-aligned, inside the bytes, e_shstrndx naming one
 *    of them or none (and e_shnum 0 when e_shoff is 0);
 *  - every segment's file bytes [p_offset, p_offset + p_filesz) inside the
 *    bytes; at least one PT_LOAD; each PT_LOAD with p_filesz <= p_memsz, a
 *    memory range that does not wrap, p_align 0 or a power of two with
 *    p_offset and p_vaddr congruent modulo it, above the previous PT_LOAD's
 *    range (ascending, disjoint, as the loader assumes when it reserves one
 *    span for them all);
 *  - each PT_DYNAMIC (filesz <= memsz) inside the file-backed part of one
 *    PT_LOAD, so the loader reads the dynamic section from mapped bytes.
 * Every offset sum is overflow-checked. What it cannot check: the contents
 * of the dynamic section, relocations and code are trusted — loading an
 * object runs its code, so only objects the user built belong in an image.
 */
bool sp_elf_check(const unsigned char *elf, uint64_t size);

#endif /* SIMPLER_COMMON_ELF_CHECK_H */
