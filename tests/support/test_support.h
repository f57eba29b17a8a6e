/*
 * test_support.h — shared helpers for simpler's unit tests.
 *
 * Owns: the test-registration macro, the device fixture (set-up/tear-down,
 * the small topology and run capacity, device buffers), and small
 * synchronisation helpers (gates, logs, counters) that tests use instead of
 * sleeping. Tests include it after the cmocka headers.
 */
#ifndef SIMPLER_TEST_SUPPORT_H
#define SIMPLER_TEST_SUPPORT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simpler/device.h"
#include "simpler/orchestration.h"
#include "simpler/simdev_fault.h"
#include "simpler/tensor.h"

/*
 * Registering a test, in every test file's table: SIMPLER_TEST runs `fn` on
 * the device fixture (ts_device_setup before it, ts_device_teardown after
 * it, which fails the test when it leaked device memory); SIMPLER_TEST_WITH
 * names the test's own setup and teardown (either may be NULL). cmocka and
 * CTest report the test by `fn`'s name.
 */
#define SIMPLER_TEST(fn) SIMPLER_TEST_WITH(fn, ts_device_setup, ts_device_teardown)
#define SIMPLER_TEST_WITH(fn, setup, teardown) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* Resets device 0 and configures it with a small topology (2 AICPU threads,
 * 1 AIC + 2 AIV cores, 64 MiB, watchdog 0 = off, default spin); makes it the
 * current device. Returns 0 (cmocka group/test setup signature). */
int ts_device_setup(void **state);

/* Checks that device 0 holds no memory, then resets it. */
int ts_device_teardown(void **state);

/* The fixture's topology: 2 AICPU threads, 1 AIC + 2 AIV cores, 64 MiB,
 * watchdog off, default spin. Tests change fields of a copy. */
struct simdev_config ts_small_config(void);

/* The run capacity every fixture uses, so that a run's arena fits that
 * device: window 64, 1 MiB heap and 1024 deps per ring; TensorMap 256
 * buckets x 4096 entries; everything else simpler_run_config_default's. */
struct simpler_run_config ts_small_run_config(void);

/*
 * A counting op whose arguments carry a magic word, so a test can tell that
 * the bytes a device function received are the ones frozen at enqueue or
 * capture. The functions add 1 to *counter per thread (AICPU) or per core
 * (AICore) and return TS_BAD_ARGS when the bytes are not a ts_count_args
 * with TS_COUNT_MAGIC.
 */
#define TS_COUNT_MAGIC UINT64_C(0x636f756e74)
#define TS_BAD_ARGS (-18)
struct ts_count_args {
    _Atomic uint64_t *counter;
    uint64_t magic;
};
int ts_magic_count_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size);
int ts_magic_count_core_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size);
/* Host callback: adds 1 to the _Atomic uint64_t `user_data` points to. */
int ts_count_u64_host_fn(void *user_data);
/* Enqueues ts_magic_count_fn on one AICPU thread (asserts the enqueue). */
void ts_enqueue_count(simdev_stream_t stream, _Atomic uint64_t *counter);
uint64_t ts_load_u64(_Atomic uint64_t *counter);

/* Creates a stream / an event on the current device (asserts success). */
simdev_stream_t ts_new_stream(void);
simdev_event_t ts_new_event(void);

/* Like ts_device_setup, with an explicit configuration. */
void ts_device_setup_config(const struct simdev_config *config);

/* Device memory on the current device, and copies to and from it (assert). */
void *ts_dev_alloc(size_t bytes);
void ts_to_dev(void *dev, const void *host, size_t bytes);
void ts_from_dev(void *host, const void *dev, size_t bytes);

/* A 1-D tensor descriptor over device memory `dev` of `count` elements. */
struct simpler_tensor ts_dev_tensor_1d(const void *dev, uint64_t count, uint32_t dtype);

/* The bits of `value`, as a scalar argument carries an f32. */
uint64_t ts_f32_bits(float value);

/*
 * A gate: device functions or host callbacks block in ts_gate_pass until the
 * test calls ts_gate_open. ts_gate_wait_arrivals lets the test wait until n
 * parties are blocked in the gate (so the test knows work has started).
 */
struct ts_gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open;
    int arrivals;
};
void ts_gate_init(struct ts_gate *gate);
void ts_gate_destroy(struct ts_gate *gate);
void ts_gate_pass(struct ts_gate *gate);
void ts_gate_open(struct ts_gate *gate);
void ts_gate_wait_arrivals(struct ts_gate *gate, int n);

/*
 * Bounded form of ts_gate_wait_arrivals, for tests whose failure mode would
 * otherwise be a hang: returns 1 once n parties have arrived, 0 if they have
 * not after timeout_ms. The bound is a deadlock guard, never an ordering tool:
 * a correct device reaches the gate long before it expires.
 */
int ts_gate_wait_arrivals_for(struct ts_gate *gate, int n, uint32_t timeout_ms);

/* The deadlock guard the tests use with ts_gate_wait_arrivals_for. */
#define TS_DEADLOCK_GUARD_MS 20000u

/*
 * A grace window for negative checks ("B has not run yet") while the test
 * holds the work B depends on in a closed gate: a correct device can never
 * arrive, whatever the timing, so the check cannot fail spuriously; the
 * window only gives a broken device (a wait that does not wait) the time to
 * show itself. Nothing is ordered by it.
 */
#define TS_GRACE_MS 50u

