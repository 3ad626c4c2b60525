/* test_init_routing_v2.c - aclnnMoeInitRoutingV2 against an independent
 * oracle written from CANN's documented semantics (aclnnMoeInitRoutingV2.md):
 * a comparison sort of (expert, position), expandedRowIdx[perm[i]] = i,
 * row copies compared byte for byte (random bits, NaN payloads included),
 * drop/pad slots and zero rows, count / cumsum / before-capacity outputs.
 * Random cases: every dtype, INT32 and INT64 ids (Ascend 950), 1-D ids,
 * both modes, every flag, activeNum 0 / inside / past T / negative (950),
 * ties, drops, odd sizes, empty problems, strided x and expertIdx, poisoned
 * outputs with guard bytes, and one case past the sort's parallel threshold.
 * Then every validation rule with its code and message, and phase-2
 * rejections that leave every output untouched. `--a2`: the A2/A3 rules
 * (run under MOEFR_SOC=ascend910b). */
#include "aclnnop/aclnn_moe_init_routing_v2.h"
#define TU_COUNT_FAILURES /* CHECK counts and goes on */
#include "testutil.h"

#define OP "aclnnMoeInitRoutingV2: "
static int g_a2;

typedef struct rcase {
    int64_t N, K, H, E, C, active, mode, cflag;
    bool bflag, one_d, give_cnt, give_before;
    aclDataType xdt, idt;
    int64_t xs0, xs1, xoff, is0, is1, ioff; /* strides in elements */
    int wide_keys;                          /* ids up to 2^31 - 1 (dropless without counts) */
} rcase;

static const aclDataType XDT[3] = {ACL_FLOAT16, ACL_BF16, ACL_FLOAT};

