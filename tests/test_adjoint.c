/* test_adjoint.c - calculus that ties aclnnMoeFinalizeRoutingV2 (F) to the real
 * backward aclnnMoeFinalizeRoutingV2Grad (F*): <g, F(x)> = <F*(g), x>, the scales
 * derivative of <g, F> equal to gradScales, and central finite differences in
 * float64 for expandedX, scales, bias, x1 and x2, in all four forward modes. */
#include <math.h>

#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "testutil.h"

/* Error budget. F* rounds every output once to fp32 (relative error <= 2^-24
 * = U) after exact-or-fp64 arithmetic (the fp64 sums add at most n * 2^-53
 * relative, far below U for these tiny shapes). F accumulates in the
 * canonical order of issue 13: an fp32 element is within FW * S of the exact
 * sum (S = its sum of |terms|, FW = 65 U (1 + 2^-20), fwd_ref.h's fr_bound),
 * an fp64 one within U |y|: each F output is off by <= FW * S + U |y|. */
#define U 0x1p-24
#define FW (65 * 0x1p-24 * (1 + 0x1p-20))

typedef struct sys {
    int fm;            /* forward dropPadMode */
    int64_t R, K, H, E, C, D, Eb;
    float *x, *g, *s, *bias, *x1, *x2;
    int32_t *idx;      /* forward layout */
    int32_t *idx_rows; /* the same slots row-laid (r*K + k) for the backward */
    int32_t *eidx;
} sys;

static int g_fail, g_checks;
static aclTensor *mk(const int64_t *d, int n, aclDataType dt, void *p) {
    return aclCreateTensor(d, (uint64_t)n, dt, NULL, 0, ACL_FORMAT_ND, d, (uint64_t)n, p);
}
static int drop(const sys *q) { return q->fm == 1 || q->fm == 3; }

/* out = F(x; s, bias, x1, x2) in fp32 through the public API. */
static void forward(const sys *q, int with_bias, int with_x12, float *out) {
    int64_t dx2[2] = {q->D, q->H}, dx3[3] = {q->E, q->C, q->H}, dn[1] = {q->R * q->K}, drk[2] = {q->R, q->K},
            drh[2] = {q->R, q->H}, db[2] = {q->Eb, q->H};
    aclTensor *tx = drop(q) ? mk(dx3, 3, ACL_FLOAT, q->x) : mk(dx2, 2, ACL_FLOAT, q->x);
    aclTensor *ti = mk(dn, 1, ACL_INT32, q->idx), *ts = mk(drk, 2, ACL_FLOAT, q->s);
    aclTensor *te = with_bias ? mk(drk, 2, ACL_INT32, q->eidx) : NULL, *tb = with_bias ? mk(db, 2, ACL_FLOAT, q->bias) : NULL;
    aclTensor *t1 = with_x12 ? mk(drh, 2, ACL_FLOAT, q->x1) : NULL, *t2 = with_x12 ? mk(drh, 2, ACL_FLOAT, q->x2) : NULL;
    aclTensor *to = mk(drh, 2, ACL_FLOAT, out);
    memset(out, 0xA7, (size_t)(q->R * q->H) * 4);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int st = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(tx, ti, t1, t2, tb, ts, te, q->fm, to, &ws, &ex);
    void *w = NULL;
    if (st == 0) {
        w = ws ? malloc(ws) : NULL;
        st = aclnnMoeFinalizeRoutingV2(w, ws, ex, NULL);
    }
    if (st != 0) {
        fprintf(stderr, "forward failed: %d %s\n", st, aclGetRecentErrMsg());
        exit(1);
    }
    free(w);
    aclTensor *all[] = {tx, ti, ts, te, tb, t1, t2, to};
    for (int i = 0; i < 8; i++)
        if (all[i]) aclDestroyTensor(all[i]);
}

