/* test_init_routing_v3.c - aclnnMoeInitRoutingV3 against an independent
 * oracle written from CANN's documented and kernel semantics (see
 * docs/CANN_COMPAT.md): a comparison sort of (group, id, position) with ids
 * inside the active range first, ids past it next and ids below it last; the
 * gather (-1 outside) and scatter (the whole permutation) index layouts; counts,
 * cumsum and key-value over the range; drop/pad slots; and int8 quantisation
 * computed here in float64 with fwd_ref.c's own fp16 rounding (static) or the
 * documented fp32 steps (dynamic) and an own round-half-even. Random cases
 * draw ids outside [0, expertNum) too (negative, past the range, past
 * expertNum, near INT32_MAX), odd sizes, strided x/expertIdx/scale, poisoned
 * outputs with guard bytes. Then the doc example by hand, rounding ties and
 * saturation by hand, and every validation rule with its code and untouched
 * outputs. */
#include "aclnnop/aclnn_moe_init_routing_v3.h"
#define TU_COUNT_FAILURES
#include "testutil.h"
#include "fwd_ref.h"

#include <math.h>

typedef struct vcase {
    int64_t N, K, H, E, C, start, end, mode, type, quant, rtype;
    bool scale;
    aclDataType xdt;
    int64_t xs0, xs1, xoff, is0, is1;
    int wide; /* some ids near INT32_MAX */
    int64_t active;             /* activeNum */
    bool flag, norange, smooth1; /* expertTokensNumFlag; range passed empty; a (1, H) smooth scale (A2/A3) */
} vcase;
static int g_a2; /* MOEFR_SOC=ascend910b: A2/A3's tiling rules */

static size_t dsz(aclDataType d) { return d == ACL_FLOAT ? 4 : d == ACL_INT8 ? 1 : 2; }

static double xval(aclDataType d, const unsigned char *x, int64_t i) {
    if (d == ACL_INT8) return (double)(int8_t)x[i];
    return fr_decode(d == ACL_FLOAT ? FR_F32 : d == ACL_FLOAT16 ? FR_F16 : FR_BF16, x, i);
}
/* v rounded to fp16 and back (fwd_ref.c's RNE) */
static double f16(double v) {
    const uint16_t b = (uint16_t)fr_round(FR_F16, v);
    return fr_decode(FR_F16, &b, 0);
}
/* round half to even, then saturate to int8; NaN -> 0 */
static int8_t q8(double v) {
    if (isnan(v)) return 0;
    if (v >= 127) return 127;
    if (v <= -128) return -128;
    double f = floor(v), d = v - f;
    if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0)) f += 1;
    return (int8_t)f;
}

