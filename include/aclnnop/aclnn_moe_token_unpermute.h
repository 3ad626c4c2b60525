/* aclnnop/aclnn_moe_token_unpermute.h - the Megatron-style MoE unpermute
 * (combine), CANN 8.1.RC1's signature. SPEC 9.
 *
 *   out[r] = sum over k < K of probs[r][k] * permutedTokens[d],
 *   d = sortedIndices[r*K + k], over d < M (M = permutedTokens dim0);
 * K = probs dim1, or 1 without probs (then the term is the row itself).
 * Arithmetic: the aclnnMoeFinalizeRoutingV2 mode-2 arithmetic (fp64 sum in k
 * order, one rounding to out's dtype; no term gives +0.0). A2/A3
 * (MOEFR_SOC=ascend910b): a term whose prob is +-0.0 is absent, as CANN's
 * A2/A3 kernel skips it; Ascend 950 (FinalizeRoutingV2) adds it.
 *
 * paddedMode must be false; restoreShapeOptional is not read. Dtypes:
 * permutedTokens = out FLOAT16, BFLOAT16 or FLOAT, probs any of the three,
 * sortedIndices INT32; ND; out contiguous. Phase 1: 161001 NULL pointers;
 * 161002 dtype/format (and paddedMode on Ascend 950); 561002 the tiling checks
 * (docs/CANN_COMPAT.md); out empty: success. Phase 2: a negative index is
 * 161002, out untouched. MOEFR_STRICT=1 adds the docs' rule before any write:
 * values in [0, T) (T = R*K), none twice; values in [M, T) stay dropped terms
 * (the tokens numOutTokens cut); 161002, out untouched (the same rule as
 * TokenPermuteGrad's and InitRoutingV2Grad's, docs/CANN_COMPAT.md). */
#ifndef MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_H_
#define MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteGetWorkspaceSize(
    const aclTensor *permutedTokens, const aclTensor *sortedIndices, const aclTensor *probsOptional, bool paddedMode,
    const aclIntArray *restoreShapeOptional, const aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermute(void *workspace, uint64_t workspaceSize,
                                                       aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_H_ */
