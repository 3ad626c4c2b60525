/* vec_neon.h - the vector layer on AArch64 Advanced SIMD (vec.h has the
 * contract): mf_vf is four Q registers of fp32, mf_vd four of fp64. fp16
 * widens and narrows with FCVTL/FCVTN (round to nearest even under Linux's
 * default FPCR: no flush-to-zero, no default-NaN), bf16 with integer shifts
 * and the same rounding in integers as fp.h, so every lane is bit-identical
 * with the x86 layers. fp64 -> 16-bit rounds once through FCVTXN (fp64 ->
 * fp32 rounded to odd), then RNE. No streaming stores. */
#ifndef MOEFR_KERNELS_VEC_NEON_H_
#define MOEFR_KERNELS_VEC_NEON_H_

#include <arm_neon.h>

#include "kernels/forward_ref.h"
#include "kernels/vec.h"

#define MF_V_ISA "neon"
#define MF_V_QMAX 4 /* 4 slots x 4 Q registers of sums, plus g and temporaries, in 32 */
#define MF_V_FWD_NV 4
#define MF_V_NT 0
#define MF_V_NT_MULTIROW 0
#define MF_V_NORMAL_HINT 0

typedef struct { float32x4_t v[4]; } mf_vf;
typedef struct { float64x2_t v[4]; } mf_vd;
typedef uint32x4_t mf_vm;

