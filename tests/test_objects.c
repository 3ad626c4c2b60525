/* test_objects.c - the aclnn objects of acl_meta.h from C: scalars, int /
 * float / bool arrays and tensor / scalar lists (random sizes, sizes read back,
 * destroy, lists owning their elements), the tensor getters (arrays released
 * with moefrFreeArray), aclInitTensor (a rejected description leaves the
 * tensor as it was), NULL-data tensors and the raw address; every error path
 * with its code and a one-line message, and stale or foreign pointers. */
#include <stdbool.h>

#include "moefr/moefr.h"
#include "testutil.h"

#define FAILS(call, want, frag)                                                                \
    do {                                                                                       \
        CHECK(aclrtSetDevice(987654321) == ACL_ERROR_INVALID_DEVICE); /* an older message */   \
        CHECK_RC(call, want);                                                                  \
        if (!tu_msg_has(frag, NULL) || tu_msg_has("987654321", NULL))                          \
            TU_FAIL("%s: message \"%s\" lacks \"%s\"", #call, tu_msg(), frag);                 \
    } while (0)
/* A creation that must return NULL with a message containing frag. */
#define REFUSED(call, frag)                                                                    \
    do {                                                                                       \
        CHECK(aclrtSetDevice(987654321) == ACL_ERROR_INVALID_DEVICE);                          \
        if ((call) != NULL) TU_FAIL("%s succeeded", #call);                                    \
        if (!tu_msg_has(frag, NULL)) TU_FAIL("%s: message \"%s\" lacks \"%s\"", #call, tu_msg(), frag); \
    } while (0)

static void arrays(void) {
    for (int round = 0; round < 20; round++) {
        uint64_t n = (uint64_t)tu_int(0, 37);
        int64_t iv[40];
        float fv[40];
        bool bv[40];
        for (uint64_t i = 0; i < n; i++) {
            iv[i] = (int64_t)tu_next();
            fv[i] = (float)tu_unit();
            bv[i] = tu_chance(50);
        }
        aclIntArray *ia = aclCreateIntArray(n ? iv : NULL, n);
        aclFloatArray *fa = aclCreateFloatArray(fv, n);
        aclBoolArray *ba = aclCreateBoolArray(bv, n);
        CHECK(ia && fa && ba);
        /* the arrays copied their values: changing the source changes nothing we can see (size) */
        memset(iv, 0, sizeof iv);
        uint64_t got = 999;
        CHECK_RC(aclGetIntArraySize(ia, &got), ACLNN_SUCCESS);
        CHECK(got == n);
        got = 999;
        CHECK_RC(aclGetFloatArraySize(fa, &got), ACLNN_SUCCESS);
        CHECK(got == n);
        got = 999;
        CHECK_RC(aclGetBoolArraySize(ba, &got), ACLNN_SUCCESS);
        CHECK(got == n);
        /* a pointer of one array kind is not an array of another */
        FAILS(aclGetFloatArraySize((const aclFloatArray *)ia, &got), ACLNN_ERR_PARAM_INVALID, "not a live aclFloatArray");
        FAILS(aclDestroyBoolArray((const aclBoolArray *)fa), ACLNN_ERR_PARAM_INVALID, "not a live aclBoolArray");
        CHECK_RC(aclDestroyIntArray(ia), ACLNN_SUCCESS);
        CHECK_RC(aclDestroyFloatArray(fa), ACLNN_SUCCESS);
        CHECK_RC(aclDestroyBoolArray(ba), ACLNN_SUCCESS);
        FAILS(aclDestroyIntArray(ia), ACLNN_ERR_PARAM_INVALID, "aclDestroyIntArray");
        FAILS(aclGetIntArraySize(ia, &got), ACLNN_ERR_PARAM_INVALID, "not a live aclIntArray");
    }
    uint64_t got;
    REFUSED(aclCreateIntArray(NULL, 3), "value is NULL but size is 3");
    REFUSED(aclCreateFloatArray(NULL, 1), "aclCreateFloatArray");
    REFUSED(aclCreateBoolArray(NULL, 2), "aclCreateBoolArray");
    REFUSED(aclCreateIntArray((const int64_t *)&got, UINT64_MAX), "too large");
    FAILS(aclGetIntArraySize(NULL, &got), ACLNN_ERR_PARAM_NULLPTR, "array is NULL");
    FAILS(aclGetFloatArraySize(NULL, &got), ACLNN_ERR_PARAM_NULLPTR, "aclGetFloatArraySize");
    FAILS(aclGetBoolArraySize(NULL, &got), ACLNN_ERR_PARAM_NULLPTR, "aclGetBoolArraySize");
    aclBoolArray *b = aclCreateBoolArray(NULL, 0);
    CHECK(b != NULL);
    FAILS(aclGetBoolArraySize(b, NULL), ACLNN_ERR_PARAM_NULLPTR, "size is NULL");
    CHECK_RC(aclDestroyBoolArray(b), ACLNN_SUCCESS);
    CHECK_RC(aclDestroyIntArray(NULL), ACLNN_SUCCESS);
    CHECK_RC(aclDestroyFloatArray(NULL), ACLNN_SUCCESS);
    CHECK_RC(aclDestroyBoolArray(NULL), ACLNN_SUCCESS);
    char foreign[64] = {0};
    FAILS(aclDestroyIntArray((const aclIntArray *)foreign), ACLNN_ERR_PARAM_INVALID, "not a live");
}

static void scalars_lists(void) {
    double d = 2.5;
    int8_t i8 = -3;
    uint16_t half = aclFloatToFloat16(0.5f);
    double cplx[2] = {1.0, -1.0};
    aclScalar *s[4] = {aclCreateScalar(&d, ACL_DOUBLE), aclCreateScalar(&i8, ACL_INT8),
                       aclCreateScalar(&half, ACL_FLOAT16), aclCreateScalar(cplx, ACL_COMPLEX128)};
    for (int i = 0; i < 4; i++) CHECK(s[i] != NULL);
    REFUSED(aclCreateScalar(NULL, ACL_FLOAT), "value is NULL");
    REFUSED(aclCreateScalar(&d, ACL_STRING), "dataType 13");
    REFUSED(aclCreateScalar(&d, (aclDataType)99), "dataType 99");
    /* a scalar list with a NULL element; destroying the list destroys the scalars */
    const aclScalar *items[5] = {s[0], s[1], NULL, s[2], s[3]};
    aclScalarList *sl = aclCreateScalarList(items, 5);
    CHECK(sl != NULL);
    uint64_t n = 0;
    CHECK_RC(aclGetScalarListSize(sl, &n), ACLNN_SUCCESS);
    CHECK(n == 5);
    CHECK_RC(aclDestroyScalarList(sl), ACLNN_SUCCESS);
    FAILS(aclDestroyScalar(s[0]), ACLNN_ERR_PARAM_INVALID, "not a live scalar"); /* owned and released by the list */
    FAILS(aclDestroyScalarList(sl), ACLNN_ERR_PARAM_INVALID, "not a live aclScalarList");
    FAILS(aclGetScalarListSize(sl, &n), ACLNN_ERR_PARAM_INVALID, "aclGetScalarListSize");
    FAILS(aclGetScalarListSize(NULL, &n), ACLNN_ERR_PARAM_NULLPTR, "scalarList is NULL");
    REFUSED(aclCreateScalarList(NULL, 2), "value is NULL");
    REFUSED(aclCreateScalarList(items, 1), "value[0]"); /* s[0] is gone */

    /* tensor lists: random lengths, NULL-data tensors, destroyed by the list */
    for (int round = 0; round < 10; round++) {
        uint64_t len = (uint64_t)tu_int(0, 9);
        aclTensor *ts[9];
        for (uint64_t i = 0; i < len; i++) {
            int64_t dims[2] = {tu_int(0, 5), tu_int(1, 7)};
            ts[i] = tu_tensor(dims, 2, ACL_BF16, NULL);
            CHECK(ts[i] != NULL);
        }
        aclTensorList *tl = aclCreateTensorList((const aclTensor *const *)ts, len);
        CHECK(tl != NULL);
        CHECK_RC(aclGetTensorListSize(tl, &n), ACLNN_SUCCESS);
        CHECK(n == len);
        CHECK_RC(aclDestroyTensorList(tl), ACLNN_SUCCESS);
        for (uint64_t i = 0; i < len; i++) CHECK(aclDestroyTensor(ts[i]) == ACLNN_ERR_PARAM_INVALID);
    }
    /* an element destroyed behind the list's back: reported, the rest released */
    int64_t dims[1] = {4};
    aclTensor *t0 = tu_tensor(dims, 1, ACL_FLOAT, NULL), *t1 = tu_tensor(dims, 1, ACL_FLOAT, NULL);
    const aclTensor *pair[2] = {t0, t1};
    aclTensorList *tl = aclCreateTensorList(pair, 2);
    CHECK(tl != NULL);
    CHECK_RC(aclDestroyTensor(t0), ACLNN_SUCCESS);
    FAILS(aclDestroyTensorList(tl), ACLNN_ERR_PARAM_INVALID, "element 0");
    CHECK(aclDestroyTensor(t1) == ACLNN_ERR_PARAM_INVALID); /* released with the list */
    REFUSED(aclCreateTensorList(pair, 2), "value[0]");
    REFUSED(aclCreateTensorList(NULL, 1), "value is NULL");
    FAILS(aclGetTensorListSize(NULL, &n), ACLNN_ERR_PARAM_NULLPTR, "tensorList is NULL");
    aclTensorList *empty = aclCreateTensorList(NULL, 0);
    CHECK(empty != NULL);
    FAILS(aclGetTensorListSize(empty, NULL), ACLNN_ERR_PARAM_NULLPTR, "size is NULL");
    FAILS(aclGetScalarListSize((const aclScalarList *)empty, &n), ACLNN_ERR_PARAM_INVALID, "not a live aclScalarList");
    CHECK_RC(aclDestroyTensorList(empty), ACLNN_SUCCESS);
    CHECK_RC(aclDestroyTensorList(NULL), ACLNN_SUCCESS);
    CHECK_RC(aclDestroyScalarList(NULL), ACLNN_SUCCESS);
    CHECK_RC(aclDestroyScalar(NULL), ACLNN_SUCCESS);
}

static void expect_array(const char *what, int64_t *got, uint64_t n, const int64_t *want, uint64_t wn) {
    if (n != wn) TU_FAIL("%s: %llu values, want %llu", what, (unsigned long long)n, (unsigned long long)wn);
    for (uint64_t i = 0; i < n; i++)
        if (got[i] != want[i]) TU_FAIL("%s[%llu] = %lld, want %lld", what, (unsigned long long)i, (long long)got[i],
                                       (long long)want[i]);
    moefrFreeArray(got);
}

static void getters(void) {
    for (int round = 0; round < 30; round++) {
        int nd = (int)tu_int(0, 8);
        int64_t dims[8], strides[8], want_strides[8], numel = 1;
        for (int i = 0; i < nd; i++) {
            dims[i] = tu_int(1, 4);
            numel *= dims[i];
        }
        int64_t s = 1;
        for (int i = nd - 1; i >= 0; i--) {
            want_strides[i] = s;
            s *= dims[i];
        }
        bool given = tu_chance(50);
        for (int i = 0; i < nd; i++) strides[i] = want_strides[i];
        int64_t offset = tu_int(0, 3), storage[1] = {numel + offset + (int64_t)tu_int(0, 2)};
        aclDataType dt = tu_chance(50) ? ACL_FLOAT16 : ACL_INT32;
        aclFormat fmt = tu_chance(50) ? ACL_FORMAT_ND : ACL_FORMAT_NCHW;
        void *data = tu_chance(30) ? NULL : (void *)(uintptr_t)0x1000;
        aclTensor *t = aclCreateTensor(dims, (uint64_t)nd, dt, given ? strides : NULL, offset, fmt, storage, 1, data);
        CHECK(t != NULL);
        int64_t *arr = NULL;
        uint64_t n = 99;
        CHECK_RC(aclGetViewShape(t, &arr, &n), ACLNN_SUCCESS);
        expect_array("viewDims", arr, n, dims, (uint64_t)nd);
        CHECK_RC(aclGetViewStrides(t, &arr, &n), ACLNN_SUCCESS);
        expect_array("strides", arr, n, want_strides, (uint64_t)nd);
        CHECK_RC(aclGetStorageShape(t, &arr, &n), ACLNN_SUCCESS);
        expect_array("storageDims", arr, n, storage, 1);
        int64_t off = -1;
        CHECK_RC(aclGetViewOffset(t, &off), ACLNN_SUCCESS);
        CHECK(off == offset);
        aclFormat f = ACL_FORMAT_UNDEFINED;
        CHECK_RC(aclGetFormat(t, &f), ACLNN_SUCCESS);
        CHECK(f == fmt);
        aclDataType d = ACL_DT_UNDEFINED;
        CHECK_RC(aclGetDataType(t, &d), ACLNN_SUCCESS);
        CHECK(d == dt);
        void *raw = (void *)1;
        CHECK_RC(aclGetRawTensorAddr(t, &raw), ACLNN_SUCCESS);
        CHECK(raw == data);
        CHECK_RC(aclDestroyTensor(t), ACLNN_SUCCESS);
    }
    int64_t dims[2] = {2, 3};
    aclTensor *t = tu_tensor(dims, 2, ACL_FLOAT, NULL);
    int64_t *arr = NULL, off;
    uint64_t n;
    aclFormat f;
    aclDataType d;
    void *raw;
    FAILS(aclGetViewShape(NULL, &arr, &n), ACLNN_ERR_PARAM_NULLPTR, "tensor is NULL");
    FAILS(aclGetViewShape(t, NULL, &n), ACLNN_ERR_PARAM_NULLPTR, "viewDims is NULL");
    FAILS(aclGetViewShape(t, &arr, NULL), ACLNN_ERR_PARAM_NULLPTR, "viewDimsNum is NULL");
    FAILS(aclGetStorageShape(NULL, &arr, &n), ACLNN_ERR_PARAM_NULLPTR, "aclGetStorageShape");
    FAILS(aclGetStorageShape(t, NULL, &n), ACLNN_ERR_PARAM_NULLPTR, "storageDims is NULL");
    FAILS(aclGetViewStrides(t, &arr, NULL), ACLNN_ERR_PARAM_NULLPTR, "stridesNum is NULL");
    FAILS(aclGetViewStrides(NULL, &arr, &n), ACLNN_ERR_PARAM_NULLPTR, "aclGetViewStrides");
    FAILS(aclGetViewOffset(t, NULL), ACLNN_ERR_PARAM_NULLPTR, "offset is NULL");
    FAILS(aclGetViewOffset(NULL, &off), ACLNN_ERR_PARAM_NULLPTR, "aclGetViewOffset");
    FAILS(aclGetFormat(t, NULL), ACLNN_ERR_PARAM_NULLPTR, "format is NULL");
    FAILS(aclGetFormat(NULL, &f), ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat");
    FAILS(aclGetDataType(t, NULL), ACLNN_ERR_PARAM_NULLPTR, "dataType is NULL");
    FAILS(aclGetDataType(NULL, &d), ACLNN_ERR_PARAM_NULLPTR, "aclGetDataType");
    FAILS(aclGetRawTensorAddr(t, NULL), ACLNN_ERR_PARAM_NULLPTR, "addr is NULL");
    FAILS(aclGetRawTensorAddr(NULL, &raw), ACLNN_ERR_PARAM_NULLPTR, "aclGetRawTensorAddr");
    FAILS(aclSetRawTensorAddr(NULL, &raw), ACLNN_ERR_PARAM_NULLPTR, "aclSetRawTensorAddr");

    /* NULL data, then an address set later */
    float buf[6];
    CHECK_RC(aclGetRawTensorAddr(t, &raw), ACLNN_SUCCESS);
    CHECK(raw == NULL);
    CHECK_RC(aclSetRawTensorAddr(t, buf), ACLNN_SUCCESS);
    CHECK_RC(aclGetRawTensorAddr(t, &raw), ACLNN_SUCCESS);
    CHECK(raw == buf);
    CHECK_RC(aclSetRawTensorAddr(t, NULL), ACLNN_SUCCESS);

    /* aclInitTensor: a valid description replaces everything ... */
    int64_t nd[3] = {4, 1, 2}, st[3] = {2, 100, 1}, sd[1] = {9};
    CHECK_RC(aclInitTensor(t, nd, 3, ACL_INT64, st, 1, ACL_FORMAT_NHWC, sd, 1, buf), ACLNN_SUCCESS);
    CHECK_RC(aclGetViewShape(t, &arr, &n), ACLNN_SUCCESS);
    expect_array("viewDims after init", arr, n, nd, 3);
    CHECK_RC(aclGetViewStrides(t, &arr, &n), ACLNN_SUCCESS);
    expect_array("strides after init", arr, n, st, 3);
    CHECK_RC(aclGetDataType(t, &d), ACLNN_SUCCESS);
    CHECK(d == ACL_INT64);
    CHECK_RC(aclGetViewOffset(t, &off), ACLNN_SUCCESS);
    CHECK(off == 1);
    /* ... a rejected one changes nothing */
    int64_t bad[1] = {-2};
    FAILS(aclInitTensor(t, bad, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, bad, 1, NULL), ACLNN_ERR_PARAM_INVALID,
          "aclInitTensor: viewDims[0] must be >= 0, got -2");
    int64_t big[1] = {10};
    FAILS(aclInitTensor(t, big, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, sd, 1, NULL), ACLNN_ERR_PARAM_INVALID,
          "storage holds 9");
    FAILS(aclInitTensor(t, nd, 3, (aclDataType)99, st, 0, ACL_FORMAT_ND, sd, 1, NULL), ACLNN_ERR_PARAM_INVALID,
          "dataType 99");
    FAILS(aclInitTensor(NULL, nd, 3, ACL_INT64, st, 0, ACL_FORMAT_ND, sd, 1, NULL), ACLNN_ERR_PARAM_NULLPTR,
          "tensor is NULL");
    CHECK_RC(aclGetDataType(t, &d), ACLNN_SUCCESS);
    CHECK(d == ACL_INT64);
    CHECK_RC(aclGetRawTensorAddr(t, &raw), ACLNN_SUCCESS);
    CHECK(raw == buf);
    CHECK_RC(aclGetViewShape(t, &arr, &n), ACLNN_SUCCESS);
    expect_array("viewDims after a rejected init", arr, n, nd, 3);
    CHECK_RC(aclDestroyTensor(t), ACLNN_SUCCESS);
    /* a destroyed tensor is refused by every getter and setter */
    FAILS(aclGetViewShape(t, &arr, &n), ACLNN_ERR_PARAM_INVALID, "not a live tensor");
    FAILS(aclGetDataType(t, &d), ACLNN_ERR_PARAM_INVALID, "not a live tensor");
    FAILS(aclSetRawTensorAddr(t, buf), ACLNN_ERR_PARAM_INVALID, "not a live tensor");
    FAILS(aclInitTensor(t, nd, 3, ACL_INT64, st, 0, ACL_FORMAT_ND, sd, 1, NULL), ACLNN_ERR_PARAM_INVALID,
          "not a live tensor");
    moefrFreeArray(NULL);
}

int main(void) {
    tu_seed("test_objects");
    arrays();
    scalars_lists();
    getters();
    printf("test_objects: ok\n");
    return 0;
}
