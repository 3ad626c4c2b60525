/* plan.c - phase 1 of aclnnMoeFinalizeRoutingV2: the definition table's
 * checks (opdef.c), then CANN's tiling checks in the order of
 * moe_finalize_routing_v2_tiling_membase.cpp (each cited in
 * docs/CANN_COMPAT.md); then, shared with the other front end
 * (finalize_routing.c), a plan and the workspace it needs (mf_fwd_publish).
 * Nothing is read from tensor data here, and data addresses may still be NULL. */
#include "ops/forward/forward.h"

#include "aclnnop/aclnn_moe_finalize_routing_v2.h"

static const char OP[] = "aclnnMoeFinalizeRoutingV2";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY

static const char *const NAMES[F_NT] = {"expandedX",    "expandedRowIdx", "x1Optional",        "x2Optional",
                                        "biasOptional", "scalesOptional", "expertIdxOptional", "out"};
static const unsigned FLAGS[F_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, 0, 0, 0, MF_T_REQUIRED | MF_T_CONTIG};
/* moe_finalize_routing_v2_def.cpp: (expandedX, expandedRowIdx, x1, x2, bias,
 * scales, expertIdx | out). Ascend 950: scales S free of the data dtype T;
 * A2/A3: S = T, plus FLOAT scales with BFLOAT16 data. */
#define I32 ACL_INT32
#define COL(T, S) {T, I32, T, T, T, S, I32, T}
static const mf_dtcol COLS_950[] = {
    COL(ACL_FLOAT16, ACL_FLOAT16), COL(ACL_FLOAT16, ACL_FLOAT), COL(ACL_FLOAT16, ACL_BF16),
    COL(ACL_FLOAT, ACL_FLOAT16),   COL(ACL_FLOAT, ACL_FLOAT),   COL(ACL_FLOAT, ACL_BF16),
    COL(ACL_BF16, ACL_FLOAT16),    COL(ACL_BF16, ACL_FLOAT),    COL(ACL_BF16, ACL_BF16)};
static const mf_dtcol COLS_A2[] = {COL(ACL_FLOAT16, ACL_FLOAT16), COL(ACL_FLOAT, ACL_FLOAT), COL(ACL_BF16, ACL_BF16),
                                   COL(ACL_BF16, ACL_FLOAT)};
#undef COL
static const mf_op_def DEF = {OP, MF_OP_FORWARD, 7, 1, NAMES, FLAGS, COLS_950, 9, COLS_A2, 4};

/* The tiling checks name the calling front end and its parameters
 * (TokenUnpermute reaches them through its Ascend 950 translation). */
#define need_rank(r, t, rank) mf_check_rank(op, TILING, NM(r), t, rank)
#define need_dim(r, t, dim, want) mf_check_dim(op, TILING, NM(r), t, dim, want)
#define NM(r) def->names[at[r]]
#define ROLE(r) (at[r] < 0 ? NULL : t[at[r]])

/* CANN's tiling (moe_finalize_routing_v2_tiling_membase.cpp), in its order,
 * over the front end's tensors t (roles mapped by at). Fills R, K, H, N, D0,
 * E of p. */
