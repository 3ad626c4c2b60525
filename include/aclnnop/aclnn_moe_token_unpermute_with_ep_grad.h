/* aclnnop/aclnn_moe_token_unpermute_with_ep_grad.h - the backward of
 * aclnnMoeTokenUnpermuteWithEp, CANN's signature. SPEC 9.
 *
 * unpermutedTokensGrad g (R, H); sortedIndices (T = R*K) INT32;
 * permutedTokensOptional x (M, H); probsOptional (R, K). The range is
 * normalised as CANN's tiling does (a negative bound + T, clamped to [0, T],
 * end < start refused; NULL or empty: [0, T)); d = sortedIndices[r*K + k] is
 * kept when start <= d < end and, for start == 0, d < M (T without x):
 *   permutedTokensGradOut[d - start] = round(g[r] * probs[r][k])  (g[r] without probs)
 *   probsGradOut[r][k] = sum_h x[d - start][h] * g[r][h], 0 when not kept
 * rows no kept entry names: +0.0 (the NPU leaves them).
 *
 * CANN ships it for A2/A3 only; moefr applies that table on every MOEFR_SOC:
 * g = x = permutedTokensGradOut BFLOAT16, FLOAT16 or FLOAT, probs =
 * probsGradOut any of the three; ND; outputs contiguous. Phase 2: a kept value
 * naming a row past permutedTokensGradOut's is 161002, outputs untouched. */
#ifndef MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_WITH_EP_GRAD_H_
#define MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_WITH_EP_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize(
    const aclTensor *unpermutedTokensGrad, const aclTensor *sortedIndices, const aclTensor *permutedTokensOptional,
    const aclTensor *probsOptional, bool paddedMode, const aclIntArray *restoreShapeOptional,
    const aclIntArray *rangeOptional, int64_t topkNum, const aclTensor *permutedTokensGradOut,
    const aclTensor *probsGradOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithEpGrad(void *workspace, uint64_t workspaceSize,
                                                                 aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_WITH_EP_GRAD_H_ */
