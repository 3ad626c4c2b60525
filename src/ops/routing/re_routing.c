/* re_routing.c - aclnnMoeReRouting, both phases (moe/moe_re_routing in
 * ops-transformer: op_host/moe_re_routing_def.cpp for the dtype columns,
 * *_tiling_base.cpp / *_r_tiling.cpp / *_re_tiling.cpp for Ascend 950's
 * checks, *_membase_tiling.cpp for A2/A3's, op_kernel/ for the data
 * movement). Block (r, e) of c[r][e] token rows moves from its rank-major
 * offset to its expert-major offset; the index output names the source (or,
 * idxType 1, the destination) of every row; the count output sums the
 * blocks per expert. Pure data movement: bit-exact, any thread count. */
#include "aclnnop/aclnn_moe_re_routing.h"
#include "ops/opdef.h"
#include "ops/routing/routing.h"

#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY

static const char OP[] = "aclnnMoeReRouting";
enum { RR_TOK, RR_CNT, RR_SCL, RR_PTOK, RR_PSCL, RR_IDX, RR_ENUM, RR_NT };
static const char *const NAMES[RR_NT] = {"tokens",           "expertTokenNumPerRank",    "perTokenScalesOptional",
                                         "permuteTokensOut", "permutePerTokenScalesOut", "permuteTokenIdxOut",
                                         "expertTokenNumOut"};
#define OUTF (MF_T_REQUIRED | MF_T_CONTIG)
static const unsigned FLAGS[RR_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, OUTF, OUTF, OUTF, OUTF};
#undef OUTF
#define I32 ACL_INT32
#define I64 ACL_INT64
#define COL(T, C, S) {T, C, S, T, S, I32, C}
/* moe_re_routing_def.cpp: A2/A3 (ascend910b, ascend910_93) in its order;
 * Ascend 950 (ascend910_95) adds the FLOAT8 tokens with FLOAT8_E8M0 scales. */
#define A2_COLS                                                                                                  \
    COL(ACL_FLOAT16, I32, ACL_FLOAT), COL(ACL_BF16, I32, ACL_FLOAT), COL(ACL_INT8, I32, ACL_FLOAT),              \
        COL(ACL_FLOAT16, I64, ACL_FLOAT), COL(ACL_BF16, I64, ACL_FLOAT), COL(ACL_INT8, I64, ACL_FLOAT)
static const mf_dtcol COLS_A2[] = {A2_COLS};
static const mf_dtcol COLS_950[] = {A2_COLS,
                                    COL(ACL_FLOAT8_E5M2, I32, ACL_FLOAT8_E8M0),
                                    COL(ACL_FLOAT8_E5M2, I64, ACL_FLOAT8_E8M0),
                                    COL(ACL_FLOAT8_E4M3FN, I32, ACL_FLOAT8_E8M0),
                                    COL(ACL_FLOAT8_E4M3FN, I64, ACL_FLOAT8_E8M0)};
#undef COL
#undef A2_COLS
static const mf_op_def DEF = {OP, MF_OP_RE_ROUTING, 3, 4, NAMES, FLAGS, COLS_950, 10, COLS_A2, 6};

/* A2/A3 token length bound (moe_re_routing_membase_tiling.cpp). */
#define RR_MAX_H_A2 16384
/* Below this many bytes moved, one thread copies. */
#define RR_SERIAL_BYTES (256 * 1024)

typedef struct rr_plan {
    bool empty;
    bool scales;  /* perTokenScalesOptional given and moved */
    bool flat;    /* A2/A3 with 2-D scales: the kernel moves element i of the flat view per token */
    int idx_type; /* 0 gather, 1 scatter */
    int64_t A, H, N, E;
    int64_t srows, sw; /* scale rows and elements per row (flat: numel and 1) */
    uint64_t ws_src, ws_blk, ws_bytes;
} rr_plan;

/* The scale view's shape as CANN's base tiling reads it: rank 1 is (L) with
 * one element per token, rank 2 (rows, S); any other rank reads as (0, 0). */
