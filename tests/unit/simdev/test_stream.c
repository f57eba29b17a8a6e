/*
 * test_stream.c — streams and launches.
 *
 * Owns: FIFO execution within a stream, asynchronous launch, the execution
 * shape of AICPU and AICore launches (threads, indices, core ids and types),
 * argument deep copies, argument checks, stream destroy/query and device
 * sync. Events and errors have their own files.
 *
 * Objects that device work points at (gates, logs, counters, async copy
 * buffers) are static: a failed assertion leaves the test's frame, and work
 * still queued must not be left pointing into a dead stack.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "platform/platform.h"
#include "test_support.h"

#define FIFO_OPS 1000

/* ------------------------------------------------------------ FIFO order */

struct log_entry_arg {
    struct ts_log *log;
    int index;
};

static int log_host_fn(void *user_data)
{
    struct log_entry_arg *arg = user_data;
    ts_log_append(arg->log, arg->index);
    return 0;
}

static int log_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    struct log_entry_arg arg;
    if (args_size != sizeof arg)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&arg, args, sizeof arg);
    if (ctx->thread_index == 0)
        ts_log_append(arg.log, arg.index);
    return 0;
}

static int log_aicore_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    struct log_entry_arg arg;
    if (args_size != sizeof arg)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&arg, args, sizeof arg);
    if (ctx->core_id == 0)
        ts_log_append(arg.log, arg.index);
    return 0;
}

static void assert_log_is_0_to_n(struct ts_log *log, int n)
{
    assert_int_equal(log->overflow, 0); /* nonzero: some op ran more than once */
    assert_int_equal(log->count, n);    /* fewer: ops were lost; more: ran twice */
    for (int i = 0; i < n; i++)
        assert_int_equal(log->entries[i], i); /* out of place: FIFO order broken */
}

static void host_funcs_run_in_fifo_order(void **state)
{
    (void)state;
    static struct log_entry_arg args[FIFO_OPS]; /* borrowed by the stream until each runs */
    static struct ts_log log;
    simdev_stream_t stream;
    ts_log_init(&log, FIFO_OPS);
    assert_int_equal(simdev_stream_create(&stream), 0);
    for (int i = 0; i < FIFO_OPS; i++) {
        args[i] = (struct log_entry_arg){&log, i};
        assert_int_equal(simdev_launch_host_func(stream, log_host_fn, &args[i]), 0);
    }
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_log_is_0_to_n(&log, FIFO_OPS);
    assert_int_equal(simdev_stream_destroy(stream), 0);
    ts_log_destroy(&log);
}

static void aicpu_launches_run_in_fifo_order(void **state)
{
    (void)state;
    static struct ts_log log;
    simdev_stream_t stream;
    ts_log_init(&log, FIFO_OPS);
    assert_int_equal(simdev_stream_create(&stream), 0);
    for (int i = 0; i < FIFO_OPS; i++) {
        struct log_entry_arg arg = {&log, i}; /* reused at once: launch copies it */
        assert_int_equal(simdev_launch_aicpu(stream, log_aicpu_fn, 1, &arg, sizeof arg), 0);
    }
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_log_is_0_to_n(&log, FIFO_OPS);
    assert_int_equal(simdev_stream_destroy(stream), 0);
    ts_log_destroy(&log);
}

static void mixed_aicpu_aicore_and_host_ops_run_in_fifo_order(void **state)
{
    (void)state;
    enum { OPS = 300 };
    static struct log_entry_arg host_args[OPS];
    static struct ts_log log;
    simdev_stream_t stream;
    ts_log_init(&log, OPS);
    assert_int_equal(simdev_stream_create(&stream), 0);
    for (int i = 0; i < OPS; i++) {
        struct log_entry_arg arg = {&log, i};
        switch (i % 3) {
        case 0:
            assert_int_equal(simdev_launch_aicpu(stream, log_aicpu_fn, 2, &arg, sizeof arg), 0);
            break;
        case 1:
            assert_int_equal(simdev_launch_aicore(stream, log_aicore_fn, &arg, sizeof arg), 0);
            break;
        default:
            host_args[i] = arg;
            assert_int_equal(simdev_launch_host_func(stream, log_host_fn, &host_args[i]), 0);
            break;
        }
    }
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_log_is_0_to_n(&log, OPS);
    assert_int_equal(simdev_stream_destroy(stream), 0);
    ts_log_destroy(&log);
}

