/*
 * test_cluster_mpi.c — a distributed cluster over `mpiexec -n 2`, two
 * devices per rank (docs/cluster.md section 9). Every rank runs the same
 * sequence of cases: rank 0 orchestrates, rank 1 serves. A case's checks
 * run on both ranks; each rank prints "N passed, M failed" and exits 1 on
 * any failure, so CTest fails when either rank does.
 *
 *   test_cluster_mpi          dependencies across ranks (RAW and WAR held
 *                             at a gate on rank 0, RAW the other way with
 *                             the exact bytes moved), a strided read sending
 *                             only its elements, a copy sent once and again
 *                             only once rank 0 rewrote it, a failing run on rank
 *                             1 reaching rank 0 with its code while the
 *                             others finish, bad input refused before
 *                             anything is sent
 *   test_cluster_mpi kill     rank 1 dies (SIGKILL) in its first kernel;
 *                             rank 0's run, destroy and finalize end with
 *                             PEER_LOST within the peer timeout. Run with
 *                             `mpiexec -disable-auto-cleanup` (otherwise
 *                             MPICH kills rank 0 too).
 *   test_cluster_mpi stop     the same with rank 1 stopped (SIGSTOP), alive
 *                             and silent: rank 0 sees the loss by its peer
 *                             timeout, then kills rank 1.
 *   test_cluster_mpi absent   rank 1 never calls create; rank 0's create
 *                             ends with PEER_LOST within its peer timeout.
 *   Both run through run_kill.sh, which judges rank 0's verdict file.
 *
 * Ordering is observed without timing: a kernel held at a gate (on rank 0)
 * keeps its task unfinished while the test looks at the task that must
 * wait for it; values are exact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <mpi.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl_support.h"
#include "simpler/kernel.h"

#define WORKERS_PER_RANK 2
#define FAIL_CODE 321
#define KILL_TIMEOUT_MS 3000
#define CL_DIE 5

static int rank, ranks;
static int passed, failed;

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (cond) {                                                                                \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            fprintf(stderr, "rank %d: FAILED %s (%s:%d): %s\n", rank, #cond, __FILE__, __LINE__, \
                    what);                                                                         \
        }                                                                                          \
    } while (0)
#define CHECK_EQ(got, want, what)                                                                  \
    do {                                                                                           \
        long long g_ = (long long)(got), w_ = (long long)(want);                                   \
        if (g_ == w_) {                                                                            \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            fprintf(stderr, "rank %d: FAILED %s == %lld, got %lld (%s:%d): %s\n", rank, #got, w_, \
                    g_, __FILE__, __LINE__, what);                                                 \
        }                                                                                          \
    } while (0)

static bool same_axpb(const float *in, const float *out, uint32_t n, float mul, float add)
{
    for (uint32_t i = 0; i < n; i++) {
        float want = in[i] * mul + add;
        if (memcmp(&out[i], &want, sizeof want))
            return false;
    }
    return true;
}

static struct simpler_cluster *open_cluster(uint32_t peer_timeout_ms)
{
    struct simpler_cluster_config cfg;
    struct simpler_config ctx = cl_context_config(2);
    struct simpler_cluster *c = NULL;
    simpler_cluster_config_default(&cfg);
    cfg.worker_count = WORKERS_PER_RANK;
    cfg.device_config = &ctx;
    cfg.distributed = 1;
    cfg.peer_timeout_ms = peer_timeout_ms;
    int rc = simpler_cluster_create(&cfg, &c);
    CHECK_EQ(rc, 0, "a distributed create failed");
    if (rc) {
        fprintf(stderr, "rank %d: cannot go on\n", rank);
        exit(1);
    }
    return c;
}

/* Serves one run on rank 1 and checks its result against rank 0's. */
static void serve_one(struct simpler_cluster *c, int want_status, uint64_t want_runs)
{
    struct simpler_cluster_serve_info si;
    CHECK_EQ(simpler_cluster_serve(c, &si), want_status, "the serving rank's result is rank 0's");
    CHECK_EQ(si.runs, want_runs, "requests this rank ran");
}

/* ------------------------------------------------------- placement, RAW */

struct vecs {
    struct cl_vec v[8];
};

static uint32_t state_of(struct simpler_cluster_orch *o, simpler_cluster_task_t t)
{
    struct simpler_cluster_task_info info;
    CHECK_EQ(simpler_cluster_task_query(o, t, &info), 0, "query");
    return info.state;
}

/*
 * Submits `held` (its kernel held at gate 1) on `held_worker` of rank 0,
 * then `later` on `later_worker` of rank 1, and checks that the later
 * task waits (PENDING, `why` naming what else would mean) until the gate
 * opens. Returns the later task.
 */
