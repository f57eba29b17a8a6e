/*
 * vector.h — what the vector example's three parts agree on: the kernels'
 * func_ids and symbols, and the orchestration's entry symbol.
 *
 * Shared by vector_orch.c (submits by func_id), vector_kernels.c (defines
 * the symbols) and main.c (packs both into a callable).
 */
#ifndef EXAMPLES_VECTOR_H
#define EXAMPLES_VECTOR_H

#include <stdint.h>

#include "simpler/orchestration.h"

#define VECTOR_ENTRY "vector_orchestration"

enum vector_func_id { VECTOR_K_ADD = 0, VECTOR_K_ADD_SCALAR = 1, VECTOR_K_MUL = 2 };

/* Run arguments: a, b (IN), f (OUT), equal-length 1-D f32 tensors. */
void vector_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);

void kernel_add(int64_t *args);
void kernel_add_scalar(int64_t *args);
void kernel_mul(int64_t *args);

#endif /* EXAMPLES_VECTOR_H */
