/* swiglu_core.h - SwiGlu's block routines over GT_W-lane generic vectors
 * (ops/gv.h). The includer defines GT_W and SG_FWD / SG_BWD (the functions'
 * names). Per element, in fp32, in this order (no FMA):
 *   e = exp(-|a|)   q = 1 / (1 + e)   s = a >= 0 ? q : e * q   (sigmoid(a))
 *   forward   o  = (a * s) * b
 *   backward  oa = ((s * (1 - s)) * a + s) * b * g,   ob = (s * a) * g
 * exp only ever sees arguments <= 0 (gt_expv's domain), so nothing
 * overflows; a NaN a gives NaN, a = -inf gives NaN as A / (1 + exp(-A))
 * does. */
#include "ops/act/swiglu.h"
#include "ops/gv.h"

static inline gvf sg_sigmoid(gvf a) {
    const gvf mag = (gvf)((gvi)a & gi_splat(0x7FFFFFFF));
    const gvf e = gt_expv(-mag);
    const gvf q = gv_splat(1.0f) / (gv_splat(1.0f) + e);
    return gv_sel(a >= gv_splat(0.0f), q, e * q);
}

void SG_FWD(const float *a, const float *b, float *o, int64_t n) {
    for (int64_t i = 0; i < n; i += GT_W) {
        const gvf av = gv_load(a + i), s = sg_sigmoid(av);
        gv_store(o + i, (av * s) * gv_load(b + i));
    }
}

void SG_BWD(const float *a, const float *b, const float *g, float *oa, float *ob, int64_t n) {
    const gvf one = gv_splat(1.0f);
    for (int64_t i = 0; i < n; i += GT_W) {
        const gvf av = gv_load(a + i), s = sg_sigmoid(av), gv = gv_load(g + i);
        gv_store(oa + i, (((s * (one - s)) * av + s) * gv_load(b + i)) * gv);
        gv_store(ob + i, (s * av) * gv);
    }
}
