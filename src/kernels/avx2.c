/* avx2.c - AVX2+FMA+F16C kernels (this file alone is built with those flags).
 * Bit-exact with scalar.c: same IEEE operations in the same order, no FMA. */
#include <immintrin.h>

#include "kernels/tail.h"

#define MF_INLINE static inline __attribute__((always_inline))

/* 8 elements of dtype dt widened to fp32 (exact). */
MF_INLINE __m256 ld8(mf_dt dt, const void *p, size_t j) {
    if (dt == MF_F32) return _mm256_loadu_ps((const float *)p + j);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + j));
    if (dt == MF_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* fp32 -> bf16, round to nearest even; NaN stays a quiet NaN (as fp.h). */
MF_INLINE __m128i bf16_rne8(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb), 16);
    __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
    __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7F800000));
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    r = _mm256_blendv_epi8(r, q, nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

MF_INLINE void st8(mf_dt dt, void *p, size_t j, __m256 v, int nt) {
    if (dt == MF_F32) {
        float *q = (float *)p + j;
        if (nt) _mm256_stream_ps(q, v);
        else _mm256_storeu_ps(q, v);
        return;
    }
    __m128i h = dt == MF_F16 ? _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC) : bf16_rne8(v);
    __m128i *q = (__m128i *)((uint16_t *)p + j);
    if (nt) _mm_stream_si128(q, h);
    else _mm_storeu_si128(q, h);
}

/* Lanes 0-3 of the canonical 8 partial sums live in a0, 4-7 in a1; element j
 * adds to lane j & 7, in increasing j, as in the scalar loop. */
MF_INLINE void sd_body(mf_dt dt, const void *g, float s, void *out, const void *x, const void *b, size_t n,
                       double acc[8], int nt, const int has_out, const int has_x, const int has_b) {
    const int dot = has_x || has_b;
    const size_t vec_bytes = dt == MF_F32 ? 32 : 16;
    if (has_out && nt && ((uintptr_t)out & (vec_bytes - 1))) nt = 0; /* streaming stores need alignment */
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
    if (dot) {
        a0 = _mm256_loadu_pd(acc);
        a1 = _mm256_loadu_pd(acc + 4);
    }
    const __m256 vs = _mm256_set1_ps(s);
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 gv = ld8(dt, g, j);
        if (has_out) st8(dt, out, j, _mm256_mul_ps(gv, vs), nt);
        if (dot) {
            __m256d glo = _mm256_cvtps_pd(_mm256_castps256_ps128(gv));
            __m256d ghi = _mm256_cvtps_pd(_mm256_extractf128_ps(gv, 1));
            __m256d tlo, thi;
            if (has_x) {
                __m256 xv = ld8(dt, x, j);
                tlo = _mm256_cvtps_pd(_mm256_castps256_ps128(xv));
                thi = _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1));
                if (has_b) {
                    __m256 bv = ld8(dt, b, j);
                    tlo = _mm256_add_pd(tlo, _mm256_cvtps_pd(_mm256_castps256_ps128(bv)));
                    thi = _mm256_add_pd(thi, _mm256_cvtps_pd(_mm256_extractf128_ps(bv, 1)));
                }
            } else {
                __m256 bv = ld8(dt, b, j);
                tlo = _mm256_cvtps_pd(_mm256_castps256_ps128(bv));
                thi = _mm256_cvtps_pd(_mm256_extractf128_ps(bv, 1));
            }
            a0 = _mm256_add_pd(a0, _mm256_mul_pd(tlo, glo));
            a1 = _mm256_add_pd(a1, _mm256_mul_pd(thi, ghi));
        }
    }
    if (dot) {
        _mm256_storeu_pd(acc, a0);
        _mm256_storeu_pd(acc + 4, a1);
    }
    if (j < n)
        mf_scale_dot_tail(dt, g, s, has_out ? out : NULL, has_x ? x : NULL, has_b ? b : NULL, j, n, acc);
}

