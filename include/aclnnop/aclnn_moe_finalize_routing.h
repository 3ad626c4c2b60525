/* aclnnop/aclnn_moe_finalize_routing.h - MoE finalize routing, the first
 * version (token unpermute/combine after aclnnMoeInitRouting), CANN
 * 8.1.RC1's signature. SPEC 9.
 *
 *   out[r][j] = x1[r][j] + x2[r][j]
 *             + sum_k scales[r][k] * (expandedX[d][j] + bias[e][j])
 *
 * with d = expandedRowIdx[k*R + r] (column layout) and e =
 * expandedExpertIdx[r][k]: aclnnMoeFinalizeRoutingV2 with dropPadMode 0, with
 * x1, bias and scales required and x2Optional optional; the same arithmetic
 * and the same bits (fp64 sum in k order after x1 + x2, one rounding).
 *
 * Shapes: x1 (R, H) fixes R and H; x2Optional and out (R, H); scales and
 * expandedExpertIdx (R, K) with K > 0; bias (E, H) with E > 0; expandedX
 * (D0, H) and expandedRowIdx (D0) with D0 >= R*K (CANN checks only that the
 * two agree; fewer would be read out of bounds). Every d must lie in
 * [0, D0) and every e in [0, E) (CANN reads out of bounds otherwise):
 * ACLNN_ERR_PARAM_INVALID (161002) in phase 2 with out untouched.
 * MOEFR_STRICT=1 adds CANN's documented rule: no d twice, d < R*K.
 *
 * Dtypes (Ascend A2/A3 only in CANN; the same table under every
 * MOEFR_SOC): expandedX, x1, x2Optional, bias, scales and out share FLOAT16,
 * FLOAT or BFLOAT16; expandedRowIdx and expandedExpertIdx INT32; ND; out
 * contiguous; inputs may be strided views. Phase 1: 161001 a NULL required
 * tensor, workspaceSize or executor; 161002 dtype/format; 561002 CANN's
 * tiling checks (docs/CANN_COMPAT.md). out empty: success with workspace 0. */
#ifndef MOEFR_ACLNNOP_MOE_FINALIZE_ROUTING_H_
#define MOEFR_ACLNNOP_MOE_FINALIZE_ROUTING_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeFinalizeRoutingGetWorkspaceSize(
    const aclTensor *expandedX, const aclTensor *x1, const aclTensor *x2Optional, const aclTensor *bias,
    const aclTensor *scales, const aclTensor *expandedRowIdx, const aclTensor *expandedExpertIdx, const aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeFinalizeRouting(void *workspace, uint64_t workspaceSize,
                                                        aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_FINALIZE_ROUTING_H_ */
