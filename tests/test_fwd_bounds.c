/* test_fwd_bounds.c - the forward's canonical order (issue 13: fp32 groups of
 * 32 elements, fp64 fallback per group, fp64 for K > 32) at its edges, through
 * the public aclnnMoeFinalizeRoutingV2: every output bit for bit against the
 * oracle (fwd_ref.c) and within fr_bound of the double-double exact sum, plus
 * hand-computed values where the fp32 and the fp64 results differ (a failing
 * element turning its whole group to fp64, K = 32 against K = 33, the 16-bit
 * largest finite, overflow of an fp32 step with a finite exact sum, rows
 * without a term). Outputs are poisoned and guarded; inputs are fresh random
 * values (MOEFR_TEST_SEED replays). */
#include <float.h>
#include <math.h>

#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "testutil.h"

static int g_fail, g_cases, g_hand;
static long g_elems, g_fp32_groups, g_fp64_groups;

#define FAIL(...)                                  \
    do {                                           \
        fprintf(stderr, "test_fwd_bounds: " __VA_ARGS__); \
        fputc('\n', stderr);                       \
        g_fail++;                                  \
    } while (0)

static const char *dname(int dt) { return dt == FR_F32 ? "f32" : dt == FR_F16 ? "f16" : "bf16"; }

/* A problem plus what the operator's tensors need beyond fr_problem. */
typedef struct pb {
    fr_problem p;
    int64_t E, C; /* drop-pad modes: expandedX is (E, C, H), D = E*C */
    const char *what;
} pb;

static unsigned char *alloc_vals(int dt, int64_t n) { return calloc((size_t)(n > 0 ? n : 1), fr_size(dt)); }
static void put(int dt, void *base, int64_t i, double v) { tu_put(dt, base, i, v); } /* v exact in dt, or RNE */
static uint32_t bits_at(int dt, const void *base, int64_t i) {
    uint32_t b = 0;
    memcpy(&b, (const char *)base + (size_t)i * fr_size(dt), fr_size(dt));
    return b;
}

/* Runs the operator on pb; checks guard, oracle bits, bound; hand (R*H raw
 * elements, or NULL) must also match bit for bit. Returns out (caller frees). */
