/* init_routing_v3.c - aclnnMoeInitRoutingV3, both phases. Phase 1: the
 * definition table (moe_init_routing_v3_def.cpp), then the tiling checks in
 * the order of ops-transformer master's moe_init_routing_v3_tiling_arch35.cpp
 * (CheckSetAttrs, CheckSetListAttrs, CheckSetInputs, CheckSetEmptyTensor,
 * CheckOutputs). Phase 2: ids to sort keys (in-range first, ids past the range
 * after them, ids below it last), the shared stable sort (sort.c), then the
 * row gather, optionally quantised to int8. docs/CANN_COMPAT.md cites each rule. */
#include "aclnnop/aclnn_moe_init_routing_v3.h"
#include "ops/opdef.h"
#include "ops/routing/routing.h"
#include "ops/routing/quant_int8.h"

static const char OP[] = "aclnnMoeInitRoutingV3";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY

enum { S_X, S_EIDX, S_SCALE, S_OFFSET, S_EX, S_ROW, S_CNT, S_ESCALE, S_NT };
static const char *const NAMES[S_NT] = {"x",         "expertIdx",         "scaleOptional",
                                        "offsetOptional", "expandedXOut", "expandedRowIdxOut",
                                        "expertTokensCountOrCumsumOut", "expandedScaleOut"};
static const unsigned FLAGS[S_NT] = {MF_T_REQUIRED,
                                     MF_T_REQUIRED,
                                     0,
                                     0,
                                     MF_T_REQUIRED | MF_T_CONTIG,
                                     MF_T_REQUIRED | MF_T_CONTIG,
                                     MF_T_REQUIRED | MF_T_CONTIG,
                                     MF_T_REQUIRED | MF_T_CONTIG};
/* moe_init_routing_v3_def.cpp (one table for ascend910b, ascend910_93 and
 * ascend910_95): x -> expanded_x as INT8->INT8, FLOAT16/BF16/FLOAT -> itself,
 * FLOAT16/BF16/FLOAT -> INT8 (quantised); the rest fixed. */
#define COL(X, EX) {X, ACL_INT32, ACL_FLOAT, ACL_FLOAT, EX, ACL_INT32, ACL_INT64, ACL_FLOAT}
static const mf_dtcol COLS[] = {COL(ACL_INT8, ACL_INT8),    COL(ACL_FLOAT16, ACL_FLOAT16), COL(ACL_BF16, ACL_BF16),
                                COL(ACL_FLOAT, ACL_FLOAT),  COL(ACL_FLOAT16, ACL_INT8),    COL(ACL_BF16, ACL_INT8),
                                COL(ACL_FLOAT, ACL_INT8)};
#undef COL
static const mf_op_def DEF = {OP, MF_OP_INIT_ROUTING_V3, 4, 4, NAMES, FLAGS, COLS, 7, COLS, 7};

/* expert_tokens_num_type, quant_mode, row_idx_type values */
enum { CUMSUM = 0, COUNT = 1, KEY_VALUE = 2 };
enum { UNQUANT = -1, STATIC_QUANT = 0, DYNAMIC_QUANT = 1 };
enum { GATHER = 0, SCATTER = 1 };
#define EXPERT_MAX 10240
#define KV_EXPERT_MAX (EXPERT_MAX / 2)

typedef struct v3_plan {
    bool empty;
    bool drop_pad;
    int quant, row_type, count_type;
    bool has_scale;   /* quant -1: a 1-D scale gathered to expandedScaleOut; quant 1: the smooth scale */
    bool skip_x;      /* quant 1 with INT8 x: CANN's kernel writes neither expandedX nor expandedScale */
    bool counts_out;  /* expertTokensNumFlag (A2/A3 take false: the counts are not written) */
    bool escale_out;  /* expandedScaleOut written: quant 1, or quant -1 with a scale */
    bool smooth1;     /* quant 1 with a (1, H) smooth scale (A2/A3): every row uses row 0 */
    int64_t rows;     /* dropless expandedXOut rows: T (Ascend 950), min(activeNum, T) (A2/A3) */
    int xdt;
    int64_t N, K, T, H, E, C, start, end, L;
    size_t es;
    uint64_t ws_key, ws_key2, ws_pos, ws_perm, ws_counts, ws_map, ws_sort, ws_bytes;
} v3_plan;

#define need_rank(i, t, rank) mf_check_rank(OP, TILING, NAMES[i], t, rank)
#define need_dim(i, t, dim, want) mf_check_dim(OP, TILING, NAMES[i], t, dim, want)

