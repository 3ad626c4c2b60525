/* gv.h - GT_W-lane generic vectors (GCC/Clang vector extensions) and an
 * fp32 exp on them, shared by the row routines that are written once and
 * built at several widths (gating_core.h, act/swiglu_core.h). The includer
 * defines GT_W (4, 8, or 16 in a file built with AVX-512). Every lane does
 * the same IEEE fp32 operations in the same order, so every width gives the
 * same bits; the build has -ffp-contract=off and the eight-lane files are
 * compiled without -mfma. */
#ifndef MOEFR_OPS_GV_H_
#define MOEFR_OPS_GV_H_

#include <stdint.h>
#include <string.h>
#if GT_W >= 8 && defined(__AVX2__)
#include <immintrin.h>
#endif

#include "kernels/fp.h"

#if GT_W != 4 && GT_W != 8 && GT_W != 16
#error "GT_W must be 4, 8 or 16"
#endif
#if GT_W == 16 && !defined(__AVX512F__)
#error "sixteen lanes are built for AVX-512 only"
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gi_store_lo8 / gi_store_lo16 take each lane's first byte / half as its low part (little endian)"
#endif

/* GT_W-lane generic vectors: SSE2 or AVX2 on x86-64, Advanced SIMD on
 * AArch64, plain scalar code elsewhere. */
typedef float gvf __attribute__((vector_size(4 * GT_W)));
typedef int32_t gvi __attribute__((vector_size(4 * GT_W)));
#define GT_NV (8 / GT_W) /* vectors per block of 8 */
/* (a vector plus a scalar broadcasts it: one instruction where a lane loop
 * may become a chain of inserts) */
static inline gvi gi_splat(int32_t i) {
    const gvi z = {0};
    return z + i;
}
static inline gvf gv_splat(float f) { return (gvf)gi_splat((int32_t)mf_f32_bits(f)); }
static inline gvf gv_load(const float *p) {
    gvf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline gvf gv_loadb(const char *p) {
    gvf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void gv_store(float *p, gvf v) { memcpy(p, &v, sizeof v); }
/* m ? a : b, lane by lane (m all ones or all zeros) */
static inline gvf gv_sel(gvi m, gvf a, gvf b) { return (gvf)(((gvi)a & m) | ((gvi)b & ~m)); }
static inline gvi gi_sel(gvi m, gvi a, gvi b) { return (a & m) | (b & ~m); }

/* GT_W 16-bit values at p, zero-extended into the lanes. On AVX2, eight
 * lanes are one VPMOVZXWD from memory: GCC lowers the generic conversion
 * below to two half-width widenings, a byte shift and an insert, which
 * made the routing-map unpermute's bf16 row sum 4x slower than its fp32
 * one in L1. */
static inline gvi gi_load_u16(const char *p) {
#if GT_W == 16
    return (gvi)_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p));
#elif GT_W == 8 && defined(__AVX2__)
    return (gvi)_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
#else
    typedef uint16_t gvh __attribute__((vector_size(2 * GT_W)));
    gvh h;
    memcpy(&h, p, sizeof h);
    return __builtin_convertvector(h, gvi);
#endif
}

/* GT_W bfloat16 values at p, widened (exactly) to fp32 */
static inline gvf gv_load_bf16(const char *p) { return (gvf)(gi_load_u16(p) << 16); }

/* tab[ix[i]] lane by lane (ix in range): one VGATHERDPS with AVX2 or
 * AVX-512, else a load per lane. */
static inline gvf gv_gather(const float *tab, gvi ix) {
#if GT_W == 16
    return (gvf)_mm512_i32gather_ps((__m512i)ix, tab, 4);
#elif GT_W == 8 && defined(__AVX2__)
    return (gvf)_mm256_i32gather_ps(tab, (__m256i)ix, 4);
#else
    gvf v;
    for (int i = 0; i < GT_W; i++) v[i] = tab[ix[i]];
    return v;
#endif
}

/* The low 8 or 16 bits of each lane (little endian: its first byte or
 * half), GT_W of them stored at p: a narrowing store for lanes already in
 * range (the vectoriser's own conversion was a chain of lane extracts). */
