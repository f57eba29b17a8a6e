/*
 * common/task_id.h — what a task id is made of.
 *
 * Owns: the split of a 64-bit task id into its ring (the top 16 bits) and
 * its ring-local index: the device runtime mints ids this way, and the
 * trace exporters and tools read them back.
 */
#ifndef SIMPLER_COMMON_TASK_ID_H
#define SIMPLER_COMMON_TASK_ID_H

#include <stdint.h>

/* Task ids: ring in the top 16 bits, the ring-local index below. */
#define RT_LOCAL_BITS 48

static inline uint64_t rt_task_id(uint32_t ring, uint64_t local)
{
    return ((uint64_t)ring << RT_LOCAL_BITS) | local;
}
static inline uint32_t rt_id_ring(uint64_t id) { return (uint32_t)(id >> RT_LOCAL_BITS); }
static inline uint64_t rt_id_local(uint64_t id)
{
    return id & ((1ull << RT_LOCAL_BITS) - 1);
}

#endif /* SIMPLER_COMMON_TASK_ID_H */
