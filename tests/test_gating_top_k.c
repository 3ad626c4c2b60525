/* test_gating_top_k.c - aclnnMoeGatingTopK and aclnnMoeFusedTopk against a
 * float64 oracle written from CANN's documented semantics (the aclnn docs'
 * formulas, read with the kernels' details: y is the norm value without the
 * bias; GatingTopK renormalises only with the sigmoid; FusedTopk keeps the
 * unkept groups' experts at b * 0; ties go to the lower group / expert).
 *
 * Inputs: fp16, bf16, fp32; rows and experts not multiples of 8; strided x
 * and bias / addNum; sigmoid and softmax; both group modes, topN up to 5;
 * outFlag; isNorm; mapping; poisoned outputs with guard bytes; empty
 * problems; phase-1 rules with their codes under both rule sets
 * (MOEFR_SOC=ascend910b switches the expectations); the mapping's phase-2
 * bound with the outputs untouched.
 *
 * Two input kinds. Grid: s values near 8^-j (j = 1..4; the sigmoid's logit
 * of that, or the softmax's -j ln 8) plus one bias for all experts (0 or
 * 0.5, sigmoid only), so equal values are exact ties in any arithmetic and
 * sums of up to seven values differ (base-8 digits) far more than fp32's
 * errors: the picks must equal the oracle's exactly, tie rules included,
 * unless the oracle sees a near tie among the group scores. That happens
 * only when FusedTopk's group score sums eight or more values (eight of one
 * value equal one of the next in exact arithmetic, and fp32 orders such
 * sums by rounding). A per-expert bias would let that happen for any topn,
 * so the grid has none. Continuous: random logits and a small bias; the picks
 * must equal the oracle's unless the oracle sees a near tie at a decision
 * (then only the y of moefr's own picks is checked).
 *
 * Tolerance of y and of the norm output (fp32 result vs float64):
 *   |got - ref| <= |ref| * 2^-24 * (2*D + E/8 + k + 32) + 2^-140 + ulp_out
 * D: the logits' spread (softmax) or 0 (sigmoid); ulp_out one ulp of y's
 * dtype (0 for fp32).
 *
 * Usage: test_gating_top_k          the tests
 *        test_gating_top_k --hash   FNV-1a hashes of fixed problems'
 *           outputs (gating_bits.cmake compares them across MOEFR_ISA and
 *           thread counts) */
#include <math.h>

#include "aclnnop/aclnn_moe_fused_topk.h"
#include "aclnnop/aclnn_moe_gating_top_k.h"
#define TU_COUNT_FAILURES
#include "testutil.h"

static int g_a2;

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
/* v must be representable in dt (round_to first) */
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
    } else if (isnan(v) || isinf(v)) {
        h = (uint16_t)((u >> 16 & 0x8000) | (isnan(v) ? 0x7E00 : 0x7C00));
    } else {
        int s = u >> 31, e = (int)((u >> 23) & 255) - 127;
        uint32_t m = u & 0x7FFFFF;
        if (f == 0) h = (uint16_t)(s << 15);
        else if (e >= -14) h = (uint16_t)((s << 15) | ((e + 15) << 10) | (m >> 13));
        else h = (uint16_t)((s << 15) | (uint16_t)ldexp(fabs(v), 24));
    }
    memcpy(p, &h, 2);
}
static double round_to(double v, aclDataType dt) {
    if (dt == ACL_FLOAT) return (float)v;
    if (v == 0 || !isfinite(v)) return v;
    int bits = dt == ACL_BF16 ? 8 : 11, e;
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
    if (dt == ACL_FLOAT16 && e < -13) e = -13;
    if (dt == ACL_BF16 && e < -125) e = -125;
    return ldexp(1, e - (dt == ACL_BF16 ? 8 : 11));
}

/* ---- the oracle ---- */
typedef struct prob {
    int fused;
    aclDataType dt;
    int64_t R, E, k, G, kG, mode; /* mode: GatingTopK 0 max / 1 top-2; topn for fused */
    int64_t topn;
    int norm, has_bias, out_flag, is_norm, mapping;
    double scale, eps;
    int64_t tdim;
} prob;

typedef struct cand {
    double v;
    int64_t i;
} cand;
static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}
/* Sorts a[0..n) by (value descending, index ascending); *near when a
 * decision among the first `need` (the order inside them, and the boundary
 * with the next) is within rel of a tie between different values. Not only
 * neighbours: behind an exact tie (a[i] == a[i + 1]) the next different
 * value may be within rel of both (CI seed 1796242091648509: groups 4 and
 * 14 tied exactly at the kG boundary, group 1 1.3e-8 below them). */
static void sort_cands(cand *a, int64_t n, int64_t need, double rel, int *near) {
    qsort(a, (size_t)n, sizeof *a, cand_cmp);
    for (int64_t i = 0; i < need && i + 1 < n; i++)
        for (int64_t j = i + 1; j < n; j++) {
            const double d = a[i].v - a[j].v, m = fmax(fabs(a[i].v), fabs(a[j].v));
            if (d > rel * (m + 1e-30)) break; /* sorted: every later value is further away */
            if (d != 0) *near = 1;
        }
}

/* One row: x[E] (values exact in the dtype), bias[E] or NULL; picks[k],
 * y[k], s[E]. Returns the near-tie flags: bit 0 among the experts, bit 1
 * among the group scores. */
