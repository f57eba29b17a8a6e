/*
 * test_kernel_mode_refusals.c — every refusal kernel mode documents,
 * reached through simpler.h with its exact code, and nothing changed by it;
 * rounds on three devices at once; one image held by a kernel context and
 * a program context, one let go and the other run.
 *
 * "Nothing changed" is, each time: the context's committed device memory
 * and the device's bytes in use, the context's counters (packets encoded,
 * host preparations, prepared calls), the id the next successful prepare
 * mints, and a launch after the refusal computing exactly. The callable is
 * pm_support's (y = x * mul + add, then acc += y) unless a case needs
 * another image, built here from the same exported kernels. Device work
 * never points into a test's stack frame except synchronous copies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/simpler.h"
#include "simpler/simdev_fault.h"

#include "km_support.h"
#include "pm_support.h"

#define INJECTED (-991)

/* Exported for the images below (symbol form: the loader finds them in
 * this program). */
void rf_config_wide_window(struct simpler_run_config *config);
void rf_orchestration_axpb(struct simpler_orch *rt, const struct simpler_orch_args *args);

/* A config function asking for a task window far past the small capacity
 * the contexts here commit (64 slots): its arena does not fit. */
void rf_config_wide_window(struct simpler_run_config *config)
{
    config->task_window[0] = 1u << 16;
}

/* pm's signature, one task: y = x * mul + add (func 0), acc left alone. */
void rf_orchestration_axpb(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    pm_submit_axpb(rt, args);
}

/* An image with pm's signature: orchestration `orch`, config function
 * `config` (NULL: none), pm's kernels 0 and, when `both_kernels`, 1. */
static void *image_of(const char *orch, const char *config, bool both_kernels, size_t *bytes)
{
    return pm_image_of(orch, config, pm_signature, PM_SIGNATURE, both_kernels ? 2 : 1, bytes);
}

/* ------------------------------------------------------- nothing changed */

static uint64_t device_in_use(int device)
{
    struct simdev_mem_info info;
    assert_int_equal(simdev_mem_get_info(device, &info), 0);
    return info.in_use;
}

/* What a refused call must leave as it was. */
struct rf_before {
    size_t committed;
    uint64_t in_use;
    struct simpler_context_info info;
};

static struct rf_before before_of(const struct simpler_context *ctx, int device)
{
    struct rf_before b;
    b.committed = simpler_committed_device_memory(ctx);
    b.in_use = device_in_use(device);
    assert_int_equal(simpler_get_context_info(ctx, &b.info), 0);
    return b;
}

static void assert_nothing_changed(const struct simpler_context *ctx, int device,
                                   const struct rf_before *before)
{
    struct rf_before now = before_of(ctx, device);
    /* more: the refused call kept device memory it allocated (an image, a
     * loader record, a stream's or the arena's) */
    assert_int_equal(now.committed, before->committed);
    /* more: memory left on the device that the context does not count */
    assert_int_equal(now.in_use, before->in_use);
    /* +1: the refusal encoded a packet or counted a preparation */
    assert_int_equal(now.info.packets_encoded, before->info.packets_encoded);
    assert_int_equal(now.info.host_preparations, before->info.host_preparations);
    assert_int_equal(now.info.prepared_calls, before->info.prepared_calls);
}

/* One round of `id` over b, refilled first (x based at x_base, acc 1, y
 * poison), synced and checked exactly. */
static void launch_exact(struct simpler_context *ctx, int32_t id, simdev_stream_t s,
                         const struct km_bufs *b, float x_base, float mul, float add)
{
    km_bufs_refill(b, x_base);
    struct km_args a;
    km_args_make(&a, b, mul, add, 0, 1);
    assert_int_equal(simpler_kernel_mode_launch(ctx, id, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0); /* else the round failed */
    /* false: the context no longer computes what it did before the refusal */
    assert_true(km_bufs_hold(b, x_base, mul, add, 1.0f));
}

/* A kernel context on the current device `device` with config `cfg`. */
static struct simpler_context *open_kernel(int device, const struct simpler_config *cfg)
{
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_kernel_mode_init(ctx, device, cfg, 0), 0);
    return ctx;
}

/* Prepares `image` and returns the id minted. */
static int32_t prepare(struct simpler_context *ctx, const void *image, size_t bytes)
{
    int32_t id = -7;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, image, bytes, &id), 0);
    return id;
}

/* An uninitialised context after a refused init: it holds nothing, counted
 * nothing, and closing it has nothing to close. */
