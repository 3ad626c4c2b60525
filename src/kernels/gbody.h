/* gbody.h - GroupedMatmul's weight-streaming kernel for groups of a few rows
 * (decode: one to a few tokens per expert), written once over the vector
 * layer (vec.h) like kbody.h and fbody.h; kbody.h's table includes it.
 *
 *   c[r * ldc + j] += sum over k of x[r * ldx + k] * w(k, j),
 *   r < rows, j < n, k < K; w(k, j) the element at w + (k * ws + j) of dtype
 *   dt, widened exactly to fp32.
 *
 * Every output element adds its K products in k order, each with one fused
 * multiply-add (vf_fma, mf_fmaf in the tail: the same IEEE operation), so the
 * bits depend on nothing but the inputs: not the layer, not the blocking, not
 * which columns a caller gives one call. The weight is read once, four rows of
 * it at a time in address order (four sequential streams for the prefetchers);
 * the row sums stay in c, which the caller keeps small enough for L1/L2. */
#ifndef MOEFR_KERNELS_GBODY_H_
#define MOEFR_KERNELS_GBODY_H_

#include "kernels/fp.h"

MF_INLINE float g_w(mf_dt dt, const void *w, size_t i) {
    if (dt == MF_F32) return ((const float *)w)[i];
    const uint16_t h = ((const uint16_t *)w)[i];
    return dt == MF_F16 ? mf_f16_to_f32(h) : mf_bf16_to_f32(h);
}

MF_INLINE void g_body(mf_dt dt, size_t rows, size_t n, size_t K, const float *x, size_t ldx, const void *w,
                      size_t ws, float *c, size_t ldc) {
    const size_t es = dt == MF_F32 ? 4 : 2;
    const char *wb = (const char *)w;
    size_t k = 0;
    for (; k + 4 <= K; k += 4) {
        const char *w0 = wb + k * ws * es, *w1 = w0 + ws * es, *w2 = w1 + ws * es, *w3 = w2 + ws * es;
        size_t j = 0;
        for (; j + 16 <= n; j += 16) {
            const mf_vf b0 = vf_ld(dt, w0, j), b1 = vf_ld(dt, w1, j), b2 = vf_ld(dt, w2, j), b3 = vf_ld(dt, w3, j);
            for (size_t r = 0; r < rows; r++) {
                const float *xr = x + r * ldx + k;
                float *cr = c + r * ldc + j;
                mf_vf a = vf_ldu(cr);
                a = vf_fma(a, vf_set1(xr[0]), b0);
                a = vf_fma(a, vf_set1(xr[1]), b1);
                a = vf_fma(a, vf_set1(xr[2]), b2);
                a = vf_fma(a, vf_set1(xr[3]), b3);
                vf_stu(cr, a);
            }
        }
        for (; j < n; j++) {
            const float v0 = g_w(dt, w0, j), v1 = g_w(dt, w1, j), v2 = g_w(dt, w2, j), v3 = g_w(dt, w3, j);
            for (size_t r = 0; r < rows; r++) {
                const float *xr = x + r * ldx + k;
                float a = c[r * ldc + j];
                a = mf_fmaf(xr[0], v0, a);
                a = mf_fmaf(xr[1], v1, a);
                a = mf_fmaf(xr[2], v2, a);
                a = mf_fmaf(xr[3], v3, a);
                c[r * ldc + j] = a;
            }
        }
    }
    for (; k < K; k++) {
        const char *w0 = wb + k * ws * es;
        size_t j = 0;
        for (; j + 16 <= n; j += 16) {
            const mf_vf b0 = vf_ld(dt, w0, j);
            for (size_t r = 0; r < rows; r++) {
                float *cr = c + r * ldc + j;
                vf_stu(cr, vf_fma(vf_ldu(cr), vf_set1(x[r * ldx + k]), b0));
            }
        }
        for (; j < n; j++) {
            const float v0 = g_w(dt, w0, j);
            for (size_t r = 0; r < rows; r++) c[r * ldc + j] = mf_fmaf(x[r * ldx + k], v0, c[r * ldc + j]);
        }
    }
}

static void g_gemv_f32(size_t rows, size_t n, size_t K, const float *x, size_t ldx, const void *w, size_t ws,
                       float *c, size_t ldc) {
    g_body(MF_F32, rows, n, K, x, ldx, w, ws, c, ldc);
}
static void g_gemv_f16(size_t rows, size_t n, size_t K, const float *x, size_t ldx, const void *w, size_t ws,
                       float *c, size_t ldc) {
    g_body(MF_F16, rows, n, K, x, ldx, w, ws, c, ldc);
}
static void g_gemv_bf16(size_t rows, size_t n, size_t K, const float *x, size_t ldx, const void *w, size_t ws,
                        float *c, size_t ldc) {
    g_body(MF_BF16, rows, n, K, x, ldx, w, ws, c, ldc);
}

#endif /* MOEFR_KERNELS_GBODY_H_ */
