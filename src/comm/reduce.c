/* reduce.c - the element-wise reductions of HcclAllReduce / HcclReduceScatter,
 * one canonical order (rank 0, 1, ..., n-1) written once, so every rank, every
 * run and (later) every transport gets the same bits. Blocks of
 * MF_COMM_REDUCE_BLOCK elements keep the accumulators in a small stack array. */
#include <stdint.h>
#include <string.h>

#include "comm/comm.h"
#include "internal.h"
#include "kernels/fp.h"

/* Loads element i of a block as the accumulation type. */
static inline float ld_f32(int dt, const void *p, size_t i) {
    if (dt == HCCL_DATA_TYPE_FP32) {
        float v;
        memcpy(&v, (const char *)p + 4 * i, 4);
        return v;
    }
    uint16_t h;
    memcpy(&h, (const char *)p + 2 * i, 2);
    return dt == HCCL_DATA_TYPE_FP16 ? mf_f16_to_f32(h) : mf_bf16_to_f32(h);
}

static inline void st_f32(int dt, void *p, size_t i, float v) {
    if (dt == HCCL_DATA_TYPE_FP32) {
        memcpy((char *)p + 4 * i, &v, 4);
        return;
    }
    uint16_t h = dt == HCCL_DATA_TYPE_FP16 ? mf_f32_to_f16(v) : mf_f32_to_bf16(v);
    memcpy((char *)p + 2 * i, &h, 2);
}

/* max/min: NaN wins and stays (the first NaN's payload); else the larger
 * (smaller) value, the earlier rank's on ties. */
static void reduce_f32(int dt, int op, const void *const *src, uint32_t n, size_t len, void *dst) {
    float acc[MF_COMM_REDUCE_BLOCK];
    for (size_t i = 0; i < len; i++) acc[i] = ld_f32(dt, src[0], i);
    for (uint32_t q = 1; q < n; q++) {
        const void *s = src[q];
        switch (op) {
        case HCCL_REDUCE_SUM:
            for (size_t i = 0; i < len; i++) acc[i] = acc[i] + ld_f32(dt, s, i);
            break;
        case HCCL_REDUCE_PROD:
            for (size_t i = 0; i < len; i++) acc[i] = acc[i] * ld_f32(dt, s, i);
            break;
        case HCCL_REDUCE_MAX:
            for (size_t i = 0; i < len; i++) {
                float x = ld_f32(dt, s, i);
                if (acc[i] == acc[i] && (x != x || x > acc[i])) acc[i] = x;
            }
            break;
        default: /* HCCL_REDUCE_MIN */
            for (size_t i = 0; i < len; i++) {
                float x = ld_f32(dt, s, i);
                if (acc[i] == acc[i] && (x != x || x < acc[i])) acc[i] = x;
            }
            break;
        }
    }
    for (size_t i = 0; i < len; i++) st_f32(dt, dst, i, acc[i]);
}

static void reduce_f64(int op, const void *const *src, uint32_t n, size_t len, void *dst) {
    double acc[MF_COMM_REDUCE_BLOCK];
    memcpy(acc, src[0], len * 8);
    for (uint32_t q = 1; q < n; q++) {
        const char *s = src[q];
        for (size_t i = 0; i < len; i++) {
            double x;
            memcpy(&x, s + 8 * i, 8);
            switch (op) {
            case HCCL_REDUCE_SUM: acc[i] = acc[i] + x; break;
            case HCCL_REDUCE_PROD: acc[i] = acc[i] * x; break;
            case HCCL_REDUCE_MAX:
                if (acc[i] == acc[i] && (x != x || x > acc[i])) acc[i] = x;
                break;
            default:
                if (acc[i] == acc[i] && (x != x || x < acc[i])) acc[i] = x;
                break;
            }
        }
    }
    memcpy(dst, acc, len * 8);
}

/* Integers: loaded sign- (or zero-) extended into 64 bits; sum and prod in
 * uint64_t arithmetic wrap exactly like the narrow type's, max/min compare the
 * extended values. */
static inline uint64_t ld_int(int dt, const void *p, size_t i) {
    const char *c = p;
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: { int8_t v; memcpy(&v, c + i, 1); return (uint64_t)(int64_t)v; }
    case HCCL_DATA_TYPE_INT16: { int16_t v; memcpy(&v, c + 2 * i, 2); return (uint64_t)(int64_t)v; }
    case HCCL_DATA_TYPE_INT32: { int32_t v; memcpy(&v, c + 4 * i, 4); return (uint64_t)(int64_t)v; }
    default: { uint64_t v; memcpy(&v, c + 8 * i, 8); return v; } /* INT64, UINT64 */
    }
}

static inline void st_int(int dt, void *p, size_t i, uint64_t v) {
    char *c = p;
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: { uint8_t t = (uint8_t)v; memcpy(c + i, &t, 1); break; }
    case HCCL_DATA_TYPE_INT16: { uint16_t t = (uint16_t)v; memcpy(c + 2 * i, &t, 2); break; }
    case HCCL_DATA_TYPE_INT32: { uint32_t t = (uint32_t)v; memcpy(c + 4 * i, &t, 4); break; }
    default: memcpy(c + 8 * i, &v, 8); break;
    }
}

static inline bool int_gt(bool is_unsigned, uint64_t a, uint64_t b) {
    return is_unsigned ? a > b : (int64_t)a > (int64_t)b;
}

static void reduce_int(int dt, int op, const void *const *src, uint32_t n, size_t len, void *dst) {
    uint64_t acc[MF_COMM_REDUCE_BLOCK];
    const bool uns = dt == HCCL_DATA_TYPE_UINT64;
    for (size_t i = 0; i < len; i++) acc[i] = ld_int(dt, src[0], i);
    for (uint32_t q = 1; q < n; q++) {
        const void *s = src[q];
        switch (op) {
        case HCCL_REDUCE_SUM:
            for (size_t i = 0; i < len; i++) acc[i] += ld_int(dt, s, i);
            break;
        case HCCL_REDUCE_PROD:
            for (size_t i = 0; i < len; i++) acc[i] *= ld_int(dt, s, i);
            break;
        case HCCL_REDUCE_MAX:
            for (size_t i = 0; i < len; i++) {
                uint64_t x = ld_int(dt, s, i);
                if (int_gt(uns, x, acc[i])) acc[i] = x;
            }
            break;
        default:
            for (size_t i = 0; i < len; i++) {
                uint64_t x = ld_int(dt, s, i);
                if (int_gt(uns, acc[i], x)) acc[i] = x;
            }
            break;
        }
    }
    for (size_t i = 0; i < len; i++) st_int(dt, dst, i, acc[i]);
}

void mf_comm_reduce(int dtype, int op, const void *const *src, uint32_t n, size_t len, void *dst) {
    switch (dtype) {
    case HCCL_DATA_TYPE_FP16:
    case HCCL_DATA_TYPE_BFP16:
    case HCCL_DATA_TYPE_FP32: reduce_f32(dtype, op, src, n, len, dst); break;
    case HCCL_DATA_TYPE_FP64: reduce_f64(op, src, n, len, dst); break;
    default: reduce_int(dtype, op, src, n, len, dst); break;
    }
}
