/* grouped_matmul_add.c - aclnnGroupedMatmulAdd and aclnnGroupedMatmulAddV2,
 * phase 1 (ops-transformer gmm/grouped_matmul_add: op_api
 * aclnn_grouped_matmul_add.cpp, grouped_matmul_add_def.cpp, the tilings).
 * The product is GroupedMatmul's K split accumulated into y: phase 2 is
 * gmm_run.c's, with the plan's x seen as its transpose (M, K) over the
 * (K, M) storage, y as (E, M, N) and `accumulate` set.
 *
 * Phase 1, in CANN's order (CheckParams maps every failure to 161002,
 * the null checks included):
 *   1. x, weight, groupList, yRef NULL; groupListType not 0/1;
 *   2. formats: x, weight, groupList ND, yRef ND or NCL;
 *   3. shapes: x and weight 2-D, groupList 1-D, M = x dim 1 > 0, x's and
 *      weight's dim 0 (K) equal; Ascend 950: yRef 3-D with dim 0 = groups;
 *   4. dtypes: yRef FLOAT, groupList INT64, x FLOAT16 or BF16, weight = x;
 * then moefr's own: workspaceSize / executor (161001), yRef must hold
 * (E, M, N) (CANN's kernels address it as E*M*N floats: 161002 otherwise),
 * and may not overlap itself; an empty yRef succeeds with workspace 0; the
 * Ascend 950 tiling (transposeX true, transposeWeight false, groupType 2,
 * at most 1024 groups: 561002). A2/A3's tiling and kernel ignore the three
 * attributes and read the list as cumulative ends (MOEFR_SOC=ascend910b). */
#include "aclnnop/aclnn_grouped_matmul_add.h"
#include "aclnnop/aclnn_grouped_matmul_add_v2.h"
#include "ops/gmm/gmm.h"
#include "ops/opdef.h"

#define INVALID ACLNN_ERR_PARAM_INVALID
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define GMMA_MAX_GROUPS 1024 /* MAX_TENSOR, arch35 grouped_matmul_add_utils_advanced.h */

/* The executor's slots: CANN's DFX_IN (x, weight, groupList, yRef) and DFX_OUT (yRef);
 * yRef's two slots share one descriptor (mf_executor_new), so a setter on either moves it. */
enum { S_X, S_W, S_GL, S_YIN, S_Y, S_NT };
static const char *const SLOT_NAMES[S_NT] = {"x", "weight", "groupList", "yRef", "yRef"};
static const unsigned SLOT_FLAGS[S_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED};
static const mf_dtcol SLOT_COLS[] = {{ACL_FLOAT16, ACL_FLOAT16, ACL_INT64, ACL_FLOAT, ACL_FLOAT},
                                     {ACL_BF16, ACL_BF16, ACL_INT64, ACL_FLOAT, ACL_FLOAT}};
static const mf_op_def EXEC_V1 = {"aclnnGroupedMatmulAdd", MF_OP_GROUPED_MATMUL_ADD, 4, 1, SLOT_NAMES, SLOT_FLAGS,
                                  SLOT_COLS, 2, SLOT_COLS, 2};
static const mf_op_def EXEC_V2 = {"aclnnGroupedMatmulAddV2", MF_OP_GROUPED_MATMUL_ADD_V2, 4, 1, SLOT_NAMES,
                                  SLOT_FLAGS, SLOT_COLS, 2, SLOT_COLS, 2};

/* The plan: GroupedMatmul's, with three descriptors (x^T, weight, y as (E, M, N)). */
#define GMMA_BYTES (sizeof(gmm_plan) + 3 * sizeof(aclTensor))

/* Phase 2: the plan's descriptors take the addresses the setters left in the
 * slots, then GroupedMatmul's phase 2 runs with the group list. */
static aclnnStatus gmma_run(const void *plan, const aclTensor *const *t, void *workspace) {
    _Alignas(64) unsigned char buf[GMMA_BYTES];
    memcpy(buf, plan, GMMA_BYTES);
    gmm_plan *p = (gmm_plan *)(void *)buf;
    if (p->empty) return ACLNN_SUCCESS;
    p->t[0].data = t[S_X]->data;
    p->t[1].data = t[S_W]->data;
    p->t[2].data = t[S_Y]->data;
    const aclTensor *slot[1] = {t[S_GL]};
    return mf_gmm_run(p, slot, workspace);
}

