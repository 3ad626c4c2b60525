/* aclnnop/aclnn_grouped_matmul_swiglu_quant.h - GroupedMatmulSwigluQuant,
 * ops-transformer gmm/grouped_matmul_swiglu_quant: the A8W8 grouped matmul of
 * int8 x (M, K) and int8 weight (E, K, N) per group of rows (groupList: E' <= E
 * cumulative INT64 row ends), dequantised, SwiGlu over the two halves of N,
 * and quantised per row to int8:
 *
 *   c[n]  = (fp32(sum_k x[m][k] * w[g][k][n]) * xScale[m]) * weightScale[g][n]
 *   s[j]  = swish(c[j]) * c[N/2 + j]                     (j < N/2)
 *   outputScale[m] = max_j |s[j]| / 127
 *   output[m][j]   = int8(rint(fp16(s[j] * (1 / outputScale[m]))))
 *
 * each step rounded to fp32 as CANN's kernel rounds it (docs/CANN_COMPAT.md,
 * "GroupedMatmulSwigluQuant"). Rows at or past groupList's last value are not
 * written. bias, offset and outputOffset are reserved by CANN (ignored).
 * weight: an ND (E, K, N) int8 tensor (moefr reads no FRACTAL_NZ weight yet:
 * 161002). SPEC 11. */
#ifndef OP_API_INC_GROUPED_MATMUL_SWIGLU_QUANT_H
#define OP_API_INC_GROUPED_MATMUL_SWIGLU_QUANT_H

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulSwigluQuantGetWorkspaceSize(
    const aclTensor *x, const aclTensor *weight, const aclTensor *bias, const aclTensor *offset,
    const aclTensor *weightScale, const aclTensor *xScale, const aclTensor *groupList, aclTensor *output,
    aclTensor *outputScale, aclTensor *outputOffset, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupedMatmulSwigluQuant(void *workspace, uint64_t workspaceSize,
                                                              aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_GROUPED_MATMUL_SWIGLU_QUANT_H */
