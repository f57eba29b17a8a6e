/*
 * test_rings.c — the rings and scopes of the device runtime, seen through
 * whole runs.
 *
 * Owns: back-pressure (a long program in a tiny task window and heap
 * completes with exact results while the orchestrator waits for space),
 * slot recycling, the waits that can never end (a scope larger than the
 * window, a window, heap or dependency pool pinned by an open scope, a
 * request larger than the heap or the pool) failing at once with their own
 * code and leaving the harness usable, scope misuse, tensors used after
 * their scope ended, and where the rings and the rest lie in a run's arena
 * (the round words; what an HBG arena leaves out). The behaviour of single
 * orchestration calls is test_orchestration.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "rt_support.h"
#include "simpler/simdev_fault.h"
#include "launch/launch.h"
#include "platform/platform.h"
#include "runtime/core_regs.h" /* the launch protocol (late cores) */
#include "runtime/entries.h"
#include "runtime/hbg.h"
#include "runtime/layout.h"
#include "runtime/payload.h"
#include "runtime/ready_queue.h"
#include "runtime/rendezvous.h"
#include "runtime/ring.h"
#include "runtime/run.h" /* the run header (queue reuse) */
#include "runtime/step_token.h"
#include "runtime/task.h"
#include "test_support.h"

#define CHAIN_ELEMS 256 /* i32 elements of every chain output: 1 KiB of heap */

/* ---------------------------------------------------------------- kernels */

enum {
    K_SEED, K_ADD, K_SUM, K_COUNT, K_FILL, K_GATED_FILL, K_GATED_COPY, K_GATED2_FILL,
    K_HELD_COUNT, K_HELD_ADD, K_KERNELS
};

/* t0 counter (i64, INOUT), t1 out (i32); scalar s: out[k] = s + k. */
static void kernel_seed(int64_t *args)
{
    int64_t *counter = simpler_kernel_data(args, 0);
    int32_t *out = simpler_kernel_data(args, 1);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 1));
    int32_t s = (int32_t)simpler_kernel_scalar_u64(args, 2);
    for (uint64_t k = 0; k < n; k++)
        out[k] = s + (int32_t)k;
    (*counter)++;
}

/* t0 counter, t1 in (i32), t2 out (i32); scalar s: out[k] = in[k] + s. */
static void kernel_add(int64_t *args)
{
    int64_t *counter = simpler_kernel_data(args, 0);
    const int32_t *in = simpler_kernel_data(args, 1);
    int32_t *out = simpler_kernel_data(args, 2);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 2));
    int32_t s = (int32_t)simpler_kernel_scalar_u64(args, 3);
    for (uint64_t k = 0; k < n; k++)
        out[k] = in[k] + s;
    (*counter)++;
}

/* t0 counter, t1 in (i32), t2 out (one i64): out = sum of in. */
static void kernel_sum(int64_t *args)
{
    int64_t *counter = simpler_kernel_data(args, 0);
    const int32_t *in = simpler_kernel_data(args, 1);
    int64_t *out = simpler_kernel_data(args, 2);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 1));
    int64_t sum = 0;
    for (uint64_t k = 0; k < n; k++)
        sum += in[k];
    out[0] = sum;
    (*counter)++;
}

/* Held until the orchestration opens it: keeps producers PENDING. */
static struct ts_gate g_gate;

static void kernel_gated_fill(int64_t *args)
{
    ts_gate_pass(&g_gate);
    tk_fill_i32(args);
}

/* t0 in (i32), t1 out (i32): out = in, held at the gate first. */
static void kernel_gated_copy(int64_t *args)
{
    ts_gate_pass(&g_gate);
    tk_copy_i32(args);
}

/* A second gate, for a producer released before its gated reader. */
static struct ts_gate g_gate2;

static void kernel_gated2_fill(int64_t *args)
{
    ts_gate_pass(&g_gate2);
    tk_fill_i32(args);
}

/*
 * A task (K_HELD_COUNT, K_HELD_ADD) held until the orchestrator is blocked
 * at a chosen point: until the orchestration has published `held_after`
 * submits in g_held.seen and then the run header (the arena's start) shows
 * the orchestrator waiting. Nothing but this task's end can end that wait, so the test gets
 * the wait it means whatever the threads' speeds. Bounded by the deadlock
 * guard: a runtime that never waits there lets the kernel go and the test
 * fails on its counts, not by hanging.
 */
static struct {
    const struct rt_run *run; /* the harness's arena */
    uint64_t held_after;
    atomic_uint_fast64_t seen; /* the orchestration's submits so far, release */
    atomic_int waited;         /* 1: the kernel saw the orchestrator waiting */
} g_held;

static bool held_seen(void *arg)
{
    (void)arg;
    return atomic_load_explicit(&g_held.seen, memory_order_acquire) >= g_held.held_after;
}

static bool orchestrator_waits(void *arg)
{
    (void)arg;
    return atomic_load_explicit(&g_held.run->orch_waiting, memory_order_acquire) != 0;
}

/* Holds the calling kernel as g_held says (above). */
static void held_wait(void)
{
    if (ts_poll_until(held_seen, NULL) && ts_poll_until(orchestrator_waits, NULL))
        atomic_store(&g_held.waited, 1);
}

static void kernel_held_count(int64_t *args)
{
    held_wait();
    tk_count_i64(args);
}

static void kernel_held_add(int64_t *args)
{
    held_wait();
    kernel_add(args);
}

/* Arms the hold for a run on `h`: K_HELD_COUNT lets go once the
 * orchestration has published `held_after` submits and the orchestrator
 * waits. */
static void held_reset(const struct rt_harness *h, uint64_t held_after)
{
    g_held.run = h->arena;
    g_held.held_after = held_after;
    atomic_store(&g_held.seen, 0);
    atomic_store(&g_held.waited, 0);
}

static const simpler_kernel_fn g_kernels[K_KERNELS] = {
    kernel_seed, kernel_add,        kernel_sum,        tk_count_i64,
    tk_fill_i32, kernel_gated_fill, kernel_gated_copy, kernel_gated2_fill,
    kernel_held_count, kernel_held_add,
};

/* ------------------------------------------------------- task builders */

static int seed_task(struct simpler_orch *rt, const struct simpler_tensor *counter,
                     uint64_t elems, int32_t s, struct simpler_task_result *out)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, counter);
    simpler_task_args_add_output(&ta, &elems, 1, SIMPLER_DTYPE_I32, 0);
    simpler_task_args_add_scalar(&ta, (uint64_t)(uint32_t)s);
    return simpler_submit_aiv(rt, K_SEED, &ta, out);
}

/* The first add of chain_program's first inner scope is K_HELD_ADD while
 * this is set (the tiny-rings test; held_reset arms the hold). */
static bool g_chain_hold_first;

static int add_task_of(struct simpler_orch *rt, int32_t func, const struct simpler_tensor *counter,
                       const struct simpler_tensor *in, int32_t s, struct simpler_task_result *out)
{
    uint64_t elems = CHAIN_ELEMS;
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, counter);
    simpler_task_args_add_input(&ta, in);
    simpler_task_args_add_output(&ta, &elems, 1, SIMPLER_DTYPE_I32, 0);
    simpler_task_args_add_scalar(&ta, (uint64_t)(uint32_t)s);
    return simpler_submit_aiv(rt, func, &ta, out);
}

static int add_task(struct simpler_orch *rt, const struct simpler_tensor *counter,
                    const struct simpler_tensor *in, int32_t s, struct simpler_task_result *out)
{
    return add_task_of(rt, K_ADD, counter, in, s, out);
}

static int sum_task(struct simpler_orch *rt, const struct simpler_tensor *counter,
                    const struct simpler_tensor *in, const struct simpler_tensor *dst)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, counter);
    simpler_task_args_add_input(&ta, in);
    simpler_task_args_add_output_existing(&ta, dst);
    return simpler_submit_aiv(rt, K_SUM, &ta, &r);
}

static int count_task(struct simpler_orch *rt, const struct simpler_tensor *counter)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, counter);
    return simpler_submit_aiv(rt, K_COUNT, &ta, &r);
}

/* A count task of kernel `func` (K_COUNT or K_HELD_COUNT); its id (0 when
 * the submit failed: the test then fails on its counts). */
static uint64_t count_task_of(struct simpler_orch *rt, const struct simpler_tensor *counter,
                              int32_t func)
{
    struct simpler_task_args ta;
    struct simpler_task_result r = {0};
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, counter);
    simpler_submit_aiv(rt, func, &ta, &r);
    return r.task_id;
}

static int fill_task(struct simpler_orch *rt, int32_t func, uint64_t elems, int32_t s,
                     struct simpler_task_result *out)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output(&ta, &elems, 1, SIMPLER_DTYPE_I32, 0);
    simpler_task_args_add_scalar(&ta, (uint64_t)(uint32_t)s);
    return simpler_submit_aiv(rt, func, &ta, out);
}

