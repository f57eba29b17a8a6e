/*
 * test_status.c — the status table, simpler_status_name and simpler_strerror.
 *
 * Owns: the ABI values of every code in status.h, the names
 * simpler_status_name gives them and the messages simpler_strerror gives
 * them. Touches no device.
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

/*
 * The ABI list, written out by hand so that it does not follow the table:
 * if a value in status.h moves, this list still holds the old one.
 */
struct named_code {
    int value;     /* the constant's value */
    int abi_value; /* the value the ABI fixes */
    int status;    /* what a call or run reports: the value, negated for run codes */
    const char *name;
};

#define CODE(constant, abi) { constant, abi, constant, #constant }
#define RUN_CODE(constant, abi) { constant, abi, -(constant), #constant }

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
    CODE(PTO_RUNTIME_ERR_DEPENDENCY_FAILED, -1009),
    CODE(PTO_RUNTIME_ERR_PEER_LOST, -1010),
    CODE(PTO_RUNTIME_ERR_DEVICE_LOST, -1100),
    CODE(PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY, -1101),
    CODE(PTO_RUNTIME_ERR_NOT_READY, -1102),
    CODE(PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED, -1103),
    CODE(PTO_RUNTIME_ERR_CAPTURE_INVALIDATED, -1104),
    CODE(PTO_RUNTIME_ERR_CAPTURE_UNJOINED, -1105),
    CODE(PTO_RUNTIME_ERR_TIMEOUT, -1106),
    CODE(PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY, -1107),
    RUN_CODE(SIMPLER_ORCH_ERR_SCOPE, 1),
    RUN_CODE(SIMPLER_ORCH_ERR_HEAP_DEADLOCK, 2),
    RUN_CODE(SIMPLER_ORCH_ERR_TASK_WINDOW_DEADLOCK, 3),
    RUN_CODE(SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW, 4),
    RUN_CODE(SIMPLER_ORCH_ERR_INVALID_ARGS, 5),
    RUN_CODE(SIMPLER_ORCH_ERR_RING_TIMEOUT, 6),
    RUN_CODE(SIMPLER_ORCH_ERR_SYNC_START, 7),
    RUN_CODE(SIMPLER_ORCH_ERR_TENSOR_WAIT_TIMEOUT, 8),
    RUN_CODE(SIMPLER_ORCH_ERR_EXPLICIT_FATAL, 9),
    RUN_CODE(SIMPLER_ORCH_ERR_SCOPE_TASK_OVERFLOW, 10),
    RUN_CODE(SIMPLER_ORCH_ERR_TENSORMAP_OVERFLOW, 11),
    RUN_CODE(SIMPLER_ORCH_ERR_BAD_CONFIG, 12),
    RUN_CODE(SIMPLER_ORCH_ERR_BAD_PACKET, 13),
    RUN_CODE(SIMPLER_ORCH_ERR_STALE_BINDING, 14),
    RUN_CODE(SIMPLER_ORCH_ERR_NOT_HOST_VISIBLE, 15),
    RUN_CODE(SIMPLER_SCHED_ERR_TIMEOUT, 100),
};
#define CODE_COUNT (sizeof all_codes / sizeof all_codes[0])

/* The tables of status.h, expanded the way a caller of the map would. */
struct table_entry {
    int status; /* as reported: run codes negated */
    const char *name;
    const char *message;
};

#define ENTRY(name, value, message) { (value), #name, message },
#define RUN_ENTRY(name, value, message) { -(value), #name, message },
static const struct table_entry table[] = {
    SIMPLER_STATUS_MAP(ENTRY) SIMPLER_RUN_STATUS_MAP(RUN_ENTRY)
};
#undef ENTRY
#undef RUN_ENTRY
#define TABLE_COUNT (sizeof table / sizeof table[0])

static const char UNKNOWN[] = "unknown status";
static const char UNKNOWN_MESSAGE[] = "not a simpler status code";
static const char ORCH_BAND_NAME[] = "device orchestrator error";
static const char SCHED_BAND_NAME[] = "device scheduler error";
static const char KERNEL_BAND_NAME[] = "kernel-reported error";
static const char ORCH_BAND_MESSAGE[] =
    "the device orchestrator failed the run with an unnamed code";
