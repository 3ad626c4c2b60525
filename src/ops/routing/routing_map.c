/* routing_map.c - aclnnMoeTokenPermuteWithRoutingMap, aclnnMoeTokenUnpermuteWithRoutingMap
 * and their backwards, both phases. Sources (ops-transformer, moe/):
 * moe_token_(un)permute_with_routing_map(_grad)/ docs, op_host/..._def.cpp (the
 * dtype tables: A2/A3 only, served on every product), op_host/..._tiling.cpp
 * and op_host/op_api/aclnn_*.cpp (phase-1 checks in CANN's order),
 * op_kernel/ (the arithmetic); docs/CANN_COMPAT.md lists every rule.
 *
 * The routing map is N x E (BOOL or INT8 of 0/1, any strides). "Row-major
 * ones" lists its ones by token then expert, "expert-major" by expert then
 * token. Phase 2 reuses the routing cores (routing.h): the dropless permute is
 * the stable sort by expert of the row-major ones (mf_route_sorted), the
 * dropless permute grad is mf_route_grad_run; the padded forms gather with
 * mf_gather_rows. Everything a value could send out of bounds is checked
 * before the first write (161002, outputs untouched). */
#include "aclnnop/aclnn_moe_token_permute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_routing_map_grad.h"
#include "ops/opdef.h"
#include "ops/routing/routing.h"

#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define INVALID ACLNN_ERR_PARAM_INVALID
#define NULLPTR ACLNN_ERR_PARAM_NULLPTR
#define TRY MF_TRY
#define I32 ACL_INT32
#define I8 ACL_INT8
#define BL ACL_BOOL
#define BF ACL_BF16
#define F16 ACL_FLOAT16
#define F32 ACL_FLOAT

/* CANN's bounds: SORT_LIMIT_LENGTH and MAX_INDICES_NUM / MAX_TOPK_NUM. */
#define RM_SORT_LIMIT 16777215
#define RM_MAX_TOPK 512

/* ---- shared helpers ---- */

/* A 2-D tensor's element addresses. */
typedef struct rm_mat {
    const char *base;
    int64_t s0, s1; /* bytes */
    int64_t rows, cols;
    size_t es;
} rm_mat;
static rm_mat rm_mat_of(const aclTensor *t) {
    rm_mat m = {NULL, 0, 0, 0, 0, 0};
    if (t == NULL) return m;
    m.es = mf_dtype_size(t->dtype);
    m.base = mf_tensor_base(t);
    m.rows = t->dims[0];
    m.cols = t->ndim > 1 ? t->dims[1] : 1;
    m.s0 = t->strides[0] * (int64_t)m.es;
    m.s1 = t->ndim > 1 ? t->strides[1] * (int64_t)m.es : 0;
    return m;
}
static inline const char *rm_at(const rm_mat *m, int64_t r, int64_t c) { return m->base + r * m->s0 + c * m->s1; }
static inline int32_t rm_i32(const aclTensor *t, int64_t i) { /* element i of a 1-D INT32 tensor */
    int32_t v;
    memcpy(&v, mf_tensor_base(t) + i * t->strides[0] * 4, 4);
    return v;
}
static inline float rm_f32(const char *p, int dtype) {
    float f;
    mf_widen_f32(p, 0, dtype, 1, &f, 1);
    return f;
}

/* Every map value is 0 or 1 (CANN documents only these; its kernels read
 * others inconsistently); *ones receives the count, rowcount (may be NULL)
 * each row's. */
static aclnnStatus rm_scan_map(const char *op, const char *name, const rm_mat *m, int64_t *ones, int64_t need_row) {
    int64_t n = 0;
    for (int64_t r = 0; r < m->rows; r++) {
        int64_t in_row = 0;
        for (int64_t e = 0; e < m->cols; e++) {
            const uint8_t v = (uint8_t)*rm_at(m, r, e);
            if (v > 1)
                return mf_fail(INVALID, "%s: %s[%lld][%lld] = %d; the values must be 0 or 1", op, name, (long long)r,
                               (long long)e, (int)(int8_t)v);
            in_row += v;
        }
        if (need_row >= 0 && in_row != need_row)
            return mf_fail(INVALID, "%s: %s row %lld has %lld ones; every row must have topK = %lld", op, name,
                           (long long)r, (long long)in_row, (long long)need_row);
        n += in_row;
    }
    *ones = n;
    return ACLNN_SUCCESS;
}

static aclnnStatus rm_check_2d(const char *op, int code, const char *name, const aclTensor *t, int64_t d0,
                               int64_t d1) {
    TRY(mf_check_rank(op, code, name, t, 2));
    TRY(mf_check_dim(op, code, name, t, 0, d0));
    return mf_check_dim(op, code, name, t, 1, d1);
}
static aclnnStatus rm_check_1d(const char *op, int code, const char *name, const aclTensor *t, int64_t d0) {
    TRY(mf_check_rank(op, code, name, t, 1));
    return mf_check_dim(op, code, name, t, 0, d0);
}

/* Stable counting sort of n values v[i] in [0, hi): order[] = positions by
 * ascending value, start[hi + 1] = the groups' bounds. */
static void rm_group(const int32_t *v, int64_t n, int64_t hi, int64_t *start, int32_t *order) {
    memset(start, 0, (size_t)(hi + 1) * sizeof *start);
    for (int64_t i = 0; i < n; i++) start[v[i] + 1]++;
    for (int64_t t = 0; t < hi; t++) start[t + 1] += start[t];
    int64_t *cur = start; /* reuse: advance then restore */
    for (int64_t i = 0; i < n; i++) order[cur[v[i]]++] = (int32_t)i;
    for (int64_t t = hi; t > 0; t--) cur[t] = cur[t - 1];
    cur[0] = 0;
}

/* out[t] (contiguous rows of H) = the fp32 sum, in group order, of rows
 * src(order[i]) for i in [start[t], start[t+1]); +0.0 rows for empty groups;
 * with scale (may be NULL), each term is first rounded to the dtype after
 * the product x * scale[i] (CANN's Mul before its index add). */
typedef struct rm_sum_ctx {
    rm_mat x;
    int dtype;
    int64_t H;
    const int64_t *start;
    const int32_t *order;
    const float *scale;
    char *out;
} rm_sum_ctx;
#define RM_TILE 512
static void rm_sum_range(void *vc, int64_t t0, int64_t t1) {
    const rm_sum_ctx *c = vc;
    const int64_t H = c->H, es = (int64_t)c->x.es;
    float acc[RM_TILE], tmp[RM_TILE];
    char rnd[RM_TILE * 4];
    for (int64_t t = t0; t < t1; t++) {
        for (int64_t h0 = 0; h0 < H; h0 += RM_TILE) {
            const int64_t n = H - h0 < RM_TILE ? H - h0 : RM_TILE;
            for (int64_t j = 0; j < n; j++) acc[j] = 0.0f;
            bool first = true;
            for (int64_t g = c->start[t]; g < c->start[t + 1]; g++) {
                const int32_t i = c->order[g];
                mf_widen_f32(rm_at(&c->x, i, h0), c->x.s1, c->dtype, n, tmp, 1);
                if (c->scale) {
                    for (int64_t j = 0; j < n; j++) tmp[j] = tmp[j] * c->scale[i];
                    mf_narrow_f32(rnd, es, c->dtype, n, tmp);
                    mf_widen_f32(rnd, es, c->dtype, n, tmp, 1);
                }
                if (first) {
                    for (int64_t j = 0; j < n; j++) acc[j] = tmp[j];
                    first = false;
                } else {
                    for (int64_t j = 0; j < n; j++) acc[j] += tmp[j];
                }
            }
            mf_narrow_f32(c->out + (t * H + h0) * es, es, c->dtype, n, acc);
            if (first) memset(c->out + (t * H + h0) * es, 0, (size_t)(n * es));
        }
    }
}
static void rm_sum_groups(rm_sum_ctx *c, int64_t groups) {
    const int64_t per = c->H * (int64_t)c->x.es * 2 + 1;
    mf_parallel_for(groups, rm_sum_range, c, (256 * 1024) / per + 1);
}

