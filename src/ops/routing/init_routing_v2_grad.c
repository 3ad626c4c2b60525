/* init_routing_v2_grad.c - aclnnMoeInitRoutingV2Grad, both phases. Phase 1:
 * the definition table (opdef.c), then CANN's tiling checks in the order of
 * moe_init_routing_v2_grad_tiling_base.cpp (CheckParamsValidity,
 * CheckShapeValidity, the topK divisibility). Phase 2: every index checked
 * first, then tokens in parallel, each summed in fp32 in k order. */
#include "aclnnop/aclnn_moe_init_routing_v2_grad.h"
#include "ops/opdef.h"
#include "ops/routing/routing.h"

static const char OP[] = "aclnnMoeInitRoutingV2Grad";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY

#define S_G MF_IRG_G
#define S_IDX MF_IRG_IDX
#define S_OUT MF_IRG_OUT
#define S_NT MF_IRG_NT
static const char *const NAMES[S_NT] = {"gradExpandedX", "expandedRowIdx", "out"};
static const unsigned FLAGS[S_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED | MF_T_CONTIG};
/* moe_init_routing_v2_grad_def.cpp: (grad_expanded_x, expanded_row_idx |
 * grad_x), the same columns on every product. */
static const mf_dtcol COLS[] = {{ACL_FLOAT16, ACL_INT32, ACL_FLOAT16},
                                {ACL_BF16, ACL_INT32, ACL_BF16},
                                {ACL_FLOAT, ACL_INT32, ACL_FLOAT}};
static const mf_op_def DEF = {OP, MF_OP_INIT_ROUTING_V2_GRAD, 2, 1, NAMES, FLAGS, COLS, 3, COLS, 3};

static aclnnStatus positive(const char *op, const char *name, const aclTensor *t, bool zero_ok) {
    for (int i = 0; i < t->ndim; i++)
        if (t->dims[i] < 0 || (!zero_ok && t->dims[i] == 0))
            return mf_fail(TILING, "%s: %s dim%d must be %s, got %lld", op, name, i, zero_ok ? ">= 0" : "> 0",
                           (long long)t->dims[i]);
    return ACLNN_SUCCESS;
}

/* Messages name the calling operator and its parameters (TokenPermuteGrad
 * reaches these checks through its Ascend 950 translation). */
