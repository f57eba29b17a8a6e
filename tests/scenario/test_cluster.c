/*
 * test_cluster.c — clusters through simpler/cluster.h: dependencies
 * inferred between runs on different devices (RAW, WAR, WAW), tiles of one
 * buffer, group submits, a failing run among 100 with its dependents
 * cancelled and the rest exact, and bad input refused before anything is
 * submitted.
 *
 * Ordering is observed without timing: a kernel held at a gate keeps its
 * run (and so its task) unfinished while the test looks at the tasks that
 * must wait for it; values are exact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cl_support.h"

#define TEST(fn) SIMPLER_TEST_WITH(fn, cl_setup, cl_teardown)

/* Waits until the kernel held at gate g has arrived, so its run is on the
 * device and its task unfinished. */
static void held(uint32_t g)
{
    assert_true(ts_gate_wait_arrivals_for(&cl_gates[g - 1], 1, TS_DEADLOCK_GUARD_MS));
}

static uint32_t state_of(struct simpler_cluster_orch *o, simpler_cluster_task_t t,
                         uint32_t *dependencies)
{
    struct simpler_cluster_task_info info;
    assert_int_equal(simpler_cluster_task_query(o, t, &info), 0);
    if (dependencies)
        *dependencies = info.dependencies;
    return info.state;
}

/* ------------------------------------------------------------------ RAW */

struct vecs {
    struct cl_vec v[8];
};

static int orch_raw(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb a, b;
    simpler_cluster_task_t ta, tb;
    uint32_t deps;
    cl_axpb_args(&a, &s->v[0].all, &s->v[1].all, 2.0f, 1.0f, 0, 1); /* y1 = x*2+1, held */
    cl_axpb_args(&b, &s->v[1].all, &s->v[2].all, 3.0f, 0.0f, 0, 0); /* y2 = y1*3 */
    assert_int_equal(simpler_cluster_submit(o, 0, CL_AXPB, &a.args, NULL, &ta), 0);
    assert_int_equal(simpler_cluster_submit(o, 1, CL_AXPB, &b.args, NULL, &tb), 0);
    assert_int_equal(ta, 1);
    assert_int_equal(tb, 2);
    held(1);
    /* QUEUED or RUNNING: device 1 would have read y1 before device 0 wrote it */
    assert_int_equal(state_of(o, tb, &deps), SIMPLER_CLUSTER_TASK_PENDING);
    assert_int_equal(deps, 1); /* 0: the read of y1 found no writer */
    ts_gate_open(&cl_gates[0]);
    assert_int_equal(simpler_cluster_wait_task(o, tb), 0);
    assert_int_equal(state_of(o, ta, NULL), SIMPLER_CLUSTER_TASK_DONE);
    return 0;
}

static void a_read_on_device_1_waits_for_the_write_on_device_0(void **state)
{
    (void)state;
    struct simpler_cluster *c = cl_open(2, 2);
    struct vecs s;
    cl_vec_init(&s.v[0], 1.0f);
    cl_vec_init(&s.v[1], 0.0f);
    cl_vec_init(&s.v[2], 0.0f);
    cl_vec_poison(&s.v[1]);
    cl_vec_poison(&s.v[2]);
    struct simpler_cluster_run_info info;
    assert_int_equal(simpler_cluster_run(c, orch_raw, &s, &info), 0);
    cl_assert_axpb(s.v[0].data, s.v[1].data, CL_N, 2.0f, 1.0f, "y1 (device 0)");
    /* poison-derived values: device 1 read y1 before device 0's finalize */
    cl_assert_axpb(s.v[1].data, s.v[2].data, CL_N, 3.0f, 0.0f, "y2 (device 1, reads y1)");
    assert_int_equal(info.tasks_submitted, 2);
    assert_int_equal(info.tasks_succeeded, 2);
    assert_int_equal(info.runs_launched, 2);
    assert_int_equal(info.dependencies, 1);
    assert_int_equal(info.raw, 1);
    assert_int_equal(info.war, 0); /* 1: the read was taken for a write */
    assert_int_equal(info.waw, 0);
    for (int i = 0; i < 3; i++)
        cl_vec_free(&s.v[i]);
    cl_close(c);
}

