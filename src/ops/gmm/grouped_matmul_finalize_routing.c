/* grouped_matmul_finalize_routing.c - aclnnGroupedMatmulFinalizeRoutingWeightNz and WeightNzV2
 * (ops-transformer gmm/grouped_matmul_finalize_routing), the A8W8 rows, both phases. Phase 1 in
 * the order of op_api/aclnn_grouped_matmul_finalize_routing.cpp: CheckSupportScene (161001 for
 * the required NULLs, then dtype, transposes, formats: 161002), CheckNotNull (out), CheckDimRange,
 * then CheckParams (CheckDtypeValid, CheckShape, CheckFormat, CheckEmptyTensor, CheckTuningConfig).
 * Phase 2 is the kernel's arithmetic (op_kernel/grouped_matmul_finalize_routing.h,
 * QuantGroupMatmul with combine; docs/CANN_COMPAT.md, "GroupedMatmulFinalizeRouting"): out starts
 * as zeros and the scaled shared input, then each row's dequantised product is added to its
 * rowIndex row in fp32, rows in order (CANN's deterministic order). Workers own column blocks, so
 * every output element is summed by one worker in that order: the same bits for any thread count. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "aclnnop/aclnn_grouped_matmul_finalize_routing_weight_nz.h"
#include "aclnnop/aclnn_grouped_matmul_finalize_routing_weight_nz_v2.h"
#include "blas/gemm.h"
#include "ops/common.h"
#include "ops/opdef.h"

#define INVALID ACLNN_ERR_PARAM_INVALID
#define NULLPTR ACLNN_ERR_PARAM_NULLPTR
/* phase 2's blocking */
#define CB 256   /* output columns a work unit owns */
#define RB 64    /* rows summed together */
#define KC 1024  /* the K chunk of one GEMM call: exact in fp32 (see sums) */
/* a worker's scratch: acc (RB x CB int32), A (RB x KC), B (KC x CB), C (RB x CB) fp32 */
#define SCRATCH_FLOATS ((int64_t)RB * CB + RB * KC + KC * CB + RB * CB)

/* roles: V2's signature order */
enum { R_X, R_W, R_SCALE, R_BIAS, R_OFFSET, R_AQS, R_AQO, R_PT, R_GL, R_SHARED, R_LOGIT, R_ROW, R_OUT, R_N };
static const int8_t AT_V1[R_N] = {0, 1, 2, 3, -1, -1, -1, 4, 5, 6, 7, 8, 9};
static const int8_t AT_V2[R_N] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static const char *const NAMES_V1[10] = {"x1",    "x2",          "scale", "bias",     "pertokenScaleOptional",
                                         "groupList", "sharedInput", "logit", "rowIndex", "out"};
static const char *const NAMES_V2[13] = {"x1",
                                         "x2",
                                         "scale",
                                         "bias",
                                         "offsetOptional",
                                         "antiquantScaleOptional",
                                         "antiquantOffsetOptional",
                                         "pertokenScaleOptional",
                                         "groupList",
                                         "sharedInput",
                                         "logit",
                                         "rowIndex",
                                         "out"};
static const unsigned FLAGS_V1[10] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, MF_T_REQUIRED, 0,
                                      MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED};
static const unsigned FLAGS_V2[13] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, 0, 0, 0, MF_T_REQUIRED, 0,
                                      MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED};
