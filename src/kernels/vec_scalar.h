/* vec_scalar.h - the vector-primitive layer in plain C: the "vectors" are
 * arrays, every lane operation is the IEEE operation fp.h defines. The scalar
 * tables are the template kernels (kbody.h, fbody.h) over this layer, so the
 * reference and every SIMD path run one algorithm. See vec.h for the contract. */
#ifndef MOEFR_KERNELS_VEC_SCALAR_H_
#define MOEFR_KERNELS_VEC_SCALAR_H_

#include <math.h>
#include <string.h>

#include "kernels/forward_ref.h"
#include "kernels/vec.h"

#define MF_V_ISA "scalar"
#define MF_V_NO_UNROLL 1
/* One slot per pass: interleaving slots only hides SIMD latency, and every
 * extra constant-Q body is another instantiation of the templates (compile
 * time; scalar.c is also built under the sanitizers). Same bits for any Q. */
#define MF_V_QMAX 1
#define MF_V_FWD_NV 4
#define MF_V_NT 0
#define MF_V_NT_MULTIROW 0
#define MF_V_NORMAL_HINT 0

typedef struct { float v[16]; } mf_vf;
typedef struct { double v[8]; } mf_vd;
typedef struct { uint32_t v[16]; } mf_vm;

MF_INLINE mf_vf vf_ld(mf_dt dt, const void *p, size_t j) {
    mf_vf r;
    for (int l = 0; l < 16; l++) r.v[l] = mf_ld_dt(dt, p, j + (size_t)l);
    return r;
}
MF_INLINE mf_vf vf_set1(float s) {
    mf_vf r;
    for (int l = 0; l < 16; l++) r.v[l] = s;
    return r;
}
MF_INLINE mf_vf vf_mul(mf_vf a, mf_vf b) {
    for (int l = 0; l < 16; l++) a.v[l] = a.v[l] * b.v[l];
    return a;
}
MF_INLINE mf_vf vf_zero(void) { return vf_set1(0.0f); }
MF_INLINE mf_vf vf_add(mf_vf a, mf_vf b) {
    for (int l = 0; l < 16; l++) a.v[l] = a.v[l] + b.v[l];
    return a;
}
MF_INLINE mf_vf vf_madd_exact(mf_vf a, mf_vf x, mf_vf g) {
    for (int l = 0; l < 16; l++) a.v[l] = a.v[l] + x.v[l] * g.v[l]; /* -ffp-contract=off: mul, then add */
    return a;
}
MF_INLINE mf_vf vf_ldu(const float *p) {
    mf_vf r;
    memcpy(r.v, p, sizeof r.v);
    return r;
}
MF_INLINE void vf_stu(float *p, mf_vf a) { memcpy(p, a.v, sizeof a.v); }
MF_INLINE int vf_finite(mf_vf a) {
    int ok = 1;
    for (int l = 0; l < 16; l++) ok &= (mf_f32_bits(a.v[l]) & 0x7F800000u) != 0x7F800000u;
    return ok;
}
MF_INLINE mf_vf vf_fma(mf_vf a, mf_vf s, mf_vf v) {
    for (int l = 0; l < 16; l++) a.v[l] = mf_fmaf(s.v[l], v.v[l], a.v[l]);
    return a;
}
MF_INLINE mf_vf vf_ldp(mf_dt dt, const void *p, size_t j) { return vf_ld(dt, p, j); }
MF_INLINE int vf_in_range(mf_vf a, uint32_t hi) {
    int ok = 1;
    for (int l = 0; l < 16; l++) ok &= mf_fwd_in_range(a.v[l], hi);
    return ok;
}
MF_INLINE mf_vm vm_init(void) {
    mf_vm r;
    for (int l = 0; l < 16; l++) r.v[l] = 0xFFFFFFFFu;
    return r;
}
MF_INLINE mf_vm vm_nzmin(mf_vm m, mf_vf a) {
    for (int l = 0; l < 16; l++) {
        uint32_t u = (mf_f32_bits(a.v[l]) & 0x7FFFFFFFu) - 1u;
        m.v[l] = u < m.v[l] ? u : m.v[l];
    }
    return m;
}
MF_INLINE mf_vm vm_nzmin16(mf_vm m, const void *p, size_t j) {
    for (int l = 0; l < 16; l++) {
        uint32_t u = (uint32_t)((((const uint16_t *)p)[j + (size_t)l] & 0x7FFFu) - 1u) & 0xFFFFu;
        m.v[l] = u < m.v[l] ? u : m.v[l];
    }
    return m;
}
MF_INLINE uint32_t vm_hmin16(mf_vm m) {
    uint32_t r = 0xFFFFu;
    for (int l = 0; l < 16; l++) r = m.v[l] < r ? m.v[l] : r;
    return r;
}
MF_INLINE uint32_t vm_hmin(mf_vm m) {
    uint32_t r = m.v[0];
    for (int l = 1; l < 16; l++) r = m.v[l] < r ? m.v[l] : r;
    return r;
}
MF_INLINE void vf_st32(mf_dt dt, void *p, size_t j, mf_vf lo, mf_vf hi, int nt, int normal) {
    (void)nt, (void)normal;
    for (int l = 0; l < 16; l++) mf_st_dt(dt, p, j + (size_t)l, lo.v[l]);
    for (int l = 0; l < 16; l++) mf_st_dt(dt, p, j + 16 + (size_t)l, hi.v[l]);
}
MF_INLINE void vf_stp(mf_dt dt, void *p, size_t j, const mf_vf v[2], int nt) {
    vf_st32(dt, p, j, v[0], v[1], nt, 1);
}

