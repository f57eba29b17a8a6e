/*
 * simpler/simdev_fault.h — test-only fault injection and op counters.
 *
 * Owns: the interface tests of the layers above the device use to make the
 * Nth device operation of a kind fail, and to count what a call did. Not for
 * production code: nothing in src/ outside src/simdev may include it.
 *
 * Counting: every call of a kind that passes argument and state checks is an
 * *attempt*. An armed fault counts attempts of its kind from the moment it is
 * armed; the Nth attempt fails with the armed code and does nothing at all
 * (no work enqueued, nothing allocated or destroyed); the fault then disarms.
 * Every attempt that is not failed this way is *performed* and counted.
 */
#ifndef SIMPLER_SIMDEV_FAULT_H
#define SIMPLER_SIMDEV_FAULT_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/device.h"

#ifdef __cplusplus
extern "C" {
#endif

enum simdev_op_kind {
    SIMDEV_OP_STREAM_CREATE = 0,
    SIMDEV_OP_STREAM_DESTROY,
    SIMDEV_OP_EVENT_CREATE,
    SIMDEV_OP_EVENT_DESTROY,
    SIMDEV_OP_MALLOC,
    SIMDEV_OP_FREE,
    SIMDEV_OP_COPY,   /* simdev_memcpy, simdev_memcpy_async, simdev_memset_async */
    SIMDEV_OP_LAUNCH, /* simdev_launch_aicpu, simdev_launch_aicore, simdev_launch_host_func */
    SIMDEV_OP_RECORD, /* simdev_event_record */
    SIMDEV_OP_WAIT,   /* simdev_stream_wait_event */
    SIMDEV_OP_SYNC,   /* simdev_stream_sync, simdev_event_sync, simdev_device_sync */
    SIMDEV_OP_GRAPH_LAUNCH,
    SIMDEV_OP_SEM_CREATE,
    SIMDEV_OP_SEM_DESTROY,
    SIMDEV_OP_SEM, /* simdev_stream_sem_acquire, simdev_stream_sem_release */
    SIMDEV_OP_KIND_COUNT
};

/*
 * Arms one fault on `device`: the `nth` (>= 1) attempt of `kind` from now
 * fails with `code` (negative). Re-arming a kind replaces its fault.
 */
int simdev_fault_inject(int device, enum simdev_op_kind kind, uint64_t nth, int code);

/*
 * Execution faults: the `nth` (>= 1) op of `kind` (COPY, LAUNCH, RECORD or
 * WAIT only) queued on a stream of `device` from now is accepted as usual
 * but fails with `code` (negative) when it executes, as if the device had
 * failed it: a launch or copy does not run, a record completes carrying the
 * code, a wait still waits for its event and then fails. Its stream then
 * carries the code like any failed op. Ops recorded into a capture are not
 * counted. The fault then disarms; simdev_fault_clear disarms it too.
 */
int simdev_fault_inject_exec(int device, enum simdev_op_kind kind, uint64_t nth, int code);

/*
 * Replay faults: launch node `index` of executable graph `exec` (its
 * launches, indexed in capture order as simdev_graph_exec_launch_get
 * indexes them) fails with `code` (negative) the next time a replay runs
 * it, as if the device had failed it: the launch does not run, the nodes
 * after it in its lane and those that depend on it are skipped with the
 * code (a semaphore node still executes), and the replay fails with its
 * first failing node's code. Once: the next replay runs it again. Re-arming
 * replaces the fault; destroying the graph drops it (simdev_fault_clear
 * does not: the fault belongs to the graph, not to the device).
 * INVALID_ARGUMENT for a NULL exec, an index past the count or a code >= 0.
 */
int simdev_fault_inject_replay(simdev_graph_exec_t exec, size_t index, int code);

/* The same for staged copy node `index` (as simdev_graph_exec_staged_get
 * indexes them): the copy does not run, and what follows it is skipped
 * as above. Arming either kind replaces the graph's one armed fault. */
int simdev_fault_inject_replay_staged(simdev_graph_exec_t exec, size_t index, int code);

/* Disarms every fault on `device` (also execution faults), and the host fault. */
int simdev_fault_clear(int device);

/*
 * Host faults: the `nth` (>= 1) host allocation or thread creation simdev
 * makes from now — in any thread, for any device — fails. A call that needs
 * it undoes its partial work and returns PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY
 * (inside an asynchronous op, the op fails with it and its stream carries
 * it). The fault then disarms. simdev_host_alloc_count counts the attempts
 * since the process started, so a test can sweep every failure point of a
 * call: arm 1, 2, ... until the call succeeds.
 */
int simdev_fault_inject_host(uint64_t nth);
int simdev_host_alloc_count(uint64_t *count);

/* Writes the number of performed ops of `kind` on `device` to *count. */
int simdev_op_count(int device, enum simdev_op_kind kind, uint64_t *count);

/* Zeroes every op counter of `device`. */
int simdev_op_counts_reset(int device);

/* Name of a kind ("malloc", "launch", ...); "unknown" when out of range. */
const char *simdev_op_kind_name(enum simdev_op_kind kind);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_SIMDEV_FAULT_H */
