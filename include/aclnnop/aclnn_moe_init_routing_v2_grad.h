/* aclnnop/aclnn_moe_init_routing_v2_grad.h - the backward of
 * aclnnMoeInitRoutingV2, CANN 8.1.RC1's signature. SPEC 9.
 *
 *   out[r][h] = sum over k = 0..topK-1 of gradExpandedX[d][h],
 *   d = expandedRowIdx[r*topK + k], over the kept slots only:
 *   dropPadMode 0, activeNum 0: every d (gradExpandedX (N*topK, H));
 *   dropPadMode 0, activeNum > 0: d < activeNum (gradExpandedX (activeNum, H));
 *   dropPadMode 1: d != -1 (gradExpandedX (E, C, H), rows e*C + s).
 * Arithmetic: fp32, the first kept term exactly, then each next kept term
 * added in k order, one rounding to out's dtype at the end (so topK = 1
 * copies exactly); no kept term gives +0.0. Every row of out is written;
 * bit-identical on every path and thread count (CANN's NPU adds in a binary
 * tree, which can differ in the last bit).
 *
 * Dtypes: gradExpandedX = out FLOAT16, BFLOAT16 or FLOAT; expandedRowIdx
 * INT32; ND; out contiguous. Phase 1: 161001 NULL gradExpandedX,
 * expandedRowIdx, out, workspaceSize or executor; 161002 dtype/format;
 * 561002 CANN's tiling checks (docs/CANN_COMPAT.md); out empty: success.
 * Phase 2: an index CANN would read outside gradExpandedX with is
 * ACLNN_ERR_PARAM_INVALID (161002), out untouched. MOEFR_STRICT=1 adds the
 * docs' rule before any write: values in [0, N*topK) (dropPadMode 0) or
 * [-1, E*C) (1), none twice but -1; 161002, out untouched (the same rule as
 * TokenUnpermute's, docs/CANN_COMPAT.md). */
#ifndef MOEFR_ACLNNOP_MOE_INIT_ROUTING_V2_GRAD_H_
#define MOEFR_ACLNNOP_MOE_INIT_ROUTING_V2_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeInitRoutingV2GradGetWorkspaceSize(
    const aclTensor *gradExpandedX, const aclTensor *expandedRowIdx, int64_t topK, int64_t dropPadMode,
    int64_t activeNum, const aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeInitRoutingV2Grad(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_INIT_ROUTING_V2_GRAD_H_ */
