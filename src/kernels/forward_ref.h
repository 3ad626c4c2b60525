/* forward_ref.h - the forward kernel's per-element arithmetic in plain C: the
 * scalar table is built from it and the SIMD files use it for their tails. */
#ifndef MOEFR_KERNELS_FORWARD_REF_H_
#define MOEFR_KERNELS_FORWARD_REF_H_

#include "kernels/forward.h"
#include "kernels/fp.h"

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

#endif /* MOEFR_KERNELS_FORWARD_REF_H_ */
