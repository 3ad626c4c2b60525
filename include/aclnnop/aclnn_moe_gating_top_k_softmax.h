/* aclnnop/aclnn_moe_gating_top_k_softmax.h - MoE gating: softmax over the
 * experts, then the k largest, CANN 8.1.RC1's signature. SPEC 9.
 *
 *   p[r][:]        = softmax(x[r][:])            (fp32, E = x's last dim)
 *   y[r][k]        = the k-th largest p[r][e]     (x's dtype, rounded once)
 *   expertIdx[r][k]= its expert e; ties go to the lower e; E when finished[r]
 *   rowIdx[r][k]   = k * R + r                    (R = rows of x)
 *
 * x is (N, E) or (B, S, E), FLOAT16, BFLOAT16 or FLOAT, any strides;
 * finishedOptional is BOOL of x's shape without the last dim (NULL: no row
 * finished); a finished row keeps its y. yOut (x's dtype), expertIdxOut and
 * rowIdxOut (INT32) have x's leading dims and k as the last, contiguous.
 * Phase 1: 161001 NULL x, an output, workspaceSize or executor; 161002
 * dtype/format; 561002 CANN's tiling checks (x 2-D or 3-D without a zero or
 * a dim > INT32_MAX, finished's shape, the outputs' leading dims, 1 <= k <=
 * E, k <= 1024; Ascend 950: E <= 2048). All outputs empty: success with
 * workspace 0. */
#ifndef MOEFR_ACLNNOP_MOE_GATING_TOP_K_SOFTMAX_H_
#define MOEFR_ACLNNOP_MOE_GATING_TOP_K_SOFTMAX_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(const aclTensor *x,
                                                                          const aclTensor *finishedOptional,
                                                                          int64_t k, const aclTensor *yOut,
                                                                          const aclTensor *expertIdxOut,
                                                                          const aclTensor *rowIdxOut,
                                                                          uint64_t *workspaceSize,
                                                                          aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeGatingTopKSoftmax(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_GATING_TOP_K_SOFTMAX_H_ */
