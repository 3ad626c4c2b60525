/* init_routing.c - aclnnMoeInitRouting (the first version), both phases.
 * Phase 1: the definition table's checks (opdef.c), then CANN's tiling checks
 * in the order of moe_init_routing_tiling.cpp (GetShapeAttrsInfo, then
 * CheckOutShape), each cited in docs/CANN_COMPAT.md. Phase 2: read and check
 * rowIdx and the expert ids, the shared stable sort (sort.c), the src->dst
 * map, then the shared row gather (routing.c). */
#include "aclnnop/aclnn_moe_init_routing.h"
#include "ops/opdef.h"
#include "ops/routing/routing.h"

static const char OP[] = "aclnnMoeInitRouting";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY MF_TRY

#define S_X MF_IR1_X
#define S_RIDX MF_IR1_RIDX
#define S_EIDX MF_IR1_EIDX
#define S_EX MF_IR1_EX
#define S_ROW MF_IR1_ROW
#define S_EEX MF_IR1_EEX
#define S_NT MF_IR1_NT
static const char *const NAMES[S_NT] = {"x",           "rowIdx",           "expertIdx",
                                        "expandedXOut", "expandedRowIdxOut", "expandedExpertIdxOut"};
static const unsigned FLAGS[S_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED | MF_T_CONTIG,
                                     MF_T_REQUIRED | MF_T_CONTIG, MF_T_REQUIRED | MF_T_CONTIG};
/* moe_init_routing_def.cpp: (x, row_idx, expert_idx | expanded_x,
 * expanded_row_idx, expanded_expert_idx); one table for ascend910b,
 * ascend910_93 and ascend910_95. */
#define I32 ACL_INT32
#define COL(T) {T, I32, I32, T, I32, I32}
static const mf_dtcol COLS[] = {COL(ACL_FLOAT16), COL(ACL_BF16), COL(ACL_FLOAT)};
#undef COL
static const mf_op_def DEF = {OP, MF_OP_INIT_ROUTING, 3, 3, NAMES, FLAGS, COLS, 3, COLS, 3};

typedef mf_ir1_plan ir1_plan;

/* The tiling checks name the calling operator (InitRoutingQuant shares them). */
#define need_rank(name, t, rank) mf_check_rank(op, TILING, name, t, rank)
#define need_dim(name, t, dim, want) mf_check_dim(op, TILING, name, t, dim, want)

