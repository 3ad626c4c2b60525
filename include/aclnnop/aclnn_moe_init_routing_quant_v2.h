/* aclnnop/aclnn_moe_init_routing_quant_v2.h - MoE init routing V2 with the
 * gathered rows quantised to int8, static or dynamic; CANN's signature.
 * SPEC 9.
 *
 * The routing is aclnnMoeInitRoutingV2's (aclnn_moe_init_routing_v2.h):
 * x (N, H), expertIdx (N, K), T = N*K, perm = the stable sort by expert id,
 * expandedRowIdxOut[perm[i]] = i (drop/pad: e*C + s, or -1 past capacity),
 * the count outputs as V2 writes them. expandedXOut row i is the int8
 * quantisation of its source token x[perm[i] / K] (dropless: i < A, A = T
 * when activeNum = 0, else min(activeNum, T); drop/pad: (E, C, H), empty
 * slots 0):
 * - quantMode 0 (static; scaleOptional and offsetOptional (1,) FLOAT):
 *   q = sat8(rint(f16(f16(f16(x) * f16(scale)) + f16(offset)))), fp16 steps
 *   rounded to nearest even, rint half to even, sat8 to [-128, 127] (NaN 0);
 * - quantMode 1 (dynamic): v = f32(x), times the smooth row in fp32 when
 *   scaleOptional is given ((1, H): shared; (expertNum, H): the row of the
 *   slot's expert); s = max|v| / 127 in fp32, q = sat8(round half away from
 *   zero(v / s)); dynamicQuantScaleOutOptional[i] = s (A or E*C entries,
 *   empty slots 0.0). offsetOptional is ignored.
 * Expert ids must lie in [0, expertNum) in drop/pad mode, with a count
 * output, or with an (expertNum, H) smooth scale (others: >= 0); an id out
 * of range is 161002 in phase 2 with every output untouched.
 *
 * Dtypes (every product): x FLOAT16, BFLOAT16 or FLOAT; expertIdx INT32;
 * scale/offset FLOAT; expandedXOut INT8; the index and count outputs INT32;
 * dynamicQuantScaleOutOptional FLOAT; ND; outputs contiguous. Phase 1:
 * 161001 a NULL required tensor, workspaceSize or executor; 161002
 * dtype/format; 561002 the tiling checks of moe_init_routing_quant_v2
 * (quantMode 0 or 1 first, then V2's attribute and shape checks, the
 * dynamic scale output's shape, the scale/offset shapes;
 * docs/CANN_COMPAT.md). All outputs empty: success with workspace 0. */
#ifndef MOEFR_ACLNNOP_MOE_INIT_ROUTING_QUANT_V2_H_
#define MOEFR_ACLNNOP_MOE_INIT_ROUTING_QUANT_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeInitRoutingQuantV2GetWorkspaceSize(
    const aclTensor *x, const aclTensor *expertIdx, const aclTensor *scaleOptional, const aclTensor *offsetOptional,
    int64_t activeNum, int64_t expertCapacity, int64_t expertNum, int64_t dropPadMode,
    int64_t expertTokensCountOrCumsumFlag, bool expertTokensBeforeCapacityFlag, int64_t quantMode,
    const aclTensor *expandedXOut, const aclTensor *expandedRowIdxOut,
    const aclTensor *expertTokensCountOrCumsumOutOptional, const aclTensor *expertTokensBeforeCapacityOutOptional,
    const aclTensor *dynamicQuantScaleOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeInitRoutingQuantV2(void *workspace, uint64_t workspaceSize,
                                                           aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_INIT_ROUTING_QUANT_V2_H_ */
