/* aclnnop/aclnn_moe_finalize_routing_v2.h - MoE finalize routing (token
 * unpermute/combine), the forward of aclnnMoeFinalizeRoutingV2Grad.
 * Semantics: SPEC section 8.
 *
 *   out[r][j] = x1[r][j] + x2[r][j]
 *             + sum_k scales[r][k] * (expandedX[d][j] + bias[e][j])
 * with e = expertIdx[r][k], d = expandedRowIdx[k*R + r] for dropPadMode 0/1
 * (column layout) or expandedRowIdx[r*K + k] for 2/3 (row layout). Modes 1/3
 * take expandedX as (E, C, H); d = -1 contributes scales*bias only. Summed in
 * fp64 with k in order, rounded once to out's dtype.
 *
 * Phase 1 validates descriptors (161001 NULL, 161002 dtype/format, 561103
 * shapes/mode/missing companions); phase 2 validates index and expert values
 * (161002) and leaves `out` untouched on error. */
#ifndef MOEFR_ACLNNOP_MOE_FINALIZE_ROUTING_V2_H_
#define MOEFR_ACLNNOP_MOE_FINALIZE_ROUTING_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeFinalizeRoutingV2GetWorkspaceSize(
    const aclTensor *expandedX, const aclTensor *expandedRowIdx, const aclTensor *x1Optional,
    const aclTensor *x2Optional, const aclTensor *biasOptional, const aclTensor *scalesOptional,
    const aclTensor *expertIdxOptional, int64_t dropPadMode, const aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeFinalizeRoutingV2(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_FINALIZE_ROUTING_V2_H_ */
