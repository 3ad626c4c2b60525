/* token_permute_ep.c - aclnnMoeTokenPermuteWithEp and
 * aclnnMoeTokenPermuteWithEpGrad, both phases: TokenPermute(Grad) with an
 * expert-parallel window of the sorted rows (rangeOptional [start, end)).
 * CANN ships both for A2/A3 only (moe_token_permute_with_ep*_def.cpp); moefr
 * applies their tables and tiling checks on every MOEFR_SOC setting
 * (docs/CANN_COMPAT.md). Without a range both fall back to
 * aclnnMoeTokenPermute(Grad), as CANN's docs say. Phase 2 is the routing
 * core of routing.c: the stable sort and row gather (forward), the k-order
 * fp32 accumulation (backward). */
#include "aclnnop/aclnn_moe_token_permute_with_ep.h"
#include "aclnnop/aclnn_moe_token_permute_with_ep_grad.h"
#include "ops/opdef.h"
#include "ops/routing/routing.h"

#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY
#define I32 ACL_INT32
#define I64 ACL_INT64
/* |start| and |end| beyond this name no row any tensor can have: clamping
 * them keeps d - start in int64 without changing what is kept or refused. */
#define EP_FAR ((int64_t)1 << 40)

static int64_t clamp_far(int64_t v) { return v < -EP_FAR ? -EP_FAR : v > EP_FAR ? EP_FAR : v; }

aclnnStatus mf_ep_range(const char *op, const aclIntArray *range, bool *given, int64_t *start, int64_t *end) {
    *given = false;
    *start = *end = 0;
    if (range == NULL) return ACLNN_SUCCESS;
    uint64_t n = 0;
    aclnnStatus rc = aclGetIntArraySize(range, &n);
    if (rc != ACLNN_SUCCESS)
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: rangeOptional (%p) is not a live aclIntArray", op,
                       (const void *)range);
    if (n == 0) return ACLNN_SUCCESS;
    if (n != 2)
        return mf_fail(TILING, "%s: rangeOptional must hold 2 values [start, end), got %llu", op,
                       (unsigned long long)n);
    const mf_array *a = (const mf_array *)(const void *)range;
    memcpy(start, a->values, 8);
    memcpy(end, (const char *)a->values + 8, 8);
    *given = true;
    return ACLNN_SUCCESS;
}

/* ---- aclnnMoeTokenPermuteWithEp ---- */

static const char OP[] = "aclnnMoeTokenPermuteWithEp";
enum { P_TOK, P_IND, P_PROBS, P_OUT, P_SORTED, P_PPROBS, P_NT };
static const char *const NAMES[P_NT] = {"tokens",           "indices",          "probsOptional",
                                        "permuteTokensOut", "sortedIndicesOut", "permuteProbsOut"};
static const unsigned FLAGS[P_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, MF_T_REQUIRED | MF_T_CONTIG,
                                     MF_T_REQUIRED | MF_T_CONTIG, MF_T_CONTIG};
/* moe_token_permute_with_ep_def.cpp: tokens = probs = both float outputs. */
#define COL(T, I) {T, I, T, T, I32, T}
static const mf_dtcol COLS[] = {COL(ACL_BF16, I64),    COL(ACL_BF16, I32),  COL(ACL_FLOAT16, I64),
                                COL(ACL_FLOAT16, I32), COL(ACL_FLOAT, I64), COL(ACL_FLOAT, I32)};
#undef COL
static const mf_op_def DEF = {OP, MF_OP_TOKEN_PERMUTE_WITH_EP, 3, 3, NAMES, FLAGS, COLS, 6, COLS, 6};

typedef struct tpe_plan {
    mf_route_plan r; /* r.lo, r.A: the sorted positions gathered */
    int64_t out_rows; /* permuteTokensOut rows: r.A gathered, the rest +0.0 */
    bool probs;       /* permuteProbsOut is written */
    bool pack;        /* tokens' rows are not one stride apart: packed into the workspace */
} tpe_plan;

/* moe_token_permute_with_ep_tiling.cpp: CheckAndGetAttrsInfo, CheckInputShape,
 * GetShapeAttrsInfo, CheckOutputShape, in that order. Without a range, the
 * aclnnMoeTokenPermute rules (A2/A3) with probs ignored. */