static void assert_init_left_nothing(struct simpler_context *ctx, uint64_t in_use)
{
    assert_int_equal(simpler_committed_device_memory(ctx), 0); /* else init kept memory */
    assert_int_equal(device_in_use(0), in_use); /* else memory the context does not count */
    struct simpler_context_info info;
    assert_int_equal(simpler_get_context_info(ctx, &info), 0);
    assert_int_equal(info.packets_encoded, 0);
    assert_int_equal(info.host_preparations, 0);
    /* 0: a refused init left the context initialised */
    assert_int_equal(simpler_finalize_device(ctx), PTO_RUNTIME_ERR_INVALID_STATE);
}

/* The ending of the init refusals: `ctx`, refused before, initialised on
 * the (now capable) device 0 with `cfg`, mints id 0 and computes exactly. */
static void init_retry_works(struct simpler_context *ctx, const struct simpler_config *cfg)
{
    /* else the refusal left the context unable to initialise */
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, cfg, 0), 0);
    size_t bytes;
    void *image = pm_image(&bytes);
    assert_int_equal(prepare(ctx, image, bytes), 0); /* 1: the refused init minted an id */
    simpler_callable_free(image);
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b;
    km_bufs_alloc(&b, 256, 0.0f);
    launch_exact(ctx, 0, s, &b, 3.0f, 2.0f, 0.5f);
    km_closing(ctx, s, &b);
}

/* ---------------------------------------------------- prepare's refusals */

/* A callable whose config function asks for a bigger arena than the
 * context committed (kernel_mode_callable.c, the `need > arena_bytes`
 * check after the load): the prepare unloads it and mints nothing. The
 * same ask through an explicit prepared-call config (prepared_call.c,
 * fit_config) changes nothing either. */
static void test_a_callable_needing_a_bigger_arena_is_capacity_exceeded_and_changes_nothing(
    void **state)
{
    (void)state;
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, km_open(), 256, 0.0f);
    launch_exact(ctx, 0, s, &b, 0.0f, 2.0f, 0.5f); /* READY_ENQUEUED, counters moved */
    struct rf_before before = before_of(ctx, 0);
    assert_int_equal(before.info.packets_encoded, 1);

    size_t wide_bytes;
    void *wide = image_of("pm_orchestration", "rf_config_wide_window", true, &wide_bytes);
    int32_t id = 5;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, wide, wide_bytes, &id),
                     PTO_RUNTIME_ERR_CAPACITY_EXCEEDED); /* 0: the config function never ran */
    assert_int_equal(id, -1); /* *callable_id is -1 on every failure */
    assert_nothing_changed(ctx, 0, &before);

    struct simpler_run_config big = ts_small_run_config();
    big.task_window[0] = 1u << 16;
    struct km_args a;
    km_args_make(&a, &b, 1.0f, 1.0f, 0, 1);
    struct simpler_prepared_call *call = (struct simpler_prepared_call *)&call;
    assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, &big, &call),
                     PTO_RUNTIME_ERR_CAPACITY_EXCEEDED);
    assert_null(call);
    assert_nothing_changed(ctx, 0, &before);

    /* The context still works, and the refused prepare minted no id. */
    launch_exact(ctx, 0, s, &b, 5.0f, -1.5f, 4.0f);
    size_t bytes;
    void *image = pm_image(&bytes);
    assert_int_equal(prepare(ctx, image, bytes), 1); /* 2: the refusal used up id 1 */
    launch_exact(ctx, 1, s, &b, 1.0f, 3.0f, 0.25f);
    simpler_callable_free(image);
    simpler_callable_free(wide);
    km_closing(ctx, s, &b);
}

/* y == x * mul + add and acc still 1: a round of rf_orchestration_axpb. */
static bool bufs_hold_axpb(const struct km_bufs *b, float x_base, float mul, float add)
{
    float y[256], acc[256];
    assert_true(b->n <= 256);
    ts_from_dev(y, b->y, b->n * sizeof(float));
    ts_from_dev(acc, b->acc, b->n * sizeof(float));
    for (uint64_t i = 0; i < b->n; i++)
        if (y[i] != pm_x_value(i, x_base) * mul + add || acc[i] != 1.0f)
            return false;
    return true;
}

/* An image past config.callable_bytes (residency.c, sp_callable_create,
 * before anything is allocated): refused, its bytes not counted, no id
 * minted; an image that fits the rest exactly is then accepted. */
