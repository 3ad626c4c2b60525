/* aclnnop/aclnn_grouped_matmul_v4.h - GroupedMatmul V4, CANN's signature
 * (ops-transformer gmm/grouped_matmul). moefr computes the non-quantized
 * formula, one GEMM per group on a BLAS, in fp32 with one rounding:
 *
 *   groupType -1 (no split): out[i] = x[i] @ weight[i] + bias[i]
 *   groupType  0 (M split):  rows [m_i, m_i+1) of out = those rows of x @ weight[i] + bias[i]
 *   groupType  2 (K split):  out[i] = x[:, k_i:k_i+1] @ weight[k_i:k_i+1, :]   (out (E, M, N))
 *
 * splitItem 0/1: out is a list (one tensor per group), 2/3: one tensor.
 * groupListOptional (INT64, 1-D): groupListType 0 cumulative ends, 1 counts.
 * Rows of a single out past the group list's total are not written; an empty
 * K group's out[i] is zeros. x (M split: weight) may be a transposed view
 * (strides of the last two dims swapped). Dtypes: FLOAT16 (bias FLOAT16),
 * BF16 (bias FLOAT32; Ascend 950: or BF16), FLOAT32 (A2/A3 only:
 * MOEFR_SOC=ascend910b). Anything quantized (scale, offset, antiquant*,
 * perTokenScale, activation*, int8/int4/fp8 data) or actType != 0 is refused
 * with 161002. Codes in CANN's order: docs/CANN_COMPAT.md, "GroupedMatmul". */
#ifndef OP_API_INC_GROUPED_MATMUL_V4_H
#define OP_API_INC_GROUPED_MATMUL_V4_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GMM_ACT_TYPE_NONE = 0L,
    GMM_ACT_TYPE_RELU = 1L,
    GMM_ACT_TYPE_GELU_TANH = 2L,
    GMM_ACT_TYPE_GELU_ERR_FUNC = 3L,
    GMM_ACT_TYPE_FAST_GELU = 4L,
    GMM_ACT_TYPE_SILU = 5L
} GMMActType;

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulV4GetWorkspaceSize(
    const aclTensorList *x, const aclTensorList *weight, const aclTensorList *biasOptional,
    const aclTensorList *scaleOptional, const aclTensorList *offsetOptional,
    const aclTensorList *antiquantScaleOptional, const aclTensorList *antiquantOffsetOptional,
    const aclTensorList *perTokenScaleOptional, const aclTensor *groupListOptional,
    const aclTensorList *activationInputOptional, const aclTensorList *activationQuantScaleOptional,
    const aclTensorList *activationQuantOffsetOptional, int64_t splitItem, int64_t groupType, int64_t groupListType,
    int64_t actType, aclTensorList *out, aclTensorList *activationFeatureOutOptional,
    aclTensorList *dynQuantScaleOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulV4(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                     aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_GROUPED_MATMUL_V4_H */
