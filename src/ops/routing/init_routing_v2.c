/* init_routing_v2.c - aclnnMoeInitRoutingV2, both phases. Phase 1: the
 * definition table's checks (opdef.c), then CANN's tiling checks in the order
 * of moe_init_routing_v2_tiling.cpp (GetShapeAttrsInfo, CheckOutShape), each
 * cited in docs/CANN_COMPAT.md. Phase 2: read and check the expert ids, the
 * shared stable sort (sort.c), the src->dst map, then the row gather. */
#include "aclnnop/aclnn_moe_init_routing_v2.h"
#include "ops/opdef.h"
#include "ops/routing/routing.h"

static const char OP[] = "aclnnMoeInitRoutingV2";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY

#define S_X MF_IR_X
#define S_EIDX MF_IR_EIDX
#define S_EX MF_IR_EX
#define S_ROW MF_IR_ROW
#define S_CNT MF_IR_CNT
#define S_BEFORE MF_IR_BEFORE
#define S_NT MF_IR_NT
static const char *const NAMES[S_NT] = {"x",        "expertIdx", "expandedXOut", "expandedRowIdxOut",
                                        "expertTokensCountOrCumsumOutOptional",
                                        "expertTokensBeforeCapacityOutOptional"};
static const unsigned FLAGS[S_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED | MF_T_CONTIG,
                                     MF_T_REQUIRED | MF_T_CONTIG, MF_T_CONTIG, MF_T_CONTIG};
/* moe_init_routing_v2_def.cpp: (x, expert_idx | expanded_x, expanded_row_idx,
 * expert_tokens_count_or_cumsum, expert_tokens_before_capacity). ascend910_95
 * (regbase): expert_idx INT32 or INT64; ascend910b / ascend910_93: INT32. */
#define I32 ACL_INT32
#define COL(T, I) {T, I, T, I32, I32, I32}
static const mf_dtcol COLS_950[] = {COL(ACL_FLOAT16, I32),       COL(ACL_BF16, I32),       COL(ACL_FLOAT, I32),
                                    COL(ACL_FLOAT16, ACL_INT64), COL(ACL_BF16, ACL_INT64), COL(ACL_FLOAT, ACL_INT64)};
static const mf_dtcol COLS_A2[] = {COL(ACL_FLOAT16, I32), COL(ACL_BF16, I32), COL(ACL_FLOAT, I32)};
#undef COL
static const mf_op_def DEF = {OP, MF_OP_INIT_ROUTING_V2, 2, 4, NAMES, FLAGS, COLS_950, 6, COLS_A2, 3};


/* The tiling checks name the calling operator and its parameters (TokenPermute
 * reaches them through its Ascend 950 translation). */
#define need_rank(i, t, rank) mf_check_rank(def->name, TILING, def->names[i], t, rank)
#define need_dim(i, t, dim, want) mf_check_dim(def->name, TILING, def->names[i], t, dim, want)

/* CheckTokenCount: a flagged count output is given, 1-D, expertNum long. */
static aclnnStatus check_count_out(const mf_op_def *def, int i, const aclTensor *t, int64_t E) {
    if (t == NULL) return mf_fail(TILING, "%s: %s is NULL but its flag asks for it", def->name, def->names[i]);
    TRY(need_rank(i, t, 1));
    return need_dim(i, t, 0, E);
}

