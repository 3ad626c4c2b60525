/* dynamic_quant_core.h - DynamicQuant's two vector loops over GT_W-lane
 * generic vectors (ops/gv.h), built once per width: four lanes in
 * dynamic_quant.c, eight (AVX2) in dynamic_quant_avx2.c. The includer defines
 * GT_W, DQ_MINMAX and DQ_QUANT (the functions' names; without DQ_QUANT only
 * the max/min loop is built: dynamic_quant_avx2.c). Each lane performs
 * dynamic_quant.h's scalar operations in the same order (one IEEE division or
 * product, one addition, the clamp, rint half to even), so every width gives
 * the same bytes; both loops take whole vectors only and return how many
 * elements they did (the caller finishes the tail with the scalar helpers). */
#include "ops/gv.h"
#include "ops/quant/dynamic_quant.h"

/* max and min of v[0..n) into *hi, *lo; NaN never wins */
int64_t DQ_MINMAX(const float *v, int64_t n, float *hi, float *lo) {
    gvf h = gv_splat(*hi), l = gv_splat(*lo);
    int64_t j = 0;
    for (; j + GT_W <= n; j += GT_W) {
        const gvf a = gv_load(v + j);
        h = gv_sel(a > h, a, h);
        l = gv_sel(a < l, a, l);
    }
    for (int k = 0; k < GT_W; k++) {
        *hi = h[k] > *hi ? h[k] : *hi;
        *lo = l[k] < *lo ? l[k] : *lo;
    }
    return j;
}

#ifdef DQ_QUANT
/* f (NaN -> 0) clamped to [lo, hi] and rounded half to even, as int32 lanes */
static inline gvi dq_round(gvf f, gvf lo, gvf hi) {
    const gvi sign = gi_splat((int32_t)0x80000000);
    const gvf big = gv_splat(0x1p23f);
    gvf c = gv_sel(f == f, f, gv_splat(0.0f));
    c = gv_sel(c > hi, hi, c);
    c = gv_sel(c < lo, lo, c);
    const gvf a = (gvf)((gvi)c & ~sign);
    const gvf t = (a + big) - big; /* |c| <= 128: adding 2^23 rounds to an integer, ties to even */
    return __builtin_convertvector((gvf)((gvi)t | ((gvi)c & sign)), gvi);
}

static inline int64_t dq_quant_kind(const float *v, int64_t n, int kind, float k, float o, float Q, int8_t *q) {
    const gvf kv = gv_splat(k), ov = gv_splat(o), hi = gv_splat(Q), lo = gv_splat(-Q - 1.0f);
    int64_t j = 0;
    for (; j + GT_W <= n; j += GT_W) {
        const gvf x = gv_load(v + j);
        gvf f;
        switch (kind) {
        case 0: f = x / kv; break;      /* 950 symmetric */
        case 1: f = x / kv + ov; break; /* 950 asymmetric */
        case 2: f = x * kv; break;      /* A2 symmetric */
        default: f = x * kv + ov; break; /* A2 asymmetric (no contraction: -ffp-contract=off) */
        }
        gi_store_lo8(q + j, dq_round(f, lo, hi));
    }
    return j;
}

/* q[j] = the int8 (or int4 value) of v[j] under scale s, whole vectors */
int64_t DQ_QUANT(const float *v, int64_t n, const mf_dq_math *m, const mf_dq_scale *s, int8_t *q) {
    const float k = s->k, o = s->offset, Q = m->Q;
    if (m->a2) return m->sym ? dq_quant_kind(v, n, 2, k, o, Q, q) : dq_quant_kind(v, n, 3, k, o, Q, q);
    return m->sym ? dq_quant_kind(v, n, 0, k, o, Q, q) : dq_quant_kind(v, n, 1, k, o, Q, q);
}
#endif