#define ANY MF_DT_ANY
static const mf_dtcol COLS_V1[] = {
    {ACL_INT8, ACL_INT8, ACL_FLOAT, ACL_BF16, ACL_FLOAT, ACL_INT64, ACL_BF16, ACL_FLOAT, ANY, ACL_FLOAT},
    {ACL_INT8, ACL_INT8, ACL_BF16, ACL_BF16, ACL_FLOAT, ACL_INT64, ACL_BF16, ACL_FLOAT, ANY, ACL_FLOAT},
};
static const mf_dtcol COLS_V2[] = {
    {ACL_INT8, ACL_INT8, ACL_FLOAT, ACL_BF16, ANY, ANY, ANY, ACL_FLOAT, ACL_INT64, ACL_BF16, ACL_FLOAT, ANY, ACL_FLOAT},
    {ACL_INT8, ACL_INT8, ACL_BF16, ACL_BF16, ANY, ANY, ANY, ACL_FLOAT, ACL_INT64, ACL_BF16, ACL_FLOAT, ANY, ACL_FLOAT},
};
static const mf_op_def DEF_V1 = {"aclnnGroupedMatmulFinalizeRoutingWeightNz",
                                 MF_OP_GROUPED_MATMUL_FINALIZE_ROUTING_WEIGHT_NZ, 9, 1, NAMES_V1, FLAGS_V1, COLS_V1, 2,
                                 COLS_V1, 2};
static const mf_op_def DEF_V2 = {"aclnnGroupedMatmulFinalizeRoutingWeightNzV2",
                                 MF_OP_GROUPED_MATMUL_FINALIZE_ROUTING_WEIGHT_NZ_V2, 12, 1, NAMES_V2, FLAGS_V2, COLS_V2,
                                 2, COLS_V2, 2};

typedef struct gfr_plan {
    const char *op;
    const int8_t *at; /* the front end's slots by role */
    int64_t M, K, N, E, bs; /* bs: out's rows (outputBS) */
    int64_t list_type, shared_off, shared_rows;
    float shared_w;
    int scale_dtype;
    int workers;
} gfr_plan;

static aclnnStatus want_rank(const char *op, const char *name, const aclTensor *t, int rank) {
    if (t != NULL && t->ndim != rank)
        return mf_fail(INVALID, "%s: %s must have %d dim%s, got %d", op, name, rank, rank == 1 ? "" : "s", (int)t->ndim);
    return ACLNN_SUCCESS;
}
static aclnnStatus want_dtype(const char *op, const char *name, const aclTensor *t, int a, int b, int c) {
    if (t == NULL) return ACLNN_SUCCESS;
    const int d = t->dtype;
    if (d == a || d == b || d == c) return ACLNN_SUCCESS;
    char list[96];
    snprintf(list, sizeof list, "%s%s%s%s%s", mf_dtype_name(a), b >= 0 ? " or " : "", b >= 0 ? mf_dtype_name(b) : "",
             c >= 0 ? " or " : "", c >= 0 ? mf_dtype_name(c) : "");
    return mf_fail(INVALID, "%s: %s dtype must be %s, got %s", op, name, list, mf_dtype_name(d));
}
static bool empty_view(const aclTensor *t) { return t != NULL && t->numel == 0; }

static aclnnStatus run(const void *plan, const aclTensor *const *t, void *workspace);

