/* test_forward_validation.c - every validation rule of aclnnMoeFinalizeRoutingV2
 * (SPEC 8): exact status codes, exact one-line messages, the order of the
 * status classes, and `out` left untouched by every phase-2 rejection. */
#include <stdlib.h>
#include <string.h>

#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "testutil.h"

#define OP "aclnnMoeFinalizeRoutingV2: "
static int g_fail, g_checks;

/* A valid problem: R = 3, K = 2, H = 5, E = 3 experts (C = 2 slots in drop-pad). */
enum { R = 3, K = 2, H = 5, E = 3, C = 2 };
typedef struct prob {
    float x[R * K * H], x1[R * H], x2[R * H], bias[E * H], sc[R * K], out[R * H + 8];
    float x3[E * C * H];
    int32_t idx[R * K], eidx[R * K];
    aclTensor *tx, *tx3, *tidx, *tx1, *tx2, *tb, *ts, *te, *tout;
} prob;

static aclTensor *mk(int64_t d0, int64_t d1, int64_t d2, int nd, aclDataType dt, void *data) {
    int64_t dims[3] = {d0, d1, d2};
    return aclCreateTensor(dims, (uint64_t)nd, dt, NULL, 0, ACL_FORMAT_ND, dims, (uint64_t)nd, data);
}

static void prob_init(prob *p) {
    memset(p, 0, sizeof *p);
    for (int i = 0; i < R * K * H; i++) p->x[i] = (float)(i % 7) - 3;
    for (int i = 0; i < E * C * H; i++) p->x3[i] = (float)(i % 5) - 2;
    for (int i = 0; i < R * H; i++) p->x1[i] = 1, p->x2[i] = 2;
    for (int i = 0; i < E * H; i++) p->bias[i] = 0.5f;
    for (int i = 0; i < R * K; i++) p->sc[i] = 0.25f * (float)(i + 1), p->idx[i] = (i * 5) % (R * K),
                                    p->eidx[i] = i % E;
    p->tx = mk(R * K, H, 0, 2, ACL_FLOAT, p->x);
    p->tx3 = mk(E, C, H, 3, ACL_FLOAT, p->x3);
    p->tidx = mk(R * K, 0, 0, 1, ACL_INT32, p->idx);
    p->tx1 = mk(R, H, 0, 2, ACL_FLOAT, p->x1);
    p->tx2 = mk(R, H, 0, 2, ACL_FLOAT, p->x2);
    p->tb = mk(E, H, 0, 2, ACL_FLOAT, p->bias);
    p->ts = mk(R, K, 0, 2, ACL_FLOAT, p->sc);
    p->te = mk(R, K, 0, 2, ACL_INT32, p->eidx);
    p->tout = mk(R, H, 0, 2, ACL_FLOAT, p->out);
}

static void prob_free(prob *p) {
    aclTensor *all[] = {p->tx, p->tx3, p->tidx, p->tx1, p->tx2, p->tb, p->ts, p->te, p->tout};
    for (int i = 0; i < 9; i++)
        if (all[i]) aclDestroyTensor(all[i]);
}

typedef struct call {
    const aclTensor *x, *idx, *x1, *x2, *bias, *scales, *eidx, *out;
    int64_t mode;
    int null_ws, null_ex;
} call;

static call full(const prob *p, int64_t mode) {
    call c = {mode == 1 || mode == 3 ? p->tx3 : p->tx, p->tidx, p->tx1, p->tx2, p->tb, p->ts, p->te, p->tout,
              mode, 0, 0};
    return c;
}

static void expect(int line, const char *what, int got, int want, const char *want_msg) {
    g_checks++;
    const char *m = aclGetRecentErrMsg();
    if (got != want) {
        fprintf(stderr, "line %d (%s): status %d, want %d (message: %s)\n", line, what, got, want, m ? m : "(none)");
        g_fail++;
        return;
    }
    if (want_msg && (!m || strcmp(m, want_msg) != 0)) {
        fprintf(stderr, "line %d (%s): message\n  got:  %s\n  want: %s\n", line, what, m ? m : "(none)", want_msg);
        g_fail++;
    }
}

