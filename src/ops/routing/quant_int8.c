/* quant_int8.c - the int8 quantisation of one row (quant_int8.h). */
#include "ops/routing/quant_int8.h"

#include <math.h>

#define TILE 512

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

float mf_quant_int8_row(const mf_q8 *q, const char *x, int64_t xstep, int xdtype, const char *smooth, int64_t sstep,
                        int64_t H, int8_t *out) {
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
    /* dynamic: the max pass, then the quantising pass over the same values */
    float mx = 0.0f, lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t h0 = 0; h0 < H; h0 += TILE) {
        const int64_t n = H - h0 < TILE ? H - h0 : TILE;
        mf_widen_f32(x + h0 * xstep, xstep, xdtype, n, v, 1);
        if (smooth) {
            mf_widen_f32(smooth + h0 * sstep, sstep, ACL_FLOAT, n, sm, 1);
            for (int64_t j = 0; j < n; j++) v[j] *= sm[j];
        }
        int64_t j = 0;
        for (; j + 8 <= n; j += 8) /* eight lanes: max is exact, so any order gives the same bits */
            for (int l = 0; l < 8; l++) {
                const float a = fabsf(v[j + l]);
                lane[l] = a > lane[l] ? a : lane[l]; /* NaN never wins */
            }
        for (; j < n; j++) {
            const float a = fabsf(v[j]);
            lane[0] = a > lane[0] ? a : lane[0];
        }
    }
    for (int l = 0; l < 8; l++) mx = __builtin_isgreater(lane[l], mx) ? lane[l] : mx;
    const float s = mx / 127.0f;
    for (int64_t h0 = 0; h0 < H; h0 += TILE) {
        const int64_t n = H - h0 < TILE ? H - h0 : TILE;
        mf_widen_f32(x + h0 * xstep, xstep, xdtype, n, v, 1);
        if (smooth) {
            mf_widen_f32(smooth + h0 * sstep, sstep, ACL_FLOAT, n, sm, 1);
            for (int64_t j = 0; j < n; j++) v[j] *= sm[j];
        }
        /* CANN narrows v / s to fp16 toward zero, then rounds half away:
         * every n + 0.5 with |n + 0.5| < 1024 is an fp16 value, so the
         * truncation never crosses one, and past 1024 both saturate; one
         * rounding gives the same int8 */
        for (int64_t j = 0; j < n; j++) v[j] /= s;
        if (q->even)
            for (int64_t j = 0; j < n; j++) out[h0 + j] = even8(v[j]);
        else
            for (int64_t j = 0; j < n; j++) out[h0 + j] = away8(v[j]);
    }
    return s;
}