static simpler_cluster_task_t held_then_later(struct simpler_cluster_orch *o,
                                              uint32_t held_worker, const struct cl_axpb *held,
                                              uint32_t later_worker,
                                              const struct cl_axpb *later, const char *why)
{
    simpler_cluster_task_t th, tl;
    CHECK_EQ(simpler_cluster_submit(o, held_worker, CL_AXPB, &held->args, NULL, &th), 0,
             "submit on rank 0");
    CHECK_EQ(simpler_cluster_submit(o, later_worker, CL_AXPB, &later->args, NULL, &tl), 0,
             "submit on rank 1");
    CHECK(ts_gate_wait_arrivals_for(&cl_gates[0], 1, TS_DEADLOCK_GUARD_MS), "held kernel");
    CHECK_EQ(state_of(o, tl), SIMPLER_CLUSTER_TASK_PENDING, why);
    ts_gate_open(&cl_gates[0]);
    return tl;
}

static int orch_raw(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb a, b;
    cl_axpb_args(&a, &s->v[0].all, &s->v[1].all, 2.0f, 1.0f, 0, 1); /* rank 0: y1 = x*2+1, held */
    cl_axpb_args(&b, &s->v[1].all, &s->v[2].all, 3.0f, 0.0f, 0, 0); /* rank 1: y2 = y1*3 */
    simpler_cluster_task_t tb = held_then_later(
        o, 0, &a, 2, &b, "QUEUED/RUNNING: rank 1 would read y1 before rank 0 wrote it");
    CHECK_EQ(simpler_cluster_wait_task(o, tb), 0, "the read on rank 1");
    return 0;
}

static int orch_war(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb a, b;
    cl_axpb_args(&a, &s->v[0].all, &s->v[1].all, 2.0f, 1.0f, 0, 1); /* rank 0 reads x, held */
    cl_axpb_args(&b, &s->v[2].all, &s->v[0].all, 1.0f, 5.0f, 0, 0); /* rank 1 writes x = z+5 */
    held_then_later(o, 1, &a, 3, &b,
                    "not PENDING: rank 1's write of x could land before rank 0 staged it");
    return 0;
}

static int orch_back(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb a, b;
    simpler_cluster_task_t ta, tb;
    cl_axpb_args(&a, &s->v[0].all, &s->v[1].all, 4.0f, 1.0f, 0, 0); /* rank 1: y1 = x*4+1 */
    cl_axpb_args(&b, &s->v[1].all, &s->v[2].all, 0.5f, 2.0f, 0, 0); /* rank 0: y2 = y1/2+2 */
    CHECK_EQ(simpler_cluster_submit(o, 3, CL_AXPB, &a.args, NULL, &ta), 0, "submit on rank 1");
    CHECK_EQ(simpler_cluster_submit(o, 0, CL_AXPB, &b.args, NULL, &tb), 0, "submit on rank 0");
    return 0;
}

static void vecs_init(struct vecs *s)
{
    cl_vec_init(&s->v[0], 1.0f);
    cl_vec_init(&s->v[1], 0.0f);
    cl_vec_init(&s->v[2], 3.0f);
    cl_vec_poison(&s->v[1]);
}

static void vecs_free(struct vecs *s)
{
    for (int i = 0; i < 3; i++)
        cl_vec_free(&s->v[i]);
}

