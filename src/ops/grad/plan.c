/* plan.c - phase 1 of aclnnMoeFinalizeRoutingV2Grad: the definition table's
 * checks (opdef.c), then CANN's tiling checks in CANN's order (each cited in
 * docs/CANN_COMPAT.md), then a plan and the workspace it needs. Nothing is
 * read from tensor data here, and data addresses may still be NULL. */
#include "ops/grad/grad.h"

#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "ops/opdef.h"

static const char OP[] = "aclnnMoeFinalizeRoutingV2Grad";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY

static const char *const NAMES[G_NT] = {"gradY",          "expandedRowIdx",   "expandedXOptional",
                                        "scalesOptional", "expertIdxOptional", "biasOptional",
                                        "gradExpandedXOut", "gradScalesOut"};
static const unsigned FLAGS[G_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, 0, 0,
                                     MF_T_REQUIRED | MF_T_CONTIG, MF_T_REQUIRED | MF_T_CONTIG};
/* moe_finalize_routing_v2_grad_def.cpp: (gradY, expandedRowIdx, expandedX,
 * scales, expertIdx, bias | gradExpandedX, gradScales). Ascend 950: data T
 * and scales S independent; A2/A3: one dtype throughout. */
#define I32 ACL_INT32
#define COL(T, S) {T, I32, T, S, I32, T, T, S}
static const mf_dtcol COLS_950[] = {
    COL(ACL_FLOAT16, ACL_FLOAT16), COL(ACL_FLOAT16, ACL_FLOAT), COL(ACL_FLOAT16, ACL_BF16),
    COL(ACL_FLOAT, ACL_FLOAT16),   COL(ACL_FLOAT, ACL_FLOAT),   COL(ACL_FLOAT, ACL_BF16),
    COL(ACL_BF16, ACL_FLOAT16),    COL(ACL_BF16, ACL_FLOAT),    COL(ACL_BF16, ACL_BF16)};
static const mf_dtcol COLS_A2[] = {COL(ACL_FLOAT16, ACL_FLOAT16), COL(ACL_FLOAT, ACL_FLOAT), COL(ACL_BF16, ACL_BF16)};
#undef COL
static const mf_op_def DEF = {OP, MF_OP_GRAD, 6, 2, NAMES, FLAGS, COLS_950, 9, COLS_A2, 3};

/* The tiling checks name the calling operator and its parameters
 * (TokenUnpermuteGrad reaches them through its Ascend 950 translation). */
#define need_rank(i, t, rank) mf_check_rank(op, TILING, nm[i], t, rank)
#define need_dim(i, t, dim, want) mf_check_dim(op, TILING, nm[i], t, dim, want)
static aclnnStatus need_numel_(const char *op, const char *name, const aclTensor *t, int64_t want) {
    if (t->numel != want)
        return mf_fail(TILING, "%s: %s must hold R*K = %lld elements, got %lld", op, name, (long long)want,
                       (long long)t->numel);
    return ACLNN_SUCCESS;
}
#define need_numel(i, t, want) need_numel_(op, nm[i], t, want)

/* dim0 * dim1 == want (a 3-D tensor with dim2 = 0 may have a huge product). */
static bool dims01_are(const aclTensor *t, int64_t want) {
    int64_t v;
    return mf_mul_ok(t->dims[0], t->dims[1], &v) && v == want;
}

/* CANN's tiling (moe_finalize_routing_v2_grad_tiling.cpp), in its order:
 * optional companions, attributes, required inputs, the inputs scales brings,
 * then the outputs. Fills R, K, H, N, D0, E of p. */