/* ------------------------------------------------------------ WAR, WAW */

static int orch_war(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb a, b;
    simpler_cluster_task_t ta, tb;
    cl_axpb_args(&a, &s->v[0].all, &s->v[1].all, 2.0f, 1.0f, 0, 1); /* reads x, held */
    cl_axpb_args(&b, &s->v[2].all, &s->v[0].all, 1.0f, 5.0f, 0, 0); /* writes x = z+5 */
    assert_int_equal(simpler_cluster_submit(o, 0, CL_AXPB, &a.args, NULL, &ta), 0);
    assert_int_equal(simpler_cluster_submit(o, 1, CL_AXPB, &b.args, NULL, &tb), 0);
    held(1);
    /* not PENDING: the write of x could land before the read staged it */
    assert_int_equal(state_of(o, tb, NULL), SIMPLER_CLUSTER_TASK_PENDING);
    ts_gate_open(&cl_gates[0]);
    return 0;
}

static void a_write_on_device_1_waits_for_a_read_on_device_0(void **state)
{
    (void)state;
    struct simpler_cluster *c = cl_open(2, 2);
    struct vecs s;
    cl_vec_init(&s.v[0], 1.0f);
    cl_vec_init(&s.v[1], 0.0f);
    cl_vec_init(&s.v[2], 7.0f);
    cl_vec_init(&s.v[3], 1.0f); /* x as it was */
    cl_vec_poison(&s.v[1]);
    struct simpler_cluster_run_info info;
    assert_int_equal(simpler_cluster_run(c, orch_war, &s, &info), 0);
    /* the new x's values: the read saw the later write */
    cl_assert_axpb(s.v[3].data, s.v[1].data, CL_N, 2.0f, 1.0f, "y (read of the old x)");
    cl_assert_axpb(s.v[2].data, s.v[0].data, CL_N, 1.0f, 5.0f, "x (written after the read)");
    assert_int_equal(info.dependencies, 1);
    assert_int_equal(info.war, 1);
    assert_int_equal(info.raw, 0);
    assert_int_equal(info.waw, 0);
    for (int i = 0; i < 4; i++)
        cl_vec_free(&s.v[i]);
    cl_close(c);
}

static int orch_waw(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb a, b;
    simpler_cluster_task_t ta, tb;
    cl_axpb_args(&a, &s->v[0].all, &s->v[1].all, 1.0f, 1.0f, 0, 1); /* y = x+1, held */
    cl_axpb_args(&b, &s->v[0].all, &s->v[1].all, 1.0f, 2.0f, 0, 0); /* y = x+2 */
    assert_int_equal(simpler_cluster_submit(o, 2, CL_AXPB, &a.args, NULL, &ta), 0);
    assert_int_equal(simpler_cluster_submit(o, 3, CL_AXPB, &b.args, NULL, &tb), 0);
    held(1);
    /* not PENDING: the first write's finalize could land last */
    assert_int_equal(state_of(o, tb, NULL), SIMPLER_CLUSTER_TASK_PENDING);
    ts_gate_open(&cl_gates[0]);
    return 0;
}

static void a_second_write_waits_for_the_first_and_lands_last(void **state)
{
    (void)state;
    struct simpler_cluster *c = cl_open(4, 2);
    struct vecs s;
    cl_vec_init(&s.v[0], 1.0f);
    cl_vec_init(&s.v[1], 0.0f);
    cl_vec_poison(&s.v[1]);
    struct simpler_cluster_run_info info;
    assert_int_equal(simpler_cluster_run(c, orch_waw, &s, &info), 0);
    /* x+1 here: the first write landed after the second */
    cl_assert_axpb(s.v[0].data, s.v[1].data, CL_N, 1.0f, 2.0f, "y (the later write)");
    assert_int_equal(info.dependencies, 1);
    assert_int_equal(info.waw, 1);
    assert_int_equal(info.raw, 0);
    assert_int_equal(info.war, 0);
    cl_vec_free(&s.v[0]);
    cl_vec_free(&s.v[1]);
    cl_close(c);
}

