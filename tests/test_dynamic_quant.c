/* test_dynamic_quant.c - aclnnDynamicQuant V1-V4 against an independent
 * reference: every fp32 step of ops-nn's kernels done in float64 and rounded
 * to fp32 (exact for products, and for quotients: 53 >= 2*24 + 2 bits), the
 * scale from a float64 max/min, then round half to even (CAST_RINT) written
 * with floor, saturation and NaN -> 0 (docs/CANN_COMPAT.md, "DynamicQuant").
 * Fresh random fp16/bf16 inputs; rows of 1, 7, 33, 1003 and 2051 elements
 * (past a 1024-element tile); all-zero, NaN, inf and tie rows (x = k + 0.5
 * with scale exactly 1); smooth scales 1-D and grouped by a cumulative group
 * index; symmetric and asymmetric; INT8 and INT32 (eight int4) outputs;
 * pertoken, pertensor, perchannel; strided inputs and outputs; poisoned
 * outputs with guard bytes; every phase-1 rule's code; refusals leave the
 * outputs untouched; the inputs of ops-nn's samples against its documented formulas. Runs under
 * MOEFR_SOC=ascend910b too (A2 arithmetic). */
#include <math.h>

#include "aclnnop/aclnn_dynamic_quant.h"
#include "aclnnop/aclnn_dynamic_quant_v2.h"
#include "aclnnop/aclnn_dynamic_quant_v3.h"
#include "aclnnop/aclnn_dynamic_quant_v4.h"
#define TU_COUNT_FAILURES
#include "testutil.h"

static int g_a2;     /* MOEFR_SOC=ascend910b */
static int g_strict; /* MOEFR_STRICT=1: the group index must be non-decreasing, ending at the rows */


/* ---- the reference ---- */
static float r32(double d) { return (float)d; }
/* round half to even, then saturate to [-Q-1, Q]; NaN -> 0 */
static int ref_round(double f, int Q) {
    if (f != f) return 0;
    if (f > Q) return Q;
    if (f < -Q - 1) return -Q - 1;
    double fl = floor(f), d = f - fl;
    double r = d > 0.5 ? fl + 1 : d < 0.5 ? fl : (fmod(fl, 2.0) == 0 ? fl : fl + 1);
    return (int)r;
}
/* n values v[] (already fp32) sharing one scale */
static void ref_group(const float *v, int64_t n, int64_t step, bool sym, int Q, float *scale, float *offset,
                      int8_t *q, int64_t qstep) {
    double hi = -INFINITY, lo = INFINITY;
    for (int64_t j = 0; j < n; j++) {
        double a = sym ? fabs((double)v[j * step]) : (double)v[j * step];
        if (a != a) continue;
        if (a > hi) hi = a;
        if (a < lo) lo = a;
    }
    float s, o = 0.0f, k;
    if (sym) {
        float mx = hi > 0 ? (float)hi : 0.0f;
        if (g_a2) {
            k = r32((double)Q / mx);
            s = r32(1.0 / k);
        } else {
            s = r32((double)mx * (double)r32(1.0 / Q));
            k = s;
        }
    } else if (g_a2) {
        float d = r32((double)r32(hi - lo) / (2.0 * Q + 1));
        s = d > 1e-12f ? d : 1e-12f;
        o = r32(Q - (double)r32(hi / s));
        k = r32(1.0 / s);
    } else {
        s = r32((double)r32(hi - lo) * (double)r32(1.0 / (2 * Q + 1)));
        o = r32(Q - (double)r32(hi / s));
        k = s;
    }
    *scale = s;
    *offset = o;
    for (int64_t j = 0; j < n; j++) {
        double f = g_a2 ? (double)r32((double)v[j * step] * k) : (double)r32((double)v[j * step] / k);
        if (!sym) f = r32(f + o);
        q[j * qstep] = (int8_t)ref_round(f, Q);
    }
}

/* ---- one case ---- */
enum { V1 = 1, V2, V3, V4 };
enum { TOKEN, TENSOR, CHANNEL };
enum { SM_NONE, SM_1D, SM_GROUP };
static const char *MODES[3] = {"pertoken", "pertensor", "perchannel"};

typedef struct dq_case {
    int ver, dt, mode, smooth;
    bool sym, int32out;
    int nd;
    int64_t dims[3]; /* (B,) M, N */
    int64_t E;
    int special; /* 0 random, 1 ties, 2 zero/nan/inf rows */
    int xkind;   /* tu_view layout of x */
    bool ystride;
} dq_case;

