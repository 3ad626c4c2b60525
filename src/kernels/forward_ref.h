/* forward_ref.h - the forward kernel's per-element arithmetic in plain C: the
 * scalar table is built from it and the SIMD files use it for their tails. */
#ifndef MOEFR_KERNELS_FORWARD_REF_H_
#define MOEFR_KERNELS_FORWARD_REF_H_

#include <math.h>

#include "kernels/forward.h"
#include "kernels/fp.h"
#include "kernels/tail.h"

static inline double mf_fwd_ld(mf_dt dt, const void *p, size_t j) {
    if (dt == MF_F32) return ((const float *)p)[j];
    if (dt == MF_F16) return mf_f16_to_f32(((const uint16_t *)p)[j]);
    return mf_bf16_to_f32(((const uint16_t *)p)[j]);
}

/* One rounding, RNE; NaN becomes the dtype's canonical quiet NaN so every path
 * stores the same bits whatever NaN payload the fp64 operations carried. */
static inline void mf_fwd_st(mf_dt dt, void *p, size_t j, double v) {
    if (dt == MF_F32) {
        float f = v != v ? mf_bits_f32(0x7FC00000u) : (float)v;
        ((float *)p)[j] = f;
    } else if (dt == MF_F16) {
        ((uint16_t *)p)[j] = mf_f64_to_f16(v);
    } else {
        ((uint16_t *)p)[j] = mf_f64_to_bf16(v);
    }
}

/* Whether x1 or any slot term exists: the same for every element of a call. */
static inline int mf_fwd_has_term(const mf_fwd_row *t) {
    if (t->x1) return 1;
    for (int q = 0; q < t->nk; q++)
        if (t->x[q] || t->b[q]) return 1;
    return 0;
}

/* Elements [j0 + from, j0 + n) of the contract in forward.h. */
static inline int mf_fwd_row_ref(mf_dt dt, const mf_fwd_row *t, size_t j0, size_t from, size_t n,
                                 double *acc, int flags) {
    const int have0 = (flags & MF_FWD_LOAD) || mf_fwd_has_term(t);
    for (size_t i = from; i < n; i++) {
        const size_t j = j0 + i;
        double a = 0.0;
        int have = 0;
        if (flags & MF_FWD_LOAD) {
            a = acc[i];
            have = 1;
        } else if (t->x1) {
            a = mf_fwd_ld(dt, t->x1, j);
            if (t->x2) a = a + mf_fwd_ld(dt, t->x2, j);
            have = 1;
        }
        for (int q = 0; q < t->nk; q++) {
            const void *x = t->x[q], *b = t->b[q];
            double v;
            if (x && b) v = mf_fwd_ld(dt, x, j) + mf_fwd_ld(dt, b, j);
            else if (x) v = mf_fwd_ld(dt, x, j);
            else if (b) v = mf_fwd_ld(dt, b, j);
            else continue;
            v = t->s[q] * v;
            a = have ? a + v : v;
            have = 1;
        }
        if (flags & MF_FWD_FINAL) mf_fwd_st(dt, t->out, j, have ? a : 0.0);
        else if (have) acc[i] = a;
    }
    return have0;
}

/* The fp32 order (DESIGN.md, "The forward's fp32 groups"). A token whose
 * slots fit one call (flags == MF_FWD_FINAL) and whose scales are fp32 values
 * sums each element in fp32: x1 + x2, then per present slot fma(s, x + b, a)
 * (the first term alone: s * (x + b)). Groups of 32 elements from the call's
 * first one keep those sums when every element passes mf_fwd_in_range;
 * otherwise the whole group takes the fp64 order above. A pass bounds the
 * error by 65 * 2^-24 of the sum of |terms| (SPEC section 8 allows 1e-5). */
#define MF_FWD_GROUP 32
#define MF_FWD_LO_BITS 0x0D800000u /* 2^-100 as fp32 bits */

/* Bits above every value that may keep its fp32 sum: fp32 inf; for 16-bit
 * outputs the largest finite value, so a sum whose rounding could overflow
 * (or round differently near the top) takes the fp64 order. */
static inline uint32_t mf_fwd_hi_bits(mf_dt dt) {
    if (dt == MF_F32) return 0x7F800000u;
    if (dt == MF_F16) return 0x477FE000u; /* 65504 */
    return 0x7F7F0000u;                   /* bf16's largest finite */
}
static inline int mf_fwd_in_range(float a, uint32_t hi) {
    const uint32_t u = mf_f32_bits(a) & 0x7FFFFFFFu;
    return u >= MF_FWD_LO_BITS && u < hi;
}
/* The token's scales as fp32, or 0 when one is not an fp32 value (then the
 * fp64 order applies; the operators' scales always are). */
static inline int mf_fwd_s32(const mf_fwd_row *t, float *s32) {
    for (int q = 0; q < t->nk; q++) {
        s32[q] = (float)t->s[q];
        if ((double)s32[q] != t->s[q]) return 0;
    }
    return 1;
}
/* One element's fp32 sum; the caller knows the row has a term. */
static inline float mf_fwd_sum32(mf_dt dt, const mf_fwd_row *t, const float *s32, size_t j) {
    float a = 0.0f;
    int have = 0;
    if (t->x1) {
        a = mf_ld_dt(dt, t->x1, j);
        if (t->x2) a = a + mf_ld_dt(dt, t->x2, j);
        have = 1;
    }
    for (int q = 0; q < t->nk; q++) {
        const void *x = t->x[q], *b = t->b[q];
        float v;
        if (x && b) v = mf_ld_dt(dt, x, j) + mf_ld_dt(dt, b, j);
        else if (x) v = mf_ld_dt(dt, x, j);
        else if (b) v = mf_ld_dt(dt, b, j);
        else continue;
        a = have ? mf_fmaf(s32[q], v, a) : s32[q] * v;
        have = 1;
    }
    return a;
}
/* Elements [j0 + from, j0 + n) as one group (n - from <= MF_FWD_GROUP). */
static inline void mf_fwd_group32_ref(mf_dt dt, const mf_fwd_row *t, const float *s32, size_t j0, size_t from,
                                      size_t n) {
    float a[MF_FWD_GROUP];
    const uint32_t hi = mf_fwd_hi_bits(dt);
    int ok = 1;
    for (size_t i = from; i < n; i++) {
        a[i - from] = mf_fwd_sum32(dt, t, s32, j0 + i);
        ok &= mf_fwd_in_range(a[i - from], hi);
    }
    if (!ok) {
        mf_fwd_row_ref(dt, t, j0, from, n, NULL, MF_FWD_FINAL);
        return;
    }
    for (size_t i = from; i < n; i++) mf_st_dt(dt, t->out, j0 + i, a[i - from]);
}

#endif /* MOEFR_KERNELS_FORWARD_REF_H_ */
