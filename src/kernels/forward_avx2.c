/* forward_avx2.c - AVX2+FMA+F16C forward kernels (this file alone is built
 * with those flags). Bit-exact with forward_scalar.c: same fp64 operations. */
#include <immintrin.h>

#include "kernels/forward_ref.h"

#define MF_INLINE static inline __attribute__((always_inline))
/* Keep the 4-vector loops unrolled at any -O level: the sums must stay in registers. */
#define MF_UNROLL _Pragma("GCC unroll 4")

/* 8 elements of dtype dt widened exactly to fp32 (then to fp64 by halves). */
MF_INLINE __m256 ld8(mf_dt dt, const void *p, size_t j) {
    if (dt == MF_F32) return _mm256_loadu_ps((const float *)p + j);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + j));
    if (dt == MF_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
MF_INLINE __m256d lo4(__m256 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
MF_INLINE __m256d hi4(__m256 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }

/* 16 elements widened exactly to fp64 in four vectors. fp32/fp16: v[0..3] =
 * elements 0-3, 4-7, 8-11, 12-15. bf16: a bf16 pair in a 32-bit lane becomes
 * two fp32 values by a shift and a mask (no shuffle), so v[0], v[1] hold the
 * even elements 0..14 and v[2], v[3] the odd ones. Every operand of an element
 * sits in the same lane, so the per-element arithmetic is unchanged. */
MF_INLINE void ld16(mf_dt dt, const void *p, size_t j, __m256d v[4]) {
    if (dt == MF_BF16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + j));
        __m256 e = _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
        __m256 o = _mm256_castsi256_ps(_mm256_and_si256(h, _mm256_set1_epi32((int)0xFFFF0000u)));
        v[0] = lo4(e), v[1] = hi4(e), v[2] = lo4(o), v[3] = hi4(o);
        return;
    }
    __m256 a = ld8(dt, p, j), b = ld8(dt, p, j + 8);
    v[0] = lo4(a), v[1] = hi4(a), v[2] = lo4(b), v[3] = hi4(b);
}

/* Two vectors of 4 all-ones/all-zeros 64-bit masks as 8 32-bit masks. */
MF_INLINE __m256i narrow_mask(__m256d lo, __m256d hi) {
    __m256 s = _mm256_shuffle_ps(_mm256_castpd_ps(lo), _mm256_castpd_ps(hi), _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_permute4x64_epi64(_mm256_castps_si256(s), _MM_SHUFFLE(3, 1, 2, 0));
}

/* fp64 -> fp32 rounded to odd, from the RNE conversion: step back toward zero
 * where RNE rounded away from zero, then set the last bit if inexact. fp32 has
 * >= 2 more bits than bf16/fp16 everywhere, so a following RNE equals one
 * direct RNE from fp64. NaN stays NaN; overflow gives FLT_MAX. */
MF_INLINE __m256i round_odd8(__m256d a, __m256d b) {
    const __m256d mag = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFLL));
    __m128 fa = _mm256_cvtpd_ps(a), fb = _mm256_cvtpd_ps(b);
    __m256d ba = _mm256_cvtps_pd(fa), bb = _mm256_cvtps_pd(fb);
    __m256i in = narrow_mask(_mm256_cmp_pd(ba, a, _CMP_NEQ_OQ), _mm256_cmp_pd(bb, b, _CMP_NEQ_OQ));
    __m256i up = narrow_mask(_mm256_cmp_pd(_mm256_and_pd(ba, mag), _mm256_and_pd(a, mag), _CMP_GT_OQ),
                             _mm256_cmp_pd(_mm256_and_pd(bb, mag), _mm256_and_pd(b, mag), _CMP_GT_OQ));
    __m256i u = _mm256_set_m128i(_mm_castps_si128(fb), _mm_castps_si128(fa));
    u = _mm256_add_epi32(u, up); /* up is -1 */
    return _mm256_or_si256(u, _mm256_and_si256(in, _mm256_set1_epi32(1)));
}

