/*
 * watchdog.c — writes every thread's stack to stderr and aborts when a test
 * process outlives its deadline (contract in watchdog.h).
 *
 * Owns: the watchdog thread, the fallback's signal handler and its
 * semaphore. Must not touch the code under test: until the deadline the
 * thread only sleeps, so a passing test never meets it (and ThreadSanitizer
 * sees a thread that shares nothing with the others).
 *
 * The report prefers gdb (full stacks with arguments and source lines,
 * static functions included, and threads that are spinning); when gdb is not
 * installed or cannot attach (ptrace forbidden), each thread is signalled in
 * turn and writes its own backtrace_symbols_fd(), which names exported
 * functions only (executables are linked with exported symbols).
 */
#include "watchdog.h"

#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* gdb is killed (SIGALRM, armed before exec) if it has not finished by then. */
#define WATCHDOG_GDB_LIMIT_S 60u
/* How long the fallback waits for one signalled thread to write its stack;
 * a thread that never reaches its handler (blocked signals, or a TSan
 * thread spinning outside any intercepted call) is named and skipped. */
#define WATCHDOG_THREAD_ANSWER_S 2
#define WATCHDOG_MAX_FRAMES 64
/* The fallback's signal: ignored by default, so a stray one is harmless;
 * nothing in simpler uses it. */
#define WATCHDOG_SIGNAL SIGURG

/* Posted by watchdog_backtrace_handler when a thread has written its stack;
 * waited for by watchdog_report_with_signals, one thread at a time, so the
 * stacks do not interleave. */
static sem_t watchdog_thread_done;

/* Writes all of text to stderr (async-signal-safe). */
static void watchdog_write(const char *text, size_t length)
{
    while (length > 0) {
        ssize_t written = write(STDERR_FILENO, text, length);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return;
        text += written;
        length -= (size_t)written;
    }
}

static void watchdog_write_str(const char *text)
{
    watchdog_write(text, strlen(text));
}

/* Writes value in decimal (async-signal-safe: no stdio). */
static void watchdog_write_uint(unsigned long value)
{
    char digits[24];
    size_t at = sizeof digits;
    do {
        digits[--at] = (char)('0' + value % 10);
        value /= 10;
    } while (value > 0 && at > 0);
    watchdog_write(digits + at, sizeof digits - at);
}

/* SIMPLER_TEST_WATCHDOG_S, or the default when unset or unreadable. */
static unsigned watchdog_seconds_from_env(void)
{
    const char *text = getenv("SIMPLER_TEST_WATCHDOG_S");
    if (text == NULL || *text == '\0')
        return TS_WATCHDOG_DEFAULT_S;
    char *end;
    unsigned long seconds = strtoul(text, &end, 10);
    if (*end != '\0' || seconds > 86400ul)
        return TS_WATCHDOG_DEFAULT_S;
    return (unsigned)seconds;
}

/* Sleeps until `seconds` from now on the monotonic clock; wakes early only
 * when the whole process ends, which is the passing case. */
static void watchdog_sleep(unsigned seconds)
{
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += (time_t)seconds;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR) {
    }
}

/* Flushes what the test wrote to stdout (cmocka's "[ RUN ]" line names the
 * hung test) unless a hung thread holds the stream's lock. */
static void watchdog_flush_stdout(void)
{
    if (ftrylockfile(stdout) == 0) {
        fflush_unlocked(stdout);
        funlockfile(stdout);
    }
}

/* Copies the path of an executable gdb found on PATH into path; returns 1 if
 * found. */
static int watchdog_find_gdb(char *path, size_t path_size)
{
    const char *search = getenv("PATH");
    if (search == NULL)
        search = "/usr/bin:/bin";
    while (*search != '\0') {
        size_t dir_length = strcspn(search, ":");
        int length = snprintf(path, path_size, "%.*s/gdb", (int)dir_length, search);
        if (dir_length > 0 && length > 0 && (size_t)length < path_size && access(path, X_OK) == 0)
            return 1;
        search += dir_length;
        if (*search == ':')
            search++;
    }
    return 0;
}

/*
 * Runs `gdb -p <this process> -batch -ex "thread apply all bt"`, copying its
 * output to stderr. Returns 1 if gdb printed at least one frame ("#0 ..."),
 * 0 if it is not installed, is disabled, or could not attach (gdb exits 0
 * even then, hence the look at its output).
 */