static unsigned char *run(const pb *c, const void *hand) {
    const fr_problem *p = &c->p;
    const int dt = p->dtype, drop = p->mode == 1 || p->mode == 3;
    const int64_t R = p->R, K = p->K, H = p->H, N = R * K;
    const size_t es = fr_size(dt), ob = (size_t)(R * H) * es, guard = 64;
    int64_t dx2[2] = {p->D, H}, dx3[3] = {c->E, c->C, H}, drh[2] = {R, H}, db[2] = {p->Eb, H}, dn[1] = {N},
            drk[2] = {R, K};
    tu_owned tx = drop ? tu_view(dt, 3, dx3, p->x, TU_DENSE) : tu_view(dt, 2, dx2, p->x, TU_DENSE);
    tu_owned ti = tu_view(3, 1, dn, p->idx, TU_DENSE), t1 = {0}, t2 = {0}, tb = {0}, ts = {0}, te = {0};
    if (p->x1) t1 = tu_view(dt, 2, drh, p->x1, TU_DENSE);
    if (p->x2) t2 = tu_view(dt, 2, drh, p->x2, TU_DENSE);
    if (p->bias) tb = tu_view(dt, 2, db, p->bias, TU_DENSE), te = tu_view(3, 2, drk, p->eidx, TU_DENSE);
    if (p->scales) ts = tu_view(p->sdtype, 2, drk, p->scales, TU_DENSE);
    unsigned char *out = malloc(ob + guard);
    memset(out, 0xA7, ob + guard);
    aclTensor *to = aclCreateTensor(drh, 2, (aclDataType)dt, NULL, 0, ACL_FORMAT_ND, drh, 2, out);
    uint64_t wsz = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus st = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(tx.t, ti.t, t1.t, t2.t, tb.t, ts.t, te.t, p->mode,
                                                               to, &wsz, &ex);
    void *ws = NULL;
    if (st == ACLNN_SUCCESS) {
        ws = wsz ? malloc(wsz) : NULL;
        st = aclnnMoeFinalizeRoutingV2(ws, wsz, ex, NULL);
    }
    if (st == ACLNN_ERR_RUNTIME_ERROR && getenv("MOEFR_ISA")) {
        printf("test_fwd_bounds: MOEFR_ISA=%s is not available here: %s -- skipped\n", getenv("MOEFR_ISA"),
               aclGetRecentErrMsg());
        exit(77);
    }
    const int before = g_fail;
    char what[240];
    snprintf(what, sizeof what, "%s [%s, scales %s, mode %d, R %lld K %lld H %lld, x1 %d x2 %d bias %d scales %d]",
             c->what, dname(dt), p->scales ? dname(p->sdtype) : "-", p->mode, (long long)R, (long long)K,
             (long long)H, !!p->x1, !!p->x2, !!p->bias, !!p->scales);
    if (st != ACLNN_SUCCESS) FAIL("%s: status %d: %s", what, st, aclGetRecentErrMsg());
    for (size_t g = 0; st == ACLNN_SUCCESS && g < guard; g++)
        if (out[ob + g] != 0xA7) {
            FAIL("%s: wrote past out (guard byte %zu)", what, g);
            break;
        }
    unsigned char *want = malloc(ob + 1), *want64 = malloc(ob + 1);
    fr_forward(p, want);
    fr_forward_fp64(p, want64);
    double *hi = malloc((size_t)(R * H + 1) * 8), *lo = malloc((size_t)(R * H + 1) * 8),
           *as = malloc((size_t)(R * H + 1) * 8);
    fr_forward_exact(p, hi, lo, as);
    /* the oracle itself against the hand-computed values (needs no library) */
    for (int64_t i = 0; hand && i < R * H; i++)
        if (bits_at(dt, want, i) != bits_at(dt, hand, i)) {
            FAIL("%s: the oracle's out[%lld][%lld] = 0x%x, hand-computed 0x%x", what, (long long)(i / H),
                 (long long)(i % H), bits_at(dt, want, i), bits_at(dt, hand, i));
            break;
        }
    for (int64_t i = 0; st == ACLNN_SUCCESS && i < R * H; i++) {
        const uint32_t got = bits_at(dt, out, i), w = bits_at(dt, want, i);
        if (got != w) {
            FAIL("%s: out[%lld][%lld] = 0x%x, oracle 0x%x (fp64 order 0x%x)", what, (long long)(i / H),
                 (long long)(i % H), got, w, bits_at(dt, want64, i));
            break;
        }
        if (hand && got != bits_at(dt, hand, i)) {
            FAIL("%s: out[%lld][%lld] = 0x%x, hand-computed 0x%x", what, (long long)(i / H), (long long)(i % H), got,
                 bits_at(dt, hand, i));
            break;
        }
        const double g = fr_decode(dt, out, i), exact = hi[i] + lo[i];
        if (isfinite(g) && isfinite(exact)) {
            const double bound = fr_bound(dt, K, as[i], g, exact);
            if (!(fabs(g - hi[i] - lo[i]) <= bound)) {
                FAIL("%s: out[%lld][%lld] = %a, exact %a: error %.3g above bound %.3g", what, (long long)(i / H),
                     (long long)(i % H), g, exact, fabs(g - exact), bound);
                break;
            }
        }
    }
    /* how often each order decided (a group is fp32 when it differs from the fp64 order somewhere) */
    for (int64_t r = 0; r < R; r++)
        for (int64_t g0 = 0; g0 < H; g0 += FR_GROUP) {
            const int64_t n = H - g0 < FR_GROUP ? H - g0 : FR_GROUP;
            if (memcmp(want + (size_t)(r * H + g0) * es, want64 + (size_t)(r * H + g0) * es, (size_t)n * es))
                g_fp32_groups++;
            else
                g_fp64_groups++;
        }
    if (g_fail != before && getenv("MOEFR_TEST_VERBOSE")) fprintf(stderr, "  (%s)\n", what);
    g_cases++;
    g_elems += R * H;
    free(want), free(want64), free(hi), free(lo), free(as), free(ws);
    aclDestroyTensor(to);
    tu_free(&tx), tu_free(&ti), tu_free(&t1), tu_free(&t2), tu_free(&tb), tu_free(&ts), tu_free(&te);
    return out;
}

/* A dense problem: mode 2 (row layout), D = R*K, idx the identity; arrays
 * zeroed, scales 1.0. K > 1 needs scales (the operator takes K from them). */
