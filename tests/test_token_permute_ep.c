/* test_token_permute_ep.c - aclnnMoeTokenPermuteWithEp(Grad) and
 * aclnnMoeTokenUnpermuteWithEp(Grad) against oracles written from CANN's
 * documented semantics and kernels (docs/aclnnMoeToken*WithEp*.md,
 * op_kernel/moe_index_copy.h, moe_token_unpermute_with_ep*.h): a comparison
 * sort for the stable order, the kernel's scatter written as a plain loop
 * (rank i in the window to row i - start), fp32 k-order sums, the forward's
 * canonical order (fwd_ref.h) for the unpermute, values decoded and rounded
 * by tests/ref_fp.h. Random cases over every dtype, odd sizes, every range
 * shape (start == end, start > end wrapping past T, end == T, empty, NULL),
 * strided inputs, poisoned outputs with guard bytes; CANN's doc samples by
 * hand; then the phase-1 codes and the phase-2 refusals with outputs
 * untouched. */
#include <math.h>

#include "aclnnop/aclnn_moe_token_permute_with_ep.h"
#include "aclnnop/aclnn_moe_token_permute_with_ep_grad.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_ep.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_ep_grad.h"
#include "fwd_ref.h"
#include "ref_fp.h"
#define TU_COUNT_FAILURES
#include "testutil.h"

#define FAILED(...) (printf("FAIL %s:%d: ", __FILE__, __LINE__), printf(__VA_ARGS__), printf("\n"), g_checks++, g_fail++)

static size_t esz(aclDataType dt) { return dt == ACL_FLOAT || dt == ACL_INT32 ? 4 : dt == ACL_INT64 ? 8 : 2; }
static double dec(aclDataType dt, const unsigned char *p) {
    float f;
    uint16_t h;
    if (dt == ACL_FLOAT) {
        memcpy(&f, p, 4);
        return f;
    }
    memcpy(&h, p, 2);
    return ref_val16(dt == ACL_BF16, h);
}
static void enc(aclDataType dt, unsigned char *p, double v) {
    if (dt == ACL_FLOAT) {
        float f = (float)v;
        memcpy(p, &f, 4);
        return;
    }
    uint16_t h = ref_round16(dt == ACL_BF16, v);
    memcpy(p, &h, 2);
}
static double rnd(aclDataType dt, double v) {
    unsigned char b[4];
    enc(dt, b, v);
    return dec(dt, b);
}
static void rand_val(aclDataType dt, unsigned char *p) {
    double v = (double)tu_int(-4000, 4000) / 512.0;
    if (tu_int(0, 15) == 0) v = tu_int(0, 1) ? 0.0 : -0.0;
    enc(dt, p, v);
}
static aclTensor *mk(int nd, const int64_t *dims, aclDataType dt, void *data) { return tu_tensor(dims, nd, dt, data); }
static aclTensor *mk2(int64_t d0, int64_t d1, aclDataType dt, void *data) {
    int64_t d[2] = {d0, d1};
    return mk(2, d, dt, data);
}
static aclTensor *mk1(int64_t d0, aclDataType dt, void *data) { return mk(1, &d0, dt, data); }
/* a strided view of dense src (padded strides, sometimes every other element, an offset), or a dense one */
static aclTensor *maybe_strided(const void *src, int nd, const int64_t *dims, aclDataType dt, unsigned char **store) {
    *store = NULL;
    if (tu_int(0, 1)) return mk(nd, dims, dt, (void *)src);
    int64_t st[8], off = tu_int(0, 3);
    st[nd - 1] = tu_int(1, 2);
    for (int d = nd - 2; d >= 0; d--) st[d] = st[d + 1] * (dims[d + 1] > 0 ? dims[d + 1] : 1) + tu_int(0, 2);
    tu_owned v = tu_strided(src, nd, dims, st, off, tu_span(nd, dims, st, off), dt, esz(dt), 0x5A, 1);
    *store = v.store;
    return v.t;
}
static void *run_ws(uint64_t wsz) {
    void *ws = wsz ? malloc(wsz) : NULL;
    if (ws) memset(ws, TU_POISON, wsz);
    return ws;
}
static aclnnStatus run2(aclnnStatus rc, aclOpExecutor **e, const uint64_t *wsz,
                        aclnnStatus (*fn)(void *, uint64_t, aclOpExecutor *, aclrtStream)) {
    if (rc != 0) return rc;
    void *ws = run_ws(*wsz);
    rc = fn(ws, *wsz, *e, NULL);
    free(ws);
    return rc;
}
/* NULL, an empty array or [s, e] */
static aclIntArray *range_of(int kind, int64_t s, int64_t e) {
    const int64_t v[2] = {s, e};
    if (kind == 0) return NULL;
    return kind == 1 ? aclCreateIntArray(v, 0) : aclCreateIntArray(v, 2);
}
/* A random range for T sorted rows: every shape the kernels treat apart. */
static void pick_range(int64_t T, int64_t *s, int64_t *e) {
    switch (tu_int(0, 5)) {
    case 0: *s = *e = tu_int(0, T); break;                /* start == end: all T rows */
    case 1: *s = 0, *e = T; break;                         /* the whole */
    case 2: *s = tu_int(0, T), *e = tu_int(0, T); break;   /* anything, start > end wraps */
    case 3: *s = tu_int(0, T), *e = T; break;              /* a tail */
    default: *s = tu_int(0, T), *e = tu_int(*s, T); break; /* an ordinary window */
    }
}

/* ---- permute with ep ---- */

