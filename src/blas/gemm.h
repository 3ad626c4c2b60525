/* gemm.h - the one matrix product moefr takes from a BLAS library (chosen
 * by measurement: docs/BENCHMARKS.md, "GroupedMatmul: which BLAS"). Called
 * from moefr's own pool workers, one call per output tile: the library's
 * serial build, reentrant, so moefr's threads are the only threads. */
#ifndef MOEFR_BLAS_GEMM_H_
#define MOEFR_BLAS_GEMM_H_

#include <stdint.h>

/* C = A B + beta C in fp32: A is M x K with element (i, k) at
 * A[i * rsa + k * csa], B K x N likewise (rsb, csb), C M x N row-major
 * with row stride ldc. Strides are in elements; in each operand one of
 * the two is 1 (a row- or column-major view). M, N, K >= 1. */
void mf_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa, int64_t csa, const float *B,
              int64_t rsb, int64_t csb, float beta, float *C, int64_t ldc);
/* The library's name and version, for moefrBlas() and the benchmark. */
const char *mf_blas_name(void);

#endif /* MOEFR_BLAS_GEMM_H_ */
