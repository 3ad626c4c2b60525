/* test_init_routing_quant.c - aclnnMoeInitRoutingQuant (V1) and
 * aclnnMoeInitRoutingQuantV2 against independent oracles: the routing from
 * a comparison sort of (expert, flat position) as in the docs' formulas,
 * and the int8 quantisation as a plain float64 loop that performs every
 * rounding of CANN's kernels explicitly (moe_quant_gather_out.h,
 * moe_v2_gather_quant.h, moe_v2_gather_dynamic_quant.h): static - fp16
 * round-to-nearest-even after the cast, the product and the sum (via
 * fr_round, the tests' own rounding), rint half to even, saturation;
 * dynamic - fp32 products and quotients (float64 then one rounding to
 * fp32), max|v| / 127, the quotient truncated to fp16 toward zero, then
 * rounded half away from zero, saturation. Hand-computed rows contrast the
 * two rounding modes (63.5 -> 64 both, -0.5 -> 0 static / -1 dynamic,
 * 2.5 -> 2 / 3). Random cases: every dtype, both versions, every V2 mode,
 * flag and smooth kind (none, (1, H), (E, H)), activeNum 0 / inside / past,
 * drops and empty slots, tails not multiples of 8, strided x, ids and
 * scales, poisoned outputs with guard bytes, a case past the parallel
 * threshold. Then the validation rules with codes and messages, and phase-2
 * rejections that leave every output untouched. `--a2`: run under
 * MOEFR_SOC=ascend910b (same tables). */
#include <math.h>

#include "aclnnop/aclnn_moe_init_routing_quant.h"
#include "aclnnop/aclnn_moe_init_routing_quant_v2.h"
#define TU_COUNT_FAILURES /* CHECK counts and goes on */
#include "testutil.h"

static const aclDataType XDT[3] = {ACL_FLOAT16, ACL_BF16, ACL_FLOAT};
static int fr_of(aclDataType dt) { return dt == ACL_FLOAT ? FR_F32 : dt == ACL_FLOAT16 ? FR_F16 : FR_BF16; }

/* ---- the quantisation oracle (float64 with every rounding spelt out) ---- */
static double h16(double v) { /* to fp16, nearest even */
    uint32_t b = fr_round(FR_F16, v);
    uint16_t h = (uint16_t)b;
    return fr_decode(FR_F16, &h, 0);
}
static double f32(double v) { return (double)(float)v; }
static double trunc16(double q) { /* to fp16 toward zero; past the largest finite: 65504 */
    if (q != q || q == 0) return q;
    double a = fabs(q), r;
    if (a >= 65504.0) r = isinf(a) ? a : 65504.0;
    else {
        int e;
        frexp(a, &e); /* a in [2^(e-1), 2^e) */
        int ue = e - 1 < -14 ? -14 : e - 1;
        double quantum = ldexp(1.0, ue - 10);
        r = floor(a / quantum) * quantum;
    }
    return q < 0 ? -r : r;
}
static int8_t sat(double r) {
    if (r != r) return 0;
    return r > 127 ? 127 : r < -128 ? -128 : (int8_t)r;
}
static int8_t q_static(double x, double hs, double ho) {
    const double a = h16(x), m = h16(a * hs), r = h16(m + ho);
    return sat(nearbyint(r));
}
/* one dynamic row: v[h] = f32(x*sm); returns s */
static float q_dynamic(const double *x, const double *sm, int64_t H, int8_t *out) {
    double m = 0;
    double *v = malloc(sizeof *v * (size_t)(H + 1));
    for (int64_t h = 0; h < H; h++) {
        v[h] = sm ? f32(x[h] * sm[h]) : x[h];
        if (fabs(v[h]) > m) m = fabs(v[h]);
    }
    const double s = f32(m / 127.0);
    for (int64_t h = 0; h < H; h++) {
        const double t = trunc16(f32(v[h] / s));
        out[h] = sat(t != t ? t : t >= 0 ? floor(t + 0.5) : -floor(-t + 0.5));
    }
    free(v);
    return (float)s;
}

/* ---- inputs ---- */
/* x values rounded to dt: kind 0 wide random, 1 quarters (ties), 2 with zero rows */
static void fill_x(aclDataType dt, void *x, double *xv, int64_t N, int64_t H, int kind) {
    const int fr = fr_of(dt);
    for (int64_t r = 0; r < N; r++) {
        const bool zero_row = kind == 2 && tu_chance(30);
        for (int64_t h = 0; h < H; h++) {
            double v;
            int c = (int)tu_int(0, 99);
            if (zero_row) v = c < 50 ? 0.0 : -0.0;
            else if (kind == 1) v = (double)tu_int(-600, 600) / 4;
            else v = c < 3 ? 0.0 : c < 6 ? (tu_unit() - 0.5) * 2e5 : c < 20 ? (tu_unit() - 0.5) * 600 : tu_unit() * 6 - 3;
            tu_put(fr, x, r * H + h, v);
            xv[r * H + h] = fr_decode(fr, x, r * H + h);
        }
    }
}