static aclnnStatus check_shapes(const aclTensor *const *t, bool ranged, int64_t start, int64_t end, int64_t numOut,
                                bool padded, tpe_plan *p) {
    const aclTensor *tok = t[P_TOK], *ind = t[P_IND], *pr = ranged ? t[P_PROBS] : NULL, *pt = t[P_OUT],
                    *si = t[P_SORTED], *pp = t[P_PPROBS];
    char buf[160];
    if (padded) return mf_fail(TILING, "%s: paddedMode must be false (CANN supports only false)", OP);
    if (ind->ndim != 1 && ind->ndim != 2)
        return mf_fail(TILING, "%s: indices must be 1-D or 2-D, got %d-D %s", OP, (int)ind->ndim,
                       mf_shape_str(ind, buf, sizeof buf));
    /* moefr: CANN reads tokens dim0 without looking at the rank */
    if (tok->ndim < 1) return mf_fail(TILING, "%s: tokens must have at least 1 dim, got 0-D", OP);
    if (tok->dims[0] != ind->dims[0])
        return mf_fail(TILING, "%s: tokens dim0 (%lld) and indices dim0 (%lld) must be equal", OP,
                       (long long)tok->dims[0], (long long)ind->dims[0]);
    if (pr) {
        if (pr->ndim != 1 && pr->ndim != 2)
            return mf_fail(TILING, "%s: probsOptional must be 1-D or 2-D, got %d-D %s", OP, (int)pr->ndim,
                           mf_shape_str(pr, buf, sizeof buf));
        if (pr->ndim != ind->ndim)
            return mf_fail(TILING, "%s: probsOptional (%d-D) and indices (%d-D) must have the same rank", OP,
                           (int)pr->ndim, (int)ind->ndim);
        if (pr->dims[0] != tok->dims[0])
            return mf_fail(TILING, "%s: probsOptional dim0 (%lld) and tokens dim0 (%lld) must be equal", OP,
                           (long long)pr->dims[0], (long long)tok->dims[0]);
        if (pr->ndim == 2 && pr->dims[1] != ind->dims[1])
            return mf_fail(TILING, "%s: probsOptional dim1 (%lld) and indices dim1 (%lld) must be equal", OP,
                           (long long)pr->dims[1], (long long)ind->dims[1]);
    }
    int64_t cols;
    if (!mf_dims_prod(tok->dims, 1, tok->ndim, &cols))
        return mf_fail(TILING, "%s: tokens' dims after the first multiply past int64", OP);
    const int64_t N = ind->dims[0], K = ind->ndim == 1 ? 1 : ind->dims[1];
    if (K > MF_TP_MAX_TOPK || (ranged && K < 1))
        return mf_fail(TILING, "%s: indices dim1 (topK %lld) must be in [1, %d]", OP, (long long)K, MF_TP_MAX_TOPK);
    int64_t T;
    if (!mf_mul_ok(N, K, &T) || T >= MF_TP_SORT_LIMIT)
        return mf_fail(TILING, "%s: indices has %lld*%lld elements; it must have fewer than %d", OP, (long long)N,
                       (long long)K, MF_TP_SORT_LIMIT);
    int64_t A, lo = 0, G;
    if (ranged) {
        if (start < 0 || start > T || end < 0 || end > T)
            return mf_fail(TILING, "%s: rangeOptional [%lld, %lld) must lie in [0, %lld] (indices' element count)", OP,
                           (long long)start, (long long)end, (long long)T);
        A = end - start;
        A = A <= 0 ? A + T : A;
        A = A < T ? A : T;
        A = A > 0 ? A : 0;
        /* the kernel (moe_index_copy.h): all T rows at rank i when A == T,
         * else rank i in [start, start + A) to row i - start */
        lo = A == T ? 0 : start;
        G = T - lo < A ? T - lo : A;
    } else { /* aclnnMoeTokenPermute's numOutTokens */
        A = numOut <= 0 ? numOut + T : numOut;
        A = A < T ? A : T;
        A = A > 0 ? A : 0;
        G = A;
    }
    if (pt->ndim < 2)
        return mf_fail(TILING, "%s: permuteTokensOut must have at least 2 dims, got %d-D", OP, (int)pt->ndim);
    int64_t pcols;
    if (!mf_dims_prod(pt->dims, 1, pt->ndim, &pcols))
        return mf_fail(TILING, "%s: permuteTokensOut's dims after the first multiply past int64", OP);
    TRY(mf_check_rank(OP, TILING, "sortedIndicesOut", si, 1));
    TRY(mf_check_dim(OP, TILING, "sortedIndicesOut", si, 0, T));
    if (pcols != cols)
        return mf_fail(TILING, "%s: permuteTokensOut holds rows of %lld elements, tokens rows of %lld", OP,
                       (long long)pcols, (long long)cols);
    TRY(mf_check_dim(OP, TILING, "permuteTokensOut", pt, 0, A));
    if (pr) {
        if (pp == NULL)
            return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: permuteProbsOut is NULL while probsOptional is given", OP);
        TRY(mf_check_rank(OP, TILING, "permuteProbsOut", pp, 1));
        TRY(mf_check_dim(OP, TILING, "permuteProbsOut", pp, 0, A));
    }
    p->r.N = N; p->r.K = K; p->r.T = T; p->r.H = cols; p->r.A = G; p->r.lo = lo;
    p->r.key_hi = MF_SORT_KEY_MAX;
    p->out_rows = A;
    p->probs = pr != NULL;
    return ACLNN_SUCCESS;
}