/* Phase 1 only; a success is released again. */
static int phase1(const call *c) {
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int st = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(c->x, c->idx, c->x1, c->x2, c->bias, c->scales, c->eidx,
                                                       c->mode, c->out, c->null_ws ? NULL : &ws,
                                                       c->null_ex ? NULL : &ex);
    if (st == ACLNN_SUCCESS) aclDestroyAclOpExecutor(ex);
    return st;
}
#define P1(c, want, msg) expect(__LINE__, #c, phase1(&(c)), want, msg)

/* Both phases; checks that a rejected run left out's bytes as they were. */
static int both(const call *c, float *out, size_t out_bytes) {
    unsigned char before[sizeof(float) * (R * H + 8)];
    memset(out, 0x5A, out_bytes);
    memcpy(before, out, out_bytes);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int st = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(c->x, c->idx, c->x1, c->x2, c->bias, c->scales, c->eidx,
                                                       c->mode, c->out, &ws, &ex);
    if (st != ACLNN_SUCCESS) return -st;
    void *w = ws ? malloc(ws) : NULL;
    st = aclnnMoeFinalizeRoutingV2(w, ws, ex, NULL);
    free(w);
    if (st != ACLNN_SUCCESS && memcmp(before, out, out_bytes) != 0) {
        fprintf(stderr, "a rejected phase 2 (status %d) wrote to out\n", st);
        g_fail++;
    }
    return st;
}
#define P2(c, p, want, msg) expect(__LINE__, #c, both(&(c), (p)->out, sizeof (p)->out), want, msg)

