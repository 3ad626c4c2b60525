/* gating_group.c - aclnnMoeGatingTopK and aclnnMoeFusedTopk, both phases:
 * one row routine (gating_group_core.h) behind two front ends.
 *
 * MoeGatingTopK. Phase 1: the definition table (moe_gating_top_k_def.cpp),
 * then the tiling checks in CANN's order: Ascend 950 (the default)
 * moe_gating_top_k_tiling_arch35.cpp (CheckInputShape, CheckAttr,
 * CheckOutShape, with its collapse of kGroup == groupCount or groupCount ==
 * E to one group); MOEFR_SOC=ascend910b moe_gating_top_k_tiling.cpp
 * (CheckInputShape, CheckOutShape, CheckAttr). All 561002.
 * MoeFusedTopk. Phase 1: op_api/aclnn_moe_fused_topk.cpp (CheckNotNull
 * 161001, CheckDtypeValid and CheckShape 161002, x empty: success).
 *
 * Phase 2, one row r at a time, parallel over rows, in fp32 with a fixed
 * order of operations (no FMA, no libm), so the bits depend on neither
 * MOEFR_ISA nor the thread count:
 *   v = x[r] widened exactly; s = sigmoid(v) (1/(1+t) or t/(1+t), t =
 *   exp(-|v|)) or softmax(v) (gating_core.h's gt_softmax); b = s + bias.
 *   Group scores over groups of P = E/G consecutive experts: the largest b
 *   (GatingTopK mode 0), the sum of the two largest (mode 1), or of the topN
 *   largest added in descending order (Fused). The kG best groups by (score
 *   descending, group ascending). GatingTopK: the kept groups' experts
 *   compete; Fused: every expert competes with b * 1 (kept) or b * 0 (not
 *   kept), as its kernel multiplies by a 0/1 group mask. Then the k best by
 *   (value descending, expert ascending), -0 as +0 and NaN the largest
 *   (gt_topk), as CANN's Sort/MrgSort keep the lower index first on ties.
 *   y[i] = s[e_i]; GatingTopK: sigmoid: y / (sum + eps) (sum added in output
 *   order), then * routedScalingFactor (softmax: only the scaling);
 *   Fused with isNorm: y * (1 / sum), then * scale. outOut = s.
 *   Fused mapping: indices = mappingTable[e][r % mappingNum[e]] (column 0
 *   when mappingNum[e] is 0, counts as uint32 as the kernel reads them);
 *   every lookup is checked first: one outside its row is 161002 with the
 *   outputs untouched (CANN reads outside mappingTable). */
#include "aclnnop/aclnn_moe_fused_topk.h"
#include "aclnnop/aclnn_moe_gating_top_k.h"
#include "ops/opdef.h"

/* the generic four-lane row routine (gating_group_avx2.c builds the eight-lane one) */
#define GT_W 4
#define GG_ROWS mf_gating_group_rows_generic
#include "ops/routing/gating_group_core.h"

static const char OP1[] = "aclnnMoeGatingTopK";
static const char OP2[] = "aclnnMoeFusedTopk";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define INVALID ACLNN_ERR_PARAM_INVALID
#define dims_str mf_shape_str

/* ---- the definition tables ---- */
enum { GK_X, GK_BIAS, GK_Y, GK_EIDX, GK_OUT, GK_NT };
static const char *const NAMES1[GK_NT] = {"x", "biasOptional", "yOut", "expertIdxOut", "outOut"};
static const unsigned FLAGS1[GK_NT] = {MF_T_REQUIRED, 0, MF_T_REQUIRED | MF_T_CONTIG, MF_T_REQUIRED | MF_T_CONTIG,
                                       MF_T_REQUIRED | MF_T_CONTIG};
/* moe_gating_top_k_def.cpp: one table for ascend910b, ascend910_93 and
 * ascend910_95 (x, bias | y, expert_idx, out). */
static const mf_dtcol COLS1[] = {{ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, ACL_INT32, ACL_FLOAT},
                                 {ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, ACL_INT32, ACL_FLOAT},
                                 {ACL_BF16, ACL_BF16, ACL_BF16, ACL_INT32, ACL_FLOAT}};
static const mf_op_def DEF1 = {OP1, MF_OP_GATING_TOP_K, 2, 3, NAMES1, FLAGS1, COLS1, 3, COLS1, 3};