/* ======================= aclnnMoeTokenPermuteWithRoutingMap ======================= */

static const char OP[] = "aclnnMoeTokenPermuteWithRoutingMap";
enum { P_TOK, P_MAP, P_PROBS, P_OUT, P_POUT, P_IDX, P_NT };
static const char *const NAMES[P_NT] = {"tokens",           "routingMap",
                                        "probsOptional",    "permuteTokensOut",
                                        "permuteProbsOutOptional", "sortedIndicesOut"};
static const unsigned FLAGS[P_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, MF_T_REQUIRED | MF_T_CONTIG, MF_T_CONTIG,
                                     MF_T_REQUIRED | MF_T_CONTIG};
/* moe_token_permute_with_routing_map_def.cpp: (tokens, routing_map, probs |
 * permute_tokens, permute_probs, sorted_indices). */
#define PCOL(T, M) {T, M, T, T, T, I32}
static const mf_dtcol PCOLS[] = {PCOL(BF, BL), PCOL(BF, I8), PCOL(F16, BL), PCOL(F16, I8), PCOL(F32, BL), PCOL(F32, I8)};
static const mf_op_def DEF = {OP, MF_OP_TOKEN_PERMUTE_WITH_ROUTING_MAP, 3, 3, NAMES, FLAGS, PCOLS, 6, PCOLS, 6};

typedef struct pm_plan {
    mf_route_plan r; /* dropless: the sort core's plan */
    bool empty, pad, probs;
    int64_t N, E, H, K, C, out_rows;
    size_t es;
    uint64_t ws_cnt; /* pad: nothing; dropless: r's layout */
} pm_plan;

static aclnnStatus pm_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const pm_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OP));
    const rm_mat map = rm_mat_of(t[P_MAP]), pr = rm_mat_of(t[P_PROBS]);
    int64_t ones;
    TRY(rm_scan_map(OP, "routingMap", &map, &ones, -1));
    const mf_rows x = mf_rows_of(t[P_TOK]);
    char *out = mf_tensor_base(t[P_OUT]);
    int32_t *idx = (int32_t *)mf_tensor_base(t[P_IDX]);
    char *pout = p->probs ? mf_tensor_base(t[P_POUT]) : NULL;
    const size_t es = p->es;
    if (p->pad) {
        /* sortedIndicesOut[e*C + c]: the routed tokens of e ascending, then the others */
        for (int64_t e = 0; e < p->E; e++) {
            int64_t c = 0;
            for (int pass = 1; pass >= 0 && c < p->C; pass--)
                for (int64_t r = 0; r < p->N && c < p->C; r++)
                    if ((uint8_t)*rm_at(&map, r, e) == (uint8_t)pass) idx[e * p->C + c++] = (int32_t)r;
        }
        mf_gather_rows(&x, p->H, es, idx, 1, p->E * p->C, out);
        if (pout)
            for (int64_t i = 0; i < p->E * p->C; i++) memcpy(pout + i * (int64_t)es, rm_at(&pr, idx[i], i / p->C), es);
        return ACLNN_SUCCESS;
    }
    if (ones != p->r.T)
        return mf_fail(INVALID, "%s: routingMap has %lld ones; numOutTokens / tokens_num = %lld per token needs %lld",
                       OP, (long long)ones, (long long)p->K, (long long)p->r.T);
    char *ws = mf_align64(workspace);
    uint32_t *key = (uint32_t *)(ws + p->r.ws_key);
    int64_t q = 0;
    for (int64_t r = 0; r < p->N; r++)
        for (int64_t e = 0; e < p->E; e++)
            if (*rm_at(&map, r, e)) key[q++] = (uint32_t)e;
    mf_route_sorted(&p->r, p->E - 1, NULL, &x, out, idx, NULL, NULL, ws);
    if (pout) {
        q = 0;
        for (int64_t r = 0; r < p->N; r++)
            for (int64_t e = 0; e < p->E; e++)
                if (*rm_at(&map, r, e)) memcpy(pout + (int64_t)idx[q++] * (int64_t)es, rm_at(&pr, r, e), es);
    }
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(const aclTensor *tokens, const aclTensor *routingMap,
                                                               const aclTensor *probsOptional, int64_t numOutTokens,
                                                               bool dropAndPad, aclTensor *permuteTokensOut,
                                                               aclTensor *permuteProbsOutOptional,
                                                               aclTensor *sortedIndicesOut, uint64_t *workspaceSize,
                                                               aclOpExecutor **executor) {
    const aclTensor *t[P_NT] = {tokens, routingMap, probsOptional, permuteTokensOut, permuteProbsOutOptional,
                                sortedIndicesOut};
    /* CheckNotNull: permuteProbsOutOptional is required with probs */
    for (int i = 0; i < P_NT; i++)
        if ((FLAGS[i] & MF_T_REQUIRED) && t[i] == NULL) return mf_fail(NULLPTR, "%s: %s is NULL", OP, NAMES[i]);
    if (probsOptional && !permuteProbsOutOptional)
        return mf_fail(NULLPTR, "%s: permuteProbsOutOptional is NULL while probsOptional is given", OP);
    if (!probsOptional && permuteProbsOutOptional) /* CANN dereferences the absent probs here */
        return mf_fail(INVALID, "%s: permuteProbsOutOptional is given without probsOptional", OP);
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    TRY(mf_check_rank(OP, INVALID, "routingMap", routingMap, 2));
    if (probsOptional) TRY(mf_check_rank(OP, INVALID, "probsOptional", probsOptional, 2));
    const int64_t N = routingMap->dims[0], E = routingMap->dims[1];
    int64_t align = dropAndPad ? E : N;
    if (align == 0) align = 1;
    if (numOutTokens < 0) return mf_fail(INVALID, "%s: numOutTokens must be >= 0, got %lld", OP, (long long)numOutTokens);
    if (numOutTokens > N * E)
        return mf_fail(INVALID, "%s: numOutTokens must be <= tokens_num * experts_num = %lld, got %lld", OP,
                       (long long)(N * E), (long long)numOutTokens);
    const int64_t out_rows = numOutTokens / align * align;
    if (N >= RM_SORT_LIMIT) return mf_fail(INVALID, "%s: tokens_num must be < %d, got %lld", OP, RM_SORT_LIMIT, (long long)N);
    if (E >= RM_SORT_LIMIT) return mf_fail(INVALID, "%s: experts_num must be < %d, got %lld", OP, RM_SORT_LIMIT, (long long)E);
    if (permuteTokensOut->ndim < 1) return mf_fail(INVALID, "%s: permuteTokensOut must have a dim 0, got 0-D", OP);
    TRY(mf_check_dim(OP, INVALID, "permuteTokensOut", permuteTokensOut, 0, out_rows));
    if (permuteProbsOutOptional) {
        if (permuteProbsOutOptional->ndim < 1)
            return mf_fail(INVALID, "%s: permuteProbsOutOptional must have a dim 0, got 0-D", OP);
        TRY(mf_check_dim(OP, INVALID, "permuteProbsOutOptional", permuteProbsOutOptional, 0, out_rows));
    }
    pm_plan pl;
    memset(&pl, 0, sizeof pl);
    if (routingMap->numel == 0 || permuteTokensOut->numel == 0) { /* CANN: empty -> success, workspace 0 */
        pl.empty = true;
        return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, pm_run, 0, workspaceSize, executor);
    }
    /* moe_token_permute_with_routing_map_tiling.cpp, then moefr's own shape rules */
    TRY(mf_check_rank(OP, TILING, "tokens", tokens, 2));
    if (tokens->dims[0] != N)
        return mf_fail(TILING, "%s: tokens dim0 (%lld) must equal routingMap dim0 (%lld)", OP,
                       (long long)tokens->dims[0], (long long)N);
    const int64_t K = numOutTokens / N;
    if (!dropAndPad && K > RM_MAX_TOPK)
        return mf_fail(TILING, "%s: numOutTokens / tokens_num (topK %lld) must be <= %d", OP, (long long)K, RM_MAX_TOPK);
    const int64_t C = dropAndPad ? numOutTokens / E : 0;
    const int64_t total = dropAndPad ? N : N * K;
    if (total >= RM_SORT_LIMIT)
        return mf_fail(TILING, "%s: %lld elements to sort; must be < %d", OP, (long long)total, RM_SORT_LIMIT);
    const int64_t H = tokens->dims[1];
    TRY(rm_check_2d(OP, TILING, "permuteTokensOut", permuteTokensOut, out_rows, H));
    TRY(rm_check_1d(OP, TILING, "sortedIndicesOut", sortedIndicesOut, out_rows));
    if (probsOptional) {
        TRY(rm_check_2d(OP, TILING, "probsOptional", probsOptional, N, E));
        TRY(rm_check_1d(OP, TILING, "permuteProbsOutOptional", permuteProbsOutOptional, out_rows));
    }
    pl.pad = dropAndPad;
    pl.probs = probsOptional != NULL;
    pl.N = N, pl.E = E, pl.H = H, pl.K = K, pl.C = C, pl.out_rows = out_rows;
    pl.es = mf_dtype_size(tokens->dtype);
    uint64_t ws = 0;
    if (!dropAndPad) {
        pl.r.N = N, pl.r.K = K, pl.r.T = N * K, pl.r.H = H, pl.r.A = N * K, pl.r.E = E;
        pl.r.key_hi = E; /* counted: the sort takes keys below E */
        pl.r.es = pl.es;
        TRY(mf_route_layout(OP, &pl.r, 0));
        ws = mf_workspace_with_slack(pl.r.ws_bytes);
    }
    return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, pm_run, ws, workspaceSize, executor);
}