static bool same_shape(const aclTensor *a, const aclTensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

/* CANN's tiling, in its order. Fills N, K, T, H, A of p. */
aclnnStatus mf_ir1_check_shapes(const mf_op_def *def, const aclTensor *const *t, int64_t activeNum, ir1_plan *p) {
    const char *const op = def->name;
    const aclTensor *x = t[S_X], *ri = t[S_RIDX], *ei = t[S_EIDX], *ex = t[S_EX], *row = t[S_ROW],
                    *eex = t[S_EEX];
    char a[96], b[96];
    /* GetShapeAttrsInfo */
    TRY(need_rank("x", x, 2));
    TRY(need_rank("rowIdx", ri, 2));
    if (!same_shape(ri, ei))
        return mf_fail(TILING, "%s: rowIdx %s and expertIdx %s must have the same shape", op,
                       mf_shape_str(ri, a, sizeof a), mf_shape_str(ei, b, sizeof b));
    if (x->dims[0] != ei->dims[0])
        return mf_fail(TILING, "%s: x dim0 (%lld) and expertIdx dim0 (%lld) must be equal", op,
                       (long long)x->dims[0], (long long)ei->dims[0]);
    if (activeNum < 0) return mf_fail(TILING, "%s: activeNum must be >= 0, got %lld", op, (long long)activeNum);
    const int64_t N = ei->dims[0], K = ei->dims[1], H = x->dims[1];
    int64_t T;
    if (!mf_mul_ok(N, K, &T) || T > INT32_MAX)
        return mf_fail(TILING, "%s: N*K = %lld*%lld must fit int32 (expandedRowIdxOut values)", op, (long long)N,
                       (long long)K);
    /* CheckOutShape */
    TRY(need_rank("expandedXOut", ex, 2));
    TRY(need_rank("expandedRowIdxOut", row, 1));
    if (!same_shape(row, eex))
        return mf_fail(TILING, "%s: expandedRowIdxOut %s and expandedExpertIdxOut %s must have the same shape", op,
                       mf_shape_str(row, a, sizeof a), mf_shape_str(eex, b, sizeof b));
    const int64_t A = (activeNum < N ? activeNum : N) * K;
    TRY(need_dim("expandedXOut", ex, 0, A));
    TRY(need_dim("expandedXOut", ex, 1, H));
    TRY(need_dim("expandedRowIdxOut", row, 0, T));
    p->N = N; p->K = K; p->T = T; p->H = H; p->A = A;
    return ACLNN_SUCCESS;
}

static aclnnStatus ir1_run(const void *plan, const aclTensor *const *t, void *workspace);

aclnnStatus aclnnMoeInitRoutingGetWorkspaceSize(const aclTensor *x, const aclTensor *rowIdx,
                                                const aclTensor *expertIdx, int64_t activeNum,
                                                const aclTensor *expandedXOut, const aclTensor *expandedRowIdxOut,
                                                const aclTensor *expandedExpertIdxOut, uint64_t *workspaceSize,
                                                aclOpExecutor **executor) {
    const aclTensor *t[S_NT] = {x, rowIdx, expertIdx, expandedXOut, expandedRowIdxOut, expandedExpertIdxOut};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    ir1_plan pl;
    memset(&pl, 0, sizeof pl);
    if (mf_op_outputs_empty(&DEF, t)) { /* CANN's engine: nothing to do, no tiling */
        pl.empty = true;
        return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, ir1_run, 0, workspaceSize, executor);
    }
    TRY(mf_ir1_check_shapes(&DEF, t, activeNum, &pl));
    pl.es = mf_dtype_size(x->dtype);
    return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, ir1_run, mf_ir1_layout(&pl), workspaceSize, executor);
}

uint64_t mf_ir1_layout(ir1_plan *p) {
    p->strict = mf_index_strict();
    /* workspace: rowIdx read flat, the sort keys, the sorted positions (then
     * the gather's source rows), the strict-mode bitmap, the sort's scratch */
    uint64_t used = 0;
    const uint64_t T = (uint64_t)p->T;
    p->ws_src = mf_carve(&used, T * 4);
    p->ws_key = mf_carve(&used, T * 4);
    p->ws_perm = mf_carve(&used, T * 4);
    if (p->strict) p->ws_seen = mf_carve(&used, mf_bitmap_bytes(p->T));
    p->ws_sort = mf_carve(&used, mf_sort_scratch_bytes(p->T, MF_SORT_KEY_MAX));
    return mf_workspace_with_slack(used);
}

/* rowIdx into src[j] (j = r*K + k), each in [0, T); strict: none twice. */
static aclnnStatus read_row_idx(const char *op, const ir1_plan *p, const aclTensor *ri, int32_t *src, uint64_t *seen) {
    const mf_small v = mf_small_of(ri);
    if (seen) memset(seen, 0, mf_bitmap_bytes(p->T));
    for (int64_t r = 0; r < p->N; r++)
        for (int64_t k = 0; k < p->K; k++) {
            const int32_t d = mf_small_i32(&v, r, k);
            if (d < 0 || d >= p->T)
                return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: rowIdx[%lld][%lld] = %d is out of range [0, %lld)", op,
                               (long long)r, (long long)k, (int)d, (long long)p->T);
            if (seen) {
                if (mf_bit(seen, d))
                    return mf_fail(ACLNN_ERR_PARAM_INVALID,
                                   "%s: rowIdx[%lld][%lld] = %d repeats an earlier value (MOEFR_STRICT=1)", op, 
                                   (long long)r, (long long)k, (int)d);
                seen[d >> 6] |= (uint64_t)1 << (d & 63);
            }
            src[r * p->K + k] = d;
        }
    return ACLNN_SUCCESS;
}