static int watchdog_report_with_gdb(void)
{
    const char *use_gdb = getenv("SIMPLER_TEST_WATCHDOG_GDB");
    char gdb_path[512];
    if ((use_gdb != NULL && strcmp(use_gdb, "0") == 0) || !watchdog_find_gdb(gdb_path, sizeof gdb_path))
        return 0;

    char pid_text[24];
    snprintf(pid_text, sizeof pid_text, "%ld", (long)getpid());
    char *const argv[] = {
        gdb_path, "-nx", "-batch", "-p", pid_text,
        "-iex", "set debuginfod enabled off",
        "-ex", "set pagination off",
        "-ex", "set print thread-events off",
        "-ex", "info threads",
        "-ex", "thread apply all bt",
        NULL,
    };
    int output[2];
    if (pipe(output) != 0)
        return 0;
    /* Yama's ptrace_scope=1 lets a process trace only its descendants unless
     * it names a tracer; gdb is our child, tracing its parent. Fails
     * harmlessly (EINVAL) where Yama is absent. */
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    pid_t child = fork();
    if (child < 0) {
        close(output[0]);
        close(output[1]);
        return 0;
    }
    if (child == 0) {
        /* Only async-signal-safe calls between fork and exec. */
        dup2(output[1], STDOUT_FILENO);
        dup2(output[1], STDERR_FILENO);
        close(output[0]);
        close(output[1]);
        alarm(WATCHDOG_GDB_LIMIT_S);
        execv(gdb_path, argv);
        _exit(127);
    }
    close(output[1]);

    int printed_frame = 0, at_line_start = 1;
    char chunk[4096];
    ssize_t length;
    while ((length = read(output[0], chunk, sizeof chunk)) != 0) {
        if (length < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (ssize_t at = 0; at < length; at++) {
            if (at_line_start && chunk[at] == '#')
                printed_frame = 1;
            at_line_start = chunk[at] == '\n';
        }
        watchdog_write(chunk, (size_t)length);
    }
    close(output[0]);
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
    }
    return printed_frame;
}

/* Runs on the signalled thread: writes its id and its stack, then tells the
 * watchdog it is done. backtrace() was called once by the watchdog before
 * any signal was sent, so the unwinder is loaded and this allocates nothing. */
static void watchdog_backtrace_handler(int signo)
{
    (void)signo;
    int saved_errno = errno;
    void *frames[WATCHDOG_MAX_FRAMES];
    int count = backtrace(frames, WATCHDOG_MAX_FRAMES);
    watchdog_write_str("simpler watchdog: thread ");
    watchdog_write_uint((unsigned long)syscall(SYS_gettid));
    watchdog_write_str("\n");
    backtrace_symbols_fd(frames, count, STDERR_FILENO);
    sem_post(&watchdog_thread_done);
    errno = saved_errno;
}

/* Waits (bounded) for the signalled thread's handler; returns 1 if it ran. */
static int watchdog_wait_for_answer(void)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += WATCHDOG_THREAD_ANSWER_S;
    int rc;
    while ((rc = sem_timedwait(&watchdog_thread_done, &deadline)) != 0 && errno == EINTR) {
    }
    return rc == 0;
}

/* The fallback: signals every other thread of the process, one at a time,
 * and lets each write its own stack. */
static void watchdog_report_with_signals(void)
{
    void *warm_up[1];
    backtrace(warm_up, 1); /* loads the unwinder outside the handler */
    sem_init(&watchdog_thread_done, 0, 0);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = watchdog_backtrace_handler;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(WATCHDOG_SIGNAL, &action, NULL);

    pid_t self = (pid_t)syscall(SYS_gettid);
    DIR *tasks = opendir("/proc/self/task");
    if (tasks == NULL) {
        watchdog_write_str("simpler watchdog: cannot list /proc/self/task\n");
        return;
    }
    struct dirent *entry;
    while ((entry = readdir(tasks)) != NULL) {
        pid_t tid = (pid_t)strtol(entry->d_name, NULL, 10);
        if (tid <= 0 || tid == self)
            continue;
        if (syscall(SYS_tgkill, getpid(), tid, WATCHDOG_SIGNAL) != 0)
            continue; /* the thread ended meanwhile */
        if (!watchdog_wait_for_answer()) {
            watchdog_write_str("simpler watchdog: thread ");
            watchdog_write_uint((unsigned long)tid);
            watchdog_write_str(" did not answer (it blocks the signal, as a sanitizer's own thread does, or never took it)\n");
        }
    }
    closedir(tasks);
}

static void *watchdog_main(void *arg)
{
    unsigned seconds = (unsigned)(uintptr_t)arg;
    watchdog_sleep(seconds);

    watchdog_flush_stdout();
    watchdog_write_str("\nsimpler watchdog: ");
    watchdog_write_str(program_invocation_short_name);
    watchdog_write_str(" (pid ");
    watchdog_write_uint((unsigned long)getpid());
    watchdog_write_str(") still running after ");
    watchdog_write_uint(seconds);
    watchdog_write_str(" s (SIMPLER_TEST_WATCHDOG_S); the stack of every thread follows\n");
    if (watchdog_report_with_gdb()) {
        watchdog_write_str("simpler watchdog: end of gdb's report\n");
    } else {
        watchdog_write_str("simpler watchdog: each thread's backtrace() "
                           "(gdb not installed, disabled or unable to attach):\n");
        watchdog_report_with_signals();
    }
    watchdog_write_str("simpler watchdog: aborting\n");
    abort();
}

/* Starts the watchdog before main in every test executable. A process that
 * cannot start it runs without one (and says so). */
__attribute__((constructor)) static void watchdog_start(void)
{
    unsigned seconds = watchdog_seconds_from_env();
    if (seconds == 0)
        return;
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attr, watchdog_main, (void *)(uintptr_t)seconds) != 0)
        watchdog_write_str("simpler watchdog: cannot start the watchdog thread\n");
    pthread_attr_destroy(&attr);
}
