/* test_headers_c.c - the public headers as a C11 program sees them (built with
 * -std=c11 -Wall -Wextra -Werror -pedantic): SPEC section 2 values and the exact signatures. */
#include "acl/acl.h"
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "acl/error_codes/ge_error_codes.h"
#include "acl/error_codes/rt_error_codes.h"
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "aclnnop/aclnn_moe_finalize_routing.h"
#include "aclnnop/aclnn_moe_init_routing.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax_v2.h"
#include "moefr/moefr.h"
/* twice: the include guards hold */
#include <stdlib.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_api_signatures.h"
#include "hccl_signatures.h"

_Static_assert(ACL_DT_UNDEFINED == -1 && ACL_FLOAT == 0 && ACL_FLOAT16 == 1 && ACL_INT8 == 2 && ACL_INT32 == 3 &&
                   ACL_UINT8 == 4 && ACL_INT16 == 6 && ACL_UINT16 == 7 && ACL_UINT32 == 8 && ACL_INT64 == 9 &&
                   ACL_UINT64 == 10 && ACL_DOUBLE == 11 && ACL_BOOL == 12 && ACL_STRING == 13 &&
                   ACL_COMPLEX64 == 16 && ACL_COMPLEX128 == 17 && ACL_BF16 == 27 && ACL_INT4 == 29 &&
                   ACL_UINT1 == 30 && ACL_COMPLEX32 == 33,
               "aclDataType values");
_Static_assert(ACL_HIFLOAT8 == 34 && ACL_FLOAT8_E5M2 == 35 && ACL_FLOAT8_E4M3FN == 36 && ACL_FLOAT8_E8M0 == 37 &&
                   ACL_FLOAT6_E3M2 == 38 && ACL_FLOAT6_E2M3 == 39 && ACL_FLOAT4_E2M1 == 40 && ACL_FLOAT4_E1M2 == 41,
               "aclDataType values of later CANN releases");
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
_Static_assert(ACL_FORMAT_NC == 35 && ACL_FORMAT_NCL == 47 && ACL_FRACTAL_Z_3D == 33, "aclFormat values (8.1.RC1)");
_Static_assert(ACL_MEM_MALLOC_HUGE_FIRST_P2P == 3 && ACL_MEM_MALLOC_HUGE_ONLY_P2P == 4 &&
                   ACL_MEM_MALLOC_NORMAL_ONLY_P2P == 5 && ACL_MEM_MALLOC_HUGE1G_ONLY == 6 &&
                   ACL_MEM_MALLOC_HUGE1G_ONLY_P2P == 7 && ACL_MEM_TYPE_LOW_BAND_WIDTH == 0x100 &&
                   ACL_MEM_TYPE_HIGH_BAND_WIDTH == 0x1000 && ACL_MEM_ACCESS_USER_SPACE_READONLY == 0x100000,
               "aclrtMemMallocPolicy values (8.1.RC1)");
_Static_assert(ACL_MEMCPY_DEFAULT == 4 && ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE == 5 &&
                   ACL_MEMCPY_INNER_DEVICE_TO_DEVICE == 6 && ACL_MEMCPY_INTER_DEVICE_TO_DEVICE == 7,
               "aclrtMemcpyKind values (8.1.RC1)");
_Static_assert(ACL_DEVICE == 0 && ACL_HOST == 1, "aclrtRunMode");
_Static_assert(ACL_EVENT_STATUS_COMPLETE == 0 && ACL_EVENT_STATUS_NOT_READY == 1 && ACL_EVENT_STATUS_RESERVED == 2 &&
                   ACL_EVENT_RECORDED_STATUS_NOT_READY == 0 && ACL_EVENT_RECORDED_STATUS_COMPLETE == 1 &&
                   ACL_EVENT_WAIT_STATUS_COMPLETE == 0 && ACL_EVENT_WAIT_STATUS_NOT_READY == 1 &&
                   ACL_EVENT_WAIT_STATUS_RESERVED == 0xFFFF,
               "event status enums");
_Static_assert(ACL_STREAM_STATUS_COMPLETE == 0 && ACL_STREAM_STATUS_NOT_READY == 1 &&
                   ACL_STREAM_STATUS_RESERVED == 0xFFFF,
               "aclrtStreamStatus");
_Static_assert(ACL_EVENT_SYNC == 1u && ACL_EVENT_CAPTURE_STREAM_PROGRESS == 2u && ACL_EVENT_TIME_LINE == 8u &&
                   ACL_EVENT_EXTERNAL == 0x20u && ACL_STREAM_FAST_LAUNCH == 1u && ACL_STREAM_FAST_SYNC == 2u,
               "flag bits");
_Static_assert(ACL_HBM_MEM_P2P_HUGE1G == 11 && ACL_PKG_NAME_DRIVER == 7 && ACL_MAJOR_VERSION == 1 &&
                   ACL_MINOR_VERSION == 13 && ACL_PATCH_VERSION == 0,
               "aclrtMemAttr, package names, version");
