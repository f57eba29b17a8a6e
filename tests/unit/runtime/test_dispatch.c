/*
 * test_dispatch.c — how the device runtime puts tasks on cores.
 *
 * Owns: end-to-end checks of dispatch through runtime/runtime.h: SPMD
 * blocks and waves, mixed (cluster) tasks and their lanes, sync-start
 * placement, kernel failures becoming the run's status, the scheduler's
 * no-progress watchdog and its stall class, several scheduler threads
 * sharing the cores, and graph shapes (fan-out/fan-in, a ping-pong
 * stencil) whose values only come out right when every dependency held.
 * Must not touch runtime internals beyond reading the documented
 * protocol constants (core_regs.h) and the register windows (device.h).
 *
 * Kernels run on simulated core threads; they record what they saw into
 * the globals below (atomics, or under a mutex), and the test reads them
 * after the run's stream has drained (the stream sync orders the reads).
 * Nothing is ordered by sleeping: blocked kernels wait on gates or on
 * meetings with a deadlock guard.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "rt_support.h"
#include "launch/launch.h"
#include "platform/platform.h"
#include "runtime/core_regs.h"
#include "runtime/runtime.h"
#include "simpler/simdev_profile.h"
#include "test_support.h"

/* ------------------------------------------------------------ records */

#define MAX_BLOCKS 64
#define FAN_TASKS 500

/* One slot per kernel of a mixed task (0 = AIC kernel, 1 = AIV0, 2 = AIV1). */
struct lane_record {
    _Atomic uint32_t count;
    _Atomic uint32_t core[MAX_BLOCKS];
    _Atomic uint32_t lane[MAX_BLOCKS];
    _Atomic uint32_t block_num[MAX_BLOCKS];
    _Atomic uint32_t hits[MAX_BLOCKS];
};

/* A meeting: kernels add to `value` and wait (bounded) for a target. */
struct meeting {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t value;
    uint32_t timeouts; /* waits that hit the deadlock guard */
};

static _Atomic uint32_t g_invocations;          /* kernel bodies run */
static _Atomic uint32_t g_block_hits[MAX_BLOCKS]; /* per block index */
static _Atomic uint32_t g_bad_context;          /* a block saw a wrong block_num/lane/idx */
static _Atomic uint64_t g_core_mask;            /* cores that ran a recorded kernel */
static struct lane_record g_lanes[3];
static _Atomic uint32_t g_lanes_finished;       /* mixed-task lane kernels finished */
static _Atomic uint32_t g_wave_violations;      /* a lane started before the last wave ended */
static _Atomic uint32_t g_order_violations;     /* a chain task saw the wrong predecessor */
static _Atomic uint32_t g_blocker_done;         /* the gate kernel has returned from its gate */
static _Atomic uint32_t g_started_before_blocker; /* a sync-start block ran beside the blocker */
static _Atomic uint32_t g_gate_core;            /* core of the (last) gate kernel */
static _Atomic uint32_t g_count_core;           /* core of the (last) count kernel */
static _Atomic uint32_t g_task_core[FAN_TASKS]; /* core of fan leaf i, + 1 (0 = never ran) */
static struct ts_gate g_gate;       /* the gate kernel blocks here */
static struct ts_gate g_gate2;      /* a second held kernel (K_SET) blocks here */
static struct ts_gate g_sync_seen;  /* open: counts sync-start blocks that started */
static struct ts_gate g_orch_gate;  /* an orchestration blocks here */
static struct meeting g_meet;       /* sync-start rendezvous: a block count */
static struct meeting g_cores_meet; /* fan leaves: a mask of cores */
static uint64_t g_all_cores;        /* mask every fan leaf waits for */
static int g_late_submit_rc;        /* what a submit after the watchdog returned */
static uint64_t g_task_ids[4];      /* ids the orchestration reports back */
static int g_submit_rc;             /* what a (rejected) submit returned */

static void meeting_init(struct meeting *m)
{
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->cond, NULL);
    m->value = 0;
    m->timeouts = 0;
}

static void meeting_destroy(struct meeting *m)
{
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->lock);
}

static struct timespec guard_deadline(void)
{
    struct timespec d;
    clock_gettime(CLOCK_REALTIME, &d); /* the clock pthread_cond_timedwait uses */
    d.tv_sec += TS_DEADLOCK_GUARD_MS / 1000u;
    return d;
}

/* Adds 1 and waits until `target` parties have arrived. 1 = met, 0 = the
 * deadlock guard expired (the parties were never resident together). Once
 * one wait of a meeting has expired, later ones do not wait: a broken
 * device costs one guard period, not one per kernel. */
static int meeting_count(struct meeting *m, uint64_t target)
{
    struct timespec deadline = guard_deadline();
    pthread_mutex_lock(&m->lock);
    m->value++;
    pthread_cond_broadcast(&m->cond);
    while (m->value < target && !m->timeouts) {
        if (pthread_cond_timedwait(&m->cond, &m->lock, &deadline) == ETIMEDOUT) {
            if (m->value < target)
                m->timeouts++;
            break;
        }
    }
    int met = m->value >= target;
    pthread_mutex_unlock(&m->lock);
    return met;
}

/* ORs `bits` in and waits until every bit of `all` is set (the same
 * guard and give-up rule as meeting_count). */
static void meeting_mask(struct meeting *m, uint64_t bits, uint64_t all)
{
    struct timespec deadline = guard_deadline();
    pthread_mutex_lock(&m->lock);
    m->value |= bits;
    pthread_cond_broadcast(&m->cond);
    while ((m->value & all) != all && !m->timeouts) {
        if (pthread_cond_timedwait(&m->cond, &m->lock, &deadline) == ETIMEDOUT) {
            if ((m->value & all) != all)
                m->timeouts++;
            break;
        }
    }
    pthread_mutex_unlock(&m->lock);
}

static uint32_t meeting_timeouts(struct meeting *m)
{
    pthread_mutex_lock(&m->lock);
    uint32_t t = m->timeouts;
    pthread_mutex_unlock(&m->lock);
    return t;
}

static void records_reset(void)
{
    atomic_store(&g_invocations, 0);
    for (int i = 0; i < MAX_BLOCKS; i++)
        atomic_store(&g_block_hits[i], 0);
    atomic_store(&g_bad_context, 0);
    atomic_store(&g_core_mask, 0);
    memset(g_lanes, 0, sizeof g_lanes);
    atomic_store(&g_lanes_finished, 0);
    atomic_store(&g_wave_violations, 0);
    atomic_store(&g_order_violations, 0);
    atomic_store(&g_blocker_done, 0);
    atomic_store(&g_started_before_blocker, 0);
    atomic_store(&g_gate_core, UINT32_MAX);
    atomic_store(&g_count_core, UINT32_MAX);
    for (int i = 0; i < FAN_TASKS; i++)
        atomic_store(&g_task_core[i], 0);
    g_late_submit_rc = 1;
    g_submit_rc = 1;
    memset(g_task_ids, 0, sizeof g_task_ids);
}

static int dispatch_setup(void **state)
{
    ts_device_setup(state);
    records_reset();
    ts_gate_init(&g_gate);
    ts_gate_init(&g_gate2);
    ts_gate_init(&g_sync_seen);
    ts_gate_open(&g_sync_seen);
    ts_gate_init(&g_orch_gate);
    meeting_init(&g_meet);
    meeting_init(&g_cores_meet);
    return 0;
}

static int dispatch_teardown(void **state)
{
    /* A test that failed with a kernel or orchestration still parked must
     * not hang the reset in ts_device_teardown. */
    ts_gate_open(&g_gate);
    ts_gate_open(&g_gate2);
    ts_gate_open(&g_orch_gate);
    int rc = ts_device_teardown(state);
    ts_gate_destroy(&g_gate);
    ts_gate_destroy(&g_gate2);
    ts_gate_destroy(&g_sync_seen);
    ts_gate_destroy(&g_orch_gate);
    meeting_destroy(&g_meet);
    meeting_destroy(&g_cores_meet);
    return rc;
}

/* Reconfigures device 0 (reset first) with another topology; the rest as
 * the fixture's. */
static void use_topology_budget(uint32_t aicpu_threads, uint32_t aic, uint32_t aiv,
                                uint32_t runnable_cpus)
{
    struct simdev_config cfg = ts_small_config();
    cfg.aicpu_threads = aicpu_threads;
    cfg.aic_cores = aic;
    cfg.aiv_cores = aiv;
    cfg.runnable_cpus = runnable_cpus;
    ts_device_setup_config(&cfg);
}

static void use_topology(uint32_t aicpu_threads, uint32_t aic, uint32_t aiv)
{
    use_topology_budget(aicpu_threads, aic, aiv, 0);
}

/* ------------------------------------------------------------ kernels */

enum {
    K_INDEX,     /* out[block] = block (int32), checks the context */
    K_SQUARE,    /* out[block] = (block + 1)^2 (int64) */
    K_SUM,       /* out[0] = sum of in (int64) */
    K_MIX_AIC,   /* records (core, lane) as the AIC kernel of a mixed task */
    K_MIX_AIV0,  /* ... as the AIV0 kernel */
    K_MIX_AIV1,  /* ... as the AIV1 kernel */
    K_MEET,      /* sync-start block: meets the task's other blocks */
    K_GATE,      /* blocks on g_gate */
    K_CHAIN,     /* x[0] == i -> x[0] = i + 1, failing at one i */
    K_COUNT,     /* counts */
    K_BLOCK_FAIL, /* the block given fails */
    K_ROOT,      /* s[0] = scalar */
    K_LEAF,      /* a[0] = s[0] * 1000 + i, meets every core */
    K_IOTA,      /* x[i] = i */
    K_SCALE,     /* y[i] = x[i] * k */
    K_SUM16,     /* out[i] = sum of 16 inputs' [i] */
    K_STENCIL,   /* 3-point stencil of one block */
    K_SET,       /* x[0] = value, after g_gate when asked */
    K_SEEN,      /* reads its input and counts its start in g_sync_seen */
    K_PAIR,      /* out[0] = a[0] * 10 + b[0] */
    K_WHERE,     /* notes the thread it runs on in g_kernel_thread */
    K_KERNELS
};

static void note_core(int64_t *args)
{
    atomic_fetch_or(&g_core_mask, 1ull << simpler_kernel_context(args)->core_id);
}

/* tensor 0: int32 out (block_num elements); scalar 1: expected block_num */
static void kernel_index(int64_t *args)
{
    int32_t *out = simpler_kernel_data(args, 0);
    uint32_t block = simpler_kernel_block_idx(args);
    uint32_t expected = (uint32_t)simpler_kernel_scalar_u64(args, 1);
    atomic_fetch_add(&g_invocations, 1);
    note_core(args);
    if (simpler_kernel_block_num(args) != expected || simpler_kernel_lane(args) != 0 ||
        block >= expected || block >= MAX_BLOCKS) {
        atomic_fetch_add(&g_bad_context, 1);
        return;
    }
    atomic_fetch_add(&g_block_hits[block], 1);
    out[block] = (int32_t)block;
}

/* tensor 0: int64 out (block_num elements) */
static void kernel_square(int64_t *args)
{
    int64_t *out = simpler_kernel_data(args, 0);
    uint32_t block = simpler_kernel_block_idx(args);
    atomic_fetch_add(&g_invocations, 1);
    out[block] = (int64_t)(block + 1) * (block + 1);
}

/* tensor 0: int64 in; tensor 1: int64 out (>= 1 element) */
static void kernel_sum(int64_t *args)
{
    const int64_t *in = simpler_kernel_data(args, 0);
    int64_t *out = simpler_kernel_data(args, 1);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 0));
    int64_t sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += in[i];
    out[0] = sum;
}