/* ------------------------------------------------------- the chain program */

/*
 * outer (scalar 0) scopes at depth 1 (ring 1), each holding one seed task
 * and inner (scalar 1) scopes at depth 2 (ring 2) of four tasks:
 *   seed: a = o + k                      (depth 1, 1 KiB output)
 *   b = a + 10000 (j + 1); c = b + 1; d = c + 1   (1 KiB outputs each)
 *   results[o * inner + j] = sum(d)
 * Every task also increments the counter through INOUT, so the counter
 * ends at outer * (1 + 4 inner) exactly when every task ran once.
 */
static void chain_program(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *counter = &args->tensors[0];
    const struct simpler_tensor *results = &args->tensors[1];
    uint64_t outer = args->scalars[0], inner = args->scalars[1];
    static struct simpler_task_result seed, a, b, c; /* orchestrator thread only */
    for (uint64_t o = 0; o < outer; o++) {
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        seed_task(rt, counter, CHAIN_ELEMS, (int32_t)o, &seed);
        for (uint64_t j = 0; j < inner; j++) {
            simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
            bool held = g_chain_hold_first && o == 0 && j == 0;
            add_task_of(rt, held ? K_HELD_ADD : K_ADD, counter, &seed.outputs[0],
                        (int32_t)(10000 * (j + 1)), &a);
            add_task(rt, counter, &a.outputs[0], 1, &b);
            add_task(rt, counter, &b.outputs[0], 1, &c);
            struct simpler_tensor dst;
            uint64_t at = o * inner + j;
            simpler_tensor_slice(&dst, results, 0, at, at + 1, 1);
            sum_task(rt, counter, &c.outputs[0], &dst);
            simpler_scope_end(rt);
        }
        simpler_scope_end(rt);
    }
}

static int64_t chain_expect(uint64_t o, uint64_t j)
{
    /* d[k] = o + k + 10000 (j + 1) + 2, summed over k < 256 (sum of k = 32640) */
    return CHAIN_ELEMS * ((int64_t)o + 10000 * ((int64_t)j + 1) + 2) + 32640;
}

struct chain {
    int64_t *counter;
    int64_t *results;
    uint64_t outer, inner;
    struct simpler_orch_args args;
};

static uint64_t chain_tasks(const struct chain *c)
{
    return c->outer * (1 + 4 * c->inner);
}

static void chain_open(struct chain *c, uint64_t outer, uint64_t inner)
{
    c->outer = outer;
    c->inner = inner;
    c->counter = ts_dev_alloc(sizeof(int64_t));
    c->results = ts_dev_alloc(outer * inner * sizeof(int64_t));
    memset(&c->args, 0, sizeof c->args);
    c->args.tensor_count = 2;
    c->args.tensors[0] = ts_dev_tensor_1d(c->counter, 1, SIMPLER_DTYPE_I64);
    c->args.tensors[1] = ts_dev_tensor_1d(c->results, outer * inner, SIMPLER_DTYPE_I64);
    c->args.scalar_count = 2;
    c->args.scalars[0] = outer;
    c->args.scalars[1] = inner;
}

/* Zeroes the counter and poisons the results (-1 is no chain's sum). */
static void chain_reset(struct chain *c)
{
    int64_t zero = 0;
    ts_to_dev(c->counter, &zero, sizeof zero);
    size_t n = c->outer * c->inner;
    int64_t *host = malloc(n * sizeof *host);
    assert_non_null(host);
    memset(host, 0xff, n * sizeof *host);
    ts_to_dev(c->results, host, n * sizeof *host);
    free(host);
}

static void chain_check(const struct chain *c)
{
    int64_t counter;
    ts_from_dev(&counter, c->counter, sizeof counter);
    /* less: tasks were lost; more: a task ran twice (a recycled slot re-run) */
    assert_int_equal(counter, (int64_t)chain_tasks(c));
    size_t n = c->outer * c->inner;
    int64_t *host = malloc(n * sizeof *host);
    assert_non_null(host);
    ts_from_dev(host, c->results, n * sizeof *host);
    for (uint64_t o = 0; o < c->outer; o++)
        for (uint64_t j = 0; j < c->inner; j++)
            if (host[o * c->inner + j] != chain_expect(o, j))
                fail_msg("results[%llu] = %lld, expected %lld (a chain read a heap buffer "
                         "that was recycled under it, or a task ran before its producer)",
                         (unsigned long long)(o * c->inner + j),
                         (long long)host[o * c->inner + j], (long long)chain_expect(o, j));
    free(host);
}

static void chain_close(struct chain *c)
{
    assert_int_equal(simdev_free(c->counter), 0);
    assert_int_equal(simdev_free(c->results), 0);
}

/* The tiny rings: window 4 and a 64 KiB heap on every ring. */
static struct rt_config tiny_config(void)
{
    struct rt_config c = rth_small_config();
    for (int i = 0; i < RT_RINGS; i++) {
        c.task_window[i] = 4;
        c.heap_bytes[i] = 65536;
    }
    return c;
}

/* A clean run of a short chain on `h`: the harness is still usable. */
static void expect_good_run(struct rt_harness *h)
{
    struct chain c;
    chain_open(&c, 2, 3);
    chain_reset(&c);
    assert_int_equal(rth_run(h, chain_program, g_kernels, K_KERNELS, &c.args), 0);
    assert_int_equal(h->result.status, 0);
    /* 26 each: fewer means state of the failed run leaked into this one */
    assert_int_equal(h->result.tasks_submitted, chain_tasks(&c));
    assert_int_equal(h->result.tasks_completed, chain_tasks(&c));
    chain_check(&c);
    chain_close(&c);
}

/* ------------------------------------------------- back-pressure, recycling */

static void tiny_rings_run_100000_tasks_in_nested_scopes_with_exact_results(void **state)
{
    (void)state;
    struct rt_config config = tiny_config();
    struct rt_harness h;
    rth_open(&h, &config, 0);
    struct chain c;
    chain_open(&c, 4000, 6); /* 4000 x (1 + 4 x 6) = 100000 tasks */
    chain_reset(&c);
    /* The first inner scope's first add is held until the orchestrator
     * waits: its three successors fill ring 2's window of 4 behind it, so
     * the next inner scope's first submit waits whatever the threads'
     * speeds (about 40,000 more waits come as they may). */
    held_reset(&h, 0);
    g_chain_hold_first = true;
    int rc = rth_run(&h, chain_program, g_kernels, K_KERNELS, &c.args);
    g_chain_hold_first = false;
    assert_int_equal(rc, 0);
    /* 0: the held add let go without the orchestrator waiting (guard expired) */
    assert_int_equal(atomic_load(&g_held.waited), 1);
    assert_int_equal(h.result.status, 0);
    assert_int_equal(h.result.tasks_submitted, chain_tasks(&c));
    assert_int_equal(h.result.tasks_completed, chain_tasks(&c)); /* less: tasks lost */
    assert_int_equal(h.result.subtasks_dispatched, chain_tasks(&c)); /* one block each */
    /* 0: the orchestrator never had to wait, so back-pressure was not tested */
    assert_true(h.result.ring_waits > 0);
    chain_check(&c);
    chain_close(&c);
    rth_close(&h);
}

/* The first task is held until the orchestrator waits (held_reset(h, 0)):
 * the next three queue behind it, so the fifth submit finds the window of
 * 4 full whatever the threads' speeds, and waits for the one slot the
 * hold then frees. */
static void one_task_per_scope(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    for (int i = 0; i < 1000; i++) {
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        (void)count_task_of(rt, &args->tensors[0], i == 0 ? K_HELD_COUNT : K_COUNT);
        simpler_scope_end(rt);
    }
}

static void window_of_4_recycles_slots_over_1000_sequential_tasks(void **state)
{
    (void)state;
    struct rt_config config = tiny_config();
    struct rt_harness h;
    rth_open(&h, &config, 0);
    struct chain c;
    chain_open(&c, 1, 1); /* for its counter only */
    chain_reset(&c);
    held_reset(&h, 0);
    assert_int_equal(rth_run(&h, one_task_per_scope, g_kernels, K_KERNELS, &c.args), 0);
    assert_int_equal(h.result.tasks_submitted, 1000);
    assert_int_equal(h.result.tasks_completed, 1000);
    /* 0: the held task let go without the orchestrator waiting (guard expired) */
    assert_int_equal(atomic_load(&g_held.waited), 1);
    assert_true(h.result.ring_waits > 0); /* 0: the window never filled */
    int64_t counter;
    ts_from_dev(&counter, c.counter, sizeof counter);
    assert_int_equal(counter, 1000); /* less: a task in a recycled slot never ran */
    chain_close(&c);
    rth_close(&h);
}

