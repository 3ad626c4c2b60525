/* avx512_body.h - the AVX-512 (F/BW/VL) kernels, included by avx512.c and, with
 * MF_AVX512_BF16 defined, by avx512_bf16.c (built with -mavx512bf16). */
#include <immintrin.h>

#include "kernels/tail.h"

#define MF_INLINE static inline __attribute__((always_inline))


MF_INLINE __m512 ld16(mf_dt dt, const void *p, size_t j) {
    if (dt == MF_F32) return _mm512_loadu_ps((const float *)p + j);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + j));
    if (dt == MF_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* fp32 -> bf16 in integer arithmetic: round to nearest even, NaN -> quiet NaN. */
MF_INLINE __m256i bf16_rne16_int(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb), 16);
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                            _mm512_set1_epi32(0x7F800000));
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}

MF_INLINE __m256i bf16_rne16(__m512 v) {
#ifdef MF_AVX512_BF16
    /* VCVTNEPS2BF16 rounds to nearest even and quiets NaN like fp.h, but
     * flushes subnormal inputs to zero: redo those lanes in integers. */
    __m256i h = (__m256i)_mm512_cvtneps_pbh(v);
    __m512i u = _mm512_castps_si512(v);
    __mmask16 sub = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7F800000)) &
                    _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x007FFFFF));
    if (MF_UNLIKELY_SUB(sub)) h = _mm256_mask_blend_epi16(sub, h, bf16_rne16_int(v));
    return h;
#else
    return bf16_rne16_int(v);
#endif
}

/* 16 fp32 values rounded to the 16-bit dtype dt; normal_known: the caller
 * knows no value is an fp32 subnormal, so VCVTNEPS2BF16 needs no fix-up. */
MF_INLINE __m256i cvt16(mf_dt dt, __m512 v, int normal_known) {
    if (dt == MF_F16) return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#ifdef MF_AVX512_BF16
    if (normal_known) return (__m256i)_mm512_cvtneps_pbh(v);
#else
    (void)normal_known;
#endif
    return bf16_rne16(v);
}

/* 32 fp32 values (lo: elements 0-15, hi: 16-31) rounded to dtype dt, in
 * element order; normal_known as for cvt16. */
MF_INLINE __m512i out32(mf_dt dt, __m512 lo, __m512 hi, int normal_known) {
#ifdef MF_AVX512_BF16
    if (dt == MF_BF16 && normal_known) return (__m512i)_mm512_cvtne2ps_pbh(hi, lo); /* one instruction */
#endif
    return _mm512_inserti64x4(_mm512_castsi256_si512(cvt16(dt, lo, normal_known)), cvt16(dt, hi, normal_known), 1);
}

/* bf16 elements j..j+7 of p widened exactly to fp64: one word permute puts
 * each bf16 in the high half of a zeroed 32-bit lane (an fp32 of equal
 * value), then one conversion. */
MF_INLINE __m512d bf16x8_pd(const void *p, size_t j) {
    const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + j));
    const __m256i f = _mm256_maskz_permutexvar_epi16(0xAAAA, _mm256_setr_epi16(0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7),
                                                     _mm256_castsi128_si256(h));
    return _mm512_cvtps_pd(_mm256_castsi256_ps(f));
}

/* |g| at or above the returned bound makes |g * s| an fp32 normal (or 0 when
 * s is 0: then nothing is known and the bound is infinite) for every s given. */
MF_INLINE float normal_bound(const float *s, int q) {
    float t = 0.0f;
    for (int i = 0; i < q; i++) {
        float a = s[i] < 0 ? -s[i] : s[i];
        if (!(a > 0.0f) || a - a != 0.0f) return __builtin_inff(); /* 0, NaN, inf: always check */
        /* 2^-126 * (1 + 2^-10) / |s| in double; the float conversion loses
         * at most 2^-24 of it, so |g| >= f still keeps |g * s| above 2^-126
         * with room for the product's own rounding */
        double b = 0x1.004p-126 / (double)a;
        float f = b > 0x1p127 ? __builtin_inff() : (float)b;
        if (f > t) t = f;
    }
    return t;
}