/* -------------------------------------------------------- concurrency */

static int orch_independent(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb a[4];
    simpler_cluster_task_t t[4];
    for (uint32_t w = 0; w < 4; w++) {
        cl_axpb_args(&a[w], &s->v[w].all, &s->v[4 + w].all, 2.0f, (float)w, 0, w + 1);
        assert_int_equal(simpler_cluster_submit(o, w, CL_AXPB, &a[w].args, NULL, &t[w]), 0);
    }
    /* All four kernels arrive while all four are held: the four devices
     * run at once (a cluster that ran them one by one never gets here). */
    for (uint32_t w = 0; w < 4; w++)
        held(w + 1);
    for (uint32_t w = 0; w < 4; w++)
        ts_gate_open(&cl_gates[w]);
    return 0;
}

static void independent_runs_on_four_devices_run_at_once(void **state)
{
    (void)state;
    struct simpler_cluster *c = cl_open(4, 2);
    struct vecs s;
    for (int i = 0; i < 8; i++) {
        cl_vec_init(&s.v[i], (float)i);
        if (i >= 4)
            cl_vec_poison(&s.v[i]);
    }
    struct simpler_cluster_run_info info;
    assert_int_equal(simpler_cluster_run(c, orch_independent, &s, &info), 0);
    for (uint32_t w = 0; w < 4; w++)
        cl_assert_axpb(s.v[w].data, s.v[4 + w].data, CL_N, 2.0f, (float)w, "y of worker w");
    assert_int_equal(info.dependencies, 0); /* distinct buffers order nothing */
    for (int i = 0; i < 8; i++)
        cl_vec_free(&s.v[i]);
    cl_close(c);
}

/* ----------------------------------------------------- tiles of a buffer */

#define ROWS 8
#define COLS 32 /* ROWS x COLS = CL_N */

static struct simpler_tensor tile(const struct cl_vec *v, uint32_t r0, uint32_t rows,
                                  uint32_t c0, uint32_t cols)
{
    struct simpler_tensor m = {0}, out = {0};
    uint64_t shape[2] = {ROWS, COLS};
    assert_int_equal(simpler_tensor_make(&m, (uint64_t)(uintptr_t)v->data, shape, 2,
                                         SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST),
                     0);
    struct simpler_tensor band = {0};
    assert_int_equal(simpler_tensor_slice(&band, &m, 0, r0, r0 + rows, 1), 0);
    assert_int_equal(simpler_tensor_slice(&out, &band, 1, c0, c0 + cols, 1), 0);
    return out;
}

