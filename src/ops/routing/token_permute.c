/* token_permute.c - aclnnMoeTokenPermute and aclnnMoeTokenPermuteGrad, both
 * phases. As CANN does on Ascend 950 (op_api/aclnn_moe_token_permute*.cpp),
 * the default rules translate the call into InitRoutingV2(Grad)'s tiling
 * checks (activeNum = numOutTokens; activeNum = permutedOutputGrad dim0);
 * MOEFR_SOC=ascend910b applies the A2/A3 operators' own tables and tiling
 * checks (moe_token_permute*_def.cpp, *_tiling.cpp). Either way phase 2 is
 * the routing core of routing.c: sort, map, gather / accumulate. */
#include "aclnnop/aclnn_moe_token_permute.h"
#include "aclnnop/aclnn_moe_token_permute_grad.h"
#include "ops/opdef.h"
#include "ops/routing/routing.h"

#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY

/* ---- aclnnMoeTokenPermute ---- */

static const char OP[] = "aclnnMoeTokenPermute";
/* InitRoutingV2's slots; the two count outputs are never given. */
static const char *const NAMES[MF_IR_NT] = {"tokens", "indices", "permuteTokensOut", "sortedIndicesOut",
                                            "expertTokensCountOrCumsumOut", "expertTokensBeforeCapacityOut"};
static const unsigned FLAGS[MF_IR_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED | MF_T_CONTIG,
                                         MF_T_REQUIRED | MF_T_CONTIG, 0, 0};
#define I32 ACL_INT32
#define I64 ACL_INT64
#define COL(T, I) {T, I, T, I32, I32, I32}
/* Ascend 950: moe_init_routing_v2_def.cpp's ascend910_95 columns (x, expert_idx
 * | expanded_x, expanded_row_idx). A2/A3: moe_token_permute_def.cpp (tokens,
 * indices | permute_tokens, sorted_indices), INT8 tokens included. */
static const mf_dtcol COLS_950[] = {COL(ACL_FLOAT16, I32), COL(ACL_BF16, I32), COL(ACL_FLOAT, I32),
                                    COL(ACL_FLOAT16, I64), COL(ACL_BF16, I64), COL(ACL_FLOAT, I64)};
static const mf_dtcol COLS_A2[] = {COL(ACL_BF16, I64),    COL(ACL_BF16, I32),  COL(ACL_FLOAT16, I64),
                                   COL(ACL_FLOAT16, I32), COL(ACL_FLOAT, I64), COL(ACL_FLOAT, I32),
                                   COL(ACL_INT8, I64),    COL(ACL_INT8, I32)};
#undef COL
static const mf_op_def DEF = {OP, MF_OP_TOKEN_PERMUTE, 2, 4, NAMES, FLAGS, COLS_950, 6, COLS_A2, 8};


typedef struct tp_plan {
    mf_route_plan r;
    bool a2;   /* the A2/A3 id rule: [0, 16777215) plus the dtype's extremes */
    bool pack; /* tokens' rows are not one stride apart: packed into the workspace */
} tp_plan;

/* tokens as N rows of H = prod(dims[1:]) elements: one row stride and one
 * element stride when the trailing dims collapse (size-1 dims aside), else
 * *flat = false. */
static mf_rows flat_rows(const aclTensor *t, bool *flat) {
    const int64_t es = (int64_t)mf_dtype_size(t->dtype);
    mf_rows v = {mf_tensor_base(t), t->ndim >= 1 ? t->dims[0] : 0, INT64_MAX, 0, 0, es};
    *flat = true;
    if (t->ndim >= 1 && !mf_mul_ok(t->strides[0], es, &v.s_row)) *flat = false, v.s_row = 0;
    int inner = -1; /* the innermost dim after the first with more than one element */
    for (int d = t->ndim - 1; d >= 1; d--) {
        if (t->dims[d] <= 1) continue;
        int64_t span; /* an empty tensor's strides are not bounded by any storage: no overflow */
        if (inner < 0) {
            if (!mf_mul_ok(t->strides[d], es, &v.s_col)) *flat = false, v.s_col = 0;
        } else if (!mf_mul_ok(t->dims[inner], t->strides[inner], &span) || t->strides[d] != span) *flat = false;
        inner = d;
    }
    return v;
}

/* Copies tokens in row-major view order to dst (rows of H, contiguous). */
static void pack_tokens(const aclTensor *t, char *dst) {
    const size_t es = mf_dtype_size(t->dtype);
    const char *base = mf_tensor_base(t);
    int64_t idx[MF_MAX_DIMS] = {0};
    for (int64_t i = 0; i < t->numel; i++) {
        int64_t off = 0;
        for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
        memcpy(dst + i * (int64_t)es, base + off * (int64_t)es, es);
        for (int d = t->ndim - 1; d >= 0 && ++idx[d] == t->dims[d]; d--) idx[d] = 0;
    }
}

