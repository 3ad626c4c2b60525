// objects.cpp - the aclnn objects as CANN's samples use them: int/float/bool
// arrays, scalars, tensor and scalar lists with their sizes and destroy calls,
// the tensor getters (arrays released with delete[], as CANN's docs do),
// aclInitTensor, the raw address, aclnnInit/aclnnFinalize, and the codes of
// the documented error paths. Only CANN headers and link names are used.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"

#define LOG_PRINT(message, ...)         \
    do {                                \
        printf(message, ##__VA_ARGS__); \
    } while (0)

static int g_failures = 0;
#define EXPECT(cond, ...)                                             \
    do {                                                              \
        if (!(cond)) {                                                \
            LOG_PRINT("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            LOG_PRINT(__VA_ARGS__);                                   \
            LOG_PRINT("\n");                                          \
            g_failures++;                                             \
        }                                                             \
    } while (0)

static void Arrays() {
    std::vector<int64_t> dims = {3, 1, 4, 1, 5, 9, 2};
    aclIntArray* ia = aclCreateIntArray(dims.data(), dims.size());
    std::vector<float> fv = {0.5f, -1.25f, 3.0f};
    aclFloatArray* fa = aclCreateFloatArray(fv.data(), fv.size());
    bool bv[5] = {true, false, true, true, false};
    aclBoolArray* ba = aclCreateBoolArray(bv, 5);
    EXPECT(ia != nullptr && fa != nullptr && ba != nullptr, "create: %s", aclGetRecentErrMsg());
    uint64_t n = 0;
    EXPECT(aclGetIntArraySize(ia, &n) == ACLNN_SUCCESS && n == 7, "int size %lu", (unsigned long)n);
    EXPECT(aclGetFloatArraySize(fa, &n) == ACLNN_SUCCESS && n == 3, "float size %lu", (unsigned long)n);
    EXPECT(aclGetBoolArraySize(ba, &n) == ACLNN_SUCCESS && n == 5, "bool size %lu", (unsigned long)n);
    EXPECT(aclGetIntArraySize(nullptr, &n) == ACLNN_ERR_PARAM_NULLPTR, "NULL array");
    EXPECT(aclGetIntArraySize(ia, nullptr) == ACLNN_ERR_PARAM_NULLPTR, "NULL size");
    aclIntArray* empty = aclCreateIntArray(nullptr, 0);
    EXPECT(empty != nullptr && aclGetIntArraySize(empty, &n) == ACLNN_SUCCESS && n == 0, "empty array");
    EXPECT(aclDestroyIntArray(ia) == ACLNN_SUCCESS && aclDestroyFloatArray(fa) == ACLNN_SUCCESS &&
               aclDestroyBoolArray(ba) == ACLNN_SUCCESS && aclDestroyIntArray(empty) == ACLNN_SUCCESS,
           "destroy");
    EXPECT(aclDestroyIntArray(nullptr) == ACLNN_SUCCESS, "destroy NULL");
}

static void ScalarsAndLists() {
    float alpha = 1.5f;
    int64_t k = 7;
    aclScalar* s1 = aclCreateScalar(&alpha, aclDataType::ACL_FLOAT);
    aclScalar* s2 = aclCreateScalar(&k, aclDataType::ACL_INT64);
    EXPECT(s1 != nullptr && s2 != nullptr, "scalars: %s", aclGetRecentErrMsg());
    EXPECT(aclCreateScalar(nullptr, ACL_FLOAT) == nullptr, "NULL value");
    std::vector<aclScalar*> scalars = {s1, s2};
    aclScalarList* sl = aclCreateScalarList(scalars.data(), scalars.size());
    uint64_t n = 0;
    EXPECT(sl != nullptr && aclGetScalarListSize(sl, &n) == ACLNN_SUCCESS && n == 2, "scalar list %lu",
           (unsigned long)n);

    std::vector<int64_t> shape = {2, 3};
    std::vector<aclTensor*> tensors;
    for (int i = 0; i < 3; i++)
        tensors.push_back(aclCreateTensor(shape.data(), shape.size(), aclDataType::ACL_FLOAT16, nullptr, 0,
                                          aclFormat::ACL_FORMAT_ND, shape.data(), shape.size(), nullptr));
    aclTensorList* tl = aclCreateTensorList(tensors.data(), tensors.size());
    EXPECT(tl != nullptr && aclGetTensorListSize(tl, &n) == ACLNN_SUCCESS && n == 3, "tensor list %lu",
           (unsigned long)n);
    EXPECT(aclGetTensorListSize(nullptr, &n) == ACLNN_ERR_PARAM_NULLPTR, "NULL list");
    // the lists own their elements: destroying them releases the scalars and tensors
    EXPECT(aclDestroyTensorList(tl) == ACLNN_SUCCESS, "destroy tensor list");
    EXPECT(aclDestroyScalarList(sl) == ACLNN_SUCCESS, "destroy scalar list");
}

static void TensorGetters() {
    // A 2 x 3 view with strides {1, 2} (column-major) at offset 1 over a storage of 8 fp32.
    std::vector<float> storage(8, 0.0f);
    std::vector<int64_t> viewDims = {2, 3}, strides = {1, 2}, storageDims = {8};
    aclTensor* x = aclCreateTensor(viewDims.data(), viewDims.size(), aclDataType::ACL_FLOAT, strides.data(), 1,
                                   aclFormat::ACL_FORMAT_ND, storageDims.data(), storageDims.size(), storage.data());
    EXPECT(x != nullptr, "create: %s", aclGetRecentErrMsg());
    if (x == nullptr) return;
    int64_t* dims = nullptr;
    uint64_t dimsNum = 0;
    EXPECT(aclGetViewShape(x, &dims, &dimsNum) == ACLNN_SUCCESS && dimsNum == 2 && dims[0] == 2 && dims[1] == 3,
           "view shape");
    int64_t* st = nullptr;
    uint64_t stNum = 0;
    EXPECT(aclGetViewStrides(x, &st, &stNum) == ACLNN_SUCCESS && stNum == 2 && st[0] == 1 && st[1] == 2, "strides");
    int64_t* sdims = nullptr;
    uint64_t sdimsNum = 0;
    EXPECT(aclGetStorageShape(x, &sdims, &sdimsNum) == ACLNN_SUCCESS && sdimsNum == 1 && sdims[0] == 8, "storage");
    int64_t offset = -1;
    EXPECT(aclGetViewOffset(x, &offset) == ACLNN_SUCCESS && offset == 1, "offset %ld", (long)offset);
    aclFormat format = aclFormat::ACL_FORMAT_UNDEFINED;
    EXPECT(aclGetFormat(x, &format) == ACLNN_SUCCESS && format == ACL_FORMAT_ND, "format");
    aclDataType dataType = aclDataType::ACL_DT_UNDEFINED;
    EXPECT(aclGetDataType(x, &dataType) == ACLNN_SUCCESS && dataType == ACL_FLOAT, "dtype");
    // a copy described by the getters, as in CANN's aclGetViewShape example
    aclTensor* y = aclCreateTensor(dims, dimsNum, dataType, st, offset, format, sdims, sdimsNum, storage.data());
    EXPECT(y != nullptr, "copy: %s", aclGetRecentErrMsg());
    delete[] dims;
    delete[] st;
    delete[] sdims;
    EXPECT(aclGetViewShape(nullptr, &dims, &dimsNum) == ACLNN_ERR_PARAM_NULLPTR, "NULL tensor");
    EXPECT(aclGetViewShape(x, nullptr, &dimsNum) == ACLNN_ERR_PARAM_NULLPTR, "NULL viewDims");

    void* addr = nullptr;
    EXPECT(aclGetRawTensorAddr(x, &addr) == ACLNN_SUCCESS && addr == storage.data(), "raw address");
    std::vector<float> other(8);
    EXPECT(aclSetRawTensorAddr(x, other.data()) == ACLNN_SUCCESS, "set raw");
    EXPECT(aclGetRawTensorAddr(x, &addr) == ACLNN_SUCCESS && addr == other.data(), "raw address after set");
    EXPECT(aclSetRawTensorAddr(nullptr, other.data()) == ACLNN_ERR_PARAM_NULLPTR, "NULL tensor");

    // aclInitTensor re-describes y as a contiguous 4-element int32 vector without data
    std::vector<int64_t> four = {4};
    EXPECT(aclInitTensor(y, four.data(), 1, ACL_INT32, nullptr, 0, ACL_FORMAT_ND, four.data(), 1, nullptr) ==
               ACLNN_SUCCESS,
           "init: %s", aclGetRecentErrMsg());
    EXPECT(aclGetDataType(y, &dataType) == ACLNN_SUCCESS && dataType == ACL_INT32, "dtype after init");
    EXPECT(aclGetRawTensorAddr(y, &addr) == ACLNN_SUCCESS && addr == nullptr, "data after init");
    EXPECT(aclInitTensor(nullptr, four.data(), 1, ACL_INT32, nullptr, 0, ACL_FORMAT_ND, four.data(), 1, nullptr) ==
               ACLNN_ERR_PARAM_NULLPTR,
           "init NULL");
    aclDestroyTensor(x);
    aclDestroyTensor(y);
}

int main() {
    EXPECT(aclnnInit(nullptr) == ACLNN_SUCCESS, "aclnnInit");
    Arrays();
    ScalarsAndLists();
    TensorGetters();
    EXPECT(aclnnFinalize() == ACLNN_SUCCESS, "aclnnFinalize");
    if (g_failures) {
        LOG_PRINT("objects: %d check(s) failed\n", g_failures);
        return 1;
    }
    LOG_PRINT("objects: all checks passed\n");
    return 0;
}
