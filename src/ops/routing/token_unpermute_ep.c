/* token_unpermute_ep.c - aclnnMoeTokenUnpermuteWithEp and
 * aclnnMoeTokenUnpermuteWithEpGrad, both phases: TokenUnpermute(Grad) over
 * one expert-parallel window [start, end) of the sorted rows. CANN ships
 * both for A2/A3 only (moe_token_unpermute_with_ep*_def.cpp); moefr applies
 * their tables and tiling checks on every MOEFR_SOC setting
 * (docs/CANN_COMPAT.md). Phase 2 is the forward run (src/ops/forward, the
 * FinalizeRoutingV2 mode-2 arithmetic TokenUnpermute uses) or the backward
 * run (src/ops/grad), each with a ranged index: d in [lo, hi) names row
 * d - lo, every other value drops its slot. */
#include "aclnnop/aclnn_moe_token_unpermute_with_ep.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_ep_grad.h"
#include "ops/forward/forward.h"
#include "ops/grad/grad.h"
#include "ops/opdef.h"
#include "ops/routing/routing.h"

#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY
#define I32 ACL_INT32
#define MAX_TOPK 512
/* As in token_permute_ep.c: bounds this far out name no row. */
#define EP_FAR ((int64_t)1 << 40)

static int64_t clamp_far(int64_t v) { return v < -EP_FAR ? -EP_FAR : v > EP_FAR ? EP_FAR : v; }

/* moe_token_unpermute_with_ep_def.cpp and ..._grad_def.cpp: tokens T, probs S, the nine pairs. */
#define PAIRS(COL)                                                                              \
    {COL(ACL_BF16, ACL_BF16),    COL(ACL_BF16, ACL_FLOAT16),    COL(ACL_BF16, ACL_FLOAT),             \
     COL(ACL_FLOAT16, ACL_BF16), COL(ACL_FLOAT16, ACL_FLOAT16), COL(ACL_FLOAT16, ACL_FLOAT),          \
     COL(ACL_FLOAT, ACL_BF16),   COL(ACL_FLOAT, ACL_FLOAT16),   COL(ACL_FLOAT, ACL_FLOAT)}

/* ---- aclnnMoeTokenUnpermuteWithEp ---- */

static const char OP[] = "aclnnMoeTokenUnpermuteWithEp";
enum { U_X, U_IDX, U_PROBS, U_OUT, U_NT };
static const char *const NAMES[U_NT] = {"permutedTokens", "sortedIndices", "probsOptional", "out"};
static const unsigned FLAGS[U_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, MF_T_REQUIRED | MF_T_CONTIG};
static const int8_t AT[F_NT] = {[F_X] = U_X,   [F_IDX] = U_IDX,       [F_X1] = -1,   [F_X2] = -1,
                                [F_BIAS] = -1, [F_SCALES] = U_PROBS, [F_EIDX] = -1, [F_OUT] = U_OUT};
#define COL(T, S) {T, I32, S, T}
static const mf_dtcol COLS[] = PAIRS(COL);
#undef COL
static const mf_op_def DEF = {OP, MF_OP_TOKEN_UNPERMUTE_WITH_EP, 3, 1, NAMES, FLAGS, COLS, 9, COLS, 9};

/* With a range: moe_token_unpermute_with_ep_tiling.cpp's input check
 * (numTopk >= 1, permutedTokens 2-D; probs 2-D, dim1 = numTopk, sortedIndices
 * dim0 = probs dim0 * dim1, topK <= 512). Without one: aclnnMoeTokenUnpermute's
 * (A2/A3), numTopk ignored. Then what moefr needs for the reads and writes
 * CANN does not check. */