typedef struct gmma_call {
    const mf_op_def *exec;
    const aclTensor *x, *w, *gl;
    aclTensor *y;
    bool tx, tw;
    int64_t group_type, list_type;
    uint64_t *workspaceSize;
    aclOpExecutor **executor;
} gmma_call;

static aclnnStatus gmma_gws(const gmma_call *c) {
    const char *op = c->exec->name;
    char s1[160];
    MF_TRY(mf_isa_check(op));
    /* 1. CheckNotNull (its failures come out of CheckParams as 161002) */
    const aclTensor *const named[4] = {c->x, c->w, c->gl, c->y};
    const char *const nm[4] = {"x", "weight", "groupList", "yRef"};
    for (int i = 0; i < 4; i++)
        if (named[i] == NULL)
            return mf_fail(INVALID, "%s: %s is NULL (CANN returns PARAM_INVALID here, not PARAM_NULLPTR)", op, nm[i]);
    if (c->list_type != 0 && c->list_type != 1)
        return mf_fail(INVALID, "%s: groupListType must be 0 (cumulative) or 1 (counts), got %lld", op,
                       (long long)c->list_type);
    for (int i = 0; i < 4; i++)
        if (!mf_tensor_live(named[i]))
            return mf_fail(INVALID, "%s: %s (%p) is not a live aclTensor", op, nm[i], (const void *)named[i]);
    /* 2. CheckFormat */
    for (int i = 0; i < 3; i++)
        if (named[i]->format != ACL_FORMAT_ND)
            return mf_fail(INVALID, "%s: %s format must be ND, got %s (%d)", op, nm[i], mf_format_name(named[i]->format),
                           (int)named[i]->format);
    if (c->y->format != ACL_FORMAT_ND && c->y->format != ACL_FORMAT_NCL)
        return mf_fail(INVALID, "%s: yRef format must be ND or NCL, got %s (%d)", op, mf_format_name(c->y->format),
                       (int)c->y->format);
    /* 3. CheckShape */
    const aclTensor *x = c->x, *w = c->w, *gl = c->gl, *y = c->y;
    if (x->ndim != 2) return mf_fail(INVALID, "%s: x must have 2 dims (K, M), got %s", op, mf_shape_str(x, s1, sizeof s1));
    if (w->ndim != 2)
        return mf_fail(INVALID, "%s: weight must have 2 dims (K, N), got %s", op, mf_shape_str(w, s1, sizeof s1));
    if (gl->ndim != 1) return mf_fail(INVALID, "%s: groupList must have 1 dim, got %d", op, (int)gl->ndim);
    const int64_t K = x->dims[0], M = x->dims[1], N = w->dims[1], E = gl->dims[0];
    if (M <= 0) return mf_fail(INVALID, "%s: M (x dim 1) must be positive, got %lld", op, (long long)M);
    if (w->dims[0] != K)
        return mf_fail(INVALID, "%s: weight dim 0 must be x's dim 0 (K) %lld, got %lld", op, (long long)K,
                       (long long)w->dims[0]);
    const bool a2 = mf_soc_strict();
    if (!a2) {
        if (y->ndim != 3)
            return mf_fail(INVALID, "%s: yRef must have 3 dims (groups, M, N), got %s", op, mf_shape_str(y, s1, sizeof s1));
        if (y->dims[0] != E)
            return mf_fail(INVALID, "%s: yRef dim 0 must be groupList's length %lld, got %lld", op, (long long)E,
                           (long long)y->dims[0]);
    }
    /* 4. CheckDtype */
    if (y->dtype != ACL_FLOAT)
        return mf_fail(INVALID, "%s: yRef dtype must be FLOAT, got %s", op, mf_dtype_name(y->dtype));
    if (gl->dtype != ACL_INT64)
        return mf_fail(INVALID, "%s: groupList dtype must be INT64, got %s", op, mf_dtype_name(gl->dtype));
    if ((x->dtype != ACL_FLOAT16 && x->dtype != ACL_BF16) || w->dtype != x->dtype)
        return mf_fail(INVALID, "%s: x and weight must both be FLOAT16 or both BF16, got x %s, weight %s", op,
                       mf_dtype_name(x->dtype), mf_dtype_name(w->dtype));
    /* moefr: the out-pointers CANN dereferences unchecked */
    if (c->workspaceSize == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspaceSize is NULL", op);
    if (c->executor == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is NULL", op);
    /* moefr: yRef must hold (E, M, N): 3-D with exactly those dims (any strides), or any
     * contiguous tensor of E*M*N elements, which CANN's kernels address as (E, M, N) */
    int64_t mn, emn;
    if (!mf_mul_ok(M, N, &mn) || !mf_mul_ok(mn, E, &emn))
        return mf_fail(INVALID, "%s: yRef's (groups, M, N) = (%lld, %lld, %lld) multiply past int64", op, (long long)E,
                       (long long)M, (long long)N);
    const bool exact = y->ndim == 3 && y->dims[0] == E && y->dims[1] == M && y->dims[2] == N;
    if (!exact && (y->numel != emn || !mf_tensor_contiguous(y)))
        return mf_fail(INVALID, "%s: yRef must be (%lld, %lld, %lld) (groups, M, N)%s, got %s", op, (long long)E,
                       (long long)M, (long long)N, a2 ? " or a contiguous tensor of as many elements" : "",
                       mf_shape_str(y, s1, sizeof s1));
    if (mf_self_overlaps(y))
        return mf_fail(INVALID, "%s: yRef has elements that share memory (a stride of 0, negative or shorter than the "
                                "dims inside it); each must be added to once", op);
    const aclTensor *slots[S_NT] = {x, w, gl, y, y};
    _Alignas(64) unsigned char buf[GMMA_BYTES];
    memset(buf, 0, sizeof buf);
    gmm_plan *p = (gmm_plan *)(void *)buf;
    p->op = op;
    if (y->numel == 0) { /* CANN's engine: every output empty, nothing launched */
        p->empty = true;
        return mf_op_publish(c->exec, slots, 0, p, GMMA_BYTES, gmma_run, 0, c->workspaceSize, c->executor);
    }
    /* the Ascend 950 tiling (A2/A3's checks nothing more, and its kernel fixes the layout) */
    if (!a2) {
        if (c->group_type != 2 || !c->tx || c->tw)
            return mf_fail(TILING, "%s: only groupType 2 with transposeX true and transposeWeight false is supported, "
                                   "got %lld, %s, %s", op, (long long)c->group_type, c->tx ? "true" : "false",
                           c->tw ? "true" : "false");
        if (E < 1 || E > GMMA_MAX_GROUPS)
            return mf_fail(TILING, "%s: groupList must have 1 to %d entries, got %lld", op, GMMA_MAX_GROUPS, (long long)E);
    }
    p->gt = 2;
    p->list_type = a2 ? 0 : (int)c->list_type; /* A2/A3's kernel: cumulative ends, always */
    p->accumulate = true;
    p->nx = p->nw = p->ny = 1;
    p->E = E, p->M = M, p->K = K, p->N = N;
    p->mrows = M, p->kmax = K;
    p->dtype = x->dtype, p->bias_dtype = ACL_FLOAT;
    p->pack_a = p->pack_b = true; /* 16-bit operands are widened to fp32 */
    /* x^T: (M, K) over x's (K, M) storage */
    p->t[0] = *x;
    p->t[0].dims[0] = M, p->t[0].dims[1] = K;
    p->t[0].strides[0] = x->strides[1], p->t[0].strides[1] = x->strides[0];
    p->t[1] = *w;
    p->t[2] = *y;
    if (!exact) { /* a contiguous y of E*M*N elements, seen as (E, M, N) */
        aclTensor *v = &p->t[2];
        v->ndim = 3;
        v->dims[0] = E, v->dims[1] = M, v->dims[2] = N;
        v->strides[0] = mn, v->strides[1] = N, v->strides[2] = 1;
    }
    p->workers = mf_num_threads();
    mf_gmm_tiles(p);
    return mf_op_publish(c->exec, slots, 0, p, GMMA_BYTES, gmma_run, mf_gmm_workspace(p), c->workspaceSize,
                         c->executor);
}

aclnnStatus aclnnGroupedMatmulAddGetWorkspaceSize(const aclTensor *x, const aclTensor *weight,
                                                  const aclTensor *groupList, aclTensor *yRef, bool transposeX,
                                                  bool transposeWeight, int64_t groupType, uint64_t *workspaceSize,
                                                  aclOpExecutor **executor) {
    const gmma_call c = {&EXEC_V1, x, weight, groupList, yRef, transposeX, transposeWeight, groupType, 0,
                         workspaceSize, executor};
    return gmma_gws(&c);
}

aclnnStatus aclnnGroupedMatmulAddV2GetWorkspaceSize(const aclTensor *x, const aclTensor *weight,
                                                    const aclTensor *groupList, aclTensor *yRef, bool transposeX,
                                                    bool transposeWeight, int64_t groupType, int64_t groupListType,
                                                    uint64_t *workspaceSize, aclOpExecutor **executor) {
    const gmma_call c = {&EXEC_V2, x, weight, groupList, yRef, transposeX, transposeWeight, groupType, groupListType,
                         workspaceSize, executor};
    return gmma_gws(&c);
}

aclnnStatus aclnnGroupedMatmulAdd(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GROUPED_MATMUL_ADD, "aclnnGroupedMatmulAdd", workspace, workspaceSize,
                               stream);
}

aclnnStatus aclnnGroupedMatmulAddV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GROUPED_MATMUL_ADD_V2, "aclnnGroupedMatmulAddV2", workspace,
                               workspaceSize, stream);
}