/* Q kept slots at once (Q a constant 1..4): g is loaded and widened once per
 * 8 elements, and the Q accumulator pairs are independent dependency chains. */
MF_INLINE void multi_body(mf_dt dt, const int Q, const int has_b, const void *g, size_t n, const float *s,
                          void *const *out, const void *const *x, const void *const *b, double (*acc)[8], int nt) {
    const size_t vec_bytes = dt == MF_F32 ? 32 : 16;
    for (int i = 0; i < Q; i++)
        if ((uintptr_t)out[i] & (vec_bytes - 1)) nt = 0;
    __m256d a0[4], a1[4];
    for (int i = 0; i < Q; i++) a0[i] = _mm256_loadu_pd(acc[i]), a1[i] = _mm256_loadu_pd(acc[i] + 4);
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 gv = ld8(dt, g, j);
        __m256d glo = _mm256_cvtps_pd(_mm256_castps256_ps128(gv)), ghi = _mm256_cvtps_pd(_mm256_extractf128_ps(gv, 1));
        for (int i = 0; i < Q; i++) {
            st8(dt, out[i], j, _mm256_mul_ps(gv, _mm256_set1_ps(s[i])), nt);
            __m256 xv = ld8(dt, x[i], j);
            __m256d tlo = _mm256_cvtps_pd(_mm256_castps256_ps128(xv)), thi = _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1));
            if (has_b) {
                __m256 bv = ld8(dt, b[i], j);
                tlo = _mm256_add_pd(tlo, _mm256_cvtps_pd(_mm256_castps256_ps128(bv)));
                thi = _mm256_add_pd(thi, _mm256_cvtps_pd(_mm256_extractf128_ps(bv, 1)));
            }
            a0[i] = _mm256_add_pd(a0[i], _mm256_mul_pd(tlo, glo));
            a1[i] = _mm256_add_pd(a1[i], _mm256_mul_pd(thi, ghi));
        }
    }
    for (int i = 0; i < Q; i++) _mm256_storeu_pd(acc[i], a0[i]), _mm256_storeu_pd(acc[i] + 4, a1[i]);
    if (j < n)
        for (int i = 0; i < Q; i++) mf_scale_dot_tail(dt, g, s[i], out[i], x[i], has_b ? b[i] : NULL, j, n, acc[i]);
}

/* 16 YMM registers hold at most 4 slots' accumulators: larger q runs in fours. */
#define MF_MULTI_FN(NAME, DT)                                                                          \
    static void NAME(const void *g, size_t n, int q, const float *s, void *const *out, const void *const *x, \
                     const void *const *b, double (*acc)[8], int nt) {                                   \
        for (; q > 4; q -= 4, s += 4, out += 4, x += 4, b = b ? b + 4 : NULL, acc += 4)                   \
            NAME(g, n, 4, s, out, x, b, acc, nt);                                                        \
        switch (q * 2 + (b != NULL)) {                                                                   \
        case 2: multi_body(DT, 1, 0, g, n, s, out, x, b, acc, nt); break;                                \
        case 3: multi_body(DT, 1, 1, g, n, s, out, x, b, acc, nt); break;                                \
        case 4: multi_body(DT, 2, 0, g, n, s, out, x, b, acc, nt); break;                                \
        case 5: multi_body(DT, 2, 1, g, n, s, out, x, b, acc, nt); break;                                \
        case 6: multi_body(DT, 3, 0, g, n, s, out, x, b, acc, nt); break;                                \
        case 7: multi_body(DT, 3, 1, g, n, s, out, x, b, acc, nt); break;                                \
        case 8: multi_body(DT, 4, 0, g, n, s, out, x, b, acc, nt); break;                                \
        case 9: multi_body(DT, 4, 1, g, n, s, out, x, b, acc, nt); break;                                \
        default: break;                                                                                  \
        }                                                                                                \
    }