aclnnStatus aclnnMoeTokenPermuteWithRoutingMap(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                               aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_PERMUTE_WITH_ROUTING_MAP, OP, workspace, workspaceSize, stream);
}

/* ===================== aclnnMoeTokenPermuteWithRoutingMapGrad ===================== */

static const char OPG[] = "aclnnMoeTokenPermuteWithRoutingMapGrad";
enum { PG_G, PG_PG, PG_IDX, PG_MAP, PG_OUT, PG_POUT, PG_NT };
static const char *const GNAMES[PG_NT] = {"permutedTokenOutputGrad", "permutedProbsOutputGradOptional",
                                          "sortedIndices",           "routingMapOptional",
                                          "tokensGradOut",           "probsGradOutOptional"};
static const unsigned GFLAGS[PG_NT] = {MF_T_REQUIRED, 0, MF_T_REQUIRED, 0, MF_T_REQUIRED | MF_T_CONTIG, MF_T_CONTIG};
/* moe_token_permute_with_routing_map_grad_def.cpp */
#define GCOL(T, M) {T, T, I32, M, T, T}
static const mf_dtcol GCOLS[] = {GCOL(BF, I8), GCOL(F16, I8), GCOL(F32, I8), GCOL(BF, BL), GCOL(F16, BL), GCOL(F32, BL)};
static const mf_op_def GDEF = {OPG, MF_OP_TOKEN_PERMUTE_WITH_ROUTING_MAP_GRAD, 4, 2, GNAMES, GFLAGS, GCOLS, 6, GCOLS, 6};

typedef struct pg_plan {
    mf_route_grad_plan g; /* dropless tokens grad */
    bool empty, pad, probs;
    int64_t N, E, H, M, C;
    int dtype;
    size_t es;
    uint64_t ws_idx, ws_start, ws_order;
} pg_plan;