static void test_an_image_past_callable_bytes_is_refused_and_changes_nothing(void **state)
{
    (void)state;
    size_t pm_bytes, small_bytes;
    void *pm = pm_image(&pm_bytes);
    void *small = image_of("rf_orchestration_axpb", NULL, false, &small_bytes);
    assert_true(small_bytes < pm_bytes); /* the case needs the second image to be smaller */
    struct simpler_config cfg = km_config();
    cfg.callable_bytes = pm_bytes + small_bytes; /* pm, then exactly the small one */
    pm_observers_reset();
    struct simpler_context *ctx;
    simdev_stream_t s;
    struct km_bufs b;
    km_opening(&ctx, &s, &b, open_kernel(0, &cfg), 256, 0.0f);
    assert_int_equal(prepare(ctx, pm, pm_bytes), 0);
    launch_exact(ctx, 0, s, &b, 0.0f, 2.0f, 0.5f);
    struct rf_before before = before_of(ctx, 0);

    int32_t id = 5;
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, pm, pm_bytes, &id),
                     PTO_RUNTIME_ERR_CALLABLE_BYTES_EXCEEDED); /* 0: the limit was not checked */
    assert_int_equal(id, -1);
    assert_nothing_changed(ctx, 0, &before);

    launch_exact(ctx, 0, s, &b, 2.0f, 4.0f, -1.0f);
    /* The refused image's bytes were not counted (else the small one would
     * not fit), nor its id used (else this would be 2). */
    assert_int_equal(prepare(ctx, small, small_bytes), 1);
    km_bufs_refill(&b, 3.0f);
    struct km_args a;
    km_args_make(&a, &b, 0.5f, 1.0f, 0, 1);
    assert_int_equal(simpler_kernel_mode_launch(ctx, 1, &a.args, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0);
    assert_true(bufs_hold_axpb(&b, 3.0f, 0.5f, 1.0f)); /* false: id 1 is not the small image */
    /* Full now: the small image a second time is refused. */
    assert_int_equal(simpler_kernel_mode_prepare_callable(ctx, small, small_bytes, &id),
                     PTO_RUNTIME_ERR_CALLABLE_BYTES_EXCEEDED);
    launch_exact(ctx, 0, s, &b, 1.0f, 1.0f, 1.0f);
    simpler_callable_free(pm);
    simpler_callable_free(small);
    km_closing(ctx, s, &b);
}

/* ------------------------------------------------------- init's refusals */

/* A device with one AICPU thread cannot hold an orchestrator and a
 * scheduler (device_binding.c, sp_device_usable via
 * sp_topology_runs_rounds): simpler_kernel_mode_supported says 0 and init
 * is UNSUPPORTED, having latched and created nothing. "No cores", the
 * other half of that check, cannot be reached: simdev refuses to configure
 * a device without cores, so no device ever has that topology. */
static void test_a_device_with_one_aicpu_thread_is_unsupported_and_init_changes_nothing(
    void **state)
{
    (void)state;
    struct simdev_config topo = ts_small_config();
    topo.aicpu_threads = 1;
    ts_device_setup_config(&topo);
    pm_observers_reset();
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    uint64_t in_use = device_in_use(0);
    assert_int_equal(simpler_kernel_mode_supported(ctx), 0); /* 1: one thread was thought enough */
    struct simpler_config cfg = km_config();
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), PTO_RUNTIME_ERR_UNSUPPORTED);
    assert_init_left_nothing(ctx, in_use);

    struct simdev_config coreless = ts_small_config();
    coreless.aic_cores = 0;
    coreless.aiv_cores = 0;
    assert_int_equal(simdev_device_reset(0), 0);
    assert_int_equal(simdev_device_configure(0, &coreless),
                     PTO_RUNTIME_ERR_INVALID_ARGUMENT); /* 0: "no cores" is reachable: test it */

    /* The same context on a capable device: the refusal latched nothing. */
    topo.aicpu_threads = 2;
    ts_device_setup_config(&topo);
    assert_int_equal(simpler_kernel_mode_supported(ctx), 1);
    init_retry_works(ctx, &cfg);
}

/* A lost device (sp_device_usable's DEVICE_LOST, checked before the
 * topology): simpler_kernel_mode_supported says 0, init is refused with
 * DEVICE_LOST having latched and created nothing, and after the owner's
 * reset the same context initialises. Only the identity tells this refusal
 * from a failure of init's first device operation (which would return
 * DEVICE_LOST too, but leave the context KERNEL): a second refused context
 * becomes a program context. */