static int run_case(const vcase *c) {
    const int64_t N = c->N, K = c->K, H = c->H, E = c->E, C = c->C, T = N * K, L = c->end - c->start;
    const size_t es = dsz(c->xdt);
    const bool fl = c->xdt != ACL_INT8;
    unsigned char *x = malloc((size_t)(N * H) * es + 1);
    if (fl) tu_fill(c->xdt == ACL_FLOAT ? FR_F32 : c->xdt == ACL_FLOAT16 ? FR_F16 : FR_BF16, x, N * H);
    else
        for (int64_t i = 0; i < N * H; i++) x[i] = (unsigned char)tu_next();
    if (fl && c->quant == 1 && N > 0 && H > 0 && tu_chance(30)) memset(x, 0, (size_t)H * es); /* a zero row */
    int32_t *ids = malloc((size_t)T * 4 + 4);
    for (int64_t j = 0; j < T; j++) {
        int64_t v = tu_int(-3, E + 3);
        if (c->wide && tu_chance(10)) v = tu_chance(50) ? INT32_MAX - tu_int(0, 2) : INT32_MIN + tu_int(0, 2);
        ids[j] = (int32_t)v;
    }
    /* smooth (L, H) for quant 1, row scale (N) for quant -1, static (1) + offset (1) */
    const int64_t SL = c->smooth1 ? 1 : L; /* smooth rows */
    const int64_t sN = c->quant == 1 ? SL * H : c->quant == 0 ? 1 : N;
    float *sc = malloc(sizeof(float) * (size_t)(sN + 1)), off = (float)(tu_unit() * 4 - 2);
    for (int64_t i = 0; i < sN; i++) sc[i] = (float)(tu_unit() * 4 - 2);
    if (c->quant == 0) sc[0] = (float)(tu_unit() * 100 - 50);
    tu_owned xv = tu_make_view(x, 2, N, H, c->xdt, es, c->xoff, c->xs0, c->xs1);
    tu_owned iv = tu_make_view(ids, 2, N, K, ACL_INT32, 4, 0, c->is0, c->is1);
    tu_owned sv = {0};
    aclTensor *tsc = NULL, *toff = NULL;
    if (c->quant == 1 && c->scale) sv = tu_make_view(sc, 2, SL, H, ACL_FLOAT, 4, 3, H + 2, 1), tsc = sv.t;
    else if (c->quant == -1 && c->scale) sv = tu_make_view(sc, 1, N, 1, ACL_FLOAT, 4, 1, 2, 0), tsc = sv.t;
    else if (c->quant == 0) tsc = tu_mk(1, 1, 0, 0, ACL_FLOAT, sc), toff = tu_mk(1, 1, 0, 0, ACL_FLOAT, &off);
    const aclDataType odt = c->quant == -1 ? c->xdt : ACL_INT8;
    const size_t oes = dsz(odt);
    const int64_t act = c->active == 0 || c->active == -1 ? T : (c->active < T ? c->active : T);
    const int64_t rows = c->mode == 1 ? E * C : act;
    const bool fl0 = c->xdt != ACL_INT8;
    const bool escale_out = (c->quant == 1 && fl0) || (c->quant == -1 && c->scale);
    const size_t exb = (size_t)(rows * H) * oes, rb = (size_t)T * 4;
    const int64_t cn = c->type == 2 ? E * 2 : L;
    unsigned char *ex = tu_poisoned(exb), *row = tu_poisoned(rb), *cnt = tu_poisoned((size_t)cn * 8),
                  *esc = tu_poisoned((size_t)rows * 4);
    aclTensor *tex = c->mode == 1 ? tu_mk(3, E, C, H, odt, ex) : tu_mk(2, rows, H, 0, odt, ex);
    aclTensor *trow = tu_mk(1, T, 0, 0, ACL_INT32, row);
    aclTensor *tcnt = c->type == 2 ? tu_mk(2, E, 2, 0, ACL_INT64, cnt) : tu_mk(1, L, 0, 0, ACL_INT64, cnt);
    aclTensor *tesc = tu_mk(1, rows, 0, 0, ACL_FLOAT, esc);
    const int64_t rng[2] = {c->start, c->end};
    aclIntArray *ra = aclCreateIntArray(rng, c->norange ? 0 : 2);
    uint64_t wsz = 0;
    aclOpExecutor *exe = NULL;
    char what[300];
    snprintf(what, sizeof what, "N=%lld K=%lld H=%lld E=%lld C=%lld range=[%lld,%lld) mode=%lld type=%lld quant=%lld "
             "rtype=%lld scale=%d xdt=%d", (long long)N, (long long)K, (long long)H, (long long)E, (long long)C,
             (long long)c->start, (long long)c->end, (long long)c->mode, (long long)c->type, (long long)c->quant,
             (long long)c->rtype, c->scale, (int)c->xdt);
    aclnnStatus rc = aclnnMoeInitRoutingV3GetWorkspaceSize(xv.t, iv.t, tsc, toff, c->active, C, E, c->mode, c->type,
                                                           c->flag, c->quant, ra, c->rtype, tex, trow, tcnt, tesc,
                                                           &wsz, &exe);
    int bad = 0;
    g_cases++;
    if (rc != ACLNN_SUCCESS) {
        printf("FAIL %s: phase 1 = %d (%s)\n", what, rc, aclGetRecentErrMsg());
        bad = 1;
    } else {
        unsigned char *ws = wsz ? malloc(wsz) : NULL;
        if (ws) memset(ws, TU_POISON, wsz);
        rc = aclnnMoeInitRoutingV3(ws, wsz, exe, NULL);
        free(ws);
        if (rc != ACLNN_SUCCESS) printf("FAIL %s: phase 2 = %d (%s)\n", what, rc, aclGetRecentErrMsg()), bad = 1;
    }
    /* the oracle */
    int64_t *key = malloc(sizeof *key * (size_t)(T + 1)), *perm = malloc(sizeof *perm * (size_t)(T + 1));
    int64_t *hist = calloc((size_t)L + 1, sizeof *hist), A = 0;
    for (int64_t j = 0; j < T; j++) {
        const int64_t e = ids[j];
        key[j] = e < c->start ? ((int64_t)1 << 40) : e - c->start;
        if (e >= c->start && e < c->end) hist[e - c->start]++, A++;
    }
    tu_ref_sort(key, T, perm);
    int32_t *wrow = malloc(rb + 4);
    int64_t *src = malloc(sizeof *src * (size_t)(rows + 1)); /* output row -> flat position or -1 */
    for (int64_t i = 0; i < rows; i++) src[i] = -1;
    for (int64_t j = 0; j < T; j++) wrow[j] = -1;
    if (c->mode == 0) {
        for (int64_t i = 0; i < A && i < rows; i++) src[i] = perm[i];
        if (c->rtype == 1) for (int64_t i = 0; i < T; i++) wrow[i] = (int32_t)perm[i];
        else for (int64_t i = 0; i < A; i++) wrow[perm[i]] = (int32_t)i;
    } else {
        int64_t prev = -1, s = 0;
        for (int64_t i = 0; i < A; i++) {
            const int64_t e = ids[perm[i]];
            s = e == prev ? s + 1 : 0;
            prev = e;
            if (s < C) src[e * C + s] = perm[i], wrow[perm[i]] = (int32_t)(e * C + s);
        }
    }
    if (!bad) {
        if (memcmp(row, wrow, rb) != 0 || !tu_guard_ok(row, rb)) {
            for (int64_t j = 0; j < T; j++) {
                int32_t g;
                memcpy(&g, row + j * 4, 4);
                if (g != wrow[j]) {
                    printf("FAIL %s: expandedRowIdx[%lld] = %d, want %d\n", what, (long long)j, g, wrow[j]);
                    break;
                }
            }
            bad = 1;
        }
        /* counts */
        int64_t *wc = calloc((size_t)cn + 1, 8), run = 0, n = 0;
        for (int64_t e = 0; e < L; e++) {
            run += hist[e];
            if (c->type == 2) {
                if (hist[e] > 0) wc[2 * n] = c->start + e, wc[2 * n + 1] = hist[e], n++;
            } else {
                wc[e] = c->type == 0 ? run : hist[e];
            }
        }
        if (!c->flag ? !tu_all_poison(cnt, (size_t)cn * 8 + TU_GUARD)
                     : memcmp(cnt, wc, (size_t)cn * 8) != 0 || !tu_guard_ok(cnt, (size_t)cn * 8))
            printf("FAIL %s: expertTokensCountOrCumsumOut differs (or was written without the flag)\n", what), bad = 1;
        free(wc);
        /* rows and scales */
        const bool untouched = c->quant == 1 && !fl;
        int rows_bad = 0, sc_bad = 0;
        for (int64_t i = 0; i < rows && !untouched; i++) {
            const int64_t j = src[i];
            const unsigned char *g = ex + (size_t)(i * H) * oes;
            float gs;
            memcpy(&gs, esc + i * 4, 4);
            if (c->quant == -1) {
                if (j < 0) {
                    for (int64_t b = 0; b < H * (int64_t)oes; b++) rows_bad |= g[b] != 0;
                } else {
                    rows_bad |= memcmp(g, x + (size_t)(j / K * H) * es, (size_t)H * es) != 0;
                }
                const float ws = j < 0 ? 0.0f : sc[j / K];
                if (c->scale) sc_bad |= memcmp(&gs, &ws, 4) != 0;
            } else if (c->quant == 0) {
                for (int64_t h = 0; h < H; h++) {
                    int8_t w = 0;
                    if (j >= 0) {
                        const double a = f16(xval(c->xdt, x, j / K * H + h));
                        w = q8(f16(f16(a * f16(sc[0])) + f16(off)));
                    }
                    rows_bad |= (int8_t)g[h] != w;
                }
            } else {
                const float *sm = c->scale && j >= 0 ? sc + (c->smooth1 ? 0 : (ids[j] - c->start) * H) : NULL;
                float mx = 0.0f;
                for (int64_t h = 0; h < H && j >= 0; h++) {
                    const float y = (float)xval(c->xdt, x, j / K * H + h) * (sm ? sm[h] : 1.0f);
                    mx = fmaxf(mx, fabsf(y));
                }
                const float s = mx / 127.0f;
                sc_bad |= memcmp(&gs, &s, 4) != 0;
                for (int64_t h = 0; h < H; h++) {
                    int8_t w = 0;
                    if (j >= 0 && s != 0.0f) {
                        const float y = (float)xval(c->xdt, x, j / K * H + h) * (sm ? sm[h] : 1.0f);
                        const float qf = y / s;
                        w = q8(qf);
                        /* and within half a step (plus fp32 error) of the float64 quotient */
                        if (fabs((double)w - (double)y / (double)s) > 0.5 + 1e-4 * 128) rows_bad = 1;
                    }
                    rows_bad |= (int8_t)g[h] != w;
                }
            }
        }
        if (untouched && (!tu_all_poison(ex, exb) || !tu_all_poison(esc, (size_t)rows * 4)))
            printf("FAIL %s: INT8 x with quantMode 1 wrote expandedX/expandedScale\n", what), bad = 1;
        if (!escale_out && !tu_all_poison(esc, (size_t)rows * 4 + TU_GUARD))
            printf("FAIL %s: expandedScaleOut written though neither quant 1 nor a quant -1 scale\n", what), bad = 1;
        if (rows_bad || !tu_guard_ok(ex, exb)) printf("FAIL %s: expandedX differs from the oracle\n", what), bad = 1;
        if (sc_bad || !tu_guard_ok(esc, (size_t)rows * 4))
            printf("FAIL %s: expandedScaleOut differs from the oracle\n", what), bad = 1;
    }
    if (bad) g_fail++;
    free(key), free(perm), free(hist), free(wrow), free(src);
    aclDestroyIntArray(ra);
    tu_destroy(tex), tu_destroy(trow), tu_destroy(tcnt), tu_destroy(tesc);
    if (c->quant == 0) tu_destroy(tsc), tu_destroy(toff);
    else if (tsc) tu_free(&sv);
    tu_free(&xv), tu_free(&iv);
    free(x), free(ids), free(sc), free(ex), free(row), free(cnt), free(esc);
    return bad;
}