static pb make(int dt, int sdt, int64_t R, int64_t K, int64_t H, int x12, int bias, int scales) {
    pb c;
    if (K > 1) scales = 1;
    memset(&c, 0, sizeof c);
    fr_problem *p = &c.p;
    /* every slot its own bias row (eidx = its flat slot); one spare expandedX row for the drop-pad layouts */
    p->dtype = dt, p->sdtype = sdt, p->mode = 2, p->R = R, p->K = K, p->H = H, p->D = R * K, p->Eb = R * K + 1;
    p->x = alloc_vals(dt, (p->D + 1) * H);
    p->x1 = x12 ? alloc_vals(dt, R * H) : NULL;
    p->x2 = x12 == 2 ? alloc_vals(dt, R * H) : NULL;
    p->bias = bias ? alloc_vals(dt, p->Eb * H) : NULL;
    p->scales = scales ? alloc_vals(sdt, R * K) : NULL;
    for (int64_t i = 0; scales && i < R * K; i++) tu_put(sdt, (void *)p->scales, i, 1.0);
    int32_t *idx = malloc((size_t)(R * K + 1) * 4), *eidx = malloc((size_t)(R * K + 1) * 4);
    for (int64_t i = 0; i < R * K; i++) idx[i] = (int32_t)i, eidx[i] = (int32_t)i;
    p->idx = idx, p->eidx = eidx;
    c.what = "";
    return c;
}
static void drop(pb *c) {
    free((void *)c->p.x), free((void *)c->p.x1), free((void *)c->p.x2), free((void *)c->p.bias);
    free((void *)c->p.scales), free((void *)c->p.idx), free((void *)c->p.eidx);
}
/* slot (r, k)'s expandedX row in mode 2 with the identity index */
static void *xrow(pb *c, int64_t r, int64_t k) {
    return (char *)c->p.x + (size_t)((r * c->p.K + k) * c->p.H) * fr_size(c->p.dtype);
}

/* Per dtype: x1 = 1 and two slot terms t0, t1 whose fp32 sum rounds to 1 (so
 * RNE(a) = 1) while the fp64 sum rounds to 1 + ulp(dtype): the two orders
 * differ in every element. */
static void split_terms(int dt, double *t0, double *t1, double *up) {
    if (dt == FR_F32) *t0 = *t1 = 3 * 0x1p-26, *up = 1 + 0x1p-23;   /* 1 + 1.5 * 2^-24 */
    else if (dt == FR_BF16) *t0 = 0x1p-8, *t1 = 0x1p-30, *up = 1 + 0x1p-7; /* fp32 tie 1 + 2^-8 -> 1 */
    else *t0 = 0x1p-11, *t1 = 0x1p-24, *up = 1 + 0x1p-10;           /* fp32 1 + 2^-11 (a tie), fp16 tie -> 1 */
}

/* One failing element inside an otherwise passing group: that whole group is
 * the fp64 result, the neighbouring groups the fp32 result. Row r's failing
 * element sits at pos[r] with the failure kind[r]. */
static void group_rule(int dt, int sdt) {
    const int64_t H = 77, R = 7, K = 2; /* groups 0..31, 32..63, 64..76 (a tail of 13) */
    const int64_t pos[7] = {0, 40, 76, 33, 63, 64, -1};
    pb c = make(dt, sdt, R, K, H, 1, 0, 1);
    c.what = "one failing element per group";
    double t0, t1, up;
    split_terms(dt, &t0, &t1, &up);
    unsigned char *hand = alloc_vals(dt, R * H);
    const double big = dt == FR_F32 ? FLT_MAX : dt == FR_BF16 ? 0x1.fep127 : 65504.0;
    for (int64_t r = 0; r < R; r++) {
        for (int64_t j = 0; j < H; j++) {
            double v1 = 1, v0 = t0, vv = t1, e;
            const int fail_here = j == pos[r];
            if (fail_here) switch (r) {
                case 0: v1 = 0, v0 = 0, vv = -0.0, e = 0.0; break; /* exact zero (+0 in fp64: 0 + 0 + -0) */
                case 1: v0 = INFINITY, e = INFINITY; break;
                case 2: /* tiny: below 2^-100 (fp16 has none: a cancellation to +0) */
                    if (dt == FR_F16) v1 = 0x1p-24, v0 = -0x1p-24, vv = 0, e = 0.0;
                    else v1 = 0x1p-110, v0 = 0, vv = 0, e = v1;
                    break;
                case 3: v0 = NAN, e = NAN; break;
                case 4: /* fp32: an overflowing step with a finite exact sum; 16-bit: HI itself */
                    if (dt == FR_F32) v1 = FLT_MAX, v0 = FLT_MAX, vv = -FLT_MAX, e = FLT_MAX;
                    else v1 = big, v0 = 0, vv = 0, e = big;
                    break;
                default: v1 = 1, v0 = -1, vv = 0, e = 0.0; break; /* cancels to +0 */
                }
            else
                e = 0; /* set below */
            put(dt, (void *)c.p.x1, r * H + j, v1);
            put(dt, xrow(&c, r, 0), j, v0);
            put(dt, xrow(&c, r, 1), j, vv);
            /* the element's group is fp64 when the failing element is in it */
            const int64_t g = j / 32, gf = pos[r] < 0 ? -1 : pos[r] / 32;
            if (!fail_here) e = g == gf ? up : 1.0;
            tu_put(dt, hand, r * H + j, e);
        }
    }
    free(run(&c, hand));
    g_hand++;
    free(hand);
    drop(&c);
}

