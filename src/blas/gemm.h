/* gemm.h - the one matrix product moefr takes from a BLAS library (chosen
 * by measurement: docs/BENCHMARKS.md, "GroupedMatmul: which BLAS"; BLIS,
 * gemm_blis.c). Called from moefr's own pool workers, one call per output
 * tile: the library's serial build, reentrant, so moefr's threads are the
 * only threads. */
#ifndef MOEFR_BLAS_GEMM_H_
#define MOEFR_BLAS_GEMM_H_

#include <stdbool.h>
#include <stdint.h>

/* C = A B + beta C in fp32: A is M x K with element (i, k) at
 * A[i * rsa + k * csa], B K x N likewise (rsb, csb), C M x N row-major
 * with row stride ldc. Strides are in elements. Each operand is row-major
 * (column stride 1, row stride >= its columns, or one row) or column-major
 * (row stride 1, column stride >= its rows, or one column), every value in
 * int range: gmm_run.c's ld_ok() decides, and packs what is not. M, N, K >= 1. */
void mf_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa, int64_t csa, const float *B,
              int64_t rsb, int64_t csb, float beta, float *C, int64_t ldc);
/* From oneDNN's matmul (gemm_onednn.c): C = A B + (beta != 0 ? C : 0), C fp32, A and B
 * fp32 or (bf16) bf16 bit patterns, in the layouts above (row- or column-major, the
 * leading dimension at least the other dim). False when it did not run (no usable
 * oneDNN on this CPU and kernel path, or a layout it has no fast kernel for): the
 * caller uses mf_sgemm instead. bf16 runs on VDPBF16PS (or AMX tiles, where oneDNN
 * may use them: mf_dnnl_amx), both of which flush subnormal inputs and results:
 * callers keep bf16 inputs of magnitude < 2^-63 away. */
bool mf_dnnl_ready(bool bf16);
bool mf_dnnl_amx(void);
bool mf_dnnl_layout_ok(int64_t rows, int64_t cols, int64_t rs, int64_t cs);
bool mf_dnnl_gemm(bool bf16, int64_t M, int64_t N, int64_t K, const void *A, int64_t rsa, int64_t csa, const void *B,
                  int64_t rsb, int64_t csb, float beta, float *C, int64_t ldc);
/* The library's name, version and kernel set (moefrBlas() returns it). */
const char *mf_blas_name(void);

#endif /* MOEFR_BLAS_GEMM_H_ */