/* scalar 0: lanes per block of the mixed task (0 = not a wave check). */
static void mix_record(int64_t *args, uint32_t which)
{
    struct simpler_kernel_context *ctx = simpler_kernel_context(args);
    uint32_t lanes = (uint32_t)simpler_kernel_scalar_u64(args, 0);
    uint32_t block = ctx->block_idx;
    if (block >= MAX_BLOCKS) {
        atomic_fetch_add(&g_bad_context, 1);
        return;
    }
    /* A cluster runs one block at a time: every lane of every earlier block
     * has finished before any lane of this one starts. */
    if (lanes && atomic_load(&g_lanes_finished) < block * lanes)
        atomic_fetch_add(&g_wave_violations, 1);
    struct lane_record *r = &g_lanes[which];
    atomic_store(&r->core[block], ctx->core_id);
    atomic_store(&r->lane[block], ctx->lane);
    atomic_store(&r->block_num[block], ctx->block_num);
    atomic_fetch_add(&r->hits[block], 1);
    atomic_fetch_add(&r->count, 1);
    atomic_fetch_add(&g_lanes_finished, 1);
}

static void kernel_mix_aic(int64_t *args) { mix_record(args, 0); }
static void kernel_mix_aiv0(int64_t *args) { mix_record(args, 1); }
static void kernel_mix_aiv1(int64_t *args) { mix_record(args, 2); }

/* A sync-start block: meets the task's other blocks (all must be resident
 * at once) and fails with 250 if they never come. Scalar 0: 1 = the gate
 * kernel must already have finished. */
static void kernel_meet(int64_t *args)
{
    note_core(args);
    atomic_fetch_add(&g_invocations, 1);
    if (simpler_kernel_scalar_u64(args, 0) && !atomic_load(&g_blocker_done))
        atomic_fetch_add(&g_started_before_blocker, 1);
    ts_gate_pass(&g_sync_seen); /* open: only counts the start */
    if (!meeting_count(&g_meet, simpler_kernel_block_num(args)))
        simpler_kernel_fail(args, 250);
}

static void kernel_gate(int64_t *args)
{
    atomic_store(&g_gate_core, simpler_kernel_context(args)->core_id);
    ts_gate_pass(&g_gate);
    atomic_store(&g_blocker_done, 1);
}

/* tensor 0: int64 x[1] (INOUT); scalars 1..3: i, fail_at, code */
static void kernel_chain(int64_t *args)
{
    int64_t *x = simpler_kernel_data(args, 0);
    uint64_t i = simpler_kernel_scalar_u64(args, 1);
    atomic_fetch_add(&g_invocations, 1);
    if ((uint64_t)x[0] != i)
        atomic_fetch_add(&g_order_violations, 1);
    if (i == simpler_kernel_scalar_u64(args, 2)) {
        simpler_kernel_fail(args, (int)simpler_kernel_scalar_u64(args, 3));
        return;
    }
    x[0] = (int64_t)i + 1;
}

static void kernel_count(int64_t *args)
{
    atomic_store(&g_count_core, simpler_kernel_context(args)->core_id);
    atomic_fetch_add(&g_invocations, 1);
}

/* scalar 0: the block that fails with 321 */
static void kernel_block_fail(int64_t *args)
{
    if (simpler_kernel_block_idx(args) == simpler_kernel_scalar_u64(args, 0))
        simpler_kernel_fail(args, 321);
}

/* tensor 0: int64 s[1] out; scalar 1: value */
static void kernel_root(int64_t *args)
{
    int64_t *s = simpler_kernel_data(args, 0);
    s[0] = (int64_t)simpler_kernel_scalar_u64(args, 1);
}

/* tensor 0: int64 s[1] in; tensor 1: int64 a[1] out; scalar 2: i */
static void kernel_leaf(int64_t *args)
{
    const int64_t *s = simpler_kernel_data(args, 0);
    int64_t *a = simpler_kernel_data(args, 1);
    uint64_t i = simpler_kernel_scalar_u64(args, 2);
    uint32_t core = simpler_kernel_context(args)->core_id;
    a[0] = s[0] * 1000 + (int64_t)i;
    if (i < FAN_TASKS)
        atomic_store(&g_task_core[i], core + 1);
    meeting_mask(&g_cores_meet, 1ull << core, g_all_cores);
}

/* tensor 0: int64 x out */
static void kernel_iota(int64_t *args)
{
    int64_t *x = simpler_kernel_data(args, 0);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 0));
    for (uint64_t i = 0; i < n; i++)
        x[i] = (int64_t)i;
}

/* tensor 0: int64 x in; tensor 1: int64 y out; scalar 2: k */
static void kernel_scale(int64_t *args)
{
    const int64_t *x = simpler_kernel_data(args, 0);
    int64_t *y = simpler_kernel_data(args, 1);
    int64_t k = (int64_t)simpler_kernel_scalar_u64(args, 2);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, 1));
    for (uint64_t i = 0; i < n; i++)
        y[i] = x[i] * k;
}

#define FAN 16
/* tensors 0..FAN-1: int64 in; tensor FAN: int64 out */
static void kernel_sum16(int64_t *args)
{
    int64_t *out = simpler_kernel_data(args, FAN);
    uint64_t n = simpler_tensor_numel(simpler_kernel_tensor(args, FAN));
    for (uint64_t i = 0; i < n; i++) {
        int64_t sum = 0;
        for (uint32_t k = 0; k < FAN; k++)
            sum += ((const int64_t *)simpler_kernel_data(args, k))[i];
        out[i] = sum;
    }
}

#define ST_N 64
#define ST_BLK 8
#define ST_STEPS 12
/* tensor 0: int64 src[lo, hi) (INPUT); tensor 1: int64 dst[base, base +
 * ST_BLK) (OUTPUT_EXISTING or INOUT); scalars 2..5: lo, hi, base, accumulate.
 * dst[i] = (accumulate ? dst[i] : 0) + src[i - 1] + src[i] + src[i + 1],
 * with zeros outside the buffer. */
static void kernel_stencil(int64_t *args)
{
    const int64_t *src = simpler_kernel_data(args, 0);
    int64_t *dst = simpler_kernel_data(args, 1);
    uint64_t lo = simpler_kernel_scalar_u64(args, 2);
    uint64_t hi = simpler_kernel_scalar_u64(args, 3);
    uint64_t base = simpler_kernel_scalar_u64(args, 4);
    uint64_t accumulate = simpler_kernel_scalar_u64(args, 5);
    atomic_fetch_add(&g_invocations, 1);
    for (uint64_t k = 0; k < ST_BLK; k++) {
        uint64_t gi = base + k;
        int64_t v = src[gi - lo];
        int64_t l = gi >= lo + 1 ? src[gi - 1 - lo] : 0;
        int64_t r = gi + 1 < hi ? src[gi + 1 - lo] : 0;
        dst[k] = (accumulate ? dst[k] : 0) + l + v + r;
    }
}

/* tensor 0: int64 x[1] (INOUT); scalars 1, 2: the gate it passes first
 * (1: g_gate, 2: g_gate2), value */
static void kernel_set(int64_t *args)
{
    int64_t *x = simpler_kernel_data(args, 0);
    ts_gate_pass(simpler_kernel_scalar_u64(args, 1) == 1 ? &g_gate : &g_gate2);
    x[0] = (int64_t)simpler_kernel_scalar_u64(args, 2);
}

/* tensor 0: int64 in[1] (INPUT): runs only once its producer completed */
static void kernel_seen(int64_t *args)
{
    (void)simpler_kernel_data(args, 0);
    ts_gate_pass(&g_sync_seen); /* open: only counts the start */
}

/* The threads a round's orchestration and its K_WHERE kernel ran on. */
static _Atomic uintptr_t g_orch_thread, g_kernel_thread;

static void kernel_where(int64_t *args)
{
    (void)args;
    atomic_store(&g_kernel_thread, (uintptr_t)pthread_self());
    atomic_fetch_add(&g_invocations, 1);
}

/* tensors 0, 1: int64 a[1], b[1] (INPUT); tensor 2: int64 out[1] (INOUT) */
static void kernel_pair(int64_t *args)
{
    const int64_t *a = simpler_kernel_data(args, 0), *b = simpler_kernel_data(args, 1);
    int64_t *out = simpler_kernel_data(args, 2);
    out[0] = a[0] * 10 + b[0];
}

static const simpler_kernel_fn g_kernels[K_KERNELS] = {
    [K_INDEX] = kernel_index,         [K_SQUARE] = kernel_square,
    [K_SUM] = kernel_sum,             [K_MIX_AIC] = kernel_mix_aic,
    [K_MIX_AIV0] = kernel_mix_aiv0,   [K_MIX_AIV1] = kernel_mix_aiv1,
    [K_MEET] = kernel_meet,           [K_GATE] = kernel_gate,
    [K_CHAIN] = kernel_chain,         [K_COUNT] = kernel_count,
    [K_BLOCK_FAIL] = kernel_block_fail, [K_ROOT] = kernel_root,
    [K_LEAF] = kernel_leaf,           [K_IOTA] = kernel_iota,
    [K_SCALE] = kernel_scale,         [K_SUM16] = kernel_sum16,
    [K_STENCIL] = kernel_stencil,     [K_SET] = kernel_set,
    [K_SEEN] = kernel_seen,           [K_PAIR] = kernel_pair,
    [K_WHERE] = kernel_where,
};

/* ------------------------------------------------------------ running */

static int run(struct rt_harness *h, simpler_orch_entry_fn entry,
               const struct simpler_orch_args *args)
{
    return rth_run(h, entry, g_kernels, K_KERNELS, args);
}

/* rth_run without the wait: for tests that act while the run is on the
 * device. Finish with run_wait. */
static void run_enqueue(struct rt_harness *h, simpler_orch_entry_fn entry,
                        const struct simpler_orch_args *args)
{
    static const struct simpler_orch_args empty;
    ts_to_dev(h->kernels_dev, g_kernels, sizeof g_kernels);
    ts_to_dev(h->args_dev, args ? args : &empty, sizeof empty);
    struct rt_run_request rq = rth_request(h, entry, K_KERNELS);
    assert_int_equal(rt_run_enqueue(h->launcher, h->stream, &rq), 0);
}

static int run_wait(struct rt_harness *h)
{
    int status = simdev_stream_sync(h->stream);
    ts_from_dev(&h->result, h->result_dev, sizeof h->result);
    return status;
}

/* Run args: `tensors` then `scalars`. */
static struct simpler_orch_args make_args(const struct simpler_tensor *tensors, uint32_t nt,
                                          const uint64_t *scalars, uint32_t ns)
{
    struct simpler_orch_args a;
    memset(&a, 0, sizeof a);
    a.tensor_count = nt;
    a.scalar_count = ns;
    for (uint32_t i = 0; i < nt; i++)
        a.tensors[i] = tensors[i];
    for (uint32_t i = 0; i < ns; i++)
        a.scalars[i] = scalars[i];
    return a;
}

/* =================================================== 1. SPMD blocks */

/* args: tensor 0 = int32 out; scalars: block_num, 1 = AIC (else AIV) */
static void orch_spmd_index(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    uint32_t block_num = (uint32_t)args->scalars[0];
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output_existing(&ta, &args->tensors[0]);
    simpler_task_args_add_scalar(&ta, block_num);
    simpler_task_args_set_block_num(&ta, block_num);
    if (args->scalars[1])
        simpler_submit_aic(rt, K_INDEX, &ta, &r);
    else
        simpler_submit_aiv(rt, K_INDEX, &ta, &r);
}

/* Runs one K_INDEX task of `block_num` blocks and checks every block ran
 * exactly once with the right context, on the cores in `cores`. */
