/* test_init_routing.c - aclnnMoeInitRouting (V1) against an independent
 * oracle written from CANN's documented semantics (aclnnMoeInitRouting.md and
 * the golden script moe_init_routing_data/gen_data.py): a comparison sort of
 * (expert, flat position), src = rowIdx at the sorted positions,
 * expandedRowIdx[src[i]] = i (entries never named stay 0, a repeated value
 * keeps the larger i), expandedExpertIdx = the sorted ids, expandedX[i] =
 * x[src[i] % N] for i < min(N, activeNum) * K, compared byte for byte (random
 * bits). CANN's own example, hand-computed. Random cases: every dtype, odd
 * sizes, ties, negative and wide ids, column-layout / permuted / repeating
 * rowIdx, activeNum 0 / inside / past N, empty problems, strided inputs,
 * poisoned outputs with guard bytes, one case past the sort's parallel
 * threshold. Then every validation rule with its code and message, and
 * phase-2 rejections that leave every output untouched. `--strict`: run
 * under MOEFR_STRICT=1 (a repeated rowIdx value is 161002). */
#include "aclnnop/aclnn_moe_init_routing.h"
#define TU_COUNT_FAILURES /* CHECK counts and goes on */
#include "testutil.h"

#define OP "aclnnMoeInitRouting: "
static int g_strict;

static aclTensor *mk(int nd, int64_t d0, int64_t d1, aclDataType dt, void *data) {
    return tu_mk(nd, d0, d1, 1, dt, data);
}

/* One call through both phases; the phase-2 status, or the phase-1 one when that failed. */
static aclnnStatus call(const aclTensor *x, const aclTensor *ri, const aclTensor *ei, int64_t active,
                        const aclTensor *ex, const aclTensor *row, const aclTensor *eex, int *phase) {
    uint64_t wsz = 0;
    aclOpExecutor *e = NULL;
    *phase = 1;
    aclnnStatus rc = aclnnMoeInitRoutingGetWorkspaceSize(x, ri, ei, active, ex, row, eex, &wsz, &e);
    if (rc != ACLNN_SUCCESS) return rc;
    *phase = 2;
    unsigned char *ws = wsz ? malloc(wsz) : NULL;
    if (ws) memset(ws, TU_POISON, wsz);
    rc = aclnnMoeInitRouting(ws, wsz, e, NULL);
    free(ws);
    return rc;
}

typedef struct rcase {
    int64_t N, K, H, E, active;
    int rows;     /* 0 column layout k*N + r, 1 a random permutation, 2 random values (repeats) */
    int keys;     /* 0 [0, E), 1 also negative, 2 also wide, 3 both */
    aclDataType xdt;
    int64_t xs0, xs1, xoff, rs0, rs1, roff, es0, es1, eoff; /* strides in elements */
} rcase;

static const aclDataType XDT[3] = {ACL_FLOAT16, ACL_BF16, ACL_FLOAT};

