/*
 * bench_runtime.c — per-task cost of the device runtime, end to end: from
 * the orchestrator's submit through the scheduler's dispatch to the task's
 * completion, for task graphs of (nearly) empty kernels. `make bench` runs
 * it after bench_device.
 *
 * Every runtime figure comes from whole runs (rt_run_enqueue, then a stream
 * sync), in sections:
 *   launch    the fixed cost of one run: a 1-task run with a small config,
 *             rt_config_default and this benchmark's config (run
 *             initialisation grows with the windows and the TensorMap);
 *   indep     N independent tasks, each writing (INOUT) its own one-element
 *             tensor — a buffer of its own, or a slice of one shared buffer
 *             — in inner scopes of 256 tasks, so the rings recycle;
 *   chain     N tasks in a chain through one tensor (INOUT);
 *   fanout    rounds of one producer, W consumers and one joiner;
 *   stencil   a 1-D three-point stencil over B blocks of two buffers: step s
 *             task b reads blocks b-1..b+1 of buffer s%2 and writes block b
 *             of buffer (s+1)%2, every edge inferred by the TensorMap;
 *   submit    the orchestrator's cost per submit alone, timed inside the
 *             orchestration (dummy tasks, and kernel tasks into a window
 *             large enough that the orchestrator never waits);
 *   tensormap the TensorMap alone, on the orchestrator's side of a submit
 *             (lookups, inserts and the forgetting of a reused slot's
 *             entries, with this benchmark's map sizes and a window of
 *             4096), single-threaded, for two access patterns: one INOUT
 *             cell per task (indep) and three IN cells and one OUT cell of
 *             a 64-cell stencil's two buffers (the edges inferred counted
 *             and checked); no device, no other thread;
 * and two host references: serial (the kernel called N times in a plain
 * loop) and floor (a cache-line round trip between two spinning threads,
 * taken first and last: how fast the host hands data between CPUs while
 * the rows in between ran — other tenants of the machine change it).
 *
 * For each runtime row: ns/task = run wall time / N (amortised, launch
 * included) and (wall - launch) / N, with its ratio to the 300 ns/task
 * goal. A second table says where the time went: the orchestrator's submit
 * loop per task (wall, and the orchestrator thread's own CPU time), launch
 * to orchestration start, orchestration end to sync, CPU time and context
 * switches of the whole process per task, ring waits, edges wired per task,
 * and how much CPU other processes took meanwhile (a noisy row).
 *
 * Two device topologies, on devices 0 and 1: the test fixture's (2 AICPU
 * threads, 1 AIC + 2 AIV) and the smallest one (2 AICPU threads, 1 AIV).
 * Every kernel task goes to AIV cores, so the AIC core of the first stays
 * idle. Each figure is the median, min and max of 5 timed runs (15 for the
 * launch rows; 2 and 5 with --quick, which also divides N by 10), after a
 * warm-up run whose effects are checked (every task ran exactly once).
 * --spin-ns sets the devices' spin budget before a waiting thread parks.
 *
 * Prints the tables, writes bench/results/runtime-latest.json under the repo
 * root (--root DIR or --out FILE override it; --section, --topology or
 * --spin-ns run a variant and write JSON only with --out).
 *
 * Owns only measurement. It drives the runtime through its internal entry
 * (runtime/runtime.h), as the tests do; its orchestrations and kernels read
 * their arguments and device memory, and the orchestrations also store
 * their own timestamps in globals of this process.
 */
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "common/view.h"
#include "launch/launch.h"
#include "runtime/tensormap.h"
#include "simpler/orchestration.h"
#include "simpler/device.h"

#define GOAL_NS 300.0    /* per-task goal the ratio column compares with */
#define MAX_REPS 16
_Static_assert(MAX_REPS <= BENCH_MAX_SAMPLES, "bench_stats_of takes every repetition");
#define MAX_ROWS 96
#define SCOPE_TASKS 256  /* tasks per inner scope */
#define WINDOW 4096      /* task slots per ring */
#define ELEM_STRIDE 16   /* u32 elements between two tasks' elements: 64 bytes */
#define CASE_BUDGET_NS 20000000000ull /* a case stops repeating after 20 s */

static int g_quick;
static const char *g_section;
static const char *g_topology;
static double g_load_at_start;
static long long g_spin_ns = -1; /* --spin-ns: the devices' spin budget; -1 = simdev's default */

static int section_wanted(const char *name)
{
    return !g_section || strcmp(g_section, name) == 0;
}

static uint64_t scaled(uint64_t full)
{
    uint64_t n = g_quick ? full / 10 : full;
    return n ? n : 1;
}

static uint32_t reps(void)
{
    return g_quick ? 2 : 5;
}

#define CHECK(call) BENCH_CHECK("bench_runtime", call)

static uint64_t now_ns(void)
{
    return simdev_clock_ns();
}

/* ================================================================ device code */

enum { K_TOUCH = 0, KERNEL_COUNT };

/* The "empty" kernel: adds 1 to the first element of its first tensor (the
 * one it writes), so a run can be checked for lost or repeated tasks. */
static void kernel_touch(int64_t *args)
{
    uint32_t *x = simpler_kernel_data(args, 0);
    *x += 1;
}

/* Timestamps the orchestration takes around its submit loop (the device
 * clock is the host's monotonic clock), and the orchestrator thread's own
 * CPU time at the same two points: unlike the wall time, that leaves out
 * the time the thread was parked or descheduled by the kernel (though not
 * time the hypervisor takes from the whole machine). Release stores: the
 * host reads them after the stream sync. */
static _Atomic uint64_t g_orch_begin_ns, g_orch_end_ns;
static _Atomic uint64_t g_orch_cpu_begin_ns, g_orch_cpu_end_ns;

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void stamp(_Atomic uint64_t *wall, _Atomic uint64_t *cpu)
{
    atomic_store_explicit(cpu, thread_cpu_ns(), memory_order_release);
    atomic_store_explicit(wall, simdev_clock_ns(), memory_order_release);
}

static void stamp_begin(void)
{
    stamp(&g_orch_begin_ns, &g_orch_cpu_begin_ns);
}

static void stamp_end(void)
{
    stamp(&g_orch_end_ns, &g_orch_cpu_end_ns);
}

/* Scalars every orchestration here takes. */
enum { ARG_TASKS = 0, ARG_SCOPE, ARG_PARAM, ARG_SCALARS };

/* Task i's own one-element tensor: a slice of `buf` (same buffer address for
 * every task: one TensorMap bucket), or a one-element buffer of its own at
 * the same place (a bucket per task). */
static void own_element(struct simpler_tensor *out, const struct simpler_tensor *buf, uint64_t i,
                        int own_buffer)
{
    if (own_buffer)
        simpler_tensor_make_1d(out, buf->addr + i * ELEM_STRIDE * sizeof(uint32_t), 1,
                               SIMPLER_DTYPE_U32, SIMPLER_MEM_DEVICE);
    else
        simpler_tensor_slice(out, buf, 0, i * ELEM_STRIDE, i * ELEM_STRIDE + 1, 1);
}

/* N tasks (AIV, or dummy), each INOUT on its own element; scopes of ARG_SCOPE.
 * ARG_PARAM: bit 0 = own buffers, bit 1 = dummy tasks, bit 2 = no tensor. */
