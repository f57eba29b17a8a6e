/*
 * test_kernel_graph_update.c — a captured kernel-mode launch rebound to new
 * tensors and scalars without recapture (simpler_kernel_mode_graph_*):
 * later replays run the new binding, replays launched before an update
 * keep theirs, a replay racing updates runs one whole binding, an update
 * encodes one packet (from a prepared call none), and refused updates
 * change nothing. Public API only.
 *
 * The callable is pm_support's (y = x * mul + add, then acc += y) on
 * km_support's device buffers: a round's outputs say which buffers and
 * scalars it ran with, and acc counts how many rounds ran on a buffer set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "km_support.h"

#define N 1024

static struct simpler_context_info info_of(struct simpler_context *ctx)
{
    struct simpler_context_info info;
    assert_int_equal(simpler_get_context_info(ctx, &info), 0);
    return info;
}

/* Captures one launch of callable 0 with `a` on `s` and instantiates it. */
static simdev_graph_exec_t capture_one(struct simpler_context *ctx, simdev_stream_t s,
                                       const struct km_args *a, simdev_graph_t *graph)
{
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a->args, s), 0);
    assert_int_equal(simdev_stream_end_capture(s, graph), 0);
    simdev_graph_exec_t exec = NULL;
    assert_int_equal(simdev_graph_instantiate(&exec, *graph), 0);
    return exec;
}

static void graph_free(simdev_graph_exec_t exec, simdev_graph_t graph)
{
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
}

static void replay(simdev_graph_exec_t exec, simdev_stream_t s)
{
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
}

/* The rounds that ran on `b` since its refill, read from acc[1] and y[1]
 * (x_base nonzero: y[1] is not 0), then checked on every element. */
static uint32_t rounds_on(const struct km_bufs *b, float x_base, float mul, float add)
{
    float y1, acc1;
    ts_from_dev(&y1, b->y + 1, sizeof y1);
    ts_from_dev(&acc1, b->acc + 1, sizeof acc1);
    float want_y = pm_x_value(1, x_base) * mul + add;
    if (y1 != want_y && acc1 == 1.0f)
        return 0; /* never ran: y still poison */
    assert_true(y1 == want_y);
    uint32_t rounds = (uint32_t)((acc1 - 1.0f) / y1 + 0.5f);
    assert_true(km_bufs_hold_rounds(b, x_base, mul, add, rounds)); /* a torn or partial round */
    return rounds;
}

/* ------------------------------------------------------------------ tests */

/* Capture on A, replay: A. Update to B: the next replay writes B and leaves
 * A alone; a replay launched before the update (held behind an event)
 * writes A. */
static void test_an_update_rebinds_later_replays_only(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs a_bufs, b_bufs;
    km_opening(&ctx, &s, &a_bufs, km_open(), N, 1.0f);
    km_bufs_alloc(&b_bufs, N, 7.0f);
    struct km_args a, b;
    km_args_make(&a, &a_bufs, 2.0f, 1.0f, 0, 1);
    km_args_make(&b, &b_bufs, -3.0f, 0.5f, 0, 2);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_one(ctx, s, &a, &graph);
    size_t count = 9;
    assert_int_equal(simpler_kernel_mode_graph_launches(ctx, exec, &count), 0);
    assert_int_equal(count, 1); /* 0: the round was not recognised; more: other nodes counted */
    replay(exec, s);
    assert_true(km_bufs_hold(&a_bufs, 1.0f, 2.0f, 1.0f, 1.0f));
    assert_true(km_bufs_untouched(&b_bufs));

    /* A replay launched before the update, held behind a gate. */
    km_bufs_refill(&a_bufs, 1.0f);
    simdev_stream_t held = ts_new_stream();
    simdev_event_t opened = ts_new_event();
    struct ts_gate gate;
    ts_gate_init(&gate);
    ts_launch_gate(held, &gate);
    assert_int_equal(simdev_event_record(opened, held), 0);
    assert_int_equal(simdev_stream_wait_event(s, opened), 0);
    assert_int_equal(simdev_graph_launch(exec, s), 0); /* bound to A */
    struct simpler_context_info before = info_of(ctx);
    assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 0, 0, &b.args), 0);
    struct simpler_context_info updated = info_of(ctx);
    assert_int_equal(updated.packets_encoded, before.packets_encoded + 1); /* one encoding */
    assert_int_equal(updated.host_preparations, before.host_preparations + 1);
    assert_int_equal(simdev_graph_launch(exec, s), 0); /* bound to B */
    ts_gate_open(&gate);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&a_bufs, 1.0f, 2.0f, 1.0f, 1.0f)); /* B's: the held replay took B */
    assert_true(km_bufs_hold(&b_bufs, 7.0f, -3.0f, 0.5f, 1.0f)); /* untouched: the update was lost */

    /* Later replays: B only. */
    km_bufs_refill(&a_bufs, 1.0f);
    km_bufs_refill(&b_bufs, 7.0f);
    replay(exec, s);
    assert_true(km_bufs_untouched(&a_bufs)); /* written: the old binding replayed too */
    assert_true(km_bufs_hold(&b_bufs, 7.0f, -3.0f, 0.5f, 1.0f));
    assert_int_equal(info_of(ctx).packets_encoded, updated.packets_encoded); /* a replay encoded */

    assert_int_equal(simdev_stream_sync(held), 0);
    assert_int_equal(simdev_event_destroy(opened), 0);
    assert_int_equal(simdev_stream_destroy(held), 0);
    ts_gate_destroy(&gate);
    graph_free(exec, graph);
    km_bufs_free(&b_bufs);
    km_closing(ctx, s, &a_bufs);
}