static int orch_tiles(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb a[6];
    simpler_cluster_task_t t[6];
    uint32_t deps;
    /* Four writers of Y's quadrants, from X's same quadrants, each held at
     * its gate until the readers below have been submitted (a finished
     * writer orders nothing, and would not be counted). */
    for (uint32_t q = 0; q < 4; q++) {
        struct simpler_tensor x = tile(&s->v[0], (q / 2) * 4, 4, (q % 2) * 16, 16);
        struct simpler_tensor y = tile(&s->v[1], (q / 2) * 4, 4, (q % 2) * 16, 16);
        cl_axpb_args(&a[q], &x, &y, 2.0f, (float)q, 0, q + 1);
        assert_int_equal(simpler_cluster_submit(o, q, CL_AXPB, &a[q].args, NULL, &t[q]), 0);
        assert_int_equal(state_of(o, t[q], &deps) == SIMPLER_CLUSTER_TASK_PENDING, 0);
        assert_int_equal(deps, 0); /* disjoint quadrants of one buffer are independent */
    }
    /* Rows 4..7 whole: its read span meets quadrants 2 and 3 only. */
    struct simpler_tensor rows = tile(&s->v[1], 4, 4, 0, COLS);
    struct simpler_tensor z = tile(&s->v[2], 4, 4, 0, COLS);
    cl_axpb_args(&a[4], &rows, &z, 1.0f, 1.0f, 0, 0);
    assert_int_equal(simpler_cluster_submit(o, 0, CL_AXPB, &a[4].args, NULL, &t[4]), 0);
    state_of(o, t[4], &deps);
    assert_int_equal(deps, 2); /* 4: the lower half's read met the upper quadrants */
    /* Quadrant 1 (rows 0..3, cols 16..31) alone: its read span reaches from
     * (0,16) to (3,31), which holds none of quadrant 0's elements on rows
     * 1..3 but does hold (1..3, 0..15)'s bytes: the span rule makes it wait
     * for quadrant 0 as well (docs/cluster.md, section 3). */
    struct simpler_tensor q1 = tile(&s->v[1], 0, 4, 16, 16);
    struct simpler_tensor w = tile(&s->v[3], 0, 4, 16, 16);
    cl_axpb_args(&a[5], &q1, &w, 1.0f, 0.0f, 0, 0);
    assert_int_equal(simpler_cluster_submit(o, 1, CL_AXPB, &a[5].args, NULL, &t[5]), 0);
    state_of(o, t[5], &deps);
    assert_int_equal(deps, 2); /* 1: the read was taken as the view, not the span it stages */
    for (uint32_t g = 0; g < 4; g++)
        ts_gate_open(&cl_gates[g]);
    return 0;
}

static void tiles_of_one_buffer_order_only_what_they_share(void **state)
{
    (void)state;
    struct simpler_cluster *c = cl_open(4, 2);
    struct vecs s;
    for (int i = 0; i < 4; i++) {
        cl_vec_init(&s.v[i], (float)i);
        if (i)
            cl_vec_poison(&s.v[i]);
    }
    struct simpler_cluster_run_info info;
    assert_int_equal(simpler_cluster_run(c, orch_tiles, &s, &info), 0);
    for (uint32_t r = 0; r < ROWS; r++) {
        for (uint32_t col = 0; col < COLS; col++) {
            uint32_t i = r * COLS + col, q = (r / 4) * 2 + col / 16;
            float y = s.v[0].data[i] * 2.0f + (float)q;
            if (memcmp(&s.v[1].data[i], &y, sizeof y) != 0)
                fail_msg("Y(%u,%u) = %g, want %g: quadrant %u lost", r, col,
                         (double)s.v[1].data[i], (double)y, q);
            if (r >= 4) {
                float z = y + 1.0f;
                assert_true(memcmp(&s.v[2].data[i], &z, sizeof z) == 0); /* read too early */
            }
            if (r < 4 && col >= 16)
                assert_true(memcmp(&s.v[3].data[i], &y, sizeof y) == 0);
        }
    }
    assert_int_equal(info.dependencies, 4);
    assert_int_equal(info.raw, 4);
    for (int i = 0; i < 4; i++)
        cl_vec_free(&s.v[i]);
    cl_close(c);
}

/* --------------------------------------------------------------- groups */

static int orch_group(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb a[4], d;
    struct simpler_cluster_member m[4];
    simpler_cluster_task_t g, t;
    uint32_t deps;
    /* Member w writes quarter w of y from quarter w of x; member 2 is held. */
    struct simpler_tensor xq[4], yq[4];
    for (uint32_t w = 0; w < 4; w++) {
        assert_int_equal(simpler_tensor_slice(&xq[w], &s->v[0].all, 0, w * 64, (w + 1) * 64, 1),
                         0);
        assert_int_equal(simpler_tensor_slice(&yq[w], &s->v[1].all, 0, w * 64, (w + 1) * 64, 1),
                         0);
        cl_axpb_args(&a[w], &xq[w], &yq[w], 2.0f, 1.0f, 0, w == 2 ? 3 : 0);
        m[w] = (struct simpler_cluster_member){.worker = 3 - w, .args = &a[w].args};
    }
    assert_int_equal(simpler_cluster_submit_group(o, CL_AXPB, m, 4, NULL, &g), 0);
    /* One task reading all of y. */
    cl_axpb_args(&d, &s->v[1].all, &s->v[2].all, 1.0f, 1.0f, 0, 0);
    assert_int_equal(simpler_cluster_submit(o, 0, CL_AXPB, &d.args, NULL, &t), 0);
    held(3);
    struct simpler_cluster_task_info gi;
    assert_int_equal(simpler_cluster_task_query(o, g, &gi), 0);
    assert_int_equal(gi.members, 4);
    /* every member was launched at submit; QUEUED: one waits for a slot */
    assert_int_equal(gi.state, SIMPLER_CLUSTER_TASK_RUNNING);
    assert_int_equal(state_of(o, t, &deps), SIMPLER_CLUSTER_TASK_PENDING); /* waits for all */
    assert_int_equal(deps, 1); /* one dependency: the group is one task */
    ts_gate_open(&cl_gates[2]);
    assert_int_equal(simpler_cluster_wait_task(o, t), 0);
    assert_int_equal(simpler_cluster_task_query(o, g, &gi), 0);
    assert_int_equal(gi.members_ended, 4);
    return 0;
}

