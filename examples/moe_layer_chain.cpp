// moe_layer_chain.cpp - one MoE layer, forward and backward, written the way a CANN program chains
// the routing and expert operators, checked against a float64 reference computed in the same program.
//
//   forward:  router logits (x Wr, on the host) -> aclnnMoeGatingTopKSoftmax (top-K experts and weights)
//             -> aclnnMoeInitRoutingV2 (dropless, per-expert counts)
//             -> experts, one SwiGLU MLP each, over their contiguous row blocks:
//                gateUp = aclnnGroupedMatmulV4(expandedX, W1 (E, H, 2F))        M split, groupType 0
//                act    = aclnnSwiGlu(gateUp, dim -1)    silu(first F columns) * last F columns
//                y      = aclnnGroupedMatmulV4(act, W2 (E, F, H))
//             -> aclnnMoeFinalizeRoutingV2 (dropPadMode 2: row-layout index, residual x1 = x, bias)
//   backward: aclnnMoeFinalizeRoutingV2Grad (gradients of the expert outputs and of the scales)
//             -> experts' backward, the same operators:
//                gradAct     = aclnnGroupedMatmulV4(gradY, W2^T)     W2 passed as a transposed view
//                gradGateUp  = aclnnSwiGluGrad(gradAct, gateUp, dim -1)
//                gradExpandedX = aclnnGroupedMatmulV4(gradGateUp, W1^T)
//                gradW1 = aclnnGroupedMatmulV4(expandedX^T, gradGateUp)  K split, groupType 2: (E, H, 2F)
//                gradW2 = aclnnGroupedMatmulV4(act^T, gradY)             K split: (E, F, H)
//             -> aclnnMoeInitRoutingV2Grad (gradient of x through the routing) + residual
//
// The grouped matmuls take InitRoutingV2's per-expert counts as their group list (groupListType 1,
// counts), widened on the host from INT32 to the INT64 GroupedMatmul requires.
//
// Data type: FLOAT32 throughout, so the reference check stays an fp32 error bound. CANN's Ascend 950
// table for GroupedMatmul has no FLOAT32 (fp16/bf16 only); the A2/A3 (Atlas 800T/900 A2, A3) table
// has it. moefr follows the Ascend 950 rules unless MOEFR_SOC=ascend910b, so main() sets that before
// aclInit (without overriding a value the caller set; on a real toolkit the variable is ignored and
// this program needs an A2/A3 device). bf16 would run on both, but its 8-bit mantissa would turn the
// check into a loose tolerance and hide a wrong row block or a transposed view read the wrong way.
//
// Like the other sample it uses only CANN's headers and link names. Exit status 0 only when every
// output matches the reference within its fp32 error bound.
//
// usage: moe_layer_chain [seed] [--shape N,H,F,E,K] [--repeat R]
//   --shape   tokens, hidden size, expert intermediate size, experts, experts per token (default a
//             small odd-sized problem, 13,19,11,5,2; `make run` uses 256,1024,512,16,2)
//   --repeat  after the checked pass, run the forward and the backward R more times each and print
//             the median time of each (the operators and the group list's copy, nothing of the check)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grouped_matmul_v4.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2.h"
#include "aclnnop/aclnn_moe_gating_top_k_softmax.h"
#include "aclnnop/aclnn_moe_finalize_routing_v2_grad.h"
#include "aclnnop/aclnn_moe_init_routing_v2.h"
#include "aclnnop/aclnn_moe_init_routing_v2_grad.h"
#include "aclnnop/aclnn_swi_glu.h"
#include "aclnnop/aclnn_swi_glu_grad.h"

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

int64_t N = 13;  // tokens
int64_t H = 19;  // hidden size
int64_t F = 11;  // each expert's intermediate size (W1 is H x 2F, W2 is F x H)
int64_t E = 5;   // experts
int64_t K = 2;   // experts per token
int64_t T = N * K;

double NowMs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

double Median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

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