enum { FT_X, FT_ADD, FT_MNUM, FT_MTAB, FT_Y, FT_IDX, FT_NT };
static const char *const NAMES2[FT_NT] = {"x", "addNum", "mappingNum", "mappingTable", "y", "indices"};
static const unsigned FLAGS2[FT_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, 0, 0, MF_T_REQUIRED, MF_T_REQUIRED};
/* op_api/aclnn_moe_fused_topk.cpp, CheckDtypeValid: x FLOAT/FLOAT16/BF16,
 * addNum x's, indices INT32, y FLOAT; the mapping tensors INT32 only when
 * mapping is on (checked below). moe_fused_topk_def.cpp registers A2/A3
 * only; moefr takes it under either product setting. */
#define AN MF_DT_ANY
static const mf_dtcol COLS2[] = {{ACL_FLOAT, ACL_FLOAT, AN, AN, ACL_FLOAT, ACL_INT32},
                                 {ACL_FLOAT16, ACL_FLOAT16, AN, AN, ACL_FLOAT, ACL_INT32},
                                 {ACL_BF16, ACL_BF16, AN, AN, ACL_FLOAT, ACL_INT32}};
#undef AN
static const mf_op_def DEF2 = {OP2, MF_OP_FUSED_TOPK, 4, 2, NAMES2, FLAGS2, COLS2, 3, COLS2, 3};

/* ---- phase 2 ---- */
static aclnnStatus gg_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const gg_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    const aclTensor *x = t[p->xi], *y = t[p->yi], *e = t[p->ei];
    gg_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.x = mf_rows_of(x);
    c.dtype = x->dtype;
    c.ydtype = y->dtype;
    const int64_t ye = (int64_t)mf_dtype_size(y->dtype), Ep = GT_PAD(p->E);
    c.y = mf_tensor_base(y);
    c.ys0 = y->strides[0] * ye, c.ys1 = y->strides[1] * ye;
    c.eidx = mf_tensor_base(e);
    c.es0 = e->strides[0] * 4, c.es1 = e->strides[1] * 4;
    c.out = p->out_flag ? (float *)mf_tensor_base(t[p->oi]) : NULL;
    float *ws = (float *)mf_align64(workspace);
    if (p->has_bias) {
        const aclTensor *bt = t[p->bi];
        mf_widen_f32(mf_tensor_base(bt), bt->strides[0] * (int64_t)mf_dtype_size(bt->dtype), bt->dtype, p->E, ws, 1);
        for (int64_t j = p->E; j < Ep; j++) ws[j] = 0.0f;
        c.bias = ws;
    }
    if (p->mapping) {
        c.wy = ws + Ep;
        c.we = (int32_t *)(c.wy + p->R * p->k);
    }
    int64_t serial = 4096 / p->E;
    mf_range_fn rows = mf_gating_group_rows_generic;
#if defined(MOEFR_X86_KERNELS)
    if (strncmp(mf_kernels()->isa, "avx", 3) == 0) rows = mf_gating_group_rows_avx2; /* avx2, avx512: same bits */
#endif
    mf_parallel_for(p->R, rows, &c, serial < 1 ? 1 : serial);
    if (!p->mapping) return ACLNN_SUCCESS;
    /* every lookup first (the kernel's CopyOut reads mappingTable[e * tdim +
     * r % mappingNum[e]]), then the outputs */
    const mf_small mn = mf_small_of(t[p->mni]), mt = mf_small_of(t[p->mti]);
    for (int64_t r = 0; r < p->R; r++)
        for (int64_t i = 0; i < p->k; i++) {
            const int32_t ex = c.we[r * p->k + i];
            const uint32_t m = (uint32_t)mf_small_i32(&mn, ex, 0);
            const uint64_t off = m == 0 ? 0 : (uint64_t)r % m;
            if (off >= (uint64_t)p->tdim)
                return mf_fail(INVALID,
                               "%s: row %lld picks expert %d whose mapping column %llu (mappingNum %u) is outside "
                               "mappingTable's %lld columns",
                               OP2, (long long)r, (int)ex, (unsigned long long)off, m, (long long)p->tdim);
        }
    for (int64_t r = 0; r < p->R; r++)
        for (int64_t i = 0; i < p->k; i++) {
            const int32_t ex = c.we[r * p->k + i];
            const uint32_t m = (uint32_t)mf_small_i32(&mn, ex, 0);
            const int64_t off = m == 0 ? 0 : (int64_t)((uint64_t)r % m);
            const int32_t logical = mf_small_i32(&mt, ex, off);
            memcpy(c.y + r * c.ys0 + i * c.ys1, &c.wy[r * p->k + i], 4);
            memcpy(c.eidx + r * c.es0 + i * c.es1, &logical, 4);
        }
    return ACLNN_SUCCESS;
}

