/* gating_top_k_softmax.c - aclnnMoeGatingTopKSoftmax and
 * aclnnMoeGatingTopKSoftmaxV2, both phases: one row routine behind two front
 * ends.
 *
 * Phase 1: the definition tables (moe_gating_top_k_softmax(_v2)_def.cpp),
 * then the checks of moe_gating_top_k_softmax(_v2)_tiling_base.cpp
 * (GetShapeAttrsInfo, CheckInShape, CheckOutShape, CheckOptionalAttr) in
 * their order, then Ascend 950's DoOpTiling bound (V1: E <= 2048).
 *
 * Phase 2, one row r at a time, parallel over rows, all in fp32 with a fixed
 * order of operations (no FMA, no kernel layer, no libm), so the bits do not
 * depend on MOEFR_ISA, the thread count or the machine:
 *   v[e] = x[r][e] widened exactly; m = max over e (exact in any order);
 *   u[e] = exp(v[e] - m) (gt_expv in gating_core.h); s = sum of u in 8 interleaved
 *   partial sums (lane e % 8), combined pairwise; p[e] = u[e] / s; a NaN p
 *   becomes the one quiet NaN 0x7FC00000.
 *   Top-k: the k largest p by (value descending, expert ascending);
 *   -0 counts as +0 and NaN as the largest value. Without the softmax
 *   output only the p of a few candidates are computed (gt_fast in
 *   gating_core.h: u / s is monotone in u, ties on p settled as above), the
 *   same values by the same operations.
 * renorm 1 (V2): the top-k of v itself, then the same softmax over those k. */
#include "aclnnop/aclnn_moe_gating_top_k_softmax.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax_v2.h"
#include "ops/opdef.h"

/* the generic four-lane row routine (gating_avx2.c builds the eight-lane one) */
#define GT_W 4
#define GT_ROWS mf_gating_rows_generic
#include "ops/routing/gating_core.h"

static const char OP1[] = "aclnnMoeGatingTopKSoftmax";
static const char OP2[] = "aclnnMoeGatingTopKSoftmaxV2";
#define TILING ACLNN_ERR_INNER_TILING_ERROR


/* ---- the definition tables ---- */
enum { V1_X, V1_FIN, V1_Y, V1_EIDX, V1_RIDX, V1_NT };
static const char *const NAMES1[V1_NT] = {"x", "finishedOptional", "yOut", "expertIdxOut", "rowIdxOut"};
static const unsigned FLAGS1[V1_NT] = {MF_T_REQUIRED, 0, MF_T_REQUIRED | MF_T_CONTIG, MF_T_REQUIRED | MF_T_CONTIG,
                                       MF_T_REQUIRED | MF_T_CONTIG};
/* moe_gating_top_k_softmax_def.cpp: one table for ascend910b, ascend910_93
 * and ascend910_95 (x, finished, y, expert_idx, row_idx). */
static const mf_dtcol COLS1[] = {{ACL_FLOAT16, ACL_BOOL, ACL_FLOAT16, ACL_INT32, ACL_INT32},
                                 {ACL_FLOAT, ACL_BOOL, ACL_FLOAT, ACL_INT32, ACL_INT32},
                                 {ACL_BF16, ACL_BOOL, ACL_BF16, ACL_INT32, ACL_INT32}};
static const mf_op_def DEF1 = {OP1, MF_OP_GATING_TOP_K_SOFTMAX, 2, 3, NAMES1, FLAGS1, COLS1, 3, COLS1, 3};

enum { V2_X, V2_FIN, V2_Y, V2_EIDX, V2_SM, V2_NT };
static const char *const NAMES2[V2_NT] = {"x", "finishedOptional", "yOut", "expertIdxOut",
                                          "softmaxResultOutOptional"};
static const unsigned FLAGS2[V2_NT] = {MF_T_REQUIRED, 0, MF_T_REQUIRED | MF_T_CONTIG, MF_T_REQUIRED | MF_T_CONTIG,
                                       MF_T_CONTIG};
/* moe_gating_top_k_softmax_v2_def.cpp: the same columns on every product
 * (x, finished, y, expert_idx, softmax_result). */
static const mf_dtcol COLS2[] = {{ACL_FLOAT16, ACL_BOOL, ACL_FLOAT16, ACL_INT32, ACL_FLOAT},
                                 {ACL_FLOAT, ACL_BOOL, ACL_FLOAT, ACL_INT32, ACL_FLOAT},
                                 {ACL_BF16, ACL_BOOL, ACL_BF16, ACL_INT32, ACL_FLOAT}};