/* 1,000 alternating update/replay pairs: each replay ran on the binding of
 * the update before it (acc counts 500 rounds on each set), each update
 * one packet encoding, each replay none. */
static void test_a_thousand_alternating_updates_and_replays_are_exact(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs a_bufs, b_bufs;
    km_opening(&ctx, &s, &a_bufs, km_open(), N, 1.0f);
    km_bufs_alloc(&b_bufs, N, 2.0f);
    struct km_args a, b;
    km_args_make(&a, &a_bufs, 0.5f, 0.25f, 0, 1);
    km_args_make(&b, &b_bufs, 1.5f, -1.0f, 0, 2);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_one(ctx, s, &a, &graph);
    struct simpler_context_info before = info_of(ctx);
    for (int i = 0; i < 1000; i++) {
        const struct km_args *next = i % 2 ? &a : &b;
        assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 0, 0, &next->args), 0);
        assert_int_equal(simdev_graph_launch(exec, s), 0);
        if (i % 100 == 99)
            assert_int_equal(simdev_stream_sync(s), 0);
    }
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold_rounds(&a_bufs, 1.0f, 0.5f, 0.25f, 500));
    assert_true(km_bufs_hold_rounds(&b_bufs, 2.0f, 1.5f, -1.0f, 500));
    struct simpler_context_info after = info_of(ctx);
    assert_int_equal(after.packets_encoded, before.packets_encoded + 1000); /* replays encoded */
    assert_int_equal(after.host_preparations, before.host_preparations + 1000);
    graph_free(exec, graph);
    km_bufs_free(&b_bufs);
    km_closing(ctx, s, &a_bufs);
}

struct updater {
    struct simpler_context *ctx;
    simdev_graph_exec_t exec;
    const struct km_args *bindings[2];
    int updates;
    atomic_int failed;
};

static void *update_alternately(void *arg)
{
    struct updater *u = arg;
    for (int i = 0; i < u->updates; i++)
        if (simpler_kernel_mode_graph_update(u->ctx, u->exec, 0, 0, &u->bindings[i & 1]->args))
            atomic_fetch_add(&u->failed, 1);
    return NULL;
}

/* One thread updates while another replays: every replay ran one whole
 * binding — the rounds on A and on B add up to the replays, each set
 * exact in every element. */
static void test_replays_racing_updates_run_one_whole_binding_each(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs a_bufs, b_bufs;
    km_opening(&ctx, &s, &a_bufs, km_open(), N, 1.0f);
    km_bufs_alloc(&b_bufs, N, 2.0f);
    struct km_args a, b;
    km_args_make(&a, &a_bufs, 2.0f, 0.5f, 0, 1);
    km_args_make(&b, &b_bufs, 2.0f, 0.5f, 0, 2);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_one(ctx, s, &a, &graph);
    struct updater u = {.ctx = ctx, .exec = exec, .bindings = {&a, &b}, .updates = 300};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, update_alternately, &u), 0);
    for (int i = 0; i < 200; i++) {
        assert_int_equal(simdev_graph_launch(exec, s), 0);
        if (i % 25 == 24)
            assert_int_equal(simdev_stream_sync(s), 0); /* a round refused a torn packet */
    }
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(atomic_load(&u.failed), 0);
    uint32_t on_a = rounds_on(&a_bufs, 1.0f, 2.0f, 0.5f);
    uint32_t on_b = rounds_on(&b_bufs, 2.0f, 2.0f, 0.5f);
    assert_int_equal(on_a + on_b, 200); /* fewer: a replay lost or torn */
    print_message("replays on A %u, on B %u\n", on_a, on_b);
    graph_free(exec, graph);
    km_bufs_free(&b_bufs);
    km_closing(ctx, s, &a_bufs);
}