static void scale_shape(const aclTensor *s, int64_t *rows, int64_t *w) {
    if (s->ndim == 1) *rows = s->dims[0], *w = 1;
    else if (s->ndim == 2) *rows = s->dims[0], *w = s->dims[1];
    else *rows = 0, *w = 0;
}

static bool same_shape(const aclTensor *a, const aclTensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

/* moe_re_routing_tiling_base.cpp CheckOutputShape (Ascend 950; moefr applies
 * it on A2/A3 too, where nothing checks the outputs CANN writes). */
static aclnnStatus check_outputs(const aclTensor *const *t, int64_t A, int64_t E) {
    char b1[160], b2[160];
    if (!same_shape(t[RR_PTOK], t[RR_TOK]))
        return mf_fail(TILING, "%s: permuteTokensOut shape %s must equal tokens shape %s", OP,
                       mf_shape_str(t[RR_PTOK], b1, sizeof b1), mf_shape_str(t[RR_TOK], b2, sizeof b2));
    if (t[RR_SCL] != NULL && !same_shape(t[RR_PSCL], t[RR_SCL]))
        return mf_fail(TILING, "%s: permutePerTokenScalesOut shape %s must equal perTokenScalesOptional shape %s", OP,
                       mf_shape_str(t[RR_PSCL], b1, sizeof b1), mf_shape_str(t[RR_SCL], b2, sizeof b2));
    TRY(mf_check_rank(OP, TILING, "permuteTokenIdxOut", t[RR_IDX], 1));
    TRY(mf_check_dim(OP, TILING, "permuteTokenIdxOut", t[RR_IDX], 0, A));
    TRY(mf_check_rank(OP, TILING, "expertTokenNumOut", t[RR_ENUM], 1));
    TRY(mf_check_dim(OP, TILING, "expertTokenNumOut", t[RR_ENUM], 0, E));
    return ACLNN_SUCCESS;
}

/* The tiling checks in CANN's order. On every product the base template's
 * GetShapeAttrsInfo runs first (the registry tries it before A2/A3's
 * membase template): 2-D scales' rows, then expertTokenNumType. */
static aclnnStatus check_shapes(const aclTensor *const *t, int64_t etnType, int64_t idxType, bool a2, rr_plan *p) {
    const aclTensor *tok = t[RR_TOK], *cnt = t[RR_CNT], *scl = t[RR_SCL];
    char buf[160];
    /* a non-2-D tokens or counts reads as (0, 0) in CANN's tiling */
    const int64_t A = tok->ndim == 2 ? tok->dims[0] : 0, H = tok->ndim == 2 ? tok->dims[1] : 0;
    const int64_t N = cnt->ndim == 2 ? cnt->dims[0] : 0, E = cnt->ndim == 2 ? cnt->dims[1] : 0;
    if (scl != NULL && scl->ndim != 1) {
        int64_t rows, w;
        scale_shape(scl, &rows, &w);
        if (rows != A)
            return mf_fail(TILING, "%s: perTokenScalesOptional %s must be 1-D or 2-D with dim0 = tokens dim0 (%lld)",
                           OP, mf_shape_str(scl, buf, sizeof buf), (long long)A);
    }
    if (etnType != 1)
        return mf_fail(TILING, "%s: expertTokenNumType must be 1 (count; CANN supports only 1), got %lld", OP,
                       (long long)etnType);
    if (a2) {
        /* moe_re_routing_membase_tiling.cpp GetShapeAttrsInfo */
        if (H > RR_MAX_H_A2)
            return mf_fail(TILING, "%s: tokens dim1 (%lld) must be <= %d (MOEFR_SOC=ascend910b)", OP, (long long)H,
                           RR_MAX_H_A2);
        if (idxType != 0)
            return mf_fail(TILING, "%s: idxType must be 0 (MOEFR_SOC=ascend910b), got %lld", OP, (long long)idxType);
        /* moefr: the membase tiling logs a non-2-D shape and goes on with (0, 0) */
        TRY(mf_check_rank(OP, TILING, "tokens", tok, 2));
        TRY(mf_check_rank(OP, TILING, "expertTokenNumPerRank", cnt, 2));
    } else {
        /* moe_re_routing_tiling_base.cpp CheckParam: CheckDtypeAndAttr, the sizes, CheckOutputShape */
        const bool fp8 = tok->dtype == ACL_FLOAT8_E5M2 || tok->dtype == ACL_FLOAT8_E4M3FN;
        if (fp8 && (scl == NULL || scl->dtype != ACL_FLOAT8_E8M0))
            return mf_fail(TILING, "%s: FLOAT8 tokens need FLOAT8_E8M0 perTokenScalesOptional", OP);
        if (idxType != 0 && idxType != 1)
            return mf_fail(TILING, "%s: idxType must be 0 or 1, got %lld", OP, (long long)idxType);
        if (H <= 0)
            return mf_fail(TILING, "%s: tokens must be 2-D with dim1 > 0, got %s", OP,
                           mf_shape_str(tok, buf, sizeof buf));
        if (N <= 0 || E <= 0)
            return mf_fail(TILING, "%s: expertTokenNumPerRank must be 2-D with both dims > 0, got %s", OP,
                           mf_shape_str(cnt, buf, sizeof buf));
    }
    TRY(check_outputs(t, A, E));
    /* moefr: the index output is int32 (CANN's CreateVecIndex counts in int32) */
    if (A > INT32_MAX)
        return mf_fail(TILING, "%s: tokens has %lld rows; the int32 index output holds at most %d", OP, (long long)A,
                       INT32_MAX);
    p->A = A, p->H = H, p->N = N, p->E = E;
    p->idx_type = (int)idxType;
    if (scl != NULL) {
        p->scales = true;
        scale_shape(scl, &p->srows, &p->sw);
        if (a2 && scl->ndim == 2) { /* membase kernel: one element per token of the flat storage */
            p->flat = true;
            p->srows = scl->numel;
            p->sw = 1;
        }
    }
    return ACLNN_SUCCESS;
}

static aclnnStatus rr_run(const void *plan, const aclTensor *const *t, void *workspace);

aclnnStatus aclnnMoeReRoutingGetWorkspaceSize(const aclTensor *tokens, const aclTensor *expertTokenNumPerRank,
                                              const aclTensor *perTokenScalesOptional, int64_t expertTokenNumType,
                                              int64_t idxType, const aclTensor *permuteTokensOut,
                                              const aclTensor *permutePerTokenScalesOut,
                                              const aclTensor *permuteTokenIdxOut,
                                              const aclTensor *expertTokenNumOut, uint64_t *workspaceSize,
                                              aclOpExecutor **executor) {
    const aclTensor *t[RR_NT] = {tokens,           expertTokenNumPerRank,    perTokenScalesOptional,
                                 permuteTokensOut, permutePerTokenScalesOut, permuteTokenIdxOut,
                                 expertTokenNumOut};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    rr_plan pl;
    memset(&pl, 0, sizeof pl);
    /* without scales the kernel never touches permutePerTokenScalesOut */
    const unsigned unused = perTokenScalesOptional == NULL ? 1u << RR_PSCL : 0u;
    if (mf_op_outputs_empty(&DEF, t)) { /* CANN's engine: nothing to do, no tiling */
        pl.empty = true;
        return mf_op_publish(&DEF, t, unused, &pl, sizeof pl, rr_run, 0, workspaceSize, executor);
    }
    TRY(check_shapes(t, expertTokenNumType, idxType, mf_soc_strict(), &pl));
    /* workspace: the rank-major source offset of every block, then the
     * expert-major (dst, src) pairs */
    int64_t nb;
    if (!mf_mul_ok(pl.N, pl.E, &nb) || nb > (INT64_MAX >> 6))
        return mf_fail(TILING, "%s: expertTokenNumPerRank has too many elements", OP);
    uint64_t used = 0;
    pl.ws_src = mf_carve(&used, (uint64_t)nb * 8);
    pl.ws_blk = mf_carve(&used, (uint64_t)nb * 16);
    pl.ws_bytes = used;
    return mf_op_publish(&DEF, t, unused, &pl, sizeof pl, rr_run, mf_workspace_with_slack(pl.ws_bytes), workspaceSize,
                         executor);
}

/* ---- phase 2 ---- */

typedef struct rr_blk {
    int64_t dst, src; /* first row of the block in the output and in tokens */
} rr_blk;

typedef struct rr_ctx {
    const rr_plan *p;
    const mf_ukernels *uk;
    const rr_blk *blk;
    int64_t nb, S;
    mf_rows tok;   /* tokens (any strides) */
    char *ptok;    /* permuteTokensOut, contiguous */
    int32_t *idx;  /* permuteTokenIdxOut */
    mf_small scl;  /* perTokenScalesOptional (elements of ses bytes) */
    int64_t scols; /* flat mode: the 2-D scale view's dim1 */
    char *pscl;    /* permutePerTokenScalesOut, contiguous */
    size_t es, ses;
    bool tok_runs; /* tokens rows one after another: a block is one copy */
    int nt;
} rr_ctx;

/* Address of scale element j of token row r. */
static inline const char *scale_at(const rr_ctx *c, int64_t r, int64_t j) {
    if (c->p->flat) return mf_small_at(&c->scl, r / c->scols, r % c->scols);
    return mf_small_at(&c->scl, r, j);
}

/* Moves `n` rows from source row s to destination row d. */
static void move_rows(const rr_ctx *c, int64_t d, int64_t s, int64_t n) {
    const int64_t H = c->p->H, rb = H * (int64_t)c->es;
    if (rb > 0) {
        if (c->tok_runs) {
            c->uk->copy(c->ptok + d * rb, mf_row(&c->tok, s), (size_t)(n * rb), c->nt);
        } else if (mf_rows_dense(&c->tok, H, c->es)) {
            for (int64_t i = 0; i < n; i++) c->uk->copy(c->ptok + (d + i) * rb, mf_row(&c->tok, s + i), (size_t)rb, c->nt);
        } else {
            for (int64_t i = 0; i < n; i++) {
                const char *in = mf_row(&c->tok, s + i);
                char *out = c->ptok + (d + i) * rb;
                for (int64_t h = 0; h < H; h++) memcpy(out + h * (int64_t)c->es, in + h * c->tok.s_col, c->es);
            }
        }
    }
    if (c->p->scales) {
        const int64_t sw = c->p->sw;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < sw; j++)
                memcpy(c->pscl + ((d + i) * sw + j) * (int64_t)c->ses, scale_at(c, s + i, j), c->ses);
    }
    if (c->p->idx_type == 0)
        for (int64_t i = 0; i < n; i++) c->idx[d + i] = (int32_t)(s + i);
    else
        for (int64_t i = 0; i < n; i++) c->idx[s + i] = (int32_t)(d + i);
}