static int ref_row(const prob *p, const double *x, const double *bias, int64_t *pick, double *y, double *s) {
    const int64_t E = p->E, P = E / p->G;
    /* what can reorder two values in fp32: the per-element errors (exp, and
     * x - max for the softmax: D = the spread), the bias addition and the
     * group sums, with a margin of 8 */
    double D = 0;
    if (p->norm == 0) {
        double lo = x[0], hi = x[0];
        for (int64_t j = 1; j < E; j++) lo = fmin(lo, x[j]), hi = fmax(hi, x[j]);
        D = hi - lo;
    }
    const double rel = ldexp(8 * (2 * D + 16), -24);
    int near = 0, near_g = 0;
    if (p->norm == 1) {
        for (int64_t j = 0; j < E; j++) s[j] = 1 / (1 + exp(-x[j]));
    } else {
        double m = x[0], sum = 0;
        for (int64_t j = 1; j < E; j++) m = x[j] > m ? x[j] : m;
        for (int64_t j = 0; j < E; j++) sum += s[j] = exp(x[j] - m);
        for (int64_t j = 0; j < E; j++) s[j] /= sum;
    }
    double *b = malloc(sizeof *b * (size_t)E);
    for (int64_t j = 0; j < E; j++) b[j] = s[j] + (bias ? bias[j] : 0);
    cand *c = malloc(sizeof *c * (size_t)E);
    int64_t n = 0;
    const int all = p->fused ? p->kG == p->G : (p->kG == p->G || p->G == E);
    if (all) {
        for (int64_t j = 0; j < E; j++) c[n].v = b[j], c[n].i = j, n++;
    } else {
        cand *g = malloc(sizeof *g * (size_t)p->G), *w = malloc(sizeof *w * (size_t)P);
        const int64_t tn = p->fused ? p->topn : p->mode == 1 ? 2 : 1;
        for (int64_t gi = 0; gi < p->G; gi++) {
            for (int64_t j = 0; j < P; j++) w[j].v = b[gi * P + j], w[j].i = j;
            qsort(w, (size_t)P, sizeof *w, cand_cmp);
            double sc = 0;
            for (int64_t j = 0; j < tn; j++) sc += w[j].v;
            g[gi].v = sc, g[gi].i = gi;
        }
        sort_cands(g, p->G, p->kG, rel, &near_g);
        char *kept = calloc((size_t)p->G, 1);
        for (int64_t i = 0; i < p->kG; i++) kept[g[i].i] = 1;
        for (int64_t j = 0; j < E; j++) {
            if (kept[j / P]) c[n].v = b[j], c[n].i = j, n++;
            else if (p->fused) c[n].v = 0.0 * b[j], c[n].i = j, n++;
        }
        free(kept), free(g), free(w);
    }
    sort_cands(c, n, p->k, rel, &near);
    double sum = 0;
    for (int64_t i = 0; i < p->k; i++) pick[i] = c[i].i, sum += y[i] = s[c[i].i];
    for (int64_t i = 0; i < p->k; i++) {
        if (!p->fused) y[i] = (p->norm == 1 ? y[i] / (sum + p->eps) : y[i]) * p->scale;
        else if (p->is_norm) y[i] = y[i] / sum * p->scale;
    }
    free(b), free(c);
    return near | near_g << 1;
}

/* ---- running one problem ---- */
typedef struct bufs {
    unsigned char *y;  /* R*k of ydt, poisoned + guard */
    int32_t *e;        /* R*k */
    float *out;        /* R*E (GatingTopK) */
} bufs;

/* x values (R*E doubles), bias (E) or NULL, mapping (E) and table (E*tdim);
 * strided: x, bias and the outputs of FusedTopk through strided views. */
static aclnnStatus run(const prob *p, const double *xv, const double *bv, const int32_t *mnum, const int32_t *mtab,
                       int strided, bufs *o, uint64_t *wsz_out) {
    const int64_t R = p->R, E = p->E, k = p->k;
    const size_t es = esize(p->dt);
    unsigned char *xb = malloc((size_t)(R * E) * es + 1), *bb = malloc((size_t)E * es + 1);
    for (int64_t i = 0; i < R * E; i++) double_to_bits(xv[i], xb + i * (int64_t)es, p->dt);
    if (bv)
        for (int64_t i = 0; i < E; i++) double_to_bits(bv[i], bb + i * (int64_t)es, p->dt);
    int64_t cs = strided ? 2 : 1, rs = E * cs + (strided ? 3 : 0);
    tu_owned xt = tu_make_view(xb, 2, R, E, p->dt, es, strided ? 1 : 0, rs, cs);
    tu_owned bt = {NULL, NULL};
    if (bv) bt = tu_make_view(bb, 1, E, 1, p->dt, es, strided ? 2 : 0, strided ? 3 : 1, 0);
    tu_owned mn = {NULL, NULL}, mt = {NULL, NULL};
    if (mnum) {
        mn = tu_make_view(mnum, 1, E, 1, ACL_INT32, 4, strided ? 1 : 0, strided ? 2 : 1, 0);
        mt = tu_make_view(mtab, 2, E, p->tdim, ACL_INT32, 4, 0, strided ? p->tdim + 1 : p->tdim, 1);
    }
    aclOpExecutor *ex = NULL;
    uint64_t wsz = 0;
    aclnnStatus rc;
    aclTensor *ty, *te, *to = NULL;
    if (!p->fused) {
        ty = tu_mk(2, R, k, 0, p->dt, o->y);
        te = tu_mk(2, R, k, 0, ACL_INT32, o->e);
        to = tu_mk(2, R, E, 0, ACL_FLOAT, o->out);
        rc = aclnnMoeGatingTopKGetWorkspaceSize(xt.t, bt.t, k, p->kG, p->G, p->mode, 0, p->norm, p->out_flag != 0,
                                                p->scale, p->eps, ty, te, to, &wsz, &ex);
    } else {
        /* strided outputs: y and indices column-major (CANN's op_api copies views) */
        const int64_t d[2] = {R, k}, st[2] = {strided ? 1 : k, strided ? R : 1};
        ty = aclCreateTensor(d, 2, ACL_FLOAT, st, 0, ACL_FORMAT_ND, d, 2, o->y);
        te = aclCreateTensor(d, 2, ACL_INT32, st, 0, ACL_FORMAT_ND, d, 2, o->e);
        rc = aclnnMoeFusedTopkGetWorkspaceSize(xt.t, bt.t, mn.t, mt.t, (uint32_t)p->G, (uint32_t)p->kG,
                                               (uint32_t)p->topn, (uint32_t)k, 0, p->is_norm != 0, (float)p->scale,
                                               p->mapping != 0, ty, te, &wsz, &ex);
    }
    if (rc == ACLNN_SUCCESS) {
        void *ws = wsz ? malloc(wsz) : NULL;
        rc = p->fused ? aclnnMoeFusedTopk(ws, wsz, ex, NULL) : aclnnMoeGatingTopK(ws, wsz, ex, NULL);
        free(ws);
    }
    if (wsz_out) *wsz_out = wsz;
    tu_destroy(ty), tu_destroy(te), tu_destroy(to);
    tu_free(&xt), tu_free(&bt), tu_free(&mn), tu_free(&mt);
    free(xb), free(bb);
    return rc;
}

