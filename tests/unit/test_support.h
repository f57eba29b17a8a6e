/*
 * test_support.h — shared helpers for simpler's unit tests.
 *
 * Owns: device set-up/tear-down fixtures and small synchronisation helpers
 * (gates) that tests use instead of sleeping. Tests include it after the
 * cmocka headers.
 */
#ifndef SIMPLER_TEST_SUPPORT_H
#define SIMPLER_TEST_SUPPORT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "simpler/simdev.h"
#include "simpler/simdev_fault.h"

/* Resets device 0 and configures it with a small topology (2 AICPU threads,
 * 1 AIC + 2 AIV cores, 64 MiB, watchdog 0 = off, default spin); makes it the
 * current device. Returns 0 (cmocka group/test setup signature). */
int ts_device_setup(void **state);

/* Checks that device 0 holds no memory, then resets it. */
int ts_device_teardown(void **state);

/* Like ts_device_setup, with an explicit configuration. */
void ts_device_setup_config(const struct simdev_config *config);

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

#endif /* SIMPLER_TEST_SUPPORT_H */
