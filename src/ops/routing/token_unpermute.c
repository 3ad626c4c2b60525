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
/* The executor's slots, as the setters count them, follow the operator whose
 * executor CANN returns: on Ascend 950 the inner FinalizeRoutingV2's (its
 * signature: permutedTokens at 0, sortedIndices at 1, probs at 5, out output
 * 0; x1, x2, bias, expertIdx absent), on A2/A3 TokenUnpermute's own
 * (permutedTokens, sortedIndices, probs | out). AT_A2 maps each
 * FinalizeRoutingV2 role to its A2/A3 slot. */
static const char *const NAMES_950[F_NT] = {"permutedTokens", "sortedIndices", "x1Optional",        "x2Optional",
                                            "biasOptional",   "probsOptional", "expertIdxOptional", "out"};
static const unsigned FLAGS_950[F_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, 0, 0, 0, MF_T_REQUIRED | MF_T_CONTIG};
static const int8_t AT_950[F_NT] = {F_X, F_IDX, F_X1, F_X2, F_BIAS, F_SCALES, F_EIDX, F_OUT};
enum { U_X, U_IDX, U_PROBS, U_OUT, U_NT };
static const char *const NAMES[U_NT] = {"permutedTokens", "sortedIndices", "probsOptional", "out"};
static const unsigned FLAGS[U_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, MF_T_REQUIRED | MF_T_CONTIG};
static const int8_t AT_A2[F_NT] = {[F_X] = U_X,   [F_IDX] = U_IDX,       [F_X1] = -1,   [F_X2] = -1,
                                [F_BIAS] = -1, [F_SCALES] = U_PROBS, [F_EIDX] = -1, [F_OUT] = U_OUT};
/* Ascend 950: moe_finalize_routing_v2_def.cpp's regbase columns, probs (scales)
 * S free of the data dtype T; A2/A3: moe_token_unpermute_def.cpp (permuted_tokens,
 * sorted_indices, probs | unpermuted_tokens), the same nine pairs. */
#define PAIRS(COL)                                                                              \
    {COL(ACL_BF16, ACL_BF16),    COL(ACL_BF16, ACL_FLOAT16),    COL(ACL_BF16, ACL_FLOAT),             \
     COL(ACL_FLOAT16, ACL_BF16), COL(ACL_FLOAT16, ACL_FLOAT16), COL(ACL_FLOAT16, ACL_FLOAT),          \
     COL(ACL_FLOAT, ACL_BF16),   COL(ACL_FLOAT, ACL_FLOAT16),   COL(ACL_FLOAT, ACL_FLOAT)}
#define COL_950(T, S) {T, I32, T, T, T, S, I32, T}
#define COL_A2(T, S) {T, I32, S, T}
static const mf_dtcol COLS_950[] = PAIRS(COL_950), COLS_A2[] = PAIRS(COL_A2);
#undef COL_950
#undef COL_A2
static const mf_op_def DEF_950 = {OP, MF_OP_TOKEN_UNPERMUTE, 7, 1, NAMES_950, FLAGS_950, COLS_950, 9, COLS_950, 9};
static const mf_op_def DEF_A2 = {OP, MF_OP_TOKEN_UNPERMUTE, 3, 1, NAMES, FLAGS, COLS_A2, 9, COLS_A2, 9};

/* moe_token_unpermute_tiling.cpp InputParamCheck, then what moefr needs for
 * the reads and writes CANN does not check (docs/CANN_COMPAT.md). */
