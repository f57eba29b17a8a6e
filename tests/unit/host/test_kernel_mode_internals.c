/*
 * test_kernel_mode_internals.c — kernel mode checked from inside the host:
 * packets the device must refuse, built by hand and launched on the
 * context's own chain; one packet per launch of four threads at once; the
 * packet and resolve counters of refused calls; every host allocation of
 * each step (simpler's sp_host_* and simdev's) failed in turn.
 *
 * The callable is pm_support's (y = x * mul + add, then acc += y), as in
 * tests/scenario/test_kernel_mode.c, which checks the rest through the
 * public API. Buffers are simdev allocations freed at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "common/packet.h"
#include "simpler/simpler.h"
#include "host/context.h"
#include "host/kernel_mode.h"
#include "host/residency.h"
#include "pm_support.h"
#include "launch/launch.h"
#include "simpler/simdev_fault.h"

#include "km_support.h"

/* ----------------------------------------------------- refused packets */

/* A packet the device refuses: one naming a context generation that is not
 * live (a closed context), and a corrupt one naming a live context. Built
 * with the runtime's own launch on the context's chain (white-box). */
static void test_the_device_refuses_stale_and_corrupt_packets_without_following_them(
    void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 1024, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    unsigned char packet[SP_PACKET_MAX_BYTES];
    size_t bytes;
    struct sp_kernel_mode *k = &ctx->kernel;
    struct rt_config config;
    rt_config_from_public(&ctx->callables[0]->config, &config);

    /* A generation no live context has; its arena pointer is bogus on
     * purpose: following it would crash (ASan: wild access). */
    uint64_t stale = k->generation + 1000;
    assert_int_equal(sp_packet_encode(packet, sizeof packet, 0, stale,
                                      ctx->callables[0]->slot_generation, &a.args, &bytes),
                     0);
    struct rt_kernel_mode_target bogus = {stale, (void *)(uintptr_t)0x10, 1 << 20, k->schedulers};
    assert_int_equal(rt_kernel_mode_launch(&rt_launch_simdev_ops, &k->chain, s, &bogus, &config,
                                      ++k->next_round, packet, bytes, NULL, NULL),
                     0);
    assert_int_equal(simdev_stream_sync(s), -SIMPLER_ORCH_ERR_STALE_BINDING);

    /* A live context, a slot generation it never minted. */
    assert_int_equal(sp_packet_encode(packet, sizeof packet, 0, k->generation,
                                      ctx->callables[0]->slot_generation + 1, &a.args, &bytes),
                     0);
    struct rt_kernel_mode_target live = {k->generation, ctx->arena, ctx->arena_bytes, k->schedulers};
    assert_int_equal(rt_kernel_mode_launch(&rt_launch_simdev_ops, &k->chain, s, &live, &config,
                                      ++k->next_round, packet, bytes, NULL, NULL),
                     0);
    assert_int_equal(simdev_stream_sync(s), -SIMPLER_ORCH_ERR_STALE_BINDING);

    /* A live context, a truncated packet. */
    assert_int_equal(sp_packet_encode(packet, sizeof packet, 0, k->generation,
                                      ctx->callables[0]->slot_generation, &a.args, &bytes),
                     0);
    assert_int_equal(rt_kernel_mode_launch(&rt_launch_simdev_ops, &k->chain, s, &live, &config,
                                      ++k->next_round, packet, bytes - 8, NULL, NULL),
                     0);
    assert_int_equal(simdev_stream_sync(s), -SIMPLER_ORCH_ERR_BAD_PACKET);
    assert_true(km_bufs_untouched(&b)); /* no refused round ran a task */

    /* And the context still works. */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f));
    km_closing(ctx, s, &b);
}

/* ---------------------------------------------------------------- overlap */

#define OV_THREADS 4
#define OV_LAUNCHES 200
#define OV_STREAMS 3
#define OV_N 256

