/*
 * test_hbg_image.c — the device's boot of a host_build_graph image trusts
 * nothing in it (runtime/hbg_boot.c): a graph built on the host
 * (rt_run_build) is made unsound one field at a time — the header's
 * magic and sections, a task record's counts, kernels, lanes, blocks and
 * id, a producer list, a zero-fill, an element write — and shipped as it
 * is (rt_run_enqueue of a request whose image is built). Each run fails
 * with SIMPLER_ORCH_ERR_BAD_PACKET, nothing of it runs (no task, no
 * element write), the process does not crash, and the next run, built
 * afresh, is exact. An image carrying the build's own code fails with
 * that code.
 *
 * The graph: an element write x[0] := 7 at boot; A: tmp = x (tmp a
 * zero-filled OUTPUT on the heap); B: y = tmp (A its producer); C: y += 1
 * (B its producer). A clean run leaves y[k] = x[k] + 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "rt_support.h"
#include "test_support.h"

#define N 16
#define BAD (-SIMPLER_ORCH_ERR_BAD_PACKET)

enum { K_COPY, K_INC, K_KERNELS };

/* t0 in, t1 out (i32): out[k] = in[k]. */
static void kernel_copy(int64_t *args)
{
    const struct simpler_tensor *in = simpler_kernel_tensor(args, 0);
    const struct simpler_tensor *out = simpler_kernel_tensor(args, 1);
    const int32_t *src = (const int32_t *)(uintptr_t)in->addr + in->start_offset;
    int32_t *dst = (int32_t *)(uintptr_t)out->addr + out->start_offset;
    for (uint64_t k = 0; k < simpler_tensor_numel(out); k++)
        dst[k] = src[k];
}

/* t0 inout (i32): += 1. */
static void kernel_inc(int64_t *args)
{
    const struct simpler_tensor *t = simpler_kernel_tensor(args, 0);
    int32_t *v = (int32_t *)(uintptr_t)t->addr + t->start_offset;
    for (uint64_t k = 0; k < simpler_tensor_numel(t); k++)
        v[k] += 1;
}

static const simpler_kernel_fn g_kernels[K_KERNELS] = {kernel_copy, kernel_inc};

void hi_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);
void hi_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *x = &args->tensors[0], *y = &args->tensors[1];
    const uint64_t first = 0;
    const int32_t seven = 7;
    if (rt->ops->write_element(rt, x, &first, &seven) != 0)
        return;
    struct simpler_task_args ta;
    struct simpler_task_result a;
    const uint64_t shape[1] = {N};
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, x);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_I32, 1);
    if (simpler_submit_aiv(rt, K_COPY, &ta, &a) != 0)
        return;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &a.outputs[0]);
    simpler_task_args_add_output_existing(&ta, y);
    if (simpler_submit_aiv(rt, K_COPY, &ta, NULL) != 0)
        return;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, y);
    simpler_submit_aiv(rt, K_INC, &ta, NULL);
}

/* The harness under host_build_graph, x = 100 + k and y = -1. */
struct hi {
    struct rt_harness h;
    int32_t *x, *y; /* device */
    struct simpler_orch_args args;
};

static void fill(struct hi *f)
{
    int32_t x[N], y[N];
    for (int k = 0; k < N; k++) {
        x[k] = 100 + k;
        y[k] = -1;
    }
    ts_to_dev(f->x, x, sizeof x);
    ts_to_dev(f->y, y, sizeof y);
}

static void hi_open(struct hi *f)
{
    assert_int_equal(setenv("SIMPLER_RUNTIME", "hbg", 1), 0); /* rth_open reads it */
    rth_open(&f->h, NULL, 0);
    assert_true(f->h.hbg);
    f->x = ts_dev_alloc(N * sizeof(int32_t));
    f->y = ts_dev_alloc(N * sizeof(int32_t));
    memset(&f->args, 0, sizeof f->args);
    f->args.tensor_count = 2;
    f->args.tensors[0] = ts_dev_tensor_1d(f->x, N, SIMPLER_DTYPE_I32);
    f->args.tensors[1] = ts_dev_tensor_1d(f->y, N, SIMPLER_DTYPE_I32);
    ts_to_dev(f->h.kernels_dev, g_kernels, sizeof g_kernels);
    ts_to_dev(f->h.args_dev, &f->args, sizeof f->args);
    fill(f);
}

