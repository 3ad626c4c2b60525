/* routing_map_acc.h - the routing-map unpermute's row loops, included with
 * GT_W (4 or 8), RM_ACC and RM_SUM naming the functions: routing_map.c
 * (generic, four lanes) and routing_map_avx2.c (-mavx2, no FMA, eight
 * lanes); fp32 products and sums, the same operations in either build.
 * RM_ACC: acc[j] (= when first, else +=) the n elements of row (s bytes
 * apart, dtype) times pv (scale) or as they are.
 * RM_SUM: the same for nr dense rows at once, in their order, as nr RM_ACC
 * calls would do (first: the first row starts the sums), but each element's
 * sum stays in a register across the rows; FLOAT and BF16 only. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "aclnn/aclnn_base.h"
#include "kernels/fp.h"
#include "ops/gv.h"

#ifndef MOEFR_RM_LD_
#define MOEFR_RM_LD_
static inline float rm_ld(const char *q, int dtype) {
    float f;
    uint16_t h;
    if (dtype == ACL_FLOAT) {
        memcpy(&f, q, 4);
        return f;
    }
    memcpy(&h, q, 2);
    if (dtype == ACL_BF16) {
        const uint32_t b = (uint32_t)h << 16;
        memcpy(&f, &b, 4);
        return f;
    }
    return mf_f16_to_f32(h);
}
#endif

/* S: the stride, a constant for dense rows (the vectoriser then loads whole
 * vectors; with a variable stride it assembles them lane by lane) */
#define RM_LOOP_S(DT, S)                                                                     \
    do {                                                                                     \
        if (first && scale)                                                                  \
            for (int64_t j = 0; j < n; j++) acc[j] = rm_ld(row + j * (S), DT) * pv;          \
        else if (first)                                                                      \
            for (int64_t j = 0; j < n; j++) acc[j] = rm_ld(row + j * (S), DT);               \
        else if (scale)                                                                      \
            for (int64_t j = 0; j < n; j++) acc[j] += rm_ld(row + j * (S), DT) * pv;         \
        else                                                                                 \
            for (int64_t j = 0; j < n; j++) acc[j] += rm_ld(row + j * (S), DT);              \
    } while (0)
#define RM_LOOP(DT)                                                                          \
    do {                                                                                     \
        if (s == ((DT) == ACL_FLOAT ? 4 : 2)) RM_LOOP_S(DT, (DT) == ACL_FLOAT ? 4 : 2);      \
        else RM_LOOP_S(DT, s);                                                               \
    } while (0)
void RM_ACC(float *acc, const char *row, int64_t s, int dtype, int64_t n, float pv, bool first, bool scale);
void RM_ACC(float *acc, const char *row, int64_t s, int dtype, int64_t n, float pv, bool first, bool scale) {
    switch (dtype) {
    case ACL_FLOAT: RM_LOOP(ACL_FLOAT); break;
    case ACL_BF16: RM_LOOP(ACL_BF16); break;
    default: RM_LOOP(ACL_FLOAT16); break;
    }
}
#undef RM_LOOP
#undef RM_LOOP_S

/* n elements of a dense FLOAT or BF16 row from element j, widened */
static inline gvf rm_vld(const char *row, int dtype, int64_t j) {
    return dtype == ACL_FLOAT ? gv_loadb(row + 4 * j) : gv_load_bf16(row + 2 * j);
}

void RM_SUM(float *acc, const char *const *rows, const float *pv, int nr, int dtype, int64_t n, bool first,
            bool scale);
/* RM_U vectors of elements at once: each element's sum over the rows is a
 * chain of dependent adds (their order is the result's), so independent
 * elements' chains are interleaved to hide the adds' latency (in L1 on Zen 4:
 * 0.050 -> 0.040 ns per fp32 element-row, 0.13 -> 0.10 bf16) */
#define RM_U 4
#define RM_UNROLL _Pragma("GCC unroll 4")
void RM_SUM(float *acc, const char *const *rows, const float *pv, int nr, int dtype, int64_t n, bool first,
            bool scale) {
    int64_t j = 0;
    for (; j + RM_U * GT_W <= n; j += RM_U * GT_W) {
        gvf a[RM_U];
        int q = 0;
        if (first) {
            RM_UNROLL for (int u = 0; u < RM_U; u++) {
                a[u] = rm_vld(rows[0], dtype, j + u * GT_W);
                if (scale) a[u] = a[u] * gv_splat(pv[0]);
            }
            q = 1;
        } else {
            RM_UNROLL for (int u = 0; u < RM_U; u++) a[u] = gv_load(acc + j + u * GT_W);
        }
        for (; q < nr; q++) {
            const gvf p = gv_splat(scale ? pv[q] : 1.0f);
            RM_UNROLL for (int u = 0; u < RM_U; u++) {
                const gvf x = rm_vld(rows[q], dtype, j + u * GT_W);
                a[u] = scale ? a[u] + x * p : a[u] + x;
            }
        }
        RM_UNROLL for (int u = 0; u < RM_U; u++) gv_store(acc + j + u * GT_W, a[u]);
    }
    for (; j + GT_W <= n; j += GT_W) {
        int q = 0;
        gvf a;
        if (first) {
            a = rm_vld(rows[0], dtype, j);
            if (scale) a = a * gv_splat(pv[0]);
            q = 1;
        } else {
            a = gv_load(acc + j);
        }
        for (; q < nr; q++) {
            const gvf x = rm_vld(rows[q], dtype, j);
            a = scale ? a + x * gv_splat(pv[q]) : a + x;
        }
        gv_store(acc + j, a);
    }
    for (; j < n; j++) /* the tail, one element at a time in the same order */
        for (int q = 0; q < nr; q++) {
            const float x = rm_ld(rows[q] + j * (dtype == ACL_FLOAT ? 4 : 2), dtype);
            const float t = scale ? x * pv[q] : x;
            acc[j] = first && q == 0 ? t : acc[j] + t;
        }
}
