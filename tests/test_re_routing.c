/* test_re_routing.c - aclnnMoeReRouting against an oracle written from CANN's
 * documented formulas (moe/moe_re_routing/README.md): a token of rank r for
 * expert e, i-th in its block, sits at SrcOffset = the blocks of earlier
 * ranks plus rank r's blocks of earlier experts, and goes to DstOffset = the
 * blocks of earlier experts (all ranks) plus expert e's blocks of earlier
 * ranks; the oracle computes both sums for every row directly. Hand-worked
 * cases, random cases over every dtype column, strided inputs, counts that
 * leave rows over, poisoned outputs with guard bytes, the phase-1 codes and
 * the phase-2 refusals with outputs untouched. MOEFR_SOC=ascend910b runs
 * the A2/A3 rules (the test reads the same variable). */
#include "aclnnop/aclnn_moe_re_routing.h"
#define TU_COUNT_FAILURES
#include "testutil.h"

static int A2;

static size_t esz(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT: case ACL_INT32: return 4;
    case ACL_INT64: return 8;
    case ACL_INT8: case ACL_FLOAT8_E5M2: case ACL_FLOAT8_E4M3FN: case ACL_FLOAT8_E8M0: return 1;
    default: return 2;
    }
}

/* One problem: tokens (A, H), counts (N, E), optional scales (1-D (A) or 2-D (A, SW)). */
typedef struct prob {
    aclDataType tdt, cdt, sdt; /* sdt: the scales' dtype (FLOAT, or FLOAT8_E8M0 with FLOAT8 tokens) */
    int64_t A, H, N, E, SW; /* SW 0: no scales; scale rank in srank */
    int srank;
    int idx_type;
    int64_t *cnt; /* N*E */
    unsigned char *tok, *scl;
} prob;

/* The oracle: expected outputs (ptok A*H, pscl A*SW floats, idx A, enu E), rows past S zero. */
static void oracle(const prob *p, unsigned char *ptok, unsigned char *pscl, int32_t *idx, int64_t *enu) {
    const size_t es = esz(p->tdt), rb = (size_t)p->H * es;
    const int64_t N = p->N, E = p->E;
    memset(ptok, 0, (size_t)p->A * rb);
    const size_t ses = esz(p->sdt);
    if (pscl) memset(pscl, 0, (size_t)(p->A * p->SW) * ses);
    memset(idx, 0, (size_t)p->A * 4);
    for (int64_t e = 0; e < E; e++) {
        enu[e] = 0;
        for (int64_t r = 0; r < N; r++) enu[e] += p->cnt[r * E + e];
    }
    for (int64_t r = 0; r < N; r++)
        for (int64_t e = 0; e < E; e++)
            for (int64_t i = 0; i < p->cnt[r * E + e]; i++) {
                int64_t so = i, dof = i;
                for (int64_t rr = 0; rr < r; rr++)
                    for (int64_t ee = 0; ee < E; ee++) so += p->cnt[rr * E + ee];
                for (int64_t ee = 0; ee < e; ee++) so += p->cnt[r * E + ee];
                for (int64_t ee = 0; ee < e; ee++)
                    for (int64_t rr = 0; rr < N; rr++) dof += p->cnt[rr * E + ee];
                for (int64_t rr = 0; rr < r; rr++) dof += p->cnt[rr * E + e];
                memcpy(ptok + dof * (int64_t)rb, p->tok + so * (int64_t)rb, rb);
                if (pscl) memcpy(pscl + dof * p->SW * (int64_t)ses, p->scl + so * p->SW * (int64_t)ses, (size_t)p->SW * ses);
                if (p->idx_type == 0) idx[dof] = (int32_t)so;
                else idx[so] = (int32_t)dof;
            }
}

/* A view of a dense (d0, d1) or (d0) array: dense, or padded rows with an element stride of 2. */
static tu_owned view_of(const void *dense, int nd, int64_t d0, int64_t d1, aclDataType dt, int strided) {
    const size_t es = esz(dt);
    if (nd == 1) return tu_make_view(dense, 1, d0, 1, dt, es, strided ? 3 : 0, strided ? 2 : 1, 1);
    if (!strided) return tu_make_view(dense, 2, d0, d1, dt, es, 0, d1, 1);
    if (tu_chance(50)) return tu_make_view(dense, 2, d0, d1, dt, es, 5, d1 * 2 + 3, 2);
    return tu_make_view(dense, 2, d0, d1, dt, es, 1, 1, d0 > 0 ? d0 : 1); /* column-major */
}