MF_INLINE void st16(mf_dt dt, void *p, size_t j, __m512 v, int nt) {
    if (dt == MF_F32) {
        float *q = (float *)p + j;
        if (nt) _mm512_stream_ps(q, v);
        else _mm512_storeu_ps(q, v);
        return;
    }
    __m256i h = dt == MF_F16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC) : bf16_rne16(v);
    __m256i *q = (__m256i *)((uint16_t *)p + j);
    if (nt) _mm256_stream_si256(q, h);
    else _mm256_storeu_si256(q, h);
}

/* a + t * g in fp64. When t is one widened input (no bias added to it), t
 * and g carry at most 24 significant bits each, so t * g is exact in fp64
 * and a fused multiply-add gives the very bits of scalar.c's multiply then
 * add, with one operation less. t = x + b may carry 53 bits: round first. */
MF_INLINE __m512d madd(__m512d a, __m512d t, __m512d g, const int t_is_input) {
    return t_is_input ? _mm512_fmadd_pd(t, g, a) : _mm512_add_pd(a, _mm512_mul_pd(t, g));
}

MF_INLINE __m512d lo8(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
MF_INLINE __m512d hi8(__m512 v) {
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

/* 16-bit elements j..j+7 of p (bf16 or fp16) widened exactly to fp64. */
MF_INLINE __m512d wide8(mf_dt dt, const void *p, size_t j) {
    if (dt == MF_BF16) return bf16x8_pd(p, j);
    return _mm512_cvtps_pd(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + j))));
}

/* The dot terms of 16 elements at j: (t + b) * g added to a in lane order,
 * t and g already widened to fp64 (lo: elements 0-7, hi: 8-15). */
MF_INLINE __m512d dot16(mf_dt dt, __m512d a, __m512d tlo, __m512d thi, __m512d glo, __m512d ghi, const void *b,
                        size_t j, const int has_b) {
    if (has_b) {
        __m512 bv = ld16(dt, b, j);
        tlo = _mm512_add_pd(tlo, lo8(bv));
        thi = _mm512_add_pd(thi, hi8(bv));
    }
    a = madd(a, tlo, glo, !has_b);
    return madd(a, thi, ghi, !has_b);
}

/* One slot's 32 16-bit elements at j, for the multi-slot and row kernels:
 * round(g * s) to out (streamed when nt) and the terms (x + b) * g added to
 * a in lane order. g0, g1 hold g's elements j..j+31 as fp32, gd the same as
 * four fp64 vectors; normal as for out32. */
MF_INLINE __m512d slot32(mf_dt dt, __m512d a, __m512 g0, __m512 g1, const __m512d gd[4], __m512 vs, int normal,
                         void *out, const void *x, const void *b, size_t j, int nt, const int has_b) {
    __m512i h = out32(dt, _mm512_mul_ps(g0, vs), _mm512_mul_ps(g1, vs), normal);
    uint16_t *q = (uint16_t *)out + j;
    if (nt) _mm512_stream_si512((void *)q, h);
    else _mm512_storeu_si512(q, h);
    _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) {
        __m512d t = wide8(dt, x, j + 8 * (size_t)v);
        if (has_b) t = _mm512_add_pd(t, wide8(dt, b, j + 8 * (size_t)v));
        a = madd(a, t, gd[v], !has_b);
    }
    return a;
}

/* The 8 canonical partial sums are the 8 lanes of one vector; each group of
 * 16 elements adds its first 8 then its last 8, keeping increasing j per lane. */
MF_INLINE void sd_body(mf_dt dt, const void *g, float s, void *out, const void *x, const void *b, size_t n,
                       double acc[8], int nt, const int has_out, const int has_x, const int has_b) {
    const int dot = has_x || has_b;
    const size_t vec_bytes = dt == MF_F32 ? 64 : 32;
    if (has_out && nt && ((uintptr_t)out & (vec_bytes - 1))) nt = 0; /* streaming stores need alignment */
    __m512d a = dot ? _mm512_loadu_pd(acc) : _mm512_setzero_pd();
    const __m512 vs = _mm512_set1_ps(s);
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512 gv = ld16(dt, g, j);
        if (has_out) st16(dt, out, j, _mm512_mul_ps(gv, vs), nt);
        if (dot) {
            __m512d tlo, thi;
            if (has_x) {
                __m512 xv = ld16(dt, x, j);
                tlo = lo8(xv);
                thi = hi8(xv);
                if (has_b) {
                    __m512 bv = ld16(dt, b, j);
                    tlo = _mm512_add_pd(tlo, lo8(bv));
                    thi = _mm512_add_pd(thi, hi8(bv));
                }
            } else {
                __m512 bv = ld16(dt, b, j);
                tlo = lo8(bv);
                thi = hi8(bv);
            }
            a = madd(a, tlo, lo8(gv), !(has_x && has_b));
            a = madd(a, thi, hi8(gv), !(has_x && has_b));
        }
    }
    if (dot) _mm512_storeu_pd(acc, a);
    if (j < n)
        mf_scale_dot_tail(dt, g, s, has_out ? out : NULL, has_x ? x : NULL, has_b ? b : NULL, j, n, acc);
}

