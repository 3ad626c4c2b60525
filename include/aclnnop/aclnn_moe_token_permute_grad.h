/* aclnnop/aclnn_moe_token_permute_grad.h - the backward of
 * aclnnMoeTokenPermute, CANN 8.1.RC1's signature. SPEC 9.
 *
 *   out[r] = sum over k < numTopk of permutedOutputGrad[d], d =
 *   sortedIndices[r*numTopk + k], over d < M (M = permutedOutputGrad dim0;
 *   the rows numOutTokens cut are absent).
 * Arithmetic: fp32, the first kept term exactly, then each next in k order,
 * one rounding to out's dtype; no kept term gives +0.0; bit-identical on every
 * path and thread count (the aclnnMoeInitRoutingV2Grad core).
 *
 * paddedMode must be false. Dtypes: permutedOutputGrad = out FLOAT16,
 * BFLOAT16 or FLOAT; sortedIndices INT32; ND; out contiguous. Phase 1: 161001
 * NULL pointers; 161002 dtype/format (and paddedMode on Ascend 950, which CANN
 * runs as aclnnMoeInitRoutingV2Grad with activeNum = M); 561002 the tiling
 * checks (docs/CANN_COMPAT.md); out empty: success. Phase 2: a negative index
 * is 161002, out untouched. MOEFR_STRICT=1 adds the docs' rule before any
 * write: values in [0, T) (T = the index's length), none twice; 161002, out
 * untouched (the same rule as TokenUnpermute's, docs/CANN_COMPAT.md). */
#ifndef MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_GRAD_H_
#define MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteGradGetWorkspaceSize(const aclTensor *permutedOutputGrad,
                                                                         const aclTensor *sortedIndices,
                                                                         int64_t numTopk, bool paddedMode,
                                                                         const aclTensor *out, uint64_t *workspaceSize,
                                                                         aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteGrad(void *workspace, uint64_t workspaceSize,
                                                         aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_TOKEN_PERMUTE_GRAD_H_ */