typedef struct outs {
    unsigned char *ptok, *pscl, *idx, *enu;
    size_t btok, bscl, bidx, benu;
    aclTensor *t_ptok, *t_pscl, *t_idx, *t_enu;
} outs;

static void outs_make(outs *o, const prob *p) {
    o->btok = (size_t)(p->A * p->H) * esz(p->tdt);
    o->bscl = (size_t)(p->A * (p->SW ? p->SW : 1)) * esz(p->sdt);
    o->bidx = (size_t)p->A * 4;
    o->benu = (size_t)p->E * esz(p->cdt);
    o->ptok = tu_poisoned(o->btok);
    o->pscl = tu_poisoned(o->bscl);
    o->idx = tu_poisoned(o->bidx);
    o->enu = tu_poisoned(o->benu);
    o->t_ptok = tu_mk(2, p->A, p->H, 0, p->tdt, o->ptok);
    if (p->SW && p->srank == 2) o->t_pscl = tu_mk(2, p->A, p->SW, 0, p->sdt, o->pscl);
    else o->t_pscl = tu_mk(1, p->A, 0, 0, p->sdt, o->pscl);
    o->t_idx = tu_mk(1, p->A, 0, 0, ACL_INT32, o->idx);
    o->t_enu = tu_mk(1, p->E, 0, 0, p->cdt, o->enu);
}
static void outs_free(outs *o) {
    tu_destroy(o->t_ptok), tu_destroy(o->t_pscl), tu_destroy(o->t_idx), tu_destroy(o->t_enu);
    free(o->ptok), free(o->pscl), free(o->idx), free(o->enu);
}
static int outs_untouched(const outs *o) {
    return tu_all_poison(o->ptok, o->btok + TU_GUARD) && tu_all_poison(o->pscl, o->bscl + TU_GUARD) &&
           tu_all_poison(o->idx, o->bidx + TU_GUARD) && tu_all_poison(o->enu, o->benu + TU_GUARD);
}

/* Runs both phases; returns the status of the first that fails. */
static aclnnStatus run(const prob *p, const aclTensor *tok, const aclTensor *cnt, const aclTensor *scl, int64_t etype,
                       int64_t itype, outs *o) {
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus rc = aclnnMoeReRoutingGetWorkspaceSize(tok, cnt, scl, etype, itype, o->t_ptok, o->t_pscl, o->t_idx,
                                                       o->t_enu, &ws, &ex);
    (void)p;
    if (rc != ACLNN_SUCCESS) return rc;
    void *w = ws ? malloc(ws) : NULL;
    rc = aclnnMoeReRouting(w, ws, ex, NULL);
    free(w);
    return rc;
}

static void counts_dense(const prob *p, void *dst) {
    for (int64_t i = 0; i < p->N * p->E; i++) {
        if (p->cdt == ACL_INT64) memcpy((char *)dst + i * 8, &p->cnt[i], 8);
        else {
            int32_t v = (int32_t)p->cnt[i];
            memcpy((char *)dst + i * 4, &v, 4);
        }
    }
}

