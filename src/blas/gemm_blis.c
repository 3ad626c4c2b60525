/* gemm_blis.c - mf_sgemm on BLIS's typed API (Debian's libblis serial
 * build): general row and column strides, so transposed views need no copy.
 * Each call runs on the calling thread: the runtime object passed to the
 * expert interface asks for one thread, whatever BLIS variant the loader
 * found and whatever BLIS_NUM_THREADS or OMP_NUM_THREADS say, so moefr's
 * pool workers are the only threads (no oversubscription). BLIS keeps no
 * per-call global state, so the workers call it concurrently.
 * Why BLIS: docs/BENCHMARKS.md, "GroupedMatmul: which BLAS" (OpenBLAS's
 * serial build is faster at small groups but not safe to call from two
 * threads at once: measured there). */
#include <pthread.h>
#include <stdio.h>

#include <blis.h>

#include "blas/gemm.h"
#include "moefr/moefr.h"

void mf_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa, int64_t csa, const float *B,
              int64_t rsb, int64_t csb, float beta, float *C, int64_t ldc) {
    float one = 1.0f, b = beta;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)M, (dim_t)N, (dim_t)K, &one, (float *)A, (inc_t)rsa,
                 (inc_t)csa, (float *)B, (inc_t)rsb, (inc_t)csb, &b, C, (inc_t)ldc, 1, NULL, &rntm);
}

static char g_name[160];
static pthread_once_t g_name_once = PTHREAD_ONCE_INIT;
static void name_init(void) {
    const char *v = bli_info_get_version_str();
    snprintf(g_name, sizeof g_name, "BLIS %s (%s kernels)%s", v ? v : "?", bli_arch_string(bli_arch_query_id()),
             mf_dnnl_amx()          ? "; fp32 and bf16: oneDNN matmul (libdnnl.so.2), bf16 on AMX tiles and VDPBF16PS"
             : mf_dnnl_ready(true)  ? "; fp32 and bf16: oneDNN matmul (libdnnl.so.2), bf16 on VDPBF16PS"
             : mf_dnnl_ready(false) ? "; fp32: oneDNN matmul (libdnnl.so.2)"
                                    : "");
}
const char *mf_blas_name(void) {
    pthread_once(&g_name_once, name_init);
    return g_name;
}

const char *moefrBlas(void) { return mf_blas_name(); }