struct overlap {
    struct simpler_context *ctx;
    simdev_stream_t streams[OV_STREAMS];
    struct km_bufs bufs[OV_THREADS][OV_LAUNCHES];
    int failures[OV_THREADS];
    int thread;
};

static struct overlap *ov;

static void *overlap_thread(void *arg)
{
    int t = (int)(intptr_t)arg;
    simdev_set_device(0); /* the caller's current device */
    for (int i = 0; i < OV_LAUNCHES; i++) {
        struct km_args a;
        km_args_make(&a, &ov->bufs[t][i], (float)(t + 1), (float)i, 0, (uint64_t)(t * 1000 + i));
        if (simpler_kernel_mode_launch(ov->ctx, 0, &a.args, ov->streams[(t + i) % OV_STREAMS]))
            ov->failures[t]++;
    }
    return NULL;
}

static void test_four_threads_launching_on_three_streams_each_run_exactly_once(void **state)
{
    (void)state;
    ov = calloc(1, sizeof *ov);
    ov->ctx = km_open();
    for (int i = 0; i < OV_STREAMS; i++)
        ov->streams[i] = ts_new_stream();
    for (int t = 0; t < OV_THREADS; t++)
        for (int i = 0; i < OV_LAUNCHES; i++)
            km_bufs_alloc(&ov->bufs[t][i], OV_N, (float)(i % 5));
    pthread_t th[OV_THREADS];
    for (int t = 0; t < OV_THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, overlap_thread, (void *)(intptr_t)t), 0);
    for (int t = 0; t < OV_THREADS; t++)
        pthread_join(th[t], NULL);
    for (int i = 0; i < OV_STREAMS; i++)
        assert_int_equal(simdev_stream_sync(ov->streams[i]), 0);
    int wrong = 0;
    for (int t = 0; t < OV_THREADS; t++) {
        assert_int_equal(ov->failures[t], 0); /* a launch was refused */
        for (int i = 0; i < OV_LAUNCHES; i++)
            wrong += !km_bufs_hold(&ov->bufs[t][i], (float)(i % 5), (float)(t + 1), (float)i, 1.0f);
    }
    /* Nonzero: a round ran twice (acc doubled), never, or on another's args. */
    assert_int_equal(wrong, 0);
    uint64_t packets, resolved;
    sp_test_kernel_counters(ov->ctx, &packets, &resolved);
    assert_int_equal(packets, OV_THREADS * OV_LAUNCHES); /* one packet per launch */
    for (int t = 0; t < OV_THREADS; t++)
        for (int i = 0; i < OV_LAUNCHES; i++)
            km_bufs_free(&ov->bufs[t][i]);
    for (int i = 0; i < OV_STREAMS; i++)
        assert_int_equal(simdev_stream_destroy(ov->streams[i]), 0);
    pm_close(ov->ctx);
    free(ov);
}

/* ------------------------------------------------------ argument checks */