/*
 * Scopes of 15 chained count tasks in a window of 16. A blocked submit
 * waits for a quarter of the window (4 slots) to free (hysteresis), but
 * never for more than retirement can give while its own scope pins the
 * rest: with the previous scope's last 3 tasks alive, the 14th task of a
 * scope finds 13 of its own pinned and must wait for 3. Waiting for 4 would
 * never end (ring timeout).
 *
 * Left to the threads' speeds that wait may never happen (under
 * ThreadSanitizer the cores keep up with the orchestrator and the window
 * never fills), so scope HELD_SCOPE's 13th task is held until scope
 * HELD_SCOPE + 1 has submitted 13 tasks and the orchestrator is waiting:
 * then exactly that wait happens, in every run. Scope HELD_SCOPE + 1
 * begins only once scope HELD_SCOPE's 12th task has retired: else its
 * 11th-13th submits could find that scope's 10th-12th tasks alive too,
 * wait for 4 slots while the hold lets only 3 free, and the test's own
 * hold would be the deadlock (the runtime cannot know that the held task
 * waits for a submit).
 */
#define HELD_SCOPE 2

struct retire_wait {
    struct rt_run *run;
    uint64_t id;
};

static bool retired(void *arg)
{
    struct retire_wait *w = arg;
    return rt_task_retired(w->run, w->id);
}

/* Yields until task `id` has retired, bounded by the deadlock guard: a
 * task that never retires fails the test on its counts. */
static void await_retired(uint64_t id)
{
    struct retire_wait w = {(struct rt_run *)g_held.run, id};
    (void)ts_poll_until(retired, &w);
}

static void scopes_of_15_in_a_window_of_16(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    uint64_t before_held = 0;
    for (int s = 0; s < 500; s++) {
        if (s == HELD_SCOPE + 1)
            await_retired(before_held);
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        for (int i = 0; i < 15; i++) {
            bool held = s == HELD_SCOPE && i == 12;
            uint64_t id = count_task_of(rt, &args->tensors[0], held ? K_HELD_COUNT : K_COUNT);
            if (s == HELD_SCOPE && i == 11)
                before_held = id;
            if (s == HELD_SCOPE + 1)
                atomic_store_explicit(&g_held.seen, (uint64_t)i + 1, memory_order_release);
        }
        simpler_scope_end(rt);
    }
}

static void a_blocked_submit_waits_for_no_more_slots_than_its_scope_leaves(void **state)
{
    (void)state;
    struct rt_config config = tiny_config();
    for (int i = 0; i < RT_RINGS; i++)
        config.task_window[i] = 16;
    struct rt_harness h;
    rth_open(&h, &config, 0);
    held_reset(&h, 13);
    struct chain c;
    chain_open(&c, 1, 1); /* for its counter only */
    chain_reset(&c);
    assert_int_equal(rth_run(&h, scopes_of_15_in_a_window_of_16, g_kernels, K_KERNELS, &c.args), 0);
    assert_int_equal(h.result.status, 0); /* RING_TIMEOUT: a wait for more than could free */
    assert_int_equal(h.result.tasks_submitted, 7500);
    assert_int_equal(h.result.tasks_completed, 7500);
    /* 0: the held task let go without the orchestrator waiting (guard expired) */
    assert_int_equal(atomic_load(&g_held.waited), 1);
    assert_true(h.result.ring_waits > 0); /* 0: the window never filled */
    int64_t counter;
    ts_from_dev(&counter, c.counter, sizeof counter);
    assert_int_equal(counter, 7500); /* less: a task in a recycled slot never ran */
    chain_close(&c);
    rth_close(&h);
}

/*
 * Scopes of exactly a window of dummy tasks: the last task of every scope
 * waits for the previous scope's last task to retire, and once it has, the
 * oldest task left is pinned by the open scope. A wait that ends between
 * "no room" and "is the oldest pinned?" must not be judged a deadlock.
 * Dummies complete on the scheduler at once, so the ring also drains while
 * the orchestrator re-initialises slots: under ThreadSanitizer this is where
 * retirement racing a slot's reuse shows.
 */
static void full_window_scopes(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    /* First a scope of one count task held until the orchestrator waits
     * (held_reset(h, 0)): retirement is in order, so the first scope of
     * dummies finds the window full behind it whatever the threads'
     * speeds, and its wait is judged with the oldest task's scope closed
     * (not a deadlock). The dummies after it race retirement as they
     * come. */
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    (void)count_task_of(rt, &args->tensors[0], K_HELD_COUNT);
    simpler_scope_end(rt);
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    for (int s = 0; s < 50000; s++) {
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        for (int i = 0; i < 4; i++)
            simpler_submit_dummy(rt, &ta, NULL);
        simpler_scope_end(rt);
    }
}

static void a_window_that_frees_while_the_wait_is_judged_is_not_a_deadlock(void **state)
{
    (void)state;
    struct rt_config config = tiny_config();
    struct rt_harness h;
    rth_open(&h, &config, 0);
    struct chain c;
    chain_open(&c, 1, 1); /* for its counter only */
    chain_reset(&c);
    for (int round = 0; round < 10; round++) {
        held_reset(&h, 0);
        int rc = rth_run(&h, full_window_scopes, g_kernels, K_KERNELS, &c.args);
        /* -3 (TASK_WINDOW_DEADLOCK): the runtime saw the previous scope's
         * task retire between its two looks and blamed the open scope */
        if (rc != 0)
            fail_msg("round %d: status %d after %llu tasks", round, rc,
                     (unsigned long long)h.result.tasks_submitted);
        assert_int_equal(h.result.tasks_completed, 200001); /* the held task and the dummies */
        /* 0: the held task let go without the orchestrator waiting, so
         * no wait was judged (guard expired) */
        assert_int_equal(atomic_load(&g_held.waited), 1);
        assert_true(h.result.ring_waits > 0);
    }
    int64_t counter;
    ts_from_dev(&counter, c.counter, sizeof counter);
    assert_int_equal(counter, 10); /* the held task of each round, once */
    chain_close(&c);
    rth_close(&h);
}

/* -------------------------------------------------------- impossible waits */

static int g_rc[16];

static void rc_reset(void)
{
    for (int i = 0; i < 16; i++)
        g_rc[i] = 1; /* no call returns 1 */
}

/* A ring timeout no run of expect_fast_failure's comes near: a wait that
 * can never end must fail at once with its own code, never by timing out. */
#define FAST_FAILURE_RING_TIMEOUT_MS 60000u

/* Runs `entry` on `h` and expects `status` before the ring timeout could
 * have expired, with `submitted` tasks accepted, then a clean run on the
 * same harness. */
static void expect_fast_failure(struct rt_harness *h, simpler_orch_entry_fn entry, int status,
                                uint64_t submitted)
{
    struct chain c;
    chain_open(&c, 1, 1);
    chain_reset(&c);
    /* tensor 2: 36 i32 for the dep-pool tests' writers */
    int32_t *ext = ts_dev_alloc(36 * sizeof(int32_t));
    c.args.tensors[2] = ts_dev_tensor_1d(ext, 36, SIMPLER_DTYPE_I32);
    c.args.tensor_count = 3;
    uint32_t ring_timeout_ms = h->config.ring_timeout_ms;
    h->config.ring_timeout_ms = FAST_FAILURE_RING_TIMEOUT_MS;
    uint64_t t0 = simdev_clock_ns();
    int rc = rth_run(h, entry, g_kernels, K_KERNELS, &c.args);
    uint64_t elapsed = simdev_clock_ns() - t0;
    h->config.ring_timeout_ms = ring_timeout_ms;
    /* RING_TIMEOUT: the runtime waited instead of seeing that the wait
     * could never end */
    assert_int_equal(rc, status);
    assert_int_equal(h->result.status, status); /* the result block agrees with the stream */
    /* the ring timeout or more: the same, judged only once it expired */
    if (elapsed >= (uint64_t)FAST_FAILURE_RING_TIMEOUT_MS * 1000000ull)
        fail_msg("the run took %.3f s to fail", (double)elapsed / 1e9);
    /* more: a submit after the first error was not a no-op */
    assert_int_equal(h->result.tasks_submitted, submitted);
    assert_int_equal(simdev_free(ext), 0);
    chain_close(&c);
    expect_good_run(h);
}

static void five_tasks_at_depth_0(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    for (int i = 0; i < 5; i++)
        g_rc[i] = count_task(rt, &args->tensors[0]);
}

