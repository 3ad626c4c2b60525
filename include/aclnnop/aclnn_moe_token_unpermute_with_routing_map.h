/* aclnnop/aclnn_moe_token_unpermute_with_routing_map.h - ops-transformer's
 * aclnnMoeTokenUnpermuteWithRoutingMap.
 *   paddedMode false: N = probs dim0 (or restoreShape[0]), topK = M / N (M =
 *   permutedTokens dim0); unpermutedTokens[r] = sum over k < topK of
 *   permutedTokens[d] * p, d = sortedIndices[r*topK + k], p = the (r*topK +
 *   k)-th one of routingMap in row-major order's prob (1 without probs);
 *   terms with d >= M or p == 0 skipped; fp32, one rounding.
 *   permuteProbs = those probs (row-major). outIndex, permuteTokenId untouched.
 *   paddedMode true: permuteTokenId = sortedIndices sorted ascending (stable),
 *   outIndex = the positions; with probs permuteProbs[i] =
 *   probs[sortedIndices[i]][i / C] (C = len / E) and each row rounded to the
 *   dtype after the product; unpermutedTokens[t] = sum over sortedIndices[i] = t
 *   (ascending i), fp32, one rounding, zeros where no i. */
#ifndef MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_H_
#define MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(
    const aclTensor *permutedTokens, const aclTensor *sortedIndices, const aclTensor *routingMapOptional,
    const aclTensor *probsOptional, bool paddedMode, const aclIntArray *restoreShapeOptional,
    aclTensor *unpermutedTokens, aclTensor *outIndex, aclTensor *permuteTokenId, aclTensor *permuteProbs,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMap(void *workspace, uint64_t workspaceSize,
                                                                     aclOpExecutor *executor,
                                                                     const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_H_ */