static void dependencies_across_ranks(struct simpler_cluster *c)
{
    CHECK_EQ(simpler_cluster_worker_count(c), 4, "two ranks of two workers");
    CHECK_EQ(simpler_cluster_worker_rank(c, 1), 0, "rank-major numbering");
    CHECK_EQ(simpler_cluster_worker_rank(c, 2), 1, "rank-major numbering");
    if (rank != 0) {
        serve_one(c, 0, 1); /* RAW */
        serve_one(c, 0, 1); /* WAR */
        serve_one(c, 0, 1); /* RAW back */
        return;
    }
    struct vecs s;
    struct simpler_cluster_run_info info;
    vecs_init(&s);
    cl_vec_poison(&s.v[2]);
    CHECK_EQ(simpler_cluster_run(c, orch_raw, &s, &info), 0, "RAW run");
    CHECK(same_axpb(s.v[0].data, s.v[1].data, CL_N, 2.0f, 1.0f), "y1 written on rank 0");
    CHECK(same_axpb(s.v[1].data, s.v[2].data, CL_N, 3.0f, 0.0f),
          "y2 from rank 1: it read y1 before rank 0 wrote it, or its output was lost");
    CHECK_EQ(info.raw, 1, "the read of y1 found its writer");
    CHECK_EQ(info.remote_runs, 1, "one run on rank 1");
    CHECK_EQ(info.bytes_sent, CL_N * 4, "only y1's bytes travel to rank 1");
    CHECK_EQ(info.bytes_received, CL_N * 4, "only y2's bytes travel back");
    vecs_free(&s);

    vecs_init(&s);
    /* A closed gate again: the RAW run left it open, and the read would
     * not be held (nothing runs on rank 0 between runs). */
    ts_gate_destroy(&cl_gates[0]);
    ts_gate_init(&cl_gates[0]);
    CHECK_EQ(simpler_cluster_run(c, orch_war, &s, &info), 0, "WAR run");
    /* y1 from the old x: rank 0 read x after rank 1 overwrote it */
    for (uint32_t i = 0; i < CL_N; i++)
        if (s.v[1].data[i] != cl_x(i, 1.0f) * 2.0f + 1.0f) {
            CHECK(0, "y1 was computed from the new x: the write did not wait for the read");
            break;
        }
    CHECK(same_axpb(s.v[2].data, s.v[0].data, CL_N, 1.0f, 5.0f), "x rewritten on rank 1");
    CHECK_EQ(info.war, 1, "the write of x found its reader");
    vecs_free(&s);

    vecs_init(&s);
    CHECK_EQ(simpler_cluster_run(c, orch_back, &s, &info), 0, "RAW from rank 1 to rank 0");
    CHECK(same_axpb(s.v[0].data, s.v[1].data, CL_N, 4.0f, 1.0f), "y1 from rank 1");
    CHECK(same_axpb(s.v[1].data, s.v[2].data, CL_N, 0.5f, 2.0f), "y2 read rank 1's y1");
    CHECK_EQ(info.raw, 1, "one RAW");
    vecs_free(&s);
}

/* -------------------------------------------------------------- failure */

#define MANY 24
#define FAILING 10 /* on worker FAILING % 4 = 2: rank 1 */

struct many {
    float x[MANY][64], y[MANY][64], z[64];
    struct simpler_tensor xt[MANY], yt[MANY], zt;
    int32_t dependent_status, unrelated_status;
};

static int orch_many(struct simpler_cluster_orch *o, void *user)
{
    struct many *s = user;
    simpler_cluster_task_t t[MANY], dep, other;
    for (uint32_t i = 0; i < MANY; i++) {
        struct cl_axpb a;
        cl_axpb_args(&a, &s->xt[i], &s->yt[i], 2.0f, (float)i, i == FAILING ? FAIL_CODE : 0, 0);
        CHECK_EQ(simpler_cluster_submit(o, i % 4, CL_AXPB, &a.args, NULL, &t[i]), 0, "submit");
    }
    struct cl_axpb d, u;
    cl_axpb_args(&d, &s->yt[FAILING], &s->zt, 1.0f, 0.0f, 0, 0); /* reads the failed y: rank 0 */
    cl_axpb_args(&u, &s->yt[FAILING + 1], &s->yt[FAILING + 1 - 4], 1.0f, 0.0f, 0, 0);
    CHECK_EQ(simpler_cluster_submit(o, 1, CL_AXPB, &d.args, NULL, &dep), 0, "dependent");
    (void)u;
    (void)other;
    s->dependent_status = simpler_cluster_wait_task(o, dep);
    s->unrelated_status = simpler_cluster_wait_task(o, t[FAILING + 1]);
    return 0;
}