/* (gx, gs) = F*(g) through the backward, with the index transposed to rows. */
static void backward(const sys *q, int with_bias, float *gx, float *gs) {
    int64_t dx2[2] = {q->D, q->H}, dx3[3] = {q->E, q->C, q->H}, dn[1] = {q->R * q->K}, drk[2] = {q->R, q->K},
            drh[2] = {q->R, q->H}, db[2] = {q->Eb, q->H};
    const int bm = drop(q) ? 1 : 0;
    aclTensor *tg = mk(drh, 2, ACL_FLOAT, q->g), *ti = mk(dn, 1, ACL_INT32, q->idx_rows);
    aclTensor *tx = bm ? mk(dx3, 3, ACL_FLOAT, q->x) : mk(dx2, 2, ACL_FLOAT, q->x), *ts = mk(drk, 2, ACL_FLOAT, q->s);
    aclTensor *te = with_bias ? mk(drk, 2, ACL_INT32, q->eidx) : NULL, *tb = with_bias ? mk(db, 2, ACL_FLOAT, q->bias) : NULL;
    aclTensor *tgx = bm ? mk(dx3, 3, ACL_FLOAT, gx) : mk(dx2, 2, ACL_FLOAT, gx), *tgs = mk(drk, 2, ACL_FLOAT, gs);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int st = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(tg, ti, tx, ts, te, tb, bm, 0, bm ? q->E : 0,
                                                           bm ? q->C : 0, tgx, tgs, &ws, &ex);
    void *w = NULL;
    if (st == 0) {
        w = ws ? malloc(ws) : NULL;
        st = aclnnMoeFinalizeRoutingV2Grad(w, ws, ex, NULL);
    }
    if (st != 0) {
        fprintf(stderr, "backward failed: %d %s\n", st, aclGetRecentErrMsg());
        exit(1);
    }
    free(w);
    aclTensor *all[] = {tg, ti, tx, ts, te, tb, tgx, tgs};
    for (int i = 0; i < 8; i++)
        if (all[i]) aclDestroyTensor(all[i]);
}

/* <g, y> in fp64 (products of two fp32 are exact in fp64) */
static double dot_gy(const sys *q, const float *y) {
    double a = 0;
    for (int64_t i = 0; i < q->R * q->H; i++) a += (double)q->g[i] * (double)y[i];
    return a;
}

static void check(int ok, const char *what, const sys *q, double got, double want, double tol) {
    g_checks++;
    if (ok) return;
    g_fail++;
    fprintf(stderr, "%s: mode %d R=%lld K=%lld H=%lld E=%lld C=%lld: got %.17g, want %.17g, tol %.3g\n", what, q->fm,
            (long long)q->R, (long long)q->K, (long long)q->H, (long long)q->E, (long long)q->C, got, want, tol);
}

/* Random tiny system; integer-valued data when `exact` (then every fp32
 * operation of both operators is exact and the identity must hold exactly). */