aclnnStatus mf_grad_check_shapes(const mf_op_def *def, const int8_t *at, const aclTensor *const *slots,
                                 int64_t mode, int64_t active, int64_t en, int64_t ec, grad_plan *p) {
    const char *const op = def->name;
    const aclTensor *t[G_NT];
    const char *nm[G_NT];
    mf_by_role(at, G_NT, slots, def->names, t, nm);
    const aclTensor *gy = t[G_GY], *idx = t[G_IDX], *x = t[G_X], *sc = t[G_SCALES], *ei = t[G_EIDX],
                    *bias = t[G_BIAS], *gx = t[G_GX], *gs = t[G_GS];
    if (sc && !x) return mf_fail(TILING, "%s: %s is given, so %s must be too", op, nm[G_SCALES], nm[G_X]);
    if (sc && bias && !ei)
        return mf_fail(TILING, "%s: %s is given, so %s must be too", op, nm[G_BIAS], nm[G_EIDX]);
    if (mode != 0 && mode != 1)
        return mf_fail(TILING, "%s: dropPadMode must be 0 or 1, got %lld", op, (long long)mode);
    if (mode == 1 && (en <= 0 || ec <= 0))
        return mf_fail(TILING, "%s: dropPadMode 1 needs expertNum > 0 and expertCapacity > 0, got %lld and %lld",
                       op, (long long)en, (long long)ec);
    TRY(need_rank(G_GY, gy, 2));
    TRY(need_rank(G_IDX, idx, 1));
    const int64_t R = gy->dims[0], H = gy->dims[1], N = idx->dims[0];
    /* activeNum <= 0 or >= R*K means every entry (CANN checks no sign). */
    int64_t D0 = N;
    const int xrank = mode == 1 ? 3 : 2;
    if (mode == 0 && active > 0 && active < N) D0 = active;
    if (mode == 1 && !mf_mul_ok(en, ec, &D0))
        return mf_fail(TILING, "%s: expertNum*expertCapacity overflows int64", op);
    int64_t K = 1, E = 0;
    if (sc) {
        TRY(need_rank(G_X, x, xrank));
        TRY(need_rank(G_SCALES, sc, 2));
        if (bias) {
            TRY(need_rank(G_EIDX, ei, 2));
            TRY(need_rank(G_BIAS, bias, 2));
        }
        if (xrank == 2) {
            TRY(need_dim(G_X, x, 0, D0));
        } else if (!dims01_are(x, D0)) {
            return mf_fail(TILING, "%s: %s dim0*dim1 must be expertNum*expertCapacity = %lld, got %lld*%lld",
                           op, nm[G_X], (long long)D0, (long long)x->dims[0], (long long)x->dims[1]);
        }
        TRY(need_dim(G_X, x, xrank - 1, H));
        TRY(need_dim(G_SCALES, sc, 0, R));
        if (sc->numel != N)
            return mf_fail(TILING, "%s: %s must hold as many elements as %s (%lld), got %lld",
                           op, nm[G_SCALES], nm[G_IDX], (long long)N, (long long)sc->numel);
        K = sc->dims[1];
        if (bias) {
            TRY(need_dim(G_EIDX, ei, 0, R));
            TRY(need_numel(G_EIDX, ei, N));
            E = bias->dims[0];
            if (E <= 0) return mf_fail(TILING, "%s: %s dim0 must be > 0, got %lld", op, nm[G_BIAS], (long long)E);
            if (mode == 1) TRY(need_dim(G_BIAS, bias, 0, en));
            TRY(need_dim(G_BIAS, bias, 1, H));
        }
    } else if (R != N) {
        return mf_fail(TILING, "%s: without %s K is 1, so %s dim0 must be %s dim0 = %lld, got %lld",
                       op, nm[G_SCALES], nm[G_IDX], nm[G_GY], (long long)R, (long long)N);
    }
    if (gx->ndim != 2 && gx->ndim != 3)
        return mf_fail(TILING, "%s: %s must be 2-D or 3-D, got %d-D", op, nm[G_GX], (int)gx->ndim);
    if (mode == 0) { /* CANN compares dim0 and dim1 only, whatever the rank */
        TRY(need_dim(G_GX, gx, 0, D0));
        TRY(need_dim(G_GX, gx, 1, H));
    } else {
        char buf[160];
        if (gx->ndim != 3 || !dims01_are(gx, D0))
            return mf_fail(TILING, "%s: %s must be 3-D with dim0*dim1 = expertNum*expertCapacity = %lld, got %d-D %s",
                           op, nm[G_GX], (long long)D0, (int)gx->ndim, mf_shape_str(gx, buf, sizeof buf));
        TRY(need_dim(G_GX, gx, 2, H));
    }
    if (sc) {
        TRY(need_dim(G_GS, gs, 0, R));
        TRY(need_numel(G_GS, gs, N));
        TRY(need_rank(G_GS, gs, 2));
    }
    /* CANN writes D0 rows of H at row stride H: a 3-D (D0, H, 0) output in
     * mode 0 has no room for them (docs/CANN_COMPAT.md). */
    int64_t need;
    if (!mf_mul_ok(D0, H, &need) || gx->numel < need)
        return mf_fail(TILING, "%s: %s holds %lld elements but %lld rows of %lld are written", op, nm[G_GX],
                       (long long)gx->numel, (long long)D0, (long long)H);
    p->R = R; p->K = K; p->H = H; p->N = N; p->D0 = D0; p->E = E;
    return ACLNN_SUCCESS;
}