static void a_failing_run_on_rank_1_reaches_rank_0(struct simpler_cluster *c)
{
    if (rank != 0) {
        serve_one(c, -FAIL_CODE, MANY / 4 * 2);
        return;
    }
    struct many *s = calloc(1, sizeof *s);
    uint64_t shape[1] = {64};
    for (uint32_t i = 0; i < MANY; i++) {
        for (uint32_t k = 0; k < 64; k++)
            s->x[i][k] = cl_x(k, (float)i);
        memset(s->y[i], 0xDB, sizeof s->y[i]);
        simpler_tensor_make(&s->xt[i], (uint64_t)(uintptr_t)s->x[i], shape, 1, SIMPLER_DTYPE_F32,
                            SIMPLER_MEM_HOST);
        simpler_tensor_make(&s->yt[i], (uint64_t)(uintptr_t)s->y[i], shape, 1, SIMPLER_DTYPE_F32,
                            SIMPLER_MEM_HOST);
    }
    memset(s->z, 0xDB, sizeof s->z);
    simpler_tensor_make(&s->zt, (uint64_t)(uintptr_t)s->z, shape, 1, SIMPLER_DTYPE_F32,
                        SIMPLER_MEM_HOST);
    struct simpler_cluster_run_info info;
    CHECK_EQ(simpler_cluster_run(c, orch_many, s, &info), -FAIL_CODE,
             "the run's result is the remote kernel's code");
    for (uint32_t i = 0; i < MANY; i++) {
        if (i == FAILING)
            continue;
        if (!same_axpb(s->x[i], s->y[i], 64, 2.0f, (float)i))
            fprintf(stderr, "rank 0: unrelated run %u on worker %u wrong\n", i, i % 4);
        CHECK(same_axpb(s->x[i], s->y[i], 64, 2.0f, (float)i), "an unrelated run's output");
    }
    uint32_t bits;
    memcpy(&bits, &s->y[FAILING][0], sizeof bits);
    CHECK_EQ(bits, CL_POISON_BITS, "the failed run's output was copied back");
    CHECK_EQ(s->dependent_status, PTO_RUNTIME_ERR_DEPENDENCY_FAILED, "its reader is cancelled");
    CHECK_EQ(s->unrelated_status, 0, "an unrelated run on rank 1 was harmed");
    CHECK_EQ(info.tasks_failed, 1, "one failed");
    CHECK_EQ(info.tasks_cancelled, 1, "its dependent cancelled");
    CHECK_EQ(info.tasks_succeeded, MANY - 1, "the rest succeeded");
    CHECK_EQ(info.first_failed_task, FAILING + 1, "the failed task");
    CHECK_EQ(info.remote_runs, MANY / 2, "half the runs on rank 1");
    free(s);
}

/* ------------------------------------------------------------ bad input */

static int orch_bad(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb a;
    simpler_cluster_task_t t = 0;
    cl_axpb_args(&a, &s->v[0].all, &s->v[1].all, 2.0f, 1.0f, 0, 0);
    CHECK_EQ(simpler_cluster_submit(o, 4, CL_AXPB, &a.args, NULL, &t),
             PTO_RUNTIME_ERR_INVALID_ARGUMENT, "a worker outside the cluster");
    CHECK_EQ(simpler_cluster_submit(o, 2, CL_UNREGISTERED, &a.args, NULL, &t),
             PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT, "a callable rank 1 refused");
    CHECK_EQ(t, 0, "a refused submit wrote a handle");
    return 0;
}

static void bad_input_is_refused_before_anything_is_sent(struct simpler_cluster *c)
{
    size_t bytes;
    void *image = cl_axpb_image(&bytes);
    /* Rank 1 refuses the image (a size that does not match it): the
     * registration fails on every rank and the callable is on none. */
    int rc = simpler_cluster_register_callable(c, CL_UNREGISTERED, image,
                                               rank == 0 ? bytes : bytes - 1);
    CHECK_EQ(rc, PTO_RUNTIME_ERR_INVALID_ARGUMENT, "every rank returns rank 1's refusal");
    /* Different ids on the two ranks: refused on both. */
    rc = simpler_cluster_register_callable(c, rank == 0 ? CL_UNREGISTERED : CL_UNREGISTERED + 1,
                                           image, bytes);
    CHECK_EQ(rc, PTO_RUNTIME_ERR_INVALID_ARGUMENT, "ranks naming different ids");
    simpler_callable_free(image);
    if (rank != 0) {
        serve_one(c, 0, 0); /* 0 runs: nothing was sent */
        return;
    }
    struct vecs s;
    vecs_init(&s);
    struct simpler_cluster_run_info info;
    CHECK_EQ(simpler_cluster_run(c, orch_bad, &s, &info), 0, "nothing submitted, nothing failed");
    CHECK_EQ(info.tasks_submitted, 0, "a refused submit made a task");
    CHECK_EQ(info.bytes_sent, 0, "bytes went to rank 1");
    vecs_free(&s);
}

/* ---------------------------------------------- strided reads travel packed */

#define STRIDE 4

static int orch_strided(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct simpler_tensor every_4th, head;
    struct cl_axpb a;
    simpler_cluster_task_t t;
    CHECK_EQ(simpler_tensor_slice(&every_4th, &s->v[0].all, 0, 0, CL_N, STRIDE), 0, "x[::4]");
    CHECK_EQ(simpler_tensor_slice(&head, &s->v[1].all, 0, 0, CL_N / STRIDE, 1), 0, "y[:64]");
    cl_axpb_args(&a, &every_4th, &head, 2.0f, 1.0f, 0, 0);
    CHECK_EQ(simpler_cluster_submit(o, 2, CL_AXPB, &a.args, NULL, &t), 0, "submit on rank 1");
    return 0;
}

/* A read of every 4th element of x on rank 1: its elements travel packed
 * (64 floats), not the span from the first to the last (253 floats). */
