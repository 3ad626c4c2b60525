/* aclnnop/aclnn_dynamic_quant_v4.h - DynamicQuantV4, ops-nn quant/dynamic_quant
 * (Ascend 950 only): V3 with dstTypeMax, which CANN reads for HIFLOAT8 output
 * only; for the integer outputs moefr implements it has no effect.
 * SPEC 11; docs/CANN_COMPAT.md, "DynamicQuant". */
#ifndef ACLNN_DYNAMIC_QUANT_V4_H_
#define ACLNN_DYNAMIC_QUANT_V4_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicQuantV4GetWorkspaceSize(
    const aclTensor *x, const aclTensor *smoothScalesOptional, const aclTensor *groupIndexOptional, int64_t dstType,
    bool isSymmetrical, const char *quantMode, float dstTypeMax, const aclTensor *yOut, const aclTensor *scaleOut,
    const aclTensor *offsetOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicQuantV4(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_DYNAMIC_QUANT_V4_H_ */