static int run_case(const rcase *c) {
    const int64_t N = c->N, K = c->K, H = c->H, E = c->E, C = c->C, T = N * K;
    const size_t es = c->xdt == ACL_FLOAT ? 4 : 2, is = c->idt == ACL_INT64 ? 8 : 4;
    /* inputs: x random bits, ids in range */
    unsigned char *x = malloc((size_t)(N * H) * es + 1);
    for (int64_t i = 0; i < N * H * (int64_t)es; i++) x[i] = (unsigned char)tu_next();
    int64_t *key = malloc(sizeof *key * (size_t)(T + 1));
    unsigned char *ids = malloc((size_t)T * is + 1);
    const bool bounded = c->mode == 1 || c->cflag != 0;
    for (int64_t j = 0; j < T; j++) {
        int64_t v = bounded ? tu_int(0, E - 1) : tu_int(0, E + 3);
        if (!bounded && c->wide_keys && tu_int(0, 2) == 0) v = tu_int(0, INT32_MAX);
        key[j] = v;
        if (is == 8) memcpy(ids + j * 8, &v, 8);
        else {
            int32_t v32 = (int32_t)v;
            memcpy(ids + j * 4, &v32, 4);
        }
    }
    tu_owned xv = tu_make_view(x, 2, N, H, c->xdt, es, c->xoff, c->xs0, c->xs1);
    tu_owned iv = c->one_d ? tu_make_view(ids, 1, T, 1, c->idt, is, c->ioff, c->is0, 0)
                          : tu_make_view(ids, 2, N, K, c->idt, is, c->ioff, c->is0, c->is1);
    /* outputs, poisoned */
    int64_t A = 0;
    if (c->mode == 0) {
        if (g_a2) A = c->active == 0 ? T : (c->active < T ? c->active : T);
        else {
            A = c->active <= 0 ? c->active + T : c->active;
            A = A < T ? A : T;
            A = A > 0 ? A : 0;
        }
    }
    const int64_t xrows = c->mode == 1 ? E * C : A;
    const size_t exb = (size_t)(xrows * H) * es, rb = (size_t)T * 4, cb = (size_t)E * 4;
    unsigned char *ex = tu_poisoned(exb), *row = tu_poisoned(rb), *cnt = tu_poisoned(cb), *bef = tu_poisoned(cb);
    aclTensor *tex = c->mode == 1 ? tu_mk(3, E, C, H, c->xdt, ex) : tu_mk(2, A, H, 0, c->xdt, ex);
    aclTensor *trow = tu_mk(1, T, 0, 0, ACL_INT32, row);
    aclTensor *tcnt = c->give_cnt ? tu_mk(1, E, 0, 0, ACL_INT32, cnt) : NULL;
    aclTensor *tbef = c->give_before ? tu_mk(1, E, 0, 0, ACL_INT32, bef) : NULL;
    uint64_t wsz = 0;
    aclOpExecutor *exe = NULL;
    aclnnStatus rc = aclnnMoeInitRoutingV2GetWorkspaceSize(xv.t, iv.t, c->active, C, E, c->mode, c->cflag, c->bflag,
                                                           tex, trow, tcnt, tbef, &wsz, &exe);
    int bad = 0;
    char what[256];
    snprintf(what, sizeof what,
             "N=%lld K=%lld H=%lld E=%lld C=%lld active=%lld mode=%lld cflag=%lld bflag=%d xdt=%d idt=%d 1d=%d",
             (long long)N, (long long)K, (long long)H, (long long)E, (long long)C, (long long)c->active,
             (long long)c->mode, (long long)c->cflag, c->bflag, (int)c->xdt, (int)c->idt, c->one_d);
    if (rc != ACLNN_SUCCESS) {
        printf("FAIL %s: phase 1 = %d (%s)\n", what, rc, aclGetRecentErrMsg());
        bad = 1;
    } else {
        unsigned char *ws = wsz ? malloc(wsz) : NULL;
        if (ws) memset(ws, TU_POISON, wsz);
        rc = aclnnMoeInitRoutingV2(ws, wsz, exe, NULL);
        free(ws);
        if (rc != ACLNN_SUCCESS) {
            printf("FAIL %s: phase 2 = %d (%s)\n", what, rc, aclGetRecentErrMsg());
            bad = 1;
        }
    }
    /* the oracle */
    int64_t *perm = malloc(sizeof *perm * (size_t)(T + 1)), *hist = calloc((size_t)E + 1, sizeof *hist);
    tu_ref_sort(key, T, perm);
    for (int64_t j = 0; j < T; j++)
        if (key[j] < E) hist[key[j]]++;
    int32_t *want_row = malloc(sizeof *want_row * (size_t)(T + 1));
    unsigned char *want_x = calloc(exb + 1, 1); /* unfilled drop/pad rows: +0.0 */
    if (c->mode == 0) {
        for (int64_t i = 0; i < T; i++) want_row[perm[i]] = (int32_t)i;
        for (int64_t i = 0; i < A; i++) memcpy(want_x + (size_t)(i * H) * es, x + (size_t)(perm[i] / K * H) * es, (size_t)H * es);
    } else {
        int64_t e_prev = -1, s = 0;
        for (int64_t i = 0; i < T; i++) {
            const int64_t e = key[perm[i]];
            s = e == e_prev ? s + 1 : 0;
            e_prev = e;
            if (s < C) {
                want_row[perm[i]] = (int32_t)(e * C + s);
                memcpy(want_x + (size_t)((e * C + s) * H) * es, x + (size_t)(perm[i] / K * H) * es, (size_t)H * es);
            } else {
                want_row[perm[i]] = -1;
            }
        }
    }
    if (!bad) {
        if (memcmp(row, want_row, rb) != 0 || !tu_guard_ok(row, rb)) {
            for (int64_t j = 0; j < T; j++) {
                int32_t g;
                memcpy(&g, row + j * 4, 4);
                if (g != want_row[j]) {
                    printf("FAIL %s: expandedRowIdx[%lld] = %d, want %d\n", what, (long long)j, g, want_row[j]);
                    break;
                }
            }
            bad = 1;
        }
        if (memcmp(ex, want_x, exb) != 0 || !tu_guard_ok(ex, exb))
            printf("FAIL %s: expandedX differs from the oracle's row copies\n", what), bad = 1;
        /* count outputs: written exactly when the flags ask, else untouched */
        const bool want_cnt = c->mode == 0 && c->cflag != 0, want_bef = c->mode == 1 && c->bflag;
        if (c->give_cnt) {
            if (want_cnt) {
                int64_t run = 0;
                for (int64_t e = 0; e < E; e++) {
                    int32_t g;
                    memcpy(&g, cnt + e * 4, 4);
                    run += hist[e];
                    const int64_t w = c->cflag == 1 ? run : hist[e];
                    if (g != w) {
                        printf("FAIL %s: expertTokensCountOrCumsum[%lld] = %d, want %lld\n", what, (long long)e, g,
                               (long long)w);
                        bad = 1;
                        break;
                    }
                }
                if (!tu_guard_ok(cnt, cb)) printf("FAIL %s: count written past E\n", what), bad = 1;
            } else if (!tu_all_poison(cnt, cb + TU_GUARD)) {
                printf("FAIL %s: unrequested expertTokensCountOrCumsum written\n", what), bad = 1;
            }
        }
        if (c->give_before) {
            if (want_bef) {
                for (int64_t e = 0; e < E; e++) {
                    int32_t g;
                    memcpy(&g, bef + e * 4, 4);
                    if (g != hist[e]) {
                        printf("FAIL %s: expertTokensBeforeCapacity[%lld] = %d, want %lld\n", what, (long long)e, g,
                               (long long)hist[e]);
                        bad = 1;
                        break;
                    }
                }
                if (!tu_guard_ok(bef, cb)) printf("FAIL %s: before-capacity written past E\n", what), bad = 1;
            } else if (!tu_all_poison(bef, cb + TU_GUARD)) {
                printf("FAIL %s: unrequested expertTokensBeforeCapacity written\n", what), bad = 1;
            }
        }
    }
    g_cases++;
    g_fail += bad;
    aclDestroyTensor(xv.t), aclDestroyTensor(iv.t), aclDestroyTensor(tex), aclDestroyTensor(trow);
    if (tcnt) aclDestroyTensor(tcnt);
    if (tbef) aclDestroyTensor(tbef);
    free(xv.store), free(iv.store), free(x), free(key), free(ids), free(ex), free(row), free(cnt), free(bef);
    free(perm), free(hist), free(want_row), free(want_x);
    return bad;
}