static aclnnStatus pg_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const pg_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OPG));
    char *ws = mf_align64(workspace);
    const rm_mat map = rm_mat_of(t[PG_MAP]), pg = rm_mat_of(t[PG_PG]);
    char *out = mf_tensor_base(t[PG_OUT]);
    char *pout = p->probs ? mf_tensor_base(t[PG_POUT]) : NULL;
    const int64_t es = (int64_t)p->es;
    if (!p->pad) {
        int64_t ones = 0;
        if (p->probs) {
            TRY(rm_scan_map(OPG, "routingMapOptional", &map, &ones, -1));
            if (ones > p->M)
                return mf_fail(INVALID, "%s: routingMapOptional has %lld ones; permutedProbsOutputGradOptional has %lld",
                               OPG, (long long)ones, (long long)p->M);
        }
        TRY(mf_route_grad_run(OPG, "sortedIndices", &p->g, t[PG_G], t[PG_IDX], out, ws));
        if (p->probs) { /* masked_scatter on the transposed map: expert-major */
            memset(pout, 0, (size_t)(p->N * p->E * es));
            int64_t q = 0;
            for (int64_t e = 0; e < p->E; e++)
                for (int64_t r = 0; r < p->N; r++)
                    if (*rm_at(&map, r, e)) memcpy(pout + (r * p->E + e) * es, rm_at(&pg, q++, 0), (size_t)es);
        }
        return ACLNN_SUCCESS;
    }
    int32_t *idx = (int32_t *)(ws + p->ws_idx);
    for (int64_t i = 0; i < p->M; i++) {
        idx[i] = rm_i32(t[PG_IDX], i);
        if (idx[i] < 0 || idx[i] >= p->N)
            return mf_fail(INVALID, "%s: sortedIndices[%lld] = %d is out of range [0, %lld)", OPG, (long long)i,
                           (int)idx[i], (long long)p->N);
    }
    int64_t *start = (int64_t *)(ws + p->ws_start);
    int32_t *order = (int32_t *)(ws + p->ws_order);
    rm_group(idx, p->M, p->N, start, order);
    rm_sum_ctx c = {rm_mat_of(t[PG_G]), p->dtype, p->H, start, order, NULL, out};
    rm_sum_groups(&c, p->N);
    if (p->probs) {
        memset(pout, 0, (size_t)(p->N * p->E * es));
        for (int64_t i = 0; i < p->E * p->C; i++)
            memcpy(pout + ((int64_t)idx[i] * p->E + i / p->C) * es, rm_at(&pg, i, 0), (size_t)es);
    }
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
    const aclTensor *permutedTokenOutputGrad, const aclTensor *permutedProbsOutputGradOptional,
    const aclTensor *sortedIndices, const aclTensor *routingMapOptional, int64_t numExperts, int64_t tokensNum,
    bool dropAndPad, aclTensor *tokensGradOut, aclTensor *probsGradOutOptional, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
    if (numExperts <= 0) return mf_fail(INVALID, "%s: numExperts must be > 0, got %lld", OPG, (long long)numExperts);
    if (tokensNum <= 0) return mf_fail(INVALID, "%s: tokensNum must be > 0, got %lld", OPG, (long long)tokensNum);
    const aclTensor *t[PG_NT] = {permutedTokenOutputGrad, permutedProbsOutputGradOptional, sortedIndices,
                                 routingMapOptional,      tokensGradOut,                   probsGradOutOptional};
    for (int i = 0; i < PG_NT; i++)
        if ((GFLAGS[i] & MF_T_REQUIRED) && t[i] == NULL) return mf_fail(NULLPTR, "%s: %s is NULL", OPG, GNAMES[i]);
    if (!routingMapOptional && permutedProbsOutputGradOptional)
        return mf_fail(NULLPTR, "%s: routingMapOptional is NULL while permutedProbsOutputGradOptional is given", OPG);
    TRY(mf_op_check(&GDEF, t, workspaceSize, executor));
    const aclTensor *g = permutedTokenOutputGrad, *pg = permutedProbsOutputGradOptional;
    TRY(mf_check_rank(OPG, INVALID, "permutedTokenOutputGrad", g, 2));
    if (routingMapOptional) TRY(mf_check_rank(OPG, INVALID, "routingMapOptional", routingMapOptional, 2));
    if (pg) TRY(mf_check_rank(OPG, INVALID, "permutedProbsOutputGradOptional", pg, 1));
    pg_plan pl;
    memset(&pl, 0, sizeof pl);
    if (g->numel == 0 || tokensGradOut->numel == 0) {
        pl.empty = true;
        return mf_op_publish(&GDEF, t, 0, &pl, sizeof pl, pg_run, 0, workspaceSize, executor);
    }
    const int64_t M = g->dims[0], H = g->dims[1], N = tokensNum, E = numExperts;
    const int64_t K = M / N;
    if (!dropAndPad && K > RM_MAX_TOPK)
        return mf_fail(TILING, "%s: permutedTokenOutputGrad dim0 / tokensNum (topK %lld) must be <= %d", OPG,
                       (long long)K, RM_MAX_TOPK);
    /* moefr's own: what the kernels read and write must fit */
    TRY(rm_check_2d(OPG, TILING, "tokensGradOut", tokensGradOut, N, H));
    TRY(rm_check_1d(OPG, TILING, "sortedIndices", sortedIndices, M));
    pl.probs = pg != NULL && probsGradOutOptional != NULL;
    if (pl.probs) {
        TRY(rm_check_1d(OPG, TILING, "permutedProbsOutputGradOptional", pg, M));
        TRY(rm_check_2d(OPG, TILING, "probsGradOutOptional", probsGradOutOptional, N, E));
        if (!dropAndPad) TRY(rm_check_2d(OPG, TILING, "routingMapOptional", routingMapOptional, N, E));
    }
    pl.pad = dropAndPad;
    pl.N = N, pl.E = E, pl.H = H, pl.M = M, pl.C = M / E;
    pl.dtype = g->dtype;
    pl.es = mf_dtype_size(g->dtype);
    uint64_t ws;
    if (!dropAndPad) {
        pl.g.mode = 0, pl.g.N = N, pl.g.K = K, pl.g.H = H, pl.g.D0 = M, pl.g.keep_below = M;
        pl.g.dtype = g->dtype, pl.g.es = pl.es;
        ws = mf_route_grad_workspace(&pl.g);
    } else {
        uint64_t used = 0;
        pl.ws_idx = mf_carve(&used, (uint64_t)M * 4);
        pl.ws_order = mf_carve(&used, (uint64_t)M * 4);
        pl.ws_start = mf_carve(&used, (uint64_t)(N + 1) * 8);
        ws = mf_workspace_with_slack(used);
    }
    return mf_op_publish(&GDEF, t, pl.probs ? 0 : 1u << PG_POUT, &pl, sizeof pl, pg_run, ws, workspaceSize,
                         executor);
}

aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                   const aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_PERMUTE_WITH_ROUTING_MAP_GRAD, OPG, workspace, workspaceSize,
                               stream);
}

/* ===================== aclnnMoeTokenUnpermuteWithRoutingMap ===================== */

static const char OPU[] = "aclnnMoeTokenUnpermuteWithRoutingMap";
enum { U_X, U_IDX, U_MAP, U_PROBS, U_OUT, U_OIDX, U_TID, U_PP, U_NT };
static const char *const UNAMES[U_NT] = {"permutedTokens",   "sortedIndices", "routingMapOptional",
                                         "probsOptional",    "unpermutedTokens", "outIndex",
                                         "permuteTokenId",   "permuteProbs"};
static const unsigned UFLAGS[U_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, MF_T_REQUIRED | MF_T_CONTIG,
                                      MF_T_CONTIG, MF_T_CONTIG, MF_T_CONTIG};
/* moe_token_unpermute_with_routing_map_def.cpp */
#define UCOL(T, M) {T, I32, M, T, T, I32, I32, T}
static const mf_dtcol UCOLS[] = {UCOL(BF, BL), UCOL(BF, I8), UCOL(F16, BL), UCOL(F16, I8), UCOL(F32, BL), UCOL(F32, I8)};
static const mf_op_def UDEF = {OPU, MF_OP_TOKEN_UNPERMUTE_WITH_ROUTING_MAP, 4, 4, UNAMES, UFLAGS, UCOLS, 6, UCOLS, 6};

typedef struct up_plan {
    bool empty, pad, probs;
    int64_t N, E, H, M, L, K, C, rows; /* L: sortedIndices length; rows: unpermutedTokens dim0 */
    int dtype;
    size_t es;
    uint64_t ws_idx, ws_p, ws_start, ws_order;
} up_plan;

/* the unpermute's fused row loop (routing_map_acc.h): the generic build here, an
 * eight-lane one in routing_map_avx2.c (AVX2 without FMA: the same operations, the same bits) */
