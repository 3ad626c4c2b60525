/* aclnnop/aclnn_moe_init_routing_quant.h - MoE init routing, the first
 * version, with the gathered rows quantised to int8 (static scale and
 * offset); CANN's signature. SPEC 9.
 *
 * The routing is aclnnMoeInitRouting's (aclnn_moe_init_routing.h): x (N, H),
 * rowIdx and expertIdx (N, K), T = N*K; perm = the stable sort by expert id;
 * src[i] = rowIdx at perm[i]; expandedExpertIdxOut[i] = the sorted ids;
 * expandedRowIdxOut[src[i]] = i; for i < min(N, activeNum) * K:
 * expandedXOut[i][h] = sat8(rint(f16(f16(f16(x[src[i] % N][h]) * f16(scale))
 *                                    + f16(offset))))
 * where f16 rounds to fp16 (nearest even; scale and offset pass through
 * fp32 first, CANN's attributes being float), rint rounds half to even and
 * sat8 saturates to [-128, 127] (NaN -> 0) - the NPU kernel's fp16 path.
 * rowIdx values must lie in [0, T): others are 161002 in phase 2 with every
 * output untouched (MOEFR_STRICT=1 also rejects a repeated value).
 *
 * Dtypes (A2/A3; CANN has no Ascend 950 kernel, moefr takes the same
 * table): x FLOAT16, BFLOAT16 or FLOAT; rowIdx, expertIdx and the index
 * outputs INT32; expandedXOut INT8; ND; outputs contiguous; inputs may be
 * strided. Phase 1: 161001 a NULL tensor, workspaceSize or executor; 161002
 * dtype/format; 561002 the tiling checks of aclnnMoeInitRouting (x 2-D,
 * rowIdx 2-D and expertIdx's shape, x dim0 = expertIdx dim0, activeNum >= 0,
 * expandedXOut (min(N, activeNum) * K, H), index outputs 1-D of T). All
 * outputs empty: success with workspace 0. */
#ifndef MOEFR_ACLNNOP_MOE_INIT_ROUTING_QUANT_H_
#define MOEFR_ACLNNOP_MOE_INIT_ROUTING_QUANT_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeInitRoutingQuantGetWorkspaceSize(
    const aclTensor *x, const aclTensor *rowIdx, const aclTensor *expertIdx, int64_t activeNum, double scale,
    double offset, const aclTensor *expandedXOut, const aclTensor *expandedRowIdxOut,
    const aclTensor *expandedExpertIdxOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeInitRoutingQuant(void *workspace, uint64_t workspaceSize,
                                                         aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_INIT_ROUTING_QUANT_H_ */
