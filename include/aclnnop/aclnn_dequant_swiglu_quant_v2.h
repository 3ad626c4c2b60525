/* aclnnop/aclnn_dequant_swiglu_quant_v2.h - DequantSwigluQuantV2, ops-nn quant/dequant_swiglu_quant:
 * V1 (aclnn_dequant_swiglu_quant.h) plus the output dtype (dstType; moefr: 2, INT8),
 * the rounding mode (roundModeOptional; NULL or "rint" for INT8), the split dim
 * (activateDim; moefr: the last), and the SwiGlu variant: swigluMode 0 silu(a) * b;
 * 1 (odd / even elements) and 2 (halves): a' = min(a, clampLimit),
 * a' / (1 + exp(-gluAlpha a')) * (clamp(b, -clampLimit, clampLimit) + gluBias).
 * SPEC 11; docs/CANN_COMPAT.md, "DequantSwigluQuant". */
#ifndef ACLNN_DEQUANT_SWIGLU_QUANT_V2_H_
#define ACLNN_DEQUANT_SWIGLU_QUANT_V2_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnDequantSwigluQuantV2GetWorkspaceSize(
    const aclTensor *x, const aclTensor *weightScaleOptional, const aclTensor *activationScaleOptional,
    const aclTensor *biasOptional, const aclTensor *quantScaleOptional, const aclTensor *quantOffsetOptional,
    const aclTensor *groupIndexOptional, bool activateLeft, char *quantModeOptional, int64_t dstType,
    char *roundModeOptional, int64_t activateDim, int64_t swigluMode, double clampLimit, double gluAlpha,
    double gluBias, const aclTensor *yOut, const aclTensor *scaleOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnDequantSwigluQuantV2(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_DEQUANT_SWIGLU_QUANT_V2_H_ */
