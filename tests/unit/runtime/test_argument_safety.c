/*
 * test_argument_safety.c — arguments that used to crash the process or
 * corrupt memory are refused with their documented code, hold nothing, and
 * leave the next run working (issue 15, part 2).
 *
 * Owns: submit's refusal of OUTPUTs whose byte count overflows or exceeds
 * the heap and of task views reaching outside their buffers; element
 * access's refusal of views and offsets outside their buffers (negative
 * reach, wrapping byte arithmetic); prepare's refusal of descriptors the
 * tensor.h constructors never make. Refused ELF binaries are
 * test_program_elf.c's and test_callable.c's; the rule itself
 * (common/view.c) is test_view.c's.
 *
 * Device buffers here sit between guard bytes: the tensor's buffer is the
 * middle of a larger allocation, so a write outside it that slipped
 * through shows in the normal build too, not only under ASan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pm_support.h"
#include "rt_support.h"
#include "test_support.h"

#define ORCH_ERR(code) (-SIMPLER_ORCH_ERR_##code)

/* ------------------------------------------------------------- kernels */

enum { K_TOUCH, K_KERNELS };

static atomic_int g_touched; /* K_TOUCH runs */

/* Writes 0x5A to every byte of every element of tensor 0's view, walking
 * its strides: an accepted view outside its buffer writes outside it. */
static void kernel_touch(int64_t *args)
{
    const struct simpler_tensor *t = simpler_kernel_tensor(args, 0);
    size_t es = simpler_dtype_size(t->dtype);
    uint64_t index[SIMPLER_TENSOR_MAX_DIMS] = {0};
    uint64_t numel = simpler_tensor_numel(t);
    for (uint64_t n = 0; n < numel; n++) {
        uint64_t at = simpler_tensor_offset_of(t, index);
        memset((uint8_t *)(uintptr_t)t->addr + at * es, 0x5A, es);
        for (int d = t->ndims - 1; d >= 0 && ++index[d] == t->shape[d]; d--)
            index[d] = 0;
    }
    atomic_fetch_add(&g_touched, 1);
}

static const simpler_kernel_fn g_kernels[K_KERNELS] = {kernel_touch};

/* ------------------------------------------------- a guarded device buffer */

#define GUARD 64
#define GUARD_BYTE 0xC3
#define ELEMS 16 /* i32 elements in the guarded buffer */

struct guarded {
    uint8_t *alloc; /* GUARD + ELEMS * 4 + GUARD device bytes */
    struct simpler_tensor tensor; /* the middle ELEMS elements, values 100 + i */
    struct simpler_orch_args args;
};

static void guarded_open(struct guarded *g)
{
    size_t bytes = 2 * GUARD + ELEMS * sizeof(int32_t);
    g->alloc = ts_dev_alloc(bytes);
    uint8_t host[2 * GUARD + ELEMS * sizeof(int32_t)];
    memset(host, GUARD_BYTE, sizeof host);
    for (int32_t i = 0; i < ELEMS; i++) {
        int32_t v = 100 + i;
        memcpy(host + GUARD + i * sizeof v, &v, sizeof v);
    }
    ts_to_dev(g->alloc, host, bytes);
    g->tensor = ts_dev_tensor_1d(g->alloc + GUARD, ELEMS, SIMPLER_DTYPE_I32);
    memset(&g->args, 0, sizeof g->args);
    g->args.tensor_count = 1;
    g->args.tensors[0] = g->tensor;
}