static void strided_reads_send_only_their_elements(struct simpler_cluster *c)
{
    if (rank != 0) {
        serve_one(c, 0, 1);
        return;
    }
    struct vecs s;
    struct simpler_cluster_run_info info;
    vecs_init(&s);
    CHECK_EQ(simpler_cluster_run(c, orch_strided, &s, &info), 0, "strided run");
    int exact = 1;
    for (uint32_t i = 0; i < CL_N / STRIDE; i++)
        exact &= s.v[1].data[i] == cl_x(i * STRIDE, 1.0f) * 2.0f + 1.0f;
    CHECK(exact, "y[i] = x[4i]*2+1: the packed elements landed at the wrong places");
    uint32_t bits;
    int untouched = 1;
    for (uint32_t i = CL_N / STRIDE; i < CL_N; i++) {
        memcpy(&bits, &s.v[1].data[i], sizeof bits);
        untouched &= bits == CL_POISON_BITS;
    }
    CHECK(untouched, "y past the view written: more than the view came back");
    CHECK_EQ(info.remote_runs, 1, "one run on rank 1");
    CHECK_EQ(info.bytes_sent, CL_N / STRIDE * 4, "only x's 64 read elements travel");
    CHECK_EQ(info.bytes_received, CL_N / STRIDE * 4, "only y's 64 written elements travel back");
    vecs_free(&s);
}

/* Rank 0 of a case that ends without MPI_Finalize (run_kill.sh): prints
 * and writes its verdict to $CL_KILL_VERDICT, then exits at once. */
_Noreturn static void verdict_exit(void)
{
    printf("rank 0: %d passed, %d failed\n", passed, failed);
    fflush(stdout);
    const char *verdict = getenv("CL_KILL_VERDICT");
    FILE *f = verdict ? fopen(verdict, "w") : NULL;
    if (f) {
        fprintf(f, "rank 0: %d passed, %d failed\n", passed, failed);
        fclose(f);
    }
    _exit(failed ? 1 : 0);
}

/* --------------------------------------------------------- valid copies */

/*
 * On rank 1: a and b read x (x travels once), c reads y1, which a wrote
 * there (nothing travels); on rank 0, d rewrites x; on rank 1, e reads the
 * new x (it travels again: rank 1's copy went stale). Without the
 * directory 4 KiB would go out, not 2.
 */
static int orch_copies(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb a, b, c, d, e;
    simpler_cluster_task_t t;
    cl_axpb_args(&a, &s->v[0].all, &s->v[1].all, 2.0f, 1.0f, 0, 0); /* y1 = x*2+1 */
    cl_axpb_args(&b, &s->v[0].all, &s->v[2].all, 3.0f, 0.0f, 0, 0); /* y2 = x*3 */
    cl_axpb_args(&c, &s->v[1].all, &s->v[3].all, 0.5f, 0.0f, 0, 0); /* y3 = y1/2 */
    cl_axpb_args(&d, &s->v[2].all, &s->v[0].all, 1.0f, 5.0f, 0, 0); /* x = y2+5 */
    cl_axpb_args(&e, &s->v[0].all, &s->v[4].all, 1.0f, 0.0f, 0, 0); /* y4 = x */
    CHECK_EQ(simpler_cluster_submit(o, 2, CL_AXPB, &a.args, NULL, &t), 0, "a on rank 1");
    CHECK_EQ(simpler_cluster_submit(o, 3, CL_AXPB, &b.args, NULL, &t), 0, "b on rank 1");
    CHECK_EQ(simpler_cluster_submit(o, 2, CL_AXPB, &c.args, NULL, &t), 0, "c on rank 1");
    CHECK_EQ(simpler_cluster_submit(o, 0, CL_AXPB, &d.args, NULL, &t), 0, "d on rank 0");
    CHECK_EQ(simpler_cluster_submit(o, 3, CL_AXPB, &e.args, NULL, &t), 0, "e on rank 1");
    return 0;
}