static rcase random_case(int big) {
    rcase c;
    memset(&c, 0, sizeof c);
    const int empty = tu_int(0, 15) == 0;
    c.N = big ? tu_int(4500, 5200) : tu_int(empty ? 0 : 1, 37);
    c.K = big ? 8 : tu_int(empty && tu_int(0, 1) ? 0 : 1, 9);
    c.H = big ? tu_int(1, 3) : (empty && tu_int(0, 1) ? 0 : tu_int(1, 41));
    c.E = tu_int(1, tu_int(0, 2) ? 6 : 70);
    c.mode = tu_int(0, 1);
    if (c.mode == 1 && c.N == 0) c.mode = 0;
    c.C = c.mode == 1 ? tu_int(1, c.N < 9 ? c.N : 9) : tu_int(0, 5);
    c.cflag = tu_int(0, 2);
    c.bflag = tu_int(0, 1);
    const int64_t T = c.N * c.K;
    switch (tu_int(0, 4)) {
    case 0: case 1: c.active = 0; break;
    case 2: c.active = tu_int(1, T + 3); break;
    case 3: c.active = T + tu_int(0, 50); break;
    default: c.active = g_a2 ? tu_int(0, T) : -tu_int(1, T + 3); break;
    }
    c.xdt = XDT[tu_int(0, 2)];
    c.idt = !g_a2 && tu_int(0, 2) == 0 ? ACL_INT64 : ACL_INT32;
    c.one_d = !g_a2 && c.K == 1 && tu_int(0, 1);
    c.give_cnt = c.cflag != 0 && c.mode == 0 ? true : tu_int(0, 1);
    c.give_before = c.bflag && c.mode == 1 ? true : tu_int(0, 1);
    /* x: padded rows, sometimes every other element, an offset */
    c.xs1 = tu_int(0, 3) == 0 ? 2 : 1;
    c.xs0 = c.H * c.xs1 + tu_int(0, 3);
    c.xoff = tu_int(0, 5);
    c.is1 = tu_int(0, 3) == 0 ? 3 : 1;
    c.is0 = c.one_d ? tu_int(1, 2) : c.K * c.is1 + tu_int(0, 2);
    c.ioff = tu_int(0, 4);
    c.wide_keys = tu_int(0, 3) == 0;
    return c;
}

/* ---- validation ---- */
typedef struct vprob {
    float x[6 * 4], ex[6 * 4 * 2], cnt[8], bef[8];
    int32_t idx[6 * 2], row[6 * 2 + 4];
    aclTensor *tx, *ti, *tex, *tex3, *trow, *tcnt, *tbef;
} vprob;
enum { VN = 6, VK = 2, VH = 4, VE = 3, VC = 2 };

