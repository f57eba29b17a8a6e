/*
 * runtime_demo.c — the device runtime (TMR) running orchestrations on the
 * simulated device. `make run` shows it after device_demo.
 *
 * It demonstrates, in order:
 *   1. upstream's vector example, f = (a + b + 1)(a + b + 2) + (a + b) with
 *      a = 2, b = 3 on 16384 floats: five AIV tasks whose six dependencies
 *      are inferred by the runtime (printed from the run's edge log), and
 *      f = 47 everywhere;
 *   2. a pipelined program of 20000 tasks in inner scopes on a deliberately
 *      small task window (8 slots per ring) and heap (64 KiB per ring): each
 *      scope produces a block, transforms it and accumulates it into an
 *      external total through INOUT, so the rings recycle under
 *      back-pressure while the result stays exact;
 *   3. a failing kernel: its code becomes the run's status at the stream's
 *      synchronisation, and the next run on the same device works.
 * The host program path (simpler.h) is not written yet, so this demo drives
 * the runtime's internal entry (src/runtime/runtime.h) the way that path
 * will: device arena, kernel table and args in device memory, one enqueue,
 * one stream sync.
 *
 * Exit status: 0 when every check passed, 1 otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch/launch.h"
#include "simpler/kernel.h"
#include "simpler/orchestration.h"
#include "simpler/device.h"

#define CHECK(call)                                                                   \
    do {                                                                              \
        int check_rc_ = (call);                                                       \
        if (check_rc_ != 0) {                                                         \
            fprintf(stderr, "runtime_demo: %s failed: %d (%s)\n", #call, check_rc_,   \
                    simpler_strerror(check_rc_));                                     \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define N 16384
#define BLOCK 64
#define SCOPES 5000 /* x 4 tasks = 20000 */
#define DEMO_FAILURE 321

enum { K_ADD, K_ADD_SCALAR, K_MUL, K_FILL, K_ACCUMULATE, K_FAIL, K_COUNT };

static void kernel_add(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0), *y = simpler_kernel_data(args, 1);
    float *z = simpler_kernel_data(args, 2);
    for (uint64_t i = 0, n = simpler_tensor_numel(simpler_kernel_tensor(args, 2)); i < n; i++)
        z[i] = x[i] + y[i];
}

static void kernel_add_scalar(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0);
    float *z = simpler_kernel_data(args, 1);
    float s = simpler_kernel_scalar_f32(args, 2);
    for (uint64_t i = 0, n = simpler_tensor_numel(simpler_kernel_tensor(args, 1)); i < n; i++)
        z[i] = x[i] + s;
}

static void kernel_mul(int64_t *args)
{
    const float *x = simpler_kernel_data(args, 0), *y = simpler_kernel_data(args, 1);
    float *z = simpler_kernel_data(args, 2);
    for (uint64_t i = 0, n = simpler_tensor_numel(simpler_kernel_tensor(args, 2)); i < n; i++)
        z[i] = x[i] * y[i];
}

/* out[i] = scalar (an integer value) */
static void kernel_fill(int64_t *args)
{
    uint64_t *out = simpler_kernel_data(args, 0);
    uint64_t v = simpler_kernel_scalar_u64(args, 1);
    for (uint64_t i = 0; i < BLOCK; i++)
        out[i] = v;
}

/* total[0] += sum(in) */
static void kernel_accumulate(int64_t *args)
{
    const uint64_t *in = simpler_kernel_data(args, 0);
    uint64_t *total = simpler_kernel_data(args, 1);
    uint64_t sum = 0;
    for (uint64_t i = 0; i < BLOCK; i++)
        sum += in[i];
    total[0] += sum;
}

static void kernel_fail(int64_t *args)
{
    simpler_kernel_fail(args, DEMO_FAILURE);
}

static const simpler_kernel_fn g_kernels[K_COUNT] = {
    kernel_add, kernel_add_scalar, kernel_mul, kernel_fill, kernel_accumulate, kernel_fail,
};

static uint64_t g_vector_ids[5];

static void vector_entry(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    uint64_t shape[1] = {N};
    struct simpler_task_args ta;
    struct simpler_task_result c, d, e, g, f;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &args->tensors[0]);
    simpler_task_args_add_input(&ta, &args->tensors[1]);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_submit_aiv(rt, K_ADD, &ta, &c);
    simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &c.outputs[0]);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_task_args_add_scalar_f32(&ta, 1.0f);
    simpler_submit_aiv(rt, K_ADD_SCALAR, &ta, &d);
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &c.outputs[0]);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_task_args_add_scalar_f32(&ta, 2.0f);
    simpler_submit_aiv(rt, K_ADD_SCALAR, &ta, &e);
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &d.outputs[0]);
    simpler_task_args_add_input(&ta, &e.outputs[0]);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_F32, 0);
    simpler_submit_aiv(rt, K_MUL, &ta, &g);
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &g.outputs[0]);
    simpler_task_args_add_input(&ta, &c.outputs[0]);
    simpler_task_args_add_output_existing(&ta, &args->tensors[2]);
    simpler_submit_aiv(rt, K_ADD, &ta, &f);
    simpler_scope_end(rt);
    const uint64_t ids[5] = {c.task_id, d.task_id, e.task_id, g.task_id, f.task_id};
    memcpy(g_vector_ids, ids, sizeof ids);
}