_Static_assert(ACL_RT_SUCCESS == 0 && ACL_ERROR_RT_PARAM_INVALID == 107000 && ACL_ERROR_RT_CONTEXT_NULL == 107002 &&
                   ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID == 107006 && ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL == 107007 &&
                   ACL_ERROR_RT_FEATURE_NOT_SUPPORT == 207000 && ACL_ERROR_RT_INTERNAL_ERROR == 507000 &&
                   ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED == 507903,
               "rt_error_codes.h");
_Static_assert(ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR == 561102 && ACLNN_ERR_INNER_STATIC_BLOCK_DIM_INVALID == 561119,
               "aclnnStatus values");
/* tagged enums: elaborated type names compile */
static enum aclrtMemcpyKind g_kind = ACL_MEMCPY_DEFAULT;
static enum aclrtMemMallocPolicy g_policy = ACL_MEM_MALLOC_HUGE1G_ONLY;
static enum aclDataType g_dtype = ACL_COMPLEX32;
static enum aclFormat g_format = ACL_FORMAT_NCL;
static enum aclrtRunMode g_mode = ACL_HOST;

/* The aclError codes are `static const int` as in CANN: not constant
 * expressions in C, so they are checked when the program runs. */
static const struct { const char *name; int got, want; } g_codes[] = {
    {"ACL_ERROR_NONE", ACL_ERROR_NONE, 0}, {"ACL_SUCCESS", ACL_SUCCESS, 0},
    {"ACL_ERROR_INVALID_PARAM", ACL_ERROR_INVALID_PARAM, 100000},
    {"ACL_ERROR_UNINITIALIZE", ACL_ERROR_UNINITIALIZE, 100001},
    {"ACL_ERROR_REPEAT_INITIALIZE", ACL_ERROR_REPEAT_INITIALIZE, 100002},
    {"ACL_ERROR_DUMP_NOT_RUN", ACL_ERROR_DUMP_NOT_RUN, 100045},
    {"ACL_ERROR_PROF_REPEAT_SUBSCRIBE", ACL_ERROR_PROF_REPEAT_SUBSCRIBE, 148046},
    {"ACL_ERROR_INVALID_BUNDLE_MODEL_ID", ACL_ERROR_INVALID_BUNDLE_MODEL_ID, 148053},
    {"ACL_ERROR_BAD_ALLOC", ACL_ERROR_BAD_ALLOC, 200000},
    {"ACL_ERROR_API_NOT_SUPPORT", ACL_ERROR_API_NOT_SUPPORT, 200001},
    {"ACL_ERROR_INVALID_DEVICE", ACL_ERROR_INVALID_DEVICE, 200002},
    {"ACL_ERROR_PROF_MODULES_UNSUPPORTED", ACL_ERROR_PROF_MODULES_UNSUPPORTED, 200007},
    {"ACL_ERROR_STORAGE_OVER_LIMIT", ACL_ERROR_STORAGE_OVER_LIMIT, 300000},
    {"ACL_ERROR_INTERNAL_ERROR", ACL_ERROR_INTERNAL_ERROR, 500000},
    {"ACL_ERROR_FAILURE", ACL_ERROR_FAILURE, 500001},
    {"ACL_ERROR_PROFILING_FAILURE", ACL_ERROR_PROFILING_FAILURE, 500005},
    {"ACL_ERROR_GE_PARAM_INVALID", (int)ACL_ERROR_GE_PARAM_INVALID, 145000},
    {"ACL_ERROR_GE_REDEPLOYING", (int)ACL_ERROR_GE_REDEPLOYING, 545602},
};

/* Every issue-12 function has CANN's exact type (_Generic does not evaluate
 * its operand, so the executor setters defined elsewhere are checked too). */
#define MOEFR_SIG_OK(fn, type) +_Generic(&fn, type: 1, default: 1000)
static const int g_sig_ok = 0 MOEFR_HOST_API_SIGNATURES(MOEFR_SIG_OK);
#define MOEFR_SIG_COUNT(fn, type) +1
static const int g_sig_count = 0 MOEFR_HOST_API_SIGNATURES(MOEFR_SIG_COUNT);

/* typedefs of SPEC section 2 (a wrong one is a redefinition error) */
typedef int aclError;
typedef int32_t aclnnStatus;
typedef void *aclrtStream;
typedef struct aclTensor aclTensor;
typedef struct aclOpExecutor aclOpExecutor;
typedef void *aclrtContext;
typedef void *aclrtEvent;
typedef uint16_t aclFloat16;
typedef struct aclScalar aclScalar;
typedef struct aclIntArray aclIntArray;
typedef struct aclFloatArray aclFloatArray;
typedef struct aclBoolArray aclBoolArray;
typedef struct aclTensorList aclTensorList;
typedef struct aclScalarList aclScalarList;

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
static const char *(*const p_soc)(void) = moefrSoc;
static int (*const p_nt)(void) = moefrNumThreads;
/* the first-version routing pair (issue 15) */
static aclnnStatus (*const p_ir1ws)(const aclTensor *, const aclTensor *, const aclTensor *, int64_t, const aclTensor *,
                                    const aclTensor *, const aclTensor *, uint64_t *, aclOpExecutor **) =
    aclnnMoeInitRoutingGetWorkspaceSize;
