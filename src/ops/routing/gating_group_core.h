/* gating_group_core.h - the row routine of MoeGatingTopK and MoeFusedTopk,
 * written once over GT_W-lane generic vectors. The includer defines GT_W (4
 * or 8) and GG_ROWS (the function's name). It reuses gating_core.h's helpers
 * (gt_softmax, gt_topk, gt_skeyv, gt_store) and gv.h's gt_expv; as there,
 * every lane does the same IEEE fp32 operations in the same order and the
 * scalar parts are plain loops, so both widths give the same bits
 * (tests/gating_bits.cmake compares them). No FMA (-ffp-contract=off, the
 * AVX2 file without -mfma).
 *
 * Per row (rules in gating_group.c's head comment):
 *   s = sigmoid or softmax of the widened row; b = s + bias;
 *   grouped: group scores (the max, or the sum of the topn largest b in
 *   descending order), the kG best groups by (score descending, group
 *   ascending); candidates: GatingTopK the kept groups' experts in expert
 *   order, Fused every expert with b * (kept ? 1 : 0);
 *   the k best candidates by (value descending, expert ascending), -0 as +0,
 *   NaN the largest; y = s there, renormalised and scaled in a fixed order. */
#include <math.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "ops/routing/gating_core.h"
#pragma GCC diagnostic pop
#include "ops/routing/gating_group.h"

/* v[0..np) = sigmoid(v) in place: t = exp(-|x|); x >= 0 (sign bit clear):
 * 1 / (1 + t), else t / (1 + t). -inf gives +0, +inf 1, NaN NaN. */
static void gg_sigmoid(float *v, int64_t np) {
    const gvf one = gv_splat(1.0f);
    for (int64_t j = 0; j < np; j += GT_W) {
        const gvf x = gv_load(v + j);
        const gvi neg = (gvi)x < gi_splat(0);
        const gvf t = gt_expv((gvf)((gvi)x | gi_splat(INT32_MIN)));
        gv_store(v + j, gv_sel(neg, t, one) / (one + t));
    }
}

void GG_ROWS(void *vctx, int64_t r0, int64_t r1) {
    const gg_ctx *c = vctx;
    const gg_plan *p = c->p;
    const int64_t E = p->E, Ep = GT_PAD(E), k = p->k, G = p->G, P = p->P;
    float s[GT_PAD(GG_MAX_E)], b[GT_PAD(GG_MAX_E)], cand[GT_PAD(GG_MAX_E)], gs[GT_PAD(GG_MAX_E)];
    int32_t sk[GT_PAD(GG_MAX_E)], cid[GG_MAX_E], sel[GG_MAX_E], gsel[GG_MAX_E];
    uint64_t best[GG_MAX_E];
    unsigned char kept[GG_MAX_E];
    float yk[GG_MAX_E];
    for (int64_t r = r0; r < r1; r++) {
        mf_widen_f32(mf_row(&c->x, r), c->x.s_col, c->dtype, E, s, 1);
        for (int64_t j = E; j < Ep; j++) s[j] = -INFINITY;
        if (p->sigmoid)
            gg_sigmoid(s, Ep);
        else
            gt_softmax(s, E);
        const float *bb = s;
        if (p->has_bias) {
            for (int64_t j = 0; j < Ep; j += GT_W) gv_store(b + j, gv_load(s + j) + gv_load(c->bias + j));
            bb = b;
        }
        const float *vals = bb; /* the candidates: n values, expert ids cid (or their positions) */
        int64_t n = E;
        bool ids = false;
        if (p->grouped) {
            if (p->topn <= 2) {
                for (int64_t j = 0; j < Ep; j += GT_W) {
                    const gvi kv = gt_skeyv(gv_load(bb + j));
                    memcpy(sk + j, &kv, sizeof kv);
                }
                for (int64_t g = 0; g < G; g++) {
                    const int32_t *kg = sk + g * P;
                    int32_t k1 = INT32_MIN, k2 = INT32_MIN; /* no value's key is INT32_MIN */
                    int64_t i1 = 0, i2 = 0;
                    for (int64_t j = 0; j < P; j++) {
                        const int32_t kj = kg[j];
                        if (kj > k1) {
                            k2 = k1, i2 = i1;
                            k1 = kj, i1 = j;
                        } else if (kj > k2) {
                            k2 = kj, i2 = j;
                        }
                    }
                    gs[g] = p->topn == 1 ? bb[g * P + i1] : bb[g * P + i1] + bb[g * P + i2];
                }
            } else {
                const int64_t Pp = GT_PAD(P);
                for (int64_t g = 0; g < G; g++) {
                    memcpy(cand, bb + g * P, (size_t)P * 4);
                    for (int64_t j = P; j < Pp; j++) cand[j] = -INFINITY;
                    gt_topk(cand, P, p->topn, sk, best, sel);
                    float sum = cand[sel[0]];
                    for (int64_t i = 1; i < p->topn; i++) sum += cand[sel[i]];
                    gs[g] = sum;
                }
            }
            for (int64_t g = G; g < GT_PAD(G); g++) gs[g] = -INFINITY;
            gt_topk(gs, G, p->kG, sk, best, gsel);
            memset(kept, 0, (size_t)G);
            for (int64_t i = 0; i < p->kG; i++) kept[gsel[i]] = 1;
            if (p->fused) {
                for (int64_t g = 0; g < G; g++) {
                    const float m = kept[g] ? 1.0f : 0.0f;
                    for (int64_t j = g * P; j < (g + 1) * P; j++) cand[j] = bb[j] * m;
                }
                n = E;
            } else {
                n = 0;
                for (int64_t g = 0; g < G; g++) {
                    if (!kept[g]) continue;
                    memcpy(cand + n, bb + g * P, (size_t)P * 4);
                    for (int64_t j = 0; j < P; j++) cid[n + j] = (int32_t)(g * P + j);
                    n += P;
                }
                ids = true;
            }
            for (int64_t j = n; j < GT_PAD(n); j++) cand[j] = -INFINITY;
            vals = cand;
        }
        gt_topk(vals, n, k, sk, best, sel);
        if (ids)
            for (int64_t i = 0; i < k; i++) sel[i] = cid[sel[i]];
        for (int64_t i = 0; i < k; i++) yk[i] = s[sel[i]];
        if (p->renorm_y) {
            float sum = yk[0];
            for (int64_t i = 1; i < k; i++) sum += yk[i];
            if (p->fused) {
                const float inv = 1.0f / sum;
                for (int64_t i = 0; i < k; i++) yk[i] = yk[i] * inv;
            } else {
                sum = sum + p->eps;
                for (int64_t i = 0; i < k; i++) yk[i] = yk[i] / sum;
            }
        }
        if (p->scale_y)
            for (int64_t i = 0; i < k; i++) yk[i] = yk[i] * p->scale;
        if (p->out_flag) memcpy(c->out + r * E, s, (size_t)E * 4);
        if (p->mapping) {
            memcpy(c->wy + r * k, yk, (size_t)k * 4);
            memcpy(c->we + r * k, sel, (size_t)k * 4);
            continue;
        }
        for (int64_t i = 0; i < k; i++) {
            gt_store(c->y + r * c->ys0 + i * c->ys1, c->ydtype, yk[i]);
            memcpy(c->eidx + r * c->es0 + i * c->es1, &sel[i], 4);
        }
    }
}