static void permute_case(aclDataType dt, aclDataType it, int64_t N, int64_t K, int64_t H, int64_t E, int one_d,
                         int rkind, int64_t s, int64_t e, int64_t numOut, int probs) {
    const size_t es = esz(dt), ies = esz(it);
    const int64_t T = N * K;
    /* the output rows: the window's length, or numOutTokens without a range */
    int64_t A = rkind == 2 ? e - s : numOut;
    if (A <= 0) A += T;
    A = A < 0 ? 0 : A > T ? T : A;
    unsigned char *tok = malloc((size_t)(N * H) * es + 1), *pr = malloc((size_t)T * es + 1);
    for (int64_t i = 0; i < N * H; i++) rand_val(dt, tok + i * (int64_t)es);
    for (int64_t i = 0; i < T; i++) rand_val(dt, pr + i * (int64_t)es);
    int64_t *key = malloc(sizeof *key * (size_t)(T + 1)), *perm = malloc(sizeof *perm * (size_t)(T + 1));
    unsigned char *ind = malloc((size_t)T * ies + 1);
    for (int64_t j = 0; j < T; j++) {
        int64_t v = tu_int(0, E - 1);
        if (tu_int(0, 19) == 0) v = tu_int(0, 1) ? (it == ACL_INT32 ? INT32_MIN : INT64_MIN) : (it == ACL_INT32 ? INT32_MAX : INT64_MAX);
        if (tu_int(0, 29) == 0) v = 16777214; /* the largest ordinary id */
        key[j] = v;
        if (it == ACL_INT32) {
            int32_t w = (int32_t)v;
            memcpy(ind + j * 4, &w, 4);
        } else {
            memcpy(ind + j * 8, &v, 8);
        }
    }
    tu_ref_sort(key, T, perm);
    /* the kernel's scatter: rank i goes to row i (A == T) or i - start (i in [start, start + A)) */
    const size_t ob = (size_t)(A * H) * es, rb = (size_t)T * 4, pb = (size_t)A * es;
    unsigned char *want = calloc(ob + 1, 1), *wantp = calloc(pb + 1, 1); /* unwritten rows: +0.0 */
    for (int64_t i = 0; i < T; i++) {
        int64_t dst = -1;
        if (A == T) dst = i;
        else if (rkind == 2 && i >= s && i < s + A) dst = i - s;
        else if (rkind != 2 && i < A) dst = i;
        if (dst < 0) continue;
        memcpy(want + dst * H * (int64_t)es, tok + (perm[i] / K) * H * (int64_t)es, (size_t)H * es);
        memcpy(wantp + dst * (int64_t)es, pr + perm[i] * (int64_t)es, es);
    }
    unsigned char *ts, *is, *ps;
    int64_t tdims[2] = {N, H}, idims[2] = {N, K};
    aclTensor *tt = maybe_strided(tok, 2, tdims, dt, &ts);
    aclTensor *ti = maybe_strided(ind, one_d ? 1 : 2, idims, it, &is);
    aclTensor *tp = probs ? maybe_strided(pr, one_d ? 1 : 2, idims, dt, &ps) : (ps = NULL, NULL);
    unsigned char *out = tu_poisoned(ob), *row = tu_poisoned(rb), *pout = tu_poisoned(pb);
    aclTensor *to = mk2(A, H, dt, out), *tr = mk1(T, ACL_INT32, row), *tpo = mk1(A, dt, pout);
    aclIntArray *rg = range_of(rkind, s, e);
    uint64_t wsz = 0;
    aclOpExecutor *ex = NULL;
    char what[220];
    snprintf(what, sizeof what, "permute_ep dt=%d it=%d N=%lld K=%lld H=%lld E=%lld range=%d[%lld,%lld) numOut=%lld probs=%d",
             (int)dt, (int)it, (long long)N, (long long)K, (long long)H, (long long)E, rkind, (long long)s,
             (long long)e, (long long)numOut, probs);
    aclnnStatus rc = run2(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tt, ti, tp, rg, numOut, false, to, tr, tpo, &wsz, &ex),
                          &ex, &wsz, aclnnMoeTokenPermuteWithEp);
    CHECK(rc == 0, "%s: rc = %d (%s)", what, rc, aclGetRecentErrMsg());
    if (rc == 0) {
        int bad = 0;
        for (int64_t i = 0; i < T && !bad; i++) {
            int32_t v;
            memcpy(&v, row + perm[i] * 4, 4);
            if (v != (int32_t)i) bad = 1, FAILED("%s: sortedIndicesOut[%lld] = %d, want %lld", what, (long long)perm[i], v, (long long)i);
        }
        for (int64_t i = 0; i < A && !bad; i++)
            if (memcmp(out + i * H * (int64_t)es, want + i * H * (int64_t)es, (size_t)H * es))
                bad = 1, FAILED("%s: permuteTokensOut row %lld differs", what, (long long)i);
        if (probs && rkind == 2) {
            if (memcmp(pout, wantp, pb)) FAILED("%s: permuteProbsOut differs", what);
        } else {
            CHECK(tu_all_poison(pout, pb), "%s: permuteProbsOut written (no probs or no range)", what);
        }
        CHECK(tu_guard_ok(out, ob) && tu_guard_ok(row, rb) && tu_guard_ok(pout, pb), "%s: guard bytes", what);
    }
    g_cases++;
    aclDestroyTensor(tt), aclDestroyTensor(ti), aclDestroyTensor(to), aclDestroyTensor(tr), aclDestroyTensor(tpo);
    if (tp) aclDestroyTensor(tp);
    if (rg) aclDestroyIntArray(rg);
    free(tok), free(pr), free(key), free(perm), free(ind), free(want), free(wantp), free(ts), free(is), free(ps);
    free(out), free(row), free(pout);
}

/* ---- permute with ep grad: tokenGrad[r] = fp32 sum in k order of g[d - start], d in [start, end) ---- */

