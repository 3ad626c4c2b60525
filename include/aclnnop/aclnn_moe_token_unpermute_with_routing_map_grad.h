/* aclnnop/aclnn_moe_token_unpermute_with_routing_map_grad.h - the backward of
 * aclnnMoeTokenUnpermuteWithRoutingMap (ops-transformer's signature).
 *   Without probs: permutedTokensGradOut[outIndex[i]] = g[i / topK] (paddedMode
 *   false, topK = len / N) or g[permuteTokenId[i]] (true); rows no index
 *   names stay untouched.
 *   With probs: paddedMode false: token r's k-th routed expert e (row-major),
 *   d = outIndex[r*topK + k]: permutedTokensGradOut[d] = g[r] * probs[r][e],
 *   probsGradOutOptional[r][e] = sum_h permutedTokens[d][h] * g[r][h], zeros
 *   elsewhere; paddedMode true: t = permuteTokenId[i], d = outIndex[i], e =
 *   d / C (C = len / E): the same with g[t] and probs[t][e].
 * fp32 products, the dot in double, one rounding. Outputs contiguous. */
#ifndef MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_GRAD_H_
#define MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(
    const aclTensor *unpermutedTokensGrad, const aclTensor *outIndex, const aclTensor *permuteTokenId,
    const aclTensor *routingMapOptional, const aclTensor *permutedTokensOptional, const aclTensor *probsOptional,
    bool dropAndPad, const aclIntArray *restoreShapeOptional, const aclTensor *permutedTokensGradOut,
    const aclTensor *probsGradOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMapGrad(void *workspace, uint64_t workspaceSize,
                                                                         aclOpExecutor *executor,
                                                                         aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_GRAD_H_ */