static void vinit(vprob *p) {
    memset(p, 0, sizeof *p);
    for (int i = 0; i < VN * VK; i++) p->idx[i] = i % VE;
    p->tx = tu_mk(2, VN, VH, 0, ACL_FLOAT, p->x);
    p->ti = tu_mk(2, VN, VK, 0, ACL_INT32, p->idx);
    p->tex = tu_mk(2, VN * VK, VH, 0, ACL_FLOAT, p->ex);
    p->tex3 = tu_mk(3, VE, VC, VH, ACL_FLOAT, p->ex);
    p->trow = tu_mk(1, VN * VK, 0, 0, ACL_INT32, p->row);
    p->tcnt = tu_mk(1, VE, 0, 0, ACL_INT32, p->cnt);
    p->tbef = tu_mk(1, VE, 0, 0, ACL_INT32, p->bef);
}
static void vfree(vprob *p) {
    aclTensor *all[] = {p->tx, p->ti, p->tex, p->tex3, p->trow, p->tcnt, p->tbef};
    for (int i = 0; i < 7; i++) aclDestroyTensor(all[i]);
}

typedef struct vcall {
    const aclTensor *x, *i, *ex, *row, *cnt, *bef;
    int64_t active, C, E, mode, cflag;
    bool bflag;
    int null_ws, null_ex;
} vcall;
static vcall vdefault(const vprob *p) {
    vcall c = {p->tx, p->ti, p->tex, p->trow, p->tcnt, p->tbef, 0, 0, VE, 0, 1, false, 0, 0};
    return c;
}
static vcall vdrop(const vprob *p) {
    vcall c = {p->tx, p->ti, p->tex3, p->trow, NULL, p->tbef, 0, VC, VE, 1, 0, true, 0, 0};
    return c;
}

static void expect(vcall c, aclnnStatus want, const char *msg, int line) {
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnMoeInitRoutingV2GetWorkspaceSize(c.x, c.i, c.active, c.C, c.E, c.mode, c.cflag, c.bflag, c.ex,
                                                           c.row, c.cnt, c.bef, c.null_ws ? NULL : &ws,
                                                           c.null_ex ? NULL : &e);
    g_checks++;
    g_fail += tu_phase1_bad(rc, e, want, msg, line);
}
#define EXPECT(c, want, msg) expect(c, want, msg, __LINE__)

