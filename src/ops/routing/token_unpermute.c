/* token_unpermute.c - aclnnMoeTokenUnpermute and aclnnMoeTokenUnpermuteGrad,
 * both phases. As CANN does on Ascend 950 (op_api/aclnn_moe_token_unpermute*.cpp),
 * the default rules translate the call into FinalizeRoutingV2's tiling
 * checks (dropPadMode 2, probs as scales) and FinalizeRoutingV2Grad's
 * (dropPadMode 0, activeNum = permutedTokens dim0); MOEFR_SOC=ascend910b
 * applies the A2/A3 operators' own tables and tiling checks. Phase 2 is the
 * forward (src/ops/forward) or backward (src/ops/grad) run. */
#include "aclnnop/aclnn_moe_token_unpermute.h"
#include "aclnnop/aclnn_moe_token_unpermute_grad.h"
#include "ops/forward/forward.h"
#include "ops/grad/grad.h"
#include "ops/opdef.h"

#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY
#define I32 ACL_INT32
/* A2/A3 topK bound of both tilings (moe_token_unpermute*_tiling.cpp). */
#define MF_TU_MAX_TOPK 512

/* ---- aclnnMoeTokenUnpermute ---- */

static const char OP[] = "aclnnMoeTokenUnpermute";
/* FinalizeRoutingV2's slots; x1, x2, bias and expertIdx are never given. */
static const char *const NAMES[F_NT] = {"permutedTokens", "sortedIndices", "x1",  "x2",
                                        "bias",           "probsOptional", "expertIdx", "out"};
static const unsigned FLAGS[F_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, 0, 0, 0, MF_T_REQUIRED | MF_T_CONTIG};
/* Ascend 950: moe_finalize_routing_v2_def.cpp's regbase columns, probs (scales)
 * S free of the data dtype T; A2/A3: moe_token_unpermute_def.cpp (permuted_tokens,
 * sorted_indices, probs | unpermuted_tokens), the same nine pairs. */
#define COL(T, S) {T, I32, T, T, T, S, I32, T}
static const mf_dtcol COLS[] = {COL(ACL_BF16, ACL_BF16),    COL(ACL_BF16, ACL_FLOAT16),    COL(ACL_BF16, ACL_FLOAT),
                                COL(ACL_FLOAT16, ACL_BF16), COL(ACL_FLOAT16, ACL_FLOAT16), COL(ACL_FLOAT16, ACL_FLOAT),
                                COL(ACL_FLOAT, ACL_BF16),   COL(ACL_FLOAT, ACL_FLOAT16),   COL(ACL_FLOAT, ACL_FLOAT)};
#undef COL
static const mf_op_def DEF = {OP, MF_OP_TOKEN_UNPERMUTE, 7, 1, NAMES, FLAGS, COLS, 9, COLS, 9};

/* moe_token_unpermute_tiling.cpp InputParamCheck, then what moefr needs for
 * the reads and writes CANN does not check (docs/CANN_COMPAT.md). */