static void test_bad_arguments_and_states_are_refused_and_change_nothing(void **state)
{
    (void)state;
    struct simpler_config cfg = km_config();
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_kernel_mode_init(NULL, 0, &cfg, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    struct simpler_config bad = cfg;
    bad.max_callables = 0;
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &bad, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_kernel_mode_init(ctx, -1, &cfg, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* Not the calling thread's current device: refused, checked read only. */
    assert_int_equal(simpler_kernel_mode_init(ctx, 1, &cfg, 0), PTO_RUNTIME_ERR_INVALID_STATE);
    int current = -1;
    assert_int_equal(simdev_get_device(&current), 0);
    assert_int_equal(current, 0); /* 1: init switched the caller's device */
    assert_int_equal(simpler_committed_device_memory(ctx), 0); /* nothing was created */
    /* The refusals latched nothing: the context can still be either. */
    assert_int_equal(simpler_kernel_mode_supported(ctx), 1);
    cfg.max_callables = 2;
    cfg.callable_bytes = 1 << 20;
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), 0);

    size_t bytes;
    void *image = pm_image(&bytes);
    int32_t id = 7;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, NULL, bytes, &id),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(id, -1);
    id = 7;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes - 8, &id),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(id, -1);
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* The same image twice: two ids, in order. */
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id), 0);
    assert_int_equal(id, 0);
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id), 0);
    assert_int_equal(id, 1);
    id = 7;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id),
                     PTO_RUNTIME_ERR_CALLABLE_COUNT_EXCEEDED);
    assert_int_equal(id, -1);

    simdev_stream_t s = ts_new_stream();
    struct km_bufs b;
    km_bufs_alloc(&b, 1024, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, NULL, s), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, NULL),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_kernel_mode_launch(ctx, -1, &a.args, s),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 2, &a.args, s),
                     PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT); /* never minted */
    struct km_args wrong = a;
    wrong.args.scalar_count = 4; /* the signature has 5 */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &wrong.args, s),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    wrong = a;
    wrong.args.tensors = wrong.t;
    wrong.t[0].address_space = SIMPLER_MEM_HOST; /* no staging in kernel mode */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &wrong.args, s),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    wrong = a;
    wrong.args.tensors = wrong.t;
    wrong.t[1].start_offset = b.n; /* one past the end */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &wrong.args, s),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    /* Not on the context's device. */
    assert_int_equal(simdev_set_device(1), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simdev_set_device(0), 0);
    /* Nothing of the refused launches was enqueued. */
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_untouched(&b));
    uint64_t packets, resolved;
    sp_test_kernel_counters(ctx, &packets, &resolved);
    assert_int_equal(packets, 0);
    assert_int_equal(resolved, 2);

    assert_int_equal(simpler_finalize_device(ctx), 0);
    /* Closed: everything refuses; a second finalize is a no-op success. */
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_finalize_device(ctx), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_committed_device_memory(ctx), 0);
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
    km_bufs_free(&b);
    assert_int_equal(simdev_stream_destroy(s), 0);
    simpler_callable_free(image);
}

/* ------------------------------------------------- the launch's vocabulary */

/* Calls of each entry of the launch's ops table, counted by wrappers around
 * simdev's. */
enum op_entry { E_RECORD, E_HANDOFF, E_WAIT, E_AICPU, E_AICORE, E_ACQUIRE, E_RELEASE, E_MEMSET,
                E_MEMCPY, E_CAPTURE_INFO, E_ENTRIES };
static atomic_int entry_calls[E_ENTRIES];

static int count_record(simdev_event_t e, simdev_stream_t s)
{
    atomic_fetch_add(&entry_calls[E_RECORD], 1);
    return rt_launch_simdev_ops.record(e, s);
}
static int count_handoff(simdev_event_t e, simdev_stream_t s)
{
    atomic_fetch_add(&entry_calls[E_HANDOFF], 1);
    return rt_launch_simdev_ops.record_handoff(e, s);
}
static int count_wait(simdev_stream_t s, simdev_event_t e)
{
    atomic_fetch_add(&entry_calls[E_WAIT], 1);
    return rt_launch_simdev_ops.wait(s, e);
}
static int count_aicpu(simdev_stream_t s, simdev_aicpu_fn fn, uint32_t threads, const void *args,
                       size_t bytes)
{
    atomic_fetch_add(&entry_calls[E_AICPU], 1);
    return rt_launch_simdev_ops.launch_aicpu(s, fn, threads, args, bytes);
}
static int count_aicore(simdev_stream_t s, simdev_aicore_fn fn, const void *args, size_t bytes)
{
    atomic_fetch_add(&entry_calls[E_AICORE], 1);
    return rt_launch_simdev_ops.launch_aicore(s, fn, args, bytes);
}
static int count_acquire(simdev_stream_t s, simdev_sem_t gate)
{
    atomic_fetch_add(&entry_calls[E_ACQUIRE], 1);
    return rt_launch_simdev_ops.gate_acquire(s, gate);
}
static int count_release(simdev_stream_t s, simdev_sem_t gate)
{
    atomic_fetch_add(&entry_calls[E_RELEASE], 1);
    return rt_launch_simdev_ops.gate_release(s, gate);
}
static int count_memset(void *dev, int value, size_t bytes, simdev_stream_t s)
{
    atomic_fetch_add(&entry_calls[E_MEMSET], 1);
    return rt_launch_simdev_ops.memset_async(dev, value, bytes, s);
}
/* host_build_graph's image: a staged copy, so a capture records the bytes */
static enum simdev_copy_kind memcpy_kind;
static int count_memcpy(void *dst, const void *src, size_t bytes, enum simdev_copy_kind kind,
                        simdev_stream_t s)
{
    atomic_fetch_add(&entry_calls[E_MEMCPY], 1);
    memcpy_kind = kind;
    return rt_launch_simdev_ops.memcpy_async(dst, src, bytes, kind, s);
}
static int count_capture_info(simdev_stream_t s, int *capturing, uint64_t *id)
{
    atomic_fetch_add(&entry_calls[E_CAPTURE_INFO], 1);
    return rt_launch_simdev_ops.capture_info(s, capturing, id);
}

