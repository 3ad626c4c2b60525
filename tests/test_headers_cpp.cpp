// test_headers_cpp.cpp - the public headers as a C++11 program (CANN's samples are
// C++) sees them, built with -std=c++11 -Wall -Wextra -Werror -pedantic: values, exact types, C linkage.
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
#include "aclnnop/aclnn_swi_glu.h"
#include "aclnnop/aclnn_swi_glu_grad.h"
#include "aclnnop/aclnn_dynamic_quant.h"
#include "aclnnop/aclnn_dynamic_quant_v2.h"
#include "aclnnop/aclnn_dynamic_quant_v3.h"
#include "aclnnop/aclnn_dynamic_quant_v4.h"
#include "aclnnop/aclnn_trans_quant_param.h"
#include "aclnnop/aclnn_trans_quant_param_v2.h"
#include "aclnnop/aclnn_trans_quant_param_v3.h"
#include "aclnnop/aclnn_dequant_swiglu_quant.h"
#include "aclnnop/aclnn_dequant_swiglu_quant_v2.h"
#include "aclnnop/aclnn_grouped_matmul.h"
#include "aclnnop/aclnn_grouped_matmul_v2.h"
#include "aclnnop/aclnn_grouped_matmul_v3.h"
#include "aclnnop/aclnn_grouped_matmul_v4.h"
#include "aclnnop/aclnn_grouped_matmul_v5.h"
#include "aclnnop/aclnn_grouped_matmul_add.h"
#include "aclnnop/aclnn_grouped_matmul_add_v2.h"
#include "aclnnop/aclnn_moe_re_routing.h"
#include "aclnnop/aclnn_moe_init_routing_v3.h"
#include "aclnnop/aclnn_moe_init_routing_quant.h"
#include "aclnnop/aclnn_moe_init_routing_quant_v2.h"
#include "aclnnop/aclnn_moe_token_permute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_routing_map_grad.h"
#include "aclnnop/aclnn_moe_token_permute_with_ep.h"
#include "aclnnop/aclnn_moe_token_permute_with_ep_grad.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_ep.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_ep_grad.h"
#include "aclnnop/aclnn_moe_gating_top_k.h"
#include "aclnnop/aclnn_moe_fused_topk.h"
#include "moefr/moefr.h"
#include "acl/acl.h"

#include <cstdio>
#include <cstring>
#include <type_traits>

#include "host_api_signatures.h"
#include "hccl_signatures.h"

static_assert(ACL_FLOAT == 0 && ACL_FLOAT16 == 1 && ACL_INT32 == 3 && ACL_BF16 == 27 && ACL_DT_UNDEFINED == -1,
              "aclDataType values");
static_assert(ACL_FORMAT_ND == 2 && ACL_FORMAT_UNDEFINED == -1, "aclFormat values");
static_assert(ACLNN_ERR_PARAM_NULLPTR == 161001 && ACLNN_ERR_PARAM_INVALID == 161002 &&
                  ACLNN_ERR_INNER_TILING_ERROR == 561002 && ACLNN_ERR_INNER_NULLPTR == 561103,
              "aclnnStatus values");
static_assert(ACL_ERROR_INVALID_PARAM == 100000 && ACL_ERROR_INVALID_DEVICE == 200002, "aclError values");
static_assert(std::is_same<aclError, int>::value, "aclError is int");
static_assert(std::is_same<aclnnStatus, int32_t>::value, "aclnnStatus is int32_t");
static_assert(std::is_same<aclrtStream, void *>::value, "aclrtStream is void *");

#define SAME_TYPE(fn, type) static_assert(std::is_same<decltype(&fn), type>::value, #fn " has SPEC's signature")
SAME_TYPE(aclInit, aclError (*)(const char *));
SAME_TYPE(aclFinalize, aclError (*)());
SAME_TYPE(aclrtSetDevice, aclError (*)(int32_t));
SAME_TYPE(aclrtResetDevice, aclError (*)(int32_t));
SAME_TYPE(aclrtGetDevice, aclError (*)(int32_t *));
SAME_TYPE(aclrtCreateStream, aclError (*)(aclrtStream *));
SAME_TYPE(aclrtDestroyStream, aclError (*)(aclrtStream));
SAME_TYPE(aclrtSynchronizeStream, aclError (*)(aclrtStream));
SAME_TYPE(aclrtMalloc, aclError (*)(void **, size_t, aclrtMemMallocPolicy));
SAME_TYPE(aclrtMallocHost, aclError (*)(void **, size_t));
SAME_TYPE(aclrtFree, aclError (*)(void *));
SAME_TYPE(aclrtFreeHost, aclError (*)(void *));
SAME_TYPE(aclrtMemcpy, aclError (*)(void *, size_t, const void *, size_t, aclrtMemcpyKind));
SAME_TYPE(aclrtMemset, aclError (*)(void *, size_t, int32_t, size_t));
SAME_TYPE(aclGetRecentErrMsg, const char *(*)());
SAME_TYPE(aclCreateTensor, aclTensor *(*)(const int64_t *, uint64_t, aclDataType, const int64_t *, int64_t, aclFormat,
                                           const int64_t *, uint64_t, void *));
