/* test_token_permute.c - aclnnMoeTokenPermute(Grad) and
 * aclnnMoeTokenUnpermute(Grad) against oracles written from CANN's documented
 * semantics (docs/aclnnMoeTokenPermute*.md, aclnnMoeTokenUnpermute*.md):
 * a comparison sort for the stable order, plain loops in fp32 / fp64 for the
 * sums, values decoded and rounded by tests/ref_fp.h (independent of src/).
 * Random cases over every dtype, odd sizes, few experts (ties), numOutTokens
 * cuts, drops (indices >= M), repeats, empty problems, strided inputs,
 * poisoned outputs with guard bytes; the adjoint pairs checked numerically;
 * then the phase-1 codes and the phase-2 refusals. MOEFR_SOC=ascend910b runs
 * the A2/A3 rules (the test reads the same variable). */
#include <math.h>

#include "aclnnop/aclnn_moe_token_permute.h"
#include "aclnnop/aclnn_moe_token_permute_grad.h"
#include "aclnnop/aclnn_moe_token_unpermute.h"
#include "aclnnop/aclnn_moe_token_unpermute_grad.h"
#include "fwd_ref.h"
#include "ref_fp.h"
#define TU_COUNT_FAILURES /* CHECK counts and goes on */
#include "testutil.h"

static int A2;

#define FAILED(...) (printf("FAIL %s:%d: ", __FILE__, __LINE__), printf(__VA_ARGS__), printf("\n"), g_checks++, g_fail++)