static void hi_close(struct hi *f)
{
    assert_int_equal(simdev_free(f->x), 0);
    assert_int_equal(simdev_free(f->y), 0);
    rth_close(&f->h);
    unsetenv("SIMPLER_RUNTIME");
}

/* True when y holds x + 1 (x[0] being 7 after the write) ... */
static bool ran_exactly(const struct hi *f)
{
    int32_t x[N], y[N];
    ts_from_dev(x, f->x, sizeof x);
    ts_from_dev(y, f->y, sizeof y);
    bool ok = x[0] == 7;
    for (int k = 0; k < N && ok; k++)
        ok = y[k] == (k == 0 ? 7 : 100 + k) + 1;
    return ok;
}

/* ... or untouched: nothing of the run ran, its element write neither. */
static bool untouched(const struct hi *f)
{
    int32_t x[N], y[N];
    ts_from_dev(x, f->x, sizeof x);
    ts_from_dev(y, f->y, sizeof y);
    bool ok = true;
    for (int k = 0; k < N && ok; k++)
        ok = x[k] == 100 + k && y[k] == -1;
    return ok;
}

/* Where a field of the image lies: the header, task record `task` (in
 * submission order), producer entry `task`, or the first zero-fill or
 * element write; plus the field's offset in it. */
enum hi_part { HEADER, TASK, PRODUCER, ZERO, WRITE };

/* One corruption: `bytes` bytes of `value` written at `field` of `part`. */
struct hi_case {
    const char *what;
    enum hi_part part;
    uint32_t task;
    size_t field;
    uint64_t value;
    size_t bytes;
    int expect; /* the run's status */
};

#define H(f) offsetof(struct rt_hbg_header, f)
#define T(f) offsetof(struct rt_hbg_task, f)
#define FIELD(s, f) sizeof(((struct s *)0)->f)

static const struct hi_case k_cases[] = {
    {"header magic", HEADER, 0, H(magic), 0x12345678, FIELD(rt_hbg_header, magic), BAD},
    {"header bytes past the region", HEADER, 0, H(bytes), UINT64_MAX / 2,
     FIELD(rt_hbg_header, bytes), BAD},
    {"header bytes below a header", HEADER, 0, H(bytes), 8, FIELD(rt_hbg_header, bytes), BAD},
    {"more tasks than the windows", HEADER, 0, H(task_count), UINT32_MAX,
     FIELD(rt_hbg_header, task_count), BAD},
    {"producers past the image", HEADER, 0, H(producers), UINT64_MAX - 7,
     FIELD(rt_hbg_header, producers), BAD},
    {"zero-fills misaligned", HEADER, 0, H(zeros), 4, FIELD(rt_hbg_header, zeros), BAD},
    {"too many writes", HEADER, 0, H(write_count), UINT32_MAX,
     FIELD(rt_hbg_header, write_count), BAD},
    {"more edges logged than made", HEADER, 0, H(edges_logged), 1000,
     FIELD(rt_hbg_header, edges_logged), BAD},
    {"a negative build code", HEADER, 0, H(error), (uint32_t)-3, FIELD(rt_hbg_header, error),
     BAD},
    {"the build's own code", HEADER, 0, H(error), SIMPLER_ORCH_ERR_INVALID_ARGS,
     FIELD(rt_hbg_header, error), -SIMPLER_ORCH_ERR_INVALID_ARGS},
    {"too many tensors", TASK, 0, T(tensor_count), SIMPLER_TASK_MAX_TENSORS + 1,
     FIELD(rt_hbg_task, tensor_count), BAD},
    {"a record not a multiple of 8", TASK, 1, T(bytes), 7 * 8 + 3, FIELD(rt_hbg_task, bytes),
     BAD},
    {"a record past the producers", TASK, 2, T(bytes), 1u << 30, FIELD(rt_hbg_task, bytes),
     BAD},
    {"a kernel the table lacks", TASK, 0, T(kernel) + sizeof(int32_t), K_KERNELS,
     sizeof(int32_t), BAD},
    {"lanes that are not its shape", TASK, 0, T(lanes), 1, FIELD(rt_hbg_task, lanes), BAD},
    {"no block", TASK, 1, T(block_num), 0, FIELD(rt_hbg_task, block_num), BAD},
    {"sync_start 2", TASK, 1, T(sync_start), 2, FIELD(rt_hbg_task, sync_start), BAD},
    {"producers out of the list", TASK, 1, T(producer_first), 1000,
     FIELD(rt_hbg_task, producer_first), BAD},
    {"an id out of its ring's order", TASK, 2, T(task_id), 1u << 20,
     FIELD(rt_hbg_task, task_id), BAD},
    {"a producer that is not earlier", PRODUCER, 1, 0, 1, sizeof(uint32_t), BAD},
    {"a zero-fill outside the heaps", ZERO, 0, offsetof(struct rt_hbg_zero, addr), 64,
     FIELD(rt_hbg_zero, addr), BAD},
    {"an element write of 9 bytes", WRITE, 0, offsetof(struct rt_hbg_write, size), 9,
     FIELD(rt_hbg_write, size), BAD},
    {"an element write to address 0", WRITE, 0, offsetof(struct rt_hbg_write, addr), 0,
     FIELD(rt_hbg_write, addr), BAD},
};
#define CASES (sizeof k_cases / sizeof k_cases[0])

