/* aclnnop/aclnn_grouped_matmul_v5.h - GroupedMatmul V5, CANN's signature (ops-transformer
 * gmm/grouped_matmul). A front end of aclnnGroupedMatmulV4
 * (aclnn_grouped_matmul_v4.h says what is computed and refused): the
 * non-quantized GroupedMatmul on a BLAS, one rounding per output.
 * V5: V4 with tuningConfigOptional (a hint; tuningConfig[0] must lie in
 * [0, the largest x dim 0], else 161002; it changes nothing in moefr).
 * docs/CANN_COMPAT.md, "GroupedMatmul". */
#ifndef OP_API_INC_GROUPED_MATMUL_V5_H
#define OP_API_INC_GROUPED_MATMUL_V5_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulV5GetWorkspaceSize(
    const aclTensorList *x, const aclTensorList *weight, const aclTensorList *biasOptional,
    const aclTensorList *scaleOptional, const aclTensorList *offsetOptional,
    const aclTensorList *antiquantScaleOptional, const aclTensorList *antiquantOffsetOptional,
    const aclTensorList *perTokenScaleOptional, const aclTensor *groupListOptional,
    const aclTensorList *activationInputOptional, const aclTensorList *activationQuantScaleOptional,
    const aclTensorList *activationQuantOffsetOptional, int64_t splitItem, int64_t groupType, int64_t groupListType,
    int64_t actType, aclIntArray *tuningConfigOptional, aclTensorList *out, aclTensorList *activationFeatureOutOptional,
    aclTensorList *dynQuantScaleOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulV5(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                     aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_GROUPED_MATMUL_V5_H */
