/*
 * rt_support.h — a harness for running orchestrations on the device
 * runtime directly (runtime/runtime.h), for the unit tests of the runtime
 * and the launch layer (it drives launch/launch.h, so a scenario test
 * cannot include it).
 *
 * Owns: the device-side allocations one run needs (arena, kernel table,
 * args, result block, edge log) and a run-and-wait helper. Tests include it
 * after the cmocka headers and test_support.h.
 */
#ifndef SIMPLER_RT_SUPPORT_H
#define SIMPLER_RT_SUPPORT_H

#include <stdbool.h>

#include "launch/launch.h"
#include "runtime/hbg.h"
#include "simpler/orchestration.h"

struct rt_harness {
    struct rt_launcher *launcher;
    simdev_stream_t stream;
    struct rt_config config;
    void *arena;
    size_t arena_bytes;
    uint64_t arena_nonce; /* rt_arena_nonce, drawn by rth_open: runs reuse clean queues */
    simpler_kernel_fn *kernels_dev;
    struct simpler_orch_args *args_dev;
    struct rt_run_result *result_dev;
    struct rt_edge *edges_dev;
    uint32_t edge_capacity;
    /* host_build_graph (SIMPLER_RUNTIME=hbg in the environment at rth_open,
     * as simpler_init reads it): rth_request gives each request what its
     * host build needs, read back from the kernel table and args the test
     * uploaded (kernel_present, host_args, host). One request's at a time:
     * a second rth_request rewrites them. */
    bool hbg;
    void *hbg_bank;
    size_t hbg_bank_bytes;
    uint8_t kernel_present[SIMPLER_MAX_FUNC_IDS];
    struct simpler_orch_args host_args;
    struct rt_hbg_host host;
    /* After rth_run: the device's result block and edge log, copied back. */
    struct rt_run_result result;
    struct rt_edge *edges;
};

/* ts_small_run_config's capacity as a runtime config, with short timeouts
 * (ring 2 s, scheduler 10 s, tensor 10 s), so a test's arena stays small. */
struct rt_config rth_small_config(void);

/* Allocates everything for runs with `config` (NULL = rth_small_config) on
 * the current device, logging up to edge_capacity edges. Asserts. */
void rth_open(struct rt_harness *h, const struct rt_config *config, uint32_t edge_capacity);
/* Frees it all (asserts). */
void rth_close(struct rt_harness *h);

/* Runs `entry` with `kernels` (count entries, host array of kernel
 * pointers) and `args` (NULL = none), waits, copies the result and edge
 * log back, and returns the stream's status (the run's status). */
int rth_run(struct rt_harness *h, simpler_orch_entry_fn entry, const simpler_kernel_fn *kernels,
            uint32_t count, const struct simpler_orch_args *args);

/* The request for one run of `entry` on the harness's device buffers, with
 * `kernel_count` kernels in its table (the caller fills table and args
 * first: under HBG the request's host view is read back from them). */
struct rt_run_request rth_request(struct rt_harness *h, simpler_orch_entry_fn entry,
                                  uint32_t kernel_count);

/* True when the edge log holds producer -> consumer. */
int rth_has_edge(const struct rt_harness *h, uint64_t producer, uint64_t consumer);

#endif /* SIMPLER_RT_SUPPORT_H */
