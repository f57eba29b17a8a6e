/*
 * watchdog.h — the test executables' hang reporter.
 *
 * Owns: one helper thread per test process that sleeps until a deadline and,
 * if the process is still running then, writes every thread's stack to stderr
 * and aborts, so a hung test fails with a diagnosis instead of a bare CTest
 * timeout. It must not touch the code under test: it only reads
 * /proc/self/task, runs gdb and signals threads once the deadline has passed.
 *
 * Every test executable links watchdog.c (tests/CMakeLists.txt) and the
 * watchdog starts by itself, from a constructor, before main. Its deadline
 * is read from the environment:
 *
 *   SIMPLER_TEST_WATCHDOG_S    seconds until the report (default
 *                              TS_WATCHDOG_DEFAULT_S; 0 = no watchdog).
 *                              CMake sets it a little below each test's
 *                              CTest TIMEOUT.
 *   SIMPLER_TEST_WATCHDOG_GDB  0 = do not try gdb, report with backtrace()
 *                              from each thread (the fallback) directly.
 *
 * The report: a "simpler watchdog:" banner, then gdb's `thread apply all bt`
 * when gdb is installed and can attach, otherwise one backtrace_symbols_fd()
 * block per thread ("simpler watchdog: thread <tid>"), then abort().
 */
#ifndef SIMPLER_TEST_WATCHDOG_H
#define SIMPLER_TEST_WATCHDOG_H

/* The deadline when SIMPLER_TEST_WATCHDOG_S is not set: below the unit and
 * scenario tests' CTest TIMEOUT of 120 s. */
#define TS_WATCHDOG_DEFAULT_S 110u

#endif /* SIMPLER_TEST_WATCHDOG_H */
