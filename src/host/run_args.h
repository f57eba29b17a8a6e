/*
 * host/run_args.h — the checks of a program-mode call's arguments.
 *
 * Owns: what makes a run argument acceptable (a descriptor as tensor.h
 * makes it, a view inside its buffer, host buffers that alias exactly or
 * not at all) and the byte range a view touches. Keeps no state: the owned
 * snapshot is the prepared call's (prepared_call.h), staging the working
 * set's (working_set.h).
 */
#ifndef SIMPLER_HOST_RUN_ARGS_H
#define SIMPLER_HOST_RUN_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "simpler/simpler.h"

/* Structural checks of a run's args, before any state: counts, every
 * tensor a descriptor as tensor.h makes it whose view lies inside its
 * buffer, and host buffers that alias exactly or not at all. 0 or
 * INVALID_ARGUMENT. */
int sp_run_args_check(const struct simpler_args *args);

/* True when `t` is a run argument prepare accepts; then [*lo, *hi) is the
 * byte range its view touches (through the overflow-checked view helper). */
bool sp_arg_span(const struct simpler_tensor *t, uint64_t *lo, uint64_t *hi);

#endif /* SIMPLER_HOST_RUN_ARGS_H */
