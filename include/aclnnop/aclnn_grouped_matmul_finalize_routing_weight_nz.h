/* aclnnop/aclnn_grouped_matmul_finalize_routing_weight_nz.h - GroupedMatmulFinalizeRouting's
 * WeightNz entry (ops-transformer gmm/grouped_matmul_finalize_routing), the A8W8 rows: int8 x1
 * (M, K) times int8 x2 (E, K, N) per group of rows (groupList: E cumulative ends or counts,
 * groupListType 0 / 1), dequantised and combined into out (outputBS, N) FLOAT:
 *
 *   out = 0, but rows [sharedInputOffset, + S) = fp32(sharedInput) * sharedInputWeight
 *   y[m] = (fp32(acc) * scale[g]) * (logit[m] * pertokenScale[m])  (+ logit[m] * fp32(bias[g]))
 *   out[rowIndex[m]] += y[m]    for m in row order
 *
 * each product rounded to fp32 as CANN's kernel rounds it (docs/CANN_COMPAT.md,
 * "GroupedMatmulFinalizeRouting"). CANN takes x2 stored FRACTAL_NZ only; moefr reads no NZ
 * weight yet (161002) and reads an ND (E, K, N) int8 x2 instead. SPEC 11. */
#ifndef OP_API_INC_GROUPED_MATMUL_FINALIZE_ROUTING_WEIGHT_NZ
#define OP_API_INC_GROUPED_MATMUL_FINALIZE_ROUTING_WEIGHT_NZ

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulFinalizeRoutingWeightNzGetWorkspaceSize(
    const aclTensor *x1, const aclTensor *x2, const aclTensor *scale, const aclTensor *bias,
    const aclTensor *pertokenScaleOptional, const aclTensor *groupList, const aclTensor *sharedInput,
    const aclTensor *logit, const aclTensor *rowIndex, int64_t dtype, float sharedInputWeight, int64_t sharedInputOffset,
    bool transposeX1, bool transposeX2, int64_t groupListType, aclTensor *out, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulFinalizeRoutingWeightNz(void *workspace, uint64_t workspaceSize,
                                                                          aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_GROUPED_MATMUL_FINALIZE_ROUTING_WEIGHT_NZ */
