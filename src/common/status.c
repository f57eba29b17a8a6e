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
    default:
        break;
    }
    if (status <= -1 && status >= -99)
        return "device orchestrator error";
    if (status <= -100 && status >= -999)
        return "device scheduler error";
    return "unknown status";
}