static void validation(void) {
    vprob p;
    vinit(&p);
    const int N1 = ACLNN_ERR_PARAM_NULLPTR, IV = ACLNN_ERR_PARAM_INVALID, TL = ACLNN_ERR_INNER_TILING_ERROR;
    vcall c = vdefault(&p);
    EXPECT(c, ACLNN_SUCCESS, NULL);
    EXPECT(vdrop(&p), ACLNN_SUCCESS, NULL);
    /* 161001 */
    c = vdefault(&p), c.x = NULL, EXPECT(c, N1, OP "x is NULL");
    c = vdefault(&p), c.i = NULL, EXPECT(c, N1, OP "expertIdx is NULL");
    c = vdefault(&p), c.ex = NULL, EXPECT(c, N1, OP "expandedXOut is NULL");
    c = vdefault(&p), c.row = NULL, EXPECT(c, N1, OP "expandedRowIdxOut is NULL");
    c = vdefault(&p), c.null_ws = 1, EXPECT(c, N1, OP "workspaceSize is NULL");
    c = vdefault(&p), c.null_ex = 1, EXPECT(c, N1, OP "executor is NULL");
    /* 161002: dtypes and formats */
    aclTensor *xi = tu_mk(2, VN, VH, 0, ACL_INT32, p.x), *i64 = tu_mk(2, VN, VK, 0, ACL_INT64, p.x),
              *i16 = tu_mk(2, VN, VK, 0, ACL_INT16, p.idx), *exh = tu_mk(2, VN * VK, VH, 0, ACL_FLOAT16, p.ex),
              *rowf = tu_mk(1, VN * VK, 0, 0, ACL_FLOAT, p.row), *cnt64 = tu_mk(1, VE, 0, 0, ACL_INT64, p.cnt);
    c = vdefault(&p), c.x = xi, EXPECT(c, IV, OP "x dtype must be FLOAT16 or BFLOAT16 or FLOAT, got INT32");
    c = vdefault(&p), c.i = i16;
    EXPECT(c, IV, g_a2 ? OP "expertIdx dtype must be INT32, got INT16" : OP "expertIdx dtype must be INT32 or INT64, got INT16");
    c = vdefault(&p), c.ex = exh, EXPECT(c, IV, OP "expandedXOut dtype must be FLOAT given x FLOAT, got FLOAT16");
    c = vdefault(&p), c.row = rowf, EXPECT(c, IV, OP "expandedRowIdxOut dtype must be INT32, got FLOAT");
    c = vdefault(&p), c.cnt = cnt64, EXPECT(c, IV, OP "expertTokensCountOrCumsumOutOptional dtype must be INT32, got INT64");
    c = vdefault(&p), c.i = i64;
    if (g_a2) EXPECT(c, IV, OP "expertIdx dtype must be INT32 (MOEFR_SOC=ascend910b), got INT64");
    else EXPECT(c, ACLNN_SUCCESS, NULL);
    int64_t d2[2] = {VN, VK};
    aclTensor *nz = aclCreateTensor(d2, 2, ACL_INT32, NULL, 0, ACL_FORMAT_NC1HWC0, d2, 2, p.idx);
    c = vdefault(&p), c.i = nz, EXPECT(c, IV, OP "expertIdx format must be ND, got non-ND (3)");
    int64_t rs[1] = {2}, rd[1] = {VN * VK}, rsd[1] = {2 * VN * VK};
    int32_t rowbuf[2 * VN * VK];
    aclTensor *rowst = aclCreateTensor(rd, 1, ACL_INT32, rs, 0, ACL_FORMAT_ND, rsd, 1, rowbuf);
    c = vdefault(&p), c.row = rowst, EXPECT(c, IV, OP "expandedRowIdxOut must be contiguous (an output)");
    /* 561002, in CANN's order */
    aclTensor *x3 = tu_mk(3, VN, VH, 1, ACL_FLOAT, p.x), *x5 = tu_mk(2, 5, VH, 0, ACL_FLOAT, p.x);
    c = vdefault(&p), c.x = x3, EXPECT(c, TL, OP "x must be 2-D, got 3-D (6, 4, 1)");
    c = vdefault(&p), c.x = x5, EXPECT(c, TL, OP "x dim0 (5) and expertIdx dim0 (6) must be equal");
    c = vdefault(&p), c.C = -1, EXPECT(c, TL, OP "expertCapacity must be >= 0, got -1");
    c = vdefault(&p), c.E = -1, EXPECT(c, TL, OP "expertNum must be >= 0, got -1");
    c = vdefault(&p), c.mode = 2, EXPECT(c, TL, OP "dropPadMode must be 0 or 1, got 2");
    c = vdrop(&p), c.C = 0, EXPECT(c, TL, OP "dropPadMode 1 needs expertCapacity > 0 and expertNum > 0, got 0 and 3");
    c = vdrop(&p), c.E = 0, EXPECT(c, TL, OP "dropPadMode 1 needs expertCapacity > 0 and expertNum > 0, got 2 and 0");
    c = vdefault(&p), c.cflag = 3, EXPECT(c, TL, OP "expertTokensCountOrCumsumFlag must be 0, 1 or 2, got 3");
    c = vdefault(&p), c.E = 0, EXPECT(c, TL, OP "expertTokensCountOrCumsumFlag 1 needs expertNum > 0, got 0");
    c = vdrop(&p), c.E = 0, c.C = 7, c.cflag = 2, EXPECT(c, TL, OP "dropPadMode 1 needs expertCapacity > 0 and expertNum > 0, got 7 and 0");
    c = vdrop(&p), c.C = 7, EXPECT(c, TL, OP "expertCapacity (7) must be <= x dim0 (6) in dropPadMode 1");
    aclTensor *i3 = tu_mk(3, VN, VK, 1, ACL_INT32, p.idx), *i1 = tu_mk(1, VN, 0, 0, ACL_INT32, p.idx);
    c = vdefault(&p), c.i = i3;
    EXPECT(c, TL, g_a2 ? OP "expertIdx must be 2-D, got 3-D (6, 2, 1)" : OP "expertIdx must be 1-D or 2-D, got 3-D");
    aclTensor *ex6 = tu_mk(2, VN, VH, 0, ACL_FLOAT, p.ex);
    c = vdefault(&p), c.i = i1, c.ex = ex6;
    aclTensor *row6 = tu_mk(1, VN, 0, 0, ACL_INT32, p.row);
    c.row = row6;
    if (g_a2) EXPECT(c, TL, OP "expertIdx must be 2-D, got 1-D (6)");
    else EXPECT(c, ACLNN_SUCCESS, NULL);
    c = vdefault(&p), c.active = -3;
    if (g_a2) EXPECT(c, TL, OP "activeNum must be >= 0, got -3 (MOEFR_SOC=ascend910b)");
    else EXPECT(c, TL, OP "expandedXOut dim0 must be 9, got 12");
    c = vdefault(&p), c.active = 5, EXPECT(c, TL, OP "expandedXOut dim0 must be 5, got 12");
    c = vdefault(&p), c.active = 99, EXPECT(c, ACLNN_SUCCESS, NULL);
    c = vdefault(&p), c.ex = p.tex3, EXPECT(c, TL, OP "expandedXOut must be 2-D, got 3-D (3, 2, 4)");
    aclTensor *exw = tu_mk(2, VN * VK, VH + 1, 0, ACL_FLOAT, p.ex);
    c = vdefault(&p), c.ex = exw, EXPECT(c, TL, OP "expandedXOut dim1 must be 4, got 5");
    c = vdrop(&p), c.ex = p.tex, EXPECT(c, TL, OP "expandedXOut must be 3-D, got 2-D (12, 4)");
    aclTensor *e433 = tu_mk(3, 4, VC, VH, ACL_FLOAT, p.ex), *e313 = tu_mk(3, VE, 1, VH, ACL_FLOAT, p.ex),
              *e325 = tu_mk(3, VE, VC, 5, ACL_FLOAT, p.ex);
    c = vdrop(&p), c.ex = e433, EXPECT(c, TL, OP "expandedXOut dim0 must be 3, got 4");
    c = vdrop(&p), c.ex = e313, EXPECT(c, TL, OP "expandedXOut dim1 must be 2, got 1");
    c = vdrop(&p), c.ex = e325, EXPECT(c, TL, OP "expandedXOut dim2 must be 4, got 5");
    aclTensor *r2 = tu_mk(2, VN, VK, 0, ACL_INT32, p.row), *r11 = tu_mk(1, 11, 0, 0, ACL_INT32, p.row);
    c = vdefault(&p), c.row = r2, EXPECT(c, TL, OP "expandedRowIdxOut must be 1-D, got 2-D (6, 2)");
    c = vdefault(&p), c.row = r11, EXPECT(c, TL, OP "expandedRowIdxOut dim0 must be 12, got 11");
    aclTensor *c2 = tu_mk(2, VE, 1, 0, ACL_INT32, p.cnt), *c4 = tu_mk(1, 4, 0, 0, ACL_INT32, p.cnt);
    c = vdefault(&p), c.cnt = NULL;
    EXPECT(c, TL, OP "expertTokensCountOrCumsumOutOptional is NULL but its flag asks for it");
    c = vdefault(&p), c.cnt = c2, EXPECT(c, TL, OP "expertTokensCountOrCumsumOutOptional must be 1-D, got 2-D (3, 1)");
    c = vdefault(&p), c.cnt = c4, EXPECT(c, TL, OP "expertTokensCountOrCumsumOutOptional dim0 must be 3, got 4");
    c = vdrop(&p), c.bef = NULL;
    EXPECT(c, TL, OP "expertTokensBeforeCapacityOutOptional is NULL but its flag asks for it");
    c = vdrop(&p), c.bef = c4, EXPECT(c, TL, OP "expertTokensBeforeCapacityOutOptional dim0 must be 3, got 4");
    /* what CANN does not check is not rejected: the flags of the other mode,
     * shapes of outputs no flag asks for */
    c = vdrop(&p), c.cnt = c4, c.cflag = 1, EXPECT(c, ACLNN_SUCCESS, NULL);
    c = vdefault(&p), c.bef = c4, c.bflag = true, EXPECT(c, ACLNN_SUCCESS, NULL);
    c = vdefault(&p), c.cflag = 0, c.E = 0, c.cnt = c4, EXPECT(c, ACLNN_SUCCESS, NULL);
    /* all outputs empty: success, workspace 0, before any tiling rule */
    aclTensor *x0 = tu_mk(2, 0, VH, 0, ACL_FLOAT, p.x), *i0 = tu_mk(2, 0, VK, 0, ACL_INT32, p.idx),
              *ex0 = tu_mk(2, 0, VH, 0, ACL_FLOAT, p.ex), *r0 = tu_mk(1, 0, 0, 0, ACL_INT32, p.row),
              *cn0 = tu_mk(1, 0, 0, 0, ACL_INT32, p.cnt);
    {
        uint64_t ws = 7;
        aclOpExecutor *e = NULL;
        aclnnStatus rc = aclnnMoeInitRoutingV2GetWorkspaceSize(x0, i0, 0, 0, VE, 5, 9, false, ex0, r0, cn0, NULL, &ws, &e);
        CHECK(rc == ACLNN_SUCCESS && ws == 0, "empty problem: %d, ws %llu", rc, (unsigned long long)ws);
        if (rc == ACLNN_SUCCESS) CHECK(aclnnMoeInitRoutingV2(NULL, 0, e, NULL) == ACLNN_SUCCESS, "empty phase 2");
    }
    /* phase 2: ids out of range are 161002 before anything is written */
    struct {
        int32_t v;
        int64_t mode, cflag;
        const char *msg;
    } bad[] = {{-1, 0, 0, OP "expertIdx[2][1] = -1 is out of range [0, 2147483648)"},
               {3, 0, 1, OP "expertIdx[2][1] = 3 is out of range [0, 3)"},
               {3, 1, 0, OP "expertIdx[2][1] = 3 is out of range [0, 3)"},
               {-7, 1, 0, OP "expertIdx[2][1] = -7 is out of range [0, 3)"}};
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        c = bad[b].mode ? vdrop(&p) : vdefault(&p);
        c.cflag = bad[b].cflag;
        for (int i = 0; i < VN * VK; i++) p.idx[i] = i % VE;
        p.idx[2 * VK + 1] = bad[b].v;
        memset(p.ex, TU_POISON, sizeof p.ex), memset(p.row, TU_POISON, sizeof p.row);
        memset(p.cnt, TU_POISON, sizeof p.cnt), memset(p.bef, TU_POISON, sizeof p.bef);
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        aclnnStatus rc = aclnnMoeInitRoutingV2GetWorkspaceSize(c.x, c.i, c.active, c.C, c.E, c.mode, c.cflag, c.bflag,
                                                               c.ex, c.row, c.cnt, c.bef, &ws, &e);
        CHECK(rc == ACLNN_SUCCESS, "bad id %zu phase 1: %d", b, rc);
        void *w = ws ? malloc(ws) : NULL;
        rc = aclnnMoeInitRoutingV2(w, ws, e, NULL);
        free(w);
        const char *m = aclGetRecentErrMsg();
        CHECK(rc == IV && m && strcmp(m, bad[b].msg) == 0, "bad id %zu: %d '%s'", b, rc, m ? m : "");
        CHECK(tu_all_poison((unsigned char *)p.ex, sizeof p.ex) && tu_all_poison((unsigned char *)p.row, sizeof p.row) &&
                  tu_all_poison((unsigned char *)p.cnt, sizeof p.cnt) && tu_all_poison((unsigned char *)p.bef, sizeof p.bef),
              "bad id %zu: an output was written", b);
    }
    /* phase 2 engine rules: short workspace, NULL workspace */
    {
        for (int i = 0; i < VN * VK; i++) p.idx[i] = i % VE;
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        vcall d = vdefault(&p);
        aclnnStatus rc = aclnnMoeInitRoutingV2GetWorkspaceSize(d.x, d.i, 0, 0, VE, 0, 1, false, d.ex, d.row, d.cnt, NULL,
                                                               &ws, &e);
        CHECK(rc == ACLNN_SUCCESS && ws > 0, "workspace asked: %d %llu", rc, (unsigned long long)ws);
        void *w = malloc(ws);
        CHECK(aclnnMoeInitRoutingV2(w, ws - 1, e, NULL) == IV, "short workspace");
        rc = aclnnMoeInitRoutingV2GetWorkspaceSize(d.x, d.i, 0, 0, VE, 0, 1, false, d.ex, d.row, d.cnt, NULL, &ws, &e);
        CHECK(aclnnMoeInitRoutingV2(NULL, ws, e, NULL) == N1, "NULL workspace");
        CHECK(aclnnMoeInitRoutingV2(w, ws, e, NULL) == IV, "spent executor");
        free(w);
    }
    aclTensor *extra[] = {xi, i64, i16, exh, rowf, cnt64, nz, rowst, x3, x5, i3, i1, ex6, row6, exw, e433, e313, e325,
                          r2, r11, c2, c4, x0, i0, ex0, r0, cn0};
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++) aclDestroyTensor(extra[i]);
    vfree(&p);
}

