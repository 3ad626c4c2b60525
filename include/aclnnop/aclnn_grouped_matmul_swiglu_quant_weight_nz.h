/* aclnnop/aclnn_grouped_matmul_swiglu_quant_weight_nz.h - the WeightNZ entry of
 * GroupedMatmulSwigluQuant (ops-transformer gmm/grouped_matmul_swiglu_quant,
 * the entry torch_npu's npu_grouped_matmul_swiglu_quant calls): the same
 * arguments and arithmetic as aclnnGroupedMatmulSwigluQuant; CANN takes the
 * weight's storage as FRACTAL_NZ whatever its format says. moefr reads no
 * FRACTAL_NZ weight yet: a weight in that format (or 5-D) is refused (161002);
 * an ND (E, K, N) weight takes aclnnGroupedMatmulSwigluQuant's ND path
 * (docs/CANN_COMPAT.md, "GroupedMatmulSwigluQuant"). SPEC 11. */
#ifndef OP_API_INC_GROUPED_MATMUL_SWIGLU_QUANT_WEIGHT_NZ_H
#define OP_API_INC_GROUPED_MATMUL_SWIGLU_QUANT_WEIGHT_NZ_H

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulSwigluQuantWeightNZGetWorkspaceSize(
    const aclTensor *x, const aclTensor *weight, const aclTensor *bias, const aclTensor *offset,
    const aclTensor *weightScale, const aclTensor *xScale, const aclTensor *groupList, aclTensor *output,
    aclTensor *outputScale, aclTensor *outputOffset, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulSwigluQuantWeightNZ(void *workspace, uint64_t workspaceSize,
                                                                      aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_GROUPED_MATMUL_SWIGLU_QUANT_WEIGHT_NZ_H */
