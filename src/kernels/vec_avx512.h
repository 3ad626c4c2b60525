/* vec_avx512.h - the vector layer on AVX-512 F/BW/VL (vec.h has the
 * contract): mf_vf is one ZMM of fp32, mf_vd one ZMM of fp64. With
 * MF_AVX512_BF16 defined (avx512_bf16.c, built with -mavx512bf16) bf16
 * outputs use VCVTNEPS2BF16, with subnormal lanes redone in integers. */
#ifndef MOEFR_KERNELS_VEC_AVX512_H_
#define MOEFR_KERNELS_VEC_AVX512_H_

#include <immintrin.h>

#include "kernels/forward_ref.h"
#include "kernels/vec.h"

#define MF_V_ISA "avx512"
#define MF_V_QMAX 8
/* fp32 with a bias: eight slots' sums, minima and scales left too few of the
 * 32 registers for that body's temporaries (its loop spilled and reloaded the
 * row pointers); groups of four ran it 8-12% faster with its rows in memory
 * on Zen 4 (docs/BENCHMARKS.md, "The backward"). bf16 with a bias ran 3-5% slower
 * in fours, so it keeps eight. */
#define MF_V_QMAX_F32_BIAS 4
#define MF_V_FWD_NV 8
#define MF_V_NT 1
#define MF_V_NT_MULTIROW 1 /* measured faster on Zen 4 (docs/BENCHMARKS.md, "Streaming stores over several rows") */
#ifdef MF_AVX512_BF16
#define MF_V_NORMAL_HINT 1
#else
#define MF_V_NORMAL_HINT 0
#endif

typedef __m512 mf_vf;
typedef __m512d mf_vd;
typedef __m512i mf_vm;

MF_INLINE mf_vf vf_ld(mf_dt dt, const void *p, size_t j) {
    if (dt == MF_F32) return _mm512_loadu_ps((const float *)p + j);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + j));
    if (dt == MF_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
MF_INLINE mf_vf vf_set1(float s) { return _mm512_set1_ps(s); }
MF_INLINE mf_vf vf_mul(mf_vf a, mf_vf b) { return _mm512_mul_ps(a, b); }

MF_INLINE mf_vf vf_zero(void) { return _mm512_setzero_ps(); }
MF_INLINE mf_vf vf_add(mf_vf a, mf_vf b) { return _mm512_add_ps(a, b); }
MF_INLINE mf_vf vf_fma(mf_vf a, mf_vf s, mf_vf v) { return _mm512_fmadd_ps(s, v, a); }
MF_INLINE mf_vf vf_madd_exact(mf_vf a, mf_vf x, mf_vf g) { return vf_fma(a, x, g); } /* exact: fused is the same */
MF_INLINE mf_vf vf_ldu(const float *p) { return _mm512_loadu_ps(p); }
MF_INLINE void vf_stu(float *p, mf_vf a) { _mm512_storeu_ps(p, a); }
MF_INLINE int vf_finite(mf_vf a) {
    const __m512i e = _mm512_set1_epi32(0x7F800000);
    return _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(a), e), e) == 0;
}
MF_INLINE mf_vf vf_ldp(mf_dt dt, const void *p, size_t j) { return vf_ld(dt, p, j); }
MF_INLINE int vf_in_range(mf_vf a, uint32_t hi) {
    __m512i u = _mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7FFFFFFF));
    return (_mm512_cmplt_epu32_mask(u, _mm512_set1_epi32(MF_FWD_LO_BITS)) |
            _mm512_cmpge_epu32_mask(u, _mm512_set1_epi32((int)hi))) == 0;
}
MF_INLINE mf_vm vm_init(void) { return _mm512_set1_epi32(-1); }
MF_INLINE mf_vm vm_nzmin(mf_vm m, mf_vf a) {
    __m512i u = _mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7FFFFFFF)),
                                 _mm512_set1_epi32(1));
    return _mm512_min_epu32(m, u);
}
/* 16-bit minima in the low 256 bits. */
MF_INLINE mf_vm vm_nzmin16(mf_vm m, const void *p, size_t j) {
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + j));
    h = _mm256_sub_epi16(_mm256_and_si256(h, _mm256_set1_epi16(0x7FFF)), _mm256_set1_epi16(1));
    return _mm512_inserti64x4(m, _mm256_min_epu16(_mm512_castsi512_si256(m), h), 0);
}
/* 32 at once over the whole register (vm_init's all-ones upper half is the
 * largest value, so vm_nzmin16's lanes and these fold together). */