static void permute_grad_case(aclDataType dt, int64_t N, int64_t K, int64_t H, int rkind, int64_t s, int64_t e,
                              int probs) {
    const size_t es = esz(dt);
    const int64_t T = N * K;
    /* without a range: TokenPermuteGrad (d < M kept) */
    const int64_t lo = rkind == 2 ? s : 0, hi = rkind == 2 ? e : INT64_MAX;
    int64_t M = rkind == 2 ? (e - s > 0 ? e - s : 0) : tu_int(1, T);
    if (M == 0) M = tu_int(0, 2);
    unsigned char *g = malloc((size_t)(M * H) * es + 1), *pg = malloc((size_t)M * es + 1);
    for (int64_t i = 0; i < M * H; i++) rand_val(dt, g + i * (int64_t)es);
    for (int64_t i = 0; i < M; i++) rand_val(dt, pg + i * (int64_t)es);
    int32_t *idx = malloc(4 * (size_t)(T + 1));
    for (int64_t i = 0; i < T; i++) idx[i] = (int32_t)i;
    for (int64_t i = T - 1; i > 0; i--) {
        int64_t j = tu_int(0, i);
        int32_t t = idx[i];
        idx[i] = idx[j], idx[j] = t;
    }
    const int64_t mhi = rkind == 2 ? (lo + M < hi ? lo + M : hi) : M; /* values past the kept ones would read out of bounds */
    for (int64_t i = 0; i < T; i++)
        if ((rkind == 2 && idx[i] >= lo && idx[i] < hi && idx[i] >= mhi) || (rkind != 2 && idx[i] >= M && tu_int(0, 1)))
            idx[i] = rkind == 2 ? (int32_t)(tu_int(0, 1) ? hi + tu_int(0, 3) : lo - 1 - tu_int(0, 3)) : idx[i];
    for (int64_t i = 0; i < T; i++) /* no negative values without a range (TokenPermuteGrad refuses them) */
        if (rkind != 2 && idx[i] < 0) idx[i] = (int32_t)M;
    unsigned char *gs, *is, *pgs;
    int64_t gd[2] = {M, H}, id[1] = {T}, pd[1] = {M};
    aclTensor *tg = maybe_strided(g, 2, gd, dt, &gs), *ti = maybe_strided(idx, 1, id, ACL_INT32, &is);
    aclTensor *tpg = probs ? maybe_strided(pg, 1, pd, dt, &pgs) : (pgs = NULL, NULL);
    const size_t ob = (size_t)(N * H) * es, pb = (size_t)T * es;
    unsigned char *out = tu_poisoned(ob), *pout = tu_poisoned(pb);
    aclTensor *to = mk2(N, H, dt, out), *tpo = mk2(N, K, dt, pout);
    aclIntArray *rg = range_of(rkind, s, e);
    uint64_t wsz = 0;
    aclOpExecutor *ex = NULL;
    char what[200];
    snprintf(what, sizeof what, "permute_ep_grad dt=%d N=%lld K=%lld H=%lld M=%lld range=%d[%lld,%lld) probs=%d", (int)dt,
             (long long)N, (long long)K, (long long)H, (long long)M, rkind, (long long)s, (long long)e, probs);
    aclnnStatus rc = run2(aclnnMoeTokenPermuteWithEpGradGetWorkspaceSize(tg, ti, tpg, K, rg, false, to, tpo, &wsz, &ex),
                          &ex, &wsz, aclnnMoeTokenPermuteWithEpGrad);
    CHECK(rc == 0, "%s: rc = %d (%s)", what, rc, aclGetRecentErrMsg());
    if (rc == 0) {
        int bad = 0;
        for (int64_t r = 0; r < N && !bad; r++)
            for (int64_t h = 0; h < H && !bad; h++) {
                float acc = 0.0f;
                int have = 0;
                for (int64_t k = 0; k < K; k++) {
                    const int64_t d = idx[r * K + k];
                    if (d < lo || d >= hi || (rkind != 2 && d >= M)) continue;
                    const float v = (float)dec(dt, g + ((d - lo) * H + h) * (int64_t)es);
                    acc = have ? acc + v : v;
                    have = 1;
                }
                unsigned char w[4];
                enc(dt, w, have ? (double)acc : 0.0);
                if (memcmp(w, out + (r * H + h) * (int64_t)es, es))
                    bad = 1, FAILED("%s: tokenGradOut[%lld][%lld] = %g, want %g", what, (long long)r, (long long)h,
                                   dec(dt, out + (r * H + h) * (int64_t)es), dec(dt, w));
            }
        if (probs && rkind == 2) {
            for (int64_t i = 0; i < T && !bad; i++) {
                const int64_t d = idx[i];
                unsigned char w[4] = {0, 0, 0, 0};
                if (d >= lo && d < hi) memcpy(w, pg + (d - lo) * (int64_t)es, es);
                if (memcmp(w, pout + i * (int64_t)es, es)) bad = 1, FAILED("%s: probsGradOut[%lld] differs", what, (long long)i);
            }
        } else {
            CHECK(tu_all_poison(pout, pb), "%s: probsGradOut written (no probs or no range)", what);
        }
        CHECK(tu_guard_ok(out, ob) && tu_guard_ok(pout, pb), "%s: guard bytes", what);
    }
    g_cases++;
    aclDestroyTensor(tg), aclDestroyTensor(ti), aclDestroyTensor(to), aclDestroyTensor(tpo);
    if (tpg) aclDestroyTensor(tpg);
    if (rg) aclDestroyIntArray(rg);
    free(g), free(pg), free(idx), free(gs), free(is), free(pgs), free(out), free(pout);
}

/* ---- unpermute with ep: out[r] = sum_k p * x[d - start] over d in [start, end), p != 0 ---- */