static aclnnStatus call(const dq_case *c, const aclTensor *x, const aclTensor *sm, const aclTensor *gi,
                        const aclTensor *y, const aclTensor *sc, const aclTensor *of) {
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc;
    const int64_t dst = c->int32out ? 3 : 2;
    switch (c->ver) {
    case V1: rc = aclnnDynamicQuantGetWorkspaceSize(x, sm, y, sc, &ws, &e); break;
    case V2: rc = aclnnDynamicQuantV2GetWorkspaceSize(x, sm, gi, dst, y, sc, of, &ws, &e); break;
    case V3: rc = aclnnDynamicQuantV3GetWorkspaceSize(x, sm, gi, dst, c->sym, MODES[c->mode], y, sc, of, &ws, &e); break;
    default:
        rc = aclnnDynamicQuantV4GetWorkspaceSize(x, sm, gi, dst, c->sym, MODES[c->mode], 0.0f, y, sc, of, &ws, &e);
        break;
    }
    if (rc != ACLNN_SUCCESS) return rc;
    void *w = ws ? malloc(ws) : NULL;
    switch (c->ver) {
    case V1: rc = aclnnDynamicQuant(w, ws, e, NULL); break;
    case V2: rc = aclnnDynamicQuantV2(w, ws, e, NULL); break;
    case V3: rc = aclnnDynamicQuantV3(w, ws, e, NULL); break;
    default: rc = aclnnDynamicQuantV4(w, ws, e, NULL); break;
    }
    free(w);
    return rc;
}

static float rand_val(void) {
    int c = (int)tu_int(0, 99);
    return c < 3 ? 0.0f : c < 8 ? (float)((tu_unit() - 0.5) * 300) : (float)(tu_unit() * 4 - 2);
}