/* ------------------------------------------------------------ asynchrony */

struct blocking_callback {
    struct ts_gate gate;
    pthread_t launcher;
    atomic_int ran_inline; /* ran on the thread that launched it */
};

/* Blocks in the gate, unless it runs on the launching thread: blocking there
 * would hang the test instead of failing it. */
static int blocking_host_fn(void *user_data)
{
    struct blocking_callback *cb = user_data;
    if (pthread_equal(pthread_self(), cb->launcher)) {
        atomic_store(&cb->ran_inline, 1);
        return 0;
    }
    ts_gate_pass(&cb->gate);
    return 0;
}

static void launch_returns_before_the_work_runs(void **state)
{
    (void)state;
    static struct blocking_callback cb;
    static atomic_int after_gate = 0;
    simdev_stream_t stream;
    ts_gate_init(&cb.gate);
    cb.launcher = pthread_self();
    atomic_store(&cb.ran_inline, 0);
    assert_int_equal(simdev_stream_create(&stream), 0);
    assert_int_equal(simdev_stream_query(stream), 0); /* an empty stream is drained and clean */

    assert_int_equal(simdev_launch_host_func(stream, blocking_host_fn, &cb), 0);
    ts_launch_count(stream, &after_gate);
    assert_int_equal(atomic_load(&cb.ran_inline), 0); /* 1: launch ran the work before returning */
    /* the callback is running, blocked in the gate */
    int started = ts_gate_wait_arrivals_for(&cb.gate, 1, TS_DEADLOCK_GUARD_MS);
    int query_while_blocked = simdev_stream_query(stream);
    int ran_early = atomic_load(&after_gate);
    ts_gate_open(&cb.gate);
    assert_true(started); /* false: the stream never ran the callback */
    assert_int_equal(query_while_blocked, PTO_RUNTIME_ERR_NOT_READY); /* 0: query ignores pending work */
    assert_int_equal(ran_early, 0); /* 1: the op behind the blocked one overtook it */

    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(atomic_load(&after_gate), 1); /* 0: sync returned before the work ran */
    assert_int_equal(simdev_stream_query(stream), 0);
    assert_int_equal(simdev_stream_destroy(stream), 0);
    ts_gate_destroy(&cb.gate);
}

/* ----------------------------------------------------------- AICPU shape */

struct aicpu_observation {
    struct ts_gate gate;    /* every thread passes it: proves they run at once */
    atomic_int calls;
    atomic_int per_index[SIMDEV_MAX_AICPU_THREADS];
    atomic_int bad_index;   /* thread_index out of 0..thread_count-1 */
    atomic_int bad_context; /* wrong device or thread_count */
    pthread_t thread_of[SIMDEV_MAX_AICPU_THREADS];
    const void *args_of[SIMDEV_MAX_AICPU_THREADS]; /* one shared copy for all threads */
    uint32_t expected_count;
};

static int observe_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    struct aicpu_observation *obs;
    if (args_size != sizeof obs)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&obs, args, sizeof obs);
    atomic_fetch_add(&obs->calls, 1);
    if (ctx->device != 0 || ctx->thread_count != obs->expected_count)
        atomic_fetch_add(&obs->bad_context, 1);
    if (ctx->thread_index >= ctx->thread_count || ctx->thread_index >= SIMDEV_MAX_AICPU_THREADS) {
        atomic_fetch_add(&obs->bad_index, 1);
    } else {
        atomic_fetch_add(&obs->per_index[ctx->thread_index], 1);
        obs->thread_of[ctx->thread_index] = pthread_self(); /* read after the stream sync */
        obs->args_of[ctx->thread_index] = args;
    }
    ts_gate_pass(&obs->gate);
    return 0;
}

