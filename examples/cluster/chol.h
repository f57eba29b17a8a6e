/*
 * chol.h — what the cluster example's Cholesky parts agree on: the tile
 * operations' entry symbols, kernels and arguments.
 *
 * Tiles are T x T row-major f64 blocks, each its own host buffer; the
 * factor is lower (A = L L^T), right-looking, one device-level run per
 * tile operation:
 *   potrf  A[k][k] (INOUT)                     A[k][k] = chol(A[k][k])
 *   trsm   A[k][k] (IN),  A[i][k] (INOUT)      A[i][k] = A[i][k] L[k][k]^-T
 *   syrk   A[i][k] (IN),  A[i][i] (INOUT)      A[i][i] -= A[i][k] A[i][k]^T
 *   gemm   A[i][k], A[j][k] (IN), A[i][j] (INOUT)   A[i][j] -= A[i][k] A[j][k]^T
 * Each orchestration submits its one kernel; no scalars.
 */
#ifndef EXAMPLES_CHOL_H
#define EXAMPLES_CHOL_H

#include <stdint.h>

#include "simpler/orchestration.h"

enum chol_op { CHOL_POTRF = 0, CHOL_TRSM, CHOL_SYRK, CHOL_GEMM, CHOL_OPS };

void chol_potrf_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);
void chol_trsm_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);
void chol_syrk_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);
void chol_gemm_orchestration(struct simpler_orch *rt, const struct simpler_orch_args *args);

void chol_kernel_potrf(int64_t *args);
void chol_kernel_trsm(int64_t *args);
void chol_kernel_syrk(int64_t *args);
void chol_kernel_gemm(int64_t *args);

#endif /* EXAMPLES_CHOL_H */