#define MF_V_NZMIN32 1
MF_INLINE mf_vm vm_nzmin32(mf_vm m, const void *p, size_t j) {
    __m512i h = _mm512_loadu_si512((const uint16_t *)p + j);
    h = _mm512_sub_epi16(_mm512_and_si512(h, _mm512_set1_epi16(0x7FFF)), _mm512_set1_epi16(1));
    return _mm512_min_epu16(m, h);
}
MF_INLINE uint32_t vm_hmin16(mf_vm m) {
    __m256i l = _mm256_min_epu16(_mm512_castsi512_si256(m), _mm512_extracti64x4_epi64(m, 1));
    __m128i h = _mm_min_epu16(_mm256_castsi256_si128(l), _mm256_extracti128_si256(l, 1));
    return (uint32_t)_mm_cvtsi128_si32(_mm_minpos_epu16(h)) & 0xFFFFu;
}
MF_INLINE uint32_t vm_hmin(mf_vm m) { return (uint32_t)_mm512_reduce_min_epu32(m); }

/* fp32 -> bf16 in integer arithmetic: round to nearest even, NaN -> quiet NaN. */
/* fp32 bits plus the rounding increment: their high 16 bits are the value
 * rounded to nearest even as bf16 (not NaN; an overflow gives inf). */
MF_INLINE __m512i a5_bf16_rne_hi(__m512i u) {
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    return _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb);
}
MF_INLINE __m256i a5_bf16_int(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i r = _mm512_srli_epi32(a5_bf16_rne_hi(u), 16);
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                            _mm512_set1_epi32(0x7F800000));
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}
/* 16 fp32 values rounded to the 16-bit dtype dt; normal: no fp32 subnormal. */
MF_INLINE __m256i a5_cvt16(mf_dt dt, __m512 v, int normal) {
    if (dt == MF_F16) return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#ifdef MF_AVX512_BF16
    /* VCVTNEPS2BF16 rounds to nearest even and quiets NaN like fp.h, but
     * flushes subnormal inputs to zero: redo those lanes in integers. */
    __m256i h = (__m256i)_mm512_cvtneps_pbh(v);
    if (normal) return h;
    __m512i u = _mm512_castps_si512(v);
    __mmask16 sub = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7F800000)) &
                    _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x007FFFFF));
    if (__builtin_expect(sub != 0, 0)) h = _mm256_mask_blend_epi16(sub, h, a5_bf16_int(v));
    return h;
#else
    (void)normal;
    return a5_bf16_int(v);
#endif
}
MF_INLINE void a5_st64(void *p, __m512i v, int nt) {
    if (nt) _mm512_stream_si512((__m512i *)p, v);
    else _mm512_storeu_si512(p, v);
}
MF_INLINE void vf_st32(mf_dt dt, void *p, size_t j, mf_vf lo, mf_vf hi, int nt, int normal) {
    if (dt == MF_F32) {
        float *q = (float *)p + j;
        a5_st64(q, _mm512_castps_si512(lo), nt);
        a5_st64(q + 16, _mm512_castps_si512(hi), nt);
        return;
    }
    __m512i h;
#ifdef MF_AVX512_BF16
    if (dt == MF_BF16 && normal) h = (__m512i)_mm512_cvtne2ps_pbh(hi, lo); /* one instruction for 32 */
    else
#endif
        h = _mm512_inserti64x4(_mm512_castsi256_si512(a5_cvt16(dt, lo, normal)), a5_cvt16(dt, hi, normal), 1);
    a5_st64((uint16_t *)p + j, h, nt);
}
/* The forward's fp32 blocks take bf16 as the even elements (v[0] lane i:
 * element 2i) and the odd ones (v[1]: 2i + 1) of one 64-byte load, a shift
 * and a mask, where element order takes a widening shuffle per 16 elements
 * (one port on Intel cores). Each element's sum is its own, so the lanes
 * change no bit; vf_stp puts the elements back in order. fp32 and fp16 stay
 * in element order. */