static const char SCHED_BAND_MESSAGE[] = "the device scheduler failed the run with an unnamed code";
static const char KERNEL_BAND_MESSAGE[] = "a kernel failed the run with its own code";

/* The gaps in the host and device bands, past their ends, positive values, extremes. */
static const int unknown_codes[] = {-1011, -1050, -1099, -1108, -1150, -1199, -1200,
                                    -5000, 1,     7,     1000,  INT_MAX, INT_MIN};
#define UNKNOWN_COUNT (sizeof unknown_codes / sizeof unknown_codes[0])

static void every_code_has_its_abi_value(void **state)
{
    (void)state;
    for (size_t i = 0; i < CODE_COUNT; i++) {
        /* a mismatch: the ABI moved, and every caller compiled earlier misreads the code */
        assert_int_equal(all_codes[i].value, all_codes[i].abi_value);
    }
}

static void the_table_holds_exactly_the_codes_of_the_abi_list(void **state)
{
    (void)state;
    /* more: a code was added to the table without its ABI value pinned here;
     * fewer: a code the ABI promises was dropped from the table */
    assert_int_equal(TABLE_COUNT, CODE_COUNT);
    for (size_t i = 0; i < TABLE_COUNT; i++) {
        size_t found = CODE_COUNT;
        for (size_t j = 0; j < CODE_COUNT; j++)
            if (strcmp(table[i].name, all_codes[j].name) == 0)
                found = j;
        /* CODE_COUNT: the table names a code the ABI list does not know */
        assert_int_not_equal(found, CODE_COUNT);
        /* another value: the table and the constant disagree on the status callers see */
        assert_int_equal(table[i].status, all_codes[found].status);
    }
}

static void every_table_code_has_a_distinct_value_name_and_message(void **state)
{
    (void)state;
    for (size_t i = 0; i < TABLE_COUNT; i++) {
        assert_non_null(table[i].message);
        /* 0: strerror would print nothing for this code */
        assert_int_not_equal(strlen(table[i].message), 0);
        for (size_t j = i + 1; j < TABLE_COUNT; j++) {
            /* equal: two codes would be one status; a caller cannot tell them apart */
            assert_int_not_equal(table[i].status, table[j].status);
            assert_string_not_equal(table[i].name, table[j].name);
            /* equal: a log line would not say which failure it was */
            assert_string_not_equal(table[i].message, table[j].message);
        }
    }
}

static void every_named_run_code_lies_in_the_band_its_prefix_says(void **state)
{
    (void)state;
    static const char ORCH[] = "SIMPLER_ORCH_ERR_";
    static const char SCHED[] = "SIMPLER_SCHED_ERR_";
    int run_codes = 0;
    for (size_t i = 0; i < TABLE_COUNT; i++) {
        int code = -table[i].status;
        if (strncmp(table[i].name, ORCH, sizeof ORCH - 1) == 0) {
            /* outside 1..99: an orchestrator failure reads as another band's */
            assert_in_range(code, 1, 99);
            run_codes++;
        } else if (strncmp(table[i].name, SCHED, sizeof SCHED - 1) == 0) {
            /* outside 100..199: a scheduler stall reads as an orchestrator or kernel error */
            assert_in_range(code, 100, 199);
            run_codes++;
        } else {
            /* in -1..-999: a host or device code would read as a run failure */
            assert_true(table[i].status == 0 || table[i].status <= -1000);
        }
    }
    /* not 16: the run table lost or gained codes the ABI list does not show */
    assert_int_equal(run_codes, 16);
}

static void status_name_names_every_code_by_its_macro_name(void **state)
{
    (void)state;
    for (size_t i = 0; i < CODE_COUNT; i++) {
        const char *name = simpler_status_name(all_codes[i].status);
        assert_non_null(name);
        /* a different string: logs and tests cannot find the code by its name */
        assert_string_equal(name, all_codes[i].name);
    }
}

static void status_names_are_distinct(void **state)
{
    (void)state;
    for (size_t i = 0; i < CODE_COUNT; i++)
        for (size_t j = i + 1; j < CODE_COUNT; j++)
            /* equal: two codes cannot be told apart in a log */
            assert_string_not_equal(simpler_status_name(all_codes[i].status),
                                    simpler_status_name(all_codes[j].status));
}

