/* aclnnop/aclnn_moe_token_permute_with_ep.h - the MoE permute with an
 * expert-parallel window over the sorted rows, CANN's signature. SPEC 9.
 *
 * tokens (N, ...) rows of H; indices (N, K) or (N) expert ids; probsOptional
 * the same shape as indices. With T = N*K and perm the stable sort of the
 * flat ids (ascending id, ties by smaller j = r*K + k):
 *   sortedIndicesOut[perm[i]] = i                      (every j)
 *   A = end - start, + T when <= 0, clamped to [0, T]
 *   A == T: permuteTokensOut[i] = tokens[perm[i] / K], i < T
 *   else:   permuteTokensOut[i] = tokens[perm[start + i] / K] for
 *           start + i < T, +0.0 past T; permuteProbsOut likewise with
 *           probs[perm[...]].
 * rangeOptional NULL or empty: aclnnMoeTokenPermute (A from numOutTokens,
 * probs and permuteProbsOut ignored). Pure data movement: bit-exact.
 *
 * CANN ships the operator for A2/A3 only; moefr applies that table on every
 * MOEFR_SOC: tokens = probs = outputs BFLOAT16, FLOAT16 or FLOAT, indices
 * INT32 or INT64, sortedIndicesOut INT32; ND; outputs contiguous. Phase 1:
 * 161001 NULL pointers (permuteProbsOut when probs and a range are given);
 * 161002 dtype, format; 561002 the tiling checks (docs/CANN_COMPAT.md). Phase
 * 2: an id outside [0, 16777215) other than the dtype's minimum or maximum is
 * 161002, outputs untouched. */
#ifndef MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_WITH_EP_H_
#define MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_WITH_EP_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithEpGetWorkspaceSize(
    const aclTensor *tokens, const aclTensor *indices, const aclTensor *probsOptional, const aclIntArray *rangeOptional,
    int64_t numOutTokens, bool paddedMode, const aclTensor *permuteTokensOut, const aclTensor *sortedIndicesOut,
    const aclTensor *permuteProbsOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithEp(void *workspace, uint64_t workspaceSize,
                                                           aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_WITH_EP_H_ */
