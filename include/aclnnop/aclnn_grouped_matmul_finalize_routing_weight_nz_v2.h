/* aclnnop/aclnn_grouped_matmul_finalize_routing_weight_nz_v2.h - GroupedMatmulFinalizeRouting's
 * WeightNzV2 entry (ops-transformer gmm/grouped_matmul_finalize_routing): WeightNz's A8W8 rows
 * with offsetOptional (A8W4 only), the unused antiquant arguments and tuningConfigOptional (its
 * first value, the expected rows per expert, must lie in [0, M]). The entry torch_npu's
 * npu_grouped_matmul_finalize_routing calls for NZ weights; moefr reads an ND (E, K, N) int8 x2
 * (no NZ weight yet: 161002). docs/CANN_COMPAT.md, "GroupedMatmulFinalizeRouting". SPEC 11. */
#ifndef OP_API_INC_GROUPED_MATMUL_FINALIZE_ROUTING_WEIGHT_NZ_V2
#define OP_API_INC_GROUPED_MATMUL_FINALIZE_ROUTING_WEIGHT_NZ_V2

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulFinalizeRoutingWeightNzV2GetWorkspaceSize(
    const aclTensor *x1, const aclTensor *x2, const aclTensor *scale, const aclTensor *bias,
    const aclTensor *offsetOptional, const aclTensor *antiquantScaleOptional, const aclTensor *antiquantOffsetOptional,
    const aclTensor *pertokenScaleOptional, const aclTensor *groupList, const aclTensor *sharedInput,
    const aclTensor *logit, const aclTensor *rowIndex, int64_t dtype, float sharedInputWeight, int64_t sharedInputOffset,
    bool transposeX1, bool transposeX2, int64_t groupListType, const aclIntArray *tuningConfigOptional, aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulFinalizeRoutingWeightNzV2(void *workspace, uint64_t workspaceSize,
                                                                            aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_GROUPED_MATMUL_FINALIZE_ROUTING_WEIGHT_NZ_V2 */