static void orch_independent(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *buf = &args->tensors[0];
    uint64_t n = args->scalars[ARG_TASKS], scope = args->scalars[ARG_SCOPE];
    uint64_t param = args->scalars[ARG_PARAM];
    int own_buffer = param & 1, dummy = param & 2, no_tensor = param & 4;
    struct simpler_task_args ta;
    struct simpler_tensor view;
    stamp_begin();
    for (uint64_t i = 0; i < n;) {
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        for (uint64_t j = 0; j < scope && i < n; j++, i++) {
            simpler_task_args_init(&ta);
            if (!no_tensor) {
                own_element(&view, buf, i, own_buffer);
                simpler_task_args_add_inout(&ta, &view);
            }
            if (dummy)
                simpler_submit_dummy(rt, &ta, NULL);
            else
                simpler_submit_aiv(rt, K_TOUCH, &ta, NULL);
        }
        simpler_scope_end(rt);
    }
    stamp_end();
}

/* N tasks in a chain: each INOUT on the same one-element tensor. */
static void orch_chain(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *x = &args->tensors[0];
    uint64_t n = args->scalars[ARG_TASKS], scope = args->scalars[ARG_SCOPE];
    struct simpler_task_args ta;
    stamp_begin();
    for (uint64_t i = 0; i < n;) {
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        for (uint64_t j = 0; j < scope && i < n; j++, i++) {
            simpler_task_args_init(&ta);
            simpler_task_args_add_inout(&ta, x);
            simpler_submit_aiv(rt, K_TOUCH, &ta, NULL);
        }
        simpler_scope_end(rt);
    }
    stamp_end();
}

/*
 * Rounds of fan-out/fan-in, one scope each: the producer writes x (INOUT);
 * consumer w reads x and writes element w of y; the joiner reads all of y
 * and writes x. ARG_TASKS counts rounds, ARG_PARAM is W. The written tensor
 * comes first (the kernel touches tensor 0).
 */
static void orch_fanout(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *x = &args->tensors[0];
    const struct simpler_tensor *y = &args->tensors[1];
    uint64_t rounds = args->scalars[ARG_TASKS], width = args->scalars[ARG_PARAM];
    struct simpler_task_args ta;
    struct simpler_tensor yw;
    stamp_begin();
    for (uint64_t r = 0; r < rounds; r++) {
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        simpler_task_args_init(&ta);
        simpler_task_args_add_inout(&ta, x);
        simpler_submit_aiv(rt, K_TOUCH, &ta, NULL);
        for (uint64_t w = 0; w < width; w++) {
            own_element(&yw, y, w, 0);
            simpler_task_args_init(&ta);
            simpler_task_args_add_output_existing(&ta, &yw);
            simpler_task_args_add_input(&ta, x);
            simpler_submit_aiv(rt, K_TOUCH, &ta, NULL);
        }
        simpler_task_args_init(&ta);
        simpler_task_args_add_inout(&ta, x);
        simpler_task_args_add_input(&ta, y);
        simpler_submit_aiv(rt, K_TOUCH, &ta, NULL);
        simpler_scope_end(rt);
    }
    stamp_end();
}

/*
 * 1-D stencil over B blocks (ELEM_STRIDE elements each) of buffers A0, A1:
 * step s, task b writes block b of A[(s+1)%2] (OUTPUT_EXISTING) and reads
 * blocks b-1, b, b+1 of A[s%2] (INPUT, clipped at the ends). ARG_TASKS
 * counts steps, ARG_PARAM is B; a scope holds whole steps, about
 * ARG_SCOPE tasks.
 */
static void orch_stencil(struct simpler_orch *rt, const struct simpler_orch_args *args)
{
    const struct simpler_tensor *a[2] = {&args->tensors[0], &args->tensors[1]};
    uint64_t steps = args->scalars[ARG_TASKS], blocks = args->scalars[ARG_PARAM];
    uint64_t steps_per_scope = args->scalars[ARG_SCOPE] / blocks;
    if (steps_per_scope == 0)
        steps_per_scope = 1;
    struct simpler_task_args ta;
    struct simpler_tensor out, in[3];
    stamp_begin();
    for (uint64_t s = 0; s < steps;) {
        simpler_scope_begin(rt, SIMPLER_SCOPE_AUTO);
        for (uint64_t k = 0; k < steps_per_scope && s < steps; k++, s++) {
            const struct simpler_tensor *src = a[s % 2], *dst = a[(s + 1) % 2];
            for (uint64_t b = 0; b < blocks; b++) {
                simpler_tensor_slice(&out, dst, 0, b * ELEM_STRIDE, (b + 1) * ELEM_STRIDE, 1);
                simpler_task_args_init(&ta);
                simpler_task_args_add_output_existing(&ta, &out);
                uint32_t nin = 0;
                for (uint64_t nb = b ? b - 1 : 0; nb <= b + 1 && nb < blocks; nb++) {
                    simpler_tensor_slice(&in[nin], src, 0, nb * ELEM_STRIDE,
                                         (nb + 1) * ELEM_STRIDE, 1);
                    simpler_task_args_add_input(&ta, &in[nin]);
                    nin++;
                }
                simpler_submit_aiv(rt, K_TOUCH, &ta, NULL);
            }
        }
        simpler_scope_end(rt);
    }
    stamp_end();
}

/* ==================================================================== harness */

struct topology {
    const char *name;
    const char *description;
    int device;
    uint32_t aic, aiv;
};

static const struct topology g_topologies[] = {
    {"3core", "2 AICPU threads (1 orchestrator + 1 scheduler), 1 AIC + 2 AIV", 0, 1, 2},
    {"1aiv", "2 AICPU threads (1 orchestrator + 1 scheduler), 1 AIV", 1, 0, 1},
};

/* Everything one device needs for runs: arena, kernel table, args, result. */
struct harness {
    const struct topology *topo;
    struct rt_config config;  /* this benchmark's */
    struct rt_config config_default;
    void *arena;
    size_t arena_bytes;
    simpler_kernel_fn *kernels_dev;
    struct simpler_orch_args *args_dev;
    struct rt_run_result *result_dev;
    struct rt_launcher *launcher;
    simdev_stream_t stream;
    uint32_t *buf_dev; /* buf_elems u32: every task's own element, ELEM_STRIDE apart */
    uint64_t buf_elems;
};

/* The config every run here uses unless it says otherwise: windows of
 * WINDOW, a small heap (nothing here allocates outputs), a dependency pool
 * and TensorMap that never fill, timeouts no benchmark reaches. */
static struct rt_config bench_config(void)
{
    struct rt_config c;
    rt_config_default(&c);
    for (int i = 0; i < RT_RINGS; i++) {
        c.task_window[i] = WINDOW;
        c.heap_bytes[i] = 1u << 16;
        c.dep_pool[i] = 1u << 16;
    }
    c.tensormap_buckets = 4096;
    c.tensormap_entries = 1u << 16;
    c.ring_timeout_ms = 60000;
    c.sched_timeout_ms = 60000;
    c.tensor_wait_timeout_ms = 60000;
    return c;
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    CHECK(simdev_malloc(&p, bytes));
    return p;
}

