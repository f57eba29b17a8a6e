/*
 * device_demo.c — the simulated device (simdev), used the way a framework
 * uses an accelerator runtime. This is what `make run` shows.
 *
 * It demonstrates, in order:
 *   1. eager work: configure and select device 0, allocate device memory,
 *      copy a vector in, scale it with an AICPU launch on stream A, and let
 *      every AICore add an offset to its own slice on stream B once B has
 *      waited for A's event; copy the result back and check every element;
 *   2. capture and replay: the same two-stream sequence captured into a graph
 *      (A forks to B through one event, B joins back through another),
 *      instantiated once and replayed 100 times, with fresh inputs copied into
 *      the same device buffers before each replay;
 *   3. the error chain: a device function fails on stream A, the event
 *      recorded after it carries the error to stream B, later work on both
 *      streams is skipped, simdev_stream_sync returns the error and clears
 *      it, and both streams then run new work correctly.
 * Everything is freed at the end; device memory in use must be 0.
 *
 * Exit status: 0 when every check passed, 1 otherwise.
 * Owns only this demonstration; it touches the device through device.h alone.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/device.h"

#define ELEMENTS 4096       /* vector length */
#define SCALE 3.0f          /* stream A: x *= SCALE */
#define OFFSET 1.0f         /* stream B: y = x + OFFSET */
#define REPLAYS 100
#define DEMO_KERNEL_ERROR (-7) /* what the failing device function reports */

