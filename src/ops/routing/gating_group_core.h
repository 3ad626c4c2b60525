/* gating_group_core.h - the row routine of MoeGatingTopK and MoeFusedTopk,
 * written once over GT_W-lane generic vectors. The includer defines GT_W (4
 * or 8) and GG_ROWS (the function's name). It reuses gating_core.h's helpers
 * (gt_softmax, gt_skeyv, gt_select, gt_consider, gt_store) and gv.h's
 * gt_expv; as there,
 * every lane does the same IEEE fp32 operations in the same order and the
 * scalar parts are plain loops, so both widths give the same bits
 * (tests/gating_bits.cmake compares them). No FMA (-ffp-contract=off, the
 * AVX2 file without -mfma).
 *
 * Per row (rules in gating_group.c's head comment):
 *   s = sigmoid or softmax of the widened row; b = s + bias, kept only as
 *   order keys (gt_skeyv: -0 as +0, NaN the largest);
 *   grouped: group scores (the max, or the sum of the topn largest b in
 *   descending order, from the keys' values), the kG best groups by (score
 *   descending, group ascending); candidates: GatingTopK the kept groups'
 *   experts in expert order, Fused every expert with b * (kept ? 1 : 0);
 *   the k best candidates by (key descending, expert ascending); y = s
 *   there, renormalised and scaled in a fixed order.
 * The frame stays under the library's budget (MF_WORKER_STACK_MIN / 16,
 * scripts/check-frames.sh): three rows of keys / values, one candidate
 * buffer shared by the selections, small per-group arrays (GG_MAX_G). */
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

/* The k best of the candidates c = key << 32 | ~position offered so far are
 * best[0..k) (gt_consider: sorted for k <= GT_INSERT_K, a min-heap above);
 * this sorts a heap descending. */
static void gg_heap_sort(uint64_t *best, int64_t k) {
    for (int64_t m = k - 1; m > 0; m--) {
        const uint64_t top = best[0], last = best[m];
        int64_t i = 0;
        for (;;) {
            int64_t ch = 2 * i + 1;
            if (ch >= m) break;
            if (ch + 1 < m && best[ch + 1] < best[ch]) ch++;
            if (best[ch] >= last) break;
            best[i] = best[ch];
            i = ch;
        }
        best[i] = last;
        best[m] = top;
    }
}

static inline uint64_t gg_cand(int32_t key, int64_t pos) {
    return (uint64_t)((uint32_t)key ^ 0x80000000u) << 32 | (uint32_t)~(uint32_t)pos;
}
static inline int32_t gg_key_of(uint64_t c) { return (int32_t)((uint32_t)(c >> 32) ^ 0x80000000u); }

/* best[0..k) = the k largest of keys[0..n) as candidates, in descending
 * order (key descending, position ascending); keys readable to GT_PAD(n);
 * lo bounds the k-th largest key from below (INT32_MIN: no bound). */
static void gg_select(const int32_t *keys, int64_t n, int64_t k, int32_t lo, uint64_t *best) {
    if (k <= GT_INSERT_K) {
        gt_select(keys, n, k, lo, best);
        return;
    }
    int64_t have = 0;
    for (int64_t j = 0; j < n; j++) gg_offer(best, &have, k, gg_cand(keys[j], j));
    gg_heap_sort(best, k);
}

