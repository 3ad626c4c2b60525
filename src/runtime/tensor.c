/* tensor.c - aclTensor descriptors: dtype/format tables, creation with every
 * bounds and overflow check, contiguity. A descriptor never owns its data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "moefr/moefr.h"

size_t mf_dtype_size(int dtype) {
    switch (dtype) {
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    /* 8-bit floats: moved as bytes (MoeReRouting's Ascend 950 columns); no operator computes on them */
    case ACL_HIFLOAT8: case ACL_FLOAT8_E5M2: case ACL_FLOAT8_E4M3FN: case ACL_FLOAT8_E8M0: return 1;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0; /* ACL_STRING and unknown values have no element size */
    }
}

const char *mf_dtype_name(int dtype) {
    switch (dtype) {
    case ACL_FLOAT: return "FLOAT";
    case ACL_FLOAT16: return "FLOAT16";
    case ACL_BF16: return "BFLOAT16";
    case ACL_INT8: return "INT8";
    case ACL_INT32: return "INT32";
    case ACL_UINT8: return "UINT8";
    case ACL_INT16: return "INT16";
    case ACL_UINT16: return "UINT16";
    case ACL_UINT32: return "UINT32";
    case ACL_INT64: return "INT64";
    case ACL_UINT64: return "UINT64";
    case ACL_DOUBLE: return "DOUBLE";
    case ACL_BOOL: return "BOOL";
    case ACL_HIFLOAT8: return "HIFLOAT8";
    case ACL_FLOAT8_E5M2: return "FLOAT8_E5M2";
    case ACL_FLOAT8_E4M3FN: return "FLOAT8_E4M3FN";
    case ACL_FLOAT8_E8M0: return "FLOAT8_E8M0";
    case ACL_STRING: return "STRING";
    case ACL_COMPLEX64: return "COMPLEX64";
    case ACL_COMPLEX128: return "COMPLEX128";
    default: return "UNKNOWN";
    }
}

bool mf_format_known(int format) {
    switch (format) {
    case ACL_FORMAT_NCHW: case ACL_FORMAT_NHWC: case ACL_FORMAT_ND: case ACL_FORMAT_NC1HWC0:
    case ACL_FORMAT_FRACTAL_Z: case ACL_FORMAT_NC1HWC0_C04: case ACL_FORMAT_HWCN:
    case ACL_FORMAT_NDHWC: case ACL_FORMAT_FRACTAL_NZ: case ACL_FORMAT_NCDHW:
    case ACL_FORMAT_NDC1HWC0: case ACL_FRACTAL_Z_3D: case ACL_FORMAT_NC: case ACL_FORMAT_NCL:
        return true;
    default:
        return false;
    }
}

const char *mf_format_name(int format) {
    switch (format) {
    case ACL_FORMAT_NCHW: return "NCHW";
    case ACL_FORMAT_NHWC: return "NHWC";
    case ACL_FORMAT_ND: return "ND";
    default: return mf_format_known(format) ? "non-ND" : "UNKNOWN";
    }
}

const char *mf_shape_str(const aclTensor *t, char *buf, size_t n) {
    size_t used = 0;
    used += (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < t->ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ", %lld" : "%lld", (long long)t->dims[i]);
    if (used < n) snprintf(buf + used, n - used, ")");
    return buf;
}

bool mf_tensor_live(const aclTensor *t) { return mf_registry_has(&mf_tensors, t); }

bool mf_tensor_contiguous(const aclTensor *t) {
    if (t->numel == 0) return true;
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->dims[i] != 1 && t->strides[i] != expect) return false;
        expect *= t->dims[i];
    }
    return true;
}

/* Checks a description (aclCreateTensor's arguments) and fills *t from it;
 * false with a message naming fn otherwise (t is then untouched). */