static const struct rt_launch_ops counting_ops = {
    .record = count_record,
    .record_handoff = count_handoff,
    .wait = count_wait,
    .launch_aicpu = count_aicpu,
    .launch_aicore = count_aicore,
    .gate_acquire = count_acquire,
    .gate_release = count_release,
    .memset_async = count_memset,
    .memcpy_async = count_memcpy,
    .capture_info = count_capture_info,
};

static void entries_reset(void)
{
    for (int i = 0; i < E_ENTRIES; i++)
        atomic_store(&entry_calls[i], 0);
}

/* What one launch calls of its ops table, every entry counted, eagerly and
 * into a capture: the chain's 15 enqueues and the capture question (of the
 * caller's stream, then, in a capture, of the capture pairs it looks at). */
static void test_a_launch_calls_exactly_these_entries_of_its_ops_table(void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 1024, 0.0f);
    struct km_args a;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    sp_test_kernel_set_launch_ops(ctx, &counting_ops);
    int eager[E_ENTRIES], captured[E_ENTRIES];
    entries_reset();
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    for (int i = 0; i < E_ENTRIES; i++)
        eager[i] = atomic_load(&entry_calls[i]);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(km_bufs_hold(&b, 0.0f, 2.0f, 0.5f, 1.0f));
    entries_reset();
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 0, &a.args, s), 0);
    for (int i = 0; i < E_ENTRIES; i++)
        captured[i] = atomic_load(&entry_calls[i]);
    simdev_graph_t graph;
    assert_int_equal(simdev_stream_end_capture(s, &graph), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    sp_test_kernel_set_launch_ops(ctx, NULL);
    for (int pass = 0; pass < 2; pass++) {
        const int *n = pass ? captured : eager;
        /* start, aicore_start, serial_tail; aicore_done and aicpu_done hand off */
        assert_int_equal(n[E_RECORD], 3);
        assert_int_equal(n[E_HANDOFF], 2);
        assert_int_equal(n[E_WAIT], 4);    /* start, aicore_start, aicore_done, aicpu_done */
        assert_int_equal(n[E_AICPU], 3);   /* round begin, program, status op */
        assert_int_equal(n[E_AICORE], 1);  /* the core loop */
        assert_int_equal(n[E_ACQUIRE], 1); /* the round gate */
        assert_int_equal(n[E_RELEASE], 1);
        assert_int_equal(n[E_MEMSET], 0);  /* program mode's rendezvous only */
        /* host_build_graph's image, staged (the launch returns at once, and
         * a capture must record the bytes, not a pointer to the bank the
         * next launch rebuilds); none under TMR */
        assert_int_equal(n[E_MEMCPY], ts_runtime_hbg() ? 1 : 0);
        if (ts_runtime_hbg())
            assert_int_equal(memcpy_kind, SIMDEV_COPY_HOST_TO_DEVICE_STAGED);
    }
    /* Eager: the caller's stream asked once. In a capture: the caller's,
     * the first pair's AICPU and AICore streams (free: taken unless the
     * capture already holds another), then the AICPU stream of each of the
     * other 3 pairs (none holds this capture). */
    assert_int_equal(eager[E_CAPTURE_INFO], 1);
    assert_int_equal(captured[E_CAPTURE_INFO], 1 + 2 + 3);
    km_closing(ctx, s, &b);
}