static aclnnStatus check_fwd(const aclTensor *const *t, bool ranged, int64_t topK, bool padded, fwd_plan *p) {
    const aclTensor *x = t[U_X], *idx = t[U_IDX], *pr = t[U_PROBS], *out = t[U_OUT];
    if (ranged && topK < 1) return mf_fail(TILING, "%s: numTopk must be at least 1, got %lld", OP, (long long)topK);
    TRY(mf_check_rank(OP, TILING, "permutedTokens", x, 2));
    int64_t K = ranged ? topK : 1, R = 0;
    if (pr) {
        TRY(mf_check_rank(OP, TILING, "probsOptional", pr, 2));
        if (ranged && pr->dims[1] != topK)
            return mf_fail(TILING, "%s: probsOptional dim1 (%lld) must be numTopk (%lld)", OP, (long long)pr->dims[1],
                           (long long)topK);
        int64_t RK;
        if (idx->ndim < 1 || !mf_mul_ok(pr->dims[0], pr->dims[1], &RK) || idx->dims[0] != RK)
            return mf_fail(TILING, "%s: sortedIndices dim0 must be probsOptional dim0*dim1 = %lld*%lld", OP,
                           (long long)pr->dims[0], (long long)pr->dims[1]);
        if (pr->dims[1] > MAX_TOPK)
            return mf_fail(TILING, "%s: probsOptional dim1 (topK %lld) must be <= %d", OP, (long long)pr->dims[1],
                           MAX_TOPK);
        K = pr->dims[1];
        R = pr->dims[0];
    }
    /* moefr's own: CANN's tiling does not look at these */
    if (padded) return mf_fail(TILING, "%s: paddedMode must be false (CANN supports only false)", OP);
    TRY(mf_check_rank(OP, TILING, "sortedIndices", idx, 1));
    if (K == 0) return mf_fail(TILING, "%s: probsOptional dim1 (topK) must not be 0", OP);
    if (!pr) R = idx->dims[0] / K;
    TRY(mf_check_rank(OP, TILING, "out", out, 2));
    TRY(mf_check_dim(OP, TILING, "out", out, 0, R));
    TRY(mf_check_dim(OP, TILING, "out", out, 1, x->dims[1]));
    p->R = R; p->K = K; p->H = x->dims[1]; p->N = R * K; p->D0 = x->dims[0]; p->E = 0;
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize(const aclTensor *permutedTokens,
                                                         const aclTensor *sortedIndices,
                                                         const aclTensor *probsOptional, int64_t numTopk,
                                                         const aclIntArray *rangeOptional, bool paddedMode,
                                                         const aclIntArray *restoreShapeOptional, const aclTensor *out,
                                                         uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)restoreShapeOptional; /* read only in paddedMode, which CANN does not support */
    const aclTensor *t[U_NT] = {permutedTokens, sortedIndices, probsOptional, out};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    bool ranged;
    int64_t start, end;
    TRY(mf_ep_range(OP, rangeOptional, &ranged, &start, &end));
    fwd_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.skip_zero = true; /* the kernel skips a term whose prob is 0 */
    if (mf_op_outputs_empty(&DEF, t)) return mf_fwd_publish_empty(&DEF, AT, t, workspaceSize, executor);
    TRY(check_fwd(t, ranged, numTopk, paddedMode, &pl));
    if (ranged) { /* the kernel keeps d in [start, end) as given (no wrap) and reads row d - start */
        pl.ranged = true;
        pl.lo = clamp_far(start);
        pl.hi = clamp_far(end);
    }
    /* without a range, TokenUnpermute's A2/A3 rule: d >= M drops a slot */
    return mf_fwd_publish(&DEF, AT, t, 2, !ranged, &pl, workspaceSize, executor);
}

aclnnStatus aclnnMoeTokenUnpermuteWithEp(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                         aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_UNPERMUTE_WITH_EP, OP, workspace, workspaceSize, stream);
}

/* ---- aclnnMoeTokenUnpermuteWithEpGrad ---- */

static const char OPG[] = "aclnnMoeTokenUnpermuteWithEpGrad";
enum { UG_GY, UG_IDX, UG_X, UG_PROBS, UG_GX, UG_GP, UG_NT };
static const char *const GNAMES[UG_NT] = {"unpermutedTokensGrad", "sortedIndices",        "permutedTokensOptional",
                                          "probsOptional",        "permutedTokensGradOut", "probsGradOut"};
