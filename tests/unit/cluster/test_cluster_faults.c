/*
 * test_cluster_faults.c — every host allocation of a cluster's create,
 * registration and run failed in turn (common/host_alloc.h: the cluster's
 * own and those of the program-mode calls it makes).
 *
 * A clean pass counts the attempts of each phase; then, for every n up to
 * that count, the nth attempt fails and the test requires: the call
 * reports OUT_OF_HOST_MEMORY (a run: as its result), nothing is left held
 * (device memory, prepared calls, unfinalized runs, and no host leak under
 * ASan), a callable is on every worker or on none, and a retry gives the
 * exact result.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "cl_support.h"
#include "cluster/cluster.h"
#include "common/host_alloc.h"

#define TEST(fn) SIMPLER_TEST_WITH(fn, cl_setup, cl_teardown)
#define WORKERS 3

static struct simpler_cluster *create(int *rc)
{
    struct simpler_cluster_config cfg;
    struct simpler_config ctx = cl_context_config(2);
    struct simpler_cluster *c = NULL;
    simpler_cluster_config_default(&cfg);
    cfg.worker_count = WORKERS;
    cfg.device_config = &ctx;
    *rc = simpler_cluster_create(&cfg, &c);
    return c;
}

static uint64_t devices_in_use(void)
{
    uint64_t total = 0;
    for (int d = 0; d < CL_DEVICES; d++) {
        struct simdev_mem_info mi;
        assert_int_equal(simdev_mem_get_info(d, &mi), 0);
        total += mi.in_use;
    }
    return total;
}

static void every_allocation_of_create_fails_in_turn_holding_nothing(void **state)
{
    (void)state;
    int rc;
    uint64_t before = sp_host_alloc_count();
    struct simpler_cluster *c = create(&rc);
    assert_int_equal(rc, 0);
    uint64_t attempts = sp_host_alloc_count() - before;
    cl_close(c);
    assert_true(attempts >= WORKERS + 1); /* fewer: the cluster allocates nothing of its own */
    for (uint64_t n = 1; n <= attempts; n++) {
        sp_host_fault_inject(n);
        c = create(&rc);
        sp_host_fault_inject(0);
        if (rc != PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY)
            fail_msg("attempt %llu: create returned %d, not OUT_OF_HOST_MEMORY",
                     (unsigned long long)n, rc);
        assert_null(c);
        assert_int_equal(devices_in_use(), 0); /* a worker's context was kept */
        c = create(&rc);
        assert_int_equal(rc, 0); /* the retry */
        cl_close(c);
    }
}

/* The callable is registered on no worker context. */
static void assert_on_no_worker(struct simpler_cluster *c, int32_t id)
{
    for (uint32_t i = 0; i < c->worker_count; i++)
        assert_int_equal(simpler_unregister_callable(c->workers[i].ctx, id),
                         PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT); /* 0: left on this worker */
}

struct one_run {
    struct cl_vec x, y, z, w;
    int status;
};

/* y = x*2+1 on worker 0; z = y*3 on worker 1 (RAW); a group of two
 * writing halves of w from z on workers 2 and 0. */
static int orch_small(struct simpler_cluster_orch *o, void *user)
{
    struct one_run *r = user;
    struct cl_axpb a, b, g[2];
    simpler_cluster_task_t t;
    int rc;
    cl_axpb_args(&a, &r->x.all, &r->y.all, 2.0f, 1.0f, 0, 0);
    if ((rc = simpler_cluster_submit(o, 0, CL_AXPB, &a.args, NULL, &t)))
        return rc;
    cl_axpb_args(&b, &r->y.all, &r->z.all, 3.0f, 0.0f, 0, 0);
    if ((rc = simpler_cluster_submit(o, 1, CL_AXPB, &b.args, NULL, &t)))
        return rc;
    struct simpler_tensor zh[2], wh[2];
    struct simpler_cluster_member m[2];
    for (uint32_t h = 0; h < 2; h++) {
        simpler_tensor_slice(&zh[h], &r->z.all, 0, h * (CL_N / 2), (h + 1) * (CL_N / 2), 1);
        simpler_tensor_slice(&wh[h], &r->w.all, 0, h * (CL_N / 2), (h + 1) * (CL_N / 2), 1);
        cl_axpb_args(&g[h], &zh[h], &wh[h], 1.0f, 1.0f, 0, 0);
        m[h] = (struct simpler_cluster_member){.worker = h ? 0 : 2, .args = &g[h].args};
    }
    return simpler_cluster_submit_group(o, CL_AXPB, m, 2, NULL, &t);
}

static void one_run_init(struct one_run *r)
{
    cl_vec_init(&r->x, 1.0f);
    cl_vec_init(&r->y, 0.0f);
    cl_vec_init(&r->z, 0.0f);
    cl_vec_init(&r->w, 0.0f);
}

