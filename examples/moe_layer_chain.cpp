// moe_layer_chain.cpp - one MoE layer, forward and backward, written the way a CANN program chains
// the routing operators, checked against a float64 reference computed in the same program.
//
//   forward:  router logits (x Wr, on the host) -> aclnnMoeGatingTopKSoftmax (top-K experts and weights)
//             -> aclnnMoeInitRoutingV2 (dropless, per-expert counts)
//             -> experts (one H x H matrix each, plain loops over their contiguous row blocks)
//             -> aclnnMoeFinalizeRoutingV2 (dropPadMode 2: row-layout index, residual x1 = x, bias)
//   backward: aclnnMoeFinalizeRoutingV2Grad (gradients of the expert outputs and of the scales)
//             -> experts' backward loops (weight gradients, gradients of the expert inputs)
//             -> aclnnMoeInitRoutingV2Grad (gradient of x through the routing) + residual
//
// Like the other sample it uses only CANN's headers and link names. Exit status 0 only when every
// output matches the reference within its fp32 error bound. usage: moe_layer_chain [seed]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "aclnnop/aclnn_moe_init_routing_v2.h"
#include "aclnnop/aclnn_moe_init_routing_v2_grad.h"

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

namespace {

const int64_t N = 13;  // tokens
const int64_t H = 19;  // hidden size
const int64_t E = 5;   // experts
const int64_t K = 2;   // experts per token
const int64_t T = N * K;

// A small deterministic generator (the seed is printed, so a failure can be replayed).
struct Lcg {
    uint64_t s;
    explicit Lcg(uint64_t seed) : s(seed * 2862933555777941757ULL + 3037000493ULL) {}
    double Uniform() {  // [-1, 1)
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(s >> 11) / 4503599627370496.0 - 1.0;
    }
};

int64_t Numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

// One tensor: device memory plus its contiguous ND descriptor; released by Release().
struct DeviceTensor {
    void* addr = nullptr;
    aclTensor* desc = nullptr;
    std::vector<int64_t> shape;
    size_t bytes = 0;
};

template <typename T_>
int Create(const std::vector<T_>& host, const std::vector<int64_t>& shape, aclDataType dtype, DeviceTensor* t) {
    t->shape = shape;
    t->bytes = static_cast<size_t>(Numel(shape)) * sizeof(T_);
    auto ret = aclrtMalloc(&t->addr, t->bytes, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(t->addr, t->bytes, host.data(), t->bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) {
        strides[i] = shape[i + 1] * strides[i + 1];
    }
    t->desc = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, aclFormat::ACL_FORMAT_ND,
                              shape.data(), shape.size(), t->addr);
    CHECK_RET(t->desc != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return -1);
    return 0;
}

template <typename T_>
int ToHost(const DeviceTensor& t, std::vector<T_>* host) {
    host->assign(t.bytes / sizeof(T_), T_());
    auto ret = aclrtMemcpy(host->data(), t.bytes, t.addr, t.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy to host failed. ERROR: %d\n", ret); return ret);
    return 0;
}

template <typename T_>
int ToDevice(const std::vector<T_>& host, DeviceTensor* t) {
    auto ret = aclrtMemcpy(t->addr, t->bytes, host.data(), t->bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy to device failed. ERROR: %d\n", ret); return ret);
    return 0;
}

void Release(DeviceTensor* t) {
    if (t->desc != nullptr) aclDestroyTensor(t->desc);
    if (t->addr != nullptr) aclrtFree(t->addr);
    t->desc = nullptr;
    t->addr = nullptr;
}

// Phase 2 of any aclnn operator, after its phase 1 returned `status`: workspace, run, synchronize.
typedef aclnnStatus (*Phase2)(void*, uint64_t, aclOpExecutor*, aclrtStream);
int Run(const char* name, aclnnStatus status, uint64_t workspaceSize, aclOpExecutor* executor, Phase2 phase2,
        aclrtStream stream) {
    CHECK_RET(status == ACL_SUCCESS,
              LOG_PRINT("%sGetWorkspaceSize failed. ERROR: %d (%s)\n", name, status, aclGetRecentErrMsg());
              return status);
    void* workspace = nullptr;
    if (workspaceSize > 0) {
        auto ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    auto ret = phase2(workspace, workspaceSize, executor, stream);
    if (ret == ACL_SUCCESS) ret = aclrtSynchronizeStream(stream);
    if (workspace != nullptr) aclrtFree(workspace);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("%s failed. ERROR: %d (%s)\n", name, ret, aclGetRecentErrMsg());
              return ret);
    return 0;
}

// |got - ref| <= bound for every element; bound = terms * 2^-22 * (largest |ref| + 1): the fp32
// rounding of a sum of `terms` products against the float64 value.
int Compare(const char* name, const std::vector<float>& got, const std::vector<double>& ref, int terms) {
    double mag = 0.0;
    for (double r : ref) mag = std::fmax(mag, std::fabs(r));
    double bound = terms * std::ldexp(1.0, -22) * (mag + 1.0);
    double worst = 0.0;
    size_t at = 0;
    bool ok = got.size() == ref.size();
    for (size_t i = 0; ok && i < ref.size(); i++) {
        double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
        if (!(err <= worst)) {  // NaN (an unwritten, poisoned element) counts as a failure
            worst = std::isnan(err) ? INFINITY : err;
            at = i;
        }
    }
    ok = ok && worst <= bound;
    LOG_PRINT("%-14s %5zu values  max |err| %.3e  bound %.3e  %s\n", name, ref.size(), worst, bound,
              ok ? "ok" : "MISMATCH");
    if (!ok && at < got.size()) {
        LOG_PRINT("  first worst at %zu: got %.9g, reference %.9g\n", at, got[at], ref[at]);
    }
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : static_cast<uint64_t>(std::time(nullptr));
    LOG_PRINT("moe_layer_chain: N=%ld H=%ld E=%ld K=%ld seed %llu\n", static_cast<long>(N), static_cast<long>(H),
              static_cast<long>(E), static_cast<long>(K), static_cast<unsigned long long>(seed));
    Lcg rng(seed);

    // ---- parameters and inputs ----
    std::vector<float> x(N * H), wRouter(H * E), wExpert(E * H * H), bias(E * H), gradOut(N * H);
    for (float& v : x) v = static_cast<float>(rng.Uniform());
    for (float& v : wRouter) v = static_cast<float>(rng.Uniform());
    for (float& v : wExpert) v = static_cast<float>(rng.Uniform() * 0.5);
    for (float& v : bias) v = static_cast<float>(rng.Uniform() * 0.25);
    for (float& v : gradOut) v = static_cast<float>(rng.Uniform());

    // ---- router logits on the host; the gating operator picks the experts below ----
    std::vector<float> logits(N * E);
    for (int64_t r = 0; r < N; r++) {
        for (int64_t e = 0; e < E; e++) {
            float acc = 0.0f;
            for (int64_t h = 0; h < H; h++) acc += x[r * H + h] * wRouter[h * E + e];
            logits[r * E + e] = acc;
        }
    }
    std::vector<int32_t> expertIdx;
    std::vector<float> scales;

    // ---- runtime ----
    int32_t deviceId = 0;
    aclrtStream stream = nullptr;
    auto ret = aclInit(nullptr);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return 1);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return 1);
    ret = aclrtCreateStream(&stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return 1);

    // Outputs start as NaN (floats) / -7 (indices), so an element an operator skips cannot pass.
    const std::vector<float> nanTH(T * H, NAN), nanNH(N * H, NAN), nanNK(T, NAN);
    DeviceTensor dLogits, dGateRowIdx, dX, dExpertIdx, dExpandedX, dRowIdx, dCounts, dY, dBias, dScales, dOut, dGradOut, dGradY,
        dGradScales, dGradExpandedX, dGradX;
    int fail = 0;
    fail |= Create(logits, {N, E}, ACL_FLOAT, &dLogits);
    fail |= Create(std::vector<int32_t>(T, -7), {N, K}, ACL_INT32, &dGateRowIdx);
    fail |= Create(x, {N, H}, ACL_FLOAT, &dX);
    fail |= Create(std::vector<int32_t>(T, -7), {N, K}, ACL_INT32, &dExpertIdx);
    fail |= Create(nanTH, {T, H}, ACL_FLOAT, &dExpandedX);
    fail |= Create(std::vector<int32_t>(T, -7), {T}, ACL_INT32, &dRowIdx);
    fail |= Create(std::vector<int32_t>(E, -7), {E}, ACL_INT32, &dCounts);
    fail |= Create(nanTH, {T, H}, ACL_FLOAT, &dY);
    fail |= Create(bias, {E, H}, ACL_FLOAT, &dBias);
    fail |= Create(nanNK, {N, K}, ACL_FLOAT, &dScales);
    fail |= Create(nanNH, {N, H}, ACL_FLOAT, &dOut);
    fail |= Create(gradOut, {N, H}, ACL_FLOAT, &dGradOut);
    fail |= Create(nanTH, {T, H}, ACL_FLOAT, &dGradY);
    fail |= Create(nanNK, {N, K}, ACL_FLOAT, &dGradScales);
    fail |= Create(nanTH, {T, H}, ACL_FLOAT, &dGradExpandedX);
    fail |= Create(nanNH, {N, H}, ACL_FLOAT, &dGradX);

    std::vector<float> expandedX, y(T * H), outHost, gradY, gradScales, gradExpandedX(T * H), gradX,
        gradW(E * H * H, 0.0f);
    std::vector<int32_t> rowIdx, counts, gateRowIdx;
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;

    // ---- forward 0: gating. softmax over the E logits, the K largest: weights and expert ids ----
    if (fail == 0) {
        ret = aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(dLogits.desc, nullptr, K, dScales.desc, dExpertIdx.desc,
                                                        dGateRowIdx.desc, &ws, &ex);
        fail |= Run("aclnnMoeGatingTopKSoftmax", ret, ws, ex, aclnnMoeGatingTopKSoftmax, stream);
    }
    fail = fail || ToHost(dScales, &scales) || ToHost(dExpertIdx, &expertIdx) || ToHost(dGateRowIdx, &gateRowIdx);
    for (int64_t j = 0; fail == 0 && j < T; j++) {
        if (expertIdx[j] < 0 || expertIdx[j] >= E) {
            LOG_PRINT("gating: expertIdx[%ld] = %d is not an expert\n", static_cast<long>(j), expertIdx[j]);
            fail = 1;
        }
    }

    // ---- forward 1: routing. Dropless, all T rows (activeNum 0), per-expert counts (flag 2) ----
    if (fail == 0) {
        ret = aclnnMoeInitRoutingV2GetWorkspaceSize(dX.desc, dExpertIdx.desc, 0, 0, E, 0, 2, false, dExpandedX.desc,
                                                    dRowIdx.desc, dCounts.desc, nullptr, &ws, &ex);
        fail |= Run("aclnnMoeInitRoutingV2", ret, ws, ex, aclnnMoeInitRoutingV2, stream);
    }
    fail = fail || ToHost(dExpandedX, &expandedX) || ToHost(dRowIdx, &rowIdx) || ToHost(dCounts, &counts);

    // ---- forward 2: experts. Expert e owns rows [start_e, start_e + counts[e]) of expandedX ----
    if (fail == 0) {
        int64_t start = 0;
        for (int64_t e = 0; e < E; e++) {
            if (counts[e] < 0 || start + counts[e] > T) {
                LOG_PRINT("counts[%ld] = %d is not a valid block size\n", static_cast<long>(e), counts[e]);
                fail = 1;
                break;
            }
            for (int64_t i = start; i < start + counts[e]; i++) {
                for (int64_t j = 0; j < H; j++) {
                    float acc = 0.0f;
                    for (int64_t h = 0; h < H; h++) acc += expandedX[i * H + h] * wExpert[(e * H + h) * H + j];
                    y[i * H + j] = acc;
                }
            }
            start += counts[e];
        }
        fail = fail || start != T || ToDevice(y, &dY);
    }

    // ---- forward 3: combine. out = x + sum_k scales * (y[rowIdx[r*K+k]] + bias[expert]) ----
    if (fail == 0) {
        ret = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(dY.desc, dRowIdx.desc, dX.desc, nullptr, dBias.desc,
                                                        dScales.desc, dExpertIdx.desc, 2, dOut.desc, &ws, &ex);
        fail |= Run("aclnnMoeFinalizeRoutingV2", ret, ws, ex, aclnnMoeFinalizeRoutingV2, stream);
    }
    fail = fail || ToHost(dOut, &outHost);

    // ---- backward 1: through the combine (row-layout index: the backward's dropPadMode 0) ----
    if (fail == 0) {
        ret = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(dGradOut.desc, dRowIdx.desc, dY.desc, dScales.desc,
                                                            dExpertIdx.desc, dBias.desc, 0, 0, E, 0, dGradY.desc,
                                                            dGradScales.desc, &ws, &ex);
        fail |= Run("aclnnMoeFinalizeRoutingV2Grad", ret, ws, ex, aclnnMoeFinalizeRoutingV2Grad, stream);
    }
    fail = fail || ToHost(dGradY, &gradY) || ToHost(dGradScales, &gradScales);

    // ---- backward 2: experts. dW_e += expandedX[i]^T gradY[i]; gradExpandedX[i] = gradY[i] W_e^T ----
    if (fail == 0) {
        int64_t start = 0;
        for (int64_t e = 0; e < E; e++) {
            for (int64_t i = start; i < start + counts[e]; i++) {
                for (int64_t h = 0; h < H; h++) {
                    float acc = 0.0f;
                    for (int64_t j = 0; j < H; j++) {
                        acc += gradY[i * H + j] * wExpert[(e * H + h) * H + j];
                        gradW[(e * H + h) * H + j] += expandedX[i * H + h] * gradY[i * H + j];
                    }
                    gradExpandedX[i * H + h] = acc;
                }
            }
            start += counts[e];
        }
        fail = ToDevice(gradExpandedX, &dGradExpandedX);
    }

    // ---- backward 3: through the routing (sums each token's K rows), then the residual ----
    if (fail == 0) {
        ret = aclnnMoeInitRoutingV2GradGetWorkspaceSize(dGradExpandedX.desc, dRowIdx.desc, K, 0, 0, dGradX.desc,
                                                        &ws, &ex);
        fail |= Run("aclnnMoeInitRoutingV2Grad", ret, ws, ex, aclnnMoeInitRoutingV2Grad, stream);
    }
    fail = fail || ToHost(dGradX, &gradX);
    if (fail == 0) {
        for (int64_t i = 0; i < N * H; i++) gradX[i] += gradOut[i];
    }

    // ---- float64 reference of the same layer, written per token (no routing at all) ----
    int mismatches = 0;
    if (fail == 0) {
        std::vector<double> rOut(N * H), rGradX(N * H), rGradW(E * H * H, 0.0), rGradScales(T);
        for (int64_t r = 0; r < N; r++) {
            for (int64_t j = 0; j < H; j++) {
                rOut[r * H + j] = x[r * H + j];
                rGradX[r * H + j] = gradOut[r * H + j];
            }
            for (int64_t k = 0; k < K; k++) {
                int64_t e = expertIdx[r * K + k];
                double s = scales[r * K + k], gs = 0.0;
                for (int64_t j = 0; j < H; j++) {
                    double yj = 0.0;
                    for (int64_t h = 0; h < H; h++) yj += static_cast<double>(x[r * H + h]) * wExpert[(e * H + h) * H + j];
                    rOut[r * H + j] += s * (yj + bias[e * H + j]);
                    gs += gradOut[r * H + j] * (yj + bias[e * H + j]);
                }
                rGradScales[r * K + k] = gs;
                for (int64_t h = 0; h < H; h++) {
                    for (int64_t j = 0; j < H; j++) {
                        double g = s * gradOut[r * H + j];
                        rGradX[r * H + h] += g * wExpert[(e * H + h) * H + j];
                        rGradW[(e * H + h) * H + j] += static_cast<double>(x[r * H + h]) * g;
                    }
                }
            }
        }
        // The gating: float64 softmax of the same logits, the K largest (ties to the lower expert).
        std::vector<double> rScales(T);
        for (int64_t r = 0; r < N; r++) {
            double p[E], mx = -INFINITY, sum = 0.0;
            for (int64_t e = 0; e < E; e++) mx = std::fmax(mx, static_cast<double>(logits[r * E + e]));
            for (int64_t e = 0; e < E; e++) sum += (p[e] = std::exp(logits[r * E + e] - mx));
            bool taken[E] = {false};
            for (int64_t k = 0; k < K; k++) {
                int64_t best = -1;
                for (int64_t e = 0; e < E; e++) {
                    if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
                }
                taken[best] = true;
                rScales[r * K + k] = p[best] / sum;
                if (expertIdx[r * K + k] != best || gateRowIdx[r * K + k] != k * N + r) {
                    LOG_PRINT("gating row %ld, k %ld: expert %d rowIdx %d, reference %ld and %ld\n",
                              static_cast<long>(r), static_cast<long>(k), expertIdx[r * K + k],
                              gateRowIdx[r * K + k], static_cast<long>(best), static_cast<long>(k * N + r));
                    mismatches++;
                }
            }
        }
        mismatches += Compare("gating y", scales, rScales, 8);
        // The routing rows themselves: expandedX row rowIdx[j] is token j / K, bit for bit.
        for (int64_t j = 0; j < T; j++) {
            int64_t d = rowIdx[j];
            bool okRow = d >= 0 && d < T;
            for (int64_t h = 0; okRow && h < H; h++) okRow = expandedX[d * H + h] == x[(j / K) * H + h];
            if (!okRow) {
                LOG_PRINT("expandedX row for slot %ld (rowIdx %ld) is not token %ld\n", static_cast<long>(j),
                          static_cast<long>(d), static_cast<long>(j / K));
                mismatches++;
                break;
            }
        }
        mismatches += Compare("out", outHost, rOut, static_cast<int>(K * (H + 2) + 1));
        mismatches += Compare("grad_scales", gradScales, rGradScales, static_cast<int>(2 * H + 2));
        mismatches += Compare("grad_x", gradX, rGradX, static_cast<int>(2 * K * H + 2));
        std::vector<float> gw(gradW.begin(), gradW.end());
        mismatches += Compare("grad_w", gw, rGradW, static_cast<int>(2 * T + 2));
    }

    // ---- release everything ----
    DeviceTensor* all[] = {&dLogits, &dGateRowIdx, &dX, &dExpertIdx, &dExpandedX, &dRowIdx, &dCounts, &dY, &dBias,
                           &dScales, &dOut, &dGradOut, &dGradY, &dGradScales, &dGradExpandedX, &dGradX};
    for (DeviceTensor* t : all) Release(t);
    aclrtDestroyStream(stream);
    aclrtResetDevice(deviceId);
    aclFinalize();
    if (fail != 0 || mismatches != 0) {
        LOG_PRINT("moe_layer_chain: FAILED\n");
        return 1;
    }
    LOG_PRINT("moe_layer_chain: forward and backward match the float64 reference\n");
    return 0;
}