MF_INLINE mf_vd vd_ld(mf_dt dt, const void *p, size_t j) {
    mf_vd r;
    for (int l = 0; l < 8; l++) r.v[l] = (double)mf_ld_dt(dt, p, j + (size_t)l);
    return r;
}
MF_INLINE mf_vd vd_zero(void) {
    mf_vd r;
    for (int l = 0; l < 8; l++) r.v[l] = 0.0;
    return r;
}
MF_INLINE mf_vd vd_set1(double s) {
    mf_vd r;
    for (int l = 0; l < 8; l++) r.v[l] = s;
    return r;
}
MF_INLINE mf_vd vd_ldu(const double *p) {
    mf_vd r;
    memcpy(r.v, p, sizeof r.v);
    return r;
}
MF_INLINE void vd_stu(double *p, mf_vd a) { memcpy(p, a.v, sizeof a.v); }
MF_INLINE mf_vd vd_add(mf_vd a, mf_vd b) {
    for (int l = 0; l < 8; l++) a.v[l] = a.v[l] + b.v[l];
    return a;
}
MF_INLINE mf_vd vd_mul(mf_vd a, mf_vd b) {
    for (int l = 0; l < 8; l++) a.v[l] = a.v[l] * b.v[l];
    return a;
}
MF_INLINE mf_vd vd_madd_exact(mf_vd a, mf_vd t, mf_vd g) {
    for (int l = 0; l < 8; l++) a.v[l] = a.v[l] + t.v[l] * g.v[l];
    return a;
}
MF_INLINE mf_vd vd_fold16(mf_vd a, mf_vf s) {
    for (int l = 0; l < 8; l++) a.v[l] = (a.v[l] + (double)s.v[l]) + (double)s.v[l + 8];
    return a;
}

/* Forward layout: element order (the permutation is the identity here). */
MF_INLINE void vd_ld16p(mf_dt dt, const void *p, size_t j, mf_vd v[2]) {
    v[0] = vd_ld(dt, p, j);
    v[1] = vd_ld(dt, p, j + 8);
}
MF_INLINE void vd_st32p(mf_dt dt, void *p, size_t j, const mf_vd v[4], int nt) {
    (void)nt;
    for (int q = 0; q < 4; q++)
        for (int l = 0; l < 8; l++) mf_fwd_st(dt, p, j + 8 * (size_t)q + (size_t)l, v[q].v[l]);
}

MF_INLINE void v_prefetch(const void *p) { (void)p; }
MF_INLINE void v_stream64(void *d, const void *s) { memcpy(d, s, 64); }
static void v_fence(void) {}

#endif /* MOEFR_KERNELS_VEC_SCALAR_H_ */