static void five_tasks_in_one_scope_of_window_4_fail_at_once_with_scope_task_overflow(
    void **state)
{
    (void)state;
    struct rt_config config = tiny_config();
    struct rt_harness h;
    rth_open(&h, &config, 0);
    rc_reset();
    expect_fast_failure(&h, five_tasks_at_depth_0, -SIMPLER_ORCH_ERR_SCOPE_TASK_OVERFLOW, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(g_rc[i], 0);
    assert_int_equal(g_rc[4], -SIMPLER_ORCH_ERR_SCOPE_TASK_OVERFLOW);
    rth_close(&h);
}

/* Depths 3 and 4 share ring 3: 2 tasks at depth 3 stay pinned while depth 4
 * fills the rest of the window. */
static void window_pinned_by_outer_scope(struct simpler_orch *rt,
                                         const struct simpler_orch_args *args)
{
    const struct simpler_tensor *counter = &args->tensors[0];
    for (int d = 0; d < 3; d++)
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    g_rc[0] = count_task(rt, counter);
    g_rc[1] = count_task(rt, counter);
    g_rc[2] = simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    g_rc[3] = count_task(rt, counter);
    g_rc[4] = count_task(rt, counter);
    g_rc[5] = count_task(rt, counter);
    for (int d = 0; d < 4; d++)
        simpler_scope_end(rt);
}

static void window_full_and_pinned_by_an_outer_scope_fails_at_once_with_task_window_deadlock(
    void **state)
{
    (void)state;
    struct rt_config config = tiny_config();
    struct rt_harness h;
    rth_open(&h, &config, 0);
    rc_reset();
    expect_fast_failure(&h, window_pinned_by_outer_scope,
                        -SIMPLER_ORCH_ERR_TASK_WINDOW_DEADLOCK, 4);
    for (int i = 0; i < 5; i++)
        assert_int_equal(g_rc[i], 0);
    /* -10 would blame the depth-4 scope, which holds only 3 of the 4 slots */
    assert_int_equal(g_rc[5], -SIMPLER_ORCH_ERR_TASK_WINDOW_DEADLOCK);
    rth_close(&h);
}

static void output_larger_than_the_heap(struct simpler_orch *rt,
                                        const struct simpler_orch_args *args)
{
    static struct simpler_task_result r;
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    g_rc[0] = seed_task(rt, &args->tensors[0], 16384, 0, &r); /* exactly 64 KiB: fits */
    simpler_scope_end(rt);
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    g_rc[1] = seed_task(rt, &args->tensors[0], 16385, 0, &r); /* 64 KiB + 4 bytes */
    simpler_scope_end(rt);
}

static void output_larger_than_the_ring_heap_fails_at_once_with_heap_deadlock(void **state)
{
    (void)state;
    struct rt_config config = tiny_config();
    struct rt_harness h;
    rth_open(&h, &config, 0);
    rc_reset();
    expect_fast_failure(&h, output_larger_than_the_heap, -SIMPLER_ORCH_ERR_HEAP_DEADLOCK, 1);
    assert_int_equal(g_rc[0], 0); /* nonzero: a request of the whole heap was refused */
    assert_int_equal(g_rc[1], -SIMPLER_ORCH_ERR_HEAP_DEADLOCK);
    rth_close(&h);
}

static void heap_pinned_by_open_scope(struct simpler_orch *rt,
                                      const struct simpler_orch_args *args)
{
    static struct simpler_task_result r;
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    g_rc[0] = seed_task(rt, &args->tensors[0], 10240, 0, &r); /* 40 KiB of 64 */
    g_rc[1] = seed_task(rt, &args->tensors[0], 10240, 0, &r); /* 40 more: cannot fit */
    simpler_scope_end(rt);
}

static void heap_full_and_pinned_by_an_open_scope_fails_at_once_with_heap_deadlock(void **state)
{
    (void)state;
    struct rt_config config = tiny_config();
    struct rt_harness h;
    rth_open(&h, &config, 0);
    rc_reset();
    expect_fast_failure(&h, heap_pinned_by_open_scope, -SIMPLER_ORCH_ERR_HEAP_DEADLOCK, 1);
    assert_int_equal(g_rc[0], 0);
    assert_int_equal(g_rc[1], -SIMPLER_ORCH_ERR_HEAP_DEADLOCK);
    rth_close(&h);
}

/* A dummy that reads the outputs of `n` producers. */
static int reader_of(struct simpler_orch *rt, const struct simpler_task_result *producers,
                     uint32_t n)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    for (uint32_t i = 0; i < n; i++)
        simpler_task_args_add_input(&ta, &producers[i].outputs[0]);
    return simpler_submit_dummy(rt, &ta, &r);
}

static struct simpler_task_result g_producers[9];

/* dst <- s + k, held at the gate first. */
static int gated_fill_into(struct simpler_orch *rt, const struct simpler_tensor *dst, int32_t s)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output_existing(&ta, dst);
    simpler_task_args_add_scalar(&ta, (uint64_t)(uint32_t)s);
    return simpler_submit_aiv(rt, K_GATED_FILL, &ta, NULL);
}

/*
 * Nine writers of disjoint quarters of an external tensor, each in its own
 * (closed) depth-1 scope and held PENDING by the gate, then one reader of
 * the whole tensor: nine TensorMap producers need 18 entries of a 16-entry
 * pool. Nothing is pinned, so only the size check can say "never"; without
 * it the wait would end in the ring timeout (2 s). The gate opens when the
 * entry ends, whatever happened.
 */
static int g_result_untouched;

static void nine_producers_one_reader(struct simpler_orch *rt,
                                      const struct simpler_orch_args *args)
{
    const struct simpler_tensor *e = &args->tensors[2];
    for (int i = 0; i < 9; i++) {
        struct simpler_tensor quarter;
        simpler_tensor_slice(&quarter, e, 0, 4 * (uint64_t)i, 4 * (uint64_t)i + 4, 1);
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        g_rc[i] = gated_fill_into(rt, &quarter, i);
        simpler_scope_end(rt);
    }
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, e);
    simpler_task_args_add_output(&ta, (const uint64_t[]){4}, 1, SIMPLER_DTYPE_U32, 0);
    /* The failure comes after the slot and heap were taken: the result
     * must still be left alone (outputs are written only on success). */
    static struct simpler_task_result result;
    memset(&result, 0x5a, sizeof result);
    g_rc[9] = simpler_submit_dummy(rt, &ta, &result);
    g_result_untouched = result.task_id == 0x5a5a5a5a5a5a5a5aull &&
                         result.output_count == 0x5a5a5a5au;
    simpler_scope_end(rt);
    ts_gate_open(&g_gate);
}

/* A 16-entry dependency pool on every ring (room for 8 producers). */
static struct rt_config small_dep_pool_config(void)
{
    struct rt_config c = rth_small_config();
    for (int i = 0; i < RT_RINGS; i++)
        c.dep_pool[i] = 16;
    return c;
}

static void task_with_more_producers_than_the_dep_pool_fails_at_once_with_dep_pool_overflow(
    void **state)
{
    (void)state;
    struct rt_config config = small_dep_pool_config();
    struct rt_harness h;
    rth_open(&h, &config, 0);
    rc_reset();
    ts_gate_init(&g_gate);
    g_result_untouched = 0;
    expect_fast_failure(&h, nine_producers_one_reader, -SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW, 9);
    ts_gate_destroy(&g_gate);
    assert_true(g_result_untouched); /* false: a failed submit wrote its result */
    for (int i = 0; i < 9; i++)
        assert_int_equal(g_rc[i], 0);
    assert_int_equal(g_rc[9], -SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW);
    rth_close(&h);
}

/* Nine producers held PENDING by the gate: a reader of eight takes all 16
 * entries (8 held + 8 waited for), pinned by scope 0; one more reader can
 * never get its 2. The gate opens when the entry ends, whatever happened. */
static void dep_pool_pinned_by_scope_0(struct simpler_orch *rt,
                                       const struct simpler_orch_args *args)
{
    (void)args;
    for (int i = 0; i < 9; i++)
        g_rc[i] = fill_task(rt, K_GATED_FILL, 4, i, &g_producers[i]);
    g_rc[9] = reader_of(rt, g_producers, 8);
    g_rc[10] = reader_of(rt, &g_producers[8], 1);
    ts_gate_open(&g_gate);
}

static void dep_pool_full_and_pinned_by_an_open_scope_fails_at_once_with_dep_pool_overflow(
    void **state)
{
    (void)state;
    struct rt_config config = small_dep_pool_config();
    struct rt_harness h;
    rth_open(&h, &config, 0);
    rc_reset();
    ts_gate_init(&g_gate);
    expect_fast_failure(&h, dep_pool_pinned_by_scope_0, -SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW,
                        10);
    ts_gate_destroy(&g_gate);
    for (int i = 0; i < 9; i++)
        assert_int_equal(g_rc[i], 0);
    assert_int_equal(g_rc[9], 0); /* nonzero: 2 entries per producer did not fit exactly */
    assert_int_equal(g_rc[10], -SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW);
    rth_close(&h);
}

/* ------------------------------------------------------------ scope misuse */

static void end_at_depth_0(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    g_rc[0] = simpler_scope_end(rt);
    g_rc[1] = count_task(rt, &args->tensors[0]); /* latched: a no-op */
}

static void leave_scope_open(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    g_rc[0] = simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    g_rc[1] = count_task(rt, &args->tensors[0]);
}