static void check_spmd_index(struct rt_harness *h, uint32_t block_num, int aic, uint64_t cores)
{
    int32_t *out_dev = ts_dev_alloc(MAX_BLOCKS * sizeof(int32_t));
    int32_t out[MAX_BLOCKS];
    for (int i = 0; i < MAX_BLOCKS; i++)
        out[i] = -1;
    ts_to_dev(out_dev, out, sizeof out);
    struct simpler_tensor t = ts_dev_tensor_1d(out_dev, block_num, SIMPLER_DTYPE_I32);
    uint64_t scalars[2] = {block_num, (uint64_t)aic};
    struct simpler_orch_args a = make_args(&t, 1, scalars, 2);
    records_reset();

    assert_int_equal(run(h, orch_spmd_index, &a), 0);
    ts_from_dev(out, out_dev, sizeof out);
    for (uint32_t i = 0; i < block_num; i++)
        if (out[i] != (int32_t)i)
            fail_msg("out[%u] = %d: block %u never ran or got another index", i, out[i], i);
    assert_int_equal(out[block_num], -1); /* a block index past block_num */
    assert_int_equal(atomic_load(&g_bad_context), 0); /* wrong block_num / lane seen */
    for (uint32_t i = 0; i < block_num; i++)
        assert_int_equal(atomic_load(&g_block_hits[i]), 1); /* 2: block dispatched twice */
    assert_int_equal(atomic_load(&g_invocations), block_num);
    /* every core of the shape ran blocks (the first wave fills all idle
     * cores), and none of the other shape */
    assert_int_equal(atomic_load(&g_core_mask), cores);
    assert_int_equal(h->result.subtasks_dispatched, block_num);
    assert_int_equal(h->result.tasks_completed, 1);
    assert_int_equal(simdev_free(out_dev), 0);
}

static void aiv_task_of_37_blocks_runs_each_block_once_on_2_cores(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    check_spmd_index(&h, 37, 0, 0x6); /* AIV cores 1 and 2 */
    rth_close(&h);
}

static void aic_task_of_5_blocks_runs_in_5_waves_on_1_core(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    check_spmd_index(&h, 5, 1, 0x1); /* AIC core 0 */
    /* and the same harness again, wider than any wave so far */
    check_spmd_index(&h, 63, 0, 0x6);
    rth_close(&h);
}

/* args: tensor 0 = int64 total[1] */
static void orch_spmd_then_sum(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    uint64_t shape[1] = {37};
    struct simpler_task_args ta;
    struct simpler_task_result squares, sum;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_I64, 0);
    simpler_task_args_set_block_num(&ta, 37);
    simpler_submit_aiv(rt, K_SQUARE, &ta, &squares);

    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, &squares.outputs[0]);
    simpler_task_args_add_output_existing(&ta, &args->tensors[0]);
    simpler_submit_aic(rt, K_SUM, &ta, &sum);
    g_task_ids[0] = squares.task_id;
    g_task_ids[1] = sum.task_id;
}

static void consumer_of_a_wide_spmd_task_sees_every_block(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 16);
    int64_t *total_dev = ts_dev_alloc(sizeof(int64_t));
    struct simpler_tensor t = ts_dev_tensor_1d(total_dev, 1, SIMPLER_DTYPE_I64);
    struct simpler_orch_args a = make_args(&t, 1, NULL, 0);
    for (int round = 0; round < 5; round++) {
        int64_t total = -1;
        ts_to_dev(total_dev, &total, sizeof total);
        records_reset();
        assert_int_equal(run(&h, orch_spmd_then_sum, &a), 0);
        ts_from_dev(&total, total_dev, sizeof total);
        /* sum of k^2, k = 1..37; less: the consumer ran before some block */
        assert_int_equal(total, 17575);
        assert_int_equal(atomic_load(&g_invocations), 37);
        assert_int_equal(h.result.subtasks_dispatched, 38); /* 37 blocks + the sum */
        assert_int_equal(h.result.edges, 1);                /* 0: consumer not held back */
        assert_true(rth_has_edge(&h, g_task_ids[0], g_task_ids[1]));
        assert_int_equal(h.edges[0].sources, RT_EDGE_CREATOR);
    }
    assert_int_equal(simdev_free(total_dev), 0);
    rth_close(&h);
}

/* ================================================ 2. mixed tasks */

/* scalars: aic, aiv0, aiv1 (func id or -1), block_num, lanes per block */
static void orch_mixed(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_mixed_kernels k = {(int32_t)args->scalars[0], (int32_t)args->scalars[1],
                                      (int32_t)args->scalars[2]};
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_scalar(&ta, args->scalars[4]);
    simpler_task_args_set_block_num(&ta, (uint32_t)args->scalars[3]);
    g_submit_rc = simpler_submit_mixed(rt, &k, &ta, &r);
}

static int run_mixed(struct rt_harness *h, int32_t aic, int32_t aiv0, int32_t aiv1,
                     uint32_t block_num, uint32_t wave_lanes)
{
    uint64_t s[5] = {(uint64_t)(int64_t)aic, (uint64_t)(int64_t)aiv0, (uint64_t)(int64_t)aiv1,
                     block_num, wave_lanes};
    struct simpler_orch_args a = make_args(NULL, 0, s, 5);
    records_reset();
    return run(h, orch_mixed, &a);
}

/* Every block of kernel `which` ran once, on `core` with `lane`. */
static void check_lane(uint32_t which, uint32_t block_num, uint32_t core, uint32_t lane)
{
    struct lane_record *r = &g_lanes[which];
    assert_int_equal(atomic_load(&r->count), block_num);
    for (uint32_t b = 0; b < block_num; b++) {
        assert_int_equal(atomic_load(&r->hits[b]), 1);
        if (atomic_load(&r->core[b]) != core || atomic_load(&r->lane[b]) != lane)
            fail_msg("kernel %u block %u ran on core %u lane %u, expected core %u lane %u",
                     which, b, atomic_load(&r->core[b]), atomic_load(&r->lane[b]), core, lane);
        assert_int_equal(atomic_load(&r->block_num[b]), block_num);
    }
}

static void mixed_task_runs_each_kernel_on_its_lane_of_the_cluster_in_waves(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    assert_int_equal(run_mixed(&h, K_MIX_AIC, K_MIX_AIV0, K_MIX_AIV1, 3, 3), 0);
    assert_int_equal(g_submit_rc, 0);
    check_lane(0, 3, 0, 0); /* the AIC kernel on AIC core 0 */
    check_lane(1, 3, 1, 0); /* AIV0 on the cluster's first AIV core, lane 0 */
    check_lane(2, 3, 2, 1); /* AIV1 on its second AIV core, lane 1 */
    /* nonzero: a block's lanes started while an earlier block still ran
     * on the cluster */
    assert_int_equal(atomic_load(&g_wave_violations), 0);
    assert_int_equal(atomic_load(&g_bad_context), 0);
    assert_int_equal(h.result.subtasks_dispatched, 9); /* 3 blocks x 3 lanes */
    assert_int_equal(h.result.tasks_completed, 1);     /* 0: a lane's FIN never counted */
    rth_close(&h);
}

static void mixed_task_of_aic_and_aiv0_uses_two_lanes(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    assert_int_equal(run_mixed(&h, K_MIX_AIC, K_MIX_AIV0, SIMPLER_NO_KERNEL, 2, 2), 0);
    check_lane(0, 2, 0, 0);
    check_lane(1, 2, 1, 0);
    assert_int_equal(atomic_load(&g_lanes[2].count), 0); /* an unused lane ran a kernel */
    assert_int_equal(atomic_load(&g_wave_violations), 0);
    assert_int_equal(h.result.subtasks_dispatched, 4); /* 2 blocks x 2 lanes */
    assert_int_equal(h.result.tasks_completed, 1);

    /* both AIV lanes without the AIC: still one cluster, lanes 0 and 1 */
    assert_int_equal(run_mixed(&h, SIMPLER_NO_KERNEL, K_MIX_AIV0, K_MIX_AIV1, 2, 2), 0);
    assert_int_equal(atomic_load(&g_lanes[0].count), 0);
    check_lane(1, 2, 1, 0);
    check_lane(2, 2, 2, 1);
    assert_int_equal(atomic_load(&g_wave_violations), 0);
    assert_int_equal(h.result.subtasks_dispatched, 4);
    rth_close(&h);
}

static void lone_aiv1_kernel_runs_as_an_aiv_task_on_lane_0(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    assert_int_equal(run_mixed(&h, SIMPLER_NO_KERNEL, SIMPLER_NO_KERNEL, K_MIX_AIV1, 4, 0), 0);
    struct lane_record *r = &g_lanes[2];
    assert_int_equal(atomic_load(&r->count), 4);
    for (uint32_t b = 0; b < 4; b++) {
        assert_int_equal(atomic_load(&r->hits[b]), 1);
        assert_int_equal(atomic_load(&r->lane[b]), 0); /* 1: still routed as a mixed lane */
        uint32_t core = atomic_load(&r->core[b]);
        assert_true(core == 1 || core == 2); /* 0: ran on the AIC core */
    }
    assert_int_equal(h.result.subtasks_dispatched, 4); /* 1 lane x 4 blocks */
    rth_close(&h);
}

/* ================================================ 3. sync-start */

/* One AIV task of `kernel` without arguments. */
static void submit_bare(struct simpler_orch *rt, int32_t kernel)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_submit_aiv(rt, kernel, &ta, &r);
}

static void orch_one_count(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    submit_bare(rt, K_COUNT);
}

/* scalars: block_num, 1 = submit K_GATE first (and check it finished) */
static void orch_sync_start(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    if (args->scalars[1]) {
        simpler_task_args_init(&ta);
        simpler_submit_aiv(rt, K_GATE, &ta, &r);
        /* Sync-start tasks are served before ordinary ones: submit it only
         * once the blocker holds its core, so the test sees the wait. */
        if (!ts_gate_wait_arrivals_for(&g_gate, 1, TS_DEADLOCK_GUARD_MS))
            rt->ops->fatal(rt);
    }
    simpler_task_args_init(&ta);
    simpler_task_args_add_scalar(&ta, args->scalars[1]);
    simpler_task_args_set_block_num(&ta, (uint32_t)args->scalars[0]);
    simpler_task_args_set_sync_start(&ta, 1);
    g_submit_rc = simpler_submit_aiv(rt, K_MEET, &ta, &r);
}

static struct simpler_orch_args sync_start_args(uint64_t block_num, uint64_t with_blocker)
{
    uint64_t s[2] = {block_num, with_blocker};
    return make_args(NULL, 0, s, 2);
}

static void sync_start_blocks_are_resident_at_once(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    struct simpler_orch_args a = sync_start_args(2, 0);
    /* -250: a block waited for the other for the whole guard */
    assert_int_equal(run(&h, orch_sync_start, &a), 0);
    assert_int_equal(g_submit_rc, 0);
    assert_int_equal(atomic_load(&g_invocations), 2);
    assert_int_equal(atomic_load(&g_core_mask), 0x6); /* both AIV cores */
    assert_int_equal(meeting_timeouts(&g_meet), 0);
    rth_close(&h);
}

static void sync_start_task_waits_until_all_its_blocks_fit(void **state)
{
    (void)state;
    TS_SKIP_UNDER_HBG("its orchestration waits for a task to run");
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    struct simpler_orch_args a = sync_start_args(2, 1);
    run_enqueue(&h, orch_sync_start, &a);
    int blocked = ts_gate_wait_arrivals_for(&g_gate, 1, TS_DEADLOCK_GUARD_MS);
    /* With one AIV core held by the gate kernel, the 2-block sync-start
     * task must not start a block (one block alone would wait in the
     * meeting for a block that can only start after it). */
    int early = ts_gate_wait_arrivals_for(&g_sync_seen, 1, TS_GRACE_MS);
    ts_gate_open(&g_gate);
    int status = run_wait(&h);
    assert_true(blocked); /* 0: the gate kernel was never dispatched */
    assert_false(early);  /* 1: a block started beside the gate kernel */
    assert_int_equal(status, 0);
    assert_int_equal(atomic_load(&g_started_before_blocker), 0);
    assert_int_equal(atomic_load(&g_invocations), 2);
    assert_int_equal(meeting_timeouts(&g_meet), 0);
    assert_int_equal(h.result.tasks_completed, 2);
    rth_close(&h);
}