static void test_a_lost_device_is_not_supported_and_init_on_it_changes_nothing(void **state)
{
    (void)state;
    struct simdev_config topo = ts_small_config();
    topo.watchdog_ms = 300; /* a device function held longer than this loses the device */
    ts_device_setup_config(&topo);
    pm_observers_reset();
    struct simpler_context *ctx, *other;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_create_device_context(&other), 0);
    assert_int_equal(simpler_kernel_mode_supported(ctx), 1); /* so that the 0 below is the loss */

    struct ts_gate gate;
    ts_gate_init(&gate);
    struct ts_gate *held = &gate;
    simdev_stream_t s = ts_new_stream();
    assert_int_equal(simdev_launch_aicpu(s, ts_gate_aicpu_fn, 1, &held, sizeof held), 0);
    ts_gate_wait_arrivals(&gate, 1); /* held until the watchdog fires */
    assert_int_equal(simdev_stream_sync(s), PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_int_equal(simdev_device_is_lost(0), 1);
    uint64_t in_use = device_in_use(0);

    assert_int_equal(simpler_kernel_mode_supported(ctx), 0); /* 1: a lost device was offered */
    struct simpler_config cfg = km_config();
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_init_left_nothing(ctx, in_use);
    assert_int_equal(simpler_kernel_mode_init(other, 0, &cfg, 0), PTO_RUNTIME_ERR_DEVICE_LOST);
    assert_init_left_nothing(other, in_use);
    assert_int_equal(simdev_device_is_lost(0), 1); /* 0: simpler reset a device it borrowed */

    ts_gate_open(&gate); /* the held function returns */
    assert_int_equal(simdev_stream_destroy(s), 0);
    assert_int_equal(simdev_device_reset(0), 0); /* the owner's call */
    ts_gate_destroy(&gate);
    topo.watchdog_ms = 0;
    ts_device_setup_config(&topo);
    assert_int_equal(simpler_kernel_mode_supported(ctx), 1);
    init_retry_works(ctx, &cfg);

    struct simdev_config small = ts_small_config();
    assert_int_equal(simdev_device_reset(1), 0);
    assert_int_equal(simdev_device_configure(1, &small), 0);
    struct simpler_config program_cfg;
    assert_int_equal(simpler_config_default(&program_cfg), 0);
    program_cfg.run_capacity = ts_small_run_config();
    /* INVALID_STATE: the refused kernel init latched KERNEL */
    assert_int_equal(simpler_init(other, 1, &program_cfg), 0);
    pm_close(other);
    assert_int_equal(simdev_device_reset(1), 0);
    assert_int_equal(simdev_set_device(0), 0);
}

/* More schedulers than the device's AICPU threads leave beside the
 * orchestrator (sp_device_usable, INVALID_ARGUMENT, after the state
 * checks): refused, nothing latched or created. A prepared call's own
 * config asking the same is no refusal in kernel mode: the scheduler
 * threads are the context's, fixed at init (docs/kernel-mode.md,
 * "Prepared calls"). */
static void test_a_scheduler_over_ask_is_refused_at_init_and_changes_nothing(void **state)
{
    (void)state;
    pm_observers_reset();
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    uint64_t in_use = device_in_use(0);
    struct simpler_config cfg = km_config();
    cfg.run_capacity.scheduler_threads = 2; /* + the orchestrator = 3 > 2 AICPU threads */
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_init_left_nothing(ctx, in_use);
    assert_int_equal(simpler_kernel_mode_supported(ctx), 1); /* 0: the refusal latched PROGRAM */

    cfg.run_capacity.scheduler_threads = 1; /* exactly what the device has */
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), 0);
    size_t bytes;
    void *image = pm_image(&bytes);
    assert_int_equal(prepare(ctx, image, bytes), 0);
    simpler_callable_free(image);
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b;
    km_bufs_alloc(&b, 256, 0.0f);
    launch_exact(ctx, 0, s, &b, 0.0f, 2.0f, 0.5f);

    struct simpler_run_config asks = ts_small_run_config();
    asks.scheduler_threads = 3;
    struct km_args a;
    km_args_make(&a, &b, 3.0f, 0.75f, 0, 1);
    struct simpler_prepared_call *call = NULL;
    assert_int_equal(simpler_prepare_call(ctx, 0, &a.args, &asks, &call), 0);
    km_bufs_refill(&b, 1.0f);
    assert_int_equal(simpler_kernel_mode_launch_call(ctx, call, s), 0);
    assert_int_equal(simdev_stream_sync(s), 0); /* else the round ran with 3 schedulers */
    assert_true(km_bufs_hold(&b, 1.0f, 3.0f, 0.75f, 1.0f));
    assert_int_equal(simpler_release_call(ctx, call), 0);
    km_closing(ctx, s, &b);
}

/* A kernel init that failed after the identity latched (here: the
 * arena's allocation) leaves the context KERNEL: simpler_init on it is
 * INVALID_STATE (program.c, the latch claim) on any device, and changes
 * nothing; the kernel init's retry works. */