/* CheckSetAttrs (arch35 tiling, ValidateExpertTokensNumType .. ValidateRowIdxType) */
static aclnnStatus check_attrs(int64_t E, int64_t C, int64_t mode, int64_t type, bool flag, int64_t quant,
                               int64_t row_type) {
    if (type < CUMSUM || type > KEY_VALUE)
        return mf_fail(TILING, "%s: expertTokensNumType must be 0, 1 or 2, got %lld", OP, (long long)type);
    if (mode == 1 && type != COUNT)
        return mf_fail(TILING, "%s: expertTokensNumType must be 1 (count) when dropPadMode is 1, got %lld", OP,
                       (long long)type);
    const int64_t emax = type == KEY_VALUE ? KV_EXPERT_MAX : EXPERT_MAX;
    if (E <= 0 || E > emax)
        return mf_fail(TILING, "%s: expertNum must be in [1, %lld], got %lld", OP, (long long)emax, (long long)E);
    if (mode != 0 && mode != 1)
        return mf_fail(TILING, "%s: dropPadMode must be 0 or 1, got %lld", OP, (long long)mode);
    if (mode == 1 && C <= 0)
        return mf_fail(TILING, "%s: expertCapacity must be > 0 when dropPadMode is 1, got %lld", OP, (long long)C);
    if (!flag) return mf_fail(TILING, "%s: expertTokensNumFlag must be true", OP);
    if (mode == 1 && quant != UNQUANT)
        return mf_fail(TILING, "%s: quantMode must be -1 when dropPadMode is 1, got %lld", OP, (long long)quant);
    /* CANN's list; modes 2..17 need fp8/hifloat8/fp4/int4 tensors moefr has no dtype for */
    const bool cann_mode = (quant >= -1 && quant <= 9) || (quant >= 11 && quant <= 17);
    if (!cann_mode)
        return mf_fail(TILING, "%s: quantMode must be one of -1, 0..9, 11..17, got %lld", OP, (long long)quant);
    if (quant > DYNAMIC_QUANT)
        return mf_fail(TILING, "%s: quantMode %lld (fp8/hifloat8/mx/int4) is not supported by moefr; use -1, 0 or 1",
                       OP, (long long)quant);
    if (mode == 1 && row_type != GATHER)
        return mf_fail(TILING, "%s: rowIdxType must be 0 when dropPadMode is 1, got %lld", OP, (long long)row_type);
    if (row_type != GATHER && row_type != SCATTER)
        return mf_fail(TILING, "%s: rowIdxType must be 0 or 1, got %lld", OP, (long long)row_type);
    return ACLNN_SUCCESS;
}

/* GetInputAttrsInfo + CheckSetListAttrs */
static aclnnStatus check_range(const aclIntArray *range, int64_t E, int64_t mode, int64_t *start, int64_t *end) {
    const mf_array *a = (const mf_array *)(const void *)range;
    if (a == NULL) return mf_fail(TILING, "%s: activeExpertRangeOptional is NULL; it must hold 2 values", OP);
    if (a->n != 2)
        return mf_fail(TILING, "%s: activeExpertRangeOptional must hold 2 values, got %llu", OP,
                       (unsigned long long)a->n);
    memcpy(start, a->values, 8);
    memcpy(end, (const char *)a->values + 8, 8);
    if (*start < 0) return mf_fail(TILING, "%s: expert_start must be >= 0, got %lld", OP, (long long)*start);
    if (*start >= *end)
        return mf_fail(TILING, "%s: expert_start (%lld) must be less than expert_end (%lld)", OP, (long long)*start,
                       (long long)*end);
    if (*end > E)
        return mf_fail(TILING, "%s: expert_end (%lld) must be <= expertNum (%lld)", OP, (long long)*end,
                       (long long)E);
    if (mode == 1 && (*start != 0 || *end != E))
        return mf_fail(TILING, "%s: activeExpertRangeOptional must be [0, %lld] when dropPadMode is 1, got [%lld, %lld]",
                       OP, (long long)E, (long long)*start, (long long)*end);
    return ACLNN_SUCCESS;
}

