/* aclnnop/aclnn_moe_gating_top_k.h - grouped MoE gating (the DeepSeek-V3
 * router), CANN 8.1.RC1's signature. SPEC 9.
 *
 * Per row of x (fp32 throughout): s = sigmoid(x) (normType 1) or softmax(x)
 * (normType 0); b = s + biasOptional; the E experts form groupCount groups
 * of E / groupCount; each group scores max(b) (groupSelectMode 0) or the sum
 * of its two largest b (1); the kGroup best groups are kept; expertIdxOut =
 * the k largest b among the kept groups' experts (ties to the lower expert);
 * yOut = s at those experts, / (sum + eps) when normType is 1, then *
 * routedScalingFactor; outOut = s (FLOAT, x's shape) when outFlag is true.
 *
 * x is (N, E) FLOAT16, BFLOAT16 or FLOAT, any strides; biasOptional (E) of
 * x's dtype or NULL; yOut (N, k) x's dtype; expertIdxOut (N, k) INT32;
 * outOut (N, E) FLOAT (required, written only when outFlag is true). renorm
 * must be 0. Phase 1: 161001 NULL x, yOut, expertIdxOut, outOut,
 * workspaceSize or executor; 161002 dtype/format/contiguity; 561002 CANN's
 * tiling checks (moe_gating_top_k_tiling(_arch35).cpp). Empty outputs:
 * success with workspace 0. */
#ifndef MOEFR_ACLNNOP_MOE_GATING_TOP_K_H_
#define MOEFR_ACLNNOP_MOE_GATING_TOP_K_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeGatingTopKGetWorkspaceSize(
    const aclTensor *x, const aclTensor *biasOptional, int64_t k, int64_t kGroup, int64_t groupCount,
    int64_t groupSelectMode, int64_t renorm, int64_t normType, bool outFlag, double routedScalingFactor, double eps,
    const aclTensor *yOut, const aclTensor *expertIdxOut, const aclTensor *outOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeGatingTopK(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                   aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_GATING_TOP_K_H_ */