static void a_group_runs_its_members_on_their_workers_and_its_dependents_wait_for_all(void **state)
{
    (void)state;
    struct simpler_cluster *c = cl_open(4, 2);
    struct vecs s;
    cl_vec_init(&s.v[0], 3.0f);
    cl_vec_init(&s.v[1], 0.0f);
    cl_vec_init(&s.v[2], 0.0f);
    cl_vec_poison(&s.v[1]);
    cl_vec_poison(&s.v[2]);
    struct simpler_cluster_run_info info;
    assert_int_equal(simpler_cluster_run(c, orch_group, &s, &info), 0);
    cl_assert_axpb(s.v[0].data, s.v[1].data, CL_N, 2.0f, 1.0f, "y (the four members)");
    cl_assert_axpb(s.v[1].data, s.v[2].data, CL_N, 1.0f, 1.0f, "z (reads every member's y)");
    assert_int_equal(info.tasks_submitted, 2);
    assert_int_equal(info.runs_launched, 5); /* 4 members + 1 */
    assert_int_equal(info.dependencies, 1);
    for (int i = 0; i < 3; i++)
        cl_vec_free(&s.v[i]);
    cl_close(c);
}

/* ----------------------------------------------------- one fails of 100 */

#define MANY 100
#define FAILING 37
#define FAIL_CODE 321

struct many {
    float *x[MANY + 4], *y[MANY + 4];
    struct simpler_tensor xt[MANY + 4], yt[MANY + 4];
    simpler_cluster_task_t t[MANY + 4];
    int status[MANY + 4];
};

static int orch_many(struct simpler_cluster_orch *o, void *user)
{
    struct many *s = user;
    struct cl_axpb a;
    for (uint32_t i = 0; i < MANY; i++) {
        cl_axpb_args(&a, &s->xt[i], &s->yt[i], 2.0f, (float)i, i == FAILING ? FAIL_CODE : 0,
                     i == FAILING ? 1 : 0);
        assert_int_equal(simpler_cluster_submit(o, i % 4, CL_AXPB, &a.args, NULL, &s->t[i]), 0);
    }
    /* While the failing run is held: a reader of its y, and a reader of
     * that reader's output, wait. */
    held(1);
    cl_axpb_args(&a, &s->yt[FAILING], &s->yt[MANY], 1.0f, 1.0f, 0, 0);
    assert_int_equal(simpler_cluster_submit(o, 1, CL_AXPB, &a.args, NULL, &s->t[MANY]), 0);
    cl_axpb_args(&a, &s->yt[MANY], &s->yt[MANY + 1], 1.0f, 1.0f, 0, 0);
    assert_int_equal(simpler_cluster_submit(o, 2, CL_AXPB, &a.args, NULL, &s->t[MANY + 1]), 0);
    assert_int_equal(state_of(o, s->t[MANY + 1], NULL), SIMPLER_CLUSTER_TASK_PENDING);
    ts_gate_open(&cl_gates[0]);
    assert_int_equal(simpler_cluster_wait_task(o, s->t[FAILING]), -FAIL_CODE);
    /* Submitted after the failure: cancelled at once. */
    cl_axpb_args(&a, &s->yt[FAILING], &s->yt[MANY + 2], 1.0f, 1.0f, 0, 0);
    assert_int_equal(simpler_cluster_submit(o, 3, CL_AXPB, &a.args, NULL, &s->t[MANY + 2]), 0);
    assert_int_equal(state_of(o, s->t[MANY + 2], NULL), SIMPLER_CLUSTER_TASK_DONE);
    /* A reader of a good run's output runs. */
    cl_axpb_args(&a, &s->yt[FAILING - 1], &s->yt[MANY + 3], 1.0f, 1.0f, 0, 0);
    assert_int_equal(simpler_cluster_submit(o, 0, CL_AXPB, &a.args, NULL, &s->t[MANY + 3]), 0);
    for (uint32_t i = 0; i < MANY + 4; i++)
        s->status[i] = simpler_cluster_wait_task(o, s->t[i]);
    return 0;
}

