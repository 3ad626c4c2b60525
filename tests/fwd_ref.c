/* fwd_ref.c - the float64 oracle of the forward: plain loops over the spec's
 * formula. Independent of src/: different decoding and rounding algorithms. */
#include "fwd_ref.h"

#include <math.h>
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

void fr_forward(const fr_problem *p, void *out) {
    const int dt = p->dtype;
    for (int64_t r = 0; r < p->R; r++)
        for (int64_t j = 0; j < p->H; j++) {
            double acc = 0;
            bool have = false;
            if (p->x1) {
                acc = fr_decode(dt, p->x1, r * p->H + j);
                if (p->x2) acc = acc + fr_decode(dt, p->x2, r * p->H + j);
                have = true;
            }
            for (int64_t k = 0; k < p->K; k++) {
                int64_t d = slot_row(p, r, k);
                /* a dropped slot (-1, or a value past expandedX's rows) has no term at all */
                if (d < 0 || d >= p->D) continue;
                bool hx = true, hb = p->bias != NULL;
                double t;
                if (hx && hb) t = fr_decode(dt, p->x, d * p->H + j) + fr_decode(dt, p->bias, p->eidx[r * p->K + k] * p->H + j);
                else if (hx) t = fr_decode(dt, p->x, d * p->H + j);
                else t = fr_decode(dt, p->bias, p->eidx[r * p->K + k] * p->H + j);
                double s = p->scales ? fr_decode(p->sdtype, p->scales, r * p->K + k) : 1.0;
                t = s * t;
                acc = have ? acc + t : t;
                have = true;
            }
            uint32_t bits = fr_round(dt, have ? acc : 0.0);
            if (dt == FR_F32) memcpy((char *)out + 4 * (r * p->H + j), &bits, 4);
            else {
                uint16_t h = (uint16_t)bits;
                memcpy((char *)out + 2 * (r * p->H + j), &h, 2);
            }
        }
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