static void run_case(const dq_case *c) {
    const int nd = c->nd;
    const int64_t N = c->dims[nd - 1], M = c->dims[nd - 2], B = nd == 3 ? c->dims[0] : 1, R = B * M, X = R * N;
    const int Q = c->int32out ? 7 : 127;
    uint16_t *xh = malloc(sizeof *xh * (size_t)(X + 1));
    for (int64_t r = 0; r < R; r++) {
        const int kind = c->special == 2 ? (int)(r % 5) : 0;
        for (int64_t j = 0; j < N; j++) {
            float f = rand_val();
            if (c->special == 1) /* halves and ties: scale exactly 1 with max Q (sym) or range 2Q+1 (asym) */
                f = j == 0 ? (float)Q : j == 1 && !c->sym ? (float)(-Q - 1)
                    : j == 2 ? (float)((double)tu_int(-Q, Q - 1) + 0.5) /* at least one tie in every row */
                             : (float)(tu_int(-2 * Q, 2 * Q) / 2.0);
            if (kind == 1) f = 0.0f;
            if (kind == 2 && j == N / 2) f = NAN;
            if (kind == 3 && j == N / 3) f = (j & 1) ? -INFINITY : INFINITY;
            xh[r * N + j] = tu_f2h(c->dt, f);
        }
    }
    /* the smooth scales: 1-D over N (M in perchannel), or (E, N) */
    const int64_t sn = c->smooth == SM_NONE ? 0 : c->smooth == SM_1D ? (c->mode == CHANNEL ? M : N) : c->E * N;
    uint16_t *smh = malloc(sizeof *smh * (size_t)(sn + 1));
    for (int64_t i = 0; i < sn; i++) smh[i] = tu_f2h(c->dt, c->special == 1 ? 1.0f : (float)(0.25 + tu_unit() * 2));
    int32_t *gidx = malloc(sizeof *gidx * (size_t)(c->E + 1));
    if (c->smooth == SM_GROUP) { /* cumulative ends, non-decreasing, the last = R (sometimes past it) */
        int64_t at = 0;
        for (int64_t g = 0; g < c->E; g++) {
            at += tu_int(0, 2 * R / c->E + 1);
            if (at > R || g == c->E - 1) at = R + (g == c->E - 1 && !g_strict && tu_chance(20) ? 3 : 0);
            gidx[g] = (int32_t)at;
        }
    }
    /* the reference */
    float *v = malloc(sizeof *v * (size_t)(X + 1));
    for (int64_t r = 0; r < R; r++) {
        int64_t g = 0;
        if (c->smooth == SM_GROUP)
            while (g < c->E && gidx[g] <= r) g++;
        for (int64_t j = 0; j < N; j++) {
            double f = tu_h2f(c->dt, xh[r * N + j]);
            if (c->smooth == SM_1D) f *= tu_h2f(c->dt, smh[c->mode == CHANNEL ? r % M : j]);
            if (c->smooth == SM_GROUP) f *= tu_h2f(c->dt, smh[g * N + j]);
            v[r * N + j] = r32(f);
        }
    }
    const int64_t ns = c->mode == TOKEN ? R : c->mode == TENSOR ? 1 : B * N;
    int8_t *qref = malloc((size_t)X + 1);
    float *sref = malloc(sizeof *sref * (size_t)ns), *oref = malloc(sizeof *oref * (size_t)ns);
    if (c->mode == TOKEN)
        for (int64_t r = 0; r < R; r++) ref_group(v + r * N, N, 1, c->sym, Q, &sref[r], &oref[r], qref + r * N, 1);
    else if (c->mode == TENSOR)
        ref_group(v, X, 1, c->sym, Q, &sref[0], &oref[0], qref, 1);
    else
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < N; j++)
                ref_group(v + b * M * N + j, M, N, c->sym, Q, &sref[b * N + j], &oref[b * N + j],
                          qref + b * M * N + j, N);
    /* tensors */
    tu_owned xv = tu_view(c->dt, nd, c->dims, xh, c->xkind);
    aclTensor *smt = NULL, *git = NULL;
    if (c->smooth == SM_1D) smt = tu_mk(1, sn, 0, 0, (aclDataType)c->dt, smh);
    if (c->smooth == SM_GROUP) {
        smt = tu_mk(2, c->E, N, 0, (aclDataType)c->dt, smh);
        git = tu_mk(1, c->E, 0, 0, ACL_INT32, gidx);
    }
    int64_t ydims[3] = {c->dims[0], c->dims[1], c->dims[2]};
    if (c->int32out) ydims[nd - 1] /= 8;
    const int64_t yn = c->int32out ? X / 8 : X, yes = c->int32out ? 4 : 1;
    /* y: dense, or every row padded by 3 elements */
    int64_t yst[3], ys = 1;
    for (int d = nd - 1; d >= 0; d--) yst[d] = ys, ys = ys * ydims[d] + (c->ystride && d == nd - 1 ? 3 : 0);
    const int64_t yspan = yn ? tu_span(nd, ydims, yst, 0) : 1;
    unsigned char *yb = tu_poisoned((size_t)(yspan * yes));
    aclTensor *yt = aclCreateTensor(ydims, (uint64_t)nd, c->int32out ? ACL_INT32 : ACL_INT8, yst, 0, ACL_FORMAT_ND,
                                    &yspan, 1, yb);
    int64_t sdims[3];
    int snd;
    if (c->mode == TOKEN) snd = nd - 1, memcpy(sdims, c->dims, sizeof sdims);
    else if (c->mode == TENSOR) snd = 1, sdims[0] = 1;
    else snd = nd - 1, sdims[0] = c->dims[0], sdims[nd - 2] = N;
    unsigned char *sb = tu_poisoned((size_t)ns * 4), *ob = tu_poisoned((size_t)ns * 4);
    aclTensor *sct = tu_tensor(sdims, snd, ACL_FLOAT, sb), *oft = c->sym ? NULL : tu_tensor(sdims, snd, ACL_FLOAT, ob);
    aclnnStatus rc = call(c, xv.t, smt, git, yt, sct, oft);
    char what[200];
    snprintf(what, sizeof what, "V%d %s %s %s %s smooth %d y %s dims (%lld,%lld,%lld) special %d xkind %d ystride %d",
             c->ver, c->dt == ACL_FLOAT16 ? "fp16" : "bf16", MODES[c->mode], c->sym ? "sym" : "asym",
             g_a2 ? "A2" : "950", c->smooth, c->int32out ? "int32" : "int8", (long long)c->dims[0],
             (long long)c->dims[1], (long long)c->dims[2], c->special, c->xkind, c->ystride);
    int bad = rc != ACLNN_SUCCESS;
    if (bad) printf("FAIL %s: status %d (%s)\n", what, rc, tu_msg());
    for (int64_t i = 0; i < ns && !bad; i++) {
        float s, o;
        memcpy(&s, sb + 4 * i, 4);
        memcpy(&o, ob + 4 * i, 4);
        if (memcmp(&s, &sref[i], 4) != 0 && !(s != s && sref[i] != sref[i])) {
            printf("FAIL %s: scale[%lld] = %a, want %a\n", what, (long long)i, s, sref[i]);
            bad = 1;
        }
        if (!c->sym && memcmp(&o, &oref[i], 4) != 0 && !(o != o && oref[i] != oref[i])) {
            printf("FAIL %s: offset[%lld] = %a, want %a\n", what, (long long)i, o, oref[i]);
            bad = 1;
        }
    }
    for (int64_t r = 0; r < R && !bad; r++)
        for (int64_t j = 0; j < N && !bad; j++) {
            const int64_t b = r / M, m = r % M;
            const int64_t idx = nd == 3 ? b * yst[0] + m * yst[1] : m * yst[0];
            int got;
            if (c->int32out) {
                uint32_t w;
                memcpy(&w, yb + 4 * (idx + (j / 8) * yst[nd - 1]), 4);
                got = (int)((w >> (4 * (j % 8))) & 0xF);
                got = got >= 8 ? got - 16 : got;
            } else {
                got = (int8_t)yb[idx + j * yst[nd - 1]];
            }
            if (got != qref[r * N + j]) {
                printf("FAIL %s: y[%lld][%lld] = %d, want %d (v %a)\n", what, (long long)r, (long long)j, got,
                       qref[r * N + j], v[r * N + j]);
                bad = 1;
            }
        }
    if (!bad && (!tu_guard_ok(yb, (size_t)(yspan * yes)) || !tu_guard_ok(sb, (size_t)ns * 4) ||
                 !tu_guard_ok(ob, (size_t)ns * 4))) {
        printf("FAIL %s: wrote past an output\n", what);
        bad = 1;
    }
    if (!bad && c->ystride && !c->int32out) /* the padding between rows stays poisoned */
        for (int64_t r = 0; r < R && !bad; r++)
            for (int k = 0; k < 3; k++)
                if (yb[(nd == 3 ? (r / M) * yst[0] + (r % M) * yst[1] : r * yst[0]) + N + k] != TU_POISON &&
                    !(r == R - 1)) {
                    printf("FAIL %s: wrote into y's row padding\n", what);
                    bad = 1;
                    break;
                }
    if (!bad && c->special == 1) { /* the tie rows did hold ties */
        int ties = 0;
        for (int64_t i = 0; i < X; i++) ties += v[i] - floorf(v[i]) == 0.5f;
        if (ties == 0 && N > 2) {
            printf("FAIL %s: the tie case holds no tie\n", what);
            bad = 1;
        }
    }
    g_cases++;
    g_fail += bad;
    tu_free(&xv);
    tu_destroy(smt), tu_destroy(git), tu_destroy(yt), tu_destroy(sct), tu_destroy(oft);
    free(xh), free(smh), free(gidx), free(v), free(qref), free(sref), free(oref), free(yb), free(sb), free(ob);
}