#define MF_V_FWD_LD32 1
MF_INLINE void vf_ld32f(mf_dt dt, const void *p, size_t j, mf_vf v[2]) {
    if (dt != MF_BF16) {
        v[0] = vf_ld(dt, p, j), v[1] = vf_ld(dt, p, j + 16);
        return;
    }
    const __m512i h = _mm512_loadu_si512((const uint16_t *)p + j);
    v[0] = _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
    v[1] = _mm512_castsi512_ps(_mm512_and_si512(h, _mm512_set1_epi32((int)0xFFFF0000u)));
}
/* Passing values are finite and >= 2^-100: never an fp32 subnormal, so
 * `normal` holds, and bf16 rounds without NaN or subnormal cases. */
MF_INLINE void vf_stp(mf_dt dt, void *p, size_t j, const mf_vf v[2], int nt) {
    if (dt != MF_BF16) {
        vf_st32(dt, p, j, v[0], v[1], nt, 1);
        return;
    }
    /* (the forward table is built in avx512.c alone, without VCVTNEPS2BF16)
     * round to nearest even in each 32-bit lane: the even element's bits
     * shift down, the odd one's stay up */
    const __m512i re = a5_bf16_rne_hi(_mm512_castps_si512(v[0])), ro = a5_bf16_rne_hi(_mm512_castps_si512(v[1]));
    const __m512i h = _mm512_or_si512(_mm512_srli_epi32(re, 16),
                                      _mm512_and_si512(ro, _mm512_set1_epi32((int)0xFFFF0000u)));
    a5_st64((uint16_t *)p + j, h, nt);
}
#if MF_V_NORMAL_HINT
MF_INLINE int vf_abs_below(mf_vf lo, mf_vf hi, float bound) {
    const __m512 bv = _mm512_set1_ps(bound);
    return (_mm512_cmp_ps_mask(_mm512_abs_ps(lo), bv, _CMP_LT_OQ) |
            _mm512_cmp_ps_mask(_mm512_abs_ps(hi), bv, _CMP_LT_OQ)) != 0;
}
#endif

MF_INLINE mf_vd vd_ld(mf_dt dt, const void *p, size_t j) {
    if (dt == MF_F32) return _mm512_cvtps_pd(_mm256_loadu_ps((const float *)p + j));
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + j));
    if (dt == MF_F16) return _mm512_cvtps_pd(_mm256_cvtph_ps(h));
    return _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
}
MF_INLINE mf_vd vd_zero(void) { return _mm512_setzero_pd(); }
MF_INLINE mf_vd vd_set1(double s) { return _mm512_set1_pd(s); }
MF_INLINE mf_vd vd_ldu(const double *p) { return _mm512_loadu_pd(p); }
MF_INLINE void vd_stu(double *p, mf_vd a) { _mm512_storeu_pd(p, a); }
MF_INLINE mf_vd vd_add(mf_vd a, mf_vd b) { return _mm512_add_pd(a, b); }
MF_INLINE mf_vd vd_mul(mf_vd a, mf_vd b) { return _mm512_mul_pd(a, b); }
MF_INLINE mf_vd vd_madd_exact(mf_vd a, mf_vd t, mf_vd g) { return _mm512_fmadd_pd(t, g, a); }
MF_INLINE mf_vd vd_fold16(mf_vd a, mf_vf s) {
    a = _mm512_add_pd(a, _mm512_cvtps_pd(_mm512_castps512_ps256(s)));
    return _mm512_add_pd(a, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1))));
}

/* Forward layout. fp32/fp16: v[0] = elements 0-7, v[1] = 8-15. bf16: v[0] =
 * the even elements 0, 2, .., 14 and v[1] the odd ones (a bf16 pair in a
 * 32-bit lane becomes two fp32 values by a shift and a mask, no shuffle). */
MF_INLINE void vd_ld16p(mf_dt dt, const void *p, size_t j, mf_vd v[2]) {
    if (dt == MF_BF16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + j));
        v[0] = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
        v[1] = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_and_si256(h, _mm256_set1_epi32((int)0xFFFF0000u))));
        return;
    }
    v[0] = vd_ld(dt, p, j);
    v[1] = vd_ld(dt, p, j + 8);
}

/* fp64 -> fp32 rounded to odd (truncate, then set the last bit if inexact).
 * fp32 keeps >= 2 more bits than bf16/fp16 over their whole range, so a
 * following RNE to bf16/fp16 equals one direct RNE from fp64. NaN stays NaN,
 * overflow gives FLT_MAX (odd). */