/* Q kept slots at once (Q a constant 1..8): g is loaded and widened once per
 * 16 elements, and the Q accumulators are independent dependency chains. */
MF_INLINE void multi_body(mf_dt dt, const int Q, const int has_b, const void *g, size_t n, const float *s,
                          void *const *out, const void *const *x, const void *const *b, double (*acc)[8], int nt) {
    const size_t vec_bytes = dt == MF_F32 ? 64 : 32;
    for (int i = 0; i < Q; i++)
        if ((uintptr_t)out[i] & (vec_bytes - 1)) nt = 0;
    __m512d a[8];
    __m512 vs[8];
    for (int i = 0; i < Q; i++) a[i] = _mm512_loadu_pd(acc[i]), vs[i] = _mm512_set1_ps(s[i]);
    size_t j = 0;
    if (dt != MF_F32) {
        /* 16-bit data: 32 elements per step, so that each streaming store
         * fills a whole cache line (with Q rows written at once, half lines
         * risk being evicted from the write-combining buffers unfinished). */
        if (nt)
            for (int i = 0; i < Q; i++)
                if ((uintptr_t)out[i] & 63) nt = 0;
        /* bf16: one test of g per 32 elements, shared by the Q slots, usually
         * proves every product normal, which spares each slot its own test */
#ifdef MF_AVX512_BF16
        const __m512 bound = _mm512_set1_ps(dt == MF_BF16 ? normal_bound(s, Q) : 0.0f);
#endif
        for (; j + 32 <= n; j += 32) {
            __m512 g0 = ld16(dt, g, j), g1 = ld16(dt, g, j + 16);
            const __m512d gd[4] = {lo8(g0), hi8(g0), lo8(g1), hi8(g1)};
            int normal = 0;
#ifdef MF_AVX512_BF16
            if (dt == MF_BF16)
                normal = !(_mm512_cmp_ps_mask(_mm512_abs_ps(g0), bound, _CMP_LT_OQ) |
                           _mm512_cmp_ps_mask(_mm512_abs_ps(g1), bound, _CMP_LT_OQ));
#endif
            /* unrolled, so a[] and vs[] stay in registers rather than on the stack */
            _Pragma("GCC unroll 8") for (int i = 0; i < Q; i++) {
                a[i] = slot32(dt, a[i], g0, g1, gd, vs[i], normal, out[i], x[i], has_b ? b[i] : NULL, j, nt, has_b);
            }
        }
    }
    for (; j + 16 <= n; j += 16) {
        __m512 gv = ld16(dt, g, j);
        __m512d glo = lo8(gv), ghi = hi8(gv);
        for (int i = 0; i < Q; i++) {
            st16(dt, out[i], j, _mm512_mul_ps(gv, vs[i]), nt);
            __m512 xv = ld16(dt, x[i], j);
            a[i] = dot16(dt, a[i], lo8(xv), hi8(xv), glo, ghi, has_b ? b[i] : NULL, j, has_b);
        }
    }
    for (int i = 0; i < Q; i++) _mm512_storeu_pd(acc[i], a[i]);
    if (j < n)
        for (int i = 0; i < Q; i++) mf_scale_dot_tail(dt, g, s[i], out[i], x[i], has_b ? b[i] : NULL, j, n, acc[i]);
}

