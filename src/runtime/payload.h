/*
 * runtime/payload.h — what a core runs for one dispatch id.
 *
 * Owns: the per-core dispatch payload, the memory between a scheduler's
 * doorbell and the core loop's FIN (core_regs.h has the register values
 * and which payload slot an id uses). Must not hold anything a core does
 * not read.
 */
#ifndef SIMPLER_RUNTIME_PAYLOAD_H
#define SIMPLER_RUNTIME_PAYLOAD_H

#include <stdint.h>

#include "simpler/kernel.h"

/* Per-core dispatch payload (RT_CORE_QUEUE per core, chosen by
 * rt_payload_index of the dispatch id):
 * written by the scheduler before the doorbell (release), read by the core
 * after it (acquire); the core writes ctx.failure before FIN. */
struct rt_dispatch {
    simpler_kernel_fn fn;
    int64_t args[SIMPLER_KERNEL_ARGS];
    struct simpler_kernel_context ctx;
};

#endif /* SIMPLER_RUNTIME_PAYLOAD_H */