static void a_copy_travels_once_until_it_is_written(struct simpler_cluster *c)
{
    if (rank != 0) {
        serve_one(c, 0, 4);
        return;
    }
    struct vecs s;
    struct simpler_cluster_run_info info;
    vecs_init(&s);
    cl_vec_init(&s.v[3], 0.0f);
    cl_vec_init(&s.v[4], 0.0f);
    cl_vec_poison(&s.v[3]);
    cl_vec_poison(&s.v[4]);
    CHECK_EQ(simpler_cluster_run(c, orch_copies, &s, &info), 0, "the run");
    int exact = 1;
    for (uint32_t i = 0; i < CL_N; i++) {
        float x = cl_x(i, 1.0f);
        exact &= s.v[1].data[i] == x * 2.0f + 1.0f && s.v[2].data[i] == x * 3.0f;
    }
    CHECK(exact, "y1 and y2 from the first x");
    CHECK(same_axpb(s.v[1].data, s.v[3].data, CL_N, 0.5f, 0.0f),
          "y3 from y1 as rank 1 wrote it (its copy there was stale or lost)");
    CHECK(same_axpb(s.v[2].data, s.v[0].data, CL_N, 1.0f, 5.0f), "x rewritten on rank 0");
    CHECK(same_axpb(s.v[0].data, s.v[4].data, CL_N, 1.0f, 0.0f),
          "y4 from the new x: rank 1 used its stale copy of the old one");
    CHECK_EQ(info.remote_runs, 4, "a, b, c and e on rank 1");
    CHECK_EQ(info.bytes_sent, 2 * CL_N * 4, "x twice (before and after d), y1 never");
    CHECK_EQ(info.bytes_received, 4 * CL_N * 4, "the four outputs");
    vecs_free(&s);
    cl_vec_free(&s.v[3]);
    cl_vec_free(&s.v[4]);
}

/*
 * A copy made stale by a write whose task was submitted before the copy
 * was sent: A (rank 1) reads x but waits for G (held at a gate on rank
 * 0); W (rank 0) rewrites x after A (WAR) and is submitted before A is
 * sent; B (rank 1) reads the new x. x reaches rank 1 with A, after W's
 * submit: only W's end may make that copy stale, or B reads the old x.
 */
static int orch_stale_after_submit(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb g, w, b;
    struct cl_fma a;
    simpler_cluster_task_t t;
    cl_axpb_args(&g, &s->v[5].all, &s->v[1].all, 1.0f, 0.0f, 0, 1); /* y1 = v5, held */
    cl_fma_args(&a, &s->v[0].all, &s->v[1].all, 2.0f, 0);            /* y1 = y1*2 + x */
    cl_axpb_args(&w, &s->v[2].all, &s->v[0].all, 1.0f, 5.0f, 0, 0);  /* x = y2+5 */
    cl_axpb_args(&b, &s->v[0].all, &s->v[4].all, 1.0f, 0.0f, 0, 0);  /* y4 = x */
    CHECK_EQ(simpler_cluster_submit(o, 0, CL_AXPB, &g.args, NULL, &t), 0, "G on rank 0");
    CHECK_EQ(simpler_cluster_submit(o, 2, CL_FMA, &a.args, NULL, &t), 0, "A on rank 1");
    CHECK_EQ(simpler_cluster_submit(o, 1, CL_AXPB, &w.args, NULL, &t), 0, "W on rank 0");
    CHECK_EQ(simpler_cluster_submit(o, 3, CL_AXPB, &b.args, NULL, &t), 0, "B on rank 1");
    CHECK(ts_gate_wait_arrivals_for(&cl_gates[0], 1, TS_DEADLOCK_GUARD_MS), "G held");
    ts_gate_open(&cl_gates[0]); /* A is sent only now, after W's submit */
    return 0;
}

static void a_copy_is_stale_once_a_write_ends(struct simpler_cluster *c)
{
    if (rank != 0) {
        serve_one(c, 0, 2);
        return;
    }
    struct vecs s;
    struct simpler_cluster_run_info info;
    vecs_init(&s);
    cl_vec_init(&s.v[4], 0.0f);
    cl_vec_init(&s.v[5], 7.0f);
    cl_vec_poison(&s.v[4]);
    ts_gate_destroy(&cl_gates[0]);
    ts_gate_init(&cl_gates[0]);
    CHECK_EQ(simpler_cluster_run(c, orch_stale_after_submit, &s, &info), 0, "the run");
    int exact = 1;
    for (uint32_t i = 0; i < CL_N; i++)
        exact &= s.v[1].data[i] == cl_x(i, 7.0f) * 2.0f + cl_x(i, 1.0f);
    CHECK(exact, "A: y1 = v5*2 + the first x");
    CHECK(same_axpb(s.v[2].data, s.v[0].data, CL_N, 1.0f, 5.0f), "W rewrote x");
    CHECK(same_axpb(s.v[0].data, s.v[4].data, CL_N, 1.0f, 0.0f),
          "B from the new x: rank 1 read its copy of the old one, sent after W's submit");
    CHECK_EQ(info.remote_runs, 2, "A and B on rank 1");
    CHECK_EQ(info.bytes_sent, 3 * CL_N * 4, "x and y1 for A, the new x for B");
    vecs_free(&s);
    cl_vec_free(&s.v[4]);
    cl_vec_free(&s.v[5]);
}

