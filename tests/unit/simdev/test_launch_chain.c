/*
 * test_launch_chain.c — the shape of a kernel-mode launch chain,
 * rehearsed on simdev alone.
 *
 * Owns: a device-level scenario in the shape DESIGN.md section 7 plans for
 * kernel mode (src/launch/kernel_launch.c and src/launch/chain.c): caller stream ->
 * AICPU stream -> AICore stream -> AICPU stream -> caller stream, joined by
 * events, with an AICPU function that dispatches work to every core through
 * the register windows while the AICore launch runs a core loop. Both device
 * functions are this test's own small stand-ins, not the runtime's
 * orchestrator, schedulers or core loop, and no simpler.h call is made. It
 * is run eagerly, then captured from the caller stream and replayed with
 * fresh inputs, and a core failure must reach the caller's synchronisation
 * in both forms: what it proves is that simdev's streams, events, capture
 * and graphs carry such a chain. Capturing and replaying real kernel-mode
 * launches is planned (the "Capture and replay" issue). Uses the public
 * simdev API only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "platform/platform.h"
#include "test_support.h"

#define ELEMS 3072          /* divisible by the 3 cores of the fixture */
#define CORE_FAILURE (-42)  /* a core's reported failure (orchestrator band) */

/* Per-round parameters, in device memory: the caller rewrites them before
 * each launch or replay, the device functions read them. */
struct round_params {
    float scale;
    int32_t fail; /* nonzero: every core reports CORE_FAILURE */
};

/* Frozen launch arguments: device pointers only. */
struct chain_args {
    const float *x;
    float *y;
    const struct round_params *params;
};

/*
 * Core loop. Doorbell values are odd for "run your slice" and even for
 * "exit"; they only grow, so a core that starts late still sees the task.
 * The core finishes a task by echoing its token in the condition word.
 */
static int core_loop(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    struct chain_args a;
    if (args_size != sizeof a)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&a, args, sizeof a);
    uint64_t token = platform_read_doorbell(ctx->regs);
    while (token % 2 == 0)
        if (platform_wait_doorbell(ctx->regs, token, 0, &token) != 0)
            return PTO_RUNTIME_ERR_INTERNAL;
    size_t slice = ELEMS / ctx->core_count;
    for (size_t i = ctx->core_id * slice; i < (ctx->core_id + 1) * slice; i++)
        a.y[i] = a.x[i] * a.params->scale + (float)ctx->core_id;
    int status = a.params->fail ? CORE_FAILURE : 0;
    platform_write_cond(ctx->regs, token);
    while (token % 2 == 1)
        if (platform_wait_doorbell(ctx->regs, token, 0, &token) != 0)
            return PTO_RUNTIME_ERR_INTERNAL;
    return status;
}

/* The AICPU side: ring every core with a task, wait for every echo, then
 * ring every core to exit. */
static int aicpu_dispatch(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)args;
    (void)args_size;
    struct simdev_config config;
    if (simdev_device_get_config(ctx->device, &config) != 0)
        return PTO_RUNTIME_ERR_INTERNAL;
    uint32_t cores = config.aic_cores + config.aiv_cores;
    uint64_t task[SIMDEV_MAX_CORES];
    for (uint32_t c = 0; c < cores; c++) {
        struct simdev_core_regs *regs = platform_core_regs(ctx->device, c);
        task[c] = platform_read_doorbell(regs) + 1;
        platform_ring_doorbell(regs, task[c]);
    }
    for (uint32_t c = 0; c < cores; c++) {
        struct simdev_core_regs *regs = platform_core_regs(ctx->device, c);
        for (;;) {
            uint64_t seen = platform_cond_seq(ctx->device);
            if (platform_read_cond(regs) == task[c])
                break;
            if (platform_cond_wait(ctx->device, seen, 0) != 0)
                return PTO_RUNTIME_ERR_INTERNAL;
        }
    }
    for (uint32_t c = 0; c < cores; c++)
        platform_ring_doorbell(platform_core_regs(ctx->device, c), task[c] + 1);
    return 0;
}

struct chain {
    simdev_stream_t caller, aicpu, aicore;
    simdev_event_t start, aicore_start, aicore_done, aicpu_done;
    float *x, *y;
    struct round_params *params;
};