static aclnnStatus plan_common(const mf_op_def *def, const int8_t *at, const aclTensor *const *slots, int64_t dtype,
                               float sharedInputWeight, int64_t sharedInputOffset, bool transposeX1, bool transposeX2,
                               int64_t groupListType, const aclIntArray *tuning, uint64_t *workspaceSize,
                               aclOpExecutor **executor) {
    const char *op = def->name;
    const aclTensor *t[R_N];
    const char *n[R_N];
    mf_by_role(at, R_N, slots, def->names, t, n);
    if (workspaceSize == NULL) return mf_fail(NULLPTR, "%s: workspaceSize is NULL", op);
    if (executor == NULL) return mf_fail(NULLPTR, "%s: executor is NULL", op);
    /* CheckSupportScene: x1, x2, scale, logit, groupList, rowIndex required */
    static const int req[6] = {R_X, R_W, R_SCALE, R_LOGIT, R_GL, R_ROW};
    for (int i = 0; i < 6; i++)
        if (t[req[i]] == NULL) return mf_fail(NULLPTR, "%s: %s is NULL", op, n[req[i]]);
    for (int r = 0; r < R_N; r++)
        if (t[r] != NULL && !mf_tensor_live(t[r]))
            return mf_fail(INVALID, "%s: %s (%p) is not a live aclTensor", op, n[r], (const void *)t[r]);
    if (t[R_W]->dtype == ACL_INT32 || t[R_W]->dtype == ACL_INT4)
        return mf_fail(INVALID, "%s: the A8W4 rows (%s x2) are not yet in moefr", op, mf_dtype_name(t[R_W]->dtype));
    if (dtype != 0) return mf_fail(INVALID, "%s: dtype must be 0, got %lld", op, (long long)dtype);
    if (t[R_W]->ndim < 2) return mf_fail(INVALID, "%s: x2's view must have at least 2 dims, got %d", op, (int)t[R_W]->ndim);
    if (transposeX1 || transposeX2) return mf_fail(INVALID, "%s: transposeX1 and transposeX2 must be false", op);
    /* CheckWeightNzFormat: x1 ND, x2 FRACTAL_NZ (moefr: ND, no NZ yet) */
    if (t[R_X]->format != ACL_FORMAT_ND)
        return mf_fail(INVALID, "%s: x1 format must be ND, got %s", op, mf_format_name(t[R_X]->format));
    if (t[R_W]->format == ACL_FORMAT_FRACTAL_NZ)
        return mf_fail(INVALID, "%s: x2 in FRACTAL_NZ is not yet read by moefr: pass the ND (E, K, N) int8 weight", op);
    if (t[R_W]->format != ACL_FORMAT_ND)
        return mf_fail(INVALID, "%s: x2 format must be ND (moefr) or FRACTAL_NZ, got %s", op, mf_format_name(t[R_W]->format));
    if (t[R_OUT] == NULL) return mf_fail(NULLPTR, "%s: out is NULL", op);
    if (!mf_tensor_live(t[R_OUT])) return mf_fail(INVALID, "%s: out is not a live aclTensor", op);
    /* CheckDimRange */
    MF_TRY(want_rank(op, n[R_W], t[R_W], 3));
    if (t[R_X]->ndim < 2) return mf_fail(INVALID, "%s: x1 must have at least 2 dims, got %d", op, (int)t[R_X]->ndim);
    if (t[R_OUT]->ndim < 2) return mf_fail(INVALID, "%s: out must have at least 2 dims, got %d", op, (int)t[R_OUT]->ndim);
    MF_TRY(want_rank(op, n[R_SCALE], t[R_SCALE], 2));
    MF_TRY(want_rank(op, n[R_PT], t[R_PT], 1));
    MF_TRY(want_rank(op, n[R_GL], t[R_GL], 1));
    MF_TRY(want_rank(op, n[R_SHARED], t[R_SHARED], 2));
    MF_TRY(want_rank(op, n[R_LOGIT], t[R_LOGIT], 1));
    MF_TRY(want_rank(op, n[R_ROW], t[R_ROW], 1));
    /* CheckDtypeValid (the INT8 weight rows) */
    MF_TRY(want_dtype(op, n[R_X], t[R_X], ACL_INT8, -1, -1));
    MF_TRY(want_dtype(op, n[R_W], t[R_W], ACL_INT8, -1, -1));
    MF_TRY(want_dtype(op, n[R_SCALE], t[R_SCALE], ACL_FLOAT, ACL_INT64, ACL_BF16));
    MF_TRY(want_dtype(op, n[R_ROW], t[R_ROW], ACL_INT64, ACL_INT32, -1));
    MF_TRY(want_dtype(op, n[R_BIAS], t[R_BIAS], ACL_BF16, -1, -1));
    MF_TRY(want_dtype(op, n[R_PT], t[R_PT], ACL_FLOAT, -1, -1));
    MF_TRY(want_dtype(op, n[R_GL], t[R_GL], ACL_INT64, -1, -1));
    MF_TRY(want_dtype(op, n[R_SHARED], t[R_SHARED], ACL_BF16, -1, -1));
    MF_TRY(want_dtype(op, n[R_LOGIT], t[R_LOGIT], ACL_FLOAT, -1, -1));
    MF_TRY(want_dtype(op, n[R_OUT], t[R_OUT], ACL_FLOAT, -1, -1));
    /* CheckShape */
    if (t[R_X]->ndim != 2) return mf_fail(INVALID, "%s: x1 must have 2 dims, got %d", op, (int)t[R_X]->ndim);
    const int64_t M = t[R_X]->dims[0], K = t[R_X]->dims[1], E = t[R_W]->dims[0], wK = t[R_W]->dims[1],
                  N = t[R_W]->dims[2];
    if (K != wK) return mf_fail(INVALID, "%s: x1's K %lld and x2's K %lld differ", op, (long long)K, (long long)wK);
    if (K % 16 != 0 || N % 32 != 0 || N < 256)
        return mf_fail(INVALID, "%s: K %lld and N %lld: K must be a multiple of 16, N a multiple of 32 and at least 256",
                       op, (long long)K, (long long)N);
    if (t[R_OUT]->ndim != 2) return mf_fail(INVALID, "%s: out must have 2 dims, got %d", op, (int)t[R_OUT]->ndim);
    const int64_t bs = t[R_OUT]->dims[0];
    if (bs > M) return mf_fail(INVALID, "%s: out's rows %lld exceed x1's %lld", op, (long long)bs, (long long)M);
    if (t[R_OUT]->dims[1] != N)
        return mf_fail(INVALID, "%s: out's last dim %lld must be x2's N %lld", op, (long long)t[R_OUT]->dims[1], (long long)N);
    if (sharedInputOffset < 0) return mf_fail(INVALID, "%s: sharedInputOffset %lld is negative", op, (long long)sharedInputOffset);
    if (groupListType != 0 && groupListType != 1)
        return mf_fail(INVALID, "%s: groupListType must be 0 or 1, got %lld", op, (long long)groupListType);
    if (t[R_SCALE]->dims[0] != E || t[R_SCALE]->dims[1] != N)
        return mf_fail(INVALID, "%s: scale must be (%lld, %lld)", op, (long long)E, (long long)N);
    if (t[R_PT] && t[R_PT]->dims[0] != M)
        return mf_fail(INVALID, "%s: %s must have x1's %lld rows", op, n[R_PT], (long long)M);
    if (t[R_GL]->dims[0] != E)
        return mf_fail(INVALID, "%s: groupList must have x2's %lld groups, got %lld", op, (long long)E,
                       (long long)t[R_GL]->dims[0]);
    if (t[R_SHARED] && (t[R_SHARED]->dims[0] > bs || t[R_SHARED]->dims[1] != N))
        return mf_fail(INVALID, "%s: sharedInput must have at most out's %lld rows and %lld columns", op, (long long)bs,
                       (long long)N);
    if (t[R_LOGIT]->dims[0] != M) return mf_fail(INVALID, "%s: logit must have x1's %lld rows", op, (long long)M);
    if (t[R_ROW]->dims[0] != M) return mf_fail(INVALID, "%s: rowIndex must have x1's %lld rows", op, (long long)M);
    const int64_t srows = t[R_SHARED] ? t[R_SHARED]->dims[0] : 0;
    if (sharedInputOffset > bs - srows)
        return mf_fail(INVALID, "%s: sharedInputOffset %lld + sharedInput's %lld rows exceed out's %lld", op,
                       (long long)sharedInputOffset, (long long)srows, (long long)bs);
    if (empty_view(t[R_PT])) return mf_fail(INVALID, "%s: %s must not be empty", op, n[R_PT]);
    static const int ne[7] = {R_X, R_W, R_SCALE, R_GL, R_SHARED, R_LOGIT, R_ROW};
    for (int i = 0; i < 7; i++)
        if (empty_view(t[ne[i]])) return mf_fail(INVALID, "%s: %s must not be empty", op, n[ne[i]]);
    /* CheckFormat */
    for (int r = 0; r < R_N; r++)
        if (t[r] != NULL && t[r]->format != ACL_FORMAT_ND)
            return mf_fail(INVALID, "%s: %s format must be ND, got %s", op, n[r], mf_format_name(t[r]->format));
    /* CheckTuningConfig */
    if (tuning != NULL) {
        const mf_array *ta = (const mf_array *)(const void *)tuning;
        if (!mf_registry_has(&mf_arrays, tuning) || ta->kind != MF_ARRAY_INT)
            return mf_fail(INVALID, "%s: tuningConfigOptional is not a live aclIntArray", op);
        if (ta->n > 0) {
            const int64_t v = ((const int64_t *)ta->values)[0];
            if (v < 0 || v > M)
                return mf_fail(INVALID, "%s: tuningConfigOptional[0] = %lld must lie in [0, %lld]", op, (long long)v,
                               (long long)M);
        }
    }
    /* moefr's own rule: out is written in place by several workers, one value per element */
    if (mf_self_overlaps(t[R_OUT]))
        return mf_fail(INVALID, "%s: out has elements that share memory (a stride of 0, negative or shorter than the "
                       "dims inside it); each output element needs its own place", op);
    /* no A8W8 kernel takes an INT64 (quant-parameter) scale: the A8W4 rows do */
    if (t[R_SCALE]->dtype == ACL_INT64)
        return mf_fail(INVALID, "%s: an INT64 scale with INT8 x2 has no A8W8 kernel (the A8W4 rows take it)", op);
    /* moefr: bias is read as (E, N) */
    if (t[R_BIAS] && (t[R_BIAS]->ndim != 2 || t[R_BIAS]->dims[0] != E || t[R_BIAS]->dims[1] != N))
        return mf_fail(INVALID, "%s: bias must be (%lld, %lld) (the kernel reads E x N values)", op, (long long)E,
                       (long long)N);
    gfr_plan p;
    memset(&p, 0, sizeof p);
    p.op = op, p.at = at;
    p.M = M, p.K = K, p.N = N, p.E = E, p.bs = bs;
    p.list_type = groupListType, p.shared_off = sharedInputOffset, p.shared_rows = srows, p.shared_w = sharedInputWeight;
    p.scale_dtype = t[R_SCALE]->dtype;
    p.workers = mf_num_threads() < 1 ? 1 : mf_num_threads();
    /* offset (A8W4) and the antiquant arguments are not read */
    unsigned unused = 0;
    if (at[R_OFFSET] >= 0) unused |= 1u << at[R_OFFSET] | 1u << at[R_AQS] | 1u << at[R_AQO];
    const uint64_t ws =
        mf_workspace_with_slack((uint64_t)(E + 1) * 8 + 64 + (uint64_t)p.workers * ((uint64_t)SCRATCH_FLOATS * 4 + 64));
    return mf_op_publish(def, slots, unused, &p, sizeof p, run, ws, workspaceSize, executor);
}