static bool describe(const char *fn, aclTensor *t, const int64_t *viewDims, uint64_t viewDimsNum,
                     aclDataType dataType, const int64_t *stride, int64_t offset, aclFormat format,
                     const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
    size_t es = mf_dtype_size(dataType);
    if (es == 0) {
        mf_set_error("%s: dataType %d is not supported", fn, (int)dataType);
        return false;
    }
    if (!mf_format_known(format)) {
        mf_set_error("%s: format %d is not a known aclFormat", fn, (int)format);
        return false;
    }
    if (viewDimsNum > MF_MAX_DIMS) {
        mf_set_error("%s: viewDimsNum must be at most %d, got %llu", fn, MF_MAX_DIMS,
                     (unsigned long long)viewDimsNum);
        return false;
    }
    if (storageDimsNum > MF_MAX_DIMS) {
        mf_set_error("%s: storageDimsNum must be at most %d, got %llu", fn, MF_MAX_DIMS,
                     (unsigned long long)storageDimsNum);
        return false;
    }
    if (viewDims == NULL && viewDimsNum > 0) {
        mf_set_error("%s: viewDims is NULL but viewDimsNum is %llu", fn, (unsigned long long)viewDimsNum);
        return false;
    }
    if (storageDims == NULL && storageDimsNum > 0) {
        mf_set_error("%s: storageDims is NULL but storageDimsNum is %llu", fn,
                     (unsigned long long)storageDimsNum);
        return false;
    }
    if (offset < 0) {
        mf_set_error("%s: offset must be >= 0, got %lld", fn, (long long)offset);
        return false;
    }

    int64_t numel = 1;
    for (uint64_t i = 0; i < viewDimsNum; i++) {
        if (viewDims[i] < 0) {
            mf_set_error("%s: viewDims[%llu] must be >= 0, got %lld", fn, (unsigned long long)i,
                         (long long)viewDims[i]);
            return false;
        }
        if (!mf_mul_ok(numel, viewDims[i], &numel)) {
            mf_set_error("%s: the product of viewDims overflows int64", fn);
            return false;
        }
    }
    int64_t storage = 1;
    for (uint64_t i = 0; i < storageDimsNum; i++) {
        if (storageDims[i] < 0) {
            mf_set_error("%s: storageDims[%llu] must be >= 0, got %lld", fn, (unsigned long long)i,
                         (long long)storageDims[i]);
            return false;
        }
        if (!mf_mul_ok(storage, storageDims[i], &storage)) {
            mf_set_error("%s: the product of storageDims overflows int64", fn);
            return false;
        }
    }
    int64_t storage_bytes;
    if (!mf_mul_ok(storage, (int64_t)es, &storage_bytes)) {
        mf_set_error("%s: storage of %lld elements of %zu bytes overflows int64", fn,
                     (long long)storage, es);
        return false;
    }

    int64_t strides[MF_MAX_DIMS];
    if (stride != NULL) {
        for (uint64_t i = 0; i < viewDimsNum; i++) {
            /* Operators step through memory in bytes; a stride of a size-1 or
             * empty dim is never bounded by the storage check, so bound it here. */
            int64_t bytes;
            if (!mf_mul_ok(stride[i], (int64_t)es, &bytes)) {
                mf_set_error("%s: stride[%llu] = %lld times %zu bytes overflows int64", fn, (unsigned long long)i,
                             (long long)stride[i], es);
                return false;
            }
            strides[i] = stride[i];
        }
    } else {
        int64_t s = 1;
        for (uint64_t i = viewDimsNum; i-- > 0;) {
            strides[i] = s;
            int64_t bytes; /* as for given strides: operators form stride * elemsize */
            if (!mf_mul_ok(s, (int64_t)es, &bytes)) {
                mf_set_error("%s: the row-major stride of viewDims[%llu] times %zu bytes overflows int64", fn,
                             (unsigned long long)i, es);
                return false;
            }
            /* Zero dims are skipped, so a view with a zero dim can have a
             * non-zero product of the others that overflows though numel is 0. */
            if (!mf_mul_ok(s, viewDims[i] ? viewDims[i] : 1, &s)) {
                mf_set_error("%s: the row-major strides of viewDims overflow int64", fn);
                return false;
            }
        }
    }

    /* The reachable element offsets span [lo, hi]; both must lie in storage. */
    if (numel > 0) {
        int64_t lo = offset, hi = offset;
        for (uint64_t i = 0; i < viewDimsNum; i++) {
            int64_t reach;
            if (!mf_mul_ok(viewDims[i] - 1, strides[i], &reach) ||
                !mf_add_ok(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi)) {
                mf_set_error("%s: stride[%llu] = %lld makes element offsets overflow int64", fn,
                             (unsigned long long)i, (long long)strides[i]);
                return false;
            }
        }
        if (lo < 0 || hi >= storage) {
            mf_set_error("%s: the view reaches elements [%lld, %lld] but storage holds %lld", fn,
                         (long long)lo, (long long)hi, (long long)storage);
            return false;
        }
    }

    t->dtype = dataType;
    t->format = format;
    t->ndim = (int32_t)viewDimsNum;
    for (uint64_t i = 0; i < viewDimsNum; i++) {
        t->dims[i] = viewDims[i];
        t->strides[i] = strides[i];
    }
    /* An empty view reaches no element, so its offset means nothing; keeping
     * it would let data + offset * elemsize overflow where operators form the base. */
    t->offset = numel > 0 ? offset : 0;
    t->numel = numel;
    t->storage_numel = storage;
    t->storage_ndim = (int32_t)storageDimsNum;
    for (uint64_t i = 0; i < storageDimsNum; i++) t->storage_dims[i] = storageDims[i];
    t->data = tensorData;
    return true;
}

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t *stride, int64_t offset, aclFormat format,
                           const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
    aclTensor d = {0};
    if (!describe("aclCreateTensor", &d, viewDims, viewDimsNum, dataType, stride, offset, format, storageDims,
                  storageDimsNum, tensorData))
        return NULL;
    aclTensor *t = mf_malloc(sizeof *t);
    if (t == NULL) {
        mf_set_error("aclCreateTensor: out of memory");
        return NULL;
    }
    *t = d;
    if (!mf_registry_add(&mf_tensors, t)) {
        free(t);
        mf_set_error("aclCreateTensor: out of memory");
        return NULL;
    }
    return t;
}

aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
    if (tensor == NULL) return ACLNN_SUCCESS;
    if (!mf_registry_remove(&mf_tensors, tensor))
        return mf_fail(ACLNN_ERR_PARAM_INVALID,
                       "aclDestroyTensor: %p is not a live tensor (destroyed twice?)", (const void *)tensor);
    free((void *)tensor);
    return ACLNN_SUCCESS;
}

aclnnStatus aclInitTensor(aclTensor *tensor, const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                          const int64_t *stride, int64_t offset, aclFormat format, const int64_t *storageDims,
                          uint64_t storageDimsNum, void *tensorDataAddr) {
    static const char fn[] = "aclInitTensor";
    if (tensor == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: tensor is NULL", fn);
    if (!mf_tensor_live(tensor))
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %p is not a live tensor", fn, (void *)tensor);
    aclTensor d = {0};
    if (!describe(fn, &d, viewDims, viewDimsNum, dataType, stride, offset, format, storageDims, storageDimsNum,
                  tensorDataAddr))
        return ACLNN_ERR_PARAM_INVALID;
    *tensor = d;
    return ACLNN_SUCCESS;
}

/* NULL: 161001 naming what; a pointer that is not a live tensor: 161002. */
static aclnnStatus check_tensor(const char *fn, const aclTensor *t) {
    if (t == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: tensor is NULL", fn);
    if (!mf_tensor_live(t))
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %p is not a live tensor (destroyed?)", fn, (const void *)t);
    return ACLNN_SUCCESS;
}

/* ---- arrays handed to the caller ----
 * CANN allocates them with new[] and its samples release them with delete[].
 * When the process has the C++ runtime (every C++ program), moefr allocates
 * them with that same operator new[] (nothrow form), so delete[] is exact;
 * otherwise (a C program) with malloc. moefrFreeArray releases either way. */
struct mf_nothrow_t { char unused; };
extern void *_ZnamRKSt9nothrow_t(size_t, const struct mf_nothrow_t *) __attribute__((weak));
extern void _ZdaPv(void *) __attribute__((weak));
extern const struct mf_nothrow_t _ZSt7nothrow __attribute__((weak));

static bool have_cxx_new(void) { return _ZnamRKSt9nothrow_t && _ZdaPv && &_ZSt7nothrow; }

static int64_t *new_i64_array(size_t n) {
    size_t bytes = (n ? n : 1) * sizeof(int64_t); /* n <= 8: no overflow */
    if (!have_cxx_new()) return mf_malloc(bytes);
    return mf_fault_hit(MF_FAULT_HEAP) ? NULL : _ZnamRKSt9nothrow_t(bytes, &_ZSt7nothrow);
}

void moefrFreeArray(void *array) {
    if (array == NULL) return;
    if (have_cxx_new())
        _ZdaPv(array);
    else
        free(array);
}

static aclnnStatus give_array(const char *fn, const int64_t *src, int32_t n, int64_t **out, uint64_t *count) {
    int64_t *a = new_i64_array((size_t)n);
    if (a == NULL) return mf_fail(ACLNN_ERR_INNER_NULLPTR, "%s: out of memory", fn);
    for (int32_t i = 0; i < n; i++) a[i] = src[i];
    *out = a;
    *count = (uint64_t)n;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims, uint64_t *viewDimsNum) {
    static const char fn[] = "aclGetViewShape";
    if (viewDims == NULL || viewDimsNum == NULL)
        return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", fn, viewDims == NULL ? "viewDims" : "viewDimsNum");
    aclnnStatus rc = check_tensor(fn, tensor);
    return rc != ACLNN_SUCCESS ? rc : give_array(fn, tensor->dims, tensor->ndim, viewDims, viewDimsNum);
}

aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims, uint64_t *storageDimsNum) {
    static const char fn[] = "aclGetStorageShape";
    if (storageDims == NULL || storageDimsNum == NULL)
        return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", fn,
                       storageDims == NULL ? "storageDims" : "storageDimsNum");
    aclnnStatus rc = check_tensor(fn, tensor);
    return rc != ACLNN_SUCCESS ? rc
                               : give_array(fn, tensor->storage_dims, tensor->storage_ndim, storageDims, storageDimsNum);
}

aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue, uint64_t *stridesNum) {
    static const char fn[] = "aclGetViewStrides";
    if (stridesValue == NULL || stridesNum == NULL)
        return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", fn, stridesValue == NULL ? "stridesValue" : "stridesNum");
    aclnnStatus rc = check_tensor(fn, tensor);
    return rc != ACLNN_SUCCESS ? rc : give_array(fn, tensor->strides, tensor->ndim, stridesValue, stridesNum);
}

aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset) {
    if (offset == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewOffset: offset is NULL");
    aclnnStatus rc = check_tensor("aclGetViewOffset", tensor);
    if (rc == ACLNN_SUCCESS) *offset = tensor->offset;
    return rc;
}

aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format) {
    if (format == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat: format is NULL");
    aclnnStatus rc = check_tensor("aclGetFormat", tensor);
    if (rc == ACLNN_SUCCESS) *format = tensor->format;
    return rc;
}

aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType) {
    if (dataType == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetDataType: dataType is NULL");
    aclnnStatus rc = check_tensor("aclGetDataType", tensor);
    if (rc == ACLNN_SUCCESS) *dataType = tensor->dtype;
    return rc;
}

aclnnStatus aclSetRawTensorAddr(aclTensor *tensor, void *addr) {
    aclnnStatus rc = check_tensor("aclSetRawTensorAddr", tensor);
    if (rc == ACLNN_SUCCESS) tensor->data = addr;
    return rc;
}

aclnnStatus aclGetRawTensorAddr(const aclTensor *tensor, void **addr) {
    if (addr == NULL) return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetRawTensorAddr: addr is NULL");
    aclnnStatus rc = check_tensor("aclGetRawTensorAddr", tensor);
    if (rc == ACLNN_SUCCESS) *addr = tensor->data;
    return rc;
}