/* 4 elements widened exactly to fp32. */
MF_INLINE float32x4_t nn_ld4(mf_dt dt, const void *p, size_t j) {
    if (dt == MF_F32) return vld1q_f32((const float *)p + j);
    uint16x4_t h = vld1_u16((const uint16_t *)p + j);
    if (dt == MF_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

MF_INLINE mf_vf vf_ld(mf_dt dt, const void *p, size_t j) {
    mf_vf r;
    for (int q = 0; q < 4; q++) r.v[q] = nn_ld4(dt, p, j + 4 * (size_t)q);
    return r;
}
MF_INLINE mf_vf vf_set1(float s) {
    mf_vf r;
    for (int q = 0; q < 4; q++) r.v[q] = vdupq_n_f32(s);
    return r;
}
MF_INLINE mf_vf vf_mul(mf_vf a, mf_vf b) {
    for (int q = 0; q < 4; q++) a.v[q] = vmulq_f32(a.v[q], b.v[q]);
    return a;
}

MF_INLINE mf_vf vf_zero(void) { return vf_set1(0.0f); }
MF_INLINE mf_vf vf_add(mf_vf a, mf_vf b) {
    for (int q = 0; q < 4; q++) a.v[q] = vaddq_f32(a.v[q], b.v[q]);
    return a;
}
MF_INLINE mf_vf vf_fma(mf_vf a, mf_vf s, mf_vf v) {
    for (int q = 0; q < 4; q++) a.v[q] = vfmaq_f32(a.v[q], s.v[q], v.v[q]);
    return a;
}
MF_INLINE mf_vf vf_madd_exact(mf_vf a, mf_vf x, mf_vf g) { return vf_fma(a, x, g); } /* exact: fused is the same */
MF_INLINE mf_vf vf_ldu(const float *p) {
    mf_vf r;
    for (int q = 0; q < 4; q++) r.v[q] = vld1q_f32(p + 4 * q);
    return r;
}
MF_INLINE void vf_stu(float *p, mf_vf a) {
    for (int q = 0; q < 4; q++) vst1q_f32(p + 4 * q, a.v[q]);
}
MF_INLINE int vf_finite(mf_vf a) {
    const uint32x4_t e = vdupq_n_u32(0x7F800000u);
    uint32x4_t m = vdupq_n_u32(0);
    for (int q = 0; q < 4; q++) m = vorrq_u32(m, vceqq_u32(vandq_u32(vreinterpretq_u32_f32(a.v[q]), e), e));
    return vmaxvq_u32(m) == 0;
}
MF_INLINE mf_vf vf_ldp(mf_dt dt, const void *p, size_t j) { return vf_ld(dt, p, j); }
MF_INLINE int vf_in_range(mf_vf a, uint32_t hi) {
    const uint32x4_t mag = vdupq_n_u32(0x7FFFFFFFu), lo = vdupq_n_u32(MF_FWD_LO_BITS), h = vdupq_n_u32(hi);
    uint32x4_t bad = vdupq_n_u32(0);
    for (int q = 0; q < 4; q++) {
        uint32x4_t u = vandq_u32(vreinterpretq_u32_f32(a.v[q]), mag);
        bad = vorrq_u32(bad, vorrq_u32(vcltq_u32(u, lo), vcgeq_u32(u, h)));
    }
    return vmaxvq_u32(bad) == 0;
}
MF_INLINE mf_vm vm_init(void) { return vdupq_n_u32(0xFFFFFFFFu); }
MF_INLINE mf_vm vm_nzmin(mf_vm m, mf_vf a) {
    for (int q = 0; q < 4; q++)
        m = vminq_u32(m, vsubq_u32(vandq_u32(vreinterpretq_u32_f32(a.v[q]), vdupq_n_u32(0x7FFFFFFFu)), vdupq_n_u32(1)));
    return m;
}
MF_INLINE mf_vm vm_nzmin16(mf_vm m, const void *p, size_t j) {
    uint16x8_t r = vreinterpretq_u16_u32(m);
    for (int q = 0; q < 2; q++) {
        uint16x8_t h = vld1q_u16((const uint16_t *)p + j + 8 * (size_t)q);
        r = vminq_u16(r, vsubq_u16(vandq_u16(h, vdupq_n_u16(0x7FFF)), vdupq_n_u16(1)));
    }
    return vreinterpretq_u32_u16(r);
}
MF_INLINE uint32_t vm_hmin16(mf_vm m) { return vminvq_u16(vreinterpretq_u16_u32(m)); }
MF_INLINE uint32_t vm_hmin(mf_vm m) { return vminvq_u32(m); }

/* fp32 -> bf16 bits in each 32-bit lane's low half: RNE, NaN quieted as fp.h. */
MF_INLINE uint16x4_t nn_bf16_rne(float32x4_t v) {
    uint32x4_t u = vreinterpretq_u32_f32(v);
    uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
    uint32x4_t r = vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7FFF)), lsb);
    uint32x4_t nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7FFFFFFF)), vdupq_n_u32(0x7F800000));
    uint32x4_t q = vorrq_u32(u, vdupq_n_u32(0x400000)); /* quiet bit: (u >> 16) | 0x40 after the shift */
    return vshrn_n_u32(vbslq_u32(nan, q, r), 16);
}
MF_INLINE uint16x4_t nn_narrow4(mf_dt dt, float32x4_t v) {
    if (dt == MF_F16) return vreinterpret_u16_f16(vcvt_f16_f32(v));
    return nn_bf16_rne(v);
}
MF_INLINE void vf_st32(mf_dt dt, void *p, size_t j, mf_vf lo, mf_vf hi, int nt, int normal) {
    (void)nt, (void)normal;
    if (dt == MF_F32) {
        float *o = (float *)p + j;
        for (int q = 0; q < 4; q++) vst1q_f32(o + 4 * q, lo.v[q]);
        for (int q = 0; q < 4; q++) vst1q_f32(o + 16 + 4 * q, hi.v[q]);
        return;
    }
    uint16_t *o = (uint16_t *)p + j;
    for (int q = 0; q < 2; q++) {
        vst1q_u16(o + 8 * q, vcombine_u16(nn_narrow4(dt, lo.v[2 * q]), nn_narrow4(dt, lo.v[2 * q + 1])));
        vst1q_u16(o + 16 + 8 * q, vcombine_u16(nn_narrow4(dt, hi.v[2 * q]), nn_narrow4(dt, hi.v[2 * q + 1])));
    }
}
MF_INLINE void vf_stp(mf_dt dt, void *p, size_t j, const mf_vf v[2], int nt) {
    vf_st32(dt, p, j, v[0], v[1], nt, 1);
}

