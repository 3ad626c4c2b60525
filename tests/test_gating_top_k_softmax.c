/* test_gating_top_k_softmax.c - aclnnMoeGatingTopKSoftmax and ...V2 against
 * a float64 oracle written from CANN's documented semantics: softmax over
 * the experts (exp of x - max over the sum, in double), the top k by sorting
 * (value, expert) pairs with qsort (value descending, expert ascending),
 * rowIdx[r][k] = k*R + r, finished rows -> expertIdx = E with y kept; V2's
 * renorm 1 = top-k of the logits, then softmax over the k.
 *
 * Inputs: fp16, bf16, fp32; 2-D and 3-D; odd E and rows; logits on a 1/4
 * grid (many exact ties, and distinct values far apart: the selection must
 * then match the oracle exactly, tie rule included), continuous logits
 * (near ties: each pick must be the oracle's i-th value within tolerance),
 * wide logits (underflow to 0), all-equal rows; k = 1 and k = E; finished
 * rows (1-D and 2-D, strided); strided x; poisoned outputs with guard bytes;
 * empty problems; every phase-1 rule with its code (161001, 161002, 561002),
 * under both rule sets (MOEFR_SOC=ascend910b in the environment switches the
 * expectations).
 *
 * Tolerance of a softmax value p (fp32 result vs the float64 oracle):
 *   |got - ref| <= ref * 2^-24 * (2*D + n/8 + 16) + 2^-148 + ulp_out(ref)
 * D = max |x_j - max x| over the row (rounding x_j - m costs up to
 * 2^-24 * D relative after exp), n/8 + 3 for the eight-lane sum, about 3 ulp
 * for moefr's exp and 1 for the division; 2^-148 covers results below the
 * fp32 normal range; ulp_out is one ulp of y's dtype (0 for fp32, whose
 * result is not rounded again). The largest error seen is printed, in units
 * of 2^-24 relative (fp32 outputs only).
 *
 * Usage: test_gating_top_k_softmax          the tests
 *        test_gating_top_k_softmax --hash   FNV-1a hashes of the outputs of
 *           fixed problems (gating_bits.cmake compares them across MOEFR_ISA
 *           and thread counts) */
#include <math.h>

#include "aclnnop/aclnn_moe_gating_top_k_softmax.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax_v2.h"
#define TU_COUNT_FAILURES /* CHECK counts and goes on */
#include "testutil.h"

static int g_a2;
static double g_max_err, g_max_err256; /* in 2^-24 relative units, fp32 outputs (all; logits spanning <= 16) */
static double g_cur_D;                 /* the logit spread of the row being checked */

