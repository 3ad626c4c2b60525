/* aclnnop/aclnn_moe_token_permute_with_routing_map.h - ops-transformer's
 * aclnnMoeTokenPermuteWithRoutingMap (A2/A3 operator; moefr serves it on every
 * product). routingMap (N, E) BOOL or INT8 of 0/1 says which experts take
 * each token; probsOptional (N, E) the weights.
 *   dropAndPad false: topK = numOutTokens / N; the T = N*topK ones listed
 *   expert-major (expert ascending, token ascending) give the output rows;
 *   sortedIndicesOut[q] = output row of the q-th one in row-major order,
 *   permuteTokensOut[sortedIndicesOut[q]] = tokens[q / topK],
 *   permuteProbsOutOptional[i] = probs of the i-th expert-major one.
 *   dropAndPad true: C = numOutTokens / E; for each expert e the tokens with
 *   a one (ascending) then the others (ascending), the first C kept:
 *   sortedIndicesOut[e*C + c] = that token, permuteTokensOut[i] =
 *   tokens[sortedIndicesOut[i]], permuteProbsOutOptional[e*C + c] =
 *   probs[sortedIndicesOut[e*C + c]][e].
 * Pure data movement (bit-exact). Phase 1: 161001 / 161002 / 561002 as CANN
 * (docs/CANN_COMPAT.md); phase 2: a map value other than 0/1, or (dropless) a
 * count of ones other than N*topK, is 161002 with outputs untouched. */
#ifndef MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_WITH_ROUTING_MAP_H_
#define MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_WITH_ROUTING_MAP_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
    const aclTensor *tokens, const aclTensor *routingMap, const aclTensor *probsOptional, int64_t numOutTokens,
    bool dropAndPad, aclTensor *permuteTokensOut, aclTensor *permuteProbsOutOptional, aclTensor *sortedIndicesOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMap(void *workspace, uint64_t workspaceSize,
                                                                   aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_WITH_ROUTING_MAP_H_ */