static void random_cases(void) {
    static const int64_t Ns[] = {1, 7, 33, 1003, 2051, 8, 16, 1024};
    for (int it = 0; it < 400; it++) {
        dq_case c;
        memset(&c, 0, sizeof c);
        c.ver = g_a2 ? (int)tu_int(V1, V2) : (int)tu_int(V1, V4);
        c.dt = tu_chance(50) ? ACL_FLOAT16 : ACL_BF16;
        c.mode = c.ver >= V3 ? (int)tu_int(TOKEN, CHANNEL) : TOKEN;
        c.sym = c.ver == V1 ? true : tu_chance(50);
        c.int32out = c.ver != V1 && tu_chance(25);
        c.nd = tu_chance(30) ? 3 : 2;
        int64_t N = Ns[tu_below(8)];
        if (c.int32out) N = (N + 7) / 8 * 8;
        const int64_t M = tu_int(1, N > 1000 ? 5 : 40);
        if (c.nd == 3) c.dims[0] = tu_int(1, 3), c.dims[1] = M, c.dims[2] = N;
        else c.dims[0] = M, c.dims[1] = N;
        c.smooth = (int)tu_int(SM_NONE, c.ver == V1 || c.mode != TOKEN ? SM_1D : SM_GROUP);
        if (c.mode == TENSOR && c.smooth == SM_GROUP) c.smooth = SM_1D;
        c.E = tu_int(1, 6);
        c.special = (int)tu_int(0, 2);
        c.xkind = (int)tu_int(0, TU_KINDS - 1);
        c.ystride = tu_chance(30);
        run_case(&c);
    }
}

