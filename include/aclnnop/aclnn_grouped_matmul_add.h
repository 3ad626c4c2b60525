/* aclnnop/aclnn_grouped_matmul_add.h - GroupedMatmulAdd, CANN's signature
 * (ops-transformer gmm/grouped_matmul_add): the weight-gradient step of a MoE
 * layer, accumulated in place over micro-batches.
 *
 *   x (K, M) and weight (K, N) are split along K (the token dim) by groupList
 *   (INT64, cumulative ends); for each group i with rows [k0, k1):
 *   yRef[i] (M, N) += x[k0:k1]^T @ weight[k0:k1]
 *
 * x and weight both FLOAT16 or both BF16, yRef FLOAT32 (E, M, N), E = groupList's
 * length. Products are formed exactly in fp32, summed in fp32 (BLAS order) and
 * added to yRef in fp32; the bits are the same for every thread count.
 * Phase 1: 161002 for a NULL x, weight, groupList or yRef (CANN's op_api folds
 * its null checks into PARAM_INVALID), formats, ranks, M = 0, x/weight K
 * mismatch, dtypes; 161001 NULL workspaceSize or executor; 561002 the
 * Ascend 950 tiling rules (transposeX true, transposeWeight false,
 * groupType 2, at most 1024 groups). Phase 2: a groupList that is not
 * ascending or ends past K is refused (161002) with yRef untouched.
 * SPEC 11; docs/CANN_COMPAT.md, "GroupedMatmulAdd". */
#ifndef OP_API_INC_GROUPED_MATMUL_ADD_H
#define OP_API_INC_GROUPED_MATMUL_ADD_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulAddGetWorkspaceSize(const aclTensor *x, const aclTensor *weight,
                                                                      const aclTensor *groupList, aclTensor *yRef,
                                                                      bool transposeX, bool transposeWeight,
                                                                      int64_t groupType, uint64_t *workspaceSize,
                                                                      aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulAdd(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                      aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_GROUPED_MATMUL_ADD_H */