static void harness_open(struct harness *h, const struct topology *topo, uint64_t max_tasks)
{
    memset(h, 0, sizeof *h);
    h->topo = topo;
    struct simdev_config dc;
    CHECK(simdev_device_reset(topo->device));
    CHECK(simdev_config_default(&dc));
    dc.aicpu_threads = 2;
    dc.aic_cores = topo->aic;
    dc.aiv_cores = topo->aiv;
    dc.memory_bytes = 512ull << 20;
    dc.watchdog_ms = 0;
    if (g_spin_ns >= 0)
        dc.spin_ns = (uint32_t)g_spin_ns;
    CHECK(simdev_device_configure(topo->device, &dc));
    CHECK(simdev_set_device(topo->device));

    h->config = bench_config();
    rt_config_default(&h->config_default);
    size_t a, b;
    CHECK(rt_arena_bytes(&h->config, &dc, &a));
    CHECK(rt_arena_bytes(&h->config_default, &dc, &b));
    h->arena_bytes = a > b ? a : b;
    h->arena = dev_alloc(h->arena_bytes);
    h->kernels_dev = dev_alloc(KERNEL_COUNT * sizeof(simpler_kernel_fn));
    static const simpler_kernel_fn kernels[KERNEL_COUNT] = {kernel_touch};
    CHECK(simdev_memcpy(h->kernels_dev, kernels, sizeof kernels, SIMDEV_COPY_HOST_TO_DEVICE));
    h->args_dev = dev_alloc(sizeof(struct simpler_orch_args));
    h->result_dev = dev_alloc(sizeof(struct rt_run_result));
    h->buf_elems = max_tasks * ELEM_STRIDE;
    h->buf_dev = dev_alloc(h->buf_elems * sizeof(uint32_t));
    CHECK(rt_launcher_create(&h->launcher));
    CHECK(simdev_stream_create(&h->stream));
}

static void harness_close(struct harness *h)
{
    CHECK(simdev_stream_sync(h->stream));
    CHECK(simdev_stream_destroy(h->stream));
    CHECK(rt_launcher_destroy(h->launcher));
    CHECK(simdev_free(h->buf_dev));
    CHECK(simdev_free(h->result_dev));
    CHECK(simdev_free(h->args_dev));
    CHECK(simdev_free(h->kernels_dev));
    CHECK(simdev_free(h->arena));
    CHECK(simdev_device_reset(h->topo->device));
}

static struct simpler_tensor dev_tensor(void *dev, uint64_t count)
{
    struct simpler_tensor t;
    if (simpler_tensor_make_1d(&t, (uint64_t)(uintptr_t)dev, count, SIMPLER_DTYPE_U32,
                               SIMPLER_MEM_DEVICE) != 0) {
        fprintf(stderr, "bench_runtime: bad tensor\n");
        exit(1);
    }
    return t;
}

/* What one run measured. */
struct sample {
    double wall_ns;       /* enqueue to stream sync returned */
    double orch_ns;       /* the orchestration's own submit loop */
    double orch_cpu_ns;   /* the orchestrator thread's CPU time in that loop */
    double to_orch_ns;    /* enqueue to the orchestration's first timestamp */
    double tail_ns;       /* the orchestration's last timestamp to sync returned */
    double cpu_ns;        /* user + system time of every thread of the process */
    double ctx_switches;  /* voluntary + involuntary, every thread */
    struct rt_run_result result;
};

static double rusage_cpu_ns(const struct rusage *u)
{
    return (double)(u->ru_utime.tv_sec + u->ru_stime.tv_sec) * 1e9 +
           (double)(u->ru_utime.tv_usec + u->ru_stime.tv_usec) * 1e3;
}

/* Runs `entry` once with `args` and `config`; exits on any failure. */
static struct sample run_once(struct harness *h, simpler_orch_entry_fn entry,
                              const struct simpler_orch_args *args, const struct rt_config *config)
{
    CHECK(simdev_memcpy(h->args_dev, args, sizeof *args, SIMDEV_COPY_HOST_TO_DEVICE));
    struct rt_run_request rq = {
        .entry = entry,
        .kernels = h->kernels_dev,
        .kernel_count = KERNEL_COUNT,
        .args = h->args_dev,
        .arena = h->arena,
        .arena_bytes = h->arena_bytes,
        .result = h->result_dev,
        .config = *config,
    };
    atomic_store(&g_orch_begin_ns, 0);
    atomic_store(&g_orch_end_ns, 0);
    struct rusage u0, u1;
    getrusage(RUSAGE_SELF, &u0);
    uint64_t t0 = now_ns();
    CHECK(rt_run_enqueue(h->launcher, h->stream, &rq));
    int status = simdev_stream_sync(h->stream);
    uint64_t t1 = now_ns();
    getrusage(RUSAGE_SELF, &u1);

    struct sample s;
    CHECK(simdev_memcpy(&s.result, h->result_dev, sizeof s.result, SIMDEV_COPY_DEVICE_TO_HOST));
    if (status != 0 || s.result.status != 0) {
        fprintf(stderr, "bench_runtime: run failed: stream %d (%s), run status %d (%s), stall %u\n",
                status, simpler_strerror(status), s.result.status,
                simpler_strerror(s.result.status), s.result.stall_class);
        exit(1);
    }
    uint64_t ob = atomic_load_explicit(&g_orch_begin_ns, memory_order_acquire);
    uint64_t oe = atomic_load_explicit(&g_orch_end_ns, memory_order_acquire);
    s.wall_ns = (double)(t1 - t0);
    s.orch_ns = ob && oe ? (double)(oe - ob) : 0;
    s.orch_cpu_ns = ob && oe ? (double)(atomic_load(&g_orch_cpu_end_ns) -
                                        atomic_load(&g_orch_cpu_begin_ns))
                             : 0;
    s.to_orch_ns = ob ? (double)(ob - t0) : 0;
    s.tail_ns = oe ? (double)(t1 - oe) : 0;
    s.cpu_ns = rusage_cpu_ns(&u1) - rusage_cpu_ns(&u0);
    s.ctx_switches = (double)(u1.ru_nvcsw - u0.ru_nvcsw + u1.ru_nivcsw - u0.ru_nivcsw);
    return s;
}

/* ==================================================================== results */

struct row {
    const char *section;
    const char *topo;
    char name[80];
    uint64_t tasks;       /* tasks per run (calls or round trips for the host rows) */
    const char *unit;
    struct bench_stats s;       /* main figure: ns/task, ns/submit, ns/call or us/run */
    double excl_launch;   /* median (wall - launch) / tasks; < 0 = n/a */
    double ratio;         /* excl_launch (or s.median) / GOAL_NS; 0 = none */
    /* Where the time went (medians; 0 = not measured). */
    double orch_per_task; /* ns of the orchestration's submit loop per task */
    double orch_cpu_per_task; /* ns of the orchestrator thread's CPU in it, per task */
    double to_orch_us;    /* enqueue -> orchestration start */
    double tail_us;       /* orchestration end -> sync returned */
    double cpu_per_task;  /* ns of CPU (all threads) per task */
    double csw_per_task;  /* context switches per task */
    double others_pct;    /* host CPU used by other processes meanwhile, % of all
                             CPUs; < 0 = the case was too short to tell */
    uint64_t ring_waits;  /* of the last run */
    uint64_t edges;       /* of the last run */
};