/* K = 32 is the fp32 order, K = 33 the fp64 one: x1 = 1 and K slots of a
 * term fp32 rounds away each time; fp64 keeps their sum. */
static void long_k(int dt) {
    const int64_t Ks[2] = {32, 33}, H = 45;
    for (int i = 0; i < 2; i++) {
        const int64_t K = Ks[i];
        pb c = make(dt, dt, 2, K, H, 1, 0, 1);
        c.what = "long K";
        double t0, t1, up;
        split_terms(dt, &t0, &t1, &up);
        unsigned char *hand = alloc_vals(dt, 2 * H);
        for (int64_t r = 0; r < 2; r++) {
            for (int64_t k = 0; k < K; k++) {
                put(dt, (void *)c.p.scales, r * K + k, 1.0);
                for (int64_t j = 0; j < H; j++) put(dt, xrow(&c, r, k), j, k ? t1 : t0);
            }
            for (int64_t j = 0; j < H; j++) {
                put(dt, (void *)c.p.x1, r * H + j, 1.0);
                /* fp32 a: each later term is lost (below half an fp32 ulp, or a
                 * tie to even), RNE(a) = 1; fp64: one rounding of the sum */
                tu_put(dt, hand, r * H + j, K <= 32 ? 1.0 : 1 + t0 + (double)(K - 1) * t1);
            }
        }
        free(run(&c, hand));
        g_hand++;
        free(hand);
        drop(&c);
    }
    /* K = 35 whose first 32 slots are all dropped and no x1: still a K > 32
     * token, the fp64 order (the last kernel call sees only 3 slots) */
    for (int rep = 0; rep < 2; rep++) {
        const int64_t K = 35, R = 2, HH = 40;
        pb c = make(dt, dt, R, K, HH, 0, 0, 0);
        c.what = "K = 35, first 32 slots dropped";
        c.p.mode = rep ? 3 : 1, c.E = 3, c.C = 2, c.p.D = 6;
        free((void *)c.p.x);
        c.p.x = alloc_vals(dt, 6 * HH);
        int32_t *idx = (int32_t *)c.p.idx;
        for (int64_t r = 0; r < R; r++)
            for (int64_t k = 0; k < K; k++) {
                const int32_t v = k < 32 ? -1 : (int32_t)(r * 3 + k - 32);
                if (c.p.mode == 3) idx[r * K + k] = v;
                else idx[k * R + r] = v;
            }
        double t0, t1, up;
        split_terms(dt, &t0, &t1, &up);
        unsigned char *hand = alloc_vals(dt, R * HH);
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < HH; j++) {
                put(dt, (char *)c.p.x + (size_t)((r * 3 + 0) * HH) * fr_size(dt), j, 1.0);
                put(dt, (char *)c.p.x + (size_t)((r * 3 + 1) * HH) * fr_size(dt), j, t0);
                put(dt, (char *)c.p.x + (size_t)((r * 3 + 2) * HH) * fr_size(dt), j, t1);
                tu_put(dt, hand, r * HH + j, up);
            }
        free(run(&c, hand));
        g_hand++;
        free(hand);
        drop(&c);
    }
}

