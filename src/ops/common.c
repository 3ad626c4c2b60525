/* common.c - shared plan/run helpers for the finalize-routing operators. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ops/common.h"

mf_rows mf_rows_of(const aclTensor *t) {
    int64_t es = (int64_t)mf_dtype_size(t->dtype);
    mf_rows v;
    v.data = mf_tensor_base(t);
    v.s_col = t->strides[t->ndim - 1] * es;
    if (t->ndim == 3) {
        v.rows = t->dims[0] * t->dims[1];
        v.group = t->dims[1];
        v.s_group = t->strides[0] * es;
        v.s_row = t->strides[1] * es;
        if (t->dims[0] <= 1 || v.s_group == v.group * v.s_row) v.group = INT64_MAX;
    } else {
        v.rows = t->dims[0];
        v.group = INT64_MAX;
        v.s_group = 0;
        v.s_row = t->strides[0] * es;
    }
    return v;
}

mf_rows mf_rows_pack(const mf_rows *src, int64_t H, size_t es, void *dst) {
    char *o = dst;
    for (int64_t d = 0; d < src->rows; d++) {
        const char *row = mf_row(src, d);
        for (int64_t j = 0; j < H; j++) memcpy(o + (d * H + j) * (int64_t)es, row + j * src->s_col, es);
    }
    mf_rows v = {o, src->rows, INT64_MAX, 0, H * (int64_t)es, (int64_t)es};
    return v;
}

mf_small mf_small_of(const aclTensor *t) {
    int64_t es = (int64_t)mf_dtype_size(t->dtype);
    mf_small v = {mf_tensor_base(t), 0, 0, t->dtype};
    if (t->ndim >= 1) v.s0 = t->strides[0] * es;
    if (t->ndim >= 2) v.s1 = t->strides[1] * es;
    return v;
}

void mf_widen_f32(const char *p, int64_t step, int dtype, int64_t n, float *d, int64_t dstep) {
    uint16_t h;
    switch (dtype) {
    case ACL_FLOAT:
        if (step == 4 && dstep == 1) memcpy(d, p, (size_t)n * 4);
        else
            for (int64_t j = 0; j < n; j++) memcpy(&d[j * dstep], p + j * step, 4);
        break;
    case ACL_BF16:
        if (step == 2 && dstep == 1) /* contiguous: a loop the compiler vectorizes */
            for (int64_t j = 0; j < n; j++) {
                memcpy(&h, p + 2 * j, 2);
                d[j] = mf_bf16_to_f32(h);
            }
        else
            for (int64_t j = 0; j < n; j++) {
                memcpy(&h, p + j * step, 2);
                d[j * dstep] = mf_bf16_to_f32(h);
            }
        break;
    case ACL_INT8: /* exact */
        for (int64_t j = 0; j < n; j++) d[j * dstep] = (float)(int8_t)p[j * step];
        break;
    default:
        for (int64_t j = 0; j < n; j++) {
            memcpy(&h, p + j * step, 2);
            d[j * dstep] = mf_f16_to_f32(h);
        }
        break;
    }
}

void mf_narrow_f32(char *p, int64_t step, int dtype, int64_t n, const float *s) {
    uint16_t h;
    switch (dtype) {
    case ACL_FLOAT:
        if (step == 4) memcpy(p, s, (size_t)n * 4);
        else
            for (int64_t j = 0; j < n; j++) memcpy(p + j * step, &s[j], 4);
        break;
    case ACL_BF16:
        if (step == 2) /* contiguous: a loop the compiler vectorizes */
            for (int64_t j = 0; j < n; j++) {
                h = mf_f32_to_bf16(s[j]);
                memcpy(p + 2 * j, &h, 2);
            }
        else
            for (int64_t j = 0; j < n; j++) {
                h = mf_f32_to_bf16(s[j]);
                memcpy(p + j * step, &h, 2);
            }
        break;
    default:
        for (int64_t j = 0; j < n; j++) {
            h = mf_f32_to_f16(s[j]);
            memcpy(p + j * step, &h, 2);
        }
        break;
    }
}

mf_dt mf_dt_of(int dtype) {
    switch (dtype) {
    case ACL_FLOAT: return MF_F32;
    case ACL_FLOAT16: return MF_F16;
    case ACL_BF16: return MF_BF16;
    default: return MF_NUM_DT;
    }
}

aclnnStatus mf_check_live(const char *op, const char *name, const aclTensor *t) {
    if (t != NULL && !mf_tensor_live(t))
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s (%p) is not a live aclTensor", op, name,
                       (const void *)t);
    return ACLNN_SUCCESS;
}

aclnnStatus mf_check_data(const char *op, const char *name, const aclTensor *t) {
    if (t != NULL && t->numel > 0 && t->data == NULL)
        return mf_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s has %lld elements but its data is NULL", op, name,
                       (long long)t->numel);
    return ACLNN_SUCCESS;
}

aclnnStatus mf_check_float_dtype(const char *op, const char *name, const aclTensor *t) {
    if (t != NULL && mf_dt_of(t->dtype) == MF_NUM_DT)
        return mf_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: %s dtype must be FLOAT16, BFLOAT16 or FLOAT, got %s", op, name,
                       mf_dtype_name(t->dtype));
    return ACLNN_SUCCESS;
}