aclnnStatus mf_tp_layout(const char *op, const aclTensor *tokens, mf_route_plan *r, bool *pack) {
    r->es = mf_dtype_size(tokens->dtype);
    uint64_t used = 0;
    bool flat;
    (void)flat_rows(tokens, &flat);
    *pack = !flat && r->A > 0 && r->H > 0;
    if (*pack) {
        int64_t bytes;
        if (!mf_mul_ok(tokens->numel, (int64_t)r->es, &bytes) || bytes > (INT64_MAX >> 2))
            return mf_fail(TILING, "%s: workspace to pack tokens overflows", op);
        r->ws_x = mf_carve(&used, (uint64_t)bytes);
    }
    return mf_route_layout(op, r, used);
}

mf_rows mf_tp_token_rows(const aclTensor *tokens, const mf_route_plan *r, bool pack, char *ws) {
    bool flat;
    const mf_rows view = flat_rows(tokens, &flat);
    if (!pack) return view;
    pack_tokens(tokens, ws + r->ws_x);
    const mf_rows packed = {ws + r->ws_x, r->N, INT64_MAX, 0, r->H * (int64_t)r->es, (int64_t)r->es};
    return packed;
}

/* moe_token_permute_tiling.cpp, GetShapeAttrsInfo then CheckOutShape. */
static aclnnStatus check_a2(const aclTensor *const *t, int64_t numOut, bool padded, mf_route_plan *p) {
    const aclTensor *tok = t[MF_IR_X], *ind = t[MF_IR_EIDX], *pt = t[MF_IR_EX], *si = t[MF_IR_ROW];
    char buf[160];
    if (padded) return mf_fail(TILING, "%s: paddedMode must be false (CANN supports only false)", OP);
    /* moefr: CANN reads tokens dim0 without looking at the rank */
    if (tok->ndim < 1) return mf_fail(TILING, "%s: tokens must have at least 1 dim, got 0-D", OP);
    int64_t cols;
    if (!mf_dims_prod(tok->dims, 1, tok->ndim, &cols))
        return mf_fail(TILING, "%s: tokens' dims after the first multiply past int64", OP);
    if (ind->ndim != 1 && ind->ndim != 2)
        return mf_fail(TILING, "%s: indices must be 1-D or 2-D, got %d-D %s", OP, (int)ind->ndim,
                       mf_shape_str(ind, buf, sizeof buf));
    if (tok->dims[0] != ind->dims[0])
        return mf_fail(TILING, "%s: tokens dim0 (%lld) and indices dim0 (%lld) must be equal", OP,
                       (long long)tok->dims[0], (long long)ind->dims[0]);
    const int64_t N = ind->dims[0], K = ind->ndim == 1 ? 1 : ind->dims[1];
    if (K > MF_TP_MAX_TOPK)
        return mf_fail(TILING, "%s: indices dim1 (topK %lld) must be <= %d (MOEFR_SOC=ascend910b)", OP, (long long)K,
                       MF_TP_MAX_TOPK);
    int64_t T;
    if (!mf_mul_ok(N, K, &T) || T >= MF_TP_SORT_LIMIT)
        return mf_fail(TILING, "%s: indices has %lld*%lld elements; it must have fewer than %d", OP, (long long)N,
                       (long long)K, MF_TP_SORT_LIMIT);
    int64_t A = numOut <= 0 ? numOut + T : numOut;
    A = A < T ? A : T;
    A = A > 0 ? A : 0;
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
    p->N = N; p->K = K; p->T = T; p->H = cols; p->A = A;
    p->key_hi = MF_SORT_KEY_MAX;
    return ACLNN_SUCCESS;
}

static aclnnStatus tp_run(const void *plan, const aclTensor *const *t, void *workspace);

aclnnStatus aclnnMoeTokenPermuteGetWorkspaceSize(const aclTensor *tokens, const aclTensor *indices,
                                                 int64_t numOutTokens, bool paddedMode,
                                                 const aclTensor *permuteTokensOut, const aclTensor *sortedIndicesOut,
                                                 uint64_t *workspaceSize, aclOpExecutor **executor) {
    const bool a2 = mf_soc_strict();
    /* Ascend 950: CANN refuses paddedMode before it looks at anything else */
    if (!a2 && paddedMode) return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: paddedMode must be false", OP);
    const aclTensor *t[MF_IR_NT] = {tokens, indices, permuteTokensOut, sortedIndicesOut, NULL, NULL};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    tp_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.a2 = a2;
    if (mf_op_outputs_empty(&DEF, t)) { /* CANN's engine: nothing to do, no tiling */
        pl.r.empty = true;
        return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, tp_run, 0, workspaceSize, executor);
    }
    if (a2) TRY(check_a2(t, numOutTokens, paddedMode, &pl.r));
    else TRY(mf_ir_check_shapes(&DEF, t, numOutTokens, 0, 0, 0, 0, false, &pl.r));
    TRY(mf_tp_layout(OP, tokens, &pl.r, &pl.pack));
    return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, tp_run, mf_workspace_with_slack(pl.r.ws_bytes), workspaceSize,
                         executor);
}

