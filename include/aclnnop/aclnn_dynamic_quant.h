/* aclnnop/aclnn_dynamic_quant.h - DynamicQuant (V1), ops-nn quant/dynamic_quant:
 * symmetric per-token int8 / int4 quantisation with an optional smooth scale.
 *
 *   v = x * smoothScalesOptional (fp32), scale = max|v| over a row / 127,
 *   yOut = round(v / scale), half to even, saturating (int4: / 7)
 *
 * x FLOAT16 or BF16, 2-8 dims, may be strided; smoothScalesOptional x's dtype,
 * 1-D of x's last dim; yOut INT8 (x's shape) or INT32 holding eight int4 each
 * (last dim / 8); scaleOut FLOAT, x's shape without the last dim. Phase 1:
 * 161001 NULL x, yOut, scaleOut, workspaceSize or executor; 161002 dtypes and
 * shapes (ops-nn's aclnn_dynamic_quant.cpp checks, in its order); x, yOut or
 * scaleOut empty: success with workspace 0. SPEC 11; docs/CANN_COMPAT.md,
 * "DynamicQuant". */
#ifndef ACLNN_DYNAMIC_QUANT_H_
#define ACLNN_DYNAMIC_QUANT_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicQuantGetWorkspaceSize(const aclTensor *x,
                                                                  const aclTensor *smoothScalesOptional,
                                                                  const aclTensor *yOut, const aclTensor *scaleOut,
                                                                  uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicQuant(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                  aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_DYNAMIC_QUANT_H_ */