static vcase random_case(void) {
    vcase c;
    memset(&c, 0, sizeof c);
    c.N = tu_int(1, 40);
    c.K = tu_int(1, 9);
    c.H = tu_int(1, 37);
    c.E = tu_int(1, 20);
    c.mode = tu_chance(25);
    static const aclDataType D[4] = {ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_INT8};
    c.xdt = D[tu_int(0, 3)];
    if (c.mode == 1) {
        c.C = tu_int(1, c.N);
        c.start = 0, c.end = c.E, c.type = 1, c.quant = -1, c.rtype = 0;
    } else {
        c.C = tu_int(-1, 5);
        c.start = tu_int(0, c.E - 1);
        c.end = tu_int(c.start + 1, c.E);
        c.type = tu_int(0, 2);
        c.quant = c.xdt == ACL_INT8 ? (tu_chance(80) ? -1 : 1) : tu_int(-1, 1);
        c.rtype = tu_chance(50);
    }
    if (g_a2 && c.mode == 1 && c.xdt != ACL_INT8 && tu_chance(50)) c.quant = tu_int(0, 1); /* A2: quantised drop/pad */
    if (g_a2 && c.xdt == ACL_INT8) c.quant = -1; /* A2's CheckDtype */
    c.scale = c.quant != 0 && tu_chance(60);
    c.wide = tu_chance(20);
    const int64_t T = c.N * c.K;
    c.active = tu_chance(50) ? -1 : T;
    c.flag = true;
    if (g_a2) {
        const int r = (int)tu_int(0, 3);
        c.active = r == 0 ? -1 : r == 1 ? 0 : tu_int(1, T + 3);
        c.flag = tu_chance(75);
        c.norange = c.start == 0 && c.end == c.E && tu_chance(50);
        c.smooth1 = c.quant == 1 && c.scale && tu_chance(40);
    }
    /* strided x (elements) sometimes; expertIdx column-major sometimes */
    c.xs1 = tu_chance(30) ? 2 : 1;
    c.xs0 = c.H * c.xs1 + (tu_chance(30) ? 3 : 0);
    c.xoff = tu_chance(30) ? 5 : 0;
    if (tu_chance(30)) c.is0 = 1, c.is1 = c.N;
    else c.is0 = c.K, c.is1 = 1;
    return c;
}

