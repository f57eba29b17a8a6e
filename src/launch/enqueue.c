/*
 * launch/enqueue.c — the host side's small device jobs: sizing a run's
 * arena, drawing an arena's identity, and enqueueing the callable loader
 * and the kernel-mode registry ops.
 *
 * Owns: these wrappers only; what each job does on the device is the
 * device runtime's (runtime/loader.c, runtime/kernel_mode.c).
 */
#include <stdatomic.h>

#include "launch/launch.h"
#include "runtime/entries.h"
#include "runtime/layout.h"

int rt_arena_bytes(const struct rt_config *config, const struct simdev_config *topo,
                   size_t *bytes)
{
    if (!config || !topo || !bytes)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_layout l;
    int rc = rt_layout_compute(config, topo->aic_cores + topo->aiv_cores, &l);
    if (rc)
        return rc;
    *bytes = l.total;
    return 0;
}

uint64_t rt_arena_nonce(void)
{
    static _Atomic uint64_t drawn;
    for (;;) {
        /* splitmix64's finalizer: a bijection, so distinct counts give
         * distinct nonces, and none of them is a small number that plain
         * memory often holds */
        uint64_t x = atomic_fetch_add_explicit(&drawn, 1, memory_order_relaxed) +
                     UINT64_C(0x9E3779B97F4A7C15);
        x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
        x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
        x ^= x >> 31;
        if (x != 0)
            return x;
    }
}

int rt_callable_load_enqueue(simdev_stream_t stream, const void *image, size_t bytes,
                             const struct simpler_run_config *base,
                             struct rt_callable_record *record)
{
    if (!stream || !image || !bytes || !base || !record)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_load_args a = {image, bytes, record, *base};
    return simdev_launch_aicpu(stream, rt_callable_load_main, 1, &a, sizeof a);
}

int rt_callable_unload_enqueue(simdev_stream_t stream, struct rt_callable_record *record)
{
    if (!stream || !record)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    return simdev_launch_aicpu(stream, rt_callable_unload_main, 1, &record, sizeof record);
}

int rt_kernel_mode_register_enqueue(simdev_stream_t stream, struct rt_kernel_mode_binding *binding,
                               uint64_t generation)
{
    if (!stream || !binding || !generation)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_kernel_mode_register_args ra = {binding, generation};
    return simdev_launch_aicpu(stream, rt_kernel_mode_register_main, 1, &ra, sizeof ra);
}

int rt_kernel_mode_unregister_enqueue(simdev_stream_t stream, struct rt_kernel_mode_binding *binding,
                                 uint64_t context_generation)
{
    if (!stream || !binding || !context_generation)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct rt_kernel_mode_register_args ra = {binding, context_generation};
    return simdev_launch_aicpu(stream, rt_kernel_mode_unregister_main, 1, &ra, sizeof ra);
}