/* Launches observe_aicpu_fn on n threads and checks the shape of the run. */
static void check_aicpu_launch_shape(uint32_t n)
{
    static struct aicpu_observation obs;
    memset(&obs, 0, sizeof obs);
    ts_gate_init(&obs.gate);
    obs.expected_count = n;
    simdev_stream_t stream;
    assert_int_equal(simdev_stream_create(&stream), 0);

    struct aicpu_observation *arg = &obs;
    assert_int_equal(simdev_launch_aicpu(stream, observe_aicpu_fn, n, &arg, sizeof arg), 0);
    /* all n threads reach the gate before any leaves it: they run at once */
    int all_at_once = ts_gate_wait_arrivals_for(&obs.gate, (int)n, TS_DEADLOCK_GUARD_MS);
    ts_gate_open(&obs.gate);
    assert_true(all_at_once); /* false: the threads of one launch ran one after another */
    assert_int_equal(simdev_stream_sync(stream), 0);

    assert_int_equal(atomic_load(&obs.calls), n); /* other: not exactly thread_count threads */
    assert_int_equal(atomic_load(&obs.bad_index), 0);
    assert_int_equal(atomic_load(&obs.bad_context), 0);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(atomic_load(&obs.per_index[i]), 1); /* 0 or 2: an index was reused */
        assert_false(pthread_equal(obs.thread_of[i], pthread_self())); /* ran on the caller */
        for (uint32_t j = 0; j < i; j++)
            assert_false(pthread_equal(obs.thread_of[i], obs.thread_of[j])); /* shared a thread */
        assert_ptr_equal(obs.args_of[i], obs.args_of[0]); /* differs: not one shared copy */
    }
    for (uint32_t i = n; i < SIMDEV_MAX_AICPU_THREADS; i++)
        assert_int_equal(atomic_load(&obs.per_index[i]), 0);
    assert_int_equal(simdev_stream_destroy(stream), 0);
    ts_gate_destroy(&obs.gate);
}

static void aicpu_launch_runs_on_exactly_thread_count_threads_with_each_index_once(void **state)
{
    (void)state;
    check_aicpu_launch_shape(1);
    check_aicpu_launch_shape(2); /* the whole configured pool */

    struct simdev_config config;
    assert_int_equal(simdev_config_default(&config), 0);
    config.aicpu_threads = 4;
    config.memory_bytes = 64u << 20;
    config.watchdog_ms = 0;
    ts_device_setup_config(&config);
    check_aicpu_launch_shape(3); /* fewer than the pool: indices still 0..n-1 */
    check_aicpu_launch_shape(4);
}

#define ARG_BYTES 256

static unsigned char arg_pattern_byte(size_t i)
{
    return (unsigned char)(i * 13u + 5u);
}

struct args_seen {
    atomic_int calls;
    atomic_int wrong_size;
    atomic_int wrong_bytes;
    atomic_int aliased; /* args pointed at the caller's buffer */
    const void *caller_buffer;
};

static struct args_seen seen;

static void check_args(const void *args, size_t args_size)
{
    atomic_fetch_add(&seen.calls, 1);
    if (args_size != ARG_BYTES || args == NULL) {
        atomic_fetch_add(&seen.wrong_size, 1);
        return;
    }
    if (args == seen.caller_buffer)
        atomic_fetch_add(&seen.aliased, 1);
    const unsigned char *bytes = args;
    for (size_t i = 0; i < ARG_BYTES; i++) {
        if (bytes[i] != arg_pattern_byte(i)) {
            atomic_fetch_add(&seen.wrong_bytes, 1);
            return;
        }
    }
}

static int args_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    check_args(args, args_size);
    return 0;
}

static int args_aicore_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    check_args(args, args_size);
    return 0;
}

/* Enqueues a launch behind a gate, overwrites the caller's buffer, then lets
 * the launch run: it must see the bytes as they were at enqueue. */
static void check_args_copied_at_enqueue(int aicore)
{
    static unsigned char buffer[ARG_BYTES];
    static struct ts_gate gate;
    simdev_stream_t stream;
    memset(&seen, 0, sizeof seen);
    seen.caller_buffer = buffer;
    ts_gate_init(&gate);
    for (size_t i = 0; i < ARG_BYTES; i++)
        buffer[i] = arg_pattern_byte(i);
    assert_int_equal(simdev_stream_create(&stream), 0);

    ts_launch_gate(stream, &gate);
    if (aicore)
        assert_int_equal(simdev_launch_aicore(stream, args_aicore_fn, buffer, ARG_BYTES), 0);
    else
        assert_int_equal(simdev_launch_aicpu(stream, args_aicpu_fn, 2, buffer, ARG_BYTES), 0);
    memset(buffer, 0xEE, sizeof buffer); /* the caller reuses its buffer at once */
    ts_gate_open(&gate);
    assert_int_equal(simdev_stream_sync(stream), 0);

    int expected_calls = aicore ? 3 : 2; /* 3 cores in the fixture; 2 threads launched */
    assert_int_equal(atomic_load(&seen.calls), expected_calls);
    assert_int_equal(atomic_load(&seen.wrong_size), 0);
    assert_int_equal(atomic_load(&seen.aliased), 0);     /* 1+: args borrowed, not copied */
    assert_int_equal(atomic_load(&seen.wrong_bytes), 0); /* 1+: the copy was taken late */
    assert_int_equal(simdev_stream_destroy(stream), 0);
    ts_gate_destroy(&gate);
}