static aclnnStatus workspace_of(const char *op, const gg_plan *pl, uint64_t *ws) {
    int64_t rk, bytes = GT_PAD(pl->E) * 4;
    *ws = 0;
    if (pl->mapping) {
        if (!mf_mul_ok(pl->R, pl->k, &rk) || !mf_mul_ok(rk, 8, &rk) || rk > INT64_MAX - bytes)
            return mf_fail(INVALID, "%s: the (%lld x %lld) scratch overflows", op, (long long)pl->R, (long long)pl->k);
        bytes += rk;
    }
    *ws = (pl->has_bias || pl->mapping) ? mf_workspace_with_slack((uint64_t)bytes) : 0;
    return ACLNN_SUCCESS;
}

/* ---- MoeGatingTopK, phase 1 ---- */
typedef struct gk_args {
    int64_t k, kG, G, mode, renorm, norm;
    bool out_flag;
} gk_args;

static aclnnStatus gk_input_shape(const aclTensor *x, const aclTensor *bias, const gk_args *a, bool a2) {
    char s1[96];
    if (x->ndim != 2) return mf_fail(TILING, "%s: x must be 2-D, got %s", OP1, dims_str(x, s1, sizeof s1));
    const int64_t E = x->dims[1];
    if (!a2 && E > GG_MAX_E)
        return mf_fail(TILING, "%s: x's experts (dim 1) must be <= 2048, got %lld", OP1, (long long)E);
    if (bias != NULL) {
        if (bias->ndim != 1)
            return mf_fail(TILING, "%s: biasOptional must be 1-D, got %s", OP1, dims_str(bias, s1, sizeof s1));
        if (bias->dims[0] != E)
            return mf_fail(TILING, "%s: biasOptional dim 0 must be x's experts %lld, got %lld", OP1, (long long)E,
                           (long long)bias->dims[0]);
    }
    if (a->k > E)
        return mf_fail(TILING, "%s: k (%lld) must be <= the experts (%lld)", OP1, (long long)a->k, (long long)E);
    return ACLNN_SUCCESS;
}

static aclnnStatus gk_out_shape(const aclTensor *x, const aclTensor *y, const aclTensor *e, const aclTensor *o,
                                const gk_args *a) {
    char s1[96];
    if (y->ndim != 2) return mf_fail(TILING, "%s: yOut must be 2-D like x, got %s", OP1, dims_str(y, s1, sizeof s1));
    if (e->ndim != 2)
        return mf_fail(TILING, "%s: expertIdxOut must be 2-D like x, got %s", OP1, dims_str(e, s1, sizeof s1));
    if (o->ndim != 2) return mf_fail(TILING, "%s: outOut must be 2-D like x, got %s", OP1, dims_str(o, s1, sizeof s1));
    if (y->dims[0] != x->dims[0])
        return mf_fail(TILING, "%s: yOut dim 0 must be x's rows %lld, got %lld", OP1, (long long)x->dims[0],
                       (long long)y->dims[0]);
    if (e->dims[0] != x->dims[0])
        return mf_fail(TILING, "%s: expertIdxOut dim 0 must be x's rows %lld, got %lld", OP1, (long long)x->dims[0],
                       (long long)e->dims[0]);
    if (a->out_flag && o->dims[0] != x->dims[0])
        return mf_fail(TILING, "%s: outOut dim 0 must be x's rows %lld (outFlag), got %lld", OP1,
                       (long long)x->dims[0], (long long)o->dims[0]);
    if (y->dims[1] != a->k)
        return mf_fail(TILING, "%s: yOut dim 1 must be k = %lld, got %lld", OP1, (long long)a->k, (long long)y->dims[1]);
    if (e->dims[1] != a->k)
        return mf_fail(TILING, "%s: expertIdxOut dim 1 must be k = %lld, got %lld", OP1, (long long)a->k,
                       (long long)e->dims[1]);
    if (a->out_flag && o->dims[1] != x->dims[1])
        return mf_fail(TILING, "%s: outOut dim 1 must be x's experts %lld (outFlag), got %lld", OP1,
                       (long long)x->dims[1], (long long)o->dims[1]);
    return ACLNN_SUCCESS;
}

