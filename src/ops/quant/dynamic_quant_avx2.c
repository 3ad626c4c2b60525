/* dynamic_quant_avx2.c - DynamicQuant's vector loops on eight lanes, compiled
 * with -mavx2 (the same bytes as the four-lane loops of dynamic_quant.c);
 * chosen when the kernel path is avx2 or avx512. The max/min loop is
 * dynamic_quant_core.h's; the quantising loop is written with intrinsics, as
 * quant_int8_avx2.c's is (the generic form spent its time in the clamp's
 * selects and the narrowing shuffles). */
#include <immintrin.h>

#define GT_W 8
#define DQ_MINMAX mf_dq_minmax_avx2
#include "ops/quant/dynamic_quant_core.h"

/* 8 values: the quotient (div) or product by k, plus o (off), NaN -> 0,
 * clamped to [lo, hi] and rounded by VCVTPS2DQ in the current mode, nearest
 * even (the generic loops' 2^23 addition gives the same integers) */
static inline __m256i dqx(const float *v, __m256 k, __m256 o, __m256 lo, __m256 hi, int div, int off) {
    const __m256 x = _mm256_loadu_ps(v);
    __m256 f = div ? _mm256_div_ps(x, k) : _mm256_mul_ps(x, k);
    if (off) f = _mm256_add_ps(f, o);
    f = _mm256_and_ps(f, _mm256_cmp_ps(f, f, _CMP_ORD_Q));
    f = _mm256_max_ps(_mm256_min_ps(f, hi), lo);
    return _mm256_cvtps_epi32(f);
}

static inline int64_t dq_quant8(const float *v, int64_t n, float k, float o, float Q, int div, int off, int8_t *q) {
    const __m256 kv = _mm256_set1_ps(k), ov = _mm256_set1_ps(o), hi = _mm256_set1_ps(Q), lo = _mm256_set1_ps(-Q - 1);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        const __m256i a = dqx(v + j, kv, ov, lo, hi, div, off), b = dqx(v + j + 8, kv, ov, lo, hi, div, off);
        const __m256i c = dqx(v + j + 16, kv, ov, lo, hi, div, off), d = dqx(v + j + 24, kv, ov, lo, hi, div, off);
        /* lanes are in range: the packs do not saturate; they interleave per 128-bit half */
        const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
        _mm256_storeu_si256((__m256i *)(void *)(q + j), _mm256_permutevar8x32_epi32(p, order));
    }
    for (; j + 8 <= n; j += 8) {
        const __m256i a = dqx(v + j, kv, ov, lo, hi, div, off);
        const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
        _mm_storel_epi64((__m128i *)(void *)(q + j), _mm_packs_epi16(w, w));
    }
    return j;
}

int64_t mf_dq_quant_avx2(const float *v, int64_t n, const mf_dq_math *m, const mf_dq_scale *s, int8_t *q) {
    const float k = s->k, o = s->offset, Q = m->Q;
    if (m->a2) return m->sym ? dq_quant8(v, n, k, o, Q, 0, 0, q) : dq_quant8(v, n, k, o, Q, 0, 1, q);
    return m->sym ? dq_quant8(v, n, k, o, Q, 1, 0, q) : dq_quant8(v, n, k, o, Q, 1, 1, q);
}