/* One case: builds views (strided when asked), runs, compares every output bit for bit. */
static void check_case(prob *p, int strided, const char *what) {
    g_cases++;
    const size_t es = esz(p->tdt);
    void *cd = malloc((size_t)(p->N * p->E) * 8 + 8);
    counts_dense(p, cd);
    tu_owned vt = view_of(p->tok, 2, p->A, p->H, p->tdt, strided);
    tu_owned vc = view_of(cd, 2, p->N, p->E, p->cdt, strided && tu_chance(50));
    tu_owned vs = {NULL, NULL};
    if (p->SW) vs = view_of(p->scl, p->srank, p->A, p->SW, p->sdt, strided && tu_chance(50));
    outs o;
    outs_make(&o, p);
    aclnnStatus rc = run(p, vt.t, vc.t, vs.t, 1, p->idx_type, &o);
    CHECK(rc == ACLNN_SUCCESS, "%s: status %d (%s)", what, (int)rc, tu_msg());
    if (rc == ACLNN_SUCCESS) {
        unsigned char *etok = malloc(o.btok + 1), *escl = malloc(o.bscl + 4);
        int32_t *eidx = malloc((size_t)p->A * 4 + 4);
        int64_t *enu = malloc((size_t)p->E * 8 + 8);
        oracle(p, etok, p->SW ? escl : NULL, eidx, enu);
        CHECK(memcmp(etok, o.ptok, o.btok) == 0, "%s: permuteTokensOut differs", what);
        CHECK(memcmp(eidx, o.idx, o.bidx) == 0, "%s: permuteTokenIdxOut differs", what);
        if (p->SW) CHECK(memcmp(escl, o.pscl, o.bscl) == 0, "%s: permutePerTokenScalesOut differs", what);
        else CHECK(tu_all_poison(o.pscl, o.bscl), "%s: permutePerTokenScalesOut written without scales", what);
        for (int64_t e = 0; e < p->E; e++) {
            int64_t got = 0;
            if (p->cdt == ACL_INT64) memcpy(&got, o.enu + e * 8, 8);
            else {
                int32_t g;
                memcpy(&g, o.enu + e * 4, 4);
                got = g;
            }
            CHECK(got == enu[e], "%s: expertTokenNumOut[%lld] = %lld, want %lld", what, (long long)e, (long long)got,
                  (long long)enu[e]);
        }
        CHECK(tu_guard_ok(o.ptok, o.btok) && tu_guard_ok(o.pscl, o.bscl) && tu_guard_ok(o.idx, o.bidx) &&
                  tu_guard_ok(o.enu, o.benu),
              "%s: a write past an output", what);
        free(etok), free(escl), free(eidx), free(enu);
    }
    (void)es;
    outs_free(&o);
    tu_free(&vt), tu_free(&vc);
    if (p->SW) tu_free(&vs);
    free(cd);
}

static void fill_bytes(unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)tu_next();
}

/* Random counts over N x E adding up to S (some blocks empty). */
static void random_counts(int64_t *c, int64_t N, int64_t E, int64_t S) {
    memset(c, 0, (size_t)(N * E) * 8);
    for (int64_t k = 0; k < S; k++) {
        int64_t b = tu_below(N * E);
        if (tu_chance(30)) b = b % ((N * E + 1) / 2); /* crowd some blocks */
        c[b]++;
    }
}

static void random_cases(int n) {
    /* Ascend 950's table adds FLOAT8 tokens (bytes moved as they are) with FLOAT8_E8M0 scales */
    static const aclDataType TDT[] = {ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_FLOAT8_E5M2, ACL_FLOAT8_E4M3FN};
    for (int it = 0; it < n; it++) {
        prob p;
        memset(&p, 0, sizeof p);
        p.tdt = TDT[tu_below(A2 ? 3 : 5)];
        const bool fp8 = p.tdt == ACL_FLOAT8_E5M2 || p.tdt == ACL_FLOAT8_E4M3FN;
        p.sdt = fp8 ? ACL_FLOAT8_E8M0 : ACL_FLOAT;
        p.cdt = tu_chance(50) ? ACL_INT32 : ACL_INT64;
        p.A = tu_chance(10) ? 0 : tu_int(1, it % 7 == 0 ? 3000 : 90);
        p.H = tu_int(1, it % 7 == 0 ? 160 : 70);
        p.N = tu_int(1, 9);
        p.E = tu_int(1, 9);
        p.idx_type = A2 ? 0 : (int)tu_below(2);
        const int sk = fp8 ? 1 + (int)tu_below(2) : (int)tu_below(3); /* FLOAT8 tokens need their scales */
        if (sk == 1) p.SW = 1, p.srank = 1;
        else if (sk == 2) p.SW = tu_int(1, 5), p.srank = 2;
        if (A2 && p.srank == 2) p.SW = 1; /* A2/A3 moves one element per token; a width-1 2-D view agrees */
        p.cnt = malloc((size_t)(p.N * p.E) * 8);
        const int64_t S = tu_chance(20) && p.A > 0 ? tu_below(p.A) : p.A;
        random_counts(p.cnt, p.N, p.E, S);
        p.tok = malloc((size_t)(p.A * p.H) * esz(p.tdt) + 1);
        fill_bytes(p.tok, (size_t)(p.A * p.H) * esz(p.tdt));
        p.scl = malloc((size_t)(p.A * (p.SW ? p.SW : 1)) * esz(p.sdt) + 4);
        fill_bytes(p.scl, (size_t)(p.A * (p.SW ? p.SW : 1)) * esz(p.sdt));
        char what[160];
        snprintf(what, sizeof what, "random %d (tokens %s, A %lld H %lld N %lld E %lld S %lld SW %lld idx %d)", it,
                 fp8 ? (p.tdt == ACL_FLOAT8_E5M2 ? "FLOAT8_E5M2" : "FLOAT8_E4M3FN") : "16/8-bit",
                 (long long)p.A, (long long)p.H, (long long)p.N, (long long)p.E, (long long)S, (long long)p.SW,
                 p.idx_type);
        check_case(&p, tu_chance(40), what);
        free(p.cnt), free(p.tok), free(p.scl);
    }
}

