/*
 * callable_seeds.c — writes a seed corpus for fuzz_callable: a few valid
 * images made by the builder, so the fuzzer starts from real structure
 * (header, child table, aligned ELF binaries, shared binaries, symbols)
 * instead of having to discover the magic and the offsets.
 *
 * Usage: callable_seeds DIR [SO] — writes DIR/seed-N.bin (with SO, a real
 * shared object, also an image whose orchestration and a kernel are that
 * file, so the fuzzer mutates real ELF structure); exits nonzero on any
 * builder or I/O failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_stub.h"
#include "fuzz_seed.h"
#include "simpler/callable.h"

#define CHECK(call)                                                               \
    do {                                                                          \
        int rc_ = (call);                                                         \
        if (rc_ != 0) {                                                           \
            fprintf(stderr, "callable_seeds: %s: %d\n", #call, rc_);              \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

/* Structurally valid ELF binaries (elf_stub.h), so the fuzzer starts from
 * headers the validator accepts. */
static void fill_elf(unsigned char *buf, size_t size, unsigned seed)
{
    elf_stub_fill(buf, size, seed);
}

/* Finishes `b` into DIR/seed-<n>.bin and destroys it. */
static void emit(struct simpler_callable_builder *b, const char *dir, int n)
{
    void *image;
    size_t bytes;
    CHECK(simpler_callable_builder_finish(b, &image, &bytes));
    CHECK(simpler_callable_validate(image, bytes));
    fuzz_seed_write(dir, n, image, bytes);
    simpler_callable_free(image);
    simpler_callable_builder_destroy(b);
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: %s DIR [SO]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    const enum simpler_direction sig[] = {SIMPLER_DIR_IN, SIMPLER_DIR_SCALAR, SIMPLER_DIR_OUT,
                                              SIMPLER_DIR_INOUT, SIMPLER_DIR_SCALAR};
    unsigned char a[ELF_STUB_HEADERS + 80], b4[ELF_STUB_HEADERS], c[ELF_STUB_HEADERS + 9];
    fill_elf(a, sizeof a, 1);
    fill_elf(b4, sizeof b4, 2);
    fill_elf(c, sizeof c, 3);
    struct simpler_callable_builder *b;

    /* 1: the smallest image: a symbol orchestration, nothing else */
    CHECK(simpler_callable_builder_create(&b));
    CHECK(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0, "main",
                                                     NULL, NULL, 0));
    emit(b, dir, 1);

    /* 2: ELF orchestration with config and signature; ELF, symbol and shared kernels */
    CHECK(simpler_callable_builder_create(&b));
    CHECK(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_ELF, a, sizeof a,
                                                     "orch_main", "orch_config", sig, 5));
    CHECK(simpler_callable_builder_add_kernel(b, 0, SIMPLER_CORE_AIV, SIMPLER_BINARY_ELF, c,
                                              sizeof c, "k_add", sig, 3));
    CHECK(simpler_callable_builder_add_kernel(b, 5, SIMPLER_CORE_AIC, SIMPLER_BINARY_SYMBOL, NULL,
                                              0, "k_mul", sig + 2, 3));
    CHECK(simpler_callable_builder_add_kernel(b, 1023, SIMPLER_CORE_AIV, SIMPLER_BINARY_ELF, a,
                                              sizeof a, "k_copy", NULL, 0));
    emit(b, dir, 2);

    /* 3: symbol orchestration, eight symbol kernels */
    CHECK(simpler_callable_builder_create(&b));
    CHECK(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0, "entry",
                                                     "cfg", sig, 2));
    for (int i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof name, "kernel_%d", i);
        CHECK(simpler_callable_builder_add_kernel(b, i * 3, (enum simpler_kernel_core)(i % 2),
                                                  SIMPLER_BINARY_SYMBOL, NULL, 0, name, sig,
                                                  (uint32_t)(i % 6)));
    }
    emit(b, dir, 3);

    /* 4: the shortest ELF binary (a stub's headers alone) next to a longer one */
    CHECK(simpler_callable_builder_create(&b));
    CHECK(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_ELF, b4, sizeof b4, "o",
                                                     NULL, NULL, 0));
    CHECK(simpler_callable_builder_add_kernel(b, 7, SIMPLER_CORE_AIC, SIMPLER_BINARY_ELF, c,
                                              sizeof c, "k", NULL, 0));
    emit(b, dir, 4);

    /* 5: a real shared object, stored once for the orchestration and a kernel */
    if (argc == 3) {
        CHECK(simpler_callable_builder_create(&b));
        CHECK(simpler_callable_builder_set_orchestration_file(b, argv[2], "orch", NULL, sig, 5));
        CHECK(simpler_callable_builder_add_kernel_file(b, 3, SIMPLER_CORE_AIV, argv[2], "k",
                                                       sig, 2));
        emit(b, dir, 5);
    }
    return 0;
}
