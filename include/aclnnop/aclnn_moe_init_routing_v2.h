/* aclnnop/aclnn_moe_init_routing_v2.h - MoE init routing (token permute by
 * expert), CANN 8.1.RC1's signature. SPEC 9.
 *
 * T = N*K entries of expertIdx (N, K), or (N) with K = 1 (Ascend 950 only),
 * flat position j = r*K + k. perm = the stable sort of the entries by expert
 * id (ties by smaller j). expandedRowIdxOut[perm[i]] = i (a src->dst map in
 * row layout).
 * - dropPadMode 0 (dropless): expandedXOut[i] = x[perm[i] / K] for i < A,
 *   A = T when activeNum is 0, else min(activeNum, T) (Ascend 950 also takes
 *   activeNum < 0 as T + activeNum, clamped at 0). expertTokensCountOrCumsumFlag
 *   1: expertTokensCountOrCumsumOut[e] = entries with expert <= e; 2: entries
 *   with expert e (E = expertNum entries, counted over all T entries).
 * - dropPadMode 1 (drop/pad): expandedXOut is (E, C, H); an expert keeps its
 *   first C entries in sorted order, at rows e*C + s; the others get
 *   expandedRowIdxOut = -1; rows nobody fills are +0.0.
 *   expertTokensBeforeCapacityFlag: expertTokensBeforeCapacityOut[e] =
 *   entries with expert e, before the drop.
 * Rows are copied bit for bit. Expert ids must be >= 0, and < expertNum in
 * drop/pad mode or with a count flag: other values (CANN: undefined) are
 * ACLNN_ERR_PARAM_INVALID (161002) in phase 2 with every output untouched.
 *
 * Dtypes: x = expandedXOut FLOAT16, BFLOAT16 or FLOAT; expertIdx INT32 (and
 * INT64 on Ascend 950, the default; MOEFR_SOC=ascend910b: INT32 only); the
 * other outputs INT32. ND; outputs contiguous; inputs may be strided views.
 * Phase-1 codes: 161001 NULL x, expertIdx, expandedXOut, expandedRowIdxOut,
 * workspaceSize or executor; 161002 dtype/format; 561002 CANN's tiling checks
 * (docs/CANN_COMPAT.md). All outputs empty: success with workspace 0. */
#ifndef MOEFR_ACLNNOP_MOE_INIT_ROUTING_V2_H_
#define MOEFR_ACLNNOP_MOE_INIT_ROUTING_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeInitRoutingV2GetWorkspaceSize(
    const aclTensor *x, const aclTensor *expertIdx, int64_t activeNum, int64_t expertCapacity, int64_t expertNum,
    int64_t dropPadMode, int64_t expertTokensCountOrCumsumFlag, bool expertTokensBeforeCapacityFlag,
    const aclTensor *expandedXOut, const aclTensor *expandedRowIdxOut,
    const aclTensor *expertTokensCountOrCumsumOutOptional, const aclTensor *expertTokensBeforeCapacityOutOptional,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeInitRoutingV2(void *workspace, uint64_t workspaceSize,
                                                      aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_INIT_ROUTING_V2_H_ */