/* counts [[1,1,1],[1,1,1]], 6 tokens: gather [0,3,1,4,2,5], scatter [0,2,4,1,3,5], counts [2,2,2]. */
static void hand_case(int scatter) {
    g_cases++;
    int64_t cnt[6] = {1, 1, 1, 1, 1, 1};
    int32_t c32[6] = {1, 1, 1, 1, 1, 1};
    uint16_t tok[12];
    for (int i = 0; i < 12; i++) tok[i] = (uint16_t)(0x3c00 + i); /* row i = {2i, 2i+1} */
    prob p = {ACL_FLOAT16, ACL_INT32, ACL_FLOAT, 6, 2, 2, 3, 0, 0, scatter, cnt, (unsigned char *)tok, NULL};
    aclTensor *tt = tu_mk(2, 6, 2, 0, ACL_FLOAT16, tok), *tc = tu_mk(2, 2, 3, 0, ACL_INT32, c32);
    outs o;
    outs_make(&o, &p);
    aclnnStatus rc = run(&p, tt, tc, NULL, 1, scatter, &o);
    CHECK(rc == ACLNN_SUCCESS, "hand case: %d %s", (int)rc, tu_msg());
    static const int32_t G[6] = {0, 3, 1, 4, 2, 5}, SC[6] = {0, 2, 4, 1, 3, 5};
    CHECK(memcmp(o.idx, scatter ? SC : G, 24) == 0, "hand case: idx");
    for (int d = 0; d < 6; d++) {
        uint16_t v[2];
        memcpy(v, o.ptok + d * 4, 4);
        CHECK(v[0] == tok[2 * G[d]] && v[1] == tok[2 * G[d] + 1], "hand case: row %d", d);
    }
    int32_t en[3];
    memcpy(en, o.enu, 12);
    CHECK(en[0] == 2 && en[1] == 2 && en[2] == 2, "hand case: counts");
    outs_free(&o);
    tu_destroy(tt), tu_destroy(tc);
}

#define P1(call, want, ...)                                                             \
    do {                                                                                \
        aclOpExecutor *ex_ = NULL;                                                      \
        uint64_t ws_ = 0;                                                               \
        aclnnStatus rc_ = (call);                                                       \
        (void)ws_;                                                                      \
        CHECK(rc_ == (want) && tu_msg_has(__VA_ARGS__, NULL), "line %d: status %d want %d, '%s'", __LINE__, \
              (int)rc_, (int)(want), tu_msg());                                         \
        if (rc_ == ACLNN_SUCCESS) aclDestroyAclOpExecutor(ex_);                         \
    } while (0)
#define GWS(tok, cnt, scl, et, it, pt, ps, pi, pe) \
    aclnnMoeReRoutingGetWorkspaceSize(tok, cnt, scl, et, it, pt, ps, pi, pe, &ws_, &ex_)