/* CheckSetInputs: x (rank, dtype per quantMode), expertIdx, scale, offset */
static aclnnStatus check_inputs(const aclTensor *const *t, int64_t quant, int64_t L) {
    const aclTensor *x = t[S_X], *ei = t[S_EIDX], *sc = t[S_SCALE], *of = t[S_OFFSET];
    TRY(need_rank(S_X, x, 2));
    const int xdt = x->dtype;
    const bool fl = xdt == ACL_FLOAT || xdt == ACL_FLOAT16 || xdt == ACL_BF16;
    if ((quant == STATIC_QUANT && !fl) || (quant != STATIC_QUANT && !fl && xdt != ACL_INT8))
        return mf_fail(TILING, "%s: x dtype %d is unsupported under quantMode %lld", OP, xdt, (long long)quant);
    TRY(need_rank(S_EIDX, ei, 2));
    if (ei->dims[0] != x->dims[0])
        return mf_fail(TILING, "%s: expertIdx dim0 (%lld) must equal x dim0 (%lld)", OP, (long long)ei->dims[0],
                       (long long)x->dims[0]);
    if (quant == STATIC_QUANT) {
        if (sc == NULL) return mf_fail(TILING, "%s: scaleOptional is required when quantMode is 0", OP);
        TRY(need_rank(S_SCALE, sc, 1));
        TRY(need_dim(S_SCALE, sc, 0, 1));
    } else if (sc != NULL) {
        if (quant == UNQUANT) {
            TRY(need_rank(S_SCALE, sc, 1));
            TRY(need_dim(S_SCALE, sc, 0, x->dims[0]));
        } else {
            TRY(need_rank(S_SCALE, sc, 2));
            TRY(need_dim(S_SCALE, sc, 0, L));
            TRY(need_dim(S_SCALE, sc, 1, x->dims[1]));
        }
    }
    if (quant == STATIC_QUANT) {
        if (of == NULL) return mf_fail(TILING, "%s: offsetOptional is required when quantMode is 0", OP);
        TRY(need_rank(S_OFFSET, of, 1));
        TRY(need_dim(S_OFFSET, of, 0, 1));
    }
    return ACLNN_SUCCESS;
}

/* CheckOutputs */
static aclnnStatus check_outputs(const aclTensor *const *t, const v3_plan *p) {
    const aclTensor *ex = t[S_EX], *cnt = t[S_CNT], *es = t[S_ESCALE];
    if (p->drop_pad) {
        TRY(need_rank(S_EX, ex, 3));
        TRY(need_dim(S_EX, ex, 0, p->E));
        TRY(need_dim(S_EX, ex, 1, p->C));
        TRY(need_dim(S_EX, ex, 2, p->H));
    } else {
        TRY(need_rank(S_EX, ex, 2));
        TRY(need_dim(S_EX, ex, 0, p->T));
        TRY(need_dim(S_EX, ex, 1, p->H));
    }
    if (p->quant != UNQUANT && ex->dtype != ACL_INT8)
        return mf_fail(TILING, "%s: expandedXOut must be INT8 when quantMode is %d, got dtype %d", OP, p->quant,
                       (int)ex->dtype);
    TRY(need_rank(S_ROW, t[S_ROW], 1));
    TRY(need_dim(S_ROW, t[S_ROW], 0, p->T));
    if (p->count_type == KEY_VALUE) {
        TRY(need_rank(S_CNT, cnt, 2));
        TRY(need_dim(S_CNT, cnt, 0, p->E));
        TRY(need_dim(S_CNT, cnt, 1, 2));
    } else {
        TRY(need_rank(S_CNT, cnt, 1));
        TRY(need_dim(S_CNT, cnt, 0, p->L));
    }
    if (p->quant != STATIC_QUANT && (p->quant == DYNAMIC_QUANT || p->has_scale)) {
        TRY(need_rank(S_ESCALE, es, 1));
        TRY(need_dim(S_ESCALE, es, 0, p->drop_pad ? p->E * p->C : p->T));
    }
    return ACLNN_SUCCESS;
}

/* The A2/A3 rule set (MOEFR_SOC=ascend910b): master's moe_init_routing_v3_tiling.cpp CheckAttr,
 * CheckInputShape, CheckOutShape, CheckDtype. Fills p's shape fields. */