/* 8 fp64 lanes (a: 0-3, b: 4-7) rounded once to 16-bit dtype dt. */
MF_INLINE __m128i narrow8(mf_dt dt, __m256d a, __m256d b) {
    __m256i u = round_odd8(a, b);
    __m256 f = _mm256_castsi256_ps(u);
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
    if (dt == MF_F16) {
        __m128i h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m128i n16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
        return _mm_blendv_epi8(h, _mm_set1_epi16(0x7E00), n16);
    }
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb), 16);
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7FC0), nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

/* 4 fp64 lanes rounded once (RNE) to fp32, NaN canonical. */
MF_INLINE __m128 narrow4_f32(__m256d a) {
    __m128 f = _mm256_cvtpd_ps(a);
    return _mm_blendv_ps(f, _mm_castsi128_ps(_mm_set1_epi32(0x7FC00000)), _mm_cmp_ps(f, f, _CMP_UNORD_Q));
}

MF_INLINE void st32(void *p, __m256i v, int nt) {
    if (nt) _mm256_stream_si256((__m256i *)p, v);
    else _mm256_storeu_si256((__m256i *)p, v);
}

/* 8 fp64 lanes (even elements in e, odd in o: the ld16 bf16 layout) rounded
 * once to bf16, as 16 bf16 values in element order. */
MF_INLINE __m256i narrow16_bf16(__m256d e0, __m256d e1, __m256d o0, __m256d o1) {
    const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7FFF);
    /* Fast path: RNE to fp32 first. Rounding is monotonic and fp32's grid
     * refines bf16's, so only an fp32 result exactly on a bf16 midpoint (low
     * half 0x8000) can round differently from one direct rounding of the fp64
     * value; blocks with such a lane redo the conversion rounding to odd. */
    __m256i ue = _mm256_castps_si256(_mm256_set_m128(_mm256_cvtpd_ps(e1), _mm256_cvtpd_ps(e0)));
    __m256i uo = _mm256_castps_si256(_mm256_set_m128(_mm256_cvtpd_ps(o1), _mm256_cvtpd_ps(o0)));
    const __m256i low = _mm256_set1_epi32(0xFFFF), mid = _mm256_set1_epi32(0x8000);
    __m256i tie = _mm256_or_si256(_mm256_cmpeq_epi32(_mm256_and_si256(ue, low), mid),
                                  _mm256_cmpeq_epi32(_mm256_and_si256(uo, low), mid));
    if (__builtin_expect(!_mm256_testz_si256(tie, tie), 0)) {
        ue = round_odd8(e0, e1);
        uo = round_odd8(o0, o1);
    }
    __m256i ne = _mm256_castps_si256(_mm256_cmp_ps(_mm256_castsi256_ps(ue), _mm256_castsi256_ps(ue), _CMP_UNORD_Q));
    __m256i no = _mm256_castps_si256(_mm256_cmp_ps(_mm256_castsi256_ps(uo), _mm256_castsi256_ps(uo), _CMP_UNORD_Q));
    __m256i re = _mm256_add_epi32(_mm256_add_epi32(ue, bias), _mm256_and_si256(_mm256_srli_epi32(ue, 16), one));
    __m256i ro = _mm256_add_epi32(_mm256_add_epi32(uo, bias), _mm256_and_si256(_mm256_srli_epi32(uo, 16), one));
    re = _mm256_blendv_epi8(_mm256_srli_epi32(re, 16), _mm256_set1_epi32(0x7FC0), ne);
    ro = _mm256_blendv_epi8(_mm256_and_si256(ro, _mm256_set1_epi32((int)0xFFFF0000u)), _mm256_set1_epi32(0x7FC00000),
                            no);
    return _mm256_or_si256(re, ro);
}

