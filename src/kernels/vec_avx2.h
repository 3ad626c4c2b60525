/* vec_avx2.h - the vector layer on AVX2 + FMA + F16C (vec.h has the
 * contract): mf_vf is two YMM of fp32, mf_vd two YMM of fp64. */
#ifndef MOEFR_KERNELS_VEC_AVX2_H_
#define MOEFR_KERNELS_VEC_AVX2_H_

#include <immintrin.h>

#include "kernels/forward_ref.h"
#include "kernels/vec.h"

#define MF_V_ISA "avx2"
#define MF_V_QMAX 4 /* 4 slots x 2 YMM of sums, plus g and temporaries, in 16 YMM */
#define MF_V_FWD_NV 4
#define MF_V_NT 1
#define MF_V_NT_MULTIROW 0 /* 2-3x slower on the AVX2 EPYC VM (docs/BENCHMARKS.md) */
#define MF_V_NORMAL_HINT 0

typedef struct { __m256 v[2]; } mf_vf;
typedef struct { __m256d v[2]; } mf_vd;
typedef __m256i mf_vm; /* 8 running minima (two fp32 halves share one register) */

/* 8 elements widened exactly to fp32. */
MF_INLINE __m256 a2_ld8(mf_dt dt, const void *p, size_t j) {
    if (dt == MF_F32) return _mm256_loadu_ps((const float *)p + j);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + j));
    if (dt == MF_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
/* 4 elements widened exactly to fp64, straight from memory (no lane moves). */
MF_INLINE __m256d a2_ld4d(mf_dt dt, const void *p, size_t j) {
    if (dt == MF_F32) return _mm256_cvtps_pd(_mm_loadu_ps((const float *)p + j));
    __m128i h = _mm_loadl_epi64((const __m128i *)((const uint16_t *)p + j));
    if (dt == MF_F16) return _mm256_cvtps_pd(_mm_cvtph_ps(h));
    return _mm256_cvtps_pd(_mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(h), 16)));
}

MF_INLINE mf_vf vf_ld(mf_dt dt, const void *p, size_t j) {
    mf_vf r = {{a2_ld8(dt, p, j), a2_ld8(dt, p, j + 8)}};
    return r;
}
MF_INLINE mf_vf vf_set1(float s) {
    mf_vf r = {{_mm256_set1_ps(s), _mm256_set1_ps(s)}};
    return r;
}
MF_INLINE mf_vf vf_mul(mf_vf a, mf_vf b) {
    mf_vf r = {{_mm256_mul_ps(a.v[0], b.v[0]), _mm256_mul_ps(a.v[1], b.v[1])}};
    return r;
}

MF_INLINE mf_vf vf_zero(void) { return vf_set1(0.0f); }
MF_INLINE mf_vf vf_add(mf_vf a, mf_vf b) {
    mf_vf r = {{_mm256_add_ps(a.v[0], b.v[0]), _mm256_add_ps(a.v[1], b.v[1])}};
    return r;
}
MF_INLINE mf_vf vf_fma(mf_vf a, mf_vf s, mf_vf v) {
    mf_vf r = {{_mm256_fmadd_ps(s.v[0], v.v[0], a.v[0]), _mm256_fmadd_ps(s.v[1], v.v[1], a.v[1])}};
    return r;
}
MF_INLINE mf_vf vf_madd_exact(mf_vf a, mf_vf x, mf_vf g) { return vf_fma(a, x, g); } /* exact: fused is the same */
MF_INLINE mf_vf vf_ldu(const float *p) {
    mf_vf r = {{_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}};
    return r;
}
MF_INLINE void vf_stu(float *p, mf_vf a) {
    _mm256_storeu_ps(p, a.v[0]);
    _mm256_storeu_ps(p + 8, a.v[1]);
}
MF_INLINE int vf_finite(mf_vf a) {
    const __m256i e = _mm256_set1_epi32(0x7F800000);
    __m256i m = _mm256_or_si256(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(a.v[0]), e), e),
                                _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(a.v[1]), e), e));
    return _mm256_testz_si256(m, m);
}
/* Forward fp32 layout: element order, except bf16, whose pairs split by a
 * shift and a mask as in vd_ld16p: v[0] the even elements, v[1] the odd. */