static const mf_op_def DEF2 = {OP2, MF_OP_GATING_TOP_K_SOFTMAX_V2, 2, 3, NAMES2, FLAGS2, COLS2, 3, COLS2, 3};


static aclnnStatus gt_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const gt_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    const aclTensor *x = t[p->xi], *fin = t[p->fi];
    gt_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.x = mf_rows_of(x);
    c.dtype = x->dtype;
    c.has_fin = fin != NULL;
    if (fin) {
        c.fin = mf_small_of(fin);
        c.fin_cols = fin->ndim == 2 ? fin->dims[1] : 0;
    }
    c.y = mf_tensor_base(t[p->yi]);
    c.eidx = (int32_t *)mf_tensor_base(t[p->ei]);
    c.ridx = p->row_idx ? (int32_t *)mf_tensor_base(t[p->ri]) : NULL;
    c.sm = p->softmax ? (float *)mf_tensor_base(t[p->si]) : NULL;
    c.ws = p->E > GT_STACK_E ? (float *)mf_align64(workspace) : NULL;
    int64_t serial = GT_SERIAL_ELEMS / p->E;
    mf_range_fn rows = mf_gating_rows_generic;
#if defined(MOEFR_X86_KERNELS)
    if (strncmp(mf_kernels()->isa, "avx", 3) == 0) rows = mf_gating_rows_avx2; /* avx2, avx512: same bits */
#endif
    mf_parallel_for(p->R, rows, &c, serial < 1 ? 1 : serial);
    return ACLNN_SUCCESS;
}

/* ---- phase 1 ---- */
#define dims_str mf_shape_str

/* CheckOutShape's leading-dim rules (both versions): rank, dim 0, dim 1 of a
 * 3-D x. */
static aclnnStatus check_lead(const char *op, const char *name, const aclTensor *o, const aclTensor *x) {
    char a[96], b[96];
    if (o->ndim != x->ndim)
        return mf_fail(TILING, "%s: %s must have x's rank %d, got %s", op, name, (int)x->ndim,
                       dims_str(o, a, sizeof a));
    for (int d = 0; d < x->ndim - 1; d++)
        if (o->dims[d] != x->dims[d])
            return mf_fail(TILING, "%s: %s dim %d must equal x's (%lld), got %s for x %s", op, name, d,
                           (long long)x->dims[d], dims_str(o, a, sizeof a), dims_str(x, b, sizeof b));
    return ACLNN_SUCCESS;
}

static aclnnStatus check_last(const char *op, const char *name, const aclTensor *o, int64_t want,
                              const char *what) {
    char a[96];
    if (o->dims[o->ndim - 1] != want)
        return mf_fail(TILING, "%s: %s last dim must be %s = %lld, got %s", op, name, what, (long long)want,
                       dims_str(o, a, sizeof a));
    return ACLNN_SUCCESS;
}

/* x's rank, its dims (V1: none 0; V2: the last not 0; both: <= INT32_MAX),
 * finished's shape: GetShapeAttrsInfo (V1) / CheckInShape (V2). */
static aclnnStatus check_x(const char *op, const aclTensor *x, const aclTensor *fin, bool any_zero) {
    char a[96], b[96];
    if (x->ndim != 2 && x->ndim != 3)
        return mf_fail(TILING, "%s: x must be 2-D or 3-D, got %s", op, dims_str(x, a, sizeof a));
    for (int d = 0; d < x->ndim; d++) {
        if (x->dims[d] == 0 && (any_zero || d == x->ndim - 1))
            return mf_fail(TILING, "%s: x must have no %szero dim, got %s", op, any_zero ? "" : "(last) ",
                           dims_str(x, a, sizeof a));
        if (x->dims[d] > INT32_MAX)
            return mf_fail(TILING, "%s: x dims must be <= 2147483647, got %s", op, dims_str(x, a, sizeof a));
    }
    if (fin != NULL) {
        if (fin->ndim != x->ndim - 1)
            return mf_fail(TILING, "%s: finishedOptional must have rank %d (x's without the last dim), got %s", op,
                           (int)x->ndim - 1, dims_str(fin, a, sizeof a));
        for (int d = 0; d < x->ndim - 1; d++)
            if (fin->dims[d] != x->dims[d])
                return mf_fail(TILING, "%s: finishedOptional shape %s must be x's %s without the last dim", op,
                               dims_str(fin, a, sizeof a), dims_str(x, b, sizeof b));
    }
    return ACLNN_SUCCESS;
}