static void status_name_names_the_orchestrator_band_for_unnamed_codes_in_minus_1_to_minus_99(
    void **state)
{
    (void)state;
    const char *band = simpler_status_name(-50);
    assert_non_null(band);
    assert_string_not_equal(band, UNKNOWN); /* unknown: device run codes lose their band */
    /* a different string: a caller matching on the documented band name misses it */
    assert_string_equal(band, ORCH_BAND_NAME);
    /* every unnamed code of the band names the same band, including the end */
    assert_string_equal(simpler_status_name(-16), band);
    assert_string_equal(simpler_status_name(-99), band);
}

static void status_name_names_each_run_code_by_its_constant(void **state)
{
    (void)state;
    /* a band name here: the run status would not say which failure it was */
    assert_string_equal(simpler_status_name(-SIMPLER_ORCH_ERR_SCOPE), "SIMPLER_ORCH_ERR_SCOPE");
    assert_string_equal(simpler_status_name(-5), "SIMPLER_ORCH_ERR_INVALID_ARGS");
    assert_string_equal(simpler_status_name(-3), "SIMPLER_ORCH_ERR_TASK_WINDOW_DEADLOCK");
    assert_string_equal(simpler_status_name(-12), "SIMPLER_ORCH_ERR_BAD_CONFIG");
    assert_string_equal(simpler_status_name(-13), "SIMPLER_ORCH_ERR_BAD_PACKET");
    assert_string_equal(simpler_status_name(-14), "SIMPLER_ORCH_ERR_STALE_BINDING");
    assert_string_equal(simpler_status_name(-100), "SIMPLER_SCHED_ERR_TIMEOUT");
    /* the positive code is not a status: a name here means the negation was dropped */
    assert_string_equal(simpler_status_name(SIMPLER_ORCH_ERR_INVALID_ARGS), UNKNOWN);
}

static void status_name_names_the_scheduler_band_for_minus_101_to_minus_199(void **state)
{
    (void)state;
    const char *band = simpler_status_name(-150);
    assert_non_null(band);
    assert_string_not_equal(band, UNKNOWN);
    /* equal: a scheduler stall reads as an orchestrator error */
    assert_string_not_equal(band, simpler_status_name(-50));
    /* a different string: a caller matching on the documented band name misses it */
    assert_string_equal(band, SCHED_BAND_NAME);
    assert_string_equal(simpler_status_name(-101), band);
    assert_string_equal(simpler_status_name(-199), band);
}

static void status_name_names_the_kernel_band_for_minus_200_to_minus_999(void **state)
{
    (void)state;
    const char *band = simpler_status_name(-200);
    assert_string_not_equal(band, UNKNOWN);
    /* equal: a kernel failure reads as a scheduler stall */
    assert_string_not_equal(band, simpler_status_name(-150));
    /* a different string: a caller matching on the documented band name misses it */
    assert_string_equal(band, KERNEL_BAND_NAME);
    assert_string_equal(simpler_status_name(-999), band);
    assert_string_equal(simpler_status_name(-555), band);
}

static void status_name_returns_unknown_status_for_codes_outside_every_band(void **state)
{
    (void)state;
    for (size_t i = 0; i < UNKNOWN_COUNT; i++) {
        const char *name = simpler_status_name(unknown_codes[i]);
        assert_non_null(name); /* NULL: a caller printing the name crashes */
        assert_string_equal(name, UNKNOWN);
    }
}

static void strerror_gives_each_table_code_its_message_not_its_name(void **state)
{
    (void)state;
    for (size_t i = 0; i < TABLE_COUNT; i++) {
        const char *message = simpler_strerror(table[i].status);
        assert_non_null(message);
        /* another message: strerror reads another row, or a band fallback, not this code's */
        assert_string_equal(message, table[i].message);
        /* equal to the name: strerror still returns the name, not the message */
        assert_string_not_equal(message, simpler_status_name(table[i].status));
    }
}