static aclDataType ydt_of(const prob *p) { return p->fused ? ACL_FLOAT : p->dt; }
/* element (r, i) of the outputs as laid out by run() */
static int64_t at(const prob *p, int strided, int64_t r, int64_t i) {
    return p->fused && strided ? i * p->R + r : r * p->k + i;
}

static double g_max_err;

/* Checks one problem against the oracle. grid: exact picks required. */
static void check(const prob *p, const double *x, const double *bias, const int32_t *mnum, const int32_t *mtab,
                  int strided, int grid) {
    const int64_t R = p->R, E = p->E, k = p->k;
    const aclDataType ydt = ydt_of(p);
    const size_t yes = esize(ydt);
    bufs o;
    o.y = tu_poisoned((size_t)(R * k) * yes);
    o.e = (int32_t *)tu_poisoned((size_t)(R * k) * 4);
    o.out = (float *)tu_poisoned((size_t)(R * E) * 4);
    g_cases++;
    aclnnStatus rc = run(p, x, bias, mnum, mtab, strided, &o, NULL);
    CHECK(rc == ACLNN_SUCCESS, "case %d: status %d (%s)", g_cases, rc, tu_msg());
    if (rc != ACLNN_SUCCESS) goto done;
    CHECK(tu_guard_ok(o.y, (size_t)(R * k) * yes) && tu_guard_ok((unsigned char *)o.e, (size_t)(R * k) * 4),
          "case %d: wrote past the outputs", g_cases);
    if (!p->out_flag) CHECK(tu_all_poison((unsigned char *)o.out, (size_t)(R * E) * 4 + TU_GUARD), "case %d: outOut written without outFlag", g_cases);
    int64_t *pk = malloc(sizeof *pk * (size_t)k);
    double *ry = malloc(sizeof *ry * (size_t)k), *s = malloc(sizeof *s * (size_t)E);
    int bad = 0;
    for (int64_t r = 0; r < R && bad < 5; r++) {
        const double *xr = x + r * E;
        const int ties = ref_row(p, xr, bias, pk, ry, s);
        /* Grid values keep single experts apart, but a group score sums up
         * to topn of them: with the grid's 8:1 steps, 8 of one value can
         * equal one of the next, so two groups' scores can tie in exact
         * arithmetic with different operands, and fp32 then orders them by
         * rounding. A group-level near tie is a tie on the grid too. */
        const int near = grid ? (ties & 2) != 0 : ties != 0;
        double D = 0;
        if (p->norm == 0) {
            double lo = xr[0], hi = xr[0];
            for (int64_t j = 1; j < E; j++) lo = fmin(lo, xr[j]), hi = fmax(hi, xr[j]);
            D = hi - lo;
        }
        const double relu = ldexp(2 * D + (double)E / 8 + (double)k + 32, -24);
        /* moefr's picks (raw expert ids; with mapping, the logical ids) */
        int64_t got[2048];
        for (int64_t i = 0; i < k; i++) {
            int32_t v;
            memcpy(&v, (unsigned char *)o.e + at(p, strided, r, i) * 4, 4);
            got[i] = v;
        }
        if (p->mapping) { /* map the oracle's picks; compare ids */
            for (int64_t i = 0; i < k; i++) {
                const int64_t e = pk[i];
                const uint32_t m = (uint32_t)mnum[e];
                const int64_t off = m == 0 ? 0 : (int64_t)((uint64_t)r % m);
                pk[i] = mtab[e * p->tdim + off];
            }
        }
        int same = 1;
        for (int64_t i = 0; i < k; i++) same &= got[i] == pk[i];
        if (!near) {
            CHECK(same, "case %d row %lld: picks differ from the oracle (first %lld vs %lld)%s", g_cases, (long long)r,
                  (long long)got[0], (long long)pk[0], ties ? " (near tie on the grid)" : "");
            if (!same) {
                bad++;
                printf("  (fused %d dt %d R %lld E %lld k %lld G %lld kG %lld mode %lld topn %lld norm %d bias %d map %d strided %d"
                       " grid %d ties %d)\n",
                       p->fused, (int)p->dt, (long long)R, (long long)E, (long long)k, (long long)p->G,
                       (long long)p->kG, (long long)p->mode, (long long)p->topn, p->norm, p->has_bias, p->mapping,
                       strided, grid, ties);
                for (int64_t i = 0; i < k; i++) printf("  %lld/%lld", (long long)got[i], (long long)pk[i]);
                printf("\n");
                if (getenv("GT_DEBUG"))
                    for (int64_t j = 0; j < E; j++) printf("   b[%lld] = %.9g (s %.9g)\n", (long long)j, s[j] + (bias ? bias[j] : 0), s[j]);
            }
        } else if (!same && p->mapping) { /* a near tie, mapped ids: nothing more to compare */
            continue;
        } else if (!same) { /* a near tie: y of moefr's own picks */
            double sum = 0;
            for (int64_t i = 0; i < k; i++) {
                CHECK(got[i] >= 0 && got[i] < E, "case %d: pick %lld out of range", g_cases, (long long)got[i]);
                if (got[i] < 0 || got[i] >= E) got[i] = 0;
                sum += ry[i] = s[got[i]];
            }
            for (int64_t i = 0; i < k; i++) {
                if (!p->fused) ry[i] = (p->norm == 1 ? ry[i] / (sum + p->eps) : ry[i]) * p->scale;
                else if (p->is_norm) ry[i] = ry[i] / sum * p->scale;
            }
        }
        for (int64_t i = 0; i < k; i++) {
            const double g = bits_to_double(o.y + at(p, strided, r, i) * (int64_t)yes, ydt), ref = ry[i];
            const double tol = fabs(ref) * relu + ldexp(1, -140) + ulp_out(ref, ydt);
            if (ydt == ACL_FLOAT && fabs(ref) > 1e-30) g_max_err = fmax(g_max_err, fabs(g - ref) / fabs(ref) / ldexp(1, -24));
            CHECK(fabs(g - ref) <= tol, "case %d row %lld y[%lld] = %.9g, want %.9g (tol %.3g)", g_cases, (long long)r,
                  (long long)i, g, ref, tol);
            if (!(fabs(g - ref) <= tol)) bad++;
        }
        if (p->out_flag)
            for (int64_t j = 0; j < E; j++) {
                const double g = o.out[r * E + j], ref = s[j];
                CHECK(fabs(g - ref) <= fabs(ref) * relu + ldexp(1, -140), "case %d row %lld out[%lld] = %.9g, want %.9g",
                      g_cases, (long long)r, (long long)j, g, ref);
            }
    }
    free(pk), free(ry), free(s);
done:
    free(o.y), free(o.e), free(o.out);
}

