/* aclnnop/aclnn_dynamic_quant_v2.h - DynamicQuantV2, ops-nn quant/dynamic_quant_v2:
 * per-token int8 / int4 quantisation, symmetric (offsetOut NULL) or asymmetric,
 * with smooth scales chosen per row by a cumulative group index (MoE experts).
 *
 *   v = x * smooth[g(r)], g(r) = the first g with groupIndexOptional[g] > r
 *   symmetric:  scale = max|v| / 127, yOut = round(v / scale)
 *   asymmetric: scale = (max v - min v) / 255, offset = 127 - max v / scale,
 *               yOut = round(v / scale + offset)
 * (int4: 7 and 15), half to even, saturating. dstType is not read: yOut's
 * dtype decides (as in ops-nn). Shapes as V1; smoothScalesOptional (E, H)
 * with a 1-D groupIndexOptional of E (1..1024) INT32/INT64 entries; offsetOut
 * scaleOut's shape. A row no group covers is 161002 in phase 2 (CANN would
 * read past smoothScalesOptional). SPEC 11; docs/CANN_COMPAT.md, "DynamicQuant". */
#ifndef ACLNN_DYNAMIC_QUANT_V2_H_
#define ACLNN_DYNAMIC_QUANT_V2_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicQuantV2GetWorkspaceSize(
    const aclTensor *x, const aclTensor *smoothScalesOptional, const aclTensor *groupIndexOptional, int64_t dstType,
    const aclTensor *yOut, const aclTensor *scaleOut, const aclTensor *offsetOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicQuantV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_DYNAMIC_QUANT_V2_H_ */