static int cmp_bytes(const char *what, const char *name, const unsigned char *got, const void *want, size_t n) {
    if (memcmp(got, want, n) == 0 && tu_guard_ok(got, n)) return 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != ((const unsigned char *)want)[i]) {
            printf("FAIL %s: %s byte %zu = %d, want %d\n", what, name, i, (int)(int8_t)got[i],
                   (int)((const int8_t *)want)[i]);
            return 1;
        }
    printf("FAIL %s: %s guard bytes overwritten\n", what, name);
    return 1;
}

/* ================= V1: aclnnMoeInitRoutingQuant ================= */
static aclnnStatus call1(const aclTensor *x, const aclTensor *ri, const aclTensor *ei, int64_t active, double sc,
                         double of, const aclTensor *ex, const aclTensor *row, const aclTensor *eex, int *phase) {
    uint64_t wsz = 0;
    aclOpExecutor *e = NULL;
    *phase = 1;
    aclnnStatus rc = aclnnMoeInitRoutingQuantGetWorkspaceSize(x, ri, ei, active, sc, of, ex, row, eex, &wsz, &e);
    if (rc != ACLNN_SUCCESS) return rc;
    *phase = 2;
    unsigned char *ws = wsz ? malloc(wsz) : NULL;
    if (ws) memset(ws, TU_POISON, wsz);
    rc = aclnnMoeInitRoutingQuant(ws, wsz, e, NULL);
    free(ws);
    return rc;
}

static void run_v1(int64_t N, int64_t K, int64_t H, int64_t E, int64_t active, aclDataType xdt, int xkind,
                   bool strided, bool perm_rows) {
    const int64_t T = N * K, A = (active < N ? active : N) * K;
    const size_t es = xdt == ACL_FLOAT ? 4 : 2;
    void *x = malloc((size_t)(N * H) * es + 4);
    double *xv = malloc(sizeof *xv * (size_t)(N * H + 1));
    fill_x(xdt, x, xv, N, H, xkind);
    int32_t *ids = malloc(4 * (size_t)(T + 1)), *ridx = malloc(4 * (size_t)(T + 1));
    int64_t *key = malloc(8 * (size_t)(T + 1)), *perm = malloc(8 * (size_t)(T + 1));
    for (int64_t j = 0; j < T; j++) ids[j] = (int32_t)tu_int(-2, E - 1), key[j] = ids[j];
    for (int64_t r = 0; r < N; r++)
        for (int64_t k = 0; k < K; k++) ridx[r * K + k] = (int32_t)(k * N + r);
    if (perm_rows)
        for (int64_t j = T - 1; j > 0; j--) {
            const int64_t s = tu_int(0, j);
            const int32_t t = ridx[j];
            ridx[j] = ridx[s], ridx[s] = t;
        }
    const double sc = xkind == 1 ? (double)tu_int(-8, 8) / 4 : (tu_unit() - 0.5) * 200;
    const double of = xkind == 1 ? (double)tu_int(-8, 8) / 4 : (tu_unit() - 0.5) * 8;
    tu_owned xo = strided ? tu_make_view(x, 2, N, H, xdt, es, 3, H * 2 + 1, 2) : tu_make_view(x, 2, N, H, xdt, es, 0, H, 1);
    /* strided: rowIdx in a transposed layout, (r, k) at 1 + r + k*N */
    tu_owned ro = strided ? tu_make_view(ridx, 2, N, K, ACL_INT32, 4, 1, 1, N) : tu_make_view(ridx, 2, N, K, ACL_INT32, 4, 0, K, 1);
    tu_owned eo = tu_make_view(ids, 2, N, K, ACL_INT32, 4, strided ? 2 : 0, strided ? 2 * K + 3 : K, strided ? 2 : 1);
    const size_t exb = (size_t)(A * H), rb = (size_t)T * 4;
    unsigned char *ex = tu_poisoned(exb), *row = tu_poisoned(rb), *eex = tu_poisoned(rb);
    aclTensor *tex = tu_mk(2, A, H, 0, ACL_INT8, ex), *trow = tu_mk(1, T, 0, 0, ACL_INT32, row),
              *teex = tu_mk(1, T, 0, 0, ACL_INT32, eex);
    int phase;
    aclnnStatus rc = call1(xo.t, ro.t, eo.t, active, sc, of, tex, trow, teex, &phase);
    char what[200];
    snprintf(what, sizeof what, "V1 N=%lld K=%lld H=%lld E=%lld active=%lld xdt=%d kind=%d strided=%d",
             (long long)N, (long long)K, (long long)H, (long long)E, (long long)active, (int)xdt, xkind, strided);
    g_cases++;
    CHECK(rc == ACLNN_SUCCESS, "%s: phase %d = %d (%s)", what, phase, rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        tu_ref_sort(key, T, perm);
        int32_t *wrow = calloc((size_t)T + 1, 4), *weex = malloc(rb + 4);
        int8_t *wx = malloc(exb + 1);
        const double hs = h16((float)sc), ho = h16((float)of);
        for (int64_t i = 0; i < T; i++) {
            const int32_t s = ridx[perm[i]];
            wrow[s] = (int32_t)i;
            weex[i] = (int32_t)key[perm[i]];
            if (i < A)
                for (int64_t h = 0; h < H; h++) wx[i * H + h] = q_static(xv[(s % N) * H + h], hs, ho);
        }
        CHECK(!cmp_bytes(what, "expandedXOut", ex, wx, exb), "%s", what);
        CHECK(!cmp_bytes(what, "expandedRowIdxOut", row, wrow, rb), "%s", what);
        CHECK(!cmp_bytes(what, "expandedExpertIdxOut", eex, weex, rb), "%s", what);
        free(wrow), free(weex), free(wx);
    }
    aclDestroyTensor(tex), aclDestroyTensor(trow), aclDestroyTensor(teex);
    tu_free(&xo), tu_free(&ro), tu_free(&eo);
    free(ex), free(row), free(eex), free(x), free(xv), free(ids), free(ridx), free(key), free(perm);
}

