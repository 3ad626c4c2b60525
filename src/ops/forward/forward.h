/* forward.h - the plan phase 1 of aclnnMoeFinalizeRoutingV2 leaves in its
 * executor, and the phase-2 entry point. */
#ifndef MOEFR_OPS_FORWARD_FORWARD_H_
#define MOEFR_OPS_FORWARD_FORWARD_H_

#include "ops/common.h"

/* Signature slots (inputs, then the output) of the executor's tensors. */
enum { F_X, F_IDX, F_X1, F_X2, F_BIAS, F_SCALES, F_EIDX, F_OUT, F_NT };

/* What phase 1 decided; phase 2 binds it to the executor's tensors. */
typedef struct fwd_plan {
    bool empty;
    const char *op, *idx_name, *x_name; /* for phase-2 messages: the operator and its parameter names */               /* out is empty: phase 2 does nothing */
    int mode;                 /* dropPadMode 0..3: bit 0 drop-pad, modes 2/3 row-laid index */
    bool row_laid, drop_pad;
    bool has_x1, has_x2, has_bias, has_scales, has_eidx;
    bool strict;              /* MOEFR_STRICT=1 at phase 1 */
    bool drop_high;           /* modes 0/2, Ascend 950 rules: values >= D0 are dropped slots */
    bool skip_zero;           /* a slot whose scale is +-0.0 is absent (TokenUnpermute on A2/A3) */
    int64_t R, K, H, N;       /* N = R*K entries of expandedRowIdx that are read */
    int64_t D0;               /* rows of expandedX: dim0, or E*C in drop-pad modes */
    int64_t E;                /* bias rows */
    int dtype;                /* the data dtype (expandedX = x1 = x2 = bias = out) */
    mf_dt dt;
    size_t es;
    bool pack_x, pack_x1, pack_x2, pack_bias;
    /* workspace layout, offsets from the 64-byte-aligned start */
    uint64_t ws_bitmap, ws_x, ws_x1, ws_x2, ws_bias, ws_bytes;
} fwd_plan;

aclnnStatus mf_fwd_run(const void *plan, const aclTensor *const *t, void *workspace);

/* Phase 1 in parts, for the operators CANN runs as FinalizeRoutingV2
 * (TokenUnpermute): the tiling checks over t[F_NT] naming def's operator
 * and parameters (fills R, K, H, N, D0, E); and the rest of phase 1 once
 * mode, drop_pad, row_laid, drop_high and skip_zero are set in *p: the
 * packing decisions, the workspace, the executor (of def's kind). */
struct mf_op_def;
aclnnStatus mf_fwd_check_shapes(const struct mf_op_def *def, const aclTensor *const *t, int64_t mode, fwd_plan *p);
aclnnStatus mf_fwd_finish(const struct mf_op_def *def, const aclTensor *const *t, fwd_plan *p,
                          uint64_t *workspaceSize, aclOpExecutor **executor);

#endif /* MOEFR_OPS_FORWARD_FORWARD_H_ */
