/*
 * test_program_elf_internals.c — ELF callables that must be refused: a
 * load that fails leaves nothing behind; ELF binaries that are truncated
 * or whose headers were altered are refused (by the validator on the host
 * and by the loader on the device, driven here through the launch layer's
 * loader enqueue) before anything hands them to dlopen.
 *
 * The shared object is tests/support/elf_callable.c, packed by
 * elf_support.h, as in tests/scenario/test_program_elf.c; the hand-made
 * binaries are elf_stub.h's (common/elf_check.h's types).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "elf_stub.h"
#include "elf_support.h"
#include "launch/launch.h"

static void test_elf_load_failure_leaves_nothing_loaded(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_ctx();
    int fds0 = memfds_open(), maps0 = memfd_mappings();
    size_t idle = simpler_committed_device_memory(ctx);
    size_t bytes;
    void *image = scale_image("no_such_kernel", &bytes);
    /* The orchestration loads, then func 5's symbol is missing. */
    assert_int_equal(simpler_register_callable(ctx, 1, image, bytes),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(memfds_open(), fds0);     /* the loader kept what it had opened */
    assert_int_equal(memfd_mappings(), maps0);
    assert_int_equal(simpler_committed_device_memory(ctx), idle);
    simpler_callable_free(image);

    /* Bytes whose headers are sound (so the builder and the validator take
     * them) but that are no loadable shared object: dlopen refuses them. */
    static const enum simpler_direction sig[] = {SIMPLER_DIR_IN};
    unsigned char stub[256];
    elf_stub_fill(stub, sizeof stub, 1);
    struct simpler_callable_builder *b;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_ELF, stub,
                                                                sizeof stub, "entry", NULL, sig, 1),
                     0);
    assert_int_equal(simpler_callable_builder_finish(b, &image, &bytes), 0);
    simpler_callable_builder_destroy(b);
    assert_int_equal(simpler_register_callable(ctx, 1, image, bytes),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(memfds_open(), fds0);
    assert_int_equal(simpler_committed_device_memory(ctx), idle);
    simpler_callable_free(image);
    /* The context is fine: a good image registers under the same id. */
    image = pm_image(&bytes);
    assert_int_equal(simpler_register_callable(ctx, 1, image, bytes), 0);
    simpler_callable_free(image);
    pm_close(ctx);
}

enum elf_damage { CUT_IN_HALF, CUT_AFTER_HEADERS, LOAD_PAST_END, PHOFF_PAST_END, DAMAGE_KINDS };

/* A copy of `good` (a scale_image without func 5) whose binary is damaged as
 * `kind` says, in a buffer of exactly *bytes bytes (malloc'd). */
static unsigned char *damaged_image(const unsigned char *good, size_t good_bytes,
                                    enum elf_damage kind, size_t *bytes)
{
    struct simpler_callable_header h;
    memcpy(&h, good, sizeof h);
    uint64_t keep = h.orch_bytes;
    if (kind == CUT_IN_HALF)
        keep = h.orch_bytes / 2;
    else if (kind == CUT_AFTER_HEADERS)
        keep = 4096; /* the ELF and program headers, not the segments */
    assert_true(keep <= h.orch_bytes);
    *bytes = good_bytes - (size_t)(h.orch_bytes - keep);
    unsigned char *image = malloc(*bytes);
    assert_non_null(image);
    memcpy(image, good, *bytes);
    h.orch_bytes = keep;
    h.total_bytes = *bytes;
    memcpy(image, &h, sizeof h);
    unsigned char *elf = image + h.orch_offset;
    Elf64_Ehdr eh;
    memcpy(&eh, elf, sizeof eh);
    if (kind == PHOFF_PAST_END) {
        eh.e_phoff = h.orch_bytes - 8;
        memcpy(elf, &eh, sizeof eh);
    } else if (kind == LOAD_PAST_END) {
        for (uint32_t i = 0; i < eh.e_phnum; i++) { /* the last PT_LOAD grows by a page */
            Elf64_Phdr ph;
            memcpy(&ph, elf + eh.e_phoff + i * sizeof ph, sizeof ph);
            if (ph.p_type != PT_LOAD)
                continue;
            Elf64_Phdr grown = ph;
            grown.p_filesz = h.orch_bytes - ph.p_offset + 4096;
            grown.p_memsz = grown.p_filesz > ph.p_memsz ? grown.p_filesz : ph.p_memsz;
            memcpy(elf + eh.e_phoff + i * sizeof ph, &grown, sizeof grown);
            break;
        }
    }
    return image;
}

/* Each damaged binary is what killed the process inside dlopen (SIGBUS on
 * a page past the file, or headers read outside it): refused by the
 * validator, so register answers INVALID_ARGUMENT before the device sees
 * it, with nothing loaded or held; the good image then registers under the
 * same id. */
