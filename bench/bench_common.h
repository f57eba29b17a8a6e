/*
 * bench_common.h — what the benchmarks (bench_device, bench_runtime,
 * bench_program, bench_kernel, bench_trace, bench_compare) share and
 * nothing they measure: a stop on a failed call, the median/min/max of
 * repetitions and the median of many samples, the JSON string, stats and
 * file preamble, where the JSON goes (the repo root found above the
 * executable), and the CPU-time readings that tell a noisy row.
 *
 * Every function takes the benchmark's program name ("bench_device"), which
 * prefixes its messages on stderr. It touches no state of its own.
 */
#ifndef SIMPLER_BENCH_COMMON_H
#define SIMPLER_BENCH_COMMON_H

#include <stddef.h>
#include <stdio.h>

/* The most repetitions bench_stats_of takes. */
#define BENCH_MAX_SAMPLES 32

/* Stops the benchmark on a failed call: numbers after it mean nothing. */
#define BENCH_CHECK(program, call)                                                    \
    do {                                                                              \
        int check_rc_ = (call);                                                       \
        if (check_rc_ != 0)                                                           \
            bench_check_failed((program), #call, check_rc_, __LINE__);                \
    } while (0)

/* Prints "<program>: <call> failed: <rc> (<strerror>) at line <line>" to
 * stderr and exits with status 1. Never returns. */
_Noreturn void bench_check_failed(const char *program, const char *call, int rc, int line);

struct bench_stats {
    double median, min, max;
};

/* Median, min and max of values[0..n); 1 <= n <= BENCH_MAX_SAMPLES (exits
 * otherwise). `values` is borrowed for the call and left unchanged; the
 * median of an even count is the mean of the middle two. */
struct bench_stats bench_stats_of(const double *values, size_t n);

/* Median of values[0..n) (n >= 1, any count), sorting them in place: for
 * the many samples of one repetition, where bench_stats_of takes few. */
double bench_median_in_place(double *values, size_t n);

/* Writes "name": {"median": .., "min": .., "max": ..} with `decimals`
 * digits after the point (no separator before or after). */
void bench_json_stats(FILE *f, const char *name, struct bench_stats s, int decimals);

/* Writes `text` as a JSON string: quotes and backslashes escaped (the names
 * here need no other escapes). */
void bench_json_string(FILE *f, const char *text);

/* Creates the JSON file at `path` and writes its opening: "{", then the
 * fields benchmark, timestamp (UTC, now), host_cpus, load_average_at_start,
 * quick and seconds, each on its own line ending in ",". The caller writes
 * the rest, closing brace included, and closes *out. Returns 0 with *out
 * set, or -1 after printing why to stderr (*out untouched). */
int bench_json_open(const char *program, const char *path, const char *benchmark,
                    double load_at_start, int quick, double seconds, FILE **out);

/* The 1-minute load average now, or 0 when it cannot be read. */
double bench_load_average(void);

/* Busy CPU time of the whole host so far (every CPU, every process: all but
 * idle and iowait), in ns, from /proc/stat; 0 when unreadable. Jiffy
 * resolution: meaningful over a whole case, not a single short run. */
double bench_host_busy_ns(void);

/* User + system CPU time of every thread of this process so far, in ns. */
double bench_process_cpu_ns(void);

/* The share of the host's CPUs other processes used over the last
 * `elapsed_ns`, in %: host busy time since `host_busy_before` (a
 * bench_host_busy_ns reading) less `own_cpu_ns`, over elapsed x CPUs; 0 at
 * least. -1 below 0.2 s, where /proc/stat's jiffies say nothing. */
double bench_others_cpu_pct(double elapsed_ns, double host_busy_before, double own_cpu_ns);

/* Prints "<program>: N host CPUs, load average L at start[, --quick];
 * <what>" and, when L > 1, a line saying the numbers may be noisy. */
void bench_print_start(const char *program, double load_at_start, int quick, const char *what);

/* Parses the options every component benchmark takes — --quick, --root
 * DIR, --out FILE — and fills out_path[size] as bench_out_path does with
 * `file_name`. 0, or -1 for anything else (after printing why, when it is
 * the path). */
int bench_common_args(const char *program, int argc, char **argv, const char *file_name,
                      int *quick, char *out_path, size_t size);

/* Resets `device` and configures the component benchmarks' device:
 * simdev's defaults (2 AICPU threads, 1 orchestrator + 1 scheduler; 1 AIC
 * + 2 AIV) with the SIMDEV_* environment applied, as for any program (to
 * measure another device; bench_device_topology says which topology
 * ran), then 1 GiB and the watchdog off whatever the environment says.
 * Exits on failure. */
void bench_device_configure(const char *program, int device);

/* Writes `device`'s configured topology ("2 AICPU threads, 1 AIC + 2 AIV,
 * 1024 MiB") to out[size]. */
void bench_device_topology(int device, char *out, size_t size);

/*
 * Fills out[size] with where the JSON goes: `out_arg` when given; else, when
 * `want_default`, ROOT/bench/results/<file_name>, creating that directory,
 * where ROOT is `root_arg` or the nearest directory above the executable
 * holding bench/<program>.c; else "" (no JSON). Returns 0, or -1 after
 * printing why to stderr. Arguments are borrowed for the call.
 */
int bench_out_path(const char *program, const char *out_arg, const char *root_arg,
                   int want_default, const char *file_name, char *out, size_t size);

#endif /* SIMPLER_BENCH_COMMON_H */
