/* opdef.c - the shared phase-1 checker over an operator's definition table. */
#include <stdio.h>
#include <string.h>

#include "ops/opdef.h"

/* the most dtype columns a table may have (DequantSwigluQuant's Ascend 950 table has 72) */
#define MF_MAX_COLS 128

static bool col_fits(const int8_t *col, int i, const aclTensor *t) {
    return t == NULL || col[i] == MF_DT_ANY || col[i] == (int)t->dtype;
}

/* "FLOAT16 or BFLOAT16": the dtypes tensor i may have in the columns left. */
static void allowed(char *buf, size_t n, const mf_dtcol *cols, const bool *alive, int ncols, int i) {
    size_t used = 0;
    buf[0] = '\0';
    for (int c = 0; c < ncols; c++) {
        if (!alive[c]) continue;
        bool dup = false;
        for (int b = 0; b < c && !dup; b++) dup = alive[b] && cols[b][i] == cols[c][i];
        if (dup) continue;
        int w = snprintf(buf + used, n - used, "%s%s", used ? " or " : "", mf_dtype_name(cols[c][i]));
        if (w < 0 || (size_t)w >= n - used) break;
        used += (size_t)w;
    }
}

/* The first tensor no column left by the ones before it allows, or -1. */
static int first_reject(const mf_dtcol *cols, int ncols, const aclTensor *const *t, int nt) {
    bool alive[MF_MAX_COLS];
    for (int c = 0; c < ncols && c < MF_MAX_COLS; c++) alive[c] = true;
    for (int i = 0; i < nt; i++) {
        if (t[i] == NULL) continue;
        int left = 0;
        for (int c = 0; c < ncols; c++) left += alive[c] = alive[c] && col_fits(cols[c], i, t[i]);
        if (left == 0) return i;
    }
    return -1;
}

static aclnnStatus check_dtypes(const mf_op_def *def, const aclTensor *const *t) {
    const bool a2 = mf_soc_strict() && def->cols_a2 != NULL;
    const mf_dtcol *cols = a2 ? def->cols_a2 : def->cols;
    const int ncols = a2 ? def->ncols_a2 : def->ncols, nt = def->n_in + def->n_out;
    bool alive[MF_MAX_COLS];
    for (int c = 0; c < ncols && c < MF_MAX_COLS; c++) alive[c] = true;
    /* Tensors in signature order narrow the columns; the first one that
     * leaves none is the one named, with what the others allowed it. */
    for (int i = 0; i < nt; i++) {
        if (t[i] == NULL) continue;
        int left = 0;
        for (int c = 0; c < ncols; c++) left += alive[c] && col_fits(cols[c], i, t[i]);
        if (left == 0) {
            char buf[128], why[96] = "";
            allowed(buf, sizeof buf, cols, alive, ncols, i);
            /* the earlier tensor whose dtype ruled this one's out, if one did */
            bool any[MF_MAX_COLS], some = false;
            for (int c = 0; c < ncols; c++) some |= col_fits(cols[c], i, t[i]);
            for (int c = 0; c < ncols; c++) any[c] = true;
            for (int j = 0; some && j < i; j++) {
                if (t[j] == NULL) continue;
                int ok = 0;
                for (int c = 0; c < ncols; c++) {
                    any[c] = any[c] && col_fits(cols[c], j, t[j]);
                    ok += any[c] && col_fits(cols[c], i, t[i]);
                }
                if (ok == 0) {
                    snprintf(why, sizeof why, " given %s %s", def->names[j], mf_dtype_name(t[j]->dtype));
                    break;
                }
            }
            /* name the product rule when Ascend 950's table would take it */
            const bool a2_only = a2 && first_reject(def->cols, def->ncols, t, nt) != i;
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must be %s%s%s, got %s", def->name, def->names[i],
                           buf, why, a2_only ? " (MOEFR_SOC=ascend910b)" : "", mf_dtype_name(t[i]->dtype));
        }
        for (int c = 0; c < ncols; c++) alive[c] = alive[c] && col_fits(cols[c], i, t[i]);
    }
    return ACLNN_SUCCESS;
}

