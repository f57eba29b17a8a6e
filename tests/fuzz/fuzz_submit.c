/*
 * fuzz_submit.c — libFuzzer target for submit's argument checks and for
 * element access, against real runs on the simulated device.
 *
 * Owns: the decoding of an input into one short orchestration and the
 * oracle that says, with its own 128-bit arithmetic, what each of its
 * calls must return. An input is up to MAX_OPS operations, each a submit
 * (up to 4 tensors: views of three real device buffers or of earlier
 * runtime-allocated outputs, or new outputs, every field drawn from the
 * input) or an element read or write (a view and an index drawn the same
 * way). The properties, each abort()ing when violated:
 *  - every call returns exactly what the oracle says (0, INVALID_ARGS,
 *    HEAP_DEADLOCK, or the latched error after the first failure), and the
 *    run's status is the first error;
 *  - a refused submit leaves its result untouched; an accepted one returns
 *    OUTPUT descriptors exactly as the oracle sized them;
 *  - a refused element access leaves *value untouched; an accepted read
 *    returns the bytes the oracle's mirror of the buffer holds;
 *  - ASan: the kernel of every accepted task reads (and, for written
 *    arguments, writes back) every corner of every view, so a view the
 *    checks let through outside its buffer is a heap-buffer-overflow;
 *  - every run ends and the next one (the next input) works.
 *
 * Built with SIMPLER_SANITIZE=fuzzer (tests/fuzz/CMakeLists.txt) and run
 * by tests/fuzz/run-fuzz.sh. The cmocka asserts of the shared test
 * support exit the process on failure, which libFuzzer reports as a crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "fuzz_input.h"
#include "fuzz_oracle.h"
#include "rt_support.h"
#include "test_support.h"

#define CHECK FUZZ_CHECK
typedef fuzz_i128 i128;
typedef fuzz_u128 u128;

#define MAX_OPS 8
#define MAX_ARGS 4
#define BUFFERS 3
/* Sizes that are multiples of 64 (simdev's rounding), so ASan's redzone
 * starts right at each buffer's end. */
static const uint64_t buffer_bytes[BUFFERS] = {64, 256, 4096};

static struct rt_harness g_h;
static uint8_t *g_buf[BUFFERS];             /* device buffers */
static uint8_t g_mirror[BUFFERS][4096];     /* what they hold */

/* ---------------------------------------------------------------- kernels */

/* K_TOUCH + n: a task of n tensors; scalar 0 is the mask of the written
 * ones (OUTPUT, OUTPUT_EXISTING, INOUT). */
#define TOUCH_KERNEL(n)                                                      \
    static void kernel_touch_##n(int64_t *args)                              \
    {                                                                        \
        uint64_t written = simpler_kernel_scalar_u64(args, n);               \
        for (uint32_t i = 0; i < n; i++)                                     \
            fuzz_touch_corners(simpler_kernel_tensor(args, i), (written >> i) & 1); \
    }
TOUCH_KERNEL(0)
TOUCH_KERNEL(1)
TOUCH_KERNEL(2)
TOUCH_KERNEL(3)
TOUCH_KERNEL(4)

static const simpler_kernel_fn g_kernels[MAX_ARGS + 1] = {
    kernel_touch_0, kernel_touch_1, kernel_touch_2, kernel_touch_3, kernel_touch_4};

/* ------------------------------------------------------------- the model */

/* What the oracle knows of the run so far. */
struct model {
    uint64_t submitted;      /* tasks accepted (ids 0..submitted-1 on ring 0) */
    uint64_t heap_used;      /* their OUTPUT bytes: scope 0 pins them all */
    int32_t error;           /* the first error (a positive run code), 0 */
    struct simpler_tensor outputs[MAX_OPS * MAX_ARGS];
    uint32_t output_count;
};

/* The oracle's rule for a tensor a task or an element access names: a
 * non-NULL address, the view rule (fuzz_view_inside), and no producer or
 * one of this run's accepted tasks. */
static bool oracle_tensor_ok(const struct model *m, const struct simpler_tensor *t)
{
    return t->addr != 0 && fuzz_view_inside(t, NULL) &&
           (t->producer_task_id == SIMPLER_TASK_ID_NONE || t->producer_task_id < m->submitted);
}

/* Heap bytes of an OUTPUT, or false when they do not fit in 64 bits. */
static bool oracle_output_bytes(const struct simpler_tensor_create *c, uint64_t *bytes)
{
    if (c->ndims < 1 || c->ndims > SIMPLER_TENSOR_MAX_DIMS || c->dtype >= SIMPLER_DTYPE_COUNT)
        return false;
    u128 n = simpler_dtype_size(c->dtype);
    for (uint32_t d = 0; d < c->ndims; d++) {
        if (c->shape[d] == 0)
            return false;
        n *= c->shape[d];
        if (n > UINT64_MAX)
            return false;
    }
    n = (n + 63) / 64 * 64;
    if (n > UINT64_MAX)
        return false;
    *bytes = (uint64_t)n;
    return true;
}

