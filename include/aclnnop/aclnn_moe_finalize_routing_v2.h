/* aclnnop/aclnn_moe_finalize_routing_v2.h - MoE finalize routing (token
 * unpermute/combine), the forward of aclnnMoeFinalizeRoutingV2Grad. SPEC 8.
 *
 *   out[r][j] = x1[r][j] + x2[r][j]
 *             + sum_k scales[r][k] * (expandedX[d][j] + bias[e][j])
 *
 * with e = expertIdx[r][k] and d = expandedRowIdx[k*R + r] for dropPadMode 0/1
 * (column layout, as aclnnMoeInitRouting emits) or expandedRowIdx[r*K + k] for
 * 2/3 (row layout, as aclnnMoeInitRoutingV2 emits). Modes 1/3 are drop-pad:
 * expandedX is (E, C, H) and d = -1 adds scales*bias[e] but no expandedX row.
 *
 * Shapes: out (R, H) is required and fixes R and H; x1, x2 (R, H); scales and
 * expertIdx (R, K); expandedRowIdx (R*K); expandedX (R*K, H) in modes 0/2,
 * (E, C, H) with E, C > 0 in modes 1/3; bias (E', H) with E' > 0, and E' = E
 * in modes 1/3. Without scales K is 1 and the scale is 1: expandedRowIdx then
 * has R entries (as in the backward, where no scales means R*K = R).
 *
 * Arithmetic, per output element, in fp64: acc = x1 (+ x2), then for k = 0..K-1
 * in order acc = acc + s_k * (x_d + b_e), then one round-to-nearest-even to
 * out's dtype. Absent inputs are absent terms, not zeros: without x1 the sum
 * starts at the first slot's term (so K = 1 without scales copies x exactly,
 * -0.0 included); a drop-pad slot (d = -1) without bias adds nothing at all
 * (matching its gradScales of 0); with nothing present out is +0.0. NaN
 * results are stored as the dtype's canonical quiet NaN. Bit-identical for
 * every thread count and kernel path (MOEFR_ISA).
 *
 * Dtypes: expandedX, x1, x2, bias and out share FLOAT16, BFLOAT16 or FLOAT;
 * scales any of the three (Ascend 950), or with MOEFR_SOC=ascend910b the data
 * dtype or FLOAT with BFLOAT16 data; expandedRowIdx, expertIdx INT32; format ND;
 * out contiguous. Inputs may be strided views.
 *
 * Phase 1 (GetWorkspaceSize), in this order of classes: a NULL expandedX,
 * expandedRowIdx, out, workspaceSize or executor -> ACLNN_ERR_PARAM_NULLPTR
 * (161001); a dtype or format outside the rules above, or a non-contiguous out
 * -> ACLNN_ERR_PARAM_INVALID (161002); x2 without x1, bias without expertIdx,
 * dropPadMode not 0..3, or any shape that breaks CANN's tiling rules ->
 * ACLNN_ERR_INNER_TILING_ERROR (561002, as CANN's generated wrapper returns).
 * Phase 2 checks values before writing anything: a value CANN would read out
 * of bounds with (negative in modes 0/2, below -1 in modes 1/3; at or past
 * expandedX's rows in modes 1/3, or in 0/2 under MOEFR_SOC=ascend910b; at or
 * past them in 0/2 otherwise drops the slot, as Ascend 950's kernel does), or
 * with bias an expertIdx of a kept slot outside [0, E'), returns ACLNN_ERR_PARAM_INVALID
 * (161002) with `out` untouched. MOEFR_STRICT=1 adds the docs' rule, the
 * same in every routing operator: modes 0/2 values in [0, R*K) (a value in
 * [rows, R*K) stays a dropped slot), modes 1/3 in [-1, E*C), none twice but
 * -1 (docs/CANN_COMPAT.md). Every error leaves a one-line message naming
 * the parameter and the values in aclGetRecentErrMsg(). */
#ifndef MOEFR_ACLNNOP_MOE_FINALIZE_ROUTING_V2_H_
#define MOEFR_ACLNNOP_MOE_FINALIZE_ROUTING_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeFinalizeRoutingV2GetWorkspaceSize(
    const aclTensor *expandedX, const aclTensor *expandedRowIdx, const aclTensor *x1Optional,
    const aclTensor *x2Optional, const aclTensor *biasOptional, const aclTensor *scalesOptional,
    const aclTensor *expertIdxOptional, int64_t dropPadMode, const aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeFinalizeRoutingV2(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_FINALIZE_ROUTING_V2_H_ */