static aclnnStatus tpe_run(const void *plan, const aclTensor *const *t, void *workspace);

aclnnStatus aclnnMoeTokenPermuteWithEpGetWorkspaceSize(const aclTensor *tokens, const aclTensor *indices,
                                                       const aclTensor *probsOptional,
                                                       const aclIntArray *rangeOptional, int64_t numOutTokens,
                                                       bool paddedMode, const aclTensor *permuteTokensOut,
                                                       const aclTensor *sortedIndicesOut,
                                                       const aclTensor *permuteProbsOut, uint64_t *workspaceSize,
                                                       aclOpExecutor **executor) {
    const aclTensor *t[P_NT] = {tokens, indices, probsOptional, permuteTokensOut, sortedIndicesOut, permuteProbsOut};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    bool ranged;
    int64_t start, end;
    TRY(mf_ep_range(OP, rangeOptional, &ranged, &start, &end));
    tpe_plan pl;
    memset(&pl, 0, sizeof pl);
    /* without a range probs and permuteProbsOut are ignored (CANN's docs) */
    const unsigned unused = ranged && probsOptional ? 0 : 1u << P_PROBS | 1u << P_PPROBS;
    if (mf_op_outputs_empty(&DEF, t)) { /* CANN's engine: nothing to do, no tiling */
        pl.r.empty = true;
        return mf_op_publish(&DEF, t, unused, &pl, sizeof pl, tpe_run, 0, workspaceSize, executor);
    }
    TRY(check_shapes(t, ranged, start, end, numOutTokens, paddedMode, &pl));
    TRY(mf_tp_layout(OP, tokens, &pl.r, &pl.pack));
    return mf_op_publish(&DEF, t, unused, &pl, sizeof pl, tpe_run, mf_workspace_with_slack(pl.r.ws_bytes),
                         workspaceSize, executor);
}

static aclnnStatus tpe_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const tpe_plan *p = plan;
    if (p->r.empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OP));
    char *ws = mf_align64(workspace);
    uint32_t *key = (uint32_t *)(ws + p->r.ws_key);
    int64_t max_key = 0;
    /* every id is checked before anything is written */
    TRY(mf_tp_read_keys_a2(OP, t[P_IND], p->r.N, p->r.K, key, &max_key));
    const mf_rows xv = mf_tp_token_rows(t[P_TOK], &p->r, p->pack, ws);
    char *out = mf_tensor_base(t[P_OUT]);
    mf_route_sorted(&p->r, max_key, NULL, &xv, out, (int32_t *)mf_tensor_base(t[P_SORTED]), NULL, NULL, ws);
    /* rows past the sorted rows (start > end wraps past T): the NPU leaves them; moefr writes +0.0 */
    const int64_t row_bytes = p->r.H * (int64_t)p->r.es;
    if (p->out_rows > p->r.A && row_bytes > 0)
        memset(out + p->r.A * row_bytes, 0, (size_t)((p->out_rows - p->r.A) * row_bytes));
    if (p->probs) {
        const int32_t *perm = (const int32_t *)(ws + p->r.ws_perm);
        const mf_small pv = mf_small_of(t[P_PROBS]);
        char *po = mf_tensor_base(t[P_PPROBS]);
        const int64_t K = p->r.K, es = (int64_t)p->r.es;
        for (int64_t i = 0; i < p->r.A; i++) {
            const int64_t j = perm[p->r.lo + i];
            memcpy(po + i * es, mf_small_at(&pv, j / K, j % K), (size_t)es);
        }
        if (p->out_rows > p->r.A) memset(po + p->r.A * es, 0, (size_t)((p->out_rows - p->r.A) * es));
    }
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeTokenPermuteWithEp(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                       aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_PERMUTE_WITH_EP, OP, workspace, workspaceSize, stream);
}

/* ---- aclnnMoeTokenPermuteWithEpGrad ---- */

static const char OPG[] = "aclnnMoeTokenPermuteWithEpGrad";
enum { PG_G, PG_IDX, PG_PG, PG_TG, PG_PGO, PG_NT };
static const char *const GNAMES[PG_NT] = {"permutedTokensOutputGrad", "sortedIndices",
                                          "permutedProbsOutputGradOptional", "tokenGradOut", "probsGradOut"};