static void test_register_refuses_truncated_or_altered_elf_binaries_and_holds_nothing(void **state)
{
    (void)state;
    static const char *names[DAMAGE_KINDS] = {"cut in half", "cut after the headers",
                                              "a PT_LOAD past the end", "e_phoff past the end"};
    struct simpler_context *ctx = open_ctx();
    int fds0 = memfds_open(), maps0 = memfd_mappings();
    size_t idle = simpler_committed_device_memory(ctx);
    size_t good_bytes;
    unsigned char *good = scale_image(NULL, &good_bytes);
    for (int kind = 0; kind < DAMAGE_KINDS; kind++) {
        size_t bytes;
        unsigned char *image = damaged_image(good, good_bytes, (enum elf_damage)kind, &bytes);
        int validated = simpler_callable_validate(image, bytes);
        int registered = simpler_register_callable(ctx, 1, image, bytes);
        /* 0 = the loader was handed bytes it reads outside of */
        if (validated != PTO_RUNTIME_ERR_INVALID_ARGUMENT ||
            registered != PTO_RUNTIME_ERR_INVALID_ARGUMENT)
            fail_msg("%s: validate %d, register %d (expected %d)", names[kind], validated,
                     registered, PTO_RUNTIME_ERR_INVALID_ARGUMENT);
        /* more: the refused image left something behind */
        assert_int_equal(simpler_committed_device_memory(ctx), idle);
        assert_int_equal(memfds_open(), fds0);
        assert_int_equal(memfd_mappings(), maps0);
        free(image);
    }
    assert_int_equal(simpler_register_callable(ctx, 1, good, good_bytes), 0); /* id 1 is free */
    assert_int_equal(memfds_open(), fds0 + 1);
    simpler_callable_free(good);
    pm_close(ctx);
    assert_int_equal(memfds_open(), fds0);
}

/* Copies `bytes` of `image` to device memory and runs the device-side
 * loader on that copy directly (no host validation first); returns the
 * loader's status, with everything it used freed. A successful load is
 * not unloaded: callers pass images the loader must refuse. */
static int load_on_device(const void *image, size_t bytes)
{
    void *dev_image, *record;
    assert_int_equal(simdev_malloc(&dev_image, bytes), 0);
    assert_int_equal(simdev_malloc(&record, sizeof(struct rt_callable_record)), 0);
    assert_int_equal(simdev_memcpy(dev_image, image, bytes, SIMDEV_COPY_HOST_TO_DEVICE), 0);
    simdev_stream_t s = ts_new_stream();
    struct simpler_run_config base = ts_small_run_config();
    assert_int_equal(rt_callable_load_enqueue(s, dev_image, bytes, &base, record), 0);
    int status = simdev_stream_sync(s);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_free(record), 0);
    assert_int_equal(simdev_free(dev_image), 0);
    return status;
}

/* The loader checks the image the device holds, not only the host's copy:
 * corrupted on the device, it is refused there. */
static void test_device_loader_validates_the_image_it_holds(void **state)
{
    (void)state;
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    size_t bytes;
    void *image = pm_image(&bytes);
    struct simpler_callable_header h;
    memcpy(&h, image, sizeof h);
    h.sig_count = SIMPLER_CALLABLE_MAX_ARGS + 1; /* out of range */
    memcpy(image, &h, sizeof h);
    /* 0: loaded it */
    assert_int_equal(load_on_device(image, bytes), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    simpler_callable_free(image);
}

/* The loader's own check covers ELF structure too: a good image whose
 * binary's PT_LOAD is pushed past its end on the device (after the host
 * validated it) is refused on the device, before dlopen opens anything. */
static void test_device_loader_checks_elf_structure_on_the_bytes_it_holds(void **state)
{
    (void)state;
    struct simdev_config topo = ts_small_config();
    ts_device_setup_config(&topo);
    int fds0 = memfds_open();
    size_t good_bytes, bytes;
    unsigned char *good = scale_image(NULL, &good_bytes);
    unsigned char *bad = damaged_image(good, good_bytes, LOAD_PAST_END, &bytes);
    assert_int_equal(bytes, good_bytes); /* the same size: only a program header differs */
    assert_int_equal(simpler_callable_validate(bad, bytes), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* 0 or a crash: the loader trusted the host's validation */
    assert_int_equal(load_on_device(bad, bytes), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(memfds_open(), fds0); /* +1: it got as far as the memfd */
    free(bad);
    simpler_callable_free(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elf_load_failure_leaves_nothing_loaded),
        cmocka_unit_test(test_register_refuses_truncated_or_altered_elf_binaries_and_holds_nothing),
        cmocka_unit_test(test_device_loader_validates_the_image_it_holds),
        cmocka_unit_test(test_device_loader_checks_elf_structure_on_the_bytes_it_holds),
    };
    return cmocka_run_group_tests(tests, NULL, ts_device_teardown);
}
