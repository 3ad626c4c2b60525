/* init_routing_quant_v2.c - aclnnMoeInitRoutingQuantV2, both phases.
 * Phase 1: the definition table (opdef.c), then the checks of
 * moe_init_routing_quant_v2_tiling.cpp in its order: quantMode, the V2 base
 * (moe_init_routing_quant_v2_tiling_base.cpp GetShapeAttrsInfo and
 * CheckOutShape), the dynamic scale output, then scale/offset. Phase 2: the
 * routing core of InitRoutingV2 (routing.c: sort, src->dst map, counts)
 * without its byte gather, then each gathered row quantised (quant_int8.c). */
#include "aclnnop/aclnn_moe_init_routing_quant_v2.h"
#include "ops/opdef.h"
#include "ops/routing/quant_int8.h"
#include "ops/routing/routing.h"

static const char OP[] = "aclnnMoeInitRoutingQuantV2";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY

enum { S_X, S_EIDX, S_SCALE, S_OFFSET, S_EX, S_ROW, S_CNT, S_BEFORE, S_DQS, S_NT };
static const char *const NAMES[S_NT] = {"x",
                                        "expertIdx",
                                        "scaleOptional",
                                        "offsetOptional",
                                        "expandedXOut",
                                        "expandedRowIdxOut",
                                        "expertTokensCountOrCumsumOutOptional",
                                        "expertTokensBeforeCapacityOutOptional",
                                        "dynamicQuantScaleOutOptional"};
static const unsigned FLAGS[S_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0,           0,          MF_T_REQUIRED | MF_T_CONTIG,
                                     MF_T_REQUIRED | MF_T_CONTIG, MF_T_CONTIG, MF_T_CONTIG, MF_T_CONTIG};
/* moe_init_routing_quant_v2_def.cpp: (x, expert_idx, scale, offset |
 * expanded_x, expanded_row_idx, expert_tokens_count_or_cumsum,
 * expert_tokens_before_capacity, dynamic_quant_scale); one table for
 * ascend910b, ascend910_93 and ascend910_95. */
#define I32 ACL_INT32
#define F32 ACL_FLOAT
#define COL(T) {T, I32, F32, F32, ACL_INT8, I32, I32, I32, F32}
static const mf_dtcol COLS[] = {COL(ACL_FLOAT16), COL(ACL_BF16), COL(ACL_FLOAT)};
#undef COL
static const mf_op_def DEF = {OP, MF_OP_INIT_ROUTING_QUANT_V2, 4, 5, NAMES, FLAGS, COLS, 3, COLS, 3};

enum { SMOOTH_NONE = 0, SMOOTH_1H = 1, SMOOTH_EH = 2 };
typedef struct irq2_plan {
    mf_route_plan r;
    int quant_mode, smooth;
} irq2_plan;

#define need_rank(i, t, rank) mf_check_rank(OP, TILING, NAMES[i], t, rank)
#define need_dim(i, t, dim, want) mf_check_dim(OP, TILING, NAMES[i], t, dim, want)

/* CheckTokenCount: a flagged count output is given, 1-D, expertNum long. */
static aclnnStatus check_count_out(int i, const aclTensor *t, int64_t E) {
    if (t == NULL) return mf_fail(TILING, "%s: %s is NULL but its flag asks for it", OP, NAMES[i]);
    TRY(need_rank(i, t, 1));
    return need_dim(i, t, 0, E);
}

