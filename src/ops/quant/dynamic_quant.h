/* dynamic_quant.h - the arithmetic of ops-nn's DynamicQuant kernels on one
 * group of fp32 values that share a scale (docs/CANN_COMPAT.md, "DynamicQuant").
 * Q is the output's largest value (int8 127, int4 7). Ascend 950 (regbase
 * kernels, arch35/dynamic_quant_regbase_*.h):
 *   symmetric:  s = max|v| * fp32(1/Q);           y = rint(v / s)
 *   asymmetric: s = (max v - min v) * fp32(1/(2Q+1)); o = Q - max v / s;
 *               y = rint(v / s + o)
 * A2/A3 (MOEFR_SOC=ascend910b; dynamic_quant.h, dynamic_quant_base.h):
 *   symmetric:  k = Q / max|v|; s = 1 / k;        y = rint(v * k)
 *   asymmetric: s = max((max v - min v) / (2Q+1), 1e-12); o = Q - max v / s;
 *               y = rint(v * (1 / s) + o)
 * each operation one fp32 rounding, rint half to even, then saturated to
 * [-Q-1, Q]; a NaN element never wins a max or min and quantises to 0. */
#ifndef MOEFR_OPS_QUANT_DYNAMIC_QUANT_H_
#define MOEFR_OPS_QUANT_DYNAMIC_QUANT_H_

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#define MF_DQ_MAX_GROUPS 1024 /* the tiling's MAX_EXPERT_NUM */

typedef struct mf_dq_math {
    bool a2, sym;
    float Q, inv; /* inv: fp32(1/Q) (symmetric) or fp32(1/(2Q+1)) (asymmetric), 950 */
} mf_dq_math;

static inline mf_dq_math mf_dq_math_of(bool a2, bool sym, int Q) {
    mf_dq_math m;
    m.a2 = a2;
    m.sym = sym;
    m.Q = (float)Q;
    m.inv = sym ? 1.0f / (float)Q : 1.0f / (float)(2 * Q + 1);
    return m;
}

/* running max|v| (symmetric) or max and min (asymmetric) */
typedef struct mf_dq_acc {
    float hi, lo;
} mf_dq_acc;
static inline void mf_dq_acc_init(mf_dq_acc *a) {
    a->hi = -INFINITY;
    a->lo = INFINITY;
}
static inline void mf_dq_acc_add(mf_dq_acc *a, const float *v, int64_t n, bool sym) {
    float hi = a->hi, lo = a->lo;
    if (sym) {
        for (int64_t j = 0; j < n; j++) {
            const float f = fabsf(v[j]);
            hi = f > hi ? f : hi; /* NaN compares false */
        }
    } else {
        for (int64_t j = 0; j < n; j++) {
            hi = v[j] > hi ? v[j] : hi;
            lo = v[j] < lo ? v[j] : lo;
        }
    }
    a->hi = hi;
    a->lo = lo;
}

/* the scale and offset written out, and k: the divisor (950) or multiplier (A2) */
typedef struct mf_dq_scale {
    float scale, offset, k;
} mf_dq_scale;

static inline mf_dq_scale mf_dq_scale_of(const mf_dq_math *m, const mf_dq_acc *a) {
    mf_dq_scale s = {0.0f, 0.0f, 0.0f};
    if (m->sym) {
        const float mx = a->hi > 0.0f ? a->hi : 0.0f; /* no element, or only NaN: 0 */
        if (m->a2) {
            s.k = m->Q / mx;
            s.scale = 1.0f / s.k;
        } else {
            s.scale = mx * m->inv;
            s.k = s.scale;
        }
        return s;
    }
    const float hi = a->hi, lo = a->lo;
    if (m->a2) {
        const float d = (hi - lo) / (2.0f * m->Q + 1.0f);
        s.scale = d > 1e-12f ? d : 1e-12f;
        s.offset = m->Q - hi / s.scale;
        s.k = 1.0f / s.scale;
    } else {
        s.scale = (hi - lo) * m->inv;
        s.offset = m->Q - hi / s.scale;
        s.k = s.scale;
    }
    return s;
}

static inline int8_t mf_dq_round(float f, float Q) {
    if (f != f) return 0;
    f = f > Q ? Q : f;
    f = f < -Q - 1.0f ? -Q - 1.0f : f;
    return (int8_t)(int)rintf(f);
}

static inline void mf_dq_quant(const mf_dq_math *m, const mf_dq_scale *s, const float *v, int64_t n, int8_t *q) {
    const float k = s->k, o = s->offset, Q = m->Q;
    if (m->a2) {
        if (m->sym)
            for (int64_t j = 0; j < n; j++) q[j] = mf_dq_round(v[j] * k, Q);
        else
            for (int64_t j = 0; j < n; j++) q[j] = mf_dq_round(v[j] * k + o, Q);
    } else {
        if (m->sym)
            for (int64_t j = 0; j < n; j++) q[j] = mf_dq_round(v[j] / k, Q);
        else
            for (int64_t j = 0; j < n; j++) q[j] = mf_dq_round(v[j] / k + o, Q);
    }
}

/* dynamic_quant_core.h's loops, per width: whole vectors of v[0..n), returning
 * how many elements they did (max and min; the quantisation of mf_dq_quant) */
int64_t mf_dq_minmax_generic(const float *v, int64_t n, float *hi, float *lo);
int64_t mf_dq_quant_generic(const float *v, int64_t n, const mf_dq_math *m, const mf_dq_scale *s, int8_t *q);
#if defined(MOEFR_X86_KERNELS)
int64_t mf_dq_minmax_avx2(const float *v, int64_t n, float *hi, float *lo);
int64_t mf_dq_quant_avx2(const float *v, int64_t n, const mf_dq_math *m, const mf_dq_scale *s, int8_t *q);
#endif

#endif /* MOEFR_OPS_QUANT_DYNAMIC_QUANT_H_ */