static struct row g_rows[MAX_ROWS];
static size_t g_row_count;

static double median_of(const double *values, size_t n)
{
    return bench_stats_of(values, n).median;
}

static struct row *add_row(const char *section, const char *topo, const char *name,
                           uint64_t tasks, const char *unit, struct bench_stats s)
{
    if (g_row_count == MAX_ROWS) {
        fprintf(stderr, "bench_runtime: more than %d rows\n", MAX_ROWS);
        exit(1);
    }
    struct row *r = &g_rows[g_row_count++];
    memset(r, 0, sizeof *r);
    r->section = section;
    r->topo = topo;
    snprintf(r->name, sizeof r->name, "%.79s", name);
    r->tasks = tasks;
    r->unit = unit;
    r->s = s;
    r->excl_launch = -1;
    r->others_pct = -1;
    return r;
}

/* ================================================================ measurement */

/* One case: `entry` with `args`, `tasks` tasks per run; a warm-up run, then
 * reps() timed runs (fewer if the case passes CASE_BUDGET_NS). `launch_ns`
 * is the topology's 1-task run (0 = this is that run). `check` (optional)
 * verifies the first run's effects. */
struct bench_case {
    const char *section;
    char name[80];
    simpler_orch_entry_fn entry;
    struct simpler_orch_args args;
    uint64_t tasks;
    const struct rt_config *config;
    uint32_t reps; /* timed runs; 0 = reps() */
    void (*check)(struct harness *h, const struct bench_case *c);
    void (*reset)(struct harness *h, const struct bench_case *c);
};

static struct row *measure_case(struct harness *h, const struct bench_case *case_in,
                               double launch_ns)
{
    struct bench_case copy = *case_in;
    const struct bench_case *c = &copy;
    if (!copy.reps)
        copy.reps = reps();
    if (copy.reps > MAX_REPS)
        copy.reps = MAX_REPS;
    if (c->reset)
        c->reset(h, c);
    struct sample warm = run_once(h, c->entry, &c->args, c->config);
    if (warm.result.tasks_completed != c->tasks) {
        fprintf(stderr, "bench_runtime: %s: %llu tasks completed, expected %llu\n", c->name,
                (unsigned long long)warm.result.tasks_completed, (unsigned long long)c->tasks);
        exit(1);
    }
    if (c->check)
        c->check(h, c);

    double per_task[MAX_REPS], excl[MAX_REPS], orch[MAX_REPS], orch_cpu[MAX_REPS],
        to_orch[MAX_REPS], tail[MAX_REPS], cpu[MAX_REPS], csw[MAX_REPS];
    uint32_t n = 0;
    uint64_t start = now_ns();
    double busy0 = bench_host_busy_ns(), own_cpu = 0;
    struct sample s = warm;
    for (uint32_t rep = 0; rep < c->reps; rep++) {
        s = run_once(h, c->entry, &c->args, c->config);
        double tasks = (double)c->tasks;
        per_task[n] = s.wall_ns / tasks;
        excl[n] = (s.wall_ns - launch_ns) / tasks;
        orch[n] = s.orch_ns / tasks;
        orch_cpu[n] = s.orch_cpu_ns / tasks;
        to_orch[n] = s.to_orch_ns / 1e3;
        tail[n] = s.tail_ns / 1e3;
        cpu[n] = s.cpu_ns / tasks;
        csw[n] = s.ctx_switches / tasks;
        own_cpu += s.cpu_ns;
        n++;
        if (n >= 2 && now_ns() - start > CASE_BUDGET_NS)
            break;
    }
    /* Host-wide busy time over the reps less our runs' own CPU time (our
     * host-side copies between runs count as others': a small overstatement).
     * /proc/stat counts in jiffies: below 0.2 s the figure means nothing. */
    double elapsed = (double)(now_ns() - start);
    double others = bench_host_busy_ns() - busy0 - own_cpu;
    double cpus = (double)sysconf(_SC_NPROCESSORS_ONLN);
    struct row *r;
    if (launch_ns <= 0) {
        double us[MAX_REPS];
        for (uint32_t i = 0; i < n; i++)
            us[i] = per_task[i] * (double)c->tasks / 1e3;
        r = add_row(c->section, h->topo->name, c->name, c->tasks, "us/run", bench_stats_of(us, n));
    } else {
        r = add_row(c->section, h->topo->name, c->name, c->tasks, "ns/task",
                    bench_stats_of(per_task, n));
        r->excl_launch = median_of(excl, n);
        r->ratio = r->excl_launch / GOAL_NS;
    }
    r->orch_per_task = median_of(orch, n);
    r->orch_cpu_per_task = median_of(orch_cpu, n);
    r->to_orch_us = median_of(to_orch, n);
    r->tail_us = median_of(tail, n);
    r->cpu_per_task = median_of(cpu, n);
    r->csw_per_task = median_of(csw, n);
    r->others_pct = elapsed < 2e8 ? -1 : others > 0 ? 100.0 * others / (elapsed * cpus) : 0;
    r->ring_waits = s.result.ring_waits;
    r->edges = s.result.edges;
    return r;
}

/* One progress line per case, so a long run shows where it is. */
static void progress(const struct row *r)
{
    char others[32] = "";
    if (r->others_pct >= 0)
        snprintf(others, sizeof others, "  (others: %.0f%% CPU)", r->others_pct);
    printf("  %-6s %-8s %-44s %8llu  %9.1f %-9s%s\n", r->topo, r->section, r->name,
           (unsigned long long)r->tasks, r->s.median, r->unit, others);
    fflush(stdout);
}

/* ---- checks: every task ran exactly once (the kernel adds 1) ---------- */

static uint32_t *g_host_buf;

static void copy_back(struct harness *h, uint64_t elems)
{
    CHECK(simdev_memcpy(g_host_buf, h->buf_dev, elems * sizeof(uint32_t),
                        SIMDEV_COPY_DEVICE_TO_HOST));
}

static void zero_buffer(struct harness *h, const struct bench_case *c)
{
    (void)c;
    memset(g_host_buf, 0, h->buf_elems * sizeof(uint32_t));
    CHECK(simdev_memcpy(h->buf_dev, g_host_buf, h->buf_elems * sizeof(uint32_t),
                        SIMDEV_COPY_HOST_TO_DEVICE));
}

static void expect(const struct bench_case *c, const char *what, uint64_t at, uint32_t got,
                   uint32_t want)
{
    if (got != want) {
        fprintf(stderr, "bench_runtime: %s: %s[%llu] = %u, expected %u (a task ran %s)\n",
                c->name, what, (unsigned long long)at, got, want,
                got < want ? "not at all or raced" : "twice");
        exit(1);
    }
}

static void check_independent(struct harness *h, const struct bench_case *c)
{
    if (c->args.scalars[ARG_PARAM] & 6)
        return; /* dummy tasks run no kernel */
    copy_back(h, c->tasks * ELEM_STRIDE);
    for (uint64_t i = 0; i < c->tasks; i++)
        expect(c, "element", i, g_host_buf[i * ELEM_STRIDE], 1);
}

