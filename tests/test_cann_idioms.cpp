// test_cann_idioms.cpp - C++ the way CANN programs write it compiles and runs
// against moefr's headers: scoped enum names through the typedef
// (aclDataType::ACL_FLOAT), elaborated enum types (enum aclrtMemcpyKind),
// ACL_ERROR_NONE / ACL_SUCCESS as static const int (usable in constant
// expressions and switch cases in C++), getter arrays released with delete[],
// std::vector-built tensors with nullptr data, aclnnInit/aclnnFinalize.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            std::fprintf(stderr, "test_cann_idioms: FAIL at %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, \
                         aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "no message");  \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

static_assert(ACL_ERROR_NONE == 0 && ACL_SUCCESS == 0, "success codes");
static_assert(ACL_ERROR_INVALID_PARAM == 100000 && ACL_ERROR_RT_CONTEXT_NULL == 107002 &&
                  ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID == 107006 && ACL_ERROR_GE_PARAM_INVALID == 145000U,
              "codes are constant expressions");
static_assert(aclDataType::ACL_COMPLEX32 == 33 && aclDataType::ACL_INT4 == 29 && aclFormat::ACL_FORMAT_NCL == 47,
              "scoped names");
static_assert(ACL_MEMCPY_DEFAULT == 4 && ACL_MEM_MALLOC_HUGE1G_ONLY_P2P == 7 && ACL_MEM_ACCESS_USER_SPACE_READONLY ==
                  0x100000,
              "runtime enums");

static const char *Describe(aclError e) {
    switch (e) {  // case labels need constant expressions: CANN's static const int are, in C++
    case ACL_ERROR_NONE: return "none";
    case ACL_ERROR_INVALID_PARAM: return "invalid param";
    case ACL_ERROR_RT_CONTEXT_NULL: return "no context";
    default: return "other";
    }
}

static aclError Copy(void *dst, size_t max, const void *src, size_t n, enum aclrtMemcpyKind kind) {
    return aclrtMemcpy(dst, max, src, n, kind);
}

int main() {
    CHECK(aclnnInit(nullptr) == ACLNN_SUCCESS);
    CHECK(aclInit(nullptr) == ACL_ERROR_NONE);
    // a new thread of a program has no context until it sets a device
    aclrtContext ctx = nullptr;
    aclError ret = aclrtGetCurrentContext(&ctx);
    CHECK(ret == ACL_ERROR_RT_CONTEXT_NULL && std::string(Describe(ret)) == "no context");
    CHECK(aclrtSetDevice(0) == ACL_SUCCESS);
    CHECK(aclrtCreateContext(&ctx, 0) == ACL_SUCCESS);
    CHECK(aclrtSetCurrentContext(ctx) == ACL_SUCCESS);
    aclrtStream stream = nullptr;
    CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS);

    // copies through the elaborated enum type, every kind
    std::vector<uint16_t> src(37), dst(37, 0);
    for (size_t i = 0; i < src.size(); i++) src[i] = aclFloatToFloat16(static_cast<float>(i) - 18.5f);
    for (int k = ACL_MEMCPY_HOST_TO_HOST; k <= ACL_MEMCPY_INTER_DEVICE_TO_DEVICE; k++) {
        std::fill(dst.begin(), dst.end(), 0xFFFF);
        enum aclrtMemcpyKind kind = static_cast<aclrtMemcpyKind>(k);
        CHECK(Copy(dst.data(), dst.size() * 2, src.data(), src.size() * 2, kind) == ACL_SUCCESS);
        for (size_t i = 0; i < src.size(); i++)
            CHECK(aclFloat16ToFloat(dst[i]) == static_cast<float>(i) - 18.5f);
    }
    ret = Copy(dst.data(), 2, src.data(), 4, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK(std::string(Describe(ret)) == "invalid param");

    // tensors with nullptr data, their getters, arrays released with delete[]
    std::vector<int64_t> shape = {3, 5};
    aclTensor *t = aclCreateTensor(shape.data(), shape.size(), aclDataType::ACL_BF16, nullptr, 0,
                                   aclFormat::ACL_FORMAT_ND, shape.data(), shape.size(), nullptr);
    CHECK(t != nullptr);
    int64_t *viewDims = nullptr;
    uint64_t viewDimsNum = 0;
    CHECK(aclGetViewShape(t, &viewDims, &viewDimsNum) == ACLNN_SUCCESS);
    CHECK(viewDimsNum == 2 && viewDims[0] == 3 && viewDims[1] == 5);
    int64_t *strides = nullptr;
    uint64_t stridesNum = 0;
    CHECK(aclGetViewStrides(t, &strides, &stridesNum) == ACLNN_SUCCESS);
    CHECK(stridesNum == 2 && strides[0] == 5 && strides[1] == 1);
    int64_t *storageDims = nullptr;
    uint64_t storageDimsNum = 0;
    CHECK(aclGetStorageShape(t, &storageDims, &storageDimsNum) == ACLNN_SUCCESS);
    CHECK(storageDimsNum == 2 && storageDims[0] == 3 && storageDims[1] == 5);
    delete[] viewDims;
    delete[] strides;
    delete[] storageDims;
    aclDataType dataType = aclDataType::ACL_DT_UNDEFINED;
    CHECK(aclGetDataType(t, &dataType) == ACLNN_SUCCESS && dataType == aclDataType::ACL_BF16);

    // the objects samples build for operator attributes
    std::vector<int64_t> perm = {1, 0};
    aclIntArray *permArray = aclCreateIntArray(perm.data(), perm.size());
    float alphaValue = 1.0f;
    aclScalar *alpha = aclCreateScalar(&alphaValue, aclDataType::ACL_FLOAT);
    std::vector<aclTensor *> list = {t};
    aclTensorList *tensorList = aclCreateTensorList(list.data(), list.size());
    CHECK(permArray != nullptr && alpha != nullptr && tensorList != nullptr);
    uint64_t size = 0;
    CHECK(aclGetTensorListSize(tensorList, &size) == ACLNN_SUCCESS && size == 1);
    CHECK(aclDestroyIntArray(permArray) == ACLNN_SUCCESS);
    CHECK(aclDestroyScalar(alpha) == ACLNN_SUCCESS);
    CHECK(aclDestroyTensorList(tensorList) == ACLNN_SUCCESS);  // releases t too

    // events around nothing: 0 ms or more, a real measurement
    aclrtEvent start = nullptr, end = nullptr;
    CHECK(aclrtCreateEvent(&start) == ACL_SUCCESS && aclrtCreateEvent(&end) == ACL_SUCCESS);
    CHECK(aclrtRecordEvent(start, stream) == ACL_SUCCESS && aclrtRecordEvent(end, stream) == ACL_SUCCESS);
    float ms = -1.0f;
    CHECK(aclrtEventElapsedTime(&ms, start, end) == ACL_SUCCESS && ms >= 0.0f && ms < 1000.0f);
    CHECK(aclrtDestroyEvent(start) == ACL_SUCCESS && aclrtDestroyEvent(end) == ACL_SUCCESS);

    CHECK(aclrtDestroyStream(stream) == ACL_SUCCESS);
    CHECK(aclrtDestroyContext(ctx) == ACL_SUCCESS);
    CHECK(aclrtResetDevice(0) == ACL_SUCCESS);
    CHECK(aclFinalize() == ACL_SUCCESS);
    CHECK(aclnnFinalize() == ACLNN_SUCCESS);
    std::printf("test_cann_idioms: ok\n");
    return 0;
}