/* Per scope: fill a block with s, fill another with 2s, accumulate both
 * into the total (INOUT, so the accumulations are ordered). Sum over all
 * scopes: 3 * BLOCK * sum(s) for s = 1..SCOPES. */
static void pipeline_entry(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *total = &args->tensors[0];
    uint64_t shape[1] = {BLOCK};
    for (uint64_t s = 1; s <= SCOPES; s++) {
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        struct simpler_task_args ta;
        struct simpler_task_result x, y;
        for (uint64_t k = 1; k <= 2; k++) {
            simpler_task_args_init(&ta);
            simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_U64, 0);
            simpler_task_args_add_scalar(&ta, k * s);
            simpler_submit_aiv(rt, K_FILL, &ta, k == 1 ? &x : &y);
        }
        for (int k = 0; k < 2; k++) {
            simpler_task_args_init(&ta);
            simpler_task_args_add_input(&ta, k == 0 ? &x.outputs[0] : &y.outputs[0]);
            simpler_task_args_add_inout(&ta, total);
            simpler_submit_aiv(rt, K_ACCUMULATE, &ta, NULL);
        }
        simpler_scope_end(rt);
    }
}

static void failing_entry(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    struct simpler_task_args ta;
    simpler_task_args_init(&ta);
    simpler_submit_aiv(rt, K_FAIL, &ta, NULL);
}

struct demo {
    struct rt_launcher *launcher;
    simdev_stream_t stream;
    struct rt_config config;
    void *arena;
    size_t arena_bytes;
    simpler_kernel_fn *kernels;
    struct simpler_orch_args *args;
    struct rt_run_result *result_dev;
    struct rt_edge *edges_dev;
    struct rt_run_result result;
    struct rt_edge edges[16];
};

static void demo_open(struct demo *d, const struct rt_config *config)
{
    memset(d, 0, sizeof *d);
    d->config = *config;
    struct simdev_config topo;
    CHECK(simdev_device_get_config(0, &topo));
    CHECK(simdev_malloc((void **)&d->edges_dev, sizeof d->edges));
    d->config.edge_log = d->edges_dev;
    d->config.edge_log_capacity = 16;
    CHECK(rt_arena_bytes(&d->config, &topo, &d->arena_bytes));
    CHECK(simdev_malloc(&d->arena, d->arena_bytes));
    CHECK(simdev_malloc((void **)&d->kernels, sizeof g_kernels));
    CHECK(simdev_memcpy(d->kernels, g_kernels, sizeof g_kernels, SIMDEV_COPY_HOST_TO_DEVICE));
    CHECK(simdev_malloc((void **)&d->args, sizeof *d->args));
    CHECK(simdev_malloc((void **)&d->result_dev, sizeof d->result));
    CHECK(rt_launcher_create(&d->launcher));
    CHECK(simdev_stream_create(&d->stream));
}

static void demo_close(struct demo *d)
{
    CHECK(simdev_stream_destroy(d->stream));
    CHECK(rt_launcher_destroy(d->launcher));
    CHECK(simdev_free(d->arena));
    CHECK(simdev_free(d->kernels));
    CHECK(simdev_free(d->args));
    CHECK(simdev_free(d->result_dev));
    CHECK(simdev_free(d->edges_dev));
}

/* Runs `entry` with `args` (host copy) and returns the run's status. */
static int demo_run(struct demo *d, simpler_orch_entry_fn entry,
                    const struct simpler_orch_args *args)
{
    CHECK(simdev_memcpy(d->args, args, sizeof *args, SIMDEV_COPY_HOST_TO_DEVICE));
    struct rt_run_request rq = {
        .entry = entry,
        .kernels = d->kernels,
        .kernel_count = K_COUNT,
        .args = d->args,
        .arena = d->arena,
        .arena_bytes = d->arena_bytes,
        .result = d->result_dev,
        .config = d->config,
    };
    CHECK(rt_run_enqueue(d->launcher, d->stream, &rq));
    int status = simdev_stream_sync(d->stream);
    CHECK(simdev_memcpy(&d->result, d->result_dev, sizeof d->result,
                        SIMDEV_COPY_DEVICE_TO_HOST));
    CHECK(simdev_memcpy(d->edges, d->edges_dev, sizeof d->edges, SIMDEV_COPY_DEVICE_TO_HOST));
    return status;
}