/* ================= V2: aclnnMoeInitRoutingQuantV2 ================= */
typedef struct q2case {
    int64_t N, K, H, E, C, active, mode, cflag, qmode;
    bool bflag;
    int smooth; /* 0 none, 1 (1, H), 2 (E, H) */
    int xkind;
    bool strided;
    aclDataType xdt;
} q2case;

typedef struct q2out {
    unsigned char *ex, *row, *cnt, *bef, *dqs;
    size_t exb, rb, cb, db;
    aclTensor *tex, *trow, *tcnt, *tbef, *tdqs;
} q2out;

static aclnnStatus call2(const aclTensor *x, const aclTensor *ei, const aclTensor *sc, const aclTensor *of,
                         const q2case *c, const q2out *o, int *phase) {
    uint64_t wsz = 0;
    aclOpExecutor *e = NULL;
    *phase = 1;
    aclnnStatus rc = aclnnMoeInitRoutingQuantV2GetWorkspaceSize(x, ei, sc, of, c->active, c->C, c->E, c->mode, c->cflag,
                                                                c->bflag, c->qmode, o->tex, o->trow, o->tcnt, o->tbef,
                                                                o->tdqs, &wsz, &e);
    if (rc != ACLNN_SUCCESS) return rc;
    *phase = 2;
    unsigned char *ws = wsz ? malloc(wsz) : NULL;
    if (ws) memset(ws, TU_POISON, wsz);
    rc = aclnnMoeInitRoutingQuantV2(ws, wsz, e, NULL);
    free(ws);
    return rc;
}

static int64_t rows_a(const q2case *c) {
    const int64_t T = c->N * c->K;
    return c->active <= 0 ? T : (c->active < T ? c->active : T); /* (negative: refused; any shape) */
}

static q2out make_out(const q2case *c) {
    q2out o;
    memset(&o, 0, sizeof o);
    const int64_t T = c->N * c->K, A = rows_a(c), R = c->mode == 1 ? c->E * c->C : A;
    o.exb = (size_t)(R * c->H), o.rb = (size_t)T * 4, o.cb = (size_t)c->E * 4, o.db = (size_t)R * 4;
    o.ex = tu_poisoned(o.exb), o.row = tu_poisoned(o.rb), o.cnt = tu_poisoned(o.cb), o.bef = tu_poisoned(o.cb);
    o.dqs = tu_poisoned(o.db);
    o.tex = c->mode == 1 ? tu_mk(3, c->E, c->C, c->H, ACL_INT8, o.ex) : tu_mk(2, A, c->H, 0, ACL_INT8, o.ex);
    o.trow = tu_mk(1, T, 0, 0, ACL_INT32, o.row);
    o.tcnt = c->mode == 0 && c->cflag ? tu_mk(1, c->E, 0, 0, ACL_INT32, o.cnt) : NULL;
    o.tbef = c->mode == 1 && c->bflag ? tu_mk(1, c->E, 0, 0, ACL_INT32, o.bef) : NULL;
    o.tdqs = c->qmode == 1 ? tu_mk(1, R, 0, 0, ACL_FLOAT, o.dqs) : NULL;
    return o;
}
static void free_out(q2out *o) {
    aclTensor *ts[5] = {o->tex, o->trow, o->tcnt, o->tbef, o->tdqs};
    for (int i = 0; i < 5; i++)
        if (ts[i]) aclDestroyTensor(ts[i]);
    free(o->ex), free(o->row), free(o->cnt), free(o->bef), free(o->dqs);
}
static bool out_untouched(const q2out *o) {
    return tu_all_poison(o->ex, o->exb + TU_GUARD) && tu_all_poison(o->row, o->rb + TU_GUARD) &&
           tu_all_poison(o->cnt, o->cb + TU_GUARD) && tu_all_poison(o->bef, o->cb + TU_GUARD) &&
           tu_all_poison(o->dqs, o->db + TU_GUARD);
}