/* Asserts the guards and the elements still hold what guarded_open wrote. */
static void guarded_check(const struct guarded *g, const char *what)
{
    uint8_t host[2 * GUARD + ELEMS * sizeof(int32_t)];
    ts_from_dev(host, g->alloc, sizeof host);
    for (size_t i = 0; i < sizeof host; i++) {
        bool guard = i < GUARD || i >= GUARD + ELEMS * sizeof(int32_t);
        if (guard && host[i] != GUARD_BYTE)
            fail_msg("%s: guard byte %ld written (%#x): outside the buffer", what,
                     (long)i - GUARD, host[i]);
        if (!guard) {
            int32_t v;
            size_t e = (i - GUARD) / sizeof v;
            memcpy(&v, host + GUARD + e * sizeof v, sizeof v);
            if (v != 100 + (int32_t)e)
                fail_msg("%s: element %zu is %d, not %d", what, e, v, 100 + (int)e);
        }
    }
}

static void guarded_close(struct guarded *g)
{
    assert_int_equal(simdev_free(g->alloc), 0);
}

/* What the orchestrations below report (read after the run's sync). */
static int g_rc[4];
static int g_case;
static bool g_result_untouched;
static int32_t g_value;

/* A run of one K_TOUCH task over the whole buffer: the device and the
 * arena work after whatever the previous run did. */
static void touch_all(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, &args->tensors[0]);
    g_rc[0] = simpler_submit_aiv(rt, K_TOUCH, &ta, NULL);
}

static void expect_next_run_works(struct rt_harness *h, struct guarded *g)
{
    atomic_store(&g_touched, 0);
    assert_int_equal(rth_run(h, touch_all, g_kernels, K_KERNELS, &g->args), 0);
    assert_int_equal(g_rc[0], 0);
    assert_int_equal(atomic_load(&g_touched), 1); /* 0: the good task never ran */
    /* restore the elements for the next case */
    guarded_close(g);
    guarded_open(g);
}

/* Each runtime test's device, harness and guarded buffer. */
struct run_fixture {
    struct rt_harness h;
    struct guarded g;
};

static int run_fixture_setup(void **state)
{
    ts_device_setup(state);
    struct run_fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    rth_open(&fx->h, NULL, 0);
    guarded_open(&fx->g);
    *state = fx;
    return 0;
}

static int run_fixture_teardown(void **state)
{
    struct run_fixture *fx = *state;
    guarded_close(&fx->g);
    rth_close(&fx->h);
    free(fx);
    return ts_device_teardown(state);
}

/*
 * Runs `entry`, whose call under test stores its return in g_rc[0], and
 * asserts the refusal: the call and the run answer INVALID_ARGS, no
 * K_TOUCH ran, `submitted` tasks were accepted before it, nothing outside
 * or inside the buffer changed; then that the next run works.
 */
static void expect_refused(struct run_fixture *fx, simpler_orch_entry_fn entry, const char *why,
                           uint64_t submitted)
{
    atomic_store(&g_touched, 0);
    g_rc[0] = 1;
    int status = rth_run(&fx->h, entry, g_kernels, K_KERNELS, &fx->g.args);
    /* 0: accepted, and a kernel or the access touched bytes outside the buffer */
    if (g_rc[0] != ORCH_ERR(INVALID_ARGS) || status != ORCH_ERR(INVALID_ARGS))
        fail_msg("%s: call %d, run %d (expected %d)", why, g_rc[0], status,
                 ORCH_ERR(INVALID_ARGS));
    assert_int_equal(atomic_load(&g_touched), 0);
    /* more: the refused task took a slot */
    assert_int_equal(fx->h.result.tasks_submitted, submitted);
    guarded_check(&fx->g, why);
    expect_next_run_works(&fx->h, &fx->g);
}

/* ------------------------------------------ OUTPUT byte counts (submit) */