static aclnnStatus check_a2(const aclTensor *const *t, int64_t activeNum, int64_t C, int64_t E, int64_t mode,
                            int64_t type, bool flag, int64_t quant, const aclIntArray *range, int64_t row_type,
                            v3_plan *p) {
    const aclTensor *x = t[S_X], *ei = t[S_EIDX], *sc = t[S_SCALE], *of = t[S_OFFSET];
    if (mode != 0 && mode != 1)
        return mf_fail(TILING, "%s: dropPadMode must be 0 or 1, got %lld", OP, (long long)mode);
    if (mode == 0 && activeNum < -1)
        return mf_fail(TILING, "%s: activeNum must be >= -1, got %lld", OP, (long long)activeNum);
    if (E <= 0) return mf_fail(TILING, "%s: expertNum must be > 0, got %lld", OP, (long long)E);
    const mf_array *a = (const mf_array *)(const void *)range;
    const uint64_t na = a ? a->n : 0;
    if (na != 2 && na != 0)
        return mf_fail(TILING, "%s: activeExpertRangeOptional must hold 2 values or none, got %llu", OP,
                       (unsigned long long)na);
    int64_t start = 0, end = E;
    if (na == 2) memcpy(&start, a->values, 8), memcpy(&end, (const char *)a->values + 8, 8);
    TRY(need_rank(S_X, x, 2));
    const int64_t N = x->dims[0];
    if (mode == 1) {
        if (C <= 0 || C > N)
            return mf_fail(TILING, "%s: expertCapacity must be in [1, %lld] when dropPadMode is 1, got %lld", OP,
                           (long long)N, (long long)C);
        if (row_type == SCATTER) return mf_fail(TILING, "%s: rowIdxType must be 0 when dropPadMode is 1", OP);
        if (start != 0 || end != E)
            return mf_fail(TILING, "%s: activeExpertRangeOptional must be [0, %lld] when dropPadMode is 1, got "
                           "[%lld, %lld]", OP, (long long)E, (long long)start, (long long)end);
    }
    if (type < CUMSUM || type > KEY_VALUE)
        return mf_fail(TILING, "%s: expertTokensNumType must be 0, 1 or 2, got %lld", OP, (long long)type);
    if (mode == 1 && flag && type != COUNT)
        return mf_fail(TILING, "%s: expertTokensNumType must be 1 (count) in dropPadMode 1 with expertTokensNumFlag",
                       OP);
    if (start < 0) return mf_fail(TILING, "%s: expert_start must be >= 0, got %lld", OP, (long long)start);
    if (start >= end)
        return mf_fail(TILING, "%s: expert_start (%lld) must be less than expert_end (%lld)", OP, (long long)start,
                       (long long)end);
    if (end > E)
        return mf_fail(TILING, "%s: expert_end (%lld) must be <= expertNum (%lld)", OP, (long long)end, (long long)E);
    const int64_t emax = type == KEY_VALUE ? KV_EXPERT_MAX : EXPERT_MAX;
    if (end > emax)
        return mf_fail(TILING, "%s: expert_end (%lld) must be <= %lld", OP, (long long)end, (long long)emax);
    if (quant < UNQUANT || quant > DYNAMIC_QUANT)
        return mf_fail(TILING, "%s: quantMode must be -1, 0 or 1 on A2/A3, got %lld", OP, (long long)quant);
    if (row_type != GATHER && row_type != SCATTER)
        return mf_fail(TILING, "%s: rowIdxType must be 0 or 1, got %lld", OP, (long long)row_type);
    /* CheckInputShape */
    TRY(need_rank(S_EIDX, ei, 2));
    if (ei->dims[0] != N)
        return mf_fail(TILING, "%s: expertIdx dim0 (%lld) must equal x dim0 (%lld)", OP, (long long)ei->dims[0],
                       (long long)N);
    const int64_t K = ei->dims[1], H = x->dims[1];
    int64_t T;
    if (!mf_mul_ok(N, K, &T) || T > INT32_MAX)
        return mf_fail(TILING, "%s: N*K = %lld*%lld must fit int32 (expandedRowIdxOut values)", OP, (long long)N,
                       (long long)K);
    const int64_t act = activeNum == 0 || activeNum == -1 ? T : (activeNum < T ? activeNum : T);
    if (quant == UNQUANT && sc) {
        TRY(need_rank(S_SCALE, sc, 1));
        TRY(need_dim(S_SCALE, sc, 0, N));
    }
    if (quant == STATIC_QUANT) {
        if (sc == NULL) return mf_fail(TILING, "%s: scaleOptional is required when quantMode is 0", OP);
        if (of == NULL) return mf_fail(TILING, "%s: offsetOptional is required when quantMode is 0", OP);
        TRY(need_rank(S_SCALE, sc, 1));
        TRY(need_dim(S_SCALE, sc, 0, 1));
        TRY(need_rank(S_OFFSET, of, 1));
        TRY(need_dim(S_OFFSET, of, 0, 1));
    }
    if (quant == DYNAMIC_QUANT && sc) {
        TRY(need_rank(S_SCALE, sc, 2));
        if (sc->dims[0] != end - start && sc->dims[0] != 1)
            return mf_fail(TILING, "%s: scaleOptional dim0 must be %lld or 1, got %lld", OP,
                           (long long)(end - start), (long long)sc->dims[0]);
        TRY(need_dim(S_SCALE, sc, 1, H));
    }
    p->smooth1 = quant == DYNAMIC_QUANT && sc && sc->dims[0] == 1;
    p->N = N, p->K = K, p->T = T, p->H = H, p->E = E, p->C = C, p->start = start, p->end = end, p->L = end - start;
    p->drop_pad = mode == 1;
    p->rows = p->drop_pad ? 0 : act;
    p->counts_out = flag;
    p->count_type = (int)type;
    /* CheckOutShape */
    const aclTensor *ex = t[S_EX], *cnt = t[S_CNT], *es = t[S_ESCALE];
    if (p->drop_pad) {
        TRY(need_rank(S_EX, ex, 3));
        TRY(need_dim(S_EX, ex, 0, E));
        TRY(need_dim(S_EX, ex, 1, C));
        TRY(need_dim(S_EX, ex, 2, H));
    } else {
        TRY(need_rank(S_EX, ex, 2));
        TRY(need_dim(S_EX, ex, 0, act));
        TRY(need_dim(S_EX, ex, 1, H));
    }
    TRY(need_rank(S_ROW, t[S_ROW], 1));
    TRY(need_dim(S_ROW, t[S_ROW], 0, T));
    if (flag && type == KEY_VALUE) {
        TRY(need_rank(S_CNT, cnt, 2));
        TRY(need_dim(S_CNT, cnt, 0, E));
        TRY(need_dim(S_CNT, cnt, 1, 2));
    } else if (flag) {
        TRY(need_rank(S_CNT, cnt, 1));
        TRY(need_dim(S_CNT, cnt, 0, end - start));
    }
    /* CANN checks it only with a scale; the dynamic kernel writes it regardless (checked here for safety) */
    if (quant == DYNAMIC_QUANT || (quant == UNQUANT && sc)) {
        TRY(need_rank(S_ESCALE, es, 1));
        TRY(need_dim(S_ESCALE, es, 0, p->drop_pad ? E * C : act));
    }
    /* CheckDtype: INT8 x only unquantised; quantised expandedX is INT8 */
    if (x->dtype == ACL_INT8 && quant != UNQUANT)
        return mf_fail(TILING, "%s: INT8 x needs quantMode -1 on A2/A3, got %lld", OP, (long long)quant);
    if (quant != UNQUANT && ex->dtype != ACL_INT8)
        return mf_fail(TILING, "%s: expandedXOut must be INT8 when quantMode is %lld", OP, (long long)quant);
    return ACLNN_SUCCESS;
}