static void run_v2(const q2case *c) {
    const int64_t N = c->N, K = c->K, H = c->H, E = c->E, C = c->C, T = N * K;
    const size_t es = c->xdt == ACL_FLOAT ? 4 : 2;
    void *x = malloc((size_t)(N * H) * es + 4);
    double *xv = malloc(sizeof *xv * (size_t)(N * H + 1));
    fill_x(c->xdt, x, xv, N, H, c->xkind);
    const bool bounded = c->mode == 1 || c->cflag != 0 || c->smooth == 2;
    int32_t *ids = malloc(4 * (size_t)(T + 1));
    int64_t *key = malloc(8 * (size_t)(T + 1)), *perm = malloc(8 * (size_t)(T + 1));
    for (int64_t j = 0; j < T; j++) ids[j] = (int32_t)(bounded ? tu_int(0, E - 1) : tu_int(0, E + 3)), key[j] = ids[j];
    const int64_t SR = c->smooth == 2 ? E : 1;
    float *sm = malloc(sizeof *sm * (size_t)(SR * H + 1));
    for (int64_t i = 0; i < SR * H; i++) sm[i] = (float)(tu_chance(5) ? 0.0 : (tu_unit() - 0.3) * 3);
    float so[2] = {(float)(c->xkind == 1 ? (double)tu_int(-8, 8) / 4 : (tu_unit() - 0.5) * 200),
                   (float)(c->xkind == 1 ? (double)tu_int(-8, 8) / 4 : (tu_unit() - 0.5) * 8)};
    const bool st = c->strided;
    tu_owned xo = st ? tu_make_view(x, 2, N, H, c->xdt, es, 3, H * 2 + 1, 2) : tu_make_view(x, 2, N, H, c->xdt, es, 0, H, 1);
    tu_owned eo = tu_make_view(ids, 2, N, K, ACL_INT32, 4, st ? 2 : 0, st ? 2 * K + 3 : K, st ? 2 : 1);
    tu_owned so0 = {0}, so1 = {0};
    if (c->qmode == 0) {
        so0 = tu_make_view(&so[0], 1, 1, 1, ACL_FLOAT, 4, st ? 3 : 0, 1, 0);
        so1 = tu_make_view(&so[1], 1, 1, 1, ACL_FLOAT, 4, st ? 1 : 0, 1, 0);
    } else if (c->smooth) {
        so0 = st ? tu_make_view(sm, 2, SR, H, ACL_FLOAT, 4, 1, 3 * H, 3) : tu_make_view(sm, 2, SR, H, ACL_FLOAT, 4, 0, H, 1);
        if (tu_chance(50)) so1 = tu_make_view(&so[1], 1, 1, 1, ACL_FLOAT, 4, 0, 1, 0); /* ignored */
    }
    q2out o = make_out(c);
    int phase;
    aclnnStatus rc = call2(xo.t, eo.t, so0.t, so1.t, c, &o, &phase);
    char what[256];
    snprintf(what, sizeof what,
             "V2 N=%lld K=%lld H=%lld E=%lld C=%lld active=%lld mode=%lld cflag=%lld bflag=%d qmode=%lld smooth=%d "
             "xdt=%d kind=%d strided=%d",
             (long long)N, (long long)K, (long long)H, (long long)E, (long long)C, (long long)c->active,
             (long long)c->mode, (long long)c->cflag, c->bflag, (long long)c->qmode, c->smooth, (int)c->xdt, c->xkind,
             st);
    g_cases++;
    CHECK(rc == ACLNN_SUCCESS, "%s: phase %d = %d (%s)", what, phase, rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        tu_ref_sort(key, T, perm);
        const int64_t A = rows_a(c), R = c->mode == 1 ? E * C : A;
        int32_t *wrow = malloc(o.rb + 4), *wcnt = calloc((size_t)E + 1, 4), *src = malloc(4 * (size_t)(R + 1));
        int8_t *wx = calloc(o.exb + 1, 1);
        float *wd = calloc((size_t)R + 1, 4);
        int64_t *cnt = calloc((size_t)E + 4 + 1, 8);
        for (int64_t j = 0; j < T; j++)
            if (key[j] < E) cnt[key[j]]++;
        if (c->mode == 0) {
            for (int64_t i = 0; i < T; i++) wrow[perm[i]] = (int32_t)i;
            for (int64_t i = 0; i < A; i++) src[i] = (int32_t)perm[i];
            int64_t run = 0;
            for (int64_t e = 0; e < E; e++) run += cnt[e], wcnt[e] = (int32_t)(c->cflag == 1 ? run : cnt[e]);
        } else {
            for (int64_t i = 0; i < R; i++) src[i] = -1;
            int64_t i = 0;
            for (int64_t e = 0; e < E; e++)
                for (int64_t s = 0; s < cnt[e]; s++, i++) {
                    if (s < C) src[e * C + s] = (int32_t)perm[i], wrow[perm[i]] = (int32_t)(e * C + s);
                    else wrow[perm[i]] = -1;
                }
            for (int64_t e = 0; e < E; e++) wcnt[e] = (int32_t)cnt[e];
        }
        double *smv = malloc(sizeof *smv * (size_t)(H + 1));
        const double hs = h16(so[0]), ho = h16(so[1]);
        for (int64_t i = 0; i < R; i++) {
            if (src[i] < 0) continue; /* zeros */
            const int64_t j = src[i], tok = j / K;
            if (c->qmode == 0) {
                for (int64_t h = 0; h < H; h++) wx[i * H + h] = q_static(xv[tok * H + h], hs, ho);
            } else {
                const int64_t srow = c->smooth == 2 ? key[j] : 0;
                for (int64_t h = 0; h < H; h++) smv[h] = sm[srow * H + h];
                wd[i] = q_dynamic(xv + tok * H, c->smooth ? smv : NULL, H, wx + i * H);
            }
        }
        CHECK(!cmp_bytes(what, "expandedXOut", o.ex, wx, o.exb), "%s", what);
        CHECK(!cmp_bytes(what, "expandedRowIdxOut", o.row, wrow, o.rb), "%s", what);
        if (o.tcnt) CHECK(!cmp_bytes(what, "countOrCumsum", o.cnt, wcnt, o.cb), "%s", what);
        else CHECK(tu_all_poison(o.cnt, o.cb + TU_GUARD), "%s: count written", what);
        if (o.tbef) CHECK(!cmp_bytes(what, "beforeCapacity", o.bef, wcnt, o.cb), "%s", what);
        else CHECK(tu_all_poison(o.bef, o.cb + TU_GUARD), "%s: before written", what);
        if (o.tdqs) CHECK(!cmp_bytes(what, "dynamicQuantScale", o.dqs, wd, o.db), "%s", what);
        free(wrow), free(wcnt), free(src), free(wx), free(wd), free(cnt), free(smv);
    }
    free_out(&o);
    tu_free(&xo), tu_free(&eo);
    if (so0.t) tu_free(&so0);
    if (so1.t) tu_free(&so1);
    free(x), free(xv), free(ids), free(key), free(perm), free(sm);
}