static const struct {
    uint64_t shape[2];
    uint32_t ndims, dtype, outputs;
    int expect;
    const char *why;
} g_outputs[] = {
    /* the case: 2^64 bytes wrapped to 0; submit returned 0 and the
     * zero fill wrote past the arena */
    {{1ull << 40, 1ull << 24}, 2, SIMPLER_DTYPE_U8, 1, ORCH_ERR(INVALID_ARGS), "2^40 x 2^24 u8"},
    {{1ull << 62, 1}, 2, SIMPLER_DTYPE_F32, 1, ORCH_ERR(INVALID_ARGS), "2^62 f32 (2^64 bytes)"},
    {{UINT64_MAX, 1}, 1, SIMPLER_DTYPE_U8, 1, ORCH_ERR(INVALID_ARGS),
     "2^64 - 1 bytes: rounding up to the heap alignment overflows"},
    {{1ull << 63, 1}, 1, SIMPLER_DTYPE_U8, 2, ORCH_ERR(INVALID_ARGS),
     "two outputs of 2^63 bytes: their sum overflows"},
    {{1ull << 40, 1}, 1, SIMPLER_DTYPE_U8, 1, ORCH_ERR(HEAP_DEADLOCK),
     "2^40 bytes: representable, larger than the heap"},
};

static void output_then_bad_output(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    uint64_t one = 64;
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output(&ta, &one, 1, SIMPLER_DTYPE_U8, 1);
    g_rc[0] = simpler_submit_dummy(rt, &ta, &r);
    struct simpler_task_result before = r;
    simpler_task_args_init(&ta);
    for (uint32_t i = 0; i < g_outputs[g_case].outputs; i++)
        simpler_task_args_add_output(&ta, g_outputs[g_case].shape, g_outputs[g_case].ndims,
                                     g_outputs[g_case].dtype, 1);
    g_rc[1] = simpler_submit_dummy(rt, &ta, &r);
    g_result_untouched = memcmp(&before, &r, sizeof r) == 0;
}

static void output_whose_byte_count_overflows_or_exceeds_the_heap_is_refused(void **state)
{
    struct run_fixture *fx = *state;
    for (g_case = 0; g_case < (int)(sizeof g_outputs / sizeof g_outputs[0]); g_case++) {
        const char *why = g_outputs[g_case].why;
        int expect = g_outputs[g_case].expect;
        memset(g_rc, 0, sizeof g_rc);
        int status = rth_run(&fx->h, output_then_bad_output, g_kernels, K_KERNELS, &fx->g.args);
        /* 0: the overflowed count was accepted (and zero-filled past the arena) */
        if (g_rc[0] != 0 || g_rc[1] != expect || status != expect)
            fail_msg("%s: submits %d %d, run %d (expected 0 %d %d)", why, g_rc[0], g_rc[1],
                     status, expect, expect);
        /* false: the refused submit wrote the caller's result (the issue saw
         * the previous task's output left in it, returned as success) */
        if (!g_result_untouched)
            fail_msg("%s: the refused submit wrote its result", why);
        /* 2: the refused task took a slot */
        assert_int_equal(fx->h.result.tasks_submitted, 1);
        expect_next_run_works(&fx->h, &fx->g);
    }
}

/* ------------------------------------------------- task views (submit) */

enum { VIEW_CASES = 8 };

/* The view of case `k` over the guarded buffer (16 i32 elements). */
static struct simpler_tensor bad_view(const struct simpler_tensor *whole, int k, const char **why)
{
    struct simpler_tensor v = *whole;
    *why = "?";
    switch (k) {
    case 0:
        *why = "start offset equal to the element count";
        v.start_offset = ELEMS;
        v.shape[0] = 1;
        break;
    case 1:
        *why = "one element longer than the buffer";
        v.shape[0] = ELEMS + 1;
        break;
    case 2:
        *why = "a negative stride from element 0 (reaches below the buffer)";
        v.stride[0] = -1;
        v.shape[0] = 2;
        break;
    case 3:
        *why = "a start whose byte offset wraps to 4 bytes below the buffer";
        v.start_offset = (1ull << 62) - 1;
        v.shape[0] = 1;
        break;
    case 4:
        *why = "rows of a 2-D view running past the end";
        v.ndims = 2;
        v.shape[0] = 2;
        v.shape[1] = 4;
        v.stride[0] = 8;
        v.stride[1] = 1;
        v.start_offset = 5; /* last element 5 + 8 + 3 = 16 */
        break;
    case 5:
        *why = "a buffer that wraps the address space";
        v.buffer_bytes = UINT64_MAX;
        break;
    case 6:
        *why = "a NULL buffer";
        v.addr = 0;
        break;
    case 7:
        *why = "a stride whose reach overflows int64";
        v.shape[0] = 2;
        v.stride[0] = INT64_MAX;
        break;
    }
    return v;
}

