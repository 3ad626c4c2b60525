/* test_finalize_routing.c - aclnnMoeFinalizeRouting (V1) against an
 * independent float64 loop written from CANN's documented formula
 * (aclnnMoeFinalizeRouting.md: out = x1 + x2 + sum_k scales[r][k] *
 * (expandedX[expandedRowIdx[r + k*R]] + bias[expandedExpertIdx[r][k]])) in
 * SPEC 8's order (x1, + x2, then k = 0..K-1), one rounding, compared bit for
 * bit; and bit-identical to aclnnMoeFinalizeRoutingV2 with dropPadMode 0 on
 * the same tensors. CANN's example by hand. Random cases: every dtype, odd
 * sizes, K past the kernels' slot group, x2 present or not, E < K, more
 * expandedX rows than R*K, repeated rows, strided inputs, poisoned outputs
 * with guard bytes, a parallel case, empty problems. Then every validation
 * rule in CANN's order with its code and message, and the phase-2
 * rejections (index and expert values CANN would read out of bounds with)
 * that leave out untouched. `--strict`: under MOEFR_STRICT=1 (repeated
 * rows and rows >= R*K are 161002). */
#include <math.h>

#include "aclnnop/aclnn_moe_finalize_routing.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "fwd_ref.h"
#define TU_COUNT_FAILURES /* CHECK counts and goes on */
#include "testutil.h"

#define OP "aclnnMoeFinalizeRouting: "
static int g_strict, g_v2_compared;

static aclTensor *mk(int nd, int64_t d0, int64_t d1, aclDataType dt, void *data) {
    return tu_mk(nd, d0, d1, 1, dt, data);
}

typedef struct fcall {
    const aclTensor *x, *x1, *x2, *bias, *sc, *idx, *ei, *out;
    int null_ws, null_ex;
} fcall;

/* Both phases; the status of the phase that failed (*phase says which). */
static aclnnStatus run_v1(const fcall *c, int *phase) {
    uint64_t wsz = 0;
    aclOpExecutor *e = NULL;
    *phase = 1;
    aclnnStatus rc = aclnnMoeFinalizeRoutingGetWorkspaceSize(c->x, c->x1, c->x2, c->bias, c->sc, c->idx, c->ei, c->out,
                                                             &wsz, &e);
    if (rc != ACLNN_SUCCESS) return rc;
    *phase = 2;
    unsigned char *ws = wsz ? malloc(wsz) : NULL;
    if (ws) memset(ws, TU_POISON, wsz);
    rc = aclnnMoeFinalizeRouting(ws, wsz, e, NULL);
    free(ws);
    return rc;
}
static aclnnStatus run_v2(const fcall *c, const aclTensor *out) {
    uint64_t wsz = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(c->x, c->idx, c->x1, c->x2, c->bias, c->sc, c->ei, 0,
                                                               out, &wsz, &e);
    if (rc != ACLNN_SUCCESS) return rc;
    unsigned char *ws = wsz ? malloc(wsz) : NULL;
    rc = aclnnMoeFinalizeRoutingV2(ws, wsz, e, NULL);
    free(ws);
    return rc;
}

static const int DT[3] = {FR_F16, FR_F32, FR_BF16};

/* n random values of dtype, exactly representable (raw bits). */
static unsigned char *rand_vals(int dt, int64_t n) {
    const size_t es = fr_size(dt);
    unsigned char *p = malloc((size_t)n * es + 1);
    for (int64_t i = 0; i < n; i++) {
        double v = ((double)(tu_next() >> 11) * 0x1p-53 - 0.5) * 8.0;
        if (tu_int(0, 40) == 0) v = tu_int(0, 1) ? -0.0 : 0.0;
        const uint32_t b = fr_round(dt, v);
        if (es == 4) memcpy(p + i * 4, &b, 4);
        else {
            const uint16_t h = (uint16_t)b;
            memcpy(p + i * 2, &h, 2);
        }
    }
    return p;
}