#define MF_MULTI_FN(NAME, DT)                                                                          \
    static void NAME(const void *g, size_t n, int q, const float *s, void *const *out, const void *const *x, \
                     const void *const *b, double (*acc)[8], int nt) {                                   \
        switch (q * 2 + (b != NULL)) {                                                                   \
        case 2: multi_body(DT, 1, 0, g, n, s, out, x, b, acc, nt); break;                                \
        case 3: multi_body(DT, 1, 1, g, n, s, out, x, b, acc, nt); break;                                \
        case 4: multi_body(DT, 2, 0, g, n, s, out, x, b, acc, nt); break;                                \
        case 5: multi_body(DT, 2, 1, g, n, s, out, x, b, acc, nt); break;                                \
        case 6: multi_body(DT, 3, 0, g, n, s, out, x, b, acc, nt); break;                                \
        case 7: multi_body(DT, 3, 1, g, n, s, out, x, b, acc, nt); break;                                \
        case 8: multi_body(DT, 4, 0, g, n, s, out, x, b, acc, nt); break;                                \
        case 9: multi_body(DT, 4, 1, g, n, s, out, x, b, acc, nt); break;                                \
        case 10: multi_body(DT, 5, 0, g, n, s, out, x, b, acc, nt); break;                               \
        case 11: multi_body(DT, 5, 1, g, n, s, out, x, b, acc, nt); break;                               \
        case 12: multi_body(DT, 6, 0, g, n, s, out, x, b, acc, nt); break;                               \
        case 13: multi_body(DT, 6, 1, g, n, s, out, x, b, acc, nt); break;                               \
        case 14: multi_body(DT, 7, 0, g, n, s, out, x, b, acc, nt); break;                               \
        case 15: multi_body(DT, 7, 1, g, n, s, out, x, b, acc, nt); break;                               \
        case 16: multi_body(DT, 8, 0, g, n, s, out, x, b, acc, nt); break;                               \
        case 17: multi_body(DT, 8, 1, g, n, s, out, x, b, acc, nt); break;                               \
        default: break;                                                                                  \
        }                                                                                                \
    }
MF_MULTI_FN(multi_f32, MF_F32)
MF_MULTI_FN(multi_f16, MF_F16)
MF_MULTI_FN(multi_bf16, MF_BF16)

/* Q unrelated rows at once (Q a constant 1..4), each with its own g: the
 * same steps as sd_body, and Q independent accumulator chains. */
MF_INLINE void rows_body(mf_dt dt, const int Q, const int has_b, size_t n, const void *const *g, const float *s,
                         void *const *out, const void *const *x, const void *const *b, double (*acc)[8], int nt) {
    const size_t vec_bytes = dt == MF_F32 ? 64 : 32;
    for (int i = 0; i < Q; i++)
        if ((uintptr_t)out[i] & (vec_bytes - 1)) nt = 0;
    __m512d a[4];
    __m512 vs[4];
    for (int i = 0; i < Q; i++) a[i] = _mm512_loadu_pd(acc[i]), vs[i] = _mm512_set1_ps(s[i]);
    size_t j = 0;
#ifdef MF_AVX512_BF16
    if (dt == MF_BF16) {
        /* 32 elements a step, as multi_body: one VCVTNE2PS2BF16 per 32
         * outputs when a per-row bound proves every product normal, and a
         * whole cache line per streaming store */
        for (int i = 0; i < Q; i++)
            if ((uintptr_t)out[i] & 63) nt = 0;
        __m512 bound[4];
        for (int i = 0; i < Q; i++) bound[i] = _mm512_set1_ps(normal_bound(&s[i], 1));
        for (; j + 32 <= n; j += 32) {
            _Pragma("GCC unroll 4") for (int i = 0; i < Q; i++) {
                __m512 g0 = ld16(dt, g[i], j), g1 = ld16(dt, g[i], j + 16);
                int normal = !(_mm512_cmp_ps_mask(_mm512_abs_ps(g0), bound[i], _CMP_LT_OQ) |
                               _mm512_cmp_ps_mask(_mm512_abs_ps(g1), bound[i], _CMP_LT_OQ));
                /* g widened from the fp32 values at hand, not reloaded: the
                 * row kernel uses each g once, so this saves the permutes */
                const __m512d gd[4] = {lo8(g0), hi8(g0), lo8(g1), hi8(g1)};
                a[i] = slot32(dt, a[i], g0, g1, gd, vs[i], normal, out[i], x[i], has_b ? b[i] : NULL, j, nt, has_b);
            }
        }
    }
#endif
    for (; j + 16 <= n; j += 16) {
        _Pragma("GCC unroll 4") for (int i = 0; i < Q; i++) {
            __m512 gv = ld16(dt, g[i], j);
            st16(dt, out[i], j, _mm512_mul_ps(gv, vs[i]), nt);
            __m512d tlo, thi, glo, ghi;
            if (dt == MF_F32) { /* widen straight from memory: no lane extracts */
                const float *xf = (const float *)x[i] + j, *gf = (const float *)g[i] + j;
                tlo = _mm512_cvtps_pd(_mm256_loadu_ps(xf)), thi = _mm512_cvtps_pd(_mm256_loadu_ps(xf + 8));
                glo = _mm512_cvtps_pd(_mm256_loadu_ps(gf)), ghi = _mm512_cvtps_pd(_mm256_loadu_ps(gf + 8));
            } else {
                tlo = wide8(dt, x[i], j), thi = wide8(dt, x[i], j + 8);
                glo = wide8(dt, g[i], j), ghi = wide8(dt, g[i], j + 8);
            }
            a[i] = dot16(dt, a[i], tlo, thi, glo, ghi, has_b ? b[i] : NULL, j, has_b);
        }
    }
    for (int i = 0; i < Q; i++) _mm512_storeu_pd(acc[i], a[i]);
    if (j < n)
        for (int i = 0; i < Q; i++) mf_scale_dot_tail(dt, g[i], s[i], out[i], x[i], has_b ? b[i] : NULL, j, n, acc[i]);
}