/* ------------------------------------------------------------ kill rank */

void mpi_kernel_die(int64_t *args);
void mpi_kernel_die(int64_t *args)
{
    (void)args;
    raise(SIGKILL); /* the rank dies in the middle of a run */
}

void mpi_kernel_stop(int64_t *args);
void mpi_kernel_stop(int64_t *args)
{
    (void)args;
    raise(SIGSTOP); /* the rank stops answering, alive, until rank 0 kills it */
}

static void *die_image(const char *kernel, size_t *bytes)
{
    const enum simpler_direction sig[6] = {SIMPLER_DIR_IN, SIMPLER_DIR_OUT, SIMPLER_DIR_SCALAR,
                                           SIMPLER_DIR_SCALAR, SIMPLER_DIR_SCALAR,
                                           SIMPLER_DIR_SCALAR};
    struct simpler_callable_builder *b;
    void *image = NULL;
    simpler_callable_builder_create(&b);
    simpler_callable_builder_set_orchestration(b, SIMPLER_BINARY_SYMBOL, NULL, 0, "cl_orch_axpb",
                                               NULL, sig, 6);
    simpler_callable_builder_add_kernel(b, 0, SIMPLER_CORE_AIV, SIMPLER_BINARY_SYMBOL, NULL, 0,
                                        kernel, sig, 2);
    simpler_callable_builder_finish(b, &image, bytes);
    simpler_callable_builder_destroy(b);
    return image;
}

/* Whether no element of v was written since cl_vec_poison. */
static int still_poison(const float *v)
{
    for (uint32_t i = 0; i < CL_N; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        if (bits != CL_POISON_BITS)
            return 0;
    }
    return 1;
}

static int orch_kill(struct simpler_cluster_orch *o, void *user)
{
    struct vecs *s = user;
    struct cl_axpb a, b, d;
    simpler_cluster_task_t t;
    cl_axpb_args(&a, &s->v[0].all, &s->v[1].all, 2.0f, 1.0f, 0, 0);
    cl_axpb_args(&b, &s->v[0].all, &s->v[2].all, 3.0f, 0.0f, 0, 0);
    /* d reads what the killing run writes, so it waits for it and is
     * cancelled: a run of rank 1 independent of it could finish there
     * before the kernel kills the rank, and the counts would race. */
    cl_axpb_args(&d, &s->v[1].all, &s->v[3].all, 1.0f, 0.0f, 0, 0);
    CHECK_EQ(simpler_cluster_submit(o, 2, CL_DIE, &a.args, NULL, &t), 0, "the run that kills");
    CHECK_EQ(simpler_cluster_submit(o, 0, CL_AXPB, &b.args, NULL, &t), 0, "unrelated, rank 0");
    CHECK_EQ(simpler_cluster_submit(o, 3, CL_AXPB, &d.args, NULL, &t), 0, "after it, rank 1");
    return 0;
}

/* kill: rank 1 dies (SIGKILL) in the kernel. stop: it stops (SIGSTOP),
 * alive and silent, and rank 0 kills it once it has seen the loss. */
