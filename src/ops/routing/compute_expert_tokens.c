/* compute_expert_tokens.c - aclnnMoeComputeExpertTokens, both phases.
 * Phase 1: the definition table (opdef.c), then the checks of
 * moe_compute_expert_tokens_tiling.cpp (CheckParamsShape, then the 2^24 and
 * 2048 bounds). Phase 2: one pass that checks order and sign, then the counts.
 * Ids at or past numExperts are not counted (out[e] counts ids <= e only), as
 * CANN's kernels and torch_npu's golden give them; negative ids and unsorted
 * input are 161002 (docs/CANN_COMPAT.md). */
#include "aclnnop/aclnn_moe_compute_expert_tokens.h"
#include "ops/opdef.h"
#include "ops/routing/routing.h"

static const char OP[] = "aclnnMoeComputeExpertTokens";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY

enum { S_SORTED, S_OUT, S_NT };
static const char *const NAMES[S_NT] = {"sortedExperts", "out"};
static const unsigned FLAGS[S_NT] = {MF_T_REQUIRED, MF_T_REQUIRED | MF_T_CONTIG};
/* moe_compute_expert_tokens_def.cpp: (sorted_experts | total_rows_before_expert),
 * INT32 only; the operator exists on ascend910b / ascend910_93 only, so the
 * same column serves both rule sets. */
static const mf_dtcol COLS[] = {{ACL_INT32, ACL_INT32}};
static const mf_op_def DEF = {OP, MF_OP_COMPUTE_EXPERT_TOKENS, 1, 1, NAMES, FLAGS, COLS, 1, COLS, 1};

#define MF_CET_MAX_IDS ((int64_t)1 << 24)
#define MF_CET_MAX_EXPERTS 2048

typedef struct cet_plan {
    bool empty;
    int64_t n, E;
} cet_plan;

static aclnnStatus cet_run(const void *plan, const aclTensor *const *t, void *workspace) {
    (void)workspace;
    const cet_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    const aclTensor *s = t[S_SORTED];
    const char *base = mf_tensor_base(s);
    const int64_t stride = (s->ndim == 1 ? s->strides[0] : 1) * 4;
    int32_t prev = 0;
    for (int64_t i = 0; i < p->n; i++) {
        int32_t v;
        memcpy(&v, base + i * stride, 4);
        /* CANN's small-input kernels would write their scratch before its start */
        if (v < 0)
            return mf_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: sortedExperts[%lld] = %d is negative (ids at or past numExperts = %lld are not "
                           "counted)", OP, (long long)i, (int)v, (long long)p->E);
        if (i > 0 && v < prev)
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: sortedExperts is not ascending: [%lld] = %d after %d", OP,
                           (long long)i, (int)v, (int)prev);
        prev = v;
    }
    /* out[e] = first position whose id exceeds e (ids >= E lie past every such position) */
    int32_t *out = (int32_t *)mf_tensor_base(t[S_OUT]);
    int64_t i = 0;
    for (int64_t e = 0; e < p->E; e++) {
        while (i < p->n) {
            int32_t v;
            memcpy(&v, base + i * stride, 4);
            if (v > e) break;
            i++;
        }
        out[e] = (int32_t)i;
    }
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeComputeExpertTokensGetWorkspaceSize(const aclTensor *sortedExperts, int64_t numExperts,
                                                        const aclTensor *out, uint64_t *workspaceSize,
                                                        aclOpExecutor **executor) {
    const aclTensor *t[S_NT] = {sortedExperts, out};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    cet_plan pl;
    memset(&pl, 0, sizeof pl);
    if (mf_op_outputs_empty(&DEF, t)) {
        pl.empty = true;
        return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, cet_run, 0, workspaceSize, executor);
    }
    TRY(mf_check_rank(OP, TILING, "sortedExperts", sortedExperts, 1));
    TRY(mf_check_rank(OP, TILING, "out", out, 1));
    if (numExperts == 0) return mf_fail(TILING, "%s: numExperts must not be 0", OP);
    if (numExperts < 0) return mf_fail(TILING, "%s: numExperts must be > 0, got %lld", OP, (long long)numExperts);
    if (sortedExperts->dims[0] > MF_CET_MAX_IDS)
        return mf_fail(TILING, "%s: sortedExperts may hold at most 2^24 ids, got %lld", OP,
                       (long long)sortedExperts->dims[0]);
    if (numExperts > MF_CET_MAX_EXPERTS)
        return mf_fail(TILING, "%s: numExperts must be <= 2048, got %lld", OP, (long long)numExperts);
    if (out->dims[0] < numExperts)
        return mf_fail(TILING, "%s: out dim0 must be at least numExperts = %lld, got %lld", OP, (long long)numExperts,
                       (long long)out->dims[0]);
    pl.n = sortedExperts->dims[0];
    pl.E = numExperts;
    return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, cet_run, 0, workspaceSize, executor);
}

aclnnStatus aclnnMoeComputeExpertTokens(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                        aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_COMPUTE_EXPERT_TOKENS, OP, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"numExperts", MF_ATTR_INT64, 1, 16}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeComputeExpertTokensGetWorkspaceSize(t[0], a[0].i, t[1], ws, e);
}
const mf_op_entry mf_entry_compute_expert_tokens = {&DEF, ATTRS, 1, gws_thunk, aclnnMoeComputeExpertTokens};