/* ---- generators ---- */
static const aclDataType DTS[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
static double gen_x(const prob *p, int grid) {
    if (grid) {
        const int j = (int)tu_int(1, 4);
        const double v = p->norm == 1 ? log(ldexp(1, -3 * j) / (1 - ldexp(1, -3 * j))) : -j * log(8.0);
        return round_to(v, p->dt);
    }
    return round_to((tu_unit() * 2 - 1) * (tu_chance(20) ? 12 : 4), p->dt);
}
/* grid: one integer for the whole bias (a per-expert integer would let two
 * groups' sums tie in exact arithmetic with different operands, which fp32
 * then orders by rounding) */
static double g_grid_bias;
static double gen_bias(const prob *p, int grid) {
    return grid ? (p->norm == 1 ? g_grid_bias : 0.0) : round_to((tu_unit() * 2 - 1) * 0.1, p->dt);
}

/* a valid random GatingTopK / FusedTopk problem */
static void random_problem(prob *p, int fused) {
    memset(p, 0, sizeof *p);
    p->fused = fused;
    p->dt = DTS[tu_below(3)];
    p->R = tu_int(1, 40);
    static const int64_t Gs[] = {1, 2, 3, 4, 5, 8, 16};
    for (;;) {
        p->G = Gs[tu_below(7)];
        const int64_t P = tu_chance(30) ? tu_int(1, 40) : tu_int(2, 9) * (tu_chance(50) ? 1 : 4) * (tu_chance(10) ? 4 : 1);
        p->E = p->G * P;
        if (p->E < 1 || p->E > (fused ? 1024 : 2048)) continue;
        p->kG = tu_int(1, p->G);
        if (fused) {
            p->topn = tu_chance(10) ? tu_int(1, P) : tu_int(1, P < 5 ? P : 5); /* > 32: the heap */
            p->k = tu_chance(15) ? tu_int(1, p->E < 70 ? p->E : 70) : tu_int(1, p->E < 12 ? p->E : 12);
        } else {
            p->mode = P >= 2 ? tu_below(2) : 0;
            const int64_t lim = p->kG * P;
            p->k = tu_chance(15) ? tu_int(1, lim < 70 ? lim : 70) : tu_int(1, lim < 12 ? lim : 12);
            if (p->G == p->E && p->kG < p->k) continue;
            int64_t Gc = p->G, Pc = P;
            if (p->kG == p->G || p->G == p->E) Gc = 1, Pc = p->E;
            if (Gc * ((Pc + 31) / 32 * 32) > 2048) continue;
            if (!g_a2 && p->G != 1 && p->G != p->E && p->kG != p->G && p->G * ((P + 31) / 32 * 32) > 2048) continue;
        }
        break;
    }
    p->norm = fused ? 1 : (int)tu_below(2);
    p->has_bias = fused ? 1 : (int)tu_below(2);
    p->out_flag = fused ? 0 : (int)tu_below(2);
    p->is_norm = (int)tu_below(2);
    p->scale = tu_chance(50) ? 1.0 : 2.5;
    p->eps = tu_chance(30) ? 0.125 : 1e-20;
    if (fused && tu_chance(40)) p->mapping = 1, p->tdim = tu_int(1, 6);
}

static void random_cases(void) {
    for (int it = 0; it < 400; it++) {
        prob p;
        random_problem(&p, it % 2);
        const int grid = tu_chance(60), strided = tu_chance(40);
        g_grid_bias = tu_chance(50) ? 0.5 : 0.0;
        double *x = malloc(sizeof *x * (size_t)(p.R * p.E)), *b = malloc(sizeof *b * (size_t)p.E);
        for (int64_t i = 0; i < p.R * p.E; i++) x[i] = gen_x(&p, grid);
        for (int64_t i = 0; i < p.E; i++) b[i] = gen_bias(&p, grid);
        int32_t *mn = NULL, *mt = NULL;
        if (p.mapping) {
            mn = malloc(4 * (size_t)p.E), mt = malloc(4 * (size_t)(p.E * p.tdim));
            for (int64_t e = 0; e < p.E; e++) mn[e] = (int32_t)tu_int(0, p.tdim);
            for (int64_t i = 0; i < p.E * p.tdim; i++) mt[i] = (int32_t)tu_int(-5, 5000);
        }
        check(&p, x, p.has_bias ? b : NULL, mn, mt, strided, grid);
        free(x), free(b), free(mn), free(mt);
    }
}

/* ---- hand cases: ties, NaN, infinities, the DeepSeek-V3 shape ---- */
static void hand_cases(void) {
    /* all-equal rows: the lowest groups are kept and the lowest experts picked */
    prob p = {0, ACL_FLOAT, 2, 24, 5, 6, 2, 1, 0, 1, 1, 0, 0, 0, 1.0, 1e-20, 0};
    double x[2 * 24], b[24];
    for (int i = 0; i < 48; i++) x[i] = 0.5;
    for (int i = 0; i < 24; i++) b[i] = 0;
    check(&p, x, b, NULL, NULL, 0, 1);
    p.fused = 1, p.topn = 2, p.is_norm = 1;
    check(&p, x, b, NULL, NULL, 1, 1);
    /* explicit expectations: E = 8, G = 4 (P = 2), kG = 2, k = 3, sigmoid,
     * mode 1; group sums: g0 = .9+.1, g1 = .8+.7, g2 = .95+.0, g3 = .6+.6 ->
     * kept g1 (1.5) and g3 (1.2); picks 2 (.8), 3 (.7), 6 (.6, lower than 7) */
    {
        const double s8[8] = {0.9, 0.1, 0.8, 0.7, 0.95, 0.0001, 0.6, 0.6};
        double xs[8], bz[8] = {0};
        for (int j = 0; j < 8; j++) xs[j] = (float)log(s8[j] / (1 - s8[j]));
        prob q = {0, ACL_FLOAT, 1, 8, 3, 4, 2, 1, 0, 1, 1, 1, 0, 0, 2.0, 1e-20, 0};
        bufs o = {tu_poisoned(12), (int32_t *)tu_poisoned(12), (float *)tu_poisoned(32)};
        g_cases++;
        aclnnStatus rc = run(&q, xs, bz, NULL, NULL, 0, &o, NULL);
        CHECK(rc == 0 && o.e[0] == 2 && o.e[1] == 3 && o.e[2] == 6, "hand: picks %d %d %d (rc %d)", o.e[0], o.e[1],
              o.e[2], rc);
        float y[3];
        memcpy(y, o.y, 12);
        const double sum = 0.8 + 0.7 + 0.6;
        CHECK(fabs(y[0] - 0.8 / sum * 2) < 1e-6 && fabs(y[2] - 0.6 / sum * 2) < 1e-6, "hand: y %g %g %g", y[0], y[1], y[2]);
        CHECK(fabs(o.out[4] - 0.95) < 1e-6, "hand: out[4] = %g", o.out[4]);
        /* FusedTopk on the same scores, topN 1: group maxima .9, .8, .95, .6
         * -> kept g2, g0; the rest compete at 0: picks 4, 0, 1 */
        q.fused = 1, q.topn = 1, q.is_norm = 0, q.out_flag = 0;
        memset(o.e, 0, 12);
        rc = run(&q, xs, bz, NULL, NULL, 0, &o, NULL);
        CHECK(rc == 0 && o.e[0] == 4 && o.e[1] == 0 && o.e[2] == 1, "hand fused: picks %d %d %d (rc %d)", o.e[0],
              o.e[1], o.e[2], rc);
        /* negative addNum: unkept experts (b * 0 = 0) beat kept ones below 0 */
        double bn[8];
        for (int j = 0; j < 8; j++) bn[j] = -2;
        rc = run(&q, xs, bn, NULL, NULL, 0, &o, NULL);
        CHECK(rc == 0 && o.e[0] == 2 && o.e[1] == 3 && o.e[2] == 6, "hand fused negative: picks %d %d %d (rc %d)",
              o.e[0], o.e[1], o.e[2], rc);
        free(o.y), free(o.e), free(o.out);
    }
    /* NaN is the largest value; +-inf logits give 1 and 0 */
    {
        double xs[8] = {0, NAN, 1, -INFINITY, INFINITY, 2, -1, 0.5}, bz[8] = {0};
        prob q = {0, ACL_FLOAT, 1, 8, 3, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1.0, 1e-20, 0};
        bufs o = {tu_poisoned(12), (int32_t *)tu_poisoned(12), (float *)tu_poisoned(32)};
        g_cases++;
        aclnnStatus rc = run(&q, xs, bz, NULL, NULL, 0, &o, NULL);
        CHECK(rc == 0 && o.e[0] == 1 && o.e[1] == 4 && o.e[2] == 5, "NaN: picks %d %d %d", o.e[0], o.e[1], o.e[2]);
        CHECK(o.out[3] == 0.0f && o.out[4] == 1.0f && isnan(o.out[1]), "inf: out %g %g %g", o.out[3], o.out[4], o.out[1]);
        free(o.y), free(o.e), free(o.out);
    }
    /* DeepSeek-V3: 256 experts, 8 groups, kGroup 4, top-8, sigmoid, bias, mode 1, bf16 */
    {
        prob q = {0, ACL_BF16, 37, 256, 8, 8, 4, 1, 0, 1, 1, 1, 0, 0, 2.5, 1e-20, 0};
        double *xs = malloc(sizeof *xs * 37 * 256), bz[256];
        for (int i = 0; i < 37 * 256; i++) xs[i] = gen_x(&q, 0);
        for (int i = 0; i < 256; i++) bz[i] = gen_bias(&q, 0);
        check(&q, xs, bz, NULL, NULL, 1, 0);
        for (int i = 0; i < 37 * 256; i++) xs[i] = gen_x(&q, 1);
        for (int i = 0; i < 256; i++) bz[i] = gen_bias(&q, 1);
        check(&q, xs, bz, NULL, NULL, 0, 1);
        free(xs);
    }
}

/* ---- the mapping's bound: a lookup outside mappingTable's row ---- */
static void mapping_bound(void) {
    prob p = {1, ACL_FLOAT, 6, 8, 2, 2, 1, 0, 2, 1, 1, 0, 1, 1, 1.0, 0, 3};
    double x[48], b[8] = {0};
    for (int i = 0; i < 48; i++) x[i] = (double)(float)((i * 7 % 11) - 5) / 2;
    int32_t mn[8], mt[24];
    for (int i = 0; i < 24; i++) mt[i] = 100 + i;
    /* mappingNum 5 > 3 columns: rows 3 and 4 (r % 5 >= 3) would read outside */
    for (int e = 0; e < 8; e++) mn[e] = 5;
    bufs o = {tu_poisoned(48), (int32_t *)tu_poisoned(48), NULL};
    g_cases++;
    aclnnStatus rc = run(&p, x, b, mn, mt, 0, &o, NULL);
    CHECK(rc == ACLNN_ERR_PARAM_INVALID && tu_msg_has("mappingTable", NULL), "mapping bound: status %d (%s)", rc, tu_msg());
    CHECK(tu_all_poison(o.y, 48 + TU_GUARD) && tu_all_poison((unsigned char *)o.e, 48 + TU_GUARD),
          "mapping bound: outputs touched");
    /* 3 rows only: r % 5 < 3 always, so CANN reads inside: success */
    p.R = 3;
    rc = run(&p, x, b, mn, mt, 0, &o, NULL);
    CHECK(rc == ACLNN_SUCCESS, "mapping inside: status %d (%s)", rc, tu_msg());
    /* negative counts read as uint32 (huge): r % m = r */
    for (int e = 0; e < 8; e++) mn[e] = -1;
    check(&p, x, b, mn, mt, 1, 0);
    p.R = 6;
    rc = run(&p, x, b, mn, mt, 0, &o, NULL);
    CHECK(rc == ACLNN_ERR_PARAM_INVALID, "mapping negative: status %d", rc);
    free(o.y), free(o.e);
}

/* ---- phase 1 ---- */
static unsigned char g_buf[1 << 16];
static aclTensor *g_vt[256];
static int g_nvt;
static aclTensor *keep(aclTensor *t) {
    if (g_nvt < 256) g_vt[g_nvt++] = t;
    return t;
}
static aclTensor *T2(int64_t a, int64_t b, aclDataType dt) {
    int64_t d[2] = {a, b};
    return keep(tu_tensor(d, 2, dt, g_buf));
}
static aclTensor *T1(int64_t a, aclDataType dt) {
    int64_t d[1] = {a};
    return keep(tu_tensor(d, 1, dt, g_buf));
}
#define EXPECT(call, want, word)                                                                                   \
    do {                                                                                                           \
        uint64_t ws_ = 0;                                                                                          \
        aclOpExecutor *ex_ = NULL;                                                                                 \
        (void)ws_, (void)ex_;                                                                                      \
        aclnnStatus got_ = (call);                                                                                 \
        const char *m_ = aclGetRecentErrMsg();                                                                     \
        CHECK(got_ == (want), "line %d %s: got %d, want %d (%s)", __LINE__, #call, got_, (want), m_ ? m_ : "");    \
        if (got_ != ACLNN_SUCCESS)                                                                                 \
            CHECK(m_ && strstr(m_, word) && !strchr(m_, '\n'), "line %d: message '%s' lacks '%s'", __LINE__,       \
                  m_ ? m_ : "", word);                                                                             \
        else                                                                                                       \
            aclDestroyAclOpExecutor(ex_);                                                                          \
    } while (0)
#define GK(x, b, k, kg, g, mode, ren, norm, of, y, e, o) \
    aclnnMoeGatingTopKGetWorkspaceSize(x, b, k, kg, g, mode, ren, norm, of, 1.0, 1e-20, y, e, o, &ws_, &ex_)
#define FT(x, a, mn, mt, g, kg, tn, tk, map, y, i) \
    aclnnMoeFusedTopkGetWorkspaceSize(x, a, mn, mt, g, kg, tn, tk, 0, true, 1.0f, map, y, i, &ws_, &ex_)

static void validation(void) {
    const int NP = ACLNN_ERR_PARAM_NULLPTR, IV = ACLNN_ERR_PARAM_INVALID, TL = ACLNN_ERR_INNER_TILING_ERROR;
    const aclDataType F = ACL_FLOAT, H = ACL_FLOAT16, I = ACL_INT32;
    aclTensor *x = T2(4, 64, F), *b = T1(64, F), *y = T2(4, 8, F), *e = T2(4, 8, I), *o = T2(4, 64, F);
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 1, true, y, e, o), 0, "");
    EXPECT(GK(x, NULL, 8, 4, 8, 0, 0, 0, false, y, e, o), 0, "");
    /* 161001 */
    EXPECT(GK(NULL, b, 8, 4, 8, 1, 0, 1, true, y, e, o), NP, "x");
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 1, true, NULL, e, o), NP, "yOut");
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 1, true, y, NULL, o), NP, "expertIdxOut");
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 1, true, y, e, NULL), NP, "outOut");
    /* 161002: dtypes */
    EXPECT(GK(x, T1(64, H), 8, 4, 8, 1, 0, 1, true, y, e, o), IV, "biasOptional");
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 1, true, T2(4, 8, H), e, o), IV, "yOut");
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 1, true, y, T2(4, 8, ACL_INT64), o), IV, "expertIdxOut");
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 1, false, y, e, T2(4, 64, H)), IV, "outOut");
    EXPECT(GK(T2(4, 64, ACL_INT32), NULL, 8, 4, 8, 1, 0, 1, true, y, e, o), IV, "x");
    /* 561002: shapes */
    EXPECT(GK(T1(64, F), b, 8, 4, 8, 1, 0, 1, true, y, e, o), TL, "2-D");
    EXPECT(GK(x, T2(1, 64, F), 8, 4, 8, 1, 0, 1, true, y, e, o), TL, "1-D");
    EXPECT(GK(x, T1(63, F), 8, 4, 8, 1, 0, 1, true, y, e, o), TL, "biasOptional");
    EXPECT(GK(x, b, 65, 4, 8, 1, 0, 1, true, T2(4, 65, F), T2(4, 65, I), o), TL, "k");
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 1, true, T2(4, 7, F), e, o), TL, "yOut");
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 1, true, y, T2(3, 8, I), o), TL, "expertIdxOut");
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 1, true, y, e, T2(4, 63, F)), TL, "outOut");
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 1, false, y, e, T2(4, 63, F)), 0, ""); /* not checked without outFlag */
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 1, false, y, e, T1(256, F)), TL, "outOut");  /* its rank is */
    /* 561002: attributes */
    EXPECT(GK(x, b, 0, 4, 8, 1, 0, 1, true, T2(4, 0, F), T2(4, 0, I), o), TL, "k");
    EXPECT(GK(x, b, 8, 0, 8, 1, 0, 1, true, y, e, o), TL, "kGroup");
    EXPECT(GK(x, b, 8, 9, 8, 1, 0, 1, true, y, e, o), TL, "kGroup");
    EXPECT(GK(x, b, 8, 1, 0, 1, 0, 1, true, y, e, o), TL, g_a2 ? "kGroup" : "groupCount");
    EXPECT(GK(x, b, 8, 4, 7, 1, 0, 1, true, y, e, o), TL, "multiple");
    EXPECT(GK(x, b, 8, 4, 8, 2, 0, 1, true, y, e, o), TL, "groupSelectMode");
    EXPECT(GK(x, b, 8, 4, 8, 1, 1, 1, true, y, e, o), TL, "renorm");
    EXPECT(GK(x, b, 8, 4, 8, 1, 0, 2, true, y, e, o), TL, "normType");
    EXPECT(GK(x, b, 8, 1, 16, 1, 0, 1, true, y, e, o), TL, "k (8)"); /* kGroup * 4 < 8 */
    EXPECT(GK(x, b, 8, 1, 32, 1, 0, 1, true, y, e, o), TL, "");      /* 2 per group, 1 group < 8 */
    /* groupCount = E with mode 1: Ascend 950 collapses to one group first */
    EXPECT(GK(x, b, 8, 8, 64, 1, 0, 1, true, y, e, o), g_a2 ? TL : 0, "groupSelectMode");
    EXPECT(GK(x, b, 8, 4, 64, 0, 0, 1, true, y, e, o), TL, "k");
    /* the aligned width: 40 groups of 3 -> 40 * 32 = 1280 ok; 24 groups of 3 in 72... */
    {
        aclTensor *x2 = T2(4, 2048, F), *o2 = T2(4, 2048, F);
        /* 128 groups of 16: 128 * 32 = 4096 > 2048 when grouped */
        EXPECT(GK(x2, NULL, 8, 4, 128, 1, 0, 1, true, y, e, o2), TL, "2048");
        EXPECT(GK(x2, NULL, 8, 128, 128, 1, 0, 1, true, y, e, o2), 0, ""); /* all groups kept: not grouped */
        EXPECT(GK(T2(4, 2049, F), NULL, 8, 1, 1, 0, 0, 1, true, y, e, T2(4, 2049, F)), TL, "2048");
    }
    /* empty outputs: success */
    EXPECT(GK(T2(0, 64, F), b, 8, 4, 8, 1, 0, 1, true, T2(0, 8, F), T2(0, 8, I), T2(0, 64, F)), 0, "");

    /* ---- FusedTopk ---- */
    aclTensor *fy = T2(4, 8, F), *fi = T2(4, 8, I), *mn = T1(64, I), *mt = T2(64, 4, I);
    EXPECT(FT(x, b, NULL, NULL, 8, 4, 2, 8, false, fy, fi), 0, "");
    EXPECT(FT(x, b, mn, mt, 8, 4, 2, 8, true, fy, fi), 0, "");
    EXPECT(FT(NULL, b, NULL, NULL, 8, 4, 2, 8, false, fy, fi), NP, "x");
    EXPECT(FT(x, NULL, NULL, NULL, 8, 4, 2, 8, false, fy, fi), NP, "addNum");
    EXPECT(FT(x, b, NULL, mt, 8, 4, 2, 8, true, fy, fi), NP, "mappingNum");
    EXPECT(FT(x, b, mn, NULL, 8, 4, 2, 8, true, fy, fi), NP, "mappingTable");
    EXPECT(FT(x, b, NULL, NULL, 8, 4, 2, 8, false, NULL, fi), NP, "y");
    EXPECT(FT(x, b, NULL, NULL, 8, 4, 2, 8, false, fy, NULL), NP, "indices");
    EXPECT(FT(x, T1(64, H), NULL, NULL, 8, 4, 2, 8, false, fy, fi), IV, "addNum");
    EXPECT(FT(x, b, NULL, NULL, 8, 4, 2, 8, false, T2(4, 8, H), fi), IV, "y");
    EXPECT(FT(x, b, T1(64, F), mt, 8, 4, 2, 8, true, fy, fi), IV, "mappingNum");
    EXPECT(FT(x, b, T1(64, F), T2(64, 4, F), 8, 4, 2, 8, false, fy, fi), 0, ""); /* not read */
    EXPECT(FT(x, b, NULL, NULL, 0, 4, 2, 8, false, fy, fi), IV, "groupNum");
    EXPECT(FT(x, b, NULL, NULL, 8, 4, 0, 8, false, fy, fi), IV, "topN");
    EXPECT(FT(T2(4, 512, F), T1(512, F), NULL, NULL, 512, 4, 1, 8, false, fy, fi), IV, "256");
    EXPECT(FT(T1(64, F), b, NULL, NULL, 8, 4, 2, 8, false, fy, fi), IV, "x must be 2-D");
    EXPECT(FT(x, T2(1, 64, F), NULL, NULL, 8, 4, 2, 8, false, fy, fi), IV, "addNum");
    EXPECT(FT(x, b, NULL, NULL, 8, 4, 2, 8, false, fy, T2(4, 7, I)), IV, "indices");
    EXPECT(FT(x, b, NULL, NULL, 8, 4, 2, 8, false, T2(3, 8, F), T2(3, 8, I)), IV, "rows");
    EXPECT(FT(x, b, NULL, NULL, 8, 4, 2, 7, false, fy, fi), IV, "topK");
    EXPECT(FT(x, T1(63, F), NULL, NULL, 8, 4, 2, 8, false, fy, fi), IV, "addNum");
    EXPECT(FT(x, b, NULL, NULL, 7, 4, 2, 8, false, fy, fi), IV, "multiple");
    EXPECT(FT(x, b, NULL, NULL, 8, 9, 2, 8, false, fy, fi), IV, "groupTopk");
    EXPECT(FT(x, b, NULL, NULL, 8, 4, 9, 8, false, fy, fi), IV, "topN");
    EXPECT(FT(x, b, NULL, NULL, 8, 1, 2, 9, false, T2(4, 9, F), T2(4, 9, I)), 0, ""); /* topK > kept experts */
    EXPECT(FT(T2(4, 1040, F), T1(1040, F), NULL, NULL, 8, 4, 2, 8, false, fy, fi), IV, "1024");
    EXPECT(FT(x, b, T2(64, 1, I), mt, 8, 4, 2, 8, true, fy, fi), IV, "mappingNum");
    EXPECT(FT(x, b, mn, T1(64, I), 8, 4, 2, 8, true, fy, fi), IV, "mappingTable");
    EXPECT(FT(x, b, mn, T2(64, 129, I), 8, 4, 2, 8, true, fy, fi), IV, "128");
    EXPECT(FT(x, b, T1(63, I), mt, 8, 4, 2, 8, true, fy, fi), IV, "mappingNum");
    EXPECT(FT(x, b, mn, T2(63, 4, I), 8, 4, 2, 8, true, fy, fi), IV, "mappingTable");
    EXPECT(FT(T2(0, 64, F), b, NULL, NULL, 0, 0, 0, 0, false, fy, fi), 0, ""); /* x empty: nothing checked */
    for (int i = 0; i < g_nvt; i++) aclDestroyTensor(g_vt[i]);
    g_nvt = 0;
}