static const uint32_t g_kinds[] = {SIMPLER_ARG_INPUT, SIMPLER_ARG_OUTPUT_EXISTING,
                                   SIMPLER_ARG_INOUT, SIMPLER_ARG_NO_DEP};

static void submit_view(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const char *why;
    struct simpler_tensor v = bad_view(&args->tensors[0], g_case / 4, &why);
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_(&ta, g_kinds[g_case % 4], &v);
    g_rc[0] = simpler_submit_aiv(rt, K_TOUCH, &ta, NULL);
}

static void task_view_outside_its_buffer_is_refused_at_submit(void **state)
{
    struct run_fixture *fx = *state;
    for (g_case = 0; g_case < VIEW_CASES * 4; g_case++) {
        const char *why;
        (void)bad_view(&fx->g.tensor, g_case / 4, &why);
        char what[160];
        snprintf(what, sizeof what, "%s (arg kind %u)", why, g_kinds[g_case % 4]);
        expect_refused(fx, submit_view, what, 0);
    }
}

/* The views just inside: accepted, and the kernel touches only the buffer. */
static void views_at_the_edges(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *whole = &args->tensors[0];
    struct simpler_tensor v[3] = {*whole, *whole, *whole};
    v[0].start_offset = ELEMS - 1; /* the last element */
    v[0].shape[0] = 1;
    v[1].start_offset = ELEMS - 1; /* reversed from the last element: all of them */
    v[1].stride[0] = -1;
    v[2].ndims = 2; /* 2 rows of 4 ending at the last element */
    v[2].shape[0] = 2;
    v[2].shape[1] = 4;
    v[2].stride[0] = 8;
    v[2].stride[1] = 1;
    v[2].start_offset = 4;
    for (int i = 0; i < 3; i++) {
        struct simpler_task_args ta;
        simpler_task_args_init(&ta);
        simpler_task_args_add_inout(&ta, &v[i]);
        g_rc[i] = simpler_submit_aiv(rt, K_TOUCH, &ta, NULL);
    }
}

static void task_views_at_the_edges_of_their_buffer_are_accepted(void **state)
{
    struct run_fixture *fx = *state;
    atomic_store(&g_touched, 0);
    assert_int_equal(rth_run(&fx->h, views_at_the_edges, g_kernels, K_KERNELS, &fx->g.args), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(g_rc[i], 0); /* -5: the check refuses views inside the buffer */
    assert_int_equal(atomic_load(&g_touched), 3);
    uint8_t host[2 * GUARD + ELEMS * sizeof(int32_t)];
    ts_from_dev(host, fx->g.alloc, sizeof host);
    for (size_t i = 0; i < sizeof host; i++) {
        bool guard = i < GUARD || i >= GUARD + ELEMS * sizeof(int32_t);
        assert_int_equal(host[i], guard ? GUARD_BYTE : 0x5A); /* view 1 covers every element */
    }
}

/* A producer id is checked before the submit allocates anything: the id
 * the submit itself would get named the task's own slot once it had been
 * allocated (found by fuzz_submit). */
static void name_own_id_as_producer(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_tensor v = args->tensors[0];
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &v);
    if (g_case == 1) { /* one task first: the next id is 1 */
        g_rc[1] = simpler_submit_dummy(rt, &ta, &r);
        v.producer_task_id = r.task_id + 1;
    } else {
        v.producer_task_id = 0; /* the first task's id, before any task */
    }
    g_rc[0] = simpler_submit_aiv(rt, K_TOUCH, &ta, NULL);
}