static void phase1_errors(void) {
    static unsigned char buf[1 << 16];
    aclTensor *tok = tu_mk(2, 8, 4, 0, ACL_FLOAT16, buf), *cnt = tu_mk(2, 2, 3, 0, ACL_INT32, buf),
              *scl = tu_mk(1, 8, 0, 0, ACL_FLOAT, buf), *pt = tu_mk(2, 8, 4, 0, ACL_FLOAT16, buf),
              *ps = tu_mk(1, 8, 0, 0, ACL_FLOAT, buf), *pi = tu_mk(1, 8, 0, 0, ACL_INT32, buf),
              *pe = tu_mk(1, 3, 0, 0, ACL_INT32, buf);
    aclTensor *f32 = tu_mk(2, 8, 4, 0, ACL_FLOAT, buf), *pi64 = tu_mk(1, 8, 0, 0, ACL_INT64, buf),
              *pe64 = tu_mk(1, 3, 0, 0, ACL_INT64, buf), *pt9 = tu_mk(2, 9, 4, 0, ACL_FLOAT16, buf),
              *pi7 = tu_mk(1, 7, 0, 0, ACL_INT32, buf), *pe4 = tu_mk(1, 4, 0, 0, ACL_INT32, buf),
              *cnt1 = tu_mk(1, 6, 0, 0, ACL_INT32, buf), *s2 = tu_mk(2, 7, 2, 0, ACL_FLOAT, buf),
              *ps9 = tu_mk(1, 9, 0, 0, ACL_FLOAT, buf), *tok0 = tu_mk(2, 8, 0, 0, ACL_FLOAT16, buf),
              *pt0 = tu_mk(2, 8, 0, 0, ACL_FLOAT16, buf), *cnt0 = tu_mk(2, 0, 3, 0, ACL_INT32, buf),
              *ebig = tu_mk(2, 8, 16385, 0, ACL_FLOAT16, buf), *pbig = tu_mk(2, 8, 16385, 0, ACL_FLOAT16, buf),
              *e_pt = tu_mk(2, 0, 4, 0, ACL_FLOAT16, buf), *e_pi = tu_mk(1, 0, 0, 0, ACL_INT32, buf),
              *e_pe = tu_mk(1, 0, 0, 0, ACL_INT32, buf), *e_ps = tu_mk(1, 0, 0, 0, ACL_FLOAT, buf);
    const int64_t st[2] = {1, 8}, d2[2] = {8, 4};
    aclTensor *ptT = aclCreateTensor(d2, 2, ACL_FLOAT16, st, 0, ACL_FORMAT_ND, d2, 2, buf);
    P1(GWS(NULL, cnt, scl, 1, 0, pt, ps, pi, pe), ACLNN_ERR_PARAM_NULLPTR, "tokens is NULL");
    P1(GWS(tok, NULL, scl, 1, 0, pt, ps, pi, pe), ACLNN_ERR_PARAM_NULLPTR, "expertTokenNumPerRank is NULL");
    P1(GWS(tok, cnt, scl, 1, 0, pt, NULL, pi, pe), ACLNN_ERR_PARAM_NULLPTR, "permutePerTokenScalesOut is NULL");
    P1(GWS(tok, cnt, scl, 1, 0, pt, ps, pi, NULL), ACLNN_ERR_PARAM_NULLPTR, "expertTokenNumOut is NULL");
    P1(aclnnMoeReRoutingGetWorkspaceSize(tok, cnt, scl, 1, 0, pt, ps, pi, pe, NULL, &ex_), ACLNN_ERR_PARAM_NULLPTR,
       "workspaceSize");
    P1(GWS(f32, cnt, scl, 1, 0, pt, ps, pi, pe), ACLNN_ERR_PARAM_INVALID, "tokens");
    P1(GWS(tok, cnt, scl, 1, 0, pt, ps, pi64, pe), ACLNN_ERR_PARAM_INVALID, "permuteTokenIdxOut");
    P1(GWS(tok, cnt, scl, 1, 0, pt, ps, pi, pe64), ACLNN_ERR_PARAM_INVALID, "expertTokenNumOut");
    P1(GWS(tok, cnt, scl, 1, 0, ptT, ps, pi, pe), ACLNN_ERR_PARAM_INVALID, "permuteTokensOut must be contiguous");
    P1(GWS(tok, cnt, scl, 0, 0, pt, ps, pi, pe), ACLNN_ERR_INNER_TILING_ERROR, "expertTokenNumType must be 1");
    P1(GWS(tok, cnt, s2, 1, 0, pt, ps, pi, pe), ACLNN_ERR_INNER_TILING_ERROR, "perTokenScalesOptional (7, 2)");
    P1(GWS(tok, cnt, scl, 1, 2, pt, ps, pi, pe), ACLNN_ERR_INNER_TILING_ERROR, "idxType");
    P1(GWS(tok, cnt, scl, 1, 0, pt9, ps, pi, pe), ACLNN_ERR_INNER_TILING_ERROR, "permuteTokensOut shape (9, 4)");
    P1(GWS(tok, cnt, scl, 1, 0, pt, ps9, pi, pe), ACLNN_ERR_INNER_TILING_ERROR, "permutePerTokenScalesOut shape (9)");
    P1(GWS(tok, cnt, scl, 1, 0, pt, ps, pi7, pe), ACLNN_ERR_INNER_TILING_ERROR, "permuteTokenIdxOut");
    P1(GWS(tok, cnt, scl, 1, 0, pt, ps, pi, pe4), ACLNN_ERR_INNER_TILING_ERROR, "expertTokenNumOut");
    P1(GWS(tok, cnt1, scl, 1, 0, pt, ps, pi, pe), ACLNN_ERR_INNER_TILING_ERROR, "expertTokenNumPerRank");
    /* all outputs empty: success, workspace 0 */
    P1(GWS(e_pt, cnt, NULL, 1, 0, e_pt, e_ps, e_pi, e_pe), ACLNN_SUCCESS, "");
    if (A2) {
        P1(GWS(tok, cnt, scl, 1, 1, pt, ps, pi, pe), ACLNN_ERR_INNER_TILING_ERROR, "idxType must be 0");
        P1(GWS(ebig, cnt, NULL, 1, 0, pbig, ps, pi, pe), ACLNN_ERR_INNER_TILING_ERROR, "16384");
        /* A2/A3 take H = 0 and N = 0 */
        P1(GWS(tok0, cnt, scl, 1, 0, pt0, ps, pi, pe), ACLNN_SUCCESS, "");
        P1(GWS(tok, cnt0, scl, 1, 0, pt, ps, pi, pe), ACLNN_SUCCESS, "");
    } else {
        P1(GWS(tok, cnt, scl, 1, 1, pt, ps, pi, pe), ACLNN_SUCCESS, "");
        P1(GWS(ebig, cnt, NULL, 1, 0, pbig, ps, pi, pe), ACLNN_SUCCESS, "");
        P1(GWS(tok0, cnt, scl, 1, 0, pt0, ps, pi, pe), ACLNN_ERR_INNER_TILING_ERROR, "dim1 > 0");
        P1(GWS(tok, cnt0, scl, 1, 0, pt, ps, pi, pe), ACLNN_ERR_INNER_TILING_ERROR, "both dims > 0");
    }
    /* FLOAT8 tokens: Ascend 950 only, and only with FLOAT8_E8M0 scales */
    aclTensor *t8 = tu_mk(2, 8, 4, 0, ACL_FLOAT8_E4M3FN, buf), *p8 = tu_mk(2, 8, 4, 0, ACL_FLOAT8_E4M3FN, buf),
              *s8 = tu_mk(1, 8, 0, 0, ACL_FLOAT8_E8M0, buf), *ps8 = tu_mk(1, 8, 0, 0, ACL_FLOAT8_E8M0, buf);
    if (A2) {
        P1(GWS(t8, cnt, s8, 1, 0, p8, ps8, pi, pe), ACLNN_ERR_PARAM_INVALID, "tokens");
    } else {
        P1(GWS(t8, cnt, s8, 1, 0, p8, ps8, pi, pe), ACLNN_SUCCESS, "");
        P1(GWS(t8, cnt, NULL, 1, 0, p8, ps8, pi, pe), ACLNN_ERR_INNER_TILING_ERROR, "FLOAT8_E8M0");
        P1(GWS(t8, cnt, scl, 1, 0, p8, ps, pi, pe), ACLNN_ERR_PARAM_INVALID, "");
    }
    aclTensor *all[] = {tok, cnt, scl, pt, ps, pi, pe, f32, pi64, pe64, pt9, pi7, pe4, cnt1, s2, ps9, tok0, pt0,
                        cnt0, ebig, pbig, e_pt, e_pi, e_pe, e_ps, ptT, t8, p8, s8, ps8};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_destroy(all[i]);
    g_cases++;
}