static void chain_open(struct chain *c)
{
    assert_int_equal(simdev_stream_create(&c->caller), 0);
    assert_int_equal(simdev_stream_create(&c->aicpu), 0);
    assert_int_equal(simdev_stream_create(&c->aicore), 0);
    assert_int_equal(simdev_event_create(&c->start), 0);
    assert_int_equal(simdev_event_create(&c->aicore_start), 0);
    assert_int_equal(simdev_event_create(&c->aicore_done), 0);
    assert_int_equal(simdev_event_create(&c->aicpu_done), 0);
    assert_int_equal(simdev_malloc((void **)&c->x, ELEMS * sizeof(float)), 0);
    assert_int_equal(simdev_malloc((void **)&c->y, ELEMS * sizeof(float)), 0);
    assert_int_equal(simdev_malloc((void **)&c->params, sizeof(struct round_params)), 0);
}

static void chain_close(struct chain *c)
{
    assert_int_equal(simdev_free(c->x), 0);
    assert_int_equal(simdev_free(c->y), 0);
    assert_int_equal(simdev_free(c->params), 0);
    assert_int_equal(simdev_event_destroy(c->start), 0);
    assert_int_equal(simdev_event_destroy(c->aicore_start), 0);
    assert_int_equal(simdev_event_destroy(c->aicore_done), 0);
    assert_int_equal(simdev_event_destroy(c->aicpu_done), 0);
    assert_int_equal(simdev_stream_destroy(c->caller), 0);
    assert_int_equal(simdev_stream_destroy(c->aicpu), 0);
    assert_int_equal(simdev_stream_destroy(c->aicore), 0);
}

/* Enqueues the chain, in the order DESIGN.md section 7 plans for kernel mode. */
static void chain_enqueue(struct chain *c)
{
    struct chain_args args = {.x = c->x, .y = c->y, .params = c->params};
    assert_int_equal(simdev_event_record(c->start, c->caller), 0);
    assert_int_equal(simdev_stream_wait_event(c->aicpu, c->start), 0);
    assert_int_equal(simdev_event_record(c->aicore_start, c->aicpu), 0);
    assert_int_equal(simdev_stream_wait_event(c->aicore, c->aicore_start), 0);
    assert_int_equal(simdev_launch_aicore(c->aicore, core_loop, &args, sizeof args), 0);
    assert_int_equal(simdev_event_record(c->aicore_done, c->aicore), 0);
    assert_int_equal(simdev_launch_aicpu(c->aicpu, aicpu_dispatch, 1, NULL, 0), 0);
    assert_int_equal(simdev_stream_wait_event(c->aicpu, c->aicore_done), 0);
    assert_int_equal(simdev_event_record(c->aicpu_done, c->aicpu), 0);
    assert_int_equal(simdev_stream_wait_event(c->caller, c->aicpu_done), 0);
}

/* Stages round `r`'s inputs on the caller stream (ordered before the chain
 * by FIFO). The host buffers must live until the caller stream syncs. */
static void stage_inputs(struct chain *c, float *host_x, struct round_params *host_params, int r,
                         int fail)
{
    for (int i = 0; i < ELEMS; i++)
        host_x[i] = (float)(i % 97 + r);
    host_params->scale = (float)(r % 5 + 1);
    host_params->fail = fail;
    assert_int_equal(simdev_memcpy_async(c->x, host_x, ELEMS * sizeof(float),
                                         SIMDEV_COPY_HOST_TO_DEVICE, c->caller), 0);
    assert_int_equal(simdev_memcpy_async(c->params, host_params, sizeof *host_params,
                                         SIMDEV_COPY_HOST_TO_DEVICE, c->caller), 0);
}

static void check_outputs(const float *host_y, int r)
{
    size_t slice = ELEMS / 3;
    for (int i = 0; i < ELEMS; i++) {
        float expected = (float)(i % 97 + r) * (float)(r % 5 + 1) + (float)(i / (int)slice);
        if (host_y[i] != expected)
            fail_msg("round %d element %d: got %f, expected %f (a wrong value means a core "
                     "read stale inputs or ran the wrong slice)", r, i, host_y[i], expected);
    }
}

static void chain_round_trip(struct chain *c, float *host_y)
{
    assert_int_equal(simdev_memcpy_async(host_y, c->y, ELEMS * sizeof(float),
                                         SIMDEV_COPY_DEVICE_TO_HOST, c->caller), 0);
}

static void eager_chain_computes_every_round_with_fresh_inputs(void **state)
{
    (void)state;
    struct chain c;
    chain_open(&c);
    static float host_x[ELEMS], host_y[ELEMS];
    struct round_params host_params;
    for (int r = 0; r < 20; r++) {
        stage_inputs(&c, host_x, &host_params, r, 0);
        chain_enqueue(&c);
        chain_round_trip(&c, host_y);
        assert_int_equal(simdev_stream_sync(c.caller), 0);
        check_outputs(host_y, r);
    }
    assert_int_equal(simdev_stream_sync(c.aicpu), 0);
    assert_int_equal(simdev_stream_sync(c.aicore), 0);
    chain_close(&c);
}