/* A strided view of a d0 x d1 (or d0) array: rows padded, sometimes every other element, an offset. */
static tu_owned view(const void *src, int nd, int64_t d0, int64_t d1, aclDataType dt, size_t es) {
    const int64_t s1 = nd == 2 && tu_int(0, 3) == 0 ? 2 : 1;
    const int64_t s0 = nd == 2 ? d1 * s1 + tu_int(0, 3) : tu_int(1, 2);
    return tu_make_view(src, nd, d0, d1, dt, es, tu_int(0, 5), s0, s1);
}

static void run_case(int big) {
    const int dt = DT[tu_int(0, 2)];
    const size_t es = fr_size(dt);
    const int64_t R = big ? tu_int(700, 900) : tu_int(0, 29);
    const int64_t K = big ? 4 : (tu_int(0, 9) == 0 ? tu_int(33, 45) : tu_int(1, 9));
    const int64_t H = big ? tu_int(120, 140) : tu_int(tu_int(0, 12) == 0 ? 0 : 1, 41);
    const int64_t E = tu_int(1, 9), N = R * K, D0 = N + (tu_int(0, 2) == 0 ? tu_int(1, 3) : 0);
    const bool has_x2 = tu_int(0, 1);
    const int repeats = tu_int(0, 3) == 0;
    unsigned char *x = rand_vals(dt, D0 * H), *x1 = rand_vals(dt, R * H), *x2 = rand_vals(dt, R * H),
                  *bias = rand_vals(dt, E * H), *sc = rand_vals(dt, R * K);
    int32_t *idx = malloc(sizeof *idx * (size_t)(D0 + 1)), *ei = malloc(sizeof *ei * (size_t)(N + 1));
    for (int64_t i = 0; i < D0; i++) idx[i] = (int32_t)i;
    for (int64_t i = D0 - 1; i > 0; i--) { /* a permutation of the expandedX rows */
        const int64_t s = tu_int(0, i);
        const int32_t t = idx[i];
        idx[i] = idx[s], idx[s] = t;
    }
    if (repeats)
        for (int64_t i = 0; i < D0; i++)
            if (tu_int(0, 2) == 0) idx[i] = (int32_t)tu_int(0, D0 - 1);
    for (int64_t i = 0; i < N; i++) ei[i] = (int32_t)tu_int(0, E - 1);
    const aclDataType adt = (aclDataType)dt;
    tu_owned vx = view(x, 2, D0, H, adt, es), vx1 = view(x1, 2, R, H, adt, es), vx2 = view(x2, 2, R, H, adt, es),
            vb = view(bias, 2, E, H, adt, es), vs = view(sc, 2, R, K, adt, es),
            vi = view(idx, 1, D0, 1, ACL_INT32, 4), ve = view(ei, 2, R, K, ACL_INT32, 4);
    const size_t ob = (size_t)(R * H) * es;
    unsigned char *out = tu_poisoned(ob), *out2 = tu_poisoned(ob);
    aclTensor *to = mk(2, R, H, adt, out), *to2 = mk(2, R, H, adt, out2);
    fcall c = {vx.t, vx1.t, has_x2 ? vx2.t : NULL, vb.t, vs.t, vi.t, ve.t, to, 0, 0};
    int phase;
    aclnnStatus rc = run_v1(&c, &phase);
    char what[200];
    snprintf(what, sizeof what, "R=%lld K=%lld H=%lld E=%lld D0=%lld dt=%d x2=%d repeats=%d", (long long)R,
             (long long)K, (long long)H, (long long)E, (long long)D0, dt, has_x2, repeats);
    /* strict: repeated rows, or rows at or past R*K, are refused */
    bool strict_bad = false;
    if (g_strict && R * H > 0) { /* an empty out succeeds before any check (CANN's engine) */
        unsigned char *seen = calloc((size_t)D0 + 1, 1);
        for (int64_t i = 0; i < N; i++) strict_bad |= idx[i] >= N || seen[idx[i]]++ != 0;
        free(seen);
    }
    int bad = 0;
    if (strict_bad) {
        if (!(phase == 2 && rc == ACLNN_ERR_PARAM_INVALID && tu_all_poison(out, ob + TU_GUARD)))
            printf("FAIL %s: strict: phase %d status %d, or out written\n", what, phase, rc), bad = 1;
    } else if (rc != ACLNN_SUCCESS) {
        printf("FAIL %s: phase %d = %d (%s)\n", what, phase, rc, aclGetRecentErrMsg()), bad = 1;
    } else {
        /* the oracle: CANN's formula, column layout (mode 0), the forward's canonical order (fwd_ref.h) */
        const fr_problem fp = {dt, dt, 0, R, K, H, D0, E, x, x1, has_x2 ? x2 : NULL, bias, sc, idx, ei};
        unsigned char *want = malloc(ob + 1);
        fr_forward(&fp, want);
        for (int64_t i = 0; i < R * H && !bad; i++) {
            uint32_t got = 0, w = 0;
            memcpy(&got, out + (size_t)i * es, es);
            memcpy(&w, want + (size_t)i * es, es);
            if (got != w)
                printf("FAIL %s: out[%lld][%lld] = 0x%x, want 0x%x (%.17g)\n", what, (long long)(i / H),
                       (long long)(i % H), got, w, fr_decode(dt, want, i)),
                    bad = 1;
        }
        free(want);
        if (!tu_guard_ok(out, ob)) printf("FAIL %s: written past out\n", what), bad = 1;
        /* V2 with dropPadMode 0 on the same tensors: the same bits (V2 also
         * asks E >= K, which V1 does not, and takes R from the index length) */
        if (E >= K && D0 == N) {
            rc = run_v2(&c, to2);
            if (rc != ACLNN_SUCCESS) printf("FAIL %s: V2 mode 0 = %d (%s)\n", what, rc, aclGetRecentErrMsg()), bad = 1;
            else if (memcmp(out, out2, ob) != 0) printf("FAIL %s: V1 and V2 mode 0 differ\n", what), bad = 1;
            else g_v2_compared++;
        }
    }
    g_cases++;
    g_fail += bad;
    tu_owned all[] = {vx, vx1, vx2, vb, vs, vi, ve};
    for (int i = 0; i < 7; i++) aclDestroyTensor(all[i].t), free(all[i].store);
    aclDestroyTensor(to), aclDestroyTensor(to2);
    free(x), free(x1), free(x2), free(bias), free(sc), free(idx), free(ei), free(out), free(out2);
}