static const unsigned GFLAGS[UG_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, MF_T_REQUIRED | MF_T_CONTIG, MF_T_CONTIG};
static const int8_t GAT[G_NT] = {[G_GY] = UG_GY, [G_IDX] = UG_IDX, [G_X] = UG_X, [G_SCALES] = UG_PROBS,
                                 [G_EIDX] = -1,  [G_BIAS] = -1,    [G_GX] = UG_GX, [G_GS] = UG_GP};
#define COL(T, S) {T, I32, T, S, T, S}
static const mf_dtcol GCOLS[] = PAIRS(COL);
#undef COL
#undef PAIRS
static const mf_op_def GDEF = {OPG, MF_OP_TOKEN_UNPERMUTE_WITH_EP_GRAD, 4, 2, GNAMES, GFLAGS, GCOLS, 9, GCOLS, 9};

/* moe_token_unpermute_with_ep_grad_tiling.cpp in its order (sortedIndices
 * 1-D, no zero dim, topK <= 512, the range normalised, end >= start), then
 * what moefr needs for the reads and writes CANN does not check. */
static aclnnStatus check_grad(const aclTensor *const *t, bool ranged, int64_t start, int64_t end, int64_t topK,
                              bool padded, grad_plan *p) {
    const aclTensor *g = t[UG_GY], *idx = t[UG_IDX], *x = t[UG_X], *pr = t[UG_PROBS], *gx = t[UG_GX],
                    *gp = t[UG_GP];
    /* moefr: CANN reads dims 0 and 1 of these without looking at their rank */
    TRY(mf_check_rank(OPG, TILING, "unpermutedTokensGrad", g, 2));
    if (pr) TRY(mf_check_rank(OPG, TILING, "probsOptional", pr, 2));
    if (x) TRY(mf_check_rank(OPG, TILING, "permutedTokensOptional", x, 2));
    const int64_t R = g->dims[0], H = g->dims[1], K = pr ? pr->dims[1] : topK;
    TRY(mf_check_rank(OPG, TILING, "sortedIndices", idx, 1));
    const int64_t T = idx->dims[0], M = x ? x->dims[0] : T;
    if (R == 0 || K == 0 || H == 0 || M == 0)
        return mf_fail(TILING, "%s: a zero dim: unpermutedTokensGrad (%lld, %lld), topK %lld, permuted rows %lld", OPG,
                       (long long)R, (long long)H, (long long)K, (long long)M);
    if (K > MAX_TOPK) return mf_fail(TILING, "%s: topK (%lld) must be <= %d", OPG, (long long)K, MAX_TOPK);
    int64_t lo = 0, hi = T;
    if (ranged) {
        lo = start < 0 ? start + T : start;
        hi = end < 0 ? end + T : end;
        lo = lo < 0 ? 0 : lo > T ? T : lo;
        hi = hi < 0 ? 0 : hi > T ? T : hi;
        if (hi < lo)
            return mf_fail(TILING, "%s: rangeOptional [%lld, %lld) is [%lld, %lld) normalised; end must not be below "
                           "start", OPG, (long long)start, (long long)end, (long long)lo, (long long)hi);
    }
    /* the kernel's numOutTokens: permutedTokens' rows (T without), replaced by end when start != 0 */
    if (lo == 0 && M < hi) hi = M;
    /* moefr's own */
    if (K < 1) return mf_fail(TILING, "%s: topkNum must be at least 1, got %lld", OPG, (long long)K);
    if (padded) return mf_fail(TILING, "%s: paddedMode must be false (CANN supports only false)", OPG);
    if (pr && !x)
        return mf_fail(TILING, "%s: permutedTokensOptional is required when probsOptional is given", OPG);
    if (x) TRY(mf_check_dim(OPG, TILING, "permutedTokensOptional", x, 1, H));
    if (pr) TRY(mf_check_dim(OPG, TILING, "probsOptional", pr, 0, R));
    TRY(mf_check_dim(OPG, TILING, "sortedIndices", idx, 0, R * K));
    TRY(mf_check_rank(OPG, TILING, "permutedTokensGradOut", gx, 2));
    if (x) TRY(mf_check_dim(OPG, TILING, "permutedTokensGradOut", gx, 0, x->dims[0]));
    TRY(mf_check_dim(OPG, TILING, "permutedTokensGradOut", gx, 1, H));
    if (pr) {
        if (gp == NULL)
            return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: probsGradOut is NULL while probsOptional is given", OPG);
        TRY(mf_check_rank(OPG, TILING, "probsGradOut", gp, 2));
        TRY(mf_check_dim(OPG, TILING, "probsGradOut", gp, 0, R));
        TRY(mf_check_dim(OPG, TILING, "probsGradOut", gp, 1, K));
    }
    p->R = R; p->K = K; p->H = H; p->N = R * K; p->D0 = gx->dims[0]; p->E = 0;
    p->ranged = true;
    p->lo = lo;
    p->hi = hi;
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize(
    const aclTensor *unpermutedTokensGrad, const aclTensor *sortedIndices, const aclTensor *permutedTokensOptional,
    const aclTensor *probsOptional, bool paddedMode, const aclIntArray *restoreShapeOptional,
    const aclIntArray *rangeOptional, int64_t topkNum, const aclTensor *permutedTokensGradOut,
    const aclTensor *probsGradOut, uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)restoreShapeOptional;
    const aclTensor *t[UG_NT] = {unpermutedTokensGrad, sortedIndices,         permutedTokensOptional,
                                 probsOptional,        permutedTokensGradOut, probsGradOut};
    TRY(mf_op_check(&GDEF, t, workspaceSize, executor));
    bool ranged;
    int64_t start, end;
    TRY(mf_ep_range(OPG, rangeOptional, &ranged, &start, &end));
    grad_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.mode = 0;
    pl.has_scales = probsOptional != NULL;
    /* without probs permutedTokens is only measured and probsGradOut not written */
    const unsigned unused = pl.has_scales ? 0 : 1u << UG_X | 1u << UG_GP;
    if (mf_op_outputs_empty(&GDEF, t)) {
        pl.empty = true;
        pl.op = OPG;
        return mf_op_publish(&GDEF, t, unused, &pl, sizeof pl, mf_grad_run, 0, workspaceSize, executor);
    }
    TRY(check_grad(t, ranged, start, end, topkNum, paddedMode, &pl));
    return mf_grad_finish(&GDEF, GAT, t, &pl, unused, workspaceSize, executor);
}

