/*
 * matmul.h — what the matmul example's three parts agree on: the kernel's
 * func_id and symbol, the orchestration's entry symbol and its arguments.
 */
#ifndef EXAMPLES_MATMUL_H
#define EXAMPLES_MATMUL_H

#include <stdint.h>

#include "simpler/orchestration.h"

#define MATMUL_ENTRY "matmul_orchestration"

enum matmul_func_id { MATMUL_K_GEMM_TILE = 0 };

/* The kernel's scalar: how it treats the C tile. */
enum matmul_gemm_mode { MATMUL_GEMM_OVERWRITE = 0, MATMUL_GEMM_ACCUMULATE = 1 };

/*
 * Run arguments: A (IN, M x K), B (IN, K x N), C (OUT, M x N), all 2-D f32,
 * then one scalar: the tile edge T, which must divide M, N and K.
 */
void matmul_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);

void kernel_gemm_tile(int64_t *args);

#endif /* EXAMPLES_MATMUL_H */