static void check_chain(struct harness *h, const struct bench_case *c)
{
    copy_back(h, 1);
    expect(c, "x", 0, g_host_buf[0], (uint32_t)c->tasks);
}

static void check_fanout(struct harness *h, const struct bench_case *c)
{
    uint64_t rounds = c->args.scalars[ARG_TASKS], width = c->args.scalars[ARG_PARAM];
    copy_back(h, (1 + width) * ELEM_STRIDE);
    expect(c, "x", 0, g_host_buf[0], (uint32_t)(2 * rounds));
    for (uint64_t w = 0; w < width; w++)
        expect(c, "y", w, g_host_buf[(1 + w) * ELEM_STRIDE], (uint32_t)rounds);
}

static void check_stencil(struct harness *h, const struct bench_case *c)
{
    uint64_t steps = c->args.scalars[ARG_TASKS], blocks = c->args.scalars[ARG_PARAM];
    copy_back(h, 2 * blocks * ELEM_STRIDE);
    for (uint64_t b = 0; b < 2 * blocks; b++) {
        /* A1 is written at even steps, A0 at odd ones */
        uint32_t want = (uint32_t)(b < blocks ? steps / 2 : (steps + 1) / 2);
        expect(c, "block", b, g_host_buf[b * ELEM_STRIDE], want);
    }
}

/* ---- the sections ------------------------------------------------------ */

static void set_args(struct bench_case *c, uint64_t tasks_arg, uint64_t scope, uint64_t param)
{
    c->args.scalar_count = ARG_SCALARS;
    c->args.scalars[ARG_TASKS] = tasks_arg;
    c->args.scalars[ARG_SCOPE] = scope;
    c->args.scalars[ARG_PARAM] = param;
}

/* The fixed cost of a run: one task, with three configs (the launch chain
 * alone, then what run initialisation adds as the rings and TensorMap grow).
 * Returns the bench config's median, which every other row subtracts. */
static double measure_launch(struct harness *h)
{
    struct rt_config small;
    rt_config_default(&small);
    for (int i = 0; i < RT_RINGS; i++) {
        small.task_window[i] = 64;
        small.heap_bytes[i] = 1u << 16;
        small.dep_pool[i] = 1024;
    }
    small.tensormap_buckets = 256;
    small.tensormap_entries = 1024;
    const struct {
        const struct rt_config *config;
        const char *name;
    } configs[] = {
        {&small, "1-task run, small config (window 64, TM 1K)"},
        {&h->config_default, "1-task run, rt_config_default (1024, 16K)"},
        {&h->config, "1-task run, bench config (window 4096, TM 64K)"},
    };
    double bench_us = 0;
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) {
        struct bench_case c = {.section = "launch", .entry = orch_independent, .tasks = 1,
                               .config = configs[k].config, .reps = g_quick ? 5 : 15,
                               .reset = zero_buffer};
        c.args.tensor_count = 1;
        c.args.tensors[0] = dev_tensor(h->buf_dev, h->buf_elems);
        set_args(&c, 1, SCOPE_TASKS, 1);
        snprintf(c.name, sizeof c.name, "%s", configs[k].name);
        struct row *r = measure_case(h, &c, 0);
        progress(r);
        bench_us = r->s.median;
    }
    return bench_us * 1e3;
}

static void measure_independent(struct harness *h, double launch_ns)
{
    const uint64_t sizes[] = {scaled(10000), scaled(100000)};
    for (int own = 1; own >= 0; own--) {
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            struct bench_case c = {.section = "indep", .entry = orch_independent,
                                   .tasks = sizes[k], .config = &h->config,
                                   .check = check_independent, .reset = zero_buffer};
            c.args.tensor_count = 1;
            c.args.tensors[0] = dev_tensor(h->buf_dev, h->buf_elems);
            set_args(&c, sizes[k], SCOPE_TASKS, (uint64_t)own);
            snprintf(c.name, sizeof c.name, "independent, INOUT own %s",
                     own ? "1-elem buffer" : "slice of 1 buffer");
            progress(measure_case(h, &c, launch_ns));
        }
    }
}

static void measure_chain(struct harness *h, double launch_ns)
{
    const uint64_t sizes[] = {scaled(10000), scaled(100000)};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        struct bench_case c = {.section = "chain", .entry = orch_chain, .tasks = sizes[k],
                               .config = &h->config, .check = check_chain,
                               .reset = zero_buffer};
        c.args.tensor_count = 1;
        c.args.tensors[0] = dev_tensor(h->buf_dev, 1);
        set_args(&c, sizes[k], SCOPE_TASKS, 0);
        snprintf(c.name, sizeof c.name, "chain through 1 tensor (INOUT)");
        progress(measure_case(h, &c, launch_ns));
    }
}

static void measure_fanout(struct harness *h, double launch_ns)
{
    const uint64_t widths[] = {4, 16, 64};
    for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
        uint64_t w = widths[k];
        uint64_t rounds = scaled(20000) / (w + 2);
        struct bench_case c = {.section = "fanout", .entry = orch_fanout,
                               .tasks = rounds * (w + 2), .config = &h->config,
                               .check = check_fanout, .reset = zero_buffer};
        c.args.tensor_count = 2;
        c.args.tensors[0] = dev_tensor(h->buf_dev, 1);
        c.args.tensors[1] = dev_tensor(h->buf_dev + ELEM_STRIDE, w * ELEM_STRIDE);
        set_args(&c, rounds, 0, w);
        snprintf(c.name, sizeof c.name, "1 -> %llu -> 1, one scope per round",
                 (unsigned long long)w);
        progress(measure_case(h, &c, launch_ns));
    }
}

static void measure_stencil(struct harness *h, double launch_ns)
{
    const uint64_t block_counts[] = {16, 64, 256};
    for (size_t k = 0; k < sizeof block_counts / sizeof block_counts[0]; k++) {
        uint64_t b = block_counts[k];
        uint64_t steps = scaled(20000) / b;
        struct bench_case c = {.section = "stencil", .entry = orch_stencil,
                               .tasks = steps * b, .config = &h->config,
                               .check = check_stencil, .reset = zero_buffer};
        c.args.tensor_count = 2;
        c.args.tensors[0] = dev_tensor(h->buf_dev, b * ELEM_STRIDE);
        c.args.tensors[1] = dev_tensor(h->buf_dev + b * ELEM_STRIDE, b * ELEM_STRIDE);
        set_args(&c, steps, SCOPE_TASKS, b);
        snprintf(c.name, sizeof c.name, "3-point, B = %llu blocks, %llu steps",
                 (unsigned long long)b, (unsigned long long)steps);
        progress(measure_case(h, &c, launch_ns));
    }
}