/* Counts CANN would move out of bounds with: 161002, every output untouched. */
static void phase2_errors(void) {
    static const struct {
        int64_t c[4];
        int64_t A, L; /* tokens rows; scale length (0: none) */
        const char *msg;
    } K[] = {
        {{2, 2, 2, 3}, 8, 0, "more than the 8 rows tokens has"},
        {{1, -1, 2, 2}, 8, 0, "expertTokenNumPerRank[0][1] = -1 is negative"},
        {{4, 4, 0, 0}, 8, 5, "more than the 5 rows perTokenScalesOptional has"},
        {{INT64_MAX, 1, 0, 0}, 8, 0, "more than the 8 rows"},
    };
    for (size_t k = 0; k < sizeof K / sizeof K[0]; k++) {
        g_cases++;
        prob p = {ACL_FLOAT16, ACL_INT64, ACL_FLOAT, K[k].A, 3, 2, 2, K[k].L ? 1 : 0, 1, 0, (int64_t *)K[k].c, NULL, NULL};
        unsigned char tok[64 * 3 * 2], scl[64 * 4];
        fill_bytes(tok, sizeof tok);
        fill_bytes(scl, sizeof scl);
        aclTensor *tt = tu_mk(2, p.A, 3, 0, ACL_FLOAT16, tok), *tc = tu_mk(2, 2, 2, 0, ACL_INT64, (void *)K[k].c);
        aclTensor *ts = K[k].L ? tu_mk(1, K[k].L, 0, 0, ACL_FLOAT, scl) : NULL;
        outs o;
        outs_make(&o, &p);
        if (ts) { /* the scale output follows the scales' shape */
            tu_destroy(o.t_pscl);
            o.t_pscl = tu_mk(1, K[k].L, 0, 0, ACL_FLOAT, o.pscl);
        }
        aclnnStatus rc = run(&p, tt, tc, ts, 1, 0, &o);
        CHECK(rc == ACLNN_ERR_PARAM_INVALID && tu_msg_has(K[k].msg, NULL), "phase-2 case %zu: %d '%s'", k, (int)rc,
              tu_msg());
        CHECK(outs_untouched(&o), "phase-2 case %zu: an output was written", k);
        outs_free(&o);
        tu_destroy(tt), tu_destroy(tc), tu_destroy(ts);
    }
    /* 1-D scales longer than the moved rows: accepted, the rest zero-filled */
    g_cases++;
    int64_t c[4] = {1, 2, 0, 1};
    unsigned char tok[4 * 2 * 2];
    float scl[6] = {1, 2, 3, 4, 5, 6};
    fill_bytes(tok, sizeof tok);
    prob p = {ACL_FLOAT16, ACL_INT64, ACL_FLOAT, 4, 2, 2, 2, 1, 1, 0, c, tok, NULL};
    aclTensor *tt = tu_mk(2, 4, 2, 0, ACL_FLOAT16, tok), *tc = tu_mk(2, 2, 2, 0, ACL_INT64, c),
              *ts = tu_mk(1, 6, 0, 0, ACL_FLOAT, scl);
    outs o;
    outs_make(&o, &p);
    free(o.pscl);
    o.bscl = 24;
    o.pscl = tu_poisoned(o.bscl);
    tu_destroy(o.t_pscl);
    o.t_pscl = tu_mk(1, 6, 0, 0, ACL_FLOAT, o.pscl);
    aclnnStatus rc = run(&p, tt, tc, ts, 1, 0, &o);
    /* src: r0e0 row 0, r0e1 rows 1-2, r1e1 row 3; dst: e0 {0}, e1 {1, 2, 3} */
    float got[6];
    memcpy(got, o.pscl, 24);
    CHECK(rc == ACLNN_SUCCESS && got[0] == 1 && got[1] == 2 && got[2] == 3 && got[3] == 4 && got[4] == 0 &&
              got[5] == 0 && tu_guard_ok(o.pscl, 24),
          "long 1-D scales: %d, %g %g %g %g %g %g", (int)rc, got[0], got[1], got[2], got[3], got[4], got[5]);
    outs_free(&o);
    tu_destroy(tt), tu_destroy(tc), tu_destroy(ts);
}