MF_MULTI_FN(multi_f32, MF_F32)
MF_MULTI_FN(multi_f16, MF_F16)
MF_MULTI_FN(multi_bf16, MF_BF16)

/* One entry per dtype; each (out, x, b) presence pattern gets its own
 * specialised loop so the hot loop carries no tests. */
#define MF_SD(NAME, DT)                                                                              \
    static void NAME(const void *g, float s, void *out, const void *x, const void *b, size_t n,        \
                     double acc[8], int nt) {                                                          \
        switch ((out ? 4 : 0) | (x ? 2 : 0) | (b ? 1 : 0)) {                                           \
        case 7: sd_body(DT, g, s, out, x, b, n, acc, nt, 1, 1, 1); break;                               \
        case 6: sd_body(DT, g, s, out, x, b, n, acc, nt, 1, 1, 0); break;                               \
        case 5: sd_body(DT, g, s, out, x, b, n, acc, nt, 1, 0, 1); break;                               \
        case 4: sd_body(DT, g, s, out, x, b, n, acc, nt, 1, 0, 0); break;                               \
        case 3: sd_body(DT, g, s, out, x, b, n, acc, nt, 0, 1, 1); break;                               \
        case 2: sd_body(DT, g, s, out, x, b, n, acc, nt, 0, 1, 0); break;                               \
        case 1: sd_body(DT, g, s, out, x, b, n, acc, nt, 0, 0, 1); break;                               \
        default: break;                                                                                 \
        }                                                                                              \
    }                                                                                                  \
    static void NAME##_scale(const void *g, float s, void *out, size_t n) {                            \
        sd_body(DT, g, s, out, NULL, NULL, n, NULL, 0, 1, 0, 0);                                        \
    }                                                                                                  \
    static void NAME##_dot(const void *x, const void *b, const void *g, size_t n, double acc[8]) {     \
        NAME(g, 0.0f, NULL, x, b, n, acc, 0);                                                          \
    }
MF_SD(sd_f32, MF_F32)
MF_SD(sd_f16, MF_F16)
MF_SD(sd_bf16, MF_BF16)

MF_ROWS_BY_SD(rows_f32, sd_f32)
MF_ROWS_BY_SD(rows_f16, sd_f16)
MF_ROWS_BY_SD(rows_bf16, sd_bf16)

static void copy_avx2(void *dst, const void *src, size_t bytes, int nt) {
    char *d = dst;
    const char *s = src;
    if (!nt || bytes < 256) {
        if (bytes) memcpy(d, s, bytes);
        return;
    }
    size_t head = (size_t)(-(uintptr_t)d & 31);
    memcpy(d, s, head);
    d += head, s += head, bytes -= head;
    for (; bytes >= 128; d += 128, s += 128, bytes -= 128) {
        __m256i v0 = _mm256_loadu_si256((const __m256i *)s), v1 = _mm256_loadu_si256((const __m256i *)(s + 32));
        __m256i v2 = _mm256_loadu_si256((const __m256i *)(s + 64)), v3 = _mm256_loadu_si256((const __m256i *)(s + 96));
        _mm256_stream_si256((__m256i *)d, v0);
        _mm256_stream_si256((__m256i *)(d + 32), v1);
        _mm256_stream_si256((__m256i *)(d + 64), v2);
        _mm256_stream_si256((__m256i *)(d + 96), v3);
    }
    if (bytes) memcpy(d, s, bytes);
}

static void fence_sfence(void) { _mm_sfence(); }

const mf_ukernels mf_ukernels_avx2 = {
    "avx2",
    {sd_f32_scale, sd_f16_scale, sd_bf16_scale},
    {sd_f32_dot, sd_f16_dot, sd_bf16_dot},
    {sd_f32, sd_f16, sd_bf16},
    {multi_f32, multi_f16, multi_bf16},
    {rows_f32, rows_f16, rows_bf16},
    copy_avx2,
    fence_sfence,
};
