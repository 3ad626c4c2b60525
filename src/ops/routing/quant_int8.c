/* quant_int8.c - the int8 quantisation of one row (quant_int8.h). */
#include "ops/routing/quant_int8.h"

#include <math.h>

#define TILE 4096 /* fp32 elements widened at a time (16 KiB on the stack, twice) */

/* the generic four-lane loops (quant_int8_avx2.c builds the eight-lane ones) */
#define GT_W 4
#define Q8_ABSMAX mf_q8_absmax_generic
#define Q8_QUANT mf_q8_quant_generic
#include "ops/routing/quant_int8_core.h"

/* The two roundings to int8 with saturation, NaN -> 0, written as selects
 * and conversions (no branches, no libm calls) so the loops vectorise.
 * Both clamp first: |c| <= 128, where everything below is exact. */
static inline float clamp8(float q) {
    /* quiet comparisons (no FP exception on NaN), which the vectoriser can
     * turn into selects */
    float c = q == q ? q : 0.0f;
    c = c > 127.0f ? 127.0f : c;
    return c < -128.0f ? -128.0f : c;
}
/* half to even: adding and removing 2^23 rounds |c| in the current
 * (nearest-even) mode; no -ffast-math, so the pair is not folded */
static inline int8_t even8(float q) {
    const float c = clamp8(q);
    const float a = (fabsf(c) + 0x1p23f) - 0x1p23f;
    return (int8_t)(int)(c < 0.0f ? -a : a);
}
/* half away from zero: truncate, then step by the exact remainder */
static inline int8_t away8(float q) {
    const float c = clamp8(q);
    const int i = (int)c;
    const float f = c - (float)i;
    return (int8_t)(i + (f >= 0.5f) - (f <= -0.5f));
}

/* max(m, |a|); NaN never wins */
static inline float absmax1(float a, float m) {
    const float f = fabsf(a);
    return f > m ? f : m;
}

/* n elements of x (and smooth) widened to fp32 into v, times smooth when given */
static void widen_tile(const char *x, int64_t xstep, int xdtype, const char *smooth, int64_t sstep, int64_t n,
                       float *v, float *sm) {
    mf_widen_f32(x, xstep, xdtype, n, v, 1);
    if (smooth) {
        mf_widen_f32(smooth, sstep, ACL_FLOAT, n, sm, 1);
        for (int64_t j = 0; j < n; j++) v[j] *= sm[j];
    }
}

/* the dynamic mode's two vector loops, per kernel path (quant_int8_core.h);
 * absmax16 / quant16: the same over raw bfloat16 values, or NULL */
typedef struct q8_loops {
    int64_t (*absmax)(const float *v, int64_t n, float *m);
    int64_t (*quant)(const float *v, int64_t n, float s, bool even, int8_t *out, bool nt);
    int64_t (*absmax16)(const uint16_t *v, int64_t n, float *m);
    int64_t (*quant16)(const uint16_t *v, int64_t n, float s, bool even, int8_t *out, bool nt);
} q8_loops;
static const q8_loops *q8_pick(void) {
    static const q8_loops generic = {mf_q8_absmax_generic, mf_q8_quant_generic, NULL, NULL};
#if defined(MOEFR_X86_KERNELS)
    static const q8_loops avx2 = {mf_q8_absmax_avx2, mf_q8_quant_avx2, mf_q8_absmax_bf16_avx2, mf_q8_quant_bf16_avx2};
    if (strncmp(mf_kernels()->isa, "avx", 3) == 0) return &avx2; /* avx2, avx512: the same bytes */
#endif
    return &generic;
}

/* Elements quantised between two slices of the next row's prefetch. */
#define PF_CHUNK 256

/* The quantising pass's vector loop over n elements at w (fp32, or raw
 * bfloat16 with raw16), returning how many it did. With pf (the next row's
 * matching part, pf_step bytes per element), in chunks, each followed by
 * its share of pf's lines, into L2 (locality 2: into L1 they evicted the
 * row being quantised, and gained little). */
static int64_t quant_pass(const q8_loops *k, const void *w, bool raw16, int64_t n, float s, const mf_q8 *q,
                          int8_t *out, const char *pf, int64_t pf_step) {
    int64_t j = 0;
    while (j < n) {
        const int64_t c = pf == NULL || n - j < PF_CHUNK ? n - j : PF_CHUNK;
        const int64_t d = raw16 ? k->quant16((const uint16_t *)w + j, c, s, q->even, out + j, q->nt)
                                : k->quant((const float *)w + j, c, s, q->even, out + j, q->nt);
        for (const char *e = pf ? pf + c * pf_step : NULL; pf < e; pf += 64) __builtin_prefetch(pf, 0, 2);
        j += d;
        if (d < c) break; /* the last partial vector: the caller's tail */
    }
    return j;
}

