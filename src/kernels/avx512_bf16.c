/* avx512_bf16.c - the AVX-512 kernels again, built with -mavx512bf16 so bf16
 * outputs use VCVTNEPS2BF16 (subnormal lanes fixed up to stay RNE-exact). */
#define MF_AVX512_BF16 1
#define MF_UNLIKELY_SUB(x) __builtin_expect((x) != 0, 0)
#include "kernels/avx512_body.h"

const mf_ukernels mf_ukernels_avx512bf16 = {
    "avx512",
    {sd_f32_scale, sd_f16_scale, sd_bf16_scale},
    {sd_f32_dot, sd_f16_dot, sd_bf16_dot},
    {sd_f32, sd_f16, sd_bf16},
    {multi_f32, multi_f16, multi_bf16},
    {rows_f32, rows_f16, rows_bf16},
    copy_avx512,
    fence_sfence,
};