/* ---- CANN's example and validation: R = 3, K = 2, H = 4, E = 2, FLOAT ---- */
enum { VR = 3, VK = 2, VH = 4, VE = 2 };
typedef struct vprob {
    float x[VR * VK * VH + 16], x1[VR * VH], x2[VR * VH], bias[VE * VH + 8], sc[VR * VK + 8], out[VR * VH + 8];
    int32_t idx[VR * VK + 4], ei[VR * VK + 8];
    aclTensor *tx, *tx1, *tx2, *tb, *ts, *ti, *te, *to;
} vprob;
static void vinit(vprob *p) {
    memset(p, 0, sizeof *p);
    for (int i = 0; i < VR * VK * VH; i++) p->x[i] = (float)(i % 12) + 0.1f;
    for (int i = 0; i < VR * VH; i++) p->x1[i] = p->x2[i] = (float)i + 0.2f;
    for (int i = 0; i < VE * VH; i++) p->bias[i] = i % 2 ? 0.4f : 0.2f;
    const float sc[VR * VK] = {1.3f, 1.6f, 1.2f, 1.8f, 1.2f, 2.3f};
    const int32_t idx[VR * VK] = {2, 1, 4, 3, 0, 5}, ei[VR * VK] = {0, 1, 0, 1, 0, 1};
    memcpy(p->sc, sc, sizeof sc), memcpy(p->idx, idx, sizeof idx), memcpy(p->ei, ei, sizeof ei);
    p->tx = mk(2, VR * VK, VH, ACL_FLOAT, p->x);
    p->tx1 = mk(2, VR, VH, ACL_FLOAT, p->x1);
    p->tx2 = mk(2, VR, VH, ACL_FLOAT, p->x2);
    p->tb = mk(2, VE, VH, ACL_FLOAT, p->bias);
    p->ts = mk(2, VR, VK, ACL_FLOAT, p->sc);
    p->ti = mk(1, VR * VK, 0, ACL_INT32, p->idx);
    p->te = mk(2, VR, VK, ACL_INT32, p->ei);
    p->to = mk(2, VR, VH, ACL_FLOAT, p->out);
}
static void vfree(vprob *p) {
    aclTensor *all[] = {p->tx, p->tx1, p->tx2, p->tb, p->ts, p->ti, p->te, p->to};
    for (int i = 0; i < 8; i++) aclDestroyTensor(all[i]);
}
static fcall vdefault(const vprob *p) {
    fcall c = {p->tx, p->tx1, p->tx2, p->tb, p->ts, p->ti, p->te, p->to, 0, 0};
    return c;
}

