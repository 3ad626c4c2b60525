/* routing_map_avx2.c - the routing-map unpermute's row loops on eight-lane
 * vectors, compiled with -mavx2 only (no -mfma: the same operations as the
 * generic build in routing_map.c, so the same bits). Chosen when the kernel
 * path is avx2 or avx512. Dense bf16 rows get their own sum below. */
#include <immintrin.h>

#define GT_W 8
#define RM_ACC mf_rm_acc_avx2
#define RM_SUM rm_sum_gv8
#include "ops/routing/routing_map_acc.h"

void mf_rm_sum_avx2(float *acc, const char *const *rows, const float *pv, int nr, int dtype, int64_t n, bool first,
                    bool scale);

/* 16 sums in the even / odd layout (E: elements 0, 2, .., 14; O: 1, 3, ..,
 * 15), the layout a bf16 pair in a 32-bit lane widens to by a shift and a
 * mask, with no shuffle: from and back to acc's element order. */
static inline void rm_eo_load(const float *a, __m256 *e, __m256 *o) {
    const __m256 lo = _mm256_loadu_ps(a), hi = _mm256_loadu_ps(a + 8);
    *e = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8));
    *o = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8));
}
static inline void rm_eo_store(float *a, __m256 e, __m256 o) {
    const __m256 l = _mm256_unpacklo_ps(e, o), h = _mm256_unpackhi_ps(e, o);
    _mm256_storeu_ps(a, _mm256_permute2f128_ps(l, h, 0x20));
    _mm256_storeu_ps(a + 8, _mm256_permute2f128_ps(l, h, 0x31));
}
/* 16 bf16 values at p widened in the even / odd layout */
static inline void rm_eo_bf16(const char *p, __m256 *e, __m256 *o) {
    const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    *e = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    *o = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32((int)0xFFFF0000u)));
}

/* RM_SUM (routing_map_acc.h) for dense bf16 rows: blocks of 32 elements
 * summed in the even / odd layout (four independent add chains), each
 * element's terms the same fp32 products and adds in the same row order as
 * rm_sum_gv8, which does the rest of the row and every other dtype. */
void mf_rm_sum_avx2(float *acc, const char *const *rows, const float *pv, int nr, int dtype, int64_t n, bool first,
                    bool scale) {
    int64_t j = 0;
    if (dtype == ACL_BF16 && nr <= 8) {
        for (; j + 32 <= n; j += 32) {
            __m256 a[4]; /* E and O of elements j..j+15, then of j+16..j+31 */
            int q = 0;
            if (first) {
                rm_eo_bf16(rows[0] + 2 * j, &a[0], &a[1]);
                rm_eo_bf16(rows[0] + 2 * j + 32, &a[2], &a[3]);
                if (scale) {
                    const __m256 p = _mm256_set1_ps(pv[0]);
                    for (int u = 0; u < 4; u++) a[u] = _mm256_mul_ps(a[u], p);
                }
                q = 1;
            } else {
                rm_eo_load(acc + j, &a[0], &a[1]);
                rm_eo_load(acc + j + 16, &a[2], &a[3]);
            }
            for (; q < nr; q++) {
                __m256 x[4];
                rm_eo_bf16(rows[q] + 2 * j, &x[0], &x[1]);
                rm_eo_bf16(rows[q] + 2 * j + 32, &x[2], &x[3]);
                if (scale) {
                    const __m256 p = _mm256_set1_ps(pv[q]);
                    for (int u = 0; u < 4; u++) x[u] = _mm256_mul_ps(x[u], p);
                }
                for (int u = 0; u < 4; u++) a[u] = _mm256_add_ps(a[u], x[u]);
            }
            rm_eo_store(acc + j, a[0], a[1]);
            rm_eo_store(acc + j + 16, a[2], a[3]);
        }
        if (j == n) return;
    }
    if (j == 0) {
        rm_sum_gv8(acc, rows, pv, nr, dtype, n, first, scale);
        return;
    }
    const char *rest[8]; /* the bf16 rows from element j (nr <= 8 here) */
    for (int q = 0; q < nr; q++) rest[q] = rows[q] + 2 * j;
    rm_sum_gv8(acc + j, rest, pv, nr, dtype, n - j, first, scale);
}

/* 8 fp32 values rounded to bf16 as mf_f32_to_bf16 does (nearest even, NaN
 * made quiet), in the low half of each 32-bit lane */
static inline __m256i rm_bf16_of(__m256 f) {
    const __m256i u = _mm256_castps_si256(f);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)),
                                           _mm256_set1_epi32(0x7F800000));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb), 16);
    const __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(r, q, nan);
}

/* mf_narrow_f32 for contiguous bf16: n sums at s rounded to bf16 at p, 16
 * at a time (two roundings packed, then put back in element order), the
 * tail one by one; the same bits. (The baseline build's loop cost about
 * a third of the bf16 unpermute on one core.) */
void mf_rm_narrow_bf16_avx2(char *p, const float *s, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        const __m256i w = _mm256_packus_epi32(rm_bf16_of(_mm256_loadu_ps(s + j)), rm_bf16_of(_mm256_loadu_ps(s + j + 8)));
        _mm256_storeu_si256((__m256i *)(void *)(p + 2 * j), _mm256_permute4x64_epi64(w, 0xD8));
    }
    for (; j < n; j++) {
        const uint16_t h = mf_f32_to_bf16(s[j]);
        memcpy(p + 2 * j, &h, 2);
    }
}
