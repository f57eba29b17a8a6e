/*
 * common/callable_rules.h — the rules a callable image's fields obey, shared
 * by the validator (common/callable_validate.c) and the builder
 * (host/callable_builder.c), so the builder refuses exactly what the validator
 * would.
 *
 * Owns: nothing but these predicates; each is pure and reads only what it
 * is given. Internal: not part of the ABI.
 */
#ifndef SIMPLER_COMMON_CALLABLE_RULES_H
#define SIMPLER_COMMON_CALLABLE_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "simpler/callable.h"

/* True when `name` is NUL-terminated within SIMPLER_CALLABLE_NAME_MAX bytes
 * and made of printable ASCII other than '/'; empty only if `may_be_empty`.
 * Reads no further than the terminator or the field's end. */
bool sp_callable_name_valid(const char *name, bool may_be_empty);

static inline bool sp_callable_direction_valid(int direction)
{
    return direction >= SIMPLER_DIR_SCALAR && direction <= SIMPLER_DIR_INOUT;
}

/* True when an orchestration signature with these counts fits the limits. */
static inline bool sp_callable_orch_counts_valid(uint32_t sig_count, uint32_t scalar_count)
{
    return sig_count <= SIMPLER_CALLABLE_MAX_ARGS && scalar_count <= sig_count &&
           scalar_count <= SIMPLER_CALLABLE_MAX_SCALARS &&
           sig_count - scalar_count <= SIMPLER_CALLABLE_MAX_TENSORS;
}

static inline bool sp_callable_func_id_valid(int32_t func_id)
{
    return func_id >= 0 && func_id < SIMPLER_CALLABLE_MAX_FUNC_ID;
}

static inline bool sp_callable_core_valid(uint32_t core)
{
    return core == SIMPLER_CORE_AIC || core == SIMPLER_CORE_AIV;
}

#endif /* SIMPLER_COMMON_CALLABLE_RULES_H */
