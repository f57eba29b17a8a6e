/*
 * test_support.c — device fixtures and gates shared by the unit tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

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

int ts_device_setup(void **state)
{
    (void)state;
    struct simdev_config config;
    assert_int_equal(simdev_config_default(&config), 0);
    config.aicpu_threads = 2;
    config.aic_cores = 1;
    config.aiv_cores = 2;
    config.memory_bytes = 64u << 20;
    config.watchdog_ms = 0;
    ts_device_setup_config(&config);
    return 0;
}

int ts_device_teardown(void **state)
{
    (void)state;
    struct simdev_mem_info info;
    assert_int_equal(simdev_mem_get_info(0, &info), 0);
    assert_int_equal(info.in_use, 0); /* nonzero: the test leaked device memory */
    assert_int_equal(simdev_device_reset(0), 0);
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