aclnnStatus mf_irg_check_shapes(const mf_op_def *def, const aclTensor *const *t, int64_t topK, int64_t mode,
                                int64_t active, mf_route_grad_plan *p) {
    const char *const op = def->name, *const *nm = def->names;
    const aclTensor *g = t[S_G], *idx = t[S_IDX], *out = t[S_OUT];
    char buf[160];
    if (mode != 0 && mode != 1) return mf_fail(TILING, "%s: dropPadMode must be 0 or 1, got %lld", op, (long long)mode);
    if (topK <= 0) return mf_fail(TILING, "%s: topK must be > 0, got %lld", op, (long long)topK);
    if (active < 0) return mf_fail(TILING, "%s: activeNum must be >= 0, got %lld", op, (long long)active);
    if (g->ndim != 2 && g->ndim != 3)
        return mf_fail(TILING, "%s: %s must be 2-D or 3-D, got %d-D %s", op, nm[S_G], (int)g->ndim,
                       mf_shape_str(g, buf, sizeof buf));
    if (mode == 1 && g->ndim != 3)
        return mf_fail(TILING, "%s: %s must be 3-D in dropPadMode 1, got %d-D %s", op, nm[S_G], (int)g->ndim,
                       mf_shape_str(g, buf, sizeof buf));
    /* moefr: CANN takes a 3-D gradExpandedX in mode 0 as rows of dim1
     * elements of its storage; that layout has no meaning (CANN_COMPAT.md) */
    if (mode == 0 && g->ndim != 2)
        return mf_fail(TILING, "%s: %s must be 2-D in dropPadMode 0, got %d-D %s", op, nm[S_G], (int)g->ndim,
                       mf_shape_str(g, buf, sizeof buf));
    if (idx->ndim < 1) return mf_fail(TILING, "%s: %s must have at least 1 dim, got 0-D", op, nm[S_IDX]);
    const int64_t BSK = idx->dims[0];
    if (mode == 0 && active == 0 && g->dims[0] != BSK)
        return mf_fail(TILING, "%s: %s dim0 must equal %s dim0 (%lld) when activeNum is 0, got %lld",
                       op, nm[S_G], nm[S_IDX], (long long)BSK, (long long)g->dims[0]);
    if (mode == 0 && active > 0 && g->dims[0] != active)
        return mf_fail(TILING, "%s: %s dim0 must equal activeNum (%lld), got %lld", op, nm[S_G], (long long)active,
                       (long long)g->dims[0]);
    TRY(mf_check_rank(op, TILING, nm[S_OUT], out, 2));
    const int64_t H = mode == 0 ? g->dims[1] : g->dims[2];
    TRY(mf_check_dim(op, TILING, nm[S_OUT], out, 1, H));
    TRY(mf_check_dim(op, TILING, nm[S_OUT], out, 0, BSK / topK));
    TRY(positive(op, nm[S_IDX], idx, false));
    TRY(positive(op, nm[S_OUT], out, false));
    TRY(positive(op, nm[S_G], g, !(mode == 0 && active == 0)));
    if (BSK % topK != 0)
        return mf_fail(TILING, "%s: %s dim0 (%lld) must be a multiple of topK (%lld)", op, nm[S_IDX], (long long)BSK,
                       (long long)topK);
    int64_t D0 = g->dims[0];
    if (mode == 1 && (!mf_mul_ok(g->dims[0], g->dims[1], &D0) || D0 > INT32_MAX)) D0 = INT32_MAX;
    p->mode = (int)mode;
    p->N = BSK / topK;
    p->K = topK;
    p->H = H;
    p->D0 = D0;
    p->keep_below = mode == 0 && active > 0 ? active : INT64_MAX;
    mf_route_grad_strict(p);
    return ACLNN_SUCCESS;
}

static aclnnStatus irg_run(const void *plan, const aclTensor *const *t, void *workspace);

aclnnStatus aclnnMoeInitRoutingV2GradGetWorkspaceSize(const aclTensor *gradExpandedX, const aclTensor *expandedRowIdx,
                                                      int64_t topK, int64_t dropPadMode, int64_t activeNum,
                                                      const aclTensor *out, uint64_t *workspaceSize,
                                                      aclOpExecutor **executor) {
    const aclTensor *t[S_NT] = {gradExpandedX, expandedRowIdx, out};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    mf_route_grad_plan pl;
    memset(&pl, 0, sizeof pl);
    if (mf_op_outputs_empty(&DEF, t)) {
        pl.empty = true;
        return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, irg_run, 0, workspaceSize, executor);
    }
    TRY(mf_irg_check_shapes(&DEF, t, topK, dropPadMode, activeNum, &pl));
    pl.dtype = out->dtype;
    pl.es = mf_dtype_size(out->dtype);
    /* workspace: the N*topK index values, read (and checked) once */
    const uint64_t ws = mf_route_grad_workspace(&pl);
    return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, irg_run, ws, workspaceSize, executor);
}

static aclnnStatus irg_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const mf_route_grad_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OP));
    return mf_route_grad_run(OP, "expandedRowIdx", p, t[S_G], t[S_IDX], mf_tensor_base(t[S_OUT]), workspace);
}

aclnnStatus aclnnMoeInitRoutingV2Grad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                      aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_INIT_ROUTING_V2_GRAD, OP, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"topK", MF_ATTR_INT64, 1, 8},
                                     {"dropPadMode", MF_ATTR_INT64, 0, 1},
                                     {"activeNum", MF_ATTR_INT64, 0, 64}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeInitRoutingV2GradGetWorkspaceSize(t[0], t[1], a[0].i, a[1].i, a[2].i, t[2], ws, e);
}
const mf_op_entry mf_entry_init_routing_v2_grad = {&DEF, ATTRS, 3, gws_thunk, aclnnMoeInitRoutingV2Grad};
