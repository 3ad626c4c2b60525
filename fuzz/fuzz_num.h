/* fuzz_num.h - what the exec fuzz targets share: the reference's own number
 * formats (SPEC section 4, independent of src/), exact random values, and
 * tensors over fresh exact-size allocations. */
#ifndef MOEFR_FUZZ_NUM_H_
#define MOEFR_FUZZ_NUM_H_

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "fuzz_util.h"

enum { D_F32 = 0, D_F16 = 1, D_BF16 = 2 };
static const int k_acl_dt[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
static inline size_t dsize(int d) { return d == D_F32 ? 4 : 2; }

/* v rounded to nearest even in a binary format with mbits fraction bits, minimum
 * normal exponent emin and largest finite value maxf; overflow gives infinity. */
static inline double round_fmt(double v, int mbits, int emin, double maxf) {
    if (v == 0 || isinf(v) || isnan(v)) return v;
    int e;
    frexp(v, &e); /* |v| in [2^(e-1), 2^e) */
    int q = (e - 1 < emin ? emin : e - 1) - mbits;
    double r = ldexp(nearbyint(ldexp(v, -q)), q);
    if (fabs(r) > maxf) return copysign(INFINITY, v);
    return r;
}
static inline double round_dt(int d, double v) {
    if (d == D_F32) return round_fmt(v, 23, -126, FLT_MAX);
    if (d == D_F16) return round_fmt(v, 10, -14, 65504.0);
    return round_fmt(v, 7, -126, 0x1.FEp127);
}
/* Bits of a value already representable in d. */
static inline uint32_t encode(int d, double v) {
    if (d == D_F32) {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        return u;
    }
    if (d == D_BF16) {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        return u >> 16;
    }
    uint32_t sign = signbit(v) ? 0x8000u : 0;
    double a = fabs(v);
    if (isinf(a)) return sign | 0x7C00u;
    if (a == 0) return sign;
    int e;
    double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    if (e - 1 < -14) return sign | (uint32_t)ldexp(a, 24); /* subnormal: a / 2^-24 */
    return sign | ((uint32_t)(e - 1 + 15) << 10) | ((uint32_t)ldexp(m, 11) - 1024u);
}
static inline double decode(int d, uint32_t b) {
    if (d == D_F32) {
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    if (d == D_BF16) {
        uint32_t u = b << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    double s = (b & 0x8000u) ? -1 : 1;
    uint32_t ex = (b >> 10) & 31, man = b & 1023;
    if (ex == 31) return man ? NAN : s * INFINITY;
    if (ex == 0) return s * ldexp(man, -24);
    return s * ldexp(1024 + man, (int)ex - 25);
}
static inline uint32_t load(int d, const void *base, int64_t i) {
    if (d == D_F32) {
        uint32_t u;
        memcpy(&u, (const char *)base + 4 * i, 4);
        return u;
    }
    uint16_t h;
    memcpy(&h, (const char *)base + 2 * i, 2);
    return h;
}
static inline void store(int d, void *base, int64_t i, uint32_t b) {
    if (d == D_F32) memcpy((char *)base + 4 * i, &b, 4);
    else {
        uint16_t h = (uint16_t)b;
        memcpy((char *)base + 2 * i, &h, 2);
    }
}
/* A finite value exact in every dtype: a small integer times a power of two, now
 * and then a subnormal of the dtype or one near its largest value. */
static inline uint32_t random_value(fz_in *in, int d) {
    uint8_t kind = fz_u8(in);
    int8_t m = (int8_t)fz_u8(in);
    if (kind < 235) return encode(d, round_dt(d, ldexp(m, (int)(kind % 12) - 8)));
    if (kind < 245) return encode(d, round_dt(d, ldexp(m, d == D_F16 ? -24 : -140)));
    return encode(d, round_dt(d, ldexp(m, d == D_F16 ? 8 : 120)));
}

/* A tensor of dims over a fresh exact-size allocation; row stride rs (elements) >= the last dim. */
typedef struct {
    aclTensor *t;
    void *data;
    size_t bytes;
} fz_t;
static inline void make(fz_t *f, int d_acl, size_t es, int nd, const int64_t *dims, int64_t rs) {
    int64_t strides[3];
    int64_t s = 1, storage = 1;
    for (int i = nd - 1; i >= 0; i--) {
        strides[i] = s;
        s *= (i == nd - 1 && nd > 1) ? rs : dims[i];
    }
    if (nd > 1) {
        /* Storage just covering the last reachable element. */
        storage = 0;
        bool empty = false;
        for (int i = 0; i < nd; i++) empty |= dims[i] == 0;
        if (!empty) {
            storage = 1;
            for (int i = 0; i < nd; i++) storage += (dims[i] - 1) * strides[i];
        }
    } else {
        storage = dims[0];
    }
    f->bytes = (size_t)storage * es;
    f->data = malloc(f->bytes ? f->bytes : 1);
    int64_t sd[1] = {storage};
    f->t = aclCreateTensor(dims, (uint64_t)nd, (aclDataType)d_acl, strides, 0, ACL_FORMAT_ND, sd, 1, f->data);
    FZ_REQUIRE(f->t != NULL, "a valid descriptor was rejected");
}
static inline void drop(fz_t *f) {
    if (f->t) aclDestroyTensor(f->t);
    free(f->data);
    memset(f, 0, sizeof *f);
}

#endif /* MOEFR_FUZZ_NUM_H_ */