/* aclnnMoeFinalizeRouting.md's example; CANN prints no result, these are
 * hand-computed from the formula (column layout). */
static void cann_example(void) {
    vprob p;
    vinit(&p);
    fcall c = vdefault(&p);
    int phase;
    CHECK(run_v1(&c, &phase) == ACLNN_SUCCESS, "CANN example: %s", aclGetRecentErrMsg());
    const double want[VR * VH] = {11.67, 17.15, 21.47, 26.95, 14.1, 19.7, 24.1, 29.7, 40.65, 46.85, 51.65, 57.85};
    for (int i = 0; i < VR * VH; i++)
        CHECK(fabs(p.out[i] - want[i]) < 1e-4, "CANN example: out[%d] = %.6f, want %.2f", i, p.out[i], want[i]);
    vfree(&p);
}

static void expect(fcall c, aclnnStatus want, const char *msg, int line) {
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnMoeFinalizeRoutingGetWorkspaceSize(c.x, c.x1, c.x2, c.bias, c.sc, c.idx, c.ei, c.out,
                                                             c.null_ws ? NULL : &ws, c.null_ex ? NULL : &e);
    g_checks++;
    g_fail += tu_phase1_bad(rc, e, want, msg, line);
}
#define EXPECT(c, want, msg) expect(c, want, msg, __LINE__)

