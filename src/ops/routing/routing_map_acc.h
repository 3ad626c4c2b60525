/* routing_map_acc.h - the routing-map unpermute's row loop, included with
 * RM_ACC naming the function: routing_map.c (generic) and routing_map_avx2.c
 * (-mavx2, no FMA). acc[j] (= when first, else +=) the n elements of row (s
 * bytes apart, dtype) times pv (scale) or as they are; fp32 products and sums,
 * the same operations in either build. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "aclnn/aclnn_base.h"
#include "kernels/fp.h"

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

#define RM_LOOP(DT)                                                                          \
    do {                                                                                     \
        if (first && scale)                                                                  \
            for (int64_t j = 0; j < n; j++) acc[j] = rm_ld(row + j * s, DT) * pv;            \
        else if (first)                                                                      \
            for (int64_t j = 0; j < n; j++) acc[j] = rm_ld(row + j * s, DT);                 \
        else if (scale)                                                                      \
            for (int64_t j = 0; j < n; j++) acc[j] += rm_ld(row + j * s, DT) * pv;           \
        else                                                                                 \
            for (int64_t j = 0; j < n; j++) acc[j] += rm_ld(row + j * s, DT);                \
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