/* The aclnnMoeInitRoutingV3.md example: ids (3, 4), range [0, 4], count, scatter layout. */
static void doc_example(void) {
    float x[6] = {0.1f, 0.1f, 0.2f, 0.2f, 0.3f, 0.3f}, ex[24], esc[12];
    int32_t ids[12] = {1, 2, 0, 3, 0, 2, 1, 3, 0, 1, 3, 2}, row[12];
    int64_t cnt[4];
    const int32_t want_row[12] = {2, 4, 8, 0, 6, 9, 1, 5, 11, 3, 7, 10};
    const int64_t want_cnt[4] = {3, 3, 3, 3}, rng[2] = {0, 4};
    aclTensor *tx = tu_mk(2, 3, 2, 0, ACL_FLOAT, x), *ti = tu_mk(2, 3, 4, 0, ACL_INT32, ids);
    aclTensor *te = tu_mk(2, 12, 2, 0, ACL_FLOAT, ex), *tr = tu_mk(1, 12, 0, 0, ACL_INT32, row);
    aclTensor *tc = tu_mk(1, 4, 0, 0, ACL_INT64, cnt), *ts = tu_mk(1, 12, 0, 0, ACL_FLOAT, esc);
    aclIntArray *ra = aclCreateIntArray(rng, 2);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    CHECK_RC(aclnnMoeInitRoutingV3GetWorkspaceSize(tx, ti, NULL, NULL, 12, 4, 4, 0, 1, true, -1, ra, 1, te, tr, tc,
                                                   ts, &ws, &e),
             ACLNN_SUCCESS);
    void *w = malloc(ws + 1);
    CHECK_RC(aclnnMoeInitRoutingV3(w, ws, e, NULL), ACLNN_SUCCESS);
    free(w);
    CHECK(memcmp(row, want_row, sizeof row) == 0, "doc example expandedRowIdx");
    CHECK(memcmp(cnt, want_cnt, sizeof cnt) == 0, "doc example counts");
    for (int i = 0; i < 12; i++) CHECK(ex[2 * i] == x[2 * (want_row[i] / 4)], "doc example row %d", i);
    aclDestroyIntArray(ra);
    tu_destroy(tx), tu_destroy(ti), tu_destroy(te), tu_destroy(tr), tu_destroy(tc), tu_destroy(ts);
}

/* Hand values: static ties go to even, saturation at both ends (an fp16
 * overflow to inf included); dynamic: max element -> +-127. */
