/* quant_int8.c - the int8 quantisation of one row (quant_int8.h). */
#include "ops/routing/quant_int8.h"

#include <math.h>

#define TILE 512

/* Saturating conversion of an integral (or NaN / inf) float to int8. */
static inline int8_t sat8(float r) {
    if (r != r) return 0;
    if (r >= 127.0f) return 127;
    if (r <= -128.0f) return -128;
    return (int8_t)r;
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
                out[h0 + j] = sat8(rintf(r)); /* half to even */
            }
        }
        return 0.0f;
    }
    /* dynamic: the max pass, then the quantising pass over the same values */
    float mx = 0.0f;
    for (int64_t h0 = 0; h0 < H; h0 += TILE) {
        const int64_t n = H - h0 < TILE ? H - h0 : TILE;
        mf_widen_f32(x + h0 * xstep, xstep, xdtype, n, v, 1);
        if (smooth) {
            mf_widen_f32(smooth + h0 * sstep, sstep, ACL_FLOAT, n, sm, 1);
            for (int64_t j = 0; j < n; j++) v[j] *= sm[j];
        }
        for (int64_t j = 0; j < n; j++) {
            const float a = fabsf(v[j]);
            mx = a > mx ? a : mx;
        }
    }
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
         * roundf gives the same int8 */
        for (int64_t j = 0; j < n; j++) out[h0 + j] = sat8(roundf(v[j] / s));
    }
    return s;
}