static void captured_chain_replays_with_fresh_inputs(void **state)
{
    (void)state;
    struct chain c;
    chain_open(&c);
    static float host_x[ELEMS], host_y[ELEMS];
    struct round_params host_params;

    /* Eager warm-up, then capture from the caller stream. */
    stage_inputs(&c, host_x, &host_params, 0, 0);
    chain_enqueue(&c);
    chain_round_trip(&c, host_y);
    assert_int_equal(simdev_stream_sync(c.caller), 0);
    check_outputs(host_y, 0);

    uint64_t launches_before;
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_LAUNCH, &launches_before), 0);
    simdev_graph_t graph;
    assert_int_equal(simdev_stream_begin_capture(c.caller), 0);
    chain_enqueue(&c);
    assert_int_equal(simdev_stream_end_capture(c.caller, &graph), 0);
    size_t nodes;
    assert_int_equal(simdev_graph_node_count(graph, &nodes), 0);
    assert_int_equal(nodes, 2); /* the AICore and AICPU launches; events are edges */
    simdev_graph_exec_t exec;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);

    for (int r = 1; r <= 100; r++) {
        stage_inputs(&c, host_x, &host_params, r, 0);
        assert_int_equal(simdev_graph_launch(exec, c.caller), 0);
        chain_round_trip(&c, host_y);
        assert_int_equal(simdev_stream_sync(c.caller), 0);
        check_outputs(host_y, r);
    }
    uint64_t launches_after;
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_LAUNCH, &launches_after), 0);
    /* The two captured launches were counted once, at capture; 202 would mean
     * each replay went back through the host enqueue path. */
    assert_int_equal(launches_after - launches_before, 2);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    chain_close(&c);
}

static void core_failure_reaches_the_caller_eagerly_and_in_replay(void **state)
{
    (void)state;
    struct chain c;
    chain_open(&c);
    static float host_x[ELEMS], host_y[ELEMS];
    struct round_params host_params;

    /* Eager: the AICore stream fails, AicoreDone carries it to the AICPU
     * stream, AicpuDone to the caller. */
    stage_inputs(&c, host_x, &host_params, 1, 1);
    chain_enqueue(&c);
    assert_int_equal(simdev_stream_sync(c.caller), CORE_FAILURE);
    assert_int_equal(simdev_stream_sync(c.aicpu), CORE_FAILURE);
    assert_int_equal(simdev_stream_sync(c.aicore), CORE_FAILURE);

    /* The same chain runs clean afterwards. */
    stage_inputs(&c, host_x, &host_params, 2, 0);
    chain_enqueue(&c);
    chain_round_trip(&c, host_y);
    assert_int_equal(simdev_stream_sync(c.caller), 0);
    check_outputs(host_y, 2);

    /* Replay: a failing round reaches the replay stream; the next is clean. */
    simdev_graph_t graph;
    assert_int_equal(simdev_stream_begin_capture(c.caller), 0);
    chain_enqueue(&c);
    assert_int_equal(simdev_stream_end_capture(c.caller, &graph), 0);
    simdev_graph_exec_t exec;
    assert_int_equal(simdev_graph_instantiate(&exec, graph), 0);
    assert_int_equal(simdev_graph_destroy(graph), 0);

    stage_inputs(&c, host_x, &host_params, 3, 1);
    assert_int_equal(simdev_graph_launch(exec, c.caller), 0);
    assert_int_equal(simdev_stream_sync(c.caller), CORE_FAILURE);
    stage_inputs(&c, host_x, &host_params, 4, 0);
    assert_int_equal(simdev_graph_launch(exec, c.caller), 0);
    chain_round_trip(&c, host_y);
    assert_int_equal(simdev_stream_sync(c.caller), 0); /* -42: the failure leaked */
    check_outputs(host_y, 4);

    assert_int_equal(simdev_stream_sync(c.aicpu), 0);  /* replays never touch them */
    assert_int_equal(simdev_stream_sync(c.aicore), 0);
    assert_int_equal(simdev_graph_exec_destroy(exec), 0);
    chain_close(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(eager_chain_computes_every_round_with_fresh_inputs),
        SIMPLER_TEST(captured_chain_replays_with_fresh_inputs),
        SIMPLER_TEST(core_failure_reaches_the_caller_eagerly_and_in_replay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