/* ----------------------------------------------------------- decoding */

/* A tensor: a view of one of our buffers or of an earlier output, whose
 * fields the input then changes. */
static struct simpler_tensor draw_tensor(struct fuzz_input *in, const struct model *m)
{
    struct simpler_tensor t;
    uint8_t from = fuzz_u8(in);
    if (m->output_count > 0 && from >= 0xc0) {
        t = m->outputs[from % m->output_count];
    } else {
        int b = from % BUFFERS;
        uint32_t dtype = fuzz_u8(in) % SIMPLER_DTYPE_COUNT;
        simpler_tensor_make_1d(&t, (uint64_t)(uintptr_t)g_buf[b],
                               buffer_bytes[b] / simpler_dtype_size(dtype), dtype,
                               SIMPLER_MEM_DEVICE);
    }
    fuzz_mutate_tensor(in, &t, t.buffer_bytes, m->submitted);
    t.flags = 0; /* untracked views would let kernels race the mirror */
    return t;
}

static void draw_output(struct fuzz_input *in, struct simpler_task_arg *arg)
{
    memset(arg, 0, sizeof *arg);
    arg->kind = SIMPLER_ARG_OUTPUT;
    struct simpler_tensor_create *c = &arg->create;
    c->ndims = 1;
    c->dtype = SIMPLER_DTYPE_U8;
    c->shape[0] = 64;
    c->zero_fill = fuzz_u8(in) & 1;
    for (uint8_t n = fuzz_u8(in) % 4; n > 0; n--) {
        uint8_t field = fuzz_u8(in);
        switch (field % 3) {
        case 0:
            c->ndims = fuzz_u8(in) % 8; /* 0 and 6, 7 are invalid */
            break;
        case 1:
            c->dtype = fuzz_u8(in) % (SIMPLER_DTYPE_COUNT + 2);
            break;
        case 2:
            c->shape[(field / 3) % SIMPLER_TENSOR_MAX_DIMS] = fuzz_pick_u64(in);
            break;
        }
    }
}

/* ------------------------------------------------------ the orchestration */

static const uint8_t *g_data;
static size_t g_size;
static int32_t g_first_error; /* what the oracle expects the run's status to be */
static uint64_t g_accepted;

static int32_t expect_call(struct model *m, int32_t code)
{
    if (m->error == 0)
        m->error = code;
    return m->error;
}

static void do_submit(struct simpler_orch *rt, struct fuzz_input *in, struct model *m)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    uint32_t n = fuzz_u8(in) % (MAX_ARGS + 1);
    struct simpler_tensor views[MAX_ARGS];
    uint64_t written = 0;
    bool structural_ok = true;
    uint64_t need = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t kind = fuzz_u8(in);
        if (kind % 5 == 0) { /* OUTPUT */
            draw_output(in, &ta.tensors[i]);
            uint64_t bytes = 0;
            if (!oracle_output_bytes(&ta.tensors[i].create, &bytes) ||
                (u128)need + bytes > UINT64_MAX)
                structural_ok = false;
            else
                need += bytes;
            written |= 1u << i;
            continue;
        }
        static const uint32_t kinds[4] = {SIMPLER_ARG_INPUT, SIMPLER_ARG_OUTPUT_EXISTING,
                                          SIMPLER_ARG_INOUT, SIMPLER_ARG_NO_DEP};
        views[i] = draw_tensor(in, m);
        ta.tensors[i].kind = kind > 0xfa ? kind : kinds[kind % 5 - 1]; /* 0xfb..: no such kind */
        ta.tensors[i].tensor = &views[i];
        uint32_t k = ta.tensors[i].kind;
        if (k > SIMPLER_ARG_NO_DEP) {
            structural_ok = false;
            continue;
        }
        if (!oracle_tensor_ok(m, &views[i]))
            structural_ok = false;
        if (k == SIMPLER_ARG_OUTPUT_EXISTING || k == SIMPLER_ARG_INOUT)
            written |= 1u << i;
    }
    ta.tensor_count = n;
    simpler_task_args_add_scalar(&ta, written);

    int32_t expect;
    if (m->error)
        expect = m->error;
    else if (!structural_ok)
        expect = expect_call(m, SIMPLER_ORCH_ERR_INVALID_ARGS);
    else if ((u128)m->heap_used + need > g_h.config.heap_bytes[0])
        expect = expect_call(m, SIMPLER_ORCH_ERR_HEAP_DEADLOCK); /* scope 0 pins the heap */
    else
        expect = 0;

    struct simpler_task_result r, before;
    memset(&r, 0xA5, sizeof r);
    before = r;
    int rc = simpler_submit_aiv(rt, (int32_t)n, &ta, &r);
    if (rc != -expect)
        fprintf(stderr, "fuzz_submit: submit returned %d, the oracle says %d\n", rc, -expect);
    CHECK(rc == -expect);
    if (rc != 0) {
        CHECK(memcmp(&r, &before, sizeof r) == 0); /* a refused submit wrote its result */
        return;
    }
    CHECK(r.task_id == m->submitted);
    uint32_t outputs = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (ta.tensors[i].kind != SIMPLER_ARG_OUTPUT)
            continue;
        const struct simpler_tensor *o = &r.outputs[outputs++];
        const struct simpler_tensor_create *c = &ta.tensors[i].create;
        uint64_t bytes = 0;
        CHECK(oracle_output_bytes(c, &bytes));
        CHECK(o->producer_task_id == r.task_id && o->ndims == c->ndims && o->dtype == c->dtype);
        CHECK(o->buffer_bytes <= bytes && bytes - o->buffer_bytes < 64);
        CHECK(o->addr >= (uint64_t)(uintptr_t)g_h.arena &&
              o->addr + o->buffer_bytes <= (uint64_t)(uintptr_t)g_h.arena + g_h.arena_bytes);
        if (m->output_count < sizeof m->outputs / sizeof m->outputs[0])
            m->outputs[m->output_count++] = *o;
    }
    CHECK(r.output_count == outputs);
    m->submitted++;
    m->heap_used += need;
}

