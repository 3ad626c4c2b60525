/* gemm_openblas.c - mf_sgemm on OpenBLAS's cblas_sgemm, from Debian's serial
 * build linked statically into libmoefr with its symbols hidden: no threads
 * of its own (moefr's workers are the only threads, so MOEFR_NUM_THREADS
 * governs all), safe to call from several threads at once (the serial build
 * locks its buffer pool), and no clash with the OpenBLAS that torch loads
 * (libopenblas.so.0 / libblas.so.3, often the pthread build) in the same
 * process. Why OpenBLAS: docs/BENCHMARKS.md, "GroupedMatmul: which BLAS". */
#include <pthread.h>
#include <stdio.h>

#include <cblas.h>

#include "blas/gemm.h"
#include "moefr/moefr.h"

/* One operand: NoTrans when its rows are contiguous (column stride 1), else
 * Trans over the column-major storage. cblas wants ld >= the stored row
 * length even where only one row is read, so a degenerate stride is raised
 * to it (the elements read are the same). */
static enum CBLAS_TRANSPOSE op(int64_t rows, int64_t cols, int64_t rs, int64_t cs, blasint *ld) {
    if (cs == 1 && (rs >= cols || rows == 1)) {
        *ld = (blasint)(rs > cols ? rs : cols);
        return CblasNoTrans;
    }
    *ld = (blasint)(cs > rows ? cs : rows); /* rs == 1: column j at j * cs */
    return CblasTrans;
}

void mf_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa, int64_t csa, const float *B,
              int64_t rsb, int64_t csb, float beta, float *C, int64_t ldc) {
    blasint lda, ldb;
    const enum CBLAS_TRANSPOSE ta = op(M, K, rsa, csa, &lda), tb = op(K, N, rsb, csb, &ldb);
    cblas_sgemm(CblasRowMajor, ta, tb, (blasint)M, (blasint)N, (blasint)K, 1.0f, A, lda, B, ldb, beta, C,
                (blasint)(ldc > N ? ldc : N));
}

static char g_name[160];
static pthread_once_t g_name_once = PTHREAD_ONCE_INIT;
static void name_init(void) {
    snprintf(g_name, sizeof g_name, "%s (%s kernels)", openblas_get_config(), openblas_get_corename());
}
const char *mf_blas_name(void) {
    pthread_once(&g_name_once, name_init);
    return g_name;
}

const char *moefrBlas(void) { return mf_blas_name(); }