static void aicpu_launch_copies_args_at_enqueue(void **state)
{
    (void)state;
    check_args_copied_at_enqueue(0);
}

static void aicore_launch_copies_args_at_enqueue(void **state)
{
    (void)state;
    check_args_copied_at_enqueue(1);
}

struct size_seen {
    atomic_int calls;
    atomic_int null_args; /* args was NULL */
    atomic_size_t size;
    atomic_int bad_bytes;
    atomic_int misaligned; /* args not a multiple of SIMDEV_LAUNCH_ARGS_ALIGN */
};

static struct size_seen size_seen;

static int record_size_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    atomic_fetch_add(&size_seen.calls, 1);
    atomic_store(&size_seen.size, args_size);
    if (args == NULL) {
        atomic_fetch_add(&size_seen.null_args, 1);
        return 0;
    }
    if ((uintptr_t)args % SIMDEV_LAUNCH_ARGS_ALIGN != 0)
        atomic_fetch_add(&size_seen.misaligned, 1);
    const unsigned char *bytes = args;
    for (size_t i = 0; i < args_size; i++)
        if (bytes[i] != arg_pattern_byte(i)) {
            atomic_fetch_add(&size_seen.bad_bytes, 1);
            break;
        }
    return 0;
}

static void args_of_zero_bytes_arrive_as_null_and_of_max_size_arrive_intact(void **state)
{
    (void)state;
    static unsigned char big[SIMDEV_MAX_LAUNCH_ARGS];
    simdev_stream_t stream;
    assert_int_equal(simdev_stream_create(&stream), 0);

    memset(&size_seen, 0, sizeof size_seen);
    assert_int_equal(simdev_launch_aicpu(stream, record_size_fn, 1, NULL, 0), 0);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(atomic_load(&size_seen.calls), 1);
    assert_int_equal(atomic_load(&size_seen.size), 0);
    assert_int_equal(atomic_load(&size_seen.null_args), 1); /* 0: args not NULL when size is 0 */

    for (size_t i = 0; i < sizeof big; i++)
        big[i] = arg_pattern_byte(i);
    memset(&size_seen, 0, sizeof size_seen);
    assert_int_equal(simdev_launch_aicpu(stream, record_size_fn, 1, big, sizeof big), 0);
    memset(big, 0, sizeof big);
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(atomic_load(&size_seen.calls), 1);
    assert_int_equal(atomic_load(&size_seen.size), SIMDEV_MAX_LAUNCH_ARGS);
    assert_int_equal(atomic_load(&size_seen.bad_bytes), 0); /* 1: the largest args truncated */
    assert_int_equal(atomic_load(&size_seen.misaligned), 0); /* 1: a packet could not be read in place */
    assert_int_equal(simdev_stream_destroy(stream), 0);
}

/* ---------------------------------------------------------- AICore shape */

struct aicore_observation {
    struct ts_gate gate;
    atomic_int calls;
    atomic_int per_core[SIMDEV_MAX_CORES];
    atomic_int bad_id;
    atomic_int wrong_type;
    atomic_int wrong_counts;
    atomic_int wrong_regs;
    uint32_t aic, aiv;
};

static int observe_aicore_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    struct aicore_observation *obs;
    if (args_size != sizeof obs)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&obs, args, sizeof obs);
    atomic_fetch_add(&obs->calls, 1);
    if (ctx->device != 0 || ctx->aic_count != obs->aic || ctx->aiv_count != obs->aiv ||
        ctx->core_count != obs->aic + obs->aiv)
        atomic_fetch_add(&obs->wrong_counts, 1);
    if (ctx->core_id >= obs->aic + obs->aiv) {
        atomic_fetch_add(&obs->bad_id, 1);
    } else {
        atomic_fetch_add(&obs->per_core[ctx->core_id], 1);
        enum simdev_core_type expected = ctx->core_id < obs->aic ? SIMDEV_CORE_AIC : SIMDEV_CORE_AIV;
        if (ctx->core_type != expected)
            atomic_fetch_add(&obs->wrong_type, 1);
        if (ctx->regs == NULL || ctx->regs != platform_core_regs(0, ctx->core_id))
            atomic_fetch_add(&obs->wrong_regs, 1);
    }
    ts_gate_pass(&obs->gate);
    return 0;
}