/* CANN narrows v / s to fp16 toward zero, then rounds half away: every
 * n + 0.5 with |n + 0.5| < 1024 is an fp16 value, so the truncation never
 * crosses one, and past 1024 both saturate; one rounding gives the same int8 */
static inline int8_t quant1(float v, float s, bool even) { return even ? even8(v / s) : away8(v / s); }

float mf_quant_int8_row(const mf_q8 *q, const char *x, int64_t xstep, int xdtype, const char *smooth, int64_t sstep,
                        int64_t H, int8_t *out, const char *next) {
    float v[TILE], sm[TILE];
    if (q->mode == 0) {
        const float hs = mf_f16_to_f32(q->hs);
        const double ho = mf_f16_to_f32(q->ho);
        for (int64_t h0 = 0; h0 < H; h0 += TILE) {
            const int64_t n = H - h0 < TILE ? H - h0 : TILE;
            mf_widen_f32(x + h0 * xstep, xstep, xdtype, n, v, 1);
            for (int64_t j = 0; j < n; j++) {
                /* the fp16 product of two fp16 values is exact in fp32, their
                 * sum exact in double: one rounding each, as the NPU's fp16 */
                const float a = mf_f16_to_f32(mf_f32_to_f16(v[j]));
                const float m = mf_f16_to_f32(mf_f32_to_f16(a * hs));
                const float r = mf_f16_to_f32(mf_f64_to_f16((double)m + ho));
                out[h0 + j] = even8(r); /* half to even */
            }
        }
        return 0.0f;
    }
    /* dynamic: the max pass, then the quantising pass over the same values;
     * whole vectors in the kernel path's loops, the tail here */
    const q8_loops *k = q8_pick();
    float mx = 0.0f;
    if (xstep == 4 && xdtype == ACL_FLOAT && smooth == NULL) { /* fp32 read in place */
        const float *xv = (const float *)(const void *)x;
        for (int64_t j = k->absmax(xv, H, &mx); j < H; j++) mx = absmax1(xv[j], mx);
        const float s = mx / 127.0f;
        for (int64_t j = quant_pass(k, xv, false, H, s, q, out, next, 4); j < H; j++)
            out[j] = quant1(xv[j], s, q->even);
        return s;
    }
    if (xstep == 2 && xdtype == ACL_BF16 && smooth == NULL && k->quant16) { /* bf16 read in place, widened in the loops */
        const uint16_t *xv = (const uint16_t *)(const void *)x;
        for (int64_t j = k->absmax16(xv, H, &mx); j < H; j++) mx = absmax1(mf_bf16_to_f32(xv[j]), mx);
        const float s = mx / 127.0f;
        for (int64_t j = quant_pass(k, xv, true, H, s, q, out, next, 2); j < H; j++)
            out[j] = quant1(mf_bf16_to_f32(xv[j]), s, q->even);
        return s;
    }
    /* other dtypes, strides or a smooth scale: widened to fp32 tiles */
    const bool kept = H <= TILE; /* one widening serves both passes */
    for (int64_t h0 = 0; h0 < H; h0 += TILE) {
        const int64_t n = H - h0 < TILE ? H - h0 : TILE;
        widen_tile(x + h0 * xstep, xstep, xdtype, smooth ? smooth + h0 * sstep : NULL, sstep, n, v, sm);
        for (int64_t j = k->absmax(v, n, &mx); j < n; j++) mx = absmax1(v[j], mx);
    }
    const float s = mx / 127.0f;
    const bool pf = next != NULL && xstep > 0 && xstep <= 4; /* rows of packed elements */
    for (int64_t h0 = 0; h0 < H; h0 += TILE) {
        const int64_t n = H - h0 < TILE ? H - h0 : TILE;
        if (!kept) widen_tile(x + h0 * xstep, xstep, xdtype, smooth ? smooth + h0 * sstep : NULL, sstep, n, v, sm);
        for (int64_t j = quant_pass(k, v, false, n, s, q, out + h0, pf ? next + h0 * xstep : NULL, xstep); j < n;
             j++)
            out[h0 + j] = quant1(v[j], s, q->even);
    }
    return s;
}