static void test_simpler_init_on_a_context_whose_kernel_init_failed_is_invalid_state(
    void **state)
{
    (void)state;
    pm_observers_reset();
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    uint64_t in_use = device_in_use(0);
    struct simpler_config cfg = km_config();
    assert_int_equal(simdev_fault_inject(0, SIMDEV_OP_MALLOC, 1, INJECTED), 0);
    assert_int_equal(simpler_kernel_mode_init(ctx, 0, &cfg, 0), INJECTED);
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_int_equal(device_in_use(0), in_use); /* else the failed init kept its streams' memory */

    struct simpler_config program_cfg;
    assert_int_equal(simpler_config_default(&program_cfg), 0);
    program_cfg.run_capacity = ts_small_run_config();
    /* 0: the failed kernel init let the context become a program context */
    assert_int_equal(simpler_init(ctx, 0, &program_cfg), PTO_RUNTIME_ERR_INVALID_STATE);
    assert_int_equal(simpler_init(ctx, 1, &program_cfg), PTO_RUNTIME_ERR_INVALID_STATE);
    size_t bytes;
    void *image = pm_image(&bytes);
    assert_int_equal(simpler_register_callable(ctx, PM_CALLABLE, image, bytes),
                     PTO_RUNTIME_ERR_INVALID_STATE);
    simpler_callable_free(image);
    assert_int_equal(simpler_kernel_mode_supported(ctx), 1); /* still a kernel context's to be */
    assert_init_left_nothing(ctx, in_use);
    int current = -1;
    assert_int_equal(simdev_get_device(&current), 0);
    assert_int_equal(current, 0); /* 1: the refused simpler_init switched the caller's device */
    init_retry_works(ctx, &cfg);
}

/* ------------------------------------------------- three devices at once */

#define LANE_ROUNDS 1000
#define LANE_N 64
#define LANES 3

/* One device and the thread that drives it. */
struct lane {
    int device;
    bool kernel;                /* kernel context, else program context */
    struct simpler_context *ctx;
    simdev_stream_t stream;     /* kernel: the caller's stream */
    float *x, *y, *acc;         /* kernel: device buffers; program: host */
    pthread_barrier_t *start, *halfway;
    /* Written by the lane's thread, read after the join. */
    uint32_t exact_rounds;
    int first_bad_round; /* -1: none */
    int first_bad_rc;    /* its code; 0: it ran but an output was wrong */
};

/* Round r's values, distinct from the round before's, exact in f32. */
static void round_values(uint32_t r, float *x_base, float *mul, float *add)
{
    *x_base = (float)(r % 7);
    *mul = (float)(1 + r % 5);
    *add = (float)(r % 11) * 0.25f;
}

static bool outputs_exact(const float *y, const float *acc, float x_base, float mul, float add)
{
    for (uint64_t i = 0; i < LANE_N; i++) {
        float want = pm_x_value(i, x_base) * mul + add;
        if (y[i] != want || acc[i] != 1.0f + want)
            return false;
    }
    return true;
}

/* Host inputs of round r: x, y poison, acc 1. */
static void round_inputs(uint32_t r, float *x, float *y, float *acc, float *mul, float *add)
{
    float x_base;
    round_values(r, &x_base, mul, add);
    for (uint64_t i = 0; i < LANE_N; i++) {
        x[i] = pm_x_value(i, x_base);
        acc[i] = 1.0f;
    }
    memset(y, PM_POISON_BYTE, LANE_N * sizeof *y);
}

/* Round r in a kernel lane: inputs written to the device buffers, one
 * launch, the stream's sync, outputs read back. No cmocka here: this runs
 * on the lane's thread. */
static int kernel_round(struct lane *l, uint32_t r, bool *exact)
{
    float x[LANE_N], y[LANE_N], acc[LANE_N], mul, add, x_base;
    round_inputs(r, x, y, acc, &mul, &add);
    const size_t bytes = sizeof x;
    int rc;
    if ((rc = simdev_memcpy(l->x, x, bytes, SIMDEV_COPY_HOST_TO_DEVICE)) ||
        (rc = simdev_memcpy(l->y, y, bytes, SIMDEV_COPY_HOST_TO_DEVICE)) ||
        (rc = simdev_memcpy(l->acc, acc, bytes, SIMDEV_COPY_HOST_TO_DEVICE)))
        return rc;
    struct simpler_tensor t[3];
    float *dev[3] = {l->x, l->y, l->acc};
    for (int i = 0; i < 3; i++)
        if ((rc = simpler_tensor_make_1d(&t[i], (uint64_t)(uintptr_t)dev[i], LANE_N,
                                         SIMPLER_DTYPE_F32, SIMPLER_MEM_DEVICE)))
            return rc;
    uint64_t s[PM_SCALARS];
    pm_scalars_fill(s, mul, add, 0, 0, r);
    struct simpler_args args = {3, PM_SCALARS, t, s};
    if ((rc = simpler_kernel_mode_launch(l->ctx, 0, &args, l->stream)) ||
        (rc = simdev_stream_sync(l->stream)) ||
        (rc = simdev_memcpy(y, l->y, bytes, SIMDEV_COPY_DEVICE_TO_HOST)) ||
        (rc = simdev_memcpy(acc, l->acc, bytes, SIMDEV_COPY_DEVICE_TO_HOST)))
        return rc;
    round_values(r, &x_base, &mul, &add);
    *exact = outputs_exact(y, acc, x_base, mul, add);
    return 0;
}

