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

/* v[0..np) = sigmoid(x[0..np)) (x may be v, or an fp32 row at any
 * alignment): t = exp(-|x|); x >= 0 (sign bit clear): 1 / (1 + t), else
 * t / (1 + t). -inf gives +0, +inf 1, NaN NaN. */
static void gg_sigmoid(const char *xb, float *v, int64_t np) {
    const gvf one = gv_splat(1.0f);
    for (int64_t j = 0; j < np; j += GT_W) {
        const gvf x = gv_loadb(xb + 4 * j);
        const gvi neg = (gvi)x < gi_splat(0);
        const gvf t = gt_expv((gvf)((gvi)x | gi_splat(INT32_MIN)));
        gv_store(v + j, gv_sel(neg, t, one) / (one + t));
    }
}

/* The value of an order key (gt_skeyv's map inverted; -0 came in as +0 and
 * any NaN as INT32_MAX, which comes back as the NaN 0x7FFFFFFF). */
static inline float gg_unkey(int32_t k) {
    const uint32_t u = k >= 0 ? (uint32_t)k : (uint32_t)(k ^ INT32_MAX);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* t1[g], t2[g] = the two largest keys of group g (sk[g*P .. g*P+P)), as a
 * multiset (equal keys both count), INT32_MIN for a missing second. Lane
 * maxima and second maxima, then their union: max and min of exact keys,
 * the same whatever GT_W. sk is readable GT_W past G*P. */
static void gg_group_top2(const int32_t *sk, int64_t G, int64_t P, int32_t *t1, int32_t *t2) {
    gvi lane;
    for (int l = 0; l < GT_W; l++) lane[l] = l;
    const gvi lo = gi_splat(INT32_MIN), pv = gi_splat((int32_t)P);
    for (int64_t g = 0; g < G; g++) {
        const int32_t *kg = sk + g * P;
        gvi m1 = lo, m2 = lo;
        for (int64_t j = 0; j < P; j += GT_W) {
            gvi v;
            memcpy(&v, kg + j, sizeof v);
            v = gi_sel(lane + gi_splat((int32_t)j) < pv, v, lo);
            const gvi mn = gi_sel(v < m1, v, m1);
            m2 = gi_sel(mn > m2, mn, m2);
            m1 = gi_sel(v > m1, v, m1);
        }
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
        /* merge lane pairs (a1 >= a2), (b1 >= b2): max(a1, b1), max(min(a1, b1), a2, b2) */
#define GG_MERGE(...)                                                   \
    do {                                                                \
        const gvi b1 = __builtin_shufflevector(m1, m1, __VA_ARGS__);    \
        const gvi b2 = __builtin_shufflevector(m2, m2, __VA_ARGS__);    \
        const gvi lo1 = gi_sel(m1 < b1, m1, b1), hi2 = gi_sel(m2 > b2, m2, b2); \
        m1 = gi_sel(m1 > b1, m1, b1);                                   \
        m2 = gi_sel(lo1 > hi2, lo1, hi2);                               \
    } while (0)
#if GT_W == 8
        GG_MERGE(4, 5, 6, 7, 0, 1, 2, 3);
        GG_MERGE(2, 3, 0, 1, 6, 7, 4, 5);
        GG_MERGE(1, 0, 3, 2, 5, 4, 7, 6);
#else
        GG_MERGE(2, 3, 0, 1);
        GG_MERGE(1, 0, 3, 2);
#endif
#undef GG_MERGE
        t1[g] = m1[0], t2[g] = m2[0];
#else
        int32_t a = INT32_MIN, b = INT32_MIN;
        for (int l = 0; l < GT_W; l++) {
            const int32_t x1 = m1[l], x2 = m2[l];
            if (x1 > a) b = a, a = x1;
            else if (x1 > b) b = x1;
            if (x2 > b) b = x2; /* x2 <= x1 <= a */
        }
        t1[g] = a, t2[g] = b;
#endif
    }
}

/* gt_consider for a candidate that may be worse than every kept one */
static inline void gg_offer(uint64_t *best, int64_t *have, int64_t k, uint64_t c) {
    if (*have == k && c < (k <= GT_INSERT_K ? best[k - 1] : best[0])) return;
    gt_consider(best, have, k, c);
}

void GG_ROWS(void *vctx, int64_t r0, int64_t r1) {
    const gg_ctx *c = vctx;
    const gg_plan *p = c->p;
    const int64_t E = p->E, Ep = GT_PAD(E), k = p->k, G = p->G, P = p->P;
    float s[GT_PAD(GG_MAX_E)], b[GT_PAD(GG_MAX_E)], cand[GT_PAD(GG_MAX_E)];
    int32_t sk[GT_PAD(GG_MAX_E) + 8], ck[GT_PAD(GG_MAX_E)], cid[GG_MAX_E], sel[GG_MAX_E];
    int32_t t1[GG_MAX_E], t2[GG_MAX_E], tk[2 * GG_MAX_E + GT_INSERT_K];
    uint64_t best[GG_MAX_E], bg[GG_MAX_E];
    unsigned char kept[GG_MAX_E];
    float yk[GG_MAX_E];
    const bool direct = c->dtype == ACL_FLOAT && c->x.s_col == 4 && E % 8 == 0;
    /* the selection runs on the keys (gt_select) unless k > GT_INSERT_K */
    const bool on_keys = p->grouped && k <= GT_INSERT_K;
    for (int64_t r = r0; r < r1; r++) {
        const char *xr = mf_row(&c->x, r);
        if (p->sigmoid && direct) { /* fp32, unit stride, no padding: straight from x */
            gg_sigmoid(xr, s, Ep);
        } else {
            mf_widen_f32(xr, c->x.s_col, c->dtype, E, s, 1);
            for (int64_t j = E; j < Ep; j++) s[j] = -INFINITY;
            if (p->sigmoid)
                gg_sigmoid((const char *)s, s, Ep);
            else
                gt_softmax(s, E);
        }
        const float *bb = s;
        if (p->has_bias) {
            for (int64_t j = 0; j < Ep; j += GT_W) {
                const gvf bv = gv_load(s + j) + gv_load(c->bias + j);
                gv_store(b + j, bv);
                if (p->grouped) { /* the order keys, while the values are at hand */
                    const gvi kv = gt_skeyv(bv);
                    memcpy(sk + j, &kv, sizeof kv);
                }
            }
            bb = b;
        } else if (p->grouped) {
            for (int64_t j = 0; j < Ep; j += GT_W) {
                const gvi kv = gt_skeyv(gv_load(s + j));
                memcpy(sk + j, &kv, sizeof kv);
            }
        }
        const float *vals = bb; /* the candidates: n values, expert ids cid (or their positions) */
        int64_t n = E;
        bool ids = false, sel_done = false;
        if (p->grouped) {
            /* group scores from the order keys sk (-0 counts as +0 in them) */
            int64_t have = 0;
            if (p->topn <= 2) {
                gg_group_top2(sk, G, P, t1, t2);
                for (int64_t g = 0; g < G; g++) {
                    const float sc = p->topn == 1 ? gg_unkey(t1[g]) : gg_unkey(t1[g]) + gg_unkey(t2[g]);
                    int32_t kk;
                    const gvi kv = gt_skeyv(gv_splat(sc));
                    kk = kv[0];
                    gg_offer(best, &have, p->kG, (uint64_t)((uint32_t)kk ^ 0x80000000u) << 32 | (uint32_t)~(uint32_t)g);
                }
            } else {
                const int64_t Pp = GT_PAD(P);
                for (int64_t g = 0; g < G; g++) {
                    memcpy(cand, bb + g * P, (size_t)P * 4);
                    for (int64_t j = P; j < Pp; j++) cand[j] = -INFINITY;
                    gt_topk(cand, P, p->topn, ck, bg, sel);
                    float sum = cand[sel[0]];
                    for (int64_t i = 1; i < p->topn; i++) sum += cand[sel[i]];
                    const gvi kv = gt_skeyv(gv_splat(sum));
                    const int32_t kk = kv[0];
                    gg_offer(best, &have, p->kG, (uint64_t)((uint32_t)kk ^ 0x80000000u) << 32 | (uint32_t)~(uint32_t)g);
                }
            }
            /* the kept groups: the kG best by (score descending, group ascending), as a set */
            memset(kept, 0, (size_t)G);
            for (int64_t i = 0; i < p->kG; i++) kept[(uint32_t)~(uint32_t)best[i]] = 1;
            int32_t lo = INT32_MIN;
            int64_t nt = 0; /* tk: keys of some candidates, each at most a distinct candidate's key */
            if (p->fused) {
                int64_t zeros = 0;
                for (int64_t g = 0; g < G; g++) {
                    const int64_t j0 = g * P;
                    if (kept[g]) {
                        memcpy(ck + j0, sk + j0, (size_t)P * 4);
                        if (!on_keys) memcpy(cand + j0, bb + j0, (size_t)P * 4);
                        if (p->topn <= 2) tk[nt++] = t1[g], tk[nt++] = t2[g];
                        continue;
                    }
                    for (int64_t j = j0; j < j0 + P; j++) {
                        const float z = bb[j] * 0.0f; /* +-0, or NaN from an infinite or NaN b */
                        ck[j] = z != z ? INT32_MAX : 0, cand[j] = z;
                    }
                    zeros += P; /* each unkept key is 0 or above */
                }
                for (int64_t i = 0; i < zeros && i < k; i++) tk[nt++] = 0;
                n = E;
            } else {
                n = 0;
                for (int64_t g = 0; g < G; g++) {
                    if (!kept[g]) continue;
                    memcpy(ck + n, sk + g * P, (size_t)P * 4);
                    if (!on_keys) memcpy(cand + n, bb + g * P, (size_t)P * 4);
                    cid[n / P] = (int32_t)g; /* candidate i is expert cid[i / P] * P + i % P */
                    n += P;
                    if (p->topn <= 2) tk[nt++] = t1[g], tk[nt++] = t2[g];
                }
                ids = true;
            }
            /* the k-th largest of those bounds the k-th largest candidate key from below */
            if (on_keys && k <= nt) {
                int32_t top[GT_INSERT_K];
                int64_t h = 0;
                for (int64_t i = 0; i < nt; i++) {
                    const int32_t v = tk[i];
                    if (h == k && v <= top[k - 1]) continue;
                    int64_t q = h < k ? h++ : k - 1;
                    while (q > 0 && top[q - 1] < v) top[q] = top[q - 1], q--;
                    top[q] = v;
                }
                if (top[k - 1] != INT32_MIN) lo = top[k - 1];
            }
            for (int64_t j = n; j < GT_PAD(n); j++) cand[j] = -INFINITY, ck[j] = INT32_MIN;
            vals = cand;
            if (on_keys) { /* the keys are at hand: select on them (k <= n: phase 1) */
                gt_select(ck, n, k, lo, best);
                for (int64_t i = 0; i < k; i++) sel[i] = (int32_t)~(uint32_t)best[i];
                sel_done = true;
            }
        }
        if (!sel_done) gt_topk(vals, n, k, sk, best, sel);
        if (ids)
            for (int64_t i = 0; i < k; i++) sel[i] = (int32_t)(cid[sel[i] / P] * P + sel[i] % P);
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
