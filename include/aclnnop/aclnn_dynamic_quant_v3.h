/* aclnnop/aclnn_dynamic_quant_v3.h - DynamicQuantV3, ops-nn quant/dynamic_quant
 * (Ascend 950 only: 561000 under MOEFR_SOC=ascend910b): V2 with isSymmetrical
 * and quantMode "pertoken" (a scale per row), "pertensor" (one scale, shape
 * (1,)) or "perchannel" (a scale per column of each trailing matrix: scaleOut
 * is x's shape without its second-to-last dim; smoothScalesOptional then has
 * that dim's length; no group index). isSymmetrical must agree with offsetOut
 * (NULL exactly when true). FLOAT8/HIFLOAT8 yOut are in CANN's table but not
 * implemented: 161002. SPEC 11; docs/CANN_COMPAT.md, "DynamicQuant". */
#ifndef ACLNN_DYNAMIC_QUANT_V3_H_
#define ACLNN_DYNAMIC_QUANT_V3_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicQuantV3GetWorkspaceSize(
    const aclTensor *x, const aclTensor *smoothScalesOptional, const aclTensor *groupIndexOptional, int64_t dstType,
    bool isSymmetrical, const char *quantMode, const aclTensor *yOut, const aclTensor *scaleOut,
    const aclTensor *offsetOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicQuantV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_DYNAMIC_QUANT_V3_H_ */