MF_INLINE mf_vf vf_ldp(mf_dt dt, const void *p, size_t j) {
    if (dt != MF_BF16) return vf_ld(dt, p, j);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + j));
    mf_vf r = {{_mm256_castsi256_ps(_mm256_slli_epi32(h, 16)),
                _mm256_castsi256_ps(_mm256_and_si256(h, _mm256_set1_epi32((int)0xFFFF0000u)))}};
    return r;
}
MF_INLINE int vf_in_range(mf_vf a, uint32_t hi) {
    const __m256i mag = _mm256_set1_epi32(0x7FFFFFFF), lo = _mm256_set1_epi32(MF_FWD_LO_BITS);
    const __m256i top = _mm256_set1_epi32((int)hi - 1);
    __m256i u0 = _mm256_and_si256(_mm256_castps_si256(a.v[0]), mag);
    __m256i u1 = _mm256_and_si256(_mm256_castps_si256(a.v[1]), mag);
    /* |a| bits are non-negative as int32, so signed compares order them */
    __m256i bad = _mm256_or_si256(_mm256_or_si256(_mm256_cmpgt_epi32(lo, u0), _mm256_cmpgt_epi32(u0, top)),
                                  _mm256_or_si256(_mm256_cmpgt_epi32(lo, u1), _mm256_cmpgt_epi32(u1, top)));
    return _mm256_testz_si256(bad, bad);
}
MF_INLINE mf_vm vm_init(void) { return _mm256_set1_epi32(-1); }
MF_INLINE mf_vm vm_nzmin(mf_vm m, mf_vf a) {
    const __m256i mag = _mm256_set1_epi32(0x7FFFFFFF), one = _mm256_set1_epi32(1);
    __m256i u0 = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(a.v[0]), mag), one);
    __m256i u1 = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(a.v[1]), mag), one);
    return _mm256_min_epu32(m, _mm256_min_epu32(u0, u1));
}
MF_INLINE mf_vm vm_nzmin16(mf_vm m, const void *p, size_t j) {
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + j));
    h = _mm256_sub_epi16(_mm256_and_si256(h, _mm256_set1_epi16(0x7FFF)), _mm256_set1_epi16(1));
    return _mm256_min_epu16(m, h);
}
MF_INLINE uint32_t vm_hmin16(mf_vm m) {
    __m128i h = _mm_min_epu16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    return (uint32_t)_mm_cvtsi128_si32(_mm_minpos_epu16(h)) & 0xFFFFu;
}
MF_INLINE uint32_t vm_hmin(mf_vm m) {
    __m128i h = _mm_min_epu32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    h = _mm_min_epu32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(1, 0, 3, 2)));
    h = _mm_min_epu32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(2, 3, 0, 1)));
    return (uint32_t)_mm_cvtsi128_si32(h);
}

/* fp32 bits u + 0x7FFF + (bit 16 of u): for a non-NaN u the high half is
 * u rounded to nearest even to bf16 (a carry moves into the exponent). */
MF_INLINE __m256i a2_bf16_rne_hi(__m256i u) {
    return _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)),
                            _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
}
/* fp32 -> bf16 bits in the low half of each 32-bit lane: RNE, NaN quieted as fp.h. */
MF_INLINE __m256i a2_bf16_rne(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i r = _mm256_srli_epi32(a2_bf16_rne_hi(u), 16);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)), _mm256_set1_epi32(0x7F800000));
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(r, q, nan);
}
/* 16 fp32 values in the bf16 vf_ldp layout, no NaN among them, rounded to
 * nearest even to bf16 in element order: the even lanes' rounded bits shift
 * down, the odd lanes' stay up (an overflow rounds to inf as it should). */
MF_INLINE __m256i a2_bf16_pair(__m256 e, __m256 o) {
    return _mm256_or_si256(_mm256_srli_epi32(a2_bf16_rne_hi(_mm256_castps_si256(e)), 16),
                           _mm256_and_si256(a2_bf16_rne_hi(_mm256_castps_si256(o)), _mm256_set1_epi32((int)0xFFFF0000u)));
}
MF_INLINE void a2_st32b(void *p, __m256i v, int nt) {
    if (nt) _mm256_stream_si256((__m256i *)p, v);
    else _mm256_storeu_si256((__m256i *)p, v);
}
/* The backward in vf_ldp's layout: 32 products stored (NaN as fp.h), and
 * the 16 lane sums of a bf16 block (v[0] lane i: element 2i's sum, v[1]:
 * element 2i + 1's) put back in element order for the fold and the tail.
 * vf_st32p is this layer's only fp32 -> dtype store (no element-order
 * vf_st32: bf16 never needs one here). */