/* ------------------------------------------------- regressions from review */

/* Host allocations: simpler's own (sp_host_*) and simdev's, each failed
 * in turn in every step. */
enum km_step { KM_INIT, KM_PREPARE, KM_LAUNCH, KM_FINALIZE, KM_STEPS };
static const char *const step_names[KM_STEPS] = {"init", "prepare", "launch", "finalize"};

struct km_fixture {
    struct simpler_context *ctx;
    simdev_stream_t stream;
    struct km_bufs bufs;
    struct km_args args;
    void *image;
    size_t image_bytes;
};

/* Sets up what `step` needs, runs nothing of it. */
static void fixture_open(struct km_fixture *f, enum km_step step)
{
    memset(f, 0, sizeof *f);
    f->image = pm_image(&f->image_bytes);
    f->stream = ts_new_stream();
    km_bufs_alloc(&f->bufs, 1024, 0.0f);
    km_args_make(&f->args, &f->bufs, 2.0f, 0.5f, 0, 1);
    if (step == KM_INIT) {
        assert_int_equal(simpler_create_device_context(&f->ctx), 0);
        return;
    }
    if (step == KM_PREPARE) {
        struct simpler_config cfg = km_config();
        assert_int_equal(simpler_create_device_context(&f->ctx), 0);
        assert_int_equal(simpler_kernel_mode_init(f->ctx, 0, &cfg, 0), 0);
        return;
    }
    f->ctx = km_open();
}

static int fixture_step(struct km_fixture *f, enum km_step step)
{
    struct simpler_config cfg = km_config();
    int32_t id;
    switch (step) {
    case KM_INIT:
        return simpler_kernel_mode_init(f->ctx, 0, &cfg, 0);
    case KM_PREPARE:
        return simpler_kernel_mode_prepare_callable(f->ctx, f->image, f->image_bytes, &id);
    case KM_LAUNCH: {
        int rc = simpler_kernel_mode_launch(f->ctx, 0, &f->args.args, f->stream);
        int round = simdev_stream_sync(f->stream);
        return rc ? rc : round;
    }
    default:
        return simpler_finalize_device(f->ctx);
    }
}

static void fixture_close(struct km_fixture *f, enum km_step step, bool step_done)
{
    if (!(step == KM_FINALIZE && step_done))
        assert_int_equal(simpler_finalize_device(f->ctx), 0);
    assert_int_equal(simpler_committed_device_memory(f->ctx), 0);
    assert_int_equal(simpler_destroy_device_context(f->ctx), 0);
    km_bufs_free(&f->bufs);
    assert_int_equal(simdev_stream_destroy(f->stream), 0);
    simpler_callable_free(f->image);
}

/* Host allocations so far: simpler's own (source 0) or simdev's (1). */
static uint64_t host_allocs(int source)
{
    uint64_t n = sp_host_alloc_count();
    if (source)
        assert_int_equal(simdev_host_alloc_count(&n), 0);
    return n;
}

