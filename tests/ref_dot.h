/* ref_dot.h - gradScales' canonical order (SPEC section 4, docs/DESIGN.md
 * "The canonical orders") as a plain loop, written from the documented order,
 * not from src/: the operator's bits are compared with it. Header-only so any
 * test can include it; compiled with -ffp-contract=off like every test. */
#ifndef MOEFR_TESTS_REF_DOT_H_
#define MOEFR_TESTS_REF_DOT_H_

#include <math.h>
#include <stdint.h>

#define REF_DOT_BLOCK 128 /* elements per fp32 block */

/* The sums of one slot: x (or NULL), b (or NULL) and g hold the exact values
 * (each exact in fp32) of elements 0..n-1; is_f16 / is_bf16: the data dtype
 * (fp16's products cannot leave fp32's normal range, so it has no range test;
 * bf16's test looks at x and b themselves with a 2^8 margin, fp32's at f;
 * fp32 with x or b alone sums every term in fp64, lane j % 8).
 * acc[0..7] are the eight fp64 sums, updated in place. */
static inline void ref_dot_canon(int is_f16, int is_bf16, const double *x, const double *b, const double *g, int64_t n,
                                 double acc[8]) {
    if (!x && !b) return;
    if (!is_f16 && !is_bf16 && !(x && b)) { /* fp32, one factor: every term in fp64 */
        for (int64_t j = 0; j < n; j++) acc[j % 8] = acc[j % 8] + (x ? x[j] : b[j]) * g[j];
        return;
    }
    for (int64_t b0 = 0; b0 < n; b0 += REF_DOT_BLOCK) {
        const int64_t b1 = n - b0 < REF_DOT_BLOCK ? n : b0 + REF_DOT_BLOCK;
        float S[16] = {0};
        double mf = INFINITY, mg = INFINITY; /* smallest non-zero |factor|, |g| */
        for (int64_t j = b0; j < b1; j++) {
            float f = x ? (float)x[j] : (float)b[j];
            if (x && b) f = f + (float)b[j];     /* one fp32 rounding */
            float p = f * (float)g[j];            /* one fp32 rounding (exact for 16-bit x alone) */
            S[j % 16] = S[j % 16] + p;
            if (is_bf16) { /* the inputs themselves */
                if (x && x[j] != 0 && fabs(x[j]) < mf) mf = fabs(x[j]);
                if (b && b[j] != 0 && fabs(b[j]) < mf) mf = fabs(b[j]);
            } else if (f != 0 && fabs(f) < mf) {
                mf = fabs(f);
            }
            if (g[j] != 0 && fabs(g[j]) < mg) mg = fabs(g[j]);
        }
        int ok = 1;
        for (int l = 0; l < 16; l++) ok = ok && isfinite(S[l]);
        if (ok && !is_f16 && mf < INFINITY && mg < INFINITY) ok = mf * mg >= (is_bf16 ? 0x1p-118 : 0x1p-126);
        if (ok) {
            for (int l = 0; l < 8; l++) acc[l] = (acc[l] + (double)S[l]) + (double)S[l + 8];
        } else {
            for (int64_t j = b0; j < b1; j++) {
                double t = x && b ? x[j] + b[j] : x ? x[j] : b[j];
                acc[j % 8] = acc[j % 8] + t * g[j];
            }
        }
    }
}

/* The eight sums reduced as the operator does. */
static inline double ref_dot_reduce(const double a[8]) {
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

#endif /* MOEFR_TESTS_REF_DOT_H_ */