static int run_case(const rcase *c) {
    const int64_t N = c->N, K = c->K, H = c->H, E = c->E, T = N * K;
    const size_t es = c->xdt == ACL_FLOAT ? 4 : 2;
    unsigned char *x = malloc((size_t)(N * H) * es + 1);
    for (int64_t i = 0; i < N * H * (int64_t)es; i++) x[i] = (unsigned char)tu_next();
    int32_t *ids = malloc(sizeof *ids * (size_t)(T + 1)), *ridx = malloc(sizeof *ridx * (size_t)(T + 1));
    int64_t *key = malloc(sizeof *key * (size_t)(T + 1));
    for (int64_t j = 0; j < T; j++) {
        int64_t v = tu_int(0, E - 1);
        /* 1: negative ids; 2: wide ones up to INT32_MAX; 3: both, spread below 2^31 */
        if ((c->keys & 1) && tu_int(0, 3) == 0) v = -tu_int(1, c->keys == 3 ? (int64_t)1 << 30 : E);
        if (c->keys == 2 && tu_int(0, 3) == 0) v = tu_int(0, 1) ? tu_int(INT32_MAX - 5, INT32_MAX) : tu_int(1 << 24, 1 << 30);
        if (c->keys == 3 && tu_int(0, 3) == 0) v = tu_int(0, 1) ? tu_int((1 << 30) - 3, 1 << 30) : tu_int(1 << 24, 1 << 29);
        ids[j] = (int32_t)v;
        key[j] = v;
    }
    for (int64_t r = 0; r < N; r++)
        for (int64_t k = 0; k < K; k++) ridx[r * K + k] = (int32_t)(k * N + r);
    if (c->rows == 1)
        for (int64_t j = T - 1; j > 0; j--) { /* Fisher-Yates */
            const int64_t s = tu_int(0, j);
            const int32_t t = ridx[j];
            ridx[j] = ridx[s], ridx[s] = t;
        }
    if (c->rows == 2)
        for (int64_t j = 0; j < T; j++) ridx[j] = (int32_t)tu_int(0, T - 1);
    tu_owned xv = tu_make_view(x, 2, N, H, c->xdt, es, c->xoff, c->xs0, c->xs1);
    tu_owned rv = tu_make_view(ridx, 2, N, K, ACL_INT32, 4, c->roff, c->rs0, c->rs1);
    tu_owned ev = tu_make_view(ids, 2, N, K, ACL_INT32, 4, c->eoff, c->es0, c->es1);
    const int64_t A = (c->active < N ? c->active : N) * K;
    const size_t exb = (size_t)(A * H) * es, rb = (size_t)T * 4;
    unsigned char *ex = tu_poisoned(exb), *row = tu_poisoned(rb), *eex = tu_poisoned(rb);
    aclTensor *tex = mk(2, A, H, c->xdt, ex), *trow = mk(1, T, 0, ACL_INT32, row), *teex = mk(1, T, 0, ACL_INT32, eex);
    int phase;
    aclnnStatus rc = call(xv.t, rv.t, ev.t, c->active, tex, trow, teex, &phase);
    char what[256];
    snprintf(what, sizeof what, "N=%lld K=%lld H=%lld E=%lld active=%lld rows=%d keys=%d xdt=%d", (long long)N,
             (long long)K, (long long)H, (long long)E, (long long)c->active, c->rows, c->keys, (int)c->xdt);
    /* the oracle */
    int64_t *perm = malloc(sizeof *perm * (size_t)(T + 1));
    tu_ref_sort(key, T, perm);
    int32_t *want_row = calloc((size_t)T + 1, 4), *want_eex = malloc(rb + 4);
    unsigned char *want_x = malloc(exb + 1);
    bool repeats = false;
    for (int64_t i = 0; i < T; i++) {
        const int32_t s = ridx[perm[i]];
        want_row[s] = (int32_t)i;
        want_eex[i] = (int32_t)key[perm[i]];
        if (i < A) memcpy(want_x + (size_t)(i * H) * es, x + (size_t)((s % N) * H) * es, (size_t)H * es);
    }
    {
        unsigned char *seen = calloc((size_t)T + 1, 1);
        for (int64_t j = 0; j < T; j++) repeats |= seen[ridx[j]]++ != 0;
        free(seen);
    }
    int bad = 0;
    if (g_strict && repeats) {
        /* MOEFR_STRICT=1: a repeated rowIdx value is refused, nothing written */
        if (rc != ACLNN_SUCCESS && phase == 2 && rc == ACLNN_ERR_PARAM_INVALID) {
            if (!tu_all_poison(ex, exb + TU_GUARD) || !tu_all_poison(row, rb + TU_GUARD) ||
                !tu_all_poison(eex, rb + TU_GUARD))
                printf("FAIL %s: strict rejection wrote an output\n", what), bad = 1;
        } else {
            printf("FAIL %s: strict, repeated rowIdx: phase %d status %d\n", what, phase, rc), bad = 1;
        }
    } else if (rc != ACLNN_SUCCESS) {
        printf("FAIL %s: phase %d = %d (%s)\n", what, phase, rc, aclGetRecentErrMsg());
        bad = 1;
    } else {
        for (int64_t j = 0; j < T; j++) {
            int32_t g;
            memcpy(&g, row + j * 4, 4);
            if (g != want_row[j]) {
                printf("FAIL %s: expandedRowIdx[%lld] = %d, want %d\n", what, (long long)j, g, want_row[j]);
                bad = 1;
                break;
            }
        }
        for (int64_t j = 0; j < T; j++) {
            int32_t g;
            memcpy(&g, eex + j * 4, 4);
            if (g != want_eex[j]) {
                printf("FAIL %s: expandedExpertIdx[%lld] = %d, want %d\n", what, (long long)j, g, want_eex[j]);
                bad = 1;
                break;
            }
        }
        if (!tu_guard_ok(row, rb) || !tu_guard_ok(eex, rb)) printf("FAIL %s: index output guard\n", what), bad = 1;
        if (memcmp(ex, want_x, exb) != 0 || !tu_guard_ok(ex, exb))
            printf("FAIL %s: expandedX differs from the oracle's row copies\n", what), bad = 1;
    }
    g_cases++;
    g_fail += bad;
    aclDestroyTensor(xv.t), aclDestroyTensor(rv.t), aclDestroyTensor(ev.t);
    aclDestroyTensor(tex), aclDestroyTensor(trow), aclDestroyTensor(teex);
    free(xv.store), free(rv.store), free(ev.store), free(x), free(ids), free(ridx), free(key);
    free(ex), free(row), free(eex), free(perm), free(want_row), free(want_eex), free(want_x);
    return bad;
}