static void a_failing_run_among_100_fails_its_dependents_only(void **state)
{
    (void)state;
    struct simpler_cluster *c = cl_open(4, 4);
    struct many *s = calloc(1, sizeof *s);
    assert_non_null(s);
    uint64_t shape[1] = {64};
    for (uint32_t i = 0; i < MANY + 4; i++) {
        s->x[i] = malloc(64 * sizeof(float));
        s->y[i] = malloc(64 * sizeof(float));
        for (uint32_t k = 0; k < 64; k++)
            s->x[i][k] = cl_x(k, (float)i);
        memset(s->y[i], 0xDB, 64 * sizeof(float));
        simpler_tensor_make(&s->xt[i], (uint64_t)(uintptr_t)s->x[i], shape, 1, SIMPLER_DTYPE_F32,
                            SIMPLER_MEM_HOST);
        simpler_tensor_make(&s->yt[i], (uint64_t)(uintptr_t)s->y[i], shape, 1, SIMPLER_DTYPE_F32,
                            SIMPLER_MEM_HOST);
    }
    struct simpler_cluster_run_info info;
    /* another code: the run's result is not the failed run's own code */
    assert_int_equal(simpler_cluster_run(c, orch_many, s, &info), -FAIL_CODE);
    for (uint32_t i = 0; i < MANY; i++) {
        if (i == FAILING) {
            assert_int_equal(s->status[i], -FAIL_CODE);
            cl_assert_poison(s->y[i], 64, "y of the failed run (outputs copied back)");
        } else {
            assert_int_equal(s->status[i], 0); /* an unrelated run was harmed */
            cl_assert_axpb(s->x[i], s->y[i], 64, 2.0f, (float)i, "y of an unrelated run");
        }
    }
    for (uint32_t i = MANY; i < MANY + 3; i++) {
        assert_int_equal(s->status[i], PTO_RUNTIME_ERR_DEPENDENCY_FAILED);
        cl_assert_poison(s->y[i], 64, "y of a cancelled task (it ran)");
    }
    assert_int_equal(s->status[MANY + 3], 0);
    cl_assert_axpb(s->y[FAILING - 1], s->y[MANY + 3], 64, 1.0f, 1.0f, "a good run's reader");
    assert_int_equal(info.tasks_submitted, MANY + 4);
    assert_int_equal(info.tasks_succeeded, MANY);
    assert_int_equal(info.tasks_failed, 1);
    assert_int_equal(info.tasks_cancelled, 3);
    assert_int_equal(info.runs_launched, MANY + 1); /* cancelled tasks never launch */
    assert_int_equal(info.first_failed_task, FAILING + 1);
    assert_int_equal(info.first_failed_status, -FAIL_CODE);
    for (uint32_t i = 0; i < MANY + 4; i++) {
        free(s->x[i]);
        free(s->y[i]);
    }
    free(s);
    cl_close(c);
}

/* ------------------------------------------------------------ bad input */