/* Submit cost alone: the orchestration's own timing of its submit loop. */
static void measure_submit(struct harness *h)
{
    static const struct {
        const char *name;
        uint64_t param;  /* orch_independent's */
        uint64_t tasks;  /* before --quick */
        int one_scope;   /* every task in one scope that fits the window */
    } cases[] = {
        {"dummy, no tensor", 2 | 4, 100000, 0},
        {"dummy, INOUT own 1-elem buffer", 2 | 1, 100000, 0},
        {"dummy, INOUT slice of 1 buffer", 2, 100000, 0},
        {"AIV, INOUT own 1-elem buffer, no ring wait", 1, WINDOW - 96, 1},
        {"AIV, INOUT slice of 1 buffer, no ring wait", 0, WINDOW - 96, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        uint64_t n = cases[k].one_scope ? cases[k].tasks : scaled(cases[k].tasks);
        struct bench_case c = {.section = "submit", .entry = orch_independent, .tasks = n,
                               .config = &h->config, .reset = zero_buffer};
        c.args.tensor_count = 1;
        c.args.tensors[0] = dev_tensor(h->buf_dev, h->buf_elems);
        set_args(&c, n, cases[k].one_scope ? n : SCOPE_TASKS, cases[k].param);
        snprintf(c.name, sizeof c.name, "%s", cases[k].name);
        /* Timed by the orchestration: its ns per submit is the figure. */
        struct row *r = measure_case(h, &c, 1);
        r->unit = "ns/submit";
        r->s.median = r->orch_per_task;
        r->s.min = r->s.max = r->orch_per_task;
        r->excl_launch = -1;
        r->ratio = r->orch_per_task / GOAL_NS;
        progress(r);
    }
}

/* The floor: the kernel called in a plain loop, args laid out as a dispatch. */
static void measure_serial(void)
{
    static uint32_t element;
    static struct simpler_tensor t;
    static struct simpler_kernel_context ctx;
    simpler_tensor_make_1d(&t, (uint64_t)(uintptr_t)&element, 1, SIMPLER_DTYPE_U32,
                           SIMPLER_MEM_DEVICE);
    int64_t args[SIMPLER_KERNEL_ARGS] = {0};
    args[0] = (int64_t)(uintptr_t)&t;
    args[SIMPLER_KERNEL_CONTEXT_ARG] = (int64_t)(uintptr_t)&ctx;
    simpler_kernel_fn volatile fn = kernel_touch; /* an indirect call, as a core makes */
    const uint64_t n = scaled(10000000);
    double per_call[MAX_REPS];
    for (uint32_t rep = 0; rep <= reps(); rep++) {
        uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < n; i++)
            fn(args);
        double ns = (double)(now_ns() - t0) / (double)n;
        if (rep > 0)
            per_call[rep - 1] = ns; /* rep 0 warms up */
    }
    if (element != (uint32_t)(n * (reps() + 1))) {
        fprintf(stderr, "bench_runtime: serial loop lost calls\n");
        exit(1);
    }
    struct row *r = add_row("serial", "host", "kernel called in a plain loop (indirect call)",
                            n, "ns/call", bench_stats_of(per_call, reps()));
    progress(r);
}

/*
 * Calibration: a cache-line round trip between two spinning pthreads (as
 * bench_device's floor). The host's speed at handoffs varies run to run
 * (other tenants of the machine): this row, taken at the start and at the
 * end, says how fast the host was while the rows between were measured.
 */
struct pingpong {
    _Alignas(64) _Atomic uint64_t ping;
    _Alignas(64) _Atomic uint64_t pong;
    _Alignas(64) uint64_t rounds;
};