static int kill_case(bool stop)
{
    int peer_pid = 0;
    if (stop) {
        /* rank 1's pid, for the SIGKILL that ends the stopped process */
        int pid = (int)getpid();
        if (rank != 0)
            MPI_Send(&pid, 1, MPI_INT, 0, 78, MPI_COMM_WORLD);
        else
            MPI_Recv(&peer_pid, 1, MPI_INT, 1, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    struct simpler_cluster *c = open_cluster(KILL_TIMEOUT_MS);
    size_t bytes;
    cl_register(c);
    void *image = die_image(stop ? "mpi_kernel_stop" : "mpi_kernel_die", &bytes);
    CHECK_EQ(simpler_cluster_register_callable(c, CL_DIE, image, bytes), 0, "register");
    simpler_callable_free(image);
    if (rank != 0) {
        simpler_cluster_serve(c, NULL); /* dies inside */
        fprintf(stderr, "rank %d: still alive after the killing kernel\n", rank);
        return 1;
    }
    struct vecs s;
    vecs_init(&s);
    cl_vec_init(&s.v[3], 0.0f);
    cl_vec_poison(&s.v[2]);
    cl_vec_poison(&s.v[3]);
    struct simpler_cluster_run_info info;
    CHECK_EQ(simpler_cluster_run(c, orch_kill, &s, &info), PTO_RUNTIME_ERR_PEER_LOST,
             "the run ends with the loss of rank 1, not a hang");
    CHECK(same_axpb(s.v[0].data, s.v[2].data, CL_N, 3.0f, 0.0f), "the unrelated run on rank 0");
    CHECK_EQ(info.tasks_succeeded, 1, "the unrelated run");
    CHECK_EQ(info.tasks_failed, 1, "the run on the lost rank failed");
    CHECK_EQ(info.tasks_cancelled, 1, "its reader was cancelled, never sent");
    CHECK_EQ(info.first_failed_status, PTO_RUNTIME_ERR_PEER_LOST, "with the loss as its status");
    CHECK(still_poison(s.v[1].data) && still_poison(s.v[3].data),
          "nothing came back from the lost rank");
    CHECK_EQ(simpler_cluster_destroy(c), PTO_RUNTIME_ERR_PEER_LOST,
             "destroy's barrier cannot meet rank 1");
    CHECK_EQ(simpler_cluster_mpi_finalize(), PTO_RUNTIME_ERR_PEER_LOST,
             "MPI_Finalize would wait for the dead rank");
    if (stop)
        CHECK_EQ(kill((pid_t)peer_pid, SIGKILL), 0, "rank 1 ended: it was still there, stopped");
    vecs_free(&s);
    cl_vec_free(&s.v[3]);
    verdict_exit(); /* the dead rank would make MPI's own exit wait */
}

/* ---------------------------------------------------------- absent rank */

/* Rank 1 is alive but never calls create: rank 0's create ends with
 * PEER_LOST after its peer timeout instead of waiting for ever, holding
 * no device (a local cluster opens the same devices at once after). Then
 * rank 0 lets rank 1 go (a message on MPI_COMM_WORLD, where rank 1 waits)
 * and both exit without finalizing: the duplication left pending would
 * make MPI_Finalize wait for rank 1's part. Run through run_kill.sh. */
static int absent_case(void)
{
    if (rank != 0) {
        int go = 0;
        MPI_Recv(&go, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fflush(stdout);
        _exit(go == 1 ? 0 : 1);
    }
    struct simpler_cluster_config cfg;
    struct simpler_config ctx = cl_context_config(2);
    struct simpler_cluster *c = NULL;
    simpler_cluster_config_default(&cfg);
    cfg.worker_count = WORKERS_PER_RANK;
    cfg.device_config = &ctx;
    cfg.distributed = 1;
    cfg.peer_timeout_ms = 1000;
    CHECK_EQ(simpler_cluster_create(&cfg, &c), PTO_RUNTIME_ERR_PEER_LOST,
             "a create that rank 1 never joins ends with the loss, not a hang");
    CHECK(c == NULL, "nothing is returned");
    cfg.distributed = 0;
    CHECK_EQ(simpler_cluster_create(&cfg, &c), 0,
             "a local cluster on the same devices: the failed create left one open");
    CHECK_EQ(simpler_cluster_destroy(c), 0, "its destroy");
    CHECK_EQ(simpler_cluster_mpi_finalize(), PTO_RUNTIME_ERR_PEER_LOST,
             "finalize refuses: MPI_Finalize would wait for the pending duplication");
    int go = 1;
    MPI_Send(&go, 1, MPI_INT, 1, 77, MPI_COMM_WORLD);
    verdict_exit();
}

int main(int argc, char **argv)
{
    int rc = simpler_cluster_mpi_init(&argc, &argv, &rank, &ranks);
    if (rc) {
        fprintf(stderr, "simpler_cluster_mpi_init: %s\n", simpler_strerror(rc));
        return 1;
    }
    if (ranks != 2) {
        fprintf(stderr, "run with mpiexec -n 2\n");
        return 1;
    }
    cl_setup(NULL);
    if (argc > 1 && strcmp(argv[1], "kill") == 0)
        return kill_case(false);
    if (argc > 1 && strcmp(argv[1], "stop") == 0)
        return kill_case(true);
    if (argc > 1 && strcmp(argv[1], "absent") == 0)
        return absent_case();

    struct simpler_cluster *c = open_cluster(0);
    cl_register(c);
    dependencies_across_ranks(c);
    strided_reads_send_only_their_elements(c);
    a_copy_travels_once_until_it_is_written(c);
    a_copy_is_stale_once_a_write_ends(c);
    a_failing_run_on_rank_1_reaches_rank_0(c);
    bad_input_is_refused_before_anything_is_sent(c);
    CHECK_EQ(simpler_cluster_destroy(c), 0, "a collective destroy");
    cl_teardown(NULL); /* asserts no device memory is left */
    CHECK_EQ(simpler_cluster_mpi_finalize(), 0, "finalize");
    printf("rank %d: %d passed, %d failed\n", rank, passed, failed);
    return failed ? 1 : 0;
}