/* The offset in `image` of the case's part. */
static size_t part_offset(const uint8_t *image, const struct hi_case *c)
{
    struct rt_hbg_header hd;
    memcpy(&hd, image, sizeof hd);
    switch (c->part) {
    case HEADER:
        return 0;
    case TASK: {
        size_t at = (size_t)hd.tasks;
        for (uint32_t i = 0; i < c->task; i++) {
            struct rt_hbg_task rec;
            memcpy(&rec, image + at, sizeof rec);
            at += rec.bytes;
        }
        return at;
    }
    case PRODUCER:
        /* task c->task's first producer */
        {
            size_t at = (size_t)hd.tasks;
            struct rt_hbg_task rec;
            for (uint32_t i = 0;; i++) {
                memcpy(&rec, image + at, sizeof rec);
                if (i == c->task)
                    break;
                at += rec.bytes;
            }
            assert_true(rec.producer_count > 0);
            return (size_t)hd.producers + (size_t)rec.producer_first * sizeof(uint32_t);
        }
    case ZERO:
        assert_true(hd.zero_count > 0);
        return (size_t)hd.zeros;
    case WRITE:
    default:
        assert_true(hd.write_count > 0);
        return (size_t)hd.writes;
    }
}

/* Builds the graph, checks its shape, corrupts it by `c` (NULL: none) and
 * ships it: the run's status. */
static int run_with(struct hi *f, const struct hi_case *c)
{
    fill(f);
    struct rt_run_request rq = rth_request(&f->h, hi_orchestration, K_KERNELS);
    assert_int_equal(rt_run_build(f->h.launcher, &rq), 0);
    uint8_t *image = f->h.hbg_bank;
    struct rt_hbg_header hd;
    memcpy(&hd, image, sizeof hd);
    /* The graph as described: 3 tasks, 2 producer entries, 1 zero-fill,
     * 1 write, no code. Another shape: the cases below no longer break
     * what they name. */
    assert_int_equal(hd.error, 0);
    assert_int_equal(hd.task_count, 3);
    assert_int_equal(hd.producer_count, 2);
    assert_int_equal(hd.zero_count, 1);
    assert_int_equal(hd.write_count, 1);
    if (c) {
        size_t at = part_offset(image, c) + c->field;
        assert_true(at + c->bytes <= f->h.host.image_bytes);
        memcpy(image + at, &c->value, c->bytes); /* little-endian: the low bytes */
    }
    assert_int_equal(rt_run_enqueue(f->h.launcher, f->h.stream, &rq), 0);
    return simdev_stream_sync(f->h.stream);
}

static void test_each_unsound_field_of_an_image_fails_the_run_whole(void **state)
{
    (void)state;
    struct hi f;
    hi_open(&f);
    assert_int_equal(run_with(&f, NULL), 0);
    assert_true(ran_exactly(&f)); /* false: the harness's graph is not the one described */
    uint64_t refused = 0;
    for (size_t i = 0; i < CASES; i++) {
        int rc = run_with(&f, &k_cases[i]);
        if (rc != k_cases[i].expect)
            fail_msg("%s: the run returned %d, expected %d", k_cases[i].what, rc,
                     k_cases[i].expect);
        /* A task or the element write ran from an image the device refused. */
        if (!untouched(&f))
            fail_msg("%s: the refused run touched x or y", k_cases[i].what);
        refused++;
        assert_int_equal(run_with(&f, NULL), 0);
        if (!ran_exactly(&f))
            fail_msg("%s: the next run is not exact", k_cases[i].what);
    }
    /* Fewer: a case was skipped. */
    assert_int_equal(refused, CASES);
    hi_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(test_each_unsound_field_of_an_image_fails_the_run_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
