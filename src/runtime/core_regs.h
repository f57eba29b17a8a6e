/*
 * runtime/core_regs.h — the encoding of the core register protocol.
 *
 * Owns: what the values in a core's 64-bit doorbell and condition words
 * mean (the protocol itself is docs/runtime.md, "Dispatch protocol"):
 *   doorbell = the last dispatch id published to the core (a producer
 *              index; per core, monotonic), or id | RT_DOORBELL_EXIT;
 *   cond     = FIN(id) = (id << 1) | 1: the last dispatch id the core
 *              finished (it runs its ids in order, so every earlier one
 *              has finished too).
 * A core loop says hello with FIN(base + 1), base being the doorbell it
 * found at start; the first dispatch id of a run is base + 2. Dispatch id
 * `id` uses payload slot id % RT_CORE_QUEUE, so a scheduler may have up to
 * RT_CORE_QUEUE ids published and unfinished on one core. The core loop
 * (core_loop.c) and the schedulers (scheduler.c, dispatch.c) both use only
 * these.
 */
#ifndef SIMPLER_RUNTIME_CORE_REGS_H
#define SIMPLER_RUNTIME_CORE_REGS_H

#include <stdbool.h>
#include <stdint.h>

#define RT_DOORBELL_EXIT (1ull << 62)

/* The dispatch id a doorbell value carries (without the exit bit). */
static inline uint64_t rt_doorbell_id(uint64_t doorbell)
{
    return doorbell & ~RT_DOORBELL_EXIT;
}

/* The doorbell value that tells a core to end the round after `id`. */
static inline uint64_t rt_doorbell_exit(uint64_t next_id)
{
    return next_id | RT_DOORBELL_EXIT;
}

static inline bool rt_doorbell_is_exit(uint64_t doorbell)
{
    return (doorbell & RT_DOORBELL_EXIT) != 0;
}

/* The first dispatch id of a run, from the doorbell both sides read
 * before it (the core loop's base; hello is FIN(base + 1)). */
static inline uint64_t rt_first_dispatch_id(uint64_t doorbell)
{
    return rt_doorbell_id(doorbell) + 2;
}

static inline uint64_t rt_cond_fin(uint64_t id)
{
    return (id << 1) | 1;
}

/* The dispatch id a condition value names (the last one finished). */
static inline uint64_t rt_cond_id(uint64_t cond)
{
    return cond >> 1;
}

/* Payload slots per core: how many dispatch ids may be published and not
 * yet finished on one core (a power of two). */
#define RT_CORE_QUEUE 4u

/* Which of a core's payload slots dispatch `id` uses. */
static inline uint32_t rt_payload_index(uint64_t id)
{
    return (uint32_t)(id & (RT_CORE_QUEUE - 1));
}

#endif /* SIMPLER_RUNTIME_CORE_REGS_H */
