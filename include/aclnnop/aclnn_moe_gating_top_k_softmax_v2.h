/* aclnnop/aclnn_moe_gating_top_k_softmax_v2.h - MoE gating with the order of
 * softmax and top-k chosen by renorm, CANN 8.1.RC1's signature. SPEC 9.
 *
 *   renorm 0: p = softmax(x) over the E experts (fp32); y, expertIdx = the k
 *             largest p (ties to the lower expert); softmaxResultOutOptional
 *             = p (FLOAT, x's shape) when outputSoftmaxResultFlag is true.
 *   renorm 1: expertIdx = the k largest logits (ties to the lower expert);
 *             y = softmax over those k values (fp32); no softmax output.
 *   finished[r] true: expertIdx[r][:] = E, y[r] as computed.
 *
 * x is (N, E) or (B, S, E), FLOAT16, BFLOAT16 or FLOAT, any strides;
 * finishedOptional BOOL of x's shape without the last dim, or NULL. yOut
 * (x's dtype) and expertIdxOut (INT32) have x's leading dims and k as the
 * last, contiguous. Phase 1: 161001 NULL x, yOut, expertIdxOut,
 * workspaceSize or executor; 161002 dtype/format; 561002 CANN's tiling
 * checks (x 2-D or 3-D, last dim not 0, no dim > INT32_MAX, finished's
 * shape, 1 <= k <= E, k <= 1024, the outputs' shapes, renorm 0 or 1, and
 * with renorm 0 and the flag set a softmax output present, FLOAT, of x's
 * shape). All outputs empty: success with workspace 0. */
#ifndef MOEFR_ACLNNOP_MOE_GATING_TOP_K_SOFTMAX_V2_H_
#define MOEFR_ACLNNOP_MOE_GATING_TOP_K_SOFTMAX_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize(
    const aclTensor *x, const aclTensor *finishedOptional, int64_t k, int64_t renorm, bool outputSoftmaxResultFlag,
    const aclTensor *yOut, const aclTensor *expertIdxOut, const aclTensor *softmaxResultOutOptional,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeGatingTopKSoftmaxV2(void *workspace, uint64_t workspaceSize,
                                                            aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_GATING_TOP_K_SOFTMAX_V2_H_ */
