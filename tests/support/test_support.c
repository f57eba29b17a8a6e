/*
 * test_support.c — device fixtures and gates shared by the tests (see
 * test_support.h).
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_support.h"

void ts_device_setup_config(const struct simdev_config *config)
{
    assert_int_equal(simdev_device_reset(0), 0);
    assert_int_equal(simdev_device_configure(0, config), 0);
    assert_int_equal(simdev_set_device(0), 0);
    assert_int_equal(simdev_fault_clear(0), 0);
    assert_int_equal(simdev_op_counts_reset(0), 0);
}

struct simdev_config ts_small_config(void)
{
    struct simdev_config config;
    assert_int_equal(simdev_config_default(&config), 0);
    config.aicpu_threads = 2;
    config.aic_cores = 1;
    config.aiv_cores = 2;
    config.memory_bytes = 64u << 20;
    config.watchdog_ms = 0;
    return config;
}

struct simpler_run_config ts_small_run_config(void)
{
    struct simpler_run_config c;
    simpler_run_config_default(&c);
    for (int i = 0; i < SIMPLER_RUN_RINGS; i++) {
        c.task_window[i] = 64;
        c.heap_bytes[i] = 1u << 20;
        c.dep_pool[i] = 1024;
    }
    c.tensormap_buckets = 256;
    c.tensormap_entries = 4096;
    return c;
}

int ts_device_setup(void **state)
{
    (void)state;
    struct simdev_config config = ts_small_config();
    ts_device_setup_config(&config);
    return 0;
}

simdev_stream_t ts_new_stream(void)
{
    simdev_stream_t stream = NULL;
    assert_int_equal(simdev_stream_create(&stream), 0);
    assert_non_null(stream);
    return stream;
}

simdev_event_t ts_new_event(void)
{
    simdev_event_t event = NULL;
    assert_int_equal(simdev_event_create(&event), 0);
    assert_non_null(event);
    return event;
}

void *ts_dev_alloc(size_t bytes)
{
    void *p = NULL;
    assert_int_equal(simdev_malloc(&p, bytes), 0);
    return p;
}

void ts_to_dev(void *dev, const void *host, size_t bytes)
{
    assert_int_equal(simdev_memcpy(dev, host, bytes, SIMDEV_COPY_HOST_TO_DEVICE), 0);
}

void ts_from_dev(void *host, const void *dev, size_t bytes)
{
    assert_int_equal(simdev_memcpy(host, dev, bytes, SIMDEV_COPY_DEVICE_TO_HOST), 0);
}

struct simpler_tensor ts_dev_tensor_1d(const void *dev, uint64_t count, uint32_t dtype)
{
    struct simpler_tensor t = {0};
    assert_int_equal(simpler_tensor_make_1d(&t, (uint64_t)(uintptr_t)dev, count, dtype,
                                            SIMPLER_MEM_DEVICE),
                     0);
    return t;
}

uint64_t ts_f32_bits(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

int ts_device_teardown(void **state)
{
    (void)state;
    struct simdev_mem_info info;
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    /* Reset before judging, so a leaking test does not hand a dirty device
     * to the next one. */
    assert_int_equal(simdev_device_reset(0), 0);
    assert_int_equal(info.in_use, 0); /* nonzero: the test leaked device memory */
    return 0;
}

void ts_gate_init(struct ts_gate *gate)
{
    pthread_mutex_init(&gate->lock, NULL);
    pthread_cond_init(&gate->cond, NULL);
    gate->open = 0;
    gate->arrivals = 0;
}

void ts_gate_destroy(struct ts_gate *gate)
{
    pthread_cond_destroy(&gate->cond);
    pthread_mutex_destroy(&gate->lock);
}

void ts_gate_pass(struct ts_gate *gate)
{
    pthread_mutex_lock(&gate->lock);
    gate->arrivals++;
    pthread_cond_broadcast(&gate->cond);
    while (!gate->open)
        pthread_cond_wait(&gate->cond, &gate->lock);
    pthread_mutex_unlock(&gate->lock);
}

void ts_gate_open(struct ts_gate *gate)
{
    pthread_mutex_lock(&gate->lock);
    gate->open = 1;
    pthread_cond_broadcast(&gate->cond);
    pthread_mutex_unlock(&gate->lock);
}