static const unsigned GFLAGS[PG_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, MF_T_REQUIRED | MF_T_CONTIG, MF_T_CONTIG};
/* moe_token_permute_with_ep_grad_def.cpp: one float dtype throughout. */
static const mf_dtcol GCOLS[] = {{ACL_BF16, I32, ACL_BF16, ACL_BF16, ACL_BF16},
                                 {ACL_FLOAT16, I32, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16},
                                 {ACL_FLOAT, I32, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT}};
static const mf_op_def GDEF = {OPG, MF_OP_TOKEN_PERMUTE_WITH_EP_GRAD, 3, 2, GNAMES, GFLAGS, GCOLS, 3, GCOLS, 3};

typedef struct tpeg_plan {
    mf_route_grad_plan g;
    bool probs;     /* probsGradOut is written */
    int64_t pg_len; /* permutedProbsOutputGradOptional's elements */
} tpeg_plan;

/* moe_token_permute_with_ep_grad_tiling.cpp (numTopk >= 1, the grad 2-D,
 * its probs 1-D), then what moefr needs for the reads and writes CANN does
 * not check (docs/CANN_COMPAT.md). */
static aclnnStatus check_grad(const aclTensor *const *t, bool ranged, int64_t topK, bool padded, tpeg_plan *p) {
    const aclTensor *g = t[PG_G], *idx = t[PG_IDX], *pg = ranged ? t[PG_PG] : NULL, *tg = t[PG_TG],
                    *pgo = t[PG_PGO];
    if (!ranged && topK == -1) topK = 1; /* aclnnMoeTokenPermuteGrad's -1 */
    if (topK < 1) return mf_fail(TILING, "%s: numTopk must be at least 1, got %lld", OPG, (long long)topK);
    TRY(mf_check_rank(OPG, TILING, "permutedTokensOutputGrad", g, 2));
    if (pg) TRY(mf_check_rank(OPG, TILING, "permutedProbsOutputGradOptional", pg, 1));
    /* moefr's own */
    if (padded) return mf_fail(TILING, "%s: paddedMode must be false (CANN supports only false)", OPG);
    if (!ranged && topK > MF_TP_MAX_TOPK)
        return mf_fail(TILING, "%s: numTopk must be in [1, %d], got %lld", OPG, MF_TP_MAX_TOPK, (long long)topK);
    TRY(mf_check_rank(OPG, TILING, "sortedIndices", idx, 1));
    const int64_t R = idx->dims[0] / topK;
    TRY(mf_check_rank(OPG, TILING, "tokenGradOut", tg, 2));
    TRY(mf_check_dim(OPG, TILING, "tokenGradOut", tg, 0, R));
    TRY(mf_check_dim(OPG, TILING, "tokenGradOut", tg, 1, g->dims[1]));
    if (pg) {
        if (pgo == NULL)
            return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: probsGradOut is NULL while %s is given", OPG,
                           "permutedProbsOutputGradOptional");
        TRY(mf_check_rank(OPG, TILING, "probsGradOut", pgo, 2));
        TRY(mf_check_dim(OPG, TILING, "probsGradOut", pgo, 0, R));
        TRY(mf_check_dim(OPG, TILING, "probsGradOut", pgo, 1, topK));
        p->pg_len = pg->dims[0];
    }
    p->g.mode = 0;
    p->g.N = R;
    p->g.K = topK;
    p->g.H = g->dims[1];
    p->g.D0 = g->dims[0];
    p->g.keep_below = g->dims[0]; /* without a range: TokenPermuteGrad's rule */
    p->probs = pg != NULL;
    return ACLNN_SUCCESS;
}