aclnnStatus mf_op_check(const mf_op_def *def, const aclTensor *const *t, const uint64_t *workspaceSize,
                        aclOpExecutor *const *executor) {
    const int nt = def->n_in + def->n_out;
    for (int i = 0; i < nt; i++)
        if (t[i] == NULL && (def->flags[i] & MF_T_REQUIRED))
            return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", def->name, def->names[i]);
    if (workspaceSize == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspaceSize is NULL", def->name);
    if (executor == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is NULL", def->name);
    for (int i = 0; i < nt; i++)
        if (t[i] != NULL && !mf_tensor_live(t[i]))
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s (%p) is not a live aclTensor", def->name, def->names[i],
                           (const void *)t[i]);
    aclnnStatus rc = check_dtypes(def, t);
    if (rc != ACLNN_SUCCESS) return rc;
    for (int i = 0; i < nt; i++)
        if (t[i] != NULL && t[i]->format != ACL_FORMAT_ND)
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s format must be ND, got %s (%d)", def->name,
                           def->names[i], mf_format_name(t[i]->format), (int)t[i]->format);
    for (int i = 0; i < nt; i++)
        if (t[i] != NULL && (def->flags[i] & MF_T_CONTIG) && !mf_tensor_contiguous(t[i]))
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be contiguous (an output)", def->name,
                           def->names[i]);
    return ACLNN_SUCCESS;
}

bool mf_op_outputs_empty(const mf_op_def *def, const aclTensor *const *t) {
    for (int i = def->n_in; i < def->n_in + def->n_out; i++)
        if (t[i] != NULL && t[i]->numel > 0) return false;
    return true;
}

aclnnStatus mf_op_publish(const mf_op_def *def, const aclTensor *const *t, unsigned unused, const void *plan,
                          size_t plan_size, mf_run_fn run, uint64_t workspace, uint64_t *workspaceSize,
                          aclOpExecutor **executor) {
    aclOpExecutor *e = mf_executor_new(def->kind, plan_size, run, def->n_in, def->n_out, t, def->names);
    if (e == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    e->unused = unused;
    memcpy(mf_executor_plan(e), plan, plan_size);
    e->workspace_size = workspace;
    aclnnStatus rc = mf_executor_publish(e, executor);
    if (rc != ACLNN_SUCCESS) return rc;
    *workspaceSize = workspace;
    return ACLNN_SUCCESS;
}

/* ---- the registry: every operator's entry (each defined at the end of its operator's source file) ---- */
#define ENTRIES(X)                                                                                    \
    X(finalize_routing_v2_grad) X(finalize_routing_v2) X(init_routing_v2) X(init_routing_v2_grad)       \
    X(compute_expert_tokens) X(token_permute) X(token_permute_grad) X(init_routing) X(finalize_routing) \
    X(token_unpermute) X(token_unpermute_grad) X(gating_top_k_softmax) X(gating_top_k_softmax_v2)      \
    X(swiglu) X(swiglu_grad) X(grouped_matmul) X(grouped_matmul_v2) X(grouped_matmul_v3) X(grouped_matmul_v4)   \
    X(grouped_matmul_v5) X(re_routing) X(init_routing_v3) X(init_routing_quant) X(init_routing_quant_v2) \
    X(token_permute_with_routing_map) X(token_permute_with_routing_map_grad) \
    X(token_unpermute_with_routing_map) X(token_unpermute_with_routing_map_grad) X(token_permute_with_ep) \
    X(token_permute_with_ep_grad) X(token_unpermute_with_ep) X(token_unpermute_with_ep_grad) X(gating_top_k) \
    X(fused_topk) X(grouped_matmul_add) X(grouped_matmul_add_v2) X(dynamic_quant) X(dynamic_quant_v2) \
    X(dynamic_quant_v3) X(dynamic_quant_v4) X(grouped_matmul_swiglu_quant) X(grouped_matmul_swiglu_quant_weight_nz) \
    X(grouped_matmul_finalize_routing_weight_nz) X(grouped_matmul_finalize_routing_weight_nz_v2) \
    X(trans_quant_param_v2) X(trans_quant_param_v3) \
    X(dequant_swiglu_quant) X(dequant_swiglu_quant_v2)
#define DECL(n) extern const mf_op_entry mf_entry_##n;
ENTRIES(DECL)
#undef DECL
#define REF(n) &mf_entry_##n,
static const mf_op_entry *const ALL[] = {ENTRIES(REF)};
#undef REF

const mf_op_entry *const *mf_op_entries(int *n) {
    *n = (int)(sizeof ALL / sizeof ALL[0]);
    return ALL;
}

const mf_op_entry *mf_op_entry_of(mf_op_kind kind) {
    for (size_t i = 0; i < sizeof ALL / sizeof ALL[0]; i++)
        if (ALL[i]->sig->kind == kind) return ALL[i];
    return NULL;
}