void ts_gate_wait_arrivals(struct ts_gate *gate, int n)
{
    pthread_mutex_lock(&gate->lock);
    while (gate->arrivals < n)
        pthread_cond_wait(&gate->cond, &gate->lock);
    pthread_mutex_unlock(&gate->lock);
}

int ts_gate_wait_arrivals_for(struct ts_gate *gate, int n, uint32_t timeout_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline); /* the clock pthread_cond_timedwait uses */
    deadline.tv_sec += timeout_ms / 1000u;
    deadline.tv_nsec += (long)(timeout_ms % 1000u) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000L;
    }
    int arrived;
    pthread_mutex_lock(&gate->lock);
    while (gate->arrivals < n) {
        if (pthread_cond_timedwait(&gate->cond, &gate->lock, &deadline) != 0)
            break;
    }
    arrived = gate->arrivals >= n;
    pthread_mutex_unlock(&gate->lock);
    return arrived;
}

static void *rescue_main(void *arg)
{
    struct ts_rescue *rescue = arg;
    if (!ts_gate_wait_arrivals_for(&rescue->finished, 1, rescue->timeout_ms)) {
        rescue->fired = 1; /* read by ts_rescue_finish after the join */
        ts_gate_open(rescue->target);
    }
    return NULL;
}

void ts_rescue_start(struct ts_rescue *rescue, struct ts_gate *target, uint32_t timeout_ms)
{
    ts_gate_init(&rescue->finished);
    ts_gate_open(&rescue->finished);
    rescue->target = target;
    rescue->timeout_ms = timeout_ms;
    rescue->fired = 0;
    assert_int_equal(pthread_create(&rescue->thread, NULL, rescue_main, rescue), 0);
}

int ts_rescue_finish(struct ts_rescue *rescue)
{
    ts_gate_pass(&rescue->finished);
    assert_int_equal(pthread_join(rescue->thread, NULL), 0);
    ts_gate_destroy(&rescue->finished);
    return rescue->fired;
}

int ts_gate_host_fn(void *user_data)
{
    ts_gate_pass(user_data);
    return 0;
}

int ts_count_host_fn(void *user_data)
{
    atomic_fetch_add_explicit((atomic_int *)user_data, 1, memory_order_relaxed);
    return 0;
}

int ts_count_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    atomic_int *counter;
    if (args_size != sizeof counter)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&counter, args, sizeof counter);
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
    return 0;
}

static unsigned char pattern_byte(size_t i, size_t size)
{
    return (unsigned char)((i * 7 + size) & 0xff);
}

void ts_pattern_args(unsigned char *args, const void *header, size_t header_size, size_t size)
{
    assert_true(size >= header_size);
    memcpy(args, header, header_size);
    for (size_t i = header_size; i < size; i++)
        args[i] = pattern_byte(i, size);
}

bool ts_pattern_args_read(const void *args, size_t size, void *header, size_t header_size)
{
    if (size < header_size)
        return false;
    memcpy(header, args, header_size);
    const unsigned char *bytes = args;
    for (size_t i = header_size; i < size; i++)
        if (bytes[i] != pattern_byte(i, size))
            return false;
    return true;
}

void ts_launch_count(simdev_stream_t stream, atomic_int *counter)
{
    assert_int_equal(simdev_launch_aicpu(stream, ts_count_aicpu_fn, 1, &counter, sizeof counter), 0);
}

void ts_launch_gate(simdev_stream_t stream, struct ts_gate *gate)
{
    assert_int_equal(simdev_launch_host_func(stream, ts_gate_host_fn, gate), 0);
}

int ts_gate_aicpu_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    struct ts_gate *gate;
    if (args_size != sizeof gate)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&gate, args, sizeof gate);
    ts_gate_pass(gate);
    return 0;
}

void *ts_gate_opener_main(void *arg)
{
    struct ts_gate *gate = arg;
    ts_gate_wait_arrivals_for(gate, 1, TS_DEADLOCK_GUARD_MS);
    ts_gate_open(gate);
    return NULL;
}

/* Milliseconds since *start (CLOCK_MONOTONIC). */
static int64_t elapsed_ms_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)(now.tv_sec - start->tv_sec) * 1000 +
           (int64_t)(now.tv_nsec - start->tv_nsec) / 1000000;
}

int ts_poll_until(bool (*ready)(void *arg), void *arg)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (!ready(arg)) {
        if (elapsed_ms_since(&start) > (int64_t)TS_DEADLOCK_GUARD_MS)
            return 0;
        sched_yield();
    }
    return 1;
}

