/* aclnnop/aclnn_moe_compute_expert_tokens.h - rows before each expert,
 * CANN 8.1.RC1's signature. SPEC 9.
 *
 *   out[e] = #{ i : sortedExperts[i] <= e },  e = 0..numExperts-1
 *
 * (CANN's binary search over the sorted ids: an inclusive cumsum of the
 * per-expert counts). Ids equal to numExperts or above are accepted and not
 * counted, as on the NPU (its kernels only copy out the numExperts entries;
 * torch_npu's test draws ids in [0, num_expert]). sortedExperts must be
 * ascending and non-negative (CANN: undefined otherwise); moefr checks both
 * in phase 2 and returns ACLNN_ERR_PARAM_INVALID (161002) with out untouched.
 * Dtypes: sortedExperts and out INT32, ND, out contiguous. Phase 1: 161001
 * NULL sortedExperts, out, workspaceSize or executor; 161002 dtype/format;
 * 561002 CANN's tiling checks: both 1-D, numExperts not 0 (moefr: > 0) and
 * <= 2048, at most 2^24 ids; out shorter than numExperts (CANN would write
 * past it) is 561002 too. out empty: success with workspace 0. */
#ifndef MOEFR_ACLNNOP_MOE_COMPUTE_EXPERT_TOKENS_H_
#define MOEFR_ACLNNOP_MOE_COMPUTE_EXPERT_TOKENS_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeComputeExpertTokensGetWorkspaceSize(const aclTensor *sortedExperts,
                                                                            int64_t numExperts, const aclTensor *out,
                                                                            uint64_t *workspaceSize,
                                                                            aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeComputeExpertTokens(void *workspace, uint64_t workspaceSize,
                                                            aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_COMPUTE_EXPERT_TOKENS_H_ */
