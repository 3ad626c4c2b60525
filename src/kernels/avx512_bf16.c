/* avx512_bf16.c - the backward's template kernels over the AVX-512 layer
 * again, built with -mavx512bf16 so bf16 outputs use VCVTNEPS2BF16 (subnormal
 * lanes fixed up to stay RNE-exact; vec_avx512.h). */
#define MF_AVX512_BF16 1
#include "kernels/vec_avx512.h"

#include "kernels/kbody.h"

const mf_ukernels mf_ukernels_avx512bf16 = MF_UK_TABLE(MF_V_ISA);