/*
 * Runs `entry` on the fixture's topology with the simdev watchdog on, for
 * runs that fail the moment they start: a core loop left waiting forever
 * then loses the device after `watchdog_ms` (the run's status becomes
 * DEVICE_LOST) instead of hanging the suite in the stream sync. Returns the
 * run's status; the result block is copied only when the device survived.
 */
static int run_guarded(struct rt_harness *h, simpler_orch_entry_fn entry,
                       const struct simpler_orch_args *args)
{
    run_enqueue(h, entry, args);
    int status = simdev_stream_sync(h->stream);
    if (simdev_device_is_lost(0) == 0)
        ts_from_dev(&h->result, h->result_dev, sizeof h->result);
    return status;
}

/*
 * The round's cores start on demand (docs/device.md, "Cores started on
 * demand"): a one-task round wakes the one core its task needs, and the
 * program's last thread runs the other core loops, which find the round
 * left and end. On a device that never spins (idle threads park at once),
 * the round's timeline shows every core's block run (3 JOB_BEGIN marks of
 * cores: a core loop never run would have hung the round) and at most one
 * core thread woken (UNPARK marks of one core id at most; a round that
 * started every core shows 3 when they slept, as the code before did).
 * At most, not exactly: a core still awake from the warm-up takes its
 * block without a wake-up. The round is enqueued between
 * simdev_start_here_begin and _end, as kernel mode's chain is, so that
 * the program goes out before the core loop whatever the threads' speeds:
 * program mode's chain enqueues the core loop's batch before the
 * program's, and an executor that starts it in between hands the core
 * loop out while no program runs, which then starts every core (correct,
 * only slower; seen under load).
 */
static void a_one_task_round_wakes_one_core_and_its_program_ends_the_others(void **state)
{
    (void)state;
    struct simdev_config cfg = ts_small_config();
    cfg.spin_ns = 0;
    ts_device_setup_config(&cfg);
    uint32_t cores = cfg.aic_cores + cfg.aiv_cores;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    assert_int_equal(run_guarded(&h, orch_one_count, NULL), 0); /* warm-up */
    enum { CAPACITY = 1 << 14 };
    static struct simdev_timeline_entry e[CAPACITY];
    uint32_t woken = cores;
    /* A core thread woken by anything else runs its block itself, as
     * simdev allows (seen once in 9 TSan soak runs under host_build_graph:
     * 2 cores woken): such a round proves nothing and is tried again; one
     * of 10 must wake at most one (a round that starts every core wakes
     * 3 each time). */
    for (int tries = 0; tries < 10 && woken > 1; tries++) {
        assert_int_equal(simdev_timeline_start_with(0, CAPACITY, SIMDEV_TIMELINE_WAITS), 0);
        simdev_start_here_begin();
        run_enqueue(&h, orch_one_count, NULL);
        simdev_start_here_end();
        assert_int_equal(run_wait(&h), 0);
        size_t n = 0;
        uint64_t dropped = 99;
        assert_int_equal(simdev_timeline_stop(0, e, CAPACITY, &n, &dropped), 0);
        assert_int_equal(dropped, 0); /* the buffer holds every mark */
        assert_int_equal(atomic_load(&g_invocations), 2 + tries);
        uint32_t jobs = 0, woken_mask = 0;
        woken = 0;
        for (size_t i = 0; i < n; i++) {
            if (e[i].core != 1 || e[i].thread >= 32)
                continue;
            jobs += e[i].mark == SIMDEV_MARK_JOB_BEGIN;
            if (e[i].mark == SIMDEV_MARK_UNPARK && !(woken_mask & (1u << e[i].thread))) {
                woken_mask |= 1u << e[i].thread;
                woken++;
            }
        }
        assert_int_equal(jobs, cores); /* every core loop ran: started or run by the program */
    }
    assert_true(woken <= 1); /* 2-3 in every try: cores started that the round did not need */
    rth_close(&h);
}

/* The marks of a one-task round (its waits and the runtime's points) on a
 * device set up with `cfg` after a warm-up round, into e[0..CAPACITY):
 * how many; `h` is left open. */
enum { ROUND_MARKS = 1 << 14 };
static size_t one_task_round_marks(const struct simdev_config *cfg, struct rt_harness *h,
                                   struct simdev_timeline_entry *e)
{
    ts_device_setup_config(cfg);
    rth_open(h, NULL, 0);
    assert_int_equal(run_guarded(h, orch_one_count, NULL), 0); /* warm-up */
    assert_int_equal(simdev_timeline_start_with(0, ROUND_MARKS,
                                                SIMDEV_TIMELINE_WAITS | SIMDEV_TIMELINE_POINTS),
                     0);
    assert_int_equal(run_guarded(h, orch_one_count, NULL), 0);
    size_t n = 0;
    uint64_t dropped = 99;
    assert_int_equal(simdev_timeline_stop(0, e, ROUND_MARKS, &n, &dropped), 0);
    assert_int_equal(dropped, 0); /* the buffer holds every mark */
    assert_int_equal(atomic_load(&g_invocations), 2);
    return n;
}

/* Where the first POINT mark `point` lies in e[0..n), or n. */
static size_t first_point(const struct simdev_timeline_entry *e, size_t n, uint32_t point)
{
    for (size_t i = 0; i < n; i++)
        if (e[i].mark == SIMDEV_MARK_POINT && e[i].op == point)
            return i;
    return n;
}

/*
 * A TMR run's schedulers open on the orchestrator's thread, before it
 * publishes the run (docs/runtime.md, "The scheduler's prologue"): in a
 * one-task round on a device that never spins, every SCHED_OPEN point
 * (one per scheduler) is marked by the AICPU thread that then submits,
 * before its submit, and that thread makes no wake-up system call before
 * its submit (the run's publication wakes nobody: a scheduler's thread
 * waits for the run's end). A SCHED_OPEN on another thread would be a
 * scheduler's own thread running its prologue, which the task would wait
 * for; a wake-up before the submit, a signal on the way to it.
 */
static void a_tmr_rounds_schedulers_open_on_the_orchestrators_thread(void **state)
{
    (void)state;
    TS_SKIP_UNDER_HBG("its schedulers' threads run their own prologue");
    struct simdev_config cfg = ts_small_config();
    cfg.spin_ns = 0;
    /* No core shares the orchestrator's CPU (on a host with a CPU a core,
     * the orchestrator would start that core before its first submit:
     * let_mates_arrive, a wake-up this test does not ask about). */
    cfg.pin_cores = 0;
    struct rt_harness h;
    static struct simdev_timeline_entry e[ROUND_MARKS];
    size_t n = one_task_round_marks(&cfg, &h, e);
    size_t submit = first_point(e, n, SIMDEV_POINT_SUBMIT);
    assert_true(submit < n);
    assert_int_equal(e[submit].core, 0); /* an AICPU thread submits */
    uint32_t orchestrator = e[submit].thread;
    uint32_t opened = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].mark == SIMDEV_MARK_POINT && e[i].op == SIMDEV_POINT_SCHED_OPEN) {
            assert_int_equal(e[i].core, 0);
            assert_int_equal(e[i].thread, orchestrator);
            assert_true(e[i].ns <= e[submit].ns);
            opened++;
        }
        if (e[i].mark == SIMDEV_MARK_WAKEUP && e[i].core == 0 && e[i].thread == orchestrator)
            assert_true(e[i].ns > e[submit].ns);
    }
    uint32_t schedulers =
        h.config.scheduler_threads ? h.config.scheduler_threads : cfg.aicpu_threads - 1;
    assert_int_equal(opened, schedulers); /* each scheduler opened once */
    rth_close(&h);
}

/*
 * A TMR run's watcher waits for the run's end awake, as long as an idle
 * core spins and within the runnable budget (docs/runtime.md, "The
 * scheduler's own thread"): on a device whose waits may spin for seconds
 * and whose budget never parks anyone, the watcher of a one-task round
 * never sleeps between its job's begin and the end of its watch (a PARK
 * of it there: it slept, and the round's last completion would have had
 * to wake it). The spin only decides when a thread sleeps; the round's
 * result is checked as everywhere. The watcher's part may run on another
 * thread as the watcher's AICPU thread (the caller's sync takes a program
 * that thread has not begun): then that thread's own waits for its next
 * job, marked SIMDEV_MARK_IDLE, are not the watcher's (counted, they
 * failed about 1 run in 100 on a fast host).
 */
static void a_tmr_rounds_watcher_waits_for_the_end_awake(void **state)
{
    (void)state;
    TS_SKIP_UNDER_HBG("its watcher waits as every scheduler's thread does");
    struct simdev_config cfg = ts_small_config();
    cfg.spin_ns = 4000000000u; /* 4 s: longer than any round here */
    cfg.runnable_cpus = 64;    /* nobody parks for the budget */
    cfg.pin_cores = 0;         /* and no core gives way to an AICPU thread */
    struct rt_harness h;
    static struct simdev_timeline_entry e[ROUND_MARKS];
    size_t n = one_task_round_marks(&cfg, &h, e);
    size_t done = first_point(e, n, SIMDEV_POINT_SCHED_DONE);
    size_t submit = first_point(e, n, SIMDEV_POINT_SUBMIT);
    assert_true(done < n && submit < n);
    assert_int_equal(e[done].core, 0);
    uint32_t watcher = e[done].thread;
    size_t begin = n;
    for (size_t i = 0; i < done; i++)
        if (e[i].mark == SIMDEV_MARK_JOB_BEGIN && e[i].core == 0 && e[i].thread == watcher)
            begin = i; /* its last job before the end: the program */
    assert_true(begin < done);
    for (size_t i = 0; i < n; i++)
        if (e[i].mark == SIMDEV_MARK_PARK && e[i].core == 0 && e[i].thread == watcher &&
            e[i].op != SIMDEV_MARK_IDLE && e[i].ns >= e[begin].ns && e[i].ns <= e[done].ns)
            fail_msg("the watcher (AICPU thread %u) slept at %llu ns, %lld ns after the "
                     "submit: the round's end had to wake it",
                     watcher, (unsigned long long)e[i].ns,
                     (long long)(e[i].ns - e[submit].ns));
    rth_close(&h);
}

static void orch_one_where(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    atomic_store(&g_orch_thread, (uintptr_t)pthread_self());
    submit_bare(rt, K_WHERE);
}

static void orch_two_count(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    submit_bare(rt, K_COUNT);
    submit_bare(rt, K_COUNT);
}

static bool kernel_ran(void *arg)
{
    (void)arg;
    return atomic_load(&g_invocations) != 0;
}

/* One K_WHERE task, then it waits outside the runtime until that task's
 * kernel ran (a fatal error if it never does). */
static void orch_one_where_then_wait_for_it(struct simpler_orch *rt,
                                            const struct simpler_orch_args *args)
{
    orch_one_where(rt, args);
    if (!ts_poll_until(kernel_ran, NULL))
        rt->ops->fatal(rt);
}

/*
 * A lone task's core is the orchestrator's to run (docs/runtime.md, "The
 * orchestrator runs a lone task's core"): in a one-task round the step of
 * the orchestrator's submit starts no core, and after its orchestration
 * the orchestrator runs that core's block of the round's core launch
 * itself, so the kernel runs on the orchestrator's thread. A round where
 * that core's thread took its block first (simdev lets a core woken by
 * anything take it), or where the watcher found the core overdue (50 us,
 * a preempted orchestrator), runs it elsewhere and proves nothing: of 20
 * rounds one must run it there (none: the core was started, as before
 * this change, and its own thread ran it). Every round runs its one
 * kernel once and succeeds.
 */