static aclnnStatus check_k(const char *op, int64_t k, int64_t E) {
    if (k <= 0 || k > E)
        return mf_fail(TILING, "%s: k must be in [1, %lld] (x's last dim), got %lld", op, (long long)E,
                       (long long)k);
    if (k > GT_MAX_K) return mf_fail(TILING, "%s: k must be <= 1024, got %lld", op, (long long)k);
    return ACLNN_SUCCESS;
}

static void plan_dims(gt_plan *pl, const aclTensor *x, int64_t k) {
    pl->E = x->dims[x->ndim - 1];
    pl->R = x->ndim == 2 ? x->dims[0] : x->dims[0] * x->dims[1];
    pl->k = k;
}

static aclnnStatus workspace_of(const char *op, const gt_plan *pl, uint64_t *ws) {
    *ws = 0;
    if (pl->E <= GT_STACK_E) return ACLNN_SUCCESS;
    int64_t n, bytes;
    if (!mf_mul_ok(pl->R, 2 * GT_PAD(pl->E), &n) || !mf_mul_ok(n, 4, &bytes))
        return mf_fail(TILING, "%s: the fp32 scratch of %lld x %lld floats overflows", op, (long long)pl->R,
                       (long long)pl->E);
    *ws = mf_workspace_with_slack((uint64_t)bytes);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(const aclTensor *x, const aclTensor *finishedOptional,
                                                      int64_t k, const aclTensor *yOut,
                                                      const aclTensor *expertIdxOut, const aclTensor *rowIdxOut,
                                                      uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *t[V1_NT] = {x, finishedOptional, yOut, expertIdxOut, rowIdxOut};
    MF_TRY(mf_op_check(&DEF1, t, workspaceSize, executor));
    MF_TRY(mf_isa_check(OP1));
    gt_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.xi = V1_X, pl.fi = V1_FIN, pl.yi = V1_Y, pl.ei = V1_EIDX, pl.ri = V1_RIDX, pl.si = -1;
    pl.row_idx = true;
    if (mf_op_outputs_empty(&DEF1, t)) {
        pl.empty = true;
        return mf_op_publish(&DEF1, t, 0, &pl, sizeof pl, gt_run, 0, workspaceSize, executor);
    }
    /* moe_gating_top_k_softmax_tiling_base.cpp, GetShapeAttrsInfo */
    MF_TRY(check_x(OP1, x, finishedOptional, true));
    MF_TRY(check_lead(OP1, "yOut", yOut, x));
    MF_TRY(check_lead(OP1, "expertIdxOut", expertIdxOut, x));
    MF_TRY(check_lead(OP1, "rowIdxOut", rowIdxOut, x));
    const int64_t E = x->dims[x->ndim - 1];
    MF_TRY(check_k(OP1, k, E));
    /* moefr: CANN does not compare the outputs' last dim with k (its kernel
     * writes k per row whatever they hold) */
    MF_TRY(check_last(OP1, "yOut", yOut, k, "k"));
    MF_TRY(check_last(OP1, "expertIdxOut", expertIdxOut, k, "k"));
    MF_TRY(check_last(OP1, "rowIdxOut", rowIdxOut, k, "k"));
    /* moe_gating_top_k_softmax_tiling_arch35.cpp, DoOpTiling (Ascend 950 only) */
    if (!mf_soc_strict() && E > GT_MAX_E_950)
        return mf_fail(TILING, "%s: x's last dim (experts) must be <= 2048 on Ascend 950, got %lld", OP1,
                       (long long)E);
    plan_dims(&pl, x, k);
    int64_t T;
    if (!mf_mul_ok(pl.R, k, &T) || T > (int64_t)INT32_MAX + 1)
        return mf_fail(TILING, "%s: rowIdxOut values k*R + r must fit INT32, got R = %lld rows and k = %lld", OP1,
                       (long long)pl.R, (long long)k);
    uint64_t ws;
    MF_TRY(workspace_of(OP1, &pl, &ws));
    return mf_op_publish(&DEF1, t, 0, &pl, sizeof pl, gt_run, ws, workspaceSize, executor);
}

aclnnStatus aclnnMoeGatingTopKSoftmax(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                      aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GATING_TOP_K_SOFTMAX, OP1, workspace, workspaceSize, stream);
}

