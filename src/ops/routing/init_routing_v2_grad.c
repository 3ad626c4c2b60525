/* init_routing_v2_grad.c - aclnnMoeInitRoutingV2Grad, both phases. Phase 1:
 * the definition table (opdef.c), then CANN's tiling checks in the order of
 * moe_init_routing_v2_grad_tiling_base.cpp (CheckParamsValidity,
 * CheckShapeValidity, the topK divisibility). Phase 2: every index checked
 * first, then tokens in parallel, each summed in fp32 in k order. */
#include "aclnnop/aclnn_moe_init_routing_v2_grad.h"
#include "ops/opdef.h"
#include "ops/routing/routing.h"

static const char OP[] = "aclnnMoeInitRoutingV2Grad";
#define TILING ACLNN_ERR_INNER_TILING_ERROR
#define TRY(call)                             \
    do {                                      \
        aclnnStatus rc_ = (call);             \
        if (rc_ != ACLNN_SUCCESS) return rc_; \
    } while (0)

enum { S_G, S_IDX, S_OUT, S_NT };
static const char *const NAMES[S_NT] = {"gradExpandedX", "expandedRowIdx", "out"};
static const unsigned FLAGS[S_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED | MF_T_CONTIG};
/* moe_init_routing_v2_grad_def.cpp: (grad_expanded_x, expanded_row_idx |
 * grad_x), the same columns on every product. */
static const mf_dtcol COLS[] = {{ACL_FLOAT16, ACL_INT32, ACL_FLOAT16},
                                {ACL_BF16, ACL_INT32, ACL_BF16},
                                {ACL_FLOAT, ACL_INT32, ACL_FLOAT}};
static const mf_op_def DEF = {OP, MF_OP_INIT_ROUTING_V2_GRAD, 2, 1, NAMES, FLAGS, COLS, 3, COLS, 3};

/* The H elements one pass of a token accumulates (fp32, on the stack). */
#define MF_IRG_TILE 1024
#define MF_IRG_SERIAL_BYTES (256 * 1024)

typedef struct irg_plan {
    bool empty;
    int mode;
    int64_t N, K, H, D0; /* D0: rows of gradExpandedX */
    int64_t active;      /* mode 0: values >= active are skipped (0: none) */
    int dtype;
    size_t es;
} irg_plan;

static aclnnStatus positive(const char *name, const aclTensor *t, bool zero_ok) {
    for (int i = 0; i < t->ndim; i++)
        if (t->dims[i] < 0 || (!zero_ok && t->dims[i] == 0))
            return mf_fail(TILING, "%s: %s dim%d must be %s, got %lld", OP, name, i, zero_ok ? ">= 0" : "> 0",
                           (long long)t->dims[i]);
    return ACLNN_SUCCESS;
}

static aclnnStatus check_shapes(const aclTensor *const *t, int64_t topK, int64_t mode, int64_t active, irg_plan *p) {
    const aclTensor *g = t[S_G], *idx = t[S_IDX], *out = t[S_OUT];
    char buf[160];
    if (mode != 0 && mode != 1) return mf_fail(TILING, "%s: dropPadMode must be 0 or 1, got %lld", OP, (long long)mode);
    if (topK <= 0) return mf_fail(TILING, "%s: topK must be > 0, got %lld", OP, (long long)topK);
    if (active < 0) return mf_fail(TILING, "%s: activeNum must be >= 0, got %lld", OP, (long long)active);
    if (g->ndim != 2 && g->ndim != 3)
        return mf_fail(TILING, "%s: gradExpandedX must be 2-D or 3-D, got %d-D %s", OP, (int)g->ndim,
                       mf_shape_str(g, buf, sizeof buf));
    if (mode == 1 && g->ndim != 3)
        return mf_fail(TILING, "%s: gradExpandedX must be 3-D in dropPadMode 1, got %d-D %s", OP, (int)g->ndim,
                       mf_shape_str(g, buf, sizeof buf));
    /* moefr: CANN takes a 3-D gradExpandedX in mode 0 as rows of dim1
     * elements of its storage; that layout has no meaning (CANN_COMPAT.md) */
    if (mode == 0 && g->ndim != 2)
        return mf_fail(TILING, "%s: gradExpandedX must be 2-D in dropPadMode 0, got %d-D %s", OP, (int)g->ndim,
                       mf_shape_str(g, buf, sizeof buf));
    if (idx->ndim < 1) return mf_fail(TILING, "%s: expandedRowIdx must have at least 1 dim, got 0-D", OP);
    const int64_t BSK = idx->dims[0];
    if (mode == 0 && active == 0 && g->dims[0] != BSK)
        return mf_fail(TILING, "%s: gradExpandedX dim0 must equal expandedRowIdx dim0 (%lld) when activeNum is 0, got %lld",
                       OP, (long long)BSK, (long long)g->dims[0]);
    if (mode == 0 && active > 0 && g->dims[0] != active)
        return mf_fail(TILING, "%s: gradExpandedX dim0 must equal activeNum (%lld), got %lld", OP, (long long)active,
                       (long long)g->dims[0]);
    TRY(mf_check_rank(OP, TILING, "out", out, 2));
    const int64_t H = mode == 0 ? g->dims[1] : g->dims[2];
    TRY(mf_check_dim(OP, TILING, "out", out, 1, H));
    TRY(mf_check_dim(OP, TILING, "out", out, 0, BSK / topK));
    TRY(positive("expandedRowIdx", idx, false));
    TRY(positive("out", out, false));
    TRY(positive("gradExpandedX", g, !(mode == 0 && active == 0)));
    if (BSK % topK != 0)
        return mf_fail(TILING, "%s: expandedRowIdx dim0 (%lld) must be a multiple of topK (%lld)", OP, (long long)BSK,
                       (long long)topK);
    int64_t D0 = g->dims[0];
    if (mode == 1 && (!mf_mul_ok(g->dims[0], g->dims[1], &D0) || D0 > INT32_MAX)) D0 = INT32_MAX;
    p->mode = (int)mode;
    p->N = BSK / topK;
    p->K = topK;
    p->H = H;
    p->D0 = D0;
    p->active = mode == 0 ? active : 0;
    return ACLNN_SUCCESS;
}