static void hand_quant(void) {
    float x[8] = {2.5f, 3.5f, -2.5f, 0.5f, 1000.0f, -1000.0f, 65504.0f, -0.49f}, sc = 1.0f, of = 0.0f, esc[1];
    int32_t id[1] = {0}, row[1];
    int64_t cnt[1];
    int8_t ex[8];
    const int8_t want[8] = {2, 4, -2, 0, 127, -128, 127, 0};
    const int64_t rng[2] = {0, 1};
    aclIntArray *ra = aclCreateIntArray(rng, 2);
    aclTensor *tx = tu_mk(2, 1, 8, 0, ACL_FLOAT, x), *ti = tu_mk(2, 1, 1, 0, ACL_INT32, id);
    aclTensor *tsc = tu_mk(1, 1, 0, 0, ACL_FLOAT, &sc), *tof = tu_mk(1, 1, 0, 0, ACL_FLOAT, &of);
    aclTensor *te = tu_mk(2, 1, 8, 0, ACL_INT8, ex), *tr = tu_mk(1, 1, 0, 0, ACL_INT32, row);
    aclTensor *tc = tu_mk(1, 1, 0, 0, ACL_INT64, cnt), *ts = tu_mk(1, 1, 0, 0, ACL_FLOAT, esc);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    sc = 2.0f; /* 65504 * 2 overflows fp16: +inf -> 127 */
    x[0] = 1.25f, x[1] = 1.75f, x[2] = -1.25f, x[3] = 0.25f;
    CHECK_RC(aclnnMoeInitRoutingV3GetWorkspaceSize(tx, ti, tsc, tof, -1, 0, 1, 0, 1, true, 0, ra, 0, te, tr, tc, ts,
                                                   &ws, &e),
             ACLNN_SUCCESS);
    void *w = malloc(ws + 1);
    CHECK_RC(aclnnMoeInitRoutingV3(w, ws, e, NULL), ACLNN_SUCCESS);
    for (int i = 0; i < 7; i++) CHECK(ex[i] == want[i], "static quant [%d] = %d, want %d", i, ex[i], want[i]);
    CHECK(ex[7] == -1, "static quant -0.98 -> %d, want -1", ex[7]);
    /* dynamic: the largest |x| maps to +-127 and the scale is max/127 */
    float y[8] = {1, -2, 3, -4, 0.5f, 0, 4, 2};
    memcpy(x, y, sizeof y);
    CHECK_RC(aclnnMoeInitRoutingV3GetWorkspaceSize(tx, ti, NULL, NULL, -1, 0, 1, 0, 1, true, 1, ra, 0, te, tr, tc, ts,
                                                   &ws, &e),
             ACLNN_SUCCESS);
    CHECK_RC(aclnnMoeInitRoutingV3(w, ws, e, NULL), ACLNN_SUCCESS);
    CHECK(ex[3] == -127 && ex[6] == 127 && ex[5] == 0, "dynamic extremes %d %d", ex[3], ex[6]);
    CHECK(esc[0] == 4.0f / 127.0f, "dynamic scale %g", (double)esc[0]);
    CHECK(ex[0] == 32 && ex[2] == 95, "dynamic 1 -> %d (31.75 -> 32), 3 -> %d (95.25 -> 95)", ex[0], ex[2]);
    free(w);
    aclDestroyIntArray(ra);
    tu_destroy(tx), tu_destroy(ti), tu_destroy(tsc), tu_destroy(tof), tu_destroy(te), tu_destroy(tr), tu_destroy(tc),
        tu_destroy(ts);
}

