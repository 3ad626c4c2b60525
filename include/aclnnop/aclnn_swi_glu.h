/* aclnnop/aclnn_swi_glu.h - SwiGlu, the gated activation between a MoE
 * layer's two grouped matmuls; CANN's signature (ops-nn activation/swi_glu).
 *
 *   x is split along dim into two halves A (first) and B (second);
 *   out = silu(A) * B = A * sigmoid(A) * B
 *
 * computed in fp32 (fp16/bf16 widened exactly), rounded once to out's dtype.
 * Dtypes: x and out all FLOAT, FLOAT16 or BF16, the same; ND; x may be a
 * strided view, out must be contiguous. dim in [-rank, rank) (negative counts
 * from the end). Phase 1: 161001 NULL x, out, workspaceSize or executor;
 * 161002 dtype, format, a non-contiguous out, dim out of range; 561002
 * x.shape[dim] odd, or out not x's shape with dim halved. out empty: success
 * with workspace 0. SPEC 10; docs/CANN_COMPAT.md, "SwiGlu". */
#ifndef ACLNN_SWI_GLU_H_
#define ACLNN_SWI_GLU_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnSwiGluGetWorkspaceSize(const aclTensor *x, int64_t dim, const aclTensor *out,
                                                            uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnSwiGlu(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                            aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_SWI_GLU_H_ */