/* ---- phase 2 ---- */

typedef struct gfr_ctx {
    const gfr_plan *p;
    const aclTensor *t[R_N];
    const int64_t *ends;
    float *scratch;
    atomic_llong next;
} gfr_ctx;

static float f32_at(const aclTensor *t, int64_t i) {
    float f;
    memcpy(&f, mf_tensor_base(t) + i * t->strides[0] * 4, 4);
    return f;
}
static float widen(const aclTensor *t, int64_t i, int64_t j) {
    const int64_t es = (int64_t)mf_dtype_size(t->dtype);
    float f;
    mf_widen_f32(mf_tensor_base(t) + (i * t->strides[0] + j * t->strides[1]) * es, 0, t->dtype, 1, &f, 1);
    return f;
}
static int64_t row_of(const aclTensor *ri, int64_t m) {
    const char *p = mf_tensor_base(ri) + m * ri->strides[0] * (int64_t)mf_dtype_size(ri->dtype);
    if (ri->dtype == ACL_INT64) {
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The exact int32 sums of rows [r0, r0 + nr) of group g over columns [j0, j0 + cw) into acc
 * (nr x CB), through the BLAS's fp32 GEMM in K chunks of KC: int8 values are exact in fp32 and
 * every partial sum of a chunk is an integer within 1024 * 2^14 = 2^24, so each chunk's product
 * is exact in any order; the chunks are added in int32. */
static void sums(const gfr_ctx *c, int64_t g, int64_t r0, int64_t nr, int64_t j0, int64_t cw, int32_t *acc, float *a,
                 float *b, float *cb) {
    const gfr_plan *p = c->p;
    const aclTensor *x = c->t[R_X], *w = c->t[R_W];
    const int8_t *xb = (const int8_t *)mf_tensor_base(x) + r0 * x->strides[0];
    const int8_t *wg = (const int8_t *)mf_tensor_base(w) + g * w->strides[0] + j0 * w->strides[2];
    const int64_t xs0 = x->strides[0], xs1 = x->strides[1], wk = w->strides[1], wn = w->strides[2];
    memset(acc, 0, sizeof(int32_t) * (size_t)(RB * CB));
    for (int64_t k0 = 0; k0 < p->K; k0 += KC) {
        const int64_t kc = p->K - k0 < KC ? p->K - k0 : KC;
        for (int64_t r = 0; r < nr; r++)
            for (int64_t k = 0; k < kc; k++) a[r * kc + k] = (float)xb[r * xs0 + (k0 + k) * xs1];
        for (int64_t k = 0; k < kc; k++) {
            const int8_t *wr = wg + (k0 + k) * wk;
            for (int64_t j = 0; j < cw; j++) b[k * cw + j] = (float)wr[j * wn];
        }
        mf_sgemm(nr, cw, kc, a, kc, 1, b, cw, 1, 0.0f, cb, cw);
        for (int64_t r = 0; r < nr; r++)
            for (int64_t j = 0; j < cw; j++) acc[r * CB + j] += (int32_t)cb[r * cw + j];
    }
}

static void unit(const gfr_ctx *c, int64_t u, float *sc) {
    const gfr_plan *p = c->p;
    const aclTensor *sca = c->t[R_SCALE], *bias = c->t[R_BIAS], *pt = c->t[R_PT];
    const aclTensor *sh = c->t[R_SHARED], *lg = c->t[R_LOGIT], *ri = c->t[R_ROW], *out = c->t[R_OUT];
    const int64_t j0 = u * CB, cw = p->N - j0 < CB ? p->N - j0 : CB;
    char *ob = mf_tensor_base(out);
    const int64_t os0 = out->strides[0], os1 = out->strides[1];
    int32_t *acc = (int32_t *)(void *)sc;
    float *a = sc + RB * CB, *b = a + RB * KC, *cb = b + KC * CB;
    /* the start: zeros, the shared rows fp32(bf16) * sharedInputWeight (Cast, Muls) */
    for (int64_t r = 0; r < p->bs; r++) {
        float *orow = (float *)(void *)(ob + r * os0 * 4);
        const bool shared = sh != NULL && r >= p->shared_off && r < p->shared_off + p->shared_rows;
        for (int64_t j = 0; j < cw; j++)
            orow[(j0 + j) * os1] = shared ? widen(sh, r - p->shared_off, j0 + j) * p->shared_w : 0.0f;
    }
    float s[CB], bv[CB];
    for (int64_t g = 0; g < p->E; g++) {
        if (c->ends[g + 1] <= c->ends[g]) continue;
        for (int64_t j = 0; j < cw; j++) {
            s[j] = widen(sca, g, j0 + j);
            bv[j] = bias ? widen(bias, g, j0 + j) : 0.0f;
        }
        for (int64_t r0 = c->ends[g]; r0 < c->ends[g + 1]; r0 += RB) {
            const int64_t nr = c->ends[g + 1] - r0 < RB ? c->ends[g + 1] - r0 : RB;
            sums(c, g, r0, nr, j0, cw, acc, a, b, cb);
            for (int64_t r = 0; r < nr; r++) {
                const int64_t m = r0 + r;
                /* DataCopyPerTokenScale: logit * pertokenScale (or logit alone) */
                const float l = f32_at(lg, m), k = pt ? l * f32_at(pt, m) : l;
                float *orow = (float *)(void *)(ob + row_of(ri, m) * os0 * 4);
                for (int64_t j = 0; j < cw; j++) {
                    float y = ((float)acc[r * CB + j] * s[j]) * k; /* AscendDequant, then Mul */
                    if (bias) y = y + l * bv[j];                  /* + logit * bias (PerTokenScaleBrcb, Add) */
                    orow[(j0 + j) * os1] += y;                    /* the atomic add, rows in order */
                }
            }
        }
    }
}

static void worker(void *ctxp, int64_t s0, int64_t s1) {
    gfr_ctx *c = ctxp;
    const int64_t units = (c->p->N + CB - 1) / CB;
    for (int64_t s = s0; s < s1; s++) {
        float *sc = mf_align64(c->scratch + s * (SCRATCH_FLOATS + 16));
        for (;;) {
            const int64_t u = (int64_t)atomic_fetch_add(&c->next, 1);
            if (u >= units) break;
            unit(c, u, sc);
        }
    }
}

static aclnnStatus run(const void *plan, const aclTensor *const *slots, void *workspace) {
    const gfr_plan *p = plan;
    gfr_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    mf_by_role(p->at, R_N, slots, NULL, c.t, NULL);
    int64_t *ends = mf_align64(workspace);
    /* the group list, then the rows' indices, before anything is written */
    const aclTensor *gl = c.t[R_GL];
    ends[0] = 0;
    for (int64_t i = 0; i < p->E; i++) {
        int64_t v;
        memcpy(&v, mf_tensor_base(gl) + i * gl->strides[0] * 8, 8);
        if ((p->list_type == 0 && v < ends[i]) || (p->list_type == 1 && v < 0))
            return mf_fail(INVALID, "%s: groupList[%lld] = %lld %s", p->op, (long long)i, (long long)v,
                           p->list_type == 0 ? "is below the entry before it (cumulative ends)" : "is negative (counts)");
        const int64_t e = p->list_type == 0 ? v : (v > p->M ? v : ends[i] + v);
        if (e > p->M)
            return mf_fail(INVALID, "%s: groupList covers %lld rows at entry %lld, beyond x1's %lld", p->op, (long long)e,
                           (long long)i, (long long)p->M);
        ends[i + 1] = e;
    }
    for (int64_t m = 0; m < ends[p->E]; m++) {
        const int64_t r = row_of(c.t[R_ROW], m);
        if (r < 0 || r >= p->bs)
            return mf_fail(INVALID, "%s: rowIndex[%lld] = %lld is outside out's %lld rows", p->op, (long long)m,
                           (long long)r, (long long)p->bs);
    }
    c.ends = ends;
    c.scratch = mf_align64(ends + p->E + 1);
    atomic_init(&c.next, 0);
    const int64_t units = (p->N + CB - 1) / CB;
    mf_parallel_for(units < p->workers ? units : p->workers, worker, &c, 2);
    return ACLNN_SUCCESS;
}

/* ---- the public entries ---- */

aclnnStatus aclnnGroupedMatmulFinalizeRoutingWeightNzGetWorkspaceSize(
    const aclTensor *x1, const aclTensor *x2, const aclTensor *scale, const aclTensor *bias,
    const aclTensor *pertokenScaleOptional, const aclTensor *groupList, const aclTensor *sharedInput,
    const aclTensor *logit, const aclTensor *rowIndex, int64_t dtype, float sharedInputWeight, int64_t sharedInputOffset,
    bool transposeX1, bool transposeX2, int64_t groupListType, aclTensor *out, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
    const aclTensor *s[10] = {x1, x2, scale, bias, pertokenScaleOptional, groupList, sharedInput, logit, rowIndex, out};
    return plan_common(&DEF_V1, AT_V1, s, dtype, sharedInputWeight, sharedInputOffset, transposeX1, transposeX2,
                       groupListType, NULL, workspaceSize, executor);
}

aclnnStatus aclnnGroupedMatmulFinalizeRoutingWeightNz(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                      aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GROUPED_MATMUL_FINALIZE_ROUTING_WEIGHT_NZ, DEF_V1.name, workspace,
                               workspaceSize, stream);
}

aclnnStatus aclnnGroupedMatmulFinalizeRoutingWeightNzV2GetWorkspaceSize(
    const aclTensor *x1, const aclTensor *x2, const aclTensor *scale, const aclTensor *bias,
    const aclTensor *offsetOptional, const aclTensor *antiquantScaleOptional, const aclTensor *antiquantOffsetOptional,
    const aclTensor *pertokenScaleOptional, const aclTensor *groupList, const aclTensor *sharedInput,
    const aclTensor *logit, const aclTensor *rowIndex, int64_t dtype, float sharedInputWeight, int64_t sharedInputOffset,
    bool transposeX1, bool transposeX2, int64_t groupListType, const aclIntArray *tuningConfigOptional, aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *s[13] = {x1,           x2,         scale,          bias,       offsetOptional,
                              antiquantScaleOptional,   antiquantOffsetOptional,    pertokenScaleOptional,
                              groupList,    sharedInput, logit,         rowIndex,   out};
    return plan_common(&DEF_V2, AT_V2, s, dtype, sharedInputWeight, sharedInputOffset, transposeX1, transposeX2,
                       groupListType, tuningConfigOptional, workspaceSize, executor);
}

aclnnStatus aclnnGroupedMatmulFinalizeRoutingWeightNzV2(void *workspace, uint64_t workspaceSize,
                                                        aclOpExecutor *executor, aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GROUPED_MATMUL_FINALIZE_ROUTING_WEIGHT_NZ_V2, DEF_V2.name, workspace,
                               workspaceSize, stream);
}