static void test_every_host_allocation_of_each_step_fails_cleanly_and_a_retry_works(
    void **state)
{
    (void)state;
    uint64_t failed = 0;
    for (int step = 0; step < KM_STEPS; step++) {
        for (int source = 0; source < 2; source++) {
            struct km_fixture f;
            fixture_open(&f, (enum km_step)step);
            uint64_t before = host_allocs(source);
            assert_int_equal(fixture_step(&f, (enum km_step)step), 0);
            uint64_t after = host_allocs(source);
            fixture_close(&f, (enum km_step)step, true);
            for (uint64_t nth = 1; nth <= after - before; nth++) {
                fixture_open(&f, (enum km_step)step);
                if (source)
                    assert_int_equal(simdev_fault_inject_host(nth), 0);
                else
                    sp_host_fault_inject(nth);
                int rc = fixture_step(&f, (enum km_step)step);
                sp_host_fault_inject(0);
                assert_int_equal(simdev_fault_clear(0), 0);
                /* The allocation failure itself, or for a round whose core
                 * loop could not start, its scheduler's timeout; 0 only where
                 * the failure was absorbed: a drain's failed sync, or an
                 * enqueue after a launch committed (tried again). */
                if (rc != PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY &&
                    !(step == KM_LAUNCH && rc == -SIMPLER_SCHED_ERR_TIMEOUT) &&
                    !((step == KM_LAUNCH || step == KM_FINALIZE) && rc == 0))
                    fail_msg("%s, %s host allocation #%llu: returned %d", step_names[step],
                             source ? "simdev" : "simpler", (unsigned long long)nth, rc);
                failed += rc != 0;
                bool done = rc == 0;
                if (done && step == KM_LAUNCH)
                    assert_true(km_bufs_hold(&f.bufs, 0.0f, 2.0f, 0.5f, 1.0f)); /* ran once */
                if (!done) {
                    /* The retry works, and a launch computes exactly. */
                    assert_int_equal(fixture_step(&f, (enum km_step)step), 0);
                    done = true;
                    if (step == KM_LAUNCH)
                        assert_true(km_bufs_hold_either(&f.bufs, 2.0f, 0.5f));
                }
                fixture_close(&f, (enum km_step)step, done);
            }
        }
    }
    /* 0: no allocation of any step was ever failed, the sweep tested nothing. */
    assert_true(failed > 0);
    print_message("host allocations failed: %llu\n", (unsigned long long)failed);
}

/* host_build_graph: a kernel context builds a round's graph on the host
 * for each launch and each graph update that takes, and never for a
 * replay, which copies the captured image in again (whatever
 * SIMPLER_RUNTIME says: the config asks for it, and the environment
 * overrides only with hbg or tmr). */