static void a_view_naming_the_submitted_task_itself_as_producer_is_refused(void **state)
{
    struct run_fixture *fx = *state;
    for (g_case = 0; g_case < 2; g_case++) {
        g_rc[1] = 0;
        /* accepted: the task waited for itself (a scheduler timeout, or a hang) */
        expect_refused(fx, name_own_id_as_producer, g_case ? "id 1 after task 0" : "id 0, first",
                       (uint64_t)g_case);
        assert_int_equal(g_rc[1], 0); /* the dummy task before it */
    }
}

/* ----------------------------------------------------- element access */

enum { ELEMENT_CASES = 5 };

/* Case k: the view and index of an element access over the guarded buffer
 * (16 i32 elements). */
static void bad_element(const struct simpler_tensor *whole, int k, struct simpler_tensor *v,
                        uint64_t *index, const char **why)
{
    *v = *whole;
    *index = 0;
    *why = "?";
    switch (k) {
    case 0:
        *why = "a negative stride: index 1 is element -1";
        v->stride[0] = -1;
        v->shape[0] = 4;
        *index = 1;
        break;
    case 1:
        /* (offset + 1) * 4 wrapped to 0 and passed the old check; offset * 4
         * wrapped to 4 bytes below the buffer */
        *why = "a start offset whose byte arithmetic wraps";
        v->start_offset = (1ull << 62) - 1;
        v->shape[0] = 1;
        break;
    case 2:
        *why = "a start offset equal to the element count";
        v->start_offset = ELEMS;
        v->shape[0] = 1;
        break;
    case 3:
        *why = "an index past its dimension";
        *index = ELEMS;
        break;
    case 4:
        *why = "a view longer than its buffer, indexed inside the buffer";
        v->shape[0] = ELEMS + 1;
        *index = 3;
        break;
    }
}

static void access_element(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_tensor v;
    uint64_t index;
    const char *why;
    bad_element(&args->tensors[0], g_case / 2, &v, &index, &why);
    int32_t value = 0x7777;
    if (g_case % 2 == 0) {
        g_value = 0x7777;
        g_rc[0] = rt->ops->read_element(rt, &v, &index, &g_value);
    } else {
        g_rc[0] = rt->ops->write_element(rt, &v, &index, &value);
    }
}

static void element_access_outside_the_buffer_is_refused(void **state)
{
    struct run_fixture *fx = *state;
    for (g_case = 0; g_case < ELEMENT_CASES * 2; g_case++) {
        struct simpler_tensor v;
        uint64_t index;
        const char *why;
        bad_element(&fx->g.tensor, g_case / 2, &v, &index, &why);
        char what[160];
        snprintf(what, sizeof what, "%s (%s)", why, g_case % 2 ? "write" : "read");
        expect_refused(fx, access_element, what, 0);
        if (g_case % 2 == 0)
            assert_int_equal(g_value, 0x7777); /* other: *value written by a refused read */
    }
}

static void read_reversed(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_tensor v = args->tensors[0];
    v.start_offset = ELEMS - 1;
    v.stride[0] = -1; /* element i of the view is buffer element 15 - i */
    uint64_t index = 0;
    g_rc[0] = rt->ops->read_element(rt, &v, &index, &g_value);
    int32_t first;
    index = ELEMS - 1;
    g_rc[1] = rt->ops->read_element(rt, &v, &index, &first);
    g_rc[2] = first;
}

static void element_access_through_a_reversed_view_inside_the_buffer_works(void **state)
{
    struct run_fixture *fx = *state;
    assert_int_equal(rth_run(&fx->h, read_reversed, g_kernels, K_KERNELS, &fx->g.args), 0);
    assert_int_equal(g_rc[0], 0); /* -5: a negative stride is refused even inside the buffer */
    assert_int_equal(g_value, 100 + ELEMS - 1);
    assert_int_equal(g_rc[1], 0);
    assert_int_equal(g_rc[2], 100); /* other: the offset arithmetic is wrong */
}

