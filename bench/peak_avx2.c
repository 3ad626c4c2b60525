/* peak_avx2.c - the fp32 multiply-add peak loop on eight lanes (built with
 * -mavx2 -mfma; peak.c calls it only on a CPU that has both). */
#include <immintrin.h>

float bench_peak_avx2_fp32(long iters);

static inline float sum8(__m256 v) {
    float l[8], s = 0.0f;
    _mm256_storeu_ps(l, v);
    for (int i = 0; i < 8; i++) s += l[i];
    return s;
}
#define PK_V __m256
#define PK_A __m256
#define PK_SET(x) _mm256_set1_ps(x)
#define PK_INIT_A _mm256_set1_ps(1e-7f)
#define PK_INIT_B _mm256_set1_ps(1.0f)
#define PK_STEP(c, a, b) _mm256_fmadd_ps(a, b, c)
#define PK_SUM(v) sum8(v)
#define PK_REG(a) "+x"(a)
#define PK_FN bench_peak_avx2_fp32
#include "bench/peak_loops.h"