static aclnnStatus check_a2(const aclTensor *const *t, bool padded, fwd_plan *p) {
    const aclTensor *x = t[F_X], *idx = t[F_IDX], *pr = t[F_SCALES], *out = t[F_OUT];
    TRY(mf_check_rank(OP, TILING, "permutedTokens", x, 2));
    int64_t K = 1, R = 0;
    if (pr) {
        TRY(mf_check_rank(OP, TILING, "probsOptional", pr, 2));
        int64_t RK;
        if (idx->ndim < 1 || !mf_mul_ok(pr->dims[0], pr->dims[1], &RK) || idx->dims[0] != RK)
            return mf_fail(TILING, "%s: sortedIndices dim0 must be probsOptional dim0*dim1 = %lld*%lld", OP,
                           (long long)pr->dims[0], (long long)pr->dims[1]);
        if (pr->dims[1] > MF_TU_MAX_TOPK)
            return mf_fail(TILING, "%s: probsOptional dim1 (topK %lld) must be <= %d (MOEFR_SOC=ascend910b)", OP,
                           (long long)pr->dims[1], MF_TU_MAX_TOPK);
        K = pr->dims[1];
        R = pr->dims[0];
    }
    /* moefr's own: CANN's tiling does not look at these */
    if (padded) return mf_fail(TILING, "%s: paddedMode must be false (CANN supports only false)", OP);
    TRY(mf_check_rank(OP, TILING, "sortedIndices", idx, 1));
    if (!pr) R = idx->dims[0];
    if (K == 0) return mf_fail(TILING, "%s: probsOptional dim1 (topK) must not be 0", OP);
    TRY(mf_check_rank(OP, TILING, "out", out, 2));
    TRY(mf_check_dim(OP, TILING, "out", out, 0, R));
    TRY(mf_check_dim(OP, TILING, "out", out, 1, x->dims[1]));
    p->R = R; p->K = K; p->H = x->dims[1]; p->N = R * K; p->D0 = x->dims[0]; p->E = 0;
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeTokenUnpermuteGetWorkspaceSize(const aclTensor *permutedTokens, const aclTensor *sortedIndices,
                                                   const aclTensor *probsOptional, bool paddedMode,
                                                   const aclIntArray *restoreShapeOptional, const aclTensor *out,
                                                   uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)restoreShapeOptional; /* read only in paddedMode, which neither product supports */
    const bool a2 = mf_soc_strict();
    if (!a2 && paddedMode) return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: paddedMode must be false", OP);
    const aclTensor *t[F_NT] = {permutedTokens, sortedIndices, NULL, NULL, NULL, probsOptional, NULL, out};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    fwd_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.mode = 2; /* CANN's READ_INDEX_BY_ROW: entry r*K + k */
    pl.row_laid = true;
    pl.drop_high = true; /* entries at or past permutedTokens' rows: the tokens numOutTokens cut */
    pl.skip_zero = a2;   /* A2/A3's kernel skips a term whose prob is 0; 950's FinalizeRoutingV2 does not */
    if (mf_op_outputs_empty(&DEF, t)) {
        pl.empty = true;
        pl.op = OP;
        return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, mf_fwd_run, 0, workspaceSize, executor);
    }
    if (a2) TRY(check_a2(t, paddedMode, &pl));
    else TRY(mf_fwd_check_shapes(&DEF, t, 2, &pl));
    return mf_fwd_finish(&DEF, t, &pl, workspaceSize, executor);
}

aclnnStatus aclnnMoeTokenUnpermute(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                   aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_UNPERMUTE, OP, workspace, workspaceSize, stream);
}

/* ---- aclnnMoeTokenUnpermuteGrad ---- */

static const char OPG[] = "aclnnMoeTokenUnpermuteGrad";
/* FinalizeRoutingV2Grad's slots; expertIdx and bias are never given. */
static const char *const GNAMES[G_NT] = {"unpermutedTokensGrad", "sortedIndices",         "permutedTokens",
                                         "probsOptional",        "expertIdx",             "bias",
                                         "permutedTokensGradOut", "probsGradOut"};
static const unsigned GFLAGS[G_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, 0,
                                      MF_T_REQUIRED | MF_T_CONTIG, MF_T_REQUIRED | MF_T_CONTIG};
/* Ascend 950: moe_finalize_routing_v2_grad_def.cpp's regbase columns; A2/A3:
 * moe_token_unpermute_grad_def.cpp (permuted_tokens, unpermuted_tokens_grad,
 * sorted_indices, probs | permuted_tokens_grad, probs_grad): tokens T, probs S,
 * the same nine pairs. */
#define COL(T, S) {T, I32, T, S, I32, T, T, S}
static const mf_dtcol GCOLS[] = {COL(ACL_BF16, ACL_BF16),    COL(ACL_BF16, ACL_FLOAT16),    COL(ACL_BF16, ACL_FLOAT),
                                 COL(ACL_FLOAT16, ACL_BF16), COL(ACL_FLOAT16, ACL_FLOAT16), COL(ACL_FLOAT16, ACL_FLOAT),
                                 COL(ACL_FLOAT, ACL_BF16),   COL(ACL_FLOAT, ACL_FLOAT16),   COL(ACL_FLOAT, ACL_FLOAT)};
#undef COL
static const mf_op_def GDEF = {OPG, MF_OP_TOKEN_UNPERMUTE_GRAD, 6, 2, GNAMES, GFLAGS, GCOLS, 9, GCOLS, 9};

/* moe_token_unpermute_grad_tiling.cpp (a zero dim, topK <= 512), then what
 * moefr needs for the reads and writes CANN does not check. */
