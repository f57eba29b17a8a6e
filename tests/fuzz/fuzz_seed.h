/*
 * fuzz_seed.h — how the seed programs (callable_seeds.c, packet_seeds.c)
 * write one seed of a corpus.
 *
 * Owns: the name of a seed file (DIR/seed-N.bin) and its write, which ends
 * the program with status 1 on any I/O failure. Header-only.
 */
#ifndef SIMPLER_FUZZ_SEED_H
#define SIMPLER_FUZZ_SEED_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* Writes the `size` bytes at `bytes` (borrowed) to DIR/seed-<n>.bin. */
static inline void fuzz_seed_write(const char *dir, int n, const void *bytes, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%d.bin", dir, n);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(bytes, 1, size, f) != size || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

#endif /* SIMPLER_FUZZ_SEED_H */
