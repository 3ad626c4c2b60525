/* forward_avx512.c - AVX-512 F/BW/VL forward kernels (this file alone is built
 * with those flags). Bit-exact with forward_scalar.c: same fp64 operations. */
#include <immintrin.h>

#include "kernels/forward_ref.h"

#define MF_INLINE static inline __attribute__((always_inline))
/* Keep the 4-vector loops unrolled at any -O level: the sums must stay in registers. */
#define MF_UNROLL _Pragma("GCC unroll 4")
#define MF_UNROLL8 _Pragma("GCC unroll 8")
/* Hint for the next token's rows: T0 and NTA measured ~10% faster than T1
 * at R=8192, K=8, H=4096 (fp32 and bf16) on the development machine. */
#ifndef MF_PF_HINT
#define MF_PF_HINT _MM_HINT_T0
#endif

/* 16 elements of dtype dt, widened exactly to fp64, into two vectors of 8.
 * fp32/fp16: v[0] = elements 0-7, v[1] = 8-15. bf16: v[0] = the even
 * elements 0, 2, .., 14 and v[1] = the odd ones: a bf16 pair in a 32-bit lane
 * becomes two fp32 values by a shift and a mask, with no lane shuffle. Every
 * operand of an element sits in the same lane, so the arithmetic is unchanged. */
MF_INLINE void ld16(mf_dt dt, const void *p, size_t j, __m512d v[2]) {
    if (dt == MF_F32) {
        v[0] = _mm512_cvtps_pd(_mm256_loadu_ps((const float *)p + j));
        v[1] = _mm512_cvtps_pd(_mm256_loadu_ps((const float *)p + j + 8));
        return;
    }
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + j));
    if (dt == MF_F16) {
        __m512 f = _mm512_cvtph_ps(h);
        v[0] = _mm512_cvtps_pd(_mm512_castps512_ps256(f));
        v[1] = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)));
        return;
    }
    v[0] = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
    v[1] = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_and_si256(h, _mm256_set1_epi32((int)0xFFFF0000u))));
}

/* fp64 -> fp32 rounded to odd (truncate, then set the last bit if inexact).
 * fp32 keeps >= 2 more bits than bf16/fp16 over their whole range, so a
 * following RNE to bf16/fp16 equals one direct RNE from fp64: no double
 * rounding. NaN stays NaN (caught later), overflow gives FLT_MAX (odd). */
MF_INLINE __m512 round_odd16(__m512d a, __m512d b) {
    __m256 ta = _mm512_cvt_roundpd_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 tb = _mm512_cvt_roundpd_ps(b, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __mmask8 ia = _mm512_cmp_pd_mask(_mm512_cvtps_pd(ta), a, _CMP_NEQ_OQ);
    __mmask8 ib = _mm512_cmp_pd_mask(_mm512_cvtps_pd(tb), b, _CMP_NEQ_OQ);
    __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_castps_si256(ta)), _mm256_castps_si256(tb), 1);
    __mmask16 in = (__mmask16)(ia | ((unsigned)ib << 8));
    return _mm512_castsi512_ps(_mm512_mask_or_epi32(u, in, u, _mm512_set1_epi32(1)));
}

/* fp64 -> fp32 rounded to odd, 8 lanes (see round_odd16). */
MF_INLINE __m256i round_odd8(__m512d a) {
    __m256 t = _mm512_cvt_roundpd_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __mmask8 in = _mm512_cmp_pd_mask(_mm512_cvtps_pd(t), a, _CMP_NEQ_OQ);
    return _mm256_mask_or_epi32(_mm256_castps_si256(t), in, _mm256_castps_si256(t), _mm256_set1_epi32(1));
}

/* 16 fp64 lanes rounded once to 16-bit dtype dt, in element order. fp16: a
 * holds elements 0-7, b 8-15. bf16 (the ld16 layout): a the even elements,
 * b the odd ones, which land in the low and high halves of 32-bit lanes. */
MF_INLINE __m256i narrow16(mf_dt dt, __m512d a, __m512d b) {
    if (dt == MF_F16) {
        __m512 f = round_odd16(a, b);
        __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
        __m256i h = _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        return _mm256_mask_blend_epi16(nan, h, _mm256_set1_epi16(0x7E00));
    }
    const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7FFF);
    /* Fast path: RNE to fp32 first. Rounding is monotonic and fp32's grid
     * refines bf16's, so only an fp32 result exactly on a bf16 midpoint (low
     * half 0x8000) can round differently from one direct rounding of the fp64
     * value; blocks with such a lane redo the conversion rounding to odd. */
    __m256i ue = _mm256_castps_si256(_mm512_cvtpd_ps(a)), uo = _mm256_castps_si256(_mm512_cvtpd_ps(b));
    const __m256i low = _mm256_set1_epi32(0xFFFF), mid = _mm256_set1_epi32(0x8000);
    if (__builtin_expect((_mm256_cmpeq_epi32_mask(_mm256_and_si256(ue, low), mid) |
                          _mm256_cmpeq_epi32_mask(_mm256_and_si256(uo, low), mid)) != 0, 0)) {
        ue = round_odd8(a);
        uo = round_odd8(b);
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
MF_INLINE __m256 narrow8_f32(__m512d a) {
    __m256 f = _mm512_cvtpd_ps(a);
    __mmask8 nan = _mm256_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    return _mm256_mask_blend_ps(nan, f, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000)));
}

MF_INLINE void st64(void *p, __m512i v, int nt) {
    if (nt) _mm512_stream_si512((__m512i *)p, v);
    else _mm512_storeu_si512(p, v);
}