/* Round r in the program lane: one simpler_run over host buffers. */
static int program_round(struct lane *l, uint32_t r, bool *exact)
{
    float mul, add, x_base;
    round_inputs(r, l->x, l->y, l->acc, &mul, &add);
    struct simpler_tensor t[3];
    float *host[3] = {l->x, l->y, l->acc};
    int rc;
    for (int i = 0; i < 3; i++)
        if ((rc = simpler_tensor_make_1d(&t[i], (uint64_t)(uintptr_t)host[i], LANE_N,
                                         SIMPLER_DTYPE_F32, SIMPLER_MEM_HOST)))
            return rc;
    uint64_t s[PM_SCALARS];
    pm_scalars_fill(s, mul, add, 0, 0, r);
    struct simpler_args args = {3, PM_SCALARS, t, s};
    if ((rc = simpler_run(l->ctx, PM_CALLABLE, &args, NULL, NULL)))
        return rc;
    round_values(r, &x_base, &mul, &add);
    *exact = outputs_exact(l->y, l->acc, x_base, mul, add);
    return 0;
}

static void *lane_main(void *arg)
{
    struct lane *l = arg;
    /* A framework's thread: its device current before any kernel call. */
    if (l->kernel && simdev_set_device(l->device)) {
        l->first_bad_round = 0;
        l->first_bad_rc = PTO_RUNTIME_ERR_INVALID_STATE;
    }
    pthread_barrier_wait(l->start); /* the three lanes start together */
    bool met = false;
    for (uint32_t r = 0; r < LANE_ROUNDS && l->first_bad_round < 0; r++) {
        if (r == LANE_ROUNDS / 2) {
            /* Every lane has run half its rounds and has half still to run:
             * the rounds of the three devices overlap, whatever the
             * scheduling. */
            pthread_barrier_wait(l->halfway);
            met = true;
        }
        bool exact = false;
        int rc = l->kernel ? kernel_round(l, r, &exact) : program_round(l, r, &exact);
        if (!rc && exact) {
            l->exact_rounds++;
        } else {
            l->first_bad_round = (int)r; /* stop: later rounds would say nothing more */
            l->first_bad_rc = rc;
        }
    }
    if (!met)
        pthread_barrier_wait(l->halfway); /* a lane that stopped early still meets the others */
    return NULL;
}

/* The topology of each of the three devices: as small as the callable
 * allows (one vector core, one scheduler), cores not pinned (three
 * devices' core threads would all be pinned to the host's first CPU). */
static struct simdev_config lane_topology(void)
{
    struct simdev_config topo = ts_small_config();
    topo.aic_cores = 0;
    topo.aiv_cores = 1;
    topo.pin_cores = 0;
    return topo;
}

/* The lanes' context config: the small capacity, the default scheduler
 * timeout (three devices share two CPUs, under TSan too). */
static struct simpler_config lane_config(void)
{
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.run_capacity = ts_small_run_config();
    return cfg;
}

static void lane_open(struct lane *l, int device, bool kernel, pthread_barrier_t barriers[2])
{
    memset(l, 0, sizeof *l);
    l->device = device;
    l->kernel = kernel;
    l->start = &barriers[0];
    l->halfway = &barriers[1];
    l->first_bad_round = -1;
    struct simpler_config cfg = lane_config();
    size_t bytes;
    void *image = pm_image(&bytes);
    assert_int_equal(simpler_create_device_context(&l->ctx), 0);
    if (kernel) {
        assert_int_equal(simdev_set_device(device), 0);
        assert_int_equal(simpler_kernel_mode_init(l->ctx, device, &cfg, 0), 0);
        assert_int_equal(prepare(l->ctx, image, bytes), 0);
        l->stream = ts_new_stream();
        l->x = ts_dev_alloc(LANE_N * sizeof(float));
        l->y = ts_dev_alloc(LANE_N * sizeof(float));
        l->acc = ts_dev_alloc(LANE_N * sizeof(float));
    } else {
        assert_int_equal(simpler_init(l->ctx, device, &cfg), 0);
        assert_int_equal(simpler_register_callable(l->ctx, PM_CALLABLE, image, bytes), 0);
        l->x = calloc(LANE_N, sizeof(float));
        l->y = calloc(LANE_N, sizeof(float));
        l->acc = calloc(LANE_N, sizeof(float));
        assert_non_null(l->x);
        assert_non_null(l->y);
        assert_non_null(l->acc);
    }
    simpler_callable_free(image);
}

