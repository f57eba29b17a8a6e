/*
 * bench_compare.c — simpler side by side with OpenMP tasks (libgomp,
 * libomp), StarPU and a serial loop, on the workloads of
 * bench/compare/compare.h, in one run.
 *
 * Owns: the case list, interleaving (every repetition runs every case on
 * every system, the system order rotating per repetition, so a slow phase
 * of the machine hits all systems alike), the busy-work calibration, the
 * physical floor (cache-line transfer between two spinning threads, futex
 * wake-up, and where those threads ran), the table, the targets of
 * docs/performance.md, and the JSON (bench/results/latest.json).
 *
 * simpler runs twice, as two systems of the same worker: "simpler" under
 * its default runtime (TMR: SIMPLER_RUNTIME=tmr in the worker's
 * environment) and "simpler-hbg" under host_build_graph
 * (SIMPLER_RUNTIME=hbg, issue 28), and the driver prints HBG's device wall
 * and host build cost against TMR's per case.
 *
 * Each sample is one process of a worker (bench_cmp_<system>, next to this
 * executable): it prints one "result value=..." line (compare.h). A worker
 * that is not built is skipped with a line saying so; a sample that fails
 * is reported and left out.
 *
 *   bench_compare [--quick] [--reps N] [--only SUBSTRING] [--out FILE]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "compare/compare.h"

#define PROGRAM "bench_compare"
#define MAX_SYSTEMS 6
#define MAX_CASES 32
#define MAX_REPS BENCH_MAX_SAMPLES
#define SAMPLE_TIMEOUT_S 600

/* ------------------------------------------------------------- systems */

struct system {
    const char *name;   /* column name */
    const char *worker; /* executable next to this one */
    const char *what;
    int available;
    const char *env;    /* NAME=value set in the worker's environment, or NULL */
};

static struct system g_systems[MAX_SYSTEMS] = {
    {"simpler", "bench_cmp_simpler", "simpler program mode, 1 orchestrator + 1 scheduler + P AIV cores", 0,
     "SIMPLER_RUNTIME=tmr"},
    {"libgomp", "bench_cmp_gomp", "GCC OpenMP tasks with depend, P threads", 0, NULL},
    {"libomp", "bench_cmp_omp", "LLVM OpenMP tasks with depend, P threads", 0, NULL},
    {"starpu", "bench_cmp_starpu", "StarPU 1.3, P CPU workers, data handles", 0, NULL},
    {"serial", "bench_cmp_serial", "the task bodies in a plain loop, 1 thread", 0, NULL},
    {"simpler-hbg", "bench_cmp_simpler",
     "simpler program mode under host_build_graph: the host builds the graph at launch, "
     "2 schedulers + P AIV cores",
     0, "SIMPLER_RUNTIME=hbg"},
};
/* SYS_HBG is last so that the earlier systems keep their indices (and the
 * JSON its order); the table shows it under simpler (k_display). */
enum { SYS_SIMPLER, SYS_GOMP, SYS_OMP, SYS_STARPU, SYS_SERIAL, SYS_HBG };
static const int k_display[MAX_SYSTEMS] = {SYS_SIMPLER, SYS_HBG,    SYS_GOMP,
                                           SYS_OMP,     SYS_STARPU, SYS_SERIAL};

#define ALL_SYSTEMS 0x3f
#define SIMPLER_ONLY 0x21 /* simpler under both runtimes */

/* --------------------------------------------------------------- cases */

/* The per-sample figures of simpler's worker beside its value, by the
 * key it prints them under (peer_simpler.c). */
enum detail {
    D_DEVICE,      /* device_ns_per_task: launch returned -> wait returned */
    D_LAUNCH_CPU,  /* launch_cpu_ns_per_task: the launching thread's CPU in the launch */
    D_WARM_DEVICE, /* warm_*: HBG's second run of the instance, on a warm scratch */
    D_WARM_LAUNCH_CPU,
    D_ORCH,        /* orch_ns_per_task: first to last submit of the orchestration */
    D_COUNT
};
static const char *const k_detail_keys[D_COUNT] = {
    "device_ns_per_task=", "launch_cpu_ns_per_task=", "warm_device_ns_per_task=",
    "warm_launch_cpu_ns_per_task=", "orch_ns_per_task=",
};

struct sample_set {
    double values[MAX_REPS];
    uint32_t count;
    uint32_t failed;
    char extra[512]; /* the last sample's key=value tail */
    double detail[D_COUNT][MAX_REPS];
    uint32_t detail_count[D_COUNT];
};

struct cmp_case {
    char id[48];        /* e.g. "W1 indep n=100000" */
    char args[160];     /* worker arguments after the workload */
    char workload[16];
    int workload_no;    /* 1..8 of the issue */
    uint32_t systems;   /* bit per system */
    double task_us;     /* sweep: busy work per task, us; 0 otherwise */
    const char *unit;
    int higher_is_better;
    struct sample_set s[MAX_SYSTEMS];
};

static struct cmp_case g_cases[MAX_CASES];
static uint32_t g_case_count;
static uint32_t g_cpus;
static double g_iters_per_us;
static int g_quick;

static void add_case(int no, const char *workload, const char *args, uint32_t systems,
                     double task_us)
{
    if (g_case_count == MAX_CASES) {
        fprintf(stderr, PROGRAM ": more than %d cases\n", MAX_CASES);
        exit(1);
    }
    struct cmp_case *c = &g_cases[g_case_count++];
    memset(c, 0, sizeof *c);
    c->workload_no = no;
    snprintf(c->workload, sizeof c->workload, "%s", workload);
    snprintf(c->args, sizeof c->args, "%s", args);
    if (task_us > 0)
        snprintf(c->id, sizeof c->id, "W%d %s %gus", no, workload, task_us);
    else
        snprintf(c->id, sizeof c->id, "W%d %s %.36s", no, workload, args);
    c->systems = systems;
    c->task_us = task_us;
    int gflops = !strcmp(workload, "chol") || !strcmp(workload, "gemm");
    c->unit = gflops ? "GFLOP/s" : !strcmp(workload, "pipeline") ? "us/run" : "ns/task";
    c->higher_is_better = gflops;
}

static const double k_sweep_us[] = {1, 2, 4, 16, 64, 256};
#define SWEEP_COUNT (sizeof k_sweep_us / sizeof k_sweep_us[0])

