/* init_routing_quant.c - aclnnMoeInitRoutingQuant, both phases: the routing
 * of aclnnMoeInitRouting (init_routing.c, the same checks in the same
 * order: moe_init_routing_quant_tiling.cpp is moe_init_routing_tiling.cpp
 * plus the two float attributes) with the gathered rows quantised to int8
 * (quant_int8.c, static mode). */
#include "aclnnop/aclnn_moe_init_routing_quant.h"
#include "ops/opdef.h"
#include "ops/routing/quant_int8.h"
#include "ops/routing/routing.h"

static const char OP[] = "aclnnMoeInitRoutingQuant";
#define TRY MF_TRY

static const char *const NAMES[MF_IR1_NT] = {"x",           "rowIdx",           "expertIdx",
                                             "expandedXOut", "expandedRowIdxOut", "expandedExpertIdxOut"};
static const unsigned FLAGS[MF_IR1_NT] = {MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED, MF_T_REQUIRED | MF_T_CONTIG,
                                          MF_T_REQUIRED | MF_T_CONTIG, MF_T_REQUIRED | MF_T_CONTIG};
/* moe_init_routing_quant_def.cpp: (x, row_idx, expert_idx | expanded_x INT8,
 * expanded_row_idx, expanded_expert_idx); ascend910b and ascend910_93 only,
 * so the same table serves both rule sets. */
#define I32 ACL_INT32
#define COL(T) {T, I32, I32, ACL_INT8, I32, I32}
static const mf_dtcol COLS[] = {COL(ACL_FLOAT16), COL(ACL_BF16), COL(ACL_FLOAT)};
#undef COL
static const mf_op_def DEF = {OP, MF_OP_INIT_ROUTING_QUANT, 3, 3, NAMES, FLAGS, COLS, 3, COLS, 3};

typedef struct irq_plan {
    mf_ir1_plan r;
    mf_q8 q;
} irq_plan;

static aclnnStatus irq_run(const void *plan, const aclTensor *const *t, void *workspace);

aclnnStatus aclnnMoeInitRoutingQuantGetWorkspaceSize(const aclTensor *x, const aclTensor *rowIdx,
                                                     const aclTensor *expertIdx, int64_t activeNum, double scale,
                                                     double offset, const aclTensor *expandedXOut,
                                                     const aclTensor *expandedRowIdxOut,
                                                     const aclTensor *expandedExpertIdxOut, uint64_t *workspaceSize,
                                                     aclOpExecutor **executor) {
    const aclTensor *t[MF_IR1_NT] = {x, rowIdx, expertIdx, expandedXOut, expandedRowIdxOut, expandedExpertIdxOut};
    TRY(mf_op_check(&DEF, t, workspaceSize, executor));
    irq_plan pl;
    memset(&pl, 0, sizeof pl);
    if (mf_op_outputs_empty(&DEF, t)) { /* CANN's engine: nothing to do, no tiling */
        pl.r.empty = true;
        return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, irq_run, 0, workspaceSize, executor);
    }
    TRY(mf_ir1_check_shapes(&DEF, t, activeNum, &pl.r));
    pl.r.es = mf_dtype_size(x->dtype);
    /* the attributes are float in CANN's IR; the kernel takes them to fp16 */
    pl.q.mode = 0;
    pl.q.hs = mf_f32_to_f16((float)scale);
    pl.q.ho = mf_f32_to_f16((float)offset);
    return mf_op_publish(&DEF, t, 0, &pl, sizeof pl, irq_run, mf_ir1_layout(&pl.r), workspaceSize, executor);
}

typedef struct qg_ctx {
    const mf_q8 *q;
    mf_rows x;
    int xdtype;
    int64_t H;
    const int32_t *src;
    int8_t *out;
} qg_ctx;

static void qg_rows(void *vctx, int64_t i0, int64_t i1) {
    const qg_ctx *c = vctx;
    for (int64_t i = i0; i < i1; i++)
        mf_quant_int8_row(c->q, mf_row(&c->x, c->src[i]), c->x.s_col, c->xdtype, NULL, 0, c->H, c->out + i * c->H,
                          i + 1 < i1 ? mf_row(&c->x, c->src[i + 1]) : NULL);
}

static aclnnStatus irq_run(const void *plan, const aclTensor *const *t, void *workspace) {
    const irq_plan *p = plan;
    if (p->r.empty) return ACLNN_SUCCESS;
    TRY(mf_isa_check(OP));
    const int32_t *src = NULL;
    TRY(mf_ir1_route(OP, &p->r, t, mf_align64(workspace), &src));
    if (p->r.H <= 0 || p->r.A <= 0) return ACLNN_SUCCESS;
    qg_ctx c = {&p->q, mf_rows_of(t[MF_IR1_X]), t[MF_IR1_X]->dtype, p->r.H, src,
                (int8_t *)mf_tensor_base(t[MF_IR1_EX])};
    mf_parallel_for(p->r.A, qg_rows, &c, 16384 / p->r.H + 1);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnMoeInitRoutingQuant(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                     aclrtStream stream) {
    return mf_executor_execute(executor, MF_OP_INIT_ROUTING_QUANT, OP, workspace, workspaceSize, stream);
}

/* ---- registry entry (opdef.h) ---- */
static const mf_attr_desc ATTRS[] = {{"activeNum", MF_ATTR_INT64, 0, 64},
                                     {"scale", MF_ATTR_DOUBLE, -4, 4},
                                     {"offset", MF_ATTR_DOUBLE, -4, 4}};
static aclnnStatus gws_thunk(const aclTensor *const *t, const mf_attr_val *a, uint64_t *ws, aclOpExecutor **e) {
    return aclnnMoeInitRoutingQuantGetWorkspaceSize(t[0], t[1], t[2], a[0].i, a[1].d, a[2].d, t[3], t[4], t[5], ws,
                                                    e);
}
const mf_op_entry mf_entry_init_routing_quant = {&DEF, ATTRS, 3, gws_thunk, aclnnMoeInitRoutingQuant};