static void unpermute_case(aclDataType dt, aclDataType pt, int64_t N, int64_t K, int64_t H, int rkind, int64_t s,
                           int64_t e, int probs) {
    const size_t es = esz(dt), pes = esz(pt);
    const int64_t T = N * K;
    const int64_t lo = rkind == 2 ? s : 0;
    int64_t M = rkind == 2 ? (e - s > 0 ? e - s : tu_int(1, 3)) : tu_int(1, T + 1);
    const int64_t hi = rkind == 2 ? e : INT64_MAX;
    const int64_t K_ = rkind == 2 || probs ? K : 1, R = rkind == 2 || probs ? N : T; /* without range nor probs K = 1 */
    unsigned char *x = malloc((size_t)(M * H) * es + 1), *p = malloc((size_t)T * pes + 1);
    for (int64_t i = 0; i < M * H; i++) rand_val(dt, x + i * (int64_t)es);
    for (int64_t i = 0; i < T; i++) rand_val(pt, p + i * (int64_t)pes);
    int32_t *idx = malloc(4 * (size_t)(T + 1));
    for (int64_t i = 0; i < T; i++) {
        int64_t d = tu_int(0, T + 1);
        if (rkind == 2 && d >= lo && d < hi && d - lo >= M) d = hi + tu_int(0, 2); /* keep reads in bounds */
        idx[i] = (int32_t)d;
    }
    /* a row of inf named only with prob 0: the kernel skips such terms */
    if (probs && M > 1) {
        for (int64_t h = 0; h < H; h++) enc(dt, x + ((M - 1) * H + h) * (int64_t)es, INFINITY);
        for (int64_t i = 0; i < T; i++)
            if (idx[i] - lo == M - 1 && idx[i] >= lo && idx[i] < hi) enc(pt, p + i * (int64_t)pes, 0.0);
    }
    unsigned char *xs, *is, *ps;
    int64_t xd[2] = {M, H}, id[1] = {T}, pd[2] = {N, K};
    aclTensor *tx = maybe_strided(x, 2, xd, dt, &xs), *ti = maybe_strided(idx, 1, id, ACL_INT32, &is);
    aclTensor *tp = probs ? maybe_strided(p, 2, pd, pt, &ps) : (ps = NULL, NULL);
    const size_t ob = (size_t)(R * H) * es;
    unsigned char *out = tu_poisoned(ob);
    aclTensor *to = mk2(R, H, dt, out);
    aclIntArray *rg = range_of(rkind, s, e);
    uint64_t wsz = 0;
    aclOpExecutor *ex = NULL;
    char what[200];
    snprintf(what, sizeof what, "unpermute_ep dt=%d pt=%d N=%lld K=%lld H=%lld M=%lld range=%d[%lld,%lld) probs=%d",
             (int)dt, (int)pt, (long long)N, (long long)K, (long long)H, (long long)M, rkind, (long long)s,
             (long long)e, probs);
    aclnnStatus rc = run2(aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize(tx, ti, tp, K, rg, false, NULL, to, &wsz, &ex),
                          &ex, &wsz, aclnnMoeTokenUnpermuteWithEp);
    CHECK(rc == 0, "%s: rc = %d (%s)", what, rc, aclGetRecentErrMsg());
    if (rc == 0) {
        int bad = 0;
        const void **xr = malloc(sizeof *xr * (size_t)(K_ + 1)), **br = malloc(sizeof *br * (size_t)(K_ + 1));
        double *sr = malloc(sizeof *sr * (size_t)(K_ + 1));
        unsigned char *want = malloc((size_t)H * es + 1);
        for (int64_t r = 0; r < R && !bad; r++) {
            for (int64_t k = 0; k < K_; k++) {
                const int64_t d = idx[r * K_ + k];
                sr[k] = probs ? dec(pt, p + (r * K_ + k) * (int64_t)pes) : 1.0;
                br[k] = NULL;
                const int kept = d >= lo && d < hi && d - lo < M && sr[k] != 0.0;
                xr[k] = kept ? x + (size_t)((d - lo) * H) * es : NULL;
            }
            const fr_row row = {(int)dt, NULL, NULL, (int)K_, xr, br, sr};
            fr_row_forward(&row, 0, H, want, K_ <= FR_KMAX32);
            for (int64_t h = 0; h < H && !bad; h++) {
                const double got = dec(dt, out + (r * H + h) * (int64_t)es), w = dec(dt, want + h * (int64_t)es);
                const int ok = isnan(w) ? isnan(got)
                                        : !memcmp(want + h * (int64_t)es, out + (r * H + h) * (int64_t)es, es) ||
                                              (got == 0.0 && w == 0.0);
                if (!ok) bad = 1, FAILED("%s: out[%lld][%lld] = %a, want %a", what, (long long)r, (long long)h, got, w);
            }
        }
        free(xr), free(br), free(sr), free(want);
        CHECK(tu_guard_ok(out, ob), "%s: guard bytes", what);
    }
    g_cases++;
    aclDestroyTensor(tx), aclDestroyTensor(ti), aclDestroyTensor(to);
    if (tp) aclDestroyTensor(tp);
    if (rg) aclDestroyIntArray(rg);
    free(x), free(p), free(idx), free(xs), free(is), free(ps), free(out);
}

/* ---- unpermute with ep grad ----
 * kept: d in [lo, hi) after CANN's normalisation, and d < M when lo == 0;
 * permGrad[d - lo] = round(g[r] * p) (g[r] without probs) for the last entry
 * naming it, +0.0 for rows nobody names; probGrad = sum_h x[d - lo] * g[r]
 * within one rounding plus 2^-40 of the absolute sum, 0 when not kept. */