static size_t esz(aclDataType dt) {
    return dt == ACL_FLOAT || dt == ACL_INT32 ? 4 : dt == ACL_INT64 ? 8 : dt == ACL_INT8 ? 1 : 2;
}
static double dec(aclDataType dt, const unsigned char *p) {
    float f;
    uint16_t h;
    switch (dt) {
    case ACL_FLOAT: memcpy(&f, p, 4); return f;
    case ACL_INT8: return (double)*(const int8_t *)p;
    default: memcpy(&h, p, 2); return ref_val16(dt == ACL_BF16, h);
    }
}
/* v rounded once to dt */
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
/* a random value of dt: small numbers, zeros of both signs */
static void rand_val(aclDataType dt, unsigned char *p) {
    if (dt == ACL_INT8) {
        *(int8_t *)p = (int8_t)tu_int(-128, 127);
        return;
    }
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

/* An nd strided view of contiguous src: each dim's stride padded a little,
 * sometimes every other element, an offset. */
static aclTensor *strided(const void *src, int nd, const int64_t *dims, aclDataType dt, unsigned char **store) {
    int64_t st[8], off = tu_int(0, 3);
    st[nd - 1] = tu_int(1, 2);
    for (int d = nd - 2; d >= 0; d--) st[d] = st[d + 1] * (dims[d + 1] > 0 ? dims[d + 1] : 1) + tu_int(0, 2);
    tu_owned v = tu_strided(src, nd, dims, st, off, tu_span(nd, dims, st, off), dt, esz(dt), 0x5A, 1);
    *store = v.store;
    return v.t;
}

static int64_t clamp_out(int64_t numOut, int64_t T) {
    int64_t A = numOut <= 0 ? numOut + T : numOut;
    return A < 0 ? 0 : A > T ? T : A;
}

static void *run_ws(uint64_t wsz) {
    void *ws = wsz ? malloc(wsz) : NULL;
    if (ws) memset(ws, TU_POISON, wsz);
    return ws;
}

/* ---- permute ---- */

static void permute_case(aclDataType dt, aclDataType it, int64_t N, int64_t K, int64_t H, int64_t E, int one_d,
                         int64_t numOut, int rank3) {
    const size_t es = esz(dt), ies = esz(it);
    const int64_t T = N * K, A = clamp_out(numOut, T);
    unsigned char *tok = malloc((size_t)(N * H) * es + 1);
    for (int64_t i = 0; i < N * H; i++) rand_val(dt, tok + i * (int64_t)es);
    int64_t *key = malloc(sizeof *key * (size_t)(T + 1)), *perm = malloc(sizeof *perm * (size_t)(T + 1));
    unsigned char *ind = malloc((size_t)T * ies + 1);
    for (int64_t j = 0; j < T; j++) {
        int64_t e = tu_int(0, E - 1);
        if (A2 && tu_int(0, 9) == 0) e = tu_int(0, 1) ? (it == ACL_INT32 ? INT32_MIN : INT64_MIN) : (it == ACL_INT32 ? INT32_MAX : INT64_MAX);
        key[j] = e;
        if (it == ACL_INT32) {
            int32_t v = (int32_t)e;
            memcpy(ind + j * 4, &v, 4);
        } else {
            memcpy(ind + j * 8, &e, 8);
        }
    }
    tu_ref_sort(key, T, perm);
    unsigned char *ts = NULL, *is = NULL;
    int64_t tdims[3] = {N, H, 1};
    int tnd = 2;
    if (rank3 && H % 2 == 0) tdims[1] = 2, tdims[2] = H / 2, tnd = 3;
    aclTensor *tt = tu_int(0, 1) ? strided(tok, tnd, tdims, dt, &ts) : mk(tnd, tdims, dt, tok);
    int64_t idims[2] = {N, K};
    aclTensor *ti = tu_int(0, 1) ? strided(ind, one_d ? 1 : 2, idims, it, &is) : mk(one_d ? 1 : 2, idims, it, ind);
    const size_t ob = (size_t)(A * H) * es, rb = (size_t)T * 4;
    unsigned char *out = tu_poisoned(ob), *row = tu_poisoned(rb);
    aclTensor *to = mk2(A, H, dt, out), *tr = mk1(T, ACL_INT32, row);
    uint64_t wsz = 0;
    aclOpExecutor *e = NULL;
    char what[200];
    snprintf(what, sizeof what, "permute dt=%d it=%d N=%lld K=%lld H=%lld E=%lld numOut=%lld rank=%d", (int)dt, (int)it,
             (long long)N, (long long)K, (long long)H, (long long)E, (long long)numOut, tnd);
    aclnnStatus rc = aclnnMoeTokenPermuteGetWorkspaceSize(tt, ti, numOut, false, to, tr, &wsz, &e);
    CHECK(rc == 0, "%s: phase 1 = %d (%s)", what, rc, aclGetRecentErrMsg());
    if (rc == 0) {
        void *ws = run_ws(wsz);
        rc = aclnnMoeTokenPermute(ws, wsz, e, NULL);
        free(ws);
        CHECK(rc == 0, "%s: phase 2 = %d (%s)", what, rc, aclGetRecentErrMsg());
        if (A * H == 0 && T == 0) CHECK(wsz == 0, "%s: empty problem asks workspace %llu", what, (unsigned long long)wsz);
        int bad = 0;
        for (int64_t i = 0; i < T && !bad; i++) {
            int32_t v;
            memcpy(&v, row + perm[i] * 4, 4);
            if (v != (int32_t)i) bad = 1, FAILED("%s: sortedIndicesOut[%lld] = %d, want %lld", what, (long long)perm[i], v, (long long)i);
        }
        for (int64_t i = 0; i < A && !bad; i++)
            if (memcmp(out + i * H * (int64_t)es, tok + (perm[i] / K) * H * (int64_t)es, (size_t)H * es))
                bad = 1, FAILED("%s: permuteTokensOut row %lld is not tokens row %lld", what, (long long)i, (long long)(perm[i] / K));
        CHECK(tu_guard_ok(out, ob) && tu_guard_ok(row, rb), "%s: guard bytes overwritten", what);
    }
    g_cases++;
    aclDestroyTensor(tt), aclDestroyTensor(ti), aclDestroyTensor(to), aclDestroyTensor(tr);
    free(tok), free(key), free(perm), free(ind), free(ts), free(is), free(out), free(row);
}

/* ---- permute grad: out[r] = fp32 sum in k order of g[idx[r*K+k]], idx < M ---- */

static void permute_grad_case(aclDataType dt, int64_t N, int64_t K, int64_t H, int64_t M, int repeats) {
    const size_t es = esz(dt);
    const int64_t T = N * K;
    unsigned char *g = malloc((size_t)(M * H) * es + 1);
    for (int64_t i = 0; i < M * H; i++) rand_val(dt, g + i * (int64_t)es);
    int32_t *idx = malloc(4 * (size_t)(T + 1));
    for (int64_t i = 0; i < T; i++) idx[i] = (int32_t)i;
    for (int64_t i = T - 1; i > 0; i--) {
        int64_t j = tu_int(0, i);
        int32_t s = idx[i];
        idx[i] = idx[j], idx[j] = s;
    }
    for (int64_t i = 0; repeats && i < T; i++) idx[i] = (int32_t)tu_int(0, T + 2);
    unsigned char *gs = NULL, *is = NULL;
    int64_t gd[2] = {M, H}, id[1] = {T};
    aclTensor *tg = tu_int(0, 1) ? strided(g, 2, gd, dt, &gs) : mk(2, gd, dt, g);
    aclTensor *ti = tu_int(0, 1) ? strided(idx, 1, id, ACL_INT32, &is) : mk(1, id, ACL_INT32, idx);
    const size_t ob = (size_t)(N * H) * es;
    unsigned char *out = tu_poisoned(ob);
    aclTensor *to = mk2(N, H, dt, out);
    uint64_t wsz = 0;
    aclOpExecutor *e = NULL;
    char what[160];
    snprintf(what, sizeof what, "permute_grad dt=%d N=%lld K=%lld H=%lld M=%lld rep=%d", (int)dt, (long long)N,
             (long long)K, (long long)H, (long long)M, repeats);
    aclnnStatus rc = aclnnMoeTokenPermuteGradGetWorkspaceSize(tg, ti, K, false, to, &wsz, &e);
    CHECK(rc == 0, "%s: phase 1 = %d (%s)", what, rc, aclGetRecentErrMsg());
    if (rc == 0) {
        void *ws = run_ws(wsz);
        rc = aclnnMoeTokenPermuteGrad(ws, wsz, e, NULL);
        free(ws);
        CHECK(rc == 0, "%s: phase 2 = %d (%s)", what, rc, aclGetRecentErrMsg());
        int bad = 0;
        for (int64_t r = 0; r < N && !bad; r++)
            for (int64_t h = 0; h < H && !bad; h++) {
                float acc = 0.0f;
                int have = 0;
                for (int64_t k = 0; k < K; k++) {
                    const int32_t d = idx[r * K + k];
                    if (d >= M) continue;
                    const float v = (float)dec(dt, g + (d * H + h) * (int64_t)es);
                    acc = have ? acc + v : v;
                    have = 1;
                }
                unsigned char want[4];
                enc(dt, want, have ? (double)acc : 0.0);
                if (memcmp(want, out + (r * H + h) * (int64_t)es, es))
                    bad = 1, FAILED("%s: out[%lld][%lld] = %g, want %g", what, (long long)r, (long long)h,
                                   dec(dt, out + (r * H + h) * (int64_t)es), dec(dt, want));
            }
        CHECK(tu_guard_ok(out, ob), "%s: guard bytes overwritten", what);
    }
    g_cases++;
    aclDestroyTensor(tg), aclDestroyTensor(ti), aclDestroyTensor(to);
    free(g), free(idx), free(gs), free(is), free(out);
}

/* ---- unpermute: out[r] = sum_k p[r][k] * x[idx[r*K+k]] over idx < M, in the forward's canonical
 * order (fwd_ref.h: fp32 groups of 32 elements, fp64 fallback; fp64 for K > 32) ---- */

static void unpermute_case(aclDataType dt, aclDataType pt, int64_t N, int64_t K, int64_t H, int64_t M, int probs,
                           int specials) {
    const size_t es = esz(dt), pes = esz(pt);
    if (!probs) K = 1;
    const int64_t T = N * K;
    unsigned char *x = malloc((size_t)(M * H) * es + 1), *p = malloc((size_t)T * pes + 1);
    for (int64_t i = 0; i < M * H; i++) rand_val(dt, x + i * (int64_t)es);
    for (int64_t i = 0; i < T; i++) rand_val(pt, p + i * (int64_t)pes);
    int32_t *idx = malloc(4 * (size_t)(T + 1));
    for (int64_t i = 0; i < T; i++) idx[i] = (int32_t)tu_int(0, M + 2);
    if (specials && M > 0 && probs) /* a row of inf, named only with prob 0: A2 skips it, 950 makes NaN */
        for (int64_t h = 0; h < H; h++) enc(dt, x + ((M - 1) * H + h) * (int64_t)es, INFINITY);
    for (int64_t i = 0; specials && probs && i < T; i++)
        if (idx[i] == M - 1) enc(pt, p + i * (int64_t)pes, 0.0);
    unsigned char *xs = NULL, *is = NULL, *ps = NULL;
    int64_t xd[2] = {M, H}, id[1] = {T}, pd[2] = {N, K};
    aclTensor *tx = tu_int(0, 1) ? strided(x, 2, xd, dt, &xs) : mk(2, xd, dt, x);
    aclTensor *ti = tu_int(0, 1) ? strided(idx, 1, id, ACL_INT32, &is) : mk(1, id, ACL_INT32, idx);
    aclTensor *tp = !probs ? NULL : tu_int(0, 1) ? strided(p, 2, pd, pt, &ps) : mk(2, pd, pt, p);
    const size_t ob = (size_t)(N * H) * es;
    unsigned char *out = tu_poisoned(ob);
    aclTensor *to = mk2(N, H, dt, out);
    uint64_t wsz = 0;
    aclOpExecutor *e = NULL;
    char what[160];
    snprintf(what, sizeof what, "unpermute dt=%d pt=%d N=%lld K=%lld H=%lld M=%lld probs=%d sp=%d", (int)dt, (int)pt,
             (long long)N, (long long)K, (long long)H, (long long)M, probs, specials);
    aclnnStatus rc = aclnnMoeTokenUnpermuteGetWorkspaceSize(tx, ti, tp, false, NULL, to, &wsz, &e);
    CHECK(rc == 0, "%s: phase 1 = %d (%s)", what, rc, aclGetRecentErrMsg());
    if (rc == 0) {
        void *ws = run_ws(wsz);
        rc = aclnnMoeTokenUnpermute(ws, wsz, e, NULL);
        free(ws);
        CHECK(rc == 0, "%s: phase 2 = %d (%s)", what, rc, aclGetRecentErrMsg());
        /* the oracle: the forward's canonical order (fwd_ref.h) over the token's kept slots */
        int bad = 0;
        const void **xr = malloc(sizeof *xr * (size_t)(K + 1)), **br = malloc(sizeof *br * (size_t)(K + 1));
        double *sr = malloc(sizeof *sr * (size_t)(K + 1));
        unsigned char *want = malloc((size_t)H * es + 1);
        for (int64_t r = 0; r < N && !bad; r++) {
            int have = 0;
            for (int64_t k = 0; k < K; k++) {
                const int32_t d = idx[r * K + k];
                sr[k] = probs ? dec(pt, p + (r * K + k) * (int64_t)pes) : 1.0;
                br[k] = NULL;
                xr[k] = d >= M || (A2 && sr[k] == 0.0) ? NULL : x + (size_t)(d * H) * es;
                have |= xr[k] != NULL;
            }
            const fr_row row = {(int)dt, NULL, NULL, (int)K, xr, br, sr};
            fr_row_forward(&row, 0, H, want, K <= FR_KMAX32);
            for (int64_t h = 0; h < H && !bad; h++) {
                const double got = dec(dt, out + (r * H + h) * (int64_t)es), w = dec(dt, want + h * (int64_t)es);
                /* a zero sum may carry either sign: under valgrind the AVX2 path's -0.0 comes out +0.0
                 * (natively every path gives the oracle's sign) */
                const int ok = isnan(w) ? isnan(got)
                                        : !memcmp(want + h * (int64_t)es, out + (r * H + h) * (int64_t)es, es) ||
                                              (got == 0.0 && w == 0.0);
                if (!ok)
                    bad = 1, FAILED("%s: out[%lld][%lld] = %a, want %a (%s)", what, (long long)r, (long long)h, got, w,
                                   have ? "terms" : "no term");
            }
        }
        free(xr), free(br), free(sr), free(want);
        CHECK(tu_guard_ok(out, ob), "%s: guard bytes overwritten", what);
    }
    g_cases++;
    aclDestroyTensor(tx), aclDestroyTensor(ti), aclDestroyTensor(to);
    if (tp) aclDestroyTensor(tp);
    free(x), free(p), free(idx), free(xs), free(is), free(ps), free(out);
}

/* ---- unpermute grad ----
 * permGrad[d] = round(g[r] * p[r][k]) (g[r] without probs) for the last entry
 * naming d < M, +0.0 for rows nobody names; probGrad[r][k] = sum_h x[d]*g[r]
 * (0 for d >= M) within one rounding plus a 2^-40 relative slack of the
 * absolute sum (moefr's lane order is not the oracle's). */
static void unpermute_grad_case(aclDataType dt, aclDataType pt, int64_t N, int64_t K, int64_t H, int64_t M, int probs,
                                int repeats) {
    const size_t es = esz(dt), pes = esz(pt);
    if (!probs) K = 1;
    const int64_t T = N * K;
    unsigned char *x = malloc((size_t)(M * H) * es + 1), *g = malloc((size_t)(N * H) * es + 1),
                  *p = malloc((size_t)T * pes + 1);
    for (int64_t i = 0; i < M * H; i++) rand_val(dt, x + i * (int64_t)es);
    for (int64_t i = 0; i < N * H; i++) rand_val(dt, g + i * (int64_t)es);
    for (int64_t i = 0; i < T; i++) rand_val(pt, p + i * (int64_t)pes);
    int32_t *idx = malloc(4 * (size_t)(T + 1));
    for (int64_t i = 0; i < T; i++) idx[i] = (int32_t)i;
    for (int64_t i = T - 1; i > 0; i--) {
        int64_t j = tu_int(0, i);
        int32_t s = idx[i];
        idx[i] = idx[j], idx[j] = s;
    }
    for (int64_t i = 0; repeats && i < T; i++)
        if (tu_int(0, 3) == 0) idx[i] = (int32_t)tu_int(0, M + 1);
    unsigned char *xs = NULL, *gs = NULL, *is = NULL, *ps = NULL;
    int64_t xd[2] = {M, H}, gd[2] = {N, H}, id[1] = {T}, pd[2] = {N, K};
    aclTensor *tx = tu_int(0, 1) ? strided(x, 2, xd, dt, &xs) : mk(2, xd, dt, x);
    aclTensor *tg = tu_int(0, 1) ? strided(g, 2, gd, dt, &gs) : mk(2, gd, dt, g);
    aclTensor *ti = tu_int(0, 1) ? strided(idx, 1, id, ACL_INT32, &is) : mk(1, id, ACL_INT32, idx);
    aclTensor *tp = !probs ? NULL : tu_int(0, 1) ? strided(p, 2, pd, pt, &ps) : mk(2, pd, pt, p);
    const size_t ob = (size_t)(M * H) * es, pb = (size_t)T * pes;
    unsigned char *out = tu_poisoned(ob), *pg = tu_poisoned(pb);
    aclTensor *to = mk2(M, H, dt, out), *tpg = mk2(N, K, pt, pg);
    uint64_t wsz = 0;
    aclOpExecutor *e = NULL;
    char what[160];
    snprintf(what, sizeof what, "unpermute_grad dt=%d pt=%d N=%lld K=%lld H=%lld M=%lld probs=%d rep=%d", (int)dt,
             (int)pt, (long long)N, (long long)K, (long long)H, (long long)M, probs, repeats);
    aclnnStatus rc = aclnnMoeTokenUnpermuteGradGetWorkspaceSize(tx, tg, ti, tp, false, NULL, to, tpg, &wsz, &e);
    CHECK(rc == 0, "%s: phase 1 = %d (%s)", what, rc, aclGetRecentErrMsg());
    if (rc == 0) {
        void *ws = run_ws(wsz);
        rc = aclnnMoeTokenUnpermuteGrad(ws, wsz, e, NULL);
        free(ws);
        CHECK(rc == 0, "%s: phase 2 = %d (%s)", what, rc, aclGetRecentErrMsg());
        int64_t *owner = malloc(sizeof *owner * (size_t)(M + 1));
        for (int64_t d = 0; d < M; d++) owner[d] = -1;
        for (int64_t i = 0; i < T; i++)
            if (idx[i] < M) owner[idx[i]] = i;
        int bad = 0;
        for (int64_t d = 0; d < M && !bad; d++)
            for (int64_t h = 0; h < H && !bad; h++) {
                unsigned char want[4];
                const int64_t i = owner[d];
                if (i < 0) enc(dt, want, 0.0);
                else {
                    const double s = probs ? dec(pt, p + i * (int64_t)pes) : 1.0;
                    enc(dt, want, s * dec(dt, g + ((i / K) * H + h) * (int64_t)es));
                }
                if (memcmp(want, out + (d * H + h) * (int64_t)es, es))
                    bad = 1, FAILED("%s: permutedTokensGradOut[%lld][%lld] = %g, want %g", what, (long long)d,
                                   (long long)h, dec(dt, out + (d * H + h) * (int64_t)es), dec(dt, want));
            }
        for (int64_t i = 0; probs && i < T && !bad; i++) {
            const int32_t d = idx[i];
            double exact = 0.0, abs_sum = 0.0;
            for (int64_t h = 0; d < M && h < H; h++) {
                const double t = dec(dt, x + (d * H + h) * (int64_t)es) * dec(dt, g + ((i / K) * H + h) * (int64_t)es);
                exact += t, abs_sum += fabs(t);
            }
            const double got = dec(pt, pg + i * (int64_t)pes), r = rnd(pt, exact);
            const double tol = fabs(r - rnd(pt, exact * (1 + 0x1p-10))) + 0x1p-40 * abs_sum + 1e-300;
            if (!(fabs(got - exact) <= fabs(r - exact) + tol))
                bad = 1, FAILED("%s: probsGradOut[%lld] = %.17g, want %.17g", what, (long long)i, got, exact);
            if (d >= M) CHECK(got == 0.0 && !signbit(got), "%s: probsGradOut[%lld] of a dropped slot = %g", what, (long long)i, got);
        }
        if (!probs) CHECK(tu_all_poison(pg, pb), "%s: probsGradOut written without probs", what);
        CHECK(tu_guard_ok(out, ob) && tu_guard_ok(pg, pb), "%s: guard bytes overwritten", what);
        free(owner);
    }
    g_cases++;
    aclDestroyTensor(tx), aclDestroyTensor(tg), aclDestroyTensor(ti), aclDestroyTensor(to), aclDestroyTensor(tpg);
    if (tp) aclDestroyTensor(tp);
    free(x), free(g), free(p), free(idx), free(xs), free(gs), free(is), free(ps), free(out), free(pg);
}

/* ---- adjoints, fp32 with small integers (every sum exact) ----
 * <permute(x), G> = <x, permuteGrad(G)>; <unpermute(Y, p), W> = <Y,
 * unpermuteGrad(W, p)> = sum p * probGrad. */
static double dot(const float *a, const float *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}
/* e and wsz by address: the phase-1 call in rc's argument sets them first */
static aclnnStatus run2(aclnnStatus rc, aclOpExecutor **e, const uint64_t *wsz,
                        aclnnStatus (*fn)(void *, uint64_t, aclOpExecutor *, aclrtStream)) {
    if (rc != 0) return rc;
    void *ws = run_ws(*wsz);
    rc = fn(ws, *wsz, *e, NULL);
    free(ws);
    return rc;
}
static void adjoints(void) {
    const int64_t N = tu_int(1, 30), K = tu_int(1, 6), H = tu_int(1, 19), T = N * K, A = tu_int(1, T);
    float *x = malloc(4 * (size_t)(N * H)), *G = malloc(4 * (size_t)(T * H)), *px = calloc((size_t)(T * H), 4),
          *gx = calloc((size_t)(N * H), 4), *p = malloc(4 * (size_t)T), *W = malloc(4 * (size_t)(N * H)),
          *uo = calloc((size_t)(N * H), 4), *ug = calloc((size_t)(A * H), 4), *pg = calloc((size_t)T, 4);
    int32_t *ind = malloc(4 * (size_t)T), *si = malloc(4 * (size_t)T);
    for (int64_t i = 0; i < N * H; i++) x[i] = (float)tu_int(-8, 8), W[i] = (float)tu_int(-8, 8);
    for (int64_t i = 0; i < T * H; i++) G[i] = (float)tu_int(-8, 8);
    for (int64_t i = 0; i < T; i++) ind[i] = (int32_t)tu_int(0, 5), p[i] = (float)tu_int(-3, 3);
    aclTensor *tx = mk2(N, H, ACL_FLOAT, x), *ti = mk2(N, K, ACL_INT32, ind), *tpx = mk2(A, H, ACL_FLOAT, px),
              *tsi = mk1(T, ACL_INT32, si), *tG = mk2(A, H, ACL_FLOAT, G), *tgx = mk2(N, H, ACL_FLOAT, gx);
    uint64_t w = 0;
    aclOpExecutor *e = NULL;
    CHECK(run2(aclnnMoeTokenPermuteGetWorkspaceSize(tx, ti, A, false, tpx, tsi, &w, &e), &e, &w, aclnnMoeTokenPermute) == 0,
          "adjoint: permute (%s)", aclGetRecentErrMsg());
    CHECK(run2(aclnnMoeTokenPermuteGradGetWorkspaceSize(tG, tsi, K, false, tgx, &w, &e), &e, &w, aclnnMoeTokenPermuteGrad) == 0,
          "adjoint: permute grad (%s)", aclGetRecentErrMsg());
    CHECK(dot(px, G, A * H) == dot(x, gx, N * H), "adjoint: <permute(x), G> = %g, <x, permuteGrad(G)> = %g",
          dot(px, G, A * H), dot(x, gx, N * H));
    /* unpermute the permuted tokens back (Y = G's first A rows) */
    aclTensor *tp = mk2(N, K, ACL_FLOAT, p), *tuo = mk2(N, H, ACL_FLOAT, uo), *tW = mk2(N, H, ACL_FLOAT, W),
              *tug = mk2(A, H, ACL_FLOAT, ug), *tpg = mk2(N, K, ACL_FLOAT, pg);
    CHECK(run2(aclnnMoeTokenUnpermuteGetWorkspaceSize(tG, tsi, tp, false, NULL, tuo, &w, &e), &e, &w, aclnnMoeTokenUnpermute) == 0,
          "adjoint: unpermute (%s)", aclGetRecentErrMsg());
    CHECK(run2(aclnnMoeTokenUnpermuteGradGetWorkspaceSize(tG, tW, tsi, tp, false, NULL, tug, tpg, &w, &e), &e, &w,
               aclnnMoeTokenUnpermuteGrad) == 0, "adjoint: unpermute grad (%s)", aclGetRecentErrMsg());
    const double lhs = dot(uo, W, N * H), rhs = dot(G, ug, A * H), rp = dot(p, pg, T);
    CHECK(lhs == rhs && lhs == rp, "adjoint: <unpermute(Y,p), W> = %g, <Y, dY> = %g, <p, dp> = %g", lhs, rhs, rp);
    aclTensor *all[] = {tx, ti, tpx, tsi, tG, tgx, tp, tuo, tW, tug, tpg};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) aclDestroyTensor(all[i]);
    free(x), free(G), free(px), free(gx), free(p), free(W), free(uo), free(ug), free(pg), free(ind), free(si);
    g_cases++;
}