/* Expert ids into key[j] = id - min (any int32; the spread must fit 31 bits). */
static aclnnStatus read_keys(const char *op, const ir1_plan *p, const aclTensor *ei, uint32_t *key, int32_t *lo, int64_t *key_hi) {
    const mf_small v = mf_small_of(ei);
    int32_t mn = INT32_MAX, mx = INT32_MIN;
    for (int64_t r = 0; r < p->N; r++)
        for (int64_t k = 0; k < p->K; k++) {
            const int32_t e = mf_small_i32(&v, r, k);
            mn = e < mn ? e : mn;
            mx = e > mx ? e : mx;
        }
    if ((int64_t)mx - mn >= MF_SORT_KEY_MAX)
        return mf_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: expertIdx spans [%d, %d]; moefr sorts ids whose max - min is below 2^31", op, (int)mn,
                       (int)mx);
    for (int64_t r = 0; r < p->N; r++)
        for (int64_t k = 0; k < p->K; k++) key[r * p->K + k] = (uint32_t)((int64_t)mf_small_i32(&v, r, k) - mn);
    *lo = mn;
    *key_hi = (int64_t)mx - mn + 1;
    return ACLNN_SUCCESS;
}

aclnnStatus mf_ir1_route(const char *op, const ir1_plan *p, const aclTensor *const *t, char *ws,
                         const int32_t **src_rows) {
    const int64_t T = p->T;
    int32_t *src = (int32_t *)(ws + p->ws_src);
    uint32_t *key = (uint32_t *)(ws + p->ws_key);
    int32_t *perm = (int32_t *)(ws + p->ws_perm);
    /* every input value is checked before anything is written */
    TRY(read_row_idx(op, p, t[S_RIDX], src, p->strict ? (uint64_t *)(ws + p->ws_seen) : NULL));
    int32_t lo = 0;
    int64_t key_hi = 1;
    TRY(read_keys(op, p, t[S_EIDX], key, &lo, &key_hi));
    mf_sort_by_key(key, T, key_hi, perm, ws + p->ws_sort, NULL);

    int32_t *row = (int32_t *)mf_tensor_base(t[S_ROW]);
    int32_t *eex = (int32_t *)mf_tensor_base(t[S_EEX]);
    /* entries rowIdx never names (only when it repeats a value) are 0, as
     * CANN's golden script leaves them; a repeated value keeps the larger i */
    memset(row, 0, (size_t)T * 4);
    for (int64_t i = 0; i < T; i++) {
        const int32_t j = perm[i], s = src[j];
        eex[i] = (int32_t)((int64_t)key[j] + lo);
        row[s] = (int32_t)i;
        perm[i] = (int32_t)(s % p->N); /* from here on: the gather's source rows */
    }
    *src_rows = perm;
    return ACLNN_SUCCESS;
}

static aclnnStatus ir1_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const ir1_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OP));
    const int32_t *src = NULL;
    TRY(mf_ir1_route(OP, p, t, mf_align64(workspace), &src));
    const mf_rows xv = mf_rows_of(t[S_X]);
    mf_gather_rows(&xv, p->H, p->es, src, 1, p->A, mf_tensor_base(t[S_EX]));
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeInitRouting(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_INIT_ROUTING, OP, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"activeNum", MF_ATTR_INT64, 0, 64}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeInitRoutingGetWorkspaceSize(t[0], t[1], t[2], a[0].i, t[3], t[4], t[5], ws, e);
}
const mf_op_entry mf_entry_init_routing = {&DEF, ATTRS, 1, gws_thunk, aclnnMoeInitRouting};
