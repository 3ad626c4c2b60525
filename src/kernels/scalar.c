/* scalar.c - the reference kernels: plain C, always compiled, always tested.
 * Every SIMD path must match these bit for bit. */
#include "kernels/fp.h"
#include "kernels/kernels.h"
#include "kernels/tail.h"

#include <string.h>

static inline double ld_f32(const void *p, size_t j) { return ((const float *)p)[j]; }
static inline double ld_f16(const void *p, size_t j) { return mf_f16_to_f32(((const uint16_t *)p)[j]); }
static inline double ld_bf16(const void *p, size_t j) { return mf_bf16_to_f32(((const uint16_t *)p)[j]); }

static void scale_f32(const void *g, float s, void *out, size_t n) {
    const float *gp = g;
    float *o = out;
    for (size_t j = 0; j < n; j++) o[j] = gp[j] * s;
}

static void scale_f16(const void *g, float s, void *out, size_t n) {
    const uint16_t *gp = g;
    uint16_t *o = out;
    for (size_t j = 0; j < n; j++) o[j] = mf_f32_to_f16(mf_f16_to_f32(gp[j]) * s);
}

static void scale_bf16(const void *g, float s, void *out, size_t n) {
    const uint16_t *gp = g;
    uint16_t *o = out;
    for (size_t j = 0; j < n; j++) o[j] = mf_f32_to_bf16(mf_bf16_to_f32(gp[j]) * s);
}

/* One body per dtype: the loads differ, the arithmetic is shared. */
#define MF_DOT(NAME, LD)                                                                   \
    static void NAME(const void *x, const void *b, const void *g, size_t n, double acc[8]) { \
        for (size_t j = 0; j < n; j++) {                                                   \
            double t;                                                                      \
            if (x && b) t = LD(x, j) + LD(b, j);                                           \
            else t = x ? LD(x, j) : LD(b, j);                                              \
            acc[j & 7] += t * LD(g, j);                                                    \
        }                                                                                  \
    }
MF_DOT(dot_f32, ld_f32)
MF_DOT(dot_f16, ld_f16)
MF_DOT(dot_bf16, ld_bf16)

/* The fused kernel is, by definition, scale then dot. */
#define MF_SCALE_DOT(NAME, SCALE, DOT)                                                       \
    static void NAME(const void *g, float s, void *out, const void *x, const void *b, size_t n, \
                     double acc[8], int nt) {                                                \
        (void)nt;                                                                            \
        if (out) SCALE(g, s, out, n);                                                        \
        if (x || b) DOT(x, b, g, n, acc);                                                    \
    }
MF_SCALE_DOT(scale_dot_f32, scale_f32, dot_f32)
MF_SCALE_DOT(scale_dot_f16, scale_f16, dot_f16)
MF_SCALE_DOT(scale_dot_bf16, scale_bf16, dot_bf16)

#define MF_SCALE_DOT_MULTI(NAME, SD)                                                          \
    static void NAME(const void *g, size_t n, int q, const float *s, void *const *out, const void *const *x, \
                     const void *const *b, double (*acc)[8], int nt) {                                   \
        for (int i = 0; i < q; i++) SD(g, s[i], out[i], x[i], b ? b[i] : NULL, n, acc[i], nt);          \
    }
MF_SCALE_DOT_MULTI(multi_f32, scale_dot_f32)
MF_SCALE_DOT_MULTI(multi_f16, scale_dot_f16)
MF_SCALE_DOT_MULTI(multi_bf16, scale_dot_bf16)

MF_ROWS_BY_SD(rows_f32, scale_dot_f32)
MF_ROWS_BY_SD(rows_f16, scale_dot_f16)
MF_ROWS_BY_SD(rows_bf16, scale_dot_bf16)

static void copy_plain(void *dst, const void *src, size_t bytes, int nt) {
    (void)nt;
    if (bytes) memcpy(dst, src, bytes);
}

static void fence_none(void) {}

const mf_ukernels mf_ukernels_scalar = {
    "scalar",
    {scale_f32, scale_f16, scale_bf16},
    {dot_f32, dot_f16, dot_bf16},
    {scale_dot_f32, scale_dot_f16, scale_dot_bf16},
    {multi_f32, multi_f16, multi_bf16},
    {rows_f32, rows_f16, rows_bf16},
    copy_plain,
    fence_none,
};