/* V2's executor keeps the roles in their own order. */
static const int8_t AT_V2[G_NT] = {G_GY, G_IDX, G_X, G_SCALES, G_EIDX, G_BIAS, G_GX, G_GS};

aclnnStatus aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(
    const aclTensor *gradY, const aclTensor *expandedRowIdx, const aclTensor *expandedXOptional,
    const aclTensor *scalesOptional, const aclTensor *expertIdxOptional, const aclTensor *biasOptional,
    int64_t dropPadMode, int64_t activeNum, int64_t expertNum, int64_t expertCapacity,
    const aclTensor *gradExpandedXOut, const aclTensor *gradScalesOut, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
    const aclTensor *t[G_NT] = {gradY,        expandedRowIdx, expandedXOptional, scalesOptional, expertIdxOptional,
                                biasOptional, gradExpandedXOut, gradScalesOut};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    grad_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.has_scales = scalesOptional != NULL;
    pl.has_bias = pl.has_scales && biasOptional != NULL;
    /* What CANN's tiling never reads, phase 2 neither checks nor reads. */
    unsigned unused = 0;
    if (!pl.has_scales) unused |= 1u << G_X | 1u << G_EIDX | 1u << G_BIAS | 1u << G_GS;
    else if (!pl.has_bias) unused |= 1u << G_EIDX | 1u << G_BIAS;
    if (mf_op_outputs_empty(&DEF, t)) { /* CANN's engine: nothing to do, no tiling */
        pl.empty = true;
        return mf_op_publish(&DEF, t, unused, &pl, sizeof pl, mf_grad_run, 0, workspaceSize, executor);
    }
    TRY(mf_grad_check_shapes(&DEF, AT_V2, t, dropPadMode, activeNum, expertNum, expertCapacity, &pl));
    pl.mode = (int)dropPadMode;
    return mf_grad_finish(&DEF, AT_V2, t, &pl, unused, workspaceSize, executor);
}