static inline void gi_store_lo8(void *p, gvi v) {
    typedef int8_t gvb __attribute__((vector_size(4 * GT_W)));
    typedef int8_t gvb1 __attribute__((vector_size(GT_W)));
    const gvb b = (gvb)v;
#if GT_W == 16
    const gvb1 o = __builtin_shufflevector(b, b, 0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60);
#elif GT_W == 8
    const gvb1 o = __builtin_shufflevector(b, b, 0, 4, 8, 12, 16, 20, 24, 28);
#else
    const gvb1 o = __builtin_shufflevector(b, b, 0, 4, 8, 12);
#endif
    memcpy(p, &o, sizeof o);
}
static inline void gi_store_lo16(void *p, gvi v) {
    typedef uint16_t gvh2 __attribute__((vector_size(4 * GT_W)));
    typedef uint16_t gvh __attribute__((vector_size(2 * GT_W)));
    const gvh2 w = (gvh2)v;
#if GT_W == 16
    const gvh o = __builtin_shufflevector(w, w, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
#elif GT_W == 8
    const gvh o = __builtin_shufflevector(w, w, 0, 2, 4, 6, 8, 10, 12, 14);
#else
    const gvh o = __builtin_shufflevector(w, w, 0, 2, 4, 6);
#endif
    memcpy(p, &o, sizeof o);
}

/* v rounded to bfloat16 lane by lane (mf_f32_to_bf16: nearest even, NaN kept
 * quiet), the GT_W results stored at p (little endian: each lane's low half).
 * Built with AVX512-BF16 (sixteen lanes), that is one VCVTNEPS2BF16, which
 * rounds and quiets NaN the same way but flushes subnormal inputs to zero:
 * a vector holding one is rounded in integers, as everywhere else. */
static inline void gv_store_bf16_int(char *p, gvf v) {
    typedef uint32_t gvu __attribute__((vector_size(4 * GT_W)));
    const gvu u = (gvu)v;
    const gvi nan = (gvi)(u & 0x7FFFFFFFu) > gi_splat(0x7F800000);
    const gvu r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16, q = (u >> 16) | 0x40u;
    gi_store_lo16(p, gi_sel(nan, (gvi)q, (gvi)r));
}
#if GT_W == 16 && defined(__AVX512BF16__)
static inline void gv_store_bf16(char *p, gvf v) {
    const __m512i u = (__m512i)v;
    if (__builtin_expect(_mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7F800000)) &
                             _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x007FFFFF)),
                         0)) {
        gv_store_bf16_int(p, v);
        return;
    }
    _mm256_storeu_si256((__m256i *)(void *)p, (__m256i)_mm512_cvtneps_pbh((__m512)v));
}
#else
static inline void gv_store_bf16(char *p, gvf v) { gv_store_bf16_int(p, v); }
#endif

/* exp(a) for a <= 0 (and NaN), within 2 ulp for normal results: a = n*ln2 + r
 * with |r| <= ln2/2 (ln2 in two parts, the first exact in 9 bits, so n*C1 is
 * exact), exp(r) by a degree-7 polynomial (Horner), times 2^n; a < -104
 * gives +0. n comes from the bits of a/ln2 + 1.5*2^23, never from a
 * float-to-int conversion (a NaN lane stays defined and gives NaN). In three
 * steps, so that a caller can run each over a block (act/swiglu_core.h): */
#define GT_EXP_LO -104.0f
#define GT_EXP_MAGIC 12582912.0f /* 1.5 * 2^23 */

/* step 1: r, and *tp = c/ln2 + 1.5*2^23, whose low bits hold n = round(c/ln2)
 * (c: a clamped to GT_EXP_LO) */
static inline gvf gt_exp_reduce(gvf a, gvf *tp) {
    const gvf lo = gv_splat(GT_EXP_LO), magic = gv_splat(GT_EXP_MAGIC);
    const gvf c = gv_sel(a < lo, lo, a);
    const gvf t = c * gv_splat(1.44269504088896341f) + magic;
    const gvf n = t - magic; /* exact */
    gvf r = c - n * gv_splat(0.693359375f);
    r = r - n * gv_splat(-2.12194440e-4f);
    *tp = t;
    return r;
}

/* step 2: exp(r), |r| <= ln2/2 */
static inline gvf gt_exp_poly(gvf r) {
    gvf q = gv_splat(1.9875691500e-4f);
    q = q * r + gv_splat(1.3981999507e-3f);
    q = q * r + gv_splat(8.3334519073e-3f);
    q = q * r + gv_splat(4.1665795894e-2f);
    q = q * r + gv_splat(1.6666665459e-1f);
    q = q * r + gv_splat(5.0000001201e-1f);
    return q * (r * r) + r + gv_splat(1.0f);
}

/* step 3: e * 2^n, n in [-150, 0] from t, rounded once (subnormal results
 * come out right). With AVX-512 that is one VSCALEFPS (correctly rounded);
 * elsewhere 2^n is built from the exponent bits in two halves, n1 = n / 2
 * toward 0 and n - n1, both normal: e * 2^n1 is exact (e is in [0.7, 1.5))
 * and the second product rounds once, so both give the same bits. On a NaN
 * lane e is NaN and so is the result, whatever n holds. */
static inline gvf gt_exp_scale(gvf e, gvf t) {
#if GT_W == 16
    return (gvf)_mm512_scalef_ps((__m512)e, (__m512)(t - gv_splat(GT_EXP_MAGIC)));
#else
    const gvi ni = (gvi)t - (gvi)gv_splat(GT_EXP_MAGIC);
    gvi nc = gi_sel(ni < gi_splat(-150), gi_splat(-150), ni);
    nc = gi_sel(nc > gi_splat(0), gi_splat(0), nc);
    const gvi n1 = (nc - (nc >> 31)) >> 1, n2 = nc - n1;
    const gvf s1 = (gvf)((n1 + gi_splat(127)) << 23), s2 = (gvf)((n2 + gi_splat(127)) << 23);
    return e * s1 * s2;
#endif
}

static inline gvf gt_expv(gvf a) {
    gvf t;
    const gvf r = gt_exp_reduce(a, &t); /* (sets t before the scale reads it) */
    const gvf v = gt_exp_scale(gt_exp_poly(r), t);
    return gv_sel(a < gv_splat(GT_EXP_LO), gv_splat(0.0f), v);
}

#endif /* MOEFR_OPS_GV_H_ */