struct stream_query {
    simdev_stream_t stream;
    int status; /* its latest answer */
};

static bool stream_settled(void *arg)
{
    struct stream_query *q = arg;
    q->status = simdev_stream_query(q->stream);
    return q->status != PTO_RUNTIME_ERR_NOT_READY;
}

int ts_stream_query_settled(simdev_stream_t stream)
{
    struct stream_query q = {stream, PTO_RUNTIME_ERR_NOT_READY};
    (void)ts_poll_until(stream_settled, &q);
    return q.status;
}

struct sem_tickets {
    simdev_sem_t sem;
    uint64_t tickets;
    bool gone; /* simdev_sem_info failed */
};

static bool sem_has_tickets(void *arg)
{
    struct sem_tickets *w = arg;
    struct simdev_sem_info info;
    if (simdev_sem_info(w->sem, &info) != 0) {
        w->gone = true;
        return true;
    }
    return info.tickets >= w->tickets;
}

int ts_sem_wait_tickets(simdev_sem_t sem, uint64_t tickets)
{
    struct sem_tickets w = {sem, tickets, false};
    return ts_poll_until(sem_has_tickets, &w) && !w.gone;
}

size_t ts_count_lines_with(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t capacity = 0, count = 0;
    while (getline(&line, &capacity, f) >= 0)
        count += strstr(line, needle) != NULL;
    free(line);
    fclose(f);
    return count;
}

void ts_log_init(struct ts_log *log, int capacity)
{
    pthread_mutex_init(&log->lock, NULL);
    log->entries = calloc((size_t)capacity, sizeof *log->entries);
    assert_non_null(log->entries);
    log->count = 0;
    log->capacity = capacity;
    log->overflow = 0;
}

void ts_log_destroy(struct ts_log *log)
{
    free(log->entries);
    pthread_mutex_destroy(&log->lock);
}

void ts_log_append(struct ts_log *log, int value)
{
    pthread_mutex_lock(&log->lock);
    if (log->count < log->capacity)
        log->entries[log->count++] = value;
    else
        log->overflow++;
    pthread_mutex_unlock(&log->lock);
}

int ts_log_count(struct ts_log *log)
{
    pthread_mutex_lock(&log->lock);
    int count = log->count;
    pthread_mutex_unlock(&log->lock);
    return count;
}

static int magic_count(const void *args, size_t args_size)
{
    struct ts_count_args a;
    if (args == NULL || args_size != sizeof a)
        return TS_BAD_ARGS;
    memcpy(&a, args, sizeof a);
    if (a.magic != TS_COUNT_MAGIC)
        return TS_BAD_ARGS;
    atomic_fetch_add(a.counter, 1);
    return 0;
}

int ts_magic_count_fn(const struct simdev_aicpu_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    return magic_count(args, args_size);
}

int ts_magic_count_core_fn(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    (void)ctx;
    return magic_count(args, args_size);
}

int ts_count_u64_host_fn(void *user_data)
{
    atomic_fetch_add((_Atomic uint64_t *)user_data, 1);
    return 0;
}

void ts_enqueue_count(simdev_stream_t stream, _Atomic uint64_t *counter)
{
    struct ts_count_args a = {counter, TS_COUNT_MAGIC};
    assert_int_equal(simdev_launch_aicpu(stream, ts_magic_count_fn, 1, &a, sizeof a), 0);
}

uint64_t ts_load_u64(_Atomic uint64_t *counter)
{
    return atomic_load(counter);
}

bool ts_runtime_hbg(void)
{
    const char *runtime = getenv("SIMPLER_RUNTIME");
    return runtime && strcmp(runtime, "hbg") == 0;
}

void ts_read_text(const char *path, char *text, size_t capacity)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, capacity - 1, f);
    fclose(f);
    text[n] = 0;
}

void ts_trace_files_remove(const char *path)
{
    char other[4096];
    size_t stem = strlen(path);
    if (stem > 5 && strcmp(path + stem - 5, ".json") == 0)
        stem -= 5;
    const char *suffixes[] = {".deps.json", ".deps.dot"};
    for (int i = 0; i < 2; i++) {
        snprintf(other, sizeof other, "%.*s%s", (int)stem, path, suffixes[i]);
        unlink(other);
    }
    unlink(path);
}
