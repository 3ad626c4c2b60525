/* test_forward_util.h - helpers shared by the forward's tests: a seeded RNG
 * (MOEFR_TEST_SEED replays), random dtype data, and aclTensor views with
 * padded, offset, strided or column-major layouts built over copied data. */
#ifndef MOEFR_TESTS_FORWARD_UTIL_H_
#define MOEFR_TESTS_FORWARD_UTIL_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "fwd_ref.h"

static uint64_t tu_state;
static inline uint64_t tu_next(void) { /* xorshift64* */
    tu_state ^= tu_state >> 12;
    tu_state ^= tu_state << 25;
    tu_state ^= tu_state >> 27;
    return tu_state * 0x2545F4914F6CDD1DULL;
}
static inline uint64_t tu_seed(const char *name) {
    const char *e = getenv("MOEFR_TEST_SEED");
    uint64_t s = e && *e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    if (s == 0) s = 1;
    tu_state = s;
    printf("%s: seed %llu (replay with MOEFR_TEST_SEED=%llu)\n", name, (unsigned long long)s,
           (unsigned long long)s);
    return s;
}
static inline int64_t tu_int(int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)(tu_next() % (uint64_t)(hi - lo + 1));
}
static inline double tu_unit(void) { return (double)(tu_next() >> 11) * 0x1p-53; }

/* Random value rounded to dtype, written at element i; mostly in [-2, 2],
 * sometimes exact zeros of either sign or larger magnitudes. */
static inline void tu_put(int dtype, void *base, int64_t i, double v) {
    uint32_t b = fr_round(dtype, v);
    if (dtype == FR_F32) memcpy((char *)base + 4 * i, &b, 4);
    else {
        uint16_t h = (uint16_t)b;
        memcpy((char *)base + 2 * i, &h, 2);
    }
}
static inline void tu_fill(int dtype, void *base, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        int c = (int)tu_int(0, 99);
        double v = c < 3 ? 0.0 : c < 5 ? -0.0 : c < 10 ? (tu_unit() - 0.5) * 200 : (tu_unit() * 4 - 2);
        tu_put(dtype, base, i, v);
    }
}

/* Layout kinds for tu_view. */
enum { TU_DENSE = 0, TU_PADDED = 1, TU_STRIDED = 2, TU_COLMAJOR = 3, TU_KINDS = 4 };

typedef struct tu_tensor {
    aclTensor *t;
    void *storage;
} tu_tensor;

/* A tensor of `ndim` dims over a fresh copy of `dense` (row-major) laid out
 * as `kind`; TU_COLMAJOR reverses the stride order. */
static inline tu_tensor tu_view(int dtype, int ndim, const int64_t *dims, const void *dense, int kind) {
    const size_t es = dtype == 3 ? 4 : fr_size(dtype); /* 3 = ACL_INT32 */
    int64_t st[3] = {0, 0, 0}, off = 0;
    if (kind == TU_COLMAJOR) {
        int64_t s = 1;
        for (int d = 0; d < ndim; d++) st[d] = s, s *= dims[d] > 0 ? dims[d] : 1;
        off = 1;
    } else {
        int64_t s = kind == TU_STRIDED ? 2 : 1;
        for (int d = ndim - 1; d >= 0; d--) {
            st[d] = s;
            s = s * (dims[d] > 0 ? dims[d] : 1) + (kind == TU_DENSE ? 0 : 3);
        }
        off = kind == TU_DENSE ? 0 : 5;
    }
    int64_t numel = 1, reach = off;
    for (int d = 0; d < ndim; d++) numel *= dims[d];
    for (int d = 0; d < ndim; d++)
        if (dims[d] > 0) reach += (dims[d] - 1) * st[d];
    int64_t storage_n = reach + 1;
    tu_tensor r;
    r.storage = calloc((size_t)storage_n, es);
    for (int64_t i = 0; i < numel; i++) {
        int64_t rem = i, pos = off;
        for (int d = ndim - 1; d >= 0; d--) {
            pos += (rem % dims[d]) * st[d];
            rem /= dims[d];
        }
        memcpy((char *)r.storage + pos * (int64_t)es, (const char *)dense + i * (int64_t)es, es);
    }
    r.t = aclCreateTensor(dims, (uint64_t)ndim, (aclDataType)dtype, st, off, ACL_FORMAT_ND, &storage_n, 1,
                          r.storage);
    if (r.t == NULL) {
        fprintf(stderr, "tu_view: aclCreateTensor failed: %s\n", aclGetRecentErrMsg());
        exit(2);
    }
    return r;
}
static inline void tu_free(tu_tensor *t) {
    if (t->t) aclDestroyTensor(t->t);
    free(t->storage);
    t->t = NULL;
    t->storage = NULL;
}

#endif /* MOEFR_TESTS_FORWARD_UTIL_H_ */
