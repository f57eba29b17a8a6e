/*
 * common/status.c — names of simpler's status codes (simpler_strerror).
 *
 * Owns: the code-to-name table. The values themselves live in status.h.
 */
#include "simpler/status.h"

#define NAME(code) \
    case code:     \
        return #code

const char *simpler_strerror(int status)
{
    switch (status) {
        NAME(PTO_RUNTIME_OK);
        NAME(PTO_RUNTIME_ERR_INTERNAL);
        NAME(PTO_RUNTIME_ERR_UNSUPPORTED);
        NAME(PTO_RUNTIME_ERR_PREPARED_INCOMPATIBLE);
        NAME(PTO_RUNTIME_ERR_INVALID_STATE);
        NAME(PTO_RUNTIME_ERR_INVALID_ARGUMENT);
        NAME(PTO_RUNTIME_ERR_CALLABLE_COUNT_EXCEEDED);
        NAME(PTO_RUNTIME_ERR_CALLABLE_BYTES_EXCEEDED);
        NAME(PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT);
        NAME(PTO_RUNTIME_ERR_CAPACITY_EXCEEDED);
        NAME(PTO_RUNTIME_ERR_DEVICE_LOST);
        NAME(PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY);
        NAME(PTO_RUNTIME_ERR_NOT_READY);
        NAME(PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED);
        NAME(PTO_RUNTIME_ERR_CAPTURE_INVALIDATED);
        NAME(PTO_RUNTIME_ERR_CAPTURE_UNJOINED);
        NAME(PTO_RUNTIME_ERR_TIMEOUT);
        NAME(PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
#define RUN_NAME(code) \
    case -(code):      \
        return #code
        RUN_NAME(SIMPLER_ORCH_ERR_SCOPE);
        RUN_NAME(SIMPLER_ORCH_ERR_HEAP_DEADLOCK);
        RUN_NAME(SIMPLER_ORCH_ERR_TASK_WINDOW_DEADLOCK);
        RUN_NAME(SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW);
        RUN_NAME(SIMPLER_ORCH_ERR_INVALID_ARGS);
        RUN_NAME(SIMPLER_ORCH_ERR_RING_TIMEOUT);
        RUN_NAME(SIMPLER_ORCH_ERR_SYNC_START);
        RUN_NAME(SIMPLER_ORCH_ERR_TENSOR_WAIT_TIMEOUT);
        RUN_NAME(SIMPLER_ORCH_ERR_EXPLICIT_FATAL);
        RUN_NAME(SIMPLER_ORCH_ERR_SCOPE_TASK_OVERFLOW);
        RUN_NAME(SIMPLER_ORCH_ERR_TENSORMAP_OVERFLOW);
        RUN_NAME(SIMPLER_ORCH_ERR_BAD_CONFIG);
        RUN_NAME(SIMPLER_ORCH_ERR_BAD_PACKET);
        RUN_NAME(SIMPLER_ORCH_ERR_STALE_BINDING);
        RUN_NAME(SIMPLER_SCHED_ERR_TIMEOUT);
#undef RUN_NAME
    default:
        break;
    }
    if (status <= -1 && status >= -99)
        return "device orchestrator error";
    if (status <= -100 && status >= -199)
        return "device scheduler error";
    if (status <= -SIMPLER_KERNEL_ERR_MIN && status >= -SIMPLER_KERNEL_ERR_MAX)
        return "kernel-reported error";
    return "unknown status";
}