/* A repeatable executor reads its tensors' current addresses at each run:
 * new x and expertIdx data through the setters give the new results. */
static void repeatable(void) {
    enum { N = 5, K = 2, H = 3, E = 4 };
    float xa[N * H], xb[N * H], ex[N * K * H];
    int32_t ia[N * K], ib[N * K], row[N * K], cnt[E];
    for (int i = 0; i < N * H; i++) xa[i] = (float)i, xb[i] = (float)(100 + i);
    for (int i = 0; i < N * K; i++) ia[i] = i % E, ib[i] = (N * K - 1 - i) % E;
    aclTensor *tx = tu_mk(2, N, H, 0, ACL_FLOAT, xa), *ti = tu_mk(2, N, K, 0, ACL_INT32, ia),
              *te = tu_mk(2, N * K, H, 0, ACL_FLOAT, ex), *tr = tu_mk(1, N * K, 0, 0, ACL_INT32, row),
              *tc = tu_mk(1, E, 0, 0, ACL_INT32, cnt);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    CHECK(aclnnMoeInitRoutingV2GetWorkspaceSize(tx, ti, 0, 0, E, 0, 2, false, te, tr, tc, NULL, &ws, &e) ==
              ACLNN_SUCCESS, "repeatable phase 1");
    CHECK(aclSetAclOpExecutorRepeatable(e) == ACLNN_SUCCESS, "set repeatable");
    void *w = ws ? malloc(ws) : NULL;
    for (int run = 0; run < 2; run++) {
        const float *x = run ? xb : xa;
        const int32_t *id = run ? ib : ia;
        if (run) {
            CHECK(aclSetInputTensorAddr(e, 0, tx, xb) == ACLNN_SUCCESS, "set x");
            CHECK(aclSetInputTensorAddr(e, 1, ti, ib) == ACLNN_SUCCESS, "set expertIdx");
        }
        memset(ex, TU_POISON, sizeof ex), memset(row, TU_POISON, sizeof row), memset(cnt, TU_POISON, sizeof cnt);
        CHECK(aclnnMoeInitRoutingV2(w, ws, e, NULL) == ACLNN_SUCCESS, "repeatable run %d", run);
        /* hand-made oracle: experts in order, positions in order within one */
        int i = 0;
        for (int x_e = 0; x_e < E; x_e++) {
            int n = 0;
            for (int j = 0; j < N * K; j++)
                if (id[j] == x_e) {
                    CHECK(row[j] == i, "run %d: row[%d] = %d, want %d", run, j, row[j], i);
                    CHECK(memcmp(ex + i * H, x + (j / K) * H, sizeof(float) * H) == 0, "run %d: expandedX row %d", run, i);
                    i++, n++;
                }
            CHECK(cnt[x_e] == n, "run %d: count[%d] = %d, want %d", run, x_e, cnt[x_e], n);
        }
    }
    free(w);
    CHECK(aclDestroyAclOpExecutor(e) == ACLNN_SUCCESS, "destroy");
    aclDestroyTensor(tx), aclDestroyTensor(ti), aclDestroyTensor(te), aclDestroyTensor(tr), aclDestroyTensor(tc);
}

int main(int argc, char **argv) {
    g_a2 = argc > 1 && strcmp(argv[1], "--a2") == 0;
    tu_seed("test_init_routing_v2");
    validation();
    repeatable();
    const int n = 400;
    for (int i = 0; i < n; i++) {
        rcase c = random_case(i == 0);
        run_case(&c);
    }
    printf("test_init_routing_v2%s: %d random cases, %d validation checks, %d failed\n", g_a2 ? " (A2/A3)" : "",
           g_cases, g_checks, g_fail);
    return g_fail != 0;
}