/* ---- phase 1 ---- */
static void validation(void) {
    const int N1 = ACLNN_ERR_PARAM_NULLPTR, IV = ACLNN_ERR_PARAM_INVALID, TL = ACLNN_ERR_INNER_TILING_ERROR;
    uint16_t xh[4 * 16] = {0};
    int8_t yb[4 * 16];
    int32_t y32[4 * 2], gi[3] = {1, 2, 4};
    float sb[8], obuf[8];
    uint16_t smh[3 * 16] = {0};
    aclTensor *x = tu_mk(2, 4, 16, 0, ACL_FLOAT16, xh), *xb = tu_mk(2, 4, 16, 0, ACL_BF16, xh);
    aclTensor *x1 = tu_mk(1, 64, 0, 0, ACL_FLOAT16, xh), *xf = tu_mk(2, 4, 16, 0, ACL_FLOAT, xh);
    aclTensor *y = tu_mk(2, 4, 16, 0, ACL_INT8, yb), *ybad = tu_mk(2, 4, 15, 0, ACL_INT8, yb);
    aclTensor *yi32 = tu_mk(2, 4, 2, 0, ACL_INT32, y32), *yi32b = tu_mk(2, 4, 3, 0, ACL_INT32, y32);
    aclTensor *yf8 = tu_mk(2, 4, 16, 0, ACL_FLOAT8_E4M3FN, yb), *yu8 = tu_mk(2, 4, 16, 0, ACL_UINT8, yb);
    aclTensor *sc = tu_mk(1, 4, 0, 0, ACL_FLOAT, sb), *sc5 = tu_mk(1, 5, 0, 0, ACL_FLOAT, sb);
    aclTensor *sc1 = tu_mk(1, 1, 0, 0, ACL_FLOAT, sb), *scc = tu_mk(1, 16, 0, 0, ACL_FLOAT, sb);
    aclTensor *of = tu_mk(1, 4, 0, 0, ACL_FLOAT, obuf), *of5 = tu_mk(1, 5, 0, 0, ACL_FLOAT, obuf);
    aclTensor *sm = tu_mk(1, 16, 0, 0, ACL_FLOAT16, smh), *smb = tu_mk(1, 16, 0, 0, ACL_BF16, smh);
    aclTensor *sm15 = tu_mk(1, 15, 0, 0, ACL_FLOAT16, smh), *sm4 = tu_mk(1, 4, 0, 0, ACL_FLOAT16, smh);
    aclTensor *sm2 = tu_mk(2, 3, 16, 0, ACL_FLOAT16, smh), *sm2b = tu_mk(2, 2, 16, 0, ACL_FLOAT16, smh);
    aclTensor *sm2c = tu_mk(2, 3, 15, 0, ACL_FLOAT16, smh);
    aclTensor *g = tu_mk(1, 3, 0, 0, ACL_INT32, gi), *g2 = tu_mk(2, 1, 3, 0, ACL_INT32, gi);
    aclTensor *gf = tu_mk(1, 3, 0, 0, ACL_FLOAT, gi), *g0 = tu_mk(1, 0, 0, 0, ACL_INT32, gi);
    aclTensor *xe = tu_mk(2, 0, 16, 0, ACL_FLOAT16, xh), *ye = tu_mk(2, 0, 16, 0, ACL_INT8, yb);
    aclTensor *sce = tu_mk(1, 0, 0, 0, ACL_FLOAT, sb);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    int bad = 0;
#define V1C(a, b, c, d, want) bad |= tu_phase1_bad(aclnnDynamicQuantGetWorkspaceSize(a, b, c, d, &ws, &e), e, want, NULL, __LINE__)
#define V2C(a, b, gg, c, d, o, want) \
    bad |= tu_phase1_bad(aclnnDynamicQuantV2GetWorkspaceSize(a, b, gg, 2, c, d, o, &ws, &e), e, want, NULL, __LINE__)
#define V3C(a, b, gg, s, m, c, d, o, want)                                                                       \
    bad |= tu_phase1_bad(aclnnDynamicQuantV3GetWorkspaceSize(a, b, gg, 2, s, m, c, d, o, &ws, &e), e, want, NULL, \
                         __LINE__)
    V1C(x, NULL, y, sc, ACLNN_SUCCESS);
    V1C(NULL, NULL, y, sc, N1);
    V1C(x, NULL, NULL, sc, N1);
    V1C(x, NULL, y, NULL, N1);
    bad |= tu_phase1_bad(aclnnDynamicQuantGetWorkspaceSize(x, NULL, y, sc, NULL, &e), e, N1, NULL, __LINE__);
    bad |= tu_phase1_bad(aclnnDynamicQuantGetWorkspaceSize(x, NULL, y, sc, &ws, NULL), NULL, N1, NULL, __LINE__);
    V1C(xf, NULL, y, sc, IV);        /* x FLOAT */
    V1C(x, smb, y, sc, IV);          /* smooth not x's dtype */
    V1C(x, NULL, yu8, sc, IV);       /* y UINT8 */
    V1C(x, NULL, y, of5, IV);        /* scale shape */
    V1C(x1, NULL, y, sc, IV);        /* x 1-D */
    V1C(x, NULL, ybad, sc, IV);      /* y shape */
    V1C(x, sm15, y, sc, IV);         /* smooth length */
    V1C(x, sm2, y, sc, IV);          /* smooth 2-D without group */
    V1C(x, NULL, yi32, sc, ACLNN_SUCCESS);
    V1C(x, NULL, yi32b, sc, IV);     /* int32 last dim */
    V1C(xb, smb, y, sc, ACLNN_SUCCESS);
    V1C(xe, NULL, ye, sce, ACLNN_SUCCESS);
    V2C(x, NULL, NULL, y, sc, of, ACLNN_SUCCESS);
    V2C(x, NULL, NULL, y, sc, of5, IV); /* offset shape */
    V2C(x, sm2, g, y, sc, NULL, ACLNN_SUCCESS);
    V2C(x, sm2, gf, y, sc, NULL, IV);   /* group dtype */
    V2C(x, NULL, gf, y, sc, NULL, ACLNN_SUCCESS); /* unread without a smooth scale, as in CANN */
    V2C(x, sm2, g2, y, sc, NULL, IV);   /* group 2-D */
    V2C(x, sm2b, g, y, sc, NULL, TL);   /* smooth dim0 != groups */
    V2C(x, sm2c, g, y, sc, NULL, TL);   /* smooth dim1 != H */
    V2C(x, sm, g, y, sc, NULL, TL);     /* smooth 1-D with a group */
    V2C(x, sm, g0, y, sc, NULL, g_a2 ? ACLNN_SUCCESS : TL); /* no groups: A2 takes it as none, 950 refuses */
    V2C(x, sm2, g0, y, sc, NULL, TL);
    if (!g_a2) {
        V2C(x, NULL, NULL, yf8, sc, NULL, IV); /* in the 950 table, not implemented */
        V3C(x, NULL, NULL, true, "pertoken", y, sc, NULL, ACLNN_SUCCESS);
        V3C(x, NULL, NULL, true, "pertoken", y, sc, of, IV);   /* sym with offset */
        V3C(x, NULL, NULL, false, "pertoken", y, sc, NULL, IV); /* asym without */
        V3C(x, NULL, NULL, true, "perrow", y, sc, NULL, IV);
        V3C(x, NULL, NULL, true, NULL, y, sc, NULL, N1);
        V3C(x, NULL, NULL, true, NULL, y, sc, of, IV); /* the offset rule comes before quantMode is read */
        V3C(x, sm2, g, true, "perchannel", y, scc, NULL, IV);   /* perchannel with a group */
        V3C(x, NULL, NULL, true, "pertensor", y, sc1, NULL, ACLNN_SUCCESS);
        V3C(x, NULL, NULL, true, "pertensor", y, sc, NULL, IV);
        V3C(x, NULL, NULL, true, "perchannel", y, scc, NULL, ACLNN_SUCCESS);
        V3C(x, NULL, NULL, true, "perchannel", y, sc, NULL, IV);
        V3C(x, sm4, NULL, true, "perchannel", y, scc, NULL, ACLNN_SUCCESS); /* smooth over M */
        V3C(x, sm, NULL, true, "perchannel", y, scc, NULL, IV);
        /* order: the attribute checks come before the dtype checks */
        V3C(xf, NULL, NULL, true, "pertoken", y, sc, of, IV);
        CHECK(tu_msg_has("offsetOut", NULL), "attribute check first: %s", tu_msg());
    } else {
        V3C(x, NULL, NULL, true, "pertoken", y, sc, NULL, ACLNN_ERR_INNER);
        bad |= tu_phase1_bad(
            aclnnDynamicQuantV4GetWorkspaceSize(x, NULL, NULL, 2, true, "pertoken", 0.f, y, sc, NULL, &ws, &e), e,
            ACLNN_ERR_INNER, NULL, __LINE__);
        V2C(x, NULL, NULL, yf8, sc, NULL, IV); /* not in the A2 table */
    }
    { /* an output whose rows share memory: refused */
        const int64_t d2[2] = {4, 16}, st0[2] = {0, 1}, one = 16;
        aclTensor *yo = aclCreateTensor(d2, 2, ACL_INT8, st0, 0, ACL_FORMAT_ND, &one, 1, yb);
        V1C(x, NULL, yo, sc, IV);
        tu_destroy(yo);
    }
    CHECK(!bad, "phase-1 rules");
    CHECK(aclnnDynamicQuantV2GetWorkspaceSize(x, NULL, NULL, 2, ybad, sc, NULL, &ws, &e) == IV &&
              tu_msg_has("aclnnDynamicQuantV2", "yOut", NULL),
          "message names the operator and the parameter: %s", tu_msg());
    aclTensor *all[] = {x, xb, x1, xf, y, ybad, yi32, yi32b, yf8, yu8, sc, sc5, sc1, scc, of, of5, sm, smb,
                        sm15, sm4, sm2, sm2b, sm2c, g, g2, gf, g0, xe, ye, sce};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_destroy(all[i]);
}