static void check_aicore_launch_shape(uint32_t aic, uint32_t aiv)
{
    static struct aicore_observation obs;
    memset(&obs, 0, sizeof obs);
    ts_gate_init(&obs.gate);
    obs.aic = aic;
    obs.aiv = aiv;
    simdev_stream_t stream;
    assert_int_equal(simdev_stream_create(&stream), 0);

    struct aicore_observation *arg = &obs;
    assert_int_equal(simdev_launch_aicore(stream, observe_aicore_fn, &arg, sizeof arg), 0);
    int all_at_once = ts_gate_wait_arrivals_for(&obs.gate, (int)(aic + aiv), TS_DEADLOCK_GUARD_MS);
    ts_gate_open(&obs.gate);
    assert_true(all_at_once); /* false: the cores of one launch did not run at once */
    assert_int_equal(simdev_stream_sync(stream), 0);

    assert_int_equal(atomic_load(&obs.calls), aic + aiv); /* other: not once per core */
    assert_int_equal(atomic_load(&obs.bad_id), 0);
    assert_int_equal(atomic_load(&obs.wrong_counts), 0);
    assert_int_equal(atomic_load(&obs.wrong_type), 0); /* 1+: AIC/AIV numbering is not AIC first */
    assert_int_equal(atomic_load(&obs.wrong_regs), 0); /* 1+: a core got another's window */
    for (uint32_t i = 0; i < aic + aiv; i++)
        assert_int_equal(atomic_load(&obs.per_core[i]), 1); /* 0 or 2: a core id missing or twice */
    assert_int_equal(simdev_stream_destroy(stream), 0);
    ts_gate_destroy(&obs.gate);
}

static void aicore_launch_runs_once_per_core_with_aic_ids_first_then_aiv(void **state)
{
    (void)state;
    check_aicore_launch_shape(1, 2); /* the fixture's topology */

    struct simdev_config config;
    assert_int_equal(simdev_config_default(&config), 0);
    config.aic_cores = 2;
    config.aiv_cores = 3;
    config.memory_bytes = 64u << 20;
    config.watchdog_ms = 0;
    ts_device_setup_config(&config);
    check_aicore_launch_shape(2, 3);
}

/* -------------------------------------------------------- argument checks */

static int never_called_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t n)
{
    (void)ctx, (void)args, (void)n;
    return PTO_RUNTIME_ERR_INTERNAL;
}

static int never_called_aicore_fn(const struct simdev_core_ctx *ctx, const void *args, size_t n)
{
    (void)ctx, (void)args, (void)n;
    return PTO_RUNTIME_ERR_INTERNAL;
}