/* Every phase-1 rule: its code and that nothing is written. */
static void validation(void) {
    enum { N = 4, K = 2, H = 3, E = 4 };
    float x[N * H] = {0}, sc2[E * H] = {0}, s1 = 1, o1 = 0;
    int32_t ids[N * K] = {0};
    unsigned char *ex = tu_poisoned(N * K * H * 4), *row = tu_poisoned(N * K * 4), *cnt = tu_poisoned(E * 16),
                  *esc = tu_poisoned(N * K * 4);
    aclTensor *tx = tu_mk(2, N, H, 0, ACL_FLOAT, x), *ti = tu_mk(2, N, K, 0, ACL_INT32, ids);
    aclTensor *tx16 = tu_mk(2, N, H, 0, ACL_FLOAT16, x), *txi8 = tu_mk(2, N, H, 0, ACL_INT8, x);
    aclTensor *te = tu_mk(2, N * K, H, 0, ACL_FLOAT, ex), *te8 = tu_mk(2, N * K, H, 0, ACL_INT8, ex);
    aclTensor *te16 = tu_mk(2, N * K, H, 0, ACL_FLOAT16, ex), *te3 = tu_mk(3, E, 2, H, ACL_FLOAT, ex);
    aclTensor *tr = tu_mk(1, N * K, 0, 0, ACL_INT32, row), *tc = tu_mk(1, E, 0, 0, ACL_INT64, cnt);
    aclTensor *tc2 = tu_mk(2, E, 2, 0, ACL_INT64, cnt), *tc3 = tu_mk(1, 3, 0, 0, ACL_INT64, cnt);
    aclTensor *ts = tu_mk(1, N * K, 0, 0, ACL_FLOAT, esc), *ts8 = tu_mk(1, E * 2, 0, 0, ACL_FLOAT, esc);
    aclTensor *tsm = tu_mk(2, E, H, 0, ACL_FLOAT, sc2), *tsm3 = tu_mk(2, 3, H, 0, ACL_FLOAT, sc2);
    aclTensor *ts1 = tu_mk(1, 1, 0, 0, ACL_FLOAT, &s1), *to1 = tu_mk(1, 1, 0, 0, ACL_FLOAT, &o1);
    aclTensor *tsN = tu_mk(1, N, 0, 0, ACL_FLOAT, sc2);
    const int64_t r04[2] = {0, 4}, r13[2] = {1, 3}, r05[2] = {0, 5}, r22[2] = {2, 2}, rneg[2] = {-1, 2}, r1[1] = {0};
    aclIntArray *a04 = aclCreateIntArray(r04, 2), *a13 = aclCreateIntArray(r13, 2), *a05 = aclCreateIntArray(r05, 2),
                *a22 = aclCreateIntArray(r22, 2), *aneg = aclCreateIntArray(rneg, 2), *a1 = aclCreateIntArray(r1, 1);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
#define V3(X, S, O, act, cap, en, mode, type, flag, q, rng, rt, EX, R, C, ES, want)                                   \
    CHECK(!tu_phase1_bad(aclnnMoeInitRoutingV3GetWorkspaceSize(X, ti, S, O, act, cap, en, mode, type, flag, q, rng, rt, \
                                                              EX, R, C, ES, &ws, &e),                                \
                         e, want, NULL, __LINE__),                                                                    \
          "rule at line %d", __LINE__)
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, -1, a04, 0, te, tr, tc, ts, ACLNN_SUCCESS);
    V3(tx, NULL, NULL, -1, 0, E, 0, 3, true, -1, a04, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);  /* type */
    V3(tx, NULL, NULL, -1, 2, E, 1, 0, true, -1, a04, 0, te3, tr, tc, ts8, ACLNN_ERR_INNER_TILING_ERROR); /* drop: count */
    V3(tx, NULL, NULL, -1, 2, E, 1, 1, true, -1, a04, 0, te3, tr, tc, ts8, ACLNN_SUCCESS);
    V3(tx, NULL, NULL, -1, 2, 0, 0, 1, true, -1, a04, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);   /* E = 0 */
    V3(tx, NULL, NULL, -1, 0, 5121, 0, 2, true, -1, a04, 0, te, tr, tc2, ts, ACLNN_ERR_INNER_TILING_ERROR); /* kv E */
    V3(tx, NULL, NULL, -1, 0, E, 2, 1, true, -1, a04, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);   /* mode */
    V3(tx, NULL, NULL, -1, 0, E, 1, 1, true, -1, a04, 0, te3, tr, tc, ts8, ACLNN_ERR_INNER_TILING_ERROR); /* C = 0 */
    V3(tx, NULL, NULL, -1, 5, E, 1, 1, true, -1, a04, 0, te3, tr, tc, ts8, ACLNN_ERR_INNER_TILING_ERROR); /* C > N */
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, false, -1, a04, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);  /* flag */
    V3(tx, NULL, NULL, -1, 2, E, 1, 1, true, 1, a04, 0, te3, tr, tc, ts8, ACLNN_ERR_INNER_TILING_ERROR);  /* drop quant */
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, 2, a04, 0, te8, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);   /* mxfp8 */
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, 10, a04, 0, te8, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);  /* no 10 */
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, 13, a04, 0, te8, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);  /* int4 */
    V3(tx, NULL, NULL, -1, 2, E, 1, 1, true, -1, a04, 1, te3, tr, tc, ts8, ACLNN_ERR_INNER_TILING_ERROR); /* drop rt */
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, -1, a04, 2, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);   /* rt 2 */
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, -1, NULL, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);  /* no range */
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, -1, a1, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);    /* 1 value */
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, -1, aneg, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);  /* start < 0 */
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, -1, a22, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);   /* empty */
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, -1, a05, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);   /* end > E */
    V3(tx, NULL, NULL, -1, 2, E, 1, 1, true, -1, a13, 0, te3, tr, tc3, ts8, ACLNN_ERR_INNER_TILING_ERROR); /* drop rng */
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, -1, a13, 0, te, tr, tc3, ts, ACLNN_ERR_INNER_TILING_ERROR);  /* cnt dim0 != 2 */
    V3(txi8, ts1, to1, -1, 0, E, 0, 1, true, 0, a04, 0, te8, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR); /* int8 static */
    V3(txi8, NULL, NULL, -1, 0, E, 0, 1, true, 1, a04, 0, te8, tr, tc, ts, ACLNN_SUCCESS);             /* int8 dynamic */
    V3(txi8, NULL, NULL, -1, 0, E, 0, 1, true, -1, a04, 0, te8, tr, tc, ts, ACLNN_SUCCESS);            /* int8 moved */
    V3(tx, NULL, to1, -1, 0, E, 0, 1, true, 0, a04, 0, te8, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);   /* no scale */
    V3(tx, ts1, NULL, -1, 0, E, 0, 1, true, 0, a04, 0, te8, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);   /* no offset */
    V3(tx, tsN, to1, -1, 0, E, 0, 1, true, 0, a04, 0, te8, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);    /* scale (N) */
    V3(tx, ts1, to1, -1, 0, E, 0, 1, true, 0, a04, 0, te8, tr, tc, NULL, ACLNN_ERR_PARAM_NULLPTR);       /* 4 outs */
    V3(tx, ts1, to1, -1, 0, E, 0, 1, true, 0, a04, 0, te8, tr, tc, ts, ACLNN_SUCCESS);
    V3(tx, tsm, NULL, -1, 0, E, 0, 1, true, 1, a04, 0, te8, tr, tc, ts, ACLNN_SUCCESS);
    V3(tx, tsm3, NULL, -1, 0, E, 0, 1, true, 1, a04, 0, te8, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);  /* smooth L */
    V3(tx, tsm, NULL, -1, 0, E, 0, 1, true, 1, a04, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);    /* out fp32 */
    V3(tx, tsN, NULL, -1, 0, E, 0, 1, true, -1, a04, 0, te, tr, tc, ts, ACLNN_SUCCESS);
    V3(tx, tsm, NULL, -1, 0, E, 0, 1, true, -1, a04, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);   /* scale 2-D */
    V3(tx, NULL, NULL, 3, 0, E, 0, 1, true, -1, a04, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);   /* activeNum */
    V3(tx, NULL, NULL, 0, 0, E, 0, 1, true, -1, a04, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);   /* activeNum 0 */
    V3(tx, NULL, NULL, N * K, 0, E, 0, 1, true, -1, a04, 0, te, tr, tc, ts, ACLNN_SUCCESS);
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, -1, a04, 0, te3, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR); /* ex rank */
    V3(tx, NULL, NULL, -1, 0, E, 0, 2, true, -1, a04, 0, te, tr, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);  /* kv rank */
    V3(tx, NULL, NULL, -1, 0, E, 0, 2, true, -1, a04, 0, te, tr, tc2, ts, ACLNN_SUCCESS);
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, -1, a04, 0, te8, tr, tc, ts, ACLNN_ERR_PARAM_INVALID);      /* f32 -> i8 */
    V3(tx, NULL, NULL, -1, 0, E, 0, 1, true, -1, a04, 0, te16, tr, tc, ts, ACLNN_ERR_PARAM_INVALID);     /* f32 -> f16 */
    V3(tx16, NULL, NULL, -1, 0, E, 0, 1, true, -1, a04, 0, te, tr, tc, ts, ACLNN_ERR_PARAM_INVALID);     /* table */