SAME_TYPE(aclDestroyTensor, aclnnStatus (*)(const aclTensor *));
SAME_TYPE(aclSetAclOpExecutorRepeatable, aclnnStatus (*)(aclOpExecutor *));
SAME_TYPE(aclDestroyAclOpExecutor, aclnnStatus (*)(aclOpExecutor *));
SAME_TYPE(aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *,
                          const aclTensor *, int64_t, int64_t, int64_t, int64_t, const aclTensor *, const aclTensor *,
                          uint64_t *, aclOpExecutor **));
SAME_TYPE(aclnnMoeFinalizeRoutingV2Grad, aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream));
SAME_TYPE(aclnnMoeFinalizeRoutingV2GetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *,
                          const aclTensor *, const aclTensor *, int64_t, const aclTensor *, uint64_t *,
                          aclOpExecutor **));
SAME_TYPE(aclnnMoeFinalizeRoutingV2, aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream));
// the first-version routing pair (issue 15)
SAME_TYPE(aclnnMoeInitRoutingGetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *, int64_t, const aclTensor *,
                          const aclTensor *, const aclTensor *, uint64_t *, aclOpExecutor **));
SAME_TYPE(aclnnMoeInitRouting, aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream));
SAME_TYPE(aclnnMoeFinalizeRoutingGetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *,
                          const aclTensor *, const aclTensor *, const aclTensor *, uint64_t *, aclOpExecutor **));
SAME_TYPE(aclnnMoeFinalizeRouting, aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream));
SAME_TYPE(moefrVersion, const char *(*)());
SAME_TYPE(moefrIsa, const char *(*)());
SAME_TYPE(moefrNumThreads, int (*)());
// issue 15: MoeGatingTopKSoftmax(V2)
SAME_TYPE(aclnnMoeGatingTopKSoftmaxGetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, int64_t, const aclTensor *, const aclTensor *,
                          const aclTensor *, uint64_t *, aclOpExecutor **));
SAME_TYPE(aclnnMoeGatingTopKSoftmax, aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream));
SAME_TYPE(aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, int64_t, int64_t, bool, const aclTensor *,
                          const aclTensor *, const aclTensor *, uint64_t *, aclOpExecutor **));
SAME_TYPE(aclnnMoeGatingTopKSoftmaxV2, aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream));
SAME_TYPE(aclnnMoeInitRoutingV3GetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *, int64_t, int64_t,
                          int64_t, int64_t, int64_t, bool, int64_t, const aclIntArray *, int64_t, const aclTensor *,
                          const aclTensor *, const aclTensor *, const aclTensor *, uint64_t *, aclOpExecutor **));
SAME_TYPE(aclnnMoeInitRoutingV3, aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream));
// issue 22: MoeInitRoutingQuant (V1, V2)
SAME_TYPE(aclnnMoeInitRoutingQuantGetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *, int64_t, double, double,
                          const aclTensor *, const aclTensor *, const aclTensor *, uint64_t *, aclOpExecutor **));
SAME_TYPE(aclnnMoeInitRoutingQuant, aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream));
SAME_TYPE(aclnnMoeInitRoutingQuantV2GetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *, int64_t, int64_t,
                          int64_t, int64_t, int64_t, bool, int64_t, const aclTensor *, const aclTensor *,
                          const aclTensor *, const aclTensor *, const aclTensor *, uint64_t *, aclOpExecutor **));
SAME_TYPE(aclnnMoeInitRoutingQuantV2, aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream));
// issue 12: every host-API function with CANN 8.1.RC1's exact type (decltype does not odr-use)
#define SAME_TYPE_X(fn, type) SAME_TYPE(fn, type);
SAME_TYPE(aclnnMoeTokenPermuteWithEpGetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *, const aclIntArray *, int64_t, bool,
                          const aclTensor *, const aclTensor *, const aclTensor *, uint64_t *, aclOpExecutor **));
