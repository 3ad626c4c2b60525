/* plan.c - phase 1 of aclnnMoeFinalizeRoutingV2: validate every descriptor in
 * the order of CANN's status classes (161001, 161002, 561103), then record a
 * plan and the workspace it needs. Nothing is read from tensor data here. */
#include "ops/forward/forward.h"

#include "aclnnop/aclnn_moe_finalize_routing_v2.h"

static const char OP[] = "aclnnMoeFinalizeRoutingV2";
/* CANN documents 561103 for this operator's shape and companion errors. */
#define SHAPE ACLNN_ERR_INNER_NULLPTR
#define TRY(call)                                   \
    do {                                            \
        aclnnStatus rc_ = (call);                   \
        if (rc_ != ACLNN_SUCCESS) return rc_;       \
    } while (0)

enum { NT = 7 };
static const char *const NAMES[NT] = {"expandedX",         "expandedRowIdx", "x1Optional", "x2Optional",
                                      "biasOptional",      "scalesOptional", "expertIdxOptional"};

typedef struct args {
    const aclTensor *x, *idx, *x1, *x2, *bias, *scales, *eidx, *out;
} args;

static aclnnStatus check_pointers(const args *a, const uint64_t *ws, aclOpExecutor **ex) {
    if (a->x == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: expandedX is NULL", OP);
    if (a->idx == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: expandedRowIdx is NULL", OP);
    if (a->out == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: out is NULL", OP);
    if (ws == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspaceSize is NULL", OP);
    if (ex == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is NULL", OP);
    const aclTensor *t[NT] = {a->x, a->idx, a->x1, a->x2, a->bias, a->scales, a->eidx};
    for (int i = 0; i < NT; i++) TRY(mf_check_live(OP, NAMES[i], t[i]));
    TRY(mf_check_live(OP, "out", a->out));
    for (int i = 0; i < NT; i++) TRY(mf_check_data(OP, NAMES[i], t[i]));
    TRY(mf_check_data(OP, "out", a->out));
    return ACLNN_SUCCESS;
}

static aclnnStatus check_dtypes(const args *a) {
    TRY(mf_check_float_dtype(OP, "expandedX", a->x));
    TRY(mf_check_dtype_is(OP, "expandedRowIdx", a->idx, ACL_INT32));
    TRY(mf_check_same_dtype(OP, "x1Optional", a->x1, "expandedX", a->x));
    TRY(mf_check_same_dtype(OP, "x2Optional", a->x2, "expandedX", a->x));
    TRY(mf_check_same_dtype(OP, "biasOptional", a->bias, "expandedX", a->x));
    TRY(mf_check_float_dtype(OP, "scalesOptional", a->scales));
    /* A2/A3: scales share the data dtype, except fp32 scales with bf16 data. */
    if (a->scales && mf_soc_strict() && a->scales->dtype != a->x->dtype &&
        !(a->scales->dtype == ACL_FLOAT && a->x->dtype == ACL_BF16))
        return mf_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: scalesOptional dtype must equal expandedX dtype %s, or be FLOAT with BFLOAT16 data "
                       "(MOEFR_SOC=ascend910b), got %s",
                       OP, mf_dtype_name(a->x->dtype), mf_dtype_name(a->scales->dtype));
    TRY(mf_check_dtype_is(OP, "expertIdxOptional", a->eidx, ACL_INT32));
    TRY(mf_check_same_dtype(OP, "out", a->out, "expandedX", a->x));
    const aclTensor *t[NT] = {a->x, a->idx, a->x1, a->x2, a->bias, a->scales, a->eidx};
    for (int i = 0; i < NT; i++) TRY(mf_check_nd(OP, NAMES[i], t[i]));
    TRY(mf_check_nd(OP, "out", a->out));
    TRY(mf_check_contiguous(OP, "out", a->out));
    return ACLNN_SUCCESS;
}

/* Shapes: fills R, K, H, N, E, idx_hi of p. */
static aclnnStatus check_shapes(const args *a, int64_t mode, fwd_plan *p) {
    if (a->x2 && !a->x1) return mf_fail(SHAPE, "%s: x2Optional is given, so x1Optional must be too", OP);
    if (a->bias && !a->eidx)
        return mf_fail(SHAPE, "%s: biasOptional is given, so expertIdxOptional must be too", OP);
    if (mode < 0 || mode > 3)
        return mf_fail(SHAPE, "%s: dropPadMode must be 0, 1, 2 or 3, got %lld", OP, (long long)mode);
    const bool drop_pad = mode == 1 || mode == 3;

    TRY(mf_check_rank(OP, SHAPE, "expandedX", a->x, drop_pad ? 3 : 2));
    TRY(mf_check_rank(OP, SHAPE, "expandedRowIdx", a->idx, 1));
    TRY(mf_check_rank(OP, SHAPE, "x1Optional", a->x1, 2));
    TRY(mf_check_rank(OP, SHAPE, "x2Optional", a->x2, 2));
    TRY(mf_check_rank(OP, SHAPE, "biasOptional", a->bias, 2));
    TRY(mf_check_rank(OP, SHAPE, "scalesOptional", a->scales, 2));
    TRY(mf_check_rank(OP, SHAPE, "expertIdxOptional", a->eidx, 2));
    TRY(mf_check_rank(OP, SHAPE, "out", a->out, 2));

    /* out is required and (R, H): it fixes R and H for everything else. */
    const int64_t R = a->out->dims[0], H = a->out->dims[1];
    /* Without scales there is one slot per token (scale 1), as in the backward. */
    int64_t K = 1;
    if (a->scales) {
        TRY(mf_check_dim(OP, SHAPE, "scalesOptional", a->scales, 0, R));
        K = a->scales->dims[1];
    }
    int64_t N;
    if (!mf_mul_ok(R, K, &N)) return mf_fail(SHAPE, "%s: R*K overflows int64", OP);
    if (a->idx->dims[0] != N) {
        if (a->scales)
            return mf_fail(SHAPE, "%s: expandedRowIdx dim0 must be R*K = %lld*%lld = %lld, got %lld", OP,
                           (long long)R, (long long)K, (long long)N, (long long)a->idx->dims[0]);
        return mf_fail(SHAPE, "%s: without scalesOptional K is 1, so expandedRowIdx dim0 must be R = %lld, got %lld",
                       OP, (long long)R, (long long)a->idx->dims[0]);
    }
    const aclTensor *rh[] = {a->x1, a->x2};
    const char *rh_names[] = {"x1Optional", "x2Optional"};
    for (int i = 0; i < 2; i++) {
        TRY(mf_check_dim(OP, SHAPE, rh_names[i], rh[i], 0, R));
        TRY(mf_check_dim(OP, SHAPE, rh_names[i], rh[i], 1, H));
    }
    TRY(mf_check_dim(OP, SHAPE, "expertIdxOptional", a->eidx, 0, R));
    TRY(mf_check_dim(OP, SHAPE, "expertIdxOptional", a->eidx, 1, K));

    int64_t hi = N;
    if (drop_pad) {
        const int64_t E = a->x->dims[0], C = a->x->dims[1];
        if (E <= 0 || C <= 0)
            return mf_fail(SHAPE, "%s: dropPadMode %lld needs expandedX (E, C, H) with E > 0 and C > 0, got E = %lld, C = %lld",
                           OP, (long long)mode, (long long)E, (long long)C);
        TRY(mf_check_dim(OP, SHAPE, "expandedX", a->x, 2, H));
        if (!mf_mul_ok(E, C, &hi)) return mf_fail(SHAPE, "%s: E*C overflows int64", OP);
    } else {
        TRY(mf_check_dim(OP, SHAPE, "expandedX", a->x, 0, N));
        TRY(mf_check_dim(OP, SHAPE, "expandedX", a->x, 1, H));
    }
    int64_t E = 0;
    if (a->bias) {
        E = a->bias->dims[0];
        if (E <= 0) return mf_fail(SHAPE, "%s: biasOptional dim0 must be > 0, got %lld", OP, (long long)E);
        if (drop_pad) TRY(mf_check_dim(OP, SHAPE, "biasOptional", a->bias, 0, a->x->dims[0]));
        TRY(mf_check_dim(OP, SHAPE, "biasOptional", a->bias, 1, H));
    }
    p->R = R; p->K = K; p->H = H; p->N = N; p->E = E; p->idx_hi = hi;
    return ACLNN_SUCCESS;
}

static uint64_t carve(uint64_t *used, uint64_t bytes) {
    uint64_t at = *used;
    *used += (bytes + 63) & ~(uint64_t)63;
    return at;
}

aclnnStatus aclnnMoeFinalizeRoutingV2GetWorkspaceSize(const aclTensor *expandedX, const aclTensor *expandedRowIdx,
                                                      const aclTensor *x1Optional, const aclTensor *x2Optional,
                                                      const aclTensor *biasOptional, const aclTensor *scalesOptional,
                                                      const aclTensor *expertIdxOptional, int64_t dropPadMode,
                                                      const aclTensor *out, uint64_t *workspaceSize,
                                                      aclOpExecutor **executor) {
    args a = {expandedX, expandedRowIdx, x1Optional, x2Optional, biasOptional, scalesOptional,
              expertIdxOptional, out};
    TRY(check_pointers(&a, workspaceSize, executor));
    TRY(check_dtypes(&a));
    fwd_plan pl;
    memset(&pl, 0, sizeof pl);
    TRY(check_shapes(&a, dropPadMode, &pl));

    pl.mode = (int)dropPadMode;
    pl.drop_pad = dropPadMode == 1 || dropPadMode == 3;
    pl.row_laid = dropPadMode >= 2;
    pl.has_x1 = x1Optional != NULL;
    pl.has_x2 = x2Optional != NULL;
    pl.has_bias = biasOptional != NULL;
    pl.has_scales = scalesOptional != NULL;
    pl.dtype = expandedX->dtype;
    pl.dt = mf_dt_of(expandedX->dtype);
    pl.es = mf_dtype_size(expandedX->dtype);
    pl.x = mf_rows_of(expandedX);
    if (pl.has_x1) pl.x1 = mf_rows_of(x1Optional);
    if (pl.has_x2) pl.x2 = mf_rows_of(x2Optional);
    if (pl.has_bias) pl.bias = mf_rows_of(biasOptional);
    pl.idx = mf_small_of(expandedRowIdx);
    if (pl.has_scales) pl.scales = mf_small_of(scalesOptional);
    if (expertIdxOptional) pl.eidx = mf_small_of(expertIdxOptional);
    pl.out = mf_tensor_base(out);

    /* Workspace: the index bitmap (repeat check), then packed copies of the
     * inputs whose elements are not adjacent (kernels read unit-stride rows). */
    uint64_t used = 0;
    pl.bits = pl.idx_hi < ((int64_t)1 << 31) ? pl.idx_hi : ((int64_t)1 << 31); /* int32 reach */
    if (pl.N > 0) pl.ws_bitmap = carve(&used, mf_bitmap_bytes(pl.bits));
    const int64_t H = pl.H;
    const bool work = pl.R > 0 && H > 0;
    pl.pack_x = work && pl.N > 0 && !mf_rows_dense(&pl.x, H, pl.es);
    pl.pack_x1 = work && pl.has_x1 && !mf_rows_dense(&pl.x1, H, pl.es);
    pl.pack_x2 = work && pl.has_x2 && !mf_rows_dense(&pl.x2, H, pl.es);
    pl.pack_bias = work && pl.has_bias && pl.N > 0 && !mf_rows_dense(&pl.bias, H, pl.es);
    const aclTensor *packed[] = {pl.pack_x ? expandedX : NULL, pl.pack_x1 ? x1Optional : NULL,
                                 pl.pack_x2 ? x2Optional : NULL, pl.pack_bias ? biasOptional : NULL};
    uint64_t *offs[] = {&pl.ws_x, &pl.ws_x1, &pl.ws_x2, &pl.ws_bias};
    for (int i = 0; i < 4; i++) {
        int64_t bytes;
        if (packed[i] == NULL) continue;
        if (!mf_mul_ok(packed[i]->numel, (int64_t)pl.es, &bytes) || bytes > (INT64_MAX >> 2))
            return mf_fail(SHAPE, "%s: workspace to pack a strided input overflows", OP);
        *offs[i] = carve(&used, (uint64_t)bytes);
    }
    pl.ws_bytes = used;

    aclOpExecutor *e = mf_executor_new(MF_OP_FORWARD, sizeof pl, mf_fwd_run);
    if (e == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    memcpy(mf_executor_plan(e), &pl, sizeof pl);
    e->workspace_size = mf_workspace_with_slack(used);
    TRY(mf_executor_publish(e, executor));
    *workspaceSize = e->workspace_size;
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeFinalizeRoutingV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                      aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_FORWARD, OP, workspace, workspaceSize, stream);
}
