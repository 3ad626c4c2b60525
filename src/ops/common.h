/* common.h - what both operators' plan and run share: row views over 2-D and
 * 3-D tensors, scalar element readers, phase-1 check helpers, and the phase-2
 * index validation over a bitmap carved from the workspace. */
#ifndef MOEFR_OPS_COMMON_H_
#define MOEFR_OPS_COMMON_H_

#include <string.h>

#include "internal.h"
#include "kernels/fp.h"
#include "kernels/kernels.h"

/* Rows of H elements inside a 2-D (rows, H) or 3-D (G, rows/G, H) tensor:
 * row d lives at data + (d / group) * s_group + (d % group) * s_row, and its
 * element j at + j * s_col (all strides in bytes). group == INT64_MAX when the
 * outer dims collapse to one stride, which skips the division. */
typedef struct mf_rows {
    char *data;
    int64_t rows;
    int64_t group, s_group, s_row, s_col;
} mf_rows;

static inline char *mf_row(const mf_rows *v, int64_t d) {
    if (v->group == INT64_MAX) return v->data + d * v->s_row;
    return v->data + (d / v->group) * v->s_group + (d % v->group) * v->s_row;
}

/* Row view of a 2-D or 3-D tensor whose last dim is H. */
mf_rows mf_rows_of(const aclTensor *t);
/* True when the kernels can read the rows in place (unit element stride). */
static inline bool mf_rows_dense(const mf_rows *v, int64_t H, size_t es) {
    return H <= 1 || v->s_col == (int64_t)es;
}
/* Copies every row of src into dst (rows x H, contiguous); returns the view. */
mf_rows mf_rows_pack(const mf_rows *src, int64_t H, size_t es, void *dst);

/* An element of a small 1-D or 2-D tensor (index, scales, expertIdx). */
typedef struct mf_small {
    const char *data;
    int64_t s0, s1; /* bytes */
    int dtype;
} mf_small;
mf_small mf_small_of(const aclTensor *t);
/* Address of element (i, k) of a small input (for prefetching). */
static inline const char *mf_small_at(const mf_small *v, int64_t i, int64_t k) { return v->data + i * v->s0 + k * v->s1; }

static inline int32_t mf_small_i32(const mf_small *v, int64_t i, int64_t k) {
    int32_t x;
    memcpy(&x, v->data + i * v->s0 + k * v->s1, 4);
    return x;
}
/* Element (i, k) of a small INT32 or INT64 input, widened to int64. */
static inline int64_t mf_small_index(const mf_small *v, int64_t i, int64_t k) {
    const char *p = v->data + i * v->s0 + k * v->s1;
    if (v->dtype == ACL_INT64) {
        int64_t x;
        memcpy(&x, p, 8);
        return x;
    }
    int32_t x;
    memcpy(&x, p, 4);
    return x;
}
/* Element (i, k) of a small float input, widened exactly to fp32. Inline:
 * the row loops call it once per row. */
static inline float mf_small_f32(const mf_small *v, int64_t i, int64_t k) {
    const char *p = v->data + i * v->s0 + k * v->s1;
    uint16_t h;
    float f;
    switch (v->dtype) {
    case ACL_FLOAT: memcpy(&f, p, 4); return f;
    case ACL_FLOAT16: memcpy(&h, p, 2); return mf_f16_to_f32(h);
    default: memcpy(&h, p, 2); return mf_bf16_to_f32(h);
    }
}

/* n elements of dtype (FLOAT, FLOAT16, BF16) at p, step bytes apart, widened
 * exactly to fp32 at d[j * dstep]; one loop per dtype. */
void mf_widen_f32(const char *p, int64_t step, int dtype, int64_t n, float *d, int64_t dstep);
/* n fp32 values s[j], rounded once (to nearest even) to dtype and stored at
 * p + j * step. */
void mf_narrow_f32(char *p, int64_t step, int dtype, int64_t n, const float *s);

/* Output bytes above which stores go around the caches (streaming): the
 * L3 size, capped at 32 MiB; nobody reads such outputs soon enough. */
int64_t mf_nt_threshold(void);

/* Table index of a floating dtype, MF_NUM_DT for others. */
mf_dt mf_dt_of(int dtype);
/* Stores v, rounded once to dtype (fp32/fp16/bf16), at p. */
static inline void mf_store_f64(void *p, int dtype, double v) {
    uint16_t h;
    float f;
    switch (dtype) {
    case ACL_FLOAT: f = mf_f64_to_f32(v); memcpy(p, &f, 4); break;
    case ACL_FLOAT16: h = mf_f64_to_f16(v); memcpy(p, &h, 2); break;
    default: h = mf_f64_to_bf16(v); memcpy(p, &h, 2); break;
    }
}

/* Phase-1 helpers: each returns ACLNN_SUCCESS or sets the message and returns
 * the status. `name` is the parameter name as the CANN header spells it. */
aclnnStatus mf_check_live(const char *op, const char *name, const aclTensor *t);
aclnnStatus mf_check_data(const char *op, const char *name, const aclTensor *t);
aclnnStatus mf_check_float_dtype(const char *op, const char *name, const aclTensor *t);
aclnnStatus mf_check_same_dtype(const char *op, const char *name, const aclTensor *t,
                                const char *ref_name, const aclTensor *ref);
aclnnStatus mf_check_dtype_is(const char *op, const char *name, const aclTensor *t, int dtype);
aclnnStatus mf_check_nd(const char *op, const char *name, const aclTensor *t);
aclnnStatus mf_check_contiguous(const char *op, const char *name, const aclTensor *t);
aclnnStatus mf_check_rank(const char *op, int status, const char *name, const aclTensor *t, int rank);
aclnnStatus mf_check_dim(const char *op, int status, const char *name, const aclTensor *t, int dim,
                         int64_t want);
/* Two elements of t share memory (a stride <= 0 on a dim of more than one
 * element, or a stride shorter than the span of the dims inside it): an
 * output like that cannot take one value per element deterministically (the
 * rule of grouped_matmul.c's and dynamic_quant.c's outputs). */
bool mf_self_overlaps(const aclTensor *t);

/* Phase-2 index validation. Values must lie in [lo, hi); no value >= 0 may
 * repeat (lo == -1 lets -1 repeat). Marks each value >= 0 in `seen` (a bitmap
 * of hi bits, cleared here). Index i of a (rows, cols) tensor is reported as
 * name[i] when cols == 0, else name[i / cols][i % cols]. */
aclnnStatus mf_check_index(const char *op, const char *name, const mf_small *idx, int64_t n,
                           int64_t cols_for_2d, int64_t lo, int64_t hi, uint64_t *seen);
/* Every element of the (rows, cols) int32 tensor in [0, hi). */
aclnnStatus mf_check_range_2d(const char *op, const char *name, const mf_small *v, int64_t rows,
                              int64_t cols, int64_t hi);
static inline uint64_t mf_bitmap_bytes(int64_t bits) { return (uint64_t)((bits + 511) / 512) * 64; }
static inline bool mf_bit(const uint64_t *m, int64_t i) { return (m[i >> 6] >> (i & 63)) & 1u; }

#endif /* MOEFR_OPS_COMMON_H_ */