/* 16 elements from 4 fp64 vectors (ld16 layout): 64 bytes (fp32) or 32 bytes (fp16/bf16). */
MF_INLINE void store16(mf_dt dt, void *out, size_t j, const __m256d a[4], int nt) {
    if (dt == MF_F32) {
        float *o = (float *)out + j;
        for (int h = 0; h < 2; h++) {
            __m256 v = _mm256_set_m128(narrow4_f32(a[2 * h + 1]), narrow4_f32(a[2 * h]));
            st32(o + 8 * h, _mm256_castps_si256(v), nt);
        }
        return;
    }
    if (dt == MF_BF16) {
        st32((uint16_t *)out + j, narrow16_bf16(a[0], a[1], a[2], a[3]), nt);
        return;
    }
    st32((uint16_t *)out + j, _mm256_set_m128i(narrow8(dt, a[2], a[3]), narrow8(dt, a[0], a[1])), nt);
}

/* Contract: forward.h. Blocks of 16 elements keep their fp64 sums in four
 * registers across all the token's slots; the tail goes through the scalar code. */
MF_INLINE int row_body(mf_dt dt, const mf_fwd_row *t, size_t j0, size_t n, double *acc, int flags, int nt) {
    const int load = flags & MF_FWD_LOAD, fin = flags & MF_FWD_FINAL;
    const int have0 = load || mf_fwd_has_term(t);
    const size_t es = dt == MF_F32 ? 4 : 2;
    if (fin && nt && ((uintptr_t)((char *)t->out + j0 * es) & 31)) nt = 0; /* streaming needs alignment */
    const void *x1 = t->x1, *x2 = t->x2;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const size_t j = j0 + i;
        if ((i & 31) == 0) /* one 64-byte line per row covers 32 elements of 16 bits */
            for (int q = 0; q < t->nnext; q++) {
                const char *pf = (const char *)t->next[q] + j * es;
                _mm_prefetch(pf, _MM_HINT_T0);
                if (dt == MF_F32) _mm_prefetch(pf + 64, _MM_HINT_T0);
            }
        __m256d a[4];
        int have = 0;
        if (load) {
            MF_UNROLL for (int v = 0; v < 4; v++) a[v] = _mm256_loadu_pd(acc + i + 4 * v);
            have = 1;
        } else if (x1) {
            ld16(dt, x1, j, a);
            if (x2) {
                __m256d w[4];
                ld16(dt, x2, j, w);
                MF_UNROLL for (int v = 0; v < 4; v++) a[v] = _mm256_add_pd(a[v], w[v]);
            }
            have = 1;
        } else {
            MF_UNROLL for (int v = 0; v < 4; v++) a[v] = _mm256_setzero_pd();
        }
        for (int q = 0; q < t->nk; q++) {
            const void *x = t->x[q], *b = t->b[q];
            __m256d w[4];
            const void *first = x ? x : b;
            if (!first) continue;
            ld16(dt, first, j, w);
            if (x && b) {
                __m256d u[4];
                ld16(dt, b, j, u);
                MF_UNROLL for (int v = 0; v < 4; v++) w[v] = _mm256_add_pd(w[v], u[v]);
            }
            const __m256d s = _mm256_set1_pd(t->s[q]);
            MF_UNROLL for (int v = 0; v < 4; v++) w[v] = _mm256_mul_pd(s, w[v]);
            if (have)
                MF_UNROLL for (int v = 0; v < 4; v++) a[v] = _mm256_add_pd(a[v], w[v]);
            else
                MF_UNROLL for (int v = 0; v < 4; v++) a[v] = w[v];
            have = 1;
        }
        if (fin) store16(dt, t->out, j, a, nt); /* a is +0.0 when nothing was present */
        else if (have)
            MF_UNROLL for (int v = 0; v < 4; v++) _mm256_storeu_pd(acc + i + 4 * v, a[v]);
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

const mf_fwd_kernels mf_fwd_kernels_avx2 = {"avx2", {row_f32, row_f16, row_bf16}, fence_sfence};
