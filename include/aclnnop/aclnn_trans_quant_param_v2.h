/* aclnn_trans_quant_param_v2.h - aclnnTransQuantParamV2 (ops-nn quant/trans_quant_param_v2): scale (FLOAT)
 * and optional offset (FLOAT) tensors to out (UINT64 or INT64), the words GroupedMatmul's INT8 output reads:
 * the scale's fp32 bits with the low 13 cleared, bit 46 set, the offset as a 9-bit integer at bit 37. */
#ifndef OP_API_INC_TRANS_QUANT_PARAM_V2_H_
#define OP_API_INC_TRANS_QUANT_PARAM_V2_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnTransQuantParamV2GetWorkspaceSize(const aclTensor *scale, const aclTensor *offset,
                                                             const aclTensor *out, uint64_t *workspaceSize,
                                                             aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnTransQuantParamV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                             const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_TRANS_QUANT_PARAM_V2_H_ */