aclnnStatus mf_ir_check_shapes(const mf_op_def *def, const aclTensor *const *t, int64_t activeNum, int64_t C,
                               int64_t E, int64_t mode, int64_t cflag, bool bflag, mf_route_plan *p) {
    const char *const op = def->name, *const *nm = def->names;
    const aclTensor *x = t[S_X], *ei = t[S_EIDX], *ex = t[S_EX], *row = t[S_ROW];
    const bool a2 = mf_soc_strict();
    TRY(need_rank(S_X, x, 2));
    const int64_t ei0 = ei->ndim >= 1 ? ei->dims[0] : -1;
    if (x->dims[0] != ei0)
        return mf_fail(TILING, "%s: %s dim0 (%lld) and %s dim0 (%lld) must be equal", op, nm[S_X],
                       (long long)x->dims[0], nm[S_EIDX], (long long)ei0);
    if (C < 0) return mf_fail(TILING, "%s: expertCapacity must be >= 0, got %lld", op, (long long)C);
    if (E < 0) return mf_fail(TILING, "%s: expertNum must be >= 0, got %lld", op, (long long)E);
    if (mode < 0 || mode > 1) return mf_fail(TILING, "%s: dropPadMode must be 0 or 1, got %lld", op, (long long)mode);
    if (mode == 1 && (C < 1 || E < 1))
        return mf_fail(TILING, "%s: dropPadMode 1 needs expertCapacity > 0 and expertNum > 0, got %lld and %lld", op,
                       (long long)C, (long long)E);
    if (cflag < 0 || cflag > 2)
        return mf_fail(TILING, "%s: expertTokensCountOrCumsumFlag must be 0, 1 or 2, got %lld", op, (long long)cflag);
    if (cflag > 0 && E <= 0)
        return mf_fail(TILING, "%s: expertTokensCountOrCumsumFlag %lld needs expertNum > 0, got %lld", op,
                       (long long)cflag, (long long)E);
    if (mode == 1 && C > x->dims[0])
        return mf_fail(TILING, "%s: expertCapacity (%lld) must be <= %s dim0 (%lld) in dropPadMode 1", op, (long long)C, nm[S_X],
                       (long long)x->dims[0]);
    if (mode == 1) cflag = 0; /* CANN: no count output in drop/pad mode */
    else bflag = false;       /* nor a before-capacity output without it */
    int64_t K;
    if (!a2) {
        if (ei->ndim != 1 && ei->ndim != 2)
            return mf_fail(TILING, "%s: %s must be 1-D or 2-D, got %d-D", op, nm[S_EIDX], (int)ei->ndim);
        K = ei->ndim == 2 ? ei->dims[1] : 1;
    } else {
        if (activeNum < 0)
            return mf_fail(TILING, "%s: activeNum must be >= 0, got %lld (MOEFR_SOC=ascend910b)", op,
                           (long long)activeNum);
        TRY(need_rank(S_EIDX, ei, 2));
        K = ei->dims[1];
    }
    const int64_t N = x->dims[0], H = x->dims[1];
    int64_t T;
    if (!mf_mul_ok(N, K, &T) || T > INT32_MAX)
        return mf_fail(TILING, "%s: N*K = %lld*%lld must fit int32 (%s values)", op, (long long)N,
                       (long long)K, nm[S_ROW]);
    /* CheckOutShape */
    int64_t A = 0;
    if (mode == 1) {
        TRY(need_rank(S_EX, ex, 3));
        TRY(need_dim(S_EX, ex, 0, E));
        TRY(need_dim(S_EX, ex, 1, C));
        TRY(need_dim(S_EX, ex, 2, H));
    } else {
        TRY(need_rank(S_EX, ex, 2));
        if (a2) {
            A = activeNum == 0 ? T : (activeNum < T ? activeNum : T);
        } else {
            A = activeNum <= 0 ? activeNum + T : activeNum;
            A = A < T ? A : T;
            A = A > 0 ? A : 0;
        }
        TRY(need_dim(S_EX, ex, 0, A));
        TRY(need_dim(S_EX, ex, 1, H));
    }
    TRY(need_rank(S_ROW, row, 1));
    TRY(need_dim(S_ROW, row, 0, T));
    if (cflag != 0) TRY(check_count_out(def, S_CNT, t[S_CNT], E));
    if (bflag) TRY(check_count_out(def, S_BEFORE, t[S_BEFORE], E));
    int64_t EC;
    if (mode == 1 && (!mf_mul_ok(E, C, &EC) || EC > INT32_MAX))
        return mf_fail(TILING, "%s: expertNum*expertCapacity = %lld*%lld must fit int32", op, (long long)E,
                       (long long)C);
    p->drop_pad = mode == 1;
    p->count_flag = (int)cflag;
    p->before_flag = bflag;
    p->N = N; p->K = K; p->T = T; p->H = H; p->A = A; p->E = E; p->C = C;
    /* ids index the counts (and experts' rows) in drop/pad mode or with a
     * count; otherwise CANN only requires them >= 0 */
    p->key_hi = p->drop_pad || cflag != 0 ? E : MF_SORT_KEY_MAX;
    return ACLNN_SUCCESS;
}