/* ---- dtype helpers (independent of src/kernels/fp.h) ---- */
static size_t esize(aclDataType dt) { return dt == ACL_FLOAT ? 4 : 2; }
static double bits_to_double(const unsigned char *p, aclDataType dt) {
    if (dt == ACL_FLOAT) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    if (dt == ACL_BF16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return s ? -v : v;
}
/* v must be exactly representable in dt (the generators make sure) */
static void double_to_bits(double v, unsigned char *p, aclDataType dt) {
    float f = (float)v;
    if (dt == ACL_FLOAT) {
        memcpy(p, &f, 4);
        return;
    }
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t h;
    if (dt == ACL_BF16) {
        h = (uint16_t)(u >> 16);
    } else {
        int s = u >> 31, e = (int)((u >> 23) & 255) - 127;
        uint32_t m = u & 0x7FFFFF;
        if (f == 0) h = (uint16_t)(s << 15);
        else if (e >= -14) h = (uint16_t)((s << 15) | ((e + 15) << 10) | (m >> 13));
        else h = (uint16_t)((s << 15) | (uint16_t)ldexp(fabs(v), 24));
    }
    memcpy(p, &h, 2);
}
/* v rounded to dt (nearest; ties do not matter for generated logits) */
static double round_to(double v, aclDataType dt) {
    if (dt == ACL_FLOAT) return (float)v;
    int bits = dt == ACL_BF16 ? 8 : 11;
    if (v == 0) return 0;
    int e;
    frexp(v, &e);
    if (dt == ACL_FLOAT16 && e < -13) e = -13;
    double q = ldexp(1, e - bits);
    return nearbyint(v / q) * q;
}
static double ulp_out(double ref, aclDataType dt) {
    if (dt == ACL_FLOAT) return 0;
    int e;
    if (ref == 0) return dt == ACL_FLOAT16 ? ldexp(1, -24) : ldexp(1, -133);
    frexp(ref, &e);
    if (dt == ACL_FLOAT16 && e < -13) e = -13; /* subnormals: a fixed quantum, 2^-24 */
    if (dt == ACL_BF16 && e < -125) e = -125;  /* 2^-133 */
    return ldexp(1, e - (dt == ACL_BF16 ? 8 : 11));
}

/* ---- tensors with any strides over a padded storage ---- */
typedef tu_owned view;
/* src: contiguous logical values (es bytes each) of dims[0..nd); strides in elements; a NaN-ish filler
 * (0x7F bytes) between elements */
static view make_view(const void *src, int nd, const int64_t *dims, const int64_t *strides, int64_t off,
                      aclDataType dt, size_t es) {
    return tu_strided(src, nd, dims, strides, off, tu_span(nd, dims, strides, off), dt, es, 0x7F, 8);
}
static aclTensor *mk(int nd, const int64_t *dims, aclDataType dt, void *data) { return tu_tensor(dims, nd, dt, data); }

/* ---- the oracle ---- */
typedef struct pv {
    double v;
    int64_t e;
} pv;
static int pv_cmp(const void *a, const void *b) {
    const pv *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return x->e < y->e ? -1 : x->e > y->e;
}
static void ref_softmax(const double *x, int64_t n, double *p) {
    double m = x[0], s = 0;
    for (int64_t j = 1; j < n; j++) m = x[j] > m ? x[j] : m;
    for (int64_t j = 0; j < n; j++) s += p[j] = exp(x[j] - m);
    for (int64_t j = 0; j < n; j++) p[j] /= s;
}
static void ref_topk(const double *v, int64_t n, int64_t k, int64_t *idx) {
    pv *a = malloc(sizeof *a * (size_t)n);
    for (int64_t j = 0; j < n; j++) a[j].v = v[j], a[j].e = j;
    qsort(a, (size_t)n, sizeof *a, pv_cmp);
    for (int64_t i = 0; i < k; i++) idx[i] = a[i].e;
    free(a);
}
static double spread(const double *x, int64_t n) {
    double lo = x[0], hi = x[0];
    for (int64_t j = 1; j < n; j++) lo = x[j] < lo ? x[j] : lo, hi = x[j] > hi ? x[j] : hi;
    return hi - lo;
}
static double tol_of(double ref, double D, int64_t n, aclDataType dt) {
    return ref * ldexp(2 * D + (double)n / 8 + 16, -24) + ldexp(1, -148) + ulp_out(ref, dt);
}
static void note_err(double got, double ref, aclDataType dt) {
    if (dt != ACL_FLOAT || ref < ldexp(1, -120)) return;
    double e = fabs(got - ref) / ref / ldexp(1, -24);
    if (e > g_max_err) g_max_err = e;
    if (g_cur_D <= 16 && e > g_max_err256) g_max_err256 = e;
}

/* ---- one random case ---- */
enum { M_GRID, M_CONT, M_WIDE, M_EQUAL };
typedef struct gcase {
    int v2, renorm, smflag;
    aclDataType dt;
    int nd;            /* x's rank: 2 or 3 */
    int64_t B, S, E, k; /* rows R = B*S (nd 2: B = 1, S = N) */
    int mode, finished, strided;
} gcase;

static aclnnStatus run_case(const gcase *c, const double *xv, const unsigned char *fin, unsigned char *y,
                            int32_t *eidx, int32_t *ridx, float *sm, uint64_t *wsz_out) {
    const int64_t R = c->B * c->S, E = c->E, k = c->k;
    const size_t es = esize(c->dt);
    unsigned char *xb = malloc((size_t)(R * E) * es + 1);
    for (int64_t i = 0; i < R * E; i++) double_to_bits(xv[i], xb + i * (int64_t)es, c->dt);
    int64_t xd[3], xs[3], od[3], sd[3], fd[2], fs[2];
    int nd = c->nd;
    if (nd == 2) {
        xd[0] = R, xd[1] = E;
    } else {
        xd[0] = c->B, xd[1] = c->S, xd[2] = E;
    }
    /* strides: contiguous, or a padded row and a column step of 1..2 */
    int64_t cs = c->strided ? tu_int(1, 2) : 1, rs = E * cs + (c->strided ? tu_int(0, 5) : 0);
    xs[nd - 1] = cs;
    xs[nd - 2] = rs;
    if (nd == 3) xs[0] = rs * c->S + (c->strided ? tu_int(0, 3) : 0);
    view xv_ = make_view(xb, nd, xd, xs, c->strided ? tu_int(0, 3) : 0, c->dt, es);
    memcpy(od, xd, sizeof od);
    od[nd - 1] = k;
    memcpy(sd, xd, sizeof sd);
    view fv = {NULL, NULL};
    if (c->finished) {
        int fnd = nd - 1;
        if (fnd == 1) {
            fd[0] = R, fs[0] = c->strided ? 2 : 1;
        } else {
            fd[0] = c->B, fd[1] = c->S, fs[1] = c->strided ? 3 : 1, fs[0] = fs[1] * c->S + (c->strided ? 1 : 0);
        }
        fv = make_view(fin, fnd, fd, fs, c->strided ? 1 : 0, ACL_BOOL, 1);
    }
    aclTensor *ty = mk(nd, od, c->dt, y), *te = mk(nd, od, ACL_INT32, eidx);
    aclTensor *tr = ridx ? mk(nd, od, ACL_INT32, ridx) : NULL, *ts = sm ? mk(nd, sd, ACL_FLOAT, sm) : NULL;
    aclOpExecutor *ex = NULL;
    uint64_t wsz = 0;
    aclnnStatus rc = c->v2 ? aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize(xv_.t, fv.t, k, c->renorm, c->smflag != 0,
                                                                         ty, te, ts, &wsz, &ex)
                           : aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(xv_.t, fv.t, k, ty, te, tr, &wsz, &ex);
    if (rc == ACLNN_SUCCESS) {
        void *w = wsz ? malloc(wsz) : NULL;
        rc = c->v2 ? aclnnMoeGatingTopKSoftmaxV2(w, wsz, ex, NULL) : aclnnMoeGatingTopKSoftmax(w, wsz, ex, NULL);
        free(w);
    }
    if (wsz_out) *wsz_out = wsz;
    aclDestroyTensor(xv_.t), aclDestroyTensor(ty), aclDestroyTensor(te);
    if (fv.t) aclDestroyTensor(fv.t);
    if (tr) aclDestroyTensor(tr);
    if (ts) aclDestroyTensor(ts);
    free(xv_.store), free(fv.store), free(xb);
    return rc;
}

static double gen_logit(int mode, aclDataType dt) {
    switch (mode) {
    case M_GRID: return (double)tu_int(-16, 16) / 4.0; /* exact in every dtype */
    case M_CONT: return round_to((double)(int64_t)(tu_next() >> 11) * 0x1p-53 * 16 - 8, dt);
    case M_WIDE: return round_to((double)(int64_t)(tu_next() >> 11) * 0x1p-53 * 240 - 120, dt);
    default: return 0.5;
    }
}

static void check_case(const gcase *c) {
    const int64_t R = c->B * c->S, E = c->E, k = c->k;
    const size_t es = esize(c->dt);
    double *x = malloc(sizeof *x * (size_t)(R * E)), *p = malloc(sizeof *p * (size_t)E);
    double *tk = malloc(sizeof *tk * (size_t)k);
    int64_t *ri = malloc(sizeof *ri * (size_t)E);
    unsigned char *fin = malloc((size_t)R + 1);
    for (int64_t i = 0; i < R * E; i++) x[i] = gen_logit(c->mode, c->dt);
    if (c->mode == M_GRID && R > 0 && E > 3) /* one row of all-equal logits */
        for (int64_t j = 0; j < E; j++) x[(R / 2) * E + j] = 1.25;
    for (int64_t r = 0; r < R; r++) fin[r] = c->finished && tu_int(0, 2) == 0;
    const size_t yb = (size_t)(R * k) * es, ib = (size_t)(R * k) * 4, sb = (size_t)(R * E) * 4;
    const int want_sm = c->v2 && c->renorm == 0 && c->smflag;
    unsigned char *y = tu_poisoned(yb), *eb = tu_poisoned(ib), *rb = c->v2 ? NULL : tu_poisoned(ib);
    unsigned char *smb = (c->v2 && c->smflag) ? tu_poisoned(sb) : NULL;
    char tag[160];
    snprintf(tag, sizeof tag, "%s renorm=%d sm=%d dt=%d nd=%d B=%lld S=%lld E=%lld k=%lld mode=%d fin=%d str=%d",
             c->v2 ? "V2" : "V1", c->renorm, c->smflag, (int)c->dt, c->nd, (long long)c->B, (long long)c->S,
             (long long)E, (long long)k, c->mode, c->finished, c->strided);
    aclnnStatus rc = run_case(c, x, fin, y, (int32_t *)eb, (int32_t *)rb, (float *)smb, NULL);
    int bad0 = g_fail;
    CHECK(rc == ACLNN_SUCCESS, "%s: status %d (%s)", tag, rc, aclGetRecentErrMsg());
    CHECK(tu_guard_ok(y, yb) && tu_guard_ok(eb, ib) && (!rb || tu_guard_ok(rb, ib)) && (!smb || tu_guard_ok(smb, sb)),
          "%s: an output written past its end", tag);
    if (smb && !want_sm) CHECK(tu_all_poison(smb, sb), "%s: softmax output written though not asked for", tag);
    for (int64_t r = 0; r < R && g_fail == bad0 && rc == ACLNN_SUCCESS; r++) {
        const double *xr = x + r * E;
        const double D = spread(xr, E);
        g_cur_D = D;
        int64_t ref_idx[1024];
        if (c->v2 && c->renorm) {
            ref_topk(xr, E, k, ref_idx);
            for (int64_t i = 0; i < k; i++) tk[i] = xr[ref_idx[i]];
            double q[1024];
            ref_softmax(tk, k, q);
            const double Dk = spread(tk, k);
            g_cur_D = Dk;
            for (int64_t i = 0; i < k; i++) {
                int32_t g;
                memcpy(&g, eb + (r * k + i) * 4, 4);
                const int32_t want = fin[r] ? (int32_t)E : (int32_t)ref_idx[i];
                CHECK(g == want, "%s: row %lld expertIdx[%lld] = %d, want %d", tag, (long long)r, (long long)i, g,
                      want);
                const double got = bits_to_double(y + (r * k + i) * (int64_t)es, c->dt);
                CHECK(fabs(got - q[i]) <= tol_of(q[i], Dk, k, c->dt), "%s: row %lld y[%lld] = %.9g, want %.9g", tag,
                      (long long)r, (long long)i, got, q[i]);
                note_err(got, q[i], c->dt);
            }
            continue;
        }
        ref_softmax(xr, E, p);
        ref_topk(p, E, k, ref_idx);
        const int exact = c->mode != M_CONT && c->mode != M_WIDE; /* distinct values >= e^0.25 apart */
        for (int64_t i = 0; i < k; i++) {
            int32_t g;
            memcpy(&g, eb + (r * k + i) * 4, 4);
            const double pref = p[ref_idx[i]];
            const double got = bits_to_double(y + (r * k + i) * (int64_t)es, c->dt);
            CHECK(fabs(got - pref) <= tol_of(pref, D, E, c->dt), "%s: row %lld y[%lld] = %.9g, want %.9g", tag,
                  (long long)r, (long long)i, got, pref);
            note_err(got, pref, c->dt);
            if (fin[r]) {
                CHECK(g == (int32_t)E, "%s: finished row %lld expertIdx[%lld] = %d, want E = %lld", tag, (long long)r,
                      (long long)i, g, (long long)E);
                continue;
            }
            if (exact) {
                CHECK(g == ref_idx[i], "%s: row %lld expertIdx[%lld] = %d, want %lld", tag, (long long)r,
                      (long long)i, g, (long long)ref_idx[i]);
                continue;
            }
            /* near ties may swap: the pick must hold the i-th largest value */
            CHECK(g >= 0 && g < E, "%s: row %lld expertIdx[%lld] = %d out of range", tag, (long long)r, (long long)i, g);
            if (g < 0 || g >= E) break;
            CHECK(fabs(p[g] - pref) <= 2 * tol_of(pref, D, E, ACL_FLOAT), "%s: row %lld pick %lld = %d has p %.9g, "
                  "the %lld-th largest is %.9g", tag, (long long)r, (long long)i, g, p[g], (long long)i, pref);
            for (int64_t i2 = 0; i2 < i; i2++) { /* distinct, and equal logits in expert order */
                int32_t g2;
                memcpy(&g2, eb + (r * k + i2) * 4, 4);
                CHECK(g2 != g, "%s: row %lld expert %d picked twice", tag, (long long)r, g);
                if (xr[g2] == xr[g]) CHECK(g2 < g, "%s: row %lld equal logits out of expert order", tag, (long long)r);
            }
            for (int64_t j = 0; j < g; j++) { /* an equal logit at a lower expert must have been picked */
                if (xr[j] != xr[g]) continue;
                int found = 0;
                for (int64_t i2 = 0; i2 < i; i2++) {
                    int32_t g2;
                    memcpy(&g2, eb + (r * k + i2) * 4, 4);
                    found |= g2 == j;
                }
                CHECK(found, "%s: row %lld picked expert %d over the equal, lower expert %lld", tag, (long long)r, g,
                      (long long)j);
            }
        }
        if (!c->v2)
            for (int64_t i = 0; i < k; i++) {
                int32_t g;
                memcpy(&g, rb + (r * k + i) * 4, 4);
                CHECK(g == (int32_t)(i * R + r), "%s: rowIdx[%lld][%lld] = %d, want %lld", tag, (long long)r,
                      (long long)i, g, (long long)(i * R + r));
            }
        if (want_sm)
            for (int64_t j = 0; j < E; j++) {
                float f;
                memcpy(&f, smb + (r * E + j) * 4, 4);
                CHECK(fabs(f - p[j]) <= tol_of(p[j], D, E, ACL_FLOAT), "%s: row %lld softmax[%lld] = %.9g, want %.9g",
                      tag, (long long)r, (long long)j, (double)f, p[j]);
                note_err(f, p[j], ACL_FLOAT);
            }
        (void)ri;
    }
    g_cases++;
    free(x), free(p), free(tk), free(ri), free(fin), free(y), free(eb), free(rb), free(smb);
}

static const aclDataType DTS[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

static void random_cases(void) {
    const int64_t Es[] = {1, 2, 3, 7, 8, 31, 37, 64, 129, 256, 515};
    for (int it = 0; it < 150; it++) {
        gcase c;
        memset(&c, 0, sizeof c);
        c.v2 = it % 2;
        c.renorm = c.v2 ? tu_int(0, 1) : 0;
        c.smflag = c.v2 ? tu_int(0, 1) : 0;
        c.dt = DTS[tu_int(0, 2)];
        c.nd = tu_int(2, 3);
        c.E = Es[tu_int(0, 10)];
        if (c.nd == 2) {
            c.B = 1, c.S = tu_int(1, 45);
        } else {
            c.B = tu_int(1, 4), c.S = tu_int(1, 13);
        }
        const int64_t kmax = c.E < 1024 ? c.E : 1024;
        const int kind = tu_int(0, 3);
        c.k = kind == 0 ? 1 : kind == 1 ? kmax : tu_int(1, kmax < 40 ? kmax : 40);
        c.mode = tu_int(0, 3);
        c.finished = tu_int(0, 2) == 0;
        c.strided = tu_int(0, 1);
        check_case(&c);
    }
    /* the bench shape at a smaller N; large k (heap path); E past the stack buffer (workspace path) */
    gcase big = {0, 0, 0, ACL_FLOAT, 2, 1, 300, 256, 8, M_CONT, 1, 0};
    check_case(&big);
    big.dt = ACL_BF16, big.mode = M_GRID;
    check_case(&big);
    gcase hk = {1, 0, 1, ACL_FLOAT, 2, 1, 9, 1100, 1024, M_GRID, 1, 1};
    check_case(&hk);
    hk.mode = M_CONT, hk.k = 100, hk.dt = ACL_FLOAT16;
    check_case(&hk);
    gcase wide = {1, 0, 1, ACL_FLOAT, 3, 2, 3, 2500, 5, M_CONT, 1, 1};
    check_case(&wide);
    wide.renorm = 1;
    check_case(&wide);
    if (g_a2) { /* V1 takes E > 2048 under the A2/A3 rules only */
        gcase w1 = {0, 0, 0, ACL_BF16, 2, 1, 5, 2049, 7, M_GRID, 1, 1};
        check_case(&w1);
    }
}

/* A hand-computed case: CANN's example input (x = 0.1 .. 11.1 in rows of 4, k = 2). */
static void hand_case(void) {
    float x[12], y[6];
    int32_t e[6], r[6];
    for (int i = 0; i < 12; i++) x[i] = 0.1f + (float)i;
    int64_t xd[2] = {3, 4}, od[2] = {3, 2};
    aclTensor *tx = mk(2, xd, ACL_FLOAT, x), *ty = mk(2, od, ACL_FLOAT, y), *te = mk(2, od, ACL_INT32, e),
              *tr = mk(2, od, ACL_INT32, r);
    uint64_t ws = 1;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(tx, NULL, 2, ty, te, tr, &ws, &ex);
    if (rc == ACLNN_SUCCESS) rc = aclnnMoeGatingTopKSoftmax(NULL, ws, ex, NULL);
    CHECK(rc == ACLNN_SUCCESS && ws == 0, "hand case: %d ws %llu (%s)", rc, (unsigned long long)ws,
          aclGetRecentErrMsg());
    /* softmax of (0, 1, 2, 3) + c: e^3 / (1 + e + e^2 + e^3) = 0.643914, e^2 / ... = 0.236883 */
    const double want[2] = {0.6439142598879723, 0.2368828180899914};
    for (int i = 0; i < 3; i++) {
        CHECK(e[2 * i] == 3 && e[2 * i + 1] == 2, "hand case: row %d experts %d %d", i, e[2 * i], e[2 * i + 1]);
        CHECK(r[2 * i] == i && r[2 * i + 1] == 3 + i, "hand case: row %d rowIdx %d %d", i, r[2 * i], r[2 * i + 1]);
        for (int j = 0; j < 2; j++)
            CHECK(fabs(y[2 * i + j] - want[j]) < 4e-7, "hand case: y[%d][%d] = %.9g, want %.9g", i, j,
                  (double)y[2 * i + j], want[j]);
    }
    aclDestroyTensor(tx), aclDestroyTensor(ty), aclDestroyTensor(te), aclDestroyTensor(tr);
}

static void empty_cases(void) {
    unsigned char *buf = tu_poisoned(64);
    int64_t xd[2] = {0, 5}, od[2] = {0, 2}, x3[3] = {2, 0, 5}, o3[3] = {2, 0, 2};
    aclTensor *tx = mk(2, xd, ACL_FLOAT, buf), *ty = mk(2, od, ACL_FLOAT, buf), *te = mk(2, od, ACL_INT32, buf);
    aclTensor *tx3 = mk(3, x3, ACL_BF16, buf), *ty3 = mk(3, o3, ACL_BF16, buf), *te3 = mk(3, o3, ACL_INT32, buf);
    uint64_t ws = 7;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(tx, NULL, 2, ty, te, te, &ws, &ex);
    if (rc == ACLNN_SUCCESS) rc = aclnnMoeGatingTopKSoftmax(NULL, ws, ex, NULL);
    CHECK(rc == ACLNN_SUCCESS && ws == 0, "empty V1: %d ws %llu (%s)", rc, (unsigned long long)ws,
          aclGetRecentErrMsg());
    ws = 7;
    rc = aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize(tx3, NULL, 2, 0, false, ty3, te3, NULL, &ws, &ex);
    if (rc == ACLNN_SUCCESS) rc = aclnnMoeGatingTopKSoftmaxV2(NULL, ws, ex, NULL);
    CHECK(rc == ACLNN_SUCCESS && ws == 0, "empty V2: %d ws %llu (%s)", rc, (unsigned long long)ws,
          aclGetRecentErrMsg());
    CHECK(tu_all_poison(buf, 64 + TU_GUARD), "empty problems wrote memory");
    aclDestroyTensor(tx), aclDestroyTensor(ty), aclDestroyTensor(te);
    aclDestroyTensor(tx3), aclDestroyTensor(ty3), aclDestroyTensor(te3);
    free(buf);
}

/* ---- phase-1 rules ---- */
static float g_xbuf[4096], g_obuf[4096];
static int32_t g_ibuf[4096];
static unsigned char g_fbuf[64];

static aclnnStatus v1(const aclTensor *x, const aclTensor *f, int64_t k, const aclTensor *y, const aclTensor *e,
                      const aclTensor *r) {
    uint64_t ws;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(x, f, k, y, e, r, &ws, &ex);
    if (rc == ACLNN_SUCCESS) aclDestroyAclOpExecutor(ex);
    return rc;
}
static aclnnStatus v2(const aclTensor *x, const aclTensor *f, int64_t k, int64_t renorm, bool flag,
                      const aclTensor *y, const aclTensor *e, const aclTensor *s) {
    uint64_t ws;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize(x, f, k, renorm, flag, y, e, s, &ws, &ex);
    if (rc == ACLNN_SUCCESS) aclDestroyAclOpExecutor(ex);
    return rc;
}
/* every tensor the rules make, destroyed at the end */
static aclTensor *g_vt[256];
static int g_nvt;
static aclTensor *keep(aclTensor *t) {
    if (g_nvt < 256) g_vt[g_nvt++] = t;
    return t;
}
static aclTensor *T2(int64_t a, int64_t b, aclDataType dt) {
    int64_t d[2] = {a, b};
    void *p = dt == ACL_INT32 || dt == ACL_INT64 ? (void *)g_ibuf : dt == ACL_BOOL ? (void *)g_fbuf : (void *)g_obuf;
    return keep(mk(2, d, dt, p));
}
static aclTensor *T1(int64_t a, aclDataType dt) {
    int64_t d[1] = {a};
    return keep(mk(1, d, dt, dt == ACL_BOOL ? (void *)g_fbuf : (void *)g_xbuf));
}
static aclTensor *T3(int64_t a, int64_t b, int64_t c, aclDataType dt) {
    int64_t d[3] = {a, b, c};
    return keep(mk(3, d, dt, dt == ACL_INT32 ? (void *)g_ibuf : (void *)g_obuf));
}

#define EXPECT(call, want, word)                                                                            \
    do {                                                                                                    \
        aclnnStatus got_ = (call);                                                                          \
        const char *m_ = aclGetRecentErrMsg();                                                              \
        CHECK(got_ == (want), "%s: got %d, want %d (%s)", #call, got_, (want), m_ ? m_ : "");               \
        if (got_ != ACLNN_SUCCESS) CHECK(m_ && strstr(m_, word), "%s: message '%s' lacks '%s'", #call, m_ ? m_ : "", word); \
    } while (0)

static void validation(void) {
    const int NP = ACLNN_ERR_PARAM_NULLPTR, IV = ACLNN_ERR_PARAM_INVALID, TL = ACLNN_ERR_INNER_TILING_ERROR;
    aclTensor *x = T2(4, 6, ACL_FLOAT), *y = T2(4, 2, ACL_FLOAT), *e = T2(4, 2, ACL_INT32), *r = T2(4, 2, ACL_INT32);
    aclTensor *f = T1(4, ACL_BOOL), *sm = T2(4, 6, ACL_FLOAT);
    uint64_t ws;
    aclOpExecutor *ex;
    EXPECT(v1(x, NULL, 2, y, e, r), 0, "");
    EXPECT(v1(x, f, 2, y, e, r), 0, "");
    /* 161001 */
    EXPECT(v1(NULL, f, 2, y, e, r), NP, "x");
    EXPECT(v1(x, f, 2, NULL, e, r), NP, "yOut");
    EXPECT(v1(x, f, 2, y, NULL, r), NP, "expertIdxOut");
    EXPECT(v1(x, f, 2, y, e, NULL), NP, "rowIdxOut");
    EXPECT(aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(x, f, 2, y, e, r, NULL, &ex), NP, "workspaceSize");
    EXPECT(aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(x, f, 2, y, e, r, &ws, NULL), NP, "executor");
    EXPECT(v2(NULL, f, 2, 0, false, y, e, NULL), NP, "x");
    EXPECT(v2(x, f, 2, 0, false, NULL, e, NULL), NP, "yOut");
    EXPECT(v2(x, f, 2, 0, false, y, NULL, NULL), NP, "expertIdxOut");
    EXPECT(v2(x, f, 2, 0, true, y, e, sm), 0, "");
    EXPECT(v2(x, f, 2, 1, false, y, e, NULL), 0, "");
    /* 161002: dtypes and formats */
    aclTensor *xi = T2(4, 6, ACL_INT32), *yh = T2(4, 2, ACL_FLOAT16), *e64 = T2(4, 2, ACL_INT64),
              *fi = T1(4, ACL_INT32), *smh = T2(4, 6, ACL_FLOAT16), *xh = T2(4, 6, ACL_FLOAT16);
    EXPECT(v1(xi, f, 2, y, e, r), IV, "x dtype");
    EXPECT(v1(x, f, 2, yh, e, r), IV, "yOut dtype");
    EXPECT(v1(xh, f, 2, yh, e, r), 0, "");
    EXPECT(v1(x, f, 2, y, e64, r), IV, "expertIdxOut dtype");
    EXPECT(v1(x, f, 2, y, e, e64), IV, "rowIdxOut dtype");
    EXPECT(v1(x, fi, 2, y, e, r), IV, "finishedOptional dtype");
    EXPECT(v2(x, f, 2, 0, true, y, e, smh), IV, "softmaxResultOutOptional dtype");
    EXPECT(v2(x, f, 2, 0, false, yh, e, NULL), IV, "yOut dtype");
    int64_t od[2] = {4, 2}, ost[2] = {1, 4};
    keep(aclCreateTensor(od, 2, ACL_FLOAT, ost, 0, ACL_FORMAT_ND, od, 2, g_obuf));
    aclTensor *ync = g_vt[g_nvt - 1];
    EXPECT(v1(x, f, 2, ync, e, r), IV, "contiguous");
    int64_t xd[2] = {4, 6};
    aclTensor *xnc = keep(aclCreateTensor(xd, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_NCHW, xd, 2, g_xbuf));
    EXPECT(v1(xnc, f, 2, y, e, r), IV, "format");
    /* 561002, V1 in GetShapeAttrsInfo's order */
    aclTensor *x1 = T1(6, ACL_FLOAT), *x0 = T2(4, 0, ACL_FLOAT), *f2 = T2(4, 1, ACL_BOOL), *f5 = T1(5, ACL_BOOL);
    aclTensor *y3 = T3(4, 1, 2, ACL_FLOAT), *y5 = T2(5, 2, ACL_FLOAT), *y3k = T2(4, 3, ACL_FLOAT);
    EXPECT(v1(x1, NULL, 2, T1(2, ACL_FLOAT), T1(2, ACL_INT32), T1(2, ACL_INT32)), TL, "2-D or 3-D");
    EXPECT(v1(x0, NULL, 1, T2(4, 1, ACL_FLOAT), T2(4, 1, ACL_INT32), T2(4, 1, ACL_INT32)), TL, "zero");
    EXPECT(v1(x, f2, 2, y, e, r), TL, "finishedOptional");
    EXPECT(v1(x, f5, 2, y, e, r), TL, "finishedOptional");
    EXPECT(v1(x, f, 2, y3, e, r), TL, "yOut");
    EXPECT(v1(x, f, 2, y5, e, r), TL, "yOut");
    EXPECT(v1(x, f, 2, y, T2(5, 2, ACL_INT32), r), TL, "expertIdxOut");
    EXPECT(v1(x, f, 2, y, e, T2(3, 2, ACL_INT32)), TL, "rowIdxOut");
    EXPECT(v1(x, f, 0, y, e, r), TL, "k must be in [1, 6]");
    EXPECT(v1(x, f, -1, y, e, r), TL, "k must be");
    EXPECT(v1(x, f, 7, y, e, r), TL, "k must be");
    EXPECT(v1(x, f, 3, y3k, e, r), TL, "expertIdxOut last dim"); /* moefr: outputs' last dim == k */
    EXPECT(v1(x, f, 2, y3k, e, r), TL, "yOut last dim");
    /* k > 1024, E > 2048 (Ascend 950), V1 */
    aclTensor *xw = T2(1, 2049, ACL_FLOAT), *yw = T2(1, 1025, ACL_FLOAT), *ew = T2(1, 1025, ACL_INT32),
              *y1 = T2(1, 1, ACL_FLOAT), *e1 = T2(1, 1, ACL_INT32);
    EXPECT(v1(xw, NULL, 1025, yw, ew, ew), TL, "k must be <= 1024");
    EXPECT(v1(xw, NULL, 1, y1, e1, e1), g_a2 ? 0 : TL, "2048");
    EXPECT(v2(xw, NULL, 1, 0, false, y1, e1, NULL), 0, "");
    /* 3-D x: dim 1 checked; finished 2-D */
    aclTensor *x3 = T3(2, 3, 5, ACL_FLOAT), *o3 = T3(2, 3, 2, ACL_FLOAT), *i3 = T3(2, 3, 2, ACL_INT32);
    aclTensor *f3 = T2(2, 3, ACL_BOOL), *f3b = T2(2, 4, ACL_BOOL);
    EXPECT(v1(x3, f3, 2, o3, i3, i3), 0, "");
    EXPECT(v1(x3, f3b, 2, o3, i3, i3), TL, "finishedOptional");
    EXPECT(v1(x3, f3, 2, T3(2, 4, 2, ACL_FLOAT), i3, i3), TL, "yOut dim 1");
    /* 561002, V2 */
    EXPECT(v2(x1, NULL, 2, 0, false, T1(2, ACL_FLOAT), T1(2, ACL_INT32), NULL), TL, "2-D or 3-D");
    EXPECT(v2(x0, NULL, 1, 0, false, T2(4, 1, ACL_FLOAT), T2(4, 1, ACL_INT32), NULL), TL, "zero");
    EXPECT(v2(x, f5, 2, 0, false, y, e, NULL), TL, "finishedOptional");
    EXPECT(v2(x, f, 7, 0, false, y, e, NULL), TL, "k must be");
    EXPECT(v2(x, f, 2, 0, false, y5, e, NULL), TL, "yOut dim 0");
    EXPECT(v2(x, f, 3, 0, false, y3k, T2(4, 3, ACL_INT32), NULL), 0, "");
    EXPECT(v2(x, f, 2, 0, false, y3k, e, NULL), TL, "yOut last dim");
    EXPECT(v2(x, f, 2, 0, false, y, T2(4, 3, ACL_INT32), NULL), TL, "expertIdxOut last dim");
    EXPECT(v2(x, f, 2, 2, false, y, e, NULL), TL, "renorm");
    EXPECT(v2(x, f, 2, -1, false, y, e, NULL), TL, "renorm");
    EXPECT(v2(x, f, 2, 0, true, y, e, NULL), TL, "softmaxResultOutOptional is NULL");
    EXPECT(v2(x, f, 2, 0, true, y, e, T2(4, 5, ACL_FLOAT)), TL, "softmaxResultOutOptional last dim");
    EXPECT(v2(x, f, 2, 0, true, y, e, T2(3, 6, ACL_FLOAT)), TL, "softmaxResultOutOptional dim 0");
    EXPECT(v2(x, f, 2, 1, true, y, e, T2(3, 6, ACL_FLOAT)), 0, ""); /* renorm 1: the softmax output is ignored */
    EXPECT(v2(x, f, 2, 0, false, y, e, T2(3, 6, ACL_FLOAT)), 0, "");
    EXPECT(v2(xw, NULL, 1025, 0, false, yw, ew, NULL), TL, "k must be <= 1024");
    /* the empty-output shortcut comes before tiling: k = 0 with (4, 0) outputs */
    EXPECT(v1(x, f, 0, T2(4, 0, ACL_FLOAT), T2(4, 0, ACL_INT32), T2(4, 0, ACL_INT32)), 0, "");
    /* phase 2: a NULL executor */
    EXPECT(aclnnMoeGatingTopKSoftmax(NULL, 0, NULL, NULL), NP, "executor");
    EXPECT(aclnnMoeGatingTopKSoftmaxV2(NULL, 0, NULL, NULL), NP, "executor");
    for (int i = 0; i < g_nvt; i++) aclDestroyTensor(g_vt[i]);
    g_nvt = 0;
}

/* ---- --hash ---- */
static uint64_t fnv(const void *p, size_t n, uint64_t h) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
static int hash_mode(void) {
    tu_state = 0x1234567;
    const int64_t Es[4] = {37, 256, 515, 2100};
    int nprob = 0;
    for (int d = 0; d < 3; d++)
        for (int ei = 0; ei < 4; ei++)
            for (int mode = 0; mode < 3; mode++) {
                gcase c = {mode == 2, mode == 2, mode == 1, DTS[d], 2, 1, 301, Es[ei], ei == 1 ? 8 : 5, M_CONT,
                           1, ei == 2};
                if (mode == 1) c.v2 = 1, c.smflag = 1;
                if (Es[ei] > 2048) c.v2 = 1; /* V1 takes E <= 2048 on Ascend 950 */
                const int64_t R = c.S, E = c.E, k = c.k;
                double *x = malloc(sizeof *x * (size_t)(R * E));
                unsigned char *fin = malloc((size_t)R);
                for (int64_t i = 0; i < R * E; i++) x[i] = gen_logit(ei == 3 ? M_WIDE : M_CONT, c.dt);
                for (int64_t r = 0; r < R; r++) fin[r] = (unsigned char)(r % 7 == 3);
                const size_t es = esize(c.dt);
                unsigned char *y = calloc((size_t)(R * k), es);
                int32_t *eidx = calloc((size_t)(R * k), 4), *ridx = c.v2 ? NULL : calloc((size_t)(R * k), 4);
                float *sm = c.smflag ? calloc((size_t)(R * E), 4) : NULL;
                if (run_case(&c, x, fin, y, eidx, ridx, sm, NULL) != ACLNN_SUCCESS) {
                    printf("hash problem %d failed: %s\n", nprob, aclGetRecentErrMsg());
                    return 1;
                }
                uint64_t h = fnv(y, (size_t)(R * k) * es, 0xcbf29ce484222325ull);
                h = fnv(eidx, (size_t)(R * k) * 4, h);
                if (ridx) h = fnv(ridx, (size_t)(R * k) * 4, h);
                if (sm) h = fnv(sm, (size_t)(R * E) * 4, h);
                printf("gating problem %d dt=%d E=%lld mode=%d %016llx\n", nprob++, (int)c.dt, (long long)E, mode,
                       (unsigned long long)h);
                free(x), free(fin), free(y), free(eidx), free(ridx), free(sm);
            }
    return 0;
}

int main(int argc, char **argv) {
    const char *soc = getenv("MOEFR_SOC");
    g_a2 = soc && !strcmp(soc, "ascend910b");
    if (argc > 1 && !strcmp(argv[1], "--hash")) return hash_mode();
    tu_seed("test_gating_top_k_softmax");
    hand_case();
    empty_cases();
    validation();
    random_cases();
    printf("test_gating_top_k_softmax: %d cases, %s rules, largest fp32 error %.1f x 2^-24 relative "
           "(%.1f when the logits span <= 16), %d failures\n",
           g_cases, g_a2 ? "A2/A3" : "Ascend 950", g_max_err, g_max_err256, g_fail);
    return g_fail ? 1 : 0;
}