static rcase random_case(int big) {
    rcase c;
    memset(&c, 0, sizeof c);
    const int empty = tu_int(0, 15) == 0;
    c.N = big ? tu_int(4500, 5200) : tu_int(empty ? 0 : 1, 37);
    c.K = big ? 8 : tu_int(empty && tu_int(0, 1) ? 0 : 1, 9);
    c.H = big ? tu_int(1, 3) : (empty && tu_int(0, 1) ? 0 : tu_int(1, 41));
    c.E = tu_int(1, tu_int(0, 2) ? 5 : 70); /* few experts: many ties */
    switch (tu_int(0, 4)) {
    case 0: c.active = 0; break;
    case 1: case 2: c.active = c.N; break;
    case 3: c.active = tu_int(0, c.N); break;
    default: c.active = c.N + tu_int(1, 50); break;
    }
    c.rows = tu_int(0, 5) < 3 ? 0 : tu_int(1, 2);
    c.keys = tu_int(0, 3) == 0 ? tu_int(1, 3) : 0;
    c.xdt = XDT[tu_int(0, 2)];
    c.xs1 = tu_int(0, 3) == 0 ? 2 : 1;
    c.xs0 = c.H * c.xs1 + tu_int(0, 3);
    c.xoff = tu_int(0, 5);
    c.rs1 = tu_int(0, 3) == 0 ? 3 : 1;
    c.rs0 = c.K * c.rs1 + tu_int(0, 2);
    c.roff = tu_int(0, 4);
    if (tu_int(0, 5) == 0) { /* rowIdx as the transposed (K, N) view CANN's golden builds */
        c.rs0 = 1, c.rs1 = c.N, c.roff = 0;
    }
    c.es1 = tu_int(0, 3) == 0 ? 2 : 1;
    c.es0 = c.K * c.es1 + tu_int(0, 2);
    c.eoff = tu_int(0, 4);
    return c;
}

/* CANN's documented example (aclnnMoeInitRouting.md): x (3, 4) rows 0.1,
 * 0.2, 0.3; expertIdx {1,2,0,1,0,2}; rowIdx {0,3,1,4,2,5}; activeNum 3.
 * By hand: the sort gives positions 2,4,0,3,1,5, so src = 1,2,0,4,3,5. */