static void make(sys *q, int fm, int exact) {
    memset(q, 0, sizeof *q);
    q->fm = fm;
    q->R = tu_int(1, 4), q->K = tu_int(1, 4), q->H = tu_int(1, 9);
    /* bias dim0 >= K, as CANN's forward tiling requires */
    q->E = q->K + tu_int(0, 2), q->C = tu_int(1, 4);
    const int64_t N = q->R * q->K;
    q->D = drop(q) ? q->E * q->C : N;
    q->Eb = drop(q) ? q->E : q->K + tu_int(0, 2);
    q->x = malloc((size_t)(q->D * q->H) * 4), q->g = malloc((size_t)(q->R * q->H) * 4);
    q->s = malloc((size_t)N * 4), q->bias = malloc((size_t)(q->Eb * q->H) * 4);
    q->x1 = malloc((size_t)(q->R * q->H) * 4), q->x2 = malloc((size_t)(q->R * q->H) * 4);
    q->idx = malloc((size_t)N * 4), q->idx_rows = malloc((size_t)N * 4), q->eidx = malloc((size_t)N * 4);
    float *arrs[] = {q->x, q->g, q->bias, q->x1, q->x2};
    int64_t lens[] = {q->D * q->H, q->R * q->H, q->Eb * q->H, q->R * q->H, q->R * q->H};
    for (int a = 0; a < 5; a++)
        for (int64_t i = 0; i < lens[a]; i++)
            arrs[a][i] = exact ? (float)tu_int(-8, 8) : (float)(tu_unit() * 4 - 2);
    for (int64_t i = 0; i < N; i++) {
        q->s[i] = exact ? (float)tu_int(-8, 8) * 0.25f : (float)(tu_unit() * 1.5 + 0.25) * (tu_int(0, 1) ? 1 : -1);
        q->eidx[i] = (int32_t)tu_int(0, q->Eb - 1);
    }
    /* slots: a permutation, or distinct drop-pad rows with some -1 */
    int64_t *perm = malloc((size_t)q->D * 8);
    for (int64_t i = 0; i < q->D; i++) perm[i] = i;
    for (int64_t i = q->D - 1; i > 0; i--) {
        int64_t j = tu_int(0, i), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int64_t used = 0;
    for (int64_t i = 0; i < N; i++)
        q->idx[i] = !drop(q) ? (int32_t)perm[i] : (used < q->D && tu_int(0, 3)) ? (int32_t)perm[used++] : -1;
    free(perm);
    /* the backward's row-laid index: modes 2/3 as is, 0/1 transposed from (K, R) */
    for (int64_t r = 0; r < q->R; r++)
        for (int64_t k = 0; k < q->K; k++)
            q->idx_rows[r * q->K + k] = fm >= 2 ? q->idx[r * q->K + k] : q->idx[k * q->R + r];
}

static void release(sys *q) {
    free(q->x), free(q->g), free(q->s), free(q->bias), free(q->x1), free(q->x2);
    free(q->idx), free(q->idx_rows), free(q->eidx);
}

/* sum over F's outputs of |g| * S (S: the output's sum of |terms|, as F sees them) */
static double g_terms(const sys *q, int with_bias, int with_x12) {
    double t = 0;
    for (int64_t r = 0; r < q->R; r++)
        for (int64_t j = 0; j < q->H; j++) {
            double S = with_x12 ? fabs((double)q->x1[r * q->H + j]) + fabs((double)q->x2[r * q->H + j]) : 0;
            for (int64_t k = 0; k < q->K; k++) {
                const int32_t d = q->idx_rows[r * q->K + k];
                if (d < 0) continue; /* a dropped slot: no term */
                double v = fabs((double)q->x[d * q->H + j]);
                if (with_bias) v += fabs((double)q->bias[q->eidx[r * q->K + k] * q->H + j]);
                S += fabs((double)q->s[r * q->K + k]) * v;
            }
            t += fabs((double)q->g[r * q->H + j]) * S;
        }
    return t;
}

/* central difference of L(v) = <g, F> in the one input element *p; *gt = the
 * g_terms of both evaluations (for fd_tol) */
static double fd(const sys *q, float *p, double h, int with_bias, int with_x12, float *yp, float *ym, double *span,
                 double *gt) {
    const float v = *p;
    const float up = (float)(v + h), dn = (float)(v - h); /* the steps actually taken */
    *p = up;
    forward(q, with_bias, with_x12, yp);
    *gt = g_terms(q, with_bias, with_x12);
    *p = dn;
    forward(q, with_bias, with_x12, ym);
    *gt += g_terms(q, with_bias, with_x12);
    *p = v;
    *span = (double)up - (double)dn;
    return (dot_gy(q, yp) - dot_gy(q, ym)) / *span;
}
/* what F's error can do to fd(): each y is off by <= FW * S + U |y| */
static double fd_tol(const sys *q, const float *yp, const float *ym, double span, double gt) {
    double t = 0;
    for (int64_t i = 0; i < q->R * q->H; i++) t += fabs(q->g[i]) * (fabs(yp[i]) + fabs(ym[i]));
    return (U * t + FW * gt) / span;
}

static void trial(int fm, int exact) {
    sys q;
    make(&q, fm, exact);
    const int64_t R = q.R, K = q.K, H = q.H, D = q.D, N = R * K;
    float *y = malloc((size_t)(R * H) * 4), *yp = malloc((size_t)(R * H) * 4), *ym = malloc((size_t)(R * H) * 4);
    float *gx = malloc((size_t)(D * H) * 4), *gs = malloc((size_t)N * 4);

    /* 1. adjoint identity, x1 = x2 = bias = 0 */
    forward(&q, 0, 0, y);
    backward(&q, 0, gx, gs);
    double lhs = dot_gy(&q, y), rhs = 0, mag = 0;
    for (int64_t i = 0; i < D * H; i++) rhs += (double)gx[i] * (double)q.x[i], mag += fabs((double)gx[i] * q.x[i]);
    for (int64_t i = 0; i < R * H; i++) mag += fabs((double)q.g[i] * y[i]);
    double tol = exact ? 0 : 2 * U * mag + FW * g_terms(&q, 0, 0) + 1e-300;
    check(fabs(lhs - rhs) <= tol, exact ? "adjoint identity (exact data)" : "adjoint identity", &q, lhs, rhs, tol);

    /* 2. d<g, F>/ds_rk = gradScales[r][k], with bias and x1/x2 in F (they shift
     * F but not its derivative in s), by central differences of the forward.
     * A dropped slot is where CANN's pair is not adjoint: the forward skips its
     * whole term (bias too), so the derivative is 0, while the backward still
     * gives gradScales = bias[e] . g (both as CANN's kernels do). */
    backward(&q, 1, gx, gs);
    for (int64_t i = 0; i < N; i++) {
        double span, gt, d = fd(&q, &q.s[i], 0.125, 1, 1, yp, ym, &span, &gt);
        /* gradScales is an fp64 sum rounded once: within U of its value */
        double t = fd_tol(&q, yp, ym, span, gt) + 2 * U * fabs(gs[i]) + 1e-12;
        if (q.idx_rows[i] >= 0) {
            check(fabs(d - gs[i]) <= t, "d<g,F>/dscales vs gradScales", &q, d, gs[i], t);
            continue;
        }
        check(fabs(d) <= fd_tol(&q, yp, ym, span, gt) + 1e-12, "d<g,F>/dscales of a dropped slot", &q, d, 0, t);
        double want = 0, m = 0;
        for (int64_t j = 0; j < H; j++) {
            double v = (double)q.bias[q.eidx[i] * H + j] * q.g[(i / K) * H + j];
            want += v, m += fabs(v);
        }
        check(fabs(gs[i] - want) <= 2 * U * m + 1e-300, "gradScales of a dropped slot = bias . g", &q, gs[i], want,
              2 * U * m);
    }
    /* 3. d<g, F>/dexpandedX = gradExpandedX (= fp32 g*s; 0 for rows no slot names) */
    for (int rep = 0; rep < 6; rep++) {
        int64_t e = tu_int(0, D * H - 1);
        double span, gt, d = fd(&q, &q.x[e], 0.25, 1, 1, yp, ym, &span, &gt);
        double t = fd_tol(&q, yp, ym, span, gt) + U * fabs(gx[e]) + 1e-12;
        check(fabs(d - gx[e]) <= t, "d<g,F>/dexpandedX vs gradExpandedX", &q, d, gx[e], t);
    }
    /* 4. bias: per expert, the sum over the kept slots routed to it of s * g
     * (a dropped slot's term is skipped, bias included) -- computed here in fp64 */
    for (int rep = 0; rep < 3; rep++) {
        int64_t eb = tu_int(0, q.Eb - 1), j = tu_int(0, H - 1);
        double want = 0;
        for (int64_t r = 0; r < R; r++)
            for (int64_t k = 0; k < K; k++)
                if (q.eidx[r * K + k] == eb && q.idx_rows[r * K + k] >= 0)
                    want += (double)q.s[r * K + k] * q.g[r * H + j];
        double span, gt, d = fd(&q, &q.bias[eb * H + j], 0.25, 1, 1, yp, ym, &span, &gt);
        double t = fd_tol(&q, yp, ym, span, gt) + 1e-12;
        check(fabs(d - want) <= t, "d<g,F>/dbias", &q, d, want, t);
    }
    /* 5. x1 and x2: the gradient is g itself */
    for (int rep = 0; rep < 2; rep++) {
        int64_t e = tu_int(0, R * H - 1);
        double span, gt, d1 = fd(&q, &q.x1[e], 0.25, 1, 1, yp, ym, &span, &gt);
        double t = fd_tol(&q, yp, ym, span, gt) + 1e-12;
        check(fabs(d1 - q.g[e]) <= t, "d<g,F>/dx1", &q, d1, q.g[e], t);
        double d2 = fd(&q, &q.x2[e], 0.25, 1, 1, yp, ym, &span, &gt);
        t = fd_tol(&q, yp, ym, span, gt) + 1e-12;
        check(fabs(d2 - q.g[e]) <= t, "d<g,F>/dx2", &q, d2, q.g[e], t);
    }
    free(y), free(yp), free(ym), free(gx), free(gs);
    release(&q);
}

int main(void) {
    tu_seed("test_adjoint");
    aclInit(NULL);
    for (int fm = 0; fm < 4; fm++) {
        for (int t = 0; t < 60; t++) trial(fm, 0);
        for (int t = 0; t < 20; t++) trial(fm, 1);
    }
    printf("test_adjoint: %d checks over 4 modes x 80 systems, %d failures\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