aclnnStatus mf_grad_finish(const mf_op_def *def, const int8_t *at, const aclTensor *const *slots, grad_plan *p,
                           unsigned unused, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *const OPN = def->name;
    grad_plan pl = *p;
    const aclTensor *t[G_NT];
    const char *nm[G_NT];
    mf_by_role(at, G_NT, slots, def->names, t, nm);
    memcpy(pl.at, at, sizeof pl.at);
    pl.op = def->name;
    pl.idx_name = nm[G_IDX];
    pl.x_name = nm[G_X];
    const aclTensor *gradY = t[G_GY], *expandedXOptional = t[G_X], *biasOptional = t[G_BIAS],
                    *gradScalesOut = t[G_GS];
    pl.strict = mf_index_strict();
    pl.dtype = gradY->dtype;
    pl.dt = mf_dt_of(gradY->dtype);
    pl.es = mf_dtype_size(gradY->dtype);
    pl.gs_dtype = gradScalesOut ? gradScalesOut->dtype : gradY->dtype;
    /* int32 indices name rows below 2^31 only; rows above are never named */
    pl.rows = pl.D0 < ((int64_t)1 << 31) ? pl.D0 : ((int64_t)1 << 31);
    pl.strict_hi = pl.mode == 0 ? pl.N : pl.D0;

    /* Workspace: each row's owner (the last entry naming it), the strict
     * bitmap, then packed copies of inputs whose elements are not adjacent. */
    uint64_t used = 0;
    const int64_t H = pl.H, row_bytes = H * (int64_t)pl.es;
    if (pl.N > INT32_MAX)
        return mf_fail(TILING, "%s: %s has %lld entries; moefr handles at most 2^31 - 1", OPN, nm[G_IDX],
                       (long long)pl.N);
    if (pl.N > 0 && H > 0) pl.ws_owner = mf_carve(&used, (uint64_t)pl.rows * 4);
    if (pl.strict && pl.N > 0) {
        const int64_t bits = pl.strict_hi < ((int64_t)1 << 31) ? pl.strict_hi : ((int64_t)1 << 31);
        pl.ws_bitmap = mf_carve(&used, mf_bitmap_bytes(bits));
    }
    const int order = mf_grad_order();
    pl.by_row = pl.N > 0 && row_bytes > 0 &&
                (order == MF_ORDER_ROW ||
                 (order == MF_ORDER_AUTO && row_bytes <= MF_BY_ROW_MAX_BYTES && pl.N * row_bytes >= mf_nt_threshold() / 4));
    const mf_rows gy = mf_rows_of(gradY);
    pl.pack_gy = pl.R > 0 && H > 0 && !mf_rows_dense(&gy, H, pl.es);
    if (pl.has_scales && pl.N > 0 && H > 0) {
        const mf_rows x = mf_rows_of(expandedXOptional);
        pl.pack_x = !mf_rows_dense(&x, H, pl.es);
        if (pl.has_bias) {
            const mf_rows b = mf_rows_of(biasOptional);
            pl.pack_bias = !mf_rows_dense(&b, H, pl.es);
        }
    }
    /* rows*H is a tensor's element count, already checked against int64 */
    const aclTensor *packed[] = {pl.pack_gy ? gradY : NULL, pl.pack_x ? expandedXOptional : NULL,
                                 pl.pack_bias ? biasOptional : NULL};
    uint64_t *offs[] = {&pl.ws_gy, &pl.ws_x, &pl.ws_bias};
    for (int i = 0; i < 3; i++) {
        int64_t bytes;
        if (packed[i] == NULL) continue;
        if (!mf_mul_ok(packed[i]->numel, (int64_t)pl.es, &bytes) || bytes > (INT64_MAX >> 2))
            return mf_fail(TILING, "%s: workspace to pack a strided input overflows", OPN);
        *offs[i] = mf_carve(&used, (uint64_t)bytes);
    }
    pl.ws_bytes = used;
    return mf_op_publish(def, slots, unused, &pl, sizeof pl, mf_grad_run, mf_workspace_with_slack(used), workspaceSize,
                         executor);
}

aclnnStatus aclnnMoeFinalizeRoutingV2Grad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                          aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GRAD, OP, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"dropPadMode", MF_ATTR_INT64, 0, 3},
                                     {"activeNum", MF_ATTR_INT64, 0, 64},
                                     {"expertNum", MF_ATTR_INT64, 0, 16},
                                     {"expertCapacity", MF_ATTR_INT64, 0, 16}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], a[0].i, a[1].i, a[2].i,
                                                         a[3].i, t[6], t[7], ws, e);
}
const mf_op_entry mf_entry_finalize_routing_v2_grad = {&DEF, ATTRS, 4, gws_thunk, aclnnMoeFinalizeRoutingV2Grad};
