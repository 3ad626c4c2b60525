/* aclnnop/aclnn_swi_glu_grad.h - the backward of SwiGlu; CANN's signature
 * (ops-nn activation/swi_glu_grad). With A, B the halves of x along dim and
 * s = sigmoid(A):
 *
 *   out's first half  = yGrad * (s * (1 - s) * A + s) * B      (d/dA)
 *   out's second half = yGrad * s * A                          (d/dB)
 *
 * in fp32, rounded once to out's dtype. Dtypes: yGrad, x, out all FLOAT,
 * FLOAT16 or BF16, the same; ND; yGrad and x may be strided views, out must
 * be contiguous. Phase 1: 161001 NULL yGrad, x, out, workspaceSize or
 * executor; 161002 dtype, format, a non-contiguous out, dim out of range;
 * 561002 x.shape[dim] odd, yGrad not x's shape with dim halved, out not x's
 * shape. out empty: success with workspace 0. SPEC 10; docs/CANN_COMPAT.md. */
#ifndef ACLNN_SWI_GLU_GRAD_H_
#define ACLNN_SWI_GLU_GRAD_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnSwiGluGradGetWorkspaceSize(const aclTensor *yGrad, const aclTensor *x, int64_t dim,
                                                                const aclTensor *out, uint64_t *workspaceSize,
                                                                aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnSwiGluGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_SWI_GLU_GRAD_H_ */
