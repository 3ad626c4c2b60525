/* ref.c - the test oracle for aclnnMoeFinalizeRoutingV2Grad: plain loops from
 * SPEC section 4 and three independent ways to round, checked against each other. */
#include "ref.h"
#include "ref_dot.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Format geometry: exponent bits, fraction bits. */
static const int k_ebits[3] = {8, 5, 8}, k_mbits[3] = {23, 10, 7};

size_t ref_size(ref_dt dt) { return dt == REF_F32 ? 4 : 2; }
const char *ref_name(ref_dt dt) { return dt == REF_F32 ? "fp32" : dt == REF_F16 ? "fp16" : "bf16"; }

static double decode_generic(int ebits, int mbits, uint32_t bits) {
    int bias = (1 << (ebits - 1)) - 1;
    uint32_t e = (bits >> mbits) & ((1u << ebits) - 1), m = bits & ((1u << mbits) - 1);
    double v;
    if (e == (1u << ebits) - 1) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, 1 - bias - mbits);
    else v = ldexp((double)(m | (1u << mbits)), (int)e - bias - mbits);
    return (bits >> (ebits + mbits)) & 1 ? -v : v;
}

/* 16-bit formats decode through tables built once from the formula (the
 * random test decodes millions of values). */
static double g_tab16[2][65536];
static int g_tab16_ready;

double ref_decode(ref_dt dt, uint32_t bits) {
    if (dt == REF_F32) {
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    if (!g_tab16_ready) {
        for (uint32_t p = 0; p < 65536; p++) {
            g_tab16[0][p] = decode_generic(5, 10, p);
            g_tab16[1][p] = decode_generic(8, 7, p);
        }
        g_tab16_ready = 1;
    }
    return g_tab16[dt == REF_BF16][bits & 0xFFFF];
}

/* 2^k for k in [-1022, 1023], built from its bits. */
static double pow2(int k) {
    uint64_t b = (uint64_t)(k + 1023) << 52;
    double d;
    memcpy(&d, &b, 8);
    return d;
}

/* floor(log2(a)) for finite a > 0. */
static int exponent_of(double a) {
    uint64_t b;
    memcpy(&b, &a, 8);
    int e = (int)((b >> 52) & 0x7FF);
    if (e == 0) { /* a double subnormal */
        int e2 = 0;
        (void)frexp(a, &e2);
        return e2 - 1;
    }
    return e - 1023;
}

uint32_t ref_round_exact(int ebits, int mbits, double v) {
    const uint32_t sign = signbit(v) ? 1u << (ebits + mbits) : 0;
    const uint32_t inf = ((1u << ebits) - 1) << mbits;
    if (isnan(v)) return inf | (1u << (mbits - 1));
    const int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
    const double a = fabs(v), maxv = (2.0 - pow2(-mbits)) * pow2(bias);
    if (isinf(a)) return sign | inf;
    int ex = a == 0 ? emin : exponent_of(a); /* a in [2^ex, 2^(ex+1)) */
    if (ex < emin) ex = emin;                 /* subnormal range: fixed spacing */
    /* a / 2^(ex-mbits) is exact (a power-of-two scale) and below 2^(mbits+1),
     * so nearbyint rounds it exactly, ties to even, in the default mode */
    const double val = nearbyint(a * pow2(mbits - ex)) * pow2(ex - mbits);
    if (val > maxv) return sign | inf;
    if (val == 0) return sign;
    int ev = exponent_of(val);
    if (ev < emin) return sign | (uint32_t)(val * pow2(mbits - emin));
    uint32_t frac = (uint32_t)(val * pow2(mbits - ev)) - (1u << mbits);
    return sign | ((uint32_t)(ev + bias) << mbits) | frac;
}

uint32_t ref_round_search(ref_dt dt, double v) {
    const int eb = k_ebits[dt], mb = k_mbits[dt];
    const uint32_t sign = signbit(v) ? 1u << (eb + mb) : 0, inf = ((1u << eb) - 1) << mb;
    if (isnan(v)) return inf | (1u << (mb - 1));
    const double a = fabs(v);
    /* positive patterns 0..inf are ordered like their values; find the
     * largest one not above a, then pick the nearer of it and the next */
    uint32_t lo = 0, hi = inf;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (ref_decode(dt, mid) <= a) lo = mid;
        else hi = mid - 1;
    }
    if (lo == inf) return sign | inf;
    if (lo == inf - 1) { /* above the largest finite: inf counts as the next step */
        double top = ref_decode(dt, lo), next = ldexp(1.0, (1 << (eb - 1)));
        double d0 = a - top, d1 = next - a;
        return sign | (d0 < d1 ? lo : inf); /* a tie goes to inf (even) */
    }
    double d0 = a - ref_decode(dt, lo), d1 = ref_decode(dt, lo + 1) - a;
    uint32_t pick = d0 < d1 ? lo : d1 < d0 ? lo + 1 : ((lo & 1) ? lo + 1 : lo);
    return sign | pick;
}

