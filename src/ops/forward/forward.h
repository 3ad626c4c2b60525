/* forward.h - the plan phase 1 of aclnnMoeFinalizeRoutingV2 leaves in its
 * executor, and the phase-2 entry point. */
#ifndef MOEFR_OPS_FORWARD_FORWARD_H_
#define MOEFR_OPS_FORWARD_FORWARD_H_

#include "ops/common.h"

typedef struct fwd_plan {
    int mode;                 /* dropPadMode 0..3: bit 0 drop-pad, modes 2/3 row-laid index */
    bool row_laid, drop_pad;
    bool has_x1, has_x2, has_bias, has_scales;
    int64_t R, K, H, N;       /* N = R*K entries of expandedRowIdx */
    int64_t idx_hi;           /* index values must be < idx_hi (N, or E*C in drop-pad) */
    int64_t bits;             /* bitmap size for the repeat check */
    int64_t E;                /* bias rows */
    int dtype;                /* the data dtype (expandedX = x1 = x2 = bias = out) */
    mf_dt dt;
    size_t es;
    mf_rows x, x1, x2, bias;  /* inputs with rows of H elements */
    bool pack_x, pack_x1, pack_x2, pack_bias;
    mf_small idx, scales, eidx;
    char *out;                /* contiguous (R, H) */
    /* workspace layout, offsets from the 64-byte-aligned start */
    uint64_t ws_bitmap, ws_x, ws_x1, ws_x2, ws_bias, ws_bytes;
} fwd_plan;

aclnnStatus mf_fwd_run(const void *plan, void *workspace);

#endif /* MOEFR_OPS_FORWARD_FORWARD_H_ */
