/* objects.c - the aclnn value objects: scalars, int/float/bool arrays, tensor
 * and scalar lists. Each is registered, so a stale or foreign pointer given to
 * a destroy or size call gets ACLNN_ERR_PARAM_INVALID instead of a crash.
 * Lists own their elements (destroying a list destroys them), as in CANN. */
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "internal.h"

aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
    if (value == NULL) {
        mf_set_error("aclCreateScalar: value is NULL");
        return NULL;
    }
    size_t es = aclDataTypeSize(dataType);
    if (es == 0 || es > sizeof(((aclScalar *)0)->bytes)) {
        mf_set_error("aclCreateScalar: dataType %d has no scalar representation", (int)dataType);
        return NULL;
    }
    aclScalar *s = mf_calloc(1, sizeof *s);
    if (s == NULL || !mf_registry_add(&mf_scalars, s)) {
        free(s);
        mf_set_error("aclCreateScalar: out of memory");
        return NULL;
    }
    s->dtype = dataType;
    memcpy(s->bytes, value, es);
    return s;
}

aclnnStatus aclDestroyScalar(const aclScalar *scalar) {
    if (scalar == NULL) return ACLNN_SUCCESS;
    if (!mf_registry_remove(&mf_scalars, scalar))
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyScalar: %p is not a live scalar (destroyed twice?)",
                       (const void *)scalar);
    free((void *)scalar);
    return ACLNN_SUCCESS;
}

static const char *array_name(mf_array_kind k) {
    return k == MF_ARRAY_INT ? "aclIntArray" : k == MF_ARRAY_FLOAT ? "aclFloatArray" : "aclBoolArray";
}

static void *new_array(const char *fn, mf_array_kind kind, const void *value, uint64_t size, size_t elem) {
    if (value == NULL && size > 0) {
        mf_set_error("%s: value is NULL but size is %llu", fn, (unsigned long long)size);
        return NULL;
    }
    if (size > (uint64_t)(SIZE_MAX / 2) / elem) {
        mf_set_error("%s: size %llu is too large", fn, (unsigned long long)size);
        return NULL;
    }
    mf_array *a = mf_calloc(1, sizeof *a);
    void *vals = size ? mf_malloc((size_t)size * elem) : NULL;
    if (a == NULL || (size && vals == NULL) || !mf_registry_add(&mf_arrays, a)) {
        free(a);
        free(vals);
        mf_set_error("%s: out of memory", fn);
        return NULL;
    }
    a->kind = kind;
    a->n = size;
    a->values = vals;
    if (size) memcpy(vals, value, (size_t)size * elem);
    return a;
}

aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
    return new_array("aclCreateIntArray", MF_ARRAY_INT, value, size, sizeof(int64_t));
}
aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size) {
    return new_array("aclCreateFloatArray", MF_ARRAY_FLOAT, value, size, sizeof(float));
}
aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size) {
    return new_array("aclCreateBoolArray", MF_ARRAY_BOOL, value, size, sizeof(bool));
}

/* The array behind p when p is a live array of that kind, else NULL. The
 * registry is shared by the three kinds, so the kind is checked too. */
static mf_array *live_array(const void *p, mf_array_kind kind) {
    if (!mf_registry_has(&mf_arrays, p)) return NULL;
    mf_array *a = (mf_array *)p;
    return a->kind == kind ? a : NULL;
}

static aclnnStatus destroy_array(const char *fn, const void *p, mf_array_kind kind) {
    if (p == NULL) return ACLNN_SUCCESS;
    mf_array *a = live_array(p, kind);
    if (a == NULL || !mf_registry_remove(&mf_arrays, a))
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %p is not a live %s (destroyed twice?)", fn, p, array_name(kind));
    free(a->values);
    free(a);
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
    return destroy_array("aclDestroyIntArray", array, MF_ARRAY_INT);
}
aclnnStatus aclDestroyFloatArray(const aclFloatArray *array) {
    return destroy_array("aclDestroyFloatArray", array, MF_ARRAY_FLOAT);
}
aclnnStatus aclDestroyBoolArray(const aclBoolArray *array) {
    return destroy_array("aclDestroyBoolArray", array, MF_ARRAY_BOOL);
}

static aclnnStatus array_size(const char *fn, const void *p, mf_array_kind kind, uint64_t *size) {
    if (p == NULL || size == NULL)
        return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", fn, p == NULL ? "array" : "size");
    mf_array *a = live_array(p, kind);
    if (a == NULL) return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %p is not a live %s", fn, p, array_name(kind));
    *size = a->n;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size) {
    return array_size("aclGetIntArraySize", array, MF_ARRAY_INT, size);
}
aclnnStatus aclGetFloatArraySize(const aclFloatArray *array, uint64_t *size) {
    return array_size("aclGetFloatArraySize", array, MF_ARRAY_FLOAT, size);
}
aclnnStatus aclGetBoolArraySize(const aclBoolArray *array, uint64_t *size) {
    return array_size("aclGetBoolArraySize", array, MF_ARRAY_BOOL, size);
}

