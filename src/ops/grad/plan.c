/* plan.c - phase 1 of aclnnMoeFinalizeRoutingV2Grad: validate every descriptor
 * in the spec's order of status classes, then record a plan and the workspace
 * it needs. Nothing is read from tensor data here. */
#include "ops/grad/grad.h"

#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"

static const char OP[] = "aclnnMoeFinalizeRoutingV2Grad";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY(call)                                   \
    do {                                            \
        aclnnStatus rc_ = (call);                   \
        if (rc_ != ACLNN_SUCCESS) return rc_;       \
    } while (0)

typedef struct args {
    const aclTensor *gy, *idx, *x, *scales, *eidx, *bias, *gx, *gs;
} args;

static aclnnStatus check_pointers(const args *a, const uint64_t *ws, aclOpExecutor **ex) {
    static const char *const names[] = {"gradY", "expandedRowIdx", "gradExpandedXOut", "gradScalesOut"};
    const aclTensor *req[] = {a->gy, a->idx, a->gx, a->gs};
    for (int i = 0; i < 4; i++)
        if (req[i] == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", OP, names[i]);
    if (ws == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspaceSize is NULL", OP);
    if (ex == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is NULL", OP);
    static const char *const all[] = {"gradY", "expandedRowIdx", "expandedXOptional", "scalesOptional",
                                      "expertIdxOptional", "biasOptional", "gradExpandedXOut",
                                      "gradScalesOut"};
    const aclTensor *t[] = {a->gy, a->idx, a->x, a->scales, a->eidx, a->bias, a->gx, a->gs};
    for (int i = 0; i < 8; i++) TRY(mf_check_live(OP, all[i], t[i]));
    for (int i = 0; i < 8; i++) TRY(mf_check_data(OP, all[i], t[i]));
    return ACLNN_SUCCESS;
}

static aclnnStatus check_dtypes(const args *a) {
    TRY(mf_check_float_dtype(OP, "gradY", a->gy));
    TRY(mf_check_dtype_is(OP, "expandedRowIdx", a->idx, ACL_INT32));
    TRY(mf_check_same_dtype(OP, "expandedXOptional", a->x, "gradY", a->gy));
    TRY(mf_check_float_dtype(OP, "scalesOptional", a->scales));
    if (a->scales && mf_soc_strict())
        TRY(mf_check_same_dtype(OP, "scalesOptional (MOEFR_SOC=ascend910b)", a->scales, "gradY", a->gy));
    TRY(mf_check_dtype_is(OP, "expertIdxOptional", a->eidx, ACL_INT32));
    TRY(mf_check_same_dtype(OP, "biasOptional", a->bias, "gradY", a->gy));
    TRY(mf_check_same_dtype(OP, "gradExpandedXOut", a->gx, "gradY", a->gy));
    if (a->scales)
        TRY(mf_check_same_dtype(OP, "gradScalesOut", a->gs, "scalesOptional", a->scales));
    else
        TRY(mf_check_same_dtype(OP, "gradScalesOut", a->gs, "gradY", a->gy));
    static const char *const all[] = {"gradY", "expandedRowIdx", "expandedXOptional", "scalesOptional",
                                      "expertIdxOptional", "biasOptional", "gradExpandedXOut",
                                      "gradScalesOut"};
    const aclTensor *t[] = {a->gy, a->idx, a->x, a->scales, a->eidx, a->bias, a->gx, a->gs};
    for (int i = 0; i < 8; i++) TRY(mf_check_nd(OP, all[i], t[i]));
    TRY(mf_check_contiguous(OP, "gradExpandedXOut", a->gx));
    TRY(mf_check_contiguous(OP, "gradScalesOut", a->gs));
    return ACLNN_SUCCESS;
}

/* Shapes: fills R, K, H, N, D0, E, idx_hi of p. */
static aclnnStatus check_shapes(const args *a, int64_t mode, int64_t active, int64_t en, int64_t ec,
                                grad_plan *p) {
    if (a->scales && !a->x)
        return mf_fail(TILING, "%s: scalesOptional is given, so expandedXOptional must be too", OP);
    if (a->bias && !a->eidx)
        return mf_fail(TILING, "%s: biasOptional is given, so expertIdxOptional must be too", OP);
    if (mode != 0 && mode != 1)
        return mf_fail(TILING, "%s: dropPadMode must be 0 or 1, got %lld", OP, (long long)mode);
    if (mode == 1 && (en <= 0 || ec <= 0))
        return mf_fail(TILING, "%s: dropPadMode 1 needs expertNum > 0 and expertCapacity > 0, got %lld and %lld",
                       OP, (long long)en, (long long)ec);
    if (mode == 0 && active < 0)
        return mf_fail(TILING, "%s: activeNum must be >= 0, got %lld", OP, (long long)active);

    TRY(mf_check_rank(OP, TILING, "gradY", a->gy, 2));
    TRY(mf_check_rank(OP, TILING, "expandedRowIdx", a->idx, 1));
    TRY(mf_check_rank(OP, TILING, "scalesOptional", a->scales, 2));
    TRY(mf_check_rank(OP, TILING, "expertIdxOptional", a->eidx, 2));
    TRY(mf_check_rank(OP, TILING, "biasOptional", a->bias, 2));
    TRY(mf_check_rank(OP, TILING, "gradScalesOut", a->gs, 2));
    int xrank = mode == 1 ? 3 : 2;
    TRY(mf_check_rank(OP, TILING, "expandedXOptional", a->x, xrank));
    TRY(mf_check_rank(OP, TILING, "gradExpandedXOut", a->gx, xrank));

    int64_t R = a->gy->dims[0], H = a->gy->dims[1];
    int64_t N = a->idx->dims[0];
    int64_t K = 1;
    if (a->scales) {
        TRY(mf_check_dim(OP, TILING, "scalesOptional", a->scales, 0, R));
        K = a->scales->dims[1];
    }
    int64_t RK;
    if (!mf_mul_ok(R, K, &RK)) return mf_fail(TILING, "%s: R*K overflows int64", OP);
    if (N != RK) {
        if (a->scales)
            return mf_fail(TILING, "%s: expandedRowIdx dim0 must be R*K = %lld*%lld = %lld, got %lld", OP,
                           (long long)R, (long long)K, (long long)RK, (long long)N);
        return mf_fail(TILING, "%s: without scalesOptional K is 1, so expandedRowIdx dim0 must be R = %lld, got %lld",
                       OP, (long long)R, (long long)N);
    }
    TRY(mf_check_dim(OP, TILING, "expertIdxOptional", a->eidx, 0, R));
    TRY(mf_check_dim(OP, TILING, "expertIdxOptional", a->eidx, 1, K));
    TRY(mf_check_dim(OP, TILING, "gradScalesOut", a->gs, 0, R));
    if (a->gs->numel != RK)
        return mf_fail(TILING, "%s: gradScalesOut must hold R*K = %lld elements, got %lld", OP, (long long)RK,
                       (long long)a->gs->numel);

    int64_t E = 0;
    if (a->bias) {
        E = a->bias->dims[0];
        if (E <= 0) return mf_fail(TILING, "%s: biasOptional dim0 must be > 0, got %lld", OP, (long long)E);
        if (mode == 1) TRY(mf_check_dim(OP, TILING, "biasOptional", a->bias, 0, en));
        TRY(mf_check_dim(OP, TILING, "biasOptional", a->bias, 1, H));
    }

    int64_t D0 = N, hi = N;
    if (mode == 0) {
        if (active > 0 && active < N) D0 = active;
        TRY(mf_check_dim(OP, TILING, "expandedXOptional", a->x, 0, D0));
        TRY(mf_check_dim(OP, TILING, "expandedXOptional", a->x, 1, H));
        TRY(mf_check_dim(OP, TILING, "gradExpandedXOut", a->gx, 0, D0));
        TRY(mf_check_dim(OP, TILING, "gradExpandedXOut", a->gx, 1, H));
    } else {
        if (!mf_mul_ok(en, ec, &D0))
            return mf_fail(TILING, "%s: expertNum*expertCapacity overflows int64", OP);
        hi = D0;
        const aclTensor *three[] = {a->x, a->gx};
        const char *names[] = {"expandedXOptional", "gradExpandedXOut"};
        for (int i = 0; i < 2; i++) {
            TRY(mf_check_dim(OP, TILING, names[i], three[i], 0, en));
            TRY(mf_check_dim(OP, TILING, names[i], three[i], 1, ec));
            TRY(mf_check_dim(OP, TILING, names[i], three[i], 2, H));
        }
    }
    p->R = R; p->K = K; p->H = H; p->N = N; p->D0 = D0; p->E = E;
    /* int32 indices cannot exceed 2^31 - 1, which bounds the bitmap */
    p->idx_hi = hi;
    return ACLNN_SUCCESS;
}

static uint64_t carve(uint64_t *used, uint64_t bytes) {
    uint64_t at = *used;
    *used += (bytes + 63) & ~(uint64_t)63;
    return at;
}

aclnnStatus aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(
    const aclTensor *gradY, const aclTensor *expandedRowIdx, const aclTensor *expandedXOptional,
    const aclTensor *scalesOptional, const aclTensor *expertIdxOptional, const aclTensor *biasOptional,
    int64_t dropPadMode, int64_t activeNum, int64_t expertNum, int64_t expertCapacity,
    const aclTensor *gradExpandedXOut, const aclTensor *gradScalesOut, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
    args a = {gradY, expandedRowIdx, expandedXOptional, scalesOptional, expertIdxOptional, biasOptional,
              gradExpandedXOut, gradScalesOut};
    TRY(check_pointers(&a, workspaceSize, executor));
    TRY(check_dtypes(&a));
    grad_plan pl;
    memset(&pl, 0, sizeof pl);
    TRY(check_shapes(&a, dropPadMode, activeNum, expertNum, expertCapacity, &pl));

    pl.mode = (int)dropPadMode;
    pl.has_scales = scalesOptional != NULL;
    pl.has_x = expandedXOptional != NULL;
    pl.has_bias = biasOptional != NULL;
    pl.dtype = gradY->dtype;
    pl.dt = mf_dt_of(gradY->dtype);
    pl.es = mf_dtype_size(gradY->dtype);
    pl.gy = mf_rows_of(gradY);
    if (pl.has_x) pl.x = mf_rows_of(expandedXOptional);
    if (pl.has_bias) pl.bias = mf_rows_of(biasOptional);
    pl.idx = mf_small_of(expandedRowIdx);
    if (pl.has_scales) pl.scales = mf_small_of(scalesOptional);
    if (expertIdxOptional) pl.eidx = mf_small_of(expertIdxOptional);
    pl.gx = mf_tensor_base(gradExpandedXOut);
    pl.gs = mf_tensor_base(gradScalesOut);
    pl.gs_dtype = gradScalesOut->dtype;

    /* Workspace: the index bitmap, then packed copies of inputs whose
     * elements are not adjacent (the kernels read unit-stride rows). */
    uint64_t used = 0;
    pl.bits = pl.idx_hi < ((int64_t)1 << 31) ? pl.idx_hi : ((int64_t)1 << 31);
    if (pl.N > 0) pl.ws_bitmap = carve(&used, mf_bitmap_bytes(pl.bits));
    const int64_t H = pl.H, row_bytes = H * (int64_t)pl.es;
    /* N <= 2^31 - 1 and row_bytes <= 2 KiB keep these products in range */
    const int order = mf_grad_order();
    pl.by_row = pl.N > 0 && pl.N <= INT32_MAX && row_bytes > 0 &&
                (order == MF_ORDER_ROW ||
                 (order == MF_ORDER_AUTO && row_bytes <= MF_BY_ROW_MAX_BYTES && pl.N * row_bytes >= mf_nt_threshold() / 4));
    if (pl.by_row) pl.ws_inv = carve(&used, (uint64_t)pl.bits * 4);
    pl.pack_gy = pl.R > 0 && !mf_rows_dense(&pl.gy, H, pl.es);
    pl.pack_x = pl.has_x && pl.has_scales && pl.N > 0 && !mf_rows_dense(&pl.x, H, pl.es);
    pl.pack_bias = pl.has_bias && pl.has_scales && pl.N > 0 && !mf_rows_dense(&pl.bias, H, pl.es);
    /* rows*H is a tensor's element count, already checked against int64 */
    const aclTensor *packed[] = {pl.pack_gy ? gradY : NULL, pl.pack_x ? expandedXOptional : NULL,
                                 pl.pack_bias ? biasOptional : NULL};
    uint64_t *offs[] = {&pl.ws_gy, &pl.ws_x, &pl.ws_bias};
    for (int i = 0; i < 3; i++) {
        int64_t bytes;
        if (packed[i] == NULL) continue;
        if (!mf_mul_ok(packed[i]->numel, (int64_t)pl.es, &bytes) || bytes > (INT64_MAX >> 2))
            return mf_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: workspace to pack a strided input overflows", OP);
        *offs[i] = carve(&used, (uint64_t)bytes);
    }
    pl.ws_bytes = used;

    aclOpExecutor *e = mf_executor_new(MF_OP_GRAD, sizeof pl, mf_grad_run);
    if (e == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    memcpy(mf_executor_plan(e), &pl, sizeof pl);
    e->workspace_size = mf_workspace_with_slack(used);
    TRY(mf_executor_publish(e, executor));
    *workspaceSize = e->workspace_size;
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeFinalizeRoutingV2Grad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                          aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GRAD, OP, workspace, workspaceSize, stream);
}