struct refusals {
    struct vecs v;
    struct simpler_cluster_orch *orch_seen;
    struct simpler_cluster *cluster;
};

static int orch_refusals(struct simpler_cluster_orch *o, void *user)
{
    struct refusals *r = user;
    struct cl_axpb a, b;
    struct simpler_cluster_task_info ti;
    simpler_cluster_task_t t = 77;
    r->orch_seen = o;
    cl_axpb_args(&a, &r->v.v[0].all, &r->v.v[1].all, 2.0f, 1.0f, 0, 0);
    assert_int_equal(simpler_cluster_submit(o, 4, CL_AXPB, &a.args, NULL, &t),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* worker 4 of 4 */
    assert_int_equal(simpler_cluster_submit(o, 0, CL_UNREGISTERED, &a.args, NULL, &t),
                     PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT);
    assert_int_equal(simpler_cluster_submit(o, 0, CL_AXPB, NULL, NULL, &t),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_cluster_submit(o, 0, CL_AXPB, &a.args, NULL, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    b = a;
    b.args.tensors = b.tensors;
    b.args.scalars = b.scalars;
    b.tensors[1].address_space = SIMPLER_MEM_DEVICE;
    assert_int_equal(simpler_cluster_submit(o, 0, CL_AXPB, &b.args, NULL, &t),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* a device tensor */
    b = a;
    b.args.tensors = b.tensors;
    b.args.scalars = b.scalars;
    b.args.tensor_count = 1;
    assert_int_equal(simpler_cluster_submit(o, 0, CL_AXPB, &b.args, NULL, &t),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* counts of another signature */
    b = a;
    b.args.tensors = b.tensors;
    b.args.scalars = b.scalars;
    b.tensors[1].shape[0] = CL_N + 1;
    assert_int_equal(simpler_cluster_submit(o, 0, CL_AXPB, &b.args, NULL, &t),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* a view outside its buffer */
    /* Groups: a repeated worker; writes of two members that overlap. */
    struct simpler_cluster_member m[2] = {{.worker = 1, .args = &a.args},
                                          {.worker = 1, .args = &a.args}};
    assert_int_equal(simpler_cluster_submit_group(o, CL_AXPB, m, 2, NULL, &t),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    m[1].worker = 2;
    assert_int_equal(simpler_cluster_submit_group(o, CL_AXPB, m, 2, NULL, &t),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_cluster_submit_group(o, CL_AXPB, m, 0, NULL, &t),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(t, 77); /* a refused submit wrote its output */
    /* Nothing was created: the next task is task 1 and waits for nothing. */
    assert_int_equal(simpler_cluster_task_query(o, 1, &ti), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_cluster_submit(o, 0, CL_AXPB, &a.args, NULL, &t), 0);
    assert_int_equal(t, 1);
    assert_int_equal(simpler_cluster_task_query(o, 1, &ti), 0);
    assert_int_equal(ti.dependencies, 0);
    /* A buffer overlapping a known one without being it. */
    b = a;
    b.args.tensors = b.tensors;
    b.args.scalars = b.scalars;
    b.tensors[0].addr += 16;
    b.tensors[0].buffer_bytes -= 16;
    b.tensors[0].shape[0] -= 4;
    b.tensors[1] = r->v.v[2].all;
    assert_int_equal(simpler_cluster_submit(o, 0, CL_AXPB, &b.args, NULL, &t),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* The cluster is busy: no second run, no destroy, no registration. */
    assert_int_equal(simpler_cluster_run(r->cluster, orch_refusals, r, NULL),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_cluster_destroy(r->cluster), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_cluster_unregister_callable(r->cluster, CL_AXPB),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    return 0;
}

static void bad_input_is_refused_before_anything_is_submitted(void **state)
{
    (void)state;
    struct simpler_cluster *c = cl_open(4, 2);
    struct refusals r = {.cluster = c};
    cl_vec_init(&r.v.v[0], 1.0f);
    cl_vec_init(&r.v.v[1], 0.0f);
    cl_vec_init(&r.v.v[2], 0.0f);
    struct simpler_cluster_run_info info;
    assert_int_equal(simpler_cluster_run(c, orch_refusals, &r, &info), 0);
    assert_int_equal(info.tasks_submitted, 1);
    assert_int_equal(info.runs_launched, 1);
    cl_assert_axpb(r.v.v[0].data, r.v.v[1].data, CL_N, 2.0f, 1.0f, "the one accepted run");
    /* After the run, its orchestration handle submits nothing. */
    struct cl_axpb a;
    simpler_cluster_task_t t = 0;
    cl_axpb_args(&a, &r.v.v[0].all, &r.v.v[1].all, 2.0f, 1.0f, 0, 0);
    assert_int_equal(simpler_cluster_submit(r.orch_seen, 0, CL_AXPB, &a.args, NULL, &t),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    /* Registration: a bad image, a taken id; unregister of an unknown id. */
    size_t bytes;
    void *image = cl_axpb_image(&bytes);
    assert_int_equal(simpler_cluster_register_callable(c, CL_AXPB, image, bytes),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_cluster_register_callable(c, CL_UNREGISTERED, image, bytes - 8),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_cluster_unregister_callable(c, CL_UNREGISTERED),
                     PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT);
    simpler_callable_free(image);
    assert_int_equal(simpler_cluster_run(c, NULL, NULL, NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < 3; i++)
        cl_vec_free(&r.v.v[i]);
    cl_close(c);
}

static void create_refuses_bad_configs_and_a_taken_device_holding_nothing(void **state)
{
    (void)state;
    struct simpler_cluster_config cfg;
    struct simpler_cluster *c = NULL;
    struct simpler_config ctx = cl_context_config(2);
    simpler_cluster_config_default(&cfg);
    cfg.device_config = &ctx;
    int repeated[2] = {1, 1}, bad[1] = {99};
    cfg.worker_count = 0;
    assert_int_equal(simpler_cluster_create(&cfg, &c), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    cfg.worker_count = SIMPLER_CLUSTER_MAX_WORKERS + 1;
    assert_int_equal(simpler_cluster_create(&cfg, &c), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    cfg.worker_count = 2;
    cfg.device_ids = repeated;
    assert_int_equal(simpler_cluster_create(&cfg, &c), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    cfg.worker_count = 1;
    cfg.device_ids = bad;
    assert_int_equal(simpler_cluster_create(&cfg, &c), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_null(c);
    /* Device 2 is taken by a context of its own: the cluster over 0..3
     * fails at worker 2 and gives back workers 0 and 1. */
    struct simpler_context *owner;
    assert_int_equal(simpler_create_device_context(&owner), 0);
    assert_int_equal(simpler_init(owner, 2, &ctx), 0);
    cfg.device_ids = NULL;
    cfg.worker_count = 4;
    assert_int_equal(simpler_cluster_create(&cfg, &c), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_null(c);
    for (int d = 0; d < 2; d++) {
        struct simdev_mem_info mi;
        assert_int_equal(simdev_mem_get_info(d, &mi), 0);
        assert_int_equal(mi.in_use, 0); /* a worker created before the failure was kept */
    }
    assert_int_equal(simpler_finalize_device(owner), 0);
    assert_int_equal(simpler_destroy_device_context(owner), 0);
    assert_int_equal(simpler_cluster_create(&cfg, &c), 0); /* the retry */
    assert_int_equal(simpler_cluster_worker_count(c), 4);
    cl_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(a_read_on_device_1_waits_for_the_write_on_device_0),
        TEST(a_write_on_device_1_waits_for_a_read_on_device_0),
        TEST(a_second_write_waits_for_the_first_and_lands_last),
        TEST(independent_runs_on_four_devices_run_at_once),
        TEST(tiles_of_one_buffer_order_only_what_they_share),
        TEST(a_group_runs_its_members_on_their_workers_and_its_dependents_wait_for_all),
        TEST(a_failing_run_among_100_fails_its_dependents_only),
        TEST(bad_input_is_refused_before_anything_is_submitted),
        TEST(create_refuses_bad_configs_and_a_taken_device_holding_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
