/* aclnnop/aclnn_moe_token_permute_with_ep_grad.h - the backward of
 * aclnnMoeTokenPermuteWithEp, CANN's signature. SPEC 9.
 *
 * permutedTokensOutputGrad g (M, H); sortedIndices (T) INT32; R = T / numTopk:
 *   tokenGradOut[r] = sum over k, in k order in fp32, of g[d - start] for
 *                     d = sortedIndices[r*K + k] in [start, end), rounded once
 *   probsGradOut[r][k] = permutedProbsOutputGradOptional[d - start] in the
 *                     range, else 0 (a copy)
 * rangeOptional NULL or empty: aclnnMoeTokenPermuteGrad (d < M kept; the
 * probs input and output ignored).
 *
 * CANN ships it for A2/A3 only; moefr applies that table on every MOEFR_SOC:
 * one float dtype (BFLOAT16, FLOAT16, FLOAT) for g, the probs grads and
 * tokenGradOut; ND; outputs contiguous. Phase 2: a value in the range naming a
 * row past g's (or an element past the probs grad's) is 161002, outputs
 * untouched. */
#ifndef MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_WITH_EP_GRAD_H_
#define MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_WITH_EP_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithEpGradGetWorkspaceSize(
    const aclTensor *permutedTokensOutputGrad, const aclTensor *sortedIndices,
    const aclTensor *permutedProbsOutputGradOptional, int64_t numTopk, const aclIntArray *rangeOptional,
    bool paddedMode, const aclTensor *tokenGradOut, const aclTensor *probsGradOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithEpGrad(void *workspace, uint64_t workspaceSize,
                                                               aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_WITH_EP_GRAD_H_ */