static int64_t ceil32(int64_t v) { return (v + 31) / 32 * 32; }

#define GK_FAIL(...) return mf_fail(TILING, __VA_ARGS__)
/* moe_gating_top_k_tiling_arch35.cpp, CheckAttr; *G and *kG receive the
 * collapsed grouping. */
static aclnnStatus gk_attr_950(int64_t E, const gk_args *a, int64_t *G, int64_t *kG) {
    const int64_t k = a->k;
    if (k <= 0) GK_FAIL("%s: k must be > 0, got %lld", OP1, (long long)k);
    if (a->kG <= 0) GK_FAIL("%s: kGroup must be > 0, got %lld", OP1, (long long)a->kG);
    if (a->G <= 0) GK_FAIL("%s: groupCount must be > 0, got %lld", OP1, (long long)a->G);
    if (E % a->G != 0)
        GK_FAIL("%s: the experts (%lld) must be a multiple of groupCount (%lld)", OP1, (long long)E, (long long)a->G);
    if (a->kG > a->G)
        GK_FAIL("%s: kGroup (%lld) must be <= groupCount (%lld)", OP1, (long long)a->kG, (long long)a->G);
    if (a->G == E && a->kG < k)
        GK_FAIL("%s: with groupCount = the experts, kGroup (%lld) must be >= k (%lld)", OP1, (long long)a->kG,
                (long long)k);
    *G = a->G, *kG = a->kG;
    if (a->kG == a->G || a->G == E) *G = 1, *kG = 1;
    const int64_t P = E / *G;
    if (*G * ceil32(P) > GG_MAX_E)
        GK_FAIL("%s: groupCount * (experts per group rounded up to 32) = %lld must be <= 2048", OP1,
                (long long)(*G * ceil32(P)));
    if (*kG * P < k)
        GK_FAIL("%s: kGroup * experts per group = %lld must be >= k (%lld)", OP1, (long long)(*kG * P), (long long)k);
    if (P < 1) GK_FAIL("%s: experts per group must be > 0, got %lld", OP1, (long long)P);
    if (a->mode != 0 && a->mode != 1) GK_FAIL("%s: groupSelectMode must be 0 or 1, got %lld", OP1, (long long)a->mode);
    if (a->mode == 1 && P < 2)
        GK_FAIL("%s: groupSelectMode 1 needs >= 2 experts per group, got %lld", OP1, (long long)P);
    if (a->renorm != 0) GK_FAIL("%s: renorm must be 0, got %lld", OP1, (long long)a->renorm);
    if (a->norm != 0 && a->norm != 1) GK_FAIL("%s: normType must be 0 or 1, got %lld", OP1, (long long)a->norm);
    return ACLNN_SUCCESS;
}