static void cann_example(void) {
    float x[12], ex[24];
    int32_t ei[6] = {1, 2, 0, 1, 0, 2}, ri[6] = {0, 3, 1, 4, 2, 5}, row[6], eex[6];
    for (int i = 0; i < 12; i++) x[i] = 0.1f * (float)(i / 4 + 1);
    aclTensor *tx = mk(2, 3, 4, ACL_FLOAT, x), *tr = mk(2, 3, 2, ACL_INT32, ri), *te = mk(2, 3, 2, ACL_INT32, ei),
              *tex = mk(2, 6, 4, ACL_FLOAT, ex), *trow = mk(1, 6, 0, ACL_INT32, row), *teex = mk(1, 6, 0, ACL_INT32, eex);
    int phase;
    CHECK(call(tx, tr, te, 3, tex, trow, teex, &phase) == ACLNN_SUCCESS, "CANN example: %s", aclGetRecentErrMsg());
    const int32_t want_row[6] = {2, 0, 1, 4, 3, 5}, want_eex[6] = {0, 0, 1, 1, 2, 2};
    const int want_src_row[6] = {1, 2, 0, 1, 0, 2};
    for (int i = 0; i < 6; i++) {
        CHECK(row[i] == want_row[i], "CANN example: expandedRowIdx[%d] = %d, want %d", i, row[i], want_row[i]);
        CHECK(eex[i] == want_eex[i], "CANN example: expandedExpertIdx[%d] = %d, want %d", i, eex[i], want_eex[i]);
        for (int h = 0; h < 4; h++)
            CHECK(ex[i * 4 + h] == x[want_src_row[i] * 4], "CANN example: expandedX[%d][%d] = %g", i, h, ex[i * 4 + h]);
    }
    /* activeNum 1: only min(3, 1) * 2 = 2 rows */
    aclTensor *tex2 = mk(2, 2, 4, ACL_FLOAT, ex);
    memset(ex, TU_POISON, sizeof ex);
    CHECK(call(tx, tr, te, 1, tex2, trow, teex, &phase) == ACLNN_SUCCESS, "CANN example, activeNum 1");
    CHECK(ex[0] == x[4] && ex[4] == x[8] && tu_all_poison((unsigned char *)(ex + 8), sizeof ex - 32),
          "CANN example, activeNum 1: rows 0, 1 only");
    aclDestroyTensor(tx), aclDestroyTensor(tr), aclDestroyTensor(te), aclDestroyTensor(tex), aclDestroyTensor(trow);
    aclDestroyTensor(teex), aclDestroyTensor(tex2);
}