static void a_lone_tasks_core_runs_on_the_orchestrators_thread(void **state)
{
    (void)state;
    TS_SKIP_UNDER_HBG("no orchestrator runs on the device");
    struct simdev_config cfg = ts_small_config();
    cfg.spin_ns = 0;   /* no core thread takes its block at the hand-out */
    cfg.pin_cores = 0; /* no core waits for the orchestrator's CPU */
    ts_device_setup_config(&cfg);
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    uint32_t here = 0;
    for (uint32_t round = 0; round < 20 && !here; round++) {
        atomic_store(&g_invocations, 0);
        atomic_store(&g_kernel_thread, 0);
        assert_int_equal(run_guarded(&h, orch_one_where, NULL), 0);
        assert_int_equal(atomic_load(&g_invocations), 1);
        assert_int_equal(h.result.tasks_completed, 1);
        here += atomic_load(&g_kernel_thread) == atomic_load(&g_orch_thread);
    }
    assert_int_equal(here, 1);
    rth_close(&h);
}

/* The AICPU jobs of one round of `orch` on `h` (timeline on), and how
 * many of the device's AICPU threads ran them. */
static void program_jobs(struct rt_harness *h, simpler_orch_entry_fn orch, uint32_t *jobs,
                         uint32_t *threads)
{
    enum { CAPACITY = 1 << 14 };
    static struct simdev_timeline_entry e[CAPACITY];
    assert_int_equal(simdev_timeline_start_with(0, CAPACITY, 0), 0);
    assert_int_equal(run_guarded(h, orch, NULL), 0);
    size_t n = 0;
    uint64_t dropped = 99;
    assert_int_equal(simdev_timeline_stop(0, e, CAPACITY, &n, &dropped), 0);
    assert_int_equal(dropped, 0); /* the buffer holds every mark */
    uint32_t mask = 0;
    *jobs = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].mark != SIMDEV_MARK_JOB_BEGIN || e[i].core != 0 || e[i].thread >= 32)
            continue;
        (*jobs)++;
        mask |= 1u << e[i].thread;
    }
    *threads = (uint32_t)__builtin_popcount(mask);
}

/*
 * The AICPU threads one round of `orch` used, on a fresh harness: the
 * round is tried up to 10 times until it uses `want` threads (a round
 * whose schedulers' thread the hold timer started, because the round took
 * longer than RT_SCHEDULERS_DUE_NS under load, proves nothing: one of 10
 * must not). Every try runs two jobs: the orchestrator's and the
 * scheduler's.
 */
static uint32_t threads_of_round(simpler_orch_entry_fn orch, uint32_t want)
{
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    assert_int_equal(run_guarded(&h, orch_two_count, NULL), 0); /* warm-up */
    uint32_t jobs = 0, threads = 0;
    for (int tries = 0; tries < 10 && threads != want; tries++) {
        program_jobs(&h, orch, &jobs, &threads);
        assert_int_equal(jobs, 2); /* the orchestrator's and the scheduler's */
    }
    rth_close(&h);
    return threads;
}

/*
 * A TMR program's launch starts the orchestrator's thread alone
 * (SIMDEV_BATCH_AICPU_LEAD): a one-task round runs its scheduler's part on
 * that thread after the orchestration (its two jobs on one AICPU thread).
 * A two-task round starts the scheduler's thread at its second submit
 * where the runnable budget leaves a core a CPU beside the orchestrator
 * and the scheduler (a budget of 4: two threads); with a budget of 2 the
 * scheduler waits for the orchestration and runs on its thread after it
 * (one thread). 2 threads with the budget of 2 would mean the scheduler
 * took the cores' CPU while the orchestrator submits (each dispatch then
 * woke a core); 1 with the budget of 4, that it was never started beside
 * the orchestration; 2 for the one-task round, that the schedulers
 * started with the program, as before the lead launch.
 */
static void a_tmr_rounds_schedulers_start_when_its_orchestration_needs_them(void **state)
{
    (void)state;
    TS_SKIP_UNDER_HBG("every thread of a host build schedules from the start");
    use_topology_budget(2, 1, 2, 2);
    assert_int_equal(threads_of_round(orch_one_count, 1), 1);
    assert_int_equal(threads_of_round(orch_two_count, 1), 1);
    use_topology_budget(2, 1, 2, 4);
    uint32_t jobs = 0, threads = 0;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    assert_int_equal(run_guarded(&h, orch_two_count, NULL), 0); /* warm-up */
    program_jobs(&h, orch_two_count, &jobs, &threads);
    assert_int_equal(jobs, 2);
    assert_int_equal(threads, 2);
    rth_close(&h);
}

/*
 * A lone task's core has an owner however the orchestration goes on: one
 * that submits a task and then waits outside the runtime for that task's
 * kernel (it never calls the runtime again, so it never starts the core
 * itself) still sees it run, on another thread, because the watcher
 * starts the core once it has been owed RT_OWED_CORE_NS. Its naps here
 * are longer than the orchestration's wait (TS_DEADLOCK_GUARD_MS), so the
 * start must come from its look at the owed core (when its watch begins,
 * or when the owing wakes it), not from a nap's end. Run
 * twice: once after a larger round, once after a one-task round (the cores
 * that share the orchestrator's CPU are let arrive before the first submit
 * after the one, not after the other).
 */
static void a_lone_tasks_core_is_started_by_the_watcher_when_the_orchestrator_goes_on(
    void **state)
{
    (void)state;
    TS_SKIP_UNDER_HBG("no orchestrator runs on the device");
    struct simdev_config cfg = ts_small_config();
    cfg.spin_ns = 0;
    ts_device_setup_config(&cfg);
    /* The watcher's naps (a quarter of this) end after the orchestration's
     * wait gives up (TS_DEADLOCK_GUARD_MS). */
    struct rt_config config = rth_small_config();
    config.sched_timeout_ms = 4 * TS_DEADLOCK_GUARD_MS + 40000;
    struct rt_harness h;
    rth_open(&h, &config, 0);
    assert_int_equal(run_guarded(&h, orch_two_count, NULL), 0); /* the larger round */
    for (uint32_t round = 0; round < 2; round++) {
        atomic_store(&g_invocations, 0);
        atomic_store(&g_kernel_thread, 0);
        assert_int_equal(run_guarded(&h, orch_one_where_then_wait_for_it, NULL), 0);
        assert_int_equal(atomic_load(&g_invocations), 1);
        assert_true(atomic_load(&g_kernel_thread) != atomic_load(&g_orch_thread));
    }
    rth_close(&h);
}

static void use_watchdog(uint32_t watchdog_ms)
{
    struct simdev_config cfg = ts_small_config();
    cfg.watchdog_ms = watchdog_ms;
    ts_device_setup_config(&cfg);
}

static void sync_start_wider_than_a_scheduler_fails_at_submit(void **state)
{
    (void)state;
    use_watchdog(5000);
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    struct simpler_orch_args a = sync_start_args(3, 0);
    int status = run_guarded(&h, orch_sync_start, &a);
    /* DEVICE_LOST: the run ended its schedulers but a core loop never
     * returned (see run_failed_at_once_still_ends_every_core_loop) */
    assert_int_equal(status, -SIMPLER_ORCH_ERR_SYNC_START);
    assert_int_equal(g_submit_rc, -SIMPLER_ORCH_ERR_SYNC_START);
    assert_int_equal(h.result.status, -SIMPLER_ORCH_ERR_SYNC_START);
    assert_int_equal(h.result.tasks_submitted, 0); /* 1: accepted, then failed later */
    assert_int_equal(atomic_load(&g_invocations), 0);
    /* the harness runs again */
    a = sync_start_args(2, 0);
    assert_int_equal(run_guarded(&h, orch_sync_start, &a), 0);
    assert_int_equal(atomic_load(&g_invocations), 2);
    rth_close(&h);
}

/* Fails the run before any task exists. */
static void orch_fatal_at_once(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    rt->ops->fatal(rt);
}

/*
 * A run whose error is latched before its schedulers have heard every
 * core's hello must still end: each scheduler rings its cores' exit, and a
 * core loop that starts only after that doorbell must treat it as this
 * run's exit, not as the previous run's leftover.
 */
static void run_failed_at_once_still_ends_every_core_loop(void **state)
{
    (void)state;
    use_watchdog(5000);
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    for (int round = 0; round < 20; round++) {
        int status = run_guarded(&h, orch_fatal_at_once, NULL);
        if (status != -SIMPLER_ORCH_ERR_EXPLICIT_FATAL)
            fail_msg("round %d: status %d (%s): a core loop never saw its exit", round, status,
                     simpler_strerror(status));
    }
    assert_int_equal(run_guarded(&h, orch_one_count, NULL), 0);
    assert_int_equal(atomic_load(&g_invocations), 1);
    rth_close(&h);
}

static void sync_start_with_two_schedulers_runs_on_the_cluster_owner(void **state)
{
    (void)state;
    use_topology(3, 1, 2); /* 2 schedulers; one owns the cluster, one nothing */
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    for (int round = 0; round < 10; round++) {
        records_reset();
        meeting_destroy(&g_meet);
        meeting_init(&g_meet);
        struct simpler_orch_args a = sync_start_args(2, 0);
        assert_int_equal(run(&h, orch_sync_start, &a), 0);
        assert_int_equal(g_submit_rc, 0); /* -7: the bound counted the wrong owner */
        assert_int_equal(atomic_load(&g_invocations), 2);
        assert_int_equal(atomic_load(&g_core_mask), 0x6);
    }
    rth_close(&h);
}

/*
 * 1 AIC + 4 AIV with 2 schedulers: scheduler 0 owns the cluster (AIV 1, 2)
 * and AIV 3, scheduler 1 owns AIV 4 only. A 2-block sync-start task is
 * accepted (one scheduler can hold 2 AIV), so it must run whichever
 * scheduler pops it first.
 */
static void sync_start_task_runs_whichever_scheduler_pops_it(void **state)
{
    (void)state;
    use_topology(3, 1, 4);
    struct rt_config cfg = rth_small_config();
    cfg.sched_timeout_ms = 2000;
    struct rt_harness h;
    rth_open(&h, &cfg, 0);
    for (int round = 0; round < 20; round++) {
        records_reset();
        meeting_destroy(&g_meet);
        meeting_init(&g_meet);
        struct simpler_orch_args a = sync_start_args(2, 0);
        int status = run(&h, orch_sync_start, &a);
        if (status != 0)
            fail_msg("round %d: status %d, stall class %u, %u blocks ran: the task was "
                     "stranded on a scheduler that can never hold 2 AIV cores",
                     round, status, h.result.stall_class, atomic_load(&g_invocations));
        assert_int_equal(atomic_load(&g_invocations), 2);
    }
    rth_close(&h);
}

/* ================================================ 4. kernel failure */

/* args: tensor 0 = int64 x[1]; scalars: tasks, fail_at, code, per scope */
static void orch_chain(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    uint64_t tasks = args->scalars[0], per_scope = args->scalars[3];
    struct simpler_task_args ta;
    struct simpler_task_result r;
    for (uint64_t i = 0; i < tasks; i += per_scope) {
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        for (uint64_t j = i; j < i + per_scope && j < tasks; j++) {
            simpler_task_args_init(&ta);
            simpler_task_args_add_inout(&ta, &args->tensors[0]);
            simpler_task_args_add_scalar(&ta, j);
            simpler_task_args_add_scalar(&ta, args->scalars[1]);
            simpler_task_args_add_scalar(&ta, args->scalars[2]);
            if (j % 2)
                simpler_submit_aic(rt, K_CHAIN, &ta, &r);
            else
                simpler_submit_aiv(rt, K_CHAIN, &ta, &r);
        }
        simpler_scope_end(rt);
    }
}

