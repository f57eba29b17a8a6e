/*
 * test_program_elf.c — callables shipped as ELF shared objects: packed from
 * a file, loaded on the device from memory (one load per distinct binary),
 * their config function applied, mixed with kernels named by symbol,
 * unloaded without a trace; loads that fail leave nothing behind; ELF
 * binaries that are truncated or whose headers were altered are refused
 * (by the validator on the host and by the loader on the device) before
 * anything hands them to dlopen; strided OUT views are copied back element
 * by element, never the bytes between.
 *
 * The shared object is tests/support/elf_callable.c (ELF_CALLABLE_SO).
 * What the device loaded is observed from the process: the memfds named
 * "simpler-callable" among its open files and its memory mappings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_stub.h"
#include "pm_support.h"
#include "launch/launch.h"

#define MEMFD_NAME "memfd:simpler-callable"

/* Open file descriptors of this process that are the loader's memfds. */
static int memfds_open(void)
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

/* Memory mappings of objects loaded from the loader's memfds. */
static int memfd_mappings(void)
{
    return (int)ts_count_lines_with("/proc/self/maps", MEMFD_NAME);
}

static size_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (size_t)st.st_size;
}

static struct simpler_context *open_ctx(void)
{
    struct simdev_config topo = ts_small_config();
    return pm_open_bare(2, &topo, 0);
}

/* The scale-and-accumulate callable: orchestration and func 5 from the
 * shared object (one binary, stored once), func 2 by symbol from this
 * program (pm_kernel_acc), func 5 added first so the highest func_id is
 * not the last child. `kernel5` names func 5's symbol; NULL leaves func 5
 * out, so the shared object is the image's last bytes (to cut or alter). */
static void *scale_image(const char *kernel5, size_t *bytes)
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

static void test_elf_callable_loads_once_runs_and_unloads(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_ctx();
    int fds0 = memfds_open(), maps0 = memfd_mappings();
    size_t bytes;
    void *image = scale_image("elf_scale", &bytes);
    assert_true(bytes < 2 * file_size(ELF_CALLABLE_SO)); /* the shared object stored twice */
    size_t idle = simpler_committed_device_memory(ctx);
    assert_int_equal(simpler_register_callable(ctx, 1, image, bytes), 0);
    assert_int_equal(memfds_open(), fds0 + 1); /* 2: the one binary loaded twice */
    assert_true(memfd_mappings() > maps0);

    struct pm_run r;
    pm_run_init(&r, 3.0f, 0.0f, 0, 0, 1);
    uint64_t scale_bits = r.scalars[0]; /* pm_run_init put mul (3.0f) first */
    struct simpler_args args = {3, 1, r.tensors, &scale_bits};
    simpler_run_t run = 0;
    /* The config function doubled a heap past the context's capacity. */
    assert_int_equal(simpler_prepare_run(ctx, &run, 1, &args, NULL),
                     PTO_RUNTIME_ERR_CAPACITY_EXCEEDED); /* 0: elf_config never ran */
    struct simpler_run_config small = ts_small_run_config();
    struct simpler_run_info info;
    assert_int_equal(simpler_run(ctx, 1, &args, &small, &info), 0); /* -5: func 5 not in the table */
    assert_int_equal(info.tasks_completed, 2);
    pm_run_check(&r); /* y = 3x + 0 by the ELF kernel, acc = 1 + y by the symbol one */
    assert_int_equal(atomic_load(&pm_order_count), 1);
    assert_int_equal(atomic_load(&pm_order[0]), 7); /* the orchestration's tag */

    assert_int_equal(simpler_unregister_callable(ctx, 1), 0);
    assert_int_equal(memfds_open(), fds0);        /* the memfd was not closed */
    assert_int_equal(memfd_mappings(), maps0);    /* the object was not dlclosed */
    assert_int_equal(simpler_committed_device_memory(ctx), idle);
    /* Loading it again works (a stale object under a reused fd name would not run). */
    assert_int_equal(simpler_register_callable(ctx, 2, image, bytes), 0);
    pm_run_free(&r);
    pm_run_init(&r, 3.0f, 0.0f, 0, 0, 2);
    args.tensors = r.tensors;
    assert_int_equal(simpler_run(ctx, 2, &args, &small, NULL), 0);
    pm_run_check(&r);
    pm_run_free(&r);
    simpler_callable_free(image);
    pm_close(ctx);
    assert_int_equal(memfds_open(), fds0); /* finalize_device unloaded it */
}

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

/* A register whose wait for the loader fails (the sync itself, injected)
 * still unloads what the loader loaded before it gives up. */
static void test_register_failing_after_the_load_unloads_it(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_ctx();
    int fds0 = memfds_open(), maps0 = memfd_mappings();
    size_t idle = simpler_committed_device_memory(ctx);
    size_t bytes;
    void *image = scale_image("elf_scale", &bytes);
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_SYNC, 1, PTO_RUNTIME_ERR_TIMEOUT), 0);
    assert_int_equal(simpler_register_callable(ctx, 1, image, bytes), PTO_RUNTIME_ERR_TIMEOUT);
    simdev_fault_clear(0);
    assert_int_equal(memfds_open(), fds0); /* +1: the loaded object was left behind */
    assert_int_equal(memfd_mappings(), maps0);
    assert_int_equal(simpler_committed_device_memory(ctx), idle);
    assert_int_equal(simpler_register_callable(ctx, 1, image, bytes), 0); /* the retry */
    simpler_callable_free(image);
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

