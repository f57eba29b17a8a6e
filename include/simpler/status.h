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
 * Device-reported run codes. A run's status is the negated code (so
 * SIMPLER_ORCH_ERR_INVALID_ARGS reaches the host as -5). The orchestrator
 * band is 1..99, the scheduler band 100..199, and a kernel reports its own
 * failure in 200..999 (simpler_kernel_fail in kernel.h).
 */
#define SIMPLER_ORCH_ERR_SCOPE 1                /* scope misuse: unbalanced end, too deep, AUTO in MANUAL */
#define SIMPLER_ORCH_ERR_HEAP_DEADLOCK 2        /* output heap full and can never drain */
#define SIMPLER_ORCH_ERR_TASK_WINDOW_DEADLOCK 3 /* task window full, oldest task pinned by an open scope */
#define SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW 4    /* dependency lists do not fit the pool */
#define SIMPLER_ORCH_ERR_INVALID_ARGS 5         /* malformed task or tensor arguments */
#define SIMPLER_ORCH_ERR_RING_TIMEOUT 6         /* a ring wait made no progress for the watchdog period */
#define SIMPLER_ORCH_ERR_SYNC_START 7           /* sync-start block count can never be resident at once */
#define SIMPLER_ORCH_ERR_TENSOR_WAIT_TIMEOUT 8  /* read/write of a tensor element waited too long */
#define SIMPLER_ORCH_ERR_EXPLICIT_FATAL 9       /* the orchestration called fatal */
#define SIMPLER_ORCH_ERR_SCOPE_TASK_OVERFLOW 10 /* one scope holds more tasks than its ring's window */
#define SIMPLER_ORCH_ERR_TENSORMAP_OVERFLOW 11  /* TensorMap full and no entry ever became free */
#define SIMPLER_ORCH_ERR_BAD_CONFIG 12          /* run config or topology unusable */
#define SIMPLER_ORCH_ERR_BAD_PACKET 13          /* kernel mode: the device refused the invocation packet
                                                   (sizes, counts vs the signature, a view outside its
                                                   buffer, a host tensor) */
#define SIMPLER_ORCH_ERR_STALE_BINDING 14       /* kernel mode: the packet names a closed context or a
                                                   callable slot it does not hold; nothing it points at
                                                   was followed */
#define SIMPLER_SCHED_ERR_TIMEOUT 100           /* scheduler made no progress for its watchdog period */
#define SIMPLER_KERNEL_ERR_MIN 200              /* kernel-reported failures: 200..999 */
#define SIMPLER_KERNEL_ERR_MAX 999

/*
 * Returns a static, NUL-terminated name for `status` (for example
 * "PTO_RUNTIME_ERR_INVALID_STATE"). Codes in -1..-999 name their band
 * ("device orchestrator error" / "device scheduler error"); any other
 * unknown value returns "unknown status". The named run codes above
 * (negated) have their own names, for example "SIMPLER_ORCH_ERR_INVALID_ARGS".
 * Never returns NULL.
 */
const char *simpler_strerror(int status);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_STATUS_H */
