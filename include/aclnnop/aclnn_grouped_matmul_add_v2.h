/* aclnnop/aclnn_grouped_matmul_add_v2.h - GroupedMatmulAddV2, CANN's signature
 * (ops-transformer gmm/grouped_matmul_add): aclnnGroupedMatmulAdd
 * (aclnn_grouped_matmul_add.h says what is computed and refused) with
 * groupListType: 0 groupList holds cumulative ends, 1 per-group sizes
 * (other values: 161002). Under MOEFR_SOC=ascend910b the list is read as
 * cumulative whatever groupListType says, as CANN's A2/A3 kernel reads it.
 * SPEC 11; docs/CANN_COMPAT.md, "GroupedMatmulAdd". */
#ifndef OP_API_INC_GROUPED_MATMUL_ADD_V2_H
#define OP_API_INC_GROUPED_MATMUL_ADD_V2_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulAddV2GetWorkspaceSize(const aclTensor *x, const aclTensor *weight,
                                                                        const aclTensor *groupList, aclTensor *yRef,
                                                                        bool transposeX, bool transposeWeight,
                                                                        int64_t groupType, int64_t groupListType,
                                                                        uint64_t *workspaceSize,
                                                                        aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulAddV2(void *workspace, uint64_t workspaceSize,
                                                        aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_GROUPED_MATMUL_ADD_V2_H */