/* A2/A3 ids: [0, 16777215) sort as themselves; the dtype's minimum first and
 * its maximum last (the documented single points), as keys 0 and 2^24. */
aclnnStatus mf_tp_read_keys_a2(const char *op, const aclTensor *ind, int64_t N, int64_t K, uint32_t *key,
                               int64_t *max_key) {
    const mf_small v = mf_small_of(ind);
    const bool wide = ind->dtype == ACL_INT64;
    const int64_t lo = wide ? INT64_MIN : INT32_MIN, hi = wide ? INT64_MAX : INT32_MAX;
    uint32_t mx = 0;
    for (int64_t r = 0; r < N; r++)
        for (int64_t k = 0; k < K; k++) {
            const int64_t e = mf_small_index(&v, r, k);
            uint32_t kv;
            if (e >= 0 && e < MF_TP_SORT_LIMIT) kv = (uint32_t)e + 1;
            else if (e == lo) kv = 0;
            else if (e == hi) kv = MF_TP_SORT_LIMIT + 1;
            else
                return mf_fail(ACLNN_ERR_PARAM_INVALID,
                               "%s: indices[%lld][%lld] = %lld is outside [0, %d) and not the %s minimum or maximum "
                               "(MOEFR_SOC=ascend910b: CANN's sort is undefined there)",
                               op, (long long)r, (long long)k, (long long)e, MF_TP_SORT_LIMIT, wide ? "INT64" : "INT32");
            key[r * K + k] = kv;
            if (kv > mx) mx = kv;
        }
    *max_key = mx;
    return ACLNN_SUCCESS;
}

static aclnnStatus tp_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const tp_plan *p = plan;
    if (p->r.empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OP));
    char *ws = mf_align64(workspace);
    uint32_t *key = (uint32_t *)(ws + p->r.ws_key);
    int64_t max_key = 0;
    /* every id is checked before anything is written */
    if (p->a2) TRY(mf_tp_read_keys_a2(OP, t[MF_IR_EIDX], p->r.N, p->r.K, key, &max_key));
    else TRY(mf_read_expert_keys(OP, "indices", t[MF_IR_EIDX], p->r.N, p->r.K, MF_SORT_KEY_MAX, key, NULL, &max_key));
    const mf_rows xv = mf_tp_token_rows(t[MF_IR_X], &p->r, p->pack, ws);
    mf_route_sorted(&p->r, max_key, NULL, &xv, mf_tensor_base(t[MF_IR_EX]), (int32_t *)mf_tensor_base(t[MF_IR_ROW]),
                    NULL, NULL, ws);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeTokenPermute(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                 aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_PERMUTE, OP, workspace, workspaceSize, stream);
}

/* ---- aclnnMoeTokenPermuteGrad ---- */

static const char OPG[] = "aclnnMoeTokenPermuteGrad";
static const char *const GNAMES[MF_IRG_NT] = {"permutedOutputGrad", "sortedIndices", "out"};
static const unsigned GFLAGS[MF_IRG_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED | MF_T_CONTIG};
/* moe_init_routing_v2_grad_def.cpp (Ascend 950) and moe_token_permute_grad_def.cpp
 * (A2/A3) have the same columns. */
static const mf_dtcol GCOLS[] = {{ACL_BF16, I32, ACL_BF16}, {ACL_FLOAT16, I32, ACL_FLOAT16}, {ACL_FLOAT, I32, ACL_FLOAT}};
static const mf_op_def GDEF = {OPG, MF_OP_TOKEN_PERMUTE_GRAD, 2, 1, GNAMES, GFLAGS, GCOLS, 3, GCOLS, 3};

/* A2/A3: CANN's tiling (moe_token_permute_grad_tiling.cpp) checks nothing;
 * it takes M, H from permutedOutputGrad, T from sortedIndices dim0, tokens =
 * T / topK (topK -1 meaning 1) and writes tokens rows of H. moefr checks that
 * those reads and writes fit (docs/CANN_COMPAT.md). */
