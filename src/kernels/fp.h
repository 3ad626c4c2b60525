/* fp.h - scalar conversions between fp16/bf16/fp32/fp64, all round-to-nearest-
 * even with subnormals, infinities and NaN handled. The SIMD kernels must agree
 * with these bit for bit; the tests hold them to an independent reference. */
#ifndef MOEFR_KERNELS_FP_H_
#define MOEFR_KERNELS_FP_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t mf_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float mf_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float mf_bf16_to_f32(uint16_t h) { return mf_bits_f32((uint32_t)h << 16); }

static inline uint16_t mf_f32_to_bf16(float f) {
    uint32_t u = mf_f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7FFFu + ((u >> 16) & 1u); /* bf16 subnormals align with fp32's: this is exact RNE */
    return (uint16_t)(u >> 16);
}

static inline float mf_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (exp == 0x1F) return mf_bits_f32(sign | 0x7F800000u | (man << 13)); /* inf, NaN */
    if (exp == 0) {                                                      /* zero, subnormal */
        float v = (float)man * 0x1p-24f;                                 /* exact */
        return sign ? -v : v;
    }
    return mf_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t mf_f32_to_f16(float f) {
    uint32_t u = mf_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu)); /* NaN stays NaN */
    if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* >= 65520 rounds to inf */
    if (a < 0x38800000u) {                                    /* below 2^-14: fp16 subnormal or 0 */
        /* value / 2^-24, rounded to nearest even, is the subnormal mantissa. The
         * float product is exact (power-of-two scale) and rintf rounds RNE. */
        float m = rintf(mf_bits_f32(a) * 0x1p24f);
        return (uint16_t)(sign | (uint16_t)m);
    }
    /* normal: rebias the exponent, round the 13 dropped bits to nearest even */
    uint32_t r = a - 0x38000000u; /* exponent - 112 */
    r += 0x0FFFu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

/* Round a double once, to nearest even, to a binary format with `frac` stored
 * fraction bits, minimum normal exponent `emin` and largest finite `maxf`.
 * Scaling by a power of two is exact, so rint() makes the only rounding. */
static inline double mf_round_f64_to_format(double v, int frac, int emin, double maxf) {
    if (v != v || v == 0 || isinf(v)) return v;
    int e;
    frexp(v, &e); /* |v| in [2^(e-1), 2^e) */
    int ue = e - 1 < emin ? emin : e - 1;
    double q = rint(ldexp(v, frac - ue));
    double r = ldexp(q, ue - frac);
    if (fabs(r) > maxf) return v < 0 ? -INFINITY : INFINITY;
    return r;
}

static inline float mf_f64_to_f32(double v) { return (float)v; }

/* double -> 16-bit formats in one rounding, without libm calls (these run
 * once per gradScales entry). Normal range: round the double's own mantissa
 * to the format's width in integer arithmetic (a carry moves into the
 * exponent, as it should); the result then converts to float exactly, or to
 * inf past the format's largest finite. Subnormal range: adding and removing
 * 1.5 * 2^(q + 52) rounds to a multiple of the quantum 2^q in the current
 * (nearest-even) mode. The sign is set apart so -0 and tiny negatives keep it. */
static inline uint64_t mf_f64_bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline double mf_bits_f64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

static inline double mf_round_mantissa(double a, int drop) {
    uint64_t u = mf_f64_bits(a);
    u += ((uint64_t)1 << (drop - 1)) - 1 + ((u >> drop) & 1);
    return mf_bits_f64(u & ~(((uint64_t)1 << drop) - 1));
}

static inline uint16_t mf_f64_to_bf16(double v) {
    if (v != v) return 0x7FC0u;
    uint16_t sign = (uint16_t)((mf_f64_bits(v) >> 48) & 0x8000u);
    double a = fabs(v), r;
    if (a < 0x1p-126) r = (a + 0x1.8p-81) - 0x1.8p-81; /* quantum 2^-133 */
    else r = mf_round_mantissa(a, 45);               /* 7 fraction bits kept */
    return (uint16_t)(sign | (mf_f32_bits((float)r) >> 16));
}

static inline uint16_t mf_f64_to_f16(double v) {
    if (v != v) return 0x7E00u;
    uint16_t sign = (uint16_t)((mf_f64_bits(v) >> 48) & 0x8000u);
    double a = fabs(v), r;
    if (a < 0x1p-14) r = (a + 0x1.8p28) - 0x1.8p28; /* quantum 2^-24 */
    else r = mf_round_mantissa(a, 42);             /* 10 fraction bits kept */
    if (r > 65504.0) return (uint16_t)(sign | 0x7C00u);
    return (uint16_t)(sign | mf_f32_to_f16((float)r)); /* exact: r is an fp16 value */
}

/* fmaf(s, v, a), one rounding. Without an FMA instruction: the product is
 * exact in double, the sum rounds once to double, TwoSum recovers what that
 * rounding lost, and a nonzero loss makes the last bit odd (round to odd);
 * rounding that to float then equals one rounding of the exact value
 * (53 >= 24 + 2 bits). Overflow to inf in double cannot happen for finite
 * floats; inf/NaN operands give NaN loss and are left as the sum says. */
static inline float mf_fmaf(float s, float v, float a) {
#if defined(__FMA__) || defined(__aarch64__)
    return fmaf(s, v, a);
#else
    const double p = (double)s * (double)v, d = (double)a;
    double r = p + d;
    const double z = r - p, e = (p - (r - z)) + (d - z);
    const uint64_t u = mf_f64_bits(r), step = (uint64_t)(e == e && e != 0.0) & ~u; /* 1: even and inexact */
    return (float)mf_bits_f64((e > 0) == (r > 0) ? u + step : u - step);
#endif
}

#endif /* MOEFR_KERNELS_FP_H_ */