static aclnnStatus check_shapes(const aclTensor *const *t, int64_t activeNum, int64_t C, int64_t E, int64_t mode,
                                int64_t cflag, bool bflag, int64_t qmode, irq2_plan *pl) {
    const aclTensor *x = t[S_X], *ei = t[S_EIDX], *ex = t[S_EX], *row = t[S_ROW];
    mf_route_plan *p = &pl->r;
    /* MoeInitRoutingQuantV2TilingBase::GetShapeAttrsInfo: quantMode first */
    if (qmode < 0 || qmode > 1) return mf_fail(TILING, "%s: quantMode must be 0 or 1, got %lld", OP, (long long)qmode);
    /* InnerMoeInitRoutingV2TilingBase::GetShapeAttrsInfo */
    if (x->ndim != 2 || ei->ndim != 2)
        return mf_fail(TILING, "%s: x and expertIdx must be 2-D, got %d-D and %d-D", OP, (int)x->ndim, (int)ei->ndim);
    if (x->dims[0] != ei->dims[0])
        return mf_fail(TILING, "%s: x dim0 (%lld) and expertIdx dim0 (%lld) must be equal", OP,
                       (long long)x->dims[0], (long long)ei->dims[0]);
    if (activeNum < 0) return mf_fail(TILING, "%s: activeNum must be >= 0, got %lld", OP, (long long)activeNum);
    if (C < 0) return mf_fail(TILING, "%s: expertCapacity must be >= 0, got %lld", OP, (long long)C);
    if (E < 0) return mf_fail(TILING, "%s: expertNum must be >= 0, got %lld", OP, (long long)E);
    if (mode < 0 || mode > 1) return mf_fail(TILING, "%s: dropPadMode must be 0 or 1, got %lld", OP, (long long)mode);
    if (mode == 1 && (C < 1 || E < 1))
        return mf_fail(TILING, "%s: dropPadMode 1 needs expertCapacity > 0 and expertNum > 0, got %lld and %lld", OP,
                       (long long)C, (long long)E);
    if (cflag < 0 || cflag > 2)
        return mf_fail(TILING, "%s: expertTokensCountOrCumsumFlag must be 0, 1 or 2, got %lld", OP, (long long)cflag);
    if (cflag > 0 && E <= 0)
        return mf_fail(TILING, "%s: expertTokensCountOrCumsumFlag %lld needs expertNum > 0, got %lld", OP,
                       (long long)cflag, (long long)E);
    if (mode == 1 && C > x->dims[0])
        return mf_fail(TILING, "%s: expertCapacity (%lld) must be <= x dim0 (%lld) in dropPadMode 1", OP,
                       (long long)C, (long long)x->dims[0]);
    if (mode == 1) cflag = 0; /* CANN: no count output in drop/pad mode */
    else bflag = false;       /* nor a before-capacity output without it */
    const int64_t N = x->dims[0], K = ei->dims[1], H = x->dims[1];
    int64_t T, EC = 0;
    if (!mf_mul_ok(N, K, &T) || T > INT32_MAX)
        return mf_fail(TILING, "%s: N*K = %lld*%lld must fit int32 (expandedRowIdxOut values)", OP, (long long)N,
                       (long long)K);
    if (mode == 1 && (!mf_mul_ok(E, C, &EC) || EC > INT32_MAX))
        return mf_fail(TILING, "%s: expertNum*expertCapacity = %lld*%lld must fit int32", OP, (long long)E,
                       (long long)C);
    /* CheckOutShape: the base's, then the dynamic scale output */
    const int64_t A = mode == 1 ? 0 : activeNum == 0 ? T : (activeNum < T ? activeNum : T);
    if (mode == 1) {
        TRY(need_rank(S_EX, ex, 3));
        TRY(need_dim(S_EX, ex, 0, E));
        TRY(need_dim(S_EX, ex, 1, C));
        TRY(need_dim(S_EX, ex, 2, H));
    } else {
        TRY(need_rank(S_EX, ex, 2));
        TRY(need_dim(S_EX, ex, 0, A));
        TRY(need_dim(S_EX, ex, 1, H));
    }
    TRY(need_rank(S_ROW, row, 1));
    TRY(need_dim(S_ROW, row, 0, T));
    if (cflag != 0) TRY(check_count_out(S_CNT, t[S_CNT], E));
    if (bflag) TRY(check_count_out(S_BEFORE, t[S_BEFORE], E));
    if (qmode != 0) {
        const aclTensor *d = t[S_DQS];
        if (d == NULL) return mf_fail(TILING, "%s: dynamicQuantScaleOutOptional is NULL in quantMode 1", OP);
        TRY(need_rank(S_DQS, d, 1));
        TRY(need_dim(S_DQS, d, 0, mode == 1 ? EC : A));
    }
    /* then scale and offset */
    const aclTensor *sc = t[S_SCALE], *of = t[S_OFFSET];
    pl->smooth = SMOOTH_NONE;
    if (qmode == 0) {
        if (sc == NULL) return mf_fail(TILING, "%s: scaleOptional is NULL in quantMode 0", OP);
        if (of == NULL) return mf_fail(TILING, "%s: offsetOptional is NULL in quantMode 0", OP);
        TRY(need_rank(S_SCALE, sc, 1));
        TRY(need_dim(S_SCALE, sc, 0, 1));
        TRY(need_rank(S_OFFSET, of, 1));
        TRY(need_dim(S_OFFSET, of, 0, 1));
    } else if (sc != NULL) {
        TRY(need_rank(S_SCALE, sc, 2));
        if (sc->dims[0] != 1 && sc->dims[0] != E)
            return mf_fail(TILING, "%s: scaleOptional dim0 must be 1 or expertNum (%lld), got %lld", OP, (long long)E,
                           (long long)sc->dims[0]);
        TRY(need_dim(S_SCALE, sc, 1, H));
        pl->smooth = sc->dims[0] == 1 ? SMOOTH_1H : SMOOTH_EH;
    }
    pl->quant_mode = (int)qmode;
    p->drop_pad = mode == 1;
    p->count_flag = (int)cflag;
    p->before_flag = bflag;
    p->N = N; p->K = K; p->T = T; p->H = H; p->A = A; p->E = E; p->C = C;
    /* ids index the counts, the experts' rows or the smooth rows in drop/pad
     * mode, with a count or an (expertNum, H) scale; otherwise CANN only
     * requires them >= 0 */
    p->key_hi = p->drop_pad || cflag != 0 || pl->smooth == SMOOTH_EH ? E : MF_SORT_KEY_MAX;
    return ACLNN_SUCCESS;
}

