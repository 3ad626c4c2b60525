// test_aclnn_moe_finalize_routing_v2_grad.cpp - a sample in the shape of CANN's
// aclnn operator samples: runs aclnnMoeFinalizeRoutingV2Grad once and prints both gradients.
//
// Nothing here knows about moefr: it uses only CANN's headers and link names, so
// the same file builds against an Ascend toolkit or against a moefr install tree.
// Problem: R = 4 tokens, K = 2 experts per token, H = 8 hidden, E = 3 experts,
// dropPadMode 0 (dropless), with expandedX, scales, expertIdx and bias, all fp32.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"

#define CHECK_RET(cond, return_expr) \
    do {                             \
        if (!(cond)) {               \
            return_expr;             \
        }                            \
    } while (0)

#define LOG_PRINT(message, ...)         \
    do {                                \
        printf(message, ##__VA_ARGS__); \
    } while (0)

// Number of elements of a tensor of the given shape.
int64_t GetShapeSize(const std::vector<int64_t>& shape) {
    int64_t size = 1;
    for (int64_t dim : shape) {
        size *= dim;
    }
    return size;
}

// Brings up the runtime, selects the device and creates the stream the operator runs on.
int Init(int32_t deviceId, aclrtStream* stream) {
    auto ret = aclInit(nullptr);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
    return 0;
}

// Copies hostData to freshly allocated device memory and describes it as a
// contiguous ND tensor of the given shape (row-major strides).
template <typename T>
int CreateAclTensor(const std::vector<T>& hostData, const std::vector<int64_t>& shape, void** deviceAddr,
                    aclDataType dataType, aclTensor** tensor) {
    auto size = GetShapeSize(shape) * sizeof(T);
    auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);

    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) {
        strides[i] = shape[i + 1] * strides[i + 1];
    }
    *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, aclFormat::ACL_FORMAT_ND,
                              shape.data(), shape.size(), *deviceAddr);
    CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return -1);
    return 0;
}

// Copies a device result back to the host and prints it one row per line.
int PrintResult(const char* name, const std::vector<int64_t>& shape, void* deviceAddr) {
    std::vector<float> result(GetShapeSize(shape), 0);
    size_t bytes = result.size() * sizeof(float);
    auto ret = aclrtMemcpy(result.data(), bytes, deviceAddr, bytes, ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret);
              return ret);
    int64_t cols = shape.back();
    LOG_PRINT("%s (%ld x %ld):\n", name, static_cast<long>(shape[0]), static_cast<long>(cols));
    for (int64_t row = 0; row < shape[0]; row++) {
        LOG_PRINT("%s[%ld] =", name, static_cast<long>(row));
        for (int64_t col = 0; col < cols; col++) {
            LOG_PRINT(" %.6f", result[row * cols + col]);
        }
        LOG_PRINT("\n");
    }
    return 0;
}

