/* aclnnop/aclnn_moe_re_routing.h - expert-parallel re-routing: the tokens a
 * rank received from every rank (rank-major: rank 0's tokens for experts
 * 0..E-1, then rank 1's, ...) put in expert-major order. CANN generates
 * this entry point from moe_re_routing_def.cpp (no op_api source); the
 * parameter names follow its generator (optional inputs ...Optional,
 * outputs ...Out). SPEC 9.
 *
 * tokens (A, H), expertTokenNumPerRank (N, E): block (r, e) holds c[r][e]
 * rows; it starts at src = sum of the blocks before it in rank-major order
 * and goes to dst = sum of the blocks before it in expert-major order:
 *   permuteTokensOut[dst + i] = tokens[src + i]          (bit for bit)
 *   permutePerTokenScalesOut row dst + i = perTokenScalesOptional row src + i
 *   permuteTokenIdxOut[dst + i] = src + i   (idxType 0, gather index)
 *   permuteTokenIdxOut[src + i] = dst + i   (idxType 1, scatter; Ascend 950)
 *   expertTokenNumOut[e] = sum_r c[r][e]    (expertTokenNumType 1, count)
 * With S = the sum of all counts < A, moefr zero-fills the rows CANN leaves
 * unwritten (token, scale and index rows S..A-1). Without scales
 * permutePerTokenScalesOut is not written.
 *
 * Dtypes: tokens = permuteTokensOut FLOAT16, BFLOAT16 or INT8 (Ascend 950
 * also FLOAT8_E5M2 / FLOAT8_E4M3FN with FLOAT8_E8M0 scales); scales FLOAT;
 * counts = expertTokenNumOut INT32 or INT64; permuteTokenIdxOut INT32; ND;
 * outputs contiguous. Phase 1: 161001 NULL pointers; 161002 dtype/format;
 * 561002 the tiling checks (docs/CANN_COMPAT.md); all outputs empty:
 * success, workspace 0. Phase 2: a negative count, or counts adding up to
 * more rows than tokens (or scales) have, is 161002 with every output
 * untouched (CANN would read and write out of bounds). */
#ifndef MOEFR_ACLNNOP_MOE_RE_ROUTING_H_
#define MOEFR_ACLNNOP_MOE_RE_ROUTING_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeReRoutingGetWorkspaceSize(
    const aclTensor *tokens, const aclTensor *expertTokenNumPerRank, const aclTensor *perTokenScalesOptional,
    int64_t expertTokenNumType, int64_t idxType, const aclTensor *permuteTokensOut,
    const aclTensor *permutePerTokenScalesOut, const aclTensor *permuteTokenIdxOut, const aclTensor *expertTokenNumOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeReRouting(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                  aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNNOP_MOE_RE_ROUTING_H_ */
