/* aclnnop/aclnn_grouped_matmul.h - GroupedMatmul (V1), CANN's signature (ops-transformer
 * gmm/grouped_matmul). A front end of aclnnGroupedMatmulV4
 * (aclnn_grouped_matmul_v4.h says what is computed and refused): the
 * non-quantized GroupedMatmul on a BLAS, one rounding per output.
 * V1: the group list is a host aclIntArray of cumulative ends; groupType is
 * inferred (-1 when x and y are both lists of several tensors or all three
 * lists hold one, else 0); FLOAT32 is refused (CANN: V2 and later).
 * docs/CANN_COMPAT.md, "GroupedMatmul". */
#ifndef OP_API_INC_GROUPED_MATMUL_H
#define OP_API_INC_GROUPED_MATMUL_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulGetWorkspaceSize(
    const aclTensorList *x, const aclTensorList *weight, const aclTensorList *biasOptional,
    const aclTensorList *scaleOptional, const aclTensorList *offsetOptional,
    const aclTensorList *antiquantScaleOptional, const aclTensorList *antiquantOffsetOptional,
    const aclIntArray *groupListOptional, int64_t splitItem, const aclTensorList *y, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmul(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                   aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_GROUPED_MATMUL_H */