int main() {
    // 1. Runtime, device and stream.
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = Init(deviceId, &stream);
    CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

    // 2. Inputs and outputs. expandedRowIdx[r * K + k] is the row of expandedX
    //    that token r's k-th expert produced (a permutation in dropless mode).
    const int64_t R = 4, K = 2, H = 8, E = 3;
    std::vector<int64_t> gradYShape = {R, H};
    std::vector<int64_t> expandedRowIdxShape = {R * K};
    std::vector<int64_t> expandedXShape = {R * K, H};
    std::vector<int64_t> scalesShape = {R, K};
    std::vector<int64_t> expertIdxShape = {R, K};
    std::vector<int64_t> biasShape = {E, H};
    std::vector<int64_t> gradExpandedXShape = {R * K, H};
    std::vector<int64_t> gradScalesShape = {R, K};

    std::vector<float> gradYHostData = {
        0.5f,  -1.0f, 1.5f,  2.0f,  -0.25f, 0.75f, 1.0f,  -2.0f,   // token 0
        1.0f,  0.5f,  -0.5f, 0.25f, 2.0f,   -1.5f, 0.0f,  1.25f,   // token 1
        -1.0f, 2.0f,  0.75f, -0.5f, 1.5f,   0.25f, -2.5f, 0.5f,    // token 2
        0.25f, 0.0f,  -1.25f, 1.0f, 0.5f,   2.0f,  -0.75f, -1.0f,  // token 3
    };
    std::vector<int32_t> expandedRowIdxHostData = {5, 2, 0, 7, 3, 6, 1, 4};
    std::vector<float> expandedXHostData = {
        1.0f,   0.5f,  -1.0f, 0.25f, 2.0f,  -0.5f, 1.5f,   0.0f,    //
        -0.5f,  1.0f,  0.75f, -2.0f, 0.5f,  1.25f, 0.0f,   1.0f,    //
        0.25f,  -1.5f, 1.0f,  0.5f,  -1.0f, 2.0f,  0.75f,  -0.25f,  //
        2.0f,   0.0f,  -0.5f, 1.5f,  0.25f, -1.0f, 0.5f,   0.75f,   //
        -1.25f, 0.75f, 0.5f,  1.0f,  -0.5f, 0.0f,  2.0f,   1.5f,    //
        0.5f,   2.0f,  -0.25f, 0.0f, 1.0f,  0.5f,  -1.5f,  1.0f,    //
        1.5f,   -1.0f, 0.0f,  0.75f, 0.25f, -0.5f, 1.0f,   2.0f,    //
        0.0f,   0.25f, 1.25f, -1.0f, 1.5f,  0.75f, -0.25f, 0.5f,    //
    };
    std::vector<float> scalesHostData = {0.75f, 0.25f, 0.25f, 0.75f, 0.625f, 0.375f, 0.875f, 0.125f};
    std::vector<int32_t> expertIdxHostData = {0, 2, 1, 0, 2, 1, 0, 1};
    std::vector<float> biasHostData = {
        0.5f,  0.0f,  -0.5f, 1.0f, 0.25f, 0.0f,  0.5f,  -1.0f,  //
        -1.0f, 0.25f, 0.5f,  0.0f, 0.75f, -0.5f, 0.0f,  0.25f,  //
        0.0f,  1.0f,  0.25f, 0.5f, -0.25f, 0.5f, -0.75f, 0.0f,  //
    };
    std::vector<float> gradExpandedXHostData(GetShapeSize(gradExpandedXShape), 0);
    std::vector<float> gradScalesHostData(GetShapeSize(gradScalesShape), 0);

    void* gradYDeviceAddr = nullptr;
    void* expandedRowIdxDeviceAddr = nullptr;
    void* expandedXDeviceAddr = nullptr;
    void* scalesDeviceAddr = nullptr;
    void* expertIdxDeviceAddr = nullptr;
    void* biasDeviceAddr = nullptr;
    void* gradExpandedXDeviceAddr = nullptr;
    void* gradScalesDeviceAddr = nullptr;
    aclTensor* gradY = nullptr;
    aclTensor* expandedRowIdx = nullptr;
    aclTensor* expandedX = nullptr;
    aclTensor* scales = nullptr;
    aclTensor* expertIdx = nullptr;
    aclTensor* bias = nullptr;
    aclTensor* gradExpandedX = nullptr;
    aclTensor* gradScales = nullptr;

    ret = CreateAclTensor(gradYHostData, gradYShape, &gradYDeviceAddr, aclDataType::ACL_FLOAT, &gradY);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(expandedRowIdxHostData, expandedRowIdxShape, &expandedRowIdxDeviceAddr,
                          aclDataType::ACL_INT32, &expandedRowIdx);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(expandedXHostData, expandedXShape, &expandedXDeviceAddr, aclDataType::ACL_FLOAT,
                          &expandedX);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(scalesHostData, scalesShape, &scalesDeviceAddr, aclDataType::ACL_FLOAT, &scales);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(expertIdxHostData, expertIdxShape, &expertIdxDeviceAddr, aclDataType::ACL_INT32,
                          &expertIdx);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(biasHostData, biasShape, &biasDeviceAddr, aclDataType::ACL_FLOAT, &bias);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(gradExpandedXHostData, gradExpandedXShape, &gradExpandedXDeviceAddr,
                          aclDataType::ACL_FLOAT, &gradExpandedX);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(gradScalesHostData, gradScalesShape, &gradScalesDeviceAddr, aclDataType::ACL_FLOAT,
                          &gradScales);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    // 3. Phase one: validate the descriptors and learn the workspace size.
    int64_t dropPadMode = 0;
    int64_t activeNum = 0;
    int64_t expertNum = E;
    int64_t expertCapacity = 0;
    uint64_t workspaceSize = 0;
    aclOpExecutor* executor = nullptr;
    ret = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(gradY, expandedRowIdx, expandedX, scales, expertIdx, bias,
                                                        dropPadMode, activeNum, expertNum, expertCapacity,
                                                        gradExpandedX, gradScales, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS,
              LOG_PRINT("aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize failed. ERROR: %d (%s)\n", ret,
                        aclGetRecentErrMsg());
              return ret);

    void* workspaceAddr = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }

    // Phase two: run on the stream; the executor is consumed by this call.
    ret = aclnnMoeFinalizeRoutingV2Grad(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS,
              LOG_PRINT("aclnnMoeFinalizeRoutingV2Grad failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
              return ret);

    // 4. Wait for the stream, then bring the gradients back.
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    ret = PrintResult("gradExpandedX", gradExpandedXShape, gradExpandedXDeviceAddr);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = PrintResult("gradScales", gradScalesShape, gradScalesDeviceAddr);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    // 5. Release tensors, device memory, the stream, the device and the runtime.
    aclDestroyTensor(gradY);
    aclDestroyTensor(expandedRowIdx);
    aclDestroyTensor(expandedX);
    aclDestroyTensor(scales);
    aclDestroyTensor(expertIdx);
    aclDestroyTensor(bias);
    aclDestroyTensor(gradExpandedX);
    aclDestroyTensor(gradScales);

    aclrtFree(gradYDeviceAddr);
    aclrtFree(expandedRowIdxDeviceAddr);
    aclrtFree(expandedXDeviceAddr);
    aclrtFree(scalesDeviceAddr);
    aclrtFree(expertIdxDeviceAddr);
    aclrtFree(biasDeviceAddr);
    aclrtFree(gradExpandedXDeviceAddr);
    aclrtFree(gradScalesDeviceAddr);
    if (workspaceSize > 0) {
        aclrtFree(workspaceAddr);
    }
    aclrtDestroyStream(stream);
    aclrtResetDevice(deviceId);
    aclFinalize();
    return 0;
}