static void auto_inside_manual(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    g_rc[0] = simpler_scope_begin(rt, SIMPLER_SCOPE_MANUAL);
    g_rc[1] = simpler_scope_begin(rt, SIMPLER_SCOPE_MANUAL);
    g_rc[2] = simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    simpler_scope_end(rt);
    simpler_scope_end(rt);
}

static void unknown_mode(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    g_rc[0] = simpler_scope_begin(rt, 7);
}

static int g_opened;

static void nest_until_refused(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    g_opened = 0;
    for (int i = 0; i < 100; i++) {
        int rc = simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        if (rc) {
            g_rc[0] = rc;
            break;
        }
        g_opened++;
    }
    for (int i = 0; i < g_opened; i++)
        simpler_scope_end(rt);
}

static void scope_end_at_depth_0_fails_with_scope_error(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    rc_reset();
    expect_fast_failure(&h, end_at_depth_0, -SIMPLER_ORCH_ERR_SCOPE, 0);
    assert_int_equal(g_rc[0], -SIMPLER_ORCH_ERR_SCOPE);
    assert_int_equal(g_rc[1], -SIMPLER_ORCH_ERR_SCOPE);
    rth_close(&h);
}

static void entry_leaving_a_scope_open_fails_with_scope_error(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    rc_reset();
    expect_fast_failure(&h, leave_scope_open, -SIMPLER_ORCH_ERR_SCOPE, 1);
    assert_int_equal(g_rc[0], 0);
    assert_int_equal(g_rc[1], 0); /* the error is found when the entry returns */
    rth_close(&h);
}

static void auto_scope_inside_manual_fails_with_scope_error(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    rc_reset();
    expect_fast_failure(&h, auto_inside_manual, -SIMPLER_ORCH_ERR_SCOPE, 0);
    assert_int_equal(g_rc[0], 0);
    assert_int_equal(g_rc[1], 0); /* MANUAL inside MANUAL is fine */
    assert_int_equal(g_rc[2], -SIMPLER_ORCH_ERR_SCOPE);
    rc_reset();
    expect_fast_failure(&h, unknown_mode, -SIMPLER_ORCH_ERR_SCOPE, 0);
    assert_int_equal(g_rc[0], -SIMPLER_ORCH_ERR_SCOPE);
    rth_close(&h);
}

static void the_65th_nested_scope_fails_with_scope_error(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    rc_reset();
    expect_fast_failure(&h, nest_until_refused, -SIMPLER_ORCH_ERR_SCOPE, 0);
    /* the entry's scope plus 63 = SIMPLER_SCOPE_MAX_DEPTH (64) open at once */
    assert_int_equal(g_opened, SIMPLER_SCOPE_MAX_DEPTH - 1);
    assert_int_equal(g_rc[0], -SIMPLER_ORCH_ERR_SCOPE);
    rth_close(&h);
}

/* ---------------------------------------------- a failure before the cores */

/* Polls `ready(arg)` until true or `ms` have passed; true when it became true.
 * The bound is a deadlock guard or a grace window, never an ordering tool. */
static bool poll_until(bool (*ready)(void *), void *arg, uint32_t ms)
{
    uint64_t deadline = simdev_clock_ns() + (uint64_t)ms * 1000000ull;
    while (!ready(arg)) {
        uint64_t now = simdev_clock_ns();
        if (now >= deadline)
            return false;
        uint64_t left = deadline - now;
        uint64_t seq = platform_cond_seq(0);
        platform_cond_wait(0, seq, left < 1000000ull ? left : 1000000ull);
    }
    return true;
}

static _Atomic int g_orch_failed;

static void fail_then_flag(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    g_rc[0] = simpler_scope_end(rt);
    /* release: pairs with the acquire in orch_failed */
    atomic_store_explicit(&g_orch_failed, 1, memory_order_release);
}

static bool orch_failed(void *arg)
{
    (void)arg;
    return atomic_load_explicit(&g_orch_failed, memory_order_acquire) != 0;
}

static bool exit_rung(void *regs)
{
    return (platform_read_doorbell(regs) & RT_DOORBELL_EXIT) != 0;
}

static bool stream_drained(void *stream)
{
    return simdev_stream_query(stream) != PTO_RUNTIME_ERR_NOT_READY;
}

/*
 * The launch chain starts the AICPU program and the core loops on two
 * streams, so the cores may start after the orchestrator has already
 * failed. Here they do, deterministically: the AICPU program is launched,
 * its orchestrator fails at once, and only then (plus a grace window in
 * which a broken scheduler rings the exit doorbell) are the core loops
 * launched. Every core must still exit, and the run report the failure.
 */
static void a_run_failing_before_its_cores_start_still_lets_them_exit(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    static const struct simpler_orch_args empty;
    ts_to_dev(h.args_dev, &empty, sizeof empty);
    struct rt_launch_args la;
    memset(&la, 0, sizeof la);
    la.request.entry = fail_then_flag;
    la.request.kernels = h.kernels_dev;
    la.request.kernel_count = 0;
    la.request.args = h.args_dev;
    la.request.arena = h.arena;
    la.request.arena_bytes = h.arena_bytes;
    la.request.result = h.result_dev;
    la.request.config = h.config;
    la.generation = 0x5eed;
    la.schedulers = 1;
    atomic_store(&g_orch_failed, 0);
    rc_reset();
    simdev_stream_t cpu = ts_new_stream(), cores = ts_new_stream();

    assert_int_equal(simdev_launch_aicpu(cpu, rt_aicpu_main, 2, &la, sizeof la), 0);
    assert_true(poll_until(orch_failed, NULL, TS_DEADLOCK_GUARD_MS));
    struct simdev_core_regs *core0 = platform_core_regs(0, 0);
    (void)poll_until(exit_rung, core0, TS_GRACE_MS);
    assert_int_equal(simdev_launch_aicore(cores, rt_core_main, &la, sizeof la), 0);

    bool exited = poll_until(stream_drained, cores, TS_DEADLOCK_GUARD_MS);
    if (!exited) {
        /* Rescue: every core loop still waits for a doorbell that changed
         * before it started; ring a fresh exit so the device can be reset. */
        for (uint32_t c = 0; c < 3; c++) {
            struct simdev_core_regs *regs = platform_core_regs(0, c);
            platform_ring_doorbell(regs, (platform_read_doorbell(regs) + 1) |
                                                RT_DOORBELL_EXIT);
        }
    }
    int cores_status = simdev_stream_sync(cores);
    int cpu_status = simdev_stream_sync(cpu);
    struct rt_run_result result;
    ts_from_dev(&result, h.result_dev, sizeof result);
    assert_int_equal(simdev_stream_destroy(cores), 0);
    assert_int_equal(simdev_stream_destroy(cpu), 0);
    rth_close(&h);
    /* false: the scheduler rang the exit doorbell before the cores said
     * hello, and a core loop that starts later reads that exit as its
     * starting value and waits forever (the run's stream never drains) */
    assert_true(exited);
    assert_int_equal(g_rc[0], -SIMPLER_ORCH_ERR_SCOPE);
    /* the core loop ends clean; the AICPU program fails with the run's
     * status (0: a failed run would reach its caller as a success), which
     * the result block holds too */
    assert_int_equal(cores_status, 0);
    assert_int_equal(cpu_status, -SIMPLER_ORCH_ERR_SCOPE);
    assert_int_equal(result.generation, la.generation); /* else: no result written */
    assert_int_equal(result.status, -SIMPLER_ORCH_ERR_SCOPE);
}

/* ------------------------------------------------------------ escaped tensors */

static void use_after_scope(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    static struct simpler_task_result x, y;
    const struct simpler_tensor *counter = &args->tensors[0];
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    g_rc[0] = seed_task(rt, counter, CHAIN_ELEMS, 5, &x);
    simpler_scope_end(rt);
    g_rc[1] = add_task(rt, counter, &x.outputs[0], 1, &y);
}

static void output_used_after_its_scope_ended_fails_with_invalid_args(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    rc_reset();
    expect_fast_failure(&h, use_after_scope, -SIMPLER_ORCH_ERR_INVALID_ARGS, 1);
    assert_int_equal(g_rc[0], 0);
    assert_int_equal(g_rc[1], -SIMPLER_ORCH_ERR_INVALID_ARGS);
    rth_close(&h);
}

/*
 * read_element of an escaped output: X's scope ends, then four tasks in a
 * new scope on the same ring (window 4) — the fourth can only get a slot
 * once X has retired, so X has retired, deterministically, before the read.
 */
static void read_after_scope_and_retirement(struct simpler_orch *rt,
                                            const struct simpler_orch_args *args)
{
    static struct simpler_task_result x;
    const struct simpler_tensor *counter = &args->tensors[0];
    uint64_t index = 0;
    int32_t value = 0;
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    g_rc[0] = seed_task(rt, counter, 4, 7, &x);
    g_rc[1] = rt->ops->read_element(rt, &x.outputs[0], &index, &value);
    g_rc[2] = value;
    simpler_scope_end(rt);
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    for (int i = 0; i < 4; i++)
        g_rc[3 + i] = count_task(rt, counter);
    simpler_scope_end(rt);
    g_rc[7] = rt->ops->read_element(rt, &x.outputs[0], &index, &value);
}

