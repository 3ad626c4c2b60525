/* grad.h - the plan phase 1 of aclnnMoeFinalizeRoutingV2Grad leaves in its
 * executor, and the phase-2 entry point. */
#ifndef MOEFR_OPS_GRAD_GRAD_H_
#define MOEFR_OPS_GRAD_GRAD_H_

#include "ops/common.h"

/* Rows at most this many bytes wide are computed in row order when the
 * problem is larger than the caches (random rows that small cost more to
 * write than to read on every machine measured; docs/DESIGN.md). */
#define MF_BY_ROW_MAX_BYTES 2048

/* The backward's tensor roles; aclnnMoeFinalizeRoutingV2Grad's signature
 * order. A front end's executor keeps its own order: grad_plan.at maps. */
enum { G_GY, G_IDX, G_X, G_SCALES, G_EIDX, G_BIAS, G_GX, G_GS, G_NT };

/* What phase 1 decided; phase 2 binds it to the executor's tensors. */
typedef struct grad_plan {
    bool empty;                 /* every output is empty: phase 2 does nothing */
    int8_t at[G_NT];            /* executor slot of each role (-1: none) */
    const char *op, *idx_name, *x_name; /* for phase-2 messages: the operator and its parameter names */
    int mode;                   /* dropPadMode: 0 dropless, 1 drop-pad */
    bool has_scales, has_bias;  /* bias counts only with scales (CANN ignores it otherwise) */
    bool strict;                /* MOEFR_STRICT=1 at phase 1: the documented index checks */
    bool neg_error;             /* a negative index is 161002, not a dropped slot (TokenUnpermuteGrad, A2/A3) */
    bool ranged;                /* EP (TokenUnpermuteWithEpGrad): d in [lo, hi) names row d - lo, others drop */
    int64_t lo, hi;
    int64_t R, K, H, N;         /* N = R*K entries of expandedRowIdx */
    int64_t D0;                 /* rows of gradExpandedXOut; kept d is in [0, D0) */
    int64_t rows;               /* min(D0, 2^31): the rows an int32 index can name */
    int64_t strict_hi;          /* strict: values must lie in [-1, strict_hi) ... */
    bool strict_no_neg;         /* ... or [0, strict_hi) (TokenUnpermuteGrad: its docs' range) */
    int64_t E;                  /* bias rows */
    int dtype;                  /* gradY's aclDataType */
    mf_dt dt;
    size_t es;
    int gs_dtype;
    bool pack_gy, pack_x, pack_bias;
    /* Narrow rows: phase 2 walks gradExpandedX in row order (run.c). */
    bool by_row;
    /* workspace layout, offsets from the 64-byte-aligned start: the owner of
     * each row (int32), the strict-mode bitmap, packed strided inputs */
    uint64_t ws_owner, ws_bitmap, ws_gy, ws_x, ws_bias, ws_bytes;
} grad_plan;

aclnnStatus mf_grad_run(const void *plan, const aclTensor *const *t, void *workspace);

/* Phase 1 in parts, for the operators CANN runs as FinalizeRoutingV2Grad
 * (TokenUnpermuteGrad): the tiling checks over the front end's tensors t
 * (its signature order; at maps roles to slots) naming def's operator and
 * parameters (fills R, K, H, N, D0, E); and the rest of phase 1 once mode,
 * has_scales, has_bias, neg_error are set in *p (unused: bits of slots). */
struct mf_op_def;
aclnnStatus mf_grad_check_shapes(const struct mf_op_def *def, const int8_t *at, const aclTensor *const *t,
                                 int64_t mode, int64_t active, int64_t en, int64_t ec, grad_plan *p);
aclnnStatus mf_grad_finish(const struct mf_op_def *def, const int8_t *at, const aclTensor *const *t, grad_plan *p,
                           unsigned unused, uint64_t *workspaceSize, aclOpExecutor **executor);

#endif /* MOEFR_OPS_GRAD_GRAD_H_ */
