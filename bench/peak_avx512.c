/* peak_avx512.c - the peak loops on sixteen lanes (built with -mavx512f
 * -mavx512bf16; peak.c calls each only on a CPU that has its extension):
 * fp32 VFMADD, and bf16 VDPBF16PS (two products per fp32 lane). */
#include <immintrin.h>

float bench_peak_avx512_fp32(long iters);
float bench_peak_avx512_bf16(long iters);

#define PK_V __m512
#define PK_SET(x) _mm512_set1_ps(x)
#define PK_SUM(v) _mm512_reduce_add_ps(v)
#define PK_REG(a) "+v"(a)

#define PK_A __m512
#define PK_INIT_A _mm512_set1_ps(1e-7f)
#define PK_INIT_B _mm512_set1_ps(1.0f)
#define PK_STEP(c, a, b) _mm512_fmadd_ps(a, b, c)
#define PK_FN bench_peak_avx512_fp32
#include "bench/peak_loops.h"
#undef PK_A
#undef PK_INIT_A
#undef PK_INIT_B
#undef PK_STEP
#undef PK_FN

/* bfloat16 pairs of 2^-20 and 1.0: the sums stay far from overflow */
#define PK_A __m512bh
#define PK_INIT_A ((__m512bh)_mm512_set1_epi16(0x3580))
#define PK_INIT_B ((__m512bh)_mm512_set1_epi16(0x3F80))
#define PK_STEP(c, a, b) _mm512_dpbf16_ps(c, a, b)
#define PK_FN bench_peak_avx512_bf16
#include "bench/peak_loops.h"