static aclnnStatus check_grad_a2(const aclTensor *const *t, bool padded, grad_plan *p) {
    const aclTensor *g = t[G_GY], *idx = t[G_IDX], *x = t[G_X], *pr = t[G_SCALES], *gx = t[G_GX], *gp = t[G_GS];
    TRY(mf_check_rank(OPG, TILING, "unpermutedTokensGrad", g, 2));
    if (pr) TRY(mf_check_rank(OPG, TILING, "probsOptional", pr, 2));
    TRY(mf_check_rank(OPG, TILING, "permutedTokens", x, 2));
    const int64_t R = g->dims[0], H = g->dims[1], K = pr ? pr->dims[1] : 1, M = x->dims[0];
    if (R == 0 || K == 0 || H == 0 || M == 0)
        return mf_fail(TILING, "%s: a zero dim: unpermutedTokensGrad (%lld, %lld), topK %lld, permutedTokens dim0 %lld",
                       OPG, (long long)R, (long long)H, (long long)K, (long long)M);
    if (K > MF_TU_MAX_TOPK)
        return mf_fail(TILING, "%s: probsOptional dim1 (topK %lld) must be <= %d (MOEFR_SOC=ascend910b)", OPG,
                       (long long)K, MF_TU_MAX_TOPK);
    /* moefr's own */
    if (padded) return mf_fail(TILING, "%s: paddedMode must be false (CANN supports only false)", OPG);
    TRY(mf_check_dim(OPG, TILING, "permutedTokens", x, 1, H));
    if (pr) TRY(mf_check_dim(OPG, TILING, "probsOptional", pr, 0, R));
    TRY(mf_check_rank(OPG, TILING, "sortedIndices", idx, 1));
    TRY(mf_check_dim(OPG, TILING, "sortedIndices", idx, 0, R * K));
    TRY(mf_check_rank(OPG, TILING, "permutedTokensGradOut", gx, 2));
    TRY(mf_check_dim(OPG, TILING, "permutedTokensGradOut", gx, 0, M));
    TRY(mf_check_dim(OPG, TILING, "permutedTokensGradOut", gx, 1, H));
    if (pr) {
        TRY(mf_check_rank(OPG, TILING, "probsGradOut", gp, 2));
        TRY(mf_check_dim(OPG, TILING, "probsGradOut", gp, 0, R));
        TRY(mf_check_dim(OPG, TILING, "probsGradOut", gp, 1, K));
    }
    p->R = R; p->K = K; p->H = H; p->N = R * K; p->D0 = M; p->E = 0;
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeTokenUnpermuteGradGetWorkspaceSize(
    const aclTensor *permutedTokens, const aclTensor *unpermutedTokensGrad, const aclTensor *sortedIndices,
    const aclTensor *probsOptional, bool paddedMode, const aclIntArray *restoreShapeOptional,
    const aclTensor *permutedTokensGradOut, const aclTensor *probsGradOut, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
    (void)restoreShapeOptional;
    const bool a2 = mf_soc_strict();
    int64_t active = 0;
    if (!a2) { /* Ascend 950's translation, in CANN's order */
        if (paddedMode) return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: paddedMode must be false", OPG);
        if (permutedTokens == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: permutedTokens is NULL", OPG);
        TRY(mf_check_live(OPG, "permutedTokens", permutedTokens));
        if (permutedTokens->ndim == 0)
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: permutedTokens must have at least 1 dim, got 0-D", OPG);
        active = permutedTokens->dims[0];
    }
    const aclTensor *t[G_NT] = {unpermutedTokensGrad, sortedIndices, permutedTokens, probsOptional,
                                NULL,                 NULL,          permutedTokensGradOut, probsGradOut};
    TRY(mf_op_check(&GDEF, t, workspaceSize, executor));
    grad_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.mode = 0;
    pl.has_scales = probsOptional != NULL;
    pl.neg_error = a2; /* A2/A3's kernel writes row d for every d < M, negative ones too */
    /* without probs permutedTokens is only measured and probsGradOut not written */
    const unsigned unused = pl.has_scales ? 0 : 1u << G_X | 1u << G_GS;
    if (mf_op_outputs_empty(&GDEF, t)) {
        pl.empty = true;
        pl.op = OPG;
        return mf_op_publish(&GDEF, t, unused, &pl, sizeof pl, mf_grad_run, 0, workspaceSize, executor);
    }
    if (a2) TRY(check_grad_a2(t, paddedMode, &pl));
    else TRY(mf_grad_check_shapes(&GDEF, t, 0, active, 0, 0, &pl));
    return mf_grad_finish(&GDEF, t, &pl, unused, workspaceSize, executor);
}

aclnnStatus aclnnMoeTokenUnpermuteGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                       aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_UNPERMUTE_GRAD, OPG, workspace, workspaceSize, stream);
}