static struct simpler_tensor device_tensor_1d(void *dev, uint64_t count, uint32_t dtype)
{
    struct simpler_tensor t;
    if (simpler_tensor_make_1d(&t, (uint64_t)(uintptr_t)dev, count, dtype, SIMPLER_MEM_DEVICE))
        exit(1);
    return t;
}

static int task_index(uint64_t id)
{
    for (int i = 0; i < 5; i++)
        if (g_vector_ids[i] == id)
            return i;
    return -1;
}

int main(void)
{
    int failures = 0;
    struct rt_config config;
    rt_config_default(&config);
    struct demo d;
    demo_open(&d, &config);

    /* 1. The vector example. */
    static float host[N];
    float *a, *b, *f;
    CHECK(simdev_malloc((void **)&a, sizeof host));
    CHECK(simdev_malloc((void **)&b, sizeof host));
    CHECK(simdev_malloc((void **)&f, sizeof host));
    for (int i = 0; i < N; i++)
        host[i] = 2.0f;
    CHECK(simdev_memcpy(a, host, sizeof host, SIMDEV_COPY_HOST_TO_DEVICE));
    for (int i = 0; i < N; i++)
        host[i] = 3.0f;
    CHECK(simdev_memcpy(b, host, sizeof host, SIMDEV_COPY_HOST_TO_DEVICE));
    static struct simpler_orch_args args;
    args.tensor_count = 3;
    args.tensors[0] = device_tensor_1d(a, N, SIMPLER_DTYPE_F32);
    args.tensors[1] = device_tensor_1d(b, N, SIMPLER_DTYPE_F32);
    args.tensors[2] = device_tensor_1d(f, N, SIMPLER_DTYPE_F32);
    int status = demo_run(&d, vector_entry, &args);
    CHECK(simdev_memcpy(host, f, sizeof host, SIMDEV_COPY_DEVICE_TO_HOST));
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += host[i] != 47.0f;
    printf("vector example: status %d, f[0] = %g, %d of %d elements wrong; %" PRIu64
           " tasks, %" PRIu64 " inferred edges:",
           status, (double)host[0], wrong, N, d.result.tasks_completed, d.result.edges);
    for (uint64_t i = 0; i < d.result.edges_logged; i++)
        printf(" t%d->t%d", task_index(d.edges[i].producer), task_index(d.edges[i].consumer));
    printf("\n");
    failures += status != 0 || wrong != 0 || d.result.edges != 6;
    CHECK(simdev_free(a));
    CHECK(simdev_free(b));
    CHECK(simdev_free(f));
    demo_close(&d);

    /* 2. A pipelined program on small rings. */
    for (int r = 0; r < 4; r++) {
        config.task_window[r] = 8;
        config.heap_bytes[r] = 64 << 10;
    }
    demo_open(&d, &config);
    uint64_t *total;
    uint64_t zero = 0, value = 0;
    CHECK(simdev_malloc((void **)&total, sizeof zero));
    CHECK(simdev_memcpy(total, &zero, sizeof zero, SIMDEV_COPY_HOST_TO_DEVICE));
    memset(&args, 0, sizeof args);
    args.tensor_count = 1;
    args.tensors[0] = device_tensor_1d(total, 1, SIMPLER_DTYPE_U64);
    uint64_t t0 = simdev_clock_ns();
    status = demo_run(&d, pipeline_entry, &args);
    uint64_t elapsed = simdev_clock_ns() - t0;
    CHECK(simdev_memcpy(&value, total, sizeof value, SIMDEV_COPY_DEVICE_TO_HOST));
    uint64_t expect = 3ull * BLOCK * ((uint64_t)SCOPES * (SCOPES + 1) / 2);
    printf("pipeline: status %d, %" PRIu64 " tasks on an 8-slot window in %.1f ms "
           "(%" PRIu64 " waits for ring space), total %" PRIu64 " (expected %" PRIu64 ")\n",
           status, d.result.tasks_completed, (double)elapsed / 1e6, d.result.ring_waits, value,
           expect);
    failures += status != 0 || value != expect || d.result.tasks_completed != 4ull * SCOPES;

    /* 3. A failing kernel, then a good run on the same device. */
    status = demo_run(&d, failing_entry, &args);
    printf("failing kernel: run status %d (%s)\n", status, simpler_strerror(status));
    failures += status != -DEMO_FAILURE;
    CHECK(simdev_memcpy(total, &zero, sizeof zero, SIMDEV_COPY_HOST_TO_DEVICE));
    status = demo_run(&d, pipeline_entry, &args);
    CHECK(simdev_memcpy(&value, total, sizeof value, SIMDEV_COPY_DEVICE_TO_HOST));
    printf("next run: status %d, total %" PRIu64 "\n", status, value);
    failures += status != 0 || value != expect;
    CHECK(simdev_free(total));
    demo_close(&d);

    struct simdev_mem_info mem;
    CHECK(simdev_mem_get_info(0, &mem));
    failures += mem.in_use != 0;
    printf("runtime_demo: %s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