/* ---- lists ---- */
static bool item_live(mf_list_kind kind, const void *item) {
    return item == NULL || mf_registry_has(kind == MF_LIST_TENSOR ? &mf_tensors : &mf_scalars, item);
}

static void *new_list(const char *fn, mf_list_kind kind, const void *const *value, uint64_t size) {
    const char *what = kind == MF_LIST_TENSOR ? "tensor" : "scalar";
    if (value == NULL && size > 0) {
        mf_set_error("%s: value is NULL but size is %llu", fn, (unsigned long long)size);
        return NULL;
    }
    if (size > (uint64_t)(SIZE_MAX / 2) / sizeof(void *)) {
        mf_set_error("%s: size %llu is too large", fn, (unsigned long long)size);
        return NULL;
    }
    for (uint64_t i = 0; i < size; i++)
        if (!item_live(kind, value[i])) {
            mf_set_error("%s: value[%llu] = %p is not a live %s", fn, (unsigned long long)i, value[i], what);
            return NULL;
        }
    mf_list *l = mf_calloc(1, sizeof *l);
    const void **items = size ? mf_malloc((size_t)size * sizeof *items) : NULL;
    if (l == NULL || (size && items == NULL) || !mf_registry_add(&mf_lists, l)) {
        free(l);
        free(items);
        mf_set_error("%s: out of memory", fn);
        return NULL;
    }
    l->kind = kind;
    l->n = size;
    l->items = items;
    for (uint64_t i = 0; i < size; i++) items[i] = value[i];
    return l;
}

aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size) {
    return new_list("aclCreateTensorList", MF_LIST_TENSOR, (const void *const *)value, size);
}
aclScalarList *aclCreateScalarList(const aclScalar *const *value, uint64_t size) {
    return new_list("aclCreateScalarList", MF_LIST_SCALAR, (const void *const *)value, size);
}

static mf_list *live_list(const void *p, mf_list_kind kind) {
    if (!mf_registry_has(&mf_lists, p)) return NULL;
    mf_list *l = (mf_list *)p;
    return l->kind == kind ? l : NULL;
}

/* Destroys the list and each element still alive. An element destroyed
 * already (or listed twice) is skipped and reported as ACLNN_ERR_PARAM_INVALID
 * after the rest is released. */
static aclnnStatus destroy_list(const char *fn, const void *p, mf_list_kind kind) {
    const char *what = kind == MF_LIST_TENSOR ? "aclTensorList" : "aclScalarList";
    if (p == NULL) return ACLNN_SUCCESS;
    mf_list *l = live_list(p, kind);
    if (l == NULL || !mf_registry_remove(&mf_lists, l))
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %p is not a live %s (destroyed twice?)", fn, p, what);
    aclnnStatus rc = ACLNN_SUCCESS;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < l->n; i++) {
        aclnnStatus r = kind == MF_LIST_TENSOR ? aclDestroyTensor(l->items[i]) : aclDestroyScalar(l->items[i]);
        if (r != ACLNN_SUCCESS && rc == ACLNN_SUCCESS) {
            rc = r;
            bad = i;
        }
    }
    free(l->items);
    free(l);
    if (rc != ACLNN_SUCCESS)
        mf_set_error("%s: element %llu was destroyed already (the list owns its elements); the list is released", fn,
                     (unsigned long long)bad);
    return rc;
}

void mf_list_release(const void *p) {
    mf_list *l = p ? live_list(p, MF_LIST_TENSOR) : NULL;
    if (l == NULL || !mf_registry_remove(&mf_lists, l)) return;
    free(l->items);
    free(l);
}

aclnnStatus aclDestroyTensorList(const aclTensorList *array) {
    return destroy_list("aclDestroyTensorList", array, MF_LIST_TENSOR);
}
aclnnStatus aclDestroyScalarList(const aclScalarList *array) {
    return destroy_list("aclDestroyScalarList", array, MF_LIST_SCALAR);
}

static aclnnStatus list_size(const char *fn, const void *p, mf_list_kind kind, uint64_t *size) {
    if (p == NULL || size == NULL)
        return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", fn,
                       p == NULL ? (kind == MF_LIST_TENSOR ? "tensorList" : "scalarList") : "size");
    mf_list *l = live_list(p, kind);
    if (l == NULL)
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %p is not a live %s", fn, p,
                       kind == MF_LIST_TENSOR ? "aclTensorList" : "aclScalarList");
    *size = l->n;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetTensorListSize(const aclTensorList *tensorList, uint64_t *size) {
    return list_size("aclGetTensorListSize", tensorList, MF_LIST_TENSOR, size);
}
aclnnStatus aclGetScalarListSize(const aclScalarList *scalarList, uint64_t *size) {
    return list_size("aclGetScalarListSize", scalarList, MF_LIST_SCALAR, size);
}
