/*
 * test_program_elf.c — callables shipped as ELF shared objects, through
 * simpler.h: packed from a file, loaded on the device from memory (one
 * load per distinct binary), their config function applied, mixed with
 * kernels named by symbol, unloaded without a trace, also when the
 * register fails after the load; strided OUT views are copied back element
 * by element, never the bytes between.
 *
 * The shared object is tests/support/elf_callable.c (ELF_CALLABLE_SO).
 * What the device loaded is observed from the process (elf_support.h).
 * The cases that build ELF binaries by hand or drive the device's loader
 * directly are unit/host/test_program_elf_internals.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sys/stat.h>

#include "elf_support.h"

static size_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (size_t)st.st_size;
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
    /* One memfd per object loaded: the device's, and under host_build_graph
     * the host's own load of the orchestration (its one binary is the
     * orchestration and the kernels at once). More: a binary loaded twice
     * by one side. */
    struct simpler_context_info ci;
    assert_int_equal(simpler_get_context_info(ctx, &ci), 0);
    assert_int_equal(memfds_open(), fds0 + 1 + (ci.runtime == SIMPLER_RUNTIME_HBG));
    assert_int_equal(ci.host_orchestration_loads, ci.runtime == SIMPLER_RUNTIME_HBG);
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
        cmocka_unit_test(test_register_failing_after_the_load_unloads_it),
        cmocka_unit_test(test_strided_out_views_copy_back_only_their_elements),
    };
    return cmocka_run_group_tests(tests, NULL, ts_device_teardown);
}