/* moe_gating_top_k_tiling.cpp, CheckAttr (A2/A3) */
static aclnnStatus gk_attr_a2(int64_t E, const gk_args *a) {
    const int64_t k = a->k;
    if (E > GG_MAX_E) GK_FAIL("%s: x's experts (dim 1) must be <= 2048, got %lld", OP1, (long long)E);
    if (k <= 0) GK_FAIL("%s: k must be > 0, got %lld", OP1, (long long)k);
    if (a->kG <= 0) GK_FAIL("%s: kGroup must be > 0, got %lld", OP1, (long long)a->kG);
    if (a->kG > a->G)
        GK_FAIL("%s: kGroup (%lld) must be <= groupCount (%lld)", OP1, (long long)a->kG, (long long)a->G);
    if (a->G <= 0) GK_FAIL("%s: groupCount must be > 0, got %lld", OP1, (long long)a->G);
    if (a->norm != 0 && a->norm != 1) GK_FAIL("%s: normType must be 0 or 1, got %lld", OP1, (long long)a->norm);
    if (a->mode != 0 && a->mode != 1) GK_FAIL("%s: groupSelectMode must be 0 or 1, got %lld", OP1, (long long)a->mode);
    if (a->renorm != 0) GK_FAIL("%s: renorm must be 0, got %lld", OP1, (long long)a->renorm);
    if (E % a->G != 0)
        GK_FAIL("%s: the experts (%lld) must be a multiple of groupCount (%lld)", OP1, (long long)E, (long long)a->G);
    const int64_t P = E / a->G;
    if (P < 1) GK_FAIL("%s: experts per group must be > 0, got %lld", OP1, (long long)P);
    if (a->mode == 1 && P < 2)
        GK_FAIL("%s: groupSelectMode 1 needs >= 2 experts per group, got %lld", OP1, (long long)P);
    if (k > a->kG * P)
        GK_FAIL("%s: k (%lld) must be <= kGroup * experts per group = %lld", OP1, (long long)k, (long long)(a->kG * P));
    if (a->G != 1 && a->G != E && a->kG != a->G && a->G * ceil32(P) > GG_MAX_E)
        GK_FAIL("%s: groupCount * (experts per group rounded up to 32) = %lld must be <= 2048", OP1,
                (long long)(a->G * ceil32(P)));
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeGatingTopKGetWorkspaceSize(const aclTensor *x, const aclTensor *biasOptional, int64_t k,
                                               int64_t kGroup, int64_t groupCount, int64_t groupSelectMode,
                                               int64_t renorm, int64_t normType, bool outFlag,
                                               double routedScalingFactor, double eps, const aclTensor *yOut,
                                               const aclTensor *expertIdxOut, const aclTensor *outOut,
                                               uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *t[GK_NT] = {x, biasOptional, yOut, expertIdxOut, outOut};
    MF_TRY(mf_op_check(&DEF1, t, workspaceSize, executor));
    MF_TRY(mf_isa_check(OP1));
    gg_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.xi = GK_X, pl.bi = GK_BIAS, pl.yi = GK_Y, pl.ei = GK_EIDX, pl.oi = GK_OUT, pl.mni = pl.mti = -1;
    const unsigned unused = outFlag ? 0u : 1u << GK_OUT; /* written only with outFlag */
    if (yOut->numel == 0 && expertIdxOut->numel == 0 && (!outFlag || outOut->numel == 0)) {
        pl.empty = true;
        return mf_op_publish(&DEF1, t, unused, &pl, sizeof pl, gg_run, 0, workspaceSize, executor);
    }
    const gk_args a = {k, kGroup, groupCount, groupSelectMode, renorm, normType, outFlag};
    const bool a2 = mf_soc_strict();
    int64_t G = groupCount, kG = kGroup;
    MF_TRY(gk_input_shape(x, biasOptional, &a, a2));
    const int64_t E = x->dims[1];
    if (a2) {
        MF_TRY(gk_out_shape(x, yOut, expertIdxOut, outOut, &a));
        MF_TRY(gk_attr_a2(E, &a));
    } else {
        MF_TRY(gk_attr_950(E, &a, &G, &kG));
        MF_TRY(gk_out_shape(x, yOut, expertIdxOut, outOut, &a));
    }
    pl.R = x->dims[0], pl.E = E, pl.k = k, pl.G = G, pl.kG = kG, pl.P = E / G;
    pl.grouped = !(G == 1 || G == E || kG == G);
    if (pl.grouped && G > GG_MAX_G) /* not reached: the aligned-width check bounds G by 64 */
        return mf_fail(TILING, "%s: groupCount %lld is above %d", OP1, (long long)G, GG_MAX_G);
    pl.topn = groupSelectMode == 1 ? 2 : 1;
    pl.sigmoid = normType == 1;
    pl.has_bias = biasOptional != NULL;
    pl.renorm_y = pl.sigmoid;
    pl.scale_y = true;
    pl.out_flag = outFlag;
    /* the attributes are fp32 (moe_gating_top_k_def.cpp: Float) */
    pl.scale = (float)routedScalingFactor;
    pl.eps = (float)eps;
    uint64_t ws;
    MF_TRY(workspace_of(OP1, &pl, &ws));
    return mf_op_publish(&DEF1, t, unused, &pl, sizeof pl, gg_run, ws, workspaceSize, executor);
}

aclnnStatus aclnnMoeGatingTopK(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                               aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_GATING_TOP_K, OP1, workspace, workspaceSize, stream);
}