static void build_cases(void)
{
    int q = g_quick;
    /* simpler-hbg runs wherever simpler does but on pressure window=16:
     * HBG never reclaims during a run, so a 16-slot window can only fail
     * (TASK_WINDOW_DEADLOCK); the worker sizes HBG's rings for the whole
     * graph, which makes the window=4096 case the same run. */
    add_case(1, "indep", q ? "n=20000" : "n=100000", ALL_SYSTEMS, 0);
    /* StarPU is left out at 10^6: registering a million handles takes it
     * ~20 s and 4 GB before the first task (docs/performance.md); so is
     * simpler-hbg, whose arena would hold all 2^20 task slots at once
     * (about 11 KiB of device memory each, 11 GiB). */
    if (!q)
        add_case(1, "indep", "n=1000000",
                 ALL_SYSTEMS & ~(1u << SYS_STARPU) & ~(1u << SYS_HBG), 0);
    add_case(2, "chain", q ? "n=20000" : "n=100000", ALL_SYSTEMS, 0);
    add_case(3, "fan", q ? "rounds=2000 k=8" : "rounds=20000 k=8", ALL_SYSTEMS, 0);
    add_case(4, "stencil", q ? "width=64 steps=200" : "width=64 steps=1000", ALL_SYSTEMS, 0);
    /* The sweep: about 0.25 s of busy work per instance (0.05 s quick). */
    for (size_t i = 0; i < SWEEP_COUNT; i++) {
        double us = k_sweep_us[i];
        uint64_t tasks = (uint64_t)((q ? 50000.0 : 250000.0) / us);
        uint64_t steps = tasks / 64 ? tasks / 64 : 1;
        char args[160];
        snprintf(args, sizeof args, "width=64 steps=%llu work=%llu", (unsigned long long)steps,
                 (unsigned long long)llround(us * g_iters_per_us));
        add_case(4, "stencil", args, ALL_SYSTEMS, us);
    }
    add_case(5, "pressure", q ? "n=10000 window=4096" : "n=50000 window=4096", SIMPLER_ONLY, 0);
    add_case(5, "pressure", q ? "n=10000 window=16" : "n=50000 window=16",
             SIMPLER_ONLY & ~(1u << SYS_HBG), 0);
    add_case(6, "chol", q ? "n=512 tile=128" : "n=2048 tile=128", ALL_SYSTEMS, 0);
    add_case(6, "chol", q ? "n=512 tile=64" : "n=2048 tile=64", ALL_SYSTEMS, 0);
    add_case(6, "gemm", q ? "n=512 tile=128" : "n=1024 tile=128", ALL_SYSTEMS, 0);
    add_case(7, "pipeline", q ? "n=300 depth=4" : "n=2000 depth=4", SIMPLER_ONLY, 0);
}

/* ------------------------------------------------------------ workers */

static char g_exe_dir[PATH_MAX];

static void find_exe_dir(void)
{
    ssize_t n = readlink("/proc/self/exe", g_exe_dir, sizeof g_exe_dir - 1);
    if (n <= 0) {
        fprintf(stderr, PROGRAM ": cannot read /proc/self/exe\n");
        exit(1);
    }
    g_exe_dir[n] = '\0';
    char *slash = strrchr(g_exe_dir, '/');
    if (slash)
        *slash = '\0';
}

static void worker_path(const struct system *s, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", g_exe_dir, s->worker); /* built beside this one */
}

/* Runs `argv` with stdout captured into out[size], with `env` (NAME=value,
 * or NULL) added to its environment, and its stderr into the open file
 * `err_fd` (-1: this process's stderr); returns the exit status (or -1
 * when it could not run, was killed or timed out). */
