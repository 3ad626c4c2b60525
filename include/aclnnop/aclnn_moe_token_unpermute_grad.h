/* aclnnop/aclnn_moe_token_unpermute_grad.h - the backward of
 * aclnnMoeTokenUnpermute, CANN 8.1.RC1's signature. SPEC 9.
 *
 * With g = unpermutedTokensGrad (R, H), x = permutedTokens (M, H), K = probs
 * dim1 (1 without probs) and d = sortedIndices[r*K + k]:
 *   permutedTokensGradOut[d] = g[r] * probs[r][k] (g[r] without probs),
 *     rounded once, for d < M; rows no index names are +0.0;
 *   probsGradOut[r][k] = sum over h of x[d][h] * g[r][h] (0 when d >= M),
 *     written only when probs is given.
 * The aclnnMoeFinalizeRoutingV2Grad mode-0 arithmetic with activeNum = M
 * (CANN's own translation on Ascend 950); bit-identical on every path and
 * thread count. Two indices naming one row: the later one's value.
 *
 * paddedMode must be false; restoreShapeOptional is not read. Dtypes: x = g
 * = permutedTokensGradOut FLOAT16, BFLOAT16 or FLOAT; probs = probsGradOut
 * any of the three (A2/A3: the table of CANN's def, docs/CANN_COMPAT.md);
 * sortedIndices INT32; ND; outputs contiguous. Phase 1: 161001 NULL pointers;
 * 161002 dtype/format (and paddedMode on Ascend 950); 561002 the tiling
 * checks; all outputs empty: success. Phase 2: an index CANN would read or
 * write out of bounds with is 161002, outputs untouched. MOEFR_STRICT=1 adds
 * the docs' rule before any write: values in [0, R*K), none twice (values in
 * [M, R*K) stay dropped); 161002, outputs untouched (the same rule as
 * TokenPermuteGrad's, docs/CANN_COMPAT.md). */
#ifndef MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_GRAD_H_
#define MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteGradGetWorkspaceSize(
    const aclTensor *permutedTokens, const aclTensor *unpermutedTokensGrad, const aclTensor *sortedIndices,
    const aclTensor *probsOptional, bool paddedMode, const aclIntArray *restoreShapeOptional,
    const aclTensor *permutedTokensGradOut, const aclTensor *probsGradOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteGrad(void *workspace, uint64_t workspaceSize,
                                                           aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_GRAD_H_ */