/* ---- MoeFusedTopk, phase 1: op_api/aclnn_moe_fused_topk.cpp ---- */
#define FT_FAIL(...) return mf_fail(INVALID, __VA_ARGS__)
static aclnnStatus ft_shape(const aclTensor *x, const aclTensor *add, const aclTensor *mnum, const aclTensor *mtab,
                            uint32_t G, uint32_t kG, uint32_t topN, uint32_t topK, bool map, const aclTensor *y,
                            const aclTensor *idx) {
    char s1[96], s2[96];
    if (!(G > 0 && kG > 0 && topN > 0 && topK > 0))
        FT_FAIL("%s: groupNum (%u), groupTopk (%u), topN (%u) and topK (%u) must all be > 0", OP2, G, kG, topN, topK);
    if (G > 256) FT_FAIL("%s: groupNum must be <= 256, got %u", OP2, G);
    if (x->ndim != 2) FT_FAIL("%s: x must be 2-D, got %s", OP2, dims_str(x, s1, sizeof s1));
    if (add->ndim != 1) FT_FAIL("%s: addNum must be 1-D, got %s", OP2, dims_str(add, s1, sizeof s1));
    if (y->ndim != 2) FT_FAIL("%s: y must be 2-D, got %s", OP2, dims_str(y, s1, sizeof s1));
    bool same = y->ndim == idx->ndim;
    for (int d = 0; same && d < y->ndim; d++) same = y->dims[d] == idx->dims[d];
    if (!same)
        FT_FAIL("%s: indices shape %s must equal y's %s", OP2, dims_str(idx, s1, sizeof s1), dims_str(y, s2, sizeof s2));
    const int64_t N = x->dims[0], E = x->dims[1];
    if (y->dims[0] != N) FT_FAIL("%s: y dim 0 must be x's rows %lld, got %lld", OP2, (long long)N, (long long)y->dims[0]);
    if (y->dims[1] != (int64_t)topK)
        FT_FAIL("%s: y dim 1 must be topK = %u, got %lld", OP2, topK, (long long)y->dims[1]);
    if (add->dims[0] != E)
        FT_FAIL("%s: addNum dim 0 must be x's experts %lld, got %lld", OP2, (long long)E, (long long)add->dims[0]);
    if (E % G != 0) FT_FAIL("%s: the experts (%lld) must be a multiple of groupNum (%u)", OP2, (long long)E, G);
    if (kG > G) FT_FAIL("%s: groupTopk (%u) must be <= groupNum (%u)", OP2, kG, G);
    if ((int64_t)topK > E) FT_FAIL("%s: topK (%u) must be <= the experts (%lld)", OP2, topK, (long long)E);
    if ((int64_t)topN > E / G)
        FT_FAIL("%s: topN (%u) must be <= experts per group (%lld)", OP2, topN, (long long)(E / G));
    if (E > 1024) FT_FAIL("%s: the experts must be <= 1024, got %lld", OP2, (long long)E);
    if (map) {
        if (mnum->ndim != 1) FT_FAIL("%s: mappingNum must be 1-D, got %s", OP2, dims_str(mnum, s1, sizeof s1));
        if (mtab->ndim != 2) FT_FAIL("%s: mappingTable must be 2-D, got %s", OP2, dims_str(mtab, s1, sizeof s1));
        if (mtab->dims[1] > 128)
            FT_FAIL("%s: mappingTable dim 1 (maxMappingNum) must be <= 128, got %lld", OP2, (long long)mtab->dims[1]);
        if (mnum->dims[0] != E)
            FT_FAIL("%s: mappingNum dim 0 must be x's experts %lld, got %lld", OP2, (long long)E,
                    (long long)mnum->dims[0]);
        if (mtab->dims[0] != E)
            FT_FAIL("%s: mappingTable dim 0 must be x's experts %lld, got %lld", OP2, (long long)E,
                    (long long)mtab->dims[0]);
    }
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeFusedTopkGetWorkspaceSize(const aclTensor *x, const aclTensor *addNum, const aclTensor *mappingNum,
                                              const aclTensor *mappingTable, uint32_t groupNum, uint32_t groupTopk,
                                              uint32_t topN, uint32_t topK, uint32_t activateType, bool isNorm,
                                              float scale, bool enableExpertMapping, aclTensor *y, aclTensor *indices,
                                              uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)activateType; /* not checked by op_api; the kernel always applies the sigmoid */
    const aclTensor *t[FT_NT] = {x, addNum, mappingNum, mappingTable, y, indices};
    MF_TRY(mf_op_check(&DEF2, t, workspaceSize, executor));
    if (enableExpertMapping) {
        if (mappingNum == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: mappingNum is NULL (enableExpertMapping)", OP2);
        if (mappingTable == NULL)
            return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: mappingTable is NULL (enableExpertMapping)", OP2);
        if (mappingNum->dtype != ACL_INT32)
            return mf_fail(INVALID, "%s: mappingNum dtype must be INT32, got %s", OP2, mf_dtype_name(mappingNum->dtype));
        if (mappingTable->dtype != ACL_INT32)
            return mf_fail(INVALID, "%s: mappingTable dtype must be INT32, got %s", OP2,
                           mf_dtype_name(mappingTable->dtype));
    }
    MF_TRY(mf_isa_check(OP2));
    const unsigned unused = enableExpertMapping ? 0u
                                                : (mappingNum ? 1u << FT_MNUM : 0u) | (mappingTable ? 1u << FT_MTAB : 0u);
    gg_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.xi = FT_X, pl.bi = FT_ADD, pl.yi = FT_Y, pl.ei = FT_IDX, pl.oi = -1, pl.mni = FT_MNUM, pl.mti = FT_MTAB;
    if (x->numel == 0) { /* CheckShape and the launch are skipped */
        pl.empty = true;
        return mf_op_publish(&DEF2, t, unused, &pl, sizeof pl, gg_run, 0, workspaceSize, executor);
    }
    MF_TRY(ft_shape(x, addNum, mappingNum, mappingTable, groupNum, groupTopk, topN, topK, enableExpertMapping, y,
                    indices));
    pl.fused = true;
    pl.R = x->dims[0], pl.E = x->dims[1], pl.k = topK, pl.G = groupNum, pl.kG = groupTopk, pl.P = pl.E / groupNum;
    pl.grouped = groupTopk < groupNum;
    pl.topn = topN;
    pl.sigmoid = true;
    pl.has_bias = true;
    pl.renorm_y = pl.scale_y = isNorm;
    pl.scale = scale;
    pl.mapping = enableExpertMapping;
    pl.tdim = enableExpertMapping ? mappingTable->dims[1] : 0;
    uint64_t ws;
    MF_TRY(workspace_of(OP2, &pl, &ws));
    return mf_op_publish(&DEF2, t, unused, &pl, sizeof pl, gg_run, ws, workspaceSize, executor);
}

aclnnStatus aclnnMoeFusedTopk(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_FUSED_TOPK, OP2, workspace, workspaceSize, stream);
}