static void spin_pause(uint32_t i)
{
    if ((i & 255) == 0)
        sched_yield(); /* two CPUs: the other party may need this one */
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *pong_main(void *arg)
{
    struct pingpong *p = arg;
    for (uint64_t k = 1; k <= p->rounds; k++) {
        /* acquire: pairs with the release store of ping in measure_floor */
        for (uint32_t i = 1; atomic_load_explicit(&p->ping, memory_order_acquire) != k; i++)
            spin_pause(i);
        /* release: pairs with the acquire spin on pong in measure_floor */
        atomic_store_explicit(&p->pong, k, memory_order_release);
    }
    return NULL;
}

/* ---- the TensorMap alone ------------------------------------------------- */

#define TM_BENCH_WINDOW 4096u /* as the rings of this benchmark's run config */
#define TM_BENCH_CELLS 64u    /* the stencil's width */

struct tm_bench {
    struct rt_tensormap map;
    struct simpler_tensor buffer;  /* cells of 8 u64 */
    uint32_t entry[TM_BENCH_WINDOW][4];
    uint32_t entries[TM_BENCH_WINDOW];
    uint64_t retired_below;       /* tasks before this one have retired */
    uint64_t hits;
};

static bool tm_bench_retired(void *ctx, uint64_t producer_id)
{
    return producer_id < ((const struct tm_bench *)ctx)->retired_below;
}

static int tm_bench_hit(void *ctx, uint64_t producer_id, void *producer, enum rt_access kind)
{
    (void)producer_id, (void)producer, (void)kind;
    ((struct tm_bench *)ctx)->hits++;
    return 0;
}

/* Task `id` (from 1) of the pattern: what the orchestrator does with the
 * map for one submit. Tasks more than a window old have retired, and the
 * slot's previous occupant's entries are forgotten, as in op_submit. */
static void tm_bench_task(struct tm_bench *b, uint64_t id, bool stencil)
{
    uint32_t slot = (uint32_t)(id % TM_BENCH_WINDOW);
    for (uint32_t i = 0; id > TM_BENCH_WINDOW && i < b->entries[slot]; i++)
        rt_tensormap_forget(&b->map, b->entry[slot][i], id - TM_BENCH_WINDOW);
    b->entries[slot] = 0;
    b->retired_below = id > TM_BENCH_WINDOW ? id - TM_BENCH_WINDOW : 0;
    uint64_t cell[4];
    enum rt_access kind[4];
    uint32_t n;
    if (!stencil) {
        cell[0] = id;
        kind[0] = RT_ACCESS_WRITE;
        n = 1;
    } else {
        uint64_t step = (id - 1) / TM_BENCH_CELLS, c = (id - 1) % TM_BENCH_CELLS;
        uint64_t src = (step % 2) * TM_BENCH_CELLS, dst = ((step + 1) % 2) * TM_BENCH_CELLS;
        cell[0] = src + (c ? c - 1 : c);
        cell[1] = src + c;
        cell[2] = src + (c + 1 < TM_BENCH_CELLS ? c + 1 : c);
        cell[3] = dst + c;
        kind[0] = kind[1] = kind[2] = RT_ACCESS_READ;
        kind[3] = RT_ACCESS_WRITE;
        n = 4;
    }
    struct simpler_tensor view[4];
    struct sp_view_extent extent[4];
    struct rt_tm_key key[4]; /* one per access, for its lookup and its insert (deps.c) */
    for (uint32_t i = 0; i < n; i++) {
        simpler_tensor_slice(&view[i], &b->buffer, 0, cell[i] * 8, cell[i] * 8 + 8, 1);
        sp_view_extent(&view[i], &extent[i]);
        rt_tensormap_key(&b->map, &view[i], &extent[i], &key[i]);
        rt_tensormap_lookup_key(&b->map, &view[i], &key[i], kind[i], tm_bench_retired, b,
                                tm_bench_hit, b);
    }
    for (uint32_t i = 0; i < n; i++)
        if (rt_tensormap_insert_key(&b->map, &view[i], &key[i], kind[i], id, NULL,
                                    &b->entry[slot][b->entries[slot]++]) != 0) {
            fprintf(stderr, "bench_runtime: the TensorMap is full\n");
            exit(1);
        }
}

static void measure_tensormap(void)
{
    const uint32_t buckets = 1u << 14, entries = 1u << 16; /* as the run config */
    const uint64_t tasks = scaled(1000000) / TM_BENCH_CELLS * TM_BENCH_CELLS; /* whole steps */
    static struct tm_bench b;
    size_t bytes = rt_tensormap_bytes(buckets, entries);
    void *mem = aligned_alloc(64, (bytes + 63) / 64 * 64);
    uint64_t cells = tasks + 1 > 2 * TM_BENCH_CELLS ? tasks + 1 : 2 * TM_BENCH_CELLS;
    uint64_t shape[1] = {cells * 8};
    uint64_t *data = calloc(cells, 64); /* never written: only its addresses are used */
    if (!mem || !data || rt_tensormap_init(&b.map, mem, buckets, entries) != 0 ||
        simpler_tensor_make(&b.buffer, (uint64_t)(uintptr_t)data, shape, 1, SIMPLER_DTYPE_U64,
                            SIMPLER_MEM_DEVICE) != 0) {
        fprintf(stderr, "bench_runtime: TensorMap setup failed\n");
        exit(1);
    }
    for (int stencil = 0; stencil < 2; stencil++) {
        double per_task[MAX_REPS];
        for (uint32_t rep = 0; rep <= reps(); rep++) {
            rt_tensormap_reset(&b.map);
            memset(b.entries, 0, sizeof b.entries);
            b.hits = 0;
            uint64_t t0 = now_ns();
            for (uint64_t id = 1; id <= tasks; id++)
                tm_bench_task(&b, id, stencil);
            if (rep > 0)
                per_task[rep - 1] = (double)(now_ns() - t0) / (double)tasks; /* rep 0 warms up */
        }
        /* A stencil task of step s >= 1 depends on the write of each cell
         * it reads (3 RAW hits) and on the three reads of its cell at step
         * s - 1 (WAR), and from step 2 on the cell's write at step s - 2
         * (WAW): 6 hits at step 1, 7 after; an independent task on nobody.
         * Another count is a wrong edge set (a lost or an extra edge). */
        uint64_t steps = tasks / TM_BENCH_CELLS;
        uint64_t want = !stencil || steps < 2
                            ? 0
                            : TM_BENCH_CELLS * 6 + (steps - 2) * TM_BENCH_CELLS * 7;
        if (b.hits != want) {
            fprintf(stderr, "bench_runtime: TensorMap %s: %llu hits, want %llu\n",
                    stencil ? "stencil" : "indep", (unsigned long long)b.hits,
                    (unsigned long long)want);
            exit(1);
        }
        progress(add_row("tensormap", "host",
                         stencil ? "TensorMap alone: 3 IN + 1 OUT cell (stencil)"
                                 : "TensorMap alone: 1 INOUT cell (indep)",
                         tasks, "ns/task", bench_stats_of(per_task, reps())));
    }
    free(data);
    free(mem);
}

static void measure_floor(const char *when)
{
    static struct pingpong p;
    const uint64_t rounds = scaled(20000);
    double per_rt[MAX_REPS];
    for (uint32_t rep = 0; rep <= reps(); rep++) {
        atomic_store(&p.ping, 0);
        atomic_store(&p.pong, 0);
        p.rounds = rounds;
        pthread_t t;
        if (pthread_create(&t, NULL, pong_main, &p) != 0) {
            fprintf(stderr, "bench_runtime: pthread_create failed\n");
            exit(1);
        }
        uint64_t t0 = now_ns();
        for (uint64_t k = 1; k <= rounds; k++) {
            atomic_store_explicit(&p.ping, k, memory_order_release);
            for (uint32_t i = 1; atomic_load_explicit(&p.pong, memory_order_acquire) != k; i++)
                spin_pause(i);
        }
        double ns = (double)(now_ns() - t0) / (double)rounds;
        pthread_join(t, NULL);
        if (rep > 0)
            per_rt[rep - 1] = ns; /* rep 0 warms up */
    }
    char name[80];
    snprintf(name, sizeof name, "cache-line round trip, 2 spinning threads (%s)", when);
    progress(add_row("floor", "host", name, rounds, "ns/rt", bench_stats_of(per_rt, reps())));
}

static void measure_topology(const struct topology *topo)
{
    struct harness h;
    uint64_t max_tasks = scaled(100000);
    if (max_tasks < 2 * 256 + 2)
        max_tasks = 2 * 256 + 2; /* the stencil's and fan-out's buffers */
    harness_open(&h, topo, max_tasks);
    printf("%s: %s\n", topo->name, topo->description);
    fflush(stdout);
    double launch_ns = measure_launch(&h);
    if (section_wanted("indep"))
        measure_independent(&h, launch_ns);
    if (section_wanted("chain"))
        measure_chain(&h, launch_ns);
    if (section_wanted("fanout"))
        measure_fanout(&h, launch_ns);
    if (section_wanted("stencil"))
        measure_stencil(&h, launch_ns);
    if (section_wanted("submit"))
        measure_submit(&h);
    harness_close(&h);
}

/* ===================================================================== output */

static void print_tables(void)
{
    printf("\nper-task cost (median of runs; ratio = excl. launch / %.0f ns goal)\n", GOAL_NS);
    printf("%-6s %-8s %-44s %8s %10s %10s %10s %9s  %-9s %7s\n", "topo", "section", "case",
           "tasks", "median", "min", "max", "excl.lnch", "unit", "ratio");
    const char *last = "";
    for (size_t i = 0; i < g_row_count; i++) {
        const struct row *r = &g_rows[i];
        if (i > 0 && strcmp(last, r->topo) != 0)
            printf("\n");
        last = r->topo;
        char excl[16] = "", ratio[16] = "";
        if (r->excl_launch >= 0)
            snprintf(excl, sizeof excl, "%.1f", r->excl_launch);
        if (r->ratio > 0)
            snprintf(ratio, sizeof ratio, "%.1fx", r->ratio);
        printf("%-6s %-8s %-44s %8llu %10.1f %10.1f %10.1f %9s  %-9s %7s\n", r->topo,
               r->section, r->name, (unsigned long long)r->tasks, r->s.median, r->s.min,
               r->s.max, excl, r->unit, ratio);
    }

    printf("\nwhere the time went (medians): orch = the orchestration's submit loop per task "
           "(wall, and the orchestrator thread's CPU time); start = enqueue -> orchestration "
           "start; tail = orchestration end -> sync returned; edges/t = producer-consumer edges "
           "wired per task (last run); "
           "cpu and ctx switches summed over every thread of this process; others = host CPU "
           "used by other processes during the case (%% of all CPUs; high = noisy row; - = case "
           "too short to tell)\n");
    printf("%-6s %-8s %-44s %10s %10s %10s %10s %10s %9s %10s %8s %7s\n", "topo", "section",
           "case", "orch ns/t", "orch cpu/t", "start us", "tail us", "cpu ns/t", "csw/task",
           "ring waits", "edges/t", "others");
    last = "";
    for (size_t i = 0; i < g_row_count; i++) {
        const struct row *r = &g_rows[i];
        if (strcmp(r->topo, "host") == 0)
            continue;
        if (i > 0 && strcmp(last, r->topo) != 0)
            printf("\n");
        last = r->topo;
        char others[16] = "-";
        if (r->others_pct >= 0)
            snprintf(others, sizeof others, "%.0f%%", r->others_pct);
        printf("%-6s %-8s %-44s %10.1f %10.1f %10.1f %10.1f %10.1f %9.3f %10llu %8.2f %7s\n",
               r->topo, r->section, r->name, r->orch_per_task, r->orch_cpu_per_task,
               r->to_orch_us, r->tail_us, r->cpu_per_task, r->csw_per_task,
               (unsigned long long)r->ring_waits, (double)r->edges / (double)r->tasks, others);
    }
}

static int write_json(const char *path, double seconds)
{
    FILE *f;
    if (bench_json_open("bench_runtime", path, "runtime", g_load_at_start, g_quick, seconds,
                        &f) != 0)
        return -1;
    fprintf(f, "  \"goal_ns_per_task\": %.0f,\n", GOAL_NS);
    if (g_spin_ns >= 0)
        fprintf(f, "  \"spin_ns\": %lld,\n", g_spin_ns);
    fprintf(f, "  \"topologies\": {");
    for (size_t i = 0; i < sizeof g_topologies / sizeof g_topologies[0]; i++) {
        fprintf(f, "%s", i ? ", " : "");
        bench_json_string(f, g_topologies[i].name);
        fprintf(f, ": ");
        bench_json_string(f, g_topologies[i].description);
    }
    fprintf(f, "},\n  \"rows\": [\n");
    for (size_t i = 0; i < g_row_count; i++) {
        const struct row *r = &g_rows[i];
        fprintf(f, "    {\"topology\": ");
        bench_json_string(f, r->topo);
        fprintf(f, ", \"section\": ");
        bench_json_string(f, r->section);
        fprintf(f, ", \"name\": ");
        bench_json_string(f, r->name);
        fprintf(f, ", \"tasks\": %llu, \"unit\": ", (unsigned long long)r->tasks);
        bench_json_string(f, r->unit);
        fprintf(f, ", \"median\": %.1f, \"min\": %.1f, \"max\": %.1f", r->s.median, r->s.min,
                r->s.max);
        if (r->excl_launch >= 0)
            fprintf(f, ", \"ns_per_task_excl_launch\": %.1f", r->excl_launch);
        if (r->ratio > 0)
            fprintf(f, ", \"ratio_to_goal\": %.2f", r->ratio);
        if (strcmp(r->topo, "host") != 0)
            fprintf(f,
                    ", \"orch_ns_per_task\": %.1f, \"orch_cpu_ns_per_task\": %.1f, "
                    "\"start_us\": %.1f, \"tail_us\": %.1f, "
                    "\"cpu_ns_per_task\": %.1f, \"ctx_switches_per_task\": %.4f, "
                    "\"ring_waits\": %llu, \"edges\": %llu",
                    r->orch_per_task, r->orch_cpu_per_task, r->to_orch_us, r->tail_us,
                    r->cpu_per_task, r->csw_per_task, (unsigned long long)r->ring_waits,
                    (unsigned long long)r->edges);
        if (r->others_pct >= 0)
            fprintf(f, ", \"others_cpu_pct\": %.1f", r->others_pct);
        fprintf(f, "}%s\n", i + 1 < g_row_count ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_runtime [--quick]\n"
            "                     [--section serial|tensormap|launch|indep|chain|fanout|stencil|submit]\n"
            "                     [--topology 3core|1aiv] [--spin-ns NS]\n"
            "                     [--root REPO_DIR | --out FILE.json]\n"
            "Without --out, writes REPO_DIR/bench/results/runtime-latest.json; REPO_DIR is\n"
            "found above the executable. --section/--topology/--spin-ns write JSON only\n"
            "with --out. --spin-ns sets the devices' spin budget before a thread parks\n"
            "(simdev's default: 50000).\n"
            "Every runtime section measures the launch rows first (it subtracts them).\n");
}

static int valid_section(const char *s)
{
    static const char *const names[] = {"serial", "tensormap", "launch", "indep", "chain",
                                        "fanout", "stencil", "submit"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i]) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *root_arg = NULL, *out_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            g_quick = 1;
        } else if (strcmp(argv[i], "--section") == 0 && i + 1 < argc) {
            g_section = argv[++i];
            if (!valid_section(g_section)) {
                usage();
                return 2;
            }
        } else if (strcmp(argv[i], "--topology") == 0 && i + 1 < argc) {
            g_topology = argv[++i];
            if (strcmp(g_topology, "3core") && strcmp(g_topology, "1aiv")) {
                usage();
                return 2;
            }
        } else if (strcmp(argv[i], "--spin-ns") == 0 && i + 1 < argc) {
            char *end;
            g_spin_ns = strtoll(argv[++i], &end, 10);
            if (*end || g_spin_ns < 0 || g_spin_ns > UINT32_MAX) {
                usage();
                return 2;
            }
        } else if (strcmp(argv[i], "--root") == 0 && i + 1 < argc) {
            root_arg = argv[++i];
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out_arg = argv[++i];
        } else {
            usage();
            return 2;
        }
    }

    char out_path[PATH_MAX];
    int variant = g_section || g_topology || g_spin_ns >= 0;
    if (bench_out_path("bench_runtime", out_arg, root_arg, !variant, "runtime-latest.json",
                       out_path, sizeof out_path) != 0)
        return 2;

    uint64_t start = now_ns();
    g_load_at_start = bench_load_average();
    printf("bench_runtime: %ld host CPUs, load average %.2f at start%s; %u runs per figure",
           sysconf(_SC_NPROCESSORS_ONLN), g_load_at_start, g_quick ? ", --quick" : "", reps());
    if (g_spin_ns >= 0)
        printf("; device spin_ns %lld", g_spin_ns);
    printf("\n");
    if (g_load_at_start > 1.0)
        printf("bench_runtime: the host was busy in the last minute; numbers may be noisy\n");
    fflush(stdout);

    g_host_buf = calloc(scaled(100000) * ELEM_STRIDE + 2 * 256 * ELEM_STRIDE, sizeof(uint32_t));
    if (!g_host_buf) {
        fprintf(stderr, "bench_runtime: out of memory\n");
        return 1;
    }
    measure_floor("start");
    if (section_wanted("serial"))
        measure_serial();
    if (section_wanted("tensormap"))
        measure_tensormap();
    int runtime_sections =
        !g_section || (strcmp(g_section, "serial") != 0 && strcmp(g_section, "tensormap") != 0);
    for (size_t i = 0; runtime_sections && i < sizeof g_topologies / sizeof g_topologies[0];
         i++)
        if (!g_topology || strcmp(g_topology, g_topologies[i].name) == 0)
            measure_topology(&g_topologies[i]);
    free(g_host_buf);
    measure_floor("end");

    double seconds = (double)(now_ns() - start) / 1e9;
    print_tables();
    if (!out_path[0]) {
        printf("(%.1f s; partial run, no JSON written)\n", seconds);
        return 0;
    }
    if (write_json(out_path, seconds) != 0)
        return 1;
    printf("wrote %s (%.1f s)\n", out_path, seconds);
    return 0;
}