/* Stops the demo on the first failed call, naming the call and its status. */
#define CHECK(call)                                                                   \
    do {                                                                              \
        int check_rc_ = (call);                                                       \
        if (check_rc_ != 0) {                                                         \
            fprintf(stderr, "device_demo: %s failed: %d (%s) at line %d\n", #call,    \
                    check_rc_, simpler_strerror(check_rc_), __LINE__);                \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

/* --------------------------------------------------------- device functions */

/* Arguments are copied at enqueue, so these structs may live on the stack. */
struct scale_args {
    float *x; /* device pointer */
    size_t n;
    float scale;
};

struct offset_args {
    const float *x; /* device pointers */
    float *y;
    size_t n;
    float offset;
};

/* The part [*begin, *end) of n elements that worker `index` of `count` owns. */
static void slice_of(size_t n, uint32_t index, uint32_t count, size_t *begin, size_t *end)
{
    *begin = n * index / count;
    *end = n * (index + 1) / count;
}

/* AICPU: every launched thread scales its part of x in place. */
static int scale_on_aicpu(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    const struct scale_args *a = args;
    if (args_size != sizeof(*a))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    size_t begin, end;
    slice_of(a->n, ctx->thread_index, ctx->thread_count, &begin, &end);
    for (size_t i = begin; i < end; i++)
        a->x[i] *= a->scale;
    return 0;
}

/* AICore: every core writes y = x + offset over its own slice. */
static int offset_on_aicore(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    const struct offset_args *a = args;
    if (args_size != sizeof(*a))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    size_t begin, end;
    slice_of(a->n, ctx->core_id, ctx->core_count, &begin, &end);
    for (size_t i = begin; i < end; i++)
        a->y[i] = a->x[i] + a->offset;
    return 0;
}

/* AICPU: a device function that detects a problem and fails its launch. */
static int fail_on_aicpu(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    (void)args;
    (void)args_size;
    return DEMO_KERNEL_ERROR;
}

/* ------------------------------------------------------------------ helpers */

/* The device objects the demo works with. */
struct demo {
    float *dev_x; /* input, scaled in place on stream A */
    float *dev_y; /* output, written on stream B */
    simdev_stream_t stream_a;
    simdev_stream_t stream_b;
    simdev_event_t a_done; /* A -> B: x is scaled */
    simdev_event_t b_done; /* B -> A: y is written (the join, in the graph) */
    float host_x[ELEMENTS];
    float host_y[ELEMENTS];
};

/* Input of round `round`: small integers, so every result is exact. */
static void fill_input(float *x, int round)
{
    for (size_t i = 0; i < ELEMENTS; i++)
        x[i] = (float)(i % 1000) + (float)round;
}

/* Compares y with (x * SCALE + OFFSET) for the input of `round`; prints the
 * first mismatch when `report` is set. Returns the number of mismatches. */
static size_t count_mismatches(const float *y, int round, const char *what, int report)
{
    float x[ELEMENTS];
    fill_input(x, round);
    size_t bad = 0;
    for (size_t i = 0; i < ELEMENTS; i++) {
        float want = x[i] * SCALE + OFFSET;
        if (y[i] != want) {
            if (bad == 0 && report)
                fprintf(stderr, "device_demo: %s: y[%zu] = %g, expected %g\n", what, i,
                        (double)y[i], (double)want);
            bad++;
        }
    }
    return bad;
}

/*
 * Enqueues the two-stream sequence: A scales x and records a_done; B waits
 * for a_done, computes y and records b_done; A waits for b_done (so A's end
 * covers both streams — in a capture, this is the join).
 */
static void enqueue_scale_then_offset(struct demo *d)
{
    struct scale_args scale = {.x = d->dev_x, .n = ELEMENTS, .scale = SCALE};
    struct offset_args offset = {.x = d->dev_x, .y = d->dev_y, .n = ELEMENTS, .offset = OFFSET};

    CHECK(simdev_launch_aicpu(d->stream_a, scale_on_aicpu, 2, &scale, sizeof(scale)));
    CHECK(simdev_event_record(d->a_done, d->stream_a));
    CHECK(simdev_stream_wait_event(d->stream_b, d->a_done));
    CHECK(simdev_launch_aicore(d->stream_b, offset_on_aicore, &offset, sizeof(offset)));
    CHECK(simdev_event_record(d->b_done, d->stream_b));
    CHECK(simdev_stream_wait_event(d->stream_a, d->b_done));
}

/* -------------------------------------------------------------------- steps */

static int eager_run(struct demo *d)
{
    fill_input(d->host_x, 0);
    CHECK(simdev_memcpy(d->dev_x, d->host_x, sizeof(d->host_x), SIMDEV_COPY_HOST_TO_DEVICE));
    enqueue_scale_then_offset(d);
    CHECK(simdev_stream_sync(d->stream_a)); /* covers B too: A waited for b_done */
    CHECK(simdev_memcpy(d->host_y, d->dev_y, sizeof(d->host_y), SIMDEV_COPY_DEVICE_TO_HOST));

    size_t bad = count_mismatches(d->host_y, 0, "eager", 1);
    printf("eager:   AICPU x*%.0f on stream A -> event -> AICore x+%.0f on stream B: %s\n",
           (double)SCALE, (double)OFFSET, bad ? "MISMATCH" : "all values exact");
    return bad ? 1 : 0;
}

static int graph_replay(struct demo *d)
{
    simdev_graph_t graph;
    simdev_graph_exec_t exec;
    size_t nodes;

    /* Nothing runs while capturing: the ops become graph nodes. B joins the
     * capture by waiting on a_done and leaves it by A waiting on b_done. */
    CHECK(simdev_stream_begin_capture(d->stream_a));
    enqueue_scale_then_offset(d);
    CHECK(simdev_stream_end_capture(d->stream_a, &graph));
    CHECK(simdev_graph_node_count(graph, &nodes));
    CHECK(simdev_graph_instantiate(&exec, graph));
    CHECK(simdev_graph_destroy(graph));

    size_t bad_replays = 0;
    for (int round = 1; round <= REPLAYS; round++) {
        /* The graph reads whatever is in dev_x when it runs: refresh it. The
         * previous replay has finished (synchronised below). */
        fill_input(d->host_x, round);
        CHECK(simdev_memcpy(d->dev_x, d->host_x, sizeof(d->host_x), SIMDEV_COPY_HOST_TO_DEVICE));
        CHECK(simdev_graph_launch(exec, d->stream_a));
        CHECK(simdev_stream_sync(d->stream_a));
        CHECK(simdev_memcpy(d->host_y, d->dev_y, sizeof(d->host_y), SIMDEV_COPY_DEVICE_TO_HOST));
        /* Report the first bad replay only: one is enough to debug. */
        if (count_mismatches(d->host_y, round, "replay", bad_replays == 0))
            bad_replays++;
    }
    CHECK(simdev_graph_exec_destroy(exec));

    printf("graph:   captured %zu nodes across 2 streams (fork and join through events), "
           "replayed %d times with fresh inputs: ",
           nodes, REPLAYS);
    if (bad_replays)
        printf("MISMATCH in %zu replays\n", bad_replays);
    else
        printf("all values exact\n");
    return bad_replays ? 1 : 0;
}

static int error_chain(struct demo *d)
{
    int failures = 0;
    struct scale_args scale = {.x = d->dev_x, .n = ELEMENTS, .scale = SCALE};
    struct offset_args offset = {.x = d->dev_x, .y = d->dev_y, .n = ELEMENTS, .offset = OFFSET};

    /* Known contents: x = input of round 0, y = zeros. */
    fill_input(d->host_x, 0);
    CHECK(simdev_memcpy(d->dev_x, d->host_x, sizeof(d->host_x), SIMDEV_COPY_HOST_TO_DEVICE));
    memset(d->host_y, 0, sizeof(d->host_y));
    CHECK(simdev_memcpy(d->dev_y, d->host_y, sizeof(d->host_y), SIMDEV_COPY_HOST_TO_DEVICE));

    /* A: fail, then a scale that must be skipped, then the event. B: wait for
     * the event (inheriting A's error), then a launch that must be skipped. */
    CHECK(simdev_launch_aicpu(d->stream_a, fail_on_aicpu, 1, NULL, 0));
    CHECK(simdev_launch_aicpu(d->stream_a, scale_on_aicpu, 2, &scale, sizeof(scale)));
    CHECK(simdev_event_record(d->a_done, d->stream_a));
    CHECK(simdev_stream_wait_event(d->stream_b, d->a_done));
    CHECK(simdev_launch_aicore(d->stream_b, offset_on_aicore, &offset, sizeof(offset)));

    int b_status = simdev_stream_sync(d->stream_b);
    int event_status = simdev_event_query(d->a_done);
    int a_status = simdev_stream_sync(d->stream_a);
    printf("errors:  device function failed on A with %d; event carried %d to B; "
           "sync(B) = %d (%s), sync(A) = %d\n",
           DEMO_KERNEL_ERROR, event_status, b_status, simpler_strerror(b_status), a_status);
    if (b_status != DEMO_KERNEL_ERROR || a_status != DEMO_KERNEL_ERROR ||
        event_status != DEMO_KERNEL_ERROR) {
        fprintf(stderr, "device_demo: the error did not travel A -> event -> B -> sync\n");
        failures++;
    }

    /* The skipped ops must have done nothing: x unscaled, y still zero. */
    float x_after[ELEMENTS];
    CHECK(simdev_memcpy(x_after, d->dev_x, sizeof(x_after), SIMDEV_COPY_DEVICE_TO_HOST));
    CHECK(simdev_memcpy(d->host_y, d->dev_y, sizeof(d->host_y), SIMDEV_COPY_DEVICE_TO_HOST));
    int x_untouched = memcmp(x_after, d->host_x, sizeof(x_after)) == 0;
    int y_untouched = 1;
    for (size_t i = 0; i < ELEMENTS; i++)
        y_untouched &= d->host_y[i] == 0.0f;
    printf("errors:  ops after the failure were skipped: x %s, y %s\n",
           x_untouched ? "unchanged" : "CHANGED", y_untouched ? "unchanged" : "CHANGED");
    if (!x_untouched || !y_untouched)
        failures++;

    /* sync cleared the carried errors: both streams run new work again. */
    fill_input(d->host_x, 0);
    CHECK(simdev_memcpy(d->dev_x, d->host_x, sizeof(d->host_x), SIMDEV_COPY_HOST_TO_DEVICE));
    enqueue_scale_then_offset(d);
    int again = simdev_stream_sync(d->stream_a);
    CHECK(simdev_memcpy(d->host_y, d->dev_y, sizeof(d->host_y), SIMDEV_COPY_DEVICE_TO_HOST));
    size_t bad = count_mismatches(d->host_y, 0, "after error", 1);
    printf("errors:  after sync cleared the error, the streams ran again: sync = %d, %s\n", again,
           bad ? "MISMATCH" : "all values exact");
    if (again != 0 || bad)
        failures++;
    return failures;
}

/* --------------------------------------------------------------------- main */

int main(void)
{
    /* A small device: 2 AICPU threads, 1 cube + 2 vector cores, 64 MiB. */
    struct simdev_config config;
    CHECK(simdev_config_default(&config));
    config.aicpu_threads = 2;
    config.aic_cores = 1;
    config.aiv_cores = 2;
    config.memory_bytes = 64u << 20;
    CHECK(simdev_device_configure(0, &config));
    CHECK(simdev_set_device(0));
    printf("device 0: %u AICPU threads, %u AIC + %u AIV cores, %llu MiB\n", config.aicpu_threads,
           config.aic_cores, config.aiv_cores, (unsigned long long)(config.memory_bytes >> 20));

    static struct demo d; /* static: the host vectors are 32 KiB */
    CHECK(simdev_malloc((void **)&d.dev_x, sizeof(d.host_x)));
    CHECK(simdev_malloc((void **)&d.dev_y, sizeof(d.host_y)));
    CHECK(simdev_stream_create(&d.stream_a));
    CHECK(simdev_stream_create(&d.stream_b));
    CHECK(simdev_event_create(&d.a_done));
    CHECK(simdev_event_create(&d.b_done));

    int failures = 0;
    failures += eager_run(&d);
    failures += graph_replay(&d);
    failures += error_chain(&d);

    CHECK(simdev_event_destroy(d.b_done));
    CHECK(simdev_event_destroy(d.a_done));
    CHECK(simdev_stream_destroy(d.stream_b));
    CHECK(simdev_stream_destroy(d.stream_a));
    CHECK(simdev_free(d.dev_y));
    CHECK(simdev_free(d.dev_x));

    struct simdev_mem_info info;
    CHECK(simdev_mem_get_info(0, &info));
    printf("memory:  in use at the end: %llu bytes in %llu allocations (high water %llu bytes)\n",
           (unsigned long long)info.in_use, (unsigned long long)info.allocations,
           (unsigned long long)info.high_water);
    if (info.in_use != 0 || info.allocations != 0)
        failures++;
    CHECK(simdev_device_reset(0)); /* stops the device's threads */

    printf("%s\n", failures ? "device_demo: FAILED" : "device_demo: OK");
    return failures ? 1 : 0;
}
