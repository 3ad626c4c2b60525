/* aclnnop/aclnn_moe_token_unpermute_with_ep.h - the MoE unpermute of one
 * expert-parallel window, CANN's signature. SPEC 9.
 *
 * permutedTokens x (M, H) holds the sorted rows [start, end); sortedIndices
 * (T) INT32; probsOptional (R, K) (K = numTopk, R = T / K without probs):
 *   out[r] = sum over k, in k order in fp32, of x[d - start] * probs[r][k]
 *            for d = sortedIndices[r*K + k] in [start, end) and a nonzero
 *            prob; rounded once; +0.0 when no term is kept.
 * rangeOptional NULL or empty: aclnnMoeTokenUnpermute on A2/A3 (numTopk
 * ignored; d >= M drops a slot).
 *
 * CANN ships it for A2/A3 only; moefr applies that table on every MOEFR_SOC:
 * x = out BFLOAT16, FLOAT16 or FLOAT, probs any of the three; ND; out
 * contiguous. Phase 2: a kept value naming a row past x's is 161002, out
 * untouched. */
#ifndef MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_WITH_EP_H_
#define MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_WITH_EP_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize(
    const aclTensor *permutedTokens, const aclTensor *sortedIndices, const aclTensor *probsOptional, int64_t numTopk,
    const aclIntArray *rangeOptional, bool paddedMode, const aclIntArray *restoreShapeOptional, const aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithEp(void *workspace, uint64_t workspaceSize,
                                                             aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_TOKEN_UNPERMUTE_WITH_EP_H_ */
