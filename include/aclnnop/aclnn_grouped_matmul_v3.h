/* aclnnop/aclnn_grouped_matmul_v3.h - GroupedMatmul V3, CANN's signature (ops-transformer
 * gmm/grouped_matmul). A front end of aclnnGroupedMatmulV4
 * (aclnn_grouped_matmul_v4.h says what is computed and refused): the
 * non-quantized GroupedMatmul on a BLAS, one rounding per output.
 * V3: V4 with groupListType 0 (cumulative ends in an INT64 tensor) and actType 0.
 * docs/CANN_COMPAT.md, "GroupedMatmul". */
#ifndef OP_API_INC_GROUPED_MATMUL_V3_H
#define OP_API_INC_GROUPED_MATMUL_V3_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulV3GetWorkspaceSize(
    const aclTensorList *x, const aclTensorList *weight, const aclTensorList *biasOptional,
    const aclTensorList *scaleOptional, const aclTensorList *offsetOptional,
    const aclTensorList *antiquantScaleOptional, const aclTensorList *antiquantOffsetOptional,
    const aclTensor *groupListOptional, int64_t splitItem, int64_t groupType, const aclTensorList *y,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                     aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_GROUPED_MATMUL_V3_H */