static q2case random_v2(int i) {
    q2case c;
    memset(&c, 0, sizeof c);
    c.N = tu_int(0, 2) == 0 ? tu_int(0, 3) : tu_int(1, 40);
    c.K = tu_int(1, 5);
    c.H = tu_chance(20) ? tu_int(0, 3) : tu_int(1, 70);
    if (i == 0) c.N = 300, c.K = 4, c.H = 700; /* past the parallel thresholds */
    if (i == 1 || i == 2) /* rows of more than two tiles of 4096 (quant_int8.c), and of just over one */
        c.N = tu_int(1, 6), c.H = i == 1 ? 2 * 4096 + 5 : 4096 + 13;
    c.E = tu_int(1, 12);
    c.mode = tu_chance(35);
    c.C = c.mode ? tu_int(1, c.N > 0 ? c.N : 1) : tu_int(0, 3);
    if (c.mode && c.N == 0) c.N = 1, c.C = 1;
    const int64_t T = c.N * c.K;
    int a = (int)tu_int(0, 3);
    c.active = a == 0 ? 0 : a == 1 ? tu_int(1, T + 1) : a == 2 ? T + tu_int(0, 5) : tu_int(1, 4);
    c.cflag = tu_int(0, 2);
    c.bflag = tu_chance(50);
    c.qmode = tu_chance(55);
    c.smooth = c.qmode ? (int)tu_int(0, 2) : 0;
    c.xkind = (int)tu_int(0, 2);
    c.strided = tu_chance(40);
    c.xdt = XDT[tu_int(0, 2)];
    if (i == 3 || i == 4) { /* int8 outputs past 32 MiB (the streaming-store threshold is at most that), odd H */
        c.N = 2050, c.K = 4, c.H = 4099 + 2 * (i - 3), c.mode = 0, c.active = 0, c.qmode = 1, c.strided = 0;
        c.xdt = i == 3 ? ACL_FLOAT : ACL_BF16;
    }
    return c;
}

