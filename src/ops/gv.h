/* gv.h - GT_W-lane generic vectors (GCC/Clang vector extensions) and an
 * fp32 exp on them, shared by the row routines that are written once and
 * built at two widths (gating_core.h, act/swiglu_core.h). The includer
 * defines GT_W (4 or 8). Every lane does the same IEEE fp32 operations in the
 * same order, so both widths give the same bits; the build has
 * -ffp-contract=off and the eight-lane files are compiled without -mfma. */
#ifndef MOEFR_OPS_GV_H_
#define MOEFR_OPS_GV_H_

#include <stdint.h>
#include <string.h>
#if GT_W == 8 && defined(__AVX2__)
#include <immintrin.h>
#endif

#include "kernels/fp.h"

#if GT_W != 4 && GT_W != 8
#error "GT_W must be 4 or 8"
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

/* GT_W bfloat16 values at p, widened (exactly) to fp32. On AVX2, eight
 * lanes are one VPMOVZXWD from memory: GCC lowers the generic conversion
 * below to two half-width widenings, a byte shift and an insert, which
 * made the routing-map unpermute's bf16 row sum 4x slower than its fp32
 * one in L1. */
static inline gvf gv_load_bf16(const char *p) {
#if GT_W == 8 && defined(__AVX2__)
    return (gvf)_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)), 16);
#else
    typedef uint16_t gvh __attribute__((vector_size(2 * GT_W)));
    gvh h;
    memcpy(&h, p, sizeof h);
    return (gvf)(__builtin_convertvector(h, gvi) << 16);
#endif
}

/* The low 8 or 16 bits of each lane (little endian: its first byte or
 * half), GT_W of them stored at p: a narrowing store for lanes already in
 * range (the vectoriser's own conversion was a chain of lane extracts). */
static inline void gi_store_lo8(void *p, gvi v) {
    typedef int8_t gvb __attribute__((vector_size(4 * GT_W)));
    typedef int8_t gvb1 __attribute__((vector_size(GT_W)));
    const gvb b = (gvb)v;
#if GT_W == 8
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
#if GT_W == 8
    const gvh o = __builtin_shufflevector(w, w, 0, 2, 4, 6, 8, 10, 12, 14);
#else
    const gvh o = __builtin_shufflevector(w, w, 0, 2, 4, 6);
#endif
    memcpy(p, &o, sizeof o);
}

/* v rounded to bfloat16 lane by lane (mf_f32_to_bf16: nearest even, NaN kept
 * quiet), the GT_W results stored at p (little endian: each lane's low half) */
static inline void gv_store_bf16(char *p, gvf v) {
    typedef uint32_t gvu __attribute__((vector_size(4 * GT_W)));
    const gvu u = (gvu)v;
    const gvi nan = (gvi)(u & 0x7FFFFFFFu) > gi_splat(0x7F800000);
    const gvu r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16, q = (u >> 16) | 0x40u;
    gi_store_lo16(p, gi_sel(nan, (gvi)q, (gvi)r));
}

/* exp(a) for a <= 0 (and NaN), within 2 ulp for normal results: a = n*ln2 + t
 * with |t| <= ln2/2 (ln2 in two parts, the first exact in 9 bits, so n*C1 is
 * exact), exp(t) by a degree-7 polynomial (Horner), times 2^n built from the
 * exponent bits in two halves so subnormal results come out right; a < -104
 * gives +0. n comes from the bits of a/ln2 + 1.5*2^23, never from a
 * float-to-int conversion (a NaN lane stays defined and gives NaN). */
static inline gvf gt_expv(gvf a) {
    const gvf lo = gv_splat(-104.0f), magic = gv_splat(12582912.0f); /* 1.5 * 2^23 */
    const gvi tiny = a < lo;
    const gvf c = gv_sel(tiny, lo, a);
    const gvf t = c * gv_splat(1.44269504088896341f) + magic;
    const gvf n = t - magic; /* round(c / ln2), exact */
    const gvi ni = (gvi)t - (gvi)magic;
    gvf r = c - n * gv_splat(0.693359375f);
    r = r - n * gv_splat(-2.12194440e-4f);
    gvf q = gv_splat(1.9875691500e-4f);
    q = q * r + gv_splat(1.3981999507e-3f);
    q = q * r + gv_splat(8.3334519073e-3f);
    q = q * r + gv_splat(4.1665795894e-2f);
    q = q * r + gv_splat(1.6666665459e-1f);
    q = q * r + gv_splat(5.0000001201e-1f);
    const gvf e = q * (r * r) + r + gv_splat(1.0f);
    /* n in [-150, 0]: 2^n = 2^n1 * 2^(n - n1), both normal (n1 = n / 2 toward 0) */
    gvi nc = gi_sel(ni < gi_splat(-150), gi_splat(-150), ni);
    nc = gi_sel(nc > gi_splat(0), gi_splat(0), nc);
    const gvi n1 = (nc - (nc >> 31)) >> 1, n2 = nc - n1;
    const gvf s1 = (gvf)((n1 + gi_splat(127)) << 23), s2 = (gvf)((n2 + gi_splat(127)) << 23);
    const gvf v = e * s1 * s2;
    return gv_sel(tiny, gv_splat(0.0f), v);
}

#endif /* MOEFR_OPS_GV_H_ */