/* The inputs of ops-nn's own samples (quant/dynamic_quant/examples/test_aclnn_dynamic_quant.cpp: V1,
 * x[i][j] = 32i + j, smooth[j] = 32j + 1, (4, 32) fp16; docs/aclnnDynamicQuantV4.md: V4 asymmetric
 * pertoken, x = 0..7 as (4, 2), smooth (2, 2) = 0..3, groups {2, 4}), against CANN's documented
 * formulas worked out in float64: y within half a step of v / scale (+ offset), the extremes exact. */
static void cann_samples(void) {
    uint16_t xh[128], smh[32];
    for (int i = 0; i < 128; i++) xh[i] = aclFloatToFloat16((float)i);
    for (int j = 0; j < 32; j++) smh[j] = aclFloatToFloat16((float)(32 * j + 1));
    int8_t y[128];
    float sc[4], of[4];
    aclTensor *x = tu_mk(2, 4, 32, 0, ACL_FLOAT16, xh), *sm = tu_mk(1, 32, 0, 0, ACL_FLOAT16, smh);
    aclTensor *yt = tu_mk(2, 4, 32, 0, ACL_INT8, y), *st = tu_mk(1, 4, 0, 0, ACL_FLOAT, sc);
    dq_case c = {.ver = V1, .sym = true};
    CHECK(call(&c, x, sm, NULL, yt, st, NULL) == ACLNN_SUCCESS, "V1 sample: %s", tu_msg());
    for (int i = 0; i < 4; i++) {
        const double mx = (32.0 * i + 31) * (32.0 * 31 + 1);
        CHECK(fabs(sc[i] - mx / 127) <= 1e-6 * mx / 127, "V1 sample scale[%d] = %g, want %g", i, sc[i], mx / 127);
        for (int j = 0; j < 32; j++) {
            const double want = (32.0 * i + j) * (32.0 * j + 1) * 127 / mx;
            CHECK(fabs(y[i * 32 + j] - want) <= 0.5 + 1e-4, "V1 sample y[%d][%d] = %d, want %.4f", i, j, y[i * 32 + j],
                  want);
        }
        CHECK(y[i * 32 + 31] == 127, "V1 sample row max");
    }
    tu_destroy(x), tu_destroy(sm), tu_destroy(yt), tu_destroy(st);
    if (g_a2) return; /* V4: Ascend 950 only */
    int32_t gi[2] = {2, 4};
    x = tu_mk(2, 4, 2, 0, ACL_FLOAT16, xh);
    sm = tu_mk(2, 2, 2, 0, ACL_FLOAT16, xh); /* 0, 1, 2, 3 */
    aclTensor *g = tu_mk(1, 2, 0, 0, ACL_INT32, gi), *ot = tu_mk(1, 4, 0, 0, ACL_FLOAT, of);
    yt = tu_mk(2, 4, 2, 0, ACL_INT8, y), st = tu_mk(1, 4, 0, 0, ACL_FLOAT, sc);
    dq_case c4 = {.ver = V4, .sym = false, .mode = TOKEN};
    CHECK(call(&c4, x, sm, g, yt, st, ot) == ACLNN_SUCCESS, "V4 sample: %s", tu_msg());
    for (int i = 0; i < 4; i++) {
        const double s0 = i < 2 ? 0 : 2, s1 = i < 2 ? 1 : 3, v0 = 2.0 * i * s0, v1 = (2.0 * i + 1) * s1;
        const double scale = (v1 - v0) / 255, off = 127 - v1 / scale;
        CHECK(fabs(sc[i] - scale) <= 1e-6 * scale && fabs(of[i] - off) <= 1e-5 * fabs(off),
              "V4 sample row %d: scale %g offset %g, want %g %g", i, sc[i], of[i], scale, off);
        CHECK(y[2 * i] == -128 && y[2 * i + 1] == 127, "V4 sample row %d: y %d %d", i, y[2 * i], y[2 * i + 1]);
    }
    tu_destroy(x), tu_destroy(sm), tu_destroy(g), tu_destroy(ot), tu_destroy(yt), tu_destroy(st);
}