static void test_host_builds_count_launches_and_updates_never_replays(void **state)
{
    (void)state;
    const char *env = getenv("SIMPLER_RUNTIME");
    if (env && strcmp(env, "tmr") == 0)
        skip(); /* the environment overrides the config with TMR */
    struct simpler_config cfg = km_config();
    cfg.runtime = SIMPLER_RUNTIME_HBG;
    struct simpler_context *ctx = km_open_with(&cfg);
    const int32_t id = 0;
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b, b2;
    km_bufs_alloc(&b, 1024, 0.0f);
    km_bufs_alloc(&b2, 1024, 0.0f);
    struct km_args a, a2;
    km_args_make(&a, &b, 2.0f, 0.5f, 0, 1);
    km_args_make(&a2, &b2, 2.0f, 0.5f, 0, 2);
    assert_int_equal(sp_test_kernel_host_builds(ctx), 0); /* a prepare builds nothing */
    for (int i = 0; i < 3; i++)
        assert_int_equal(simpler_kernel_mode_launch(ctx, id, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(sp_test_kernel_host_builds(ctx), 3); /* one a launch */
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simpler_kernel_mode_launch(ctx, id, &a.args, s), 0);
    simdev_graph_t graph;
    assert_int_equal(simdev_stream_end_capture(s, &graph), 0);
    simdev_graph_exec_t exec;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    assert_int_equal(sp_test_kernel_host_builds(ctx), 4); /* a captured launch builds too */
    for (int i = 0; i < 5; i++)
        assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(sp_test_kernel_host_builds(ctx), 4); /* 9: a replay built again */
    assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 0, id, &a2.args), 0);
    assert_int_equal(sp_test_kernel_host_builds(ctx), 5); /* the update rebuilt the image */
    assert_int_equal(simpler_kernel_mode_graph_update(ctx, exec, 1, id, &a2.args),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* one round only */
    assert_int_equal(sp_test_kernel_host_builds(ctx), 5); /* a refused update counts nothing */
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    /* b: 3 eager rounds and 5 replays; b2: the one replay after the update */
    assert_true(km_bufs_hold_rounds(&b, 0.0f, 2.0f, 0.5f, 8));
    assert_true(km_bufs_hold_rounds(&b2, 0.0f, 2.0f, 0.5f, 1));
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);

    /* A prepared call keeps its first image; its later launches and an
     * update from it ship the kept image, stamped for their round. Keeping
     * is the launch's one host allocation of simpler's: failed, the launch
     * is refused whole (nothing enqueued, nothing kept) and the next one
     * builds and keeps. */
    km_bufs_refill(&b, 0.0f);
    km_bufs_refill(&b2, 0.0f);
    struct simpler_prepared_call *call, *call2;
    assert_int_equal(simpler_prepare_call(ctx, id, &a.args, NULL, &call), 0);
    assert_int_equal(simpler_prepare_call(ctx, id, &a2.args, NULL, &call2), 0);
    struct simpler_context_info info;
    assert_int_equal(simpler_get_context_info(ctx, &info), 0);
    uint64_t builds = info.host_builds, skipped = info.host_builds_skipped;
    assert_int_equal(builds, 5); /* the kernel counter's, reported publicly */
    sp_host_fault_inject(1);
    int rc = simpler_kernel_mode_launch_call(ctx, call, s);
    sp_host_fault_inject(0);
    assert_int_equal(rc, PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
    for (int i = 0; i < 4; i++)
        assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, s), 0);
    assert_int_equal(simdev_stream_begin_capture(s), 0);
    assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, s), 0);
    assert_int_equal(simdev_stream_end_capture(s, &graph), 0);
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    assert_int_equal(simpler_kernel_mode_graph_update_call(ctx, exec, 0, call2), 0);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simpler_kernel_mode_graph_update_call(ctx, exec, 0, call2), 0);
    assert_int_equal(simdev_graph_launch(exec, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_int_equal(simpler_get_context_info(ctx, &info), 0);
    /* call: its first launch builds (the refused one built too, but kept
     * and counted nothing), the other 3 and the captured one skip; call2:
     * its first update builds, the second skips */
    assert_int_equal(info.host_builds - builds, 2);
    assert_int_equal(info.host_builds_skipped - skipped, 5);
    /* b: 4 eager rounds (the refused launch ran none); b2: the two replays
     * after the updates (the captured launch ran nothing) */
    assert_true(km_bufs_hold_rounds(&b, 0.0f, 2.0f, 0.5f, 4));
    assert_true(km_bufs_hold_rounds(&b2, 0.0f, 2.0f, 0.5f, 2));
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);
    assert_int_equal(simpler_release_call(ctx, call), 0); /* frees its kept image (ASan) */
    assert_int_equal(simpler_release_call(ctx, call2), 0);
    km_bufs_free(&b2);
    km_closing(ctx, s, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(test_the_device_refuses_stale_and_corrupt_packets_without_following_them),
        SIMPLER_TEST(test_four_threads_launching_on_three_streams_each_run_exactly_once),
        SIMPLER_TEST(test_a_launch_calls_exactly_these_entries_of_its_ops_table),
        SIMPLER_TEST(test_bad_arguments_and_states_are_refused_and_change_nothing),
        SIMPLER_TEST(test_every_host_allocation_of_each_step_fails_cleanly_and_a_retry_works),
        SIMPLER_TEST(test_host_builds_count_launches_and_updates_never_replays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