static void read_element_of_an_output_whose_scope_ended_fails_with_invalid_args(void **state)
{
    (void)state;
    struct rt_config config = tiny_config();
    struct rt_harness h;
    rth_open(&h, &config, 0);
    struct chain c;
    chain_open(&c, 1, 1);
    chain_reset(&c);
    rc_reset();
    int status = rth_run(&h, read_after_scope_and_retirement, g_kernels, K_KERNELS, &c.args);
    struct rt_run_result result = h.result;
    chain_close(&c);
    rth_close(&h); /* before the checks: a failure must not leak the harness */
    assert_int_equal(g_rc[0], 0);
    assert_int_equal(g_rc[1], 0);
    assert_int_equal(g_rc[2], 7); /* inside its scope the read is fine */
    for (int i = 3; i < 7; i++)
        assert_int_equal(g_rc[i], 0);
    /* 0: the runtime read a recycled heap buffer on the orchestrator's behalf
     * (a submit of the same tensor is refused with -5, and so is this read
     * while X has not retired yet) */
    assert_int_equal(g_rc[7], -SIMPLER_ORCH_ERR_INVALID_ARGS);
    assert_int_equal(status, -SIMPLER_ORCH_ERR_INVALID_ARGS);
    assert_int_equal(result.status, -SIMPLER_ORCH_ERR_INVALID_ARGS);
}

/* ------------------------------------------- holds on completed producers */

#define HOLD_ELEMS 256 /* i32: 1 KiB, a quarter of hold_config's heap */

/* Windows of 8 and heaps of 4 KiB; a blocked submit gives up after 200 ms
 * (the heap test's submit must give up: its wait can never end). The runs
 * that must succeed wait up to UNHELD_RING_TIMEOUT_MS instead. */
#define UNHELD_RING_TIMEOUT_MS 10000u

static struct rt_config hold_config(void)
{
    struct rt_config c = rth_small_config();
    for (int i = 0; i < RT_RINGS; i++) {
        c.task_window[i] = 8;
        c.heap_bytes[i] = 4 * HOLD_ELEMS * sizeof(int32_t);
    }
    c.ring_timeout_ms = 200;
    return c;
}

/* dst <- src, held at the gate first. */
static int gated_copy(struct simpler_orch *rt, const struct simpler_tensor *src,
                      const struct simpler_tensor *dst)
{
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, src);
    simpler_task_args_add_output_existing(&ta, dst);
    return simpler_submit_aiv(rt, K_GATED_COPY, &ta, NULL);
}

static int32_t g_read_value;

/* Scope D at depth 1: eight dummies take ring 1's slots 1-7 and then need
 * slot 0, the producer's (g_rc[3..10]); then gate 1 opens. */
static void dummies_over_the_producers_slot(struct simpler_orch *rt)
{
    struct simpler_task_args ta;
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    simpler_task_args_init(&ta);
    for (int i = 0; i < 8; i++)
        g_rc[3 + i] = simpler_submit_dummy(rt, &ta, NULL);
    simpler_scope_end(rt);
    ts_gate_open(&g_gate);
}

/*
 * Runs `entry` (a producer P of external e without heap outputs, a reader
 * C copying e to external f behind gate 1, an element read that waits for
 * P, then dummies_over_the_producers_slot) and checks that P was not held.
 */
static void expect_unheld_producer(simpler_orch_entry_fn entry)
{
    struct rt_config config = hold_config();
    /* This run must succeed: the eighth dummy waits for P to retire on the
     * thread that completed it, which may be off its CPU for a while; only
     * a broken runtime makes it wait out the timeout. */
    config.ring_timeout_ms = UNHELD_RING_TIMEOUT_MS;
    struct rt_harness h;
    rth_open(&h, &config, 0);
    int32_t *e = ts_dev_alloc(HOLD_ELEMS * sizeof(int32_t));
    int32_t *f = ts_dev_alloc(HOLD_ELEMS * sizeof(int32_t));
    struct simpler_orch_args args = {.tensor_count = 2};
    args.tensors[0] = ts_dev_tensor_1d(e, HOLD_ELEMS, SIMPLER_DTYPE_I32);
    args.tensors[1] = ts_dev_tensor_1d(f, HOLD_ELEMS, SIMPLER_DTYPE_I32);
    rc_reset();
    g_read_value = -1;
    ts_gate_init(&g_gate);
    ts_gate_init(&g_gate2);
    int status = rth_run(&h, entry, g_kernels, K_KERNELS, &args);
    ts_gate_destroy(&g_gate2);
    ts_gate_destroy(&g_gate);
    int32_t copy[HOLD_ELEMS];
    ts_from_dev(copy, f, sizeof copy);
    assert_int_equal(simdev_free(e), 0);
    assert_int_equal(simdev_free(f), 0);
    rth_close(&h);
    for (int i = 0; i < 3; i++)
        assert_int_equal(g_rc[i], 0);
    assert_int_equal(g_read_value, 7); /* else the read did not wait for P */
    /* -RING_TIMEOUT at the eighth dummy: the gated reader held P, so P's
     * slot could not be reused */
    for (int i = 3; i < 11; i++)
        assert_int_equal(g_rc[i], 0);
    assert_int_equal(status, 0);
    for (int k = 0; k < HOLD_ELEMS; k++)
        assert_int_equal(copy[k], 7 + k); /* else C read before P's data was in place */
}

/*
 * P fills external e (no output in the ring heap) in scope A at depth 1
 * (ring 1, slot 0). C copies e to external f, held at gate 1, in scope B
 * nested in A (depth 2, ring 2). A then ends, while C still runs: P is
 * unheld unless C holds it. Two forms:
 * - completed: the element read waits until P completed, before C is
 *   wired;
 * - running (g_producer_running): P waits at gate 2, so C is wired while
 *   P runs and waits for it; gate 2 then opens and the read waits for P.
 * Then dummies_over_the_producers_slot: the eighth dummy needs P's slot,
 * so P must have retired although C still runs. D is open meanwhile and
 * begins right after P, so the blocked submit waits for that one slot (a
 * submit waits for up to a quarter of the window, never for slots of an
 * open scope: slots_to_wait_for).
 */
static bool g_producer_running;

static void producer_then_gated_reader(struct simpler_orch *rt,
                                       const struct simpler_orch_args *args)
{
    const struct simpler_tensor *e = &args->tensors[0], *f = &args->tensors[1];
    uint64_t index = 0;
    struct simpler_task_args ta;
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    simpler_task_args_init(&ta);
    simpler_task_args_add_output_existing(&ta, e);
    simpler_task_args_add_scalar(&ta, 7);
    g_rc[0] = simpler_submit_aiv(rt, g_producer_running ? K_GATED2_FILL : K_FILL, &ta, NULL);
    if (!g_producer_running)
        g_rc[2] = rt->ops->read_element(rt, e, &index, &g_read_value);
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    g_rc[1] = gated_copy(rt, e, f);
    simpler_scope_end(rt);
    simpler_scope_end(rt);
    if (g_producer_running) {
        ts_gate_open(&g_gate2);
        g_rc[2] = rt->ops->read_element(rt, e, &index, &g_read_value);
    }
    dummies_over_the_producers_slot(rt);
}

static void a_completed_producer_without_heap_outputs_is_not_held_by_its_reader(void **state)
{
    (void)state;
    g_producer_running = false;
    expect_unheld_producer(producer_then_gated_reader);
}

static void a_running_producer_without_heap_outputs_is_not_held_by_its_reader(void **state)
{
    (void)state;
    g_producer_running = true;
    expect_unheld_producer(producer_then_gated_reader);
}

/*
 * P fills a 1 KiB output in the ring heap (the first quarter); the element
 * read waits until it completed; C copies that output to external f, held
 * at the gate; then their scope ends. Three more 1 KiB outputs fill the heap;
 * the fourth needs P's bytes, which C still reads: its submit can only
 * wait, and gives up after the ring timeout. The gate opens when the entry
 * ends, and C then copies what P wrote.
 */
static void completed_heap_producer_then_gated_reader(struct simpler_orch *rt,
                                                      const struct simpler_orch_args *args)
{
    const struct simpler_tensor *f = &args->tensors[1];
    struct simpler_task_result p;
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    g_rc[0] = fill_task(rt, K_FILL, HOLD_ELEMS, 7, &p);
    uint64_t index = 0;
    g_rc[1] = rt->ops->read_element(rt, &p.outputs[0], &index, &g_read_value);
    g_rc[2] = gated_copy(rt, &p.outputs[0], f);
    simpler_scope_end(rt);
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    for (int i = 0; i < 4; i++)
        g_rc[3 + i] = fill_task(rt, K_FILL, HOLD_ELEMS, 1000 * (i + 1), NULL);
    simpler_scope_end(rt);
    ts_gate_open(&g_gate);
}