static void lane_close(struct lane *l)
{
    struct simpler_context_info info;
    assert_int_equal(simpler_get_context_info(l->ctx, &info), 0);
    /* One preparation per round: more, a round was prepared twice; fewer,
     * one never ran. Kernel mode encodes a packet with each. */
    assert_int_equal(info.host_preparations, LANE_ROUNDS);
    assert_int_equal(info.packets_encoded, l->kernel ? LANE_ROUNDS : 0);
    if (l->kernel) {
        assert_int_equal(simdev_set_device(l->device), 0);
        assert_int_equal(simdev_free(l->x), 0);
        assert_int_equal(simdev_free(l->y), 0);
        assert_int_equal(simdev_free(l->acc), 0);
        assert_int_equal(simdev_stream_destroy(l->stream), 0);
        pm_close(l->ctx);
        assert_int_equal(device_in_use(l->device), 0); /* else something of the lane leaked */
    } else {
        pm_close(l->ctx); /* finalize resets the device it owns */
        assert_int_equal(device_in_use(l->device), 0);
        free(l->x);
        free(l->y);
        free(l->acc);
    }
}

/* Kernel contexts on devices 0 and 1 and a program context on device 2,
 * each driven by its own thread, LANE_ROUNDS rounds each at once: every
 * round's y and acc exact. What the devices share in the process (the
 * registry of live kernel contexts, the generations, the device claims)
 * must keep them apart. */
static void test_two_kernel_devices_and_a_program_device_run_1000_rounds_each_at_once(
    void **state)
{
    (void)state;
    struct simdev_config topo = lane_topology();
    ts_device_setup_config(&topo);
    for (int d = 1; d < LANES; d++) {
        assert_int_equal(simdev_device_reset(d), 0);
        assert_int_equal(simdev_device_configure(d, &topo), 0);
    }
    pm_observers_reset();
    pthread_barrier_t barriers[2]; /* start, halfway */
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_barrier_init(&barriers[i], NULL, LANES), 0);
    struct lane lanes[LANES];
    for (int d = 0; d < LANES; d++)
        lane_open(&lanes[d], d, d < 2, barriers);

    pthread_t threads[LANES];
    for (int d = 0; d < LANES; d++)
        assert_int_equal(pthread_create(&threads[d], NULL, lane_main, &lanes[d]), 0);
    for (int d = 0; d < LANES; d++)
        assert_int_equal(pthread_join(threads[d], NULL), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_barrier_destroy(&barriers[i]), 0);

    for (int d = 0; d < LANES; d++) {
        const struct lane *l = &lanes[d];
        if (l->first_bad_round >= 0)
            fail_msg("device %d (%s): round %d returned %d (0: it ran and an output was wrong)",
                     d, l->kernel ? "kernel" : "program", l->first_bad_round, l->first_bad_rc);
        assert_int_equal(l->exact_rounds, LANE_ROUNDS);
    }
    for (int d = 0; d < LANES; d++)
        lane_close(&lanes[d]);
    for (int d = 1; d < LANES; d++)
        assert_int_equal(simdev_device_reset(d), 0);
    assert_int_equal(simdev_set_device(0), 0);
}

/* ------------------------------------------------------ one image twice */

/* Device 1 as the program context's, the small topology. */
static struct simpler_context *open_program_on_1(void)
{
    struct simdev_config topo = ts_small_config();
    assert_int_equal(simdev_device_reset(1), 0);
    assert_int_equal(simdev_device_configure(1, &topo), 0);
    struct simpler_context *pctx;
    struct simpler_config cfg = lane_config();
    assert_int_equal(simpler_create_device_context(&pctx), 0);
    assert_int_equal(simpler_init(pctx, 1, &cfg), 0);
    return pctx;
}

/* One image buffer, prepared in a kernel context on device 0 and
 * registered in a program context on device 1 (each copies it; the buffer
 * is freed at once), both run exactly once. */
