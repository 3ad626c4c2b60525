/* grad.h - the plan phase 1 of aclnnMoeFinalizeRoutingV2Grad leaves in its
 * executor, and the phase-2 entry point. */
#ifndef MOEFR_OPS_GRAD_GRAD_H_
#define MOEFR_OPS_GRAD_GRAD_H_

#include "ops/common.h"

/* Rows at most this many bytes wide are computed in row order when the
 * problem is larger than the caches (random rows that small cost more to
 * write than to read on every machine measured; docs/DESIGN.md). */
#define MF_BY_ROW_MAX_BYTES 2048

typedef struct grad_plan {
    int mode;                   /* dropPadMode: 0 dropless, 1 drop-pad */
    bool has_scales, has_x, has_bias;
    int64_t R, K, H, N;         /* N = R*K entries of expandedRowIdx */
    int64_t D0;                 /* rows of gradExpandedXOut; kept d is in [0, D0) */
    int64_t idx_hi;             /* index values must be < idx_hi (N or E*C) */
    int64_t bits;               /* bitmap size: min(idx_hi, 2^31), int32 reach */
    int64_t E;                  /* bias rows */
    int dtype;                  /* gradY's aclDataType */
    mf_dt dt;
    size_t es;
    mf_rows gy, x, bias;        /* inputs with rows of H elements */
    bool pack_gy, pack_x, pack_bias;
    mf_small idx, scales, eidx; /* small inputs read element by element */
    char *gx;                   /* gradExpandedXOut, contiguous (D0, H) */
    char *gs;                   /* gradScalesOut, contiguous (R, K) */
    int gs_dtype;
    /* Narrow rows: phase 2 walks gradExpandedX in row order (run.c), which
     * needs the index's inverse in the workspace, one int32 per row. */
    bool by_row;
    /* workspace layout, offsets from the 64-byte-aligned start */
    uint64_t ws_bitmap, ws_inv, ws_gy, ws_x, ws_bias, ws_bytes;
} grad_plan;

aclnnStatus mf_grad_run(const void *plan, void *workspace);

#endif /* MOEFR_OPS_GRAD_GRAD_H_ */