static void a_completed_producer_with_a_heap_output_is_held_until_its_reader_ends(void **state)
{
    (void)state;
    struct rt_config config = hold_config();
    struct rt_harness h;
    rth_open(&h, &config, 0);
    int32_t *f = ts_dev_alloc(HOLD_ELEMS * sizeof(int32_t));
    struct simpler_orch_args args = {.tensor_count = 2};
    args.tensors[0] = ts_dev_tensor_1d(f, HOLD_ELEMS, SIMPLER_DTYPE_I32); /* unused */
    args.tensors[1] = ts_dev_tensor_1d(f, HOLD_ELEMS, SIMPLER_DTYPE_I32);
    rc_reset();
    g_read_value = -1;
    ts_gate_init(&g_gate);
    int status = rth_run(&h, completed_heap_producer_then_gated_reader, g_kernels, K_KERNELS,
                         &args);
    ts_gate_destroy(&g_gate);
    int32_t copy[HOLD_ELEMS];
    ts_from_dev(copy, f, sizeof copy);
    assert_int_equal(simdev_free(f), 0);
    rth_close(&h);
    for (int i = 0; i < 6; i++)
        assert_int_equal(g_rc[i], 0);
    assert_int_equal(g_read_value, 7);
    /* 0: the fourth output took P's heap bytes while C still read them */
    assert_int_equal(g_rc[6], -SIMPLER_ORCH_ERR_RING_TIMEOUT);
    assert_int_equal(status, -SIMPLER_ORCH_ERR_RING_TIMEOUT);
    for (int k = 0; k < HOLD_ELEMS; k++)
        assert_int_equal(copy[k], 7 + k); /* else P's bytes were overwritten under C */
}

/* ----------------------------------------- ready queues kept across runs */

#define REUSE_DUMMIES 40

/* REUSE_DUMMIES dummy tasks without arguments: each is pushed to the
 * dummy ready queue exactly once, by its submit. */
static void forty_dummies(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    for (int i = 0; i < REUSE_DUMMIES; i++)
        if (simpler_submit_dummy(rt, &ta, NULL) != 0)
            return;
}

/* A fatal error before any submit: the run fails with its queues empty,
 * as consistent as a clean run's. */
static void fatal_at_once(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    rt->ops->fatal(rt);
}

/* The run header as the last run left it in the arena. */
static void read_header(const struct rt_harness *h, struct rt_run *run)
{
    ts_from_dev(run, h->arena, sizeof *run);
}

static uint64_t dummy_pushes(const struct rt_harness *h)
{
    struct rt_run run;
    read_header(h, &run);
    return atomic_load(&run.ready[RT_SHAPE_DUMMY].enqueue_pos);
}

static void clean_run_leaves_its_ready_queues_to_the_next_run_and_a_failed_one_does_not(
    void **state)
{
    (void)state;
    struct rt_config config = rth_small_config();
    struct rt_harness h;
    rth_open(&h, &config, 0);
    struct rt_run run;

    assert_int_equal(rth_run(&h, forty_dummies, g_kernels, K_KERNELS, NULL), 0);
    read_header(&h, &run);
    assert_true(run.rq_token == h.arena_nonce); /* else a clean run left no mark */
    assert_int_equal(dummy_pushes(&h), REUSE_DUMMIES);

    /* 40, not 80: the second run wrote the queues' cells again */
    assert_int_equal(rth_run(&h, forty_dummies, g_kernels, K_KERNELS, NULL), 0);
    assert_int_equal(dummy_pushes(&h), 2 * REUSE_DUMMIES);

    /* A failed run leaves no mark, even with its queues empty, so the next
     * run starts them over (a failed run may have ended mid-way) */
    assert_int_equal(rth_run(&h, fatal_at_once, g_kernels, K_KERNELS, NULL),
                     -SIMPLER_ORCH_ERR_EXPLICIT_FATAL);
    read_header(&h, &run);
    assert_true(run.rq_token == 0); /* nonzero: a failed run passed its queues on */
    assert_int_equal(rth_run(&h, forty_dummies, g_kernels, K_KERNELS, NULL), 0);
    assert_int_equal(dummy_pushes(&h), REUSE_DUMMIES);

    /* Another arena's identity (or none) never takes them as they are */
    h.arena_nonce = rt_arena_nonce();
    assert_int_equal(rth_run(&h, forty_dummies, g_kernels, K_KERNELS, NULL), 0);
    assert_int_equal(dummy_pushes(&h), REUSE_DUMMIES);
    h.arena_nonce = 0;
    assert_int_equal(rth_run(&h, forty_dummies, g_kernels, K_KERNELS, NULL), 0);
    assert_int_equal(dummy_pushes(&h), REUSE_DUMMIES);
    read_header(&h, &run);
    assert_true(run.rq_token == 0);
    rth_close(&h);
}

/* A config that differs from `base` in every size the layout reads. */
static struct rt_config layout_variant(const struct rt_config *base, uint32_t k)
{
    struct rt_config c = *base;
    for (int i = 0; i < RT_RINGS; i++) {
        c.task_window[i] = 4u << ((k + (uint32_t)i) % 6);
        c.heap_bytes[i] = (4096u << (k % 5)) - 64u * (uint32_t)i * k;
        c.dep_pool[i] = 16u << ((k * 3 + (uint32_t)i) % 7);
    }
    c.tensormap_buckets = 64u << (k % 4);
    c.tensormap_entries = 256u << (k % 3);
    return c;
}

/*
 * rt_layout_compute keeps the last layout a thread computed (layout.c):
 * what it gives must still be the layout of the config and core count it
 * is asked about. Two configs and two core counts, asked in turn, each
 * give the same bytes as the first time they were asked; a config the
 * check refuses is refused right after a valid one was kept. A stale
 * layout would show as a total or a rendezvous size of the other one.
 */