/* A repeatable executor run twice over new data gives the new result. */
static void reuse_case(void) {
    g_cases++;
    int32_t c[2] = {1, 1};
    uint16_t tok[4] = {1, 2, 3, 4};
    prob p = {ACL_FLOAT16, ACL_INT32, ACL_FLOAT, 2, 2, 2, 1, 0, 0, 0, NULL, NULL, NULL};
    aclTensor *tt = tu_mk(2, 2, 2, 0, ACL_FLOAT16, tok), *tc = tu_mk(2, 2, 1, 0, ACL_INT32, c);
    outs o;
    outs_make(&o, &p);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    CHECK(aclnnMoeReRoutingGetWorkspaceSize(tt, tc, NULL, 1, 0, o.t_ptok, o.t_pscl, o.t_idx, o.t_enu, &ws, &ex) == 0,
          "reuse: phase 1 %s", tu_msg());
    aclSetAclOpExecutorRepeatable(ex);
    void *w = ws ? malloc(ws) : NULL;
    CHECK(aclnnMoeReRouting(w, ws, ex, NULL) == 0, "reuse: run 1");
    c[0] = 2, c[1] = 0;
    CHECK(aclnnMoeReRouting(w, ws, ex, NULL) == 0, "reuse: run 2");
    int32_t en;
    memcpy(&en, o.enu, 4);
    CHECK(en == 2, "reuse: the second run read the new counts");
    aclDestroyAclOpExecutor(ex);
    free(w);
    outs_free(&o);
    tu_destroy(tt), tu_destroy(tc);
}

