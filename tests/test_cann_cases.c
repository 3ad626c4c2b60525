/* test_cann_cases.c - aclnnMoeFinalizeRoutingV2Grad on the inputs CANN's own
 * harnesses make, checked against the float64 oracle (ref.c) with CANN's
 * semantics: golden.py's -1 tails under activeNum, the system-test table's
 * mode-1 draws (uniform in [-1, E*C) with repeats, K = 16/32, wide odd H),
 * the UT data's draws with replacement, and permutations with a few values
 * out of range or repeated. gradExpandedX bit for bit, gradScales bit for bit
 * against the canonical order and within the SPEC bound of the exact sum. */
#include <math.h>

#include "moefr/moefr.h"
#include "ref.h"
#include "testutil.h"

static const aclDataType ACL_DT[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

/* A value exact in dt, with mixed signs and magnitudes (and now and then a 0). */
static uint32_t draw(ref_dt dt) {
    double v = tu_chance(3) ? 0.0 : ldexp(tu_unit() + 0.5, (int)tu_int(-6, 4)) * (tu_chance(50) ? -1 : 1);
    return ref_round(dt, v);
}

static void store(void *p, ref_dt dt, int64_t i, uint32_t bits) {
    if (dt == REF_F32) memcpy((char *)p + i * 4, &bits, 4);
    else {
        uint16_t h = (uint16_t)bits;
        memcpy((char *)p + i * 2, &h, 2);
    }
}
static uint32_t load(const void *p, ref_dt dt, int64_t i) {
    uint32_t b = 0;
    if (dt == REF_F32) memcpy(&b, (const char *)p + i * 4, 4);
    else {
        uint16_t h;
        memcpy(&h, (const char *)p + i * 2, 2);
        b = h;
    }
    return b;
}

typedef struct cfg {
    const char *style;
    int mode;
    int64_t R, K, H, E, C, active, bias_rows;
    ref_dt dt, sdt;
    int bias;
} cfg;

static long long g_cases, g_dropped, g_repeats, g_rows;

/* Fills idx (R*K entries) the way `style` says; D0 is gradExpandedX's rows. */
static void make_index(const cfg *c, int64_t D0, int32_t *idx) {
    const int64_t N = c->R * c->K;
    if (strcmp(c->style, "golden") == 0) { /* golden.py: perm of [0, min(D0, N)), then -1 */
        const int64_t m = D0 < N ? D0 : N;
        for (int64_t i = 0; i < N; i++) idx[i] = i < m ? (int32_t)i : -1;
        for (int64_t i = m - 1; i > 0; i--) {
            int64_t j = tu_below(i + 1);
            int32_t t = idx[i];
            idx[i] = idx[j], idx[j] = t;
        }
    } else if (strcmp(c->style, "st") == 0) { /* system tests: uniform in [-1, E*C) */
        for (int64_t i = 0; i < N; i++) idx[i] = (int32_t)tu_int(-1, D0 - 1);
    } else if (strcmp(c->style, "ut") == 0) { /* UT data: from [0, activeNum) with replacement */
        for (int64_t i = 0; i < N; i++) idx[i] = (int32_t)tu_below(D0);
    } else { /* "anomalies": a permutation of [0, N), then a few odd values */
        for (int64_t i = 0; i < N; i++) idx[i] = (int32_t)i;
        for (int64_t i = N - 1; i > 0; i--) {
            int64_t j = tu_below(i + 1);
            int32_t t = idx[i];
            idx[i] = idx[j], idx[j] = t;
        }
        for (int q = 0; q < 4; q++) {
            const int64_t at = tu_below(N);
            switch (q) {
            case 0: idx[at] = idx[tu_below(N)]; break;
            case 1: idx[at] = (int32_t)(D0 + tu_below(5)); break;
            case 2: idx[at] = (int32_t)(-1 - tu_below(5)); break;
            default: idx[at] = INT32_MAX; break;
            }
        }
    }
}

static void run(const cfg *c) {
    const int64_t R = c->R, K = c->K, H = c->H, N = R * K;
    const int64_t D0 = c->mode == 1 ? c->E * c->C : (c->active > 0 && c->active < N ? c->active : N);
    const size_t es = ref_size(c->dt), ses = ref_size(c->sdt);
    int32_t *idx = malloc((size_t)N * 4), *eidx = malloc((size_t)N * 4);
    void *gy = malloc((size_t)(R * H) * es), *x = malloc((size_t)(D0 * H) * es), *sc = malloc((size_t)N * ses);
    void *bias = malloc((size_t)(c->bias_rows * H) * es);
    void *gx = malloc((size_t)(D0 * H) * es + 64), *gs = malloc((size_t)N * ses + 64);
    double *gy64 = malloc((size_t)(R * H) * 8), *x64 = malloc((size_t)(D0 * H) * 8), *sc64 = malloc((size_t)N * 8);
    double *b64 = malloc((size_t)(c->bias_rows * H) * 8);
    CHECK(idx && eidx && gy && x && sc && bias && gx && gs && gy64 && x64 && sc64 && b64);
    make_index(c, D0, idx);
    for (int64_t i = 0; i < N; i++) eidx[i] = (int32_t)tu_below(c->bias_rows);
    for (int64_t i = 0; i < R * H; i++) store(gy, c->dt, i, draw(c->dt)), gy64[i] = ref_decode(c->dt, load(gy, c->dt, i));
    for (int64_t i = 0; i < D0 * H; i++) store(x, c->dt, i, draw(c->dt)), x64[i] = ref_decode(c->dt, load(x, c->dt, i));
    for (int64_t i = 0; i < N; i++) store(sc, c->sdt, i, draw(c->sdt)), sc64[i] = ref_decode(c->sdt, load(sc, c->sdt, i));
    for (int64_t i = 0; i < c->bias_rows * H; i++)
        store(bias, c->dt, i, draw(c->dt)), b64[i] = ref_decode(c->dt, load(bias, c->dt, i));
    memset(gx, 0xA5, (size_t)(D0 * H) * es + 64);
    memset(gs, 0x5A, (size_t)N * ses + 64);

    /* the oracle */
    ref_grad_in in = {c->mode, R, K, H, D0, c->bias_rows, c->dt, c->sdt, gy64, idx, x64, sc64, eidx,
                      c->bias ? b64 : NULL};
    ref_grad_out want;
    want.gx = malloc((size_t)(D0 * H) * 4);
    want.gs = malloc((size_t)N * 4);
    want.gs_exact = malloc((size_t)N * sizeof(long double));
    want.gs_mag = malloc((size_t)N * sizeof(long double));
    CHECK(want.gx && want.gs && want.gs_exact && want.gs_mag);
    ref_grad(&in, &want);

    int64_t dgy[2] = {R, H}, didx[1] = {N}, dsc[2] = {R, K}, db[2] = {c->bias_rows, H};
    int64_t dx2[2] = {D0, H}, dx3[3] = {c->E, c->C, H};
    aclTensor *tgy = tu_tensor(dgy, 2, ACL_DT[c->dt], gy), *tidx = tu_tensor(didx, 1, ACL_INT32, idx);
    aclTensor *tx = c->mode ? tu_tensor(dx3, 3, ACL_DT[c->dt], x) : tu_tensor(dx2, 2, ACL_DT[c->dt], x);
    aclTensor *tgx = c->mode ? tu_tensor(dx3, 3, ACL_DT[c->dt], gx) : tu_tensor(dx2, 2, ACL_DT[c->dt], gx);
    aclTensor *tsc = tu_tensor(dsc, 2, ACL_DT[c->sdt], sc), *tgs = tu_tensor(dsc, 2, ACL_DT[c->sdt], gs);
    aclTensor *tei = c->bias ? tu_tensor(dsc, 2, ACL_INT32, eidx) : NULL;
    aclTensor *tb = c->bias ? tu_tensor(db, 2, ACL_DT[c->dt], bias) : NULL;
    CHECK(tgy && tidx && tx && tgx && tsc && tgs);
    uint64_t wsz = 0;
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(tgy, tidx, tx, tsc, tei, tb, c->mode, c->active,
                                                           c->mode ? c->E : 0, c->mode ? c->C : 0, tgx, tgs, &wsz,
                                                           &ex),
             ACLNN_SUCCESS);
    void *ws = wsz ? malloc(wsz) : NULL;
    aclnnStatus rc = aclnnMoeFinalizeRoutingV2Grad(ws, wsz, ex, NULL);
    if (rc == ACLNN_ERR_RUNTIME_ERROR && getenv("MOEFR_ISA")) {
        printf("test_cann_cases: MOEFR_ISA=%s is not available here: %s -- skipped\n", getenv("MOEFR_ISA"), tu_msg());
        exit(77);
    }
    CHECK_RC(rc, ACLNN_SUCCESS);

    char desc[200];
    snprintf(desc, sizeof desc, "%s mode %d %s/%s R=%lld K=%lld H=%lld E=%lld C=%lld active=%lld bias=%d", c->style,
             c->mode, ref_name(c->dt), ref_name(c->sdt), (long long)R, (long long)K, (long long)H, (long long)c->E,
             (long long)c->C, (long long)c->active, c->bias);
    for (int64_t e = 0; e < D0 * H; e++)
        if (load(gx, c->dt, e) != want.gx[e])
            TU_FAIL("%s: gradExpandedX[%lld][%lld] = 0x%x, oracle 0x%x", desc, (long long)(e / H), (long long)(e % H),
                    load(gx, c->dt, e), want.gx[e]);
    for (size_t g = 0; g < 64; g++)
        if (((unsigned char *)gx)[(size_t)(D0 * H) * es + g] != 0xA5 || ((unsigned char *)gs)[(size_t)N * ses + g] != 0x5A)
            TU_FAIL("%s: wrote past an output", desc);
    for (int64_t i = 0; i < N; i++) {
        const uint32_t got = load(gs, c->sdt, i);
        double err, tol;
        if (!ref_gs_within(c->sdt, got, want.gs_exact[i], want.gs_mag[i], &err, &tol))
            TU_FAIL("%s: gradScales[%lld] error %g above bound %g", desc, (long long)i, err, tol);
        if (got != want.gs[i])
            TU_FAIL("%s: gradScales[%lld] = 0x%x, canonical order 0x%x", desc, (long long)i, got, want.gs[i]);
    }
    /* what the case exercised */
    unsigned char *seen = calloc((size_t)D0 + 1, 1);
    for (int64_t i = 0; i < N; i++) {
        if (idx[i] < 0 || idx[i] >= D0) { g_dropped++; continue; }
        g_repeats += seen[idx[i]];
        seen[idx[i]] = 1;
    }
    free(seen);
    g_cases++;
    g_rows += D0;

    aclTensor *all[] = {tgy, tidx, tx, tgx, tsc, tgs, tei, tb};
    for (int i = 0; i < 8; i++) tu_destroy(all[i]);
    void *bufs[] = {idx, eidx, gy, x, sc, bias, gx, gs, gy64, x64, sc64, b64, ws, want.gx, want.gs, want.gs_exact,
                    want.gs_mag};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
}