/* Destination rows [i0, i1) of [0, S): the block holding i0 by binary
 * search (dst is ascending; the last block starting at or before i0 holds
 * it, as empty blocks share the next one's start), then block by block. */
static void rr_range(void *vctx, int64_t i0, int64_t i1) {
    const rr_ctx *c = vctx;
    int64_t lo = 0, hi = c->nb - 1;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (c->blk[mid].dst <= i0) lo = mid;
        else hi = mid - 1;
    }
    for (int64_t b = lo, i = i0; i < i1; b++) {
        const int64_t end = b + 1 < c->nb ? c->blk[b + 1].dst : c->S;
        if (end <= i) continue;
        const int64_t n = (end < i1 ? end : i1) - i;
        move_rows(c, i, c->blk[b].src + (i - c->blk[b].dst), n);
        i += n;
    }
    if (c->nt) c->uk->fence();
}

static void store_count(void *out, int dtype, int64_t e, int64_t v) {
    if (dtype == ACL_INT64) {
        memcpy((char *)out + e * 8, &v, 8);
    } else {
        const int32_t x = (int32_t)v;
        memcpy((char *)out + e * 4, &x, 4);
    }
}

static aclnnStatus rr_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const rr_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OP));
    const int64_t N = p->N, E = p->E, A = p->A;
    char *ws = mf_align64(workspace);
    int64_t *src = (int64_t *)(ws + p->ws_src);
    rr_blk *blk = (rr_blk *)(ws + p->ws_blk);
    const mf_small cnt = mf_small_of(t[RR_CNT]);
    /* every count checked before anything is written: CANN would read and
     * write past tokens (and the outputs) otherwise */
    const int64_t cap = p->scales && p->srows < A ? p->srows : A;
    int64_t S = 0;
    for (int64_t r = 0; r < N; r++)
        for (int64_t e = 0; e < E; e++) {
            const int64_t v = mf_small_index(&cnt, r, e);
            if (v < 0)
                return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: expertTokenNumPerRank[%lld][%lld] = %lld is negative", OP,
                               (long long)r, (long long)e, (long long)v);
            if (v > cap - S)
                return mf_fail(ACLNN_ERR_PARAM_INVALID,
                               "%s: expertTokenNumPerRank adds up to more than the %lld rows %s has (past it at "
                               "[%lld][%lld] = %lld, after %lld rows); CANN would read out of bounds",
                               OP, (long long)cap, cap < A ? "perTokenScalesOptional" : "tokens", (long long)r,
                               (long long)e, (long long)v, (long long)S);
            src[r * E + e] = S;
            S += v;
        }
    /* expert-major destinations, and the per-expert totals */
    void *enu = mf_tensor_base(t[RR_ENUM]);
    const int cdt = t[RR_ENUM]->dtype;
    int64_t d = 0, nb = 0;
    for (int64_t e = 0; e < E; e++) {
        const int64_t d0 = d;
        for (int64_t r = 0; r < N; r++) {
            blk[nb].dst = d;
            blk[nb].src = src[r * E + e];
            nb++;
            d += mf_small_index(&cnt, r, e);
        }
        store_count(enu, cdt, e, d - d0);
    }
    rr_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.uk = mf_kernels();
    c.blk = blk;
    c.nb = nb;
    c.S = S;
    c.es = mf_dtype_size(t[RR_TOK]->dtype);
    c.ptok = mf_tensor_base(t[RR_PTOK]);
    c.idx = (int32_t *)mf_tensor_base(t[RR_IDX]);
    if (p->H > 0 && A > 0) {
        c.tok = mf_rows_of(t[RR_TOK]);
        c.tok_runs = mf_rows_dense(&c.tok, p->H, c.es) && c.tok.s_row == p->H * (int64_t)c.es;
    }
    if (p->scales) {
        c.scl = mf_small_of(t[RR_SCL]);
        c.ses = mf_dtype_size(t[RR_SCL]->dtype);
        c.pscl = mf_tensor_base(t[RR_PSCL]);
        if (p->flat) c.scols = t[RR_SCL]->dims[1];
    }
    const int64_t row_bytes = p->H * (int64_t)c.es + p->sw * (int64_t)c.ses + 4;
    c.nt = S * p->H * (int64_t)c.es > mf_nt_threshold();
    if (S > 0) mf_parallel_for(S, rr_range, &c, RR_SERIAL_BYTES / row_bytes + 1);
    /* the rows the counts do not reach (CANN leaves them unwritten): zeros */
    if (S < A) {
        if (p->H > 0) memset(c.ptok + S * p->H * (int64_t)c.es, 0, (size_t)((A - S) * p->H * (int64_t)c.es));
        memset(c.idx + S, 0, (size_t)(A - S) * 4);
    }
    if (p->scales && S < p->srows && p->sw > 0)
        memset(c.pscl + S * p->sw * (int64_t)c.ses, 0, (size_t)((p->srows - S) * p->sw * (int64_t)c.ses));
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeReRouting(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_RE_ROUTING, OP, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"expertTokenNumType", MF_ATTR_INT64, 0, 1}, {"idxType", MF_ATTR_INT64, 0, 1}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeReRoutingGetWorkspaceSize(t[0], t[1], t[2], a[0].i, a[1].i, t[3], t[4], t[5], t[6], ws, e);
}
const mf_op_entry mf_entry_re_routing = {&DEF, ATTRS, 2, gws_thunk, aclnnMoeReRouting};