/* ---- phase-1 codes and phase-2 refusals ---- */
static aclnnStatus permute_p1(aclTensor *tok, aclTensor *ind, int64_t numOut, bool padded, aclTensor *o, aclTensor *r) {
    uint64_t w;
    aclOpExecutor *e;
    aclnnStatus rc = aclnnMoeTokenPermuteGetWorkspaceSize(tok, ind, numOut, padded, o, r, &w, &e);
    if (rc == 0) aclDestroyAclOpExecutor(e);
    return rc;
}
/* phase 1 only: drops the executor of a call that succeeded */
static aclnnStatus p1_done(aclnnStatus rc, aclOpExecutor *e) {
    if (rc == 0) aclDestroyAclOpExecutor(e);
    return rc;
}
static void validation(void) {
    static float tok[64], o[64], big[4096];
    static int32_t ind[16], r[16];
    static int8_t tok8[64];
    aclTensor *tt = mk2(4, 3, ACL_FLOAT, tok), *ti = mk2(4, 2, ACL_INT32, ind), *to = mk2(8, 3, ACL_FLOAT, o),
              *tr = mk1(8, ACL_INT32, r);
    for (int i = 0; i < 8; i++) ind[i] = i % 3;
    /* NULL */
    CHECK(permute_p1(NULL, ti, 0, false, to, tr) == 161001, "permute NULL tokens");
    CHECK(permute_p1(tt, ti, 0, false, to, NULL) == 161001, "permute NULL sortedIndicesOut");
    /* paddedMode: 950 refuses it before anything (161002), A2's tiling (561002) */
    CHECK(permute_p1(tt, ti, 0, true, to, tr) == (A2 ? 561002 : 161002), "permute paddedMode: %s", aclGetRecentErrMsg());
    /* dtypes: INT8 tokens only on A2 */
    aclTensor *t8 = mk2(4, 3, ACL_INT8, tok8), *o8 = mk2(8, 3, ACL_INT8, o);
    CHECK(permute_p1(t8, ti, 0, false, o8, tr) == (A2 ? 0 : 161002), "permute INT8 tokens: %s", aclGetRecentErrMsg());
    aclTensor *tf = mk1(8, ACL_FLOAT, r);
    CHECK(permute_p1(tt, ti, 0, false, to, tf) == 161002, "permute FLOAT sortedIndicesOut");
    /* shapes */
    aclTensor *o7 = mk2(7, 3, ACL_FLOAT, o), *r7 = mk1(7, ACL_INT32, r);
    CHECK(permute_p1(tt, ti, 0, false, o7, tr) == 561002, "permute out dim0 7 for numOut 0");
    CHECK(permute_p1(tt, ti, 7, false, o7, tr) == 0, "permute numOutTokens 7: %s", aclGetRecentErrMsg());
    CHECK(permute_p1(tt, ti, -1, false, o7, tr) == 0, "permute numOutTokens -1: %s", aclGetRecentErrMsg());
    CHECK(permute_p1(tt, ti, 100, false, to, tr) == 0, "permute numOutTokens 100 (clamped to 8): %s", aclGetRecentErrMsg());
    CHECK(permute_p1(tt, ti, 0, false, to, r7) == 561002, "permute sortedIndicesOut dim0 7");
    int64_t d3[3] = {4, 3, 1}, o3[3] = {8, 3, 1};
    aclTensor *t3 = mk(3, d3, ACL_FLOAT, tok), *to3 = mk(3, o3, ACL_FLOAT, o);
    CHECK(permute_p1(t3, ti, 0, false, to3, tr) == (A2 ? 0 : 561002), "permute 3-D tokens: %s", aclGetRecentErrMsg());
    /* topK > 512: A2's tiling */
    static int32_t ik[513];
    aclTensor *tbig = mk2(1, 3, ACL_FLOAT, big), *tik = mk2(1, 513, ACL_INT32, ik), *obig = mk2(513, 3, ACL_FLOAT, big + 8),
              *rbig = mk1(513, ACL_INT32, big + 2000);
    CHECK(permute_p1(tbig, tik, 0, false, obig, rbig) == (A2 ? 561002 : 0), "permute topK 513: %s", aclGetRecentErrMsg());
    /* all outputs empty: success, workspace 0 */
    aclTensor *t0 = mk2(0, 3, ACL_FLOAT, NULL), *i0 = mk2(0, 2, ACL_INT32, NULL), *o0 = mk2(0, 3, ACL_FLOAT, NULL),
              *r0 = mk1(0, ACL_INT32, NULL);
    uint64_t w = 99;
    aclOpExecutor *e = NULL;
    CHECK(aclnnMoeTokenPermuteGetWorkspaceSize(t0, i0, 0, false, o0, r0, &w, &e) == 0 && w == 0, "permute empty");
    CHECK(aclnnMoeTokenPermute(NULL, 0, e, NULL) == 0, "permute empty run");
    /* phase 2: an id CANN cannot sort -> 161002, outputs untouched */
    {
        unsigned char *po = tu_poisoned(8 * 3 * 4), *pr = tu_poisoned(32);
        aclTensor *tpo = mk2(8, 3, ACL_FLOAT, po), *tpr = mk1(8, ACL_INT32, pr);
        const int32_t badv[3] = {-1, INT32_MIN, 16777215};
        for (int b = 0; b < 3; b++) {
            ind[5] = badv[b];
            memset(po, TU_POISON, 96), memset(pr, TU_POISON, 32);
            const int want = b == 1 && A2 ? 0 : b == 2 && !A2 ? 0 : 161002;
            aclnnStatus rc = aclnnMoeTokenPermuteGetWorkspaceSize(tt, ti, 0, false, tpo, tpr, &w, &e);
            if (rc == 0) {
                void *ws = run_ws(w);
                rc = aclnnMoeTokenPermute(ws, w, e, NULL);
                free(ws);
            }
            CHECK(rc == want, "permute id %d: %d, want %d (%s)", badv[b], rc, want, aclGetRecentErrMsg());
            if (want) CHECK(tu_all_poison(po, 96) && tu_all_poison(pr, 32), "permute id %d: outputs touched", badv[b]);
            if (want) CHECK(strstr(aclGetRecentErrMsg(), "indices[2][1]") != NULL, "permute message: %s", aclGetRecentErrMsg());
        }
        ind[5] = 1;
        aclDestroyTensor(tpo), aclDestroyTensor(tpr);
        free(po), free(pr);
    }
    /* permute grad */
    {
        uint64_t w2;
        aclOpExecutor *e2;
        aclTensor *g = mk2(8, 3, ACL_FLOAT, big), *gi = mk1(8, ACL_INT32, r), *go = mk2(4, 3, ACL_FLOAT, o);
        for (int i = 0; i < 8; i++) r[i] = 7 - i;
        CHECK(aclnnMoeTokenPermuteGradGetWorkspaceSize(NULL, gi, 2, false, go, &w2, &e2) == 161001, "permute grad NULL");
        CHECK(aclnnMoeTokenPermuteGradGetWorkspaceSize(g, gi, 2, true, go, &w2, &e2) == (A2 ? 561002 : 161002),
              "permute grad paddedMode");
        aclTensor *gi64 = mk1(8, ACL_INT64, big + 100);
        CHECK(aclnnMoeTokenPermuteGradGetWorkspaceSize(g, gi64, 2, false, go, &w2, &e2) == 161002, "permute grad INT64 idx");
        CHECK(aclnnMoeTokenPermuteGradGetWorkspaceSize(g, gi, 3, false, go, &w2, &e2) == 561002, "permute grad numTopk 3");
        CHECK(aclnnMoeTokenPermuteGradGetWorkspaceSize(g, gi, 0, false, go, &w2, &e2) == 561002, "permute grad numTopk 0");
        /* numTopk -1 means 1 on A2/A3 (CANN's tiling); Ascend 950's InitRoutingV2Grad refuses topK <= 0 */
        aclTensor *g1 = mk2(8, 3, ACL_FLOAT, o + 24);
        CHECK(p1_done(aclnnMoeTokenPermuteGradGetWorkspaceSize(g, gi, -1, false, g1, &w2, &e2), e2) == (A2 ? 0 : 561002),
              "permute grad numTopk -1: %s", aclGetRecentErrMsg());
        aclDestroyTensor(g1);
        aclTensor *gw = mk2(4, 2, ACL_FLOAT, o);
        CHECK(aclnnMoeTokenPermuteGradGetWorkspaceSize(g, gi, 2, false, gw, &w2, &e2) == 561002, "permute grad out H 2");
        unsigned char *po = tu_poisoned(48);
        aclTensor *tpo = mk2(4, 3, ACL_FLOAT, po);
        r[3] = -2;
        aclnnStatus rc = aclnnMoeTokenPermuteGradGetWorkspaceSize(g, gi, 2, false, tpo, &w2, &e2);
        if (rc == 0) rc = run2(rc, &e2, &w2, aclnnMoeTokenPermuteGrad);
        CHECK(rc == 161002 && tu_all_poison(po, 48), "permute grad index -2: %d (%s)", rc, aclGetRecentErrMsg());
        aclDestroyTensor(g), aclDestroyTensor(gi), aclDestroyTensor(go), aclDestroyTensor(gi64), aclDestroyTensor(gw),
            aclDestroyTensor(tpo);
        free(po);
    }
    /* unpermute */
    {
        uint64_t w2;
        aclOpExecutor *e2;
        for (int i = 0; i < 8; i++) r[i] = i;
        aclTensor *x = mk2(8, 3, ACL_FLOAT, big), *ui = mk1(8, ACL_INT32, r), *pp = mk2(4, 2, ACL_BF16, big + 200),
                  *uo = mk2(4, 3, ACL_FLOAT, o), *p3 = mk2(2, 3, ACL_FLOAT, big + 300), *u16 = mk2(4, 3, ACL_FLOAT16, o);
        CHECK(aclnnMoeTokenUnpermuteGetWorkspaceSize(x, NULL, pp, false, NULL, uo, &w2, &e2) == 161001, "unpermute NULL");
        CHECK(aclnnMoeTokenUnpermuteGetWorkspaceSize(x, ui, pp, true, NULL, uo, &w2, &e2) == (A2 ? 561002 : 161002),
              "unpermute paddedMode");
        CHECK(aclnnMoeTokenUnpermuteGetWorkspaceSize(x, ui, pp, false, NULL, u16, &w2, &e2) == 161002, "unpermute out dtype");
        CHECK(p1_done(aclnnMoeTokenUnpermuteGetWorkspaceSize(x, ui, pp, false, NULL, uo, &w2, &e2), e2) == 0, "unpermute bf16 probs: %s",
              aclGetRecentErrMsg());
        CHECK(aclnnMoeTokenUnpermuteGetWorkspaceSize(x, ui, p3, false, NULL, uo, &w2, &e2) == 561002, "unpermute probs (2, 3)");
        unsigned char *po = tu_poisoned(48);
        aclTensor *tpo = mk2(4, 3, ACL_FLOAT, po);
        r[6] = -1;
        aclnnStatus rc = aclnnMoeTokenUnpermuteGetWorkspaceSize(x, ui, pp, false, NULL, tpo, &w2, &e2);
        if (rc == 0) rc = run2(rc, &e2, &w2, aclnnMoeTokenUnpermute);
        CHECK(rc == 161002 && tu_all_poison(po, 48), "unpermute index -1: %d (%s)", rc, aclGetRecentErrMsg());
        /* unpermute grad: a negative index is 161002 on A2 (its kernel writes there), a dropped slot on 950 */
        unsigned char *pg = tu_poisoned(96), *ppg = tu_poisoned(16);
        aclTensor *W = mk2(4, 3, ACL_FLOAT, big + 400), *tpg = mk2(8, 3, ACL_FLOAT, pg), *tppg = mk2(4, 2, ACL_BF16, ppg);
        rc = aclnnMoeTokenUnpermuteGradGetWorkspaceSize(x, W, ui, pp, false, NULL, tpg, tppg, &w2, &e2);
        if (rc == 0) rc = run2(rc, &e2, &w2, aclnnMoeTokenUnpermuteGrad);
        CHECK(rc == (A2 ? 161002 : 0), "unpermute grad index -1: %d (%s)", rc, aclGetRecentErrMsg());
        if (A2) CHECK(tu_all_poison(pg, 96) && tu_all_poison(ppg, 16), "unpermute grad: outputs touched");
        r[6] = 6;
        CHECK(aclnnMoeTokenUnpermuteGradGetWorkspaceSize(NULL, W, ui, pp, false, NULL, tpg, tppg, &w2, &e2) == 161001,
              "unpermute grad NULL permutedTokens");
        CHECK(aclnnMoeTokenUnpermuteGradGetWorkspaceSize(x, W, ui, pp, false, NULL, tpg, NULL, &w2, &e2) == 161001,
              "unpermute grad NULL probsGradOut");
        CHECK(aclnnMoeTokenUnpermuteGradGetWorkspaceSize(x, W, ui, pp, true, NULL, tpg, tppg, &w2, &e2) == (A2 ? 561002 : 161002),
              "unpermute grad paddedMode");
        aclTensor *W0 = mk2(4, 0, ACL_FLOAT, NULL), *x0 = mk2(8, 0, ACL_FLOAT, NULL), *g0 = mk2(8, 0, ACL_FLOAT, NULL);
        rc = p1_done(aclnnMoeTokenUnpermuteGradGetWorkspaceSize(x0, W0, ui, pp, false, NULL, g0, tppg, &w2, &e2), e2);
        CHECK(A2 ? rc == 561002 : rc == 0, "unpermute grad H = 0: %d (%s)", rc, aclGetRecentErrMsg());
        aclTensor *all[] = {x, ui, pp, uo, p3, u16, tpo, W, tpg, tppg, W0, x0, g0};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) aclDestroyTensor(all[i]);
        free(po), free(pg), free(ppg);
    }
    aclTensor *all[] = {tt, ti, to, tr, t8, o8, tf, o7, r7, t3, to3, tbig, tik, obig, rbig, t0, i0, o0, r0};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) aclDestroyTensor(all[i]);
}