aclnnStatus aclnnMoeTokenUnpermuteWithEpGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                             aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_UNPERMUTE_WITH_EP_GRAD, OPG, workspace, workspaceSize, stream);
}

/* ---- registry entries (opdef.h) ----
 * restoreShapeOptional is read only in paddedMode, which CANN does not
 * support: the entries pass NULL (one int-array attribute each). */
static const mf_attr_desc ATTRS[] = {{"numTopk", MF_ATTR_INT64, 1, 8},
                                     {"rangeOptional", MF_ATTR_INT_ARRAY, 0, 2},
                                     {"paddedMode", MF_ATTR_BOOL, 0, 1}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize(t[0], t[1], t[2], a[0].i, a[1].arr, a[2].i != 0, NULL, t[3],
                                                        ws, e);
}
const mf_op_entry mf_entry_token_unpermute_with_ep = {&DEF, ATTRS, 3, gws_thunk, aclnnMoeTokenUnpermuteWithEp};
static const mf_attr_desc GATTRS[] = {{"paddedMode", MF_ATTR_BOOL, 0, 1},
                                      {"rangeOptional", MF_ATTR_INT_ARRAY, 0, 2},
                                      {"topkNum", MF_ATTR_INT64, 1, 8}};
static aclnnStatus gws_thunk_grad(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize(t[0], t[1], t[2], t[3], a[0].i != 0, NULL, a[1].arr,
                                                            a[2].i, t[4], t[5], ws, e);
}
const mf_op_entry mf_entry_token_unpermute_with_ep_grad = {&GDEF, GATTRS, 3, gws_thunk_grad,
                                                           aclnnMoeTokenUnpermuteWithEpGrad};
