/* aclnn/acl_meta.h - tensor descriptors (strided views over memory). */
#ifndef MOEFR_ACLNN_ACL_META_H_
#define MOEFR_ACLNN_ACL_META_H_

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t aclnnStatus;
typedef struct aclTensor aclTensor;

/* A view of viewDimsNum (<= 8) dimensions over tensorData. The element at
 * index (i0..in) lives at tensorData + (offset + sum ik*stride[k]) * elemsize.
 * stride NULL means row-major contiguous. storageDims describe the allocation;
 * every element the view can reach must lie inside it (either direction).
 * Returns NULL, with a message in aclGetRecentErrMsg, for negative dims, more
 * than 8 dims, a NULL array with a non-zero count, an unknown dtype or format,
 * a shape product that overflows int64, or a view outside its storage. */
ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                                               aclDataType dataType, const int64_t *stride,
                                               int64_t offset, aclFormat format,
                                               const int64_t *storageDims, uint64_t storageDimsNum,
                                               void *tensorData);
/* Releases a descriptor (not the memory it views). NULL is accepted; a pointer
 * that is not a live tensor returns ACLNN_ERR_PARAM_INVALID. */
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensor(const aclTensor *tensor);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_ACLNN_ACL_META_H_ */