static void invalid_launch_arguments_are_rejected_and_enqueue_nothing(void **state)
{
    (void)state;
    static unsigned char too_big[SIMDEV_MAX_LAUNCH_ARGS + 1];
    int word = 0;
    simdev_stream_t stream;
    assert_int_equal(simdev_stream_create(&stream), 0);
    const int bad = PTO_RUNTIME_ERR_INVALID_ARGUMENT;

    /* AICPU: NULL fn, no threads, more threads than configured (2), args too big,
     * NULL args with a size, NULL stream */
    assert_int_equal(simdev_launch_aicpu(stream, NULL, 1, NULL, 0), bad);
    assert_int_equal(simdev_launch_aicpu(stream, never_called_aicpu_fn, 0, NULL, 0), bad);
    assert_int_equal(simdev_launch_aicpu(stream, never_called_aicpu_fn, 3, NULL, 0), bad);
    assert_int_equal(simdev_launch_aicpu(stream, never_called_aicpu_fn, SIMDEV_MAX_AICPU_THREADS + 1,
                                         NULL, 0),
                     bad);
    assert_int_equal(simdev_launch_aicpu(stream, never_called_aicpu_fn, 1, too_big,
                                         sizeof too_big),
                     bad);
    assert_int_equal(simdev_launch_aicpu(stream, never_called_aicpu_fn, 1, NULL, 8), bad);
    assert_int_equal(simdev_launch_aicpu(NULL, never_called_aicpu_fn, 1, &word, sizeof word), bad);

    /* AICore: NULL fn, args too big, NULL args with a size, NULL stream */
    assert_int_equal(simdev_launch_aicore(stream, NULL, NULL, 0), bad);
    assert_int_equal(simdev_launch_aicore(stream, never_called_aicore_fn, too_big,
                                          sizeof too_big),
                     bad);
    assert_int_equal(simdev_launch_aicore(stream, never_called_aicore_fn, NULL, 8), bad);
    assert_int_equal(simdev_launch_aicore(NULL, never_called_aicore_fn, NULL, 0), bad);

    /* host callback: NULL fn, NULL stream */
    assert_int_equal(simdev_launch_host_func(stream, NULL, &word), bad);
    assert_int_equal(simdev_launch_host_func(NULL, ts_count_host_fn, &word), bad);

    uint64_t launches = 99;
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_LAUNCH, &launches), 0);
    assert_int_equal(launches, 0); /* 1+: a rejected launch was enqueued */
    /* never_called_* would fail the stream had anything run */
    assert_int_equal(simdev_stream_sync(stream), 0);
    assert_int_equal(simdev_stream_destroy(stream), 0);
}