/* ---- hand-computed rows: the two rounding modes side by side ---- */
static void hand_cases(void) {
    /* x (1, 5) fp32, K = 1, E = 1 */
    float x[5] = {127.0f, 63.5f, -0.5f, 2.5f, 0.0f};
    int32_t id[1] = {0};
    float one = 1.0f, zero = 0.0f;
    aclTensor *tx = tu_mk(2, 1, 5, 0, ACL_FLOAT, x), *te = tu_mk(2, 1, 1, 0, ACL_INT32, id);
    aclTensor *ts = tu_mk(1, 1, 0, 0, ACL_FLOAT, &one), *to = tu_mk(1, 1, 0, 0, ACL_FLOAT, &zero);
    for (int qm = 0; qm < 2; qm++) {
        q2case c;
        memset(&c, 0, sizeof c);
        c.N = 1, c.K = 1, c.H = 5, c.E = 1, c.qmode = qm;
        q2out o = make_out(&c);
        int phase;
        aclnnStatus rc = call2(tx, te, qm == 0 ? ts : NULL, qm == 0 ? to : NULL, &c, &o, &phase);
        CHECK(rc == ACLNN_SUCCESS, "hand qmode %d: %d (%s)", qm, rc, tu_msg());
        static const int8_t want_s[5] = {127, 64, 0, 2, 0}, want_d[5] = {127, 64, -1, 3, 0};
        CHECK(memcmp(o.ex, qm ? want_d : want_s, 5) == 0, "hand qmode %d: got %d %d %d %d %d", qm, (int8_t)o.ex[0],
              (int8_t)o.ex[1], (int8_t)o.ex[2], (int8_t)o.ex[3], (int8_t)o.ex[4]);
        if (qm) {
            float s;
            memcpy(&s, o.dqs, 4);
            CHECK(s == 1.0f, "hand dynamic scale %g, want 1", (double)s);
        }
        free_out(&o);
    }
    /* saturation and fp16 overflow, static: 300 -> 127, 60000 * 4 = inf -> 127, -inf -> -128 */
    float x2[4] = {300.0f, 60000.0f, -60000.0f, -129.0f};
    float four = 4.0f;
    aclTensor *tx2 = tu_mk(2, 1, 4, 0, ACL_FLOAT, x2), *ts4 = tu_mk(1, 1, 0, 0, ACL_FLOAT, &four);
    {
        q2case c;
        memset(&c, 0, sizeof c);
        c.N = 1, c.K = 1, c.H = 4, c.E = 1;
        q2out o = make_out(&c);
        int phase;
        aclnnStatus rc = call2(tx2, te, ts4, to, &c, &o, &phase);
        static const int8_t want[4] = {127, 127, -128, -128};
        CHECK(rc == ACLNN_SUCCESS && memcmp(o.ex, want, 4) == 0, "saturation: rc %d got %d %d %d %d", rc,
              (int8_t)o.ex[0], (int8_t)o.ex[1], (int8_t)o.ex[2], (int8_t)o.ex[3]);
        free_out(&o);
    }
    /* V1, CANN's doc example: x 3x4 fp32 {0.1.., 0.2.., 0.3..}, scale 1 offset 1 -> every element rint(x + 1) = 1 */
    {
        float xe[12] = {0.1f, 0.1f, 0.1f, 0.1f, 0.2f, 0.2f, 0.2f, 0.2f, 0.3f, 0.3f, 0.3f, 0.3f};
        int32_t ei[6] = {1, 2, 0, 1, 0, 2}, ri[6] = {0, 3, 1, 4, 2, 5};
        int8_t ex[24];
        int32_t row[6], eex[6];
        memset(ex, 0x5A, sizeof ex);
        aclTensor *a = tu_mk(2, 3, 4, 0, ACL_FLOAT, xe), *b = tu_mk(2, 3, 2, 0, ACL_INT32, ri),
                  *d = tu_mk(2, 3, 2, 0, ACL_INT32, ei), *tex = tu_mk(2, 6, 4, 0, ACL_INT8, ex),
                  *tr = tu_mk(1, 6, 0, 0, ACL_INT32, row), *tee = tu_mk(1, 6, 0, 0, ACL_INT32, eex);
        int phase;
        aclnnStatus rc = call1(a, b, d, 3, 1.0, 1.0, tex, tr, tee, &phase);
        static const int32_t want_eex[6] = {0, 0, 1, 1, 2, 2}, want_row[6] = {2, 0, 1, 4, 3, 5};
        bool ok = rc == ACLNN_SUCCESS && memcmp(eex, want_eex, sizeof eex) == 0 && memcmp(row, want_row, sizeof row) == 0;
        for (int i = 0; i < 24; i++) ok = ok && ex[i] == 1;
        CHECK(ok, "CANN example (V1): rc %d", rc);
        aclDestroyTensor(a), aclDestroyTensor(b), aclDestroyTensor(d), aclDestroyTensor(tex), aclDestroyTensor(tr),
            aclDestroyTensor(tee);
    }
    aclDestroyTensor(tx), aclDestroyTensor(te), aclDestroyTensor(ts), aclDestroyTensor(to), aclDestroyTensor(tx2),
        aclDestroyTensor(ts4);
}

/* ---- validation: codes, messages, untouched outputs ---- */
static void v2_expect(const q2case *c, const aclTensor *x, const aclTensor *ei, const aclTensor *sc,
                      const aclTensor *of, q2out *o, aclnnStatus want, int want_phase, const char *frag, int line) {
    int phase;
    aclnnStatus rc = call2(x, ei, sc, of, c, o, &phase);
    CHECK(rc == want && phase == want_phase && (frag == NULL || tu_msg_has(frag, NULL)),
          "line %d: status %d phase %d (want %d phase %d), message '%s' (want '%s')", line, rc, phase, want,
          want_phase, tu_msg(), frag ? frag : "");
    if (want != ACLNN_SUCCESS) CHECK(out_untouched(o), "line %d: a rejected call wrote an output", line);
}
#define EXPECT2(c, x, ei, sc, of, o, want, ph, frag) v2_expect(c, x, ei, sc, of, o, want, ph, frag, __LINE__)