static void strerror_gives_the_documented_message_for_sample_codes(void **state)
{
    (void)state;
    /* Pinned by hand, not read from the table: a different string means
     * strerror returns the wrong column (the name) or the wrong row. */
    assert_string_equal(simpler_strerror(PTO_RUNTIME_OK), "success");
    assert_string_equal(simpler_strerror(PTO_RUNTIME_ERR_INVALID_ARGUMENT), "invalid argument");
    assert_string_equal(simpler_strerror(PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY),
                        "out of device memory");
    /* the run code's message, found through its negated status: another string
     * means the negation was lost on the way to the table */
    assert_string_equal(simpler_strerror(-SIMPLER_ORCH_ERR_INVALID_ARGS),
                        "malformed task or tensor arguments");
    assert_string_equal(simpler_strerror(-SIMPLER_SCHED_ERR_TIMEOUT),
                        "the scheduler made no progress for its watchdog period");
}

static void strerror_gives_each_run_band_its_own_message_for_unnamed_codes(void **state)
{
    (void)state;
    static const struct {
        int status;
        const char *message;
    } samples[] = {
        {-16, ORCH_BAND_MESSAGE},    {-50, ORCH_BAND_MESSAGE},    {-99, ORCH_BAND_MESSAGE},
        {-101, SCHED_BAND_MESSAGE},  {-150, SCHED_BAND_MESSAGE},  {-199, SCHED_BAND_MESSAGE},
        {-200, KERNEL_BAND_MESSAGE}, {-555, KERNEL_BAND_MESSAGE}, {-999, KERNEL_BAND_MESSAGE},
    };
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        const char *message = simpler_strerror(samples[i].status);
        assert_non_null(message); /* NULL: a caller printing the message crashes */
        /* another band's message: the failure is blamed on the wrong side;
         * the unknown message: the run code loses its band */
        assert_string_equal(message, samples[i].message);
        /* equal to the name: strerror still returns the band name */
        assert_string_not_equal(message, simpler_status_name(samples[i].status));
    }
    /* equal: two bands cannot be told apart by their messages */
    assert_string_not_equal(ORCH_BAND_MESSAGE, SCHED_BAND_MESSAGE);
    assert_string_not_equal(SCHED_BAND_MESSAGE, KERNEL_BAND_MESSAGE);
    assert_string_not_equal(ORCH_BAND_MESSAGE, KERNEL_BAND_MESSAGE);
}

static void strerror_returns_the_unknown_message_for_codes_outside_every_band(void **state)
{
    (void)state;
    for (size_t i = 0; i < UNKNOWN_COUNT; i++) {
        const char *message = simpler_strerror(unknown_codes[i]);
        assert_non_null(message); /* NULL: a caller printing the message crashes */
        /* another string: a value that is no code was given some code's meaning */
        assert_string_equal(message, UNKNOWN_MESSAGE);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(every_code_has_its_abi_value),
        SIMPLER_TEST(the_table_holds_exactly_the_codes_of_the_abi_list),
        SIMPLER_TEST(every_table_code_has_a_distinct_value_name_and_message),
        SIMPLER_TEST(every_named_run_code_lies_in_the_band_its_prefix_says),
        SIMPLER_TEST(status_name_names_every_code_by_its_macro_name),
        SIMPLER_TEST(status_names_are_distinct),
        SIMPLER_TEST(status_name_names_the_orchestrator_band_for_unnamed_codes_in_minus_1_to_minus_99),
        SIMPLER_TEST(status_name_names_each_run_code_by_its_constant),
        SIMPLER_TEST(status_name_names_the_kernel_band_for_minus_200_to_minus_999),
        SIMPLER_TEST(status_name_names_the_scheduler_band_for_minus_101_to_minus_199),
        SIMPLER_TEST(status_name_returns_unknown_status_for_codes_outside_every_band),
        SIMPLER_TEST(strerror_gives_each_table_code_its_message_not_its_name),
        SIMPLER_TEST(strerror_gives_the_documented_message_for_sample_codes),
        SIMPLER_TEST(strerror_gives_each_run_band_its_own_message_for_unnamed_codes),
        SIMPLER_TEST(strerror_returns_the_unknown_message_for_codes_outside_every_band),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