static aclnnStatus check_a2(const aclTensor *const *t, bool padded, fwd_plan *p) {
    const aclTensor *x = t[U_X], *idx = t[U_IDX], *pr = t[U_PROBS], *out = t[U_OUT];
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
    const aclTensor *sig[U_NT] = {permutedTokens, sortedIndices, probsOptional, out};
    const aclTensor *inner[F_NT] = {permutedTokens, sortedIndices, NULL, NULL, NULL, probsOptional, NULL, out};
    const aclTensor *const *t = a2 ? sig : inner;
    const mf_op_def *const def = a2 ? &DEF_A2 : &DEF_950;
    const int8_t *const at = a2 ? AT_A2 : AT_950;
    TRY(mf_op_check(def, t, workspaceSize, executor));
    fwd_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.mode = 2; /* CANN's READ_INDEX_BY_ROW: entry r*K + k */
    pl.row_laid = true;
    pl.drop_high = true; /* entries at or past permutedTokens' rows: the tokens numOutTokens cut */
    pl.skip_zero = a2;   /* A2/A3's kernel skips a term whose prob is 0; 950's FinalizeRoutingV2 does not */
    if (mf_op_outputs_empty(def, t)) return mf_fwd_publish_empty(def, at, t, workspaceSize, executor);
    if (a2) TRY(check_a2(sig, paddedMode, &pl));
    else TRY(mf_fwd_check_shapes(def, at, t, 2, &pl));
    return mf_fwd_publish(def, at, t, 2, true, &pl, workspaceSize, executor);
}

aclnnStatus aclnnMoeTokenUnpermute(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                   aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_UNPERMUTE, OP, workspace, workspaceSize, stream);
}

/* ---- aclnnMoeTokenUnpermuteGrad ---- */

static const char OPG[] = "aclnnMoeTokenUnpermuteGrad";
/* Slots as for the forward: on Ascend 950 the inner FinalizeRoutingV2Grad's
 * (unpermutedTokensGrad, sortedIndices, permutedTokens, probs, expertIdx and
 * bias absent | permutedTokensGradOut, probsGradOut), on A2/A3 the operator's
 * own (permutedTokens, unpermutedTokensGrad, sortedIndices, probs | the same
 * two outputs). GAT_A2 maps each FinalizeRoutingV2Grad role to its A2/A3 slot. */
static const char *const GNAMES_950[G_NT] = {"unpermutedTokensGrad", "sortedIndices", "permutedTokens",
                                             "probsOptional",        "expertIdxOptional", "biasOptional",
                                             "permutedTokensGradOut", "probsGradOut"};
static const unsigned GFLAGS_950[G_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, 0,
                                          MF_T_REQUIRED | MF_T_CONTIG, MF_T_REQUIRED | MF_T_CONTIG};
static const int8_t GAT_950[G_NT] = {G_GY, G_IDX, G_X, G_SCALES, G_EIDX, G_BIAS, G_GX, G_GS};
enum { UG_X, UG_GY, UG_IDX, UG_PROBS, UG_GX, UG_GP, UG_NT };
static const char *const GNAMES[UG_NT] = {"permutedTokens", "unpermutedTokensGrad",  "sortedIndices",
                                          "probsOptional",  "permutedTokensGradOut", "probsGradOut"};
static const unsigned GFLAGS[UG_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED, 0,
                                       MF_T_REQUIRED | MF_T_CONTIG, MF_T_REQUIRED | MF_T_CONTIG};
static const int8_t GAT_A2[G_NT] = {[G_GY] = UG_GY,        [G_IDX] = UG_IDX, [G_X] = UG_X,   [G_SCALES] = UG_PROBS,
                                 [G_EIDX] = -1,         [G_BIAS] = -1,    [G_GX] = UG_GX, [G_GS] = UG_GP};
/* Ascend 950: moe_finalize_routing_v2_grad_def.cpp's regbase columns; A2/A3:
 * moe_token_unpermute_grad_def.cpp (permuted_tokens, unpermuted_tokens_grad,
 * sorted_indices, probs | permuted_tokens_grad, probs_grad): tokens T, probs S,
 * the same nine pairs. */
#define COL_950(T, S) {T, I32, T, S, I32, T, T, S}
#define COL_A2(T, S) {T, T, I32, S, T, S}
static const mf_dtcol GCOLS_950[] = PAIRS(COL_950), GCOLS_A2[] = PAIRS(COL_A2);
#undef COL_950
#undef COL_A2
#undef PAIRS
static const mf_op_def GDEF_950 = {OPG, MF_OP_TOKEN_UNPERMUTE_GRAD, 6, 2, GNAMES_950, GFLAGS_950, GCOLS_950, 9,
                                   GCOLS_950, 9};