aclnnStatus aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize(const aclTensor *x, const aclTensor *finishedOptional,
                                                        int64_t k, int64_t renorm, bool outputSoftmaxResultFlag,
                                                        const aclTensor *yOut, const aclTensor *expertIdxOut,
                                                        const aclTensor *softmaxResultOutOptional,
                                                        uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *t[V2_NT] = {x, finishedOptional, yOut, expertIdxOut, softmaxResultOutOptional};
    MF_TRY(mf_op_check(&DEF2, t, workspaceSize, executor));
    MF_TRY(mf_isa_check(OP2));
    gt_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.xi = V2_X, pl.fi = V2_FIN, pl.yi = V2_Y, pl.ei = V2_EIDX, pl.ri = -1, pl.si = V2_SM;
    const bool want_sm = renorm == 0 && outputSoftmaxResultFlag;
    const unsigned unused = (!want_sm && softmaxResultOutOptional != NULL) ? 1u << V2_SM : 0u;
    /* the softmax output counts only when it will be written */
    bool empty = yOut->numel == 0 && expertIdxOut->numel == 0 &&
                 (!want_sm || softmaxResultOutOptional == NULL || softmaxResultOutOptional->numel == 0);
    if (empty) {
        pl.empty = true;
        return mf_op_publish(&DEF2, t, unused, &pl, sizeof pl, gt_run, 0, workspaceSize, executor);
    }
    /* moe_gating_top_k_softmax_v2_tiling_base.cpp, GetShapeAttrsInfo */
    MF_TRY(check_x(OP2, x, finishedOptional, false));
    const int64_t E = x->dims[x->ndim - 1];
    MF_TRY(check_k(OP2, k, E));
    MF_TRY(check_lead(OP2, "yOut", yOut, x));
    MF_TRY(check_last(OP2, "yOut", yOut, k, "k"));
    MF_TRY(check_lead(OP2, "expertIdxOut", expertIdxOut, x));
    MF_TRY(check_last(OP2, "expertIdxOut", expertIdxOut, k, "k"));
    /* CheckOptionalAttr */
    if (renorm < 0 || renorm > 1) return mf_fail(TILING, "%s: renorm must be 0 or 1, got %lld", OP2, (long long)renorm);
    if (want_sm) {
        if (softmaxResultOutOptional == NULL)
            return mf_fail(TILING, "%s: softmaxResultOutOptional is NULL but renorm = 0 and "
                                   "outputSoftmaxResultFlag = true",
                           OP2);
        MF_TRY(check_lead(OP2, "softmaxResultOutOptional", softmaxResultOutOptional, x));
        MF_TRY(check_last(OP2, "softmaxResultOutOptional", softmaxResultOutOptional, E, "x's last dim"));
    }
    plan_dims(&pl, x, k);
    pl.renorm = renorm == 1;
    pl.softmax = want_sm;
    uint64_t ws;
    MF_TRY(workspace_of(OP2, &pl, &ws));
    return mf_op_publish(&DEF2, t, unused, &pl, sizeof pl, gt_run, ws, workspaceSize, executor);
}

aclnnStatus aclnnMoeGatingTopKSoftmaxV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                        aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GATING_TOP_K_SOFTMAX_V2, OP2, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static const mf_attr_desc ATTRS1[] = {{"k", MF_ATTR_INT64, 1, 8}};
static aclnnStatus gws_thunk1(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(t[0], t[1], a[0].i, t[2], t[3], t[4], ws, e);
}
const mf_op_entry mf_entry_gating_top_k_softmax = {&DEF1, ATTRS1, 1, gws_thunk1, aclnnMoeGatingTopKSoftmax};
static const mf_attr_desc ATTRS2[] = {{"k", MF_ATTR_INT64, 1, 8},
                                      {"renorm", MF_ATTR_INT64, 0, 1},
                                      {"outputSoftmaxResultFlag", MF_ATTR_BOOL, 0, 1}};
static aclnnStatus gws_thunk2(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize(t[0], t[1], a[0].i, a[1].i, a[2].i != 0, t[2], t[3], t[4], ws,
                                                       e);
}
const mf_op_entry mf_entry_gating_top_k_softmax_v2 = {&DEF2, ATTRS2, 3, gws_thunk2, aclnnMoeGatingTopKSoftmaxV2};