static aclnnStatus v3_run(const void *plan, const aclTensor *const *t, void *workspace);

aclnnStatus aclnnMoeInitRoutingV3GetWorkspaceSize(
    const aclTensor *x, const aclTensor *expertIdx, const aclTensor *scaleOptional, const aclTensor *offsetOptional,
    int64_t activeNum, int64_t expertCapacity, int64_t expertNum, int64_t dropPadMode, int64_t expertTokensNumType,
    bool expertTokensNumFlag, int64_t quantMode, const aclIntArray *activeExpertRangeOptional, int64_t rowIdxType,
    const aclTensor *expandedXOut, const aclTensor *expandedRowIdxOut, const aclTensor *expertTokensCountOrCumsumOut,
    const aclTensor *expandedScaleOut, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *t[S_NT] = {x,           expertIdx,         scaleOptional,                offsetOptional,
                                expandedXOut, expandedRowIdxOut, expertTokensCountOrCumsumOut, expandedScaleOut};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    v3_plan pl;
    memset(&pl, 0, sizeof pl);
    if (mf_op_outputs_empty(&DEF, t)) {
        pl.empty = true;
        return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, v3_run, 0, workspaceSize, executor);
    }
    if (mf_soc_strict()) {
        TRY(check_a2(t, activeNum, expertCapacity, expertNum, dropPadMode, expertTokensNumType, expertTokensNumFlag,
                     quantMode, activeExpertRangeOptional, rowIdxType, &pl));
        pl.empty = pl.N == 0 || pl.K == 0 || pl.H == 0;
    } else {
        TRY(check_attrs(expertNum, expertCapacity, dropPadMode, expertTokensNumType, expertTokensNumFlag, quantMode,
                        rowIdxType));
        int64_t start = 0, end = 0;
        TRY(check_range(activeExpertRangeOptional, expertNum, dropPadMode, &start, &end));
        TRY(check_inputs(t, quantMode, end - start));
        const int64_t N = x->dims[0], K = expertIdx->dims[1], H = x->dims[1];
        if (dropPadMode == 1 && expertCapacity > N)
            return mf_fail(TILING, "%s: expertCapacity (%lld) must be <= x dim0 (%lld) when dropPadMode is 1", OP,
                           (long long)expertCapacity, (long long)N);
        int64_t T;
        if (!mf_mul_ok(N, K, &T) || T > INT32_MAX)
            return mf_fail(TILING, "%s: N*K = %lld*%lld must fit int32 (expandedRowIdxOut values)", OP, (long long)N,
                           (long long)K);
        /* CheckSetEmptyTensor: activeNum is checked (-1 or N*K) only when nothing is empty */
        pl.empty = N == 0 || K == 0 || H == 0;
        if (!pl.empty && activeNum != -1 && activeNum != T)
            return mf_fail(TILING, "%s: activeNum must be -1 or N*K (%lld), got %lld", OP, (long long)T,
                           (long long)activeNum);
        pl.drop_pad = dropPadMode == 1;
        pl.quant = (int)quantMode;
        pl.has_scale = scaleOptional != NULL;
        pl.count_type = (int)expertTokensNumType;
        pl.N = N; pl.K = K; pl.T = T; pl.H = H; pl.E = expertNum; pl.C = expertCapacity;
        pl.start = start; pl.end = end; pl.L = end - start;
        pl.rows = pl.drop_pad ? 0 : T;
        pl.counts_out = true;
        int64_t EC0 = 0;
        if (pl.drop_pad && (!mf_mul_ok(pl.E, pl.C, &EC0) || EC0 > INT32_MAX))
            return mf_fail(TILING, "%s: expertNum*expertCapacity = %lld*%lld must fit int32", OP, (long long)pl.E,
                           (long long)pl.C);
        TRY(check_outputs(t, &pl));
    }
    const int64_t T = pl.T;
    pl.quant = (int)quantMode;
    pl.row_type = (int)rowIdxType;
    pl.has_scale = scaleOptional != NULL;
    pl.xdt = x->dtype;
    pl.skip_x = quantMode == DYNAMIC_QUANT && x->dtype == ACL_INT8;
    pl.escale_out = (quantMode == DYNAMIC_QUANT && !pl.skip_x) || (quantMode == UNQUANT && pl.has_scale);
    pl.es = mf_dtype_size(x->dtype);
    int64_t EC = 0;
    if (pl.drop_pad && (!mf_mul_ok(pl.E, pl.C, &EC) || EC > INT32_MAX))
        return mf_fail(TILING, "%s: expertNum*expertCapacity = %lld*%lld must fit int32", OP, (long long)pl.E,
                       (long long)pl.C);
    /* quantMode -1 moves rows as they are: expandedXOut must be x's dtype
     * (the table also pairs FLOAT16/BF16/FLOAT x with INT8 out, which the
     * kernel would overrun) */
    if (quantMode == UNQUANT && expandedXOut->dtype != x->dtype)
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: expandedXOut dtype %d must equal x dtype %d when quantMode is -1",
                       OP, (int)expandedXOut->dtype, (int)x->dtype);
    if (pl.empty) return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, v3_run, 0, workspaceSize, executor);
    uint64_t used = 0;
    pl.ws_key = mf_carve(&used, (uint64_t)T * 4);
    pl.ws_key2 = mf_carve(&used, (uint64_t)T * 4);
    pl.ws_pos = mf_carve(&used, (uint64_t)T * 4);
    pl.ws_perm = mf_carve(&used, (uint64_t)T * 4);
    pl.ws_counts = mf_carve(&used, (uint64_t)pl.L * 8);
    if (pl.drop_pad) pl.ws_map = mf_carve(&used, (uint64_t)EC * 4);
    pl.ws_sort = mf_carve(&used, mf_sort_scratch_bytes(T, MF_SORT_KEY_MAX));
    pl.ws_bytes = used;
    /* expandedScaleOut is written only with quant 1 or a quant -1 scale (CANN checks it only then); the
     * counts only with expertTokensNumFlag */
    const unsigned unused = (pl.escale_out ? 0u : 1u << S_ESCALE) | (pl.counts_out ? 0u : 1u << S_CNT);
    return mf_op_publish(&DEF, t, unused, &pl, sizeof pl, v3_run, mf_workspace_with_slack(pl.ws_bytes), workspaceSize,
                         executor);
}

