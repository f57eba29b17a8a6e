/*
 * common/elf_check.c — see elf_check.h. Headers are copied out with memcpy
 * (the bytes may sit at any alignment inside an image), and every offset
 * is compared with sp_range_inside, never summed unchecked.
 */
#include "common/elf_check.h"

#include <string.h>

#include "common/checked.h"

static bool elf_header_valid(const Elf64_Ehdr *eh)
{
    return memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
           eh->e_ident[EI_DATA] == SP_ELF_HOST_DATA && eh->e_ident[EI_VERSION] == EV_CURRENT &&
           eh->e_type == ET_DYN && eh->e_machine == SP_ELF_HOST_MACHINE &&
           eh->e_version == EV_CURRENT && eh->e_ehsize == sizeof(Elf64_Ehdr);
}

/* A table of `count` entries of `entry_size` at `offset`: the stated entry
 * size ours, 8-aligned, after the ELF header, inside the bytes. */
static bool table_valid(uint64_t offset, uint32_t count, uint32_t entry_size, uint32_t expected,
                        uint64_t size)
{
    return entry_size == expected && offset % 8 == 0 && offset >= sizeof(Elf64_Ehdr) &&
           sp_range_inside(offset, (uint64_t)count * entry_size, size); /* < 2^32: no wrap */
}

static bool section_table_valid(const Elf64_Ehdr *eh, uint64_t size)
{
    if (eh->e_shoff == 0)
        return eh->e_shnum == 0;
    /* e_shnum 0 with a table means extended numbering (the count is in
     * section 0): no object a user builds for a kernel needs it. */
    if (eh->e_shnum == 0 || !table_valid(eh->e_shoff, eh->e_shnum, eh->e_shentsize,
                                         sizeof(Elf64_Shdr), size))
        return false;
    return eh->e_shstrndx == SHN_UNDEF || eh->e_shstrndx < eh->e_shnum;
}

static Elf64_Phdr phdr_at(const unsigned char *elf, const Elf64_Ehdr *eh, uint32_t i)
{
    Elf64_Phdr ph;
    memcpy(&ph, elf + eh->e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
    return ph;
}

/* One PT_LOAD, given where the previous one's memory ended (`floor`);
 * on success *end is where this one's ends. */
static bool load_valid(const Elf64_Phdr *ph, uint64_t floor, uint64_t *end)
{
    if (ph->p_filesz > ph->p_memsz || !sp_add_u64(ph->p_vaddr, ph->p_memsz, end))
        return false;
    if (ph->p_align > 1 && ((ph->p_align & (ph->p_align - 1)) != 0 ||
                            ph->p_offset % ph->p_align != ph->p_vaddr % ph->p_align))
        return false;
    return ph->p_vaddr >= floor;
}

/* True when PT_DYNAMIC `dyn` lies in the file-backed part of a PT_LOAD. */
static bool dynamic_mapped(const unsigned char *elf, const Elf64_Ehdr *eh, const Elf64_Phdr *dyn)
{
    if (dyn->p_filesz > dyn->p_memsz)
        return false;
    for (uint32_t i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr ph = phdr_at(elf, eh, i);
        /* [dyn vaddr, + memsz) inside [load vaddr, + filesz): the load's
         * range does not wrap (load_valid), so this cannot either */
        if (ph.p_type == PT_LOAD && dyn->p_vaddr >= ph.p_vaddr &&
            sp_range_inside(dyn->p_vaddr - ph.p_vaddr, dyn->p_memsz, ph.p_filesz))
            return true;
    }
    return false;
}

bool sp_elf_check(const unsigned char *elf, uint64_t size)
{
    Elf64_Ehdr eh;
    if (!elf || size < sizeof eh)
        return false;
    memcpy(&eh, elf, sizeof eh);
    if (!elf_header_valid(&eh) || eh.e_phnum == 0 || eh.e_phnum == PN_XNUM ||
        !table_valid(eh.e_phoff, eh.e_phnum, eh.e_phentsize, sizeof(Elf64_Phdr), size) ||
        !section_table_valid(&eh, size))
        return false;
    uint32_t loads = 0;
    uint64_t floor = 0;
    for (uint32_t i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph = phdr_at(elf, &eh, i);
        if (!sp_range_inside(ph.p_offset, ph.p_filesz, size))
            return false;
        if (ph.p_type == PT_LOAD) {
            if (!load_valid(&ph, floor, &floor))
                return false;
            loads++;
        }
    }
    if (loads == 0)
        return false;
    for (uint32_t i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph = phdr_at(elf, &eh, i);
        if (ph.p_type == PT_DYNAMIC && !dynamic_mapped(elf, &eh, &ph))
            return false;
    }
    return true;
}
