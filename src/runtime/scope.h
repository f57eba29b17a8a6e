/*
 * runtime/scope.h — the orchestrator's scope stack.
 *
 * Owns: one open scope's record, opening and closing scopes (a scope holds
 * every task it submitted until it closes), and the question every
 * reservation asks of them: is the scope that submitted a task still open.
 * Orchestrator only: no atomics.
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

/* True when the scope that submitted the task in `s` is still open. */
bool rt_scope_open(struct rt_run *run, struct rt_slot *s);

/* Opens a scope of `mode` (enum simpler_scope_mode) inside the current
 * one: 0, or the run's error (negated) after latching SCOPE for a bad
 * mode, a stack already SIMPLER_SCOPE_MAX_DEPTH deep, or an AUTO scope
 * inside a MANUAL one. */
int rt_scope_push(struct rt_run *run, uint32_t mode);
/* Closes the innermost scope: its tasks lose the scope's hold. Returns the
 * rings (bit i: ring i) of the tasks this made CONSUMED, which the caller
 * advances once each (rt_ring_advance), after the call, not once per task
 * (each advance is a lock and fenced stores on lines the cores read). */
uint32_t rt_scope_pop(struct rt_run *run);

#endif /* SIMPLER_RUNTIME_SCOPE_H */