MF_INLINE __m256i a5_round_odd8(__m512d a) {
    __m256 t = _mm512_cvt_roundpd_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __mmask8 in = _mm512_cmp_pd_mask(_mm512_cvtps_pd(t), a, _CMP_NEQ_OQ);
    return _mm256_mask_or_epi32(_mm256_castps_si256(t), in, _mm256_castps_si256(t), _mm256_set1_epi32(1));
}
/* 16 fp64 lanes rounded once to 16-bit dtype dt, in element order (a, b in
 * the vd_ld16p layout). */
MF_INLINE __m256i a5_narrow16(mf_dt dt, __m512d a, __m512d b) {
    if (dt == MF_F16) {
        __m512 f = _mm512_castsi512_ps(
            _mm512_inserti64x4(_mm512_castsi256_si512(a5_round_odd8(a)), a5_round_odd8(b), 1));
        __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
        __m256i h = _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        return _mm256_mask_blend_epi16(nan, h, _mm256_set1_epi16(0x7E00));
    }
    const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7FFF);
    /* Fast path: RNE to fp32 first. Only an fp32 result exactly on a bf16
     * midpoint (low half 0x8000) can round differently from one direct
     * rounding of the fp64 value; blocks with such a lane round to odd. */
    __m256i ue = _mm256_castps_si256(_mm512_cvtpd_ps(a)), uo = _mm256_castps_si256(_mm512_cvtpd_ps(b));
    const __m256i low = _mm256_set1_epi32(0xFFFF), mid = _mm256_set1_epi32(0x8000);
    if (__builtin_expect((_mm256_cmpeq_epi32_mask(_mm256_and_si256(ue, low), mid) |
                          _mm256_cmpeq_epi32_mask(_mm256_and_si256(uo, low), mid)) != 0, 0)) {
        ue = a5_round_odd8(a);
        uo = a5_round_odd8(b);
    }
    __mmask8 ne = _mm256_cmp_ps_mask(_mm256_castsi256_ps(ue), _mm256_castsi256_ps(ue), _CMP_UNORD_Q);
    __mmask8 no = _mm256_cmp_ps_mask(_mm256_castsi256_ps(uo), _mm256_castsi256_ps(uo), _CMP_UNORD_Q);
    __m256i re = _mm256_add_epi32(_mm256_add_epi32(ue, bias), _mm256_and_si256(_mm256_srli_epi32(ue, 16), one));
    __m256i ro = _mm256_add_epi32(_mm256_add_epi32(uo, bias), _mm256_and_si256(_mm256_srli_epi32(uo, 16), one));
    re = _mm256_mask_mov_epi32(_mm256_srli_epi32(re, 16), ne, _mm256_set1_epi32(0x7FC0));
    ro = _mm256_mask_mov_epi32(_mm256_and_si256(ro, _mm256_set1_epi32((int)0xFFFF0000u)), no,
                               _mm256_set1_epi32(0x7FC00000));
    return _mm256_or_si256(re, ro);
}
/* 8 fp64 lanes rounded once (RNE) to fp32, NaN canonical. */
MF_INLINE __m256 a5_narrow8_f32(__m512d a) {
    __m256 f = _mm512_cvtpd_ps(a);
    __mmask8 nan = _mm256_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    return _mm256_mask_blend_ps(nan, f, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000)));
}
MF_INLINE void vd_st32p(mf_dt dt, void *p, size_t j, const mf_vd v[4], int nt) {
    if (dt == MF_F32) {
        float *o = (float *)p + j;
        for (int h = 0; h < 2; h++) {
            __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_castps_si256(a5_narrow8_f32(v[2 * h]))),
                                           _mm256_castps_si256(a5_narrow8_f32(v[2 * h + 1])), 1);
            a5_st64(o + 16 * h, w, nt);
        }
        return;
    }
    __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(a5_narrow16(dt, v[0], v[1])), a5_narrow16(dt, v[2], v[3]), 1);
    a5_st64((uint16_t *)p + j, w, nt);
}

MF_INLINE void v_prefetch(const void *p) { _mm_prefetch((const char *)p, _MM_HINT_T0); }
MF_INLINE void v_stream64(void *d, const void *s) { _mm512_stream_si512((__m512i *)d, _mm512_loadu_si512(s)); }
static void v_fence(void) { _mm_sfence(); }

#endif /* MOEFR_KERNELS_VEC_AVX512_H_ */