static void do_element(struct simpler_orch *rt, struct fuzz_input *in, struct model *m, bool write)
{
    struct simpler_tensor t = draw_tensor(in, m);
    uint64_t index[SIMPLER_TENSOR_MAX_DIMS] = {0};
    for (uint8_t n = fuzz_u8(in) % 3; n > 0; n--) {
        uint8_t d = fuzz_u8(in) % SIMPLER_TENSOR_MAX_DIMS;
        index[d] = fuzz_pick_u64(in);
    }
    bool ok = oracle_tensor_ok(m, &t);
    for (uint32_t d = 0; ok && d < t.ndims; d++)
        ok = index[d] < t.shape[d];
    int32_t expect = m->error ? m->error : ok ? 0 : expect_call(m, SIMPLER_ORCH_ERR_INVALID_ARGS);

    uint8_t value[8], before[8];
    for (int i = 0; i < 8; i++)
        value[i] = before[i] = fuzz_u8(in);
    int rc = write ? rt->ops->write_element(rt, &t, index, value)
                   : rt->ops->read_element(rt, &t, index, value);
    if (rc != -expect)
        fprintf(stderr, "fuzz_submit: %s_element returned %d, the oracle says %d\n",
                write ? "write" : "read", rc, -expect);
    CHECK(rc == -expect);
    if (rc != 0) {
        CHECK(memcmp(value, before, sizeof value) == 0); /* a refused access wrote *value */
        return;
    }
    int b = fuzz_buffer_of(t.addr, g_buf, BUFFERS);
    if (b < 0)
        return; /* an output: the oracle does not know its bytes */
    size_t es = simpler_dtype_size(t.dtype);
    uint64_t at = simpler_tensor_offset_of(&t, index) * es; /* inside: the oracle said so */
    CHECK(at + es <= buffer_bytes[b]);
    if (write)
        memcpy(&g_mirror[b][at], value, es);
    else
        CHECK(memcmp(value, &g_mirror[b][at], es) == 0); /* read the wrong bytes */
}

static void orchestrate(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    struct fuzz_input in = {g_data, g_size};
    struct model m;
    memset(&m, 0, sizeof m);
    uint32_t ops = 1 + fuzz_u8(&in) % MAX_OPS;
    for (uint32_t i = 0; i < ops && !m.error; i++) {
        uint8_t op = fuzz_u8(&in) % 4;
        if (op <= 1)
            do_submit(rt, &in, &m);
        else
            do_element(rt, &in, &m, op == 3);
    }
    g_first_error = m.error;
    g_accepted = m.submitted;
}

/* ------------------------------------------------------------ libFuzzer */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    ts_device_setup(NULL); /* device 0, the tests' small topology */
    rth_open(&g_h, NULL, 0);
    for (int b = 0; b < BUFFERS; b++) {
        g_buf[b] = ts_dev_alloc(buffer_bytes[b]);
        for (uint64_t i = 0; i < buffer_bytes[b]; i++)
            g_mirror[b][i] = (uint8_t)(i * 7 + b);
        ts_to_dev(g_buf[b], g_mirror[b], buffer_bytes[b]);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_data = data;
    g_size = size;
    g_first_error = -1;
    int status = rth_run(&g_h, orchestrate, g_kernels, MAX_ARGS + 1, NULL);
    CHECK(g_first_error >= 0); /* the orchestration ran to its end */
    if (status != -g_first_error)
        fprintf(stderr, "fuzz_submit: run status %d, the oracle says %d\n", status,
                -g_first_error);
    CHECK(status == -g_first_error);
    CHECK(g_h.result.tasks_submitted == g_accepted);
    /* Our buffers hold exactly what the mirror says: no kernel or element
     * write changed a byte it was not given. */
    for (int b = 0; b < BUFFERS; b++) {
        uint8_t now[4096];
        ts_from_dev(now, g_buf[b], buffer_bytes[b]);
        CHECK(memcmp(now, g_mirror[b], buffer_bytes[b]) == 0);
    }
    return 0;
}