/* ---- registry entries (opdef.h) ---- */
static const mf_attr_desc ATTRS1[] = {{"k", MF_ATTR_INT64, 1, 8},
                                      {"kGroup", MF_ATTR_INT64, 1, 4},
                                      {"groupCount", MF_ATTR_INT64, 1, 8},
                                      {"groupSelectMode", MF_ATTR_INT64, 0, 1},
                                      {"renorm", MF_ATTR_INT64, 0, 1},
                                      {"normType", MF_ATTR_INT64, 0, 1},
                                      {"outFlag", MF_ATTR_BOOL, 0, 1},
                                      {"routedScalingFactor", MF_ATTR_DOUBLE, 1, 3}};
static aclnnStatus gws_thunk1(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeGatingTopKGetWorkspaceSize(t[0], t[1], a[0].i, a[1].i, a[2].i, a[3].i, a[4].i, a[5].i, a[6].i != 0,
                                              a[7].d, 1e-20, t[2], t[3], t[4], ws, e);
}
const mf_op_entry mf_entry_gating_top_k = {&DEF1, ATTRS1, 8, gws_thunk1, aclnnMoeGatingTopK};
static const mf_attr_desc ATTRS2[] = {{"groupNum", MF_ATTR_INT64, 1, 8},  {"groupTopk", MF_ATTR_INT64, 1, 4},
                                      {"topN", MF_ATTR_INT64, 1, 3},      {"topK", MF_ATTR_INT64, 1, 8},
                                      {"isNorm", MF_ATTR_BOOL, 0, 1},     {"scale", MF_ATTR_DOUBLE, 1, 3},
                                      {"enableExpertMapping", MF_ATTR_BOOL, 0, 1}};
static aclnnStatus gws_thunk2(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeFusedTopkGetWorkspaceSize(t[0], t[1], t[2], t[3], (uint32_t)a[0].i, (uint32_t)a[1].i,
                                             (uint32_t)a[2].i, (uint32_t)a[3].i, 0, a[4].i != 0, (float)a[5].d,
                                             a[6].i != 0, (aclTensor *)t[4], (aclTensor *)t[5], ws, e);
}
const mf_op_entry mf_entry_fused_topk = {&DEF2, ATTRS2, 7, gws_thunk2, aclnnMoeFusedTopk};
