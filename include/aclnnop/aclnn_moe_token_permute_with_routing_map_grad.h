/* aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h - the backward of
 * aclnnMoeTokenPermuteWithRoutingMap (ops-transformer's signature).
 *   dropAndPad false: topK = M / tokensNum (M = permutedTokenOutputGrad dim0);
 *   tokensGradOut[r] = sum over k < topK of grad[sortedIndices[r*topK + k]]
 *   (indices >= M skipped); probsGradOutOptional = zeros with the
 *   expert-major list of permutedProbsOutputGradOptional scattered on the ones
 *   of routingMapOptional.
 *   dropAndPad true: tokensGradOut[t] = sum of grad[i] over sortedIndices[i] =
 *   t (ascending i); probsGradOutOptional[sortedIndices[i]][i / C] =
 *   permutedProbsOutputGradOptional[i], C = M / numExperts, zeros elsewhere.
 * fp32 accumulation in a fixed order, one rounding. Outputs contiguous. */
#ifndef MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_WITH_ROUTING_MAP_GRAD_H_
#define MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_WITH_ROUTING_MAP_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
    const aclTensor *permutedTokenOutputGrad, const aclTensor *permutedProbsOutputGradOptional,
    const aclTensor *sortedIndices, const aclTensor *routingMapOptional, int64_t numExperts, int64_t tokensNum,
    bool dropAndPad, aclTensor *tokensGradOut, aclTensor *probsGradOutOptional, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGrad(void *workspace, uint64_t workspaceSize,
                                                                       aclOpExecutor *executor,
                                                                       const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_WITH_ROUTING_MAP_GRAD_H_ */