/* ---- registry entries (opdef.h) ---- */
static const mf_attr_desc ATTRS_V1[] = {{"dtype", MF_ATTR_INT64, 0, 2},
                                        {"sharedInputWeight", MF_ATTR_DOUBLE, 0, 4},
                                        {"sharedInputOffset", MF_ATTR_INT64, 0, 8},
                                        {"transposeX1", MF_ATTR_BOOL, 0, 1},
                                        {"transposeX2", MF_ATTR_BOOL, 0, 1},
                                        {"groupListType", MF_ATTR_INT64, 0, 1}};
static const mf_attr_desc ATTRS_V2[] = {{"dtype", MF_ATTR_INT64, 0, 2},
                                        {"sharedInputWeight", MF_ATTR_DOUBLE, 0, 4},
                                        {"sharedInputOffset", MF_ATTR_INT64, 0, 8},
                                        {"transposeX1", MF_ATTR_BOOL, 0, 1},
                                        {"transposeX2", MF_ATTR_BOOL, 0, 1},
                                        {"groupListType", MF_ATTR_INT64, 0, 1},
                                        {"tuningConfigOptional", MF_ATTR_INT_ARRAY, 0, 2}};
static aclnnStatus gws_v1(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnGroupedMatmulFinalizeRoutingWeightNzGetWorkspaceSize(
        t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], a[0].i, (float)a[1].d, a[2].i, a[3].i != 0, a[4].i != 0,
        a[5].i, (aclTensor *)t[9], ws, e);
}
static aclnnStatus gws_v2(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnGroupedMatmulFinalizeRoutingWeightNzV2GetWorkspaceSize(
        t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], a[0].i, (float)a[1].d, a[2].i,
        a[3].i != 0, a[4].i != 0, a[5].i, a[6].arr, (aclTensor *)t[12], ws, e);
}
const mf_op_entry mf_entry_grouped_matmul_finalize_routing_weight_nz = {&DEF_V1, ATTRS_V1, 6, gws_v1,
                                                                        aclnnGroupedMatmulFinalizeRoutingWeightNz};
const mf_op_entry mf_entry_grouped_matmul_finalize_routing_weight_nz_v2 = {&DEF_V2, ATTRS_V2, 7, gws_v2,
                                                                           aclnnGroupedMatmulFinalizeRoutingWeightNzV2};