static void validation(void) {
    float x[6 * 4] = {0}, one = 1.0f, sm[3 * 4] = {0};
    int32_t ids[6 * 2] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2};
    aclTensor *tx = tu_mk(2, 6, 4, 0, ACL_FLOAT, x), *te = tu_mk(2, 6, 2, 0, ACL_INT32, ids);
    aclTensor *ts = tu_mk(1, 1, 0, 0, ACL_FLOAT, &one), *to = tu_mk(1, 1, 0, 0, ACL_FLOAT, &one);
    aclTensor *tsm = tu_mk(2, 3, 4, 0, ACL_FLOAT, sm), *tsm1 = tu_mk(2, 1, 4, 0, ACL_FLOAT, sm);
    aclTensor *tsm2 = tu_mk(2, 2, 4, 0, ACL_FLOAT, sm), *ts2 = tu_mk(1, 2, 0, 0, ACL_FLOAT, sm);
    aclTensor *te1 = tu_mk(1, 12, 0, 0, ACL_INT32, ids), *te5 = tu_mk(2, 5, 2, 0, ACL_INT32, ids);
    aclTensor *tx16 = tu_mk(2, 6, 4, 0, ACL_INT32, x);
    q2case b;
    memset(&b, 0, sizeof b);
    b.N = 6, b.K = 2, b.H = 4, b.E = 3;
    const aclnnStatus TIL = ACLNN_ERR_INNER_TILING_ERROR, INV = ACLNN_ERR_PARAM_INVALID, NUL = ACLNN_ERR_PARAM_NULLPTR;
    q2case c;
    q2out o;
#define WITH(mod)                                                                                                     \
    for (int once_ = (c = b, mod, o = make_out(&c), 1); once_; once_ = 0, free_out(&o))
    WITH((void)0) EXPECT2(&c, tx, te, ts, to, &o, ACLNN_SUCCESS, 2, NULL);
    WITH((void)0) EXPECT2(&c, NULL, te, ts, to, &o, NUL, 1, NULL);
    WITH((void)0) EXPECT2(&c, tx16, te, ts, to, &o, INV, 1, NULL);          /* x dtype */
    WITH(c.qmode = 2) EXPECT2(&c, tx, te, ts, to, &o, TIL, 1, "quantMode"); /* quantMode first */
    WITH(c.qmode = -1) EXPECT2(&c, NULL, te, ts, to, &o, NUL, 1, NULL);    /* null before tiling */
    WITH((void)0) EXPECT2(&c, tx, te1, ts, to, &o, TIL, 1, "2-D");
    WITH((void)0) EXPECT2(&c, tx, te5, ts, to, &o, TIL, 1, "dim0");
    WITH(c.active = -1) EXPECT2(&c, tx, te, ts, to, &o, TIL, 1, "activeNum");
    WITH(c.mode = 2) EXPECT2(&c, tx, te, ts, to, &o, TIL, 1, "dropPadMode");
    WITH((c.mode = 1, c.C = 0)) EXPECT2(&c, tx, te, ts, to, &o, TIL, 1, "expertCapacity");
    WITH((c.mode = 1, c.C = 7)) EXPECT2(&c, tx, te, ts, to, &o, TIL, 1, "expertCapacity (7)");
    WITH(c.cflag = 3) EXPECT2(&c, tx, te, ts, to, &o, TIL, 1, "expertTokensCountOrCumsumFlag");
    WITH((c.cflag = 1, c.E = 0)) EXPECT2(&c, tx, te, ts, to, &o, TIL, 1, "expertNum > 0");
    /* a dropless expandedXOut of the wrong rows */
    WITH(c.active = 5) {
        aclTensor *bad = tu_mk(2, 6, 4, 0, ACL_INT8, o.ex);
        aclTensor *keep = o.tex;
        o.tex = bad;
        EXPECT2(&c, tx, te, ts, to, &o, TIL, 1, "expandedXOut");
        o.tex = keep;
        aclDestroyTensor(bad);
    }
    /* a requested count output missing */
    WITH(c.cflag = 2) {
        aclTensor *keep = o.tcnt;
        o.tcnt = NULL;
        EXPECT2(&c, tx, te, ts, to, &o, TIL, 1, "expertTokensCountOrCumsumOutOptional");
        o.tcnt = keep;
    }
    /* dynamic: the scale output missing, then of the wrong length */
    WITH(c.qmode = 1) {
        aclTensor *keep = o.tdqs;
        o.tdqs = NULL;
        EXPECT2(&c, tx, te, NULL, NULL, &o, TIL, 1, "dynamicQuantScaleOutOptional");
        aclTensor *bad = tu_mk(1, 11, 0, 0, ACL_FLOAT, o.dqs);
        o.tdqs = bad;
        EXPECT2(&c, tx, te, NULL, NULL, &o, TIL, 1, "dynamicQuantScaleOutOptional");
        o.tdqs = keep;
        aclDestroyTensor(bad);
    }
    /* static: scale / offset missing or not (1,) */
    WITH((void)0) EXPECT2(&c, tx, te, NULL, to, &o, TIL, 1, "scaleOptional");
    WITH((void)0) EXPECT2(&c, tx, te, ts, NULL, &o, TIL, 1, "offsetOptional");
    WITH((void)0) EXPECT2(&c, tx, te, ts2, to, &o, TIL, 1, "scaleOptional");
    WITH((void)0) EXPECT2(&c, tx, te, ts, ts2, &o, TIL, 1, "offsetOptional");
    /* dynamic: a smooth scale of the wrong shape */
    WITH(c.qmode = 1) EXPECT2(&c, tx, te, ts, NULL, &o, TIL, 1, "scaleOptional");
    WITH(c.qmode = 1) EXPECT2(&c, tx, te, tsm2, NULL, &o, TIL, 1, "scaleOptional dim0");
    WITH(c.qmode = 1) EXPECT2(&c, tx, te, tsm, NULL, &o, ACLNN_SUCCESS, 2, NULL);
    WITH(c.qmode = 1) EXPECT2(&c, tx, te, tsm1, NULL, &o, ACLNN_SUCCESS, 2, NULL);
    /* phase 2: an id past expertNum with an (E, H) smooth scale would read outside it */
    WITH((c.qmode = 1, c.E = 2)) {
        float sm2[2 * 4] = {0};
        aclTensor *t2 = tu_mk(2, 2, 4, 0, ACL_FLOAT, sm2);
        EXPECT2(&c, tx, te, t2, NULL, &o, INV, 2, "expertIdx");
        aclDestroyTensor(t2);
    }
    /* ... and in drop/pad mode (the slots) and with a count */
    WITH((c.mode = 1, c.C = 2, c.E = 2)) EXPECT2(&c, tx, te, ts, to, &o, INV, 2, "expertIdx");
    WITH((c.cflag = 1, c.E = 2)) EXPECT2(&c, tx, te, ts, to, &o, INV, 2, "expertIdx");
    /* without those, ids past expertNum are only sorted */
    WITH(c.E = 2) EXPECT2(&c, tx, te, ts, to, &o, ACLNN_SUCCESS, 2, NULL);