#define GT_W 4
#define RM_ACC mf_rm_acc_generic
#define RM_SUM mf_rm_sum_generic
#include "ops/routing/routing_map_acc.h"
#undef RM_ACC
#undef RM_SUM
#if defined(MOEFR_X86_KERNELS)
void mf_rm_acc_avx2(float *acc, const char *row, int64_t s, int dtype, int64_t n, float pv, bool first, bool scale);
void mf_rm_sum_avx2(float *acc, const char *const *rows, const float *pv, int nr, int dtype, int64_t n, bool first,
                    bool scale);
void mf_rm_narrow_bf16_avx2(char *p, const float *s, int64_t n);
#endif
typedef void (*rm_acc_fn)(float *, const char *, int64_t, int, int64_t, float, bool, bool);
typedef void (*rm_sum_fn)(float *, const char *const *, const float *, int, int, int64_t, bool, bool);
#define RM_NR 8 /* rows one RM_SUM call takes */

typedef struct up_ctx {
    const up_plan *p;
    rm_acc_fn acc;
    rm_sum_fn sum; /* NULL: term by term (FLOAT16, or strided rows) */
    rm_mat x;
    const int32_t *idx;
    const float *pr; /* NULL without probs */
    char *out;
    /* out is larger than the streaming-store threshold: rows leave through
     * the kernel table's streaming copy (no read-for-ownership of out's
     * lines: fp32 0.69-0.72 -> 0.75-0.79 of memcpy on Zen 4) */
    int nt;
    const mf_ukernels *uk; /* its copy and fence */
    void (*narrow16)(char *p, const float *s, int64_t n); /* contiguous bf16 rounding, or NULL: mf_narrow_f32 */
} up_ctx;
static void up_tokens(void *vc, int64_t r0, int64_t r1) {
    const up_ctx *c = vc;
    const up_plan *p = c->p;
    const int64_t H = p->H, K = p->K, es = (int64_t)p->es;
    float acc[RM_TILE];
    char r16[RM_TILE * 2]; /* a rounded 16-bit tile on its way out */
    for (int64_t r = r0; r < r1; r++)
        for (int64_t h0 = 0; h0 < H; h0 += RM_TILE) {
            const int64_t n = H - h0 < RM_TILE ? H - h0 : RM_TILE;
            bool first = true;
            const char *rows[RM_NR];
            float pvs[RM_NR];
            int nr = 0;
            for (int64_t k = 0; k < K; k++) {
                const int32_t d = c->idx[r * K + k];
                const float pv = c->pr ? c->pr[r * K + k] : 1.0f;
                if (d < 0 || d >= p->M || (c->pr && pv == 0.0f)) continue; /* CANN's kernel skips these terms */
                if (c->sum == NULL) {
                    c->acc(acc, rm_at(&c->x, d, h0), c->x.s1, p->dtype, n, pv, first, c->pr != NULL);
                    first = false;
                    continue;
                }
                rows[nr] = rm_at(&c->x, d, h0), pvs[nr++] = pv;
                if (nr == RM_NR) {
                    c->sum(acc, rows, pvs, nr, p->dtype, n, first, c->pr != NULL);
                    first = false, nr = 0;
                }
            }
            if (nr > 0) {
                c->sum(acc, rows, pvs, nr, p->dtype, n, first, c->pr != NULL);
                first = false;
            }
            char *o = c->out + (r * H + h0) * es;
            if (first) {
                memset(o, 0, (size_t)(n * es));
            } else if (c->nt) { /* rounded here, then whole lines streamed out */
                const void *src = acc;
                if (c->narrow16) c->narrow16(r16, acc, n), src = r16;
                else if (p->dtype != ACL_FLOAT) mf_narrow_f32(r16, es, p->dtype, n, acc), src = r16;
                c->uk->copy(o, src, (size_t)(n * es), 1);
            } else if (c->narrow16) {
                c->narrow16(o, acc, n);
            } else {
                mf_narrow_f32(o, es, p->dtype, n, acc);
            }
        }
    if (c->nt) c->uk->fence(); /* this worker's streaming stores land before the pool's join */
}

