/* aclnnop/aclnn_moe_init_routing.h - MoE init routing, the first version
 * (token permute by expert with a caller-given row index), CANN 8.1.RC1's
 * signature. SPEC 9.
 *
 * x is (N, H); rowIdx and expertIdx are (N, K), T = N*K entries, flat
 * position j = r*K + k. perm = the stable sort of the entries by expert id
 * (ascending, ties by smaller j); src[i] = rowIdx at perm[i] (CANN's
 * producer of rowIdx uses k*N + r, so src[i] names token src[i] % N).
 * - expandedExpertIdxOut[i] = expertIdx at perm[i] (the sorted ids);
 * - expandedRowIdxOut[src[i]] = i for every i (a src->dst map in column
 *   layout, k*N + r, as aclnnMoeFinalizeRouting reads it); when rowIdx names
 *   a value twice the larger i wins, and entries it never names are 0;
 * - expandedXOut[i] = x[src[i] % N] for i < min(N, activeNum) * K, bit for bit.
 * rowIdx values must lie in [0, T) (CANN would write expandedRowIdxOut out
 * of bounds): others are ACLNN_ERR_PARAM_INVALID (161002) in phase 2 with
 * every output untouched; MOEFR_STRICT=1 also rejects a value named twice.
 * Expert ids may be any int32 (they are only sorted); ids whose spread
 * max - min reaches 2^31 are 161002 (the sort takes 31-bit keys).
 *
 * Dtypes (every product): x = expandedXOut FLOAT16, BFLOAT16 or FLOAT;
 * rowIdx, expertIdx and the index outputs INT32; ND; outputs contiguous;
 * inputs may be strided views. Phase 1: 161001 a NULL tensor, workspaceSize
 * or executor; 161002 dtype/format; 561002 CANN's tiling checks: x 2-D,
 * rowIdx 2-D and the shape of expertIdx, x dim0 = expertIdx dim0,
 * activeNum >= 0, expandedXOut 2-D (min(N, activeNum) * K, H), both index
 * outputs 1-D of T entries (docs/CANN_COMPAT.md). All outputs empty:
 * success with workspace 0. */
#ifndef MOEFR_ACLNNOP_MOE_INIT_ROUTING_H_
#define MOEFR_ACLNNOP_MOE_INIT_ROUTING_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeInitRoutingGetWorkspaceSize(const aclTensor *x, const aclTensor *rowIdx,
                                                                    const aclTensor *expertIdx, int64_t activeNum,
                                                                    const aclTensor *expandedXOut,
                                                                    const aclTensor *expandedRowIdxOut,
                                                                    const aclTensor *expandedExpertIdxOut,
                                                                    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeInitRouting(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_INIT_ROUTING_H_ */
