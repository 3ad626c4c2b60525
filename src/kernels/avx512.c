/* avx512.c - AVX-512 F/BW/VL kernels for CPUs without AVX512-BF16 (this file
 * alone is built with those flags); bf16 rounding done in integers. */
#include "kernels/avx512_body.h"

const mf_ukernels mf_ukernels_avx512 = {
    "avx512",
    {sd_f32_scale, sd_f16_scale, sd_bf16_scale},
    {sd_f32_dot, sd_f16_dot, sd_bf16_dot},
    {sd_f32, sd_f16, sd_bf16},
    {multi_f32, multi_f16, multi_bf16},
    {rows_f32, rows_f16, rows_bf16},
    copy_avx512,
    fence_sfence,
};