/* The 16-bit largest finite: an fp32 a at or above it goes to fp64. x1 = max,
 * + half an ulp of the dtype (fp32 keeps it: a is the midpoint, RNE would make
 * it inf), - a little (fp32 loses it): fp64 is just below the midpoint. */
static void largest_finite(int dt) {
    const double mx = dt == FR_BF16 ? 0x1.fep127 : 65504.0, half = dt == FR_BF16 ? 0x1p119 : 16.0,
                 little = dt == FR_BF16 ? -0x1p90 : -0x1p-10;
    const int64_t H = 35, R = 2;
    pb c = make(dt, dt, R, 2, H, 1, 0, 0);
    c.what = "16-bit largest finite";
    unsigned char *hand = alloc_vals(dt, R * H);
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < H; j++) {
            const int edge = r == 0 || j % 5 == 0;
            put(dt, (void *)c.p.x1, r * H + j, edge ? (r ? -mx : mx) : 2.0);
            put(dt, xrow(&c, r, 0), j, edge ? (r ? -half : half) : 0.5);
            put(dt, xrow(&c, r, 1), j, edge ? (r ? -little : little) : 0.25);
            tu_put(dt, hand, r * H + j, edge ? (r ? -mx : mx) : 2.75);
        }
    free(run(&c, hand));
    g_hand++;
    /* values exactly at the largest finite (fail C, same value in fp64) and a sum that overflows */
    for (int64_t j = 0; j < H; j++) {
        put(dt, (void *)c.p.x1, j, j % 2 ? -mx : mx);
        put(dt, xrow(&c, 0, 0), j, 0.0);
        put(dt, xrow(&c, 0, 1), j, j % 3 ? 0.0 : (j % 2 ? -mx : mx));
        tu_put(dt, hand, j, j % 3 ? (j % 2 ? -mx : mx) : (j % 2 ? -INFINITY : INFINITY));
        tu_put(dt, hand, H + j, (j == 0 || j % 5 == 0) ? -mx : 2.75);
    }
    free(run(&c, hand));
    g_hand++;
    free(hand);
    drop(&c);
}

/* fp32 steps that overflow while the exact sum is finite: x1 + x2, and x + b
 * (every element j % 7 == 3; each row's other elements are exact small sums). */
static void overflow_steps(void) {
    const int64_t H = 70, R = 3, K = 2;
    pb c = make(FR_F32, FR_F32, R, K, H, 2, 1, 1);
    c.what = "overflowing fp32 steps";
    unsigned char *hand = alloc_vals(FR_F32, R * H);
    const double M = FLT_MAX;
    for (int64_t r = 0; r < R; r++) {
        put(FR_F32, (void *)c.p.scales, r * K, r == 2 ? 0.5 : 1.0);
        put(FR_F32, (void *)c.p.scales, r * K + 1, 1.0);
        for (int64_t j = 0; j < H; j++) {
            const int o = j % 7 == 3;
            /* x1, x2, slot 0 (x, b), slot 1 (x, b) and the exact sum's rounding */
            double a1 = 1, a2 = 0.5, x0 = 0.25, b0 = 0, b1 = 0.125, e = 1.875;
            if (o && r == 0) a1 = M, a2 = M, x0 = -M, e = M;       /* fl32(x1 + x2) = inf; M + 0.125 -> M */
            if (o && r == 1) a1 = -M, a2 = 0, x0 = M, b0 = M, e = M; /* fl32(x + b) = inf */
            if (r == 2) /* s0 = 0.5: -M + 0.5 * (M + M) + 0.125 */
                a1 = o ? -M : 1, a2 = 0, x0 = o ? M : 1, b0 = o ? M : 1, e = o ? 0.125 : 2.125;
            put(FR_F32, (void *)c.p.x1, r * H + j, a1);
            put(FR_F32, (void *)c.p.x2, r * H + j, a2);
            put(FR_F32, xrow(&c, r, 0), j, x0);
            put(FR_F32, xrow(&c, r, 1), j, 0.0);
            put(FR_F32, (void *)c.p.bias, c.p.eidx[r * K] * H + j, b0);
            put(FR_F32, (void *)c.p.bias, c.p.eidx[r * K + 1] * H + j, b1);
            tu_put(FR_F32, hand, r * H + j, e);
        }
    }
    free(run(&c, hand));
    g_hand++;
    free(hand);
    drop(&c);
}