static aclnnStatus up_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const up_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OPU));
    char *ws = mf_align64(workspace);
    const rm_mat map = rm_mat_of(t[U_MAP]), pr = rm_mat_of(t[U_PROBS]);
    int32_t *idx = (int32_t *)(ws + p->ws_idx);
    float *pv = (float *)(ws + p->ws_p);
    char *pp = t[U_PP] && p->probs ? mf_tensor_base(t[U_PP]) : NULL;
    const int64_t es = (int64_t)p->es;
    if (!p->pad) {
        if (p->probs) {
            int64_t ones;
            TRY(rm_scan_map(OPU, "routingMapOptional", &map, &ones, -1));
            if (ones != p->L)
                return mf_fail(INVALID, "%s: routingMapOptional has %lld ones; sortedIndices has %lld entries", OPU,
                               (long long)ones, (long long)p->L);
        }
        for (int64_t i = 0; i < p->L; i++) {
            idx[i] = rm_i32(t[U_IDX], i);
            if (idx[i] < -1) /* -1: an unused slot (torch_npu's documentation), skipped */
                return mf_fail(INVALID, "%s: sortedIndices[%lld] = %d is below -1", OPU, (long long)i, (int)idx[i]);
        }
        if (p->probs) { /* probs masked by the map, row-major (the kernel's masked select) */
            int64_t q = 0;
            for (int64_t r = 0; r < p->N; r++)
                for (int64_t e = 0; e < p->E; e++)
                    if (*rm_at(&map, r, e)) {
                        pv[q] = rm_f32(rm_at(&pr, r, e), p->dtype);
                        if (pp) memcpy(pp + q * es, rm_at(&pr, r, e), (size_t)es);
                        q++;
                    }
        }
        up_ctx c = {p, mf_rm_acc_generic, NULL, rm_mat_of(t[U_X]), idx, p->probs ? pv : NULL,
                    mf_tensor_base(t[U_OUT]), 0, mf_kernels(), NULL};
        c.nt = p->N * p->H * es >= mf_nt_threshold();
        const bool dense = c.x.s1 == es && p->dtype != ACL_FLOAT16; /* whole vectors of FLOAT or BF16 */
        if (dense) c.sum = mf_rm_sum_generic;
#if defined(MOEFR_X86_KERNELS)
        if (strncmp(mf_kernels()->isa, "avx", 3) == 0) { /* avx2, avx512: same bits */
            c.acc = mf_rm_acc_avx2;
            if (dense) c.sum = mf_rm_sum_avx2;
            if (p->dtype == ACL_BF16) c.narrow16 = mf_rm_narrow_bf16_avx2; /* out is contiguous */
        }
#endif
        const int64_t per = p->H * es * (p->K + 1) + 1;
        mf_parallel_for(p->N, up_tokens, &c, (256 * 1024) / per + 1);
        return ACLNN_SUCCESS;
    }
    /* padded: index add over the stable sort of sortedIndices */
    for (int64_t i = 0; i < p->L; i++) {
        idx[i] = rm_i32(t[U_IDX], i);
        if (idx[i] < 0 || idx[i] >= p->rows)
            return mf_fail(INVALID, "%s: sortedIndices[%lld] = %d is out of range [0, %lld)", OPU, (long long)i,
                           (int)idx[i], (long long)p->rows);
        if (p->probs && idx[i] >= p->N)
            return mf_fail(INVALID, "%s: sortedIndices[%lld] = %d is past probsOptional's %lld rows", OPU,
                           (long long)i, (int)idx[i], (long long)p->N);
    }
    int64_t *start = (int64_t *)(ws + p->ws_start);
    int32_t *order = (int32_t *)(ws + p->ws_order);
    rm_group(idx, p->L, p->rows, start, order);
    if (t[U_TID]) {
        int32_t *tid = (int32_t *)mf_tensor_base(t[U_TID]);
        for (int64_t i = 0; i < p->L; i++) tid[i] = idx[order[i]];
    }
    if (t[U_OIDX]) memcpy(mf_tensor_base(t[U_OIDX]), order, (size_t)p->L * 4);
    if (p->probs)
        for (int64_t i = 0; i < p->L; i++) {
            const char *src = rm_at(&pr, idx[i], i / p->C);
            pv[i] = rm_f32(src, p->dtype);
            if (pp) memcpy(pp + i * es, src, (size_t)es);
        }
    rm_sum_ctx c = {rm_mat_of(t[U_X]), p->dtype, p->H, start, order, p->probs ? pv : NULL, mf_tensor_base(t[U_OUT])};
    rm_sum_groups(&c, p->rows);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(
    const aclTensor *permutedTokens, const aclTensor *sortedIndices, const aclTensor *routingMapOptional,
    const aclTensor *probsOptional, bool paddedMode, const aclIntArray *restoreShapeOptional,
    aclTensor *unpermutedTokens, aclTensor *outIndex, aclTensor *permuteTokenId, aclTensor *permuteProbs,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *t[U_NT] = {permutedTokens, sortedIndices, routingMapOptional, probsOptional,
                                unpermutedTokens, outIndex, permuteTokenId, permuteProbs};
    if (!permutedTokens) return mf_fail(NULLPTR, "%s: permutedTokens is NULL", OPU);
    if (!sortedIndices) return mf_fail(NULLPTR, "%s: sortedIndices is NULL", OPU);
    if (!probsOptional && !restoreShapeOptional)
        return mf_fail(NULLPTR, "%s: probsOptional and restoreShapeOptional must not both be NULL", OPU);
    TRY(mf_op_check(&UDEF, t, workspaceSize, executor));
    TRY(mf_check_rank(OPU, INVALID, "permutedTokens", permutedTokens, 2));
    TRY(mf_check_rank(OPU, INVALID, "sortedIndices", sortedIndices, 1));
    TRY(mf_check_rank(OPU, INVALID, "unpermutedTokens", unpermutedTokens, 2));
    up_plan pl;
    memset(&pl, 0, sizeof pl);
    if (permutedTokens->numel == 0 || sortedIndices->numel == 0) {
        pl.empty = true;
        return mf_op_publish(&UDEF, t, 0, &pl, sizeof pl, up_run, 0, workspaceSize, executor);
    }
    const mf_array *rs = (const mf_array *)restoreShapeOptional;
    const int64_t M = permutedTokens->dims[0], H = permutedTokens->dims[1], L = sortedIndices->dims[0];
    pl.pad = paddedMode;
    pl.probs = probsOptional != NULL;
    pl.M = M, pl.H = H, pl.L = L;
    pl.dtype = permutedTokens->dtype;
    pl.es = mf_dtype_size(pl.dtype);
    if (!paddedMode) {
        int64_t N = -1;
        if (rs && rs->n == 2) N = ((const int64_t *)rs->values)[0];
        if (probsOptional) {
            TRY(mf_check_rank(OPU, TILING, "probsOptional", probsOptional, 2));
            N = probsOptional->dims[0];
        }
        if (N == -1)
            return mf_fail(ACLNN_ERR_INNER_NULLPTR, "%s: tokens_num unknown: no probsOptional and restoreShapeOptional "
                           "does not have 2 values", OPU);
        if (N <= 0) return mf_fail(TILING, "%s: tokens_num must be > 0, got %lld", OPU, (long long)N);
        const int64_t K = M / N;
        if (K > RM_MAX_TOPK) return mf_fail(TILING, "%s: topK (%lld) must be <= %d", OPU, (long long)K, RM_MAX_TOPK);
        /* moefr's own */
        if (K == 0)
            return mf_fail(TILING, "%s: permutedTokens dim0 (%lld) is below tokens_num (%lld): topK 0", OPU,
                           (long long)M, (long long)N);
        TRY(rm_check_2d(OPU, TILING, "unpermutedTokens", unpermutedTokens, N, H));
        TRY(rm_check_1d(OPU, TILING, "sortedIndices", sortedIndices, N * K));
        if (probsOptional) {
            if (!routingMapOptional)
                return mf_fail(TILING, "%s: routingMapOptional is NULL while probsOptional is given", OPU);
            TRY(rm_check_2d(OPU, TILING, "routingMapOptional", routingMapOptional, N, probsOptional->dims[1]));
            if (permuteProbs) TRY(rm_check_1d(OPU, TILING, "permuteProbs", permuteProbs, L));
            pl.E = probsOptional->dims[1];
        }
        pl.N = N, pl.K = K, pl.rows = N;
    } else {
        pl.rows = unpermutedTokens->dims[0];
        TRY(mf_check_dim(OPU, TILING, "unpermutedTokens", unpermutedTokens, 1, H));
        TRY(mf_check_dim(OPU, TILING, "permutedTokens", permutedTokens, 0, L));
        if (outIndex) TRY(rm_check_1d(OPU, TILING, "outIndex", outIndex, L));
        if (permuteTokenId) TRY(rm_check_1d(OPU, TILING, "permuteTokenId", permuteTokenId, L));
        if (probsOptional) {
            TRY(mf_check_rank(OPU, TILING, "probsOptional", probsOptional, 2));
            pl.N = probsOptional->dims[0], pl.E = probsOptional->dims[1];
            if (pl.E == 0 || L % pl.E != 0)
                return mf_fail(TILING, "%s: sortedIndices length (%lld) must be experts_num (%lld) * capacity", OPU,
                               (long long)L, (long long)pl.E);
            pl.C = L / pl.E;
            if (permuteProbs) TRY(rm_check_1d(OPU, TILING, "permuteProbs", permuteProbs, L));
        }
    }
    uint64_t used = 0;
    pl.ws_idx = mf_carve(&used, (uint64_t)L * 4);
    pl.ws_p = mf_carve(&used, (uint64_t)L * 4);
    if (paddedMode) {
        pl.ws_order = mf_carve(&used, (uint64_t)L * 4);
        pl.ws_start = mf_carve(&used, (uint64_t)(pl.rows + 1) * 8);
    }
    unsigned unused = 0;
    if (!paddedMode) unused |= 1u << U_OIDX | 1u << U_TID;
    if (!pl.probs) unused |= 1u << U_PP;
    return mf_op_publish(&UDEF, t, unused, &pl, sizeof pl, up_run, mf_workspace_with_slack(used), workspaceSize,
                         executor);
}

aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMap(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                 const aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_UNPERMUTE_WITH_ROUTING_MAP, OPU, workspace, workspaceSize, stream);
}

/* =================== aclnnMoeTokenUnpermuteWithRoutingMapGrad =================== */