MF_INLINE mf_vd vd_ld(mf_dt dt, const void *p, size_t j) {
    mf_vd r;
    if (dt == MF_F32) {
        for (int q = 0; q < 4; q++) r.v[q] = vcvt_f64_f32(vld1_f32((const float *)p + j + 2 * (size_t)q));
        return r;
    }
    for (int h = 0; h < 2; h++) {
        float32x4_t f = nn_ld4(dt, p, j + 4 * (size_t)h);
        r.v[2 * h] = vcvt_f64_f32(vget_low_f32(f));
        r.v[2 * h + 1] = vcvt_high_f64_f32(f);
    }
    return r;
}
MF_INLINE mf_vd vd_zero(void) {
    mf_vd r;
    for (int q = 0; q < 4; q++) r.v[q] = vdupq_n_f64(0.0);
    return r;
}
MF_INLINE mf_vd vd_set1(double s) {
    mf_vd r;
    for (int q = 0; q < 4; q++) r.v[q] = vdupq_n_f64(s);
    return r;
}
MF_INLINE mf_vd vd_ldu(const double *p) {
    mf_vd r;
    for (int q = 0; q < 4; q++) r.v[q] = vld1q_f64(p + 2 * q);
    return r;
}
MF_INLINE void vd_stu(double *p, mf_vd a) {
    for (int q = 0; q < 4; q++) vst1q_f64(p + 2 * q, a.v[q]);
}
MF_INLINE mf_vd vd_add(mf_vd a, mf_vd b) {
    for (int q = 0; q < 4; q++) a.v[q] = vaddq_f64(a.v[q], b.v[q]);
    return a;
}
MF_INLINE mf_vd vd_mul(mf_vd a, mf_vd b) {
    for (int q = 0; q < 4; q++) a.v[q] = vmulq_f64(a.v[q], b.v[q]);
    return a;
}
MF_INLINE mf_vd vd_madd_exact(mf_vd a, mf_vd t, mf_vd g) {
    for (int q = 0; q < 4; q++) a.v[q] = vfmaq_f64(a.v[q], t.v[q], g.v[q]);
    return a;
}
MF_INLINE mf_vd vd_fold16(mf_vd a, mf_vf s) {
    for (int h = 0; h < 2; h++) { /* lanes 8h..8h+7 of s onto the 8 sums */
        a.v[0] = vaddq_f64(a.v[0], vcvt_f64_f32(vget_low_f32(s.v[2 * h])));
        a.v[1] = vaddq_f64(a.v[1], vcvt_high_f64_f32(s.v[2 * h]));
        a.v[2] = vaddq_f64(a.v[2], vcvt_f64_f32(vget_low_f32(s.v[2 * h + 1])));
        a.v[3] = vaddq_f64(a.v[3], vcvt_high_f64_f32(s.v[2 * h + 1]));
    }
    return a;
}

/* Forward layout: element order. */
MF_INLINE void vd_ld16p(mf_dt dt, const void *p, size_t j, mf_vd v[2]) {
    v[0] = vd_ld(dt, p, j);
    v[1] = vd_ld(dt, p, j + 8);
}
/* 4 fp64 lanes rounded once to dt (NaN canonical: forward_ref.h's mf_fwd_st). */
MF_INLINE float32x4_t nn_odd4(float64x2_t a, float64x2_t b) { return vcvtx_high_f32_f64(vcvtx_f32_f64(a), b); }
MF_INLINE void nn_st8p(mf_dt dt, void *p, size_t j, mf_vd v) {
    if (dt == MF_F32) {
        for (int h = 0; h < 2; h++) {
            float32x4_t f = vcvt_high_f32_f64(vcvt_f32_f64(v.v[2 * h]), v.v[2 * h + 1]);
            uint32x4_t ok = vceqq_f32(f, f);
            vst1q_f32((float *)p + j + 4 * (size_t)h,
                      vbslq_f32(ok, f, vreinterpretq_f32_u32(vdupq_n_u32(0x7FC00000u))));
        }
        return;
    }
    uint16x4_t r[2];
    for (int h = 0; h < 2; h++) {
        /* round to odd into fp32 (>= 2 more bits than fp16/bf16 everywhere),
         * then one RNE: the same as one direct RNE from fp64 */
        float32x4_t f = nn_odd4(v.v[2 * h], v.v[2 * h + 1]);
        uint16x4_t nan = vmovn_u32(vmvnq_u32(vceqq_f32(f, f)));
        if (dt == MF_F16) r[h] = vbsl_u16(nan, vdup_n_u16(0x7E00), vreinterpret_u16_f16(vcvt_f16_f32(f)));
        else r[h] = vbsl_u16(nan, vdup_n_u16(0x7FC0), nn_bf16_rne(f));
    }
    vst1q_u16((uint16_t *)p + j, vcombine_u16(r[0], r[1]));
}
MF_INLINE void vd_st32p(mf_dt dt, void *p, size_t j, const mf_vd v[4], int nt) {
    (void)nt;
    for (int q = 0; q < 4; q++) nn_st8p(dt, p, j + 8 * (size_t)q, v[q]);
}

MF_INLINE void v_prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }
MF_INLINE void v_stream64(void *d, const void *s) { memcpy(d, s, 64); }
static void v_fence(void) {}

#endif /* MOEFR_KERNELS_VEC_NEON_H_ */