aclnnStatus mf_check_same_dtype(const char *op, const char *name, const aclTensor *t,
                                const char *ref_name, const aclTensor *ref) {
    if (t != NULL && t->dtype != ref->dtype)
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must equal %s dtype %s, got %s", op, name,
                       ref_name, mf_dtype_name(ref->dtype), mf_dtype_name(t->dtype));
    return ACLNN_SUCCESS;
}

aclnnStatus mf_check_dtype_is(const char *op, const char *name, const aclTensor *t, int dtype) {
    if (t != NULL && (int)t->dtype != dtype)
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must be %s, got %s", op, name,
                       mf_dtype_name(dtype), mf_dtype_name(t->dtype));
    return ACLNN_SUCCESS;
}

aclnnStatus mf_check_nd(const char *op, const char *name, const aclTensor *t) {
    if (t != NULL && t->format != ACL_FORMAT_ND)
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s format must be ND, got %s (%d)", op, name,
                       mf_format_name(t->format), (int)t->format);
    return ACLNN_SUCCESS;
}

aclnnStatus mf_check_contiguous(const char *op, const char *name, const aclTensor *t) {
    if (t != NULL && !mf_tensor_contiguous(t))
        return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be contiguous (an output)", op, name);
    return ACLNN_SUCCESS;
}

aclnnStatus mf_check_rank(const char *op, int status, const char *name, const aclTensor *t, int rank) {
    char buf[160];
    if (t != NULL && t->ndim != rank)
        return mf_fail(status, "%s: %s must be %d-D, got %d-D %s", op, name, rank, (int)t->ndim,
                       mf_shape_str(t, buf, sizeof buf));
    return ACLNN_SUCCESS;
}

aclnnStatus mf_check_dim(const char *op, int status, const char *name, const aclTensor *t, int dim,
                         int64_t want) {
    if (t != NULL && t->dims[dim] != want)
        return mf_fail(status, "%s: %s dim%d must be %lld, got %lld", op, name, dim, (long long)want,
                       (long long)t->dims[dim]);
    return ACLNN_SUCCESS;
}

static void report_pos(char *buf, size_t n, const char *name, int64_t i, int64_t cols) {
    if (cols > 0)
        snprintf(buf, n, "%s[%lld][%lld]", name, (long long)(i / cols), (long long)(i % cols));
    else
        snprintf(buf, n, "%s[%lld]", name, (long long)i);
}

aclnnStatus mf_check_index(const char *op, const char *name, const mf_small *idx, int64_t n,
                           int64_t cols_for_2d, int64_t lo, int64_t hi, uint64_t *seen) {
    memset(seen, 0, mf_bitmap_bytes(hi));
    char pos[96];
    for (int64_t i = 0; i < n; i++) {
        int64_t r = cols_for_2d > 0 ? i / cols_for_2d : i, c = cols_for_2d > 0 ? i % cols_for_2d : 0;
        int32_t d = mf_small_i32(idx, r, c);
        if (d < lo || d >= hi) {
            report_pos(pos, sizeof pos, name, i, cols_for_2d);
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s = %d is out of range [%lld, %lld)", op, pos,
                           (int)d, (long long)lo, (long long)hi);
        }
        if (d < 0) continue;
        uint64_t bit = 1ull << (d & 63);
        if (seen[d >> 6] & bit) {
            report_pos(pos, sizeof pos, name, i, cols_for_2d);
            return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s = %d repeats an earlier index", op, pos, (int)d);
        }
        seen[d >> 6] |= bit;
    }
    return ACLNN_SUCCESS;
}

aclnnStatus mf_check_range_2d(const char *op, const char *name, const mf_small *v, int64_t rows,
                              int64_t cols, int64_t hi) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            int32_t e = mf_small_i32(v, r, c);
            if (e < 0 || e >= hi)
                return mf_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s[%lld][%lld] = %d is out of range [0, %lld)",
                               op, name, (long long)r, (long long)c, (int)e, (long long)hi);
        }
    return ACLNN_SUCCESS;
}

int64_t mf_nt_threshold(void) {
    static _Atomic int64_t thr; /* racing first calls compute the same value */
    int64_t t = atomic_load_explicit(&thr, memory_order_relaxed);
    if (t == 0) {
        long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
        int64_t cap = (int64_t)32 << 20;
        t = l3 > 0 && l3 < cap ? l3 : cap;
        atomic_store_explicit(&thr, t, memory_order_relaxed);
    }
    return t;
}

bool mf_self_overlaps(const aclTensor *t) {
    int64_t st[MF_MAX_DIMS], sz[MF_MAX_DIMS];
    int n = 0;
    if (t->numel == 0) return false;
    for (int d = 0; d < t->ndim; d++)
        if (t->dims[d] > 1) {
            if (t->strides[d] <= 0) return true;
            int k = n++;
            while (k > 0 && st[k - 1] > t->strides[d]) st[k] = st[k - 1], sz[k] = sz[k - 1], k--;
            st[k] = t->strides[d], sz[k] = t->dims[d];
        }
    int64_t need = 1;
    for (int k = 0; k < n; k++) {
        if (st[k] < need) return true;
        if (__builtin_mul_overflow(st[k], sz[k], &need)) return false; /* beyond any storage: aclCreateTensor's to refuse */
    }
    return false;
}