static void a_layout_is_the_one_of_the_config_asked_not_the_last_one(void **state)
{
    (void)state;
    struct rt_config a = rth_small_config(), b = layout_variant(&a, 7);
    struct rt_layout la3, la4, lb3, again;
    assert_int_equal(rt_layout_compute(&a, 3, &la3), 0);
    assert_int_equal(rt_layout_compute(&b, 3, &lb3), 0);
    assert_int_equal(rt_layout_compute(&a, 4, &la4), 0);
    assert_true(la3.total != lb3.total); /* the two configs differ in size */
    assert_int_equal(la4.rendezvous_bytes, 4 * sizeof(struct rt_rendezvous));
    assert_int_equal(la3.rendezvous_bytes, 3 * sizeof(struct rt_rendezvous));
    for (int round = 0; round < 2; round++) {
        assert_int_equal(rt_layout_compute(&a, 3, &again), 0);
        assert_memory_equal(&again, &la3, sizeof again);
        assert_int_equal(rt_layout_compute(&a, 3, &again), 0); /* asked twice in a row */
        assert_memory_equal(&again, &la3, sizeof again);
        assert_int_equal(rt_layout_compute(&b, 3, &again), 0);
        assert_memory_equal(&again, &lb3, sizeof again);
        assert_int_equal(rt_layout_compute(&a, 4, &again), 0);
        assert_memory_equal(&again, &la4, sizeof again);
    }
    struct rt_config bad = a;
    bad.task_window[0] = 3; /* not a power of two */
    assert_int_equal(rt_layout_compute(&bad, 3, &again), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_layout_compute(&a, 0, &again), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_layout_compute(&a, SIMDEV_MAX_CORES + 1, &again),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_layout_compute(NULL, 3, &again), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
}

/*
 * The launch chain writes a run's rendezvous words before the run's own
 * init, even when its AICPU program never starts; an earlier run's ready
 * queues are reused only if nothing wrote them since (run_init). So the
 * rendezvous words lie at one offset for every config, and below every config's
 * queue cells.
 */
static void round_words_lie_at_one_offset_below_every_configs_queues(void **state)
{
    (void)state;
    struct rt_config base = rth_small_config();
    struct rt_layout first;
    assert_int_equal(rt_layout_compute(&base, 3, &first), 0);
    for (uint32_t k = 0; k < 30; k++) {
        struct rt_config c = layout_variant(&base, k);
        struct rt_layout l;
        assert_int_equal(rt_layout_compute(&c, 3, &l), 0);
        /* another offset: a run of one config zeroes cells another left */
        assert_int_equal(l.rendezvous, first.rendezvous);
        assert_int_equal(l.rendezvous_bytes, first.rendezvous_bytes);
        for (uint32_t q = 0; q < RT_SHAPES; q++) {
            assert_true(l.rendezvous + l.rendezvous_bytes <= l.rq_cells[q]);
            assert_true(l.rendezvous + l.rendezvous_bytes <= l.sync_rq_cells[q]);
        }
    }
}

/* Bytes a region of `bytes` takes in a layout: each starts on a cache line. */
static size_t lined(size_t bytes)
{
    return (bytes + RT_CACHELINE - 1) / RT_CACHELINE * RT_CACHELINE;
}

/*
 * An HBG device runs no orchestrator, so its arena lays out none of the
 * orchestrator's regions (TensorMap, its per-ring records, dependency
 * pools, fan-in scratch: layout.h): each is 0, and the arena is TMR's less
 * exactly their bytes, plus the image region. What it keeps lies in
 * layout order, each region apart from the next, inside the arena.
 */
static void an_hbg_arena_lays_out_none_of_the_orchestrators_regions(void **state)
{
    (void)state;
    struct rt_config base = rth_small_config();
    const uint32_t cores = 3;
    for (uint32_t k = 0; k < 30; k++) {
        struct rt_config tmr = layout_variant(&base, k), hbg = tmr;
        tmr.runtime = RT_RUNTIME_TMR;
        hbg.runtime = RT_RUNTIME_HBG;
        struct rt_layout t, h;
        assert_int_equal(rt_layout_compute(&tmr, cores, &t), 0);
        assert_int_equal(rt_layout_compute(&hbg, cores, &h), 0);
        size_t omitted = 0;
        for (uint32_t i = 0; i < RT_RINGS; i++) {
            assert_int_equal(h.ring_tm[i], 0);
            assert_int_equal(h.ring_deps[i], 0);
            assert_true(t.ring_tm[i] != 0 && t.ring_deps[i] != 0); /* TMR has them */
            omitted += lined(tmr.task_window[i] * sizeof(struct rt_tm_record)) +
                       lined(tmr.dep_pool[i] * sizeof(struct rt_dep));
        }
        assert_int_equal(h.fanin_scratch, 0);
        assert_int_equal(h.tensormap, 0);
        assert_int_equal(h.tensormap_bytes, 0);
        omitted += lined(tmr.max_fanin * (sizeof(struct rt_slot *) + sizeof(uint32_t))) +
                   lined(t.tensormap_bytes);
        assert_int_equal(t.hbg_image_bytes, 0);
        assert_int_equal(h.hbg_image_bytes, rt_hbg_image_bound(&hbg));
        /* more: an omitted region still takes room; less: a kept one lost some */
        assert_int_equal(h.total, t.total - omitted + lined(h.hbg_image_bytes));
        struct {
            size_t at, bytes;
        } kept[2 + 3 * RT_RINGS + 2 * RT_SHAPES + 4];
        uint32_t n = 0;
        kept[n].at = h.run, kept[n++].bytes = sizeof(struct rt_run);
        kept[n].at = h.rendezvous, kept[n++].bytes = h.rendezvous_bytes;
        for (uint32_t i = 0; i < RT_RINGS; i++) {
            kept[n].at = h.ring_slots[i], kept[n++].bytes = hbg.task_window[i] * sizeof(struct rt_slot);
            kept[n].at = h.ring_tasks[i], kept[n++].bytes = hbg.task_window[i] * sizeof(struct rt_task);
            kept[n].at = h.ring_heap[i], kept[n++].bytes = hbg.heap_bytes[i];
        }
        for (uint32_t q = 0; q < RT_SHAPES; q++) {
            kept[n].at = h.rq_cells[q], kept[n++].bytes = h.rq_capacity * sizeof(struct rt_rq_cell);
            kept[n].at = h.sync_rq_cells[q],
            kept[n++].bytes = h.rq_capacity * sizeof(struct rt_rq_cell);
        }
        kept[n].at = h.dispatch, kept[n++].bytes = cores * RT_CORE_QUEUE * sizeof(struct rt_dispatch);
        kept[n].at = h.scheds, kept[n++].bytes = SIMDEV_MAX_AICPU_THREADS * rt_sched_bytes();
        kept[n].at = h.scope_tasks, kept[n++].bytes = h.scope_task_capacity * sizeof(struct rt_slot *);
        kept[n].at = h.hbg_image, kept[n++].bytes = h.hbg_image_bytes;
        assert_int_equal(n, sizeof kept / sizeof kept[0]);
        for (uint32_t r = 1; r < n; r++)
            assert_true(kept[r - 1].at + kept[r - 1].bytes <= kept[r].at); /* overlap */
        assert_true(kept[n - 1].at + kept[n - 1].bytes <= h.total);
    }
}

/* A clean run, then a run of another config whose AICPU program fails as
 * it starts (after the chain wrote its rendezvous words), then the first
 * config again: exact, so the mark the clean run left was either still
 * true or not taken. */
static void a_run_whose_program_never_starts_leaves_the_next_run_working(void **state)
{
    (void)state;
    struct rt_config a = rth_small_config();
    struct rt_harness h;
    rth_open(&h, &a, 0);
    assert_int_equal(rth_run(&h, forty_dummies, g_kernels, K_KERNELS, NULL), 0);
    struct rt_config other = a;
    other.heap_bytes[RT_RINGS - 1] = a.heap_bytes[RT_RINGS - 1] / 2;
    h.config = other;
    int device;
    assert_int_equal(simdev_get_device(&device), 0);
    /* the chain's second launch, in enqueue order, is the AICPU program */
    assert_int_equal(simdev_fault_inject_exec(device, SIMDEV_OP_LAUNCH, 2, -77), 0);
    int rc = rth_run(&h, forty_dummies, g_kernels, K_KERNELS, NULL);
    assert_int_equal(simdev_fault_clear(device), 0);
    assert_true(rc != 0); /* 0: the fault was not injected where meant */
    h.config = a;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rth_run(&h, forty_dummies, g_kernels, K_KERNELS, NULL), 0);
        assert_int_equal(h.result.tasks_completed, REUSE_DUMMIES);
    }
    rth_close(&h);
}

static void arena_nonces_are_distinct_and_never_zero(void **state)
{
    (void)state;
    uint64_t seen[64];
    for (int i = 0; i < 64; i++) {
        seen[i] = rt_arena_nonce();
        assert_true(seen[i] != 0);
        for (int j = 0; j < i; j++)
            assert_true(seen[i] != seen[j]); /* equal: a stale mark could match a new arena */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(tiny_rings_run_100000_tasks_in_nested_scopes_with_exact_results),
        SIMPLER_TEST(window_of_4_recycles_slots_over_1000_sequential_tasks),
        SIMPLER_TEST(a_window_that_frees_while_the_wait_is_judged_is_not_a_deadlock),
        SIMPLER_TEST(a_blocked_submit_waits_for_no_more_slots_than_its_scope_leaves),
        SIMPLER_TEST(five_tasks_in_one_scope_of_window_4_fail_at_once_with_scope_task_overflow),
        SIMPLER_TEST(window_full_and_pinned_by_an_outer_scope_fails_at_once_with_task_window_deadlock),
        SIMPLER_TEST(output_larger_than_the_ring_heap_fails_at_once_with_heap_deadlock),
        SIMPLER_TEST(heap_full_and_pinned_by_an_open_scope_fails_at_once_with_heap_deadlock),
        SIMPLER_TEST(task_with_more_producers_than_the_dep_pool_fails_at_once_with_dep_pool_overflow),
        SIMPLER_TEST(dep_pool_full_and_pinned_by_an_open_scope_fails_at_once_with_dep_pool_overflow),
        SIMPLER_TEST(scope_end_at_depth_0_fails_with_scope_error),
        SIMPLER_TEST(entry_leaving_a_scope_open_fails_with_scope_error),
        SIMPLER_TEST(auto_scope_inside_manual_fails_with_scope_error),
        SIMPLER_TEST(the_65th_nested_scope_fails_with_scope_error),
        SIMPLER_TEST(a_run_failing_before_its_cores_start_still_lets_them_exit),
        SIMPLER_TEST(output_used_after_its_scope_ended_fails_with_invalid_args),
        SIMPLER_TEST(read_element_of_an_output_whose_scope_ended_fails_with_invalid_args),
        SIMPLER_TEST(a_completed_producer_without_heap_outputs_is_not_held_by_its_reader),
        SIMPLER_TEST(a_running_producer_without_heap_outputs_is_not_held_by_its_reader),
        SIMPLER_TEST(a_completed_producer_with_a_heap_output_is_held_until_its_reader_ends),
        SIMPLER_TEST(clean_run_leaves_its_ready_queues_to_the_next_run_and_a_failed_one_does_not),
        SIMPLER_TEST(arena_nonces_are_distinct_and_never_zero),
        SIMPLER_TEST(round_words_lie_at_one_offset_below_every_configs_queues),
        SIMPLER_TEST(a_layout_is_the_one_of_the_config_asked_not_the_last_one),
        SIMPLER_TEST(an_hbg_arena_lays_out_none_of_the_orchestrators_regions),
        SIMPLER_TEST(a_run_whose_program_never_starts_leaves_the_next_run_working),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