static void unpermute_grad_case(aclDataType dt, aclDataType pt, int64_t N, int64_t K, int64_t H, int rkind, int64_t s,
                                int64_t e, int probs, int with_x) {
    const size_t es = esz(dt), pes = esz(pt);
    if (!probs && tu_int(0, 1)) K = 1;
    const int64_t T = N * K;
    int64_t lo = 0, hi = T;
    if (rkind == 2) {
        lo = s < 0 ? s + T : s, hi = e < 0 ? e + T : e;
        lo = lo < 0 ? 0 : lo > T ? T : lo, hi = hi < 0 ? 0 : hi > T ? T : hi;
    }
    if (probs) with_x = 1;
    int64_t M = hi - lo > 0 ? hi - lo : 1;
    if (with_x && lo == 0) M = tu_int(1, T); /* permutedTokens' rows cut the window when start is 0 */
    if (lo == 0 && M < hi) hi = M;
    const int64_t Mo = with_x ? M : (hi - lo > 0 ? hi - lo : 1);
    unsigned char *x = malloc((size_t)(M * H) * es + 1), *g = malloc((size_t)(N * H) * es + 1),
                  *p = malloc((size_t)T * pes + 1);
    for (int64_t i = 0; i < M * H; i++) rand_val(dt, x + i * (int64_t)es);
    for (int64_t i = 0; i < N * H; i++) rand_val(dt, g + i * (int64_t)es);
    for (int64_t i = 0; i < T; i++) rand_val(pt, p + i * (int64_t)pes);
    int32_t *idx = malloc(4 * (size_t)(T + 1));
    for (int64_t i = 0; i < T; i++) idx[i] = (int32_t)i;
    for (int64_t i = T - 1; i > 0; i--) {
        int64_t j = tu_int(0, i);
        int32_t t = idx[i];
        idx[i] = idx[j], idx[j] = t;
    }
    for (int64_t i = 0; i < T; i++) {
        if (tu_int(0, 5) == 0) idx[i] = (int32_t)tu_int(-2, T + 2); /* repeats, negatives, past T */
        if (idx[i] >= lo && idx[i] < hi && idx[i] - lo >= Mo) idx[i] = (int32_t)(hi + 1);
    }
    unsigned char *xs, *gs, *is, *ps;
    int64_t xd[2] = {M, H}, gd[2] = {N, H}, id[1] = {T}, pd[2] = {N, K};
    aclTensor *tx = with_x ? maybe_strided(x, 2, xd, dt, &xs) : (xs = NULL, NULL);
    aclTensor *tg = maybe_strided(g, 2, gd, dt, &gs), *ti = maybe_strided(idx, 1, id, ACL_INT32, &is);
    aclTensor *tp = probs ? maybe_strided(p, 2, pd, pt, &ps) : (ps = NULL, NULL);
    const size_t ob = (size_t)(Mo * H) * es, pb = (size_t)T * pes;
    unsigned char *out = tu_poisoned(ob), *pg = tu_poisoned(pb);
    aclTensor *to = mk2(Mo, H, dt, out), *tpg = mk2(N, K, pt, pg);
    aclIntArray *rg = range_of(rkind, s, e);
    uint64_t wsz = 0;
    aclOpExecutor *ex = NULL;
    char what[220];
    snprintf(what, sizeof what, "unpermute_ep_grad dt=%d pt=%d N=%lld K=%lld H=%lld M=%lld range=%d[%lld,%lld) probs=%d x=%d",
             (int)dt, (int)pt, (long long)N, (long long)K, (long long)H, (long long)M, rkind, (long long)s,
             (long long)e, probs, with_x);
    aclnnStatus rc = run2(aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize(tg, ti, tx, tp, false, NULL, rg, K, to, tpg,
                                                                            &wsz, &ex),
                          &ex, &wsz, aclnnMoeTokenUnpermuteWithEpGrad);
    CHECK(rc == 0, "%s: rc = %d (%s)", what, rc, aclGetRecentErrMsg());
    if (rc == 0) {
        int64_t *owner = malloc(sizeof *owner * (size_t)(Mo + 1));
        for (int64_t d = 0; d < Mo; d++) owner[d] = -1;
        for (int64_t i = 0; i < T; i++)
            if (idx[i] >= lo && idx[i] < hi) owner[idx[i] - lo] = i;
        int bad = 0;
        for (int64_t d = 0; d < Mo && !bad; d++)
            for (int64_t h = 0; h < H && !bad; h++) {
                unsigned char w[4];
                const int64_t i = owner[d];
                if (i < 0) enc(dt, w, 0.0);
                else enc(dt, w, (probs ? dec(pt, p + i * (int64_t)pes) : 1.0) * dec(dt, g + ((i / K) * H + h) * (int64_t)es));
                if (memcmp(w, out + (d * H + h) * (int64_t)es, es))
                    bad = 1, FAILED("%s: permutedTokensGradOut[%lld][%lld] = %g, want %g", what, (long long)d,
                                   (long long)h, dec(dt, out + (d * H + h) * (int64_t)es), dec(dt, w));
            }
        for (int64_t i = 0; probs && i < T && !bad; i++) {
            const int64_t d = idx[i];
            const int kept = d >= lo && d < hi;
            double exact = 0.0, abs_sum = 0.0;
            for (int64_t h = 0; kept && h < H; h++) {
                const double t = dec(dt, x + ((d - lo) * H + h) * (int64_t)es) * dec(dt, g + ((i / K) * H + h) * (int64_t)es);
                exact += t, abs_sum += fabs(t);
            }
            const double got = dec(pt, pg + i * (int64_t)pes), r = rnd(pt, exact);
            const double tol = fabs(r - rnd(pt, exact * (1 + 0x1p-10))) + 0x1p-40 * abs_sum + 1e-300;
            if (!(fabs(got - exact) <= fabs(r - exact) + tol))
                bad = 1, FAILED("%s: probsGradOut[%lld] = %.17g, want %.17g", what, (long long)i, got, exact);
            if (!kept) CHECK(got == 0.0 && !signbit(got), "%s: probsGradOut[%lld] of a dropped slot = %g", what, (long long)i, got);
        }
        if (!probs) CHECK(tu_all_poison(pg, pb), "%s: probsGradOut written without probs", what);
        CHECK(tu_guard_ok(out, ob) && tu_guard_ok(pg, pb), "%s: guard bytes", what);
        free(owner);
    }
    g_cases++;
    if (tx) aclDestroyTensor(tx);
    if (tp) aclDestroyTensor(tp);
    aclDestroyTensor(tg), aclDestroyTensor(ti), aclDestroyTensor(to), aclDestroyTensor(tpg);
    if (rg) aclDestroyIntArray(rg);
    free(x), free(g), free(p), free(idx), free(xs), free(gs), free(is), free(ps), free(out), free(pg);
}

/* ---- CANN's doc samples, by hand ---- */

