/*
 * test_status.c — status codes and simpler_strerror.
 *
 * Owns: the ABI values of every code in status.h and the names strerror
 * gives them. Touches no device.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "simpler/status.h"
#include "test_support.h"

struct named_code {
    int value;       /* the macro's value */
    int abi_value;   /* the value the ABI fixes */
    const char *name;
};

#define CODE(macro, abi) { macro, abi, #macro }

static const struct named_code all_codes[] = {
    CODE(PTO_RUNTIME_OK, 0),
    CODE(PTO_RUNTIME_ERR_INTERNAL, -1000),
    CODE(PTO_RUNTIME_ERR_UNSUPPORTED, -1001),
    CODE(PTO_RUNTIME_ERR_PREPARED_INCOMPATIBLE, -1002),
    CODE(PTO_RUNTIME_ERR_INVALID_STATE, -1003),
    CODE(PTO_RUNTIME_ERR_INVALID_ARGUMENT, -1004),
    CODE(PTO_RUNTIME_ERR_CALLABLE_COUNT_EXCEEDED, -1005),
    CODE(PTO_RUNTIME_ERR_CALLABLE_BYTES_EXCEEDED, -1006),
    CODE(PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT, -1007),
    CODE(PTO_RUNTIME_ERR_CAPACITY_EXCEEDED, -1008),
    CODE(PTO_RUNTIME_ERR_DEVICE_LOST, -1100),
    CODE(PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY, -1101),
    CODE(PTO_RUNTIME_ERR_NOT_READY, -1102),
    CODE(PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED, -1103),
    CODE(PTO_RUNTIME_ERR_CAPTURE_INVALIDATED, -1104),
    CODE(PTO_RUNTIME_ERR_CAPTURE_UNJOINED, -1105),
    CODE(PTO_RUNTIME_ERR_TIMEOUT, -1106),
    CODE(PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY, -1107),
};
#define CODE_COUNT (sizeof all_codes / sizeof all_codes[0])

static const char UNKNOWN[] = "unknown status";

static void every_code_has_its_abi_value(void **state)
{
    (void)state;
    for (size_t i = 0; i < CODE_COUNT; i++) {
        /* a mismatch: the ABI moved, and every caller compiled earlier misreads the code */
        assert_int_equal(all_codes[i].value, all_codes[i].abi_value);
    }
}

static void strerror_names_every_code_by_its_macro_name(void **state)
{
    (void)state;
    for (size_t i = 0; i < CODE_COUNT; i++) {
        const char *name = simpler_strerror(all_codes[i].value);
        assert_non_null(name);
        /* a different string: logs and tests cannot find the code by its name */
        assert_string_equal(name, all_codes[i].name);
    }
}

static void strerror_names_are_distinct(void **state)
{
    (void)state;
    for (size_t i = 0; i < CODE_COUNT; i++)
        for (size_t j = i + 1; j < CODE_COUNT; j++)
            /* equal: two codes cannot be told apart in a log */
            assert_string_not_equal(simpler_strerror(all_codes[i].value),
                                    simpler_strerror(all_codes[j].value));
}

static void strerror_names_the_orchestrator_band_for_unnamed_codes_in_minus_1_to_minus_99(void **state)
{
    (void)state;
    const char *band = simpler_strerror(-50);
    assert_non_null(band);
    assert_string_not_equal(band, UNKNOWN); /* unknown: device run codes lose their band */
    /* every unnamed code of the band names the same band, including the end */
    assert_string_equal(simpler_strerror(-15), band);
    assert_string_equal(simpler_strerror(-99), band);
}

static void strerror_names_each_run_code_by_its_constant(void **state)
{
    (void)state;
    /* a band name here: the run status would not say which failure it was */
    assert_string_equal(simpler_strerror(-SIMPLER_ORCH_ERR_SCOPE), "SIMPLER_ORCH_ERR_SCOPE");
    assert_string_equal(simpler_strerror(-5), "SIMPLER_ORCH_ERR_INVALID_ARGS");
    assert_string_equal(simpler_strerror(-3), "SIMPLER_ORCH_ERR_TASK_WINDOW_DEADLOCK");
    assert_string_equal(simpler_strerror(-12), "SIMPLER_ORCH_ERR_BAD_CONFIG");
    assert_string_equal(simpler_strerror(-13), "SIMPLER_ORCH_ERR_BAD_PACKET");
    assert_string_equal(simpler_strerror(-14), "SIMPLER_ORCH_ERR_STALE_BINDING");
    assert_string_equal(simpler_strerror(-100), "SIMPLER_SCHED_ERR_TIMEOUT");
}

static void strerror_names_the_scheduler_band_for_minus_101_to_minus_199(void **state)
{
    (void)state;
    const char *band = simpler_strerror(-150);
    assert_non_null(band);
    assert_string_not_equal(band, UNKNOWN);
    /* equal: a scheduler stall reads as an orchestrator error */
    assert_string_not_equal(band, simpler_strerror(-50));
    assert_string_equal(simpler_strerror(-101), band);
    assert_string_equal(simpler_strerror(-199), band);
}

static void strerror_names_the_kernel_band_for_minus_200_to_minus_999(void **state)
{
    (void)state;
    const char *band = simpler_strerror(-200);
    assert_string_not_equal(band, UNKNOWN);
    /* equal: a kernel failure reads as a scheduler stall */
    assert_string_not_equal(band, simpler_strerror(-150));
    assert_string_equal(simpler_strerror(-999), band);
    assert_string_equal(simpler_strerror(-555), band);
}

static void strerror_returns_unknown_status_for_codes_outside_every_band(void **state)
{
    (void)state;
    /* the gaps in the host and device bands, past their ends, positive values, extremes */
    static const int unknown_codes[] = {-1009, -1050, -1099, -1108, -1150, -1199, -1200,
                                        -5000, 1, 7, 1000, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof unknown_codes / sizeof unknown_codes[0]; i++) {
        const char *name = simpler_strerror(unknown_codes[i]);
        assert_non_null(name); /* NULL: a caller printing the name crashes */
        assert_string_equal(name, UNKNOWN);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_code_has_its_abi_value, ts_device_setup,
                                        ts_device_teardown),
        cmocka_unit_test_setup_teardown(strerror_names_every_code_by_its_macro_name,
                                        ts_device_setup, ts_device_teardown),
        cmocka_unit_test_setup_teardown(strerror_names_are_distinct, ts_device_setup,
                                        ts_device_teardown),
        cmocka_unit_test_setup_teardown(
            strerror_names_the_orchestrator_band_for_unnamed_codes_in_minus_1_to_minus_99,
            ts_device_setup, ts_device_teardown),
        cmocka_unit_test_setup_teardown(strerror_names_each_run_code_by_its_constant,
                                        ts_device_setup, ts_device_teardown),
        cmocka_unit_test_setup_teardown(
            strerror_names_the_kernel_band_for_minus_200_to_minus_999, ts_device_setup,
            ts_device_teardown),
        cmocka_unit_test_setup_teardown(
            strerror_names_the_scheduler_band_for_minus_101_to_minus_199, ts_device_setup,
            ts_device_teardown),
        cmocka_unit_test_setup_teardown(
            strerror_returns_unknown_status_for_codes_outside_every_band, ts_device_setup,
            ts_device_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