/* Runs a chain of `tasks` tasks over x = 0 failing at `fail_at` with
 * `code`; returns the run status and writes x's final value. */
static int run_chain(struct rt_harness *h, int64_t *x_dev, uint64_t tasks, uint64_t fail_at,
                     uint64_t code, int64_t *x)
{
    int64_t zero = 0;
    ts_to_dev(x_dev, &zero, sizeof zero);
    struct simpler_tensor t = ts_dev_tensor_1d(x_dev, 1, SIMPLER_DTYPE_I64);
    uint64_t s[4] = {tasks, fail_at, code, 10};
    struct simpler_orch_args a = make_args(&t, 1, s, 4);
    records_reset();
    int status = run(h, orch_chain, &a);
    ts_from_dev(x, x_dev, sizeof *x);
    return status;
}

static void kernel_failure_code_becomes_the_run_status(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    int64_t *x_dev = ts_dev_alloc(sizeof(int64_t));
    int64_t x;
    assert_int_equal(run_chain(&h, x_dev, 1, 0, 321, &x), -321);
    assert_int_equal(h.result.status, -321);
    assert_int_equal(h.result.tasks_completed, 0); /* 1: the failed task counted as done */
    assert_int_equal(x, 0);

    /* outside 200..999: reported as the band's minimum */
    assert_int_equal(run_chain(&h, x_dev, 1, 0, 5, &x), -SIMPLER_KERNEL_ERR_MIN);
    assert_int_equal(h.result.status, -200);
    assert_int_equal(run_chain(&h, x_dev, 1, 0, 1000, &x), -200);
    assert_int_equal(run_chain(&h, x_dev, 1, 0, 999, &x), -999);

    /* the same harness runs clean again, with the right output */
    assert_int_equal(run_chain(&h, x_dev, 7, UINT64_MAX, 0, &x), 0);
    assert_int_equal(x, 7);
    assert_int_equal(atomic_load(&g_order_violations), 0);
    assert_int_equal(h.result.status, 0);
    check_spmd_index(&h, 37, 0, 0x6);
    assert_int_equal(simdev_free(x_dev), 0);
    rth_close(&h);
}

static void failure_mid_chain_stops_the_run_before_its_dependents(void **state)
{
    (void)state;
    TS_SKIP_UNDER_HBG("its 200-task chain needs a ring that reclaims");
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    int64_t *x_dev = ts_dev_alloc(sizeof(int64_t));
    int64_t x;
    assert_int_equal(run_chain(&h, x_dev, 200, 100, 321, &x), -321);
    /* tasks 0..100 ran (100 failed before writing); 102+: a dependent of
     * the failed task ran */
    assert_int_equal(atomic_load(&g_invocations), 101);
    assert_int_equal(x, 100);
    assert_int_equal(atomic_load(&g_order_violations), 0);
    assert_int_equal(h.result.tasks_completed, 100);
    assert_int_equal(h.result.status, -321);

    assert_int_equal(run_chain(&h, x_dev, 200, UINT64_MAX, 0, &x), 0);
    assert_int_equal(x, 200); /* the next run is whole again */
    assert_int_equal(atomic_load(&g_invocations), 200);
    assert_int_equal(h.result.tasks_completed, 200);
    assert_int_equal(simdev_free(x_dev), 0);
    rth_close(&h);
}

/* scalar 0: failing block. An SPMD task of 9 blocks, then a consumer. */
static void orch_spmd_fail(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    struct simpler_task_result wide, after;
    simpler_task_args_init(&ta);
    simpler_task_args_add_scalar(&ta, args->scalars[0]);
    simpler_task_args_set_block_num(&ta, 9);
    simpler_submit_aiv(rt, K_BLOCK_FAIL, &ta, &wide);
    simpler_task_args_init(&ta);
    simpler_task_args_set_dependencies(&ta, &wide.task_id, 1);
    simpler_submit_aiv(rt, K_COUNT, &ta, &after);
}

static void failing_block_of_an_spmd_task_fails_the_run(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    for (uint64_t block = 0; block < 9; block += 4) {
        uint64_t s[1] = {block};
        struct simpler_orch_args a = make_args(NULL, 0, s, 1);
        records_reset();
        assert_int_equal(run(&h, orch_spmd_fail, &a), -321);
        assert_int_equal(atomic_load(&g_invocations), 0); /* the consumer ran */
        assert_int_equal(h.result.tasks_completed, 0);
    }
    rth_close(&h);
}

/* ================================================ 5. watchdog */

static void orch_one_gate(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    submit_bare(rt, K_GATE);
}

/* A gate kernel, then an independent one-block task that counts its start
 * in g_sync_seen. */
static void orch_gate_then_one(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    submit_bare(rt, K_GATE);
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_scalar(&ta, 0);
    simpler_submit_aiv(rt, K_MEET, &ta, &r);
}

/* One K_SET task of `core_type` (SIMPLER_CORE_AIC or AIV): x[0] =
 * value, once `gate` (1: g_gate, 2: g_gate2) opens. */
static void submit_set(struct simpler_orch *rt, const struct simpler_tensor *x, uint64_t gate,
                       uint64_t value, int aic)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_inout(&ta, x);
    simpler_task_args_add_scalar(&ta, gate);
    simpler_task_args_add_scalar(&ta, value);
    if (aic)
        simpler_submit_aic(rt, K_SET, &ta, &r);
    else
        simpler_submit_aiv(rt, K_SET, &ta, &r);
}

/* One K_SEEN task reading `x`, on the AIC core or an AIV one. */
static void submit_seen(struct simpler_orch *rt, const struct simpler_tensor *x, int aic)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, x);
    if (aic)
        simpler_submit_aic(rt, K_SEEN, &ta, &r);
    else
        simpler_submit_aiv(rt, K_SEEN, &ta, &r);
}

/* tensors a, b, out. p0 (AIV, g_gate) sets a = 7; p1 (the AIC core,
 * g_gate2) sets b = 5; a reader of each (on its producer's core type,
 * counted in g_sync_seen); the consumer, on the AIC core (never held when
 * it could run: nothing can queue it behind p0's held kernel), sets out =
 * a * 10 + b. */
static void orch_pair(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *a = &args->tensors[0], *b = &args->tensors[1];
    submit_set(rt, a, 1, 7, 0);
    submit_set(rt, b, 2, 5, 1);
    submit_seen(rt, a, 0);
    submit_seen(rt, b, 1);
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, a);
    simpler_task_args_add_input(&ta, b);
    simpler_task_args_add_inout(&ta, &args->tensors[2]);
    simpler_submit_aic(rt, K_PAIR, &ta, &r);
}

/*
 * Waits (bounded) until the scheduler has told `core` to exit — which,
 * while a kernel of the run is still blocked on it, only a latched error
 * can cause. Returns 1 once seen.
 */
static int wait_core_exit(uint32_t core)
{
    struct simdev_core_regs *regs = platform_core_regs(0, core);
    if (!regs)
        return 0;
    uint64_t bell = platform_read_doorbell(regs);
    while (!(bell & RT_DOORBELL_EXIT))
        if (platform_wait_doorbell(regs, bell, TS_DEADLOCK_GUARD_MS * 1000000ull, &bell))
            return 0;
    return 1;
}

/* Opens the harness with the small config and `sched_timeout_ms`. */
static void open_with_sched_timeout(struct rt_harness *h, uint32_t sched_timeout_ms)
{
    struct rt_config cfg = rth_small_config();
    cfg.sched_timeout_ms = sched_timeout_ms;
    rth_open(h, &cfg, 0);
}

/* Enqueues `orch`, whose first task is the gate kernel, and waits
 * (bounded) until that kernel blocks in g_gate. Returns 1 once it does. */
static int enqueue_until_gate(struct rt_harness *h, simpler_orch_entry_fn orch)
{
    run_enqueue(h, orch, NULL);
    return ts_gate_wait_arrivals_for(&g_gate, 1, TS_DEADLOCK_GUARD_MS);
}

/* The scheduler timeout of the stall tests: long enough that a thread's
 * delay on a loaded host (a core loop that starts late, a kernel that is
 * dispatched late) never fires it before the stall it means, short enough
 * that the test waits little for it. */
#define STALL_TIMEOUT_MS 1000u

static void scheduler_timeout_while_a_kernel_blocks_is_a_running_stall(void **state)
{
    (void)state;
    struct rt_harness h;
    open_with_sched_timeout(&h, STALL_TIMEOUT_MS);
    int blocked = enqueue_until_gate(&h, orch_one_gate);
    /* The kernel stays in the gate until the scheduler has given up on it
     * and rung its core's exit; only then may it return. */
    int exited = blocked && wait_core_exit(atomic_load(&g_gate_core));
    ts_gate_open(&g_gate);
    int status = run_wait(&h);
    assert_true(blocked); /* 0: the kernel was never dispatched */
    assert_true(exited);  /* 0: the watchdog never fired */
    assert_int_equal(status, -SIMPLER_SCHED_ERR_TIMEOUT);
    assert_int_equal(h.result.status, -SIMPLER_SCHED_ERR_TIMEOUT);
    assert_int_equal(h.result.stall_class, RT_STALL_RUNNING);
    assert_int_equal(h.result.tasks_completed, 0); /* 1: finished despite the timeout */

    /* the core loop has exited, the stream is clean: the next run works
     * (with the usual watchdog: nothing here may depend on 200 ms) */
    h.config.sched_timeout_ms = 10000;
    check_spmd_index(&h, 37, 0, 0x6);
    assert_int_equal(h.result.stall_class, RT_STALL_NONE);
    rth_close(&h);
}

/*
 * A task that becomes ready while one core runs a kernel that does not end
 * (until the test opens its gate) starts on another core: it is not left
 * behind the busy core nor in the queue while the other cores are parked,
 * which only the scheduler's own thread would notice, a quarter of
 * sched_timeout_ms (30 s here) later. With nothing known of the tasks'
 * length yet, a step wakes a parked core; the fetching cores look at
 * their queue every millisecond while parked.
 */
static void a_task_ready_beside_an_endless_kernel_starts_on_another_core(void **state)
{
    (void)state;
    struct rt_harness h;
    open_with_sched_timeout(&h, 120000);
    int blocked = enqueue_until_gate(&h, orch_gate_then_one);
    /* Only then may the gate open: the second task must start first. */
    int started = blocked && ts_gate_wait_arrivals_for(&g_sync_seen, 1, TS_DEADLOCK_GUARD_MS);
    ts_gate_open(&g_gate);
    int status = run_wait(&h);
    assert_true(blocked); /* 0: the gate kernel was never dispatched */
    assert_true(started); /* 0: the second task waited for the endless kernel */
    assert_int_equal(status, 0);
    assert_int_equal(h.result.tasks_completed, 2);
    rth_close(&h);
}

/*
 * A consumer of two producers runs once both completed, whichever
 * completes first. Both producers hold their kernels at a gate (p0 an AIV
 * core at g_gate, p1 the AIC core at g_gate2) until the test has seen both
 * there: by then every task is laid (HBG publishes a lay's batch at once)
 * and, under host_build_graph, the consumer is parked on its later
 * producer, p1. The test opens one gate, waits until that producer's
 * reader starts (so its completion, which releases the reader, has
 * re-parked or readied the consumer too), then opens the other. p1 first:
 * p1's completion parks the consumer again, on p0 only (the scan below p1
 * in its list); p0 first: p0 completes with nobody parked on it, and p1's
 * completion finds p0 done. A consumer run before both producers ended
 * reads a 0 (out 70 or 5); one never run leaves -1.
 */
