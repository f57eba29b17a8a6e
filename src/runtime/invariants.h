/*
 * runtime/invariants.h — how the device runtime asserts its invariants.
 *
 * Owns: RT_ASSERT_INVARIANT and the rules every check follows. The checks
 * themselves are declared with their structures: a ring's heads and tails
 * (ring.h), a task slot's life (task.h), a ready queue's positions
 * (ready_queue.h). Every check is a pure look that changes nothing.
 *
 * Each check returns true when the structure is consistent, so a test can
 * call it directly (on a fresh structure: true; on a corrupted one:
 * false). Each says which thread may call it, and why every field it
 * reads is one its caller owns at that point or one whose every value a
 * concurrent writer could store satisfies it: a check that could be false
 * in a correct run is a wrong check.
 *
 * RT_ASSERT_INVARIANT(cond) asserts cond where NDEBUG is not defined:
 * the Debug and sanitizer builds (CMAKE_BUILD_TYPE=Debug) check at every
 * state change. The normal build (RelWithDebInfo, which defines NDEBUG)
 * compiles it to nothing: cond is not evaluated (sizeof only marks its
 * variables used), so the hot path is unchanged.
 */
#ifndef SIMPLER_RUNTIME_INVARIANTS_H
#define SIMPLER_RUNTIME_INVARIANTS_H

#include <assert.h>

#ifdef NDEBUG
#define RT_ASSERT_INVARIANT(cond) ((void)sizeof(!(cond)))
#else
#define RT_ASSERT_INVARIANT(cond) assert(cond)
#endif

#endif /* SIMPLER_RUNTIME_INVARIANTS_H */
