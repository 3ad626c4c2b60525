/* aclnnop/aclnn_moe_finalize_routing_v2_grad.h - backward of MoE finalize
 * routing (token unpermute/combine). Semantics: SPEC section 4.
 *
 * R = tokens, H = hidden, K = top-k. For i in [0, R*K): r = i / K, k = i % K,
 * d = expandedRowIdx[i]; d is kept when 0 <= d < D0 (D0 = rows of
 * gradExpandedXOut).
 *   gradExpandedXOut[d][:] = gradY[r][:] * scales[r][k]   (copy without scales)
 *   gradScalesOut[r][k]    = sum_j (expandedX[d][j] + bias[e][j]) * gradY[r][j]
 * with e = expertIdx[r][k]; dropped slots give 0, or bias[e] . gradY[r] when
 * bias is given. dropPadMode 1 takes (E, C, H) tensors and zero-fills the rows
 * of gradExpandedXOut that no kept index names.
 *
 * Phase 1 validates every descriptor and returns the workspace size and an
 * executor; phase 2 validates index and expert values, then computes. On any
 * error both outputs are left untouched and aclGetRecentErrMsg names the
 * parameter and the values seen. */
#ifndef MOEFR_ACLNNOP_MOE_FINALIZE_ROUTING_V2_GRAD_H_
#define MOEFR_ACLNNOP_MOE_FINALIZE_ROUTING_V2_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(
    const aclTensor *gradY, const aclTensor *expandedRowIdx, const aclTensor *expandedXOptional,
    const aclTensor *scalesOptional, const aclTensor *expertIdxOptional,
    const aclTensor *biasOptional, int64_t dropPadMode, int64_t activeNum, int64_t expertNum,
    int64_t expertCapacity, const aclTensor *gradExpandedXOut, const aclTensor *gradScalesOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeFinalizeRoutingV2Grad(void *workspace, uint64_t workspaceSize,
                                                              aclOpExecutor *executor,
                                                              aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_FINALIZE_ROUTING_V2_GRAD_H_ */