static aclnnStatus irq2_run(const void *plan, const aclTensor *const *t, void *workspace);

aclnnStatus aclnnMoeInitRoutingQuantV2GetWorkspaceSize(
    const aclTensor *x, const aclTensor *expertIdx, const aclTensor *scaleOptional, const aclTensor *offsetOptional,
    int64_t activeNum, int64_t expertCapacity, int64_t expertNum, int64_t dropPadMode,
    int64_t expertTokensCountOrCumsumFlag, bool expertTokensBeforeCapacityFlag, int64_t quantMode,
    const aclTensor *expandedXOut, const aclTensor *expandedRowIdxOut,
    const aclTensor *expertTokensCountOrCumsumOutOptional, const aclTensor *expertTokensBeforeCapacityOutOptional,
    const aclTensor *dynamicQuantScaleOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *t[S_NT] = {x,
                                expertIdx,
                                scaleOptional,
                                offsetOptional,
                                expandedXOut,
                                expandedRowIdxOut,
                                expertTokensCountOrCumsumOutOptional,
                                expertTokensBeforeCapacityOutOptional,
                                dynamicQuantScaleOutOptional};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    irq2_plan pl;
    memset(&pl, 0, sizeof pl);
    if (mf_op_outputs_empty(&DEF, t)) { /* CANN's engine: nothing to do, no tiling */
        pl.r.empty = true;
        return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, irq2_run, 0, workspaceSize, executor);
    }
    TRY(check_shapes(t, activeNum, expertCapacity, expertNum, dropPadMode, expertTokensCountOrCumsumFlag,
                     expertTokensBeforeCapacityFlag, quantMode, &pl));
    pl.r.es = mf_dtype_size(x->dtype);
    TRY(mf_route_layout(OP, &pl.r, 0));
    /* tensors the mode and flags do not use are neither read nor written */
    unsigned unused = 0;
    if (pl.r.count_flag == 0 && expertTokensCountOrCumsumOutOptional) unused |= 1u << S_CNT;
    if (!pl.r.before_flag && expertTokensBeforeCapacityOutOptional) unused |= 1u << S_BEFORE;
    if (pl.quant_mode == 0 && dynamicQuantScaleOutOptional) unused |= 1u << S_DQS;
    if (pl.quant_mode == 1 && offsetOptional) unused |= 1u << S_OFFSET;
    return mf_op_publish(&DEF, t, unused, &pl, sizeof pl, irq2_run, mf_workspace_with_slack(pl.r.ws_bytes),
                         workspaceSize, executor);
}

typedef struct qg2_ctx {
    const irq2_plan *p;
    mf_q8 q;
    mf_rows x, sm;
    int xdtype;
    const int32_t *map;   /* flat source position per gathered row, -1 empty */
    const uint32_t *key;  /* expert id per flat position */
    int8_t *out;
    float *dqs;           /* NULL in static mode */
} qg2_ctx;