/*
 * A rescue: a helper thread that opens `target` if the test has not called
 * ts_rescue_finish within timeout_ms — for a step that blocks until the
 * device gives up on work held in `target` (a watchdog) or that a broken
 * device would never finish. Turns a hang into a failed assertion.
 */
struct ts_rescue {
    struct ts_gate finished; /* open from the start: ts_rescue_finish arrives */
    struct ts_gate *target;
    uint32_t timeout_ms;
    int fired; /* 1: the rescue had to open target */
    pthread_t thread;
};
void ts_rescue_start(struct ts_rescue *rescue, struct ts_gate *target, uint32_t timeout_ms);
/* Ends the guarded step and joins the helper; returns 1 if the rescue fired. */
int ts_rescue_finish(struct ts_rescue *rescue);

/* Host callback: passes the gate `user_data` points to, then returns 0. */
int ts_gate_host_fn(void *user_data);

/* Host callback: increments the atomic_int `user_data` points to; returns 0. */
int ts_count_host_fn(void *user_data);

/* AICPU function: `args` holds one `atomic_int *`; every thread of the
 * launch increments it once. Returns 0. */
int ts_count_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size);

/* Enqueues ts_count_aicpu_fn on one AICPU thread (asserts the enqueue). */
void ts_launch_count(simdev_stream_t stream, atomic_int *counter);

/* Launch arguments whose every byte is checkable: `size` bytes at `args`,
 * the `header_size` bytes of `header` first, then byte i = (i * 7 + size)
 * & 0xff (ts_pattern_args). ts_pattern_args_read copies the header back
 * into `header` and says whether `size` holds it and every byte after it
 * is the pattern's, so a launch that was handed another launch's bytes, or
 * too few of them, can tell. */
void ts_pattern_args(unsigned char *args, const void *header, size_t header_size, size_t size);
bool ts_pattern_args_read(const void *args, size_t size, void *header, size_t header_size);

/* Enqueues ts_gate_host_fn on `stream` (asserts the enqueue). */
void ts_launch_gate(simdev_stream_t stream, struct ts_gate *gate);

/* AICPU function: `args` holds one `struct ts_gate *`; every thread of the
 * launch passes that gate. Returns 0 (INTERNAL for other args). */
int ts_gate_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size);

/* Thread body: waits until one party is blocked in the gate `arg` points
 * to, then opens it. The wait is bounded by TS_DEADLOCK_GUARD_MS, so a
 * device that dropped the gated op does not hang the test. */
void *ts_gate_opener_main(void *arg);

/*
 * Yields until ready(arg) is true, bounded by TS_DEADLOCK_GUARD_MS: 1 once
 * it is, 0 if it never was. For a condition no gate can report (a word a
 * runtime writes, a counter a device thread bumps): the bound is a deadlock
 * guard, never an ordering tool.
 */
int ts_poll_until(bool (*ready)(void *arg), void *arg);

/*
 * Polls simdev_stream_query until it stops answering NOT_READY (bounded by
 * TS_DEADLOCK_GUARD_MS; NOT_READY is returned if it never settles) and
 * returns its answer. For checking what a drained stream reports without
 * the clearing that simdev_stream_sync does.
 */
int ts_stream_query_settled(simdev_stream_t stream);

/*
 * Polls simdev_sem_info until `tickets` acquires of `sem` have executed
 * (each then holds a unit or waits for one): 1, or 0 when that does not
 * happen within TS_DEADLOCK_GUARD_MS. Lets a test act on a waiting acquire
 * for certain, not by chance.
 */
int ts_sem_wait_tickets(simdev_sem_t sem, uint64_t tickets);

/* The lines of the text file at `path` that contain `needle` (asserts the
 * file opens). */
size_t ts_count_lines_with(const char *path, const char *needle);

/*
 * A log of ints appended from any thread, so a test can check the exact
 * order in which device work ran. Appends past capacity are counted in
 * `overflow` instead of stored.
 */
struct ts_log {
    pthread_mutex_t lock;
    int *entries;
    int count;
    int capacity;
    int overflow;
};
void ts_log_init(struct ts_log *log, int capacity);
void ts_log_destroy(struct ts_log *log);
void ts_log_append(struct ts_log *log, int value);
/* Snapshot of the number of entries (taken under the log's lock). */
int ts_log_count(struct ts_log *log);

/* True when the environment runs this test under host_build_graph
 * (SIMPLER_RUNTIME=hbg: CTest's *_hbg entries). */
bool ts_runtime_hbg(void);

/* The text file at `path` into `text` (`capacity` bytes, NUL-terminated;
 * a longer file is cut). Asserts that it opened: a trace that was never
 * written fails the test here. */
void ts_read_text(const char *path, char *text, size_t capacity);

/* Removes a trace written at `path` ("<stem>.json") and the dependency
 * files written beside it ("<stem>.deps.json", "<stem>.deps.dot"). */
void ts_trace_files_remove(const char *path);

/* Skips the calling cmocka case under host_build_graph, saying why: for a
 * case whose subject that runtime does not have (an orchestration that
 * watches its tasks run, rings that reclaim during a run, element waits
 * on task outputs). */
#define TS_SKIP_UNDER_HBG(why)                                                                     \
    do {                                                                                           \
        if (ts_runtime_hbg()) {                                                                    \
            print_message("skipped under host_build_graph: %s\n", why);                           \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

#endif /* SIMPLER_TEST_SUPPORT_H */
