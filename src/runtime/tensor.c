/* tensor.c - aclTensor descriptors: dtype/format tables, creation with every
 * bounds and overflow check, contiguity. A descriptor never owns its data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

size_t mf_dtype_size(int dtype) {
    switch (dtype) {
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
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
    case ACL_FORMAT_NDC1HWC0: case ACL_FRACTAL_Z_3D:
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

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t *stride, int64_t offset, aclFormat format,
                           const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
    static const char fn[] = "aclCreateTensor";
    size_t es = mf_dtype_size(dataType);
    if (es == 0) {
        mf_set_error("%s: dataType %d is not supported", fn, (int)dataType);
        return NULL;
    }
    if (!mf_format_known(format)) {
        mf_set_error("%s: format %d is not a known aclFormat", fn, (int)format);
        return NULL;
    }
    if (viewDimsNum > MF_MAX_DIMS) {
        mf_set_error("%s: viewDimsNum must be at most %d, got %llu", fn, MF_MAX_DIMS,
                     (unsigned long long)viewDimsNum);
        return NULL;
    }
    if (storageDimsNum > MF_MAX_DIMS) {
        mf_set_error("%s: storageDimsNum must be at most %d, got %llu", fn, MF_MAX_DIMS,
                     (unsigned long long)storageDimsNum);
        return NULL;
    }
    if (viewDims == NULL && viewDimsNum > 0) {
        mf_set_error("%s: viewDims is NULL but viewDimsNum is %llu", fn, (unsigned long long)viewDimsNum);
        return NULL;
    }
    if (storageDims == NULL && storageDimsNum > 0) {
        mf_set_error("%s: storageDims is NULL but storageDimsNum is %llu", fn,
                     (unsigned long long)storageDimsNum);
        return NULL;
    }
    if (offset < 0) {
        mf_set_error("%s: offset must be >= 0, got %lld", fn, (long long)offset);
        return NULL;
    }

    int64_t numel = 1;
    for (uint64_t i = 0; i < viewDimsNum; i++) {
        if (viewDims[i] < 0) {
            mf_set_error("%s: viewDims[%llu] must be >= 0, got %lld", fn, (unsigned long long)i,
                         (long long)viewDims[i]);
            return NULL;
        }
        if (!mf_mul_ok(numel, viewDims[i], &numel)) {
            mf_set_error("%s: the product of viewDims overflows int64", fn);
            return NULL;
        }
    }
    int64_t storage = 1;
    for (uint64_t i = 0; i < storageDimsNum; i++) {
        if (storageDims[i] < 0) {
            mf_set_error("%s: storageDims[%llu] must be >= 0, got %lld", fn, (unsigned long long)i,
                         (long long)storageDims[i]);
            return NULL;
        }
        if (!mf_mul_ok(storage, storageDims[i], &storage)) {
            mf_set_error("%s: the product of storageDims overflows int64", fn);
            return NULL;
        }
    }
    int64_t storage_bytes;
    if (!mf_mul_ok(storage, (int64_t)es, &storage_bytes)) {
        mf_set_error("%s: storage of %lld elements of %zu bytes overflows int64", fn,
                     (long long)storage, es);
        return NULL;
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
                return NULL;
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
                return NULL;
            }
            /* Zero dims are skipped, so a view with a zero dim can have a
             * non-zero product of the others that overflows though numel is 0. */
            if (!mf_mul_ok(s, viewDims[i] ? viewDims[i] : 1, &s)) {
                mf_set_error("%s: the row-major strides of viewDims overflow int64", fn);
                return NULL;
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
                return NULL;
            }
        }
        if (lo < 0 || hi >= storage) {
            mf_set_error("%s: the view reaches elements [%lld, %lld] but storage holds %lld", fn,
                         (long long)lo, (long long)hi, (long long)storage);
            return NULL;
        }
    }

    aclTensor *t = calloc(1, sizeof *t);
    if (t == NULL) {
        mf_set_error("%s: out of memory", fn);
        return NULL;
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
    t->data = tensorData;
    if (!mf_registry_add(&mf_tensors, t)) {
        free(t);
        mf_set_error("%s: out of memory", fn);
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