/* ---- phase 2 ---- */

typedef struct v3_ctx {
    const v3_plan *p;
    mf_rows x;
    const int32_t *src;   /* output row i takes x row src[i] / K; -1: a row of zeros */
    const uint32_t *key;  /* sort keys by flat position (the expert is start + key) */
    const char *smooth;   /* quant 1: (L, H) fp32, or NULL */
    int64_t sm_s0, sm_s1; /* its strides in elements */
    int8_t *out;
    float *scale_out;
    mf_q8 q; /* quant 0: fp16 scaleOptional[0], offsetOptional[0] (the kernel reads each once) */
} v3_ctx;

static void quant_rows(void *vc, int64_t i0, int64_t i1) {
    const v3_ctx *c = vc;
    const v3_plan *p = c->p;
    for (int64_t i = i0; i < i1; i++) {
        int8_t *q = c->out + i * p->H;
        const int32_t j = c->src[i];
        if (j < 0) {
            memset(q, 0, (size_t)p->H);
            if (c->scale_out) c->scale_out[i] = 0.0f;
            continue;
        }
        /* the arithmetic of arch35 moe_v3_gather_static_quant.h / moe_v3_gather_dynamic_quant.h:
         * the static one is QuantV2's; the dynamic one rounds the fp32 quotient half to even */
        const char *sm = c->smooth ? c->smooth + (int64_t)c->key[j] * c->sm_s0 * 4 : NULL;
        const int32_t jn = i + 1 < i1 ? c->src[i + 1] : -1; /* the next row, prefetched meanwhile */
        const float s = mf_quant_int8_row(&c->q, mf_row(&c->x, j / p->K), c->x.s_col, p->xdt, sm, c->sm_s1 * 4, p->H, q,
                                          jn < 0 ? NULL : mf_row(&c->x, jn / p->K));
        if (c->scale_out) c->scale_out[i] = s;
    }
    if (c->q.nt) mf_kernels()->fence(); /* this worker's streaming stores land before the pool's join */
}