/* ---- --hash ---- */
static uint64_t fnv(const void *p, size_t n, uint64_t h) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}
static int hash_mode(void) {
    tu_state = 0x2545F4914F6CDD1Dull;
    int n = 0;
    for (int d = 0; d < 3; d++)
        for (int v = 0; v < 6; v++) {
            prob p = {v >= 4, DTS[d], 301, 256, 8, 8, 4, 1, 0, 1, 1, 1, 0, 0, 2.5, 1e-20, 0};
            if (v == 1) p.norm = 0, p.mode = 0;
            if (v == 2) p.E = 200, p.G = 5, p.kG = 2, p.k = 7;     /* 40 per group */
            if (v == 3) p.E = 2048, p.G = 1, p.kG = 1, p.k = 40;   /* the heap path */
            if (v == 4) p.topn = 3, p.is_norm = 1;
            if (v == 5) p.E = 96, p.G = 12, p.kG = 3, p.topn = 2, p.mapping = 1, p.tdim = 4;
            const int64_t R = p.R, E = p.E, k = p.k;
            double *x = malloc(sizeof *x * (size_t)(R * E)), *b = malloc(sizeof *b * (size_t)E);
            for (int64_t i = 0; i < R * E; i++) x[i] = gen_x(&p, 0);
            for (int64_t i = 0; i < E; i++) b[i] = gen_bias(&p, 0);
            int32_t mn[96], mt[96 * 4];
            for (int i = 0; i < 96; i++) mn[i] = i % 5;
            for (int i = 0; i < 96 * 4; i++) mt[i] = 7 * i;
            bufs o = {calloc((size_t)(R * k), 4), calloc((size_t)(R * k), 4), calloc((size_t)(R * E), 4)};
            if (run(&p, x, b, p.mapping ? mn : NULL, p.mapping ? mt : NULL, v % 2, &o, NULL) != ACLNN_SUCCESS) {
                printf("hash problem %d failed: %s\n", n, tu_msg());
                return 1;
            }
            uint64_t h = fnv(o.y, (size_t)(R * k) * esize(ydt_of(&p)), 0xcbf29ce484222325ull);
            h = fnv(o.e, (size_t)(R * k) * 4, h);
            if (p.out_flag) h = fnv(o.out, (size_t)(R * E) * 4, h);
            printf("gating problem %d dt=%d v=%d %016llx\n", n++, (int)p.dt, v, (unsigned long long)h);
            free(x), free(b), free(o.y), free(o.e), free(o.out);
        }
    return 0;
}

int main(int argc, char **argv) {
    const char *soc = getenv("MOEFR_SOC");
    g_a2 = soc && !strcmp(soc, "ascend910b");
    if (argc > 1 && !strcmp(argv[1], "--hash")) return hash_mode();
    tu_seed("test_gating_top_k");
    hand_cases();
    mapping_bound();
    validation();
    random_cases();
    printf("test_gating_top_k: %d cases, %d checks, %s rules, largest fp32 y error %.1f x 2^-24 relative, %d failures\n",
           g_cases, g_checks, g_a2 ? "A2/A3" : "Ascend 950", g_max_err, g_fail);
    return g_fail ? 1 : 0;
}