/* 2-D scales (3, 2), counts [[1, 1], [1, 0]]: gather [0, 2, 1]. Ascend 950 moves
 * rows of 2; A2/A3's kernel moves element i of the flat storage per token. */
static void scale2d_case(void) {
    g_cases++;
    int32_t c[4] = {1, 1, 1, 0};
    int8_t tok[3] = {7, 8, 9};
    float scl[6] = {10, 11, 12, 13, 14, 15};
    aclTensor *tt = tu_mk(2, 3, 1, 0, ACL_INT8, tok), *tc = tu_mk(2, 2, 2, 0, ACL_INT32, c),
              *ts = tu_mk(2, 3, 2, 0, ACL_FLOAT, scl);
    prob p = {ACL_INT8, ACL_INT32, ACL_FLOAT, 3, 1, 2, 2, 2, 2, 0, NULL, NULL, NULL};
    outs o;
    outs_make(&o, &p);
    aclnnStatus rc = run(&p, tt, tc, ts, 1, 0, &o);
    float got[6];
    memcpy(got, o.pscl, 24);
    static const float W950[6] = {10, 11, 14, 15, 12, 13}, WA2[6] = {10, 12, 11, 0, 0, 0};
    CHECK(rc == ACLNN_SUCCESS && memcmp(got, A2 ? WA2 : W950, 24) == 0 && o.ptok[0] == 7 && o.ptok[1] == 9 &&
              o.ptok[2] == 8,
          "2-D scales: %d, %g %g %g %g %g %g", (int)rc, got[0], got[1], got[2], got[3], got[4], got[5]);
    outs_free(&o);
    tu_destroy(tt), tu_destroy(tc), tu_destroy(ts);
}

int main(void) {
    tu_seed("test_re_routing");
    const char *soc = getenv("MOEFR_SOC");
    A2 = soc && strcmp(soc, "ascend910b") == 0;
    hand_case(0);
    if (!A2) hand_case(1);
    phase1_errors();
    phase2_errors();
    reuse_case();
    scale2d_case();
    random_cases(300);
    printf("test_re_routing%s: %d cases, %d checks, %d failures\n", A2 ? " (A2/A3)" : "", g_cases, g_checks, g_fail);
    return g_fail != 0;
}