static void samples(void) {
    /* aclnnMoeTokenPermuteWithEp.md: x (3, 4) rows 0.1 0.2 0.3 (FLOAT here), indices
     * {1,2,3,1,2,3} (3, 2), probs, range [1, 5). perm = 0 3 1 4 2 5, so
     * sortedIndices = 0 2 4 1 3 5; rows perm[1..4] = 3 1 4 2 -> tokens 1 0 2 1. */
    float x[12], pr[6] = {0.5f, 0.3f, 0.4f, 0.2f, 0.5f, 0.4f}, out[16], pout[4];
    for (int i = 0; i < 12; i++) x[i] = (float)(i / 4 + 1) / 10.0f;
    int32_t ind[6] = {1, 2, 3, 1, 2, 3}, si[6];
    aclTensor *tx = mk2(3, 4, ACL_FLOAT, x), *ti = mk2(3, 2, ACL_INT32, ind), *tp = mk2(3, 2, ACL_FLOAT, pr),
              *to = mk2(4, 4, ACL_FLOAT, out), *ts = mk1(6, ACL_INT32, si), *tpo = mk1(4, ACL_FLOAT, pout);
    aclIntArray *rg = range_of(2, 1, 5);
    uint64_t w = 0;
    aclOpExecutor *e = NULL;
    CHECK_RC(run2(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tx, ti, tp, rg, 6, false, to, ts, tpo, &w, &e), &e, &w,
                  aclnnMoeTokenPermuteWithEp), ACLNN_SUCCESS);
    const int32_t want_si[6] = {0, 2, 4, 1, 3, 5};
    const float want_rows[4] = {0.2f, 0.1f, 0.3f, 0.2f}, want_p[4] = {0.2f, 0.3f, 0.5f, 0.4f};
    CHECK(!memcmp(si, want_si, sizeof si), "sample permute: sortedIndicesOut");
    for (int r = 0; r < 4; r++)
        for (int h = 0; h < 4; h++) CHECK(out[r * 4 + h] == want_rows[r], "sample permute: row %d = %g", r, out[r * 4 + h]);
    for (int r = 0; r < 4; r++) CHECK(pout[r] == want_p[r], "sample permute: prob %d = %g", r, pout[r]);
    aclDestroyTensor(tx), aclDestroyTensor(ti), aclDestroyTensor(tp), aclDestroyTensor(to), aclDestroyTensor(ts);
    aclDestroyTensor(tpo), aclDestroyIntArray(rg);

    /* aclnnMoeTokenUnpermuteWithEp.md: permutedTokens (4, 2) = 2 2 1 1 3 3 2 2 (rows 1..4),
     * sortedIndices 2 0 4 1 5 3, probs all 1, numTopk 2, range [1, 5): out = 1 1 4 4 3 3. */
    float pt[8] = {2, 2, 1, 1, 3, 3, 2, 2}, ones[6] = {1, 1, 1, 1, 1, 1}, uo[6];
    int32_t sidx[6] = {2, 0, 4, 1, 5, 3};
    aclTensor *tpt = mk2(4, 2, ACL_FLOAT, pt), *tsi = mk1(6, ACL_INT32, sidx), *tpr = mk2(3, 2, ACL_FLOAT, ones),
              *tuo = mk2(3, 2, ACL_FLOAT, uo);
    rg = range_of(2, 1, 5);
    CHECK_RC(run2(aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize(tpt, tsi, tpr, 2, rg, false, NULL, tuo, &w, &e), &e, &w,
                  aclnnMoeTokenUnpermuteWithEp), ACLNN_SUCCESS);
    const float want_u[6] = {1, 1, 4, 4, 3, 3};
    CHECK(!memcmp(uo, want_u, sizeof uo), "sample unpermute: %g %g %g %g %g %g", uo[0], uo[1], uo[2], uo[3], uo[4], uo[5]);
    /* its backward on the same window: gradient rows of the kept slots, probs grad dots */
    float gy[6] = {1, 2, 3, 4, 5, 6}, gx[8], gp[6];
    aclTensor *tgy = mk2(3, 2, ACL_FLOAT, gy), *tgx = mk2(4, 2, ACL_FLOAT, gx), *tgp = mk2(3, 2, ACL_FLOAT, gp);
    CHECK_RC(run2(aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize(tgy, tsi, tpt, tpr, false, NULL, rg, 2, tgx, tgp, &w, &e),
                  &e, &w, aclnnMoeTokenUnpermuteWithEpGrad), ACLNN_SUCCESS);
    /* kept: entry 0 (d 2 -> row 1, token 0), 2 (d 4 -> row 3, token 1), 3 (d 1 -> row 0, token 1), 5 (d 3 -> row 2, token 2) */
    const float want_gx[8] = {3, 4, 1, 2, 5, 6, 3, 4}, want_gp[6] = {1 * 1 + 2 * 1, 0, 3 * 2 + 4 * 2, 3 * 2 + 4 * 2, 0,
                                                                        5 * 3 + 6 * 3};
    CHECK(!memcmp(gx, want_gx, sizeof gx), "sample unpermute grad: permutedTokensGradOut");
    CHECK(!memcmp(gp, want_gp, sizeof gp), "sample unpermute grad: probsGradOut %g %g %g %g %g %g", gp[0], gp[1], gp[2],
          gp[3], gp[4], gp[5]);
    aclDestroyTensor(tpt), aclDestroyTensor(tsi), aclDestroyTensor(tpr), aclDestroyTensor(tuo), aclDestroyIntArray(rg);
    aclDestroyTensor(tgy), aclDestroyTensor(tgx), aclDestroyTensor(tgp);
}

/* ---- phase-1 codes and phase-2 refusals (outputs untouched) ---- */