static void one_run_check(struct one_run *r)
{
    cl_assert_axpb(r->x.data, r->y.data, CL_N, 2.0f, 1.0f, "y");
    cl_assert_axpb(r->y.data, r->z.data, CL_N, 3.0f, 0.0f, "z (reads y)");
    cl_assert_axpb(r->z.data, r->w.data, CL_N, 1.0f, 1.0f, "w (group, reads z)");
}

static void one_run_free(struct one_run *r)
{
    cl_vec_free(&r->x);
    cl_vec_free(&r->y);
    cl_vec_free(&r->z);
    cl_vec_free(&r->w);
}

/* Nothing of a run is left on any worker. */
static void assert_workers_idle(struct simpler_cluster *c, uint64_t in_use)
{
    for (uint32_t i = 0; i < c->worker_count; i++) {
        struct simpler_context_info info;
        assert_int_equal(simpler_get_context_info(c->workers[i].ctx, &info), 0);
        assert_int_equal(info.unfinalized_runs, 0); /* a run was never finalized */
        assert_int_equal(info.prepared_calls, 0);   /* a prepared call was never released */
    }
    assert_int_equal(devices_in_use(), in_use); /* staging or a callable was kept */
}

static void every_allocation_of_register_fails_in_turn_on_every_worker_or_none(void **state)
{
    (void)state;
    int rc;
    struct simpler_cluster *c = create(&rc);
    assert_int_equal(rc, 0);
    size_t bytes;
    void *image = cl_axpb_image(&bytes);
    uint64_t idle = devices_in_use();
    uint64_t before = sp_host_alloc_count();
    assert_int_equal(simpler_cluster_register_callable(c, CL_AXPB, image, bytes), 0);
    uint64_t attempts = sp_host_alloc_count() - before;
    assert_int_equal(simpler_cluster_unregister_callable(c, CL_AXPB), 0);
    for (uint64_t n = 1; n <= attempts; n++) {
        sp_host_fault_inject(n);
        rc = simpler_cluster_register_callable(c, CL_AXPB, image, bytes);
        sp_host_fault_inject(0);
        if (rc != PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY)
            fail_msg("attempt %llu: register returned %d", (unsigned long long)n, rc);
        assert_on_no_worker(c, CL_AXPB);
        assert_int_equal(devices_in_use(), idle);
        assert_int_equal(simpler_cluster_unregister_callable(c, CL_AXPB),
                         PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT); /* half-registered */
        assert_int_equal(simpler_cluster_register_callable(c, CL_AXPB, image, bytes), 0);
        assert_int_equal(simpler_cluster_unregister_callable(c, CL_AXPB), 0);
    }
    simpler_callable_free(image);
    cl_close(c);
}

static void every_allocation_of_a_run_fails_in_turn_and_the_retry_is_exact(void **state)
{
    (void)state;
    int rc;
    struct simpler_cluster *c = create(&rc);
    assert_int_equal(rc, 0);
    cl_register(c);
    uint64_t idle = devices_in_use();
    struct one_run r;
    one_run_init(&r);
    uint64_t before = sp_host_alloc_count();
    assert_int_equal(simpler_cluster_run(c, orch_small, &r, NULL), 0);
    uint64_t attempts = sp_host_alloc_count() - before;
    one_run_check(&r);
    one_run_free(&r);
    assert_true(attempts >= 8); /* fewer: a submit allocated nothing */
    uint64_t refused = 0;
    for (uint64_t n = 1; n <= attempts; n++) {
        one_run_init(&r);
        struct simpler_cluster_run_info info;
        sp_host_fault_inject(n);
        rc = simpler_cluster_run(c, orch_small, &r, &info);
        sp_host_fault_inject(0);
        /* 0 is allowed only when the armed attempt was never made: the
         * threads' allocations may come in another order */
        if (rc != PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY && rc != 0)
            fail_msg("attempt %llu: the run returned %d", (unsigned long long)n, rc);
        refused += rc != 0;
        assert_workers_idle(c, idle);
        one_run_free(&r);
        one_run_init(&r);
        assert_int_equal(simpler_cluster_run(c, orch_small, &r, &info), 0); /* the retry */
        one_run_check(&r);
        assert_int_equal(info.tasks_succeeded, 3); /* how many dependencies were counted
                                                      depends on when y was done */
        one_run_free(&r);
    }
    print_message("%llu allocation attempts in a run, %llu failed it\n",
                  (unsigned long long)attempts, (unsigned long long)refused);
    /* Most attempts are the orchestration thread's, made in order. */
    assert_true(refused * 2 > attempts);
    cl_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(every_allocation_of_create_fails_in_turn_holding_nothing),
        TEST(every_allocation_of_register_fails_in_turn_on_every_worker_or_none),
        TEST(every_allocation_of_a_run_fails_in_turn_and_the_retry_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