static const mf_op_def GDEF_A2 = {OPG, MF_OP_TOKEN_UNPERMUTE_GRAD, 4, 2, GNAMES, GFLAGS, GCOLS_A2, 9, GCOLS_A2, 9};

/* moe_token_unpermute_grad_tiling.cpp (a zero dim, topK <= 512), then what
 * moefr needs for the reads and writes CANN does not check. */
static aclnnStatus check_grad_a2(const aclTensor *const *t, bool padded, grad_plan *p) {
    const aclTensor *g = t[UG_GY], *idx = t[UG_IDX], *x = t[UG_X], *pr = t[UG_PROBS], *gx = t[UG_GX], *gp = t[UG_GP];
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
    const aclTensor *sig[UG_NT] = {permutedTokens, unpermutedTokensGrad,  sortedIndices,
                                   probsOptional,  permutedTokensGradOut, probsGradOut};
    const aclTensor *inner[G_NT] = {unpermutedTokensGrad, sortedIndices,         permutedTokens, probsOptional,
                                    NULL,                 NULL,                  permutedTokensGradOut, probsGradOut};
    const aclTensor *const *t = a2 ? sig : inner;
    const mf_op_def *const def = a2 ? &GDEF_A2 : &GDEF_950;
    const int8_t *const at = a2 ? GAT_A2 : GAT_950;
    TRY(mf_op_check(def, t, workspaceSize, executor));
    grad_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.mode = 0;
    pl.has_scales = probsOptional != NULL;
    pl.neg_error = a2; /* A2/A3's kernel writes row d for every d < M, negative ones too */
    pl.strict_no_neg = true; /* MOEFR_STRICT=1: the docs' [0, R*K), as TokenPermuteGrad's */
    /* without probs permutedTokens is only measured and probsGradOut not written */
    const unsigned unused = pl.has_scales ? 0 : 1u << at[G_X] | 1u << at[G_GS];
    if (mf_op_outputs_empty(def, t)) {
        pl.empty = true;
        pl.op = OPG;
        return mf_op_publish(def, t, unused, &pl, sizeof pl, mf_grad_run, 0, workspaceSize, executor);
    }
    if (a2) TRY(check_grad_a2(sig, paddedMode, &pl));
    else TRY(mf_grad_check_shapes(def, at, t, 0, active, 0, 0, &pl));
    return mf_grad_finish(def, at, t, &pl, unused, workspaceSize, executor);
}

aclnnStatus aclnnMoeTokenUnpermuteGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                       aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_UNPERMUTE_GRAD, OPG, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
/* The public signatures are the A2/A3 tables' (DEF_A2, GDEF_A2); on Ascend
 * 950 the executor's slots are FinalizeRoutingV2(Grad)'s, as above. */
static const mf_attr_desc ATTRS[] = {{"paddedMode", MF_ATTR_BOOL, 0, 1},
                                     {"restoreShapeOptional", MF_ATTR_INT_ARRAY, 0, 2}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeTokenUnpermuteGetWorkspaceSize(t[0], t[1], t[2], a[0].i != 0, a[1].arr, t[3], ws, e);
}
const mf_op_entry mf_entry_token_unpermute = {&DEF_A2, ATTRS, 2, gws_thunk, aclnnMoeTokenUnpermute};
static aclnnStatus gws_thunk_grad(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeTokenUnpermuteGradGetWorkspaceSize(t[0], t[1], t[2], t[3], a[0].i != 0, a[1].arr, t[4], t[5], ws,
                                                      e);
}
const mf_op_entry mf_entry_token_unpermute_grad = {&GDEF_A2, ATTRS, 2, gws_thunk_grad, aclnnMoeTokenUnpermuteGrad};