static void validation(void) {
    float x[24] = {0}, pr[12] = {0}, o[24], po[12], g[24] = {0};
    int32_t ind[12] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}, si[12];
    uint64_t w = 0;
    aclOpExecutor *e = NULL;
    aclTensor *tx = mk2(6, 4, ACL_FLOAT, x), *ti = mk2(6, 2, ACL_INT32, ind), *tp = mk2(6, 2, ACL_FLOAT, pr);
    aclTensor *to = mk2(4, 4, ACL_FLOAT, o), *ts = mk1(12, ACL_INT32, si), *tpo = mk1(4, ACL_FLOAT, po);
    aclTensor *th = mk2(6, 2, ACL_FLOAT16, pr), *to5 = mk2(5, 4, ACL_FLOAT, o);
    aclIntArray *r15 = range_of(2, 1, 5), *r3 = NULL, *rbad = range_of(2, 2, 13);
    const int64_t three[3] = {1, 2, 3};
    r3 = aclCreateIntArray(three, 3);
    /* permute */
    CHECK_RC(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(NULL, ti, tp, r15, 0, false, to, ts, tpo, &w, &e), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_RC(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tx, ti, tp, r15, 0, false, to, NULL, tpo, &w, &e), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_RC(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tx, ti, tp, r15, 0, false, to, ts, NULL, &w, &e), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_RC(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tx, ti, th, r15, 0, false, to, ts, tpo, &w, &e), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tx, tp, tp, r15, 0, false, to, ts, tpo, &w, &e), ACLNN_ERR_PARAM_INVALID);
    CHECK_RC(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tx, ti, tp, r3, 0, false, to, ts, tpo, &w, &e), ACLNN_ERR_INNER_TILING_ERROR);
    CHECK_RC(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tx, ti, tp, rbad, 0, false, to, ts, tpo, &w, &e), ACLNN_ERR_INNER_TILING_ERROR);
    CHECK_RC(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tx, ti, tp, r15, 0, true, to, ts, tpo, &w, &e), ACLNN_ERR_INNER_TILING_ERROR);
    CHECK_RC(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tx, ti, tp, r15, 0, false, to5, ts, tpo, &w, &e), ACLNN_ERR_INNER_TILING_ERROR);
    /* without a range numOutTokens counts and probs are not looked at: NULL permuteProbsOut is fine */
    CHECK_RC(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tx, ti, tp, NULL, 5, false, to5, ts, NULL, &w, &e), ACLNN_SUCCESS);
    aclDestroyAclOpExecutor(e);
    /* a stray id: 161002 in phase 2, nothing written */
    ind[5] = -3;
    memset(o, 0xA5, sizeof o), memset(si, 0xA5, sizeof si), memset(po, 0xA5, sizeof po);
    CHECK_RC(run2(aclnnMoeTokenPermuteWithEpGetWorkspaceSize(tx, ti, tp, r15, 0, false, to, ts, tpo, &w, &e), &e, &w,
                  aclnnMoeTokenPermuteWithEp), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_all_poison((unsigned char *)o, sizeof o) && tu_all_poison((unsigned char *)si, sizeof si) &&
              tu_all_poison((unsigned char *)po, 16), "permute: outputs written on a refused id");
    ind[5] = 1;
    /* permute grad: numTopk 0; a value in the range naming a row past the grad's */
    aclTensor *tg = mk2(4, 4, ACL_FLOAT, g), *tgo = mk2(6, 4, ACL_FLOAT, o), *tpg = mk1(4, ACL_FLOAT, pr),
              *tpgo = mk2(6, 2, ACL_FLOAT, po), *tg3 = mk2(2, 4, ACL_FLOAT, g), *tsi = mk1(12, ACL_INT32, ind);
    CHECK_RC(aclnnMoeTokenPermuteWithEpGradGetWorkspaceSize(tg, tsi, tpg, 0, r15, false, tgo, tpgo, &w, &e), ACLNN_ERR_INNER_TILING_ERROR);
    CHECK_RC(aclnnMoeTokenPermuteWithEpGradGetWorkspaceSize(tg, tsi, tpg, 2, r15, false, tgo, NULL, &w, &e), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_RC(aclnnMoeTokenPermuteWithEpGradGetWorkspaceSize(tg, tsi, tpg, 2, r3, false, tgo, tpgo, &w, &e), ACLNN_ERR_INNER_TILING_ERROR);
    memset(o, 0xA5, sizeof o), memset(po, 0xA5, sizeof po);
    CHECK_RC(run2(aclnnMoeTokenPermuteWithEpGradGetWorkspaceSize(tg3, tsi, tpg, 2, r15, false, tgo, tpgo, &w, &e), &e, &w,
                  aclnnMoeTokenPermuteWithEpGrad), ACLNN_ERR_PARAM_INVALID); /* value 3 names row 2 of 2 */
    CHECK(tu_all_poison((unsigned char *)o, sizeof o) && tu_all_poison((unsigned char *)po, 48),
          "permute grad: outputs written on a refused value");
    /* unpermute: numTopk 0, probs dim1 != numTopk, a kept value past permutedTokens' rows */
    aclTensor *tuo = mk2(6, 4, ACL_FLOAT, o), *tx3 = mk2(2, 4, ACL_FLOAT, x);
    CHECK_RC(aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize(tg, tsi, tp, 0, r15, false, NULL, tuo, &w, &e), ACLNN_ERR_INNER_TILING_ERROR);
    CHECK_RC(aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize(tg, tsi, tp, 3, r15, false, NULL, tuo, &w, &e), ACLNN_ERR_INNER_TILING_ERROR);
    CHECK_RC(aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize(tg, tsi, tp, 2, r15, true, NULL, tuo, &w, &e), ACLNN_ERR_INNER_TILING_ERROR);
    CHECK_RC(aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize(tg, tsi, th, 2, r15, false, NULL, NULL, &w, &e), ACLNN_ERR_PARAM_NULLPTR);
    for (int i = 0; i < 12; i++) pr[i] = 1.0f;
    memset(o, 0xA5, sizeof o);
    CHECK_RC(run2(aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize(tx3, tsi, tp, 2, r15, false, NULL, tuo, &w, &e), &e, &w,
                  aclnnMoeTokenUnpermuteWithEp), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_all_poison((unsigned char *)o, sizeof o), "unpermute: out written on a refused value");
    /* unpermute grad: end below start after normalisation; a kept value past permutedTokensGradOut's rows */
    aclIntArray *r52 = range_of(2, 5, 2), *rneg = range_of(2, -8, -4);
    aclTensor *tgy = mk2(6, 4, ACL_FLOAT, g), *tgx = mk2(4, 4, ACL_FLOAT, o), *tgx3 = mk2(2, 4, ACL_FLOAT, o),
              *tgp = mk2(6, 2, ACL_FLOAT, po);
    CHECK_RC(aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize(tgy, tsi, tx3, tp, false, NULL, r52, 2, tgx3, tgp, &w, &e),
             ACLNN_ERR_INNER_TILING_ERROR);
    CHECK_RC(aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize(tgy, tsi, NULL, tp, false, NULL, r15, 2, tgx, tgp, &w, &e),
             ACLNN_ERR_INNER_TILING_ERROR); /* probs without permutedTokens */
    CHECK_RC(aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize(tgy, tsi, tg, tp, false, NULL, r15, 2, tgx, NULL, &w, &e),
             ACLNN_ERR_PARAM_NULLPTR);
    memset(o, 0xA5, sizeof o), memset(po, 0xA5, sizeof po);
    CHECK_RC(run2(aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize(tgy, tsi, tx3, tp, false, NULL, r15, 2, tgx3, tgp, &w, &e),
                  &e, &w, aclnnMoeTokenUnpermuteWithEpGrad), ACLNN_ERR_PARAM_INVALID);
    CHECK(tu_all_poison((unsigned char *)o, 32) && tu_all_poison((unsigned char *)po, sizeof po),
          "unpermute grad: outputs written on a refused value");
    /* [-8, -4) with T = 12 is [4, 8): four rows */
    CHECK_RC(run2(aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize(tgy, tsi, tg, tp, false, NULL, rneg, 2, tgx, tgp, &w, &e),
                  &e, &w, aclnnMoeTokenUnpermuteWithEpGrad), ACLNN_SUCCESS);
    aclTensor *all[] = {tx, ti, tp, to, ts, tpo, th, to5, tg, tgo, tpg, tpgo, tg3, tsi, tuo, tx3, tgy, tgx, tgx3, tgp};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) aclDestroyTensor(all[i]);
    aclDestroyIntArray(r15), aclDestroyIntArray(r3), aclDestroyIntArray(rbad), aclDestroyIntArray(r52),
        aclDestroyIntArray(rneg);
}