SAME_TYPE(aclnnMoeTokenPermuteWithEpGradGetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *, int64_t, const aclIntArray *, bool,
                          const aclTensor *, const aclTensor *, uint64_t *, aclOpExecutor **));
SAME_TYPE(aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *, int64_t, const aclIntArray *, bool,
                          const aclIntArray *, const aclTensor *, uint64_t *, aclOpExecutor **));
SAME_TYPE(aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize,
          aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *, const aclTensor *, bool,
                          const aclIntArray *, const aclIntArray *, int64_t, const aclTensor *, const aclTensor *,
                          uint64_t *, aclOpExecutor **));
SAME_TYPE(aclnnMoeTokenPermuteWithEp, aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream));
SAME_TYPE(aclnnMoeTokenUnpermuteWithEpGrad, aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream));
MOEFR_HOST_API_SIGNATURES(SAME_TYPE_X)
static_assert(ACL_ERROR_NONE == 0 && ACL_SUCCESS == 0 && ACL_ERROR_STORAGE_OVER_LIMIT == 300000 &&
                  ACL_ERROR_PROFILING_FAILURE == 500005 && ACL_ERROR_INVALID_BUNDLE_MODEL_ID == 148053,
              "aclError values (static const int: constant expressions in C++)");
static_assert(std::is_same<decltype(ACL_ERROR_NONE), const int>::value, "declared as static const int");
static_assert(std::is_same<decltype(ACL_ERROR_GE_PARAM_INVALID), const uint32_t>::value, "GE codes: uint32_t");
static_assert(aclDataType::ACL_COMPLEX32 == 33 && aclDataType::ACL_UINT1 == 30 && aclFormat::ACL_FORMAT_NC == 35,
              "scoped access through the typedef");
static_assert(std::is_same<aclrtContext, void *>::value && std::is_same<aclrtEvent, void *>::value &&
                  std::is_same<aclFloat16, uint16_t>::value,
              "handle typedefs");
static_assert(std::is_same<enum aclrtMemcpyKind, aclrtMemcpyKind>::value &&
                  std::is_same<enum aclrtMemMallocPolicy, aclrtMemMallocPolicy>::value &&
                  std::is_same<enum aclrtEventRecordedStatus, aclrtEventRecordedStatus>::value,
              "tagged enums");

int main() {
    if (!hccl_sigs_ok()) return 1; // HCCL's names with C linkage and CANN's types
    // calls in the style of CANN's samples: this links only if the names have C linkage
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
    aclrtStream stream = nullptr;
    if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 1;
    float gy[2] = {1.0f, 2.0f}, gx[2] = {0, 0}, gs[1] = {0};
    int32_t idx[1] = {0};
    int64_t dgy[2] = {1, 2}, didx[1] = {1}, dgs[2] = {1, 1};
    aclTensor *tgy = aclCreateTensor(dgy, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dgy, 2, gy);
    aclTensor *tidx = aclCreateTensor(didx, 1, ACL_INT32, nullptr, 0, ACL_FORMAT_ND, didx, 1, idx);
    aclTensor *tgx = aclCreateTensor(dgy, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dgy, 2, gx);
    aclTensor *tgs = aclCreateTensor(dgs, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dgs, 2, gs);
    uint64_t wsSize = 0;
    aclOpExecutor *executor = nullptr;
    if (aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(tgy, tidx, nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 0, tgx,
                                                      tgs, &wsSize, &executor) != ACLNN_SUCCESS)
        return 1;
    void *ws = nullptr;
    if (wsSize > 0 && aclrtMalloc(&ws, wsSize, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
    if (aclnnMoeFinalizeRoutingV2Grad(ws, wsSize, executor, stream) != ACLNN_SUCCESS) return 1;
    if (aclrtSynchronizeStream(stream) != ACL_SUCCESS || gx[0] != 1.0f || gx[1] != 2.0f) return 1;
    if (ws) aclrtFree(ws);
    aclDestroyTensor(tgy);
    aclDestroyTensor(tidx);
    aclDestroyTensor(tgx);
    aclDestroyTensor(tgs);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    std::printf("test_headers_cpp: C++11 view of the headers ok (moefr %s)\n", moefrVersion());
    return 0;
}