/* ------------------------------------------------- prepare's descriptors */

enum { DESCRIPTOR_CASES = 5 };

/* Case k: x (the IN tensor) as a descriptor the constructors never make. */
static void bad_descriptor(struct simpler_tensor *x, int k, const char **why)
{
    struct simpler_tensor made = *x;
    *why = "?";
    switch (k) {
    case 0: /* the case: every field set by hand, producer left 0 */
        *why = "a descriptor zeroed by hand (producer id 0: the run's first task)";
        memset(x, 0, sizeof *x);
        x->addr = made.addr;
        x->buffer_bytes = made.buffer_bytes;
        x->ndims = 1;
        x->dtype = made.dtype;
        x->shape[0] = made.shape[0];
        x->stride[0] = 1;
        break;
    case 1:
        *why = "a producer id of some task";
        x->producer_task_id = (1ull << 48) | 3;
        break;
    case 2:
        *why = "a nonzero reserved word";
        x->reserved = 1;
        break;
    case 3:
        *why = "an unknown flag";
        x->flags = 0x80;
        break;
    case 4:
        *why = "a descriptor zeroed whole";
        memset(x, 0, sizeof *x);
        break;
    }
}

static void prepare_refuses_descriptors_the_constructors_never_make(void **state)
{
    (void)state;
    struct simpler_context *ctx = pm_open(1);
    size_t idle = simpler_committed_device_memory(ctx);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 1.0f, 0, 0, 1);
    for (int k = 0; k < DESCRIPTOR_CASES; k++) {
        struct simpler_tensor tensors[3];
        memcpy(tensors, r.tensors, sizeof tensors);
        const char *why;
        bad_descriptor(&tensors[0], k, &why);
        struct simpler_args args = r.args;
        args.tensors = tensors;
        simpler_run_t run = 77;
        int rc = simpler_prepare_run(ctx, &run, PM_CALLABLE, &args, NULL);
        /* 0: prepared, and a producer id could wire a dependency on a live task */
        if (rc != PTO_RUNTIME_ERR_INVALID_ARGUMENT)
            fail_msg("%s: prepare %d (expected %d)", why, rc, PTO_RUNTIME_ERR_INVALID_ARGUMENT);
        assert_int_equal(run, 77);                                    /* written on failure */
        assert_int_equal(simpler_committed_device_memory(ctx), idle); /* staging was kept */
    }
    /* The one slot is free (a depth-1 context): the descriptors as made run. */
    assert_int_equal(simpler_run(ctx, PM_CALLABLE, &r.args, NULL, NULL), 0);
    pm_run_check(&r);
    pm_run_free(&r);
    pm_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST_WITH(output_whose_byte_count_overflows_or_exceeds_the_heap_is_refused,
                          run_fixture_setup, run_fixture_teardown),
        SIMPLER_TEST_WITH(task_view_outside_its_buffer_is_refused_at_submit,
                          run_fixture_setup, run_fixture_teardown),
        SIMPLER_TEST_WITH(task_views_at_the_edges_of_their_buffer_are_accepted,
                          run_fixture_setup, run_fixture_teardown),
        SIMPLER_TEST_WITH(a_view_naming_the_submitted_task_itself_as_producer_is_refused,
                          run_fixture_setup, run_fixture_teardown),
        SIMPLER_TEST_WITH(element_access_outside_the_buffer_is_refused,
                          run_fixture_setup, run_fixture_teardown),
        SIMPLER_TEST_WITH(element_access_through_a_reversed_view_inside_the_buffer_works,
                          run_fixture_setup, run_fixture_teardown),
        SIMPLER_TEST_WITH(prepare_refuses_descriptors_the_constructors_never_make,
                          NULL, ts_device_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
