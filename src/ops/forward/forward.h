/* forward.h - the plan phase 1 of the forward leaves in its executor, the
 * part of phase 1 its front ends share, and the phase-2 entry point. Two
 * front ends: aclnnMoeFinalizeRoutingV2 (plan.c) and aclnnMoeFinalizeRouting,
 * the first version (finalize_routing.c): each has its own definition table
 * and tiling checks, then hands its tensors by role to mf_fwd_publish. */
#ifndef MOEFR_OPS_FORWARD_FORWARD_H_
#define MOEFR_OPS_FORWARD_FORWARD_H_

#include "ops/common.h"
#include "ops/opdef.h"

/* The forward's tensor roles; aclnnMoeFinalizeRoutingV2's signature order.
 * A front end's executor keeps its own signature order: fwd_plan.at maps. */
enum { F_X, F_IDX, F_X1, F_X2, F_BIAS, F_SCALES, F_EIDX, F_OUT, F_NT };

/* What phase 1 decided; phase 2 binds it to the executor's tensors. */
typedef struct fwd_plan {
    const mf_op_def *def;     /* the front end: operator name, parameter names */
    int8_t at[F_NT];          /* executor slot of each role (-1: none) */
    bool empty;               /* out is empty: phase 2 does nothing */
    int mode;                 /* dropPadMode 0..3: bit 0 drop-pad, modes 2/3 row-laid index */
    bool row_laid, drop_pad;
    bool has_x1, has_x2, has_bias, has_scales, has_eidx;
    bool strict;              /* MOEFR_STRICT=1 at phase 1 */
    bool drop_high;           /* modes 0/2, Ascend 950 rules: values >= D0 are dropped slots */
    bool skip_zero;           /* a slot whose scale is +-0.0 is absent (TokenUnpermute on A2/A3) */
    bool ranged;              /* EP (TokenUnpermuteWithEp): a value d in [lo, hi) names row d - lo, others drop */
    int64_t lo, hi;
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

/* Position in expandedRowIdx of token r's slot k: r*K + k in the row-laid
 * modes 2/3, k*R + r (column layout) in modes 0/1. */
static inline int64_t mf_fwd_slot_pos(const fwd_plan *p, int64_t r, int64_t k) {
    return p->row_laid ? r * p->K + k : k * p->R + r;
}

/* The expandedX row value d names, or -1 for a dropped slot (ranged plans;
 * otherwise d itself). */
static inline int64_t mf_fwd_row_of(const fwd_plan *p, int32_t d) {
    if (!p->ranged) return d;
    return d >= p->lo && d < p->hi ? d - p->lo : -1;
}

/* FinalizeRoutingV2's tiling checks (CANN's order, 561002) over a front
 * end's tensors t, roles mapped by at, messages naming def's operator and
 * parameters; fills R, K, H, N, D0 and E of p. */
aclnnStatus mf_fwd_check_shapes(const mf_op_def *def, const int8_t *at, const aclTensor *const *t, int64_t mode,
                                fwd_plan *p);
/* Phase 1 after a front end's own checks. t: the front end's tensors in its
 * signature order (def->names); at: the slot of each role; p: R, K, H, N,
 * D0 and E from the front end's shape checks, skip_zero as the front end
 * wants it, the rest zero. Decides the plan (mode, drop rule, packing), lays
 * out the workspace and publishes. */
aclnnStatus mf_fwd_publish(const mf_op_def *def, const int8_t *at, const aclTensor *const *t, int64_t mode,
                           bool drop_high, fwd_plan *p, uint64_t *workspaceSize, aclOpExecutor **executor);
/* The empty problem (out has no elements): success with workspace 0. */
aclnnStatus mf_fwd_publish_empty(const mf_op_def *def, const int8_t *at, const aclTensor *const *t,
                                 uint64_t *workspaceSize, aclOpExecutor **executor);

aclnnStatus mf_fwd_run(const void *plan, const aclTensor *const *t, void *workspace);

#endif /* MOEFR_OPS_FORWARD_FORWARD_H_ */
