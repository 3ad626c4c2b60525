/* aclnn_trans_quant_param.h - aclnnTransQuantParam (ops-nn quant/trans_quant_param): fp32 scales and
 * offsets to the UINT64 words GroupedMatmul's INT8 output reads, on the host. *quantParam is allocated
 * with calloc (release it with free); its length, *quantParamSize, is the longer array's rounded up to a
 * multiple of 16 (1 stays 1). */
#ifndef OP_API_INC_TRANS_QUANT_PARAM_H_
#define OP_API_INC_TRANS_QUANT_PARAM_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnTransQuantParam(const float *scaleArray, uint64_t scaleSize, const float *offsetArray,
                                           uint64_t offsetSize, uint64_t **quantParam, uint64_t *quantParamSize);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_TRANS_QUANT_PARAM_H_ */
