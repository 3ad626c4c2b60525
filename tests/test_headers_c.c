/* test_headers_c.c - the public headers as a C11 program sees them (built with
 * -std=c11 -Wall -Wextra -Werror -pedantic): SPEC section 2 values and the exact signatures. */
#include "acl/acl.h"
#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "moefr/moefr.h"
/* twice: the include guards hold */
#include "acl/acl.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"

#include <stdio.h>
#include <string.h>

_Static_assert(ACL_DT_UNDEFINED == -1 && ACL_FLOAT == 0 && ACL_FLOAT16 == 1 && ACL_INT8 == 2 && ACL_INT32 == 3 &&
                   ACL_UINT8 == 4 && ACL_INT16 == 6 && ACL_UINT16 == 7 && ACL_UINT32 == 8 && ACL_INT64 == 9 &&
                   ACL_UINT64 == 10 && ACL_DOUBLE == 11 && ACL_BOOL == 12 && ACL_STRING == 13 &&
                   ACL_COMPLEX64 == 16 && ACL_COMPLEX128 == 17 && ACL_BF16 == 27 && ACL_INT4 == 29 &&
                   ACL_UINT1 == 30 && ACL_COMPLEX32 == 33,
               "aclDataType values");
_Static_assert(ACL_FORMAT_UNDEFINED == -1 && ACL_FORMAT_NCHW == 0 && ACL_FORMAT_NHWC == 1 && ACL_FORMAT_ND == 2,
               "aclFormat values");
_Static_assert(ACL_MEM_MALLOC_HUGE_FIRST == 0 && ACL_MEM_MALLOC_HUGE_ONLY == 1 && ACL_MEM_MALLOC_NORMAL_ONLY == 2,
               "aclrtMemMallocPolicy values");
_Static_assert(ACL_MEMCPY_HOST_TO_HOST == 0 && ACL_MEMCPY_HOST_TO_DEVICE == 1 && ACL_MEMCPY_DEVICE_TO_HOST == 2 &&
                   ACL_MEMCPY_DEVICE_TO_DEVICE == 3,
               "aclrtMemcpyKind values");
_Static_assert(ACLNN_SUCCESS == 0 && ACLNN_ERR_PARAM_NULLPTR == 161001 && ACLNN_ERR_PARAM_INVALID == 161002 &&
                   ACLNN_ERR_RUNTIME_ERROR == 361001 && ACLNN_ERR_INNER == 561000 &&
                   ACLNN_ERR_INNER_INFERSHAPE_ERROR == 561001 && ACLNN_ERR_INNER_TILING_ERROR == 561002 &&
                   ACLNN_ERR_INNER_CREATE_EXECUTOR == 561101 && ACLNN_ERR_INNER_NULLPTR == 561103,
               "aclnnStatus values");
/* typedefs of SPEC section 2 (a wrong one is a redefinition error) */
typedef int aclError;
typedef int32_t aclnnStatus;
typedef void *aclrtStream;
typedef struct aclTensor aclTensor;
typedef struct aclOpExecutor aclOpExecutor;

/* Each declaration must have exactly SPEC's type: initialising a pointer of
 * that type from the function is a constraint violation otherwise (-Werror). */
static aclError (*const p_init)(const char *) = aclInit;
static aclError (*const p_fin)(void) = aclFinalize;
static aclError (*const p_set)(int32_t) = aclrtSetDevice;
static aclError (*const p_reset)(int32_t) = aclrtResetDevice;
static aclError (*const p_get)(int32_t *) = aclrtGetDevice;
static aclError (*const p_cs)(aclrtStream *) = aclrtCreateStream;
static aclError (*const p_ds)(aclrtStream) = aclrtDestroyStream;
static aclError (*const p_ss)(aclrtStream) = aclrtSynchronizeStream;
static aclError (*const p_malloc)(void **, size_t, aclrtMemMallocPolicy) = aclrtMalloc;
static aclError (*const p_mhost)(void **, size_t) = aclrtMallocHost;
static aclError (*const p_free)(void *) = aclrtFree;
static aclError (*const p_fhost)(void *) = aclrtFreeHost;
static aclError (*const p_memcpy)(void *, size_t, const void *, size_t, aclrtMemcpyKind) = aclrtMemcpy;
static aclError (*const p_memset)(void *, size_t, int32_t, size_t) = aclrtMemset;
static const char *(*const p_msg)(void) = aclGetRecentErrMsg;
static aclTensor *(*const p_ct)(const int64_t *, uint64_t, aclDataType, const int64_t *, int64_t, aclFormat,
                                const int64_t *, uint64_t, void *) = aclCreateTensor;
static aclnnStatus (*const p_dt)(const aclTensor *) = aclDestroyTensor;
static aclnnStatus (*const p_rep)(aclOpExecutor *) = aclSetAclOpExecutorRepeatable;
static aclnnStatus (*const p_dex)(aclOpExecutor *) = aclDestroyAclOpExecutor;
static aclnnStatus (*const p_gws)(const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *,
                                  const aclTensor *, const aclTensor *, int64_t, int64_t, int64_t, int64_t,
                                  const aclTensor *, const aclTensor *, uint64_t *, aclOpExecutor **) =
    aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize;
static aclnnStatus (*const p_run)(void *, uint64_t, aclOpExecutor *, aclrtStream) = aclnnMoeFinalizeRoutingV2Grad;
static aclnnStatus (*const p_fws)(const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *,
                                  const aclTensor *, const aclTensor *, const aclTensor *, int64_t, const aclTensor *,
                                  uint64_t *, aclOpExecutor **) = aclnnMoeFinalizeRoutingV2GetWorkspaceSize;
static aclnnStatus (*const p_frun)(void *, uint64_t, aclOpExecutor *, aclrtStream) = aclnnMoeFinalizeRoutingV2;
static const char *(*const p_ver)(void) = moefrVersion;
static const char *(*const p_isa)(void) = moefrIsa;
static int (*const p_nt)(void) = moefrNumThreads;

int main(void) {
    const void *all[] = {(const void *)&p_init, (const void *)&p_fin, (const void *)&p_set, (const void *)&p_reset,
                         (const void *)&p_get, (const void *)&p_cs, (const void *)&p_ds, (const void *)&p_ss,
                         (const void *)&p_malloc, (const void *)&p_mhost, (const void *)&p_free,
                         (const void *)&p_fhost, (const void *)&p_memcpy, (const void *)&p_memset,
                         (const void *)&p_msg, (const void *)&p_ct, (const void *)&p_dt, (const void *)&p_rep,
                         (const void *)&p_dex, (const void *)&p_gws, (const void *)&p_run, (const void *)&p_fws,
                         (const void *)&p_frun, (const void *)&p_ver, (const void *)&p_isa, (const void *)&p_nt};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] == NULL) return 1;
    /* the library behind the headers answers */
    if (p_ver() == NULL || strlen(p_ver()) < 5 || p_nt() < 1 || p_isa() == NULL) return 1;
    if (p_set(9) != ACL_ERROR_INVALID_DEVICE || p_msg() == NULL) return 1;
    printf("test_headers_c: C11 view of the headers ok (moefr %s)\n", p_ver());
    return 0;
}
