/*
 * common/status.c — names and messages of simpler's status codes
 * (simpler_status_name, simpler_strerror).
 *
 * Owns: the lookups only. Values, names and messages all come from the
 * tables in status.h (SIMPLER_STATUS_MAP, SIMPLER_RUN_STATUS_MAP); nothing
 * here lists a code by hand.
 */
#include "simpler/status.h"

/*
 * The bands the tables must stay inside (status.h's header comment). A
 * named run code in the kernel band would shadow kernel-reported codes; a
 * host or device code in -1..-999 would read as a run failure. Two table
 * entries with one value fail to compile below (duplicate case labels).
 */
#define CHECK_STATUS_BAND(name, value, message)                                                    \
    _Static_assert((value) == 0 || ((value) <= -1000 && (value) >= -1199),                         \
                   #name " lies outside the host (-1000..-1099) and device (-1100..-1199) bands");
#define CHECK_RUN_STATUS_BAND(name, value, message)                                                \
    _Static_assert((value) >= 1 && (value) < SIMPLER_KERNEL_ERR_MIN,                               \
                   #name " lies outside the orchestrator (1..99) and scheduler (100..199) bands");
SIMPLER_STATUS_MAP(CHECK_STATUS_BAND)
SIMPLER_RUN_STATUS_MAP(CHECK_RUN_STATUS_BAND)
#undef CHECK_STATUS_BAND
#undef CHECK_RUN_STATUS_BAND

/* Which run band an unnamed negative status falls in. */
enum run_band { NOT_A_RUN_BAND, ORCHESTRATOR_BAND, SCHEDULER_BAND, KERNEL_BAND };

static enum run_band run_band_of(int status)
{
    if (status <= -1 && status >= -99)
        return ORCHESTRATOR_BAND;
    if (status <= -100 && status >= -199)
        return SCHEDULER_BAND;
    if (status <= -SIMPLER_KERNEL_ERR_MIN && status >= -SIMPLER_KERNEL_ERR_MAX)
        return KERNEL_BAND;
    return NOT_A_RUN_BAND;
}

const char *simpler_status_name(int status)
{
    switch (status) {
#define STATUS_NAME(name, value, message)                                                          \
    case (value):                                                                                  \
        return #name;
#define RUN_STATUS_NAME(name, value, message)                                                      \
    case -(value):                                                                                 \
        return #name;
        SIMPLER_STATUS_MAP(STATUS_NAME)
        SIMPLER_RUN_STATUS_MAP(RUN_STATUS_NAME)
#undef STATUS_NAME
#undef RUN_STATUS_NAME
    default:
        break;
    }
    switch (run_band_of(status)) {
    case ORCHESTRATOR_BAND:
        return "device orchestrator error";
    case SCHEDULER_BAND:
        return "device scheduler error";
    case KERNEL_BAND:
        return "kernel-reported error";
    case NOT_A_RUN_BAND:
        break;
    }
    return "unknown status";
}

const char *simpler_strerror(int status)
{
    switch (status) {
#define STATUS_MESSAGE(name, value, message)                                                       \
    case (value):                                                                                  \
        return message;
#define RUN_STATUS_MESSAGE(name, value, message)                                                   \
    case -(value):                                                                                 \
        return message;
        SIMPLER_STATUS_MAP(STATUS_MESSAGE)
        SIMPLER_RUN_STATUS_MAP(RUN_STATUS_MESSAGE)
#undef STATUS_MESSAGE
#undef RUN_STATUS_MESSAGE
    default:
        break;
    }
    switch (run_band_of(status)) {
    case ORCHESTRATOR_BAND:
        return "the device orchestrator failed the run with an unnamed code";
    case SCHEDULER_BAND:
        return "the device scheduler failed the run with an unnamed code";
    case KERNEL_BAND:
        return "a kernel failed the run with its own code";
    case NOT_A_RUN_BAND:
        break;
    }
    return "not a simpler status code";
}
