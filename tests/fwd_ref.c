/* fwd_ref.c - the oracle of the forward: plain loops over the canonical order
 * (/work/notes/fwd32.md: fp32 groups of 32 elements with the SPEC section 8
 * fp64 sequence as the fallback), and a double-double exact sum. Independent
 * of src/: own decoding, own rounding, own fp32 steps (fmaf). */
#include "fwd_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t fr_size(int dtype) { return dtype == FR_F32 ? 4 : 2; }

double fr_decode(int dtype, const void *base, int64_t i) {
    if (dtype == FR_F32) {
        float f;
        memcpy(&f, (const char *)base + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, (const char *)base + 2 * i, 2);
    if (dtype == FR_BF16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    /* fp16: sign, 5-bit exponent (bias 15), 10-bit fraction */
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -24);
    else v = ldexp((double)(m + 1024), e - 25);
    return s ? -v : v;
}

/* precision (with the hidden bit), minimum normal exponent, largest exponent */
static void fmt(int dtype, int *p, int *emin, int *emax) {
    if (dtype == FR_F32) *p = 24, *emin = -126, *emax = 127;
    else if (dtype == FR_F16) *p = 11, *emin = -14, *emax = 15;
    else *p = 8, *emin = -126, *emax = 127;
}

/* floor(log2|v|) of a finite nonzero double, from its bits */
static int ilog2_bits(double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    int E = (int)((u >> 52) & 0x7FF);
    if (E) return E - 1023;
    uint64_t m = u & ((1ull << 52) - 1);
    int b = 63 - __builtin_clzll(m);
    return b - 1074;
}

double fr_quantum(int dtype, double v) {
    int p, emin, emax;
    fmt(dtype, &p, &emin, &emax);
    int e = (v == 0 || !isfinite(v)) ? emin : ilog2_bits(v);
    if (e < emin) e = emin;
    return ldexp(1.0, e - p + 1);
}

uint32_t fr_encode_exact(int dtype, double v) {
    if (dtype == FR_F32 || dtype == FR_BF16) {
        float f = (float)v; /* exact by precondition */
        uint32_t u;
        memcpy(&u, &f, 4);
        return dtype == FR_F32 ? u : u >> 16;
    }
    uint32_t s = signbit(v) ? 0x8000u : 0;
    double a = fabs(v);
    if (isinf(a)) return s | 0x7C00u;
    if (a < ldexp(1.0, -14)) return s | (uint32_t)(a * 16777216.0); /* subnormal: a / 2^-24 */
    int e = ilog2_bits(a);
    uint32_t m = (uint32_t)(ldexp(a, 10 - e) - 1024.0);
    return s | (uint32_t)(e + 15) << 10 | m;
}

uint32_t fr_round(int dtype, double v) {
    if (v != v) return dtype == FR_F32 ? 0x7FC00000u : dtype == FR_F16 ? 0x7E00u : 0x7FC0u;
    if (v == 0 || isinf(v)) return fr_encode_exact(dtype, v);
    int p, emin, emax;
    fmt(dtype, &p, &emin, &emax);
    uint64_t u;
    memcpy(&u, &v, 8);
    const int neg = (int)(u >> 63);
    int E = (int)((u >> 52) & 0x7FF);
    uint64_t M = u & ((1ull << 52) - 1);
    int e0; /* v = M * 2^e0 */
    if (E) M |= 1ull << 52, e0 = E - 1075;
    else e0 = -1074;
    int le = ilog2_bits(v);
    int q = (le < emin ? emin : le) - p + 1; /* quantum exponent */
    uint64_t N;
    if (e0 >= q) {
        N = M << (e0 - q);
    } else {
        int sh = q - e0;
        if (sh > 60) {
            N = 0; /* v < 2^(q-2): below half a quantum */
        } else {
            uint64_t rem = M & ((1ull << sh) - 1), half = 1ull << (sh - 1);
            N = M >> sh;
            if (rem > half || (rem == half && (N & 1))) N++;
        }
    }
    double r = ldexp((double)N, q);
    double maxf = ldexp((double)((1u << p) - 1), emax - p + 1);
    if (r > maxf) r = INFINITY;
    return fr_encode_exact(dtype, neg ? -r : r);
}

/* the expandedX row of slot (r, k), or -1 */
static int64_t slot_row(const fr_problem *p, int64_t r, int64_t k) {
    return p->mode >= 2 ? p->idx[r * p->K + k] : p->idx[k * p->R + r];
}

/* ---- one token row, the canonical order (tests/fwd_ref.h) ---- */

/* Element j of a row of dtype, widened exactly to binary32. */
static float dec32(int dtype, const void *row, int64_t j) {
    volatile float f = (float)fr_decode(dtype, row, j); /* exact: fp16/bf16 are subsets of fp32 */
    return f;
}
/* Every binary32 operation below goes through a volatile float, so neither
 * excess precision nor contraction nor reassociation can change a rounding
 * (the file is also compiled with -ffp-contract=off by moefr_test). */
static float add32(float a, float b) {
    volatile float r = a + b;
    return r;
}
static float mul32(float a, float b) {
    volatile float r = a * b;
    return r;
}
static float fma32(float a, float b, float c) {
    volatile float r = fmaf(a, b, c); /* C99: one rounding of a*b+c */
    return r;
}

/* The SPEC section 8 fp64 sequence for element j; *have = some term present. */
static double elem64(const fr_row *t, int64_t j, bool *have) {
    double acc = 0;
    *have = false;
    if (t->x1) {
        acc = fr_decode(t->dtype, t->x1, j);
        if (t->x2) acc = acc + fr_decode(t->dtype, t->x2, j);
        *have = true;
    }
    for (int q = 0; q < t->nk; q++) {
        const void *x = t->x[q], *b = t->b[q];
        double v;
        if (x && b) v = fr_decode(t->dtype, x, j) + fr_decode(t->dtype, b, j);
        else if (x) v = fr_decode(t->dtype, x, j);
        else if (b) v = fr_decode(t->dtype, b, j);
        else continue;
        v = t->s[q] * v;
        acc = *have ? acc + v : v;
        *have = true;
    }
    return acc;
}

/* The fp32 candidate for element j (fwd32 B); *have as above. */
static float elem32(const fr_row *t, int64_t j, bool *have) {
    float a = 0.0f;
    *have = false;
    if (t->x1) {
        a = dec32(t->dtype, t->x1, j);
        if (t->x2) a = add32(a, dec32(t->dtype, t->x2, j));
        *have = true;
    }
    for (int q = 0; q < t->nk; q++) {
        const void *x = t->x[q], *b = t->b[q];
        float v;
        if (x && b) v = add32(dec32(t->dtype, x, j), dec32(t->dtype, b, j));
        else if (x) v = dec32(t->dtype, x, j);
        else if (b) v = dec32(t->dtype, b, j);
        else continue;
        const float s = (float)t->s[q]; /* exact: checked by s_fit32 */
        a = *have ? fma32(s, v, a) : mul32(s, v);
        *have = true;
    }
    return a;
}

/* fwd32 C: finite, 2^-100 <= |a| < HI(dtype). */
static bool pass32(int dtype, float a) {
    const double m = fabs((double)a);
    if (!isfinite(m) || m < 0x1p-100) return false;
    if (dtype == FR_BF16) return m < 0x1.fep127;
    if (dtype == FR_F16) return m < 65504.0;
    return true;
}

/* every scale exactly representable in binary32 (NaN counts as representable) */
static bool s_fit32(const fr_row *t) {
    for (int q = 0; q < t->nk; q++) {
        const double s = t->s[q];
        if (!(s != s) && (double)(float)s != s) return false;
    }
    return true;
}

static void put(int dtype, void *row, int64_t j, uint32_t bits) {
    if (dtype == FR_F32) memcpy((char *)row + 4 * j, &bits, 4);
    else {
        const uint16_t h = (uint16_t)bits;
        memcpy((char *)row + 2 * j, &h, 2);
    }
}

void fr_row_forward(const fr_row *t, int64_t j0, int64_t n, void *out, int fp32_allowed) {
    const int dt = t->dtype;
    const bool use32 = fp32_allowed && s_fit32(t);
    for (int64_t g0 = j0; g0 < j0 + n; g0 += FR_GROUP) {
        const int64_t g1 = g0 + FR_GROUP < j0 + n ? g0 + FR_GROUP : j0 + n;
        bool group32 = use32;
        float a[FR_GROUP];
        bool have = false;
        for (int64_t j = g0; group32 && j < g1; j++) {
            a[j - g0] = elem32(t, j, &have);
            if (!have) break; /* no term in this row: +0.0, no test (same as the fp64 result) */
            if (!pass32(dt, a[j - g0])) group32 = false;
        }
        if (group32 && have) {
            for (int64_t j = g0; j < g1; j++) {
                uint32_t bits;
                if (dt == FR_F32) memcpy(&bits, &a[j - g0], 4);
                else bits = fr_round(dt, (double)a[j - g0]);
                put(dt, out, j, bits);
            }
            continue;
        }
        for (int64_t j = g0; j < g1; j++) {
            const double acc = elem64(t, j, &have);
            put(dt, out, j, fr_round(dt, have ? acc : 0.0));
        }
    }
}

/* The rows of token r as an fr_row over caller arrays of K entries. */
static void token_row(const fr_problem *p, int64_t r, const void **x, const void **b, double *s, fr_row *t) {
    const size_t es = fr_size(p->dtype);
    t->dtype = p->dtype;
    t->x1 = p->x1 ? (const char *)p->x1 + (size_t)(r * p->H) * es : NULL;
    t->x2 = p->x1 && p->x2 ? (const char *)p->x2 + (size_t)(r * p->H) * es : NULL;
    t->nk = (int)p->K;
    t->x = x, t->b = b, t->s = s;
    for (int64_t k = 0; k < p->K; k++) {
        const int64_t d = slot_row(p, r, k);
        /* a dropped slot (-1, or a value past expandedX's rows) has no term at all, bias included */
        const bool kept = d >= 0 && d < p->D;
        x[k] = kept ? (const char *)p->x + (size_t)(d * p->H) * es : NULL;
        b[k] = kept && p->bias ? (const char *)p->bias + (size_t)(p->eidx[r * p->K + k] * p->H) * es : NULL;
        s[k] = p->scales ? fr_decode(p->sdtype, p->scales, r * p->K + k) : 1.0;
    }
}

static void forward(const fr_problem *p, void *out, int fp32_allowed) {
    const size_t es = fr_size(p->dtype), kk = (size_t)(p->K > 0 ? p->K : 1);
    const void **x = malloc(kk * sizeof *x), **b = malloc(kk * sizeof *b);
    double *s = malloc(kk * sizeof *s);
    for (int64_t r = 0; r < p->R; r++) {
        fr_row t;
        token_row(p, r, x, b, s, &t);
        fr_row_forward(&t, 0, p->H, (char *)out + (size_t)(r * p->H) * es, fp32_allowed);
    }
    free(x), free(b), free(s);
}

void fr_forward(const fr_problem *p, void *out) { forward(p, out, p->K <= FR_KMAX32); }
void fr_forward_fp64(const fr_problem *p, void *out) { forward(p, out, 0); }

double fr_bound(int dtype, int64_t K, double abs_sum, double got, double exact) {
    const double half_q = 0.5 * fr_quantum(dtype, fmax(fabs(got), fabs(exact)));
    if (K <= FR_KMAX32) return 65.0 * 0x1p-24 * abs_sum * (1 + 0x1p-20) + half_q;
    return (double)(K + 3) * 0x1p-52 * abs_sum + half_q;
}

/* double-double helpers (error-free transformations; fma is exact here) */
static void two_sum(double a, double b, double *s, double *e) {
    *s = a + b;
    double bb = *s - a;
    *e = (a - (*s - bb)) + (b - bb);
}
static void dd_add(double *hi, double *lo, double a) {
    double s, e;
    two_sum(*hi, a, &s, &e);
    e += *lo;
    two_sum(s, e, hi, lo);
}
/* adds s * (a + b) to (hi, lo) without losing more than ~2^-100 relative */
static void dd_add_prod(double *hi, double *lo, double s, double a, double b) {
    double t, te;
    two_sum(a, b, &t, &te); /* a + b = t + te exactly */
    double p1 = s * t, e1 = fma(s, t, -p1);
    double p2 = s * te, e2 = fma(s, te, -p2);
    dd_add(hi, lo, p1);
    dd_add(hi, lo, e1);
    dd_add(hi, lo, p2);
    dd_add(hi, lo, e2);
}

void fr_forward_exact(const fr_problem *p, double *hi, double *lo, double *abs_sum) {
    const int dt = p->dtype;
    for (int64_t r = 0; r < p->R; r++)
        for (int64_t j = 0; j < p->H; j++) {
            double h = 0, l = 0, as = 0;
            if (p->x1) {
                double a = fr_decode(dt, p->x1, r * p->H + j);
                dd_add(&h, &l, a);
                as += fabs(a);
                if (p->x2) {
                    double b = fr_decode(dt, p->x2, r * p->H + j);
                    dd_add(&h, &l, b);
                    as += fabs(b);
                }
            }
            for (int64_t k = 0; k < p->K; k++) {
                int64_t d = slot_row(p, r, k);
                if (d < 0 || d >= p->D) continue; /* a dropped slot */
                double a = fr_decode(dt, p->x, d * p->H + j);
                double b = p->bias ? fr_decode(dt, p->bias, p->eidx[r * p->K + k] * p->H + j) : 0;
                double s = p->scales ? fr_decode(p->sdtype, p->scales, r * p->K + k) : 1.0;
                dd_add_prod(&h, &l, s, a, b);
                as += fabs(s) * (fabs(a) + fabs(b));
            }
            hi[r * p->H + j] = h;
            lo[r * p->H + j] = l;
            abs_sum[r * p->H + j] = as;
        }
}
