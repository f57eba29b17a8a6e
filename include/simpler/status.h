/*
 * simpler/status.h — the status codes every simpler call returns.
 *
 * Owns: the one table of status codes (value, name, message) and the
 * constants it generates. Every fallible function in simpler returns 0 on
 * success or one negative code from this file. The bands never overlap:
 *
 *   -1 .. -999      codes latched on the device by a run and reported
 *                   negated: orchestrator 1..99, scheduler 100..199,
 *                   kernel-reported 200..999.
 *   -1000 .. -1099  host runtime codes (DESIGN.md section 9).
 *   -1100 .. -1199  device codes reported by the device layer (simdev).
 *
 * Every value below is part of the ABI: a code never changes its value, and
 * a retired value is never reused.
 */
#ifndef SIMPLER_STATUS_H
#define SIMPLER_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The status table, libuv's UV_ERRNO_MAP pattern: X(NAME, value, "message")
 * for every code a call returns. The enum below, simpler_status_name and
 * simpler_strerror are all expanded from it, so a code added here has its
 * constant, name and message at once. Messages are lowercase phrases
 * without a final period, fit to follow "failed: ".
 */
#define SIMPLER_STATUS_MAP(X)                                                                      \
    X(PTO_RUNTIME_OK, 0, "success")                                                                \
    /* Host band. */                                                                               \
    X(PTO_RUNTIME_ERR_INTERNAL, -1000, "internal error: a runtime invariant is broken")            \
    X(PTO_RUNTIME_ERR_UNSUPPORTED, -1001, "capability not available")                              \
    X(PTO_RUNTIME_ERR_PREPARED_INCOMPATIBLE, -1002, "prepared state does not fit the call")        \
    X(PTO_RUNTIME_ERR_INVALID_STATE, -1003,                                                        \
      "valid call in the wrong lifecycle state, ownership or device")                              \
    X(PTO_RUNTIME_ERR_INVALID_ARGUMENT, -1004, "invalid argument")                                 \
    X(PTO_RUNTIME_ERR_CALLABLE_COUNT_EXCEEDED, -1005, "too many callables (max_callables)")        \
    X(PTO_RUNTIME_ERR_CALLABLE_BYTES_EXCEEDED, -1006,                                              \
      "registered callables would exceed callable_bytes")                                          \
    X(PTO_RUNTIME_ERR_CALLABLE_NOT_RESIDENT, -1007, "no callable registered under that id")        \
    X(PTO_RUNTIME_ERR_CAPACITY_EXCEEDED, -1008, "frozen capacity too small for the run")           \
    X(PTO_RUNTIME_ERR_DEPENDENCY_FAILED, -1009, "cancelled: a task it depends on failed")          \
    X(PTO_RUNTIME_ERR_PEER_LOST, -1010, "a rank of the cluster died or stopped answering")         \
    /* Device band. */                                                                             \
    X(PTO_RUNTIME_ERR_DEVICE_LOST, -1100, "device lost: it hit an unrecoverable fault")            \
    X(PTO_RUNTIME_ERR_OUT_OF_DEVICE_MEMORY, -1101, "out of device memory")                         \
    X(PTO_RUNTIME_ERR_NOT_READY, -1102, "not ready: work still pending (not a failure)")           \
    X(PTO_RUNTIME_ERR_CAPTURE_UNSUPPORTED, -1103, "operation not allowed while capturing")         \
    X(PTO_RUNTIME_ERR_CAPTURE_INVALIDATED, -1104,                                                  \
      "capture invalidated by an earlier forbidden operation")                                     \
    X(PTO_RUNTIME_ERR_CAPTURE_UNJOINED, -1105, "a forked stream never joined the capture")         \
    X(PTO_RUNTIME_ERR_TIMEOUT, -1106, "a bounded device-side wait expired")                        \
    X(PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY, -1107, "out of host memory for runtime bookkeeping")

/*
 * The device-reported run codes, X(NAME, value, "message") with the
 * POSITIVE value the device latches; a run's status is the value negated
 * (SIMPLER_ORCH_ERR_INVALID_ARGS reaches the host as -5), and that negated
 * status is what simpler_status_name and simpler_strerror look up.
 * Orchestrator codes are 1..99, scheduler codes 100..199; a kernel reports
 * its own failure in 200..999 (simpler_kernel_fail in kernel.h), which has
 * no entries here.
 */