/* Compilers without _Float16 on this target (clang 14 on x86, which builds
 * the libFuzzer targets) round by exact scaling instead. */
#ifdef __FLT16_MANT_DIG__
#define REF_HAVE_FLOAT16 1
#endif
static uint32_t f16_gcc(double v) {
#ifdef REF_HAVE_FLOAT16
    _Float16 h = (_Float16)v;
    uint16_t b;
    memcpy(&b, &h, 2);
    return b;
#else
    return ref_round_exact(5, 10, v);
#endif
}

static uint32_t f32_cast(double v) {
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

uint32_t ref_round(ref_dt dt, double v) {
    switch (dt) {
    case REF_F32: return f32_cast(v);
    case REF_F16: return f16_gcc(v);
    default: return ref_round_exact(8, 7, v);
    }
}

double ref_ulp(ref_dt dt, double v) {
    const int eb = k_ebits[dt], mb = k_mbits[dt], emin = 2 - (1 << (eb - 1));
    double a = fabs(v);
    int ex = a == 0 ? emin : exponent_of(a);
    if (ex < emin) ex = emin;
    return pow2(ex - mb);
}

/* ---- self-test of the conversions ---- */

static int same_bits_or_nan(ref_dt dt, uint32_t a, uint32_t b) {
    if (a == b) return 1;
    return isnan(ref_decode(dt, a)) && isnan(ref_decode(dt, b));
}

static uint64_t st_state = 0x243F6A8885A308D3ull;
static uint64_t st_next(void) {
    uint64_t z = (st_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int check_round(ref_dt dt, double v) {
    uint32_t a = ref_round(dt, v), b = ref_round_search(dt, v), c = ref_round_exact(k_ebits[dt], k_mbits[dt], v);
    if (same_bits_or_nan(dt, a, b) && same_bits_or_nan(dt, a, c)) return 0;
    fprintf(stderr, "ref_selftest: %s rounding of %.17g (%a) disagrees: primary 0x%x, search 0x%x, exact 0x%x\n",
            ref_name(dt), v, v, a, b, c);
    return 1;
}

int ref_selftest(void) {
    /* decoding: the formula against the hardware/compiler view of every pattern */
    for (uint32_t p = 0; p < 65536; p++) {
        uint16_t h = (uint16_t)p;
#ifdef REF_HAVE_FLOAT16
        _Float16 hf;
        memcpy(&hf, &h, 2);
        double via_gcc = (double)hf;
#else
        double via_gcc = ref_decode(REF_F16, p);
#endif
        double f16 = ref_decode(REF_F16, p);
        uint32_t fb = p << 16;
        float bf;
        memcpy(&bf, &fb, 4);
        double b16 = ref_decode(REF_BF16, p);
        if (!(f16 == via_gcc || (isnan(f16) && isnan(via_gcc))) || !signbit(f16) != !signbit(via_gcc)) {
            fprintf(stderr, "ref_selftest: fp16 0x%04x decodes to %g, _Float16 says %g\n", p, f16, via_gcc);
            return 1;
        }
        if (!(b16 == (double)bf || (isnan(b16) && isnan(bf))) || !signbit(b16) != !signbit(bf)) {
            fprintf(stderr, "ref_selftest: bf16 0x%04x decodes to %g, fp32 bits say %g\n", p, b16, (double)bf);
            return 1;
        }
        /* every finite pattern rounds to itself */
        if (!isnan(f16) && check_round(REF_F16, f16)) return 1;
        if (!isnan(b16) && check_round(REF_BF16, b16)) return 1;
    }
    /* midpoints and their neighbours one double ulp away (double-rounding
     * traps: the fp32 value of a near-midpoint double is often the midpoint) */
    for (int dt = REF_F16; dt <= REF_BF16; dt++) {
        uint32_t top = ((1u << k_ebits[dt]) - 1) << k_mbits[dt];
        for (uint32_t p = 0; p < top; p++) {
            double lo = ref_decode((ref_dt)dt, p), hi = p + 1 < top ? ref_decode((ref_dt)dt, p + 1)
                                                                    : ldexp(1.0, 1 << (k_ebits[dt] - 1));
            double mid = lo + (hi - lo) / 2;
            double probes[] = {mid, nextafter(mid, 0), nextafter(mid, INFINITY), -mid, -nextafter(mid, INFINITY)};
            for (int i = 0; i < 5; i++)
                if (check_round((ref_dt)dt, probes[i])) return 1;
        }
    }
    /* specials, and random doubles over the whole range */
    double specials[] = {0.0, -0.0, INFINITY, -INFINITY, DBL_MIN, -DBL_MIN, 1e-310, DBL_MAX, -DBL_MAX,
                         65504.0, 65519.0, 65520.0, 65519.999999999, 0x1p-24, 0x1p-25, 0x1.8p-25, 0x1p-26,
                         0x1p-133, 0x1p-134, 0x1.0000000000001p-134, 3.3895313892515355e38, 3.4e38, FLT_MAX};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        for (int dt = REF_F16; dt <= REF_BF16; dt++)
            if (check_round((ref_dt)dt, specials[i])) return 1;
    for (int i = 0; i < 200000; i++) {
        uint64_t r = st_next();
        double v;
        /* doubles with exponents where fp16/bf16 live, plus raw random patterns */
        if (i & 1) v = ldexp((double)(r >> 11) * 0x1p-53 + 0.5, (int)((r & 0xFF) % 300) - 150);
        else memcpy(&v, &r, 8);
        if (st_next() & 1) v = -v;
        for (int dt = REF_F16; dt <= REF_BF16; dt++)
            if (check_round((ref_dt)dt, v)) return 1;
        /* fp32 via C's cast against the exact method */
        if (!isnan(v) && f32_cast(v) != ref_round_exact(8, 23, v)) {
            fprintf(stderr, "ref_selftest: fp32 rounding of %a: cast 0x%x, exact 0x%x\n", v, f32_cast(v),
                    ref_round_exact(8, 23, v));
            return 1;
        }
        /* bf16 of a float by the integer trick against the exact method */
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        if (!isnan(f)) {
            uint32_t trick = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
            if (trick != ref_round_exact(8, 7, f)) {
                fprintf(stderr, "ref_selftest: bf16 of float %a: trick 0x%x, exact 0x%x\n", (double)f, trick,
                        ref_round_exact(8, 7, f));
                return 1;
            }
        }
    }
    /* spacing: the ulp at a pattern is the distance to the next one */
    for (int dt = REF_F16; dt <= REF_BF16; dt++)
        for (uint32_t p = 0; p + 1 < (((1u << k_ebits[dt]) - 1) << k_mbits[dt]); p += 7) {
            double a = ref_decode((ref_dt)dt, p), b = ref_decode((ref_dt)dt, p + 1);
            if (ref_ulp((ref_dt)dt, a) != b - a) {
                fprintf(stderr, "ref_selftest: %s ulp at %g is %g, want %g\n", ref_name((ref_dt)dt), a,
                        ref_ulp((ref_dt)dt, a), b - a);
                return 1;
            }
        }
    return 0;
}

/* ---- the operator ---- */

void ref_grad(const ref_grad_in *in, ref_grad_out *out) {
    const int64_t R = in->R, K = in->K, H = in->H, D0 = in->D0;
    /* rows no kept index names: +0.0 (drop-pad); in mode 0 every row is named */
    memset(out->gx, 0, (size_t)(D0 * H) * sizeof *out->gx);
    for (int64_t r = 0; r < R; r++)
        for (int64_t k = 0; k < K; k++) {
            const int64_t i = r * K + k;
            const int32_t d = in->idx[i];
            const int kept = d >= 0 && d < D0;
            const double *g = in->gy + r * H;
            if (kept) {
                uint32_t *o = out->gx + (int64_t)d * H;
                for (int64_t j = 0; j < H; j++) {
                    if (in->scales == NULL) {
                        o[j] = ref_round(in->dt, g[j]); /* an exact copy of a value of dt */
                    } else {
                        float p = (float)g[j] * (float)in->scales[i]; /* one fp32 rounding */
                        o[j] = ref_round(in->dt, p);
                    }
                }
            }
            if (in->scales == NULL) continue; /* gradScales is not written */
            const double *x = kept ? in->x + (int64_t)d * H : NULL;
            const double *b = in->bias ? in->bias + (int64_t)in->eidx[i] * H : NULL;
            double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            long double exact = 0, mag = 0;
            if (x != NULL || b != NULL) {
                ref_dot_canon(in->dt == REF_F16, in->dt == REF_BF16, x, b, g, H, lane); /* ref_dot.h: the documented order */
                for (int64_t j = 0; j < H; j++) {
                    long double te = (x ? (long double)x[j] : 0.0L) + (b ? (long double)b[j] : 0.0L);
                    exact += te * (long double)g[j];
                    mag += fabsl(te) * fabsl((long double)g[j]);
                }
            }
            double canon = ref_dot_reduce(lane);
            out->gs[i] = ref_round(in->gs_dt, canon);
            out->gs_exact[i] = exact;
            out->gs_mag[i] = mag;
        }
}

int ref_gs_within(ref_dt dt, uint32_t got, long double exact, long double mag, double *err, double *tol) {
    double g = ref_decode(dt, got);
    double rel = (double)(1e-6L * mag); /* SPEC 4 */
    if (isnan(g)) {
        *err = NAN;
        *tol = rel;
        return 0;
    }
    if (isinf(g)) {
        /* the result may be infinite only when the bound reaches the overflow threshold */
        long double toward = exact + (g > 0 ? rel : -rel);
        *err = 0;
        *tol = rel;
        return ref_round(dt, (double)toward) == got;
    }
    *tol = rel + ref_ulp(dt, g) / 2;
    *err = (double)fabsl((long double)g - exact);
    return *err <= *tol;
}
