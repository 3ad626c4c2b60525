/* tail.h - one element of the fused scale/dot kernels in plain C, shared by the
 * SIMD files for the elements a vector does not cover (same ops as scalar.c). */
#ifndef MOEFR_KERNELS_TAIL_H_
#define MOEFR_KERNELS_TAIL_H_

#include "kernels/fp.h"
#include "kernels/kernels.h"

static inline float mf_ld_dt(mf_dt dt, const void *p, size_t j) {
    if (dt == MF_F32) return ((const float *)p)[j];
    if (dt == MF_F16) return mf_f16_to_f32(((const uint16_t *)p)[j]);
    return mf_bf16_to_f32(((const uint16_t *)p)[j]);
}

static inline void mf_st_dt(mf_dt dt, void *p, size_t j, float v) {
    if (dt == MF_F32) ((float *)p)[j] = v;
    else if (dt == MF_F16) ((uint16_t *)p)[j] = mf_f32_to_f16(v);
    else ((uint16_t *)p)[j] = mf_f32_to_bf16(v);
}

/* Elements [j0, n) of scale_dot; acc lane is j & 7 (j counts from the call's start). */
static inline void mf_scale_dot_tail(mf_dt dt, const void *g, float s, void *out, const void *x, const void *b,
                                     size_t j0, size_t n, double acc[8]) {
    for (size_t j = j0; j < n; j++) {
        float gv = mf_ld_dt(dt, g, j);
        if (out) mf_st_dt(dt, out, j, gv * s);
        if (x || b) {
            double t;
            if (x && b) t = (double)mf_ld_dt(dt, x, j) + (double)mf_ld_dt(dt, b, j);
            else t = x ? mf_ld_dt(dt, x, j) : mf_ld_dt(dt, b, j);
            acc[j & 7] += t * (double)gv;
        }
    }
}

#endif /* MOEFR_KERNELS_TAIL_H_ */