/* A strided OUT view is copied back element by element: its elements
 * arrive, the bytes between them keep what the host had. */
static void test_strided_out_views_copy_back_only_their_elements(void **state)
{
    (void)state;
    struct simpler_context *ctx = open_ctx();
    static const enum simpler_direction sig[] = {SIMPLER_DIR_OUT, SIMPLER_DIR_SCALAR};
    static const enum simpler_direction ksig[] = {SIMPLER_DIR_OUT};
    struct simpler_callable_builder *b;
    void *image;
    size_t bytes;
    assert_int_equal(simpler_callable_builder_create(&b), 0);
    assert_int_equal(simpler_callable_builder_set_orchestration_file(
                         b, ELF_CALLABLE_SO, "elf_fill_orchestration", NULL, sig, 2),
                     0);
    assert_int_equal(simpler_callable_builder_add_kernel_file(b, 7, SIMPLER_CORE_AIV,
                                                              ELF_CALLABLE_SO, "elf_fill", ksig, 1),
                     0);
    assert_int_equal(simpler_callable_builder_finish(b, &image, &bytes), 0);
    simpler_callable_builder_destroy(b);
    assert_int_equal(simpler_register_callable(ctx, 3, image, bytes), 0);

    enum { ROWS = 8, COLS = 8, SENTINEL = 0xEEEEEEEE };
    static uint32_t buf[ROWS * COLS];
    uint64_t shape[2] = {ROWS, COLS};
    struct simpler_tensor whole = {0}, rows = {0}, view = {0};
    assert_int_equal(simpler_tensor_make(&whole, (uint64_t)(uintptr_t)buf, shape, 2,
                                         SIMPLER_DTYPE_U32, SIMPLER_MEM_HOST),
                     0);
    /* Two views: rows 1,3,5 x columns 2,5 (no two elements adjacent), and
     * rows 2..5 x columns 1..4 (rows of 4 contiguous elements). */
    struct {
        uint64_t r0, r1, rstep, c0, c1, cstep;
    } cases[2] = {{1, 7, 2, 2, 8, 3}, {2, 6, 1, 1, 5, 1}};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < ROWS * COLS; i++)
            buf[i] = SENTINEL;
        assert_int_equal(simpler_tensor_slice(&rows, &whole, 0, cases[k].r0, cases[k].r1,
                                              cases[k].rstep),
                         0);
        assert_int_equal(simpler_tensor_slice(&view, &rows, 1, cases[k].c0, cases[k].c1,
                                              cases[k].cstep),
                         0);
        uint64_t base = 1000 * (uint64_t)(k + 1);
        struct simpler_args args = {1, 1, &view, &base};
        assert_int_equal(simpler_run(ctx, 3, &args, NULL, NULL), 0);
        int in_view = 0;
        for (uint64_t r = 0; r < ROWS; r++)
            for (uint64_t c = 0; c < COLS; c++) {
                bool row_in = r >= cases[k].r0 && r < cases[k].r1 &&
                              (r - cases[k].r0) % cases[k].rstep == 0;
                bool col_in = c >= cases[k].c0 && c < cases[k].c1 &&
                              (c - cases[k].c0) % cases[k].cstep == 0;
                uint32_t want = SENTINEL;
                if (row_in && col_in) {
                    want = (uint32_t)(base + 100 * ((r - cases[k].r0) / cases[k].rstep) +
                                      (c - cases[k].c0) / cases[k].cstep);
                    in_view++;
                }
                if (buf[r * COLS + c] != want)
                    fail_msg("case %d, element (%llu, %llu): %#x, want %#x (%s)", k,
                             (unsigned long long)r, (unsigned long long)c, buf[r * COLS + c], want,
                             want == SENTINEL ? "a byte between the view's elements was written"
                                              : "a view element was not copied back");
            }
        assert_int_equal(in_view, k == 0 ? 6 : 16);
    }
    simpler_callable_free(image);
    pm_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elf_callable_loads_once_runs_and_unloads),
        cmocka_unit_test(test_elf_load_failure_leaves_nothing_loaded),
        cmocka_unit_test(test_register_failing_after_the_load_unloads_it),
        cmocka_unit_test(test_register_refuses_truncated_or_altered_elf_binaries_and_holds_nothing),
        cmocka_unit_test(test_device_loader_validates_the_image_it_holds),
        cmocka_unit_test(test_device_loader_checks_elf_structure_on_the_bytes_it_holds),
        cmocka_unit_test(test_strided_out_views_copy_back_only_their_elements),
    };
    return cmocka_run_group_tests(tests, NULL, ts_device_teardown);
}
