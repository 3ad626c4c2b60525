/* gating_core.h - the row routine of MoeGatingTopKSoftmax(V2), written once
 * over GT_W-lane generic vectors (GCC/Clang vector extensions). The includer
 * defines GT_W (4 or 8) and GT_ROWS (the function's name). Every lane does
 * the same IEEE fp32 operations in the same order and every reduction is
 * laid out over 8 lanes whatever GT_W is, so both widths give the same bits
 * (tests/gating_bits.cmake compares them). No FMA: the build has
 * -ffp-contract=off and the AVX2 file is compiled without -mfma. */
#include <math.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "ops/routing/gating.h"

#include "ops/gv.h"

/* Rows are padded to a multiple of 8 floats with -inf (exp gives +0, which
 * the sums absorb). */

#define GT_QNAN 0x7FC00000u

/* Softmax of v[0..n) in place, by the rule in gating_top_k_softmax.c; v
 * holds GT_PAD(n) floats, the ones past n -inf on entry. The sum's lane l
 * adds the elements j = l mod 8 in order, whatever GT_W. */
static void gt_softmax(float *v, int64_t n) {
    const int64_t np = GT_PAD(n);
    gvf mv[GT_NV], acc[GT_NV];
    for (int h = 0; h < GT_NV; h++) mv[h] = gv_splat(v[0]), acc[h] = gv_splat(0.0f);
    for (int64_t j = 0; j < np; j += 8)
        for (int h = 0; h < GT_NV; h++) {
            const gvf x = gv_load(v + j + h * GT_W);
            mv[h] = gv_sel(x > mv[h], x, mv[h]);
        }
    /* the max is exact in any order; a NaN anywhere makes every p NaN below */
    float m = v[0];
    for (int h = 0; h < GT_NV; h++)
        for (int l = 0; l < GT_W; l++) m = mv[h][l] > m ? mv[h][l] : m;
    const gvf mm = gv_splat(m);
    for (int64_t j = 0; j < np; j += 8)
        for (int h = 0; h < GT_NV; h++) {
            const gvf u = gt_expv(gv_load(v + j + h * GT_W) - mm);
            gv_store(v + j + h * GT_W, u);
            acc[h] += u;
        }
    float a8[8];
    memcpy(a8, acc, sizeof a8);
    const float s = ((a8[0] + a8[1]) + (a8[2] + a8[3])) + ((a8[4] + a8[5]) + (a8[6] + a8[7]));
    const gvf ss = gv_splat(s), qnan = gv_splat(mf_bits_f32(GT_QNAN));
    for (int64_t j = 0; j < np; j += GT_W) {
        const gvf p = gv_load(v + j) / ss;
        gv_store(v + j, gv_sel(p != p, qnan, p));
    }
}

/* Inserts candidate c into the k best so far (best[0..*have), kept in
 * descending order for k <= GT_INSERT_K, a min-heap above). */