aclnnStatus mf_fwd_check_shapes(const mf_op_def *def, const int8_t *at, const aclTensor *const *t, int64_t mode,
                                fwd_plan *p) {
    const char *const op = def->name;
    const aclTensor *x = ROLE(F_X), *idx = ROLE(F_IDX), *x1 = ROLE(F_X1), *x2 = ROLE(F_X2), *bias = ROLE(F_BIAS),
                    *sc = ROLE(F_SCALES), *ei = ROLE(F_EIDX), *out = ROLE(F_OUT);
    if (mode < 0 || mode > 3)
        return mf_fail(TILING, "%s: dropPadMode must be 0, 1, 2 or 3, got %lld", op, (long long)mode);
    const bool drop_pad = mode == 1 || mode == 3;
    TRY(need_rank(F_IDX, idx, 1));
    const int64_t NK = idx->dims[0];
    int64_t K = 1;
    if (sc) {
        TRY(need_rank(F_SCALES, sc, 2));
        K = sc->dims[1];
        if (K == 0) return mf_fail(TILING, "%s: %s dim1 (K) must not be 0", op, NM(F_SCALES));
    }
    /* CANN: R = NK / K, rounding down; entries past R*K are never read. */
    const int64_t R = NK / K, N = R * K;
    TRY(need_rank(F_X, x, drop_pad ? 3 : 2));
    const int64_t H = x->dims[x->ndim - 1];
    int64_t D0 = x->dims[0], E = 0;
    if (drop_pad && !mf_mul_ok(x->dims[0], x->dims[1], &D0))
        return mf_fail(TILING, "%s: %s E*C overflows int64", op, NM(F_X));
    if (x1) {
        TRY(need_rank(F_X1, x1, 2));
        TRY(need_dim(F_X1, x1, 0, R));
        TRY(need_dim(F_X1, x1, 1, H));
    }
    if (x2) {
        if (!x1) return mf_fail(TILING, "%s: %s is given, so %s must be too", op, NM(F_X2), NM(F_X1));
        TRY(need_rank(F_X2, x2, 2));
        TRY(need_dim(F_X2, x2, 0, R));
        TRY(need_dim(F_X2, x2, 1, H));
    }
    if (bias) {
        if (!ei) return mf_fail(TILING, "%s: %s is given, so %s must be too", op, NM(F_BIAS), NM(F_EIDX));
        TRY(need_rank(F_BIAS, bias, 2));
        if (drop_pad) TRY(need_dim(F_BIAS, bias, 0, x->dims[0]));
        E = bias->dims[0];
        TRY(need_dim(F_BIAS, bias, 1, H));
    }
    if (ei) {
        TRY(need_rank(F_EIDX, ei, 2));
        TRY(need_dim(F_EIDX, ei, 0, R));
        TRY(need_dim(F_EIDX, ei, 1, K));
    }
    if (bias && E < K)
        return mf_fail(TILING, "%s: %s dim0 (E = %lld) must be >= K = %lld", op, NM(F_BIAS), (long long)E, (long long)K);
    if (bias && E == 0) return mf_fail(TILING, "%s: %s dim0 (E) must not be 0", op, NM(F_BIAS));
    TRY(need_rank(F_OUT, out, 2));
    TRY(need_dim(F_OUT, out, 0, R));
    TRY(need_dim(F_OUT, out, 1, H));
    /* CANN reads scales[r][k] for r < R without comparing scales dim0 with R
     * (docs/CANN_COMPAT.md): fewer rows would be read out of bounds. */
    if (sc && sc->dims[0] < R)
        return mf_fail(TILING, "%s: %s dim0 must be at least R = %lld, got %lld", op, NM(F_SCALES), (long long)R,
                       (long long)sc->dims[0]);
    p->R = R; p->K = K; p->H = H; p->N = N; p->D0 = D0; p->E = E;
    return ACLNN_SUCCESS;
}
#undef need_rank
#undef need_dim
#undef NM
#undef ROLE

/* V2's executor keeps the roles in their own order. */
static const int8_t AT_V2[F_NT] = {F_X, F_IDX, F_X1, F_X2, F_BIAS, F_SCALES, F_EIDX, F_OUT};

aclnnStatus aclnnMoeFinalizeRoutingV2GetWorkspaceSize(const aclTensor *expandedX, const aclTensor *expandedRowIdx,
                                                      const aclTensor *x1Optional, const aclTensor *x2Optional,
                                                      const aclTensor *biasOptional, const aclTensor *scalesOptional,
                                                      const aclTensor *expertIdxOptional, int64_t dropPadMode,
                                                      const aclTensor *out, uint64_t *workspaceSize,
                                                      aclOpExecutor **executor) {
    const aclTensor *t[F_NT] = {expandedX,      expandedRowIdx,    x1Optional, x2Optional, biasOptional,
                                scalesOptional, expertIdxOptional, out};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    if (mf_op_outputs_empty(&DEF, t)) /* CANN's engine: nothing to do, no tiling */
        return mf_fwd_publish_empty(&DEF, AT_V2, t, workspaceSize, executor);
    fwd_plan pl;
    memset(&pl, 0, sizeof pl);
    TRY(mf_fwd_check_shapes(&DEF, AT_V2, t, dropPadMode, &pl));
    /* Ascend 950's kernel drops mode-0/2 values at or past expandedX's rows */
    const bool drop_pad = dropPadMode == 1 || dropPadMode == 3;
    return mf_fwd_publish(&DEF, AT_V2, t, dropPadMode, !drop_pad && !mf_soc_strict(), &pl, workspaceSize, executor);
}

static void bind(fwd_plan *p, const mf_op_def *def, const int8_t *at) {
    p->def = def;
    memcpy(p->at, at, sizeof p->at);
}

