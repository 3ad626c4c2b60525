/* quant_int8_avx2.c - the dynamic int8 quantisation's loops on eight-lane
 * vectors, compiled with -mavx2 (the same bytes as the generic four-lane
 * loops of quant_int8.c). Chosen when the kernel path is avx2 or avx512.
 * The max pass is quant_int8_core.h's; the quantising pass is written here
 * with intrinsics, because its generic form spent most of its time in the
 * clamp's selects and the narrowing shuffles, not in the division. */
#include <immintrin.h>

#define GT_W 8
#define Q8_ABSMAX mf_q8_absmax_avx2
#include "ops/routing/quant_int8_core.h"

/* 8 quotients clamped (NaN -> 0) and rounded to int32 lanes in [-128, 127].
 * Clamped first, |c| <= 128:
 * - even: VCVTPS2DQ rounds in the current mode, nearest even (as the
 *   generic loop's 2^23 addition does);
 * - away: c + copysign(0.5 - 2^-25, c), truncated. Exact for every |c| <=
 *   128: the sum rounds to c +- 0.5 exactly except where that is not an
 *   fp32 value, and no such case crosses an integer (0.5 itself gives
 *   1 - 2^-25, which rounds to 1 as a tie to even). test_quant_int8 checks
 *   every fp32 value in [2^-2, 2^8) against a float64 oracle. */
static inline __m256i q8x_round(__m256 q, int even) {
    const __m256 c = _mm256_max_ps(_mm256_min_ps(_mm256_and_ps(q, _mm256_cmp_ps(q, q, _CMP_ORD_Q)),
                                                 _mm256_set1_ps(127.0f)),
                                   _mm256_set1_ps(-128.0f));
    if (even) return _mm256_cvtps_epi32(c);
    const __m256 h = _mm256_or_ps(_mm256_and_ps(c, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(0x1.fffffep-2f));
    return _mm256_cvttps_epi32(_mm256_add_ps(c, h));
}

/* 8 elements at v: fp32, or with bf16 raw bfloat16 values widened (gv.h) */
static inline __m256 q8x_load(const void *v, int64_t j, int bf16) {
    if (bf16) return (__m256)gv_load_bf16((const char *)((const uint16_t *)v + j));
    return _mm256_loadu_ps((const float *)v + j);
}
static inline __m256i q8x_quot(const void *v, int64_t j, __m256 sv, int even, int bf16) {
    return q8x_round(_mm256_div_ps(q8x_load(v, j, bf16), sv), even);
}

/* out[j] = int8 of the fp32 quotient v[j] / s: blocks of 32 narrowed by two
 * saturating packs (lanes already in range: no saturation happens) and one
 * permutation back to element order, stored by streaming stores where nt
 * and the block is aligned; then single vectors of 8. */
static inline int64_t q8x_quant(const void *v, int64_t n, float s, int even, int bf16, int8_t *out, int nt) {
    const __m256 sv = _mm256_set1_ps(s);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        const __m256i a = q8x_quot(v, j, sv, even, bf16), b = q8x_quot(v, j + 8, sv, even, bf16);
        const __m256i c = q8x_quot(v, j + 16, sv, even, bf16), d = q8x_quot(v, j + 24, sv, even, bf16);
        /* the packs work per 128-bit half: bytes come out as a0-3 b0-3 c0-3
         * d0-3 | a4-7 b4-7 c4-7 d4-7, i.e. 32-bit groups in order 0 2 4 6 1 3 5 7 */
        const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
        __m256i *o = (__m256i *)(void *)(out + j);
        if (nt && ((uintptr_t)o & 31) == 0) _mm256_stream_si256(o, _mm256_permutevar8x32_epi32(p, order));
        else _mm256_storeu_si256(o, _mm256_permutevar8x32_epi32(p, order));
    }
    for (; j + 8 <= n; j += 8) {
        const __m256i a = q8x_quot(v, j, sv, even, bf16);
        const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
        _mm_storel_epi64((__m128i *)(void *)(out + j), _mm_packs_epi16(w, w));
    }
    return j;
}

int64_t mf_q8_quant_avx2(const float *v, int64_t n, float s, bool even, int8_t *out, bool nt) {
    return even ? q8x_quant(v, n, s, 1, 0, out, nt) : q8x_quant(v, n, s, 0, 0, out, nt);
}
int64_t mf_q8_quant_bf16_avx2(const uint16_t *v, int64_t n, float s, bool even, int8_t *out, bool nt) {
    return even ? q8x_quant(v, n, s, 1, 1, out, nt) : q8x_quant(v, n, s, 0, 1, out, nt);
}

/* max(m, |v[j]|) over whole blocks of 16 raw bfloat16 values: on their
 * magnitude bits as unsigned integers (the same order as the values'),
 * NaN patterns (above 0x7F80) counted as zero */
int64_t mf_q8_absmax_bf16_avx2(const uint16_t *v, int64_t n, float *m) {
    const __m256i mag = _mm256_set1_epi16(0x7FFF), inf = _mm256_set1_epi16(0x7F80);
    __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) { /* two chains */
        const __m256i a = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(v + j)), mag);
        const __m256i b = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(v + j + 16)), mag);
        acc0 = _mm256_max_epu16(acc0, _mm256_andnot_si256(_mm256_cmpgt_epi16(a, inf), a));
        acc1 = _mm256_max_epu16(acc1, _mm256_andnot_si256(_mm256_cmpgt_epi16(b, inf), b));
    }
    for (; j + 16 <= n; j += 16) {
        const __m256i a = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(v + j)), mag);
        acc0 = _mm256_max_epu16(acc0, _mm256_andnot_si256(_mm256_cmpgt_epi16(a, inf), a));
    }
    const __m256i t = _mm256_max_epu16(acc0, acc1);
    __m128i h = _mm_max_epu16(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    h = _mm_max_epu16(h, _mm_srli_si128(h, 8));
    h = _mm_max_epu16(h, _mm_srli_si128(h, 4));
    h = _mm_max_epu16(h, _mm_srli_si128(h, 2));
    const float f = mf_bits_f32((uint32_t)(_mm_extract_epi16(h, 0) & 0xFFFF) << 16);
    if (f > *m) *m = f;
    return j;
}