#define SIMPLER_RUN_STATUS_MAP(X)                                                                  \
    X(SIMPLER_ORCH_ERR_SCOPE, 1,                                                                   \
      "scope misuse: unbalanced end, too deep, or AUTO inside MANUAL")                             \
    X(SIMPLER_ORCH_ERR_HEAP_DEADLOCK, 2, "output heap full and can never drain")                   \
    X(SIMPLER_ORCH_ERR_TASK_WINDOW_DEADLOCK, 3,                                                    \
      "task window full and its oldest task pinned by an open scope")                              \
    X(SIMPLER_ORCH_ERR_DEP_POOL_OVERFLOW, 4, "dependency lists do not fit the pool")               \
    X(SIMPLER_ORCH_ERR_INVALID_ARGS, 5, "malformed task or tensor arguments")                      \
    X(SIMPLER_ORCH_ERR_RING_TIMEOUT, 6, "a ring wait made no progress for the watchdog period")    \
    X(SIMPLER_ORCH_ERR_SYNC_START, 7, "sync-start block count can never be resident at once")      \
    X(SIMPLER_ORCH_ERR_TENSOR_WAIT_TIMEOUT, 8, "a tensor element read or write waited too long")   \
    X(SIMPLER_ORCH_ERR_EXPLICIT_FATAL, 9, "the orchestration called fatal")                        \
    X(SIMPLER_ORCH_ERR_SCOPE_TASK_OVERFLOW, 10,                                                    \
      "one scope holds more tasks than its ring's window")                                         \
    X(SIMPLER_ORCH_ERR_TENSORMAP_OVERFLOW, 11, "TensorMap full and no entry ever became free")     \
    X(SIMPLER_ORCH_ERR_BAD_CONFIG, 12, "run config or topology unusable")                          \
    /* Kernel mode: sizes, counts vs the signature, a view outside its buffer, a host tensor. */   \
    X(SIMPLER_ORCH_ERR_BAD_PACKET, 13, "kernel mode: the device refused the invocation packet")   \
    /* Kernel mode: nothing the packet points at was followed. */                                  \
    X(SIMPLER_ORCH_ERR_STALE_BINDING, 14,                                                          \
      "kernel mode: the packet names a closed context or a callable slot it does not hold")        \
    X(SIMPLER_ORCH_ERR_NOT_HOST_VISIBLE, 15,                                                       \
      "host_build_graph: the value is produced by a task of this run")                             \
    X(SIMPLER_SCHED_ERR_TIMEOUT, 100, "the scheduler made no progress for its watchdog period")

/*
 * The constants, generated from the two tables: an enum rather than
 * #defines, so that each value is written once, in its table row. Each
 * constant has type int; none can be tested in #if.
 */
#define SIMPLER_STATUS_ENUM_(name, value, message) name = (value),
enum { SIMPLER_STATUS_MAP(SIMPLER_STATUS_ENUM_) };
enum { SIMPLER_RUN_STATUS_MAP(SIMPLER_STATUS_ENUM_) };
#undef SIMPLER_STATUS_ENUM_

#define SIMPLER_KERNEL_ERR_MIN 200 /* kernel-reported failures: 200..999 */
#define SIMPLER_KERNEL_ERR_MAX 999

/*
 * Returns a static, NUL-terminated name for `status`: the constant's name
 * for every code in the tables ("PTO_RUNTIME_ERR_INVALID_STATE", and for a
 * negated run code "SIMPLER_ORCH_ERR_INVALID_ARGS" for -5). An unnamed code
 * in a run band names its band: "device orchestrator error" (-1..-99),
 * "device scheduler error" (-100..-199), "kernel-reported error"
 * (-200..-999). Any other value returns "unknown status". Never returns
 * NULL.
 */
const char *simpler_status_name(int status);

/*
 * Returns a static, NUL-terminated human message for `status`: the
 * table's message for every code in the tables (for example "invalid
 * argument" for PTO_RUNTIME_ERR_INVALID_ARGUMENT). An unnamed code in a run
 * band, or a value outside every band, gets a message saying so. Never
 * returns NULL. For the constant's name, use simpler_status_name.
 */
const char *simpler_strerror(int status);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_STATUS_H */