int main(void) {
    tu_seed("test_forward_validation");
    aclInit(NULL);
    const int strict = getenv("MOEFR_SOC") && strcmp(getenv("MOEFR_SOC"), "ascend910b") == 0;
    const int istrict = getenv("MOEFR_STRICT") && strcmp(getenv("MOEFR_STRICT"), "1") == 0;
    prob p;
    prob_init(&p);
    call c;
    char msg[256];

    /* ---- the valid problem passes in all four modes ---- */
    for (int m = 0; m < 4; m++) {
        c = full(&p, m);
        P2(c, &p, ACLNN_SUCCESS, NULL);
    }
    /* ---- 161001: required pointers ---- */
    c = full(&p, 0), c.x = NULL;
    P1(c, ACLNN_ERR_PARAM_NULLPTR, OP "expandedX is NULL");
    c = full(&p, 0), c.idx = NULL;
    P1(c, ACLNN_ERR_PARAM_NULLPTR, OP "expandedRowIdx is NULL");
    c = full(&p, 0), c.out = NULL;
    P1(c, ACLNN_ERR_PARAM_NULLPTR, OP "out is NULL");
    c = full(&p, 0), c.null_ws = 1;
    P1(c, ACLNN_ERR_PARAM_NULLPTR, OP "workspaceSize is NULL");
    c = full(&p, 0), c.null_ex = 1;
    P1(c, ACLNN_ERR_PARAM_NULLPTR, OP "executor is NULL");
    /* NULL beats every later class: here also a bad dtype and a bad mode */
    aclTensor *ti64 = mk(R * K, 0, 0, 1, ACL_INT64, p.idx);
    c = full(&p, 9), c.idx = ti64, c.out = NULL;
    P1(c, ACLNN_ERR_PARAM_NULLPTR, OP "out is NULL");
    /* data NULL behind a non-empty tensor: phase 1 plans it (CANN's reuse
     * recipe); phase 2 refuses it */
    aclTensor *tnodata = mk(R, H, 0, 2, ACL_FLOAT, NULL);
    if (tnodata) {
        c = full(&p, 0), c.x1 = tnodata;
        P1(c, ACLNN_SUCCESS, NULL);
        P2(c, &p, ACLNN_ERR_PARAM_NULLPTR, OP "x1Optional has 15 elements but its address is NULL");
        aclDestroyTensor(tnodata);
    }
    /* a destroyed tensor is not live: 161002 */
    aclTensor *dead = mk(R, H, 0, 2, ACL_FLOAT, p.x2);
    aclDestroyTensor(dead);
    c = full(&p, 0), c.x2 = dead;
    snprintf(msg, sizeof msg, OP "x2Optional (%p) is not a live aclTensor", (void *)dead);
    P1(c, ACLNN_ERR_PARAM_INVALID, msg);

    /* ---- 161002: dtypes, formats, contiguity ---- */
    aclTensor *xi = mk(R * K, H, 0, 2, ACL_INT32, p.x);
    c = full(&p, 0), c.x = xi;
    P1(c, ACLNN_ERR_PARAM_INVALID, OP "expandedX dtype must be FLOAT16 or FLOAT or BFLOAT16, got INT32");
    c = full(&p, 0), c.idx = ti64;
    P1(c, ACLNN_ERR_PARAM_INVALID, OP "expandedRowIdx dtype must be INT32, got INT64");
    /* dtype beats shape: int64 index and a bad mode */
    c = full(&p, 7), c.idx = ti64;
    P1(c, ACLNN_ERR_PARAM_INVALID, OP "expandedRowIdx dtype must be INT32, got INT64");
    aclTensor *h_rh = mk(R, H, 0, 2, ACL_FLOAT16, p.x1), *h_b = mk(E, H, 0, 2, ACL_BF16, p.bias);
    aclTensor *h_out = mk(R, H, 0, 2, ACL_BF16, p.out);
    c = full(&p, 0), c.x1 = h_rh;
    P1(c, ACLNN_ERR_PARAM_INVALID, OP "x1Optional dtype must be FLOAT given expandedX FLOAT, got FLOAT16");
    c = full(&p, 0), c.x2 = h_rh;
    P1(c, ACLNN_ERR_PARAM_INVALID, OP "x2Optional dtype must be FLOAT given expandedX FLOAT, got FLOAT16");
    c = full(&p, 0), c.bias = h_b;
    P1(c, ACLNN_ERR_PARAM_INVALID, OP "biasOptional dtype must be FLOAT given expandedX FLOAT, got BFLOAT16");
    c = full(&p, 0), c.out = h_out;
    P1(c, ACLNN_ERR_PARAM_INVALID, OP "out dtype must be FLOAT given expandedX FLOAT, got BFLOAT16");
    aclTensor *s_i = mk(R, K, 0, 2, ACL_INT32, p.sc), *s_h = mk(R, K, 0, 2, ACL_FLOAT16, p.sc);
    aclTensor *e_f = mk(R, K, 0, 2, ACL_FLOAT, p.eidx);
    c = full(&p, 0), c.scales = s_i;
    P1(c, ACLNN_ERR_PARAM_INVALID, strict ? OP "scalesOptional dtype must be FLOAT, got INT32"
                                          : OP "scalesOptional dtype must be FLOAT16 or FLOAT or BFLOAT16, got INT32");
    c = full(&p, 0), c.eidx = e_f;
    P1(c, ACLNN_ERR_PARAM_INVALID, OP "expertIdxOptional dtype must be INT32, got FLOAT");
    /* scales of another float dtype: accepted (Ascend 950), refused under MOEFR_SOC=ascend910b
     * except fp32 scales with bf16 data */
    c = full(&p, 0), c.scales = s_h;
    if (strict)
        P1(c, ACLNN_ERR_PARAM_INVALID,
           OP "scalesOptional dtype must be FLOAT given expandedX FLOAT (MOEFR_SOC=ascend910b), got FLOAT16");
    else
        P2(c, &p, ACLNN_SUCCESS, NULL);
    {
        static uint16_t bx[R * K * H], b1[R * H], bo[R * H];
        aclTensor *bxt = mk(R * K, H, 0, 2, ACL_BF16, bx), *b1t = mk(R, H, 0, 2, ACL_BF16, b1);
        aclTensor *bot = mk(R, H, 0, 2, ACL_BF16, bo);
        c = full(&p, 0), c.x = bxt, c.x1 = b1t, c.x2 = NULL, c.bias = NULL, c.out = bot;
        P1(c, ACLNN_SUCCESS, NULL); /* fp32 scales with bf16 data: always allowed */
        c.scales = s_h;             /* fp16 scales with bf16 data */
        if (strict)
            P1(c, ACLNN_ERR_PARAM_INVALID,
               OP "scalesOptional dtype must be BFLOAT16 or FLOAT given expandedX BFLOAT16 (MOEFR_SOC=ascend910b), "
                  "got FLOAT16");
        else
            P1(c, ACLNN_SUCCESS, NULL);
        aclDestroyTensor(bxt), aclDestroyTensor(b1t), aclDestroyTensor(bot);
    }
    /* formats */
    {
        int64_t d[2] = {R, K};
        aclTensor *nchw = aclCreateTensor(d, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_NCHW, d, 2, p.sc);
        c = full(&p, 0), c.scales = nchw;
        P1(c, ACLNN_ERR_PARAM_INVALID, OP "scalesOptional format must be ND, got NCHW (0)");
        aclDestroyTensor(nchw);
        int64_t o[2] = {R, H};
        aclTensor *onhwc = aclCreateTensor(o, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_NHWC, o, 2, p.out);
        c = full(&p, 0), c.out = onhwc;
        P1(c, ACLNN_ERR_PARAM_INVALID, OP "out format must be ND, got NHWC (1)");
        aclDestroyTensor(onhwc);
        /* a non-contiguous out (transposed view) */
        int64_t ot[2] = {R, H}, st[2] = {1, R}, sd[1] = {R * H};
        aclTensor *otr = aclCreateTensor(ot, 2, ACL_FLOAT, st, 0, ACL_FORMAT_ND, sd, 1, p.out);
        c = full(&p, 0), c.out = otr;
        P1(c, ACLNN_ERR_PARAM_INVALID, OP "out must be contiguous (an output)");
        aclDestroyTensor(otr);
    }

    /* ---- 561002: CANN's tiling (moe_finalize_routing_v2_tiling_membase.cpp), in its order ---- */
#define TIL ACLNN_ERR_INNER_TILING_ERROR
    c = full(&p, 0), c.x1 = NULL;
    P1(c, TIL, OP "x2Optional is given, so x1Optional must be too");
    c = full(&p, 2), c.eidx = NULL;
    P1(c, TIL, OP "biasOptional is given, so expertIdxOptional must be too");
    c = full(&p, 0), c.mode = 4;
    P1(c, TIL, OP "dropPadMode must be 0, 1, 2 or 3, got 4");
    c = full(&p, 0), c.mode = -1;
    P1(c, TIL, OP "dropPadMode must be 0, 1, 2 or 3, got -1");
    c = full(&p, 0), c.x = p.tx3;
    P1(c, TIL, OP "expandedX must be 2-D, got 3-D (3, 2, 5)");
    c = full(&p, 3), c.x = p.tx;
    P1(c, TIL, OP "expandedX must be 3-D, got 2-D (6, 5)");
    aclTensor *idx2 = mk(R, K, 0, 2, ACL_INT32, p.idx);
    c = full(&p, 2), c.idx = idx2;
    P1(c, TIL, OP "expandedRowIdx must be 1-D, got 2-D (3, 2)");
    aclTensor *flat = mk(R * H, 0, 0, 1, ACL_FLOAT, p.x1);
    c = full(&p, 0), c.x1 = flat;
    P1(c, TIL, OP "x1Optional must be 2-D, got 1-D (15)");
    c = full(&p, 0), c.out = flat;
    P1(c, TIL, OP "out must be 2-D, got 1-D (15)");
    aclTensor *s6 = mk(R * K, 0, 0, 1, ACL_FLOAT, p.sc);
    c = full(&p, 0), c.scales = s6;
    P1(c, TIL, OP "scalesOptional must be 2-D, got 1-D (6)");
    aclTensor *s30 = mk(R, 0, 0, 2, ACL_FLOAT, p.sc);
    c = full(&p, 0), c.scales = s30, c.eidx = NULL, c.bias = NULL;
    P1(c, TIL, OP "scalesOptional dim1 (K) must not be 0");
    /* CANN derives R = len(expandedRowIdx) / K; scales dim0 is never compared */
    aclTensor *s23 = mk(2, 3, 0, 2, ACL_FLOAT, p.sc);
    c = full(&p, 0), c.scales = s23;
    P1(c, TIL, OP "x1Optional dim0 must be 2, got 3");
    aclTensor *s31 = mk(R, 1, 0, 2, ACL_FLOAT, p.sc);
    c = full(&p, 0), c.scales = s31, c.eidx = NULL, c.bias = NULL;
    P1(c, TIL, OP "x1Optional dim0 must be 6, got 3");
    c = full(&p, 0), c.scales = NULL, c.eidx = NULL, c.bias = NULL;
    P1(c, TIL, OP "x1Optional dim0 must be 6, got 3");
    /* ... but fewer scales rows than R would be read out of bounds: moefr refuses them */
    aclTensor *s22 = mk(2, K, 0, 2, ACL_FLOAT, p.sc);
    c = full(&p, 0), c.scales = s22;
    P1(c, TIL, OP "scalesOptional dim0 must be at least R = 3, got 2");
    aclTensor *x24 = mk(R, H - 1, 0, 2, ACL_FLOAT, p.x2);
    c = full(&p, 0), c.x2 = x24;
    P1(c, TIL, OP "x2Optional dim1 must be 5, got 4");
    aclTensor *x25 = mk(R - 1, H, 0, 2, ACL_FLOAT, p.x1);
    c = full(&p, 0), c.x1 = x25;
    P1(c, TIL, OP "x1Optional dim0 must be 3, got 2");
    aclTensor *e31 = mk(R, 1, 0, 2, ACL_INT32, p.eidx);
    c = full(&p, 0), c.eidx = e31;
    P1(c, TIL, OP "expertIdxOptional dim1 must be 2, got 1");
    c = full(&p, 0), c.eidx = e31, c.bias = NULL; /* checked without bias too */
    P1(c, TIL, OP "expertIdxOptional dim1 must be 2, got 1");
    /* expandedX's rows are free in modes 0/2 (the index values are checked in phase 2) */
    aclTensor *x55 = mk(R * K - 1, H, 0, 2, ACL_FLOAT, p.x);
    c = full(&p, 2), c.x = x55;
    /* a value past expandedX's rows: Ascend 950's kernel skips the slot, A2/A3's reads out of bounds;
     * below R*K it is within the docs' range, so MOEFR_STRICT=1 keeps it a dropped slot */
    if (strict) P2(c, &p, ACLNN_ERR_PARAM_INVALID, OP "expandedRowIdx[1] = 5 is out of range [0, 5) (expandedX has 5 rows)");
    else P2(c, &p, ACLNN_SUCCESS, NULL);
    /* more expandedX rows than R*K: fine, but MOEFR_STRICT=1 wants CANN's documented [0, R*K) */
    {
        static float x8[(R * K + 2) * H];
        static int32_t idx8[R * K] = {0, 7, 4, 3, 2, 1};
        aclTensor *tx8 = mk(R * K + 2, H, 0, 2, ACL_FLOAT, x8), *ti8 = mk(R * K, 0, 0, 1, ACL_INT32, idx8);
        c = full(&p, 2), c.x = tx8, c.idx = ti8;
        if (istrict) P2(c, &p, ACLNN_ERR_PARAM_INVALID, OP "expandedRowIdx[1] = 7 is out of range [0, 6)");
        else P2(c, &p, ACLNN_SUCCESS, NULL);
        aclDestroyTensor(tx8), aclDestroyTensor(ti8);
    }
    /* H is expandedX's last dim */
    aclTensor *x64 = mk(R * K, H - 1, 0, 2, ACL_FLOAT, p.x);
    c = full(&p, 0), c.x = x64;
    P1(c, TIL, OP "x1Optional dim1 must be 4, got 5");
    aclTensor *x3h = mk(E, C, H - 1, 3, ACL_FLOAT, p.x3), *x30 = mk(0, C, H, 3, ACL_FLOAT, p.x3);
    c = full(&p, 1), c.x = x3h;
    P1(c, TIL, OP "x1Optional dim1 must be 4, got 5");
    /* E = 0 in drop-pad: no row exists, so only -1 could be valid */
    c = full(&p, 3), c.x = x30, c.bias = NULL;
    P2(c, &p, ACLNN_ERR_PARAM_INVALID, OP "expandedRowIdx[0] = 0 is out of range [-1, 0) (expandedX has 0 rows; -1 drops a slot)");
    aclTensor *b2 = mk(E - 1, H, 0, 2, ACL_FLOAT, p.bias), *b0 = mk(0, H, 0, 2, ACL_FLOAT, p.bias);
    aclTensor *bh = mk(E, H + 1, 0, 2, ACL_FLOAT, p.bias), *b1 = mk(1, H, 0, 2, ACL_FLOAT, p.bias);
    c = full(&p, 1), c.bias = b2;
    P1(c, TIL, OP "biasOptional dim0 must be 3, got 2");
    c = full(&p, 0), c.bias = b2; /* modes 0/2: any bias row count >= K */
    P2(c, &p, ACLNN_ERR_PARAM_INVALID, OP "expertIdxOptional[1][0] = 2 is out of range [0, 2)"); /* but expertIdx 2 is out of range */
    c = full(&p, 2), c.bias = b1;
    P1(c, TIL, OP "biasOptional dim0 (E = 1) must be >= K = 2");
    c = full(&p, 2), c.bias = b0;
    P1(c, TIL, OP "biasOptional dim0 (E = 0) must be >= K = 2");
    c = full(&p, 2), c.bias = bh;
    P1(c, TIL, OP "biasOptional dim1 must be 5, got 6");
    aclTensor *o44 = mk(R + 1, H, 0, 2, ACL_FLOAT, p.out);
    c = full(&p, 0), c.out = o44;
    P1(c, TIL, OP "out dim0 must be 3, got 4");
    /* an index longer than R*K: CANN rounds R down and never reads the tail */
    {
        static int32_t idx7[R * K + 1] = {0, 5, 4, 3, 2, 1, 99};
        aclTensor *ti7 = mk(R * K + 1, 0, 0, 1, ACL_INT32, idx7);
        c = full(&p, 0), c.idx = ti7;
        P2(c, &p, ACLNN_SUCCESS, NULL);
        aclDestroyTensor(ti7);
    }
    /* every output empty: success before tiling, whatever the shapes */
    {
        aclTensor *o0 = mk(0, H, 0, 2, ACL_FLOAT, p.out);
        c = full(&p, 0), c.out = o0, c.mode = 9;
        P2(c, &p, ACLNN_SUCCESS, NULL);
        aclDestroyTensor(o0);
    }

    /* ---- phase 2: index and expert values, out untouched ---- */
    const int32_t good[R * K] = {0, 5, 4, 3, 2, 1};
    memcpy(p.idx, good, sizeof good);
    c = full(&p, 0);
    P2(c, &p, ACLNN_SUCCESS, NULL);
    p.idx[3] = 6;
    c = full(&p, 0);
    if (strict) P2(c, &p, ACLNN_ERR_PARAM_INVALID, OP "expandedRowIdx[3] = 6 is out of range [0, 6) (expandedX has 6 rows)");
    else if (istrict) P2(c, &p, ACLNN_ERR_PARAM_INVALID, OP "expandedRowIdx[3] = 6 is out of range [0, 6)");
    else P2(c, &p, ACLNN_SUCCESS, NULL); /* Ascend 950: a dropped slot */
    p.idx[3] = -1; /* -1 drops a slot only in the drop-pad modes */
    c = full(&p, 2);
    P2(c, &p, ACLNN_ERR_PARAM_INVALID,
       strict ? OP "expandedRowIdx[3] = -1 is out of range [0, 6) (expandedX has 6 rows)"
              : OP "expandedRowIdx[3] = -1 is negative (expandedX has 6 rows; values at or past them drop a slot)");
    p.idx[3] = 5; /* a row read twice: fine (MOEFR_STRICT=1 refuses it) */
    c = full(&p, 0);
    if (istrict) P2(c, &p, ACLNN_ERR_PARAM_INVALID, OP "expandedRowIdx[3] = 5 repeats an earlier index");
    else P2(c, &p, ACLNN_SUCCESS, NULL);
    /* drop-pad: -1 may repeat, other values may not; range [-1, E*C) */
    const int32_t dp[R * K] = {-1, 5, -1, 0, 3, -1};
    memcpy(p.idx, dp, sizeof dp);
    c = full(&p, 1);
    P2(c, &p, ACLNN_SUCCESS, NULL);
    c = full(&p, 3);
    P2(c, &p, ACLNN_SUCCESS, NULL);
    p.idx[4] = 6;
    c = full(&p, 3);
    P2(c, &p, ACLNN_ERR_PARAM_INVALID,
       OP "expandedRowIdx[4] = 6 is out of range [-1, 6) (expandedX has 6 rows; -1 drops a slot)");
    p.idx[4] = -2;
    c = full(&p, 1);
    P2(c, &p, ACLNN_ERR_PARAM_INVALID,
       OP "expandedRowIdx[4] = -2 is out of range [-1, 6) (expandedX has 6 rows; -1 drops a slot)");
    p.idx[4] = 0;
    c = full(&p, 1);
    if (istrict) P2(c, &p, ACLNN_ERR_PARAM_INVALID, OP "expandedRowIdx[4] = 0 repeats an earlier index");
    else P2(c, &p, ACLNN_SUCCESS, NULL);
    memcpy(p.idx, good, sizeof good);
    p.eidx[3] = 3;
    c = full(&p, 2);
    P2(c, &p, ACLNN_ERR_PARAM_INVALID, OP "expertIdxOptional[1][1] = 3 is out of range [0, 3)");
    p.eidx[3] = -1;
    c = full(&p, 0);
    P2(c, &p, ACLNN_ERR_PARAM_INVALID, OP "expertIdxOptional[1][1] = -1 is out of range [0, 3)");
    c = full(&p, 0), c.bias = NULL; /* expertIdx is read only when bias is given */
    P2(c, &p, ACLNN_SUCCESS, NULL);
    p.eidx[3] = 1;

    /* ---- executors: single use, workspace size, repeatable ---- */
    {
        c = full(&p, 0);
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        int st = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(c.x, c.idx, c.x1, c.x2, c.bias, c.scales, c.eidx, 0,
                                                           c.out, &ws, &ex);
        expect(__LINE__, "plan", st, ACLNN_SUCCESS, NULL);
        void *w = malloc(ws + 64);
        if (ws > 0) {
            st = aclnnMoeFinalizeRoutingV2(w, ws - 1, ex, NULL);
            snprintf(msg, sizeof msg, OP "workspaceSize must be at least %llu, got %llu", (unsigned long long)ws,
                     (unsigned long long)(ws - 1));
            expect(__LINE__, "small workspace", st, ACLNN_ERR_PARAM_INVALID, msg);
            st = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(c.x, c.idx, c.x1, c.x2, c.bias, c.scales, c.eidx, 0,
                                                           c.out, &ws, &ex);
        }
        st = aclnnMoeFinalizeRoutingV2(w, ws, ex, NULL);
        expect(__LINE__, "run", st, ACLNN_SUCCESS, NULL);
        st = aclnnMoeFinalizeRoutingV2(w, ws, ex, NULL);
        expect(__LINE__, "spent executor", st, ACLNN_ERR_PARAM_INVALID, NULL);
        st = aclnnMoeFinalizeRoutingV2(w, ws, NULL, NULL);
        expect(__LINE__, "NULL executor", st, ACLNN_ERR_PARAM_NULLPTR, NULL);
        /* repeatable: the same bits every run, inputs re-read each time */
        st = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(c.x, c.idx, c.x1, c.x2, c.bias, c.scales, c.eidx, 0, c.out,
                                                       &ws, &ex);
        expect(__LINE__, "plan", st, ACLNN_SUCCESS, NULL);
        expect(__LINE__, "repeatable", aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS, NULL);
        float first[R * H];
        expect(__LINE__, "run 1", aclnnMoeFinalizeRoutingV2(w, ws, ex, NULL), ACLNN_SUCCESS, NULL);
        memcpy(first, p.out, sizeof first);
        memset(p.out, 0x5A, sizeof p.out);
        expect(__LINE__, "run 2", aclnnMoeFinalizeRoutingV2(w, ws, ex, NULL), ACLNN_SUCCESS, NULL);
        g_checks++;
        if (memcmp(first, p.out, sizeof first) != 0) fprintf(stderr, "repeat run differs\n"), g_fail++;
        p.x1[0] += 1; /* re-read at the next run */
        expect(__LINE__, "run 3", aclnnMoeFinalizeRoutingV2(w, ws, ex, NULL), ACLNN_SUCCESS, NULL);
        g_checks++;
        if (p.out[0] != first[0] + 1) fprintf(stderr, "repeatable run did not re-read x1\n"), g_fail++;
        p.x1[0] -= 1;
        p.eidx[0] = 3; /* and values are validated again at every run */
        expect(__LINE__, "run 4", aclnnMoeFinalizeRoutingV2(w, ws, ex, NULL), ACLNN_ERR_PARAM_INVALID,
               OP "expertIdxOptional[0][0] = 3 is out of range [0, 3)");
        p.eidx[0] = 0;
        expect(__LINE__, "destroy", aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS, NULL);
        free(w);
    }

    aclTensor *extra[] = {ti64, xi, h_rh, h_b, h_out, s_i, s_h, e_f, idx2, flat, s6, s23, s31, x24, x25,
                          e31, x55, x64, x3h, x30, b2, b0, bh, o44, s30, s22, b1};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        if (extra[i]) aclDestroyTensor(extra[i]);
    prob_free(&p);
    printf("test_forward_validation: %d checks, %d failures (MOEFR_SOC %s, MOEFR_STRICT %d)\n", g_checks, g_fail,
           strict ? "ascend910b" : "default", istrict);
    return g_fail ? 1 : 0;
}