int main(void) {
    tu_seed("test_cann_cases");
    CHECK_RC(aclInit(NULL), ACL_SUCCESS);
    const int light = getenv("MOEFR_TEST_ITER") != NULL; /* valgrind and emulators: fewer cases */
    /* the system-test table's shapes (mode 1, fp16, K = 16/32, wide odd H), E*C kept to a few
     * thousand rows, then the same draws in the other dtypes */
    static const int64_t ST[][4] = {{16, 64, 33, 1083}, {32, 2000, 2, 515}, {16, 3, 1365, 1083}, {32, 128, 16, 515},
                                    {16, 7, 11, 1083}};
    for (size_t s = 0; s < sizeof ST / sizeof ST[0]; s++)
        for (int dt = 0; dt < 3; dt++) {
            if (light && dt > 0) continue;
            cfg c = {"st", 1, tu_int(20, 70), ST[s][0], ST[s][3], ST[s][1], ST[s][2], 0, ST[s][1],
                     dt == 0 ? REF_F16 : dt == 1 ? REF_BF16 : REF_F32, REF_F16, (int)(s % 2)};
            c.sdt = c.dt;
            run(&c);
        }
    /* golden.py: mode 0 with activeNum, -1 tails; mode 1 with E*C above or below R*K */
    static const ref_dt DTS[3] = {REF_F32, REF_F16, REF_BF16};
    for (int dt = 0; dt < 3; dt++)
        for (int b = 0; b < 2; b++) {
            const int64_t R = tu_int(9, 40), K = (int64_t[]){1, 4, 8}[tu_below(3)];
            cfg c = {"golden", 0, R, K, (int64_t[]){515, 1083, 37}[tu_below(3)], 0, 0, tu_int(1, R * K), 4,
                     DTS[dt], DTS[(dt + b) % 3], b};
            run(&c);
            cfg d = {"golden", 1, R, K, tu_int(7, 129), tu_int(1, 9), tu_int(1, 40), 0, 0, DTS[dt], DTS[dt], b};
            d.bias_rows = d.E;
            run(&d);
            if (light) break;
        }
    /* UT data: mode 0 with activeNum, draws from [0, activeNum) with replacement */
    for (int dt = 0; dt < 3; dt++) {
        const int64_t R = tu_int(9, 40), K = 8;
        cfg c = {"ut", 0, R, K, 515, 0, 0, tu_int(1, R * K - 1), 3, DTS[dt], DTS[dt], 1};
        run(&c);
    }
    /* permutations with a few values out of range or repeated, both modes */
    for (int dt = 0; dt < 3; dt++)
        for (int mode = 0; mode < 2; mode++) {
            const int64_t R = tu_int(9, 40), K = (int64_t[]){2, 16, 33}[tu_below(3)];
            cfg c = {"anomalies", mode, R, K, (int64_t[]){1, 7, 515, 1083}[tu_below(4)], 0, 0, 0, 5, DTS[dt],
                     DTS[(dt + 1) % 3], mode};
            if (mode == 1) c.E = tu_int(1, 8), c.C = R * K / c.E + 1, c.bias_rows = c.E;
            run(&c);
        }
    CHECK_RC(aclFinalize(), ACL_SUCCESS);
    printf("test_cann_cases: %lld cases (%lld gradExpandedX rows; %lld dropped slots, %lld repeated rows), kernel "
           "path %s, %d threads: all bit-exact against the oracle\n",
           g_cases, g_rows, g_dropped, g_repeats, moefrIsa(), moefrNumThreads());
    return 0;
}