static aclnnStatus (*const p_ir1run)(void *, uint64_t, aclOpExecutor *, aclrtStream) = aclnnMoeInitRouting;
static aclnnStatus (*const p_fr1ws)(const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *,
                                    const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *,
                                    uint64_t *, aclOpExecutor **) = aclnnMoeFinalizeRoutingGetWorkspaceSize;
static aclnnStatus (*const p_fr1run)(void *, uint64_t, aclOpExecutor *, aclrtStream) = aclnnMoeFinalizeRouting;

/* issue 15: MoeGatingTopKSoftmax(V2) with CANN 8.1.RC1's exact types */
static aclnnStatus (*const p_g1ws)(const aclTensor *, const aclTensor *, int64_t, const aclTensor *,
                                   const aclTensor *, const aclTensor *, uint64_t *, aclOpExecutor **) =
    aclnnMoeGatingTopKSoftmaxGetWorkspaceSize;
static aclnnStatus (*const p_g1)(void *, uint64_t, aclOpExecutor *, aclrtStream) = aclnnMoeGatingTopKSoftmax;
static aclnnStatus (*const p_g2ws)(const aclTensor *, const aclTensor *, int64_t, int64_t, bool, const aclTensor *,
                                   const aclTensor *, const aclTensor *, uint64_t *, aclOpExecutor **) =
    aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize;
static aclnnStatus (*const p_g2)(void *, uint64_t, aclOpExecutor *, aclrtStream) = aclnnMoeGatingTopKSoftmaxV2;
static int gating_sigs_ok(void) {
    return p_g1ws != NULL && p_g1 != NULL && p_g2ws != NULL && p_g2 != NULL &&
           p_g1ws(NULL, NULL, 1, NULL, NULL, NULL, NULL, NULL) == ACLNN_ERR_PARAM_NULLPTR;
}

int main(void) {
    const void *all[] = {(const void *)&p_init, (const void *)&p_fin, (const void *)&p_set, (const void *)&p_reset,
                         (const void *)&p_get, (const void *)&p_cs, (const void *)&p_ds, (const void *)&p_ss,
                         (const void *)&p_malloc, (const void *)&p_mhost, (const void *)&p_free,
                         (const void *)&p_fhost, (const void *)&p_memcpy, (const void *)&p_memset,
                         (const void *)&p_msg, (const void *)&p_ct, (const void *)&p_dt, (const void *)&p_rep,
                         (const void *)&p_dex, (const void *)&p_gws, (const void *)&p_run, (const void *)&p_fws,
                         (const void *)&p_frun, (const void *)&p_ver, (const void *)&p_isa, (const void *)&p_nt,
                         (const void *)&p_soc};
    if (!gating_sigs_ok()) return 1;
    if (!hccl_sigs_ok()) return 1;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] == NULL) return 1;
    if (!p_ir1ws || !p_ir1run || !p_fr1ws || !p_fr1run) return 1;
    /* the library behind the headers answers */
    if (p_ver() == NULL || strlen(p_ver()) < 5 || p_nt() < 1 || p_isa() == NULL) return 1;
    {   /* MOEFR_SOC as the library read it */
        const char *soc = getenv("MOEFR_SOC");
        const char *want = soc != NULL && strcmp(soc, "ascend910b") == 0 ? "ascend910b" : "ascend950";
        if (strcmp(p_soc(), want) != 0) return 1;
    }
    if (p_set(9) != ACL_ERROR_INVALID_DEVICE || p_msg() == NULL) return 1;
    for (size_t i = 0; i < sizeof g_codes / sizeof g_codes[0]; i++)
        if (g_codes[i].got != g_codes[i].want) {
            printf("test_headers_c: %s = %d, want %d\n", g_codes[i].name, g_codes[i].got, g_codes[i].want);
            return 1;
        }
    if (g_sig_ok != g_sig_count) {
        printf("test_headers_c: %d of %d issue-12 signatures differ from CANN's\n", (g_sig_ok - g_sig_count) / 999,
               g_sig_count);
        return 1;
    }
    if (g_kind != 4 || g_policy != 6 || g_dtype != 33 || g_format != 47 || g_mode != 1) return 1;
    printf("test_headers_c: C11 view of the headers ok (moefr %s)\n", p_ver());
    return 0;
}
