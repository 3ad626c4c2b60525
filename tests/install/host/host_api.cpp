// host_api.cpp - the host code CANN programs wrap around an aclnn call, written
// the way CANN's samples write it: runtime bring-up with a context, device
// queries, events timing an operator call, async copies and memsets on a
// stream, fp16 conversion. Only CANN headers and link names are used.
// Exit status 0 when every check holds; each failure prints one line.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
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

static int g_failures = 0;
#define EXPECT(cond, ...)                                       \
    do {                                                        \
        if (!(cond)) {                                          \
            LOG_PRINT("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            LOG_PRINT(__VA_ARGS__);                             \
            LOG_PRINT("\n");                                    \
            g_failures++;                                       \
        }                                                       \
    } while (0)

// aclInit, device 0, an explicit context made current, one stream.
static int Init(int32_t deviceId, aclrtContext* context, aclrtStream* stream) {
    auto ret = aclInit(nullptr);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateContext(context, deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateContext failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetCurrentContext(*context);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetCurrentContext failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
    return 0;
}

static void DeviceQueries(aclrtContext context) {
    uint32_t count = 0;
    EXPECT(aclrtGetDeviceCount(&count) == ACL_SUCCESS && count == 1, "count %u", count);
    aclrtRunMode mode = ACL_DEVICE;
    EXPECT(aclrtGetRunMode(&mode) == ACL_SUCCESS && mode == ACL_HOST, "mode %d", static_cast<int>(mode));
    const char* soc = aclrtGetSocName();
    EXPECT(soc != nullptr && std::strcmp(soc, "moefr-cpu") == 0, "soc %s", soc ? soc : "(null)");
    int32_t major = -1, minor = -1, patch = -1;
    EXPECT(aclrtGetVersion(&major, &minor, &patch) == ACL_SUCCESS && major == ACL_MAJOR_VERSION &&
               minor == ACL_MINOR_VERSION && patch == ACL_PATCH_VERSION,
           "version %d.%d.%d", major, minor, patch);
    aclCANNPackageVersion ver;
    EXPECT(aclsysGetCANNVersion(ACL_PKG_NAME_CANN, &ver) == ACL_SUCCESS && std::strcmp(ver.version, "8.1.RC1") == 0,
           "CANN version %s", ver.version);
    size_t freeMem = 0, totalMem = 0;
    EXPECT(aclrtGetMemInfo(ACL_HBM_MEM, &freeMem, &totalMem) == ACL_SUCCESS && totalMem > 0 && freeMem <= totalMem,
           "free %zu total %zu", freeMem, totalMem);
    aclrtContext current = nullptr;
    EXPECT(aclrtGetCurrentContext(&current) == ACL_SUCCESS && current == context, "current context %p", current);
    int32_t device = -1;
    EXPECT(aclrtGetDevice(&device) == ACL_SUCCESS && device == 0, "device %d", device);
}

// Poisoned destination; one async memset and two async copies on the stream,
// then a synchronisation with a timeout, as CANN's samples do.
static void AsyncCopies(aclrtStream stream) {
    const size_t n = 1003;  // not a multiple of any vector width
    std::vector<uint8_t> host(n), back(n, 0xEE);
    for (size_t i = 0; i < n; i++) host[i] = static_cast<uint8_t>(i * 7 + 3);
    void* dev = nullptr;
    EXPECT(aclrtMalloc(&dev, n, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "aclrtMalloc");
    if (dev == nullptr) return;
    EXPECT(aclrtMemsetAsync(dev, n, 0x5A, n, stream) == ACL_SUCCESS, "memset");
    EXPECT(aclrtMemcpyAsync(back.data(), n, dev, n, ACL_MEMCPY_DEVICE_TO_HOST, stream) == ACL_SUCCESS, "copy");
    EXPECT(aclrtSynchronizeStreamWithTimeout(stream, 1000) == ACL_SUCCESS, "sync");
    for (size_t i = 0; i < n; i++) EXPECT(back[i] == 0x5A, "memset byte %zu is 0x%02x", i, back[i]);
    EXPECT(aclrtMemcpyAsync(dev, n, host.data(), n, ACL_MEMCPY_HOST_TO_DEVICE, stream) == ACL_SUCCESS, "copy");
    EXPECT(aclrtMemcpyAsync(back.data(), n, dev, n, ACL_MEMCPY_DEFAULT, stream) == ACL_SUCCESS, "copy back");
    EXPECT(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "sync");
    EXPECT(std::memcmp(back.data(), host.data(), n) == 0, "round trip differs");
    aclrtStreamStatus status = ACL_STREAM_STATUS_NOT_READY;
    EXPECT(aclrtStreamQuery(stream, &status) == ACL_SUCCESS && status == ACL_STREAM_STATUS_COMPLETE, "status");
    EXPECT(aclrtMemcpyAsync(back.data(), n - 1, dev, n, ACL_MEMCPY_DEVICE_TO_HOST, stream) == ACL_ERROR_INVALID_PARAM,
           "count > destMax must fail");
    aclrtFree(dev);
}

// Events bracket a sleep: the elapsed time is real, at least the sleep and at
// most what a clock outside the two records measured.
static void EventTiming(aclrtStream stream) {
    aclrtEvent start = nullptr, end = nullptr;
    EXPECT(aclrtCreateEvent(&start) == ACL_SUCCESS, "create");
    EXPECT(aclrtCreateEventWithFlag(&end, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC) == ACL_SUCCESS, "create");
    auto outer0 = std::chrono::steady_clock::now();
    EXPECT(aclrtRecordEvent(start, stream) == ACL_SUCCESS, "record");
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    EXPECT(aclrtRecordEvent(end, stream) == ACL_SUCCESS, "record");
    auto outer1 = std::chrono::steady_clock::now();
    EXPECT(aclrtSynchronizeEvent(end) == ACL_SUCCESS, "sync");
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    EXPECT(aclrtQueryEventStatus(end, &st) == ACL_SUCCESS && st == ACL_EVENT_RECORDED_STATUS_COMPLETE, "status");
    float ms = -1.0f;
    EXPECT(aclrtEventElapsedTime(&ms, start, end) == ACL_SUCCESS, "elapsed");
    double outer = std::chrono::duration<double, std::milli>(outer1 - outer0).count();
    EXPECT(ms >= 25.0f && ms <= outer + 0.01, "elapsed %.3f ms, slept 25 ms, outer clock %.3f ms", ms, outer);
    LOG_PRINT("event timing: %.3f ms around a 25 ms sleep (outer clock %.3f ms)\n", ms, outer);
    EXPECT(aclrtEventElapsedTime(&ms, end, start) == ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL, "reversed");
    EXPECT(aclrtResetEvent(start, stream) == ACL_SUCCESS, "reset");
    EXPECT(aclrtEventElapsedTime(&ms, start, end) == ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "unrecorded start");
    EXPECT(aclrtStreamWaitEvent(stream, end) == ACL_SUCCESS, "wait");
    EXPECT(aclrtDestroyEvent(start) == ACL_SUCCESS && aclrtDestroyEvent(end) == ACL_SUCCESS, "destroy");
}

// An aclnn call timed with events: R = 5 tokens, K = 1, H = 9, no scales, so
// gradExpandedX[d] = gradY[r] for d = expandedRowIdx[r] (an exact copy).
static void TimedOperator(aclrtStream stream) {
    const int64_t R = 5, H = 9;
    std::vector<int64_t> gyShape = {R, H}, idxShape = {R}, gsShape = {R, 1};
    std::vector<float> gy(R * H);
    for (int64_t i = 0; i < R * H; i++) gy[i] = aclFloat16ToFloat(aclFloatToFloat16(0.25f * i - 3.0f));
    std::vector<int32_t> idx = {3, 0, 4, 1, 2};
    void *dGy = nullptr, *dIdx = nullptr, *dOut = nullptr, *dGs = nullptr;
    aclrtMalloc(&dGy, gy.size() * 4, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc(&dIdx, idx.size() * 4, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc(&dOut, gy.size() * 4, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc(&dGs, R * 4, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpyAsync(dGy, gy.size() * 4, gy.data(), gy.size() * 4, ACL_MEMCPY_HOST_TO_DEVICE, stream);
    aclrtMemcpyAsync(dIdx, idx.size() * 4, idx.data(), idx.size() * 4, ACL_MEMCPY_HOST_TO_DEVICE, stream);
    aclrtMemsetAsync(dOut, gy.size() * 4, 0xFF, gy.size() * 4, stream);  // poison: NaN bytes
    aclTensor* tGy = aclCreateTensor(gyShape.data(), 2, aclDataType::ACL_FLOAT, nullptr, 0, aclFormat::ACL_FORMAT_ND,
                                     gyShape.data(), 2, dGy);
    aclTensor* tIdx = aclCreateTensor(idxShape.data(), 1, aclDataType::ACL_INT32, nullptr, 0, aclFormat::ACL_FORMAT_ND,
                                      idxShape.data(), 1, dIdx);
    aclTensor* tOut = aclCreateTensor(gyShape.data(), 2, aclDataType::ACL_FLOAT, nullptr, 0, aclFormat::ACL_FORMAT_ND,
                                      gyShape.data(), 2, dOut);
    aclTensor* tGs = aclCreateTensor(gsShape.data(), 2, aclDataType::ACL_FLOAT, nullptr, 0, aclFormat::ACL_FORMAT_ND,
                                     gsShape.data(), 2, dGs);
    uint64_t workspaceSize = 0;
    aclOpExecutor* executor = nullptr;
    auto ret = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(tGy, tIdx, nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 0,
                                                             tOut, tGs, &workspaceSize, &executor);
    EXPECT(ret == ACL_SUCCESS, "phase 1: %d %s", ret, aclGetRecentErrMsg());
    void* workspace = nullptr;
    if (workspaceSize > 0) aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtEvent start = nullptr, end = nullptr;
    aclrtCreateEvent(&start);
    aclrtCreateEvent(&end);
    aclrtRecordEvent(start, stream);
    ret = aclnnMoeFinalizeRoutingV2Grad(workspace, workspaceSize, executor, stream);
    EXPECT(ret == ACL_SUCCESS, "phase 2: %d", ret);
    aclrtRecordEvent(end, stream);
    EXPECT(aclrtSynchronizeStreamWithTimeout(stream, 5000) == ACL_SUCCESS, "sync");
    float ms = -1.0f;
    EXPECT(aclrtEventElapsedTime(&ms, start, end) == ACL_SUCCESS && ms >= 0.0f, "elapsed %f", ms);
    std::vector<float> out(gy.size());
    aclrtMemcpy(out.data(), out.size() * 4, dOut, out.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < H; j++)
            EXPECT(out[idx[r] * H + j] == gy[r * H + j], "row %d col %d: %f vs %f", idx[r], static_cast<int>(j),
                   out[idx[r] * H + j], gy[r * H + j]);
    LOG_PRINT("aclnnMoeFinalizeRoutingV2Grad between two events: %.3f ms\n", ms);
    aclrtDestroyEvent(start);
    aclrtDestroyEvent(end);
    aclDestroyTensor(tGy);
    aclDestroyTensor(tIdx);
    aclDestroyTensor(tOut);
    aclDestroyTensor(tGs);
    if (workspace) aclrtFree(workspace);
    aclrtFree(dGy);
    aclrtFree(dIdx);
    aclrtFree(dOut);
    aclrtFree(dGs);
}

// fp16 values CANN's documentation and IEEE 754 fix.
static void Float16(void) {
    EXPECT(aclFloatToFloat16(1.0f) == 0x3C00, "1.0");
    EXPECT(aclFloatToFloat16(-2.0f) == 0xC000, "-2.0");
    EXPECT(aclFloatToFloat16(65504.0f) == 0x7BFF, "max");
    EXPECT(aclFloatToFloat16(65520.0f) == 0x7C00, "rounds to inf");
    EXPECT(aclFloatToFloat16(std::ldexp(1.0f, -24)) == 0x0001, "min subnormal");
    EXPECT(aclFloatToFloat16(std::ldexp(1.0f, -25)) == 0x0000, "half of min subnormal: tie to even 0");
    EXPECT(aclFloatToFloat16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00, "tie to even (down)");
    EXPECT(aclFloatToFloat16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02, "tie to even (up)");
    EXPECT(aclFloat16ToFloat(0x3555) == 0.333251953125f, "0x3555");
    EXPECT(std::isnan(aclFloat16ToFloat(aclFloatToFloat16(NAN))), "NaN");
    EXPECT(aclDataTypeSize(ACL_FLOAT16) == 2 && aclDataTypeSize(ACL_BF16) == 2 && aclDataTypeSize(ACL_INT64) == 8 &&
               aclDataTypeSize(ACL_FLOAT) == 4 && aclDataTypeSize(ACL_STRING) == 0,
           "aclDataTypeSize");
}

int main() {
    int32_t deviceId = 0;
    aclrtContext context = nullptr;
    aclrtStream stream = nullptr;
    auto ret = Init(deviceId, &context, &stream);
    CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);
    DeviceQueries(context);
    AsyncCopies(stream);
    EventTiming(stream);
    TimedOperator(stream);
    Float16();
    aclrtDestroyStream(stream);
    aclrtDestroyContext(context);
    aclrtResetDevice(deviceId);
    aclFinalize();
    if (g_failures) {
        LOG_PRINT("host_api: %d check(s) failed\n", g_failures);
        return 1;
    }
    LOG_PRINT("host_api: all checks passed\n");
    return 0;
}