static void stream_create_and_query_reject_bad_arguments(void **state)
{
    (void)state;
    assert_int_equal(simdev_stream_create(NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_stream_query(NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_stream_sync(NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    assert_int_equal(simdev_stream_destroy(NULL), PTO_RUNTIME_ERR_INVALID_ARGUMENT);
    uint64_t created = 99;
    assert_int_equal(simdev_op_count(0, SIMDEV_OP_STREAM_CREATE, &created), 0);
    assert_int_equal(created, 0);
}

/* -------------------------------------------------------- destroy / sync */

static void stream_destroy_waits_for_pending_work(void **state)
{
    (void)state;
    enum { BEHIND = 200 };
    static struct ts_gate gate;
    static atomic_int ran = 0;
    simdev_stream_t stream;
    pthread_t opener;
    ts_gate_init(&gate);
    assert_int_equal(simdev_stream_create(&stream), 0);
    ts_launch_gate(stream, &gate);
    for (int i = 0; i < BEHIND; i++)
        ts_launch_count(stream, &ran);
    /* the gate opens from another thread while this one is in destroy */
    assert_int_equal(pthread_create(&opener, NULL, ts_gate_opener_main, &gate), 0);
    assert_int_equal(simdev_stream_destroy(stream), 0);
    int ran_at_destroy_return = atomic_load(&ran);
    assert_int_equal(pthread_join(opener, NULL), 0);
    assert_int_equal(ran_at_destroy_return, BEHIND); /* less: destroy dropped or outran work */
    ts_gate_destroy(&gate);
}

static void device_sync_drains_every_stream_of_the_current_device(void **state)
{
    (void)state;
    enum { STREAMS = 3, OPS = 50 };
    simdev_stream_t streams[STREAMS];
    static atomic_int ran[STREAMS];
    for (int s = 0; s < STREAMS; s++) {
        atomic_init(&ran[s], 0);
        assert_int_equal(simdev_stream_create(&streams[s]), 0);
    }
    for (int i = 0; i < OPS; i++)
        for (int s = 0; s < STREAMS; s++)
            ts_launch_count(streams[s], &ran[s]);
    assert_int_equal(simdev_device_sync(), 0);
    for (int s = 0; s < STREAMS; s++) {
        assert_int_equal(atomic_load(&ran[s]), OPS); /* less: device sync skipped a stream */
        assert_int_equal(simdev_stream_query(streams[s]), 0);
        assert_int_equal(simdev_stream_destroy(streams[s]), 0);
    }
}

static void launches_on_different_streams_run_at_the_same_time(void **state)
{
    (void)state;
    static struct ts_gate gate;
    struct ts_gate *arg = &gate;
    simdev_stream_t a, b;
    ts_gate_init(&gate);
    assert_int_equal(simdev_stream_create(&a), 0);
    assert_int_equal(simdev_stream_create(&b), 0);
    /* one AICPU thread each, two in the pool: both must be inside at once */
    assert_int_equal(simdev_launch_aicpu(a, ts_gate_aicpu_fn, 1, &arg, sizeof arg), 0);
    assert_int_equal(simdev_launch_aicpu(b, ts_gate_aicpu_fn, 1, &arg, sizeof arg), 0);
    int both_inside = ts_gate_wait_arrivals_for(&gate, 2, TS_DEADLOCK_GUARD_MS);
    ts_gate_open(&gate);
    assert_true(both_inside); /* false: the device serialises launches of different streams */
    assert_int_equal(simdev_stream_sync(a), 0);
    assert_int_equal(simdev_stream_sync(b), 0);
    assert_int_equal(simdev_stream_destroy(a), 0);
    assert_int_equal(simdev_stream_destroy(b), 0);
    ts_gate_destroy(&gate);
}

struct enqueuer {
    simdev_stream_t stream;
    struct ts_log *log;
    int tag;
    int status; /* first failed enqueue, or 0 */
};

#define ENQUEUER_OPS 300

static void *enqueue_tagged_ops(void *arg)
{
    struct enqueuer *e = arg;
    e->status = 0;
    for (int i = 0; i < ENQUEUER_OPS && e->status == 0; i++) {
        struct log_entry_arg entry = {e->log, e->tag * 10000 + i};
        e->status = simdev_launch_aicpu(e->stream, log_aicpu_fn, 1, &entry, sizeof entry);
    }
    return NULL;
}

static void ops_enqueued_from_several_threads_keep_each_threads_order(void **state)
{
    (void)state;
    enum { THREADS = 3 };
    static struct ts_log log;
    static struct enqueuer enqueuers[THREADS];
    pthread_t threads[THREADS];
    simdev_stream_t stream;
    ts_log_init(&log, THREADS * ENQUEUER_OPS);
    assert_int_equal(simdev_stream_create(&stream), 0);
    for (int t = 0; t < THREADS; t++) {
        enqueuers[t] = (struct enqueuer){stream, &log, t + 1, 0};
        assert_int_equal(pthread_create(&threads[t], NULL, enqueue_tagged_ops, &enqueuers[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(pthread_join(threads[t], NULL), 0);
        assert_int_equal(enqueuers[t].status, 0);
    }
    assert_int_equal(simdev_stream_sync(stream), 0);

    assert_int_equal(log.overflow, 0);
    assert_int_equal(log.count, THREADS * ENQUEUER_OPS); /* less: a concurrent enqueue was lost */
    int next[THREADS + 1] = {0};
    for (int i = 0; i < log.count; i++) {
        int tag = log.entries[i] / 10000, index = log.entries[i] % 10000;
        assert_in_range(tag, 1, THREADS);
        assert_int_equal(index, next[tag]); /* out of order within one enqueuing thread */
        next[tag]++;
    }
    assert_int_equal(simdev_stream_destroy(stream), 0);
    ts_log_destroy(&log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(host_funcs_run_in_fifo_order),
        SIMPLER_TEST(aicpu_launches_run_in_fifo_order),
        SIMPLER_TEST(mixed_aicpu_aicore_and_host_ops_run_in_fifo_order),
        SIMPLER_TEST(launch_returns_before_the_work_runs),
        SIMPLER_TEST(aicpu_launch_runs_on_exactly_thread_count_threads_with_each_index_once),
        SIMPLER_TEST(aicpu_launch_copies_args_at_enqueue),
        SIMPLER_TEST(aicore_launch_copies_args_at_enqueue),
        SIMPLER_TEST(args_of_zero_bytes_arrive_as_null_and_of_max_size_arrive_intact),
        SIMPLER_TEST(aicore_launch_runs_once_per_core_with_aic_ids_first_then_aiv),
        SIMPLER_TEST(invalid_launch_arguments_are_rejected_and_enqueue_nothing),
        SIMPLER_TEST(stream_create_and_query_reject_bad_arguments),
        SIMPLER_TEST(stream_destroy_waits_for_pending_work),
        SIMPLER_TEST(device_sync_drains_every_stream_of_the_current_device),
        SIMPLER_TEST(launches_on_different_streams_run_at_the_same_time),
        SIMPLER_TEST(ops_enqueued_from_several_threads_keep_each_threads_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