void GG_ROWS(void *vctx, int64_t r0, int64_t r1) {
    const gg_ctx *c = vctx;
    const gg_plan *p = c->p;
    const int64_t E = p->E, Ep = GT_PAD(E), k = p->k, G = p->G, P = p->P;
    float s[GT_PAD(GG_MAX_E)];
    int32_t sk[GT_PAD(GG_MAX_E) + 8]; /* GT_W past G * P for gg_group_top2 */
    union {
        int32_t i[GT_PAD(GG_MAX_E)];
        float f[GT_PAD(GG_MAX_E)];
    } cu; /* the candidates' keys, then y */
    union {
        uint64_t best[GG_MAX_E];
        int32_t sel[GG_MAX_E];
    } bu; /* every selection's candidates, then the picks (sel[i] over best[i]'s lower half: i ascending) */
    int32_t t1[GG_MAX_G], t2[GG_MAX_G], tk[2 * GG_MAX_G + GT_INSERT_K], kid[GG_MAX_G];
    float gsc[GG_MAX_G];
    unsigned char kept[GG_MAX_G];
    const bool direct = c->dtype == ACL_FLOAT && c->x.s_col == 4 && E % 8 == 0;
    /* the keys of b = +-inf, for the Fused mask (inf * 0 = NaN) */
    const gvi kinf = gt_skeyv(gv_splat(INFINITY)), kninf = gt_skeyv(gv_splat(-INFINITY));
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
        /* sk = the keys of b = s + bias; the padding past E the smallest key */
        for (int64_t j = 0; j < Ep; j += GT_W) {
            gvf bv = gv_load(s + j);
            if (p->has_bias) bv = bv + gv_load(c->bias + j);
            const gvi kv = gt_skeyv(bv);
            memcpy(sk + j, &kv, sizeof kv);
        }
        for (int64_t j = E; j < Ep + 8; j++) sk[j] = INT32_MIN;
        const int32_t *keys = sk; /* the candidates: n keys; grouped GatingTopK: kept group kid[i / P] */
        int64_t n = E;
        bool ids = false;
        int32_t lo = INT32_MIN;
        if (p->grouped) {
            if (p->topn <= 2) {
                gg_group_top2(sk, G, P, t1, t2);
                for (int64_t g = 0; g < G; g++)
                    gsc[g] = p->topn == 1 ? gg_unkey(t1[g]) : gg_unkey(t1[g]) + gg_unkey(t2[g]);
            } else {
                for (int64_t g = 0; g < G; g++) { /* the topn largest, added in descending order */
                    gg_select(sk + g * P, P, p->topn, INT32_MIN, bu.best);
                    float sum = gg_unkey(gg_key_of(bu.best[0]));
                    for (int64_t i = 1; i < p->topn; i++) sum += gg_unkey(gg_key_of(bu.best[i]));
                    gsc[g] = sum;
                }
            }
            /* the kept groups: the kG best by (score descending, group ascending), as a set */
            int64_t have = 0;
            for (int64_t g = 0; g < G; g++) {
                const gvi kv = gt_skeyv(gv_splat(gsc[g]));
                gg_offer(bu.best, &have, p->kG, gg_cand(kv[0], g));
            }
            memset(kept, 0, (size_t)G);
            for (int64_t i = 0; i < p->kG; i++) kept[(uint32_t)~(uint32_t)bu.best[i]] = 1;
            int64_t nt = 0; /* tk: keys of distinct candidates, for a lower bound */
            if (p->fused) { /* unkept: b * 0 = +-0 (key 0), or NaN for an infinite or NaN b */
                int64_t zeros = 0;
                for (int64_t g = 0; g < G; g++) {
                    const int64_t j0 = g * P;
                    if (kept[g]) {
                        memcpy(cu.i + j0, sk + j0, (size_t)P * 4);
                        if (p->topn <= 2) tk[nt++] = t1[g], tk[nt++] = t2[g];
                        continue;
                    }
                    for (int64_t j = j0; j < j0 + P; j++) {
                        const int32_t kj = sk[j];
                        cu.i[j] = (kj == INT32_MAX || kj == kinf[0] || kj == kninf[0]) ? INT32_MAX : 0;
                    }
                    zeros += P; /* each unkept key is 0 or above */
                }
                for (int64_t i = 0; i < zeros && i < k && i < GT_INSERT_K; i++) tk[nt++] = 0;
                n = E;
            } else {
                n = 0;
                for (int64_t g = 0; g < G; g++) {
                    if (!kept[g]) continue;
                    memcpy(cu.i + n, sk + g * P, (size_t)P * 4);
                    kid[n / P] = (int32_t)g; /* candidate i is expert kid[i / P] * P + i % P */
                    n += P;
                    if (p->topn <= 2) tk[nt++] = t1[g], tk[nt++] = t2[g];
                }
                ids = true;
            }
            for (int64_t j = n; j < GT_PAD(n); j++) cu.i[j] = INT32_MIN;
            keys = cu.i;
            /* the k-th largest of tk bounds the k-th largest candidate key from below */
            if (k <= GT_INSERT_K && k <= nt) {
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
        }
        gg_select(keys, n, k, lo, bu.best); /* k <= n: phase 1 */
        for (int64_t i = 0; i < k; i++) { /* sel[i] over the lower half of best[i], i ascending */
            const int32_t pos = (int32_t)~(uint32_t)bu.best[i];
            bu.sel[i] = ids ? (int32_t)(kid[pos / P] * P + pos % P) : pos;
        }
        float *yk = cu.f;
        for (int64_t i = 0; i < k; i++) yk[i] = s[bu.sel[i]];
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
            memcpy(c->we + r * k, bu.sel, (size_t)k * 4);
            continue;
        }
        for (int64_t i = 0; i < k; i++) {
            gt_store(c->y + r * c->ys0 + i * c->ys1, c->ydtype, yk[i]);
            memcpy(c->eidx + r * c->es0 + i * c->es1, &bu.sel[i], 4);
        }
    }
}