static void open_both(struct simpler_context **kctx, struct simpler_context **pctx)
{
    pm_observers_reset();
    size_t bytes;
    void *image = pm_image(&bytes);
    struct simpler_config cfg = km_config();
    assert_int_equal(simdev_set_device(0), 0);
    *kctx = open_kernel(0, &cfg);
    assert_int_equal(prepare(*kctx, image, bytes), 0);
    *pctx = open_program_on_1();
    assert_int_equal(simpler_register_callable(*pctx, PM_CALLABLE, image, bytes), 0);
    memset(image, 0xA5, bytes); /* neither may read the caller's image again */
    simpler_callable_free(image);
    struct pm_run r;
    pm_run_init(&r, 2.0f, 0.5f, 0, 0, 1);
    assert_int_equal(simpler_run(*pctx, PM_CALLABLE, &r.args, NULL, NULL), 0);
    pm_run_check(&r);
    pm_run_free(&r);
    assert_int_equal(simdev_set_device(0), 0); /* the kernel context's thread */
}

static void test_one_image_in_both_modes_runs_in_the_kernel_context_after_the_program_unregisters(
    void **state)
{
    (void)state;
    struct simpler_context *kctx, *pctx;
    open_both(&kctx, &pctx);
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b;
    km_bufs_alloc(&b, 256, 0.0f);
    launch_exact(kctx, 0, s, &b, 0.0f, 2.0f, 0.5f);
    size_t committed = simpler_committed_device_memory(kctx);

    assert_int_equal(simpler_unregister_callable(pctx, PM_CALLABLE), 0);
    struct pm_run r;
    pm_run_init(&r, 1.0f, 1.0f, 0, 0, 2);
    assert_int_equal(simpler_run(pctx, PM_CALLABLE, &r.args, NULL, NULL),
                     PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT); /* 0: unregister kept it */
    pm_run_check_untouched(&r);
    pm_run_free(&r);

    assert_int_equal(simdev_set_device(0), 0);
    /* The kernel context's copy is its own: loaded, counted, and exact. */
    assert_int_equal(simpler_committed_device_memory(kctx), committed);
    launch_exact(kctx, 0, s, &b, 4.0f, -1.0f, 3.0f);
    launch_exact(kctx, 0, s, &b, 1.0f, 0.5f, 0.25f);
    pm_close(pctx);
    assert_int_equal(simdev_set_device(0), 0);
    launch_exact(kctx, 0, s, &b, 2.0f, 3.0f, 1.0f); /* and after the other device's reset */
    km_closing(kctx, s, &b);
    assert_int_equal(simdev_device_reset(1), 0);
}

static void test_one_image_in_both_modes_runs_in_the_program_context_after_the_kernel_closes(
    void **state)
{
    (void)state;
    struct simpler_context *kctx, *pctx;
    open_both(&kctx, &pctx);
    simdev_stream_t s = ts_new_stream();
    struct km_bufs b;
    km_bufs_alloc(&b, 256, 0.0f);
    launch_exact(kctx, 0, s, &b, 0.0f, 2.0f, 0.5f);
    km_closing(kctx, s, &b); /* a kernel context lets its callables go when it closes */

    for (int i = 0; i < 2; i++) {
        struct pm_run r;
        pm_run_init(&r, 3.0f - (float)i, 0.25f * (float)i, 0, 0, 3 + (uint64_t)i);
        assert_int_equal(simpler_run(pctx, PM_CALLABLE, &r.args, NULL, NULL), 0);
        pm_run_check(&r); /* fails: the kernel context's close unloaded the program's copy */
        pm_run_free(&r);
    }
    pm_close(pctx);
    assert_int_equal(simdev_device_reset(1), 0);
    assert_int_equal(simdev_set_device(0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(
            test_a_callable_needing_a_bigger_arena_is_capacity_exceeded_and_changes_nothing),
        SIMPLER_TEST(test_an_image_past_callable_bytes_is_refused_and_changes_nothing),
        SIMPLER_TEST(test_a_device_with_one_aicpu_thread_is_unsupported_and_init_changes_nothing),
        SIMPLER_TEST(test_a_lost_device_is_not_supported_and_init_on_it_changes_nothing),
        SIMPLER_TEST(test_a_scheduler_over_ask_is_refused_at_init_and_changes_nothing),
        SIMPLER_TEST(test_simpler_init_on_a_context_whose_kernel_init_failed_is_invalid_state),
        SIMPLER_TEST(
            test_two_kernel_devices_and_a_program_device_run_1000_rounds_each_at_once),
        SIMPLER_TEST(
            test_one_image_in_both_modes_runs_in_the_kernel_context_after_the_program_unregisters),
        SIMPLER_TEST(
            test_one_image_in_both_modes_runs_in_the_program_context_after_the_kernel_closes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