static aclnnStatus tpeg_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const tpeg_plan *p = plan;
    if (p->g.empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OPG));
    const int64_t R = p->g.N, K = p->g.K, lo = p->g.lo, hi = p->g.keep_below;
    const aclTensor *it = t[PG_IDX];
    const char *ib = mf_tensor_base(it);
    if (p->probs) { /* the values CANN would read permutedProbsOutputGrad out of bounds with */
        for (int64_t i = 0; i < R * K; i++) {
            int32_t v;
            memcpy(&v, ib + i * it->strides[0] * 4, 4);
            if (v >= lo && v < hi && v - lo >= p->pg_len)
                return mf_fail(ACLNN_ERR_PARAM_INVALID,
                               "%s: sortedIndices[%lld] = %d is in the range [%lld, %lld) but names element %lld of "
                               "permutedProbsOutputGradOptional's %lld",
                               OPG, (long long)i, (int)v, (long long)lo, (long long)hi, (long long)(v - lo),
                               (long long)p->pg_len);
        }
    }
    TRY(mf_route_grad_run(OPG, "sortedIndices", &p->g, t[PG_G], it, mf_tensor_base(t[PG_TG]), workspace));
    if (p->probs) { /* a pure copy: probsGrad[r][k] = pg[d - start] in the range, else 0 */
        const aclTensor *pg = t[PG_PG];
        const char *pb = mf_tensor_base(pg);
        const int64_t es = (int64_t)mf_dtype_size(pg->dtype), ps = pg->strides[0] * es;
        char *po = mf_tensor_base(t[PG_PGO]);
        for (int64_t i = 0; i < R * K; i++) {
            int32_t v;
            memcpy(&v, ib + i * it->strides[0] * 4, 4);
            if (v >= lo && v < hi) memcpy(po + i * es, pb + (v - lo) * ps, (size_t)es);
            else memset(po + i * es, 0, (size_t)es);
        }
    }
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeTokenPermuteWithEpGradGetWorkspaceSize(const aclTensor *permutedTokensOutputGrad,
                                                           const aclTensor *sortedIndices,
                                                           const aclTensor *permutedProbsOutputGradOptional,
                                                           int64_t numTopk, const aclIntArray *rangeOptional,
                                                           bool paddedMode, const aclTensor *tokenGradOut,
                                                           const aclTensor *probsGradOut, uint64_t *workspaceSize,
                                                           aclOpExecutor **executor) {
    const aclTensor *t[PG_NT] = {permutedTokensOutputGrad, sortedIndices, permutedProbsOutputGradOptional,
                                 tokenGradOut, probsGradOut};
    TRY(mf_op_check(&GDEF, t, workspaceSize, executor));
    bool ranged;
    int64_t start, end;
    TRY(mf_ep_range(OPG, rangeOptional, &ranged, &start, &end));
    tpeg_plan pl;
    memset(&pl, 0, sizeof pl);
    const unsigned unused = ranged && permutedProbsOutputGradOptional ? 0 : 1u << PG_PG | 1u << PG_PGO;
    if (mf_op_outputs_empty(&GDEF, t)) {
        pl.g.empty = true;
        return mf_op_publish(&GDEF, t, unused, &pl, sizeof pl, tpeg_run, 0, workspaceSize, executor);
    }
    TRY(check_grad(t, ranged, numTopk, paddedMode, &pl));
    if (ranged) { /* the kernel keeps d in [start, end) (not wrapped) and reads row d - start */
        pl.g.ranged = true;
        pl.g.lo = clamp_far(start);
        pl.g.keep_below = clamp_far(end);
    }
    pl.g.dtype = tokenGradOut->dtype;
    pl.g.es = mf_dtype_size(tokenGradOut->dtype);
    return mf_op_publish(&GDEF, t, unused, &pl, sizeof pl, tpeg_run, mf_route_grad_workspace(&pl.g), workspaceSize,
                         executor);
}

aclnnStatus aclnnMoeTokenPermuteWithEpGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                           aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_PERMUTE_WITH_EP_GRAD, OPG, workspace, workspaceSize, stream);
}

/* ---- registry entries (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"rangeOptional", MF_ATTR_INT_ARRAY, 0, 2},
                                     {"numOutTokens", MF_ATTR_INT64, -64, 64},
                                     {"paddedMode", MF_ATTR_BOOL, 0, 1}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeTokenPermuteWithEpGetWorkspaceSize(t[0], t[1], t[2], a[0].arr, a[1].i, a[2].i != 0, t[3], t[4],
                                                      t[5], ws, e);
}
const mf_op_entry mf_entry_token_permute_with_ep = {&DEF, ATTRS, 3, gws_thunk, aclnnMoeTokenPermuteWithEp};
static const mf_attr_desc GATTRS[] = {{"numTopk", MF_ATTR_INT64, 1, 8},
                                      {"rangeOptional", MF_ATTR_INT_ARRAY, 0, 2},
                                      {"paddedMode", MF_ATTR_BOOL, 0, 1}};
static aclnnStatus gws_thunk_grad(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeTokenPermuteWithEpGradGetWorkspaceSize(t[0], t[1], t[2], a[0].i, a[1].arr, a[2].i != 0, t[3], t[4],
                                                          ws, e);
}
const mf_op_entry mf_entry_token_permute_with_ep_grad = {&GDEF, GATTRS, 3, gws_thunk_grad,
                                                         aclnnMoeTokenPermuteWithEpGrad};
