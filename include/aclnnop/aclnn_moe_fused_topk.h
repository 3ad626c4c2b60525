/* aclnnop/aclnn_moe_fused_topk.h - sigmoid group-limited MoE routing with an
 * optional physical-to-logical expert mapping, CANN 8.1.RC1's signature.
 * SPEC 9.
 *
 * Per row r of x (fp32 throughout): s = sigmoid(x); b = s + addNum; the E
 * experts form groupNum groups of E / groupNum, each scored by the sum of
 * its topN largest b; the groupTopk best groups keep b, every other expert's
 * b becomes b * 0; indices = the topK largest of those (ties to the lower
 * expert); y = s at them, times 1 / sum(y) and then scale when isNorm.
 * enableExpertMapping: indices[r][i] = mappingTable[e][r % mappingNum[e]]
 * (column 0 when mappingNum[e] is 0). activateType is not read (CANN's kernel
 * always uses the sigmoid).
 *
 * x (N, E) FLOAT16, BFLOAT16 or FLOAT; addNum (E) of x's dtype; mappingNum
 * (E) and mappingTable (E, <= 128) INT32; y (N, topK) FLOAT and indices
 * (N, topK) INT32. Any strides. Phase 1: 161001 NULL x, addNum, y, indices,
 * mapping tensors when mapping is on, workspaceSize or executor; 161002
 * dtypes and op_api/aclnn_moe_fused_topk.cpp's shape checks. x empty:
 * success with workspace 0. Phase 2: 161002 (outputs untouched) when a
 * mapping lookup would fall outside its mappingTable row. */
#ifndef MOEFR_ACLNNOP_MOE_FUSED_TOPK_H_
#define MOEFR_ACLNNOP_MOE_FUSED_TOPK_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeFusedTopkGetWorkspaceSize(
    const aclTensor *x, const aclTensor *addNum, const aclTensor *mappingNum, const aclTensor *mappingTable,
    uint32_t groupNum, uint32_t groupTopk, uint32_t topN, uint32_t topK, uint32_t activateType, bool isNorm,
    float scale, bool enableExpertMapping, aclTensor *y, aclTensor *indices, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeFusedTopk(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                  aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_FUSED_TOPK_H_ */