/* 32 elements from 4 fp64 vectors: 128 bytes (fp32) or 64 bytes (fp16/bf16). */
MF_INLINE void store32(mf_dt dt, void *out, size_t j, const __m512d *a, int nt) {
    if (dt == MF_F32) {
        float *o = (float *)out + j;
        for (int h = 0; h < 2; h++) {
            __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_castps_si256(narrow8_f32(a[2 * h]))),
                                           _mm256_castps_si256(narrow8_f32(a[2 * h + 1])), 1);
            st64(o + 16 * h, v, nt);
        }
        return;
    }
    __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(narrow16(dt, a[0], a[1])), narrow16(dt, a[2], a[3]), 1);
    st64((uint16_t *)out + j, v, nt);
}

/* One block of 8*nv elements starting at element i (j = j0 + i): its fp64
 * sums stay in nv registers across all the token's slots. */
MF_INLINE void block(mf_dt dt, const mf_fwd_row *t, size_t j, size_t i, double *acc, int load, int fin, int nt,
                     const int nv) {
    const size_t es = dt == MF_F32 ? 4 : 2;
    for (int q = 0; q < t->nnext; q++) /* the next token's rows, at this offset */
        for (size_t o = 0; o < 8 * (size_t)nv * es; o += 64)
            _mm_prefetch((const char *)t->next[q] + j * es + o, MF_PF_HINT);
    __m512d a[8];
    int have = 0;
    if (load) {
        MF_UNROLL8 for (int v = 0; v < nv; v++) a[v] = _mm512_loadu_pd(acc + i + 8 * v);
        have = 1;
    } else if (t->x1) {
        MF_UNROLL8 for (int h = 0; h < nv / 2; h++) ld16(dt, t->x1, j + 16 * h, a + 2 * h);
        if (t->x2) {
            __m512d w[8];
            MF_UNROLL8 for (int h = 0; h < nv / 2; h++) ld16(dt, t->x2, j + 16 * h, w + 2 * h);
            MF_UNROLL8 for (int v = 0; v < nv; v++) a[v] = _mm512_add_pd(a[v], w[v]);
        }
        have = 1;
    } else {
        MF_UNROLL8 for (int v = 0; v < nv; v++) a[v] = _mm512_setzero_pd();
    }
    for (int q = 0; q < t->nk; q++) {
        const void *x = t->x[q], *b = t->b[q];
        const void *first = x ? x : b;
        if (!first) continue;
        __m512d w[8];
        MF_UNROLL8 for (int h = 0; h < nv / 2; h++) ld16(dt, first, j + 16 * h, w + 2 * h);
        if (x && b) {
            __m512d u[8];
            MF_UNROLL8 for (int h = 0; h < nv / 2; h++) ld16(dt, b, j + 16 * h, u + 2 * h);
            MF_UNROLL8 for (int v = 0; v < nv; v++) w[v] = _mm512_add_pd(w[v], u[v]);
        }
        const __m512d s = _mm512_set1_pd(t->s[q]);
        if (have && !(x && b)) /* w is one widened input: s * w is exact, so fusing changes no bit */
            MF_UNROLL8 for (int v = 0; v < nv; v++) a[v] = _mm512_fmadd_pd(s, w[v], a[v]);
        else if (have)
            MF_UNROLL8 for (int v = 0; v < nv; v++) a[v] = _mm512_add_pd(a[v], _mm512_mul_pd(s, w[v]));
        else
            MF_UNROLL8 for (int v = 0; v < nv; v++) a[v] = _mm512_mul_pd(s, w[v]);
        have = 1;
    }
    if (fin) /* a is +0.0 when nothing was present */
        MF_UNROLL8 for (int h = 0; h < nv / 4; h++) store32(dt, t->out, j + 32 * h, a + 4 * h, nt);
    else if (have)
        MF_UNROLL8 for (int v = 0; v < nv; v++) _mm512_storeu_pd(acc + i + 8 * v, a[v]);
}

/* Contract: forward.h. Blocks of 64 elements (8 registers of sums; 2-4 cache
 * lines of each gathered row per visit), then one of 32, then the scalar tail. */
MF_INLINE int row_body(mf_dt dt, const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    const int load = flags & MF_FWD_LOAD, fin = flags & MF_FWD_FINAL;
    const int have0 = load || mf_fwd_has_term(t);
    const size_t es = dt == MF_F32 ? 4 : 2;
    if (fin && nt && ((uintptr_t)((char *)t->out + j0 * es) & 63)) nt = 0; /* streaming needs alignment */
    size_t i = 0;
    for (; i + 64 <= n; i += 64) block(dt, t, j0 + i, i, acc, load, fin, nt, 8);
    if (i + 32 <= n) {
        block(dt, t, j0 + i, i, acc, load, fin, nt, 4);
        i += 32;
    }
    if (i < n) mf_fwd_row_ref(dt, t, j0, i, n, acc, flags);
    return have0;
}

static int row_f32(const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    return row_body(MF_F32, t, j0, n, acc, flags, nt);
}
static int row_f16(const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    return row_body(MF_F16, t, j0, n, acc, flags, nt);
}
static int row_bf16(const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    return row_body(MF_BF16, t, j0, n, acc, flags, nt);
}

static void fence_sfence(void) { _mm_sfence(); }

const mf_fwd_kernels mf_fwd_kernels_avx512 = {"avx512", {row_f32, row_f16, row_bf16}, fence_sfence};