static inline void gt_consider(uint64_t *best, int64_t *have, int64_t k, uint64_t c) {
    int64_t i;
    if (k <= GT_INSERT_K) {
        i = *have < k ? (*have)++ : k - 1;
        while (i > 0 && best[i - 1] < c) {
            best[i] = best[i - 1];
            i--;
        }
        best[i] = c;
        return;
    }
    if (*have < k) {
        i = (*have)++;
        while (i > 0 && best[(i - 1) / 2] > c) {
            best[i] = best[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        best[i] = c;
        return;
    }
    i = 0; /* replace the root (the worst kept) and sift down */
    for (;;) {
        int64_t ch = 2 * i + 1;
        if (ch >= k) break;
        if (ch + 1 < k && best[ch + 1] < best[ch]) ch++;
        if (best[ch] >= c) break;
        best[i] = best[ch];
        i = ch;
    }
    best[i] = c;
}

/* Signed order keys of four floats: larger value, larger key; -0 as +0;
 * any NaN the largest (INT32_MAX). gt_key's unsigned key = this ^ 2^31. */
static inline gvi gt_skeyv(gvf f) {
    gvi u = (gvi)f;
    u = gi_sel(u == gi_splat(INT32_MIN), gi_splat(0), u);
    const gvi k = gi_sel(u < gi_splat(0), u ^ gi_splat(INT32_MAX), u);
    return gi_sel((u & gi_splat(INT32_MAX)) > gi_splat(0x7F800000), gi_splat(INT32_MAX), k);
}

/* Bit i of the result: lane i of the block of 8 at k[0..8) is > t (signed
 * int32 compare). */
static inline unsigned gt_above8v(const int32_t *k, gvi tv) {
    unsigned m = 0;
    for (int h = 0; h < GT_NV; h++) {
        gvi kv;
        memcpy(&kv, k + h * GT_W, sizeof kv);
        const gvi gt = kv > tv;
#if GT_W == 8 && defined(__AVX__)
        m |= (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps((__m256i)gt)) << (h * GT_W);
#elif GT_W == 4 && defined(__SSE2__)
        m |= (unsigned)_mm_movemask_ps(_mm_castsi128_ps((__m128i)gt)) << (h * GT_W);
#else
        for (int l = 0; l < GT_W; l++) m |= (unsigned)(gt[l] & 1) << (h * GT_W + l);
#endif
    }
    return m;
}
static inline unsigned gt_above8(const int32_t *k, int32_t t) { return gt_above8v(k, gi_splat(t)); }

/* best[0..k) = the k largest candidates key[j] << 32 | ~j over j < n, in
 * descending order (key descending, j ascending), k <= GT_INSERT_K and
 * k <= n; keys holds GT_PAD(n) signed keys. lo bounds the k-th largest key
 * from below (INT32_MIN: no bound), so keys below it are skipped. Then a
 * running threshold (the k-th kept key once k are kept) skips every block of
 * 8 with no key above it: a key equal to the k-th kept never enters (its
 * position is later). */
static void gt_select(const void *keys, int64_t n, int64_t k, int32_t lo, uint64_t *best) {
    const int32_t *key = keys; /* read through memcpy only: it may hold floats */
    int64_t have = 0;
    int32_t thr = lo == INT32_MIN ? INT32_MIN : lo - 1;
    bool full = false;
    gvi thrv = gi_splat(thr);
    for (int64_t j0 = 0; j0 < n; j0 += 8) {
        unsigned m = (full || lo != INT32_MIN) ? gt_above8v(key + j0, thrv) : 0xFFu;
        if (n - j0 < 8) m &= (1u << (n - j0)) - 1u;
        while (m) {
            const int b = __builtin_ctz(m);
            m &= m - 1;
            const int64_t j = j0 + b;
            int32_t kj;
            memcpy(&kj, key + j, 4);
            if (kj <= thr) continue;
            const uint64_t c = (uint64_t)((uint32_t)kj ^ 0x80000000u) << 32 | (uint32_t)~(uint32_t)j;
            int64_t i = have < k ? have++ : k - 1;
            while (i > 0 && best[i - 1] < c) {
                best[i] = best[i - 1];
                i--;
            }
            best[i] = c;
            if (have == k) {
                full = true;
                thr = (int32_t)((uint32_t)(best[k - 1] >> 32) ^ 0x80000000u);
                thrv = gi_splat(thr);
            }
        }
    }
}

/* sel[0..k) = the positions of the k largest v[0..n) by (key descending,
 * position ascending). A candidate c = key << 32 | ~position: larger is
 * better, all distinct; a later position with an equal key never displaces
 * an earlier one, so once k are kept only a key above the k-th kept enters.
 * For k < 32: the k-th largest of the maxima of 32 groups of elements, t0,
 * bounds the k-th largest key from below (k groups reach it), so keys below
 * t0 cannot be picked and are skipped. v holds GT_PAD(n) floats; sk is
 * scratch of as many. */
static void gt_topk(const float *v, int64_t n, int64_t k, int32_t *sk, uint64_t *best, int32_t *sel) {
    const int64_t np = GT_PAD(n);
    const bool heap = k > GT_INSERT_K;
    gvi lane;
    for (int l = 0; l < GT_W; l++) lane[l] = l;
    /* 32 groups: lane l of vector i belongs to group (i mod GT_G) * GT_W + l */
    enum { GT_G = 32 / GT_W };
    gvi gmax[GT_G];
    for (int h = 0; h < GT_G; h++) gmax[h] = gi_splat(INT32_MIN);
    for (int64_t j = 0, i = 0; j < np; j += GT_W, i++) {
        gvi key = gt_skeyv(gv_load(v + j));
        /* the padding past n: the smallest key */
        key = gi_sel(lane + gi_splat((int32_t)j) < gi_splat((int32_t)n), key, gi_splat(INT32_MIN));
        memcpy(sk + j, &key, sizeof key);
        gvi *g = &gmax[i % GT_G];
        *g = gi_sel(key > *g, key, *g);
    }
    int32_t t0 = INT32_MIN;
    if (!heap && k < 32) {
        /* t0 = the k-th largest group maximum: the smallest one with fewer
         * than k larger (branch free; equal maxima share a rank) */
        int32_t gm[32];
        memcpy(gm, gmax, sizeof gm);
        gvi above[GT_G], bt = gi_splat(INT32_MAX);
        for (int h = 0; h < GT_G; h++) above[h] = gi_splat(0);
        for (int i = 0; i < 32; i++) { /* above: how many group maxima exceed each one */
            const gvi gi = gi_splat(gm[i]);
            for (int h = 0; h < GT_G; h++) above[h] -= gmax[h] < gi;
        }
        for (int h = 0; h < GT_G; h++) {
            const gvi c = gi_sel(above[h] < gi_splat((int32_t)k), gmax[h], gi_splat(INT32_MAX));
            bt = gi_sel(c < bt, c, bt);
        }
        int32_t best_t = bt[0];
        for (int l = 1; l < GT_W; l++) best_t = bt[l] < best_t ? bt[l] : best_t;
        t0 = best_t; /* k groups reach it: a lower bound of the k-th largest key */
    }
    if (!heap) {
        gt_select(sk, n, k, t0, best);
        for (int64_t i = 0; i < k; i++) sel[i] = (int32_t)~(uint32_t)best[i];
        return;
    }
    int64_t have = 0;
    uint32_t thr = 0;
    for (int64_t j = 0; j < n; j++) {
        const uint32_t key = (uint32_t)sk[j] ^ 0x80000000u;
        if (have == k && key <= thr) continue;
        gt_consider(best, &have, k, (uint64_t)key << 32 | (uint32_t)~(uint32_t)j);
        if (have == k) thr = (uint32_t)(best[0] >> 32);
    }
    if (heap) { /* heap sort: pop the worst into the back, best[] ends descending */
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
    for (int64_t i = 0; i < k; i++) sel[i] = (int32_t)~(uint32_t)best[i];
}

/* The fast path of renorm 0 without the softmax output (k < 32, k < n): the
 * same max, u and s as gt_softmax (the same operations), but p = u / s only
 * for the k + 1 largest u by (u descending, expert ascending). Division by
 * the common s > 0 is monotone (u1 > u2 gives p1 >= p2), so every expert
 * outside the k + 1 largest u has p <= p of the (k+1)-th; when that is
 * below the k-th's p, the k largest u are the experts with p >= the k-th's,
 * and sorting them by (p descending, expert ascending) gives the rule's k.
 * When the (k+1)-th p equals the k-th's, the candidates are all u >= the
 * smallest u giving the k-th's p (at most GT_INSERT_K of them). Returns
 * false when the rule needs the full pass: s is NaN (a NaN or an infinite
 * logit), more candidates, or more than 8 u steps give the k-th's p. xb holds
 * GT_PAD(n) floats, -inf past n, at any alignment (x's own row when it
 * needs no widening or padding; it may be u itself); u receives the
 * GT_PAD(n) exp values. */
static bool gt_fast(const char *xb, float *u, int64_t n, int64_t k, int32_t *sel, float *yk) {
    const int64_t np = GT_PAD(n);
    gvf mv[GT_NV], acc[GT_NV];
    float x0;
    memcpy(&x0, xb, 4);
    for (int h = 0; h < GT_NV; h++) mv[h] = gv_splat(x0), acc[h] = gv_splat(0.0f);
    for (int64_t j = 0; j < np; j += 8)
        for (int h = 0; h < GT_NV; h++) {
            const gvf xv = gv_loadb(xb + 4 * (j + h * GT_W));
            mv[h] = gv_sel(xv > mv[h], xv, mv[h]);
        }
    float m = x0;
    for (int h = 0; h < GT_NV; h++)
        for (int l = 0; l < GT_W; l++) m = mv[h][l] > m ? mv[h][l] : m;
    const gvf mm = gv_splat(m);
    /* 32 groups (element j in group (j / 8 mod 4) * 8 + j mod 8): their
     * maxima; k + 1 groups reach the (k+1)-th largest of them, so it bounds
     * the (k+1)-th largest u from below */
    enum { GT_GV = 32 / GT_W };
    gvf gm[GT_GV];
    for (int h = 0; h < GT_GV; h++) gm[h] = gv_splat(0.0f);
    for (int64_t j = 0; j < np; j += 8)
        for (int h = 0; h < GT_NV; h++) {
            const gvf uv = gt_expv(gv_loadb(xb + 4 * (j + h * GT_W)) - mm);
            gv_store(u + j + h * GT_W, uv);
            acc[h] += uv;
            gvf *g = &gm[(j / 8 % 4) * GT_NV + h];
            *g = gv_sel(uv > *g, uv, *g);
        }
    float a8[8];
    memcpy(a8, acc, sizeof a8);
    const float s = ((a8[0] + a8[1]) + (a8[2] + a8[3])) + ((a8[4] + a8[5]) + (a8[6] + a8[7]));
    if (s != s) return false;
    /* every u is +0 or a positive float: its bits are its order key. The
     * bound: the smallest group maximum with fewer than k + 1 larger ones
     * (rank counts for all 32 at once; equal maxima share a rank) */
    gvi above[GT_GV];
    for (int h = 0; h < GT_GV; h++) above[h] = gi_splat(0);
    float g32[32];
    memcpy(g32, gm, sizeof g32);
    for (int i = 0; i < 32; i++) {
        const gvf gi = gv_splat(g32[i]);
        for (int h = 0; h < GT_GV; h++) above[h] -= (gvi)(gm[h] < gi);
    }
    gvf lov = gv_splat(1.0f); /* the largest group maximum is u = 1 (exp(0)) or above; any bound works */
    for (int h = 0; h < GT_GV; h++) {
        const gvi ok = above[h] < gi_splat((int32_t)(k + 1));
        const gvf cand = gv_sel(ok, gm[h], lov);
        lov = gv_sel(cand < lov, cand, lov);
    }
    float lo = lov[0];
    for (int l = 1; l < GT_W; l++) lo = lov[l] < lo ? lov[l] : lo;
    int32_t lok;
    memcpy(&lok, &lo, 4);
    uint64_t best[GT_INSERT_K];
    float pk[GT_INSERT_K];
    int32_t ek[GT_INSERT_K];
    int64_t kk = k + 1;
    gt_select(u, n, kk, lok > 0 ? lok : INT32_MIN, best);
    for (int64_t i = 0; i < kk; i++) {
        ek[i] = (int32_t)~(uint32_t)best[i];
        pk[i] = u[ek[i]] / s;
    }
    if (!(pk[k] < pk[k - 1])) {
        /* the (k+1)-th p equals the k-th's (equal logits, or u that round to
         * the same p): take every expert whose u is at least tb, the
         * smallest u (as bits) still giving the k-th's p, so that every u
         * below gives a smaller p; a few steps down from the k-th's u */
        const float pkk = pk[k - 1];
        uint32_t tb = mf_f32_bits(u[ek[k - 1]]);
        int steps = 0;
        while (tb > 0 && mf_bits_f32(tb - 1) / s == pkk) {
            tb--;
            if (++steps > 8) return false;
        }
        int64_t cnt = 0;
        for (int64_t j0 = 0; j0 < n; j0 += 8) {
            unsigned m8 = gt_above8((const int32_t *)(const void *)(u + j0), (int32_t)tb - 1);
            if (n - j0 < 8) m8 &= (1u << (n - j0)) - 1u;
            cnt += __builtin_popcount(m8);
        }
        if (cnt > GT_INSERT_K) return false;
        kk = cnt; /* >= k + 1: the first k + 1 have u >= the k-th's */
        gt_select(u, n, kk, (int32_t)tb, best);
        for (int64_t i = 0; i < kk; i++) {
            ek[i] = (int32_t)~(uint32_t)best[i];
            pk[i] = u[ek[i]] / s;
        }
    }
    while (kk > k && pk[kk - 1] < pk[k - 1]) kk--; /* the experts with p >= the k-th's */
    /* p is non-increasing along the u order: reorder runs of equal p by
     * expert; the first k are the answer */
    for (int64_t i = 1; i < kk; i++) {
        const float pv = pk[i];
        const int32_t ev = ek[i];
        int64_t q = i;
        while (q > 0 && pk[q - 1] == pv && ek[q - 1] > ev) {
            pk[q] = pk[q - 1], ek[q] = ek[q - 1];
            q--;
        }
        pk[q] = pv, ek[q] = ev;
    }
    for (int64_t i = 0; i < k; i++) sel[i] = ek[i], yk[i] = pk[i];
    return true;
}

static inline void gt_store(char *p, int dtype, float f) {
    uint16_t h;
    switch (dtype) {
    case ACL_FLOAT: memcpy(p, &f, 4); break;
    case ACL_FLOAT16: h = mf_f32_to_f16(f); memcpy(p, &h, 2); break;
    default: h = mf_f32_to_bf16(f); memcpy(p, &h, 2); break;
    }
}



/* The includer may leave GT_ROWS undefined to take only the helpers above
 * (gating_group_core.h). */
#ifdef GT_ROWS
/* v[0..GT_PAD(E)) = row r of x widened to fp32, -inf past E */
static void gt_load(const gt_ctx *c, int64_t r, float *v) {
    const int64_t E = c->p->E, Ep = GT_PAD(E);
    const char *row = mf_row(&c->x, r);
    const int64_t sc = c->x.s_col;
    switch (c->dtype) {
    case ACL_FLOAT:
        if (sc == 4) {
            memcpy(v, row, (size_t)E * 4);
        } else {
            for (int64_t j = 0; j < E; j++) memcpy(&v[j], row + j * sc, 4);
        }
        break;
    case ACL_FLOAT16:
        for (int64_t j = 0; j < E; j++) {
            uint16_t h;
            memcpy(&h, row + j * sc, 2);
            v[j] = mf_f16_to_f32(h);
        }
        break;
    default:
        if (sc == 2) { /* contiguous: a constant stride, so the widening vectorizes */
            for (int64_t j = 0; j < E; j++) {
                uint16_t h;
                memcpy(&h, row + j * 2, 2);
                v[j] = mf_bf16_to_f32(h);
            }
        } else {
            for (int64_t j = 0; j < E; j++) {
                uint16_t h;
                memcpy(&h, row + j * sc, 2);
                v[j] = mf_bf16_to_f32(h);
            }
        }
        break;
    }
    for (int64_t j = E; j < Ep; j++) v[j] = -INFINITY;
}

void GT_ROWS(void *vctx, int64_t r0, int64_t r1) {
    const gt_ctx *c = vctx;
    const gt_plan *p = c->p;
    const int64_t E = p->E, k = p->k;
    const size_t es = mf_dtype_size(c->dtype);
    float stack_buf[GT_PAD(GT_STACK_E)];
    int32_t sk_stack[GT_PAD(GT_STACK_E)];
    uint64_t best[GT_MAX_K];
    int32_t sel[GT_MAX_K];
    float yk[GT_PAD(GT_MAX_K)];
    const int64_t Ep = GT_PAD(E), kp = GT_PAD(k);
    /* renorm 0 without the softmax output: gt_fast, reading x's row in place
     * when it is fp32, contiguous and a whole number of blocks of 8 */
    const bool fast = !p->renorm && !p->softmax && k < GT_INSERT_K && k < E;
    const bool direct = fast && c->dtype == ACL_FLOAT && c->x.s_col == 4 && E % 8 == 0;
    for (int64_t r = r0; r < r1; r++) {
        float *v = c->ws ? c->ws + r * 2 * Ep : stack_buf;
        int32_t *skbuf = c->ws ? (int32_t *)(v + Ep) : sk_stack;
        bool ok = false;
        if (fast) {
            const char *xb = (const char *)v;
            if (direct)
                xb = mf_row(&c->x, r);
            else
                gt_load(c, r, v);
            ok = gt_fast(xb, v, E, k, sel, yk); /* the k largest p by the rule, no full division pass */
        }
        if (!ok) {
            gt_load(c, r, v);
            if (p->renorm) {
                gt_topk(v, E, k, skbuf, best, sel);
                for (int64_t i = 0; i < k; i++) yk[i] = v[sel[i]];
                for (int64_t i = k; i < kp; i++) yk[i] = -INFINITY;
                gt_softmax(yk, k);
            } else {
                gt_softmax(v, E);
                if (p->softmax) memcpy(c->sm + r * E, v, (size_t)E * 4);
                gt_topk(v, E, k, skbuf, best, sel);
                for (int64_t i = 0; i < k; i++) yk[i] = v[sel[i]];
            }
        }
        bool done = false;
        if (c->has_fin) {
            const int64_t a = c->fin_cols ? r / c->fin_cols : r, b = c->fin_cols ? r % c->fin_cols : 0;
            done = *(const unsigned char *)mf_small_at(&c->fin, a, b) != 0;
        }
        char *yr = c->y + r * k * (int64_t)es;
        int32_t *er = c->eidx + r * k;
        for (int64_t i = 0; i < k; i++) {
            gt_store(yr + i * (int64_t)es, c->dtype, yk[i]);
            er[i] = done ? (int32_t)E : sel[i];
        }
        if (p->row_idx) {
            int32_t *rr = c->ridx + r * k;
            for (int64_t i = 0; i < k; i++) rr[i] = (int32_t)(i * p->R + r);
        }
    }
}
#endif /* GT_ROWS */
