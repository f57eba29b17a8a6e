/*
 * runtime/scope.h — the orchestrator's scope stack.
 *
 * Owns: one open scope's record and the question every reservation asks
 * of it: is the scope that submitted a task still open. Orchestrator only:
 * no atomics.
 */
#ifndef SIMPLER_RUNTIME_SCOPE_H
#define SIMPLER_RUNTIME_SCOPE_H

#include <stdbool.h>
#include <stdint.h>

struct rt_run;
struct rt_slot;

struct rt_scope {
    uint64_t serial;
    uint32_t mode;  /* enum simpler_scope_mode */
    uint32_t begin; /* index into scope_tasks */
};

/* True when the scope that submitted the task in `s` is still open
 * (orchestrator.c). */
bool rt_scope_open(struct rt_run *run, struct rt_slot *s);

#endif /* SIMPLER_RUNTIME_SCOPE_H */
