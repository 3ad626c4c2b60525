/* aclnnop/aclnn_dequant_swiglu_quant.h - DequantSwigluQuant, ops-nn quant/dequant_swiglu_quant:
 * dequantise (INT32 x: + INT32 bias, * weightScaleOptional, * activationScaleOptional,
 * + float bias; FLOAT16 / BFLOAT16 x: widened), SwiGlu over the two halves of the last dim
 * (activateLeft: silu on the first half, else on the second), then int8 quantisation:
 * "dynamic" (per row: scaleOut = max|v| / 127, yOut = round(v / scaleOut), optionally
 * v * quantScaleOptional first) or "static" (yOut = round(v / quantScale + quantOffset);
 * scaleOut not written). groupIndexOptional counts the rows of each group (its weight
 * scale, bias and quant scale rows). yOut INT8 (x's shape, last dim halved), scaleOut
 * FLOAT (x's shape without the last dim). SPEC 11; docs/CANN_COMPAT.md,
 * "DequantSwigluQuant". */
#ifndef ACLNN_DEQUANT_SWIGLU_QUANT_H_
#define ACLNN_DEQUANT_SWIGLU_QUANT_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnDequantSwigluQuantGetWorkspaceSize(
    const aclTensor *x, const aclTensor *weightScaleOptional, const aclTensor *activationScaleOptional,
    const aclTensor *biasOptional, const aclTensor *quantScaleOptional, const aclTensor *quantOffsetOptional,
    const aclTensor *groupIndexOptional, bool activateLeft, char *quantModeOptional, const aclTensor *yOut,
    const aclTensor *scaleOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnDequantSwigluQuant(void *workspace, uint64_t workspaceSize,
                                                        aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_DEQUANT_SWIGLU_QUANT_H_ */
