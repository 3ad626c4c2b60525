/* aclnn_trans_quant_param_v3.h - aclnnTransQuantParamV3 (ops-nn quant/trans_quant_param_v2): V2 with
 * roundMode: 0 truncates the scale to its top 19 bits (V2's), 1 rounds it there to nearest, ties to even. */
#ifndef OP_API_INC_TRANS_QUANT_PARAM_V3_H_
#define OP_API_INC_TRANS_QUANT_PARAM_V3_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnTransQuantParamV3GetWorkspaceSize(const aclTensor *scale, const aclTensor *offset,
                                                             int64_t roundMode, const aclTensor *out,
                                                             uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnTransQuantParamV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                             const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_TRANS_QUANT_PARAM_V3_H_ */