#undef WITH
    /* V1: the tiling checks of aclnnMoeInitRouting under this operator's name, and rowIdx in phase 2 */
    {
        int32_t ri[12];
        for (int i = 0; i < 12; i++) ri[i] = i;
        unsigned char *ex = tu_poisoned(48), *row = tu_poisoned(48), *eex = tu_poisoned(48);
        aclTensor *tri = tu_mk(2, 6, 2, 0, ACL_INT32, ri), *tex = tu_mk(2, 12, 4, 0, ACL_INT8, ex),
                  *tr = tu_mk(1, 12, 0, 0, ACL_INT32, row), *tee = tu_mk(1, 12, 0, 0, ACL_INT32, eex);
        aclTensor *tex16 = tu_mk(2, 12, 4, 0, ACL_FLOAT16, ex), *tex11 = tu_mk(2, 11, 4, 0, ACL_INT8, ex);
        int phase;
        CHECK(call1(tx, tri, te, -1, 1, 0, tex, tr, tee, &phase) == TIL && tu_msg_has("aclnnMoeInitRoutingQuant: ", "activeNum", NULL),
              "V1 activeNum: %s", tu_msg());
        CHECK(call1(tx, tri, te, 6, 1, 0, tex16, tr, tee, &phase) == INV, "V1 fp16 expandedXOut: %s", tu_msg());
        CHECK(call1(tx, tri, te, 6, 1, 0, tex11, tr, tee, &phase) == TIL && tu_msg_has("expandedXOut", NULL),
              "V1 rows: %s", tu_msg());
        CHECK(call1(tx, NULL, te, 6, 1, 0, tex, tr, tee, &phase) == NUL, "V1 null");
        ri[7] = 12;
        CHECK(call1(tx, tri, te, 6, 1, 0, tex, tr, tee, &phase) == INV && phase == 2 && tu_msg_has("rowIdx", NULL),
              "V1 rowIdx: %s", tu_msg());
        CHECK(tu_all_poison(ex, 48 + TU_GUARD) && tu_all_poison(row, 48 + TU_GUARD) && tu_all_poison(eex, 48 + TU_GUARD),
              "V1 rejection wrote an output");
        aclDestroyTensor(tri), aclDestroyTensor(tex), aclDestroyTensor(tr), aclDestroyTensor(tee),
            aclDestroyTensor(tex16), aclDestroyTensor(tex11);
        free(ex), free(row), free(eex);
    }
    aclTensor *all[] = {tx, te, ts, to, tsm, tsm1, tsm2, ts2, te1, te5, tx16};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) aclDestroyTensor(all[i]);
}

int main(int argc, char **argv) {
    const bool a2 = argc > 1 && strcmp(argv[1], "--a2") == 0;
    tu_seed("test_init_routing_quant");
    hand_cases();
    validation();
    for (int i = 0; i < 120; i++) {
        const int64_t N = i == 0 ? 260 : tu_int(0, 30), K = tu_int(1, 5), H = i == 0 ? 600 : tu_int(1, 67);
        run_v1(N, K, H, tu_int(1, 9), tu_int(0, 2) == 0 ? N : tu_int(0, N + 2), XDT[tu_int(0, 2)], (int)tu_int(0, 2),
               tu_chance(40), tu_chance(50));
    }
    for (int i = 0; i < 400; i++) {
        q2case c = random_v2(i);
        run_v2(&c);
    }
    printf("test_init_routing_quant%s: %d random cases, %d checks, %d failed\n", a2 ? " (A2/A3)" : "", g_cases,
           g_checks, g_fail);
    return g_fail != 0;
}