/* A row whose every slot is dropped and no x1: +0.0 everywhere (scales and bias present). */
static void no_term(int dt) {
    const int64_t R = 3, K = 3, H = 50;
    pb c = make(dt, FR_F32, R, K, H, 0, 1, 1);
    c.what = "rows without a term";
    c.p.mode = 3, c.E = 4, c.C = 2, c.p.D = 8, c.p.Eb = 4;
    free((void *)c.p.x), free((void *)c.p.bias);
    c.p.x = alloc_vals(dt, 8 * H), c.p.bias = alloc_vals(dt, 4 * H);
    tu_fill(dt, (void *)c.p.x, 8 * H);
    tu_fill(dt, (void *)c.p.bias, 4 * H);
    tu_fill(FR_F32, (void *)c.p.scales, R * K);
    int32_t *idx = (int32_t *)c.p.idx, *eidx = (int32_t *)c.p.eidx;
    for (int64_t i = 0; i < R * K; i++) idx[i] = i / K == 1 ? (int32_t)(i % 8) : -1, eidx[i] = (int32_t)(i % 4);
    unsigned char *out = run(&c, NULL);
    for (int64_t r = 0; r < R; r += 2)
        for (int64_t j = 0; j < H; j++)
            if (bits_at(dt, out, r * H + j) != 0) {
                FAIL("rows without a term [%s]: out[%lld][%lld] = 0x%x, want +0.0", dname(dt), (long long)r,
                     (long long)j, bits_at(dt, out, r * H + j));
                r = R;
                break;
            }
    g_hand++;
    free(out);
    drop(&c);
}

/* A value of dtype from a hostile mix: ordinary, tiny (subnormal), huge, the
 * largest finite, zeros, inf, NaN (rates set by `special`, in percent). */
static double hostile(int dt, int special) {
    const int c = (int)tu_int(0, 99);
    const double sg = tu_int(0, 1) ? -1 : 1;
    const double mx = dt == FR_F32 ? FLT_MAX : dt == FR_BF16 ? 0x1.fep127 : 65504.0;
    const int emin = dt == FR_F16 ? -24 : -149, emax = dt == FR_F16 ? 15 : 127;
    if (c < special) {
        const int s = (int)tu_int(0, 5);
        return s == 0 ? sg * INFINITY : s == 1 ? NAN : s == 2 ? sg * mx : s == 3 ? sg * 0.0 : s == 4 ? sg * ldexp(1, emin) : sg * mx / 2;
    }
    if (c < 15) return sg * ldexp(1 + tu_unit(), (int)tu_int(emin, emin + 30)); /* tiny */
    if (c < 20) return sg * ldexp(1 + tu_unit(), (int)tu_int(emax - 8, emax - 1)); /* huge */
    if (c < 25) return 0.0;
    return sg * ldexp(1 + tu_unit(), (int)tu_int(-6, 4));
}

static void fill_hostile(int dt, void *base, int64_t n, int special) {
    for (int64_t i = 0; i < n; i++) tu_put(dt, base, i, hostile(dt, special));
}

/* Random problems from the hostile mix, with cancellations built in: x1 is
 * often minus a slot's term, so rows cancel to zero or to a tiny rest. */
