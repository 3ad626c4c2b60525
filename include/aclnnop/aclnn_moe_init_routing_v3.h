/* aclnnop/aclnn_moe_init_routing_v3.h - MoE init routing V3: token permute by
 * expert with an active expert range, two index layouts and optional int8
 * quantisation; ops-transformer's moe/moe_init_routing_v3 signature.
 *
 * T = N*K entries of expertIdx (N, K), flat position j = r*K + k; the range
 * [start, end) = activeExpertRangeOptional (exactly 2 values, 0 <= start <
 * end <= expertNum). perm = the stable sort of the entries by key: ids in the
 * range first (by id), then ids >= end (by id), then ids < start; ties by
 * smaller j. A = the number of ids in the range. No id is refused: ids outside
 * the range (negative, or >= expertNum, too) are not routed.
 * - dropPadMode 0: expandedXOut (T, H): row i < A = x[perm[i] / K]; rows past
 *   A are zeros (CANN leaves them unwritten). rowIdxType 0 (gather):
 *   expandedRowIdxOut[perm[i]] = i for i < A, -1 elsewhere; rowIdxType 1
 *   (scatter): expandedRowIdxOut[i] = perm[i] for every i < T.
 * - dropPadMode 1 (range [0, expertNum], rowIdxType 0, quantMode -1, count):
 *   expandedXOut (E, C, H); expert e keeps its first C entries at rows e*C + s,
 *   the others get index -1; rows nobody fills are zeros.
 * - expertTokensCountOrCumsumOut (INT64): type 0 the inclusive cumsum, 1 the
 *   count, over end - start experts; type 2 (expertNum, 2) rows [id, count] for
 *   the in-range experts with count > 0 in ascending id, then rows of 0.
 * - quantMode -1: rows copied bit for bit (INT8 x too); expandedScaleOut[i] =
 *   scaleOptional[row of i] when the (N) scale is given (else it is not written).
 *   quantMode 0 (static, scale and offset of shape (1)): fp16 arithmetic,
 *   out = sat_int8(rint(f16(f16(f16(x) * f16(scale)) + f16(offset))));
 *   expandedScaleOut is not written. quantMode 1 (dynamic): y = fp32(x), times
 *   the smooth scale row scaleOptional[expert - start] (shape (end - start, H))
 *   when given; expandedScaleOut[i] = max|y| / 127 (fp32), out = sat_int8(rint(y
 *   / that)) (0 for an all-zero row); with INT8 x neither expandedXOut nor
 *   expandedScaleOut is written (CANN's kernel skips them). rint: round half
 *   to even. Other quant modes (fp8, hifloat8, mx, int4): 561002.
 * Ascend 950 rules (default): activeNum must be -1 or T; expertTokensNumFlag
 * must be true. MOEFR_SOC=ascend910b (A2/A3): the range may be empty ([0,
 * expertNum]); activeNum 0/-1 means T rows of expandedXOut, else min(activeNum,
 * T) rows; a false flag leaves the counts unwritten; a (1, H) smooth scale
 * serves every expert; drop/pad may be quantised; INT8 x only with quant -1.
 *
 * Dtypes: x FLOAT16/BFLOAT16/FLOAT/INT8; expandedXOut x's dtype (quantMode
 * -1) or INT8; expertIdx and expandedRowIdxOut INT32; scale, offset and
 * expandedScaleOut FLOAT; expertTokensCountOrCumsumOut INT64. All four outputs
 * are required and contiguous; inputs may be strided views. Phase-1 codes:
 * 161001 NULL tensors, workspaceSize or executor; 161002 dtype/format;
 * 561002 CANN's tiling checks (docs/CANN_COMPAT.md). All outputs empty:
 * success with workspace 0. */
#ifndef MOEFR_ACLNNOP_MOE_INIT_ROUTING_V3_H_
#define MOEFR_ACLNNOP_MOE_INIT_ROUTING_V3_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeInitRoutingV3GetWorkspaceSize(
    const aclTensor *x, const aclTensor *expertIdx, const aclTensor *scaleOptional, const aclTensor *offsetOptional,
    int64_t activeNum, int64_t expertCapacity, int64_t expertNum, int64_t dropPadMode, int64_t expertTokensNumType,
    bool expertTokensNumFlag, int64_t quantMode, const aclIntArray *activeExpertRangeOptional, int64_t rowIdxType,
    const aclTensor *expandedXOut, const aclTensor *expandedRowIdxOut, const aclTensor *expertTokensCountOrCumsumOut,
    const aclTensor *expandedScaleOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeInitRoutingV3(void *workspace, uint64_t workspaceSize,
                                                      aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_INIT_ROUTING_V3_H_ */