/* a group index that leaves rows without a smooth scale: 161002 in phase 2, outputs untouched */
static void uncovered_rows(void) {
    uint16_t xh[6 * 8], smh[2 * 8];
    for (int i = 0; i < 48; i++) xh[i] = aclFloatToFloat16((float)(i % 7) - 3.0f);
    for (int i = 0; i < 16; i++) smh[i] = aclFloatToFloat16(1.0f);
    int32_t gi[2] = {2, 5}; /* row 5 is in no group */
    unsigned char *yb = tu_poisoned(48), *sb = tu_poisoned(24);
    aclTensor *x = tu_mk(2, 6, 8, 0, ACL_FLOAT16, xh), *sm = tu_mk(2, 2, 8, 0, ACL_FLOAT16, smh);
    aclTensor *g = tu_mk(1, 2, 0, 0, ACL_INT32, gi), *y = tu_mk(2, 6, 8, 0, ACL_INT8, yb);
    aclTensor *sc = tu_mk(1, 6, 0, 0, ACL_FLOAT, sb);
    dq_case c = {.ver = V2, .sym = true};
    aclnnStatus rc = call(&c, x, sm, g, y, sc, NULL);
    CHECK(rc == ACLNN_ERR_PARAM_INVALID && tu_msg_has("groupIndexOptional", NULL), "uncovered rows: %d %s", rc,
          tu_msg());
    CHECK(tu_all_poison(yb, 48 + TU_GUARD) && tu_all_poison(sb, 24 + TU_GUARD), "a refusal wrote an output");
    gi[1] = 6;
    rc = call(&c, x, sm, g, y, sc, NULL);
    CHECK(rc == ACLNN_SUCCESS, "covered rows: %d %s", rc, tu_msg());
    /* decreasing, or past the rows: CANN's "meaningless" inputs, refused only under MOEFR_STRICT=1 */
    static const int32_t odd[2][2] = {{7, 6}, {2, 9}};
    for (int k = 0; k < 2; k++) {
        memcpy(gi, odd[k], sizeof gi);
        rc = call(&c, x, sm, g, y, sc, NULL);
        CHECK(g_strict ? rc == ACLNN_ERR_PARAM_INVALID && tu_msg_has("MOEFR_STRICT", NULL) : rc == ACLNN_SUCCESS,
              "group index {%d, %d}: %d %s", gi[0], gi[1], rc, tu_msg());
    }
    tu_destroy(x), tu_destroy(sm), tu_destroy(g), tu_destroy(y), tu_destroy(sc);
    free(yb), free(sb);
}