static aclnnStatus irg_run(const void *plan, const aclTensor *const *t, void *workspace);

aclnnStatus aclnnMoeInitRoutingV2GradGetWorkspaceSize(const aclTensor *gradExpandedX, const aclTensor *expandedRowIdx,
                                                      int64_t topK, int64_t dropPadMode, int64_t activeNum,
                                                      const aclTensor *out, uint64_t *workspaceSize,
                                                      aclOpExecutor **executor) {
    const aclTensor *t[S_NT] = {gradExpandedX, expandedRowIdx, out};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    irg_plan pl;
    memset(&pl, 0, sizeof pl);
    if (mf_op_outputs_empty(&DEF, t)) {
        pl.empty = true;
        return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, irg_run, 0, workspaceSize, executor);
    }
    TRY(check_shapes(t, topK, dropPadMode, activeNum, &pl));
    pl.dtype = out->dtype;
    pl.es = mf_dtype_size(out->dtype);
    /* workspace: the N*topK index values, read (and checked) once */
    const uint64_t ws = mf_workspace_with_slack((uint64_t)(pl.N * pl.K) * 4);
    return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, irg_run, ws, workspaceSize, executor);
}

/* Element i (flat, row-major view order) of an int32 tensor of any rank. */
static inline int32_t flat_i32(const aclTensor *t, const char *base, int64_t i) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (i % t->dims[d]) * t->strides[d];
        i /= t->dims[d];
    }
    int32_t v;
    memcpy(&v, base + off * 4, 4);
    return v;
}

typedef struct irg_ctx {
    const irg_plan *p;
    mf_rows g;
    const int32_t *idx; /* T values, gathered */
    char *out;
} irg_ctx;

static inline bool kept(const irg_plan *p, int32_t d) {
    if (p->mode == 1) return d != -1;
    return p->active == 0 || d < p->active;
}

static inline float load(const char *row, int64_t j, int64_t s_col, int dtype) {
    const char *q = row + j * s_col;
    uint16_t h;
    float f;
    switch (dtype) {
    case ACL_FLOAT: memcpy(&f, q, 4); return f;
    case ACL_FLOAT16: memcpy(&h, q, 2); return mf_f16_to_f32(h);
    default: memcpy(&h, q, 2); return mf_bf16_to_f32(h);
    }
}

static void irg_tokens(void *vctx, int64_t r0, int64_t r1) {
    const irg_ctx *c = vctx;
    const irg_plan *p = c->p;
    const int64_t H = p->H, K = p->K, es = (int64_t)p->es;
    float acc[MF_IRG_TILE];
    for (int64_t r = r0; r < r1; r++) {
        char *o = c->out + r * H * es;
        for (int64_t h0 = 0; h0 < H; h0 += MF_IRG_TILE) {
            const int64_t n = H - h0 < MF_IRG_TILE ? H - h0 : MF_IRG_TILE;
            bool first = true;
            for (int64_t k = 0; k < K; k++) {
                const int32_t d = c->idx[r * K + k];
                if (!kept(p, d)) continue;
                const char *row = mf_row(&c->g, d);
                if (first) {
                    for (int64_t j = 0; j < n; j++) acc[j] = load(row, h0 + j, c->g.s_col, p->dtype);
                    first = false;
                } else {
                    for (int64_t j = 0; j < n; j++) acc[j] += load(row, h0 + j, c->g.s_col, p->dtype);
                }
            }
            if (first) {
                memset(o + h0 * es, 0, (size_t)(n * es)); /* no kept term: +0.0 */
                continue;
            }
            for (int64_t j = 0; j < n; j++) mf_store_f64(o + (h0 + j) * es, p->dtype, (double)acc[j]);
        }
    }
}

static aclnnStatus irg_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const irg_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OP));
    const aclTensor *it = t[S_IDX];
    const char *ib = mf_tensor_base(it);
    const int64_t T = p->N * p->K;
    int32_t *idx = mf_align64(workspace);
    /* the values CANN would read outside gradExpandedX with, before any write */
    for (int64_t i = 0; i < T; i++) {
        int32_t v;
        if (it->ndim == 1) memcpy(&v, ib + i * it->strides[0] * 4, 4);
        else v = flat_i32(it, ib, i);
        idx[i] = v;
        if (!kept(p, v)) continue;
        if (v < 0 || v >= p->D0) {
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: expandedRowIdx[%lld] = %d is out of range [%s, %lld)", OP,
                           (long long)i, (int)v, p->mode == 1 ? "-1" : "0", (long long)p->D0);
        }
    }
    irg_ctx c = {p, mf_rows_of(t[S_G]), idx, mf_tensor_base(t[S_OUT])};
    const int64_t row_bytes = p->H * (int64_t)p->es * (p->K + 1);
    mf_parallel_for(p->N, irg_tokens, &c, MF_IRG_SERIAL_BYTES / (row_bytes > 0 ? row_bytes : 1) + 1);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeInitRoutingV2Grad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                      aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_INIT_ROUTING_V2_GRAD, OP, workspace, workspaceSize, stream);
}