static aclnnStatus v3_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const v3_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OP));
    char *ws = mf_align64(workspace);
    const int64_t T = p->T, K = p->K, L = p->L, start = p->start, end = p->end;
    uint32_t *key = (uint32_t *)(ws + p->ws_key);
    int32_t *perm = (int32_t *)(ws + p->ws_perm);
    int64_t *counts = (int64_t *)(ws + p->ws_counts);
    /* CANN's order: ids in [start, end) first by id, then ids past the
     * range by id, then ids below it in position order (its sort gives them
     * all the lowest key). Keys are id - start (< 2^31); the ids below start
     * are left out of the sort and appended. No id is refused, none is used
     * as an address. */
    const mf_small ev = mf_small_of(t[S_EIDX]);
    uint32_t *key2 = (uint32_t *)(ws + p->ws_key2);
    int32_t *pos = (int32_t *)(ws + p->ws_pos);
    uint32_t kmax = 0;
    int64_t A = 0, n2 = 0;
    memset(counts, 0, (size_t)L * 8);
    for (int64_t r = 0; r < p->N; r++)
        for (int64_t k = 0; k < K; k++) {
            const int64_t e = mf_small_index(&ev, r, k), j = r * K + k;
            if (e < start) {
                key[j] = UINT32_MAX;
                continue;
            }
            const uint32_t kk = (uint32_t)(e - start);
            key[j] = kk;
            key2[n2] = kk;
            pos[n2++] = (int32_t)j;
            if (kk > kmax) kmax = kk;
            if (e < end) counts[e - start]++, A++;
        }
    mf_sort_by_key(key2, n2, (int64_t)kmax + 1, perm, ws + p->ws_sort, NULL);
    for (int64_t i = 0; i < n2; i++) perm[i] = pos[perm[i]];
    for (int64_t j = 0; j < T; j++)
        if (key[j] == UINT32_MAX) perm[n2++] = (int32_t)j;
    const mf_rows xv = mf_rows_of(t[S_X]);
    char *ex = mf_tensor_base(t[S_EX]);
    int32_t *row = (int32_t *)mf_tensor_base(t[S_ROW]);
    const int64_t rows = p->drop_pad ? p->E * p->C : p->rows;
    const int32_t *src; /* output row -> flat position, -1 for none */
    if (!p->drop_pad) {
        if (p->row_type == SCATTER) {
            memcpy(row, perm, (size_t)T * 4);
        } else {
            for (int64_t j = 0; j < T; j++) row[j] = -1;
            for (int64_t i = 0; i < A; i++) row[perm[i]] = (int32_t)i;
        }
        /* rows past A (nothing routed there): moefr writes zeros; perm's
         * tail is reused as the -1 marks */
        for (int64_t i = A; i < T; i++) perm[i] = -1;
        src = perm;
    } else {
        int32_t *map = (int32_t *)(ws + p->ws_map);
        for (int64_t j = 0; j < T; j++) row[j] = -1;
        int64_t i = 0;
        for (int64_t e = 0; e < L; e++) {
            const int64_t n = counts[e];
            for (int64_t s = 0; s < n; s++, i++) {
                if (s < p->C) {
                    map[e * p->C + s] = perm[i];
                    row[perm[i]] = (int32_t)(e * p->C + s);
                }
            }
            for (int64_t s = n; s < p->C; s++) map[e * p->C + s] = -1;
        }
        src = map;
    }
    /* counts over the range */
    int64_t *cnt = p->counts_out ? (int64_t *)mf_tensor_base(t[S_CNT]) : NULL;
    if (cnt == NULL) {
    } else if (p->count_type == KEY_VALUE) {
        int64_t n = 0;
        for (int64_t e = 0; e < L; e++)
            if (counts[e] > 0) cnt[2 * n] = start + e, cnt[2 * n + 1] = counts[e], n++;
        memset(cnt + 2 * n, 0, (size_t)(p->E - n) * 16); /* CANN leaves these rows unspecified */
    } else {
        int64_t run = 0;
        for (int64_t e = 0; e < L; e++) run += counts[e], cnt[e] = p->count_type == CUMSUM ? run : counts[e];
    }
    float *escale = p->escale_out ? (float *)mf_tensor_base(t[S_ESCALE]) : NULL;
    if (p->quant == UNQUANT) {
        mf_gather_rows(&xv, p->H, p->es, src, K, rows, ex);
        if (escale) {
            const mf_small sv = mf_small_of(t[S_SCALE]);
            for (int64_t i = 0; i < rows; i++) escale[i] = src[i] < 0 ? 0.0f : mf_small_f32(&sv, src[i] / K, 0);
        }
        return ACLNN_SUCCESS;
    }
    if (p->skip_x) return ACLNN_SUCCESS;
    v3_ctx c = {p, xv, src, key, NULL, 0, 0, (int8_t *)(void *)ex, p->quant == DYNAMIC_QUANT ? escale : NULL,
                {p->quant, true, 0, 0, p->quant == DYNAMIC_QUANT && rows * p->H >= mf_nt_threshold()}};
    if (p->quant == STATIC_QUANT) {
        const mf_small sv = mf_small_of(t[S_SCALE]), ov = mf_small_of(t[S_OFFSET]);
        c.q.hs = mf_f32_to_f16(mf_small_f32(&sv, 0, 0));
        c.q.ho = mf_f32_to_f16(mf_small_f32(&ov, 0, 0));
    }
    if (p->quant == DYNAMIC_QUANT && p->has_scale) {
        const aclTensor *sm = t[S_SCALE];
        c.smooth = mf_tensor_base(sm);
        c.sm_s0 = p->smooth1 ? 0 : sm->strides[0];
        c.sm_s1 = sm->strides[1];
    }
    const int64_t per_row = p->H * (int64_t)(p->es + 1) + 1;
    mf_parallel_for(rows, quant_rows, &c, (256 * 1024) / per_row + 1);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeInitRoutingV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                  aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_INIT_ROUTING_V3, OP, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"activeNum", MF_ATTR_INT64, -1, 64},
                                     {"expertCapacity", MF_ATTR_INT64, -1, 16},
                                     {"expertNum", MF_ATTR_INT64, 1, 16},
                                     {"dropPadMode", MF_ATTR_INT64, 0, 1},
                                     {"expertTokensNumType", MF_ATTR_INT64, 0, 2},
                                     {"expertTokensNumFlag", MF_ATTR_BOOL, 0, 1},
                                     {"quantMode", MF_ATTR_INT64, -1, 1},
                                     {"activeExpertRangeOptional", MF_ATTR_INT_ARRAY, 0, 2},
                                     {"rowIdxType", MF_ATTR_INT64, 0, 1}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeInitRoutingV3GetWorkspaceSize(t[0], t[1], t[2], t[3], a[0].i, a[1].i, a[2].i, a[3].i, a[4].i,
                                                 a[5].i != 0, a[6].i, a[7].arr, a[8].i, t[4], t[5], t[6], t[7], ws,
                                                 e);
}
const mf_op_entry mf_entry_init_routing_v3 = {&DEF, ATTRS, 9, gws_thunk, aclnnMoeInitRoutingV3};