/* ---- registry entries (opdef.h): the public signature, yRef an output ---- */
enum { R_X, R_W, R_GL, R_Y, R_NT };
static const char *const RNAMES[R_NT] = {"x", "weight", "groupList", "yRef"};
static const unsigned RFLAGS[R_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED};
static const mf_dtcol RCOLS[] = {{ACL_FLOAT16, ACL_FLOAT16, ACL_INT64, ACL_FLOAT},
                                 {ACL_BF16, ACL_BF16, ACL_INT64, ACL_FLOAT}};
static const mf_op_def RSIG1 = {"aclnnGroupedMatmulAdd", MF_OP_GROUPED_MATMUL_ADD, 3, 1, RNAMES, RFLAGS, RCOLS, 2,
                                RCOLS, 2};
static const mf_op_def RSIG2 = {"aclnnGroupedMatmulAddV2", MF_OP_GROUPED_MATMUL_ADD_V2, 3, 1, RNAMES, RFLAGS, RCOLS,
                                2, RCOLS, 2};
static const mf_attr_desc ATTRS[] = {{"transposeX", MF_ATTR_BOOL, 0, 1},
                                     {"transposeWeight", MF_ATTR_BOOL, 0, 1},
                                     {"groupType", MF_ATTR_INT64, -1, 3},
                                     {"groupListType", MF_ATTR_INT64, -1, 2}};
static aclnnStatus gws1(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnGroupedMatmulAddGetWorkspaceSize(t[R_X], t[R_W], t[R_GL], (aclTensor *)t[R_Y], a[0].i != 0,
                                                 a[1].i != 0, a[2].i, ws, e);
}
static aclnnStatus gws2(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnGroupedMatmulAddV2GetWorkspaceSize(t[R_X], t[R_W], t[R_GL], (aclTensor *)t[R_Y], a[0].i != 0,
                                                   a[1].i != 0, a[2].i, a[3].i, ws, e);
}
const mf_op_entry mf_entry_grouped_matmul_add = {&RSIG1, ATTRS, 3, gws1, aclnnGroupedMatmulAdd};
const mf_op_entry mf_entry_grouped_matmul_add_v2 = {&RSIG2, ATTRS, 4, gws2, aclnnGroupedMatmulAddV2};