#undef V3
    CHECK(tu_all_poison(ex, N * K * H * 4) && tu_all_poison(row, N * K * 4) && tu_all_poison(cnt, E * 16) &&
              tu_all_poison(esc, N * K * 4),
          "phase 1 wrote an output");
    aclDestroyIntArray(a04), aclDestroyIntArray(a13), aclDestroyIntArray(a05), aclDestroyIntArray(a22),
        aclDestroyIntArray(aneg), aclDestroyIntArray(a1);
    aclTensor *all[] = {tx, ti, tx16, txi8, te, te8, te16, te3, tr, tc, tc2, tc3, ts, ts8, tsm, tsm3, ts1, to1, tsN};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) tu_destroy(all[i]);
    free(ex), free(row), free(cnt), free(esc);
}

/* The A2/A3 rules that differ from Ascend 950's (MOEFR_SOC=ascend910b). */
static void validation_a2(void) {
    enum { N = 4, K = 2, H = 3, E = 4 };
    float x[N * H] = {0}, sc2[E * H] = {0};
    int32_t ids[N * K] = {0};
    unsigned char *ex = tu_poisoned(N * K * H * 4), *row = tu_poisoned(N * K * 4), *cnt = tu_poisoned(E * 16),
                  *esc = tu_poisoned(N * K * 4);
    aclTensor *tx = tu_mk(2, N, H, 0, ACL_FLOAT, x), *ti = tu_mk(2, N, K, 0, ACL_INT32, ids);
    aclTensor *txi8 = tu_mk(2, N, H, 0, ACL_INT8, x);
    aclTensor *te = tu_mk(2, N * K, H, 0, ACL_FLOAT, ex), *te5 = tu_mk(2, 5, H, 0, ACL_FLOAT, ex);
    aclTensor *te8 = tu_mk(2, N * K, H, 0, ACL_INT8, ex), *te3 = tu_mk(3, E, 2, H, ACL_FLOAT, ex);
    aclTensor *tr = tu_mk(1, N * K, 0, 0, ACL_INT32, row), *tc = tu_mk(1, E, 0, 0, ACL_INT64, cnt);
    aclTensor *tc9 = tu_mk(1, 9, 0, 0, ACL_INT64, cnt), *ts = tu_mk(1, N * K, 0, 0, ACL_FLOAT, esc);
    aclTensor *ts5 = tu_mk(1, 5, 0, 0, ACL_FLOAT, esc), *tsm1 = tu_mk(2, 1, H, 0, ACL_FLOAT, sc2);
    aclTensor *tsm2 = tu_mk(2, 2, H, 0, ACL_FLOAT, sc2);
    const int64_t r04[2] = {0, 4}, r13[2] = {1, 3}, r1[1] = {0};
    aclIntArray *a04 = aclCreateIntArray(r04, 2), *a13 = aclCreateIntArray(r13, 2), *a1 = aclCreateIntArray(r1, 1),
                *a0 = aclCreateIntArray(r04, 0);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
#define A2(X, S, act, cap, mode, type, flag, q, rng, rt, EX, C, ES, want)                                             \
    CHECK(!tu_phase1_bad(aclnnMoeInitRoutingV3GetWorkspaceSize(X, ti, S, NULL, act, cap, E, mode, type, flag, q, rng,  \
                                                              rt, EX, tr, C, ES, &ws, &e),                           \
                         e, want, NULL, __LINE__),                                                                    \
          "A2 rule at line %d", __LINE__)
    A2(tx, NULL, -1, 0, 0, 1, true, -1, a0, 0, te, tc, ts, ACLNN_SUCCESS);             /* empty range: [0, E] */
    A2(tx, NULL, -1, 0, 0, 1, true, -1, NULL, 0, te, tc, ts, ACLNN_SUCCESS);
    A2(tx, NULL, -1, 0, 0, 1, true, -1, a1, 0, te, tc, ts, ACLNN_ERR_INNER_TILING_ERROR); /* one value */
    A2(tx, NULL, -1, 0, 0, 1, false, -1, a04, 0, te, tc9, ts, ACLNN_SUCCESS);          /* flag false: counts unchecked */
    A2(tx, NULL, 5, 0, 0, 1, true, -1, a04, 0, te5, tc, ts5, ACLNN_SUCCESS);           /* activeNum 5 rows */
    A2(tx, NULL, 5, 0, 0, 1, true, -1, a04, 0, te, tc, ts, ACLNN_ERR_INNER_TILING_ERROR); /* rows != 5 */
    A2(tx, NULL, 0, 0, 0, 1, true, -1, a04, 0, te, tc, ts, ACLNN_SUCCESS);             /* 0: all */
    A2(tx, NULL, 99, 0, 0, 1, true, -1, a04, 0, te, tc, ts, ACLNN_SUCCESS);            /* past T: T */
    A2(tx, NULL, -2, 0, 0, 1, true, -1, a04, 0, te, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);
    A2(tx, tsm1, -1, 0, 0, 1, true, 1, a13, 0, te8, tc, ts, ACLNN_ERR_INNER_TILING_ERROR); /* counts 2 != 4 */
    A2(tx, tsm1, -1, 0, 0, 1, false, 1, a13, 0, te8, tc, ts, ACLNN_SUCCESS);           /* (1, H) smooth */
    A2(tx, tsm2, -1, 0, 0, 1, false, 1, a13, 0, te8, tc, ts, ACLNN_SUCCESS);           /* (L, H) smooth */
    A2(tx, tsm2, -1, 0, 0, 1, false, 1, a04, 0, te8, tc, ts, ACLNN_ERR_INNER_TILING_ERROR); /* L = 4 */
    A2(tx, NULL, -1, 2, 1, 0, false, 1, a04, 0, te3, tc, ts, ACLNN_ERR_INNER_TILING_ERROR); /* quantised: INT8 out */
    A2(txi8, NULL, -1, 0, 0, 1, true, 1, a04, 0, te8, tc, ts, ACLNN_ERR_INNER_TILING_ERROR); /* INT8 x quantised */
    A2(tx, NULL, -1, 0, 0, 1, true, 2, a04, 0, te8, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);   /* quant 2 */
    A2(tx, NULL, -1, 2, 1, 0, true, -1, a04, 0, te3, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);  /* drop: count */
    A2(tx, NULL, -1, 2, 1, 0, false, -1, a04, 0, te3, tc, ts, ACLNN_SUCCESS);          /* ... unless no flag */
    A2(tx, NULL, -1, 2, 1, 1, true, -1, a04, 1, te3, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);  /* drop: gather */
    A2(tx, NULL, -1, 5, 1, 1, true, -1, a04, 0, te3, tc, ts, ACLNN_ERR_INNER_TILING_ERROR);  /* C > N */
#undef A2
    CHECK(tu_all_poison(ex, N * K * H * 4) && tu_all_poison(row, N * K * 4) && tu_all_poison(cnt, E * 16) &&
              tu_all_poison(esc, N * K * 4),
          "A2 phase 1 wrote an output");
    aclDestroyIntArray(a04), aclDestroyIntArray(a13), aclDestroyIntArray(a1), aclDestroyIntArray(a0);
    aclTensor *all[] = {tx, ti, txi8, te, te5, te8, te3, tr, tc, tc9, ts, ts5, tsm1, tsm2};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) tu_destroy(all[i]);
    free(ex), free(row), free(cnt), free(esc);
}

int main(void) {
    tu_seed("test_init_routing_v3");
    g_a2 = getenv("MOEFR_SOC") != NULL && strcmp(getenv("MOEFR_SOC"), "ascend910b") == 0;
    if (g_a2) validation_a2();
    else validation();
    doc_example();
    hand_quant();
    int fails = 0;
    for (int i = 0; i < 600; i++) {
        vcase c = random_case();
        fails += run_case(&c);
    }
    /* one case past the sort's and gather's parallel thresholds */
    vcase big = {4096, 8, 67, 64, 0, 8, 40, 0, 1, 1, 1, true, ACL_BF16, 67, 1, 0, 8, 1, 1, -1, true, false, false};
    fails += run_case(&big);
    big.quant = -1, big.rtype = 0, big.type = 2, big.xdt = ACL_FLOAT;
    fails += run_case(&big);
    printf("test_init_routing_v3: %d random cases, %d checks, %d failed\n", g_cases, g_checks, g_fail);
    return g_fail != 0;
}