static aclnnStatus check_grad_a2(const aclTensor *const *t, int64_t topK, bool padded, mf_route_grad_plan *p) {
    const aclTensor *g = t[MF_IRG_G], *idx = t[MF_IRG_IDX], *out = t[MF_IRG_OUT];
    if (padded) return mf_fail(TILING, "%s: paddedMode must be false (CANN supports only false)", OPG);
    if (topK == -1) topK = 1;
    if (topK < 1 || topK > MF_TP_MAX_TOPK)
        return mf_fail(TILING, "%s: numTopk must be in [1, %d] (or -1 for 1), got %lld (MOEFR_SOC=ascend910b)", OPG,
                       MF_TP_MAX_TOPK, (long long)topK);
    TRY(mf_check_rank(OPG, TILING, "permutedOutputGrad", g, 2));
    TRY(mf_check_rank(OPG, TILING, "sortedIndices", idx, 1));
    TRY(mf_check_rank(OPG, TILING, "out", out, 2));
    const int64_t R = idx->dims[0] / topK;
    TRY(mf_check_dim(OPG, TILING, "out", out, 0, R));
    TRY(mf_check_dim(OPG, TILING, "out", out, 1, g->dims[1]));
    p->mode = 0;
    p->N = R;
    p->K = topK;
    p->H = g->dims[1];
    p->D0 = g->dims[0];
    p->keep_below = g->dims[0]; /* the rows numOutTokens cut: absent terms */
    mf_route_grad_strict(p);
    return ACLNN_SUCCESS;
}

static aclnnStatus tpg_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const mf_route_grad_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OPG));
    return mf_route_grad_run(OPG, "sortedIndices", p, t[MF_IRG_G], t[MF_IRG_IDX], mf_tensor_base(t[MF_IRG_OUT]),
                             workspace);
}

aclnnStatus aclnnMoeTokenPermuteGradGetWorkspaceSize(const aclTensor *permutedOutputGrad,
                                                     const aclTensor *sortedIndices, int64_t numTopk, bool paddedMode,
                                                     const aclTensor *out, uint64_t *workspaceSize,
                                                     aclOpExecutor **executor) {
    const bool a2 = mf_soc_strict();
    int64_t active = 0;
    if (!a2) { /* Ascend 950's translation, in CANN's order */
        if (paddedMode) return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: paddedMode must be false", OPG);
        if (permutedOutputGrad == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: permutedOutputGrad is NULL", OPG);
        TRY(mf_check_live(OPG, "permutedOutputGrad", permutedOutputGrad));
        if (permutedOutputGrad->ndim == 0)
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: permutedOutputGrad must have at least 1 dim, got 0-D", OPG);
        active = permutedOutputGrad->dims[0];
    }
    const aclTensor *t[MF_IRG_NT] = {permutedOutputGrad, sortedIndices, out};
    TRY(mf_op_check(&GDEF, t, workspaceSize, executor));
    mf_route_grad_plan pl;
    memset(&pl, 0, sizeof pl);
    if (mf_op_outputs_empty(&GDEF, t)) {
        pl.empty = true;
        return mf_op_publish(&GDEF, t, 0, &pl, sizeof pl, tpg_run, 0, workspaceSize, executor);
    }
    if (a2) TRY(check_grad_a2(t, numTopk, paddedMode, &pl));
    else TRY(mf_irg_check_shapes(&GDEF, t, numTopk, 0, active, &pl));
    pl.dtype = out->dtype;
    pl.es = mf_dtype_size(out->dtype);
    return mf_op_publish(&GDEF, t, 0, &pl, sizeof pl, tpg_run, mf_route_grad_workspace(&pl), workspaceSize, executor);
}

aclnnStatus aclnnMoeTokenPermuteGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                     aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_PERMUTE_GRAD, OPG, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"numOutTokens", MF_ATTR_INT64, -64, 64}, {"paddedMode", MF_ATTR_BOOL, 0, 1}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeTokenPermuteGetWorkspaceSize(t[0], t[1], a[0].i, a[1].i != 0, t[2], t[3], ws, e);
}
/* The public signature: DEF's first two outputs (the count slots are InitRoutingV2's). */
static const mf_op_def SIG = {OP, MF_OP_TOKEN_PERMUTE, 2, 2, NAMES, FLAGS, COLS_950, 6, COLS_A2, 8};
const mf_op_entry mf_entry_token_permute = {&SIG, ATTRS, 2, gws_thunk, aclnnMoeTokenPermute};
static const mf_attr_desc GATTRS[] = {{"numTopk", MF_ATTR_INT64, 1, 8}, {"paddedMode", MF_ATTR_BOOL, 0, 1}};
static aclnnStatus gws_thunk_grad(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeTokenPermuteGradGetWorkspaceSize(t[0], t[1], a[0].i, a[1].i != 0, t[2], ws, e);
}
const mf_op_entry mf_entry_token_permute_grad = {&GDEF, GATTRS, 2, gws_thunk_grad, aclnnMoeTokenPermuteGrad};