static void validation(void) {
    vprob p;
    vinit(&p);
    const int N1 = ACLNN_ERR_PARAM_NULLPTR, IV = ACLNN_ERR_PARAM_INVALID, TL = ACLNN_ERR_INNER_TILING_ERROR;
    fcall c = vdefault(&p);
    EXPECT(c, ACLNN_SUCCESS, NULL);
    c.x2 = NULL, EXPECT(c, ACLNN_SUCCESS, NULL); /* x2Optional is optional */
    /* 161001 */
    c = vdefault(&p), c.x = NULL, EXPECT(c, N1, OP "expandedX is NULL");
    c = vdefault(&p), c.x1 = NULL, EXPECT(c, N1, OP "x1 is NULL");
    c = vdefault(&p), c.bias = NULL, EXPECT(c, N1, OP "bias is NULL");
    c = vdefault(&p), c.sc = NULL, EXPECT(c, N1, OP "scales is NULL");
    c = vdefault(&p), c.idx = NULL, EXPECT(c, N1, OP "expandedRowIdx is NULL");
    c = vdefault(&p), c.ei = NULL, EXPECT(c, N1, OP "expandedExpertIdx is NULL");
    c = vdefault(&p), c.out = NULL, EXPECT(c, N1, OP "out is NULL");
    c = vdefault(&p), c.null_ws = 1, EXPECT(c, N1, OP "workspaceSize is NULL");
    c = vdefault(&p), c.null_ex = 1, EXPECT(c, N1, OP "executor is NULL");
    /* 161002: one dtype for the data and scales (moe_finalize_routing_def.cpp) */
    aclTensor *xi = mk(2, VR * VK, VH, ACL_INT32, p.x), *sh = mk(2, VR, VK, ACL_FLOAT16, p.sc),
              *x1h = mk(2, VR, VH, ACL_FLOAT16, p.x1), *i64 = mk(1, VR * VK, 0, ACL_INT64, p.x),
              *e16 = mk(2, VR, VK, ACL_INT16, p.ei), *oh = mk(2, VR, VH, ACL_BF16, p.out);
    c = vdefault(&p), c.x = xi, EXPECT(c, IV, OP "expandedX dtype must be FLOAT16 or FLOAT or BFLOAT16, got INT32");
    c = vdefault(&p), c.x1 = x1h, EXPECT(c, IV, OP "x1 dtype must be FLOAT given expandedX FLOAT, got FLOAT16");
    c = vdefault(&p), c.sc = sh, EXPECT(c, IV, OP "scales dtype must be FLOAT given expandedX FLOAT, got FLOAT16");
    c = vdefault(&p), c.idx = i64, EXPECT(c, IV, OP "expandedRowIdx dtype must be INT32, got INT64");
    c = vdefault(&p), c.ei = e16, EXPECT(c, IV, OP "expandedExpertIdx dtype must be INT32, got INT16");
    c = vdefault(&p), c.out = oh, EXPECT(c, IV, OP "out dtype must be FLOAT given expandedX FLOAT, got BFLOAT16");
    int64_t d2[2] = {VR, VK};
    aclTensor *nz = aclCreateTensor(d2, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_NC1HWC0, d2, 2, p.sc);
    c = vdefault(&p), c.sc = nz, EXPECT(c, IV, OP "scales format must be ND, got non-ND (3)");
    int64_t od[2] = {VR, VH}, os[2] = {VH + 1, 1}, osd[1] = {VR * (VH + 1)};
    float obuf[VR * (VH + 1)];
    aclTensor *ost = aclCreateTensor(od, 2, ACL_FLOAT, os, 0, ACL_FORMAT_ND, osd, 1, obuf);
    c = vdefault(&p), c.out = ost, EXPECT(c, IV, OP "out must be contiguous (an output)");
    /* 561002, in the order of moe_finalize_routing_tiling.cpp CheckParamsShape */
    aclTensor *x_1 = mk(1, VR * VK * VH, 0, ACL_FLOAT, p.x), *x1_1 = mk(1, VR * VH, 0, ACL_FLOAT, p.x1),
              *x2_1 = mk(1, VR * VH, 0, ACL_FLOAT, p.x2), *b_1 = mk(1, VE * VH, 0, ACL_FLOAT, p.bias),
              *s_1 = mk(1, VR * VK, 0, ACL_FLOAT, p.sc), *i_2 = mk(2, VR, VK, ACL_INT32, p.idx),
              *e_1 = mk(1, VR * VK, 0, ACL_INT32, p.ei), *o_1 = mk(1, VR * VH, 0, ACL_FLOAT, p.out);
    c = vdefault(&p), c.x = x_1, c.x1 = x1_1, EXPECT(c, TL, OP "expandedX must be 2-D, got 1-D (24)");
    c = vdefault(&p), c.x1 = x1_1, c.x2 = x2_1, EXPECT(c, TL, OP "x1 must be 2-D, got 1-D (12)");
    c = vdefault(&p), c.x2 = x2_1, c.bias = b_1, EXPECT(c, TL, OP "x2Optional must be 2-D, got 1-D (12)");
    c = vdefault(&p), c.bias = b_1, c.sc = s_1, EXPECT(c, TL, OP "bias must be 2-D, got 1-D (8)");
    c = vdefault(&p), c.sc = s_1, c.idx = i_2, EXPECT(c, TL, OP "scales must be 2-D, got 1-D (6)");
    c = vdefault(&p), c.idx = i_2, c.ei = e_1, EXPECT(c, TL, OP "expandedRowIdx must be 1-D, got 2-D (3, 2)");
    c = vdefault(&p), c.ei = e_1, c.out = o_1, EXPECT(c, TL, OP "expandedExpertIdx must be 2-D, got 1-D (6)");
    c = vdefault(&p), c.out = o_1, EXPECT(c, TL, OP "out must be 2-D, got 1-D (12)");
    aclTensor *s42 = mk(2, 4, VK, ACL_FLOAT, p.x), *e42 = mk(2, 4, VK, ACL_INT32, p.x), *o44 = mk(2, 4, VH, ACL_FLOAT, p.x),
              *x244 = mk(2, 4, VH, ACL_FLOAT, p.x), *x65 = mk(2, VR * VK, 5, ACL_FLOAT, p.x),
              *b25 = mk(2, VE, 5, ACL_FLOAT, p.x), *o35 = mk(2, VR, 5, ACL_FLOAT, p.x), *x235 = mk(2, VR, 5, ACL_FLOAT, p.x),
              *e33 = mk(2, VR, 3, ACL_INT32, p.x), *i7 = mk(1, 7, 0, ACL_INT32, p.x), *b04 = mk(2, 0, VH, ACL_FLOAT, p.x),
              *s30 = mk(2, VR, 0, ACL_FLOAT, p.x), *e30 = mk(2, VR, 0, ACL_INT32, p.x), *x54 = mk(2, 5, VH, ACL_FLOAT, p.x),
              *i5 = mk(1, 5, 0, ACL_INT32, p.idx), *x84 = mk(2, 8, VH, ACL_FLOAT, p.x), *i8 = mk(1, 8, 0, ACL_INT32, p.x),
              *b14 = mk(2, 1, VH, ACL_FLOAT, p.bias);
    c = vdefault(&p), c.sc = s42, c.out = o44, EXPECT(c, TL, OP "scales dim0 must be 3, got 4");
    c = vdefault(&p), c.ei = e42, c.out = o44, EXPECT(c, TL, OP "expandedExpertIdx dim0 must be 3, got 4");
    c = vdefault(&p), c.out = o44, c.x2 = x244, EXPECT(c, TL, OP "out dim0 must be 3, got 4");
    c = vdefault(&p), c.x2 = x244, c.x = x65, EXPECT(c, TL, OP "x2Optional dim0 must be 3, got 4");
    c = vdefault(&p), c.x = x65, c.bias = b25, EXPECT(c, TL, OP "expandedX dim1 must be 4, got 5");
    c = vdefault(&p), c.bias = b25, c.out = o35, EXPECT(c, TL, OP "bias dim1 must be 4, got 5");
    c = vdefault(&p), c.out = o35, c.x2 = x235, EXPECT(c, TL, OP "out dim1 must be 4, got 5");
    c = vdefault(&p), c.x2 = x235, c.ei = e33, EXPECT(c, TL, OP "x2Optional dim1 must be 4, got 5");
    c = vdefault(&p), c.ei = e33, c.idx = i7, EXPECT(c, TL, OP "expandedExpertIdx dim1 must be 2, got 3");
    c = vdefault(&p), c.idx = i7, c.bias = b04, EXPECT(c, TL, OP "expandedRowIdx dim0 must be 6, got 7");
    c = vdefault(&p), c.bias = b04, c.sc = s30, c.ei = e30, EXPECT(c, TL, OP "bias dim0 (E) must not be 0");
    c = vdefault(&p), c.sc = s30, c.ei = e30, EXPECT(c, TL, OP "scales dim1 (K) must not be 0");
    c = vdefault(&p), c.x = x54, c.idx = i5;
    EXPECT(c, TL, OP "expandedRowIdx dim0 (= expandedX dim0) must be at least R*K = 3*2, got 5");
    /* what CANN does not check is accepted: more expandedX rows than R*K, E < K */
    c = vdefault(&p), c.x = x84, c.idx = i8, EXPECT(c, ACLNN_SUCCESS, NULL);
    c = vdefault(&p), c.bias = b14;
    for (int i = 0; i < VR * VK; i++) p.ei[i] = 0;
    EXPECT(c, ACLNN_SUCCESS, NULL);
    vinit(&p); /* (fresh tensors; the old ones are released below) */
    /* out empty: success, workspace 0, before any tiling rule */
    {
        aclTensor *o0 = mk(2, 0, VH, ACL_FLOAT, p.out), *x10 = mk(2, 0, VH, ACL_FLOAT, p.x1);
        uint64_t ws = 7;
        aclOpExecutor *e = NULL;
        aclnnStatus rc = aclnnMoeFinalizeRoutingGetWorkspaceSize(x_1, x10, NULL, b_1, s_1, i_2, e_1, o0, &ws, &e);
        CHECK(rc == ACLNN_SUCCESS && ws == 0, "empty problem: %d, ws %llu", rc, (unsigned long long)ws);
        if (rc == ACLNN_SUCCESS) CHECK(aclnnMoeFinalizeRouting(NULL, 0, e, NULL) == ACLNN_SUCCESS, "empty phase 2");
        aclDestroyTensor(o0), aclDestroyTensor(x10);
    }
    /* phase 2: values CANN would read out of bounds with, out untouched */
    struct {
        int which, pos;
        int32_t v;
        const char *msg;
    } bad[] = {{0, 4, -1, OP "expandedRowIdx[4] = -1 is out of range [0, 6) (expandedX has 6 rows)"},
               {0, 1, 6, OP "expandedRowIdx[1] = 6 is out of range [0, 6) (expandedX has 6 rows)"},
               {1, 3, 2, OP "expandedExpertIdx[1][1] = 2 is out of range [0, 2)"},
               {1, 5, -1, OP "expandedExpertIdx[2][1] = -1 is out of range [0, 2)"}};
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        vprob q;
        vinit(&q);
        (bad[b].which ? q.ei : q.idx)[bad[b].pos] = bad[b].v;
        memset(q.out, TU_POISON, sizeof q.out);
        fcall d = vdefault(&q);
        int phase;
        aclnnStatus rc = run_v1(&d, &phase);
        const char *m = aclGetRecentErrMsg();
        CHECK(phase == 2 && rc == IV && m && strcmp(m, bad[b].msg) == 0, "bad value %zu: phase %d %d '%s'", b, phase,
              rc, m ? m : "");
        CHECK(tu_all_poison((unsigned char *)q.out, sizeof q.out), "bad value %zu: out written", b);
        vfree(&q);
    }
    /* a row named twice: read twice (fine), or 161002 under MOEFR_STRICT=1 */
    {
        vprob q;
        vinit(&q);
        q.idx[5] = q.idx[0];
        memset(q.out, TU_POISON, sizeof q.out);
        fcall d = vdefault(&q);
        int phase;
        aclnnStatus rc = run_v1(&d, &phase);
        if (g_strict) CHECK(rc == IV && tu_all_poison((unsigned char *)q.out, sizeof q.out), "strict repeat: %d", rc);
        else CHECK(rc == ACLNN_SUCCESS, "repeat: %d (%s)", rc, aclGetRecentErrMsg());
        vfree(&q);
    }
    /* phase 2 engine rules */
    {
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        fcall d = vdefault(&p);
        aclnnStatus rc = aclnnMoeFinalizeRoutingGetWorkspaceSize(d.x, d.x1, d.x2, d.bias, d.sc, d.idx, d.ei, d.out, &ws, &e);
        CHECK(rc == ACLNN_SUCCESS, "engine rules: phase 1 %d", rc);
        CHECK(aclnnMoeFinalizeRouting(NULL, 0, NULL, NULL) == N1, "NULL executor");
        void *w = ws ? malloc(ws) : NULL;
        CHECK(aclnnMoeFinalizeRouting(w, ws, e, NULL) == ACLNN_SUCCESS, "run: %s", aclGetRecentErrMsg());
        CHECK(aclnnMoeFinalizeRouting(w, ws, e, NULL) == IV, "spent executor");
        free(w);
        /* a V1 executor is not a V2 one */
        rc = aclnnMoeFinalizeRoutingGetWorkspaceSize(d.x, d.x1, d.x2, d.bias, d.sc, d.idx, d.ei, d.out, &ws, &e);
        CHECK(aclnnMoeFinalizeRoutingV2(NULL, 0, e, NULL) == IV, "V1 executor run by V2");
    }
    aclTensor *extra[] = {xi,   sh,   x1h,  i64,  e16,  oh,  nz,  ost, x_1, x1_1, x2_1, b_1, s_1, i_2, e_1, o_1,
                          s42,  e42,  o44,  x244, x65,  b25, o35, x235, e33, i7,  b04,  s30, e30, x54, i5,  x84,
                          i8,   b14};
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++) aclDestroyTensor(extra[i]);
    vfree(&p);
}

