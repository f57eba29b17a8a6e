/*
 * simpler/status.h — the status codes every simpler call returns.
 *
 * Owns: the numeric values of all status codes and their names.
 * Every fallible function in simpler returns 0 on success or one negative
 * code from this file. The bands never overlap:
 *
 *   -1 .. -999      codes latched on the device by a run and reported
 *                   negated: orchestrator 1..99, scheduler 100..999.
 *   -1000 .. -1099  host runtime codes (DESIGN.md section 9; exact values
 *                   are part of the ABI).
 *   -1100 .. -1199  device codes reported by the device layer (simdev).
 */
#ifndef SIMPLER_STATUS_H
#define SIMPLER_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#define PTO_RUNTIME_OK 0

/* Host band. */
#define PTO_RUNTIME_ERR_INTERNAL (-1000)              /* broken invariant */
#define PTO_RUNTIME_ERR_UNSUPPORTED (-1001)           /* capability not available */
#define PTO_RUNTIME_ERR_PREPARED_INCOMPATIBLE (-1002) /* prepared state does not fit the call */
#define PTO_RUNTIME_ERR_INVALID_STATE (-1003)         /* valid call, wrong lifecycle/ownership/device */
#define PTO_RUNTIME_ERR_INVALID_ARGUMENT (-1004)      /* structural argument error, checked first */
#define PTO_RUNTIME_ERR_CALLABLE_COUNT_EXCEEDED (-1005)
#define PTO_RUNTIME_ERR_CALLABLE_BYTES_EXCEEDED (-1006)
#define PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT (-1007)
#define PTO_RUNTIME_ERR_CAPACITY_EXCEEDED (-1008)     /* frozen capacity too small */

/* Device band. */
#define PTO_RUNTIME_ERR_DEVICE_LOST (-1100)          /* the device hit an unrecoverable fault */
#define PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY (-1101) /* allocation beyond device capacity */
#define PTO_RUNTIME_ERR_NOT_READY (-1102)            /* query: work still pending (not a failure) */
#define PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED (-1103)  /* operation forbidden while capturing */
#define PTO_RUNTIME_ERR_CAPTURE_INVALIDATED (-1104)  /* capture broken by an earlier forbidden op */
#define PTO_RUNTIME_ERR_CAPTURE_UNJOINED (-1105)     /* a forked stream never joined back */
#define PTO_RUNTIME_ERR_TIMEOUT (-1106)              /* a bounded device-side wait expired */
#define PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY (-1107)   /* host allocation for bookkeeping failed */

/*
 * Returns a static, NUL-terminated name for `status` (for example
 * "PTO_RUNTIME_ERR_INVALID_STATE"). Codes in -1..-999 name their band
 * ("device orchestrator error" / "device scheduler error"); any other
 * unknown value returns "unknown status". Never returns NULL.
 */
const char *simpler_strerror(int status);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_STATUS_H */
