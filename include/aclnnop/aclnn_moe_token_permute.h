/* aclnnop/aclnn_moe_token_permute.h - the Megatron-style MoE permute, CANN
 * 8.1.RC1's signature. SPEC 9.
 *
 * tokens (N, ...) rows of H = product of the dims after the first; indices
 * (N, K) or (N) with K = 1 are expert ids. With T = N*K and perm the stable
 * sort of the flat ids j = r*K + k (ascending id, ties by smaller j):
 *   sortedIndicesOut[perm[i]] = i            (every j, a full permutation)
 *   permuteTokensOut[i] = tokens[perm[i] / K] for i < A,
 * A = numOutTokens, or numOutTokens + T when numOutTokens <= 0, clamped to
 * [0, T]. Pure data movement: bit-exact.
 *
 * paddedMode must be false. Dtypes (Ascend 950, which CANN runs as
 * aclnnMoeInitRoutingV2): tokens FLOAT16, BFLOAT16 or FLOAT, indices INT32 or
 * INT64; A2/A3 (MOEFR_SOC=ascend910b): tokens also INT8. sortedIndicesOut
 * INT32; ND; outputs contiguous. Phase 1: 161001 NULL pointers; 161002 dtype,
 * format (and paddedMode on Ascend 950); 561002 the tiling checks
 * (docs/CANN_COMPAT.md); all outputs empty: success, workspace 0. Phase 2: an
 * id outside the range the product sorts (Ascend 950 [0, 2^31); A2/A3
 * [0, 16777215) plus the dtype's minimum and maximum) is 161002, outputs
 * untouched. */
#ifndef MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_H_
#define MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteGetWorkspaceSize(const aclTensor *tokens, const aclTensor *indices,
                                                                     int64_t numOutTokens, bool paddedMode,
                                                                     const aclTensor *permuteTokensOut,
                                                                     const aclTensor *sortedIndicesOut,
                                                                     uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermute(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                     aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_H_ */
