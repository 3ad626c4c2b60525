/* forward_avx512.c - AVX-512 F/BW/VL forward kernels (this file alone is built
 * with those flags). Bit-exact with forward_scalar.c: same fp64 operations. */
#include <immintrin.h>

#include "kernels/forward_ref.h"

#define MF_INLINE static inline __attribute__((always_inline))

/* 8 elements of dtype dt, widened exactly to fp64. */
MF_INLINE __m512d ld8(mf_dt dt, const void *p, size_t j) {
    if (dt == MF_F32) return _mm512_cvtps_pd(_mm256_loadu_ps((const float *)p + j));
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + j));
    if (dt == MF_F16) return _mm512_cvtps_pd(_mm256_cvtph_ps(h));
    return _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
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

/* 16 fp64 lanes (a: 0-7, b: 8-15) rounded once to 16-bit dtype dt. */
MF_INLINE __m256i narrow16(mf_dt dt, __m512d a, __m512d b) {
    __m512 f = round_odd16(a, b);
    __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    if (dt == MF_F16) {
        __m256i h = _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        return _mm256_mask_blend_epi16(nan, h, _mm256_set1_epi16(0x7E00));
    }
    __m512i u = _mm512_castps_si512(f);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb), 16);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0x7FC0));
    return _mm512_cvtepi32_epi16(r);
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
MF_INLINE void store32(mf_dt dt, void *out, size_t j, const __m512d a[4], int nt) {
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

/* Contract: forward.h. Blocks of 32 elements keep their fp64 sums in four
 * registers across all the token's slots; the tail goes through the scalar code. */
MF_INLINE int row_body(mf_dt dt, const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    const int load = flags & MF_FWD_LOAD, fin = flags & MF_FWD_FINAL;
    const int have0 = load || mf_fwd_has_term(t);
    const size_t es = dt == MF_F32 ? 4 : 2;
    if (fin && nt && ((uintptr_t)((char *)t->out + j0 * es) & 63)) nt = 0; /* streaming needs alignment */
    const void *x1 = t->x1, *x2 = t->x2;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const size_t j = j0 + i;
        __m512d a[4];
        int have = 0;
        if (load) {
            for (int v = 0; v < 4; v++) a[v] = _mm512_loadu_pd(acc + i + 8 * v);
            have = 1;
        } else if (x1) {
            for (int v = 0; v < 4; v++) a[v] = ld8(dt, x1, j + 8 * v);
            if (x2)
                for (int v = 0; v < 4; v++) a[v] = _mm512_add_pd(a[v], ld8(dt, x2, j + 8 * v));
            have = 1;
        } else {
            for (int v = 0; v < 4; v++) a[v] = _mm512_setzero_pd();
        }
        for (int q = 0; q < t->nk; q++) {
            const void *x = t->x[q], *b = t->b[q];
            __m512d w[4];
            if (x) {
                for (int v = 0; v < 4; v++) w[v] = ld8(dt, x, j + 8 * v);
                if (b)
                    for (int v = 0; v < 4; v++) w[v] = _mm512_add_pd(w[v], ld8(dt, b, j + 8 * v));
            } else if (b) {
                for (int v = 0; v < 4; v++) w[v] = ld8(dt, b, j + 8 * v);
            } else {
                continue;
            }
            const __m512d s = _mm512_set1_pd(t->s[q]);
            for (int v = 0; v < 4; v++) w[v] = _mm512_mul_pd(s, w[v]);
            if (have)
                for (int v = 0; v < 4; v++) a[v] = _mm512_add_pd(a[v], w[v]);
            else
                for (int v = 0; v < 4; v++) a[v] = w[v];
            have = 1;
        }
        if (fin) store32(dt, t->out, j, a, nt); /* a is +0.0 when nothing was present */
        else if (have)
            for (int v = 0; v < 4; v++) _mm512_storeu_pd(acc + i + 8 * v, a[v]);
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