static aclnnStatus ir_run(const void *plan, const aclTensor *const *t, void *workspace);

aclnnStatus aclnnMoeInitRoutingV2GetWorkspaceSize(
    const aclTensor *x, const aclTensor *expertIdx, int64_t activeNum, int64_t expertCapacity, int64_t expertNum,
    int64_t dropPadMode, int64_t expertTokensCountOrCumsumFlag, bool expertTokensBeforeCapacityFlag,
    const aclTensor *expandedXOut, const aclTensor *expandedRowIdxOut,
    const aclTensor *expertTokensCountOrCumsumOutOptional, const aclTensor *expertTokensBeforeCapacityOutOptional,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *t[S_NT] = {x,           expertIdx, expandedXOut, expandedRowIdxOut,
                                expertTokensCountOrCumsumOutOptional, expertTokensBeforeCapacityOutOptional};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    mf_route_plan pl;
    memset(&pl, 0, sizeof pl);
    if (mf_op_outputs_empty(&DEF, t)) { /* CANN's engine: nothing to do, no tiling */
        pl.empty = true;
        return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, ir_run, 0, workspaceSize, executor);
    }
    TRY(mf_ir_check_shapes(&DEF, t, activeNum, expertCapacity, expertNum, dropPadMode,
                           expertTokensCountOrCumsumFlag, expertTokensBeforeCapacityFlag, &pl));
    pl.es = mf_dtype_size(x->dtype);
    TRY(mf_route_layout(OP, &pl, 0));
    /* count outputs the flags do not ask for are not written (CANN ignores them) */
    unsigned unused = 0;
    if (pl.count_flag == 0 && expertTokensCountOrCumsumOutOptional) unused |= 1u << S_CNT;
    if (!pl.before_flag && expertTokensBeforeCapacityOutOptional) unused |= 1u << S_BEFORE;
    return mf_op_publish(&DEF, t, unused, &pl, sizeof pl, ir_run, mf_workspace_with_slack(pl.ws_bytes), workspaceSize,
                         executor);
}

static aclnnStatus ir_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const mf_route_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OP));
    char *ws = mf_align64(workspace);
    const bool counted = p->key_hi != MF_SORT_KEY_MAX;
    int64_t *counts = counted ? (int64_t *)(ws + p->ws_counts) : NULL;
    int64_t max_key = 0;
    /* every id is checked before anything is written */
    TRY(mf_read_expert_keys(OP, "expertIdx", t[S_EIDX], p->N, p->K, p->key_hi, (uint32_t *)(ws + p->ws_key), counts,
                            &max_key));
    const mf_rows xv = mf_rows_of(t[S_X]);
    int32_t *cnt = !p->drop_pad && p->count_flag != 0 ? (int32_t *)mf_tensor_base(t[S_CNT]) : NULL;
    int32_t *before = p->drop_pad && p->before_flag ? (int32_t *)mf_tensor_base(t[S_BEFORE]) : NULL;
    mf_route_sorted(p, max_key, counts, &xv, mf_tensor_base(t[S_EX]), (int32_t *)mf_tensor_base(t[S_ROW]), cnt, before,
                    ws);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeInitRoutingV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                  aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_INIT_ROUTING_V2, OP, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"activeNum", MF_ATTR_INT64, 0, 64},
                                     {"expertCapacity", MF_ATTR_INT64, 0, 16},
                                     {"expertNum", MF_ATTR_INT64, 0, 16},
                                     {"dropPadMode", MF_ATTR_INT64, 0, 1},
                                     {"expertTokensCountOrCumsumFlag", MF_ATTR_INT64, 0, 2},
                                     {"expertTokensBeforeCapacityFlag", MF_ATTR_BOOL, 0, 1}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeInitRoutingV2GetWorkspaceSize(t[0], t[1], a[0].i, a[1].i, a[2].i, a[3].i, a[4].i, a[5].i != 0,
                                                 t[2], t[3], t[4], t[5], ws, e);
}
const mf_op_entry mf_entry_init_routing_v2 = {&DEF, ATTRS, 6, gws_thunk, aclnnMoeInitRoutingV2};