int main(void) {
    const char *soc = getenv("MOEFR_SOC");
    A2 = soc && strcmp(soc, "ascend910b") == 0;
    tu_seed("test_token_permute");
    ref_build_tabs();
    const aclDataType DT[4] = {ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_INT8}, FT[3] = {ACL_FLOAT16, ACL_BF16, ACL_FLOAT};
    for (int c = 0; c < 160; c++) {
        const aclDataType dt = DT[tu_int(0, A2 ? 3 : 2)], it = tu_int(0, 1) ? ACL_INT32 : ACL_INT64;
        const int64_t N = tu_int(0, 3) == 0 ? tu_int(0, 3) : tu_int(1, 45), K = tu_int(1, 9), H = tu_int(1, 37);
        const int64_t T = N * K;
        permute_case(dt, it, N, K, H, tu_int(1, 6), K == 1 && tu_int(0, 1), tu_int(-T - 2, T + 2), A2 && tu_int(0, 1));
    }
    permute_case(ACL_FLOAT, ACL_INT32, 3000, 8, 3, 64, 0, 0, 0); /* past the sort's serial threshold */
    for (int c = 0; c < 120; c++) {
        const int64_t N = tu_int(1, 30), K = tu_int(1, 7), H = tu_int(1, 40);
        permute_grad_case(FT[tu_int(0, 2)], N, K, H, tu_int(1, N * K), tu_int(0, 2) == 0);
    }
    permute_grad_case(ACL_BF16, 1, 3, 1500, 2, 0); /* H past the accumulation tile */
    for (int c = 0; c < 120; c++) {
        const int64_t N = tu_int(0, 4) == 0 ? 0 : tu_int(1, 30), K = tu_int(1, 7), H = tu_int(1, 40);
        const int probs = tu_int(0, 3) != 0;
        const int64_t M = tu_int(1, (probs ? N * K : N) + 1);
        unpermute_case(FT[tu_int(0, 2)], FT[tu_int(0, 2)], N, K, H, M, probs, tu_int(0, 3) == 0);
    }
    for (int c = 0; c < 120; c++) {
        const int64_t N = tu_int(1, 30), K = tu_int(1, 7), H = tu_int(1, 40);
        const int probs = tu_int(0, 3) != 0;
        const int64_t T = probs ? N * K : N, M = tu_int(1, T);
        unpermute_grad_case(FT[tu_int(0, 2)], FT[tu_int(0, 2)], N, K, H, M, probs, tu_int(0, 2) == 0);
    }
    for (int c = 0; c < 40; c++) adjoints();
    validation();
    printf("test_token_permute (%s rules): %d cases, %d checks, %d failures\n", A2 ? "A2/A3" : "Ascend 950", g_cases,
           g_checks, g_fail);
    return g_fail != 0;
}
