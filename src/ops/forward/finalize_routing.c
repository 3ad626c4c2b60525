/* finalize_routing.c - aclnnMoeFinalizeRouting (the first version), a front
 * end of the forward: its own definition table and CANN's tiling checks in
 * the order of moe_finalize_routing_tiling.cpp (CheckParamsShape), each cited
 * in docs/CANN_COMPAT.md; then the forward's shared plan (mf_fwd_publish) in
 * dropPadMode 0 (column layout), and the forward's phase 2 (run.c). */
#include "aclnnop/aclnn_moe_finalize_routing.h"
#include "ops/forward/forward.h"

static const char OP[] = "aclnnMoeFinalizeRouting";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY

enum { V_X, V_X1, V_X2, V_BIAS, V_SCALES, V_IDX, V_EIDX, V_OUT, V_NT };
static const char *const NAMES[V_NT] = {"expandedX", "x1",           "x2Optional",        "bias",
                                        "scales",    "expandedRowIdx", "expandedExpertIdx", "out"};
static const unsigned FLAGS[V_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED,
                                     MF_T_REQUIRED, MF_T_REQUIRED | MF_T_CONTIG};
/* moe_finalize_routing_def.cpp: (expanded_x, x1, x2, bias, scales,
 * expanded_row_idx, expanded_expert_idx | y), ascend910b and ascend910_93
 * only; moefr applies that table under every MOEFR_SOC. */
#define I32 ACL_INT32
#define COL(T) {T, T, T, T, T, I32, I32, T}
static const mf_dtcol COLS[] = {COL(ACL_FLOAT16), COL(ACL_FLOAT), COL(ACL_BF16)};
#undef COL
static const mf_op_def DEF = {OP, MF_OP_FINALIZE_ROUTING, 7, 1, NAMES, FLAGS, COLS, 3, COLS, 3};
/* the executor slot of each forward role */
static const int8_t AT[F_NT] = {[F_X] = V_X,           [F_IDX] = V_IDX,   [F_X1] = V_X1,  [F_X2] = V_X2,
                                [F_BIAS] = V_BIAS,     [F_SCALES] = V_SCALES, [F_EIDX] = V_EIDX, [F_OUT] = V_OUT};

static aclnnStatus need_rank(const char *name, const aclTensor *t, int rank) {
    return mf_check_rank(OP, TILING, name, t, rank);
}
static aclnnStatus need_dim(const char *name, const aclTensor *t, int dim, int64_t want) {
    return mf_check_dim(OP, TILING, name, t, dim, want);
}

/* CANN's tiling, in its order. Fills R, K, H, N, D0, E of p. */
static aclnnStatus check_shapes(const aclTensor *const *t, fwd_plan *p) {
    const aclTensor *x = t[V_X], *x1 = t[V_X1], *x2 = t[V_X2], *bias = t[V_BIAS], *sc = t[V_SCALES],
                    *idx = t[V_IDX], *ei = t[V_EIDX], *out = t[V_OUT];
    TRY(need_rank("expandedX", x, 2));
    TRY(need_rank("x1", x1, 2));
    if (x2) TRY(need_rank("x2Optional", x2, 2));
    TRY(need_rank("bias", bias, 2));
    TRY(need_rank("scales", sc, 2));
    TRY(need_rank("expandedRowIdx", idx, 1));
    TRY(need_rank("expandedExpertIdx", ei, 2));
    TRY(need_rank("out", out, 2));
    /* x1 fixes R (dim0) and H (dim1) */
    const int64_t R = x1->dims[0], H = x1->dims[1];
    TRY(need_dim("scales", sc, 0, R));
    TRY(need_dim("expandedExpertIdx", ei, 0, R));
    TRY(need_dim("out", out, 0, R));
    if (x2) TRY(need_dim("x2Optional", x2, 0, R));
    TRY(need_dim("expandedX", x, 1, H));
    TRY(need_dim("bias", bias, 1, H));
    TRY(need_dim("out", out, 1, H));
    if (x2) TRY(need_dim("x2Optional", x2, 1, H));
    const int64_t K = sc->dims[1];
    TRY(need_dim("expandedExpertIdx", ei, 1, K));
    const int64_t D0 = x->dims[0];
    TRY(need_dim("expandedRowIdx", idx, 0, D0));
    if (bias->dims[0] == 0) return mf_fail(TILING, "%s: bias dim0 (E) must not be 0", OP);
    if (K == 0) return mf_fail(TILING, "%s: scales dim1 (K) must not be 0", OP);
    /* CANN reads expandedRowIdx[k*R + r] without comparing its length with
     * R*K (docs/CANN_COMPAT.md): a shorter one would be read out of bounds. */
    int64_t N;
    if (!mf_mul_ok(R, K, &N) || D0 < N)
        return mf_fail(TILING, "%s: expandedRowIdx dim0 (= expandedX dim0) must be at least R*K = %lld*%lld, got %lld",
                       OP, (long long)R, (long long)K, (long long)D0);
    p->R = R; p->K = K; p->H = H; p->N = N; p->D0 = D0; p->E = bias->dims[0];
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeFinalizeRoutingGetWorkspaceSize(const aclTensor *expandedX, const aclTensor *x1,
                                                    const aclTensor *x2Optional, const aclTensor *bias,
                                                    const aclTensor *scales, const aclTensor *expandedRowIdx,
                                                    const aclTensor *expandedExpertIdx, const aclTensor *out,
                                                    uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *t[V_NT] = {expandedX, x1, x2Optional, bias, scales, expandedRowIdx, expandedExpertIdx, out};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    if (mf_op_outputs_empty(&DEF, t)) /* CANN's engine: nothing to do, no tiling */
        return mf_fwd_publish_empty(&DEF, AT, t, workspaceSize, executor);
    fwd_plan pl;
    memset(&pl, 0, sizeof pl);
    TRY(check_shapes(t, &pl));
    /* dropPadMode 0; A2/A3's kernel reads every value, so none is a dropped slot */
    return mf_fwd_publish(&DEF, AT, t, 0, false, &pl, workspaceSize, executor);
}

aclnnStatus aclnnMoeFinalizeRouting(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_FINALIZE_ROUTING, OP, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    (void)a;
    return aclnnMoeFinalizeRoutingGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], ws, e);
}
const mf_op_entry mf_entry_finalize_routing = {&DEF, NULL, 0, gws_thunk, aclnnMoeFinalizeRouting};