static void consumer_of_two_runs_after_both_in_either_order(void **state)
{
    (void)state;
    for (int later_first = 0; later_first < 2; later_first++) {
        struct rt_harness h;
        open_with_sched_timeout(&h, 120000);
        struct ts_gate *gates[2] = {&g_gate, &g_gate2};
        for (int g = 0; g < 2; g++) {
            ts_gate_destroy(gates[g]);
            ts_gate_init(gates[g]);
        }
        ts_gate_destroy(&g_sync_seen);
        ts_gate_init(&g_sync_seen);
        ts_gate_open(&g_sync_seen);
        int64_t *dev = ts_dev_alloc(3 * sizeof(int64_t));
        int64_t host[3] = {0, 0, -1};
        ts_to_dev(dev, host, sizeof host);
        struct simpler_tensor t[3] = {ts_dev_tensor_1d(&dev[0], 1, SIMPLER_DTYPE_I64),
                                      ts_dev_tensor_1d(&dev[1], 1, SIMPLER_DTYPE_I64),
                                      ts_dev_tensor_1d(&dev[2], 1, SIMPLER_DTYPE_I64)};
        struct simpler_orch_args a = make_args(t, 3, NULL, 0);
        run_enqueue(&h, orch_pair, &a);
        int held = ts_gate_wait_arrivals_for(&g_gate, 1, TS_DEADLOCK_GUARD_MS) &&
                   ts_gate_wait_arrivals_for(&g_gate2, 1, TS_DEADLOCK_GUARD_MS);
        struct ts_gate *first = later_first ? &g_gate2 : &g_gate;
        ts_gate_open(first);
        int first_done = held && ts_gate_wait_arrivals_for(&g_sync_seen, 1,
                                                           TS_DEADLOCK_GUARD_MS);
        ts_gate_open(later_first ? &g_gate : &g_gate2);
        int status = run_wait(&h);
        ts_from_dev(host, dev, sizeof host);
        assert_true(held);       /* 0: a producer never reached its gate */
        assert_true(first_done); /* 0: the first producer's reader never started */
        assert_int_equal(status, 0);
        assert_int_equal(h.result.tasks_completed, 5);
        assert_int_equal(host[0], 7);
        assert_int_equal(host[1], 5);
        assert_int_equal(host[2], 75); /* 70 or 5: it ran before a producer ended */
        assert_int_equal(simdev_free(dev), 0);
        rth_close(&h);
    }
}

/*
 * The same stall with 2 schedulers (1 AIC + 2 AIV: scheduler 0 owns every
 * core, scheduler 1 none). Whichever of them fires first, the run is stalled
 * on a running kernel; the idle scheduler must not report it as a
 * dependency deadlock.
 */
static void scheduler_timeout_with_two_schedulers_is_still_a_running_stall(void **state)
{
    (void)state;
    use_topology(3, 1, 2);
    struct rt_harness h;
    open_with_sched_timeout(&h, STALL_TIMEOUT_MS);
    for (int round = 0; round < 8; round++) {
        ts_gate_destroy(&g_gate);
        ts_gate_init(&g_gate);
        records_reset();
        int blocked = enqueue_until_gate(&h, orch_one_gate);
        int exited = blocked && wait_core_exit(atomic_load(&g_gate_core));
        ts_gate_open(&g_gate);
        int status = run_wait(&h);
        assert_true(blocked);
        assert_true(exited);
        assert_int_equal(status, -SIMPLER_SCHED_ERR_TIMEOUT);
        if (h.result.stall_class != RT_STALL_RUNNING)
            fail_msg("round %d: stall class %u, expected RUNNING (%u): the scheduler that "
                     "owns no running core classified the stall",
                     round, h.result.stall_class, RT_STALL_RUNNING);
    }
    rth_close(&h);
}

static bool first_task_ran(void *arg)
{
    (void)arg;
    return atomic_load(&g_invocations) != 0;
}

/* One task, then the orchestration blocks on g_orch_gate (it "computes"),
 * then submits again. */
static void orch_stuck(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    (void)args;
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_submit_aiv(rt, K_COUNT, &ta, &r);
    /* The first task runs before the orchestration "computes": a stall
     * judged while it has not run yet would be another class. Bounded by
     * the deadlock guard (a task never run fails the counts below). */
    (void)ts_poll_until(first_task_ran, NULL);
    ts_gate_pass(&g_orch_gate);
    g_late_submit_rc = simpler_submit_aiv(rt, K_COUNT, &ta, &r);
}

static void scheduler_timeout_while_the_orchestration_computes_is_orch_starvation(void **state)
{
    (void)state;
    TS_SKIP_UNDER_HBG("its orchestration runs on the host, before the device starts");
    struct rt_config cfg = rth_small_config();
    cfg.sched_timeout_ms = STALL_TIMEOUT_MS;
    struct rt_harness h;
    rth_open(&h, &cfg, 0);
    run_enqueue(&h, orch_stuck, NULL);
    int stuck = ts_gate_wait_arrivals_for(&g_orch_gate, 1, TS_DEADLOCK_GUARD_MS);
    /* The core that ran the first task: the round's cores start on
     * demand, and only a joined core is rung out (the others are left). */
    int exited = stuck && wait_core_exit(atomic_load(&g_count_core));
    ts_gate_open(&g_orch_gate);
    int status = run_wait(&h);
    assert_true(stuck);
    assert_true(exited); /* 0: the watchdog never fired */
    assert_int_equal(status, -SIMPLER_SCHED_ERR_TIMEOUT);
    /* RUNNING / DEPENDENCY_DEADLOCK: the first task was misjudged */
    assert_int_equal(h.result.stall_class, RT_STALL_ORCH_STARVATION);
    assert_int_equal(g_late_submit_rc, -SIMPLER_SCHED_ERR_TIMEOUT); /* latched error returned */
    assert_int_equal(atomic_load(&g_invocations), 1); /* 2: the late task was dispatched */
    assert_int_equal(h.result.tasks_submitted, 1);
    assert_int_equal(h.result.tasks_completed, 1);

    records_reset();
    h.config.sched_timeout_ms = 10000;
    check_spmd_index(&h, 5, 1, 0x1);
    rth_close(&h);
}

/* ================================================ 6. several schedulers */

/* args: tensor 0 = int64 s[1], 1 = int64 a[FAN_TASKS], 2 = int64 total[1] */
static void orch_fan(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *s = &args->tensors[0];
    const struct simpler_tensor *a = &args->tensors[1];
    struct simpler_task_args ta;
    struct simpler_task_result r;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output_existing(&ta, s);
    simpler_task_args_add_scalar(&ta, 7);
    simpler_submit_aiv(rt, K_ROOT, &ta, &r);
    for (uint64_t i = 0; i < FAN_TASKS; i++) {
        struct simpler_tensor slot;
        simpler_tensor_slice(&slot, a, 0, i, i + 1, 1);
        simpler_task_args_init(&ta);
        simpler_task_args_add_input(&ta, s);
        simpler_task_args_add_output_existing(&ta, &slot);
        simpler_task_args_add_scalar(&ta, i);
        if (i % 3 == 0)
            simpler_submit_aic(rt, K_LEAF, &ta, &r);
        else
            simpler_submit_aiv(rt, K_LEAF, &ta, &r);
    }
    simpler_task_args_init(&ta);
    simpler_task_args_add_input(&ta, a);
    simpler_task_args_add_output_existing(&ta, &args->tensors[2]);
    simpler_submit_aiv(rt, K_SUM, &ta, &r);
}

/*
 * One thread watches a run, however many schedulers it has (scheduler.c,
 * RT_WATCHER): every scheduler that owns cores opens (its handshake done)
 * and its thread leaves, but the watcher's, which alone marks the watch's
 * end (with 2 or 3 schedulers: 2 opened, 1 watch) and, at the run's end, rings out the cores of every scheduler it
 * took over. `marks`: the run's protocol points. A watch's end counted
 * twice means a scheduler's thread stayed asleep to the run's end (and
 * was woken for it); exits and leaves short of the cores, a core loop
 * nobody ended.
 */
static void check_one_watcher(const struct simdev_timeline_entry *marks, size_t n,
                              uint32_t cores)
{
    uint32_t open = 0, done = 0, ended = 0;
    for (size_t i = 0; i < n; i++) {
        if (marks[i].mark != SIMDEV_MARK_POINT)
            continue;
        open += marks[i].op == SIMDEV_POINT_SCHED_OPEN;
        done += marks[i].op == SIMDEV_POINT_SCHED_DONE;
        ended += marks[i].op == SIMDEV_POINT_CORE_EXIT || marks[i].op == SIMDEV_POINT_CORE_LEAVE;
    }
    /* 2 clusters: whatever the schedulers, at most two own cores (a
     * scheduler that owns none opens nothing); with one AICPU thread to
     * schedule (TMR, 2 threads) one */
    assert_true(open >= 1 && open <= 2);
    assert_int_equal(done, 1);
    assert_int_equal(ended, cores);
}

static void check_fan_on_schedulers(uint32_t aicpu_threads, uint32_t runnable_cpus)
{
    use_topology_budget(aicpu_threads, 2, 4, runnable_cpus);
    struct rt_config cfg = rth_small_config();
    cfg.task_window[0] = 1024; /* all 502 tasks live in the outer scope */
    cfg.dep_pool[0] = 4096;
    struct rt_harness h;
    rth_open(&h, &cfg, 0);
    int64_t *s_dev = ts_dev_alloc(sizeof(int64_t));
    int64_t *a_dev = ts_dev_alloc(FAN_TASKS * sizeof(int64_t));
    int64_t *total_dev = ts_dev_alloc(sizeof(int64_t));
    struct simpler_tensor t[3] = {
        ts_dev_tensor_1d(s_dev, 1, SIMPLER_DTYPE_I64),
        ts_dev_tensor_1d(a_dev, FAN_TASKS, SIMPLER_DTYPE_I64),
        ts_dev_tensor_1d(total_dev, 1, SIMPLER_DTYPE_I64),
    };
    struct simpler_orch_args args = make_args(t, 3, NULL, 0);
    for (int round = 0; round < 2; round++) {
        records_reset();
        meeting_destroy(&g_cores_meet);
        meeting_init(&g_cores_meet);
        g_all_cores = 0x3f; /* leaves wait until all 6 cores have run one */
        static int64_t a[FAN_TASKS];
        memset(a, 0xff, sizeof a);
        ts_to_dev(a_dev, a, sizeof a);

        enum { CAP = 16384 };
        static struct simdev_timeline_entry marks[CAP];
        assert_int_equal(simdev_timeline_start_with(0, CAP, SIMDEV_TIMELINE_POINTS), 0);
        assert_int_equal(run(&h, orch_fan, &args), 0);
        size_t n = 0;
        uint64_t dropped = 99;
        assert_int_equal(simdev_timeline_stop(0, marks, CAP, &n, &dropped), 0);
        assert_int_equal(dropped, 0);
        check_one_watcher(marks, n, 6);
        int64_t total;
        ts_from_dev(&total, total_dev, sizeof total);
        ts_from_dev(a, a_dev, sizeof a);
        for (int i = 0; i < FAN_TASKS; i++)
            if (a[i] != 7000 + i)
                fail_msg("a[%d] = %lld: leaf ran before the root or never", i, (long long)a[i]);
        assert_int_equal(total, 500 * 7000 + 499 * 500 / 2); /* the sum ran early */
        uint32_t per_core[6] = {0};
        for (int i = 0; i < FAN_TASKS; i++) {
            uint32_t c = atomic_load(&g_task_core[i]);
            assert_true(c >= 1 && c <= 6); /* 0: leaf i never ran */
            c -= 1;
            if (i % 3 == 0)
                assert_true(c < 2); /* an AIC leaf on an AIV core */
            else
                assert_true(c >= 2); /* an AIV leaf on an AIC core */
            per_core[c]++;
        }
        /* 0 somewhere: a core (or a scheduler's whole share) got no work */
        for (int c = 0; c < 6; c++)
            if (per_core[c] == 0)
                fail_msg("%u schedulers: core %d ran no leaf", aicpu_threads - 1, c);
        assert_int_equal(meeting_timeouts(&g_cores_meet), 0);
        assert_int_equal(h.result.subtasks_dispatched, FAN_TASKS + 2); /* one per task */
        assert_int_equal(h.result.tasks_completed, FAN_TASKS + 2);
        assert_int_equal(h.result.tasks_submitted, FAN_TASKS + 2);
    }
    assert_int_equal(simdev_free(s_dev), 0);
    assert_int_equal(simdev_free(a_dev), 0);
    assert_int_equal(simdev_free(total_dev), 0);
    rth_close(&h);
}

