/* quant_int8_core.h - the dynamic int8 quantisation's two vector loops over
 * GT_W-lane generic vectors (ops/gv.h), built once per width: generic four
 * lanes in quant_int8.c, AVX2 eight lanes in quant_int8_avx2.c. The includer
 * defines GT_W, Q8_ABSMAX and Q8_QUANT (the functions' names; without
 * Q8_QUANT only the max loop is built, quant_int8_avx2.c). Each lane
 * does what quant_int8.c's scalar helpers do (a max, one IEEE division, a
 * clamp, a rounding), so every width gives the same bytes. Both loops take
 * whole vectors only and return how many elements they did; the caller
 * finishes the tail with the scalar helpers. */
#include "ops/gv.h"
#include "ops/routing/quant_int8.h"

/* the blocks' k loops as straight code (GCC keeps them loops at -O2) */
#define Q8_UNROLL4 _Pragma("GCC unroll 4")

/* max(m, |v[j]|) over whole vectors of v[0..n); NaN elements never win.
 * A max is exact, so the lanes' order does not change the result. */
int64_t Q8_ABSMAX(const float *v, int64_t n, float *m) {
    gvf acc[4] = {gv_splat(0.0f), gv_splat(0.0f), gv_splat(0.0f), gv_splat(0.0f)};
    int64_t j = 0;
    for (; j + 4 * GT_W <= n; j += 4 * GT_W) /* four chains, for the comparisons' latency */
        Q8_UNROLL4 for (int k = 0; k < 4; k++) {
            const gvf a = (gvf)((gvi)gv_load(v + j + k * GT_W) & gi_splat(0x7FFFFFFF));
            acc[k] = gv_sel(a > acc[k], a, acc[k]); /* NaN compares false */
        }
    for (; j + GT_W <= n; j += GT_W) {
        const gvf a = (gvf)((gvi)gv_load(v + j) & gi_splat(0x7FFFFFFF));
        acc[0] = gv_sel(a > acc[0], a, acc[0]);
    }
    for (int k = 0; k < 4; k++)
        for (int l = 0; l < GT_W; l++) *m = acc[k][l] > *m ? acc[k][l] : *m;
    return j;
}

#ifdef Q8_QUANT
/* q with NaN -> 0, clamped to [-128, 127] */
static inline gvf q8_clamp(gvf q) {
    const gvf hi = gv_splat(127.0f), lo = gv_splat(-128.0f);
    gvf c = gv_sel(q == q, q, gv_splat(0.0f));
    c = gv_sel(c > hi, hi, c);
    return gv_sel(c < lo, lo, c);
}

/* a clamped c rounded half to even (even) or half away from zero, its int8s
 * stored at out */
static inline void q8_round_store(gvf c, bool even, int8_t *out) {
    const gvi sign = gi_splat((int32_t)0x80000000);
    gvi r;
    if (even) { /* |c| + 2^23 - 2^23 rounds |c| to an integer, ties to even */
        const gvf a = (gvf)((gvi)c & ~sign), big = gv_splat(0x1p23f);
        const gvf t = (a + big) - big;
        r = __builtin_convertvector((gvf)((gvi)t | ((gvi)c & sign)), gvi);
    } else { /* truncate, then step by the exact remainder */
        const gvi i = __builtin_convertvector(c, gvi);
        const gvf f = c - __builtin_convertvector(i, gvf);
        r = i - (gvi)(f >= gv_splat(0.5f)) + (gvi)(f <= gv_splat(-0.5f));
    }
    gi_store_lo8(out, r); /* each lane is in [-128, 127]: its low byte is the int8 */
}

/* out[j] = int8 of the fp32 quotient v[j] / s, whole vectors. (A product
 * with fp32(1 / s), redone by division only near half-integers, gives the
 * same bytes but measured slower: the division is not what bounds this loop.) */
int64_t Q8_QUANT(const float *v, int64_t n, float s, bool even, int8_t *out, bool nt) {
    (void)nt; /* plain stores */
    const gvf sv = gv_splat(s);
    int64_t j = 0;
    for (; j + GT_W <= n; j += GT_W) q8_round_store(q8_clamp(gv_load(v + j) / sv), even, out + j);
    return j;
}
#endif