/* From a prepared call: no packet encoded by the update; the call may be
 * released while the graph replays with its packet. */
static void test_an_update_from_a_prepared_call_encodes_nothing(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs a_bufs, b_bufs;
    km_opening(&ctx, &s, &a_bufs, km_open(), N, 1.0f);
    km_bufs_alloc(&b_bufs, N, 3.0f);
    struct km_args a, b;
    km_args_make(&a, &a_bufs, 2.0f, 1.0f, 0, 1);
    km_args_make(&b, &b_bufs, 0.5f, 2.0f, 0, 2);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_one(ctx, s, &a, &graph);
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, 0, &b.args, NULL, &call), 0);
    struct simpler_context_info prepared = info_of(ctx);
    assert_int_equal(simpler_kernel_mode_graph_update_call(ctx, exec, 0, call), 0);
    assert_int_equal(simpler_release_call(ctx, call), 0);
    for (int r = 0; r < 3; r++) {
        km_bufs_refill(&b_bufs, 3.0f);
        replay(exec, s);
        assert_true(km_bufs_hold(&b_bufs, 3.0f, 0.5f, 2.0f, 1.0f));
    }
    assert_true(km_bufs_untouched(&a_bufs));
    struct simpler_context_info after = info_of(ctx);
    assert_int_equal(after.packets_encoded, prepared.packets_encoded); /* +1: the update encoded */
    assert_int_equal(after.host_preparations, prepared.host_preparations);
    /* A released call is refused, unread. */
    assert_int_equal(simpler_kernel_mode_graph_update_call(ctx, exec, 0, call),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    graph_free(exec, graph);
    km_bufs_free(&b_bufs);
    km_closing(ctx, s, &a_bufs);
}

/* Two rounds in one graph: each is its own launch, updated on its own;
 * graphs without this context's rounds list none. */
static void test_each_recorded_round_is_its_own_launch(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs a_bufs, b_bufs, c_bufs;
    km_opening(&ctx, &s, &a_bufs, km_open(), N, 1.0f);
    km_bufs_alloc(&b_bufs, N, 2.0f);
    km_bufs_alloc(&c_bufs, N, 3.0f);
    struct km_args a, b, c;
    km_args_make(&a, &a_bufs, 1.0f, 1.0f, 0, 1);
    km_args_make(&b, &b_bufs, 1.0f, 2.0f, 0, 2);
    km_args_make(&c, &c_bufs, 1.0f, 3.0f, 0, 3);
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &b.args, s), 0);
    simdev_graph_t graph;
    assert_int_equal(simdev_stream_end_capture(s, &graph), 0);
    simdev_graph_exec_t exec;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    size_t count = 0;
    assert_int_equal(simpler_kernel_mode_graph_launches(ctx, exec, &count), 0);
    assert_int_equal(count, 2);
    assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 1, 0, &c.args), 0); /* b -> c */
    replay(exec, s);
    assert_true(km_bufs_hold(&a_bufs, 1.0f, 1.0f, 1.0f, 1.0f)); /* launch 0 kept its binding */
    assert_true(km_bufs_untouched(&b_bufs));
    assert_true(km_bufs_hold(&c_bufs, 3.0f, 1.0f, 3.0f, 1.0f));
    /* A graph of other work only. */
    void *dev = ts_dev_alloc(64);
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simdev_memset_async(dev, 0, 64, s), 0);
    simdev_graph_t other;
    assert_int_equal(simdev_stream_end_capture(s, &other), 0);
    simdev_graph_exec_t other_exec;
    assert_int_equal(simdev_graph_instantiate(&other_exec, other), 0);
    count = 5;
    assert_int_equal(simpler_kernel_mode_graph_launches(ctx, other_exec, &count), 0);
    assert_int_equal(count, 0);
    assert_int_equal(simpler_kernel_mode_graph_update(ctx, other_exec, 0, 0, &a.args),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    graph_free(other_exec, other);
    assert_int_equal(simdev_free(dev), 0);
    graph_free(exec, graph);
    km_bufs_free(&b_bufs);
    km_bufs_free(&c_bufs);
    km_closing(ctx, s, &a_bufs);
}

/* Every refusal, each changing nothing: the next replay runs the binding
 * before, and no packet was counted. */
