/*
 * runtime/scope.c — the orchestrator's scope stack (scope.h).
 *
 * Owns: opening and closing scopes (a scope holds every task it submitted
 * until it closes) and the question whether a task's scope is still open.
 * Orchestrator only: the stack is its alone, no atomics. Must not touch
 * the rings: a closing scope only drops its holds and names the rings of
 * the tasks that made CONSUMED, which its caller advances (ring.c).
 */
#include "runtime/cpu.h"
#include "runtime/run.h"
#include "runtime/scope.h"
#include "runtime/task.h"
#include "simpler/orchestration.h"
#include "simpler/status.h"

/* True when the scope that submitted the task in `s` is still open. */
bool rt_scope_open(struct rt_run *run, struct rt_slot *s)
{
    if (run->hbg) {
        /* A host build reuses no slot: the task is still at the place its
         * submit pushed it unless its scope closed (the place is then at
         * or above the top, or another task's). */
        uint32_t pos = s->hbg_scope_pos;
        return pos < run->scope_task_top && run->scope_tasks[pos] == s;
    }
    struct rt_task *t = rt_slot_task(run, s);
    return s->scope_depth < run->scope_depth &&
           run->scopes[s->scope_depth].serial == t->scope_serial;
}

int rt_scope_push(struct rt_run *run, uint32_t mode)
{
    if (mode != SIMPLER_SCOPE_AUTO && mode != SIMPLER_SCOPE_MANUAL)
        return rt_fail_negated(run, SIMPLER_ORCH_ERR_SCOPE);
    if (run->scope_depth >= SIMPLER_SCOPE_MAX_DEPTH)
        return rt_fail_negated(run, SIMPLER_ORCH_ERR_SCOPE);
    if (run->scope_depth > 0 && mode == SIMPLER_SCOPE_AUTO &&
        run->scopes[run->scope_depth - 1].mode == SIMPLER_SCOPE_MANUAL)
        /* inference cannot resume inside MANUAL */
        return rt_fail_negated(run, SIMPLER_ORCH_ERR_SCOPE);
    struct rt_scope *sc = &run->scopes[run->scope_depth++];
    sc->serial = run->next_scope_serial++;
    sc->mode = mode;
    sc->begin = run->scope_task_top;
    return 0;
}

uint32_t rt_scope_pop(struct rt_run *run)
{
    struct rt_scope *sc = &run->scopes[run->scope_depth - 1];
    uint32_t begin = sc->begin;
    run->scope_depth--;
    uint32_t rings = 0;
    for (uint32_t i = begin; i < run->scope_task_top; i++) {
        if (i + RT_PREFETCH_AHEAD < run->scope_task_top)
            rt_prefetch_write(run->scope_tasks[i + RT_PREFETCH_AHEAD]);
        struct rt_slot *s = run->scope_tasks[i];
        uint32_t ring = s->ring;
        if (rt_slot_drop(s))
            rings |= 1u << ring;
    }
    run->scope_task_top = begin;
    return rings;
}