/* ---- validation ---- */
enum { VN = 6, VK = 2, VH = 4 };
typedef struct vprob {
    float x[VN * VH], ex[VN * VK * VH + 8];
    int32_t ei[VN * VK], ri[VN * VK], row[VN * VK + 4], eex[VN * VK + 4];
    aclTensor *tx, *tr, *te, *tex, *trow, *teex;
} vprob;
static void vinit(vprob *p) {
    memset(p, 0, sizeof *p);
    for (int r = 0; r < VN; r++)
        for (int k = 0; k < VK; k++) p->ei[r * VK + k] = (r + k) % 3, p->ri[r * VK + k] = k * VN + r;
    p->tx = mk(2, VN, VH, ACL_FLOAT, p->x);
    p->tr = mk(2, VN, VK, ACL_INT32, p->ri);
    p->te = mk(2, VN, VK, ACL_INT32, p->ei);
    p->tex = mk(2, VN * VK, VH, ACL_FLOAT, p->ex);
    p->trow = mk(1, VN * VK, 0, ACL_INT32, p->row);
    p->teex = mk(1, VN * VK, 0, ACL_INT32, p->eex);
}
typedef struct vcall {
    const aclTensor *x, *r, *e, *ex, *row, *eex;
    int64_t active;
    int null_ws, null_ex;
} vcall;
static vcall vdefault(const vprob *p) {
    vcall c = {p->tx, p->tr, p->te, p->tex, p->trow, p->teex, VN, 0, 0};
    return c;
}
static void expect(vcall c, aclnnStatus want, const char *msg, int line) {
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus rc = aclnnMoeInitRoutingGetWorkspaceSize(c.x, c.r, c.e, c.active, c.ex, c.row, c.eex,
                                                         c.null_ws ? NULL : &ws, c.null_ex ? NULL : &e);
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
    /* 161001 */
    c = vdefault(&p), c.x = NULL, EXPECT(c, N1, OP "x is NULL");
    c = vdefault(&p), c.r = NULL, EXPECT(c, N1, OP "rowIdx is NULL");
    c = vdefault(&p), c.e = NULL, EXPECT(c, N1, OP "expertIdx is NULL");
    c = vdefault(&p), c.ex = NULL, EXPECT(c, N1, OP "expandedXOut is NULL");
    c = vdefault(&p), c.row = NULL, EXPECT(c, N1, OP "expandedRowIdxOut is NULL");
    c = vdefault(&p), c.eex = NULL, EXPECT(c, N1, OP "expandedExpertIdxOut is NULL");
    c = vdefault(&p), c.null_ws = 1, EXPECT(c, N1, OP "workspaceSize is NULL");
    c = vdefault(&p), c.null_ex = 1, EXPECT(c, N1, OP "executor is NULL");
    /* 161002: the def table (one for every product), format, contiguous outputs */
    aclTensor *xi = mk(2, VN, VH, ACL_INT32, p.x), *r64 = mk(2, VN, VK, ACL_INT64, p.ex),
              *e64 = mk(2, VN, VK, ACL_INT64, p.ex), *exh = mk(2, VN * VK, VH, ACL_FLOAT16, p.ex),
              *rowf = mk(1, VN * VK, 0, ACL_FLOAT, p.row), *eexi16 = mk(1, VN * VK, 0, ACL_INT16, p.eex);
    c = vdefault(&p), c.x = xi, EXPECT(c, IV, OP "x dtype must be FLOAT16 or BFLOAT16 or FLOAT, got INT32");
    c = vdefault(&p), c.r = r64, EXPECT(c, IV, OP "rowIdx dtype must be INT32, got INT64");
    c = vdefault(&p), c.e = e64, EXPECT(c, IV, OP "expertIdx dtype must be INT32, got INT64");
    c = vdefault(&p), c.ex = exh, EXPECT(c, IV, OP "expandedXOut dtype must be FLOAT given x FLOAT, got FLOAT16");
    c = vdefault(&p), c.row = rowf, EXPECT(c, IV, OP "expandedRowIdxOut dtype must be INT32, got FLOAT");
    c = vdefault(&p), c.eex = eexi16, EXPECT(c, IV, OP "expandedExpertIdxOut dtype must be INT32, got INT16");
    int64_t d2[2] = {VN, VK};
    aclTensor *nz = aclCreateTensor(d2, 2, ACL_INT32, NULL, 0, ACL_FORMAT_NC1HWC0, d2, 2, p.ri);
    c = vdefault(&p), c.r = nz, EXPECT(c, IV, OP "rowIdx format must be ND, got non-ND (3)");
    int64_t rs[1] = {2}, rd[1] = {VN * VK}, rsd[1] = {2 * VN * VK};
    int32_t rowbuf[2 * VN * VK];
    aclTensor *rowst = aclCreateTensor(rd, 1, ACL_INT32, rs, 0, ACL_FORMAT_ND, rsd, 1, rowbuf);
    c = vdefault(&p), c.eex = rowst, EXPECT(c, IV, OP "expandedExpertIdxOut must be contiguous (an output)");
    /* 561002, in the order of moe_init_routing_tiling.cpp */
    aclTensor *x3 = mk(1, VN * VH, 0, ACL_FLOAT, p.x), *r1 = mk(1, VN * VK, 0, ACL_INT32, p.ri),
              *r33 = mk(2, VN, 3, ACL_INT32, p.ex), *e1 = mk(1, VN * VK, 0, ACL_INT32, p.ei),
              *x5 = mk(2, 5, VH, ACL_FLOAT, p.x), *r5 = mk(2, 5, VK, ACL_INT32, p.ri), *e5 = mk(2, 5, VK, ACL_INT32, p.ei);
    c = vdefault(&p), c.x = x3, c.r = r1, EXPECT(c, TL, OP "x must be 2-D, got 1-D (24)");
    c = vdefault(&p), c.r = r1, c.e = e1, EXPECT(c, TL, OP "rowIdx must be 2-D, got 1-D (12)");
    c = vdefault(&p), c.r = r33, EXPECT(c, TL, OP "rowIdx (6, 3) and expertIdx (6, 2) must have the same shape");
    c = vdefault(&p), c.e = e1, EXPECT(c, TL, OP "rowIdx (6, 2) and expertIdx (12) must have the same shape");
    c = vdefault(&p), c.r = r5, c.e = e5, EXPECT(c, TL, OP "x dim0 (6) and expertIdx dim0 (5) must be equal");
    c = vdefault(&p), c.x = x5, c.active = -1, EXPECT(c, TL, OP "x dim0 (5) and expertIdx dim0 (6) must be equal");
    c = vdefault(&p), c.active = -1, EXPECT(c, TL, OP "activeNum must be >= 0, got -1");
    aclTensor *ex1 = mk(1, VN * VK * VH, 0, ACL_FLOAT, p.ex), *row2 = mk(2, VN, VK, ACL_INT32, p.row),
              *eex11 = mk(1, 11, 0, ACL_INT32, p.eex), *row11 = mk(1, 11, 0, ACL_INT32, p.row),
              *ex8 = mk(2, 8, VH, ACL_FLOAT, p.ex), *ex5w = mk(2, VN * VK, 5, ACL_FLOAT, p.ex),
              *ex0 = mk(2, 0, VH, ACL_FLOAT, p.ex), *ex4 = mk(2, 4, VH, ACL_FLOAT, p.ex);
    c = vdefault(&p), c.ex = ex1, EXPECT(c, TL, OP "expandedXOut must be 2-D, got 1-D (48)");
    c = vdefault(&p), c.row = row2, EXPECT(c, TL, OP "expandedRowIdxOut must be 1-D, got 2-D (6, 2)");
    c = vdefault(&p), c.eex = eex11, EXPECT(c, TL, OP "expandedRowIdxOut (12) and expandedExpertIdxOut (11) must have the same shape");
    c = vdefault(&p), c.ex = ex8, EXPECT(c, TL, OP "expandedXOut dim0 must be 12, got 8");
    c = vdefault(&p), c.ex = ex8, c.active = 2, EXPECT(c, TL, OP "expandedXOut dim0 must be 4, got 8");
    c = vdefault(&p), c.ex = ex4, c.active = 2, EXPECT(c, ACLNN_SUCCESS, NULL);
    c = vdefault(&p), c.ex = ex0, c.active = 0, EXPECT(c, ACLNN_SUCCESS, NULL); /* activeNum 0: no rows */
    c = vdefault(&p), c.active = 1000, EXPECT(c, ACLNN_SUCCESS, NULL);
    c = vdefault(&p), c.ex = ex5w, EXPECT(c, TL, OP "expandedXOut dim1 must be 4, got 5");
    c = vdefault(&p), c.row = row11, c.eex = eex11, EXPECT(c, TL, OP "expandedRowIdxOut dim0 must be 12, got 11");
    /* all outputs empty: success, workspace 0, before any tiling rule (a bad activeNum too) */
    {
        aclTensor *x0 = mk(2, 0, VH, ACL_FLOAT, p.x), *i0 = mk(2, 0, VK, ACL_INT32, p.ri),
                  *r0 = mk(1, 0, 0, ACL_INT32, p.row), *i03 = mk(2, 0, 3, ACL_INT32, p.ei);
        uint64_t ws = 7;
        aclOpExecutor *e = NULL;
        aclnnStatus rc = aclnnMoeInitRoutingGetWorkspaceSize(x0, i0, i03, -5, ex0, r0, r0, &ws, &e);
        CHECK(rc == ACLNN_SUCCESS && ws == 0, "empty problem: %d, ws %llu", rc, (unsigned long long)ws);
        if (rc == ACLNN_SUCCESS) CHECK(aclnnMoeInitRouting(NULL, 0, e, NULL) == ACLNN_SUCCESS, "empty phase 2");
        /* N > 0, K = 0: T = 0, every output empty as well */
        aclTensor *xn = mk(2, VN, VH, ACL_FLOAT, p.x), *in0 = mk(2, VN, 0, ACL_INT32, p.ri);
        rc = aclnnMoeInitRoutingGetWorkspaceSize(xn, in0, in0, VN, ex0, r0, r0, &ws, &e);
        CHECK(rc == ACLNN_SUCCESS && ws == 0, "K = 0: %d, ws %llu", rc, (unsigned long long)ws);
        if (rc == ACLNN_SUCCESS) CHECK(aclnnMoeInitRouting(NULL, 0, e, NULL) == ACLNN_SUCCESS, "K = 0 phase 2");
        aclDestroyTensor(x0), aclDestroyTensor(i0), aclDestroyTensor(r0), aclDestroyTensor(i03);
        aclDestroyTensor(xn), aclDestroyTensor(in0);
    }
    /* phase 2: rowIdx values CANN would scatter out of bounds with; an id
     * spread past the sort's keys; every output untouched */
    struct {
        int which, pos;
        int32_t v;
        const char *msg;
    } bad[] = {{0, 5, -1, OP "rowIdx[2][1] = -1 is out of range [0, 12)"},
               {0, 5, 12, OP "rowIdx[2][1] = 12 is out of range [0, 12)"},
               {0, 0, INT32_MIN, OP "rowIdx[0][0] = -2147483648 is out of range [0, 12)"},
               {1, 3, INT32_MIN, OP "expertIdx spans [-2147483648, 2]; moefr sorts ids whose max - min is below 2^31"}};
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        vprob q;
        vinit(&q);
        (bad[b].which ? q.ei : q.ri)[bad[b].pos] = bad[b].v;
        memset(q.ex, TU_POISON, sizeof q.ex), memset(q.row, TU_POISON, sizeof q.row);
        memset(q.eex, TU_POISON, sizeof q.eex);
        int phase;
        aclnnStatus rc = call(q.tx, q.tr, q.te, VN, q.tex, q.trow, q.teex, &phase);
        const char *m = aclGetRecentErrMsg();
        CHECK(phase == 2 && rc == IV && m && strcmp(m, bad[b].msg) == 0, "bad value %zu: phase %d %d '%s'", b, phase,
              rc, m ? m : "");
        CHECK(tu_all_poison((unsigned char *)q.ex, sizeof q.ex) && tu_all_poison((unsigned char *)q.row, sizeof q.row) &&
                  tu_all_poison((unsigned char *)q.eex, sizeof q.eex),
              "bad value %zu: an output was written", b);
        aclTensor *all[] = {q.tx, q.tr, q.te, q.tex, q.trow, q.teex};
        for (int i = 0; i < 6; i++) aclDestroyTensor(all[i]);
    }
    /* a spread of exactly 2^31 - 1 sorts */
    {
        vprob q;
        vinit(&q);
        q.ei[3] = -1, q.ei[4] = INT32_MAX - 1;
        int phase;
        CHECK(call(q.tx, q.tr, q.te, VN, q.tex, q.trow, q.teex, &phase) == ACLNN_SUCCESS, "widest spread: %s",
              aclGetRecentErrMsg());
        CHECK(q.eex[0] == -1 && q.eex[VN * VK - 1] == INT32_MAX - 1, "widest spread: %d .. %d", q.eex[0],
              q.eex[VN * VK - 1]);
        q.ei[4] = INT32_MAX; /* one more is refused */
        CHECK(call(q.tx, q.tr, q.te, VN, q.tex, q.trow, q.teex, &phase) == ACLNN_ERR_PARAM_INVALID,
              "spread 2^31: %s", aclGetRecentErrMsg());
        aclTensor *all[] = {q.tx, q.tr, q.te, q.tex, q.trow, q.teex};
        for (int i = 0; i < 6; i++) aclDestroyTensor(all[i]);
    }
    /* a repeated rowIdx value: golden semantics, or 161002 under MOEFR_STRICT=1 */
    {
        vprob q;
        vinit(&q);
        q.ri[7] = q.ri[2]; /* value 1 twice, value of position 7 never named */
        memset(q.row, TU_POISON, sizeof q.row);
        int phase;
        aclnnStatus rc = call(q.tx, q.tr, q.te, VN, q.tex, q.trow, q.teex, &phase);
        if (g_strict) {
            const char *m = aclGetRecentErrMsg();
            CHECK(rc == IV && m && strcmp(m, OP "rowIdx[3][1] = 1 repeats an earlier value (MOEFR_STRICT=1)") == 0,
                  "strict repeat: %d '%s'", rc, m ? m : "");
            CHECK(tu_all_poison((unsigned char *)q.row, sizeof q.row), "strict repeat: written");
        } else {
            CHECK(rc == ACLNN_SUCCESS, "repeat: %d", rc);
        }
        aclTensor *all[] = {q.tx, q.tr, q.te, q.tex, q.trow, q.teex};
        for (int i = 0; i < 6; i++) aclDestroyTensor(all[i]);
    }
    /* phase 2 engine rules: short workspace, NULL workspace, spent executor */
    {
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        aclnnStatus rc = aclnnMoeInitRoutingGetWorkspaceSize(p.tx, p.tr, p.te, VN, p.tex, p.trow, p.teex, &ws, &e);
        CHECK(rc == ACLNN_SUCCESS && ws > 0, "workspace asked: %d %llu", rc, (unsigned long long)ws);
        void *w = malloc(ws);
        CHECK(aclnnMoeInitRouting(w, ws - 1, e, NULL) == IV, "short workspace");
        rc = aclnnMoeInitRoutingGetWorkspaceSize(p.tx, p.tr, p.te, VN, p.tex, p.trow, p.teex, &ws, &e);
        CHECK(aclnnMoeInitRouting(NULL, ws, e, NULL) == N1, "NULL workspace");
        CHECK(aclnnMoeInitRouting(w, ws, e, NULL) == IV, "spent executor");
        free(w);
    }
    aclTensor *extra[] = {xi,  r64, e64, exh, rowf, eexi16, nz,    rowst, x3,  r1,   r33, e1,  x5,
                          r5,  e5,  ex1, row2, eex11, row11, ex8, ex5w, ex0, ex4};
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++) aclDestroyTensor(extra[i]);
    aclTensor *all[] = {p.tx, p.tr, p.te, p.tex, p.trow, p.teex};
    for (int i = 0; i < 6; i++) aclDestroyTensor(all[i]);
}

int main(int argc, char **argv) {
    g_strict = argc > 1 && strcmp(argv[1], "--strict") == 0;
    tu_seed("test_init_routing");
    cann_example();
    validation();
    for (int i = 0; i < 400; i++) {
        rcase c = random_case(i == 0);
        run_case(&c);
    }
    printf("test_init_routing%s: %d random cases, %d checks, %d failed\n", g_strict ? " (MOEFR_STRICT=1)" : "",
           g_cases, g_checks, g_fail);
    return g_fail != 0;
}