static void random_case(int dt, int sdt, int64_t K, int64_t H, int mode, int special, int tiny_scales) {
    const int64_t R = tu_int(1, 5);
    const int x12 = (int)tu_int(0, 2), bias = (int)tu_int(0, 1), scales = tiny_scales || K > 1 || tu_int(0, 1);
    pb c = make(dt, sdt, R, K, H, x12, bias, scales);
    c.what = tiny_scales ? "random, tiny scales" : "random, hostile values";
    fill_hostile(dt, (void *)c.p.x, c.p.D * H, special);
    if (c.p.x1) fill_hostile(dt, (void *)c.p.x1, R * H, special);
    if (c.p.x2) fill_hostile(dt, (void *)c.p.x2, R * H, special);
    if (c.p.bias) fill_hostile(dt, (void *)c.p.bias, c.p.Eb * H, special);
    for (int64_t i = 0; scales && i < R * K; i++) {
        double s = (tu_unit() - 0.5) * 4;
        if (tiny_scales) s = ldexp(1 + tu_unit(), (int)tu_int(-149, -80)) * (tu_int(0, 1) ? -1 : 1);
        else if (tu_int(0, 9) == 0) s = tu_int(0, 1) ? 1.0 : -1.0;
        tu_put(sdt, (void *)c.p.scales, i, s);
    }
    /* cancellation: x1 = -(s0 * x0) element-wise (exact when the product is), plus sometimes a tiny x2 */
    if (c.p.x1 && tu_int(0, 1)) {
        const double s0 = scales ? fr_decode(sdt, c.p.scales, 0) : 1.0;
        for (int64_t r = 0; r < R; r++) {
            const double sr = scales ? fr_decode(sdt, c.p.scales, r * K) : 1.0;
            (void)s0;
            for (int64_t j = 0; j < H; j++) {
                const double x0 = fr_decode(dt, xrow(&c, r, 0), j);
                const double b0 = c.p.bias ? fr_decode(dt, c.p.bias, c.p.eidx[r * K] * H + j) : 0;
                if (tu_int(0, 3)) tu_put(dt, (void *)c.p.x1, r * H + j, -sr * (x0 + b0));
                if (c.p.x2 && tu_int(0, 2) == 0) tu_put(dt, (void *)c.p.x2, r * H + j, ldexp(tu_unit(), -(int)tu_int(20, 140)));
            }
        }
    }
    if (mode != 2) { /* other layouts: modes 0 (column index), 1/3 (drop-pad, some dropped slots) */
        c.p.mode = mode;
        int32_t *idx = (int32_t *)c.p.idx;
        const int64_t N = R * K;
        if (mode == 0)
            for (int64_t r = 0; r < R; r++)
                for (int64_t k = 0; k < K; k++) idx[k * R + r] = (int32_t)(r * K + k); /* same rows as mode 2 */
        else {
            c.E = c.p.Eb, c.C = 1, c.p.D = c.p.Eb; /* expandedX (E, 1, H), bias (E, H) */
            fill_hostile(dt, (char *)c.p.x + (size_t)(N * H) * fr_size(dt), H, special);
            for (int64_t i = 0; i < N; i++) {
                const int32_t v = tu_int(0, 4) == 0 ? -1 : (int32_t)(tu_int(0, 5) ? i : N); /* N: the spare row */
                if (mode == 3) idx[i] = v;
                else idx[(i % K) * R + i / K] = v;
            }
        }
    }
    free(run(&c, NULL));
    drop(&c);
}

int main(void) {
    tu_seed("test_fwd_bounds");
    if (aclInit(NULL) != ACL_SUCCESS) return 1;
    static const int DT[3] = {FR_F32, FR_F16, FR_BF16};
    for (int d = 0; d < 3; d++) {
        group_rule(DT[d], DT[d]);
        group_rule(DT[d], FR_F32);
        long_k(DT[d]);
        no_term(DT[d]);
    }
    largest_finite(FR_BF16);
    largest_finite(FR_F16);
    overflow_steps();
    /* products in the subnormal range: fp32 scales (allowed with every data dtype
     * here, Ascend 950's rule) so tiny that s * x underflows fp32 */
    static const int64_t HS[] = {1, 5, 31, 32, 33, 63, 64, 65, 97, 100, 129};
    for (int rep = 0; rep < 60; rep++) {
        const int dt = DT[rep % 3];
        random_case(dt, FR_F32, tu_int(1, 6), HS[tu_int(0, 10)], 2, 0, 1);
    }
    /* hostile values, K across the fp32 / fp64 boundary, every mode and scale dtype */
    static const int64_t KS[] = {1, 2, 3, 5, 8, 31, 32, 33, 34};
    for (int rep = 0; rep < 240; rep++) {
        const int dt = DT[rep % 3];
        const int sdt = rep % 4 == 0 ? FR_F32 : rep % 4 == 1 ? dt : DT[(rep / 4) % 3];
        random_case(dt, sdt, KS[tu_int(0, 8)], HS[tu_int(0, 10)], (int)(rep / 3) % 4, rep % 5 == 0 ? 6 : 0, 0);
    }
    printf("test_fwd_bounds: %d problems (%d hand-computed), %ld output elements, %ld fp32 / %ld fp64 groups "
           "(by the oracle), %d failures (isa %s)\n",
           g_cases, g_hand, g_elems, g_fp32_groups, g_fp64_groups, g_fail,
           getenv("MOEFR_ISA") ? getenv("MOEFR_ISA") : "default");
    aclFinalize();
    return g_fail ? 1 : 0;
}