/* every phase-1 refusal above ran on poisoned-free buffers; here one refusal per rule kind on poison */
static void refusals_untouched(void) {
    uint16_t xh[4 * 8] = {0};
    unsigned char *yb = tu_poisoned(32), *sb = tu_poisoned(16);
    aclTensor *x = tu_mk(2, 4, 8, 0, ACL_FLOAT16, xh), *y = tu_mk(2, 4, 8, 0, ACL_INT8, yb);
    aclTensor *sc = tu_mk(1, 3, 0, 0, ACL_FLOAT, sb);
    dq_case c = {.ver = V1, .sym = true};
    CHECK(call(&c, x, NULL, NULL, y, sc, NULL) == ACLNN_ERR_PARAM_INVALID, "scale shape");
    CHECK(tu_all_poison(yb, 32 + TU_GUARD) && tu_all_poison(sb, 16 + TU_GUARD), "a refusal wrote an output");
    tu_destroy(x), tu_destroy(y), tu_destroy(sc);
    free(yb), free(sb);
}

int main(void) {
    tu_seed("test_dynamic_quant");
    const char *soc = getenv("MOEFR_SOC");
    g_a2 = soc && strcmp(soc, "ascend910b") == 0;
    const char *strict = getenv("MOEFR_STRICT");
    g_strict = strict && strcmp(strict, "1") == 0;
    validation();
    cann_samples();
    uncovered_rows();
    refusals_untouched();
    random_cases();
    printf("test_dynamic_quant (%s): %d cases, %d checks, %d failures\n", g_a2 ? "A2" : "950", g_cases, g_checks,
           g_fail);
    return g_fail != 0;
}