static int run_capture_err(char *const argv[], char *env, char *out, size_t size, int err_fd)
{
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(pipefd[1], STDOUT_FILENO);
        if (err_fd >= 0)
            dup2(err_fd, STDERR_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        alarm(SAMPLE_TIMEOUT_S); /* survives exec: a hung worker dies */
        if (env)
            putenv(env);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pipefd[1]);
    size_t used = 0;
    for (;;) {
        ssize_t n = read(pipefd[0], out + used, size - 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
        if (used == size - 1)
            break;
    }
    out[used] = '\0';
    close(pipefd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (!WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static int run_capture(char *const argv[], char *env, char *out, size_t size)
{
    return run_capture_err(argv, env, out, size, -1);
}

static void detect_systems(void)
{
    for (int i = 0; i < MAX_SYSTEMS; i++) {
        struct system *s = &g_systems[i];
        char path[PATH_MAX + 64], out[1024];
        worker_path(s, path, sizeof path);
        char *argv[] = {path, "--list", NULL};
        s->available = access(path, X_OK) == 0 &&
                       run_capture(argv, (char *)s->env, out, sizeof out) == 0;
        if (!s->available)
            printf("skipped: %s (%s): not built here — install its Debian package "
                   "(tools/install-bench-deps.sh) and rebuild\n",
                   s->name, s->worker);
    }
}

/* One sample: runs the worker, parses value= and keeps the tail. */
static void run_sample(struct cmp_case *c, int sys, int check)
{
    struct system *s = &g_systems[sys];
    char path[PATH_MAX + 64], out[4096], argbuf[256];
    worker_path(s, path, sizeof path);
    char *argv[24];
    int argc = 0;
    argv[argc++] = path;
    argv[argc++] = c->workload;
    snprintf(argbuf, sizeof argbuf, "%s", c->args);
    for (char *tok = strtok(argbuf, " "); tok && argc < 20; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc++] = check ? "check=1" : "check=0";
    argv[argc] = NULL;
    int rc = run_capture(argv, (char *)s->env, out, sizeof out);
    char *line = strstr(out, "result value=");
    double value;
    if (rc != 0 || !line || sscanf(line, "result value=%lf", &value) != 1) {
        c->s[sys].failed++;
        fprintf(stderr, PROGRAM ": %s on %s failed (exit %d)\n", c->id, s->name, rc);
        return;
    }
    struct sample_set *set = &c->s[sys];
    if (set->count < MAX_REPS)
        set->values[set->count++] = value;
    for (int d = 0; d < D_COUNT; d++) {
        const char *at = line;
        double v;
        while ((at = strstr(at, k_detail_keys[d])) && at[-1] != ' ')
            at++; /* a longer key ending in this one */
        if (at && sscanf(at + strlen(k_detail_keys[d]), "%lf", &v) == 1 &&
            set->detail_count[d] < MAX_REPS)
            set->detail[d][set->detail_count[d]++] = v;
    }
    char *tail = strstr(line, " tasks=");
    if (tail) {
        char *nl = strchr(tail, '\n');
        if (nl)
            *nl = '\0';
        snprintf(set->extra, sizeof set->extra, "%s", tail + 1);
    }
}

/* ------------------------------------------------------------- floor */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Busy-work iterations per microsecond: the fastest of several timed
 * chunks (the machine's undisturbed speed). */
static double calibrate(void)
{
    const uint64_t iters = 2000000;
    double best = 0;
    for (int i = 0; i < 7; i++) {
        uint64_t t0 = now_ns();
        uint64_t r = cmp_busy(iters, (uint64_t)i);
        uint64_t t1 = now_ns();
        __asm__ __volatile__("" : : "r"(r));
        double per_us = (double)iters / ((double)(t1 - t0) / 1000.0);
        if (per_us > best)
            best = per_us;
    }
    return best;
}

#define PINGS 20000

struct ping {
    _Alignas(64) _Atomic uint64_t to_b;
    _Alignas(64) _Atomic uint64_t to_a;
    int cpu; /* pin B here, or -1 */
    int seen_cpu_a, seen_cpu_b;
    _Alignas(64) _Atomic uint32_t futex_word;
    _Atomic uint64_t wake_stamp;
    _Atomic uint32_t b_waiting;
    double wake_ns[64];
};

static void pin(int cpu)
{
    if (cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *pong(void *arg)
{
    struct ping *p = arg;
    pin(p->cpu);
    p->seen_cpu_b = sched_getcpu();
    for (uint64_t i = 1; i <= PINGS; i++) {
        while (atomic_load_explicit(&p->to_b, memory_order_acquire) != i)
            __builtin_ia32_pause();
        atomic_store_explicit(&p->to_a, i, memory_order_release);
    }
    return NULL;
}

/* Round trip between two spinning threads (A pinned to CPU 0 and B to
 * `cpu_b`, or both unpinned when cpu_b < 0): one-way ns = half of it. */
static double cacheline_one_way(int cpu_b, int *cpu_a_out, int *cpu_b_out)
{
    struct ping *p = aligned_alloc(64, sizeof *p);
    memset(p, 0, sizeof *p);
    p->cpu = cpu_b;
    pthread_t t;
    cpu_set_t old;
    pthread_getaffinity_np(pthread_self(), sizeof old, &old);
    pin(cpu_b < 0 ? -1 : 0);
    pthread_create(&t, NULL, pong, p);
    p->seen_cpu_a = sched_getcpu();
    uint64_t t0 = now_ns();
    for (uint64_t i = 1; i <= PINGS; i++) {
        atomic_store_explicit(&p->to_b, i, memory_order_release);
        while (atomic_load_explicit(&p->to_a, memory_order_acquire) != i)
            __builtin_ia32_pause();
    }
    uint64_t t1 = now_ns();
    pthread_join(t, NULL);
    pthread_setaffinity_np(pthread_self(), sizeof old, &old);
    *cpu_a_out = p->seen_cpu_a;
    *cpu_b_out = p->seen_cpu_b;
    free(p);
    return (double)(t1 - t0) / PINGS / 2.0;
}

#define WAKES BENCH_MAX_SAMPLES

static void *wakee(void *arg)
{
    struct ping *p = arg;
    pin(p->cpu);
    for (uint32_t i = 0; i < WAKES; i++) {
        uint32_t want = i + 1;
        atomic_store_explicit(&p->b_waiting, want, memory_order_release);
        while (atomic_load_explicit(&p->futex_word, memory_order_acquire) != want)
            syscall(SYS_futex, &p->futex_word, FUTEX_WAIT_PRIVATE, want - 1, NULL, NULL, 0);
        p->wake_ns[i] = (double)(now_ns() - atomic_load(&p->wake_stamp));
        atomic_store_explicit(&p->to_a, want, memory_order_release); /* recorded */
    }
    return NULL;
}

/* Median latency from FUTEX_WAKE to the sleeper running (A on CPU 0, B on
 * CPU 1). Each round waits until B has said it is about to sleep, then
 * spins 50 us so that B is inside FUTEX_WAIT before the wake. */
static double futex_wake_ns(void)
{
    struct ping *p = aligned_alloc(64, sizeof *p);
    memset(p, 0, sizeof *p);
    p->cpu = g_cpus > 1 ? 1 : 0;
    cpu_set_t old;
    pthread_getaffinity_np(pthread_self(), sizeof old, &old);
    pin(0);
    pthread_t t;
    pthread_create(&t, NULL, wakee, p);
    for (uint32_t i = 0; i < WAKES; i++) {
        uint32_t want = i + 1;
        while (atomic_load_explicit(&p->b_waiting, memory_order_acquire) != want)
            sched_yield();
        uint64_t until = now_ns() + 50000;
        while (now_ns() < until)
            __builtin_ia32_pause();
        atomic_store(&p->wake_stamp, now_ns());
        atomic_store_explicit(&p->futex_word, want, memory_order_release);
        syscall(SYS_futex, &p->futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        while (atomic_load_explicit(&p->to_a, memory_order_acquire) != want)
            sched_yield();
    }
    pthread_join(t, NULL);
    pthread_setaffinity_np(pthread_self(), sizeof old, &old);
    struct bench_stats s = bench_stats_of(p->wake_ns, WAKES);
    free(p);
    return s.median;
}

struct floor_set {
    double pinned[MAX_REPS], unpinned[MAX_REPS], wake[MAX_REPS];
    char placements[MAX_REPS][32];
    uint32_t count;
};
static struct floor_set g_floor;

static void measure_floor(void)
{
    if (g_floor.count == MAX_REPS)
        return;
    uint32_t i = g_floor.count++;
    int a, b, ua, ub;
    g_floor.pinned[i] = cacheline_one_way(g_cpus > 1 ? 1 : 0, &a, &b);
    g_floor.unpinned[i] = cacheline_one_way(-1, &ua, &ub);
    g_floor.wake[i] = futex_wake_ns();
    snprintf(g_floor.placements[i], sizeof g_floor.placements[i], "%d/%d,%d/%d", a, b, ua, ub);
}

/* ---------------------------------------------------------- reporting */

static int has(const struct cmp_case *c, int sys)
{
    return g_systems[sys].available && (c->systems >> sys & 1) && c->s[sys].count > 0;
}

static struct bench_stats stats(const struct cmp_case *c, int sys)
{
    return bench_stats_of(c->s[sys].values, c->s[sys].count);
}

/* peer / simpler of the medians; 0 when either is missing. */
static double ratio(const struct cmp_case *c, int sys)
{
    if (!has(c, sys) || !has(c, SYS_SIMPLER))
        return 0;
    return stats(c, sys).median / stats(c, SYS_SIMPLER).median;
}

/* Efficiency of a sweep case on P CPUs: the busy work per task over P x
 * the wall time per task. The work per task is the serial loop's measured
 * time per task in the same run when it ran (its bodies are the same code,
 * and a calibration taken once can be off by a quarter on a shared VM);
 * else the calibrated length. The serial loop itself is 1 by definition
 * then. */
static double efficiency(const struct cmp_case *c, int sys)
{
    if (!has(c, sys) || c->task_us <= 0)
        return 0;
    double ns_per_task = stats(c, sys).median;
    double work_ns = has(c, SYS_SERIAL) ? stats(c, SYS_SERIAL).median : c->task_us * 1000.0;
    double p = sys == SYS_SERIAL ? 1.0 : (double)g_cpus;
    return work_ns / (p * ns_per_task);
}

/* The smallest swept task size with efficiency >= 0.5, interpolated on a
 * log scale between the last point below and the first at or above; 0 when
 * never reached, the smallest size when always. */
static double half_efficiency_us(int sys)
{
    double prev_us = 0, prev_e = 0;
    for (uint32_t i = 0; i < g_case_count; i++) {
        const struct cmp_case *c = &g_cases[i];
        if (c->task_us <= 0 || !has(c, sys))
            continue;
        double e = efficiency(c, sys);
        if (e >= 0.5) {
            if (prev_us == 0)
                return c->task_us;
            double f = (0.5 - prev_e) / (e - prev_e);
            return exp(log(prev_us) + f * (log(c->task_us) - log(prev_us)));
        }
        prev_us = c->task_us;
        prev_e = e;
    }
    return 0;
}

static void print_table(void)
{
    printf("\n%-34s %-8s %-11s %10s %10s %10s %12s\n", "case", "unit", "system", "median", "min",
           "max", "peer/simpler");
    for (uint32_t i = 0; i < g_case_count; i++) {
        const struct cmp_case *c = &g_cases[i];
        int first = 1;
        for (int k = 0; k < MAX_SYSTEMS; k++) {
            int sys = k_display[k];
            if (!g_systems[sys].available || !(c->systems >> sys & 1))
                continue;
            printf("%-34s %-8s %-11s ", first ? c->id : "", first ? c->unit : "",
                   g_systems[sys].name);
            first = 0;
            if (!c->s[sys].count) {
                printf("%10s\n", "failed");
                continue;
            }
            struct bench_stats s = stats(c, sys);
            printf("%10.1f %10.1f %10.1f", s.median, s.min, s.max);
            double r = ratio(c, sys);
            if (sys != SYS_SIMPLER && r > 0)
                printf(" %11.2fx", r);
            if (c->task_us > 0)
                printf("   eff %.0f%%", 100 * efficiency(c, sys));
            printf("\n");
        }
    }
    printf("ratio = peer median / simpler median: for ns/task above 1 means simpler is faster; "
           "for GFLOP/s below 1 means simpler is faster. eff = busy work / (P x wall), P = %u "
           "(serial: 1); busy work = the serial loop's time per task. simpler-hbg is simpler "
           "under host_build_graph: its wall includes the host build (launch to wait).\n",
           g_cpus);
    printf("\n50%% efficiency reached at a task size of (us, interpolated; 0 = never):");
    for (int k = 0; k < MAX_SYSTEMS; k++)
        if (g_systems[k_display[k]].available && k_display[k] != SYS_SERIAL)
            printf(" %s %.2f", g_systems[k_display[k]].name, half_efficiency_us(k_display[k]));
    printf("\n");
    if (g_floor.count) {
        struct bench_stats p = bench_stats_of(g_floor.pinned, g_floor.count);
        struct bench_stats u = bench_stats_of(g_floor.unpinned, g_floor.count);
        struct bench_stats w = bench_stats_of(g_floor.wake, g_floor.count);
        printf("physical floor: cache line one way, pinned CPU 0/1: %.0f ns (min %.0f, max %.0f); "
               "unpinned: %.0f ns (min %.0f, max %.0f); futex wake to running: %.0f ns "
               "(min %.0f, max %.0f)\nplacements per repetition (pinned A/B, unpinned A/B):",
               p.median, p.min, p.max, u.median, u.min, u.max, w.median, w.min, w.max);
        for (uint32_t i = 0; i < g_floor.count; i++)
            printf(" %s", g_floor.placements[i]);
        printf("\n");
    }
}

/* ------------------------------------------------------------ targets */

struct target {
    char what[160];
    double value, goal;
    int met;   /* 1 met, 0 missed, -1 not measured */
    int issue; /* the issue that set it: 16 (simpler against its peers) or 28 (HBG) */
};
#define MAX_TARGETS 64
static struct target g_targets[MAX_TARGETS];
static uint32_t g_target_count;
static int g_target_issue = 16; /* the issue add_target files its targets under */

static void add_target(const char *what, double value, double goal, int met)
{
    if (g_target_count == MAX_TARGETS)
        return;
    struct target *t = &g_targets[g_target_count++];
    t->issue = g_target_issue;
    snprintf(t->what, sizeof t->what, "%s", what);
    t->value = value;
    t->goal = goal;
    t->met = value > 0 ? met : -1;
}

static const struct cmp_case *find_case(int no, const char *workload, int sweep)
{
    for (uint32_t i = 0; i < g_case_count; i++)
        if (g_cases[i].workload_no == no && !strcmp(g_cases[i].workload, workload) &&
            (g_cases[i].task_us > 0) == sweep)
            return &g_cases[i];
    return NULL;
}

/* Prints the targets of `issue` with how many are met. */
static void print_targets(int issue)
{
    uint32_t met = 0, measured = 0;
    for (uint32_t i = 0; i < g_target_count; i++) {
        if (g_targets[i].issue != issue)
            continue;
        measured += g_targets[i].met >= 0;
        met += g_targets[i].met > 0;
    }
    printf("\ntargets (issue %d, docs/performance.md): %u of %u met\n", issue, met, measured);
    for (uint32_t i = 0; i < g_target_count; i++) {
        const struct target *t = &g_targets[i];
        if (t->issue == issue)
            printf("  %-70s %8.2f  %s\n", t->what, t->value,
                   t->met < 0 ? "not measured" : t->met ? "met" : "MISSED");
    }
}

/* min over the OpenMP runtimes of their ns/task (0 when neither ran). */
static double best_omp_cost(const struct cmp_case *c)
{
    double best = 0;
    for (int sys = SYS_GOMP; sys <= SYS_OMP; sys++)
        if (has(c, sys) && (best == 0 || stats(c, sys).median < best))
            best = stats(c, sys).median;
    return best;
}

/* The best peer's GFLOP/s (OpenMP or StarPU; 0 when none ran). */
static double best_peer_rate(const struct cmp_case *c)
{
    double best = 0;
    for (int sys = SYS_GOMP; sys <= SYS_STARPU; sys++)
        if (has(c, sys) && stats(c, sys).median > best)
            best = stats(c, sys).median;
    return best;
}

static double simpler_median(const struct cmp_case *c)
{
    return has(c, SYS_SIMPLER) ? stats(c, SYS_SIMPLER).median : 0;
}

/*
 * The targets of issue 16 (docs/performance.md), each printed with the
 * measured value and whether it is met:
 *   coarse: the stencil sweep's 64 and 256 us tasks at >= 95% efficiency;
 *           every W6 case at or above the best peer's GFLOP/s;
 *   fine:   the chain below every peer and within 2x the cross-core round
 *           trip of the same run; fan and stencil at <= 0.7x the best
 *           OpenMP runtime's ns/task; independent tasks at or below
 *           libgomp's; the sweep's 50% efficiency point at <= 2 us.
 */
static void evaluate_targets(void)
{
    char what[160];
    for (uint32_t i = 0; i < g_case_count; i++) {
        const struct cmp_case *c = &g_cases[i];
        if (c->task_us == 64 || c->task_us == 256) {
            double e = efficiency(c, SYS_SIMPLER);
            snprintf(what, sizeof what, "W4 stencil %.0f us: simpler efficiency >= 95%%",
                     c->task_us);
            add_target(what, 100 * e, 95, e >= 0.95);
        }
    }
    for (uint32_t i = 0; i < g_case_count; i++) {
        const struct cmp_case *c = &g_cases[i];
        if (c->workload_no != 6)
            continue;
        double peer = best_peer_rate(c), mine = simpler_median(c);
        double r = peer > 0 && mine > 0 ? peer / mine : 0;
        snprintf(what, sizeof what, "W6 %.15s %.40s: best peer / simpler GFLOP/s <= 1",
                 c->workload, c->args);
        add_target(what, r, 1, r <= 1);
    }
    const struct cmp_case *chain = find_case(2, "chain", 0);
    if (chain) {
        double worst = 0;
        for (int sys = SYS_GOMP; sys <= SYS_STARPU; sys++) {
            double r = ratio(chain, sys);
            if (r > 0 && (worst == 0 || r < worst))
                worst = r;
        }
        add_target("W2 chain: every peer / simpler > 1x", worst, 1, worst > 1);
        if (g_floor.count && has(chain, SYS_SIMPLER)) {
            double rt = 2 * bench_stats_of(g_floor.pinned, g_floor.count).median;
            double x = stats(chain, SYS_SIMPLER).median / rt;
            add_target("W2 chain: simpler ns/task / cross-core round trip <= 2x", x, 2, x <= 2);
        }
    }
    static const struct {
        int no;
        const char *w;
    } k_fine[] = {{3, "fan"}, {4, "stencil"}};
    for (size_t k = 0; k < sizeof k_fine / sizeof k_fine[0]; k++) {
        const struct cmp_case *c = find_case(k_fine[k].no, k_fine[k].w, 0);
        if (!c)
            continue;
        double omp = best_omp_cost(c), mine = simpler_median(c);
        double x = omp > 0 && mine > 0 ? mine / omp : 0;
        snprintf(what, sizeof what, "W%d %.40s: simpler / best OpenMP ns/task <= 0.7",
                 k_fine[k].no, c->args);
        add_target(what, x, 0.7, x <= 0.7);
    }
    for (uint32_t i = 0; i < g_case_count; i++) {
        const struct cmp_case *c = &g_cases[i];
        if (c->workload_no != 1 || !has(c, SYS_GOMP))
            continue;
        double x = ratio(c, SYS_GOMP) > 0 ? 1 / ratio(c, SYS_GOMP) : 0;
        snprintf(what, sizeof what, "W1 indep %.40s: simpler / libgomp ns/task <= 1", c->args);
        add_target(what, x, 1, x <= 1);
    }
    double h = half_efficiency_us(SYS_SIMPLER), largest = 0;
    for (uint32_t i = 0; i < g_case_count; i++)
        if (g_cases[i].task_us > largest && has(&g_cases[i], SYS_SIMPLER))
            largest = g_cases[i].task_us;
    if (h > 0 || largest == 0)
        add_target("W4 sweep: simpler 50% efficiency at task size <= 2 us", h, 2, h > 0 && h <= 2);
    else /* swept, never reached: the largest size tried is a lower bound */
        add_target("W4 sweep: simpler 50% efficiency at <= 2 us (never, up to this size)",
                   largest, 2, 0);
    print_targets(16);
}

/* ----------------------------------------------- host_build_graph (28) */

/* The median of detail `d` of system `sys` on case `c`; 0 when absent. */
static double detail_median(const struct cmp_case *c, int sys, enum detail d)
{
    if (!has(c, sys) || !c->s[sys].detail_count[d])
        return 0;
    return bench_stats_of(c->s[sys].detail[d], c->s[sys].detail_count[d]).median;
}

/* Both runtimes ran case `c`. */
static int has_both(const struct cmp_case *c)
{
    return has(c, SYS_SIMPLER) && has(c, SYS_HBG);
}

/*
 * HBG against TMR, per case both ran (issue 28, docs/performance.md):
 * the device wall (launch returned -> wait returned, per task: under HBG
 * the graph is built inside the launch, so this is the device's part
 * alone; under TMR the device starts inside the launch's enqueue, a few
 * us earlier), the host build (the launching thread's CPU time inside
 * simpler_launch_run per task, CLOCK_THREAD_CPUTIME_ID: the orchestration
 * run on the host, the image's assembly and the chain's enqueue; TMR's
 * launch is the enqueue alone), on the measured run (first build at that
 * size: its host scratch pages are new) and on a second run of the same
 * instance (warm scratch), and TMR's orchestrator's submit loop per task
 * (first to last submit, wall, on the device's orchestrator thread).
 * Targets: device wall <= TMR's on every case; the warm host build <= 0.5
 * us a task; the pipeline's end-to-end us/run <= TMR's.
 */
static void hbg_report(void)
{
    char what[160];
    printf("\nhost_build_graph against TMR (issue 28): per task, medians; device = launch returned "
           "-> wait returned; build = the launching thread's CPU in simpler_launch_run "
           "(first: the measured run, new scratch pages; warm: a second run of the instance)\n");
    printf("%-34s %10s %10s %8s %10s %10s %10s %10s %10s\n", "case", "TMR dev ns", "HBG dev ns",
           "HBG/TMR", "HBG warm", "build 1st", "build warm", "TMR launch", "TMR orch");
    for (uint32_t i = 0; i < g_case_count; i++) {
        const struct cmp_case *c = &g_cases[i];
        if (!has_both(c))
            continue;
        if (!strcmp(c->workload, "pipeline")) {
            double tmr = stats(c, SYS_SIMPLER).median, hbg = stats(c, SYS_HBG).median;
            printf("%-34s end-to-end us/run: TMR %.1f, HBG %.1f (HBG/TMR %.2f); launch CPU ns/run: "
                   "TMR %.0f, HBG %.0f\n",
                   c->id, tmr, hbg, hbg / tmr, detail_median(c, SYS_SIMPLER, D_LAUNCH_CPU),
                   detail_median(c, SYS_HBG, D_LAUNCH_CPU));
            continue;
        }
        double td = detail_median(c, SYS_SIMPLER, D_DEVICE), hd = detail_median(c, SYS_HBG, D_DEVICE);
        printf("%-34s %10.1f %10.1f %8.2f %10.1f %10.1f %10.1f %10.1f %10.1f\n", c->id, td, hd,
               td > 0 ? hd / td : 0, detail_median(c, SYS_HBG, D_WARM_DEVICE),
               detail_median(c, SYS_HBG, D_LAUNCH_CPU), detail_median(c, SYS_HBG, D_WARM_LAUNCH_CPU),
               detail_median(c, SYS_SIMPLER, D_LAUNCH_CPU), detail_median(c, SYS_SIMPLER, D_ORCH));
    }
    g_target_issue = 28;
    uint32_t first = g_target_count;
    for (uint32_t i = 0; i < g_case_count; i++) {
        const struct cmp_case *c = &g_cases[i];
        if (!has_both(c) || !strcmp(c->workload, "pipeline"))
            continue;
        double td = detail_median(c, SYS_SIMPLER, D_DEVICE), hd = detail_median(c, SYS_HBG, D_DEVICE);
        double r = td > 0 && hd > 0 ? hd / td : 0;
        snprintf(what, sizeof what, "%.34s: HBG / TMR device wall <= 1", c->id);
        add_target(what, r, 1, r <= 1);
    }
    for (uint32_t i = 0; i < g_case_count; i++) {
        const struct cmp_case *c = &g_cases[i];
        if (!has_both(c) || !strcmp(c->workload, "pipeline"))
            continue;
        double us = detail_median(c, SYS_HBG, D_WARM_LAUNCH_CPU) / 1000.0;
        snprintf(what, sizeof what, "%.34s: HBG host build, warm, us/task <= 0.5", c->id);
        add_target(what, us, 0.5, us <= 0.5);
    }
    for (uint32_t i = 0; i < g_case_count; i++) {
        const struct cmp_case *c = &g_cases[i];
        if (!has_both(c) || strcmp(c->workload, "pipeline"))
            continue;
        double r = stats(c, SYS_HBG).median / stats(c, SYS_SIMPLER).median;
        snprintf(what, sizeof what, "%.34s: HBG / TMR end-to-end us/run <= 1", c->id);
        add_target(what, r, 1, r <= 1);
    }
    if (g_target_count > first)
        print_targets(28);
}

/* ------------------------------------------ distributed Cholesky (30) */

/*
 * Issue 30: the tiled Cholesky (n 4096, tile 256; --quick 1024) over two
 * ranks, simpler's distributed cluster (bench_dist_simpler, under the
 * MPICH launcher simpler was built with) against StarPU-MPI
 * (bench_dist_starpu, under Open MPI's, which Debian's libstarpumpi is
 * linked with), one compute thread per rank each (bench/compare/
 * dist_chol.h). Every repetition runs one launch of each (3 measured
 * instances after a warm-up; the worker prints their median), the order
 * alternating; the first checks its factor. Target: StarPU-MPI / simpler
 * GFLOP/s <= 1.
 */
enum { DIST_SIMPLER, DIST_STARPU, DIST_SYSTEMS };

struct dist_system {
    const char *name;
    const char *worker;
    const char *launcher; /* NULL: not built with one */
    int available;
    double gflops[MAX_REPS], wall_ms[MAX_REPS];
    uint32_t count, failed;
    double bytes_moved; /* of the last sample: the same graph moves the same bytes */
    double remote_runs;
    char check[16];
};

#ifdef CMP_MPIEXEC_SIMPLER
#define DIST_LAUNCHER_SIMPLER CMP_MPIEXEC_SIMPLER
#else
#define DIST_LAUNCHER_SIMPLER NULL
#endif
#ifdef CMP_MPIEXEC_STARPU
#define DIST_LAUNCHER_STARPU CMP_MPIEXEC_STARPU
#else
#define DIST_LAUNCHER_STARPU NULL
#endif

static struct dist_system g_dist[DIST_SYSTEMS] = {
    {.name = "simpler", .worker = "bench_dist_simpler", .launcher = DIST_LAUNCHER_SIMPLER},
    {.name = "starpu-mpi", .worker = "bench_dist_starpu", .launcher = DIST_LAUNCHER_STARPU},
};
static char g_dist_id[48];
static int g_dist_ran;

/* A key's number in a result line; 0 when absent. */
static double line_number(const char *line, const char *key)
{
    const char *at = strstr(line, key);
    double v = 0;
    if (at)
        sscanf(at + strlen(key), "%lf", &v);
    return v;
}

/* Prints what the worker wrote on stderr (from `fd`, rewound). */
static void replay_stderr(int fd)
{
    char buf[4096];
    ssize_t n;
    lseek(fd, 0, SEEK_SET);
    while ((n = read(fd, buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)n, stderr);
}

/* One sample of system d: the launcher, 2 ranks, the worker. Its stderr
 * (StarPU-MPI prints its communication statistics there at shutdown) is
 * shown only when the sample fails. */
static void dist_sample(int d, int check)
{
    struct dist_system *s = &g_dist[d];
    char path[PATH_MAX + 64], nbuf[32], out[4096];
    snprintf(path, sizeof path, "%s/%s", g_exe_dir, s->worker);
    snprintf(nbuf, sizeof nbuf, "n=%d", g_quick ? 1024 : 4096);
    char *argv[16];
    int argc = 0;
    argv[argc++] = (char *)s->launcher;
    argv[argc++] = "-n";
    argv[argc++] = "2";
    if (d == DIST_STARPU) { /* Open MPI: two ranks on any machine, no binding of its own */
        argv[argc++] = "--oversubscribe";
        argv[argc++] = "--bind-to";
        argv[argc++] = "none";
    }
    argv[argc++] = path;
    argv[argc++] = nbuf;
    argv[argc++] = "tile=256";
    argv[argc++] = "reps=3"; /* the worker's median of 3: the first pays the fresh matrix's
                                page faults on every rank */
    argv[argc++] = check ? "check=1" : "check=0";
    argv[argc] = NULL;
    FILE *err = tmpfile(); /* the workers' stderr, replayed on a failure */
    int err_fd = err ? fileno(err) : -1;
    int rc = run_capture_err(argv, NULL, out, sizeof out, err_fd);
    char *line = strstr(out, "result value=");
    double value;
    if (rc != 0 || !line || sscanf(line, "result value=%lf", &value) != 1) {
        s->failed++;
        fprintf(stderr, PROGRAM ": %s on %s failed (exit %d)\n", g_dist_id, s->name, rc);
        if (err_fd >= 0)
            replay_stderr(err_fd);
    } else if (s->count < MAX_REPS) {
        s->gflops[s->count] = value;
        s->wall_ms[s->count++] = line_number(line, " wall_ms=");
        s->bytes_moved = line_number(line, " bytes_moved=");
        s->remote_runs = line_number(line, " remote_runs=");
        const char *c = strstr(line, " check=");
        if (c && check)
            sscanf(c + 7, "%15s", s->check);
    }
    if (err)
        fclose(err);
}

/* Runs the distributed case `reps` times per system, unless `only` names
 * something else; says why a system is skipped. */
static void dist_run(uint32_t reps, const char *only)
{
    snprintf(g_dist_id, sizeof g_dist_id, "W8 dist-chol n=%d tile=256 ranks=2",
             g_quick ? 1024 : 4096);
    if (only && !strstr(g_dist_id, only))
        return;
    for (int d = 0; d < DIST_SYSTEMS; d++) {
        struct dist_system *s = &g_dist[d];
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s", g_exe_dir, s->worker);
        s->available = s->launcher && access(path, X_OK) == 0;
        if (!s->available)
            printf("skipped: distributed Cholesky on %s (%s): %s\n", s->name, s->worker,
                   d == DIST_SIMPLER ? "simpler was built without MPI (libmpich-dev, mpich)"
                                     : "StarPU-MPI, Open MPI's headers or its launcher missing "
                                       "(libstarpu-dev, libopenmpi-dev, openmpi-bin: "
                                       "tools/install-bench-deps.sh)");
    }
    if (!g_dist[DIST_SIMPLER].available)
        return;
    /* Open MPI refuses to start as root without these; MPICH ignores them. */
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    g_dist_ran = 1;
    for (uint32_t rep = 0; rep < reps; rep++) {
        for (int k = 0; k < DIST_SYSTEMS; k++) {
            int d = (int)((k + rep) % DIST_SYSTEMS);
            if (g_dist[d].available)
                dist_sample(d, rep == 0);
        }
        fprintf(stderr, "\r" PROGRAM ": distributed Cholesky, repetition %u/%u   ", rep + 1,
                reps);
    }
    fprintf(stderr, "\n");
}

static double dist_median(int d)
{
    const struct dist_system *s = &g_dist[d];
    return s->count ? bench_stats_of(s->gflops, s->count).median : 0;
}

static void dist_report(void)
{
    if (!g_dist_ran)
        return;
    printf("\n%s (issue 30): each rank 1 compute thread (simpler: 1 device, 1 AIV core, runnable "
           "budget 1; StarPU-MPI: 1 CPU worker); medians over the repetitions of each process pair's "
           "median of 3 instances\n",
           g_dist_id);
    printf("%-11s %10s %10s %10s %10s %14s %12s %9s %12s\n", "system", "GFLOP/s", "min", "max",
           "wall ms", "bytes moved", "remote runs", "check", "peer/simpler");
    for (int d = 0; d < DIST_SYSTEMS; d++) {
        const struct dist_system *s = &g_dist[d];
        if (!s->available)
            continue;
        if (!s->count) {
            printf("%-11s %10s\n", s->name, "failed");
            continue;
        }
        struct bench_stats g = bench_stats_of(s->gflops, s->count);
        struct bench_stats w = bench_stats_of(s->wall_ms, s->count);
        char remote[24] = "-";
        if (d == DIST_SIMPLER)
            snprintf(remote, sizeof remote, "%.0f", s->remote_runs);
        printf("%-11s %10.2f %10.2f %10.2f %10.1f %14.0f %12s %9s", s->name, g.median, g.min,
               g.max, w.median, s->bytes_moved, remote, s->check[0] ? s->check : "-");
        double mine = dist_median(DIST_SIMPLER);
        if (d != DIST_SIMPLER && mine > 0)
            printf(" %11.2fx", g.median / mine);
        printf("\n");
    }
    printf("bytes moved: payload between the ranks (simpler: run_info.bytes_sent + "
           "bytes_received on rank 0; StarPU-MPI: starpu_mpi_comm_amounts_retrieve summed over "
           "the ranks)\n");
    g_target_issue = 30;
    double peer = dist_median(DIST_STARPU), mine = dist_median(DIST_SIMPLER);
    double r = peer > 0 && mine > 0 ? peer / mine : 0;
    add_target("W8 dist-chol 2 ranks: StarPU-MPI / simpler GFLOP/s <= 1", r, 1, r <= 1);
    print_targets(30);
}

static void dist_json(FILE *f)
{
    fprintf(f, "  \"dist_chol\": ");
    if (!g_dist_ran) {
        fprintf(f, "null,\n");
        return;
    }
    fprintf(f, "{\"case\": ");
    bench_json_string(f, g_dist_id);
    for (int d = 0; d < DIST_SYSTEMS; d++) {
        const struct dist_system *s = &g_dist[d];
        fprintf(f, ", \"%s\": ", s->name);
        if (!s->available || !s->count) {
            fprintf(f, "{\"available\": %s, \"failed\": %u}", s->available ? "true" : "false",
                    s->failed);
            continue;
        }
        struct bench_stats g = bench_stats_of(s->gflops, s->count);
        fprintf(f, "{\"gflops\": {\"median\": %.4g, \"min\": %.4g, \"max\": %.4g, \"samples\": %u}"
                   ", \"wall_ms_median\": %.4g, \"bytes_moved\": %.0f, \"check\": ",
                g.median, g.min, g.max, s->count, bench_stats_of(s->wall_ms, s->count).median,
                s->bytes_moved);
        bench_json_string(f, s->check);
        fprintf(f, "}");
    }
    fprintf(f, "},\n");
}

/* --------------------------------------------------------------- JSON */

static void json_stats(FILE *f, const double *v, uint32_t n)
{
    struct bench_stats s = bench_stats_of(v, n);
    fprintf(f, "{\"median\": %.4g, \"min\": %.4g, \"max\": %.4g, \"samples\": %u}", s.median,
            s.min, s.max, n);
}

static void write_json(const char *path, double load, double seconds)
{
    FILE *f;
    if (bench_json_open(PROGRAM, path, "compare", load, g_quick, seconds, &f) != 0)
        exit(1);
    fprintf(f, "  \"cpus_used\": %u,\n  \"busy_iters_per_us\": %.1f,\n  \"systems\": [", g_cpus,
            g_iters_per_us);
    for (int sys = 0, n = 0; sys < MAX_SYSTEMS; sys++) {
        fprintf(f, "%s{\"name\": ", n++ ? ", " : "");
        bench_json_string(f, g_systems[sys].name);
        fprintf(f, ", \"available\": %s, \"what\": ", g_systems[sys].available ? "true" : "false");
        bench_json_string(f, g_systems[sys].what);
        fprintf(f, "}");
    }
    fprintf(f, "],\n");
    dist_json(f);
    fprintf(f, "  \"floor\": ");
    if (g_floor.count) {
        fprintf(f, "{\"cacheline_one_way_pinned_ns\": ");
        json_stats(f, g_floor.pinned, g_floor.count);
        fprintf(f, ", \"cacheline_one_way_unpinned_ns\": ");
        json_stats(f, g_floor.unpinned, g_floor.count);
        fprintf(f, ", \"futex_wake_ns\": ");
        json_stats(f, g_floor.wake, g_floor.count);
        fprintf(f, ", \"placements\": [");
        for (uint32_t i = 0; i < g_floor.count; i++) {
            fprintf(f, "%s", i ? ", " : "");
            bench_json_string(f, g_floor.placements[i]);
        }
        fprintf(f, "]}");
    } else {
        fprintf(f, "null");
    }
    fprintf(f, ",\n  \"cases\": [\n");
    for (uint32_t i = 0; i < g_case_count; i++) {
        const struct cmp_case *c = &g_cases[i];
        fprintf(f, "    {\"case\": ");
        bench_json_string(f, c->id);
        fprintf(f, ", \"workload\": %d, \"name\": ", c->workload_no);
        bench_json_string(f, c->workload);
        fprintf(f, ", \"args\": ");
        bench_json_string(f, c->args);
        fprintf(f, ", \"unit\": ");
        bench_json_string(f, c->unit);
        if (c->task_us > 0)
            fprintf(f, ", \"task_us\": %g", c->task_us);
        fprintf(f, ", \"results\": {");
        int n = 0;
        for (int sys = 0; sys < MAX_SYSTEMS; sys++) {
            if (!g_systems[sys].available || !(c->systems >> sys & 1))
                continue;
            fprintf(f, "%s\"%s\": ", n++ ? ", " : "", g_systems[sys].name);
            if (!c->s[sys].count) {
                fprintf(f, "{\"failed\": %u}", c->s[sys].failed);
                continue;
            }
            struct bench_stats s = stats(c, sys);
            fprintf(f, "{\"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"samples\": %u",
                    s.median, s.min, s.max, c->s[sys].count);
            if (sys != SYS_SIMPLER && ratio(c, sys) > 0)
                fprintf(f, ", \"ratio_peer_over_simpler\": %.4g", ratio(c, sys));
            if (c->task_us > 0)
                fprintf(f, ", \"efficiency\": %.4g", efficiency(c, sys));
            for (int d = 0; d < D_COUNT; d++) { /* "device_ns_per_task": {...} */
                if (!c->s[sys].detail_count[d])
                    continue;
                fprintf(f, ", \"%.*s\": ", (int)strlen(k_detail_keys[d]) - 1, k_detail_keys[d]);
                json_stats(f, c->s[sys].detail[d], c->s[sys].detail_count[d]);
            }
            fprintf(f, ", \"detail\": ");
            bench_json_string(f, c->s[sys].extra);
            fprintf(f, "}");
        }
        fprintf(f, "}}%s\n", i + 1 < g_case_count ? "," : "");
    }
    fprintf(f, "  ],\n  \"half_efficiency_task_us\": {");
    for (int sys = 0, n = 0; sys < MAX_SYSTEMS; sys++)
        if (g_systems[sys].available && sys != SYS_SERIAL)
            fprintf(f, "%s\"%s\": %.3g", n++ ? ", " : "", g_systems[sys].name,
                    half_efficiency_us(sys));
    fprintf(f, "},\n  \"targets\": [\n");
    for (uint32_t i = 0; i < g_target_count; i++) {
        const struct target *t = &g_targets[i];
        fprintf(f, "    {\"target\": ");
        bench_json_string(f, t->what);
        fprintf(f, ", \"value\": %.4g, \"goal\": %g, \"status\": \"%s\", \"issue\": %d}%s\n",
                t->value, t->goal, t->met < 0 ? "not measured" : t->met ? "met" : "missed",
                t->issue, i + 1 < g_target_count ? "," : "");
    }
    /* issue 28: HBG against TMR per case both ran (hbg_report's figures) */
    fprintf(f, "  ],\n  \"hbg_vs_tmr\": [");
    for (uint32_t i = 0, n = 0; i < g_case_count; i++) {
        const struct cmp_case *c = &g_cases[i];
        if (!has_both(c))
            continue;
        fprintf(f, "%s\n    {\"case\": ", n++ ? "," : "");
        bench_json_string(f, c->id);
        if (!strcmp(c->workload, "pipeline")) {
            fprintf(f, ", \"tmr_us_per_run\": %.6g, \"hbg_us_per_run\": %.6g",
                    stats(c, SYS_SIMPLER).median, stats(c, SYS_HBG).median);
        } else {
            double td = detail_median(c, SYS_SIMPLER, D_DEVICE);
            double hd = detail_median(c, SYS_HBG, D_DEVICE);
            fprintf(f, ", \"tmr_device_ns_per_task\": %.6g, \"hbg_device_ns_per_task\": %.6g"
                       ", \"hbg_over_tmr_device\": %.4g, \"hbg_warm_device_ns_per_task\": %.6g"
                       ", \"hbg_build_cpu_ns_per_task\": %.6g"
                       ", \"hbg_warm_build_cpu_ns_per_task\": %.6g"
                       ", \"tmr_orch_ns_per_task\": %.6g",
                    td, hd, td > 0 ? hd / td : 0, detail_median(c, SYS_HBG, D_WARM_DEVICE),
                    detail_median(c, SYS_HBG, D_LAUNCH_CPU),
                    detail_median(c, SYS_HBG, D_WARM_LAUNCH_CPU),
                    detail_median(c, SYS_SIMPLER, D_ORCH));
        }
        fprintf(f, ", \"tmr_launch_cpu_ns_per_task\": %.6g}",
                detail_median(c, SYS_SIMPLER, D_LAUNCH_CPU));
    }
    fprintf(f, "\n  ]\n}\n");
    fclose(f);
}

/* --------------------------------------------------------------- main */

static void usage(void)
{
    fprintf(stderr, "usage: " PROGRAM " [--quick] [--reps N] [--only SUBSTRING] [--out FILE]\n"
                    "Runs simpler (under TMR and under host_build_graph), libgomp, libomp, StarPU\n"
                    "and a serial loop on the workloads of\n"
                    "bench/compare/compare.h, interleaved; prints the table and writes\n"
                    "bench/results/latest.json (or FILE).\n");
    exit(2);
}

int main(int argc, char **argv)
{
    uint32_t reps = 5;
    const char *only = NULL, *out_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            g_quick = 1;
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            int r = atoi(argv[++i]);
            if (r < 1 || r > MAX_REPS)
                usage();
            reps = (uint32_t)r;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            out_arg = argv[++i];
        } else {
            usage();
        }
    }
    if (g_quick && reps == 5)
        reps = 3;
    char out_path[PATH_MAX];
    if (bench_out_path(PROGRAM, out_arg, NULL, !only, "latest.json", out_path,
                       sizeof out_path) != 0)
        return 1;

    double load = bench_load_average();
    uint64_t t_start = now_ns();
    find_exe_dir();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    g_cpus = cpus > 0 ? (uint32_t)cpus : 1;
    char cpus_env[16];
    snprintf(cpus_env, sizeof cpus_env, "%u", g_cpus);
    setenv("CMP_THREADS", cpus_env, 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    setenv("STARPU_SILENT", "1", 1);
    g_iters_per_us = calibrate();
    printf(PROGRAM ": %u CPUs, load %.2f, busy work %.1f iterations/us, %u repetitions%s\n",
           g_cpus, load, g_iters_per_us, reps, g_quick ? " (quick)" : "");
    detect_systems();
    if (!g_systems[SYS_SIMPLER].available) {
        fprintf(stderr, PROGRAM ": bench_cmp_simpler is missing: nothing to compare\n");
        return 1;
    }
    build_cases();
    if (only) { /* keep the matching cases */
        uint32_t kept = 0;
        for (uint32_t i = 0; i < g_case_count; i++)
            if (strstr(g_cases[i].id, only))
                g_cases[kept++] = g_cases[i];
        g_case_count = kept;
    }

    for (uint32_t rep = 0; rep < reps; rep++) {
        measure_floor();
        for (uint32_t i = 0; i < g_case_count; i++) {
            struct cmp_case *c = &g_cases[i];
            for (int k = 0; k < MAX_SYSTEMS; k++) {
                int sys = (int)((k + rep) % MAX_SYSTEMS); /* rotate the order */
                if (g_systems[sys].available && (c->systems >> sys & 1))
                    run_sample(c, sys, rep == 0);
            }
            fprintf(stderr, "\r" PROGRAM ": repetition %u/%u, case %u/%u   ", rep + 1, reps, i + 1,
                    g_case_count);
        }
    }
    fprintf(stderr, "\n");
    dist_run(reps, only);
    print_table();
    evaluate_targets();
    hbg_report();
    dist_report();
    double seconds = (double)(now_ns() - t_start) / 1e9;
    if (out_path[0]) {
        write_json(out_path, load, seconds);
        printf("wrote %s (%.0f s)\n", out_path, seconds);
    }
    return 0;
}