/* The executor's tensors follow V1's signature order: the address setters
 * count x1 as input 1 and out as output 0 (aclSetTensorAddr: index 7). */
static void expect_example(const vprob *p, const float *x1, const float *out, const char *what) {
    /* the forward's canonical order (fwd_ref.h): V1 is mode 0 with x1, x2, bias and scales */
    const fr_problem fp = {FR_F32, FR_F32, 0, VR, VK, VH, VR * VK, VE, p->x, x1, p->x2, p->bias, p->sc, p->idx, p->ei};
    float want[VR * VH];
    fr_forward(&fp, want);
    for (int r = 0; r < VR; r++)
        for (int j = 0; j < VH; j++) {
            const float w = want[r * VH + j], got = out[r * VH + j];
            CHECK(memcmp(&w, &got, 4) == 0, "%s: out[%d][%d] = %.9g, want %.9g", what, r, j, got, w);
        }
}
static void repeatable(void) {
    vprob p;
    vinit(&p);
    fcall c = vdefault(&p);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    CHECK(aclnnMoeFinalizeRoutingGetWorkspaceSize(c.x, c.x1, c.x2, c.bias, c.sc, c.idx, c.ei, c.out, &ws, &e) ==
              ACLNN_SUCCESS, "repeatable phase 1");
    CHECK(aclSetAclOpExecutorRepeatable(e) == ACLNN_SUCCESS, "set repeatable");
    void *w = ws ? malloc(ws) : NULL;
    CHECK(aclnnMoeFinalizeRouting(w, ws, e, NULL) == ACLNN_SUCCESS, "run 1");
    expect_example(&p, p.x1, p.out, "run 1");
    float x1b[VR * VH], out2[VR * VH], out3[VR * VH];
    for (int i = 0; i < VR * VH; i++) x1b[i] = (float)(i * i) - 7.25f;
    CHECK(aclSetInputTensorAddr(e, 1, p.tx1, x1b) == ACLNN_SUCCESS, "set x1 (input 1)");
    CHECK(aclSetOutputTensorAddr(e, 0, p.to, out2) == ACLNN_SUCCESS, "set out (output 0)");
    CHECK(aclnnMoeFinalizeRouting(w, ws, e, NULL) == ACLNN_SUCCESS, "run 2");
    expect_example(&p, x1b, out2, "run 2");
    CHECK(aclSetTensorAddr(e, 7, p.to, out3) == ACLNN_SUCCESS, "set out (tensor 7)");
    CHECK(aclnnMoeFinalizeRouting(w, ws, e, NULL) == ACLNN_SUCCESS, "run 3");
    CHECK(memcmp(out2, out3, sizeof out2) == 0, "run 3 = run 2");
    free(w);
    CHECK(aclDestroyAclOpExecutor(e) == ACLNN_SUCCESS, "destroy");
    vfree(&p);
}

int main(int argc, char **argv) {
    g_strict = argc > 1 && strcmp(argv[1], "--strict") == 0;
    tu_seed("test_finalize_routing");
    cann_example();
    validation();
    repeatable();
    for (int i = 0; i < 300; i++) run_case(i == 0);
    CHECK(g_strict || g_v2_compared > 30, "only %d cases compared with V2", g_v2_compared);
    printf("test_finalize_routing%s: %d random cases (%d bit-compared with V2 mode 0), %d checks, %d failed\n",
           g_strict ? " (MOEFR_STRICT=1)" : "", g_cases, g_v2_compared, g_checks, g_fail);
    return g_fail != 0;
}