#define MF_V_LDP_PAIRED 1
#define MF_V_NAN_HINT 1
/* Whether the 32 bf16 values at p[j..] are all finite (then their products
 * with a finite scale are never NaN, and vf_st32p needs no NaN test). */
MF_INLINE int v_bf16_finite32(const void *p, size_t j) {
    const __m256i e = _mm256_set1_epi16(0x7F80);
    const __m256i *q = (const __m256i *)((const uint16_t *)p + j);
    __m256i m = _mm256_or_si256(_mm256_cmpeq_epi16(_mm256_and_si256(_mm256_loadu_si256(q), e), e),
                                _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_loadu_si256(q + 1), e), e));
    return _mm256_testz_si256(m, m);
}
MF_INLINE void vf_st32p(mf_dt dt, void *p, size_t j, mf_vf lo, mf_vf hi, int nt, int normal, int nonan) {
    (void)normal;
    const mf_vf v[2] = {lo, hi};
    if (dt == MF_F32) {
        float *q = (float *)p + j;
        a2_st32b(q, _mm256_castps_si256(lo.v[0]), nt);
        a2_st32b(q + 8, _mm256_castps_si256(lo.v[1]), nt);
        a2_st32b(q + 16, _mm256_castps_si256(hi.v[0]), nt);
        a2_st32b(q + 24, _mm256_castps_si256(hi.v[1]), nt);
        return;
    }
    uint16_t *q = (uint16_t *)p + j;
    for (int h = 0; h < 2; h++) {
        const __m256 e = v[h].v[0], o = v[h].v[1]; /* fp16: elements 0-7 and 8-15 (vf_ldp is vf_ld) */
        __m256i r;
        if (dt == MF_F16) {
            r = _mm256_set_m128i(_mm256_cvtps_ph(o, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                                 _mm256_cvtps_ph(e, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        } else if (nonan) {
            r = a2_bf16_pair(e, o);
        } else {
            __m256 un = _mm256_or_ps(_mm256_cmp_ps(e, e, _CMP_UNORD_Q), _mm256_cmp_ps(o, o, _CMP_UNORD_Q));
            if (__builtin_expect(_mm256_testz_ps(un, un), 1)) r = a2_bf16_pair(e, o); /* same bits */
            else r = _mm256_or_si256(a2_bf16_rne(e), _mm256_slli_epi32(a2_bf16_rne(o), 16));
        }
        a2_st32b(q + 16 * h, r, nt);
    }
}
/* The forward's finite values: vf_st32p without its NaN test. */
MF_INLINE void vf_stp(mf_dt dt, void *p, size_t j, const mf_vf v[2], int nt) {
    vf_st32p(dt, p, j, v[0], v[1], nt, 1, 1);
}
MF_INLINE mf_vf vf_unpair(mf_dt dt, mf_vf s) {
    if (dt != MF_BF16) return s;
    const __m256 lo = _mm256_unpacklo_ps(s.v[0], s.v[1]), hi = _mm256_unpackhi_ps(s.v[0], s.v[1]);
    mf_vf r = {{_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31)}};
    return r;
}

MF_INLINE mf_vd vd_ld(mf_dt dt, const void *p, size_t j) {
    mf_vd r = {{a2_ld4d(dt, p, j), a2_ld4d(dt, p, j + 4)}};
    return r;
}
MF_INLINE mf_vd vd_zero(void) {
    mf_vd r = {{_mm256_setzero_pd(), _mm256_setzero_pd()}};
    return r;
}
MF_INLINE mf_vd vd_set1(double s) {
    mf_vd r = {{_mm256_set1_pd(s), _mm256_set1_pd(s)}};
    return r;
}
MF_INLINE mf_vd vd_ldu(const double *p) {
    mf_vd r = {{_mm256_loadu_pd(p), _mm256_loadu_pd(p + 4)}};
    return r;
}
MF_INLINE void vd_stu(double *p, mf_vd a) {
    _mm256_storeu_pd(p, a.v[0]);
    _mm256_storeu_pd(p + 4, a.v[1]);
}
MF_INLINE mf_vd vd_add(mf_vd a, mf_vd b) {
    mf_vd r = {{_mm256_add_pd(a.v[0], b.v[0]), _mm256_add_pd(a.v[1], b.v[1])}};
    return r;
}
MF_INLINE mf_vd vd_mul(mf_vd a, mf_vd b) {
    mf_vd r = {{_mm256_mul_pd(a.v[0], b.v[0]), _mm256_mul_pd(a.v[1], b.v[1])}};
    return r;
}
MF_INLINE mf_vd vd_madd_exact(mf_vd a, mf_vd t, mf_vd g) {
    mf_vd r = {{_mm256_fmadd_pd(t.v[0], g.v[0], a.v[0]), _mm256_fmadd_pd(t.v[1], g.v[1], a.v[1])}};
    return r;
}
MF_INLINE mf_vd vd_fold16(mf_vd a, mf_vf s) {
    a.v[0] = _mm256_add_pd(a.v[0], _mm256_cvtps_pd(_mm256_castps256_ps128(s.v[0])));
    a.v[1] = _mm256_add_pd(a.v[1], _mm256_cvtps_pd(_mm256_extractf128_ps(s.v[0], 1)));
    a.v[0] = _mm256_add_pd(a.v[0], _mm256_cvtps_pd(_mm256_castps256_ps128(s.v[1])));
    a.v[1] = _mm256_add_pd(a.v[1], _mm256_cvtps_pd(_mm256_extractf128_ps(s.v[1], 1)));
    return a;
}

/* Forward layout. fp32/fp16: element order. bf16: a bf16 pair in a 32-bit
 * lane becomes two fp32 values by a shift and a mask (no shuffle), so v[0]
 * holds the even elements 0..14 and v[1] the odd ones. */
MF_INLINE __m256d a2_lo4(__m256 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
MF_INLINE __m256d a2_hi4(__m256 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }
MF_INLINE void vd_ld16p(mf_dt dt, const void *p, size_t j, mf_vd v[2]) {
    if (dt == MF_BF16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + j));
        __m256 e = _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
        __m256 o = _mm256_castsi256_ps(_mm256_and_si256(h, _mm256_set1_epi32((int)0xFFFF0000u)));
        v[0].v[0] = a2_lo4(e), v[0].v[1] = a2_hi4(e), v[1].v[0] = a2_lo4(o), v[1].v[1] = a2_hi4(o);
        return;
    }
    v[0] = vd_ld(dt, p, j);
    v[1] = vd_ld(dt, p, j + 8);
}

/* Two vectors of 4 all-ones/all-zeros 64-bit masks as 8 32-bit masks. */
MF_INLINE __m256i a2_narrow_mask(__m256d lo, __m256d hi) {
    __m256 s = _mm256_shuffle_ps(_mm256_castpd_ps(lo), _mm256_castpd_ps(hi), _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_permute4x64_epi64(_mm256_castps_si256(s), _MM_SHUFFLE(3, 1, 2, 0));
}
/* fp64 -> fp32 rounded to odd, from the RNE conversion: step back toward zero
 * where RNE rounded away from zero, then set the last bit if inexact. fp32 has
 * >= 2 more bits than bf16/fp16 everywhere, so a following RNE equals one
 * direct RNE from fp64. NaN stays NaN; overflow gives FLT_MAX. */
MF_INLINE __m256i a2_round_odd8(__m256d a, __m256d b) {
    const __m256d mag = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFLL));
    __m128 fa = _mm256_cvtpd_ps(a), fb = _mm256_cvtpd_ps(b);
    __m256d ba = _mm256_cvtps_pd(fa), bb = _mm256_cvtps_pd(fb);
    __m256i in = a2_narrow_mask(_mm256_cmp_pd(ba, a, _CMP_NEQ_OQ), _mm256_cmp_pd(bb, b, _CMP_NEQ_OQ));
    __m256i up = a2_narrow_mask(_mm256_cmp_pd(_mm256_and_pd(ba, mag), _mm256_and_pd(a, mag), _CMP_GT_OQ),
                                _mm256_cmp_pd(_mm256_and_pd(bb, mag), _mm256_and_pd(b, mag), _CMP_GT_OQ));
    __m256i u = _mm256_set_m128i(_mm_castps_si128(fb), _mm_castps_si128(fa));
    u = _mm256_add_epi32(u, up); /* up is -1 */
    return _mm256_or_si256(u, _mm256_and_si256(in, _mm256_set1_epi32(1)));
}
/* 8 fp64 lanes (a: 0-3, b: 4-7) rounded once to fp16, NaN canonical. */
MF_INLINE __m128i a2_narrow8_f16(__m256d a, __m256d b) {
    __m256 f = _mm256_castsi256_ps(a2_round_odd8(a, b));
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
    __m128i h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m128i n16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
    return _mm_blendv_epi8(h, _mm_set1_epi16(0x7E00), n16);
}
/* 4 fp64 lanes rounded once (RNE) to fp32, NaN canonical. */
MF_INLINE __m128 a2_narrow4_f32(__m256d a) {
    __m128 f = _mm256_cvtpd_ps(a);
    return _mm_blendv_ps(f, _mm_castsi128_ps(_mm_set1_epi32(0x7FC00000)), _mm_cmp_ps(f, f, _CMP_UNORD_Q));
}
/* 16 fp64 lanes in the bf16 layout (even elements in e, odd in o) rounded
 * once to bf16, as 16 bf16 values in element order. */