static const char OPUG[] = "aclnnMoeTokenUnpermuteWithRoutingMapGrad";
enum { UG_G, UG_OIDX, UG_TID, UG_MAP, UG_X, UG_PROBS, UG_GX, UG_GP, UG_NT };
static const char *const UGNAMES[UG_NT] = {"unpermutedTokensGrad",   "outIndex",     "permuteTokenId",
                                           "routingMapOptional",     "permutedTokensOptional", "probsOptional",
                                           "permutedTokensGradOut",  "probsGradOutOptional"};
static const unsigned UGFLAGS[UG_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, 0,
                                        MF_T_REQUIRED | MF_T_CONTIG, MF_T_CONTIG};
/* moe_token_unpermute_with_routing_map_grad_def.cpp */
#define UGCOL(T, M) {T, I32, I32, M, T, T, T, T}
static const mf_dtcol UGCOLS[] = {UGCOL(BF, BL), UGCOL(BF, I8), UGCOL(F16, BL), UGCOL(F16, I8), UGCOL(F32, BL),
                                  UGCOL(F32, I8)};
static const mf_op_def UGDEF = {OPUG, MF_OP_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_GRAD, 6, 2, UGNAMES, UGFLAGS, UGCOLS, 6,
                                UGCOLS, 6};

typedef struct ug_plan {
    bool empty, pad, probs;
    int64_t N, E, H, M, K, C, rows; /* M: outIndex length; rows: permutedTokensGradOut dim0 */
    int dtype;
    size_t es;
} ug_plan;

/* gx[d] = round(g[r] * p); returns the dot of x[d] and g[r] (double). */
static double ug_term(const ug_plan *p, const rm_mat *g, const rm_mat *x, int64_t r, int64_t d, float pv, char *gx) {
    float gr[RM_TILE], xd[RM_TILE], o[RM_TILE];
    double dot = 0.0;
    const int64_t es = (int64_t)p->es;
    for (int64_t h0 = 0; h0 < p->H; h0 += RM_TILE) {
        const int64_t n = p->H - h0 < RM_TILE ? p->H - h0 : RM_TILE;
        mf_widen_f32(rm_at(g, r, h0), g->s1, p->dtype, n, gr, 1);
        mf_widen_f32(rm_at(x, d, h0), x->s1, p->dtype, n, xd, 1);
        for (int64_t j = 0; j < n; j++) {
            o[j] = gr[j] * pv;
            dot += (double)(xd[j] * gr[j]);
        }
        mf_narrow_f32(gx + (d * p->H + h0) * es, es, p->dtype, n, o);
    }
    return dot;
}

static aclnnStatus ug_run(const void *plan, const aclTensor *const *t, void *workspace) {
    (void)workspace;
    const ug_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OPUG));
    const rm_mat g = rm_mat_of(t[UG_G]), x = rm_mat_of(t[UG_X]), map = rm_mat_of(t[UG_MAP]),
                 pr = rm_mat_of(t[UG_PROBS]);
    char *gx = mf_tensor_base(t[UG_GX]);
    const int64_t es = (int64_t)p->es, rb = p->H * es;
    /* every value checked before the first write */
    for (int64_t i = 0; i < p->M; i++) {
        const int32_t d = rm_i32(t[UG_OIDX], i);
        if (d == -1 && !p->pad) continue; /* an unused slot: nothing written */
        if (d < 0 || d >= p->rows)
            return mf_fail(INVALID, "%s: outIndex[%lld] = %d is out of range [0, %lld)", OPUG, (long long)i, (int)d,
                           (long long)p->rows);
        if (p->pad) {
            const int32_t tk = rm_i32(t[UG_TID], i);
            if (tk < 0 || tk >= p->N)
                return mf_fail(INVALID, "%s: permuteTokenId[%lld] = %d is out of range [0, %lld)", OPUG, (long long)i,
                               (int)tk, (long long)p->N);
            if (p->probs && d / p->C >= p->E)
                return mf_fail(INVALID, "%s: outIndex[%lld] = %d names expert %lld of %lld (capacity %lld)", OPUG,
                               (long long)i, (int)d, (long long)(d / p->C), (long long)p->E, (long long)p->C);
        }
    }
    int64_t ones;
    if (p->probs && !p->pad) TRY(rm_scan_map(OPUG, "routingMapOptional", &map, &ones, p->K));
    if (!p->probs) {
        for (int64_t i = 0; i < p->M; i++) {
            const int32_t d = rm_i32(t[UG_OIDX], i);
            if (d < 0) continue;
            const int64_t r = p->pad ? rm_i32(t[UG_TID], i) : i / p->K;
            for (int64_t h = 0; h < p->H; h++) memcpy(gx + d * rb + h * es, rm_at(&g, r, h), (size_t)es);
        }
        return ACLNN_SUCCESS;
    }
    char *gp = mf_tensor_base(t[UG_GP]);
    memset(gp, 0, (size_t)(p->N * p->E * es));
    if (!p->pad) {
        for (int64_t r = 0; r < p->N; r++) {
            int64_t k = 0;
            for (int64_t e = 0; e < p->E; e++) {
                if (!*rm_at(&map, r, e)) continue;
                const int32_t d = rm_i32(t[UG_OIDX], r * p->K + k++);
                if (d < 0) continue;
                const double dot = ug_term(p, &g, &x, r, d, rm_f32(rm_at(&pr, r, e), p->dtype), gx);
                mf_store_f64(gp + (r * p->E + e) * es, p->dtype, dot);
            }
        }
        return ACLNN_SUCCESS;
    }
    for (int64_t i = 0; i < p->M; i++) {
        const int32_t d = rm_i32(t[UG_OIDX], i), tk = rm_i32(t[UG_TID], i);
        const int64_t e = d / p->C;
        const double dot = ug_term(p, &g, &x, tk, d, rm_f32(rm_at(&pr, tk, e), p->dtype), gx);
        mf_store_f64(gp + (tk * p->E + e) * es, p->dtype, dot);
    }
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(
    const aclTensor *unpermutedTokensGrad, const aclTensor *outIndex, const aclTensor *permuteTokenId,
    const aclTensor *routingMapOptional, const aclTensor *permutedTokensOptional, const aclTensor *probsOptional,
    bool dropAndPad, const aclIntArray *restoreShapeOptional, const aclTensor *permutedTokensGradOut,
    const aclTensor *probsGradOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)restoreShapeOptional; /* CANN's tiling does not read it */
    const aclTensor *t[UG_NT] = {unpermutedTokensGrad, outIndex,      permuteTokenId,        routingMapOptional,
                                 permutedTokensOptional, probsOptional, permutedTokensGradOut, probsGradOutOptional};
    TRY(mf_op_check(&UGDEF, t, workspaceSize, executor));
    if (probsOptional && !probsGradOutOptional) /* CANN's kernel would write through NULL */
        return mf_fail(NULLPTR, "%s: probsGradOutOptional is NULL while probsOptional is given", OPUG);
    ug_plan pl;
    memset(&pl, 0, sizeof pl);
    if (mf_op_outputs_empty(&UGDEF, t)) {
        pl.empty = true;
        return mf_op_publish(&UGDEF, t, 0, &pl, sizeof pl, ug_run, 0, workspaceSize, executor);
    }
    /* moe_token_unpermute_with_routing_map_grad_tiling.cpp PreInitForTiling */
    const aclTensor *g = unpermutedTokensGrad;
    TRY(mf_check_rank(OPUG, TILING, "unpermutedTokensGrad", g, 2));
    TRY(mf_check_rank(OPUG, TILING, "outIndex", outIndex, 1));
    TRY(mf_check_rank(OPUG, TILING, "permuteTokenId", permuteTokenId, 1));
    const int64_t N = g->dims[0], H = g->dims[1], M = outIndex->dims[0];
    if (permuteTokenId->dims[0] != M)
        return mf_fail(TILING, "%s: outIndex (%lld) and permuteTokenId (%lld) must have the same length", OPUG,
                       (long long)M, (long long)permuteTokenId->dims[0]);
    int64_t E = 0, K = 0, C = 0;
    if (probsOptional) { /* CheckInputForProbIsNotNone */
        if (!routingMapOptional) return mf_fail(TILING, "%s: routingMapOptional is NULL while probsOptional is given", OPUG);
        TRY(mf_check_rank(OPUG, TILING, "routingMapOptional", routingMapOptional, 2));
        if (!permutedTokensOptional)
            return mf_fail(TILING, "%s: permutedTokensOptional is NULL while probsOptional is given", OPUG);
        TRY(mf_check_rank(OPUG, TILING, "permutedTokensOptional", permutedTokensOptional, 2));
        TRY(mf_check_rank(OPUG, TILING, "probsOptional", probsOptional, 2));
        E = probsOptional->dims[1];
        if (dropAndPad) {
            if (E == 0) return mf_fail(TILING, "%s: probsOptional dim1 (experts_num) must not be 0", OPUG);
            C = M / E;
            if (C > N)
                return mf_fail(TILING, "%s: capacity (%lld) must be <= tokens_num (%lld)", OPUG, (long long)C,
                               (long long)N);
        } else {
            if (N == 0) return mf_fail(TILING, "%s: unpermutedTokensGrad dim0 (tokens_num) must not be 0", OPUG);
            K = M / N;
            if (K > RM_MAX_TOPK) return mf_fail(TILING, "%s: topK (%lld) must be <= %d", OPUG, (long long)K, RM_MAX_TOPK);
            if (K > E)
                return mf_fail(TILING, "%s: topK (%lld) must be <= experts_num (%lld)", OPUG, (long long)K,
                               (long long)E);
        }
    }
    /* moefr's own: what the kernels read and write must fit */
    TRY(mf_check_rank(OPUG, TILING, "permutedTokensGradOut", permutedTokensGradOut, 2));
    TRY(mf_check_dim(OPUG, TILING, "permutedTokensGradOut", permutedTokensGradOut, 1, H));
    if (!dropAndPad) {
        if (N == 0 || M % N != 0 || M == 0)
            return mf_fail(TILING, "%s: outIndex length (%lld) must be a positive multiple of tokens_num (%lld)", OPUG,
                           (long long)M, (long long)N);
        K = M / N;
    }
    if (probsOptional) {
        TRY(rm_check_2d(OPUG, TILING, "probsOptional", probsOptional, N, E));
        TRY(rm_check_2d(OPUG, TILING, "routingMapOptional", routingMapOptional, N, E));
        TRY(rm_check_2d(OPUG, TILING, "probsGradOutOptional", probsGradOutOptional, N, E));
        TRY(rm_check_2d(OPUG, TILING, "permutedTokensOptional", permutedTokensOptional,
                        permutedTokensGradOut->dims[0], H));
        if (dropAndPad && C == 0)
            return mf_fail(TILING, "%s: capacity is 0 (outIndex length %lld < experts_num %lld)", OPUG, (long long)M,
                           (long long)E);
    }
    pl.pad = dropAndPad;
    pl.probs = probsOptional != NULL;
    pl.N = N, pl.E = E, pl.H = H, pl.M = M, pl.K = K, pl.C = C, pl.rows = permutedTokensGradOut->dims[0];
    pl.dtype = g->dtype;
    pl.es = mf_dtype_size(g->dtype);
    unsigned unused = 0;
    if (!dropAndPad) unused |= 1u << UG_TID;
    if (!pl.probs) unused |= 1u << UG_MAP | 1u << UG_X | 1u << UG_GP;
    return mf_op_publish(&UGDEF, t, unused, &pl, sizeof pl, ug_run, 0, workspaceSize, executor);
}

aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMapGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                     aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_GRAD, OPUG, workspace, workspaceSize,
                               stream);
}

/* ---- registry entries (opdef.h) ---- */
static const mf_attr_desc PATTRS[] = {{"numOutTokens", MF_ATTR_INT64, 0, 64}, {"dropAndPad", MF_ATTR_BOOL, 0, 1}};
static aclnnStatus pm_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(t[0], t[1], t[2], a[0].i, a[1].i != 0, (aclTensor *)t[3],
                                                              (aclTensor *)t[4], (aclTensor *)t[5], ws, e);
}
const mf_op_entry mf_entry_token_permute_with_routing_map = {&DEF, PATTRS, 2, pm_thunk,
                                                             aclnnMoeTokenPermuteWithRoutingMap};
static const mf_attr_desc PGATTRS[] = {{"numExperts", MF_ATTR_INT64, 1, 8},
                                       {"tokensNum", MF_ATTR_INT64, 1, 8},
                                       {"dropAndPad", MF_ATTR_BOOL, 0, 1}};
static aclnnStatus pg_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(t[0], t[1], t[2], t[3], a[0].i, a[1].i, a[2].i != 0,
                                                                  (aclTensor *)t[4], (aclTensor *)t[5], ws, e);
}
const mf_op_entry mf_entry_token_permute_with_routing_map_grad = {&GDEF, PGATTRS, 3, pg_thunk,
                                                                  aclnnMoeTokenPermuteWithRoutingMapGrad};
static const mf_attr_desc UATTRS[] = {{"paddedMode", MF_ATTR_BOOL, 0, 1},
                                      {"restoreShapeOptional", MF_ATTR_INT_ARRAY, 0, 2}};
static aclnnStatus up_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(t[0], t[1], t[2], t[3], a[0].i != 0, a[1].arr,
                                                                (aclTensor *)t[4], (aclTensor *)t[5],
                                                                (aclTensor *)t[6], (aclTensor *)t[7], ws, e);
}
const mf_op_entry mf_entry_token_unpermute_with_routing_map = {&UDEF, UATTRS, 2, up_thunk,
                                                               aclnnMoeTokenUnpermuteWithRoutingMap};
static const mf_attr_desc UGATTRS[] = {{"dropAndPad", MF_ATTR_BOOL, 0, 1},
                                       {"restoreShapeOptional", MF_ATTR_INT_ARRAY, 0, 2}};
static aclnnStatus ug_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], a[0].i != 0,
                                                                    a[1].arr, t[6], t[7], ws, e);
}
const mf_op_entry mf_entry_token_unpermute_with_routing_map_grad = {&UGDEF, UGATTRS, 2, ug_thunk,
                                                                    aclnnMoeTokenUnpermuteWithRoutingMapGrad};