static void fan_of_500_tasks_uses_every_core_with_2_schedulers(void **state)
{
    (void)state;
    check_fan_on_schedulers(3, 0);
}

static void fan_of_500_tasks_uses_every_core_with_3_schedulers(void **state)
{
    (void)state;
    check_fan_on_schedulers(4, 0);
}

/* A runnable budget of one device thread: the orchestrator alone fills
 * it, so every core that goes idle parks at once (simdev), and a step
 * finds only parked cores whenever no core is busy; it must wake them
 * (wake_parked), or the leaves, which wait until all 6 cores have run one,
 * and the run would hang. */
static void fan_of_500_tasks_completes_when_the_budget_parks_every_idle_core(void **state)
{
    (void)state;
    check_fan_on_schedulers(2, 1);
}

/* ================================================ 7. graph shapes */

/* args: tensor 0 = int64 out[64] */
static void orch_fan_creator(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    uint64_t shape[1] = {64};
    struct simpler_task_args ta;
    struct simpler_task_result x, y[FAN], sink;
    simpler_task_args_init(&ta);
    simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_I64, 0);
    simpler_submit_aiv(rt, K_IOTA, &ta, &x);
    for (uint32_t k = 0; k < FAN; k++) {
        simpler_task_args_init(&ta);
        simpler_task_args_add_input(&ta, &x.outputs[0]);
        simpler_task_args_add_output(&ta, shape, 1, SIMPLER_DTYPE_I64, 0);
        simpler_task_args_add_scalar(&ta, k + 1);
        if (k % 2)
            simpler_submit_aic(rt, K_SCALE, &ta, &y[k]);
        else
            simpler_submit_aiv(rt, K_SCALE, &ta, &y[k]);
    }
    simpler_task_args_init(&ta);
    for (uint32_t k = 0; k < FAN; k++)
        simpler_task_args_add_input(&ta, &y[k].outputs[0]);
    simpler_task_args_add_output_existing(&ta, &args->tensors[0]);
    g_submit_rc = simpler_submit_aiv(rt, K_SUM16, &ta, &sink);
}

static void fan_out_fan_in_through_runtime_outputs_sums_exactly(void **state)
{
    (void)state;
    struct rt_harness h;
    rth_open(&h, NULL, 64);
    int64_t *out_dev = ts_dev_alloc(64 * sizeof(int64_t));
    struct simpler_tensor t = ts_dev_tensor_1d(out_dev, 64, SIMPLER_DTYPE_I64);
    struct simpler_orch_args a = make_args(&t, 1, NULL, 0);
    for (int round = 0; round < 3; round++) {
        int64_t out[64];
        memset(out, 0xff, sizeof out);
        ts_to_dev(out_dev, out, sizeof out);
        assert_int_equal(run(&h, orch_fan_creator, &a), 0);
        assert_int_equal(g_submit_rc, 0);
        ts_from_dev(out, out_dev, sizeof out);
        for (int i = 0; i < 64; i++)
            if (out[i] != 136 * i) /* sum of k = 1..16 is 136 */
                fail_msg("out[%d] = %lld, expected %d", i, (long long)out[i], 136 * i);
        /* 16 root -> scale and 16 scale -> sum creator edges; more: a
         * spurious edge between independent scales */
        assert_int_equal(h.result.edges, 32);
        for (int e = 0; e < 32; e++)
            assert_int_equal(h.edges[e].sources, RT_EDGE_CREATOR);
        assert_int_equal(h.result.tasks_completed, FAN + 2);
    }
    assert_int_equal(simdev_free(out_dev), 0);
    rth_close(&h);
}

/* args: tensors 0, 1 = the ping-pong buffers (int64 ST_N) */
static void orch_stencil(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    struct simpler_task_args ta;
    struct simpler_task_result r;
    for (uint32_t step = 0; step < ST_STEPS; step++) {
        const struct simpler_tensor *src = &args->tensors[step % 2];
        const struct simpler_tensor *dst = &args->tensors[(step + 1) % 2];
        uint64_t accumulate = step % 2; /* odd steps add to what dst held */
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        for (uint64_t base = 0; base < ST_N; base += ST_BLK) {
            uint64_t lo = base ? base - 1 : 0;
            uint64_t hi = base + ST_BLK + 1 < ST_N ? base + ST_BLK + 1 : ST_N;
            struct simpler_tensor in = {0}, out = {0};
            simpler_tensor_slice(&in, src, 0, lo, hi, 1);
            simpler_tensor_slice(&out, dst, 0, base, base + ST_BLK, 1);
            simpler_task_args_init(&ta);
            simpler_task_args_add_input(&ta, &in);
            if (accumulate)
                simpler_task_args_add_inout(&ta, &out);
            else
                simpler_task_args_add_output_existing(&ta, &out);
            simpler_task_args_add_scalar(&ta, lo);
            simpler_task_args_add_scalar(&ta, hi);
            simpler_task_args_add_scalar(&ta, base);
            simpler_task_args_add_scalar(&ta, accumulate);
            if ((base / ST_BLK) % 2)
                simpler_submit_aic(rt, K_STENCIL, &ta, &r);
            else
                simpler_submit_aiv(rt, K_STENCIL, &ta, &r);
        }
        simpler_scope_end(rt);
    }
}

static void stencil_reference(int64_t *p0, int64_t *p1)
{
    int64_t *p[2] = {p0, p1};
    for (uint32_t step = 0; step < ST_STEPS; step++) {
        const int64_t *src = p[step % 2];
        int64_t *dst = p[(step + 1) % 2];
        for (int i = 0; i < ST_N; i++) {
            int64_t l = i > 0 ? src[i - 1] : 0;
            int64_t r = i + 1 < ST_N ? src[i + 1] : 0;
            dst[i] = (step % 2 ? dst[i] : 0) + l + src[i] + r;
        }
    }
}

static void check_stencil(void)
{
    struct rt_harness h;
    rth_open(&h, NULL, 0);
    int64_t *p_dev[2] = {ts_dev_alloc(ST_N * sizeof(int64_t)),
                         ts_dev_alloc(ST_N * sizeof(int64_t))};
    struct simpler_tensor t[2] = {ts_dev_tensor_1d(p_dev[0], ST_N, SIMPLER_DTYPE_I64),
                                  ts_dev_tensor_1d(p_dev[1], ST_N, SIMPLER_DTYPE_I64)};
    struct simpler_orch_args a = make_args(t, 2, NULL, 0);
    for (int round = 0; round < 3; round++) {
        int64_t init[2][ST_N], expect[2][ST_N], got[2][ST_N];
        for (int i = 0; i < ST_N; i++) {
            init[0][i] = (i * 7 + round) % 13 - 6;
            init[1][i] = 1000 + i;
        }
        memcpy(expect, init, sizeof init);
        stencil_reference(expect[0], expect[1]);
        ts_to_dev(p_dev[0], init[0], sizeof init[0]);
        ts_to_dev(p_dev[1], init[1], sizeof init[1]);
        records_reset();
        assert_int_equal(run(&h, orch_stencil, &a), 0);
        ts_from_dev(got[0], p_dev[0], sizeof got[0]);
        ts_from_dev(got[1], p_dev[1], sizeof got[1]);
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < ST_N; i++)
                if (got[b][i] != expect[b][i])
                    fail_msg("round %d: p%d[%d] = %lld, expected %lld (a read-after-write "
                             "or write-after-read edge was missed)",
                             round, b, i, (long long)got[b][i], (long long)expect[b][i]);
        assert_int_equal(atomic_load(&g_invocations), ST_STEPS * ST_N / ST_BLK);
        assert_int_equal(h.result.tasks_completed, ST_STEPS * ST_N / ST_BLK);
    }
    assert_int_equal(simdev_free(p_dev[0]), 0);
    assert_int_equal(simdev_free(p_dev[1]), 0);
    rth_close(&h);
}

static void ping_pong_stencil_gives_the_reference_values(void **state)
{
    (void)state;
    TS_SKIP_UNDER_HBG("its graph outgrows the test's windows, which TMR reclaims");
    check_stencil();
}

static void ping_pong_stencil_gives_the_reference_values_with_2_schedulers(void **state)
{
    (void)state;
    TS_SKIP_UNDER_HBG("its graph outgrows the test's windows, which TMR reclaims");
    use_topology(3, 2, 4);
    check_stencil();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST_WITH(aiv_task_of_37_blocks_runs_each_block_once_on_2_cores,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(aic_task_of_5_blocks_runs_in_5_waves_on_1_core,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(consumer_of_a_wide_spmd_task_sees_every_block,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(mixed_task_runs_each_kernel_on_its_lane_of_the_cluster_in_waves,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(mixed_task_of_aic_and_aiv0_uses_two_lanes,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(lone_aiv1_kernel_runs_as_an_aiv_task_on_lane_0,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(a_one_task_round_wakes_one_core_and_its_program_ends_the_others,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(a_tmr_rounds_schedulers_open_on_the_orchestrators_thread,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(a_tmr_rounds_schedulers_start_when_its_orchestration_needs_them,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(a_lone_tasks_core_runs_on_the_orchestrators_thread, dispatch_setup,
                          dispatch_teardown),
        SIMPLER_TEST_WITH(a_lone_tasks_core_is_started_by_the_watcher_when_the_orchestrator_goes_on,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(a_tmr_rounds_watcher_waits_for_the_end_awake, dispatch_setup,
                          dispatch_teardown),
        SIMPLER_TEST_WITH(sync_start_blocks_are_resident_at_once,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(sync_start_task_waits_until_all_its_blocks_fit,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(sync_start_wider_than_a_scheduler_fails_at_submit,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(run_failed_at_once_still_ends_every_core_loop,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(sync_start_with_two_schedulers_runs_on_the_cluster_owner,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(sync_start_task_runs_whichever_scheduler_pops_it,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(kernel_failure_code_becomes_the_run_status,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(failure_mid_chain_stops_the_run_before_its_dependents,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(failing_block_of_an_spmd_task_fails_the_run,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(scheduler_timeout_while_a_kernel_blocks_is_a_running_stall,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(scheduler_timeout_while_the_orchestration_computes_is_orch_starvation,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(scheduler_timeout_with_two_schedulers_is_still_a_running_stall,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(a_task_ready_beside_an_endless_kernel_starts_on_another_core,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(consumer_of_two_runs_after_both_in_either_order, dispatch_setup,
                          dispatch_teardown),
        SIMPLER_TEST_WITH(fan_of_500_tasks_uses_every_core_with_2_schedulers,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(fan_of_500_tasks_uses_every_core_with_3_schedulers,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(fan_of_500_tasks_completes_when_the_budget_parks_every_idle_core,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(fan_out_fan_in_through_runtime_outputs_sums_exactly,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(ping_pong_stencil_gives_the_reference_values,
                          dispatch_setup, dispatch_teardown),
        SIMPLER_TEST_WITH(ping_pong_stencil_gives_the_reference_values_with_2_schedulers,
                          dispatch_setup, dispatch_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