int main(void) {
    tu_seed("test_token_permute_ep");
    ref_build_tabs();
    const aclDataType FT[3] = {ACL_FLOAT16, ACL_BF16, ACL_FLOAT};
    samples();
    for (int c = 0; c < 200; c++) {
        const aclDataType dt = FT[tu_int(0, 2)], it = tu_int(0, 1) ? ACL_INT32 : ACL_INT64;
        const int64_t N = tu_int(1, 40), K = tu_int(1, 9), H = tu_int(1, 37), T = N * K;
        const int rkind = tu_int(0, 4) == 0 ? (int)tu_int(0, 1) : 2;
        int64_t s, e;
        pick_range(T, &s, &e);
        permute_case(dt, it, N, K, H, tu_int(1, 6), K == 1 && tu_int(0, 1), rkind, s, e, tu_int(-T - 2, T + 2),
                     tu_int(0, 3) != 0);
    }
    permute_case(ACL_FLOAT, ACL_INT32, 3000, 8, 3, 64, 0, 2, 5000, 19000, 0, 1); /* past the sort's serial threshold */
    for (int c = 0; c < 150; c++) {
        const int64_t N = tu_int(1, 30), K = tu_int(1, 7), H = tu_int(1, 40), T = N * K;
        const int rkind = tu_int(0, 4) == 0 ? (int)tu_int(0, 1) : 2;
        int64_t s, e;
        pick_range(T, &s, &e);
        permute_grad_case(FT[tu_int(0, 2)], N, K, H, rkind, s, e, tu_int(0, 3) != 0);
    }
    permute_grad_case(ACL_BF16, 2, 3, 1500, 2, 1, 5, 1); /* H past the accumulation tile */
    for (int c = 0; c < 150; c++) {
        const int64_t N = tu_int(1, 30), K = tu_int(1, 7), H = tu_int(1, 40), T = N * K;
        const int rkind = tu_int(0, 4) == 0 ? (int)tu_int(0, 1) : 2;
        int64_t s, e;
        pick_range(T, &s, &e);
        if (tu_int(0, 9) == 0) s = -tu_int(1, 3); /* the forward takes the range as given */
        unpermute_case(FT[tu_int(0, 2)], FT[tu_int(0, 2)], N, K, H, rkind, s, e, tu_int(0, 3) != 0);
    }
    unpermute_case(ACL_FLOAT, ACL_BF16, 3, 40, 70, 2, 10, 100, 1); /* K past the fp32 groups */
    for (int c = 0; c < 150; c++) {
        const int64_t N = tu_int(1, 30), K = tu_int(1, 7), H = tu_int(1, 40), T = N * K;
        const int rkind = tu_int(0, 4) == 0 ? (int)tu_int(0, 1) : 2;
        int64_t s, e;
        pick_range(T, &s, &e);
        if (e < s) { /* the backward refuses end < start */
            const int64_t t = s;
            s = e, e = t;
        }
        if (tu_int(0, 7) == 0 && s < T && e < T) s -= T, e -= T; /* negative bounds count from T */
        unpermute_grad_case(FT[tu_int(0, 2)], FT[tu_int(0, 2)], N, K, H, rkind, s, e, tu_int(0, 3) != 0, tu_int(0, 1));
    }
    validation();
    printf("test_token_permute_ep: %d cases, %d checks, %d failures\n", g_cases, g_checks, g_fail);
    return g_fail != 0;
}
