/*
 * bench_common.c — the helpers the benchmarks share (see bench_common.h):
 * failure stop, statistics, JSON text and file preamble, output path, host
 * and process CPU time. Owns no measurement and no state; it must not touch
 * the device.
 */
#include "bench_common.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "simpler/device.h"
#include "simpler/status.h"

_Noreturn void bench_check_failed(const char *program, const char *call, int rc, int line)
{
    fprintf(stderr, "%s: %s failed: %d (%s) at line %d\n", program, call, rc,
            simpler_strerror(rc), line);
    exit(1);
}

/* ---------------------------------------------------------------- statistics */

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct bench_stats bench_stats_of(const double *values, size_t n)
{
    if (n == 0 || n > BENCH_MAX_SAMPLES) {
        fprintf(stderr, "bench_stats_of: %zu samples (1 to %d)\n", n, BENCH_MAX_SAMPLES);
        exit(1);
    }
    double sorted[BENCH_MAX_SAMPLES];
    memcpy(sorted, values, n * sizeof(*values));
    qsort(sorted, n, sizeof(*sorted), compare_double);
    struct bench_stats s = {.min = sorted[0], .max = sorted[n - 1]};
    s.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    return s;
}

double bench_median_in_place(double *values, size_t n)
{
    qsort(values, n, sizeof *values, compare_double);
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/* ---------------------------------------------------------------------- JSON */

void bench_json_stats(FILE *f, const char *name, struct bench_stats s, int decimals)
{
    fprintf(f, "\"%s\": {\"median\": %.*f, \"min\": %.*f, \"max\": %.*f}", name, decimals,
            s.median, decimals, s.min, decimals, s.max);
}

void bench_json_string(FILE *f, const char *text)
{
    fputc('"', f);
    for (; *text; text++) {
        if (*text == '"' || *text == '\\')
            fputc('\\', f);
        fputc(*text, f);
    }
    fputc('"', f);
}

int bench_json_open(const char *program, const char *path, const char *benchmark,
                    double load_at_start, int quick, double seconds, FILE **out)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write %s: %s\n", program, path, strerror(errno));
        return -1;
    }
    char stamp[32] = "";
    time_t t = time(NULL);
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "{\n  \"benchmark\": ");
    bench_json_string(f, benchmark);
    fprintf(f, ",\n  \"timestamp\": \"%s\",\n", stamp);
    fprintf(f, "  \"host_cpus\": %ld,\n  \"load_average_at_start\": %.2f,\n",
            sysconf(_SC_NPROCESSORS_ONLN), load_at_start);
    fprintf(f, "  \"quick\": %s,\n  \"seconds\": %.1f,\n", quick ? "true" : "false", seconds);
    *out = f;
    return 0;
}

/* ---------------------------------------------------------------- host facts */

double bench_load_average(void)
{
    double load[1] = {0};
    return getloadavg(load, 1) == 1 ? load[0] : 0;
}

double bench_host_busy_ns(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return 0;
    unsigned long long v[8] = {0};
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                     &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (got < 8)
        return 0;
    /* user nice system idle iowait irq softirq steal: all but idle and iowait */
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    return (double)busy * 1e9 / (double)sysconf(_SC_CLK_TCK);
}

double bench_process_cpu_ns(void)
{
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) != 0)
        return 0;
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e9 +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e3;
}

double bench_others_cpu_pct(double elapsed_ns, double host_busy_before, double own_cpu_ns)
{
    double cpus = (double)sysconf(_SC_NPROCESSORS_ONLN);
    if (elapsed_ns < 2e8 || cpus <= 0)
        return -1;
    double others = bench_host_busy_ns() - host_busy_before - own_cpu_ns;
    return others > 0 ? others / (elapsed_ns * cpus) * 100 : 0;
}

void bench_print_start(const char *program, double load_at_start, int quick, const char *what)
{
    printf("%s: %ld host CPUs, load average %.2f at start%s; %s\n", program,
           sysconf(_SC_NPROCESSORS_ONLN), load_at_start, quick ? ", --quick" : "", what);
    if (load_at_start > 1.0)
        printf("%s: the host was busy in the last minute; numbers may be noisy\n", program);
}

/* ------------------------------------------------------------------- paths */

/* True when `dir` is the repository root (it holds bench/<program>.c). */
static int is_repo_root(const char *dir, const char *program)
{
    char probe[PATH_MAX];
    if (snprintf(probe, sizeof(probe), "%s/bench/%s.c", dir, program) >= (int)sizeof(probe))
        return 0;
    return access(probe, F_OK) == 0;
}

/* Finds the repo root by walking up from the executable's directory. */
static int find_repo_root(const char *program, char *out, size_t size)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0)
        return -1;
    path[n] = '\0';
    for (char *slash = strrchr(path, '/'); slash; slash = strrchr(path, '/')) {
        *slash = '\0';
        const char *dir = path[0] ? path : "/";
        if (is_repo_root(dir, program)) {
            snprintf(out, size, "%s", dir);
            return 0;
        }
    }
    return -1;
}

int bench_out_path(const char *program, const char *out_arg, const char *root_arg,
                   int want_default, const char *file_name, char *out, size_t size)
{
    if (out_arg) {
        snprintf(out, size, "%s", out_arg);
        return 0;
    }
    out[0] = '\0';
    if (!want_default)
        return 0;
    char root[PATH_MAX];
    if (root_arg) {
        snprintf(root, sizeof(root), "%s", root_arg);
    } else if (find_repo_root(program, root, sizeof(root)) != 0) {
        fprintf(stderr, "%s: cannot find the repo root above the executable; "
                        "pass --root or --out\n",
                program);
        return -1;
    }
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof(dir), "%s/bench/results", root) >= (int)sizeof(dir) ||
        snprintf(out, size, "%s/%s", dir, file_name) >= (int)size) {
        fprintf(stderr, "%s: path too long under %s\n", program, root);
        return -1;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "%s: cannot create %s: %s\n", program, dir, strerror(errno));
        return -1;
    }
    return 0;
}

int bench_common_args(const char *program, int argc, char **argv, const char *file_name,
                      int *quick, char *out_path, size_t size)
{
    const char *root_arg = NULL, *out_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            *quick = 1;
        else if (strcmp(argv[i], "--root") == 0 && i + 1 < argc)
            root_arg = argv[++i];
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out_arg = argv[++i];
        else
            return -1;
    }
    return bench_out_path(program, out_arg, root_arg, 1, file_name, out_path, size);
}

void bench_device_configure(const char *program, int device)
{
    /* simdev's defaults with the SIMDEV_* environment applied, as any
     * program gets them (or the configuration an earlier call set, which a
     * reset keeps): by default 2 AICPU threads, 1 AIC + 2 AIV
     * (bench_common.h), and the environment may ask for another. Memory
     * and the watchdog are fixed. */
    struct simdev_config dc;
    BENCH_CHECK(program, simdev_device_reset(device));
    BENCH_CHECK(program, simdev_device_get_config(device, &dc));
    dc.memory_bytes = 1ull << 30;
    dc.watchdog_ms = 0;
    BENCH_CHECK(program, simdev_device_configure(device, &dc));
}

void bench_device_topology(int device, char *out, size_t size)
{
    struct simdev_config dc;
    if (simdev_device_get_config(device, &dc) != 0) {
        snprintf(out, size, "unknown topology");
        return;
    }
    snprintf(out, size, "%u AICPU threads, %u AIC + %u AIV, %llu MiB", dc.aicpu_threads,
             dc.aic_cores, dc.aiv_cores, (unsigned long long)(dc.memory_bytes >> 20));
}