static void qg2_rows(void *vctx, int64_t i0, int64_t i1) {
    const qg2_ctx *c = vctx;
    const mf_route_plan *r = &c->p->r;
    const int64_t H = r->H;
    for (int64_t i = i0; i < i1; i++) {
        int8_t *o = c->out + i * H;
        const int32_t j = c->map[i];
        if (j < 0) { /* an empty drop/pad slot */
            memset(o, 0, (size_t)H);
            if (c->dqs) c->dqs[i] = 0.0f;
            continue;
        }
        const char *sm = NULL;
        if (c->p->smooth == SMOOTH_1H) sm = mf_row(&c->sm, 0);
        else if (c->p->smooth == SMOOTH_EH) sm = mf_row(&c->sm, r->drop_pad ? i / r->C : (int64_t)c->key[j]);
        const int32_t jn = i + 1 < i1 ? c->map[i + 1] : -1; /* the next row, prefetched meanwhile */
        const float s = mf_quant_int8_row(&c->q, mf_row(&c->x, j / r->K), c->x.s_col, c->xdtype, sm, c->sm.s_col, H, o,
                                          jn < 0 ? NULL : mf_row(&c->x, jn / r->K));
        if (c->dqs) c->dqs[i] = s;
    }
    if (c->q.nt) mf_kernels()->fence(); /* this worker's streaming stores land before the pool's join */
}

static float read_f32(const aclTensor *t) {
    float v;
    memcpy(&v, mf_tensor_base(t), 4);
    return v;
}

static aclnnStatus irq2_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const irq2_plan *p = plan;
    const mf_route_plan *r = &p->r;
    if (r->empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OP));
    char *ws = mf_align64(workspace);
    const bool counted = r->key_hi != MF_SORT_KEY_MAX;
    int64_t *counts = counted ? (int64_t *)(ws + r->ws_counts) : NULL;
    int64_t max_key = 0;
    /* every id is checked before anything is written */
    TRY(mf_read_expert_keys(OP, "expertIdx", t[S_EIDX], r->N, r->K, r->key_hi, (uint32_t *)(ws + r->ws_key), counts,
                            &max_key));
    int32_t *cnt = !r->drop_pad && r->count_flag != 0 ? (int32_t *)mf_tensor_base(t[S_CNT]) : NULL;
    int32_t *before = r->drop_pad && r->before_flag ? (int32_t *)mf_tensor_base(t[S_BEFORE]) : NULL;
    /* the sort, expandedRowIdxOut and the counts; no byte gather */
    mf_route_sorted(r, max_key, counts, NULL, NULL, (int32_t *)mf_tensor_base(t[S_ROW]), cnt, before, ws);
    const int64_t rows = r->drop_pad ? r->E * r->C : r->A;
    if (rows <= 0 || r->H <= 0) {
        if (p->quant_mode == 1 && rows > 0) memset(mf_tensor_base(t[S_DQS]), 0, (size_t)rows * 4);
        return ACLNN_SUCCESS;
    }
    qg2_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.q.mode = p->quant_mode;
    c.q.nt = p->quant_mode == 1 && rows * r->H >= mf_nt_threshold(); /* no read-for-ownership of out's lines */
    if (p->quant_mode == 0) { /* the kernel reads both as fp32 and takes them to fp16 */
        c.q.hs = mf_f32_to_f16(read_f32(t[S_SCALE]));
        c.q.ho = mf_f32_to_f16(read_f32(t[S_OFFSET]));
    }
    c.x = mf_rows_of(t[S_X]);
    if (p->smooth != SMOOTH_NONE) c.sm = mf_rows_of(t[S_SCALE]);
    c.xdtype = t[S_X]->dtype;
    c.map = mf_route_gather_map(r, ws);
    c.key = (const uint32_t *)(ws + r->ws_key);
    c.out = (int8_t *)mf_tensor_base(t[S_EX]);
    c.dqs = p->quant_mode == 1 ? (float *)mf_tensor_base(t[S_DQS]) : NULL;
    mf_parallel_for(rows, qg2_rows, &c, 16384 / r->H + 1);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeInitRoutingQuantV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                       aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_INIT_ROUTING_QUANT_V2, OP, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"activeNum", MF_ATTR_INT64, 0, 64},
                                     {"expertCapacity", MF_ATTR_INT64, 0, 16},
                                     {"expertNum", MF_ATTR_INT64, 0, 16},
                                     {"dropPadMode", MF_ATTR_INT64, 0, 1},
                                     {"expertTokensCountOrCumsumFlag", MF_ATTR_INT64, 0, 2},
                                     {"expertTokensBeforeCapacityFlag", MF_ATTR_BOOL, 0, 1},
                                     {"quantMode", MF_ATTR_INT64, 0, 1}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeInitRoutingQuantV2GetWorkspaceSize(t[0], t[1], t[2], t[3], a[0].i, a[1].i, a[2].i, a[3].i, a[4].i,
                                                      a[5].i != 0, a[6].i, t[4], t[5], t[6], t[7], t[8], ws, e);
}
const mf_op_entry mf_entry_init_routing_quant_v2 = {&DEF, ATTRS, 7, gws_thunk, aclnnMoeInitRoutingQuantV2};