#define MF_ROWS_FN(NAME, DT)                                                                            \
    static void NAME(size_t n, int q, const void *const *g, const float *s, void *const *out,            \
                     const void *const *x, const void *const *b, double (*acc)[8], int nt) {              \
        switch (q * 2 + (b != NULL)) {                                                                    \
        case 2: rows_body(DT, 1, 0, n, g, s, out, x, b, acc, nt); break;                                  \
        case 3: rows_body(DT, 1, 1, n, g, s, out, x, b, acc, nt); break;                                  \
        case 4: rows_body(DT, 2, 0, n, g, s, out, x, b, acc, nt); break;                                  \
        case 5: rows_body(DT, 2, 1, n, g, s, out, x, b, acc, nt); break;                                  \
        case 6: rows_body(DT, 3, 0, n, g, s, out, x, b, acc, nt); break;                                  \
        case 7: rows_body(DT, 3, 1, n, g, s, out, x, b, acc, nt); break;                                  \
        case 8: rows_body(DT, 4, 0, n, g, s, out, x, b, acc, nt); break;                                  \
        case 9: rows_body(DT, 4, 1, n, g, s, out, x, b, acc, nt); break;                                  \
        default: break;                                                                                   \
        }                                                                                                 \
    }
MF_ROWS_FN(rows_f32, MF_F32)
MF_ROWS_FN(rows_f16, MF_F16)
MF_ROWS_FN(rows_bf16, MF_BF16)

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

static void copy_avx512(void *dst, const void *src, size_t bytes, int nt) {
    char *d = dst;
    const char *s = src;
    if (!nt || bytes < 512) {
        if (bytes) memcpy(d, s, bytes);
        return;
    }
    size_t head = (size_t)(-(uintptr_t)d & 63);
    memcpy(d, s, head);
    d += head, s += head, bytes -= head;
    for (; bytes >= 256; d += 256, s += 256, bytes -= 256) {
        __m512i v0 = _mm512_loadu_si512(s), v1 = _mm512_loadu_si512(s + 64);
        __m512i v2 = _mm512_loadu_si512(s + 128), v3 = _mm512_loadu_si512(s + 192);
        _mm512_stream_si512((void *)d, v0);
        _mm512_stream_si512((void *)(d + 64), v1);
        _mm512_stream_si512((void *)(d + 128), v2);
        _mm512_stream_si512((void *)(d + 192), v3);
    }
    if (bytes) memcpy(d, s, bytes);
}

static void fence_sfence(void) { _mm_sfence(); }