MF_INLINE __m256i a2_narrow16_bf16(mf_vd e, mf_vd o) {
    /* Fast path: RNE to fp32 first. Rounding is monotonic and fp32's grid
     * refines bf16's, so only an fp32 result exactly on a bf16 midpoint (low
     * half 0x8000) can round differently from one direct rounding of the fp64
     * value; blocks with such a lane redo the conversion rounding to odd. */
    __m256i ue = _mm256_castps_si256(_mm256_set_m128(_mm256_cvtpd_ps(e.v[1]), _mm256_cvtpd_ps(e.v[0])));
    __m256i uo = _mm256_castps_si256(_mm256_set_m128(_mm256_cvtpd_ps(o.v[1]), _mm256_cvtpd_ps(o.v[0])));
    const __m256i low = _mm256_set1_epi32(0xFFFF), mid = _mm256_set1_epi32(0x8000);
    __m256i tie = _mm256_or_si256(_mm256_cmpeq_epi32(_mm256_and_si256(ue, low), mid),
                                  _mm256_cmpeq_epi32(_mm256_and_si256(uo, low), mid));
    if (__builtin_expect(!_mm256_testz_si256(tie, tie), 0)) {
        ue = a2_round_odd8(e.v[0], e.v[1]);
        uo = a2_round_odd8(o.v[0], o.v[1]);
    }
    __m256i ne = _mm256_castps_si256(_mm256_cmp_ps(_mm256_castsi256_ps(ue), _mm256_castsi256_ps(ue), _CMP_UNORD_Q));
    __m256i no = _mm256_castps_si256(_mm256_cmp_ps(_mm256_castsi256_ps(uo), _mm256_castsi256_ps(uo), _CMP_UNORD_Q));
    __m256i re = a2_bf16_rne_hi(ue), ro = a2_bf16_rne_hi(uo);
    re = _mm256_blendv_epi8(_mm256_srli_epi32(re, 16), _mm256_set1_epi32(0x7FC0), ne);
    ro = _mm256_blendv_epi8(_mm256_and_si256(ro, _mm256_set1_epi32((int)0xFFFF0000u)), _mm256_set1_epi32(0x7FC00000),
                            no);
    return _mm256_or_si256(re, ro);
}
MF_INLINE void vd_st32p(mf_dt dt, void *p, size_t j, const mf_vd v[4], int nt) {
    if (dt == MF_F32) {
        float *o = (float *)p + j;
        for (int h = 0; h < 4; h++)
            a2_st32b(o + 8 * h,
                     _mm256_castps_si256(_mm256_set_m128(a2_narrow4_f32(v[h].v[1]), a2_narrow4_f32(v[h].v[0]))), nt);
        return;
    }
    uint16_t *o = (uint16_t *)p + j;
    for (int h = 0; h < 2; h++) {
        __m256i r;
        if (dt == MF_BF16) r = a2_narrow16_bf16(v[2 * h], v[2 * h + 1]);
        else
            r = _mm256_set_m128i(a2_narrow8_f16(v[2 * h + 1].v[0], v[2 * h + 1].v[1]),
                                 a2_narrow8_f16(v[2 * h].v[0], v[2 * h].v[1]));
        a2_st32b(o + 16 * h, r, nt);
    }
}

MF_INLINE void v_prefetch(const void *p) { _mm_prefetch((const char *)p, _MM_HINT_T0); }
MF_INLINE void v_stream64(void *d, const void *s) {
    __m256i a = _mm256_loadu_si256((const __m256i *)s), b = _mm256_loadu_si256((const __m256i *)s + 1);
    _mm256_stream_si256((__m256i *)d, a);
    _mm256_stream_si256((__m256i *)d + 1, b);
}
static void v_fence(void) { _mm_sfence(); }

#endif /* MOEFR_KERNELS_VEC_AVX2_H_ */