// A new descriptor over t's memory: contiguous, or with the last two dims swapped (a transposed
// view, strides (.., 1, rows) over t's own storage). A tensor list owns the descriptors it holds
// (aclDestroyTensorList destroys them), so each list gets descriptors of its own.
aclTensor* Describe(const DeviceTensor& t, aclDataType dtype, bool transposed) {
    std::vector<int64_t> shape(t.shape), strides(t.shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) {
        strides[i] = shape[i + 1] * strides[i + 1];
    }
    if (transposed) {
        size_t n = shape.size();
        int64_t rows = shape[n - 2];
        shape[n - 2] = shape[n - 1];
        shape[n - 1] = rows;
        strides[n - 2] = 1;
        strides[n - 1] = shape[n - 2];
    }
    aclTensor* d = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, aclFormat::ACL_FORMAT_ND,
                                   t.shape.data(), t.shape.size(), t.addr);
    if (d == nullptr) LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg());
    return d;
}

// out = GroupedMatmulV4 of one x, one weight and one out (splitItem 3), all FLOAT32, grouped by
// groupList (INT64 counts, groupListType 1). groupType 0 splits x's rows (M), groupType 2 the inner
// dimension K (out is (E, M, N)); xT / wT pass x / weight as transposed views of their storage.
int GroupedMatmul(const char* what, const DeviceTensor& x, bool xT, const DeviceTensor& weight, bool wT,
                  const DeviceTensor& groupList, int64_t groupType, const DeviceTensor& out, aclrtStream stream) {
    aclTensor* xd = Describe(x, ACL_FLOAT, xT);
    aclTensor* wd = Describe(weight, ACL_FLOAT, wT);
    aclTensor* od = Describe(out, ACL_FLOAT, false);
    aclTensorList* xl = xd ? aclCreateTensorList(&xd, 1) : nullptr;
    aclTensorList* wl = wd ? aclCreateTensorList(&wd, 1) : nullptr;
    aclTensorList* ol = od ? aclCreateTensorList(&od, 1) : nullptr;
    int fail = xl == nullptr || wl == nullptr || ol == nullptr;
    if (fail == 0) {
        uint64_t ws = 0;
        aclOpExecutor* ex = nullptr;
        auto ret = aclnnGroupedMatmulV4GetWorkspaceSize(xl, wl, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                        groupList.desc, nullptr, nullptr, nullptr, 3, groupType, 1, 0,
                                                        ol, nullptr, nullptr, &ws, &ex);
        fail = Run("aclnnGroupedMatmulV4", ret, ws, ex, aclnnGroupedMatmulV4, stream);
        if (fail != 0) LOG_PRINT("  (the grouped matmul for %s)\n", what);
    }
    // A list destroys its descriptors; a descriptor that never made it into a list is destroyed here.
    if (xl != nullptr) aclDestroyTensorList(xl); else if (xd != nullptr) aclDestroyTensor(xd);
    if (wl != nullptr) aclDestroyTensorList(wl); else if (wd != nullptr) aclDestroyTensor(wd);
    if (ol != nullptr) aclDestroyTensorList(ol); else if (od != nullptr) aclDestroyTensor(od);
    return fail;
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
    uint64_t seed = static_cast<uint64_t>(std::time(nullptr));
    int repeat = 0;
    for (int i = 1; i < argc; i++) {
        long long v[5];
        if (std::strcmp(argv[i], "--shape") == 0 && i + 1 < argc &&
            std::sscanf(argv[i + 1], "%lld,%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2], &v[3], &v[4]) == 5 &&
            v[0] > 0 && v[1] > 0 && v[2] > 0 && v[3] > 0 && v[4] > 0 && v[4] <= v[3]) {
            N = v[0], H = v[1], F = v[2], E = v[3], K = v[4], T = N * K;
            i++;
        } else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc && std::atoi(argv[i + 1]) >= 0) {
            repeat = std::atoi(argv[++i]);
        } else if (argv[i][0] != '-') {
            seed = std::strtoull(argv[i], nullptr, 10);
        } else {
            LOG_PRINT("usage: moe_layer_chain [seed] [--shape N,H,F,E,K (all > 0, K <= E)] [--repeat R]\n");
            return 2;
        }
    }
    LOG_PRINT("moe_layer_chain: N=%ld H=%ld F=%ld E=%ld K=%ld seed %llu\n", static_cast<long>(N),
              static_cast<long>(H), static_cast<long>(F), static_cast<long>(E), static_cast<long>(K),
              static_cast<unsigned long long>(seed));
    Lcg rng(seed);

    // ---- parameters and inputs ----
    std::vector<float> x(N * H), wRouter(H * E), w1(E * H * 2 * F), w2(E * F * H), bias(E * H), gradOut(N * H);
    for (float& v : x) v = static_cast<float>(rng.Uniform());
    for (float& v : wRouter) v = static_cast<float>(rng.Uniform());
    for (float& v : w1) v = static_cast<float>(rng.Uniform() * 0.5);
    for (float& v : w2) v = static_cast<float>(rng.Uniform() * 0.5);
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
    // FLOAT32 GroupedMatmul is in CANN's A2/A3 table only (Ascend 950: fp16/bf16); see the top comment.
    // The last argument 0 keeps a MOEFR_SOC the caller set.
    setenv("MOEFR_SOC", "ascend910b", 0);
    int32_t deviceId = 0;
    aclrtStream stream = nullptr;
    auto ret = aclInit(nullptr);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return 1);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return 1);
    ret = aclrtCreateStream(&stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return 1);

    // Outputs start as NaN (floats) / -7 (indices), so an element an operator skips cannot pass.
    const std::vector<float> nanTH(T * H, NAN), nanNH(N * H, NAN), nanNK(T, NAN), nanT2F(T * 2 * F, NAN),
        nanTF(T * F, NAN), nanW1(E * H * 2 * F, NAN), nanW2(E * F * H, NAN);
    DeviceTensor dLogits, dGateRowIdx, dX, dExpertIdx, dExpandedX, dRowIdx, dCounts, dGroupList, dW1, dW2, dGateUp,
        dAct, dY, dBias, dScales, dOut, dGradOut, dGradY, dGradScales, dGradAct, dGradGateUp, dGradExpandedX,
        dGradW1, dGradW2, dGradX;
    int fail = 0;
    fail |= Create(logits, {N, E}, ACL_FLOAT, &dLogits);
    fail |= Create(std::vector<int32_t>(T, -7), {N, K}, ACL_INT32, &dGateRowIdx);
    fail |= Create(x, {N, H}, ACL_FLOAT, &dX);
    fail |= Create(std::vector<int32_t>(T, -7), {N, K}, ACL_INT32, &dExpertIdx);
    fail |= Create(nanTH, {T, H}, ACL_FLOAT, &dExpandedX);
    fail |= Create(std::vector<int32_t>(T, -7), {T}, ACL_INT32, &dRowIdx);
    fail |= Create(std::vector<int32_t>(E, -7), {E}, ACL_INT32, &dCounts);
    fail |= Create(std::vector<int64_t>(E, -7), {E}, ACL_INT64, &dGroupList);
    fail |= Create(w1, {E, H, 2 * F}, ACL_FLOAT, &dW1);
    fail |= Create(w2, {E, F, H}, ACL_FLOAT, &dW2);
    fail |= Create(nanT2F, {T, 2 * F}, ACL_FLOAT, &dGateUp);
    fail |= Create(nanTF, {T, F}, ACL_FLOAT, &dAct);
    fail |= Create(nanTH, {T, H}, ACL_FLOAT, &dY);
    fail |= Create(bias, {E, H}, ACL_FLOAT, &dBias);
    fail |= Create(nanNK, {N, K}, ACL_FLOAT, &dScales);
    fail |= Create(nanNH, {N, H}, ACL_FLOAT, &dOut);
    fail |= Create(gradOut, {N, H}, ACL_FLOAT, &dGradOut);
    fail |= Create(nanTH, {T, H}, ACL_FLOAT, &dGradY);
    fail |= Create(nanNK, {N, K}, ACL_FLOAT, &dGradScales);
    fail |= Create(nanTF, {T, F}, ACL_FLOAT, &dGradAct);
    fail |= Create(nanT2F, {T, 2 * F}, ACL_FLOAT, &dGradGateUp);
    fail |= Create(nanTH, {T, H}, ACL_FLOAT, &dGradExpandedX);
    fail |= Create(nanW1, {E, H, 2 * F}, ACL_FLOAT, &dGradW1);
    fail |= Create(nanW2, {E, F, H}, ACL_FLOAT, &dGradW2);
    fail |= Create(nanNH, {N, H}, ACL_FLOAT, &dGradX);

    std::vector<float> expandedX, y, outHost, gradScales, gradX, gradW1, gradW2;
    std::vector<int32_t> rowIdx, counts, gateRowIdx;
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;

    // The layer's forward, operators only (the checks read the outputs afterwards).
    auto forward = [&]() -> int {
    int fail = 0;
    // ---- forward 0: gating. softmax over the E logits, the K largest: weights and expert ids ----
    ret = aclnnMoeGatingTopKSoftmaxGetWorkspaceSize(dLogits.desc, nullptr, K, dScales.desc, dExpertIdx.desc,
                                                    dGateRowIdx.desc, &ws, &ex);
    fail |= Run("aclnnMoeGatingTopKSoftmax", ret, ws, ex, aclnnMoeGatingTopKSoftmax, stream);

    // ---- forward 1: routing. Dropless, all T rows (activeNum 0), per-expert counts (flag 2) ----
    if (fail == 0) {
        ret = aclnnMoeInitRoutingV2GetWorkspaceSize(dX.desc, dExpertIdx.desc, 0, 0, E, 0, 2, false, dExpandedX.desc,
                                                    dRowIdx.desc, dCounts.desc, nullptr, &ws, &ex);
        fail |= Run("aclnnMoeInitRoutingV2", ret, ws, ex, aclnnMoeInitRoutingV2, stream);
    }
    fail = fail || ToHost(dCounts, &counts);

    // ---- forward 2: experts. Expert e owns rows [start_e, start_e + counts[e]) of expandedX; the
    // counts, widened to INT64, are the grouped matmuls' group list (groupListType 1) ----
    if (fail == 0) {
        std::vector<int64_t> groupList(E);
        int64_t total = 0;
        for (int64_t e = 0; e < E; e++) {
            if (counts[e] < 0 || total + counts[e] > T) {
                LOG_PRINT("counts[%ld] = %d is not a valid block size\n", static_cast<long>(e), counts[e]);
                fail = 1;
                break;
            }
            groupList[e] = counts[e];
            total += counts[e];
        }
        if (fail == 0 && total != T) {
            LOG_PRINT("the counts add up to %ld rows, not %ld\n", static_cast<long>(total), static_cast<long>(T));
            fail = 1;
        }
        fail = fail || ToDevice(groupList, &dGroupList);
    }
    if (fail == 0) fail = GroupedMatmul("gate_up", dExpandedX, false, dW1, false, dGroupList, 0, dGateUp, stream);
    if (fail == 0) {
        ret = aclnnSwiGluGetWorkspaceSize(dGateUp.desc, -1, dAct.desc, &ws, &ex);
        fail = Run("aclnnSwiGlu", ret, ws, ex, aclnnSwiGlu, stream);
    }
    if (fail == 0) fail = GroupedMatmul("down", dAct, false, dW2, false, dGroupList, 0, dY, stream);

    // ---- forward 3: combine. out = x + sum_k scales * (y[rowIdx[r*K+k]] + bias[expert]) ----
    if (fail == 0) {
        ret = aclnnMoeFinalizeRoutingV2GetWorkspaceSize(dY.desc, dRowIdx.desc, dX.desc, nullptr, dBias.desc,
                                                        dScales.desc, dExpertIdx.desc, 2, dOut.desc, &ws, &ex);
        fail |= Run("aclnnMoeFinalizeRoutingV2", ret, ws, ex, aclnnMoeFinalizeRoutingV2, stream);
    }
    return fail;
    };

    // The layer's backward, operators only.
    auto backward = [&]() -> int {
    int fail = 0;
    // ---- backward 1: through the combine (row-layout index: the backward's dropPadMode 0) ----
    {
        ret = aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(dGradOut.desc, dRowIdx.desc, dY.desc, dScales.desc,
                                                            dExpertIdx.desc, dBias.desc, 0, 0, E, 0, dGradY.desc,
                                                            dGradScales.desc, &ws, &ex);
        fail |= Run("aclnnMoeFinalizeRoutingV2Grad", ret, ws, ex, aclnnMoeFinalizeRoutingV2Grad, stream);
    }

    // ---- backward 2: experts, in reverse. Input gradients take the weights as transposed views
    // (W^T without a copy); weight gradients are the K split: the rows of expert e are the inner
    // dimension of x^T @ grad, so groupType 2 sums each expert's block into its own (E, ., .) slice ----
    if (fail == 0) fail = GroupedMatmul("grad_act", dGradY, false, dW2, true, dGroupList, 0, dGradAct, stream);
    if (fail == 0) {
        ret = aclnnSwiGluGradGetWorkspaceSize(dGradAct.desc, dGateUp.desc, -1, dGradGateUp.desc, &ws, &ex);
        fail = Run("aclnnSwiGluGrad", ret, ws, ex, aclnnSwiGluGrad, stream);
    }
    if (fail == 0) {
        fail = GroupedMatmul("grad_expanded_x", dGradGateUp, false, dW1, true, dGroupList, 0, dGradExpandedX, stream);
    }
    if (fail == 0) {
        fail = GroupedMatmul("grad_w1", dExpandedX, true, dGradGateUp, false, dGroupList, 2, dGradW1, stream);
    }
    if (fail == 0) fail = GroupedMatmul("grad_w2", dAct, true, dGradY, false, dGroupList, 2, dGradW2, stream);

    // ---- backward 3: through the routing (sums each token's K rows), then the residual ----
    if (fail == 0) {
        ret = aclnnMoeInitRoutingV2GradGetWorkspaceSize(dGradExpandedX.desc, dRowIdx.desc, K, 0, 0, dGradX.desc,
                                                        &ws, &ex);
        fail |= Run("aclnnMoeInitRoutingV2Grad", ret, ws, ex, aclnnMoeInitRoutingV2Grad, stream);
    }
    return fail;
    };

    // ---- one checked pass: forward, its outputs read back, backward, its outputs read back ----
    double tFwd = NowMs();
    if (fail == 0) fail = forward();
    tFwd = NowMs() - tFwd;
    fail = fail || ToHost(dScales, &scales) || ToHost(dExpertIdx, &expertIdx) || ToHost(dGateRowIdx, &gateRowIdx);
    for (int64_t j = 0; fail == 0 && j < T; j++) {
        if (expertIdx[j] < 0 || expertIdx[j] >= E) {
            LOG_PRINT("gating: expertIdx[%ld] = %d is not an expert\n", static_cast<long>(j), expertIdx[j]);
            fail = 1;
        }
    }
    fail = fail || ToHost(dExpandedX, &expandedX) || ToHost(dRowIdx, &rowIdx) || ToHost(dY, &y) ||
           ToHost(dOut, &outHost);
    double tBwd = NowMs();
    if (fail == 0) fail = backward();
    tBwd = NowMs() - tBwd;
    fail = fail || ToHost(dGradScales, &gradScales) || ToHost(dGradW1, &gradW1) || ToHost(dGradW2, &gradW2) ||
           ToHost(dGradX, &gradX);
    if (fail == 0) {
        for (int64_t i = 0; i < N * H; i++) gradX[i] += gradOut[i];
    }

    // ---- float64 reference of the same layer, written per token (no routing at all) ----
    int mismatches = 0;
    if (fail == 0) {
        std::vector<double> rOut(N * H), rGradX(N * H), rGradW1(E * H * 2 * F, 0.0), rGradW2(E * F * H, 0.0),
            rGradScales(T), rY(T * H, NAN);
        for (int64_t r = 0; r < N; r++) {
            for (int64_t j = 0; j < H; j++) {
                rOut[r * H + j] = x[r * H + j];
                rGradX[r * H + j] = gradOut[r * H + j];
            }
            for (int64_t k = 0; k < K; k++) {
                int64_t e = expertIdx[r * K + k];
                const float* xr = &x[r * H];
                const float* w1e = &w1[e * H * 2 * F];
                const float* w2e = &w2[e * F * H];
                double s = scales[r * K + k], gs = 0.0;
                // the expert: g = x W1 (2F), act = silu(g[:F]) * g[F:], y = act W2
                std::vector<double> g(2 * F), sg(F), act(F), ye(H);
                for (int64_t c = 0; c < 2 * F; c++) {
                    g[c] = 0.0;
                    for (int64_t h = 0; h < H; h++) g[c] += static_cast<double>(xr[h]) * w1e[h * 2 * F + c];
                }
                for (int64_t f = 0; f < F; f++) {
                    sg[f] = 1.0 / (1.0 + std::exp(-g[f]));
                    act[f] = g[f] * sg[f] * g[F + f];
                }
                for (int64_t j = 0; j < H; j++) {
                    ye[j] = 0.0;
                    for (int64_t f = 0; f < F; f++) ye[j] += act[f] * w2e[f * H + j];
                    if (rowIdx[r * K + k] >= 0 && rowIdx[r * K + k] < T) rY[rowIdx[r * K + k] * H + j] = ye[j];
                    rOut[r * H + j] += s * (ye[j] + bias[e * H + j]);
                    gs += gradOut[r * H + j] * (ye[j] + bias[e * H + j]);
                }
                rGradScales[r * K + k] = gs;
                // its backward, from dy = s * gradOut
                std::vector<double> dy(H), dAct(F), dG(2 * F);
                for (int64_t j = 0; j < H; j++) dy[j] = s * gradOut[r * H + j];
                for (int64_t f = 0; f < F; f++) {
                    dAct[f] = 0.0;
                    for (int64_t j = 0; j < H; j++) dAct[f] += dy[j] * w2e[f * H + j];
                    dG[f] = dAct[f] * g[F + f] * sg[f] * (1.0 + g[f] * (1.0 - sg[f]));
                    dG[F + f] = dAct[f] * g[f] * sg[f];
                    for (int64_t j = 0; j < H; j++) rGradW2[(e * F + f) * H + j] += act[f] * dy[j];
                }
                for (int64_t h = 0; h < H; h++) {
                    for (int64_t c = 0; c < 2 * F; c++) {
                        rGradX[r * H + h] += dG[c] * w1e[h * 2 * F + c];
                        rGradW1[(e * H + h) * 2 * F + c] += static_cast<double>(xr[h]) * dG[c];
                    }
                }
            }
        }
        // The gating: float64 softmax of the same logits, the K largest (ties to the lower expert).
        std::vector<double> rScales(T);
        for (int64_t r = 0; r < N; r++) {
            std::vector<double> p(E);
            double mx = -INFINITY, sum = 0.0;
            for (int64_t e = 0; e < E; e++) mx = std::fmax(mx, static_cast<double>(logits[r * E + e]));
            for (int64_t e = 0; e < E; e++) sum += (p[e] = std::exp(logits[r * E + e] - mx));
            std::vector<bool> taken(E, false);
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
        // terms: the lengths of the fp32 sums on each value's path through the layer added up (gate_up H,
        // down F, grad_act H, grad_expanded_x 2F, the K split T rows), 4 for each SwiGlu(Grad) and 1-2
        // for each combine step: a first-order estimate, not a proof (see Compare).
        const int yTerms = static_cast<int>(H + F + 4);
        mismatches += Compare("expert y", y, rY, yTerms);
        mismatches += Compare("out", outHost, rOut, static_cast<int>(K * (yTerms + 2) + 1));
        mismatches += Compare("grad_scales", gradScales, rGradScales, static_cast<int>(yTerms + H + 2));
        mismatches += Compare("grad_x", gradX, rGradX, static_cast<int>(K * (2 * H + 2 * F + 6) + 2));
        mismatches += Compare("grad_w1", gradW1, rGradW1, static_cast<int>(T + 2 * H + 6));
        mismatches += Compare("grad_w2", gradW2, rGradW2, static_cast<int>(T + yTerms + 2));
    }

    // ---- timing: the same forward and backward again, on the same inputs ----
    if (fail == 0 && mismatches == 0) {
        std::vector<double> fwd(1, tFwd), bwd(1, tBwd);
        for (int i = 0; i < repeat && fail == 0; i++) {
            double t0 = NowMs();
            fail = forward();
            double t1 = NowMs();
            fail = fail || backward();
            fwd.push_back(t1 - t0);
            bwd.push_back(NowMs() - t1);
        }
        if (repeat > 0) {  // the first (checked) pass warmed the caches; the medians are of the repeats
            fwd.erase(fwd.begin());
            bwd.erase(bwd.begin());
        }
        // the expert GEMMs' flops: forward 2T(H*2F + F*H); backward twice that (input and weight grads)
        double gemm = 2.0 * T * (H * 2 * F + F * H);
        double f = Median(fwd), b = Median(bwd);
        LOG_PRINT("time (%s): forward %.3f ms (experts' GEMMs %.1f GFLOP/s), backward %.3f ms (%.1f GFLOP/s)\n",
                  repeat > 0 ? "median of the repeats" : "the checked pass", f, gemm / (f * 1e6), b,
                  2 * gemm / (b * 1e6));
    }

    // ---- release everything ----
    DeviceTensor* all[] = {&dLogits, &dGateRowIdx, &dX, &dExpertIdx, &dExpandedX, &dRowIdx, &dCounts, &dGroupList,
                           &dW1, &dW2, &dGateUp, &dAct, &dY, &dBias, &dScales, &dOut, &dGradOut, &dGradY,
                           &dGradScales, &dGradAct, &dGradGateUp, &dGradExpandedX, &dGradW1, &dGradW2, &dGradX};
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