static void test_refused_updates_change_nothing(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs a_bufs, b_bufs;
    km_opening(&ctx, &s, &a_bufs, km_open(), N, 1.0f);
    km_bufs_alloc(&b_bufs, N, 2.0f);
    /* The same image again: another callable with the same signature. */
    size_t bytes;
    void *image = pm_image(&bytes);
    int32_t twin = -1;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &twin), 0);
    simpler_callable_free(image);
    assert_int_equal(twin, 1);
    struct km_args a, b;
    km_args_make(&a, &a_bufs, 2.0f, 1.0f, 0, 1);
    km_args_make(&b, &b_bufs, 2.0f, 1.0f, 0, 2);
    simdev_graph_t graph;
    simdev_graph_exec_t exec = capture_one(ctx, s, &a, &graph);
    struct simpler_context_info before = info_of(ctx);

    assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 0, twin, &b.args),
                     PTO_RUNTIME_ERR_PREPARED_INCOMPATIBLE); /* another callable */
    struct km_args fewer = b;
    fewer.args.tensors = fewer.t;
    fewer.args.scalars = fewer.s;
    fewer.args.scalar_count = 2;
    assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 0, 0, &fewer.args),
                     PTO_RUNTIME_ERR_PREPARED_INCOMPATIBLE); /* other counts */
    assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 1, 0, &b.args),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* one launch only */
    struct km_args host = b;
    host.args.tensors = host.t;
    host.args.scalars = host.s;
    float local[4];
    assert_int_equal(simpler_tensor_make_1d(&host.t[0], (uint64_t)(uintptr_t)local, 4,
                                            SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST),
                     0);
    assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 0, 0, &host.args),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* what launch refuses */
    assert_int_equal(simpler_kernel_mode_graph_update(NULL, exec, 0, 0, &b.args),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_kernel_mode_graph_update(ctx, NULL, 0, 0, &b.args),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 0, -1, &b.args),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* Every host allocation simdev makes for an update, failed in turn:
     * the packet it had encoded is not counted. */
    uint64_t allocs_before, allocs_after;
    assert_int_equal(simdev_host_alloc_count(&allocs_before), 0);
    assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 0, 0, &a.args), 0); /* A again */
    assert_int_equal(simdev_host_alloc_count(&allocs_after), 0);
    /* The op holder, the op, the new set; under host_build_graph the same
     * three again for the image's staged copy, rebuilt for the new
     * arguments (a failure there puts the packet back). */
    assert_int_equal(allocs_after - allocs_before, ts_runtime_hbg() ? 6 : 3);
    before = info_of(ctx);
    for (uint64_t nth = 1; nth <= allocs_after - allocs_before; nth++) {
        assert_int_equal(simdev_fault_inject_host(nth), 0);
        assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 0, 0, &b.args),
                         PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
        assert_int_equal(simdev_fault_clear(0), 0);
    }
    struct simpler_prepared_call *twin_call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, twin, &b.args, NULL, &twin_call), 0);
    assert_int_equal(simpler_kernel_mode_graph_update_call(ctx, exec, 0, twin_call),
                     PTO_RUNTIME_ERR_PREPARED_INCOMPATIBLE);
    assert_int_equal(simpler_release_call(ctx, twin_call), 0);
    struct simpler_context_info refused = info_of(ctx);
    assert_int_equal(refused.packets_encoded, before.packets_encoded + 1); /* the twin's prepare */
    assert_int_equal(refused.host_preparations, before.host_preparations + 1);
    replay(exec, s);
    assert_true(km_bufs_hold(&a_bufs, 1.0f, 2.0f, 1.0f, 1.0f)); /* a refusal rebound it */
    assert_true(km_bufs_untouched(&b_bufs));

    /* After close: refused, and the graph's replays are refused by the
     * device (the context generation is gone). */
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 0, 0, &b.args),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    size_t count;
    assert_int_equal(simpler_kernel_mode_graph_launches(ctx, exec, &count),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    graph_free(exec, graph);
    km_bufs_free(&b_bufs);
    km_bufs_free(&a_bufs);
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_update_rebinds_later_replays_only),
        cmocka_unit_test(test_a_thousand_alternating_updates_and_replays_are_exact),
        cmocka_unit_test(test_replays_racing_updates_run_one_whole_binding_each),
        cmocka_unit_test(test_an_update_from_a_prepared_call_encodes_nothing),
        cmocka_unit_test(test_each_recorded_round_is_its_own_launch),
        cmocka_unit_test(test_refused_updates_change_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, ts_device_teardown);
}
