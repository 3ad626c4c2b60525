/* ref_fp.h - test-side references for fp16/bf16, independent of src/: values
 * decoded by formula, rounding by nearest search over every finite pattern. */
#ifndef MOEFR_TESTS_REF_FP_H_
#define MOEFR_TESTS_REF_FP_H_

#include <math.h>
#include <stdint.h>

static float ref_tab16[2][32768]; /* [0] fp16, [1] bf16: value of each finite positive pattern */
static int ref_ntab[2];

/* fmt 0 = fp16, 1 = bf16 */
static double ref_val16(int fmt, uint16_t h) {
    int eb = fmt ? 8 : 5, mb = fmt ? 7 : 10, bias = (1 << (eb - 1)) - 1;
    int e = (h >> mb) & ((1 << eb) - 1), m = h & ((1 << mb) - 1);
    double v;
    if (e == (1 << eb) - 1) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp(m, 1 - bias - mb);
    else v = ldexp(m + (1 << mb), e - bias - mb);
    return (h >> 15) ? -v : v;
}

static void ref_build_tabs(void) {
    for (int f = 0; f < 2; f++) {
        int lim = f ? 0x7F80 : 0x7C00;
        for (int h = 0; h < lim; h++) ref_tab16[f][h] = (float)ref_val16(f, (uint16_t)h);
        ref_ntab[f] = lim;
    }
}

/* v rounded to the nearest pattern, ties to the even one; 0xFFFF for NaN. */
static uint16_t ref_round16(int fmt, double v) {
    if (v != v) return 0xFFFF;
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    int n = ref_ntab[fmt];
    double maxv = ref_tab16[fmt][n - 1], ulp = maxv - ref_tab16[fmt][n - 2];
    if (a >= maxv + ulp / 2) return sign | (fmt ? 0x7F80 : 0x7C00);
    int lo = 0, hi = n - 1; /* largest pattern whose value is <= a */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (ref_tab16[fmt][mid] <= a) lo = mid;
        else hi = mid - 1;
    }
    if (lo == n - 1) return sign | (uint16_t)lo;
    double d0 = a - ref_tab16[fmt][lo], d1 = ref_tab16[fmt][lo + 1] - a;
    int pick = d0 < d1 ? lo : d1 < d0 ? lo + 1 : ((lo & 1) ? lo + 1 : lo);
    return sign | (uint16_t)pick;
}

#endif /* MOEFR_TESTS_REF_FP_H_ */