aclnnStatus mf_fwd_publish_empty(const mf_op_def *def, const int8_t *at, const aclTensor *const *t,
                                 uint64_t *workspaceSize, aclOpExecutor **executor) {
    fwd_plan pl;
    memset(&pl, 0, sizeof pl);
    bind(&pl, def, at);
    pl.empty = true;
    return mf_op_publish(def, t, 0, &pl, sizeof pl, mf_fwd_run, 0, workspaceSize, executor);
}

aclnnStatus mf_fwd_publish(const mf_op_def *def, const int8_t *at, const aclTensor *const *t, int64_t mode,
                           bool drop_high, fwd_plan *p, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *op = def->name;
    bind(p, def, at);
#define ROLE(r) (at[r] < 0 ? NULL : t[at[r]])
    const aclTensor *expandedX = ROLE(F_X), *x1 = ROLE(F_X1), *x2 = ROLE(F_X2), *bias = ROLE(F_BIAS);
    p->mode = (int)mode;
    p->drop_pad = mode == 1 || mode == 3;
    p->row_laid = mode >= 2;
    p->has_x1 = x1 != NULL;
    p->has_x2 = x2 != NULL;
    p->has_bias = bias != NULL;
    p->has_scales = ROLE(F_SCALES) != NULL;
    p->has_eidx = ROLE(F_EIDX) != NULL;
#undef ROLE
    p->strict = mf_index_strict();
    p->drop_high = drop_high;
    p->dtype = expandedX->dtype;
    p->dt = mf_dt_of(expandedX->dtype);
    p->es = mf_dtype_size(expandedX->dtype);

    /* Workspace: the strict-mode bitmap (repeat check), then packed copies of
     * the inputs whose elements are not adjacent (kernels read unit-stride rows). */
    uint64_t used = 0;
    if (p->strict && p->N > 0) {
        const int64_t hi = p->drop_pad ? p->D0 : p->N; /* run.c's strict range */
        const int64_t bits = hi < ((int64_t)1 << 31) ? hi : ((int64_t)1 << 31); /* int32 reach */
        p->ws_bitmap = mf_carve(&used, mf_bitmap_bytes(bits));
    }
    const int64_t H = p->H;
    const bool work = p->R > 0 && H > 0;
    const mf_rows xv = mf_rows_of(expandedX);
    p->pack_x = work && p->N > 0 && !mf_rows_dense(&xv, H, p->es);
    if (work && p->has_x1) {
        const mf_rows v = mf_rows_of(x1);
        p->pack_x1 = !mf_rows_dense(&v, H, p->es);
    }
    if (work && p->has_x2) {
        const mf_rows v = mf_rows_of(x2);
        p->pack_x2 = !mf_rows_dense(&v, H, p->es);
    }
    if (work && p->has_bias && p->N > 0) {
        const mf_rows v = mf_rows_of(bias);
        p->pack_bias = !mf_rows_dense(&v, H, p->es);
    }
    const aclTensor *packed[] = {p->pack_x ? expandedX : NULL, p->pack_x1 ? x1 : NULL, p->pack_x2 ? x2 : NULL,
                                 p->pack_bias ? bias : NULL};
    uint64_t *offs[] = {&p->ws_x, &p->ws_x1, &p->ws_x2, &p->ws_bias};
    for (int i = 0; i < 4; i++) {
        int64_t bytes;
        if (packed[i] == NULL) continue;
        if (!mf_mul_ok(packed[i]->numel, (int64_t)p->es, &bytes) || bytes > (INT64_MAX >> 2))
            return mf_fail(TILING, "%s: workspace to pack a strided input overflows", op);
        *offs[i] = mf_carve(&used, (uint64_t)bytes);
    }
    p->ws_bytes = used;
    /* expertIdx without bias is checked for shape, never read */
    const unsigned unused = p->has_eidx && !p->has_bias ? 1u << at[F_EIDX] : 0;
    return mf_op_publish(def, t, unused, p, sizeof *p, mf_fwd_run, mf_workspace_with_slack(used), workspaceSize,
                         executor);
}

aclnnStatus aclnnMoeFinalizeRoutingV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                      aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_FORWARD, OP, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"dropPadMode", MF_ATTR_INT64, 0, 3}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeFinalizeRoutingV2GetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], a[0].i, t[7], ws, e);
}
const mf_op_entry mf_entry_finalize_routing_v2 = {&DEF, ATTRS, 1, gws_thunk, aclnnMoeFinalizeRoutingV2};
